/* The scenario reader: the scenario's arena, errors located at YAML nodes,
 * typed getters and closed-mapping checks (scenario/reader.h says how they
 * report). Every section parser and every fault's parser reads through it.
 *
 * Cost: every check is linear in the size of the map or list it reads
 * (duplicates are found by sorting), so a scenario with a 200k-key
 * `job.options` parses in time proportional to its size.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "model/reader.h"

/* ---- arena ---- */

/* Every allocation of a scenario is one block on this list. */
struct ckh__scn_arena {
    struct ckh__scn_arena *next; /* older block */
    max_align_t data[];          /* the caller's bytes */
};

void *ckh__scn_alloc(struct ckh_scenario *s, size_t n)
{
    struct ckh__scn_arena *b = ckh_malloc(s->alloc, sizeof(*b) + n);
    if (!b)
        return NULL;
    memset(b->data, 0, n);
    b->next = s->arena;
    s->arena = b;
    return b->data;
}

char *ckh__scn_strndup(struct ckh_scenario *s, const char *p, size_t n)
{
    char *d = ckh__scn_alloc(s, n + 1);
    if (!d)
        return NULL;
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

char *ckh__scn_strdup(struct ckh_scenario *s, const char *p)
{
    return ckh__scn_strndup(s, p, strlen(p));
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

/* ---- errors ---- */

int ckh__scn_fail(struct ckh__scn_reader *p, const yaml_node_t *n, int code, const char *fmt, ...)
{
    struct ckh_scn_error *err = p->err;
    va_list ap;
    snprintf(err->file, sizeof(err->file), "%s", p->file ? p->file : "<string>");
    err->line = n ? (int)n->start_mark.line + 1 : 0;
    err->column = n ? (int)n->start_mark.column + 1 : 0;
    err->code = code;
    va_start(ap, fmt);
    ckh_verrf(err->msg, sizeof(err->msg), code, fmt, ap);
    va_end(ap);
    return code;
}

/* A key (or name) and where it stands, for duplicate detection. */
struct key_ref {
    const char *key; /* the text */
    size_t pos;      /* its position in the map or list */
};

static int key_ref_cmp(const void *a, const void *b)
{
    const struct key_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* ---- nodes ---- */

bool ckh__scn_is_scalar(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE;
}

const char *ckh__scn_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

bool ckh__scn_is_plain(const yaml_node_t *n)
{
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

bool ckh__scn_is_null(const yaml_node_t *n)
{
    if (!ckh__scn_is_scalar(n) || !ckh__scn_is_plain(n))
        return false;
    const char *t = ckh__scn_text(n);
    return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") ||
           !strcmp(t, "NULL");
}

/* A short printable rendering of a node for messages. */
const char *ckh__scn_shown(const yaml_node_t *n)
{
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    if (ckh__scn_is_null(n))
        return "nothing";
    return NULL;
}


int ckh__scn_get_str(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, const char **out)
{
    if (!ckh__scn_is_scalar(n) || ckh__scn_is_null(n) || !*ckh__scn_text(n))
        return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' expects a non-empty string, got " CKH__GOT_FMT, what,
                    CKH__GOT_ARGS(n));
    *out = ckh__scn_strdup(p->s, ckh__scn_text(n));
    return *out ? 0 : CKH_ENOMEM;
}

int ckh__scn_get_int(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, int64_t lo, int64_t hi,
                   int64_t *out)
{
    int64_t v;
    if (!ckh__scn_is_scalar(n) || !ckh__scn_parse_i64(ckh__scn_text(n), &v) || v < lo || v > hi)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' expects an integer in %lld..%lld, got " CKH__GOT_FMT,
                    what, (long long)lo, (long long)hi, CKH__GOT_ARGS(n));
    *out = v;
    return 0;
}

int ckh__scn_get_u64(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, uint64_t lo,
                   uint64_t *out)
{
    uint64_t v;
    if (!ckh__scn_is_scalar(n) || ckh__scn_text(n)[0] == '-' || !ckh__scn_parse_u64(ckh__scn_text(n), &v) || v < lo)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' expects an integer in %llu..%llu, got " CKH__GOT_FMT,
                    what, (unsigned long long)lo, (unsigned long long)UINT64_MAX, CKH__GOT_ARGS(n));
    *out = v;
    return 0;
}

int ckh__scn_get_bool(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, bool *out)
{
    if (!ckh__scn_is_scalar(n) || !ckh__scn_parse_bool(ckh__scn_text(n), out))
        return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' expects true or false, got " CKH__GOT_FMT, what,
                    CKH__GOT_ARGS(n));
    return 0;
}

