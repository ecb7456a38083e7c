/* Tests for reference/atomic_save.c, reference/atomic_dir.c and
 * reference/saver.c: round trips and names on a real directory (POSIX
 * env), retention and leftover cleanup, several savers side by side, a
 * machine crash at every filesystem operation of a series of saves in the
 * simulator (the pointer always names a complete checkpoint, retention
 * keeps what it promised, the next save works), the atomic defects caught
 * by the same checks; the saver table through its wrappers; multi-rank
 * saves on a shared disk, node-local disks and disks shared by pairs
 * (each view gets folders, files, marker and pointer, from one leader);
 * and node-local crash states (a machine crash of either rank, or a power
 * loss, at every operation): the ranks resume from one checkpoint, complete
 * in every view and no older than any commit that returned 0 (the
 * protocol at the top of reference/atomic_dir.c, V1-V6). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/atomic.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "ckh/saver.h"
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


/* ---- the saver table through its wrappers ---- */

START_TEST(test_saver_ops_wrappers)
{
    const struct ckh_saver_ops *ops = &ckh_atomic_dir_saver_ops;
    ck_assert_str_eq(ops->name, "atomic-dir");
    ck_assert_int_eq(ops->version, CKH_SAVER_ABI_VERSION);
    struct ckh_saver_config cfg = {.output_dir = "/out", .name = "m", .keep_last = 1,
                                   .strategy = CKH_SAVER_SYNC_ANY};
    struct ckh_saver *s = NULL;
    char folder[CKH_PATH_MAX + 1], got[CKH_PATH_MAX + 1], msg[600];
    ck_assert_int_eq(ckh_saver_create(ops, penv, &cfg, &s), 0);
    ck_assert_ptr_eq(s->ops, ops);
    ck_assert_int_eq(ckh_saver_latest(s, got, sizeof got), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_saver_resume(s, got, sizeof got), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_saver_view_leader(s), 0);
    ck_assert_int_eq(ckh_saver_check(ops, penv->fs, &cfg, 0, 1, got, sizeof got, msg, sizeof msg), 0);
    ck_assert_str_eq(got, "");
    ck_assert_msg(strstr(msg, "starts from scratch") != NULL, "%s", msg);
    for (int i = 1; i <= 2; i++) {
        struct ckh_atomic a;
        char p[CKH_PATH_MAX + 16], want[64];
        ck_assert_int_eq(ckh_saver_prepare(s, false, folder, sizeof folder), 0);
        snprintf(want, sizeof want, "/out/m_checkpoint_%d", i);
        ck_assert_str_eq(folder, want);
        ckh_atomic_init(&a, penv, NULL);
        snprintf(p, sizeof p, "%s/data", folder);
        ck_assert_int_eq(ckh_atomic_save(&a, p, "x", 1), 0);
        ck_assert_int_eq(ckh_saver_commit(s, folder), 0);
    }
    ck_assert_int_eq(ckh_saver_latest(s, got, sizeof got), 0);
    ck_assert_str_eq(got, "/out/m_checkpoint_2");
    ck_assert_int_eq(ckh_saver_resume(s, got, sizeof got), 0);
    ck_assert_str_eq(got, "/out/m_checkpoint_2");
    ck_assert(!ckh_fs_exists(penv->fs, "/out/m_checkpoint_1")); /* keep_last 1 */
    ck_assert_int_eq(ckh_saver_check(ops, penv->fs, &cfg, 0, 1, got, sizeof got, msg, sizeof msg), 0);
    ck_assert_str_eq(got, "/out/m_checkpoint_2");
    ck_assert_int_eq(ckh_saver_latest_path(ops, &cfg, got, sizeof got), 0);
    ck_assert_str_eq(got, "/out/m.latest_checkpoint");
    /* A failure leaves its message on the saver. */
    ck_assert_int_eq(ckh_saver_commit(s, "/out/other_checkpoint_1"), CKH_EINVAL);
    ck_assert_msg(strstr(ckh_saver_errmsg(s), "is not a folder of saver 'm'") != NULL, "%s",
                  ckh_saver_errmsg(s));
    /* check names what a restarted rank would refuse. */
    ck_assert_int_eq(ckh_fs_unlink(penv->fs, "/out/m.latest_checkpoint"), 0);
    ck_assert_int_eq(ckh_fs_symlink(penv->fs, "/out/m_checkpoint_9", "/out/m.latest_checkpoint"), 0);
    ck_assert_int_eq(ckh_saver_check(ops, penv->fs, &cfg, 0, 1, got, sizeof got, msg, sizeof msg),
                     CKH_ECORRUPT);
    ck_assert_msg(strstr(msg, "/out/m_checkpoint_9") && strstr(msg, "does not exist"), "%s", msg);
    ck_assert_int_eq(ckh_saver_latest(s, got, sizeof got), CKH_ECORRUPT);
    ckh_saver_destroy(s);
}
END_TEST

