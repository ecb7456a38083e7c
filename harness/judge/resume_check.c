/* Oracle "resume-equivalence": a training job interrupted and resumed any
 * number of times ends bit-identical to the uninterrupted run: every
 * node's step records carry the same named quantities (weights, optimizer
 * state, learning rate, RNG streams, sampler position, whatever the
 * workload records; include/ckh/record.h) with the same bits, and every
 * epoch consumed exactly the reference multiset of sample ids.
 *
 * The detail opens with the first step where anything differs and what
 * differed, so the one-line verdict can show it:
 *   "step 12: rng of rank_1 diverged first (weights, optim, lr equal): ..."
 * followed by each difference of that step: a quantity with other bits, a
 * quantity recorded by one run only, another epoch, a node's step record
 * missing from one run. Names in the scenario's compare.ignore are left
 * out. A step a node saved and was killed before recording, restored by
 * its next incarnation (the job result's restored steps), is not missing:
 * the records after it show whether the restored state was the step's,
 * and its samples are not counted against the epoch.
 *
 * This is ckh's one definition of resume equivalence: tests/test_ddp.c
 * judges its resumed runs through it (as ddp-train scenarios), and the
 * DDP record (reference/ddp_record.c) keeps no comparison of its own. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/assert.h"
#include "judge/oracle.h"

/* Not for a job restarted with another world size: its global batch and
 * so every step after the restart differ from the reference run's (the
 * "reshard" oracle judges its epochs instead). */
static bool applies(const struct ckh_scenario_run *r)
{
    return r->ref_ok && r->ref.r.nsteps > 0 && r->completed && !ckh_oracle_resizes(r);
}

#define DIFF_KEPT 16

enum diff_kind {
    D_BITS,       /* a quantity with other bits */
    D_MISSING,    /* a quantity only the reference run recorded */
    D_EXTRA,      /* a quantity only the resumed run recorded */
    D_EPOCH,      /* the step belongs to another epoch */
    D_NO_RECORD,  /* the node recorded the step in the reference run only */
    D_ONLY_GOT,   /* the node recorded the step in the resumed run only */
};

/* One difference at the divergent step. */
struct diff {
    enum diff_kind kind;
    char name[CKH_RECORD_NAME_MAX + 1]; /* the quantity ("" for records and epochs) */
    uint32_t node;                      /* node index */
    bool is_value;                      /* bits are a double's */
    uint64_t want, got;                 /* reference and resumed bits (or epochs) */
};

/* Everything that differs at one step. */
struct step_diff {
    int64_t step;                                 /* the step */
    struct diff d[DIFF_KEPT];                     /* the first differences */
    size_t n;                                     /* kept in d */
    size_t total;                                 /* found */
    char equal[DIFF_KEPT][CKH_RECORD_NAME_MAX + 1]; /* quantities equal at the step */
    size_t nequal;                                /* kept in equal */
};

static void add_diff(struct step_diff *sd, enum diff_kind k, const char *name, uint32_t node,
                     bool is_value, uint64_t want, uint64_t got)
{
    sd->total++;
    if (sd->n == DIFF_KEPT)
        return;
    struct diff *d = &sd->d[sd->n++];
    d->kind = k;
    snprintf(d->name, sizeof d->name, "%s", name ? name : "");
    d->node = node;
    d->is_value = is_value;
    d->want = want;
    d->got = got;
}

static void add_equal(struct step_diff *sd, const char *name)
{
    for (size_t i = 0; i < sd->nequal; i++)
        if (strcmp(sd->equal[i], name) == 0)
            return;
    if (sd->nequal < DIFF_KEPT)
        snprintf(sd->equal[sd->nequal++], sizeof sd->equal[0], "%s", name);
}

/* The quantity named name among q[0..n), or NULL. */
static const struct ckh_step_quantity *find_q(const struct ckh_step_quantity *q, size_t n,
                                              const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(q[i].name, name) == 0)
            return &q[i];
    return NULL;
}

/* The quantities of step record s of result jr (none when out of the pool). */
static const struct ckh_step_quantity *quantities(const struct ckh_job_result *jr,
                                                  const struct ckh_step_record *s, size_t *n)
{
    bool ok = jr->quantities && (size_t)s->first + s->count <= jr->nquantities;
    *n = ok ? s->count : 0;
    return ok ? jr->quantities + s->first : NULL;
}

