/* Out of memory everywhere a scenario goes in one process: parsing, the
 * simulated runs and their verdict, library scenarios (a command job
 * among them), fuzzing a seed, shrinking, reading a timeline back,
 * exploring crash states, the fault catalogue, `ckh run` with reports.
 * The test binary is linked with -Wl,--wrap=malloc,calloc,realloc,strdup
 * (CMakeLists.txt), so every allocation of ckh's own code (the
 * simulator's, the harness's and the code under test's, whose ckh_alloc
 * ends in malloc) passes through oom_should_fail() below; the C library's
 * internal allocations (fopen, open_memstream) do not, nor those of
 * threads other than the one that arms the failure (see oom_should_fail).
 *
 * Each case runs its operation once unarmed (the reference outcome and
 * the count of its allocations), then once for each N of a sample of
 * 1..count (every N up to a few dozen, then a stride; every N with
 * CKH_TEST_OOM_ALL=1, many minutes) with the Nth allocation failing, and
 * asserts what that gives:
 *   - parsing: CKH_ENOMEM, "FILE: out of memory";
 *   - a scenario run: CKH_ENOMEM with an ERROR verdict whose message says
 *     so, or exactly the verdict and message of the run without the
 *     failure (an allocation whose failure changes nothing): never a FAIL
 *     or PASS that the failure made (ckh_sim_host_out_of_memory tells a
 *     failure of ckh's own memory under a node from the node's limit);
 *   - a fuzz seed: the same, with the seed's verdict;
 *   - shrinking: CKH_ENOMEM, or the same oracle and cause;
 *   - reading a timeline: CKH_ENOMEM;
 *   - crash-state exploration and the fault catalogue of the built-in
 *     minidb backend: CKH_ENOMEM or findings (see check_explore for what
 *     is not asserted yet);
 *   - `ckh run` with its three reports: the run's own exit status or 3.
 * The same outcome comes back for the same N (determinism). The ASan and
 * valgrind builds run this binary like every other test: no leak and no
 * invalid access on any of these paths. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "cli/cli.h"
#include "judge/judge.h"
#include "model/scenario.h"
#include "report.h"
#include "ckh/backend.h"
#include "search/explore.h"
#include "search/fuzz.h"
#include "search/shrink.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *ptr, size_t size);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t size);
char *__wrap_strdup(const char *s);

static pthread_t oom_thread; /* the thread whose allocations count (oom_arm's) */
static uint64_t oom_at;    /* the allocation that fails (1-based; 0: none) */
static uint64_t oom_count; /* allocations since oom_arm */
static bool oom_fired;     /* the armed allocation was reached */
static bool oom_counting;  /* between oom_arm and oom_disarm */

static void oom_arm(uint64_t at)
{
    oom_thread = pthread_self();
    oom_at = at;
    oom_count = 0;
    oom_fired = false;
    oom_counting = true;
}

static void oom_disarm(void)
{
    oom_counting = false;
    oom_at = 0;
}

static bool oom_should_fail(void)
{
    /* Only the arming thread's allocations: the others' (ckhfs's FUSE
     * server threads, harness/ckhfs/) would make the count depend on the
     * schedule; a request ckhfs cannot serve is test_ckhfs's matter. */
    if (!oom_counting || !pthread_equal(pthread_self(), oom_thread))
        return false;
    if (++oom_count != oom_at)
        return false;
    oom_fired = true;
    errno = ENOMEM;
    return true;
}

void *__wrap_malloc(size_t size)
{
    return oom_should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return oom_should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *ptr, size_t size)
{
    return oom_should_fail() ? NULL : __real_realloc(ptr, size);
}

char *__wrap_strdup(const char *s)
{
    return oom_should_fail() ? NULL : __real_strdup(s);
}

/* ---- the operations ---------------------------------------------------- */

struct outcome {
    int rc;                   /* the operation's return code */
    enum ckh_verdict verdict; /* a scenario run's verdict (PASS otherwise) */
    char msg[512];            /* its message or error text */
};

typedef void (*op_fn)(const void *arg, struct outcome *o);

