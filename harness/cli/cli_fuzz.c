/* `ckh fuzz`: the seeds of a campaign in workers of the pool
 * (harness/exec/pool.h), then the failures listed and shrunk.
 *
 * Specification of a campaign:
 *   - The seeds are those of the shard (ckh_fuzz_in_shard) in
 *     [--start, --start + --seeds - 1] (the range may not pass 2^64 - 1),
 *     or, with --time, from --start until the deadline.
 *   - Each seed is one job: a worker generates, runs and judges it
 *     (ckh_fuzz_run_seed) under the per-seed wall-time limit and the
 *     memory limit, and sends its struct ckh_fuzz_seed_result back. The
 *     workers are resident (harness/exec/pool.h): each runs up to
 *     FUZZ_SEEDS_PER_WORKER seeds, so a seed costs no fork. A worker that
 *     dies is an error of its seed (once the seed has died in a fresh
 *     worker too, if it was not its worker's first); a new worker takes
 *     the next seeds and the campaign goes on. A seed's outcome does not
 *     depend on the seeds run before it in its worker.
 *   - Failures are listed in seed order, whatever --jobs, at most
 *     FUZZ_LIST_MAX of them (the count of the others is said); the first
 *     --shrink-max failures of that list are shrunk into files under --out.
 *   - SIGINT, SIGTERM or SIGHUP stops the campaign: the workers are killed,
 *     the failures found so far are listed (and no more are shrunk; those
 *     written stay), the summary says it was interrupted, and the exit
 *     status is 128 + the signal (docs/CLI.md).
 *
 *   - On many machines (rank R of a world of W > 1, harness/cli/cli_dist.h,
 *     docs/MULTIHOST.md) a rank runs the seeds of the composite shard
 *     (R*N + I)/(N*W) of shard I/N, shrinks its own first --shrink-max
 *     failures into memory (those the whole campaign shrinks are among
 *     them: a failure shrunk by one machine is among the first --shrink-max
 *     of its rank) and delivers totals, failures and shrunk scenarios (the
 *     payload below) to the merge folder. Rank 0 adds them up, lists the
 *     failures in seed order, writes the shrunk files the one-machine
 *     campaign would write (the first --shrink-max of the list, the same
 *     bytes), prints the coverage table and the summary. The listing, the
 *     files and the counts equal `ckh fuzz --jobs 1` over the same seeds.
 *   - Payload of a rank: u64 done, failed, errors, determinism; u64 rows,
 *     columns and the coverage table; u64 count and per failure u64 seed,
 *     verdict, determinism and the strings oracle, message; u64 count and
 *     per shrink u64 seed, result, runs, faults and nodes before and after,
 *     concrete, and the strings oracle, cause, scenario, message
 *     (cli/wire.h).
 *
 * Map: options · the seed jobs · the listing and shrinking · the command
 * (with many machines before its entry point).
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
#include "ckh/posix.h"
#include "cli/cli_dist.h"
#include "cli/opt.h"
#include "cli/wire.h"
#include "exec/workloads.h"
#include "exec/pool.h"
#include "search/fuzz.h"
#include "search/shrink.h"
#include "cli/cli.h"

#define FUZZ_LIST_MAX 64       /* failures listed */
#define FUZZ_SEED_LIMIT_S 600  /* wall time of one seed */
#define FUZZ_SEEDS_PER_WORKER 1000 /* seeds a worker runs before a fresh one takes over */
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
    uint32_t part, parts;       /* the seeds this process runs: the shard, or the
                                   composite shard of its rank (1-based part) */
    struct ckh_dist_opts dist;  /* --distributed, --rank, --merge-dir, ... */
    struct ckh_dist d;          /* this process's rank (world 1: one machine) */
    struct ckh_dist_merge m;    /* the merge folder (world > 1) */
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

