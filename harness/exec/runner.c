/* The runner: reference run, faulted run with restarts, oracles, verdict.
 *
 * Map:
 *   1. simulation set-up   ckh__run_build_sim(): disks (shared or one per
 *                          node), nodes from the workload adapter, the
 *                          checkpoint directory created and synced first;
 *   2. fault script        arm.c: scenario faults for run N become simulator
 *                          fault rules (each fault's descriptor in
 *                          harness/model/faults/ says how); at-rest faults without
 *                          a trigger change the disks before the run, with
 *                          a trigger they run as CALL actions;
 *   3. runs                ckh__run_execute(): run, record how each node ended,
 *                          look at the disks after a crash, restart the
 *                          nodes that did not finish, until the job
 *                          completes or the restart budget is spent;
 *   4. reference           cache.c: the same job with no faults and no
 *                          defect switches, cached per job description;
 *   5. verdict             judge.c: every applicable oracle, in order.
 * This file holds 1 and 3; run/scenario_run.c the public entry points
 * that tie 1 to 5 together, run/run_ctx.c the context's helpers
 * (run/run_ctx.h maps the others).
 *
 * Determinism: everything derives from the scenario seed (or --seed); the
 * simulator's trace hash of the faulted job is the run's fingerprint.
 *
 * World size on restart (restart.world_size W', the job's own world W):
 *   - only workloads whose adapter has set_world support it; for the
 *     others the setting is an input error naming restart.world_size;
 *   - W' == W changes nothing; otherwise the faulted job is built with
 *     max(W, W') nodes, and those the adapter gives rank -1 (the ranks
 *     beyond W) are parked (ckh_sim_park) before run 1;
 *   - before run 2 (the first restart) the runner calls set_world(W'),
 *     takes every node's rank from the adapter again and gives it to the
 *     simulator (ckh_sim_set_rank): ranks 0..W'-1 all restart (a resized
 *     group restarts whole, even a rank that had finished), the others
 *     are parked; later restarts keep W';
 *   - parked nodes count neither as crashed nor as unfinished;
 *   - the reference run is the job as written, at W (cache key unchanged);
 *     the record says world, world_restart and resized, and the oracles
 *     that compare with the reference step by step or node by node
 *     (resume-equivalence, reference, no-corrupt-load) do not apply to a
 *     resizing scenario (ckh_oracle_resizes); "reshard" judges the
 *     epochs instead. docs/SCENARIOS.md (restart) says the same for users.
 */
#include "exec/runner.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "exec/exec.h"
#include "exec/run_ctx.h"

#define RUN_TIME_LIMIT_NS (48ull * 3600 * 1000000000ull) /* a run hangs past 48 virtual hours */
#define RUN_OP_LIMIT 20000000ull                           /* or past 20 M operations */
#define COLL_LATENCY_NS 20000ull

int ckh__run_make_dir_fn(struct ckh_fault_env *env, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    (void)arg;
    int rc = ckh_fs_mkdirs(ckh_simfs_fs(d), dpath);
    if (rc)
        return ckh_errf(env->err, env->errlen, rc, "cannot create %s: %s", dpath, ckh_strerror(rc));
    ckh_simfs_sync_all(d);
    return 0;
}

/* ---- set-up ---- */

/* restart.world_size is an input error for a workload that cannot
 * change its world size. */
static int check_world_size(const struct ckh_scenario *sc, const struct ckh_workload_ops *wl, char *err,
                            size_t errlen)
{
    if (!sc->restart.world_size || wl->set_world)
        return 0;
    snprintf(err, errlen,
             "%d:%d: restart.world_size: workload '%s' cannot restart with another world size "
             "(its nodes are fixed); remove restart.world_size",
             sc->restart.world_size_line, sc->restart.world_size_column, wl->name);
    return CKH_EINVAL;
}

/* What the job asks of the workload that it cannot do: refused, never
 * ignored (a scenario must not pass while claiming what it did not do).
 * What each fault needs is in its descriptor (harness/model/faults/). */
