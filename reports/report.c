/* Result bookkeeping shared by the renderers: building, freeing and
 * counting struct ckh_report_result. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/alloc.h"
#include "ckh/assert.h"
#include "ckh/err.h"
#include "report.h"

void ckh_report_result_init(struct ckh_report_result *r)
{
    if (!r)
        return;
    memset(r, 0, sizeof(*r));
    r->first_divergent_step = -1;
}

void ckh_report_result_clear(struct ckh_report_result *r)
{
    if (!r)
        return;
    ckh_free(NULL, r->name);
    ckh_free(NULL, r->file);
    ckh_free(NULL, r->failed_oracle);
    ckh_free(NULL, r->message);
    ckh_free(NULL, r->replay);
    for (size_t i = 0; i < r->noracles; i++) {
        ckh_free(NULL, r->oracles[i].name);
        ckh_free(NULL, r->oracles[i].detail);
    }
    ckh_free(NULL, r->oracles);
    for (size_t i = 0; i < r->nplugins; i++) {
        ckh_free(NULL, r->plugins[i].role);
        ckh_free(NULL, r->plugins[i].name);
        ckh_free(NULL, r->plugins[i].path);
        ckh_free(NULL, r->plugins[i].id);
        ckh_free(NULL, r->plugins[i].shadowed);
    }
    ckh_free(NULL, r->plugins);
    ckh_report_timeline_free(r->timeline);
    ckh_report_result_init(r);
}

int ckh_report_set(char **field, const char *fmt, ...)
{
    if (!field || !fmt)
        return CKH_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0)
        return CKH_EINVAL;
    char *s = ckh_malloc(NULL, (size_t)len + 1);
    if (!s)
        return CKH_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    ckh_free(NULL, *field);
    *field = s;
    return 0;
}

int ckh_report_add_oracle(struct ckh_report_result *r, const char *name, bool passed,
                          const char *detail)
{
    if (!r || !name)
        return CKH_EINVAL;
    struct ckh_oracle_result *v =
        ckh_realloc(NULL, r->oracles, (r->noracles + 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    r->oracles = v;
    struct ckh_oracle_result *o = &v[r->noracles];
    o->passed = passed;
    o->name = ckh_strdup(NULL, name);
    o->detail = detail ? ckh_strdup(NULL, detail) : NULL;
    if (!o->name || (detail && !o->detail)) {
        ckh_free(NULL, o->name);
        ckh_free(NULL, o->detail);
        return CKH_ENOMEM;
    }
    r->noracles++;
    return 0;
}

const char *ckh_verdict_name(enum ckh_verdict v)
{
    switch (v) {
    case CKH_VERDICT_PASS:
        return "pass";
    case CKH_VERDICT_FAIL:
        return "fail";
    case CKH_VERDICT_ERROR:
        return "error";
    }
    return "?";
}

const char *ckh_report_state_name(enum ckh_report_state s)
{
    switch (s) {
    case CKH_REPORT_FINISHED:
        return "finished";
    case CKH_REPORT_INTERRUPTED:
        return "interrupted";
    case CKH_REPORT_NOT_STARTED:
        return "not-started";
    }
    return "?";
}

bool ckh_report_finished(const struct ckh_report_result *r)
{
    return r->state == CKH_REPORT_FINISHED;
}

void ckh_report_summarize(const struct ckh_report_result *rs, size_t n,
                          struct ckh_report_summary *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; rs && i < n; i++) {
        out->total++;
        out->wall_ms += rs[i].wall_ms;
        out->virtual_ns += rs[i].virtual_ns;
        if (!ckh_report_finished(&rs[i]))
            out->not_run++;
        else if (rs[i].verdict == CKH_VERDICT_PASS)
            out->passed++;
        else if (rs[i].verdict == CKH_VERDICT_FAIL)
            out->failed++;
        else
            out->errors++;
    }
    CKH_ASSERT(out->passed + out->failed + out->errors + out->not_run == out->total &&
               (!rs || out->total == n));
}

size_t ckh__report_utf8_next(const unsigned char *s, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xe0) == 0xc0) {
        len = 2;
        v = c & 0x1f;
        min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        v = c & 0x0f;
        min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4;
        v = c & 0x07;
        min = 0x10000;
    } else {
        *cp = UINT32_MAX;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) { /* also stops at the NUL */
            *cp = UINT32_MAX;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        *cp = UINT32_MAX;
        return 1;
    }
    *cp = v;
    return len;
}

void ckh__report_fmt_ns(uint64_t ns, char *buf, size_t size)
{
    if (ns == 0)
        snprintf(buf, size, "0s");
    else if (ns < 1000)
        snprintf(buf, size, "%lluns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, size, "%.1fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, size, "%.1fms", (double)ns / 1e6);
    else
        snprintf(buf, size, "%.3fs", (double)ns / 1e9);
}

int ckh_report_add_plugin(struct ckh_report_result *r, const char *role, const char *name,
                          const char *path, const char *id, const char *shadowed)
{
    if (!r || !role || !name || !path || !id)
        return CKH_EINVAL;
    struct ckh_report_plugin *v = ckh_realloc(NULL, r->plugins, (r->nplugins + 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    r->plugins = v;
    struct ckh_report_plugin *p = &v[r->nplugins];
    p->role = ckh_strdup(NULL, role);
    p->name = ckh_strdup(NULL, name);
    p->path = ckh_strdup(NULL, path);
    p->id = ckh_strdup(NULL, id);
    p->shadowed = shadowed ? ckh_strdup(NULL, shadowed) : NULL;
    if (!p->role || !p->name || !p->path || !p->id || (shadowed && !p->shadowed)) {
        ckh_free(NULL, p->role);
        ckh_free(NULL, p->name);
        ckh_free(NULL, p->path);
        ckh_free(NULL, p->id);
        ckh_free(NULL, p->shadowed);
        return CKH_ENOMEM;
    }
    r->nplugins++;
    return 0;
}
