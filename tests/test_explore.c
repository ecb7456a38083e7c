/* Tests of the crash-state explorer (harness/search/explore.c): every negative
 * control in tests/backends/ is flagged with its diagnosis (rule E5), the
 * correct backends (minidb, bk_good, the atomic directory saver with
 * keep_last 1 and 2) pass every crash state, the saver's defect switches
 * are diagnosed, and the disk snapshots the explorer crashes
 * (ckh_simfs_clone, sim/simfs_clone.c C1-C4) are independent. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/atomic.h"
#include "ckh/err.h"
#include "search/explore.h"
#include "exec/plugin.h"
#include "search/validate.h"
#include "cli/cli.h"

#ifndef CKH_BACKENDS_DIR
#define CKH_BACKENDS_DIR "backends"
#endif

static struct ckh_plugin *load(const char *name)
{
    char path[1024], msg[512];
    struct ckh_plugin *p = NULL;
    snprintf(path, sizeof(path), "%s/lib%s.so", CKH_BACKENDS_DIR, name);
    int rc = ckh_plugin_load(path, &p, msg, sizeof(msg));
    ck_assert_msg(rc == 0, "%s: %s", path, msg);
    return p;
}

static void cfg_init(struct ckh_explore_config *c, const struct ckh_backend_ops *ops,
                     unsigned scenarios)
{
    memset(c, 0, sizeof(*c));
    c->ops = ops;
    c->model = CKH_CRASH_POSIX_WEAK;
    c->sector_bytes = 512;
    c->seed = 7;
    c->scenarios = scenarios;
}

static void dump(const char *name, const struct ckh_explore_result *r)
{
    if (!getenv("CKH_EXPLORE_VERBOSE"))
        return;
    printf("%s: %llu states, %llu checked\n", name, (unsigned long long)r->stats.states,
           (unsigned long long)r->stats.states_checked);
    for (size_t i = 0; i < r->nvulns; i++)
        printf("  [%s] %s: %s\n    state: %s\n    step: %s\n", r->vulns[i].scenario,
               ckh_vuln_name(r->vulns[i].kind), r->vulns[i].symptom, r->vulns[i].state,
               r->vulns[i].step);
}

/* Explores `name` and asserts that `expect` is among the findings (or that
 * nothing is found when expect < 0). */
static void expect_control(const char *name, unsigned scenarios, int expect)
{
    struct ckh_plugin *p = load(name);
    struct ckh_explore_config c;
    struct ckh_explore_result r;
    char msg[256];
    cfg_init(&c, ckh_plugin_ops(p), scenarios);
    ck_assert_int_eq(ckh_explore_run(&c, &r, msg, sizeof(msg)), 0);
    dump(name, &r);
    if (expect < 0) {
        ck_assert_msg(r.nvulns == 0, "%s: unexpected %s: %s / %s", name,
                      ckh_vuln_name(r.nvulns ? r.vulns[0].kind : 0),
                      r.nvulns ? r.vulns[0].symptom : "", r.nvulns ? r.vulns[0].step : "");
        ck_assert_uint_gt(r.stats.states_checked, 0);
    } else {
        ck_assert_msg(ckh_explore_has(&r, (enum ckh_vuln_kind)expect), "%s: %s not found (%zu findings%s%s)",
                      name, ckh_vuln_name((enum ckh_vuln_kind)expect), r.nvulns,
                      r.nvulns ? ", first " : "", r.nvulns ? ckh_vuln_name(r.vulns[0].kind) : "");
        for (size_t i = 0; i < r.nvulns; i++)
            if (r.vulns[i].kind == (enum ckh_vuln_kind)expect)
                ck_assert_msg(r.vulns[i].step[0] && r.vulns[i].state[0], "no step/state");
    }
    ckh_explore_result_free(&r);
    ckh_plugin_unload(p);
}

START_TEST(test_minidb_passes)
{
    struct ckh_explore_config c;
    struct ckh_explore_result r;
    char msg[256];
    cfg_init(&c, &ckh_minidb_ops, CKH_EXPLORE_ALL);
    ck_assert_int_eq(ckh_explore_run(&c, &r, msg, sizeof(msg)), 0);
    dump("minidb", &r);
    ck_assert_msg(r.nvulns == 0, "minidb: %s: %s / %s / %s", ckh_vuln_name(r.nvulns ? r.vulns[0].kind : 0),
                  r.nvulns ? r.vulns[0].symptom : "", r.nvulns ? r.vulns[0].state : "",
                  r.nvulns ? r.vulns[0].step : "");
    ck_assert_uint_gt(r.stats.states_checked, 5);
    ckh_explore_result_free(&r);
}
END_TEST