int ckh__run_check_support(struct ckh__run_ctx *c)
{
    const struct ckh_scenario *sc = c->sc;
    const struct ckh_workload_ops *wl = c->wl;
    const char *no = NULL;
    if (sc->job.ndefects && !(wl->flags & CKH_WL_DEFECTS))
        no = "job.defects (defect switches exist only in workloads built for them, such as ddp-train)";
    else if (sc->job.gpu_mem_bytes && !(wl->flags & CKH_WL_DEVICES))
        no = "job.gpu_memory (the job has no emulated devices)";
    for (size_t i = 0; !no && i < sc->nfaults; i++) {
        const struct ckh_fault_ops *ops = ckh_fault_of(sc->faults[i].act.kind);
        if ((ops->needs & CKH_FAULT_NEEDS_DEVICES) && !(wl->flags & CKH_WL_DEVICES))
            no = "the gpu-oom fault (the job has no emulated devices)";
        else if ((ops->needs & CKH_FAULT_NEEDS_LATEST) && !wl->latest_link)
            no = "latest-pointer faults (the job keeps no latest pointer)";
        else if ((ops->needs & CKH_FAULT_NEEDS_COLLECTIVES) && !(wl->flags & CKH_WL_COLLECTIVE))
            no = "collective faults (the job's nodes use no collectives)";
    }
    if (no)
        return ckh__run_fail(c, CKH_EINVAL, "%s: workload '%s' does not support %s", sc->file, wl->name, no);
    return check_world_size(sc, wl, c->err, sizeof c->err);
}

/* Every node's program: hands the node its record table, then runs the
 * workload's program for it. */
static int node_trampoline(struct ckh_env *env, void *arg)
{
    struct ckh__run_node *rn = arg;
    struct ckh__run_ctx *c = rn->rc;
    env->record = ckh_records_table(c->records, (size_t)rn->index);
    return c->wl->node_main(env, c->inst, rn->index);
}

/* Whether a save failing now has a fault to blame: an at-rest fault
 * changed the disks before this run, or a rule fired in it. */
static bool fault_fired(void *ctx)
{
    struct ckh__run_ctx *c = ctx;
    if (c->at_rest_applied)
        return true;
    for (size_t k = 0; k < c->nrules; k++)
        if (ckh_sim_fault_fired(c->sim, k) > 0)
            return true;
    return false;
}

/* The job's disks: one per disk, or one per disk and node when not shared. */
static int add_disk(void *ctx, const struct ckh_simfs_config *dc, size_t d, int node, struct ckh_simfs **out)
{
    (void)d;
    (void)node;
    struct ckh__run_ctx *c = ctx;
    int rc = ckh_sim_add_disk(c->sim, dc, out);
    return rc ? ckh__run_fail(c, rc, "disk %s: %s", dc->name, ckh_sim_errmsg(c->sim)) : 0;
}

static int add_disks(struct ckh__run_ctx *c, uint64_t seed)
{
    const char *names[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++)
        names[i] = c->names[i];
    return ckh__exec_build_disks(c->sc, c->n, names, seed, add_disk, c, c->disks);
}

/* The job's nodes, each with its view of the disks. */
static int add_nodes(struct ckh__run_ctx *c, const int *ranks)
{
    size_t nd = c->sc->job.ndisks;
    int rc;
    for (int i = 0; i < c->n; i++) {
        struct ckh_simfs_mount *m = &c->mounts[(size_t)i * nd];
        for (size_t d = 0; d < nd; d++) {
            m[d].prefix = c->sc->job.disks[d].mount;
            m[d].disk = c->disks[d * (size_t)c->n + (size_t)i];
        }
        struct ckh_node_config nc = {
            .name = c->names[i],
            .main = node_trampoline,
            .arg = &c->nodes[i],
            .mounts = m,
            .nmounts = nd,
            .rank = ranks[i],
        };
        int id;
        if ((rc = ckh_sim_add_node(c->sim, &nc, &id)) != 0)
            return ckh__run_fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    }
    return 0;
}

