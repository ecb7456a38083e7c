/* The "ddp-train" node program (see include/ckh/ddp.h for the job, the
 * checkpoint content and the oracle record).
 *
 * Sections: trainer state; checkpoint save; checkpoint load; training
 * loop; node main.
 *
 * Checkpoints go through a directory saver (include/ckh/saver.h):
 * cfg->saver, or the built-in atomic directory saver. Save protocol (every
 * checkpoint): prepare (collective) -> the leader of each view of the
 * checkpoint folder (ckh_saver_view_leader: rank 0 on a shared disk, every
 * rank on node-local disks) writes model.ckh and train.ckh, every rank
 * writes rng_rank_<R>.ckh (each file with ckh_atomic_save) -> an
 * all-reduce of write failures -> commit (collective) unless some rank
 * failed, in which case the folder stays uncommitted and the next prepare
 * removes it; a failed save is logged, recorded, and training goes on.
 * Load protocol (on start): every rank asks the saver for the checkpoint
 * all ranks resume from (ckh_saver_resume), loads it, then an all-reduce
 * that checks every rank loaded the same step; the staging copies of the
 * loaded tensors are freed after it (a rank holds its loaded checkpoint
 * until all have loaded), so an unmapped load keeps every rank's copy on
 * device 0 at once.
 *
 * Records (include/ckh/record.h, through env->record): per optimizer step
 * a step record (digests "weights", "optim", "rng", "sampler", value "lr",
 * the sample ids this rank consumed); a resume record when a rank restores
 * a checkpoint (or restarts from scratch after an earlier incarnation); a
 * save record per save attempt with its result and a message naming the
 * folder or the file that failed; a final record when the rank completes.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/atomic.h"
#include "ckh/ddp.h"
#include "ckh/endian.h"
#include "ckh/err.h"

/* ---- trainer state ---- */

struct trainer {
    int saved_world;                   /* world size of the loaded checkpoint (0: none) */
    struct ckh_env *env;               /* ops tables */
    const struct ckh_ddp_config *cfg;  /* the job */
    const struct ckh_defect_set *def;  /* switched-on defects */
    struct ckh_ddp_record *rec;        /* oracle record */
    struct ckh_ddp_rank_rec *rr;       /* this rank's record */
    int rank;                          /* collective rank */
    int world;                         /* world size */
    struct ckh_ddp_model model;        /* weights, grads, momentum */
    struct ckh_ddp_sched sched;        /* LR schedule */
    struct ckh_dsampler sampler;       /* data order */
    struct ckh_rng rng;                /* dropout stream */
    int64_t step;                      /* optimizer steps taken */
    int64_t epoch;                     /* current epoch */
    uint64_t epoch_pos;                /* rank 0's progress in the epoch */
    struct ckh_saver *saver;           /* NULL: no checkpoints */
    struct ckh_atomic at;              /* file saves */
    uint64_t staged[CKH_DDP_MAX_RANKS]; /* device bytes of loaded staging copies */
    struct ckh_gpu *gpu;               /* real device memory (env->gpu; NULL: emulated devices) */
    void *dparam[CKH_DDP_NPARAM];      /* with gpu: the weights in device memory */
    void *dgrad[CKH_DDP_NPARAM];       /* with gpu: the gradients being all-reduced */
    void *dmom[CKH_DDP_NPARAM];        /* with gpu: the momentum buffers */
    void *dstage[CKH_DDP_NPARAM];      /* with gpu: the loaded weights' staging copies */
    float *scratch;                    /* with gpu: host room for one tensor */
    float lr;                          /* LR of the last step */
    uint64_t *ids;                     /* [rec->per_step] sample ids of the step being recorded */
};

static uint64_t rng_digest(const struct ckh_rng *r)
{
    return ckh_hash64(CKH_HASH_INIT, r->s, sizeof r->s);
}

static void fill_rec(struct trainer *t, struct ckh_ddp_step_rec *s, int64_t epoch)
{
    uint32_t bits;
    memcpy(&bits, &t->lr, sizeof bits);
    s->valid = true;
    s->epoch = epoch;
    s->weights = ckh_ddp_model_digest(&t->model);
    s->optim = ckh_ddp_optim_digest(&t->model);
    s->lr_bits = bits;
    s->rng = rng_digest(&t->rng);
    s->sampler = ckh_dsampler_digest(&t->sampler);
}

/* ---- device memory ----
 * With env->gpu (the real platform's GPUs) the weights, gradients and
 * momentum live in device memory as well as in the host arrays the
 * arithmetic runs on (ckh has no device kernels): each step's gradients
 * go to the device and are all-reduced there, the updated weights and
 * momentum go back, a save reads the tensors from the device, a load
 * writes them to the device it maps them to. Without it the emulated
 * devices of rec->devices only count bytes. */

static int dev_copy(struct trainer *t, void *dst, const void *src, uint64_t bytes, enum ckh_gpu_copy dir,
                    const char *what)
{
    int rc = ckh_gpu_copy(t->gpu, dst, src, bytes, dir);
    return rc ? CKH_ERRF(t->rr->errmsg, rc, "rank %d: copying %s %s the device: %s", t->rank, what,
                         dir == CKH_GPU_TO_HOST ? "from" : "to", ckh_strerror(rc))
              : 0;
}

/* Out of memory on device dev: the message names it, the tensor and the
 * device's use. */
static int dev_oom(struct trainer *t, int dev, const char *key)
{
    uint64_t used = ckh_ddp_dev_used(&t->rec->devices, dev), cap = t->rec->devices.capacity_bytes;
    if (t->gpu)
        ckh_gpu_mem(t->gpu, dev, &used, &cap);
    return CKH_ERRF(t->rr->errmsg, CKH_EOOM_DEVICE,
                    "rank %d: GPU %d out of memory loading '%s' (%" PRIu64 " bytes in use of %" PRIu64 ")",
                    t->rank, dev, key, used, cap);
}

