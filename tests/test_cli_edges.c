/* Edge cases of two parts of the ckh command that every verb relies on:
 * checked option values (cli/opt.h: integers decimal and hex at their
 * bounds, sizes, shards, output paths and report paths that would
 * overwrite each other) and one scenario's result as bytes (cli/
 * cli_result.h: what a worker sends back and a rank's partial holds),
 * which must refuse any cut or damaged copy rather than invent a verdict.
 *
 * Every case works in a private folder given as TMPDIR; nothing here is
 * about time. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/err.h"
#include "cli/cli_result.h"
#include "cli/opt.h"
#include "exec/tmpdir.h"

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "'%s' lacks '%s'", (s), (sub))

START_TEST(test_integers_and_sizes)
{
    char msg[256];
    uint64_t v = 0;
    ck_assert_int_eq(ckh_opt_u64("n", "0xff", 0, 1000, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, 255);
    ck_assert_int_eq(ckh_opt_u64("n", "0XAbC", 0, 10000, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, 0xabc);
    ck_assert_int_eq(ckh_opt_u64("n", "0xffffffffffffffff", 0, UINT64_MAX, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    static const char *const bad[] = {"0x", "0x1g", "0xG", "12a", "1 ", "+1", "-0", "",
                                      "0x10000000000000000", "18446744073709551616", "abc"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(ckh_opt_u64("count", bad[i], 0, UINT64_MAX, &v, msg, sizeof msg) == CKH_EINVAL, "'%s'",
                      bad[i]);
        HAS(msg, "--count expects an integer 0..18446744073709551615, got '");
    }
    ck_assert_int_eq(ckh_opt_u64("count", NULL, 0, 9, &v, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "--count expects an integer 0..9, got ''");
    ck_assert_int_eq(ckh_opt_u64("count", "10", 0, 9, &v, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_opt_u64("count", "1", 2, 9, &v, msg, sizeof msg), CKH_EINVAL);

    ck_assert_int_eq(ckh_opt_size("mem", "4GiB", 0, UINT64_MAX, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, UINT64_C(4) << 30);
    static const char *const bad_sizes[] = {"-1", " 1", "MiB", "1QiB", ""};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        ck_assert_int_eq(ckh_opt_size("mem", bad_sizes[i], 0, UINT64_MAX, &v, msg, sizeof msg), CKH_EINVAL);
        HAS(msg, "--mem expects a size such as 512MiB or 4GiB");
    }
    ck_assert_int_eq(ckh_opt_size("mem", NULL, 0, UINT64_MAX, &v, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_opt_size("mem", "2KiB", 0, 1024, &v, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_opt_size("mem", "1KiB", 2048, 4096, &v, msg, sizeof msg), CKH_EINVAL);

    uint32_t i = 0, n = 0;
    ck_assert_int_eq(ckh_opt_shard("shard", "3/3", &i, &n, msg, sizeof msg), 0);
    ck_assert_uint_eq(i, 3);
    ck_assert_uint_eq(n, 3);
    static const char *const bad_shards[] = {"3", "4/3", "0/3", "1/0", "/3", "1/", "12345678901234567890123456789012/40"};
    for (size_t k = 0; k < sizeof bad_shards / sizeof bad_shards[0]; k++) {
        ck_assert_int_eq(ckh_opt_shard("shard", bad_shards[k], &i, &n, msg, sizeof msg), CKH_EINVAL);
        HAS(msg, "--shard expects I/N with 1 <= I <= N, got '");
    }
}
END_TEST

static char base[256];

static void setup(void)
{
    ck_assert_int_eq(ckh_tmp_make(base, sizeof base), 0);
}

static void teardown(void)
{
    ckh_tmp_remove(base);
}

START_TEST(test_output_paths)
{
    char msg[1024], p[512], q[1024], dir[512];
    snprintf(dir, sizeof dir, "%s/d", base);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(p, sizeof p, "%s/file", base);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);

    ck_assert_int_eq(ckh_opt_check_output("report", "", false, msg, sizeof msg), -ENOENT);
    ck_assert_str_eq(msg, "cannot write the report '': no file name");
    ck_assert_int_eq(ckh_opt_check_output("report", dir, false, msg, sizeof msg), -EISDIR);
    HAS(msg, ": is a folder");
    ck_assert_int_eq(ckh_opt_check_output("folder", p, true, msg, sizeof msg), -ENOTDIR);
    HAS(msg, ": not a folder");
    ck_assert_int_eq(ckh_opt_check_output("report", p, false, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_opt_check_output("folder", dir, true, msg, sizeof msg), 0);
    /* a new file: its folder must exist and be a folder */
    snprintf(q, sizeof q, "%s/new.json", dir);
    ck_assert_int_eq(ckh_opt_check_output("report", q, false, msg, sizeof msg), 0);
    snprintf(q, sizeof q, "%s/none/new.json", base);
    ck_assert_int_eq(ckh_opt_check_output("report", q, false, msg, sizeof msg), -ENOENT);
    HAS(msg, "no folder ");
    snprintf(q, sizeof q, "%s/new.json", p);
    ck_assert_int_eq(ckh_opt_check_output("report", q, false, msg, sizeof msg), -ENOTDIR);
    /* a name with no folder is in the current one; one at the root is under "/" */
    char cwd[512];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(ckh_opt_check_output("report", "here.xml", false, msg, sizeof msg), 0);
    ck_assert_int_eq(chdir(cwd), 0);
    if (geteuid() != 0) {
        ck_assert_int_eq(ckh_opt_check_output("report", "/ckh-no-such-file.xml", false, msg, sizeof msg),
                         -EACCES);
        HAS(msg, "folder /: ");
        ck_assert_int_eq(chmod(p, 0400), 0);
        ck_assert_int_eq(ckh_opt_check_output("report", p, false, msg, sizeof msg), -EACCES);
        ck_assert_int_eq(chmod(p, 0600), 0);
    }

    /* reports that name one file, directly or through another path */
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/r.out", dir);
    snprintf(b, sizeof b, "%s/../d/r.out", dir);
    ck_assert_int_eq(ckh_opt_check_reports(a, NULL, b, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--junit and --html name the same file");
    ck_assert_int_eq(ckh_opt_check_reports(NULL, a, a, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--json and --html name the same file");
    snprintf(b, sizeof b, "%s/s.out", dir);
    ck_assert_int_eq(ckh_opt_check_reports(a, b, NULL, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_opt_check_reports(NULL, NULL, NULL, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_opt_check_reports(a, dir, NULL, msg, sizeof msg), -EISDIR);
}
END_TEST

/* A result with every part: strings, oracles, plugins and a timeline. */
static void full_result(struct ckh_report_result *r)
{
    ckh_report_result_init(r);
    r->verdict = CKH_VERDICT_FAIL;
    ck_assert_int_eq(ckh_report_set(&r->name, "scn"), 0);
    ck_assert_int_eq(ckh_report_set(&r->file, "a/scn.yaml"), 0);
    ck_assert_int_eq(ckh_report_set(&r->failed_oracle, "totals"), 0);
    ck_assert_int_eq(ckh_report_set(&r->message, "expected 3, got 4"), 0);
    ck_assert_int_eq(ckh_report_set(&r->replay, "ckh run a/scn.yaml --seed 9"), 0);
    r->seed = 9;
    r->runs = 2;
    r->restarts = 1;
    r->first_divergent_step = 5;
    ck_assert_int_eq(ckh_report_add_oracle(r, "totals", false, "expected 3, got 4"), 0);
    ck_assert_int_eq(ckh_report_add_oracle(r, "latest", true, NULL), 0);
    ck_assert_int_eq(ckh_report_add_plugin(r, "workload", "libw.so", "/p/libw.so", "build-id 01", NULL), 0);
    ck_assert_int_eq(ckh_report_add_plugin(r, "backend", "libb.so", "/p/libb.so", "content-hash 02",
                                           "/q/libb.so"),
                     0);
    ck_assert_int_eq(ckh_report_timeline_new(1, 1, &r->timeline), 0);
    ck_assert_int_eq(ckh_report_timeline_add(r->timeline, 1, 0, CKH_TL_SAVE, 1, 2, "save 1"), 0);
}

static char *encode(const struct ckh_report_result *r, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ckh_cli_result_write(f, r), 0);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

static int decode(const char *bytes, size_t n, struct ckh_report_result *out)
{
    ckh_report_result_init(out);
    FILE *f = n ? fmemopen((void *)bytes, n, "r") : fopen("/dev/null", "r");
    ck_assert_ptr_nonnull(f);
    int rc = ckh_cli_result_read(f, out);
    fclose(f);
    return rc;
}

START_TEST(test_result_transport)
{
    struct ckh_report_result r, back;
    full_result(&r);
    size_t len = 0;
    char *bytes = encode(&r, &len);
    ck_assert_int_eq(decode(bytes, len, &back), 0);
    ck_assert_str_eq(back.name, "scn");
    ck_assert_str_eq(back.failed_oracle, "totals");
    ck_assert_uint_eq(back.noracles, 2);
    ck_assert(!back.oracles[0].passed);
    ck_assert_ptr_null(back.oracles[1].detail);
    ck_assert_uint_eq(back.nplugins, 2);
    ck_assert_ptr_null(back.plugins[0].shadowed);
    ck_assert_str_eq(back.plugins[1].shadowed, "/q/libb.so");
    ck_assert_ptr_nonnull(back.timeline);
    ck_assert_uint_eq(back.timeline->n, 1);
    ck_assert_int_eq(back.first_divergent_step, 5);
    size_t len2 = 0;
    char *again = encode(&back, &len2);
    ck_assert_uint_eq(len2, len);
    ck_assert_mem_eq(again, bytes, len);
    free(again);
    ckh_report_result_clear(&back);

    /* every cut copy is refused, never read as a shorter result */
    for (size_t n = 0; n < len; n++) {
        int rc = decode(bytes, n, &back);
        ck_assert_msg(rc == CKH_ETRUNCATED || rc == CKH_ECORRUPT, "cut at %zu of %zu: %d", n, len, rc);
        ckh_report_result_clear(&back);
    }
    /* a verdict that does not exist */
    int32_t v;
    memcpy(&v, bytes, sizeof v);
    int32_t bad = 7;
    memcpy(bytes, &bad, sizeof bad);
    ck_assert_int_eq(decode(bytes, len, &back), CKH_ECORRUPT);
    ckh_report_result_clear(&back);
    bad = -1;
    memcpy(bytes, &bad, sizeof bad);
    ck_assert_int_eq(decode(bytes, len, &back), CKH_ECORRUPT);
    ckh_report_result_clear(&back);
    memcpy(bytes, &v, sizeof v);
    ck_assert_int_eq(decode(bytes, len, &back), 0);
    ckh_report_result_clear(&back);
    free(bytes);

    /* a result without strings, oracles, plugins or timeline */
    struct ckh_report_result empty;
    ckh_report_result_init(&empty);
    bytes = encode(&empty, &len);
    ck_assert_int_eq(decode(bytes, len, &back), 0);
    ck_assert_ptr_null(back.name);
    ck_assert_ptr_null(back.timeline);
    ck_assert_uint_eq(back.noracles, 0);
    ckh_report_result_clear(&back);
    free(bytes);

    /* a stream that takes nothing */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);
        ck_assert_int_eq(ckh_cli_result_write(full, &r), -EIO);
        fclose(full);
    }
    ckh_report_result_clear(&r);
}
END_TEST

/* Runs ./ckh (the build folder's, where CTest runs) with args; *out gets
 * stdout and stderr together (free()). Returns the exit status. */
static int run_ckh(const char *const *args, char **out)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        const char *argv[40] = {"./ckh"};
        for (int i = 0; args[i] && i < 38; i++)
            argv[i + 1] = args[i];
        execv("./ckh", (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (ssize_t got; (got = read(fds[0], buf + len, cap - len - 1)) != 0;) {
        if (got < 0) {
            ck_assert_int_eq(errno, EINTR);
            continue;
        }
        len += (size_t)got;
        if (cap - len < 2) {
            buf = realloc(buf, cap *= 2);
            ck_assert_ptr_nonnull(buf);
        }
    }
    buf[len] = '\0';
    close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ck_assert_int_eq(errno, EINTR);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* `ckh explore` refuses each option's bad value with exit status 2 and a
 * message naming the option; every good value is taken (the run then
 * stops at the missing file, naming it). */
START_TEST(test_explore_options)
{
    if (access("./ckh", X_OK) != 0) {
        fprintf(stderr, "no ./ckh here: run from the build folder (ctest does)\n");
        ck_abort_msg("no ./ckh");
    }
    static const struct {
        const char *args[40];
        const char *want;
    } cases[] = {
        {{"explore", "--check", "bogus", "x"}, "ckh explore: --check expects verify or restart, got 'bogus'\n"},
        {{"explore", "--start", "lukewarm", "x"}, "ckh explore: --start expects auto, cold or warm, got 'lukewarm'\n"},
        {{"explore", "--crashes", "some", "x"},
         "ckh explore: --crashes expects all, crash, power-loss or none, got 'some'\n"},
        {{"explore", "--others", "asleep", "x"}, "ckh explore: --others expects killed or running, got 'asleep'\n"},
        {{"explore", "--jobs", "0", "x"}, "ckh explore: --jobs expects an integer 1..256, got '0'\n"},
        {{"explore", "--max-states", "0", "x"}, "ckh explore: --max-states expects an integer 1..18446744073709551615, got '0'\n"},
        {{"explore", "--time-limit", "0", "x"}, "ckh explore: --time-limit expects an integer 1..18446744073709551, got '0'\n"},
        {{"explore", "--state", "0", "x"}, "ckh explore: --state expects an integer 1..18446744073709551615, got '0'\n"},
        {{"explore", "--order", "0", "x"}, "ckh explore: --order expects an integer 1..18446744073709551615, got '0'\n"},
        {{"explore", "--seed", "-1", "x"}, "ckh explore: --seed expects an integer 0..18446744073709551615, got '-1'\n"},
        {{"explore", "/"}, "ckh explore: / is a folder; explore takes one scenario file\n"},
        {{"explore", "--start", "warm", "--start", "cold", "--start", "auto", "--crashes", "all", "--crashes", "crash",
          "--crashes", "power-loss", "--crashes", "none", "--others", "running", "--others", "killed", "--check",
          "verify", "--check", "restart", "-j", "2", "--max-states", "3", "--time-limit", "5", "--seed", "0x10",
          "--state", "2", "--keep", "/nonexistent-ckh/k", "--order", "1", "/nonexistent-ckh/s.yaml"},
         "ckh explore: /nonexistent-ckh/s.yaml: cannot list scenarios: No such file or directory\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        int st = run_ckh(cases[i].args, &out);
        ck_assert_msg(st == 2, "case %zu: exit %d: %s", i, st, out);
        ck_assert_msg(strcmp(out, cases[i].want) == 0, "case %zu: '%s'\nwant '%s'", i, out, cases[i].want);
        free(out);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cli_edges");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, test_integers_and_sizes);
    tcase_add_test(tc, test_result_transport);
    tcase_add_test(tc, test_explore_options);
    suite_add_tcase(s, tc);
    TCase *paths = tcase_create("paths");
    tcase_add_checked_fixture(paths, setup, teardown);
    tcase_add_test(paths, test_output_paths);
    suite_add_tcase(s, paths);
    return s;
}

int main(int argc, char **argv)
{
    /* Run from the build folder (CTest's working folder), where ckh is;
     * another caller (scripts/memcheck.sh) names this program by its path
     * in that folder. */
    if (access("./ckh", X_OK) != 0 && argc > 0 && strrchr(argv[0], '/')) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(argv[0], '/') - argv[0]), argv[0]);
        if (chdir(dir) != 0)
            return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
