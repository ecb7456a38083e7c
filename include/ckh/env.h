/* The platform seen by code under test: clock, randomness, collectives,
 * node lifecycle, bundled with the filesystem into one struct ckh_env.
 *
 * This is ckh's Sim2/Net2 split (as in FoundationDB): reference code is
 * written only against these ops tables. The simulator provides one
 * implementation with virtual time, seeded streams and simulated
 * collectives; platform/ provides the real one (POSIX clock, real files).
 * Methods are only ever appended; NULL means "not supported".
 */
#ifndef CKH_ENV_H
#define CKH_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/alloc.h"
#include "ckh/fs.h"
#include "ckh/record.h"
#include "ckh/rng.h"

/* ---- clock ---- */
struct ckh_clock;
struct ckh_clock_ops {
    int version; /* 1 */
    /* Monotonic time in nanoseconds (virtual time in the simulator). */
    uint64_t (*now_ns)(struct ckh_clock *c);
    /* Sleeps; in the simulator this advances the node's virtual time and
     * lets other nodes run. */
    int (*sleep_ns)(struct ckh_clock *c, uint64_t ns);
};
struct ckh_clock {
    const struct ckh_clock_ops *ops; /* methods */
};

/* ---- randomness ---- */
struct ckh_rand;
struct ckh_rand_ops {
    int version; /* 1 */
    /* Seed of the named stream: stable for (run seed, node, name). Code
     * under test seeds a ckh_rng with it and keeps the state itself. */
    uint64_t (*stream_seed)(struct ckh_rand *r, const char *name);
};
struct ckh_rand {
    const struct ckh_rand_ops *ops; /* methods */
};

/* ---- collectives ---- */
enum ckh_dtype { CKH_DT_U8, CKH_DT_I32, CKH_DT_I64, CKH_DT_U64, CKH_DT_F32, CKH_DT_F64 };
enum ckh_redop { CKH_RED_SUM, CKH_RED_MAX, CKH_RED_MIN };

/* Size in bytes of one element of dtype (0 for an unknown dtype). */
size_t ckh_dtype_size(enum ckh_dtype dt);
/* Stable names ("f32", "sum"); "?" for an unknown value. Static storage. */
const char *ckh_dtype_name(enum ckh_dtype dt);
const char *ckh_redop_name(enum ckh_redop op);

/* acc[i] = acc[i] OP in[i] for i < count: THE reduction of every
 * all-reduce, shared by the simulator (sim/coll.c) and the real platform
 * (real/coll_mpi.c), which both fold the ranks' buffers with it in rank
 * order (acc = rank 0's, then rank 1's folded in, ...), so results are
 * bit-identical on both. Integer sums wrap (computed unsigned); MAX/MIN
 * keep acc's value on ties and on unordered (NaN) comparisons. An unknown
 * dtype leaves acc alone. Buffers may be unaligned. */
void ckh_coll_reduce(void *acc, const void *in, size_t count, enum ckh_dtype dtype, enum ckh_redop redop);

struct ckh_coll;
/* Every collective takes a timeout (0: wait forever). NCCL-like semantics:
 * all ranks must call the same collectives in the same order with the same
 * counts. A dead peer or a mismatch makes the call fail with CKH_ETIMEOUT
 * (or CKH_EMISMATCH / CKH_EPEER_DEAD where the implementation can tell)
 * once the timeout expires. Reductions use a fixed order (rank 0, 1, ...),
 * so results are bit-identical whatever the interleaving. */
struct ckh_coll_ops {
    int version; /* 1 */
    int (*rank)(struct ckh_coll *c);
    int (*world_size)(struct ckh_coll *c);
    int (*barrier)(struct ckh_coll *c, uint64_t timeout_ns);
    int (*broadcast)(struct ckh_coll *c, void *buf, size_t size_bytes, int root, uint64_t timeout_ns);
    int (*allreduce)(struct ckh_coll *c, void *buf, size_t count, enum ckh_dtype dt,
                     enum ckh_redop op, uint64_t timeout_ns);
    /* recv holds world_size * size_bytes bytes, rank r's block at r * size_bytes. */
    int (*allgather)(struct ckh_coll *c, const void *send, void *recv, size_t size_bytes,
                     uint64_t timeout_ns);
    int (*send)(struct ckh_coll *c, const void *buf, size_t size_bytes, int peer, int tag,
                uint64_t timeout_ns);
    int (*recv)(struct ckh_coll *c, void *buf, size_t size_bytes, int peer, int tag,
                uint64_t timeout_ns);
};
struct ckh_coll {
    const struct ckh_coll_ops *ops; /* methods */
};

