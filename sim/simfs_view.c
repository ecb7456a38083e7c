/* Nodes' views of simulated disks: path resolution and the ckh_fs ops
 * table that code under test calls.
 *
 * A view maps mount prefixes onto disks (longest prefix wins) and
 * attributes every op to its node. Each op is reported to the simulator
 * (ckh__sim_enter before it takes effect, ckh__sim_leave after, see
 * sim/sim_internal.h) when the view has one, then checked against the
 * disk's injected faults, then performed on the disk (sim/simfs.c records
 * the pending op and updates the live copy).
 *
 * POSIX semantics kept: ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY
 * (rmdir, rename over a non-empty directory), EXDEV (rename across
 * mounts), EINVAL (rename of a directory into itself, readlink of a
 * non-link), ELOOP (more than 8 symlinks), EBADF (access mode). stat is
 * lstat; open, listdir and fsync_dir follow a final symlink; intermediate
 * symlinks are always followed. Open files are inodes: they keep working
 * after their entry is renamed or unlinked.
 *
 * Map: resolution | op reporting | file ops | namespace ops | views.
 */
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/op.h"
#include "ckh/simfs.h"
#include "sim_internal.h"
#include "simfs_internal.h"

#define SF_MAX_SYMLINKS 8
#define SF_NAME_MAX 255
#define SF_FILE_LIMIT (UINT64_C(1) << 62) /* largest file offset */

/* -------------------------------------------------------------- resolution */

/* The mount holding vpath (mounts are sorted longest prefix first); *rest
 * receives the path within the disk. */
static const struct sf_mount *map_mount(const struct sf_view *v, const char *vpath,
                                        const char **rest)
{
    for (size_t i = 0; i < v->nmounts; i++) {
        const struct sf_mount *m = &v->mounts[i];
        if (m->plen == 1) {
            *rest = vpath;
            return m;
        }
        if (strncmp(vpath, m->prefix, m->plen) == 0 &&
            (vpath[m->plen] == '\0' || vpath[m->plen] == '/')) {
            *rest = vpath[m->plen] ? vpath + m->plen : "/";
            return m;
        }
    }
    return NULL;
}

/* A path being resolved: what is left of it and the directories walked. */
enum { SF_WALK_DEPTH = CKH_PATH_MAX / 2 + 2 };
struct sf_walk {
    struct sf_view *v;                  /* the view resolving */
    struct ckh_simfs *d;                /* the disk walked now */
    char rem[2 * CKH_PATH_MAX + 4];     /* the path left to resolve (within d) */
    size_t p;                           /* where in rem */
    struct sf_inode *st[SF_WALK_DEPTH]; /* the inodes walked, d's root first */
    size_t plen[SF_WALK_DEPTH];         /* length of the result's dpath at each */
    size_t sp;                          /* inodes in st */
    int links;                          /* symlinks followed */
};

/* The next component of w->rem into comp (*n bytes; *last: nothing
 * follows it); w->p moves past it. 1 at the end of the path, else 0 or
 * -ENAMETOOLONG. */
static int next_component(struct sf_walk *w, char *comp, size_t *n, bool *last)
{
    while (w->rem[w->p] == '/')
        w->p++;
    if (!w->rem[w->p])
        return 1;
    size_t q = w->p;
    while (w->rem[q] && w->rem[q] != '/')
        q++;
    size_t after = q;
    while (w->rem[after] == '/')
        after++;
    *last = w->rem[after] == '\0';
    *n = q - w->p;
    if (*n > SF_NAME_MAX)
        return -ENAMETOOLONG;
    memcpy(comp, w->rem + w->p, *n);
    comp[*n] = '\0';
    w->p = q;
    return 0;
}

/* The symlink c just read stands for its target: what is left of the
 * path is resolved from the target on (an absolute one from its mount's
 * root). 0, -ELOOP, -ENAMETOOLONG or -ENOENT. */
