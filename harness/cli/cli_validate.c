/* `ckh validate-backend`: the verb. Parses its options, loads the library
 * (after the probe in a child, search/validate.c V0), runs the cases
 * through ckh_validate_backend and prints and writes the results (spec and
 * exit codes: search/validate.c V0-V4). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "exec/plugin.h"
#include "exec/pool.h"
#include "search/validate.h"

static void usage(FILE *f)
{
    fputs("usage: ckh validate-backend LIB.so [options]\n"
          "  Runs a checkpoint backend plugin through the fault catalogue (errno on each\n"
          "  operation, fsync failure, corruption at rest, leaks), the crash explorer\n"
          "  (every crash state of a save, a replacement, retention, two concurrent ranks,\n"
          "  N ranks on node-local disks) and the contract checks (loads by name and\n"
          "  flags, all-or-nothing loads, epochs past 9). The library is loaded in a\n"
          "  child process first: a crash or hang while it loads is a finding.\n"
          "options:\n"
          "  --model posix-weak|ext4-ordered  crash model (default posix-weak)\n"
          "  --sector 512|4096                torn-write granularity (default 512)\n"
          "  --timeout S                      time limit per case in seconds (default 10; cases run one after another)\n"
          "  --mem-limit SIZE                 memory limit per case (default 4GiB; 0: none)\n"
          "  --only TEXT                      run only cases whose name contains TEXT\n"
          "  --case NAME                      run only the case NAME (listed below; \"load\":\n"
          "                                   only load the library in a child process)\n"
          "  --state K                        with --case: check only its K-th state (the\n"
          "                                   replay command printed with each finding)\n"
          "  --ranks N                        crash:node-local with N ranks (2..8; default 2, then 4)\n"
          "  --junit FILE, --json FILE, --html FILE   write reports\n"
          "  --quiet                          print only findings and the summary\n"
          "exit status: 0 no vulnerability, 1 vulnerabilities found, 2 bad input,\n"
          "  3 internal error\n"
          "cases:",
          f);
    for (size_t i = 0; ckh_validate_case_name(i); i++)
        fprintf(f, "%s%s", i % 4 ? " " : "\n  ", ckh_validate_case_name(i));
    fputc('\n', f);
}

/* The command line of validate-backend. */
struct vargs {
    struct ckh_validate_options opt; /* for ckh_validate_backend */
    const char *junit, *json, *html; /* report paths (NULL: none) */
    bool quiet;                      /* only findings and the summary */
};

/* One option taking a value; 0 or CKH_EINVAL with msg. */
static int set_value(struct vargs *a, const char *name, const char *v, char *msg, size_t n)
{
    uint64_t x = 0;
    int rc = 0;
    if (!strcmp(name, "--model")) {
        if (!strcmp(v, "posix-weak"))
            a->opt.model = CKH_CRASH_POSIX_WEAK;
        else if (!strcmp(v, "ext4-ordered"))
            a->opt.model = CKH_CRASH_EXT4_ORDERED;
        else
            rc = ckh_errf(msg, n, CKH_EINVAL, "unknown model %s (posix-weak, ext4-ordered)", v);
    } else if (!strcmp(name, "--sector")) {
        if (strcmp(v, "512") && strcmp(v, "4096"))
            rc = ckh_errf(msg, n, CKH_EINVAL, "sector must be 512 or 4096, not %s", v);
        a->opt.sector_bytes = v[0] == '5' ? 512 : 4096;
    } else if (!strcmp(name, "--timeout")) {
        rc = ckh_opt_u64("timeout", v, 1, 86400, &x, msg, n);
        a->opt.timeout_s = (unsigned)x;
    } else if (!strcmp(name, "--mem-limit")) {
        rc = ckh_opt_size("mem-limit", v, 0, UINT64_MAX, &a->opt.mem_bytes, msg, n);
    } else if (!strcmp(name, "--only")) {
        a->opt.only = v;
    } else if (!strcmp(name, "--case")) {
        a->opt.case_name = v;
    } else if (!strcmp(name, "--state")) {
        rc = ckh_opt_u64("state", v, 1, UINT64_MAX, &a->opt.state, msg, n);
    } else if (!strcmp(name, "--ranks")) {
        rc = ckh_opt_u64("ranks", v, 2, CKH_EXPLORE_MAX_RANKS, &x, msg, n);
        a->opt.ranks = (uint32_t)x;
    } else if (!strcmp(name, "--junit")) {
        a->junit = v;
    } else if (!strcmp(name, "--json")) {
        a->json = v;
    } else {
        a->html = v;
    }
    return rc;
}

