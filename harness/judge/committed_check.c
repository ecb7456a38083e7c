/* Oracle "committed": after every crash, the state on disk resolves to a
 * fully committed checkpoint that loads (the metadata's resume point, or
 * the `latest` pointer), as a restarted node would see it. */
#include <stdio.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    if (ckh_oracle_faults_touch_data(r))
        return false;
    for (size_t i = 0; i < r->nruns; i++)
        if (r->runs[i].crashed && r->runs[i].committed_detail[0])
            return true;
    return false;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    size_t crashes = 0;
    for (size_t i = 0; i < r->nruns; i++) {
        const struct ckh_run_info *ri = &r->runs[i];
        if (!ri->crashed || !ri->committed_detail[0])
            continue;
        crashes++;
        if (!ri->committed_ok) {
            snprintf(detail, n, "after the crash in run %d: %s", ri->run, ri->committed_detail);
            return false;
        }
    }
    /* The adapter's own words for the last crash say which case it was: a
     * checkpoint that loads, or nothing committed yet (a restart from
     * scratch, which lost-work judges). */
    const char *last = "";
    for (size_t i = 0; i < r->nruns; i++)
        if (r->runs[i].crashed && r->runs[i].committed_detail[0])
            last = r->runs[i].committed_detail;
    snprintf(detail, n, "after %zu crash%s the disks were consistent; after the last: %s", crashes,
             crashes == 1 ? "" : "es", last);
    return true;
}

const struct ckh_oracle_ops ckh__oracle_committed = {
    .name = "committed",
    .description = "after every crash, latest/metadata resolves to a fully committed checkpoint",
    .applies = applies,
    .check = check,
};