/* ---- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ckh fuzz [--seeds N | --time DURATION] [--start S] [--jobs N] [--shard I/N]\n"
            "                [--workload NAME] [--defect NAME[,NAME]] [--backend NAME]\n"
            "                [--determinism-every K] [--out DIR] [--shrink-max N] [--no-shrink]\n"
            "                [--cache DIR] [--print-seed S] [--coverage-all] [--mem-limit SIZE]\n"
            "                [--distributed MODE] [--rank I --world N] [--merge-dir DIR]\n"
            "                [--merge-timeout DURATION] [--run-id TEXT]\n"
            "Runs random fault schedules (one scenario per seed), shrinks every failure\n"
            "into a small scenario file under DIR (default ckh-fuzz-failures) and prints\n"
            "the seeds run, the failures and the fault coverage. See docs/FUZZING.md.\n"
            "Under mpirun or srun, the ranks split the seeds and rank 0 merges the campaign\n"
            "(docs/MULTIHOST.md):\n"
            CKH_DIST_USAGE
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
    CKH_DIST_LONGOPTS,
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
    if (ckh_dist_is_option(ch))
        return ckh_dist_option(&p->dist, ch, v, msg, n);
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
    return s->first + j * s->p->parts;
}

/* The shard's seeds in the range: sets s->first, returns their count. */
static uint64_t count_seeds(struct seeds *s)
{
    const struct fuzz_plan *p = s->p;
    uint64_t last = p->deadline_ms ? UINT64_MAX : p->start + (p->count - 1);
    uint64_t first = p->start;
    while (!ckh_fuzz_in_shard(first, p->part, p->parts)) {
        if (first == last)
            return 0;
        first++;
    }
    s->first = first;
    uint64_t n = (last - first) / p->parts + 1;
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
    return !s->p->deadline_ms || ckh_posix_now_ms() < s->p->deadline_ms;
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
                                  .limits = s.limits, .ops = &ops, .ctx = &s,
                                  .jobs_per_worker = FUZZ_SEEDS_PER_WORKER};
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

/* The two lines of one shrunk failure: what shrinking did, the oracle and
 * the cause it keeps failing for, and the command that replays it (the
 * same on one machine and merged from many). */
static void print_shrunk(const struct fuzz_plan *p, uint64_t seed, const struct ckh_shrink_stats *st,
                         const char *path)
{
    printf("  shrunk seed %" PRIu64 " in %zu runs: %zu -> %zu faults, %u -> %u nodes; "
           "fails %s%s%s\n  replay: %s run %s\n",
           seed, st->runs, st->faults_before, st->faults_after, st->nodes_before, st->nodes_after,
           st->oracle, st->cause[0] ? ": " : "", st->cause, p->cfg.argv0 ? p->cfg.argv0 : "ckh", path);
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
        print_shrunk(p, r->seed, &st, path);
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
    char ranks[48] = "";
    if (p->d.world > 1)
        snprintf(ranks, sizeof ranks, "%u ranks of ", p->d.world);
    printf("\n%" PRIu64 " seeds run (shard %u/%u, %s%u job%s%s, %" PRIu64 " with the determinism "
           "check) in %.1fs: %" PRIu64 " failed, %" PRIu64 " errors\n",
           t->done, p->shard, p->shards, ranks, p->jobs, p->jobs == 1 ? "" : "s",
           p->d.world > 1 ? " each" : "", t->determinism, (double)wall_ms / 1000.0, t->failed,
           t->errors);
    int sig = ckh_pool_interrupted();
    if (sig)
        printf("interrupted by signal %d (%s): the campaign stopped early%s\n", sig, strsignal(sig),
               t->nfails ? "; failures found later were not shrunk" : "");
}

/* ---- the command on many machines ---- */

/* One failure a rank shrank (or tried to), kept in memory until rank 0
 * writes the files of the whole campaign. */
struct shrunk {
    uint64_t seed;              /* the failing seed */
    int rc;                     /* 0: shrunk */
    struct ckh_shrink_stats st; /* what shrinking did (rc 0) */
    char *text;                 /* the shrunk scenario (malloc'd; rc 0) */
    char *msg;                  /* why not (malloc'd; rc != 0) */
};

struct shrunk_set {
    struct shrunk *v; /* in seed order */
    size_t n, cap;    /* used, allocated */
};

static void shrunk_set_free(struct shrunk_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].text);
        free(s->v[i].msg);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

static struct shrunk *shrunk_push(struct shrunk_set *s)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        struct shrunk *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        s->v = nv;
        s->cap = nc;
    }
    memset(&s->v[s->n], 0, sizeof s->v[s->n]);
    return &s->v[s->n++];
}