/* Quantities of one node's record in both runs, by name. */
static void compare_quantities(const struct ckh_scenario_run *r, const struct ckh_step_record *w,
                               const struct ckh_step_record *g, struct step_diff *sd)
{
    size_t nw, ng;
    const struct ckh_step_quantity *qw = quantities(&r->ref.r, w, &nw);
    const struct ckh_step_quantity *qg = quantities(&r->got.r, g, &ng);
    if (w->epoch != g->epoch)
        add_diff(sd, D_EPOCH, "", w->node, false, (uint64_t)w->epoch, (uint64_t)g->epoch);
    for (size_t i = 0; i < nw; i++) {
        if (ckh_oracle_ignored(r, qw[i].name))
            continue;
        const struct ckh_step_quantity *o = find_q(qg, ng, qw[i].name);
        if (!o)
            add_diff(sd, D_MISSING, qw[i].name, w->node, qw[i].is_value, qw[i].bits, 0);
        else if (o->bits != qw[i].bits || o->is_value != qw[i].is_value)
            add_diff(sd, D_BITS, qw[i].name, w->node, qw[i].is_value, qw[i].bits, o->bits);
        else
            add_equal(sd, qw[i].name);
    }
    for (size_t i = 0; i < ng; i++)
        if (!ckh_oracle_ignored(r, qg[i].name) && !find_q(qw, nw, qg[i].name))
            add_diff(sd, D_EXTRA, qg[i].name, g->node, qg[i].is_value, 0, qg[i].bits);
}

/* Whether the resumed run restored node's step from a checkpoint without
 * a record of it (killed between the save and the step record): not a
 * missing step, since the records after it show the restored state. */
static bool restored(const struct ckh_job_result *got, uint32_t node, int64_t step)
{
    for (size_t i = 0; i < got->nrestored; i++)
        if (got->restored[i].node == node && got->restored[i].step == step)
            return true;
    return false;
}

/* Compares the records of one step (w[0..nw) and g[0..ng), each sorted by node). */
static void compare_step(const struct ckh_scenario_run *r, const struct ckh_step_record *w, size_t nw,
                         const struct ckh_step_record *g, size_t ng, struct step_diff *sd)
{
    size_t i = 0, j = 0;
    while (i < nw || j < ng) {
        if (j == ng || (i < nw && w[i].node < g[j].node)) {
            if (!restored(&r->got.r, w[i].node, w[i].step))
                add_diff(sd, D_NO_RECORD, "", w[i].node, false, 0, 0);
            i++;
        } else if (i == nw || g[j].node < w[i].node) {
            add_diff(sd, D_ONLY_GOT, "", g[j].node, false, 0, 0);
            j++;
        } else {
            compare_quantities(r, &w[i++], &g[j++], sd);
        }
    }
    /* A name that differs on some node is not "equal". */
    size_t k = 0;
    for (size_t e = 0; e < sd->nequal; e++) {
        bool differs = false;
        for (size_t d = 0; d < sd->n; d++)
            differs |= strcmp(sd->d[d].name, sd->equal[e]) == 0;
        if (!differs && k != e)
            memcpy(sd->equal[k], sd->equal[e], sizeof sd->equal[0]);
        k += !differs;
    }
    sd->nequal = k;
}

/* ---- the detail ---- */

/* A bounded appender over detail. */
struct out {
    char *p;  /* the buffer */
    size_t n; /* its size */
    size_t at; /* bytes written (may pass n: then truncated) */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->at < o->n ? o->p + o->at : NULL, o->at < o->n ? o->n - o->at : 0, fmt, ap);
    va_end(ap);
    if (k > 0)
        o->at += (size_t)k;
}

static const char *node_name(const struct ckh_job_result *jr, uint32_t node, char *buf, size_t n)
{
    if (node < jr->nnodes)
        return jr->nodes[node].node;
    snprintf(buf, n, "node %u", node);
    return buf;
}