int ckh__scn_get_size(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, uint64_t *out)
{
    if (!ckh__scn_is_scalar(n) || ckh_scn_parse_size(ckh__scn_text(n), out))
        return ckh__scn_fail(p, n, CKH_EINVAL,
                    "'%s' expects a size (bytes, or a number with B, KiB, MiB, GiB, TiB, kB, "
                    "MB, GB, TB), got " CKH__GOT_FMT,
                    what, CKH__GOT_ARGS(n));
    return 0;
}

int ckh__scn_get_duration(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, uint64_t *out)
{
    if (!ckh__scn_is_scalar(n) || ckh_scn_parse_duration(ckh__scn_text(n), out))
        return ckh__scn_fail(p, n, CKH_EINVAL,
                    "'%s' expects a duration (a number with ns, us, ms, s, m or h), got " CKH__GOT_FMT,
                    what, CKH__GOT_ARGS(n));
    return 0;
}

int ckh__scn_get_enum(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                    const char *const *names, size_t nnames, int *out)
{
    char h[400];
    if (ckh__scn_is_scalar(n))
        for (size_t i = 0; i < nnames; i++)
            if (!strcmp(ckh__scn_text(n), names[i])) {
                *out = (int)i;
                return 0;
            }
    ckh__scn_hint(h, sizeof(h), ckh__scn_is_scalar(n) ? ckh__scn_text(n) : "", names, nnames);
    return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' got unknown value " CKH__GOT_FMT "%s", what, CKH__GOT_ARGS(n), h);
}

/* A name from the caller's list (any non-empty string if the list is empty). */
int ckh__scn_get_name(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                    const struct ckh_scn_names *names, const char **out)
{
    int rc = ckh__scn_get_str(p, n, what, out);
    if (rc || !names || !names->list || !names->n || ckh_scn_is_plugin_path(*out))
        return rc;
    int idx;
    return ckh__scn_get_enum(p, n, what, names->list, names->n, &idx);
}

bool ckh_scn_is_plugin_path(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n && (strchr(name, '/') || (n > 3 && strcmp(name + n - 3, ".so") == 0));
}

static bool has_dotdot(const char *path)
{
    for (const char *c = path; (c = strstr(c, "..")); c += 2)
        if ((c == path || c[-1] == '/') && (c[2] == '/' || c[2] == '\0'))
            return true;
    return false;
}

/* An absolute path (or glob) in the simulated filesystem. */
int ckh__scn_get_sim_path(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, const char **out)
{
    int rc = ckh__scn_get_str(p, n, what, out);
    if (rc)
        return rc;
    if ((*out)[0] != '/' || has_dotdot(*out))
        return ckh__scn_fail(p, n, CKH_EINVAL,
                    "'%s' must be an absolute path without '..' (it may not leave the "
                    "scenario's working folder), got '%s'",
                    what, *out);
    if (strlen(*out) > CKH_PATH_MAX)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' is longer than %d bytes", what, CKH_PATH_MAX);
    return 0;
}

/* A relative host path inside the reference folder. */
int ckh__scn_get_rel_path(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what, const char **out)
{
    int rc = ckh__scn_get_str(p, n, what, out);
    if (rc)
        return rc;
    if ((*out)[0] == '/' || has_dotdot(*out))
        return ckh__scn_fail(p, n, CKH_EINVAL,
                    "'%s' must be a relative path without '..' (it may not leave the "
                    "reference folder), got '%s'",
                    what, *out);
    return 0;
}

/* ---- closed mappings ---- */

yaml_node_t *ckh__scn_node(struct ckh__scn_reader *p, int id)
{
    return yaml_document_get_node(&p->doc, id);
}

