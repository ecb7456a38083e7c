/* Tests for the simulated object store (sim/objstore.c): each case cites
 * the rule of the specification at the top of that file it checks. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/objstore.h"
#include "support/skip.h"

static struct ckh_objstore *store_new(enum ckh_objstore_consistency c, uint64_t delay_ops)
{
    struct ckh_objstore_config cfg = {.name = "s3", .seed = 42, .consistency = c, .delay_ops = delay_ops,
                                      .min_part_bytes = 4};
    struct ckh_objstore *s = NULL;
    ck_assert_int_eq(ckh_objstore_create(&cfg, &s), 0);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, -1, "ckpt"), 0);
    return s;
}

static struct ckh_objstore_blob *blob_of(const char *text)
{
    size_t n = strlen(text);
    char *data = malloc(n + 1);
    ck_assert_ptr_nonnull(data);
    memcpy(data, text, n + 1);
    struct ckh_objstore_blob *b = NULL;
    ck_assert_int_eq(ckh_objstore_blob_wrap(data, n, &b), 0);
    return b;
}

/* Puts text at key (node 0); returns the result; info may be NULL. */
static int put_text(struct ckh_objstore *s, const char *key, const char *text, struct ckh_objstore_put_info *info)
{
    struct ckh_objstore_blob *b = blob_of(text);
    struct ckh_objstore_req rq = {.node = 0, .bucket = "ckpt", .key = key};
    int rc = ckh_objstore_put(s, &rq, b, info);
    ckh_objstore_blob_unref(b);
    return rc;
}

/* The body a GET of key sees, or NULL with *rc set (the caller frees). */
static char *get_text(struct ckh_objstore *s, const char *key, int *rc)
{
    struct ckh_objstore_req rq = {.node = 0, .bucket = "ckpt", .key = key};
    struct ckh_objstore_object *o = NULL;
    *rc = ckh_objstore_get(s, &rq, false, &o);
    if (*rc != 0)
        return NULL;
    size_t n = (size_t)ckh_objstore_object_size(o);
    char *out = calloc(1, n + 1);
    ck_assert_uint_eq(ckh_objstore_object_read(o, 0, out, n), n);
    ckh_objstore_object_unref(o);
    return out;
}

static void assert_body(struct ckh_objstore *s, const char *key, const char *want)
{
    int rc = 0;
    char *got = get_text(s, key, &rc);
    if (want == NULL) {
        ck_assert_int_eq(rc, CKH_S3_NO_SUCH_KEY);
        return;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(got, want);
    free(got);
}

/* The keys (and "P:" prefixes) a listing shows, joined by ',' */
static void list_names(struct ckh_objstore *s, const struct ckh_objstore_list_params *p, char *out, size_t n,
                       struct ckh_objstore_listing *keep)
{
    struct ckh_objstore_listing l;
    ck_assert_int_eq(ckh_objstore_list(s, 0, "ckpt", p, &l), 0);
    out[0] = '\0';
    for (size_t i = 0; i < l.nentries; i++) {
        strncat(out, l.entries[i].key, n - strlen(out) - 1);
        strncat(out, ",", n - strlen(out) - 1);
    }
    for (size_t i = 0; i < l.nprefixes; i++) {
        strncat(out, "P:", n - strlen(out) - 1);
        strncat(out, l.prefixes[i], n - strlen(out) - 1);
        strncat(out, ",", n - strlen(out) - 1);
    }
    if (keep != NULL)
        *keep = l;
    else
        ckh_objstore_listing_free(&l);
}

/* O2: bucket names and lifetimes. */
START_TEST(buckets)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, "ckpt"), CKH_S3_BUCKET_EXISTS);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, "Up"), CKH_S3_INVALID_BUCKET_NAME);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, "-abc"), CKH_S3_INVALID_BUCKET_NAME);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, "ab"), CKH_S3_INVALID_BUCKET_NAME);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, "aaa"), 0);
    ck_assert_uint_eq(ckh_objstore_bucket_count(s), 2);
    ck_assert_str_eq(ckh_objstore_bucket_name(s, 0), "aaa");
    ck_assert_int_eq(ckh_objstore_head_bucket(s, 0, "nope"), CKH_S3_NO_SUCH_BUCKET);
    ck_assert_int_eq(put_text(s, "k", "v", NULL), 0);
    ck_assert_int_eq(ckh_objstore_delete_bucket(s, 0, "ckpt"), CKH_S3_BUCKET_NOT_EMPTY);
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "k"};
    ck_assert_int_eq(ckh_objstore_delete(s, &rq, NULL), 0);
    ck_assert_int_eq(ckh_objstore_delete_bucket(s, 0, "ckpt"), 0);
    ck_assert_int_eq(ckh_objstore_delete_bucket(s, 0, "ckpt"), CKH_S3_NO_SUCH_BUCKET);
    ck_assert_int_eq(put_text(s, "k", "v", NULL), CKH_S3_NO_SUCH_BUCKET);
    ck_assert_int_eq(ckh_s3_err_status(CKH_S3_NO_SUCH_BUCKET), 404);
    ck_assert_str_eq(ckh_s3_err_code(CKH_S3_SLOW_DOWN), "SlowDown");
    ck_assert_int_eq(ckh_s3_err_status(CKH_S3_SLOW_DOWN), 503);
    ckh_objstore_destroy(s);
}
END_TEST