static int follow_link(struct sf_walk *w, const struct sf_inode *c)
{
    char tmp[sizeof w->rem];
    if (++w->links > SF_MAX_SYMLINKS)
        return -ELOOP;
    size_t tl = strlen(c->target), rl = strlen(w->rem + w->p);
    if (tl + rl + 1 > CKH_PATH_MAX * 2)
        return -ENAMETOOLONG;
    memcpy(tmp, c->target, tl);
    memcpy(tmp + tl, w->rem + w->p, rl + 1);
    if (tmp[0] == '/') {
        const char *rest;
        const struct sf_mount *m = map_mount(w->v, tmp, &rest);
        if (!m)
            return -ENOENT;
        w->d = m->disk;
        w->sp = 1;
        w->st[0] = w->d->root;
        memmove(w->rem, rest, strlen(rest) + 1); /* rest points into tmp */
    } else {
        memcpy(w->rem, tmp, tl + rl + 1);
    }
    w->p = 0;
    return 0;
}

/* The end of a walk into r: the last inode, its directory and its name. */
static void walk_result(const struct sf_walk *w, struct sf_res *r)
{
    CKH_ASSERT(w->sp >= 1 && w->sp <= SF_WALK_DEPTH && w->st[w->sp - 1]);
    r->d = w->d;
    r->ino = w->st[w->sp - 1];
    if (w->sp == 1) {
        r->dir = NULL;
        strcpy(r->dpath, "/");
        r->name = r->dpath + 1;
    } else {
        r->dir = w->st[w->sp - 2];
        r->dpath[w->plen[w->sp - 1]] = '\0';
        r->name = r->dpath + w->plen[w->sp - 2] + 1;
    }
}

int ckh__sf_resolve(struct sf_view *v, const char *vpath, bool follow_final, struct sf_res *r)
{
    int rc = ckh_path_check(vpath);
    if (rc)
        return rc;
    const char *rest;
    const struct sf_mount *m = map_mount(v, vpath, &rest);
    if (!m)
        return -ENOENT;
    struct sf_walk w; /* not zeroed: resolving is on every op's path */
    w.v = v;
    w.d = m->disk;
    strcpy(w.rem, rest);
    w.p = 0;
    w.sp = 1;
    w.links = 0;
    w.st[0] = w.d->root;
    w.plen[0] = 0;
    r->dpath[0] = '\0';
    char comp[SF_NAME_MAX + 1];
    size_t n;
    bool last;
    while ((rc = next_component(&w, comp, &n, &last)) == 0) {
        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            if (w.sp > 1)
                w.sp--;
            continue;
        }
        struct sf_inode *top = w.st[w.sp - 1];
        if (top->type != CKH_FT_DIR)
            return -ENOTDIR;
        struct sf_inode *c = ckh__sf_lookup(top, SF_LIVE, comp);
        size_t len = w.plen[w.sp - 1];
        if (len + 1 + n > CKH_PATH_MAX)
            return -ENAMETOOLONG;
        if (!c) {
            if (!last)
                return -ENOENT;
            r->d = w.d;
            r->dir = top;
            r->ino = NULL;
            r->dpath[len] = '/';
            memcpy(r->dpath + len + 1, comp, n + 1);
            r->name = r->dpath + len + 1;
            return 0;
        }
        if (c->type == CKH_FT_SYMLINK && (!last || follow_final)) {
            if ((rc = follow_link(&w, c)) != 0)
                return rc;
            continue;
        }
        if (w.sp == SF_WALK_DEPTH)
            return -ENAMETOOLONG;
        r->dpath[len] = '/';
        memcpy(r->dpath + len + 1, comp, n + 1);
        w.st[w.sp] = c;
        w.plen[w.sp] = len + 1 + n;
        w.sp++;
    }
    if (rc < 0)
        return rc;
    walk_result(&w, r);
    return 0;
}

/* ------------------------------------------------------------ op reporting */

/* One op in flight: what the simulator saw and the fault it chose. */
struct sf_call {
    struct sf_view *v;            /* the view */
    struct ckh_op op;             /* the op as reported */
    struct ckh_fault_action act;  /* fault to apply (CKH_FAULT_NONE usually) */
};

