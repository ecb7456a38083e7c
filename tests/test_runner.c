/* Tests for the harness runner and its oracles (harness/exec/runner.c,
 * the oracles in harness/) and for the ckh command's verbs and exit statuses
 * (harness/cli/cli.c). Scenarios are parsed from strings; each test asserts
 * the verdict a user would rely on, with the oracle and message. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "cli/cli.h"
#include "judge/oracle.h"
#include "report.h"
#include "exec/runner.h"
#include "model/scenario.h"
#include "judge/judge.h"

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
    ck_assert_uint_gt(r.virtual_ns, 0); /* the simulated time the report shows */
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
    /* It opens with the first cause: the run and node that failed, and how. */
    ck_assert_str_eq(r.message, "run 2: trainer_0 failed with CKH_ECORRUPT in load; expected outcome pass: did "
                                "not hold; the job ended job-fails; seen: corruption-detected (2 runs, 0 failed "
                                "saves)");
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
    ck_assert_ptr_nonnull(strstr(o->detail, "detected the planted defect: step "));
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
    /* The message names the node and the fault's line, and lists the nodes. */
    ck_assert_ptr_nonnull(strstr(r.message, "t.yaml:3:5: the fault names node 'trainer_7', which the "
                                            "job does not have (its nodes: trainer_0, trainer_1)"));
    ck_assert_ptr_null(r.replay); /* bad input: nothing ran, nothing to replay */
    ckh_report_result_clear(&r);
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 2, options: {batch: 0}}\n", &r, false),
                     CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(r.message, "option 'batch': expected an integer 1..4096"));
    ckh_report_result_clear(&r);
}
END_TEST


/* A bit-flip offset past the end of the file is an error naming the
 * fault's line, and an offset whose bit index overflows 64 bits (a model
 * built in code: the parser refuses it) never wraps onto another byte. */
START_TEST(test_corrupt_offset_past_end)
{
    struct ckh_report_result r;
    const char *scn = "job: {workload: seed-pipeline}\n"
                      "faults:\n"
                      "  - {on: {run: 2}, do: corrupt, mode: bit-flip, path: /ckpt/trainer_0.2, offset: 1000000}\n"
                      "  - {on: {op: stat, phase: save, epoch: 3}, do: kill}\n"
                      "restart: {max_restarts: 1}\n";
    ck_assert_int_eq(run_text(scn, &r, false), CKH_EINVAL);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_msg(strstr(r.message, "t.yaml:3:5: corrupt bit-flip: offset 1000000 is past the end of "
                                    "/ckpt/trainer_0.2") != NULL, "%s", r.message);
    ckh_report_result_clear(&r);

    struct ckh_scenario *sc = NULL;
    ck_assert_int_eq(ckh_scenario_parse_string(scn, strlen(scn), "t.yaml", NULL, &sc, NULL), 0);
    sc->faults[0].act.u.corrupt.offset = (1ull << 61) + 40; /* * 8 wraps to byte 40 */
    struct ckh_run_options o = {.source_dir = getenv("CKH_SOURCE_DIR")};
    ckh_report_result_init(&r);
    ck_assert_int_eq(ckh_harness_run(sc, &o, &r), CKH_EINVAL);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_msg(strstr(r.message, "t.yaml:3:5: corrupt bit-flip: offset 2305843009213693992 is past the end") != NULL,
                  "%s", r.message);
    ckh_report_result_clear(&r);
    ckh_scenario_free(sc);
}
END_TEST

/* expect.max_restarts: a slow save (2 s per fsync of rank 1's save) costs
 * a restart of every rank when the collective timeout is 1 s, and the
 * restarts oracle names why run 1 ended; with 10 s it costs none. And
 * restart.world_size honours options.reshard: false: the ranks refuse the
 * old world's checkpoint, so the job fails (the outcome such a scenario
 * expects). */
