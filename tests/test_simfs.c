/* Tests for the simulated filesystem (sim/simfs.c, sim/simfs_view.c).
 * Rule numbers (S1..S9) refer to the specification at the top of
 * sim/simfs.c. Views here have no simulator (sim == NULL).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/op.h"
#include "ckh/rng.h"
#include "ckh/sim.h"
#include "ckh/sim_testing.h"
#include "ckh/simfs.h"

static int seeds(int full)
{
    return getenv("CKH_VALGRIND") ? full / 8 + 1 : full;
}

/* CKH_TEST_SIMFS_STORE=<folder> runs every case with the disks' bytes in
 * a store there (CTest entry test_simfs_store): the crash model must not
 * tell the two homes apart (sim/simfs_store.c B1). */
static struct ckh_simfs *mkdisk(enum ckh_crash_model model, uint64_t seed, uint64_t cap)
{
    struct ckh_simfs_config cfg = {.name = "t",
                                   .model = model,
                                   .sector_bytes = 512,
                                   .capacity_bytes = cap,
                                   .seed = seed,
                                   .store_dir = getenv("CKH_TEST_SIMFS_STORE")};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), 0);
    return d;
}

/* Creates (or truncates) path with content s; no sync. */
static void put(struct ckh_fs *fs, const char *path, const char *s)
{
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, s, strlen(s)), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
}

static void put_sync(struct ckh_fs *fs, const char *path, const char *s)
{
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, s, strlen(s)), 0);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
}

/* Reads a whole file into buf (NUL-terminated); returns length or error. */
static int64_t get(struct ckh_fs *fs, const char *path, char *buf, size_t cap)
{
    struct ckh_file *f;
    int rc = ckh_fs_open(fs, path, CKH_O_RDONLY, &f);
    if (rc)
        return rc;
    int64_t n = ckh_file_pread(f, buf, cap - 1, 0);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    ckh_file_close(f);
    return n;
}

static bool exists(struct ckh_fs *fs, const char *path)
{
    struct ckh_stat st;
    return ckh_fs_stat(fs, path, &st) == 0;
}

/* ---------------------------------------------------------------- basics */

START_TEST(test_basic_posix)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    char buf[256];
    struct ckh_file *f;
    struct ckh_stat st;

    ck_assert_int_eq(ckh_fs_open(fs, "/a", CKH_O_RDONLY, &f), -ENOENT);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/a", CKH_O_RDWR | CKH_O_CREAT, &f), -ENOENT);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/x"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/x"), -EEXIST);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/a", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_write(f, "hello", 5), 5);
    ck_assert_int_eq(ckh_file_pwrite(f, "J", 1, 0), 1);
    ck_assert_int_eq(ckh_file_pwrite(f, "!", 1, 9), 1); /* hole reads zeros */
    ck_assert_int_eq(ckh_file_pread(f, buf, sizeof(buf), 0), 10);
    ck_assert_int_eq(memcmp(buf, "Jello\0\0\0\0!", 10), 0);
    ck_assert_int_eq(ckh_file_pread(f, buf, 4, 8), 2);
    ck_assert_int_eq(ckh_file_pread(f, buf, 4, 100), 0);
    ck_assert_int_eq(ckh_file_ftruncate(f, 3), 0);
    ck_assert_int_eq(ckh_fs_stat(fs, "/x/a", &st), 0);
    ck_assert_int_eq(st.type, CKH_FT_FILE);
    ck_assert_uint_eq(st.size_bytes, 3);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/a", CKH_O_RDWR | CKH_O_CREAT | CKH_O_EXCL, &f), -EEXIST);
    ck_assert_int_eq(ckh_fs_open(fs, "/x", CKH_O_RDONLY, &f), -EISDIR);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/a/b", CKH_O_RDONLY, &f), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/../a", CKH_O_RDONLY, &f), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_open(fs, "x", CKH_O_RDONLY, &f), CKH_EINVAL);

    /* read/write access modes */
    ck_assert_int_eq(ckh_fs_open(fs, "/x/a", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_write(f, "z", 1), -EBADF);
    ck_assert_int_eq(ckh_file_read(f, buf, 2), 2);
    ck_assert_int_eq(ckh_file_read(f, buf + 2, 10), 1);
    ck_assert_int_eq(memcmp(buf, "Jel", 3), 0);
    ckh_file_close(f);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/a", CKH_O_WRONLY | CKH_O_APPEND, &f), 0);
    ck_assert_int_eq(ckh_file_read(f, buf, 2), -EBADF);
    ck_assert_int_eq(ckh_file_write(f, "ly", 2), 2);
    ckh_file_close(f);
    ck_assert_int_eq(get(fs, "/x/a", buf, sizeof(buf)), 5);
    ck_assert_str_eq(buf, "Jelly");

    /* listdir sorted bytewise, types */
    put(fs, "/x/b", "b");
    put(fs, "/x/B", "B");
    put(fs, "/x/aa", "aa");
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/x/d"), 0);
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_listdir(fs, "/x", &l), 0);
    ck_assert_uint_eq(l.count, 5);
    ck_assert_str_eq(l.entries[0].name, "B");
    ck_assert_str_eq(l.entries[1].name, "a");
    ck_assert_str_eq(l.entries[2].name, "aa");
    ck_assert_str_eq(l.entries[3].name, "b");
    ck_assert_str_eq(l.entries[4].name, "d");
    ck_assert_int_eq(l.entries[4].type, CKH_FT_DIR);
    ckh_fs_listing_free(&l);
    ck_assert_int_eq(ckh_fs_listdir(fs, "/x/a", &l), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_listdir(fs, "/nope", &l), -ENOENT);

    /* unlink / rmdir */
    ck_assert_int_eq(ckh_fs_unlink(fs, "/x/d"), -EISDIR);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/x/b"), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/x"), -ENOTEMPTY);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/x/b"), 0);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/x/b"), -ENOENT);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/x/d"), 0);
    ck_assert(!exists(fs, "/x/d"));
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/"), -EBUSY);

    /* rename */
    ck_assert_int_eq(ckh_fs_rename(fs, "/x/B", "/x/a"), 0); /* replaces */
    ck_assert_int_eq(get(fs, "/x/a", buf, sizeof(buf)), 1);
    ck_assert_str_eq(buf, "B");
    ck_assert(!exists(fs, "/x/B"));
    ck_assert_int_eq(ckh_fs_rename(fs, "/x/B", "/x/c"), -ENOENT);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/y"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/y/e"), 0);
    ck_assert_int_eq(ckh_fs_rename(fs, "/x/a", "/y"), -EISDIR);
    ck_assert_int_eq(ckh_fs_rename(fs, "/y", "/x/a"), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_rename(fs, "/y", "/y/e/z"), -EINVAL);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/z"), 0);
    ck_assert_int_eq(ckh_fs_rename(fs, "/z", "/y"), -ENOTEMPTY);
    ck_assert_int_eq(ckh_fs_rename(fs, "/y", "/z"), 0); /* dir over empty dir */
    ck_assert(exists(fs, "/z/e"));
    ck_assert(!exists(fs, "/y"));
    ck_assert_int_eq(ckh_fs_rename(fs, "/x/a", "/x/a"), 0);

    /* symlinks */
    ck_assert_int_eq(ckh_fs_symlink(fs, "a", "/x/l"), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "a", "/x/l"), -EEXIST);
    ck_assert_int_eq(ckh_fs_stat(fs, "/x/l", &st), 0);
    ck_assert_int_eq(st.type, CKH_FT_SYMLINK);
    ck_assert_uint_eq(st.size_bytes, 1);
    ck_assert_int_eq(ckh_fs_readlink(fs, "/x/l", buf, sizeof(buf)), 1);
    ck_assert_str_eq(buf, "a");
    ck_assert_int_eq(ckh_fs_readlink(fs, "/x/a", buf, sizeof(buf)), -EINVAL);
    ck_assert_int_eq(get(fs, "/x/l", buf, sizeof(buf)), 1); /* open follows */
    ck_assert_str_eq(buf, "B");
    ck_assert_int_eq(ckh_fs_symlink(fs, "../z", "/x/up"), 0);
    ck_assert_int_eq(ckh_fs_listdir(fs, "/x/up", &l), 0); /* relative, ".." */
    ck_assert_uint_eq(l.count, 1);
    ckh_fs_listing_free(&l);
    ck_assert_int_eq(ckh_fs_symlink(fs, "/x/aa", "/abs"), 0);
    ck_assert_int_eq(get(fs, "/abs", buf, sizeof(buf)), 2);
    ck_assert_int_eq(ckh_fs_symlink(fs, "loop2", "/x/loop1"), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "loop1", "/x/loop2"), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/loop1", CKH_O_RDONLY, &f), -ELOOP);
    ck_assert_int_eq(ckh_fs_symlink(fs, "nothere", "/x/dangling"), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/dangling", CKH_O_RDONLY, &f), -ENOENT);
    ck_assert_int_eq(ckh_fs_open(fs, "/x/dangling", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ckh_file_close(f);
    ck_assert(exists(fs, "/x/nothere"));
    ck_assert_int_eq(ckh_fs_unlink(fs, "/x/l"), 0); /* removes the link only */
    ck_assert(exists(fs, "/x/a"));
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/x/a"), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/x"), 0);
    ckh_simfs_destroy(d);
}
END_TEST

