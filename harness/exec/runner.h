/* The runner: one scenario from its parsed file to its verdict.
 *
 * Data flow (docs/ARCHITECTURE.md follows it step by step):
 *   1. the reference run: the scenario's job with no faults and no defect
 *      switches, cached per job description;
 *   2. the faulted run: the job in a fresh simulator with the fault script
 *      armed, restarted after every failure until it completes or the
 *      restart budget is spent, with a look at the disks after every crash;
 *   3. every oracle that applies (harness/oracle.h), each in its own
 *      *_check.c file, judging the record of 1 and 2;
 *   4. a struct ckh_report_result for reports/.
 */
#ifndef CKH_RUNNER_H
#define CKH_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/records.h"
#include "ckh/sim.h"
#include "report.h"
#include "model/scenario.h"

#define CKH_RUNNER_MAX_NODES 1024

struct ckh_scenario_run;

struct ckh_run_options {
    bool seed_set;          /* use seed instead of the scenario's */
    uint64_t seed;          /* the --seed override */
    const char *source_dir; /* repository root, for golden files (NULL: ".") */
    const char *cache_dir;  /* reference-run cache folder (NULL: no cache) */
    const char *argv0;      /* the ckh command, for replay lines (NULL: "ckh") */
    bool check_determinism; /* run the faulted job twice and compare trace hashes */
    /* Called with the faulted job's simulator (trace kept) and its record
     * after the runs and before the oracles; NULL: no trace is kept. The
     * simulator and record are borrowed for the call (harness/fuzz.c). */
    void (*on_trace)(void *ctx, const struct ckh_sim *sim, const struct ckh_scenario_run *r);
    void *on_trace_ctx;     /* passed to on_trace */
    bool timeline;          /* fill out->timeline with the runs' per-node events */
    bool real_platform;     /* --platform real: workload jobs run as real processes
                               (exec/mpi.h), as `platform: real` asks */
};

/* Where a node stood when a run ended. */
struct ckh_node_end {
    enum ckh_node_state state; /* EXITED or KILLED (or RUNNING if the run hung) */
    int exit_status;           /* main's return value when EXITED */
    int64_t progress;          /* highest epoch (or step) the node worked on */
    char phase[16];            /* last phase it announced ("" if none) */
    char pending[160];         /* blocked op at a deadlock ("" if none) */
    int64_t resumed_from;      /* what the workload reported as its resume point (-1: scratch) */
    bool resume_known;         /* the node started working in this run (seen by ckh) */
    int64_t resume_point;      /* if so, the epoch/step its work started from (0: scratch) */
    int rc;                    /* the job's return code on the node (0 if it did not finish) */
};

/* One run of the job (1 + restarts of them). */
struct ckh_run_info {
    int run;                        /* 1-based */
    enum ckh_sim_outcome outcome;   /* why the simulator stopped */
    int64_t resume_epoch;           /* resume policy handed to the job (-1: latest) */
    uint64_t faults_fired;          /* FAULT lines during the run */
    bool crashed;                   /* a node was killed or its machine crashed */
    bool completed;                 /* every node exited with status 0 */
    char report[1024];              /* deadlock report ("" if none) */
    bool committed_ok;              /* after a crash: the disks resolve to a committed checkpoint */
    char committed_detail[512];     /* what the committed look found */
    struct ckh_node_end *nodes;     /* per node (owned by the record) */
    size_t nnodes;                  /* number of nodes */
    uint64_t trace_end;             /* trace length when the run ended */
};

/* A copy of an adapter's job result that outlives the adapter. */
struct ckh_job_copy {
    struct ckh_job_result r;  /* pointers below */
    struct ckh_node_result *nodes;       /* owned */
    struct ckh_step_record *steps;       /* owned */
    struct ckh_epoch_samples *samples;   /* owned */
    struct ckh_step_quantity *quantities;   /* owned */
    struct ckh_step_quantity *final_values; /* owned */
    uint32_t *sample_counts;             /* owned (NULL: none) */
    int *epoch_world;                    /* owned (NULL: none) */
    struct ckh_step_key *restored;       /* owned (NULL: none) */
};