START_TEST(test_good_passes) { expect_control("bk_good", CKH_EXPLORE_ALL, -1); }
END_TEST
START_TEST(test_in_place) { expect_control("bk_in_place", CKH_EXPLORE_CRASHES, CKH_VULN_OVERWRITE_IN_PLACE); }
END_TEST
START_TEST(test_rename_nofsync) { expect_control("bk_rename_nofsync", CKH_EXPLORE_CRASHES, CKH_VULN_RENAME_BEFORE_DATA); }
END_TEST
START_TEST(test_no_dir_fsync) { expect_control("bk_no_dir_fsync", CKH_EXPLORE_CRASHES, CKH_VULN_NO_DIR_FSYNC); }
END_TEST
START_TEST(test_pointer_first) { expect_control("bk_pointer_first", CKH_EXPLORE_CRASHES, CKH_VULN_POINTER_BEFORE_DATA); }
END_TEST
START_TEST(test_retention_first) { expect_control("bk_retention_first", CKH_EXPLORE_CRASHES, CKH_VULN_RETENTION_BEFORE_COMMIT); }
END_TEST
START_TEST(test_fixed_tmp) { expect_control("bk_fixed_tmp", CKH_EXPLORE_TWO_RANKS, CKH_VULN_SHARED_TEMP_NAME); }
END_TEST

/* ---- the atomic directory saver as a backend (tests/backends/bk_adir.h) ---- */

/* Runs the explorer on `name` under `model`; returns the result. */
static void explore_plugin(const char *name, enum ckh_crash_model model, unsigned scenarios,
                           struct ckh_plugin **pl, struct ckh_explore_result *r)
{
    struct ckh_explore_config c;
    char msg[256];
    *pl = load(name);
    cfg_init(&c, ckh_plugin_ops(*pl), scenarios);
    c.model = model;
    ck_assert_int_eq(ckh_explore_run(&c, r, msg, sizeof(msg)), 0);
    dump(name, r);
}

/* Saves a small workspace as epoch e through b. */
static void save_epoch(struct ckh_backend *b, int64_t e)
{
    struct ckh_ws *ws;
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    ck_assert_int_eq(ckh_ws_set_i64(ws, "step", e * 10), 0);
    ck_assert_int_eq(ckh_backend_save(b, "rank0", e, ws, NULL, 0), 0);
    ckh_ws_destroy(ws);
}

/* The adapter keeps the saver's layout (A1-A4 in tests/backends/bk_adir.h):
 * numbered folders, the pointer on the newest, keep_last folders kept,
 * and list/load agree with what the saver itself reports. */
