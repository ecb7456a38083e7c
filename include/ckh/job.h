/* Jobs, sessions, checkpoint managers and the job runner: the epoch-level
 * checkpoint/resume semantics the rest of ckh checks resumed jobs against.
 *
 * A job has four task groups (init, epoch, download, exit); each task is a
 * C function bound to a node name. A session runs tasks in one workspace on
 * one platform (struct ckh_env): either every node's tasks (a single
 * process hosting all nodes, like a local session) or only one node's (a
 * simulated node in a multi-node job). The runner implements the protocol:
 *
 *   from scratch: init group, save epoch 0;  resume from k: load k and
 *     make it durable (ckh_ckpt_sync; a failure is logged and the job goes
 *     on); if its stop condition already holds, k was the last epoch: no
 *     epoch runs again and the job goes straight to upload, download, exit.
 *   epoch e = 1 (or k+1), ...: epoch group, evaluate stop conditions,
 *     save e (a failed save is logged; the job goes on), stop if any
 *     stop condition holds.
 *   upload step (pluggable), download group, exit group; returns e.
 *
 * Checkpoint managers (single-node and multi-node) store each node's blobs
 * through a backend (include/ckh/backend.h) under one prefix, file
 * <prefix>/<node>.<epoch>. Every function returns 0 or a negative code
 * unless it says otherwise; messages go to ckh_ckpt_errmsg/ckh_job_errmsg.
 */
#ifndef CKH_JOB_H
#define CKH_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/backend.h"
#include "ckh/env.h"
#include "ckh/workspace.h"

/* ---- sessions ---- */

struct ckh_session {
    struct ckh_env *env;    /* platform of the process running the tasks */
    struct ckh_ws *ws;      /* the workspace tasks read and write */
    const char *local_node; /* run only this node's tasks (NULL: every node's) */
};

/* True when node's tasks and checkpoints are handled by this session. */
bool ckh_session_is_local(const struct ckh_session *s, const char *node);

/* ---- jobs ---- */

enum ckh_group {
    CKH_GROUP_INIT = 0, /* run once, from scratch only */
    CKH_GROUP_EPOCH,    /* run once per epoch */
    CKH_GROUP_DOWNLOAD, /* run once after the last epoch */
    CKH_GROUP_EXIT,     /* run once at the very end */
    CKH_GROUP__COUNT
};

/* A task: returns 0 or a negative code (which fails the group). */
typedef int (*ckh_task_fn)(struct ckh_session *s, const char *node, void *arg);

struct ckh_job;

/* Creates an empty job (memory from a). Freed with ckh_job_destroy. */
int ckh_job_create(struct ckh_alloc *a, struct ckh_job **out);
void ckh_job_destroy(struct ckh_job *job);
const char *ckh_job_errmsg(const struct ckh_job *job);
/* Appends a task to a group; node and name are copied, arg is borrowed
 * (or owned, after ckh_job_own). Node names follow ckh_node_name_check. */
int ckh_job_add_task(struct ckh_job *job, enum ckh_group g, const char *node, const char *name,
                     ckh_task_fn fn, void *arg);
/* The job's allocator. */
struct ckh_alloc *ckh_job_alloc(const struct ckh_job *job);
/* Hands p (allocated from the job's allocator) to the job: freed with it. */
int ckh_job_own(struct ckh_job *job, void *p);
/* A stop condition: after each epoch, a nonzero i64 scalar blob `blob` in
 * node's workspace stops the job (absent or non-local: does not hold). */
int ckh_job_add_stop_condition(struct ckh_job *job, const char *node, const char *blob);
/* Nodes to checkpoint: those given here, else the init group's nodes in
 * order of first use. Pointers valid while job lives and is not changed. */
