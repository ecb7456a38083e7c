/* The example loop's checkpoints: its state file and its own directory
 * saver, written only against ckh_fs and ckh_coll.
 *
 * State file D/step_<N>/rank_<R>.bin (little-endian):
 *   "EXLOOP01", u32 rank, u32 world, u32 dim, u32 0, i64 step, i64 epoch,
 *   u64 sampler seed, u64 sampler epoch, u64 sampler position,
 *   u64 RNG state, f32 LR and f32 loss of the last step (what a job that
 *   resumes at its last step reports), f32 weights[dim], f32 momentum[dim],
 *   u32 CRC-32C of every byte before it.
 *
 * Save protocol (every rank, every `checkpoint_every` steps):
 *   1. mkdir D/step_<N> (an existing one is fine: shared disk, or a step
 *      saved again after a restart), fsync D;
 *   2. write rank_<R>.bin, fsync it, fsync the folder;
 *   3. vote: all-reduce (min) of every rank's result; a failure anywhere
 *      leaves the folder uncommitted on every rank;
 *   4. the leader of each view commits: the lowest rank whose file this
 *      rank sees (rank 0 on a shared disk, every rank on node-local
 *      disks) writes COMMITTED atomically (tmp, fsync, rename, fsync the
 *      folder), then `latest` atomically (tmp, fsync, rename, fsync D),
 *      then applies retention (committed folders beyond keep_last, and
 *      uncommitted older ones, marker first);
 *   5. all-reduce (min) of the commit results: every rank records the
 *      same save result.
 * With async_save, step 2 runs in a background task (a second program of
 * the node, ckh_node_spawn) and steps 3 to 5 at the next save, after the
 * task is joined (below).
 * Load protocol (every rank, on start): this rank's candidate is the
 * folder `latest` names when it is committed and holds an intact file of
 * this rank, else the newest such folder; the ranks take the newest
 * candidate if every rank holds its file of it, else the oldest if all
 * hold that, else start afresh. A rank behind the chosen one (node-local
 * disks: killed between the vote and its own commit) finishes that commit
 * itself: every rank voted, so its file is durable. Then every rank loads
 * its file and the ranks agree that all of them did.
 *
 * Planted bugs (each built as its own library; ckh knows none of them):
 *   EXAMPLE_BUG_RNG_NOT_RESTORED     load keeps the RNG's fresh seed
 *   EXAMPLE_BUG_SAMPLER_POS_NOT_SAVED save writes position 0: a resumed
 *                                    epoch starts over
 *   EXAMPLE_BUG_LR_BEFORE_STEP       load rebuilds the LR schedule from the
 *                                    step counter before restoring it
 *   EXAMPLE_BUG_MOMENTUM_NOT_SAVED   save writes zero momentum
 *   EXAMPLE_BUG_LATEST_BEFORE_COMMIT the leader moves `latest` before it
 *                                    writes the commit marker
 *   EXAMPLE_BUG_ASYNC_COMMIT_EARLY   async_save: the vote and commit do not
 *                                    wait for the background write
 *
 * Sections: the state file; the pointer and the marker; save; asynchronous
 * save; load; verify.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/endian.h"
#include "ckh/err.h"
#include "ckh/record.h"
#include "example.h"

#define STATE_MAGIC "EXLOOP01"
#define STATE_HEAD 80
#define STATE_MAX (STATE_HEAD + 8 * EX_DIM_MAX + 4)
#define MARKER "COMMITTED"

/* A state file, decoded. */
struct ex_state {
    uint32_t rank, world, dim; /* who wrote it, for which job */
    int64_t step, epoch;       /* progress */
    uint64_t smp_seed;         /* sampler */
    uint64_t smp_epoch;
    uint64_t smp_pos;
    uint64_t rng;              /* RNG state */
    float lr, loss;            /* of the last step */
    float w[EX_DIM_MAX];       /* weights */
    float v[EX_DIM_MAX];       /* momentum */
};

/* ---- the state file ---- */

