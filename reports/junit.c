/* JUnit XML report.
 *
 * Layout (the subset GitLab, Jenkins and GitHub test reporters read):
 *
 *   <?xml version="1.0" encoding="UTF-8"?>
 *   <testsuites name=S tests=N failures=F errors=E skipped=K time=T>
 *     <testsuite name=S tests=N failures=F errors=E skipped=K time=T
 *                [timestamp=..] [hostname=..]>
 *       [<properties>[<property name="command" value=..>]
 *                    [<property name="interrupted" value="signal N (NAME)">]</properties>]
 *       <testcase name=SCENARIO classname=FOLDER file=PATH time=T>
 *         [<properties><property name="plugin.ROLE" value="NAME: PATH (ID)"/>
 *                      <property name="plugin.ROLE.shadowed" value=PATH/>...</properties>]
 *         <failure message=ONE-LINE type=ORACLE>TEXT + replay</failure>   (fail)
 *         <error message=ONE-LINE type="error">TEXT + replay</error>      (error)
 *         <skipped message=ONE-LINE/>                  (not run: interrupted)
 *         <system-out>[what a pass detected as expected] seed, runs, virtual time,
 *                     oracle list</system-out>
 *       </testcase> ...
 *     </testsuite>
 *   </testsuites>
 *
 * skipped counts the scenarios of an interrupted run that did not finish
 * (each a <skipped> whose message says why; no <system-out>), 0 otherwise.
 * One <testsuite> per invocation; classname is the scenario's folder with
 * '/' as '.', so CI groups scenarios by folder. Times are wall seconds with
 * millisecond precision. Text is escaped for XML 1.0: & < > " ' become
 * entities; tab, newline and carriage return are kept in text and written
 * as character references in attributes; every other control character
 * and every invalid UTF-8 byte is written as the visible text "\xNN",
 * since XML 1.0 cannot carry them at all.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "report.h"

static void xml_escape(FILE *f, const char *s, bool attr)
{
    const unsigned char *c = (const unsigned char *)(s ? s : "");
    while (*c) {
        uint32_t cp;
        size_t len = ckh__report_utf8_next(c, &cp);
        if (cp == UINT32_MAX || cp == 0xfffe || cp == 0xffff) {
            fprintf(f, "\\x%02x", c[0]);
        } else if (cp == '&') {
            fputs("&amp;", f);
        } else if (cp == '<') {
            fputs("&lt;", f);
        } else if (cp == '>') {
            fputs("&gt;", f);
        } else if (cp == '"') {
            fputs("&quot;", f);
        } else if (cp == '\'') {
            fputs("&apos;", f);
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            if (attr)
                fprintf(f, "&#%u;", (unsigned)cp);
            else
                fputc((int)cp, f);
        } else if (cp < 0x20 || cp == 0x7f) {
            fprintf(f, "\\x%02x", (unsigned)cp);
        } else {
            fwrite(c, 1, len, f);
        }
        c += len;
    }
}

static void attr(FILE *f, const char *name, const char *value)
{
    fprintf(f, " %s=\"", name);
    xml_escape(f, value, true);
    fputc('"', f);
}

static void time_attr(FILE *f, uint64_t ms)
{
    fprintf(f, " time=\"%llu.%03llu\"", (unsigned long long)(ms / 1000),
            (unsigned long long)(ms % 1000));
}

void ckh_report_junit_classname(const char *file, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (!slash || slash == file) {
        snprintf(buf, size, "ckh");
        return;
    }
    const char *start = file;
    while (start[0] == '.' && start[1] == '/') /* "./scenarios/x.yaml" */
        start += 2;
    size_t len = slash > start ? (size_t)(slash - start) : 0;
    if (len == 0) {
        snprintf(buf, size, "ckh");
        return;
    }
    if (len >= size)
        len = size - 1;
    for (size_t i = 0; i < len; i++)
        buf[i] = start[i] == '/' ? '.' : start[i];
    buf[len] = '\0';
    if (buf[0] == '.') /* an absolute path: drop the leading dot */
        memmove(buf, buf + 1, len);
}

/* The message attribute: the first line of the message, or a default. */
static void first_line(const char *msg, const char *dflt, char *buf, size_t size)
{
    const char *m = msg && *msg ? msg : dflt;
    size_t len = strcspn(m, "\n");
    if (len >= size)
        len = size - 1;
    memcpy(buf, m, len);
    buf[len] = '\0';
}

