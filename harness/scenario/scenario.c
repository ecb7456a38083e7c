/* The scenario parser: YAML text -> struct ckh_scenario.
 *
 * Specification (full reference with examples in docs/SCENARIOS.md):
 *   - A scenario file holds exactly one YAML document whose root is a
 *     mapping with the keys name, description, seed, tags, job (required),
 *     faults, restart and expect.
 *   - Every mapping is closed: an unknown key is an error that names the
 *     closest known key ("did you mean"), a duplicate key is an error.
 *   - Scalars are typed by the key that holds them (integer ranges, sizes
 *     with units, durations with units, enums, booleans, absolute simulated
 *     paths). Free-form maps (job.options, expect.values) keep each value's
 *     text and its inferred type.
 *   - A simulated path must be absolute and may not contain a ".."
 *     component; a host path (expect.golden) must be relative without "..".
 *   - Every error carries file, 1-based line and column of the offending
 *     node and a message saying what was expected.
 *
 * Map of this file:
 *   1. arena and small string helpers
 *   2. errors and "did you mean"
 *   3. scalar conversions (integers, sizes, durations, enums, paths)
 *   4. closed mappings (key checks and lookups)
 *   5. sections: job (disks, saver, options), faults, restart, expect
 *   6. the public entry points
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "scenario/scenario.h"

/* ==== 1. arena and small string helpers ==== */

/* Every allocation of a scenario is one block on this list. */
struct ckh__scn_arena {
    struct ckh__scn_arena *next; /* older block */
    max_align_t data[];          /* the caller's bytes */
};

static void *ar_alloc(struct ckh_scenario *s, size_t n)
{
    struct ckh__scn_arena *b = ckh_malloc(s->alloc, sizeof(*b) + n);
    if (!b)
        return NULL;
    memset(b->data, 0, n);
    b->next = s->arena;
    s->arena = b;
    return b->data;
}

