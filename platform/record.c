/* The record API's wrappers and checks (include/ckh/record.h): the one
 * place where a record is judged well-formed, for the C calls of a node,
 * the harness's store and the JSON-lines reader alike.
 */
#include <math.h>
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

/* Checks named digests then named values: count, array, each name, no
 * name twice across both, finite values. */
static int check_fields(const struct ckh_rec_digest *d, size_t nd, const struct ckh_rec_value *v,
                        size_t nv)
{
    if (nd > CKH_RECORD_FIELDS_MAX || nv > CKH_RECORD_FIELDS_MAX || (nd && !d) || (nv && !v))
        return CKH_EINVAL;
    for (size_t i = 0; i < nd; i++)
        if (ckh_record_name_check(d[i].name) != 0 || name_seen(d[i].name, d, i, NULL, 0))
            return CKH_EINVAL;
    for (size_t i = 0; i < nv; i++)
        if (ckh_record_name_check(v[i].name) != 0 || !isfinite(v[i].value) ||
            name_seen(v[i].name, d, nd, v, i))
            return CKH_EINVAL;
    return 0;
}

int ckh_record_check_step(const struct ckh_rec_step *s)
{
    if (!s || s->step < 1 || s->epoch < 0 || (s->nsamples && !s->samples))
        return CKH_EINVAL;
    return check_fields(s->digests, s->ndigests, s->values, s->nvalues);
}

int ckh_record_check_resume(const struct ckh_rec_resume *s)
{
    return s && s->step >= 0 && s->epoch >= 0 ? 0 : CKH_EINVAL;
}

int ckh_record_check_save(const struct ckh_rec_save *s)
{
    return s && s->step >= 0 && s->epoch >= 0 && s->rc <= 0 ? 0 : CKH_EINVAL;
}

int ckh_record_check_final(const struct ckh_rec_final *s)
{
    if (!s || s->epochs < 0 || s->steps < 0 || (s->nblobs && !s->blobs))
        return CKH_EINVAL;
    for (size_t i = 0; i < s->nblobs; i++)
        if (!s->blobs[i] || !s->blobs[i][0] || strchr(s->blobs[i], ','))
            return CKH_EINVAL;
    return check_fields(NULL, 0, s->values, s->nvalues);
}

int ckh_record_step(struct ckh_record *r, const struct ckh_rec_step *s)
{
    if (!r || !r->ops || !r->ops->step)
        return 0;
    int rc = ckh_record_check_step(s);
    return rc ? rc : r->ops->step(r, s);
}

int ckh_record_resume(struct ckh_record *r, const struct ckh_rec_resume *s)
{
    if (!r || !r->ops || !r->ops->resume)
        return 0;
    int rc = ckh_record_check_resume(s);
    return rc ? rc : r->ops->resume(r, s);
}

int ckh_record_save(struct ckh_record *r, const struct ckh_rec_save *s)
{
    if (!r || !r->ops || !r->ops->save)
        return 0;
    int rc = ckh_record_check_save(s);
    return rc ? rc : r->ops->save(r, s);
}

int ckh_record_final(struct ckh_record *r, const struct ckh_rec_final *s)
{
    if (!r || !r->ops || !r->ops->final)
        return 0;
    int rc = ckh_record_check_final(s);
    return rc ? rc : r->ops->final(r, s);
}
