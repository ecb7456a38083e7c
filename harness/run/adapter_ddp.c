/* Adapter for the DDP training workload "ddp-train": one simulated node per
 * rank ("rank_<R>"), each running ckh_ddp_node_main with an oracle record
 * that lives here, outside node memory.
 *
 * Scenario mapping: job.nodes -> world size; job.epochs -> epochs;
 * job.checkpoint_dir -> saver output directory; job.checkpoint_every
 * {steps: K} -> a checkpoint every K optimizer steps ({epochs: N} or
 * nothing: at every epoch end only); job.saver {keep_last, strategy,
 * name}; job.collective_timeout; job.gpu_memory -> capacity of each
 * emulated GPU; job.defects -> defect switches (off in the reference run).
 * options: samples, in_dim, hidden, out_dim, batch, accum, warmup_steps
 * (integers), lr, min_lr, momentum, weight_decay, dropout (numbers),
 * drop_last, map_location, reshard (bools), keys (strict | normalize).
 *
 * World size on restart (restart.world_size W', faulted runs only): the
 * instance holds max(W, W') nodes "rank_<i>" (node i is always rank i when
 * it runs); nodes beyond the current world report rank -1 and are parked
 * by the runner. set_world(W') switches the job to W' ranks with
 * cfg.reshard set (include/ckh/ddp.h: what a resized resume restores).
 * The record has rank slots for the larger world and step slots for the
 * smaller one; results cover every node.
 *
 * Results: per rank, epochs = final epoch, total = final step,
 * resumed_from = the step the last incarnation resumed from, digest = the
 * final state; per step a digest of every rank's weights, optimizer, lr,
 * RNG and sampler state (with per-component digests so the oracle can say
 * which differs); per epoch the count and multiset digest of the sample
 * ids consumed by all ranks, with the per-id counts and the number of
 * ranks that ran the epoch's first step (the reshard oracle).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/adapter.h"
#include "ckh/atomic.h"
#include "ckh/ddp.h"
#include "ckh/defects.h"
#include "ckh/err.h"

#define MAX_COUNTS (1u << 22) /* per-id sample counts kept up to epochs * samples */

struct ddp_inst {
    struct ckh_ddp_config cfg;             /* the job */
    char dir[CKH_PATH_MAX];                /* saver output directory */
    char saver[64];                        /* saver name */
    struct ckh_ddp_record *rec;            /* oracle record (survives kills) */
    struct ckh_ddp_node_arg args[CKH_DDP_MAX_RANKS]; /* per rank program arguments */
    struct ckh_node_result out[CKH_DDP_MAX_RANKS];   /* generic results */
    struct ckh_step_record *steps;         /* per step */
    struct ckh_epoch_samples *samples;     /* per epoch */
    int nodes;                             /* nodes of the job: max(world, world_restart) */
    int world_first;                       /* ranks of run 1 */
    int world_restart;                     /* ranks after a restart (= world_first if unchanged) */
    uint32_t *counts;                      /* [epochs * samples] per-epoch sample-id counts */
    int *epoch_world;                      /* [epochs] ranks that ran each epoch's first step */
};

static int opt_uint(const struct ckh_scn_kv *kv, uint64_t lo, uint64_t hi, uint64_t *out, char *msg,
                    size_t n)
{
    if (kv->type != CKH_SCN_INT || kv->i < (int64_t)lo || (uint64_t)kv->i > hi) {
        char what[96];
        snprintf(what, sizeof what, "expected an integer %" PRIu64 "..%" PRIu64, lo, hi);
        return ckh__adapter_option_error(msg, n, kv, what);
    }
    *out = (uint64_t)kv->i;
    return 0;
}

static int opt_float(const struct ckh_scn_kv *kv, double lo, double hi, float *out, char *msg, size_t n)
{
    if ((kv->type != CKH_SCN_FLOAT && kv->type != CKH_SCN_INT) || !(kv->f >= lo && kv->f <= hi)) {
        char what[96];
        snprintf(what, sizeof what, "expected a number in [%g, %g]", lo, hi);
        return ckh__adapter_option_error(msg, n, kv, what);
    }
    *out = (float)kv->f;
    return 0;
}