static char *ar_strndup(struct ckh_scenario *s, const char *p, size_t n)
{
    char *d = ar_alloc(s, n + 1);
    if (!d)
        return NULL;
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

static char *ar_strdup(struct ckh_scenario *s, const char *p)
{
    return ar_strndup(s, p, strlen(p));
}

/* ==== 2. errors and "did you mean" ==== */

struct pctx {
    yaml_document_t doc;            /* the loaded document */
    const char *file;               /* name used in messages */
    struct ckh_scenario *s;         /* the scenario being built */
    const struct ckh_scn_options *opts; /* accepted names */
    struct ckh_scn_error *err;      /* where to report (never NULL here) */
    const char *text;               /* the raw text (for hints on YAML errors) */
    size_t len;                     /* its length */
};

static void err_set(struct ckh_scn_error *err, const char *file, int line, int col, int code,
                    const char *fmt, va_list ap)
{
    snprintf(err->file, sizeof(err->file), "%s", file ? file : "<string>");
    err->line = line;
    err->column = col;
    err->code = code;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

__attribute__((format(printf, 4, 5))) static int fail(struct pctx *p, const yaml_node_t *n,
                                                      int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_set(p->err, p->file, n ? (int)n->start_mark.line + 1 : 0,
            n ? (int)n->start_mark.column + 1 : 0, code, fmt, ap);
    va_end(ap);
    return code;
}

size_t ckh_scn_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) /* names are short; long strings never suggest */
        return la > lb ? la : lb;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The closest name to word, or NULL when none is close enough (distance
 * at most 2, and less than the word's length). Ties go to the earlier. */
static const char *suggest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = ckh_scn_edit_distance(word, names[i]);
        if (d < best_d && d < strlen(word)) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

/* Writes "; did you mean 'x'?" or "; expected one of: a, b" into buf. */
static void hint(char *buf, size_t size, const char *word, const char *const *names, size_t n)
{
    const char *s = suggest(word, names, n);
    if (s) {
        snprintf(buf, size, "; did you mean '%s'?", s);
        return;
    }
    size_t used = (size_t)snprintf(buf, size, "; expected one of:");
    for (size_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s %s", i ? "," : "", names[i]);
}

/* ==== 3. scalar conversions ==== */

static bool is_scalar(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE;
}

static const char *stext(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static bool is_plain(const yaml_node_t *n)
{
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static bool is_null(const yaml_node_t *n)
{
    if (!is_scalar(n) || !is_plain(n))
        return false;
    const char *t = stext(n);
    return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") ||
           !strcmp(t, "NULL");
}

/* A short printable rendering of a node for messages. */
static const char *shown(const yaml_node_t *n)
{
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    if (is_null(n))
        return "nothing";
    return NULL;
}

#define GOT_FMT "%s%s%s"
#define GOT_ARGS(n)                                                                       \
    shown(n) ? "" : "'", shown(n) ? shown(n) : stext(n), shown(n) ? "" : "'"

static bool parse_u64(const char *t, uint64_t *out)
{
    uint64_t v = 0;
    int base = 10;
    if (t[0] == '+')
        t++;
    if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
        base = 16;
        t += 2;
    }
    if (!*t)
        return false;
    for (; *t; t++) {
        int d;
        if (*t >= '0' && *t <= '9')
            d = *t - '0';
        else if (base == 16 && isxdigit((unsigned char)*t))
            d = tolower((unsigned char)*t) - 'a' + 10;
        else
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return true;
}

static bool parse_i64(const char *t, int64_t *out)
{
    bool neg = t[0] == '-';
    uint64_t u;
    if (!parse_u64(neg ? t + 1 : t, &u))
        return false;
    if (neg ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

static bool parse_double(const char *t, double *out)
{
    char *end;
    if (!*t || isspace((unsigned char)*t))
        return false;
    errno = 0;
    double v = strtod(t, &end);
    if (*end || errno || !isfinite(v))
        return false;
    /* Refuse hex floats, "inf", "nan": only decimal numbers. */
    for (const char *c = t; *c; c++)
        if (!strchr("0123456789+-.eE", *c))
            return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *t, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "On"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "off", "Off"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcmp(t, yes[i])) {
            *out = true;
            return true;
        }
        if (!strcmp(t, no[i])) {
            *out = false;
            return true;
        }
    }
    return false;
}

struct unit {
    const char *name; /* suffix */
    uint64_t mult;    /* multiplier */
};

/* "<digits>[.<digits>]<unit>" -> value * unit, exactly, with overflow checks. */
static int parse_with_units(const char *t, const struct unit *units, size_t nunits,
                            bool unit_required, uint64_t *out)
{
    const char *c = t;
    uint64_t ip = 0;
    if (!isdigit((unsigned char)*c))
        return CKH_EINVAL;
    for (; isdigit((unsigned char)*c); c++) {
        if (ip > (UINT64_MAX - 9) / 10)
            return CKH_EINVAL;
        ip = ip * 10 + (uint64_t)(*c - '0');
    }
    const char *frac = NULL;
    size_t nfrac = 0;
    if (*c == '.') {
        frac = ++c;
        for (; isdigit((unsigned char)*c); c++)
            nfrac++;
        if (!nfrac || nfrac > 9)
            return CKH_EINVAL;
    }
    while (*c == ' ')
        c++;
    uint64_t mult = 0;
    if (!*c) {
        if (unit_required && ip != 0)
            return CKH_EINVAL;
        mult = 1;
    } else {
        for (size_t i = 0; i < nunits; i++)
            if (!strcmp(c, units[i].name))
                mult = units[i].mult;
        if (!mult)
            return CKH_EINVAL;
    }
    if (ip && mult > UINT64_MAX / ip)
        return CKH_EINVAL;
    uint64_t v = ip * mult;
    if (frac) {
        uint64_t f = 0, scale = 1;
        for (size_t i = 0; i < nfrac; i++) {
            f = f * 10 + (uint64_t)(frac[i] - '0');
            scale *= 10;
        }
        /* f/scale of mult must be a whole number of base units. */
        if (mult % scale && (f * (mult % scale)) % scale)
            return CKH_EINVAL;
        uint64_t add = (mult / scale) * f + (f * (mult % scale)) / scale;
        if (v > UINT64_MAX - add)
            return CKH_EINVAL;
        v += add;
    }
    *out = v;
    return 0;
}

static const struct unit size_units[] = {
    {"B", 1},
    {"KiB", 1ull << 10},
    {"MiB", 1ull << 20},
    {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},
    {"kB", 1000ull},
    {"KB", 1000ull},
    {"MB", 1000000ull},
    {"GB", 1000000000ull},
    {"TB", 1000000000000ull},
};

static const struct unit time_units[] = {
    {"ns", 1},
    {"us", 1000ull},
    {"ms", 1000000ull},
    {"s", 1000000000ull},
    {"m", 60ull * 1000000000ull},
    {"min", 60ull * 1000000000ull},
    {"h", 3600ull * 1000000000ull},
};

int ckh_scn_parse_size(const char *text, uint64_t *out_bytes)
{
    if (!text || !out_bytes)
        return CKH_EINVAL;
    return parse_with_units(text, size_units, sizeof(size_units) / sizeof(size_units[0]), false,
                            out_bytes);
}

int ckh_scn_parse_duration(const char *text, uint64_t *out_ns)
{
    if (!text || !out_ns)
        return CKH_EINVAL;
    return parse_with_units(text, time_units, sizeof(time_units) / sizeof(time_units[0]), true,
                            out_ns);
}

/* Each getter checks node type and range and reports with `what`, the
 * dotted key path ("job.nodes"). */

static int get_str(struct pctx *p, const yaml_node_t *n, const char *what, const char **out)
{
    if (!is_scalar(n) || is_null(n) || !*stext(n))
        return fail(p, n, CKH_EINVAL, "'%s' expects a non-empty string, got " GOT_FMT, what,
                    GOT_ARGS(n));
    *out = ar_strdup(p->s, stext(n));
    return *out ? 0 : CKH_ENOMEM;
}

static int get_int(struct pctx *p, const yaml_node_t *n, const char *what, int64_t lo, int64_t hi,
                   int64_t *out)
{
    int64_t v;
    if (!is_scalar(n) || !parse_i64(stext(n), &v) || v < lo || v > hi)
        return fail(p, n, CKH_EINVAL, "'%s' expects an integer in %lld..%lld, got " GOT_FMT,
                    what, (long long)lo, (long long)hi, GOT_ARGS(n));
    *out = v;
    return 0;
}

static int get_u64(struct pctx *p, const yaml_node_t *n, const char *what, uint64_t lo,
                   uint64_t *out)
{
    uint64_t v;
    if (!is_scalar(n) || stext(n)[0] == '-' || !parse_u64(stext(n), &v) || v < lo)
        return fail(p, n, CKH_EINVAL, "'%s' expects an integer in %llu..%llu, got " GOT_FMT,
                    what, (unsigned long long)lo, (unsigned long long)UINT64_MAX, GOT_ARGS(n));
    *out = v;
    return 0;
}

static int get_bool(struct pctx *p, const yaml_node_t *n, const char *what, bool *out)
{
    if (!is_scalar(n) || !parse_bool(stext(n), out))
        return fail(p, n, CKH_EINVAL, "'%s' expects true or false, got " GOT_FMT, what,
                    GOT_ARGS(n));
    return 0;
}

static int get_size(struct pctx *p, const yaml_node_t *n, const char *what, uint64_t *out)
{
    if (!is_scalar(n) || ckh_scn_parse_size(stext(n), out))
        return fail(p, n, CKH_EINVAL,
                    "'%s' expects a size (bytes, or a number with B, KiB, MiB, GiB, TiB, kB, "
                    "MB, GB, TB), got " GOT_FMT,
                    what, GOT_ARGS(n));
    return 0;
}

static int get_duration(struct pctx *p, const yaml_node_t *n, const char *what, uint64_t *out)
{
    if (!is_scalar(n) || ckh_scn_parse_duration(stext(n), out))
        return fail(p, n, CKH_EINVAL,
                    "'%s' expects a duration (a number with ns, us, ms, s, m or h), got " GOT_FMT,
                    what, GOT_ARGS(n));
    return 0;
}

static int get_enum(struct pctx *p, const yaml_node_t *n, const char *what,
                    const char *const *names, size_t nnames, int *out)
{
    char h[400];
    if (is_scalar(n))
        for (size_t i = 0; i < nnames; i++)
            if (!strcmp(stext(n), names[i])) {
                *out = (int)i;
                return 0;
            }
    hint(h, sizeof(h), is_scalar(n) ? stext(n) : "", names, nnames);
    return fail(p, n, CKH_EINVAL, "'%s' got unknown value " GOT_FMT "%s", what, GOT_ARGS(n), h);
}

/* A name from the caller's list (any non-empty string if the list is empty). */
static int get_name(struct pctx *p, const yaml_node_t *n, const char *what,
                    const struct ckh_scn_names *names, const char **out)
{
    int rc = get_str(p, n, what, out);
    if (rc || !names || !names->list || !names->n)
        return rc;
    int idx;
    return get_enum(p, n, what, names->list, names->n, &idx);
}

static bool has_dotdot(const char *path)
{
    for (const char *c = path; (c = strstr(c, "..")); c += 2)
        if ((c == path || c[-1] == '/') && (c[2] == '/' || c[2] == '\0'))
            return true;
    return false;
}

/* An absolute path (or glob) in the simulated filesystem. */
static int get_sim_path(struct pctx *p, const yaml_node_t *n, const char *what, const char **out)
{
    int rc = get_str(p, n, what, out);
    if (rc)
        return rc;
    if ((*out)[0] != '/' || has_dotdot(*out))
        return fail(p, n, CKH_EINVAL,
                    "'%s' must be an absolute path without '..' (it may not leave the "
                    "scenario's working folder), got '%s'",
                    what, *out);
    if (strlen(*out) > CKH_PATH_MAX)
        return fail(p, n, CKH_EINVAL, "'%s' is longer than %d bytes", what, CKH_PATH_MAX);
    return 0;
}

/* A relative host path inside the reference folder. */
static int get_rel_path(struct pctx *p, const yaml_node_t *n, const char *what, const char **out)
{
    int rc = get_str(p, n, what, out);
    if (rc)
        return rc;
    if ((*out)[0] == '/' || has_dotdot(*out))
        return fail(p, n, CKH_EINVAL,
                    "'%s' must be a relative path without '..' (it may not leave the "
                    "reference folder), got '%s'",
                    what, *out);
    return 0;
}

/* ==== 4. closed mappings ==== */

static yaml_node_t *node_at(struct pctx *p, int id)
{
    return yaml_document_get_node(&p->doc, id);
}

/* Checks that n is a mapping whose keys are distinct scalars from keys[].
 * `what` names the mapping in messages ("job", "fault"). `advice` may give
 * a better message for a key that is not in keys[] (return NULL: none). */
static int check_map(struct pctx *p, const yaml_node_t *n, const char *what,
                     const char *const *keys, size_t nkeys,
                     const char *(*advice)(const char *key, void *ctx), void *ctx)
{
    if (n->type != YAML_MAPPING_NODE)
        return fail(p, n, CKH_EINVAL, "'%s' expects a mapping, got " GOT_FMT, what, GOT_ARGS(n));
    for (yaml_node_pair_t *a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
        yaml_node_t *k = node_at(p, a->key);
        if (!is_scalar(k))
            return fail(p, k, CKH_EINVAL, "keys of '%s' must be plain names, got " GOT_FMT,
                        what, GOT_ARGS(k));
        for (yaml_node_pair_t *b = n->data.mapping.pairs.start; b < a; b++) {
            yaml_node_t *k2 = node_at(p, b->key);
            if (is_scalar(k2) && !strcmp(stext(k), stext(k2)))
                return fail(p, k, CKH_EINVAL, "duplicate key '%s' in '%s' (first at line %d)",
                            stext(k), what, (int)k2->start_mark.line + 1);
        }
        if (!keys)
            continue;
        bool known = false;
        for (size_t i = 0; i < nkeys && !known; i++)
            known = !strcmp(stext(k), keys[i]);
        if (known)
            continue;
        const char *adv = advice ? advice(stext(k), ctx) : NULL;
        if (adv)
            return fail(p, k, CKH_EINVAL, "unknown key '%s' in '%s'; %s", stext(k), what, adv);
        char h[400];
        hint(h, sizeof(h), stext(k), keys, nkeys);
        return fail(p, k, CKH_EINVAL, "unknown key '%s' in '%s'%s", stext(k), what, h);
    }
    return 0;
}

/* The value of key in mapping n, or NULL. */
static yaml_node_t *get(struct pctx *p, const yaml_node_t *n, const char *key)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
        yaml_node_t *k = node_at(p, a->key);
        if (is_scalar(k) && !strcmp(stext(k), key))
            return node_at(p, a->value);
    }
    return NULL;
}

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

/* A list of names; a single scalar is accepted as a one-element list. */
static int get_name_list(struct pctx *p, const yaml_node_t *n, const char *what,
                         const struct ckh_scn_names *names, const char ***out, size_t *nout)
{
    const yaml_node_item_t *it = NULL, *end = NULL;
    yaml_node_t *single = NULL;
    if (n->type == YAML_SEQUENCE_NODE) {
        it = n->data.sequence.items.start;
        end = n->data.sequence.items.top;
    } else if (is_scalar(n) && !is_null(n)) {
        single = (yaml_node_t *)n;
    } else if (!is_null(n)) {
        return fail(p, n, CKH_EINVAL, "'%s' expects a list of names, got " GOT_FMT, what,
                    GOT_ARGS(n));
    }
    size_t cnt = single ? 1 : (size_t)(end - it);
    const char **v = ar_alloc(p->s, (cnt ? cnt : 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *e = single ? single : node_at(p, it[i]);
        int rc = get_name(p, e, what, names, &v[i]);
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(v[j], v[i]))
                return fail(p, e, CKH_EINVAL, "'%s' lists '%s' twice", what, v[i]);
    }
    *out = v;
    *nout = cnt;
    return 0;
}

/* A free-form map of scalars with inferred types. */
static int get_kv_map(struct pctx *p, const yaml_node_t *n, const char *what,
                      struct ckh_scn_kv **out, size_t *nout)
{
    int rc = check_map(p, n, what, NULL, 0, NULL, NULL);
    if (rc)
        return rc;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    struct ckh_scn_kv *v = ar_alloc(p->s, (cnt ? cnt : 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_pair_t *pr = &n->data.mapping.pairs.start[i];
        yaml_node_t *k = node_at(p, pr->key), *val = node_at(p, pr->value);
        if (!is_scalar(val))
            return fail(p, val, CKH_EINVAL, "'%s.%s' expects a single value, got " GOT_FMT, what,
                        stext(k), GOT_ARGS(val));
        struct ckh_scn_kv *kv = &v[i];
        kv->key = ar_strdup(p->s, stext(k));
        kv->text = ar_strdup(p->s, stext(val));
        if (!kv->key || !kv->text)
            return CKH_ENOMEM;
        kv->line = (int)val->start_mark.line + 1;
        kv->column = (int)val->start_mark.column + 1;
        kv->type = CKH_SCN_STR;
        if (is_plain(val)) {
            if (parse_i64(kv->text, &kv->i) && kv->text[0] != '+' &&
                !(kv->text[0] == '0' && kv->text[1] == 'x')) {
                kv->type = CKH_SCN_INT;
                kv->f = (double)kv->i;
            } else if (parse_double(kv->text, &kv->f)) {
                kv->type = CKH_SCN_FLOAT;
            } else if (parse_bool(kv->text, &kv->b)) {
                kv->type = CKH_SCN_BOOL;
            }
        }
    }
    *out = v;
    *nout = cnt;
    return 0;
}

/* ==== 5. sections ==== */

static const char *const crash_model_names[] = {"posix-weak", "ext4-ordered"};
static const char *const strategy_names[] = {"sync_all", "sync_any", "async"};
static const char *const phase_names[] = {"init", "epoch",    "save", "load",
                                          "upload", "download", "exit", "collective"};
static const char *const kill_when_names[] = {"before", "after", "mid-write"};
static const char *const corrupt_mode_names[] = {"bit-flip", "truncate", "zero-range", "delete",
                                                 "older-version"};
static const char *const action_names[] = {
#define CKH__SCN_ACT_NAME(e, s, r) s,
    CKH_SCN_ACTION_MAP(CKH__SCN_ACT_NAME)
#undef CKH__SCN_ACT_NAME
};
static const bool action_at_rest[] = {
#define CKH__SCN_ACT_REST(e, s, r) r,
    CKH_SCN_ACTION_MAP(CKH__SCN_ACT_REST)
#undef CKH__SCN_ACT_REST
};
static const char *const outcome_names[] = {
#define CKH__SCN_OUT_NAME(e, s) s,
    CKH_SCN_OUTCOME_MAP(CKH__SCN_OUT_NAME)
#undef CKH__SCN_OUT_NAME
};

/* errno names a fault may inject. */
static const char *const errno_names[] = {"EIO", "ENOSPC", "EDQUOT", "EACCES", "ENOENT", "EROFS"};
static const int errno_values[] = {EIO, ENOSPC, EDQUOT, EACCES, ENOENT, EROFS};

const char *ckh_scn_action_name(enum ckh_scn_action_kind k)
{
    return (unsigned)k < CKH_SCN_ACT__COUNT ? action_names[k] : "?";
}

const char *ckh_scn_outcome_name(enum ckh_scn_outcome o)
{
    return (unsigned)o < CKH_SCN_OUTCOME__COUNT ? outcome_names[o] : "?";
}

bool ckh_scn_action_is_at_rest(enum ckh_scn_action_kind k)
{
    return (unsigned)k < CKH_SCN_ACT__COUNT && action_at_rest[k];
}

/* ---- job.disks ---- */

static const char *const disk_keys[] = {"name",     "mount",   "shared",    "crash_model",
                                        "sector",   "capacity", "latency",  "bandwidth",
                                        "ns_per_kib"};

static void disk_defaults(struct ckh_scn_disk *d)
{
    d->shared = true;
    d->model = CKH_CRASH_POSIX_WEAK;
    d->sector_bytes = 4096;
    d->capacity_bytes = 0;
    d->latency_ns = 100000;
    d->ns_per_kib = 1000;
}

static int parse_disk(struct pctx *p, const yaml_node_t *n, size_t idx, struct ckh_scn_disk *d)
{
    yaml_node_t *v;
    int rc = check_map(p, n, "job.disks[]", disk_keys, NKEYS(disk_keys), NULL, NULL);
    if (rc)
        return rc;
    disk_defaults(d);
    d->line = (int)n->start_mark.line + 1;
    if ((v = get(p, n, "name"))) {
        if ((rc = get_str(p, v, "job.disks[].name", &d->name)))
            return rc;
    } else {
        char buf[32];
        snprintf(buf, sizeof(buf), "disk%zu", idx);
        if (!(d->name = ar_strdup(p->s, buf)))
            return CKH_ENOMEM;
    }
    if (!(v = get(p, n, "mount")))
        return fail(p, n, CKH_EINVAL, "disk '%s' needs 'mount' (an absolute path)", d->name);
    if ((rc = get_sim_path(p, v, "job.disks[].mount", &d->mount)))
        return rc;
    if ((v = get(p, n, "shared")) && (rc = get_bool(p, v, "job.disks[].shared", &d->shared)))
        return rc;
    int e = 0;
    if ((v = get(p, n, "crash_model"))) {
        if ((rc = get_enum(p, v, "job.disks[].crash_model", crash_model_names,
                           NKEYS(crash_model_names), &e)))
            return rc;
        d->model = (enum ckh_crash_model)e;
    }
    if ((v = get(p, n, "sector"))) {
        int64_t sec;
        if (!is_scalar(v) || !parse_i64(stext(v), &sec) || (sec != 512 && sec != 4096))
            return fail(p, v, CKH_EINVAL, "'job.disks[].sector' expects 512 or 4096, got " GOT_FMT,
                        GOT_ARGS(v));
        d->sector_bytes = (uint32_t)sec;
    }
    if ((v = get(p, n, "capacity")) && (rc = get_size(p, v, "job.disks[].capacity",
                                                      &d->capacity_bytes)))
        return rc;
    if ((v = get(p, n, "latency")) &&
        (rc = get_duration(p, v, "job.disks[].latency", &d->latency_ns)))
        return rc;
    yaml_node_t *bw = get(p, n, "bandwidth"), *npk = get(p, n, "ns_per_kib");
    if (bw && npk)
        return fail(p, npk, CKH_EINVAL, "give either 'bandwidth' or 'ns_per_kib', not both");
    if (npk && (rc = get_u64(p, npk, "job.disks[].ns_per_kib", 0, &d->ns_per_kib)))
        return rc;
    if (bw) {
        uint64_t bps = 0;
        size_t len = is_scalar(bw) ? strlen(stext(bw)) : 0;
        char buf[64];
        if (len > 2 && len < sizeof(buf) && !strcmp(stext(bw) + len - 2, "/s")) {
            memcpy(buf, stext(bw), len - 2);
            buf[len - 2] = '\0';
            if (ckh_scn_parse_size(buf, &bps))
                bps = 0;
        }
        if (!bps)
            return fail(p, bw, CKH_EINVAL,
                        "'job.disks[].bandwidth' expects a size per second such as '1GiB/s', "
                        "got " GOT_FMT,
                        GOT_ARGS(bw));
        d->ns_per_kib = bps >= 1024ull * 1000000000ull ? 1 : 1024ull * 1000000000ull / bps;
    }
    return 0;
}

static int parse_disks(struct pctx *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    if (n->type != YAML_SEQUENCE_NODE ||
        n->data.sequence.items.top == n->data.sequence.items.start)
        return fail(p, n, CKH_EINVAL, "'job.disks' expects a non-empty list of disks, got " GOT_FMT,
                    GOT_ARGS(n));
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    job->disks = ar_alloc(p->s, cnt * sizeof(*job->disks));
    if (!job->disks)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *e = node_at(p, n->data.sequence.items.start[i]);
        int rc = parse_disk(p, e, i, &job->disks[i]);
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++) {
            if (!strcmp(job->disks[j].name, job->disks[i].name))
                return fail(p, e, CKH_EINVAL, "two disks are named '%s'", job->disks[i].name);
            if (!strcmp(job->disks[j].mount, job->disks[i].mount))
                return fail(p, e, CKH_EINVAL, "two disks are mounted at '%s'",
                            job->disks[i].mount);
        }
        job->ndisks = i + 1;
    }
    return 0;
}

/* Whether path lies under the mount point m. */
static bool under_mount(const char *path, const char *m)
{
    size_t lm = strlen(m);
    if (!strcmp(m, "/"))
        return true;
    return !strncmp(path, m, lm) && (path[lm] == '/' || path[lm] == '\0');
}

/* ---- job.saver ---- */

static const char *const saver_keys[] = {"kind", "keep_last", "strategy", "name"};

static int parse_saver(struct pctx *p, const yaml_node_t *n, struct ckh_scn_saver *sv)
{
    const struct ckh_scn_names *names = p->opts ? &p->opts->savers : NULL;
    if (is_scalar(n))
        return get_name(p, n, "job.saver", names, &sv->kind);
    int rc = check_map(p, n, "job.saver", saver_keys, NKEYS(saver_keys), NULL, NULL);
    if (rc)
        return rc;
    yaml_node_t *v = get(p, n, "kind");
    if (!v)
        return fail(p, n, CKH_EINVAL, "'job.saver' needs 'kind' (the saver's name)");
    if ((rc = get_name(p, v, "job.saver.kind", names, &sv->kind)))
        return rc;
    int64_t i;
    if ((v = get(p, n, "keep_last"))) {
        if ((rc = get_int(p, v, "job.saver.keep_last", 0, 1000000, &i)))
            return rc;
        sv->keep_last = (uint32_t)i;
    }
    int e = 0;
    if ((v = get(p, n, "strategy"))) {
        if ((rc = get_enum(p, v, "job.saver.strategy", strategy_names, NKEYS(strategy_names),
                           &e)))
            return rc;
        sv->strategy = (enum ckh_scn_strategy)e;
    }
    if ((v = get(p, n, "name")) && (rc = get_str(p, v, "job.saver.name", &sv->name)))
        return rc;
    return 0;
}

/* ---- job ---- */

static const char *const job_keys[] = {
    "workload",        "nodes",   "ranks",  "epochs",     "steps",
    "backend",         "saver",   "checkpoint_dir",       "checkpoint_every",
    "options",         "disks",   "collective_timeout",   "gpu_memory",
    "defects"};
static const char *const every_keys[] = {"epochs", "steps"};

static int parse_job(struct pctx *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    const struct ckh_scn_options *o = p->opts;
    yaml_node_t *v;
    int64_t i;
    int rc = check_map(p, n, "job", job_keys, NKEYS(job_keys), NULL, NULL);
    if (rc)
        return rc;
    job->nodes = 1;
    job->collective_timeout_ns = 30ull * 1000000000ull;
    if (!(v = get(p, n, "workload")))
        return fail(p, n, CKH_EINVAL, "'job' needs 'workload'");
    if ((rc = get_name(p, v, "job.workload", o ? &o->workloads : NULL, &job->workload)))
        return rc;
    yaml_node_t *nodes = get(p, n, "nodes"), *ranks = get(p, n, "ranks");
    if (nodes && ranks)
        return fail(p, ranks, CKH_EINVAL, "give either 'nodes' or 'ranks', not both");
    if ((v = nodes ? nodes : ranks)) {
        if ((rc = get_int(p, v, nodes ? "job.nodes" : "job.ranks", 1, 1024, &i)))
            return rc;
        job->nodes = (uint32_t)i;
    }
    if ((v = get(p, n, "epochs"))) {
        if ((rc = get_int(p, v, "job.epochs", 1, 1000000, &i)))
            return rc;
        job->epochs = (uint32_t)i;
    }
    if ((v = get(p, n, "steps")) && (rc = get_u64(p, v, "job.steps", 1, &job->steps)))
        return rc;
    if ((v = get(p, n, "backend")) &&
        (rc = get_name(p, v, "job.backend", o ? &o->backends : NULL, &job->backend)))
        return rc;
    if ((v = get(p, n, "saver")) && (rc = parse_saver(p, v, &job->saver)))
        return rc;
    if ((v = get(p, n, "checkpoint_dir"))) {
        if ((rc = get_sim_path(p, v, "job.checkpoint_dir", &job->checkpoint_dir)))
            return rc;
    } else if (!(job->checkpoint_dir = ar_strdup(p->s, "/ckpt"))) {
        return CKH_ENOMEM;
    }
    if ((v = get(p, n, "checkpoint_every"))) {
        if ((rc = check_map(p, v, "job.checkpoint_every", every_keys, NKEYS(every_keys), NULL,
                            NULL)))
            return rc;
        yaml_node_t *ep = get(p, v, "epochs"), *st = get(p, v, "steps");
        if (ep && st)
            return fail(p, st, CKH_EINVAL,
                        "'job.checkpoint_every' takes either 'epochs' or 'steps', not both");
        if (!ep && !st)
            return fail(p, v, CKH_EINVAL, "'job.checkpoint_every' needs 'epochs' or 'steps'");
        if (ep) {
            if ((rc = get_int(p, ep, "job.checkpoint_every.epochs", 1, 1000000, &i)))
                return rc;
            job->every_epochs = (uint32_t)i;
        } else if ((rc = get_u64(p, st, "job.checkpoint_every.steps", 1, &job->every_steps))) {
            return rc;
        }
    }
    if ((v = get(p, n, "options")) &&
        (rc = get_kv_map(p, v, "job.options", &job->options, &job->noptions)))
        return rc;
    if ((v = get(p, n, "disks"))) {
        if ((rc = parse_disks(p, v, job)))
            return rc;
    } else {
        if (!(job->disks = ar_alloc(p->s, sizeof(*job->disks))))
            return CKH_ENOMEM;
        disk_defaults(&job->disks[0]);
        job->disks[0].name = ar_strdup(p->s, "shared");
        job->disks[0].mount = ar_strdup(p->s, "/");
        if (!job->disks[0].name || !job->disks[0].mount)
            return CKH_ENOMEM;
        job->ndisks = 1;
    }
    bool mounted = false;
    for (size_t d = 0; d < job->ndisks; d++)
        mounted |= under_mount(job->checkpoint_dir, job->disks[d].mount);
    if (!mounted)
        return fail(p, get(p, n, "checkpoint_dir") ? get(p, n, "checkpoint_dir") : n, CKH_EINVAL,
                    "'job.checkpoint_dir' %s is not under any disk's mount point",
                    job->checkpoint_dir);
    if ((v = get(p, n, "collective_timeout")) &&
        (rc = get_duration(p, v, "job.collective_timeout", &job->collective_timeout_ns)))
        return rc;
    if ((v = get(p, n, "gpu_memory")) &&
        (rc = get_size(p, v, "job.gpu_memory", &job->gpu_mem_bytes)))
        return rc;
    if ((v = get(p, n, "defects")) &&
        (rc = get_name_list(p, v, "job.defects", o ? &o->defects : NULL, &job->defects,
                            &job->ndefects)))
        return rc;
    return 0;
}

/* ---- faults ---- */

static const char *const trigger_keys[] = {"node",  "op",   "path",        "phase",
                                           "epoch", "step", "nth",         "time",
                                           "probability", "repeat", "run"};

/* Keys of a fault besides on/do, with the actions each applies to. */
struct param_key {
    const char *name;   /* the key */
    uint32_t actions;   /* bit per enum ckh_scn_action_kind */
};

#define A(k) (1u << CKH_SCN_ACT_##k)
static const struct param_key param_keys[] = {
    {"when", A(KILL)},
    {"at", A(KILL)},
    {"errno", A(ERRNO)},
    {"after", A(DISK_FULL)},
    {"disk", A(DISK_FULL)},
    {"duration", A(DELAY)},
    {"keep", A(CRASH) | A(POWER_LOSS)},
    {"mode", A(CORRUPT)},
    {"path", A(CORRUPT) | A(REMOVE_DIR) | A(DANGLING_LATEST) | A(STALE_LATEST)},
    {"offset", A(CORRUPT)},
    {"length", A(CORRUPT)},
    {"bit", A(CORRUPT)},
    {"back", A(CORRUPT)},
};
#undef A

struct fault_advice_ctx {
    enum ckh_scn_action_kind kind; /* the fault's action */
    char buf[160];                 /* the advice */
};

static const char *fault_advice(const char *key, void *vctx)
{
    struct fault_advice_ctx *c = vctx;
    for (size_t i = 0; i < NKEYS(param_keys); i++)
        if (!strcmp(key, param_keys[i].name)) {
            snprintf(c->buf, sizeof(c->buf), "'%s' does not apply to 'do: %s'", key,
                     action_names[c->kind]);
            return c->buf;
        }
    for (size_t i = 0; i < NKEYS(trigger_keys); i++)
        if (!strcmp(key, trigger_keys[i])) {
            snprintf(c->buf, sizeof(c->buf), "trigger keys such as '%s' go under 'on:'", key);
            return c->buf;
        }
    return NULL;
}

static int parse_trigger(struct pctx *p, const yaml_node_t *n, struct ckh_scn_trigger *t)
{
    yaml_node_t *v;
    int64_t i;
    int e = 0, rc;
    if (!n)
        return 0;
    if ((rc = check_map(p, n, "on", trigger_keys, NKEYS(trigger_keys), NULL, NULL)))
        return rc;
    if ((v = get(p, n, "node"))) {
        t->matches_ops = true;
        if (is_scalar(v) && parse_i64(stext(v), &i)) {
            if ((rc = get_int(p, v, "on.node", 0, (int64_t)p->s->job.nodes - 1, &i)))
                return rc;
            t->node = (int)i;
        } else if ((rc = get_str(p, v, "on.node", &t->node_name))) {
            return rc;
        }
    }
    if ((v = get(p, n, "op"))) {
        t->matches_ops = true;
        const char *names[CKH_OP__COUNT];
        for (int k = 0; k < CKH_OP__COUNT; k++)
            names[k] = ckh_op_name((enum ckh_op_kind)k);
        if ((rc = get_enum(p, v, "on.op", names, CKH_OP__COUNT, &e)))
            return rc;
        t->op = ckh_op_from_name(names[e]);
    }
    if ((v = get(p, n, "path"))) {
        t->matches_ops = true;
        if ((rc = get_sim_path(p, v, "on.path", &t->path)))
            return rc;
    }
    if ((v = get(p, n, "phase"))) {
        t->matches_ops = true;
        if ((rc = get_enum(p, v, "on.phase", phase_names, NKEYS(phase_names), &e)))
            return rc;
        t->phase = phase_names[e]; /* static storage, like every enum name */
    }
    if ((v = get(p, n, "epoch"))) {
        t->matches_ops = true;
        if ((rc = get_int(p, v, "on.epoch", 0, INT64_MAX, &t->epoch)))
            return rc;
    }
    if ((v = get(p, n, "step"))) {
        t->matches_ops = true;
        if ((rc = get_int(p, v, "on.step", 0, INT64_MAX, &t->step)))
            return rc;
    }
    yaml_node_t *nth = get(p, n, "nth"), *prob = get(p, n, "probability");
    if (nth && prob)
        return fail(p, prob, CKH_EINVAL, "'on' takes either 'nth' or 'probability', not both");
    if (nth) {
        t->matches_ops = true;
        if ((rc = get_u64(p, nth, "on.nth", 1, &t->nth)))
            return rc;
    }
    if (prob) {
        t->matches_ops = true;
        if (!is_scalar(prob) || !parse_double(stext(prob), &t->probability) ||
            !(t->probability > 0.0 && t->probability <= 1.0))
            return fail(p, prob, CKH_EINVAL,
                        "'on.probability' expects a number in (0, 1], got " GOT_FMT,
                        GOT_ARGS(prob));
    }
    if ((v = get(p, n, "time"))) {
        t->matches_ops = true;
        if ((rc = get_duration(p, v, "on.time", &t->time_ns)))
            return rc;
    }
    if ((v = get(p, n, "repeat")) && (rc = get_bool(p, v, "on.repeat", &t->repeat)))
        return rc;
    if ((v = get(p, n, "run"))) {
        if (is_scalar(v) && !strcmp(stext(v), "any")) {
            t->run = CKH_SCN_RUN_ANY;
        } else if (!is_scalar(v) || !parse_i64(stext(v), &i) || i < 1 || i > 1000000) {
            return fail(p, v, CKH_EINVAL,
                        "'on.run' expects a run number in 1..1000000 or 'any', got " GOT_FMT,
                        GOT_ARGS(v));
        } else {
            t->run = (uint32_t)i;
        }
    }
    return 0;
}

static int parse_kill(struct pctx *p, const yaml_node_t *n, struct ckh_scn_action *a)
{
    yaml_node_t *v;
    int e = 0, rc;
    if ((v = get(p, n, "when"))) {
        if ((rc = get_enum(p, v, "when", kill_when_names, NKEYS(kill_when_names), &e)))
            return rc;
        a->u.kill.when = (enum ckh_scn_kill_when)e;
    }
    a->u.kill.at_is_fraction = true;
    a->u.kill.at_fraction = 0.5;
    if (!(v = get(p, n, "at")))
        return 0;
    if (a->u.kill.when != CKH_SCN_KILL_MID_WRITE)
        return fail(p, v, CKH_EINVAL, "'at' needs 'when: mid-write'");
    const char *t = is_scalar(v) ? stext(v) : "";
    size_t len = strlen(t);
    int64_t i;
    double f;
    char buf[64];
    if (len > 1 && len < sizeof(buf) && t[len - 1] == '%') {
        memcpy(buf, t, len - 1);
        buf[len - 1] = '\0';
        if (parse_double(buf, &f) && f >= 0.0 && f <= 100.0) {
            a->u.kill.at_fraction = f / 100.0;
            return 0;
        }
    } else if (parse_i64(t, &i) && i >= 0) {
        a->u.kill.at_is_fraction = false;
        a->u.kill.at_fraction = 0.0;
        a->u.kill.at_bytes = (uint64_t)i;
        return 0;
    } else if (strchr(t, '.') && parse_double(t, &f) && f >= 0.0 && f <= 1.0) {
        a->u.kill.at_fraction = f;
        return 0;
    }
    return fail(p, v, CKH_EINVAL,
                "'at' expects a byte offset (integer), a fraction in [0.0, 1.0] or a percentage "
                "such as '50%%', got " GOT_FMT,
                GOT_ARGS(v));
}

static int parse_corrupt(struct pctx *p, const yaml_node_t *n, struct ckh_scn_action *a)
{
    yaml_node_t *v;
    int e = 0, rc;
    int64_t i;
    if (!(v = get(p, n, "mode")))
        return fail(p, n, CKH_EINVAL, "'do: corrupt' needs 'mode' (one of bit-flip, truncate, "
                                      "zero-range, delete, older-version)");
    if ((rc = get_enum(p, v, "mode", corrupt_mode_names, NKEYS(corrupt_mode_names), &e)))
        return rc;
    enum ckh_scn_corrupt_mode mode = (enum ckh_scn_corrupt_mode)e;
    a->u.corrupt.mode = mode;
    a->u.corrupt.length = 1;
    a->u.corrupt.back = 1;
    /* Which of offset/length/bit/back each mode takes. */
    static const char *const takes[] = {
        [CKH_SCN_CORRUPT_BIT_FLIP] = "offset bit",
        [CKH_SCN_CORRUPT_TRUNCATE] = "offset",
        [CKH_SCN_CORRUPT_ZERO_RANGE] = "offset length",
        [CKH_SCN_CORRUPT_DELETE] = "",
        [CKH_SCN_CORRUPT_OLDER_VERSION] = "back",
    };
    static const char *const opt[] = {"offset", "length", "bit", "back"};
    for (size_t k = 0; k < NKEYS(opt); k++) {
        if (!(v = get(p, n, opt[k])))
            continue;
        char pat[16];
        snprintf(pat, sizeof(pat), "%s", opt[k]);
        const char *tk = takes[mode];
        bool ok = false;
        for (const char *c = tk; (c = strstr(c, pat)); c++)
            if ((c == tk || c[-1] == ' ') && (c[strlen(pat)] == ' ' || !c[strlen(pat)]))
                ok = true;
        if (!ok)
            return fail(p, v, CKH_EINVAL, "'%s' does not apply to 'mode: %s'", opt[k],
                        corrupt_mode_names[mode]);
    }
    if (!(v = get(p, n, "path")))
        return fail(p, n, CKH_EINVAL, "'do: corrupt' needs 'path' (the file to corrupt)");
    if ((rc = get_sim_path(p, v, "path", &a->u.corrupt.path)))
        return rc;
    if ((v = get(p, n, "offset")) && (rc = get_u64(p, v, "offset", 0, &a->u.corrupt.offset)))
        return rc;
    if ((v = get(p, n, "length")) && (rc = get_u64(p, v, "length", 1, &a->u.corrupt.length)))
        return rc;
    if ((v = get(p, n, "bit"))) {
        if ((rc = get_int(p, v, "bit", 0, 7, &i)))
            return rc;
        a->u.corrupt.bit = (uint32_t)i;
    }
    if ((v = get(p, n, "back"))) {
        if ((rc = get_int(p, v, "back", 1, 1000000, &i)))
            return rc;
        a->u.corrupt.back = (uint32_t)i;
    }
    return 0;
}

static int parse_action(struct pctx *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    struct ckh_scn_action *a = &f->act;
    yaml_node_t *v;
    int e = 0, rc;
    switch (a->kind) {
    case CKH_SCN_ACT_KILL:
        return parse_kill(p, n, a);
    case CKH_SCN_ACT_ERRNO:
        if (!(v = get(p, n, "errno")))
            return fail(p, n, CKH_EINVAL, "'do: errno' needs 'errno' (EIO, ENOSPC, EDQUOT, "
                                          "EACCES, ENOENT or EROFS)");
        if ((rc = get_enum(p, v, "errno", errno_names, NKEYS(errno_names), &e)))
            return rc;
        a->u.errno_.err = errno_values[e];
        return 0;
    case CKH_SCN_ACT_FSYNC_FAIL:
        if (f->on.op < 0) { /* fsync-fail means the fsync, unless told otherwise */
            f->on.op = CKH_OP_FSYNC;
            f->on.matches_ops = true;
        }
        return 0;
    case CKH_SCN_ACT_DISK_FULL:
        if ((v = get(p, n, "after")) &&
            (rc = get_size(p, v, "after", &a->u.disk_full.after_bytes)))
            return rc;
        if ((v = get(p, n, "disk"))) {
            if ((rc = get_str(p, v, "disk", &a->u.disk_full.disk)))
                return rc;
            bool found = false;
            const char *names[64];
            size_t nn = 0;
            for (size_t d = 0; d < p->s->job.ndisks; d++) {
                found |= !strcmp(p->s->job.disks[d].name, a->u.disk_full.disk);
                if (nn < NKEYS(names))
                    names[nn++] = p->s->job.disks[d].name;
            }
            if (!found) {
                char h[400];
                hint(h, sizeof(h), a->u.disk_full.disk, names, nn);
                return fail(p, v, CKH_EINVAL, "'disk' names no disk of the job: '%s'%s",
                            a->u.disk_full.disk, h);
            }
        }
        return 0;
    case CKH_SCN_ACT_CRASH:
    case CKH_SCN_ACT_POWER_LOSS: {
        static const char *const keep_names[] = {"random", "synced", "cache"};
        if ((v = get(p, n, "keep"))) {
            if ((rc = get_enum(p, v, "keep", keep_names, NKEYS(keep_names), &e)))
                return rc;
            a->keep = (enum ckh_scn_keep)e;
        }
        return 0;
    }
    case CKH_SCN_ACT_DELAY:
        if (!(v = get(p, n, "duration")))
            return fail(p, n, CKH_EINVAL, "'do: delay' needs 'duration' (such as 5s)");
        return get_duration(p, v, "duration", &a->u.delay.duration_ns);
    case CKH_SCN_ACT_CORRUPT:
        return parse_corrupt(p, n, a);
    case CKH_SCN_ACT_REMOVE_DIR:
        if (!(v = get(p, n, "path")))
            return fail(p, n, CKH_EINVAL, "'do: remove-dir' needs 'path' (the directory)");
        return get_sim_path(p, v, "path", &a->u.remove_dir.path);
    case CKH_SCN_ACT_DANGLING_LATEST:
    case CKH_SCN_ACT_STALE_LATEST:
        if ((v = get(p, n, "path")))
            return get_sim_path(p, v, "path", &a->u.latest.path);
        return 0;
    default:
        return 0;
    }
}

static int parse_fault(struct pctx *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    f->line = (int)n->start_mark.line + 1;
    f->column = (int)n->start_mark.column + 1;
    f->on.node = -1;
    f->on.op = -1;
    f->on.epoch = -1;
    f->on.step = -1;
    f->on.nth = 1;
    f->on.run = 1;
    if (n->type != YAML_MAPPING_NODE)
        return fail(p, n, CKH_EINVAL, "'faults[]' expects a mapping with 'do:', got " GOT_FMT,
                    GOT_ARGS(n));
    yaml_node_t *d = get(p, n, "do");
    if (!d)
        return fail(p, n, CKH_EINVAL, "a fault needs 'do:' (the action: kill, crash, "
                                      "power-loss, errno, ...)");
    int e = 0, rc;
    if ((rc = get_enum(p, d, "do", action_names, NKEYS(action_names), &e)))
        return rc;
    f->act.kind = (enum ckh_scn_action_kind)e;
    const char *keys[2 + NKEYS(param_keys)];
    size_t nk = 0;
    keys[nk++] = "on";
    keys[nk++] = "do";
    for (size_t i = 0; i < NKEYS(param_keys); i++)
        if (param_keys[i].actions & (1u << f->act.kind))
            keys[nk++] = param_keys[i].name;
    struct fault_advice_ctx actx = {.kind = f->act.kind};
    if ((rc = check_map(p, n, "fault", keys, nk, fault_advice, &actx)))
        return rc;
    if ((rc = parse_trigger(p, get(p, n, "on"), &f->on)))
        return rc;
    if ((rc = parse_action(p, n, f)))
        return rc;
    f->at_rest = ckh_scn_action_is_at_rest(f->act.kind) && !f->on.matches_ops;
    if (f->act.kind == CKH_SCN_ACT_KILL && f->act.u.kill.when == CKH_SCN_KILL_MID_WRITE &&
        f->on.op >= 0 && f->on.op != CKH_OP_WRITE && f->on.op != CKH_OP_PWRITE)
        return fail(p, get(p, n, "when"), CKH_EINVAL,
                    "'when: mid-write' needs 'on.op' to be write or pwrite, not '%s'",
                    ckh_op_name((enum ckh_op_kind)f->on.op));
    return 0;
}

static int parse_faults(struct pctx *p, const yaml_node_t *n, struct ckh_scenario *s)
{
    if (is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(p, n, CKH_EINVAL, "'faults' expects a list of faults, got " GOT_FMT,
                    GOT_ARGS(n));
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    s->faults = ar_alloc(s, (cnt ? cnt : 1) * sizeof(*s->faults));
    if (!s->faults)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        int rc = parse_fault(p, node_at(p, n->data.sequence.items.start[i]), &s->faults[i]);
        if (rc)
            return rc;
        s->nfaults = i + 1;
    }
    return 0;
}

/* ---- restart ---- */

static const char *const restart_keys[] = {"resume", "max_restarts", "world_size"};

static int parse_restart(struct pctx *p, const yaml_node_t *n, struct ckh_scn_restart *r)
{
    yaml_node_t *v;
    int64_t i;
    int rc = check_map(p, n, "restart", restart_keys, NKEYS(restart_keys), NULL, NULL);
    if (rc)
        return rc;
    if ((v = get(p, n, "resume"))) {
        const char *t = is_scalar(v) ? stext(v) : "";
        if (!strcmp(t, "latest")) {
            r->resume_epoch = -1;
        } else if (!strncmp(t, "epoch ", 6) && parse_i64(t + 6, &i) && i >= 0) {
            r->resume_epoch = i;
        } else {
            return fail(p, v, CKH_EINVAL,
                        "'restart.resume' expects 'latest' or 'epoch N' (N >= 0), got " GOT_FMT,
                        GOT_ARGS(v));
        }
    }
    if ((v = get(p, n, "max_restarts"))) {
        if ((rc = get_int(p, v, "restart.max_restarts", 0, 1000, &i)))
            return rc;
        r->max_restarts = (uint32_t)i;
    }
    if ((v = get(p, n, "world_size"))) {
        if ((rc = get_int(p, v, "restart.world_size", 1, 1024, &i)))
            return rc;
        r->world_size = (uint32_t)i;
        r->world_size_line = (int)v->start_mark.line + 1;
        r->world_size_column = (int)v->start_mark.column + 1;
    }
    return 0;
}

/* ---- expect ---- */

/* expect.values keys: "<field>" or "<field>.<node>" (the node is checked at
 * run time, when the job's node names are known); blobs needs a node. */
static const char *const value_fields[] = {"epochs", "total", "saves_failed", "resumed_from",
                                           "digest", "blobs", "runs", "restarts"};

static int check_values(struct pctx *p, const yaml_node_t *map, const struct ckh_scn_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char field[32];
        const char *dot = strchr(kv[i].key, '.');
        size_t fl = dot ? (size_t)(dot - kv[i].key) : strlen(kv[i].key);
        snprintf(field, sizeof field, "%.*s", (int)(fl < sizeof field ? fl : sizeof field - 1), kv[i].key);
        bool known = false;
        for (size_t k = 0; k < NKEYS(value_fields); k++)
            known |= strcmp(field, value_fields[k]) == 0;
        /* Report at the value: the model keeps its line and column. */
        yaml_node_t at = *map;
        at.start_mark.line = (size_t)(kv[i].line - 1);
        at.start_mark.column = (size_t)(kv[i].column - 1);
        if (!known) {
            char h[256];
            hint(h, sizeof h, field, value_fields, NKEYS(value_fields));
            return fail(p, &at, CKH_EINVAL, "unknown expected value '%s'%s", kv[i].key, h);
        }
        bool per_run = strcmp(field, "runs") == 0 || strcmp(field, "restarts") == 0;
        if (per_run && dot)
            return fail(p, &at, CKH_EINVAL, "'%s' counts the job's runs; it takes no node", field);
        if (strcmp(field, "blobs") == 0) {
            if (!dot || !dot[1])
                return fail(p, &at, CKH_EINVAL, "'blobs' needs a node: 'blobs.<node>'");
            continue;
        }
        if (strcmp(field, "digest") == 0 && kv[i].type != CKH_SCN_INT) {
            char *end = NULL;
            errno = 0;
            (void)strtoull(kv[i].text, &end, 16);
            if (errno || !end || *end || !kv[i].text[0])
                return fail(p, &at, CKH_EINVAL, "'%s' expects an integer or 16 hex digits, got '%s'",
                            kv[i].key, kv[i].text);
            continue;
        }
        if (kv[i].type != CKH_SCN_INT)
            return fail(p, &at, CKH_EINVAL, "'%s' expects an integer, got '%s'", kv[i].key, kv[i].text);
    }
    return 0;
}

static const char *const expect_keys[] = {"outcome", "reference", "golden", "values",
                                          "oracles", "skip",      "detect"};

static int parse_expect(struct pctx *p, const yaml_node_t *n, struct ckh_scn_expect *x)
{
    const struct ckh_scn_options *o = p->opts;
    yaml_node_t *v;
    int e = 0;
    int rc = check_map(p, n, "expect", expect_keys, NKEYS(expect_keys), NULL, NULL);
    if (rc)
        return rc;
    if ((v = get(p, n, "outcome"))) {
        if ((rc = get_enum(p, v, "expect.outcome", outcome_names, NKEYS(outcome_names), &e)))
            return rc;
        x->outcome = (enum ckh_scn_outcome)e;
    }
    if ((v = get(p, n, "reference")) && (rc = get_bool(p, v, "expect.reference", &x->reference)))
        return rc;
    if ((v = get(p, n, "golden")) && (rc = get_rel_path(p, v, "expect.golden", &x->golden)))
        return rc;
    if ((v = get(p, n, "values")) &&
        ((rc = get_kv_map(p, v, "expect.values", &x->values, &x->nvalues)) ||
         (rc = check_values(p, v, x->values, x->nvalues))))
        return rc;
    if ((v = get(p, n, "oracles")) &&
        (rc = get_name_list(p, v, "expect.oracles", o ? &o->oracles : NULL, &x->oracles,
                            &x->noracles)))
        return rc;
    const yaml_node_t *skip_node = get(p, n, "skip");
    if (skip_node && (rc = get_name_list(p, skip_node, "expect.skip", o ? &o->oracles : NULL,
                                         &x->skip, &x->nskip)))
        return rc;
    if ((v = get(p, n, "detect")) &&
        (rc = get_name_list(p, v, "expect.detect", o ? &o->oracles : NULL, &x->detect,
                            &x->ndetect)))
        return rc;
    for (size_t i = 0; i < x->nskip; i++)
        for (size_t j = 0; j < x->noracles; j++)
            if (!strcmp(x->skip[i], x->oracles[j]))
                return fail(p, skip_node, CKH_EINVAL, "oracle '%s' is both in 'oracles' and 'skip'",
                            x->skip[i]);
    return 0;
}

/* ---- the root ---- */

static const char *const top_keys[] = {"name", "description", "seed",    "tags",
                                       "job",  "faults",      "restart", "expect"};

static bool name_ok(const char *t)
{
    for (; *t; t++)
        if (!isalnum((unsigned char)*t) && !strchr("._-/", *t))
            return false;
    return true;
}

/* "dir/kill-mid.yaml" -> "kill-mid". */
static int default_name(struct ckh_scenario *s, const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *name = ar_strndup(s, base, len);
    if (!name)
        return CKH_ENOMEM;
    /* A name goes into terminal lines and reports: control characters
     * from a file name become '_' (reports escape everything else). */
    for (char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '_';
    s->name = name;
    return 0;
}

static int parse_root(struct pctx *p, const yaml_node_t *n)
{
    struct ckh_scenario *s = p->s;
    yaml_node_t *v;
    int rc = check_map(p, n, "scenario", top_keys, NKEYS(top_keys), NULL, NULL);
    if (rc)
        return rc;
    if ((v = get(p, n, "name"))) {
        if ((rc = get_str(p, v, "name", &s->name)))
            return rc;
        if (!name_ok(s->name))
            return fail(p, v, CKH_EINVAL,
                        "'name' may use only letters, digits, '.', '_', '-' and '/', got '%s'",
                        s->name);
    } else if ((rc = default_name(s, s->file))) {
        return rc;
    }
    if ((v = get(p, n, "description")) && (rc = get_str(p, v, "description", &s->description)))
        return rc;
    if ((v = get(p, n, "seed")) && (rc = get_u64(p, v, "seed", 0, &s->seed)))
        return rc;
    if ((v = get(p, n, "tags")) && (rc = get_name_list(p, v, "tags", NULL, &s->tags, &s->ntags)))
        return rc;
    if (!(v = get(p, n, "job")))
        return fail(p, n, CKH_EINVAL, "a scenario needs 'job'");
    if ((rc = parse_job(p, v, &s->job)))
        return rc;
    if ((v = get(p, n, "faults")) && (rc = parse_faults(p, v, s)))
        return rc;
    if ((v = get(p, n, "restart")) && (rc = parse_restart(p, v, &s->restart)))
        return rc;
    if ((v = get(p, n, "expect")) && (rc = parse_expect(p, v, &s->expect)))
        return rc;
    return 0;
}

/* ==== 6. public entry points ==== */

static int yaml_fail(struct pctx *p, yaml_parser_t *ps)
{
    yaml_mark_t m = ps->problem ? ps->problem_mark : ps->mark;
    struct ckh_scn_error *err = p->err;
    snprintf(err->file, sizeof(err->file), "%s", p->file);
    err->line = (int)m.line + 1;
    err->column = (int)m.column + 1;
    err->code = ps->error == YAML_MEMORY_ERROR ? CKH_ENOMEM : CKH_EPARSE;
    if (ps->context)
        snprintf(err->msg, sizeof(err->msg), "malformed YAML: %s %s (line %d)",
                 ps->problem ? ps->problem : "error", ps->context, (int)ps->context_mark.line + 1);
    else
        snprintf(err->msg, sizeof(err->msg), "malformed YAML: %s",
                 ps->problem ? ps->problem : "error");
    if (m.index < p->len && p->text[m.index] == '\t') {
        size_t l = strlen(err->msg);
        snprintf(err->msg + l, sizeof(err->msg) - l, "; YAML indents with spaces, not tabs");
    }
    return err->code;
}

int ckh_scenario_parse_string(const char *text, size_t len, const char *file,
                              const struct ckh_scn_options *opts, struct ckh_scenario **out,
                              struct ckh_scn_error *err)
{
    struct ckh_scn_error dummy;
    struct pctx p = {.file = file ? file : "<string>", .opts = opts, .err = err ? err : &dummy,
                     .text = text, .len = len};
    yaml_parser_t ps;
    int rc;
    memset(p.err, 0, sizeof(*p.err));
    if (out)
        *out = NULL;
    if (!text || !out) {
        snprintf(p.err->file, sizeof(p.err->file), "%s", p.file);
        snprintf(p.err->msg, sizeof(p.err->msg), "no text or no result pointer given");
        p.err->code = CKH_EINVAL;
        return CKH_EINVAL;
    }
    struct ckh_alloc *alloc = opts && opts->alloc ? opts->alloc : ckh_alloc_system();
    struct ckh_scenario *s = ckh_calloc(alloc, 1, sizeof(*s));
    if (!s) {
        p.err->code = CKH_ENOMEM;
        snprintf(p.err->msg, sizeof(p.err->msg), "out of memory");
        return CKH_ENOMEM;
    }
    s->alloc = alloc;
    s->seed = 1;
    s->expect.reference = true;
    s->restart.resume_epoch = -1;
    s->restart.max_restarts = 3;
    p.s = s;
    if (!(s->file = ar_strdup(s, p.file))) {
        rc = CKH_ENOMEM;
        goto out_free_scenario;
    }
    if (!yaml_parser_initialize(&ps)) {
        rc = CKH_ENOMEM;
        goto out_free_scenario;
    }
    yaml_parser_set_input_string(&ps, (const unsigned char *)text, len);
    if (!yaml_parser_load(&ps, &p.doc)) {
        rc = yaml_fail(&p, &ps);
        goto out_delete_parser;
    }
    yaml_node_t *root = yaml_document_get_root_node(&p.doc);
    if (!root) {
        rc = fail(&p, NULL, CKH_EPARSE, "the file holds no scenario (empty document)");
        p.err->line = 1;
        p.err->column = 1;
        goto out_delete_doc;
    }
    /* Exactly one document per file. */
    yaml_document_t extra;
    if (!yaml_parser_load(&ps, &extra)) {
        rc = yaml_fail(&p, &ps);
        goto out_delete_doc;
    }
    yaml_node_t *xroot = yaml_document_get_root_node(&extra);
    if (xroot) {
        rc = fail(&p, xroot, CKH_EPARSE, "a scenario file holds one YAML document; found another");
        yaml_document_delete(&extra);
        goto out_delete_doc;
    }
    yaml_document_delete(&extra);
    if ((rc = parse_root(&p, root)))
        goto out_delete_doc;
    yaml_document_delete(&p.doc);
    yaml_parser_delete(&ps);
    *out = s;
    return 0;

out_delete_doc:
    yaml_document_delete(&p.doc);
out_delete_parser:
    yaml_parser_delete(&ps);
out_free_scenario:
    if (rc == CKH_ENOMEM && !p.err->msg[0]) {
        snprintf(p.err->file, sizeof(p.err->file), "%s", p.file);
        snprintf(p.err->msg, sizeof(p.err->msg), "out of memory");
        p.err->code = CKH_ENOMEM;
    }
    ckh_scenario_free(s);
    return rc;
}

int ckh_scenario_parse_file(const char *path, const struct ckh_scn_options *opts,
                            struct ckh_scenario **out, struct ckh_scn_error *err)
{
    struct ckh_scn_error dummy;
    struct ckh_scn_error *e = err ? err : &dummy;
    struct ckh_alloc *alloc = opts && opts->alloc ? opts->alloc : ckh_alloc_system();
    memset(e, 0, sizeof(*e));
    if (out)
        *out = NULL;
    if (!path || !out) {
        e->code = CKH_EINVAL;
        snprintf(e->msg, sizeof(e->msg), "no path or no result pointer given");
        return CKH_EINVAL;
    }
    snprintf(e->file, sizeof(e->file), "%s", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        e->code = -errno;
        snprintf(e->msg, sizeof(e->msg), "cannot open: %s", strerror(errno));
        return e->code;
    }
    size_t cap = 4096, len = 0;
    char *buf = ckh_malloc(alloc, cap);
    int rc = 0;
    if (!buf) {
        rc = CKH_ENOMEM;
        goto out_close;
    }
    for (;;) {
        if (len == cap) {
            if (cap >= (64u << 20)) { /* 64 MiB: no scenario is that large */
                rc = CKH_ELIMIT;
                goto out_free_buf;
            }
            char *nb = ckh_realloc(alloc, buf, cap * 2);
            if (!nb) {
                rc = CKH_ENOMEM;
                goto out_free_buf;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        rc = -EIO;
        goto out_free_buf;
    }
    rc = ckh_scenario_parse_string(buf, len, path, opts, out, e);
out_free_buf:
    ckh_free(alloc, buf);
out_close:
    fclose(f);
    if (rc && !e->code) {
        e->code = rc;
        snprintf(e->msg, sizeof(e->msg), "cannot read: %s", ckh_strerror(rc));
    }
    return rc;
}

void ckh_scenario_free(struct ckh_scenario *s)
{
    if (!s)
        return;
    struct ckh__scn_arena *b = s->arena;
    while (b) {
        struct ckh__scn_arena *next = b->next;
        ckh_free(s->alloc, b);
        b = next;
    }
    ckh_free(s->alloc, s);
}

int ckh_scn_error_format(const struct ckh_scn_error *err, char *buf, size_t n)
{
    if (!err || (!buf && n))
        return CKH_EINVAL;
    if (err->line > 0)
        return snprintf(buf, n, "%s:%d:%d: %s", err->file, err->line, err->column, err->msg);
    return snprintf(buf, n, "%s: %s", err->file, err->msg);
}
