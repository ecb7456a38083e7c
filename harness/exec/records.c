/* The record store (exec/records.h): what the nodes of one job instance
 * reported, over all its runs, and the job result the oracles judge.
 *
 * Storage: growable arrays outside simulated node memory. Step records
 * keep their run, node, step and epoch, and index ranges into a pool of
 * quantities and a pool of sample ids. A node's latest final record
 * replaces the earlier ones (its values in a pool of their own, rebuilt at
 * collect). Saves are only counted.
 *
 * Supersession (exec/records.h) is applied at collect time, so the order
 * in which nodes report within a run does not matter: for each run r and
 * node n that recorded a resume at step s in r, n's step records of runs
 * before r with a step after s are dropped; in a collective job a node
 * that recorded nothing in r while others resumed (a parked node) loses
 * its records past the earliest resume step of r.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/rng.h"
#include "exec/records.h"

#define COUNTS_MAX (1u << 22) /* per-id sample counts kept up to epochs * dataset size */

struct rstep {
    int run;          /* run that recorded it */
    uint32_t node;    /* node index */
    int64_t step;     /* global step */
    int64_t epoch;    /* epoch */
    size_t qfirst;    /* quantities: s->q[qfirst .. qfirst + qcount) */
    uint32_t qcount;
    size_t sfirst;    /* sample ids: s->ids[sfirst .. sfirst + scount) */
    size_t scount;
};

struct rresume {
    int run;       /* run that recorded it */
    uint32_t node; /* node index */
    int64_t step;  /* resume point */
    int64_t epoch;
};

struct rnode {
    struct ckh_records *store;    /* back pointer for the table */
    struct ckh_record table;      /* env->record of this node */
    size_t index;                 /* node index */
    bool has_final;               /* a final record arrived */
    int final_run;                /* in which run */
    int64_t epochs, steps, total; /* its fields */
    bool has_digest;
    uint64_t digest;
    struct ckh_step_quantity values[CKH_RECORD_FIELDS_MAX]; /* its values */
    uint32_t nvalues;
    char blobs[CKH_BLOBS_LEN];    /* its blob names, sorted, comma-separated */
    int last_run;                 /* last run the node recorded anything in (0: none) */
    uint64_t saves_failed;        /* failed saves, all runs */
    uint64_t saves_failed_unfaulted;
    char first_failed_save[256];
    char first_refused[256];      /* the first record the wrappers refused ("" if none) */
};

struct ckh_records {
    size_t nnodes;
    unsigned flags;
    int run;                       /* current run (1-based; 0 before begin_run) */
    bool (*fired)(void *ctx);      /* fault probe (NULL: no faults) */
    void *fired_ctx;
    struct rnode *nodes;           /* [nnodes] */
    struct rstep *steps;           /* every step record */
    size_t nsteps, capsteps;
    struct ckh_step_quantity *q;   /* quantity pool */
    size_t nq, capq;
    uint64_t *ids;                 /* sample id pool */
    size_t nids, capids;
    struct rresume *resumes;       /* every resume record */
    size_t nresumes, capresumes;
    bool oom;                      /* a record could not be kept (collect refuses) */
    /* What the last collect handed out. */
    struct ckh_node_result *out_nodes;
    struct ckh_step_record *out_steps;
    struct ckh_step_quantity *out_q;
    struct ckh_step_quantity *out_values;
    struct ckh_epoch_samples *out_samples;
    uint32_t *out_counts;
    int *out_world;
    struct ckh_step_key *out_restored;
};

/* ---- growable arrays ---- */

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / size)
            return CKH_ENOMEM;
        nc *= 2;
    }
    void *p = realloc(*v, nc * size);
    if (!p)
        return CKH_ENOMEM;
    *v = p;
    *cap = nc;
    return 0;
}

#define GROW(arr, n, cap, more) grow((void **)&(arr), &(cap), (n) + (more), sizeof *(arr))

static struct rnode *node_at(struct ckh_records *s, size_t node)
{
    struct rnode *n = s && node < s->nnodes ? &s->nodes[node] : NULL;
    CKH_ASSERT(!n || (n->store == s && n->index == node && n->last_run <= s->run));
    return n;
}

/* v's bits, compared bit for bit; every NaN as one quiet NaN (a NaN loss
 * equals a NaN loss whatever its sign or payload). */
