/* JSON report.
 *
 * Schema (version CKH_REPORT_JSON_VERSION = 1; documented with an example
 * in docs/SCENARIOS.md, "JSON report"):
 *
 *   { "version": 1, "tool": "ckh", "suite": STRING,
 *     "timestamp": STRING|null, "hostname": STRING|null, "command": STRING|null,
 *     "interrupted": BOOL, "signal": N|null,
 *     "summary": { "total": N, "passed": N, "failed": N, "errors": N,
 *                  "not_run": N, "wall_ms": N, "virtual_ns": N },
 *     "scenarios": [ { "name": STRING, "file": STRING|null,
 *                      "status": "finished"|"interrupted"|"not-started",
 *                      "verdict": "pass"|"fail"|"error"|"not-run",
 *                      "failed_oracle": STRING|null, "message": STRING|null,
 *                      "first_divergent_step": N|null, "seed": N,
 *                      "replay": STRING|null, "virtual_ns": N, "wall_ms": N,
 *                      "runs": N, "restarts": N,
 *                      "plugins": [ { "role": STRING, "name": STRING,
 *                                     "path": STRING, "id": STRING,
 *                                     "shadowed": [ STRING ] } ],
 *                      "oracles": [ { "name": STRING, "passed": BOOL,
 *                                     "detail": STRING|null } ] } ] }
 *
 * A run interrupted by a signal has "interrupted": true and the signal;
 * its scenarios that did not finish (status "interrupted": running then,
 * or "not-started") have the verdict "not-run", which no other report
 * has, and a message saying so. Every key is always present, in this order. Integers are written exactly
 * (seeds may exceed 2^53: read them as 64-bit integers). Strings are valid
 * UTF-8: control characters are escaped as \uXXXX (or \n, \t, ...), an
 * invalid byte becomes U+FFFD.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "report.h"

void ckh_report_json_string(FILE *f, const char *s)
{
    if (!f)
        return;
    if (!s) {
        fputs("null", f);
        return;
    }
    const unsigned char *c = (const unsigned char *)s;
    fputc('"', f);
    while (*c) {
        uint32_t cp;
        size_t len = ckh__report_utf8_next(c, &cp);
        CKH_ASSERT(len >= 1 && len <= 4 && (cp == UINT32_MAX || cp <= 0x10ffff));
        switch (cp) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case UINT32_MAX:
            fputs("\\ufffd", f);
            break;
        default:
            if (cp < 0x20 || cp == 0x7f)
                fprintf(f, "\\u%04x", (unsigned)cp);
            else
                fwrite(c, 1, len, f);
        }
        c += len;
    }
    fputc('"', f);
}

static void key_str(FILE *f, const char *indent, const char *key, const char *val, bool comma)
{
    fprintf(f, "%s\"%s\": ", indent, key);
    ckh_report_json_string(f, val);
    fputs(comma ? ",\n" : "\n", f);
}

static void key_u64(FILE *f, const char *indent, const char *key, uint64_t v, bool comma)
{
    fprintf(f, "%s\"%s\": %llu%s\n", indent, key, (unsigned long long)v, comma ? "," : "");
}

static void scenario(FILE *f, const struct ckh_report_result *r, bool last)
{
    const char *in = "      ";
    CKH_ASSERT(r->noracles == 0 || r->oracles);
    fputs("    {\n", f);
    key_str(f, in, "name", r->name ? r->name : "?", true);
    key_str(f, in, "file", r->file, true);
    key_str(f, in, "status", ckh_report_state_name(r->state), true);
    key_str(f, in, "verdict", ckh_report_finished(r) ? ckh_verdict_name(r->verdict) : "not-run", true);
    key_str(f, in, "failed_oracle", r->failed_oracle, true);
    key_str(f, in, "message", r->message, true);
    if (r->first_divergent_step >= 0)
        fprintf(f, "%s\"first_divergent_step\": %lld,\n", in, (long long)r->first_divergent_step);
    else
        fprintf(f, "%s\"first_divergent_step\": null,\n", in);
    key_u64(f, in, "seed", r->seed, true);
    key_str(f, in, "replay", r->replay, true);
    key_u64(f, in, "virtual_ns", r->virtual_ns, true);
    key_u64(f, in, "wall_ms", r->wall_ms, true);
    key_u64(f, in, "runs", r->runs, true);
    key_u64(f, in, "restarts", r->restarts, true);
    fprintf(f, "%s\"plugins\": [", in);
    for (size_t i = 0; i < r->nplugins; i++) {
        const struct ckh_report_plugin *p = &r->plugins[i];
        fputs(i ? ",\n        {\"role\": " : "\n        {\"role\": ", f);
        ckh_report_json_string(f, p->role);
        fputs(", \"name\": ", f);
        ckh_report_json_string(f, p->name);
        fputs(", \"path\": ", f);
        ckh_report_json_string(f, p->path);
        fputs(", \"id\": ", f);
        ckh_report_json_string(f, p->id);
        fputs(", \"shadowed\": [", f);
        for (const char *s = p->shadowed, *nl; s && *s; s = nl ? nl + 1 : NULL) {
            nl = strchr(s, '\n');
            char one[4096];
            snprintf(one, sizeof one, "%.*s", (int)(nl ? (size_t)(nl - s) : strlen(s)), s);
            if (s != p->shadowed)
                fputs(", ", f);
            ckh_report_json_string(f, one);
        }
        fputs("]}", f);
    }
    fprintf(f, "%s],\n", r->nplugins ? "\n      " : "");
    fprintf(f, "%s\"oracles\": [", in);
    for (size_t i = 0; i < r->noracles; i++) {
        const struct ckh_oracle_result *o = &r->oracles[i];
        fputs(i ? ",\n        {\"name\": " : "\n        {\"name\": ", f);
        ckh_report_json_string(f, o->name ? o->name : "?");
        fprintf(f, ", \"passed\": %s, \"detail\": ", o->passed ? "true" : "false");
        ckh_report_json_string(f, o->detail);
        fputc('}', f);
    }
    fprintf(f, "%s]\n    }%s\n", r->noracles ? "\n      " : "", last ? "" : ",");
}

int ckh_report_json(FILE *f, const struct ckh_report_meta *meta,
                    const struct ckh_report_result *rs, size_t n)
{
    if (!f || (!rs && n))
        return CKH_EINVAL;
    struct ckh_report_summary sum;
    ckh_report_summarize(rs, n, &sum);
    CKH_ASSERT(sum.total == n);
    fprintf(f, "{\n  \"version\": %d,\n  \"tool\": \"ckh\",\n", CKH_REPORT_JSON_VERSION);
    key_str(f, "  ", "suite", meta && meta->suite ? meta->suite : "ckh", true);
    key_str(f, "  ", "timestamp", meta ? meta->timestamp : NULL, true);
    key_str(f, "  ", "hostname", meta ? meta->hostname : NULL, true);
    key_str(f, "  ", "command", meta ? meta->command : NULL, true);
    int sig = meta ? meta->interrupted_by : 0;
    if (sig)
        fprintf(f, "  \"interrupted\": true,\n  \"signal\": %d,\n", sig);
    else
        fputs("  \"interrupted\": false,\n  \"signal\": null,\n", f);
    fprintf(f,
            "  \"summary\": {\"total\": %zu, \"passed\": %zu, \"failed\": %zu, \"errors\": %zu, "
            "\"not_run\": %zu, \"wall_ms\": %llu, \"virtual_ns\": %llu},\n",
            sum.total, sum.passed, sum.failed, sum.errors, sum.not_run, (unsigned long long)sum.wall_ms,
            (unsigned long long)sum.virtual_ns);
    fputs(n ? "  \"scenarios\": [\n" : "  \"scenarios\": [", f);
    for (size_t i = 0; i < n; i++)
        scenario(f, &rs[i], i + 1 == n);
    fputs(n ? "  ]\n}\n" : "]\n}\n", f);
    if (fflush(f) != 0 || ferror(f))
        return -EIO;
    return 0;
}
