/* Tests for the record model (include/ckh/record.h): the wrappers and
 * checks (platform/record.c), the JSON-lines writer and reader
 * (platform/record_jsonl.c), and the oracles that judge step records,
 * final values, saves and restarts (harness/judge/resume_check.c,
 * reference_check.c, saves_check.c, restarts_check.c) on hand-built runs,
 * down to the verdict line the terminal shows. */
#include <check.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/record.h"
#include "support/files.h"
#include "support/record_eq.h"
#include "judge/oracle.h"
#include "report.h"
#include "exec/run_ctx.h"
#include "exec/runner.h"
#include "model/scenario.h"
#include "judge/judge.h"

/* ==== wrappers and checks ==== */

/* A table counting the records that reach it. */
struct counting {
    struct ckh_record base; /* first member */
    int calls[5];           /* per kind */
};

static int c_step(struct ckh_record *r, const struct ckh_rec_step *s)
{
    (void)s;
    ((struct counting *)r)->calls[CKH_REC_STEP]++;
    return 0;
}
static int c_resume(struct ckh_record *r, const struct ckh_rec_resume *s)
{
    (void)s;
    ((struct counting *)r)->calls[CKH_REC_RESUME]++;
    return 0;
}
static int c_save(struct ckh_record *r, const struct ckh_rec_save *s)
{
    (void)s;
    ((struct counting *)r)->calls[CKH_REC_SAVE]++;
    return 0;
}
static int c_final(struct ckh_record *r, const struct ckh_rec_final *s)
{
    (void)s;
    ((struct counting *)r)->calls[CKH_REC_FINAL]++;
    return CKH_ELIMIT; /* what a full store says: passed through */
}

static const struct ckh_record_ops counting_ops = {1, c_step, c_resume, c_save, c_final};
static const struct ckh_record_ops empty_ops = {1, NULL, NULL, NULL, NULL};

START_TEST(test_name_check)
{
    char name[80];
    memset(name, 'a', sizeof name);
    name[63] = '\0';
    ck_assert_int_eq(ckh_record_name_check(name), 0);
    name[63] = 'a';
    name[64] = '\0';
    ck_assert_int_eq(ckh_record_name_check(name), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check("weights"), 0);
    ck_assert_int_eq(ckh_record_name_check("opt.state-0_A9"), 0);
    ck_assert_int_eq(ckh_record_name_check(""), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check(NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check("has space"), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check("a/b"), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_name_check("caf\xc3\xa9"), CKH_EINVAL);
}
END_TEST

START_TEST(test_wrappers)
{
    struct counting t = {{&counting_ops}, {0}};
    struct ckh_record empty = {&empty_ops};
    struct ckh_rec_digest d[CKH_RECORD_FIELDS_MAX + 1];
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        d[i] = (struct ckh_rec_digest){"w", i};
    struct ckh_rec_value nan_v = {"lr", NAN}, inf_v = {"lr", -INFINITY}, ok_v = {"lr", 0.1};
    struct ckh_rec_step good = {.step = 1, .digests = d, .ndigests = 1, .values = &ok_v, .nvalues = 1};
    /* No table, or no method: a no-op that succeeds, even for a bad record. */
    ck_assert_int_eq(ckh_record_step(NULL, &good), 0);
    ck_assert_int_eq(ckh_record_step(&empty, NULL), 0);
    ck_assert_int_eq(ckh_record_final(&empty, NULL), 0);
    ck_assert_int_eq(ckh_record_step(&t.base, &good), 0);
    ck_assert_int_eq(t.calls[CKH_REC_STEP], 1);
    struct ckh_rec_step bad = good;
    bad.step = 0;
    ck_assert_int_eq(ckh_record_step(&t.base, &bad), CKH_EINVAL);
    bad = good;
    bad.ndigests = CKH_RECORD_FIELDS_MAX + 1; /* all named "w" too, but the count comes first */
    ck_assert_int_eq(ckh_record_step(&t.base, &bad), CKH_EINVAL);
    /* A NaN or infinite value is a fact to record (a diverged loss). */
    struct ckh_rec_step odd = good;
    odd.values = &nan_v;
    ck_assert_int_eq(ckh_record_step(&t.base, &odd), 0);
    odd.values = &inf_v;
    ck_assert_int_eq(ckh_record_step(&t.base, &odd), 0);
    ck_assert_int_eq(t.calls[CKH_REC_STEP], 3);
    bad = good;
    bad.values = &(struct ckh_rec_value){"w", 1.0}; /* the digest's name again */
    ck_assert_int_eq(ckh_record_step(&t.base, &bad), CKH_EINVAL);
    bad = good;
    bad.digests = NULL;
    ck_assert_int_eq(ckh_record_step(&t.base, &bad), CKH_EINVAL);
    bad = good;
    bad.nsamples = 2; /* with no array */
    ck_assert_int_eq(ckh_record_step(&t.base, &bad), CKH_EINVAL);
    ck_assert_int_eq(t.calls[CKH_REC_STEP], 3); /* none of the bad ones reached the table */

    ck_assert_int_eq(ckh_record_resume(&t.base, &(struct ckh_rec_resume){0, 0}), 0);
    ck_assert_int_eq(ckh_record_resume(&t.base, &(struct ckh_rec_resume){-1, 0}), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_save(&t.base, &(struct ckh_rec_save){4, 1, -ENOENT, "x"}), 0);
    ck_assert_int_eq(ckh_record_save(&t.base, &(struct ckh_rec_save){4, 1, 1, NULL}), CKH_EINVAL);
    const char *blobs[] = {"model", "a,b"};
    struct ckh_rec_final fin = {.epochs = 1, .blobs = blobs, .nblobs = 1};
    ck_assert_int_eq(ckh_record_final(&t.base, &fin), CKH_ELIMIT);
    fin.nblobs = 2;
    ck_assert_int_eq(ckh_record_final(&t.base, &fin), CKH_EINVAL);
    ck_assert_int_eq(t.calls[CKH_REC_RESUME], 1);
    ck_assert_int_eq(t.calls[CKH_REC_SAVE], 1);
    ck_assert_int_eq(t.calls[CKH_REC_FINAL], 1);

    /* ckh_record_why names what is wrong. */
    char why[160];
    ck_assert_int_eq(ckh_record_why(CKH_REC_STEP, &good, why, sizeof why), 0);
    ck_assert_str_eq(why, "");
    bad = good;
    bad.step = 0;
    ck_assert_int_eq(ckh_record_why(CKH_REC_STEP, &bad, why, sizeof why), CKH_EINVAL);
    ck_assert_str_eq(why, "step 0, expected 1 or more");
    bad = good;
    bad.values = &(struct ckh_rec_value){"val loss", 1.0};
    ck_assert_int_eq(ckh_record_why(CKH_REC_STEP, &bad, why, sizeof why), CKH_EINVAL);
    ck_assert_str_eq(why, "value name 'val loss' has a character other than A-Z a-z 0-9 _ . -");
    bad = good;
    bad.values = &(struct ckh_rec_value){"w", 1.0};
    ck_assert_int_eq(ckh_record_why(CKH_REC_STEP, &bad, why, sizeof why), CKH_EINVAL);
    ck_assert_str_eq(why, "'w' appears twice among the digests and values");
    bad = good;
    bad.ndigests = CKH_RECORD_FIELDS_MAX + 1;
    ck_assert_int_eq(ckh_record_why(CKH_REC_STEP, &bad, why, sizeof why), CKH_EINVAL);
    ck_assert_str_eq(why, "33 digests, at most 32 in one record");
    ck_assert_int_eq(ckh_record_why(CKH_REC_FINAL, &fin, why, sizeof why), CKH_EINVAL);
    ck_assert_str_eq(why, "blob 2 has a ',' in its name");
    ck_assert_int_eq(ckh_record_why(CKH_REC_SAVE, &(struct ckh_rec_save){4, 1, 1, NULL}, why, sizeof why),
                     CKH_EINVAL);
    ck_assert_str_eq(why, "rc 1, expected 0 or a negative error code");
    ck_assert_int_eq(ckh_record_why(CKH_REC_RESUME, NULL, why, sizeof why), CKH_EINVAL);
    ck_assert_str_eq(why, "no record (NULL)");
}
END_TEST

/* ==== writer -> reader ==== */

static const struct ckh_rec_digest rt_digests[] = {
    {"weights", 0xffffffffffffffffull}, {"optim", 0x8000000000000000ull}, {"rng", 0},
    {"a.b-c_D9", 0xdeadbeefcafef00dull},
    {"n23456789012345678901234567890123456789012345678901234567890123", 1},
};
static const struct ckh_rec_value rt_values[] = {
    {"max", DBL_MAX},     {"nmax", -DBL_MAX},      {"min", DBL_MIN},   {"tiny", DBL_TRUE_MIN},
    {"nzero", -0.0},      {"tenth", 0.1},          {"third", 1.0 / 3}, {"sub", -2.5e-310},
    {"big", 1e300},       {"int", 123456789.125},  {"one", 1.0},      {"loss", NAN},
    {"up", INFINITY},     {"down", -INFINITY},
};
static const uint64_t rt_samples[] = {0, UINT64_MAX, (1ull << 53) + 1, 17};
static const char *const rt_blobs[] = {"model", "weird \"name\" \\ /", "\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9",
                                       "tab\there", "emoji \xf0\x9f\x98\x80"};
static const char rt_what[] = "quote \" backslash \\ slash / nl \n cr \r tab \t ctl \x01\x1f del \x7f "
                              "\xc3\xa9 \xf0\x9f\x98\x80 end";

/* The records written, in order, with their kinds. */
struct rt_expect {
    enum ckh_rec_kind kind;
    const void *rec;
};

struct rt_ctx {
    const struct rt_expect *want; /* expected records */
    size_t n;                     /* how many */
    size_t seen;                  /* records received */
    int stop_at;                  /* return 42 at this record (1-based; 0: never) */
};

/* Compares each record it receives with the next expected one. */
static int rt_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    struct rt_ctx *c = ctx;
    ck_assert_uint_lt(c->seen, c->n);
    const struct rt_expect *w = &c->want[c->seen++];
    ck_assert_int_eq(kind, w->kind);
    if (c->stop_at && (int)c->seen == c->stop_at)
        return 42;
    ckh_test_record_eq(kind, w->rec, rec, false);
    return 0;
}


