/* `ckh validate-backend`: the fault catalogue and the crash explorer,
 * each case isolated in a forked child.
 *
 * Spec:
 * V0. Loading: the library is first loaded and checked in a forked child
 *     (ckh_plugin_probe, harness/exec/plugin.c P3) within the case time
 *     limit. An entry point or constructor that crashes or hangs is a
 *     verdict: case "load" with a BACKEND_CRASHED / BACKEND_HUNG finding,
 *     exit 1. Any other refusal (not a plugin, bad table) is bad input.
 *     Only a library that passed the probe is loaded into ckh itself.
 * V1. Cases, in this order: crash:new-epoch, crash:replace, crash:two-ranks,
 *     crash:retention (harness/search/explore.c E1-E6, E8),
 *     crash:node-local (E9), contract:load-names, contract:all-or-nothing,
 *     contract:epochs (E10), fault:EIO, fault:ENOSPC, fault:EDQUOT,
 *     fault:EACCES, fault:EROFS, fault:ENOENT, fault:fsync-lost,
 *     fault:short-write, at-rest, leak (E7). --only TEXT selects the cases whose name contains TEXT,
 *     --case NAME the one case of that name.
 * V4. Replay: each finding carries the index K of the state that showed
 *     it (ckh_vuln.state_index); the terminal prints, per finding, the
 *     command that checks that one state alone (`--case NAME --state K`
 *     with the model and sector of the run), and that command reports the
 *     same finding.
 * V2. Isolation: each case is a job of the worker pool (harness/exec/pool.h):
 *     a child that sends its findings back through the pool's pipe as
 *     fixed-size records and exits. Cases run one after another, each at
 *     most timeout_s and under the memory limit; a child killed by a signal
 *     (or that reached the memory limit) is a BACKEND_CRASHED finding, one
 *     past its time a BACKEND_HUNG finding (the child is SIGKILLed). ckh
 *     itself never runs backend code outside a child, except the library's
 *     constructors and entry point, and those only after the probe (V0)
 *     saw them return in a child.
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
#include "exec/plugin.h"
#include "exec/pool.h"
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
    {"crash:node-local", -1, CKH_EXPLORE_NODE_LOCAL, 0},
    {"contract:load-names", -1, CKH_EXPLORE_LOAD_NAMES, 0},
    {"contract:all-or-nothing", -1, CKH_EXPLORE_ALL_OR_NOTHING, 0},
    {"contract:epochs", -1, CKH_EXPLORE_EPOCHS, 0},
    {"fault:EIO", CKH_FAULTS_ERRNO, 0, EIO},
    {"fault:ENOSPC", CKH_FAULTS_ERRNO, 0, ENOSPC},
    {"fault:EDQUOT", CKH_FAULTS_ERRNO, 0, EDQUOT},
    {"fault:EACCES", CKH_FAULTS_ERRNO, 0, EACCES},
    {"fault:EROFS", CKH_FAULTS_ERRNO, 0, EROFS},
    {"fault:ENOENT", CKH_FAULTS_ERRNO, 0, ENOENT},
    {"fault:fsync-lost", CKH_FAULTS_FSYNC, 0, 0},
    {"fault:short-write", CKH_FAULTS_SHORT_WRITE, 0, 0},
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

/* The cases of one validation, as the pool's callbacks see them. */
struct vrun {
    const struct ckh_backend_ops *ops;       /* the backend */
    const struct ckh_validate_options *opt;  /* options */
    const struct vcase *sel[NVCASES];        /* the selected cases, in order */
    struct ckh_validate_case *out;           /* one result per selected case */
    struct ckh_pool_limits limits;           /* per case */
    int rc;                                  /* first failure of the parent */
};

/* The pool's run: one case in a child; its findings go back as fixed-size
 * records (V2). */
