/* Directory savers (include/ckh/saver.h): the wrappers every caller goes
 * through (argument checks, then the method), and the built-in atomic
 * directory saver (reference/atomic_dir.c) as the table
 * ckh_atomic_dir_saver_ops, registered like a plugin's.
 *
 * The table maps the saver interface onto ckh_adir_*: rank 0 is the
 * master, the name defaults to "AtomicDirectory", the strategies are the
 * same values; resume, view_leader, check and latest_path are the
 * node-local-disk protocol of atomic_dir.c (its specification, V1-V6).
 */
#include <stdio.h>
#include <string.h>

#include "ckh/atomic.h"
#include "ckh/err.h"
#include "ckh/saver.h"

_Static_assert((int)CKH_SAVER_SYNC_ANY == (int)CKH_ADIR_SYNC_ANY &&
                   (int)CKH_SAVER_SYNC_ALL == (int)CKH_ADIR_SYNC_ALL &&
                   (int)CKH_SAVER_ASYNC == (int)CKH_ADIR_ASYNC,
               "saver and atomic-dir strategies are the same values");

/* ---- wrappers ---- */

static bool ops_ok(const struct ckh_saver_ops *ops)
{
    return ops && ops->version >= 1 && ops->create && ops->destroy && ops->prepare && ops->commit &&
           ops->latest;
}

static bool saver_ok(const struct ckh_saver *s)
{
    return s && ops_ok(s->ops);
}

int ckh_saver_create(const struct ckh_saver_ops *ops, struct ckh_env *env,
                     const struct ckh_saver_config *cfg, struct ckh_saver **out)
{
    if (out)
        *out = NULL;
    if (!ops_ok(ops) || !env || !env->fs || !cfg || !cfg->output_dir || !out)
        return CKH_EINVAL;
    int rc = ops->create(env, cfg, out);
    if (rc == 0 && !*out)
        return CKH_EINTERNAL; /* success without an instance: every later call would fail */
    if (rc == 0 && !(*out)->ops)
        (*out)->ops = ops;
    if (rc)
        *out = NULL;
    return rc;
}

void ckh_saver_destroy(struct ckh_saver *s)
{
    if (saver_ok(s))
        s->ops->destroy(s);
}

int ckh_saver_prepare(struct ckh_saver *s, bool force, char *buf, size_t n)
{
    if (!saver_ok(s) || !buf || !n)
        return CKH_EINVAL;
    return s->ops->prepare(s, force, buf, n);
}

int ckh_saver_commit(struct ckh_saver *s, const char *folder)
{
    if (!saver_ok(s) || !folder)
        return CKH_EINVAL;
    return s->ops->commit(s, folder);
}

int ckh_saver_latest(struct ckh_saver *s, char *buf, size_t n)
{
    if (!saver_ok(s) || !buf || !n)
        return CKH_EINVAL;
    return s->ops->latest(s, buf, n);
}

const char *ckh_saver_errmsg(const struct ckh_saver *s)
{
    return s ? s->errmsg : "";
}

int ckh_saver_resume(struct ckh_saver *s, char *buf, size_t n)
{
    if (!saver_ok(s) || !buf || !n)
        return CKH_EINVAL;
    return s->ops->resume ? s->ops->resume(s, buf, n) : s->ops->latest(s, buf, n);
}

int ckh_saver_view_leader(struct ckh_saver *s)
{
    if (!saver_ok(s))
        return CKH_EINVAL;
    return s->ops->view_leader ? s->ops->view_leader(s) : 0;
}

int ckh_saver_check(const struct ckh_saver_ops *ops, struct ckh_fs *fs,
                    const struct ckh_saver_config *cfg, int rank, int world, char *buf, size_t n,
                    char *msg, size_t msglen)
{
    if (!ops_ok(ops) || !fs || !cfg || !cfg->output_dir || rank < 0 || world < 1 || rank >= world ||
        !buf || !n || !msg || !msglen)
        return CKH_EINVAL;
    if (!ops->check)
        return CKH_EUNSUPPORTED;
    return ops->check(fs, cfg, rank, world, buf, n, msg, msglen);
}

