/* A node's filesystem on the real platform (harness/exec/mpi_fs.h): one
 * real folder per disk, mounted at the disk's path, the longest prefix
 * winning, as the simulator maps a node's view. What the real platform's
 * programs see through it is checked here on plain folders: which folder
 * each path lands in, renames and absolute links across disks refused
 * with EXDEV as the simulator refuses them, paths under no disk absent,
 * links read back with their mount's prefix, and the refusals of a bad
 * mount table; then the run folder's paths. Nothing here is about time. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/fs.h"
#include "exec/mpi_fs.h"
#include "exec/tmpdir.h"
#include "model/scenario.h"
#include "support/skip.h"

static char base[128];
static char d_root[256], d_local[256], d_deep[256];

static void mkdir_at(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", base, name);
    ck_assert_int_eq(mkdir(out, 0755), 0);
}

static void setup(void)
{
    snprintf(base, sizeof base, "/tmp/ckh-test-real-fs-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
    mkdir_at(d_root, sizeof d_root, "root");
    mkdir_at(d_local, sizeof d_local, "local");
    mkdir_at(d_deep, sizeof d_deep, "deep");
}

static void teardown(void)
{
    ck_assert_int_eq(ckh_tmp_remove(base), 0);
}

static bool real_exists(const char *dir, const char *name)
{
    char p[600];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

static void create_file(struct ckh_fs *fs, const char *path, const char *text)
{
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, text, strlen(text)), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
}

/* Three disks: "/", "/local" and "/local/deep", given in no order. */
static struct ckh_fs *three(void)
{
    const struct ckh__real_mount m[] = {
        {.prefix = "/local/deep", .dir = d_deep},
        {.prefix = "/", .dir = d_root},
        {.prefix = "/local", .dir = d_local},
    };
    struct ckh_fs *fs = NULL;
    ck_assert_int_eq(ckh__real_fs_create(m, 3, &fs), 0);
    return fs;
}

START_TEST(test_longest_prefix_wins)
{
    struct ckh_fs *fs = three();
    create_file(fs, "/a", "root");
    create_file(fs, "/localx", "root too"); /* a prefix of a name is not its folder */
    create_file(fs, "/local/b", "local");
    create_file(fs, "/local/deep/c", "deep");
    ck_assert(real_exists(d_root, "a"));
    ck_assert(real_exists(d_root, "localx"));
    ck_assert(real_exists(d_local, "b"));
    ck_assert(real_exists(d_deep, "c"));
    ck_assert(!real_exists(d_local, "deep"));

    /* the mount point itself is its disk's root folder */
    struct ckh_stat st;
    ck_assert_int_eq(ckh_fs_stat(fs, "/local", &st), 0);
    ck_assert_int_eq(st.type, CKH_FT_DIR);
    ck_assert_int_eq(ckh_fs_stat(fs, "/local/b", &st), 0);
    ck_assert_int_eq(st.type, CKH_FT_FILE);
    ck_assert_uint_eq(st.size_bytes, 5);
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_listdir(fs, "/local/deep", &l), 0);
    ck_assert_uint_eq(l.count, 1);
    ck_assert_str_eq(l.entries[0].name, "c");
    ckh_fs_listing_free(&l);

    /* folders and removals go to the disk that holds the path */
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/local/sub"), 0);
    ck_assert(real_exists(d_local, "sub"));
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/local/sub"), 0);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/local/sub"), 0);
    ck_assert(!real_exists(d_local, "sub"));
    ck_assert_int_eq(ckh_fs_unlink(fs, "/local/deep/c"), 0);
    ck_assert(!real_exists(d_deep, "c"));
    ck_assert_int_eq(ckh_fs_unlink(fs, "/local/deep/c"), -ENOENT);

    /* renames: within a disk, never across */
    ck_assert_int_eq(ckh_fs_rename(fs, "/local/b", "/local/b2"), 0);
    ck_assert(real_exists(d_local, "b2"));
    ck_assert_int_eq(ckh_fs_rename(fs, "/local/b2", "/b2"), -EXDEV);
    ck_assert_int_eq(ckh_fs_rename(fs, "/a", "/local/deep/a"), -EXDEV);
    ck_assert(real_exists(d_local, "b2"));
    ck_assert(real_exists(d_root, "a"));
    /* a bad path is refused before any disk is asked */
    ck_assert_int_eq(ckh_fs_rename(fs, "relative", "/x"), CKH_EINVAL);
    ck_assert_int_eq(ckh_fs_rename(fs, "/a", "/x/../y"), CKH_EESCAPE);
    ck_assert_int_eq(ckh_fs_stat(fs, "//a", &st), CKH_EINVAL);
    ckh__real_fs_destroy(fs);
}
END_TEST

