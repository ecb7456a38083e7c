/* The Python writer of the result protocol (tools/ckh_result.py) and ckh's
 * C reader and writer (platform/record_jsonl.c) agree on every field:
 *   - python_to_c: records written by ckh_result.py, with edge values in
 *     every field, parse with ckh_record_jsonl_parse into exactly the
 *     values given (doubles bit for bit, digests, non-ASCII text);
 *   - c_to_python_to_c: records written by ckh_record_jsonl_open, read
 *     back by ckh_result.read and written again by ckh_result.py, parse
 *     into the records first written;
 *   - killed_writer: a Python writer killed with SIGKILL while it writes
 *     leaves only whole lines, read back without error;
 *   - unset: with CKH_RESULT unset the calls write nothing.
 * The interpreter is CKH_PYTHON (the build's /usr/bin/python3); the helper
 * is imported from CKH_TOOLS_DIR (the source tree's tools/). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/record.h"
#include "support/files.h"
#include "support/record_eq.h"

#ifndef CKH_PYTHON
#define CKH_PYTHON "/usr/bin/python3"
#endif
#ifndef CKH_TOOLS_DIR
#define CKH_TOOLS_DIR "tools"
#endif

/* ==== running the Python helper ==== */

/* Starts `python -c script` with CKH_RESULT=result (NULL: unset) and the
 * helper on its path, in folder cwd (NULL: this one); returns its pid. */
static pid_t py_start(const char *script, const char *result, const char *cwd)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (result)
            setenv("CKH_RESULT", result, 1);
        else
            unsetenv("CKH_RESULT");
        setenv("CKH_TOOLS", CKH_TOOLS_DIR, 1);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1); /* nothing written into tools/ */
        unsetenv("CKH_CKPT_DIR");
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        execl(CKH_PYTHON, CKH_PYTHON, "-c", script, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Runs the script to its end; it must exit 0. */
static void py_run(const char *script, const char *result, const char *cwd)
{
    pid_t pid = py_start(script, result, cwd);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s exited with status 0x%x running:\n%s",
                  CKH_PYTHON, st, script);
}

#define PY_PRELUDE "import os, sys\nsys.path.insert(0, os.environ['CKH_TOOLS'])\nimport ckh_result as ckh\n"


/* ==== comparing records ==== */

struct expect {
    enum ckh_rec_kind kind; /* which struct rec points to */
    const void *rec;        /* the record the line must give */
};

struct cmp_ctx {
    const struct expect *want; /* expected records, in order */
    size_t n;                  /* how many */
    size_t seen;               /* records received so far */
};

/* Compares each parsed record with the next expected one. */
static int cmp_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    struct cmp_ctx *c = ctx;
    ck_assert_uint_lt(c->seen, c->n);
    const struct expect *w = &c->want[c->seen++];
    ck_assert_int_eq(kind, w->kind);
    ckh_test_record_eq(kind, w->rec, rec, true);
    return 0;
}

/* Parses the file at path; every record must match want, in order. */
static void check_file(const char *path, const struct expect *want, size_t n)
{
    size_t len;
    char msg[512] = "";
    char *text = ckh_test_slurp(path, &len);
    struct cmp_ctx c = {want, n, 0};
    int rc = ckh_record_jsonl_parse(text, len, path, cmp_sink, &c, msg, sizeof msg);
    ck_assert_msg(rc == 0, "parse of %s: %s\n%s", path, msg, text);
    ck_assert_uint_eq(c.seen, n);
    free(text);
}

/* ==== the records both directions carry ==== */

static const struct ckh_rec_digest ed_digests[] = {
    {"weights", 0}, {"optim", UINT64_MAX}, {"rng", 0x9e3779b97f4a7c15ull}};
/* -0.0, the smallest subnormal, the largest double, an integer, a bool,
 * NaN and the infinities (carried as "NaN", "Infinity", "-Infinity") */
static const struct ckh_rec_value ed_values[] = {
    {"lr", 0.1}, {"neg0", -0.0}, {"tiny", 4.9406564584124654e-324}, {"huge", DBL_MAX},
    {"three", 3.0}, {"flag", 1.0}, {"third", 1.0 / 3.0}, {"loss", NAN}, {"up", INFINITY}, {"down", -INFINITY}};
static const uint64_t ed_samples[] = {0, 17, UINT64_MAX};
static const char *const ed_blobs[] = {"model", "optim", "\xc3\xa9t\xc3\xa9"};
static const struct ckh_rec_value ed_final_values[] = {{"loss", 0.25}, {"acc", 1.0 / 3.0}};

static const struct ckh_rec_step ed_step1 = {
    .step = 1, .epoch = 0, .digests = ed_digests, .ndigests = 3, .values = ed_values,
    .nvalues = sizeof ed_values / sizeof ed_values[0], .samples = ed_samples, .nsamples = 3};