static int opt_bool(const struct ckh_scn_kv *kv, bool *out, char *msg, size_t n)
{
    if (kv->type != CKH_SCN_BOOL)
        return ckh__adapter_option_error(msg, n, kv, "expected true or false");
    *out = kv->b;
    return 0;
}

static int apply_options(const struct ckh_scenario *sc, struct ckh_ddp_config *cfg, char *msg, size_t n)
{
    for (size_t i = 0; i < sc->job.noptions; i++) {
        const struct ckh_scn_kv *kv = &sc->job.options[i];
        uint64_t u = 0;
        int rc = 0;
        if (strcmp(kv->key, "samples") == 0) {
            if (!(rc = opt_uint(kv, 1, 1u << 20, &u, msg, n)))
                cfg->samples = u;
        } else if (strcmp(kv->key, "in_dim") == 0) {
            if (!(rc = opt_uint(kv, 1, 4096, &u, msg, n)))
                cfg->in_dim = (uint32_t)u;
        } else if (strcmp(kv->key, "hidden") == 0) {
            if (!(rc = opt_uint(kv, 1, 4096, &u, msg, n)))
                cfg->hidden = (uint32_t)u;
        } else if (strcmp(kv->key, "out_dim") == 0) {
            if (!(rc = opt_uint(kv, 1, 4096, &u, msg, n)))
                cfg->out_dim = (uint32_t)u;
        } else if (strcmp(kv->key, "batch") == 0) {
            if (!(rc = opt_uint(kv, 1, 4096, &u, msg, n)))
                cfg->batch = (uint32_t)u;
        } else if (strcmp(kv->key, "accum") == 0) {
            if (!(rc = opt_uint(kv, 1, 64, &u, msg, n)))
                cfg->accum = (uint32_t)u;
        } else if (strcmp(kv->key, "warmup_steps") == 0) {
            if (!(rc = opt_uint(kv, 0, 1u << 20, &u, msg, n)))
                cfg->warmup_steps = u;
        } else if (strcmp(kv->key, "lr") == 0) {
            rc = opt_float(kv, 0, 10, &cfg->lr, msg, n);
        } else if (strcmp(kv->key, "min_lr") == 0) {
            rc = opt_float(kv, 0, 10, &cfg->min_lr, msg, n);
        } else if (strcmp(kv->key, "momentum") == 0) {
            rc = opt_float(kv, 0, 1, &cfg->momentum, msg, n);
        } else if (strcmp(kv->key, "weight_decay") == 0) {
            rc = opt_float(kv, 0, 1, &cfg->weight_decay, msg, n);
        } else if (strcmp(kv->key, "dropout") == 0) {
            rc = opt_float(kv, 0, 0.95, &cfg->dropout, msg, n);
        } else if (strcmp(kv->key, "drop_last") == 0) {
            rc = opt_bool(kv, &cfg->drop_last, msg, n);
        } else if (strcmp(kv->key, "map_location") == 0) {
            bool map = true;
            if (!(rc = opt_bool(kv, &map, msg, n)))
                cfg->no_map_location = !map;
        } else if (strcmp(kv->key, "reshard") == 0) {
            rc = opt_bool(kv, &cfg->reshard, msg, n);
        } else if (strcmp(kv->key, "keys") == 0) {
            if (strcmp(kv->text, "strict") == 0)
                cfg->keymode = CKH_DDP_KEYS_STRICT;
            else if (strcmp(kv->text, "normalize") == 0)
                cfg->keymode = CKH_DDP_KEYS_NORMALIZE;
            else
                rc = ckh__adapter_option_error(msg, n, kv, "expected strict or normalize");
        } else {
            rc = ckh__adapter_option_error(msg, n, kv,
                          "unknown option (known: samples, in_dim, hidden, out_dim, batch, accum, "
                          "warmup_steps, lr, min_lr, momentum, weight_decay, dropout, drop_last, "
                          "map_location, reshard, keys)");
        }
        if (rc)
            return rc;
    }
    return 0;
}

