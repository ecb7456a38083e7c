/* The DDP training workload "ddp-train" as a table of the public workload
 * interface (include/ckh/workload.h): one node per rank ("rank_<R>"),
 * each running ckh_ddp_node_main, which reports through env->record.
 *
 * Scenario mapping: job.nodes -> world size; job.epochs -> epochs;
 * job.checkpoint_dir -> saver output directory; job.checkpoint_every
 * {steps: K} -> a checkpoint every K optimizer steps ({epochs: N} or
 * nothing: at every epoch end only); job.saver {keep_last, strategy,
 * name}; job.collective_timeout; job.gpu_memory -> capacity of each
 * emulated GPU; job.defects -> defect switches (off in the reference run).
 * options: samples, in_dim, hidden, out_dim, batch, accum, warmup_steps
 * (integers), lr, min_lr, momentum, weight_decay, dropout (numbers),
 * drop_last, map_location, reshard (bools), keys (strict | normalize),
 * devices (emulated | nccl: on the real platform the tensors live in
 * real GPU memory and the gradients are all-reduced through NCCL,
 * docs/REAL.md; the same emulated devices in the simulator).
 *
 * World size on restart (restart.world_size W', faulted runs only): the
 * instance holds max(W, W') nodes "rank_<i>" (node i is always rank i when
 * it runs); nodes beyond the current world report rank -1 and are parked
 * by the runner. set_world(W') switches the job to W' ranks, resharding
 * unless options say `reshard: false` (then the ranks refuse the old
 * world's checkpoint: include/ckh/ddp.h says what a resized resume
 * restores).
 *
 * Records (include/ckh/record.h), from ckh_ddp_node_main: per rank and
 * optimizer step the digests "weights" (devices included), "optim", "rng",
 * "sampler", the value "lr" and the sample ids consumed; a resume record
 * per restored checkpoint; a save record per save; a final record with
 * the dataset size and drop_last for the reshard oracle.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/atomic.h"
#include "ckh/ddp.h"
#include "ckh/defects.h"
#include "ckh/err.h"
#include "ckh/workload.h"


struct ddp_inst {
    struct ckh_ddp_config cfg;             /* the job */
    char dir[CKH_PATH_MAX];                /* saver output directory */
    char saver[64];                        /* saver name */
    struct ckh_ddp_record *rec;            /* devices and per-rank status (survive kills) */
    struct ckh_ddp_node_arg args[CKH_DDP_MAX_RANKS]; /* per rank program arguments */
    int nodes;                             /* nodes of the job: max(world, world_restart) */
    int world_first;                       /* ranks of run 1 */
    int world_restart;                     /* ranks after a restart (= world_first if unchanged) */
    bool reshard_allowed;                  /* a resized resume may reshard (job->reshard) */
};

static int opt_uint(const struct ckh_wl_option *kv, uint64_t lo, uint64_t hi, uint64_t *out, char *msg,
                    size_t n)
{
    if (kv->type != CKH_WL_OPT_INT || kv->i < (int64_t)lo || (uint64_t)kv->i > hi) {
        char what[96];
        snprintf(what, sizeof what, "expected an integer %" PRIu64 "..%" PRIu64, lo, hi);
        return ckh_wl_option_error(msg, n, kv, what);
    }
    *out = (uint64_t)kv->i;
    return 0;
}

static int opt_float(const struct ckh_wl_option *kv, double lo, double hi, float *out, char *msg, size_t n)
{
    if ((kv->type != CKH_WL_OPT_FLOAT && kv->type != CKH_WL_OPT_INT) || !(kv->f >= lo && kv->f <= hi)) {
        char what[96];
        snprintf(what, sizeof what, "expected a number in [%g, %g]", lo, hi);
        return ckh_wl_option_error(msg, n, kv, what);
    }
    *out = (float)kv->f;
    return 0;
}

static int opt_bool(const struct ckh_wl_option *kv, bool *out, char *msg, size_t n)
{
    if (kv->type != CKH_WL_OPT_BOOL)
        return ckh_wl_option_error(msg, n, kv, "expected true or false");
    *out = kv->b;
    return 0;
}