/* Optional methods left out, a required one missing, bad arguments. */
START_TEST(test_saver_ops_optional_and_bad_input)
{
    const struct ckh_saver_ops *ops = &ckh_atomic_dir_saver_ops;
    struct ckh_saver_config cfg = {.output_dir = "/out", .name = "m", .keep_last = 1,
                                   .strategy = CKH_SAVER_SYNC_ANY};
    struct ckh_saver *s = NULL;
    char got[CKH_PATH_MAX + 1], msg[600];
    ck_assert_int_eq(ckh_saver_create(ops, penv, &cfg, &s), 0);
    ck_assert_int_eq(ckh_fs_symlink(penv->fs, "/out/m_checkpoint_9", "/out/m.latest_checkpoint"), 0);
    /* Without the optional methods: resume is latest, one shared view. */
    struct ckh_saver_ops bare = *ops;
    bare.resume = NULL;
    bare.view_leader = NULL;
    bare.check = NULL;
    bare.latest_path = NULL;
    const struct ckh_saver_ops *real = s->ops;
    s->ops = &bare;
    ck_assert_int_eq(ckh_saver_resume(s, got, sizeof got), CKH_ECORRUPT);
    ck_assert_int_eq(ckh_saver_view_leader(s), 0);
    ck_assert_int_eq(ckh_saver_check(&bare, penv->fs, &cfg, 0, 1, got, sizeof got, msg, sizeof msg),
                     CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_saver_latest_path(&bare, &cfg, got, sizeof got), CKH_EUNSUPPORTED);
    s->ops = real;
    /* Bad input, and a table lacking a required method. */
    struct ckh_saver *x = (struct ckh_saver *)1;
    ck_assert_int_eq(ckh_saver_create(NULL, penv, &cfg, &x), CKH_EINVAL);
    ck_assert_ptr_null(x);
    bare.commit = NULL;
    ck_assert_int_eq(ckh_saver_create(&bare, penv, &cfg, &x), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_prepare(NULL, false, got, sizeof got), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_prepare(s, false, got, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(ops, penv->fs, &cfg, 1, 1, got, sizeof got, msg, sizeof msg),
                     CKH_EINVAL);
    cfg.keep_last = 0;
    ck_assert_int_eq(ckh_saver_create(ops, penv, &cfg, &x), CKH_EINVAL);
    cfg.keep_last = 1;
    cfg.strategy = CKH_SAVER_ASYNC;
    ck_assert_int_eq(ckh_saver_latest_path(ops, &cfg, got, sizeof got), 0);
    ck_assert_str_eq(got, "/out/m_rank_0.latest_checkpoint");
    ck_assert_str_eq(ckh_saver_errmsg(NULL), "");
    ckh_saver_destroy(s);
    ckh_saver_destroy(NULL);
}
END_TEST

/* ---- several ranks, several views ---- */

#define VIEW_RANKS 4

enum layout { LAYOUT_SHARED, LAYOUT_LOCAL, LAYOUT_PAIRS };

struct view_job {
    int saves;                  /* saves each rank makes */
    int keep;                   /* keep_last */
    uint64_t timeout_ns;        /* collective timeout */
    int leader[VIEW_RANKS];     /* view_leader each rank saw */
    int rc[VIEW_RANKS];         /* each rank's result */
    int64_t done[VIEW_RANKS];   /* N of each rank's last commit that returned 0 */
    int64_t resumed[VIEW_RANKS]; /* N each rank resumed from (-1: none) */
    int resume_rc[VIEW_RANKS];  /* what resume returned */
    bool content_bad[VIEW_RANKS]; /* the resumed folder lacked this rank's exact file */
};

struct view_arg {
    struct view_job *j; /* the job (outside node memory) */
    int rank;           /* this node's rank */
};

/* "<folder>/data_r<R>" holds "checkpoint <N> of rank <R>". */
static int data_path(char *buf, size_t n, const char *folder, int rank)
{
    int len = snprintf(buf, n, "%s/data_r%d", folder, rank);
    return len < 0 || (size_t)len >= n ? CKH_EINVAL : 0;
}

static int64_t folder_number(const char *folder)
{
    const char *p = strstr(folder, "_checkpoint_");
    return p ? strtoll(p + 12, NULL, 10) : -1;
}

/* Resumes and checks this rank's file of the resumed checkpoint. */
static void view_resume(struct ckh_env *env, struct ckh_saver *s, struct view_arg *va)
{
    char folder[CKH_PATH_MAX + 1], p[CKH_PATH_MAX + 1], want[64];
    struct view_job *j = va->j;
    int r = va->rank;
    j->resumed[r] = -1;
    j->content_bad[r] = false;
    j->resume_rc[r] = ckh_saver_resume(s, folder, sizeof folder);
    if (j->resume_rc[r])
        return;
    j->resumed[r] = folder_number(folder);
    void *buf = NULL;
    size_t n = 0;
    int len = snprintf(want, sizeof want, "checkpoint %lld of rank %d", (long long)j->resumed[r], r);
    j->content_bad[r] = data_path(p, sizeof p, folder, r) != 0 ||
                        ckh_atomic_read(env->fs, env->alloc, p, &buf, &n) != 0 ||
                        n != (size_t)len || memcmp(buf, want, n) != 0;
    ckh_free(env->alloc, buf);
}

static int view_main(struct ckh_env *env, void *arg)
{
    struct view_arg *va = arg;
    struct view_job *j = va->j;
    int r = va->rank;
    struct ckh_saver_config cfg = {.output_dir = "/out", .name = "ck", .keep_last = j->keep,
                                   .strategy = CKH_SAVER_SYNC_ANY, .timeout_ns = j->timeout_ns};
    struct ckh_saver *s = NULL;
    struct ckh_atomic a;
    int rc = ckh_saver_create(&ckh_atomic_dir_saver_ops, env, &cfg, &s);
    if (!rc) {
        j->leader[r] = ckh_saver_view_leader(s);
        view_resume(env, s, va);
        rc = j->resume_rc[r] == CKH_ENOTFOUND ? 0 : j->resume_rc[r];
        ckh_atomic_init(&a, env, NULL);
    }
    for (int i = 0; i < j->saves && !rc; i++) {
        char folder[CKH_PATH_MAX + 1], p[CKH_PATH_MAX + 1], content[64];
        rc = ckh_saver_prepare(s, false, folder, sizeof folder);
        if (rc)
            break;
        int len = snprintf(content, sizeof content, "checkpoint %lld of rank %d",
                           (long long)folder_number(folder), r);
        rc = data_path(p, sizeof p, folder, r);
        if (!rc)
            rc = ckh_atomic_save(&a, p, content, (size_t)len);
        if (!rc)
            rc = ckh_saver_commit(s, folder);
        if (!rc)
            j->done[r] = folder_number(folder);
    }
    ckh_saver_destroy(s);
    j->rc[r] = rc;
    return rc;
}

struct view_sim {
    struct ckh_sim *sim;                /* the simulator */
    struct ckh_simfs *disks[VIEW_RANKS]; /* each rank's disk (may repeat) */
    int ids[VIEW_RANKS];                /* node ids */
    struct view_arg args[VIEW_RANKS];   /* node args */
    int world;                          /* ranks */
};

static void view_sim_start(struct view_sim *v, struct view_job *j, int world, enum layout layout,
                           uint64_t seed)
{
    memset(v, 0, sizeof *v);
    v->world = world;
    struct ckh_sim_config sc = {.seed = seed};
    ck_assert_int_eq(ckh_sim_create(&sc, &v->sim), 0);
    for (int r = 0; r < world; r++) {
        int owner = layout == LAYOUT_SHARED ? 0 : layout == LAYOUT_PAIRS ? r - r % 2 : r;
        if (owner != r) {
            v->disks[r] = v->disks[owner];
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "disk%d", r);
        struct ckh_simfs_config dc = {.name = name, .model = CKH_CRASH_POSIX_WEAK,
                                      .sector_bytes = 512};
        ck_assert_int_eq(ckh_sim_add_disk(v->sim, &dc, &v->disks[r]), 0);
    }
    for (int r = 0; r < world; r++) {
        char name[32];
        snprintf(name, sizeof name, "rank_%d", r);
        struct ckh_simfs_mount m = {"/", v->disks[r]};
        v->args[r] = (struct view_arg){j, r};
        j->done[r] = 0;
        struct ckh_node_config nc = {.name = name, .main = view_main, .arg = &v->args[r],
                                     .mounts = &m, .nmounts = 1, .rank = r};
        ck_assert_int_eq(ckh_sim_add_node(v->sim, &nc, &v->ids[r]), 0);
    }
}

/* Runs until every rank stops; ranks still blocked are killed. */
static void view_sim_run(struct view_sim *v)
{
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(v->sim, &res), 0);
    for (int r = 0; r < v->world; r++) {
        struct ckh_node_status st;
        ckh_sim_node_status(v->sim, v->ids[r], &st);
        if (st.state == CKH_NODE_RUNNING)
            ck_assert_int_eq(ckh_sim_kill(v->sim, v->ids[r], false), 0);
    }
}