static uint64_t value_bits(double v)
{
    uint64_t b;
    if (isnan(v))
        v = NAN;
    memcpy(&b, &v, sizeof b);
    return b;
}

static void quantity(struct ckh_step_quantity *q, const char *name, bool is_value, uint64_t bits)
{
    memset(q, 0, sizeof *q);
    snprintf(q->name, sizeof q->name, "%s", name);
    q->is_value = is_value;
    q->bits = bits;
}

/* ---- adding records ---- */

int ckh_records_add_step(struct ckh_records *s, size_t node, const struct ckh_rec_step *r)
{
    struct rnode *n = node_at(s, node);
    int rc;
    if (!n || !r)
        return CKH_EINVAL;
    if ((rc = ckh_record_check_step(r)) != 0)
        return rc;
    size_t nq = r->ndigests + r->nvalues;
    CKH_ASSERT(s->run >= 1 && r->step >= 1 && r->epoch >= 0 && nq <= 2 * CKH_RECORD_FIELDS_MAX);
    if ((rc = GROW(s->steps, s->nsteps, s->capsteps, 1)) != 0 || (rc = GROW(s->q, s->nq, s->capq, nq)) != 0 ||
        (rc = GROW(s->ids, s->nids, s->capids, r->nsamples)) != 0) {
        s->oom = true;
        return rc;
    }
    struct rstep *st = &s->steps[s->nsteps++];
    *st = (struct rstep){.run = s->run, .node = (uint32_t)node, .step = r->step, .epoch = r->epoch,
                         .qfirst = s->nq, .qcount = (uint32_t)nq, .sfirst = s->nids, .scount = r->nsamples};
    for (size_t i = 0; i < r->ndigests; i++)
        quantity(&s->q[s->nq++], r->digests[i].name, false, r->digests[i].digest);
    for (size_t i = 0; i < r->nvalues; i++)
        quantity(&s->q[s->nq++], r->values[i].name, true, value_bits(r->values[i].value));
    if (r->nsamples)
        memcpy(s->ids + s->nids, r->samples, r->nsamples * sizeof *r->samples);
    s->nids += r->nsamples;
    CKH_ASSERT(s->nq == st->qfirst + st->qcount && s->nq <= s->capq && s->nids <= s->capids &&
               s->nsteps <= s->capsteps);
    n->last_run = s->run;
    return 0;
}

int ckh_records_add_resume(struct ckh_records *s, size_t node, const struct ckh_rec_resume *r)
{
    struct rnode *n = node_at(s, node);
    int rc;
    if (!n || !r)
        return CKH_EINVAL;
    if ((rc = ckh_record_check_resume(r)) != 0)
        return rc;
    if ((rc = GROW(s->resumes, s->nresumes, s->capresumes, 1)) != 0) {
        s->oom = true;
        return rc;
    }
    CKH_ASSERT(s->run >= 1 && r->step >= 0 && r->epoch >= 0);
    s->resumes[s->nresumes++] = (struct rresume){.run = s->run, .node = (uint32_t)node, .step = r->step,
                                                 .epoch = r->epoch};
    n->last_run = s->run;
    return 0;
}

int ckh_records_add_save(struct ckh_records *s, size_t node, const struct ckh_rec_save *r)
{
    struct rnode *n = node_at(s, node);
    if (!n || !r || ckh_record_check_save(r) != 0)
        return CKH_EINVAL;
    n->last_run = s->run;
    if (r->rc == 0)
        return 0;
    CKH_ASSERT(r->rc < 0); /* ckh_record_check_save refuses a positive code */
    n->saves_failed++;
    bool blamed = s->fired && s->fired(s->fired_ctx);
    if (!blamed)
        n->saves_failed_unfaulted++;
    CKH_ASSERT(n->saves_failed_unfaulted <= n->saves_failed);
    if (!n->first_failed_save[0])
        snprintf(n->first_failed_save, sizeof n->first_failed_save, "run %d, step %" PRId64 " (epoch %" PRId64
                 "): %s%s%s", s->run, r->step, r->epoch, ckh_err_name(r->rc), r->what && r->what[0] ? ": " : "",
                 r->what ? r->what : "");
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The blob names sorted and comma-separated into buf; CKH_ELIMIT when they
 * do not fit. */
static int format_blobs(const char *const *blobs, size_t n, char *buf, size_t len)
{
    const char *sorted[256];
    size_t at = 0;
    buf[0] = '\0';
    if (n > sizeof sorted / sizeof sorted[0])
        return CKH_ELIMIT;
    for (size_t i = 0; i < n; i++)
        sorted[i] = blobs[i];
    qsort(sorted, n, sizeof sorted[0], cmp_str);
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? "," : "", sorted[i]);
        if (w < 0 || (size_t)w >= len - at)
            return CKH_ELIMIT;
        at += (size_t)w;
    }
    return 0;
}