START_TEST(test_adir_layout)
{
    struct ckh_plugin *p = load("bk_adir_keep2");
    struct ckh_simfs_config dc = {.name = "adir", .sector_bytes = 512, .seed = 1};
    struct ckh_simfs *d;
    struct ckh_backend_config bc = {.prefix = "/ckpt"};
    struct ckh_backend *b;
    ck_assert_int_eq(ckh_simfs_create(&dc, &d), 0);
    bc.fs = ckh_simfs_fs(d);
    ck_assert_int_eq(ckh_fs_mkdirs(bc.fs, "/ckpt"), 0);
    ck_assert_int_eq(ckh_plugin_ops(p)->open(&bc, &b), 0);
    for (int64_t e = 1; e <= 3; e++)
        save_epoch(b, e);

    struct ckh_env env = {.fs = bc.fs};
    struct ckh_adir_config ac = {.output_dir = "/ckpt", .is_master = true, .name = "rank0",
                                 .keep_last = 2};
    struct ckh_adir *s;
    char latest[CKH_PATH_MAX + 1], **names;
    size_t n;
    ck_assert_int_eq(ckh_adir_create(&env, &ac, &s), 0);
    ck_assert_int_eq(ckh_adir_latest(s, latest, sizeof(latest)), 0);
    ck_assert_str_eq(latest, "/ckpt/rank0_checkpoint_3");
    ck_assert_int_eq(ckh_adir_list(s, &names, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(names[0], "rank0_checkpoint_2");
    ck_assert_str_eq(names[1], "rank0_checkpoint_3");
    ckh_adir_list_free(s, names, n);
    ckh_adir_destroy(s);

    int64_t *ep;
    ck_assert_int_eq(ckh_backend_list_epochs(b, "rank0", &ep, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ep[0], 2);
    ck_assert_int_eq(ep[1], 3);
    ckh_free(NULL, ep);
    char path[CKH_PATH_MAX + 1];
    ck_assert_int_eq(ckh_backend_db_name(b, "rank0", 3, path, sizeof(path)), 0);
    ck_assert_str_eq(path, "/ckpt/rank0_checkpoint_3/rank0.3");
    struct ckh_ws *ws;
    int64_t step = 0;
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    ck_assert_int_eq(ckh_backend_load(b, "rank0", 3, ws, NULL, 0, 0, NULL), 0);
    ck_assert_int_eq(ckh_ws_get_i64(ws, "step", &step), 0);
    ck_assert_int_eq(step, 30);
    ck_assert_int_eq(ckh_backend_load(b, "rank0", 1, ws, NULL, 0, 0, NULL), CKH_ENOTFOUND);
    ckh_ws_destroy(ws);
    ckh_backend_close(b);
    ckh_simfs_destroy(d);
    ckh_plugin_unload(p);
}
END_TEST

static const char *const adir_good[] = {"bk_adir", "bk_adir_keep2"};

/* keep_last 1 and 2, both crash models: every crash state passes. */
START_TEST(test_adir_passes)
{
    struct ckh_plugin *p;
    struct ckh_explore_result r;
    /* keep_last 1 on node-local disks has no common epoch (test_node_local_keep_last). */
    explore_plugin(adir_good[_i / 2], _i % 2 ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK,
                   _i / 2 ? CKH_EXPLORE_ALL : CKH_EXPLORE_ALL & ~CKH_EXPLORE_NODE_LOCAL, &p, &r);
    ck_assert_msg(r.nvulns == 0, "%s: %s: %s / %s / %s", adir_good[_i / 2],
                  ckh_vuln_name(r.nvulns ? r.vulns[0].kind : 0), r.nvulns ? r.vulns[0].symptom : "",
                  r.nvulns ? r.vulns[0].state : "", r.nvulns ? r.vulns[0].step : "");
    ck_assert_uint_gt(r.stats.states_checked, 20);
    ckh_explore_result_free(&r);
    ckh_plugin_unload(p);
}
END_TEST

/* `ckh validate-backend` on the saver with keep_last 2: every case (crash
 * states, node-local ranks, contract, fault catalogue, at rest, leak)
 * passes, exit status 0. With keep_last 1 every case but crash:node-local
 * passes; that one finds no common epoch (test_node_local_keep_last). */
START_TEST(test_adir_validate)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/lib%s.so", CKH_BACKENDS_DIR, adir_good[_i]);
    /* Each case's time limit (10 s unless told) raised far above what a
     * case needs: under valgrind on a loaded machine the biggest ones can
     * take longer, and no verdict here is about time. */
    char *all[] = {"validate-backend", path, "--quiet", "--timeout", "600", NULL};
    ck_assert_int_eq(ckh_validate_main(5, all), _i ? CKH_VALIDATE_OK : CKH_VALIDATE_VULN);
    char *nl[] = {"validate-backend", path, "--quiet", "--case", "crash:node-local", "--timeout", "600", NULL};
    ck_assert_int_eq(ckh_validate_main(7, nl), _i ? CKH_VALIDATE_OK : CKH_VALIDATE_VULN);
}
END_TEST

/* The saver's defect switches that apply to it, each with its diagnosis:
 * no-fsync: a data file renamed into the folder before its bytes were
 * durable; pointer-before-data: the pointer moved at prepare, before any
 * data; retention-deletes-live: the live folder deleted before the new
 * pointer was durable; overwrite-in-place: files land under their final
 * names without the atomic save's directory fsync, so the pointer can
 * name a folder whose commit marker never became durable. */
START_TEST(test_adir_no_fsync) { expect_control("bk_adir_no_fsync", CKH_EXPLORE_CRASHES, CKH_VULN_RENAME_BEFORE_DATA); }
END_TEST
START_TEST(test_adir_pointer_first) { expect_control("bk_adir_pointer_first", CKH_EXPLORE_CRASHES, CKH_VULN_POINTER_BEFORE_DATA); }
END_TEST
START_TEST(test_adir_retention_live) { expect_control("bk_adir_retention_live", CKH_EXPLORE_CRASHES, CKH_VULN_RETENTION_BEFORE_COMMIT); }
END_TEST
START_TEST(test_adir_in_place) { expect_control("bk_adir_in_place", CKH_EXPLORE_CRASHES, CKH_VULN_POINTER_BEFORE_DATA); }
END_TEST
/* fixed-temp-name does not apply: temporaries live inside a node's own
 * folder, and two ranks' savers never share one, so nothing collides. */
START_TEST(test_adir_fixed_tmp)
{
    expect_control("bk_adir_fixed_tmp", CKH_EXPLORE_ALL & ~CKH_EXPLORE_NODE_LOCAL, -1);
}
END_TEST

/* ---- the retention scenario (rule E8) ---- */

/* Explores only the retention scenario of `name` and asserts its verdict:
 * no finding (expect < 0), or `expect` reported under "retention". */
static void expect_retention(const struct ckh_backend_ops *ops, const char *name,
                             enum ckh_crash_model model, int expect)
{
    struct ckh_explore_config c;
    struct ckh_explore_result r;
    char msg[256];
    cfg_init(&c, ops, CKH_EXPLORE_RETENTION);
    c.model = model;
    ck_assert_int_eq(ckh_explore_run(&c, &r, msg, sizeof(msg)), 0);
    dump(name, &r);
    ck_assert_uint_gt(r.stats.states_checked, 5);
    if (expect < 0) {
        ck_assert_msg(r.nvulns == 0, "%s: %s: %s / %s / %s", name,
                      ckh_vuln_name(r.nvulns ? r.vulns[0].kind : 0),
                      r.nvulns ? r.vulns[0].symptom : "", r.nvulns ? r.vulns[0].state : "",
                      r.nvulns ? r.vulns[0].step : "");
    } else {
        bool found = false;
        for (size_t i = 0; i < r.nvulns; i++)
            found |= r.vulns[i].kind == (enum ckh_vuln_kind)expect &&
                     strcmp(r.vulns[i].scenario, "retention") == 0 && r.vulns[i].step[0] &&
                     r.vulns[i].state[0];
        ck_assert_msg(found, "%s: %s not found under retention (%zu findings%s%s)", name,
                      ckh_vuln_name((enum ckh_vuln_kind)expect), r.nvulns,
                      r.nvulns ? ", first " : "", r.nvulns ? ckh_vuln_name(r.vulns[0].kind) : "");
    }
    ckh_explore_result_free(&r);
}

static void retention_plugin(const char *name, enum ckh_crash_model model, int expect)
{
    struct ckh_plugin *p = load(name);
    expect_retention(ckh_plugin_ops(p), name, model, expect);
    ckh_plugin_unload(p);
}

/* The saver with keep_last 2 and 1, both crash models: epochs 1-3 are
 * committed (keep_last 2 keeps 2 and 3), the traced save of epoch 4
 * deletes epoch 2's folder after its commit, and every crash state still
 * loads as many committed checkpoints as were kept, bit-exact. */
START_TEST(test_retention_adir_passes)
{
    retention_plugin(adir_good[_i / 2], _i % 2 ? CKH_CRASH_EXT4_ORDERED : CKH_CRASH_POSIX_WEAK, -1);
}
END_TEST

/* Deleting before the commit is flagged by the retention scenario too. */
START_TEST(test_retention_first_flagged)
{
    retention_plugin("bk_retention_first", CKH_CRASH_POSIX_WEAK, CKH_VULN_RETENTION_BEFORE_COMMIT);
}
END_TEST
START_TEST(test_retention_adir_live_flagged)
{
    retention_plugin("bk_adir_retention_live", CKH_CRASH_POSIX_WEAK, CKH_VULN_RETENTION_BEFORE_COMMIT);
}
END_TEST

/* minidb with its own keep-last-2 retention inside save: after the commit
 * (correct), or before it (defect: a crash leaves one checkpoint of the
 * two kept, symptom too-few-checkpoints, diagnosis rule b). */
static int keep2_save(struct ckh_backend *b, const char *node, int64_t epoch,
                      const struct ckh_ws *ws, const char *const *names, size_t count, bool first)
{
    int64_t *ep = NULL;
    size_t n = 0;
    int rc = 0;
    if (!first && (rc = ckh_minidb_ops.save(b, node, epoch, ws, names, count)) != 0)
        return rc;
    if ((rc = ckh_minidb_ops.list_epochs(b, node, &ep, &n)) != 0)
        return rc;
    /* Keeps 2 with the new one: 1 before its save, 2 after it. */
    for (size_t i = 0; i + (first ? 1 : 2) < n && rc == 0; i++)
        rc = ckh_minidb_ops.remove(b, node, ep[i]);
    ckh_free(NULL, ep);
    if (rc == 0 && first)
        rc = ckh_minidb_ops.save(b, node, epoch, ws, names, count);
    return rc;
}

static int keep2_after_save(struct ckh_backend *b, const char *node, int64_t epoch,
                            const struct ckh_ws *ws, const char *const *names, size_t count)
{
    return keep2_save(b, node, epoch, ws, names, count, false);
}

static int keep2_first_save(struct ckh_backend *b, const char *node, int64_t epoch,
                            const struct ckh_ws *ws, const char *const *names, size_t count)
{
    return keep2_save(b, node, epoch, ws, names, count, true);
}

static struct ckh_backend_ops keep2_ops;

static int keep2_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    int rc = ckh_minidb_ops.open(cfg, out);
    if (rc == 0)
        (*out)->ops = &keep2_ops;
    return rc;
}

START_TEST(test_retention_minidb_keep2)
{
    keep2_ops = ckh_minidb_ops;
    keep2_ops.open = keep2_open;
    keep2_ops.remove = NULL; /* retention is the backend's own */
    keep2_ops.save = _i ? keep2_first_save : keep2_after_save;
    expect_retention(&keep2_ops, _i ? "minidb-keep2-first" : "minidb-keep2",
                     CKH_CRASH_POSIX_WEAK, _i ? CKH_VULN_RETENTION_BEFORE_COMMIT : -1);
    if (_i) {
        /* The smallest state: one of the two kept epochs already deleted. */
        struct ckh_explore_config c;
        struct ckh_explore_result r;
        cfg_init(&c, &keep2_ops, CKH_EXPLORE_RETENTION);
        ck_assert_int_eq(ckh_explore_run(&c, &r, NULL, 0), 0);
        ck_assert_uint_ge(r.nvulns, 1);
        ck_assert_msg(strstr(r.vulns[0].symptom, "the backend kept 2") != NULL, "%s",
                      r.vulns[0].symptom);
        ckh_explore_result_free(&r);
    }
}
END_TEST

/* retention_epochs is bounded; P = 1 is the new-epoch setup. */
START_TEST(test_retention_config)
{
    struct ckh_explore_config c;
    struct ckh_explore_result r;
    char msg[256] = "";
    cfg_init(&c, &ckh_minidb_ops, CKH_EXPLORE_RETENTION);
    c.retention_epochs = CKH_EXPLORE_MAX_RETAINED + 1;
    ck_assert_int_eq(ckh_explore_run(&c, &r, msg, sizeof(msg)), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "retention epochs"));
    ck_assert_uint_eq(r.nvulns, 0);
    c.retention_epochs = 1;
    ck_assert_int_eq(ckh_explore_run(&c, &r, msg, sizeof(msg)), 0);
    ck_assert_uint_eq(r.nvulns, 0);
    ck_assert_uint_gt(r.stats.states_checked, 5);
    ckh_explore_result_free(&r);
}
END_TEST


