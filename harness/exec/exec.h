/* Executors: the ways ckh carries out a job's runs, behind one interface,
 * and the one driver that owns what is common to them.
 *
 * ckh runs a scenario's job three ways:
 *   simulator  the workload's nodes as tasks of the deterministic
 *              simulator (exec/runner.c, exec/arm.c);
 *   command    real programs as the nodes, their checkpoint folder a simfs
 *              disk served over ckhfs (exec/command*.c);
 *   real       the workload's nodes as rank programs under mpirun
 *              (exec/mpi*.c, the ranks in real/).
 * An executor only starts nodes, delivers faults and reports what
 * happened in each run. The driver (exec/driver.c, ckh__exec_runs) owns
 * the rest, once for all three: the restart loop and its budget, the
 * world-size change between run 1 and run 2, the committed-checkpoint
 * check after a failed run, the record store's runs, and the run records
 * the oracles judge (judge/). Choosing the executor and the refusals that
 * do not depend on it are ckh_exec_select's and ckh_exec_check's.
 *
 * Where a new executor goes: one file (or a few, exec/NAME*.c) with a
 * static const struct ckh_exec_ops, and one line in exec/exec_list.h.
 */
#ifndef CKH_EXEC_H
#define CKH_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/err.h"
#include "exec/records.h"
#include "exec/runner.h"
#include "exec/workloads.h"
#include "model/scenario.h"

/* What the driver needs to know of one execution of a job (the
 * reference, the faulted job, a second execution for the determinism
 * check), filled by the executor when it sets the execution up. */
struct ckh_exec_job {
    const struct ckh_scenario *sc; /* the scenario */
    unsigned mode;                 /* CKH_RUN_* flags: NO_FAULTS = the reference, one run */
    int n;                         /* nodes, 1 .. CKH_RUNNER_MAX_NODES */
    int world_first;               /* ranks of run 1 */
    int world_restart;             /* ranks of runs 2.. (world_first: unchanged) */
    struct ckh_records *records;   /* the record store the nodes report to (the executor's) */
    bool verify;                   /* the job has a check of the committed state (a workload's
                                      verify, a command job's verify program) */
    bool verify_any_failure;       /* checked after every failed run (command jobs' verify
                                      program), not only after a crash */
};

/* What verify_view returns for a view there is nothing to look at (no
 * disk view could be made): the view is passed over. */
#define CKH__EXEC_NO_VIEW 1

/* The size of an execution context's set-up error: a whole PATH_MAX path
 * (a scenario file, a plugin, a program) and the words around it. The
 * handles of the code under test keep CKH_ERRMSG_BYTES (their messages
 * count in a node's simulated memory). */
#define CKH__EXEC_ERR_BYTES (4096 + CKH_ERRMSG_BYTES)

/* One executor's operations on one execution x (its own struct). */
struct ckh_exec_ops {
    const char *name; /* "simulator", "command", "real" */
    /* Runs run ri->run (1-based; prev: the run before, NULL for run 1):
     * arms the run's faults (none when the execution is fault-free),
     * starts the nodes planned for it, delivers the faults, waits, and
     * fills ri (outcome, node ends, crashed, completed, report,
     * trace_end) and out (the job result so far in out->got, the seen
     * flags, firing counts). 0, or a code with the executor's message. */
    int (*run)(void *x, struct ckh_run_info *ri, const struct ckh_run_info *prev, struct ckh_scenario_run *out);
    /* The committed-state check of view v (node v's disks; v = 0 for a
     * job whose disks are all shared): *ok and a detail. 0,
     * CKH__EXEC_NO_VIEW, or a code with the executor's message. */
    int (*verify_view)(void *x, int v, bool *ok, char *detail, size_t n);
    /* Between run 1 and run 2 of a job whose world changes: every node
     * takes its rank in the new world, the ranked nodes start, the
     * others are parked. NULL: the executor plans it in run. */
    int (*resize)(void *x);
    /* Before the next run after the failed run ri: which nodes restart
     * (every ranked node when a ranked one failed: ranks form one group).
     * NULL: the executor plans it in run. */
    int (*restart)(void *x, const struct ckh_run_info *ri);
    /* The execution's trace hash (the determinism oracle compares two). */
    uint64_t (*trace_hash)(void *x);
    /* Node i's name. */
    const char *(*node_name)(void *x, int i);
};

/* ---- executors ---- */

/* One way of running a scenario's job: what the verdict's driver
 * (judge/scenario_run.c, ckh_harness_run) and ckh_harness_replay ask of
 * it. Each executor's job-wide state (a run folder, ...) is its own `job`.
 * The executors, in the order ckh_exec_select asks them, are listed in
 * exec/exec_list.h. */