/* Shrinks seed into memory, as ckh_shrink_seed does into a file. */
static int shrink_one(const struct fuzz_plan *p, uint64_t seed, struct shrunk *out)
{
    char *text = NULL, msg[512] = "", name[64];
    struct ckh_shrink_config sc = {.source_dir = p->cfg.source_dir, .argv0 = p->cfg.argv0};
    out->seed = seed;
    out->rc = ckh_fuzz_generate(seed, &p->cfg, &text);
    snprintf(name, sizeof name, "fuzz seed %" PRIu64, seed);
    if (out->rc == 0)
        out->rc = ckh_shrink_text(text, strlen(text), name, &sc, &out->text, &out->st, msg,
                                  sizeof msg);
    else
        snprintf(msg, sizeof msg, "%s", ckh_strerror(out->rc));
    free(text);
    if (out->rc && !(out->msg = strdup(msg)))
        return CKH_ENOMEM;
    return 0;
}

/* A rank's own first --shrink-max failures (of its first FUZZ_LIST_MAX),
 * shrunk the way shrink_failures goes through the list. */
static int shrink_own(const struct fuzz_plan *p, const struct fuzz_total *t, struct shrunk_set *s)
{
    size_t shown = t->nfails < FUZZ_LIST_MAX ? t->nfails : FUZZ_LIST_MAX;
    uint64_t shrunk = 0;
    for (size_t i = 0; p->shrink && i < shown && shrunk < p->shrink_max; i++) {
        if (ckh_pool_interrupted())
            return -EINTR;
        if (t->fails[i].verdict != CKH_VERDICT_FAIL)
            continue;
        struct shrunk *sh = shrunk_push(s);
        if (!sh || shrink_one(p, t->fails[i].seed, sh) != 0)
            return CKH_ENOMEM;
        shrunk += sh->rc == 0;
    }
    return 0;
}

static void put_i(FILE *f, int64_t v)
{
    ckh_wire_put_u64(f, (uint64_t)v);
}

/* The payload of the header comment. */
static int payload_write(FILE *f, const struct fuzz_total *t, const struct shrunk_set *s)
{
    put_i(f, (int64_t)t->done);
    put_i(f, (int64_t)t->failed);
    put_i(f, (int64_t)t->errors);
    put_i(f, (int64_t)t->determinism);
    put_i(f, CKH_SCN_ACT__COUNT);
    put_i(f, CKH_FUZZ_PH__COUNT);
    fwrite(t->cov.hits, sizeof t->cov.hits, 1, f);
    put_i(f, (int64_t)t->nfails);
    for (size_t i = 0; i < t->nfails; i++) {
        const struct ckh_fuzz_seed_result *r = &t->fails[i];
        put_i(f, (int64_t)r->seed);
        put_i(f, r->verdict);
        put_i(f, r->determinism);
        ckh_wire_put_str(f, r->oracle);
        ckh_wire_put_str(f, r->message);
    }
    put_i(f, (int64_t)s->n);
    for (size_t i = 0; i < s->n; i++) {
        const struct shrunk *h = &s->v[i];
        int64_t nums[8] = {(int64_t)h->seed, h->rc, (int64_t)h->st.runs,
                           (int64_t)h->st.faults_before, (int64_t)h->st.faults_after,
                           h->st.nodes_before, h->st.nodes_after, h->st.concrete};
        for (int k = 0; k < 8; k++)
            put_i(f, nums[k]);
        ckh_wire_put_str(f, h->st.oracle);
        ckh_wire_put_str(f, h->st.cause);
        ckh_wire_put_str(f, h->text);
        ckh_wire_put_str(f, h->msg);
    }
    return ferror(f) ? CKH_ENOMEM : 0;
}

static int get_n(FILE *f, uint64_t *v)
{
    return ckh_wire_get_u64(f, v);
}

/* Reads one string into a fixed field. */
static int get_field(FILE *f, char *field, size_t size)
{
    char *s = NULL;
    int rc = ckh_wire_get_str(f, &s);
    if (rc == 0)
        snprintf(field, size, "%s", s ? s : "");
    free(s);
    return rc;
}

static int read_fails(FILE *f, struct fuzz_total *t)
{
    uint64_t n = 0;
    int rc = get_n(f, &n);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        struct ckh_fuzz_seed_result r;
        uint64_t v[3] = {0, 0, 0};
        memset(&r, 0, sizeof r);
        for (int k = 0; rc == 0 && k < 3; k++)
            rc = get_n(f, &v[k]);
        rc = rc ? rc : get_field(f, r.oracle, sizeof r.oracle);
        rc = rc ? rc : get_field(f, r.message, sizeof r.message);
        if (rc == 0 && v[1] > CKH_VERDICT_ERROR)
            rc = CKH_ECORRUPT;
        r.seed = v[0];
        r.verdict = (enum ckh_verdict)v[1];
        r.determinism = v[2] != 0;
        rc = rc ? rc : push_fail(t, &r);
    }
    return rc;
}