static const struct ckh_rec_step ed_step2 = {.step = INT64_MAX, .epoch = INT64_MAX};
static const struct ckh_rec_resume ed_resume1 = {.step = 4, .epoch = 1};
static const struct ckh_rec_resume ed_resume0 = {.step = 0, .epoch = 0};
/* quotes, control characters, NUL (written as U+FFFD), a 4-byte character */
static const struct ckh_rec_save ed_save_fail = {
    .step = 4, .epoch = 1, .rc = CKH_ECORRUPT,
    .what = "caf\xc3\xa9 \"q\"\n\ttab\xef\xbf\xbdnul \xf0\x9f\x98\x80"};
static const struct ckh_rec_save ed_save_ok = {.step = 8, .epoch = 2, .rc = 0};
static const struct ckh_rec_save ed_save_eio = {.step = 9, .epoch = 0, .rc = -EIO};
static const struct ckh_rec_save ed_save_oserror = {
    .step = 10, .epoch = 0, .rc = -ENOENT, .what = "No such file or directory: /ckpt/step_10.pt"};
static const struct ckh_rec_final ed_final1 = {
    .epochs = 3, .steps = 30, .total = INT64_MIN, .has_digest = true,
    .digest = 0x8000000000000001ull, .values = ed_final_values, .nvalues = 2,
    .blobs = ed_blobs, .nblobs = 3};
static const struct ckh_rec_final ed_final2 = {0};

static const struct expect ed_want[] = {
    {CKH_REC_STEP, &ed_step1},      {CKH_REC_STEP, &ed_step2},        {CKH_REC_RESUME, &ed_resume1},
    {CKH_REC_RESUME, &ed_resume0},  {CKH_REC_SAVE, &ed_save_fail},    {CKH_REC_SAVE, &ed_save_ok},
    {CKH_REC_SAVE, &ed_save_eio},   {CKH_REC_SAVE, &ed_save_oserror}, {CKH_REC_FINAL, &ed_final1},
    {CKH_REC_FINAL, &ed_final2},
};
#define ED_N (sizeof ed_want / sizeof ed_want[0])

/* The same records through ckh_result.py's calls. */
static const char ed_script[] =
    PY_PRELUDE
    "ckh.step(1, epoch=0, digests={'weights': 0, 'optim': (1 << 64) - 1, 'rng': '9E3779B97F4A7C15'},\n"
    "         values={'lr': 0.1, 'neg0': -0.0, 'tiny': 5e-324, 'huge': 1.7976931348623157e308,\n"
    "                 'three': 3, 'flag': True, 'third': 1 / 3, 'loss': float('nan'),\n"
    "                 'up': float('inf'), 'down': float('-inf')},\n"
    "         samples=[0, 17, (1 << 64) - 1])\n"
    "ckh.step(9223372036854775807, epoch=9223372036854775807)\n"
    "ckh.resume(4, epoch=1)\n"
    "ckh.resume(0)\n"
    "ckh.save(4, epoch=1, ok=False, rc=-10003,\n"
    "         error='caf\\u00e9 \"q\"\\n\\ttab\\x00nul \\U0001F600')\n"
    "ckh.save(8, epoch=2, ok=True)\n"
    "ckh.save(9, ok=False)\n"
    "ckh.save(10, ok=False, error=FileNotFoundError(2, 'No such file or directory', "
    "'/ckpt/step_10.pt'))\n"
    "ckh.final(epochs=3, steps=30, total=-9223372036854775808, digest=0x8000000000000001,\n"
    "          values={'loss': 0.25, 'acc': 1 / 3}, blobs=['model', 'optim', '\\u00e9t\\u00e9'])\n"
    "ckh.final()\n"
    /* a malformed record raises and writes nothing */
    "for bad in (lambda: ckh.step(0),\n"
    "            lambda: ckh.step(1, digests={'bad name': 1}), lambda: ckh.final(blobs=['a,b']),\n"
    "            lambda: ckh.step(1, digests={'x': 1}, values={'x': 1.0})):\n"
    "    try:\n"
    "        bad()\n"
    "    except (ValueError, TypeError):\n"
    "        pass\n"
    "    else:\n"
    "        sys.exit('a malformed record was accepted')\n";

START_TEST(python_to_c)
{
    char path[64];
    ckh_test_temp_path("result-protocol", path, sizeof path);
    py_run(ed_script, path, NULL);
    check_file(path, ed_want, ED_N);
    unlink(path);
}
END_TEST

/* Reads a result file with ckh_result.read and writes every record again
 * through ckh_result's calls (the keys are the calls' parameters). */
