/* Tests for the one fault matcher (platform/fault_match.c), rule by rule
 * of the specification at the top of ckh/fault_rule.h (M1 to M7): the
 * matcher the simulator, the real platform and command jobs all call. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/fault_rule.h"
#include "ckh/rng.h"

/* A pwrite of 100 bytes by node 1 to /ckpt/a.bin in phase save, epoch 3,
 * step 30. */
static struct ckh_op write_op(void)
{
    return (struct ckh_op){.kind = CKH_OP_PWRITE, .node = 1, .path = "/ckpt/a.bin", .len = 100,
                           .phase = "save", .epoch = 3, .step = 30};
}

static struct ckh_fault_rule kill_rule(void)
{
    struct ckh_fault_rule r;
    ckh_fault_rule_init(&r);
    r.action.kind = CKH_FAULT_KILL_BEFORE;
    return r;
}

/* Feeds op to the rules in order, as every mode does; returns the index
 * of the rule that fired, -1 when none. */
static int eval(const struct ckh_fault_rule *r, struct ckh_fault_state *s, size_t n, const struct ckh_op *op,
                uint64_t now_ns)
{
    int fired = -1;
    for (size_t i = 0; i < n; i++)
        if (ckh_fault_rule_match(&r[i], &s[i], op, now_ns, fired >= 0))
            fired = (int)i;
    return fired;
}

/* M1: each selector, set alone, selects exactly the ops it names. */
START_TEST(test_selectors)
{
    const struct ckh_op op = write_op();
    struct ckh_fault_rule r = kill_rule();
    ck_assert(ckh_fault_rule_selects(&r, &op, 0)); /* every selector "any" */
    r.node = 1;
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    r.node = 0;
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.kind = CKH_OP_PWRITE;
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    r.kind = CKH_OP_WRITE; /* write and pwrite are two kinds to the matcher */
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.path_glob = "/ckpt/*.bin";
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    r.path_glob = "/ckpt/*.tmp";
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.phase = "save";
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    r.phase = "load";
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.epoch = 3;
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    r.epoch = 2;
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.step = 30;
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    r.step = 31;
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.at_time_ns = 500;
    ck_assert(!ckh_fault_rule_selects(&r, &op, 499));
    ck_assert(ckh_fault_rule_selects(&r, &op, 500));
}
END_TEST

/* M1: an op without a path never matches a glob, one without a phase
 * never matches a phase. */
START_TEST(test_missing_fields)
{
    struct ckh_op op = {.kind = CKH_OP_BARRIER, .node = 0, .epoch = -1, .step = -1};
    struct ckh_fault_rule r = kill_rule();
    r.path_glob = "*";
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.phase = "save";
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
    r = kill_rule();
    r.epoch = 0; /* the node's epoch is unknown (-1) */
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0));
}
END_TEST

/* M2: allocations are seen by ALLOC rules only, with any action. */
START_TEST(test_alloc)
{
    struct ckh_op op = {.kind = CKH_OP_ALLOC, .node = 0, .len = 64, .epoch = -1, .step = -1};
    struct ckh_fault_rule r = kill_rule();
    ck_assert(!ckh_fault_rule_selects(&r, &op, 0)); /* kind -1 */
    r.kind = CKH_OP_ALLOC;
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    r.action.kind = CKH_FAULT_SHORT_WRITE; /* an action that fits no allocation still fails it */
    ck_assert(ckh_fault_rule_selects(&r, &op, 0));
    struct ckh_op w = write_op();
    ck_assert(!ckh_fault_rule_selects(&r, &w, 0));
}
END_TEST

