/* Oracle "outcome": the job ended the way the scenario expects (pass,
 * corruption-detected, deadlock, timeout, job-fails, save-fails). A job
 * that failed unexpectedly is named by its first cause first ("run 2:
 * rank_0 exited with status 1; its last output: ..."), then how it ended.
 */
#include <stdio.h>

#include "ckh/err.h"

#include "judge/oracle.h"

/* How the job ended, then what happened on the way. */
static void observed(const struct ckh_scenario_run *r, char *buf, size_t n)
{
    const char *end = !r->completed ? "job-fails" : r->saves_failed > 0 ? "save-fails" : "pass";
    size_t used = (size_t)snprintf(buf, n, "%s", end);
    const char *seen[4];
    size_t k = 0;
    if (r->deadlock_seen)
        seen[k++] = "deadlock";
    if (r->corruption_seen)
        seen[k++] = "corruption-detected";
    if (r->timeout_seen)
        seen[k++] = "collective timeout";
    if (r->oom_seen)
        seen[k++] = "device out of memory";
    for (size_t i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "; seen: ", seen[i]);
}

/* The run whose failure is the cause: the first that failed with no
 * node killed in it (a failure a fault's kill does not explain), else the
 * last run that failed; NULL when every run completed. */
static const struct ckh_run_info *failed_run(const struct ckh_scenario_run *r)
{
    const struct ckh_run_info *last = NULL;
    for (size_t i = 0; i < r->nruns; i++) {
        if (r->runs[i].completed)
            continue;
        if (!r->runs[i].crashed)
            return &r->runs[i];
        last = &r->runs[i];
    }
    return last;
}

/* The first cause of a failed job, as "run N: what failed" into buf: the
 * run's own report (a command job's node that exited, with its last
 * output; a deadlock), else each node that ended with an error code and
 * the phase it was in. false when nothing is known. */
static bool first_cause(const struct ckh_scenario_run *r, char *buf, size_t n)
{
    const struct ckh_run_info *ri = failed_run(r);
    if (!ri)
        return false;
    if (ri->report[0]) {
        snprintf(buf, n, "run %d: %.700s", ri->run, ri->report);
        return true;
    }
    size_t used = 0;
    for (size_t i = 0; i < ri->nnodes && used < n; i++) {
        const struct ckh_node_end *ne = &ri->nodes[i];
        int code = ne->state == CKH_NODE_EXITED ? ne->exit_status : 0;
        if (!code)
            continue;
        const char *name = i < r->got.r.nnodes ? r->got.r.nodes[i].node : "?";
        used += (size_t)snprintf(buf + used, n - used, "%s%s failed with %s%s%s", used ? "; " : "", name,
                                 ckh_err_name(code), ne->phase[0] ? " in " : "", ne->phase);
    }
    if (!used)
        return false;
    char tmp[800];
    snprintf(tmp, sizeof tmp, "%s", buf);
    snprintf(buf, n, "run %d: %s", ri->run, tmp);
    return true;
}

static bool applies(const struct ckh_scenario_run *r)
{
    (void)r;
    return true;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    bool ok;
    switch (r->sc->expect.outcome) {
    case CKH_SCN_OUTCOME_PASS: ok = r->completed && !r->deadlock_seen; break;
    case CKH_SCN_OUTCOME_CORRUPTION_DETECTED: ok = r->corruption_seen; break;
    case CKH_SCN_OUTCOME_DEADLOCK: ok = r->deadlock_seen; break;
    case CKH_SCN_OUTCOME_TIMEOUT: ok = r->timeout_seen; break;
    case CKH_SCN_OUTCOME_JOB_FAILS: ok = !r->completed; break;
    case CKH_SCN_OUTCOME_SAVE_FAILS: ok = r->completed && r->saves_failed > 0; break;
    default: ok = false; break;
    }
    char got[160];
    observed(r, got, sizeof got);
    /* pass, job-fails and save-fails describe how the job ended; the
     * others are events that must have happened on the way. */
    enum ckh_scn_outcome want = r->sc->expect.outcome;
    bool event = want == CKH_SCN_OUTCOME_CORRUPTION_DETECTED || want == CKH_SCN_OUTCOME_DEADLOCK ||
                 want == CKH_SCN_OUTCOME_TIMEOUT;
    /* A job that failed, unexpectedly or as expected (job-fails), opens
     * with its first cause, so that the one-line verdict names what
     * failed, not only how the job ended. */
    char cause[900] = "";
    bool caused = (!ok || want == CKH_SCN_OUTCOME_JOB_FAILS) && !r->completed &&
                  first_cause(r, cause, sizeof cause);
    snprintf(detail, n, "%s%sexpected %s %s: %s; the job ended %s (%zu run%s, %llu failed save%s)", cause,
             caused ? "; " : "", event ? "to see" : "outcome", ckh_scn_outcome_name(want),
             ok ? (event ? "seen" : "held") : (event ? "not seen" : "did not hold"), got, r->nruns,
             r->nruns == 1 ? "" : "s", (unsigned long long)r->saves_failed, r->saves_failed == 1 ? "" : "s");
    return ok;
}

const struct ckh_oracle_ops ckh__oracle_outcome = {
    .name = "outcome",
    .description = "the job ends as expected: pass, corruption-detected, deadlock, timeout, ...",
    .applies = applies,
    .check = check,
};
