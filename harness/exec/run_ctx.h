/* The runner's private state, shared by the files that make up the
 * runner (runner.h says what the runner does, in data-flow order):
 *   runner.c   set-up of the simulator, the runs with restarts, the
 *              public entry points;
 *   arm.c      the fault script of one run: scenario faults become
 *              simulator rules, at-rest faults are applied to the disks
 *              (each fault's descriptor in harness/model/faults/ says how);
 *   results.c  copies of the adapters' job results;
 *   cache.c    the reference run and its on-disk cache;
 *   judge.c    the verdict: oracles, golden files, the control run.
 */
#ifndef CKH_RUN_CTX_H
#define CKH_RUN_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "exec/exec.h"
#include "exec/records.h"
#include "exec/runner.h"
#include "exec/workloads.h"

/* Per-node tracking of progress, fed by the fault hook on every op. */
struct ckh__run_track {
    int64_t progress;     /* highest epoch/step seen in an "epoch" or "save" phase */
    char phase[16];       /* last phase announced */
    bool load_seen;       /* the node loaded a checkpoint in this run */
    int64_t load_epoch;   /* the epoch it loaded (epoch-based jobs) */
    bool resume_known;    /* the node started working in this run */
    int64_t resume_point; /* the epoch/step its work in this run started from */
};

struct ckh__run_ctx;

/* The argument of a node's program: the workload's node_main is called
 * through run.c's trampoline, which hands the node its record table. */
struct ckh__run_node {
    struct ckh__run_ctx *rc; /* the run */
    int index;               /* node index */
};

/* An at-rest fault armed on a trigger (CALL action context). */
struct ckh__run_call {
    struct ckh__run_ctx *rc;           /* the run */
    const struct ckh_scn_fault *fault; /* what to do */
    size_t index;                      /* its index in the scenario */
};

struct ckh__run_ctx {
    unsigned mode;                       /* CKH_RUN_* flags: NO_FAULTS skips arming and restarts */
    const struct ckh_scenario *sc;       /* the scenario */
    struct ckh_resolved res;             /* its workload, backend and saver */
    const struct ckh_workload_ops *wl;   /* = res.workload */
    struct ckh_wl_option *opts;          /* the job's options for the workload (owned) */
    struct ckh_workload_job job;         /* the job as the workload sees it */
    void *inst;                          /* the workload instance */
    struct ckh_records *records;         /* what the nodes reported (owned) */
    struct ckh__run_node *nodes;         /* [n]: each node's program argument (owned) */
    bool at_rest_applied;                /* an at-rest fault changed the disks before this run */
    struct ckh_sim *sim;                 /* the simulator */
    int n;                               /* nodes */
    char (*names)[CKH_NODE_NAME_LEN];    /* node names */
    struct ckh_simfs **disks;            /* [ndisks * n]: disk d of node i (shared: same) */
    struct ckh_simfs_mount *mounts;      /* [n * ndisks] */
    struct ckh__run_track *track;        /* [n] */
    struct ckh__run_call *calls;         /* [nfaults] */
    size_t *rule_fault;                  /* [nfaults]: scenario fault of each armed rule */
    size_t nrules;                       /* rules armed for the current run */
    struct ckh_scenario_run *rec;        /* where firing counts go (NULL: not counted) */
    struct ckh_fault_env env;            /* the disks, for faults applied at rest */
    bool step_based;                     /* progress counted in steps (training jobs) */
    int world_first;                     /* ranks of run 1 */
    int world_restart;                   /* ranks of runs 2.. (world_first: unchanged) */
    char err[CKH__EXEC_ERR_BYTES];       /* set-up error */
};

/* Formats the run's error message (c->err, CKH_ERRF); returns code. */
#define ckh__run_fail(c, code, ...) CKH_ERRF((c)->err, (code), __VA_ARGS__)

/* runner.c: what the job asks of the workload c->wl that it cannot do
 * (defect switches, devices, a latest pointer, collectives,
 * restart.world_size), refused before any run with one message whatever
 * the executor: CKH_EINVAL with c->err, else 0. */
int ckh__run_check_support(struct ckh__run_ctx *c);
/* The workload instance of c (c->res resolved, c->wl set): its options,
 * the job handed to create, step_based and the node count (1 ..
 * CKH_RUNNER_MAX_NODES). 0, or the workload's code / CKH_EINVAL with c->err. */