int ckh__run_create_workload(struct ckh__run_ctx *c, const struct ckh_scenario *sc, uint64_t seed, unsigned mode)
{
    c->opts = calloc(sc->job.noptions ? sc->job.noptions : 1, sizeof *c->opts);
    if (!c->opts)
        return ckh__run_fail(c, CKH_ENOMEM, "out of memory");
    ckh_workloads_job(sc, &c->res, seed, mode, &c->job, c->opts);
    int rc = c->wl->create(&c->job, &c->inst, c->err, sizeof c->err);
    if (rc) {
        ckh_workloads_locate(sc, c->err, sizeof c->err); /* "7:11: job.epochs: ..." */
        return rc;
    }
    c->step_based = (c->wl->flags & CKH_WL_STEP_BASED) != 0;
    c->n = c->wl->node_count(c->inst);
    if (c->n < 1 || c->n > CKH_RUNNER_MAX_NODES) {
        ckh__run_fail(c, CKH_EINVAL, "job.nodes: workload '%s' has %d nodes for %u given; a job has 1 to %d",
                      c->wl->name, c->n, sc->job.nodes, CKH_RUNNER_MAX_NODES);
        ckh_workloads_locate(sc, c->err, sizeof c->err);
        return CKH_EINVAL;
    }
    return 0;
}

/* The simulator for sc: the adapter's nodes, the disks, the checkpoint
 * directory created and synced before the job (see run_ctx.h). */
int ckh__run_build_sim(struct ckh__run_ctx *c, const struct ckh_scenario *sc, uint64_t seed, unsigned mode,
                     bool keep_trace)
{
    int rc;
    memset(c, 0, sizeof *c);
    c->sc = sc;
    c->mode = mode;
    if ((rc = ckh_workloads_resolve(sc, &c->res, c->err, sizeof c->err)) != 0)
        return rc;
    c->wl = c->res.workload;
    if ((rc = ckh__run_check_support(c)) != 0)
        return rc;
    if ((rc = ckh__run_create_workload(c, sc, seed, mode)) != 0)
        return rc;
    unsigned rflags = ((c->wl->flags & CKH_WL_COLLECTIVE) ? CKH_RECORDS_COLLECTIVE : 0) |
                      (c->step_based ? CKH_RECORDS_STEP_BASED : 0);
    if ((rc = ckh_records_create((size_t)c->n, rflags, &c->records)) != 0)
        return ckh__run_fail(c, rc, "out of memory");
    ckh_records_set_fault_probe(c->records, fault_fired, c);
    size_t nd = sc->job.ndisks;
    c->names = calloc((size_t)c->n, sizeof *c->names);
    c->disks = calloc(nd * (size_t)c->n, sizeof *c->disks);
    c->mounts = calloc(nd * (size_t)c->n, sizeof *c->mounts);
    c->track = calloc((size_t)c->n, sizeof *c->track);
    c->nodes = calloc((size_t)c->n, sizeof *c->nodes);
    c->calls = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *c->calls);
    c->rule_fault = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *c->rule_fault);
    if (!c->names || !c->disks || !c->mounts || !c->track || !c->calls || !c->rule_fault || !c->nodes)
        return ckh__run_fail(c, CKH_ENOMEM, "out of memory");

    struct ckh_sim_config cfg = {
        .seed = seed,
        .time_limit_ns = RUN_TIME_LIMIT_NS,
        .op_limit = RUN_OP_LIMIT,
        .keep_trace = keep_trace,
        .coll_latency_ns = COLL_LATENCY_NS,
    };
    if ((rc = ckh_sim_create(&cfg, &c->sim)) != 0)
        return ckh__run_fail(c, rc, "cannot create the simulator: %s", ckh_strerror(rc));

    int ranks[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++) {
        c->nodes[i] = (struct ckh__run_node){.rc = c, .index = i};
        if ((rc = c->wl->node(c->inst, i, c->names[i], sizeof c->names[i], &ranks[i])) != 0)
            return ckh__run_fail(c, rc, "workload '%s': node %d: %s", c->wl->name, i, ckh_strerror(rc));
        if ((rc = ckh_node_name_check(c->names[i])) != 0)
            return ckh__run_fail(c, rc, "workload '%s': node %d has a bad name '%s'", c->wl->name, i, c->names[i]);
    }

    if ((rc = add_disks(c, seed)) != 0 || (rc = add_nodes(c, ranks)) != 0)
        return rc;
    /* A resizing job: nodes outside the first world wait, parked. */
    for (int i = 0; i < c->n; i++)
        if (ranks[i] >= 0)
            c->world_first++;
    c->world_restart = c->world_first;
    if (!(mode & CKH_RUN_NO_FAULTS) && c->wl->set_world && sc->restart.world_size) {
        c->world_restart = (int)sc->restart.world_size;
        for (int i = 0; i < c->n && c->world_restart != c->world_first; i++)
            if (ranks[i] < 0 && (rc = ckh_sim_park(c->sim, i)) != 0)
                return ckh__run_fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    }
    /* The job's directories exist (and are durable) before it starts. */
    c->env = (struct ckh_fault_env){.sc = sc, .nnodes = c->n, .disks = c->disks,
                                    .latest_link = c->wl->latest_link, .inst = c->inst,
                                    .err = c->err, .errlen = sizeof c->err};
    if ((rc = ckh_fault_for_each_disk(&c->env, -1, sc->job.checkpoint_dir, ckh__run_make_dir_fn, NULL)) != 0)
        return rc;
    ckh_sim_set_fault_hook(c->sim, ckh__run_track_hook, c);
    return 0;
}

