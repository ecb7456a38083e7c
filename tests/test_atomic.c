/* Tests for reference/atomic_save.c and reference/atomic_dir.c: round
 * trips and names on a real directory (POSIX env), retention and leftover
 * cleanup, several savers side by side, a machine crash at every
 * filesystem operation of a series of saves in the simulator (the pointer
 * always names a complete checkpoint, retention keeps what it promised,
 * the next save works), and the atomic defects caught by the same checks. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/atomic.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "ckh/sim.h"
#include "ckh/simfs.h"

static char tmpdir[256];
static struct ckh_env *penv;

static void posix_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ckh_atomic_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ck_assert_int_eq(ckh_posix_env_create(tmpdir, 7, "trainer_0", &penv), 0);
}

static void posix_teardown(void)
{
    ckh_posix_env_destroy(penv);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static int count_entries(struct ckh_fs *fs, const char *dir, const char *needle)
{
    struct ckh_listing l = {0};
    ck_assert_int_eq(ckh_fs_listdir(fs, dir, &l), 0);
    int n = 0;
    for (size_t i = 0; i < l.count; i++)
        n += strstr(l.entries[i].name, needle) != NULL;
    ckh_fs_listing_free(&l);
    return n;
}

static void expect_content(struct ckh_fs *fs, const char *path, const char *want)
{
    void *buf = NULL;
    size_t n = 0;
    ck_assert_int_eq(ckh_atomic_read(fs, NULL, path, &buf, &n), 0);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert(memcmp(buf, want, n) == 0);
    free(buf);
}

START_TEST(test_save_roundtrip_and_stale)
{
    struct ckh_atomic a;
    ck_assert_int_eq(ckh_atomic_init(&a, penv, NULL), 0);
    ck_assert_int_eq(ckh_atomic_save(&a, "/f.bin", "hello", 5), 0);
    expect_content(penv->fs, "/f.bin", "hello");
    ck_assert_int_eq(ckh_atomic_save(&a, "/f.bin", "world!", 6), 0);
    expect_content(penv->fs, "/f.bin", "world!");
    ck_assert_int_eq(count_entries(penv->fs, "/", ".tmp."), 0);
    /* A stale temporary of this node (a crash between create and rename). */
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(penv->fs, "/f.bin.tmp.trainer_0.00000000deadbeef",
                                 CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(count_entries(penv->fs, "/", ".tmp."), 1);
    ck_assert_int_eq(ckh_atomic_save(&a, "/f.bin", "again", 5), 0);
    ck_assert_int_eq(count_entries(penv->fs, "/", ".tmp."), 0);
    /* Bad input. */
    ck_assert_int_eq(ckh_atomic_save(&a, "relative", "x", 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_save(&a, "/f.bin", NULL, 3), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_save(NULL, "/f.bin", "x", 1), CKH_EINVAL);
    ck_assert_int_lt(ckh_atomic_save(&a, "/missing/f.bin", "x", 1), 0);
    ck_assert_int_eq(ckh_atomic_init(NULL, penv, NULL), CKH_EINVAL);
}
END_TEST

/* A writer that, half-way, lets a second writer save the same path (as a
 * concurrent rank would). */
struct nested {
    struct ckh_atomic *other; /* the second writer */
    int inner_rc;             /* its result */
};

static int nested_writer(void *ctx, struct ckh_file *f)
{
    struct nested *n = ctx;
    int rc = ckh_file_write_all(f, "outer-", 6);
    if (rc)
        return rc;
    n->inner_rc = ckh_atomic_save(n->other, "/shared.bin", "inner", 5);
    return ckh_file_write_all(f, "done", 4);
}

START_TEST(test_two_writers_and_fixed_temp_name)
{
    struct ckh_env *env2;
    ck_assert_int_eq(ckh_posix_env_create(tmpdir, 7, "trainer_1", &env2), 0);
    for (int defect = 0; defect < 2; defect++) {
        struct ckh_defect_set d = {0};
        if (defect)
            ckh_defect_enable(&d, CKH_DEFECT_FIXED_TEMP_NAME);
        struct ckh_atomic a, b;
        ckh_atomic_init(&a, penv, &d);
        ckh_atomic_init(&b, env2, &d);
        struct nested n = {&b, -1};
        int rc = ckh_atomic_save_with(&a, "/shared.bin", nested_writer, &n);
        ck_assert_int_eq(n.inner_rc, 0);
        if (!defect) {
            ck_assert_int_eq(rc, 0);
            expect_content(penv->fs, "/shared.bin", "outer-done");
        } else {
            /* The inner writer renamed the shared temporary away. */
            ck_assert_int_ne(rc, 0);
        }
        ckh_fs_unlink(penv->fs, "/shared.bin");
    }
    ckh_posix_env_destroy(env2);
}
END_TEST

static struct ckh_adir *make_saver(struct ckh_env *env, const char *name, int keep,
                                   const struct ckh_defect_set *d)
{
    struct ckh_adir_config c = {.output_dir = "/out", .is_master = true, .name = name,
                                .keep_last = keep, .strategy = CKH_ADIR_SYNC_ANY, .defects = d};
    struct ckh_adir *s = NULL;
    ck_assert_int_eq(ckh_adir_create(env, &c, &s), 0);
    return s;
}

static void save_one(struct ckh_adir *s, struct ckh_env *env, bool force, const char *content,
                     char *folder)
{
    struct ckh_atomic a;
    ckh_atomic_init(&a, env, NULL);
    ck_assert_int_eq(ckh_adir_prepare(s, force, folder, CKH_PATH_MAX), 0);
    char p[CKH_PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/data", folder);
    ck_assert_int_eq(ckh_atomic_save(&a, p, content, strlen(content)), 0);
    ck_assert_int_eq(ckh_adir_commit(s, folder), 0);
}

START_TEST(test_adir_names_and_retention)
{
    static const int keeps[] = {1, 2, -1};
    int keep = keeps[_i];
    struct ckh_adir *s = make_saver(penv, "AtomicDirectory", keep, NULL);
    char folder[CKH_PATH_MAX + 1], latest[CKH_PATH_MAX + 1];
    ck_assert_int_eq(ckh_adir_latest(s, latest, sizeof latest), CKH_ENOTFOUND);
    save_one(s, penv, false, "c1", folder);
    ck_assert_str_eq(folder, "/out/AtomicDirectory_checkpoint_1");
    save_one(s, penv, true, "c2", folder);
    ck_assert_str_eq(folder, "/out/AtomicDirectory_checkpoint_2_force");
    for (int i = 3; i <= 5; i++) {
        char c[8];
        snprintf(c, sizeof c, "c%d", i);
        save_one(s, penv, false, c, folder);
    }
    ck_assert_str_eq(folder, "/out/AtomicDirectory_checkpoint_5");
    ck_assert_int_eq(ckh_adir_latest(s, latest, sizeof latest), 0);
    ck_assert_str_eq(latest, "/out/AtomicDirectory_checkpoint_5");
    char target[CKH_PATH_MAX];
    ck_assert_int_gt(ckh_fs_readlink(penv->fs, "/out/AtomicDirectory.latest_checkpoint", target,
                                     sizeof target), 0);
    ck_assert_str_eq(target, "/out/AtomicDirectory_checkpoint_5");
    char **names;
    size_t n;
    ck_assert_int_eq(ckh_adir_list(s, &names, &n), 0);
    /* Non-forced kept: min(keep, 4); the forced one always. */
    size_t want = (keep < 0 ? 4 : (size_t)keep) + 1;
    ck_assert_uint_eq(n, want);
    ck_assert_str_eq(names[n - 1], "AtomicDirectory_checkpoint_5");
    bool has_force = false;
    for (size_t i = 0; i < n; i++)
        has_force |= strcmp(names[i], "AtomicDirectory_checkpoint_2_force") == 0;
    ck_assert(has_force);
    ckh_adir_list_free(s, names, n);
    ck_assert_int_eq(count_entries(penv->fs, "/out", ".tmp."), 0);
    ckh_adir_destroy(s);
}
END_TEST

START_TEST(test_adir_leftovers_and_side_by_side)
{
    struct ckh_adir *a = make_saver(penv, "model", 2, NULL);
    struct ckh_adir *b = make_saver(penv, "model_ema", -1, NULL);
    char folder[CKH_PATH_MAX + 1], latest[CKH_PATH_MAX + 1];
    save_one(a, penv, false, "a1", folder);
    save_one(b, penv, false, "b1", folder);
    ck_assert_str_eq(folder, "/out/model_ema_checkpoint_1");
    /* What a crash leaves: an incomplete folder and a temporary link. */
    ck_assert_int_eq(ckh_fs_mkdir(penv->fs, "/out/model_checkpoint_2"), 0);
    ck_assert_int_eq(ckh_fs_symlink(penv->fs, "/out/model_checkpoint_2",
                                    "/out/model.latest_checkpoint.tmp.trainer_0.0000000000000001"),
                     0);
    ck_assert_int_eq(ckh_adir_latest(a, latest, sizeof latest), 0);
    ck_assert_str_eq(latest, "/out/model_checkpoint_1");
    save_one(a, penv, false, "a2", folder);
    ck_assert_str_eq(folder, "/out/model_checkpoint_3");
    ck_assert(!ckh_fs_exists(penv->fs, "/out/model_checkpoint_2"));
    ck_assert_int_eq(count_entries(penv->fs, "/out", ".tmp."), 0);
    ck_assert_int_eq(ckh_adir_latest(b, latest, sizeof latest), 0);
    ck_assert_str_eq(latest, "/out/model_ema_checkpoint_1");
    expect_content(penv->fs, "/out/model_ema_checkpoint_1/data", "b1");
    /* Bad input. */
    ck_assert_int_eq(ckh_adir_commit(a, "/out/model_ema_checkpoint_1"), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_prepare(a, false, NULL, 10), CKH_EINVAL);
    struct ckh_adir_config bad = {.output_dir = "/out", .keep_last = 0};
    struct ckh_adir *x = NULL;
    ck_assert_int_eq(ckh_adir_create(penv, &bad, &x), CKH_EINVAL);
    bad.keep_last = -1;
    bad.name = "a/b";
    ck_assert_int_eq(ckh_adir_create(penv, &bad, &x), CKH_EINVAL);
    ckh_adir_destroy(a);
    ckh_adir_destroy(b);
}
END_TEST

/* ---- crash sweep in the simulator ---- */

struct crash_job {
    int keep;                    /* keep_last */
    struct ckh_defect_set d;     /* defects */
    int saves;                   /* saves to make */
    int done;                    /* saves completed (outside node memory) */
    int rc;                      /* node result */
};

static int crash_main(struct ckh_env *env, void *arg)
{
    struct crash_job *j = arg;
    struct ckh_adir_config c = {.output_dir = "/out", .is_master = true, .name = "ck",
                                .keep_last = j->keep, .strategy = CKH_ADIR_SYNC_ALL,
                                .defects = &j->d};
    struct ckh_adir *s = NULL;
    int rc = ckh_adir_create(env, &c, &s);
    struct ckh_atomic a;
    ckh_atomic_init(&a, env, &j->d);
    for (int i = 0; i < j->saves && !rc; i++) {
        char folder[CKH_PATH_MAX + 1], p[CKH_PATH_MAX + 16], content[64];
        rc = ckh_adir_prepare(s, false, folder, sizeof folder);
        if (rc)
            break;
        snprintf(p, sizeof p, "%s/data", folder);
        int len = snprintf(content, sizeof content, "checkpoint %d with some payload", j->done + 1);
        rc = ckh_atomic_save(&a, p, content, (size_t)len);
        if (!rc)
            rc = ckh_adir_commit(s, folder);
        if (!rc)
            j->done++;
    }
    ckh_adir_destroy(s);
    j->rc = rc;
    return rc;
}

/* Checks the disk at rest: 0 when the pointer names a complete checkpoint
 * (or none was ever committed) and retention kept what it promised. */
static int check_disk(struct ckh_simfs *disk, const struct crash_job *j)
{
    struct ckh_env env = {.fs = ckh_simfs_fs(disk), .alloc = NULL};
    struct ckh_adir_config c = {.output_dir = "/out", .is_master = true, .name = "ck",
                                .keep_last = j->keep, .strategy = CKH_ADIR_SYNC_ALL};
    struct ckh_adir *s = NULL;
    if (ckh_adir_create(&env, &c, &s))
        return 1;
    char latest[CKH_PATH_MAX + 1];
    int bad = 0;
    int rc = ckh_adir_latest(s, latest, sizeof latest);
    if (rc == CKH_ENOTFOUND) {
        bad = j->done > 0; /* a committed save was lost */
    } else if (rc) {
        bad = 2;
    } else {
        char p[CKH_PATH_MAX + 16];
        snprintf(p, sizeof p, "%s/data", latest);
        void *buf = NULL;
        size_t n = 0;
        if (ckh_atomic_read(env.fs, NULL, p, &buf, &n)) {
            bad = 3;
        } else {
            int num = 0;
            char want[64];
            if (sscanf(latest, "/out/ck_checkpoint_%d", &num) != 1)
                bad = 4;
            (void)num;
            /* The content names its own save count; it must be complete. */
            int k = 0;
            char text[64] = {0};
            memcpy(text, buf, n < sizeof text - 1 ? n : sizeof text - 1);
            if (n < 11 || sscanf(text, "checkpoint %d", &k) != 1)
                bad = 5;
            snprintf(want, sizeof want, "checkpoint %d with some payload", k);
            if (!bad && (n != strlen(want) || memcmp(buf, want, n) != 0))
                bad = 6;
            if (!bad && k < j->done)
                bad = 7; /* a completed save was rolled back */
            free(buf);
        }
        char **names;
        size_t cnt;
        if (!bad && ckh_adir_list(s, &names, &cnt) == 0) {
            size_t promised = j->keep < 0 ? (size_t)j->done : (size_t)j->keep;
            if (promised > (size_t)j->done)
                promised = (size_t)j->done;
            if (cnt < promised)
                bad = 8;
            ckh_adir_list_free(s, names, cnt);
        }
    }
    ckh_adir_destroy(s);
    return bad;
}

/* Runs the job with a machine crash at op k of node 0; then checks the
 * disk and that a restarted node saves again. Returns -1 when op k was
 * never reached, else the check's verdict (0: good). */
static int crash_at(int keep, const struct ckh_defect_set *d, uint64_t k, uint64_t seed)
{
    struct ckh_sim_config sc = {.seed = seed};
    struct ckh_sim *sim;
    ck_assert_int_eq(ckh_sim_create(&sc, &sim), 0);
    struct ckh_simfs_config dc = {.name = "disk", .model = CKH_CRASH_POSIX_WEAK, .sector_bytes = 512};
    struct ckh_simfs *disk;
    ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, &disk), 0);
    struct ckh_simfs_mount m = {"/", disk};
    struct crash_job j = {.keep = keep, .d = *d, .saves = 3};
    struct ckh_node_config nc = {.name = "trainer_0", .main = crash_main, .arg = &j, .mounts = &m,
                                 .nmounts = 1, .rank = -1};
    int id;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, &id), 0);
    struct ckh_fault_rule r = {.node = id, .kind = -1, .epoch = -1, .step = -1, .nth = k,
                               .action = {.kind = CKH_FAULT_CRASH_BEFORE}};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, id, &st), 0);
    int verdict = -1;
    if (st.state == CKH_NODE_KILLED) {
        verdict = check_disk(disk, &j);
        /* The next incarnation must save on top of whatever is there. */
        ckh_sim_clear_faults(sim);
        ck_assert_int_eq(ckh_sim_restart(sim, id), 0);
        j.saves = 1;
        ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
        if (!verdict && j.rc != 0)
            verdict = 9;
        if (!verdict)
            verdict = check_disk(disk, &j);
    } else {
        ck_assert_int_eq(j.rc, 0);
    }
    ckh_sim_destroy(sim);
    return verdict;
}

