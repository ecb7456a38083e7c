/* Tests for reference/sampler.c: the distributed sampler's order, padding,
 * partition, progress, state round trip, world-size mismatch and
 * resharding; the sharded sampler's shards and state. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/sampler.h"

/* Collects every index rank r reads in epoch e from fresh samplers. */
static void epoch_indices(uint64_t n, int world, bool drop_last, int64_t e, uint64_t *counts,
                          uint64_t *total)
{
    *total = 0;
    for (int r = 0; r < world; r++) {
        struct ckh_dsampler s;
        ck_assert_int_eq(ckh_dsampler_init(&s, NULL, n, world, r, 99, drop_last), 0);
        ck_assert_int_eq(ckh_dsampler_set_epoch(&s, e), 0);
        uint64_t len = ckh_dsampler_len(&s);
        for (uint64_t k = 0; k < len; k++) {
            uint64_t idx;
            ck_assert_int_eq(ckh_dsampler_get(&s, k, &idx), 0);
            ck_assert_uint_lt(idx, n);
            counts[idx]++;
        }
        *total += len;
        ckh_dsampler_fini(&s);
    }
}

START_TEST(test_padding_and_partition)
{
    static const struct { uint64_t n; int w; bool drop; uint64_t per_rank; } cases[] = {
        {10, 3, false, 4}, {10, 3, true, 3}, {8, 4, false, 2}, {5, 8, false, 1}, {17, 2, true, 8},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t counts[32] = {0}, total = 0;
        epoch_indices(cases[c].n, cases[c].w, cases[c].drop, 0, counts, &total);
        ck_assert_uint_eq(total, cases[c].per_rank * (uint64_t)cases[c].w);
        uint64_t seen = 0, dup = 0;
        for (uint64_t i = 0; i < cases[c].n; i++) {
            seen += counts[i] > 0;
            dup += counts[i] > 1 ? counts[i] - 1 : 0;
        }
        if (cases[c].drop) {
            ck_assert_uint_eq(seen, total); /* truncated: no repeats */
        } else {
            ck_assert_uint_eq(seen, cases[c].n); /* padded: everything, some twice */
            ck_assert_uint_eq(dup, total - cases[c].n);
        }
    }
}
END_TEST

START_TEST(test_epochs_differ_and_are_stable)
{
    struct ckh_dsampler a, b;
    ck_assert_int_eq(ckh_dsampler_init(&a, NULL, 50, 1, 0, 7, false), 0);
    ck_assert_int_eq(ckh_dsampler_init(&b, NULL, 50, 1, 0, 7, false), 0);
    uint64_t e0[50], e1[50];
    for (int k = 0; k < 50; k++)
        ck_assert_int_eq(ckh_dsampler_get(&a, (uint64_t)k, &e0[k]), 0);
    ckh_dsampler_set_epoch(&a, 1);
    int same = 0;
    for (int k = 0; k < 50; k++) {
        ck_assert_int_eq(ckh_dsampler_get(&a, (uint64_t)k, &e1[k]), 0);
        same += e0[k] == e1[k];
    }
    ck_assert_int_lt(same, 50);
    for (int k = 0; k < 50; k++) {
        uint64_t v;
        ck_assert_int_eq(ckh_dsampler_get(&b, (uint64_t)k, &v), 0);
        ck_assert_uint_eq(v, e0[k]);
    }
    ckh_dsampler_fini(&a);
    ckh_dsampler_fini(&b);
}
END_TEST

