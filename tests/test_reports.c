/* Tests for reports/: result bookkeeping, JUnit XML, JSON and terminal
 * output. The XML and JSON are checked for well-formedness by small
 * self-contained checkers below (a strict subset of XML 1.0 and RFC 8259)
 * and for their exact content. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "report.h"

/* ---- a strict, small XML well-formedness checker ---- */

struct xml {
    const char *p;      /* cursor */
    const char *err;    /* first problem, NULL when fine */
    char stack[32][64]; /* open element names */
    int depth;          /* open elements */
    int elements;       /* elements seen */
};

static bool xml_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == ':' || c == '.';
}

static bool xml_name(struct xml *x, char *out, size_t size)
{
    size_t n = 0;
    while (xml_name_char(*x->p) && n + 1 < size)
        out[n++] = *x->p++;
    out[n] = '\0';
    return n > 0;
}

/* Character data up to `stop`: entities must be known, no raw '<', no
 * control characters but tab/newline/CR, valid UTF-8 (ASCII here suffices:
 * the renderer writes non-ASCII only from valid input). */
static bool xml_chars(struct xml *x, char stop)
{
    while (*x->p && *x->p != stop) {
        unsigned char c = (unsigned char)*x->p;
        if (c == '<' && stop == '"')
            return false;
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return false;
        if (c == '&') {
            static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            bool ok = false;
            for (size_t i = 0; i < 5 && !ok; i++)
                if (!strncmp(x->p, ents[i], strlen(ents[i]))) {
                    x->p += strlen(ents[i]);
                    ok = true;
                }
            if (!ok && x->p[1] == '#') {
                const char *q = x->p + 2;
                while (*q >= '0' && *q <= '9')
                    q++;
                if (q > x->p + 2 && *q == ';') {
                    long v = strtol(x->p + 2, NULL, 10);
                    if (v != 9 && v != 10 && v != 13 && v < 0x20)
                        return false;
                    x->p = q + 1;
                    ok = true;
                }
            }
            if (!ok)
                return false;
            continue;
        }
        x->p++;
    }
    return true;
}

static const char *xml_check(const char *doc, int *elements)
{
    struct xml x = {.p = doc};
    const char *decl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    if (strncmp(x.p, decl, strlen(decl)))
        return "no XML declaration";
    x.p += strlen(decl);
    bool root_done = false;
    while (*x.p) {
        if (*x.p != '<') {
            if (x.depth == 0 && *x.p != '\n' && *x.p != ' ')
                return "text outside the root";
            if (!xml_chars(&x, '<'))
                return "bad character data";
            continue;
        }
        x.p++;
        char name[64];
        if (*x.p == '/') {
            x.p++;
            if (!xml_name(&x, name, sizeof(name)) || *x.p != '>')
                return "bad end tag";
            x.p++;
            if (x.depth == 0 || strcmp(x.stack[x.depth - 1], name))
                return "mismatched end tag";
            if (--x.depth == 0)
                root_done = true;
            continue;
        }
        if (root_done)
            return "second root element";
        if (!xml_name(&x, name, sizeof(name)))
            return "bad start tag";
        char seen[16][64];
        int nseen = 0;
        for (;;) {
            while (*x.p == ' ')
                x.p++;
            if (*x.p == '>' || (*x.p == '/' && x.p[1] == '>'))
                break;
            char an[64];
            if (!xml_name(&x, an, sizeof(an)) || *x.p != '=' || x.p[1] != '"')
                return "bad attribute";
            for (int i = 0; i < nseen; i++)
                if (!strcmp(seen[i], an))
                    return "duplicate attribute";
            if (nseen < 16)
                snprintf(seen[nseen++], 64, "%s", an);
            x.p += 2;
            if (!xml_chars(&x, '"') || *x.p != '"')
                return "bad attribute value";
            x.p++;
        }
        x.elements++;
        if (*x.p == '/') {
            x.p += 2;
            if (x.depth == 0)
                root_done = true;
            continue;
        }
        x.p++;
        if (x.depth == 32)
            return "too deep";
        snprintf(x.stack[x.depth++], 64, "%s", name);
    }
    if (x.depth || !root_done)
        return "unclosed element";
    *elements = x.elements;
    return NULL;
}

/* ---- a strict, small JSON checker (RFC 8259) ---- */

static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static const char *js_value(const char *p, int depth);

