/* Edge cases of what `ckh validate-backend` makes of its cases' outcomes
 * (harness/search/validate.c): the replay command of each kind of case
 * and option, the report results (a pass, a failure with several findings
 * and one without an identified step, an internal error), the HTML page
 * with a path and findings that need escaping, and the refusals of the
 * entry point; and the fuzzer's coverage table (harness/search/fuzz.c).
 *
 * The cases are built by hand: nothing runs a backend here. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "exec/workloads.h"
#include "search/fuzz.h"
#include "search/validate.h"

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "'%s' lacks '%s'", (s), (sub))

static void add_vuln(struct ckh_validate_case *c, enum ckh_vuln_kind k, const char *symptom,
                     const char *state, const char *step, uint64_t index)
{
    struct ckh_vuln *v = realloc(c->res.vulns, (c->res.nvulns + 1) * sizeof *v);
    ck_assert_ptr_nonnull(v);
    c->res.vulns = v;
    v = &v[c->res.nvulns++];
    memset(v, 0, sizeof *v);
    v->kind = k;
    snprintf(v->symptom, sizeof v->symptom, "%s", symptom);
    snprintf(v->state, sizeof v->state, "%s", state);
    snprintf(v->step, sizeof v->step, "%s", step);
    v->state_index = index;
}

/* Three cases: a pass, a failure with two findings, an internal error. */
static struct ckh_validate_case *three_cases(void)
{
    struct ckh_validate_case *c = calloc(3, sizeof *c);
    ck_assert_ptr_nonnull(c);
    snprintf(c[0].name, sizeof c[0].name, "crash:new-epoch");
    c[0].res.stats.states = 40;
    c[0].res.stats.states_checked = 12;
    snprintf(c[1].name, sizeof c[1].name, "crash:two-ranks");
    add_vuln(&c[1], CKH_VULN_NO_DIR_FSYNC, "epoch 2 lost <after> save", "rename \"a\" & b", "fsync of /d",
             7);
    add_vuln(&c[1], CKH_VULN_NOT_DURABLE, "lost", "state 9", "", 9);
    snprintf(c[2].name, sizeof c[2].name, "fault:EIO");
    c[2].rc = CKH_ETIMEOUT;
    return c;
}

START_TEST(test_replay_commands)
{
    char buf[512];
    struct ckh_validate_options o = {0};
    ckh_validate_replay_cmd(&o, "load", NULL, buf, sizeof buf);
    ck_assert_str_eq(buf, "ckh validate-backend LIB.so --case load --timeout 10");
    o = (struct ckh_validate_options){.lib = "./lib.so", .timeout_s = 3, .model = CKH_CRASH_EXT4_ORDERED,
                                      .sector_bytes = 4096, .ranks = 4};
    ckh_validate_replay_cmd(&o, "load", NULL, buf, sizeof buf);
    ck_assert_str_eq(buf, "ckh validate-backend ./lib.so --case load --timeout 3");
    struct ckh_vuln v = {.state_index = 17};
    ckh_validate_replay_cmd(&o, "crash:node-local", &v, buf, sizeof buf);
    ck_assert_str_eq(buf, "ckh validate-backend ./lib.so --case crash:node-local --state 17 --ranks 4 "
                          "--model ext4-ordered --sector 4096");
    v.state_index = 0; /* a finding of the whole case: no state */
    o = (struct ckh_validate_options){0};
    ckh_validate_replay_cmd(&o, "contract:epochs", &v, buf, sizeof buf);
    ck_assert_str_eq(buf, "ckh validate-backend LIB.so --case contract:epochs --model posix-weak --sector 512");
    ck_assert_str_eq(ckh_validate_model_name(CKH_CRASH_POSIX_WEAK), "posix-weak");
    ck_assert_ptr_nonnull(ckh_validate_case_name(0));
    ck_assert_ptr_null(ckh_validate_case_name(1000));
}
END_TEST