/* ---- N ranks on node-local disks (rule E9) ---- */

/* Explores node-local with `ranks` ranks (0: 2, then 4); returns the result. */
static void explore_nodes(const struct ckh_backend_ops *ops, uint32_t ranks, uint64_t only,
                          struct ckh_explore_result *r)
{
    struct ckh_explore_config c;
    char msg[256] = "";
    cfg_init(&c, ops, CKH_EXPLORE_NODE_LOCAL);
    c.ranks = ranks;
    c.only_state = only;
    ck_assert_msg(ckh_explore_run(&c, r, msg, sizeof(msg)) == 0, "%s", msg);
}

/* The finding of kind k under scenario scen, or NULL. */
static const struct ckh_vuln *find_vuln(const struct ckh_explore_result *r, enum ckh_vuln_kind k,
                                        const char *scen)
{
    for (size_t i = 0; i < r->nvulns; i++)
        if (r->vulns[i].kind == k && strcmp(r->vulns[i].scenario, scen) == 0)
            return &r->vulns[i];
    return NULL;
}

/* Correct backends keep a consistent epoch on every node of 2 and 4,
 * whatever op of the job the power loss follows. */
START_TEST(test_node_local_passes)
{
    static const char *const names[] = {"bk_good", "bk_adir_keep2"};
    struct ckh_explore_result r;
    struct ckh_plugin *p = _i < 2 ? load(names[_i]) : NULL;
    const struct ckh_backend_ops *ops = p ? ckh_plugin_ops(p) : &ckh_minidb_ops;
    explore_nodes(ops, 0, 0, &r);
    dump(p ? names[_i] : "minidb", &r);
    ck_assert_msg(r.nvulns == 0, "%s: %s: %s / %s / %s", p ? names[_i] : "minidb",
                  ckh_vuln_name(r.nvulns ? r.vulns[0].kind : 0), r.nvulns ? r.vulns[0].symptom : "",
                  r.nvulns ? r.vulns[0].state : "", r.nvulns ? r.vulns[0].step : "");
    /* 2 and 4 ranks, two schedules each, a crash point after every op that
     * can change a disk, 2 + 2N disk vectors per point. */
    ck_assert_uint_gt(r.stats.prefixes, 40);
    ck_assert_uint_gt(r.stats.states_checked, 40);
    ck_assert_uint_gt(r.stats.trace_ops, 40);
    ckh_explore_result_free(&r);
    ckh_plugin_unload(p);
}
END_TEST