/* ---- execution ---- */

static bool rc_is_collective_failure(int rc)
{
    return rc == CKH_ETIMEOUT || rc == CKH_EPEER_DEAD || rc == CKH_EMISMATCH;
}

/* Between run 1 and run 2 of a resizing job: the adapter switches to the
 * new world, every node takes its new rank (all ranks first leave the
 * group, so no two nodes ever hold one rank), the ranked nodes restart and
 * the others are parked. */
static int resize(struct ckh__run_ctx *c)
{
    int rc;
    char msg[256] = "";
    if ((rc = c->wl->set_world(c->inst, c->world_restart, msg, sizeof msg)) != 0)
        return ckh__run_fail(c, rc, "%s", msg[0] ? msg : "restart.world_size: the workload refused it");
    for (int i = 0; i < c->n; i++)
        if ((rc = ckh_sim_set_rank(c->sim, i, -1)) != 0)
            return ckh__run_fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    int world = 0;
    for (int i = 0; i < c->n; i++) {
        char name[CKH_NODE_NAME_LEN];
        int rank = -1;
        if ((rc = c->wl->node(c->inst, i, name, sizeof name, &rank)) != 0)
            return ckh__run_fail(c, rc, "workload '%s': node %d: %s", c->wl->name, i, ckh_strerror(rc));
        if (rank >= 0) {
            world++;
            rc = ckh_sim_set_rank(c->sim, i, rank);
            if (rc == 0)
                rc = ckh_sim_restart(c->sim, i);
        } else {
            rc = ckh_sim_park(c->sim, i);
        }
        if (rc != 0)
            return ckh__run_fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    }
    if (world != c->world_restart)
        return ckh__run_fail(c, CKH_EINVAL, "restart.world_size: workload '%s' gave %d ranks for world size %d",
                    c->wl->name, world, c->world_restart);
    return 0;
}

/* How each node ended run ri; true when every node of the run's world
 * exited with status 0. A hung run is stopped by killing what still runs. */
static bool record_nodes(struct ckh__run_ctx *c, const struct ckh_sim_result *res, struct ckh_run_info *ri,
                         struct ckh_scenario_run *out)
{
    bool all_ok = res->outcome == CKH_SIM_DONE;
    for (int i = 0; i < c->n; i++) {
        struct ckh_node_status st;
        ckh_sim_node_status(c->sim, i, &st);
        struct ckh_node_end *ne = &ri->nodes[i];
        ne->state = st.state;
        ne->exit_status = st.exit_status;
        ne->progress = c->track[i].progress;
        ne->resume_known = c->track[i].resume_known;
        ne->resume_point = c->track[i].resume_point;
        snprintf(ne->phase, sizeof ne->phase, "%s", c->track[i].phase);
        if (st.pending)
            snprintf(ne->pending, sizeof ne->pending, "%s", st.pending);
        if (st.state == CKH_NODE_PARKED)
            continue; /* not part of this run's world */
        if (st.state == CKH_NODE_KILLED)
            ri->crashed = true;
        if (st.state != CKH_NODE_EXITED || st.exit_status != 0)
            all_ok = false;
        if (st.state == CKH_NODE_EXITED && rc_is_collective_failure(st.exit_status))
            out->timeout_seen = true;
    }
    /* A hung run is stopped by killing what still runs. */
    for (int i = 0; i < c->n; i++)
        if (ri->nodes[i].state == CKH_NODE_RUNNING || ri->nodes[i].state == CKH_NODE_READY)
            ckh_sim_kill(c->sim, i, false);

