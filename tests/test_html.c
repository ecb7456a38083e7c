/* Tests of the HTML report (reports/html.c) and of run timelines
 * (harness/exec/timeline.c): the page holds the summary, a verdict per
 * scenario, one SVG timeline per run with fault, kill and restart markers,
 * and for a failure the oracle's detail and the replay command; text is
 * escaped; timelines survive the worker transport. When Debian's chromium
 * is installed, the page is rendered in headless chromium
 * (tests/html/render.sh) and must run its script without error and show
 * the expected elements; without chromium that test is skipped with a
 * message. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "search/fuzz.h"
#include "exec/runner.h"
#include "judge/judge.h"
#include "support/skip.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Runs a scenario with a timeline. */
static void run_text(const char *text, struct ckh_report_result *rr)
{
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "tests/data/x.yaml", &so, &sc, &err), 0);
    struct ckh_run_options ro = {.timeline = true};
    ckh_report_result_init(rr);
    ck_assert_int_eq(ckh_harness_run(sc, &ro, rr), 0);
    ckh_scenario_free(sc);
}

static void free_results(struct ckh_report_result *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ckh_report_timeline_free(rs[i].timeline);
        rs[i].timeline = NULL;
        ckh_report_result_clear(&rs[i]);
    }
}

/* Three results: a pass with a kill and restart, a failure (expected
 * outcome not met) with a fault, and an error without a timeline. */
static void make_results(struct ckh_report_result rs[3])
{
    run_text("name: kill-restart\n"
             "job: {workload: seed-pipeline, nodes: 2}\n"
             "faults:\n  - {on: {node: 1, op: rename, nth: 2}, do: kill}\n",
             &rs[0]);
    ck_assert_int_eq(rs[0].verdict, CKH_VERDICT_PASS);
    run_text("name: fails\n"
             "job: {workload: seed-pipeline, nodes: 1}\n"
             "faults:\n  - {on: {op: fsync, nth: 1}, do: delay, duration: 5ms}\n"
             "expect: {outcome: job-fails}\n",
             &rs[1]);
    ck_assert_int_eq(rs[1].verdict, CKH_VERDICT_FAIL);
    ckh_report_set(&rs[1].name, "fails <&> here"); /* text the page must escape */
    ckh_report_result_init(&rs[2]);
    ckh_report_set(&rs[2].name, "broken");
    ckh_report_set(&rs[2].message, "broken.yaml:3:3: unknown key 'epocs'");
    rs[2].verdict = CKH_VERDICT_ERROR;
}

static char *render(const struct ckh_report_result *rs, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct ckh_report_meta meta = {.suite = "ckh", .command = "ckh run tests --html r.html"};
    ck_assert_int_eq(ckh_report_html(f, &meta, rs, n), 0);
    fclose(f);
    return buf;
}

START_TEST(test_timeline_from_run)
{
    struct ckh_report_result rs[3];
    make_results(rs);
    const struct ckh_report_timeline *t = rs[0].timeline;
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->nnodes, 2);
    ck_assert_uint_eq(t->nruns, rs[0].runs);
    ck_assert_uint_eq(t->nruns, 2);
    ck_assert_str_eq(t->nodes[1], "trainer_1");
    size_t kinds[CKH_TL__COUNT] = {0};
    for (size_t i = 0; i < t->n; i++) {
        kinds[t->ev[i].kind]++;
        ck_assert_uint_le(t->ev[i].start_ns, t->ev[i].end_ns);
        if (i)
            ck_assert(t->ev[i - 1].run < t->ev[i].run ||
                      (t->ev[i - 1].run == t->ev[i].run && t->ev[i - 1].start_ns <= t->ev[i].start_ns));
    }
    ck_assert_uint_eq(kinds[CKH_TL_FAULT], 1);
    ck_assert_uint_eq(kinds[CKH_TL_KILL], 1);
    ck_assert_uint_eq(kinds[CKH_TL_RESTART], 1);
    ck_assert_uint_eq(kinds[CKH_TL_EXIT], 2);
    ck_assert_uint_gt(kinds[CKH_TL_SAVE], 2);
    ck_assert_uint_gt(kinds[CKH_TL_EPOCH], 2);
    free_results(rs, 3);
}
END_TEST

START_TEST(test_page_elements)
{
    struct ckh_report_result rs[3];
    make_results(rs);
    char *html = render(rs, 3);
    ck_assert_ptr_nonnull(strstr(html, "<!DOCTYPE html>"));
    ck_assert_ptr_nonnull(strstr(html, "id=\"summary\""));
    ck_assert_uint_eq(count(html, "<section class=\"scenario\""), 3);
    ck_assert_uint_eq(count(html, "data-verdict=\"pass\""), 1);
    ck_assert_uint_eq(count(html, "data-verdict=\"fail\""), 1);
    ck_assert_uint_eq(count(html, "data-verdict=\"error\""), 1);
    ck_assert_uint_eq(count(html, "<svg class=\"timeline\""), rs[0].runs + rs[1].runs);
    ck_assert_uint_eq(count(html, "marker marker-fault"), 2);
    ck_assert_uint_eq(count(html, "marker marker-kill"), 1);
    ck_assert_uint_eq(count(html, "marker marker-restart"), 1);
    ck_assert_uint_ge(count(html, "class=\"ev ev-save\""), 3);
    ck_assert_uint_eq(count(html, "<pre class=\"diff\">"), 2);
    ck_assert_uint_eq(count(html, "<pre class=\"replay\">"), 1);
    ck_assert_ptr_nonnull(strstr(html, "expected outcome job-fails"));
    ck_assert_ptr_nonnull(strstr(html, "fails &lt;&amp;&gt; here"));
    ck_assert_ptr_null(strstr(html, "fails <&> here"));
    /* Self-contained: nothing fetched. */
    ck_assert_ptr_null(strstr(html, "src=\"http"));
    ck_assert_ptr_null(strstr(html, "href=\"http"));
    ck_assert_ptr_null(strstr(html, "<link"));
    free(html);
    free_results(rs, 3);
    ck_assert_int_eq(ckh_report_html(NULL, NULL, NULL, 0), CKH_EINVAL);
}
END_TEST

