/* The record API's wrappers (include/ckh/record.h): a NULL table or
 * method is a no-op returning 0; otherwise the record is checked (names,
 * field counts, step, finite values) and handed to the method, so every
 * store sees only well-formed records. */
#include <math.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/record.h"

int ckh_record_name_check(const char *name)
{
    if (!name)
        return CKH_EINVAL;
    size_t n = strlen(name);
    if (n < 1 || n > CKH_RECORD_NAME_MAX)
        return CKH_EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-';
        if (!ok)
            return CKH_EINVAL;
    }
    return 0;
}

static int check_digests(const struct ckh_rec_digest *d, size_t n)
{
    if (n > CKH_RECORD_FIELDS_MAX || (n && !d))
        return CKH_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (ckh_record_name_check(d[i].name))
            return CKH_EINVAL;
    return 0;
}

static int check_values(const struct ckh_rec_value *v, size_t n)
{
    if (n > CKH_RECORD_FIELDS_MAX || (n && !v))
        return CKH_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (ckh_record_name_check(v[i].name) || !isfinite(v[i].value))
            return CKH_EINVAL;
    return 0;
}

int ckh_record_step(struct ckh_record *r, const struct ckh_rec_step *s)
{
    if (!r || !r->ops || !r->ops->step)
        return 0;
    if (!s || s->step < 1 || s->epoch < 0 || (s->nsamples && !s->samples) ||
        check_digests(s->digests, s->ndigests) || check_values(s->values, s->nvalues))
        return CKH_EINVAL;
    return r->ops->step(r, s);
}

int ckh_record_resume(struct ckh_record *r, const struct ckh_rec_resume *s)
{
    if (!r || !r->ops || !r->ops->resume)
        return 0;
    if (!s || s->step < 0 || s->epoch < 0)
        return CKH_EINVAL;
    return r->ops->resume(r, s);
}

int ckh_record_save(struct ckh_record *r, const struct ckh_rec_save *s)
{
    if (!r || !r->ops || !r->ops->save)
        return 0;
    if (!s || s->step < 0 || s->epoch < 0 || s->rc > 0)
        return CKH_EINVAL;
    return r->ops->save(r, s);
}

int ckh_record_final(struct ckh_record *r, const struct ckh_rec_final *s)
{
    if (!r || !r->ops || !r->ops->final)
        return 0;
    if (!s || s->epochs < 0 || s->steps < 0 || (s->nblobs && !s->blobs) ||
        check_values(s->values, s->nvalues))
        return CKH_EINVAL;
    for (size_t i = 0; i < s->nblobs; i++)
        if (!s->blobs[i])
            return CKH_EINVAL;
    return r->ops->final(r, s);
}
