/* Tests for the harness runner and its oracles (harness/runner.c,
 * the oracles in harness/) and for the ckh command's verbs and exit statuses
 * (harness/cli.c). Scenarios are parsed from strings; each test asserts
 * the verdict a user would rely on, with the oracle and message. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "cli.h"
#include "oracle.h"
#include "report.h"
#include "runner.h"
#include "scenario.h"

/* Parses text and runs it; returns the runner's code, fills *res. */
static int run_text(const char *text, struct ckh_report_result *res, bool determinism)
{
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_string(text, strlen(text), "t.yaml", NULL, &sc, &err);
    if (rc != 0) {
        fprintf(stderr, "parse: %d:%d: %s\n", err.line, err.column, err.msg);
        return rc;
    }
    struct ckh_run_options o = {.source_dir = getenv("CKH_SOURCE_DIR"),
                                .check_determinism = determinism};
    ckh_report_result_init(res);
    rc = ckh_harness_run(sc, &o, res);
    ckh_scenario_free(sc);
    return rc;
}

static const struct ckh_oracle_result *oracle(const struct ckh_report_result *r, const char *name)
{
    for (size_t i = 0; i < r->noracles; i++)
        if (strcmp(r->oracles[i].name, name) == 0)
            return &r->oracles[i];
    return NULL;
}

START_TEST(test_pipeline_passes)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline, nodes: 3}\n"
                              "expect: {values: {epochs: 4, total: 145}}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_PASS);
    ck_assert_uint_eq(r.runs, 1);
    ck_assert_ptr_nonnull(oracle(&r, "reference"));
    ck_assert(oracle(&r, "reference")->passed);
    ck_assert_ptr_nonnull(oracle(&r, "values"));
    ck_assert_ptr_null(oracle(&r, "lost-work")); /* no crash: does not apply */
    ck_assert_str_eq(r.replay, "ckh run t.yaml --seed 1");
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_kill_resumes)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline, nodes: 2}\n"
                              "faults:\n"
                              "  - on: {node: trainer_1, op: rename, phase: save, epoch: 3}\n"
                              "    do: kill\n"
                              "expect: {values: {resumed_from.trainer_1: 2, total: 145}}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_PASS);
    ck_assert_uint_eq(r.runs, 2);
    ck_assert_uint_eq(r.restarts, 1);
    ck_assert(oracle(&r, "lost-work")->passed);
    ck_assert(oracle(&r, "committed")->passed);
    ck_assert(oracle(&r, "faults-fired")->passed);
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_wrong_value_fails_with_message)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("seed: 9\njob: {workload: seed-pipeline}\n"
                              "expect:\n  values: {total: 146}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "values");
    ck_assert_ptr_nonnull(strstr(r.message, "expected total 146 on trainer_0, got 145"));
    ck_assert_str_eq(r.replay, "ckh run t.yaml --seed 9");
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_fault_that_never_fires_fails)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline}\n"
                              "faults:\n  - on: {op: pwrite, path: /nowhere/*}\n    do: kill\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "faults-fired");
    ck_assert_ptr_nonnull(strstr(r.message, "line 3 never fired"));
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_corruption_detected)
{
    struct ckh_report_result r;
    const char *scn = "job: {workload: seed-pipeline}\n"
                      "faults:\n"
                      "  - {on: {op: stat, phase: save, epoch: 3}, do: kill}\n"
                      "  - {on: {run: 2}, do: corrupt, mode: bit-flip, path: /ckpt/trainer_0.2, offset: 30}\n"
                      "restart: {max_restarts: 1}\n"
                      "expect: {outcome: corruption-detected}\n";
    ck_assert_int_eq(run_text(scn, &r, false), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_PASS);
    ck_assert(oracle(&r, "no-corrupt-load")->passed);
    ckh_report_result_clear(&r);
    /* The same damage expected to pass: the outcome oracle says why not. */
    char *bad = strdup(scn);
    strcpy(strstr(bad, "corruption-detected"), "pass}\n");
    ck_assert_int_eq(run_text(bad, &r, false), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "outcome");
    ck_assert_ptr_nonnull(strstr(r.message, "expected outcome pass, got job-fails; seen: corruption-detected"));
    free(bad);
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_deadlock_reported)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 2, epochs: 1, collective_timeout: 0}\n"
                              "faults:\n  - {on: {node: rank_0, op: allreduce, step: 1}, do: mismatch-collective}\n"
                              "restart: {max_restarts: 0}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "outcome");
    const struct ckh_oracle_result *h = oracle(&r, "hang");
    ck_assert_ptr_nonnull(h);
    ck_assert(!h->passed);
    ck_assert_ptr_nonnull(strstr(h->detail, "deadlocked"));
    ck_assert_ptr_nonnull(strstr(h->detail, "rank_0 (rank 0): barrier"));
    ck_assert_ptr_nonnull(strstr(h->detail, "rank_1 (rank 1): allreduce"));
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_defect_detected_only_with_fault)
{
    struct ckh_report_result r;
    const char *with_kill = "job:\n  workload: ddp-train\n  nodes: 2\n  epochs: 2\n"
                            "  checkpoint_every: {steps: 4}\n  collective_timeout: 5s\n"
                            "  defects: [rng-not-saved]\n"
                            "faults:\n  - {on: {node: rank_1, op: allreduce, step: 5}, do: kill}\n"
                            "expect: {detect: [resume-equivalence]}\n";
    ck_assert_int_eq(run_text(with_kill, &r, false), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_PASS);
    const struct ckh_oracle_result *o = oracle(&r, "resume-equivalence");
    ck_assert(o && o->passed);
    ck_assert_ptr_nonnull(strstr(o->detail, "detected the planted defect: first divergent step"));
    ck_assert_int_gt(r.first_divergent_step, 4);
    ckh_report_result_clear(&r);
    /* Without a restart the defect cannot show: the scenario must fail. */
    ck_assert_int_eq(run_text("job:\n  workload: ddp-train\n  nodes: 2\n  epochs: 2\n"
                              "  defects: [rng-not-saved]\n"
                              "expect: {detect: [resume-equivalence]}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_ptr_nonnull(strstr(r.message, "missed") ? strstr(r.message, "missed")
                                                      : strstr(r.message, "undetected"));
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_determinism_check)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 3, epochs: 1}\n"
                              "faults:\n  - {on: {node: rank_2, op: allreduce, step: 2}, do: crash}\n",
                              &r, true),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_PASS);
    const struct ckh_oracle_result *o = oracle(&r, "determinism");
    ck_assert(o && o->passed);
    ck_assert_ptr_nonnull(strstr(o->detail, "same trace hash"));
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_bad_fault_node_is_input_error)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline, nodes: 2}\n"
                              "faults:\n  - {on: {node: trainer_7, op: fsync}, do: kill}\n",
                              &r, false),
                     CKH_EINVAL);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_ptr_nonnull(strstr(r.message, "line 3: the fault names a node the job does not have"));
    ckh_report_result_clear(&r);
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 2, options: {batch: 0}}\n", &r, false),
                     CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(r.message, "option 'batch': expected an integer 1..4096"));
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- the ckh command ---- */

