/* Workloads in the simulator: the seed test's cases with its exact figures
 * (4 epochs, totals 103 115 136 145, checkpoint names, failing saves),
 * golden results, kills and machine crashes at every operation of a save
 * (the old or the new checkpoint stays loadable and the resumed job ends
 * at the same result), refusal of a corrupt checkpoint, trace determinism,
 * and trainer 0's peak memory in param-server both ways.
 *
 * Layout: one simulated disk "shared" mounted at "/" in every node; the
 * checkpoint prefix is "/ckpt".
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "ckh/ref.h"
#include "ckh/sim.h"

#define MAXN 8
static const int64_t EXPECTED[4] = {103, 115, 136, 145};

struct wl_run {
    struct ckh_sim *sim;                          /* the simulator */
    struct ckh_simfs *disk;                       /* shared disk at "/" */
    struct ckh_workload_spec spec;                /* the job */
    struct ckh_workload_node_arg args[MAXN];      /* node arguments */
    struct ckh_workload_result res[MAXN];         /* node results */
    int n;                                        /* nodes */
};

static void wl_start(struct wl_run *w, uint64_t seed, const char *name, int nnodes, bool keep)
{
    struct ckh_sim_config cfg = {.seed = seed, .keep_trace = keep, .stack_bytes = 256 * 1024};
    struct ckh_simfs_config dc = {.name = "shared", .sector_bytes = 512, .latency_ns = 1000};
    struct ckh_simfs_mount m = {.prefix = "/"};
    memset(w, 0, sizeof *w);
    w->spec.wl = ckh_epoch_workload_find(name);
    ck_assert_ptr_nonnull(w->spec.wl);
    w->spec.nnodes = nnodes;
    w->spec.prefix = "/ckpt";
    w->spec.param_bytes = 64 * 1024;
    ck_assert_int_eq(ckh_sim_create(&cfg, &w->sim), 0);
    ck_assert_int_eq(ckh_sim_add_disk(w->sim, &dc, &w->disk), 0);
    ck_assert_int_eq(ckh_fs_mkdir(ckh_simfs_fs(w->disk), "/ckpt"), 0);
    ckh_simfs_sync_all(w->disk);
    m.disk = w->disk;
    w->n = w->spec.wl->node_count(&w->spec);
    ck_assert_int_le(w->n, MAXN);
    for (int i = 0; i < w->n; i++) {
        char node[64];
        struct ckh_node_config nc = {.name = node, .main = w->spec.wl->node_main,
                                     .arg = &w->args[i], .mounts = &m, .nmounts = 1, .rank = i};
        int id;
        ck_assert_int_eq(w->spec.wl->node_name(&w->spec, i, node, sizeof node), 0);
        w->args[i].spec = &w->spec;
        w->args[i].node_index = i;
        w->args[i].result = &w->res[i];
        ck_assert_int_eq(ckh_sim_add_node(w->sim, &nc, &id), 0);
        ck_assert_int_eq(id, i);
    }
}

static struct ckh_sim_result wl_run(struct wl_run *w)
{
    struct ckh_sim_result r;
    ck_assert_int_eq(ckh_sim_run(w->sim, &r), 0);
    ck_assert_int_eq(r.outcome, CKH_SIM_DONE);
    return r;
}

static void wl_end(struct wl_run *w)
{
    ckh_sim_destroy(w->sim);
}

/* Loads node's checkpoint of epoch from the disk at rest: 0 and *total. */
static int load_total(struct ckh_simfs *disk, const char *node, int64_t epoch, int64_t *total)
{
    struct ckh_backend *b;
    struct ckh_backend_config bc = {.fs = ckh_simfs_fs(disk), .prefix = "/ckpt"};
    struct ckh_ws *ws;
    char name[64];
    int rc;
    ck_assert_int_eq(ckh_backend_open("minidb", &bc, &b, NULL, 0), 0);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    rc = ckh_backend_load(b, node, epoch, ws, NULL, 0, 0, NULL);
    snprintf(name, sizeof name, "%s/total", node);
    if (rc == 0)
        ck_assert_int_eq(ckh_ws_get_i64(ws, name, total), 0);
    ckh_ws_destroy(ws);
    ckh_backend_close(b);
    return rc;
}

/* ---- golden ---- */

static struct ckh_golden *golden;
static size_t ngolden;