START_TEST(test_restart_budget_and_reshard_off)
{
    struct ckh_report_result r;
    const char *slow = "job:\n  workload: ddp-train\n  nodes: 2\n  epochs: 2\n  checkpoint_every: {steps: 4}\n"
                       "  collective_timeout: %s\n"
                       "faults:\n  - {on: {node: rank_1, op: fsync, phase: save, repeat: true}, do: delay, duration: 2s}\n"
                       "expect: {max_restarts: 0}\n";
    char text[512];
    snprintf(text, sizeof text, slow, "1s");
    ck_assert_int_eq(run_text(text, &r, false), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    const struct ckh_oracle_result *o = oracle(&r, "restarts");
    ck_assert(o && !o->passed);
    ck_assert_ptr_nonnull(strstr(o->detail, "CKH_ETIMEOUT"));
    ckh_report_result_clear(&r);
    snprintf(text, sizeof text, slow, "10s");
    ck_assert_int_eq(run_text(text, &r, false), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message);
    ckh_report_result_clear(&r);
    const char *off = "job:\n  workload: ddp-train\n  nodes: 4\n  epochs: 3\n  checkpoint_every: {steps: 2}\n"
                      "  collective_timeout: 5s\n  options: {samples: 66, reshard: %s}\n"
                      "faults:\n  - {on: {node: rank_1, op: allreduce, phase: epoch, epoch: 1, nth: 7}, do: kill}\n"
                      "restart: {world_size: 2, max_restarts: 1}\n";
    snprintf(text, sizeof text, off, "false");
    ck_assert_int_eq(run_text(text, &r, false), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    o = oracle(&r, "outcome");
    ck_assert(o && !o->passed);
    ckh_report_result_clear(&r);
    snprintf(text, sizeof text, off, "true");
    ck_assert_int_eq(run_text(text, &r, false), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* An absurd option size is refused with the key and the limit. */
START_TEST(test_option_size_limit)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: param-server, options: {param_bytes: 1TiB}}\n", &r, false),
                     CKH_EINVAL);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_msg(strstr(r.message, "t.yaml:1:54: option 'param_bytes': more than a parameter server can "
                                    "hold (at most 1GiB)") != NULL, "%s", r.message);
    ckh_report_result_clear(&r);
}
END_TEST


/* Arming is linear in the number of faults (the simulator's rule array
 * grows geometrically): 20k faults that never fire run to a pass well
 * within the timeout in every build, sanitizers included (it took minutes
 * under ASan when each rule was a realloc by one). */
START_TEST(test_many_faults)
{
    size_t n = getenv("CKH_VALGRIND") ? 2000 : 20000, cap = 128 + n * 72, len = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    len += (size_t)snprintf(t, cap, "job: {workload: seed-pipeline, nodes: 1}\nfaults:\n");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, cap - len,
                                "  - {on: {op: open, path: /nowhere/%zu}, do: errno, errno: EIO}\n", i);
    snprintf(t + len, cap - len, "expect: {skip: [faults-fired]}\n");
    struct ckh_report_result r;
    ck_assert_int_eq(run_text(t, &r, false), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_PASS);
    ck_assert_uint_eq(r.runs, 1);
    ckh_report_result_clear(&r);
    free(t);
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


/* Input errors exit 2 with a message naming what is wrong: a fault on a
 * node the job does not have, expect.golden naming a folder. */
START_TEST(test_cli_input_errors)
{
    char node[256], golden[256], dir[256];
    write_file("node.yaml", "job: {workload: seed-pipeline, nodes: 2}\n"
                            "faults:\n  - {on: {node: trainer_9, op: fsync}, do: kill}\n");
    snprintf(node, sizeof node, "%s/node.yaml", tmpdir);
    ck_assert_int_eq(ckh(3, (char *[]){"ckh", "run", node, NULL}), CKH_EXIT_BAD_INPUT);
    ck_assert_ptr_nonnull(strstr(slurp("out.txt"), "node.yaml:3:5: the fault names node 'trainer_9'"));
    snprintf(dir, sizeof dir, "%s/reference", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(dir, sizeof dir, "%s/reference/folder", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    write_file("golden.yaml", "job: {workload: seed-pipeline}\nexpect: {golden: folder}\n");
    snprintf(golden, sizeof golden, "%s/golden.yaml", tmpdir);
    ck_assert_int_eq(ckh(3, (char *[]){"ckh", "run", golden, NULL}), CKH_EXIT_BAD_INPUT);
    const char *out = slurp("out.txt");
    ck_assert_msg(strstr(out, "expect.golden 'folder' names ") && strstr(out, "reference/folder, not a file"),
                  "%s", out);
    rmdir(dir);
    snprintf(dir, sizeof dir, "%s/reference", tmpdir);
    rmdir(dir);
}
END_TEST

/* ---- restart with another world size (harness/exec/runner.c, ddp-train) ---- */

/* Parses the library scenario at CKH_SOURCE_DIR/rel and runs it. */
static int run_file(const char *rel, struct ckh_report_result *res)
{
    char path[1024];
    const char *root = getenv("CKH_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_file(path, NULL, &sc, &err);
    if (rc != 0) {
        fprintf(stderr, "parse %s: %d:%d: %s\n", path, err.line, err.column, err.msg);
        return rc;
    }
    struct ckh_run_options o = {.source_dir = root};
    ckh_report_result_init(res);
    rc = ckh_harness_run(sc, &o, res);
    ckh_scenario_free(sc);
    return rc;
}

/* Shrink (4 -> 2) and grow (2 -> 4) after a kill mid-epoch: both pass in
 * two runs, "reshard" judges every epoch, and the oracles that compare
 * with the reference run at the first world stay out. */
START_TEST(test_world_size_changes)
{
    static const char *const files[] = {"scenarios/ddp/world-size-shrink.yaml",
                                         "scenarios/ddp/world-size-grow.yaml"};
    static const char *const worlds[] = {"world 4 -> 2", "world 2 -> 4"};
    struct ckh_report_result r;
    ck_assert_int_eq(run_file(files[_i], &r), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s: %s", files[_i], r.message);
    ck_assert_uint_eq(r.runs, 2);
    const struct ckh_oracle_result *o = oracle(&r, "reshard");
    ck_assert_ptr_nonnull(o);
    ck_assert(o->passed);
    ck_assert_ptr_nonnull(strstr(o->detail, worlds[_i]));
    ck_assert_ptr_nonnull(strstr(o->detail, "each of 3 epochs read all 66 samples"));
    ck_assert(oracle(&r, "values")->passed); /* resumed mid-epoch, from the scenario */
    ck_assert(oracle(&r, "liveness")->passed);
    ck_assert(oracle(&r, "lost-work")->passed);
    ck_assert_ptr_null(oracle(&r, "resume-equivalence"));
    ck_assert_ptr_null(oracle(&r, "reference"));
    ck_assert_ptr_null(oracle(&r, "no-corrupt-load"));
    ckh_report_result_clear(&r);
}
END_TEST

/* The crash comes after an epoch-end checkpoint: the interrupted epoch was
 * untouched, so the new world starts it afresh (padded for 3 ranks). */
START_TEST(test_world_size_at_epoch_boundary)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 2, epochs: 2, collective_timeout: 5s,\n"
                              "      options: {samples: 64}}\n"
                              "faults:\n"
                              "  - {on: {node: rank_1, op: allreduce, phase: epoch, epoch: 1, nth: 6},"
                              " do: kill}\n"
                              "restart: {world_size: 3}\n"
                              "expect: {values: {runs: 2, resumed_from.rank_2: 8}}\n",
                              &r, false),
                     0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message);
    const struct ckh_oracle_result *o = oracle(&r, "reshard");
    ck_assert(o && o->passed);
    ck_assert_ptr_nonnull(strstr(o->detail, "world 2 -> 3: each of 2 epochs read all 64 samples"));
    ckh_report_result_clear(&r);
}
END_TEST

/* The planted defect: the old world's sampler state loaded without
 * resharding repeats part of the interrupted epoch; "reshard" names it. */
START_TEST(test_world_size_defect_detected)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_file("scenarios/defects/reshard-ignored.yaml", &r), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message);
    const struct ckh_oracle_result *o = oracle(&r, "reshard");
    ck_assert(o && o->passed);
    ck_assert_ptr_nonnull(strstr(o->detail, "detected the planted defect: epoch 1 read 74 entries, "
                                            "expected 68"));
    ck_assert_ptr_nonnull(strstr(o->detail, "repeated"));
    ck_assert_int_eq(r.first_divergent_step, 1);
    ckh_report_result_clear(&r);
    /* The same job without the defect passes the oracle. */
    ck_assert_int_eq(run_text("job:\n  workload: ddp-train\n  nodes: 4\n  epochs: 3\n"
                              "  checkpoint_every: {steps: 2}\n  collective_timeout: 5s\n"
                              "  options: {samples: 66}\n"
                              "faults:\n  - {on: {node: rank_1, op: allreduce, phase: epoch, epoch: 1, "
                              "nth: 7}, do: kill}\n"
                              "restart: {world_size: 2}\n",
                              &r, false),
                     0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message);
    ck_assert(oracle(&r, "reshard")->passed);
    ckh_report_result_clear(&r);
}
END_TEST

