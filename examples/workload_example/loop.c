/* example-loop: a small data-parallel training loop written as a ckh
 * workload plugin, against ckh's public headers only. It is the template
 * docs/WORKLOADS.md walks through.
 *
 * The job: `nodes` ranks worker_0 .. worker_<W-1> train a linear model of
 * `dim` weights on a synthetic dataset of `samples` ids. Per step each
 * rank reads `batch` ids from its own sampler (a fresh shuffle per epoch,
 * seeded from the run's seed), computes its gradient plus noise from its
 * own RNG (xorshift64*, seeded from ckh_rand_stream_seed), and the ranks
 * sum gradients and loss with one all-reduce (in rank order, so the sum is
 * bit-identical however the ranks interleave). SGD with momentum applies
 * the learning rate of the loop's own schedule (linear warm-up, then step
 * decay). Every `checkpoint_every.steps` steps each rank saves its state
 * through the loop's own directory saver (loop_ckpt.c).
 *
 * What ckh sees: after every step, env->record gets the step's digests
 * ("sampler", "rng", "sched", "optim", "weights", in that order: the
 * inputs of a step before what they produce), values "lr" and "loss", and
 * the sample ids the rank read; a resume record when a rank restored a
 * checkpoint; a save record per save attempt; a final record. The oracles
 * compare these with an uninterrupted run of the same job; nothing here
 * tells ckh whether the loop is right.
 *
 * Sections: options; the job (create, nodes); RNG, sampler, schedule,
 * model; one step; node main; the ops table.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/record.h"
#include "example.h"

/* ---- options ---- */

/* Defaults of job.options (docs/WORKLOADS.md lists them). */
static const struct ex_config defaults = {
    .samples = 24,
    .batch = 2,
    .dim = 4,
    .lr = 0.1f,
    .warmup_steps = 3,
    .decay_every = 5,
    .decay = 0.5f,
    .momentum = 0.9f,
    .noise = 0.01f,
    .keep_last = 2,
};

static const char *const known_options = "samples, batch, dim, lr, warmup_steps, decay_every, "
                                          "decay, momentum, noise, keep_last, async_save";

static int opt_int(const struct ckh_wl_option *o, int64_t lo, int64_t hi, int64_t *out, char *msg,
                   size_t n)
{
    char what[96];
    if (o->type != CKH_WL_OPT_INT || o->i < lo || o->i > hi) {
        snprintf(what, sizeof what, "expected an integer in %" PRId64 "..%" PRId64, lo, hi);
        return ckh_wl_option_error(msg, n, o, what);
    }
    *out = o->i;
    return 0;
}

static int opt_float(const struct ckh_wl_option *o, double lo, double hi, float *out, char *msg,
                     size_t n)
{
    char what[96];
    bool num = o->type == CKH_WL_OPT_FLOAT || o->type == CKH_WL_OPT_INT;
    if (!num || !(o->f >= lo && o->f <= hi)) {
        snprintf(what, sizeof what, "expected a number in [%g, %g]", lo, hi);
        return ckh_wl_option_error(msg, n, o, what);
    }
    *out = (float)o->f;
    return 0;
}