/* O3: put, get, head, overwrite, delete, keys with odd bytes. */
START_TEST(objects)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    struct ckh_objstore_put_info a, b, c;
    ck_assert_int_eq(put_text(s, "dir/a b\x01\xc3\xa9", "hello", &a), 0);
    ck_assert_uint_eq(a.size, 5);
    ck_assert_uint_eq(strlen(a.etag), 34);
    ck_assert_int_eq(a.etag[0], '"');
    ck_assert_int_eq(put_text(s, "x", "hello", &b), 0);
    ck_assert_str_eq(a.etag, b.etag); /* same bytes, same tag */
    ck_assert_int_eq(put_text(s, "x", "world", &c), 0);
    ck_assert_str_ne(b.etag, c.etag);
    assert_body(s, "dir/a b\x01\xc3\xa9", "hello");
    assert_body(s, "x", "world");
    ck_assert_uint_eq(ckh_objstore_object_count(s), 2);
    ck_assert_uint_eq(ckh_objstore_last_seq(s), 6); /* bucket, 3 puts, 2 gets */
    ck_assert(ckh_objstore_bucket_name_ok("my.bucket-1"));
    ck_assert(!ckh_objstore_bucket_name_ok("my_bucket"));
    /* S3's rules the conformance suite checks (test_bucket_create_naming_*) */
    ck_assert(!ckh_objstore_bucket_name_ok("foo..bar"));
    ck_assert(!ckh_objstore_bucket_name_ok("foo.-bar"));
    ck_assert(!ckh_objstore_bucket_name_ok("foo-.bar"));
    ck_assert(!ckh_objstore_bucket_name_ok("192.168.5.123"));
    ck_assert(ckh_objstore_bucket_name_ok("foo--bar"));
    ck_assert(ckh_objstore_bucket_name_ok("192.168.5.123x"));
    ck_assert(ckh_objstore_bucket_name_ok("1.2.3"));
    assert_body(s, "nothing", NULL);
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "x", .content_type = "text/plain"};
    struct ckh_objstore_blob *e = blob_of("");
    ck_assert_int_eq(ckh_objstore_put(s, &rq, e, NULL), 0);
    ckh_objstore_blob_unref(e);
    struct ckh_objstore_object *o = NULL;
    ck_assert_int_eq(ckh_objstore_get(s, &rq, true, &o), 0);
    ck_assert_uint_eq(ckh_objstore_object_size(o), 0);
    ck_assert_str_eq(ckh_objstore_object_content_type(o), "text/plain");
    ckh_objstore_object_unref(o);
    ck_assert_int_eq(ckh_objstore_delete(s, &rq, NULL), 0);
    ck_assert_int_eq(ckh_objstore_delete(s, &rq, NULL), 0); /* absent: still 204 */
    ck_assert_int_eq(ckh_objstore_get(s, &rq, true, &o), CKH_S3_NO_SUCH_KEY);
    char longkey[1100];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    ck_assert_int_eq(put_text(s, longkey, "v", NULL), CKH_S3_KEY_TOO_LONG);
    ck_assert_int_eq(put_text(s, "", "v", NULL), CKH_S3_INVALID_ARGUMENT);
    ckh_objstore_destroy(s);
}
END_TEST

/* O4: ranges. */
START_TEST(ranges)
{
    uint64_t off = 0, len = 0;
    ck_assert_int_eq(ckh_objstore_range("bytes=0-3", 10, &off, &len), 0);
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(len, 4);
    ck_assert_int_eq(ckh_objstore_range("bytes=4-", 10, &off, &len), 0);
    ck_assert_uint_eq(off, 4);
    ck_assert_uint_eq(len, 6);
    ck_assert_int_eq(ckh_objstore_range("bytes=8-100", 10, &off, &len), 0);
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(ckh_objstore_range("bytes=-3", 10, &off, &len), 0);
    ck_assert_uint_eq(off, 7);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(ckh_objstore_range("bytes=-30", 10, &off, &len), 0);
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(len, 10);
    ck_assert_int_eq(ckh_objstore_range("bytes=10-", 10, &off, &len), CKH_S3_INVALID_RANGE);
    ck_assert_int_eq(ckh_objstore_range("bytes=-0", 10, &off, &len), CKH_S3_INVALID_RANGE);
    ck_assert_int_eq(ckh_objstore_range("bytes=0-0", 0, &off, &len), CKH_S3_INVALID_RANGE);
    ck_assert_int_eq(ckh_objstore_range("bytes=5-2", 10, &off, &len), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_objstore_range("bytes=0-1,4-5", 10, &off, &len), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_objstore_range("items=0-1", 10, &off, &len), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_objstore_range("bytes=x-1", 10, &off, &len), CKH_ENOTFOUND);
    /* a range read across the extents of a multipart object */
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "m"};
    char id[48];
    ck_assert_int_eq(ckh_objstore_mpu_create(s, &rq, id, NULL), 0);
    struct ckh_objstore_put_info p1, p2;
    struct ckh_objstore_blob *b1 = blob_of("abcd"), *b2 = blob_of("efg");
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 1, b1, &p1), 0);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 2, b2, &p2), 0);
    struct ckh_objstore_part_ref refs[2] = {{1, p1.etag}, {2, p2.etag}};
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, refs, 2, NULL), 0);
    struct ckh_objstore_object *o = NULL;
    ck_assert_int_eq(ckh_objstore_get(s, &rq, false, &o), 0);
    char buf[8] = {0};
    ck_assert_uint_eq(ckh_objstore_object_read(o, 2, buf, 4), 4);
    ck_assert_str_eq(buf, "cdef");
    ck_assert_uint_eq(ckh_objstore_object_read(o, 6, buf, 8), 1);
    ck_assert_uint_eq(ckh_objstore_object_read(o, 7, buf, 8), 0);
    ckh_objstore_object_unref(o);
    ckh_objstore_blob_unref(b1);
    ckh_objstore_blob_unref(b2);
    ckh_objstore_destroy(s);
}
END_TEST