static void ddp_destroy(void *p)
{
    struct ddp_inst *d = p;
    if (!d)
        return;
    ckh_ddp_record_destroy(d->rec);
    free(d->steps);
    free(d->samples);
    free(d->counts);
    free(d->epoch_world);
    free(d);
}

/* The job of sc (faulted unless mode says otherwise) into d->cfg. */
static int configure(struct ddp_inst *d, const struct ckh_scenario *sc, uint64_t seed, unsigned mode,
                     char *msg, size_t msglen)
{
    struct ckh_ddp_config *cfg = &d->cfg;
    int rc;
    ckh_ddp_config_default(cfg);
    cfg->seed = seed;
    cfg->world = (int)(sc->job.nodes ? sc->job.nodes : 2);
    if (cfg->world > CKH_DDP_MAX_RANKS)
        return ckh_errf(msg, msglen, CKH_EINVAL, "ddp-train supports at most %d ranks, got %d",
                        CKH_DDP_MAX_RANKS, cfg->world);
    if (sc->job.epochs)
        cfg->epochs = sc->job.epochs;
    if (sc->job.steps)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "ddp-train counts epochs: use job.epochs (and options.samples) instead of steps");
    snprintf(d->dir, sizeof d->dir, "%s", sc->job.checkpoint_dir ? sc->job.checkpoint_dir : "/ckpt");
    cfg->ckpt_dir = d->dir;
    snprintf(d->saver, sizeof d->saver, "%s", sc->job.saver.name ? sc->job.saver.name : "ddp");
    cfg->saver_name = d->saver;
    if (sc->job.every_steps) {
        cfg->ckpt_every = sc->job.every_steps;
    } else { /* at every epoch end only */
        cfg->ckpt_every = 0;
        cfg->ckpt_epoch_end = true;
    }
    cfg->keep_last = sc->job.saver.keep_last ? (int)sc->job.saver.keep_last : -1;
    cfg->strategy = sc->job.saver.strategy == CKH_SCN_SYNC_ALL   ? CKH_ADIR_SYNC_ALL
                    : sc->job.saver.strategy == CKH_SCN_ASYNC ? CKH_ADIR_ASYNC
                                                                 : CKH_ADIR_SYNC_ANY;
    cfg->timeout_ns = sc->job.collective_timeout_ns;
    cfg->device_capacity_bytes = sc->job.gpu_mem_bytes;
    if ((rc = apply_options(sc, cfg, msg, msglen)) != 0)
        return rc;
    for (size_t i = 0; !(mode & CKH_RUN_NO_DEFECTS) && i < sc->job.ndefects; i++) {
        int df = ckh_defect_from_name(sc->job.defects[i]);
        if (df < 0 || ckh_defect_enable(&cfg->defects, (enum ckh_defect)df) != 0)
            return ckh_errf(msg, msglen, CKH_EINVAL, "unknown defect switch '%s'", sc->job.defects[i]);
    }
    /* gpu-oom faults (harness/faults/gpu_oom.c) shrink the emulated devices
     * of the faulted run to what one rank needs: its weights and momentum
     * plus one staged copy of a checkpoint, with a little room (5x the
     * weights). */
    for (size_t i = 0; !(mode & CKH_RUN_NO_FAULTS) && i < sc->nfaults; i++)
        if (sc->faults[i].act.kind == CKH_SCN_ACT_GPU_OOM && !cfg->device_capacity_bytes)
            cfg->device_capacity_bytes = 5 * ((uint64_t)cfg->in_dim * cfg->hidden + cfg->hidden +
                                              (uint64_t)cfg->hidden * cfg->out_dim + cfg->out_dim) *
                                         sizeof(float);
    if (ckh_ddp_total_steps(cfg) == 0)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "ddp-train: this job has no optimizer step (check samples, batch, accum, nodes)");
    return 0;
}

