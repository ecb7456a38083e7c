/* Edge cases of a simulated disk's view (sim/simfs_view.c): what every op
 * answers for a path it must refuse, for symlinks relative, absolute,
 * outside every mount and in a loop, for renames the model forbids, for
 * files opened the wrong way and for offsets past the largest file, and
 * the ops table called directly (struct ckh_fs_ops is public) with what
 * the wrappers of platform/fs.c would have refused.
 *
 * Views have no simulator (sim == NULL), so nothing here depends on time;
 * each case builds its own disks. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/fault_rule.h"
#include "ckh/fs.h"
#include "ckh/op.h"
#include "ckh/simfs.h"

static struct ckh_simfs *mkdisk(const char *name)
{
    struct ckh_simfs_config cfg = {.name = name,
                                   .model = CKH_CRASH_EXT4_ORDERED,
                                   .sector_bytes = 512,
                                   .capacity_bytes = 1 << 20,
                                   .seed = 1};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), 0);
    return d;
}

static void put(struct ckh_fs *fs, const char *path, const char *s)
{
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, s, strlen(s)), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
}

static int64_t size_of(struct ckh_fs *fs, const char *path)
{
    struct ckh_stat st;
    int rc = ckh_fs_stat(fs, path, &st);
    return rc ? rc : (int64_t)st.size_bytes;
}

/* One disk at "/" and another at "/other". */
static struct ckh_simfs *d1, *d2;
static struct ckh_fs *v;

static void setup(void)
{
    d1 = mkdisk("one");
    d2 = mkdisk("two");
    struct ckh_simfs_mount m[2] = {{.prefix = "/", .disk = d1}, {.prefix = "/other", .disk = d2}};
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, m, 2, &v), 0);
}

static void teardown(void)
{
    ckh_simfs_view_destroy(v);
    ckh_simfs_destroy(d1);
    ckh_simfs_destroy(d2);
}

START_TEST(test_every_op_refuses_a_bad_path)
{
    static const char *const bad[] = {"relative", "/a/../b", "/a/./b", "/a//b", ""};
    struct ckh_file *f;
    struct ckh_listing l;
    struct ckh_stat st;
    char buf[16];
    ck_assert_int_eq(ckh_fs_mkdir(v, "/a"), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *p = bad[i];
        int want = ckh_path_check(p);
        ck_assert_msg(want < 0, "'%s' is a bad path", p);
        ck_assert_int_eq(ckh_fs_open(v, p, CKH_O_RDONLY, &f), want);
        ck_assert_int_eq(ckh_fs_unlink(v, p), want);
        ck_assert_int_eq(ckh_fs_rmdir(v, p), want);
        ck_assert_int_eq(ckh_fs_mkdir(v, p), want);
        ck_assert_int_eq(ckh_fs_symlink(v, "/a", p), want);
        ck_assert_int_eq(ckh_fs_listdir(v, p, &l), want);
        ck_assert_int_eq(ckh_fs_stat(v, p, &st), want);
        ck_assert_int_eq(ckh_fs_readlink(v, p, buf, sizeof buf), want);
        ck_assert_int_eq(ckh_fs_fsync_dir(v, p), want);
        ck_assert_int_eq(ckh_fs_rename(v, p, "/b"), want);
        ck_assert_int_eq(ckh_fs_rename(v, "/a", p), want);
    }
    /* nothing was made or moved */
    ck_assert_int_eq(ckh_fs_listdir(v, "/", &l), 0);
    ck_assert_uint_eq(l.count, 1);
    ckh_fs_listing_free(&l);
    ck_assert(ckh_fs_exists(v, "/a"));
}
END_TEST

