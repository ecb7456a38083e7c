/* The cause shrinking compares (harness/search/shrink.c, "the cause of a
 * failure" in its header comment), checked rule by rule on the file's own
 * helpers: this test compiles shrink.c into itself (its public functions
 * then come from here, not from the harness library), so the masking of
 * an oracle's detail, the sorted set of damaging fault kinds, and the cause
 * per oracle are checked on the exact text each rule is about, including
 * the texts that fill or overflow the buffers: full runs (test_shrink)
 * reach only the messages the simulator happens to write.
 *
 * Nothing here runs a scenario; nothing is about time. */
/* The buffers this test gives shrink.c's helpers are too small on purpose;
 * an optimising build inlines them and sees the truncation coming. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "search/shrink.c"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <check.h>

#include "support/skip.h"

static char masked[1024];

static const char *m(const char *text, bool cut, bool singular, size_t n)
{
    ck_assert_uint_le(n, sizeof masked);
    memset(masked, 'x', sizeof masked);
    mask(text, cut, singular, masked, n);
    return masked;
}

/* Every word with a digit becomes '#', a list of them one '#', asides in
 * parentheses go (with the space before them), a repeated "; " clause is
 * written once, only the first line counts, and cut stops at the first
 * ':'. */
START_TEST(test_mask_rules)
{
    ck_assert_str_eq(m("rank_0, rank_1 hung at step 12 (run 2): waiting on 3", true, false, 256),
                     "# hung at step #");
    ck_assert_str_eq(m("rank_0, rank_1 hung at step 12 (run 2): waiting on 3", false, false, 256),
                     "# hung at step #: waiting on #");
    ck_assert_str_eq(m("digest a1b2 (expected ff00) differs; digest a1b2 (expected ff00) differs", false,
                       false, 256),
                     "digest # differs");
    ck_assert_str_eq(m("first line 7\nsecond line 8", false, false, 256), "first line #");
    ck_assert_str_eq(m(NULL, false, false, 256), "");
    ck_assert_str_eq(m("", true, true, 256), "");
    /* nested and unbalanced parentheses: the aside ends where it closes */
    ck_assert_str_eq(m("a (b (c) d) e", false, false, 256), "a e");
    ck_assert_str_eq(m(") stray close", false, false, 256), " stray close"); /* only trailing spaces go */
    ck_assert_str_eq(m("unclosed (aside to the end", false, false, 256), "unclosed");
    ck_assert_str_eq(m("end (aside)", false, false, 256), "end");
    ck_assert_str_eq(m("kept (aside)x", false, false, 256), "kept x");
    /* trailing spaces go */
    ck_assert_str_eq(m("spaces   ", false, false, 256), "spaces");
}
END_TEST

/* singular: a word right after a '#' compares without its plural 's', so
 * "3 runs" and "1 run" are one clause; a word not after a number, a
 * one-letter "s" and a word after punctuation keep theirs. */
START_TEST(test_mask_singular)
{
    ck_assert_str_eq(m("3 runs; 1 run; 3 runs", false, true, 256), "# run");
    ck_assert_str_eq(m("3 runs; 1 run; 3 runs", false, false, 256), "# runs; # run");
    ck_assert_str_eq(m("2 s left", false, true, 256), "# s left");
    ck_assert_str_eq(m("tests pass 4 tests", false, true, 256), "tests pass # test");
    ck_assert_str_eq(m("4, tests", false, true, 256), "#, tests");
    ck_assert_str_eq(m("4 - tests", false, true, 256), "# - tests");
}
END_TEST

/* Texts longer than the buffers are cut, never overrun: the working copy
 * holds 1023 bytes; the output what n allows, ending on a whole clause
 * when the next one does not fit. */