/* Wrappers: argument checks, then the method (CKH_EUNSUPPORTED when the
 * implementation lacks it). A NULL c is a single-process job: rank 0 of a
 * world of 1, where barrier, broadcast from 0, allreduce and allgather are
 * local no-ops (allgather copies send to recv) and send/recv give
 * CKH_EINVAL (there is no peer). */
int ckh_coll_rank(struct ckh_coll *c);
int ckh_coll_world_size(struct ckh_coll *c);
int ckh_coll_barrier(struct ckh_coll *c, uint64_t timeout_ns);
int ckh_coll_broadcast(struct ckh_coll *c, void *buf, size_t size_bytes, int root, uint64_t timeout_ns);
int ckh_coll_allreduce(struct ckh_coll *c, void *buf, size_t count, enum ckh_dtype dt,
                       enum ckh_redop op, uint64_t timeout_ns);
int ckh_coll_allgather(struct ckh_coll *c, const void *send, void *recv, size_t size_bytes,
                       uint64_t timeout_ns);
int ckh_coll_send(struct ckh_coll *c, const void *buf, size_t size_bytes, int peer, int tag,
                  uint64_t timeout_ns);
int ckh_coll_recv(struct ckh_coll *c, void *buf, size_t size_bytes, int peer, int tag,
                  uint64_t timeout_ns);

/* ---- devices ----
 * Device memory of real accelerators, for code that keeps its tensors
 * there (ddp-train's parameters, gradients and momentum). The real
 * platform provides one over the CUDA runtime and NCCL (real/coll_nccl.c,
 * `options: {devices: nccl}`); the simulator provides none (env->gpu is
 * NULL) and ddp-train then keeps its emulated devices itself
 * (include/ckh/ddp.h). Devices are named by the job's logical index
 * (device d is rank d's GPU); the implementation maps them to physical
 * ones. Device pointers are opaque: only the methods touch them. */
enum ckh_gpu_copy { CKH_GPU_TO_DEVICE = 1, CKH_GPU_TO_HOST = 2, CKH_GPU_ON_DEVICE = 3 };
struct ckh_gpu;
struct ckh_gpu_ops {
    int version; /* 1 */
    /* *dptr = bytes of device memory on device dev: 0, or CKH_EOOM_DEVICE
     * when the device is full (nothing allocated), CKH_EINVAL for a device
     * the job does not have. */
    int (*alloc)(struct ckh_gpu *g, int dev, uint64_t bytes, void **dptr);
    /* Frees what alloc gave (NULL: nothing). */
    void (*free)(struct ckh_gpu *g, void *dptr);
    /* Copies bytes between host and device memory or within device
     * memory (dir says which side each pointer is on); -EIO on failure. */
    int (*copy)(struct ckh_gpu *g, void *dst, const void *src, uint64_t bytes, enum ckh_gpu_copy dir);
    /* Bytes in use and the capacity of device dev (for messages). */
    void (*mem)(struct ckh_gpu *g, int dev, uint64_t *used, uint64_t *capacity);
    /* From now on device dev offers this process at most bytes in all
     * (a job's `gpu_memory` on a device that has more): what is free
     * beyond it is taken and held until the process ends. 0: no limit.
     * The first limit of a device holds; later calls change nothing. */
    int (*limit)(struct ckh_gpu *g, int dev, uint64_t bytes);
    /* All-reduce of count elements at dptr in device memory, with the
     * semantics of ckh_coll_ops.allreduce (the same fixed rank order, so
     * results are bit-identical to the host collectives'). */
    int (*allreduce)(struct ckh_gpu *g, void *dptr, size_t count, enum ckh_dtype dt, enum ckh_redop op,
                     uint64_t timeout_ns);
    /* Allocates now what allreduce needs for buffers of up to max_bytes
     * (so that a limit set afterwards bounds the job's own tensors only). */
    int (*prepare)(struct ckh_gpu *g, size_t max_bytes);
};
struct ckh_gpu {
    const struct ckh_gpu_ops *ops; /* methods */
};

/* Wrappers: argument checks, then the method (CKH_EUNSUPPORTED for a NULL
 * g or a missing method; ckh_gpu_free and ckh_gpu_mem do nothing then,
 * mem reporting 0 of 0). */
