/* Oracle "hang": no run deadlocks or hangs unless the scenario expects
 * it; a failure names each rank's pending operation. */
#include <stdio.h>
#include <string.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    enum ckh_scn_outcome o = r->sc->expect.outcome;
    return o != CKH_SCN_OUTCOME_DEADLOCK && o != CKH_SCN_OUTCOME_TIMEOUT;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    for (size_t i = 0; i < r->nruns; i++) {
        const struct ckh_run_info *ri = &r->runs[i];
        if (ri->outcome == CKH_SIM_DEADLOCK) {
            snprintf(detail, n, "run %d deadlocked: %s", ri->run, ri->report);
            return false;
        }
        if (ri->outcome == CKH_SIM_TIME_LIMIT || ri->outcome == CKH_SIM_OP_LIMIT) {
            size_t used = (size_t)snprintf(detail, n, "run %d hung (%s limit reached); still running:",
                                           ri->run,
                                           ri->outcome == CKH_SIM_TIME_LIMIT ? "time" : "op");
            for (size_t k = 0; k < ri->nnodes && used < n; k++)
                if (ri->nodes[k].state == CKH_NODE_RUNNING)
                    used += (size_t)snprintf(detail + used, n - used, " node %zu in %s%s%s", k,
                                             ri->nodes[k].phase[0] ? ri->nodes[k].phase : "?",
                                             ri->nodes[k].pending[0] ? ": " : "",
                                             ri->nodes[k].pending);
            return false;
        }
    }
    snprintf(detail, n, "no run deadlocked or hung");
    return true;
}

const struct ckh_oracle_ops ckh__oracle_hang = {
    .name = "hang",
    .description = "no deadlock or hang, else each rank's pending operation",
    .applies = applies,
    .check = check,
};