/* Writes each expected record through the C API to path. */
static void write_all(const char *path, const struct rt_expect *w, size_t n)
{
    struct ckh_record *r = NULL;
    char msg[256];
    ck_assert_int_eq(ckh_record_jsonl_open(path, &r, msg, sizeof msg), 0);
    for (size_t i = 0; i < n; i++) {
        int rc = -1;
        switch (w[i].kind) {
        case CKH_REC_STEP: rc = ckh_record_step(r, w[i].rec); break;
        case CKH_REC_RESUME: rc = ckh_record_resume(r, w[i].rec); break;
        case CKH_REC_SAVE: rc = ckh_record_save(r, w[i].rec); break;
        case CKH_REC_FINAL: rc = ckh_record_final(r, w[i].rec); break;
        }
        ck_assert_int_eq(rc, 0);
    }
    ckh_record_jsonl_close(r);
}

START_TEST(test_round_trip)
{
    const struct ckh_rec_step s1 = {.step = 1, .epoch = 0, .digests = rt_digests,
                                    .ndigests = sizeof rt_digests / sizeof rt_digests[0],
                                    .values = rt_values, .nvalues = sizeof rt_values / sizeof rt_values[0],
                                    .samples = rt_samples, .nsamples = 4};
    const struct ckh_rec_step s2 = {.step = INT64_MAX, .epoch = INT64_MAX}; /* nothing else */
    const struct ckh_rec_resume res = {.step = 4, .epoch = 1};
    const struct ckh_rec_save fail = {.step = 4, .epoch = 1, .rc = CKH_ECORRUPT, .what = rt_what};
    const struct ckh_rec_save ok = {.step = 8, .epoch = 2, .rc = 0, .what = NULL};
    const struct ckh_rec_save eio = {.step = 0, .epoch = 0, .rc = INT32_MIN, .what = ""};
    const struct ckh_rec_final f1 = {.epochs = 3, .steps = 30, .total = INT64_MIN, .has_digest = true,
                                     .digest = 0x8000000000000001ull, .values = rt_values, .nvalues = 3,
                                     .blobs = (const char *const *)rt_blobs,
                                     .nblobs = sizeof rt_blobs / sizeof rt_blobs[0]};
    const struct ckh_rec_final f2 = {.epochs = 0, .steps = 0, .total = -7};
    const struct rt_expect want[] = {
        {CKH_REC_STEP, &s1}, {CKH_REC_RESUME, &res}, {CKH_REC_SAVE, &fail}, {CKH_REC_SAVE, &ok},
        {CKH_REC_SAVE, &eio}, {CKH_REC_STEP, &s2},   {CKH_REC_FINAL, &f1},  {CKH_REC_FINAL, &f2},
    };
    size_t n = sizeof want / sizeof want[0];
    char path[64], msg[512];
    ckh_test_temp_path("records", path, sizeof path);
    write_all(path, want, 4);
    write_all(path, want + 4, n - 4); /* a second open appends */
    size_t len;
    char *text = ckh_test_slurp(path, &len);
    /* One line per record. */
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    ck_assert_uint_eq(lines, n);
    ck_assert_ptr_nonnull(strstr(text, "\"weights\":\"ffffffffffffffff\""));
    ck_assert_ptr_nonnull(strstr(text, "{\"kind\":\"resume\",\"step\":4,\"epoch\":1}\n"));
    ck_assert_ptr_nonnull(strstr(text, "\"loss\":\"NaN\",\"up\":\"Infinity\",\"down\":\"-Infinity\""));
    struct rt_ctx c = {want, n, 0, 0};
    ck_assert_int_eq(ckh_record_jsonl_parse(text, len, path, rt_sink, &c, msg, sizeof msg), 0);
    ck_assert_uint_eq(c.seen, n);
    /* The sink's return stops the parse, and is returned. */
    c = (struct rt_ctx){want, n, 0, 3};
    ck_assert_int_eq(ckh_record_jsonl_parse(text, len, "r.jsonl", rt_sink, &c, msg, sizeof msg), 42);
    ck_assert_uint_eq(c.seen, 3);
    ck_assert_ptr_nonnull(strstr(msg, "r.jsonl:3: "));
    free(text);
    unlink(path);
}
END_TEST