static const char *js_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    while (*p != '"') {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20)
            return NULL;
        if (c == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
                        return NULL;
                p += 5;
                continue;
            }
            if (!*p || !strchr("\"\\/bfnrt", *p))
                return NULL;
            p++;
            continue;
        }
        if (c >= 0x80) { /* a valid UTF-8 sequence */
            int n = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
            if (n < 0)
                return NULL;
            for (int i = 1; i <= n; i++)
                if (((unsigned char)p[i] & 0xc0) != 0x80)
                    return NULL;
            p += n + 1;
            continue;
        }
        p++;
    }
    return p + 1;
}

static const char *js_number(const char *p)
{
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static const char *js_value(const char *p, int depth)
{
    if (depth > 64)
        return NULL;
    p = js_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        bool obj = *p == '{';
        p = js_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                p = js_string(js_ws(p));
                if (!p)
                    return NULL;
                p = js_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            p = js_value(p, depth + 1);
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p == close)
                return p + 1;
            if (*p++ != ',')
                return NULL;
        }
    }
    if (*p == '"')
        return js_string(p);
    if (!strncmp(p, "true", 4))
        return p + 4;
    if (!strncmp(p, "false", 5))
        return p + 5;
    if (!strncmp(p, "null", 4))
        return p + 4;
    return js_number(p);
}

static bool json_ok(const char *doc)
{
    const char *end = js_value(doc, 0);
    return end && *js_ws(end) == '\0';
}

/* ---- fixtures ---- */

static struct ckh_report_result rs[3];

static void make_results(void)
{
    for (int i = 0; i < 3; i++)
        ckh_report_result_init(&rs[i]);
    /* A pass. */
    ckh_report_set(&rs[0].name, "seed-basic");
    ckh_report_set(&rs[0].file, "scenarios/seed/basic.yaml");
    rs[0].seed = 1;
    rs[0].runs = 1;
    rs[0].virtual_ns = 1500000000ull;
    rs[0].wall_ms = 12;
    ckh_report_set(&rs[0].replay, "ckh run scenarios/seed/basic.yaml --seed 1");
    ckh_report_add_oracle(&rs[0], "totals", true, NULL);
    /* A failure whose text needs escaping everywhere. */
    ckh_report_set(&rs[1].name, "kill<mid>&\"quoted\"");
    ckh_report_set(&rs[1].file, "./scenarios/minidb/kill.yaml");
    rs[1].verdict = CKH_VERDICT_FAIL;
    ckh_report_set(&rs[1].failed_oracle, "totals");
    ckh_report_set(&rs[1].message, "expected total 145, got 144 <&>\n\x01 bell\x07 bad\xff utf8 \xc3\xa9 'q'\ttab");
    rs[1].first_divergent_step = 12;
    rs[1].seed = 18446744073709551615ull;
    rs[1].runs = 2;
    rs[1].restarts = 1;
    rs[1].wall_ms = 1234;
    ckh_report_set(&rs[1].replay, "ckh run ./scenarios/minidb/kill.yaml --seed %llu",
                   18446744073709551615ull);
    ckh_report_add_oracle(&rs[1], "latest", true, "resolves to epoch 3");
    ckh_report_add_oracle(&rs[1], "totals", false, "expected 145 \"a\" got 144\\");
    /* An error (bad input): no oracle, no replay. */
    ckh_report_set(&rs[2].name, "broken");
    ckh_report_set(&rs[2].file, "broken.yaml");
    rs[2].verdict = CKH_VERDICT_ERROR;
    ckh_report_set(&rs[2].message, "broken.yaml:3:3: unknown key 'epocs' in 'job'; did you "
                                   "mean 'epochs'?");
}

static void free_results(void)
{
    for (int i = 0; i < 3; i++)
        ckh_report_result_clear(&rs[i]);
}

static char *render(int (*fn)(FILE *, const struct ckh_report_meta *,
                              const struct ckh_report_result *, size_t),
                    const struct ckh_report_meta *meta, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fn(f, meta, rs, n), 0);
    fclose(f);
    return buf;
}

/* ---- tests ---- */