int ckh_records_add_final(struct ckh_records *s, size_t node, const struct ckh_rec_final *r)
{
    struct rnode *n = node_at(s, node);
    int rc;
    if (!n || !r)
        return CKH_EINVAL;
    if ((rc = ckh_record_check_final(r)) != 0)
        return rc;
    char blobs[CKH_BLOBS_LEN] = {0}; /* whole: the job result is written to the cache as bytes */
    if ((rc = format_blobs(r->blobs, r->nblobs, blobs, sizeof blobs)) != 0)
        return rc;
    CKH_ASSERT(r->nvalues <= CKH_RECORD_FIELDS_MAX); /* ckh_record_check_final: fits n->values */
    n->has_final = true;
    n->final_run = s->run;
    n->epochs = r->epochs;
    n->steps = r->steps;
    n->total = r->total;
    n->has_digest = r->has_digest;
    n->digest = r->digest;
    n->nvalues = (uint32_t)r->nvalues;
    for (size_t i = 0; i < r->nvalues; i++)
        quantity(&n->values[i], r->values[i].name, true, value_bits(r->values[i].value));
    memcpy(n->blobs, blobs, sizeof blobs);
    n->last_run = s->run;
    return 0;
}

/* ---- the table handed to a node ---- */

static struct rnode *table_node(struct ckh_record *r)
{
    return (struct rnode *)((char *)r - offsetof(struct rnode, table));
}

static int t_step(struct ckh_record *r, const struct ckh_rec_step *x)
{
    struct rnode *n = table_node(r);
    return ckh_records_add_step(n->store, n->index, x);
}

static int t_resume(struct ckh_record *r, const struct ckh_rec_resume *x)
{
    struct rnode *n = table_node(r);
    return ckh_records_add_resume(n->store, n->index, x);
}

static int t_save(struct ckh_record *r, const struct ckh_rec_save *x)
{
    struct rnode *n = table_node(r);
    return ckh_records_add_save(n->store, n->index, x);
}

static int t_final(struct ckh_record *r, const struct ckh_rec_final *x)
{
    struct rnode *n = table_node(r);
    return ckh_records_add_final(n->store, n->index, x);
}

static const char *const kind_names[] = {[CKH_REC_STEP] = "step", [CKH_REC_RESUME] = "resume",
                                         [CKH_REC_SAVE] = "save", [CKH_REC_FINAL] = "final"};

/* The first record a node's wrappers refused, kept to name it when the
 * node fails for it. */
static void t_refused(struct ckh_record *r, enum ckh_rec_kind kind, const char *why)
{
    struct rnode *n = table_node(r);
    if (n->first_refused[0])
        return;
    snprintf(n->first_refused, sizeof n->first_refused, "run %d: its %s record was refused: %s", n->store->run,
             kind >= CKH_REC_STEP && kind <= CKH_REC_FINAL ? kind_names[kind] : "?", why);
}

static const struct ckh_record_ops table_ops = {
    .version = 2,
    .step = t_step,
    .resume = t_resume,
    .save = t_save,
    .final = t_final,
    .refused = t_refused,
};

/* ---- the JSON-lines feed ---- */

struct jsonl_ctx {
    struct ckh_records *s; /* where records go */
    size_t node;           /* whose they are */
};

static int jsonl_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    struct jsonl_ctx *j = ctx;
    switch (kind) {
    case CKH_REC_STEP: return ckh_records_add_step(j->s, j->node, rec);
    case CKH_REC_RESUME: return ckh_records_add_resume(j->s, j->node, rec);
    case CKH_REC_SAVE: return ckh_records_add_save(j->s, j->node, rec);
    case CKH_REC_FINAL: return ckh_records_add_final(j->s, j->node, rec);
    }
    return CKH_EINVAL;
}