static void op_parse(const void *arg, struct outcome *o)
{
    const char *text = arg;
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    memset(o, 0, sizeof *o);
    o->rc = ckh_scenario_parse_string(text, strlen(text), "oom.yaml", NULL, &sc, &err);
    if (o->rc != 0)
        ckh_scn_error_format(&err, o->msg, sizeof o->msg);
    ckh_scenario_free(sc);
}

/* The outcome of running a parsed scenario (parse_rc its parse's code, err
 * its error): the parse error as an ERROR verdict, or the run's verdict
 * and message. Frees sc. */
static void run_parsed(int parse_rc, struct ckh_scenario *sc, const struct ckh_scn_error *err,
                       const struct ckh_run_options *opts, struct outcome *o)
{
    o->rc = parse_rc;
    if (o->rc != 0) {
        ckh_scn_error_format(err, o->msg, sizeof o->msg);
        o->verdict = CKH_VERDICT_ERROR;
        return;
    }
    struct ckh_report_result r;
    ckh_report_result_init(&r);
    o->rc = ckh_harness_run(sc, opts, &r);
    o->verdict = r.verdict;
    snprintf(o->msg, sizeof o->msg, "%s", r.message ? r.message : "");
    ckh_report_result_clear(&r);
    ckh_scenario_free(sc);
}

static void op_run(const void *arg, struct outcome *o)
{
    const char *text = arg;
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    memset(o, 0, sizeof *o);
    int rc = ckh_scenario_parse_string(text, strlen(text), "oom.yaml", NULL, &sc, &err);
    const struct ckh_run_options opts = {.source_dir = getenv("CKH_SOURCE_DIR"), .timeline = true};
    run_parsed(rc, sc, &err, &opts, o);
}

/* A scenario file of the library (its path relative to the source tree):
 * its programs and paths resolve from its folder, as `ckh run` does. */
static void op_run_file(const void *arg, struct outcome *o)
{
    const char *rel = arg;
    char path[4096];
    const char *src = getenv("CKH_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/%s", src ? src : "..", rel);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    memset(o, 0, sizeof *o);
    int rc = ckh_scenario_parse_file(path, NULL, &sc, &err);
    const struct ckh_run_options opts = {.source_dir = src};
    run_parsed(rc, sc, &err, &opts, o);
}

/* Shrinking a failing scenario within a small budget of runs. */
static void op_shrink(const void *arg, struct outcome *o)
{
    const char *text = arg;
    struct ckh_shrink_config cfg = {.source_dir = getenv("CKH_SOURCE_DIR"), .max_runs = 3};
    struct ckh_shrink_stats st;
    char *out = NULL;
    memset(o, 0, sizeof *o);
    o->rc = ckh_shrink_text(text, strlen(text), "oom.yaml", &cfg, &out, &st, o->msg, sizeof o->msg);
    if (o->rc == 0)
        snprintf(o->msg, sizeof o->msg, "%s: %s", st.oracle, st.cause);
    free(out);
}

/* One fuzz seed: generated, parsed, run and judged. */
static void op_fuzz(const void *arg, struct outcome *o)
{
    const uint64_t *seed = arg;
    struct ckh_fuzz_config cfg = {.workload = "seed-pipeline", .source_dir = getenv("CKH_SOURCE_DIR")};
    struct ckh_fuzz_seed_result fr;
    memset(o, 0, sizeof *o);
    memset(&fr, 0, sizeof fr);
    o->rc = ckh_fuzz_run_seed(*seed, &cfg, &fr, NULL);
    o->verdict = fr.verdict;
    snprintf(o->msg, sizeof o->msg, "%s", fr.message);
}

/* A saved timeline read back (the HTML report's per-node events). */
static void op_timeline_read(const void *arg, struct outcome *o)
{
    FILE *f = (FILE *)arg;
    struct ckh_report_timeline *t = NULL;
    memset(o, 0, sizeof *o);
    rewind(f);
    o->rc = ckh_report_timeline_read(f, &t);
    ckh_report_timeline_free(t);
}

/* How many failing runs a sweep takes after its dense start: all with
 * CKH_TEST_OOM_ALL, a tenth under valgrind (CKH_VALGRIND, 20-50 times
 * slower), else `normal`. */
static uint64_t budget(uint64_t normal)
{
    if (getenv("CKH_TEST_OOM_ALL"))
        return 0; /* every allocation */
    return getenv("CKH_VALGRIND") ? normal / 10 + 1 : normal;
}