static char tmpdir[128];

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Runs ckh with args, stdout and stderr into tmpdir/out.txt; returns the
 * exit status. */
static int ckh(int argc, char **argv)
{
    char path[256];
    snprintf(path, sizeof path, "%s/out.txt", tmpdir);
    fflush(NULL);
    int saved_out = dup(1), saved_err = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    int rc = ckh_cli_main(argc, argv);
    fflush(NULL);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    return rc;
}

static char *slurp(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void cli_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ckh_test_runner_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    write_file("good.yaml", "job: {workload: seed-pipeline}\nexpect: {values: {total: 145}}\n");
    write_file("bad-value.yaml", "job: {workload: seed-pipeline}\nexpect: {values: {total: 1}}\n");
    write_file("typo.yaml", "job: {workload: seed-pipeline, epohcs: 3}\n");
}

static void cli_teardown(void)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_cli_exit_codes)
{
    char good[256], bad[256], typo[256], junit[256];
    snprintf(good, sizeof good, "%s/good.yaml", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad-value.yaml", tmpdir);
    snprintf(typo, sizeof typo, "%s/typo.yaml", tmpdir);
    snprintf(junit, sizeof junit, "%s/junit.xml", tmpdir);
    ck_assert_int_eq(ckh(3, (char *[]){"ckh", "run", good, NULL}), CKH_EXIT_OK);
    ck_assert_ptr_nonnull(strstr(slurp("out.txt"), "1 scenario: 1 passed, 0 failed, 0 errors"));
    ck_assert_int_eq(ckh(8, (char *[]){"ckh", "run", good, bad, "--jobs", "2", "--junit", junit, NULL}),
                     CKH_EXIT_FAILED);
    const char *out = slurp("out.txt");
    ck_assert_ptr_nonnull(strstr(out, "expected total 1 on trainer_0, got 145"));
    ck_assert_ptr_nonnull(strstr(out, "run "));
    ck_assert_ptr_nonnull(strstr(out, "--seed 1"));
    const char *xml = slurp("junit.xml");
    ck_assert_ptr_nonnull(xml);
    ck_assert_ptr_nonnull(strstr(xml, "<testcase"));
    ck_assert_ptr_nonnull(strstr(xml, "<failure"));
    ck_assert_int_eq(ckh(3, (char *[]){"ckh", "run", typo, NULL}), CKH_EXIT_BAD_INPUT);
    ck_assert_ptr_nonnull(strstr(slurp("out.txt"), "did you mean 'epochs'?"));
    ck_assert_int_eq(ckh(3, (char *[]){"ckh", "run", "/nonexistent/dir", NULL}), CKH_EXIT_BAD_INPUT);
    ck_assert_int_eq(ckh(4, (char *[]){"ckh", "run", "--bogus", good, NULL}), CKH_EXIT_BAD_INPUT);
    ck_assert_int_eq(ckh(5, (char *[]){"ckh", "run", good, "--jobs", "0", NULL}), CKH_EXIT_BAD_INPUT);
    ck_assert_int_eq(ckh(2, (char *[]){"ckh", "frobnicate", NULL}), CKH_EXIT_BAD_INPUT);
    ck_assert_int_eq(ckh(5, (char *[]){"ckh", "run", good, "--filter", "nomatch*", NULL}),
                     CKH_EXIT_BAD_INPUT);
}
END_TEST

START_TEST(test_cli_list_replay_help)
{
    char good[256];
    snprintf(good, sizeof good, "%s/good.yaml", tmpdir);
    ck_assert_int_eq(ckh(2, (char *[]){"ckh", "list", NULL}), CKH_EXIT_OK);
    const char *out = slurp("out.txt");
    ck_assert_ptr_nonnull(strstr(out, "seed-pipeline"));
    ck_assert_ptr_nonnull(strstr(out, "ddp-train"));
    ck_assert_ptr_nonnull(strstr(out, "minidb"));
    ck_assert_ptr_nonnull(strstr(out, "power-loss"));
    ck_assert_ptr_nonnull(strstr(out, "rng-not-saved"));
    ck_assert_ptr_nonnull(strstr(out, "resume-equivalence"));
    ck_assert_int_eq(ckh(3, (char *[]){"ckh", "list", "colours", NULL}), CKH_EXIT_BAD_INPUT);
    ck_assert_int_eq(ckh(7, (char *[]){"ckh", "replay", good, "--seed", "3", "--op", "rename", NULL}),
                     CKH_EXIT_OK);
    out = slurp("out.txt");
    ck_assert_ptr_nonnull(strstr(out, "rename /ckpt/"));
    ck_assert_ptr_null(strstr(out, " pwrite "));
    ck_assert_ptr_nonnull(strstr(out, "seed 3"));
    ck_assert_int_eq(ckh(5, (char *[]){"ckh", "replay", good, "--op", "nosuchop", NULL}),
                     CKH_EXIT_BAD_INPUT);
    const char *verbs[] = {"run", "list", "replay", "validate-backend", "fuzz", "shrink"};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        ck_assert_int_eq(ckh(3, (char *[]){"ckh", (char *)verbs[i], "--help", NULL}), CKH_EXIT_OK);
        ck_assert_ptr_nonnull(strstr(slurp("out.txt"), "usage: ckh"));
    }
    ck_assert_int_eq(ckh(2, (char *[]){"ckh", "--help", NULL}), CKH_EXIT_OK);
}
END_TEST

static Suite *runner_suite(void)
{
    Suite *s = suite_create("runner");
    TCase *tc = tcase_create("scenarios");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_pipeline_passes);
    tcase_add_test(tc, test_kill_resumes);
    tcase_add_test(tc, test_wrong_value_fails_with_message);
    tcase_add_test(tc, test_fault_that_never_fires_fails);
    tcase_add_test(tc, test_corruption_detected);
    tcase_add_test(tc, test_deadlock_reported);
    tcase_add_test(tc, test_defect_detected_only_with_fault);
    tcase_add_test(tc, test_determinism_check);
    tcase_add_test(tc, test_bad_fault_node_is_input_error);
    suite_add_tcase(s, tc);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 120);
    tcase_add_checked_fixture(cli, cli_setup, cli_teardown);
    tcase_add_test(cli, test_cli_exit_codes);
    tcase_add_test(cli, test_cli_list_replay_help);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(runner_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