    return all_ok;
}

/* The records after run ri, into ri and out. */
static int collect_results(struct ckh__run_ctx *c, struct ckh_run_info *ri, struct ckh_scenario_run *out)
{
    int rc;
    struct ckh_job_result jr;
    const char *names[CKH_RUNNER_MAX_NODES];
    int rcs[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++) {
        names[i] = c->names[i];
        rcs[i] = ri->nodes[i].state == CKH_NODE_EXITED ? ri->nodes[i].exit_status : 0;
    }
    if ((rc = ckh_records_collect(c->records, names, rcs, &jr)) != 0)
        return ckh__run_fail(c, rc, "collecting results: %s", ckh_strerror(rc));
    for (int i = 0; i < c->n && (size_t)i < jr.nnodes; i++) {
        ri->nodes[i].resumed_from = jr.nodes[i].resumed_from;
        ri->nodes[i].rc = jr.nodes[i].rc;
        if (rc_is_collective_failure(jr.nodes[i].rc))
            out->timeout_seen = true;
    }
    if (jr.corruption_detected)
        out->corruption_seen = true;
    if (jr.device_oom)
        out->oom_seen = true;
    out->saves_failed = 0;
    for (size_t i = 0; i < jr.nnodes; i++)
        out->saves_failed += jr.nodes[i].saves_failed;
    if ((rc = ckh__run_job_copy(&out->got, &jr)) != 0)
        return ckh__run_fail(c, rc, "out of memory");
    return 0;
}

/* After a crash: what a restarted node would see must resolve to a
 * committed checkpoint; view v of the simfs disks (node v's, or the one
 * view of shared disks), judged by the workload's verify. Shared with the
 * real platform's simfs disks (exec/mpi_disk.c). */
int ckh__run_verify_simfs_view(struct ckh__run_ctx *c, int v, bool *ok, char *detail, size_t n)
{
    const size_t nd = c->sc->job.ndisks;
    bool shared = ckh__run_all_shared(c->sc);
    CKH_ASSERT(nd >= 1 && v >= 0 && v < c->n);
    struct ckh_simfs_mount *m = calloc(nd, sizeof *m);
    if (!m)
        return ckh__run_fail(c, CKH_ENOMEM, "out of memory");
    for (size_t d = 0; d < nd; d++) /* the node's view: its disk of every job.disks entry */
        m[d] = (struct ckh_simfs_mount){.prefix = c->sc->job.disks[d].mount,
                                        .disk = c->disks[d * (size_t)c->n + (size_t)v]};
    struct ckh_fs *view = NULL;
    int rc = ckh_simfs_view_create(NULL, -1, m, nd, &view);
    free(m);
    if (rc != 0)
        return CKH__EXEC_NO_VIEW;
    rc = c->wl->verify(c->inst, view, shared ? -1 : v, detail, n);
    ckh_simfs_view_destroy(view);
    /* The check's memory is ckh's own (the view has no node): running out
     * of it says nothing about what the job committed. */
    if (rc == CKH_ENOMEM)
        return ckh__run_fail(c, rc, "checking what the job committed: %s (%s)",
                             detail[0] ? detail : ckh_strerror(rc), ckh_err_name(rc));
    *ok = rc == 0;
    return 0;
}

/* ---- the executor's operations (exec/exec.h) ---- */

