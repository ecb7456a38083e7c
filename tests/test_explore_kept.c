/* Tests for the verify check's kept mount (harness/search/explore_program.c:
 * each check worker serves state after state on one ckhfs mount,
 * ckh_ckhfs_swap_disk, instead of a mount and an unmount per state).
 *
 * The single-threaded C saver of tests/programs/ (fast, no torch), with
 * two checkpoints: the unsafe variant rewrites `latest` in place and fails
 * some crash states, the atomic one passes every state. Each is explored
 * by verify with a mount per state (the path before the kept mount,
 * ckh_xprog_options.verify_remount) and with kept mounts, by one worker
 * and by two: the states, the states checked, the failures, their order
 * and their symptoms (paths included) must be the same, byte for byte;
 * and nothing may stay mounted. Nothing here is about time.
 *
 * The same for a job of two nodes (harness/search/explore_multi.c, whose
 * checks share explore_workers.c's): tests/programs/prog_py_saver.py
 * (plain Python, no torch) with --in-turn, each node on a disk of its own
 * beside a shared one (two kept verify mounts per worker), unsafe and
 * safe: verify by cold starts with a mount per state against warm starts
 * with kept mounts (one and two workers), and the restart check cold
 * against warm; state by state (every failing state, its words and its
 * symptom) the same. Skipped without /usr/bin/python3.
 *
 * Skipped (CKH_SKIP) where FUSE is not available. */
#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "cli/cli_load.h"
#include "exec/tmpdir.h"
#include "search/explore_program.h"
#include "support/fuse.h"
#include "support/skip.h"

/* The saver's scenario (unsafe: `latest` rewritten in place) in dir. */
static struct ckh_scenario *saver_scenario(const char *dir, bool unsafe)
{
    const char *src = getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    char run_sh[PATH_MAX], path[PATH_MAX + 32];
    ck_assert_msg(realpath(src, run_sh) != NULL, "CKH_SOURCE_DIR %s", src);
    strncat(run_sh, "/tests/programs/prog_saver_run.sh", sizeof run_sh - strlen(run_sh) - 1);
    snprintf(path, sizeof path, "%s/%s.yaml", dir, unsafe ? "unsafe" : "safe");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "job:\n  command: [/bin/sh, %s, --files, \"2\"%s]\n  timeout: 300s\n"
               "verify: [/bin/sh, %s, --verify]\n", run_sh, unsafe ? ", --unsafe" : "", run_sh);
    ck_assert_int_eq(fclose(f), 0);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error e;
    if (ckh_cli_parse_one(path, &sc, &e) != 0) {
        char msg[512];
        ckh_scn_error_format(&e, msg, sizeof msg);
        ck_abort_msg("%s", msg);
    }
    return sc;
}

/* The two-node Python job's scenario (unsafe: files rewritten in place)
 * in dir: each node's checkpoint disk its own, a shared disk beside it. */
static struct ckh_scenario *py_multi_scenario(const char *dir, bool unsafe)
{
    const char *src = getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    char prog[PATH_MAX], path[PATH_MAX + 32];
    ck_assert_msg(realpath(src, prog) != NULL, "CKH_SOURCE_DIR %s", src);
    strncat(prog, "/tests/programs/prog_py_saver.py", sizeof prog - strlen(prog) - 1);
    snprintf(path, sizeof path, "%s/multi-%s.yaml", dir, unsafe ? "unsafe" : "safe");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "job:\n  command: [/usr/bin/python3, %s, --in-turn%s]\n  nodes: 2\n  timeout: 300s\n"
               "  disks:\n    - {name: ckpt, mount: /, shared: false}\n    - {name: aux, mount: /aux}\n"
               "verify: [/usr/bin/python3, %s, --verify]\n", prog, unsafe ? ", --unsafe" : "", prog);
    ck_assert_int_eq(fclose(f), 0);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error e;
    if (ckh_cli_parse_one(path, &sc, &e) != 0) {
        char msg[512];
        ckh_scn_error_format(&e, msg, sizeof msg);
        ck_abort_msg("%s", msg);
    }
    return sc;
}

