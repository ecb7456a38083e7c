/* The FUSE operations of ckhfs: each kernel request becomes one ckh_fs
 * call on the simfs view of the caller's node (a thin translator: simfs is
 * the one filesystem and the one crash model).
 *
 * Every operation below goes through ckh__ckhfs_begin (node, hook, fault
 * verdict) and ckh__ckhfs_end (trace, KILL_AFTER), as one op kind:
 *
 *   FUSE request        op kind      simfs call
 *   getattr / lookup    stat         ckh_fs_stat (lstat)
 *   readlink            readlink     ckh_fs_readlink
 *   mkdir, rmdir        mkdir, rmdir ckh_fs_mkdir, ckh_fs_rmdir
 *   unlink              unlink       ckh_fs_unlink
 *   symlink             symlink      ckh_fs_symlink (path2: the target)
 *   rename              rename       ckh_fs_rename (path2: the destination)
 *   truncate            ftruncate    ckh_file_ftruncate
 *   open, create        open         ckh_fs_open
 *   read                pread        ckh_file_pread
 *   write               pwrite       ckh_file_pwrite (+ fsync for O_SYNC)
 *   flush (each close)  close        nothing (simfs closes at release)
 *   fsync               fsync / fdatasync
 *   readdir             listdir      ckh_fs_listdir
 *   fsyncdir            fsync_dir    ckh_fs_fsync_dir
 *   lseek (DATA, HOLE)  stat         ckh_file_seek
 *
 * Accepted and ignored (simfs has no modes, owners or times): chmod,
 * chown, utimens. Refused: link (EPERM: no hard links), mknod (EPERM),
 * rename with RENAME_EXCHANGE or RENAME_WHITEOUT (EINVAL). Not provided,
 * so the kernel answers: xattrs (EOPNOTSUPP), fallocate (EOPNOTSUPP), file
 * locks (the kernel's local locks). Attributes: mode 0644 files, 0755
 * folders, 0777 links, owned by the mounting user, every time stamp
 * CKHFS_TIME (fixed, so a program that records mtimes stays
 * deterministic). An open file whose name was removed reports size 0 when
 * asked with its handle (lseek SEEK_END); fstat, which the kernel sends by
 * inode without the handle, gets ESTALE from libfuse (the name is gone).
 * statfs reports the disk's capacity and what is left of it, else the
 * space of the real filesystem that holds its bytes (ckh_simfs_space).
 *
 * Map: helpers | namespace | files | folders | init and table.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckhfs/ckhfs_internal.h"

#define CKHFS_TIME 1577836800 /* 2020-01-01T00:00:00Z, every time stamp */
#define CKHFS_MAX_WRITE (1u << 20) /* bytes per FUSE write request */
#define CKHFS_ENTRY_TIMEOUT_S (365.0 * 86400.0) /* cache_names: longer than any mount lives */

/* ----------------------------------------------------------------- helpers */

static struct ckhfs_handle *handle_of(const struct fuse_file_info *fi)
{
    return fi ? (struct ckhfs_handle *)(uintptr_t)fi->fh : NULL;
}

/* The view of the request's caller (fs->lock held). */
static struct ckh_fs *caller_view(struct ckhfs_req *r)
{
    return ckh__ckhfs_view(r->fs, r->op.node);
}

/* Ends r with a ckh result translated to -errno. */
static int end_errno(struct ckhfs_req *r, int64_t rc)
{
    int e = ckh__ckhfs_errno(rc);
    CKH_ASSERT(e <= 0 && e > -4096); /* the kernel takes 0 or -errno */
    return (int)ckh__ckhfs_end(r, e);
}

static void fill_stat(struct stat *st, const struct ckh_stat *cs)
{
    memset(st, 0, sizeof(*st));
    switch (cs->type) {
    case CKH_FT_DIR:
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        break;
    case CKH_FT_SYMLINK:
        st->st_mode = S_IFLNK | 0777;
        st->st_nlink = 1;
        break;
    default:
        st->st_mode = S_IFREG | 0644;
        st->st_nlink = 1;
        break;
    }
    st->st_size = (off_t)cs->size_bytes;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((cs->size_bytes + 511) / 512);
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_atime = st->st_mtime = st->st_ctime = CKHFS_TIME;
}

