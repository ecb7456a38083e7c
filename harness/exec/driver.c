/* The driver of every executor (exec/exec.h): a job's runs with their
 * restarts, the world-size change and the committed-state checks, the
 * same for the simulator, command jobs and the real platform.
 *
 * The loop, for run = 1 .. 1 + restart.max_restarts (one run without
 * faults):
 *   1. plan: after run 1 of a job whose world changes, the executor's
 *      resize; after any other failed run, its restart plan
 *      (ckh__exec_plan_restart's rule);
 *   2. the record store opens the run; the executor runs it;
 *   3. a completed run ends the job;
 *   4. a failed run is followed by the committed-state check (after a
 *      crash, or after any failure for a command job's verify program);
 *   5. the budget spent ends the job unfinished.
 */
#include "exec/exec.h"

#include <stdio.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/rng.h"
#include "ckh/simfs.h"

int ckh__exec_check_committed(const struct ckh_exec_ops *ops, void *x, const struct ckh_exec_job *job,
                              struct ckh_run_info *ri)
{
    CKH_ASSERT(ops->verify_view && job->n >= 1);
    bool shared = ckh__run_all_shared(job->sc);
    ri->committed_ok = true;
    for (int v = 0; v < (shared ? 1 : job->n) && ri->committed_ok; v++) {
        char detail[sizeof ri->committed_detail] = "";
        bool ok = false;
        int rc = ops->verify_view(x, v, &ok, detail, sizeof detail);
        if (rc == CKH__EXEC_NO_VIEW)
            continue; /* nothing to look at for this view */
        if (rc)
            return rc;
        ckh__run_note_committed(ri, shared, ops->node_name(x, v), v, ok, detail);
    }
    return 0;
}

/* Node end ne completed its part of the job. */
static bool node_done(const struct ckh_node_end *ne)
{
    return ne->state == CKH_NODE_EXITED && ne->exit_status == 0;
}

void ckh__exec_plan_restart(const struct ckh_run_info *ri, int n, const int *rank, const bool *parked, bool group,
                            bool *start)
{
    CKH_ASSERT(ri && rank && start && n >= 0 && (size_t)n <= ri->nnodes);
    bool group_failed = false;
    for (int i = 0; i < n; i++)
        if (!(parked && parked[i]) && rank[i] >= 0 && !node_done(&ri->nodes[i]))
            group_failed = true;
    for (int i = 0; i < n; i++)
        start[i] = !(parked && parked[i]) && ri->nodes[i].state != CKH_NODE_PARKED &&
                   (!node_done(&ri->nodes[i]) || (group && group_failed && rank[i] >= 0));
}

/* Steps 1 and 2 of the loop: the plan, then the run. */
static int one_run(const struct ckh_exec_ops *ops, void *x, const struct ckh_exec_job *job, uint32_t run,
                   struct ckh_scenario_run *out, struct ckh_run_info **rio)
{
    const struct ckh_run_info *prev = run > 1 ? &out->runs[run - 2] : NULL;
    CKH_ASSERT(out->nruns == run - 1 && (!prev || prev->run == (int)run - 1));
    int rc;
    if (prev && run == 2 && job->world_restart != job->world_first) {
        if (ops->resize && (rc = ops->resize(x)) != 0)
            return rc;
        out->resized = true;
    } else if (prev && ops->restart && (rc = ops->restart(x, prev)) != 0) {
        return rc;
    }
    /* out->runs has room for every run (ckh__run_alloc_runs): prev stays put */
    struct ckh_run_info *ri = ckh__run_next(out, job->sc, (size_t)job->n);
    if (!ri)
        return CKH_ENOMEM;
    CKH_ASSERT(ri->run == (int)run);
    ckh_records_begin_run(job->records, (int)run);
    if ((rc = ops->run(x, ri, prev, out)) != 0)
        return rc;
    *rio = ri;
    return 0;
}