/* O5: conditional writes and reads. */
START_TEST(conditions)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_EVENTUAL, 100); /* conditions stay strong */
    struct ckh_objstore_blob *b = blob_of("one");
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "commit", .if_none_match = "*"};
    struct ckh_objstore_put_info info;
    ck_assert_int_eq(ckh_objstore_put(s, &rq, b, &info), 0);
    ck_assert_int_eq(ckh_objstore_put(s, &rq, b, NULL), CKH_S3_PRECONDITION_FAILED);
    rq.if_none_match = NULL;
    rq.if_match = "\"0000\"";
    ck_assert_int_eq(ckh_objstore_put(s, &rq, b, NULL), CKH_S3_PRECONDITION_FAILED);
    rq.if_match = info.etag;
    ck_assert_int_eq(ckh_objstore_put(s, &rq, b, NULL), 0);
    char bare[48];
    snprintf(bare, sizeof bare, "%.*s", (int)strlen(info.etag) - 2, info.etag + 1);
    rq.if_match = bare; /* without quotes */
    ck_assert_int_eq(ckh_objstore_put(s, &rq, b, NULL), 0);
    rq.key = "absent";
    ck_assert_int_eq(ckh_objstore_put(s, &rq, b, NULL), CKH_S3_NO_SUCH_KEY);
    rq.key = "commit";
    struct ckh_objstore_object *o = NULL;
    rq.if_match = NULL;
    rq.if_none_match = info.etag;
    ck_assert_int_eq(ckh_objstore_get(s, &rq, false, &o), CKH_S3_NOT_MODIFIED);
    rq.if_none_match = NULL;
    rq.if_match = "\"ffff\"";
    ck_assert_int_eq(ckh_objstore_get(s, &rq, true, &o), CKH_S3_PRECONDITION_FAILED);
    ckh_objstore_blob_unref(b);
    ckh_objstore_destroy(s);
}
END_TEST

/* O9: prefixes, delimiters, paging, tokens, start-after. */
START_TEST(listing)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    const char *keys[] = {"a/1", "a/2", "a/3", "b/1/x", "b/2/y", "c", "d/1"};
    for (size_t i = 0; i < 7; i++)
        ck_assert_int_eq(put_text(s, keys[i], "v", NULL), 0);
    char names[512];
    struct ckh_objstore_list_params p = {0};
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "a/1,a/2,a/3,b/1/x,b/2/y,c,d/1,");
    p.delimiter = "/";
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "c,P:a/,P:b/,P:d/,");
    p.prefix = "b/";
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "P:b/1/,P:b/2/,");
    /* pages of 2 with a delimiter: a prefix ending a page is skipped whole */
    p.prefix = NULL;
    p.max_keys = 2;
    struct ckh_objstore_listing l;
    list_names(s, &p, names, sizeof names, &l);
    ck_assert_str_eq(names, "P:a/,P:b/,");
    ck_assert(l.truncated);
    char *tok = strdup(l.next_token);
    ckh_objstore_listing_free(&l);
    p.token = tok;
    list_names(s, &p, names, sizeof names, &l);
    ck_assert_str_eq(names, "c,P:d/,");
    ck_assert(!l.truncated);
    ck_assert_ptr_null(l.next_token);
    ckh_objstore_listing_free(&l);
    free(tok);
    /* pages of 3 without a delimiter cover every key once */
    p = (struct ckh_objstore_list_params){.max_keys = 3};
    char all[512] = "";
    for (int page = 0; page < 5; page++) {
        list_names(s, &p, names, sizeof names, &l);
        strcat(all, names);
        free((char *)p.token);
        p.token = l.next_token != NULL ? strdup(l.next_token) : NULL;
        bool more = l.truncated;
        ckh_objstore_listing_free(&l);
        if (!more)
            break;
    }
    ck_assert_ptr_null(p.token);
    ck_assert_str_eq(all, "a/1,a/2,a/3,b/1/x,b/2/y,c,d/1,");
    p = (struct ckh_objstore_list_params){.start_after = "b/1/x"};
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "b/2/y,c,d/1,");
    p = (struct ckh_objstore_list_params){.token = "zz"};
    ck_assert_int_eq(ckh_objstore_list(s, 0, "ckpt", &p, &l), CKH_S3_INVALID_ARGUMENT);
    ck_assert_int_eq(ckh_objstore_list(s, 0, "nope", &p, &l), CKH_S3_NO_SUCH_BUCKET);
    /* the fault's view: keys written in the last 2 ops are left out */
    ck_assert_int_eq(put_text(s, "e", "v", NULL), 0);
    p = (struct ckh_objstore_list_params){.omit_newer_ops = 2, .prefix = "d"};
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "d/1,");
    p.prefix = "e";
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "");
    ckh_objstore_destroy(s);
}
END_TEST