static void call_begin(struct sf_call *c, struct sf_view *v, enum ckh_op_kind kind,
                       const char *vpath, const char *vpath2, struct ckh_simfs *d,
                       const char *dpath, uint64_t off, uint64_t len, int64_t arg,
                       uint64_t bytes)
{
    c->v = v;
    c->op = (struct ckh_op){.kind = kind,
                            .node = v->node,
                            .path = vpath,
                            .path2 = vpath2,
                            .off = off,
                            .len = len,
                            .arg = arg,
                            .phase = NULL,
                            .epoch = -1,
                            .step = -1};
    c->act = (struct ckh_fault_action){.kind = CKH_FAULT_NONE};
    if (v->sim) {
        uint64_t lat = d ? d->cfg.latency_ns + d->cfg.ns_per_kib * (bytes / 1024) : 0;
        ckh__sim_enter(v->sim, &c->op, lat, &c->act);
    }
    if (c->act.kind == CKH_FAULT_NONE && d)
        ckh__sf_fault_take(d, kind, dpath, &c->act);
}

static int64_t call_end(struct sf_call *c, int64_t rc)
{
    if (c->v->sim)
        ckh__sim_leave(c->v->sim, &c->op, rc);
    return rc;
}

static int call_errno(const struct sf_call *c)
{
    return -(c->act.err > 0 ? c->act.err : EIO);
}

/* Begins an op on one path: maps it to its disk first. */
static void call_begin_path(struct sf_call *c, struct sf_view *v, enum ckh_op_kind kind,
                            const char *vpath, const char *vpath2, int64_t arg)
{
    const char *rest = NULL;
    const struct sf_mount *m = map_mount(v, vpath, &rest);
    call_begin(c, v, kind, vpath, vpath2, m ? m->disk : NULL, rest, 0, 0, arg, 0);
}

/* --------------------------------------------------------------- file ops */

static struct sf_view *as_view(struct ckh_fs *fs)
{
    return (struct sf_view *)fs;
}

static struct sf_file *as_file(struct ckh_file *f)
{
    return (struct sf_file *)f;
}

/* do_open of a missing final name: a new file linked at r (O_CREAT only),
 * open once. */
static int open_new(struct sf_view *v, struct sf_res *r, int flags, struct sf_inode **out)
{
    if (!(flags & CKH_O_CREAT))
        return -ENOENT;
    struct sf_inode *ino = ckh__sf_inode_new(r->d, CKH_FT_FILE);
    if (!ino)
        return CKH_ENOMEM;
    ino->opens++;
    int rc = ckh__sf_issue_link(r->d, v->node, CKH_OP_OPEN, r->dir, r->dpath, ino);
    if (rc) {
        ino->opens--;
        ckh__sf_inode_maybe_free(r->d, ino);
        return rc;
    }
    *out = ino;
    return 0;
}

/* do_open of an existing name: a regular file (O_EXCL refuses it),
 * truncated when asked, open once more. */
static int open_existing(struct sf_view *v, struct sf_res *r, int flags, bool excl)
{
    struct sf_inode *ino = r->ino;
    bool writable = (flags & CKH_O_ACCMODE) != CKH_O_RDONLY;
    if (excl)
        return -EEXIST;
    if (ino->type == CKH_FT_DIR)
        return -EISDIR;
    if (ino->type != CKH_FT_FILE)
        return -ELOOP;
    if ((flags & CKH_O_TRUNC) && writable && ino->data[SF_LIVE].size) {
        int rc = ckh__sf_issue_trunc(r->d, v->node, ino, 0);
        if (rc)
            return rc;
    }
    ino->opens++;
    ckh__sf_inode_account(r->d, ino);
    ckh__sf_inode_set_hint(r->d, ino, r->dpath);
    return 0;
}

