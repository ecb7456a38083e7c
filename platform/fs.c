/* Wrappers around struct ckh_fs_ops and helpers built only on them.
 *
 * The wrappers are the single place for argument checks: a NULL handle or
 * path gives CKH_EINVAL, a method the implementation lacks gives
 * CKH_EUNSUPPORTED. Helpers (write_all, mkdirs, path utilities) work with
 * any implementation, simulated or real.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/alloc.h"
#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/rng.h"

#define FS_OK(fs) ((fs) && (fs)->ops)
#define FILE_OK(f) ((f) && (f)->fs && (f)->fs->ops)

int ckh_fs_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    if (out)
        *out = NULL;
    if (!FS_OK(fs) || !path || !out)
        return CKH_EINVAL;
    if ((flags & CKH_O_ACCMODE) == CKH_O_ACCMODE ||
        (flags & ~(CKH_O_ACCMODE | CKH_O_CREAT | CKH_O_EXCL | CKH_O_TRUNC | CKH_O_APPEND)))
        return CKH_EINVAL;
    *out = NULL;
    if (!fs->ops->open)
        return CKH_EUNSUPPORTED;
    return fs->ops->open(fs, path, flags, out);
}

#define FILE_CALL(f, method, ...)                                              \
    do {                                                                       \
        if (!FILE_OK(f))                                                       \
            return CKH_EINVAL;                                                 \
        if (!(f)->fs->ops->method)                                             \
            return CKH_EUNSUPPORTED;                                           \
        return (f)->fs->ops->method(__VA_ARGS__);                              \
    } while (0)

#define FS_CALL(fs, method, ...)                                               \
    do {                                                                       \
        if (!FS_OK(fs))                                                        \
            return CKH_EINVAL;                                                 \
        if (!(fs)->ops->method)                                                \
            return CKH_EUNSUPPORTED;                                           \
        return (fs)->ops->method(__VA_ARGS__);                                 \
    } while (0)

int64_t ckh_file_read(struct ckh_file *f, void *buf, size_t n)
{
    if (!buf && n)
        return CKH_EINVAL;
    FILE_CALL(f, read, f, buf, n);
}

int64_t ckh_file_pread(struct ckh_file *f, void *buf, size_t n, uint64_t off)
{
    if (!buf && n)
        return CKH_EINVAL;
    FILE_CALL(f, pread, f, buf, n, off);
}

int64_t ckh_file_seek(struct ckh_file *f, uint64_t off, enum ckh_seek_whence whence)
{
    if (!FILE_OK(f) || (whence != CKH_SEEK_DATA && whence != CKH_SEEK_HOLE) || off > INT64_MAX)
        return CKH_EINVAL;
    if (f->fs->ops->version < 2 || !f->fs->ops->seek)
        return whence == CKH_SEEK_DATA ? (int64_t)off : INT64_MAX;
    return f->fs->ops->seek(f, off, whence);
}

int64_t ckh_file_write(struct ckh_file *f, const void *buf, size_t n)
{
    if (!buf && n)
        return CKH_EINVAL;
    FILE_CALL(f, write, f, buf, n);
}

int64_t ckh_file_pwrite(struct ckh_file *f, const void *buf, size_t n, uint64_t off)
{
    if (!buf && n)
        return CKH_EINVAL;
    FILE_CALL(f, pwrite, f, buf, n, off);
}

int64_t ckh_file_pwrite_gen(struct ckh_file *f, const struct ckh_gen *g, uint64_t n, uint64_t off)
{
    if (!FILE_OK(f) || !g)
        return CKH_EINVAL;
    if (f->fs->ops->pwrite_gen)
        return f->fs->ops->pwrite_gen(f, g, n, off);
    if (!f->fs->ops->pwrite)
        return CKH_EUNSUPPORTED;
    /* Fallback: materialize the described bytes chunk by chunk. */
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(n < CHUNK ? (n ? n : 1) : CHUNK);
    if (!buf)
        return CKH_ENOMEM;
    uint64_t done = 0;
    int64_t rc = 0;
    while (done < n) {
        size_t len = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
        ckh_gen_fill(g, done, buf, len);
        rc = f->fs->ops->pwrite(f, buf, len, off + done);
        if (rc < 0)
            break;
        if (rc == 0) { /* no progress: fail rather than loop forever */
            rc = -EIO;
            break;
        }
        CKH_ASSERT((uint64_t)rc <= len);
        done += (uint64_t)rc;
    }
    free(buf);
    return rc < 0 ? rc : (int64_t)done;
}