/* Without the directory fsync, a rank's save returns before its rename is
 * durable: with 2 and with 4 ranks, a power loss leaves that rank on epoch
 * 1 while the others moved on; the finding names the rank and the step. */
START_TEST(test_node_local_no_dir_fsync)
{
    struct ckh_plugin *p = load("bk_no_dir_fsync");
    struct ckh_explore_result r;
    explore_nodes(ckh_plugin_ops(p), (uint32_t)(_i ? 4 : 2), 0, &r);
    dump("bk_no_dir_fsync", &r);
    const struct ckh_vuln *v = find_vuln(&r, CKH_VULN_NO_DIR_FSYNC, _i ? "node-local-4"
                                                                        : "node-local-2");
    ck_assert_msg(v != NULL, "%zu findings, first %s", r.nvulns,
                  r.nvulns ? ckh_vuln_name(r.vulns[0].kind) : "-");
    ck_assert_ptr_nonnull(strstr(v->symptom, "its save of epoch 2 returned 0"));
    ck_assert_ptr_nonnull(strstr(v->step, "no fsync of the directory /ckpt"));
    ck_assert_ptr_nonnull(strstr(v->state, _i ? "power loss of all 4 nodes"
                                              : "power loss of all 2 nodes"));
    ck_assert_uint_gt(v->state_index, 1);
    ckh_explore_result_free(&r);
    ckh_plugin_unload(p);
}
END_TEST

