/* Oracle "lost-work": a failure never loses more than one checkpoint
 * interval. After a run that crashed, each crashed node must resume no
 * further back than (the furthest epoch/step it had reached) - interval. */
#include <inttypes.h>
#include <stdio.h>

#include "oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    return ckh_oracle_expects_pass(r) && !ckh_oracle_faults_touch_data(r) && r->nruns > 1 &&
           r->sc->restart.resume_epoch < 0;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    int64_t worst = 0;
    for (size_t i = 0; i + 1 < r->nruns; i++) {
        const struct ckh_run_info *ri = &r->runs[i], *next = &r->runs[i + 1];
        for (size_t k = 0; k < ri->nnodes && k < next->nnodes; k++) {
            const struct ckh_node_end *was = &ri->nodes[k], *now = &next->nodes[k];
            if (was->state != CKH_NODE_KILLED)
                continue; /* only a crashed node's work is lost to the crash; a node
                             that ran ahead of a dead peer loses work to the
                             job's resume rule (latest epoch on every node) */
            if (was->progress < 0)
                continue; /* died before any epoch started */
            if (!now->resume_known)
                continue; /* died again before working: its resume point is unknown */
            int64_t lost = was->progress - now->resume_point;
            if (lost > worst)
                worst = lost;
            if (lost > r->interval) {
                snprintf(detail, n,
                         "node %zu reached %" PRId64 " in run %d but run %d resumed from %" PRId64
                         ": lost %" PRId64 " (interval %" PRId64 ")",
                         k, was->progress, ri->run, next->run, now->resume_point, lost, r->interval);
                *divergent = now->resume_point + 1;
                return false;
            }
        }
    }
    snprintf(detail, n, "at most %" PRId64 " lost per failure (interval %" PRId64 ")", worst,
             r->interval);
    return true;
}

const struct ckh_oracle_ops ckh__oracle_lost_work = {
    .name = "lost-work",
    .description = "a failure loses at most one checkpoint interval of work",
    .applies = applies,
    .check = check,
};
