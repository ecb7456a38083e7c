/* Which programs the warm start serves (harness/exec/command_warm.h,
 * ckh__warm_serves): a Python interpreter by name, the interpreter options
 * the launcher can honour, then a script file. Every other shape starts
 * cold, and the reason a user reads in `start: cold: ...` (or in the
 * error of --start warm) names what stopped it. The launcher set's own
 * bookkeeping (counts, notes, whether a pid is a launcher) is checked on
 * a set that starts nothing. Nothing here is about time. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/command_warm.h"
#include "exec/tmpdir.h"
#include "model/scenario.h"
#include "support/skip.h"

/* Whether argv (NULL-terminated) is served; *at its script's index. */
static bool serves(const char *const *argv, size_t *at, char *why, size_t n)
{
    size_t argc = 0;
    while (argv[argc])
        argc++;
    struct ckh_scn_command cmd = {.argv = (const char **)argv, .argc = argc, .line = 1, .column = 1};
    *at = 0;
    why[0] = '\0';
    return ckh__warm_serves(&cmd, at, why, n);
}

#define SERVED(at_expected, ...)                                                                   \
    do {                                                                                           \
        const char *const argv_[] = {__VA_ARGS__, NULL};                                           \
        size_t at_;                                                                                \
        char why_[256];                                                                            \
        ck_assert_msg(serves(argv_, &at_, why_, sizeof why_), "not served: %s", why_);            \
        ck_assert_uint_eq(at_, (at_expected));                                                     \
    } while (0)

#define COLD(reason, ...)                                                                          \
    do {                                                                                           \
        const char *const argv_[] = {__VA_ARGS__, NULL};                                           \
        size_t at_;                                                                                \
        char why_[256];                                                                            \
        ck_assert_msg(!serves(argv_, &at_, why_, sizeof why_), "served: %s", argv_[0]);           \
        ck_assert_str_eq(why_, (reason));                                                          \
    } while (0)

START_TEST(test_python_names)
{
    SERVED(1, "python", "train.py");
    SERVED(1, "python3", "train.py");
    SERVED(1, "/usr/bin/python3.11", "train.py", "--epochs", "3");
    COLD("/bin/sh is not a Python interpreter", "/bin/sh", "train.sh");
    COLD("python3-config is not a Python interpreter", "python3-config", "x.py");
    COLD("/opt/pythonic is not a Python interpreter", "/opt/pythonic", "x.py");
    COLD("ipython is not a Python interpreter", "ipython", "x.py");
    struct ckh_scn_command none = {.argc = 0};
    size_t at;
    char why[128];
    ck_assert(!ckh__warm_serves(&none, &at, why, sizeof why));
    ck_assert_str_eq(why, "(no program) is not a Python interpreter");
}
END_TEST

START_TEST(test_interpreter_options)
{
    /* the supported one-letter options, alone and grouped */
    SERVED(2, "python3", "-u", "train.py");
    SERVED(2, "python3", "-uBsE", "train.py");
    SERVED(4, "python3", "-b", "-O", "-q", "train.py", "-m", "x");
    /* -W and -X take the rest of their word, or the next argument */
    SERVED(3, "python3", "-W", "ignore", "train.py");
    SERVED(2, "python3", "-Wignore", "train.py");
    SERVED(4, "python3", "-X", "dev", "-u", "train.py");
    SERVED(2, "python3", "-uXdev", "train.py");
    /* -- ends the options */
    SERVED(3, "python3", "-u", "--", "train.py");
    /* a module or a command starts cold */
    COLD("python3 runs a module with -m, which starts cold (the warm start runs a script file)", "python3", "-m",
         "torch.distributed.run", "train.py");
    COLD("python3 runs a command with -c, which starts cold (the warm start runs a script file)", "python3", "-uc",
         "print(1)");
    /* options the launcher cannot honour */
    COLD("the interpreter option --version is not supported by the warm start", "python3", "--version");
    COLD("the interpreter option -i is not supported by the warm start", "python3", "-i", "train.py");
    COLD("the interpreter option -R is not supported by the warm start", "python3", "-uR", "train.py");
    /* no script file */
    COLD("python3 runs no script file (the warm start runs one)", "python3");
    COLD("python3 runs no script file (the warm start runs one)", "python3", "-u");
    COLD("python3 runs no script file (the warm start runs one)", "python3", "-");
    COLD("python3 runs no script file (the warm start runs one)", "python3", "-u", "--");
    COLD("python3 runs no script file (the warm start runs one)", "python3", "--", "-");
    COLD("python3 runs no script file (the warm start runs one)", "python3", "-W");
}
END_TEST

START_TEST(test_set_that_starts_nothing)
{
    char base[] = "/tmp/ckh-test-warm-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(base));
    char dir[128];
    snprintf(dir, sizeof dir, "%s/warm", base);
    struct ckh__warm_set *s = NULL;
    char err[256] = "";
    ck_assert_msg(ckh__warm_set_create(dir, false, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_ptr_nonnull(s);
    uint64_t warm = 7, cold = 7;
    char note[64] = "x";
    ckh__warm_set_counts(s, &warm, &cold, note, sizeof note);
    ck_assert_uint_eq(warm, 0);
    ck_assert_uint_eq(cold, 0);
    ck_assert_str_eq(note, "");
    /* no launcher started: no pid is one (not ckh itself, not its parent) */
    ck_assert(!ckh__warm_is_launcher(getpid()));
    ck_assert(!ckh__warm_is_launcher(getppid()));
    ck_assert(!ckh__warm_is_launcher(0));
    ckh__warm_set_destroy(s);
    ckh__warm_set_destroy(NULL);
    ck_assert(!ckh__warm_is_launcher(getpid()));
    ck_assert_int_eq(ckh_tmp_remove(base), 0);
}
END_TEST

static Suite *warm_serves_suite(void)
{
    Suite *s = suite_create("warm_serves");
    TCase *tc = tcase_create("warm");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_python_names);
    tcase_add_test(tc, test_interpreter_options);
    tcase_add_test(tc, test_set_that_starts_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(warm_serves_suite());
}