static int count_in(struct ckh_fs *fs, const char *dir, const char *needle)
{
    return count_entries(fs, dir, needle);
}

/* Shared disk, node-local disks and disks shared by pairs: every view gets
 * the folders, every rank's file, marker and pointer, written by one
 * leader per view; no probe is left behind. */
START_TEST(test_views_multi_rank)
{
    static const enum layout layouts[] = {LAYOUT_SHARED, LAYOUT_LOCAL, LAYOUT_PAIRS};
    static const int leaders[][VIEW_RANKS] = {{0, 0, 0, 0}, {0, 1, 2, 3}, {0, 0, 2, 2}};
    enum layout layout = layouts[_i];
    struct view_job j = {.saves = 3, .keep = 2, .timeout_ns = 1000000000ull};
    struct view_sim v;
    view_sim_start(&v, &j, VIEW_RANKS, layout, 5);
    view_sim_run(&v);
    for (int r = 0; r < VIEW_RANKS; r++) {
        ck_assert_int_eq(j.rc[r], 0);
        ck_assert_int_eq(j.leader[r], leaders[_i][r]);
        ck_assert_int_eq(j.done[r], 3);
        ck_assert_int_eq(j.resume_rc[r], CKH_ENOTFOUND);
    }
    for (int r = 0; r < VIEW_RANKS; r++) {
        struct ckh_fs *fs = ckh_simfs_fs(v.disks[r]);
        char target[CKH_PATH_MAX + 1], p[CKH_PATH_MAX + 1], got[CKH_PATH_MAX + 1], msg[600];
        ck_assert_int_gt(ckh_fs_readlink(fs, "/out/ck.latest_checkpoint", target, sizeof target), 0);
        ck_assert_str_eq(target, "/out/ck_checkpoint_3");
        ck_assert(ckh_fs_exists(fs, "/out/ck_checkpoint_3/" CKH_ADIR_COMMIT_MARKER));
        ck_assert(ckh_fs_exists(fs, "/out/ck_checkpoint_2/" CKH_ADIR_COMMIT_MARKER));
        ck_assert(!ckh_fs_exists(fs, "/out/ck_checkpoint_1")); /* keep_last 2 */
        data_path(p, sizeof p, "/out/ck_checkpoint_3", r);
        ck_assert(ckh_fs_exists(fs, p));
        ck_assert_int_eq(count_in(fs, "/out", ".ckh_probe."), 0);
        ck_assert_int_eq(count_in(fs, "/out", ".tmp."), 0);
        /* Each view holds the files of its own ranks only. */
        ck_assert_int_eq(count_in(fs, "/out/ck_checkpoint_3", "data_r"),
                         layout == LAYOUT_SHARED ? VIEW_RANKS : layout == LAYOUT_PAIRS ? 2 : 1);
        struct ckh_saver_config cfg = {.output_dir = "/out", .name = "ck", .keep_last = 2};
        ck_assert_int_eq(ckh_saver_check(&ckh_atomic_dir_saver_ops, fs, &cfg, r, VIEW_RANKS, got,
                                         sizeof got, msg, sizeof msg),
                         0);
        ck_assert_str_eq(got, "/out/ck_checkpoint_3");
    }
    /* A second run resumes every rank from checkpoint 3, in its own view. */
    ckh_sim_clear_faults(v.sim);
    j.saves = 1;
    for (int r = 0; r < VIEW_RANKS; r++)
        ck_assert_int_eq(ckh_sim_restart(v.sim, v.ids[r]), 0);
    view_sim_run(&v);
    for (int r = 0; r < VIEW_RANKS; r++) {
        ck_assert_int_eq(j.resume_rc[r], 0);
        ck_assert_int_eq(j.resumed[r], 3);
        ck_assert(!j.content_bad[r]);
        ck_assert_int_eq(j.done[r], 4);
    }
    ckh_sim_destroy(v.sim);
}
END_TEST