static int read_shrunk(FILE *f, struct shrunk_set *s)
{
    uint64_t n = 0;
    int rc = get_n(f, &n);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t v[8];
        struct shrunk *h = shrunk_push(s);
        if (!h)
            return CKH_ENOMEM;
        for (int k = 0; rc == 0 && k < 8; k++)
            rc = get_n(f, &v[k]);
        h->seed = v[0];
        h->rc = (int)(int64_t)v[1];
        h->st = (struct ckh_shrink_stats){(size_t)v[2], (size_t)v[3], (size_t)v[4],
                                          (uint32_t)v[5], (uint32_t)v[6], v[7] != 0, ""};
        rc = rc ? rc : get_field(f, h->st.oracle, sizeof h->st.oracle);
        rc = rc ? rc : get_field(f, h->st.cause, sizeof h->st.cause);
        rc = rc ? rc : ckh_wire_get_str(f, &h->text);
        rc = rc ? rc : ckh_wire_get_str(f, &h->msg);
        if (rc == 0 && (h->rc == 0) != (h->text != NULL))
            rc = CKH_ECORRUPT;
    }
    return rc;
}

/* Adds one rank's payload to the campaign. */
static int payload_add(const struct ckh_dist_part *part, struct fuzz_total *t,
                       struct shrunk_set *s)
{
    FILE *f = ckh_wire_reader(part->payload, part->len);
    uint64_t v[6] = {0};
    int rc = f ? 0 : CKH_ETRUNCATED;
    for (int k = 0; rc == 0 && k < 6; k++)
        rc = get_n(f, &v[k]);
    if (rc == 0 && (v[4] != CKH_SCN_ACT__COUNT || v[5] != CKH_FUZZ_PH__COUNT))
        rc = CKH_EVERSION;
    struct ckh_fuzz_coverage cov;
    if (rc == 0 && fread(cov.hits, sizeof cov.hits, 1, f) != 1)
        rc = CKH_ETRUNCATED;
    if (rc == 0) {
        t->done += v[0];
        t->failed += v[1];
        t->errors += v[2];
        t->determinism += v[3];
        ckh_fuzz_coverage_add(&t->cov, &cov);
    }
    rc = rc ? rc : read_fails(f, t);
    rc = rc ? rc : read_shrunk(f, s);
    if (f)
        fclose(f);
    return rc;
}

static int cmp_shrunk(const void *a, const void *b)
{
    const struct shrunk *x = a, *y = b;
    return x->seed < y->seed ? -1 : x->seed > y->seed;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -EIO;
}

/* Rank 0: the files and lines shrink_failures gives on one machine, from
 * the ranks' shrunk failures. */
static void shrink_apply(const struct fuzz_plan *p, const struct fuzz_total *t,
                         const struct shrunk_set *s)
{
    size_t shown = t->nfails < FUZZ_LIST_MAX ? t->nfails : FUZZ_LIST_MAX;
    uint64_t shrunk = 0;
    if (!p->shrink || shown == 0)
        return;
    mkdir(p->out_dir, 0777);
    for (size_t i = 0; i < shown && shrunk < p->shrink_max; i++) {
        const struct ckh_fuzz_seed_result *r = &t->fails[i];
        if (r->verdict != CKH_VERDICT_FAIL)
            continue;
        struct shrunk key = {.seed = r->seed};
        const struct shrunk *h = s->n ? bsearch(&key, s->v, s->n, sizeof *s->v, cmp_shrunk) : NULL;
        char path[1024];
        snprintf(path, sizeof path, "%s/fuzz-%" PRIu64 "-%s.yaml", p->out_dir, r->seed, r->oracle);
        int rc = h ? h->rc : CKH_ENOTFOUND;
        if (rc == 0 && (rc = write_text(path, h->text)) != 0) {
            printf("  shrinking seed %" PRIu64 ": cannot write %s: %s\n", r->seed, path,
                   ckh_strerror(rc));
            continue;
        }
        if (rc) {
            printf("  shrinking seed %" PRIu64 ": %s\n", r->seed,
                   h ? h->msg : "not shrunk by its rank (it stopped at --shrink-max)");
            continue;
        }
        shrunk++;
        print_shrunk(p, r->seed, &h->st, path);
    }
}

/* Rank > 0: shrinks its own failures, delivers everything and prints one
 * line. rc is run_seeds'. Returns the rank's exit status. */