/* The world of runs 2.. (restart.world_size): a reference instance runs
 * the job as written, so restart.world_size plays no part in it. */
static int configure_restart(struct ddp_inst *d, const struct ckh_scenario *sc, unsigned mode, char *msg,
                             size_t msglen)
{
    const struct ckh_ddp_config *cfg = &d->cfg;
    d->world_restart = (mode & CKH_RUN_NO_FAULTS) || !sc->restart.world_size ? cfg->world
                                                                             : (int)sc->restart.world_size;
    if (d->world_restart > CKH_DDP_MAX_RANKS)
        return ckh_errf(msg, msglen, CKH_EINVAL, "restart.world_size: ddp-train supports at most %d ranks, got %d",
                        CKH_DDP_MAX_RANKS, d->world_restart);
    struct ckh_ddp_config restarted = *cfg;
    restarted.world = d->world_restart;
    if (ckh_ddp_total_steps(&restarted) == 0 || (cfg->drop_last && cfg->samples < (uint64_t)d->world_restart))
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "restart.world_size: with %d ranks this job has no optimizer step "
                        "(check samples, batch, accum, drop_last)", d->world_restart);
    d->world_first = cfg->world;
    d->nodes = cfg->world > d->world_restart ? cfg->world : d->world_restart;
    return 0;
}

/* The oracle record and the result arrays, and each rank's arguments. */
static int allocate(struct ddp_inst *d, char *msg, size_t msglen)
{
    struct ckh_ddp_config *cfg = &d->cfg;
    int rc = ckh_ddp_record_create_worlds(cfg, d->world_restart, &d->rec);
    if (rc != 0)
        return ckh_errf(msg, msglen, rc, "ddp-train: cannot allocate the oracle record");
    d->steps = calloc(d->rec->max_steps + 1, sizeof *d->steps);
    d->samples = calloc((size_t)cfg->epochs + 1, sizeof *d->samples);
    /* Per-id counts for jobs of a sane size (else the reshard oracle
     * has nothing to judge). */
    bool counted = (uint64_t)cfg->epochs * cfg->samples <= MAX_COUNTS;
    if (counted)
        d->counts = calloc((size_t)cfg->epochs * cfg->samples + 1, sizeof *d->counts);
    d->epoch_world = calloc((size_t)cfg->epochs + 1, sizeof *d->epoch_world);
    if (!d->steps || !d->samples || !d->epoch_world || (!d->counts && counted))
        return CKH_ENOMEM;
    for (int r = 0; r < d->nodes; r++) {
        d->args[r].cfg = cfg;
        d->args[r].rank = r;
        d->args[r].rec = d->rec;
    }
    return 0;
}

static int ddp_create(const struct ckh_scenario *sc, uint64_t seed, unsigned mode, void **out, char *msg, size_t msglen)
{
    struct ddp_inst *d = calloc(1, sizeof *d);
    int rc;
    if (!d)
        return CKH_ENOMEM;
    if ((rc = configure(d, sc, seed, mode, msg, msglen)) != 0 ||
        (rc = configure_restart(d, sc, mode, msg, msglen)) != 0 || (rc = allocate(d, msg, msglen)) != 0) {
        ddp_destroy(d);
        return rc;
    }
    *out = d;
    return 0;
}

static int ddp_node_count(void *p)
{
    return ((struct ddp_inst *)p)->nodes;
}

static int ddp_node(void *p, int i, char *name, size_t namelen, int *rank, ckh_node_main *main, void **arg)
{
    struct ddp_inst *d = p;
    if (i < 0 || i >= d->nodes)
        return CKH_EINVAL;
    snprintf(name, namelen, "rank_%d", i);
    *rank = i < d->cfg.world ? i : -1;
    *main = ckh_ddp_node_main;
    *arg = &d->args[i];
    return 0;
}