int ckh_job_set_nodes_to_checkpoint(struct ckh_job *job, const char *const *nodes, size_t n);
int ckh_job_nodes_to_checkpoint(const struct ckh_job *job, const char *const **nodes, size_t *n);
/* Every node used by any group, in order of first use. */
int ckh_job_nodes(const struct ckh_job *job, const char *const **nodes, size_t *n);
/* Number of tasks in a group. */
size_t ckh_job_group_size(const struct ckh_job *job, enum ckh_group g);
/* Adds an epoch limiter on node: the init group sets "<node>/epoch_counter"
 * to num_epochs - 1 (checkpointed with the node), each epoch counts it down
 * and sets "<node>/epoch_limit_reached", a stop condition. */
int ckh_job_epoch_limiter(struct ckh_job *job, const char *node, int64_t num_epochs);
/* Runs a group's local tasks in order, announcing phase `phase` with the
 * epoch and the task index as step. Stops at the first failing task. */
int ckh_job_run_group(struct ckh_job *job, struct ckh_session *s, enum ckh_group g,
                      const char *phase, int64_t epoch);
/* Whether a local stop condition holds (any). */
bool ckh_job_should_stop(const struct ckh_job *job, const struct ckh_session *s);

/* ---- checkpoint managers ---- */

/* Duration of the last checkpoint operation on one node (virtual time in
 * the simulator). */
struct ckh_ckpt_stat {
    const char *node;     /* node (borrowed from the manager) */
    const char *op;       /* "checkpoint_save", "checkpoint_load", ... (static) */
    char db_name[CKH_PATH_MAX]; /* the checkpoint it touched */
    int64_t epoch;        /* its epoch */
    uint64_t duration_ns; /* env->clock time it took */
    int result;           /* 0 or the error */
};

/* The metadata handler: records completed epochs per node and answers the
 * epoch to resume from. The durable record of a completed epoch is the
 * committed checkpoint file itself (renamed into place only after fsync),
 * so the answer survives any crash: the latest epoch that every node has
 * committed, merged with the epochs recorded in this process. */
struct ckh_meta;
int ckh_meta_create(struct ckh_alloc *a, struct ckh_meta **out);
void ckh_meta_destroy(struct ckh_meta *m);
/* Records that node completed epoch. */
int ckh_meta_write(struct ckh_meta *m, const char *node, int64_t epoch);
/* Latest epoch complete on every node of nodes (-1: none), consulting the
 * recorded epochs and b's listing (b may be NULL). */
int ckh_meta_last_epoch(struct ckh_meta *m, struct ckh_backend *b, const char *const *nodes,
                        size_t n, int64_t *out);

struct ckh_ckpt;

/* A single-node manager: one checkpoint <prefix>/<node_name>.<epoch>
 * holding every blob present in the workspace after the init group.
 * db_type names a backend (CKH_ENOTFOUND with a message for an unknown
 * one, in msg). meta may be NULL (then the resume epoch is the user's and
 * the directory is assumed accessible); it is borrowed. */
int ckh_ckpt_create_single(struct ckh_env *env, const char *prefix, const char *node_name,
                           const char *db_type, struct ckh_meta *meta, struct ckh_ckpt **out,
                           char *msg, size_t msglen);
/* A multi-node manager: one node manager per node (set by init), each
 * saving the blobs named "<node>/..." to <prefix>/<node>.<epoch>. Only the
 * session's local nodes are saved/loaded by this process. */
int ckh_ckpt_create_multi(struct ckh_env *env, const char *prefix, const char *db_type,
                          struct ckh_meta *meta, struct ckh_ckpt **out, char *msg, size_t msglen);
void ckh_ckpt_destroy(struct ckh_ckpt *ck);
const char *ckh_ckpt_errmsg(const struct ckh_ckpt *ck);
/* The backend instance (borrowed). */
struct ckh_backend *ckh_ckpt_backend(struct ckh_ckpt *ck);

/* Sets the nodes (a second call must give the same nodes) and fixes each
 * local node's blob list: the workspace's blobs now, or those of the
 * checkpoint of retrieve_from_epoch (>= 0), which is loaded. */
int ckh_ckpt_init(struct ckh_ckpt *ck, struct ckh_session *s, const char *const *nodes, size_t n,
                  int64_t retrieve_from_epoch);
