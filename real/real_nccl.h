/* The real platform's collectives on NVIDIA GPUs: struct ckh_coll
 * (include/ckh/env.h) whose all-reduce and all-gather run through NCCL
 * in device memory, for `ddp-train` with `options: {devices: nccl}` run
 * by `ckh run --platform real` (docs/REAL.md, "NCCL").
 *
 * Nothing of CUDA or NCCL is needed to build ckh: libnccl.so.2 and the
 * CUDA runtime (libcudart.so, .so.13, .so.12, .so.11.0) are loaded with
 * dlopen at run time ($CKH_NCCL_LIB and $CKH_CUDART_LIB name other
 * files, e.g. the ones a Python wheel installed), with the few types and
 * functions used declared in coll_nccl.c. Without them, or without a CUDA device, creating the
 * collectives fails with CKH_EINTERNAL and a message naming what is
 * missing ("libnccl.so.2 not found", "no CUDA device"): the environment,
 * exit status 3.
 *
 * Specification:
 *   - set-up: every rank probes the libraries and its device (local rank
 *     r uses device r modulo the devices it sees), rank 0 makes the NCCL
 *     unique id, which travels to the others by a broadcast of the base
 *     collectives (MPI: real_coll.h), then ncclCommInitRank on a stream of
 *     its own, then one all-gather of a byte (NCCL connects and allocates
 *     its buffers at its first collective: now, under the set-up
 *     deadline, before any limit);
 *   - all-reduce: the rank's buffer goes to device memory, one
 *     ncclAllGather brings every rank's buffer to every device, the W
 *     buffers come back to the host and are folded in rank order with
 *     ckh_coll_reduce, the simulator's fold: results are bit-identical to
 *     the simulator's and to the MPI path, whatever NCCL's own reduction
 *     order would give (a plain ncclAllReduce of floats is identical for
 *     2 ranks only). The device buffers are kept between calls (the
 *     gradients' device copies live as long as the collectives);
 *   - all-gather: one ncclAllGather;
 *   - device memory (ckh_real_nccl_gpu, the env's struct ckh_gpu): the
 *     job's device d is this rank's own GPU for d = its rank, else
 *     physical device d modulo the devices seen; alloc is cudaMalloc on
 *     that device (cudaErrorMemoryAllocation, there or making the
 *     device's context: CKH_EOOM_DEVICE), copy is
 *     cudaMemcpy, mem is cudaMemGetInfo against the limit, limit holds a
 *     ballast allocation of what is free beyond the job's gpu_memory (so
 *     that running out of memory is the device's own answer), allreduce
 *     all-gathers the device buffer as it is and writes the rank-order
 *     fold back into it, prepare sizes the all-gather's device buffers;
 *   - barrier, broadcast, send, recv: the base collectives;
 *   - a deadline: the NCCL call is polled (cudaStreamQuery) until its
 *     deadline, then the communicator is aborted and the call fails with
 *     CKH_ETIMEOUT; an asynchronous NCCL error while polling
 *     (ncclCommGetAsyncError, where the library has it: a peer or its
 *     link lost) aborts it with CKH_EPEER_DEAD, a CUDA error or a failed
 *     launch with -EIO; every later call fails with CKH_ESTATE;
 *   - faults: each call goes through the gate first, as the MPI
 *     collectives do (ERRNO fails it, kills kill inside it, DELAY waits);
 *     a MISMATCH fault fails the faulty rank's call with CKH_EMISMATCH at
 *     once, and its peers wait out their deadline (CKH_ETIMEOUT): NCCL
 *     cannot see that a peer joined another collective.
 */
#ifndef CKH_REAL_NCCL_H
#define CKH_REAL_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "ckh/env.h"
#include "real_coll.h"

/* Whether NCCL and a CUDA device can be used here: 0 with *ndevices (the
 * CUDA devices this process sees; NULL: not wanted), or CKH_EINTERNAL
 * with msg naming what is missing. Loads the libraries (kept loaded). */
int ckh_real_nccl_probe(int *ndevices, char *msg, size_t msglen);

/* NCCL collectives for this rank of base's group (base: the MPI
 * collectives, borrowed; they must outlive *out). setup_timeout_ns bounds
 * the id exchange and the first all-gather. *out is freed with ckh_real_nccl_destroy. 0, or
 * CKH_EINTERNAL (msg: what is missing or failed), CKH_ENOMEM, the base's
 * code when the id exchange fails, or the first all-gather's. */
int ckh_real_nccl_create(struct ckh_coll *base, uint64_t setup_timeout_ns, struct ckh_coll **out, char *msg,
                         size_t msglen);
void ckh_real_nccl_destroy(struct ckh_coll *c);
/* The device memory of c's rank (struct ckh_gpu, include/ckh/env.h),
 * valid as long as c. */
struct ckh_gpu *ckh_real_nccl_gpu(struct ckh_coll *c);
/* Sets the gate of the calls NCCL carries (NULL fn: none); ctx borrowed. */
void ckh_real_nccl_set_gate(struct ckh_coll *c, ckh_real_gate_fn fn, void *ctx);
/* Whether some NCCL call failed. */
bool ckh_real_nccl_failed(const struct ckh_coll *c);

#endif