/* A quantity's bits as people read them: a double or 16 hex digits. */
static void put_bits(struct out *o, bool is_value, uint64_t bits)
{
    if (is_value) {
        double v;
        memcpy(&v, &bits, sizeof v);
        put(o, "%.17g", v);
    } else {
        put(o, "%016" PRIx64, bits);
    }
}

/* Whether every node that differs differs in the same quantities, in the
 * same order: then "weights, rng of rank_0, rank_1". The differences come
 * node by node, so each node's run of differences is compared with the
 * first node's. */
static bool same_names_per_node(const struct step_diff *sd)
{
    const struct diff *bits[DIFF_KEPT];
    size_t n = 0, per = 0;
    for (size_t i = 0; i < sd->n; i++)
        if (sd->d[i].kind == D_BITS)
            bits[n++] = &sd->d[i];
    while (per < n && bits[per]->node == bits[0]->node)
        per++;
    if (per == 0 || n % per != 0)
        return false;
    for (size_t i = per; i < n; i++)
        if (bits[i]->node != bits[i - i % per]->node || strcmp(bits[i]->name, bits[i % per]->name) != 0)
            return false;
    return true;
}

/* "rng, sampler of rank_1" / "rng of rank_0, rank_1" / "weights, rng of
 * rank_0, rank_1" / "rng of rank_0, sampler of rank_1": the differing
 * quantities with their nodes. */
static void put_diverged(struct out *o, const struct ckh_job_result *ref, const struct step_diff *sd)
{
    const struct diff *first = NULL;
    bool one_node = true, one_name = true;
    char nb[32];
    for (size_t i = 0; i < sd->n; i++) {
        if (sd->d[i].kind != D_BITS)
            continue;
        if (!first)
            first = &sd->d[i];
        one_node &= sd->d[i].node == first->node;
        one_name &= strcmp(sd->d[i].name, first->name) == 0;
    }
    if (!one_node && !one_name && same_names_per_node(sd)) {
        size_t k = 0;
        for (size_t i = 0; i < sd->n && sd->d[i].node == first->node; i++)
            if (sd->d[i].kind == D_BITS)
                put(o, "%s%s", k++ ? ", " : "", sd->d[i].name);
        put(o, " of ");
        uint32_t last = first->node;
        put(o, "%s", node_name(ref, first->node, nb, sizeof nb));
        for (size_t i = 0; i < sd->n; i++)
            if (sd->d[i].kind == D_BITS && sd->d[i].node != last) {
                last = sd->d[i].node;
                put(o, ", %s", node_name(ref, last, nb, sizeof nb));
            }
        put(o, " diverged first");
        return;
    }
    for (size_t i = 0, k = 0; i < sd->n; i++) {
        const struct diff *d = &sd->d[i];
        if (d->kind != D_BITS)
            continue;
        const char *sep = k++ ? ", " : "";
        if (one_node)
            put(o, "%s%s", sep, d->name);
        else if (one_name)
            put(o, "%s%s%s", k == 1 ? d->name : sep, k == 1 ? " of " : "",
                node_name(ref, d->node, nb, sizeof nb));
        else
            put(o, "%s%s of %s", sep, d->name, node_name(ref, d->node, nb, sizeof nb));
    }
    if (one_node)
        put(o, " of %s", node_name(ref, first->node, nb, sizeof nb));
    put(o, " diverged first");
}

/* One difference, for the list after the head. */
static void put_diff(struct out *o, const struct ckh_job_result *ref, int64_t step, const struct diff *d)
{
    char nb[32];
    const char *node = node_name(ref, d->node, nb, sizeof nb);
    switch (d->kind) {
    case D_BITS:
        put(o, "%s %s ", node, d->name);
        put_bits(o, d->is_value, d->got);
        put(o, ", reference ");
        put_bits(o, d->is_value, d->want);
        break;
    case D_MISSING:
        put(o, "%s did not record %s (reference ", node, d->name);
        put_bits(o, d->is_value, d->want);
        put(o, ")");
        break;
    case D_EXTRA:
        put(o, "%s recorded %s ", node, d->name);
        put_bits(o, d->is_value, d->got);
        put(o, ", which the reference run did not");
        break;
    case D_EPOCH:
        put(o, "%s in epoch %" PRId64 ", reference %" PRId64, node, (int64_t)d->got, (int64_t)d->want);
        break;
    case D_NO_RECORD:
        put(o, "%s recorded no step %" PRId64 " (the reference run did)", node, step);
        break;
    case D_ONLY_GOT:
        put(o, "%s recorded step %" PRId64 ", which the reference run did not", node, step);
        break;
    }
}