START_TEST(test_writer_edges)
{
    char path[64], msg[256];
    struct ckh_record *r = NULL;
    ckh_test_temp_path("records", path, sizeof path);
    ck_assert_int_eq(ckh_record_jsonl_open(path, &r, msg, sizeof msg), 0);
    /* Invalid UTF-8 is written as U+FFFD; a bad record writes nothing. */
    ck_assert_int_eq(ckh_record_save(r, &(struct ckh_rec_save){1, 0, -EIO, "bad \xff\xc3 end"}), 0);
    ck_assert_int_eq(r->ops->step(r, &(struct ckh_rec_step){.step = 0}), CKH_EINVAL);
    ck_assert_int_eq(r->ops->final(r, &(struct ckh_rec_final){.epochs = -1}), CKH_EINVAL);
    ckh_record_jsonl_close(r);
    ckh_record_jsonl_close(NULL);
    size_t len;
    char *text = ckh_test_slurp(path, &len);
    ck_assert_str_eq(text, "{\"kind\":\"save\",\"step\":1,\"epoch\":0,\"ok\":false,\"rc\":-5,"
                           "\"error\":\"bad \\ufffd\\ufffd end\"}\n");
    struct ckh_rec_save want = {1, 0, -EIO, "bad \xef\xbf\xbd\xef\xbf\xbd end"};
    struct rt_expect w = {CKH_REC_SAVE, &want};
    struct rt_ctx c = {&w, 1, 0, 0};
    ck_assert_int_eq(ckh_record_jsonl_parse(text, len, NULL, rt_sink, &c, msg, sizeof msg), 0);
    ck_assert_uint_eq(c.seen, 1);
    free(text);
    unlink(path);
    /* A file that cannot be opened. */
    ck_assert_int_eq(ckh_record_jsonl_open("/nonexistent-dir/x.jsonl", &r, msg, sizeof msg), -EIO);
    ck_assert_ptr_null(r);
    ck_assert_str_eq(msg, "cannot open /nonexistent-dir/x.jsonl: No such file or directory");
}
END_TEST

/* Counts records and keeps the last step's and save's fields. */
struct keep {
    int n[5];
    int64_t step, epoch;
    size_t ndigests, nvalues, nsamples;
    uint64_t digest0;
    int rc;
    char what[64];
    bool has_digest;
};

static int keep_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    struct keep *k = ctx;
    k->n[kind]++;
    if (kind == CKH_REC_STEP) {
        const struct ckh_rec_step *s = rec;
        k->step = s->step;
        k->epoch = s->epoch;
        k->ndigests = s->ndigests;
        k->nvalues = s->nvalues;
        k->nsamples = s->nsamples;
        k->digest0 = s->ndigests ? s->digests[0].digest : 0;
    } else if (kind == CKH_REC_SAVE) {
        const struct ckh_rec_save *s = rec;
        k->rc = s->rc;
        snprintf(k->what, sizeof k->what, "%s", s->what ? s->what : "(null)");
    } else if (kind == CKH_REC_FINAL) {
        k->has_digest = ((const struct ckh_rec_final *)rec)->has_digest;
    }
    return 0;
}

static int parse_text(const char *text, struct keep *k, char *msg, size_t n)
{
    memset(k, 0, sizeof *k);
    return ckh_record_jsonl_parse(text, strlen(text), "t.jsonl", keep_sink, k, msg, n);
}

START_TEST(test_reader_accepts)
{
    struct keep k;
    char msg[512];
    /* Blank lines, CRLF, keys in any order, unknown keys of any shape,
     * defaults, upper-case hex, escapes and a surrogate pair. */
    const char *text =
        "\n   \t\r\n"
        "{\"step\": 3, \"future\": {\"a\": [1, 2.5e-3, {\"b\": null}], \"c\": true}, \"kind\": \"step\","
        " \"digests\": {\"w\": \"ABCDEF0123456789\"}, \"values\": {}, \"samples\": []}\r\n"
        "{\"kind\":\"save\",\"step\":2,\"ok\":false,\"error\":\"\\u00e9\\ud83d\\ude00\\n\\\"\\/\"}\n"
        "{\"kind\":\"save\",\"step\":3,\"ok\":true,\"rc\":0}\n"
        "{\"kind\":\"resume\",\"step\":0}\n"
        "{\"kind\":\"final\"}";
    ck_assert_int_eq(parse_text(text, &k, msg, sizeof msg), 0);
    ck_assert_int_eq(k.n[CKH_REC_STEP], 1);
    ck_assert_int_eq(k.step, 3);
    ck_assert_int_eq(k.epoch, 0);
    ck_assert_uint_eq(k.ndigests, 1);
    ck_assert_uint_eq(k.digest0, 0xabcdef0123456789ull);
    ck_assert_uint_eq(k.nvalues, 0);
    ck_assert_uint_eq(k.nsamples, 0);
    ck_assert_int_eq(k.n[CKH_REC_SAVE], 2);
    ck_assert_int_eq(k.rc, 0);
    ck_assert_str_eq(k.what, "(null)");
    ck_assert_int_eq(k.n[CKH_REC_RESUME], 1);
    ck_assert_int_eq(k.n[CKH_REC_FINAL], 1);
    ck_assert(!k.has_digest);
    /* ok false without rc is -EIO; the escapes decode to UTF-8. */
    ck_assert_int_eq(parse_text("{\"kind\":\"save\",\"step\":2,\"ok\":false,"
                                "\"error\":\"\\u00e9\\ud83d\\ude00\\n\\\"\\/\"}",
                                &k, msg, sizeof msg),
                     0);
    ck_assert_int_eq(k.rc, -EIO);
    ck_assert_str_eq(k.what, "\xc3\xa9\xf0\x9f\x98\x80\n\"/");
    ck_assert_int_eq(parse_text("", &k, msg, sizeof msg), 0);
    ck_assert_int_eq(k.n[CKH_REC_STEP] + k.n[CKH_REC_FINAL], 0);
}
END_TEST

struct bad_line {
    const char *text; /* the input */
    int line, col;    /* where the error is */
    const char *msg;  /* the message after "t.jsonl:line:col: " (a prefix when it ends in '*') */
    size_t len;       /* bytes of text (0: strlen) */
};

