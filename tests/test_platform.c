/* Tests for platform/: error table, allocator, rng/hash/crc/gen, fs
 * wrappers and path helpers, and the POSIX fs on a real temporary
 * directory. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/op.h"
#include "ckh/posix.h"
#include "ckh/rng.h"

START_TEST(test_err_table)
{
    ck_assert_str_eq(ckh_err_name(0), "OK");
    ck_assert_str_eq(ckh_err_name(CKH_ECORRUPT), "CKH_ECORRUPT");
    ck_assert_str_eq(ckh_err_name(-EIO), "EIO");
    ck_assert_str_eq(ckh_err_name(-EDQUOT), "EDQUOT");
    ck_assert_str_eq(ckh_strerror(CKH_ETIMEOUT), "operation timed out");
    ck_assert_str_eq(ckh_strerror(-ENOSPC), strerror(ENOSPC));
    ck_assert_int_lt(CKH_EINVAL, -4096); /* never collides with an errno */
    ck_assert_str_eq(ckh_strerror(12345), "unknown error");
}
END_TEST

START_TEST(test_rng_determinism)
{
    struct ckh_rng a, b;
    ckh_rng_seed(&a, 42);
    ckh_rng_seed(&b, 42);
    for (int i = 0; i < 1000; i++)
        ck_assert_uint_eq(ckh_rng_next(&a), ckh_rng_next(&b));
    ckh_rng_seed(&b, 43);
    ck_assert_uint_ne(ckh_rng_next(&a), ckh_rng_next(&b));
    /* Pinned values: a change here breaks every recorded trace. */
    ckh_rng_seed(&a, 0);
    uint64_t first = ckh_rng_next(&a);
    ckh_rng_seed(&b, 0);
    ck_assert_uint_eq(first, ckh_rng_next(&b));
    for (int i = 0; i < 10000; i++) {
        ck_assert_uint_lt(ckh_rng_below(&a, 7), 7);
        double u = ckh_rng_unit(&a);
        ck_assert(u >= 0.0 && u < 1.0);
    }
    ck_assert_uint_eq(ckh_rng_below(&a, 0), 0);
}
END_TEST

START_TEST(test_rng_uniform)
{
    struct ckh_rng r;
    ckh_rng_seed(&r, 7);
    int counts[10] = {0};
    for (int i = 0; i < 100000; i++)
        counts[ckh_rng_below(&r, 10)]++;
    for (int i = 0; i < 10; i++)
        ck_assert(counts[i] > 9500 && counts[i] < 10500);
}
END_TEST

START_TEST(test_hash_and_crc)
{
    /* CRC-32C check value from its specification. */
    ck_assert_uint_eq(ckh_crc32c(0, "123456789", 9), 0xe3069283u);
    /* Incremental equals one-shot. */
    uint32_t c = ckh_crc32c(0, "1234", 4);
    ck_assert_uint_eq(ckh_crc32c(c, "56789", 5), 0xe3069283u);
    ck_assert_uint_eq(ckh_crc32c(0, "", 0), 0);
    uint64_t h1 = ckh_hash64(CKH_HASH_INIT, "abc", 3);
    ck_assert_uint_eq(h1, ckh_hash64(CKH_HASH_INIT, "abc", 3));
    ck_assert_uint_ne(h1, ckh_hash64(CKH_HASH_INIT, "abd", 3));
    ck_assert_uint_ne(ckh_hash64(CKH_HASH_INIT, "a", 1), ckh_hash64(CKH_HASH_INIT, "a\0", 2));
    ck_assert_uint_ne(ckh_seed_derive(1, "disk"), ckh_seed_derive(1, "node"));
    ck_assert_uint_eq(ckh_seed_derive(1, "disk"), ckh_seed_derive(1, "disk"));
}
END_TEST

/* The three-way path (blocks of 3 x 4 KiB) must agree with the one-stream
 * path used for short pieces, at every alignment and length. */
START_TEST(test_crc_long_buffers)
{
    size_t n = 100000 + 37;
    unsigned char *buf = malloc(n);
    struct ckh_rng r;
    ckh_rng_seed(&r, 5);
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)ckh_rng_next(&r);
    for (size_t start = 0; start < 9; start++) {
        uint32_t whole = ckh_crc32c(0, buf + start, n - start);
        uint32_t pieces = 0;
        for (size_t off = start; off < n;) {
            size_t k = 1 + ckh_rng_below(&r, 5000);
            if (k > n - off)
                k = n - off;
            pieces = ckh_crc32c(pieces, buf + off, k);
            off += k;
        }
        ck_assert_uint_eq(whole, pieces);
    }
    /* 12 KiB of zeros: exactly one three-way block, against two single-stream pieces. */
    memset(buf, 0, 12288);
    ck_assert_uint_eq(ckh_crc32c(0, buf, 12288), ckh_crc32c(ckh_crc32c(0, buf, 5000), buf, 7288));
    free(buf);
}
END_TEST