START_TEST(test_result_helpers)
{
    struct ckh_report_result r;
    ckh_report_result_init(&r);
    ck_assert_int_eq(r.first_divergent_step, -1);
    ck_assert_int_eq(ckh_report_set(&r.name, "a-%d", 7), 0);
    ck_assert_str_eq(r.name, "a-7");
    ck_assert_int_eq(ckh_report_set(&r.name, "b"), 0); /* replaces, no leak */
    ck_assert_str_eq(r.name, "b");
    ck_assert_int_eq(ckh_report_set(NULL, "x"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_add_oracle(&r, "o1", true, NULL), 0);
    ck_assert_int_eq(ckh_report_add_oracle(&r, "o2", false, "d"), 0);
    ck_assert_int_eq(ckh_report_add_oracle(&r, NULL, false, "d"), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_add_oracle(NULL, "x", false, "d"), CKH_EINVAL);
    ck_assert_uint_eq(r.noracles, 2);
    ck_assert_str_eq(r.oracles[1].detail, "d");
    ck_assert_ptr_null(r.oracles[0].detail);
    ckh_report_result_clear(&r);
    ck_assert_ptr_null(r.name);
    ck_assert_uint_eq(r.noracles, 0);
    ckh_report_result_clear(NULL);
    ck_assert_str_eq(ckh_verdict_name(CKH_VERDICT_ERROR), "error");
    ck_assert_str_eq(ckh_verdict_name((enum ckh_verdict)9), "?");
    ck_assert_str_eq(ckh_report_state_name(CKH_REPORT_NOT_STARTED), "not-started");
    ck_assert_str_eq(ckh_report_state_name((enum ckh_report_state)9), "?");

    make_results();
    struct ckh_report_summary s;
    ckh_report_summarize(rs, 3, &s);
    ck_assert_uint_eq(s.total, 3);
    ck_assert_uint_eq(s.passed, 1);
    ck_assert_uint_eq(s.failed, 1);
    ck_assert_uint_eq(s.errors, 1);
    ck_assert_uint_eq(s.not_run, 0);
    ck_assert_uint_eq(s.wall_ms, 1246);
    free_results();
}
END_TEST

START_TEST(test_classname)
{
    char b[64];
    ckh_report_junit_classname("scenarios/minidb/kill.yaml", b, sizeof(b));
    ck_assert_str_eq(b, "scenarios.minidb");
    ckh_report_junit_classname("./scenarios/x.yaml", b, sizeof(b));
    ck_assert_str_eq(b, "scenarios");
    ckh_report_junit_classname("/abs/dir/x.yaml", b, sizeof(b));
    ck_assert_str_eq(b, "abs.dir");
    ckh_report_junit_classname("x.yaml", b, sizeof(b));
    ck_assert_str_eq(b, "ckh");
    ckh_report_junit_classname(NULL, b, sizeof(b));
    ck_assert_str_eq(b, "ckh");
    ckh_report_junit_classname("/x.yaml", b, sizeof(b));
    ck_assert_str_eq(b, "ckh");
    ckh_report_junit_classname("aaaa/bbbb/x.yaml", b, 6);
    ck_assert_str_eq(b, "aaaa.");
}
END_TEST

START_TEST(test_junit)
{
    make_results();
    struct ckh_report_meta meta = {.suite = "ci<1>", .timestamp = "2024-01-02T03:04:05",
                                   .command = "ckh run \"scenarios\" --junit a&b.xml"};
    char *x = render(ckh_report_junit, &meta, 3);
    int elements = 0;
    const char *problem = xml_check(x, &elements);
    ck_assert_msg(problem == NULL, "%s in:\n%s", problem, x);
    /* testsuites, testsuite, properties, property, 3 testcases, 3
     * system-out, 1 failure, 1 error */
    ck_assert_int_eq(elements, 12);
    ck_assert_ptr_nonnull(strstr(
        x, "<testsuites name=\"ci&lt;1&gt;\" tests=\"3\" failures=\"1\" errors=\"1\" "
           "skipped=\"0\" time=\"1.246\">\n"
           "  <testsuite name=\"ci&lt;1&gt;\" tests=\"3\" failures=\"1\" errors=\"1\" "
           "skipped=\"0\" time=\"1.246\" timestamp=\"2024-01-02T03:04:05\">\n"
           "    <properties>\n"
           "      <property name=\"command\" value=\"ckh run &quot;scenarios&quot; --junit "
           "a&amp;b.xml\"/>\n"
           "    </properties>\n"));
    ck_assert_ptr_nonnull(strstr(
        x, "<testcase name=\"seed-basic\" classname=\"scenarios.seed\" "
           "file=\"scenarios/seed/basic.yaml\" time=\"0.012\">\n"
           "      <system-out>seed: 1\nruns: 1\nrestarts: 0\nvirtual time: 1.500s\n"
           "oracle totals: pass\n</system-out>\n    </testcase>\n"));
    ck_assert_ptr_nonnull(strstr(
        x, "<testcase name=\"kill&lt;mid&gt;&amp;&quot;quoted&quot;\" "
           "classname=\"scenarios.minidb\" file=\"./scenarios/minidb/kill.yaml\" "
           "time=\"1.234\">\n"
           "      <failure message=\"totals: expected total 145, got 144 &lt;&amp;&gt;\" "
           "type=\"totals\">oracle: totals\n"
           "expected total 145, got 144 &lt;&amp;&gt;\n\\x01 bell\\x07 bad\\xff utf8 \xc3\xa9 "
           "&apos;q&apos;\ttab\n"
           "first divergent step: 12\n"
           "seed: 18446744073709551615\n"
           "replay: ckh run ./scenarios/minidb/kill.yaml --seed 18446744073709551615\n"
           "</failure>\n"));
    ck_assert_ptr_nonnull(strstr(x, "oracle totals: FAIL: expected 145 &quot;a&quot; got 144\\\n"));
    ck_assert_ptr_nonnull(strstr(
        x, "<error message=\"broken.yaml:3:3: unknown key &apos;epocs&apos; in &apos;job&apos;; "
           "did you mean &apos;epochs&apos;?\" type=\"error\">"));
    free(x);

    /* No results, no meta: still a valid document. */
    x = render(ckh_report_junit, NULL, 0);
    ck_assert_ptr_null(xml_check(x, &elements));
    ck_assert_int_eq(elements, 2);
    ck_assert_ptr_nonnull(strstr(x, "<testsuite name=\"ckh\" tests=\"0\""));
    free(x);
    ck_assert_int_eq(ckh_report_junit(NULL, NULL, rs, 3), CKH_EINVAL);
    ck_assert_int_eq(ckh_report_junit(stdout, NULL, NULL, 3), CKH_EINVAL);
    free_results();
}
END_TEST

/* Newlines in attributes are character references, so a multi-line
 * message survives attribute normalisation. */
START_TEST(test_junit_attr_newline)
{
    ckh_report_result_init(&rs[0]);
    ckh_report_set(&rs[0].name, "a\nb\tc\rd");
    rs[0].verdict = CKH_VERDICT_ERROR;
    char *x = render(ckh_report_junit, NULL, 1);
    int elements;
    ck_assert_ptr_null(xml_check(x, &elements));
    ck_assert_ptr_nonnull(strstr(x, "name=\"a&#10;b&#9;c&#13;d\" classname=\"ckh\""));
    ck_assert_ptr_nonnull(strstr(x, "<error message=\"scenario could not run\" type=\"error\">"));
    free(x);
    ckh_report_result_clear(&rs[0]);
}
END_TEST

START_TEST(test_json)
{
    make_results();
    struct ckh_report_meta meta = {.suite = "nightly", .hostname = "h\"1"};
    char *j = render(ckh_report_json, &meta, 3);
    ck_assert_msg(json_ok(j), "invalid JSON:\n%s", j);
    ck_assert_ptr_nonnull(strstr(
        j, "{\n  \"version\": 1,\n  \"tool\": \"ckh\",\n  \"suite\": \"nightly\",\n"
           "  \"timestamp\": null,\n  \"hostname\": \"h\\\"1\",\n  \"command\": null,\n"
           "  \"interrupted\": false,\n  \"signal\": null,\n"
           "  \"summary\": {\"total\": 3, \"passed\": 1, \"failed\": 1, \"errors\": 1, "
           "\"not_run\": 0, \"wall_ms\": 1246, \"virtual_ns\": 1500000000},\n"
           "  \"scenarios\": [\n"));
    ck_assert_ptr_nonnull(strstr(
        j, "      \"name\": \"kill<mid>&\\\"quoted\\\"\",\n"
           "      \"file\": \"./scenarios/minidb/kill.yaml\",\n"
           "      \"status\": \"finished\",\n"
           "      \"verdict\": \"fail\",\n"
           "      \"failed_oracle\": \"totals\",\n"
           "      \"message\": \"expected total 145, got 144 <&>\\n\\u0001 bell\\u0007 "
           "bad\\ufffd utf8 \xc3\xa9 'q'\\ttab\",\n"
           "      \"first_divergent_step\": 12,\n"
           "      \"seed\": 18446744073709551615,\n"
           "      \"replay\": \"ckh run ./scenarios/minidb/kill.yaml --seed "
           "18446744073709551615\",\n"
           "      \"virtual_ns\": 0,\n"
           "      \"wall_ms\": 1234,\n"
           "      \"runs\": 2,\n"
           "      \"restarts\": 1,\n"
           "      \"plugins\": [],\n"
           "      \"oracles\": [\n"
           "        {\"name\": \"latest\", \"passed\": true, \"detail\": \"resolves to epoch "
           "3\"},\n"
           "        {\"name\": \"totals\", \"passed\": false, \"detail\": \"expected 145 "
           "\\\"a\\\" got 144\\\\\"}\n"
           "      ]\n"
           "    },\n"));
    ck_assert_ptr_nonnull(strstr(j, "\"first_divergent_step\": null,"));
    ck_assert_ptr_nonnull(strstr(j, "      \"oracles\": []\n    }\n  ]\n}\n"));
    free(j);
    j = render(ckh_report_json, NULL, 0);
    ck_assert(json_ok(j));
    ck_assert_ptr_nonnull(strstr(j, "\"scenarios\": []\n}\n"));
    free(j);
    ck_assert_int_eq(ckh_report_json(NULL, NULL, rs, 1), CKH_EINVAL);
    free_results();
}
END_TEST

/* The checkers themselves must reject broken documents, or the tests
 * above prove nothing. */
START_TEST(test_checkers_reject)
{
    int e;
    const char *d = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    char buf[256];
    static const char *const bad_xml[] = {"<a><b></a></b>", "<a x=\"1\" x=\"2\"/>", "<a>&</a>",
                                          "<a>\x01</a>",    "<a x=\"<\"/>",        "<a>",
                                          "<a/><b/>",       "<a>&#1;</a>"};
    for (size_t i = 0; i < sizeof(bad_xml) / sizeof(bad_xml[0]); i++) {
        snprintf(buf, sizeof(buf), "%s%s", d, bad_xml[i]);
        ck_assert_msg(xml_check(buf, &e) != NULL, "accepted %s", bad_xml[i]);
    }
    snprintf(buf, sizeof(buf), "%s<a x=\"&#10;\">t&amp;<b/></a>\n", d);
    ck_assert_ptr_null(xml_check(buf, &e));
    static const char *const bad_json[] = {"{", "{\"a\":}", "[1,]", "\"\x01\"", "\"\xff\"",
                                           "01", "{\"a\" 1}", "[1] x", "\"\\x\""};
    for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++)
        ck_assert_msg(!json_ok(bad_json[i]), "accepted %s", bad_json[i]);
    ck_assert(json_ok("{\"a\": [1, -2.5, true, null, \"\\u00e9\"]}"));
}
END_TEST

