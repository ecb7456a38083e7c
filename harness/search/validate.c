/* `ckh validate-backend`: the fault catalogue and the crash explorer,
 * each case isolated in a forked child.
 *
 * Spec:
 * V1. Cases, in this order: crash:new-epoch, crash:replace, crash:two-ranks
 *     (harness/explore.c E1-E6), fault:EIO, fault:ENOSPC, fault:EDQUOT,
 *     fault:EACCES, fault:EROFS, fault:ENOENT, fault:fsync-lost, at-rest,
 *     leak (E7).
 * V2. Isolation: each case runs in a child (fork) that sends its findings
 *     back through a pipe as fixed-size records and exits. The parent waits
 *     at most timeout_s (the child also arms alarm()); a child killed by a
 *     signal is a BACKEND_CRASHED finding, one past its time a
 *     BACKEND_HUNG finding (the child is SIGKILLed). ckh itself never runs
 *     backend code outside a child, except the plugin's entry point.
 * V3. Exit codes: 0 no finding, 1 findings, 2 bad input (arguments, a
 *     library that is missing or not a plugin), 3 internal error.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "run/worker.h"
#include "run/plugin.h"
#include "search/validate.h"

struct vcase {
    const char *name;  /* case name */
    int family;        /* -1: explorer, else enum ckh_fault_family */
    unsigned scen;     /* explorer scenarios */
    int err;           /* errno for CKH_FAULTS_ERRNO */
};

static const struct vcase vcases[] = {
    {"crash:new-epoch", -1, CKH_EXPLORE_NEW_EPOCH, 0},
    {"crash:replace", -1, CKH_EXPLORE_REPLACE, 0},
    {"crash:two-ranks", -1, CKH_EXPLORE_TWO_RANKS, 0},
    {"crash:retention", -1, CKH_EXPLORE_RETENTION, 0},
    {"fault:EIO", CKH_FAULTS_ERRNO, 0, EIO},
    {"fault:ENOSPC", CKH_FAULTS_ERRNO, 0, ENOSPC},
    {"fault:EDQUOT", CKH_FAULTS_ERRNO, 0, EDQUOT},
    {"fault:EACCES", CKH_FAULTS_ERRNO, 0, EACCES},
    {"fault:EROFS", CKH_FAULTS_ERRNO, 0, EROFS},
    {"fault:ENOENT", CKH_FAULTS_ERRNO, 0, ENOENT},
    {"fault:fsync-lost", CKH_FAULTS_FSYNC, 0, 0},
    {"at-rest", CKH_FAULTS_AT_REST, 0, 0},
    {"leak", CKH_FAULTS_LEAK, 0, 0},
};
#define NVCASES (sizeof(vcases) / sizeof(vcases[0]))

/* Header of a child's answer; nvulns struct ckh_vuln records follow. */
struct vwire {
    int rc;                         /* the case's return code */
    struct ckh_explore_stats stats; /* counters */
    uint64_t nvulns;                /* records that follow */
};

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void child(const struct ckh_backend_ops *ops, const struct ckh_validate_options *opt,
                  const struct vcase *vc, int fd)
{
    struct ckh_explore_config cfg;
    struct ckh_explore_result res;
    struct vwire w;
    memset(&cfg, 0, sizeof(cfg));
    cfg.ops = ops;
    cfg.model = opt->model;
    cfg.sector_bytes = opt->sector_bytes;
    cfg.seed = 1;
    cfg.scenarios = vc->scen;
    alarm(opt->timeout_s ? opt->timeout_s + 1 : 61);
    memset(&w, 0, sizeof(w));
    if (vc->family < 0)
        w.rc = ckh_explore_run(&cfg, &res, NULL, 0);
    else
        w.rc = ckh_explore_faults(&cfg, (enum ckh_fault_family)vc->family, vc->err, &res, NULL, 0);
    if (w.rc == 0) {
        w.stats = res.stats;
        w.nvulns = res.nvulns;
    }
    int bad = write_all(fd, &w, sizeof(w));
    for (size_t i = 0; !bad && w.rc == 0 && i < res.nvulns; i++)
        bad = write_all(fd, &res.vulns[i], sizeof(res.vulns[i]));
    if (w.rc == 0)
        ckh_explore_result_free(&res);
    close(fd);
    ckh__worker_exit(bad ? 3 : 0);
}