/* keep_last 1 deletes a rank's epoch 1 inside its own save: a power loss
 * between two ranks' commits leaves one on epoch 2 only and the other on
 * epoch 1 only, so the job has no epoch to resume from on every node.
 * keep_last 2 keeps epoch 1 until the next save. */
START_TEST(test_node_local_keep_last)
{
    struct ckh_plugin *p = load("bk_adir");
    struct ckh_explore_result r;
    explore_nodes(ckh_plugin_ops(p), 2, 0, &r);
    const struct ckh_vuln *v = find_vuln(&r, CKH_VULN_NO_COMMON_EPOCH, "node-local-2");
    ck_assert_msg(v != NULL, "%zu findings", r.nvulns);
    ck_assert_msg(strstr(v->symptom, "rank0 lists 2; rank1 lists 1") ||
                  strstr(v->symptom, "rank0 lists 1; rank1 lists 2"), "%s", v->symptom);
    ck_assert_msg(strstr(v->step, "deleted the rank's committed epoch 1 before every rank had "
                         "committed epoch 2"), "%s", v->step);
    ckh_explore_result_free(&r);
    ckh_plugin_unload(p);
}
END_TEST

/* Rule E2/E9 and ckh_vuln.state_index: checking only state K reproduces
 * the finding first seen at K, alone, with the same texts; a state before
 * the save's first op shows nothing. */
START_TEST(test_replay_one_state)
{
    struct ckh_plugin *p = load(_i == 0 ? "bk_no_dir_fsync" : "bk_rename_nofsync");
    struct ckh_explore_result all, one;
    unsigned sc = _i == 0 ? CKH_EXPLORE_NODE_LOCAL : CKH_EXPLORE_NEW_EPOCH;
    struct ckh_explore_config c;
    cfg_init(&c, ckh_plugin_ops(p), sc);
    ck_assert_int_eq(ckh_explore_run(&c, &all, NULL, 0), 0);
    ck_assert_uint_ge(all.nvulns, 1);
    for (size_t i = 0; i < all.nvulns; i++) {
        const struct ckh_vuln *v = &all.vulns[i];
        ck_assert_uint_gt(v->state_index, 0);
        ck_assert_uint_le(v->state_index, all.stats.states);
        c.only_state = v->state_index;
        ck_assert_int_eq(ckh_explore_run(&c, &one, NULL, 0), 0);
        ck_assert_uint_eq(one.stats.states_checked, 1);
        ck_assert_uint_eq(one.nvulns, 1);
        ck_assert_int_eq(one.vulns[0].kind, v->kind);
        ck_assert_uint_eq(one.vulns[0].state_index, v->state_index);
        ck_assert_str_eq(one.vulns[0].scenario, v->scenario);
        ck_assert_str_eq(one.vulns[0].symptom, v->symptom);
        ck_assert_str_eq(one.vulns[0].state, v->state);
        ck_assert_str_eq(one.vulns[0].step, v->step);
        ckh_explore_result_free(&one);
    }
    c.only_state = 1;
    ck_assert_int_eq(ckh_explore_run(&c, &one, NULL, 0), 0);
    ck_assert_uint_eq(one.nvulns, 0);
    ck_assert_uint_eq(one.stats.states_checked, 1);
    ckh_explore_result_free(&one);
    ckh_explore_result_free(&all);
    ckh_plugin_unload(p);
}
END_TEST

/* Runs validate-backend with argv (argc entries), its stdout in out. */
static int run_captured(int argc, char **argv, char *out, size_t n)
{
    char path[] = "/tmp/ckh_replay_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    int st = ckh_validate_main(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ssize_t r = pread(fd, out, n - 1, 0);
    out[r > 0 ? r : 0] = '\0';
    close(fd);
    unlink(path);
    return st;
}