static size_t state_size(uint32_t dim)
{
    return STATE_HEAD + 8 * (size_t)dim + 4;
}

static void put_f32s(unsigned char *p, const float *f, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &f[i], 4);
        ckh_put_le32(p + 4 * i, bits);
    }
}

static void get_f32s(const unsigned char *p, float *f, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t bits = ckh_get_le32(p + 4 * i);
        memcpy(&f[i], &bits, 4);
    }
}

static size_t encode(const struct ex_trainer *t, unsigned char *b)
{
    const struct ex_config *c = t->cfg;
    memset(b, 0, STATE_MAX);
    memcpy(b, STATE_MAGIC, 8);
    ckh_put_le32(b + 8, (uint32_t)t->rank);
    ckh_put_le32(b + 12, (uint32_t)c->world);
    ckh_put_le32(b + 16, c->dim);
    ckh_put_le64(b + 24, (uint64_t)t->step);
    ckh_put_le64(b + 32, (uint64_t)t->epoch);
    ckh_put_le64(b + 40, t->smp.seed);
    ckh_put_le64(b + 48, (uint64_t)t->smp.epoch);
#ifdef EXAMPLE_BUG_SAMPLER_POS_NOT_SAVED
    ckh_put_le64(b + 56, 0); /* BUG: the position in the epoch is not saved */
#else
    ckh_put_le64(b + 56, t->smp.pos);
#endif
    ckh_put_le64(b + 64, t->rng.s);
    put_f32s(b + 72, &t->lr, 1);
    put_f32s(b + 76, &t->loss, 1);
    put_f32s(b + STATE_HEAD, t->w, c->dim);
#ifndef EXAMPLE_BUG_MOMENTUM_NOT_SAVED
    put_f32s(b + STATE_HEAD + 4 * c->dim, t->v, c->dim); /* BUG when missing: momentum lost */
#endif
    size_t n = state_size(c->dim);
    ckh_put_le32(b + n - 4, ckh_crc32c(0, b, n - 4));
    return n;
}

/* Decodes a state file of `n` bytes; step_want >= 0 must match. */
static int decode(const unsigned char *b, size_t n, int64_t step_want, struct ex_state *st,
                  char *msg, size_t msglen)
{
    if (n < STATE_HEAD + 4 || memcmp(b, STATE_MAGIC, 8) != 0)
        return ckh_errf(msg, msglen, CKH_EFOREIGN, "not an example-loop state file");
    st->dim = ckh_get_le32(b + 16);
    if (st->dim < 1 || st->dim > EX_DIM_MAX || n != state_size(st->dim))
        return ckh_errf(msg, msglen, CKH_ETRUNCATED, "%zu bytes, expected %zu", n,
                        st->dim <= EX_DIM_MAX ? state_size(st->dim) : (size_t)0);
    if (ckh_get_le32(b + n - 4) != ckh_crc32c(0, b, n - 4))
        return ckh_errf(msg, msglen, CKH_ECORRUPT, "checksum mismatch");
    st->rank = ckh_get_le32(b + 8);
    st->world = ckh_get_le32(b + 12);
    st->step = (int64_t)ckh_get_le64(b + 24);
    st->epoch = (int64_t)ckh_get_le64(b + 32);
    st->smp_seed = ckh_get_le64(b + 40);
    st->smp_epoch = ckh_get_le64(b + 48);
    st->smp_pos = ckh_get_le64(b + 56);
    st->rng = ckh_get_le64(b + 64);
    get_f32s(b + 72, &st->lr, 1);
    get_f32s(b + 76, &st->loss, 1);
    get_f32s(b + STATE_HEAD, st->w, st->dim);
    get_f32s(b + STATE_HEAD + 4 * st->dim, st->v, st->dim);
    if (step_want >= 0 && st->step != step_want)
        return ckh_errf(msg, msglen, CKH_EMISMATCH, "holds step %" PRId64 ", its folder says %" PRId64,
                        st->step, step_want);
    return 0;
}