/* open(2) flags -> ckh flags (the flags simfs models). */
static int ckh_flags(int oflags)
{
    int f = 0;
    switch (oflags & O_ACCMODE) {
    case O_WRONLY:
        f = CKH_O_WRONLY;
        break;
    case O_RDWR:
        f = CKH_O_RDWR;
        break;
    default:
        f = CKH_O_RDONLY;
        break;
    }
    if (oflags & O_CREAT)
        f |= CKH_O_CREAT;
    if (oflags & O_EXCL)
        f |= CKH_O_EXCL;
    if (oflags & O_TRUNC)
        f |= CKH_O_TRUNC;
    if (oflags & O_APPEND)
        f |= CKH_O_APPEND;
    return f;
}

/* --------------------------------------------------------------- namespace */

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct ckhfs_handle *h = handle_of(fi);
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_STAT, path ? path : h ? h->path : "", NULL, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_stat cs = {.type = CKH_FT_FILE, .size_bytes = 0};
    int64_t res = 0;
    if (path) {
        struct ckh_fs *v = caller_view(&r);
        res = v ? ckh_fs_stat(v, path, &cs) : CKH_ENOMEM;
    }
    if (res == 0) {
        fill_stat(st, &cs);
        if (!path)
            st->st_nlink = 0; /* open, name removed */
    }
    return end_errno(&r, res);
}

static int op_readlink(const char *path, char *buf, size_t size)
{
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_READLINK, path, NULL, 0, size);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    int64_t res = v ? ckh_fs_readlink(v, path, buf, size) : CKH_ENOMEM;
    return end_errno(&r, res < 0 ? res : 0);
}

static int op_mkdir(const char *path, mode_t mode)
{
    (void)mode;
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_MKDIR, path, NULL, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    return end_errno(&r, v ? ckh_fs_mkdir(v, path) : CKH_ENOMEM);
}

static int op_unlink(const char *path)
{
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_UNLINK, path, NULL, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    return end_errno(&r, v ? ckh_fs_unlink(v, path) : CKH_ENOMEM);
}

static int op_rmdir(const char *path)
{
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_RMDIR, path, NULL, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    return end_errno(&r, v ? ckh_fs_rmdir(v, path) : CKH_ENOMEM);
}

static int op_symlink(const char *target, const char *linkpath)
{
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_SYMLINK, linkpath, target, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    return end_errno(&r, v ? ckh_fs_symlink(v, target, linkpath) : CKH_ENOMEM);
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_RENAME, from, to, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    int64_t res = v ? 0 : CKH_ENOMEM;
    if (res == 0 && (flags & ~(unsigned)RENAME_NOREPLACE))
        res = -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT: not modelled */
    if (res == 0 && (flags & RENAME_NOREPLACE) && ckh_fs_exists(v, to))
        res = -EEXIST; /* checked and done under one lock: atomic here */
    if (res == 0)
        res = ckh_fs_rename(v, from, to);
    return end_errno(&r, res);
}

static int op_link(const char *from, const char *to)
{
    (void)from;
    (void)to;
    return -EPERM; /* simfs has no hard links */
}

static int op_mknod(const char *path, mode_t mode, dev_t dev)
{
    (void)path;
    (void)mode;
    (void)dev;
    return -EPERM; /* only files (create), folders and links */
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    (void)path;
    (void)mode;
    (void)fi;
    return 0;
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    (void)path;
    (void)uid;
    (void)gid;
    (void)fi;
    return 0;
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    (void)path;
    (void)tv;
    (void)fi;
    return 0;
}

static int op_statfs(const char *path, struct statvfs *sv)
{
    (void)path;
    struct ckh_ckhfs *fs = fuse_get_context()->private_data;
    memset(sv, 0, sizeof(*sv));
    uint64_t total = 0, avail = 0;
    pthread_mutex_lock(&fs->lock);
    int rc = fs->cfg.disk ? ckh_simfs_space(fs->cfg.disk, &total, &avail) : -EIO; /* no disk: swapped out */
    pthread_mutex_unlock(&fs->lock);
    if (rc)
        return ckh__ckhfs_errno(rc);
    /* The truth: the capacity and what is left of it, else the real disk
     * that holds the bytes (or the memory, for a disk kept in memory). */
    sv->f_bsize = sv->f_frsize = 4096;
    sv->f_blocks = total / 4096;
    sv->f_bfree = sv->f_bavail = avail / 4096;
    sv->f_files = sv->f_ffree = sv->f_favail = 1u << 20;
    sv->f_namemax = 255;
    return 0;
}

/* ------------------------------------------------------------------- files */