START_TEST(test_open_file_is_inode)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 2, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    char buf[64];
    struct ckh_file *f, *g;
    put(fs, "/a", "one");
    ck_assert_int_eq(ckh_fs_open(fs, "/a", CKH_O_RDWR, &f), 0);
    ck_assert_int_eq(ckh_fs_rename(fs, "/a", "/b"), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "ONE", 3, 0), 3);
    ck_assert_int_eq(get(fs, "/b", buf, sizeof(buf)), 3);
    ck_assert_str_eq(buf, "ONE");
    ck_assert_int_eq(ckh_fs_open(fs, "/b", CKH_O_RDONLY, &g), 0);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/b"), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "two", 3, 3), 3);
    ck_assert_int_eq(ckh_file_pread(g, buf, sizeof(buf), 0), 6);
    ck_assert_int_eq(memcmp(buf, "ONEtwo", 6), 0);
    ck_assert(!exists(fs, "/b"));
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 6);
    ckh_file_close(f);
    ckh_file_close(g);
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 0); /* inode freed */
    ckh_simfs_sync_all(d);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 0);
    ckh_simfs_destroy(d);
}
END_TEST

START_TEST(test_views_and_mounts)
{
    struct ckh_simfs *loc = mkdisk(CKH_CRASH_POSIX_WEAK, 3, 0);
    struct ckh_simfs *sh = mkdisk(CKH_CRASH_POSIX_WEAK, 4, 0);
    struct ckh_simfs_mount m[] = {{"/", loc}, {"/shared", sh}};
    struct ckh_fs *v;
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 7, m, 2, &v), 0);
    char buf[64];
    put(v, "/x", "local");
    put(v, "/shared/y", "shared");
    ck_assert(exists(ckh_simfs_fs(loc), "/x"));
    ck_assert(exists(ckh_simfs_fs(sh), "/y"));
    ck_assert_int_eq(ckh_fs_rename(v, "/x", "/shared/x"), -EXDEV);
    ck_assert_int_eq(ckh_fs_symlink(v, "/shared/y", "/ly"), 0); /* resolved in the view */
    ck_assert_int_eq(get(v, "/ly", buf, sizeof(buf)), 6);
    ck_assert_int_eq(ckh_fs_rename(v, "/ly", "/shared/z"), -EXDEV);
    struct ckh_simfs_pending_info pi;
    ck_assert_uint_eq(ckh_simfs_pending_count(sh), 2);
    ck_assert_int_eq(ckh_simfs_pending_get(sh, 0, &pi), 0);
    ck_assert_int_eq(pi.node, 7);
    ck_assert_int_eq(pi.kind, CKH_OP_OPEN);
    ck_assert_str_eq(pi.path, "/y");
    ck_assert_int_eq(ckh_simfs_pending_get(sh, 1, &pi), 0);
    ck_assert_int_eq(pi.kind, CKH_OP_PWRITE);
    ck_assert_uint_eq(pi.len, 6);
    ck_assert_uint_eq(pi.sectors, 1);
    ck_assert_int_eq(ckh_simfs_pending_get(sh, 2, &pi), CKH_EINVAL);
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(v, "/shared/y", CKH_O_RDWR, &f), 0);
    ckh_simfs_view_destroy(v); /* closes f without flushing */
    ck_assert_uint_eq(ckh_simfs_pending_count(sh), 2);
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, m, 0, &v), CKH_EINVAL);
    struct ckh_simfs_mount bad[] = {{"/a", loc}, {"/a", sh}};
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, bad, 2, &v), CKH_EINVAL);
    ckh_simfs_destroy(loc);
    ckh_simfs_destroy(sh);
}
END_TEST

START_TEST(test_bad_input)
{
    struct ckh_simfs_config cfg = {.sector_bytes = 1000};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_create(NULL, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_crash(NULL, -1, NULL, 0), CKH_EINVAL);
    d = mkdisk(CKH_CRASH_POSIX_WEAK, 5, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    put(fs, "/a", "x");
    enum ckh_crash_choice ch[2] = {CKH_CRASH_TORN_ZERO, CKH_CRASH_APPLY};
    ck_assert_int_eq(ckh_simfs_crash(d, -1, ch, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, ch, 2), CKH_EINVAL); /* torn link */
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 2);            /* unchanged */
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/a", 8), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/nope", 0), -ENOENT);
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/", 0), -EISDIR);
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "/"), -EBUSY);
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "bad"), CKH_EINVAL);
    ck_assert_int_eq(ckh_simfs_fail_next(d, CKH_OP_OPEN, NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_symlink(fs, "", "/l"), CKH_EINVAL);
    ck_assert_ptr_null(ckh_simfs_fs(NULL));
    ckh_simfs_destroy(d);
}
END_TEST

/* ------------------------------------------------------------- durability */

/* S4: data synced before a crash survives; files whose last op was a sync
 * read back exactly; reads always match a shadow model of the live copy. */
START_TEST(test_synced_survives)
{
    uint64_t seed = (uint64_t)_i;
    struct ckh_rng rng;
    ckh_rng_seed(&rng, seed * 7919);
    struct ckh_simfs *d = mkdisk(_i % 2 ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK, seed, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    enum { NF = 4, MAXSZ = 4096 };
    static unsigned char live[NF][MAXSZ], dur[NF][MAXSZ];
    uint64_t lsz[NF] = {0}, dsz[NF] = {0};
    bool clean[NF];
    struct ckh_file *f[NF];
    char path[32];
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/d"), 0);
    for (int i = 0; i < NF; i++) {
        snprintf(path, sizeof(path), "/d/f%d", i);
        ck_assert_int_eq(ckh_fs_open(fs, path, CKH_O_RDWR | CKH_O_CREAT, &f[i]), 0);
        clean[i] = true;
    }
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/d"), 0);
    for (int step = 0; step < 60; step++) {
        int i = (int)ckh_rng_below(&rng, NF);
        uint64_t r = ckh_rng_below(&rng, 10);
        if (r < 6) {
            uint64_t off = ckh_rng_below(&rng, MAXSZ - 600);
            uint64_t n = 1 + ckh_rng_below(&rng, 600);
            unsigned char b[600];
            for (uint64_t k = 0; k < n; k++)
                b[k] = (unsigned char)ckh_rng_next(&rng);
            ck_assert_int_eq(ckh_file_pwrite(f[i], b, n, off), (int64_t)n);
            if (off > lsz[i])
                memset(live[i] + lsz[i], 0, off - lsz[i]);
            memcpy(live[i] + off, b, n);
            if (off + n > lsz[i])
                lsz[i] = off + n;
            clean[i] = false;
        } else if (r < 7) {
            uint64_t n = ckh_rng_below(&rng, MAXSZ);
            ck_assert_int_eq(ckh_file_ftruncate(f[i], n), 0);
            if (n > lsz[i])
                memset(live[i] + lsz[i], 0, n - lsz[i]);
            lsz[i] = n;
            clean[i] = false;
        } else {
            ck_assert_int_eq(ckh_file_fsync(f[i]), 0);
            memcpy(dur[i], live[i], lsz[i]);
            dsz[i] = lsz[i];
            clean[i] = true;
        }
        unsigned char rb[MAXSZ];
        ck_assert_int_eq(ckh_file_pread(f[i], rb, MAXSZ, 0), (int64_t)lsz[i]);
        ck_assert_int_eq(memcmp(rb, live[i], lsz[i]), 0);
    }
    for (int i = 0; i < NF; i++)
        ckh_file_close(f[i]);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 0);
    for (int i = 0; i < NF; i++) {
        snprintf(path, sizeof(path), "/d/f%d", i);
        static char rb[MAXSZ + 1];
        int64_t n = get(fs, path, rb, sizeof(rb));
        ck_assert_int_ge(n, 0); /* entries were fsynced: never vanish */
        if (clean[i]) {
            ck_assert_int_eq(n, (int64_t)dsz[i]);
            ck_assert_int_eq(memcmp(rb, dur[i], dsz[i]), 0);
        }
    }
    ck_assert_uint_eq(ckh_simfs_digest(d, false), ckh_simfs_digest(d, true));
    ckh_simfs_destroy(d);
}
END_TEST

