/* The S3 endpoint's XML (harness/ckhfs/s3_xml.h) on its own: the response
 * writer's escaping and URL encoding, and the two request parsers
 * (CompleteMultipartUpload, DeleteObjects) on bodies S3 accepts and on
 * every shape it refuses as MalformedXML. The endpoint's end-to-end tests
 * (tests/test_s3_endpoint.py) send what boto3 and curl send; these send
 * what they never do. Built only with the endpoint (CKH_HAVE_S3). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/objstore.h"
#include "support/skip.h"

#ifdef CKH_HAVE_S3
#include "ckhfs/s3_xml.h"

static int complete(const char *xml, struct ckh__s3_complete *out)
{
    memset(out, 0, sizeof *out);
    return ckh__s3_parse_complete(xml, strlen(xml), out);
}

static int delete_(const char *xml, struct ckh__s3_delete *out)
{
    memset(out, 0, sizeof *out);
    return ckh__s3_parse_delete(xml, strlen(xml), out);
}

START_TEST(test_writer_escapes_and_encodes)
{
    struct ckh__s3_buf b = {0};
    ckh__s3_elem(&b, "Key", "a&b<c>d\"e\x01\tf\ng\rh'", false);
    ck_assert(!b.oom);
    ck_assert_str_eq(b.p, "<Key>a&amp;b&lt;c&gt;d&quot;e&#x1;\tf\ng\rh'</Key>");
    ck_assert_uint_eq(b.len, strlen(b.p));
    /* url: RFC 3986 unreserved bytes and '/' kept, the rest %XX (a UTF-8
     * byte over 0x7f too) */
    b.len = 0;
    ckh__s3_elem(&b, "Key", "dir/a b+c~d_e-f.g&\xc3\xa9Z9", true);
    ck_assert_str_eq(b.p, "<Key>dir/a%20b%2Bc~d_e-f.g%26%C3%A9Z9</Key>");
    /* growth past the first 512 bytes keeps every byte */
    b.len = 0;
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ckh__s3_printf(&b, "<A>%s</A>", big);
    ck_assert_uint_eq(b.len, strlen(big) + 7);
    ck_assert_uint_ge(b.cap, b.len + 1);
    ck_assert_int_eq(b.p[b.len - 1], '>');
    /* a writer that ran out of memory appends nothing more */
    size_t len = b.len;
    b.oom = true;
    ckh__s3_printf(&b, "more");
    ckh__s3_elem(&b, "K", "v", false);
    ck_assert_uint_eq(b.len, len);
    free(b.p);
}
END_TEST

START_TEST(test_complete_accepts)
{
    struct ckh__s3_complete c;
    /* a namespace prefix, unknown children of a part and of the root, an
     * entity split across text callbacks */
    ck_assert_int_eq(complete("<?xml version=\"1.0\"?>"
                              "<s3:CompleteMultipartUpload xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                              "<s3:Part><s3:ETag>\"e&amp;1\"</s3:ETag><s3:PartNumber>1</s3:PartNumber>"
                              "<s3:ChecksumCRC32>x</s3:ChecksumCRC32></s3:Part>"
                              "<Other>ignored</Other>"
                              "<Part><PartNumber>10000</PartNumber><ETag>e2</ETag></Part>"
                              "</s3:CompleteMultipartUpload>",
                              &c),
                     0);
    ck_assert_uint_eq(c.nparts, 2);
    ck_assert_int_eq(c.parts[0].part, 1);
    ck_assert_str_eq(c.parts[0].etag, "\"e&1\"");
    ck_assert_int_eq(c.parts[1].part, 10000);
    ck_assert_str_eq(c.parts[1].etag, "e2");
    ckh__s3_complete_free(&c);
    ck_assert_ptr_null(c.parts);
    ck_assert_uint_eq(c.nparts, 0);

    /* more parts than the first allocation holds (16) */
    char xml[8192];
    size_t n = (size_t)snprintf(xml, sizeof xml, "<CompleteMultipartUpload>");
    for (int i = 1; i <= 40; i++)
        n += (size_t)snprintf(xml + n, sizeof xml - n, "<Part><PartNumber>%d</PartNumber><ETag>t%d</ETag></Part>",
                              i, i);
    snprintf(xml + n, sizeof xml - n, "</CompleteMultipartUpload>");
    ck_assert_int_eq(complete(xml, &c), 0);
    ck_assert_uint_eq(c.nparts, 40);
    ck_assert_int_eq(c.parts[39].part, 40);
    ck_assert_str_eq(c.parts[39].etag, "t40");
    ckh__s3_complete_free(&c);
}
END_TEST

START_TEST(test_complete_refuses)
{
    static const char *const bad[] = {
        "",                                                      /* empty */
        "<CompleteMultipartUpload>",                             /* not closed */
        "<CompleteMultipartUpload></Complete>",                  /* not well-formed */
        "<CompleteMultipartUpload></CompleteMultipartUpload>",   /* no part */
        "<Delete><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></Delete>", /* another root */
        "<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>", /* no number */
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>", /* no ETag */
        "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>-3</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
        /* a good part, then a bad one: nothing of the first is kept */
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>"
        "<Part><PartNumber>2</PartNumber></Part></CompleteMultipartUpload>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ckh__s3_complete c;
        ck_assert_msg(complete(bad[i], &c) == CKH_S3_MALFORMED_XML, "accepted: %s", bad[i]);
        ck_assert_ptr_null(c.parts);
        ck_assert_uint_eq(c.nparts, 0);
    }
    /* a field's text past 4096 bytes */
    char xml[6000];
    int n = snprintf(xml, sizeof xml, "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>");
    memset(xml + n, 'e', 4097);
    snprintf(xml + n + 4097, sizeof xml - (size_t)n - 4097, "</ETag></Part></CompleteMultipartUpload>");
    struct ckh__s3_complete c;
    ck_assert_int_eq(complete(xml, &c), CKH_S3_MALFORMED_XML);
    /* exactly 4096 is kept whole */
    memmove(xml + n + 4096, xml + n + 4097, strlen(xml + n + 4097) + 1);
    ck_assert_int_eq(complete(xml, &c), 0);
    ck_assert_uint_eq(strlen(c.parts[0].etag), 4096);
    ckh__s3_complete_free(&c);
}
END_TEST

