/* The real platform's environment: struct ckh_env (include/ckh/env.h)
 * for ONE node run as a real process (ckh's "Net2" side beside sim/).
 *
 *   fs      POSIX files under the node's disk folder (platform/posix.c;
 *           a ckhfs mount of a simulated disk when the scenario has
 *           crash, power-loss, fsync-fail or at-rest faults),
 *           behind a shim that meets every operation with the node's fault
 *           script (real_faults.h) exactly where the simulator's simfs
 *           view would: open, read, pread, write, pwrite (a described
 *           write, pwrite_gen, is ONE pwrite as in simfs), fsync,
 *           fdatasync, ftruncate, close, rename, unlink, mkdir, rmdir,
 *           listdir, stat, symlink, readlink, fsync_dir; ops on an open
 *           file carry the path it was opened by;
 *   clock   CLOCK_MONOTONIC; sleep really sleeps (and is a SLEEP op for
 *           the fault script);
 *   rand    stream_seed(name) = ckh_seed_derive(ckh_node_rand_base(seed,
 *           node name), name): bit-identical to the simulator's;
 *   coll    given by the caller (real_coll.h over MPI; NULL: none);
 *   gpu     given by the caller (real_nccl.h's device memory; NULL: none);
 *   node    exit (the caller's on_exit, then exit(3)), name, log (one
 *           "[node] msg" line on stderr), phase (kept for the fault
 *           triggers, and appended as "phase epoch step" to the track
 *           file), spawn/join on pthreads (at most 8 tasks, as in the
 *           simulator);
 *   alloc   the system allocator (a real process's memory is its own);
 *   record  the JSON-lines writer of include/ckh/record.h, one line per
 *           record, flushed per record (a killed node keeps what it
 *           recorded).
 */
#ifndef CKH_REAL_ENV_H
#define CKH_REAL_ENV_H

#include <stdint.h>

#include "ckh/env.h"
#include "ckh/op.h"
#include "ckh/fault_rule.h"
#include "real_faults.h"

struct ckh_real_env_config {
    const char *root_dir;           /* the real folder the node's "/" is (must exist; unused with fs) */
    struct ckh_fs *fs;              /* the node's files (borrowed; NULL: the POSIX fs at root_dir),
                                       e.g. several disk folders at their mount paths */
    uint64_t seed;                  /* the run's seed */
    const char *node_name;          /* "rank_0" (copied) */
    int node_index;                 /* the node's index in the job (fault rules' node) */
    struct ckh_coll *coll;          /* collectives (borrowed; NULL: a node without rank) */
    struct ckh_gpu *gpu;            /* device memory (borrowed; NULL: none) */
    struct ckh_real_faults *faults; /* the fault script (borrowed; NULL: none) */
    const char *record_path;        /* JSON-lines record file (NULL: env->record is NULL) */
    const char *track_path;         /* phase lines go here (NULL: nowhere) */
    /* Called by the node's exit(status) before the process exits (flush,
     * status file, MPI_Finalize). NULL: nothing. */
    void (*on_exit)(void *ctx, int status);
    void *on_exit_ctx;              /* passed to on_exit */
};

/* The environment of one real node. CKH_EINVAL for a missing root (and fs) or
 * name, -errno when a file cannot be opened (msg says which), CKH_ENOMEM.
 * *out is freed with ckh_real_env_destroy (which closes the record file);
 * borrowed pointers must outlive it. */
int ckh_real_env_create(const struct ckh_real_env_config *cfg, struct ckh_env **out, char *msg,
                        size_t msglen);
void ckh_real_env_destroy(struct ckh_env *env);

/* The fault gate for code that runs ops outside the fs (the collectives):
 * fills op->node, phase, epoch and step from env, then evaluates the
 * fault script (ckh_real_faults_enter). ctx is the struct ckh_env *. */
void ckh_real_env_gate(void *ctx, struct ckh_op *op, struct ckh_fault_action *act);

#endif
