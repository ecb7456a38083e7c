/* The `ckh` command: verbs run, list, replay, validate-backend, help.
 *
 * Exit status (docs/CLI.md): 0 every scenario passed; 1 some oracle failed
 * (the code under test misbehaved); 2 bad input (a malformed scenario, an
 * unknown option, a missing file); 3 an internal error (ckh itself failed
 * or a scenario crashed a worker).
 *
 * `ckh run` runs every scenario in a forked worker (at most --jobs at a
 * time), so a scenario that crashes or hangs is reported, never takes ckh
 * down; each worker writes its result into ckh's own temporary folder,
 * which also holds the reference-run cache and is removed at exit.
 */
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/adapter.h"
#include "faults/fault.h"
#include "search/fuzz.h"
#include "search/shrink.h"
#include "ckh/defects.h"
#include "ckh/err.h"
#include "run/worker.h"
#include "ckh/ref.h"
#include "oracles/oracle.h"
#include "report.h"
#include "run/runner.h"
#include "scenario/scenario.h"

#define SCENARIO_WALL_LIMIT_S 600 /* a worker is stopped after this long */

/* ---- name lists for scenario validation ---- */

struct names {
    const char *v[64]; /* names */
    size_t n;          /* count */
};

static void scn_options(struct ckh_scn_options *o, struct names *wl, struct names *be,
                        struct names *sv, struct names *df, struct names *orc)
{
    memset(o, 0, sizeof *o);
    wl->n = be->n = sv->n = df->n = orc->n = 0;
    for (size_t i = 0; ckh_adapter_at(i) && wl->n < 64; i++)
        wl->v[wl->n++] = ckh_adapter_at(i)->name;
    for (size_t i = 0; ckh_backend_at(i) && be->n < 64; i++)
        be->v[be->n++] = ckh_backend_at(i)->name;
    sv->v[sv->n++] = "atomic-dir";
    for (int i = 0; i < CKH_DEFECT__COUNT && df->n < 64; i++)
        df->v[df->n++] = ckh_defect_name((enum ckh_defect)i);
    for (size_t i = 0; ckh_oracle_at(i) && orc->n < 64; i++)
        orc->v[orc->n++] = ckh_oracle_at(i)->name;
    o->workloads = (struct ckh_scn_names){wl->v, wl->n};
    o->backends = (struct ckh_scn_names){be->v, be->n};
    o->savers = (struct ckh_scn_names){sv->v, sv->n};
    o->defects = (struct ckh_scn_names){df->v, df->n};
    o->oracles = (struct ckh_scn_names){orc->v, orc->n};
}

/* ---- result transport between a worker and ckh ---- */

static void put_str(FILE *f, const char *s)
{
    uint32_t len = s ? (uint32_t)strlen(s) : UINT32_MAX;
    fwrite(&len, sizeof len, 1, f);
    if (s)
        fwrite(s, 1, len, f);
}

static int get_str(FILE *f, char **out)
{
    uint32_t len;
    *out = NULL;
    if (fread(&len, sizeof len, 1, f) != 1)
        return CKH_ETRUNCATED;
    if (len == UINT32_MAX)
        return 0;
    if (len > (1u << 24))
        return CKH_ECORRUPT;
    char *s = malloc((size_t)len + 1);
    if (!s)
        return CKH_ENOMEM;
    if (len && fread(s, 1, len, f) != len) {
        free(s);
        return CKH_ETRUNCATED;
    }
    s[len] = '\0';
    *out = s;
    return 0;
}

