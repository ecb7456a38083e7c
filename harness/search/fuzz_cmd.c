/* `ckh fuzz`: the seeds of a campaign in workers of the pool
 * (harness/run/pool.h), then the failures listed and shrunk.
 *
 * Specification of a campaign:
 *   - The seeds are those of the shard (ckh_fuzz_in_shard) in
 *     [--start, --start + --seeds - 1] (the range may not pass 2^64 - 1),
 *     or, with --time, from --start until the deadline.
 *   - Each seed is one job: a worker generates, runs and judges it
 *     (ckh_fuzz_run_seed) under the per-seed wall-time limit and the
 *     memory limit, and sends its struct ckh_fuzz_seed_result back. A
 *     worker that dies is an error of its seed; the campaign goes on.
 *   - Failures are listed in seed order, whatever --jobs, at most
 *     FUZZ_LIST_MAX of them (the count of the others is said); the first
 *     --shrink-max failures of that list are shrunk into files under --out.
 *   - SIGINT, SIGTERM or SIGHUP stops the campaign: the workers are killed,
 *     the failures found so far are listed (and no more are shrunk; those
 *     written stay), the summary says it was interrupted, and the exit
 *     status is 128 + the signal (docs/CLI.md).
 *
 * Map: options · the seed jobs · the listing and shrinking · the command.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ckh/backend.h"
#include "ckh/defects.h"
#include "ckh/err.h"
#include "cli/opt.h"
#include "run/workloads.h"
#include "run/pool.h"
#include "search/fuzz.h"
#include "search/shrink.h"

#define FUZZ_LIST_MAX 64       /* failures listed */
#define FUZZ_SEED_LIMIT_S 600  /* wall time of one seed */
#define FUZZ_EXIT_SIGNAL 128   /* + N: interrupted by signal N */

struct fuzz_plan {
    uint64_t start;             /* first seed of the range */
    uint64_t count;             /* seeds in the range (UINT64_MAX: until the deadline) */
    uint32_t shard;             /* 1-based shard index */
    uint32_t shards;            /* shard count */
    uint32_t jobs;              /* workers */
    uint64_t deadline_ms;       /* wall-clock deadline (0: none) */
    uint64_t mem_bytes;         /* memory limit per worker (0: none) */
    struct ckh_fuzz_config cfg; /* what every seed may choose */
    const char *out_dir;        /* where shrunk failures go */
    uint64_t shrink_max;        /* failures shrunk at most */
    bool shrink;                /* shrink failures */
    bool cov_all;               /* every row of the coverage table */
    bool have_print;            /* --print-seed given */
    uint64_t print_seed;        /* its seed */
};

/* What the campaign found. */
struct fuzz_total {
    uint64_t done;                        /* seeds finished */
    uint64_t failed;                      /* failures */
    uint64_t errors;                      /* errors */
    uint64_t determinism;                 /* seeds run with the determinism check */
    struct ckh_fuzz_coverage cov;         /* fired faults */
    struct ckh_fuzz_seed_result *fails;   /* every failure (malloc'd) */
    size_t nfails;                        /* their count */
    size_t cap;                           /* allocated */
    int rc;                               /* first failure of the parent */
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* only --time and the summary, never a result */
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ckh fuzz [--seeds N | --time DURATION] [--start S] [--jobs N] [--shard I/N]\n"
            "                [--workload NAME] [--defect NAME[,NAME]] [--backend NAME]\n"
            "                [--determinism-every K] [--out DIR] [--shrink-max N] [--no-shrink]\n"
            "                [--cache DIR] [--print-seed S] [--coverage-all] [--mem-limit SIZE]\n"
            "Runs random fault schedules (one scenario per seed), shrinks every failure\n"
            "into a small scenario file under DIR (default ckh-fuzz-failures) and prints\n"
            "the seeds run, the failures and the fault coverage. See docs/FUZZING.md.\n"
            "exit status: 0 no failure, 1 failures, 2 bad usage, 3 errors, 128+N interrupted\n"
            "  by signal N\n");
}

