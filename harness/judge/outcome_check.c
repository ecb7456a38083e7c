/* Oracle "outcome": the job ended the way the scenario expects (pass,
 * corruption-detected, deadlock, timeout, job-fails, save-fails). */
#include <stdio.h>

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
    int k = snprintf(detail, n, "expected %s %s: %s; the job ended %s (%zu run%s, %llu failed save%s)",
                     event ? "to see" : "outcome", ckh_scn_outcome_name(want),
                     ok ? (event ? "seen" : "held") : (event ? "not seen" : "did not hold"), got, r->nruns,
                     r->nruns == 1 ? "" : "s", (unsigned long long)r->saves_failed,
                     r->saves_failed == 1 ? "" : "s");
    /* An unexpected failure, and an expected job-fails, names what the
     * last run said about itself. */
    const struct ckh_run_info *last = r->nruns ? &r->runs[r->nruns - 1] : NULL;
    if ((!ok || want == CKH_SCN_OUTCOME_JOB_FAILS) && !r->completed && last && last->report[0] && !last->completed && k > 0 && (size_t)k < n)
        snprintf(detail + k, n - (size_t)k, "; run %d: %.600s", last->run, last->report);
    return ok;
}

const struct ckh_oracle_ops ckh__oracle_outcome = {
    .name = "outcome",
    .description = "the job ends as expected: pass, corruption-detected, deadlock, timeout, ...",
    .applies = applies,
    .check = check,
};