/* The model's device copies on this rank's device: the gradients and the
 * all-reduce's buffers first, then the job's limit (gpu_memory), then the
 * weights and momentum, which the limit bounds as the emulated devices
 * bound them. */
static int dev_setup(struct trainer *t)
{
    const struct ckh_ddp_model *m = &t->model;
    uint64_t largest = 0;
    for (int i = 0; i < CKH_DDP_NPARAM; i++)
        largest = m->count[i] > largest ? m->count[i] : largest;
    int rc = 0;
    if (!(t->scratch = ckh_calloc(t->env->alloc, largest, sizeof(float))))
        return CKH_ERRF(t->rr->errmsg, CKH_ENOMEM, "no memory for a tensor's host copy");
    for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++)
        rc = ckh_gpu_alloc(t->gpu, t->rank, m->count[i] * sizeof(float), &t->dgrad[i]);
    if (!rc)
        rc = ckh_gpu_prepare(t->gpu, largest * sizeof(float));
    if (!rc && t->cfg->device_capacity_bytes &&
        (rc = ckh_gpu_limit(t->gpu, t->rank, t->cfg->device_capacity_bytes)) != 0)
        return CKH_ERRF(t->rr->errmsg, rc,
                        "rank %d: GPU %d: holding back what is free beyond gpu_memory (%" PRIu64 " bytes): %s",
                        t->rank, t->rank, t->cfg->device_capacity_bytes, ckh_strerror(rc));
    for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++)
        if ((rc = ckh_gpu_alloc(t->gpu, t->rank, m->count[i] * sizeof(float), &t->dparam[i])) == 0)
            rc = ckh_gpu_alloc(t->gpu, t->rank, m->count[i] * sizeof(float), &t->dmom[i]);
    if (rc == CKH_EOOM_DEVICE)
        return CKH_ERRF(t->rr->errmsg, rc, "rank %d: GPU %d out of memory for the model", t->rank, t->rank);
    if (rc)
        return CKH_ERRF(t->rr->errmsg, rc, "rank %d: GPU %d: allocating the model: %s", t->rank, t->rank,
                        ckh_strerror(rc));
    return 0;
}

/* The host weights and momentum to the device (after init, a load, a step). */
static int dev_push(struct trainer *t)
{
    int rc = 0;
    for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++) {
        uint64_t bytes = t->model.count[i] * sizeof(float);
        if ((rc = dev_copy(t, t->dparam[i], t->model.param[i], bytes, CKH_GPU_TO_DEVICE, "weights")) == 0)
            rc = dev_copy(t, t->dmom[i], t->model.mom[i], bytes, CKH_GPU_TO_DEVICE, "momentum");
    }
    return rc;
}

static void dev_free_staged(struct trainer *t)
{
    for (int i = 0; i < CKH_DDP_NPARAM; i++) {
        ckh_gpu_free(t->gpu, t->dstage[i]);
        t->dstage[i] = NULL;
    }
}

static void dev_release(struct trainer *t)
{
    dev_free_staged(t);
    for (int i = 0; i < CKH_DDP_NPARAM; i++) {
        ckh_gpu_free(t->gpu, t->dparam[i]);
        ckh_gpu_free(t->gpu, t->dgrad[i]);
        ckh_gpu_free(t->gpu, t->dmom[i]);
        t->dparam[i] = t->dgrad[i] = t->dmom[i] = NULL;
    }
    ckh_free(t->env->alloc, t->scratch);
    t->scratch = NULL;
}

/* ---- checkpoint save ---- */

static int put_i64(struct ckh_ddp_sd *sd, const char *key, int64_t v)
{
    return ckh_ddp_sd_put(sd, key, CKH_DT_I64, -1, &v, sizeof v);
}

/* Puts tensor i of the model (weights, or momentum when mom) under key:
 * from the device with a gpu, from the host arrays without. */
static int put_tensor(struct trainer *t, struct ckh_ddp_sd *sd, const char *key, int i, bool mom)
{
    const void *data = mom ? t->model.mom[i] : t->model.param[i];
    uint64_t bytes = t->model.count[i] * sizeof(float);
    int rc;
    if (t->gpu) {
        if ((rc = dev_copy(t, t->scratch, mom ? t->dmom[i] : t->dparam[i], bytes, CKH_GPU_TO_HOST, key)) != 0)
            return rc;
        data = t->scratch;
    }
    return ckh_ddp_sd_put(sd, key, CKH_DT_F32, mom ? t->model.mom_device[i] : t->model.param_device[i], data,
                          bytes);
}

static int save_sd(struct trainer *t, const char *folder, const char *file, struct ckh_ddp_sd *sd)
{
    char path[CKH_PATH_MAX + 1];
    void *buf = NULL;
    size_t n = 0;
    if (ckh_path_join(path, sizeof path, folder, file))
        return CKH_EINVAL;
    int rc = ckh_ddp_sd_serialize(sd, &buf, &n);
    if (!rc) {
        rc = ckh_atomic_save(&t->at, path, buf, n);
        if (rc)
            CKH_ERRF(t->rr->errmsg, rc, "saving %s: %s", path, t->at.errmsg);
    }
    ckh_free(t->env->alloc, buf);
    return rc;
}

