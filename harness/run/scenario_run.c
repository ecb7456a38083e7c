/* The runner's public entry points (run/runner.h): one scenario from its
 * model to its verdict (ckh_harness_run: reference run, faulted runs,
 * determinism and control checks, oracles) and its replay
 * (ckh_harness_replay). The steps are in runner.c (set-up, runs), arm.c
 * (fault script), cache.c (reference run) and judge.c (verdict). A command
 * job (job.command: real programs as nodes) goes to run/command.h instead,
 * with the same record store, oracles and verdict; a simulated job refuses
 * the faults only real processes can take (sigterm). */
#include "run/runner.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "run/command.h"
#include "run/platform_real.h"
#include "run/run_ctx.h"
#include "search/fuzz.h"

/* Without faults and defects the job must complete: a scenario whose
 * reference fails judges nothing (bad input). */
static int reference_incomplete(const struct ckh_scenario_run *r, char *err, size_t errlen)
{
    const char *why = "";
    for (size_t i = 0; i < r->ref.r.nnodes && !why[0]; i++)
        if (r->ref.r.nodes[i].rc != 0)
            why = ckh_err_name(r->ref.r.nodes[i].rc);
    return ckh_errf(err, errlen, CKH_EINVAL, "the fault-free reference run of this job does not complete%s%s",
                    why[0] ? ": " : "", why);
}

/* --check-determinism: the faulted job once more; its trace hash goes to
 * r->trace_hash2 (the determinism oracle compares). */
static int second_execution(const struct ckh_scenario *sc, uint64_t seed, struct ckh_scenario_run *r,
                            char *err, size_t errlen)
{
    struct ckh__run_ctx c2;
    struct ckh_scenario_run r2;
    int rc;
    memset(&r2, 0, sizeof r2);
    r2.sc = sc;
    if ((rc = ckh__run_build_sim(&c2, sc, seed, 0, false)) == 0 && (rc = ckh__run_execute(&c2, &r2)) == 0)
        r->trace_hash2 = r2.trace_hash ? r2.trace_hash : 1;
    ckh_scenario_run_free(&r2);
    ckh__run_ctx_free(&c2);
    if (rc != 0)
        ckh_errf(err, errlen, rc, "second execution: %s", ckh_strerror(rc));
    return rc;
}

int ckh_harness_run(const struct ckh_scenario *sc, const struct ckh_run_options *opts,
                   struct ckh_report_result *out)
{
    struct ckh_run_options dflt = {0};
    const struct ckh_run_options *o = opts ? opts : &dflt;
    uint64_t t0 = ckh_posix_now_ms();
    uint64_t seed = o->seed_set ? o->seed : sc->seed;
    struct ckh_scenario_run r;
    struct ckh__run_ctx c;
    char err[CKH_ERRMSG_BYTES] = "";
    int rc;
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    r.sc = sc;
    r.seed = seed;
    r.source_dir = o->source_dir ? o->source_dir : ".";
    /* A command job runs real programs (run/command.h). */
    if (ckh_scn_is_command_job(sc))
        return ckh__cmd_harness_run(sc, o, out);
    /* The real platform runs the nodes as processes (run/platform_real.h). */
    if (ckh__real_selected(sc, o->real_platform))
        return ckh__real_harness_run(sc, o, out);

    ckh_report_set(&out->name, "%s", sc->name);
    ckh_report_set(&out->file, "%s", sc->file);
    out->seed = seed;
    ckh_report_set(&out->replay, "%s run %s --seed %" PRIu64, o->argv0 ? o->argv0 : "ckh", sc->file, seed);

    if ((rc = ckh__cmd_refuse_sim_only(sc, err, sizeof err)) != 0 ||
        (rc = ckh__run_reference(sc, seed, o, &r, err, sizeof err)) != 0)
        goto out_error;
    if (!r.ref_ok) {
        rc = reference_incomplete(&r, err, sizeof err);
        goto out_error;
    }
    if (sc->expect.golden && (rc = ckh__run_find_golden(sc, r.source_dir, r.golden_path,
                                                         sizeof r.golden_path, err, sizeof err)) != 0)
        goto out_error;
    if ((rc = ckh__run_build_sim(&c, sc, seed, 0, o->on_trace || o->timeline)) != 0 ||
        (rc = ckh__run_execute(&c, &r)) != 0) {
        snprintf(err, sizeof err, "%s", c.err);
        goto out_error;
    }
    r.interval = c.wl->interval ? c.wl->interval(c.inst) : 1;
    if (o->on_trace)
        o->on_trace(o->on_trace_ctx, c.sim, &r);
    if (o->timeline)
        ckh_timeline_build(c.sim, &r, &out->timeline); /* harness/fuzz_timeline.c */
    if (o->check_determinism && (rc = second_execution(sc, seed, &r, err, sizeof err)) != 0)
        goto out_error;
    out->runs = (uint32_t)r.nruns;
    out->restarts = r.nruns ? (uint32_t)r.nruns - 1 : 0;
    out->virtual_ns = r.virtual_ns;
    ckh__run_judge(&r, out);
    if (sc->expect.ndetect && sc->job.ndefects && out->verdict == CKH_VERDICT_PASS &&
        (rc = ckh__run_control_check(sc, seed, &r, out, err, sizeof err)) != 0)
        goto out_error;
    out->wall_ms = ckh_posix_now_ms() - t0;
    ckh__run_ctx_free(&c);
    ckh_scenario_run_free(&r);
    return 0;

out_error:
    out->verdict = CKH_VERDICT_ERROR;
    /* A message that starts with "line:column:" joins its file directly. */
    ckh_report_set(&out->message, "%s%s%s", sc->file,
                   err[0] >= '0' && err[0] <= '9' ? ":" : ": ", err[0] ? err : ckh_strerror(rc));
    out->wall_ms = ckh_posix_now_ms() - t0;
    ckh__run_ctx_free(&c);
    ckh_scenario_run_free(&r);
    return rc;
}

int ckh_harness_replay(const struct ckh_scenario *sc, const struct ckh_run_options *opts,
                      const char *node_filter, const char *op_filter, void *fp, char *msg,
                      size_t msglen)
{
    FILE *f = fp;
    uint64_t seed = opts && opts->seed_set ? opts->seed : sc->seed;
    struct ckh__run_ctx c;
    struct ckh_scenario_run r;
    if (ckh_scn_is_command_job(sc))
        return ckh__cmd_harness_replay(sc, opts, node_filter, op_filter, fp, msg, msglen);
    if (ckh__cmd_refuse_sim_only(sc, msg, msglen) != 0)
        return CKH_EINVAL;
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