/* The head for a step without differing bits: its first difference. */
static void put_head_other(struct out *o, const struct ckh_job_result *ref, const struct diff *d)
{
    char nb[32];
    const char *node = node_name(ref, d->node, nb, sizeof nb);
    switch (d->kind) {
    case D_MISSING: put(o, "%s of %s missing from the resumed run", d->name, node); break;
    case D_EXTRA: put(o, "%s of %s recorded by the resumed run only", d->name, node); break;
    case D_EPOCH: put(o, "epoch of %s diverged first", node); break;
    case D_NO_RECORD: put(o, "%s missing from the resumed run", node); break;
    default: put(o, "%s recorded by the resumed run only", node); break;
    }
}

static void describe(const struct ckh_scenario_run *r, const struct step_diff *sd, char *detail, size_t n)
{
    const struct ckh_job_result *ref = &r->ref.r;
    struct out o = {detail, n, 0};
    bool bits = false;
    for (size_t i = 0; i < sd->n; i++)
        bits |= sd->d[i].kind == D_BITS;
    put(&o, "step %" PRId64 ": ", sd->step);
    if (bits)
        put_diverged(&o, ref, sd);
    else
        put_head_other(&o, ref, &sd->d[0]);
    for (size_t i = 0; i < sd->nequal; i++)
        put(&o, "%s%s%s", i ? ", " : " (", sd->equal[i], i + 1 == sd->nequal ? " equal)" : "");
    for (size_t i = 0; i < sd->n; i++) {
        put(&o, i ? "; " : ": ");
        put_diff(&o, ref, sd->step, &sd->d[i]);
    }
    if (sd->total > sd->n)
        put(&o, "; %zu more difference%s", sd->total - sd->n, sd->total - sd->n == 1 ? "" : "s");
}

/* ---- the check ---- */

/* The first step whose records differ into *sd: false when one does. */
static bool first_step_diff(const struct ckh_scenario_run *r, struct step_diff *sd)
{
    const struct ckh_job_result *want = &r->ref.r, *got = &r->got.r;
    size_t i = 0, j = 0;
    while (i < want->nsteps || j < got->nsteps) {
        int64_t s = i < want->nsteps ? want->steps[i].step : INT64_MAX;
        if (j < got->nsteps && got->steps[j].step < s)
            s = got->steps[j].step;
        size_t ie = i, je = j;
        while (ie < want->nsteps && want->steps[ie].step == s)
            ie++;
        while (je < got->nsteps && got->steps[je].step == s)
            je++;
        CKH_ASSERT(ie > i || je > j); /* s is the smaller head: the merge moves on */
        for (size_t k = j + 1; k < je; k++) /* the record store's order: one record per node and step */
            CKH_ASSERT(got->steps[k - 1].node < got->steps[k].node);
        *sd = (struct step_diff){.step = s};
        compare_step(r, want->steps + i, ie - i, got->steps + j, je - j, sd);
        if (sd->total)
            return false;
        i = ie;
        j = je;
    }
    return true;
}

/* The first step whose records differ: described in detail, false. */
static bool check_steps(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    struct step_diff sd;
    if (first_step_diff(r, &sd))
        return true;
    describe(r, &sd, detail, n);
    *divergent = sd.step;
    return false;
}

/* Epoch e's samples in the reference run, less those of the steps the
 * resumed run restored without a record (their samples were consumed by
 * the killed incarnation, which could not record them). */
static struct ckh_epoch_samples expected_samples(const struct ckh_scenario_run *r, size_t e)
{
    const struct ckh_job_result *want = &r->ref.r;
    struct ckh_epoch_samples w = want->samples[e];
    for (size_t i = 0; i < want->nsteps && r->got.r.nrestored; i++) {
        const struct ckh_step_record *st = &want->steps[i];
        if (st->epoch == w.epoch && restored(&r->got.r, st->node, st->step)) {
            w.count -= st->nids;
            w.multiset -= st->multiset;
        }
    }
    return w;
}

