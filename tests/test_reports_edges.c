/* Edge cases of the reports (reports/): the terminal lines of every kind
 * of result with colours, control characters and shadowed plugins; the
 * progress line at its bounds; UTF-8 decoding of every invalid form;
 * durations in each unit; and the timeline's transport refusing what a
 * worker could not have written (bad magic, counts past the bounds, a cut
 * body, an event of no kind or on no node). */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "report.h"

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "'%s' lacks '%s'", (s), (sub))

/* A memory stream; what was written is in *buf after capture_end (free()). */
static void capture_begin(FILE **f, char **buf, size_t *len)
{
    *f = open_memstream(buf, len);
    ck_assert_ptr_nonnull(*f);
}

static void capture_end(FILE *f)
{
    ck_assert_int_eq(fclose(f), 0);
}

static void result(struct ckh_report_result *r, const char *name, enum ckh_verdict v)
{
    ckh_report_result_init(r);
    ck_assert_int_eq(ckh_report_set(&r->name, "%s", name), 0);
    r->verdict = v;
    r->runs = 1;
}

START_TEST(test_term_lines)
{
    FILE *f;
    char *buf;
    size_t len;
    struct ckh_report_result r[4];

    /* a pass without virtual time (a real program), two runs, with what it detected */
    result(&r[0], "real\x01one", CKH_VERDICT_PASS);
    r[0].runs = 2;
    r[0].wall_ms = 5;
    ck_assert_int_eq(ckh_report_set(&r[0].message, "detected as expected\nby totals\x7f"), 0);
    ck_assert_int_eq(ckh_report_add_plugin(&r[0], "workload", "libx.so", "/p/libx.so", "build-id ab",
                                           "/q/libx.so\n/r/lib\x02x.so"),
                     0);
    capture_begin(&f, &buf, &len);
    ckh_report_term_result(f, &r[0], true);
    capture_end(f);
    ck_assert_str_eq(buf, "\033[32mPASS\033[0m  real?one  (2 runs, 5 ms): detected as expected\n"
                          "      by totals?\n"
                          "      plugin workload libx.so: /p/libx.so (build-id ab)\n"
                          "      \033[33mwarning:\033[0m libx.so also names /q/libx.so, shadowed (the first "
                          "file on the search path is taken)\n"
                          "      \033[33mwarning:\033[0m libx.so also names /r/lib?x.so, shadowed (the first "
                          "file on the search path is taken)\n");
    free(buf);

    /* a failure without a message, an error without one, in colour */
    result(&r[1], "f", CKH_VERDICT_FAIL);
    ck_assert_int_eq(ckh_report_set(&r[1].failed_oracle, "totals"), 0);
    r[1].first_divergent_step = 3;
    ck_assert_int_eq(ckh_report_set(&r[1].replay, "ckh run f.yaml --seed 1"), 0);
    result(&r[2], "e", CKH_VERDICT_ERROR);
    /* a scenario an interrupted run never started, without a message */
    result(&r[3], "n", CKH_VERDICT_PASS);
    r[3].state = CKH_REPORT_NOT_STARTED;
    capture_begin(&f, &buf, &len);
    for (int i = 1; i < 4; i++)
        ckh_report_term_result(f, &r[i], true);
    ckh_report_term_result(NULL, &r[1], true);
    ckh_report_term_result(f, NULL, true);
    capture_end(f);
    ck_assert_str_eq(buf, "\033[31mFAIL \033[0m f: totals: scenario failed\n"
                          "      first divergent step: 3\n"
                          "      replay: ckh run f.yaml --seed 1\n"
                          "\033[33mERROR\033[0m e: scenario could not run\n"
                          "NOT RUN n: the run was interrupted\n");
    free(buf);

    /* the summary in colour: one of each, and one not run */
    capture_begin(&f, &buf, &len);
    ckh_report_term_summary(f, r, 4, true);
    ckh_report_term_summary(f, NULL, 1, true); /* refused: nothing written */
    ckh_report_term_summary(NULL, r, 4, true);
    capture_end(f);
    ck_assert_ptr_nonnull(strstr(buf, "\nFailures:\n\033[31mFAIL \033[0m f: totals"));
    ck_assert_ptr_nonnull(strstr(buf, "\n4 scenarios: \033[32m1 passed\033[0m, \033[31m1 failed\033[0m, "
                                      "\033[33m1 error\033[0m\n1 not run (interrupted)\n"));
    free(buf);
    /* without colour and nothing but passes: no "Failures:" */
    capture_begin(&f, &buf, &len);
    ckh_report_term_summary(f, r, 1, false);
    ckh_report_term_summary(f, NULL, 0, false);
    capture_end(f);
    ck_assert_str_eq(buf, "\n1 scenario: 1 passed, 0 failed, 0 errors\n\n0 scenarios: 0 passed, 0 failed, 0 errors\n");
    free(buf);
    for (int i = 0; i < 4; i++)
        ckh_report_result_clear(&r[i]);
}
END_TEST