/* O10: multipart uploads. */
START_TEST(multipart)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "big", .content_type = "application/x"};
    char id[48];
    ck_assert_int_eq(ckh_objstore_mpu_create(s, &rq, id, NULL), 0);
    ck_assert_uint_eq(ckh_objstore_mpu_open_count(s, "ckpt"), 1);
    struct ckh_objstore_blob *b1 = blob_of("1111"), *b2 = blob_of("22"), *b3 = blob_of("333");
    struct ckh_objstore_put_info p1, p2, p3;
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 2, b1, &p2), 0); /* replaced below */
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 1, b1, &p1), 0);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 2, b2, &p2), 0);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 3, b3, &p3), 0);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 0, b3, NULL), CKH_S3_INVALID_ARGUMENT);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, "bogus", 1, b3, NULL), CKH_S3_NO_SUCH_UPLOAD);
    struct ckh_objstore_req other = rq;
    other.key = "other";
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &other, id, 1, b3, NULL), CKH_S3_NO_SUCH_UPLOAD);
    struct ckh_objstore_part_info *parts = NULL;
    size_t n = 0;
    ck_assert_int_eq(ckh_objstore_mpu_list_parts(s, &rq, id, &parts, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(parts[1].part, 2);
    ck_assert_uint_eq(parts[1].size, 2);
    ck_assert_str_eq(parts[1].etag, p2.etag);
    free(parts);
    assert_body(s, "big", NULL); /* invisible until completed */
    char names[64];
    struct ckh_objstore_list_params lp = {0};
    list_names(s, &lp, names, sizeof names, NULL);
    ck_assert_str_eq(names, "");
    struct ckh_objstore_part_ref bad_order[2] = {{2, p2.etag}, {1, p1.etag}};
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, bad_order, 2, NULL), CKH_S3_INVALID_PART_ORDER);
    struct ckh_objstore_part_ref bad_tag[2] = {{1, p1.etag}, {2, p1.etag}};
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, bad_tag, 2, NULL), CKH_S3_INVALID_PART);
    struct ckh_objstore_part_ref missing[2] = {{1, p1.etag}, {4, p1.etag}};
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, missing, 2, NULL), CKH_S3_INVALID_PART);
    struct ckh_objstore_part_ref small[2] = {{2, p2.etag}, {3, p3.etag}}; /* part 2 < 4 bytes */
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, small, 2, NULL), CKH_S3_ENTITY_TOO_SMALL);
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, NULL, 0, NULL), CKH_S3_MALFORMED_XML);
    struct ckh_objstore_part_ref good[2] = {{1, p1.etag}, {3, p3.etag}}; /* parts may be skipped */
    struct ckh_objstore_put_info done;
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, good, 2, &done), 0);
    ck_assert_uint_eq(done.size, 7);
    ck_assert_ptr_nonnull(strstr(done.etag, "-2\""));
    assert_body(s, "big", "1111333");
    ck_assert_uint_eq(ckh_objstore_mpu_open_count(s, "ckpt"), 0);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 1, b1, NULL), CKH_S3_NO_SUCH_UPLOAD);
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &rq, id, good, 2, NULL), CKH_S3_NO_SUCH_UPLOAD);
    /* abort */
    char id2[48];
    ck_assert_int_eq(ckh_objstore_mpu_create(s, &rq, id2, NULL), 0);
    ck_assert_str_ne(id, id2);
    ck_assert_int_eq(ckh_objstore_delete_bucket(s, 0, "ckpt"), CKH_S3_BUCKET_NOT_EMPTY);
    ck_assert_int_eq(ckh_objstore_mpu_abort(s, &rq, id2, NULL), 0);
    ck_assert_int_eq(ckh_objstore_mpu_abort(s, &rq, id2, NULL), CKH_S3_NO_SUCH_UPLOAD);
    assert_body(s, "big", "1111333");
    ckh_objstore_blob_unref(b1);
    ckh_objstore_blob_unref(b2);
    ckh_objstore_blob_unref(b3);
    ckh_objstore_destroy(s);
}
END_TEST

/* O11: bytes held once through copies, parts and overwrites. */
START_TEST(bytes_held_once)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    ck_assert_int_eq(put_text(s, "a", "0123456789", NULL), 0);
    ck_assert_uint_eq(ckh_objstore_body_bytes(s), 10);
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "b"};
    struct ckh_objstore_put_info info;
    ck_assert_int_eq(ckh_objstore_copy(s, &rq, "ckpt", "a", &info), 0);
    ck_assert_uint_eq(ckh_objstore_body_bytes(s), 10); /* shared */
    assert_body(s, "b", "0123456789");
    ck_assert_int_eq(ckh_objstore_copy(s, &rq, "ckpt", "zz", NULL), CKH_S3_NO_SUCH_KEY);
    ck_assert_int_eq(ckh_objstore_copy(s, &rq, "nope", "a", NULL), CKH_S3_NO_SUCH_BUCKET);
    /* corruption copies the one blob, for the version it damages */
    ck_assert_int_eq(ckh_objstore_corrupt(s, "ckpt", "b", 3), 0);
    ck_assert_uint_eq(ckh_objstore_body_bytes(s), 20);
    assert_body(s, "a", "0123456789");
    int rc = 0;
    char *got = get_text(s, "b", &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq((unsigned char)got[3], (unsigned char)('3' ^ 0xff));
    free(got);
    ck_assert_int_eq(ckh_objstore_corrupt(s, "ckpt", "none", 0), CKH_S3_NO_SUCH_KEY);
    ck_assert_int_eq(ckh_objstore_expire(s, "ckpt", "a"), 0);
    assert_body(s, "a", NULL);
    ck_assert_uint_eq(ckh_objstore_body_bytes(s), 10);
    ck_assert_int_eq(ckh_objstore_expire(s, "ckpt", "a"), CKH_S3_NO_SUCH_KEY);
    ckh_objstore_destroy(s);
}
END_TEST

/* Advances the store by n reads of an unrelated key. */
static void tick(struct ckh_objstore *s, int n)
{
    for (int i = 0; i < n; i++)
        assert_body(s, "unrelated", NULL);
}

/* O6, O8: listings lag under list-delay. */
START_TEST(list_delay)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_LIST_DELAY, 3);
    char names[128];
    struct ckh_objstore_list_params p = {0};
    ck_assert_int_eq(put_text(s, "k", "v1", NULL), 0); /* op 2: visible from op 5 */
    assert_body(s, "k", "v1");                           /* op 3: reads are strong */
    list_names(s, &p, names, sizeof names, NULL);        /* op 4 */
    ck_assert_str_eq(names, "");
    list_names(s, &p, names, sizeof names, NULL); /* op 5 */
    ck_assert_str_eq(names, "k,");
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "k"};
    ck_assert_int_eq(ckh_objstore_delete(s, &rq, NULL), 0); /* op 6 */
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "k,"); /* lingers */
    tick(s, 2);
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "");
    ckh_objstore_destroy(s);

    /* by virtual time: visible once the clock passed the write + delay_ns */
    struct ckh_objstore_config cfg = {.consistency = CKH_OBJSTORE_LIST_DELAY, .delay_ns = 1000};
    ck_assert_int_eq(ckh_objstore_create(&cfg, &s), 0);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, -1, "ckpt"), 0);
    ckh_objstore_set_time(s, 500);
    ck_assert_int_eq(put_text(s, "k", "v1", NULL), 0);
    tick(s, 50);
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "");
    ckh_objstore_set_time(s, 1499);
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "");
    ckh_objstore_set_time(s, 100); /* never moves back */
    ckh_objstore_set_time(s, 1500);
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "k,");
    ckh_objstore_destroy(s);
}
END_TEST