/* M3: actions that fit some ops only select only those. */
START_TEST(test_action_fits)
{
    static const struct {
        enum ckh_fault_kind act;
        enum ckh_op_kind op;
        bool selects;
    } t[] = {
        {CKH_FAULT_MISMATCH, CKH_OP_BARRIER, true},    {CKH_FAULT_MISMATCH, CKH_OP_BROADCAST, true},
        {CKH_FAULT_MISMATCH, CKH_OP_ALLREDUCE, true},  {CKH_FAULT_MISMATCH, CKH_OP_ALLGATHER, true},
        {CKH_FAULT_MISMATCH, CKH_OP_SEND, false},      {CKH_FAULT_MISMATCH, CKH_OP_PWRITE, false},
        {CKH_FAULT_FSYNC_LOST, CKH_OP_FSYNC, true},    {CKH_FAULT_FSYNC_LOST, CKH_OP_FDATASYNC, true},
        {CKH_FAULT_FSYNC_LOST, CKH_OP_FSYNC_DIR, false}, {CKH_FAULT_FSYNC_LOST, CKH_OP_WRITE, false},
        {CKH_FAULT_SHORT_WRITE, CKH_OP_WRITE, true},   {CKH_FAULT_SHORT_WRITE, CKH_OP_PWRITE, true},
        {CKH_FAULT_SHORT_WRITE, CKH_OP_READ, false},   {CKH_FAULT_KILL_MID, CKH_OP_RENAME, true},
        {CKH_FAULT_ERRNO, CKH_OP_STAT, true},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct ckh_fault_rule r = kill_rule();
        r.action.kind = t[i].act;
        struct ckh_op op = {.kind = t[i].op, .node = 0, .epoch = -1, .step = -1};
        ck_assert_msg(ckh_fault_rule_selects(&r, &op, 0) == t[i].selects, "case %zu", i);
    }
    /* An op a rule does not select is not counted: the rule's first fsync
     * is still its first match. */
    struct ckh_fault_rule r = kill_rule();
    r.action.kind = CKH_FAULT_FSYNC_LOST;
    struct ckh_fault_state s;
    ckh_fault_state_init(&s, 1, 0);
    struct ckh_op w = write_op(), f = {.kind = CKH_OP_FSYNC, .node = 1, .epoch = -1, .step = -1};
    ck_assert(!ckh_fault_rule_match(&r, &s, &w, 0, false));
    ck_assert_uint_eq(s.matches, 0);
    ck_assert(ckh_fault_rule_match(&r, &s, &f, 0, false));
    ck_assert_uint_eq(s.matches, 1);
}
END_TEST

/* M4 and M6: the nth match fires, once; nth 0 means 1; repeat fires on
 * every later match too. */
START_TEST(test_nth_and_repeat)
{
    const struct ckh_op op = write_op();
    struct ckh_fault_rule r = kill_rule();
    struct ckh_fault_state s;
    r.nth = 3;
    ckh_fault_state_init(&s, 7, 0);
    bool got[6];
    for (int i = 0; i < 6; i++)
        got[i] = ckh_fault_rule_match(&r, &s, &op, 0, false);
    ck_assert(!got[0] && !got[1] && got[2] && !got[3] && !got[4] && !got[5]);
    ck_assert(s.spent);
    ck_assert_uint_eq(s.matches, 3); /* a spent rule counts nothing more */
    ck_assert_uint_eq(s.fired, 1);

    r.nth = 0;
    ckh_fault_state_init(&s, 7, 0);
    ck_assert(ckh_fault_rule_match(&r, &s, &op, 0, false));

    r.nth = 2;
    r.repeat = true;
    ckh_fault_state_init(&s, 7, 0);
    for (int i = 0; i < 6; i++)
        got[i] = ckh_fault_rule_match(&r, &s, &op, 0, false);
    ck_assert(!got[0] && got[1] && got[2] && got[3] && got[4] && got[5]);
    ck_assert(!s.spent);
    ck_assert_uint_eq(s.fired, 5);
}
END_TEST

/* M4 and M5: the first due rule takes the op; both count it; a later
 * rule whose nth match was taken fires on its next match instead. */
START_TEST(test_first_rule_wins_and_defers)
{
    const struct ckh_op op = write_op();
    struct ckh_fault_rule r[2] = {kill_rule(), kill_rule()};
    struct ckh_fault_state s[2];
    r[1].action.kind = CKH_FAULT_ERRNO;
    r[1].action.err = EIO;
    ckh_fault_state_init(&s[0], 1, 0);
    ckh_fault_state_init(&s[1], 1, 1);
    ck_assert_int_eq(eval(r, s, 2, &op, 0), 0);
    ck_assert_uint_eq(s[1].matches, 1);
    ck_assert(s[1].deferred && !s[1].spent);
    ck_assert_int_eq(eval(r, s, 2, &op, 0), 1); /* rule 0 is spent: rule 1's deferred firing */
    ck_assert(s[1].spent && !s[1].deferred);
    ck_assert_int_eq(eval(r, s, 2, &op, 0), -1);

    /* A repeating rule whose match is taken simply waits for the next. */
    r[1].repeat = true;
    ckh_fault_state_init(&s[0], 1, 0);
    ckh_fault_state_init(&s[1], 1, 1);
    ck_assert_int_eq(eval(r, s, 2, &op, 0), 0);
    ck_assert(!s[1].deferred);
    ck_assert_int_eq(eval(r, s, 2, &op, 0), 1);
    ck_assert_int_eq(eval(r, s, 2, &op, 0), 1);
}
END_TEST

/* M4: probability draws come from ckh_seed_derive(seed, "fault/INDEX"),
 * one per match, so a rule's firings depend on its seed and index only. */
