/* The record API's wrappers and checks (include/ckh/record.h): the one
 * place where a record is judged well-formed, for the C calls of a node,
 * the harness's store and the JSON-lines reader alike.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/record.h"

int ckh_record_name_check(const char *name)
{
    if (!name)
        return CKH_EINVAL;
    size_t n = 0;
    for (const char *c = name; *c; c++, n++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-';
        if (!ok || n >= CKH_RECORD_NAME_MAX)
            return CKH_EINVAL;
    }
    return n ? 0 : CKH_EINVAL;
}

/* Whether name is one of the first n names of digests d and values v
 * (either may be NULL). */
static bool name_seen(const char *name, const struct ckh_rec_digest *d, size_t nd,
                      const struct ckh_rec_value *v, size_t nv)
{
    for (size_t i = 0; i < nd; i++)
        if (strcmp(d[i].name, name) == 0)
            return true;
    for (size_t i = 0; i < nv; i++)
        if (strcmp(v[i].name, name) == 0)
            return true;
    return false;
}

/* CKH_EINVAL, with why (when not NULL) saying what is wrong. */
static int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return CKH_EINVAL;
}

/* Checks one name of a digest or value (what: "digest", "value"). */
static int check_name(const char *what, const char *name, char *why, size_t n)
{
    if (!name)
        return refuse(why, n, "a %s has no name", what);
    if (ckh_record_name_check(name) == 0)
        return 0;
    if (!name[0])
        return refuse(why, n, "a %s has an empty name", what);
    if (strlen(name) > CKH_RECORD_NAME_MAX)
        return refuse(why, n, "%s name '%.*s...' is longer than %d bytes", what, CKH_RECORD_NAME_MAX, name,
                      CKH_RECORD_NAME_MAX);
    return refuse(why, n, "%s name '%s' has a character other than A-Z a-z 0-9 _ . -", what, name);
}

/* Checks named digests then named values: count, array, each name, no
 * name twice across both. A value may be NaN or infinite (a diverged
 * loss is a fact to record; values compare bit for bit, NaN with NaN). */
static int check_fields(const struct ckh_rec_digest *d, size_t nd, const struct ckh_rec_value *v, size_t nv,
                        char *why, size_t n)
{
    int rc;
    if (nd > CKH_RECORD_FIELDS_MAX || nv > CKH_RECORD_FIELDS_MAX)
        return refuse(why, n, "%zu %s, at most %d in one record", nd > CKH_RECORD_FIELDS_MAX ? nd : nv,
                      nd > CKH_RECORD_FIELDS_MAX ? "digests" : "values", CKH_RECORD_FIELDS_MAX);
    if ((nd && !d) || (nv && !v))
        return refuse(why, n, "%s counted but not given (NULL)", nd && !d ? "digests" : "values");
    for (size_t i = 0; i < nd; i++) {
        if ((rc = check_name("digest", d[i].name, why, n)) != 0)
            return rc;
        if (name_seen(d[i].name, d, i, NULL, 0))
            return refuse(why, n, "digest '%s' appears twice", d[i].name);
    }
    for (size_t i = 0; i < nv; i++) {
        if ((rc = check_name("value", v[i].name, why, n)) != 0)
            return rc;
        if (name_seen(v[i].name, d, nd, v, i))
            return refuse(why, n, "'%s' appears twice among the digests and values", v[i].name);
    }
    return 0;
}

static int check_step(const struct ckh_rec_step *s, char *why, size_t n)
{
    if (!s)
        return refuse(why, n, "no record (NULL)");
    if (s->step < 1)
        return refuse(why, n, "step %" PRId64 ", expected 1 or more", s->step);
    if (s->epoch < 0)
        return refuse(why, n, "epoch %" PRId64 ", expected 0 or more", s->epoch);
    if (s->nsamples && !s->samples)
        return refuse(why, n, "%zu samples counted but not given (NULL)", s->nsamples);
    return check_fields(s->digests, s->ndigests, s->values, s->nvalues, why, n);
}

/* Two counts that may not be negative (a resume's or save's step and
 * epoch, a final record's epochs and steps), named a and b. */