static int fuzz_deliver(const struct fuzz_plan *p, const struct fuzz_total *t, int rc)
{
    struct shrunk_set s = {0};
    char *buf = NULL, why[300] = "", msg[1400];
    size_t len = 0;
    int st = t->errors ? 3 : t->failed ? 1 : 0, sig = 0;
    rc = rc ? rc : shrink_own(p, t, &s);
    if (rc == -EINTR && (sig = ckh_pool_interrupted()) != 0) {
        st = FUZZ_EXIT_SIGNAL + sig;
        snprintf(why, sizeof why, "interrupted by signal %d (%s)", sig, strsignal(sig));
    } else if (rc) {
        st = 3;
        snprintf(why, sizeof why, "cannot run the seeds: %s", ckh_strerror(rc));
    } else {
        FILE *f = open_memstream(&buf, &len);
        rc = f ? payload_write(f, t, &s) : CKH_ENOMEM;
        if (f && fclose(f) != 0)
            rc = CKH_ENOMEM;
        if (rc) {
            st = 3;
            snprintf(why, sizeof why, "out of memory encoding its results");
        }
    }
    shrunk_set_free(&s);
    rc = ckh_dist_deliver(&p->m, st, why[0] ? why : NULL, why[0] ? NULL : buf, why[0] ? 0 : len,
                          msg, sizeof msg);
    free(buf);
    if (rc) {
        fprintf(stderr, "ckh fuzz: rank %u of %u: %s\n", p->d.rank, p->d.world, msg);
        return st > ckh_dist_exit_status(rc) ? st : ckh_dist_exit_status(rc);
    }
    if (why[0])
        fprintf(stderr, "ckh fuzz: rank %u of %u (%s): %s; told rank 0 through %s\n", p->d.rank,
                p->d.world, p->d.source, why, p->m.dir);
    else
        fprintf(stderr, "ckh fuzz: rank %u of %u (%s): %" PRIu64 " seeds run: %" PRIu64
                " failed, %" PRIu64 " errors; results delivered to %s\n", p->d.rank, p->d.world,
                p->d.source, t->done, t->failed, t->errors, p->m.dir);
    return ckh_dist_rank_exit(&p->m, &p->d, p->dist.merge_timeout_ms, "fuzz", st);
}

/* Rank 0: the other ranks' totals, failures and shrunk failures added to
 * its own. Returns 0 or the exit status (said on stderr); *read says
 * whether every partial was read (the merge folder may go). */
static int fuzz_collect(const struct fuzz_plan *p, struct fuzz_total *t, struct shrunk_set *s,
                        bool *read)
{
    struct ckh_dist_part *parts = NULL;
    char msg[4096];
    int rc = ckh_dist_collect(&p->m, p->dist.merge_timeout_ms, &parts, msg, sizeof msg);
    if (rc == -EINTR)
        fprintf(stderr, "ckh fuzz: interrupted by signal %d (%s) waiting for the other ranks; "
                "their results stay in %s\n", ckh_pool_interrupted(),
                strsignal(ckh_pool_interrupted()), p->m.dir);
    else if (rc)
        fprintf(stderr, "ckh fuzz: %s\n", msg);
    if (rc)
        return ckh_dist_exit_status(rc);
    int st = 0;
    *read = true;
    for (uint32_t r = 1; r < p->d.world; r++) {
        if (!parts[r].error)
            continue;
        fprintf(stderr, "ckh fuzz: rank %u (host %s, pid %" PRIu64 ") has no results: %s\n", r,
                parts[r].host, parts[r].pid, parts[r].error);
        st = st > parts[r].status ? st : parts[r].status;
    }
    for (uint32_t r = 1; st == 0 && r < p->d.world; r++) {
        if ((rc = payload_add(&parts[r], t, s)) != 0) {
            fprintf(stderr, "ckh fuzz: rank %u's results (from host %s) cannot be read: %s; they "
                    "stay in %s\n", r, parts[r].host, ckh_strerror(rc), p->m.dir);
            st = 3;
            *read = false;
        }
    }
    ckh_dist_parts_free(parts, p->d.world);
    return st;
}

/* Rank 0: merges, lists, writes the shrunk files and the summary. rc is
 * run_seeds'. Returns the campaign's exit status. */