static void testcase(FILE *f, const struct ckh_report_result *r)
{
    char cls[256], one[512], vt[32];
    ckh_report_junit_classname(r->file, cls, sizeof(cls));
    fputs("    <testcase", f);
    attr(f, "name", r->name ? r->name : "?");
    attr(f, "classname", cls);
    if (r->file)
        attr(f, "file", r->file);
    time_attr(f, r->wall_ms);
    fputs(">\n", f);
    if (r->nplugins)
        fputs("      <properties>\n", f);
    for (size_t i = 0; i < r->nplugins; i++) {
        const struct ckh_report_plugin *p = &r->plugins[i];
        char key[64], value[8192];
        snprintf(key, sizeof key, "plugin.%s", p->role);
        snprintf(value, sizeof value, "%s: %s (%s)", p->name, p->path, p->id);
        fputs("        <property", f);
        attr(f, "name", key);
        attr(f, "value", value);
        fputs("/>\n", f);
        snprintf(key, sizeof key, "plugin.%s.shadowed", p->role);
        for (const char *s = p->shadowed, *nl; s && *s; s = nl ? nl + 1 : NULL) {
            nl = strchr(s, '\n');
            snprintf(value, sizeof value, "%.*s", (int)(nl ? (size_t)(nl - s) : strlen(s)), s);
            fputs("        <property", f);
            attr(f, "name", key);
            attr(f, "value", value);
            fputs("/>\n", f);
        }
    }
    if (r->nplugins)
        fputs("      </properties>\n", f);
    if (!ckh_report_finished(r)) {
        first_line(r->message, "not run: the run was interrupted", one, sizeof(one));
        fputs("      <skipped", f);
        attr(f, "message", one);
        fputs("/>\n    </testcase>\n", f);
        return;
    }
    if (r->verdict != CKH_VERDICT_PASS) {
        bool failure = r->verdict == CKH_VERDICT_FAIL;
        const char *tag = failure ? "failure" : "error";
        first_line(r->message, failure ? "scenario failed" : "scenario could not run", one,
                   sizeof(one));
        fprintf(f, "      <%s", tag);
        if (failure && r->failed_oracle) {
            char full[640];
            snprintf(full, sizeof(full), "%s: %s", r->failed_oracle, one);
            attr(f, "message", full);
            attr(f, "type", r->failed_oracle);
        } else {
            attr(f, "message", one);
            attr(f, "type", tag);
        }
        fputs(">", f);
        if (r->failed_oracle) {
            fputs("oracle: ", f);
            xml_escape(f, r->failed_oracle, false);
            fputc('\n', f);
        }
        if (r->message) {
            xml_escape(f, r->message, false);
            fputc('\n', f);
        }
        if (r->first_divergent_step >= 0)
            fprintf(f, "first divergent step: %lld\n", (long long)r->first_divergent_step);
        fprintf(f, "seed: %llu\n", (unsigned long long)r->seed);
        if (r->replay) {
            fputs("replay: ", f);
            xml_escape(f, r->replay, false);
            fputc('\n', f);
        }
        fprintf(f, "</%s>\n", tag);
    }
    ckh__report_fmt_ns(r->virtual_ns, vt, sizeof(vt));
    fputs("      <system-out>", f);
    if (r->verdict == CKH_VERDICT_PASS && r->message) { /* what it detected as expected */
        xml_escape(f, r->message, false);
        fputc('\n', f);
    }
    fprintf(f, "seed: %llu\nruns: %u\nrestarts: %u\nvirtual time: %s\n",
            (unsigned long long)r->seed, r->runs, r->restarts, vt);
    for (size_t i = 0; i < r->noracles; i++) {
        const struct ckh_oracle_result *o = &r->oracles[i];
        fputs("oracle ", f);
        xml_escape(f, o->name, false);
        fputs(o->passed ? ": pass" : ": FAIL", f);
        if (o->detail) {
            fputs(": ", f);
            xml_escape(f, o->detail, false);
        }
        fputc('\n', f);
    }
    fputs("</system-out>\n    </testcase>\n", f);
}

int ckh_report_junit(FILE *f, const struct ckh_report_meta *meta,
                     const struct ckh_report_result *rs, size_t n)
{
    if (!f || (!rs && n))
        return CKH_EINVAL;
    struct ckh_report_summary sum;
    ckh_report_summarize(rs, n, &sum);
    const char *suite = meta && meta->suite ? meta->suite : "ckh";
    char counts[160];
    snprintf(counts, sizeof(counts), " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\"",
             sum.total, sum.failed, sum.errors, sum.not_run);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", f);
    attr(f, "name", suite);
    fputs(counts, f);
    time_attr(f, sum.wall_ms);
    fputs(">\n  <testsuite", f);
    attr(f, "name", suite);
    fputs(counts, f);
    time_attr(f, sum.wall_ms);
    if (meta && meta->timestamp)
        attr(f, "timestamp", meta->timestamp);
    if (meta && meta->hostname)
        attr(f, "hostname", meta->hostname);
    fputs(">\n", f);
    if (meta && (meta->command || meta->interrupted_by)) {
        fputs("    <properties>\n", f);
        if (meta->command) {
            fputs("      <property name=\"command\"", f);
            attr(f, "value", meta->command);
            fputs("/>\n", f);
        }
        if (meta->interrupted_by) {
            char sig[96];
            snprintf(sig, sizeof(sig), "signal %d (%s)", meta->interrupted_by, strsignal(meta->interrupted_by));
            fputs("      <property name=\"interrupted\"", f);
            attr(f, "value", sig);
            fputs("/>\n", f);
        }
        fputs("    </properties>\n", f);
    }
    for (size_t i = 0; i < n; i++)
        testcase(f, &rs[i]);
    fputs("  </testsuite>\n</testsuites>\n", f);
    if (fflush(f) != 0 || ferror(f))
        return -EIO;
    return 0;
}
