/* The real platform's collectives: struct ckh_coll (include/ckh/env.h)
 * over MPI, one rank per process. real/coll_mpi.c is compiled once per MPI
 * implementation found at configure time (Open MPI, MPICH), into the
 * rank program of that implementation (ckh-rank-openmpi, ckh-rank-mpich).
 *
 * Specification (tests/test_real.sh checks it against sim/coll.c):
 *
 * Every collective is an exchange of point-to-point messages on a
 * duplicate of MPI_COMM_WORLD, made of non-blocking calls (MPI_Isend,
 * MPI_Iprobe, MPI_Recv of a probed message) polled until they complete or
 * the call's deadline passes (timeout 0: no deadline). Each message
 * starts with a header naming the call (kind, #seq, count, dtype, op,
 * root): each rank numbers its collectives 1, 2, ... as the simulator
 * does, and every rank sends its header (with its buffer where the result
 * needs it) to every other rank, so every rank sees every other rank's
 * call. MPI's own collective algorithms are never used: results do not
 * depend on them.
 *   - barrier: headers only;
 *   - broadcast: the root's header carries the buffer; the others' headers
 *     travel empty;
 *   - all-reduce: each rank sends its buffer; every rank folds the W
 *     buffers in rank order (acc = rank 0's, then ckh_coll_reduce with
 *     rank 1's, 2's, ...): the simulator's fold, with the simulator's
 *     reduce function, so f32/f64 sums are bit-identical to sim/coll.c's;
 *   - all-gather: each rank sends its block; recv holds rank r's at
 *     r * size_bytes.
 * A header of an older #seq (left over from a call that failed) is
 * dropped. Headers that disagree (kind, count, dtype, op or root), or a
 * rank joining with a MISMATCH fault, make the call unable to complete:
 * it waits out its deadline and fails with CKH_EMISMATCH, as in the
 * simulator. A deadline that passes otherwise gives CKH_ETIMEOUT: a real
 * rank cannot tell a dead peer from a slow one, so CKH_EPEER_DEAD is only
 * returned when MPI itself reports an error (MPI_ERRORS_RETURN is set).
 *
 * send/recv: one synchronous-mode message (MPI_Issend: the send completes
 * when the peer's recv has matched it, the simulator's rendezvous) on an
 * MPI tag derived from the user's tag, whose header carries the full tag
 * and size. Sizes that differ fail the recv with CKH_EMISMATCH (the
 * sender has already completed: the simulator fails both).
 *
 * Faults: each call first goes through the gate (ckh_real_env_gate: the
 * node's fault script) with the op the simulator traces (barrier and
 * allgather off 0; broadcast off root; send/recv off peer, arg tag;
 * allreduce arg dtype * 16 + op; len bytes). An ERRNO fault fails the call
 * without taking a #seq; KILL_BEFORE (kill, die-in-collective) kills the
 * process inside the collective; KILL_AFTER kills it after; DELAY waits.
 *
 * Background tasks share the rank: a call made while another thread of
 * the process is inside one fails at once with CKH_ESTATE (MPI runs in
 * MPI_THREAD_SERIALIZED).
 *
 * After a failed call the process's MPI state may hold unmatched
 * messages; ckh_real_mpi_finalize then skips MPI_Finalize (the launcher
 * reaps the job), see docs/REAL.md.
 */
#ifndef CKH_REAL_COLL_H
#define CKH_REAL_COLL_H

#include <stdbool.h>

#include "ckh/env.h"
#include "ckh/fault_rule.h"
#include "ckh/op.h"

/* The MPI implementation this object set was built against ("openmpi",
 * "mpich"). Static storage. */
const char *ckh_real_mpi_name(void);

/* MPI_Init_thread (MPI_THREAD_SERIALIZED) with MPI_ERRORS_RETURN on
 * MPI_COMM_WORLD; *rank and *world of MPI_COMM_WORLD. CKH_EINTERNAL (msg
 * says why: the environment) when MPI cannot start or lacks the thread
 * level. */
int ckh_real_mpi_init(int *argc, char ***argv, int *rank, int *world, char *msg, size_t msglen);
/* Ends MPI: MPI_Finalize when every collective of c completed (c may be
 * NULL), else nothing (a failed exchange may leave requests MPI would wait
 * for). Call once, last. */
void ckh_real_mpi_finalize(struct ckh_coll *c);

/* The fault gate each call goes through (ckh_real_env_gate). */
typedef void (*ckh_real_gate_fn)(void *ctx, struct ckh_op *op, struct ckh_fault_action *act);

/* Collectives over a duplicate of MPI_COMM_WORLD (after
 * ckh_real_mpi_init). *out is freed with ckh_real_coll_destroy (before
 * ckh_real_mpi_finalize). CKH_ENOMEM, or CKH_EPEER_DEAD when MPI fails. */
int ckh_real_coll_create(struct ckh_coll **out);
void ckh_real_coll_destroy(struct ckh_coll *c);
/* Sets the gate (NULL fn: no faults); ctx is borrowed. */
void ckh_real_coll_set_gate(struct ckh_coll *c, ckh_real_gate_fn fn, void *ctx);
/* Whether some call of c failed (its MPI state is no longer clean). */
bool ckh_real_coll_failed(const struct ckh_coll *c);

/* The collectives' conformance script (real/coll_check.c), for any
 * struct ckh_coll, simulated or real: a barrier, a broadcast from rank 1,
 * an all-reduce of every dtype with every op on inputs whose float sums
 * depend on the order of the fold, an all-gather, a ring of send/recv,
 * and with skip_last_barrier a last barrier that the last rank never
 * joins (the others must fail with CKH_ETIMEOUT). Each call's return code
 * and result bytes go to *out (*n bytes, malloc'd: the caller frees).
 * 0 or CKH_ENOMEM. */
int ckh_real_coll_check(struct ckh_coll *c, bool skip_last_barrier, uint64_t timeout_ns, unsigned char **out,
                        size_t *n);

#endif