static int fuzz_merge(const struct fuzz_plan *p, struct fuzz_total *t, int rc, uint64_t t0)
{
    struct shrunk_set s = {0};
    int st = 0;
    rc = rc ? rc : shrink_own(p, t, &s);
    if (rc == -EINTR && ckh_pool_interrupted()) {
        fprintf(stderr, "ckh fuzz: interrupted by signal %d (%s); no merge\n",
                ckh_pool_interrupted(), strsignal(ckh_pool_interrupted()));
        st = FUZZ_EXIT_SIGNAL + ckh_pool_interrupted();
    } else if (rc) {
        fprintf(stderr, "ckh fuzz: cannot run the seeds: %s\n", ckh_strerror(rc));
        st = 3;
    }
    bool read = false;
    st = st ? st : fuzz_collect(p, t, &s, &read);
    if (st) {
        if (read)
            ckh_dist_cleanup(&p->m); /* what there was to say is said */
        else
            ckh_dist_give_up(&p->m, st);
        shrunk_set_free(&s);
        return st;
    }
    ckh_dist_cleanup(&p->m);
    if (t->nfails)
        qsort(t->fails, t->nfails, sizeof *t->fails, cmp_seed);
    if (s.n)
        qsort(s.v, s.n, sizeof *s.v, cmp_shrunk);
    list_failures(t);
    shrink_apply(p, t, &s);
    summary(p, t, ckh_posix_now_ms() - t0);
    shrunk_set_free(&s);
    return t->errors ? 3 : t->failed ? 1 : 0;
}

/* The options that decide the campaign: every rank must run with the same. */
static uint64_t fuzz_fingerprint(const struct fuzz_plan *p)
{
    uint64_t h = ckh_dist_fold_str(0, "fuzz");
    uint64_t nums[8] = {p->start, p->count, p->deadline_ms, ((uint64_t)p->shard << 32) | p->shards,
                        p->cfg.determinism_every, p->shrink, p->shrink_max, p->cov_all};
    for (int i = 0; i < 8; i++)
        h = ckh_dist_fold_u64(h, nums[i]);
    h = ckh_dist_fold_str(h, p->cfg.workload);
    h = ckh_dist_fold_str(h, p->cfg.defect);
    h = ckh_dist_fold_str(h, p->cfg.backend);
    h = ckh_dist_fold_str(h, p->out_dir);
    return ckh_dist_fold_str(h, p->cfg.argv0);
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* The rank, and with W > 1 its seeds and the merge folder joined.
 * Returns -1 to go on, else the exit status. */
static int fuzz_dist_setup(struct fuzz_plan *p)
{
    char msg[1400];
    p->part = p->shard;
    p->parts = p->shards;
    if (ckh_dist_detect(&p->dist, env_get, &p->d, msg, sizeof msg) != 0) {
        fprintf(stderr, "ckh fuzz: %s\n", msg);
        return 2;
    }
    if (p->d.world <= 1)
        return -1;
    if ((uint64_t)p->shards * p->d.world > UINT32_MAX) {
        fprintf(stderr, "ckh fuzz: --shard %u/%u on %u ranks: too many parts\n", p->shard,
                p->shards, p->d.world);
        return 2;
    }
    p->part = p->d.rank * p->shards + p->shard;
    p->parts = p->shards * p->d.world;
    const char *base = p->dist.merge_dir ? p->dist.merge_dir : p->out_dir;
    int rc = ckh_dist_join(&p->m, base, &p->dist, &p->d, "fuzz", fuzz_fingerprint(p), msg,
                           sizeof msg);
    if (rc) {
        fprintf(stderr, "ckh fuzz: rank %u of %u (%s): %s\n", p->d.rank, p->d.world, p->d.source,
                msg);
        return ckh_dist_exit_status(rc);
    }
    return -1;
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
    if ((st = fuzz_dist_setup(&p)) >= 0)
        return st;
    if (p.deadline_ms) {
        p.count = UINT64_MAX;
        p.deadline_ms += ckh_posix_now_ms();
    }
    if (ckh_pool_signals_install() != 0) {
        fprintf(stderr, "ckh fuzz: cannot catch signals: %s\n", strerror(errno));
        return 3;
    }
    uint64_t t0 = ckh_posix_now_ms();
    struct fuzz_total t;
    memset(&t, 0, sizeof t);
    int rc = run_seeds(&p, &t);
    uint64_t wall = ckh_posix_now_ms() - t0;
    if (p.d.world > 1) {
        st = p.d.rank ? fuzz_deliver(&p, &t, rc) : fuzz_merge(&p, &t, rc, t0);
    } else if (rc != 0 && rc != -EINTR) {
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