/* Reads and decodes dir/step_<step>/<file>. */
static int read_state(struct ckh_fs *fs, const char *dir, int64_t step, const char *file,
                      struct ex_state *st, char *msg, size_t msglen)
{
    char path[CKH_PATH_MAX + 1], sub[64];
    unsigned char b[STATE_MAX];
    size_t n = 0;
    snprintf(sub, sizeof sub, "step_%" PRId64 "/%s", step, file);
    if (ckh_path_join(path, sizeof path, dir, sub))
        return ckh_errf(msg, msglen, CKH_EINVAL, "path too long");
    int rc = exd_read_file(fs, path, b, sizeof b, &n);
    if (rc)
        return ckh_errf(msg, msglen, rc, "%s: %s", path, ckh_strerror(rc));
    char why[160];
    rc = decode(b, n, step, st, why, sizeof why);
    return rc ? ckh_errf(msg, msglen, rc, "%s: %s", path, why) : 0;
}

/* ---- the pointer and the marker ---- */

/* The step `latest` in fs names: 0 with *step (0: no pointer yet), or
 * CKH_ECORRUPT when it holds anything but "step_<N>\n". */
static int read_latest(struct ckh_fs *fs, const char *dir, int64_t *step, char *msg, size_t msglen)
{
    char path[CKH_PATH_MAX + 1], b[64];
    size_t n = 0;
    *step = 0;
    if (ckh_path_join(path, sizeof path, dir, "latest"))
        return ckh_errf(msg, msglen, CKH_EINVAL, "path too long");
    int rc = exd_read_file(fs, path, b, sizeof b - 1, &n);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return ckh_errf(msg, msglen, rc == CKH_ELIMIT ? CKH_ECORRUPT : rc, "%s: %s", path,
                        ckh_strerror(rc));
    b[n] = '\0';
    if (n < 2 || b[n - 1] != '\n')
        return ckh_errf(msg, msglen, CKH_ECORRUPT, "%s holds '%s', expected step_<N>", path, b);
    b[n - 1] = '\0';
    if (!exd_parse_num(b, "step_", step) || *step < 1)
        return ckh_errf(msg, msglen, CKH_ECORRUPT, "%s holds '%s', expected step_<N>", path, b);
    return 0;
}

/* True when D/step_<step> holds a marker for this step. */
static bool committed(struct ckh_fs *fs, const char *dir, int64_t step)
{
    char path[CKH_PATH_MAX + 1], sub[64], b[64], want[64];
    size_t n = 0;
    snprintf(sub, sizeof sub, "step_%" PRId64 "/" MARKER, step);
    if (ckh_path_join(path, sizeof path, dir, sub) || exd_read_file(fs, path, b, sizeof b - 1, &n))
        return false;
    b[n] = '\0';
    snprintf(want, sizeof want, "step %" PRId64 " world ", step);
    return strncmp(b, want, strlen(want)) == 0;
}

/* ---- save ---- */

static int folder_path(struct ex_trainer *t, int64_t step, char *buf, size_t n, char *name,
                       size_t namelen)
{
    snprintf(name, namelen, "step_%" PRId64, step);
    if (ckh_path_join(buf, n, t->cfg->dir, name))
        return ckh_errf(t->msg, sizeof t->msg, CKH_EINVAL, "path too long");
    return 0;
}

/* D itself (a fresh disk has none): made and its entry synced. */
static int ensure_dir(struct ex_trainer *t)
{
    struct ckh_fs *fs = t->env->fs;
    char parent[CKH_PATH_MAX + 1];
    if (ckh_fs_exists(fs, t->cfg->dir))
        return 0;
    int rc = ckh_fs_mkdirs(fs, t->cfg->dir);
    if (rc == -EEXIST) /* another rank on the shared disk was first */
        rc = 0;
    if (!rc && !(rc = ckh_path_dirname(t->cfg->dir, parent, sizeof parent)))
        rc = ckh_fs_fsync_dir(fs, parent);
    return rc ? ckh_errf(t->msg, sizeof t->msg, rc, "making '%s': %s", t->cfg->dir,
                         ckh_strerror(rc))
              : 0;
}