/* S5: one unsynced write over durable content A reads back as A, as the new
 * content B, or as B up to a sector boundary then zeros or garbage. */
START_TEST(test_unsynced_write_outcomes)
{
    uint64_t seed = (uint64_t)_i + 100;
    struct ckh_rng rng;
    ckh_rng_seed(&rng, seed);
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, seed, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    enum { SZ = 8 * 512 };
    static unsigned char a[SZ], b[SZ], got[SZ + 1];
    for (int k = 0; k < SZ; k++) {
        a[k] = (unsigned char)(1 + ckh_rng_below(&rng, 100));
        b[k] = (unsigned char)(a[k] + 100);
    }
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/f", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, a, SZ, 0), SZ);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    uint64_t off = ckh_rng_below(&rng, SZ - 1);
    uint64_t n = 1 + ckh_rng_below(&rng, SZ - off);
    ck_assert_int_eq(ckh_file_pwrite(f, b + off, n, off), (int64_t)n);
    ckh_file_close(f);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 1);
    bool explicit_zero = _i % 3 == 0;
    enum ckh_crash_choice ch = CKH_CRASH_TORN_ZERO;
    ck_assert_int_eq(ckh_simfs_crash(d, -1, explicit_zero ? &ch : NULL, explicit_zero), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/f", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, got, SZ, 0), SZ);
    ckh_file_close(f);
    ck_assert_int_eq(memcmp(got, a, off), 0);
    ck_assert_int_eq(memcmp(got + off + n, a + off + n, SZ - off - n), 0);
    if (!explicit_zero && memcmp(got + off, a + off, n) == 0)
        goto out; /* dropped */
    if (memcmp(got + off, b + off, n) == 0)
        goto out; /* applied (or torn past the end) */
    /* Torn: some cut (the write's start or a sector boundary inside it)
     * with the new bytes before it and zeros or garbage after it. */
    bool found = false;
    for (uint64_t c = off; c < off + n && !found; c = (c / 512 + 1) * 512) {
        if (memcmp(got + off, b + off, c - off) != 0)
            break;
        bool zeros = true;
        for (uint64_t k = c; k < off + n; k++)
            zeros = zeros && got[k] == 0;
        found = zeros || (!explicit_zero && memcmp(got + c, b + c, off + n - c) != 0);
    }
    ck_assert_msg(found, "write [%llu, +%llu) read back in a state the model forbids",
                  (unsigned long long)off, (unsigned long long)n);
out:
    ckh_simfs_destroy(d);
}
END_TEST

/* S4: a created and fsynced file whose directory was never fsynced may
 * vanish (POSIX_WEAK); after fsync_dir it never does. */
START_TEST(test_dir_fsync_needed)
{
    int vanished = 0;
    for (int s = 0; s < seeds(40); s++) {
        for (int dirsync = 0; dirsync < 2; dirsync++) {
            struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, (uint64_t)s, 0);
            struct ckh_fs *fs = ckh_simfs_fs(d);
            put_sync(fs, "/f", "data");
            if (dirsync)
                ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
            ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
            char buf[16];
            int64_t n = get(fs, "/f", buf, sizeof(buf));
            if (dirsync || n >= 0) {
                ck_assert_int_eq(n, 4);
                ck_assert_str_eq(buf, "data");
            } else {
                ck_assert_int_eq(n, -ENOENT);
                vanished++;
            }
            ckh_simfs_destroy(d);
        }
    }
    ck_assert_int_gt(vanished, 0);
    /* Explicit: dropping the creation drops the file whatever else. */
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    put(fs, "/g", "xyz");
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 2);
    enum ckh_crash_choice ch[2] = {CKH_CRASH_DROP, CKH_CRASH_APPLY};
    ck_assert_int_eq(ckh_simfs_crash(d, -1, ch, 2), 0);
    ck_assert(!exists(fs, "/g"));
    /* A file in a directory whose creation was dropped is unreachable. */
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/dd"), 0);
    put_sync(fs, "/dd/h", "h");
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/dd"), 0);
    enum ckh_crash_choice drop = CKH_CRASH_DROP;
    ck_assert_int_eq(ckh_simfs_crash(d, -1, &drop, 1), 0);
    ck_assert(!exists(fs, "/dd"));
    ckh_simfs_destroy(d);
}
END_TEST

/* S3/S4: rename over a durable target is atomic at a crash. */
START_TEST(test_rename_atomic)
{
    uint64_t seed = (uint64_t)_i;
    struct ckh_simfs *d = mkdisk(_i % 2 ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK, seed, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    put_sync(fs, "/ckpt", "old-content");
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    put(fs, "/ckpt.tmp", "new-content!");
    if (_i % 4 < 2) {
        struct ckh_file *f;
        ck_assert_int_eq(ckh_fs_open(fs, "/ckpt.tmp", CKH_O_RDWR, &f), 0);
        ck_assert_int_eq(ckh_file_fsync(f), 0);
        ckh_file_close(f);
    }
    ck_assert_int_eq(ckh_fs_rename(fs, "/ckpt.tmp", "/ckpt"), 0);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
    char buf[64];
    int64_t n = get(fs, "/ckpt", buf, sizeof(buf));
    ck_assert_int_ge(n, 0); /* never missing */
    if (strcmp(buf, "old-content") != 0) {
        /* the new file: complete when its data was fsynced, or under
         * EXT4_ORDERED (data=ordered before the rename) */
        if (_i % 4 < 2 || _i % 2)
            ck_assert_str_eq(buf, "new-content!");
        else
            ck_assert_int_eq(n, 12);
    }
    ckh_simfs_destroy(d);
}
END_TEST

START_TEST(test_ext4_ordered)
{
    /* An fsynced new file keeps its entry: fsync commits the journal. */
    for (int s = 0; s < seeds(20); s++) {
        struct ckh_simfs *d = mkdisk(CKH_CRASH_EXT4_ORDERED, (uint64_t)s, 0);
        struct ckh_fs *fs = ckh_simfs_fs(d);
        put_sync(fs, "/f", "data");
        ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
        char buf[16];
        ck_assert_int_eq(get(fs, "/f", buf, sizeof(buf)), 4);
        ckh_simfs_destroy(d);
    }
    /* Journal prefix: dropping one entry op drops all later ones. */
    struct ckh_simfs *d = mkdisk(CKH_CRASH_EXT4_ORDERED, 9, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/a"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/b"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/c"), 0);
    enum ckh_crash_choice ch[3] = {CKH_CRASH_APPLY, CKH_CRASH_DROP, CKH_CRASH_APPLY};
    ck_assert_int_eq(ckh_simfs_crash(d, -1, ch, 3), 0);
    ck_assert(exists(fs, "/a"));
    ck_assert(!exists(fs, "/b"));
    ck_assert(!exists(fs, "/c"));
    /* POSIX_WEAK keeps the same choices independent. */
    struct ckh_simfs *p = mkdisk(CKH_CRASH_POSIX_WEAK, 9, 0);
    struct ckh_fs *pfs = ckh_simfs_fs(p);
    ck_assert_int_eq(ckh_fs_mkdir(pfs, "/a"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(pfs, "/b"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(pfs, "/c"), 0);
    ck_assert_int_eq(ckh_simfs_crash(p, -1, ch, 3), 0);
    ck_assert(exists(pfs, "/a") && !exists(pfs, "/b") && exists(pfs, "/c"));
    /* data=ordered: the rename persists, so the data written before it does,
     * even when its choice said drop. */
    put_sync(fs, "/t", "");
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    put(fs, "/t", "fresh");         /* trunc (none: empty) + write */
    ck_assert_int_eq(ckh_fs_rename(fs, "/t", "/final"), 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 2);
    enum ckh_crash_choice ch2[2] = {CKH_CRASH_DROP, CKH_CRASH_APPLY};
    ck_assert_int_eq(ckh_simfs_crash(d, -1, ch2, 2), 0);
    char buf[16];
    ck_assert_int_eq(get(fs, "/final", buf, sizeof(buf)), 5);
    ck_assert_str_eq(buf, "fresh");
    /* POSIX_WEAK: the same choices lose the data. */
    put_sync(pfs, "/t", "");
    ck_assert_int_eq(ckh_fs_fsync_dir(pfs, "/"), 0);
    put(pfs, "/t", "fresh");
    ck_assert_int_eq(ckh_fs_rename(pfs, "/t", "/final"), 0);
    ck_assert_int_eq(ckh_simfs_crash(p, -1, ch2, 2), 0);
    ck_assert_int_eq(get(pfs, "/final", buf, sizeof(buf)), 0);
    ckh_simfs_destroy(d);
    ckh_simfs_destroy(p);
}
END_TEST

/* Builds the same history on a disk; used for determinism checks. */
static void history(struct ckh_fs *fs)
{
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/ck"), 0);
    put_sync(fs, "/ck/a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/ck"), 0);
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/ck/b", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    struct ckh_gen g = {.seed = 5, .stream = 1, .offset = 0};
    ck_assert_int_eq(ckh_file_pwrite_gen(f, &g, 5000, 0), 5000);
    ck_assert_int_eq(ckh_file_pwrite(f, "zz", 2, 700), 2);
    ckh_file_close(f);
    ck_assert_int_eq(ckh_fs_rename(fs, "/ck/b", "/ck/a"), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "a", "/ck/latest"), 0);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/ck/latest"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/ck/sub"), 0);
    put(fs, "/ck/sub/c", "c");
}