static int result_write(const char *path, const struct ckh_report_result *r)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -errno;
    int32_t verdict = (int32_t)r->verdict;
    fwrite(&verdict, sizeof verdict, 1, f);
    put_str(f, r->name);
    put_str(f, r->file);
    put_str(f, r->failed_oracle);
    put_str(f, r->message);
    put_str(f, r->replay);
    uint64_t nums[7] = {(uint64_t)r->first_divergent_step, r->seed, r->virtual_ns, r->wall_ms,
                        r->runs, r->restarts, r->noracles};
    fwrite(nums, sizeof nums, 1, f);
    for (size_t i = 0; i < r->noracles; i++) {
        put_str(f, r->oracles[i].name);
        uint8_t passed = r->oracles[i].passed;
        fwrite(&passed, 1, 1, f);
        put_str(f, r->oracles[i].detail);
    }
    uint8_t has_timeline = r->timeline != NULL;
    fwrite(&has_timeline, 1, 1, f);
    if (has_timeline && ckh_report_timeline_write(f, r->timeline) != 0) {
        fclose(f);
        return -EIO;
    }
    return fclose(f) == 0 ? 0 : -EIO;
}

static int result_read(const char *path, struct ckh_report_result *r)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    int rc = CKH_ETRUNCATED;
    int32_t verdict;
    uint64_t nums[7];
    if (fread(&verdict, sizeof verdict, 1, f) != 1)
        goto out;
    r->verdict = (enum ckh_verdict)verdict;
    if ((rc = get_str(f, &r->name)) || (rc = get_str(f, &r->file)) ||
        (rc = get_str(f, &r->failed_oracle)) || (rc = get_str(f, &r->message)) ||
        (rc = get_str(f, &r->replay)))
        goto out;
    rc = CKH_ETRUNCATED;
    if (fread(nums, sizeof nums, 1, f) != 1)
        goto out;
    r->first_divergent_step = (int64_t)nums[0];
    r->seed = nums[1];
    r->virtual_ns = nums[2];
    r->wall_ms = nums[3];
    r->runs = (uint32_t)nums[4];
    r->restarts = (uint32_t)nums[5];
    for (uint64_t i = 0; i < nums[6]; i++) {
        char *name = NULL, *detail = NULL;
        uint8_t passed = 0;
        if ((rc = get_str(f, &name)) != 0 || fread(&passed, 1, 1, f) != 1 ||
            (rc = get_str(f, &detail)) != 0) {
            free(name);
            free(detail);
            rc = rc ? rc : CKH_ETRUNCATED;
            goto out;
        }
        ckh_report_add_oracle(r, name ? name : "?", passed != 0, detail);
        free(name);
        free(detail);
    }
    uint8_t has_timeline = 0;
    rc = CKH_ETRUNCATED;
    if (fread(&has_timeline, 1, 1, f) != 1)
        goto out;
    if (has_timeline && (rc = ckh_report_timeline_read(f, &r->timeline)) != 0)
        goto out;
    rc = 0;
out:
    fclose(f);
    return rc;
}

/* ---- ckh's temporary folder ---- */

static char tmp_root[512];

