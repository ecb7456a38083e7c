/* Tests for the edges of platform/: what the ops-table wrappers do with
 * bad arguments and with tables that lack methods (fs.c, env.c), the
 * helpers built on them over an fs that writes short, makes no progress
 * or fails (write_all, pread_all, the described-write fallback, digests,
 * mkdirs), the path helpers, the error table (err.c), the allocator
 * (alloc.c) and the POSIX fs and whole-file reader on real files
 * (posix.c). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/alloc.h"
#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/op.h"
#include "ckh/posix.h"
#include "ckh/record.h"
#include "ckh/rng.h"
#include "support/skip.h"

/* ------------------------------------------------ a small fs in memory */

/* One file of up to MEM_MAX bytes at "/f", a folder "/d"; how each
 * method behaves is set per test. */
#define MEM_MAX (3u << 20)

static struct {
    unsigned char data[MEM_MAX]; /* the file's bytes */
    uint64_t size;               /* its length */
    size_t chunk;                /* most bytes one write or read takes (0: all) */
    int64_t fail;                /* a write or read answers this when nonzero */
    bool zero_progress;          /* writes and reads take 0 bytes */
    int fsyncs;                  /* fsync calls */
    int pwrites;                 /* pwrite calls */
    bool file_is_dir;            /* stat says "/f" is a folder */
    int stat_rc;                 /* stat of a missing name answers this (default -ENOENT) */
    int mkdir_rc;                /* mkdir answers this */
    int mkdirs;                  /* mkdir calls */
    uint64_t data_at;            /* version 2: seek says data starts here ... */
    int64_t seek_fail;           /* ... or fails with this */
} M;

static struct ckh_file mem_file; /* the one handle */

static int m_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    (void)path;
    (void)flags;
    mem_file.fs = fs;
    *out = &mem_file;
    return 0;
}

static int64_t take(size_t n)
{
    if (M.fail)
        return M.fail;
    if (M.zero_progress)
        return 0;
    return (int64_t)(M.chunk && n > M.chunk ? M.chunk : n);
}

static int64_t m_pwrite(struct ckh_file *f, const void *buf, size_t n, uint64_t off)
{
    (void)f;
    M.pwrites++;
    int64_t k = take(n);
    if (k > 0) {
        ck_assert_uint_le(off + (uint64_t)k, MEM_MAX);
        memcpy(M.data + off, buf, (size_t)k);
        if (off + (uint64_t)k > M.size)
            M.size = off + (uint64_t)k;
    }
    return k;
}

static int64_t m_write(struct ckh_file *f, const void *buf, size_t n)
{
    return m_pwrite(f, buf, n, M.size);
}

static int64_t m_pread(struct ckh_file *f, void *buf, size_t n, uint64_t off)
{
    (void)f;
    if (M.fail)
        return M.fail;
    if (off >= M.size || M.zero_progress)
        return 0;
    size_t k = (size_t)take(n);
    if (off + k > M.size)
        k = (size_t)(M.size - off);
    memcpy(buf, M.data + off, k);
    return (int64_t)k;
}

static int m_fsync(struct ckh_file *f)
{
    (void)f;
    M.fsyncs++;
    return 0;
}

static int m_close(struct ckh_file *f)
{
    (void)f;
    return 0;
}

static int m_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    (void)fs;
    if (strcmp(path, "/") == 0 || strcmp(path, "/d") == 0 || (M.file_is_dir && strcmp(path, "/f") == 0)) {
        out->type = CKH_FT_DIR;
        return 0;
    }
    if (strcmp(path, "/f") == 0) {
        out->type = CKH_FT_FILE;
        out->size_bytes = M.size;
        return 0;
    }
    return M.stat_rc ? M.stat_rc : -ENOENT;
}

static int m_mkdir(struct ckh_fs *fs, const char *path)
{
    (void)fs;
    (void)path;
    M.mkdirs++;
    return M.mkdir_rc;
}

static int64_t m_seek(struct ckh_file *f, uint64_t off, enum ckh_seek_whence whence)
{
    (void)f;
    if (M.seek_fail)
        return M.seek_fail;
    if (whence == CKH_SEEK_DATA)
        return off >= M.size ? -ENXIO : (int64_t)(off > M.data_at ? off : M.data_at);
    return (int64_t)M.size;
}

/* Version 1: no seek, no fdatasync, no pwrite_gen. */
static const struct ckh_fs_ops mem_ops_v1 = {
    .version = 1, .open = m_open, .read = NULL, .pread = m_pread, .write = m_write,
    .pwrite = m_pwrite, .fsync = m_fsync, .close = m_close, .stat = m_stat, .mkdir = m_mkdir};
/* Version 2, with seek. */
static const struct ckh_fs_ops mem_ops_v2 = {
    .version = 2, .open = m_open, .pread = m_pread, .write = m_write, .pwrite = m_pwrite,
    .fsync = m_fsync, .close = m_close, .stat = m_stat, .mkdir = m_mkdir, .seek = m_seek};
/* Nothing at all. */
static const struct ckh_fs_ops empty_ops = {.version = 2};

static struct ckh_fs mem_fs = {.ops = &mem_ops_v1};

static struct ckh_file *mem_open(const struct ckh_fs_ops *ops)
{
    memset(&M, 0, sizeof M);
    mem_fs.ops = ops;
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(&mem_fs, "/f", CKH_O_RDWR, &f), 0);
    return f;
}

/* ------------------------------------------------------- the fs wrappers */

