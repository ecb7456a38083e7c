/* ckh_harness_run (judge/judge.h): one scenario from its model to its
 * verdict, the same for every executor (exec/exec.h):
 *   1. the executor that runs the scenario (ckh_exec_select) and every
 *      refusal, decided before any run (ckh_exec_check);
 *   2. the fault-free reference run (the executor's: the simulator's,
 *      cached, for simulated and real jobs; the programs' own for command
 *      jobs);
 *   3. the faulted job with its restarts, through the executor's driver
 *      (exec/driver.c); with --check-determinism a second execution, whose
 *      trace hash the determinism oracle compares;
 *   4. the oracles (ckh__run_verdict), then, for a planted defect that was
 *      detected, the control run that shows the defect is what was
 *      detected.
 * A job whose fault-free reference run fails (CKH_EFAILS_UNFAULTED from
 * the executor) is a FAIL of its own, "fails without faults: ...": the
 * bug shows with no fault at all, and nothing else is judged.
 */
#include "judge/judge.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/exec.h"
#include "exec/workloads.h"

/* A job restarted with another world size is judged by the reshard
 * oracle (every sample exactly once per epoch across the ranks, from the
 * per-step sample ids and the dataset size) since the reference run's
 * records, made by another world, do not compare step by step; a job
 * that reported nothing of the kind cannot be judged, and is refused
 * rather than passed. */
static int world_change_judged(const struct ckh_scenario *sc, const struct ckh_scenario_run *r, char *err,
                               size_t errlen)
{
    const struct ckh_job_result *got = &r->got.r;
    if (!r->resized || !r->completed || (got->sample_counts && got->dataset_size > 0 && got->nsamples > 0))
        return 0;
    return ckh_errf(err, errlen, CKH_EINVAL,
                    "%d:%d: restart.world_size: the job restarted with %d rank%s after %d but reported no "
                    "sample ids and dataset size, so nothing can judge the resharded runs (records "
                    "\"samples\" in each step and a final \"dataset_size\", docs/SCENARIOS.md, \"Result "
                    "protocol\"); remove restart.world_size or record them",
                    sc->restart.world_size_line, sc->restart.world_size_column, r->world_restart,
                    r->world_restart == 1 ? "" : "s", r->world);
}

/* Steps 1 to 3 into r; 0 or a code with err. */
static int execute(const struct ckh_executor *ex, void **job, const struct ckh_scenario *sc, uint64_t seed,
                   const struct ckh_run_options *o, struct ckh_scenario_run *r, struct ckh_report_result *out,
                   char *err, size_t errlen)
{
    bool judged = false;
    int rc = ckh_exec_check(ex, sc, err, errlen);
    if (rc == 0 && ex->begin)
        rc = ex->begin(sc, job, err, errlen);
    if (rc == 0)
        rc = ex->reference(*job, sc, seed, o, r, &judged, err, errlen);
    if (rc != 0 || judged)
        return rc;
    if (sc->expect.golden && (rc = ckh__run_find_golden(sc, r->source_dir, r->golden_path,
                                                         sizeof r->golden_path, err, errlen)) != 0)
        return rc;
    if ((rc = ex->faulted(*job, sc, seed, o, false, r, out, err, errlen)) != 0)
        return rc;
    if ((rc = world_change_judged(sc, r, err, errlen)) != 0)
        return rc;
    if (o->check_determinism && ex->traced) {
        struct ckh_scenario_run r2;
        memset(&r2, 0, sizeof r2);
        r2.sc = sc;
        if ((rc = ex->faulted(*job, sc, seed, o, true, &r2, out, err, errlen)) == 0)
            r->trace_hash2 = r2.trace_hash ? r2.trace_hash : 1;
        ckh_scenario_run_free(&r2);
    }
    return rc;
}

int ckh_harness_run(const struct ckh_scenario *sc, const struct ckh_run_options *opts,
                    struct ckh_report_result *out)
{
    static const struct ckh_run_options dflt = {0};
    const struct ckh_run_options *o = opts ? opts : &dflt;
    const struct ckh_executor *ex = ckh_exec_select(sc, o);
    uint64_t t0 = ckh_posix_now_ms();
    uint64_t seed = o->seed_set ? o->seed : sc->seed;
    struct ckh_scenario_run r;
    void *job = NULL;
    char err[CKH__EXEC_ERR_BYTES + 200] = "";
    memset(&r, 0, sizeof r);
    r.sc = sc;
    r.seed = seed;
    r.source_dir = o->source_dir ? o->source_dir : ".";
    out->seed = seed;
    /* Out of memory anywhere, the judging included, is an ERROR: a verdict
     * built on a half-written result would not be the scenario's. */
    int rc = ckh_report_set(&out->name, "%s", sc->name);
    if (rc == 0)
        rc = ckh_report_set(&out->file, "%s", sc->file);
    if (rc == 0)
        rc = ckh_report_set(&out->replay, "%s run%s %s --seed %" PRIu64, o->argv0 ? o->argv0 : "ckh",
                            ex->replay_flags, sc->file, seed);
    if (rc == 0)
        rc = execute(ex, &job, sc, seed, o, &r, out, err, sizeof err);
    /* Which plugin files the job ran, with their build ids, for every
     * verdict; out of memory only leaves those lines out. */
    (void)ckh_workloads_describe(sc, out);
    if (rc == 0) {
        rc = ckh__run_verdict(&r, out);
        if (rc == 0 && sc->expect.ndetect && sc->job.ndefects && out->verdict == CKH_VERDICT_PASS)
            rc = ckh__run_control_check(sc, seed, &r, out, err, sizeof err);
    }
    if (rc == CKH_EFAILS_UNFAULTED) {
        /* The job fails on its own, without any fault: a found bug, not
         * bad input; nothing else can be judged. */
        out->verdict = CKH_VERDICT_FAIL;
        rc = ckh_report_set(&out->failed_oracle, "outcome");
        if (rc == 0)
            rc = ckh_report_set(&out->message, "fails without faults: %s", err);
        if (rc == 0)
            rc = ckh_report_add_oracle(out, "outcome", false, out->message);
        if (rc != 0)
            err[0] = '\0'; /* the message is the code's */
    }
    if (rc != 0) {
        /* The message names the scenario file once, then where in it
         * ("line:column: ...") when it knows. */
        bool named = !strncmp(err, sc->file, strlen(sc->file));
        out->verdict = CKH_VERDICT_ERROR;
        if (ckh_err_is_bad_input(rc)) { /* nothing ran that a replay could show */
            free(out->replay);
            out->replay = NULL;
        }
        ckh_report_set(&out->message, "%s%s%s", named ? "" : sc->file,
                       named ? "" : (err[0] >= '0' && err[0] <= '9' ? ":" : ": "),
                       err[0] ? err : ckh_strerror(rc));
    }
    out->wall_ms = ckh_posix_now_ms() - t0;
    ckh_scenario_run_free(&r);
    if (ex->end)
        ex->end(job);
    return rc;
}