START_TEST(test_escape)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ckh_report_html_escape(f, "a<b>&\"c'\x01\xff\n\xc3\xa9");
    ckh_report_html_escape(f, NULL);
    fclose(f);
    ck_assert_str_eq(buf, "a&lt;b&gt;&amp;&quot;c&#39;\xef\xbf\xbd\xef\xbf\xbd\n\xc3\xa9");
    free(buf);
}
END_TEST

START_TEST(test_timeline_transport)
{
    struct ckh_report_timeline *t = NULL, *back = NULL;
    ck_assert_int_eq(ckh_report_timeline_new(2, 1, &t), 0);
    snprintf(t->nodes[0], sizeof t->nodes[0], "a");
    snprintf(t->nodes[1], sizeof t->nodes[1], "b");
    t->runs[0].end_ns = 100;
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, 1, CKH_TL_SAVE, 10, 20, "save epoch 1"), 0);
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, 2, CKH_TL_SAVE, 10, 20, "x"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_timeline_add(t, 1, 0, CKH_TL_SAVE, 20, 10, "x"), CKH_EINVAL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_report_timeline_write(f, t), 0);
    ck_assert_int_eq(ckh_report_timeline_write(f, NULL), 0);
    fclose(f);
    f = fmemopen(buf, len, "rb");
    ck_assert_int_eq(ckh_report_timeline_read(f, &back), 0);
    ck_assert_ptr_nonnull(back);
    ck_assert_uint_eq(back->n, 1);
    ck_assert_str_eq(back->nodes[1], "b");
    ck_assert_str_eq(back->ev[0].label, "save epoch 1");
    ck_assert_uint_eq(back->runs[0].end_ns, 100);
    ckh_report_timeline_free(back);
    back = (void *)1;
    ck_assert_int_eq(ckh_report_timeline_read(f, &back), 0);
    ck_assert_ptr_null(back);
    ck_assert_int_eq(ckh_report_timeline_read(f, &back), CKH_ETRUNCATED);
    fclose(f);
    free(buf);
    ckh_report_timeline_free(t);
    ck_assert_str_eq(ckh_tl_kind_name(CKH_TL_FAULT), "fault");
    ck_assert_str_eq(ckh_tl_kind_name(CKH_TL__COUNT), "?");
}
END_TEST

/* ---- a real browser ---- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, got, m);
    fclose(m);
    fclose(f);
    return buf;
}

START_TEST(test_renders_in_chromium)
{
    const char *src = getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    char script[1024];
    snprintf(script, sizeof script, "%s/tests/html/render.sh", src);
    if (system("command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1") != 0)
        CKH_SKIP("chromium is not installed (apt-get install -y chromium; scripts/test.sh installs it)");
    if (getenv("CKH_VALGRIND"))
        CKH_SKIP("under valgrind (the browser is not ckh's code)");
    struct ckh_report_result rs[3];
    make_results(rs);
    char dir[] = "/tmp/ckh-test-html-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char page[256], dom[256], cmd[2048];
    snprintf(page, sizeof page, "%s/report.html", dir);
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    FILE *f = fopen(page, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ckh_report_html(f, NULL, rs, 3), 0);
    fclose(f);
    snprintf(cmd, sizeof cmd, "sh '%s' '%s' '%s' 2>'%s/stderr.txt'", script, page, dom, dir);
    int rc = system(cmd);
    char *out = slurp(dom);
    ck_assert_msg(rc == 0 && out, "chromium failed (%d), see %s/stderr.txt", rc, dir);
    ck_assert_msg(strstr(out, "id=\"ckh-error\"") == NULL, "script error in the page: %s", out);
    ck_assert_msg(strstr(out, "id=\"ckh-ok\"") != NULL, "the page's script did not run");
    char expect[64];
    snprintf(expect, sizeof expect, "data-timelines=\"%u\"", rs[0].runs + rs[1].runs);
    ck_assert_ptr_nonnull(strstr(out, expect));
    ck_assert_ptr_nonnull(strstr(out, "data-failures=\"2\""));
    ck_assert_ptr_nonnull(strstr(out, "id=\"summary\""));
    ck_assert_uint_eq(count(out, "marker marker-fault"), 2);
    ck_assert_ptr_nonnull(strstr(out, "class=\"replay\""));
    ck_assert_ptr_nonnull(strstr(out, "class=\"diff\""));
    /* Console errors chromium logged while loading. */
    char errpath[300];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    char *err = slurp(errpath);
    if (err)
        ck_assert_msg(strstr(err, "Uncaught") == NULL, "console error: %s", err);
    free(err);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free_results(rs, 3);
}
END_TEST

static Suite *html_suite(void)
{
    Suite *s = suite_create("html");
    TCase *tc = tcase_create("html");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_timeline_from_run);
    tcase_add_test(tc, test_page_elements);
    tcase_add_test(tc, test_escape);
    tcase_add_test(tc, test_timeline_transport);
    suite_add_tcase(s, tc);
    /* Needs chromium: a CTest entry of its own (test_html_chromium). */
    tc = tcase_create("chromium");
    tcase_set_timeout(tc, 120);
    tcase_set_tags(tc, "chromium");
    tcase_add_test(tc, test_renders_in_chromium);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(html_suite());
}
