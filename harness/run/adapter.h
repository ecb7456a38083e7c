/* Workload adapters: how the runner turns a scenario's job into simulated
 * nodes and reads their results back.
 *
 * Every workload the harness can run has one adapter (an ops table). The
 * runner asks it for the nodes of the job (name, rank, program, argument),
 * tells it before each run which epoch to resume from, and after the job
 * collects generic results: per node the values the oracles compare
 * (epochs, total, blob names, state digest, saves that failed) and, for
 * training workloads, per-step digests and per-epoch sample records.
 *
 * Ownership: an adapter instance (void *) is created by `create` and freed
 * by `destroy`; everything it hands out (node args, results) stays valid
 * until then and lives outside simulated node memory, so it survives kills.
 */
#ifndef CKH_ADAPTER_H
#define CKH_ADAPTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/sim.h"
#include "run/records.h"
#include "scenario/scenario.h"

/* How an instance runs the job (the `mode` of create). */
enum {
    CKH_RUN_NO_DEFECTS = 0x1, /* defect switches off: reference and control runs */
    CKH_RUN_NO_FAULTS = 0x2,  /* the fault-free reference run: no fault-driven set-up,
                                 the world as written */
};
#define CKH_RUN_REFERENCE (CKH_RUN_NO_DEFECTS | CKH_RUN_NO_FAULTS)

struct ckh_adapter_ops {
    const char *name;        /* workload name as scenarios write it */
    const char *description; /* one line for `ckh list` */
    bool step_based;         /* progress and checkpoint cadence count steps, not epochs */
    /* Builds an instance for sc's job run with seed, as `mode` says
     * (CKH_RUN_* flags). Bad options -> CKH_EINVAL with msg naming them. */
    int (*create)(const struct ckh_scenario *sc, uint64_t seed, unsigned mode, void **out,
                  char *msg, size_t msglen);
    void (*destroy)(void *inst);
    int (*node_count)(void *inst);
    /* Node i's name, collective rank (-1: none), program and argument. */
    int (*node)(void *inst, int i, char *name, size_t namelen, int *rank, ckh_node_main *main,
                void **arg);
    /* The checkpoint interval in progress units (epochs, or steps when
     * step_based): the most work a crash may cost. */
    int64_t (*interval)(void *inst);
    /* Called before run `run` (1-based): resume_epoch -1 means "latest". */
    void (*before_run)(void *inst, int run, int64_t resume_epoch);
    /* Fills *out from the nodes' results (valid until destroy). */
    int (*collect)(void *inst, struct ckh_job_result *out);
    /* Writes the path of the job's `latest` pointer (the default target of
     * dangling-latest and stale-latest faults) into buf. NULL: the job keeps
     * no such pointer, and those faults are refused. */
    int (*latest_link)(void *inst, char *buf, size_t n);
    /* After a crash: does the state on disk (seen through fs, as a
     * restarted node would) resolve to a fully committed checkpoint that
     * loads? 0 when it does (or when nothing was committed yet, which
     * resumes from scratch); else a negative code and msg says what is
     * wrong. NULL: not checked. */
    int (*verify)(void *inst, struct ckh_fs *fs, char *msg, size_t msglen);
    /* A restart with another world size (scenario restart.world_size);
     * NULL: the workload cannot, and the runner refuses the setting.
     * Protocol: a non-reference instance of a scenario with
     * restart.world_size W' is created for max(W, W') nodes (W: the job's
     * own world); node() reports rank -1 for the nodes beyond W, which the
     * runner parks. Before the first restart the runner calls
     * set_world(inst, W'); from then on node() reports each node's rank in
     * the new world (-1: parked) and the job runs with W' ranks. A
     * reference instance ignores restart.world_size. Returns 0, or
     * CKH_EINVAL with msg saying why. */
    int (*set_world)(void *inst, int world, char *msg, size_t msglen);
};

/* Finds the adapter of a workload; NULL if none. */
const struct ckh_adapter_ops *ckh_adapter_find(const char *workload);
/* The i-th adapter (NULL past the end), for listings and name validation. */
const struct ckh_adapter_ops *ckh_adapter_at(size_t i);

/* The adapters (private to harness/; listed by adapter.c). */
extern const struct ckh_adapter_ops ckh__adapter_seed_pipeline;
extern const struct ckh_adapter_ops ckh__adapter_param_server;
extern const struct ckh_adapter_ops ckh__adapter_ddp_train;

/* True when rc is how a load reports refusing corrupt data. */
bool ckh_rc_is_corruption(int rc);

/* Reports a bad job.options entry: "line:col: option 'key': what" into
 * msg (n bytes); returns CKH_EINVAL. Shared by the adapters. */
int ckh__adapter_option_error(char *msg, size_t n, const struct ckh_scn_kv *kv, const char *what);

#endif