START_TEST(test_advance_save_load)
{
    struct ckh_dsampler a, b;
    ck_assert_int_eq(ckh_dsampler_init(&a, NULL, 40, 4, 2, 5, false), 0);
    ck_assert_int_eq(ckh_dsampler_init(&b, NULL, 40, 4, 2, 5, false), 0);
    ckh_dsampler_set_epoch(&a, 3);
    ck_assert_int_eq(ckh_dsampler_advance(&a, 4), 0);
    ck_assert_uint_eq(ckh_dsampler_remaining(&a), 6);
    ck_assert_int_eq(ckh_dsampler_advance(&a, 7), CKH_EINVAL);
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];
    ck_assert_int_eq(ckh_dsampler_save(&a, NULL, buf, sizeof buf), 0);
    ck_assert_int_eq(ckh_dsampler_load(&b, buf, sizeof buf, false), 0);
    ck_assert_int_eq(b.epoch, 3);
    ck_assert_uint_eq(b.progress, 4);
    for (uint64_t k = 0; k < 6; k++) {
        uint64_t x, y;
        ck_assert_int_eq(ckh_dsampler_get(&a, k, &x), 0);
        ck_assert_int_eq(ckh_dsampler_get(&b, k, &y), 0);
        ck_assert_uint_eq(x, y);
    }
    ck_assert_uint_eq(ckh_dsampler_digest(&a), ckh_dsampler_digest(&b));
    /* The defect drops the progress. */
    struct ckh_defect_set d = {0};
    ckh_defect_enable(&d, CKH_DEFECT_SAMPLER_PROGRESS_NOT_SAVED);
    ck_assert_int_eq(ckh_dsampler_save(&a, &d, buf, sizeof buf), 0);
    ck_assert_int_eq(ckh_dsampler_load(&b, buf, sizeof buf, false), 0);
    ck_assert_uint_eq(b.progress, 0);
    /* Bad bytes. */
    ck_assert_int_eq(ckh_dsampler_load(&b, buf, 10, false), CKH_ETRUNCATED);
    buf[20] ^= 1;
    ck_assert_int_eq(ckh_dsampler_load(&b, buf, sizeof buf, false), CKH_ECORRUPT);
    buf[0] = 'X';
    ck_assert_int_eq(ckh_dsampler_load(&b, buf, sizeof buf, false), CKH_EFOREIGN);
    ck_assert_int_eq(ckh_dsampler_load(NULL, buf, sizeof buf, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_init(&b, NULL, 0, 1, 0, 1, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_init(&b, NULL, 4, 2, 2, 1, false), CKH_EINVAL);
    ckh_dsampler_fini(&a);
    ckh_dsampler_fini(&b);
}
END_TEST

START_TEST(test_world_mismatch)
{
    struct ckh_dsampler a, b;
    ck_assert_int_eq(ckh_dsampler_init(&a, NULL, 40, 4, 0, 5, false), 0);
    ck_assert_int_eq(ckh_dsampler_init(&b, NULL, 40, 2, 0, 5, false), 0);
    ckh_dsampler_advance(&a, 3);
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];
    ckh_dsampler_save(&a, NULL, buf, sizeof buf);
    ck_assert_int_eq(ckh_dsampler_load(&b, buf, sizeof buf, false), CKH_EMISMATCH);
    ck_assert_ptr_nonnull(strstr(b.errmsg, "world size 4"));
    ck_assert_ptr_nonnull(strstr(b.errmsg, "world size 2"));
    ck_assert_uint_eq(b.progress, 0); /* unchanged */
    ckh_dsampler_fini(&a);
    ckh_dsampler_fini(&b);
}
END_TEST

/* Reshard from W0 at progress p to W1: the union of what the W0 ranks
 * consumed and what the W1 ranks read equals the whole epoch's multiset. */
START_TEST(test_reshard_loses_nothing)
{
    static const int worlds[] = {1, 2, 3, 4, 8};
    int w0 = worlds[_i % 5], w1 = worlds[(_i / 5) % 5];
    bool drop = _i >= 25;
    const uint64_t n = 37;
    uint64_t ref[64] = {0}, got[64] = {0}, total;
    epoch_indices(n, w0, drop, 2, ref, &total);
    struct ckh_dsampler s;
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, n, w0, 0, 99, drop), 0);
    ckh_dsampler_set_epoch(&s, 2);
    uint64_t p = ckh_dsampler_len(&s) / 2;
    /* Old ranks consume their first p samples. */
    for (int r = 0; r < w0; r++) {
        struct ckh_dsampler o;
        ck_assert_int_eq(ckh_dsampler_init(&o, NULL, n, w0, r, 99, drop), 0);
        ckh_dsampler_set_epoch(&o, 2);
        for (uint64_t k = 0; k < p && k < ckh_dsampler_len(&o); k++) {
            uint64_t idx;
            ck_assert_int_eq(ckh_dsampler_get(&o, k, &idx), 0);
            got[idx]++;
        }
        ckh_dsampler_fini(&o);
    }
    ck_assert_int_eq(ckh_dsampler_advance(&s, p), 0);
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];
    ckh_dsampler_save(&s, NULL, buf, sizeof buf);
    uint64_t lens = 0;
    for (int r = 0; r < w1; r++) {
        struct ckh_dsampler nw;
        ck_assert_int_eq(ckh_dsampler_init(&nw, NULL, n, w1, r, 99, drop), 0);
        ck_assert_int_eq(ckh_dsampler_load(&nw, buf, sizeof buf, true), 0);
        /* Same world: a plain resume at progress p; else a fresh share. */
        uint64_t len = ckh_dsampler_remaining(&nw);
        ck_assert_uint_le(ckh_dsampler_len(&nw), ckh_dsampler_len_max(&nw));
        ck_assert_uint_ge(ckh_dsampler_len(&nw) + 1, ckh_dsampler_len_max(&nw));
        lens += len;
        for (uint64_t k = 0; k < len; k++) {
            uint64_t idx;
            ck_assert_int_eq(ckh_dsampler_get(&nw, k, &idx), 0);
            got[idx]++;
        }
        ckh_dsampler_fini(&nw);
    }
    ck_assert_uint_eq(lens + p * (uint64_t)w0, total);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_uint_eq(got[i], ref[i]);
    ckh_dsampler_fini(&s);
}
END_TEST