/* Node-local disks, 2 ranks: a fault (crash of `node`'s machine, or a
 * power loss when node is -1) at op k of node `at` of a series of saves,
 * then a restart of both ranks. Returns -1 when op k was never reached,
 * else a verdict (0: good): the ranks resumed from one checkpoint, whose
 * files are complete in every view, no older than any commit that
 * returned 0, and the next save works. */
static int views_crash_at(int keep, int at, bool power, uint64_t k)
{
    struct view_job j = {.saves = 3, .keep = keep, .timeout_ns = 1000000000ull};
    struct view_sim v;
    view_sim_start(&v, &j, 2, LAYOUT_LOCAL, 300 + k);
    struct ckh_fault_rule rule;
    ckh_fault_rule_init(&rule);
    rule.node = v.ids[at];
    rule.nth = k;
    rule.action.kind = power ? CKH_FAULT_POWER_LOSS : CKH_FAULT_CRASH_BEFORE;
    ck_assert_int_eq(ckh_sim_add_fault(v.sim, &rule), 0);
    view_sim_run(&v);
    if (ckh_sim_fault_fired(v.sim, 0) == 0) {
        ck_assert_int_eq(j.rc[0], 0);
        ck_assert_int_eq(j.rc[1], 0);
        ckh_sim_destroy(v.sim);
        return -1;
    }
    int64_t committed = j.done[0] > j.done[1] ? j.done[0] : j.done[1];
    ckh_sim_clear_faults(v.sim);
    j.saves = 1;
    for (int r = 0; r < 2; r++)
        ck_assert_int_eq(ckh_sim_restart(v.sim, v.ids[r]), 0);
    view_sim_run(&v);
    int verdict = 0;
    if (j.resume_rc[0] != j.resume_rc[1] || j.resumed[0] != j.resumed[1])
        verdict = 1; /* the ranks disagree */
    else if (j.resume_rc[0] && !(j.resume_rc[0] == CKH_ENOTFOUND && committed == 0))
        verdict = 2; /* nothing to resume from though a commit returned 0 */
    else if (j.content_bad[0] || j.content_bad[1])
        verdict = 3; /* a view lacks its rank's complete file */
    else if (j.resumed[0] < committed && j.resume_rc[0] == 0)
        verdict = 4; /* a commit that returned 0 was rolled back */
    else if (j.rc[0] || j.rc[1])
        verdict = 5; /* the next save failed */
    ckh_sim_destroy(v.sim);
    return verdict;
}