static int do_open(struct sf_view *v, const char *path, int flags, struct ckh_file **out)
{
    bool excl = (flags & CKH_O_CREAT) && (flags & CKH_O_EXCL);
    struct sf_res r;
    int rc = ckh__sf_resolve(v, path, !excl, &r);
    if (rc)
        return rc;
    struct sf_file *f = calloc(1, sizeof(*f));
    if (!f) {
        r.d->host_oom = true;
        return CKH_ENOMEM;
    }
    f->vpath = strdup(path);
    f->dpath = strdup(r.dpath);
    if (!f->vpath || !f->dpath) {
        r.d->host_oom = true;
        rc = CKH_ENOMEM;
        goto out_free_file;
    }
    struct sf_inode *ino = r.ino;
    if ((rc = ino ? open_existing(v, &r, flags, excl) : open_new(v, &r, flags, &ino)) != 0)
        goto out_free_file;
    CKH_ASSERT(ino->type == CKH_FT_FILE && ino->opens >= 1);
    f->base.fs = &v->base;
    f->view = v;
    f->disk = r.d;
    f->ino = ino;
    f->flags = flags;
    f->next = v->files;
    if (v->files)
        v->files->prev = f;
    v->files = f;
    *out = &f->base;
    return 0;
out_free_file:
    free(f->vpath);
    free(f->dpath);
    free(f);
    return rc;
}

static int view_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    struct sf_view *v = as_view(fs);
    if (!out)
        return CKH_EINVAL;
    *out = NULL;
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    if ((flags & CKH_O_ACCMODE) == CKH_O_ACCMODE)
        return CKH_EINVAL;
    struct sf_call c;
    call_begin_path(&c, v, CKH_OP_OPEN, path, NULL, flags);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    return (int)call_end(&c, do_open(v, path, flags, out));
}

static int64_t do_read(struct sf_file *f, enum ckh_op_kind kind, void *buf, size_t n,
                       uint64_t off, bool advance)
{
    if (!buf && n)
        return CKH_EINVAL;
    struct sf_call c;
    call_begin(&c, f->view, kind, f->vpath, NULL, f->disk, f->dpath, off, n, 0, n);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return call_end(&c, call_errno(&c));
    if ((f->flags & CKH_O_ACCMODE) == CKH_O_WRONLY)
        return call_end(&c, -EBADF);
    if (n > INT64_MAX)
        n = INT64_MAX;
    int64_t got = ckh__sf_read(&f->ino->data[SF_LIVE], buf, n, off);
    if (got < 0)
        return call_end(&c, got);
    if (advance)
        f->pos = off + (uint64_t)got;
    return call_end(&c, got);
}

static int64_t view_read(struct ckh_file *fp, void *buf, size_t n)
{
    struct sf_file *f = as_file(fp);
    return do_read(f, CKH_OP_READ, buf, n, f->pos, true);
}

static int64_t view_pread(struct ckh_file *fp, void *buf, size_t n, uint64_t off)
{
    return do_read(as_file(fp), CKH_OP_PREAD, buf, n, off, false);
}

/* Writes n bytes (literal buf or generated g) at off (use_pos: at the
 * file position, which advances). */
static int64_t do_write(struct sf_file *f, enum ckh_op_kind kind, const void *buf,
                        const struct ckh_gen *g, uint64_t n, uint64_t off, bool use_pos)
{
    if (!buf && !g && n)
        return CKH_EINVAL;
    struct sf_view *v = f->view;
    uint64_t at = use_pos ? f->pos : off;
    struct sf_call c;
    call_begin(&c, v, kind, f->vpath, NULL, f->disk, f->dpath, at, n, 0, n);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return call_end(&c, call_errno(&c));
    if ((f->flags & CKH_O_ACCMODE) == CKH_O_RDONLY)
        return call_end(&c, -EBADF);
    if (f->flags & CKH_O_APPEND)
        at = f->ino->data[SF_LIVE].size;
    if (at > SF_FILE_LIMIT || n > SF_FILE_LIMIT - at)
        return call_end(&c, -EFBIG);
    /* KILL_MID: a prefix lands, then the node dies; SHORT_WRITE: only a
     * prefix is accepted and its length returned, as a real pwrite may. */
    bool die = c.act.kind == CKH_FAULT_KILL_MID && v->sim;
    bool cut = die || c.act.kind == CKH_FAULT_SHORT_WRITE;
    uint64_t k = cut && c.act.keep_bytes < n ? c.act.keep_bytes : n;
    int64_t rc = 0;
    if (k) {
        struct sf_src src = {.buf = NULL};
        if (g) {
            src.gen = *g;
        } else if ((rc = ckh__sf_buf_put(f->disk, buf, k, f->ino, at, &src)) != 0) {
            return call_end(&c, rc);
        }
        rc = ckh__sf_issue_write(f->disk, v->node, f->ino, at, k, &src);
        ckh__sf_buf_unref(f->disk, src.buf);
    }
    if (rc == 0)
        rc = (int64_t)k;
    if (die)
        ckh__sim_die(v->sim, false);
    if (rc >= 0 && (use_pos || (f->flags & CKH_O_APPEND)))
        f->pos = at + (uint64_t)rc;
    return call_end(&c, rc);
}