static int apply_options(const struct ckh_workload_job *job, struct ckh_ddp_config *cfg, char *msg, size_t n)
{
    for (size_t i = 0; i < job->noptions; i++) {
        const struct ckh_wl_option *kv = &job->options[i];
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
        } else if (strcmp(kv->key, "devices") == 0) {
            /* Only checked here: the real platform reads it (real/
             * rank_main.c) and hands the workload its GPUs as env->gpu. */
            if (strcmp(kv->text, "emulated") != 0 && strcmp(kv->text, "nccl") != 0)
                rc = ckh_wl_option_error(msg, n, kv, "expected emulated or nccl");
        } else if (strcmp(kv->key, "keys") == 0) {
            if (strcmp(kv->text, "strict") == 0)
                cfg->keymode = CKH_DDP_KEYS_STRICT;
            else if (strcmp(kv->text, "normalize") == 0)
                cfg->keymode = CKH_DDP_KEYS_NORMALIZE;
            else
                rc = ckh_wl_option_error(msg, n, kv, "expected strict or normalize");
        } else {
            rc = ckh_wl_option_error(msg, n, kv,
                          "unknown option (known: samples, in_dim, hidden, out_dim, batch, accum, "
                          "warmup_steps, lr, min_lr, momentum, weight_decay, dropout, drop_last, "
                          "map_location, reshard, keys, devices)");
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Bytes of the model's parameters (fc1, fc2: weights and biases). */
static uint64_t model_bytes(const struct ckh_ddp_config *cfg)
{
    return ((uint64_t)cfg->in_dim * cfg->hidden + cfg->hidden + (uint64_t)cfg->hidden * cfg->out_dim +
            cfg->out_dim) * sizeof(float);
}

/* job.gpu_memory must hold what every rank puts on its GPU before the
 * first step: its weights and their momentum (ddp_workload.c,
 * setup_devices). Less is refused up front, not a reference run that
 * fails with CKH_EOOM_DEVICE. */
static int check_gpu_memory(const struct ckh_workload_job *job, const struct ckh_ddp_config *cfg, char *msg,
                            size_t msglen)
{
    uint64_t need = 2 * model_bytes(cfg);
    if (!job->gpu_mem_bytes || job->gpu_mem_bytes >= need)
        return 0;
    return ckh_errf(msg, msglen, CKH_EINVAL,
                    "job.gpu_memory: %" PRIu64 " byte%s cannot hold a rank's model on its GPU (weights and "
                    "momentum of in_dim %u, hidden %u, out_dim %u: %" PRIu64 " bytes); expected at least %" PRIu64
                    " bytes (more to stage a checkpoint), or 0 for unlimited",
                    job->gpu_mem_bytes, job->gpu_mem_bytes == 1 ? "" : "s", (unsigned)cfg->in_dim, (unsigned)cfg->hidden, (unsigned)cfg->out_dim,
                    need, need);
}

/* The job's record (every step's digests and sample ids, per rank) must
 * stay within CKH_DDP_RECORD_MAX_BYTES: a job too long for it is refused
 * up front, naming job.epochs (or options.samples when epochs were not
 * given) and the most epochs that fit, instead of running until the
 * worker's memory limit ends it. */
static int check_record_size(const struct ckh_workload_job *job, const struct ckh_ddp_config *cfg, int world_restart,
                             char *msg, size_t msglen)
{
    uint64_t bytes = ckh_ddp_record_bytes(cfg, world_restart);
    if (bytes <= CKH_DDP_RECORD_MAX_BYTES)
        return 0;
    struct ckh_ddp_config t = *cfg;
    int64_t lo = 0, hi = cfg->epochs; /* the most epochs that fit: in [lo, hi) */
    while (hi - lo > 1) {
        t.epochs = lo + (hi - lo) / 2;
        if (ckh_ddp_record_bytes(&t, world_restart) <= CKH_DDP_RECORD_MAX_BYTES)
            lo = t.epochs;
        else
            hi = t.epochs;
    }
    struct ckh_ddp_config one = *cfg; /* the world that takes the most steps, one epoch */
    one.world = cfg->world < world_restart ? cfg->world : world_restart;
    one.epochs = 1;
    int ranks = cfg->world > world_restart ? cfg->world : world_restart;
    char what[256];
    snprintf(what, sizeof what,
             "need a %.1f GiB record per run (%" PRIu64 " optimizer steps per epoch, each step's digests and "
             "sample ids for %d rank%s), over ddp-train's limit of %llu GiB",
             (double)bytes / (double)(1ull << 30), ckh_ddp_total_steps(&one), ranks, ranks == 1 ? "" : "s",
             CKH_DDP_RECORD_MAX_BYTES >> 30);
    if (job->epochs || !lo)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "job.epochs: %" PRId64 " epochs %s; at most %" PRId64 " epochs with this job's ranks, "
                        "samples, batch and accum",
                        cfg->epochs, what, lo);
    for (size_t i = 0; i < job->noptions; i++)
        if (strcmp(job->options[i].key, "samples") == 0) {
            char why[400];
            snprintf(why, sizeof why, "%" PRIu64 " samples over %" PRId64 " epochs %s", cfg->samples, cfg->epochs,
                     what);
            return ckh_wl_option_error(msg, msglen, &job->options[i], why);
        }
    return ckh_errf(msg, msglen, CKH_EINVAL, "ddp-train: this job %s", what);
}

/* The job into d->cfg. */
static int configure(struct ddp_inst *d, const struct ckh_workload_job *job, char *msg, size_t msglen)
{
    struct ckh_ddp_config *cfg = &d->cfg;
    int rc;
    ckh_ddp_config_default(cfg);
    cfg->seed = job->seed;
    cfg->world = job->nodes;
    if (cfg->world > CKH_DDP_MAX_RANKS)
        return ckh_errf(msg, msglen, CKH_EINVAL, "job.nodes: ddp-train supports at most %d ranks, got %d",
                        CKH_DDP_MAX_RANKS, cfg->world);
    if (job->epochs)
        cfg->epochs = job->epochs;
    if (job->steps)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "job.steps: ddp-train counts epochs: use job.epochs (and options.samples) instead of steps");
    snprintf(d->dir, sizeof d->dir, "%s", job->checkpoint_dir);
    cfg->ckpt_dir = d->dir;
    snprintf(d->saver, sizeof d->saver, "%s", job->saver_config.name ? job->saver_config.name : "ddp");
    cfg->saver_name = d->saver;
    cfg->saver = job->saver;
    if (job->every_steps) {
        cfg->ckpt_every = (uint64_t)job->every_steps;
    } else { /* at every epoch end only */
        cfg->ckpt_every = 0;
        cfg->ckpt_epoch_end = true;
    }
    cfg->keep_last = job->saver_config.keep_last;
    cfg->strategy = job->saver_config.strategy == CKH_SAVER_SYNC_ALL ? CKH_ADIR_SYNC_ALL
                    : job->saver_config.strategy == CKH_SAVER_ASYNC  ? CKH_ADIR_ASYNC
                                                                     : CKH_ADIR_SYNC_ANY;
    cfg->timeout_ns = job->collective_timeout_ns;
    cfg->device_capacity_bytes = job->gpu_mem_bytes;
    if ((rc = apply_options(job, cfg, msg, msglen)) != 0 || (rc = check_gpu_memory(job, cfg, msg, msglen)) != 0)
        return rc;
    d->reshard_allowed = job->reshard;
    for (size_t i = 0; i < job->ndefects; i++) {
        int df = ckh_defect_from_name(job->defects[i]);
        if (df < 0 || ckh_defect_enable(&cfg->defects, (enum ckh_defect)df) != 0)
            return ckh_errf(msg, msglen, CKH_EINVAL, "unknown defect switch '%s'", job->defects[i]);
    }
    /* gpu-oom faults (harness/model/faults/gpu_oom.c) shrink the emulated devices
     * of the faulted run to what one rank needs: its weights and momentum
     * plus one staged copy of a checkpoint, with a little room (5x the
     * weights). */
    if ((job->flags & CKH_WL_JOB_GPU_OOM) && !cfg->device_capacity_bytes)
        cfg->device_capacity_bytes = 5 * ((uint64_t)cfg->in_dim * cfg->hidden + cfg->hidden +
                                          (uint64_t)cfg->hidden * cfg->out_dim + cfg->out_dim) *
                                     sizeof(float);
    if (ckh_ddp_total_steps(cfg) == 0)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "ddp-train: this job has no optimizer step (check samples, batch, accum, nodes)");
    return 0;
}