/* Crash-state exploration of the built-in minidb backend: the first
 * states of each kind of scenario. The outcome is the findings' kinds and
 * the counters. */
static void op_explore(const void *arg, struct outcome *o)
{
    const unsigned *scenarios = arg;
    struct ckh_explore_config cfg = {.ops = &ckh_minidb_ops, .model = CKH_CRASH_POSIX_WEAK,
                                     .sector_bytes = 512, .seed = 7, .scenarios = *scenarios,
                                     .max_states = 12, .nblobs = 2, .blob_bytes = 700, .ranks = 2,
                                     .retention_epochs = 2};
    struct ckh_explore_result r;
    memset(o, 0, sizeof *o);
    o->rc = ckh_explore_run(&cfg, &r, o->msg, sizeof o->msg);
    if (o->rc != 0)
        return;
    int at = snprintf(o->msg, sizeof o->msg, "states %llu checked %llu:", (unsigned long long)r.stats.states,
                      (unsigned long long)r.stats.states_checked);
    for (size_t i = 0; i < r.nvulns && at > 0 && (size_t)at < sizeof o->msg; i++)
        at += snprintf(o->msg + at, sizeof o->msg - (size_t)at, " %s/%s", r.vulns[i].scenario,
                       ckh_vuln_name(r.vulns[i].kind));
    ckh_explore_result_free(&r);
}

/* One family of the fault catalogue on the built-in minidb backend. */
static void op_catalogue(const void *arg, struct outcome *o)
{
    const enum ckh_fault_family *fam = arg;
    struct ckh_explore_config cfg = {.ops = &ckh_minidb_ops, .model = CKH_CRASH_POSIX_WEAK,
                                     .sector_bytes = 512, .seed = 7, .nblobs = 2, .blob_bytes = 700};
    struct ckh_explore_result r;
    memset(o, 0, sizeof *o);
    o->rc = ckh_explore_faults(&cfg, *fam, EIO, &r, o->msg, sizeof o->msg);
    if (o->rc != 0)
        return;
    int at = snprintf(o->msg, sizeof o->msg, "states %llu:", (unsigned long long)r.stats.states);
    for (size_t i = 0; i < r.nvulns && at > 0 && (size_t)at < sizeof o->msg; i++)
        at += snprintf(o->msg + at, sizeof o->msg - (size_t)at, " %s/%s", r.vulns[i].scenario,
                       ckh_vuln_name(r.vulns[i].kind));
    ckh_explore_result_free(&r);
}

/* `ckh run DIR --json --junit --html` in this process (its pool's workers
 * are forked: their allocations count in their own copy of the counter),
 * stdout and stderr into DIR/out.txt; the outcome is the exit status. */
