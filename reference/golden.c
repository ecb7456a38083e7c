/* Golden results: parser, formatter and checker (format specified in
 * reference/golden/README.md). One line per node:
 *
 *   workload <name> nodes <N> epochs <E> node <node> total <T>
 *            blobs <name,name,...> digest <16 hex digits>
 *
 * (on one line; fields in this order; '#' starts a comment line; blank
 * lines are ignored).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/epoch_workload.h"

static int perr(char *msg, size_t msglen, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int perr(char *msg, size_t msglen, size_t line, const char *fmt, ...)
{
    va_list ap;
    int k = 0;
    if (msg && msglen) {
        k = snprintf(msg, msglen, "line %zu: ", line);
        if (k < 0 || (size_t)k >= msglen)
            k = 0;
        va_start(ap, fmt);
        ckh_verrf(msg + k, msglen - (size_t)k, CKH_EPARSE, fmt, ap);
        va_end(ap);
    }
    return CKH_EPARSE;
}

/* Copies the next space-separated token of *p into buf. */
static bool token(const char **p, char *buf, size_t n)
{
    const char *s = *p;
    size_t l = 0;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return false;
    while (s[l] && s[l] != ' ' && s[l] != '\t')
        l++;
    if (l >= n)
        return false;
    memcpy(buf, s, l);
    buf[l] = '\0';
    *p = s + l;
    return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v;
    if (!*s)
        return false;
    v = strtoll(s, &end, 10);
    if (*end)
        return false;
    *out = v;
    return true;
}

static int parse_line(const char *line, struct ckh_golden *g, size_t lineno, char *msg, size_t msglen)
{
    static const char *const keys[] = {"workload", "nodes", "epochs", "node", "total", "blobs", "digest"};
    char key[32], val[CKH_WORKLOAD_BLOBS_MAX];
    const char *p = line;
    int64_t v;
    memset(g, 0, sizeof *g);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (!token(&p, key, sizeof key) || strcmp(key, keys[k]) != 0)
            return perr(msg, msglen, lineno, "expected '%s'", keys[k]);
        if (!token(&p, val, sizeof val))
            return perr(msg, msglen, lineno, "missing or too long value for '%s'", keys[k]);
        switch (k) {
        case 0:
            if (strlen(val) >= sizeof g->workload)
                return perr(msg, msglen, lineno, "workload name too long");
            strcpy(g->workload, val);
            break;
        case 1:
            if (!parse_i64(val, &v) || v < 1 || v > 100000)
                return perr(msg, msglen, lineno, "bad node count '%s'", val);
            g->nodes = (int)v;
            break;
        case 2:
            if (!parse_i64(val, &g->epochs) || g->epochs < 0)
                return perr(msg, msglen, lineno, "bad epoch count '%s'", val);
            break;
        case 3:
            if (strlen(val) >= sizeof g->node)
                return perr(msg, msglen, lineno, "node name too long");
            strcpy(g->node, val);
            break;
        case 4:
            if (!parse_i64(val, &g->total))
                return perr(msg, msglen, lineno, "bad total '%s'", val);
            break;
        case 5:
            strcpy(g->blobs, strcmp(val, "-") == 0 ? "" : val);
            break;
        case 6: {
            char *end;
            if (strlen(val) != 16)
                return perr(msg, msglen, lineno, "digest must be 16 hex digits");
            g->digest = strtoull(val, &end, 16);
            if (*end)
                return perr(msg, msglen, lineno, "bad digest '%s'", val);
            break;
        }
        }
    }
    if (token(&p, key, sizeof key))
        return perr(msg, msglen, lineno, "unexpected '%s' at end of line", key);
    return 0;
}

int ckh_golden_parse(struct ckh_alloc *a, const char *text, struct ckh_golden **out, size_t *n,
                     char *msg, size_t msglen)
{
    struct ckh_golden *v = NULL;
    size_t count = 0, lineno = 0;
    const char *p = text;
    char line[2048];
    int rc = 0;
    if (!text || !out || !n)
        return CKH_EINVAL;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        const char *q;
        lineno++;
        if (l >= sizeof line) {
            rc = perr(msg, msglen, lineno, "line too long");
            goto fail;
        }
        memcpy(line, p, l);
        line[l] = '\0';
        if (l && line[l - 1] == '\r')
            line[l - 1] = '\0';
        p = nl ? nl + 1 : p + l;
        for (q = line; *q == ' ' || *q == '\t'; q++)
            ;
        if (!*q || *q == '#')
            continue;
        {
            struct ckh_golden *nv = ckh_realloc(a, v, (count + 1) * sizeof *nv);
            if (!nv) {
                rc = CKH_ENOMEM;
                goto fail;
            }
            v = nv;
        }
        if ((rc = parse_line(line, &v[count], lineno, msg, msglen)) != 0)
            goto fail;
        count++;
    }
    *out = v;
    *n = count;
    return 0;
fail:
    ckh_free(a, v);
    return rc;
}

int ckh_golden_format(const struct ckh_golden *g, char *buf, size_t n)
{
    int w;
    if (!g || !buf)
        return CKH_EINVAL;
    w = snprintf(buf, n, "workload %s nodes %d epochs %" PRId64 " node %s total %" PRId64
                 " blobs %s digest %016" PRIx64,
                 g->workload, g->nodes, g->epochs, g->node, g->total, g->blobs[0] ? g->blobs : "-",
                 g->digest);
    return w < 0 || (size_t)w >= n ? CKH_EINVAL : 0;
}

const struct ckh_golden *ckh_golden_find(const struct ckh_golden *v, size_t n, const char *workload,
                                         int nodes, const char *node)
{
    for (size_t i = 0; v && workload && node && i < n; i++)
        if (strcmp(v[i].workload, workload) == 0 && v[i].nodes == nodes &&
            strcmp(v[i].node, node) == 0)
            return &v[i];
    return NULL;
}

int ckh_golden_check(const struct ckh_golden *g, const struct ckh_workload_result *r, char *msg,
                     size_t msglen)
{
    if (!g || !r)
        return CKH_EINVAL;
    if (g->epochs != r->epochs || g->total != r->total || strcmp(g->blobs, r->blobs) != 0 ||
        g->digest != r->digest) {
        if (msg && msglen)
            snprintf(msg, msglen,
                     "%s %s: expected epochs %" PRId64 " total %" PRId64 " digest %016" PRIx64
                     ", got epochs %" PRId64 " total %" PRId64 " digest %016" PRIx64 "%s",
                     g->workload, g->node, g->epochs, g->total, g->digest, r->epochs, r->total,
                     r->digest, strcmp(g->blobs, r->blobs) ? " (blob names differ)" : "");
        return CKH_EMISMATCH;
    }
    return 0;
}