START_TEST(test_gen_random_access)
{
    struct ckh_gen g = {.seed = 9, .stream = 3, .offset = 5};
    unsigned char whole[300], part[300];
    ckh_gen_fill(&g, 0, whole, sizeof whole);
    /* Any sub-range equals the same bytes of the whole, at any alignment. */
    for (size_t start = 0; start < 40; start++) {
        size_t n = sizeof whole - start;
        ckh_gen_fill(&g, start, part, n);
        ck_assert_mem_eq(part, whole + start, n);
    }
    struct ckh_gen h = {.seed = 9, .stream = 3, .offset = 6};
    ckh_gen_fill(&h, 0, part, 10);
    ck_assert_mem_eq(part, whole + 1, 10);
    struct ckh_gen other = {.seed = 9, .stream = 4, .offset = 5};
    ckh_gen_fill(&other, 0, part, 64);
    ck_assert(memcmp(part, whole, 64) != 0);
}
END_TEST

START_TEST(test_paths)
{
    ck_assert_int_eq(ckh_path_check("/"), 0);
    ck_assert_int_eq(ckh_path_check("/a/b.1"), 0);
    ck_assert_int_eq(ckh_path_check("a"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check(""), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/a//b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/a/"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/a/./b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_path_check("/a/../b"), CKH_EESCAPE);
    ck_assert_int_eq(ckh_path_check("/.."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_path_check("/a/..b"), 0);
    char buf[64];
    ck_assert_int_eq(ckh_path_dirname("/a/b/c", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/a/b");
    ck_assert_int_eq(ckh_path_dirname("/a", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/");
    ck_assert_int_eq(ckh_path_join(buf, sizeof buf, "/a/", "b"), 0);
    ck_assert_str_eq(buf, "/a/b");
    ck_assert_int_eq(ckh_path_join(buf, sizeof buf, "/", "b"), 0);
    ck_assert_str_eq(buf, "/b");
    ck_assert_int_eq(ckh_path_join(buf, 4, "/abc", "def"), CKH_EINVAL);
    char *long_path = malloc(CKH_PATH_MAX + 10);
    memset(long_path, 'a', CKH_PATH_MAX + 9);
    long_path[0] = '/';
    long_path[CKH_PATH_MAX + 9] = '\0';
    ck_assert_int_eq(ckh_path_check(long_path), -ENAMETOOLONG);
    free(long_path);
}
END_TEST

START_TEST(test_op_names)
{
    ck_assert_str_eq(ckh_op_name(CKH_OP_FSYNC), "fsync");
    ck_assert_int_eq(ckh_op_from_name("rename"), CKH_OP_RENAME);
    ck_assert_int_eq(ckh_op_from_name("nope"), -1);
    ck_assert_int_eq(ckh_op_class(CKH_OP_ALLREDUCE), CKH_OPC_COLL);
    ck_assert_int_eq(ckh_op_class(CKH_OP_PWRITE), CKH_OPC_FS);
    ck_assert_str_eq(ckh_op_name((enum ckh_op_kind)999), "?");
}
END_TEST

static char tmpdir[256];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ckh_test_platform_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_posix_fs)
{
    make_tmp();
    struct ckh_fs *fs;
    ck_assert_int_eq(ckh_posix_fs_create(tmpdir, &fs), 0);
    ck_assert_int_eq(ckh_fs_mkdirs(fs, "/ckpt/sub"), 0);
    ck_assert_int_eq(ckh_fs_mkdirs(fs, "/ckpt/sub"), 0); /* idempotent */
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/ckpt/a.tmp", CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, "hello", 5), 0);
    struct ckh_gen g = {.seed = 1, .stream = 2, .offset = 0};
    ck_assert_int_eq(ckh_file_pwrite_gen(f, &g, 3000000, 5), 3000000);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_rename(fs, "/ckpt/a.tmp", "/ckpt/a"), 0);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/ckpt"), 0);
    struct ckh_stat st;
    ck_assert_int_eq(ckh_fs_stat(fs, "/ckpt/a", &st), 0);
    ck_assert_int_eq(st.type, CKH_FT_FILE);
    ck_assert_uint_eq(st.size_bytes, 3000005);
    ck_assert_int_eq(ckh_fs_stat(fs, "/ckpt/a.tmp", &st), -ENOENT);
    ck_assert_int_eq(ckh_fs_open(fs, "/ckpt/a", CKH_O_RDONLY, &f), 0);
    char buf[5];
    ck_assert_int_eq(ckh_file_pread_all(f, buf, 5, 0), 0);
    ck_assert_mem_eq(buf, "hello", 5);
    unsigned char got[64], want[64];
    ck_assert_int_eq(ckh_file_pread_all(f, got, 64, 5 + 1048570), 0);
    ckh_gen_fill(&g, 1048570, want, 64);
    ck_assert_mem_eq(got, want, 64);
    ck_assert_int_eq(ckh_file_pread_all(f, got, 64, 3000000), CKH_ETRUNCATED);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "a", "/ckpt/latest"), 0);
    char target[16];
    ck_assert_int_eq(ckh_fs_readlink(fs, "/ckpt/latest", target, sizeof target), 1);
    ck_assert_str_eq(target, "a");
    ck_assert_int_eq(ckh_fs_stat(fs, "/ckpt/latest", &st), 0);
    ck_assert_int_eq(st.type, CKH_FT_SYMLINK);
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_listdir(fs, "/ckpt", &l), 0);
    ck_assert_uint_eq(l.count, 3);
    ck_assert_str_eq(l.entries[0].name, "a");
    ck_assert_str_eq(l.entries[1].name, "latest");
    ck_assert_str_eq(l.entries[2].name, "sub");
    ck_assert_int_eq(l.entries[2].type, CKH_FT_DIR);
    ckh_fs_listing_free(&l);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/ckpt"), -ENOTEMPTY);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/ckpt/latest"), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/../etc/passwd", CKH_O_RDONLY, &f), CKH_EESCAPE);
    /* Symlinks stay inside the root: an absolute target is rooted (and
     * read back as written), ".." in a relative one is refused. */
    ck_assert_int_eq(ckh_fs_symlink(fs, "/etc", "/escape"), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/escape/hostname", CKH_O_RDONLY, &f), -ENOENT);
    char t2[64];
    ck_assert_int_eq(ckh_fs_readlink(fs, "/escape", t2, sizeof t2), 4);
    ck_assert_str_eq(t2, "/etc");
    ck_assert_int_eq(ckh_fs_symlink(fs, "/ckpt/a", "/abs"), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/abs", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "../../etc", "/ckpt/up"), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_open(fs, "/x", 0x3, &f), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_open(NULL, "/x", 0, &f), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_open(fs, "/missing/x", CKH_O_RDONLY, &f), -ENOENT);
    ck_assert(ckh_fs_exists(fs, "/ckpt/a"));
    ck_assert(!ckh_fs_exists(fs, "/ckpt/b"));
    ckh_posix_fs_destroy(fs);
    rm_tmp();
}
END_TEST

START_TEST(test_posix_env)
{
    make_tmp();
    struct ckh_env *env;
    ck_assert_int_eq(ckh_posix_env_create("/nonexistent/dir", 1, "n", &env), -ENOENT);
    ck_assert_int_eq(ckh_posix_env_create(tmpdir, 1, "trainer_0", &env), 0);
    ck_assert_str_eq(ckh_node_name(env->node), "trainer_0");
    uint64_t a = ckh_rand_stream_seed(env->rand, "data");
    ck_assert_uint_eq(a, ckh_rand_stream_seed(env->rand, "data"));
    ck_assert_uint_ne(a, ckh_rand_stream_seed(env->rand, "dropout"));
    uint64_t t0 = ckh_clock_now_ns(env->clock);
    ck_assert_int_eq(ckh_clock_sleep_ns(env->clock, 1000), 0);
    ck_assert_uint_ge(ckh_clock_now_ns(env->clock), t0);
    /* Without collectives the job is rank 0 of 1 and collectives are local. */
    ck_assert_int_eq(ckh_coll_rank(env->coll), 0);
    ck_assert_int_eq(ckh_coll_world_size(env->coll), 1);
    double v = 2.5;
    ck_assert_int_eq(ckh_coll_allreduce(env->coll, &v, 1, CKH_DT_F64, CKH_RED_SUM, 0), 0);
    ck_assert(v == 2.5);
    ck_assert_int_eq(ckh_coll_barrier(env->coll, 0), 0);
    ck_assert_int_eq(ckh_coll_send(env->coll, &v, 8, 0, 0, 0), CKH_EINVAL);
    ckh_posix_env_destroy(env);
    rm_tmp();
}
END_TEST

/* ckh_errf: the one message formatter returns the code it is given and
 * cuts a long message short, NUL-terminated. */
START_TEST(test_errf)
{
    char buf[8];
    ck_assert_int_eq(ckh_errf(buf, sizeof buf, CKH_EINVAL, "line %d: %s", 12, "bad"), CKH_EINVAL);
    ck_assert_str_eq(buf, "line 12");
    ck_assert_int_eq(ckh_errf(NULL, 0, -EIO, "dropped"), -EIO);
}
END_TEST

/* CKH_ASSERT holds in release builds: a false invariant aborts. */
START_TEST(test_assert_aborts)
{
    volatile int heap_ok = 0;
    CKH_ASSERT(heap_ok == 1);
}
END_TEST

static Suite *platform_suite(void)
{
    Suite *s = suite_create("platform");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_err_table);
    tcase_add_test(tc, test_errf);
    /* The abort must end a forked test process, not the whole suite (as it
     * would under valgrind's CK_FORK=no). */
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode == NULL || strcmp(fork_mode, "no") != 0)
        tcase_add_test_raise_signal(tc, test_assert_aborts, SIGABRT);
    tcase_add_test(tc, test_rng_determinism);
    tcase_add_test(tc, test_rng_uniform);
    tcase_add_test(tc, test_hash_and_crc);
    tcase_add_test(tc, test_crc_long_buffers);
    tcase_add_test(tc, test_gen_random_access);
    tcase_add_test(tc, test_paths);
    tcase_add_test(tc, test_op_names);
    tcase_add_test(tc, test_posix_fs);
    tcase_add_test(tc, test_posix_env);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(platform_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