/* The first epoch whose samples differ from the reference's, or -1. */
static int64_t first_samples_diff(const struct ckh_scenario_run *r, struct ckh_epoch_samples *w_out)
{
    const struct ckh_job_result *want = &r->ref.r, *got = &r->got.r;
    for (size_t i = 0; i < want->nsamples && i < got->nsamples; i++) {
        const struct ckh_epoch_samples w = expected_samples(r, i), *g = &got->samples[i];
        if (w.count != g->count || w.multiset != g->multiset) {
            *w_out = w;
            return (int64_t)i;
        }
    }
    return -1;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    const struct ckh_job_result *want = &r->ref.r, *got = &r->got.r;
    if (!check_steps(r, detail, n, divergent))
        return false;
    struct ckh_epoch_samples w;
    int64_t e = first_samples_diff(r, &w);
    if (e >= 0) {
        const struct ckh_epoch_samples *g = &got->samples[e];
        snprintf(detail, n,
                 "epoch %" PRId64 ": samples skipped or repeated: consumed %" PRIu64
                 " samples (multiset %016" PRIx64 "), reference %" PRIu64 " (%016" PRIx64 ")",
                 w.epoch, g->count, g->multiset, w.count, w.multiset);
        return false;
    }
    int k = snprintf(detail, n, "%zu step records and %zu epochs identical to the uninterrupted run",
                     want->nsteps, want->nsamples);
    if (got->nrestored && k > 0 && (size_t)k < n)
        snprintf(detail + k, n - (size_t)k, " (%zu step%s restored from a checkpoint saved just before a kill, "
                 "without a record of %s)", got->nrestored, got->nrestored == 1 ? "" : "s",
                 got->nrestored == 1 ? "its own" : "their own");
    return true;
}

/* The words ckh__resume_first_divergence gives a difference. */
static void diff_words(const struct diff *d, char *buf, size_t n)
{
    switch (d->kind) {
    case D_BITS: snprintf(buf, n, "%s", d->name); break;
    case D_MISSING: snprintf(buf, n, "missing %s", d->name); break;
    case D_EXTRA: snprintf(buf, n, "extra %s", d->name); break;
    case D_EPOCH: snprintf(buf, n, "epoch"); break;
    case D_NO_RECORD: snprintf(buf, n, "no record"); break;
    default: snprintf(buf, n, "extra record"); break;
    }
}

int64_t ckh__resume_first_divergence(const struct ckh_scenario_run *r, char *buf, size_t n)
{
    CKH_ASSERT(r && buf && n > 0);
    buf[0] = '\0';
    if (!r->ref_ok || r->ref.r.nsteps + r->got.r.nsteps == 0 || ckh_oracle_resizes(r))
        return -1;
    struct step_diff sd;
    if (first_step_diff(r, &sd)) {
        struct ckh_epoch_samples w;
        int64_t e = first_samples_diff(r, &w);
        if (e >= 0)
            snprintf(buf, n, "samples");
        return e >= 0 ? w.epoch : -1;
    }
    /* Sorted and distinct: a selection of the smallest word greater than
     * the last one written, over the kept differences. */
    char last[CKH_RECORD_NAME_MAX + 16] = "";
    size_t used = 0;
    for (bool any = true; any;) {
        any = false;
        char best[sizeof last] = "";
        for (size_t i = 0; i < sd.n; i++) {
            char w[sizeof last];
            diff_words(&sd.d[i], w, sizeof w);
            if ((!used || strcmp(w, last) > 0) && (!any || strcmp(w, best) < 0)) {
                memcpy(best, w, sizeof best);
                any = true;
            }
        }
        if (any) {
            int k = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", best);
            used = k > 0 && used + (size_t)k < n ? used + (size_t)k : n - 1;
            memcpy(last, best, sizeof last);
        }
    }
    return sd.step;
}

const struct ckh_oracle_ops ckh__oracle_resume = {
    .name = "resume-equivalence",
    .description = "a resumed training run is bit-identical to the uninterrupted one, quantity by quantity",
    .applies = applies,
    .check = check,
};
