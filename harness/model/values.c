/* Scalar conversions of the scenario grammar: integers, numbers, booleans,
 * sizes and durations with units, and the "did you mean" helpers. Text in,
 * value out; nothing here knows YAML (docs/SCENARIOS.md, "values").
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "model/reader.h"

/* ---- "did you mean" ---- */

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
void ckh__scn_hint(char *buf, size_t size, const char *word, const char *const *names, size_t n)
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

bool ckh__scn_parse_u64(const char *t, uint64_t *out)
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

bool ckh__scn_parse_i64(const char *t, int64_t *out)
{
    bool neg = t[0] == '-';
    uint64_t u;
    if (!ckh__scn_parse_u64(neg ? t + 1 : t, &u))
        return false;
    if (neg ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

bool ckh__scn_parse_double(const char *t, double *out)
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

bool ckh__scn_parse_bool(const char *t, bool *out)
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