/* Steps 1 and 2: this rank's file, durable. */
static int write_mine(struct ex_trainer *t, const char *folder, const char *name)
{
    struct ckh_fs *fs = t->env->fs;
    unsigned char b[STATE_MAX];
    char file[32];
    int rc = ensure_dir(t);
    if (!rc)
        rc = exd_mkdir_durable(fs, t->cfg->dir, name, t->msg, sizeof t->msg);
    if (rc)
        return rc;
    snprintf(file, sizeof file, "rank_%d.bin", t->rank);
    size_t n = encode(t, b);
    rc = exd_write_file(fs, folder, file, b, n, t->msg, sizeof t->msg);
    if (!rc && (rc = ckh_fs_fsync_dir(fs, folder)) != 0)
        ckh_errf(t->msg, sizeof t->msg, rc, "fsync directory '%s': %s", folder, ckh_strerror(rc));
    return rc;
}

/* The leader of a view is the lowest rank whose file it sees. */
static bool leads(struct ex_trainer *t, const char *folder)
{
    for (int r = 0; r < t->rank; r++) {
        char path[CKH_PATH_MAX + 1], file[32];
        snprintf(file, sizeof file, "rank_%d.bin", r);
        if (!ckh_path_join(path, sizeof path, folder, file) && ckh_fs_exists(t->env->fs, path))
            return false;
    }
    return true;
}

/* Marker, then pointer: after the pointer's rename is durable, a
 * restarted rank resumes from this folder. */
static int commit(struct ex_trainer *t, const char *folder, const char *name, int64_t step)
{
    struct ckh_fs *fs = t->env->fs;
    char marker[64], latest[64];
    int nm = snprintf(marker, sizeof marker, "step %" PRId64 " world %d\n", step, t->cfg->world);
    int nl = snprintf(latest, sizeof latest, "%s\n", name);
#ifdef EXAMPLE_BUG_LATEST_BEFORE_COMMIT
    /* BUG: the pointer moves first; a crash before the marker leaves
     * `latest` naming a folder that was never committed. */
    int rc = exd_write_atomic(fs, t->cfg->dir, "latest", latest, (size_t)nl, t->rank, t->msg,
                              sizeof t->msg);
    if (!rc)
        rc = exd_write_atomic(fs, folder, MARKER, marker, (size_t)nm, t->rank, t->msg,
                              sizeof t->msg);
#else
    int rc = exd_write_atomic(fs, folder, MARKER, marker, (size_t)nm, t->rank, t->msg,
                              sizeof t->msg);
    if (!rc)
        rc = exd_write_atomic(fs, t->cfg->dir, "latest", latest, (size_t)nl, t->rank, t->msg,
                              sizeof t->msg);
#endif
    return rc;
}

/* Newest first. */
static int by_step_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Retention, by the leader once `latest` names step: committed folders
 * older than the keep_last newest go, and so do older uncommitted ones. */
static int retain(struct ex_trainer *t, int64_t step)
{
    struct ckh_fs *fs = t->env->fs;
    struct ckh_listing l = {0};
    int rc = ckh_fs_listdir(fs, t->cfg->dir, &l);
    if (rc)
        return ckh_errf(t->msg, sizeof t->msg, rc, "listing '%s': %s", t->cfg->dir,
                        ckh_strerror(rc));
    int64_t *older = ckh_calloc(t->env->alloc, l.count + 1, sizeof *older);
    size_t n = 0;
    if (!older) {
        rc = ckh_errf(t->msg, sizeof t->msg, CKH_ENOMEM, "no memory for retention");
        goto out_listing;
    }
    for (size_t i = 0; i < l.count; i++) {
        int64_t s;
        if (l.entries[i].type == CKH_FT_DIR && exd_parse_num(l.entries[i].name, "step_", &s) &&
            s < step)
            older[n++] = s;
    }
    /* Listings are sorted by name, not number. */
    qsort(older, n, sizeof *older, by_step_desc);
    int kept = 1; /* the folder just committed */
    for (size_t i = 0; i < n && !rc; i++) {
        char name[32];
        snprintf(name, sizeof name, "step_%" PRId64, older[i]);
        bool keep = committed(fs, t->cfg->dir, older[i]) &&
                    (t->cfg->keep_last == 0 || kept < t->cfg->keep_last);
        if (keep)
            kept++;
        else
            rc = exd_remove_folder(fs, t->cfg->dir, name, MARKER, t->msg, sizeof t->msg);
    }
    ckh_free(t->env->alloc, older);
out_listing:
    ckh_fs_listing_free(&l);
    return rc;
}

