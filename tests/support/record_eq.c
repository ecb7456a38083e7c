/* Record-by-record comparison for tests (tests/support/record_eq.h). */
#include "support/record_eq.h"

#include <check.h>
#include <string.h>

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The index in got of want's i-th name: i itself in order, else a search. */
static size_t match(const char *name, size_t i, const char *(*name_at)(const void *, size_t),
                    const void *got, size_t ngot, bool by_name)
{
    if (!by_name) {
        ck_assert_str_eq(name_at(got, i), name);
        return i;
    }
    for (size_t j = 0; j < ngot; j++)
        if (strcmp(name_at(got, j), name) == 0)
            return j;
    ck_abort_msg("%s missing", name);
    return 0;
}

static const char *value_name(const void *v, size_t i)
{
    return ((const struct ckh_rec_value *)v)[i].name;
}

static const char *digest_name(const void *v, size_t i)
{
    return ((const struct ckh_rec_digest *)v)[i].name;
}

static void same_values(const struct ckh_rec_value *want, size_t nwant, const struct ckh_rec_value *got,
                        size_t ngot, bool by_name)
{
    ck_assert_uint_eq(nwant, ngot);
    for (size_t i = 0; i < nwant; i++) {
        size_t j = match(want[i].name, i, value_name, got, ngot, by_name);
        ck_assert_msg(same_bits(want[i].value, got[j].value), "value %s: want %.17g, got %.17g", want[i].name,
                      want[i].value, got[j].value);
    }
}

static void same_step(const struct ckh_rec_step *a, const struct ckh_rec_step *b, bool by_name)
{
    ck_assert_int_eq(a->step, b->step);
    ck_assert_int_eq(a->epoch, b->epoch);
    ck_assert_uint_eq(a->ndigests, b->ndigests);
    for (size_t i = 0; i < a->ndigests; i++) {
        size_t j = match(a->digests[i].name, i, digest_name, b->digests, b->ndigests, by_name);
        ck_assert_uint_eq(a->digests[i].digest, b->digests[j].digest);
    }
    same_values(a->values, a->nvalues, b->values, b->nvalues, by_name);
    ck_assert_uint_eq(a->nsamples, b->nsamples);
    for (size_t i = 0; i < a->nsamples; i++)
        ck_assert_uint_eq(a->samples[i], b->samples[i]);
}

static void same_final(const struct ckh_rec_final *a, const struct ckh_rec_final *b, bool by_name)
{
    ck_assert_int_eq(a->epochs, b->epochs);
    ck_assert_int_eq(a->steps, b->steps);
    ck_assert_int_eq(a->total, b->total);
    ck_assert_int_eq(a->has_digest, b->has_digest);
    if (a->has_digest)
        ck_assert_uint_eq(a->digest, b->digest);
    same_values(a->values, a->nvalues, b->values, b->nvalues, by_name);
    ck_assert_uint_eq(a->nblobs, b->nblobs);
    for (size_t i = 0; i < a->nblobs; i++)
        ck_assert_str_eq(a->blobs[i], b->blobs[i]);
}

void ckh_test_record_eq(enum ckh_rec_kind kind, const void *want, const void *got, bool by_name)
{
    switch (kind) {
    case CKH_REC_STEP: same_step(want, got, by_name); break;
    case CKH_REC_RESUME: {
        const struct ckh_rec_resume *a = want, *b = got;
        ck_assert_int_eq(a->step, b->step);
        ck_assert_int_eq(a->epoch, b->epoch);
        break;
    }
    case CKH_REC_SAVE: {
        const struct ckh_rec_save *a = want, *b = got;
        ck_assert_int_eq(a->step, b->step);
        ck_assert_int_eq(a->epoch, b->epoch);
        ck_assert_int_eq(a->rc, b->rc);
        ck_assert_int_eq(a->what == NULL, b->what == NULL);
        if (a->what)
            ck_assert_str_eq(a->what, b->what);
        break;
    }
    case CKH_REC_FINAL: same_final(want, got, by_name); break;
    default: ck_abort_msg("unknown record kind %d", (int)kind);
    }
}
