/* Tests of swarm testing (harness/search/fuzz.c): seeds generate the same
 * scenario every time and every generated scenario parses; shards 1/2 and
 * 2/2 together run exactly the seeds of one unsharded run with the same
 * failures and coverage; a planted defect switch is found within a
 * bounded number of seeds and shrunk to a few faults failing the same
 * oracle, and the shrunk file replays deterministically; the determinism
 * check flags a deliberately nondeterministic test double (a backend that
 * reads a process-wide counter). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/workloads.h"
#include "ckh/backend.h"
#include "ckh/err.h"
#include "search/fuzz.h"
#include "exec/runner.h"
#include "search/shrink.h"
#include "cli/cli.h"
#include "judge/judge.h"
#include "support/skip.h"

static bool valgrind(void)
{
    return getenv("CKH_VALGRIND") != NULL;
}

/* ---- generation ---- */

START_TEST(test_generate_is_deterministic)
{
    static const char *const wls[] = {"seed-pipeline", "param-server", "ddp-train", NULL};
    const char *wl = wls[_i % 4];
    struct ckh_fuzz_config cfg = {.workload = wl};
    if (wl && !ckh_workloads_find(wl))
        return;
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    for (uint64_t seed = 1; seed <= 40; seed++) {
        char *a = NULL, *b = NULL, *c = NULL;
        ck_assert_int_eq(ckh_fuzz_generate(seed, &cfg, &a), 0);
        ck_assert_int_eq(ckh_fuzz_generate(seed, &cfg, &b), 0);
        ck_assert_int_eq(ckh_fuzz_generate(seed + 1000, &cfg, &c), 0);
        ck_assert_str_eq(a, b);
        ck_assert_str_ne(a, c);
        struct ckh_scenario *sc = NULL;
        struct ckh_scn_error err;
        int rc = ckh_scenario_parse_string(a, strlen(a), "gen.yaml", &so, &sc, &err);
        if (rc != 0) {
            char m[700];
            ckh_scn_error_format(&err, m, sizeof m);
            ck_abort_msg("seed %llu does not parse: %s\n%s", (unsigned long long)seed, m, a);
        }
        ck_assert_uint_ge(sc->nfaults, 1);
        if (wl)
            ck_assert_str_eq(sc->job.workload, wl);
        ckh_scenario_free(sc);
        free(a);
        free(b);
        free(c);
    }
}
END_TEST