static int sim_run(void *x, struct ckh_run_info *ri, const struct ckh_run_info *prev, struct ckh_scenario_run *out)
{
    (void)prev; /* the simulator's nodes keep their state between runs */
    struct ckh__run_ctx *c = x;
    const bool with_faults = !(c->mode & CKH_RUN_NO_FAULTS);
    int rc;
    if (with_faults)
        c->rec = out;
    c->at_rest_applied = false;
    if (c->wl->before_run)
        c->wl->before_run(c->inst, ri->run, ri->resume_epoch);
    if (with_faults && (rc = ckh__run_arm_faults(c, ri->run)) != 0)
        return rc;
    for (int i = 0; i < c->n; i++) {
        memset(&c->track[i], 0, sizeof c->track[i]);
        c->track[i].progress = -1;
    }
    struct ckh_sim_result res;
    if ((rc = ckh_sim_run(c->sim, &res)) != 0)
        return ckh__run_fail(c, rc, "simulator: %s", ckh_sim_errmsg(c->sim));
    ri->outcome = res.outcome;
    for (size_t k = 0; with_faults && c->rec && k < c->nrules; k++)
        if (c->rule_fault[k] != SIZE_MAX)
            c->rec->fault_fired[c->rule_fault[k]] += ckh_sim_fault_fired(c->sim, k);
    ri->trace_end = ckh_sim_trace_len(c->sim);
    snprintf(ri->report, sizeof ri->report, "%s", res.report);
    out->virtual_ns = res.now_ns;
    if (res.outcome == CKH_SIM_DEADLOCK)
        out->deadlock_seen = true;
    if (res.outcome == CKH_SIM_TIME_LIMIT || res.outcome == CKH_SIM_OP_LIMIT)
        out->hang_seen = true;
    bool all_ok = record_nodes(c, &res, ri, out);
    if ((rc = collect_results(c, ri, out)) != 0)
        return rc;
    ri->completed = all_ok;
    return 0;
}

static int sim_verify_view(void *x, int v, bool *ok, char *detail, size_t n)
{
    return ckh__run_verify_simfs_view(x, v, ok, detail, n);
}

static int sim_resize(void *x)
{
    return resize(x);
}