/* Loads every local node's blob list from epoch's checkpoint. */
int ckh_ckpt_load(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch);
/* Makes every local node's checkpoint of epoch durable before the job
 * builds on it: fsyncs the directory that holds it (the parent of its
 * db_name). A process killed between renaming a checkpoint into place and
 * fsyncing the directory leaves a checkpoint that a restart sees (a kill
 * keeps the page cache) but that a later crash can still take back (an
 * unsynced rename is not durable, sim/simfs.c S4). */
int ckh_ckpt_sync(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch);
/* Saves every local node's blob list as epoch's checkpoint. */
int ckh_ckpt_save(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch);
/* Partial load: for each node, if its checkpoint of epoch is missing
 * returns 0 (false); else loads the named blobs it has. Returns 1 (true)
 * when every node's checkpoint existed, or a negative code. */
int ckh_ckpt_load_blobs_locally(struct ckh_ckpt *ck, struct ckh_session *s,
                                const char *const *nodes, size_t n, const char *const *names,
                                size_t count, int64_t epoch);
/* Writes the checkpoint name of node at epoch (CKH_ENOTFOUND: not a node
 * of the manager). */
int ckh_ckpt_db_name(const struct ckh_ckpt *ck, const char *node, int64_t epoch, char *buf,
                     size_t n);
/* Metadata: record epoch as complete for the local nodes. */
int ckh_ckpt_write_metadata(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch);
/* Sets the nodes (as init does) and gives the epoch to resume from:
 * user_epoch when >= 0; else, with a metadata handler, the latest epoch
 * complete on every node; else -1 (from scratch). */
int ckh_ckpt_resume_epoch(struct ckh_ckpt *ck, const char *const *nodes, size_t n,
                          int64_t user_epoch, int64_t *out);
/* Accessibility: without a metadata handler always true; with one, the
 * checkpoint directory exists (epoch < 0) or every node's checkpoint of
 * epoch exists. */
bool ckh_ckpt_accessible(struct ckh_ckpt *ck, int64_t epoch);
/* Node managers (count) and their names / last-operation statistics. */
size_t ckh_ckpt_node_count(const struct ckh_ckpt *ck);
const char *ckh_ckpt_node_name(const struct ckh_ckpt *ck, size_t i);
int ckh_ckpt_stat_get(const struct ckh_ckpt *ck, size_t i, struct ckh_ckpt_stat *out);
/* Logs every node's last statistics under action through env->node. */
void ckh_ckpt_report_stats(struct ckh_ckpt *ck, const char *action);

/* ---- the job runner ---- */

/* The pluggable upload step: called after training with the last epoch. */
typedef int (*ckh_upload_fn)(void *ctx, struct ckh_session *s, struct ckh_ckpt *ck, int64_t epoch);

/* Upload builder: copies each local node's checkpoint of epoch to
 * <ctx as const char * directory>/<node>, through env->fs. */
int ckh_upload_to_dir(void *dir, struct ckh_session *s, struct ckh_ckpt *ck, int64_t epoch);

struct ckh_runner_config {
    struct ckh_job *job;      /* the job (borrowed) */
    struct ckh_ckpt *ckpt;    /* checkpoint manager (borrowed; NULL: none) */
    int64_t resume_from_epoch; /* -1: from scratch (unless the metadata says otherwise) */
    ckh_upload_fn upload;     /* upload step (NULL: none) */
    void *upload_ctx;         /* its context */
    uint64_t saves_failed;    /* out: saves that failed (logged, not fatal) */
    int64_t resumed_from;     /* out: epoch loaded at start (-1: from scratch) */
};

/* Runs the job (see the top of this file); *epochs receives the number
 * of the last epoch. */
int ckh_runner_run(struct ckh_runner_config *cfg, struct ckh_session *s, int64_t *epochs);
/* Loads the named blobs from every checkpointed node's checkpoint of
 * epoch: 1 (true), 0 (false: some node's checkpoint does not exist), or a
 * negative code. */
int ckh_runner_load_blobs_from_checkpoints(struct ckh_runner_config *cfg, struct ckh_session *s,
                                           const char *const *names, size_t count, int64_t epoch);

#endif
