/* The crash explorer's recording shim (rule E2 of harness/search/explore.c).
 *
 * The traced action of a scenario runs through a struct ckh_fs that wraps
 * the disk's direct view. Every op passes one gate, which numbers it,
 * appends it to the run's trace, takes a snapshot of the disk at each
 * crash point (before an op that follows one that could change the disk),
 * kills the run at its op limit, fails the op chosen by the fault
 * catalogue (E7), and in the two-rank scenario (E6) offers the simulator a
 * scheduling point before the op so that an explicit schedule decides
 * which rank goes next.
 *
 * Map: op descriptions | runs and snapshots | the gate | the shim's ops.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "search/explore_internal.h"

/* A file opened through the shim. */
struct xfile {
    struct ckh_file base;   /* must be first */
    struct ckh_file *inner; /* the disk's file */
    char *path;             /* path it was opened with (owned) */
};

bool ckh__explore_op_changes(const struct ckh__xop *o)
{
    switch (o->kind) {
    case CKH_OP_OPEN:
        return (o->flags & (CKH_O_CREAT | CKH_O_TRUNC)) != 0;
    case CKH_OP_WRITE: case CKH_OP_PWRITE: case CKH_OP_FTRUNCATE: case CKH_OP_RENAME:
    case CKH_OP_UNLINK: case CKH_OP_MKDIR: case CKH_OP_RMDIR: case CKH_OP_SYMLINK:
    case CKH_OP_FSYNC: case CKH_OP_FDATASYNC: case CKH_OP_FSYNC_DIR:
        return true;
    default:
        return false;
    }
}

void ckh__explore_op_desc(const struct ckh__xop *o, char *buf, size_t n)
{
    const char *name = ckh_op_name((enum ckh_op_kind)o->kind);
    switch (o->kind) {
    case CKH_OP_OPEN:
        if (!(o->flags & (CKH_O_CREAT | CKH_O_TRUNC | CKH_O_EXCL)))
            snprintf(buf, n, "open %s", o->path); /* no flags, or not known (a real program's) */
        else
            snprintf(buf, n, "open %s%s%s%s", o->path, o->flags & CKH_O_CREAT ? " (create" : " (",
                     o->flags & CKH_O_TRUNC ? ",trunc" : "", o->flags & CKH_O_EXCL ? ",excl)" : ")");
        break;
    case CKH_OP_WRITE: case CKH_OP_PWRITE:
        snprintf(buf, n, "%s %s [%" PRIu64 ",+%" PRIu64 ")", name, o->path, o->off, o->len);
        break;
    case CKH_OP_FTRUNCATE:
        snprintf(buf, n, "ftruncate %s to %" PRIu64, o->path, o->off);
        break;
    case CKH_OP_RENAME: case CKH_OP_SYMLINK:
        snprintf(buf, n, "%s %s -> %s", name, o->path, o->path2 ? o->path2 : "?");
        break;
    default:
        snprintf(buf, n, "%s %s", name, o->path ? o->path : "");
    }
}

void ckh__explore_run_init(struct ckh__xrun *r)
{
    memset(r, 0, sizeof(*r));
    r->limit = UINT64_MAX;
    r->fail_at = UINT64_MAX;
    r->short_at = UINT64_MAX;
}

void ckh__explore_snap_take(struct ckh__xrun *r, uint64_t k)
{
    if (r->snap_err)
        return;
    if (r->nsnaps == r->snapcap) {
        size_t cap = r->snapcap ? r->snapcap * 2 : 64;
        struct ckh__xsnap *v = realloc(r->snaps, cap * sizeof(*v));
        if (!v) {
            r->snap_err = CKH_ENOMEM;
            return;
        }
        r->snaps = v;
        r->snapcap = cap;
    }
    struct ckh__xsnap *sn = &r->snaps[r->nsnaps];
    sn->k = k;
    if ((r->snap_err = ckh_simfs_clone(r->disk, &sn->disk)) == 0)
        r->nsnaps++;
}

void ckh__explore_run_free_snaps(struct ckh__xrun *r)
{
    for (size_t i = 0; i < r->nsnaps; i++)
        ckh_simfs_destroy(r->snaps[i].disk);
    free(r->snaps);
    r->snaps = NULL;
    r->nsnaps = r->snapcap = 0;
}

void ckh__explore_run_free_trace(struct ckh__xrun *r)
{
    for (size_t i = 0; i < r->ntrace; i++) {
        free(r->trace[i].path);
        free(r->trace[i].path2);
    }
    free(r->trace);
    r->trace = NULL;
    r->ntrace = r->cap = 0;
}