int ckh_file_fsync(struct ckh_file *f)
{
    FILE_CALL(f, fsync, f);
}

int ckh_file_fdatasync(struct ckh_file *f)
{
    if (FILE_OK(f) && !f->fs->ops->fdatasync && f->fs->ops->fsync)
        return f->fs->ops->fsync(f);
    FILE_CALL(f, fdatasync, f);
}

int ckh_file_ftruncate(struct ckh_file *f, uint64_t len)
{
    FILE_CALL(f, ftruncate, f, len);
}

int ckh_file_close(struct ckh_file *f)
{
    FILE_CALL(f, close, f);
}

int ckh_fs_rename(struct ckh_fs *fs, const char *from, const char *to)
{
    if (!from || !to)
        return CKH_EINVAL;
    FS_CALL(fs, rename, fs, from, to);
}

int ckh_fs_unlink(struct ckh_fs *fs, const char *path)
{
    if (!path)
        return CKH_EINVAL;
    FS_CALL(fs, unlink, fs, path);
}

int ckh_fs_mkdir(struct ckh_fs *fs, const char *path)
{
    if (!path)
        return CKH_EINVAL;
    FS_CALL(fs, mkdir, fs, path);
}

int ckh_fs_rmdir(struct ckh_fs *fs, const char *path)
{
    if (!path)
        return CKH_EINVAL;
    FS_CALL(fs, rmdir, fs, path);
}

int ckh_fs_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out)
{
    if (!path || !out)
        return CKH_EINVAL;
    out->entries = NULL;
    out->count = 0;
    out->alloc = NULL;
    FS_CALL(fs, listdir, fs, path, out);
}

int ckh_fs_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    if (!path || !out)
        return CKH_EINVAL;
    FS_CALL(fs, stat, fs, path, out);
}

int ckh_fs_symlink(struct ckh_fs *fs, const char *target, const char *linkpath)
{
    if (!target || !linkpath)
        return CKH_EINVAL;
    FS_CALL(fs, symlink, fs, target, linkpath);
}

int64_t ckh_fs_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize)
{
    if (!path || !buf || !bufsize)
        return CKH_EINVAL;
    FS_CALL(fs, readlink, fs, path, buf, bufsize);
}

int ckh_fs_fsync_dir(struct ckh_fs *fs, const char *path)
{
    if (!path)
        return CKH_EINVAL;
    FS_CALL(fs, fsync_dir, fs, path);
}

void ckh_fs_listing_free(struct ckh_listing *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        ckh_free(l->alloc, l->entries[i].name);
    ckh_free(l->alloc, l->entries);
    l->entries = NULL;
    l->count = 0;
}

int ckh_file_write_all(struct ckh_file *f, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n) {
        int64_t rc = ckh_file_write(f, p, n);
        if (rc < 0)
            return (int)rc;
        if (rc == 0) /* no progress: fail rather than loop forever */
            return -EIO;
        CKH_ASSERT((uint64_t)rc <= n); /* an fs never reports more than it was given */
        p += rc;
        n -= (size_t)rc;
    }
    return 0;
}

#define DIGEST_BLOCK (64u * 1024u) /* bytes hashed at once; all-zero blocks are left out */