int ckh_records_read_jsonl(struct ckh_records *s, size_t node, const char *text, size_t n, const char *file,
                           char *msg, size_t msglen)
{
    if (!node_at(s, node) || (n && !text))
        return CKH_EINVAL;
    /* A program killed while writing leaves its last line unterminated: a
     * record not fully written was never made. */
    while (n > 0 && text[n - 1] != '\n')
        n--;
    struct jsonl_ctx j = {s, node};
    return ckh_record_jsonl_parse(text, n, file, jsonl_sink, &j, msg, msglen);
}

/* ---- life ---- */

int ckh_records_create(size_t nnodes, unsigned flags, struct ckh_records **out)
{
    if (!out || nnodes == 0)
        return CKH_EINVAL;
    struct ckh_records *s = calloc(1, sizeof *s);
    if (!s)
        return CKH_ENOMEM;
    s->nodes = calloc(nnodes, sizeof *s->nodes);
    if (!s->nodes) {
        free(s);
        return CKH_ENOMEM;
    }
    s->nnodes = nnodes;
    s->flags = flags;
    s->run = 1;
    for (size_t i = 0; i < nnodes; i++) {
        s->nodes[i].store = s;
        s->nodes[i].index = i;
        s->nodes[i].table.ops = &table_ops;
    }
    *out = s;
    return 0;
}

static void free_out(struct ckh_records *s)
{
    free(s->out_nodes);
    free(s->out_steps);
    free(s->out_q);
    free(s->out_values);
    free(s->out_samples);
    free(s->out_counts);
    free(s->out_world);
    free(s->out_restored);
    s->out_restored = NULL;
    s->out_nodes = NULL;
    s->out_steps = NULL;
    s->out_q = NULL;
    s->out_values = NULL;
    s->out_samples = NULL;
    s->out_counts = NULL;
    s->out_world = NULL;
}

void ckh_records_destroy(struct ckh_records *s)
{
    if (!s)
        return;
    free_out(s);
    free(s->steps);
    free(s->q);
    free(s->ids);
    free(s->resumes);
    free(s->nodes);
    free(s);
}

void ckh_records_begin_run(struct ckh_records *s, int run)
{
    /* Runs only move forward: supersession compares run numbers. */
    CKH_ASSERT(!s || run < 1 || run >= s->run);
    if (s && run >= 1)
        s->run = run;
}

void ckh_records_set_fault_probe(struct ckh_records *s, bool (*fired)(void *ctx), void *ctx)
{
    if (!s)
        return;
    s->fired = fired;
    s->fired_ctx = ctx;
}

struct ckh_record *ckh_records_table(struct ckh_records *s, size_t node)
{
    struct rnode *n = node_at(s, node);
    return n ? &n->table : NULL;
}

/* ---- collecting ---- */

/* Whether step record st is superseded by a later run's resume. */
static bool superseded(const struct ckh_records *s, const struct rstep *st)
{
    for (size_t i = 0; i < s->nresumes; i++) {
        const struct rresume *r = &s->resumes[i];
        if (r->run <= st->run || st->step <= r->step)
            continue;
        if (r->node == st->node)
            return true;
        /* Collective job: a node silent in r (parked) loses its future too. */
        if ((s->flags & CKH_RECORDS_COLLECTIVE) && s->nodes[st->node].last_run < r->run)
            return true;
    }
    return false;
}

/* A step record's sort key: (node, step, run, index). */
struct skey {
    uint32_t node;
    int run;
    int64_t step;
    size_t index;
};