/* O6, O7: reads of overwritten and deleted keys lag; new keys do not. */
START_TEST(overwrite_delay)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_OVERWRITE_DELAY, 4);
    ck_assert_int_eq(put_text(s, "latest", "step1", NULL), 0); /* op 2 */
    assert_body(s, "latest", "step1");                          /* new key: at once */
    tick(s, 4);
    ck_assert_int_eq(put_text(s, "latest", "step2", NULL), 0); /* op 8: visible from op 12 */
    assert_body(s, "latest", "step1");                          /* op 9 */
    ck_assert_int_eq(put_text(s, "latest", "step3", NULL), 0); /* op 10: still step1 until 14 */
    assert_body(s, "latest", "step1");
    tick(s, 2);                        /* ops 12, 13 */
    assert_body(s, "latest", "step3"); /* op 14 */
    char names[64];
    struct ckh_objstore_list_params p = {0};
    list_names(s, &p, names, sizeof names, NULL); /* listings are strong here */
    ck_assert_str_eq(names, "latest,");
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "latest"};
    ck_assert_int_eq(ckh_objstore_delete(s, &rq, NULL), 0);
    assert_body(s, "latest", "step3"); /* a deleted key reads on a while */
    tick(s, 4);
    assert_body(s, "latest", NULL);
    ck_assert_int_eq(ckh_objstore_consistency_parse("eventual", &(enum ckh_objstore_consistency){0}), 0);
    ck_assert_int_eq(ckh_objstore_consistency_parse("weak", &(enum ckh_objstore_consistency){0}), CKH_ENOTFOUND);
    ck_assert_str_eq(ckh_objstore_consistency_name(CKH_OBJSTORE_LIST_DELAY), "list-delay");
    ckh_objstore_destroy(s);
}
END_TEST

/* O12: given choices, undo restores what the write replaced. */
START_TEST(crash_given_choices)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    struct ckh_objstore_put_info i1, i2;
    ck_assert_int_eq(put_text(s, "a", "old", &i1), 0);
    ckh_objstore_ack(s, i1.seq);
    ck_assert_uint_eq(ckh_objstore_inflight_count(s, -1), 0);
    ck_assert_int_eq(put_text(s, "a", "new", &i2), 0);
    ck_assert_int_eq(put_text(s, "b", "bee", NULL), 0);
    struct ckh_objstore_req rq = {.node = 1, .bucket = "ckpt", .key = "c"};
    struct ckh_objstore_blob *blob = blob_of("node1");
    ck_assert_int_eq(ckh_objstore_put(s, &rq, blob, NULL), 0);
    ckh_objstore_blob_unref(blob);
    ck_assert_uint_eq(ckh_objstore_inflight_count(s, 0), 2);
    ck_assert_uint_eq(ckh_objstore_inflight_count(s, 1), 1);
    bool wrong_n[1] = {true};
    ck_assert_int_eq(ckh_objstore_crash(s, 0, wrong_n, 1), CKH_EINVAL);
    bool choices[2] = {false, true}; /* "a"=new undone, "b" kept */
    ck_assert_int_eq(ckh_objstore_crash(s, 0, choices, 2), 1);
    assert_body(s, "a", "old");
    assert_body(s, "b", "bee");
    assert_body(s, "c", "node1"); /* node 1's write is not node 0's crash */
    ck_assert_uint_eq(ckh_objstore_inflight_count(s, -1), 1);
    /* a later kept write to the same key wins over an undone earlier one */
    ck_assert_int_eq(put_text(s, "d", "first", NULL), 0);
    ck_assert_int_eq(put_text(s, "d", "second", NULL), 0);
    bool c2[2] = {false, true};
    ck_assert_int_eq(ckh_objstore_crash(s, 0, c2, 2), 1);
    assert_body(s, "d", "second");
    /* an undone delete brings the object back; an undone complete reopens the upload */
    bool keep1[1] = {true};
    ck_assert_int_eq(ckh_objstore_crash(s, -1, keep1, 1), 0);
    struct ckh_objstore_req del = {.bucket = "ckpt", .key = "b"};
    uint64_t dseq = 0;
    ck_assert_int_eq(ckh_objstore_delete(s, &del, &dseq), 0);
    struct ckh_objstore_req mrq = {.bucket = "ckpt", .key = "m"};
    char id[48];
    uint64_t cseq = 0;
    ck_assert_int_eq(ckh_objstore_mpu_create(s, &mrq, id, &cseq), 0);
    ckh_objstore_ack(s, cseq);
    struct ckh_objstore_blob *pb = blob_of("part");
    struct ckh_objstore_put_info pi, ci;
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &mrq, id, 1, pb, &pi), 0);
    ckh_objstore_ack(s, pi.seq);
    ckh_objstore_blob_unref(pb);
    struct ckh_objstore_part_ref ref = {1, pi.etag};
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &mrq, id, &ref, 1, &ci), 0);
    assert_body(s, "m", "part");
    bool none[2] = {false, false};
    ck_assert_int_eq(ckh_objstore_crash(s, 0, none, 2), 2);
    assert_body(s, "b", "bee");
    assert_body(s, "m", NULL);
    ck_assert_uint_eq(ckh_objstore_mpu_open_count(s, "ckpt"), 1);
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &mrq, id, &ref, 1, NULL), 0); /* retried */
    assert_body(s, "m", "part");
    ckh_objstore_destroy(s);
}
END_TEST

