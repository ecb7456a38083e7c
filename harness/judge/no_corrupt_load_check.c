/* Oracle "no-corrupt-load": corrupt data is never loaded silently. When
 * the fault script damaged data at rest, the job must either refuse it
 * (corruption detected, or the job fails) or end exactly where the
 * reference run ended (the damage was never read or was repaired). A
 * damaging fault that never fired (its trigger matched nothing, or its
 * change did not land: a path that did not exist, an offset past the
 * end) damaged nothing: with no other, there is nothing to judge, and a
 * changed end state is not damaged data's doing. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "judge/oracle.h"

/* Not for a job restarted with another world size: its end state is not
 * the reference run's (see ckh_oracle_resizes). */
static bool applies(const struct ckh_scenario_run *r)
{
    if (ckh_oracle_resizes(r))
        return false;
    for (size_t i = 0; i < r->sc->nfaults; i++) {
        enum ckh_scn_action_kind k = r->sc->faults[i].act.kind;
        /* A kill can tear a write; with defect switches on, though, a
         * changed end state is the defect's doing, not damaged data. */
        bool kill = k == CKH_SCN_ACT_KILL && r->sc->job.ndefects == 0;
        bool damaging = k == CKH_SCN_ACT_CORRUPT || k == CKH_SCN_ACT_STALE_LATEST ||
                        k == CKH_SCN_ACT_DANGLING_LATEST || kill;
        /* fault_fired is NULL only where firings are not counted. */
        if (damaging && (!r->fault_fired || r->fault_fired[i] > 0))
            return r->ref_ok;
    }
    return false;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    if (r->corruption_seen) {
        snprintf(detail, n, "the damaged data was refused when loaded");
        return true;
    }
    if (!r->completed) {
        snprintf(detail, n, "the job stopped without loading silently corrupt data");
        return true;
    }
    const struct ckh_job_result *want = &r->ref.r, *got = &r->got.r;
    for (size_t i = 0; i < want->nnodes && i < got->nnodes; i++) {
        if (want->nodes[i].digest != got->nodes[i].digest || want->nodes[i].total != got->nodes[i].total) {
            snprintf(detail, n,
                     "%s completed with state %016" PRIx64 " (total %" PRId64
                     ") instead of the reference %016" PRIx64 " (total %" PRId64
                     "): damaged data was loaded without an error",
                     got->nodes[i].node, got->nodes[i].digest, got->nodes[i].total,
                     want->nodes[i].digest, want->nodes[i].total);
            return false;
        }
    }
    snprintf(detail, n, "the job completed with the reference state: no damaged data was used");
    return true;
}

const struct ckh_oracle_ops ckh__oracle_no_corrupt_load = {
    .name = "no-corrupt-load",
    .description = "damaged checkpoints are refused, never loaded silently",
    .applies = applies,
    .check = check,
};
