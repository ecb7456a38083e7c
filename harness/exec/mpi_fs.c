/* The real platform's multi-disk view (run/platform_real_fs.h): a prefix
 * table in front of one POSIX fs per disk folder. Map: mapping · path ops ·
 * create and destroy.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/mpi_fs.h"

#define MOUNTS_MAX 16

struct mroot {
    char *prefix;         /* owned, no trailing '/' except "/" itself */
    size_t plen;          /* strlen(prefix) */
    struct ckh_fs *inner; /* the POSIX fs of the folder (owned) */
};

struct multi_fs {
    struct ckh_fs base;   /* must be first */
    struct mroot *m;      /* longest prefix first (owned) */
    size_t n;             /* their count */
};

#define MFS(fs) ((struct multi_fs *)(void *)(fs))

/* ---- mapping ---- */

/* The mount holding path and, in rest (CKH_PATH_MAX + 1), the path
 * within it; NULL when no mount holds it. */
static const struct mroot *map(const struct ckh_fs *fs, const char *path, char *rest)
{
    const struct multi_fs *mf = (const struct multi_fs *)(const void *)fs;
    for (size_t i = 0; path && path[0] == '/' && i < mf->n; i++) {
        const struct mroot *m = &mf->m[i];
        const char *r = NULL;
        if (m->plen == 1)
            r = path;
        else if (!strncmp(path, m->prefix, m->plen) && (path[m->plen] == '\0' || path[m->plen] == '/'))
            r = path[m->plen] ? path + m->plen : "/";
        if (!r)
            continue;
        size_t len = strlen(r);
        if (len > CKH_PATH_MAX)
            return NULL;
        memcpy(rest, r, len + 1);
        return m;
    }
    return NULL;
}

#define MAP(fs, path, m, rest)                                                 \
    char rest[CKH_PATH_MAX + 1];                                               \
    const struct mroot *m = map(fs, path, rest);                               \
    do {                                                                       \
        int rc_ = ckh_path_check(path);                                        \
        if (rc_)                                                               \
            return rc_;                                                        \
        if (!m)                                                                \
            return -ENOENT;                                                    \
    } while (0)

/* ---- path ops ---- */

static int m_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    MAP(fs, path, m, rest);
    return ckh_fs_open(m->inner, rest, flags, out); /* the file is the POSIX fs's */
}

static int m_rename(struct ckh_fs *fs, const char *from, const char *to)
{
    MAP(fs, from, m1, r1);
    MAP(fs, to, m2, r2);
    if (m1 != m2)
        return -EXDEV; /* across disks, as the simulator's view says */
    return ckh_fs_rename(m1->inner, r1, r2);
}

#define PATH_OP(fn, call)                                                      \
    static int fn(struct ckh_fs *fs, const char *path)                         \
    {                                                                          \
        MAP(fs, path, m, rest);                                                \
        return call(m->inner, rest);                                           \
    }

PATH_OP(m_unlink, ckh_fs_unlink)
PATH_OP(m_mkdir, ckh_fs_mkdir)
PATH_OP(m_rmdir, ckh_fs_rmdir)
PATH_OP(m_fsync_dir, ckh_fs_fsync_dir)

static int m_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out)
{
    MAP(fs, path, m, rest);
    return ckh_fs_listdir(m->inner, rest, out);
}

static int m_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    MAP(fs, path, m, rest);
    return ckh_fs_stat(m->inner, rest, out);
}

static int m_symlink(struct ckh_fs *fs, const char *target, const char *linkpath)
{
    MAP(fs, linkpath, m, rest);
    if (!target || target[0] != '/')
        return ckh_fs_symlink(m->inner, target, rest);
    char trest[CKH_PATH_MAX + 1];
    const struct mroot *tm = map(fs, target, trest);
    if (tm != m)
        return tm ? -EXDEV : -ENOENT;
    return ckh_fs_symlink(m->inner, trest, rest); /* absolute within the mount */
}

static int64_t m_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize)
{
    MAP(fs, path, m, rest);
    char t[CKH_PATH_MAX * 2 + 2];
    int64_t n = ckh_fs_readlink(m->inner, rest, t, sizeof t);
    if (n < 0)
        return n;
    const char *pre = t[0] == '/' && m->plen > 1 ? m->prefix : "";
    const char *tail = pre[0] && !strcmp(t, "/") ? "" : t;
    size_t pl = strlen(pre), tl = strlen(tail), len = pl + tl;
    if (bufsize > 0) {
        size_t a = pl < bufsize - 1 ? pl : bufsize - 1;
        memcpy(buf, pre, a);
        size_t b = tl < bufsize - 1 - a ? tl : bufsize - 1 - a;
        memcpy(buf + a, tail, b);
        buf[a + b] = '\0';
    }
    return (int64_t)len;
}