START_TEST(test_json_string)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ckh_report_json_string(f, NULL);
    fputc(' ', f);
    ckh_report_json_string(f, "a\"b\\c\x1f\x7f\xe2\x82\xac\xed\xa0\x80\xc0\xaf");
    fclose(f);
    /* U+20AC kept; a surrogate and an overlong form become U+FFFD per byte. */
    ck_assert_str_eq(buf, "null \"a\\\"b\\\\c\\u001f\\u007f\xe2\x82\xac\\ufffd\\ufffd\\ufffd"
                          "\\ufffd\\ufffd\"");
    free(buf);
}
END_TEST

START_TEST(test_term)
{
    make_results();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int i = 0; i < 3; i++)
        ckh_report_term_result(f, &rs[i], false);
    ckh_report_term_summary(f, rs, 3, false);
    fclose(f);
    ck_assert_str_eq(
        buf,
        "PASS  seed-basic  (1 run, 1.500s virtual, 12 ms)\n"
        "FAIL  kill<mid>&\"quoted\": totals: expected total 145, got 144 <&>\n"
        "      ? bell? bad\xff utf8 \xc3\xa9 'q'\ttab\n"
        "      first divergent step: 12\n"
        "      replay: ckh run ./scenarios/minidb/kill.yaml --seed 18446744073709551615\n"
        "ERROR broken: broken.yaml:3:3: unknown key 'epocs' in 'job'; did you mean 'epochs'?\n"
        "\nFailures:\n"
        "FAIL  kill<mid>&\"quoted\": totals: expected total 145, got 144 <&>\n"
        "      ? bell? bad\xff utf8 \xc3\xa9 'q'\ttab\n"
        "      first divergent step: 12\n"
        "      replay: ckh run ./scenarios/minidb/kill.yaml --seed 18446744073709551615\n"
        "ERROR broken: broken.yaml:3:3: unknown key 'epocs' in 'job'; did you mean 'epochs'?\n"
        "\n3 scenarios: 1 passed, 1 failed, 1 error\n");
    free(buf);

    /* Colour only adds escape sequences around the verdict words. */
    buf = NULL;
    f = open_memstream(&buf, &len);
    ckh_report_term_result(f, &rs[0], true);
    ckh_report_term_summary(f, rs, 1, true);
    fclose(f);
    ck_assert_str_eq(buf, "\033[32mPASS\033[0m  seed-basic  (1 run, 1.500s virtual, 12 ms)\n"
                          "\n1 scenario: \033[32m1 passed\033[0m, 0 failed, 0 errors\n");
    free(buf);
    free_results();
}
END_TEST