START_TEST(test_crash_at_every_op)
{
    static const int keeps[] = {1, 2, -1};
    int keep = keeps[_i % 3];
    struct ckh_defect_set none = {0};
    uint64_t k;
    for (k = 1; k < 2000; k++) {
        int v = crash_at(keep, &none, k, 100 + k);
        if (v < 0)
            break;
        ck_assert_msg(v == 0, "keep_last %d: crash before op %llu gives verdict %d", keep,
                      (unsigned long long)k, v);
    }
    ck_assert_uint_gt(k, 20); /* the sweep covered the saves */
}
END_TEST

START_TEST(test_atomic_defects_caught)
{
    static const enum ckh_defect defects[] = {CKH_DEFECT_NO_FSYNC, CKH_DEFECT_OVERWRITE_IN_PLACE,
                                              CKH_DEFECT_POINTER_BEFORE_DATA,
                                              CKH_DEFECT_RETENTION_DELETES_LIVE};
    struct ckh_defect_set d = {0};
    ckh_defect_enable(&d, defects[_i]);
    int caught = 0;
    for (uint64_t k = 1; k < 2000 && !caught; k++) {
        int v = crash_at(1, &d, k, 100 + k);
        if (v < 0)
            break;
        caught = v > 0;
    }
    ck_assert_msg(caught, "defect %s not caught", ckh_defect_name(defects[_i]));
}
END_TEST