#define S "{\"kind\":\"step\",\"step\":1,"
static const struct bad_line bad_lines[] = {
    {"{\"kind\":\"step\"}", 1, 1, "expected key \"step\" in a step record, found none"},
    {"{\"step\":1}", 1, 1, "expected key \"kind\" in the record, found none"},
    {"{\"kind\":\"stpe\",\"step\":1}", 1, 9,
     "expected \"step\", \"resume\", \"save\" or \"final\" for \"kind\", found \"stpe\""},
    {"{\"kind\":7}", 1, 9, "expected \"step\", \"resume\", \"save\" or \"final\" for \"kind\", found 7"},
    {"{\"kind\":\"step\",\"step\":\"1\"}", 1, 23,
     "expected an integer from 1 to 9223372036854775807 for \"step\", found \"1\""},
    {"{\"kind\":\"step\",\"step\":0}", 1, 23,
     "expected an integer from 1 to 9223372036854775807 for \"step\", found 0"},
    {"{\"kind\":\"step\",\"step\":1.5}", 1, 23,
     "expected an integer from 1 to 9223372036854775807 for \"step\", found 1.5"},
    {"{\"kind\":\"step\",\"step\":9223372036854775808}", 1, 23,
     "expected an integer from 1 to 9223372036854775807 for \"step\", found 9223372036854775808"},
    {S "\"values\":{\"lr\":1e999}}", 1, 40,
     "expected a finite number, or \"NaN\", \"Infinity\" or \"-Infinity\" for \"lr\", found 1e999"},
    {S "\"values\":{\"lr\":\"0.1\"}}", 1, 40,
     "expected a finite number, or \"NaN\", \"Infinity\" or \"-Infinity\" for \"lr\", found \"0.1\""},
    {S "\"values\":{\"lr\":\"nan\"}}", 1, 40,
     "expected a finite number, or \"NaN\", \"Infinity\" or \"-Infinity\" for \"lr\", found \"nan\""},
    {S "\"digests\":{\"w\":\"00ff\"}}", 1, 40,
     "expected a digest of 16 hex digits in a string for \"w\", found \"00ff\""},
    {S "\"digests\":{\"w\":\"000000000000000g\"}}", 1, 40,
     "expected a digest of 16 hex digits in a string for \"w\", found \"000000000000000g\""},
    {S "\"digests\":{\"w\":255}}", 1, 40, "expected a digest of 16 hex digits in a string for \"w\", found 255"},
    {S "\"digests\":{\"bad name\":\"0000000000000000\"}}", 1, 36,
     "expected a name of 1 to 63 letters, digits, '_', '.' or '-' in \"digests\", found \"bad name\""},
    {S "\"digests\":{\"lr\":\"0000000000000000\"},\"values\":{\"lr\":1}}", 1, 71,
     "expected each name once among a record's digests and values, found \"lr\" again"},
    {S "\"digests\":[]}", 1, 35, "expected an object of named fields for \"digests\", found an array"},
    {S "\"samples\":[1,-1]}", 1, 38,
     "expected a sample id (an integer from 0 to 18446744073709551615) for \"samples\", found -1"},
    {S "\"samples\":[18446744073709551616]}", 1, 36,
     "expected a sample id (an integer from 0 to 18446744073709551615) for \"samples\", found "
     "18446744073709551616"},
    {S "}", 1, 25, "expected a string key, found '}'"},
    {S "\"step\":2}", 1, 25, "expected \"step\" once in a record, found it again"},
    {"[1]", 1, 1, "expected '{' starting a record, found '['"},
    {"  {\"kind\":\"final\"} x", 1, 20, "expected the end of the line after the record, found 'x'"},
    {"{\"kind\":\"resume\",\"step\":1", 1, 26, "expected ',' or '}', found end of line"},
    {"{\"kind\":\"resume\" \"step\":1}", 1, 18, "expected ',' or '}', found '\"'"},
    {"{\"kind\":\"final\",\"total\":tru}", 1, 25,
     "expected a value (object, array, string, number, true, false or null), found 't'"},
    {"{\"kind\":\"final\",\"total\":-}", 1, 26, "expected a digit, found '}'"},
    {"{\"kind\":\"final\",\"total\":01}", 1, 26, "expected ',' or '}', found '1'"},
    {"{\"kind\":\"final\",\"total\":1.}", 1, 27, "expected a digit after '.', found '}'"},
    {"{\"kind\":\"final\",\"total\":1e}", 1, 27, "expected a digit of the exponent, found '}'"},
    {"{\"kind\":\"save\",\"step\":1,\"ok\":\"yes\"}", 1, 30, "expected true or false for \"ok\", found \"yes\""},
    {"{\"kind\":\"save\",\"step\":1}", 1, 1, "expected key \"ok\" in a save record, found none"},
    {"{\"kind\":\"save\",\"step\":1,\"ok\":true,\"rc\":-5}", 1, 40,
     "expected an integer from 0 to 0 for \"rc\", found -5"},
    {"{\"kind\":\"save\",\"step\":1,\"ok\":false,\"rc\":0}", 1, 41,
     "expected an integer from -2147483648 to -1 for \"rc\", found 0"},
    {"{\"kind\":\"save\",\"step\":1,\"ok\":false,\"error\":3}", 1, 44, "expected a string for \"error\", found 3"},
    {"{\"kind\":\"final\",\"blobs\":[\"a,b\"]}", 1, 26,
     "expected a blob name (non-empty text without ',') for \"blobs\", found \"a,b\""},
    {"{\"kind\":\"final\",\"digest\":\"0123\"}", 1, 26,
     "expected a digest of 16 hex digits in a string for \"digest\", found \"0123\""},
    {"{\"kind\":\"final\",\"x\":\"a\tb\"}", 1, 23,
     "expected a character of a string (control characters are escaped), found byte 0x09"},
    {"{\"kind\":\"final\",\"x\":\"a\\qb\"}", 1, 24, "expected an escape (*"},
    {"{\"kind\":\"final\",\"x\":\"\\udc00\"}", 1, 22,
     "expected a character or a high surrogate, found a lone low surrogate \\udc00"},
    {"{\"kind\":\"final\",\"x\":\"\\ud800x\"}", 1, 28, "expected a \\u escape with the low surrogate, found 'x'"},
    {"{\"kind\":\"final\",\"x\":\"\\u12g4\"}", 1, 26, "expected a hex digit of a \\u escape, found 'g'"},
    {"{\"kind\":\"final\",\"x\":\"\\u0000\"}", 1, 22, "expected a character other than U+0000, found \\u0000"},
    {"{\"kind\":\"final\",\"x\":\"\xff\"}", 1, 22, "expected UTF-8 text, found byte 0xff"},
    {"{\"kind\":\"final\",\"x\":\"\xc0\xaf\"}", 1, 22, "expected UTF-8 text, found byte 0xc0"},
    {"{\"kind\":\"final\",\"x\":\"open}", 1, 27, "expected '\"' closing the string, found end of line"},
    {"{\"kind\":\"final\"}\n\n{\"kind\":\"final\",\"epochs\":-1}", 3, 26,
     "expected an integer from 0 to 9223372036854775807 for \"epochs\", found -1"},
    {"{\"kind\":\"final\",\"x\":\"\x00\"}", 1, 22,
     "expected a character of a string (control characters are escaped), found byte 0x00", 24},
};
#undef S

START_TEST(test_reader_errors)
{
    const struct bad_line *b = &bad_lines[_i];
    struct keep k;
    char msg[512], want[512];
    size_t len = b->len ? b->len : strlen(b->text);
    memset(&k, 0, sizeof k);
    int rc = ckh_record_jsonl_parse(b->text, len, "t.jsonl", keep_sink, &k, msg, sizeof msg);
    ck_assert_msg(rc == CKH_EPARSE, "case %d: rc %d (%s)", _i, rc, msg);
    snprintf(want, sizeof want, "t.jsonl:%d:%d: %s", b->line, b->col, b->msg);
    size_t lw = strlen(want);
    if (want[lw - 1] == '*')
        ck_assert_msg(strncmp(msg, want, lw - 1) == 0, "case %d:\n got  %s\n want %s", _i, msg, want);
    else
        ck_assert_msg(strcmp(msg, want) == 0, "case %d:\n got  %s\n want %s", _i, msg, want);
    /* Lines before the bad one were handed over. */
    ck_assert_int_eq(k.n[CKH_REC_FINAL], b->line == 3 ? 1 : 0);
}
END_TEST

/* A key given twice in a record is refused at its second place, whatever
 * the record and the key. */