static void record_save(struct ex_trainer *t, int64_t step, int64_t epoch, int rc)
{
    struct ckh_rec_save s = {
        .step = step,
        .epoch = epoch,
        .rc = rc,
        .what = rc ? t->msg : NULL,
    };
    ckh_record_save(t->env->record, &s);
}

/* All-reduce (min) of each rank's result; a collective failure is fatal. */
static int agree(struct ex_trainer *t, int *rc, int64_t step, const char *what)
{
    int32_t v = *rc;
    int crc = ckh_coll_allreduce(t->env->coll, &v, 1, CKH_DT_I32, CKH_RED_MIN, t->cfg->timeout_ns);
    if (crc)
        return ckh_errf(t->msg, sizeof t->msg, crc, "%s of step %" PRId64 ": %s", what, step,
                        ckh_strerror(crc));
    if (v && !*rc)
        snprintf(t->msg, sizeof t->msg, "another rank failed its part of the save of step %" PRId64
                 ": %s", step, ckh_strerror(v));
    *rc = v;
    return 0;
}

/* Steps 3 to 5 of the save of `step`, whose file this rank wrote with
 * result rc: vote, commit by each view's leader, agree, record. */
static int conclude(struct ex_trainer *t, int rc, const char *folder, const char *name,
                    int64_t step, int64_t epoch)
{
    int fatal = agree(t, &rc, step, "vote on the save");
    if (!fatal && !rc && leads(t, folder)) {
        rc = commit(t, folder, name, step);
        if (!rc)
            rc = retain(t, step);
    }
    if (!fatal)
        fatal = agree(t, &rc, step, "commit of the save");
    record_save(t, step, epoch, fatal ? fatal : rc);
    if (rc && !fatal)
        ckh_node_logf(t->env->node, "checkpoint of step %" PRId64 " failed: %s", step, t->msg);
    return fatal;
}

/* ---- asynchronous save (async_save) ----
 * The state is encoded at once and the folder made; a background task
 * writes and syncs the file while training goes on. The vote and the
 * commit wait for the next save (or the job's end), which joins the task
 * first: until then the previous checkpoint is the latest. */

struct ex_pending {
    struct ckh_task *task;           /* the writer (NULL: not running) */
    int rc;                          /* result of what ran before the task */
    bool concluded;                  /* voted and committed already */
    int64_t step, epoch;             /* what it saves */
    char folder[CKH_PATH_MAX + 1];   /* D/step_<N> */
    char name[32];                   /* step_<N> */
    char file[32];                   /* rank_<R>.bin */
    unsigned char buf[STATE_MAX];    /* the state, encoded when save was called */
    size_t len;                      /* bytes of buf */
    char msg[EX_MSG_LEN];            /* the task's error */
};

/* The background task: the file, then its folder entry, durable. It
 * first spends STAGE_NS of virtual time, the stand-in for what a real
 * asynchronous saver does before it writes (copying tensors off the
 * device), during which the main program trains on. */