static int64_t ddp_interval(void *p)
{
    const struct ddp_inst *d = p;
    const struct ckh_ddp_config *c = &d->cfg;
    if (c->ckpt_every)
        return (int64_t)c->ckpt_every;
    /* Epoch-end checkpoints: an epoch of the smaller world (the longer one). */
    struct ckh_ddp_config small = *c;
    small.world = d->world_first < d->world_restart ? d->world_first : d->world_restart;
    uint64_t per_epoch = ckh_ddp_total_steps(&small) / (uint64_t)(c->epochs > 0 ? c->epochs : 1);
    return per_epoch ? (int64_t)per_epoch : 1;
}

static int ddp_set_world(void *p, int world, char *msg, size_t msglen)
{
    struct ddp_inst *d = p;
    if (world < 1 || world > d->nodes) {
        snprintf(msg, msglen, "restart.world_size: the job was built for at most %d ranks, got %d",
                 d->nodes, world);
        return CKH_EINVAL;
    }
    d->cfg.world = world;
    d->cfg.reshard = true;
    return 0;
}

static void ddp_before_run(void *p, int run, int64_t resume_epoch)
{
    (void)p, (void)run, (void)resume_epoch; /* ranks always resume from the latest commit */
}

static uint64_t fold(uint64_t h, uint64_t v)
{
    return ckh_hash64(h, &v, sizeof v);
}

/* Per rank: the generic result, and what a failed load or device said. */
static void collect_nodes(struct ddp_inst *d, struct ckh_job_result *out)
{
    const struct ckh_ddp_record *rec = d->rec;
    for (int r = 0; r < d->nodes; r++) {
        const struct ckh_ddp_rank_rec *rr = &rec->ranks[r];
        struct ckh_node_result *o = &d->out[r];
        memset(o, 0, sizeof *o);
        snprintf(o->node, sizeof o->node, "rank_%d", r);
        o->finished = rr->incarnations > 0;
        o->rc = rr->status;
        o->epochs = rr->final_epoch;
        o->total = rr->final_step;
        o->resumed_from = rr->resumed_step;
        o->saves_failed = rr->saves_failed;
        uint64_t h = CKH_HASH_INIT;
        h = fold(h, rr->final.weights);
        h = fold(h, rr->final.optim);
        h = fold(h, rr->final.lr_bits);
        h = fold(h, rr->final.rng);
        o->digest = fold(h, rr->final.sampler);
        if (ckh_rc_is_corruption(rr->status))
            out->corruption_detected = true;
        if (rr->status == CKH_EOOM_DEVICE)
            out->device_oom = true;
    }
}

/* Per step: one digest over every rank, and which component differs is
 * named by comparing component digests in the oracle's message. Returns
 * the number of steps recorded. */
static size_t collect_steps(struct ddp_inst *d)
{
    const struct ckh_ddp_record *rec = d->rec;
    size_t ns = 0;
    for (uint64_t s = 1; s <= rec->max_steps; s++) {
        uint64_t h = CKH_HASH_INIT;
        bool any = false;
        char what[96] = "";
        uint64_t comp[5] = {CKH_HASH_INIT, CKH_HASH_INIT, CKH_HASH_INIT, CKH_HASH_INIT, CKH_HASH_INIT};
        for (int r = 0; r < d->nodes; r++) {
            const struct ckh_ddp_step_rec *sr = &rec->ranks[r].steps[s];
            if (!sr->valid)
                continue;
            any = true;
            comp[0] = fold(comp[0], sr->weights);
            comp[1] = fold(comp[1], sr->optim);
            comp[2] = fold(comp[2], sr->lr_bits);
            comp[3] = fold(comp[3], sr->rng);
            comp[4] = fold(comp[4], sr->sampler);
        }
        if (!any)
            continue;
        for (int k = 0; k < 5; k++)
            h = fold(h, comp[k]);
        snprintf(what, sizeof what, "weights %04" PRIx64 " optim %04" PRIx64 " lr %04" PRIx64
                 " rng %04" PRIx64 " sampler %04" PRIx64,
                 comp[0] & 0xffff, comp[1] & 0xffff, comp[2] & 0xffff, comp[3] & 0xffff,
                 comp[4] & 0xffff);
        d->steps[ns].step = (int64_t)s;
        d->steps[ns].digest = h;
        snprintf(d->steps[ns].what, sizeof d->steps[ns].what, "%s", what);
        ns++;
    }
    return ns;
}