START_TEST(test_reader_duplicate_keys)
{
    static const struct {
        const char *text, *key;
    } dup[] = {
        {"{\"kind\":\"step\",\"step\":1,\"epoch\":0,\"epoch\":1}", "epoch"},
        {"{\"kind\":\"step\",\"step\":1,\"digests\":{},\"digests\":{}}", "digests"},
        {"{\"kind\":\"step\",\"step\":1,\"values\":{},\"values\":{}}", "values"},
        {"{\"kind\":\"step\",\"step\":1,\"samples\":[],\"samples\":[]}", "samples"},
        {"{\"kind\":\"resume\",\"step\":1,\"step\":2}", "step"},
        {"{\"kind\":\"resume\",\"step\":1,\"epoch\":0,\"epoch\":0}", "epoch"},
        {"{\"kind\":\"save\",\"step\":1,\"step\":1,\"ok\":true}", "step"},
        {"{\"kind\":\"save\",\"step\":1,\"epoch\":0,\"epoch\":0,\"ok\":true}", "epoch"},
        {"{\"kind\":\"save\",\"step\":1,\"ok\":true,\"ok\":true}", "ok"},
        {"{\"kind\":\"save\",\"step\":1,\"ok\":false,\"rc\":-1,\"rc\":-2}", "rc"},
        {"{\"kind\":\"save\",\"step\":1,\"ok\":false,\"error\":\"a\",\"error\":\"b\"}", "error"},
        {"{\"kind\":\"final\",\"epochs\":1,\"epochs\":1}", "epochs"},
        {"{\"kind\":\"final\",\"steps\":1,\"steps\":1}", "steps"},
        {"{\"kind\":\"final\",\"total\":1,\"total\":1}", "total"},
        {"{\"kind\":\"final\",\"digest\":\"0000000000000000\",\"digest\":\"0000000000000000\"}", "digest"},
        {"{\"kind\":\"final\",\"values\":{},\"values\":{}}", "values"},
        {"{\"kind\":\"final\",\"blobs\":[],\"blobs\":[]}", "blobs"},
        {"{\"kind\":\"final\",\"kind\":\"final\"}", "kind"},
    };
    for (size_t i = 0; i < sizeof dup / sizeof dup[0]; i++) {
        struct keep k;
        char msg[512], want[512], quoted[32];
        memset(&k, 0, sizeof k);
        snprintf(quoted, sizeof quoted, "\"%s\":", dup[i].key);
        const char *second = NULL;
        for (const char *at = strstr(dup[i].text, quoted); at; at = strstr(at + 1, quoted))
            second = at;
        ck_assert_ptr_nonnull(second);
        int rc = ckh_record_jsonl_parse(dup[i].text, strlen(dup[i].text), "t.jsonl", keep_sink, &k, msg, sizeof msg);
        ck_assert_msg(rc == CKH_EPARSE, "case %zu: rc %d (%s)", i, rc, msg);
        snprintf(want, sizeof want, "t.jsonl:1:%d: expected \"%s\" once in a record, found it again",
                 (int)(second - dup[i].text) + 1, dup[i].key);
        ck_assert_msg(strcmp(msg, want) == 0, "case %zu:\n got  %s\n want %s", i, msg, want);
        ck_assert_int_eq(k.n[CKH_REC_STEP] + k.n[CKH_REC_RESUME] + k.n[CKH_REC_SAVE] + k.n[CKH_REC_FINAL], 0);
    }
}
END_TEST