/* One operation of a command job's object store on a key, as the store
 * traced it (sim/objstore.c, ckh_objstore_trace_op), for the oracles
 * (harness/judge/retention_check.c). */
struct ckh_store_op {
    uint64_t seq;       /* the store's operation number */
    uint32_t run;       /* 1-based run it happened in (past the last run: verify) */
    int node;           /* the node it came from (-1: ckh itself: a fault at rest) */
    int64_t step;       /* a DeleteObject of a node: the last step the node reported
                           before sending it (-1: none reported, or another operation) */
    const char *op;     /* "PutObject", "DeleteObject", "Undo", "Expire", ... (static) */
    char *bucket;       /* owned */
    char *key;          /* owned */
    int result;         /* 0, an enum ckh_s3_err, or a negative ckh code */
    bool exists;        /* the key had a current version right after the operation */
};

/* Everything the oracles judge. */
struct ckh_scenario_run {
    const struct ckh_scenario *sc;  /* the scenario */
    uint64_t seed;                  /* the seed actually used */
    const char *source_dir;         /* for golden files */
    char golden_path[2304];         /* the golden file found for expect.golden ("" if none) */
    struct ckh_job_copy ref;        /* the reference run */
    bool ref_ok;                    /* the reference run completed */
    struct ckh_job_copy got;        /* the faulted job after its last run */
    struct ckh_run_info *runs;      /* every run, in order (owned) */
    size_t nruns;                   /* number of runs */
    size_t runs_cap;                /* runs `runs` has room for (ckh__run_alloc_runs) */
    bool completed;                 /* the last run completed the job */
    bool deadlock_seen;             /* some run ended in a deadlock */
    bool hang_seen;                 /* some run hit the time or op limit */
    bool corruption_seen;           /* some load refused corrupt data */
    bool timeout_seen;              /* some collective failed (timeout, dead peer, mismatch) */
    bool oom_seen;                  /* an emulated device ran out of memory */
    uint64_t saves_failed;          /* failed saves over all runs */
    uint64_t *fault_fired;          /* per scenario fault: times it fired (owned) */
    bool *fault_armed;              /* per scenario fault: armed in some run that happened (owned) */
    uint64_t virtual_ns;            /* virtual time, all runs */
    uint64_t trace_hash;            /* trace hash of the faulted job */
    uint64_t trace_hash2;           /* second execution when checking determinism (else 0) */
    int64_t interval;               /* checkpoint interval in epochs (or steps) */
    int world;                      /* ranks of run 1 (0: the workload has none) */
    int world_restart;              /* ranks planned for runs 2.. (restart.world_size;
                                       == world when unchanged) */
    bool resized;                   /* some run ran with world_restart ranks != world */
    /* ---- appended: a command job's object store (docs/OBJECT_STORE.md) ---- */
    struct ckh_store_op *store_ops; /* the faulted job's operations on keys, in order (owned;
                                       NULL: no store, or the job never ran) */
    size_t nstore_ops;              /* their number */
};

/* Runs sc's job once (faults armed, no restarts, no oracles) and prints
 * its trace, one line per record, to f; node/op filter by name (NULL:
 * all). Returns 0 or a negative code with a message in msg. */
int ckh_harness_replay(const struct ckh_scenario *sc, const struct ckh_run_options *opts,
                      const char *node_filter, const char *op_filter, void *f, char *msg,
                      size_t msglen);

/* Builds the per-node timeline of a finished faulted job from its
 * simulator's trace (harness/exec/timeline.c): *out owned by the caller
 * (ckh_report_timeline_free; any previous *out is freed first). Returns 0,
 * CKH_EINVAL or CKH_ENOMEM. */
int ckh_timeline_build(const struct ckh_sim *sim, const struct ckh_scenario_run *r,
                       struct ckh_report_timeline **out);

/* Frees what a scenario run owns. */
void ckh_scenario_run_free(struct ckh_scenario_run *r);

/* The node result named node in a job copy, or NULL. */
const struct ckh_node_result *ckh_job_copy_node(const struct ckh_job_copy *c, const char *node);

#endif