static int64_t view_write(struct ckh_file *fp, const void *buf, size_t n)
{
    return do_write(as_file(fp), CKH_OP_WRITE, buf, NULL, n, 0, true);
}

static int64_t view_pwrite(struct ckh_file *fp, const void *buf, size_t n, uint64_t off)
{
    return do_write(as_file(fp), CKH_OP_PWRITE, buf, NULL, n, off, false);
}

static int64_t view_pwrite_gen(struct ckh_file *fp, const struct ckh_gen *g, uint64_t n,
                               uint64_t off)
{
    if (!g)
        return CKH_EINVAL;
    return do_write(as_file(fp), CKH_OP_PWRITE, NULL, g, n, off, false);
}

static int do_fsync(struct sf_file *f, enum ckh_op_kind kind)
{
    struct sf_call c;
    call_begin(&c, f->view, kind, f->vpath, NULL, f->disk, f->dpath, 0, 0, 0, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    if (c.act.kind == CKH_FAULT_FSYNC_LOST) {
        ckh__sf_fsync_lost(f->disk, f->view->node, f->ino);
        return (int)call_end(&c, -EIO);
    }
    ckh__sf_fsync(f->disk, f->view->node, f->ino);
    return (int)call_end(&c, 0);
}

static int view_fsync(struct ckh_file *fp)
{
    return do_fsync(as_file(fp), CKH_OP_FSYNC);
}

static int view_fdatasync(struct ckh_file *fp)
{
    return do_fsync(as_file(fp), CKH_OP_FDATASYNC);
}

static int view_ftruncate(struct ckh_file *fp, uint64_t len)
{
    struct sf_file *f = as_file(fp);
    struct sf_call c;
    call_begin(&c, f->view, CKH_OP_FTRUNCATE, f->vpath, NULL, f->disk, f->dpath, 0, len,
               0, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    if ((f->flags & CKH_O_ACCMODE) == CKH_O_RDONLY)
        return (int)call_end(&c, -EBADF);
    if (len > SF_FILE_LIMIT)
        return (int)call_end(&c, -EFBIG);
    return (int)call_end(&c, ckh__sf_issue_trunc(f->disk, f->view->node, f->ino, len));
}

/* Frees f without reporting anything (view teardown). */
static void file_drop(struct sf_file *f)
{
    struct sf_view *v = f->view;
    if (f->prev)
        f->prev->next = f->next;
    else
        v->files = f->next;
    if (f->next)
        f->next->prev = f->prev;
    f->ino->opens--;
    ckh__sf_inode_maybe_free(f->disk, f->ino);
    free(f->vpath);
    free(f->dpath);
    free(f);
}

static int view_close(struct ckh_file *fp)
{
    struct sf_file *f = as_file(fp);
    struct sf_call c;
    call_begin(&c, f->view, CKH_OP_CLOSE, f->vpath, NULL, f->disk, f->dpath, 0, 0, 0, 0);
    int rc = c.act.kind == CKH_FAULT_ERRNO ? call_errno(&c) : 0;
    /* The op is reported while the path is still valid, then f goes. */
    call_end(&c, rc);
    file_drop(f);
    return rc;
}

/* ---------------------------------------------------------- namespace ops */

static int do_rename(struct sf_view *v, const char *from, const char *to)
{
    struct sf_res r1, r2;
    int rc = ckh__sf_resolve(v, from, false, &r1);
    if (rc)
        return rc;
    if (!r1.ino)
        return -ENOENT;
    rc = ckh__sf_resolve(v, to, false, &r2);
    if (rc)
        return rc;
    if (r1.d != r2.d)
        return -EXDEV;
    if (!r1.dir || !r2.dir)
        return -EBUSY;
    if (r2.ino == r1.ino)
        return 0;
    if (r1.ino->type == CKH_FT_DIR) {
        if (r2.ino && r2.ino->type != CKH_FT_DIR)
            return -ENOTDIR;
        if (r2.ino && r2.ino->dir[SF_LIVE].nlive)
            return -ENOTEMPTY;
        if (r2.dir == r1.ino || ckh__sf_dir_contains(r1.ino, SF_LIVE, r2.dir))
            return -EINVAL;
    } else if (r2.ino && r2.ino->type == CKH_FT_DIR) {
        return -EISDIR;
    }
    return ckh__sf_issue_rename(r1.d, v->node, r1.dir, r1.dpath, r2.dir, r2.dpath, r1.ino);
}

static int view_rename(struct ckh_fs *fs, const char *from, const char *to)
{
    struct sf_view *v = as_view(fs);
    int rc = ckh_path_check(from);
    if (rc == 0)
        rc = ckh_path_check(to);
    if (rc)
        return rc;
    const char *rest1, *rest2;
    const struct sf_mount *m1 = map_mount(v, from, &rest1);
    const struct sf_mount *m2 = map_mount(v, to, &rest2);
    struct sf_call c;
    call_begin_path(&c, v, CKH_OP_RENAME, from, to, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    if (m1 && m2 && m1->disk != m2->disk)
        return (int)call_end(&c, -EXDEV);
    return (int)call_end(&c, do_rename(v, from, to));
}

static int do_unlink(struct sf_view *v, const char *path, bool dir)
{
    struct sf_res r;
    int rc = ckh__sf_resolve(v, path, false, &r);
    if (rc)
        return rc;
    if (!r.ino)
        return -ENOENT;
    if (dir) {
        if (r.ino->type != CKH_FT_DIR)
            return -ENOTDIR;
        if (!r.dir)
            return -EBUSY;
        if (r.ino->dir[SF_LIVE].nlive)
            return -ENOTEMPTY;
    } else if (r.ino->type == CKH_FT_DIR) {
        return -EISDIR;
    }
    return ckh__sf_issue_unlink(r.d, v->node, dir ? CKH_OP_RMDIR : CKH_OP_UNLINK, r.dir,
                                r.dpath, r.ino);
}

static int view_unlink(struct ckh_fs *fs, const char *path)
{
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_UNLINK, path, NULL, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    return (int)call_end(&c, do_unlink(as_view(fs), path, false));
}

static int view_rmdir(struct ckh_fs *fs, const char *path)
{
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_RMDIR, path, NULL, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    return (int)call_end(&c, do_unlink(as_view(fs), path, true));
}

/* Creates a directory or symlink (target != NULL) at path. */
static int do_create(struct sf_view *v, const char *path, const char *target)
{
    struct sf_res r;
    int rc = ckh__sf_resolve(v, path, false, &r);
    if (rc)
        return rc;
    if (r.ino)
        return -EEXIST;
    struct sf_inode *ino = ckh__sf_inode_new(r.d, target ? CKH_FT_SYMLINK : CKH_FT_DIR);
    if (!ino)
        return CKH_ENOMEM;
    ino->opens++; /* held while linking */
    if (target && !(ino->target = ckh__sf_strdup(r.d, target)))
        rc = CKH_ENOMEM;
    if (rc == 0)
        rc = ckh__sf_issue_link(r.d, v->node, target ? CKH_OP_SYMLINK : CKH_OP_MKDIR, r.dir,
                                r.dpath, ino);
    ino->opens--;
    ckh__sf_inode_maybe_free(r.d, ino);
    return rc;
}

static int view_mkdir(struct ckh_fs *fs, const char *path)
{
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_MKDIR, path, NULL, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    return (int)call_end(&c, do_create(as_view(fs), path, NULL));
}

static int view_symlink(struct ckh_fs *fs, const char *target, const char *linkpath)
{
    int rc = ckh_path_check(linkpath);
    if (rc)
        return rc;
    if (!target || !target[0] || strlen(target) > CKH_PATH_MAX)
        return CKH_EINVAL;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_SYMLINK, linkpath, target, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    return (int)call_end(&c, do_create(as_view(fs), linkpath, target));
}

static int do_listdir(struct sf_view *v, const char *path, struct ckh_listing *out)
{
    struct sf_res r;
    int rc = ckh__sf_resolve(v, path, true, &r);
    if (rc)
        return rc;
    if (!r.ino)
        return -ENOENT;
    if (r.ino->type != CKH_FT_DIR)
        return -ENOTDIR;
    const struct sf_dir *dir = &r.ino->dir[SF_LIVE];
    /* Entries belong to the calling node's memory (freed if it dies). */
    struct ckh_alloc *a = v->sim != NULL && v->node >= 0 ? ckh__sim_node_alloc(v->sim, v->node) : NULL;
    struct ckh_dirent *e = ckh_calloc(a, dir->nlive ? dir->nlive : 1, sizeof(*e));
    if (!e)
        return CKH_ENOMEM;
    out->alloc = a;
    size_t k = 0;
    for (uint32_t i = 0; i < dir->n; i++) {
        if (!dir->v[i].ino)
            continue;
        e[k].name = ckh_strdup(a, dir->v[i].name);
        e[k].type = dir->v[i].ino->type;
        if (!e[k].name) {
            out->entries = e;
            out->count = k;
            ckh_fs_listing_free(out);
            return CKH_ENOMEM;
        }
        k++;
    }
    out->entries = e;
    out->count = k;
    return (int)k;
}

static int view_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out)
{
    if (!out)
        return CKH_EINVAL;
    out->entries = NULL;
    out->count = 0;
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_LISTDIR, path, NULL, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    rc = do_listdir(as_view(fs), path, out);
    call_end(&c, rc);
    return rc < 0 ? rc : 0;
}

static int do_stat(struct sf_view *v, const char *path, struct ckh_stat *out)
{
    struct sf_res r;
    int rc = ckh__sf_resolve(v, path, false, &r);
    if (rc)
        return rc;
    if (!r.ino)
        return -ENOENT;
    out->type = r.ino->type;
    out->size_bytes = r.ino->type == CKH_FT_FILE      ? r.ino->data[SF_LIVE].size
                    : r.ino->type == CKH_FT_SYMLINK ? strlen(r.ino->target)
                                                      : 0;
    return 0;
}

static int view_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    if (!out)
        return CKH_EINVAL;
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_STAT, path, NULL, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    return (int)call_end(&c, do_stat(as_view(fs), path, out));
}

static int64_t do_readlink(struct sf_view *v, const char *path, char *buf, size_t bufsize)
{
    struct sf_res r;
    int rc = ckh__sf_resolve(v, path, false, &r);
    if (rc)
        return rc;
    if (!r.ino)
        return -ENOENT;
    if (r.ino->type != CKH_FT_SYMLINK)
        return -EINVAL;
    size_t len = strlen(r.ino->target);
    if (bufsize) {
        size_t k = len < bufsize - 1 ? len : bufsize - 1;
        memcpy(buf, r.ino->target, k);
        buf[k] = '\0';
    }
    return (int64_t)len;
}

static int64_t view_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize)
{
    if (!buf && bufsize)
        return CKH_EINVAL;
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_READLINK, path, NULL, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return call_end(&c, call_errno(&c));
    return call_end(&c, do_readlink(as_view(fs), path, buf, bufsize));
}

