/* `ckh run`: every scenario in a worker of the pool (harness/run/pool.h).
 *
 * Flow: options · report paths checked · scenarios parsed in workers
 * (cli_load.c) · scenarios run in workers (at most --jobs at a time, each
 * under a wall-time limit and the memory limit; a worker parses its file
 * again and sends its result back over the pool's pipe) · summary and
 * reports.
 *
 * ckh's temporary folder (harness/run/tmpdir.h) holds the reference-run
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

#include "ckh/err.h"
#include "cli/cli.h"
#include "cli/cli_load.h"
#include "cli/cli_result.h"
#include "cli/opt.h"
#include "cli/wire.h"
#include "report.h"
#include "run/pool.h"
#include "run/runner.h"
#include "run/tmpdir.h"

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
};

/* One scenario of the run. */
struct slot {
    struct ckh_cli_scn *e;        /* what its parse worker saw */
    struct ckh_report_result res; /* its result */
    int status;                   /* CKH_EXIT_* the scenario contributes */
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
            "  --quiet              print only failures and the summary\n"
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 all passed, 1 a check failed, 2 bad input, 3 internal error,\n"
            "  128+N interrupted by signal N\n");
}

/* ---- one scenario in a worker ---- */

/* Bad input: the scenario, or a plugin library it names (missing, not a
 * ckh plugin, another ABI, a name already taken). */
static int worker_status_of(int rc)
{
    if (rc == 0)
        return CKH_EXIT_OK;
    return rc == CKH_EINVAL || rc == CKH_EPARSE || rc == -ENOENT || rc == CKH_ENOTFOUND || rc == CKH_EFOREIGN ||
                   rc == CKH_EVERSION || rc == CKH_EUNSUPPORTED || rc == CKH_EEXISTS
               ? CKH_EXIT_BAD_INPUT
               : CKH_EXIT_INTERNAL;
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
    rc = ckh_harness_run(sc, &c->a->ro, &s->res);
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
    if (!c->a->quiet || s->res.verdict != CKH_VERDICT_PASS)
        ckh_report_term_result(stdout, &s->res, c->color);
    fflush(stdout);
}

static void run_done(void *ctx, uint64_t k, const struct ckh_pool_result *r)
{
    struct run_ctx *c = ctx;
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
    show_result(c, s);
    c->prog.elapsed_ms = 0;
    if (c->tty) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        c->prog.elapsed_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u - c->t0;
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
        show_result(c, s);
    }
}

static bool run_more(void *ctx, uint64_t k)
{
    struct run_ctx *c = ctx;
    print_parse_errors(c, c->runnable[k] + 1);
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
        {NULL, 0, NULL, 0},
    };
    char msg[256];
    uint64_t v;
    optind = 0; /* 0: GNU getopt re-initializes (ckh_cli_main may run more than once) */
    int c;
    while ((c = getopt_long(argc, argv, "s:j:f:qh", longopts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
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
    const char *names[] = {"JUnit report", "JSON report", "HTML report"};
    const char *paths[] = {a->junit, a->json, a->html};
    for (int i = 0; i < 3; i++) {
        if (paths[i] && ckh_opt_check_output(names[i], paths[i], false, msg, sizeof msg) != 0) {
            fprintf(stderr, "ckh run: %s\n", msg);
            return CKH_EXIT_BAD_INPUT;
        }
    }
    return -1;
}

static int write_report(const char *path, const char *what, const struct ckh_report_result *rs,
                        size_t n, int (*fn)(FILE *, const struct ckh_report_meta *,
                                            const struct ckh_report_result *, size_t))
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ckh: cannot write the %s report %s: %s\n", what, path, strerror(errno));
        return CKH_EXIT_BAD_INPUT;
    }
    struct ckh_report_meta meta = {.suite = "ckh"};
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
    if (total > 0) /* with nothing loaded, the error above says it all */
        ckh_report_term_summary(stdout, rs, total, c->color);
    const struct run_args *a = c->a;
    if (a->junit)
        exit_code = max_status(exit_code, write_report(a->junit, "JUnit", rs, total, ckh_report_junit));
    if (a->json)
        exit_code = max_status(exit_code, write_report(a->json, "JSON", rs, total, ckh_report_json));
    if (a->html)
        exit_code = max_status(exit_code, write_report(a->html, "HTML", rs, total, ckh_report_html));
    free(rs);
    return exit_code;
}

/* Runs the loaded scenarios in the pool; returns 0, -EINTR or a code. */
static int run_scenarios(struct run_ctx *c, const char *tmp)
{
    struct run_args *a = (struct run_args *)c->a;
    a->ro.cache_dir = tmp;
    for (size_t i = 0; i < c->nslots; i++)
        if (!c->slots[i].e->error)
            c->runnable[c->nrunnable++] = i;
    c->tty = isatty(STDERR_FILENO) != 0;
    c->color = isatty(STDOUT_FILENO) != 0 && !getenv("NO_COLOR");
    c->prog.total = c->nslots;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the progress line only */
    c->t0 = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
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

/* Loads, runs and reports; the caller owns the temporary folder. */
static int run_all(struct run_args *a, char **paths, size_t npaths, const char *tmp)
{
    int exit_code = CKH_EXIT_OK;
    struct ckh_cli_load l = {.verb = "run", .filter = a->filter, .jobs = a->jobs,
                             .mem_bytes = a->mem_bytes, .shard = a->shard, .shards = a->shards};
    struct run_ctx c = {.a = a};
    struct ckh_cli_scn *scns = NULL;
    size_t n = 0;
    int rc = ckh_cli_load_scenarios(&l, paths, npaths, &scns, &n, &exit_code);
    if (rc == 0 && n == 0 && exit_code == CKH_EXIT_OK && a->shards > 1) {
        fprintf(stderr, "ckh run: shard %u/%u holds no scenario\n", a->shard, a->shards);
        ckh_cli_scns_free(scns, n);
        return CKH_EXIT_OK;
    }
    if (rc == 0 && n == 0 && exit_code == CKH_EXIT_OK) {
        fprintf(stderr, "ckh run: no scenario found%s%s\n", a->filter ? " matching " : "",
                a->filter ? a->filter : "");
        exit_code = CKH_EXIT_BAD_INPUT;
    }
    c.nslots = n;
    if (rc == 0 && (!(c.slots = calloc(n ? n : 1, sizeof *c.slots)) ||
                    !(c.runnable = calloc(n ? n : 1, sizeof *c.runnable))))
        rc = CKH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        c.slots[i].e = &scns[i];
    if (rc == 0)
        rc = run_scenarios(&c, tmp);
    if (rc == 0)
        exit_code = run_report(&c, exit_code);
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
        ckh_pool_signals_reset();
        return CKH_EXIT_INTERNAL;
    }
    st = run_all(&a, argv + optind, (size_t)(argc - optind), tmp);
    ckh_tmp_remove(tmp);
    ckh_pool_signals_reset();
    return st;
}