START_TEST(test_no_disk_holds_it)
{
    const struct ckh__real_mount m[] = {{.prefix = "/data", .dir = d_local}, {.prefix = "/scratch", .dir = d_deep}};
    struct ckh_fs *fs = NULL;
    ck_assert_int_eq(ckh__real_fs_create(m, 2, &fs), 0);
    struct ckh_file *f = NULL;
    struct ckh_stat st;
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_open(fs, "/other/x", CKH_O_WRONLY | CKH_O_CREAT, &f), -ENOENT);
    ck_assert_int_eq(ckh_fs_stat(fs, "/", &st), -ENOENT);
    ck_assert_int_eq(ckh_fs_listdir(fs, "/dat", &l), -ENOENT);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/datax"), -ENOENT);
    ck_assert_int_eq(ckh_fs_rename(fs, "/data/x", "/nowhere/x"), -ENOENT);
    ck_assert_int_eq(ckh_fs_rename(fs, "/nowhere/x", "/data/x"), -ENOENT);
    ck_assert_int_eq(ckh_fs_stat(fs, "/data", &st), 0);
    ck_assert_int_eq(ckh_fs_stat(fs, "/scratch", &st), 0);
    ck_assert_int_eq(ckh_fs_rename(fs, "/data", "/scratch"), -EXDEV);
    ckh__real_fs_destroy(fs);
}
END_TEST

START_TEST(test_links)
{
    struct ckh_fs *fs = three();
    char buf[256];
    create_file(fs, "/local/target", "t");
    /* a relative target is the disk's business */
    ck_assert_int_eq(ckh_fs_symlink(fs, "target", "/local/rel"), 0);
    ck_assert_int_eq(ckh_fs_readlink(fs, "/local/rel", buf, sizeof buf), 6);
    ck_assert_str_eq(buf, "target");
    /* an absolute target on the link's own disk reads back as written */
    ck_assert_int_eq(ckh_fs_symlink(fs, "/local/target", "/local/abs"), 0);
    ck_assert_int_eq(ckh_fs_readlink(fs, "/local/abs", buf, sizeof buf), 13);
    ck_assert_str_eq(buf, "/local/target");
    /* to the mount point itself */
    ck_assert_int_eq(ckh_fs_symlink(fs, "/local", "/local/top"), 0);
    ck_assert_int_eq(ckh_fs_readlink(fs, "/local/top", buf, sizeof buf), 6);
    ck_assert_str_eq(buf, "/local");
    /* to the root of the "/" disk: "/", never the folder that holds it */
    ck_assert_int_eq(ckh_fs_symlink(fs, "/", "/up"), 0);
    ck_assert_int_eq(ckh_fs_readlink(fs, "/up", buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "/");
    /* on the "/" disk no prefix is added */
    ck_assert_int_eq(ckh_fs_symlink(fs, "/a", "/ra"), 0);
    ck_assert_int_eq(ckh_fs_readlink(fs, "/ra", buf, sizeof buf), 2);
    ck_assert_str_eq(buf, "/a");
    /* a buffer too small gets the start, NUL-terminated; the length is whole */
    ck_assert_int_eq(ckh_fs_readlink(fs, "/local/abs", buf, 4), 13);
    ck_assert_str_eq(buf, "/lo");
    ck_assert_int_eq(ckh_fs_readlink(fs, "/local/abs", buf, 9), 13);
    ck_assert_str_eq(buf, "/local/t");
    /* across disks: EXDEV; to a path under no disk would need one */
    ck_assert_int_eq(ckh_fs_symlink(fs, "/local/deep/x", "/local/cross"), -EXDEV);
    ck_assert_int_eq(ckh_fs_symlink(fs, "/local/target", "/cross"), -EXDEV);
    ck_assert(!real_exists(d_local, "cross"));
    ck_assert_int_eq(ckh_fs_readlink(fs, "/local/missing", buf, sizeof buf), -ENOENT);
    ckh__real_fs_destroy(fs);

    const struct ckh__real_mount m[] = {{.prefix = "/data", .dir = d_local}};
    ck_assert_int_eq(ckh__real_fs_create(m, 1, &fs), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "/elsewhere/x", "/data/l"), -ENOENT);
    ckh__real_fs_destroy(fs);
}
END_TEST

START_TEST(test_bad_mount_tables)
{
    struct ckh_fs *fs = NULL;
    const struct ckh__real_mount one[] = {{.prefix = "/", .dir = d_root}};
    ck_assert_int_eq(ckh__real_fs_create(NULL, 1, &fs), CKH_EINVAL);
    ck_assert_int_eq(ckh__real_fs_create(one, 0, &fs), CKH_EINVAL);
    ck_assert_int_eq(ckh__real_fs_create(one, 1, NULL), CKH_EINVAL);
    struct ckh__real_mount many[17];
    for (size_t i = 0; i < 17; i++)
        many[i] = one[0];
    ck_assert_int_eq(ckh__real_fs_create(many, 17, &fs), CKH_EINVAL);
    ck_assert_ptr_null(fs);

    const struct ckh__real_mount bad[][2] = {
        {{.prefix = "/", .dir = d_root}, {.prefix = "data", .dir = d_local}},      /* relative */
        {{.prefix = "/", .dir = d_root}, {.prefix = NULL, .dir = d_local}},        /* none */
        {{.prefix = "/", .dir = d_root}, {.prefix = "/a/../b", .dir = d_local}},   /* .. */
        {{.prefix = "/", .dir = d_root}, {.prefix = "/data", .dir = NULL}},        /* no folder */
        {{.prefix = "/data/", .dir = d_root}, {.prefix = "/", .dir = d_local}},    /* a trailing '/' */
        {{.prefix = "/data", .dir = d_root}, {.prefix = "/data", .dir = d_local}}, /* the same place twice */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(ckh__real_fs_create(bad[i], 2, &fs) == CKH_EINVAL, "table %zu accepted", i);
        ck_assert_ptr_null(fs);
    }
    /* a folder that is not there */
    char gone[300];
    snprintf(gone, sizeof gone, "%s/gone", base);
    const struct ckh__real_mount missing[] = {{.prefix = "/", .dir = d_root}, {.prefix = "/g", .dir = gone}};
    int rc = ckh__real_fs_create(missing, 2, &fs);
    ck_assert_msg(rc < 0 && rc != CKH_ENOMEM, "rc %d", rc);
    ck_assert_ptr_null(fs);
    ckh__real_fs_destroy(NULL);
}
END_TEST