static bool takes_value(const char *a)
{
    static const char *const names[] = {"--model", "--sector", "--timeout", "--mem-limit",
                                        "--only", "--case", "--state", "--ranks", "--junit",
                                        "--json", "--html"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(a, names[i]))
            return true;
    return false;
}

/* Checks the report paths before any case runs. */
static int check_outputs(const struct vargs *a, char *msg, size_t n)
{
    return ckh_opt_check_reports(a->junit, a->json, a->html, msg, n) != 0 ? CKH_EINVAL : 0;
}

/* A case name --case accepts: "load" (V0: only loading the library, no
 * case after it) or one of the cases. */
static bool known_case(const char *name)
{
    if (strcmp(name, "load") == 0)
        return true;
    for (size_t i = 0; ckh_validate_case_name(i); i++)
        if (strcmp(ckh_validate_case_name(i), name) == 0)
            return true;
    return false;
}

/* Parses argv into *a; returns -1 to go on, else the exit status. */
static int validate_options(int argc, char **argv, struct vargs *a)
{
    char msg[512];
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            return CKH_VALIDATE_OK;
        } else if (!strcmp(arg, "--quiet")) {
            a->quiet = true;
        } else if (takes_value(arg)) {
            if (i + 1 >= argc) {
                fprintf(stderr, "ckh validate-backend: %s needs a value\n", arg);
                return CKH_VALIDATE_BADINPUT;
            }
            if (set_value(a, arg, argv[++i], msg, sizeof(msg)) != 0) {
                fprintf(stderr, "ckh validate-backend: %s\n", msg);
                return CKH_VALIDATE_BADINPUT;
            }
        } else if (arg[0] == '-') {
            fprintf(stderr, "ckh validate-backend: unknown option %s\n", arg);
            usage(stderr);
            return CKH_VALIDATE_BADINPUT;
        } else if (a->opt.lib) {
            fprintf(stderr, "ckh validate-backend: one library at a time (%s, %s)\n", a->opt.lib,
                    arg);
            return CKH_VALIDATE_BADINPUT;
        } else {
            a->opt.lib = arg;
        }
    }
    if (!a->opt.lib) {
        fprintf(stderr, "ckh validate-backend: no library given\n");
        usage(stderr);
        return CKH_VALIDATE_BADINPUT;
    }
    if (a->opt.case_name && !known_case(a->opt.case_name)) {
        fprintf(stderr, "ckh validate-backend: unknown case %s (ckh validate-backend --help "
                "lists them)\n", a->opt.case_name);
        return CKH_VALIDATE_BADINPUT;
    }
    if (a->opt.state && !a->opt.case_name) {
        fprintf(stderr, "ckh validate-backend: --state needs --case NAME (the state numbers "
                "count within one case)\n");
        return CKH_VALIDATE_BADINPUT;
    }
    if (check_outputs(a, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "ckh validate-backend: %s\n", msg);
        return CKH_VALIDATE_BADINPUT;
    }
    return -1;
}

static int write_report(const char *path, int kind, const char *lib,
                        const struct ckh_validate_case *cases, size_t n,
                        const struct ckh_report_result *rs)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ckh validate-backend: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct ckh_report_meta meta = {"ckh.validate-backend", NULL, NULL, NULL};
    int rc = kind == 0 ? ckh_report_junit(f, &meta, rs, n)
           : kind == 1 ? ckh_report_json(f, &meta, rs, n)
                       : ckh_validate_html(f, lib, cases, n);
    if (fclose(f) != 0 || rc)
        return -1;
    return 0;
}

/* Prints every case's verdict, each finding with the command that
 * replays its state (V4), and the summary line; returns the exit code. */
static int print_cases(const char *backend, const struct vargs *a,
                       const struct ckh_validate_case *cases, size_t n)
{
    char cmd[1200];
    size_t nv = 0, nerr = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ckh_validate_case *c = &cases[i];
        nv += c->res.nvulns;
        nerr += c->rc != 0;
        if (c->rc)
            printf("ERROR %s: %s\n", c->name, ckh_strerror(c->rc));
        else if (!c->res.nvulns && !a->quiet && a->opt.state)
            printf("PASS  %s (state %" PRIu64 ": no finding)\n", c->name, a->opt.state);
        else if (!c->res.nvulns && !a->quiet)
            printf("PASS  %s (%" PRIu64 " states, %" PRIu64 " distinct checked)\n", c->name,
                   c->res.stats.states, c->res.stats.states_checked);
        for (size_t j = 0; j < c->res.nvulns; j++) {
            const struct ckh_vuln *v = &c->res.vulns[j];
            ckh_validate_replay_cmd(&a->opt, c->name, v, cmd, sizeof(cmd));
            bool sub = v->scenario[0] && !strstr(c->name, v->scenario);
            printf("FAIL  %s%s%s%s: %s: %s\n        crash state: %s\n        responsible step: %s\n"
                   "        replay: %s\n", c->name, sub ? " [" : "", sub ? v->scenario : "",
                   sub ? "]" : "", ckh_vuln_name(v->kind), v->symptom, v->state,
                   v->step[0] ? v->step : "(not identified)", cmd);
        }
    }
    printf("%s (%s): %zu cases, %zu vulnerabilities, %zu errors; model %s, sector %u\n",
           backend, a->opt.lib, n, nv, nerr, ckh_validate_model_name(a->opt.model), a->opt.sector_bytes);
    return nerr ? CKH_VALIDATE_INTERNAL : nv ? CKH_VALIDATE_VULN : CKH_VALIDATE_OK;
}