#define STAGE_NS 2000000
static int async_write(struct ckh_env *env, void *arg)
{
    struct ex_pending *p = arg;
    int rc = ckh_clock_sleep_ns(env->clock, STAGE_NS);
    if (rc)
        return ckh_errf(p->msg, sizeof p->msg, rc, "staging: %s", ckh_strerror(rc));
    rc = exd_write_file(env->fs, p->folder, p->file, p->buf, p->len, p->msg, sizeof p->msg);
    if (!rc && (rc = ckh_fs_fsync_dir(env->fs, p->folder)) != 0)
        ckh_errf(p->msg, sizeof p->msg, rc, "fsync directory '%s': %s", p->folder, ckh_strerror(rc));
    return rc;
}

static int async_start(struct ex_trainer *t)
{
    struct ex_pending *p = ckh_calloc(t->env->alloc, 1, sizeof *p);
    if (!p)
        return conclude(t, ckh_errf(t->msg, sizeof t->msg, CKH_ENOMEM, "no memory for a save"),
                        "", "", t->step, t->epoch);
    t->pending = p;
    p->step = t->step;
    p->epoch = t->epoch;
    snprintf(p->file, sizeof p->file, "rank_%d.bin", t->rank);
    p->len = encode(t, p->buf);
    int rc = folder_path(t, p->step, p->folder, sizeof p->folder, p->name, sizeof p->name);
    if (!rc)
        rc = ensure_dir(t);
    if (!rc)
        rc = exd_mkdir_durable(t->env->fs, t->cfg->dir, p->name, t->msg, sizeof t->msg);
    if (!rc && (rc = ckh_node_spawn(t->env->node, async_write, p, &p->task)) != 0)
        ckh_errf(t->msg, sizeof t->msg, rc, "starting the background save: %s", ckh_strerror(rc));
    if (rc)
        snprintf(p->msg, sizeof p->msg, "%s", t->msg);
    p->rc = rc;
#ifdef EXAMPLE_BUG_ASYNC_COMMIT_EARLY
    /* BUG: the vote and the commit do not wait for the background write;
     * `latest` can name a folder whose file is not written yet. */
    p->concluded = true;
    return conclude(t, p->rc, p->folder, p->name, p->step, p->epoch);
#else
    return 0;
#endif
}

/* Joins the task; its result (or the set-up's) into p->rc. */
static void async_join(struct ex_trainer *t, struct ex_pending *p)
{
    int status = 0;
    if (!p->task)
        return;
    int rc = ckh_node_join(t->env->node, p->task, &status);
    p->task = NULL;
    if (!p->rc)
        p->rc = rc ? rc : status;
}

int ex_ckpt_finish(struct ex_trainer *t)
{
    struct ex_pending *p = t->pending;
    int fatal = 0;
    if (!p)
        return 0;
    ckh_node_phase(t->env->node, "save", t->epoch, t->step);
    async_join(t, p);
    if (p->rc)
        snprintf(t->msg, sizeof t->msg, "%s", p->msg);
    if (!p->concluded)
        fatal = conclude(t, p->rc, p->folder, p->name, p->step, p->epoch);
    ckh_free(t->env->alloc, p);
    t->pending = NULL;
    ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
    return fatal;
}

void ex_ckpt_drop(struct ex_trainer *t)
{
    if (!t->pending)
        return;
    async_join(t, t->pending); /* the task reads the buffer freed below */
    ckh_free(t->env->alloc, t->pending);
    t->pending = NULL;
}

int ex_ckpt_save(struct ex_trainer *t)
{
    char folder[CKH_PATH_MAX + 1], name[32];
    int fatal;
    if (t->cfg->async_save) {
        fatal = ex_ckpt_finish(t);
        ckh_node_phase(t->env->node, "save", t->epoch, t->step);
        if (!fatal)
            fatal = async_start(t);
    } else {
        ckh_node_phase(t->env->node, "save", t->epoch, t->step);
        int rc = folder_path(t, t->step, folder, sizeof folder, name, sizeof name);
        if (!rc)
            rc = write_mine(t, folder, name);
        fatal = conclude(t, rc, folder, name, t->step, t->epoch);
    }
    ckh_node_phase(t->env->node, "epoch", t->epoch, t->step);
    return fatal;
}

