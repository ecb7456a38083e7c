/* Oracle "saves": no checkpoint save failed without a fault to blame. A
 * save that fails in the fault-free reference run, or in the faulted run
 * before any fault fired in its run (struct ckh_node_result
 * .saves_failed_unfaulted), is a bug of the save path itself (a saver that
 * cannot work on node-local disks, say), even when the job goes on and
 * ends where it should. Applies to every scenario; `expect.skip: [saves]`
 * turns it off. The detail quotes the first failed save. */
#include <inttypes.h>
#include <stdio.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    (void)r;
    return true;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    const struct ckh_job_result *want = &r->ref.r, *got = &r->got.r;
    uint64_t faulted = 0;
    for (size_t i = 0; i < want->nnodes; i++) {
        const struct ckh_node_result *w = &want->nodes[i];
        if (w->saves_failed == 0)
            continue;
        snprintf(detail, n,
                 "save of %s failed with no fault armed: %" PRIu64 " save%s failed in the fault-free "
                 "reference run; the first: %s",
                 w->node, w->saves_failed, w->saves_failed == 1 ? "" : "s",
                 w->first_failed_save[0] ? w->first_failed_save : "(no message)");
        return false;
    }
    for (size_t i = 0; i < got->nnodes; i++) {
        const struct ckh_node_result *g = &got->nodes[i];
        faulted += g->saves_failed;
        if (g->saves_failed_unfaulted == 0)
            continue;
        snprintf(detail, n,
                 "save of %s failed before any fault fired: %" PRIu64 " of its %" PRIu64
                 " failed save%s had no fault to blame; the first failed save: %s",
                 g->node, g->saves_failed_unfaulted, g->saves_failed, g->saves_failed == 1 ? "" : "s",
                 g->first_failed_save[0] ? g->first_failed_save : "(no message)");
        return false;
    }
    snprintf(detail, n,
             "no save failed without a fault to blame (%" PRIu64 " failed save%s in the faulted run, "
             "each after a fault fired)",
             faulted, faulted == 1 ? "" : "s");
    return true;
}

const struct ckh_oracle_ops ckh__oracle_saves = {
    .name = "saves",
    .description = "no checkpoint save fails without a fault to blame (reference run, or before any fault fired)",
    .applies = applies,
    .check = check,
};