/* Reads one job.options entry into c. */
static int read_option(struct ex_config *c, const struct ckh_wl_option *o, char *msg, size_t n)
{
    int64_t v = 0;
    int rc = 0;
    const char *k = o->key;
    if (!strcmp(k, "samples")) {
        if (!(rc = opt_int(o, 1, 1000000, &v, msg, n)))
            c->samples = (uint32_t)v;
    } else if (!strcmp(k, "batch")) {
        if (!(rc = opt_int(o, 1, EX_BATCH_MAX, &v, msg, n)))
            c->batch = (uint32_t)v;
    } else if (!strcmp(k, "dim")) {
        if (!(rc = opt_int(o, 1, EX_DIM_MAX, &v, msg, n)))
            c->dim = (uint32_t)v;
    } else if (!strcmp(k, "warmup_steps")) {
        rc = opt_int(o, 0, 1000000, &c->warmup_steps, msg, n);
    } else if (!strcmp(k, "decay_every")) {
        rc = opt_int(o, 1, 1000000, &c->decay_every, msg, n);
    } else if (!strcmp(k, "keep_last")) {
        if (!(rc = opt_int(o, 0, 1000, &v, msg, n)))
            c->keep_last = (int)v;
    } else if (!strcmp(k, "lr")) {
        rc = opt_float(o, 1e-6, 10.0, &c->lr, msg, n);
    } else if (!strcmp(k, "decay")) {
        rc = opt_float(o, 1e-3, 1.0, &c->decay, msg, n);
    } else if (!strcmp(k, "momentum")) {
        rc = opt_float(o, 0.0, 0.999, &c->momentum, msg, n);
    } else if (!strcmp(k, "noise")) {
        rc = opt_float(o, 0.0, 1.0, &c->noise, msg, n);
    } else if (!strcmp(k, "async_save")) {
        if (o->type != CKH_WL_OPT_BOOL)
            rc = ckh_wl_option_error(msg, n, o, "expected true or false");
        else
            c->async_save = o->b;
    } else {
        char what[160];
        snprintf(what, sizeof what, "unknown option (known: %s)", known_options);
        rc = ckh_wl_option_error(msg, n, o, what);
    }
    return rc;
}

/* ---- the job ---- */

int64_t ex_steps_per_epoch(const struct ex_config *c)
{
    uint64_t per_step = (uint64_t)c->batch * (uint64_t)c->world;
    return (int64_t)((c->samples + per_step - 1) / per_step);
}

static int job_shape(struct ex_config *c, const struct ckh_workload_job *job, char *msg, size_t n)
{
    if (job->nodes < 1 || job->nodes > EX_WORLD_MAX)
        return ckh_errf(msg, n, CKH_EINVAL, "example-loop runs 1..%d ranks, the job has %d",
                        EX_WORLD_MAX, job->nodes);
    if (job->world_restart)
        return ckh_errf(msg, n, CKH_EUNSUPPORTED,
                        "example-loop cannot change its world size on a restart");
    c->world = job->nodes;
    int64_t spe = ex_steps_per_epoch(c);
    c->total_steps = job->steps > 0 ? job->steps : (job->epochs > 0 ? job->epochs : 3) * spe;
    c->every_steps = job->every_steps > 0    ? job->every_steps
                     : job->every_epochs > 0 ? job->every_epochs * spe
                                             : 4;
    const char *dir = job->checkpoint_dir ? job->checkpoint_dir : "/ckpt";
    if (strlen(dir) >= sizeof c->dir - 32 || ckh_path_check(dir))
        return ckh_errf(msg, n, CKH_EINVAL, "checkpoint_dir '%s' is not a usable path", dir);
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    c->seed = job->seed;
    c->timeout_ns = job->collective_timeout_ns;
    return 0;
}

static int ex_create(const struct ckh_workload_job *job, void **inst, char *msg, size_t n)
{
    struct ex_config *c = calloc(1, sizeof *c);
    if (!c)
        return CKH_ENOMEM;
    *c = defaults;
    int rc = 0;
    for (size_t i = 0; i < job->noptions && !rc; i++)
        rc = read_option(c, &job->options[i], msg, n);
    if (!rc)
        rc = job_shape(c, job, msg, n);
    if (rc) {
        free(c);
        return rc;
    }
    *inst = c;
    return 0;
}

static void ex_destroy(void *inst)
{
    free(inst);
}

static int ex_node_count(void *inst)
{
    return ((const struct ex_config *)inst)->world;
}

static int ex_node(void *inst, int i, char *name, size_t namelen, int *rank)
{
    if (i < 0 || i >= ex_node_count(inst))
        return CKH_EINVAL;
    snprintf(name, namelen, "worker_%d", i);
    *rank = i;
    return 0;
}

/* An asynchronous save is committed only at the next save: a crash just
 * before that loses up to two intervals. */