/* Per epoch: count and an order-independent digest of the sample ids. */
static void collect_samples(struct ddp_inst *d)
{
    const struct ckh_ddp_record *rec = d->rec;
    uint64_t n = d->cfg.samples;
    if (d->counts)
        memset(d->counts, 0, (size_t)d->cfg.epochs * n * sizeof *d->counts);
    for (int64_t e = 0; e < d->cfg.epochs; e++) {
        d->samples[e].epoch = e;
        d->samples[e].count = 0;
        d->samples[e].multiset = 0;
        d->epoch_world[e] = 0;
    }
    for (int r = 0; r < d->nodes; r++) {
        const struct ckh_ddp_rank_rec *rr = &rec->ranks[r];
        for (uint64_t s = 1; s <= rec->max_steps; s++) {
            const struct ckh_ddp_step_rec *sr = &rr->steps[s];
            if (!sr->valid || sr->epoch < 0 || sr->epoch >= d->cfg.epochs)
                continue;
            const uint32_t *ids = rr->samples + s * rec->per_step;
            for (uint32_t j = 0; j < rec->per_step; j++) {
                if (ids[j] == UINT32_MAX)
                    continue;
                d->samples[sr->epoch].count++;
                d->samples[sr->epoch].multiset += ckh_mix64((uint64_t)ids[j] + 1);
                if (d->counts && ids[j] < n)
                    d->counts[(uint64_t)sr->epoch * n + ids[j]]++;
            }
        }
    }
}

/* The ranks that ran each epoch's first step (the step slot is shared by
 * every rank of the run that took it). */
static void collect_epoch_world(struct ddp_inst *d)
{
    const struct ckh_ddp_record *rec = d->rec;
    for (uint64_t s = 1; s <= rec->max_steps; s++) {
        int64_t e = -1;
        int ranks = 0;
        for (int r = 0; r < d->nodes; r++) {
            const struct ckh_ddp_step_rec *sr = &rec->ranks[r].steps[s];
            if (!sr->valid || sr->epoch < 0 || sr->epoch >= d->cfg.epochs)
                continue;
            if (e < 0)
                e = sr->epoch;
            if (sr->epoch == e)
                ranks++;
        }
        if (e >= 0 && d->epoch_world[e] == 0)
            d->epoch_world[e] = ranks;
    }
}

static int ddp_collect(void *p, struct ckh_job_result *out)
{
    struct ddp_inst *d = p;
    memset(out, 0, sizeof *out);
    collect_nodes(d, out);
    out->steps = d->steps;
    out->nsteps = collect_steps(d);
    collect_samples(d);
    collect_epoch_world(d);
    out->samples = d->samples;
    out->nsamples = (size_t)d->cfg.epochs;
    out->sample_counts = d->counts;
    out->dataset_size = d->counts ? d->cfg.samples : 0;
    out->epoch_world = d->epoch_world;
    out->drop_last = d->cfg.drop_last;
    out->nodes = d->out;
    out->nnodes = (size_t)d->nodes;
    return 0;
}

/* Reads and parses one state-dict file of a checkpoint folder. */
static int check_sd(struct ckh_fs *fs, const char *folder, const char *file, char *msg, size_t n)
{
    char path[CKH_PATH_MAX + 1];
    void *buf = NULL;
    size_t len = 0;
    struct ckh_ddp_sd sd;
    if (ckh_path_join(path, sizeof path, folder, file))
        return CKH_EINVAL;
    int rc = ckh_atomic_read(fs, NULL, path, &buf, &len);
    if (rc) {
        snprintf(msg, n, "latest names %s, but %s cannot be read: %s", folder, file, ckh_strerror(rc));
        return rc;
    }
    ckh_ddp_sd_init(&sd, NULL);
    rc = ckh_ddp_sd_parse(&sd, buf, len);
    ckh_ddp_sd_fini(&sd);
    ckh_free(NULL, buf);
    if (rc)
        snprintf(msg, n, "latest names %s, but %s is damaged: %s", folder, file, ckh_err_name(rc));
    return rc;
}