START_TEST(test_progress_bounds)
{
    char line[256];
    struct ckh_report_progress p = {.done = 0, .total = 4};
    ck_assert_int_eq(ckh_report_progress_format(NULL, 80, line, sizeof line), -1);
    ck_assert_int_eq(ckh_report_progress_format(&p, 80, NULL, 5), -1);
    /* snprintf's length with no buffer */
    int n = ckh_report_progress_format(&p, 80, NULL, 0);
    ck_assert_int_eq(ckh_report_progress_format(&p, 0, line, sizeof line), n); /* 0: 80 columns */
    ck_assert_ptr_nonnull(strstr(line, "~--:-- left"));
    /* done past total (a count that raced): no estimate, a full bar */
    p.done = 5;
    ckh_report_progress_format(&p, 80, line, sizeof line);
    ck_assert_ptr_nonnull(strstr(line, "~--:-- left"));
    ck_assert_ptr_null(strchr(line, '.'));
    /* a wide terminal: the bar stops at 60 cells */
    p = (struct ckh_report_progress){.done = 1, .total = 2, .errors = 1, .elapsed_ms = 7200000};
    ckh_report_progress_format(&p, 500, line, sizeof line);
    ck_assert_int_eq(strchr(line, ']') - line, 61);
    ck_assert_ptr_nonnull(strstr(line, "1 error  ~2:00:00 left"));
    /* no scenarios at all: a full bar */
    p = (struct ckh_report_progress){0};
    ckh_report_progress_format(&p, 30, line, sizeof line);
    ck_assert_int_eq(line[1], '#');

    FILE *f;
    char *buf;
    size_t len;
    capture_begin(&f, &buf, &len);
    p = (struct ckh_report_progress){.done = 2, .total = 3, .failed = 1, .errors = 2};
    ckh_report_progress_print(f, &p, false);
    ckh_report_progress_print(f, NULL, false);
    ckh_report_progress_print(NULL, &p, false);
    ckh_report_progress_print(f, &p, true);
    ckh_report_progress_clear(f, false);
    ckh_report_progress_clear(f, true);
    ckh_report_progress_clear(NULL, true);
    capture_end(f);
    ck_assert(strncmp(buf, "progress: 2/3 done, 1 failed, 2 errors\n\r[", 41) == 0);
    len = strlen(buf);
    ck_assert_str_eq(buf + len - 7, "\033[K\r\033[K");
    free(buf);
}
END_TEST