/* Opens path for the caller: the handle goes to fi->fh. */
static int open_common(const char *path, int oflags, struct fuse_file_info *fi)
{
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_OPEN, path, NULL, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_ckhfs *fs = r.fs;
    struct ckh_fs *v = caller_view(&r);
    struct ckhfs_handle *h = calloc(1, sizeof(*h));
    if (!v || !h || !(h->path = strdup(path))) {
        if (h)
            free(h->path);
        free(h);
        return end_errno(&r, CKH_ENOMEM);
    }
    int64_t res = ckh_fs_open(v, path, ckh_flags(oflags), &h->file);
    if (res != 0) {
        free(h->path);
        free(h);
        return end_errno(&r, res);
    }
    h->oflags = oflags;
    h->next = fs->handles;
    if (fs->handles)
        fs->handles->prev = h;
    fs->handles = h;
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->direct_io = 1;  /* every read and write reaches ckhfs */
    fi->keep_cache = 0;
    return end_errno(&r, 0);
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
    return open_common(path, fi->flags, fi);
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    (void)mode;
    return open_common(path, fi->flags | O_CREAT, fi);
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)path;
    struct ckhfs_handle *h = handle_of(fi);
    struct ckhfs_req r;
    CKH_ASSERT(h); /* the kernel hands back the handle open_common made */
    int rc = ckh__ckhfs_begin(&r, CKH_OP_PREAD, h->path, NULL, (uint64_t)off, size);
    if (rc != 1 || !h->file)
        return (int)ckh__ckhfs_end(&r, rc != 1 ? rc : -EIO); /* !file: stale (a swapped disk) */
    int64_t res = ckh_file_pread(h->file, buf, size, (uint64_t)off);
    CKH_ASSERT(res <= (int64_t)size);
    return (int)ckh__ckhfs_end(&r, res < 0 ? ckh__ckhfs_errno(res) : res);
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path;
    struct ckhfs_handle *h = handle_of(fi);
    struct ckhfs_req r;
    CKH_ASSERT(h);
    int rc = ckh__ckhfs_begin(&r, CKH_OP_PWRITE, h->path, NULL, (uint64_t)off, size);
    if (rc != 1 || !h->file)
        return (int)ckh__ckhfs_end(&r, rc != 1 ? rc : -EIO);
    size_t n = size;
    if (r.act.verdict == CKH_CKHFS_SHORT && r.act.keep < n)
        n = (size_t)r.act.keep;
    CKH_ASSERT(n <= size);
    /* An O_APPEND handle appends at simfs's own end of file (the kernel's
     * offset comes from a size that may be stale). */
    int64_t res = n ? ckh_file_pwrite(h->file, buf, n, (uint64_t)off) : 0;
    if (res > 0 && (h->oflags & (O_SYNC | O_DSYNC))) {
        int s = (h->oflags & O_SYNC) == O_SYNC ? ckh_file_fsync(h->file)
                                               : ckh_file_fdatasync(h->file);
        if (s < 0)
            res = s;
    }
    CKH_ASSERT(res <= (int64_t)n); /* never more than was accepted: a short write stays short */
    return (int)ckh__ckhfs_end(&r, res < 0 ? ckh__ckhfs_errno(res) : res);
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    struct ckhfs_handle *h = handle_of(fi);
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_FTRUNCATE, path ? path : h ? h->path : "", NULL, 0,
                              (uint64_t)size);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    if (h)
        return end_errno(&r, h->file ? ckh_file_ftruncate(h->file, (uint64_t)size) : -EIO);
    struct ckh_fs *v = caller_view(&r);
    struct ckh_file *f = NULL;
    int64_t res = v ? ckh_fs_open(v, path, CKH_O_WRONLY, &f) : CKH_ENOMEM;
    if (res == 0) {
        res = ckh_file_ftruncate(f, (uint64_t)size);
        ckh_file_close(f);
    }
    return end_errno(&r, res);
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct ckhfs_handle *h = handle_of(fi);
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_CLOSE, h->path, NULL, 0, 0);
    return (int)ckh__ckhfs_end(&r, rc == 1 ? 0 : rc);
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct ckh_ckhfs *fs = fuse_get_context()->private_data;
    struct ckhfs_handle *h = handle_of(fi);
    pthread_mutex_lock(&fs->lock);
    CKH_ASSERT(h && (h->prev ? h->prev->next == h : fs->handles == h) && (!h->next || h->next->prev == h));
    if (h->prev)
        h->prev->next = h->next;
    else
        fs->handles = h->next;
    if (h->next)
        h->next->prev = h->prev;
    if (h->file) /* NULL: stale, closed when the disk was swapped */
        ckh_file_close(h->file); /* no flush: pending state stays on the disk */
    pthread_mutex_unlock(&fs->lock);
    free(h->path);
    free(h);
    return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    struct ckhfs_handle *h = handle_of(fi);
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, datasync ? CKH_OP_FDATASYNC : CKH_OP_FSYNC, h->path, NULL, 0,
                              0);
    if (rc != 1 || !h->file)
        return (int)ckh__ckhfs_end(&r, rc != 1 ? rc : -EIO);
    return end_errno(&r, datasync ? ckh_file_fdatasync(h->file) : ckh_file_fsync(h->file));
}