int ckh_gpu_alloc(struct ckh_gpu *g, int dev, uint64_t bytes, void **dptr);
void ckh_gpu_free(struct ckh_gpu *g, void *dptr);
int ckh_gpu_copy(struct ckh_gpu *g, void *dst, const void *src, uint64_t bytes, enum ckh_gpu_copy dir);
void ckh_gpu_mem(struct ckh_gpu *g, int dev, uint64_t *used, uint64_t *capacity);
int ckh_gpu_limit(struct ckh_gpu *g, int dev, uint64_t bytes);
int ckh_gpu_allreduce(struct ckh_gpu *g, void *dptr, size_t count, enum ckh_dtype dt, enum ckh_redop op,
                      uint64_t timeout_ns);
int ckh_gpu_prepare(struct ckh_gpu *g, size_t max_bytes);

/* ---- node lifecycle ---- */
struct ckh_node;
struct ckh_env;
struct ckh_task;
/* A background task's program (see spawn). */
typedef int (*ckh_bg_fn)(struct ckh_env *env, void *arg);
struct ckh_node_ops {
    int version; /* 2 (spawn and join exist from version 2) */
    /* Ends this node's program with a status; does not return. */
    void (*exit)(struct ckh_node *n, int status);
    /* The node's name ("trainer_0"); valid while the node lives. */
    const char *(*name)(struct ckh_node *n);
    /* Writes a log line attributed to this node (recorded in the trace in
     * the simulator, stderr on a real machine). */
    void (*log)(struct ckh_node *n, const char *msg);
    /* Announces where the node's program is: a phase name ("init",
     * "epoch", "save", "load", "upload", "download", "exit"), the epoch and
     * the step (-1 when not applicable). Fault triggers match on these; the
     * trace records them. The phase string must be a literal (static). */
    void (*phase)(struct ckh_node *n, const char *phase, int64_t epoch, int64_t step);
    /* --- version 2 --- */
    /* Starts a background task on this node: fn(env, arg) runs as a second
     * program of the node, like a thread of a process: it shares the
     * node's memory and environment (the same env), interleaves with the
     * node's main program at its operations, and dies with the node (a
     * kill or crash of the node ends it; so does the node's main program
     * returning, as a process exit ends its threads: join what must
     * finish). *out identifies it until joined. CKH_ELIMIT past the
     * implementation's task limit. */
    int (*spawn)(struct ckh_node *n, ckh_bg_fn fn, void *arg, struct ckh_task **out);
    /* Waits for task t to return and gives its return value in *status
     * (may be NULL); t is invalid afterwards. CKH_EINVAL for a task of
     * another node or one already joined. */
    int (*join)(struct ckh_node *n, struct ckh_task *t, int *status);
};
struct ckh_node {
    const struct ckh_node_ops *ops; /* methods */
};

/* ---- the bundle handed to code under test ---- */
struct ckh_env {
    struct ckh_fs *fs;       /* the node's view of its filesystems */
    struct ckh_clock *clock; /* monotonic (virtual) time */
    struct ckh_rand *rand;   /* named seeded streams */
    struct ckh_coll *coll;   /* collectives; NULL for a single-process job */
    struct ckh_node *node;   /* lifecycle */
    struct ckh_alloc *alloc; /* the node's allocator (may fail: OOM) */
    /* --- appended --- */
    struct ckh_record *record; /* where the node reports what it did for the oracles
                                  (include/ckh/record.h); NULL: nobody listens */
    struct ckh_gpu *gpu;       /* real device memory; NULL: none (the simulator) */
};

/* Wrappers over the clock, rand and node tables. A NULL table reads as
 * time 0, seed 0 and node name "?"; exit, phase and log do nothing. */
uint64_t ckh_clock_now_ns(struct ckh_clock *c);
int ckh_clock_sleep_ns(struct ckh_clock *c, uint64_t ns);
uint64_t ckh_rand_stream_seed(struct ckh_rand *r, const char *name);
void ckh_node_exit(struct ckh_node *n, int status);
const char *ckh_node_name(struct ckh_node *n);
void ckh_node_phase(struct ckh_node *n, const char *phase, int64_t epoch, int64_t step);
/* Background tasks (node ops version 2): CKH_EUNSUPPORTED without them
 * (a table of version 1, or spawn/join NULL), CKH_EINVAL for a NULL node,
 * fn, out or task. The simulator implements them (sim/task.c: at most 8
 * tasks per node, CKH_ELIMIT beyond; each task's ops appear in the trace
 * as the node's, marked "#N"); the real platform's node ops
 * (platform/posix.c) are version 1 and have none. */
int ckh_node_spawn(struct ckh_node *n, ckh_bg_fn fn, void *arg, struct ckh_task **out);
int ckh_node_join(struct ckh_node *n, struct ckh_task *t, int *status);
/* printf-style log line through the node's log method. */
void ckh_node_logf(struct ckh_node *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