enum { O_SEEDS = 256, O_TIME, O_START, O_JOBS, O_SHARD, O_WL, O_DEFECT, O_BACKEND, O_DET,
       O_OUT, O_SHRINK_MAX, O_NO_SHRINK, O_CACHE, O_PRINT, O_COV_ALL, O_MEM, O_HELP };

static const struct option longopts[] = {
    {"seeds", required_argument, NULL, O_SEEDS},
    {"time", required_argument, NULL, O_TIME},
    {"start", required_argument, NULL, O_START},
    {"jobs", required_argument, NULL, O_JOBS},
    {"shard", required_argument, NULL, O_SHARD},
    {"workload", required_argument, NULL, O_WL},
    {"defect", required_argument, NULL, O_DEFECT},
    {"backend", required_argument, NULL, O_BACKEND},
    {"determinism-every", required_argument, NULL, O_DET},
    {"out", required_argument, NULL, O_OUT},
    {"shrink-max", required_argument, NULL, O_SHRINK_MAX},
    {"no-shrink", no_argument, NULL, O_NO_SHRINK},
    {"cache", required_argument, NULL, O_CACHE},
    {"print-seed", required_argument, NULL, O_PRINT},
    {"coverage-all", no_argument, NULL, O_COV_ALL},
    {"mem-limit", required_argument, NULL, O_MEM},
    {"help", no_argument, NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static const char *opt_name(int ch)
{
    for (size_t i = 0; longopts[i].name; i++)
        if (longopts[i].val == ch)
            return longopts[i].name;
    return ch == 'j' ? "jobs" : "?";
}

/* Checks a name option against its registry; 0 or CKH_EINVAL with msg. */
static int check_name(int ch, const char *v, char *msg, size_t n)
{
    if (ch == O_WL) {
        const struct ckh_workload_ops *wl;
        char why[512] = "";
        if (ckh_workloads_lookup(v, NULL, &wl, why, sizeof why) != 0)
            return ckh_errf(msg, n, CKH_EINVAL, "%s", why);
    }
    if (ch == O_DEFECT) {
        struct ckh_defect_set ds = {0};
        return ckh_defect_parse(&ds, v, msg, n) ? CKH_EINVAL : 0;
    }
    if (ch == O_BACKEND) {
        const struct ckh_backend_ops *bo;
        return ckh_backend_find(v, &bo, msg, n) ? CKH_EINVAL : 0;
    }
    return 0;
}

/* One option with its value; 0 or CKH_EINVAL with msg. */
static int set_option(struct fuzz_plan *p, int ch, const char *v, char *msg, size_t n)
{
    uint64_t x = 0, ns = 0;
    int rc = check_name(ch, v, msg, n);
    switch (rc ? 0 : ch) {
    case 0: break;
    case O_SEEDS: rc = ckh_opt_u64("seeds", v, 1, UINT64_MAX, &p->count, msg, n); break;
    case O_TIME:
        if (ckh_scn_parse_duration(v, &ns) != 0 || ns == 0)
            rc = ckh_errf(msg, n, CKH_EINVAL, "--time expects a duration such as 30s or 10m, "
                          "got '%s'", v);
        p->deadline_ms = ns / 1000000u + 1;
        break;
    case O_START: rc = ckh_opt_u64("start", v, 0, UINT64_MAX, &p->start, msg, n); break;
    case 'j':
    case O_JOBS:
        rc = ckh_opt_u64("jobs", v, 1, 256, &x, msg, n);
        p->jobs = (uint32_t)x;
        break;
    case O_SHARD: rc = ckh_opt_shard("shard", v, &p->shard, &p->shards, msg, n); break;
    case O_WL: p->cfg.workload = v; break;
    case O_DEFECT: p->cfg.defect = v; break;
    case O_BACKEND: p->cfg.backend = v; break;
    case O_DET:
        rc = ckh_opt_u64("determinism-every", v, 0, UINT32_MAX, &x, msg, n);
        p->cfg.determinism_every = (uint32_t)x;
        break;
    case O_OUT: p->out_dir = v; break;
    case O_SHRINK_MAX: rc = ckh_opt_u64("shrink-max", v, 0, UINT64_MAX, &p->shrink_max, msg, n); break;
    case O_CACHE: p->cfg.cache_dir = v; break;
    case O_PRINT:
        rc = ckh_opt_u64("print-seed", v, 0, UINT64_MAX, &p->print_seed, msg, n);
        p->have_print = true;
        break;
    case O_MEM: rc = ckh_opt_size("mem-limit", v, 0, UINT64_MAX, &p->mem_bytes, msg, n); break;
    default: rc = ckh_errf(msg, n, CKH_EINVAL, "unknown option");
    }
    return rc;
}

/* Checks what only the whole command line tells. */
static int check_plan(struct fuzz_plan *p, bool have_seeds, char *msg, size_t n)
{
    if (have_seeds && p->deadline_ms)
        return ckh_errf(msg, n, CKH_EINVAL, "give --seeds or --time, not both");
    if (!p->deadline_ms && p->count - 1 > UINT64_MAX - p->start)
        return ckh_errf(msg, n, CKH_EINVAL, "--start %" PRIu64 " --seeds %" PRIu64 ": the last "
                        "seed would pass %" PRIu64, p->start, p->count, UINT64_MAX);
    if (p->shrink && !p->have_print)
        return ckh_opt_check_output("failure folder (--out)", p->out_dir, true, msg, n);
    return 0;
}

/* Parses argv into *p; returns -1 to go on, else the exit status. */
static int fuzz_options(int argc, char **argv, struct fuzz_plan *p)
{
    optind = 0; /* 0: GNU getopt re-initializes (the CLI may run more than once) */
    opterr = 0;
    bool have_seeds = false;
    char msg[512];
    int ch;
    while ((ch = getopt_long(argc, argv, "+:j:", longopts, NULL)) != -1) {
        if (ch == O_HELP) {
            usage(stdout);
            return 0;
        }
        if (ch == ':' || ch == '?') {
            if (ch == ':')
                fprintf(stderr, "ckh fuzz: --%s needs a value\n", opt_name(optopt));
            else
                fprintf(stderr, "ckh fuzz: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
        have_seeds |= ch == O_SEEDS;
        if (ch == O_NO_SHRINK)
            p->shrink = false;
        else if (ch == O_COV_ALL)
            p->cov_all = true;
        else if (set_option(p, ch, optarg, msg, sizeof msg) != 0)
            goto bad;
    }
    if (optind < argc) {
        fprintf(stderr, "ckh fuzz: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (check_plan(p, have_seeds, msg, sizeof msg) != 0)
        goto bad;
    return -1;
bad:
    fprintf(stderr, "ckh fuzz: %s (ckh fuzz --help)\n", msg);
    return 2;
}

/* ---- the seed jobs ---- */

struct seeds {
    const struct fuzz_plan *p;      /* the plan */
    uint64_t first;                 /* the shard's first seed of the range */
    struct ckh_pool_limits limits;  /* per seed */
    struct fuzz_total *t;           /* results */
};

static uint64_t seed_of(const struct seeds *s, uint64_t j)
{
    return s->first + j * s->p->shards;
}

/* The shard's seeds in the range: sets s->first, returns their count. */
static uint64_t count_seeds(struct seeds *s)
{
    const struct fuzz_plan *p = s->p;
    uint64_t last = p->deadline_ms ? UINT64_MAX : p->start + (p->count - 1);
    uint64_t first = p->start;
    while (!ckh_fuzz_in_shard(first, p->shard, p->shards)) {
        if (first == last)
            return 0;
        first++;
    }
    s->first = first;
    uint64_t n = (last - first) / p->shards + 1;
    return n == 0 ? UINT64_MAX : n; /* 0: all 2^64 seeds of a one-shard range */
}

static int seed_job(void *ctx, uint64_t j, int fd)
{
    struct seeds *s = ctx;
    struct ckh_fuzz_seed_result r;
    ckh_fuzz_run_seed(seed_of(s, j), &s->p->cfg, &r, NULL);
    if (r.verdict == CKH_VERDICT_ERROR && ckh_pool_child_out_of_memory(r.message))
        return CKH_POOL_EXIT_MEM;
    return ckh_pool_reply(fd, &r, sizeof r) == 0 ? 0 : 3;
}

static int push_fail(struct fuzz_total *t, const struct ckh_fuzz_seed_result *r)
{
    if (t->nfails == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        struct ckh_fuzz_seed_result *nv = realloc(t->fails, nc * sizeof *nv);
        if (!nv)
            return CKH_ENOMEM;
        t->fails = nv;
        t->cap = nc;
    }
    t->fails[t->nfails++] = *r;
    return 0;
}

static void seed_done(void *ctx, uint64_t j, const struct ckh_pool_result *pr)
{
    struct seeds *s = ctx;
    struct fuzz_total *t = s->t;
    struct ckh_fuzz_seed_result r;
    if (pr->status == CKH_POOL_OK && pr->len == sizeof r) {
        memcpy(&r, pr->data, sizeof r);
    } else { /* the worker died inside the seed: an error of that seed */
        char why[160];
        memset(&r, 0, sizeof r);
        r.seed = seed_of(s, j);
        r.verdict = CKH_VERDICT_ERROR;
        ckh_pool_describe(pr, &s->limits, why, sizeof why);
        snprintf(r.message, sizeof r.message, "the worker died running the seed (%s)", why);
    }
    t->done++;
    if (r.determinism)
        t->determinism++;
    ckh_fuzz_coverage_add(&t->cov, &r.cov);
    if (r.verdict == CKH_VERDICT_PASS)
        return;
    if (r.verdict == CKH_VERDICT_FAIL)
        t->failed++;
    else
        t->errors++;
    if (push_fail(t, &r) != 0)
        t->rc = CKH_ENOMEM;
}

static bool seed_more(void *ctx, uint64_t j)
{
    const struct seeds *s = ctx;
    (void)j;
    return !s->p->deadline_ms || mono_ms() < s->p->deadline_ms;
}

static int cmp_seed(const void *a, const void *b)
{
    const struct ckh_fuzz_seed_result *x = a, *y = b;
    return x->seed < y->seed ? -1 : x->seed > y->seed;
}

/* Runs the campaign; fills *t. Returns 0, -EINTR or a negative code. */
static int run_seeds(const struct fuzz_plan *p, struct fuzz_total *t)
{
    struct seeds s = {.p = p, .limits = {FUZZ_SEED_LIMIT_S, p->mem_bytes}, .t = t};
    static const struct ckh_pool_ops ops = {.run = seed_job, .done = seed_done,
                                            .more = seed_more};
    struct ckh_pool_config cfg = {.workers = p->jobs, .njobs = count_seeds(&s),
                                  .limits = s.limits, .ops = &ops, .ctx = &s};
    int rc = ckh_pool_run(&cfg);
    if (t->nfails)
        qsort(t->fails, t->nfails, sizeof *t->fails, cmp_seed);
    return rc ? rc : t->rc;
}

/* ---- the listing and shrinking ---- */

static void list_failures(const struct fuzz_total *t)
{
    size_t shown = t->nfails < FUZZ_LIST_MAX ? t->nfails : FUZZ_LIST_MAX;
    for (size_t i = 0; i < shown; i++) {
        const struct ckh_fuzz_seed_result *r = &t->fails[i];
        printf("%s seed %" PRIu64 ": %s%s%s\n", r->verdict == CKH_VERDICT_FAIL ? "FAIL" : "ERROR",
               r->seed, r->oracle, r->oracle[0] ? ": " : "", r->message);
    }
    if (t->nfails > shown)
        printf("(%zu more failures, seeds above %" PRIu64 ", not listed; ckh fuzz --print-seed S "
               "shows one)\n", t->nfails - shown, t->fails[shown - 1].seed);
}

static void shrink_failures(const struct fuzz_plan *p, const struct fuzz_total *t)
{
    size_t shown = t->nfails < FUZZ_LIST_MAX ? t->nfails : FUZZ_LIST_MAX;
    uint64_t shrunk = 0;
    if (!p->shrink || shown == 0)
        return;
    mkdir(p->out_dir, 0777);
    for (size_t i = 0; i < shown && shrunk < p->shrink_max && !ckh_pool_interrupted(); i++) {
        const struct ckh_fuzz_seed_result *r = &t->fails[i];
        if (r->verdict != CKH_VERDICT_FAIL)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/fuzz-%" PRIu64 "-%s.yaml", p->out_dir, r->seed, r->oracle);
        struct ckh_shrink_stats st;
        char msg[512];
        struct ckh_shrink_config sc = {.source_dir = p->cfg.source_dir, .argv0 = p->cfg.argv0};
        if (ckh_shrink_seed(r->seed, &p->cfg, &sc, path, &st, msg, sizeof msg) != 0) {
            printf("  shrinking seed %" PRIu64 ": %s\n", r->seed, msg);
            continue;
        }
        shrunk++;
        printf("  shrunk seed %" PRIu64 " in %zu runs: %zu -> %zu faults, %u -> %u nodes; "
               "fails %s\n  replay: %s run %s\n",
               r->seed, st.runs, st.faults_before, st.faults_after, st.nodes_before,
               st.nodes_after, st.oracle, p->cfg.argv0 ? p->cfg.argv0 : "ckh", path);
    }
}

/* ---- the command ---- */

static int print_seed(const struct fuzz_plan *p)
{
    char *text = NULL;
    if (ckh_fuzz_generate(p->print_seed, &p->cfg, &text) != 0)
        return 3;
    fputs(text, stdout);
    free(text);
    return 0;
}

static void summary(const struct fuzz_plan *p, const struct fuzz_total *t, uint64_t wall_ms)
{
    printf("\nfault coverage (faults that fired, by the phase of the node):\n");
    ckh_fuzz_coverage_print(stdout, &t->cov, p->cov_all);
    printf("\n%" PRIu64 " seeds run (shard %u/%u, %u job%s, %" PRIu64 " with the determinism check)"
           " in %.1fs: %" PRIu64 " failed, %" PRIu64 " errors\n",
           t->done, p->shard, p->shards, p->jobs, p->jobs == 1 ? "" : "s", t->determinism,
           (double)wall_ms / 1000.0, t->failed, t->errors);
    int sig = ckh_pool_interrupted();
    if (sig)
        printf("interrupted by signal %d (%s): the campaign stopped early%s\n", sig, strsignal(sig),
               t->nfails ? "; failures found later were not shrunk" : "");
}

int ckh_fuzz_main(int argc, char **argv)
{
    struct fuzz_plan p = {.start = 1, .count = 1000, .shard = 1, .shards = 1, .jobs = 1,
                          .mem_bytes = CKH_POOL_MEM_DEFAULT, .out_dir = "ckh-fuzz-failures",
                          .shrink_max = 5, .shrink = true};
    p.cfg.determinism_every = 16;
    int st = fuzz_options(argc, argv, &p);
    if (st >= 0)
        return st;
    if (p.have_print)
        return print_seed(&p);
    if (p.deadline_ms) {
        p.count = UINT64_MAX;
        p.deadline_ms += mono_ms();
    }
    if (ckh_pool_signals_install() != 0) {
        fprintf(stderr, "ckh fuzz: cannot catch signals: %s\n", strerror(errno));
        return 3;
    }
    uint64_t t0 = mono_ms();
    struct fuzz_total t;
    memset(&t, 0, sizeof t);
    int rc = run_seeds(&p, &t);
    uint64_t wall = mono_ms() - t0;
    if (rc != 0 && rc != -EINTR) {
        fprintf(stderr, "ckh fuzz: cannot run the seeds: %s\n", ckh_strerror(rc));
        st = 3;
    } else {
        list_failures(&t);
        shrink_failures(&p, &t);
        summary(&p, &t, wall);
        st = t.errors ? 3 : t.failed ? 1 : 0;
        if (ckh_pool_interrupted())
            st = FUZZ_EXIT_SIGNAL + ckh_pool_interrupted();
    }
    free(t.fails);
    ckh_pool_signals_reset();
    return st;
}