/* Writes this rank's files of a checkpoint into folder. */
static int write_files(struct trainer *t, const char *folder)
{
    struct ckh_alloc *a = t->env->alloc;
    struct ckh_ddp_sd sd;
    int rc = 0;
    /* One copy of the shared state per view of the folder: its leader
     * writes it (async: every rank keeps its own folders). */
    bool writes_state = t->cfg->strategy == CKH_ADIR_ASYNC ||
                        ckh_saver_view_leader(t->saver) == t->rank;
    if (writes_state) {
        ckh_ddp_sd_init(&sd, a);
        bool prefix = ckh_defect_on(t->def, CKH_DEFECT_MODULE_PREFIX_SAVED);
        for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++) {
            char key[CKH_DDP_KEY_MAX];
            snprintf(key, sizeof key, "%s%s", prefix ? "module." : "", ckh_ddp_param_names[i]);
            rc = put_tensor(t, &sd, key, i, false);
        }
        if (!rc)
            rc = save_sd(t, folder, "model.ckh", &sd);
        ckh_ddp_sd_fini(&sd);
        if (rc)
            return rc;

        ckh_ddp_sd_init(&sd, a);
        for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++) {
            char key[CKH_DDP_KEY_MAX];
            snprintf(key, sizeof key, "optim.momentum.%s", ckh_ddp_param_names[i]);
            rc = put_tensor(t, &sd, key, i, true);
        }
        unsigned char smp[CKH_SAMPLER_STATE_BYTES];
        if (!rc)
            rc = ckh_ddp_sd_put(&sd, "optim.lr", CKH_DT_F32, -1, &t->lr, sizeof t->lr);
        if (!rc)
            rc = put_i64(&sd, "sched.last_step", (int64_t)t->sched.last_step);
        if (!rc) {
            /* The state rank 0 would save: its progress is the epoch
             * position every rank shares (another rank's can be one short
             * after a reshard). */
            struct ckh_dsampler as_rank0 = t->sampler;
            as_rank0.progress = t->epoch_pos;
            rc = ckh_dsampler_save(&as_rank0, t->def, smp, sizeof smp);
        }
        if (!rc)
            rc = ckh_ddp_sd_put(&sd, "sampler", CKH_DT_U8, -1, smp, sizeof smp);
        if (!rc)
            rc = put_i64(&sd, "step", t->step);
        if (!rc)
            rc = put_i64(&sd, "epoch", t->epoch);
        if (!rc)
            rc = save_sd(t, folder, "train.ckh", &sd);
        ckh_ddp_sd_fini(&sd);
        if (rc)
            return rc;
    }
    if (!ckh_defect_on(t->def, CKH_DEFECT_RNG_NOT_SAVED)) {
        char file[64];
        snprintf(file, sizeof file, "rng_rank_%d.ckh", t->rank);
        ckh_ddp_sd_init(&sd, a);
        rc = ckh_ddp_sd_put(&sd, "rng.dropout", CKH_DT_U64, -1, t->rng.s, sizeof t->rng.s);
        if (!rc)
            rc = save_sd(t, folder, file, &sd);
        ckh_ddp_sd_fini(&sd);
    }
    return rc;
}

/* Records one save attempt (rc 0: committed) and counts a failure. */
static int record_save(struct trainer *t, int rc, const char *what)
{
    struct ckh_rec_save rs = {.step = t->step, .epoch = t->epoch, .rc = rc, .what = what};
    if (rc)
        t->rr->saves_failed++;
    int r = ckh_record_save(t->env->record, &rs);
    return r ? CKH_ERRF(t->rr->errmsg, r, "recording the save of step %" PRId64 ": %s", t->step, ckh_strerror(r))
             : 0;
}

/* Writes this rank's files and learns whether every rank wrote its own:
 * *failed is 0, or the code of a rank that failed (this one's first). */
static int write_and_vote(struct trainer *t, const char *folder, int32_t *failed)
{
    int wrc = write_files(t, folder);
    if (wrc)
        ckh_node_logf(t->env->node, "checkpoint files at step %" PRId64 " failed: %s", t->step,
                      t->rr->errmsg);
    *failed = wrc;
    if (t->cfg->strategy == CKH_ADIR_ASYNC)
        return 0;
    int32_t any = wrc;
    int rc = ckh_coll_allreduce(t->env->coll, &any, 1, CKH_DT_I32, CKH_RED_MIN, t->cfg->timeout_ns);
    if (rc)
        return CKH_ERRF(t->rr->errmsg, rc, "vote on checkpoint files: %s", ckh_strerror(rc));
    if (!wrc)
        *failed = any;
    return 0;
}

/* One checkpoint. Returns 0 or a fatal error (a collective's, or a
 * refused record); file errors are logged, recorded, and leave the
 * checkpoint uncommitted. */
static int save_checkpoint(struct trainer *t)
{
    char folder[CKH_PATH_MAX + 1], what[CKH_PATH_MAX + 320];
    ckh_node_phase(t->env->node, "save", t->epoch, t->step);
    int rc = ckh_saver_prepare(t->saver, false, folder, sizeof folder);
    if (rc) {
        ckh_node_logf(t->env->node, "checkpoint at step %" PRId64 " not prepared: %s",
                      t->step, ckh_saver_errmsg(t->saver));
        int r = record_save(t, rc, ckh_saver_errmsg(t->saver));
        ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
        /* Prepare fails on every rank together (the status is agreed). */
        return r ? r : rc == CKH_ETIMEOUT || rc == CKH_EPEER_DEAD || rc == CKH_EMISMATCH ? rc : 0;
    }
    int32_t failed = 0;
    t->rr->errmsg[0] = '\0';
    if ((rc = write_and_vote(t, folder, &failed)) != 0) {
        snprintf(what, sizeof what, "%s not committed: %s", folder, t->rr->errmsg);
        int r = record_save(t, rc, what);
        return r ? r : CKH_ERRF(t->rr->errmsg, rc, "%s", what);
    }
    if (failed) {
        snprintf(what, sizeof what, "%s not committed: %s", folder,
                 t->rr->errmsg[0] ? t->rr->errmsg : "another rank could not write its files");
        rc = record_save(t, failed, what);
        if (!rc) /* logged and recorded; the rank's message is for what ends it */
            t->rr->errmsg[0] = '\0';
    } else {
        int crc = ckh_saver_commit(t->saver, folder);
        if (crc)
            ckh_node_logf(t->env->node, "checkpoint commit at step %" PRId64 " failed: %s",
                          t->step, ckh_saver_errmsg(t->saver));
        rc = record_save(t, crc, crc ? ckh_saver_errmsg(t->saver) : folder);
        if (!rc && (crc == CKH_ETIMEOUT || crc == CKH_EPEER_DEAD))
            rc = crc;
    }
    ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
    return rc;
}

