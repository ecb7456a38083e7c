/* Oracle "reference": the faulted job ends exactly where the fault-free
 * reference run ended: per node the same epoch count, headline total,
 * blob-name set and state digest. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "oracles/oracle.h"

/* Not for a job restarted with another world size: it has other nodes
 * and ends in another state than the reference run at the first world. */
static bool applies(const struct ckh_scenario_run *r)
{
    return r->sc->expect.reference && ckh_oracle_expects_pass(r) && r->completed &&
           !ckh_oracle_resizes(r);
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    if (!r->ref_ok) {
        snprintf(detail, n, "the fault-free reference run itself did not complete");
        return false;
    }
    const struct ckh_job_result *want = &r->ref.r, *got = &r->got.r;
    if (want->nnodes != got->nnodes) {
        snprintf(detail, n, "expected %zu nodes, got %zu", want->nnodes, got->nnodes);
        return false;
    }
    for (size_t i = 0; i < want->nnodes; i++) {
        const struct ckh_node_result *w = &want->nodes[i], *g = &got->nodes[i];
        if (w->epochs != g->epochs) {
            snprintf(detail, n, "%s: expected %" PRId64 " epochs, got %" PRId64, w->node, w->epochs,
                     g->epochs);
            *divergent = w->epochs < g->epochs ? w->epochs : g->epochs;
            return false;
        }
        if (w->total != g->total) {
            snprintf(detail, n, "%s: expected total %" PRId64 ", got %" PRId64, w->node, w->total,
                     g->total);
            return false;
        }
        if (strcmp(w->blobs, g->blobs) != 0) {
            snprintf(detail, n, "%s: expected blobs {%s}, got {%s}", w->node, w->blobs, g->blobs);
            return false;
        }
        if (w->digest != g->digest) {
            snprintf(detail, n, "%s: expected state digest %016" PRIx64 ", got %016" PRIx64,
                     w->node, w->digest, g->digest);
            return false;
        }
    }
    snprintf(detail, n, "%zu node%s match the reference run (epochs, totals, blobs, digests)",
             want->nnodes, want->nnodes == 1 ? "" : "s");
    return true;
}

const struct ckh_oracle_ops ckh__oracle_reference = {
    .name = "reference",
    .description = "epochs, totals, blob sets and digests equal the fault-free reference run",
    .applies = applies,
    .check = check,
};