static const char replay_script[] =
    PY_PRELUDE
    "calls = {'step': ckh.step, 'resume': ckh.resume, 'save': ckh.save, 'final': ckh.final}\n"
    "for rec in ckh.read(os.environ['SRC']):\n"
    "    calls[rec.pop('kind')](**rec)\n";

START_TEST(c_to_python_to_c)
{
    char src[64], dst[64], msg[256];
    ckh_test_temp_path("result-protocol", src, sizeof src);
    ckh_test_temp_path("result-protocol", dst, sizeof dst);
    struct ckh_record *r = NULL;
    ck_assert_int_eq(ckh_record_jsonl_open(src, &r, msg, sizeof msg), 0);
    for (size_t i = 0; i < ED_N; i++) {
        int rc = -1;
        switch (ed_want[i].kind) {
        case CKH_REC_STEP: rc = ckh_record_step(r, ed_want[i].rec); break;
        case CKH_REC_RESUME: rc = ckh_record_resume(r, ed_want[i].rec); break;
        case CKH_REC_SAVE: rc = ckh_record_save(r, ed_want[i].rec); break;
        case CKH_REC_FINAL: rc = ckh_record_final(r, ed_want[i].rec); break;
        }
        ck_assert_int_eq(rc, 0);
    }
    ckh_record_jsonl_close(r);
    setenv("SRC", src, 1);
    py_run(replay_script, dst, NULL);
    unsetenv("SRC");
    check_file(dst, ed_want, ED_N);
    /* The Python writer's lines are byte for byte what it would write from
     * its own calls: the two files hold the same records, and the C file
     * parses to the same records too. */
    check_file(src, ed_want, ED_N);
    unlink(src);
    unlink(dst);
}
END_TEST

/* Checks that step records count 1, 2, 3, ... */
static int counting_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    size_t *seen = ctx;
    ck_assert_int_eq(kind, CKH_REC_STEP);
    const struct ckh_rec_step *s = rec;
    ck_assert_int_eq(s->step, (int64_t)++*seen);
    ck_assert_uint_eq(s->ndigests, 1);
    ck_assert_uint_eq(s->digests[0].digest, (uint64_t)s->step * 0x9e3779b97f4a7c15ull);
    ck_assert_uint_eq(s->nsamples, (size_t)(s->step % 97));
    return 0;
}

static const char endless_script[] =
    PY_PRELUDE
    "i = 0\n"
    "while True:\n"
    "    i += 1\n"
    "    ckh.step(i, digests={'w': (i * 0x9e3779b97f4a7c15) % (1 << 64)},\n"
    "             values={'loss': 1.0 / i}, samples=list(range(i % 97)))\n";

START_TEST(killed_writer)
{
    char path[64], msg[512] = "";
    ckh_test_temp_path("result-protocol", path, sizeof path);
    pid_t pid = py_start(endless_script, path, NULL);
    /* Kill it once it has written a good amount (at most 30 s). */
    struct stat st = {0};
    for (int i = 0; i < 3000 && (stat(path, &st) != 0 || st.st_size < (1 << 20)); i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    ck_assert_int_ge(st.st_size, 1 << 20);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int wst = 0;
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
    size_t len, seen = 0;
    char *text = ckh_test_slurp(path, &len);
    ck_assert_uint_gt(len, 0);
    ck_assert_int_eq(text[len - 1], '\n'); /* the last line is whole */
    int rc = ckh_record_jsonl_parse(text, len, path, counting_sink, &seen, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s", msg);
    ck_assert_uint_gt(seen, 100);
    free(text);
    unlink(path);
}
END_TEST

START_TEST(unset)
{
    char dir[] = "/tmp/ckh-test-result-unset-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    py_run(PY_PRELUDE "assert not ckh.under_ckh()\n"
                      "ckh.step(1, digests={'w': 1}); ckh.save(1); ckh.final(steps=1)\n"
                      "assert os.listdir('.') == [], os.listdir('.')\n",
           NULL, dir);
    ck_assert_int_eq(rmdir(dir), 0); /* empty: nothing was written */
}
END_TEST

static Suite *result_protocol_suite(void)
{
    Suite *s = suite_create("result_protocol");
    TCase *tc = tcase_create("python_and_c");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, python_to_c);
    tcase_add_test(tc, c_to_python_to_c);
    tcase_add_test(tc, killed_writer);
    tcase_add_test(tc, unset);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (access(CKH_PYTHON, X_OK) != 0) {
        /* Only a build without Python at all skips; CTest shows the line. */
        printf("test_result_protocol: SKIP: %s is not there (the result protocol's Python "
               "helper cannot be tested)\n", CKH_PYTHON);
        return 77;
    }
    SRunner *sr = srunner_create(result_protocol_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
