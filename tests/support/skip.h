/* Test support: skipped cases, told apart from passed ones.
 *
 * A Check case that cannot run here (no FUSE, no MPI, no chromium, root
 * where the case needs an ordinary user...) ends with CKH_SKIP("why", ...):
 * it prints "SKIPPED <case>: why" to stderr, records the case and returns
 * from the test function. ckh_test_run runs the suite and gives main's exit
 * status:
 *   1                   a case failed (a skip never hides a failure);
 *   CKH_TEST_SKIPPED    no case failed and every case that ran was skipped:
 *                       CTest shows the test as skipped (CMakeLists.txt sets
 *                       SKIP_RETURN_CODE 77 on every test binary) and its
 *                       output names each case and why;
 *   0                   otherwise; cases skipped beside ones that ran are
 *                       listed again at the end ("N of M cases skipped").
 * So that a skip is not hidden among passing cases, the cases that need
 * something a machine may lack carry a Check tag (tcase_set_tags) and
 * CMakeLists.txt gives each such tag its own CTest entry (CK_INCLUDE_TAGS),
 * the rest of the binary another one (CK_EXCLUDE_TAGS): test_command_fuse
 * beside test_command, for example.
 *
 * The record is a file (CKH_TEST_SKIPS in the environment, made by
 * ckh_test_run), so it works when Check forks each case (its default) and
 * with CK_FORK=no (valgrind), and from any process a case starts. */
#ifndef CKH_TEST_SKIP_H
#define CKH_TEST_SKIP_H

#include <check.h>

/* CTest's SKIP_RETURN_CODE for every test (CMakeLists.txt; the shell tests: tests/support/skip.sh). */
#define CKH_TEST_SKIPPED 77

/* Records the running case as skipped and prints why (printf format);
 * use CKH_SKIP, which also returns. */
void ckh__test_skip(const char *fn, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Skips the running case (inside START_TEST ... END_TEST): says why, returns. */
#define CKH_SKIP(...)                                                                              \
    do {                                                                                           \
        ckh__test_skip(__func__, _i, __VA_ARGS__);                                                 \
        return;                                                                                    \
    } while (0)

/* Runs suite s (srunner_run_all, CK_NORMAL) and returns main's exit status
 * as described above. */
int ckh_test_run(Suite *s);

#endif
