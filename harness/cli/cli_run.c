/* `ckh run`: every scenario in a worker of the pool (harness/exec/pool.h).
 *
 * Flow: options · report paths checked · the rank (cli_dist.h) ·
 * scenarios parsed in workers (cli_load.c) · scenarios run in workers (at
 * most --jobs at a time, each under a wall-time limit and the memory
 * limit; a worker parses its file again and sends its result back over the
 * pool's pipe) · summary and reports.
 *
 * On many machines (rank R of a world of W > 1, docs/MULTIHOST.md): each
 * rank loads and runs every W-th scenario of the list the single-machine
 * run would run (after --filter and --shard: the composite shard
 * (R*N + I)/(N*W) of shard I/N), prints nothing per scenario, and delivers
 * its results (payload: u64 load status, u64 count, per scenario u64 its
 * position in the whole list, u64 its exit status and its result,
 * cli_result.h) to the merge folder. Ranks above 0 print one line and exit
 * with their own status; rank 0 collects every partial, puts the results
 * back in list order, prints them as a single-machine run does and writes
 * the reports once.
 *
 * ckh's temporary folder (harness/exec/tmpdir.h) holds the reference-run
 * cache the workers share; the main flow removes it on every exit path,
 * an interrupted run included (SIGINT, SIGTERM, SIGHUP: the handlers only
 * record the signal, docs/CLI.md gives the exit status), and a later run
 * removes the folder a killed run left behind.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "cli/cli.h"
#include "cli/cli_dist.h"
#include "cli/cli_load.h"
#include "cli/cli_result.h"
#include "cli/opt.h"
#include "cli/wire.h"
#include "report.h"
#include "exec/pool.h"
#include "exec/runner.h"
#include "exec/tmpdir.h"
#include "search/explore_program.h"
#include "judge/judge.h"

#define SCENARIO_WALL_LIMIT_S 600 /* a worker is stopped after this long */

struct run_args {
    struct ckh_run_options ro; /* runner options */
    unsigned jobs;             /* worker processes */
    uint64_t mem_bytes;        /* memory limit per worker (0: none) */
    const char *filter;        /* --filter */
    uint32_t shard, shards;    /* --shard I/N (shards 0: all) */
    const char *junit;         /* --junit FILE */
    const char *json;          /* --json FILE */
    const char *html;          /* --html FILE */
    bool quiet;                /* --quiet: summary only */
    struct ckh_dist_opts dist; /* --distributed, --rank, --merge-dir, ... */
    struct ckh_dist d;         /* this process's rank (world 1: one machine) */
    struct ckh_dist_merge m;   /* the merge folder (world > 1) */
};

/* One scenario of the run. */
struct slot {
    struct ckh_cli_scn *e;        /* what its parse worker saw */
    struct ckh_report_result res; /* its result */
    int status;                   /* CKH_EXIT_* the scenario contributes */
    bool started;                 /* its worker was started */
    bool finished;                /* res holds its verdict (or its parse error) */
};

/* The run as the pool's callbacks see it. */
struct run_ctx {
    const struct run_args *a;        /* options */
    struct slot *slots;              /* every scenario, in order */
    size_t nslots;                   /* their count */
    size_t *runnable;                /* indices of slots that parsed, in order */
    size_t nrunnable;                /* their count */
    size_t printed;                  /* slots before this one are started or printed */
    struct ckh_pool_limits limits;   /* per worker */
    struct ckh_report_progress prog; /* progress line */
    bool tty, color;                 /* terminal output */
    bool deferred;                   /* print nothing per scenario (a rank of many) */
    uint64_t t0;                     /* start, for the progress line */
};

static void print_usage_run(FILE *f)
{
    fprintf(f,
            "usage: ckh run PATH... [options]\n"
            "\n"
            "Runs every scenario file under each PATH (files or folders, *.yaml/*.yml,\n"
            "recursively, in sorted order) and prints a verdict per scenario.\n"
            "\n"
            "options:\n"
            "  --seed N             run every scenario with seed N instead of its own\n"
            "  --jobs N             worker processes (default 1)\n"
            "  --mem-limit SIZE     memory limit per worker (default 4GiB; 0: none)\n"
            "  --filter GLOBS       only scenarios whose name matches a comma-separated glob\n"
            "  --shard I/N          only the I-th of every N scenarios (sorted, after --filter):\n"
            "                       N machines of a CI matrix run the whole suite once\n"
            "  --junit FILE         write a JUnit XML report\n"
            "  --json FILE          write a JSON report (schema: docs/SCENARIOS.md)\n"
            "  --html FILE          write a self-contained HTML report with per-node timelines\n"
            "  --check-determinism  run each faulted job twice and compare trace hashes\n"
            "  --platform P         sim (default) or real: workload jobs as real processes\n"
            "                       over MPI (docs/REAL.md), as `job.platform: real` asks\n"
            "  --quiet              print only failures and the summary\n"
            CKH_DIST_USAGE
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 all passed, 1 a check failed, 2 bad input, 3 internal error,\n"
            "  128+N interrupted by signal N\n");
}

/* ---- one scenario in a worker ---- */