START_TEST(test_defect_table)
{
    ck_assert_int_eq(ckh_defect_from_name("no-fsync"), CKH_DEFECT_NO_FSYNC);
    ck_assert_int_eq(ckh_defect_from_name("nope"), CKH_ENOTFOUND);
    for (int dd = 0; dd < CKH_DEFECT__COUNT; dd++) {
        ck_assert_ptr_nonnull(ckh_defect_name(dd));
        ck_assert_ptr_nonnull(ckh_defect_component(dd));
        ck_assert_int_gt(strlen(ckh_defect_desc(dd)), 10);
        ck_assert_int_eq(ckh_defect_from_name(ckh_defect_name(dd)), dd);
    }
    struct ckh_defect_set s = {0};
    char msg[128];
    ck_assert_int_eq(ckh_defect_parse(&s, "no-fsync,rng-not-saved", msg, sizeof msg), 0);
    ck_assert(ckh_defect_on(&s, CKH_DEFECT_NO_FSYNC));
    ck_assert(ckh_defect_on(&s, CKH_DEFECT_RNG_NOT_SAVED));
    ck_assert(!ckh_defect_on(&s, CKH_DEFECT_NO_DEVICE_MAP));
    ck_assert_int_eq(ckh_defect_parse(&s, "no-fsync,bogus", msg, sizeof msg), CKH_ENOTFOUND);
    ck_assert_str_eq(msg, "unknown defect 'bogus'");
    ck_assert(!ckh_defect_on(NULL, CKH_DEFECT_NO_FSYNC));
    ck_assert_int_eq(ckh_defect_enable(&s, CKH_DEFECT__COUNT), CKH_EINVAL);
}
END_TEST

static Suite *atomic_suite(void)
{
    Suite *s = suite_create("atomic");
    TCase *tc = tcase_create("posix");
    tcase_add_checked_fixture(tc, posix_setup, posix_teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_save_roundtrip_and_stale);
    tcase_add_test(tc, test_two_writers_and_fixed_temp_name);
    tcase_add_loop_test(tc, test_adir_names_and_retention, 0, 3);
    tcase_add_test(tc, test_adir_leftovers_and_side_by_side);
    tcase_add_test(tc, test_defect_table);
    suite_add_tcase(s, tc);
    TCase *tc2 = tcase_create("crash");
    tcase_set_timeout(tc2, 120);
    tcase_add_loop_test(tc2, test_crash_at_every_op, 0, 3);
    tcase_add_loop_test(tc2, test_atomic_defects_caught, 0, 4);
    suite_add_tcase(s, tc2);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(atomic_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