static void load_golden(void)
{
    const char *src = getenv("CKH_SOURCE_DIR");
    char path[1024];
    FILE *f;
    char *text;
    long len;
    char msg[256];
    snprintf(path, sizeof path, "%s/reference/golden/workloads.txt", src ? src : "..");
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = calloc(1, (size_t)len + 1);
    ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    ck_assert_msg(ckh_golden_parse(NULL, text, &golden, &ngolden, msg, sizeof msg) == 0, "%s", msg);
    free(text);
}

static void unload_golden(void)
{
    ckh_free(NULL, golden);
    golden = NULL;
}

static void check_golden(const struct wl_run *w)
{
    for (int i = 0; getenv("CKH_GOLDEN_PRINT") && i < w->n; i++) {
        struct ckh_golden mine = {.nodes = w->spec.nnodes, .epochs = w->res[i].epochs,
                                  .total = w->res[i].total, .digest = w->res[i].digest};
        char line[2048];
        snprintf(mine.workload, sizeof mine.workload, "%s", w->spec.wl->name);
        snprintf(mine.node, sizeof mine.node, "%s", w->res[i].node);
        snprintf(mine.blobs, sizeof mine.blobs, "%s", w->res[i].blobs);
        ckh_golden_format(&mine, line, sizeof line);
        printf("%s\n", line);
    }
    for (int i = 0; i < w->n; i++) {
        const struct ckh_golden *g =
            ckh_golden_find(golden, ngolden, w->spec.wl->name, w->spec.nnodes, w->res[i].node);
        char msg[512], line[2048];
        struct ckh_golden mine = {.nodes = w->spec.nnodes, .epochs = w->res[i].epochs,
                                  .total = w->res[i].total, .digest = w->res[i].digest};
        snprintf(mine.workload, sizeof mine.workload, "%s", w->spec.wl->name);
        snprintf(mine.node, sizeof mine.node, "%s", w->res[i].node);
        snprintf(mine.blobs, sizeof mine.blobs, "%s", w->res[i].blobs);
        ckh_golden_format(&mine, line, sizeof line);
        ck_assert_msg(g != NULL, "no golden line; this run gives:\n%s", line);
        ck_assert_msg(ckh_golden_check(g, &w->res[i], msg, sizeof msg) == 0, "%s\nrun: %s", msg, line);
    }
}

/* ---- seed cases ---- */

START_TEST(test_pipeline_nodes)
{
    static const int counts[] = {1, 3};
    struct wl_run w;
    int nn = counts[_i];
    wl_start(&w, 11, "seed-pipeline", nn, false);
    wl_run(&w);
    for (int i = 0; i < nn; i++) {
        char node[32], want[64], got[CKH_PATH_MAX];
        ck_assert(w.res[i].finished);
        ck_assert_int_eq(w.res[i].rc, 0);
        ck_assert_int_eq(w.res[i].epochs, 4);
        ck_assert_int_eq(w.res[i].total, 145);
        ck_assert_int_eq(w.res[i].resumed_from, -1);
        ck_assert_uint_eq(w.res[i].saves_failed, 0);
        snprintf(node, sizeof node, "trainer_%d", i);
        for (int64_t e = 1; e <= 4; e++) {
            int64_t t = 0;
            ck_assert_int_eq(load_total(w.disk, node, e, &t), 0);
            ck_assert_int_eq(t, EXPECTED[e - 1]);
        }
        ck_assert_int_eq(ckh_db_name("/ckpt", node, 5, got, sizeof got), 0);
        snprintf(want, sizeof want, "/ckpt/trainer_%d.5", i);
        ck_assert_str_eq(got, want);
        ck_assert(!ckh_fs_exists(ckh_simfs_fs(w.disk), got));
    }
    check_golden(&w);
    wl_end(&w);
}
END_TEST

/* Resuming (a restarted node) from each epoch 1..4 ends at 145. */
START_TEST(test_pipeline_resume_each_epoch)
{
    struct wl_run w;
    int64_t from = _i + 1;
    wl_start(&w, 12, "seed-pipeline", 1, false);
    wl_run(&w);
    for (int64_t e = from + 1; e <= 4; e++)
        ck_assert_int_eq(ckh_fs_unlink(ckh_simfs_fs(w.disk), e == 2 ? "/ckpt/trainer_0.2" :
                                       e == 3 ? "/ckpt/trainer_0.3" : "/ckpt/trainer_0.4"), 0);
    ck_assert_int_eq(ckh_sim_restart(w.sim, 0), 0);
    wl_run(&w);
    ck_assert_int_eq(w.res[0].rc, 0);
    ck_assert_int_eq(w.res[0].resumed_from, from);
    ck_assert_int_eq(w.res[0].total, 145);
    ck_assert_int_eq(w.res[0].epochs, 4); /* the final checkpoint's stop condition holds */
    wl_end(&w);
}
END_TEST