START_TEST(test_determinism)
{
    uint64_t seed = (uint64_t)_i;
    struct ckh_simfs *d1 = mkdisk(CKH_CRASH_POSIX_WEAK, seed, 0);
    struct ckh_simfs *d2 = mkdisk(CKH_CRASH_POSIX_WEAK, seed, 0);
    history(ckh_simfs_fs(d1));
    history(ckh_simfs_fs(d2));
    ck_assert_uint_eq(ckh_simfs_digest(d1, false), ckh_simfs_digest(d2, false));
    ck_assert_int_eq(ckh_simfs_crash(d1, -1, NULL, 0), 0);
    ck_assert_int_eq(ckh_simfs_crash(d2, -1, NULL, 0), 0);
    ck_assert_uint_eq(ckh_simfs_digest(d1, false), ckh_simfs_digest(d2, false));
    ckh_simfs_destroy(d1);
    ckh_simfs_destroy(d2);

    /* Explicit choices: the same list gives the same state on any seed. */
    struct ckh_simfs *e1 = mkdisk(CKH_CRASH_POSIX_WEAK, 77, 0);
    struct ckh_simfs *e2 = mkdisk(CKH_CRASH_POSIX_WEAK, 77, 0);
    history(ckh_simfs_fs(e1));
    history(ckh_simfs_fs(e2));
    size_t n = ckh_simfs_pending_count(e1);
    ck_assert_uint_eq(n, ckh_simfs_pending_count(e2));
    enum ckh_crash_choice ch[32];
    ck_assert_uint_le(n, 32);
    struct ckh_rng rng;
    ckh_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        struct ckh_simfs_pending_info pi;
        ck_assert_int_eq(ckh_simfs_pending_get(e1, i, &pi), 0);
        uint64_t r = ckh_rng_below(&rng, pi.sectors ? 4 : 2);
        ch[i] = (enum ckh_crash_choice)r;
    }
    ck_assert_int_eq(ckh_simfs_crash(e1, -1, ch, n), 0);
    ck_assert_int_eq(ckh_simfs_crash(e2, -1, ch, n), 0);
    ck_assert_uint_eq(ckh_simfs_digest(e1, false), ckh_simfs_digest(e2, false));
    ck_assert_uint_eq(ckh_simfs_digest(e1, true), ckh_simfs_digest(e1, false));
    ckh_simfs_destroy(e1);
    ckh_simfs_destroy(e2);
}
END_TEST

/* S1: generated data costs O(1) memory; 16 GiB in 4 MiB chunks. */
START_TEST(test_generated_extents)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/big", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    uint64_t before = ckh_simfs_heap_bytes(d);
    const uint64_t chunk = 4ull << 20, total = 16ull << 30;
    for (uint64_t off = 0; off < total; off += chunk) {
        struct ckh_gen g = {.seed = 42, .stream = 3, .offset = off};
        ck_assert_int_eq(ckh_file_pwrite_gen(f, &g, chunk, off), (int64_t)chunk);
    }
    ck_assert_uint_lt(ckh_simfs_heap_bytes(d) - before, 64 * 1024);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 2); /* creation + one merged write */
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_uint_lt(ckh_simfs_heap_bytes(d) - before, 64 * 1024);
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), total);
    unsigned char got[256], want[256];
    struct ckh_gen g0 = {.seed = 42, .stream = 3, .offset = 0};
    uint64_t probe = total - 1000;
    ck_assert_int_eq(ckh_file_pread(f, got, sizeof(got), probe), (int64_t)sizeof(got));
    ckh_gen_fill(&g0, probe, want, sizeof(want));
    ck_assert_int_eq(memcmp(got, want, sizeof(got)), 0);

    /* Overlapping literal write splits the extent; reads stitch it. */
    ck_assert_int_eq(ckh_file_pwrite(f, "XY", 2, probe + 10), 2);
    ck_assert_int_eq(ckh_file_pread(f, got, sizeof(got), probe), (int64_t)sizeof(got));
    want[10] = 'X';
    want[11] = 'Y';
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(memcmp(got, want, sizeof(got)), 0);

    /* Faults at rest (S6) split extents and store only changed bytes. */
    ck_assert_int_eq(ckh_simfs_flip_bit(d, "/big", (probe + 20) * 8 + 3), 0);
    ck_assert_int_eq(ckh_simfs_zero_range(d, "/big", probe + 30, 5), 0);
    ck_assert_int_eq(ckh_file_pread(f, got, sizeof(got), probe), (int64_t)sizeof(got));
    want[20] ^= 8;
    memset(want + 30, 0, 5);
    ck_assert_int_eq(memcmp(got, want, sizeof(got)), 0);
    ck_assert_int_eq(ckh_simfs_truncate_at_rest(d, "/big", probe + 100), 0);
    ck_assert_int_eq(ckh_file_pread(f, got, sizeof(got), probe), 100);
    ck_assert_uint_lt(ckh_simfs_heap_bytes(d) - before, 64 * 1024);
    ckh_file_close(f);
    /* Faults at rest reach the durable copy: they survive a crash. */
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/big", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, got, sizeof(got), probe), 100);
    ck_assert_int_eq(memcmp(got, want, 100), 0);
    ckh_file_close(f);
    ckh_simfs_destroy(d);
}
END_TEST

START_TEST(test_remove_tree)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    ck_assert_int_eq(ckh_fs_mkdirs(fs, "/r/s"), 0);
    put_sync(fs, "/r/s/f", "f");
    ckh_simfs_sync_all(d);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/r/t"), 0); /* pending */
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "/r"), 0);
    ck_assert(!exists(fs, "/r"));
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "/r"), -ENOENT);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
    ck_assert(!exists(fs, "/r"));
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 0);
    ckh_simfs_destroy(d);
}
END_TEST

/* A removed tree stops counting against the capacity at once, even while
 * a pending op still refers to what was in it. */
START_TEST(test_remove_tree_frees_capacity)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 1500);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    struct ckh_file *f;
    static char buf[1000];
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/d"), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/d/f", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, buf, sizeof buf, 0), (int64_t)sizeof buf);
    ck_assert_int_eq(ckh_file_close(f), 0); /* its link is still pending */
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 1000);
    ck_assert_int_eq(ckh_simfs_remove_tree(d, "/d"), 0);
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/g", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, buf, sizeof buf, 0), (int64_t)sizeof buf);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
    ck_assert(!exists(fs, "/d"));
    ckh_simfs_destroy(d);
}
END_TEST

/* S7 */
START_TEST(test_capacity)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 1000);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    struct ckh_file *f;
    static char buf[2000];
    ck_assert_int_eq(ckh_fs_open(fs, "/f", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, buf, 900, 0), 900);
    ck_assert_int_eq(ckh_file_pwrite(f, buf, 200, 850), -ENOSPC);
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 900); /* nothing written */
    ck_assert_int_eq(ckh_file_pwrite(f, buf, 100, 800), 100); /* overwrite fits */
    ck_assert_int_eq(ckh_file_ftruncate(f, 1001), -ENOSPC);
    ck_assert_int_eq(ckh_file_ftruncate(f, 100), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, buf, 900, 100), 900);
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 1000);
    ckh_file_close(f);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/f"), 0);
    ck_assert_uint_eq(ckh_simfs_used_bytes(d), 0);
    ck_assert_ptr_nonnull(ckh_simfs_errmsg(d));
    ckh_simfs_destroy(d);
}
END_TEST