/* world_size equal to the job's world changes nothing; a resizing job that
 * never restarts runs at its first world and "reshard" does not apply. */
START_TEST(test_world_size_unchanged_or_unused)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 2, epochs: 2, collective_timeout: 5s}\n"
                              "faults:\n  - {on: {node: rank_1, op: allreduce, step: 5}, do: kill}\n"
                              "restart: {world_size: 2}\n",
                              &r, false),
                     0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message);
    ck_assert_uint_eq(r.runs, 2);
    ck_assert(oracle(&r, "resume-equivalence") && oracle(&r, "resume-equivalence")->passed);
    ck_assert_ptr_null(oracle(&r, "reshard"));
    ckh_report_result_clear(&r);
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 2, epochs: 1}\n"
                              "restart: {world_size: 4}\n",
                              &r, false),
                     0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message);
    ck_assert_uint_eq(r.runs, 1);
    ck_assert_ptr_null(oracle(&r, "reshard"));
    ck_assert_ptr_null(oracle(&r, "resume-equivalence"));
    ck_assert_ptr_null(oracle(&r, "reference"));
    ckh_report_result_clear(&r);
}
END_TEST

/* Workloads with a fixed set of nodes refuse restart.world_size. */
START_TEST(test_world_size_refused)
{
    static const char *const workloads[] = {"seed-pipeline", "param-server"};
    char text[256], want[160];
    snprintf(text, sizeof text, "job: {workload: %s, nodes: 3}\nrestart: {world_size: 2}\n",
             workloads[_i]);
    struct ckh_report_result r;
    ck_assert_int_eq(run_text(text, &r, false), CKH_EINVAL);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    snprintf(want, sizeof want,
             "restart.world_size: workload '%s' cannot restart with another world size",
             workloads[_i]);
    ck_assert_msg(strstr(r.message, want) != NULL, "message: %s", r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- the simulator's park and set_rank (sim/sched.c) ---- */

struct world_probe {
    int rank[4];  /* ckh_coll_rank per node, -2: not run */
    int world[4]; /* ckh_coll_world_size per node */
    int64_t sum[4]; /* all-reduce of the ranks */
    int starts[4]; /* incarnations started */
};

static int prog_world(struct ckh_env *env, void *arg)
{
    struct world_probe *p = arg;
    int id = ckh_node_name(env->node)[1] - '0'; /* nodes are "n0".."n3" */
    p->starts[id]++;
    if (!env->coll) {
        p->rank[id] = -1;
        return 0;
    }
    p->rank[id] = ckh_coll_rank(env->coll);
    p->world[id] = ckh_coll_world_size(env->coll);
    int64_t v = p->rank[id];
    if (ckh_coll_allreduce(env->coll, &v, 1, CKH_DT_I64, CKH_RED_SUM, 0) != 0)
        return 1;
    p->sum[id] = v;
    return 0;
}

static struct ckh_sim *world_sim(struct world_probe *p, int ranked)
{
    struct ckh_sim_config cfg = {.seed = 5, .keep_trace = true, .stack_bytes = 64 * 1024};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        struct ckh_node_config nc = {.name = name, .main = prog_world, .arg = p,
                                     .rank = i < ranked ? i : -1};
        ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
        p->rank[i] = -2;
    }
    return sim;
}

/* A parked node is not launched, leaves no trace line, survives a kill
 * attempt, and runs again after ckh_sim_restart; ranks move between runs
 * (a shrink with two ranks swapped, then a grow), and the group follows. */
START_TEST(test_sim_park_and_set_rank)
{
    struct world_probe p;
    struct ckh_sim *sim = world_sim(&p, 2);
    ck_assert_int_eq(ckh_sim_park(sim, 2), 0);
    ck_assert_int_eq(ckh_sim_park(sim, 3), 0);
    ck_assert_int_eq(ckh_sim_park(sim, 3), 0); /* already parked: no-op */
    ck_assert_int_eq(ckh_sim_trace_len(sim), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(p.world[0], 2);
    ck_assert_int_eq(p.sum[1], 1);
    ck_assert_int_eq(p.starts[2] + p.starts[3], 0);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 3, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_PARKED);
    ck_assert_int_eq(ckh_sim_kill(sim, 3, false), CKH_ESTATE);
    for (uint64_t i = 0; i < ckh_sim_trace_len(sim); i++) {
        struct ckh_trace_rec tr;
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &tr), 0);
        ck_assert_int_lt(tr.node, 2);
    }

    /* Grow to 4: the parked nodes join as ranks 2 and 3. */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(ckh_sim_set_rank(sim, i, i), 0);
        ck_assert_int_eq(ckh_sim_restart(sim, i), 0);
    }
    ck_assert_int_eq(ckh_sim_node_status(sim, 2, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_READY);
    ck_assert_int_eq(st.rank, 2);
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(p.rank[i], i);
        ck_assert_int_eq(p.world[i], 4);
        ck_assert_int_eq(p.sum[i], 6);
    }

    /* Shrink to 2 with the two ranks on other nodes and swapped: the size
     * of the group is back to 2, its rank map is new. */
    ck_assert_int_eq(ckh_sim_set_rank(sim, 3, 0), CKH_EEXISTS); /* node 0 holds rank 0 */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(ckh_sim_set_rank(sim, i, -1), 0);
    ck_assert_int_eq(ckh_sim_set_rank(sim, 3, 0), 0);
    ck_assert_int_eq(ckh_sim_set_rank(sim, 2, 1), 0);
    ck_assert_int_eq(ckh_sim_park(sim, 0), 0);
    ck_assert_int_eq(ckh_sim_park(sim, 1), 0);
    ck_assert_int_eq(ckh_sim_restart(sim, 2), 0);
    ck_assert_int_eq(ckh_sim_restart(sim, 3), 0);
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(p.rank[3], 0);
    ck_assert_int_eq(p.rank[2], 1);
    ck_assert_int_eq(p.world[2], 2);
    ck_assert_int_eq(p.sum[3], 1);
    ck_assert_int_eq(p.starts[0], 2);
    ck_assert_int_eq(p.starts[3], 2);
    ck_assert_int_eq(ckh_sim_node_status(sim, 3, &st), 0);
    ck_assert_uint_eq(st.incarnation, 2);
    ckh_sim_destroy(sim);
}
END_TEST