START_TEST(test_delete_accepts)
{
    struct ckh__s3_delete d;
    ck_assert_int_eq(delete_("<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                             "<Object><Key>a/b&lt;1</Key><VersionId>v</VersionId></Object>"
                             "<Object><Key>c</Key></Object>"
                             "<Quiet>true</Quiet></Delete>",
                             &d),
                     0);
    ck_assert_uint_eq(d.nkeys, 2);
    ck_assert_str_eq(d.keys[0], "a/b<1");
    ck_assert_str_eq(d.keys[1], "c");
    ck_assert(d.quiet);
    ckh__s3_delete_free(&d);
    ck_assert_ptr_null(d.keys);

    /* Quiet other than "true", and a long one (kept cut, still not true) */
    ck_assert_int_eq(delete_("<Delete><Quiet>false</Quiet><Object><Key>k</Key></Object></Delete>", &d), 0);
    ck_assert(!d.quiet);
    ckh__s3_delete_free(&d);
    ck_assert_int_eq(delete_("<Delete><Quiet>truetruetruetruetrue</Quiet><Object><Key>k</Key></Object></Delete>", &d),
                     0);
    ck_assert(!d.quiet);
    ckh__s3_delete_free(&d);
    /* no Quiet: loud */
    ck_assert_int_eq(delete_("<Delete><Object><Key>k</Key></Object></Delete>", &d), 0);
    ck_assert(!d.quiet);
    ck_assert_uint_eq(d.nkeys, 1);
    ckh__s3_delete_free(&d);

    /* a Key inside an element S3 does not know belongs to no object: it
     * neither adds a key nor replaces the object's own */
    ck_assert_int_eq(delete_("<Delete><Object><Key>mine</Key></Object><Extra><Key>other</Key></Extra></Delete>", &d),
                     0);
    ck_assert_uint_eq(d.nkeys, 1);
    ck_assert_str_eq(d.keys[0], "mine");
    ckh__s3_delete_free(&d);

    /* 1000 keys is the most */
    size_t cap = 1001 * 40 + 64, n = 0;
    char *xml = malloc(cap);
    ck_assert_ptr_nonnull(xml);
    n += (size_t)snprintf(xml + n, cap - n, "<Delete>");
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(xml + n, cap - n, "<Object><Key>k%d</Key></Object>", i);
    size_t before_end = n;
    snprintf(xml + n, cap - n, "</Delete>");
    ck_assert_int_eq(delete_(xml, &d), 0);
    ck_assert_uint_eq(d.nkeys, 1000);
    ck_assert_str_eq(d.keys[999], "k999");
    ckh__s3_delete_free(&d);
    /* 1001 is refused */
    n = before_end;
    n += (size_t)snprintf(xml + n, cap - n, "<Object><Key>last</Key></Object></Delete>");
    ck_assert_int_eq(delete_(xml, &d), CKH_S3_MALFORMED_XML);
    ck_assert_ptr_null(d.keys);
    free(xml);
}
END_TEST

START_TEST(test_delete_refuses)
{
    static const char *const bad[] = {
        "<Delete></Delete>",                                           /* no object */
        "<Delete><Quiet>true</Quiet></Delete>",                        /* still none */
        "<Delete><Object></Object></Delete>",                          /* an object without a key */
        "<Delete><Object><Key>a</Key></Object><Object><VersionId>v</VersionId></Object></Delete>",
        "<CompleteMultipartUpload><Object><Key>a</Key></Object></CompleteMultipartUpload>", /* another root */
        "<Delete><Object><Key>a</Key></Object>",                       /* not closed */
        "<Delete><Object><Key>a</Key></Object></Delete><Delete/>",     /* two roots */
        "not xml",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ckh__s3_delete d;
        ck_assert_msg(delete_(bad[i], &d) == CKH_S3_MALFORMED_XML, "accepted: %s", bad[i]);
        ck_assert_ptr_null(d.keys);
        ck_assert_uint_eq(d.nkeys, 0);
    }
    /* len counts: a body cut before its end is not well-formed */
    const char *xml = "<Delete><Object><Key>a</Key></Object></Delete>";
    struct ckh__s3_delete d = {0};
    ck_assert_int_eq(ckh__s3_parse_delete(xml, strlen(xml) - 3, &d), CKH_S3_MALFORMED_XML);
}
END_TEST
#else
START_TEST(test_without_endpoint)
{
    CKH_SKIP("the S3 endpoint is not built (libmicrohttpd or expat missing)");
}
END_TEST
#endif

static Suite *s3_xml_suite(void)
{
    Suite *s = suite_create("s3_xml");
    TCase *tc = tcase_create("xml");
    tcase_set_timeout(tc, 60);
#ifdef CKH_HAVE_S3
    tcase_add_test(tc, test_writer_escapes_and_encodes);
    tcase_add_test(tc, test_complete_accepts);
    tcase_add_test(tc, test_complete_refuses);
    tcase_add_test(tc, test_delete_accepts);
    tcase_add_test(tc, test_delete_refuses);
#else
    tcase_add_test(tc, test_without_endpoint);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(s3_xml_suite());
}