/* The world of runs 2.. (restart.world_size; the reference run's job has
 * none, so it runs as written). */
static int configure_restart(struct ddp_inst *d, const struct ckh_workload_job *job, char *msg, size_t msglen)
{
    const struct ckh_ddp_config *cfg = &d->cfg;
    d->world_restart = job->world_restart ? job->world_restart : cfg->world;
    if (d->world_restart > CKH_DDP_MAX_RANKS)
        return ckh_errf(msg, msglen, CKH_EINVAL, "restart.world_size: ddp-train supports at most %d ranks, got %d",
                        CKH_DDP_MAX_RANKS, d->world_restart);
    struct ckh_ddp_config restarted = *cfg;
    restarted.world = d->world_restart;
    if (ckh_ddp_total_steps(&restarted) == 0 || (cfg->drop_last && cfg->samples < (uint64_t)d->world_restart))
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "restart.world_size: with %d ranks this job has no optimizer step "
                        "(check samples, batch, accum, drop_last)", d->world_restart);
    int rc = check_record_size(job, cfg, d->world_restart, msg, msglen);
    if (rc)
        return rc;
    d->world_first = cfg->world;
    d->nodes = cfg->world > d->world_restart ? cfg->world : d->world_restart;
    return 0;
}

/* The shared record (emulated devices, per-rank status) and each rank's
 * arguments. */