static int64_t ex_interval(void *inst)
{
    const struct ex_config *c = inst;
    return c->async_save ? 2 * c->every_steps : c->every_steps;
}

static int ex_latest_link(void *inst, char *buf, size_t n)
{
    const struct ex_config *c = inst;
    return ckh_path_join(buf, n, c->dir, "latest");
}

static int ex_verify(void *inst, struct ckh_fs *fs, int node, char *msg, size_t n)
{
    return ex_ckpt_verify(inst, fs, node, msg, n);
}

/* Job shapes for `ckh fuzz`: small worlds, short jobs, a few options,
 * synchronous or asynchronous saves. */
static int ex_generate(struct ckh_rng *rng, struct ckh_workload_shape *s)
{
    s->nodes = 1 + (int)ckh_rng_below(rng, 4);
    s->epochs = 1 + (int64_t)ckh_rng_below(rng, 3);
    s->every_steps = 1 + (int64_t)ckh_rng_below(rng, 5);
    s->every_epochs = 0;
    s->saver = false;
    s->noptions = 3;
    snprintf(s->options[0].key, sizeof s->options[0].key, "samples");
    snprintf(s->options[0].value, sizeof s->options[0].value, "%d",
             8 + (int)ckh_rng_below(rng, 33));
    snprintf(s->options[1].key, sizeof s->options[1].key, "batch");
    snprintf(s->options[1].value, sizeof s->options[1].value, "%d",
             1 + (int)ckh_rng_below(rng, 3));
    snprintf(s->options[2].key, sizeof s->options[2].key, "async_save");
    snprintf(s->options[2].value, sizeof s->options[2].value, "%s",
             ckh_rng_below(rng, 2) ? "true" : "false");
    return 0;
}

/* ---- RNG, sampler, schedule, model ---- */

void ex_rng_seed(struct ex_rng *r, uint64_t seed)
{
    r->s = ckh_mix64(seed) | 1;
}

static uint64_t rng_next(struct ex_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}

float ex_rng_unit(struct ex_rng *r)
{
    return (float)(rng_next(r) >> 40) / (float)(1u << 24);
}

int ex_sampler_reset(struct ex_trainer *t)
{
    struct ex_sampler *s = &t->smp;
    if (!s->perm) {
        s->perm = ckh_calloc(t->env->alloc, s->n, sizeof *s->perm);
        if (!s->perm)
            return ckh_errf(t->msg, sizeof t->msg, CKH_ENOMEM, "no memory for the sampler");
    }
    struct ex_rng r;
    ex_rng_seed(&r, s->seed ^ ckh_mix64((uint64_t)s->epoch));
    for (uint32_t i = 0; i < s->n; i++)
        s->perm[i] = i;
    for (uint32_t i = s->n; i > 1; i--) { /* Fisher-Yates */
        uint32_t j = (uint32_t)(rng_next(&r) % i);
        uint32_t tmp = s->perm[i - 1];
        s->perm[i - 1] = s->perm[j];
        s->perm[j] = tmp;
    }
    return 0;
}

/* The sample id at this rank's k-th slot of the current step. */
static uint32_t sampler_id(const struct ex_trainer *t, uint32_t k)
{
    uint64_t p = t->smp.pos + (uint64_t)t->rank * t->cfg->batch + k;
    return t->smp.perm[p % t->smp.n];
}

/* Moves past the step every rank just read; a new epoch reshuffles. */
static int sampler_advance(struct ex_trainer *t, bool *epoch_end)
{
    const struct ex_config *c = t->cfg;
    t->smp.pos += (uint64_t)c->batch * (uint64_t)c->world;
    *epoch_end = t->smp.pos >= (uint64_t)ex_steps_per_epoch(c) * c->batch * (uint64_t)c->world;
    if (!*epoch_end)
        return 0;
    t->smp.epoch++;
    t->smp.pos = 0;
    return ex_sampler_reset(t);
}

/* LR of step sched_step + 1: linear warm-up, then x decay every
 * decay_every steps. */
