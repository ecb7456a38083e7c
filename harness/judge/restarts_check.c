/* Oracle "restarts": the job needed at most expect.max_restarts restarts.
 * A job can survive a slow save only because a collective timed out and
 * every rank restarted; the other oracles then pass, and this one says
 * that the restart itself was the failure. Applies only when the scenario
 * gives expect.max_restarts. The detail says what ended the first run
 * that was restarted. */
#include <stdio.h>

#include "ckh/err.h"
#include "ckh/assert.h"
#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    return r->sc->expect.max_restarts_set && r->nruns > 0;
}

/* What ended run ri: its killed nodes and the ones that exited with an
 * error, "rank_1 killed, rank_0 exited with CKH_ETIMEOUT". */
static void why_ended(const struct ckh_scenario_run *r, const struct ckh_run_info *ri, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ri->nnodes && at < n; i++) {
        const struct ckh_node_end *e = &ri->nodes[i];
        const char *name = i < r->got.r.nnodes ? r->got.r.nodes[i].node : "?";
        const char *sep = at ? ", " : "";
        int k = 0;
        if (e->state == CKH_NODE_KILLED)
            k = snprintf(buf + at, n - at, "%s%s killed", sep, name);
        else if (e->state == CKH_NODE_EXITED && (e->rc != 0 || e->exit_status != 0))
            k = e->rc < 0 ? snprintf(buf + at, n - at, "%s%s exited with %s", sep, name, ckh_err_name(e->rc))
                           : snprintf(buf + at, n - at, "%s%s exited with status %d", sep, name, e->exit_status);
        else if (e->state == CKH_NODE_RUNNING || e->state == CKH_NODE_READY)
            k = snprintf(buf + at, n - at, "%s%s did not finish", sep, name);
        if (k > 0)
            at = at + (size_t)k < n ? at + (size_t)k : n - 1;
    }
    if (!buf[0])
        snprintf(buf, n, "%.400s", ri->report[0] ? ri->report : "the job did not complete");
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    uint32_t max = r->sc->expect.max_restarts;
    size_t restarts = r->nruns - 1;
    if (restarts <= max) {
        snprintf(detail, n, "the job needed %zu restart%s, at most %u allowed", restarts,
                 restarts == 1 ? "" : "s", max);
        return true;
    }
    char why[512];
    CKH_ASSERT(max + 1 < r->nruns); /* run max + 1 was a restart past the budget */
    why_ended(r, &r->runs[max], why, sizeof why);
    snprintf(detail, n,
             "the job needed %zu restart%s, at most %u allowed (expect.max_restarts): run %d ended "
             "with %s%s",
             restarts, restarts == 1 ? "" : "s", max, r->runs[max].run, why,
             r->timeout_seen ? " (a collective failed)" : "");
    return false;
}

const struct ckh_oracle_ops ckh__oracle_restarts = {
    .name = "restarts",
    .description = "the job needed at most expect.max_restarts restarts",
    .applies = applies,
    .check = check,
};