/* S6: Linux fsync error semantics. */
START_TEST(test_fsync_lost)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    put_sync(fs, "/f", "old");
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/f", CKH_O_RDWR, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "NEW", 3, 0), 3);
    struct ckh_fault_action act = {.kind = CKH_FAULT_FSYNC_LOST};
    ck_assert_int_eq(ckh_simfs_fault_next(d, CKH_OP_FSYNC, "/f", &act), 0);
    ck_assert_int_eq(ckh_file_fsync(f), -EIO);
    char buf[8];
    ck_assert_int_eq(ckh_file_pread(f, buf, 3, 0), 3); /* cache still shows it */
    ck_assert_int_eq(memcmp(buf, "NEW", 3), 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 0);
    ck_assert_int_eq(ckh_file_fsync(f), 0); /* retry: nothing dirty */
    ckh_file_close(f);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, NULL, 0), 0);
    ck_assert_int_eq(get(fs, "/f", buf, sizeof(buf)), 3);
    ck_assert_str_eq(buf, "old"); /* the data never reached the disk */

    /* errno injection: the op fails and has no effect */
    ck_assert_int_eq(ckh_simfs_fail_next(d, CKH_OP_MKDIR, "/m", ENOSPC), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/other"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/m"), -ENOSPC);
    ck_assert(!exists(fs, "/m"));
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/m"), 0);
    ckh_simfs_destroy(d);
}
END_TEST

/* S5: on a shared disk a node's crash resolves only its own ops. */
START_TEST(test_shared_node_crash)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, (uint64_t)_i, 0);
    struct ckh_simfs_mount m[] = {{"/shared", d}};
    struct ckh_fs *v0, *v1;
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 0, m, 1, &v0), 0);
    ck_assert_int_eq(ckh_simfs_view_create(NULL, 1, m, 1, &v1), 0);
    ck_assert_int_eq(ckh_fs_mkdir(v0, "/shared/d"), 0);
    ck_assert_int_eq(ckh_fs_fsync_dir(v0, "/shared"), 0);
    put(v0, "/shared/d/n0", "zero");
    put(v1, "/shared/d/n1", "one");
    /* node 1's fsync_dir does not flush node 0's entries */
    ck_assert_int_eq(ckh_fs_fsync_dir(v1, "/shared/d"), 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 3);
    enum ckh_crash_choice drop[2] = {CKH_CRASH_DROP, CKH_CRASH_DROP};
    ck_assert_int_eq(ckh_simfs_crash(d, 0, _i % 2 ? NULL : drop, _i % 2 ? 0 : 2), 0);
    char buf[16];
    ck_assert_int_eq(get(v1, "/shared/d/n1", buf, sizeof(buf)), 3);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 1); /* node 1's write */
    if (_i % 2 == 0)
        ck_assert(!exists(v1, "/shared/d/n0"));
    ck_assert_int_eq(ckh_simfs_crash(d, 1, NULL, 0), 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 0);
    ck_assert(exists(v1, "/shared/d/n1")); /* its entry was durable */
    ckh_simfs_view_destroy(v0);
    ckh_simfs_view_destroy(v1);
    ckh_simfs_destroy(d);
}
END_TEST

/* ---------------------------------------------------- with the simulator */

static int64_t sim_results[4];

static int prog_sim(struct ckh_env *env, void *arg)
{
    (void)arg;
    static char buf[10000];
    memset(buf, 'q', sizeof(buf));
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(env->fs, "/w", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    sim_results[0] = ckh_fs_mkdir(env->fs, "/m");                 /* ERRNO rule */
    sim_results[1] = ckh_file_pwrite(f, buf, 100, 0);
    sim_results[2] = ckh_file_fsync(f);                           /* FSYNC_LOST rule */
    sim_results[3] = ckh_file_fsync(f);
    ckh_file_pwrite(f, buf, sizeof(buf), 0);                      /* KILL_MID rule */
    sim_results[0] = 999; /* never reached */
    return 0;
}

START_TEST(test_with_sim)
{
    struct ckh_sim_config sc = {.seed = 3};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&sc, &sim), 0);
    struct ckh_simfs_config dc = {.name = "local0", .sector_bytes = 512, .seed = 5,
                                  .latency_ns = 1000, .ns_per_kib = 10};
    struct ckh_simfs *disk = NULL;
    ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, &disk), 0);
    struct ckh_simfs_mount m = {.prefix = "/", .disk = disk};
    struct ckh_node_config nc = {.name = "n0", .main = prog_sim, .rank = -1,
                                 .mounts = &m, .nmounts = 1};
    int id = -1;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, &id), 0);
    struct ckh_fault_rule r = {.node = -1, .kind = CKH_OP_MKDIR, .epoch = -1, .step = -1};
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_ERRNO, .err = EROFS};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    r.kind = CKH_OP_FSYNC;
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_FSYNC_LOST};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    r.kind = CKH_OP_PWRITE;
    r.nth = 2;
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_KILL_MID, .keep_bytes = 3000};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(sim_results[0], -EROFS);
    ck_assert_int_eq(sim_results[1], 100);
    ck_assert_int_eq(sim_results[2], -EIO);
    ck_assert_int_eq(sim_results[3], 0);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, id, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_KILLED);
    struct ckh_fs *fs = ckh_simfs_fs(disk);
    ck_assert(!exists(fs, "/m"));
    struct ckh_stat sst;
    ck_assert_int_eq(ckh_fs_stat(fs, "/w", &sst), 0);
    ck_assert_uint_eq(sst.size_bytes, 3000); /* keep_bytes reached the cache */
    ck_assert_uint_gt(ckh_sim_now_ns(sim), 0);
    ckh_sim_destroy(sim);
}
END_TEST

/* ---- short writes (CKH_FAULT_SHORT_WRITE, sim/sched.c "Faults") ---- */

static int64_t sw_res[8];
static unsigned char sw_buf[10000];

/* Rules (see test_short_write): the first write op is cut to 3000 bytes,
 * the second (a generated one) to 1000, then every write of /all to a
 * tenth, /three to a fraction that rounds to nothing, /zero to 0 bytes. */