/* Bad input: the scenario, or a plugin library it names (missing, not a
 * ckh plugin, another ABI, a name already taken, crashing or hanging
 * while it loads: CKH_ECRASH, CKH_ETIMEOUT of exec/plugin.c's probe). */
static int worker_status_of(int rc)
{
    if (rc == 0)
        return CKH_EXIT_OK;
    return ckh_err_is_bad_input(rc) ? CKH_EXIT_BAD_INPUT : CKH_EXIT_INTERNAL;
}

/* The pool's run: parses the slot's file again, runs it, sends the result. */
static int run_job(void *ctx, uint64_t k, int fd)
{
    struct run_ctx *c = ctx;
    struct slot *s = &c->slots[c->runnable[k]];
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_cli_parse_one(s->e->path, &sc, &err);
    if (rc)
        return worker_status_of(rc);
    ckh_report_result_init(&s->res);
    rc = sc->explore.present ? ckh_explore_program_verdict(sc, &c->a->ro, &s->res)
                             : ckh_harness_run(sc, &c->a->ro, &s->res);
    int st = worker_status_of(rc);
    /* Failing near the memory limit, or out of memory under it, is the
     * limit's verdict. */
    if (s->res.verdict == CKH_VERDICT_ERROR && ckh_pool_child_out_of_memory(s->res.message))
        st = CKH_POOL_EXIT_MEM;
    struct ckh_wire w;
    if (ckh_wire_open(&w) != 0 || ckh_cli_result_write(w.f, &s->res) != 0 || ckh_wire_send(&w, fd) != 0)
        st = CKH_EXIT_INTERNAL;
    ckh_report_result_clear(&s->res);
    ckh_scenario_free(sc);
    return st;
}

/* A result for a scenario whose worker left none. */
static void error_result(struct run_ctx *c, struct slot *s, const struct ckh_pool_result *r)
{
    const struct run_args *a = c->a;
    ckh_report_result_clear(&s->res);
    ckh_report_result_init(&s->res);
    ckh_report_set(&s->res.name, "%s", s->e->name);
    ckh_report_set(&s->res.file, "%s", s->e->path);
    s->res.verdict = CKH_VERDICT_ERROR;
    s->res.seed = a->ro.seed_set ? a->ro.seed : s->e->seed;
    ckh_report_set(&s->res.replay, "%s run %s --seed %" PRIu64, a->ro.argv0, s->e->path,
                   s->res.seed);
    char why[160];
    ckh_pool_describe(r, &c->limits, why, sizeof why);
    if (r->status == CKH_POOL_TIME_LIMIT)
        ckh_report_set(&s->res.message, "internal error: the scenario ran longer than %d s",
                       SCENARIO_WALL_LIMIT_S);
    else if (r->status == CKH_POOL_SIGNALED)
        ckh_report_set(&s->res.message,
                       "the scenario's worker died of signal %d (%s): a crash in the code under test "
                       "(a plugin it loads) or in ckh; `ckh replay %s` runs it in the foreground",
                       r->code, strsignal(r->code), s->e->path);
    else if (r->status == CKH_POOL_MEM_LIMIT)
        ckh_report_set(&s->res.message, "internal error: %s (ckh run --mem-limit SIZE)", why);
    else
        ckh_report_set(&s->res.message, "internal error: the worker left no result (%s)", why);
    s->status = CKH_EXIT_INTERNAL;
}

static void show_result(struct run_ctx *c, const struct slot *s)
{
    c->prog.done++;
    if (s->res.verdict == CKH_VERDICT_FAIL)
        c->prog.failed++;
    if (s->res.verdict == CKH_VERDICT_ERROR)
        c->prog.errors++;
    ckh_report_progress_clear(stderr, c->tty);
    if (c->deferred)
        return;
    if (!c->a->quiet || s->res.verdict != CKH_VERDICT_PASS)
        ckh_report_term_result(stdout, &s->res, c->color);
    fflush(stdout);
}

static void run_done(void *ctx, uint64_t k, const struct ckh_pool_result *r)
{
    struct run_ctx *c = ctx;
    CKH_ASSERT(k < c->nrunnable && c->runnable[k] < c->nslots); /* the pool runs jobs 0..nrunnable-1 */
    struct slot *s = &c->slots[c->runnable[k]];
    ckh_report_result_init(&s->res);
    FILE *f = r->status == CKH_POOL_OK || r->status == CKH_POOL_EXITED
                  ? ckh_wire_reader(r->data, r->len)
                  : NULL;
    if (f && ckh_cli_result_read(f, &s->res) == 0) {
        s->status = s->res.verdict == CKH_VERDICT_FAIL ? CKH_EXIT_FAILED : r->code;
        /* A verdict of error is never a success (e.g. nothing was judged). */
        if (s->res.verdict == CKH_VERDICT_ERROR && s->status == CKH_EXIT_OK)
            s->status = CKH_EXIT_BAD_INPUT;
    } else {
        error_result(c, s, r);
    }
    if (f)
        fclose(f);
    s->finished = true;
    show_result(c, s);
    c->prog.elapsed_ms = 0;
    if (c->tty) {
        c->prog.elapsed_ms = ckh_posix_now_ms() - c->t0;
        ckh_report_progress_print(stderr, &c->prog, c->tty);
    }
}