/* A pass that detected what its scenario expected says what after its
 * figures (on one line: a newline in the message is indented as in FAIL). */
START_TEST(test_term_pass_detected)
{
    struct ckh_report_result r;
    ckh_report_result_init(&r);
    ckh_report_set(&r.name, "bug");
    ckh_report_set(&r.message, "detected as expected by resume-equivalence: step 5: rng");
    r.verdict = CKH_VERDICT_PASS;
    r.runs = 2;
    r.wall_ms = 3;
    r.virtual_ns = 5000000000ull;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ckh_report_term_result(f, &r, false);
    fclose(f);
    ck_assert_str_eq(buf, "PASS  bug  (2 runs, 5.000s virtual, 3 ms): detected as expected by "
                          "resume-equivalence: step 5: rng\n");
    free(buf);
    ckh_report_result_clear(&r);
}
END_TEST

/* A real program's run has no virtual time: its PASS line leaves it out. */
START_TEST(test_term_real_program)
{
    struct ckh_report_result r;
    ckh_report_result_init(&r);
    ckh_report_set(&r.name, "torch-atomic");
    r.verdict = CKH_VERDICT_PASS;
    r.runs = 2;
    r.wall_ms = 5755;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ckh_report_term_result(f, &r, false);
    fclose(f);
    ck_assert_str_eq(buf, "PASS  torch-atomic  (2 runs, 5755 ms)\n");
    free(buf);
    ckh_report_result_clear(&r);
}
END_TEST