START_TEST(test_views_crash_every_op)
{
    /* keep_last 1 and 2; the crash on rank 0's or rank 1's machine, or a
     * power loss at rank 1's op. */
    int keep = _i % 2 ? 2 : 1, mode = _i / 2;
    int at = mode == 0 ? 0 : 1;
    bool power = mode == 2;
    uint64_t k;
    int fired = 0;
    for (k = 1; k < 3000; k++) {
        int verdict = views_crash_at(keep, at, power, k);
        if (verdict < 0)
            break;
        fired++;
        ck_assert_msg(verdict == 0, "keep_last %d, %s of rank %d before op %llu: verdict %d", keep,
                      power ? "power loss" : "crash", at, (unsigned long long)k, verdict);
    }
    ck_assert_int_gt(fired, 60); /* the sweep covered create, resume and three saves */
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

/* The defect list parser: empty items are skipped, a refused list leaves
 * the set as it was, a name too long for any defect is quoted cut to 60
 * characters; lookups outside the table answer NULL or not found. */
START_TEST(test_defect_list_edges)
{
    struct ckh_defect_set s = {0};
    char msg[128];
    ck_assert_int_eq(ckh_defect_parse(&s, ",no-fsync,,", msg, sizeof msg), 0);
    ck_assert(ckh_defect_on(&s, CKH_DEFECT_NO_FSYNC));
    ck_assert(!ckh_defect_on(&s, CKH_DEFECT_RNG_NOT_SAVED));
    struct ckh_defect_set before = s;
    ck_assert_int_eq(ckh_defect_parse(&s, "rng-not-saved,bogus", msg, sizeof msg), CKH_ENOTFOUND);
    ck_assert_str_eq(msg, "unknown defect 'bogus'");
    ck_assert(s.bits == before.bits);
    char longname[100];
    memset(longname, 'x', 80);
    longname[80] = '\0';
    ck_assert_int_eq(ckh_defect_parse(&s, longname, msg, sizeof msg), CKH_ENOTFOUND);
    char want[100];
    snprintf(want, sizeof want, "unknown defect '%.60s'", longname);
    ck_assert_str_eq(msg, want);
    ck_assert(s.bits == before.bits);
    ck_assert_int_eq(ckh_defect_parse(&s, "bogus", NULL, 0), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_defect_parse(&s, NULL, msg, sizeof msg), 0);
    ck_assert(s.bits == before.bits);
    ck_assert_int_eq(ckh_defect_parse(NULL, "no-fsync", msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_defect_from_name(NULL), CKH_ENOTFOUND);
    ck_assert_ptr_null(ckh_defect_name(CKH_DEFECT__COUNT));
    ck_assert_ptr_null(ckh_defect_component(CKH_DEFECT__COUNT));
    ck_assert_ptr_null(ckh_defect_desc(CKH_DEFECT__COUNT));
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
    tcase_add_test(tc, test_defect_list_edges);
    tcase_add_test(tc, test_saver_ops_wrappers);
    tcase_add_test(tc, test_saver_ops_optional_and_bad_input);
    suite_add_tcase(s, tc);
    TCase *tcv = tcase_create("views");
    tcase_set_timeout(tcv, 120);
    tcase_add_loop_test(tcv, test_views_multi_rank, 0, 3);
    tcase_add_loop_test(tcv, test_views_crash_every_op, 0, 6);
    suite_add_tcase(s, tcv);
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