/* File ops are never reached here: an open file belongs to its POSIX fs. */
static const struct ckh_fs_ops multi_fs_ops = {
    .version = 1,
    .open = m_open,
    .rename = m_rename,
    .unlink = m_unlink,
    .mkdir = m_mkdir,
    .rmdir = m_rmdir,
    .listdir = m_listdir,
    .stat = m_stat,
    .symlink = m_symlink,
    .readlink = m_readlink,
    .fsync_dir = m_fsync_dir,
};

/* ---- create and destroy ---- */

static int by_length(const void *a, const void *b)
{
    const struct mroot *x = a, *y = b;
    return x->plen < y->plen ? 1 : x->plen > y->plen ? -1 : strcmp(x->prefix, y->prefix);
}

int ckh__real_fs_create(const struct ckh__real_mount *mounts, size_t n, struct ckh_fs **out)
{
    if (!mounts || n == 0 || n > MOUNTS_MAX || !out)
        return CKH_EINVAL;
    struct multi_fs *mf = calloc(1, sizeof *mf);
    int rc = CKH_ENOMEM;
    if (!mf || !(mf->m = calloc(n, sizeof *mf->m)))
        goto fail;
    mf->base.ops = &multi_fs_ops;
    for (size_t i = 0; i < n; i++) {
        const char *p = mounts[i].prefix;
        if (!p || p[0] != '/' || ckh_path_check(p) != 0 || !mounts[i].dir) {
            rc = CKH_EINVAL;
            goto fail;
        }
        struct mroot *m = &mf->m[mf->n];
        if (!(m->prefix = strdup(p))) {
            rc = CKH_ENOMEM;
            goto fail;
        }
        mf->n++;
        m->plen = strlen(m->prefix);
        while (m->plen > 1 && m->prefix[m->plen - 1] == '/')
            m->prefix[--m->plen] = '\0';
        if ((rc = ckh_posix_fs_create(mounts[i].dir, &m->inner)) != 0)
            goto fail;
    }
    qsort(mf->m, mf->n, sizeof *mf->m, by_length);
    for (size_t i = 1; i < mf->n; i++)
        if (!strcmp(mf->m[i].prefix, mf->m[i - 1].prefix)) {
            rc = CKH_EINVAL;
            goto fail;
        }
    *out = &mf->base;
    return 0;
fail:
    ckh__real_fs_destroy(mf ? &mf->base : NULL);
    return rc;
}

void ckh__real_fs_destroy(struct ckh_fs *fs)
{
    if (!fs)
        return;
    struct multi_fs *mf = MFS(fs);
    for (size_t i = 0; mf->m && i < mf->n; i++) {
        free(mf->m[i].prefix);
        ckh_posix_fs_destroy(mf->m[i].inner);
    }
    free(mf->m);
    free(mf);
}

/* ---- the run folder's paths ---- */

int ckh__real_path(char *buf, size_t n, const char *dir, const char *kind, const char *node, int run)
{
    int len = snprintf(buf, n, "%s/%s/%s.%d%s", dir, kind, node, run, !strcmp(kind, "results") ? ".jsonl" : "");
    return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

int ckh__real_disk_dir(char *buf, size_t n, const char *dir, const char *sub, const struct ckh_scenario *sc,
                       size_t disk, const char *node)
{
    const struct ckh_scn_disk *d = &sc->job.disks[disk];
    int len = d->shared ? snprintf(buf, n, "%s/%s/%s", dir, sub, d->name)
                        : snprintf(buf, n, "%s/%s/%s.%s", dir, sub, d->name, node);
    return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

int ckh__real_node_fs(const char *dir, const struct ckh_scenario *sc, const char *node, bool ckhfs,
                      struct ckh_fs **out)
{
    size_t nd = sc->job.ndisks;
    struct ckh__real_mount *m = calloc(nd ? nd : 1, sizeof *m);
    char (*dirs)[PATH_MAX] = calloc(nd ? nd : 1, sizeof *dirs);
    int rc = m && dirs ? 0 : CKH_ENOMEM;
    for (size_t d = 0; d < nd && rc == 0; d++) {
        rc = ckh__real_disk_dir(dirs[d], sizeof dirs[d], dir, ckhfs ? "mnt" : "disks", sc, d, node);
        m[d] = (struct ckh__real_mount){.prefix = sc->job.disks[d].mount, .dir = dirs[d]};
    }
    if (rc == 0)
        rc = ckh__real_fs_create(m, nd, out);
    free(m);
    free(dirs);
    return rc;
}