/* One explore by check, start mode, mount per state or kept, workers
 * (max_states: 0 none). */
static void explore_how(const struct ckh_scenario *sc, enum ckh_xprog_check check, enum ckh_xprog_start start,
                        bool remount, unsigned jobs, uint64_t max_states, struct ckh_xprog_result *r)
{
    struct ckh_xprog_options o = {.jobs = jobs, .check = check, .verify_remount = remount, .start_set = true,
                                  .start = start, .max_states = max_states};
    char err[1200];
    int rc = ckh_explore_program(sc, &o, r, err, sizeof err);
    ck_assert_msg(rc == 0, "explore (%s, %s, %s, %u workers): %s", ckh_xprog_check_name(check),
                  ckh_xprog_start_name(start), remount ? "a mount per state" : "kept mounts", jobs, err);
}

static void explore(const struct ckh_scenario *sc, bool remount, unsigned jobs, struct ckh_xprog_result *r)
{
    struct ckh_xprog_options o = {.jobs = jobs, .check = CKH_XPROG_VERIFY, .verify_remount = remount};
    char err[1200];
    int rc = ckh_explore_program(sc, &o, r, err, sizeof err);
    ck_assert_msg(rc == 0, "explore (%s, %u workers): %s", remount ? "a mount per state" : "kept mounts", jobs,
                  err);
}

/* a and b found the same, byte for byte. */
static void same(const struct ckh_xprog_result *a, const struct ckh_xprog_result *b, const char *what)
{
    ck_assert_msg(a->ops == b->ops && a->states == b->states && a->distinct == b->distinct,
                  "%s: %llu/%llu/%llu ops/states/distinct against %llu/%llu/%llu", what,
                  (unsigned long long)a->ops, (unsigned long long)a->states, (unsigned long long)a->distinct,
                  (unsigned long long)b->ops, (unsigned long long)b->states, (unsigned long long)b->distinct);
    ck_assert_msg(a->checked == b->checked && a->nfails == b->nfails, "%s: %llu checked, %zu failed against "
                  "%llu, %zu", what, (unsigned long long)a->checked, a->nfails, (unsigned long long)b->checked,
                  b->nfails);
    for (size_t i = 0; i < a->nfails; i++) {
        ck_assert_msg(a->fails[i].k == b->fails[i].k, "%s: failure %zu is state %llu against %llu", what, i,
                      (unsigned long long)a->fails[i].k, (unsigned long long)b->fails[i].k);
        ck_assert_str_eq(a->fails[i].state, b->fails[i].state);
        ck_assert_str_eq(a->fails[i].symptom, b->fails[i].symptom);
    }
}

START_TEST(test_kept_mounts_same_verdicts)
{
    NEED_FUSE();
    char dir[PATH_MAX], marker[64];
    ck_assert_int_eq(ckh_tmp_make(dir, sizeof dir), 0);
    snprintf(marker, sizeof marker, "/ckh-%ld-", (long)getpid());
    for (int unsafe = 1; unsafe >= 0; unsafe--) {
        struct ckh_scenario *sc = saver_scenario(dir, unsafe);
        struct ckh_xprog_result per_state, kept1, kept2;
        explore(sc, true, 1, &per_state);
        explore(sc, false, 1, &kept1);
        explore(sc, false, 2, &kept2);
        same(&per_state, &kept1, "kept mount, 1 worker");
        same(&per_state, &kept2, "kept mounts, 2 workers");
        ck_assert_uint_eq(per_state.checked, per_state.distinct); /* no time limit: every state */
        ck_assert_uint_gt(per_state.distinct, 10);
        if (unsafe) {
            ck_assert_uint_gt(per_state.nfails, 0);
            /* the symptom names the checkpoint folder as $CKH_CKPT_DIR, never a worker's mount */
            for (size_t i = 0; i < kept2.nfails; i++)
                ck_assert_msg(!strstr(kept2.fails[i].symptom, "/mnt/verify."), "%s", kept2.fails[i].symptom);
        } else {
            ck_assert_uint_eq(per_state.nfails, 0);
        }
        ckh_xprog_result_free(&per_state);
        ckh_xprog_result_free(&kept1);
        ckh_xprog_result_free(&kept2);
        ckh_scenario_free(sc);
    }
    ck_assert_int_eq(ckh_test_ckhfs_mounts(marker), 0);
    ck_assert_int_eq(ckh_tmp_remove(dir), 0);
}
END_TEST