START_TEST(test_utf8_and_durations)
{
    static const struct {
        const char *s;
        size_t len;
        uint32_t cp;
    } cases[] = {
        {"A", 1, 'A'},
        {"\xc3\xa9", 2, 0xe9},
        {"\xe2\x82\xac", 3, 0x20ac},
        {"\xf0\x9f\x98\x80", 4, 0x1f600},
        {"\xc0\xaf", 1, UINT32_MAX},         /* overlong '/' */
        {"\xe0\x80\xaf", 1, UINT32_MAX},     /* overlong, three bytes */
        {"\xf0\x80\x80\xaf", 1, UINT32_MAX}, /* overlong, four bytes */
        {"\xed\xa0\x80", 1, UINT32_MAX},     /* a surrogate */
        {"\xf4\x90\x80\x80", 1, UINT32_MAX}, /* past U+10FFFF */
        {"\xf8\x88\x80\x80\x80", 1, UINT32_MAX}, /* five bytes */
        {"\x80", 1, UINT32_MAX},             /* a continuation byte alone */
        {"\xe2\x82", 1, UINT32_MAX},         /* cut by the NUL */
        {"\xf0\x9f\x98", 1, UINT32_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t cp = 0;
        size_t n = ckh__report_utf8_next((const unsigned char *)cases[i].s, &cp);
        ck_assert_msg(n == cases[i].len && cp == cases[i].cp, "case %zu: %zu bytes, U+%X", i, n, cp);
    }
    static const struct {
        uint64_t ns;
        const char *text;
    } d[] = {{0, "0s"}, {999, "999ns"}, {1500, "1.5us"}, {2500000, "2.5ms"}, {1234000000, "1.234s"}};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        char buf[32];
        ckh__report_fmt_ns(d[i].ns, buf, sizeof buf);
        ck_assert_str_eq(buf, d[i].text);
    }
    struct ckh_report_result r;
    ckh_report_result_init(&r);
    ck_assert_int_eq(ckh_report_set(NULL, "x"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_add_plugin(NULL, "w", "n", "/p", "id", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_add_plugin(&r, NULL, "n", "/p", "id", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_add_plugin(&r, "w", NULL, "/p", "id", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_add_plugin(&r, "w", "n", NULL, "id", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_add_plugin(&r, "w", "n", "/p", NULL, NULL), CKH_EINVAL);
    ck_assert_uint_eq(r.nplugins, 0);
    ckh_report_result_clear(&r);
    ckh_report_result_clear(NULL);
}
END_TEST

/* Writes t (or the bytes given) and reads them back. */
static int read_back(const void *bytes, size_t n, struct ckh_report_timeline **out)
{
    FILE *f = fmemopen((void *)bytes, n ? n : 1, "r");
    ck_assert_ptr_nonnull(f);
    if (n == 0)
        fgetc(f); /* an empty stream */
    int rc = ckh_report_timeline_read(f, out);
    fclose(f);
    return rc;
}

START_TEST(test_timeline_refusals)
{
    struct ckh_report_timeline *t = NULL, *back = (void *)1;
    ck_assert_int_eq(ckh_report_timeline_new(2, 1, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_new(2, 1, &t), 0);
    ck_assert_int_eq(ckh_report_timeline_add(NULL, 1, 0, CKH_TL_SAVE, 0, 1, "s"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, -1, CKH_TL_SAVE, 0, 1, "s"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, 2, CKH_TL_SAVE, 0, 1, "s"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, 0, CKH_TL__COUNT, 0, 1, "s"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, 0, CKH_TL_SAVE, 5, 4, "s"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, 1, CKH_TL_KILL, 4, 4, NULL), 0);
    ck_assert_str_eq(t->ev[0].label, "");
    ck_assert_str_eq(ckh_tl_kind_name(CKH_TL_KILL), "kill");
    ck_assert_str_eq(ckh_tl_kind_name(CKH_TL__COUNT), "?");
    /* past the limit events are only counted */
    for (int i = 1; i < CKH_TL_MAX_EVENTS + 3; i++)
        ck_assert_int_eq(ckh_report_timeline_add(t, 1, 0, CKH_TL_EPOCH, (uint64_t)i, (uint64_t)i + 1, "e"), 0);
    ck_assert_uint_eq(t->n, CKH_TL_MAX_EVENTS);
    ck_assert_uint_eq(t->dropped, 3);

    /* a stream too small for it */
    char small[16];
    FILE *f = fmemopen(small, sizeof small, "w");
    ck_assert_ptr_nonnull(f);
    setvbuf(f, NULL, _IONBF, 0);
    ck_assert_int_eq(ckh_report_timeline_write(f, t), -EIO);
    fclose(f);
    ck_assert_int_eq(ckh_report_timeline_write(NULL, t), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_read(NULL, &back), CKH_EINVAL);

    /* a good copy, then damaged ones */
    char *buf = NULL;
    size_t len = 0;
    f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_report_timeline_write(f, t), 0);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(read_back(buf, len, &back), 0);
    ck_assert_uint_eq(back->n, t->n);
    ck_assert_uint_eq(back->dropped, 3);
    ckh_report_timeline_free(back);
    ck_assert_int_eq(read_back(buf, 0, &back), CKH_ETRUNCATED);
    ck_assert_ptr_null(back);
    ck_assert_int_eq(read_back(buf, len - 1, &back), CKH_ETRUNCATED);
    uint64_t *hdr = (uint64_t *)buf;
    hdr[0] ^= 1;
    ck_assert_int_eq(read_back(buf, len, &back), CKH_ECORRUPT);
    hdr[0] ^= 1;
    static const int field[] = {1, 2, 3};
    for (int i = 0; i < 3; i++) {
        uint64_t was = hdr[field[i]];
        hdr[field[i]] = i == 2 ? CKH_TL_MAX_EVENTS + 1 : (1u << 20) + 1;
        ck_assert_int_eq(read_back(buf, len, &back), CKH_ECORRUPT);
        hdr[field[i]] = was;
    }
    /* the first event of no kind, then on no node */
    struct ckh_report_tl_event *ev =
        (struct ckh_report_tl_event *)(buf + 5 * sizeof(uint64_t) + t->nnodes * CKH_TL_NODE_LEN +
                                       t->nruns * sizeof(struct ckh_report_tl_run));
    ev->kind = CKH_TL__COUNT;
    ck_assert_int_eq(read_back(buf, len, &back), CKH_ECORRUPT);
    ev->kind = CKH_TL_KILL;
    ev->node = 2;
    ck_assert_int_eq(read_back(buf, len, &back), CKH_ECORRUPT);
    ev->node = -1;
    ck_assert_int_eq(read_back(buf, len, &back), CKH_ECORRUPT);
    ev->node = 1;
    ck_assert_int_eq(read_back(buf, len, &back), 0);
    ckh_report_timeline_free(back);
    free(buf);
    ckh_report_timeline_free(t);
    ckh_report_timeline_free(NULL);
}
END_TEST

/* The three report files with what they rarely get: a nameless result, a
 * result of an interrupted run, a shadowed plugin, control characters and
 * noncharacters, meta with only some fields; and their refusals. */
START_TEST(test_report_files_edges)
{
    struct ckh_report_result r[3];
    ckh_report_result_init(&r[0]); /* no name, no file, a pass */
    r[0].runs = 1;
    ck_assert_int_eq(ckh_report_add_oracle(&r[0], "totals", true, NULL), 0);
    result(&r[1], "bad\x01" "name", CKH_VERDICT_FAIL);
    ck_assert_int_eq(ckh_report_set(&r[1].file, "./scenarios/x/y.yaml"), 0);
    ck_assert_int_eq(ckh_report_set(&r[1].message, "got \x7f and \xff"), 0);
    ck_assert_int_eq(ckh_report_add_plugin(&r[1], "backend", "libb.so", "/p/libb.so", "build-id 1", "/q/libb.so\n/r/libb.so"),
                     0);
    result(&r[2], "later", CKH_VERDICT_PASS);
    r[2].state = CKH_REPORT_INTERRUPTED;
    struct ckh_report_meta meta = {.hostname = "h<1>"};
    FILE *f;
    char *buf;
    size_t len;

    capture_begin(&f, &buf, &len);
    ck_assert_int_eq(ckh_report_junit(f, &meta, r, 3), 0);
    capture_end(f);
    HAS(buf, "hostname=\"h&lt;1&gt;\"");
    HAS(buf, "classname=\"scenarios.x\"");
    HAS(buf, "name=\"?\"");
    HAS(buf, "name=\"bad\\x01name\""); /* a control character as its escape */
    HAS(buf, "/q/libb.so");
    HAS(buf, "/r/libb.so");
    free(buf);

    capture_begin(&f, &buf, &len);
    ck_assert_int_eq(ckh_report_json(f, &meta, r, 3), 0);
    capture_end(f);
    HAS(buf, "\"name\": \"?\"");
    HAS(buf, "\\u0001");
    HAS(buf, "\\u007f");
    HAS(buf, "\"got \\u007f and \\ufffd\""); /* an invalid byte is U+FFFD */
    free(buf);

    struct ckh_report_meta full = {.command = "ckh run <x>", .timestamp = "2026-01-01T00:00:00Z"};
    capture_begin(&f, &buf, &len);
    ck_assert_int_eq(ckh_report_html(f, &full, r, 3), 0);
    capture_end(f);
    HAS(buf, "ckh run &lt;x&gt;");
    HAS(buf, "2026-01-01T00:00:00Z");
    HAS(buf, "not run: the run was interrupted");
    free(buf);
    capture_begin(&f, &buf, &len);
    ck_assert_int_eq(ckh_report_html(f, NULL, r, 1), 0);
    ckh_report_html_escape(f, NULL);
    ckh_report_html_escape(NULL, "x");
    capture_end(f);
    free(buf);

    /* refusals, and a stream that takes nothing */
    ck_assert_int_eq(ckh_report_junit(NULL, &meta, r, 3), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_junit(stdout, &meta, NULL, 3), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_json(NULL, &meta, r, 3), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_json(stdout, &meta, NULL, 3), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_html(NULL, &meta, r, 3), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_html(stdout, &meta, NULL, 3), CKH_EINVAL);
    FILE *full_dev = fopen("/dev/full", "w");
    if (full_dev) {
        ck_assert_int_eq(ckh_report_json(full_dev, &meta, r, 3), -EIO);
        clearerr(full_dev);
        ck_assert_int_eq(ckh_report_junit(full_dev, &meta, r, 3), -EIO);
        fclose(full_dev);
    }

    /* JUnit class names */
    char cls[16];
    static const struct {
        const char *file;
        const char *cls;
    } names[] = {{"./scenarios/x.yaml", "scenarios"}, {"x.yaml", "ckh"}, {"/x.yaml", "ckh"},
                 {"./x.yaml", "ckh"}, {"/abs/dir/x.yaml", "abs.dir"}, {NULL, "ckh"},
                 {"a/very/long/folder/name/x.yaml", "a.very.long.fol"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ckh_report_junit_classname(names[i].file, cls, sizeof cls);
        ck_assert_str_eq(cls, names[i].cls);
    }
    ckh_report_junit_classname("a/b.yaml", NULL, 4);
    ckh_report_junit_classname("a/b.yaml", cls, 0);
    for (int i = 0; i < 3; i++)
        ckh_report_result_clear(&r[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reports_edges");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_term_lines);
    tcase_add_test(tc, test_progress_bounds);
    tcase_add_test(tc, test_utf8_and_durations);
    tcase_add_test(tc, test_timeline_refusals);
    tcase_add_test(tc, test_report_files_edges);
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
