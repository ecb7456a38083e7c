/* Tests for the test support's skips (tests/support/skip.c): the exit
 * status of ckh_test_run for suites whose cases skip, pass and fail, run
 * in a child each (with Check forking and with CK_FORK=no, as valgrind
 * runs them): every case skipped is 77, a failure beside skips is 1, a
 * skip beside passing cases is 0, and nothing is recorded for a case that
 * does not skip. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/skip.h"

START_TEST(inner_skips)
{
    CKH_SKIP("case %d: nothing to run here", _i);
}
END_TEST

START_TEST(inner_passes)
{
    ck_assert_int_eq(1 + 1, 2);
}
END_TEST

START_TEST(inner_fails)
{
    ck_assert_msg(0, "a broken case");
}
END_TEST

/* The exit status of ckh_test_run on a suite of nskip skipping cases (a
 * loop), npass passing and nfail failing ones, in a child; fork: CK_FORK. */
static int run_inner(int nskip, int npass, int nfail, int fork_cases)
{
    pid_t p = fork();
    ck_assert_int_ge(p, 0);
    if (p == 0) {
        setenv("CK_FORK", fork_cases ? "yes" : "no", 1);
        unsetenv("CK_INCLUDE_TAGS");
        unsetenv("CK_EXCLUDE_TAGS");
        Suite *s = suite_create("inner");
        TCase *tc = tcase_create("inner");
        if (nskip)
            tcase_add_loop_test(tc, inner_skips, 0, nskip);
        for (int i = 0; i < npass; i++)
            tcase_add_test(tc, inner_passes);
        for (int i = 0; i < nfail; i++)
            tcase_add_test(tc, inner_fails);
        suite_add_tcase(s, tc);
        _exit(ckh_test_run(s));
    }
    int st = 0;
    ck_assert_int_eq(waitpid(p, &st, 0), p);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

START_TEST(test_exit_statuses)
{
    int f = _i; /* 0: CK_FORK=no, 1: Check forks each case */
    ck_assert_int_eq(run_inner(3, 0, 0, f), CKH_TEST_SKIPPED);
    ck_assert_int_eq(run_inner(1, 0, 0, f), CKH_TEST_SKIPPED);
    ck_assert_int_eq(run_inner(2, 0, 1, f), 1);
    ck_assert_int_eq(run_inner(2, 2, 0, f), 0);
    ck_assert_int_eq(run_inner(0, 2, 0, f), 0);
    ck_assert_int_eq(run_inner(0, 0, 1, f), 1);
    ck_assert_int_eq(run_inner(0, 0, 0, f), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("skip");
    TCase *tc = tcase_create("skip");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_exit_statuses, 0, 2);
    suite_add_tcase(s, tc);
    return ckh_test_run(s);
}