/* Appends one op to the run's trace: 0 or CKH_ENOMEM. */
static int record(struct ckh__xshim *s, int kind, const char *path, const char *path2, int flags,
                  uint64_t off, uint64_t len)
{
    struct ckh__xrun *r = s->run;
    if (r->ntrace == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct ckh__xop *t = realloc(r->trace, cap * sizeof(*t));
        if (!t)
            return CKH_ENOMEM;
        r->trace = t;
        r->cap = cap;
    }
    struct ckh__xop *o = &r->trace[r->ntrace];
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->rank = s->rank;
    o->phase = *s->phase;
    o->flags = flags;
    o->off = off;
    o->len = len;
    o->path = strdup(path ? path : "");
    o->path2 = path2 ? strdup(path2) : NULL;
    if (!o->path || (path2 && !o->path2)) {
        free(o->path);
        free(o->path2);
        return CKH_ENOMEM;
    }
    r->ntrace++;
    return 0;
}

/* Gate of every op: a scheduling point (two ranks), count, record, kill,
 * inject. Returns 0 to proceed, or the code the op returns without running. */
static int gate(struct ckh__xshim *s, int kind, const char *path, const char *path2, int flags,
                uint64_t off, uint64_t len)
{
    struct ckh__xrun *r = s->run;
    if (r->sim != NULL)
        ckh_sim_yield(r->sim); /* E6: the schedule decides which rank issues its op now */
    if (r->killed)
        return CKH_EKILLED;
    if (r->nops >= r->limit) {
        r->killed = true;
        return CKH_EKILLED;
    }
    uint64_t idx = r->nops;
    /* E2: a crash point before op idx unless op idx-1 changed nothing. */
    if (r->snapshot && (idx == 0 || ckh__explore_op_changes(&r->trace[idx - 1])))
        ckh__explore_snap_take(r, idx);
    r->nops++;
    if (r->ref && (idx >= r->nref || r->ref[idx].kind != kind))
        r->diverged = true;
    if (r->record) {
        int rc = record(s, kind, path, path2, flags, off, len);
        if (rc)
            return rc;
    }
    if (idx == r->fail_at) {
        if (r->fsync_lost) {
            struct ckh_fault_action act;
            memset(&act, 0, sizeof(act));
            act.kind = CKH_FAULT_FSYNC_LOST;
            ckh_simfs_fault_next(r->disk, kind, NULL, &act);
            return 0;
        }
        return -r->fail_err;
    }
    return 0;
}

#define SHIM(fs) ((struct ckh__xshim *)(fs))
#define XF(f) ((struct xfile *)(f))
#define XS(f) SHIM((f)->fs)

static int sh_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    int rc = gate(SHIM(fs), CKH_OP_OPEN, path, NULL, flags, 0, 0);
    if (rc)
        return rc;
    struct xfile *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return CKH_ENOMEM;
    }
    if ((rc = ckh_fs_open(SHIM(fs)->inner, path, flags, &f->inner)) != 0) {
        free(f->path);
        free(f);
        return rc;
    }
    f->base.fs = fs;
    *out = &f->base;
    return 0;
}

static int64_t sh_read(struct ckh_file *f, void *buf, size_t n)
{
    int rc = gate(XS(f), CKH_OP_READ, XF(f)->path, NULL, 0, 0, n);
    return rc ? rc : ckh_file_read(XF(f)->inner, buf, n);
}

static int64_t sh_pread(struct ckh_file *f, void *buf, size_t n, uint64_t off)
{
    int rc = gate(XS(f), CKH_OP_PREAD, XF(f)->path, NULL, 0, off, n);
    return rc ? rc : ckh_file_pread(XF(f)->inner, buf, n, off);
}

/* E7 short writes: the write just gated accepts only the first half of
 * its n bytes when it is the run's short_at (what CKH_FAULT_SHORT_WRITE
 * does in the simulator: that prefix lands, the count is returned). */
static uint64_t accepted(const struct ckh__xshim *s, uint64_t n)
{
    return s->run->nops - 1 == s->run->short_at && n > 1 ? n / 2 : n;
}

static int64_t sh_write(struct ckh_file *f, const void *buf, size_t n)
{
    int rc = gate(XS(f), CKH_OP_WRITE, XF(f)->path, NULL, 0, 0, n);
    return rc ? rc : ckh_file_write(XF(f)->inner, buf, (size_t)accepted(XS(f), n));
}