static int prog_set_rank_inside(struct ckh_env *env, void *arg)
{
    (void)env;
    struct ckh_sim *sim = arg;
    return ckh_sim_set_rank(sim, 1, 1) == CKH_ESTATE ? 0 : 1;
}

/* Bad input and wrong states get their codes; nothing changes. */
START_TEST(test_sim_set_rank_errors)
{
    struct world_probe p;
    struct ckh_sim *sim = world_sim(&p, 4);
    ck_assert_int_eq(ckh_sim_set_rank(NULL, 0, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_set_rank(sim, 4, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_set_rank(sim, 0, -2), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_set_rank(sim, 0, 1), CKH_EEXISTS);
    ck_assert_ptr_nonnull(strstr(ckh_sim_errmsg(sim), "rank 1 already held by n1"));
    ck_assert_int_eq(ckh_sim_set_rank(sim, 0, 0), 0); /* unchanged: fine */
    ck_assert_int_eq(ckh_sim_park(NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_park(sim, -1), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), CKH_ESTATE); /* READY: not stopped */
    /* A gap in the ranks is refused when the run starts. */
    ck_assert_int_eq(ckh_sim_set_rank(sim, 3, -1), 0);
    ck_assert_int_eq(ckh_sim_set_rank(sim, 2, 3), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_sim_errmsg(sim), "ranks must be 0..2"));
    ckh_sim_destroy(sim);

    /* RUNNING (stopped by the op limit), and inside a run. */
    struct ckh_sim_config cfg = {.seed = 1, .op_limit = 1, .stack_bytes = 64 * 1024};
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    struct ckh_node_config a = {.name = "a", .main = prog_set_rank_inside, .arg = sim, .rank = 0};
    struct ckh_node_config b = {.name = "b", .main = prog_set_rank_inside, .arg = sim, .rank = 1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &a, NULL), 0);
    ck_assert_int_eq(ckh_sim_add_node(sim, &b, NULL), 0);
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    struct ckh_node_status st;
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(ckh_sim_node_status(sim, i, &st), 0);
        if (st.state == CKH_NODE_RUNNING) {
            ck_assert_int_eq(ckh_sim_set_rank(sim, i, -1), CKH_ESTATE);
            ck_assert_int_eq(ckh_sim_park(sim, i), CKH_ESTATE);
        } else {
            ck_assert_int_eq(st.state, CKH_NODE_EXITED);
            ck_assert_int_eq(st.exit_status, 0); /* set_rank inside the run: CKH_ESTATE */
        }
    }
    ckh_sim_destroy(sim);
}
END_TEST