static void op_cli_run(const void *arg, struct outcome *o)
{
    const char *dir = arg;
    char scn[600], json[600], junit[600], html[600], out[600];
    snprintf(scn, sizeof scn, "%s/scn", dir);
    snprintf(json, sizeof json, "%s/r.json", dir);
    snprintf(junit, sizeof junit, "%s/r.xml", dir);
    snprintf(html, sizeof html, "%s/r.html", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    char *argv[] = {"ckh", "run", scn, "--json", json, "--junit", junit, "--html", html, NULL};
    memset(o, 0, sizeof *o);
    fflush(NULL);
    int saved_out = dup(1), saved_err = dup(2);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    o->rc = ckh_cli_main((int)(sizeof argv / sizeof argv[0]) - 1, argv);
    fflush(NULL);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
}

/* Runs op unarmed (the reference outcome, *allocs its allocations), then
 * with the Nth allocation failing for N in 1..allocs (every N up to
 * dense, then a stride that keeps the runs near `runs`; 0: every N). A
 * run that makes fewer allocations than the unarmed one (a process
 * polling its programs less often) may not reach N: not counted. Every
 * case asserts that at least its dense start failed in turn. check judges
 * each failed outcome. Returns the runs made with a failure. */
static size_t sweep(op_fn op, const void *arg, struct outcome *ref, uint64_t dense, uint64_t runs,
                    void (*check)(uint64_t n, const struct outcome *ref, const struct outcome *o))
{
    oom_arm(0);
    op(arg, ref);
    uint64_t allocs = oom_count;
    oom_disarm();
    ck_assert_uint_gt(allocs, 0);
    uint64_t stride = allocs > dense && runs > 0 ? (allocs - dense) / runs + 1 : 1;
    size_t fails = 0;
    for (uint64_t n = 1; n <= allocs; n += n < dense ? 1 : stride) {
        struct outcome o;
        oom_arm(n);
        op(arg, &o);
        bool fired = oom_fired;
        oom_disarm();
        if (!fired)
            continue; /* fewer allocations this time (a cache): nothing failed */
        fails++;
        check(n, ref, &o);
    }
    return fails;
}

static bool has(const char *s, const char *what)
{
    return strstr(s, what) != NULL;
}

/* Parsing: every failure is CKH_ENOMEM with "out of memory" at the file. */
static void check_parse(uint64_t n, const struct outcome *ref, const struct outcome *o)
{
    (void)ref;
    if (o->rc != CKH_ENOMEM)
        ck_abort_msg("allocation %llu: parse gave %d (%s), not CKH_ENOMEM", (unsigned long long)n, o->rc,
                     o->msg);
    ck_assert_msg(has(o->msg, "oom.yaml") && has(o->msg, "out of memory"), "allocation %llu: %s",
                  (unsigned long long)n, o->msg);
}

/* A scenario run: CKH_ENOMEM with an ERROR verdict that says so, or
 * exactly the verdict and message of the run without the failure. An
 * allocation under a simulated node or disk that fails is ckh's memory,
 * not a simulated out-of-memory (ckh_sim_host_out_of_memory). */
static void check_run(uint64_t n, const struct outcome *ref, const struct outcome *o)
{
    unsigned long long at = (unsigned long long)n;
    if (o->rc == CKH_ENOMEM) {
        ck_assert_msg(o->verdict == CKH_VERDICT_ERROR, "allocation %llu: CKH_ENOMEM with verdict %s: %s", at,
                      ckh_verdict_name(o->verdict), o->msg);
        /* The message itself may be what could not be allocated. */
        ck_assert_msg(!o->msg[0] || has(o->msg, "out of memory") || has(o->msg, "CKH_ENOMEM") ||
                          has(o->msg, "cannot allocate") || has(o->msg, "Cannot allocate memory") ||
                          has(o->msg, "no memory"),
                      "allocation %llu: %s", at, o->msg);
        return;
    }
    ck_assert_msg(o->rc == 0, "allocation %llu: the run gave %d (%s): %s", at, o->rc, ckh_strerror(o->rc), o->msg);
    ck_assert_msg(o->verdict == ref->verdict && strcmp(o->msg, ref->msg) == 0,
                  "allocation %llu: %s \"%s\", not %s \"%s\"", at, ckh_verdict_name(o->verdict), o->msg,
                  ckh_verdict_name(ref->verdict), ref->msg);
}

/* Each outcome of a failed allocation is the same every time (the sample
 * of N the sweep took, run again). */
static void check_same_twice(op_fn op, const void *arg, uint64_t n)
{
    struct outcome a, b;
    oom_arm(n);
    op(arg, &a);
    oom_disarm();
    oom_arm(n);
    op(arg, &b);
    oom_disarm();
    ck_assert_int_eq(a.rc, b.rc);
    ck_assert_int_eq(a.verdict, b.verdict);
    ck_assert_str_eq(a.msg, b.msg);
}

static const char *const rich =
    "description: every section, for the parser's allocations\n"
    "job:\n"
    "  workload: ddp-train\n"
    "  nodes: 2\n"
    "  epochs: 3\n"
    "  checkpoint_every: {steps: 2}\n"
    "  collective_timeout: 5s\n"
    "  options: {accum: 2, batch: 2, samples: 48}\n"
    "faults:\n"
    "  - on: {node: rank_0, op: allreduce, step: 3, nth: 2}\n"
    "    do: kill\n"
    "  - on: {run: 2}\n"
    "    do: corrupt\n"
    "    mode: bit-flip\n"
    "    path: /ckpt/x\n"
    "    offset: 40\n"
    "    bit: 2\n"
    "restart:\n"
    "  max_restarts: 2\n"
    "  world_size: 4\n"
    "expect:\n"
    "  values: {runs: 2}\n"
    "  oracles: [reference, outcome, lost-work]\n";

START_TEST(test_parse_out_of_memory)
{
    struct outcome ref;
    size_t k = sweep(op_parse, rich, &ref, 0, 0, check_parse);
    ck_assert_msg(ref.rc == 0, "%s", ref.msg);
    ck_assert_uint_gt(k, 20);
}
END_TEST

/* Scenarios that reach the saver, the resume, the corruption check and
 * a world-size change. */
static const char *const runs[] = {
    "job: {workload: seed-pipeline, nodes: 2}\n"
    "faults:\n"
    "  - on: {node: trainer_1, op: rename, phase: save, epoch: 3}\n"
    "    do: kill\n"
    "expect: {values: {resumed_from.trainer_1: 2, total: 145}}\n",

    "job: {workload: seed-pipeline, nodes: 1}\n"
    "faults:\n"
    "  - on: {op: stat, phase: save, epoch: 3}\n"
    "    do: kill\n"
    "  - on: {run: 2}\n"
    "    do: corrupt\n"
    "    mode: bit-flip\n"
    "    path: /ckpt/trainer_0.2\n"
    "    offset: 40\n"
    "    bit: 2\n"
    "restart: {max_restarts: 1}\n"
    "expect: {outcome: corruption-detected}\n",

    "job:\n"
    "  workload: ddp-train\n"
    "  nodes: 2\n"
    "  epochs: 2\n"
    "  checkpoint_every: {steps: 3}\n"
    "  collective_timeout: 5s\n"
    "  options: {samples: 44}\n"
    "faults:\n"
    "  - on: {node: rank_0, op: allreduce, phase: epoch, epoch: 1, nth: 4}\n"
    "    do: kill\n"
    "restart: {world_size: 3}\n"
    "expect: {values: {runs: 2}}\n",
};

START_TEST(test_run_out_of_memory)
{
    const char *scn = runs[_i];
    struct outcome ref;
    size_t k = sweep(op_run, scn, &ref, 40, budget(160), check_run);
    ck_assert_msg(ref.rc == 0 && ref.verdict == CKH_VERDICT_PASS, "the scenario itself: %d %s", ref.rc, ref.msg);
    ck_assert_uint_ge(k, 40);
    check_same_twice(op_run, scn, 1);
    check_same_twice(op_run, scn, 37);
}
END_TEST

/* Library scenarios of other kinds: a program run as a command job (the
 * command executor: fork, result file, checkpoint folder), the param
 * server, the atomic-dir saver with a crash and on node-local disks, a
 * planted defect detected, minidb's errno, disk-full and at-rest faults.
 * Not yet a workload plugin: an allocation that fails in the plugin
 * probe's child is reported as "not a loadable plugin" (CKH_EFOREIGN). */
static const char *const files[] = {
    "scenarios/programs/shell-kill-between-save-and-record.yaml",
    "scenarios/programs/shell-bug-skip-on-resume.yaml",
    "scenarios/minidb/errno-eio-pwrite.yaml",
    "scenarios/minidb/disk-full.yaml",
    "scenarios/ddp/power-loss.yaml",
    "scenarios/saver/" /* the first of the folder: filled in by the test */,
    "scenarios/seed/param-server-kill-ps.yaml",
    "scenarios/saver/node-local-kill-rank1-mid-commit.yaml",
    "scenarios/defects/rng-not-saved.yaml",
    "scenarios/minidb/corrupt-older-version.yaml",
};

START_TEST(test_library_out_of_memory)
{
    const char *rel = files[_i];
    char first[512];
    if (rel[strlen(rel) - 1] == '/') { /* a folder: its first scenario in name order */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : "..", rel);
        struct dirent **names = NULL;
        int n = scandir(dir, &names, NULL, alphasort);
        ck_assert_int_gt(n, 2);
        first[0] = '\0';
        for (int i = 0; i < n; i++) {
            size_t len = strlen(names[i]->d_name);
            if (!first[0] && len > 5 && strcmp(names[i]->d_name + len - 5, ".yaml") == 0)
                snprintf(first, sizeof first, "%s%s", rel, names[i]->d_name);
            free(names[i]);
        }
        free(names);
        ck_assert_msg(first[0], "no scenario in %s", dir);
        rel = first;
    }
    struct outcome ref;
    /* A command job forks its programs: fewer runs. */
    bool command = strstr(rel, "programs/") != NULL;
    size_t k = sweep(op_run_file, rel, &ref, command ? 6 : 30, budget(command ? 10 : 100), check_run);
    ck_assert_msg(ref.rc == 0 && ref.verdict == CKH_VERDICT_PASS, "%s itself: %d %s", rel, ref.rc, ref.msg);
    ck_assert_uint_ge(k, command ? 6 : 30);
}
END_TEST