/* ---- checkpoint load ---- */

static int read_sd(struct trainer *t, const char *folder, const char *file, struct ckh_ddp_sd *sd)
{
    char path[CKH_PATH_MAX + 1];
    void *buf = NULL;
    size_t n = 0;
    if (ckh_path_join(path, sizeof path, folder, file))
        return CKH_EINVAL;
    ckh_ddp_sd_init(sd, t->env->alloc);
    int rc = ckh_atomic_read(t->env->fs, t->env->alloc, path, &buf, &n);
    if (rc)
        return CKH_ERRF(t->rr->errmsg, rc, "reading '%s': %s", path, ckh_strerror(rc));
    rc = ckh_ddp_sd_parse(sd, buf, n);
    ckh_free(t->env->alloc, buf);
    if (rc)
        return CKH_ERRF(t->rr->errmsg, rc, "parsing '%s': %s", path, ckh_strerror(rc));
    return 0;
}

static int get_i64(struct trainer *t, const struct ckh_ddp_sd *sd, const char *key, int64_t *v)
{
    const struct ckh_ddp_sd_entry *e = ckh_ddp_sd_find(sd, key);
    if (!e || e->size_bytes != sizeof *v)
        return CKH_ERRF(t->rr->errmsg, CKH_ENOTFOUND, "checkpoint lacks '%s'", key);
    memcpy(v, e->data, sizeof *v);
    return 0;
}

static bool unmapped(const struct trainer *t)
{
    return t->cfg->no_map_location || ckh_defect_on(t->def, CKH_DEFECT_NO_DEVICE_MAP);
}

/* Device a loaded tensor saved from `saved` lands on. */
static int target_device(const struct trainer *t, int saved)
{
    if (!unmapped(t) || saved < 0 || saved >= t->world)
        return t->rank;
    return saved;
}

/* A loaded tensor lands on device dev: with a gpu, *dptr is its copy in
 * device memory (data written there); without, the emulated device is
 * charged (*dptr NULL). */
static int stage(struct trainer *t, int dev, const struct ckh_ddp_sd_entry *e, const char *key, void **dptr)
{
    *dptr = NULL;
    int rc = t->gpu ? ckh_gpu_alloc(t->gpu, dev, e->size_bytes, dptr)
                    : ckh_ddp_dev_alloc(&t->rec->devices, t->rank, dev, e->size_bytes);
    if (rc == CKH_EOOM_DEVICE)
        return dev_oom(t, dev, key);
    if (rc)
        return CKH_ERRF(t->rr->errmsg, rc, "rank %d: GPU %d: loading '%s': %s", t->rank, dev, key, ckh_strerror(rc));
    if (t->gpu && (rc = dev_copy(t, *dptr, e->data, e->size_bytes, CKH_GPU_TO_DEVICE, key)) != 0) {
        ckh_gpu_free(t->gpu, *dptr);
        *dptr = NULL;
    }
    return rc;
}

static int load_model(struct trainer *t, const char *folder)
{
    struct ckh_ddp_sd sd;
    size_t idx[CKH_DDP_NPARAM];
    int rc = read_sd(t, folder, "model.ckh", &sd);
    if (rc)
        return rc;
    char msg[200];
    rc = ckh_ddp_match_keys(&sd, ckh_ddp_param_names, CKH_DDP_NPARAM, t->cfg->keymode, idx, msg,
                            sizeof msg);
    if (rc) {
        CKH_ERRF(t->rr->errmsg, rc, "loading the model: %s", msg);
        goto out;
    }
    for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++) {
        const struct ckh_ddp_sd_entry *e = &sd.entries[idx[i]];
        if (e->dtype != CKH_DT_F32 || e->size_bytes != t->model.count[i] * sizeof(float)) {
            rc = CKH_ERRF(t->rr->errmsg, CKH_EMISMATCH, "model tensor '%s' has the wrong shape", e->key);
            break;
        }
        int dev = target_device(t, e->device);
        rc = stage(t, dev, e, e->key, &t->dstage[i]);
        if (rc)
            break;
        if (!t->gpu)
            t->staged[dev] += e->size_bytes;
        memcpy(t->model.param[i], e->data, e->size_bytes);
        /* The model's own weights take the staged copy's values. */
        if (t->gpu)
            rc = dev_copy(t, t->dparam[i], t->dstage[i], e->size_bytes, CKH_GPU_ON_DEVICE, e->key);
    }
out:
    ckh_ddp_sd_fini(&sd);
    return rc;
}

/* The optimizer's momentum buffers of train.ckh, adopted on the devices
 * they were loaded to. */