START_TEST(test_run_folder_paths)
{
    char buf[64];
    ck_assert_int_eq(ckh__real_path(buf, sizeof buf, "/r", "results", "rank_0", 2), 0);
    ck_assert_str_eq(buf, "/r/results/rank_0.2.jsonl");
    ck_assert_int_eq(ckh__real_path(buf, sizeof buf, "/r", "status", "rank_1", 1), 0);
    ck_assert_str_eq(buf, "/r/status/rank_1.1");
    ck_assert_int_eq(ckh__real_path(buf, 12, "/r", "status", "rank_1", 1), -ENAMETOOLONG);

    struct ckh_scn_disk disks[2] = {
        {.name = "shared", .mount = "/", .shared = true},
        {.name = "scratch", .mount = "/scratch", .shared = false},
    };
    struct ckh_scenario sc;
    memset(&sc, 0, sizeof sc);
    sc.job.disks = disks;
    sc.job.ndisks = 2;
    ck_assert_int_eq(ckh__real_disk_dir(buf, sizeof buf, "/r", "disks", &sc, 0, "rank_3"), 0);
    ck_assert_str_eq(buf, "/r/disks/shared");
    ck_assert_int_eq(ckh__real_disk_dir(buf, sizeof buf, "/r", "mnt", &sc, 1, "rank_3"), 0);
    ck_assert_str_eq(buf, "/r/mnt/scratch.rank_3");
    ck_assert_int_eq(ckh__real_disk_dir(buf, 10, "/r", "disks", &sc, 1, "rank_3"), -ENAMETOOLONG);
    ck_assert_int_eq(ckh__real_disk_dir(buf, 10, "/r", "disks", &sc, 0, "rank_3"), -ENAMETOOLONG);

    /* a node's view over the run folder's disk folders */
    char d1[300], d2[300];
    snprintf(d1, sizeof d1, "%s/disks", base);
    ck_assert_int_eq(mkdir(d1, 0755), 0);
    snprintf(d1, sizeof d1, "%s/disks/shared", base);
    ck_assert_int_eq(mkdir(d1, 0755), 0);
    snprintf(d2, sizeof d2, "%s/disks/scratch.rank_3", base);
    ck_assert_int_eq(mkdir(d2, 0755), 0);
    struct ckh_fs *fs = NULL;
    ck_assert_int_eq(ckh__real_node_fs(base, &sc, "rank_3", false, &fs), 0);
    create_file(fs, "/scratch/x", "x");
    create_file(fs, "/y", "y");
    ck_assert(real_exists(d2, "x"));
    ck_assert(real_exists(d1, "y"));
    ckh__real_fs_destroy(fs);
    /* another node's local disk folder is not there; ckhfs mounts neither */
    fs = NULL;
    ck_assert_int_lt(ckh__real_node_fs(base, &sc, "rank_4", false, &fs), 0);
    ck_assert_ptr_null(fs);
    ck_assert_int_lt(ckh__real_node_fs(base, &sc, "rank_3", true, &fs), 0);
    ck_assert_ptr_null(fs);
    /* a run folder path too long for a disk's folder */
    char longdir[PATH_MAX + 16];
    memset(longdir, 'd', sizeof longdir - 1);
    longdir[0] = '/';
    longdir[sizeof longdir - 1] = '\0';
    ck_assert_int_eq(ckh__real_node_fs(longdir, &sc, "rank_3", false, &fs), -ENAMETOOLONG);
    /* no disks at all: no view */
    sc.job.ndisks = 0;
    ck_assert_int_eq(ckh__real_node_fs(base, &sc, "rank_3", false, &fs), CKH_EINVAL);
}
END_TEST

static Suite *real_fs_suite(void)
{
    Suite *s = suite_create("real_fs");
    TCase *tc = tcase_create("fs");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_longest_prefix_wins);
    tcase_add_test(tc, test_no_disk_holds_it);
    tcase_add_test(tc, test_links);
    tcase_add_test(tc, test_bad_mount_tables);
    tcase_add_test(tc, test_run_folder_paths);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(real_fs_suite());
}
