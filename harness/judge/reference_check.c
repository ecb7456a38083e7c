/* Oracle "reference": the faulted job ends exactly where the fault-free
 * reference run ended: per node the same epoch and step counts, headline
 * total, blob-name set, state digest and named final values (compared by
 * name, bit for bit; names in the scenario's compare.ignore are left out).
 *
 * The detail opens with the quantity and node that differ
 * ("final value loss of rank_0 differs: ..."), so the one-line verdict
 * names them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "judge/oracle.h"

/* Not for a job restarted with another world size: it has other nodes
 * and ends in another state than the reference run at the first world. */
static bool applies(const struct ckh_scenario_run *r)
{
    return r->sc->expect.reference && ckh_oracle_expects_pass(r) && r->completed &&
           !ckh_oracle_resizes(r);
}

/* Node w's final values in result jr (none when out of the pool). */
static const struct ckh_step_quantity *final_values(const struct ckh_job_result *jr,
                                                    const struct ckh_node_result *w, size_t *n)
{
    bool ok = jr->final_values && (size_t)w->vfirst + w->vcount <= jr->nfinal_values;
    *n = ok ? w->vcount : 0;
    return ok ? jr->final_values + w->vfirst : NULL;
}

static const struct ckh_step_quantity *find_q(const struct ckh_step_quantity *q, size_t n,
                                              const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(q[i].name, name) == 0)
            return &q[i];
    return NULL;
}

/* bits as people read them: a double, or 16 hex digits. */
static void shown(const struct ckh_step_quantity *q, char *buf, size_t n)
{
    if (q->is_value) {
        double v;
        memcpy(&v, &q->bits, sizeof v);
        snprintf(buf, n, "%.17g", v);
    } else {
        snprintf(buf, n, "%016" PRIx64, q->bits);
    }
}

/* The named final values of node i in both runs, by name. */
static bool check_values(const struct ckh_scenario_run *r, size_t i, char *detail, size_t n)
{
    const struct ckh_node_result *w = &r->ref.r.nodes[i], *g = &r->got.r.nodes[i];
    size_t nw, ng;
    const struct ckh_step_quantity *qw = final_values(&r->ref.r, w, &nw);
    const struct ckh_step_quantity *qg = final_values(&r->got.r, g, &ng);
    char a[32], b[32];
    for (size_t k = 0; k < nw; k++) {
        if (ckh_oracle_ignored(r, qw[k].name))
            continue;
        const struct ckh_step_quantity *o = find_q(qg, ng, qw[k].name);
        shown(&qw[k], b, sizeof b);
        if (!o) {
            snprintf(detail, n, "final value %s of %s missing: the reference run ended with %s",
                     qw[k].name, w->node, b);
            return false;
        }
        if (o->bits != qw[k].bits || o->is_value != qw[k].is_value) {
            shown(o, a, sizeof a);
            snprintf(detail, n, "final value %s of %s differs: %s, reference %s", qw[k].name, w->node,
                     a, b);
            return false;
        }
    }
    for (size_t k = 0; k < ng; k++) {
        if (ckh_oracle_ignored(r, qg[k].name) || find_q(qw, nw, qg[k].name))
            continue;
        shown(&qg[k], a, sizeof a);
        snprintf(detail, n, "final value %s of %s is %s; the reference run has no such value",
                 qg[k].name, g->node, a);
        return false;
    }
    return true;
}

/* The generic outcome of node i in both runs. */
static bool check_node(const struct ckh_scenario_run *r, size_t i, char *detail, size_t n,
                       int64_t *divergent)
{
    const struct ckh_node_result *w = &r->ref.r.nodes[i], *g = &r->got.r.nodes[i];
    if (w->epochs != g->epochs) {
        snprintf(detail, n, "epochs of %s differ: %" PRId64 ", reference %" PRId64, w->node,
                 g->epochs, w->epochs);
        *divergent = w->epochs < g->epochs ? w->epochs : g->epochs;
        return false;
    }
    if (w->steps != g->steps) {
        snprintf(detail, n, "steps of %s differ: %" PRId64 ", reference %" PRId64, w->node,
                 g->steps, w->steps);
        *divergent = w->steps < g->steps ? w->steps : g->steps;
        return false;
    }
    if (w->total != g->total) {
        snprintf(detail, n, "total of %s differs: %" PRId64 ", reference %" PRId64, w->node,
                 g->total, w->total);
        return false;
    }
    if (strcmp(w->blobs, g->blobs) != 0) {
        snprintf(detail, n, "blobs of %s differ: {%s}, reference {%s}", w->node, g->blobs, w->blobs);
        return false;
    }
    if (w->digest != g->digest) {
        snprintf(detail, n, "state digest of %s differs: %016" PRIx64 ", reference %016" PRIx64,
                 w->node, g->digest, w->digest);
        return false;
    }
    return check_values(r, i, detail, n);
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
    size_t nvalues = 0;
    for (size_t i = 0; i < want->nnodes; i++) {
        if (!check_node(r, i, detail, n, divergent))
            return false;
        size_t k;
        (void)final_values(want, &want->nodes[i], &k);
        nvalues += k;
    }
    snprintf(detail, n,
             "%zu node%s match the reference run (epochs, steps, totals, blobs, digests, %zu final "
             "value%s%s)",
             want->nnodes, want->nnodes == 1 ? "" : "s", nvalues, nvalues == 1 ? "" : "s",
             r->sc->compare.nignore ? ", compare.ignore left out" : "");
    return true;
}

const struct ckh_oracle_ops ckh__oracle_reference = {
    .name = "reference",
    .description = "epochs, steps, totals, blob sets, digests and final values equal the fault-free "
                   "reference run",
    .applies = applies,
    .check = check,
};
