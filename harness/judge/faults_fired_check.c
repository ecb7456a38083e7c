/* Oracle "faults-fired": every scripted fault fired. A trigger that
 * matches no operation (a typo in a path glob, an op the code never
 * performs in that phase) would let a scenario pass without testing
 * anything; this oracle turns that into a failure naming the fault.
 * Faults with a probability may legitimately never fire and are exempt,
 * as are faults aimed at a run that never happened. */
#include <stdio.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    return r->sc->nfaults > 0 && r->fault_fired != NULL;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    size_t checked = 0;
    for (size_t i = 0; i < r->sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &r->sc->faults[i];
        if (f->on.probability > 0 || !r->fault_armed[i])
            continue;
        checked++;
        if (r->fault_fired[i] == 0) {
            snprintf(detail, n,
                     "the %s fault at line %d never fired: its trigger matched no operation",
                     ckh_scn_action_name(f->act.kind), f->line);
            return false;
        }
    }
    snprintf(detail, n, "%zu scripted fault%s fired", checked, checked == 1 ? "" : "s");
    return true;
}

const struct ckh_oracle_ops ckh__oracle_faults_fired = {
    .name = "faults-fired",
    .description = "every scripted fault fired (a trigger that matches nothing is an error)",
    .applies = applies,
    .check = check,
};