static int do_fsync_dir(struct sf_view *v, const char *path)
{
    struct sf_res r;
    int rc = ckh__sf_resolve(v, path, true, &r);
    if (rc)
        return rc;
    if (!r.ino)
        return -ENOENT;
    if (r.ino->type != CKH_FT_DIR)
        return -ENOTDIR;
    ckh__sf_fsync_dir(r.d, v->node, r.ino);
    return 0;
}

static int view_fsync_dir(struct ckh_fs *fs, const char *path)
{
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    struct sf_call c;
    call_begin_path(&c, as_view(fs), CKH_OP_FSYNC_DIR, path, NULL, 0);
    if (c.act.kind == CKH_FAULT_ERRNO)
        return (int)call_end(&c, call_errno(&c));
    return (int)call_end(&c, do_fsync_dir(as_view(fs), path));
}

/* SEEK_DATA / SEEK_HOLE from the live copy's extents (a query: no op
 * recorded, no fault, no virtual time, as stat). */
static int64_t view_seek(struct ckh_file *fp, uint64_t off, enum ckh_seek_whence whence)
{
    const struct sf_data *dt = &as_file(fp)->ino->data[SF_LIVE];
    if (off >= dt->size)
        return -ENXIO;
    uint64_t at = ckh__sf_seek(dt, off, whence == CKH_SEEK_HOLE);
    if (whence == CKH_SEEK_DATA && at >= dt->size)
        return -ENXIO;
    return (int64_t)at;
}

