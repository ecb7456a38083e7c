/* Edge cases of the reference's public building blocks that every workload,
 * backend and saver goes through: workspaces (include/ckh/workspace.h), the
 * samplers' refusals and their state's checks (include/ckh/sampler.h), the
 * backend registry and its wrappers (include/ckh/backend.h) and the saver
 * wrappers (include/ckh/saver.h).
 *
 * Each case asserts what the header promises for a bad argument, a
 * boundary or a state from elsewhere: the error code, the message that
 * names what was wrong, and that nothing was changed. Nothing here touches
 * a disk or the clock. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/atomic.h"
#include "ckh/backend.h"
#include "ckh/endian.h"
#include "ckh/epoch_workload.h"
#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/rng.h"
#include "ckh/sampler.h"
#include "ckh/simfs.h"
#include "ckh/saver.h"
#include "ckh/workspace.h"

/* ---- workspaces ---- */

START_TEST(test_ws_refusals)
{
    struct ckh_ws *ws;
    uint64_t shape[CKH_BLOB_MAX_DIMS + 1] = {2, 3};
    uint64_t elems;
    int32_t data[6] = {1, 2, 3, 4, 5, 6};
    struct ckh_gen gen = {.seed = 1, .stream = 2, .offset = 3};
    char longname[CKH_BLOB_NAME_MAX + 2];

    ck_assert_int_eq(ckh_ws_create(NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    ck_assert_str_eq(ckh_ws_errmsg(NULL), "no workspace");
    ck_assert_ptr_null(ckh_ws_alloc(NULL));
    ck_assert_ptr_null(ckh_ws_alloc(ws));

    /* shapes: too many dimensions, NULL with dimensions, no output, overflow */
    ck_assert_int_eq(ckh_shape_elems(CKH_BLOB_MAX_DIMS + 1, shape, &elems), CKH_EINVAL);
    ck_assert_int_eq(ckh_shape_elems(2, NULL, &elems), CKH_EINVAL);
    ck_assert_int_eq(ckh_shape_elems(2, shape, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_shape_elems(0, NULL, &elems), 0);
    ck_assert_uint_eq(elems, 1);
    uint64_t huge[2] = {UINT64_MAX / 2, 3};
    ck_assert_int_eq(ckh_shape_elems(2, huge, &elems), CKH_EINVAL);
    uint64_t zero[2] = {0, UINT64_MAX};
    ck_assert_int_eq(ckh_shape_elems(2, zero, &elems), 0);
    ck_assert_uint_eq(elems, 0);

    /* names: NULL, empty, one byte too long; the longest is accepted */
    ck_assert_int_eq(ckh_ws_set(NULL, "a", CKH_DT_I32, 2, shape, data), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_set(ws, NULL, CKH_DT_I32, 2, shape, data), CKH_EINVAL);
    ck_assert_str_eq(ckh_ws_errmsg(ws), "blob name is NULL");
    ck_assert_int_eq(ckh_ws_set(ws, "", CKH_DT_I32, 2, shape, data), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "blob name length 0 not in 1..512"));
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ck_assert_int_eq(ckh_ws_set(ws, longname, CKH_DT_I32, 2, shape, data), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "blob name length 513"));
    longname[CKH_BLOB_NAME_MAX] = '\0';
    ck_assert_int_eq(ckh_ws_set(ws, longname, CKH_DT_I32, 2, shape, data), 0);

    /* dtype and shape */
    ck_assert_int_eq(ckh_ws_set(ws, "a", (enum ckh_dtype)99, 2, shape, data), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "unknown dtype 99"));
    ck_assert_int_eq(ckh_ws_set(ws, "a", CKH_DT_I32, 2, huge, data), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "bad shape (ndim 2)"));
    uint64_t big_elems[1] = {UINT64_MAX / 2};
    ck_assert_int_eq(ckh_ws_set(ws, "a", CKH_DT_I64, 1, big_elems, data), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_set(ws, "a", CKH_DT_I32, 2, shape, NULL), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "blob 'a': data is NULL"));
    /* an empty blob needs no data */
    ck_assert_int_eq(ckh_ws_set(ws, "empty", CKH_DT_I32, 2, zero, NULL), 0);
    ck_assert_ptr_null(ckh_ws_find(ws, "empty")->data);

    /* described blobs */
    ck_assert_int_eq(ckh_ws_set_gen(NULL, "g", CKH_DT_U8, 2, shape, &gen), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_set_gen(ws, "g", CKH_DT_U8, 2, shape, NULL), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "generator is NULL"));
    ck_assert_int_eq(ckh_ws_set_gen(ws, "", CKH_DT_U8, 2, shape, &gen), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_set_gen(ws, "g", (enum ckh_dtype)-1, 2, shape, &gen), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_count(ws), 2);
    ckh_ws_destroy(ws);
    ckh_ws_destroy(NULL);
    ckh_ws_clear(NULL);
    ckh_blob_release(NULL, NULL);
}
END_TEST

START_TEST(test_ws_adopt_checks_the_callers_blob)
{
    struct ckh_ws *ws;
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    struct ckh_blob b = {.dtype = CKH_DT_I64, .ndim = 1, .shape = {2}, .size_bytes = 16};

    ck_assert_int_eq(ckh_ws_adopt(NULL, &b), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_adopt(ws, NULL), CKH_EINVAL);
    /* no name */
    ck_assert_int_eq(ckh_ws_adopt(ws, &b), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "blob name is NULL"));
    b.name = strdup("x");
    /* size disagrees with the shape */
    b.size_bytes = 15;
    ck_assert_int_eq(ckh_ws_adopt(ws, &b), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "blob 'x': 15 bytes, its shape says 16"));
    /* bytes promised, none given */
    b.size_bytes = 16;
    ck_assert_int_eq(ckh_ws_adopt(ws, &b), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_ws_errmsg(ws), "blob 'x' has no data"));
    /* bad dtype */
    b.dtype = (enum ckh_dtype)42;
    ck_assert_int_eq(ckh_ws_adopt(ws, &b), CKH_EINVAL);
    b.dtype = CKH_DT_I64;
    /* a described blob needs no data; the caller's blob is emptied */
    b.described = true;
    b.gen.seed = 7;
    ck_assert_int_eq(ckh_ws_adopt(ws, &b), 0);
    ck_assert_ptr_null(b.name);
    ck_assert_int_eq(ckh_ws_count(ws), 1);
    ck_assert_uint_eq(ckh_ws_stored_bytes(ws), 0);
    /* adopting under the same name replaces the blob */
    int64_t v[2] = {5, 6};
    struct ckh_blob c = {.name = strdup("x"), .dtype = CKH_DT_I64, .ndim = 1, .shape = {2},
                         .size_bytes = 16, .data = malloc(16)};
    memcpy(c.data, v, 16);
    ck_assert_int_eq(ckh_ws_adopt(ws, &c), 0);
    ck_assert_int_eq(ckh_ws_count(ws), 1);
    ck_assert_uint_eq(ckh_ws_stored_bytes(ws), 16);
    ck_assert(!ckh_ws_find(ws, "x")->described);
    ckh_ws_destroy(ws);
}
END_TEST

