/* Oracle "lost-work": a failure never loses more than one checkpoint
 * interval of the job's work.
 *
 * The job is judged as a unit: its frontier after a run is the least
 * progress any node had made (a node's progress only counts as far as the
 * slowest node, since the job resumes from the latest epoch or step
 * complete on every node); each node's progress is the furthest epoch/step
 * it worked on, or resumed from, so far. After a run with a crash, the
 * restarted nodes must resume no further back than frontier - interval.
 * A node restarted again before it started working has no known resume
 * point and is left out. */
#include <inttypes.h>
#include <stdio.h>

#include "ckh/assert.h"
#include "exec/runner.h"
#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    return ckh_oracle_expects_pass(r) && !ckh_oracle_faults_touch_data(r) && r->nruns > 1 &&
           r->sc->restart.resume_epoch < 0;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    /* On the stack: an oracle cannot report running out of memory, only
     * a verdict (job.nodes is at most CKH_RUNNER_MAX_NODES). */
    size_t nn = r->runs[0].nnodes;
    int64_t front[CKH_RUNNER_MAX_NODES];
    CKH_ASSERT(nn <= CKH_RUNNER_MAX_NODES);
    for (size_t k = 0; k < nn; k++)
        front[k] = -1;
    int64_t worst = 0;
    bool ok = true;
    for (size_t i = 0; i + 1 < r->nruns && ok; i++) {
        const struct ckh_run_info *ri = &r->runs[i], *next = &r->runs[i + 1];
        bool crashed = false;
        int64_t frontier = INT64_MAX;
        for (size_t k = 0; k < nn && k < ri->nnodes; k++) {
            const struct ckh_node_end *e = &ri->nodes[k];
            if (e->resume_known && e->resume_point > front[k])
                front[k] = e->resume_point;
            if (e->progress > front[k])
                front[k] = e->progress;
            if (front[k] < frontier)
                frontier = front[k];
            crashed |= e->state == CKH_NODE_KILLED;
        }
        if (!crashed || frontier < 0)
            continue;
        int64_t resume = INT64_MAX;
        size_t who = 0;
        for (size_t k = 0; k < nn && k < next->nnodes; k++)
            if (next->nodes[k].resume_known && next->nodes[k].resume_point < resume) {
                resume = next->nodes[k].resume_point;
                who = k;
            }
        if (resume == INT64_MAX)
            continue;
        int64_t lost = frontier - resume;
        if (lost > worst)
            worst = lost;
        if (lost > r->interval) {
            snprintf(detail, n,
                     "the job had reached %" PRId64 " on every node in run %d, but node %zu of run %d "
                     "resumed from %" PRId64 ": lost %" PRId64 " (interval %" PRId64 ")",
                     frontier, ri->run, who, next->run, resume, lost, r->interval);
            *divergent = resume + 1;
            ok = false;
        }
    }
    if (ok)
        snprintf(detail, n, "at most %" PRId64 " lost per failure (interval %" PRId64 ")", worst,
                 r->interval);
    return ok;
}

const struct ckh_oracle_ops ckh__oracle_lost_work = {
    .name = "lost-work",
    .description = "a failure loses at most one checkpoint interval of work",
    .applies = applies,
    .check = check,
};
