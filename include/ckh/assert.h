/* Invariant assertions.
 *
 * CKH_ASSERT(cond) checks an invariant in every build, release included:
 * use it where the check is cheap next to the work it guards (a heap
 * comparison, a generation counter, a length against a capacity). When the
 * condition is false, ckh__assert_fail() prints the condition, file, line
 * and function to stderr and aborts, so a forked worker ends with SIGABRT
 * and its verdict names the signal.
 *
 * CKH_ASSERT_SLOW(cond) is for checks that cost as much as the work (a
 * whole-heap walk, a decode after every encode). It is compiled in when
 * CKH_SLOW_ASSERTS is defined (the Debug, sanitizer and coverage builds do)
 * and is a no-op otherwise; cond is then not evaluated.
 *
 * Neither is for input validation: bad input gets an error code and a
 * message, never an assertion.
 */
#ifndef CKH_ASSERT_H
#define CKH_ASSERT_H

/* Reports a failed assertion and aborts. Does not return. */
_Noreturn void ckh__assert_fail(const char *cond, const char *file, int line, const char *func);

#define CKH_ASSERT(cond)                                                       \
    ((cond) ? (void)0 : ckh__assert_fail(#cond, __FILE__, __LINE__, __func__))

#ifdef CKH_SLOW_ASSERTS
#define CKH_ASSERT_SLOW(cond) CKH_ASSERT(cond)
#else
#define CKH_ASSERT_SLOW(cond) ((void)0)
#endif

#endif