/* The plugin libraries of a job, in every renderer: the file loaded and
 * its id on (or under) the verdict, the files it shadowed as warnings. */
START_TEST(test_plugins_rendered)
{
    struct ckh_report_result r;
    ckh_report_result_init(&r);
    ckh_report_set(&r.name, "loop");
    r.runs = 2;
    r.virtual_ns = 1000;
    ck_assert_int_eq(ckh_report_add_plugin(&r, "workload", "libloop.so", "/s/libloop.so", "build-id 0a1b", NULL), 0);
    ck_assert_int_eq(ckh_report_add_plugin(&r, "saver", "libsv.so", "/s/libsv.so", "content-hash 00ff",
                                           "/p/a&b/libsv.so\n/q/\"x\"/libsv.so"),
                     0);
    ck_assert_int_eq(ckh_report_add_plugin(&r, "saver", NULL, "/x", "id", NULL), CKH_EINVAL);
    ck_assert_uint_eq(r.nplugins, 2);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ckh_report_term_result(f, &r, false);
    fclose(f);
    ck_assert_str_eq(buf, "PASS  loop  (2 runs, 1.0us virtual, 0 ms)\n"
                          "      plugin workload libloop.so: /s/libloop.so (build-id 0a1b)\n"
                          "      plugin saver libsv.so: /s/libsv.so (content-hash 00ff)\n"
                          "      warning: libsv.so also names /p/a&b/libsv.so, shadowed (the first file on the "
                          "search path is taken)\n"
                          "      warning: libsv.so also names /q/\"x\"/libsv.so, shadowed (the first file on the "
                          "search path is taken)\n");
    free(buf);

    rs[0] = r; /* render() reads rs[] */
    char *j = render(ckh_report_json, NULL, 1);
    ck_assert_msg(json_ok(j), "invalid JSON:\n%s", j);
    ck_assert_ptr_nonnull(strstr(j, "{\"role\": \"workload\", \"name\": \"libloop.so\", \"path\": \"/s/libloop.so\", "
                                    "\"id\": \"build-id 0a1b\", \"shadowed\": []}"));
    ck_assert_ptr_nonnull(strstr(j, "\"shadowed\": [\"/p/a&b/libsv.so\", \"/q/\\\"x\\\"/libsv.so\"]}"));
    free(j);
    char *x = render(ckh_report_junit, NULL, 1);
    int elements;
    ck_assert_ptr_null(xml_check(x, &elements));
    ck_assert_ptr_nonnull(strstr(x, "<property name=\"plugin.workload\" value=\"libloop.so: /s/libloop.so (build-id "
                                    "0a1b)\"/>"));
    ck_assert_ptr_nonnull(strstr(x, "<property name=\"plugin.saver.shadowed\" value=\"/p/a&amp;b/libsv.so\"/>"));
    ck_assert_ptr_nonnull(strstr(x, "<property name=\"plugin.saver.shadowed\" value=\"/q/&quot;x&quot;/libsv.so\"/>"));
    free(x);
    ckh_report_result_clear(&rs[0]);
}
END_TEST