/* Writes the reports asked for; returns the exit code they leave. */
static int write_reports(const struct vargs *a, const struct ckh_validate_case *cases, size_t n,
                         int exit_code)
{
    if (!a->junit && !a->json && !a->html)
        return exit_code;
    struct ckh_report_result *rs = NULL;
    if (ckh_validate_results(cases, n, &a->opt, &rs) != 0)
        return CKH_VALIDATE_INTERNAL;
    const char *lib = a->opt.lib;
    if ((a->junit && write_report(a->junit, 0, lib, cases, n, rs)) ||
        (a->json && write_report(a->json, 1, lib, cases, n, rs)) ||
        (a->html && write_report(a->html, 2, lib, cases, n, rs)))
        exit_code = CKH_VALIDATE_INTERNAL;
    for (size_t i = 0; i < n; i++)
        ckh_report_result_clear(&rs[i]);
    free(rs);
    return exit_code;
}

/* V0: a library whose loading crashed or hung in the probe's child: the
 * verdict of case "load", printed and reported; exit 1. */
static int load_verdict(const struct vargs *a, int rc, const char *msg)
{
    struct ckh_validate_case *c = calloc(1, sizeof(*c));
    if (!c)
        return CKH_VALIDATE_INTERNAL;
    snprintf(c->name, sizeof(c->name), "load");
    c->res.stats.states = c->res.stats.states_checked = 1;
    if (ckh__explore_vuln_add(&c->res, rc == CKH_ECRASH ? CKH_VULN_BACKEND_CRASHED
                                                         : CKH_VULN_BACKEND_HUNG,
                              "load", msg, "loading the library in an isolated child process",
                              "the library's constructors and its entry point "
                              CKH_BACKEND_PLUGIN_SYMBOL " must return promptly") != 0) {
        ckh_validate_free(c, 1);
        return CKH_VALIDATE_INTERNAL;
    }
    int st = print_cases("(not loaded)", a, c, 1);
    st = write_reports(a, c, 1, st);
    ckh_validate_free(c, 1);
    return st;
}

int ckh_validate_main(int argc, char **argv)
{
    struct vargs a;
    memset(&a, 0, sizeof(a));
    a.opt.sector_bytes = 512;
    a.opt.mem_bytes = CKH_POOL_MEM_DEFAULT;
    int st = validate_options(argc, argv, &a);
    if (st >= 0)
        return st;
    struct ckh_plugin *p = NULL;
    char msg[512];
    int rc = ckh_plugin_probe(a.opt.lib, CKH_PLUGIN_BACKEND,
                              1000u * (a.opt.timeout_s ? a.opt.timeout_s : 10), msg, sizeof(msg));
    if (rc == CKH_ECRASH || rc == CKH_ETIMEOUT)
        return load_verdict(&a, rc, msg);
    if (rc == 0)
        rc = ckh_plugin_load(a.opt.lib, &p, msg, sizeof(msg));
    if (rc) {
        fprintf(stderr, "ckh validate-backend: %s\n", msg);
        return rc == CKH_ENOMEM ? CKH_VALIDATE_INTERNAL : CKH_VALIDATE_BADINPUT;
    }
    struct ckh_validate_case *cases = NULL;
    size_t n = 0;
    rc = ckh_validate_backend(ckh_plugin_ops(p), &a.opt, &cases, &n);
    if (rc) {
        fprintf(stderr, "ckh validate-backend: %s\n", rc == CKH_EINVAL && a.opt.state
                ? "--state needs exactly one case selected" : ckh_strerror(rc));
        ckh_plugin_unload(p);
        return rc == CKH_EINVAL && a.opt.state ? CKH_VALIDATE_BADINPUT : CKH_VALIDATE_INTERNAL;
    }
    st = print_cases(ckh_plugin_ops(p)->name, &a, cases, n);
    st = write_reports(&a, cases, n, st);
    ckh_validate_free(cases, n);
    ckh_plugin_unload(p);
    return st;
}