START_TEST(test_ws_lookups_copies_and_digests)
{
    struct ckh_ws *ws;
    struct ckh_gen gen = {.seed = 9, .stream = 1, .offset = 0};
    uint64_t shape[1] = {4};
    int64_t v;
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);

    /* many blobs, inserted out of order: the array grows past 16 and stays sorted */
    for (int i = 39; i >= 0; i--) {
        char name[16];
        snprintf(name, sizeof name, "b%02d", i);
        ck_assert_int_eq(ckh_ws_set_i64(ws, name, i), 0);
    }
    ck_assert_int_eq(ckh_ws_count(ws), 40);
    for (size_t i = 1; i < ckh_ws_count(ws); i++)
        ck_assert_int_lt(strcmp(ckh_ws_at(ws, i - 1)->name, ckh_ws_at(ws, i)->name), 0);
    ck_assert_ptr_null(ckh_ws_at(ws, 40));
    ck_assert_ptr_null(ckh_ws_at(NULL, 0));
    ck_assert_uint_eq(ckh_ws_count(NULL), 0);
    ck_assert_uint_eq(ckh_ws_stored_bytes(NULL), 0);

    /* get_i64: arguments, absent, the wrong kind of blob */
    ck_assert_int_eq(ckh_ws_get_i64(NULL, "b01", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_get_i64(ws, NULL, &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_get_i64(ws, "b01", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_get_i64(ws, "nope", &v), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_ws_set_gen(ws, "gen", CKH_DT_I64, 0, NULL, &gen), 0);
    ck_assert_int_eq(ckh_ws_get_i64(ws, "gen", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_set(ws, "f64", CKH_DT_F64, 0, NULL, &(double){1.5}), 0);
    ck_assert_int_eq(ckh_ws_get_i64(ws, "f64", &v), CKH_EINVAL);
    int64_t four[4] = {1, 2, 3, 4};
    ck_assert_int_eq(ckh_ws_set(ws, "vec", CKH_DT_I64, 1, shape, four), 0);
    ck_assert_int_eq(ckh_ws_get_i64(ws, "vec", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_get_i64(ws, "b17", &v), 0);
    ck_assert_int_eq(v, 17);

    ck_assert_ptr_null(ckh_ws_find(NULL, "b01"));
    ck_assert_ptr_null(ckh_ws_find(ws, NULL));
    ck_assert(!ckh_ws_has(ws, "zz"));

    /* remove */
    ck_assert_int_eq(ckh_ws_remove(NULL, "b01"), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_remove(ws, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_remove(ws, "zz"), CKH_ENOTFOUND);
    ck_assert_str_eq(ckh_ws_errmsg(ws), "no blob 'zz'");

    /* copy: arguments, absent source, onto itself, a described and a stored blob */
    ck_assert_int_eq(ckh_ws_copy(NULL, "a", "b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_copy(ws, NULL, "b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_copy(ws, "a", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_copy(ws, "zz", "b"), CKH_ENOTFOUND);
    ck_assert_str_eq(ckh_ws_errmsg(ws), "no blob 'zz' to copy");
    size_t before = ckh_ws_count(ws);
    ck_assert_int_eq(ckh_ws_copy(ws, "vec", "vec"), 0);
    ck_assert_int_eq(ckh_ws_count(ws), before);
    ck_assert_int_eq(ckh_ws_copy(ws, "gen", "a_gen"), 0);
    ck_assert(ckh_ws_find(ws, "a_gen")->described);
    ck_assert_uint_eq(ckh_ws_find(ws, "a_gen")->gen.seed, 9);
    ck_assert_int_eq(ckh_ws_copy(ws, "vec", "a_vec"), 0);
    ck_assert_mem_eq(ckh_ws_find(ws, "a_vec")->data, four, sizeof four);

    /* digests: a prefix selects blobs; a copy under another name differs; NULL blob keeps h */
    uint64_t all = ckh_ws_digest(ws, NULL);
    ck_assert_uint_ne(all, ckh_ws_digest(ws, "b"));
    ck_assert_uint_eq(ckh_ws_digest(ws, "nothing-starts-so"), ckh_ws_digest(NULL, NULL));
    ck_assert_uint_eq(ckh_blob_digest(1234, NULL), 1234);
    ck_assert_uint_ne(ckh_blob_digest(0, ckh_ws_find(ws, "gen")),
                      ckh_blob_digest(0, ckh_ws_find(ws, "a_gen")));
    /* the stored bytes count described blobs as nothing */
    ck_assert_uint_eq(ckh_ws_stored_bytes(ws), 40 * 8 + 8 + 2 * 32);
    ckh_ws_clear(ws);
    ck_assert_int_eq(ckh_ws_count(ws), 0);
    ck_assert_uint_ne(all, ckh_ws_digest(ws, NULL));
    ckh_ws_destroy(ws);
}
END_TEST

/* ---- samplers ---- */

/* Rewrites the checksum of a state buffer after a field was changed. */
static void reseal(unsigned char *b)
{
    ckh_put_le32(b + 72, ckh_crc32c(0, b, 72));
}

START_TEST(test_dsampler_refusals)
{
    struct ckh_dsampler s;
    uint64_t idx;
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];

    ck_assert_int_eq(ckh_dsampler_init(NULL, NULL, 10, 2, 0, 1, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 0, 2, 0, 1, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 10, 0, 0, 1, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 10, 2, -1, 1, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 10, 2, 2, 1, false), CKH_EINVAL);
    /* drop_last with fewer samples than ranks leaves nothing to read */
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 3, 4, 0, 1, true), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 3, 4, 0, 1, false), 0);
    ckh_dsampler_fini(&s);

    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 10, 2, 1, 5, false), 0);
    ck_assert_int_eq(ckh_dsampler_set_epoch(NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_set_epoch(&s, -1), CKH_EINVAL);
    ck_assert_uint_eq(ckh_dsampler_len(NULL), 0);
    ck_assert_uint_eq(ckh_dsampler_len_max(NULL), 0);
    ck_assert_uint_eq(ckh_dsampler_remaining(NULL), 0);
    ck_assert_uint_eq(ckh_dsampler_digest(NULL), 0);
    ck_assert_int_eq(ckh_dsampler_get(NULL, 0, &idx), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_get(&s, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_get(&s, 5, &idx), CKH_EINVAL);
    ck_assert_str_eq(s.errmsg, "sample 5 past the end of epoch 0");
    ck_assert_int_eq(ckh_dsampler_advance(NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_advance(&s, 6), CKH_EINVAL);
    ck_assert_str_eq(s.errmsg, "advance by 6 past the end of epoch 0 (5 left)");
    ck_assert_int_eq(ckh_dsampler_advance(&s, 5), 0);
    ck_assert_uint_eq(ckh_dsampler_remaining(&s), 0);
    ck_assert_int_eq(ckh_dsampler_get(&s, 0, &idx), CKH_EINVAL);

    ck_assert_int_eq(ckh_dsampler_save(NULL, NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_save(&s, NULL, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_save(&s, NULL, buf, sizeof buf - 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_load(NULL, buf, sizeof buf, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_dsampler_load(&s, NULL, sizeof buf, false), CKH_EINVAL);
    ckh_dsampler_fini(&s);
    ckh_dsampler_fini(NULL);
}
END_TEST

START_TEST(test_dsampler_state_checks)
{
    struct ckh_dsampler s, t;
    unsigned char buf[CKH_SAMPLER_STATE_BYTES], bad[CKH_SAMPLER_STATE_BYTES];
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 10, 2, 0, 5, false), 0);
    ck_assert_int_eq(ckh_dsampler_set_epoch(&s, 3), 0);
    ck_assert_int_eq(ckh_dsampler_advance(&s, 2), 0);
    ck_assert_int_eq(ckh_dsampler_save(&s, NULL, buf, sizeof buf), 0);
    ck_assert_int_eq(ckh_dsampler_init(&t, NULL, 10, 2, 0, 5, false), 0);
    uint64_t before = ckh_dsampler_digest(&t);

    /* truncated, foreign, damaged */
    ck_assert_int_eq(ckh_dsampler_load(&t, buf, sizeof buf - 1, false), CKH_ETRUNCATED);
    ck_assert_str_eq(t.errmsg, "sampler state is 87 bytes, expected 88");
    memcpy(bad, buf, sizeof bad);
    bad[0] ^= 1;
    ck_assert_int_eq(ckh_dsampler_load(&t, bad, sizeof bad, false), CKH_EFOREIGN);
    memcpy(bad, buf, sizeof bad);
    bad[30] ^= 1;
    ck_assert_int_eq(ckh_dsampler_load(&t, bad, sizeof bad, false), CKH_ECORRUPT);
    ck_assert_str_eq(t.errmsg, "sampler state checksum mismatch");
    /* sealed but impossible: world 0, a world past 2^20, a negative epoch */
    static const struct { size_t at; int bytes; uint64_t v; const char *msg; } fields[] = {
        {12, 4, 0, "sampler state has world 0 epoch 3"},
        {12, 4, (1u << 20) + 1, "sampler state has world 1048577 epoch 3"},
        {16, 8, (uint64_t)-1, "sampler state has world 2 epoch -1"},
        {52, 4, 0, "bad epoch world size 0"},
        {52, 4, (1u << 20) + 1, "bad epoch world size 1048577"},
        {56, 8, 11, "sampler state progress 2 is past its epoch"},
        {24, 8, 6, "sampler state progress 6 is past its epoch"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        memcpy(bad, buf, sizeof bad);
        if (fields[i].bytes == 4)
            ckh_put_le32(bad + fields[i].at, (uint32_t)fields[i].v);
        else
            ckh_put_le64(bad + fields[i].at, fields[i].v);
        reseal(bad);
        ck_assert_int_eq(ckh_dsampler_load(&t, bad, sizeof bad, false), CKH_ECORRUPT);
        ck_assert_msg(strstr(t.errmsg, fields[i].msg), "case %zu: %s", i, t.errmsg);
    }
    /* another sampler's state: kind, n, seed, drop_last */
    memcpy(bad, buf, sizeof bad);
    ckh_put_le32(bad + 8, 1);
    reseal(bad);
    ck_assert_int_eq(ckh_dsampler_load(&t, bad, sizeof bad, false), CKH_EMISMATCH);
    ck_assert_ptr_nonnull(strstr(t.errmsg, "belongs to a sharded sampler"));
    static const size_t other[] = {40, 32, 48};
    for (size_t i = 0; i < 3; i++) {
        memcpy(bad, buf, sizeof bad);
        ckh_put_le32(bad + other[i], ckh_get_le32(bad + other[i]) + 1);
        reseal(bad);
        ck_assert_int_eq(ckh_dsampler_load(&t, bad, sizeof bad, false), CKH_EMISMATCH);
        ck_assert_ptr_nonnull(strstr(t.errmsg, "this sampler has n=10 seed=5 drop_last=0"));
    }
    /* nothing of t changed by the refusals */
    ck_assert_uint_eq(ckh_dsampler_digest(&t), before);
    ck_assert_int_eq(ckh_dsampler_load(&t, buf, sizeof buf, false), 0);
    ck_assert_uint_eq(ckh_dsampler_digest(&t), ckh_dsampler_digest(&s));
    ckh_dsampler_fini(&s);
    ckh_dsampler_fini(&t);
}
END_TEST

START_TEST(test_dsampler_reshard_edges)
{
    struct ckh_dsampler s, t;
    unsigned char buf[CKH_SAMPLER_STATE_BYTES];
    struct ckh_defect_set *none = NULL;
    (void)none;
    /* an untouched epoch saved by 2 ranks, loaded by 3: a fresh epoch for 3 */
    ck_assert_int_eq(ckh_dsampler_init(&s, NULL, 12, 2, 0, 5, false), 0);
    ck_assert_int_eq(ckh_dsampler_set_epoch(&s, 4), 0);
    ck_assert_int_eq(ckh_dsampler_save(&s, NULL, buf, sizeof buf), 0);
    ck_assert_int_eq(ckh_dsampler_init(&t, NULL, 12, 3, 1, 5, false), 0);
    ck_assert_int_eq(ckh_dsampler_load(&t, buf, sizeof buf, false), CKH_EMISMATCH);
    ck_assert_ptr_nonnull(strstr(t.errmsg, "saved with world size 2, loading with world size 3"));
    ck_assert_int_eq(ckh_dsampler_load(&t, buf, sizeof buf, true), 0);
    ck_assert_int_eq(t.epoch, 4);
    ck_assert_uint_eq(t.progress, 0);
    ck_assert_uint_eq(t.epoch_offset, 0);
    ck_assert_int_eq(t.epoch_world, 3);
    ck_assert_uint_eq(ckh_dsampler_len(&t), 4);
    ckh_dsampler_fini(&s);
    ckh_dsampler_fini(&t);
}
END_TEST

START_TEST(test_ssampler_refusals_and_state)
{
    struct ckh_ssampler s, t;
    uint64_t idx;
    unsigned char buf[CKH_SAMPLER_STATE_BYTES], bad[CKH_SAMPLER_STATE_BYTES];

    ck_assert_int_eq(ckh_ssampler_init(NULL, NULL, 10, 2, 0, 50, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 0, 2, 0, 50, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 10, 0, 0, 50, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 10, 2, -1, 50, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 10, 2, 2, 50, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 10, 2, 0, 0, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 10, 2, 0, 101, 1), CKH_EINVAL);
    /* 1 % of 10 samples rounds up to one sample; 100 % is all of them */
    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 10, 2, 1, 1, 1), 0);
    ck_assert_uint_eq(ckh_ssampler_len(&s), 1);
    ck_assert_int_eq(ckh_ssampler_get(&s, 0, &idx), 0);
    ck_assert_uint_eq(idx, 5); /* rank 1 of 2 starts at 10 * 1 / 2 */
    ckh_ssampler_fini(&s);
    ck_assert_uint_eq(ckh_ssampler_len(&s), 0);
    ck_assert_int_eq(ckh_ssampler_get(&s, 0, &idx), CKH_EINVAL); /* no shard after fini */
    ckh_ssampler_fini(NULL);

    ck_assert_int_eq(ckh_ssampler_init(&s, NULL, 10, 2, 0, 100, 7), 0);
    ck_assert_uint_eq(ckh_ssampler_len(&s), 10);
    ck_assert_uint_eq(ckh_ssampler_len(NULL), 0);
    ck_assert_uint_eq(ckh_ssampler_remaining(NULL), 0);
    ck_assert_int_eq(ckh_ssampler_set_epoch(NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_set_epoch(&s, -1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_get(NULL, 0, &idx), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_get(&s, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_get(&s, 10, &idx), CKH_EINVAL);
    ck_assert_str_eq(s.errmsg, "sample past the end of the shard");
    ck_assert_int_eq(ckh_ssampler_advance(NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_advance(&s, 11), CKH_EINVAL);
    ck_assert_str_eq(s.errmsg, "advance past the end of the shard");
    ck_assert_int_eq(ckh_ssampler_advance(&s, 4), 0);
    ck_assert_int_eq(ckh_ssampler_save(NULL, NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_save(&s, NULL, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_save(&s, NULL, buf, 10), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_save(&s, NULL, buf, sizeof buf), 0);

    ck_assert_int_eq(ckh_ssampler_init(&t, NULL, 10, 2, 0, 100, 7), 0);
    ck_assert_int_eq(ckh_ssampler_load(NULL, buf, sizeof buf, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_ssampler_load(&t, buf, 3, false), CKH_ETRUNCATED);
    /* a distributed sampler's state */
    struct ckh_dsampler d;
    ck_assert_int_eq(ckh_dsampler_init(&d, NULL, 10, 2, 0, 7, false), 0);
    ck_assert_int_eq(ckh_dsampler_save(&d, NULL, bad, sizeof bad), 0);
    ck_assert_int_eq(ckh_ssampler_load(&t, bad, sizeof bad, false), CKH_EMISMATCH);
    ck_assert_ptr_nonnull(strstr(t.errmsg, "belongs to a distributed sampler"));
    /* and the other way round */
    ck_assert_int_eq(ckh_dsampler_load(&d, buf, sizeof buf, false), CKH_EMISMATCH);
    ckh_dsampler_fini(&d);
    /* another world: refused, and resharding is unsupported for shards */
    struct ckh_ssampler w3;
    ck_assert_int_eq(ckh_ssampler_init(&w3, NULL, 10, 3, 0, 100, 7), 0);
    ck_assert_int_eq(ckh_ssampler_load(&w3, buf, sizeof buf, false), CKH_EMISMATCH);
    ck_assert_str_eq(w3.errmsg,
                     "sharded sampler state was saved with world size 2, loading with 3");
    ck_assert_int_eq(ckh_ssampler_load(&w3, buf, sizeof buf, true), CKH_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(w3.errmsg, "a sharded dataset cannot be resharded"));
    ckh_ssampler_fini(&w3);
    /* another n, seed or pct */
    static const size_t other[] = {40, 32, 64};
    for (size_t i = 0; i < 3; i++) {
        memcpy(bad, buf, sizeof bad);
        ckh_put_le32(bad + other[i], ckh_get_le32(bad + other[i]) + 1);
        reseal(bad);
        ck_assert_int_eq(ckh_ssampler_load(&t, bad, sizeof bad, false), CKH_EMISMATCH);
        ck_assert_ptr_nonnull(strstr(t.errmsg, "sharded sampler state is for n="));
    }
    /* progress past the shard */
    memcpy(bad, buf, sizeof bad);
    ckh_put_le64(bad + 24, 11);
    reseal(bad);
    ck_assert_int_eq(ckh_ssampler_load(&t, bad, sizeof bad, false), CKH_ECORRUPT);
    ck_assert_str_eq(t.errmsg, "progress past the shard");
    ck_assert_uint_eq(ckh_ssampler_remaining(&t), 10);
    /* the good state: progress and order as saved */
    ck_assert_int_eq(ckh_ssampler_load(&t, buf, sizeof buf, false), 0);
    ck_assert_uint_eq(ckh_ssampler_remaining(&t), 6);
    uint64_t a, b;
    ck_assert_int_eq(ckh_ssampler_get(&s, 0, &a), 0);
    ck_assert_int_eq(ckh_ssampler_get(&t, 0, &b), 0);
    ck_assert_uint_eq(a, b);
    ckh_ssampler_fini(&s);
    ckh_ssampler_fini(&t);
}
END_TEST

/* ---- backends ---- */

static struct ckh_backend bare_instance;

static int bare_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    if (strcmp(cfg->prefix, "/refuse") == 0)
        return -EIO;
    *out = &bare_instance;
    return 0;
}

/* A backend with an open method and nothing else (every later method is
 * optional for the wrappers: they answer CKH_EUNSUPPORTED). */
static const struct ckh_backend_ops bare_ops = {.version = 1, .name = "bare", .open = bare_open};
static const struct ckh_backend_ops noopen_ops = {.version = 1, .name = "no-open"};

START_TEST(test_backend_registry)
{
    const struct ckh_backend_ops *ops;
    char msg[512];
    static const struct ckh_backend_ops unnamed = {.version = 1, .name = ""};
    static const struct ckh_backend_ops future = {.version = CKH_BACKEND_ABI_VERSION + 1, .name = "future"};
    static const struct ckh_backend_ops past = {.version = 0, .name = "past"};
    static const struct ckh_backend_ops dup = {.version = 1, .name = "minidb"};
    int rc;

    ck_assert_int_eq(ckh_backend_find(NULL, &ops, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_find("minidb", NULL, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_find("nosuch", &ops, msg, sizeof msg), CKH_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(msg, "unknown checkpoint backend 'nosuch' (known: minidb"));

    ck_assert_int_eq(ckh_backend_register(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_register(&unnamed), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_register(&future), CKH_EVERSION);
    ck_assert_int_eq(ckh_backend_register(&past), CKH_EVERSION);
    ck_assert_int_eq(ckh_backend_register(&dup), CKH_EEXISTS);
    rc = ckh_backend_register(&bare_ops); /* 0, or CKH_EEXISTS after an earlier case without fork */
    ck_assert(rc == 0 || rc == CKH_EEXISTS);
    ck_assert_int_eq(ckh_backend_register(&bare_ops), CKH_EEXISTS);
    ck_assert_int_eq(ckh_backend_find("bare", &ops, msg, sizeof msg), 0);
    ck_assert_ptr_eq(ops, &bare_ops);

    /* fill the registry: 16 backends in all, then CKH_ELIMIT */
    size_t n = 0;
    while (ckh_backend_at(n))
        n++;
    static struct ckh_backend_ops fill[16];
    static char names[16][16];
    size_t added = 0;
    rc = 0;
    for (size_t i = 0; i < 16 && rc == 0; i++) {
        snprintf(names[i], sizeof names[i], "fill%zu", i);
        fill[i] = (struct ckh_backend_ops){.version = 1, .name = names[i]};
        rc = ckh_backend_register(&fill[i]);
        added += rc == 0;
    }
    ck_assert_int_eq(rc, CKH_ELIMIT);
    ck_assert_uint_eq(n + added, 16);
    ck_assert_ptr_null(ckh_backend_at(16));
    /* the list of known names in the message stays within its buffer */
    ck_assert_int_eq(ckh_backend_find("nosuch", &ops, msg, sizeof msg), CKH_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(msg, "fill0"));
    ck_assert_uint_lt(strlen(msg), sizeof msg - 1);
}
END_TEST

START_TEST(test_backend_wrappers)
{
    char msg[512], buf[64];
    struct ckh_fs fs;
    struct ckh_backend *b = NULL;
    struct ckh_ws *ws;
    int64_t *epochs = (int64_t *)1;
    size_t count = 7, loaded = 9;
    bool exists;
    const char *names[] = {"a"};
    memset(&fs, 0, sizeof fs);
    struct ckh_backend_config cfg = {.fs = &fs, .prefix = "/ckpt"};
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    /* registered here, or by this case in an earlier run without fork (CK_FORK=no) */
    int rc = ckh_backend_register(&bare_ops);
    ck_assert(rc == 0 || rc == CKH_EEXISTS);
    rc = ckh_backend_register(&noopen_ops);
    ck_assert(rc == 0 || rc == CKH_EEXISTS);

    ck_assert_int_eq(ckh_backend_open("nosuch", &cfg, &b, msg, sizeof msg), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_backend_open("bare", NULL, &b, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "backend 'bare': config, fs, prefix or output is NULL");
    ck_assert_int_eq(ckh_backend_open("bare", &(struct ckh_backend_config){.prefix = "/x"}, &b, msg,
                                      sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_open("bare", &(struct ckh_backend_config){.fs = &fs}, &b, msg,
                                      sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_open("bare", &cfg, NULL, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_open("no-open", &cfg, &b, msg, sizeof msg), CKH_EUNSUPPORTED);
    ck_assert_str_eq(msg, "backend 'no-open' has no open method");
    cfg.prefix = "/refuse";
    ck_assert_int_eq(ckh_backend_open("bare", &cfg, &b, msg, sizeof msg), -EIO);
    ck_assert_ptr_nonnull(strstr(msg, "backend 'bare': open failed: "));
    cfg.prefix = "/ckpt";
    ck_assert_int_eq(ckh_backend_open("bare", &cfg, &b, msg, sizeof msg), 0);
    ck_assert_ptr_eq(b, &bare_instance);
    b->ops = &bare_ops;

    /* node names and epochs are checked before any method */
    ck_assert_int_eq(ckh_backend_save(NULL, "n", 1, ws, NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_save(b, "a/b", 1, ws, NULL, 0), CKH_EESCAPE);
    ck_assert_str_eq(ckh_backend_errmsg(b), "node name 'a/b' is not a valid file name (CKH_EESCAPE)");
    ck_assert_int_eq(ckh_backend_save(b, NULL, 1, ws, NULL, 0), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_backend_errmsg(b), "node name '(null)'"));
    ck_assert_int_eq(ckh_backend_save(b, "n", -1, ws, NULL, 0), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_backend_errmsg(b), "epoch -1 is negative"));
    ck_assert_int_eq(ckh_backend_save(b, "n", 1, NULL, NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_save(b, "n", 1, ws, NULL, 2), CKH_EINVAL);
    ck_assert_str_eq(ckh_backend_errmsg(b), "save: workspace or names is NULL");
    ck_assert_int_eq(ckh_backend_save(b, "n", 1, ws, names, 1), CKH_EUNSUPPORTED);

    ck_assert_int_eq(ckh_backend_load(b, "..", 1, ws, NULL, 0, 0, &loaded), CKH_EESCAPE);
    ck_assert_uint_eq(loaded, 0);
    ck_assert_int_eq(ckh_backend_load(b, "n", 1, NULL, NULL, 0, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_load(b, "n", 1, ws, NULL, 1, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_load(b, "n", 1, ws, NULL, 0, 0x2, NULL), CKH_EINVAL);
    ck_assert_str_eq(ckh_backend_errmsg(b), "load: bad workspace, names or flags");
    ck_assert_int_eq(ckh_backend_load(b, "n", 1, ws, names, 1, CKH_LOAD_ALLOW_MISSING, &loaded),
                     CKH_EUNSUPPORTED);

    ck_assert_int_eq(ckh_backend_exists(b, ".", 1, &exists), CKH_EESCAPE);
    ck_assert_int_eq(ckh_backend_exists(b, "n", 1, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_exists(b, "n", 1, &exists), CKH_EUNSUPPORTED);

    ck_assert_int_eq(ckh_backend_list_epochs(b, "", &epochs, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_list_epochs(b, "n", NULL, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_list_epochs(b, "n", &epochs, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_list_epochs(b, "n", &epochs, &count), CKH_EUNSUPPORTED);
    ck_assert_ptr_null(epochs);
    ck_assert_uint_eq(count, 0);

    ck_assert_int_eq(ckh_backend_remove(b, "n", -2), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_remove(b, "n", 2), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_backend_db_name(b, "n/", 2, buf, sizeof buf), CKH_EESCAPE);
    ck_assert_int_eq(ckh_backend_db_name(b, "n", 2, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_db_name(b, "n", 2, buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_db_name(b, "n", 2, buf, sizeof buf), CKH_EUNSUPPORTED);
    ck_assert_str_eq(ckh_backend_errmsg(NULL), "no backend");
    ckh_backend_close(b); /* no close method: nothing to do */
    ckh_backend_close(NULL);
    ckh_ws_destroy(ws);
}
END_TEST

START_TEST(test_node_and_db_names)
{
    char name[CKH_NODE_NAME_MAX + 2], buf[64];
    ck_assert_int_eq(ckh_node_name_check(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_node_name_check(""), CKH_EINVAL);
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    ck_assert_int_eq(ckh_node_name_check(name), CKH_EINVAL);
    name[CKH_NODE_NAME_MAX] = '\0';
    ck_assert_int_eq(ckh_node_name_check(name), 0);
    ck_assert_int_eq(ckh_node_name_check("."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_node_name_check(".."), CKH_EESCAPE);
    ck_assert_int_eq(ckh_node_name_check("a/b"), CKH_EESCAPE);
    ck_assert_int_eq(ckh_node_name_check("...") , 0);

    ck_assert_int_eq(ckh_db_name(NULL, "n", 1, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_db_name("/p", NULL, 1, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_db_name("/p", "n", 1, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_db_name("/p", "n", 1, buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_db_name("/p", "n", -1, buf, sizeof buf), CKH_EINVAL);
    /* trailing slashes go; the root stays one slash */
    ck_assert_int_eq(ckh_db_name("/p///", "n", 12, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/p/n.12");
    ck_assert_int_eq(ckh_db_name("/", "n", 0, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/n.0");
    ck_assert_int_eq(ckh_db_name("///", "n", 0, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/n.0");
    /* too small a buffer is refused, never cut */
    ck_assert_int_eq(ckh_db_name("/p", "n", 12, buf, 7), CKH_EINVAL);
    ck_assert_int_eq(ckh_db_name("/p", "n", 12, buf, 8), 0);
}
END_TEST

/* ---- savers ---- */

static struct ckh_saver fake_instance;
static int fake_mode; /* 0: an instance whose ops are left unset, 1: success without an instance, 2: fails */
static int fake_latest_calls, fake_destroyed;

static int fake_create(struct ckh_env *env, const struct ckh_saver_config *cfg, struct ckh_saver **out)
{
    (void)env;
    (void)cfg;
    switch (fake_mode) {
    case 1:
        *out = NULL;
        return 0;
    case 2:
        *out = &fake_instance; /* a failing create's output must not be used */
        return -EIO;
    default:
        fake_instance.ops = NULL;
        *out = &fake_instance;
        return 0;
    }
}
static void fake_destroy(struct ckh_saver *s) { (void)s; fake_destroyed++; }
static int fake_prepare(struct ckh_saver *s, bool force, char *buf, size_t n)
{
    (void)s;
    snprintf(buf, n, "%s", force ? "forced" : "step");
    return 0;
}
static int fake_commit(struct ckh_saver *s, const char *folder)
{
    (void)s;
    return strcmp(folder, "step") == 0 ? 0 : CKH_ENOTFOUND;
}
static int fake_latest(struct ckh_saver *s, char *buf, size_t n)
{
    (void)s;
    fake_latest_calls++;
    snprintf(buf, n, "latest");
    return 0;
}

static const struct ckh_saver_ops fake_ops = {.version = 1, .name = "fake", .create = fake_create,
                                              .destroy = fake_destroy, .prepare = fake_prepare,
                                              .commit = fake_commit, .latest = fake_latest};

START_TEST(test_saver_wrappers)
{
    struct ckh_fs fs;
    memset(&fs, 0, sizeof fs);
    struct ckh_env env = {.fs = &fs}, nofs = {0};
    struct ckh_saver_config cfg = {.output_dir = "/out", .keep_last = -1}, nodir = {0};
    struct ckh_saver *s = (struct ckh_saver *)1;
    struct ckh_saver_ops partial = fake_ops, old = fake_ops;
    char buf[64], msg[128];
    partial.latest = NULL;
    old.version = 0;

    /* refusals before the method: the output is cleared first */
    ck_assert_int_eq(ckh_saver_create(NULL, &env, &cfg, &s), CKH_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(ckh_saver_create(&partial, &env, &cfg, &s), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_create(&old, &env, &cfg, &s), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_create(&fake_ops, NULL, &cfg, &s), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_create(&fake_ops, &nofs, &cfg, &s), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_create(&fake_ops, &env, NULL, &s), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_create(&fake_ops, &env, &nodir, &s), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_create(&fake_ops, &env, &cfg, NULL), CKH_EINVAL);
    /* a method that succeeds without an instance, one that fails */
    fake_mode = 1;
    ck_assert_int_eq(ckh_saver_create(&fake_ops, &env, &cfg, &s), CKH_EINTERNAL);
    fake_mode = 2;
    ck_assert_int_eq(ckh_saver_create(&fake_ops, &env, &cfg, &s), -EIO);
    ck_assert_ptr_null(s);
    /* an instance whose ops the method left unset gets the table */
    fake_mode = 0;
    ck_assert_int_eq(ckh_saver_create(&fake_ops, &env, &cfg, &s), 0);
    ck_assert_ptr_eq(s, &fake_instance);
    ck_assert_ptr_eq(s->ops, &fake_ops);

    ck_assert_int_eq(ckh_saver_prepare(NULL, false, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_prepare(s, false, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_prepare(s, false, buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_prepare(s, true, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "forced");
    ck_assert_int_eq(ckh_saver_commit(NULL, "step"), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_commit(s, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_commit(s, "step"), 0);
    ck_assert_int_eq(ckh_saver_latest(NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_latest(s, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_latest(s, buf, 0), CKH_EINVAL);
    /* resume without its own method is latest; view_leader without one is 0 */
    ck_assert_int_eq(ckh_saver_resume(NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_resume(s, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_resume(s, buf, 0), CKH_EINVAL);
    fake_latest_calls = 0;
    ck_assert_int_eq(ckh_saver_resume(s, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "latest");
    ck_assert_int_eq(fake_latest_calls, 1);
    ck_assert_int_eq(ckh_saver_view_leader(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_view_leader(s), 0);
    ck_assert_str_eq(ckh_saver_errmsg(NULL), "");

    /* check and latest_path: arguments, then unsupported without a method */
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, 0, 1, buf, sizeof buf, msg, sizeof msg),
                     CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, NULL, &cfg, 0, 1, buf, sizeof buf, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &nodir, 0, 1, buf, sizeof buf, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, -1, 1, buf, sizeof buf, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, 0, 0, buf, sizeof buf, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, 1, 1, buf, sizeof buf, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, 0, 1, NULL, sizeof buf, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, 0, 1, buf, 0, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, 0, 1, buf, sizeof buf, NULL, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_check(&fake_ops, &fs, &cfg, 0, 1, buf, sizeof buf, msg, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_latest_path(&fake_ops, &cfg, buf, sizeof buf), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_saver_latest_path(&old, &cfg, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_latest_path(&fake_ops, NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_latest_path(&fake_ops, &nodir, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_latest_path(&fake_ops, &cfg, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_saver_latest_path(&fake_ops, &cfg, buf, 0), CKH_EINVAL);

    fake_destroyed = 0;
    ckh_saver_destroy(NULL);
    ck_assert_int_eq(fake_destroyed, 0);
    ckh_saver_destroy(s);
    ck_assert_int_eq(fake_destroyed, 1);
}
END_TEST

/* ---- the atomic directory saver ---- */

START_TEST(test_adir_configs_refused)
{
    char buf[CKH_PATH_MAX + 1], name[260], dir[CKH_PATH_MAX + 2];
    struct ckh_adir_config c = {.output_dir = "/out", .keep_last = -1};
    ck_assert_int_eq(ckh_adir_latest_path(&c, 0, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/out/AtomicDirectory.latest_checkpoint");
    c.strategy = CKH_ADIR_ASYNC;
    c.name = "m";
    ck_assert_int_eq(ckh_adir_latest_path(&c, 3, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/out/m_rank_3.latest_checkpoint");
    c.output_dir = "/";
    ck_assert_int_eq(ckh_adir_latest_path(&c, 0, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/m_rank_0.latest_checkpoint");
    ck_assert_int_eq(ckh_adir_latest_path(&c, 0, buf, 10), CKH_EINVAL); /* never cut */
    ck_assert_int_eq(ckh_adir_latest_path(&c, 0, NULL, 10), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_latest_path(&c, 0, buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_latest_path(NULL, 0, buf, sizeof buf), CKH_EINVAL);

    /* each bad field alone */
    struct ckh_adir_config good = {.output_dir = "/out", .keep_last = 2, .name = "ok"};
    ck_assert_int_eq(ckh_adir_latest_path(&good, 0, buf, sizeof buf), 0);
    struct ckh_adir_config bad[12];
    for (int i = 0; i < 12; i++)
        bad[i] = good;
    bad[0].output_dir = NULL;
    bad[1].output_dir = "out";
    bad[2].keep_last = 0;
    bad[3].keep_last = -2;
    bad[4].strategy = (enum ckh_adir_strategy)(CKH_ADIR_ASYNC + 1);
    bad[5].name = "";
    bad[6].name = ".";
    bad[7].name = "..";
    bad[8].name = "a/b";
    memset(name, 'n', 201);
    name[201] = '\0';
    bad[9].name = name;
    dir[0] = '/';
    memset(dir + 1, 'd', CKH_PATH_MAX - 200);
    dir[CKH_PATH_MAX - 199] = '\0';
    bad[10].output_dir = dir;
    bad[11].output_dir = "/a/../b";
    for (int i = 0; i < 12; i++)
        ck_assert_msg(ckh_adir_latest_path(&bad[i], 0, buf, sizeof buf) == CKH_EINVAL, "config %d", i);
    ck_assert_int_eq(ckh_adir_latest_path(&good, -1, buf, sizeof buf), CKH_EINVAL);
    name[200] = '\0'; /* the longest name is fine */
    good.name = name;
    ck_assert_int_eq(ckh_adir_latest_path(&good, 0, buf, sizeof buf), 0);

    /* accessors of no saver */
    ck_assert_str_eq(ckh_adir_errmsg(NULL), "");
    ck_assert_str_eq(ckh_adir_name(NULL), "");
    ck_assert_int_eq(ckh_adir_view_leader(NULL), CKH_EINVAL);
    ckh_adir_destroy(NULL);
}
END_TEST

static struct ckh_simfs *adir_disk(struct ckh_env *env)
{
    struct ckh_simfs_config dc = {.name = "d", .sector_bytes = 512, .capacity_bytes = 1 << 22, .seed = 3};
    struct ckh_simfs *disk = NULL;
    ck_assert_int_eq(ckh_simfs_create(&dc, &disk), 0);
    memset(env, 0, sizeof *env);
    env->fs = ckh_simfs_fs(disk);
    return disk;
}

START_TEST(test_adir_calls_refused_and_pointers)
{
    struct ckh_env env;
    struct ckh_simfs *disk = adir_disk(&env);
    struct ckh_adir_config c = {.output_dir = "/out", .is_master = true, .keep_last = -1, .name = "s"};
    struct ckh_adir *d = (struct ckh_adir *)1;
    char buf[CKH_PATH_MAX + 1], msg[512];
    char **names = NULL;
    size_t count = 9;

    ck_assert_int_eq(ckh_adir_create(NULL, &c, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_create(&(struct ckh_env){0}, &c, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_create(&env, &c, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_create(&env, NULL, &d), CKH_EINVAL);

    /* check before anything exists: nothing committed, from scratch */
    ck_assert_int_eq(ckh_adir_check(NULL, &c, 0, buf, sizeof buf, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_check(env.fs, &c, 0, NULL, sizeof buf, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_check(env.fs, &c, 0, buf, 0, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_check(env.fs, &c, 0, buf, sizeof buf, NULL, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_check(env.fs, &c, 0, buf, sizeof buf, msg, 0), CKH_EINVAL);
    struct ckh_adir_config badc = c;
    badc.keep_last = 0;
    ck_assert_int_eq(ckh_adir_check(env.fs, &badc, 0, buf, sizeof buf, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "bad saver configuration for rank 0");
    ck_assert_int_eq(ckh_adir_check(env.fs, &c, 0, buf, sizeof buf, msg, sizeof msg), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_str_eq(msg, "nothing committed in rank 0's view of /out: it starts from scratch");

    ck_assert_int_eq(ckh_adir_create(&env, &c, &d), 0);
    ck_assert_str_eq(ckh_adir_name(d), "s");
    ck_assert_int_eq(ckh_adir_view_leader(d), 0);
    ck_assert_int_eq(ckh_adir_prepare(d, false, buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_prepare(NULL, false, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_commit(NULL, "/out/s_checkpoint_1"), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_commit(d, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_commit(d, "relative"), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_latest(NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_latest(d, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_latest(d, buf, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_resume(NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_resume(d, NULL, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_list(NULL, &names, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_list(d, NULL, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_adir_list(d, &names, NULL), CKH_EINVAL);
    ckh_adir_list_free(NULL, NULL, 0);
    ckh_adir_list_free(d, NULL, 0);
    ck_assert_int_eq(ckh_adir_list(d, &names, &count), 0);
    ck_assert_uint_eq(count, 0);
    ckh_adir_list_free(d, names, count);
    ck_assert_int_eq(ckh_adir_latest(d, buf, sizeof buf), CKH_ENOTFOUND);
    ck_assert_str_eq(ckh_adir_errmsg(d), "no pointer '/out/s.latest_checkpoint' and no committed folder");

    /* one save: prepare's buffer must hold the folder, never cut */
    ck_assert_int_eq(ckh_adir_prepare(d, false, buf, 8), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_adir_errmsg(d), "buffer too small for '/out/s_checkpoint_"));
    ck_assert_int_eq(ckh_adir_prepare(d, true, buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(buf, "_force"));
    ck_assert_int_eq(ckh_adir_commit(d, buf), 0);
    char committed[CKH_PATH_MAX + 1];
    snprintf(committed, sizeof committed, "%s", buf);
    ck_assert_int_eq(ckh_adir_latest(d, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, committed);
    ck_assert_int_eq(ckh_adir_latest(d, buf, 5), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_adir_errmsg(d), "buffer too small"));
    ck_assert_int_eq(ckh_adir_list(d, &names, &count), 0);
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(names[0], committed + strlen("/out/"));
    ckh_adir_list_free(d, names, count);
    ck_assert_int_eq(ckh_adir_check(env.fs, &c, 0, buf, sizeof buf, msg, sizeof msg), 0);
    ck_assert_str_eq(buf, committed);
    ck_assert_ptr_nonnull(strstr(msg, "a committed checkpoint"));

    /* the pointer moved by hand: to a folder that is not there, to one never
     * committed, to one of another saver; each named in the message */
    struct ckh_fs *fs = env.fs;
    const char *link = "/out/s.latest_checkpoint";
    ck_assert_int_eq(ckh_fs_unlink(fs, link), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "/out/gone", link), 0);
    ck_assert_int_eq(ckh_adir_latest(d, buf, sizeof buf), CKH_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(ckh_adir_errmsg(d), "names '/out/gone', which does not exist"));
    ck_assert_int_eq(ckh_adir_check(fs, &c, 0, buf, sizeof buf, msg, sizeof msg), CKH_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(msg, "which does not exist"));
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/out/s_checkpoint_7"), 0);
    ck_assert_int_eq(ckh_fs_unlink(fs, link), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "s_checkpoint_7", link), 0);
    ck_assert_int_eq(ckh_adir_latest(d, buf, sizeof buf), CKH_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(ckh_adir_errmsg(d), "which was never committed"));
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/out/other"), 0);
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(fs, "/out/other/" CKH_ADIR_COMMIT_MARKER, CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_unlink(fs, link), 0);
    ck_assert_int_eq(ckh_fs_symlink(fs, "/out/other", link), 0);
    ck_assert_int_eq(ckh_adir_latest(d, buf, sizeof buf), CKH_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(ckh_adir_errmsg(d), "not a folder of saver 's'"));
    /* a pointer that is a file, not a link */
    ck_assert_int_eq(ckh_fs_unlink(fs, link), 0);
    ck_assert_int_eq(ckh_fs_open(fs, link, CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_lt(ckh_adir_latest(d, buf, sizeof buf), 0);
    ck_assert_ptr_nonnull(strstr(ckh_adir_errmsg(d), "readlink '/out/s.latest_checkpoint'"));
    ckh_adir_destroy(d);
    ckh_simfs_destroy(disk);
}
END_TEST

/* ---- the epoch workloads' tables ---- */

START_TEST(test_epoch_workload_names_and_refusals)
{
    const struct ckh_workload *sp = ckh_epoch_workload_find("seed-pipeline");
    const struct ckh_workload *ps = ckh_epoch_workload_find("param-server");
    ck_assert_ptr_nonnull(sp);
    ck_assert_ptr_nonnull(ps);
    ck_assert_ptr_null(ckh_epoch_workload_find("nosuch"));
    char buf[32];
    struct ckh_workload_spec spec = {.wl = sp, .nnodes = 3};
    ck_assert_int_eq(sp->node_count(&spec), 3);
    ck_assert_int_eq(sp->node_count(NULL), CKH_EINVAL);
    ck_assert_int_eq(sp->node_count(&(struct ckh_workload_spec){.wl = sp}), CKH_EINVAL);
    ck_assert_int_eq(sp->node_name(&spec, 2, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "trainer_2");
    ck_assert_int_eq(sp->node_name(&spec, 3, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(sp->node_name(&spec, -1, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(sp->node_name(NULL, 0, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(sp->node_name(&spec, 0, NULL, 8), CKH_EINVAL);
    ck_assert_int_eq(sp->node_name(&spec, 0, buf, 5), CKH_EINVAL); /* never cut */
    /* param-server: trainers, then its ps nodes (2 unless given) */
    struct ckh_workload_spec pspec = {.wl = ps, .nnodes = 2};
    ck_assert_int_eq(ps->node_count(&pspec), 4);
    ck_assert_int_eq(ps->node_name(&pspec, 3, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "ps_1");
    ck_assert_int_eq(ps->node_name(&pspec, 1, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "trainer_1");
    pspec.num_ps = 5;
    ck_assert_int_eq(ps->node_count(&pspec), 7);
    ck_assert_int_eq(ps->node_name(&pspec, 7, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ps->node_name(&pspec, 6, buf, 4), CKH_EINVAL);
    ck_assert_int_eq(ps->node_count(&(struct ckh_workload_spec){.wl = ps}), CKH_EINVAL);
    ck_assert_int_eq(ps->node_name(NULL, 0, buf, sizeof buf), CKH_EINVAL);

    /* the runner's refusals */
    struct ckh_workload_result r[4];
    struct ckh_env env = {0};
    ck_assert_int_eq(ckh_workload_run_local(NULL, &env, -1, r), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_run_local(&(struct ckh_workload_spec){0}, &env, -1, r), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_run_local(&spec, NULL, -1, r), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_run_local(&spec, &env, -1, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_run_local(&(struct ckh_workload_spec){.wl = sp}, &env, -1, r), CKH_EINVAL);
    struct ckh_workload_node_arg a = {.spec = &spec, .node_index = 0, .result = r};
    ck_assert_int_eq(ckh_workload_node_main(NULL, &a), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_node_main(&env, NULL), CKH_EINVAL);
    a.result = NULL;
    ck_assert_int_eq(ckh_workload_node_main(&env, &a), CKH_EINVAL);
    a.result = r;
    a.node_index = 9;
    ck_assert_int_eq(ckh_workload_node_main(&env, &a), CKH_EINVAL);
    struct ckh_ws *ws;
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    ck_assert_int_eq(ckh_workload_collect(NULL, "trainer_0", ws, r), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_collect(&spec, NULL, ws, r), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_collect(&spec, "trainer_0", NULL, r), CKH_EINVAL);
    ck_assert_int_eq(ckh_workload_collect(&spec, "trainer_0", ws, NULL), CKH_EINVAL);
    /* a node's blobs only, sorted, the others left out */
    ck_assert_int_eq(ckh_ws_set_i64(ws, "trainer_0/b", 1), 0);
    ck_assert_int_eq(ckh_ws_set_i64(ws, "trainer_0/a", 2), 0);
    ck_assert_int_eq(ckh_ws_set_i64(ws, "trainer_1/a", 3), 0);
    ck_assert_int_eq(ckh_workload_collect(&spec, "trainer_0", ws, r), 0);
    ck_assert_str_eq(r->node, "trainer_0");
    ck_assert_str_eq(r->blobs, "trainer_0/a,trainer_0/b");
    ck_assert_uint_eq(r->digest, ckh_ws_digest(ws, "trainer_0/"));
    ckh_ws_destroy(ws);
}
END_TEST

/* ---- atomic file saves ---- */

static const char *node_name_text;
static const char *fake_node_name(struct ckh_node *n)
{
    (void)n;
    return node_name_text;
}

static int write_nothing_fails(void *ctx, struct ckh_file *f)
{
    (void)ctx;
    (void)f;
    return -EIO;
}

START_TEST(test_atomic_save_edges)
{
    struct ckh_env env;
    struct ckh_simfs *disk = adir_disk(&env);
    struct ckh_atomic a;
    char buf[64];
    ck_assert_int_eq(ckh_atomic_init(NULL, &env, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_init(&a, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_init(&a, &(struct ckh_env){0}, NULL), CKH_EINVAL);
    /* the node's name, made safe for a file name; none at all is "node" */
    static const struct ckh_node_ops ops = {.version = 2, .name = fake_node_name};
    struct ckh_node node = {.ops = &ops};
    env.node = &node;
    node_name_text = "rank 0/a.b";
    ck_assert_int_eq(ckh_atomic_init(&a, &env, NULL), 0);
    ck_assert_str_eq(a.node, "rank_0_a_b");
    node_name_text = "";
    ck_assert_int_eq(ckh_atomic_init(&a, &env, NULL), 0);
    ck_assert_str_eq(a.node, "node");
    char longname[100];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    node_name_text = longname;
    ck_assert_int_eq(ckh_atomic_init(&a, &env, NULL), 0);
    ck_assert_uint_eq(strlen(a.node), sizeof a.node - 1);
    env.node = NULL;
    ck_assert_int_eq(ckh_atomic_init(&a, &env, NULL), 0);
    ck_assert_str_eq(a.node, "node");

    ck_assert_int_eq(ckh_atomic_tmp_prefix("/d/f", "n", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/d/f.tmp.n.");
    ck_assert_int_eq(ckh_atomic_tmp_prefix("/d/f", "n", buf, 8), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_tmp_prefix(NULL, "n", buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_tmp_prefix("/d/f", NULL, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_tmp_prefix("/d/f", "n", NULL, 8), CKH_EINVAL);

    struct ckh_listing l;
    ck_assert_int_eq(ckh_atomic_listdir(NULL, NULL, "/", &l), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_listdir(env.fs, NULL, NULL, &l), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_listdir(env.fs, NULL, "/", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_listdir(env.fs, NULL, "/none", &l), -ENOENT);

    /* saves: refusals, a writer that fails leaves nothing behind */
    ck_assert_int_eq(ckh_atomic_save(NULL, "/f", "x", 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_save(&a, "/f", NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_save_with(&a, "/f", NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_save_with(&a, NULL, write_nothing_fails, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_save_with(&a, "/f", write_nothing_fails, NULL), -EIO);
    ck_assert(!ckh_fs_exists(env.fs, "/f"));
    ck_assert_int_eq(ckh_fs_listdir(env.fs, "/", &l), 0);
    ck_assert_uint_eq(l.count, 0); /* no temporary left */
    ckh_fs_listing_free(&l);
    ck_assert_int_eq(ckh_atomic_save(&a, "/f", NULL, 0), 0); /* an empty file */
    void *data = NULL;
    size_t n = 9;
    ck_assert_int_eq(ckh_atomic_read(env.fs, NULL, "/f", &data, &n), 0);
    ck_assert_uint_eq(n, 0);
    free(data);
    ck_assert_int_eq(ckh_fs_mkdir(env.fs, "/dir"), 0);
    ck_assert_int_eq(ckh_atomic_read(env.fs, NULL, "/dir", &data, &n), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_atomic_read(env.fs, NULL, "/none", &data, &n), -ENOENT);
    ck_assert_int_eq(ckh_atomic_read(NULL, NULL, "/f", &data, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_read(env.fs, NULL, "/f", NULL, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_read(env.fs, NULL, "/f", &data, NULL), CKH_EINVAL);

    /* cleaning stale temporaries: bad paths, a missing folder, a folder of the
     * temporary's name left alone, this node's temporaries removed */
    ck_assert_int_eq(ckh_atomic_clean_stale(NULL, "/f"), CKH_EINVAL);
    ck_assert_int_eq(ckh_atomic_clean_stale(&a, NULL), CKH_EINVAL);
    ck_assert_int_lt(ckh_atomic_clean_stale(&a, "rel"), 0);
    ck_assert_ptr_nonnull(strstr(a.errmsg, "bad path 'rel'"));
    ck_assert_int_eq(ckh_atomic_clean_stale(&a, "/none/f"), -ENOENT);
    ck_assert_ptr_nonnull(strstr(a.errmsg, "listdir '/none'"));
    ck_assert_int_eq(ckh_fs_mkdir(env.fs, "/dir/g.tmp.node.1"), 0);
    struct ckh_file *f;
    ck_assert_int_eq(ckh_fs_open(env.fs, "/dir/g.tmp.node.2", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_open(env.fs, "/dir/g.tmp.other.3", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_ge(ckh_atomic_clean_stale(&a, "/dir/g"), 0);
    ck_assert(ckh_fs_exists(env.fs, "/dir/g.tmp.node.1"));  /* a folder: left */
    ck_assert(!ckh_fs_exists(env.fs, "/dir/g.tmp.node.2")); /* this node's: removed */
    ck_assert(ckh_fs_exists(env.fs, "/dir/g.tmp.other.3")); /* another node's: left */
    ckh_simfs_destroy(disk);
}
END_TEST

/* minidb's own refusals and what its listing takes: prefixes that are not
 * absolute folders, epochs spelled other than as plain decimals, and
 * entries that are folders. */
START_TEST(test_minidb_prefix_and_listing)
{
    struct ckh_env env;
    struct ckh_simfs *disk = adir_disk(&env);
    struct ckh_backend *b = NULL;
    char msg[512];
    char longp[CKH_PATH_MAX];
    memset(longp, 'p', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    static const char *const bad[] = {"", "rel/ckpt"};
    for (size_t i = 0; i < 2; i++)
        ck_assert_int_eq(ckh_backend_open("minidb", &(struct ckh_backend_config){.fs = env.fs, .prefix = bad[i]},
                                          &b, msg, sizeof msg),
                         CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_open("minidb", &(struct ckh_backend_config){.fs = env.fs, .prefix = longp}, &b,
                                      msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_backend_open("minidb", &(struct ckh_backend_config){.fs = env.fs, .prefix = "/ck///"}, &b,
                                      msg, sizeof msg),
                     0);
    char name[64];
    ck_assert_int_eq(ckh_backend_db_name(b, "n", 3, name, sizeof name), 0);
    ck_assert_str_eq(name, "/ck/n.3");
    /* no folder yet: nothing exists, nothing is listed */
    bool ex = true;
    ck_assert_int_eq(ckh_backend_exists(b, "n", 3, &ex), 0);
    ck_assert(!ex);
    int64_t *ep = NULL;
    size_t n = 9;
    ck_assert_int_eq(ckh_backend_list_epochs(b, "n", &ep, &n), 0);
    ck_assert_uint_eq(n, 0);
    free(ep);
    /* entries that are not epochs of n */
    ck_assert_int_eq(ckh_fs_mkdir(env.fs, "/ck"), 0);
    static const char *const files[] = {"/ck/n.7", "/ck/n.007", "/ck/n.x1", "/ck/n.", "/ck/n.1234567890123456789",
                                        "/ck/m.4", "/ck/n.12", "/ck/n.0"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct ckh_file *f;
        ck_assert_int_eq(ckh_fs_open(env.fs, files[i], CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
        ck_assert_int_eq(ckh_file_close(f), 0);
    }
    ck_assert_int_eq(ckh_fs_mkdir(env.fs, "/ck/n.5"), 0); /* a folder: not a checkpoint */
    ck_assert_int_eq(ckh_backend_list_epochs(b, "n", &ep, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(ep[0], 0);
    ck_assert_int_eq(ep[1], 7);
    ck_assert_int_eq(ep[2], 12);
    free(ep);
    /* a checkpoint path through a file: missing, not an error */
    ckh_backend_close(b);
    ck_assert_int_eq(ckh_backend_open("minidb", &(struct ckh_backend_config){.fs = env.fs, .prefix = "/ck/n.7"}, &b,
                                      msg, sizeof msg),
                     0);
    ck_assert_int_eq(ckh_backend_exists(b, "n", 1, &ex), 0);
    ck_assert(!ex);
    ckh_backend_close(b);
    ckh_simfs_destroy(disk);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reference_edges");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ws_refusals);
    tcase_add_test(tc, test_ws_adopt_checks_the_callers_blob);
    tcase_add_test(tc, test_ws_lookups_copies_and_digests);
    tcase_add_test(tc, test_dsampler_refusals);
    tcase_add_test(tc, test_dsampler_state_checks);
    tcase_add_test(tc, test_dsampler_reshard_edges);
    tcase_add_test(tc, test_ssampler_refusals_and_state);
    tcase_add_test(tc, test_backend_wrappers); /* before the registry is filled (CK_FORK=no) */
    tcase_add_test(tc, test_backend_registry);
    tcase_add_test(tc, test_node_and_db_names);
    tcase_add_test(tc, test_saver_wrappers);
    tcase_add_test(tc, test_adir_configs_refused);
    tcase_add_test(tc, test_adir_calls_refused_and_pointers);
    tcase_add_test(tc, test_epoch_workload_names_and_refusals);
    tcase_add_test(tc, test_atomic_save_edges);
    tcase_add_test(tc, test_minidb_prefix_and_listing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