START_TEST(test_pipeline_save_failure)
{
    struct wl_run w;
    wl_start(&w, 13, "seed-pipeline", 3, false);
    w.spec.prefix = "/path_does_not_exist/";
    wl_run(&w);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(w.res[i].rc, 0);
        ck_assert_int_eq(w.res[i].epochs, 4);
        ck_assert_int_eq(w.res[i].total, 145);
        ck_assert_uint_eq(w.res[i].saves_failed, 5);
    }
    wl_end(&w);
}
END_TEST

START_TEST(test_same_seed_same_trace)
{
    uint64_t h[2];
    for (int k = 0; k < 2; k++) {
        struct wl_run w;
        struct ckh_sim_result r;
        wl_start(&w, 99, "seed-pipeline", 3, true);
        r = wl_run(&w);
        h[k] = r.trace_hash;
        ck_assert_uint_eq(r.trace_hash, ckh_sim_trace_hash(w.sim));
        wl_end(&w);
    }
    ck_assert_uint_eq(h[0], h[1]);
}
END_TEST

/* A corrupt latest checkpoint is refused: the resumed node fails with
 * CKH_ECORRUPT instead of loading it. */
START_TEST(test_corrupt_checkpoint_refused)
{
    struct wl_run w;
    struct ckh_stat st;
    wl_start(&w, 14, "seed-pipeline", 1, false);
    wl_run(&w);
    ck_assert_int_eq(ckh_fs_stat(ckh_simfs_fs(w.disk), "/ckpt/trainer_0.4", &st), 0);
    ck_assert_int_eq(ckh_simfs_flip_bit(w.disk, "/ckpt/trainer_0.4", 8 * (st.size_bytes / 2)), 0);
    ck_assert_int_eq(ckh_sim_restart(w.sim, 0), 0);
    wl_run(&w);
    ck_assert_int_eq(w.res[0].rc, CKH_ECORRUPT);
    ck_assert_int_eq(ckh_simfs_truncate_at_rest(w.disk, "/ckpt/trainer_0.4", st.size_bytes - 3), 0);
    ck_assert_int_eq(ckh_sim_restart(w.sim, 0), 0);
    wl_run(&w);
    ck_assert_int_eq(w.res[0].rc, CKH_ETRUNCATED);
    wl_end(&w);
}
END_TEST

/* Kill (process or machine) before the k-th operation of the save of
 * epoch 2, for every k: afterwards epoch 1 loads, epoch 2 is absent or
 * loads with its exact total, and the restarted job ends at 145. */
static void kill_sweep(enum ckh_fault_kind kind, uint64_t seed)
{
    uint64_t k;
    for (k = 1;; k++) {
        struct wl_run w;
        struct ckh_fault_rule rule = {.node = 0, .kind = -1, .phase = "save", .epoch = 2,
                                      .step = -1, .nth = k, .action = {.kind = kind}};
        struct ckh_node_status ns;
        int64_t t = 0;
        int rc;
        bool killed;
        wl_start(&w, seed + k, "seed-pipeline", 1, false);
        ck_assert_int_eq(ckh_sim_add_fault(w.sim, &rule), 0);
        wl_run(&w);
        ck_assert_int_eq(ckh_sim_node_status(w.sim, 0, &ns), 0);
        killed = ns.state == CKH_NODE_KILLED;
        if (!killed) {
            ck_assert_int_eq(w.res[0].total, 145);
            wl_end(&w);
            break;
        }
        ck_assert(!w.res[0].finished);
        ck_assert_int_eq(load_total(w.disk, "trainer_0", 1, &t), 0);
        ck_assert_int_eq(t, 115 - 12);
        rc = load_total(w.disk, "trainer_0", 2, &t);
        ck_assert_msg(rc == 0 || rc == -ENOENT, "k=%" PRIu64 ": epoch 2 neither absent nor loadable: %s",
                      k, ckh_err_name(rc));
        if (rc == 0)
            ck_assert_int_eq(t, 115);
        ckh_sim_clear_faults(w.sim);
        ck_assert_int_eq(ckh_sim_restart(w.sim, 0), 0);
        wl_run(&w);
        ck_assert_int_eq(w.res[0].rc, 0);
        ck_assert_int_eq(w.res[0].total, 145);
        ck_assert_int_eq(w.res[0].epochs, 4);
        ck_assert_int_eq(w.res[0].resumed_from, rc == 0 ? 2 : 1);
        wl_end(&w);
    }
    /* open, write, fsync, close, rename, fsync_dir at least */
    ck_assert_uint_ge(k, 7);
}