/* Same seed and calls: same crash choices and trace; O1's format. */
static uint64_t crash_run(uint64_t seed, char *state, size_t n)
{
    struct ckh_objstore_config cfg = {.seed = seed};
    struct ckh_objstore *s = NULL;
    ck_assert_int_eq(ckh_objstore_create(&cfg, &s), 0);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, "ckpt"), 0);
    char key[8];
    for (int i = 0; i < 16; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        ck_assert_int_eq(put_text(s, key, "v", NULL), 0);
    }
    int undone = ckh_objstore_crash(s, -1, NULL, 0);
    ck_assert_int_ge(undone, 0);
    struct ckh_objstore_list_params p = {0};
    list_names(s, &p, state, n, NULL);
    uint64_t h = ckh_objstore_trace_hash(s);
    ckh_objstore_destroy(s);
    return h;
}

START_TEST(crash_drawn_from_seed)
{
    char a[256], b[256], c[256];
    uint64_t ha = crash_run(7, a, sizeof a), hb = crash_run(7, b, sizeof b);
    ck_assert_uint_eq(ha, hb);
    ck_assert_str_eq(a, b);
    /* some keys kept, some undone: 16 fair draws all alike is 2^-15 */
    ck_assert_str_ne(a, "");
    ck_assert_str_ne(a, "k00,k01,k02,k03,k04,k05,k06,k07,k08,k09,k10,k11,k12,k13,k14,k15,");
    int differ = 0;
    for (uint64_t seed = 8; seed < 12; seed++) {
        crash_run(seed, c, sizeof c);
        differ += strcmp(a, c) != 0;
    }
    ck_assert_int_gt(differ, 0);
}
END_TEST

START_TEST(trace_lines)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    ck_assert_int_eq(put_text(s, "dir/a b\\", "hello", NULL), 0);
    assert_body(s, "nope", NULL);
    ck_assert_int_eq(ckh_objstore_head_bucket(s, 3, "nope"), CKH_S3_NO_SUCH_BUCKET);
    ck_assert_uint_eq(ckh_objstore_trace_len(s), 4);
    ck_assert_str_eq(ckh_objstore_trace_line(s, 0), "s3 #1 n=-1 CreateBucket ckpt -> 200");
    ck_assert_str_eq(ckh_objstore_trace_line(s, 1), "s3 #2 n=0 PutObject ckpt/dir/a\\x20b\\x5c bytes=5 -> 200");
    ck_assert_str_eq(ckh_objstore_trace_line(s, 2), "s3 #3 n=0 GetObject ckpt/nope -> 404 NoSuchKey");
    ck_assert_str_eq(ckh_objstore_trace_line(s, 3), "s3 #4 n=3 HeadBucket nope -> 404 NoSuchBucket");
    ck_assert_ptr_null(ckh_objstore_trace_line(s, 4));
    ckh_objstore_destroy(s);
}
END_TEST

/* O2, O3: buckets kept in name order and keys in byte order by one search
 * (inserted out of order, first, last and between; found again, and the
 * names between them not found). */
START_TEST(sorted_names)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    static const char *const made[] = {"mmm", "zzz", "aaa", "ccc", "ckpu", "bbb"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++)
        ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, made[i]), 0);
    static const char *const sorted[] = {"aaa", "bbb", "ccc", "ckpt", "ckpu", "mmm", "zzz"};
    ck_assert_uint_eq(ckh_objstore_bucket_count(s), 7);
    for (size_t i = 0; i < 7; i++) {
        ck_assert_str_eq(ckh_objstore_bucket_name(s, i), sorted[i]);
        ck_assert_int_eq(ckh_objstore_head_bucket(s, 0, sorted[i]), 0);
    }
    ck_assert_int_eq(ckh_objstore_head_bucket(s, 0, "ckp"), CKH_S3_NO_SUCH_BUCKET);
    ck_assert_int_eq(ckh_objstore_head_bucket(s, 0, "zzzz"), CKH_S3_NO_SUCH_BUCKET);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, "ckpu"), CKH_S3_BUCKET_EXISTS);
    static const char *const keys[] = {"m", "z", "a", "\xff", "b/2", "b/10", "b", "a "};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_int_eq(put_text(s, keys[i], keys[i], NULL), 0);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_body(s, keys[i], keys[i]);
    assert_body(s, "b/", NULL);
    assert_body(s, "0", NULL);
    assert_body(s, "\xff\xff", NULL);
    char names[256];
    struct ckh_objstore_list_params p = {0};
    list_names(s, &p, names, sizeof names, NULL);
    ck_assert_str_eq(names, "a,a ,b,b/10,b/2,m,z,\xff,");
    ckh_objstore_destroy(s);
}
END_TEST

/* O1: each line's operation as fields, with the key's state after it
 * (a put makes it exist, a delete not, an undone delete again). */
START_TEST(trace_ops)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    ck_assert_int_eq(put_text(s, "ck/a", "1", NULL), 0);
    struct ckh_objstore_req rq = {.node = 2, .bucket = "ckpt", .key = "ck/a"};
    uint64_t seq = 0;
    ck_assert_int_eq(ckh_objstore_delete(s, &rq, &seq), 0); /* in flight, never acknowledged */
    assert_body(s, "ck/b", NULL);
    ck_assert_int_eq(ckh_objstore_crash(s, 2, (const bool[]){false}, 1), 1);
    ck_assert_int_eq(ckh_objstore_expire(s, "ckpt", "ck/a"), 0);
    size_t n = ckh_objstore_trace_len(s);
    ck_assert_uint_eq(n, 7);
    const struct {
        uint64_t seq;
        int node;
        const char *op, *bucket, *key;
        int result, exists;
    } want[] = {
        {1, -1, "CreateBucket", "ckpt", NULL, 0, -1},
        {2, 0, "PutObject", "ckpt", "ck/a", 0, 1},
        {3, 2, "DeleteObject", "ckpt", "ck/a", 0, 0},
        {4, 0, "GetObject", "ckpt", "ck/b", CKH_S3_NO_SUCH_KEY, 0},
        {5, 2, "Undo", "ckpt", "ck/a", 0, 1},
        {5, 2, "Crash", NULL, NULL, 0, -1},
        {6, -1, "Expire", "ckpt", "ck/a", 0, 0},
    };
    for (size_t i = 0; i < n; i++) {
        const struct ckh_objstore_trace_op *op = ckh_objstore_trace_op(s, i);
        ck_assert_ptr_nonnull(op);
        ck_assert_uint_eq(op->seq, want[i].seq);
        ck_assert_int_eq(op->node, want[i].node);
        ck_assert_str_eq(op->op, want[i].op);
        if (want[i].bucket)
            ck_assert_str_eq(op->bucket, want[i].bucket);
        else
            ck_assert_ptr_null(op->bucket);
        if (want[i].key)
            ck_assert_str_eq(op->key, want[i].key);
        else
            ck_assert_ptr_null(op->key);
        ck_assert_int_eq(op->result, want[i].result);
        ck_assert_int_eq(op->exists, want[i].exists);
    }
    ck_assert_ptr_null(ckh_objstore_trace_op(s, n));
    ckh_objstore_destroy(s);
}
END_TEST