static int cmp_skey(const void *a, const void *b)
{
    const struct skey *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* live[i]: step record i survives supersession, and no later record of
 * the same node and step (a step replayed without a resume record)
 * replaces it. */
static int mark_live(const struct ckh_records *s, bool *live)
{
    struct skey *ix = malloc((s->nsteps ? s->nsteps : 1) * sizeof *ix);
    if (!ix)
        return CKH_ENOMEM;
    for (size_t i = 0; i < s->nsteps; i++)
        ix[i] = (struct skey){s->steps[i].node, s->steps[i].run, s->steps[i].step, i};
    qsort(ix, s->nsteps, sizeof *ix, cmp_skey);
    for (size_t k = 0; k < s->nsteps; k++) {
        /* per node, steps ascending; a step recorded twice: the later run last */
        CKH_ASSERT(k == 0 || cmp_skey(&ix[k - 1], &ix[k]) < 0);
        CKH_ASSERT(k == 0 || ix[k - 1].node != ix[k].node || ix[k - 1].step != ix[k].step ||
                   ix[k - 1].run <= ix[k].run);
        bool replaced = k + 1 < s->nsteps && ix[k + 1].node == ix[k].node && ix[k + 1].step == ix[k].step;
        live[ix[k].index] = !replaced && !superseded(s, &s->steps[ix[k].index]);
    }
    free(ix);
    return 0;
}

static int cmp_step(const void *a, const void *b)
{
    const struct ckh_step_record *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

#ifdef CKH_SLOW_ASSERTS
/* Slow check of supersession: no live step record of a node lies after a
 * resume point that the node recorded in a later run. */
static bool supersession_ok(const struct ckh_records *s, const bool *live)
{
    for (size_t i = 0; i < s->nsteps; i++) {
        const struct rstep *st = &s->steps[i];
        for (size_t k = 0; live[i] && k < s->nresumes; k++) {
            const struct rresume *r = &s->resumes[k];
            if (r->node == st->node && r->run > st->run && st->step > r->step)
                return false;
        }
    }
    return true;
}
#endif

/* The digest of one step record: its quantities in recorded order. */
static uint64_t step_digest(const struct ckh_step_quantity *q, size_t n)
{
    uint64_t h = CKH_HASH_INIT;
    for (size_t i = 0; i < n; i++) {
        h = ckh_hash64(h, q[i].name, strlen(q[i].name) + 1);
        uint64_t v[2] = {q[i].is_value, q[i].bits};
        h = ckh_hash64(h, v, sizeof v);
    }
    return h;
}

/* The live step records, sorted, with their quantities; live[] marks
 * which of s->steps survived. */
static int collect_steps(struct ckh_records *s, bool *live, struct ckh_job_result *out)
{
    size_t n = 0, nq = 0;
    int rc = mark_live(s, live);
    if (rc)
        return rc;
    for (size_t i = 0; i < s->nsteps; i++) {
        if (live[i]) {
            n++;
            nq += s->steps[i].qcount;
        }
    }
    s->out_steps = calloc(n ? n : 1, sizeof *s->out_steps);
    s->out_q = calloc(nq ? nq : 1, sizeof *s->out_q);
    if (!s->out_steps || !s->out_q)
        return CKH_ENOMEM;
    size_t k = 0, at = 0;
    for (size_t i = 0; i < s->nsteps; i++) {
        if (!live[i])
            continue;
        const struct rstep *st = &s->steps[i];
        struct ckh_step_record *o = &s->out_steps[k++];
        o->step = st->step;
        o->epoch = st->epoch;
        o->node = st->node;
        o->first = (uint32_t)at;
        o->count = st->qcount;
        if (st->qcount) /* steps without quantities: s->q may be NULL */
            memcpy(s->out_q + at, s->q + st->qfirst, st->qcount * sizeof *s->out_q);
        o->digest = step_digest(s->out_q + at, st->qcount);
        o->nids = st->scount;
        for (size_t j = 0; j < st->scount; j++)
            o->multiset += ckh_mix64(s->ids[st->sfirst + j] + 1);
        at += st->qcount;
    }
    CKH_ASSERT(k == n && at == nq);
    CKH_ASSERT_SLOW(supersession_ok(s, live));
    qsort(s->out_steps, n, sizeof *s->out_steps, cmp_step);
    /* One live record per (node, step): the order qsort gives is the only one. */
    for (size_t i = 1; i < n; i++)
        CKH_ASSERT(cmp_step(&s->out_steps[i - 1], &s->out_steps[i]) < 0);
    out->steps = s->out_steps;
    out->nsteps = n;
    out->quantities = s->out_q;
    out->nquantities = nq;
    return 0;
}

static int cmp_step_key(const void *a, const void *b)
{
    const struct ckh_step_key *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Whether the collected steps hold node's record of step. */
static bool has_step(const struct ckh_job_result *out, uint32_t node, int64_t step)
{
    struct ckh_step_record key = {.step = step, .node = node};
    return bsearch(&key, out->steps, out->nsteps, sizeof *out->steps, cmp_step) != NULL;
}

/* The steps a node's later incarnation resumed after without any record
 * of them (out->restored, sorted): the node saved the step's checkpoint
 * and was killed before its step record. The resume-equivalence oracle
 * does not count them missing; the records after them still show whether
 * the restored state was the step's. */
static bool restored_unrecorded(const struct ckh_records *s, const struct ckh_job_result *out, size_t i)
{
    const struct rresume *r = &s->resumes[i];
    if (r->step < 1 || has_step(out, r->node, r->step))
        return false;
    for (size_t k = 0; k < s->nresumes; k++) /* a later run of the node went back before it */
        if (s->resumes[k].node == r->node && s->resumes[k].run > r->run && s->resumes[k].step < r->step)
            return false;
    return true;
}

static int collect_restored(struct ckh_records *s, struct ckh_job_result *out)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nresumes; i++)
        n += restored_unrecorded(s, out, i);
    if (!n)
        return 0;
    if (!(s->out_restored = calloc(n, sizeof *s->out_restored)))
        return CKH_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < s->nresumes; i++)
        if (restored_unrecorded(s, out, i))
            s->out_restored[k++] = (struct ckh_step_key){.step = s->resumes[i].step, .node = s->resumes[i].node};
    qsort(s->out_restored, n, sizeof *s->out_restored, cmp_step_key);
    size_t u = 0; /* one entry per (step, node): two resumes after one step count once */
    for (size_t i = 0; i < n; i++)
        if (!u || cmp_step_key(&s->out_restored[u - 1], &s->out_restored[i]) != 0)
            s->out_restored[u++] = s->out_restored[i];
    out->restored = s->out_restored;
    out->nrestored = u;
    return 0;
}