START_TEST(test_kill_during_save)
{
    kill_sweep(CKH_FAULT_KILL_BEFORE, 1000);
}
END_TEST

START_TEST(test_crash_during_save)
{
    kill_sweep(CKH_FAULT_CRASH_BEFORE, 2000);
}
END_TEST

/* Runs w until its node stops, with one rule on the rename that commits
 * epoch's checkpoint (none when kind is CKH_FAULT_NONE). */
static void run_with_rename_fault(struct wl_run *w, int64_t epoch, enum ckh_fault_kind kind)
{
    struct ckh_fault_rule rule;
    ckh_fault_rule_init(&rule);
    rule.node = 0;
    rule.kind = CKH_OP_RENAME;
    rule.phase = "save";
    rule.epoch = epoch;
    rule.action.kind = kind;
    rule.action.crash_keep = CKH_CRASH_KEEP_SYNCED;
    ckh_sim_clear_faults(w->sim);
    if (kind != CKH_FAULT_NONE)
        ck_assert_int_eq(ckh_sim_add_fault(w->sim, &rule), 0);
    wl_run(w);
}

/* A kill between the rename of epoch 1's checkpoint and the fsync of its
 * directory leaves a checkpoint the restart sees (the page cache survives)
 * but that is not durable. The restart resumes from it and must make it
 * durable before training on: when its machine then crashes while
 * committing epoch 2 (keeping only durable state), the next restart still
 * finds epoch 1, so the crash loses one interval, not two. (Found by the
 * fuzzer; scenarios/found/resume-from-unsynced-rename.yaml.) */
START_TEST(test_resume_makes_checkpoint_durable)
{
    struct wl_run w;
    struct ckh_node_status ns;
    wl_start(&w, 15, "seed-pipeline", 1, false);
    run_with_rename_fault(&w, 1, CKH_FAULT_KILL_AFTER);
    ck_assert_int_eq(ckh_sim_node_status(w.sim, 0, &ns), 0);
    ck_assert_int_eq(ns.state, CKH_NODE_KILLED);
    ck_assert_int_eq(ckh_sim_restart(w.sim, 0), 0);
    run_with_rename_fault(&w, 2, CKH_FAULT_CRASH_BEFORE);
    ck_assert_int_eq(ckh_sim_node_status(w.sim, 0, &ns), 0);
    ck_assert_int_eq(ns.state, CKH_NODE_KILLED);
    ck_assert_int_eq(ckh_sim_restart(w.sim, 0), 0);
    run_with_rename_fault(&w, 0, CKH_FAULT_NONE);
    ck_assert_int_eq(w.res[0].rc, 0);
    ck_assert_int_eq(w.res[0].resumed_from, 1);
    ck_assert_int_eq(w.res[0].total, 145);
    ck_assert_int_eq(w.res[0].epochs, 4);
    wl_end(&w);
}
END_TEST

/* A resume whose sync fails (EIO from the directory fsync) is logged and
 * the job goes on, as after a failed save: a checkpoint that cannot be
 * made durable never fails the job. */
START_TEST(test_resume_sync_failure_not_fatal)
{
    struct wl_run w;
    struct ckh_fault_rule rule;
    wl_start(&w, 16, "seed-pipeline", 1, false);
    wl_run(&w);
    for (int64_t e = 2; e <= 4; e++) {
        char p[32];
        snprintf(p, sizeof p, "/ckpt/trainer_0.%" PRId64, e);
        ck_assert_int_eq(ckh_fs_unlink(ckh_simfs_fs(w.disk), p), 0);
    }
    ckh_fault_rule_init(&rule);
    rule.node = 0;
    rule.kind = CKH_OP_FSYNC_DIR;
    rule.phase = "load";
    rule.action.kind = CKH_FAULT_ERRNO;
    rule.action.err = EIO;
    ck_assert_int_eq(ckh_sim_add_fault(w.sim, &rule), 0);
    ck_assert_int_eq(ckh_sim_restart(w.sim, 0), 0);
    wl_run(&w);
    ck_assert_uint_eq(ckh_sim_fault_fired(w.sim, 0), 1);
    ck_assert_int_eq(w.res[0].rc, 0);
    ck_assert_int_eq(w.res[0].resumed_from, 1);
    ck_assert_int_eq(w.res[0].total, 145);
    ck_assert_int_eq(w.res[0].epochs, 4);
    wl_end(&w);
}
END_TEST

