/* Oracle "liveness": a job expected to pass completes within its restart
 * budget; otherwise says how each run ended. */
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    return ckh_oracle_expects_pass(r);
}

static const char *outcome_name(enum ckh_sim_outcome o)
{
    switch (o) {
    case CKH_SIM_DONE: return "done";
    case CKH_SIM_DEADLOCK: return "deadlock";
    case CKH_SIM_TIME_LIMIT: return "time limit";
    case CKH_SIM_OP_LIMIT: return "op limit";
    }
    return "?";
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    if (r->completed) {
        snprintf(detail, n, "completed in %zu run%s (budget %u restarts)", r->nruns,
                 r->nruns == 1 ? "" : "s", r->sc->restart.max_restarts);
        return true;
    }
    size_t used = (size_t)snprintf(detail, n, "did not complete within %u restarts:",
                                   r->sc->restart.max_restarts);
    for (size_t i = 0; i < r->nruns && used < n; i++) {
        const struct ckh_run_info *ri = &r->runs[i];
        const char *why = "a node failed";
        int rc = 0;
        for (size_t k = 0; k < ri->nnodes; k++)
            if (ri->nodes[k].state == CKH_NODE_EXITED && ri->nodes[k].exit_status != 0) {
                rc = ri->nodes[k].exit_status;
                why = "job failed";
                break;
            }
        if (ri->crashed)
            why = "crash";
        /* A real program's exit status is positive (command jobs). */
        char code[32] = "";
        if (rc > 0)
            snprintf(code, sizeof code, "status %d", rc);
        else if (rc)
            snprintf(code, sizeof code, "%s", ckh_err_name(rc));
        used += (size_t)snprintf(detail + used, n - used, " run %d: %s (%s%s%s)", ri->run, why,
                                 outcome_name(ri->outcome), rc ? ", " : "", code);
    }
    return false;
}

const struct ckh_oracle_ops ckh__oracle_liveness = {
    .name = "liveness",
    .description = "the job completes within the restart budget",
    .applies = applies,
    .check = check,
};