/* Failures other than a verdict: the operation's own code. */
static void check_enomem(uint64_t n, const struct outcome *ref, const struct outcome *o)
{
    (void)ref;
    ck_assert_msg(o->rc == CKH_ENOMEM, "allocation %llu: %d (%s): %s", (unsigned long long)n, o->rc,
                  ckh_strerror(o->rc), o->msg);
}

static const char failing[] = "job:\n"
                              "  workload: ddp-train\n"
                              "  nodes: 2\n"
                              "  epochs: 2\n"
                              "  checkpoint_every: {steps: 2}\n"
                              "  collective_timeout: 5s\n"
                              "  options: {samples: 32}\n"
                              "  defects: [rng-not-saved]\n"
                              "faults:\n"
                              "  - {on: {node: rank_1, op: allreduce, step: 3}, do: kill}\n"
                              "  - {on: {op: open, path: /nowhere}, do: errno, errno: EIO}\n"
                              "expect: {skip: [faults-fired]}\n";

/* Shrinking: CKH_ENOMEM, or (an allocation of a simulated node failed in
 * a candidate's run, which then failed otherwise and was not taken) the
 * same oracle and cause as without the failure. */
static void check_shrink(uint64_t n, const struct outcome *ref, const struct outcome *o)
{
    if (o->rc == CKH_ENOMEM)
        return;
    ck_assert_msg(o->rc == 0, "allocation %llu: %d (%s): %s", (unsigned long long)n, o->rc, ckh_strerror(o->rc),
                  o->msg);
    ck_assert_msg(strcmp(o->msg, ref->msg) == 0, "allocation %llu: shrunk to \"%s\", not \"%s\"",
                  (unsigned long long)n, o->msg, ref->msg);
}