static int case_job(void *ctx, uint64_t k, int fd)
{
    const struct vrun *v = ctx;
    const struct vcase *vc = v->sel[k];
    struct ckh_explore_config cfg;
    struct ckh_explore_result res;
    struct vwire w;
    memset(&cfg, 0, sizeof(cfg));
    cfg.ops = v->ops;
    cfg.model = v->opt->model;
    cfg.sector_bytes = v->opt->sector_bytes;
    cfg.seed = 1;
    cfg.scenarios = vc->scen;
    cfg.ranks = v->opt->ranks;
    cfg.only_state = v->opt->state;
    memset(&w, 0, sizeof(w));
    if (vc->family < 0)
        w.rc = ckh_explore_run(&cfg, &res, NULL, 0);
    else
        w.rc = ckh_explore_faults(&cfg, (enum ckh_fault_family)vc->family, vc->err, &res, NULL, 0);
    if (w.rc == 0) {
        w.stats = res.stats;
        w.nvulns = res.nvulns;
    }
    int bad = ckh_pool_reply(fd, &w, sizeof(w));
    for (size_t i = 0; !bad && w.rc == 0 && i < res.nvulns; i++)
        bad = ckh_pool_reply(fd, &res.vulns[i], sizeof(res.vulns[i]));
    if (w.rc == 0)
        ckh_explore_result_free(&res);
    return bad ? 3 : 0;
}

/* A case that never answered: its finding, with the state it ran in. */
static int add_finding(struct ckh_explore_result *r, enum ckh_vuln_kind k, const char *scenario,
                       const char *symptom)
{
    return ckh__explore_vuln_add(r, k, scenario, symptom, "isolated child process", NULL);
}

/* A child's answer: the header and its records. */
static int case_answer(struct ckh_validate_case *out, const char *buf, size_t n)
{
    struct vwire w;
    memcpy(&w, buf, sizeof(w));
    out->rc = w.rc;
    out->res.stats = w.stats;
    if (w.nvulns > (n - sizeof(w)) / sizeof(struct ckh_vuln)) {
        out->rc = CKH_EINTERNAL;
        return 0;
    }
    if (!w.nvulns)
        return 0;
    out->res.vulns = malloc(w.nvulns * sizeof(struct ckh_vuln));
    if (!out->res.vulns)
        return CKH_ENOMEM;
    memcpy(out->res.vulns, buf + sizeof(w), w.nvulns * sizeof(struct ckh_vuln));
    out->res.nvulns = w.nvulns;
    return 0;
}

/* The pool's done: the answer, or the finding of how the child ended (V2). */
static void case_done(void *ctx, uint64_t k, const struct ckh_pool_result *r)
{
    struct vrun *v = ctx;
    const struct vcase *vc = v->sel[k];
    struct ckh_validate_case *out = &v->out[k];
    char sym[200], why[160];
    int rc = 0;
    ckh_pool_describe(r, &v->limits, why, sizeof(why));
    if (r->status == CKH_POOL_TIME_LIMIT) {
        snprintf(sym, sizeof(sym), "the case did not finish within %u s", v->limits.wall_s);
        rc = add_finding(&out->res, CKH_VULN_BACKEND_HUNG, vc->name, sym);
    } else if (r->status == CKH_POOL_SIGNALED) {
        snprintf(sym, sizeof(sym), "the backend killed the process with signal %d (%s)", r->code,
                 strsignal(r->code));
        rc = add_finding(&out->res, CKH_VULN_BACKEND_CRASHED, vc->name, sym);
    } else if (r->status == CKH_POOL_MEM_LIMIT) {
        snprintf(sym, sizeof(sym), "the case's process: %s (--mem-limit)", why);
        rc = add_finding(&out->res, CKH_VULN_BACKEND_CRASHED, vc->name, sym);
    } else if (r->status != CKH_POOL_OK || r->len < sizeof(struct vwire)) {
        snprintf(sym, sizeof(sym), "the case's process exited with status %d without a result",
                 r->code);
        rc = add_finding(&out->res, CKH_VULN_BACKEND_CRASHED, vc->name, sym);
    } else {
        rc = case_answer(out, r->data, r->len);
    }
    if (rc && !v->rc)
        v->rc = rc;
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
    struct vrun v = {.ops = ops, .opt = opt,
                     .limits = {opt->timeout_s ? opt->timeout_s : 10, opt->mem_bytes}};
    size_t n = 0;
    for (size_t i = 0; i < NVCASES; i++)
        if ((!opt->only || strstr(vcases[i].name, opt->only)) &&
            (!opt->case_name || strcmp(vcases[i].name, opt->case_name) == 0))
            v.sel[n++] = &vcases[i];
    if (opt->state && n != 1)
        return CKH_EINVAL; /* also --case load with --state: load has no states */
    v.out = calloc(NVCASES, sizeof(*v.out));
    if (!v.out)
        return CKH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        snprintf(v.out[i].name, sizeof(v.out[i].name), "%s", v.sel[i]->name);
    /* Cases run one after another: a backend may share state on disk. */
    static const struct ckh_pool_ops pool_ops = {.run = case_job, .done = case_done};
    struct ckh_pool_config cfg = {.workers = 1, .njobs = n, .limits = v.limits,
                                  .ops = &pool_ops, .ctx = &v};
    int rc = ckh_pool_run(&cfg);
    rc = rc ? rc : v.rc;
    if (rc) {
        ckh_validate_free(v.out, n);
        return rc;
    }
    *cases = v.out;
    *ncases = n;
    return 0;
}