struct ckh_executor {
    const char *name;         /* "command", "real", "simulator" */
    const char *replay_flags; /* what `ckh run` needs to choose it again ("" or " --platform real") */
    bool traced;              /* its executions hash what they did (the determinism check applies) */
    /* Whether it runs sc (o: the run options, --platform real). */
    bool (*selects)(const struct ckh_scenario *sc, const struct ckh_run_options *o);
    /* What it refuses in sc, decided before any run: CKH_EINVAL with a
     * located message in err, else 0. */
    int (*check)(const struct ckh_scenario *sc, char *err, size_t errlen);
    /* Job-wide set-up (*job for the other calls) and its undoing on
     * every path (NULL job: nothing to undo). */
    int (*begin)(const struct ckh_scenario *sc, void **job, char *err, size_t errlen);
    void (*end)(void *job);
    /* The fault-free reference run into r->ref and r->ref_ok; a job that
     * cannot give one is CKH_EINVAL with err. *judged: the reference run
     * is itself what the oracles judge (r holds its runs; no faulted job
     * follows). */
    int (*reference)(void *job, const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                     struct ckh_scenario_run *r, bool *judged, char *err, size_t errlen);
    /* The faulted job with its restarts into r (runs, job result,
     * interval, trace hash; second: the determinism check's second
     * execution, whose trace hash alone counts). 0 or a code with err. */
    int (*faulted)(void *job, const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                   bool second, struct ckh_scenario_run *r, struct ckh_report_result *out, char *err,
                   size_t errlen);
    /* `ckh replay`: the faulted job once, its trace printed to f, node and
     * op filtering by name (NULL: all). NULL: the executor has none. */
    int (*replay)(const struct ckh_scenario *sc, const struct ckh_run_options *o, const char *node_filter,
                  const char *op_filter, void *f, char *msg, size_t msglen);
};

/* The executors, in the order ckh_exec_select asks them. */
#define CKH_EXECUTOR(name) extern const struct ckh_executor ckh_executor_##name;
#include "exec/exec_list.h"
#undef CKH_EXECUTOR

/* The executor that runs sc (never NULL: the simulator runs what no
 * other selects). */
const struct ckh_executor *ckh_exec_select(const struct ckh_scenario *sc, const struct ckh_run_options *o);

/* The refusals of sc, decided once before any run whatever the executor:
 * the executor's own (ex->check), then what no executor can judge.
 * CKH_EINVAL with a located message in err, else 0. */
int ckh_exec_check(const struct ckh_executor *ex, const struct ckh_scenario *sc, char *err, size_t errlen);

/* ---- disks: one builder for every executor (exec/driver.c) ---- */

struct ckh_simfs;
struct ckh_simfs_config;

/* Makes one simfs disk from dc for disk entry d of node `node` (-1: a
 * shared disk): the simulator adds it to its simulation, the others
 * create it and give it a mount. 0 or a code with the caller's message. */
typedef int (*ckh__exec_disk_fn)(void *ctx, const struct ckh_simfs_config *dc, size_t d, int node,
                                 struct ckh_simfs **out);

/* The disks of sc's job for n nodes named names[i]: disks[d * n + i] is
 * disk entry d of node i (a shared disk: the same for every node, made
 * once). Every executor's disk has the same parameters (model, sector,
 * capacity, latency, bandwidth) and the same name ("NAME" shared,
 * "NAME.NODE" node-local) and seed (ckh_seed_derive(seed, "disk/NAME")).
 * 0 or make's code. */
int ckh__exec_build_disks(const struct ckh_scenario *sc, int n, const char *const *names, uint64_t seed,
                          ckh__exec_disk_fn make, void *ctx, struct ckh_simfs **disks);

/* ---- run records (exec/results.c) ---- */

/* The run records of a job that runs at most 1 + restart.max_restarts
 * times (once without faults), and with faults the per-fault counters;
 * CKH_ENOMEM. Shared by the simulated and the command-job runners. */
int ckh__run_alloc_runs(struct ckh_scenario_run *out, const struct ckh_scenario *sc, bool with_faults);
/* The record of the next run (out->nruns + 1, resumed as restart.resume_epoch
 * says after run 1) with room for nnodes node ends; NULL when out of
 * memory. Within the runs ckh__run_alloc_runs made room for. */
struct ckh_run_info *ckh__run_next(struct ckh_scenario_run *out, const struct ckh_scenario *sc, size_t nnodes);
/* Records one view's verdict of the checks after a crash (`verify`, or the
 * workload's own) in ri: committed_ok becomes ok, and committed_detail
 * the detail as it is for a shared disk's one view, prefixed with the
 * node's name ("rank_1's disks: ...") for node-local views (kept from the
 * first view, or from the one that failed). */
void ckh__run_note_committed(struct ckh_run_info *ri, bool shared, const char *node, int view, bool ok,
                             const char *detail);
/* Whether every disk of sc's job is shared (then one view sees them all). */
bool ckh__run_all_shared(const struct ckh_scenario *sc);
/* Runs the job of x with its restarts, runs out->nruns + 1 onwards (a
 * caller that recorded run 1 elsewhere, the explorer's restart check,
 * starts at run 2): at most 1 + restart.max_restarts runs with faults, one
 * without. Fills out's runs, completed, resized and trace_hash; run
 * records are allocated here when out has none. Returns 0, or the first
 * code an executor returned (its message is the executor's). */
int ckh__exec_runs(const struct ckh_exec_ops *ops, void *x, const struct ckh_exec_job *job,
                   struct ckh_scenario_run *out);

/* Checks the committed state after the failed run ri: each view's
 * verdict into ri (ckh__run_note_committed), stopping at the first view
 * that fails. 0 or the executor's code. */
int ckh__exec_check_committed(const struct ckh_exec_ops *ops, void *x, const struct ckh_exec_job *job,
                              struct ckh_run_info *ri);

/* Which nodes start the run after the failed run ri, the one rule of
 * every executor: a node that did not complete restarts; when a ranked
 * node failed, every ranked node restarts (ranks form one group, as a
 * job launcher restarts all workers), unless group is false (a command
 * job's restart.scope: failed); a parked node never does. rank[i] < 0:
 * node i has no rank; parked may be NULL (none). start[i] is set for
 * every node. */
void ckh__exec_plan_restart(const struct ckh_run_info *ri, int n, const int *rank, const bool *parked, bool group,
                            bool *start);

#endif