/* A final value of any node by name (0 when absent). */
static double final_value(const struct ckh_records *s, const char *name)
{
    for (size_t i = 0; i < s->nnodes; i++)
        for (uint32_t k = 0; k < s->nodes[i].nvalues; k++)
            if (strcmp(s->nodes[i].values[k].name, name) == 0) {
                double v;
                memcpy(&v, &s->nodes[i].values[k].bits, sizeof v);
                return v;
            }
    return 0;
}

/* Per epoch: count and order-independent digest of the consumed ids, the
 * per-id counts (when the dataset size is known and small enough) and the
 * ranks that ran each epoch's first step. */
static int collect_samples(struct ckh_records *s, const bool *live, struct ckh_job_result *out)
{
    int64_t epochs = 0;
    for (size_t i = 0; i < s->nsteps; i++)
        if (live[i] && s->steps[i].epoch + 1 > epochs)
            epochs = s->steps[i].epoch + 1;
    if (epochs == 0)
        return 0;
    double ds = final_value(s, "dataset_size");
    uint64_t dataset = ds >= 1 && ds <= (double)COUNTS_MAX ? (uint64_t)ds : 0;
    bool counted = dataset && (uint64_t)epochs * dataset <= COUNTS_MAX;
    s->out_samples = calloc((size_t)epochs, sizeof *s->out_samples);
    s->out_world = calloc((size_t)epochs, sizeof *s->out_world);
    if (counted)
        s->out_counts = calloc((size_t)epochs * dataset, sizeof *s->out_counts);
    if (!s->out_samples || !s->out_world || (counted && !s->out_counts))
        return CKH_ENOMEM;
    int64_t *first = malloc((size_t)epochs * sizeof *first);
    if (!first)
        return CKH_ENOMEM;
    for (int64_t e = 0; e < epochs; e++) {
        s->out_samples[e].epoch = e;
        first[e] = INT64_MAX;
    }
    for (size_t i = 0; i < s->nsteps; i++) {
        if (!live[i])
            continue;
        const struct rstep *st = &s->steps[i];
        CKH_ASSERT(st->epoch >= 0 && st->epoch < epochs && st->sfirst + st->scount <= s->nids);
        struct ckh_epoch_samples *es = &s->out_samples[st->epoch];
        if (st->step < first[st->epoch])
            first[st->epoch] = st->step;
        for (size_t j = 0; j < st->scount; j++) {
            uint64_t id = s->ids[st->sfirst + j];
            es->count++;
            es->multiset += ckh_mix64(id + 1); /* as ckh_step_record.multiset */
            if (counted && id < dataset)
                s->out_counts[(uint64_t)st->epoch * dataset + id]++;
        }
    }
    for (size_t i = 0; i < s->nsteps; i++)
        if (live[i] && s->steps[i].step == first[s->steps[i].epoch])
            s->out_world[s->steps[i].epoch]++;
    /* One live record per (node, step): an epoch's first step was run by
     * between one and every node, and only an epoch nobody ran has none. */
    for (int64_t e = 0; e < epochs; e++)
        CKH_ASSERT((s->out_world[e] >= 1) == (first[e] != INT64_MAX) && (size_t)s->out_world[e] <= s->nnodes);
    free(first);
    out->samples = s->out_samples;
    out->nsamples = (size_t)epochs;
    out->sample_counts = s->out_counts;
    out->dataset_size = counted ? dataset : 0;
    out->epoch_world = s->out_world;
    out->drop_last = final_value(s, "drop_last") != 0;
    return 0;
}