int ckh_saver_latest_path(const struct ckh_saver_ops *ops, const struct ckh_saver_config *cfg,
                          char *buf, size_t n)
{
    if (!ops_ok(ops) || !cfg || !cfg->output_dir || !buf || !n)
        return CKH_EINVAL;
    if (!ops->latest_path)
        return CKH_EUNSUPPORTED;
    return ops->latest_path(cfg, buf, n);
}

/* ---- the atomic directory saver as a table ---- */

struct adir_saver {
    struct ckh_saver base;   /* must be first */
    struct ckh_env *env;     /* whose allocator holds this (borrowed) */
    struct ckh_adir *d;      /* the saver */
};

static struct ckh_adir_config adir_config(const struct ckh_saver_config *cfg, int rank)
{
    return (struct ckh_adir_config){
        .output_dir = cfg->output_dir,
        .is_master = rank == 0,
        .name = cfg->name,
        .keep_last = cfg->keep_last,
        .strategy = (enum ckh_adir_strategy)cfg->strategy,
        .timeout_ns = cfg->timeout_ns,
        .defects = cfg->defects,
    };
}

/* Copies the saver's last message onto the base after a failure. */
static int keep_msg(struct adir_saver *a, int rc)
{
    if (rc)
        snprintf(a->base.errmsg, sizeof a->base.errmsg, "%s", ckh_adir_errmsg(a->d));
    return rc;
}

static int as_create(struct ckh_env *env, const struct ckh_saver_config *cfg, struct ckh_saver **out)
{
    struct adir_saver *a = ckh_calloc(env->alloc, 1, sizeof *a);
    if (!a)
        return CKH_ENOMEM;
    struct ckh_adir_config ac = adir_config(cfg, ckh_coll_rank(env->coll));
    int rc = ckh_adir_create(env, &ac, &a->d);
    if (rc) {
        ckh_free(env->alloc, a);
        return rc;
    }
    a->base.ops = &ckh_atomic_dir_saver_ops;
    a->env = env;
    *out = &a->base;
    return 0;
}

static void as_destroy(struct ckh_saver *s)
{
    struct adir_saver *a = (struct adir_saver *)s;
    ckh_adir_destroy(a->d);
    ckh_free(a->env->alloc, a);
}

static int as_prepare(struct ckh_saver *s, bool force, char *buf, size_t n)
{
    struct adir_saver *a = (struct adir_saver *)s;
    return keep_msg(a, ckh_adir_prepare(a->d, force, buf, n));
}

static int as_commit(struct ckh_saver *s, const char *folder)
{
    struct adir_saver *a = (struct adir_saver *)s;
    return keep_msg(a, ckh_adir_commit(a->d, folder));
}

static int as_latest(struct ckh_saver *s, char *buf, size_t n)
{
    struct adir_saver *a = (struct adir_saver *)s;
    return keep_msg(a, ckh_adir_latest(a->d, buf, n));
}

static int as_resume(struct ckh_saver *s, char *buf, size_t n)
{
    struct adir_saver *a = (struct adir_saver *)s;
    return keep_msg(a, ckh_adir_resume(a->d, buf, n));
}

static int as_view_leader(struct ckh_saver *s)
{
    return ckh_adir_view_leader(((struct adir_saver *)s)->d);
}

static int as_check(struct ckh_fs *fs, const struct ckh_saver_config *cfg, int rank, int world,
                    char *buf, size_t n, char *msg, size_t msglen)
{
    (void)world; /* every rank's view answers for itself (V5) */
    struct ckh_adir_config ac = adir_config(cfg, rank);
    return ckh_adir_check(fs, &ac, rank, buf, n, msg, msglen);
}

static int as_latest_path(const struct ckh_saver_config *cfg, char *buf, size_t n)
{
    struct ckh_adir_config ac = adir_config(cfg, 0);
    return ckh_adir_latest_path(&ac, 0, buf, n);
}

const struct ckh_saver_ops ckh_atomic_dir_saver_ops = {
    .version = 1,
    .name = "atomic-dir",
    .create = as_create,
    .destroy = as_destroy,
    .prepare = as_prepare,
    .commit = as_commit,
    .latest = as_latest,
    .check = as_check,
    .latest_path = as_latest_path,
    .resume = as_resume,
    .view_leader = as_view_leader,
};