/* A run that never ends is stopped at the virtual time limit and reported
 * as a hang naming what each node was doing. */
START_TEST(test_hang_reported)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: ddp-train, nodes: 2, epochs: 1, collective_timeout: 0}\n"
                              "faults:\n  - {on: {node: rank_0, op: allreduce, step: 1}, do: delay, duration: 100h}\n"
                              "restart: {max_restarts: 0}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    const struct ckh_oracle_result *h = oracle(&r, "hang");
    ck_assert(h && !h->passed);
    ck_assert_ptr_nonnull(strstr(h->detail, "hung (time limit reached)"));
    ckh_report_result_clear(&r);
}
END_TEST

/* An at-rest fault that finds nothing to damage did not fire. */
START_TEST(test_at_rest_fault_on_nothing_fails)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline}\n"
                              "faults:\n"
                              "  - {on: {op: stat, phase: save, epoch: 3}, do: kill}\n"
                              "  - {on: {run: 2}, do: corrupt, mode: bit-flip, path: /ckpt/trainer_O.2}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "faults-fired");
    ck_assert_ptr_nonnull(strstr(r.message, "corrupt fault at line 4 never fired"));
    ckh_report_result_clear(&r);
}
END_TEST

/* A planted-defect scenario whose oracle fails without the defect too
 * (here: GPUs too small for any load) does not isolate it: FAIL. */