static bool rc_is_corruption(int rc)
{
    return rc == CKH_ECORRUPT || rc == CKH_ETRUNCATED || rc == CKH_EFOREIGN || rc == CKH_EVERSION;
}

/* The resume point of node i in the last run it recorded in (-1: scratch). */
static int64_t resumed_from(const struct ckh_records *s, size_t i)
{
    int64_t at = -1;
    for (size_t k = 0; k < s->nresumes; k++) {
        const struct rresume *r = &s->resumes[k];
        if (r->node == i && r->run == s->nodes[i].last_run)
            at = (s->flags & CKH_RECORDS_STEP_BASED) ? r->step : r->epoch;
    }
    return at;
}

static int collect_nodes(struct ckh_records *s, const char *const *names, const int *rc,
                         struct ckh_job_result *out)
{
    size_t nv = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        nv += s->nodes[i].nvalues;
    s->out_nodes = calloc(s->nnodes, sizeof *s->out_nodes);
    s->out_values = calloc(nv ? nv : 1, sizeof *s->out_values);
    if (!s->out_nodes || !s->out_values)
        return CKH_ENOMEM;
    size_t at = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        const struct rnode *n = &s->nodes[i];
        struct ckh_node_result *o = &s->out_nodes[i];
        snprintf(o->node, sizeof o->node, "%s", names && names[i] ? names[i] : "?");
        o->finished = n->has_final;
        o->rc = rc ? rc[i] : 0;
        o->epochs = n->epochs;
        o->steps = n->steps;
        o->total = n->total;
        o->digest = n->has_digest ? n->digest : 0;
        memcpy(o->blobs, n->blobs, sizeof o->blobs);
        o->resumed_from = resumed_from(s, i);
        o->saves_failed = n->saves_failed;
        o->saves_failed_unfaulted = n->saves_failed_unfaulted;
        memcpy(o->first_failed_save, n->first_failed_save, sizeof o->first_failed_save);
        memcpy(o->refused, n->first_refused, sizeof o->refused);
        o->vfirst = (uint32_t)at;
        o->vcount = n->nvalues;
        if (n->nvalues) /* a node without values may hold none at all */
            memcpy(s->out_values + at, n->values, n->nvalues * sizeof *s->out_values);
        at += n->nvalues;
        CKH_ASSERT(at <= nv);
        if (rc_is_corruption(o->rc))
            out->corruption_detected = true;
        if (o->rc == CKH_EOOM_DEVICE)
            out->device_oom = true;
    }
    CKH_ASSERT(at == nv);
    out->nodes = s->out_nodes;
    out->nnodes = s->nnodes;
    out->final_values = s->out_values;
    out->nfinal_values = nv;
    return 0;
}

int ckh_records_collect(struct ckh_records *s, const char *const *names, const int *rc,
                        struct ckh_job_result *out)
{
    if (!s || !out)
        return CKH_EINVAL;
    memset(out, 0, sizeof *out);
    free_out(s);
    if (s->oom) /* the job's records are incomplete: nothing to judge */
        return CKH_ENOMEM;
    bool *live = calloc(s->nsteps ? s->nsteps : 1, sizeof *live);
    if (!live)
        return CKH_ENOMEM;
    int err = collect_nodes(s, names, rc, out);
    if (!err)
        err = collect_steps(s, live, out);
    if (!err)
        err = collect_samples(s, live, out);
    if (!err)
        err = collect_restored(s, out);
    free(live);
    return err;
}

const char *ckh_node_name_at(const void *names, int i)
{
    const char(*table)[CKH_NODE_NAME_LEN] = names;
    return table[i];
}