static int load_momentum(struct trainer *t, const struct ckh_ddp_sd *sd)
{
    int rc = 0;
    for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++) {
        char key[CKH_DDP_KEY_MAX];
        snprintf(key, sizeof key, "optim.momentum.%s", ckh_ddp_param_names[i]);
        const struct ckh_ddp_sd_entry *e = ckh_ddp_sd_find(sd, key);
        if (!e || e->size_bytes != t->model.count[i] * sizeof(float)) {
            rc = CKH_ERRF(t->rr->errmsg, CKH_EMISMATCH, "optimizer state lacks '%s'", key);
            break;
        }
        /* The momentum buffer is adopted where it was loaded. */
        int dev = target_device(t, e->device);
        void *dmom = NULL;
        rc = stage(t, dev, e, key, &dmom);
        if (rc)
            break;
        if (t->gpu) {
            ckh_gpu_free(t->gpu, t->dmom[i]);
            t->dmom[i] = dmom;
        } else {
            ckh_ddp_dev_free(&t->rec->devices, t->rank, t->model.mom_device[i], e->size_bytes);
        }
        t->model.mom_device[i] = dev;
        memcpy(t->model.mom[i], e->data, e->size_bytes);
    }
    return rc;
}

/* The learning rate and the counters of train.ckh: the scheduler's last
 * step (into *last_step), the step and the epoch. */
static int load_counters(struct trainer *t, const struct ckh_ddp_sd *sd, int64_t *last_step)
{
    const struct ckh_ddp_sd_entry *lr = ckh_ddp_sd_find(sd, "optim.lr");
    if (!lr || lr->size_bytes != sizeof t->lr)
        return CKH_ERRF(t->rr->errmsg, CKH_ENOTFOUND, "checkpoint lacks 'optim.lr'");
    memcpy(&t->lr, lr->data, sizeof t->lr);
    int rc;
    if ((rc = get_i64(t, sd, "sched.last_step", last_step)) || (rc = get_i64(t, sd, "step", &t->step)) ||
        (rc = get_i64(t, sd, "epoch", &t->epoch)))
        return rc;
    return 0;
}

/* The sampler of train.ckh (refused when saved by another world and
 * resharding is off), then the positions that follow from it. */
static int load_sampler(struct trainer *t, const struct ckh_ddp_sd *sd, const char *folder, int64_t last_step)
{
    const struct ckh_ddp_sd_entry *smp = ckh_ddp_sd_find(sd, "sampler");
    if (!smp)
        return CKH_ERRF(t->rr->errmsg, CKH_ENOTFOUND, "checkpoint lacks the sampler state");
    /* The world the checkpoint was saved under (state format in
     * sampler.h: magic, kind, world): load_rng needs it. */
    if (smp->size_bytes >= 16)
        t->saved_world = (int)ckh_get_le32((const unsigned char *)smp->data + 12);
    /* Another world size without resharding: refuse it by name,
     * before anything of the checkpoint is adopted. */
    if (!t->cfg->reshard && t->saved_world > 0 && t->saved_world != t->world)
        return CKH_ERRF(t->rr->errmsg, CKH_EMISMATCH, "checkpoint %s was saved by %d ranks; this job has %d and resharding is off",
                     folder, t->saved_world, t->world);
    int rc = ckh_dsampler_load_defects(&t->sampler, smp->data, smp->size_bytes, t->cfg->reshard, t->def);
    if (rc) {
        CKH_ERRF(t->rr->errmsg, rc, "sampler: %s", t->sampler.errmsg);
        return rc;
    }
    if (ckh_defect_on(t->def, CKH_DEFECT_RESUME_EPOCH_FROM_START))
        ckh_dsampler_set_epoch(&t->sampler, t->sampler.epoch);
    /* Rank 0's progress is the epoch position of every rank. */
    t->epoch_pos = t->sampler.progress;
    uint64_t mine = ckh_dsampler_len(&t->sampler);
    t->sampler.progress = t->epoch_pos < mine ? t->epoch_pos : mine;
    t->sched.last_step = ckh_defect_on(t->def, CKH_DEFECT_SCHEDULER_REBUILT_AFTER_OPTIMIZER)
                             ? 0
                             : (uint64_t)last_step;
    return 0;
}

static int load_train(struct trainer *t, const char *folder)
{
    struct ckh_ddp_sd sd;
    int rc = read_sd(t, folder, "train.ckh", &sd);
    if (rc)
        return rc;
    int64_t last_step = 0;
    if (!(rc = load_momentum(t, &sd)) && !(rc = load_counters(t, &sd, &last_step)))
        rc = load_sampler(t, &sd, folder, last_step);
    ckh_ddp_sd_fini(&sd);
    return rc;
}

static int load_rng(struct trainer *t, const char *folder)
{
    if (ckh_defect_on(t->def, CKH_DEFECT_RNG_NOT_SAVED))
        return 0;
    char file[64], path[CKH_PATH_MAX + 1];
    snprintf(file, sizeof file, "rng_rank_%d.ckh", t->rank);
    if (ckh_path_join(path, sizeof path, folder, file))
        return CKH_EINVAL;
    /* Only a rank the saved world did not have starts a fresh stream; a
     * missing file of a rank that existed is damage, never a new rank. */
    if (t->cfg->reshard && t->rank >= t->saved_world && t->saved_world > 0 &&
        !ckh_fs_exists(t->env->fs, path))
        return 0;
    struct ckh_ddp_sd sd;
    int rc = read_sd(t, folder, file, &sd);
    if (rc)
        return rc;
    const struct ckh_ddp_sd_entry *e = ckh_ddp_sd_find(&sd, "rng.dropout");
    if (!e || e->size_bytes != sizeof t->rng.s)
        rc = CKH_ERRF(t->rr->errmsg, CKH_ENOTFOUND, "'%s' lacks rng.dropout", file);
    else
        memcpy(t->rng.s, e->data, sizeof t->rng.s);
    ckh_ddp_sd_fini(&sd);
    return rc;
}