START_TEST(test_defect_control_run)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job:\n  workload: ddp-train\n  nodes: 2\n  epochs: 3\n"
                              "  checkpoint_every: {steps: 4}\n  collective_timeout: 5s\n"
                              "  gpu_memory: 2KiB\n  defects: [no-device-map]\n"
                              "faults:\n  - {on: {node: rank_1, op: allreduce, step: 6}, do: kill}\n"
                              "restart: {max_restarts: 1}\n"
                              "expect: {detect: [liveness]}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "liveness");
    ck_assert_ptr_nonnull(strstr(r.message, "without the defect switches too"));
    ckh_report_result_clear(&r);
}
END_TEST

/* keep: synced makes a crash's outcome independent of the seed. */
START_TEST(test_crash_keep_synced_any_seed)
{
    const char *scn = "job:\n  workload: ddp-train\n  nodes: 2\n  epochs: 2\n"
                      "  checkpoint_every: {steps: 3}\n  collective_timeout: 5s\n"
                      "faults:\n  - {on: {node: rank_0, op: allreduce, step: 7}, do: crash, keep: synced}\n"
                      "expect: {values: {resumed_from.rank_0: 6}}\n";
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(scn, strlen(scn), "t.yaml", NULL, &sc, &err), 0);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct ckh_run_options o = {.seed_set = true, .seed = seed};
        struct ckh_report_result r;
        ckh_report_result_init(&r);
        ck_assert_int_eq(ckh_harness_run(sc, &o, &r), 0);
        ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "seed %llu: %s", (unsigned long long)seed,
                      r.message ? r.message : "");
        ckh_report_result_clear(&r);
    }
    ckh_scenario_free(sc);
}
END_TEST

/* Workloads refuse what they cannot honour instead of ignoring it. */
/* expect.values: each kind of value that does not hold fails the values
 * oracle with the line and what was expected against what came; all of
 * them holding passes. */