/* V4: the terminal prints, per finding, the command that replays its one
 * state; run as printed (minus the program name), it exits 1 and reports
 * the same finding, and nothing else. */
START_TEST(test_replay_command)
{
    static char out[1 << 16], again[1 << 16];
    char lib[1024];
    snprintf(lib, sizeof(lib), "%s/lib%s.so", CKH_BACKENDS_DIR, "bk_no_dir_fsync");
    char *argv[] = {"validate-backend", lib, "--only", "crash:node-local", NULL};
    ck_assert_int_eq(run_captured(4, argv, out, sizeof(out)), CKH_VALIDATE_VULN);
    char *fail = strstr(out, "FAIL  crash:node-local [node-local-2]: no-dir-fsync: ");
    ck_assert_msg(fail != NULL, "%s", out);
    char *eol = strchr(fail, '\n');
    ck_assert_ptr_nonnull(eol);
    char symptom[512];
    snprintf(symptom, sizeof(symptom), "%.*s", (int)(eol - fail), fail);
    char *rep = strstr(fail, "        replay: ckh validate-backend ");
    ck_assert_ptr_nonnull(rep);
    rep += strlen("        replay: ckh ");
    char *end = strchr(rep, '\n');
    ck_assert_ptr_nonnull(end);
    *end = '\0';
    ck_assert_ptr_nonnull(strstr(rep, " --case crash:node-local --state "));
    char *args[16];
    int n = 0;
    for (char *t = strtok(rep, " "); t && n < 15; t = strtok(NULL, " "))
        args[n++] = t;
    args[n] = NULL;
    ck_assert_str_eq(args[0], "validate-backend");
    ck_assert_str_eq(args[1], lib);
    ck_assert_int_eq(run_captured(n, args, again, sizeof(again)), CKH_VALIDATE_VULN);
    ck_assert_msg(strstr(again, symptom) != NULL, "%s\n---\n%s", symptom, again);
    ck_assert_msg(strstr(again, "1 cases, 1 vulnerabilities"), "%s", again);
}
END_TEST

/* ---- ckh_simfs_clone (sim/simfs_clone.c C1-C4) ---- */