START_TEST(test_sharded)
{
    struct ckh_ssampler a, b;
    ck_assert_int_eq(ckh_ssampler_init(&a, NULL, 100, 4, 1, 30, 3), 0);
    ck_assert_uint_eq(ckh_ssampler_len(&a), 30);
    uint64_t seen[100] = {0};
    for (uint64_t k = 0; k < 30; k++) {
        uint64_t idx;
        ck_assert_int_eq(ckh_ssampler_get(&a, k, &idx), 0);
        ck_assert(idx >= 25 && idx < 55); /* rank 1's shard starts at 100/4 */
        seen[idx]++;
    }
    for (int i = 25; i < 55; i++)
        ck_assert_uint_eq(seen[i], 1);
    ck_assert_int_eq(ckh_ssampler_advance(&a, 12), 0);
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];
    ck_assert_int_eq(ckh_ssampler_save(&a, NULL, buf, sizeof buf), 0);
    ck_assert_int_eq(ckh_ssampler_init(&b, NULL, 100, 4, 1, 30, 3), 0);
    ck_assert_int_eq(ckh_ssampler_load(&b, buf, sizeof buf, false), 0);
    ck_assert_uint_eq(ckh_ssampler_remaining(&b), 18);
    uint64_t x, y;
    ck_assert_int_eq(ckh_ssampler_get(&a, 0, &x), 0);
    ck_assert_int_eq(ckh_ssampler_get(&b, 0, &y), 0);
    ck_assert_uint_eq(x, y);
    ckh_ssampler_fini(&b);
    ck_assert_int_eq(ckh_ssampler_init(&b, NULL, 100, 2, 1, 30, 3), 0);
    ck_assert_int_eq(ckh_ssampler_load(&b, buf, sizeof buf, false), CKH_EMISMATCH);
    ck_assert_int_eq(ckh_ssampler_load(&b, buf, sizeof buf, true), CKH_EUNSUPPORTED);
    struct ckh_dsampler d;
    ck_assert_int_eq(ckh_dsampler_init(&d, NULL, 100, 4, 1, 3, false), 0);
    ck_assert_int_eq(ckh_dsampler_load(&d, buf, sizeof buf, false), CKH_EMISMATCH);
    ck_assert_int_eq(ckh_ssampler_init(&b, NULL, 100, 2, 1, 0, 3), CKH_EINVAL);
    ckh_ssampler_fini(&a);
    ckh_ssampler_fini(&b);
}
END_TEST

/* A state saved at an epoch boundary (nothing of the epoch consumed) is not
 * resharded but started afresh for the new world: the new ranks read
 * exactly what fresh samplers of that world read. */
START_TEST(test_reshard_untouched_epoch_is_fresh)
{
    static const int worlds[] = {1, 2, 3, 4, 8};
    int w0 = worlds[_i % 5], w1 = worlds[(_i / 5) % 5];
    bool drop = _i >= 25;
    const uint64_t n = 37;
    uint64_t ref[64] = {0}, got[64] = {0}, total = 0;
    epoch_indices(n, w1, drop, 3, ref, &total);
    struct ckh_dsampler s;
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, n, w0, 0, 99, drop), 0);
    ck_assert_int_eq(ckh_dsampler_set_epoch(&s, 3), 0);
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];
    ck_assert_int_eq(ckh_dsampler_save(&s, NULL, buf, sizeof buf), 0);
    uint64_t lens = 0;
    for (int r = 0; r < w1; r++) {
        struct ckh_dsampler nw, fresh;
        ck_assert_int_eq(ckh_dsampler_init(&nw, NULL, n, w1, r, 99, drop), 0);
        ck_assert_int_eq(ckh_dsampler_init(&fresh, NULL, n, w1, r, 99, drop), 0);
        ck_assert_int_eq(ckh_dsampler_load(&nw, buf, sizeof buf, true), 0);
        ck_assert_int_eq(ckh_dsampler_set_epoch(&fresh, 3), 0);
        ck_assert_int_eq(nw.epoch, 3);
        ck_assert_int_eq(nw.epoch_world, w1);
        ck_assert_uint_eq(nw.epoch_offset, 0);
        ck_assert_uint_eq(ckh_dsampler_digest(&nw), ckh_dsampler_digest(&fresh));
        uint64_t len = ckh_dsampler_remaining(&nw);
        lens += len;
        for (uint64_t k = 0; k < len; k++) {
            uint64_t a, b;
            ck_assert_int_eq(ckh_dsampler_get(&nw, k, &a), 0);
            ck_assert_int_eq(ckh_dsampler_get(&fresh, k, &b), 0);
            ck_assert_uint_eq(a, b);
            got[a]++;
        }
        ckh_dsampler_fini(&nw);
        ckh_dsampler_fini(&fresh);
    }
    ck_assert_uint_eq(lens, total);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_uint_eq(got[i], ref[i]);
    ckh_dsampler_fini(&s);
}
END_TEST