START_TEST(test_the_ops_table_called_directly)
{
    const struct ckh_fs_ops *ops = v->ops;
    struct ckh_file *f;
    char buf[8];
    put(v, "/f", "abc");
    /* what the wrappers refuse first, the view refuses too */
    ck_assert_int_eq(ops->open(v, "/f", CKH_O_RDONLY, NULL), CKH_EINVAL);
    ck_assert_int_eq(ops->open(v, "/f", CKH_O_ACCMODE, &f), CKH_EINVAL);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(ops->listdir(v, "/", NULL), CKH_EINVAL);
    ck_assert_int_eq(ops->stat(v, "/f", NULL), CKH_EINVAL);
    ck_assert_int_eq(ops->readlink(v, "/f", NULL, 4), CKH_EINVAL);
    ck_assert_int_eq(ops->symlink(v, NULL, "/l"), CKH_EINVAL);
    ck_assert_int_eq(ops->symlink(v, "", "/l"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_open(v, "/f", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ops->read(f, NULL, 2), CKH_EINVAL);
    ck_assert_int_eq(ops->pwrite(f, NULL, 2, 0), CKH_EINVAL);
    /* zero bytes need no buffer, through the wrappers too (a read of 0
     * bytes from a file with data once passed NULL to memset) */
    ck_assert_int_eq(ops->read(f, NULL, 0), 0);
    ck_assert_int_eq(ckh_file_read(f, NULL, 0), 0);
    ck_assert_int_eq(ckh_file_pread(f, NULL, 0, 1), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* readlink with no room answers the length, writing nothing */
    ck_assert_int_eq(ckh_fs_symlink(v, "/f", "/l"), 0);
    ck_assert_int_eq(ops->readlink(v, "/l", NULL, 0), 2);
    ck_assert_int_eq(ops->readlink(v, "/l", buf, sizeof buf), 2);
    ck_assert_str_eq(buf, "/f");
    /* a target longer than a path is refused */
    char *longt = malloc(CKH_PATH_MAX + 2);
    memset(longt, 't', CKH_PATH_MAX + 1);
    longt[CKH_PATH_MAX + 1] = '\0';
    ck_assert_int_eq(ckh_fs_symlink(v, longt, "/long"), CKH_EINVAL);
    free(longt);
    ck_assert(!ckh_fs_exists(v, "/long"));
}
END_TEST

START_TEST(test_symlinks)
{
    char buf[64];
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_mkdirs(v, "/a/b"), 0);
    put(v, "/a/b/data", "hello");
    put(v, "/other/x", "on disk two");
    /* relative targets with "." and ".." walk from the link's folder */
    ck_assert_int_eq(ckh_fs_symlink(v, "./b/../b/./data", "/a/rel"), 0);
    ck_assert_int_eq(size_of(v, "/a/rel"), (int64_t)strlen("./b/../b/./data")); /* stat: the link */
    ck_assert_int_eq(ckh_fs_open(v, "/a/rel", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, buf, sizeof buf, 0), 5);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* ".." above the root stays at the root */
    ck_assert_int_eq(ckh_fs_symlink(v, "../../../../a/b/data", "/a/up"), 0);
    ck_assert_int_eq(ckh_fs_open(v, "/a/up", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* an absolute target on another mount is followed there */
    ck_assert_int_eq(ckh_fs_symlink(v, "/other/x", "/a/abs"), 0);
    ck_assert_int_eq(ckh_fs_open(v, "/a/abs", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, buf, sizeof buf, 0), 11);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* a link in the middle of a path */
    ck_assert_int_eq(ckh_fs_symlink(v, "b", "/a/mid"), 0);
    ck_assert_int_eq(ckh_fs_open(v, "/a/mid/data", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* a path through a file is not a folder */
    ck_assert_int_eq(ckh_fs_open(v, "/a/b/data/x", CKH_O_RDONLY, &f), -ENOTDIR);
    /* a loop */
    ck_assert_int_eq(ckh_fs_symlink(v, "/a/loop2", "/a/loop1"), 0);
    ck_assert_int_eq(ckh_fs_symlink(v, "/a/loop1", "/a/loop2"), 0);
    ck_assert_int_eq(ckh_fs_open(v, "/a/loop1", CKH_O_RDONLY, &f), -ELOOP);
    ck_assert_int_eq(ckh_fs_fsync_dir(v, "/a/loop1"), -ELOOP);
    /* readlink: a file is not a link, a missing one is missing; a small buffer cuts */
    ck_assert_int_eq(ckh_fs_readlink(v, "/a/b/data", buf, sizeof buf), -EINVAL);
    ck_assert_int_eq(ckh_fs_readlink(v, "/a/none", buf, sizeof buf), -ENOENT);
    ck_assert_int_eq(ckh_fs_readlink(v, "/a/abs", buf, 4), 8);
    ck_assert_str_eq(buf, "/ot");
    /* a link that exists is not made again; a dangling one opens as missing */
    ck_assert_int_eq(ckh_fs_symlink(v, "/x", "/a/abs"), -EEXIST);
    ck_assert_int_eq(ckh_fs_symlink(v, "/nothing/here", "/a/dangling"), 0);
    ck_assert_int_eq(ckh_fs_open(v, "/a/dangling", CKH_O_RDONLY, &f), -ENOENT);
    ck_assert_int_eq(ckh_fs_listdir(v, "/a/dangling", &(struct ckh_listing){0}), -ENOENT);
}
END_TEST

START_TEST(test_absolute_link_outside_every_mount)
{
    /* a view with only /data: an absolute target elsewhere has no disk */
    struct ckh_simfs *d = mkdisk("solo");
    struct ckh_simfs_mount m = {.prefix = "/data", .disk = d};
    struct ckh_fs *w;
    struct ckh_file *f;
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, &m, 1, &w), 0);
    ck_assert_int_eq(ckh_fs_symlink(w, "/elsewhere/x", "/data/l"), 0);
    ck_assert_int_eq(ckh_fs_open(w, "/data/l", CKH_O_RDONLY, &f), -ENOENT);
    /* paths outside the mount, and a prefix that is only a name's start */
    ck_assert_int_eq(ckh_fs_mkdir(w, "/elsewhere"), -ENOENT);
    ck_assert_int_eq(ckh_fs_mkdir(w, "/database"), -ENOENT);
    ck_assert_int_eq(ckh_fs_mkdir(w, "/data/sub"), 0);
    ckh_simfs_view_destroy(w);
    ckh_simfs_destroy(d);
}
END_TEST

START_TEST(test_renames_the_model_forbids)
{
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_mkdirs(v, "/d/sub"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(v, "/e"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(v, "/full"), 0);
    put(v, "/full/x", "1");
    put(v, "/f", "file");
    ck_assert_int_eq(ckh_fs_mkdir(v, "/other/d"), 0);
    ck_assert_int_eq(ckh_fs_rename(v, "/f", "/other/f"), -EXDEV);
    ck_assert_int_eq(ckh_fs_rename(v, "/none", "/g"), -ENOENT);
    ck_assert_int_eq(ckh_fs_rename(v, "/f", "/none/g"), -ENOENT);
    ck_assert_int_eq(ckh_fs_rename(v, "/other", "/other/d/x"), -EBUSY); /* a mount's root */
    ck_assert_int_eq(ckh_fs_rename(v, "/d", "/d/sub/d"), -EINVAL);     /* into itself */
    ck_assert_int_eq(ckh_fs_rename(v, "/d", "/d/new"), -EINVAL);
    ck_assert_int_eq(ckh_fs_rename(v, "/d", "/f"), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_rename(v, "/d", "/full"), -ENOTEMPTY);
    ck_assert_int_eq(ckh_fs_rename(v, "/f", "/e"), -EISDIR);
    ck_assert_int_eq(ckh_fs_rename(v, "/f", "/f"), 0);
    /* a folder over an empty one is fine */
    ck_assert_int_eq(ckh_fs_rename(v, "/d", "/e"), 0);
    ck_assert(ckh_fs_exists(v, "/e/sub"));
    ck_assert(!ckh_fs_exists(v, "/d"));
    /* unlink and rmdir of the wrong kind */
    ck_assert_int_eq(ckh_fs_unlink(v, "/e"), -EISDIR);
    ck_assert_int_eq(ckh_fs_rmdir(v, "/f"), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_rmdir(v, "/full"), -ENOTEMPTY);
    ck_assert_int_eq(ckh_fs_fsync_dir(v, "/f"), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_fsync_dir(v, "/none"), -ENOENT);
    ck_assert_int_eq(ckh_fs_listdir(v, "/f", &l), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_mkdir(v, "/f"), -EEXIST);
}
END_TEST

START_TEST(test_files_opened_the_wrong_way)
{
    struct ckh_file *f;
    char buf[16];
    put(v, "/f", "0123456789");
    ck_assert_int_eq(ckh_fs_mkdir(v, "/dir"), 0);
    ck_assert_int_eq(ckh_fs_open(v, "/dir", CKH_O_RDONLY, &f), -EISDIR);
    ck_assert_int_eq(ckh_fs_open(v, "/f", CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &f), -EEXIST);
    ck_assert_int_eq(ckh_fs_open(v, "/nodir/f", CKH_O_WRONLY | CKH_O_CREAT, &f), -ENOENT);
    ck_assert_int_eq(ckh_fs_open(v, "/none", CKH_O_RDONLY, &f), -ENOENT);
    /* O_TRUNC on a read-only open truncates nothing */
    ck_assert_int_eq(ckh_fs_open(v, "/f", CKH_O_RDONLY | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(size_of(v, "/f"), 10);
    ck_assert_int_eq(ckh_file_write(f, "x", 1), -EBADF);
    ck_assert_int_eq(ckh_file_ftruncate(f, 2), -EBADF);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* O_TRUNC of an empty file has nothing to drop */
    put(v, "/empty", "");
    ck_assert_int_eq(ckh_fs_open(v, "/empty", CKH_O_RDWR | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    /* a write-only file cannot be read */
    ck_assert_int_eq(ckh_fs_open(v, "/f", CKH_O_WRONLY, &f), 0);
    ck_assert_int_eq(ckh_file_read(f, buf, sizeof buf), -EBADF);
    ck_assert_int_eq(ckh_file_pread(f, buf, sizeof buf, 0), -EBADF);
    /* offsets past the largest file */
    ck_assert_int_eq(ckh_file_ftruncate(f, UINT64_C(1) << 63), -EFBIG);
    ck_assert_int_eq(ckh_file_pwrite(f, "x", 1, (UINT64_C(1) << 62) - 0), -EFBIG);
    ck_assert_int_eq(ckh_file_pwrite(f, "xy", 2, (UINT64_C(1) << 62) - 1), -EFBIG);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(size_of(v, "/f"), 10);
}
END_TEST

START_TEST(test_seek_data_and_holes)
{
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(v, "/s", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "data", 4, 0), 4);
    ck_assert_int_eq(ckh_file_ftruncate(f, 1 << 16), 0); /* a hole to the end */
    ck_assert_int_eq(ckh_file_seek(f, 0, CKH_SEEK_DATA), 0);
    ck_assert_int_eq(ckh_file_seek(f, 0, CKH_SEEK_HOLE), 4);
    /* no data after the last byte written: ENXIO, as lseek says */
    ck_assert_int_eq(ckh_file_seek(f, 100, CKH_SEEK_DATA), -ENXIO);
    ck_assert_int_eq(ckh_file_seek(f, 100, CKH_SEEK_HOLE), 100);
    ck_assert_int_eq(ckh_file_seek(f, 1 << 16, CKH_SEEK_DATA), -ENXIO);
    ck_assert_int_eq(ckh_file_seek(f, 1 << 16, CKH_SEEK_HOLE), -ENXIO);
    ck_assert_int_eq(ckh_file_close(f), 0);
}
END_TEST

START_TEST(test_view_create_refusals_and_mount_order)
{
    struct ckh_simfs *d = mkdisk("x");
    struct ckh_fs *w = (struct ckh_fs *)1;
    struct ckh_simfs_mount dup[2] = {{.prefix = "/m", .disk = d}, {.prefix = "/m", .disk = d}};
    struct ckh_simfs_mount nodisk = {.prefix = "/m"};
    struct ckh_simfs_mount badp = {.prefix = "m", .disk = d};
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, dup, 2, &w), CKH_EINVAL);
    ck_assert_ptr_null(w);
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, &nodisk, 1, &w), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, &badp, 1, &w), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, NULL, 1, &w), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, dup, 1, NULL), CKH_EINVAL);
    /* the longest prefix wins whatever the order given */
    struct ckh_simfs *e = mkdisk("y"), *g = mkdisk("z");
    struct ckh_simfs_mount m[3] = {{.prefix = "/m", .disk = d}, {.prefix = "/m/n/o", .disk = g},
                                   {.prefix = "/m/n", .disk = e}};
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, m, 3, &w), 0);
    put(w, "/m/n/o/deep", "g");
    put(w, "/m/n/mid", "e");
    put(w, "/m/top", "d");
    struct ckh_simfs_mount only_g = {.prefix = "/", .disk = g}, only_e = {.prefix = "/", .disk = e};
    struct ckh_fs *wg, *we;
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 1, &only_g, 1, &wg), 0);
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 1, &only_e, 1, &we), 0);
    ck_assert(ckh_fs_exists(wg, "/deep"));
    ck_assert(ckh_fs_exists(we, "/mid"));
    ck_assert(!ckh_fs_exists(we, "/top"));
    ckh_simfs_view_destroy(wg);
    ckh_simfs_view_destroy(we);
    ckh_simfs_view_destroy(w);
    ckh_simfs_view_destroy(NULL);
    ckh_simfs_destroy(d);
    ckh_simfs_destroy(e);
    ckh_simfs_destroy(g);
}
END_TEST