/* Prints the scenarios that did not parse, up to slot `upto`, in order. */
static void print_parse_errors(struct run_ctx *c, size_t upto)
{
    for (; c->printed < upto; c->printed++) {
        struct slot *s = &c->slots[c->printed];
        if (!s->e->error)
            continue;
        ckh_report_result_init(&s->res);
        ckh_report_set(&s->res.name, "%s", s->e->name);
        ckh_report_set(&s->res.file, "%s", s->e->path);
        ckh_report_set(&s->res.message, "%s", s->e->error);
        s->res.verdict = CKH_VERDICT_ERROR;
        s->status = s->e->status;
        s->finished = true;
        show_result(c, s);
    }
}

static bool run_more(void *ctx, uint64_t k)
{
    struct run_ctx *c = ctx;
    CKH_ASSERT(k < c->nrunnable && (k == 0 || c->runnable[k - 1] < c->runnable[k]));
    print_parse_errors(c, c->runnable[k] + 1);
    c->slots[c->runnable[k]].started = true; /* the pool starts it now */
    return true;
}

/* ---- the command ---- */

/* Parses the options into *a; returns -1 to go on, else the exit status. */
static int run_options(int argc, char **argv, struct run_args *a)
{
    static const struct option longopts[] = {
        {"seed", required_argument, NULL, 's'},  {"jobs", required_argument, NULL, 'j'},
        {"filter", required_argument, NULL, 'f'}, {"junit", required_argument, NULL, 'J'},
        {"json", required_argument, NULL, 'O'},  {"check-determinism", no_argument, NULL, 'D'},
        {"html", required_argument, NULL, 'H'},  {"mem-limit", required_argument, NULL, 'M'},
        {"quiet", no_argument, NULL, 'q'},       {"help", no_argument, NULL, 'h'},
        {"shard", required_argument, NULL, 'S'},
        {"platform", required_argument, NULL, 'P'}, /* docs/REAL.md */
        CKH_DIST_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    char msg[256];
    uint64_t v;
    optind = 0; /* 0: GNU getopt re-initializes (ckh_cli_main may run more than once) */
    int c;
    while ((c = getopt_long(argc, argv, "s:j:f:qh", longopts, NULL)) != -1) {
        int rc = 0;
        if (ckh_dist_is_option(c))
            rc = ckh_dist_option(&a->dist, c, optarg, msg, sizeof msg);
        else switch (c) {
        case 's':
            rc = ckh_opt_u64("seed", optarg, 0, UINT64_MAX, &a->ro.seed, msg, sizeof msg);
            a->ro.seed_set = true;
            break;
        case 'j':
            rc = ckh_opt_u64("jobs", optarg, 1, 256, &v, msg, sizeof msg);
            a->jobs = (unsigned)v;
            break;
        case 'M': rc = ckh_opt_size("mem-limit", optarg, 0, UINT64_MAX, &a->mem_bytes, msg, sizeof msg); break;
        case 'f': a->filter = optarg; break;
        case 'S': rc = ckh_opt_shard("shard", optarg, &a->shard, &a->shards, msg, sizeof msg); break;
        case 'J': a->junit = optarg; break;
        case 'O': a->json = optarg; break;
        case 'H':
            a->html = optarg;
            a->ro.timeline = true;
            break;
        case 'D': a->ro.check_determinism = true; break;
        case 'P': /* --platform sim|real */
            a->ro.real_platform = !strcmp(optarg, "real");
            if (!a->ro.real_platform && strcmp(optarg, "sim") != 0)
                rc = ckh_errf(msg, sizeof msg, CKH_EINVAL, "--platform: expected sim or real, got '%s'", optarg);
            break;
        case 'q': a->quiet = true; break;
        case 'h': print_usage_run(stdout); return CKH_EXIT_OK;
        default: print_usage_run(stderr); return CKH_EXIT_BAD_INPUT;
        }
        if (rc) {
            fprintf(stderr, "ckh run: %s\n", msg);
            return CKH_EXIT_BAD_INPUT;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "ckh run: no scenario file or folder given\n");
        print_usage_run(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    if (ckh_opt_check_reports(a->junit, a->json, a->html, msg, sizeof msg) != 0) {
        fprintf(stderr, "ckh run: %s\n", msg);
        return CKH_EXIT_BAD_INPUT;
    }
    return -1;
}

/* Writes one report of n results; sig: the signal that interrupted the run (0: none). */
static int write_report(const char *path, const char *what, const struct ckh_report_result *rs,
                        size_t n, int sig, int (*fn)(FILE *, const struct ckh_report_meta *,
                                                     const struct ckh_report_result *, size_t))
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ckh: cannot write the %s report %s: %s\n", what, path, strerror(errno));
        return CKH_EXIT_BAD_INPUT;
    }
    struct ckh_report_meta meta = {.suite = "ckh", .interrupted_by = sig};
    int rc = fn(f, &meta, rs, n);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "ckh: writing the %s report %s failed\n", what, path);
        return CKH_EXIT_INTERNAL;
    }
    return CKH_EXIT_OK;
}