/* The reshard-ignored defect: the saved per-rank progress is kept in an
 * epoch rebuilt for the new world. Shrinking 4 -> 2 at progress 3 then
 * reads 6 entries of the order a second time (12 consumed, 6 skipped). */
START_TEST(test_reshard_ignored_defect)
{
    const uint64_t n = 40;
    struct ckh_defect_set def = {0};
    ck_assert_int_eq(ckh_defect_enable(&def, CKH_DEFECT_RESHARD_IGNORED), 0);
    uint64_t got[40] = {0};
    for (int r = 0; r < 4; r++) { /* the old world reads 3 entries per rank */
        struct ckh_dsampler o;
        ck_assert_int_eq(ckh_dsampler_init(&o, NULL, n, 4, r, 99, false), 0);
        ckh_dsampler_set_epoch(&o, 1);
        for (uint64_t k = 0; k < 3; k++) {
            uint64_t idx;
            ck_assert_int_eq(ckh_dsampler_get(&o, k, &idx), 0);
            got[idx]++;
        }
        ckh_dsampler_fini(&o);
    }
    struct ckh_dsampler s;
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, n, 4, 0, 99, false), 0);
    ckh_dsampler_set_epoch(&s, 1);
    ck_assert_int_eq(ckh_dsampler_advance(&s, 3), 0);
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];
    ckh_dsampler_save(&s, NULL, buf, sizeof buf);
    for (int r = 0; r < 2; r++) {
        struct ckh_dsampler nw;
        ck_assert_int_eq(ckh_dsampler_init(&nw, NULL, n, 2, r, 99, false), 0);
        ck_assert_int_eq(ckh_dsampler_load_defects(&nw, buf, sizeof buf, true, &def), 0);
        ck_assert_int_eq(nw.epoch_world, 2);
        ck_assert_uint_eq(nw.progress, 3);
        uint64_t len = ckh_dsampler_remaining(&nw);
        ck_assert_uint_eq(len, 17);
        for (uint64_t k = 0; k < len; k++) {
            uint64_t idx;
            ck_assert_int_eq(ckh_dsampler_get(&nw, k, &idx), 0);
            got[idx]++;
        }
        ckh_dsampler_fini(&nw);
    }
    uint64_t twice = 0, never = 0;
    for (uint64_t i = 0; i < n; i++) {
        twice += got[i] == 2;
        never += got[i] == 0;
    }
    ck_assert_uint_eq(twice, 6);
    ck_assert_uint_eq(never, 0);
    /* Without the defect (NULL set) the same state reshards correctly. */
    memset(got, 0, sizeof got);
    uint64_t lens = 0;
    for (int r = 0; r < 2; r++) {
        struct ckh_dsampler nw;
        ck_assert_int_eq(ckh_dsampler_init(&nw, NULL, n, 2, r, 99, false), 0);
        ck_assert_int_eq(ckh_dsampler_load_defects(&nw, buf, sizeof buf, true, NULL), 0);
        ck_assert_uint_eq(nw.epoch_offset, 12);
        lens += ckh_dsampler_remaining(&nw);
        ckh_dsampler_fini(&nw);
    }
    ck_assert_uint_eq(lens, 28);
    ckh_dsampler_fini(&s);
}
END_TEST

static Suite *sampler_suite(void)
{
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_padding_and_partition);
    tcase_add_test(tc, test_epochs_differ_and_are_stable);
    tcase_add_test(tc, test_advance_save_load);
    tcase_add_test(tc, test_world_mismatch);
    tcase_add_loop_test(tc, test_reshard_loses_nothing, 0, 50);
    tcase_add_test(tc, test_sharded);
    tcase_add_loop_test(tc, test_reshard_untouched_epoch_is_fresh, 0, 50);
    tcase_add_test(tc, test_reshard_ignored_defect);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sampler_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