static struct ckh_simfs *clone_fixture(void)
{
    struct ckh_simfs_config dc = {.name = "c", .sector_bytes = 512, .seed = 5};
    struct ckh_simfs *d;
    struct ckh_fs *fs;
    struct ckh_file *f;
    ck_assert_int_eq(ckh_simfs_create(&dc, &d), 0);
    fs = ckh_simfs_fs(d);
    ck_assert_int_eq(ckh_fs_mkdirs(fs, "/a/b"), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/a/b/f", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "durable bytes", 13, 0), 13);
    ck_assert_int_eq(ckh_file_fsync(f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ckh_simfs_sync_all(d);
    /* Pending: a write, a new file, a rename, an open handle on an unlinked file. */
    ck_assert_int_eq(ckh_fs_open(fs, "/a/b/f", CKH_O_WRONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "PENDING", 7, 2000), 7);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/a/new", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "x", 1, 0), 1);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_rename(fs, "/a/new", "/a/renamed"), 0);
    return d;
}

/* C1: equal digests and pending lists at clone time; same crash choices
 * give the same durable tree; changes to one never show in the other. */
START_TEST(test_clone_independent)
{
    struct ckh_simfs *d = clone_fixture(), *c;
    struct ckh_file *f, *held;
    ck_assert_int_eq(ckh_fs_open(ckh_simfs_fs(d), "/a/renamed", CKH_O_RDONLY, &held), 0);
    ck_assert_int_eq(ckh_fs_unlink(ckh_simfs_fs(d), "/a/renamed"), 0);
    ck_assert_int_eq(ckh_simfs_clone(d, &c), 0);
    ck_assert_uint_eq(ckh_simfs_digest(c, false), ckh_simfs_digest(d, false));
    ck_assert_uint_eq(ckh_simfs_digest(c, true), ckh_simfs_digest(d, true));
    ck_assert_uint_eq(ckh_simfs_pending_count(c), ckh_simfs_pending_count(d));
    ck_assert_uint_eq(ckh_simfs_used_bytes(c), ckh_simfs_used_bytes(d) - 1); /* C2: no handle */
    for (size_t i = 0; i < ckh_simfs_pending_count(d); i++) {
        struct ckh_simfs_pending_info a, b;
        ck_assert_int_eq(ckh_simfs_pending_get(d, i, &a), 0);
        ck_assert_int_eq(ckh_simfs_pending_get(c, i, &b), 0);
        ck_assert_uint_eq(a.seq, b.seq);
        ck_assert_int_eq(a.kind, b.kind);
        ck_assert_str_eq(a.path, b.path);
    }
    uint64_t live0 = ckh_simfs_digest(d, false), dur0 = ckh_simfs_digest(d, true);

    /* Changes and a crash on the clone leave the original alone. */
    ck_assert_int_eq(ckh_fs_open(ckh_simfs_fs(c), "/a/b/f", CKH_O_WRONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pwrite(f, "clone", 5, 0), 5);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_simfs_crash(c, -1, NULL, 0), 0);
    ck_assert_uint_eq(ckh_simfs_digest(d, false), live0);
    ck_assert_uint_eq(ckh_simfs_digest(d, true), dur0);
    ck_assert_uint_eq(ckh_simfs_pending_count(d), 5); /* write, create, write, rename, unlink */

    /* The same explicit choices on the original and on a fresh clone give
     * the same durable tree (torn write included: tear points follow seqs). */
    struct ckh_simfs *c2;
    ck_assert_int_eq(ckh_simfs_clone(d, &c2), 0);
    enum ckh_crash_choice ch[5] = {CKH_CRASH_TORN_GARBAGE, CKH_CRASH_APPLY, CKH_CRASH_APPLY,
                                   CKH_CRASH_APPLY, CKH_CRASH_DROP};
    ck_assert_int_eq(ckh_simfs_crash(c2, -1, ch, 5), 0);
    ckh_simfs_destroy(c); /* destroy order is free; c2 still works */
    ck_assert_int_eq(ckh_file_close(held), 0);
    ck_assert_int_eq(ckh_simfs_crash(d, -1, ch, 5), 0);
    ck_assert_int_eq(ckh_fs_exists(ckh_simfs_fs(c2), "/a/renamed"), true); /* unlink dropped */
    ck_assert_uint_eq(ckh_simfs_digest(c2, true), ckh_simfs_digest(d, true));
    ck_assert_uint_eq(ckh_simfs_digest(c2, false), ckh_simfs_digest(d, false));
    /* Changes on the original leave the clone alone. */
    ck_assert_int_eq(ckh_fs_unlink(ckh_simfs_fs(d), "/a/b/f"), 0);
    ck_assert_int_eq(ckh_fs_exists(ckh_simfs_fs(c2), "/a/b/f"), true);
    ckh_simfs_destroy(d);
    char buf[16] = "";
    ck_assert_int_eq(ckh_fs_open(ckh_simfs_fs(c2), "/a/b/f", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, buf, 7, 0), 7);
    ck_assert_int_eq(memcmp(buf, "durable", 7), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ckh_simfs_destroy(c2);
}
END_TEST

START_TEST(test_clone_bad_input)
{
    struct ckh_simfs *c = (struct ckh_simfs *)1;
    ck_assert_int_eq(ckh_simfs_clone(NULL, &c), CKH_EINVAL);
    ck_assert_ptr_null(c);
    struct ckh_simfs *d = clone_fixture();
    ck_assert_int_eq(ckh_simfs_clone(d, NULL), CKH_EINVAL);
    ckh_simfs_destroy(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("explore");
    TCase *tc = tcase_create("controls");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_minidb_passes);
    tcase_add_test(tc, test_good_passes);
    tcase_add_test(tc, test_in_place);
    tcase_add_test(tc, test_rename_nofsync);
    tcase_add_test(tc, test_no_dir_fsync);
    tcase_add_test(tc, test_pointer_first);
    tcase_add_test(tc, test_retention_first);
    tcase_add_test(tc, test_fixed_tmp);
    tcase_add_test(tc, test_adir_layout);
    tcase_add_loop_test(tc, test_adir_passes, 0, 4);
    tcase_add_loop_test(tc, test_adir_validate, 0, 2);
    tcase_add_test(tc, test_adir_no_fsync);
    tcase_add_test(tc, test_adir_pointer_first);
    tcase_add_test(tc, test_adir_retention_live);
    tcase_add_test(tc, test_adir_in_place);
    tcase_add_test(tc, test_adir_fixed_tmp);
    tcase_add_loop_test(tc, test_retention_adir_passes, 0, 4);
    tcase_add_test(tc, test_retention_first_flagged);
    tcase_add_test(tc, test_retention_adir_live_flagged);
    tcase_add_loop_test(tc, test_retention_minidb_keep2, 0, 2);
    tcase_add_test(tc, test_retention_config);
    tcase_add_loop_test(tc, test_node_local_passes, 0, 3);
    tcase_add_loop_test(tc, test_node_local_no_dir_fsync, 0, 2);
    tcase_add_test(tc, test_node_local_keep_last);
    tcase_add_loop_test(tc, test_replay_one_state, 0, 2);
    tcase_add_test(tc, test_replay_command);
    tcase_add_test(tc, test_clone_independent);
    tcase_add_test(tc, test_clone_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