START_TEST(test_multi_cold_warm_same_verdicts)
{
    NEED_FUSE();
    if (access("/usr/bin/python3", X_OK) != 0)
        CKH_SKIP("/usr/bin/python3 is not installed");
    char dir[PATH_MAX], marker[64];
    ck_assert_int_eq(ckh_tmp_make(dir, sizeof dir), 0);
    snprintf(marker, sizeof marker, "/ckh-%ld-", (long)getpid());
    for (int unsafe = 1; unsafe >= 0; unsafe--) {
        struct ckh_scenario *sc = py_multi_scenario(dir, unsafe);
        struct ckh_xprog_result cold, warm1, warm2;
        /* verify: cold starts and a mount per state (the path before), warm and kept */
        explore_how(sc, CKH_XPROG_VERIFY, CKH_XPROG_START_COLD, true, 2, 400, &cold);
        explore_how(sc, CKH_XPROG_VERIFY, CKH_XPROG_START_WARM, false, 1, 400, &warm1);
        explore_how(sc, CKH_XPROG_VERIFY, CKH_XPROG_START_WARM, false, 2, 400, &warm2);
        same(&cold, &warm1, "2 nodes, verify: warm, kept mounts, 1 worker");
        same(&cold, &warm2, "2 nodes, verify: warm, kept mounts, 2 workers");
        ck_assert_uint_eq(cold.checked, cold.distinct);
        ck_assert_uint_gt(cold.distinct, 10);
        ck_assert_uint_eq(cold.warm_starts, 0);
        ck_assert_uint_gt(warm2.warm_starts, 0);
        ck_assert_uint_eq(warm2.cold_starts, 0);
        if (unsafe) {
            ck_assert_uint_gt(cold.nfails, 0);
            for (size_t i = 0; i < warm2.nfails; i++) /* a node's view, never a worker's folder */
                ck_assert_msg(strstr(warm2.fails[i].symptom, "'s view: ") && !strstr(warm2.fails[i].symptom, "/w1/"),
                              "%s", warm2.fails[i].symptom);
        } else {
            ck_assert_uint_eq(cold.nfails, 0);
        }
        ckh_xprog_result_free(&cold);
        ckh_xprog_result_free(&warm1);
        ckh_xprog_result_free(&warm2);
        /* restart: every node restarted cold against warm */
        explore_how(sc, CKH_XPROG_RESTART, CKH_XPROG_START_COLD, false, 2, 120, &cold);
        explore_how(sc, CKH_XPROG_RESTART, CKH_XPROG_START_WARM, false, 2, 120, &warm2);
        same(&cold, &warm2, "2 nodes, restart: warm");
        ck_assert_uint_eq(cold.checked, cold.distinct);
        ck_assert_uint_gt(warm2.warm_starts, 0);
        ck_assert_uint_eq(warm2.cold_starts, 0);
        if (unsafe)
            ck_assert_uint_gt(cold.nfails, 0);
        else
            ck_assert_uint_eq(cold.nfails, 0);
        ckh_xprog_result_free(&cold);
        ckh_xprog_result_free(&warm2);
        ckh_scenario_free(sc);
    }
    ck_assert_int_eq(ckh_test_ckhfs_mounts(marker), 0);
    ck_assert_int_eq(ckh_tmp_remove(dir), 0);
}
END_TEST

static Suite *kept_suite(void)
{
    Suite *s = suite_create("explore_kept");
    TCase *tc = tcase_create("verify");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_kept_mounts_same_verdicts);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("multi");
    tcase_set_timeout(tm, 900);
    tcase_add_test(tm, test_multi_cold_warm_same_verdicts);
    suite_add_tcase(s, tm);
    return s;
}

int main(void)
{
    return ckh_test_run(kept_suite());
}