START_TEST(test_mask_truncates)
{
    char lng[3000];
    memset(lng, 'w', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    const char *r = m(lng, false, false, sizeof masked);
    ck_assert_uint_eq(strlen(r), 0); /* one word longer than the copy: nothing of it */

    for (size_t i = 0; i + 1 < sizeof lng; i++)
        lng[i] = i % 2 ? ' ' : 'a';
    r = m(lng, false, false, sizeof masked);
    ck_assert_uint_gt(strlen(r), 1000);
    ck_assert_uint_lt(strlen(r), sizeof masked);

    ck_assert_str_eq(m("abcdefgh", false, false, 4), "abc");
    ck_assert_str_eq(m("one; two; three", false, false, 9), "one; two");
    ck_assert_str_eq(m("one; two; three", false, false, 10), "one; two;");
    ck_assert_str_eq(m("one; two", false, false, 1), "");
}
END_TEST

/* The damaging fault kinds: a sorted set without repeats, cut when full. */
START_TEST(test_set_add_and_append)
{
    char set[96] = "";
    set_add(set, sizeof set, "kill");
    set_add(set, sizeof set, "corrupt");
    set_add(set, sizeof set, "kill");
    set_add(set, sizeof set, "bit-flip");
    set_add(set, sizeof set, "zero-range");
    set_add(set, sizeof set, "disk-full");
    ck_assert_str_eq(set, "bit-flip, corrupt, disk-full, kill, zero-range");
    set_add(set, sizeof set, "corrupt");
    ck_assert_str_eq(set, "bit-flip, corrupt, disk-full, kill, zero-range");

    char small[12] = "";
    set_add(small, sizeof small, "stale-latest");
    ck_assert_str_eq(small, "stale-lates");

    char buf[8] = "";
    size_t used = 0;
    append(buf, sizeof buf, &used, "abc");
    ck_assert_str_eq(buf, "abc");
    ck_assert_uint_eq(used, 3);
    append(buf, sizeof buf, &used, "defgh");
    ck_assert_str_eq(buf, "abc, de");
    ck_assert_uint_eq(used, 7);
    append(buf, sizeof buf, &used, "more"); /* full: nothing */
    ck_assert_str_eq(buf, "abc, de");
    ck_assert_uint_eq(used, 7);
}
END_TEST

static void cause(const char *oracle, const char *message, const struct run_facts *f, struct cause *c)
{
    struct ckh_report_result rr;
    memset(&rr, 0, sizeof rr);
    rr.failed_oracle = (char *)oracle;
    rr.message = (char *)message;
    cause_of(&rr, f, c);
}

/* The cause per oracle, and when two causes are the same. */
START_TEST(test_cause_per_oracle)
{
    struct run_facts f;
    struct cause c, d;

    memset(&f, 0, sizeof f);
    f.seen = true;
    f.any_landed = true;
    snprintf(f.divergence, sizeof f.divergence, "optim, rng");
    cause("resume-equivalence", "step 12 differs", &f, &c);
    ck_assert_str_eq(c.oracle, "resume-equivalence");
    ck_assert_str_eq(c.what, "first divergence: optim, rng");
    ck_assert_str_eq(c.key, c.what);
    ck_assert(!c.bare);

    /* without a divergence, the masked detail */
    f.divergence[0] = '\0';
    cause("resume-equivalence", "step 12 (run 2) differs in 3 tensors", &f, &c);
    ck_assert_str_eq(c.what, "step # differs in # tensors");
    ck_assert_str_eq(c.key, "step # differ in # tensor"); /* the aside gone, "differs" follows a '#' */

    /* no-corrupt-load: the damage, or "no fault", and what differs */
    cause("no-corrupt-load", "loaded a damaged checkpoint", &f, &c);
    ck_assert_str_eq(c.what, "damaged by no fault, the job completed with another state");
    snprintf(f.damage, sizeof f.damage, "bit-flip");
    snprintf(f.divergence, sizeof f.divergence, "weights");
    cause("no-corrupt-load", "loaded a damaged checkpoint", &f, &c);
    ck_assert_str_eq(c.what,
                     "damaged by bit-flip, the job completed with another state; first divergence: weights");

    /* outcome: how it ended, with the run's own report masked */
    snprintf(f.ended, sizeof f.ended, "expected completed, got failed");
    cause("outcome", "node 1 exited with status 3 (signal none)", &f, &c);
    ck_assert_str_eq(c.what, "expected completed, got failed");
    f.ended_report = true;
    cause("outcome", "node 1 exited with status 3 (signal none)", &f, &c);
    ck_assert_str_eq(c.what, "expected completed, got failed: node # exited with status #");
    ck_assert_str_eq(c.key, c.what);

    /* determinism: the oracle alone, whether or not the hook ran */
    f.seen = false;
    cause("determinism", "trace 1 differs at byte 40", &f, &c);
    ck_assert_str_eq(c.what, "the same seed gave different traces");

    /* unseen runs: every oracle's cause is its masked detail */
    cause("outcome", "expected completed, got failed (3 runs)", &f, &c);
    ck_assert_str_eq(c.what, "expected completed, got failed");
    cause("resume-equivalence", "step 4 differs", &f, &c);
    ck_assert_str_eq(c.what, "step # differs");

    /* hang and liveness: up to the first ':' */
    cause("hang", "ranks 0, 1 hung: waiting on allreduce 7", &f, &c);
    ck_assert_str_eq(c.what, "ranks # hung");
    cause("liveness", "no progress for 5 steps: stuck", &f, &c);
    ck_assert_str_eq(c.what, "no progress for # steps");
    ck_assert_str_eq(c.key, "no progress for # step");

    /* no failed oracle, no message */
    cause(NULL, NULL, &f, &c);
    ck_assert_str_eq(c.oracle, "");
    ck_assert_str_eq(c.what, "");

    /* the same cause: same oracle and key; a bare target (no fault fired)
     * only matches a bare candidate */
    memset(&f, 0, sizeof f);
    f.seen = true;
    cause("values", "line 3: expected total 1, got 145", &f, &c);
    ck_assert(c.bare);
    f.any_landed = true;
    cause("values", "line 9: expected total 2, got 7", &f, &d);
    ck_assert(!d.bare);
    ck_assert_str_eq(c.key, d.key);
    ck_assert(!same_cause(&c, &d));
    ck_assert(same_cause(&d, &c));
    ck_assert(same_cause(&c, &c));
    cause("hang", "line 9: expected total 2, got 7", &f, &d);
    ck_assert(!same_cause(&d, &c));
    cause("values", "line 9: expected mean 2, got 7", &f, &d);
    ck_assert(!same_cause(&d, &c));

    ck_assert(glob_free("/data/ckpt/x"));
    ck_assert(!glob_free("/data/ckpt/*"));
    ck_assert(!glob_free("/data/ckpt/x?"));
    ck_assert(!glob_free("/data/[ab]"));
    ck_assert(!glob_free("/data/a\\b"));
}
END_TEST

static Suite *cause_suite(void)
{
    Suite *s = suite_create("shrink_cause");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_mask_rules);
    tcase_add_test(tc, test_mask_singular);
    tcase_add_test(tc, test_mask_truncates);
    tcase_add_test(tc, test_set_add_and_append);
    tcase_add_test(tc, test_cause_per_oracle);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(cause_suite());
}