/* The disk's own API: configurations refused, calls without a disk, the
 * at-rest damage helpers on what is not a file or past its end, faults
 * queued for the next op that the model cannot express, and the space of
 * a disk with a capacity. */
START_TEST(test_disk_api_refusals)
{
    struct ckh_simfs *d = NULL;
    struct ckh_simfs_config c = {.name = "x", .sector_bytes = 1024};
    ck_assert_int_eq(ckh_simfs_create(&c, &d), CKH_EINVAL);
    ck_assert_ptr_null(d);
    c.sector_bytes = 4096;
    c.model = (enum ckh_crash_model)7;
    ck_assert_int_eq(ckh_simfs_create(&c, &d), CKH_EINVAL);
    c.model = CKH_CRASH_POSIX_WEAK;
    c.sharing = (enum ckh_simfs_sharing)9;
    ck_assert_int_eq(ckh_simfs_create(&c, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_create(NULL, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_create(&c, NULL), CKH_EINVAL);

    /* no disk */
    uint64_t total, avail;
    struct ckh_simfs_pending_info pi;
    struct ckh_fault_action errno_act = {.kind = CKH_FAULT_ERRNO, .err = EIO};
    ck_assert_str_eq(ckh_simfs_errmsg(NULL), "no disk");
    ck_assert_uint_eq(ckh_simfs_pending_count(NULL), 0);
    ck_assert_int_eq(ckh_simfs_pending_get(NULL, 0, &pi), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_sharing(NULL), CKH_SHARING_NETWORK);
    ckh_simfs_sync_all(NULL);
    ck_assert_int_eq(ckh_simfs_set_capacity(NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_flip_bit(NULL, "/f", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_truncate_at_rest(NULL, "/f", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_zero_range(NULL, "/f", 0, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_remove_tree(NULL, "/f"), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_fault_next(NULL, -1, NULL, &errno_act), CKH_EINVAL);
    ck_assert_uint_eq(ckh_simfs_used_bytes(NULL), 0);
    ck_assert_int_eq(ckh_simfs_space(NULL, &total, &avail), CKH_EINVAL);
    ck_assert_uint_eq(ckh_simfs_heap_bytes(NULL), 0);
    ck_assert(!ckh_simfs_host_out_of_memory(NULL));
    ck_assert_uint_eq(ckh_simfs_digest(NULL, true), 0);
    ck_assert_int_eq(ckh_simfs_crash_uniform(NULL, 0, CKH_CRASH_APPLY), CKH_EINVAL);

    /* a disk: the default name, then its damage helpers */
    c = (struct ckh_simfs_config){.sector_bytes = 0, .capacity_bytes = 1 << 20, .seed = 2};
    ck_assert_int_eq(ckh_simfs_create(&c, &d), 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    ck_assert_int_eq(ckh_simfs_crash_uniform(d, 0, CKH_CRASH_TORN_GARBAGE), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/dir"), 0);
    put(fs, "/dir/f", "0123456789");
    ck_assert_int_eq(ckh_fs_symlink(fs, "/dir/f", "/link"), 0);
    ck_assert_int_eq(ckh_simfs_pending_get(d, ckh_simfs_pending_count(d), &pi), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_pending_get(d, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/dir", 0), -EISDIR);
    ck_assert_str_eq(ckh_simfs_errmsg(d), "/dir: not a regular file");
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/none", 0), -ENOENT);
    ck_assert_str_eq(ckh_simfs_errmsg(d), "/none: no such file");
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "rel", 0), ckh_path_check("rel"));
    ck_assert_str_eq(ckh_simfs_errmsg(d), "rel: cannot resolve");
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/dir/f", 80), CKH_EINVAL);
    ck_assert_str_eq(ckh_simfs_errmsg(d), "/dir/f: bit 80 past the end");
    /* through the link, the file's byte 0 changes in the live copy */
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/link", 0), 0);
    char buf[16];
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/dir/f", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, buf, sizeof buf, 0), 10);
    ck_assert_int_eq(buf[0], '0' ^ 1);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_simfs_zero_range(d, "/dir/f", UINT64_MAX, 2), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_zero_range(d, "/dir/f", 100, 5), 0); /* past the end: nothing */
    ck_assert_int_eq(ckh_simfs_truncate_at_rest(d, "/dir/f", 100), 0); /* longer: nothing */
    ck_assert_int_eq(size_of(fs, "/dir/f"), 10);
    ck_assert_int_eq(ckh_simfs_truncate_at_rest(d, "/dir", 1), -EISDIR);

    /* remove_tree: bad path, the root, nothing there, then a folder */
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "dir"), ckh_path_check("dir"));
    ck_assert_str_eq(ckh_simfs_errmsg(d), "remove_tree: bad path");
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "/"), -EBUSY);
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "/none"), -ENOENT);
    ck_assert_str_eq(ckh_simfs_errmsg(d), "remove_tree: /none: no such entry");
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "/dir"), 0);
    ck_assert(!ckh_fs_exists(fs, "/dir"));

    /* faults for the next op: only ERRNO with an errno and FSYNC_LOST */
    ck_assert_int_eq(ckh_simfs_fault_next(d, -2, NULL, &errno_act), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_fault_next(d, CKH_OP__COUNT, NULL, &errno_act), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_fault_next(d, -1, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_fail_next(d, -1, NULL, 0), CKH_EINVAL);
    ck_assert_str_eq(ckh_simfs_errmsg(d), "fault_next: only ERRNO and FSYNC_LOST");
    struct ckh_fault_action kill = {.kind = CKH_FAULT_KILL_BEFORE};
    ck_assert_int_eq(ckh_simfs_fault_next(d, -1, NULL, &kill), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_fail_next(d, -1, "x/y", EIO), CKH_EINVAL);
    ck_assert_str_eq(ckh_simfs_errmsg(d), "fault_next: bad path");
    /* an FSYNC_LOST queued for any op waits for an fsync; an errno for one path waits for it */
    struct ckh_fault_action lost = {.kind = CKH_FAULT_FSYNC_LOST};
    ck_assert_int_eq(ckh_simfs_fault_next(d, -1, NULL, &lost), 0);
    ck_assert_int_eq(ckh_simfs_fail_next(d, CKH_OP_MKDIR, "/only", ENOSPC), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/other"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/only"), -ENOSPC);
    ck_assert_int_eq(ckh_fs_open(fs, "/other/g", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_write(f, "abc", 3), 3);
    ck_assert_int_eq(ckh_file_fsync(f), -EIO);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);

    /* space: the capacity is the total */
    ck_assert_int_eq(ckh_simfs_space(d, NULL, &avail), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_space(d, &total, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_space(d, &total, &avail), 0);
    ck_assert_uint_eq(total, 1 << 20);
    ck_assert_uint_eq(avail, total - ckh_simfs_used_bytes(d));
    ck_assert_int_eq(ckh_simfs_set_capacity(d, 0), 0);
    ck_assert_int_eq(ckh_simfs_space(d, &total, &avail), 0); /* the host's memory */
    ck_assert_uint_gt(total, 0);
    ck_assert_uint_gt(ckh_simfs_heap_bytes(d), 0);
    ck_assert(!ckh_simfs_host_out_of_memory(d));
    ckh_simfs_destroy(d);
    ckh_simfs_destroy(NULL);
}
END_TEST