START_TEST(test_progress)
{
    char line[256];
    struct ckh_report_progress p = {.done = 0, .total = 40};
    ckh_report_progress_format(&p, 80, line, sizeof(line));
    ck_assert_str_eq(line, "[.......................................]  0/40  0 failed  "
                           "0 errors  ~--:-- left");
    ck_assert_uint_eq(strlen(line), 80);
    p = (struct ckh_report_progress){.done = 10, .total = 40, .failed = 2, .errors = 1,
                                     .elapsed_ms = 7000};
    ckh_report_progress_format(&p, 80, line, sizeof(line));
    ck_assert_str_eq(line, "[##########..............................]  10/40  2 failed  "
                           "1 error  ~0:21 left");
    ck_assert_uint_eq(strlen(line), 80);
    /* A narrow width keeps a bar of at least 10 cells. */
    p = (struct ckh_report_progress){.done = 1, .total = 2, .elapsed_ms = 4000000};
    ckh_report_progress_format(&p, 40, line, sizeof(line));
    ck_assert_str_eq(line, "[#####.....]  1/2  0 failed  0 errors  ~1:06:40 left");
    p = (struct ckh_report_progress){.done = 5, .total = 5};
    ckh_report_progress_format(&p, 60, line, sizeof(line));
    ck_assert_str_eq(line, "[#####################]  5/5  0 failed  0 errors  ~0:00 left");

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    p = (struct ckh_report_progress){.done = 3, .total = 4, .failed = 1, .elapsed_ms = 300};
    ckh_report_progress_print(f, &p, false);
    ckh_report_progress_print(f, &p, true);
    ckh_report_progress_clear(f, true);
    ckh_report_progress_clear(f, false);
    fclose(f);
    ck_assert_str_eq(buf, "progress: 3/4 done, 1 failed, 0 errors\n"
                          "\r[##############################...........]  3/4  "
                          "1 failed  0 errors  ~0:01 left\033[K\r\033[K");
    free(buf);
}
END_TEST

/* An interrupted run's reports: the finished scenarios as they are, the
 * others not run (running then, or not started), each format saying so;
 * the summary counts them apart from the verdicts. */