/* Every rank loaded the same step (an all-reduce, which also keeps each
 * rank's staging copies until all have loaded). A rank that failed to
 * load does not vote; its own error ends it. */
static int agree_loaded(struct trainer *t, bool voted)
{
    int64_t v[2] = {voted ? t->step : INT64_MIN, voted ? -t->step : INT64_MIN};
    int rc = ckh_coll_allreduce(t->env->coll, v, 2, CKH_DT_I64, CKH_RED_MAX, t->cfg->timeout_ns);
    if (rc)
        return CKH_ERRF(t->rr->errmsg, rc, "all-reduce after load: %s", ckh_strerror(rc));
    if (voted && v[0] != -v[1])
        return CKH_ERRF(t->rr->errmsg, CKH_EMISMATCH,
                        "ranks resumed from different steps (%" PRId64 " to %" PRId64
                        "): their savers' latest checkpoints disagree",
                        -v[1], v[0]);
    return 0;
}

/* Tells the record where this incarnation starts: the restored
 * checkpoint, or scratch after an earlier incarnation. */
static int record_resume(struct trainer *t, bool restored)
{
    if (!restored && t->rr->incarnations <= 1)
        return 0;
    struct ckh_rec_resume rr = {.step = restored ? t->step : 0, .epoch = restored ? t->epoch : 0};
    int rc = ckh_record_resume(t->env->record, &rr);
    return rc ? CKH_ERRF(t->rr->errmsg, rc, "recording the resume: %s", ckh_strerror(rc)) : 0;
}

static int load_checkpoint(struct trainer *t)
{
    char folder[CKH_PATH_MAX + 1];
    ckh_node_phase(t->env->node, "load", -1, -1);
    /* Collective (the saver's agreement): the same checkpoint on every rank. */
    int rc = ckh_saver_resume(t->saver, folder, sizeof folder);
    bool have = rc == 0;
    if (rc && rc != CKH_ENOTFOUND)
        rc = CKH_ERRF(t->rr->errmsg, rc, "latest checkpoint: %s", ckh_saver_errmsg(t->saver));
    else
        rc = 0;
    if (have) {
        rc = load_model(t, folder);
        if (!rc)
            rc = load_train(t, folder);
        if (!rc)
            rc = load_rng(t, folder);
        if (!rc)
            t->rr->resumed_step = t->step;
    }
    int arc = agree_loaded(t, rc == 0);
    dev_free_staged(t);
    for (int d = 0; d < t->world && !t->gpu; d++) {
        ckh_ddp_dev_free(&t->rec->devices, t->rank, d, t->staged[d]);
        t->staged[d] = 0;
    }
    if (!rc)
        rc = arc;
    if (!rc)
        rc = record_resume(t, have);
    return rc;
}

/* ---- training loop ---- */

/* Accumulates one step's gradients: up to accum micro-batches of this
 * rank's samples, whose ids go to ids (per_step slots). */
static int accumulate(struct trainer *t, float *x, float *y, float scale, uint64_t len_max,
                      uint32_t *ids)
{
    const struct ckh_ddp_config *c = t->cfg;
    uint32_t nids = 0;
    int rc = 0;
    for (uint32_t a = 0; a < c->accum && t->epoch_pos < len_max; a++) {
        uint64_t take = len_max - t->epoch_pos < c->batch ? len_max - t->epoch_pos : c->batch;
        uint64_t left = ckh_dsampler_remaining(&t->sampler);
        uint64_t mine = take < left ? take : left;
        for (uint64_t k = 0; k < mine && !rc; k++) {
            uint64_t idx;
            rc = ckh_dsampler_get(&t->sampler, k, &idx);
            if (rc)
                break;
            ckh_ddp_sample(c, idx, x, y);
            ckh_ddp_model_backward(&t->model, x, y, c->dropout, &t->rng, scale);
            if (nids < t->rec->per_step)
                ids[nids++] = (uint32_t)idx;
        }
        if (!rc)
            rc = ckh_dsampler_advance(&t->sampler, mine);
        t->epoch_pos += take;
    }
    return rc;
}

/* Sums every gradient over the ranks. */
static int allreduce_grads(struct trainer *t, int64_t slot)
{
    int rc = 0;
    for (int i = 0; i < CKH_DDP_NPARAM && !rc; i++) {
        uint64_t bytes = t->model.count[i] * sizeof(float);
        if (t->gpu) {
            /* On the device: the gradients go there, are all-reduced
             * there, and come back for the optimizer step. */
            if ((rc = dev_copy(t, t->dgrad[i], t->model.grad[i], bytes, CKH_GPU_TO_DEVICE, "gradients")) != 0)
                break;
            rc = ckh_gpu_allreduce(t->gpu, t->dgrad[i], t->model.count[i], CKH_DT_F32, CKH_RED_SUM,
                                   t->cfg->timeout_ns);
        } else {
            rc = ckh_coll_allreduce(t->env->coll, t->model.grad[i], t->model.count[i], CKH_DT_F32,
                                    CKH_RED_SUM, t->cfg->timeout_ns);
        }
        if (rc) {
            CKH_ERRF(t->rr->errmsg, rc, "gradient all-reduce at step %" PRId64 ": %s", slot, ckh_strerror(rc));
            break;
        }
        if (t->gpu)
            rc = dev_copy(t, t->model.grad[i], t->dgrad[i], bytes, CKH_GPU_TO_HOST, "gradients");
    }
    return rc;
}