static void tmp_cleanup(void)
{
    if (!tmp_root[0])
        return;
    DIR *d = opendir(tmp_root);
    if (d) {
        struct dirent *de;
        char p[1024];
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            snprintf(p, sizeof p, "%s/%s", tmp_root, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(tmp_root);
    tmp_root[0] = '\0';
}

static void on_signal(int sig)
{
    tmp_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int tmp_make(void)
{
    if (tmp_root[0])
        return 0;
    const char *base = getenv("TMPDIR");
    snprintf(tmp_root, sizeof tmp_root, "%s/ckh-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(tmp_root)) {
        tmp_root[0] = '\0';
        return -errno;
    }
    atexit(tmp_cleanup);
    /* An interrupted run removes its folder too (workers reset this). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return 0;
}

/* ---- ckh run ---- */

struct run_args {
    struct ckh_run_options ro; /* runner options */
    int jobs;                  /* worker processes */
    const char *filter;        /* --filter */
    const char *junit;         /* --junit FILE */
    const char *json;          /* --json FILE */
    const char *html;          /* --html FILE */
    bool quiet;                /* --quiet: summary only */
};

/* One scenario slot of the run. */
struct slot {
    struct ckh_scn_entry *e;      /* parsed scenario or parse error */
    struct ckh_report_result res; /* its result */
    int status;                   /* CKH_EXIT_* the scenario contributes */
    pid_t pid;                    /* its worker while running */
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
            "  --filter GLOBS       only scenarios whose name matches a comma-separated glob\n"
            "  --junit FILE         write a JUnit XML report\n"
            "  --json FILE          write a JSON report (schema: docs/SCENARIOS.md)\n"
            "  --html FILE          write a self-contained HTML report with per-node timelines\n"
            "  --check-determinism  run each faulted job twice and compare trace hashes\n"
            "  --quiet              print only failures and the summary\n"
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 all passed, 1 a check failed, 2 bad input, 3 internal error\n");
}

static int worker_status_of(int rc)
{
    if (rc == 0)
        return CKH_EXIT_OK;
    return rc == CKH_EINVAL || rc == CKH_EPARSE || rc == -ENOENT ? CKH_EXIT_BAD_INPUT
                                                                  : CKH_EXIT_INTERNAL;
}

static void run_in_worker(struct slot *s, const struct run_args *a, const char *out_path)
{
    /* The folder is the parent's to remove (a worker ends with _exit, so
     * no atexit handler runs here either). */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    alarm(SCENARIO_WALL_LIMIT_S);
    ckh_report_result_init(&s->res);
    int rc = ckh_harness_run(s->e->scn, &a->ro, &s->res);
    int st = worker_status_of(rc);
    if (result_write(out_path, &s->res) != 0)
        st = CKH_EXIT_INTERNAL;
    ckh_report_result_clear(&s->res);
    fflush(NULL);
    ckh__worker_exit(st);
}

static void finish_slot(struct slot *s, int wstatus, const char *out_path, const struct run_args *a)
{
    ckh_report_result_init(&s->res);
    if (WIFEXITED(wstatus) && result_read(out_path, &s->res) == 0) {
        int code = WEXITSTATUS(wstatus);
        s->status = s->res.verdict == CKH_VERDICT_FAIL ? CKH_EXIT_FAILED : code;
        /* A verdict of error is never a success (e.g. nothing was judged). */
        if (s->res.verdict == CKH_VERDICT_ERROR && s->status == CKH_EXIT_OK)
            s->status = CKH_EXIT_BAD_INPUT;
        return;
    }
    ckh_report_result_clear(&s->res);
    ckh_report_set(&s->res.name, "%s", s->e->scn->name);
    ckh_report_set(&s->res.file, "%s", s->e->scn->file);
    s->res.verdict = CKH_VERDICT_ERROR;
    s->res.seed = a->ro.seed_set ? a->ro.seed : s->e->scn->seed;
    ckh_report_set(&s->res.replay, "%s run %s --seed %" PRIu64, a->ro.argv0, s->e->scn->file,
                   s->res.seed);
    if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM)
        ckh_report_set(&s->res.message, "internal error: the scenario ran longer than %d s",
                       SCENARIO_WALL_LIMIT_S);
    else if (WIFSIGNALED(wstatus))
        ckh_report_set(&s->res.message, "internal error: the worker died of signal %d (%s)",
                       WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
    else
        ckh_report_set(&s->res.message, "internal error: the worker left no result");
    s->status = CKH_EXIT_INTERNAL;
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

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int cmd_run(int argc, char **argv, const char *argv0)
{
    static const struct option longopts[] = {
        {"seed", required_argument, NULL, 's'},  {"jobs", required_argument, NULL, 'j'},
        {"filter", required_argument, NULL, 'f'}, {"junit", required_argument, NULL, 'J'},
        {"json", required_argument, NULL, 'O'},  {"check-determinism", no_argument, NULL, 'D'},
        {"html", required_argument, NULL, 'H'},
        {"quiet", no_argument, NULL, 'q'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct run_args a;
    memset(&a, 0, sizeof a);
    a.jobs = 1;
    a.ro.argv0 = argv0;
    optind = 0; /* 0: GNU getopt re-initializes (ckh_cli_main may run more than once) */
    int c;
    while ((c = getopt_long(argc, argv, "s:j:f:qh", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 's':
            errno = 0;
            a.ro.seed = strtoull(optarg, &end, 0);
            if (errno || !end || *end || optarg[0] == '-') {
                fprintf(stderr, "ckh run: --seed expects a non-negative integer, got '%s'\n", optarg);
                return CKH_EXIT_BAD_INPUT;
            }
            a.ro.seed_set = true;
            break;
        case 'j':
            a.jobs = (int)strtol(optarg, &end, 10);
            if (!end || *end || a.jobs < 1 || a.jobs > 256) {
                fprintf(stderr, "ckh run: --jobs expects an integer 1..256, got '%s'\n", optarg);
                return CKH_EXIT_BAD_INPUT;
            }
            break;
        case 'f': a.filter = optarg; break;
        case 'J': a.junit = optarg; break;
        case 'O': a.json = optarg; break;
        case 'H':
            a.html = optarg;
            a.ro.timeline = true;
            break;
        case 'D': a.ro.check_determinism = true; break;
        case 'q': a.quiet = true; break;
        case 'h': print_usage_run(stdout); return CKH_EXIT_OK;
        default: print_usage_run(stderr); return CKH_EXIT_BAD_INPUT;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "ckh run: no scenario file or folder given\n");
        print_usage_run(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    const char *src = getenv("CKH_SOURCE_DIR");
    a.ro.source_dir = src && src[0] ? src : ".";

    struct ckh_scn_options so;
    struct names wl, be, sv, df, orc;
    scn_options(&so, &wl, &be, &sv, &df, &orc);
    int npaths = argc - optind;
    struct ckh_scn_set *sets = calloc((size_t)npaths, sizeof *sets);
    if (!sets)
        return CKH_EXIT_INTERNAL;
    int exit_code = CKH_EXIT_OK;
    size_t total = 0;
    for (int i = 0; i < npaths; i++) {
        struct ckh_scn_error err;
        int rc = ckh_scn_set_load(argv[optind + i], &so, a.filter, &sets[i], &err);
        if (rc != 0) {
            char msg[800];
            ckh_scn_error_format(&err, msg, sizeof msg);
            fprintf(stderr, "ckh run: %s\n", msg);
            exit_code = CKH_EXIT_BAD_INPUT;
            continue;
        }
        total += sets[i].n;
    }
    struct slot *slots = calloc(total ? total : 1, sizeof *slots);
    if (!slots) {
        free(sets);
        return CKH_EXIT_INTERNAL;
    }
    size_t k = 0;
    for (int i = 0; i < npaths; i++)
        for (size_t j = 0; j < sets[i].n; j++)
            slots[k++].e = &sets[i].v[j];
    if (total == 0 && exit_code == CKH_EXIT_OK) {
        fprintf(stderr, "ckh run: no scenario found%s%s\n", a.filter ? " matching " : "",
                a.filter ? a.filter : "");
        exit_code = CKH_EXIT_BAD_INPUT;
    }
    if (tmp_make() != 0) {
        fprintf(stderr, "ckh run: cannot create a temporary folder: %s\n", strerror(errno));
        free(slots);
        free(sets);
        return CKH_EXIT_INTERNAL;
    }
    a.ro.cache_dir = tmp_root;

    bool tty = isatty(STDERR_FILENO) != 0;
    bool color = isatty(STDOUT_FILENO) != 0 && !getenv("NO_COLOR");
    struct ckh_report_progress prog = {.total = total};
    uint64_t t0 = now_ms();
    size_t next = 0, running = 0;
    fflush(NULL);
    while (next < total || running > 0) {
        /* Parse errors need no worker. */
        while (next < total && !slots[next].e->scn) {
            struct slot *s = &slots[next];
            char msg[800];
            ckh_scn_error_format(&s->e->err, msg, sizeof msg);
            ckh_report_result_init(&s->res);
            /* Named as the scenario would be (its file's base name); the
             * message already carries the path with line and column. */
            const char *base = strrchr(s->e->path, '/');
            base = base ? base + 1 : s->e->path;
            const char *dot = strrchr(base, '.');
            ckh_report_set(&s->res.name, "%.*s", (int)(dot && dot != base ? dot - base : (long)strlen(base)), base);
            ckh_report_set(&s->res.file, "%s", s->e->path);
            ckh_report_set(&s->res.message, "%s", msg);
            s->res.verdict = CKH_VERDICT_ERROR;
            s->status = CKH_EXIT_BAD_INPUT;
            prog.done++;
            prog.errors++;
            ckh_report_progress_clear(stderr, tty);
            ckh_report_term_result(stdout, &s->res, color);
            next++;
        }
        if (next < total && (int)running < a.jobs) {
            struct slot *s = &slots[next];
            char out_path[700];
            snprintf(out_path, sizeof out_path, "%s/result.%zu", tmp_root, next);
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0) {
                fprintf(stderr, "ckh run: fork: %s\n", strerror(errno));
                exit_code = CKH_EXIT_INTERNAL;
                break;
            }
            if (pid == 0)
                run_in_worker(s, &a, out_path);
            s->pid = pid;
            running++;
            next++;
            continue;
        }
        if (running == 0)
            continue;
        int wstatus;
        pid_t pid = wait(&wstatus);
        if (pid < 0)
            break;
        for (size_t i = 0; i < total; i++) {
            struct slot *s = &slots[i];
            if (s->pid != pid)
                continue;
            char out_path[700];
            snprintf(out_path, sizeof out_path, "%s/result.%zu", tmp_root, i);
            finish_slot(s, wstatus, out_path, &a);
            unlink(out_path);
            s->pid = 0;
            running--;
            prog.done++;
            if (s->res.verdict == CKH_VERDICT_FAIL)
                prog.failed++;
            if (s->res.verdict == CKH_VERDICT_ERROR)
                prog.errors++;
            ckh_report_progress_clear(stderr, tty);
            if (!a.quiet || s->res.verdict != CKH_VERDICT_PASS)
                ckh_report_term_result(stdout, &s->res, color);
            fflush(stdout);
            break;
        }
        prog.elapsed_ms = now_ms() - t0;
        if (tty)
            ckh_report_progress_print(stderr, &prog, tty);
    }
    ckh_report_progress_clear(stderr, tty);

    struct ckh_report_result *rs = calloc(total ? total : 1, sizeof *rs);
    if (!rs) {
        exit_code = CKH_EXIT_INTERNAL;
    } else {
        for (size_t i = 0; i < total; i++) {
            rs[i] = slots[i].res;
            if (slots[i].status > exit_code)
                exit_code = slots[i].status;
        }
        if (total > 0) /* with nothing loaded, the error above says it all */
            ckh_report_term_summary(stdout, rs, total, color);
        if (a.junit) {
            int w = write_report(a.junit, "JUnit", rs, total, ckh_report_junit);
            if (w > exit_code)
                exit_code = w;
        }
        if (a.json) {
            int w = write_report(a.json, "JSON", rs, total, ckh_report_json);
            if (w > exit_code)
                exit_code = w;
        }
        if (a.html) {
            int w = write_report(a.html, "HTML", rs, total, ckh_report_html);
            if (w > exit_code)
                exit_code = w;
        }
        free(rs);
    }
    for (size_t i = 0; i < total; i++)
        ckh_report_result_clear(&slots[i].res);
    free(slots);
    for (int i = 0; i < npaths; i++)
        ckh_scn_set_free(&sets[i]);
    free(sets);
    return exit_code;
}

/* ---- ckh list ---- */

static void print_usage_list(FILE *f)
{
    fprintf(f, "usage: ckh list [workloads|backends|savers|faults|defects|oracles|scenarios [PATH]]\n"
               "\n"
               "Lists what ckh knows; with no argument, everything (scenarios from ./scenarios).\n");
}

static int list_scenarios(const char *dir)
{
    struct ckh_scn_options so;
    struct names wl, be, sv, df, orc;
    scn_options(&so, &wl, &be, &sv, &df, &orc);
    struct ckh_scn_set set;
    struct ckh_scn_error err;
    if (ckh_scn_set_load(dir, &so, NULL, &set, &err) != 0) {
        char msg[800];
        ckh_scn_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "ckh list: %s\n", msg);
        return CKH_EXIT_BAD_INPUT;
    }
    int code = CKH_EXIT_OK;
    printf("scenarios (%s):\n", dir);
    for (size_t i = 0; i < set.n; i++) {
        if (set.v[i].scn) {
            printf("  %-44s %s\n", set.v[i].scn->name,
                   set.v[i].scn->description ? set.v[i].scn->description : "");
        } else {
            char msg[800];
            ckh_scn_error_format(&set.v[i].err, msg, sizeof msg);
            printf("  %-44s (error) %s\n", set.v[i].path, msg);
            code = CKH_EXIT_BAD_INPUT;
        }
    }
    ckh_scn_set_free(&set);
    return code;
}

static int cmd_list(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : NULL;
    if (what && (strcmp(what, "-h") == 0 || strcmp(what, "--help") == 0)) {
        print_usage_list(stdout);
        return CKH_EXIT_OK;
    }
    bool all = what == NULL;
    bool known = all;
    if (all || strcmp(what, "workloads") == 0) {
        known = true;
        printf("workloads:\n");
        for (size_t i = 0; ckh_adapter_at(i); i++)
            printf("  %-28s %s\n", ckh_adapter_at(i)->name, ckh_adapter_at(i)->description);
    }
    if (all || strcmp(what, "backends") == 0) {
        known = true;
        printf("backends:\n");
        for (size_t i = 0; ckh_backend_at(i); i++)
            printf("  %-28s version %d\n", ckh_backend_at(i)->name, ckh_backend_at(i)->version);
    }
    if (all || strcmp(what, "savers") == 0) {
        known = true;
        printf("savers:\n  %-28s %s\n", "atomic-dir",
               "checkpoint folders with a latest symlink, keep_last, sync_any/sync_all/async");
    }
    if (all || strcmp(what, "faults") == 0) {
        known = true;
        printf("faults:\n");
        for (size_t i = 0; ckh_fault_at(i); i++) /* the descriptors (harness/faults/) */
            printf("  %-28s %s\n", ckh_fault_at(i)->name, ckh_fault_at(i)->summary);
    }
    if (all || strcmp(what, "defects") == 0) {
        known = true;
        printf("defects:\n");
        for (int i = 0; i < CKH_DEFECT__COUNT; i++)
            printf("  %-36s [%s] %s\n", ckh_defect_name((enum ckh_defect)i),
                   ckh_defect_component((enum ckh_defect)i), ckh_defect_desc((enum ckh_defect)i));
    }
    if (all || strcmp(what, "oracles") == 0) {
        known = true;
        printf("oracles:\n");
        for (size_t i = 0; ckh_oracle_at(i); i++)
            printf("  %-28s %s\n", ckh_oracle_at(i)->name, ckh_oracle_at(i)->description);
    }
    if (all || strcmp(what, "scenarios") == 0) {
        known = true;
        const char *dir = !all && argc > 2 ? argv[2] : "scenarios";
        struct stat st;
        if (!all || stat(dir, &st) == 0) {
            int rc = list_scenarios(dir);
            if (rc != CKH_EXIT_OK)
                return rc;
        }
    }
    if (!known) {
        fprintf(stderr, "ckh list: unknown category '%s'\n", what);
        print_usage_list(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    return CKH_EXIT_OK;
}

/* ---- ckh replay ---- */

static void print_usage_replay(FILE *f)
{
    fprintf(f, "usage: ckh replay FILE [--seed N] [--node NAME] [--op OP]\n"
               "\n"
               "Runs the scenario's faulted job once more (its restarts included) and prints\n"
               "its trace, one operation per line: virtual time, node, operation, arguments,\n"
               "result. --node and --op keep only one node's or one operation's lines.\n");
}

static int cmd_replay(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"seed", required_argument, NULL, 's'}, {"node", required_argument, NULL, 'n'},
        {"op", required_argument, NULL, 'o'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct ckh_run_options ro;
    memset(&ro, 0, sizeof ro);
    const char *node = NULL, *op = NULL;
    optind = 0; /* 0: GNU getopt re-initializes (ckh_cli_main may run more than once) */
    int c;
    while ((c = getopt_long(argc, argv, "s:h", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 's':
            errno = 0;
            ro.seed = strtoull(optarg, &end, 0);
            if (errno || !end || *end || optarg[0] == '-') {
                fprintf(stderr, "ckh replay: --seed expects a non-negative integer, got '%s'\n", optarg);
                return CKH_EXIT_BAD_INPUT;
            }
            ro.seed_set = true;
            break;
        case 'n': node = optarg; break;
        case 'o': op = optarg; break;
        case 'h': print_usage_replay(stdout); return CKH_EXIT_OK;
        default: print_usage_replay(stderr); return CKH_EXIT_BAD_INPUT;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "ckh replay: expected exactly one scenario file\n");
        print_usage_replay(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    struct ckh_scn_options so;
    struct names wl, be, sv, df, orc;
    scn_options(&so, &wl, &be, &sv, &df, &orc);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    if (ckh_scenario_parse_file(argv[optind], &so, &sc, &err) != 0) {
        char msg[800];
        ckh_scn_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "ckh replay: %s\n", msg);
        return CKH_EXIT_BAD_INPUT;
    }
    char msg[600];
    int rc = ckh_harness_replay(sc, &ro, node, op, stdout, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "ckh replay: %s: %s\n", argv[optind], msg);
    ckh_scenario_free(sc);
    return rc == 0 ? CKH_EXIT_OK : worker_status_of(rc);
}

/* ---- entry ---- */

static void print_usage(FILE *f)
{
    fprintf(f,
            "usage: ckh <command> [options]\n"
            "\n"
            "ckh runs checkpoint/resume code in a deterministic simulator, injects\n"
            "failures, resumes the job and checks it against reference results.\n"
            "\n"
            "commands:\n"
            "  run PATH...             run scenario files or folders (ckh run --help)\n"
            "  list [CATEGORY]         workloads, backends, savers, faults, defects, oracles, scenarios\n"
            "  replay FILE --seed N    print the trace of one scenario's faulted job\n"
            "  validate-backend LIB    put a backend plugin through the fault catalogue and\n"
            "                          every crash state of its save protocol\n"
            "  fuzz                    random fault schedules over many seeds, failures shrunk\n"
            "  shrink FILE             minimize a failing scenario to its essential faults\n"
            "  help [COMMAND]          this help, or a command's\n"
            "\n"
            "Reference: docs/CLI.md. Scenario format: docs/SCENARIOS.md.\n");
}

int ckh_cli_main(int argc, char **argv)
{
    const char *argv0 = argc > 0 ? argv[0] : "ckh";
    if (argc < 2) {
        print_usage(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        if (argc > 2 && strcmp(cmd, "help") == 0)
            return ckh_cli_main(3, (char *[]){(char *)argv0, argv[2], (char *)"--help", NULL});
        print_usage(stdout);
        return CKH_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("ckh 0.1.0\n");
        return CKH_EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1, argv0);
    if (strcmp(cmd, "list") == 0)
        return cmd_list(argc - 1, argv + 1);
    if (strcmp(cmd, "replay") == 0)
        return cmd_replay(argc - 1, argv + 1);
    if (strcmp(cmd, "validate-backend") == 0)
        return ckh_validate_main(argc - 1, argv + 1);
    if (strcmp(cmd, "fuzz") == 0)
        return ckh_fuzz_main(argc - 1, argv + 1);
    if (strcmp(cmd, "shrink") == 0)
        return ckh_shrink_main(argc - 1, argv + 1);
    fprintf(stderr, "ckh: unknown command '%s'\n", cmd);
    print_usage(stderr);
    return CKH_EXIT_BAD_INPUT;
}