START_TEST(test_fs_wrappers_refuse_bad_arguments)
{
    struct ckh_file *f = (struct ckh_file *)&mem_fs; /* overwritten with NULL */
    struct ckh_fs nofs = {.ops = NULL};
    ck_assert_int_eq(ckh_fs_open(NULL, "/f", 0, &f), CKH_EINVAL);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(ckh_fs_open(&nofs, "/f", 0, &f), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_open(&mem_fs, NULL, 0, &f), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_open(&mem_fs, "/f", 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_open(&mem_fs, "/f", CKH_O_ACCMODE, &f), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_open(&mem_fs, "/f", 0x100, &f), CKH_EINVAL);
    f = mem_open(&mem_ops_v1);
    char buf[4];
    ck_assert_int_eq(ckh_file_read(f, NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_pread(f, NULL, 1, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_write(f, NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_pwrite(f, NULL, 1, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_read(NULL, buf, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_pread(NULL, buf, 1, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_write(NULL, buf, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_pwrite(NULL, buf, 1, 0), CKH_EINVAL);
    struct ckh_gen g = {.seed = 1};
    ck_assert_int_eq(ckh_file_pwrite_gen(NULL, &g, 1, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_pwrite_gen(f, NULL, 1, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_fsync(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_fdatasync(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_ftruncate(NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_close(NULL), CKH_EINVAL);
    struct ckh_file orphan = {.fs = NULL};
    ck_assert_int_eq(ckh_file_fsync(&orphan), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_seek(NULL, 0, CKH_SEEK_DATA), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_seek(f, 0, (enum ckh_seek_whence)7), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_seek(f, (uint64_t)INT64_MAX + 1, CKH_SEEK_HOLE), CKH_EINVAL);
    /* path calls: NULL names, then a NULL fs */
    struct ckh_stat st;
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_rename(&mem_fs, NULL, "/b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_rename(&mem_fs, "/a", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_unlink(&mem_fs, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_mkdir(&mem_fs, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_rmdir(&mem_fs, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_listdir(&mem_fs, NULL, &l), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_listdir(&mem_fs, "/d", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_stat(&mem_fs, NULL, &st), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_stat(&mem_fs, "/f", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_symlink(&mem_fs, NULL, "/l"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_symlink(&mem_fs, "f", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_readlink(&mem_fs, NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_readlink(&mem_fs, "/l", NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_readlink(&mem_fs, "/l", buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_fsync_dir(&mem_fs, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_rename(NULL, "/a", "/b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_unlink(NULL, "/a"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_mkdir(&nofs, "/a"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_rmdir(NULL, "/a"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_listdir(NULL, "/a", &l), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_stat(NULL, "/a", &st), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_symlink(NULL, "a", "/l"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_readlink(NULL, "/l", buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_fsync_dir(NULL, "/d"), CKH_EINVAL);
    ck_assert(!ckh_fs_exists(NULL, "/f"));
    ckh_fs_listing_free(NULL);
    ck_assert_int_eq(ckh_file_digest(NULL, 0, NULL, 0, (uint64_t[1]){0}), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_digest(f, 0, NULL, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_file_digest(f, 0, buf, sizeof buf, (uint64_t[1]){0}), CKH_EINVAL);
}
END_TEST

/* A table without a method: CKH_EUNSUPPORTED; version 1 without seek: the
 * whole file is data; no fdatasync: fsync; no pwrite_gen: materialised. */
START_TEST(test_fs_missing_methods)
{
    struct ckh_fs e = {.ops = &empty_ops};
    struct ckh_file ef = {.fs = &e};
    struct ckh_file *f = NULL;
    char buf[8];
    struct ckh_stat st;
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_open(&e, "/f", 0, &f), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_read(&ef, buf, 1), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_pread(&ef, buf, 1, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_write(&ef, buf, 1), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_pwrite(&ef, buf, 1, 0), CKH_EUNSUPPORTED);
    struct ckh_gen g = {.seed = 4, .stream = 5};
    ck_assert_int_eq(ckh_file_pwrite_gen(&ef, &g, 1, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_fsync(&ef), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_fdatasync(&ef), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_ftruncate(&ef, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_file_close(&ef), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_rename(&e, "/a", "/b"), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_unlink(&e, "/a"), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_mkdir(&e, "/a"), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_rmdir(&e, "/a"), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_listdir(&e, "/a", &l), CKH_EUNSUPPORTED);
    ck_assert_uint_eq(l.count, 0);
    ck_assert_int_eq(ckh_fs_stat(&e, "/a", &st), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_symlink(&e, "a", "/l"), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_readlink(&e, "/l", buf, sizeof buf), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_fs_fsync_dir(&e, "/d"), CKH_EUNSUPPORTED);
    /* version 2 but no seek method: as version 1 */
    ck_assert_int_eq(ckh_file_seek(&ef, 5, CKH_SEEK_DATA), 5);
    ck_assert_int_eq(ckh_file_seek(&ef, 5, CKH_SEEK_HOLE), INT64_MAX);
    f = mem_open(&mem_ops_v1);
    ck_assert_int_eq(ckh_file_seek(f, 9, CKH_SEEK_DATA), 9);
    ck_assert_int_eq(ckh_file_seek(f, 9, CKH_SEEK_HOLE), INT64_MAX);
    ck_assert_int_eq(ckh_file_fdatasync(f), 0);
    ck_assert_int_eq(M.fsyncs, 1);
    ck_assert_int_eq(ckh_file_read(f, buf, 1), CKH_EUNSUPPORTED);
    /* the described write, materialised in chunks of 1 MiB, each written
     * as far as the fs takes it */
    M.chunk = 300000;
    ck_assert_int_eq(ckh_file_pwrite_gen(f, &g, (2u << 20) + 17, 3), (2 << 20) + 17);
    unsigned char *want = malloc((2u << 20) + 17);
    ck_assert_ptr_nonnull(want);
    ckh_gen_fill(&g, 0, want, (2u << 20) + 17);
    ck_assert_uint_eq(M.size, (2u << 20) + 20);
    ck_assert_mem_eq(M.data + 3, want, (2u << 20) + 17);
    free(want);
    ck_assert_int_eq(M.pwrites, 7); /* one pwrite per 300000 bytes taken */
    ck_assert_int_eq(ckh_file_pwrite_gen(f, &g, 0, 0), 0);
    /* a fs that takes nothing: -EIO, not a loop; an error passes through */
    M.zero_progress = true;
    ck_assert_int_eq(ckh_file_pwrite_gen(f, &g, 10, 0), -EIO);
    ck_assert_int_eq(ckh_file_write_all(f, "abc", 3), -EIO);
    ck_assert_int_eq(ckh_file_pread_all(f, buf, 3, 0), CKH_ETRUNCATED);
    M.zero_progress = false;
    M.fail = -ENOSPC;
    ck_assert_int_eq(ckh_file_pwrite_gen(f, &g, 10, 0), -ENOSPC);
    ck_assert_int_eq(ckh_file_write_all(f, "abc", 3), -ENOSPC);
    ck_assert_int_eq(ckh_file_pread_all(f, buf, 3, 0), -ENOSPC);
    /* short writes and reads: write_all and pread_all go on to the end */
    M.fail = 0;
    M.chunk = 2;
    M.size = 0;
    ck_assert_int_eq(ckh_file_write_all(f, "hello", 5), 0);
    ck_assert_uint_eq(M.size, 5);
    ck_assert_int_eq(ckh_file_pread_all(f, buf, 5, 0), 0);
    ck_assert_mem_eq(buf, "hello", 5);
    ck_assert_int_eq(ckh_file_pread_all(f, buf, 5, 3), CKH_ETRUNCATED);
}
END_TEST

/* Digests: equal content, equal digest, whatever the buffer and whether
 * the fs reports holes; all-zero blocks are left out; errors pass. */
START_TEST(test_file_digest)
{
    enum { BLK = 64 * 1024 };
    struct ckh_file *f = mem_open(&mem_ops_v1);
    M.size = 3 * BLK + 100;
    for (uint64_t i = 2 * BLK; i < M.size; i++)
        M.data[i] = (unsigned char)(i * 7);
    uint64_t d1 = 0, d2 = 0, d3 = 0, d4 = 0;
    ck_assert_int_eq(ckh_file_digest(f, M.size, NULL, 0, &d1), 0);
    unsigned char *buf = malloc(BLK);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(ckh_file_digest(f, M.size, buf, BLK, &d2), 0);
    ck_assert_uint_eq(d1, d2);
    /* the same bytes from an fs that says where its data starts */
    uint64_t size = M.size;
    unsigned char *copy = malloc(size);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, M.data, size);
    f = mem_open(&mem_ops_v2);
    memcpy(M.data, copy, size);
    M.size = size;
    M.data_at = 2 * BLK + 10;
    ck_assert_int_eq(ckh_file_digest(f, M.size, buf, BLK, &d3), 0);
    ck_assert_uint_eq(d1, d3);
    /* one byte changed: another digest */
    M.data[2 * BLK + 50] ^= 1;
    ck_assert_int_eq(ckh_file_digest(f, M.size, buf, BLK, &d4), 0);
    ck_assert_uint_ne(d1, d4);
    /* only holes up to the size asked; a size past the data */
    M.data_at = 0;
    uint64_t z1 = 0, z2 = 0;
    ck_assert_int_eq(ckh_file_digest(f, 0, NULL, 0, &z1), 0);
    f = mem_open(&mem_ops_v2); /* empty: SEEK_DATA says ENXIO */
    ck_assert_int_eq(ckh_file_digest(f, 0, NULL, 0, &z2), 0);
    ck_assert_uint_eq(z1, z2);
    /* errors from seek and from reads */
    memcpy(M.data, copy, size);
    M.size = size;
    M.seek_fail = -EIO;
    ck_assert_int_eq(ckh_file_digest(f, M.size, buf, BLK, &d4), -EIO);
    M.seek_fail = 0;
    M.fail = -EBADF;
    ck_assert_int_eq(ckh_file_digest(f, M.size, NULL, 0, &d4), -EBADF);
    free(copy);
    free(buf);
}
END_TEST

START_TEST(test_mkdirs)
{
    (void)mem_open(&mem_ops_v1);
    ck_assert_int_eq(ckh_fs_mkdirs(&mem_fs, "/d/x/y"), 0);
    ck_assert_int_eq(M.mkdirs, 2);
    /* a component that is a file */
    ck_assert_int_eq(ckh_fs_mkdirs(&mem_fs, "/f/x"), -ENOTDIR);
    /* created meanwhile by someone else: fine */
    M.mkdirs = 0;
    M.mkdir_rc = -EEXIST;
    ck_assert_int_eq(ckh_fs_mkdirs(&mem_fs, "/n"), 0);
    ck_assert_int_eq(M.mkdirs, 1);
    /* other errors of mkdir and stat stop it */
    M.mkdir_rc = -ENOSPC;
    ck_assert_int_eq(ckh_fs_mkdirs(&mem_fs, "/n/m"), -ENOSPC);
    M.mkdir_rc = 0;
    M.stat_rc = -EACCES;
    ck_assert_int_eq(ckh_fs_mkdirs(&mem_fs, "/n/m"), -EACCES);
    ck_assert_int_eq(ckh_fs_mkdirs(&mem_fs, "n"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_mkdirs(&mem_fs, "/a/../b"), CKH_EESCAPE);
}
END_TEST

START_TEST(test_path_helpers)
{
    ck_assert_int_eq(ckh_path_check(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check(""), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("a/b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/"), 0);
    ck_assert_int_eq(ckh_path_check("/a/b.c/..d/.e"), 0);
    ck_assert_int_eq(ckh_path_check("//a"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/a/"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/a/./b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/."), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/.."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_path_check("/a/.."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_path_check("/a/.x/b"), 0);
    char longp[CKH_PATH_MAX + 3];
    longp[0] = '/';
    memset(longp + 1, 'a', CKH_PATH_MAX + 1);
    longp[CKH_PATH_MAX + 2] = '\0';
    ck_assert_int_eq(ckh_path_check(longp), -ENAMETOOLONG);
    char buf[16];
    ck_assert_int_eq(ckh_path_dirname("/a/b", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/a");
    ck_assert_int_eq(ckh_path_dirname("/a", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/");
    ck_assert_int_eq(ckh_path_dirname("a", buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_dirname("/abc/d", buf, 4), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_dirname(NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_dirname("/a", NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_dirname("/a", buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_join(buf, sizeof buf, "/", "x"), 0);
    ck_assert_str_eq(buf, "/x");
    ck_assert_int_eq(ckh_path_join(buf, sizeof buf, "/a//", "x"), 0);
    ck_assert_str_eq(buf, "/a/x");
    ck_assert_int_eq(ckh_path_join(buf, sizeof buf, "/a", "/x"), 0);
    ck_assert_str_eq(buf, "/a/x");
    ck_assert_int_eq(ckh_path_join(buf, 5, "/ab", "cd"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_join(NULL, 5, "/a", "b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_join(buf, 5, NULL, "b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_join(buf, 5, "/a", NULL), CKH_EINVAL);
}
END_TEST

/* ------------------------------------------------------------ err, alloc */

START_TEST(test_error_table)
{
    ck_assert_str_eq(ckh_strerror(0), "success");
    ck_assert_str_eq(ckh_err_name(0), "OK");
    /* every code of the table has a name and a description of its own */
#define CHECK_CODE(name, off, desc)                                                                \
    ck_assert_str_eq(ckh_err_name(CKH_E##name), "CKH_E" #name);                                    \
    ck_assert_str_eq(ckh_strerror(CKH_E##name), desc);                                             \
    ck_assert_int_lt(CKH_E##name, -4095);
    CKH_ERR_MAP(CHECK_CODE)
#undef CHECK_CODE
    /* errnos: by name where ckh names them, strerror's text */
    static const struct {
        int e;
        const char *name;
    } errnos[] = {{EPERM, "EPERM"},   {ENOENT, "ENOENT"}, {EIO, "EIO"},         {EBADF, "EBADF"},
                  {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"}, {EEXIST, "EEXIST"},   {EXDEV, "EXDEV"},
                  {ENOTDIR, "ENOTDIR"}, {EISDIR, "EISDIR"}, {EINVAL, "EINVAL"}, {EMFILE, "EMFILE"},
                  {EFBIG, "EFBIG"},   {ENOSPC, "ENOSPC"}, {EROFS, "EROFS"},
                  {ENAMETOOLONG, "ENAMETOOLONG"}, {ENOTEMPTY, "ENOTEMPTY"}, {ELOOP, "ELOOP"},
                  {EDQUOT, "EDQUOT"}, {ETIMEDOUT, "ETIMEDOUT"}, {EAGAIN, "EAGAIN"},
                  {ENOSYS, "ENOSYS"}, {ERANGE, "ERANGE"}, {EINTR, "EINTR"}, {ESPIPE, "ESPIPE"}};
    for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++) {
        ck_assert_str_eq(ckh_err_name(-errnos[i].e), errnos[i].name);
        ck_assert_str_eq(ckh_strerror(-errnos[i].e), strerror(errnos[i].e));
    }
    ck_assert_str_eq(ckh_err_name(-EPIPE), "UNKNOWN");
    ck_assert_str_eq(ckh_err_name(12345), "UNKNOWN");
    ck_assert_str_eq(ckh_strerror(12345), "unknown error");
    ck_assert_str_eq(ckh_strerror(-EPIPE), strerror(EPIPE));
    /* ckh_errf: the code back, the message when there is room */
    char msg[8] = "x";
    ck_assert_int_eq(ckh_errf(NULL, 0, CKH_EINVAL, "no %s", "buffer"), CKH_EINVAL);
    ck_assert_int_eq(ckh_errf(msg, 0, CKH_EINVAL, "none"), CKH_EINVAL);
    ck_assert_str_eq(msg, "x");
    ck_assert_int_eq(ckh_errf(msg, sizeof msg, -ENOENT, "%s", "truncated message"), -ENOENT);
    ck_assert_str_eq(msg, "truncat");
    /* bad input: what a user's file or command line can cause */
    static const int bad[] = {CKH_EINVAL, CKH_EPARSE, -ENOENT, CKH_ENOTFOUND, CKH_EFOREIGN,
                              CKH_EVERSION, CKH_EUNSUPPORTED, CKH_EEXISTS, CKH_ECRASH, CKH_ETIMEOUT};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(ckh_err_is_bad_input(bad[i]), "%s", ckh_err_name(bad[i]));
    ck_assert(!ckh_err_is_bad_input(0));
    ck_assert(!ckh_err_is_bad_input(-EIO));
    ck_assert(!ckh_err_is_bad_input(CKH_ENOMEM));
    ck_assert(!ckh_err_is_bad_input(CKH_ECORRUPT));
}
END_TEST

START_TEST(test_alloc_edges)
{
    struct ckh_alloc *a = ckh_alloc_system();
    void *p = ckh_malloc(a, 0); /* a valid pointer, freed as usual */
    ck_assert_ptr_nonnull(p);
    p = ckh_realloc(a, p, 0);
    ck_assert_ptr_nonnull(p);
    ckh_free(a, p);
    ck_assert_ptr_null(ckh_calloc(a, SIZE_MAX / 2, 4)); /* overflow: refused */
    unsigned char *z = ckh_calloc(a, 3, 5);
    ck_assert_ptr_nonnull(z);
    for (int i = 0; i < 15; i++)
        ck_assert_int_eq(z[i], 0);
    ckh_free(a, z);
    ck_assert_ptr_null(ckh_strdup(a, NULL));
    char *s = ckh_strdup(NULL, "copy");
    ck_assert_str_eq(s, "copy");
    ckh_free(NULL, s);
    ckh_free(a, NULL);
}
END_TEST

/* --------------------------------------------------------- env wrappers */

static uint64_t fixed_now(struct ckh_clock *c)
{
    (void)c;
    return 42;
}

START_TEST(test_env_wrappers)
{
    /* clock */
    static const struct ckh_clock_ops now_only = {.version = 1, .now_ns = fixed_now};
    struct ckh_clock clk = {.ops = &now_only};
    ck_assert_uint_eq(ckh_clock_now_ns(NULL), 0);
    ck_assert_uint_eq(ckh_clock_now_ns(&clk), 42);
    ck_assert_int_eq(ckh_clock_sleep_ns(NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_clock_sleep_ns(&clk, 1), CKH_EUNSUPPORTED);
    /* rand */
    ck_assert_uint_eq(ckh_rand_stream_seed(NULL, "x"), 0);
    /* collectives: no coll is rank 0 of 1; methods missing */
    static const struct ckh_coll_ops no_coll = {.version = 1};
    struct ckh_coll coll = {.ops = &no_coll};
    ck_assert_int_eq(ckh_coll_rank(NULL), 0);
    ck_assert_int_eq(ckh_coll_world_size(NULL), 1);
    int v = 0, w = 7;
    /* without collectives: a job of one process */
    ck_assert_int_eq(ckh_coll_barrier(NULL, 0), 0);
    ck_assert_int_eq(ckh_coll_broadcast(NULL, &v, sizeof v, 0, 0), 0);
    ck_assert_int_eq(ckh_coll_broadcast(NULL, &v, sizeof v, 1, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_broadcast(NULL, NULL, 4, 0, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_allreduce(NULL, &v, 1, CKH_DT_I32, CKH_RED_SUM, 0), 0);
    ck_assert_int_eq(ckh_coll_allreduce(NULL, NULL, 1, CKH_DT_I32, CKH_RED_SUM, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_allreduce(NULL, &v, 1, (enum ckh_dtype)77, CKH_RED_SUM, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_allreduce(NULL, &v, 1, CKH_DT_I32, (enum ckh_redop)9, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_allgather(NULL, &w, &v, sizeof v, 0), 0);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(ckh_coll_allgather(NULL, &v, &v, sizeof v, 0), 0);
    ck_assert_int_eq(ckh_coll_allgather(NULL, NULL, &v, sizeof v, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_send(NULL, &v, sizeof v, 0, 0, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_send(&coll, NULL, 4, 0, 0, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_recv(NULL, &v, sizeof v, 0, 0, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_recv(&coll, NULL, 4, 0, 0, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_rank(&coll), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_coll_world_size(&coll), CKH_EUNSUPPORTED);
    struct ckh_coll no_ops = {.ops = NULL};
    ck_assert_int_eq(ckh_coll_barrier(&no_ops, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_coll_barrier(&coll, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_coll_broadcast(&coll, &v, sizeof v, 0, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_coll_allreduce(&coll, &v, 1, CKH_DT_I32, CKH_RED_SUM, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_coll_allgather(&coll, &v, &v, sizeof v, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_coll_send(&coll, &v, sizeof v, 0, 0, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_coll_recv(&coll, &v, sizeof v, 0, 0, 0), CKH_EUNSUPPORTED);
    /* devices: none, bad arguments */
    void *d = &v;
    ck_assert_int_eq(ckh_gpu_alloc(NULL, 0, 8, &d), CKH_EUNSUPPORTED);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(ckh_gpu_alloc(NULL, -1, 8, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_alloc(NULL, 0, 8, NULL), CKH_EINVAL);
    ckh_gpu_free(NULL, &v);
    ck_assert_int_eq(ckh_gpu_copy(NULL, &v, &v, 4, CKH_GPU_TO_HOST), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_gpu_copy(NULL, NULL, &v, 4, CKH_GPU_TO_HOST), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_copy(NULL, &v, &v, 4, (enum ckh_gpu_copy)9), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_copy(NULL, NULL, NULL, 0, CKH_GPU_ON_DEVICE), 0);
    uint64_t used = 1, cap = 1;
    ckh_gpu_mem(NULL, 0, &used, &cap);
    ck_assert_uint_eq(used, 0);
    ck_assert_uint_eq(cap, 0);
    ckh_gpu_mem(NULL, 0, NULL, NULL);
    ck_assert_int_eq(ckh_gpu_limit(NULL, -1, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_limit(NULL, 0, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_gpu_allreduce(NULL, NULL, 1, CKH_DT_F32, CKH_RED_SUM, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_allreduce(NULL, &v, 1, (enum ckh_dtype)77, CKH_RED_SUM, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_allreduce(NULL, &v, 1, CKH_DT_F32, (enum ckh_redop)9, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_allreduce(NULL, &v, 1, CKH_DT_F32, CKH_RED_MAX, 0), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_gpu_prepare(NULL, 8), CKH_EUNSUPPORTED);
    /* node: none; a version 1 table has no tasks */
    static const struct ckh_node_ops v1 = {.version = 1};
    struct ckh_node node = {.ops = &v1};
    struct ckh_task *t = (struct ckh_task *)&v;
    ck_assert_str_eq(ckh_node_name(NULL), "?");
    ck_assert_str_eq(ckh_node_name(&node), "?");
    ckh_node_exit(NULL, 1);
    ckh_node_exit(&node, 1);
    ckh_node_phase(NULL, "save", 0, 0);
    ckh_node_logf(NULL, "x");
    ckh_node_logf(&node, "x");
    ck_assert_int_eq(ckh_node_spawn(&node, (ckh_bg_fn)NULL, NULL, &t), CKH_EINVAL);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(ckh_node_spawn(NULL, (ckh_bg_fn)NULL, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_node_join(&node, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_node_join(&node, (struct ckh_task *)&v, NULL), CKH_EUNSUPPORTED);
    /* dtypes and reductions */
    ck_assert_uint_eq(ckh_dtype_size((enum ckh_dtype)77), 0);
    ck_assert_str_eq(ckh_dtype_name((enum ckh_dtype)77), "?");
    ck_assert_str_eq(ckh_redop_name((enum ckh_redop)9), "?");
    static const enum ckh_dtype dts[] = {CKH_DT_U8, CKH_DT_I32, CKH_DT_I64, CKH_DT_U64, CKH_DT_F32, CKH_DT_F64};
    static const char *const names[] = {"u8", "i32", "i64", "u64", "f32", "f64"};
    for (size_t i = 0; i < 6; i++) {
        ck_assert_str_eq(ckh_dtype_name(dts[i]), names[i]);
        size_t es = ckh_dtype_size(dts[i]);
        unsigned char acc[16] = {0}, in[16] = {0};
        /* element 0: 3 against 5; element 1: 9 against 2 (as that type) */
        double av[2] = {3, 9}, bv[2] = {5, 2};
        for (int k = 0; k < 2; k++) {
            switch (dts[i]) {
            case CKH_DT_U8: acc[k] = (uint8_t)av[k]; in[k] = (uint8_t)bv[k]; break;
            case CKH_DT_I32: { int32_t x = (int32_t)av[k], y = (int32_t)bv[k]; memcpy(acc + 4 * k, &x, 4); memcpy(in + 4 * k, &y, 4); break; }
            case CKH_DT_F32: { float x = (float)av[k], y = (float)bv[k]; memcpy(acc + 4 * k, &x, 4); memcpy(in + 4 * k, &y, 4); break; }
            case CKH_DT_I64: { int64_t x = (int64_t)av[k], y = (int64_t)bv[k]; memcpy(acc + 8 * k, &x, 8); memcpy(in + 8 * k, &y, 8); break; }
            case CKH_DT_U64: { uint64_t x = (uint64_t)av[k], y = (uint64_t)bv[k]; memcpy(acc + 8 * k, &x, 8); memcpy(in + 8 * k, &y, 8); break; }
            case CKH_DT_F64: memcpy(acc + 8 * k, &av[k], 8); memcpy(in + 8 * k, &bv[k], 8); break;
            }
        }
        static const enum ckh_redop ops[] = {CKH_RED_SUM, CKH_RED_MAX, CKH_RED_MIN};
        static const double want[3][2] = {{8, 11}, {5, 9}, {3, 2}};
        for (int o = 0; o < 3; o++) {
            unsigned char a2[16];
            memcpy(a2, acc, sizeof a2);
            ckh_coll_reduce(a2, in, 2, dts[i], ops[o]);
            for (int k = 0; k < 2; k++) {
                double got = 0;
                switch (dts[i]) {
                case CKH_DT_U8: got = a2[k]; break;
                case CKH_DT_I32: { int32_t x; memcpy(&x, a2 + 4 * k, 4); got = x; break; }
                case CKH_DT_F32: { float x; memcpy(&x, a2 + 4 * k, 4); got = x; break; }
                case CKH_DT_I64: { int64_t x; memcpy(&x, a2 + 8 * k, 8); got = (double)x; break; }
                case CKH_DT_U64: { uint64_t x; memcpy(&x, a2 + 8 * k, 8); got = (double)x; break; }
                case CKH_DT_F64: memcpy(&got, a2 + 8 * k, 8); break;
                }
                ck_assert_msg(got == want[o][k], "%s %s [%d]: %g", names[i], ckh_redop_name(ops[o]), k, got);
            }
        }
        ck_assert_uint_gt(es, 0);
    }
    ck_assert_str_eq(ckh_redop_name(CKH_RED_SUM), "sum");
    ck_assert_str_eq(ckh_redop_name(CKH_RED_MAX), "max");
    ck_assert_str_eq(ckh_redop_name(CKH_RED_MIN), "min");
}
END_TEST

/* ---------------------------------------------------- the POSIX platform */

static char tmpdir[128];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ckh_test_platform_edges_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_posix_fs_edges)
{
    make_tmp();
    struct ckh_fs *fs = NULL;
    char p[256];
    ck_assert_int_eq(ckh_posix_fs_create(NULL, &fs), CKH_EINVAL);
    ck_assert_int_eq(ckh_posix_fs_create(tmpdir, NULL), CKH_EINVAL);
    snprintf(p, sizeof p, "%s/none", tmpdir);
    ck_assert_int_eq(ckh_posix_fs_create(p, &fs), -ENOENT);
    snprintf(p, sizeof p, "%s/file", tmpdir);
    int fd = open(p, O_CREAT | O_WRONLY, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(ckh_posix_fs_create(p, &fs), -ENOTDIR);
    /* a root given with trailing slashes */
    snprintf(p, sizeof p, "%s///", tmpdir);
    ck_assert_int_eq(ckh_posix_fs_create(p, &fs), 0);
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(fs, "/a", CKH_O_RDWR | CKH_O_CREAT | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(ckh_file_write(f, "abc", 3), 3);
    ck_assert_int_eq(ckh_file_fdatasync(f), 0);
    ck_assert_int_eq(ckh_file_ftruncate(f, 2), 0);
    char buf[8] = "";
    ck_assert_int_eq(ckh_file_pread(f, buf, sizeof buf, 0), 2);
    ck_assert_int_eq(ckh_file_read(f, buf, sizeof buf), 0); /* at the end */
    ck_assert_int_eq(ckh_file_seek(f, 0, CKH_SEEK_DATA), 0);
    ck_assert_int_eq(ckh_file_seek(f, 5, CKH_SEEK_DATA), -ENXIO);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/a", CKH_O_WRONLY | CKH_O_APPEND, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "Z", 1, 0), 1); /* O_APPEND: at the end anyway */
    ck_assert_int_eq(ckh_file_read(f, buf, 1), -EBADF); /* opened write-only */
    ck_assert_int_eq(ckh_file_pread(f, buf, 1, 0), -EBADF);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/a", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_write(f, "x", 1), -EBADF);
    ck_assert_int_eq(ckh_file_pwrite(f, "x", 1, 0), -EBADF);
    ck_assert_int_eq(ckh_file_ftruncate(f, 0), -EINVAL);
    ck_assert_int_eq(ckh_file_read(f, buf, sizeof buf), 3);
    ck_assert_mem_eq(buf, "abZ", 3);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* refusals of the real filesystem, as -errno */
    ck_assert_int_eq(ckh_fs_rename(fs, "/none", "/b"), -ENOENT);
    ck_assert_int_eq(ckh_fs_rename(fs, "/a", "/.."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_rename(fs, "a", "/b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/none"), -ENOENT);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/.."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/a"), -EEXIST);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/x/."), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/a"), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "//"), CKH_EINVAL);
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_listdir(fs, "/none", &l), -ENOENT);
    ck_assert_int_eq(ckh_fs_listdir(fs, "/..", &l), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/empty"), 0);
    ck_assert_int_eq(ckh_fs_listdir(fs, "/empty", &l), 0);
    ck_assert_uint_eq(l.count, 0);
    ckh_fs_listing_free(&l);
    struct ckh_stat st;
    ck_assert_int_eq(ckh_fs_stat(fs, "/..", &st), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_symlink(fs, "a", "/.."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_symlink(fs, "/..", "/l"), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_symlink(fs, "a", "/a"), -EEXIST);
    ck_assert_int_eq(ckh_fs_symlink(fs, "/a", "/a"), -EEXIST);
    ck_assert_int_eq(ckh_fs_symlink(fs, "sub/./a", "/rel"), 0); /* "." is no escape */
    ck_assert_int_eq(ckh_fs_readlink(fs, "/rel", buf, 4), 7); /* cut to the buffer, full length back */
    ck_assert_str_eq(buf, "sub");
    ck_assert_int_eq(ckh_fs_readlink(fs, "/..", buf, sizeof buf), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_readlink(fs, "/none", buf, sizeof buf), -ENOENT);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/none"), -ENOENT);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/.."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/a"), -ENOTDIR);
    /* a path that fits CKH_PATH_MAX but not the real one below the root */
    char longp[CKH_PATH_MAX + 1];
    for (size_t i = 0; i < CKH_PATH_MAX; i += 200) {
        size_t n = CKH_PATH_MAX - i < 200 ? CKH_PATH_MAX - i : 200;
        longp[i] = '/';
        memset(longp + i + 1, 'n', n - 1);
    }
    longp[CKH_PATH_MAX] = '\0';
    ck_assert_int_eq(ckh_path_check(longp), 0);
    int rc = ckh_fs_open(fs, longp, CKH_O_RDONLY, &f);
    ck_assert_msg(rc == -ENAMETOOLONG || rc == -ENOENT, "%s", ckh_err_name(rc));
    ckh_posix_fs_destroy(fs);
    ckh_posix_fs_destroy(NULL);
    rm_tmp();
}
END_TEST

START_TEST(test_read_file_edges)
{
    make_tmp();
    char p[256], *buf = (char *)"x";
    size_t len = 9;
    snprintf(p, sizeof p, "%s/none", tmpdir);
    ck_assert_int_eq(ckh_posix_read_file(p, 100, NULL, &buf, &len), -ENOENT);
    ck_assert_ptr_null(buf);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(ckh_posix_read_file(tmpdir, 100, NULL, &buf, &len), -EISDIR);
    snprintf(p, sizeof p, "%s/fifo", tmpdir);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    ck_assert_int_eq(ckh_posix_read_file(p, 100, NULL, &buf, &len), CKH_EUNSUPPORTED); /* no wait */
    snprintf(p, sizeof p, "%s/f", tmpdir);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0123456789", f);
    fclose(f);
    ck_assert_int_eq(ckh_posix_read_file(p, 9, NULL, &buf, &len), CKH_ELIMIT);
    ck_assert_ptr_null(buf);
    ck_assert_int_eq(ckh_posix_read_file(p, 10, ckh_alloc_system(), &buf, &len), 0);
    ck_assert_uint_eq(len, 10);
    ck_assert_str_eq(buf, "0123456789");
    ckh_free(ckh_alloc_system(), buf);
    snprintf(p, sizeof p, "%s/empty", tmpdir);
    f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(ckh_posix_read_file(p, 10, NULL, &buf, &len), 0);
    ck_assert_uint_eq(len, 0);
    ck_assert_str_eq(buf, "");
    free(buf);
    /* env: bad arguments, a root that is not there */
    struct ckh_env *env = NULL;
    ck_assert_int_eq(ckh_posix_env_create(NULL, 1, "n", &env), CKH_EINVAL);
    ck_assert_int_eq(ckh_posix_env_create(tmpdir, 1, NULL, &env), CKH_EINVAL);
    ck_assert_int_eq(ckh_posix_env_create(tmpdir, 1, "n", NULL), CKH_EINVAL);
    snprintf(p, sizeof p, "%s/none", tmpdir);
    ck_assert_int_eq(ckh_posix_env_create(p, 1, "n", &env), -ENOENT);
    ck_assert_int_eq(ckh_posix_env_create(tmpdir, 1, "n", &env), 0);
    ck_assert_int_eq(ckh_clock_sleep_ns(env->clock, 1000), 0);
    ck_assert_uint_gt(ckh_clock_now_ns(env->clock), 0);
    ckh_node_phase(env->node, "save", 1, 2); /* nothing to do, nothing fails */
    ck_assert_int_eq(ckh_node_spawn(env->node, (ckh_bg_fn)NULL, NULL, (struct ckh_task *[1]){NULL}),
                     CKH_EINVAL);
    ckh_posix_env_destroy(env);
    ckh_posix_env_destroy(NULL);
    ck_assert_uint_ge(ckh_posix_now_ms() + 1, ckh_posix_now_ns() / 1000000u);
    rm_tmp();
}
END_TEST


/* ------------------------------------------------------------- records */

static char heard[256];
static int heard_kind;
static int rec_calls;

static int r_step(struct ckh_record *r, const struct ckh_rec_step *st)
{
    (void)r;
    (void)st;
    return ++rec_calls;
}

static void r_refused(struct ckh_record *r, enum ckh_rec_kind kind, const char *why)
{
    (void)r;
    heard_kind = (int)kind;
    snprintf(heard, sizeof heard, "%s", why);
}

/* What the record checks say, record by record; what the wrappers do
 * with a table that lacks a method, and who hears a refusal. */
START_TEST(test_record_checks)
{
    char why[256];
    struct ckh_rec_digest d2[2] = {{"w", 1}, {"w", 2}};
    struct ckh_rec_digest dbad[1] = {{"a b", 1}};
    struct ckh_rec_value v2[2] = {{"w2", 1}, {"w", 2}};
    struct ckh_rec_value vnull[1] = {{NULL, 1}};
    struct ckh_rec_value vempty[1] = {{"", 1}};
    char longname[80];
    memset(longname, 'n', 70);
    longname[70] = '\0';
    struct ckh_rec_value vlong[1] = {{longname, 1}};
    const struct {
        enum ckh_rec_kind kind;
        const void *rec;
        const char *why;
    } cases[] = {
        {CKH_REC_STEP, NULL, "no record (NULL)"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 0}, "step 0, expected 1 or more"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .epoch = -1}, "epoch -1, expected 0 or more"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .nsamples = 3}, "3 samples counted but not given (NULL)"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .ndigests = 33, .digests = d2}, "33 digests, at most 32 in one record"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .nvalues = 40, .values = v2}, "40 values, at most 32 in one record"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .ndigests = 1}, "digests counted but not given (NULL)"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .nvalues = 1}, "values counted but not given (NULL)"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .ndigests = 2, .digests = d2}, "digest 'w' appears twice"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .ndigests = 1, .digests = dbad},
         "digest name 'a b' has a character other than A-Z a-z 0-9 _ . -"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .ndigests = 1, .digests = d2, .nvalues = 2, .values = v2},
         "'w' appears twice among the digests and values"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .nvalues = 1, .values = vnull}, "a value has no name"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .nvalues = 1, .values = vempty}, "a value has an empty name"},
        {CKH_REC_STEP, &(struct ckh_rec_step){.step = 1, .nvalues = 1, .values = vlong},
         "value name 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...' is longer than 63 bytes"},
        {CKH_REC_RESUME, NULL, "no record (NULL)"},
        {CKH_REC_RESUME, &(struct ckh_rec_resume){.step = -1}, "step -1, expected 0 or more"},
        {CKH_REC_RESUME, &(struct ckh_rec_resume){.epoch = -2}, "epoch -2, expected 0 or more"},
        {CKH_REC_SAVE, NULL, "no record (NULL)"},
        {CKH_REC_SAVE, &(struct ckh_rec_save){.step = -3}, "step -3, expected 0 or more"},
        {CKH_REC_SAVE, &(struct ckh_rec_save){.rc = 5}, "rc 5, expected 0 or a negative error code"},
        {CKH_REC_FINAL, NULL, "no record (NULL)"},
        {CKH_REC_FINAL, &(struct ckh_rec_final){.steps = -1}, "steps -1, expected 0 or more"},
        {CKH_REC_FINAL, &(struct ckh_rec_final){.nblobs = 2}, "2 blobs counted but not given (NULL)"},
        {CKH_REC_FINAL, &(struct ckh_rec_final){.nblobs = 1, .blobs = (const char *[]){NULL}}, "blob 1 is NULL"},
        {CKH_REC_FINAL, &(struct ckh_rec_final){.nblobs = 2, .blobs = (const char *[]){"m", ""}}, "blob 2 has an empty name"},
        {CKH_REC_FINAL, &(struct ckh_rec_final){.nblobs = 1, .blobs = (const char *[]){"a,b"}}, "blob 1 has a ',' in its name"},
        {CKH_REC_FINAL, &(struct ckh_rec_final){.nvalues = 1, .values = vnull}, "a value has no name"},
        {(enum ckh_rec_kind)9, &(struct ckh_rec_final){0}, "unknown record kind 9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(ckh_record_why(cases[i].kind, cases[i].rec, why, sizeof why), CKH_EINVAL);
        ck_assert_msg(strcmp(why, cases[i].why) == 0, "case %zu: %s", i, why);
    }
    ck_assert_int_eq(ckh_record_why(CKH_REC_SAVE, &(struct ckh_rec_save){.rc = -5}, why, sizeof why), 0);
    ck_assert_str_eq(why, "");
    ck_assert_int_eq(ckh_record_why(CKH_REC_STEP, NULL, NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check(""), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check("A-z_0.9"), 0);
    /* wrappers: no table, a table without the method: nothing to do */
    struct ckh_rec_step ok = {.step = 1};
    static const struct ckh_record_ops none = {.version = 1};
    struct ckh_record r0 = {.ops = &none};
    ck_assert_int_eq(ckh_record_step(NULL, &ok), 0);
    ck_assert_int_eq(ckh_record_step(&r0, &ok), 0);
    ck_assert_int_eq(ckh_record_resume(&r0, &(struct ckh_rec_resume){0}), 0);
    ck_assert_int_eq(ckh_record_save(&r0, &(struct ckh_rec_save){0}), 0);
    ck_assert_int_eq(ckh_record_final(&r0, &(struct ckh_rec_final){0}), 0);
    ck_assert_int_eq(ckh_record_resume(NULL, NULL), 0);
    ck_assert_int_eq(ckh_record_save(NULL, NULL), 0);
    ck_assert_int_eq(ckh_record_final(NULL, NULL), 0);
    /* version 1: refused silently; version 2: its refused method hears why */
    static const struct ckh_record_ops ops1 = {.version = 1, .step = r_step, .refused = r_refused};
    static const struct ckh_record_ops ops2 = {.version = 2, .step = r_step, .refused = r_refused};
    struct ckh_record r1 = {.ops = &ops1}, rv2 = {.ops = &ops2};
    rec_calls = 0;
    heard[0] = '\0';
    ck_assert_int_eq(ckh_record_step(&r1, &ok), 1);
    ck_assert_int_eq(ckh_record_step(&r1, &(struct ckh_rec_step){.step = 0}), CKH_EINVAL);
    ck_assert_str_eq(heard, "");
    ck_assert_int_eq(ckh_record_step(&rv2, &(struct ckh_rec_step){.step = -4}), CKH_EINVAL);
    ck_assert_str_eq(heard, "step -4, expected 1 or more");
    ck_assert_int_eq(heard_kind, CKH_REC_STEP);
    ck_assert_int_eq(rec_calls, 1);
}
END_TEST

static Suite *platform_edges_suite(void)
{
    Suite *s = suite_create("platform_edges");
    TCase *tc = tcase_create("edges");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fs_wrappers_refuse_bad_arguments);
    tcase_add_test(tc, test_fs_missing_methods);
    tcase_add_test(tc, test_file_digest);
    tcase_add_test(tc, test_mkdirs);
    tcase_add_test(tc, test_path_helpers);
    tcase_add_test(tc, test_error_table);
    tcase_add_test(tc, test_alloc_edges);
    tcase_add_test(tc, test_env_wrappers);
    tcase_add_test(tc, test_posix_fs_edges);
    tcase_add_test(tc, test_read_file_edges);
    tcase_add_test(tc, test_record_checks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(platform_edges_suite());
}