static int check_counts(const char *a, int64_t va, const char *b, int64_t vb, char *why, size_t n)
{
    if (va < 0 || vb < 0)
        return refuse(why, n, "%s %" PRId64 ", expected 0 or more", va < 0 ? a : b, va < 0 ? va : vb);
    return 0;
}

static int check_resume(const struct ckh_rec_resume *s, char *why, size_t n)
{
    if (!s)
        return refuse(why, n, "no record (NULL)");
    return check_counts("step", s->step, "epoch", s->epoch, why, n);
}

static int check_save(const struct ckh_rec_save *s, char *why, size_t n)
{
    if (!s)
        return refuse(why, n, "no record (NULL)");
    int rc = check_counts("step", s->step, "epoch", s->epoch, why, n);
    if (rc)
        return rc;
    if (s->rc > 0)
        return refuse(why, n, "rc %d, expected 0 or a negative error code", s->rc);
    return 0;
}

static int check_final(const struct ckh_rec_final *s, char *why, size_t n)
{
    if (!s)
        return refuse(why, n, "no record (NULL)");
    int rc = check_counts("epochs", s->epochs, "steps", s->steps, why, n);
    if (rc)
        return rc;
    if (s->nblobs && !s->blobs)
        return refuse(why, n, "%zu blobs counted but not given (NULL)", s->nblobs);
    for (size_t i = 0; i < s->nblobs; i++)
        if (!s->blobs[i] || !s->blobs[i][0] || strchr(s->blobs[i], ','))
            return refuse(why, n, "blob %zu %s", i + 1,
                          !s->blobs[i] ? "is NULL" : !s->blobs[i][0] ? "has an empty name" : "has a ',' in its name");
    return check_fields(NULL, 0, s->values, s->nvalues, why, n);
}

int ckh_record_check_step(const struct ckh_rec_step *s)
{
    return check_step(s, NULL, 0);
}

int ckh_record_check_resume(const struct ckh_rec_resume *s)
{
    return check_resume(s, NULL, 0);
}

int ckh_record_check_save(const struct ckh_rec_save *s)
{
    return check_save(s, NULL, 0);
}

int ckh_record_check_final(const struct ckh_rec_final *s)
{
    return check_final(s, NULL, 0);
}

int ckh_record_why(enum ckh_rec_kind kind, const void *rec, char *why, size_t n)
{
    if (why && n)
        why[0] = '\0';
    switch (kind) {
    case CKH_REC_STEP: return check_step(rec, why, n);
    case CKH_REC_RESUME: return check_resume(rec, why, n);
    case CKH_REC_SAVE: return check_save(rec, why, n);
    case CKH_REC_FINAL: return check_final(rec, why, n);
    }
    return refuse(why, n, "unknown record kind %d", (int)kind);
}

/* A refused record, told to a version-2 table: rc back. */
static int refused(struct ckh_record *r, enum ckh_rec_kind kind, const void *rec, int rc)
{
    if (r->ops->version >= 2 && r->ops->refused) {
        char why[256];
        ckh_record_why(kind, rec, why, sizeof why);
        r->ops->refused(r, kind, why);
    }
    return rc;
}

int ckh_record_step(struct ckh_record *r, const struct ckh_rec_step *s)
{
    if (!r || !r->ops || !r->ops->step)
        return 0;
    int rc = ckh_record_check_step(s);
    return rc ? refused(r, CKH_REC_STEP, s, rc) : r->ops->step(r, s);
}

int ckh_record_resume(struct ckh_record *r, const struct ckh_rec_resume *s)
{
    if (!r || !r->ops || !r->ops->resume)
        return 0;
    int rc = ckh_record_check_resume(s);
    return rc ? refused(r, CKH_REC_RESUME, s, rc) : r->ops->resume(r, s);
}

int ckh_record_save(struct ckh_record *r, const struct ckh_rec_save *s)
{
    if (!r || !r->ops || !r->ops->save)
        return 0;
    int rc = ckh_record_check_save(s);
    return rc ? refused(r, CKH_REC_SAVE, s, rc) : r->ops->save(r, s);
}

int ckh_record_final(struct ckh_record *r, const struct ckh_rec_final *s)
{
    if (!r || !r->ops || !r->ops->final)
        return 0;
    int rc = ckh_record_check_final(s);
    return rc ? refused(r, CKH_REC_FINAL, s, rc) : r->ops->final(r, s);
}