static int allocate(struct ddp_inst *d, char *msg, size_t msglen)
{
    struct ckh_ddp_config *cfg = &d->cfg;
    int rc = ckh_ddp_record_create_worlds(cfg, d->world_restart, &d->rec);
    if (rc != 0)
        return ckh_errf(msg, msglen, rc, "ddp-train: cannot allocate the job's record");
    for (int r = 0; r < d->nodes; r++) {
        d->args[r].cfg = cfg;
        d->args[r].rank = r;
        d->args[r].rec = d->rec;
    }
    return 0;
}

static void ddp_destroy(void *p)
{
    struct ddp_inst *d = p;
    if (!d)
        return;
    ckh_ddp_record_destroy(d->rec);
    free(d);
}

static int ddp_create(const struct ckh_workload_job *job, void **out, char *msg, size_t msglen)
{
    struct ddp_inst *d = calloc(1, sizeof *d);
    int rc;
    if (!d)
        return CKH_ENOMEM;
    if ((rc = configure(d, job, msg, msglen)) != 0 || (rc = configure_restart(d, job, msg, msglen)) != 0 ||
        (rc = allocate(d, msg, msglen)) != 0) {
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

static int ddp_node(void *p, int i, char *name, size_t namelen, int *rank)
{
    struct ddp_inst *d = p;
    if (i < 0 || i >= d->nodes)
        return CKH_EINVAL;
    snprintf(name, namelen, "rank_%d", i);
    *rank = i < d->cfg.world ? i : -1;
    return 0;
}

static int ddp_node_main(struct ckh_env *env, void *p, int i)
{
    struct ddp_inst *d = p;
    if (i < 0 || i >= d->nodes)
        return CKH_EINVAL;
    return ckh_ddp_node_main(env, &d->args[i]);
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
    /* A resized resume reshards unless the job says `reshard: false`; then
     * the ranks refuse the old world's checkpoint, a verdict of its own. */
    if (d->reshard_allowed)
        d->cfg.reshard = true;
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

/* The job's saver and the configuration its ranks create it with. */
static const struct ckh_saver_ops *saver_of(const struct ddp_inst *d, struct ckh_saver_config *sc)
{
    *sc = (struct ckh_saver_config){
        .output_dir = d->dir,
        .name = d->saver,
        .keep_last = d->cfg.keep_last,
        .strategy = d->cfg.strategy == CKH_ADIR_SYNC_ALL ? CKH_SAVER_SYNC_ALL
                    : d->cfg.strategy == CKH_ADIR_ASYNC  ? CKH_SAVER_ASYNC
                                                         : CKH_SAVER_SYNC_ANY,
        .timeout_ns = d->cfg.timeout_ns,
        .defects = &d->cfg.defects,
    };
    return d->cfg.saver ? d->cfg.saver : &ckh_atomic_dir_saver_ops;
}

/* Read-only look, through node's view, at what its rank would resume
 * from: the saver's own check (its pointer and commit protocol), then the
 * state dicts of that folder must parse. Independent of the training
 * loop's load code on purpose. */
static int ddp_verify(void *p, struct ckh_fs *fs, int node, char *msg, size_t msglen)
{
    struct ddp_inst *d = p;
    struct ckh_saver_config sc;
    const struct ckh_saver_ops *ops = saver_of(d, &sc);
    int rank = node < 0 ? 0 : node;
    char folder[CKH_PATH_MAX + 1] = "";
    if (rank >= d->cfg.world) {
        snprintf(msg, msglen, "rank_%d is not part of the current world", rank);
        return 0;
    }
    int rc = ckh_saver_check(ops, fs, &sc, rank, d->cfg.world, folder, sizeof folder, msg, msglen);
    if (rc == CKH_EUNSUPPORTED) {
        snprintf(msg, msglen, "saver %s has no check method: what a restart resumes from is judged by "
                 "the resumed run only", ops->name);
        return 0;
    }
    if (rc)
        return rc;
    if (!folder[0]) {
        snprintf(msg, msglen, "nothing committed yet: the job restarts from scratch");
        return 0;
    }
    if ((rc = check_sd(fs, folder, "model.ckh", msg, msglen)) != 0 ||
        (rc = check_sd(fs, folder, "train.ckh", msg, msglen)) != 0)
        return rc;
    snprintf(msg, msglen, "rank %d resumes from %s, committed, and its state dicts parse", rank, folder);
    return 0;
}

static int ddp_latest_link(void *p, char *buf, size_t n)
{
    struct ckh_saver_config sc;
    const struct ckh_saver_ops *ops = saver_of(p, &sc);
    return ckh_saver_latest_path(ops, &sc, buf, n);
}

/* The fuzzer's job shape: an atomic-dir saver and a step cadence. */
static int ddp_generate(struct ckh_rng *rng, struct ckh_workload_shape *shape)
{
    shape->saver = true;
    shape->every_steps = 1 + (int64_t)ckh_rng_below(rng, 4);
    return 0;
}

const struct ckh_workload_ops ckh_ddp_train_workload = {
    .version = CKH_WORKLOAD_ABI_VERSION,
    .name = "ddp-train",
    .description = "data-parallel training: W ranks, MLP, SGD+momentum, warm-up+cosine, atomic saver",
    .flags = CKH_WL_COLLECTIVE | CKH_WL_STEP_BASED | CKH_WL_USES_SAVER | CKH_WL_DEVICES | CKH_WL_DEFECTS,
    .create = ddp_create,
    .destroy = ddp_destroy,
    .node_count = ddp_node_count,
    .node = ddp_node,
    .node_main = ddp_node_main,
    .interval = ddp_interval,
    .verify = ddp_verify,
    .set_world = ddp_set_world,
    .latest_link = ddp_latest_link,
    .generate = ddp_generate,
};
