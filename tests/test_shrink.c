/* Tests of shrinking (harness/search/shrink.c): the scenario writer round-trips
 * every key; a hand-written failing scenario with irrelevant faults
 * shrinks to the fault that matters, failing the same oracle with the same
 * cause, and the result replays deterministically; a probability trigger
 * becomes an exact one; fuzz seeds whose shrunk scenarios used to fail for
 * another reason keep their cause; faults that never fired are dropped
 * even when the budget is spent; a corruption that never landed is not
 * blamed; a passing or malformed scenario is refused. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/workloads.h"
#include "ckh/err.h"
#include "exec/runner.h"
#include "search/shrink.h"
#include "cli/cli.h"
#include "judge/judge.h"
#include "support/skip.h"

static char *write_str(const struct ckh_scenario *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ckh_scenario_write(f, sc), 0);
    fclose(f);
    return buf;
}

static struct ckh_scenario *parse(const char *text)
{
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_string(text, strlen(text), "t.yaml", &so, &sc, &err);
    if (rc) {
        char m[700];
        ckh_scn_error_format(&err, m, sizeof m);
        ck_abort_msg("does not parse: %s\n%s", m, text);
    }
    return sc;
}

static const char rich[] =
    "name: rich\n"
    "description: \"every kind of key\"\n"
    "seed: 42\n"
    "tags: [a, b]\n"
    "job:\n"
    "  workload: seed-pipeline\n"
    "  nodes: 2\n"
    "  epochs: 3\n"
    "  backend: minidb\n"
    "  checkpoint_dir: /data/ckpt\n"
    "  checkpoint_every: {epochs: 1}\n"
    "  options: {label: \"007\", flag: true}\n"
    "  disks:\n"
    "    - {name: shared, mount: /data, crash_model: ext4-ordered, sector: 512, capacity: 1MiB, latency: 2ms}\n"
    "    - {name: local, mount: /local, shared: false}\n"
    "  collective_timeout: 2s\n"
    "faults:\n"
    "  - {on: {node: 1, op: pwrite, path: \"/data/ckpt/*\", phase: save, nth: 2}, do: kill}\n"
    "  - {on: {op: write}, do: kill, when: mid-write, at: 25%}\n"
    "  - {on: {op: write, nth: 3}, do: kill, when: mid-write, at: 100}\n"
    "  - {on: {op: open, epoch: 2, step: 1, time: 10ms, run: any}, do: errno, errno: EACCES}\n"
    "  - {on: {op: fsync, probability: 0.25, repeat: true}, do: fsync-fail}\n"
    "  - {do: disk-full, after: 4096, disk: shared}\n"
    "  - {on: {op: fsync}, do: delay, duration: 50ms}\n"
    "  - {on: {run: 2}, do: corrupt, mode: bit-flip, path: /data/ckpt/x, offset: 7, bit: 3}\n"
    "  - {on: {run: 2}, do: corrupt, mode: zero-range, path: /data/ckpt/x, offset: 8, length: 16}\n"
    "  - {on: {run: 2}, do: corrupt, mode: older-version, path: /data/ckpt/x.3, back: 2}\n"
    "  - {on: {run: 2}, do: remove-dir, path: /data/ckpt}\n"
    "  - {on: {run: 2}, do: stale-latest, path: /data/ckpt/latest}\n"
    "  - {on: {run: 3}, do: dangling-latest}\n"
    "  - {on: {node: trainer_0, op: fsync}, do: crash}\n"
    "restart: {resume: epoch 2, max_restarts: 5, world_size: 1}\n"
    "expect:\n"
    "  outcome: corruption-detected\n"
    "  reference: false\n"
    "  values: {total.trainer_0: 145, blobs.trainer_0: \"a,b\"}\n"
    "  skip: [liveness]\n";

START_TEST(test_writer_round_trip)
{
    struct ckh_scenario *a = parse(rich);
    char *t1 = write_str(a);
    struct ckh_scenario *b = parse(t1);
    char *t2 = write_str(b);
    ck_assert_str_eq(t1, t2);
    ck_assert_uint_eq(b->nfaults, a->nfaults);
    ck_assert_uint_eq(b->job.ndisks, 2);
    ck_assert_int_eq(b->faults[1].act.u.kill.at_is_fraction, true);
    ck_assert(b->faults[1].act.u.kill.at_fraction == 0.25);
    ck_assert_uint_eq(b->faults[2].act.u.kill.at_bytes, 100);
    ck_assert(b->faults[4].on.probability == 0.25);
    ck_assert_uint_eq(b->faults[3].on.run, CKH_SCN_RUN_ANY);
    ck_assert_str_eq(b->faults[13].on.node_name, "trainer_0");
    ck_assert_int_eq(b->restart.resume_epoch, 2);
    ck_assert_int_eq(b->expect.outcome, CKH_SCN_OUTCOME_CORRUPTION_DETECTED);
    ck_assert_str_eq(b->job.options[0].text, "007");
    ck_assert_int_eq(b->job.options[0].type, CKH_SCN_STR);
    ck_assert_str_eq(b->expect.values[1].text, "a,b");
    ckh_scenario_free(a);
    ckh_scenario_free(b);
    free(t1);
    free(t2);
    ck_assert_int_eq(ckh_scenario_write(NULL, NULL), CKH_EINVAL);
}
END_TEST

/* A defect plus a kill: the kill matters, the delays and the errno on a
 * path nobody opens do not. */