/* Read-only look at the saver's pointer(s): each must be absent (nothing
 * committed yet) or name a folder with its commit marker and parseable
 * state dicts. Independent of the saver's own code on purpose. */
static int ddp_verify(void *p, struct ckh_fs *fs, char *msg, size_t msglen)
{
    struct ddp_inst *d = p;
    int links = d->cfg.strategy == CKH_ADIR_ASYNC ? d->cfg.world : 1;
    int committed = 0;
    for (int r = 0; r < links; r++) {
        char name[160], link[CKH_PATH_MAX + 1], target[CKH_PATH_MAX + 1], folder[CKH_PATH_MAX + 1];
        char marker[CKH_PATH_MAX + 1];
        if (d->cfg.strategy == CKH_ADIR_ASYNC)
            snprintf(name, sizeof name, "%s_rank_%d.latest_checkpoint", d->saver, r);
        else
            snprintf(name, sizeof name, "%s.latest_checkpoint", d->saver);
        if (ckh_path_join(link, sizeof link, d->dir, name))
            return CKH_EINVAL;
        int64_t tl = ckh_fs_readlink(fs, link, target, sizeof target);
        if (tl == -ENOENT)
            continue;
        if (tl < 0) {
            snprintf(msg, msglen, "%s cannot be read: %s", link, ckh_strerror((int)tl));
            return (int)tl;
        }
        if (target[0] == '/')
            snprintf(folder, sizeof folder, "%s", target);
        else if (ckh_path_join(folder, sizeof folder, d->dir, target))
            return CKH_EINVAL;
        struct ckh_stat st;
        if (ckh_fs_stat(fs, folder, &st) != 0 || st.type != CKH_FT_DIR) {
            snprintf(msg, msglen, "%s names %s, which does not exist", link, folder);
            return CKH_ECORRUPT;
        }
        if (ckh_path_join(marker, sizeof marker, folder, CKH_ADIR_COMMIT_MARKER) ||
            !ckh_fs_exists(fs, marker)) {
            snprintf(msg, msglen, "%s names %s, which was never committed", link, folder);
            return CKH_ECORRUPT;
        }
        int rc;
        if ((r == 0 || d->cfg.strategy == CKH_ADIR_ASYNC) &&
            ((rc = check_sd(fs, folder, "model.ckh", msg, msglen)) != 0 ||
             (rc = check_sd(fs, folder, "train.ckh", msg, msglen)) != 0))
            return rc;
        committed++;
    }
    snprintf(msg, msglen, committed ? "latest names a committed checkpoint that parses"
                                    : "nothing committed yet: the job restarts from scratch");
    return 0;
}

static int ddp_latest_link(void *p, char *buf, size_t n)
{
    const struct ddp_inst *d = p;
    char name[128];
    /* async: every rank keeps its own pointer; rank 0's is the default. */
    if (d->cfg.strategy == CKH_ADIR_ASYNC)
        snprintf(name, sizeof name, "%s_rank_0.latest_checkpoint", d->saver);
    else
        snprintf(name, sizeof name, "%s.latest_checkpoint", d->saver);
    return ckh_path_join(buf, n, d->dir, name);
}

const struct ckh_adapter_ops ckh__adapter_ddp_train = {
    .name = "ddp-train",
    .description = "data-parallel training: W ranks, MLP, SGD+momentum, warm-up+cosine, atomic saver",
    .step_based = true,
    .create = ddp_create,
    .destroy = ddp_destroy,
    .node_count = ddp_node_count,
    .node = ddp_node,
    .interval = ddp_interval,
    .before_run = ddp_before_run,
    .collect = ddp_collect,
    .verify = ddp_verify,
    .set_world = ddp_set_world,
    .latest_link = ddp_latest_link,
};