static int prog_short(struct ckh_env *env, void *arg)
{
    (void)arg;
    struct ckh_file *f = NULL;
    for (size_t i = 0; i < sizeof sw_buf; i++)
        sw_buf[i] = (unsigned char)(i * 7 + 1);
    ck_assert_int_eq(ckh_fs_open(env->fs, "/w", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    sw_res[0] = ckh_file_pwrite(f, sw_buf, sizeof sw_buf, 0);
    struct ckh_gen g = {.seed = 9, .stream = 4, .offset = 100};
    sw_res[1] = ckh_file_pwrite_gen(f, &g, 5000, 20000);
    ckh_file_close(f);
    ck_assert_int_eq(ckh_fs_open(env->fs, "/all", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    sw_res[2] = ckh_file_write_all(f, sw_buf, sizeof sw_buf);
    sw_res[3] = ckh_file_write_all(f, "tail", 4); /* from where the short writes ended */
    ckh_file_close(f);
    ck_assert_int_eq(ckh_fs_open(env->fs, "/three", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    sw_res[4] = ckh_file_pwrite(f, "abc", 3, 0);
    ckh_file_close(f);
    ck_assert_int_eq(ckh_fs_open(env->fs, "/zero", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    sw_res[5] = ckh_file_pwrite(f, "abc", 3, 0);
    sw_res[6] = ckh_file_write_all(f, "abc", 3); /* a write that makes no progress */
    ckh_file_close(f);
    return 0;
}

static struct ckh_sim *short_sim(ckh_node_main prog, uint64_t seed, struct ckh_simfs **disk)
{
    struct ckh_sim_config sc = {.seed = seed, .keep_trace = true};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&sc, &sim), 0);
    struct ckh_simfs_config dc = {.name = "d", .sector_bytes = 512, .latency_ns = 1000};
    ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, disk), 0);
    struct ckh_simfs_mount m = {.prefix = "/", .disk = *disk};
    struct ckh_node_config nc = {.name = "n0", .main = prog, .rank = -1, .mounts = &m, .nmounts = 1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    return sim;
}

/* The trace line of the first op of kind k on path (its index in *at). */
static struct ckh_trace_rec find_rec(struct ckh_sim *sim, enum ckh_op_kind k, const char *path,
                                     uint64_t *at)
{
    struct ckh_trace_rec r;
    for (uint64_t i = 0; i < ckh_sim_trace_len(sim); i++) {
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &r), 0);
        if (r.kind == k && r.path && !strcmp(r.path, path)) {
            if (at)
                *at = i;
            return r;
        }
    }
    ck_abort_msg("no %s of %s in the trace", ckh_op_name(k), path);
    return r;
}

START_TEST(test_short_write)
{
    struct ckh_simfs *disk = NULL;
    struct ckh_sim *sim = short_sim(prog_short, 11, &disk);
    struct ckh_fault_rule r;
    ckh_fault_rule_init(&r); /* any op: the action itself matches only writes */
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_SHORT_WRITE, .keep_bytes = 3000};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    ckh_fault_rule_init(&r);
    r.kind = CKH_OP_PWRITE;
    r.nth = 2;
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_SHORT_WRITE, .keep_bytes = 1000};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    ckh_fault_rule_init(&r);
    r.path_glob = "/all";
    r.repeat = true;
    r.keep_fraction = 0.1;
    r.action.kind = CKH_FAULT_SHORT_WRITE;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    r.path_glob = "/three";
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    r.path_glob = "/zero";
    r.keep_fraction = 0;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    /* The fraction is checked as for KILL_MID. */
    r.keep_fraction = 1.5;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), CKH_EINVAL);

    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(sw_res[0], 3000);
    ck_assert_int_eq(sw_res[1], 1000);
    ck_assert_int_eq(sw_res[2], 0);
    ck_assert_int_eq(sw_res[3], 0);
    ck_assert_int_eq(sw_res[4], 1); /* 3 * 0.1 rounds to 0: still one byte */
    ck_assert_int_eq(sw_res[5], 0); /* asked for 0 bytes */
    ck_assert_int_eq(sw_res[6], -EIO); /* fails instead of looping */
    ck_assert_uint_eq(ckh_sim_fault_fired(sim, 0), 1);
    ck_assert_uint_eq(ckh_sim_fault_fired(sim, 1), 1);
    ck_assert_uint_gt(ckh_sim_fault_fired(sim, 2), 10);

    /* Only the prefix landed: /w is 3000 bytes of the buffer, then a hole
     * up to 20000, then 1000 generated bytes. */
    struct ckh_fs *fs = ckh_simfs_fs(disk);
    static unsigned char got[30000], want[1000];
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/w", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, got, sizeof got, 0), 21000);
    ck_assert(memcmp(got, sw_buf, 3000) == 0);
    for (size_t i = 3000; i < 20000; i++)
        ck_assert_uint_eq(got[i], 0);
    struct ckh_gen g = {.seed = 9, .stream = 4, .offset = 100};
    ckh_gen_fill(&g, 0, want, sizeof want);
    ck_assert(memcmp(got + 20000, want, sizeof want) == 0);
    ckh_file_close(f);
    /* The looping writer wrote everything, in order, then the tail. */
    ck_assert_int_eq(ckh_fs_open(fs, "/all", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, got, sizeof got, 0), 10004);
    ck_assert(memcmp(got, sw_buf, sizeof sw_buf) == 0);
    ck_assert(memcmp(got + 10000, "tail", 4) == 0);
    ckh_file_close(f);
    char small[8];
    ck_assert_int_eq(get(fs, "/three", small, sizeof small), 1);
    ck_assert_str_eq(small, "a");
    ck_assert_int_eq(get(fs, "/zero", small, sizeof small), 0);

    /* The trace: a FAULT line with the accepted count, then the write with
     * its full length and the short result. */
    uint64_t at = 0;
    struct ckh_trace_rec fr = find_rec(sim, CKH_OP_FAULT, "/w", &at);
    ck_assert_str_eq(fr.path2, "pwrite:short_write");
    ck_assert_uint_eq(fr.len, 3000);
    ck_assert_int_eq(fr.off, 0); /* rule 0 */
    struct ckh_trace_rec wr;
    ck_assert_int_eq(ckh_sim_trace_get(sim, at + 1, &wr), 0);
    ck_assert_int_eq(wr.kind, CKH_OP_PWRITE);
    ck_assert_uint_eq(wr.len, 10000);
    ck_assert_int_eq(wr.result, 3000);
    char line[256];
    ckh_trace_format(sim, &wr, line, sizeof line);
    ck_assert_msg(strstr(line, "pwrite /w off=0 len=10000 arg=0 -> 3000") != NULL, "%s", line);
    ckh_sim_destroy(sim);
}
END_TEST

/* Same seed, same trace: the fraction's retries are deterministic. */
START_TEST(test_short_write_deterministic)
{
    uint64_t h[2];
    for (int i = 0; i < 2; i++) {
        struct ckh_simfs *disk = NULL;
        struct ckh_sim *sim = short_sim(prog_short, 5, &disk);
        struct ckh_fault_rule r;
        ckh_fault_rule_init(&r);
        r.probability = 0.5;
        r.repeat = true;
        r.keep_fraction = 0.3;
        r.path_glob = "/all";
        r.action.kind = CKH_FAULT_SHORT_WRITE;
        ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
        struct ckh_sim_result res;
        ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
        ck_assert_int_eq(sw_res[2], 0);
        ck_assert_uint_gt(ckh_sim_fault_fired(sim, 0), 0);
        h[i] = res.trace_hash;
        ckh_sim_destroy(sim);
    }
    ck_assert_uint_eq(h[0], h[1]);
}
END_TEST

/* A crash after a short write: the file never holds more than the
 * accepted prefix, whatever the crash keeps. */
static int prog_short_crash(struct ckh_env *env, void *arg)
{
    (void)arg;
    struct ckh_file *f = NULL;
    for (size_t i = 0; i < sizeof sw_buf; i++)
        sw_buf[i] = (unsigned char)(i * 7 + 1);
    ck_assert_int_eq(ckh_fs_open(env->fs, "/w", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_fs_fsync_dir(env->fs, "/"), 0);
    sw_res[0] = ckh_file_pwrite(f, sw_buf, sizeof sw_buf, 0);
    ckh_file_fsync(f); /* the machine crashes before it */
    sw_res[0] = -1;
    return 0;
}

START_TEST(test_short_write_then_crash)
{
    static const int keeps[] = {CKH_CRASH_KEEP_CACHE, CKH_CRASH_KEEP_SYNCED, CKH_CRASH_KEEP_RANDOM};
    int keep = keeps[_i % 3];
    struct ckh_simfs *disk = NULL;
    struct ckh_sim *sim = short_sim(prog_short_crash, 100 + (uint64_t)_i, &disk);
    struct ckh_fault_rule r;
    ckh_fault_rule_init(&r);
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_SHORT_WRITE, .keep_bytes = 3000};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    ckh_fault_rule_init(&r);
    r.kind = CKH_OP_FSYNC;
    r.nth = 2;
    r.action = (struct ckh_fault_action){.kind = CKH_FAULT_CRASH_BEFORE, .crash_keep = keep};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(sw_res[0], 3000);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_KILLED);
    struct ckh_stat sst;
    ck_assert_int_eq(ckh_fs_stat(ckh_simfs_fs(disk), "/w", &sst), 0);
    if (keep == CKH_CRASH_KEEP_CACHE)
        ck_assert_uint_eq(sst.size_bytes, 3000);
    else if (keep == CKH_CRASH_KEEP_SYNCED)
        ck_assert_uint_eq(sst.size_bytes, 0);
    else
        ck_assert_uint_le(sst.size_bytes, 3000);
    if (sst.size_bytes == 3000 && keep == CKH_CRASH_KEEP_CACHE) {
        static unsigned char got[3000];
        struct ckh_file *f;
        ck_assert_int_eq(ckh_fs_open(ckh_simfs_fs(disk), "/w", CKH_O_RDONLY, &f), 0);
        ck_assert_int_eq(ckh_file_pread_all(f, got, sizeof got, 0), 0);
        ck_assert(memcmp(got, sw_buf, sizeof got) == 0);
        ckh_file_close(f);
    }
    ckh_sim_destroy(sim);
}
END_TEST

/* Invariants (top of sim/simfs.c): pending ops are numbered in issue
 * order. A disk whose numbering restarts aborts at its next op. */
START_TEST(test_assert_issue_order)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    put(fs, "/a", "one"); /* pending: the link and the write, seq 1 and 2 */
    ckh__simfs_test_rewind_seq(d);
    put(fs, "/b", "two"); /* numbered 1 again: CKH_ASSERT aborts */
    ckh_simfs_destroy(d);
}
END_TEST

/* Invariants: no extent of a file reaches past its size. A file whose
 * size was cut under its data aborts at the next write. */
START_TEST(test_assert_extents_within_size)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    struct ckh_file *f;
    put(fs, "/a", "0123456789");
    ck_assert_int_eq(ckh__simfs_test_set_size(d, "/a", 4), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/a", CKH_O_WRONLY, &f), 0);
    ckh_file_pwrite(f, "x", 1, 0); /* CKH_ASSERT aborts */
    ckh_file_close(f);
    ckh_simfs_destroy(d);
}
END_TEST