size_t ckh__scn_first_repeat(struct ckh_alloc *alloc, const char *const *v, size_t n, size_t *first)
{
    size_t best = n;
    if (n <= 16) { /* small maps and lists: pairwise, no allocation */
        for (size_t i = 0; i < n && best == n; i++)
            for (size_t j = 0; v[i] && j < i; j++)
                if (v[j] && !strcmp(v[i], v[j])) {
                    best = i;
                    *first = j;
                    break;
                }
        CKH_ASSERT(best == n || (*first < best && !strcmp(v[*first], v[best])));
        return best;
    }
    struct key_ref *r = ckh_malloc(alloc, n * sizeof *r);
    if (!r)
        return SIZE_MAX;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i])
            r[m++] = (struct key_ref){v[i], i};
    qsort(r, m, sizeof *r, key_ref_cmp);
    /* In each run of equal texts the second position repeats the first. */
    for (size_t i = 1; i < m; i++)
        if (!strcmp(r[i].key, r[i - 1].key) && (i < 2 || strcmp(r[i - 1].key, r[i - 2].key)) &&
            r[i].pos < best) {
            best = r[i].pos;
            *first = r[i - 1].pos;
        }
    ckh_free(alloc, r);
    /* the same answer as the pairwise walk: the earliest repeat, and what it repeats */
    CKH_ASSERT(best == n || (*first < best && !strcmp(v[*first], v[best])));
    return best;
}

/* Checks that n is a mapping whose keys are distinct scalars from keys[].
 * `what` names the mapping in messages ("job", "fault"). `advice` may give
 * a better message for a key that is not in keys[] (return NULL: none).
 * Problems are reported in file order, the first one wins. */
int ckh__scn_check_map(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                       const char *const *keys, size_t nkeys,
                       const char *(*advice)(const char *key, void *ctx), void *ctx)
{
    if (n->type != YAML_MAPPING_NODE)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' expects a mapping, got " CKH__GOT_FMT, what,
                             CKH__GOT_ARGS(n));
    const yaml_node_pair_t *pairs = n->data.mapping.pairs.start;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - pairs), first = 0;
    const char **texts = ckh_malloc(p->s->alloc, (cnt ? cnt : 1) * sizeof *texts);
    if (!texts)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *k = ckh__scn_node(p, pairs[i].key);
        texts[i] = ckh__scn_is_scalar(k) ? ckh__scn_text(k) : NULL;
    }
    size_t dup = ckh__scn_first_repeat(p->s->alloc, texts, cnt, &first);
    ckh_free(p->s->alloc, texts);
    if (dup == SIZE_MAX)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *k = ckh__scn_node(p, pairs[i].key);
        if (!ckh__scn_is_scalar(k))
            return ckh__scn_fail(p, k, CKH_EINVAL, "keys of '%s' must be plain names, got " CKH__GOT_FMT,
                                 what, CKH__GOT_ARGS(k));
        if (i == dup)
            return ckh__scn_fail(p, k, CKH_EINVAL, "duplicate key '%s' in '%s' (first at line %d)",
                                 ckh__scn_text(k), what,
                                 (int)ckh__scn_node(p, pairs[first].key)->start_mark.line + 1);
        if (!keys)
            continue;
        bool known = false;
        for (size_t j = 0; j < nkeys && !known; j++)
            known = !strcmp(ckh__scn_text(k), keys[j]);
        if (known)
            continue;
        const char *adv = advice ? advice(ckh__scn_text(k), ctx) : NULL;
        if (adv)
            return ckh__scn_fail(p, k, CKH_EINVAL, "unknown key '%s' in '%s'; %s", ckh__scn_text(k),
                                 what, adv);
        char h[400];
        ckh__scn_hint(h, sizeof(h), ckh__scn_text(k), keys, nkeys);
        return ckh__scn_fail(p, k, CKH_EINVAL, "unknown key '%s' in '%s'%s", ckh__scn_text(k), what, h);
    }
    return 0;
}