START_TEST(test_probability_stream)
{
    const struct ckh_op op = write_op();
    struct ckh_fault_rule r = kill_rule();
    r.probability = 0.3;
    r.repeat = true;
    struct ckh_fault_state s;
    struct ckh_rng ref;
    ckh_fault_state_init(&s, 42, 5);
    ckh_rng_seed(&ref, ckh_seed_derive(42, "fault/5"));
    int fired = 0;
    for (int i = 0; i < 200; i++) {
        bool want = ckh_rng_unit(&ref) < 0.3;
        bool got = ckh_fault_rule_match(&r, &s, &op, 0, false);
        ck_assert_msg(got == want, "match %d", i);
        fired += got;
    }
    ck_assert_uint_eq(s.fired, (uint64_t)fired);
    ck_assert_int_gt(fired, 30);
    ck_assert_int_lt(fired, 90);
    /* Without repeat it fires once, on its first due draw. */
    r.repeat = false;
    ckh_fault_state_init(&s, 42, 5);
    ckh_rng_seed(&ref, ckh_seed_derive(42, "fault/5"));
    int first = 0;
    while (!(ckh_rng_unit(&ref) < 0.3))
        first++;
    for (int i = 0; i < 50; i++)
        ck_assert(ckh_fault_rule_match(&r, &s, &op, 0, false) == (i == first));
}
END_TEST

/* M7: what a kill in the middle of a write and a short write keep. */
START_TEST(test_keep_bytes)
{
    struct ckh_fault_rule r = kill_rule();
    r.action.kind = CKH_FAULT_KILL_MID;
    r.keep_fraction = 0.4;
    struct ckh_fault_action a = ckh_fault_rule_action(&r, 1000);
    ck_assert_uint_eq(a.keep_bytes, 400);
    r.action.keep_bytes = 7; /* bytes win over the fraction */
    ck_assert_uint_eq(ckh_fault_rule_action(&r, 1000).keep_bytes, 7);
    a = ckh_fault_rule_action(&r, 5);
    ckh_fault_action_cap(&a, 5);
    ck_assert_uint_eq(a.keep_bytes, 5);

    r = kill_rule();
    r.action.kind = CKH_FAULT_SHORT_WRITE;
    r.keep_fraction = 0.001;
    ck_assert_uint_eq(ckh_fault_rule_action(&r, 10).keep_bytes, 1); /* at least one byte */
    ck_assert_uint_eq(ckh_fault_rule_action(&r, 0).keep_bytes, 0);
    r.keep_fraction = 0;
    ck_assert_uint_eq(ckh_fault_rule_action(&r, 10).keep_bytes, 0); /* asked for 0 bytes */
    r.action.kind = CKH_FAULT_KILL_MID;
    r.keep_fraction = 0.001;
    ck_assert_uint_eq(ckh_fault_rule_action(&r, 10).keep_bytes, 0); /* a kill keeps none then */

    struct ckh_fault_action d = {.kind = CKH_FAULT_DELAY, .keep_bytes = 99};
    ckh_fault_action_cap(&d, 5); /* other actions keep their fields */
    ck_assert_uint_eq(d.keep_bytes, 99);
}
END_TEST

/* What can be armed, with the messages the simulator reports. */
START_TEST(test_rule_check)
{
    char msg[160];
    struct ckh_fault_rule r = kill_rule();
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), 0);
    r.action.kind = CKH_FAULT_NONE;
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "fault rule: bad action kind 0");
    r = kill_rule();
    r.action.kind = CKH_FAULT_CALL;
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "fault rule: CALL needs a callback");
    r = kill_rule();
    r.action.kind = CKH_FAULT_ERRNO;
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "fault rule: ERRNO needs a positive errno, got 0");
    r = kill_rule();
    r.kind = CKH_OP__COUNT;
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), CKH_EINVAL);
    r = kill_rule();
    r.node = -2;
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), CKH_EINVAL);
    r = kill_rule();
    r.probability = 1.5;
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "fault rule: probability must be in [0, 1]");
    r = kill_rule();
    r.keep_fraction = -0.1;
    ck_assert_int_eq(ckh_fault_rule_check(&r, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(ckh_fault_action_name(CKH_FAULT_SHORT_WRITE), "short_write");
    ck_assert_str_eq(ckh_fault_action_name(CKH_FAULT__COUNT), "?");
}
END_TEST

static Suite *fault_match_suite(void)
{
    Suite *s = suite_create("fault_match");
    TCase *tc = tcase_create("matcher");
    tcase_add_test(tc, test_selectors);
    tcase_add_test(tc, test_missing_fields);
    tcase_add_test(tc, test_alloc);
    tcase_add_test(tc, test_action_fits);
    tcase_add_test(tc, test_nth_and_repeat);
    tcase_add_test(tc, test_first_rule_wins_and_defers);
    tcase_add_test(tc, test_probability_stream);
    tcase_add_test(tc, test_keep_bytes);
    tcase_add_test(tc, test_rule_check);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fault_match_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