START_TEST(test_interrupted)
{
    make_results();
    /* rs[1] was running and rs[2] had not started when the signal came:
     * whatever verdict they carry is not theirs. */
    rs[1].state = CKH_REPORT_INTERRUPTED;
    ckh_report_set(&rs[1].message, "not run: ckh was interrupted by signal 2 (Interrupt) while it ran");
    rs[2].state = CKH_REPORT_NOT_STARTED;
    ckh_report_set(&rs[2].message, "not run: ckh was interrupted by signal 2 (Interrupt) before it started");
    struct ckh_report_summary sum;
    ckh_report_summarize(rs, 3, &sum);
    ck_assert_uint_eq(sum.total, 3);
    ck_assert_uint_eq(sum.passed, 1);
    ck_assert_uint_eq(sum.failed + sum.errors, 0);
    ck_assert_uint_eq(sum.not_run, 2);
    struct ckh_report_meta meta = {.interrupted_by = 2};

    char *j = render(ckh_report_json, &meta, 3);
    ck_assert_msg(json_ok(j), "invalid JSON:\n%s", j);
    ck_assert_ptr_nonnull(strstr(j, "  \"interrupted\": true,\n  \"signal\": 2,\n"
                                    "  \"summary\": {\"total\": 3, \"passed\": 1, \"failed\": 0, "
                                    "\"errors\": 0, \"not_run\": 2,"));
    ck_assert_ptr_nonnull(strstr(j, "\"status\": \"finished\",\n      \"verdict\": \"pass\""));
    ck_assert_ptr_nonnull(strstr(j, "\"status\": \"interrupted\",\n      \"verdict\": \"not-run\""));
    ck_assert_ptr_nonnull(strstr(j, "\"status\": \"not-started\",\n      \"verdict\": \"not-run\""));
    ck_assert_ptr_nonnull(strstr(j, "interrupted by signal 2 (Interrupt) before it started"));
    free(j);

    char *x = render(ckh_report_junit, &meta, 3);
    int elements = 0;
    const char *problem = xml_check(x, &elements);
    ck_assert_msg(problem == NULL, "%s in:\n%s", problem, x);
    /* testsuites, testsuite, properties, property, 3 testcases, 1
     * system-out (the finished one), 2 skipped */
    ck_assert_int_eq(elements, 10);
    ck_assert_ptr_nonnull(strstr(x, "tests=\"3\" failures=\"0\" errors=\"0\" skipped=\"2\""));
    ck_assert_ptr_nonnull(strstr(x, "<property name=\"interrupted\" value=\"signal 2 (Interrupt)\"/>"));
    ck_assert_ptr_nonnull(strstr(x, "<skipped message=\"not run: ckh was interrupted by signal 2 "
                                    "(Interrupt) while it ran\"/>\n    </testcase>"));
    ck_assert_ptr_null(strstr(x, "<failure"));
    ck_assert_ptr_null(strstr(x, "<error"));
    free(x);

    char *h = render(ckh_report_html, &meta, 3);
    ck_assert_ptr_nonnull(strstr(h, "<b class=\"n-notrun\">2</b> not run"));
    ck_assert_ptr_nonnull(strstr(h, "<div id=\"interrupted\">interrupted by signal 2 (Interrupt): 2 of 3 "
                                    "scenarios did not finish</div>"));
    size_t notrun = 0;
    for (const char *p = h; (p = strstr(p, "data-verdict=\"not-run\"")) != NULL; p++)
        notrun++;
    ck_assert_uint_eq(notrun, 2);
    ck_assert_ptr_null(strstr(h, "data-verdict=\"fail\""));
    free(h);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ckh_report_term_result(f, &rs[2], false);
    ckh_report_term_summary(f, rs, 3, false);
    fclose(f);
    ck_assert_str_eq(buf, "NOT RUN broken: not run: ckh was interrupted by signal 2 (Interrupt) before it "
                          "started\n"
                          "\n3 scenarios: 1 passed, 0 failed, 0 errors\n2 not run (interrupted)\n");
    free(buf);

    /* Without the signal (a caller that has not-run results only): no
     * interrupted property, no banner, still consistent counts. */
    x = render(ckh_report_junit, NULL, 3);
    ck_assert_ptr_null(xml_check(x, &elements));
    ck_assert_ptr_null(strstr(x, "<properties>"));
    ck_assert_ptr_nonnull(strstr(x, "skipped=\"2\""));
    free(x);
    free_results();
}
END_TEST

static Suite *reports_suite(void)
{
    Suite *s = suite_create("reports");
    TCase *tc = tcase_create("render");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_result_helpers);
    tcase_add_test(tc, test_classname);
    tcase_add_test(tc, test_junit);
    tcase_add_test(tc, test_junit_attr_newline);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_json_string);
    tcase_add_test(tc, test_checkers_reject);
    tcase_add_test(tc, test_term);
    tcase_add_test(tc, test_term_real_program);
    tcase_add_test(tc, test_term_pass_detected);
    tcase_add_test(tc, test_plugins_rendered);
    tcase_add_test(tc, test_progress);
    tcase_add_test(tc, test_interrupted);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reports_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