/* Restarts the nodes the plan names (ckh__exec_plan_restart). */
static int sim_restart(void *x, const struct ckh_run_info *ri)
{
    struct ckh__run_ctx *c = x;
    int rank[CKH_RUNNER_MAX_NODES];
    bool start[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++) {
        struct ckh_node_status st;
        ckh_sim_node_status(c->sim, i, &st);
        rank[i] = st.rank;
    }
    ckh__exec_plan_restart(ri, c->n, rank, NULL, true, start);
    for (int i = 0; i < c->n; i++) {
        int rc = start[i] ? ckh_sim_restart(c->sim, i) : 0;
        if (rc != 0)
            return ckh__run_fail(c, rc, "restart of %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    }
    return 0;
}

static uint64_t sim_trace_hash(void *x)
{
    return ckh_sim_trace_hash(((struct ckh__run_ctx *)x)->sim);
}

static const char *sim_node_name(void *x, int i)
{
    return ((struct ckh__run_ctx *)x)->names[i];
}

const struct ckh_exec_ops ckh__exec_sim = {
    .name = "simulator",
    .run = sim_run,
    .verify_view = sim_verify_view,
    .resize = sim_resize,
    .restart = sim_restart,
    .trace_hash = sim_trace_hash,
    .node_name = sim_node_name,
};

/* The driver's view of c's job. */
void ckh__run_exec_job(const struct ckh__run_ctx *c, struct ckh_exec_job *job)
{
    *job = (struct ckh_exec_job){.sc = c->sc, .mode = c->mode, .n = c->n, .world_first = c->world_first,
                                 .world_restart = c->world_restart, .records = c->records,
                                 .verify = c->wl->verify != NULL};
}

/* Runs the job with restarts; fills the run records of out. */
int ckh__run_execute(struct ckh__run_ctx *c, struct ckh_scenario_run *out)
{
    struct ckh_exec_job job;
    ckh__run_exec_job(c, &job);
    int rc = ckh__exec_runs(&ckh__exec_sim, c, &job, out);
    /* Whatever the runs gave, ckh's own memory running out under a node or
     * a disk makes them no run of the scenario: what failed was ckh. */
    if (ckh_sim_host_out_of_memory(c->sim))
        return ckh__run_fail(c, CKH_ENOMEM, "%s in the simulator: the runs cannot be judged (%s)",
                             ckh_strerror(CKH_ENOMEM), ckh_err_name(CKH_ENOMEM));
    if (rc == CKH_ENOMEM && !c->err[0])
        return ckh__run_fail(c, rc, "out of memory");
    return rc;
}

/* ---- the simulator as an executor (exec/exec.h) ---- */

static bool sim_selects(const struct ckh_scenario *sc, const struct ckh_run_options *o)
{
    (void)sc;
    (void)o;
    return true; /* what no other executor runs */
}

/* What the simulator cannot deliver (a fault whose descriptor's modes
 * leave it out: sigterm), refused with the one wording every mode uses. */
static int sim_check(const struct ckh_scenario *sc, char *err, size_t errlen)
{
    return ckh_fault_check_mode(sc, CKH_FAULT_MODE_SIM, err, errlen);
}

static int sim_faulted(void *job, const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                       bool second, struct ckh_scenario_run *r, struct ckh_report_result *out, char *err,
                       size_t errlen)
{
    (void)job;
    struct ckh__run_ctx c;
    bool watched = !second && (o->on_trace || o->timeline);
    int rc = ckh__run_build_sim(&c, sc, seed, 0, watched);
    if (rc == 0)
        rc = ckh__run_execute(&c, r);
    if (rc != 0) {
        if (second)
            ckh_errf(err, errlen, rc, "second execution: %s", ckh_strerror(rc));
        else
            snprintf(err, errlen, "%s", c.err);
        ckh__run_ctx_free(&c);
        return rc;
    }
    r->interval = c.wl->interval ? c.wl->interval(c.inst) : 1;
    if (!second && o->on_trace)
        o->on_trace(o->on_trace_ctx, c.sim, r);
    if (!second && o->timeline)
        ckh_timeline_build(c.sim, r, &out->timeline); /* exec/timeline.c */
    ckh__run_ctx_free(&c);
    return 0;
}

int ckh__run_sim_replay(const struct ckh_scenario *sc, const struct ckh_run_options *opts, const char *node_filter,
                        const char *op_filter, void *fp, char *msg, size_t msglen)
{
    FILE *f = fp;
    uint64_t seed = opts && opts->seed_set ? opts->seed : sc->seed;
    struct ckh__run_ctx c;
    struct ckh_scenario_run r;
    memset(&r, 0, sizeof r);
    r.sc = sc;
    int rc = ckh__run_build_sim(&c, sc, seed, 0, true);
    if (rc == 0)
        rc = ckh__run_execute(&c, &r);
    if (rc != 0) {
        snprintf(msg, msglen, "%s", c.err[0] ? c.err : ckh_strerror(rc));
        goto out;
    }
    int op = -1;
    if (op_filter && (op = ckh_op_from_name(op_filter)) < 0) {
        snprintf(msg, msglen, "unknown operation '%s'", op_filter);
        rc = CKH_EINVAL;
        goto out;
    }
    int node = -1;
    char *end = NULL;
    long idx = node_filter ? strtol(node_filter, &end, 10) : -1;
    if (node_filter && end && !*end && idx >= 0 && idx < c.n) /* a node index, as triggers allow */
        node = (int)idx;
    else if (node_filter && (node = ckh_sim_node_id(c.sim, node_filter)) < 0) {
        snprintf(msg, msglen, "unknown node '%s'", node_filter);
        rc = CKH_EINVAL;
        goto out;
    }
    uint64_t len = ckh_sim_trace_len(c.sim);
    size_t run = 0;
    if (r.nruns > 0)
        fprintf(f, "# run 1\n");
    for (uint64_t i = 0; i < len; i++) {
        struct ckh_trace_rec rec;
        if (ckh_sim_trace_get(c.sim, i, &rec) != 0)
            break;
        /* Runs are separated so a restart is visible at a glance. */
        while (run + 1 < r.nruns && i >= r.runs[run].trace_end) {
            run++;
            fprintf(f, "# run %zu (restart %zu)\n", run + 1, run);
        }
        if ((node >= 0 && rec.node != node) || (op >= 0 && (int)rec.kind != op))
            continue;
        char line[1024];
        ckh_trace_format(c.sim, &rec, line, sizeof line);
        fprintf(f, "%s\n", line);
    }
    fprintf(f, "# %zu run%s, trace hash %016" PRIx64 ", seed %" PRIu64 "\n", r.nruns,
            r.nruns == 1 ? "" : "s", ckh_sim_trace_hash(c.sim), seed);
out:
    ckh_scenario_run_free(&r);
    ckh__run_ctx_free(&c);
    return rc;
}

const struct ckh_executor ckh_executor_sim = {
    .name = "simulator",
    .replay_flags = "",
    .traced = true,
    .selects = sim_selects,
    .check = sim_check,
    .reference = ckh__run_sim_reference,
    .faulted = sim_faulted,
    .replay = ckh__run_sim_replay,
};