void ckh_validate_free(struct ckh_validate_case *cases, size_t n)
{
    for (size_t i = 0; cases && i < n; i++)
        ckh_explore_result_free(&cases[i].res);
    free(cases);
}

const char *ckh_validate_model_name(enum ckh_crash_model m)
{
    return m == CKH_CRASH_EXT4_ORDERED ? "ext4-ordered" : "posix-weak";
}

void ckh_validate_replay_cmd(const struct ckh_validate_options *opt, const char *case_name,
                             const struct ckh_vuln *v, char *buf, size_t n)
{
    char state[40] = "", ranks[32] = "";
    if (strcmp(case_name, "load") == 0) { /* V0: loading alone reproduces it */
        snprintf(buf, n, "ckh validate-backend %s --case load --timeout %u",
                 opt->lib ? opt->lib : "LIB.so", opt->timeout_s ? opt->timeout_s : 10);
        return;
    }
    if (v && v->state_index)
        snprintf(state, sizeof(state), " --state %" PRIu64, v->state_index);
    if (opt->ranks)
        snprintf(ranks, sizeof(ranks), " --ranks %u", opt->ranks);
    snprintf(buf, n, "ckh validate-backend %s --case %s%s%s --model %s --sector %u",
             opt->lib ? opt->lib : "LIB.so", case_name, state, ranks, ckh_validate_model_name(opt->model),
             opt->sector_bytes ? opt->sector_bytes : 512);
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
        char cmd[1200];
        ckh_validate_replay_cmd(opt, c->name, c->res.nvulns ? &c->res.vulns[0] : NULL, cmd,
                                sizeof(cmd));
        rc = rc ? rc : ckh_report_set(&r->replay, "%s", cmd);
        r->runs = (uint32_t)c->res.stats.states_checked;
        r->verdict = c->rc ? CKH_VERDICT_ERROR
                           : c->res.nvulns ? CKH_VERDICT_FAIL : CKH_VERDICT_PASS;
        if (c->rc && rc == 0)
            rc = ckh_report_set(&r->message, "internal error: %s", ckh_strerror(c->rc));
        for (size_t j = 0; j < c->res.nvulns && rc == 0; j++) {
            const struct ckh_vuln *v = &c->res.vulns[j];
            char *detail = NULL;
            ckh_validate_replay_cmd(opt, c->name, v, cmd, sizeof(cmd));
            rc = ckh_report_set(&detail, "%s; crash state: %s; responsible step: %s; replay: %s",
                                v->symptom, v->state, v->step[0] ? v->step : "(not identified)",
                                cmd);
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

const char *ckh_validate_case_name(size_t i)
{
    return i < NVCASES ? vcases[i].name : NULL;
}