/* ---- param-server ---- */

static uint64_t trainer0_peak(bool every_epoch, struct ckh_workload_result *r0, bool golden_check)
{
    struct wl_run w;
    struct ckh_node_status ns;
    wl_start(&w, 21, "param-server", 2, false);
    w.spec.download_every_epoch = every_epoch;
    wl_run(&w);
    for (int i = 0; i < w.n; i++) {
        ck_assert_int_eq(w.res[i].rc, 0);
        ck_assert_int_eq(w.res[i].epochs, 3);
    }
    if (golden_check)
        check_golden(&w);
    ck_assert_int_eq(ckh_sim_node_status(w.sim, 0, &ns), 0);
    *r0 = w.res[0];
    wl_end(&w);
    return ns.mem_peak_bytes;
}

START_TEST(test_param_server_download_memory)
{
    struct ckh_workload_result once, every;
    uint64_t peak_once = trainer0_peak(false, &once, true);
    uint64_t peak_every = trainer0_peak(true, &every, false);
    fprintf(stderr, "param-server trainer_0 mem_peak_bytes download_once %" PRIu64
                    " download_every_epoch %" PRIu64 "\n", peak_once, peak_every);
    /* the model ends the same either way */
    ck_assert_uint_eq(once.digest, every.digest);
    /* 2 shards of 64 KiB: the every-epoch variant holds the downloaded
     * model (128 KiB) while the next epoch's gradients (128 KiB) live. */
    ck_assert_uint_ge(peak_every, peak_once + 100 * 1024);
    /* exact figures (payload bytes of the node allocator, the handles'
     * CKH_ERRMSG_BYTES messages included; deterministic) */
    ck_assert_uint_eq(peak_once, 146439);
    ck_assert_uint_eq(peak_every, 277485);
}
END_TEST

/* The single-process run (every node in one session on the POSIX
 * platform) gives the same results as the simulated nodes. */
START_TEST(test_local_matches_golden)
{
    static const char *names[] = {"seed-pipeline", "seed-pipeline", "param-server"};
    static const int nodes[] = {1, 3, 2};
    char root[] = "/tmp/ckh_test_wl_XXXXXX", cmd[128];
    struct ckh_env *env;
    struct wl_run w;
    ck_assert_ptr_nonnull(mkdtemp(root));
    ck_assert_int_eq(ckh_posix_env_create(root, 3, "local", &env), 0);
    ck_assert_int_eq(ckh_fs_mkdir(env->fs, "/ckpt"), 0);
    memset(&w, 0, sizeof w);
    w.spec.wl = ckh_epoch_workload_find(names[_i]);
    w.spec.nnodes = nodes[_i];
    w.spec.prefix = "/ckpt";
    w.spec.param_bytes = 64 * 1024;
    w.n = w.spec.wl->node_count(&w.spec);
    ck_assert_int_eq(ckh_workload_run_local(&w.spec, env, -1, w.res), 0);
    check_golden(&w);
    ckh_posix_env_destroy(env);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_registry)
{
    ck_assert_ptr_null(ckh_epoch_workload_find("nope"));
    ck_assert_ptr_null(ckh_epoch_workload_find(NULL));
    ck_assert_str_eq(ckh_epoch_workload_at(0)->name, "seed-pipeline");
    ck_assert_str_eq(ckh_epoch_workload_at(1)->name, "param-server");
    ck_assert_ptr_null(ckh_epoch_workload_at(2));
    ck_assert_int_eq(ckh_workload_node_main(NULL, NULL), CKH_EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("workloads");
    TCase *tc = tcase_create("sim");
    tcase_add_unchecked_fixture(tc, load_golden, unload_golden);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_pipeline_nodes, 0, 2);
    tcase_add_loop_test(tc, test_pipeline_resume_each_epoch, 0, 4);
    tcase_add_test(tc, test_pipeline_save_failure);
    tcase_add_test(tc, test_same_seed_same_trace);
    tcase_add_test(tc, test_corrupt_checkpoint_refused);
    tcase_add_test(tc, test_kill_during_save);
    tcase_add_test(tc, test_crash_during_save);
    tcase_add_test(tc, test_resume_makes_checkpoint_durable);
    tcase_add_test(tc, test_resume_sync_failure_not_fatal);
    tcase_add_test(tc, test_param_server_download_memory);
    tcase_add_loop_test(tc, test_local_matches_golden, 0, 3);
    tcase_add_test(tc, test_registry);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