/* The same sequences without the break run through. */
START_TEST(test_invariants_hold)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    struct ckh_file *f;
    char buf[32];
    put(fs, "/a", "0123456789");
    put(fs, "/b", "two");
    ck_assert_int_eq(ckh__simfs_test_set_size(d, "/a", 10), 0); /* its true size */
    ck_assert_int_eq(ckh_fs_open(fs, "/a", CKH_O_WRONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "x", 1, 0), 1);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(get(fs, "/a", buf, sizeof buf), 10);
    ck_assert_str_eq(buf, "x123456789");
    ck_assert_int_eq(ckh__simfs_test_set_size(d, "/missing", 1), -ENOENT);
    ck_assert_int_eq(ckh__simfs_test_set_size(NULL, "/a", 1), CKH_EINVAL);
    ckh_simfs_destroy(d);
}
END_TEST

/* ---- the store (sim/simfs_store.c B1-B5) ---- */

/* A fresh folder for a store (removed by rm_store_dir). */
static void mk_store_dir(char *dir, size_t n)
{
    snprintf(dir, n, "%s/ckh-store-test.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Number of entries in dir besides . and .. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Blocks (512 B) of the store files this process has open in dir. */
static uint64_t store_blocks(const char *dir)
{
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    uint64_t blocks = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[300], t[4096];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(p, t, sizeof t - 1);
        if (n <= 0)
            continue;
        t[n] = '\0';
        struct stat st;
        if (strncmp(t, dir, strlen(dir)) == 0 && t[strlen(dir)] == '/' && stat(p, &st) == 0 &&
            S_ISREG(st.st_mode))
            blocks += (uint64_t)st.st_blocks;
    }
    closedir(d);
    return blocks;
}

struct twin { /* the same disk twice: bytes in memory [0], in a store [1] */
    struct ckh_simfs *d[2];
    struct ckh_fs *v[2][2]; /* [disk][node]: views of nodes 0 and 1 */
};

static void twin_check(struct twin *t)
{
    ck_assert_uint_eq(ckh_simfs_digest(t->d[0], false), ckh_simfs_digest(t->d[1], false));
    ck_assert_uint_eq(ckh_simfs_digest(t->d[0], true), ckh_simfs_digest(t->d[1], true));
    size_t n = ckh_simfs_pending_count(t->d[0]);
    ck_assert_uint_eq(n, ckh_simfs_pending_count(t->d[1]));
    for (size_t i = 0; i < n; i++) {
        struct ckh_simfs_pending_info a, b;
        ck_assert_int_eq(ckh_simfs_pending_get(t->d[0], i, &a), 0);
        ck_assert_int_eq(ckh_simfs_pending_get(t->d[1], i, &b), 0);
        ck_assert(a.seq == b.seq && a.node == b.node && a.kind == b.kind && a.off == b.off &&
                  a.len == b.len && a.sectors == b.sectors);
        ck_assert_str_eq(a.path, b.path);
    }
}

/* One random operation of node on both disks (the same answer on both). */
static void twin_op(struct twin *t, struct ckh_rng *r, int node, unsigned char *buf)
{
    char a[32], b[32];
    snprintf(a, sizeof a, "/f%u", (unsigned)ckh_rng_below(r, 4));
    snprintf(b, sizeof b, "/f%u", (unsigned)ckh_rng_below(r, 4));
    uint64_t k = ckh_rng_below(r, 10), off = ckh_rng_below(r, 3) * 4096 + ckh_rng_below(r, 700);
    size_t len = 1 + (size_t)ckh_rng_below(r, 9000);
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)ckh_rng_next(r);
    int64_t res[2];
    for (int w = 0; w < 2; w++) {
        struct ckh_fs *v = t->v[w][node];
        struct ckh_file *f = NULL;
        if (k < 5) { /* writes: runs of sequential ones extend a store buffer */
            res[w] = ckh_fs_open(v, a, CKH_O_WRONLY | CKH_O_CREAT, &f);
            for (uint64_t j = 0; res[w] == 0 && j < (k < 3 ? 4 : 1); j++)
                res[w] = ckh_file_pwrite(f, buf, len, off + j * len) == (int64_t)len ? 0 : -1;
        } else if (k == 5) {
            if ((res[w] = ckh_fs_open(v, a, CKH_O_WRONLY | CKH_O_CREAT, &f)) == 0)
                res[w] = ckh_file_ftruncate(f, off);
        } else if (k == 6) {
            if ((res[w] = ckh_fs_open(v, a, CKH_O_WRONLY | CKH_O_CREAT, &f)) == 0)
                res[w] = ckh_file_fsync(f);
        } else if (k == 7) {
            res[w] = ckh_fs_rename(v, a, b);
        } else if (k == 8) {
            res[w] = ckh_fs_unlink(v, a);
        } else {
            res[w] = ckh_fs_fsync_dir(v, "/");
        }
        if (f)
            ckh_file_close(f);
    }
    ck_assert_int_eq(res[0], res[1]);
}

/* B1: whatever is done, a disk whose bytes are in a store and one that
 * keeps them in memory are the same disk: same pending ops, same live and
 * durable trees after drawn crashes, same states after explicit (torn)
 * choices on clones. */