static int64_t sh_pwrite(struct ckh_file *f, const void *buf, size_t n, uint64_t off)
{
    int rc = gate(XS(f), CKH_OP_PWRITE, XF(f)->path, NULL, 0, off, n);
    return rc ? rc : ckh_file_pwrite(XF(f)->inner, buf, (size_t)accepted(XS(f), n), off);
}

static int64_t sh_pwrite_gen(struct ckh_file *f, const struct ckh_gen *g, uint64_t n, uint64_t off)
{
    int rc = gate(XS(f), CKH_OP_PWRITE, XF(f)->path, NULL, 0, off, n);
    return rc ? rc : ckh_file_pwrite_gen(XF(f)->inner, g, accepted(XS(f), n), off);
}

static int sh_fsync(struct ckh_file *f)
{
    int rc = gate(XS(f), CKH_OP_FSYNC, XF(f)->path, NULL, 0, 0, 0);
    return rc ? rc : ckh_file_fsync(XF(f)->inner);
}

static int sh_fdatasync(struct ckh_file *f)
{
    int rc = gate(XS(f), CKH_OP_FDATASYNC, XF(f)->path, NULL, 0, 0, 0);
    return rc ? rc : ckh_file_fdatasync(XF(f)->inner);
}

static int sh_ftruncate(struct ckh_file *f, uint64_t len)
{
    int rc = gate(XS(f), CKH_OP_FTRUNCATE, XF(f)->path, NULL, 0, len, 0);
    return rc ? rc : ckh_file_ftruncate(XF(f)->inner, len);
}

/* Close always releases the inner file: it changes nothing on the disk. */
static int sh_close(struct ckh_file *f)
{
    int rc = gate(XS(f), CKH_OP_CLOSE, XF(f)->path, NULL, 0, 0, 0);
    int rc2 = ckh_file_close(XF(f)->inner);
    free(XF(f)->path);
    free(f);
    return rc ? rc : rc2;
}

static int sh_rename(struct ckh_fs *fs, const char *from, const char *to)
{
    int rc = gate(SHIM(fs), CKH_OP_RENAME, from, to, 0, 0, 0);
    return rc ? rc : ckh_fs_rename(SHIM(fs)->inner, from, to);
}

static int sh_unlink(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_UNLINK, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_unlink(SHIM(fs)->inner, path);
}

static int sh_mkdir(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_MKDIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_mkdir(SHIM(fs)->inner, path);
}

static int sh_rmdir(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_RMDIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_rmdir(SHIM(fs)->inner, path);
}

static int sh_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out)
{
    int rc = gate(SHIM(fs), CKH_OP_LISTDIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_listdir(SHIM(fs)->inner, path, out);
}

static int sh_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    int rc = gate(SHIM(fs), CKH_OP_STAT, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_stat(SHIM(fs)->inner, path, out);
}

static int sh_symlink(struct ckh_fs *fs, const char *target, const char *linkpath)
{
    int rc = gate(SHIM(fs), CKH_OP_SYMLINK, linkpath, target, 0, 0, 0);
    return rc ? rc : ckh_fs_symlink(SHIM(fs)->inner, target, linkpath);
}

static int64_t sh_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize)
{
    int rc = gate(SHIM(fs), CKH_OP_READLINK, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_readlink(SHIM(fs)->inner, path, buf, bufsize);
}

static int sh_fsync_dir(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_FSYNC_DIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_fsync_dir(SHIM(fs)->inner, path);
}

static const struct ckh_fs_ops shim_ops = {
    .version = 1,
    .open = sh_open,
    .read = sh_read,
    .pread = sh_pread,
    .write = sh_write,
    .pwrite = sh_pwrite,
    .pwrite_gen = sh_pwrite_gen,
    .fsync = sh_fsync,
    .fdatasync = sh_fdatasync,
    .ftruncate = sh_ftruncate,
    .close = sh_close,
    .rename = sh_rename,
    .unlink = sh_unlink,
    .mkdir = sh_mkdir,
    .rmdir = sh_rmdir,
    .listdir = sh_listdir,
    .stat = sh_stat,
    .symlink = sh_symlink,
    .readlink = sh_readlink,
    .fsync_dir = sh_fsync_dir,
};

void ckh__explore_shim_init(struct ckh__xshim *s, struct ckh__xrun *r, int rank)
{
    memset(s, 0, sizeof(*s));
    s->base.ops = &shim_ops;
    s->inner = ckh_simfs_fs(r->disk);
    s->run = r;
    s->rank = rank;
    s->phase = &r->phase;
}