/* The step record of `slot` (state after it, its LR, its sample ids). */
static int record_step(struct trainer *t, int64_t slot, const struct ckh_ddp_step_rec *sr)
{
    const uint32_t *ids = t->rr->samples + (uint64_t)slot * t->rec->per_step;
    size_t n = 0;
    for (uint32_t k = 0; k < t->rec->per_step; k++)
        if (ids[k] != UINT32_MAX)
            t->ids[n++] = ids[k];
    const struct ckh_rec_digest dg[] = {
        {"weights", sr->weights}, {"optim", sr->optim}, {"rng", sr->rng}, {"sampler", sr->sampler}};
    const struct ckh_rec_value lr = {"lr", (double)t->lr};
    const struct ckh_rec_step rs = {.step = slot, .epoch = sr->epoch, .digests = dg,
                                    .ndigests = sizeof dg / sizeof dg[0], .values = &lr,
                                    .nvalues = 1, .samples = t->ids, .nsamples = n};
    int rc = ckh_record_step(t->env->record, &rs);
    return rc ? CKH_ERRF(t->rr->errmsg, rc, "recording step %" PRId64 ": %s", slot, ckh_strerror(rc)) : 0;
}

/* The final record: epochs and steps done, a digest of the final state,
 * and the dataset's size and drop_last for the reshard oracle
 * (include/ckh/record.h). */
static int record_final(struct trainer *t)
{
    const struct ckh_ddp_step_rec *f = &t->rr->final;
    const uint64_t parts[] = {f->weights, f->optim, f->lr_bits, f->rng, f->sampler};
    const struct ckh_rec_value values[] = {{"dataset_size", (double)t->cfg->samples},
                                           {"drop_last", t->cfg->drop_last ? 1.0 : 0.0}};
    const struct ckh_rec_final rf = {.epochs = t->epoch, .steps = t->step, .total = t->step,
                                     .has_digest = true,
                                     .digest = ckh_hash64(CKH_HASH_INIT, parts, sizeof parts),
                                     .values = values, .nvalues = 2};
    int rc = ckh_record_final(t->env->record, &rf);
    return rc ? CKH_ERRF(t->rr->errmsg, rc, "recording the end: %s", ckh_strerror(rc)) : 0;
}

/* The optimizer step `slot`, then its bookkeeping: the epoch may end, the
 * step is recorded and announced, a checkpoint is taken when due. */
static int end_step(struct trainer *t, int64_t slot, uint64_t len_max, bool *epoch_end)
{
    const struct ckh_ddp_config *c = t->cfg;
    int64_t step_epoch = t->epoch;
    int rc = 0;
    ckh_ddp_sgd_step(&t->model, t->lr, c->momentum, c->weight_decay);
    if (t->gpu && (rc = dev_push(t)) != 0)
        return rc;
    t->sched.last_step++;
    t->step = slot;
    *epoch_end = t->epoch_pos >= len_max;
    if (*epoch_end) {
        t->epoch++;
        ckh_dsampler_set_epoch(&t->sampler, t->epoch);
        t->epoch_pos = 0;
    }
    fill_rec(t, &t->rr->steps[slot], step_epoch);
    if ((rc = record_step(t, slot, &t->rr->steps[slot])) != 0)
        return rc;
    /* Each finished step is announced: triggers aim at steps, and the
     * harness measures work lost to a crash in steps. */
    ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
    bool due = (c->ckpt_every && t->step % (int64_t)c->ckpt_every == 0) ||
               (*epoch_end && c->ckpt_epoch_end);
    if (t->saver && due)
        rc = save_checkpoint(t);
    if (!rc && c->halt_after_step > 0 && t->step == c->halt_after_step)
        rc = CKH_ERRF(t->rr->errmsg, CKH_EKILLED, "halted after step %" PRId64, t->step);
    return rc;
}

static int train(struct trainer *t)
{
    const struct ckh_ddp_config *c = t->cfg;
    float *x = ckh_calloc(t->env->alloc, c->in_dim + c->out_dim, sizeof *x);
    if (!x)
        return CKH_ERRF(t->rr->errmsg, CKH_ENOMEM, "no memory for a sample");
    float *y = x + c->in_dim;
    int rc = 0;
    float scale = 1.0f / (float)((uint64_t)c->batch * c->accum * (uint64_t)t->world);
    while (t->epoch < c->epochs && !rc) {
        ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
        uint64_t len_max = ckh_dsampler_len_max(&t->sampler);
        while (t->epoch_pos < len_max && !rc) {
            int64_t slot = t->step + 1;
            bool epoch_end = false;
            if ((uint64_t)slot > t->rec->max_steps) {
                rc = CKH_ERRF(t->rr->errmsg, CKH_ELIMIT, "more steps than the record holds");
                break;
            }
            uint32_t *ids = t->rr->samples + (uint64_t)slot * t->rec->per_step;
            memset(ids, 0xff, t->rec->per_step * sizeof *ids);
            t->lr = ckh_ddp_sched_lr(&t->sched);
            rc = accumulate(t, x, y, scale, len_max, ids);
            if (!rc)
                rc = allreduce_grads(t, slot);
            if (rc)
                break;
            rc = end_step(t, slot, len_max, &epoch_end);
            if (epoch_end)
                break;
        }
    }
    ckh_free(t->env->alloc, x);
    return rc;
}

/* ---- node main ---- */

/* The model's device memory: real devices (allocated, then the weights
 * pushed) or the emulated ones. */
static int setup_devices(struct trainer *t)
{
    int rc;
    if (t->gpu)
        rc = dev_setup(t);
    else if ((rc = ckh_ddp_dev_alloc(&t->rec->devices, t->rank, t->rank, 2 * ckh_ddp_model_bytes(&t->model))) != 0)
        CKH_ERRF(t->rr->errmsg, rc, "rank %d: GPU %d out of memory for the model", t->rank, t->rank);
    if (!rc && t->gpu)
        rc = dev_push(t);
    return rc;
}