/* ---- load ---- */

/* This rank's candidate: the folder `latest` names if committed with an
 * intact file of this rank, else the newest such folder (0: none). */
static int64_t candidate(struct ex_trainer *t, char *file)
{
    struct ckh_fs *fs = t->env->fs;
    struct ex_state st;
    char why[EX_MSG_LEN];
    int64_t step = 0;
    if (read_latest(fs, t->cfg->dir, &step, why, sizeof why) == 0 && step > 0 &&
        committed(fs, t->cfg->dir, step) &&
        read_state(fs, t->cfg->dir, step, file, &st, why, sizeof why) == 0)
        return step;
    if (step > 0)
        ckh_node_logf(t->env->node, "latest names step_%" PRId64 ", which does not load; "
                      "looking for an older checkpoint", step);
    struct ckh_listing l = {0};
    int64_t best = 0;
    if (ckh_fs_listdir(fs, t->cfg->dir, &l) != 0)
        return 0;
    for (size_t i = 0; i < l.count; i++) {
        int64_t s;
        if (l.entries[i].type == CKH_FT_DIR && exd_parse_num(l.entries[i].name, "step_", &s) &&
            s > best && committed(fs, t->cfg->dir, s) &&
            read_state(fs, t->cfg->dir, s, file, &st, why, sizeof why) == 0)
            best = s;
    }
    ckh_fs_listing_free(&l);
    return best;
}

static int restore(struct ex_trainer *t, const struct ex_state *st)
{
    if (st->rank != (uint32_t)t->rank || st->world != (uint32_t)t->cfg->world ||
        st->dim != t->cfg->dim)
        return ckh_errf(t->msg, sizeof t->msg, CKH_EMISMATCH,
                        "checkpoint of rank %u of %u (dim %u) cannot resume rank %d of %d (dim %u)",
                        st->rank, st->world, st->dim, t->rank, t->cfg->world, t->cfg->dim);
#ifdef EXAMPLE_BUG_LR_BEFORE_STEP
    /* BUG: the schedule is rebuilt from the step counter before the step
     * counter is restored, so it starts over from step 0. */
    t->sched_step = t->step;
    t->step = st->step;
#else
    t->step = st->step;
    t->sched_step = t->step; /* the schedule resumes from the restored step counter */
#endif
    t->epoch = st->epoch;
    t->lr = st->lr;
    t->loss = st->loss;
    memcpy(t->w, st->w, sizeof t->w);
    memcpy(t->v, st->v, sizeof t->v);
#ifndef EXAMPLE_BUG_RNG_NOT_RESTORED
    t->rng.s = st->rng; /* BUG when missing: the stream restarts from its seed */
#endif
    t->smp.seed = st->smp_seed;
    t->smp.epoch = (int64_t)st->smp_epoch;
    t->smp.pos = st->smp_pos;
    return ex_sampler_reset(t);
}

/* Can this rank load step_<step> (0: nothing, always)? */
static bool loadable(struct ex_trainer *t, int64_t step, const char *file)
{
    struct ex_state st;
    char why[EX_MSG_LEN];
    return step == 0 || read_state(t->env->fs, t->cfg->dir, step, file, &st, why, sizeof why) == 0;
}

/* The step every rank resumes from: the newest candidate of any rank if
 * every rank holds its file of it (a rank behind then finishes that
 * commit), else the oldest candidate if all hold that, else none. */
static int choose(struct ex_trainer *t, int64_t mine, const char *file, int64_t *step)
{
    int64_t v[2] = {mine, -mine};
    int rc = ckh_coll_allreduce(t->env->coll, v, 2, CKH_DT_I64, CKH_RED_MIN, t->cfg->timeout_ns);
    int64_t options[2] = {-v[1], v[0]};
    *step = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        int32_t ok = loadable(t, options[i], file);
        rc = ckh_coll_allreduce(t->env->coll, &ok, 1, CKH_DT_I32, CKH_RED_MIN, t->cfg->timeout_ns);
        if (!rc && ok) {
            *step = options[i];
            break;
        }
    }
    if (!rc && *step != options[0])
        ckh_node_logf(t->env->node, "not every rank holds step_%" PRId64 "; resuming from step_%"
                      PRId64, options[0], *step);
    return rc ? ckh_errf(t->msg, sizeof t->msg, rc, "agreeing on the resume step: %s",
                         ckh_strerror(rc))
              : 0;
}