int ckh__exec_runs(const struct ckh_exec_ops *ops, void *x, const struct ckh_exec_job *job,
                   struct ckh_scenario_run *out)
{
    CKH_ASSERT(ops && ops->run && ops->trace_hash && job && job->sc && job->records);
    CKH_ASSERT(job->n >= 1 && job->n <= CKH_RUNNER_MAX_NODES);
    CKH_ASSERT(job->world_first >= 0 && job->world_first <= job->n && job->world_restart <= job->n);
    const struct ckh_scenario *sc = job->sc;
    const bool with_faults = !(job->mode & CKH_RUN_NO_FAULTS);
    const uint32_t max_runs = with_faults ? 1 + sc->restart.max_restarts : 1;
    if (!out->runs) {
        if (ckh__run_alloc_runs(out, sc, with_faults) != 0)
            return CKH_ENOMEM;
        out->world = job->world_first;
        out->world_restart = job->world_restart;
    }
    for (uint32_t run = (uint32_t)out->nruns + 1; run <= max_runs; run++) {
        struct ckh_run_info *ri = NULL;
        int rc = one_run(ops, x, job, run, out, &ri);
        if (rc)
            return rc;
        CKH_ASSERT(out->nruns == run && ri == &out->runs[run - 1]);
        if (ri->completed) {
            out->completed = true;
            break;
        }
        if (job->verify && ops->verify_view && (ri->crashed || job->verify_any_failure) &&
            (rc = ckh__exec_check_committed(ops, x, job, ri)) != 0)
            return rc;
    }
    CKH_ASSERT(out->nruns >= 1 && out->nruns <= max_runs && out->nruns <= out->runs_cap);
    CKH_ASSERT(!out->completed || out->runs[out->nruns - 1].completed);
    out->trace_hash = ops->trace_hash(x);
    return 0;
}

/* ---- choosing the executor ---- */

static const struct ckh_executor *const executors[] = {
#define CKH_EXECUTOR(name) &ckh_executor_##name,
#include "exec/exec_list.h"
#undef CKH_EXECUTOR
};

const struct ckh_executor *ckh_exec_select(const struct ckh_scenario *sc, const struct ckh_run_options *o)
{
    static const struct ckh_run_options none = {0};
    const struct ckh_run_options *opts = o ? o : &none;
    for (size_t i = 0; i < sizeof executors / sizeof executors[0]; i++)
        if (executors[i]->selects(sc, opts))
            return executors[i];
    CKH_ASSERT(!"the simulator runs every scenario");
    return NULL;
}

int ckh_exec_check(const struct ckh_executor *ex, const struct ckh_scenario *sc, char *err, size_t errlen)
{
    CKH_ASSERT(ex && sc);
    return ex->check ? ex->check(sc, err, errlen) : 0;
}

int ckh_harness_replay(const struct ckh_scenario *sc, const struct ckh_run_options *opts, const char *node_filter,
                       const char *op_filter, void *f, char *msg, size_t msglen)
{
    const struct ckh_executor *ex = ckh_exec_select(sc, opts);
    int rc = ckh_exec_check(ex, sc, msg, msglen);
    if (rc != 0)
        return rc;
    if (!ex->replay)
        return ckh_errf(msg, msglen, CKH_EINVAL, "ckh replay runs simulated and command jobs; the %s executor "
                        "keeps no trace to print", ex->name);
    return ex->replay(sc, opts, node_filter, op_filter, f, msg, msglen);
}

/* ---- disks ---- */

int ckh__exec_build_disks(const struct ckh_scenario *sc, int n, const char *const *names, uint64_t seed,
                          ckh__exec_disk_fn make, void *ctx, struct ckh_simfs **disks)
{
    CKH_ASSERT(sc && names && make && disks && n >= 1 && sc->job.ndisks >= 1);
    const size_t nn = (size_t)n;
    for (size_t d = 0; d < sc->job.ndisks; d++) {
        const struct ckh_scn_disk *sd = &sc->job.disks[d];
        for (size_t i = 0; i < nn; i++) {
            if (sd->shared && i > 0) {
                disks[d * nn + i] = disks[d * nn];
                continue;
            }
            char name[160], seed_name[200];
            snprintf(name, sizeof name, sd->shared ? "%s" : "%s.%s", sd->name, names[i]);
            snprintf(seed_name, sizeof seed_name, "disk/%s", name);
            struct ckh_simfs_config dc = {
                .name = name,
                .model = sd->model,
                .sharing = sd->sharing,
                .sector_bytes = sd->sector_bytes,
                .capacity_bytes = sd->capacity_bytes,
                .latency_ns = sd->latency_ns,
                .ns_per_kib = sd->ns_per_kib,
                .seed = ckh_seed_derive(seed, seed_name),
            };
            int rc = make(ctx, &dc, d, sd->shared ? -1 : (int)i, &disks[d * nn + i]);
            if (rc)
                return rc;
            CKH_ASSERT(disks[d * nn + i]);
        }
    }
    return 0;
}