static int add_finding(struct ckh_explore_result *r, enum ckh_vuln_kind k, const char *scenario,
                       const char *symptom)
{
    struct ckh_vuln *v = realloc(r->vulns, (r->nvulns + 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    r->vulns = v;
    v = &r->vulns[r->nvulns++];
    memset(v, 0, sizeof(*v));
    v->kind = k;
    snprintf(v->scenario, sizeof(v->scenario), "%s", scenario);
    snprintf(v->symptom, sizeof(v->symptom), "%s", symptom);
    snprintf(v->state, sizeof(v->state), "isolated child process");
    return 0;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* only the time limit, never a result */
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Runs one case in a child (V2). */
static int run_isolated(const struct ckh_backend_ops *ops, const struct ckh_validate_options *opt,
                        const struct vcase *vc, struct ckh_validate_case *out)
{
    int fds[2];
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", vc->name);
    if (pipe(fds) != 0)
        return -errno;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(fds[0]);
        close(fds[1]);
        return e;
    }
    if (pid == 0) {
        close(fds[0]);
        child(ops, opt, vc, fds[1]);
    }
    close(fds[1]);
    unsigned limit_s = opt->timeout_s ? opt->timeout_s : 10;
    uint64_t deadline = now_ms() + (uint64_t)limit_s * 1000u;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    bool hung = false;
    for (;;) {
        uint64_t t = now_ms();
        if (t >= deadline) {
            hung = true;
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int pr = poll(&pf, 1, (int)(deadline - t));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            hung = pr == 0;
            break;
        }
        if (n + 65536 > cap) {
            char *nb = realloc(buf, cap + 65536 * 4);
            if (!nb)
                break;
            buf = nb;
            cap += 65536 * 4;
        }
        ssize_t r = read(fds[0], buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    if (hung)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    char sym[200];
    int rc = 0;
    struct vwire w;
    if (hung || (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)) {
        snprintf(sym, sizeof(sym), "the case did not finish within %u s", limit_s);
        rc = add_finding(&out->res, CKH_VULN_BACKEND_HUNG, vc->name, sym);
    } else if (WIFSIGNALED(status)) {
        snprintf(sym, sizeof(sym), "the backend killed the process with signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
        rc = add_finding(&out->res, CKH_VULN_BACKEND_CRASHED, vc->name, sym);
    } else if (WEXITSTATUS(status) != 0 || n < sizeof(w)) {
        snprintf(sym, sizeof(sym), "the case's process exited with status %d without a result",
                 WEXITSTATUS(status));
        rc = add_finding(&out->res, CKH_VULN_BACKEND_CRASHED, vc->name, sym);
    } else {
        memcpy(&w, buf, sizeof(w));
        out->rc = w.rc;
        out->res.stats = w.stats;
        if (w.nvulns > (n - sizeof(w)) / sizeof(struct ckh_vuln)) {
            out->rc = CKH_EINTERNAL;
        } else if (w.nvulns) {
            out->res.vulns = malloc(w.nvulns * sizeof(struct ckh_vuln));
            if (!out->res.vulns)
                rc = CKH_ENOMEM;
            else
                memcpy(out->res.vulns, buf + sizeof(w), w.nvulns * sizeof(struct ckh_vuln));
            out->res.nvulns = out->res.vulns ? w.nvulns : 0;
        }
    }
    free(buf);
    return rc;
}

int ckh_validate_backend(const struct ckh_backend_ops *ops, const struct ckh_validate_options *opt,
                         struct ckh_validate_case **cases, size_t *ncases)
{
    if (!ops || !opt || !cases || !ncases)
        return CKH_EINVAL;
    *cases = NULL;
    *ncases = 0;
    if (ckh_plugin_check_ops(ops, NULL, 0) != 0)
        return CKH_EINVAL;
    struct ckh_validate_case *v = calloc(NVCASES, sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < NVCASES; i++) {
        if (opt->only && !strstr(vcases[i].name, opt->only))
            continue;
        int rc = run_isolated(ops, opt, &vcases[i], &v[n]);
        n++;
        if (rc) {
            ckh_validate_free(v, n);
            return rc;
        }
    }
    *cases = v;
    *ncases = n;
    return 0;
}

void ckh_validate_free(struct ckh_validate_case *cases, size_t n)
{
    for (size_t i = 0; cases && i < n; i++)
        ckh_explore_result_free(&cases[i].res);
    free(cases);
}

static const char *model_name(enum ckh_crash_model m)
{
    return m == CKH_CRASH_EXT4_ORDERED ? "ext4-ordered" : "posix-weak";
}

int ckh_validate_results(const struct ckh_validate_case *cases, size_t n,
                         const struct ckh_validate_options *opt, struct ckh_report_result **out)
{
    struct ckh_report_result *rs = calloc(n ? n : 1, sizeof(*rs));
    if (!rs)
        return CKH_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct ckh_validate_case *c = &cases[i];
        struct ckh_report_result *r = &rs[i];
        ckh_report_result_init(r);
        rc = ckh_report_set(&r->name, "%s", c->name);
        rc = rc ? rc : ckh_report_set(&r->file, "%s", opt->lib ? opt->lib : "backend");
        rc = rc ? rc : ckh_report_set(&r->replay, "ckh validate-backend %s --only %s --model %s "
                                      "--sector %u", opt->lib ? opt->lib : "LIB.so", c->name,
                                      model_name(opt->model),
                                      opt->sector_bytes ? opt->sector_bytes : 512);
        r->runs = (uint32_t)c->res.stats.states_checked;
        r->verdict = c->rc ? CKH_VERDICT_ERROR
                           : c->res.nvulns ? CKH_VERDICT_FAIL : CKH_VERDICT_PASS;
        if (c->rc && rc == 0)
            rc = ckh_report_set(&r->message, "internal error: %s", ckh_strerror(c->rc));
        for (size_t j = 0; j < c->res.nvulns && rc == 0; j++) {
            const struct ckh_vuln *v = &c->res.vulns[j];
            char *detail = NULL;
            rc = ckh_report_set(&detail, "%s; crash state: %s; responsible step: %s", v->symptom,
                                v->state, v->step[0] ? v->step : "(not identified)");
            if (rc)
                break;
            rc = ckh_report_add_oracle(r, ckh_vuln_name(v->kind), false, detail);
            if (rc == 0 && j == 0) {
                rc = ckh_report_set(&r->failed_oracle, "%s", ckh_vuln_name(v->kind));
                rc = rc ? rc : ckh_report_set(&r->message, "%s", detail);
            }
            free(detail);
        }
        if (rc == 0 && c->res.nvulns == 0 && !c->rc) {
            char d[160];
            snprintf(d, sizeof(d), "%" PRIu64 " states, %" PRIu64 " distinct checked",
                     c->res.stats.states, c->res.stats.states_checked);
            rc = ckh_report_add_oracle(r, "all-states", true, d);
        }
    }
    if (rc) {
        for (size_t i = 0; i < n; i++)
            ckh_report_result_clear(&rs[i]);
        free(rs);
        return rc;
    }
    *out = rs;
    return 0;
}

static void html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

int ckh_validate_html(FILE *f, const char *lib, const struct ckh_validate_case *cases, size_t n)
{
    if (!f)
        return CKH_EINVAL;
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ckh validate-backend"
          "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}.pass{color:#070}"
          ".fail{color:#b00}.err{color:#a60}code{font-size:90%}</style></head><body>\n", f);
    fputs("<h1>ckh validate-backend ", f);
    html_text(f, lib ? lib : "");
    fputs("</h1>\n<table><tr><th>case</th><th>verdict</th><th>states</th><th>findings</th></tr>\n",
          f);
    for (size_t i = 0; i < n; i++) {
        const struct ckh_validate_case *c = &cases[i];
        const char *cls = c->rc ? "err" : c->res.nvulns ? "fail" : "pass";
        fprintf(f, "<tr><td>");
        html_text(f, c->name);
        fprintf(f, "</td><td class=\"%s\">%s</td><td>%" PRIu64 " / %" PRIu64 "</td><td>", cls,
                c->rc ? "ERROR" : c->res.nvulns ? "FAIL" : "PASS", c->res.stats.states_checked,
                c->res.stats.states);
        for (size_t j = 0; j < c->res.nvulns; j++) {
            const struct ckh_vuln *v = &c->res.vulns[j];
            fputs("<p><b>", f);
            html_text(f, ckh_vuln_name(v->kind));
            fputs("</b>: ", f);
            html_text(f, v->symptom);
            fputs("<br><i>crash state</i>: <code>", f);
            html_text(f, v->state);
            fputs("</code><br><i>responsible step</i>: <code>", f);
            html_text(f, v->step);
            fputs("</code></p>", f);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table></body></html>\n", f);
    return ferror(f) ? -EIO : 0;
}

static void usage(FILE *f)
{
    fputs("usage: ckh validate-backend LIB.so [options]\n"
          "  Runs a checkpoint backend plugin through the fault catalogue (errno on each\n"
          "  operation, fsync failure, corruption at rest, leaks) and the crash explorer\n"
          "  (every crash state of a save, a replacement and two concurrent ranks).\n"
          "options:\n"
          "  --model posix-weak|ext4-ordered  crash model (default posix-weak)\n"
          "  --sector 512|4096                torn-write granularity (default 512)\n"
          "  --timeout S                      time limit per case in seconds (default 10; cases run one after another)\n"
          "  --only TEXT                      run only cases whose name contains TEXT\n"
          "  --junit FILE, --json FILE, --html FILE   write reports\n"
          "  --quiet                          print only findings and the summary\n"
          "exit status: 0 no vulnerability, 1 vulnerabilities found, 2 bad input,\n"
          "  3 internal error\n",
          f);
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

int ckh_validate_main(int argc, char **argv)
{
    struct ckh_validate_options opt;
    const char *lib = NULL, *junit = NULL, *json = NULL, *html = NULL;
    bool quiet = false;
    memset(&opt, 0, sizeof(opt));
    opt.sector_bytes = 512;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return CKH_VALIDATE_OK;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (a[0] == '-' && a[1] == '-' && !v) {
            fprintf(stderr, "ckh validate-backend: %s needs a value\n", a);
            return CKH_VALIDATE_BADINPUT;
        } else if (!strcmp(a, "--model")) {
            if (!strcmp(v, "posix-weak"))
                opt.model = CKH_CRASH_POSIX_WEAK;
            else if (!strcmp(v, "ext4-ordered"))
                opt.model = CKH_CRASH_EXT4_ORDERED;
            else {
                fprintf(stderr, "ckh validate-backend: unknown model %s "
                        "(posix-weak, ext4-ordered)\n", v);
                return CKH_VALIDATE_BADINPUT;
            }
            i++;
        } else if (!strcmp(a, "--sector")) {
            if (strcmp(v, "512") && strcmp(v, "4096")) {
                fprintf(stderr, "ckh validate-backend: sector must be 512 or 4096, not %s\n", v);
                return CKH_VALIDATE_BADINPUT;
            }
            opt.sector_bytes = (uint32_t)atoi(v);
            i++;
        } else if (!strcmp(a, "--timeout")) {
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t <= 0 || t > 86400) {
                fprintf(stderr, "ckh validate-backend: bad timeout %s\n", v);
                return CKH_VALIDATE_BADINPUT;
            }
            opt.timeout_s = (unsigned)t;
            i++;
        } else if (!strcmp(a, "--only")) {
            opt.only = v;
            i++;
        } else if (!strcmp(a, "--junit")) {
            junit = v;
            i++;
        } else if (!strcmp(a, "--json")) {
            json = v;
            i++;
        } else if (!strcmp(a, "--html")) {
            html = v;
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "ckh validate-backend: unknown option %s\n", a);
            usage(stderr);
            return CKH_VALIDATE_BADINPUT;
        } else if (lib) {
            fprintf(stderr, "ckh validate-backend: one library at a time (%s, %s)\n", lib, a);
            return CKH_VALIDATE_BADINPUT;
        } else {
            lib = a;
        }
    }
    if (!lib) {
        fprintf(stderr, "ckh validate-backend: no library given\n");
        usage(stderr);
        return CKH_VALIDATE_BADINPUT;
    }
    opt.lib = lib;
    struct ckh_plugin *p = NULL;
    char msg[512];
    int rc = ckh_plugin_load(lib, &p, msg, sizeof(msg));
    if (rc) {
        fprintf(stderr, "ckh validate-backend: %s\n", msg);
        return rc == CKH_ENOMEM ? CKH_VALIDATE_INTERNAL : CKH_VALIDATE_BADINPUT;
    }
    struct ckh_validate_case *cases = NULL;
    size_t n = 0;
    int exit_code = CKH_VALIDATE_OK;
    rc = ckh_validate_backend(ckh_plugin_ops(p), &opt, &cases, &n);
    if (rc) {
        fprintf(stderr, "ckh validate-backend: %s\n", ckh_strerror(rc));
        ckh_plugin_unload(p);
        return CKH_VALIDATE_INTERNAL;
    }
    size_t nv = 0, nerr = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ckh_validate_case *c = &cases[i];
        nv += c->res.nvulns;
        nerr += c->rc != 0;
        if (c->rc)
            printf("ERROR %s: %s\n", c->name, ckh_strerror(c->rc));
        else if (!c->res.nvulns && !quiet)
            printf("PASS  %s (%" PRIu64 " states, %" PRIu64 " distinct checked)\n", c->name,
                   c->res.stats.states, c->res.stats.states_checked);
        for (size_t j = 0; j < c->res.nvulns; j++) {
            const struct ckh_vuln *v = &c->res.vulns[j];
            printf("FAIL  %s: %s: %s\n        crash state: %s\n        responsible step: %s\n",
                   c->name, ckh_vuln_name(v->kind), v->symptom, v->state,
                   v->step[0] ? v->step : "(not identified)");
        }
    }
    printf("%s (%s): %zu cases, %zu vulnerabilities, %zu errors; model %s, sector %u\n",
           ckh_plugin_ops(p)->name, lib, n, nv, nerr, model_name(opt.model), opt.sector_bytes);
    if (nv)
        exit_code = CKH_VALIDATE_VULN;
    if (nerr)
        exit_code = CKH_VALIDATE_INTERNAL;
    if (junit || json || html) {
        struct ckh_report_result *rs = NULL;
        if (ckh_validate_results(cases, n, &opt, &rs) != 0) {
            exit_code = CKH_VALIDATE_INTERNAL;
        } else {
            if ((junit && write_report(junit, 0, lib, cases, n, rs)) ||
                (json && write_report(json, 1, lib, cases, n, rs)) ||
                (html && write_report(html, 2, lib, cases, n, rs)))
                exit_code = CKH_VALIDATE_INTERNAL;
            for (size_t i = 0; i < n; i++)
                ckh_report_result_clear(&rs[i]);
            free(rs);
        }
    }
    ckh_validate_free(cases, n);
    ckh_plugin_unload(p);
    return exit_code;
}