/* Loads step `step` (0: nothing to load) on this rank; a rank behind
 * the group first finishes that step's commit in its own view. */
static int load_step(struct ex_trainer *t, int64_t step, int64_t mine, const char *file)
{
    char folder[CKH_PATH_MAX + 1], name[32];
    struct ex_state st;
    if (step == 0)
        return 0;
    int rc = folder_path(t, step, folder, sizeof folder, name, sizeof name);
    if (!rc)
        rc = read_state(t->env->fs, t->cfg->dir, step, file, &st, t->msg, sizeof t->msg);
    if (!rc && mine < step) {
        ckh_node_logf(t->env->node, "finishing the commit of step_%" PRId64
                      " (another rank committed it)", step);
        rc = commit(t, folder, name, step);
    }
    return rc ? rc : restore(t, &st);
}

int ex_ckpt_load(struct ex_trainer *t)
{
    char file[32];
    int64_t step = 0;
    ckh_node_phase(t->env->node, "load", -1, -1);
    snprintf(file, sizeof file, "rank_%d.bin", t->rank);
    int64_t mine = candidate(t, file);
    int rc = choose(t, mine, file, &step);
    if (rc)
        return rc;
    rc = load_step(t, step, mine, file);
    int32_t ok = rc == 0;
    int crc = ckh_coll_allreduce(t->env->coll, &ok, 1, CKH_DT_I32, CKH_RED_MIN, t->cfg->timeout_ns);
    if (crc)
        return ckh_errf(t->msg, sizeof t->msg, crc, "agreeing on the load: %s", ckh_strerror(crc));
    if (!ok && !rc)
        return ckh_errf(t->msg, sizeof t->msg, CKH_ECORRUPT,
                        "another rank could not load step_%" PRId64, step);
    if (rc)
        return rc;
    if (step > 0) {
        struct ckh_rec_resume r = {.step = t->step, .epoch = t->epoch};
        rc = ckh_record_resume(t->env->record, &r);
    }
    return rc;
}

/* ---- verify (read-only) ---- */

int ex_ckpt_verify(const struct ex_config *c, struct ckh_fs *fs, int node, char *msg, size_t n)
{
    int64_t step = 0;
    int rc = read_latest(fs, c->dir, &step, msg, n);
    if (rc || step == 0) {
        if (!rc)
            snprintf(msg, n, "no checkpoint committed yet (%s/latest absent)", c->dir);
        return rc;
    }
    if (!committed(fs, c->dir, step))
        return ckh_errf(msg, n, CKH_ECORRUPT,
                        "%s/latest names step_%" PRId64 ", which has no commit marker (never committed)",
                        c->dir, step);
    /* A shared view holds every rank's file; a node-local one its own. */
    int lo = node < 0 ? 0 : node, hi = node < 0 ? c->world : node + 1;
    for (int r = lo; r < hi; r++) {
        char file[32];
        struct ex_state st;
        snprintf(file, sizeof file, "rank_%d.bin", r);
        char why[EX_MSG_LEN];
        rc = read_state(fs, c->dir, step, file, &st, why, sizeof why);
        if (rc)
            return ckh_errf(msg, n, rc, "%s/latest names step_%" PRId64 ", committed, but %s",
                            c->dir, step, why);
    }
    snprintf(msg, n, "%s/latest names step_%" PRId64 ": committed, %d rank file%s load", c->dir,
             step, hi - lo, hi - lo == 1 ? "" : "s");
    return 0;
}