START_TEST(test_shrink_out_of_memory)
{
    struct outcome ref;
    size_t k = sweep(op_shrink, failing, &ref, 20, budget(60), check_shrink);
    ck_assert_msg(ref.rc == 0, "shrinking itself: %d %s", ref.rc, ref.msg);
    ck_assert_uint_ge(k, 20);
}
END_TEST

/* A fuzz seed's scenario that cannot be generated is CKH_ENOMEM; one that
 * cannot be run is an ERROR verdict or CKH_ENOMEM, as check_run says. */
START_TEST(test_fuzz_out_of_memory)
{
    uint64_t seed = 7;
    struct outcome ref;
    size_t k = sweep(op_fuzz, &seed, &ref, 40, budget(120), check_run);
    ck_assert_msg(ref.rc == 0 && ref.verdict != CKH_VERDICT_ERROR, "seed 7 itself: %d %s", ref.rc, ref.msg);
    ck_assert_uint_ge(k, 40);
}
END_TEST

START_TEST(test_timeline_read_out_of_memory)
{
    struct ckh_report_timeline *t = NULL;
    ck_assert_int_eq(ckh_report_timeline_new(2, 2, &t), 0);
    for (uint32_t i = 0; i < 40; i++)
        ck_assert_int_eq(ckh_report_timeline_add(t, i % 2, (int32_t)(i % 2), CKH_TL_EPOCH, i * 1000,
                                                 i * 1000 + 500, "epoch"),
                         0);
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ckh_report_timeline_write(f, t), 0);
    ckh_report_timeline_free(t);
    struct outcome ref;
    size_t k = sweep(op_timeline_read, f, &ref, 0, 0, check_enomem);
    ck_assert_int_eq(ref.rc, 0);
    ck_assert_uint_gt(k, 2);
    fclose(f);
}
END_TEST