START_TEST(test_generate_bad_input)
{
    char *t = NULL;
    struct ckh_fuzz_config cfg = {.workload = "no-such-workload"};
    ck_assert_int_eq(ckh_fuzz_generate(1, &cfg, &t), CKH_EINVAL);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(ckh_fuzz_generate(1, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fuzz_run_seed(1, NULL, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_fuzz_fired_collect(NULL, NULL, NULL, NULL), CKH_EINVAL);
}
END_TEST

START_TEST(test_phase_names)
{
    ck_assert_int_eq(ckh_fuzz_phase_of("save"), CKH_FUZZ_PH_SAVE);
    ck_assert_int_eq(ckh_fuzz_phase_of(NULL), CKH_FUZZ_PH_OTHER);
    ck_assert_int_eq(ckh_fuzz_phase_of("nonsense"), CKH_FUZZ_PH_OTHER);
    ck_assert_str_eq(ckh_fuzz_phase_name(CKH_FUZZ_PH_REST), "rest");
    ck_assert_str_eq(ckh_fuzz_phase_name(CKH_FUZZ_PH__COUNT), "?");
}
END_TEST

/* Seeds of a fuzz run fire faults, and coverage counts them. */
START_TEST(test_seeds_fire_faults)
{
    struct ckh_fuzz_config cfg = {.workload = "seed-pipeline"};
    struct ckh_fuzz_coverage cov = {0};
    int n = valgrind() ? 24 : 60;
    for (int s = 1; s <= n; s++) {
        struct ckh_fuzz_seed_result r;
        ck_assert_int_eq(ckh_fuzz_run_seed((uint64_t)s, &cfg, &r, NULL), 0);
        ck_assert_int_ne(r.verdict, CKH_VERDICT_ERROR);
        ckh_fuzz_coverage_add(&cov, &r.cov);
    }
    uint64_t save = 0, total = 0;
    for (int k = 0; k < CKH_SCN_ACT__COUNT; k++)
        for (int p = 0; p < CKH_FUZZ_PH__COUNT; p++) {
            total += cov.hits[k][p];
            if (p == CKH_FUZZ_PH_SAVE)
                save += cov.hits[k][p];
        }
    ck_assert_uint_ge(total, (uint64_t)n / 4);
    ck_assert_uint_gt(save, 0);
}
END_TEST

/* ---- shards: the `ckh fuzz` command, output captured ---- */

struct summary {
    unsigned long long seeds;  /* "N seeds run" */
    unsigned long long failed; /* "F failed" */
    unsigned long long cov[CKH_SCN_ACT__COUNT][CKH_FUZZ_PH__COUNT + 1]; /* table rows */
};

static void run_fuzz(char **argv, int argc, struct summary *s)
{
    char path[] = "/tmp/ckh-test-fuzz-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fd, STDOUT_FILENO);
    int rc = ckh_fuzz_main(argc, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(fd);
    ck_assert_int_le(rc, 1);
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, " seeds run");
        if (p) {
            s->seeds = strtoull(line, NULL, 10);
            char *q = strstr(line, ": ");
            ck_assert_ptr_nonnull(q);
            s->failed = strtoull(q + 2, NULL, 10);
            found = true;
            continue;
        }
        for (int k = 0; k < CKH_SCN_ACT__COUNT; k++) {
            const char *nm = ckh_scn_action_name((enum ckh_scn_action_kind)k);
            size_t l = strlen(nm);
            if (strncmp(line, nm, l) == 0 && line[l] == ' ') {
                char *c = line + l;
                for (int ph = 0; ph <= CKH_FUZZ_PH__COUNT; ph++)
                    s->cov[k][ph] = strtoull(c, &c, 10);
            }
        }
    }
    fclose(f);
    unlink(path);
    ck_assert_msg(found, "no summary line");
}

START_TEST(test_shards_cover_one_run)
{
    char seeds[16];
    snprintf(seeds, sizeof seeds, "%d", valgrind() ? 8 : 60);
    char *full[] = {"fuzz", "--seeds", seeds, "--workload", "seed-pipeline", "--no-shrink", "--jobs", "2", NULL};
    char *s1[] = {"fuzz", "--seeds", seeds, "--workload", "seed-pipeline", "--no-shrink", "--shard", "1/2", NULL};
    char *s2[] = {"fuzz", "--seeds", seeds, "--workload", "seed-pipeline", "--no-shrink", "--shard", "2/2", "--jobs", "2", NULL};
    struct summary a, b, c;
    run_fuzz(full, 8, &a);
    run_fuzz(s1, 8, &b);
    run_fuzz(s2, 10, &c);
    ck_assert_uint_eq(a.seeds, strtoull(seeds, NULL, 10));
    ck_assert_uint_eq(b.seeds + c.seeds, a.seeds);
    ck_assert_uint_eq(b.seeds, a.seeds / 2);
    ck_assert_uint_eq(b.failed + c.failed, a.failed);
    for (int k = 0; k < CKH_SCN_ACT__COUNT; k++)
        for (int p = 0; p <= CKH_FUZZ_PH__COUNT; p++)
            ck_assert_uint_eq(b.cov[k][p] + c.cov[k][p], a.cov[k][p]);
    /* Membership: every seed in exactly one shard. */
    for (uint64_t s = 0; s < 100; s++)
        ck_assert(ckh_fuzz_in_shard(s, 1, 2) != ckh_fuzz_in_shard(s, 2, 2));
}
END_TEST

START_TEST(test_main_usage)
{
    char *bad[] = {"fuzz", "--shard", "3/2", NULL};
    char *bad2[] = {"fuzz", "--seeds", "5", "--time", "1s", NULL};
    char *bad3[] = {"fuzz", "--workload", "nope", NULL};
    ck_assert_int_eq(ckh_fuzz_main(3, bad), 2);
    ck_assert_int_eq(ckh_fuzz_main(5, bad2), 2);
    ck_assert_int_eq(ckh_fuzz_main(3, bad3), 2);
}
END_TEST

/* ---- a planted defect ---- */

static int run_file(const char *text, struct ckh_report_result *rr)
{
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_string(text, strlen(text), "shrunk.yaml", &so, &sc, &err);
    if (rc)
        return rc;
    struct ckh_run_options ro = {0};
    ckh_report_result_init(rr);
    rc = ckh_harness_run(sc, &ro, rr);
    ckh_scenario_free(sc);
    return rc;
}

START_TEST(test_planted_defect_found_and_shrunk)
{
    if (!ckh_workloads_find("ddp-train"))
        CKH_SKIP("no ddp-train adapter in this build");
    struct ckh_fuzz_config cfg = {.workload = "ddp-train", .defect = "rng-not-saved"};
    uint64_t found = 0;
    struct ckh_fuzz_seed_result r;
    for (uint64_t s = 1; s <= 100 && !found; s++) {
        ck_assert_int_eq(ckh_fuzz_run_seed(s, &cfg, &r, NULL), 0);
        if (r.verdict == CKH_VERDICT_FAIL)
            found = s;
    }
    ck_assert_msg(found, "rng-not-saved not found within 100 seeds");
    /* The same seed without the defect passes: the defect made it fail. */
    struct ckh_fuzz_config clean = {.workload = "ddp-train"};
    struct ckh_fuzz_seed_result r0;
    ck_assert_int_eq(ckh_fuzz_run_seed(found, &clean, &r0, NULL), 0);
    ck_assert_int_eq(r0.verdict, CKH_VERDICT_PASS);

    char *text = NULL, *shrunk = NULL;
    ck_assert_int_eq(ckh_fuzz_generate(found, &cfg, &text), 0);
    struct ckh_shrink_stats st;
    char msg[512];
    struct ckh_shrink_config sc = {.max_runs = valgrind() ? 60 : 0};
    ck_assert_int_eq(ckh_shrink_text(text, strlen(text), "seed", &sc, &shrunk, &st, msg, sizeof msg), 0);
    ck_assert_str_eq(st.oracle, r.oracle);
    ck_assert_uint_le(st.faults_after, 3);
    ck_assert_uint_ge(st.faults_after, 1);
    ck_assert_uint_le(st.faults_after, st.faults_before);
    ck_assert_uint_gt(st.runs, 1);
    ck_assert_ptr_nonnull(strstr(shrunk, "rng-not-saved"));

    /* The shrunk file replays, twice, with the same verdict and detail. */
    struct ckh_report_result a, b;
    ck_assert_int_eq(run_file(shrunk, &a), 0);
    ck_assert_int_eq(run_file(shrunk, &b), 0);
    ck_assert_int_eq(a.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(a.failed_oracle, r.oracle);
    ck_assert_int_eq(b.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(a.failed_oracle, b.failed_oracle);
    ck_assert_str_eq(a.message, b.message);
    ckh_report_result_clear(&a);
    ckh_report_result_clear(&b);
    free(text);
    free(shrunk);
}
END_TEST

/* ---- the determinism check and a nondeterministic double ---- */

/* A backend that behaves like minidb but, on every save, looks at a path
 * named after a process-wide counter: the second execution of the same
 * seed issues different operations, as code reading a wall clock or a
 * global would. */
struct nondet_backend {
    struct ckh_backend base;   /* first member */
    struct ckh_backend *inner; /* the minidb instance */
    struct ckh_fs *fs;         /* the config's filesystem */
};

static unsigned long nondet_counter;

static int nd_open(const struct ckh_backend_config *cfg, struct ckh_backend **out);
static void nd_close(struct ckh_backend *b)
{
    struct nondet_backend *n = (struct nondet_backend *)b;
    ckh_backend_close(n->inner);
    free(n);
}
static int nd_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                   const char *const *names, size_t count)
{
    struct nondet_backend *n = (struct nondet_backend *)b;
    char p[64];
    struct ckh_stat st;
    snprintf(p, sizeof p, "/nondet-%lu", nondet_counter++);
    (void)ckh_fs_stat(n->fs, p, &st);
    return ckh_backend_save(n->inner, node, epoch, ws, names, count);
}
static int nd_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                   const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    return ckh_backend_load(((struct nondet_backend *)b)->inner, node, epoch, ws, names, count,
                            flags, loaded);
}
static int nd_exists(struct ckh_backend *b, const char *node, int64_t epoch, bool *out)
{
    return ckh_backend_exists(((struct nondet_backend *)b)->inner, node, epoch, out);
}
static int nd_list(struct ckh_backend *b, const char *node, int64_t **e, size_t *n)
{
    return ckh_backend_list_epochs(((struct nondet_backend *)b)->inner, node, e, n);
}
static int nd_remove(struct ckh_backend *b, const char *node, int64_t epoch)
{
    return ckh_backend_remove(((struct nondet_backend *)b)->inner, node, epoch);
}
static int nd_db_name(struct ckh_backend *b, const char *node, int64_t epoch, char *buf, size_t n)
{
    return ckh_backend_db_name(((struct nondet_backend *)b)->inner, node, epoch, buf, n);
}

static const struct ckh_backend_ops nondet_ops = {
    .version = 1,
    .name = "nondet-test",
    .open = nd_open,
    .close = nd_close,
    .save = nd_save,
    .load = nd_load,
    .exists = nd_exists,
    .list_epochs = nd_list,
    .remove = nd_remove,
    .db_name = nd_db_name,
};

static int nd_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    struct nondet_backend *n = calloc(1, sizeof *n);
    if (!n)
        return CKH_ENOMEM;
    int rc = ckh_minidb_ops.open(cfg, &n->inner);
    if (rc) {
        free(n);
        return rc;
    }
    n->base.ops = &nondet_ops;
    n->fs = cfg->fs;
    *out = &n->base;
    return 0;
}