static float sched_lr(const struct ex_trainer *t)
{
    const struct ex_config *c = t->cfg;
    int64_t s = t->sched_step + 1;
    if (s <= c->warmup_steps)
        return c->lr * (float)s / (float)c->warmup_steps;
    float lr = c->lr;
    for (int64_t k = (s - c->warmup_steps - 1) / c->decay_every; k > 0; k--)
        lr *= c->decay;
    return lr;
}

/* Features of sample id and its target: y = w* . x for a fixed w*. */
static float sample(const struct ex_config *c, uint32_t id, float *x)
{
    float y = 0;
    for (uint32_t d = 0; d < c->dim; d++) {
        uint64_t h = ckh_mix64(((uint64_t)id << 8) | d);
        x[d] = (float)(h >> 40) / (float)(1u << 23) - 1.0f;
        y += (1.0f - 0.25f * (float)d) * x[d];
    }
    return y;
}

static uint64_t digest(const void *p, size_t n)
{
    return ckh_hash64(CKH_HASH_INIT, p, n);
}

/* ---- one step ---- */

static int record_step(struct ex_trainer *t, int64_t epoch, const uint64_t *ids)
{
    const struct ex_config *c = t->cfg;
    uint64_t smp[3] = {t->smp.seed, (uint64_t)t->smp.epoch, t->smp.pos};
    struct ckh_rec_digest d[] = {
        {"sampler", digest(smp, sizeof smp)},
        {"rng", digest(&t->rng.s, sizeof t->rng.s)},
        {"sched", digest(&t->sched_step, sizeof t->sched_step)},
        {"optim", digest(t->v, c->dim * sizeof(float))},
        {"weights", digest(t->w, c->dim * sizeof(float))},
    };
    struct ckh_rec_value v[] = {{"lr", t->lr}, {"loss", t->loss}};
    struct ckh_rec_step s = {
        .step = t->step,
        .epoch = epoch,
        .digests = d,
        .ndigests = sizeof d / sizeof d[0],
        .values = v,
        .nvalues = sizeof v / sizeof v[0],
        .samples = ids,
        .nsamples = c->batch,
    };
    return ckh_record_step(t->env->record, &s);
}

/* One optimizer step: read the batch, all-reduce gradient and loss, SGD. */
static int train_step(struct ex_trainer *t)
{
    const struct ex_config *c = t->cfg;
    float buf[EX_DIM_MAX + 1] = {0}, x[EX_DIM_MAX];
    uint64_t ids[EX_BATCH_MAX];
    for (uint32_t k = 0; k < c->batch; k++) {
        uint32_t id = sampler_id(t, k);
        float e = -sample(c, id, x);
        for (uint32_t d = 0; d < c->dim; d++)
            e += t->w[d] * x[d];
        for (uint32_t d = 0; d < c->dim; d++)
            buf[d] += e * x[d];
        buf[c->dim] += 0.5f * e * e;
        ids[k] = id;
    }
    for (uint32_t d = 0; d < c->dim; d++)
        buf[d] += c->noise * (ex_rng_unit(&t->rng) - 0.5f);
    int rc = ckh_coll_allreduce(t->env->coll, buf, c->dim + 1, CKH_DT_F32, CKH_RED_SUM,
                                c->timeout_ns);
    if (rc)
        return ckh_errf(t->msg, sizeof t->msg, rc, "gradient all-reduce of step %" PRId64 ": %s",
                        t->step + 1, ckh_strerror(rc));
    float scale = 1.0f / (float)(c->batch * (uint32_t)c->world);
    t->lr = sched_lr(t);
    for (uint32_t d = 0; d < c->dim; d++) {
        t->v[d] = c->momentum * t->v[d] + buf[d] * scale;
        t->w[d] -= t->lr * t->v[d];
    }
    t->loss = buf[c->dim] * scale;
    t->sched_step++;
    t->step++;
    int64_t epoch = t->epoch;
    bool epoch_end = false;
    rc = sampler_advance(t, &epoch_end);
    if (!rc && epoch_end)
        t->epoch++;
    if (!rc)
        rc = record_step(t, epoch, ids);
    return rc;
}