static bool block_zero(const unsigned char *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Hashes the blocks of f (length size) from the one holding off up to
 * the one holding end - 1 into *h: block k is bytes [k * BLOCK, (k + 1) *
 * BLOCK) cut at size, read whole even where a hole starts inside it (its
 * zeros are content). Returns where the last block ended, or the error. */
static int64_t digest_run(struct ckh_file *f, unsigned char *buf, uint64_t off, uint64_t end,
                          uint64_t size, uint64_t *h)
{
    uint64_t blk = off / DIGEST_BLOCK;
    for (; blk * DIGEST_BLOCK < end; blk++) {
        uint64_t at = blk * DIGEST_BLOCK;
        size_t want = size - at < DIGEST_BLOCK ? (size_t)(size - at) : DIGEST_BLOCK;
        int rc = ckh_file_pread_all(f, buf, want, at);
        if (rc)
            return rc;
        if (!block_zero(buf, want)) {
            *h = ckh_hash64(*h, &blk, sizeof blk);
            *h = ckh_hash64(*h, buf, want);
        }
    }
    return (int64_t)(blk * DIGEST_BLOCK);
}

int ckh_file_digest(struct ckh_file *f, uint64_t size, void *buf, size_t bufsize,
                    uint64_t *digest_out)
{
    if (!FILE_OK(f) || !digest_out || (buf && bufsize < DIGEST_BLOCK))
        return CKH_EINVAL;
    unsigned char *b = buf ? buf : malloc(DIGEST_BLOCK);
    if (!b)
        return CKH_ENOMEM;
    uint64_t h = ckh_hash64(CKH_HASH_INIT, "file", 4), off = 0;
    int64_t rc = 0;
    while (off < size) {
        int64_t d = ckh_file_seek(f, off, CKH_SEEK_DATA);
        if (d == -ENXIO || (d >= 0 && (uint64_t)d >= size))
            break; /* only holes up to the end */
        int64_t hole = d < 0 ? d : ckh_file_seek(f, (uint64_t)d, CKH_SEEK_HOLE);
        if ((rc = hole) < 0)
            break;
        uint64_t end = (uint64_t)hole < size ? (uint64_t)hole : size;
        if ((rc = digest_run(f, b, (uint64_t)d, end, size, &h)) < 0)
            break;
        off = (uint64_t)rc;
        rc = 0;
    }
    if (!buf)
        free(b);
    if (rc < 0)
        return (int)rc;
    *digest_out = ckh_hash64(h, &size, sizeof size);
    return 0;
}

int ckh_file_pread_all(struct ckh_file *f, void *buf, size_t n, uint64_t off)
{
    unsigned char *p = buf;
    while (n) {
        int64_t rc = ckh_file_pread(f, p, n, off);
        if (rc < 0)
            return (int)rc;
        if (rc == 0)
            return CKH_ETRUNCATED;
        CKH_ASSERT((uint64_t)rc <= n);
        p += rc;
        n -= (size_t)rc;
        off += (uint64_t)rc;
    }
    return 0;
}

bool ckh_fs_exists(struct ckh_fs *fs, const char *path)
{
    struct ckh_stat st;
    return ckh_fs_stat(fs, path, &st) == 0;
}

int ckh_fs_mkdirs(struct ckh_fs *fs, const char *path)
{
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    char buf[CKH_PATH_MAX + 1];
    strcpy(buf, path);
    size_t len = strlen(buf);
    /* Create each prefix ending before a '/', then the whole path. */
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        struct ckh_stat st;
        rc = ckh_fs_stat(fs, buf, &st);
        if (rc == 0 && st.type != CKH_FT_DIR && st.type != CKH_FT_SYMLINK)
            return -ENOTDIR;
        if (rc == -ENOENT) {
            rc = ckh_fs_mkdir(fs, buf);
            if (rc == -EEXIST)
                rc = 0;
        }
        if (rc)
            return rc;
        buf[i] = saved;
    }
    return 0;
}

int ckh_path_check(const char *path)
{
    if (!path || path[0] != '/')
        return CKH_EINVAL;
    size_t len = strlen(path);
    if (len > CKH_PATH_MAX)
        return -ENAMETOOLONG;
    if (len == 1)
        return 0;
    const char *p = path + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0)
            return CKH_EINVAL; /* "//" or trailing '/' */
        if (n == 1 && p[0] == '.')
            return CKH_EINVAL;
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return CKH_EESCAPE;
        if (!slash)
            return 0;
        p = slash + 1;
    }
}

int ckh_path_dirname(const char *path, char *buf, size_t bufsize)
{
    if (!path || !buf || !bufsize)
        return CKH_EINVAL;
    const char *slash = strrchr(path, '/');
    if (!slash)
        return CKH_EINVAL;
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* parent of "/a" is "/" */
    if (n + 1 > bufsize)
        return CKH_EINVAL;
    memcpy(buf, path, n);
    buf[n] = '\0';
    return 0;
}

int ckh_path_join(char *buf, size_t bufsize, const char *dir, const char *name)
{
    if (!buf || !dir || !name)
        return CKH_EINVAL;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    bool need_slash = !(dl == 1 && dir[0] == '/') && name[0] != '/';
    size_t nl = strlen(name);
    size_t total = dl + (need_slash ? 1 : 0) + nl;
    if (total + 1 > bufsize)
        return CKH_EINVAL;
    memmove(buf, dir, dl);
    if (need_slash)
        buf[dl++] = '/';
    memcpy(buf + dl, name, nl + 1);
    return 0;
}