/* A disk whose bytes live in a store folder: the folder must be one; the
 * space is the store's filesystem's. A clone takes the faults queued for
 * the next ops with it, each disk then firing its own. */
START_TEST(test_store_and_clone_edges)
{
    char dir[] = "/tmp/ckh-test-simfs-edges-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char file[64];
    snprintf(file, sizeof file, "%s/f", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    struct ckh_simfs *d = (struct ckh_simfs *)1;
    struct ckh_simfs_config c = {.name = "s", .sector_bytes = 512, .seed = 4, .store_dir = file};
    ck_assert_int_eq(ckh_simfs_create(&c, &d), -ENOTDIR);
    ck_assert_ptr_null(d);
    c.store_dir = "/nonexistent-ckh-store";
    ck_assert_int_eq(ckh_simfs_create(&c, &d), -ENOENT);
    c.store_dir = dir;
    ck_assert_int_eq(ckh_simfs_create(&c, &d), 0);
    uint64_t total = 0, avail = 0;
    ck_assert_int_eq(ckh_simfs_space(d, &total, &avail), 0);
    ck_assert_uint_gt(total, 0);
    ck_assert_uint_le(avail, total);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    put(fs, "/a", "stored bytes");
    ck_assert_int_eq(size_of(fs, "/a"), 12);

    /* two queued faults, then a clone */
    ck_assert_int_eq(ckh_simfs_fail_next(d, CKH_OP_MKDIR, "/x", ENOSPC), 0);
    ck_assert_int_eq(ckh_simfs_fail_next(d, CKH_OP_UNLINK, NULL, EROFS), 0);
    struct ckh_simfs *e = NULL;
    ck_assert_int_eq(ckh_simfs_clone(NULL, &e), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_clone(d, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_clone(d, &e), 0);
    struct ckh_fs *efs = ckh_simfs_fs(e);
    ck_assert_int_eq(ckh_fs_mkdir(efs, "/x"), -ENOSPC);
    ck_assert_int_eq(ckh_fs_unlink(efs, "/a"), -EROFS);
    ck_assert_int_eq(ckh_fs_unlink(efs, "/a"), 0); /* each fault fires once */
    ck_assert_int_eq(size_of(fs, "/a"), 12);       /* the original keeps its file ... */
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/x"), -ENOSPC); /* ... and its own faults */
    ck_assert_int_eq(ckh_fs_unlink(fs, "/a"), -EROFS);
    ckh_simfs_destroy(d);
    ck_assert_int_eq(ckh_fs_mkdir(efs, "/x"), 0); /* the clone outlives its source */
    ckh_simfs_destroy(e);
    ck_assert_int_eq(unlink(file), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("simfs_edges");
    TCase *tc = tcase_create("view");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_every_op_refuses_a_bad_path);
    tcase_add_test(tc, test_the_ops_table_called_directly);
    tcase_add_test(tc, test_symlinks);
    tcase_add_test(tc, test_absolute_link_outside_every_mount);
    tcase_add_test(tc, test_renames_the_model_forbids);
    tcase_add_test(tc, test_files_opened_the_wrong_way);
    tcase_add_test(tc, test_seek_data_and_holes);
    tcase_add_test(tc, test_view_create_refusals_and_mount_order);
    suite_add_tcase(s, tc);
    TCase *disk = tcase_create("disk");
    tcase_add_test(disk, test_disk_api_refusals);
    tcase_add_test(disk, test_store_and_clone_edges);
    suite_add_tcase(s, disk);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