/* Exploration: CKH_ENOMEM, or findings (no crash, no leak, no other
 * error). Not yet the findings of the exploration without the failure:
 * a backend call that fails for ckh's memory (the backend's allocator is
 * the process's, a disk's bookkeeping) is still reported as the
 * backend's finding (baseline-fails, fewer states); that needs
 * harness/search/explore*.c to check ckh_simfs_host_out_of_memory and a
 * counting allocator at each of their disks and backends. */
static void check_explore(uint64_t n, const struct outcome *ref, const struct outcome *o)
{
    (void)ref;
    ck_assert_msg(o->rc == 0 || o->rc == CKH_ENOMEM, "allocation %llu: %d (%s): %s", (unsigned long long)n, o->rc,
                  ckh_strerror(o->rc), o->msg);
}

static const unsigned explored[] = {CKH_EXPLORE_NEW_EPOCH, CKH_EXPLORE_TWO_RANKS, CKH_EXPLORE_RETENTION,
                                    CKH_EXPLORE_NODE_LOCAL, CKH_EXPLORE_CONTRACT};

START_TEST(test_explore_out_of_memory)
{
    struct outcome ref;
    size_t k = sweep(op_explore, &explored[_i], &ref, 20, budget(60), check_explore);
    ck_assert_msg(ref.rc == 0, "the exploration itself: %d %s", ref.rc, ref.msg);
    ck_assert_uint_ge(k, 20);
}
END_TEST

static const enum ckh_fault_family families[] = {CKH_FAULTS_ERRNO, CKH_FAULTS_FSYNC, CKH_FAULTS_AT_REST,
                                                 CKH_FAULTS_LEAK, CKH_FAULTS_SHORT_WRITE};

START_TEST(test_catalogue_out_of_memory)
{
    struct outcome ref;
    size_t k = sweep(op_catalogue, &families[_i], &ref, 20, budget(50), check_explore);
    ck_assert_msg(ref.rc == 0, "the catalogue itself: %d %s", ref.rc, ref.msg);
    ck_assert_uint_ge(k, 20);
}
END_TEST

/* `ckh run`: the exit status of the run without the failure (1: one
 * scenario fails) or 3 (internal error), never 0 (a failure lost) or 2
 * (out of memory taken for bad input). */
static void check_cli(uint64_t n, const struct outcome *ref, const struct outcome *o)
{
    ck_assert_msg(o->rc == ref->rc || o->rc == 3, "allocation %llu: exit status %d, not %d or 3",
                  (unsigned long long)n, o->rc, ref->rc);
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_cli_run_out_of_memory)
{
    char dir[] = "/tmp/ckh-test-oom-XXXXXX", scn[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(scn, sizeof scn, "%s/scn", dir);
    ck_assert_int_eq(mkdir(scn, 0755), 0);
    put_file(scn, "pass.yaml", "job: {workload: seed-pipeline, nodes: 2}\n"
                               "faults:\n  - {on: {node: trainer_1, op: rename, phase: save, epoch: 2}, do: kill}\n");
    put_file(scn, "fail.yaml", "job: {workload: seed-pipeline}\nexpect: {values: {total: 1}}\n");
    struct outcome ref;
    size_t k = sweep(op_cli_run, dir, &ref, 12, budget(24), check_cli);
    ck_assert_msg(ref.rc == 1, "ckh run itself: exit status %d", ref.rc);
    ck_assert_uint_ge(k, 12);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *oom_suite(void)
{
    Suite *s = suite_create("oom");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_parse_out_of_memory);
    tcase_add_loop_test(tc, test_run_out_of_memory, 0, (int)(sizeof runs / sizeof runs[0]));
    tcase_add_loop_test(tc, test_library_out_of_memory, 0, (int)(sizeof files / sizeof files[0]));
    tcase_add_test(tc, test_shrink_out_of_memory);
    tcase_add_test(tc, test_cli_run_out_of_memory);
    tcase_add_loop_test(tc, test_explore_out_of_memory, 0, (int)(sizeof explored / sizeof explored[0]));
    tcase_add_loop_test(tc, test_catalogue_out_of_memory, 0, (int)(sizeof families / sizeof families[0]));
    tcase_add_test(tc, test_fuzz_out_of_memory);
    tcase_add_test(tc, test_timeline_read_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(oom_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