static void run_backend(const char *backend, bool check, struct ckh_report_result *rr)
{
    char text[256];
    snprintf(text, sizeof text, "job: {workload: seed-pipeline, nodes: 2, backend: %s}\n", backend);
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "nd.yaml", &so, &sc, &err), 0);
    struct ckh_run_options ro = {.check_determinism = check};
    ckh_report_result_init(rr);
    ck_assert_int_eq(ckh_harness_run(sc, &ro, rr), 0);
    ckh_scenario_free(sc);
}

START_TEST(test_determinism_flags_nondeterministic_double)
{
    int rc = ckh_backend_register(&nondet_ops);
    ck_assert(rc == 0 || rc == CKH_EEXISTS);
    struct ckh_report_result rr;
    run_backend("nondet-test", true, &rr);
    ck_assert_int_eq(rr.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(rr.failed_oracle, "determinism");
    ckh_report_result_clear(&rr);
    /* Without the check the double passes: only the check sees it. */
    run_backend("nondet-test", false, &rr);
    ck_assert_int_eq(rr.verdict, CKH_VERDICT_PASS);
    ckh_report_result_clear(&rr);
    /* The reference backend is deterministic. */
    run_backend("minidb", true, &rr);
    ck_assert_int_eq(rr.verdict, CKH_VERDICT_PASS);
    bool ran = false;
    for (size_t i = 0; i < rr.noracles; i++)
        if (strcmp(rr.oracles[i].name, "determinism") == 0)
            ran = rr.oracles[i].passed;
    ck_assert(ran);
    ckh_report_result_clear(&rr);
}
END_TEST

static Suite *fuzz_suite(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("generate");
    tcase_add_loop_test(tc, test_generate_is_deterministic, 0, 4);
    tcase_add_test(tc, test_generate_bad_input);
    tcase_add_test(tc, test_phase_names);
    suite_add_tcase(s, tc);
    tc = tcase_create("run");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_seeds_fire_faults);
    tcase_add_test(tc, test_shards_cover_one_run);
    tcase_add_test(tc, test_main_usage);
    tcase_add_test(tc, test_planted_defect_found_and_shrunk);
    tcase_add_test(tc, test_determinism_flags_nondeterministic_double);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(fuzz_suite());
}