START_TEST(test_expected_values_each_kind)
{
    static const struct {
        const char *values;
        const char *message;
    } cases[] = {
        {"runs: 2", "line 2: expected runs 2, got 1"},
        {"restarts: 1", "line 2: expected restarts 1, got 0"},
        {"blobs.trainer_0: \"x\"", "line 2: expected blobs.trainer_0 {x}, got {trainer_0/data_finished,"
                                   "trainer_0/dataset,trainer_0/reader_pos,trainer_0/total}"},
        {"blobs.nobody: \"x\"", "line 2: 'blobs.nobody' needs an existing node (blobs.<node>)"},
        {"resumed_from.trainer_0: 3", "line 2: expected resumed_from 3 on trainer_0, got -1"},
        {"epochs.nobody: 4", "line 2: no node named 'nobody'"},
        {"total.trainer_0: 1", "line 2: expected total 1 on trainer_0, got 145"},
        {"digest: \"00000000deadbeef\"", "line 2: expected digest 00000000deadbeef on trainer_0, got "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "job: {workload: seed-pipeline, nodes: 1}\nexpect: {values: {%s}}\n",
                 cases[i].values);
        struct ckh_report_result r;
        ck_assert_int_eq(run_text(text, &r, false), 0);
        ck_assert_msg(r.verdict == CKH_VERDICT_FAIL, "case %zu: verdict %d", i, r.verdict);
        ck_assert_str_eq(r.failed_oracle, "values");
        const struct ckh_oracle_result *o = oracle(&r, "values");
        ck_assert_ptr_nonnull(o);
        ck_assert_msg(strncmp(o->detail, cases[i].message, strlen(cases[i].message)) == 0, "case %zu: %s", i,
                      o->detail);
        ckh_report_result_clear(&r);
    }
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline, nodes: 1}\n"
                              "expect: {values: {total: 145, epochs: 4, runs: 1, restarts: 0, resumed_from: -1, "
                              "saves_failed: 0}}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_PASS);
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_unsupported_keys_refused)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline, defects: [no-fsync]}\n", &r, false),
                     CKH_EINVAL);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_ptr_nonnull(strstr(r.message, "does not support job.defects"));
    ckh_report_result_clear(&r);
    ck_assert_int_eq(run_text("job: {workload: param-server, nodes: 1}\n"
                              "faults:\n  - {on: {run: any}, do: gpu-oom}\n",
                              &r, false),
                     CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(r.message, "gpu-oom"));
    ckh_report_result_clear(&r);
    /* Nothing judged is an error, not a pass. */
    ck_assert_int_eq(run_text("job: {workload: seed-pipeline}\nexpect: {oracles: [determinism]}\n",
                              &r, false),
                     0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_ptr_nonnull(strstr(r.message, "nothing was judged"));
    ckh_report_result_clear(&r);
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
    tcase_add_test(tc, test_at_rest_fault_on_nothing_fails);
    tcase_add_test(tc, test_hang_reported);
    tcase_add_test(tc, test_defect_control_run);
    tcase_add_test(tc, test_crash_keep_synced_any_seed);
    tcase_add_test(tc, test_unsupported_keys_refused);
    tcase_add_test(tc, test_expected_values_each_kind);
    tcase_add_test(tc, test_corruption_detected);
    tcase_add_test(tc, test_deadlock_reported);
    tcase_add_test(tc, test_defect_detected_only_with_fault);
    tcase_add_test(tc, test_determinism_check);
    tcase_add_test(tc, test_bad_fault_node_is_input_error);
    tcase_add_test(tc, test_corrupt_offset_past_end);
    tcase_add_test(tc, test_option_size_limit);
    tcase_add_test(tc, test_restart_budget_and_reshard_off);
    TCase *many = tcase_create("many-faults");
    tcase_set_timeout(many, 30);
    tcase_add_test(many, test_many_faults);
    suite_add_tcase(s, many);
    tcase_add_loop_test(tc, test_world_size_changes, 0, 2);
    tcase_add_test(tc, test_world_size_at_epoch_boundary);
    tcase_add_test(tc, test_world_size_defect_detected);
    tcase_add_test(tc, test_world_size_unchanged_or_unused);
    tcase_add_loop_test(tc, test_world_size_refused, 0, 2);
    suite_add_tcase(s, tc);
    TCase *sim = tcase_create("sim-world");
    tcase_set_timeout(sim, 30);
    tcase_add_test(sim, test_sim_park_and_set_rank);
    tcase_add_test(sim, test_sim_set_rank_errors);
    suite_add_tcase(s, sim);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 120);
    tcase_add_checked_fixture(cli, cli_setup, cli_teardown);
    tcase_add_test(cli, test_cli_exit_codes);
    tcase_add_test(cli, test_cli_list_replay_help);
    tcase_add_test(cli, test_cli_input_errors);
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