static int max_status(int a, int b)
{
    return a > b ? a : b;
}

/* The reports asked for, of total results in list order; returns
 * exit_code raised by a report that could not be written. */
static int write_reports(const struct run_args *a, const struct ckh_report_result *rs, size_t total, int sig,
                         int exit_code)
{
    if (a->junit)
        exit_code = max_status(exit_code, write_report(a->junit, "JUnit", rs, total, sig, ckh_report_junit));
    if (a->json)
        exit_code = max_status(exit_code, write_report(a->json, "JSON", rs, total, sig, ckh_report_json));
    if (a->html)
        exit_code = max_status(exit_code, write_report(a->html, "HTML", rs, total, sig, ckh_report_html));
    return exit_code;
}

/* Summary and reports of total results in list order; returns exit_code
 * raised by a report that could not be written. */
static int report_results(const struct run_args *a, const struct ckh_report_result *rs,
                          size_t total, int exit_code, bool color)
{
    if (total > 0) /* with nothing loaded, the error above says it all */
        ckh_report_term_summary(stdout, rs, total, color);
    return write_reports(a, rs, total, 0, exit_code);
}

/* Summary and reports; returns the exit status the results give. */
static int run_report(const struct run_ctx *c, int exit_code)
{
    size_t total = c->nslots;
    struct ckh_report_result *rs = calloc(total ? total : 1, sizeof *rs);
    if (!rs)
        return CKH_EXIT_INTERNAL;
    for (size_t i = 0; i < total; i++) {
        rs[i] = c->slots[i].res;
        exit_code = max_status(exit_code, c->slots[i].status);
    }
    exit_code = report_results(c->a, rs, total, exit_code, c->color);
    free(rs);
    return exit_code;
}

/* An interrupted run's reports (single machine): the scenarios that
 * finished as they are, a parse error as it is, the others not run
 * (interrupted while they ran, or not started), marked with the signal
 * (docs/SCENARIOS.md, "Reports"). Returns the status a report that could
 * not be written gives (0: none). */
static int interrupted_report(struct run_ctx *c, int sig)
{
    const struct run_args *a = c->a;
    if (!a->junit && !a->json && !a->html)
        return 0;
    size_t total = c->slots ? c->nslots : 0;
    struct ckh_report_result *rs = calloc(total ? total : 1, sizeof *rs);
    if (!rs)
        return CKH_EXIT_INTERNAL;
    for (size_t i = 0; i < total; i++) {
        struct slot *s = &c->slots[i];
        if (!s->finished) {
            ckh_report_result_clear(&s->res);
            ckh_report_result_init(&s->res);
            ckh_report_set(&s->res.name, "%s", s->e->name);
            ckh_report_set(&s->res.file, "%s", s->e->path);
        }
        if (!s->finished && s->e->error) { /* known before anything ran */
            s->res.verdict = CKH_VERDICT_ERROR;
            ckh_report_set(&s->res.message, "%s", s->e->error);
            s->finished = true;
        } else if (!s->finished) {
            s->res.state = s->started ? CKH_REPORT_INTERRUPTED : CKH_REPORT_NOT_STARTED;
            s->res.seed = a->ro.seed_set ? a->ro.seed : s->e->seed;
            ckh_report_set(&s->res.replay, "%s run %s --seed %" PRIu64 "%s", a->ro.argv0, s->e->path,
                           s->res.seed, a->ro.real_platform ? " --platform real" : "");
            ckh_report_set(&s->res.message, "not run: ckh was interrupted by signal %d (%s) %s", sig,
                           strsignal(sig), s->started ? "while it ran" : "before it started");
        }
        rs[i] = s->res;
    }
    int st = write_reports(a, rs, total, sig, CKH_EXIT_OK);
    free(rs);
    return st;
}

/* Runs the loaded scenarios in the pool; returns 0, -EINTR or a code. */
static int run_scenarios(struct run_ctx *c, const char *tmp)
{
    struct run_args *a = (struct run_args *)c->a;
    a->ro.cache_dir = tmp;
    for (size_t i = 0; i < c->nslots; i++)
        if (!c->slots[i].e->error)
            c->runnable[c->nrunnable++] = i;
    /* A rank of many writes to its launcher (Open MPI gives it a pseudo
     * terminal): no progress line, no colour, whatever the terminal. */
    c->deferred = a->d.world > 1;
    c->tty = !c->deferred && isatty(STDERR_FILENO) != 0;
    c->color = !c->deferred && isatty(STDOUT_FILENO) != 0 && !getenv("NO_COLOR");
    c->prog.total = c->nslots;
    c->t0 = ckh_posix_now_ms(); /* the progress line only */
    c->limits = (struct ckh_pool_limits){SCENARIO_WALL_LIMIT_S, a->mem_bytes};
    static const struct ckh_pool_ops ops = {.run = run_job, .done = run_done, .more = run_more};
    struct ckh_pool_config cfg = {.workers = a->jobs, .njobs = c->nrunnable, .limits = c->limits,
                                  .ops = &ops, .ctx = c};
    int rc = ckh_pool_run(&cfg);
    if (rc == 0)
        print_parse_errors(c, c->nslots);
    ckh_report_progress_clear(stderr, c->tty);
    return rc;
}