/* The value of key in mapping n, or NULL. */
yaml_node_t *ckh__scn_get(struct ckh__scn_reader *p, const yaml_node_t *n, const char *key)
{
    if (!n || n->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *a = n->data.mapping.pairs.start; a < n->data.mapping.pairs.top; a++) {
        yaml_node_t *k = ckh__scn_node(p, a->key);
        if (ckh__scn_is_scalar(k) && !strcmp(ckh__scn_text(k), key))
            return ckh__scn_node(p, a->value);
    }
    return NULL;
}


/* A list of names; a single scalar is accepted as a one-element list.
 * The first problem in file order is reported: a bad name, or a name
 * listed a second time. */
int ckh__scn_get_name_list(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                           const struct ckh_scn_names *names, const char ***out, size_t *nout)
{
    const yaml_node_item_t *it = NULL, *end = NULL;
    yaml_node_t *single = NULL;
    if (n->type == YAML_SEQUENCE_NODE) {
        it = n->data.sequence.items.start;
        end = n->data.sequence.items.top;
    } else if (ckh__scn_is_scalar(n) && !ckh__scn_is_null(n)) {
        single = (yaml_node_t *)n;
    } else if (!ckh__scn_is_null(n)) {
        return ckh__scn_fail(p, n, CKH_EINVAL, "'%s' expects a list of names, got " CKH__GOT_FMT,
                             what, CKH__GOT_ARGS(n));
    }
    size_t cnt = single ? 1 : (size_t)(end - it), ok = 0, first = 0;
    const char **v = ckh__scn_alloc(p->s, (cnt ? cnt : 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    int rc = 0;
    for (; ok < cnt; ok++)
        if ((rc = ckh__scn_get_name(p, single ? single : ckh__scn_node(p, it[ok]), what, names,
                                    &v[ok])) != 0)
            break;
    if (rc == CKH_ENOMEM)
        return rc;
    size_t dup = ckh__scn_first_repeat(p->s->alloc, v, ok, &first);
    if (dup == SIZE_MAX)
        return CKH_ENOMEM;
    if (dup < ok)
        return ckh__scn_fail(p, single ? single : ckh__scn_node(p, it[dup]), CKH_EINVAL,
                             "'%s' lists '%s' twice", what, v[dup]);
    if (rc)
        return rc;
    *out = v;
    *nout = cnt;
    return 0;
}

/* A free-form map of scalars with inferred types. */
int ckh__scn_get_kv_map(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                      struct ckh_scn_kv **out, size_t *nout)
{
    int rc = ckh__scn_check_map(p, n, what, NULL, 0, NULL, NULL);
    if (rc)
        return rc;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    struct ckh_scn_kv *v = ckh__scn_alloc(p->s, (cnt ? cnt : 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_pair_t *pr = &n->data.mapping.pairs.start[i];
        yaml_node_t *k = ckh__scn_node(p, pr->key), *val = ckh__scn_node(p, pr->value);
        if (!ckh__scn_is_scalar(val))
            return ckh__scn_fail(p, val, CKH_EINVAL, "'%s.%s' expects a single value, got " CKH__GOT_FMT, what,
                        ckh__scn_text(k), CKH__GOT_ARGS(val));
        struct ckh_scn_kv *kv = &v[i];
        kv->key = ckh__scn_strdup(p->s, ckh__scn_text(k));
        kv->text = ckh__scn_strdup(p->s, ckh__scn_text(val));
        if (!kv->key || !kv->text)
            return CKH_ENOMEM;
        kv->line = (int)val->start_mark.line + 1;
        kv->column = (int)val->start_mark.column + 1;
        kv->type = CKH_SCN_STR;
        if (ckh__scn_is_plain(val)) {
            if (ckh__scn_parse_i64(kv->text, &kv->i) && kv->text[0] != '+' &&
                !(kv->text[0] == '0' && kv->text[1] == 'x')) {
                kv->type = CKH_SCN_INT;
                kv->f = (double)kv->i;
            } else if (ckh__scn_parse_double(kv->text, &kv->f)) {
                kv->type = CKH_SCN_FLOAT;
            } else if (ckh__scn_parse_bool(kv->text, &kv->b)) {
                kv->type = CKH_SCN_BOOL;
            }
        }
    }
    *out = v;
    *nout = cnt;
    return 0;
}