START_TEST(test_store_same_model)
{
    char dir[256];
    mk_store_dir(dir, sizeof dir);
    struct twin t;
    for (int w = 0; w < 2; w++) {
        struct ckh_simfs_config cfg = {.name = "t", .sector_bytes = 512, .seed = (uint64_t)_i + 1,
                                       .model = _i % 2 ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK,
                                       .store_dir = w ? dir : NULL};
        ck_assert_int_eq(ckh_simfs_create(&cfg, &t.d[w]), 0);
        for (int n = 0; n < 2; n++) {
            struct ckh_simfs_mount m = {.prefix = "/", .disk = t.d[w]};
            ck_assert_int_eq(ckh_simfs_view_create(NULL, n, &m, 1, &t.v[w][n]), 0);
        }
    }
    struct ckh_rng r;
    ckh_rng_seed(&r, (uint64_t)_i * 7919 + 3);
    static unsigned char buf[9000];
    for (int step = 0; step < 300; step++) {
        twin_op(&t, &r, (int)ckh_rng_below(&r, 2), buf);
        twin_check(&t);
        if (ckh_rng_below(&r, 40) == 0) { /* a clone of each, crashed by explicit torn choices */
            struct ckh_simfs *c[2];
            size_t n = ckh_simfs_pending_count(t.d[0]);
            enum ckh_crash_choice *ch = calloc(n ? n : 1, sizeof *ch);
            for (size_t i = 0; i < n; i++) {
                struct ckh_simfs_pending_info pi;
                ck_assert_int_eq(ckh_simfs_pending_get(t.d[0], i, &pi), 0);
                ch[i] = pi.sectors ? (enum ckh_crash_choice)ckh_rng_below(&r, 4)
                                   : (enum ckh_crash_choice)ckh_rng_below(&r, 2);
            }
            for (int w = 0; w < 2; w++) {
                ck_assert_int_eq(ckh_simfs_clone(t.d[w], &c[w]), 0);
                ck_assert_int_eq(ckh_simfs_crash(c[w], -1, ch, n), 0);
            }
            ck_assert_uint_eq(ckh_simfs_digest(c[0], true), ckh_simfs_digest(c[1], true));
            ck_assert_uint_eq(ckh_simfs_digest(c[0], false), ckh_simfs_digest(c[1], false));
            ckh_simfs_destroy(c[0]);
            ckh_simfs_destroy(c[1]);
            free(ch);
        }
        if (ckh_rng_below(&r, 25) == 0) { /* a drawn crash of one node or of the power */
            int node = (int)ckh_rng_below(&r, 3) - 1;
            ck_assert_int_eq(ckh_simfs_crash(t.d[0], node, NULL, 0), 0);
            ck_assert_int_eq(ckh_simfs_crash(t.d[1], node, NULL, 0), 0);
            twin_check(&t);
        }
    }
    /* Every byte reads the same. */
    for (int i = 0; i < 4; i++) {
        char p[16];
        static unsigned char x[2][40000];
        snprintf(p, sizeof p, "/f%d", i);
        int64_t n0 = get(ckh_simfs_fs(t.d[0]), p, (char *)x[0], sizeof x[0]);
        int64_t n1 = get(ckh_simfs_fs(t.d[1]), p, (char *)x[1], sizeof x[1]);
        ck_assert_int_eq(n0, n1);
        ck_assert(n0 < 0 || memcmp(x[0], x[1], (size_t)n0) == 0);
    }
    for (int w = 0; w < 2; w++) {
        for (int n = 0; n < 2; n++)
            ckh_simfs_view_destroy(t.v[w][n]);
        ckh_simfs_destroy(t.d[w]);
    }
    ck_assert_int_eq(dir_entries(dir), 0); /* B3: the files have no name */
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* B3: bytes no copy, pending write or clone refers to go back to the real
 * disk; nothing is left in the folder, while the disk lives or after. */
START_TEST(test_store_frees_space)
{
    char dir[256];
    mk_store_dir(dir, sizeof dir);
    struct ckh_simfs_config cfg = {.name = "t", .sector_bytes = 4096, .seed = 1, .store_dir = dir};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    static unsigned char mib[1 << 20];
    memset(mib, 0xa5, sizeof mib);
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/big", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(ckh_file_pwrite(f, mib, sizeof mib, (uint64_t)i << 20), (int64_t)sizeof mib);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    put_sync(fs, "/small", "x"); /* a fresh buffer: the disk lets go of the big one */
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    ck_assert_uint_ge(store_blocks(dir), (8u << 20) / 512);
    ck_assert_int_eq(dir_entries(dir), 0);
    struct ckh_simfs *c = NULL;
    ck_assert_int_eq(ckh_simfs_clone(d, &c), 0); /* C3: the clone keeps the bytes alive */
    ck_assert_int_eq(ckh_fs_unlink(fs, "/big"), 0);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/"), 0);
    ck_assert_uint_ge(store_blocks(dir), (8u << 20) / 512);
    ckh_simfs_destroy(c);
    ck_assert_uint_lt(store_blocks(dir), (1u << 20) / 512);
    char got[8];
    ck_assert_int_eq(get(fs, "/small", got, sizeof got), 1);
    ckh_simfs_destroy(d);
    ck_assert_int_eq(dir_entries(dir), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* B5 and ckh_simfs_create: a store folder that does not exist is refused;
 * ckh_simfs_space reports the capacity, else the folder's filesystem. */
START_TEST(test_store_space_and_errors)
{
    struct ckh_simfs_config cfg = {.name = "t", .store_dir = "/nonexistent/ckh-store"};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), -ENOENT);
    ck_assert_ptr_null(d);
    char dir[256];
    mk_store_dir(dir, sizeof dir);
    cfg.store_dir = dir;
    ck_assert_int_eq(ckh_simfs_create(&cfg, &d), 0);
    uint64_t total = 0, avail = 0;
    ck_assert_int_eq(ckh_simfs_space(d, &total, &avail), 0);
    struct statvfs sv;
    ck_assert_int_eq(statvfs(dir, &sv), 0);
    ck_assert_uint_eq(total, (uint64_t)sv.f_blocks * sv.f_frsize);
    ck_assert_uint_le(avail, total);
    ck_assert_int_eq(ckh_simfs_set_capacity(d, 1 << 20), 0);
    put(ckh_simfs_fs(d), "/a", "0123456789");
    ck_assert_int_eq(ckh_simfs_space(d, &total, &avail), 0);
    ck_assert_uint_eq(total, 1 << 20);
    ck_assert_uint_eq(avail, (1 << 20) - 10);
    ck_assert_int_eq(ckh_simfs_space(NULL, &total, &avail), CKH_EINVAL);
    ckh_simfs_destroy(d);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Holes: ckh_file_seek finds data and holes from the extents, and the
 * digests (ckh_file_digest, ckh_simfs_digest) never read a hole, so a
 * file of 2^40 + 5 bytes digests at once; written zeros and a hole digest
 * alike, one changed byte does not. */
START_TEST(test_sparse_digest)
{
    struct ckh_simfs *d = mkdisk(CKH_CRASH_POSIX_WEAK, 1, 0);
    struct ckh_fs *fs = ckh_simfs_fs(d);
    const uint64_t far = UINT64_C(1) << 40;
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/sparse", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "hello", 5, far), 5);
    ck_assert_int_eq(ckh_file_seek(f, 0, CKH_SEEK_DATA), (int64_t)far);
    ck_assert_int_eq(ckh_file_seek(f, 0, CKH_SEEK_HOLE), 0);
    ck_assert_int_eq(ckh_file_seek(f, far + 1, CKH_SEEK_HOLE), (int64_t)(far + 5));
    ck_assert_int_eq(ckh_file_seek(f, far + 5, CKH_SEEK_DATA), -ENXIO);
    uint64_t h1 = 0, h2 = 0, h3 = 0;
    ck_assert_int_eq(ckh_file_digest(f, far + 5, NULL, 0, &h1), 0);
    /* The same bytes with the zeros before them written, not a hole. */
    struct ckh_file *g;
    static char zeros[1 << 16];
    ck_assert_int_eq(ckh_fs_open(fs, "/dense", CKH_O_RDWR | CKH_O_CREAT, &g), 0);
    ck_assert_int_eq(ckh_file_pwrite(g, zeros, sizeof zeros, far - sizeof zeros), (int64_t)sizeof zeros);
    ck_assert_int_eq(ckh_file_pwrite(g, "hello", 5, far), 5);
    ck_assert_int_eq(ckh_file_digest(g, far + 5, NULL, 0, &h2), 0);
    ck_assert_uint_eq(h1, h2);
    ck_assert_int_eq(ckh_file_pwrite(g, "j", 1, far), 1);
    ck_assert_int_eq(ckh_file_digest(g, far + 5, NULL, 0, &h3), 0);
    ck_assert_uint_ne(h1, h3);
    ck_assert_int_eq(ckh_file_digest(f, far + 6, NULL, 0, &h3), CKH_ETRUNCATED);
    ck_assert_int_eq(ckh_file_close(g), 0);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/dense"), 0);
    uint64_t live = ckh_simfs_digest(d, false);
    ck_assert_int_eq(ckh_file_pwrite(f, zeros, 100, 4096), 100); /* zeros over a hole: same content */
    ck_assert_uint_eq(ckh_simfs_digest(d, false), live);
    ck_assert_int_eq(ckh_file_pwrite(f, "z", 1, 4096), 1);
    ck_assert_uint_ne(ckh_simfs_digest(d, false), live);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ckh_simfs_destroy(d);
}
END_TEST

static Suite *simfs_suite(void)
{
    Suite *s = suite_create("simfs");
    TCase *tc = tcase_create("posix");
    tcase_add_test(tc, test_basic_posix);
    tcase_add_test(tc, test_open_file_is_inode);
    tcase_add_test(tc, test_views_and_mounts);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_capacity);
    tcase_add_test(tc, test_fsync_lost);
    tcase_add_test(tc, test_remove_tree);
    tcase_add_test(tc, test_remove_tree_frees_capacity);
    suite_add_tcase(s, tc);
    TCase *tcc = tcase_create("crash");
    tcase_set_timeout(tcc, 60);
    tcase_add_loop_test(tcc, test_synced_survives, 0, seeds(64));
    tcase_add_loop_test(tcc, test_unsynced_write_outcomes, 0, seeds(96));
    tcase_add_test(tcc, test_dir_fsync_needed);
    tcase_add_loop_test(tcc, test_rename_atomic, 0, seeds(64));
    tcase_add_test(tcc, test_ext4_ordered);
    tcase_add_loop_test(tcc, test_determinism, 0, seeds(16));
    tcase_add_loop_test(tcc, test_shared_node_crash, 0, 4);
    suite_add_tcase(s, tcc);
    TCase *tcg = tcase_create("generated");
    tcase_set_timeout(tcg, 60);
    tcase_add_test(tcg, test_generated_extents);
    suite_add_tcase(s, tcg);
    TCase *tcs = tcase_create("sim");
    tcase_add_test(tcs, test_with_sim);
    tcase_add_test(tcs, test_short_write);
    tcase_add_test(tcs, test_short_write_deterministic);
    tcase_add_loop_test(tcs, test_short_write_then_crash, 0, seeds(12));
    suite_add_tcase(s, tcs);
    TCase *tci = tcase_create("invariants");
    tcase_add_test(tci, test_invariants_hold);
    /* A failed CKH_ASSERT aborts: only where each test runs in its own
     * process (not under valgrind's CK_FORK=no). */
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode == NULL || strcmp(fork_mode, "no") != 0) {
        tcase_add_test_raise_signal(tci, test_assert_issue_order, SIGABRT);
        tcase_add_test_raise_signal(tci, test_assert_extents_within_size, SIGABRT);
    }
    suite_add_tcase(s, tci);
    TCase *tcb = tcase_create("store");
    tcase_set_timeout(tcb, 120);
    tcase_add_loop_test(tcb, test_store_same_model, 0, seeds(8));
    tcase_add_test(tcb, test_store_frees_space);
    tcase_add_test(tcb, test_store_space_and_errors);
    tcase_add_test(tcb, test_sparse_digest);
    suite_add_tcase(s, tcb);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(simfs_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
