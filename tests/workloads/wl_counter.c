/* A test workload plugin: W ranks add their rank and the step into a
 * shared counter with an all-reduce every step; every `every` steps each
 * rank saves (step, counter) to <dir>/<node>.ck atomically (temporary
 * file, fsync, rename, fsync of the folder) and resumes from it. It
 * reports through env->record: per step the digest "counter", the value
 * "lr" and the samples it consumed; resume, save and final records.
 *
 * Options: steps (int, default 12), every (int, default 3),
 * bug_resume_zero (bool): resume the step but restart the counter at 0,
 * a resume bug the oracles must name ("counter"). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/workload.h"

struct inst {
    int world;
    int64_t steps;
    int64_t every;
    bool bug_resume_zero;
    uint64_t timeout_ns; /* collectives give up after it: a dead peer is an error, not a hang */
    char dir[256];
};

static int create(const struct ckh_workload_job *job, void **out, char *msg, size_t msglen)
{
    struct inst *w = calloc(1, sizeof *w);
    if (!w)
        return CKH_ENOMEM;
    w->world = job->nodes;
    w->steps = 12;
    w->every = 3;
    w->timeout_ns = job->collective_timeout_ns;
    snprintf(w->dir, sizeof w->dir, "%s", job->checkpoint_dir);
    for (size_t i = 0; i < job->noptions; i++) {
        const struct ckh_wl_option *o = &job->options[i];
        int rc = 0;
        if (strcmp(o->key, "steps") == 0 && o->type == CKH_WL_OPT_INT && o->i > 0)
            w->steps = o->i;
        else if (strcmp(o->key, "every") == 0 && o->type == CKH_WL_OPT_INT && o->i > 0)
            w->every = o->i;
        else if (strcmp(o->key, "bug_resume_zero") == 0 && o->type == CKH_WL_OPT_BOOL)
            w->bug_resume_zero = o->b;
        else
            rc = ckh_wl_option_error(msg, msglen, o, "expected steps or every (positive integers) or bug_resume_zero");
        if (rc) {
            free(w);
            return rc;
        }
    }
    *out = w;
    return 0;
}

static void destroy(void *p)
{
    free(p);
}

static int node_count(void *p)
{
    return ((struct inst *)p)->world;
}

static int node(void *p, int i, char *name, size_t n, int *rank)
{
    (void)p;
    snprintf(name, n, "rank_%d", i);
    *rank = i;
    return 0;
}

static int save(struct ckh_env *env, const struct inst *w, int64_t step, uint64_t counter)
{
    char path[300], tmp[310];
    uint64_t rec[2] = {(uint64_t)step, counter};
    struct ckh_file *f = NULL;
    snprintf(path, sizeof path, "%s/%s.ck", w->dir, ckh_node_name(env->node));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = ckh_fs_open(env->fs, tmp, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
    if (rc == 0) {
        rc = ckh_file_write_all(f, rec, sizeof rec);
        if (rc == 0)
            rc = ckh_file_fsync(f);
        int crc = ckh_file_close(f);
        if (rc == 0)
            rc = crc;
    }
    if (rc == 0)
        rc = ckh_fs_rename(env->fs, tmp, path);
    if (rc == 0)
        rc = ckh_fs_fsync_dir(env->fs, w->dir);
    ckh_record_save(env->record, &(struct ckh_rec_save){.step = step, .rc = rc, .what = path});
    return rc;
}

/* The resume point: (step, counter) of this rank's file, agreed on by
 * every rank (the minimum step; a rank ahead would repeat nothing). */
static int load(struct ckh_env *env, const struct inst *w, int64_t *step, uint64_t *counter)
{
    char path[300];
    uint64_t rec[2] = {0, 0};
    struct ckh_file *f = NULL;
    snprintf(path, sizeof path, "%s/%s.ck", w->dir, ckh_node_name(env->node));
    if (ckh_fs_open(env->fs, path, CKH_O_RDONLY, &f) == 0) {
        if (ckh_file_pread_all(f, rec, sizeof rec, 0) != 0)
            rec[0] = rec[1] = 0;
        ckh_file_close(f);
    }
    int64_t mine = (int64_t)rec[0], least = mine;
    int rc = ckh_coll_allreduce(env->coll, &least, 1, CKH_DT_I64, CKH_RED_MIN, w->timeout_ns);
    if (rc)
        return rc;
    if (least != mine) /* another rank is behind: every rank restarts from scratch */
        rec[0] = rec[1] = 0;
    *step = (int64_t)rec[0];
    *counter = w->bug_resume_zero ? 0 : rec[1];
    return 0;
}

static int node_main(struct ckh_env *env, void *p, int i)
{
    const struct inst *w = p;
    int64_t step = 0;
    uint64_t counter = 0;
    int rc = load(env, w, &step, &counter);
    if (rc)
        return rc;
    if (step > 0)
        ckh_record_resume(env->record, &(struct ckh_rec_resume){.step = step, .epoch = 0});
    while (step < w->steps) {
        step++;
        ckh_node_phase(env->node, "epoch", 0, step);
        int64_t add = i + step;
        if ((rc = ckh_coll_allreduce(env->coll, &add, 1, CKH_DT_I64, CKH_RED_SUM, w->timeout_ns)) != 0)
            return rc;
        counter = counter * 31 + (uint64_t)add;
        uint64_t sample = (uint64_t)(step * w->world + i);
        struct ckh_rec_digest d = {"counter", counter};
        struct ckh_rec_value v = {"lr", 1.0 / (double)step};
        struct ckh_rec_step rs = {.step = step, .epoch = 0, .digests = &d, .ndigests = 1, .values = &v,
                                  .nvalues = 1, .samples = &sample, .nsamples = 1};
        if ((rc = ckh_record_step(env->record, &rs)) != 0)
            return rc;
        if (step % w->every == 0) {
            ckh_node_phase(env->node, "save", 0, step);
            save(env, w, step, counter);
        }
    }
    struct ckh_rec_final f = {.epochs = 1, .steps = step, .total = step, .has_digest = true, .digest = counter};
    return ckh_record_final(env->record, &f);
}

static int64_t interval(void *p)
{
    return ((struct inst *)p)->every;
}

static const struct ckh_workload_ops ops = {
    .version = CKH_WORKLOAD_ABI_VERSION,
    .name = "counter",
    .description = "test plugin: an all-reduced counter saved every few steps",
    .flags = CKH_WL_COLLECTIVE | CKH_WL_STEP_BASED,
    .create = create,
    .destroy = destroy,
    .node_count = node_count,
    .node = node,
    .node_main = node_main,
    .interval = interval,
};

CKH_WORKLOAD_PLUGIN(ops)