/* ---- node main ---- */

static int train(struct ex_trainer *t)
{
    const struct ex_config *c = t->cfg;
    int rc = 0;
    while (t->step < c->total_steps && !rc) {
        ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
        rc = train_step(t);
        /* The finished step is announced: fault triggers aim at steps. */
        ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
        if (!rc && c->every_steps > 0 && t->step % c->every_steps == 0)
            rc = ex_ckpt_save(t);
    }
    if (!rc)
        rc = ex_ckpt_finish(t);
    return rc;
}

static int record_final(struct ex_trainer *t)
{
    const struct ex_config *c = t->cfg;
    uint64_t h = ckh_hash64(digest(t->w, c->dim * sizeof(float)), t->v, c->dim * sizeof(float));
    static const char *const blobs[] = {"model", "optim", "rng", "sampler"};
    struct ckh_rec_value v[] = {{"lr", t->lr}, {"loss", t->loss}};
    struct ckh_rec_final f = {
        .epochs = t->epoch,
        .steps = t->step,
        .total = t->step,
        .has_digest = true,
        .digest = h,
        .values = v,
        .nvalues = sizeof v / sizeof v[0],
        .blobs = blobs,
        .nblobs = sizeof blobs / sizeof blobs[0],
    };
    return ckh_record_final(t->env->record, &f);
}

static int run(struct ex_trainer *t)
{
    ckh_node_phase(t->env->node, "init", 0, 0);
    ex_rng_seed(&t->rng, ckh_rand_stream_seed(t->env->rand, "example-noise"));
    t->smp.seed = ckh_hash64(t->cfg->seed, "example-sampler", 15);
    t->smp.n = t->cfg->samples;
    int rc = ex_sampler_reset(t);
    if (!rc)
        rc = ex_ckpt_load(t);
    if (!rc)
        rc = train(t);
    if (!rc)
        rc = record_final(t);
    ckh_node_phase(t->env->node, "exit", t->epoch, t->step);
    return rc;
}

static int ex_node_main(struct ckh_env *env, void *inst, int i)
{
    const struct ex_config *c = inst;
    if (ckh_coll_rank(env->coll) != i || ckh_coll_world_size(env->coll) != c->world) {
        ckh_node_logf(env->node, "example-loop: node %d is rank %d of %d, expected %d of %d", i,
                      ckh_coll_rank(env->coll), ckh_coll_world_size(env->coll), i, c->world);
        return CKH_EMISMATCH;
    }
    struct ex_trainer *t = ckh_calloc(env->alloc, 1, sizeof *t);
    if (!t)
        return CKH_ENOMEM;
    t->env = env;
    t->cfg = c;
    t->rank = i;
    int rc = run(t);
    if (rc)
        ckh_node_logf(env->node, "example-loop rank %d: %s (%s)", i,
                      t->msg[0] ? t->msg : ckh_strerror(rc), ckh_err_name(rc));
    ex_ckpt_drop(t);
    ckh_free(env->alloc, t->smp.perm);
    ckh_free(env->alloc, t);
    return rc;
}

/* ---- the ops table ---- */

static const struct ckh_workload_ops example_loop = {
    .version = 1, /* the methods of workload.h's version 1 */
    .name = "example-loop",
    .description = "out-of-tree data-parallel training loop with its own sampler, LR schedule, "
                   "RNG and directory saver",
    .flags = CKH_WL_COLLECTIVE | CKH_WL_STEP_BASED,
    .create = ex_create,
    .destroy = ex_destroy,
    .node_count = ex_node_count,
    .node = ex_node,
    .node_main = ex_node_main,
    .interval = ex_interval,
    .latest_link = ex_latest_link,
    .verify = ex_verify,
    .generate = ex_generate,
};

CKH_WORKLOAD_PLUGIN(example_loop)