/* The learning-rate schedule, this rank's sampler and its dropout stream. */
static int setup_schedule(struct trainer *t)
{
    const struct ckh_ddp_config *c = t->cfg;
    t->sched.base_lr = c->lr;
    t->sched.min_lr = c->min_lr;
    t->sched.warmup_steps = c->warmup_steps;
    t->sched.total_steps = ckh_ddp_total_steps(c);
    int rc = ckh_dsampler_init(&t->sampler, t->env->alloc, c->samples, t->world, t->rank,
                               ckh_seed_derive(c->seed, "ddp-sampler"), c->drop_last);
    if (rc) {
        CKH_ERRF(t->rr->errmsg, rc, "sampler init");
        return rc;
    }
    ckh_rng_seed(&t->rng, ckh_seed_derive(c->seed, "ddp-dropout") ^ ckh_mix64((uint64_t)t->rank + 1));
    return 0;
}

/* The saver of the job's checkpoint folder. */
static int create_saver(struct trainer *t)
{
    const struct ckh_ddp_config *c = t->cfg;
    const struct ckh_saver_config sc = {
        .output_dir = c->ckpt_dir,
        .name = c->saver_name ? c->saver_name : "ddp",
        .keep_last = c->keep_last,
        .strategy = (enum ckh_saver_strategy)c->strategy,
        .timeout_ns = c->timeout_ns,
        .defects = t->def,
    };
    const struct ckh_saver_ops *ops = c->saver ? c->saver : &ckh_atomic_dir_saver_ops;
    int rc = ckh_saver_create(ops, t->env, &sc, &t->saver);
    if (rc)
        CKH_ERRF(t->rr->errmsg, rc, "checkpoint saver '%s': %s", ops->name ? ops->name : "?", ckh_strerror(rc));
    return rc;
}

static int run(struct trainer *t)
{
    const struct ckh_ddp_config *c = t->cfg;
    int rc = ckh_ddp_model_init(&t->model, t->env->alloc, c, t->rank);
    if (rc)
        return CKH_ERRF(t->rr->errmsg, rc, "model init: %s", ckh_strerror(rc));
    if ((rc = setup_devices(t)) != 0 || (rc = setup_schedule(t)) != 0)
        goto out_model;
    rc = ckh_atomic_init(&t->at, t->env, t->def);
    if (rc)
        goto out_sampler;
    t->ids = ckh_calloc(t->env->alloc, t->rec->per_step ? t->rec->per_step : 1, sizeof *t->ids);
    if (!t->ids) {
        rc = CKH_ERRF(t->rr->errmsg, CKH_ENOMEM, "no memory for the sample ids of a step");
        goto out_sampler;
    }
    if (c->ckpt_dir) {
        if ((rc = create_saver(t)) != 0)
            goto out_ids;
        if ((rc = load_checkpoint(t)) != 0)
            goto out_saver;
    }
    if (c->reshard) {
        /* A resized job's record keeps only the history that led here:
         * steps after the resume point are rewritten by this run or were
         * lost with the old world. */
        ckh_ddp_record_forget_after(t->rec, t->rank, t->step);
        for (int r = t->world; t->rank == 0 && r < t->rec->world; r++)
            ckh_ddp_record_forget_after(t->rec, r, t->step);
    }
    rc = train(t);
    if (!rc) {
        t->rr->final_step = t->step;
        t->rr->final_epoch = t->epoch;
        fill_rec(t, &t->rr->final, t->epoch);
        rc = record_final(t);
    }
out_saver:
    ckh_saver_destroy(t->saver);
out_ids:
    ckh_free(t->env->alloc, t->ids);
out_sampler:
    ckh_dsampler_fini(&t->sampler);
out_model:
    dev_release(t);
    ckh_ddp_model_fini(&t->model);
    return rc;
}

int ckh_ddp_node_main(struct ckh_env *env, void *arg)
{
    struct ckh_ddp_node_arg *na = arg;
    if (!env || !na || !na->cfg || !na->rec || na->rank < 0 || na->rank >= na->rec->world ||
        na->cfg->world < 1 || na->cfg->world > na->rec->world)
        return CKH_EINVAL;
    int world = ckh_coll_world_size(env->coll);
    struct ckh_ddp_rank_rec *rr = &na->rec->ranks[na->rank];
    rr->incarnations++;
    rr->finished = false;
    rr->errmsg[0] = '\0';
    rr->resumed_step = -1;
    /* A restarted process starts with no device memory. */
    memset(na->rec->devices.used[na->rank], 0, sizeof na->rec->devices.used[na->rank]);
    if (world != na->cfg->world || ckh_coll_rank(env->coll) != na->rank) {
        rr->status = CKH_EMISMATCH;
        snprintf(rr->errmsg, sizeof rr->errmsg, "collective group is rank %d of %d, job wants %d of %d",
                 ckh_coll_rank(env->coll), world, na->rank, na->cfg->world);
        return rr->status;
    }
    struct trainer *t = ckh_calloc(env->alloc, 1, sizeof *t);
    if (!t) {
        rr->status = CKH_ENOMEM;
        return rr->status;
    }
    t->env = env;
    t->cfg = na->cfg;
    t->def = &na->cfg->defects;
    t->rec = na->rec;
    t->rr = rr;
    t->rank = na->rank;
    t->world = world;
    t->gpu = env->gpu;
    int rc = run(t);
    ckh_free(env->alloc, t);
    rr->status = rc;
    rr->finished = rc == 0;
    if (rc)
        ckh_node_logf(env->node, "ddp-train rank %d: %s (%s)", na->rank, rr->errmsg,
                      ckh_err_name(rc));
    return rc;
}