const struct ckh_fs_ops ckh__sf_view_ops = {
    .version = 2,
    .open = view_open,
    .read = view_read,
    .pread = view_pread,
    .write = view_write,
    .pwrite = view_pwrite,
    .pwrite_gen = view_pwrite_gen,
    .fsync = view_fsync,
    .fdatasync = view_fdatasync,
    .ftruncate = view_ftruncate,
    .close = view_close,
    .rename = view_rename,
    .unlink = view_unlink,
    .mkdir = view_mkdir,
    .rmdir = view_rmdir,
    .listdir = view_listdir,
    .stat = view_stat,
    .symlink = view_symlink,
    .readlink = view_readlink,
    .fsync_dir = view_fsync_dir,
    .seek = view_seek,
};

/* ------------------------------------------------------------------- views */

int ckh_simfs_view_create(struct ckh_sim *sim, int node, const struct ckh_simfs_mount *mounts,
                          size_t nmounts, struct ckh_fs **out)
{
    if (out)
        *out = NULL;
    if (!out || !mounts || nmounts == 0)
        return CKH_EINVAL;
    for (size_t i = 0; i < nmounts; i++) {
        if (!mounts[i].disk || ckh_path_check(mounts[i].prefix))
            return CKH_EINVAL;
        for (size_t j = 0; j < i; j++)
            if (strcmp(mounts[i].prefix, mounts[j].prefix) == 0)
                return CKH_EINVAL;
    }
    struct sf_view *v = calloc(1, sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    v->mounts = calloc(nmounts, sizeof(*v->mounts));
    if (!v->mounts)
        goto out_free_view;
    for (size_t i = 0; i < nmounts; i++) {
        char *p = strdup(mounts[i].prefix);
        if (!p)
            goto out_free_view;
        struct sf_mount m = {.prefix = p, .plen = strlen(p), .disk = mounts[i].disk};
        size_t j = v->nmounts; /* insertion sort: longest prefix first */
        while (j > 0 && v->mounts[j - 1].plen < m.plen) {
            v->mounts[j] = v->mounts[j - 1];
            j--;
        }
        v->mounts[j] = m;
        v->nmounts++;
    }
    v->base.ops = &ckh__sf_view_ops;
    v->sim = sim;
    v->node = node;
    *out = &v->base;
    return 0;
out_free_view:
    for (size_t i = 0; i < v->nmounts; i++)
        free((char *)v->mounts[i].prefix);
    free(v->mounts);
    free(v);
    return CKH_ENOMEM;
}

void ckh_simfs_view_destroy(struct ckh_fs *view)
{
    if (!view || view->ops != &ckh__sf_view_ops)
        return;
    struct sf_view *v = as_view(view);
    if (v->direct)
        return;
    while (v->files)
        file_drop(v->files);
    for (size_t i = 0; i < v->nmounts; i++)
        free((char *)v->mounts[i].prefix);
    free(v->mounts);
    free(v);
}