START_TEST(test_reader_limits)
{
    char msg[512];
    struct keep k;
    /* More digests than a record may hold. */
    char text[4096];
    size_t at = (size_t)snprintf(text, sizeof text, "{\"kind\":\"step\",\"step\":1,\"digests\":{");
    for (int i = 0; i <= CKH_RECORD_FIELDS_MAX; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "%s\"d%d\":\"0000000000000000\"", i ? "," : "", i);
    snprintf(text + at, sizeof text - at, "}}");
    ck_assert_int_eq(parse_text(text, &k, msg, sizeof msg), CKH_EPARSE);
    ck_assert_str_eq(msg, "t.jsonl:1:35: expected at most 32 entries in \"digests\", found 33");
    /* Nesting: 32 levels in all are fine, 33 are not. */
    at = (size_t)snprintf(text, sizeof text, "{\"kind\":\"final\",\"x\":");
    for (int i = 0; i < 31; i++)
        text[at++] = '[';
    for (int i = 0; i < 31; i++)
        text[at++] = ']';
    snprintf(text + at, sizeof text - at, "}");
    ck_assert_int_eq(parse_text(text, &k, msg, sizeof msg), 0);
    at = (size_t)snprintf(text, sizeof text, "{\"kind\":\"final\",\"x\":");
    for (int i = 0; i < 32; i++)
        text[at++] = '[';
    text[at] = '\0';
    ck_assert_int_eq(parse_text(text, &k, msg, sizeof msg), CKH_EPARSE);
    ck_assert_str_eq(msg, "t.jsonl:1:52: expected at most 32 nested arrays and objects, found '[' "
                          "opening one more");
    /* A line longer than the limit, after a good one. */
    size_t big = CKH_RECORD_JSONL_LINE_MAX + 20;
    char *huge = malloc(big + 1);
    int n = snprintf(huge, big, "{\"kind\":\"final\"}\n{\"kind\":\"final\",\"x\":\"");
    memset(huge + n, 'a', big - (size_t)n - 3);
    memcpy(huge + big - 3, "\"}\n", 3);
    huge[big] = '\0';
    ck_assert_int_eq(parse_text(huge, &k, msg, sizeof msg), CKH_EPARSE);
    ck_assert_int_eq(k.n[CKH_REC_FINAL], 1);
    snprintf(text, sizeof text, "t.jsonl:2:1: expected a line of at most %u bytes, found %zu bytes",
             CKH_RECORD_JSONL_LINE_MAX, big - 1 - 17);
    ck_assert_str_eq(msg, text);
    free(huge);
    /* Bad arguments. */
    ck_assert_int_eq(ckh_record_jsonl_parse(NULL, 3, "t", keep_sink, &k, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_jsonl_parse("{}", 2, "t", NULL, &k, msg, sizeof msg), CKH_EINVAL);
}
END_TEST

/* ==== oracles on hand-built runs ==== */

#define NSTEP 12
#define NQ 4 /* weights, optim, rng (digests), lr (value) */

/* One run's job result with 2 nodes, NSTEP steps each, NQ quantities per
 * step record, and final values (loss on both, acc on rank_0). */
struct fixture {
    struct ckh_node_result nodes[2];
    struct ckh_step_record steps[2 * NSTEP];
    struct ckh_step_quantity q[2 * NSTEP * NQ];
    struct ckh_step_quantity fv[3];
    struct ckh_job_result r;
};

static void set_q(struct ckh_step_quantity *q, const char *name, bool is_value, uint64_t bits)
{
    snprintf(q->name, sizeof q->name, "%s", name);
    q->is_value = is_value;
    q->bits = bits;
}

static uint64_t dbits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static void fixture_init(struct fixture *f)
{
    static const char *const qn[NQ] = {"weights", "optim", "rng", "lr"};
    memset(f, 0, sizeof *f);
    for (uint32_t nd = 0; nd < 2; nd++) {
        snprintf(f->nodes[nd].node, sizeof f->nodes[nd].node, "rank_%u", nd);
        f->nodes[nd].finished = true;
        f->nodes[nd].epochs = 3;
        f->nodes[nd].steps = NSTEP;
        f->nodes[nd].total = 100;
        f->nodes[nd].digest = 0xabc;
    }
    size_t k = 0;
    for (int s = 1; s <= NSTEP; s++) {
        for (uint32_t nd = 0; nd < 2; nd++) {
            struct ckh_step_record *r = &f->steps[(s - 1) * 2 + (int)nd];
            r->step = s;
            r->epoch = (s - 1) / 4;
            r->node = nd;
            r->first = (uint32_t)k;
            r->count = NQ;
            for (int i = 0; i < NQ; i++)
                set_q(&f->q[k++], qn[i], i == 3,
                      i == 3 ? dbits(0.1 * s) : (uint64_t)s << 32 | (uint64_t)nd << 8 | (uint64_t)i);
        }
    }
    set_q(&f->fv[0], "loss", true, dbits(0.5));
    set_q(&f->fv[1], "acc", true, dbits(0.75));
    set_q(&f->fv[2], "loss", true, dbits(0.5));
    f->nodes[0].vfirst = 0;
    f->nodes[0].vcount = 2;
    f->nodes[1].vfirst = 2;
    f->nodes[1].vcount = 1;
    f->r = (struct ckh_job_result){.nodes = f->nodes, .nnodes = 2, .steps = f->steps,
                                   .nsteps = 2 * NSTEP, .quantities = f->q, .nquantities = k,
                                   .final_values = f->fv, .nfinal_values = 3};
}

/* The quantity `name` of node nd's record of step s. */
static struct ckh_step_quantity *qof(struct fixture *f, int s, uint32_t nd, const char *name)
{
    struct ckh_step_record *r = &f->steps[(s - 1) * 2 + (int)nd];
    for (uint32_t i = 0; i < r->count; i++)
        if (strcmp(f->q[r->first + i].name, name) == 0)
            return &f->q[r->first + i];
    return NULL;
}

/* Removes step record i. */
static void drop_record(struct fixture *f, size_t i)
{
    memmove(&f->steps[i], &f->steps[i + 1], (f->r.nsteps - i - 1) * sizeof f->steps[0]);
    f->r.nsteps--;
}

struct harness {
    struct ckh_scenario *sc;
    struct fixture ref, got;
    struct ckh_run_info runs[3];
    struct ckh_node_end ends[3][2];
    struct ckh_scenario_run run;
};

/* A completed 2-node run of the scenario text whose faulted result equals
 * the reference until the test changes it; nruns runs. */
static void harness_init(struct harness *h, const char *scenario, size_t nruns)
{
    struct ckh_scn_error err;
    memset(h, 0, sizeof *h);
    int rc = ckh_scenario_parse_string(scenario, strlen(scenario), "t.yaml", NULL, &h->sc, &err);
    ck_assert_msg(rc == 0, "%d:%d: %s", err.line, err.column, err.msg);
    fixture_init(&h->ref);
    fixture_init(&h->got);
    for (size_t i = 0; i < nruns; i++) {
        h->runs[i].run = (int)i + 1;
        h->runs[i].completed = i + 1 == nruns;
        h->runs[i].nodes = h->ends[i];
        h->runs[i].nnodes = 2;
        for (int nd = 0; nd < 2; nd++)
            h->ends[i][nd].state = CKH_NODE_EXITED;
    }
    h->run = (struct ckh_scenario_run){.sc = h->sc, .seed = 1, .ref_ok = true, .completed = true,
                                       .runs = h->runs, .nruns = nruns, .world = 2,
                                       .world_restart = 2};
}

/* harness_init again, after freeing the scenario of the last one. */
static void harness_redo(struct harness *h, const char *scenario, size_t nruns)
{
    ckh_scenario_free(h->sc);
    harness_init(h, scenario, nruns);
}

/* Points the run at the fixtures (after the test changed them). */
static const struct ckh_scenario_run *harness_run(struct harness *h)
{
    h->run.ref.r = h->ref.r;
    h->run.got.r = h->got.r;
    return &h->run;
}

/* Runs oracle `name` on h: whether it applies, its verdict and detail. */
static bool judge_one(struct harness *h, const char *name, char *detail, size_t n, int64_t *div)
{
    const struct ckh_oracle_ops *o = ckh_oracle_find(name);
    ck_assert_ptr_nonnull(o);
    const struct ckh_scenario_run *r = harness_run(h);
    ck_assert_msg(o->applies(r), "%s does not apply", name);
    *div = -1;
    detail[0] = '\0';
    return o->check(r, detail, n, div);
}

#define JOB "job: {workload: ddp-train, nodes: 2}\n"

START_TEST(test_resume_names_quantity)
{
    struct harness h;
    char d[1536];
    int64_t div;
    harness_init(&h, JOB, 2);
    ck_assert(judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_str_eq(d, "24 step records and 0 epochs identical to the uninterrupted run");
    qof(&h.got, 12, 1, "rng")->bits ^= 1;
    qof(&h.got, 12, 0, "rng")->bits ^= 0; /* unchanged */
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_int_eq(div, 12);
    ck_assert_str_eq(d, "step 12: rng of rank_1 diverged first (weights, optim, lr equal): "
                        "rank_1 rng 0000000c00000103, reference 0000000c00000102");
    /* An earlier, different divergence on the other node wins. */
    qof(&h.got, 7, 0, "lr")->bits = dbits(0.25);
    qof(&h.got, 7, 0, "optim")->bits = 1;
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_int_eq(div, 7);
    ck_assert_str_eq(d, "step 7: optim, lr of rank_0 diverged first (weights, rng equal): "
                        "rank_0 optim 0000000000000001, reference 0000000700000001; "
                        "rank_0 lr 0.25, reference 0.70000000000000007");
    /* The same quantity on both nodes. */
    harness_redo(&h, JOB, 2);
    qof(&h.got, 3, 0, "weights")->bits = 9;
    qof(&h.got, 3, 1, "weights")->bits = 9;
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_ptr_nonnull(strstr(d, "step 3: weights of rank_0, rank_1 diverged first (optim, rng, lr equal): "));
    /* Another epoch. */
    harness_redo(&h, JOB, 2);
    h.got.steps[4].epoch = 9;
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_str_eq(d, "step 3: epoch of rank_0 diverged first (weights, optim, rng, lr equal): "
                        "rank_0 in epoch 9, reference 0");
    ckh_scenario_free(h.sc);
}
END_TEST

START_TEST(test_resume_missing)
{
    struct harness h;
    char d[1536];
    int64_t div;
    /* rank_1 has no record of step 3 in the resumed run. */
    harness_init(&h, JOB, 2);
    drop_record(&h.got, 5);
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_int_eq(div, 3);
    ck_assert_str_eq(d, "step 3: rank_1 missing from the resumed run (weights, optim, rng, lr equal): "
                        "rank_1 recorded no step 3 (the reference run did)");
    /* The resumed run recorded a step more (the reference's last is gone). */
    harness_redo(&h, JOB, 2);
    drop_record(&h.ref, 2 * NSTEP - 1);
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_str_eq(d, "step 12: rank_1 recorded by the resumed run only (weights, optim, rng, lr "
                        "equal): rank_1 recorded step 12, which the reference run did not");
    /* A quantity one run did not record, and one the other did not. */
    harness_redo(&h, JOB, 2);
    snprintf(qof(&h.got, 5, 0, "optim")->name, CKH_RECORD_NAME_MAX + 1, "%s", "sampler");
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_int_eq(div, 5);
    ck_assert_str_eq(d, "step 5: optim of rank_0 missing from the resumed run (weights, rng, lr equal): "
                        "rank_0 did not record optim (reference 0000000500000001); "
                        "rank_0 recorded sampler 0000000500000001, which the reference run did not");
    ckh_scenario_free(h.sc);
}
END_TEST

START_TEST(test_resume_ignore_and_samples)
{
    struct harness h;
    char d[1536];
    int64_t div;
    struct ckh_epoch_samples ws[2] = {{0, 8, 0x11}, {1, 8, 0x22}}, gs[2] = {{0, 8, 0x11}, {1, 9, 0x23}};
    harness_init(&h, JOB "compare: {ignore: [rng, sampler]}\n", 2);
    qof(&h.got, 2, 1, "rng")->bits = 0;
    snprintf(qof(&h.got, 5, 0, "optim")->name, CKH_RECORD_NAME_MAX + 1, "%s", "sampler");
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    /* rng is skipped; the renamed optim still counts, sampler does not. */
    ck_assert_str_eq(d, "step 5: optim of rank_0 missing from the resumed run (weights, lr equal): "
                        "rank_0 did not record optim (reference 0000000500000001)");
    snprintf(qof(&h.got, 5, 0, "sampler")->name, CKH_RECORD_NAME_MAX + 1, "%s", "optim");
    ck_assert(judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    /* The per-epoch sample multisets are still compared. */
    h.ref.r.samples = ws;
    h.ref.r.nsamples = 2;
    h.got.r.samples = gs;
    h.got.r.nsamples = 2;
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_str_eq(d, "epoch 1: samples skipped or repeated: consumed 9 samples (multiset "
                        "0000000000000023), reference 8 (0000000000000022)");
    ckh_scenario_free(h.sc);
}
END_TEST

/* rank_0 saved step 8 and was killed before its step record; its next
 * incarnation resumed after step 8: not a missing step (the restored
 * state shows in the records after it), and step 8's samples are not
 * counted against its epoch. Without the restore, the step is missing;
 * a restored step whose state was wrong still fails at the next step. */
START_TEST(test_resume_restored_step)
{
    struct harness h;
    char d[1536];
    int64_t div;
    struct ckh_step_key rs = {.step = 8, .node = 0};
    /* epoch 1 (steps 5..8): 8 samples in the reference, rank_0's step 8 holds 1 of them */
    struct ckh_epoch_samples ws[2] = {{0, 8, 0x11}, {1, 8, 0x22}}, gs[2] = {{0, 8, 0x11}, {1, 7, 0x20}};
    harness_init(&h, JOB, 2);
    h.ref.steps[14].nids = 1;
    h.ref.steps[14].multiset = 0x2;
    drop_record(&h.got, 14); /* rank_0's step 8 */
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_str_eq(d, "step 8: rank_0 missing from the resumed run (weights, optim, rng, lr equal): "
                        "rank_0 recorded no step 8 (the reference run did)");
    h.got.r.restored = &rs;
    h.got.r.nrestored = 1;
    h.ref.r.samples = ws;
    h.ref.r.nsamples = 2;
    h.got.r.samples = gs;
    h.got.r.nsamples = 2;
    ck_assert_msg(judge_one(&h, "resume-equivalence", d, sizeof d, &div), "%s", d);
    ck_assert_str_eq(d, "24 step records and 2 epochs identical to the uninterrupted run (1 step restored "
                        "from a checkpoint saved just before a kill, without a record of its own)");
    /* A sample of epoch 1 skipped elsewhere is still found. */
    gs[1] = (struct ckh_epoch_samples){1, 6, 0x1f};
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_str_eq(d, "epoch 1: samples skipped or repeated: consumed 6 samples (multiset "
                        "000000000000001f), reference 7 (0000000000000020)");
    /* The restored state was not step 8's: step 9 diverges. */
    gs[1] = (struct ckh_epoch_samples){1, 7, 0x20};
    qof(&h.got, 9, 0, "weights")->bits ^= 4;
    ck_assert(!judge_one(&h, "resume-equivalence", d, sizeof d, &div));
    ck_assert_int_eq(div, 9);
    ckh_scenario_free(h.sc);
}
END_TEST

START_TEST(test_reference_final_values)
{
    struct harness h;
    char d[1536];
    int64_t div;
    harness_init(&h, JOB, 2);
    ck_assert(judge_one(&h, "reference", d, sizeof d, &div));
    ck_assert_str_eq(d, "2 nodes match the reference run (epochs, steps, totals, blobs, digests, 3 "
                        "final values)");
    h.got.fv[2].bits = dbits(0.25);
    ck_assert(!judge_one(&h, "reference", d, sizeof d, &div));
    ck_assert_str_eq(d, "final value loss of rank_1 differs: 0.25, reference 0.5");
    h.got.fv[2].bits = dbits(0.5);
    h.got.nodes[0].vcount = 1; /* rank_0 lost acc */
    ck_assert(!judge_one(&h, "reference", d, sizeof d, &div));
    ck_assert_str_eq(d, "final value acc of rank_0 missing: the reference run ended with 0.75");
    h.got.nodes[0].vcount = 2;
    h.ref.nodes[0].vcount = 1; /* the reference run had loss only */
    snprintf(h.got.fv[1].name, sizeof h.got.fv[1].name, "%s", "f1");
    ck_assert(!judge_one(&h, "reference", d, sizeof d, &div));
    ck_assert_str_eq(d, "final value f1 of rank_0 is 0.75; the reference run has no such value");
    h.ref.nodes[0].vcount = 2;
    snprintf(h.got.fv[1].name, sizeof h.got.fv[1].name, "%s", "acc");
    ck_assert(judge_one(&h, "reference", d, sizeof d, &div));
    h.got.nodes[1].steps = 11;
    ck_assert(!judge_one(&h, "reference", d, sizeof d, &div));
    ck_assert_str_eq(d, "steps of rank_1 differ: 11, reference 12");
    ck_assert_int_eq(div, 11);
    ckh_scenario_free(h.sc);

    /* compare.ignore leaves names out, either way round. */
    harness_init(&h, JOB "compare:\n  ignore: [acc, f1, loss]\n", 2);
    h.got.fv[2].bits = dbits(0.25);
    snprintf(h.got.fv[1].name, sizeof h.got.fv[1].name, "%s", "f1");
    ck_assert(judge_one(&h, "reference", d, sizeof d, &div));
    ck_assert_str_eq(d, "2 nodes match the reference run (epochs, steps, totals, blobs, digests, 3 "
                        "final values, compare.ignore left out)");
    h.got.nodes[0].digest = 1;
    ck_assert(!judge_one(&h, "reference", d, sizeof d, &div));
    ck_assert_str_eq(d, "state digest of rank_0 differs: 0000000000000001, reference 0000000000000abc");
    ckh_scenario_free(h.sc);
}
END_TEST

START_TEST(test_saves_oracle)
{
    struct harness h;
    char d[1536];
    int64_t div;
    harness_init(&h, JOB, 2);
    ck_assert(judge_one(&h, "saves", d, sizeof d, &div));
    /* Failed saves after a fault fired are the fault's. */
    h.got.nodes[1].saves_failed = 2;
    ck_assert(judge_one(&h, "saves", d, sizeof d, &div));
    ck_assert_str_eq(d, "no save failed without a fault to blame (2 failed saves in the faulted run, "
                     "each after a fault fired)");
    h.got.nodes[1].saves_failed_unfaulted = 1;
    snprintf(h.got.nodes[1].first_failed_save, sizeof h.got.nodes[1].first_failed_save,
             "ENOENT: /ckpt/step_4/rank_1.bin");
    ck_assert(!judge_one(&h, "saves", d, sizeof d, &div));
    ck_assert_str_eq(d, "save of rank_1 failed before any fault fired: 1 of its 2 failed saves had no "
                        "fault to blame; the first failed save: ENOENT: /ckpt/step_4/rank_1.bin");
    /* Any failed save of the reference run fails it. */
    h.got.nodes[1].saves_failed_unfaulted = 0;
    h.ref.nodes[0].saves_failed = 3;
    snprintf(h.ref.nodes[0].first_failed_save, sizeof h.ref.nodes[0].first_failed_save, "EIO: /ckpt/x");
    ck_assert(!judge_one(&h, "saves", d, sizeof d, &div));
    ck_assert_str_eq(d, "save of rank_0 failed with no fault armed: 3 saves failed in the fault-free "
                        "reference run; the first: EIO: /ckpt/x");
    /* expect.skip turns it off in the verdict. */
    struct ckh_report_result res;
    ckh_report_result_init(&res);
    ckh__run_judge(harness_run(&h), &res);
    ck_assert_int_eq(res.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(res.failed_oracle, "saves");
    ckh_report_result_clear(&res);
    ckh_scenario_free(h.sc);
    harness_init(&h, JOB "expect: {skip: [saves]}\n", 2);
    h.ref.nodes[0].saves_failed = 3;
    ckh_report_result_init(&res);
    ckh__run_judge(harness_run(&h), &res);
    ck_assert_msg(res.verdict == CKH_VERDICT_PASS, "%s", res.message);
    for (size_t i = 0; i < res.noracles; i++)
        ck_assert_str_ne(res.oracles[i].name, "saves");
    ckh_report_result_clear(&res);
    ckh_scenario_free(h.sc);
}
END_TEST

START_TEST(test_restarts_oracle)
{
    struct harness h;
    char d[1536];
    int64_t div;
    /* Not given: does not apply. */
    harness_init(&h, JOB, 2);
    ck_assert(!ckh_oracle_find("restarts")->applies(harness_run(&h)));
    ckh_scenario_free(h.sc);
    /* Every rank restarted after a collective timed out. */
    harness_init(&h, JOB "expect: {max_restarts: 0}\n", 2);
    h.ends[0][0].state = CKH_NODE_EXITED;
    h.ends[0][0].rc = CKH_ETIMEOUT;
    h.ends[0][1].state = CKH_NODE_KILLED;
    h.run.timeout_seen = true;
    ck_assert(!judge_one(&h, "restarts", d, sizeof d, &div));
    ck_assert_str_eq(d, "the job needed 1 restart, at most 0 allowed (expect.max_restarts): run 1 "
                        "ended with rank_0 exited with CKH_ETIMEOUT, rank_1 killed (a collective failed)");
    h.sc->expect.max_restarts = 1;
    ck_assert(judge_one(&h, "restarts", d, sizeof d, &div));
    ck_assert_str_eq(d, "the job needed 1 restart, at most 1 allowed");
    ckh_scenario_free(h.sc);
    harness_init(&h, JOB "expect: {max_restarts: 1}\n", 3);
    ck_assert(!judge_one(&h, "restarts", d, sizeof d, &div));
    ck_assert_str_eq(d, "the job needed 2 restarts, at most 1 allowed (expect.max_restarts): run 2 "
                        "ended with the job did not complete");
    ckh_scenario_free(h.sc);
}
END_TEST

/* The verdict and the terminal line name the step and quantity. */
START_TEST(test_verdict_line)
{
    struct harness h;
    struct ckh_report_result res;
    harness_init(&h, "name: t\n" JOB "expect: {oracles: [reference, resume-equivalence]}\n", 2);
    qof(&h.got, 12, 1, "rng")->bits ^= 1;
    h.got.nodes[1].digest = 7; /* the end state differs too */
    ckh_report_result_init(&res);
    ckh__run_judge(harness_run(&h), &res);
    ck_assert_int_eq(res.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(res.failed_oracle, "resume-equivalence");
    ck_assert_int_eq(res.first_divergent_step, 12);
    ckh_report_set(&res.name, "t");
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ckh_report_term_result(f, &res, false);
    fclose(f);
    ck_assert_msg(strncmp(out, "FAIL  t: resume-equivalence: step 12: rng of rank_1 diverged first "
                               "(weights, optim, lr equal)", 93) == 0, "%s", out);
    free(out);
    ckh_report_result_clear(&res);
    ckh_scenario_free(h.sc);
    /* An earlier oracle failing: the divergence is the message's second line. */
    harness_init(&h, JOB "expect: {oracles: [outcome, resume-equivalence]}\n", 2);
    qof(&h.got, 4, 0, "lr")->bits = dbits(1.5);
    h.run.deadlock_seen = true;
    ckh_report_result_init(&res);
    ckh__run_judge(harness_run(&h), &res);
    ck_assert_str_eq(res.failed_oracle, "outcome");
    ck_assert_int_eq(res.first_divergent_step, 4);
    const char *nl = strchr(res.message, '\n');
    ck_assert_ptr_nonnull(nl);
    ck_assert_str_eq(nl, "\nfirst divergence (resume-equivalence): step 4: lr of rank_0 diverged "
                         "first (weights, optim, rng equal): rank_0 lr 1.5, reference "
                         "0.40000000000000002");
    ckh_report_result_clear(&res);
    ckh_scenario_free(h.sc);
}
END_TEST

static Suite *records_suite(void)
{
    Suite *s = suite_create("records");
    TCase *api = tcase_create("api");
    tcase_set_timeout(api, 60);
    tcase_add_test(api, test_name_check);
    tcase_add_test(api, test_wrappers);
    suite_add_tcase(s, api);
    TCase *jsonl = tcase_create("jsonl");
    tcase_set_timeout(jsonl, 60);
    tcase_add_test(jsonl, test_round_trip);
    tcase_add_test(jsonl, test_writer_edges);
    tcase_add_test(jsonl, test_reader_accepts);
    tcase_add_loop_test(jsonl, test_reader_errors, 0, (int)(sizeof bad_lines / sizeof bad_lines[0]));
    tcase_add_test(jsonl, test_reader_limits);
    tcase_add_test(jsonl, test_reader_duplicate_keys);
    suite_add_tcase(s, jsonl);
    TCase *oracles = tcase_create("oracles");
    tcase_set_timeout(oracles, 60);
    tcase_add_test(oracles, test_resume_names_quantity);
    tcase_add_test(oracles, test_resume_missing);
    tcase_add_test(oracles, test_resume_restored_step);
    tcase_add_test(oracles, test_resume_ignore_and_samples);
    tcase_add_test(oracles, test_reference_final_values);
    tcase_add_test(oracles, test_saves_oracle);
    tcase_add_test(oracles, test_restarts_oracle);
    tcase_add_test(oracles, test_verdict_line);
    suite_add_tcase(s, oracles);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(records_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
