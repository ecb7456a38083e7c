/* Terminal output: one line per scenario, a closing summary and a progress
 * line.
 *
 * Format (stable; scripts may grep it):
 *   PASS  NAME  (R runs, VIRTUAL virtual, W ms)   (no VIRTUAL for real programs)
 *   PASS  NAME  (R runs, ...): detected as expected by ORACLE: ...
 *                                            (expect.detect or expect.outcome)
 *   FAIL  NAME: ORACLE: FIRST LINE OF MESSAGE
 *         MORE LINES OF THE MESSAGE
 *         first divergent step: N            (when known)
 *         replay: COMMAND
 *   ERROR NAME: MESSAGE
 *         replay: COMMAND                    (when there is one)
 *   NOT RUN NAME: MESSAGE                    (an interrupted run's unfinished scenario)
 * Under the first line of each, for every plugin library of the job:
 *         plugin ROLE NAME: PATH (build-id HEX | content-hash HEX)
 *         warning: NAME also names OTHER, shadowed (one line per file)
 * The summary repeats every failure and error, then
 *   "N scenarios: P passed, F failed, E errors", and when some did not
 *   finish (an interrupted run) "K not run (interrupted)".
 * Control characters other than newline and tab in names and messages are
 * shown as '?', so a message cannot drive the terminal.
 */
#include <stdio.h>
#include <string.h>

#include "report.h"

#define RED "\033[31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define RESET "\033[0m"

/* Writes s; every newline is followed by `indent`. */
static void text(FILE *f, const char *s, const char *indent)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '\n') {
            fputc('\n', f);
            fputs(indent, f);
        } else if ((*c < 0x20 && *c != '\t') || *c == 0x7f) {
            fputc('?', f);
        } else {
            fputc(*c, f);
        }
    }
}

/* The plugin lines under a verdict's first line. */
static void plugins(FILE *f, const struct ckh_report_result *r, const char *ind, bool color)
{
    for (size_t i = 0; i < r->nplugins; i++) {
        const struct ckh_report_plugin *p = &r->plugins[i];
        fprintf(f, "%splugin %s ", ind, p->role);
        text(f, p->name, ind);
        fputs(": ", f);
        text(f, p->path, ind);
        fputs(" (", f);
        text(f, p->id, ind);
        fputs(")\n", f);
        for (const char *s = p->shadowed, *nl; s && *s; s = nl ? nl + 1 : NULL) {
            nl = strchr(s, '\n');
            fprintf(f, "%s%swarning:%s ", ind, color ? YELLOW : "", color ? RESET : "");
            text(f, p->name, ind);
            fputs(" also names ", f);
            for (const char *c = s; nl ? c < nl : *c; c++)
                fputc((*c < 0x20 && *c != '\t') || *c == 0x7f ? '?' : *c, f);
            fputs(", shadowed (the first file on the search path is taken)\n", f);
        }
    }
}

void ckh_report_term_result(FILE *f, const struct ckh_report_result *r, bool color)
{
    if (!f || !r)
        return;
    const char *ind = "      ";
    if (!ckh_report_finished(r)) { /* a scenario of an interrupted run */
        fputs("NOT RUN ", f);
        text(f, r->name, ind);
        fputs(": ", f);
        text(f, r->message ? r->message : "the run was interrupted", ind);
        fputc('\n', f);
        return;
    }
    if (r->verdict == CKH_VERDICT_PASS) {
        char vt[32];
        ckh__report_fmt_ns(r->virtual_ns, vt, sizeof(vt));
        fprintf(f, "%sPASS%s  ", color ? GREEN : "", color ? RESET : "");
        text(f, r->name, ind);
        if (r->virtual_ns) /* a real program's runs have no virtual time */
            fprintf(f, "  (%u run%s, %s virtual, %llu ms)", r->runs, r->runs == 1 ? "" : "s", vt,
                    (unsigned long long)r->wall_ms);
        else
            fprintf(f, "  (%u run%s, %llu ms)", r->runs, r->runs == 1 ? "" : "s", (unsigned long long)r->wall_ms);
        if (r->message) { /* what a planted bug or an expected outcome was detected by */
            fputs(": ", f);
            text(f, r->message, ind);
        }
        fputc('\n', f);
        plugins(f, r, ind, color);
        return;
    }
    bool failure = r->verdict == CKH_VERDICT_FAIL;
    fprintf(f, "%s%s%s ", color ? (failure ? RED : YELLOW) : "", failure ? "FAIL " : "ERROR",
            color ? RESET : "");
    text(f, r->name, ind);
    fputs(": ", f);
    if (r->failed_oracle) {
        text(f, r->failed_oracle, ind);
        fputs(": ", f);
    }
    text(f, r->message ? r->message : (failure ? "scenario failed" : "scenario could not run"),
         ind);
    fputc('\n', f);
    plugins(f, r, ind, color);
    if (r->first_divergent_step >= 0)
        fprintf(f, "%sfirst divergent step: %lld\n", ind, (long long)r->first_divergent_step);
    if (r->replay) {
        fprintf(f, "%sreplay: ", ind);
        text(f, r->replay, ind);
        fputc('\n', f);
    }
}