/* SEEK_DATA / SEEK_HOLE (the kernel answers the other whences): the
 * disk's own extent map, so a program (cp --sparse, a verify script) sees
 * the holes it left. A query, like stat: traced as a stat of the file. */
static off_t op_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    (void)path;
    struct ckhfs_handle *h = handle_of(fi);
    struct ckhfs_req r;
    CKH_ASSERT(h);
    if (whence != SEEK_DATA && whence != SEEK_HOLE)
        return -EINVAL;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_STAT, h->path, NULL, (uint64_t)off, 0);
    if (rc != 1 || !h->file)
        return (off_t)ckh__ckhfs_end(&r, rc != 1 ? rc : -EIO);
    int64_t res = off < 0 ? -ENXIO
                          : ckh_file_seek(h->file, (uint64_t)off,
                                          whence == SEEK_HOLE ? CKH_SEEK_HOLE : CKH_SEEK_DATA);
    if (res < 0)
        return (off_t)ckh__ckhfs_end(&r, ckh__ckhfs_errno(res));
    ckh__ckhfs_end(&r, 0);
    return (off_t)res;
}

/* ----------------------------------------------------------------- folders */

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_LISTDIR, path, NULL, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    struct ckh_listing l = {.entries = NULL};
    int64_t res = v ? ckh_fs_listdir(v, path, &l) : CKH_ENOMEM;
    if (res == 0) {
        struct stat st = {.st_mode = S_IFDIR};
        fill(buf, ".", &st, 0, 0);
        fill(buf, "..", &st, 0, 0);
        for (size_t i = 0; i < l.count; i++) {
            memset(&st, 0, sizeof st);
            st.st_mode = l.entries[i].type == CKH_FT_DIR       ? S_IFDIR
                       : l.entries[i].type == CKH_FT_SYMLINK ? S_IFLNK
                                                               : S_IFREG;
            if (fill(buf, l.entries[i].name, &st, 0, 0) != 0)
                break;
        }
        ckh_fs_listing_free(&l);
    }
    return end_errno(&r, res);
}

static int op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    (void)fi;
    struct ckhfs_req r;
    int rc = ckh__ckhfs_begin(&r, CKH_OP_FSYNC_DIR, path ? path : "", NULL, 0, 0);
    if (rc != 1)
        return (int)ckh__ckhfs_end(&r, rc);
    struct ckh_fs *v = caller_view(&r);
    int64_t res = !path ? -ENOENT : v ? ckh_fs_fsync_dir(v, path) : CKH_ENOMEM;
    return end_errno(&r, res);
}

/* ---------------------------------------------------------- init and table */

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    struct ckh_ckhfs *fs = fuse_get_context()->private_data;
    /* Nothing cached in the kernel: every stat, read and write reaches
     * ckhfs, in the order the program issues them; every lookup too,
     * unless the caller lets the kernel keep the names it found
     * (cache_names: every change of a name goes through this mount then,
     * so the kernel's entries stay true; names not found are asked for
     * again each time). */
    cfg->entry_timeout = fs->cfg.cache_names ? CKHFS_ENTRY_TIMEOUT_S : 0;
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    cfg->direct_io = 1;
    cfg->kernel_cache = 0;
    cfg->auto_cache = 0;
    cfg->hard_remove = 1; /* an open file's removal is an unlink, not a hidden rename */
    cfg->use_ino = 0;
    cfg->nullpath_ok = 0; /* paths even for open files (fstat after a rename) */
    conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_READDIRPLUS |
                              FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_ASYNC_READ |
                              FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
                              FUSE_CAP_SPLICE_MOVE | FUSE_CAP_PARALLEL_DIROPS);
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC; /* O_TRUNC arrives with the open */
    if (conn->max_write > CKHFS_MAX_WRITE)
        conn->max_write = CKHFS_MAX_WRITE;
    conn->max_readahead = 0;
    ckh__ckhfs_inited(fs);
    return fs;
}

const struct fuse_operations ckh__ckhfs_ops = {
    .getattr = op_getattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .chmod = op_chmod,
    .chown = op_chown,
    .truncate = op_truncate,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .statfs = op_statfs,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .readdir = op_readdir,
    .fsyncdir = op_fsyncdir,
    .init = op_init,
    .create = op_create,
    .utimens = op_utimens,
    .lseek = op_lseek,
};