/* Copies of a store's state (ckh explore over requests): a clone holds the
 * same content and the same writes in flight, so a crash of the clone
 * undoes them there and nowhere else (O12); a restore gives a store the
 * durable content only (current versions, open uploads with their parts,
 * nothing in flight), with a Restore trace line; the content digest
 * follows the bytes, not the ETags or sequence numbers. */
/* Every entry point refuses a missing argument with CKH_EINVAL and leaves
 * the store as it was: no operation numbered, no trace line, nothing
 * written (the endpoint and the explorers never pass NULL; a caller of the
 * public API that does gets an error, not a crash or a half-applied op). */
START_TEST(null_arguments_refused)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_STRONG, 0);
    const struct ckh_objstore_req ok = {.node = 0, .bucket = "ckpt", .key = "k"};
    const struct ckh_objstore_req nob = {.node = 0, .bucket = NULL, .key = "k"};
    struct ckh_objstore_blob *body = blob_of("body");
    ck_assert_int_eq(ckh_objstore_put(s, &ok, body, NULL), 0);
    const uint64_t seq = ckh_objstore_last_seq(s);
    const size_t nobjects = ckh_objstore_object_count(s);
    struct ckh_objstore_object *obj = NULL;
    struct ckh_objstore_put_info info;
    struct ckh_objstore_listing l = {0};
    const struct ckh_objstore_list_params lp = {0};
    struct ckh_objstore_part_info *parts = NULL;
    size_t nparts = 0;
    char upload[48] = "";
    uint64_t at = 0;

    ck_assert_int_eq(ckh_objstore_put(NULL, &ok, body, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_put(s, NULL, body, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_put(s, &nob, body, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_get(NULL, &ok, false, &obj), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_get(s, NULL, false, &obj), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_get(s, &nob, true, &obj), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_get(s, &ok, false, NULL), CKH_EINVAL);
    ck_assert_ptr_null(obj);
    ck_assert_int_eq(ckh_objstore_delete(NULL, &ok, &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_delete(s, NULL, &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_delete(s, &nob, &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_copy(NULL, &ok, "ckpt", "k", &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_copy(s, NULL, "ckpt", "k", &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_copy(s, &nob, "ckpt", "k", &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_copy(s, &ok, NULL, "k", &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_copy(s, &ok, "ckpt", NULL, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_list(NULL, 0, "ckpt", &lp, &l), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_list(s, 0, NULL, &lp, &l), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_list(s, 0, "ckpt", NULL, &l), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_list(s, 0, "ckpt", &lp, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_create(NULL, &ok, upload, &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_create(s, NULL, upload, &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_create(s, &nob, upload, &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_create(s, &ok, NULL, &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_part(NULL, &ok, "u", 1, body, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, NULL, "u", 1, body, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &nob, "u", 1, body, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_complete(NULL, &ok, "u", NULL, 0, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, NULL, "u", NULL, 0, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &nob, "u", NULL, 0, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_complete(s, &ok, "u", NULL, 2, &info), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_abort(NULL, &ok, "u", &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_abort(s, NULL, "u", &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_abort(s, &nob, "u", &at), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_list_parts(NULL, &ok, "u", &parts, &nparts), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_list_parts(s, NULL, "u", &parts, &nparts), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_list_parts(s, &nob, "u", &parts, &nparts), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_list_parts(s, &ok, "u", NULL, &nparts), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_mpu_list_parts(s, &ok, "u", &parts, NULL), CKH_EINVAL);
    ck_assert_ptr_null(parts);
    ck_assert_int_eq(ckh_objstore_expire(NULL, "ckpt", "k"), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_expire(s, NULL, "k"), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_expire(s, "ckpt", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_corrupt(NULL, "ckpt", "k", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_corrupt(s, NULL, "k", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_corrupt(s, "ckpt", NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_create_bucket(NULL, 0, "b2"), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_create_bucket(s, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_delete_bucket(NULL, 0, "ckpt"), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_delete_bucket(s, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_head_bucket(NULL, 0, "ckpt"), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_head_bucket(s, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_restore(s, s), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_restore(NULL, s), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_restore(s, NULL), CKH_EINVAL);
    struct ckh_objstore *c = NULL;
    ck_assert_int_eq(ckh_objstore_clone(NULL, &c), CKH_EINVAL);
    ck_assert_int_eq(ckh_objstore_clone(s, NULL), CKH_EINVAL);
    ck_assert_ptr_null(c);
    /* nothing happened: the same last operation, the same object whole */
    ck_assert_uint_eq(ckh_objstore_last_seq(s), seq);
    ck_assert_uint_eq(ckh_objstore_object_count(s), nobjects);
    ck_assert_int_eq(ckh_objstore_get(s, &ok, false, &obj), 0);
    char buf[8] = "";
    ck_assert_uint_eq(ckh_objstore_object_read(obj, 0, buf, sizeof buf), 4);
    ck_assert_mem_eq(buf, "body", 4);
    ckh_objstore_object_unref(obj);
    ckh_objstore_blob_unref(body);
    ckh_objstore_destroy(s);
}
END_TEST

START_TEST(clone_restore_digest)
{
    struct ckh_objstore *s = store_new(CKH_OBJSTORE_LIST_DELAY, 4);
    struct ckh_objstore_put_info i1;
    ck_assert_int_eq(put_text(s, "a", "old", &i1), 0);
    ckh_objstore_ack(s, i1.seq);
    ck_assert_int_eq(put_text(s, "a", "new", NULL), 0); /* in flight */
    struct ckh_objstore_req rq = {.bucket = "ckpt", .key = "big"};
    char id[48];
    ck_assert_int_eq(ckh_objstore_mpu_create(s, &rq, id, NULL), 0);
    struct ckh_objstore_blob *b = blob_of("part1");
    ck_assert_int_eq(ckh_objstore_mpu_part(s, &rq, id, 1, b, NULL), 0);
    ckh_objstore_blob_unref(b);
    uint64_t d0 = ckh_objstore_content_digest(s);

    struct ckh_objstore *c = NULL;
    ck_assert_int_eq(ckh_objstore_clone(s, &c), 0);
    ck_assert_uint_eq(ckh_objstore_trace_len(c), 0);
    ck_assert_uint_eq(ckh_objstore_last_seq(c), ckh_objstore_last_seq(s));
    ck_assert_uint_eq(ckh_objstore_content_digest(c), d0);
    ck_assert_uint_eq(ckh_objstore_inflight_count(c, -1), ckh_objstore_inflight_count(s, -1));
    ck_assert_uint_eq(ckh_objstore_mpu_open_count(c, "ckpt"), 1);
    /* undo every write in flight on the clone: "a" is old again there only */
    size_t n = ckh_objstore_inflight_count(c, -1);
    ck_assert_uint_eq(n, 3);
    bool keep[3] = {false, false, false};
    ck_assert_int_eq(ckh_objstore_crash(c, -1, keep, n), 3);
    assert_body(c, "a", "old");
    assert_body(s, "a", "new");
    ck_assert_uint_eq(ckh_objstore_mpu_open_count(c, "ckpt"), 0); /* its create undone */
    ck_assert_uint_ne(ckh_objstore_content_digest(c), d0);
    ck_assert_uint_eq(ckh_objstore_content_digest(s), d0);

    /* restore: another store gets s's durable content */
    struct ckh_objstore *r = store_new(CKH_OBJSTORE_STRONG, 0);
    ck_assert_int_eq(put_text(r, "gone", "x", NULL), 0);
    size_t lines = ckh_objstore_trace_len(r);
    ck_assert_int_eq(ckh_objstore_restore(r, s), 0);
    ck_assert_int_eq(ckh_objstore_restore(r, r), CKH_EINVAL);
    ck_assert_uint_eq(ckh_objstore_trace_len(r), lines + 1);
    ck_assert_str_eq(ckh_objstore_trace_op(r, lines)->op, "Restore");
    ck_assert_uint_eq(ckh_objstore_inflight_count(r, -1), 0);
    ck_assert_uint_eq(ckh_objstore_content_digest(r), d0);
    assert_body(r, "a", "new");
    assert_body(r, "gone", NULL);
    ck_assert_uint_eq(ckh_objstore_mpu_open_count(r, "ckpt"), 1);
    /* the open upload goes on in the restored store, its part 1 included */
    struct ckh_objstore_part_info *parts = NULL;
    size_t np = 0;
    ck_assert_int_eq(ckh_objstore_mpu_list_parts(r, &rq, id, &parts, &np), 0);
    ck_assert_uint_eq(np, 1);
    free(parts);
    /* a corruption at rest in the restored store stays there */
    ck_assert_int_eq(ckh_objstore_corrupt(r, "ckpt", "a", 0), 0);
    assert_body(s, "a", "new");
    ck_assert_uint_ne(ckh_objstore_content_digest(r), d0);
    ck_assert_uint_eq(ckh_objstore_content_digest(s), d0);
    /* the same bytes written by other ops: the same digest */
    struct ckh_objstore *e1 = store_new(CKH_OBJSTORE_STRONG, 0), *e2 = store_new(CKH_OBJSTORE_STRONG, 0);
    ck_assert_int_eq(put_text(e1, "k", "v", NULL), 0);
    ck_assert_int_eq(put_text(e2, "k", "w", NULL), 0);
    ck_assert_uint_ne(ckh_objstore_content_digest(e1), ckh_objstore_content_digest(e2));
    ck_assert_int_eq(put_text(e2, "k", "v", NULL), 0);
    ck_assert_uint_eq(ckh_objstore_content_digest(e1), ckh_objstore_content_digest(e2));
    struct ckh_objstore *none = NULL;
    ck_assert_int_eq(ckh_objstore_clone(NULL, &none), CKH_EINVAL);
    ck_assert_ptr_null(none);
    ckh_objstore_destroy(e1);
    ckh_objstore_destroy(e2);
    ckh_objstore_destroy(r);
    ckh_objstore_destroy(c);
    ckh_objstore_destroy(s);
}
END_TEST

static Suite *objstore_suite(void)
{
    Suite *su = suite_create("objstore");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, buckets);
    tcase_add_test(tc, objects);
    tcase_add_test(tc, ranges);
    tcase_add_test(tc, conditions);
    tcase_add_test(tc, listing);
    tcase_add_test(tc, multipart);
    tcase_add_test(tc, bytes_held_once);
    tcase_add_test(tc, list_delay);
    tcase_add_test(tc, overwrite_delay);
    tcase_add_test(tc, crash_given_choices);
    tcase_add_test(tc, crash_drawn_from_seed);
    tcase_add_test(tc, trace_lines);
    tcase_add_test(tc, sorted_names);
    tcase_add_test(tc, trace_ops);
    tcase_add_test(tc, clone_restore_digest);
    tcase_add_test(tc, null_arguments_refused);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    return ckh_test_run(objstore_suite());
}