/* With nothing to run: the message and status of a single-machine run. */
static int nothing_found(const struct run_args *a)
{
    if (a->shards > 1) {
        fprintf(stderr, "ckh run: shard %u/%u holds no scenario\n", a->shard, a->shards);
        return CKH_EXIT_OK;
    }
    fprintf(stderr, "ckh run: no scenario found%s%s\n", a->filter ? " matching " : "",
            a->filter ? a->filter : "");
    return CKH_EXIT_BAD_INPUT;
}

/* ---- on many machines: a rank's partial, and rank 0's merge ---- */

/* Encodes the rank's results (the payload of the header comment). */
static int dist_payload(const struct run_ctx *c, int load_status, char **buf, size_t *len)
{
    const struct ckh_dist *d = &c->a->d;
    FILE *f = open_memstream(buf, len);
    if (!f)
        return CKH_ENOMEM;
    ckh_wire_put_u64(f, (uint64_t)load_status);
    ckh_wire_put_u64(f, c->nslots);
    int rc = 0;
    for (size_t j = 0; j < c->nslots && rc == 0; j++) {
        ckh_wire_put_u64(f, (uint64_t)j * d->world + d->rank);
        ckh_wire_put_u64(f, (uint64_t)c->slots[j].status);
        rc = ckh_cli_result_write(f, &c->slots[j].res);
    }
    if (ferror(f) && rc == 0)
        rc = CKH_ENOMEM;
    if (fclose(f) != 0 && rc == 0)
        rc = CKH_ENOMEM;
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

/* Rank > 0: delivers the status and the results (or why there are none:
 * error) and prints one line. Returns the rank's exit status. */
static int dist_deliver(const struct run_ctx *c, int st, const char *error)
{
    const struct run_args *a = c->a;
    char *buf = NULL, msg[1400];
    size_t len = 0;
    if (!error && dist_payload(c, st, &buf, &len) != 0) {
        st = CKH_EXIT_INTERNAL;
        error = "out of memory encoding its results";
    }
    for (size_t j = 0; !error && j < c->nslots; j++)
        st = max_status(st, c->slots[j].status);
    int rc = ckh_dist_deliver(&a->m, st, error, buf, len, msg, sizeof msg);
    free(buf);
    if (rc) {
        fprintf(stderr, "ckh run: rank %u of %u: %s\n", a->d.rank, a->d.world, msg);
        return max_status(st, ckh_dist_exit_status(rc));
    }
    size_t passed = 0, failed = 0, errors = 0;
    for (size_t j = 0; !error && j < c->nslots; j++) {
        enum ckh_verdict v = c->slots[j].res.verdict;
        passed += v == CKH_VERDICT_PASS;
        failed += v == CKH_VERDICT_FAIL;
        errors += v == CKH_VERDICT_ERROR;
    }
    if (error)
        fprintf(stderr, "ckh run: rank %u of %u (%s): %s; told rank 0 through %s\n", a->d.rank,
                a->d.world, a->d.source, error, a->m.dir);
    else
        fprintf(stderr, "ckh run: rank %u of %u (%s): %zu scenarios: %zu passed, %zu failed, %zu "
                "errors; results delivered to %s\n", a->d.rank, a->d.world, a->d.source,
                c->nslots, passed, failed, errors, a->m.dir);
    return ckh_dist_rank_exit(&a->m, &a->d, a->dist.merge_timeout_ms, "run", st);
}

/* Every result of the run in list order, as rank 0 puts them together. */
struct merged {
    struct ckh_report_result *rs; /* per position */
    int *status;                   /* CKH_EXIT_* of each */
    bool *filled;                  /* whether a rank delivered that position */
    size_t n;                      /* positions */
    uint32_t world;                /* ranks: position p is rank p % world's */
};

static void merged_free(struct merged *mg)
{
    for (size_t i = 0; mg->rs && i < mg->n; i++)
        ckh_report_result_clear(&mg->rs[i]);
    free(mg->rs);
    free(mg->status);
    free(mg->filled);
}

/* The load status and the count at the head of a rank's payload. */
static int part_head(const struct ckh_dist_part *p, uint64_t *load_status, uint64_t *count)
{
    if (p->len < 2 * sizeof(uint64_t))
        return CKH_ETRUNCATED;
    memcpy(load_status, p->payload, sizeof *load_status);
    memcpy(count, (const char *)p->payload + sizeof *load_status, sizeof *count);
    return 0;
}

/* Decodes rank r's results into their positions. */
static int part_place(const struct ckh_dist_part *p, struct merged *mg, char *msg, size_t n)
{
    FILE *f = ckh_wire_reader(p->payload, p->len);
    uint64_t skip, count = 0;
    int rc = f ? 0 : CKH_ETRUNCATED;
    rc = rc ? rc : ckh_wire_get_u64(f, &skip);
    rc = rc ? rc : ckh_wire_get_u64(f, &count);
    for (uint64_t k = 0; rc == 0 && k < count; k++) {
        uint64_t pos = 0, st = 0;
        rc = ckh_wire_get_u64(f, &pos);
        rc = rc ? rc : ckh_wire_get_u64(f, &st);
        if (rc == 0 && (pos >= mg->n || mg->filled[pos] || pos % mg->world != p->rank))
            rc = CKH_ECORRUPT;
        if (rc)
            break;
        mg->filled[pos] = true;
        mg->status[pos] = (int)st;
        rc = ckh_cli_result_read(f, &mg->rs[pos]);
    }
    if (f)
        fclose(f);
    if (rc)
        return ckh_errf(msg, n, rc, "rank %u's results (from host %s) cannot be read: %s", p->rank,
                        p->host, ckh_strerror(rc));
    return 0;
}

/* Sizes *mg from the ranks' counts, which must be the round-robin split
 * of their sum (hosts that saw other scenario files do not fit it). */
static int merged_alloc(struct merged *mg, const struct run_ctx *c,
                        const struct ckh_dist_part *parts, int *exit_code, char *msg, size_t n)
{
    uint32_t w = c->a->d.world;
    uint64_t total = c->nslots, ls = 0, count = 0;
    for (uint32_t r = 1; r < w; r++) {
        if (part_head(&parts[r], &ls, &count) != 0)
            return ckh_errf(msg, n, CKH_ETRUNCATED, "rank %u's results (from host %s) are "
                            "truncated", r, parts[r].host);
        *exit_code = max_status(*exit_code, (int)ls);
        total += count;
    }
    for (uint32_t r = 0; r < w; r++) {
        uint64_t share = total > r ? (total - r + w - 1) / w : 0;
        count = c->nslots;
        if (r > 0)
            part_head(&parts[r], &ls, &count);
        if (count != share)
            return ckh_errf(msg, n, CKH_EFOREIGN, "rank %u ran %" PRIu64 " scenarios, but its "
                            "share of the %" PRIu64 " the ranks found together is %" PRIu64 ": "
                            "every host must see the same scenario files (one shared folder)",
                            r, count, total, share);
    }
    mg->n = (size_t)total;
    mg->world = w;
    mg->rs = calloc(mg->n ? mg->n : 1, sizeof *mg->rs);
    mg->status = calloc(mg->n ? mg->n : 1, sizeof *mg->status);
    mg->filled = calloc(mg->n ? mg->n : 1, sizeof *mg->filled);
    if (!mg->rs || !mg->status || !mg->filled)
        return ckh_errf(msg, n, CKH_ENOMEM, "out of memory merging the results");
    for (size_t i = 0; i < mg->n; i++)
        ckh_report_result_init(&mg->rs[i]);
    return 0;
}

/* Puts rank 0's own results (moved out of its slots) and every other
 * rank's in their positions. */
static int merge_parts(struct run_ctx *c, const struct ckh_dist_part *parts, struct merged *mg,
                       int *exit_code, char *msg, size_t n)
{
    int rc = merged_alloc(mg, c, parts, exit_code, msg, n);
    for (size_t j = 0; rc == 0 && j < c->nslots; j++) {
        size_t pos = j * mg->world;
        mg->rs[pos] = c->slots[j].res;
        ckh_report_result_init(&c->slots[j].res);
        mg->status[pos] = c->slots[j].status;
        mg->filled[pos] = true;
    }
    for (uint32_t r = 1; rc == 0 && r < mg->world; r++)
        rc = part_place(&parts[r], mg, msg, n);
    return rc;
}

/* Prints the merged results as a single-machine run does, then the
 * summary and the reports. */
static int merged_report(const struct run_ctx *c, const struct merged *mg, int exit_code)
{
    const struct run_args *a = c->a;
    for (size_t i = 0; i < mg->n; i++) {
        exit_code = max_status(exit_code, mg->status[i]);
        if (!a->quiet || mg->rs[i].verdict != CKH_VERDICT_PASS)
            ckh_report_term_result(stdout, &mg->rs[i], c->color);
    }
    fflush(stdout);
    if (mg->n == 0 && exit_code == CKH_EXIT_OK)
        return nothing_found(a);
    return report_results(a, mg->rs, mg->n, exit_code, c->color);
}

/* Says which ranks have no results; returns whether any. */
static bool ranks_without_results(const struct ckh_dist_part *parts, uint32_t w, int *exit_code)
{
    bool any = false;
    for (uint32_t r = 1; r < w; r++) {
        if (!parts[r].error)
            continue;
        fprintf(stderr, "ckh run: rank %u (host %s, pid %" PRIu64 ") has no results: %s\n", r,
                parts[r].host, parts[r].pid, parts[r].error);
        *exit_code = max_status(*exit_code, parts[r].status);
        any = true;
    }
    return any;
}

/* Rank 0: waits for the other ranks, merges and reports. Returns the
 * exit status of the whole run. */
static int dist_merge(struct run_ctx *c, int exit_code)
{
    const struct run_args *a = c->a;
    struct ckh_dist_part *parts = NULL;
    char msg[4096];
    int rc = ckh_dist_collect(&a->m, a->dist.merge_timeout_ms, &parts, msg, sizeof msg);
    if (rc == -EINTR)
        fprintf(stderr, "ckh run: interrupted by signal %d (%s) waiting for the other ranks; "
                "their results stay in %s\n", ckh_pool_interrupted(),
                strsignal(ckh_pool_interrupted()), a->m.dir);
    else if (rc)
        fprintf(stderr, "ckh run: %s\n", msg);
    if (rc) {
        exit_code = max_status(exit_code, ckh_dist_exit_status(rc));
        ckh_dist_give_up(&a->m, exit_code);
        return exit_code;
    }
    struct merged mg = {0};
    if (ranks_without_results(parts, a->d.world, &exit_code)) {
        ckh_dist_cleanup(&a->m); /* what there was to say is said */
    } else if ((rc = merge_parts(c, parts, &mg, &exit_code, msg, sizeof msg)) != 0) {
        fprintf(stderr, "ckh run: %s; the partial results stay in %s\n", msg, a->m.dir);
        exit_code = max_status(exit_code, CKH_EXIT_INTERNAL);
        ckh_dist_give_up(&a->m, exit_code);
    } else {
        exit_code = merged_report(c, &mg, exit_code);
        ckh_dist_cleanup(&a->m);
    }
    merged_free(&mg);
    ckh_dist_parts_free(parts, a->d.world);
    return exit_code;
}

/* A rank above 0 that cannot run its share tells rank 0 why. */
static void dist_fail(const struct run_ctx *c, int rc, size_t nloaded)
{
    char why[300];
    int sig = ckh_pool_interrupted();
    if (rc == -EINTR && sig)
        snprintf(why, sizeof why, "interrupted by signal %d (%s); %zu of %zu scenarios finished",
                 sig, strsignal(sig), c->prog.done, nloaded);
    else
        snprintf(why, sizeof why, "%s", ckh_strerror(rc));
    dist_deliver(c, rc == -EINTR && sig ? CKH_EXIT_SIGNAL + sig : CKH_EXIT_INTERNAL, why);
}

/* ---- the command ---- */

/* The composite shard this rank loads: the I-th of every N, then every
 * W-th of those from rank R, is (R*N + I)/(N*W). */
static void dist_shard(const struct run_args *a, struct ckh_cli_load *l)
{
    if (a->d.world <= 1)
        return;
    uint32_t i = a->shards ? a->shard : 1, n = a->shards ? a->shards : 1;
    l->shard = a->d.rank * n + i;
    l->shards = n * a->d.world;
}

/* Loads, runs and reports; the caller owns the temporary folder. */
static int run_all(struct run_args *a, char **paths, size_t npaths, const char *tmp)
{
    int exit_code = CKH_EXIT_OK;
    struct ckh_cli_load l = {.verb = "run", .filter = a->filter, .jobs = a->jobs,
                             .mem_bytes = a->mem_bytes, .shard = a->shard, .shards = a->shards};
    dist_shard(a, &l);
    bool many = a->d.world > 1;
    struct run_ctx c = {.a = a};
    struct ckh_cli_scn *scns = NULL;
    size_t n = 0;
    int rc = ckh_cli_load_scenarios(&l, paths, npaths, &scns, &n, &exit_code);
    if (rc == 0 && n == 0 && exit_code == CKH_EXIT_OK && !many) {
        ckh_cli_scns_free(scns, n);
        return nothing_found(a);
    }
    c.nslots = n;
    if (rc == 0 && (!(c.slots = calloc(n ? n : 1, sizeof *c.slots)) ||
                    !(c.runnable = calloc(n ? n : 1, sizeof *c.runnable))))
        rc = CKH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        c.slots[i].e = &scns[i];
    if (rc == 0)
        rc = run_scenarios(&c, tmp);
    if (rc == 0 && !many)
        exit_code = run_report(&c, exit_code);
    else if (rc == 0)
        exit_code = a->d.rank ? dist_deliver(&c, exit_code, NULL) : dist_merge(&c, exit_code);
    else if (many && a->d.rank)
        dist_fail(&c, rc, n);
    else if (many)
        ckh_dist_give_up(&a->m, rc == -EINTR ? CKH_EXIT_SIGNAL + ckh_pool_interrupted()
                                              : CKH_EXIT_INTERNAL);
    if (rc == -EINTR && !many)
        interrupted_report(&c, ckh_pool_interrupted()); /* a report that fails says so; the status is the signal's */
    for (size_t i = 0; c.slots && i < n; i++)
        ckh_report_result_clear(&c.slots[i].res);
    free(c.slots);
    free(c.runnable);
    ckh_cli_scns_free(scns, n);
    if (rc == -EINTR) {
        int sig = ckh_pool_interrupted();
        if (c.slots)
            fprintf(stderr, "ckh run: interrupted by signal %d (%s); %zu of %zu scenarios "
                    "finished\n", sig, strsignal(sig), c.prog.done, n);
        else
            fprintf(stderr, "ckh run: interrupted by signal %d (%s) while parsing the scenario "
                    "files\n", sig, strsignal(sig));
        return CKH_EXIT_SIGNAL + sig;
    }
    if (rc) {
        fprintf(stderr, "ckh run: %s\n", ckh_strerror(rc));
        return CKH_EXIT_INTERNAL;
    }
    return exit_code;
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* The options that decide the results: every rank must run with the same. */
static uint64_t run_fingerprint(const struct run_args *a, char **paths, size_t npaths)
{
    uint64_t h = ckh_dist_fold_str(0, "run");
    h = ckh_dist_fold_u64(h, a->ro.seed_set ? a->ro.seed : UINT64_MAX);
    h = ckh_dist_fold_u64(h, a->ro.seed_set);
    h = ckh_dist_fold_str(h, a->filter);
    h = ckh_dist_fold_u64(h, ((uint64_t)a->shard << 32) | a->shards);
    h = ckh_dist_fold_u64(h, a->ro.check_determinism);
    h = ckh_dist_fold_u64(h, a->ro.timeline);
    h = ckh_dist_fold_str(h, a->ro.argv0);
    h = ckh_dist_fold_u64(h, npaths);
    for (size_t i = 0; i < npaths; i++)
        h = ckh_dist_fold_str(h, paths[i]);
    return h;
}

/* The folder of a report file ("." when it names none). */
static void folder_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

/* The rank, and with W > 1 the merge folder joined. Returns -1 to go on,
 * else the exit status. */
static int dist_setup(struct run_args *a, char **paths, size_t npaths)
{
    char msg[1400], base[1024];
    if (ckh_dist_detect(&a->dist, env_get, &a->d, msg, sizeof msg) != 0) {
        fprintf(stderr, "ckh run: %s\n", msg);
        return CKH_EXIT_BAD_INPUT;
    }
    if (a->d.world <= 1)
        return -1;
    if ((uint64_t)(a->shards ? a->shards : 1) * a->d.world > UINT32_MAX) {
        fprintf(stderr, "ckh run: --shard %u/%u on %u ranks: too many parts\n", a->shard,
                a->shards, a->d.world);
        return CKH_EXIT_BAD_INPUT;
    }
    const char *report = a->junit ? a->junit : a->json ? a->json : a->html;
    if (a->dist.merge_dir)
        snprintf(base, sizeof base, "%s", a->dist.merge_dir);
    else if (report)
        folder_of(report, base, sizeof base);
    else {
        fprintf(stderr, "ckh run: rank %u of %u (%s): the ranks merge their results through a "
                "folder every host sees: give --merge-dir DIR, or a report (--junit, --json, "
                "--html) in such a folder (docs/MULTIHOST.md)\n", a->d.rank, a->d.world,
                a->d.source);
        return CKH_EXIT_BAD_INPUT;
    }
    int rc = ckh_dist_join(&a->m, base, &a->dist, &a->d, "run", run_fingerprint(a, paths, npaths),
                           msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "ckh run: rank %u of %u (%s): %s\n", a->d.rank, a->d.world, a->d.source,
                msg);
        return ckh_dist_exit_status(rc);
    }
    return -1;
}

int ckh__cli_run(int argc, char **argv, const char *argv0)
{
    struct run_args a;
    memset(&a, 0, sizeof a);
    a.jobs = 1;
    a.mem_bytes = CKH_POOL_MEM_DEFAULT;
    a.ro.argv0 = argv0;
    int st = run_options(argc, argv, &a);
    if (st >= 0)
        return st;
    if ((st = dist_setup(&a, argv + optind, (size_t)(argc - optind))) >= 0)
        return st;
    const char *src = getenv("CKH_SOURCE_DIR");
    a.ro.source_dir = src && src[0] ? src : ".";
    if (ckh_pool_signals_install() != 0) {
        fprintf(stderr, "ckh run: cannot catch signals: %s\n", strerror(errno));
        return CKH_EXIT_INTERNAL;
    }
    ckh_tmp_sweep(NULL); /* folders of ckh processes that died without removing them */
    char tmp[1024];
    int rc = ckh_tmp_make(tmp, sizeof tmp);
    if (rc != 0) {
        fprintf(stderr, "ckh run: cannot create a temporary folder under %s: %s\n",
                ckh_tmp_base(), strerror(-rc));
        if (a.d.world > 1 && a.d.rank > 0)
            dist_deliver(&(struct run_ctx){.a = &a}, CKH_EXIT_INTERNAL,
                         "cannot create a temporary folder");
        else if (a.d.world > 1)
            ckh_dist_give_up(&a.m, CKH_EXIT_INTERNAL);
        ckh_pool_signals_reset();
        return CKH_EXIT_INTERNAL;
    }
    st = run_all(&a, argv + optind, (size_t)(argc - optind), tmp);
    ckh_tmp_remove(tmp);
    /* A worker killed past its grace (or its time limit) could not remove
     * its run folder or unmount its mounts: every worker is reaped now, so
     * they are stale and go (tmpdir.h: only folders of dead ckh processes). */
    ckh_tmp_sweep(NULL);
    ckh_pool_signals_reset();
    return st;
}