static const char failing[] =
    "name: hand-written\n"
    "job:\n"
    "  workload: ddp-train\n"
    "  ranks: 2\n"
    "  epochs: 2\n"
    "  saver: atomic-dir\n"
    "  checkpoint_every: {steps: 2}\n"
    "  defects: [rng-not-saved]\n"
    "faults:\n"
    "  - {on: {op: fsync, nth: 2}, do: delay, duration: 3ms}\n"
    "  - {on: {op: open, path: /nowhere}, do: errno, errno: EIO}\n"
    "  - {on: {node: 1, op: allreduce, step: 5}, do: kill}\n"
    "  - {on: {op: write, probability: 0.3, repeat: true}, do: delay, duration: 1ms}\n"
    "  - {on: {op: stat, nth: 2, run: 2}, do: delay, duration: 2ms}\n"
    "restart: {max_restarts: 3}\n"
    "expect: {skip: [faults-fired]}\n";

static void replay(const char *text, struct ckh_report_result *rr)
{
    struct ckh_scenario *sc = parse(text);
    struct ckh_run_options ro = {0};
    ckh_report_result_init(rr);
    ck_assert_int_eq(ckh_harness_run(sc, &ro, rr), 0);
    ckh_scenario_free(sc);
}

START_TEST(test_shrink_hand_written)
{
    if (!ckh_workloads_find("ddp-train"))
        CKH_SKIP("no ddp-train adapter in this build");
    struct ckh_report_result before;
    replay(failing, &before);
    ck_assert_int_eq(before.verdict, CKH_VERDICT_FAIL);
    char *out = NULL, msg[512];
    struct ckh_shrink_stats st;
    ck_assert_int_eq(ckh_shrink_text(failing, strlen(failing), "hand.yaml", NULL, &out, &st, msg, sizeof msg), 0);
    ck_assert_str_eq(st.oracle, before.failed_oracle);
    /* The planted RNG bug: the RNG streams, and what they drive, differ first. */
    ck_assert_str_eq(st.cause, "first divergence: optim, rng, weights");
    ck_assert_uint_eq(st.faults_before, 5);
    ck_assert_uint_eq(st.faults_after, 1);
    ck_assert(st.concrete);
    ck_assert_uint_eq(st.nodes_before, 2);
    ck_assert_ptr_nonnull(strstr(out, "do: kill"));
    ck_assert_ptr_null(strstr(out, "probability"));
    ck_assert_ptr_nonnull(strstr(out, "fails oracle resume-equivalence: first divergence: optim, rng, weights\""));
    struct ckh_report_result a, b;
    replay(out, &a);
    replay(out, &b);
    ck_assert_int_eq(a.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(a.failed_oracle, before.failed_oracle);
    ck_assert_str_eq(a.message, b.message);
    /* Shrinking the result again changes nothing but the description. */
    char *again = NULL;
    struct ckh_shrink_stats st2;
    ck_assert_int_eq(ckh_shrink_text(out, strlen(out), "hand.yaml", NULL, &again, &st2, msg, sizeof msg), 0);
    ck_assert_uint_eq(st2.faults_after, 1);
    ckh_report_result_clear(&before);
    ckh_report_result_clear(&a);
    ckh_report_result_clear(&b);
    free(out);
    free(again);
}
END_TEST

/* Shrinks text and replays the result: *rr is its verdict; the shrunk
 * text is returned (free()). */
static char *shrink_replay(const char *text, size_t max_runs, struct ckh_shrink_stats *st,
                           struct ckh_report_result *rr)
{
    char *out = NULL, msg[512] = "";
    struct ckh_shrink_config cfg = {.max_runs = max_runs};
    int rc = ckh_shrink_text(text, strlen(text), "t.yaml", &cfg, &out, st, msg, sizeof msg);
    ck_assert_msg(rc == 0, "shrink: %s", msg);
    replay(out, rr);
    return out;
}

/* `ckh fuzz --print-seed 1391 --defect overwrite-in-place`: the files
 * rewritten in place are torn by the kill and the crash, and the third
 * run refuses the torn checkpoint (CKH_ECORRUPT in load). Shrinking that
 * accepted any failure of the outcome oracle ended with a job that only
 * ran out of restarts, killed each run, and named no error at all. */
static const char seed1391[] =
    "name: fuzz-1391\n"
    "seed: 16024521\n"
    "job:\n"
    "  workload: ddp-train\n"
    "  ranks: 2\n"
    "  epochs: 2\n"
    "  saver: {kind: atomic-dir, keep_last: 1}\n"
    "  checkpoint_every: {steps: 4}\n"
    "  disks:\n"
    "    - {mount: /, crash_model: posix-weak, sector: 4096}\n"
    "  defects: [overwrite-in-place]\n"
    "faults:\n"
    "  - do: fsync-fail\n"
    "    on: {op: fsync, phase: collective, nth: 13, run: 1}\n"
    "  - do: kill\n"
    "    when: before\n"
    "    on: {op: write, nth: 11, run: 1}\n"
    "  - do: power-loss\n"
    "    on: {op: mkdir, phase: collective, nth: 14, run: 2}\n"
    "  - do: crash\n"
    "    on: {op: close, nth: 13, run: 2}\n"
    "restart: {max_restarts: 4, world_size: 1}\n"
    "expect:\n"
    "  skip: [faults-fired]\n";

START_TEST(test_shrink_keeps_error)
{
    if (!ckh_workloads_find("ddp-train"))
        CKH_SKIP("no ddp-train adapter in this build");
    struct ckh_report_result before, after;
    replay(seed1391, &before);
    ck_assert_int_eq(before.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(before.failed_oracle, "outcome");
    ck_assert_ptr_nonnull(strstr(before.message, "rank_0 failed with CKH_ECORRUPT in load"));
    struct ckh_shrink_stats st;
    char *out = shrink_replay(seed1391, 0, &st, &after);
    ck_assert_int_eq(after.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(after.failed_oracle, "outcome");
    ck_assert_msg(strstr(after.message, "failed with CKH_ECORRUPT in load"), "%s", after.message);
    ck_assert_str_eq(st.oracle, "outcome");
    ck_assert_str_eq(st.cause, "expected pass, the job ended job-fails: CKH_ECORRUPT in load");
    ck_assert_uint_lt(st.faults_after, st.faults_before);
    ck_assert_ptr_nonnull(strstr(out, "fails oracle outcome: expected pass, the job ended job-fails: "
                                      "CKH_ECORRUPT in load\""));
    ckh_report_result_clear(&before);
    ckh_report_result_clear(&after);
    free(out);
}
END_TEST

/* `ckh fuzz --print-seed 236 --defect pointer-before-data`: a collective
 * mismatched during training fails every rank in run 1. The shrunk
 * scenario used to fail with the same error during the load instead: the
 * same code, another collective. */
static const char seed236[] =
    "name: fuzz-236\n"
    "seed: 177118497\n"
    "job:\n"
    "  workload: ddp-train\n"
    "  ranks: 2\n"
    "  epochs: 1\n"
    "  saver: {kind: atomic-dir, keep_last: 1}\n"
    "  checkpoint_every: {steps: 3}\n"
    "  disks:\n"
    "    - {mount: /, crash_model: ext4-ordered, sector: 512}\n"
    "  defects: [pointer-before-data]\n"
    "faults:\n"
    "  - do: mismatch-collective\n"
    "    on: {op: allreduce, node: 0, probability: 0.150, run: 1}\n"
    "  - do: crash\n"
    "    on: {op: open, probability: 0.090, run: 2}\n"
    "  - do: power-loss\n"
    "    on: {op: fsync, probability: 0.440, run: 2}\n"
    "  - do: short-write\n"
    "    bytes: 1309\n"
    "    on: {op: write, phase: epoch, probability: 0.300, run: 2}\n"
    "restart: {max_restarts: 4, world_size: 4}\n"
    "expect:\n"
    "  skip: [faults-fired]\n";

START_TEST(test_shrink_keeps_phase)
{
    if (!ckh_workloads_find("ddp-train"))
        CKH_SKIP("no ddp-train adapter in this build");
    struct ckh_report_result after;
    struct ckh_shrink_stats st;
    char *out = shrink_replay(seed236, 0, &st, &after);
    ck_assert_str_eq(after.failed_oracle, "outcome");
    ck_assert_msg(strstr(after.message, "failed with CKH_EMISMATCH in epoch") &&
                      !strstr(after.message, "in load"),
                  "%s", after.message);
    ck_assert_str_eq(st.cause, "expected pass, the job ended job-fails: CKH_EMISMATCH in epoch");
    ck_assert(st.concrete);
    ck_assert_ptr_null(strstr(out, "probability"));
    ckh_report_result_clear(&after);
    free(out);
}
END_TEST

/* `ckh fuzz --print-seed 1045 --defect rng-not-saved` (the damaging
 * tier): the bit flip in /ckpt/latest at offset 116 never lands (the
 * pointer is shorter), so nothing was damaged; the end state differs
 * because of the planted RNG bug, which this tier does not judge. The
 * no-corrupt-load oracle used to blame damaged data, and shrinking kept
 * the corruption that never happened. */
static const char seed1045[] =
    "name: fuzz-1045\n"
    "seed: 1741249742\n"
    "job:\n"
    "  workload: ddp-train\n"
    "  ranks: 3\n"
    "  epochs: 2\n"
    "  saver: {kind: atomic-dir, keep_last: 0}\n"
    "  checkpoint_every: {steps: 1}\n"
    "  disks:\n"
    "    - {mount: /, crash_model: ext4-ordered, sector: 4096}\n"
    "  defects: [rng-not-saved]\n"
    "faults:\n"
    "  - do: corrupt\n"
    "    mode: bit-flip\n"
    "    path: /ckpt/latest\n"
    "    offset: 116\n"
    "    bit: 6\n"
    "    on: {op: fsync_dir, node: 0, nth: 5, run: 1}\n"
    "  - do: crash\n"
    "    on: {op: rename, phase: save, nth: 15, run: 1}\n"
    "  - do: errno\n"
    "    errno: ENOENT\n"
    "    on: {op: open, node: 0, phase: collective, nth: 3, run: 1}\n"
    "restart: {max_restarts: 1}\n"
    "expect:\n"
    "  oracles: [hang, no-corrupt-load, committed, determinism]\n";

START_TEST(test_silent_corruption_not_blamed)
{
    if (!ckh_workloads_find("ddp-train"))
        CKH_SKIP("no ddp-train adapter in this build");
    struct ckh_report_result rr;
    replay(seed1045, &rr);
    ck_assert_msg(rr.verdict == CKH_VERDICT_PASS, "%s: %s", rr.failed_oracle, rr.message);
    for (size_t i = 0; i < rr.noracles; i++)
        ck_assert_str_ne(rr.oracles[i].name, "no-corrupt-load");
    ckh_report_result_clear(&rr);
    /* With resume-equivalence judged too, the failure names the RNG
     * streams, and shrinking keeps the crash that needs a resume and
     * drops the corruption and the errno. */
    char *judged = strdup(seed1045);
    strcpy(strstr(judged, "  oracles:"), "  oracles: [hang, no-corrupt-load, resume-equivalence]\n");
    struct ckh_shrink_stats st;
    char *out = shrink_replay(judged, 0, &st, &rr);
    ck_assert_str_eq(st.oracle, "resume-equivalence");
    ck_assert_str_eq(st.cause, "first divergence: optim, rng, weights");
    ck_assert_uint_eq(st.faults_after, 1);
    ck_assert_ptr_nonnull(strstr(out, "do: crash"));
    ck_assert_ptr_null(strstr(out, "do: corrupt"));
    ck_assert_str_eq(rr.failed_oracle, "resume-equivalence");
    ckh_report_result_clear(&rr);
    free(judged);
    free(out);
}
END_TEST

/* A failure without any fault firing (a wrong expected value) and three
 * faults that never fire (a path nobody opens, the 100000th fsync, a
 * corruption aimed at run 3 of a job with one run): with a budget of one
 * run, only the input runs before the final pass, which drops all three.
 * The description names the cause and says that no fault fired. */
static const char silent[] =
    "name: silent\n"
    "job: {workload: seed-pipeline, nodes: 2}\n"
    "faults:\n"
    "  - {on: {op: open, path: /nowhere}, do: errno, errno: EIO}\n"
    "  - {on: {op: fsync, nth: 100000}, do: delay, duration: 1ms}\n"
    "  - {on: {run: 3}, do: corrupt, mode: bit-flip, path: /nowhere/x, offset: 7, bit: 3}\n"
    "expect: {values: {total.trainer_0: 1}, skip: [faults-fired]}\n";

START_TEST(test_shrink_drops_silent_faults)
{
    struct ckh_report_result rr;
    struct ckh_shrink_stats st;
    char *out = shrink_replay(silent, 1, &st, &rr);
    ck_assert_uint_eq(st.faults_before, 3);
    ck_assert_uint_eq(st.faults_after, 0);
    ck_assert_uint_eq(st.silent_dropped, 3);
    ck_assert(!st.concrete); /* the budget allowed no candidate before the final pass */
    ck_assert_uint_eq(st.runs, 5); /* the input, the final scenario, one per fault */
    ck_assert_str_eq(st.oracle, "values");
    ck_assert_str_eq(st.cause, "line #: expected total # on #, got #; no fault fired");
    ck_assert_ptr_null(strstr(out, "faults:"));
    ck_assert_ptr_nonnull(strstr(out, "fails oracle values: line #: expected total # on #, got #; no fault fired\""));
    ck_assert_int_eq(rr.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(rr.failed_oracle, "values");
    ck_assert_str_eq(rr.message, "line 17: expected total 1 on trainer_0, got 145");
    ckh_report_result_clear(&rr);
    free(out);
}
END_TEST

START_TEST(test_shrink_refuses)
{
    char *out = NULL, msg[512];
    const char pass[] = "job: {workload: seed-pipeline}\n";
    ck_assert_int_eq(ckh_shrink_text(pass, strlen(pass), "pass.yaml", NULL, &out, NULL, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "does not fail"));
    ck_assert_ptr_null(out);
    const char bad[] = "job: {workload: seed-pipeline, epocs: 3}\n";
    ck_assert_int_eq(ckh_shrink_text(bad, strlen(bad), "bad.yaml", NULL, &out, NULL, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "epocs"));
    ck_assert_int_eq(ckh_shrink_text(NULL, 0, NULL, NULL, &out, NULL, NULL, 0), CKH_EINVAL);
    char *argv[] = {"shrink", NULL};
    ck_assert_int_eq(ckh_shrink_main(1, argv), 2);
    char *argv2[] = {"shrink", "/nonexistent/file.yaml", NULL};
    ck_assert_int_eq(ckh_shrink_main(2, argv2), 2);
}
END_TEST

/* A kill on every matching allreduce (repeat) that only needs to fire
 * once: with the budget, it becomes one exact trigger that still fails for
 * the same cause; with a budget of one run, the input comes back as it was
 * (still failing, nothing tried). */
static const char repeat_kill[] =
    "name: repeat-kill\n"
    "job:\n"
    "  workload: ddp-train\n"
    "  ranks: 2\n"
    "  epochs: 2\n"
    "  saver: atomic-dir\n"
    "  checkpoint_every: {steps: 2}\n"
    "  defects: [rng-not-saved]\n"
    "faults:\n"
    "  - {on: {node: 1, op: allreduce, step: 5, repeat: true}, do: kill}\n"
    "restart: {max_restarts: 3}\n"
    "expect: {skip: [faults-fired]}\n";

START_TEST(test_shrink_repeat_and_budget)
{
    if (!ckh_workloads_find("ddp-train"))
        CKH_SKIP("no ddp-train adapter in this build");
    struct ckh_shrink_stats st;
    struct ckh_report_result rr;
    char *out = shrink_replay(repeat_kill, 0, &st, &rr);
    ck_assert_int_eq(rr.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(rr.failed_oracle, "resume-equivalence");
    ck_assert_str_eq(st.cause, "first divergence: optim, rng, weights");
    ck_assert(st.concrete);
    ck_assert_uint_eq(st.faults_after, 1);
    ck_assert_ptr_null(strstr(out, "repeat: true"));
    ck_assert_ptr_nonnull(strstr(out, "nth: "));
    ckh_report_result_clear(&rr);
    free(out);

    out = shrink_replay(repeat_kill, 1, &st, &rr);
    ck_assert_int_eq(rr.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(st.oracle, "resume-equivalence");
    ck_assert(!st.concrete);
    ck_assert_uint_le(st.runs, 2);
    ck_assert_ptr_nonnull(strstr(out, "step: 5, repeat: true"));
    ckh_report_result_clear(&rr);
    free(out);
}
END_TEST

/* Refusals without a name or a message buffer, and a failure that cannot
 * be written. */
START_TEST(test_shrink_refuses_more)
{
    char *out = NULL, msg[512];
    const char detect[] = "job: {workload: seed-pipeline, defects: [no-fsync]}\n"
                          "expect: {detect: [no-corrupt-load]}\n";
    ck_assert_int_eq(ckh_shrink_text(detect, strlen(detect), NULL, NULL, &out, NULL, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_str_eq(msg, "the scenario expects a planted defect to be detected (expect.detect): remove "
                          "expect.detect to shrink the failure the defect causes");
    ck_assert_int_eq(ckh_shrink_text(detect, strlen(detect), NULL, NULL, &out, NULL, NULL, 0), CKH_EINVAL);
    const char pass[] = "job: {workload: seed-pipeline}\n";
    ck_assert_int_eq(ckh_shrink_text(pass, strlen(pass), NULL, NULL, &out, NULL, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "the scenario does not fail: nothing to shrink");
    ck_assert_int_eq(ckh_shrink_text(pass, strlen(pass), "p.yaml", NULL, NULL, NULL, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(ckh_shrink_write("/nonexistent-ckh-dir/x.yaml", "x"), -ENOENT);
}
END_TEST

static Suite *shrink_suite(void)
{
    Suite *s = suite_create("shrink");
    TCase *tc = tcase_create("shrink");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_writer_round_trip);
    tcase_add_test(tc, test_shrink_hand_written);
    tcase_add_test(tc, test_shrink_keeps_error);
    tcase_add_test(tc, test_shrink_keeps_phase);
    tcase_add_test(tc, test_silent_corruption_not_blamed);
    tcase_add_test(tc, test_shrink_drops_silent_faults);
    tcase_add_test(tc, test_shrink_refuses);
    tcase_add_test(tc, test_shrink_repeat_and_budget);
    tcase_add_test(tc, test_shrink_refuses_more);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(shrink_suite());
}