int ckh__run_create_workload(struct ckh__run_ctx *c, const struct ckh_scenario *sc, uint64_t seed, unsigned mode);
/* runner.c: ckh_fault_for_each_disk callback that creates dpath on disk d
 * and makes it durable (a job's directories before it starts; env->err on
 * failure). Shared by the simulated runner, command jobs and the real
 * platform's simfs disks. */
int ckh__run_make_dir_fn(struct ckh_fault_env *env, struct ckh_simfs *d, const char *dpath, const void *arg);
/* runner.c: builds the simulator for sc (mode: CKH_RUN_* flags; keep_trace
 * keeps the trace). On failure c->err says why; c is freed with
 * ckh__run_ctx_free either way. */
int ckh__run_build_sim(struct ckh__run_ctx *c, const struct ckh_scenario *sc, uint64_t seed,
                       unsigned mode, bool keep_trace);
void ckh__run_ctx_free(struct ckh__run_ctx *c);
/* Runs the job with restarts through the driver (exec/exec.h); fills the
 * run records of out. */
int ckh__run_execute(struct ckh__run_ctx *c, struct ckh_scenario_run *out);
/* The simulator executor (exec/exec.h) over a struct ckh__run_ctx. */
struct ckh_exec_ops;
struct ckh_exec_job;
extern const struct ckh_exec_ops ckh__exec_sim;
/* The driver's view of c's job (nodes, worlds, record store, verify). */
void ckh__run_exec_job(const struct ckh__run_ctx *c, struct ckh_exec_job *job);
/* runner.c: the committed-state check of view v of c's simfs disks by the
 * workload's verify (exec/exec.h's verify_view; CKH__EXEC_NO_VIEW when no
 * view can be made). Also the real platform's simfs disks'. */
int ckh__run_verify_simfs_view(struct ckh__run_ctx *c, int v, bool *ok, char *detail, size_t n);
/* arm.c: arms the faults of run `run` (1-based) and applies the at-rest
 * faults that have no trigger. */
int ckh__run_arm_faults(struct ckh__run_ctx *c, int run);
/* arm.c: the node fault f names among the job's nodes (ckh_fault_node):
 * *node its index or -1 for any; 0, or CKH_EINVAL with the one wording in
 * c->err. */
int ckh__run_fault_node(struct ckh__run_ctx *c, const struct ckh_scn_fault *f, int *node);
/* arm.c: applies fault `index` at rest now to node's disks (-1: every
 * node's), its firings counted into c->rec (when set), and notes
 * c->at_rest_applied. The fault's code (c->err says why). */
int ckh__run_apply_at_rest(struct ckh__run_ctx *c, size_t index, int node);
/* The hook sees every op: it only tracks each node's progress. */
void ckh__run_track_hook(void *ctx, const struct ckh_op *op, struct ckh_fault_action *act);

/* results.c: copies of job results (dst owns its arrays). */
int ckh__run_job_copy(struct ckh_job_copy *dst, const struct ckh_job_result *src);
void ckh__run_job_copy_free(struct ckh_job_copy *j);
/* Entries of src->sample_counts (0 when not kept). */
size_t ckh__run_counts_len(const struct ckh_job_result *src);

/* cache.c: the reference run (cached under o->cache_dir) into out->ref. */
int ckh__run_reference(const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                       struct ckh_scenario_run *out, char *err, size_t errlen);

/* runner.c: the simulator's reference run (cached, exec/cache.c), as
 * struct ckh_executor's reference; also the real platform's. */
int ckh__run_sim_reference(void *job, const struct ckh_scenario *sc, uint64_t seed,
                           const struct ckh_run_options *o, struct ckh_scenario_run *r, bool *judged, char *err,
                           size_t errlen);
/* runner.c: `ckh replay` in the simulator, as struct ckh_executor's
 * replay; also the real platform's (its ranks keep no trace: the replay
 * shows the simulated job's). */
int ckh__run_sim_replay(const struct ckh_scenario *sc, const struct ckh_run_options *opts, const char *node_filter,
                        const char *op_filter, void *fp, char *msg, size_t msglen);

#endif