START_TEST(test_results_of_each_kind)
{
    struct ckh_validate_case *c = three_cases();
    struct ckh_validate_options o = {.lib = "/x/libb.so"};
    struct ckh_report_result *rs = NULL;
    ck_assert_int_eq(ckh_validate_results(c, 3, &o, &rs), 0);
    ck_assert_int_eq(rs[0].verdict, CKH_VERDICT_PASS);
    ck_assert_uint_eq(rs[0].noracles, 1);
    ck_assert_str_eq(rs[0].oracles[0].name, "all-states");
    ck_assert_str_eq(rs[0].oracles[0].detail, "40 states, 12 distinct checked");
    ck_assert_str_eq(rs[0].file, "/x/libb.so");
    ck_assert_uint_eq(rs[0].runs, 12);

    ck_assert_int_eq(rs[1].verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(rs[1].failed_oracle, "no-dir-fsync");
    ck_assert_uint_eq(rs[1].noracles, 2);
    ck_assert_str_eq(rs[1].message, "epoch 2 lost <after> save; crash state: rename \"a\" & b; responsible step: "
                                    "fsync of /d; replay: ckh validate-backend /x/libb.so --case crash:two-ranks "
                                    "--state 7 --model posix-weak --sector 512");
    HAS(rs[1].oracles[1].detail, "responsible step: (not identified); replay: ");
    HAS(rs[1].oracles[1].detail, "--state 9");
    ck_assert_str_eq(rs[1].replay, "ckh validate-backend /x/libb.so --case crash:two-ranks --state 7 --model "
                                   "posix-weak --sector 512");

    ck_assert_int_eq(rs[2].verdict, CKH_VERDICT_ERROR);
    HAS(rs[2].message, "internal error: ");
    ck_assert_uint_eq(rs[2].noracles, 0);
    for (int i = 0; i < 3; i++)
        ckh_report_result_clear(&rs[i]);
    free(rs);

    /* no library named: "backend"; no cases at all */
    o.lib = NULL;
    ck_assert_int_eq(ckh_validate_results(c, 1, &o, &rs), 0);
    ck_assert_str_eq(rs[0].file, "backend");
    ckh_report_result_clear(&rs[0]);
    free(rs);
    ck_assert_int_eq(ckh_validate_results(NULL, 0, &o, &rs), 0);
    free(rs);
    ckh_validate_free(c, 3);
    ckh_validate_free(NULL, 0);
}
END_TEST

START_TEST(test_html_page)
{
    struct ckh_validate_case *c = three_cases();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ckh_validate_html(f, "/a<b>/lib&\".so", c, 3), 0);
    ck_assert_int_eq(fclose(f), 0);
    HAS(buf, "<h1>ckh validate-backend /a&lt;b&gt;/lib&amp;&quot;.so</h1>");
    HAS(buf, "<td class=\"pass\">PASS</td><td>12 / 40</td>");
    HAS(buf, "<td class=\"fail\">FAIL</td>");
    HAS(buf, "<td class=\"err\">ERROR</td>");
    HAS(buf, "<b>no-dir-fsync</b>: epoch 2 lost &lt;after&gt; save<br><i>crash state</i>: "
             "<code>rename &quot;a&quot; &amp; b</code>");
    HAS(buf, "<i>responsible step</i>: <code></code>");
    free(buf);
    f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_validate_html(f, NULL, NULL, 0), 0);
    ck_assert_int_eq(fclose(f), 0);
    HAS(buf, "<h1>ckh validate-backend </h1>");
    free(buf);
    ck_assert_int_eq(ckh_validate_html(NULL, "x", c, 3), CKH_EINVAL);
    ckh_validate_free(c, 3);

    /* the entry point's refusals */
    struct ckh_validate_options o = {0};
    struct ckh_validate_case *out = (void *)1;
    size_t n = 9;
    ck_assert_int_eq(ckh_validate_backend(NULL, &o, &out, &n), CKH_EINVAL);
    static const struct ckh_backend_ops nameless = {.version = 1};
    ck_assert_int_eq(ckh_validate_backend(&nameless, &o, &out, &n), CKH_EINVAL);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_fuzz_coverage_table)
{
    struct ckh_fuzz_coverage a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    b.hits[1][CKH_FUZZ_PH_SAVE] = 3;
    ckh_fuzz_coverage_add(&a, &b);
    ckh_fuzz_coverage_add(&a, &b);
    ckh_fuzz_coverage_add(NULL, &b);
    ckh_fuzz_coverage_add(&a, NULL);
    ck_assert_uint_eq(a.hits[1][CKH_FUZZ_PH_SAVE], 6);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ckh_fuzz_coverage_print(f, &a, false);
    ckh_fuzz_coverage_print(NULL, &a, false);
    ckh_fuzz_coverage_print(f, NULL, false);
    ck_assert_int_eq(fclose(f), 0);
    /* the header and the one row that fired */
    size_t lines = 0;
    for (char *p = buf; *p; p++)
        lines += *p == '\n';
    ck_assert_uint_eq(lines, 2);
    free(buf);
    f = open_memstream(&buf, &len);
    ckh_fuzz_coverage_print(f, &a, true);
    ck_assert_int_eq(fclose(f), 0);
    lines = 0;
    for (char *p = buf; *p; p++)
        lines += *p == '\n';
    ck_assert_uint_eq(lines, 1 + CKH_SCN_ACT__COUNT); /* every kind, fired or not */
    free(buf);
}
END_TEST

/* A defect without a workload fuzzes the first workload built for defect
 * switches; a workload without them gets no defects line; the collector
 * of fired faults refuses what it cannot read. */
START_TEST(test_fuzz_generate_defects)
{
    char *text = NULL;
    struct ckh_fuzz_config c = {.defect = "rng-not-saved"};
    for (uint64_t seed = 1; seed <= 5 && ckh_workloads_find("ddp-train"); seed++) {
        ck_assert_int_eq(ckh_fuzz_generate(seed, &c, &text), 0);
        HAS(text, "workload: ddp-train");
        HAS(text, "defects: [rng-not-saved]");
        free(text);
    }
    c.workload = "seed-pipeline";
    ck_assert_int_eq(ckh_fuzz_generate(1, &c, &text), 0);
    HAS(text, "seed-pipeline");
    ck_assert_ptr_null(strstr(text, "defects:"));
    free(text);
    c.defect = "";
    c.workload = NULL;
    ck_assert_int_eq(ckh_fuzz_generate(2, &c, &text), 0);
    ck_assert_ptr_null(strstr(text, "defects:"));
    free(text);
    struct ckh_fuzz_fired *v = (void *)1;
    size_t n = 3;
    ck_assert_int_eq(ckh_fuzz_fired_collect(NULL, NULL, &v, &n), CKH_EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("search_edges");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_replay_commands);
    tcase_add_test(tc, test_results_of_each_kind);
    tcase_add_test(tc, test_html_page);
    tcase_add_test(tc, test_fuzz_coverage_table);
    tcase_add_test(tc, test_fuzz_generate_defects);
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