void ckh_report_term_summary(FILE *f, const struct ckh_report_result *rs, size_t n, bool color)
{
    if (!f || (!rs && n))
        return;
    struct ckh_report_summary sum;
    ckh_report_summarize(rs, n, &sum);
    if (sum.failed || sum.errors) {
        fputs("\nFailures:\n", f);
        for (size_t i = 0; i < n; i++)
            if (ckh_report_finished(&rs[i]) && rs[i].verdict != CKH_VERDICT_PASS)
                ckh_report_term_result(f, &rs[i], color);
    }
    fprintf(f, "\n%zu scenario%s: %s%zu passed%s, %s%zu failed%s, %s%zu error%s%s\n", sum.total,
            sum.total == 1 ? "" : "s", color && sum.passed ? GREEN : "", sum.passed,
            color && sum.passed ? RESET : "", color && sum.failed ? RED : "", sum.failed,
            color && sum.failed ? RESET : "", color && sum.errors ? YELLOW : "", sum.errors,
            sum.errors == 1 ? "" : "s", color && sum.errors ? RESET : "");
    if (sum.not_run) /* an interrupted run: after the line a script may read */
        fprintf(f, "%zu not run (interrupted)\n", sum.not_run);
}

int ckh_report_progress_format(const struct ckh_report_progress *p, unsigned width, char *buf,
                               size_t size)
{
    if (!p || (!buf && size))
        return -1;
    char eta[32];
    if (p->done == 0 || p->done > p->total) {
        snprintf(eta, sizeof(eta), "--:--");
    } else {
        uint64_t left_ms = p->elapsed_ms / p->done * (p->total - p->done) +
                           (p->elapsed_ms % p->done) * (p->total - p->done) / p->done;
        uint64_t s = (left_ms + 999) / 1000;
        if (s >= 3600)
            snprintf(eta, sizeof(eta), "%llu:%02llu:%02llu", (unsigned long long)(s / 3600),
                     (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
        else
            snprintf(eta, sizeof(eta), "%llu:%02llu", (unsigned long long)(s / 60),
                     (unsigned long long)(s % 60));
    }
    char tail[160];
    int tl = snprintf(tail, sizeof(tail), "  %zu/%zu  %zu failed  %zu error%s  ~%s left", p->done,
                      p->total, p->failed, p->errors, p->errors == 1 ? "" : "s", eta);
    if (!width)
        width = 80;
    int bar = (int)width - tl - 2;
    if (bar < 10)
        bar = 10;
    if (bar > 60)
        bar = 60;
    char b[64];
    size_t filled = p->total ? (p->done >= p->total ? (size_t)bar : p->done * (size_t)bar / p->total)
                             : (size_t)bar;
    for (int i = 0; i < bar; i++)
        b[i] = (size_t)i < filled ? '#' : '.';
    b[bar] = '\0';
    return snprintf(buf, size, "[%s]%s", b, tail);
}

void ckh_report_progress_print(FILE *f, const struct ckh_report_progress *p, bool tty)
{
    if (!f || !p)
        return;
    if (tty) {
        char line[256];
        ckh_report_progress_format(p, 80, line, sizeof(line));
        fprintf(f, "\r%s\033[K", line);
    } else {
        fprintf(f, "progress: %zu/%zu done, %zu failed, %zu error%s\n", p->done, p->total,
                p->failed, p->errors, p->errors == 1 ? "" : "s");
    }
    fflush(f);
}

void ckh_report_progress_clear(FILE *f, bool tty)
{
    if (f && tty) {
        fputs("\r\033[K", f);
        fflush(f);
    }
}
