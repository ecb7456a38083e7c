/* Command jobs whose program is the adversary (harness/exec/prog_file.c,
 * harness/exec/command_result.c): what a program puts in place of the
 * files ckh reads or writes for it never stalls ckh past job.timeout,
 * never makes it follow a link, and never puts a byte of a file it was
 * not meant to read into a message.
 *
 * Each case is a small sh program (no PyTorch) that writes a long line
 * without a newline, makes its result file a sparse 2 TiB, puts a FIFO, a
 * folder, a link to /dev/zero, a link or a hard link to a secret file in
 * place of $CKH_RESULT or of its log, or plants links where ckh will
 * create the next run's files. Each case checks the message names what
 * was found or the limit that was reached (never the hang that job.timeout
 * would give: the cases that keep running set a timeout they would hit
 * otherwise), and the fixture checks that nothing is left: no ckhfs mount,
 * no run folder in the TMPDIR ckh runs with (a folder of the test's own),
 * no process. The cases that run programs on ckhfs (FUSE) are tagged
 * "fuse" (CTest entry test_command_hostile_fuse) and skipped, saying why,
 * where FUSE cannot be used; the sweep of run folders with planted
 * markers needs none.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckhfs/ckhfs.h"
#include "exec/runner.h"
#include "exec/tmpdir.h"
#include "judge/judge.h"
#include "model/scenario.h"
#include "report.h"
#include "support/fuse.h"
#include "support/skip.h"

#ifndef CKH_CMD_CKH
#define CKH_CMD_CKH "build/ckh"
#endif
#ifndef CKH_CMD_PROGRAMS
#define CKH_CMD_PROGRAMS "tests/programs"
#endif

#define SECRET "TOPSECRET-7f3a9c-do-not-print"

static char dir[256];    /* the scenario and the programs' working folder */
static char tmp[300];    /* the TMPDIR ckh runs with: its run folders go here */
static char secret[300]; /* a file no message may quote (beside dir) */
static char victim[300]; /* a file ckh must never write (beside dir) */

/* ---- fixture ---- */

/* Entries left in tmp (ckh's run folders). */
static void tmp_empty(void)
{
    DIR *d = opendir(tmp);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        ck_assert_msg(!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."), "left in TMPDIR: %s", de->d_name);
    closedir(d);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ckh-test-hostile-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    snprintf(secret, sizeof secret, "%s.secret", dir);
    snprintf(victim, sizeof victim, "%s.victim", dir);
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    write_text(secret, SECRET "\n");
    write_text(victim, "victim\n");
    setenv("TMPDIR", tmp, 1);
}

static void teardown(void)
{
    ck_assert_int_eq(ckh_test_ckhfs_mounts(dir), 0); /* below this test's folders */
    tmp_empty();
    errno = 0;
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1); /* no child of ours left, not even a zombie */
    ck_assert_int_eq(errno, ECHILD);
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s' '%s'", dir, tmp, secret, victim);
    ck_assert_int_eq(system(cmd), 0);
}

/* text with every "@SECRET@", "@VICTIM@" and "@PROGRAMS@" replaced. */
static void expand(const char *text, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = text; *p && o + 400 < n;) {
        const char *with = !strncmp(p, "@SECRET@", 8) ? secret : !strncmp(p, "@VICTIM@", 8) ? victim
                           : !strncmp(p, "@PROGRAMS@", 10) ? CKH_CMD_PROGRAMS : NULL;
        if (with) {
            o += (size_t)snprintf(out + o, n - o, "%s", with);
            p += p[1] == 'P' ? 10 : 8;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

/* The job: <dir>/p.sh holding program (expanded), run by sh in every
 * node, with job.timeout timeout and the scenario lines extra; parsed. */
static struct ckh_scenario *scenario(const char *program, const char *timeout, const char *extra)
{
    char text[8192], path[512];
    expand(program, text, sizeof text);
    snprintf(path, sizeof path, "%s/p.sh", dir);
    write_text(path, text);
    snprintf(text, sizeof text, "job:\n  command: [sh, ./p.sh]\n  timeout: %s\n%s", timeout, extra);
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    write_text(path, text);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_file(path, NULL, &sc, &err);
    ck_assert_msg(rc == 0, "parse: %d:%d: %s\n%s", err.line, err.column, err.msg, text);
    return sc;
}

static int run(struct ckh_scenario *sc, struct ckh_report_result *r)
{
    struct ckh_run_options o = {.source_dir = getenv("CKH_SOURCE_DIR")};
    ckh_report_result_init(r);
    int rc = ckh_harness_run(sc, &o, r);
    ckh_scenario_free(sc);
    return rc;
}

/* No text of r holds the secret. */
static void no_secret(const struct ckh_report_result *r)
{
    ck_assert_msg(!r->message || !strstr(r->message, "TOPSECRET"), "%s", r->message);
    for (size_t i = 0; i < r->noracles; i++)
        ck_assert_msg(!strstr(r->oracles[i].detail, "TOPSECRET"), "%s: %s", r->oracles[i].name,
                      r->oracles[i].detail);
}

/* ---- what a program puts at $CKH_RESULT ---- */

/* A program's result file, and what ckh says of it. Each message names
 * what was found or the limit reached; none is "still running after
 * job.timeout". Where a program exits at once, ckh may see the file first
 * in the progress reader or in the final read: both name the same limit,
 * which is what want holds. */
static const struct {
    const char *name;
    const char *sh;   /* the program */
    const char *timeout;
    int code;         /* ckh_harness_run's return (0: CKH_EPARSE or CKH_EINVAL) */
    const char *want; /* in the message */
} results[] = {
    /* A line of 64 MiB without a newline, the program still running:
     * stopped at the line limit, long before job.timeout. */
    {"long line, running", "head -c 67108864 /dev/zero | tr '\\0' x >> \"$CKH_RESULT\"\nexec sleep 60\n", "20s",
     CKH_EPARSE,
     "holds a line longer than 1 MiB (1048576 bytes, the result protocol's line limit) with no newline yet; "
     "ckh stopped the job"},
    /* The same line, the program gone: the line limit still (the progress
     * reader's or the final read's words). */
    {"long line, exited", "head -c 67108864 /dev/zero | tr '\\0' x >> \"$CKH_RESULT\"\n", "20s", 0,
     "1048576 bytes"},
    /* A sparse 2 TiB result file: refused by its size, before a byte is read. */
    {"sparse 2 TiB, running", "truncate -s 2T \"$CKH_RESULT\" && exec sleep 60\n", "20s", CKH_EINVAL,
     "holds 2199023255552 bytes"},
    {"sparse 2 TiB, exited", "truncate -s 2T \"$CKH_RESULT\"\n", "20s", CKH_EINVAL,
     "over the result file limit of 1 GiB (1073741824 bytes)"},
    {"FIFO", "rm -f \"$CKH_RESULT\" && mkfifo \"$CKH_RESULT\"\n", "20s", CKH_EINVAL,
     "is a FIFO, not a regular file"},
    /* A FIFO while the program runs on: ckh's reader holds the file it
     * made, and the FIFO is refused when the run ends (at job.timeout). */
    {"FIFO, running", "rm -f \"$CKH_RESULT\" && mkfifo \"$CKH_RESULT\" && exec sleep 60\n", "1s", CKH_EINVAL,
     "is a FIFO, not a regular file"},
    {"folder", "rm -f \"$CKH_RESULT\" && mkdir \"$CKH_RESULT\"\n", "20s", CKH_EINVAL,
     "is a folder, not a regular file"},
    {"link to /dev/zero", "ln -sf /dev/zero \"$CKH_RESULT\"\n", "20s", CKH_EINVAL,
     "is a symbolic link, not a regular file"},
    {"link to a secret", "ln -sf @SECRET@ \"$CKH_RESULT\"\n", "20s", CKH_EINVAL,
     "is a symbolic link, not a regular file"},
    {"hard link to a secret", "ln -f @SECRET@ \"$CKH_RESULT\"\n", "20s", CKH_EINVAL,
     "has 2 names (a hard link to another file)"},
};

/* Whether path's folder can hold what the case needs: a sparse 2 TiB
 * file, a hard link to the secret. */
static bool can_hold(const char *name)
{
    char probe[400];
    bool ok = true;
    snprintf(probe, sizeof probe, "%s/probe", dir);
    if (strstr(name, "sparse")) {
        int fd = open(probe, O_WRONLY | O_CREAT, 0600);
        ok = fd >= 0 && ftruncate(fd, 2ll << 40) == 0;
        if (fd >= 0)
            close(fd);
    } else if (strstr(name, "hard link")) {
        ok = link(secret, probe) == 0;
    }
    unlink(probe);
    return ok;
}

START_TEST(test_result_file)
{
    NEED_FUSE();
    if (!can_hold(results[_i].name))
        CKH_SKIP("%s: the folder of %s cannot hold what the case makes", results[_i].name, dir);
    struct ckh_report_result r;
    int rc = run(scenario(results[_i].sh, results[_i].timeout, ""), &r);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    if (results[_i].code)
        ck_assert_msg(rc == results[_i].code, "%s: rc %s: %s", results[_i].name, ckh_err_name(rc), r.message);
    else
        ck_assert_msg(rc == CKH_EPARSE || rc == CKH_EINVAL, "%s: rc %s: %s", results[_i].name, ckh_err_name(rc),
                      r.message);
    ck_assert_msg(r.message && strstr(r.message, results[_i].want), "%s: message '%s'\n lacks '%s'",
                  results[_i].name, r.message, results[_i].want);
    ck_assert_msg(!strstr(r.message, "job.timeout") && !strstr(r.message, "hang"), "%s", r.message);
    no_secret(&r);
    ckh_report_result_clear(&r);
}
END_TEST

/* The link to a secret through the ckh command: neither its output nor
 * its JSON report holds a byte of the secret, and it exits 2. */
START_TEST(test_secret_link_cli)
{
    NEED_FUSE();
    ckh_scenario_free(scenario("ln -sf @SECRET@ \"$CKH_RESULT\"\n", "20s", ""));
    char cmd[2048], out[400], json[400];
    snprintf(out, sizeof out, "%s.out", dir);
    snprintf(json, sizeof json, "%s.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' run '%s/s.yaml' --json '%s' >'%s' 2>&1", CKH_CMD_CKH, dir, json, out);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    const char *files[] = {out, json};
    for (size_t k = 0; k < 2; k++) {
        char buf[65536];
        FILE *f = fopen(files[k], "r");
        ck_assert_ptr_nonnull(f);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        unlink(files[k]);
        ck_assert_msg(strstr(buf, "is a symbolic link, not a regular file"), "%s: %s", files[k], buf);
        ck_assert_msg(!strstr(buf, "TOPSECRET"), "%s: %s", files[k], buf);
    }
}
END_TEST

/* ---- what a program puts in place of its log ---- */

static const struct {
    const char *sh;   /* what replaces the log ($log) before the program fails */
    const char *want; /* quoted as its last output */
} logs[] = {
    {"rm -f \"$log\" && mkfifo \"$log\"", "its last output: [not read: the log is a FIFO, not a regular file]"},
    {"ln -sf @SECRET@ \"$log\"", "its last output: [not read: the log is a symbolic link, not a regular file]"},
    {"ln -sf /dev/zero \"$log\"", "its last output: [not read: the log is a symbolic link, not a regular file]"},
    {"rm -f \"$log\" && mkdir \"$log\"", "its last output: [not read: the log is a folder, not a regular file]"},
};

/* A failed program's last output is quoted from its log: whatever the
 * program put there instead is named, not opened (a FIFO made that read
 * wait for ever) nor followed. */
START_TEST(test_log_replaced)
{
    NEED_FUSE();
    char text[1024];
    snprintf(text, sizeof text, "echo " SECRET "-printed\nlog=$(dirname \"$CKH_RESULT\")/../logs/$CKH_NODE.$CKH_RUN.log\n"
             "%s\nexit 3\n", logs[_i].sh);
    struct ckh_report_result r;
    int rc = run(scenario(text, "20s", ""), &r);
    ck_assert_int_eq(rc, 0); /* a job that fails without faults is a FAIL of its own */
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_msg(r.message && strstr(r.message, "fails without faults: rank_0 exited with status 3") &&
                      strstr(r.message, logs[_i].want),
                  "message '%s'\n lacks '%s'", r.message, logs[_i].want);
    no_secret(&r);
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- what a program plants where ckh writes ---- */

/* Run 1's program plants links to a file of the user's where ckh creates
 * run 2's result file and log; ckh makes them afresh, never writing
 * through a link: the file is intact, and the job restarts and passes. */
START_TEST(test_planted_links_not_written)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("d=$(dirname \"$CKH_RESULT\")\nn=$((CKH_RUN + 1))\n"
                          "ln -sf @VICTIM@ \"$d/$CKH_NODE.$n.jsonl\"\nln -sf @VICTIM@ \"$d/../logs/$CKH_NODE.$n.log\"\n"
                          "exec sh @PROGRAMS@/cmd_job.sh 3\n", "30s",
                          "faults:\n  - {on: {op: rename, nth: 1}, do: kill}\n"), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 2);
    ckh_report_result_clear(&r);
    char buf[64] = "";
    FILE *f = fopen(victim, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "victim\n");
}
END_TEST

/* A folder planted where ckh creates run 2's result file is named as
 * what it is (exit 2), not written into nor removed. */
START_TEST(test_planted_folder)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("d=$(dirname \"$CKH_RESULT\")\nn=$((CKH_RUN + 1))\nmkdir -p \"$d/$CKH_NODE.$n.jsonl\"\n"
                          "exec sh @PROGRAMS@/cmd_job.sh 3\n", "30s",
                          "faults:\n  - {on: {op: rename, nth: 1}, do: kill}\n"), &r);
    ck_assert_msg(rc == CKH_EINVAL, "rc %s: %s", ckh_err_name(rc), r.message);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_msg(r.message && strstr(r.message, "cannot create $CKH_RESULT of rank_0 in run 2 (") &&
                      strstr(r.message, "): a program of an earlier run put a folder there"), "%s", r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- a program that writes much, as it should ---- */

/* 200,000 step records (about 6 MiB) written at once, lines cut at any
 * byte by the reads: read over several looks of the wait loop, every
 * record taken, the job passes. */
START_TEST(test_many_records)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("awk 'BEGIN { for (i = 1; i <= 200000; i++) printf(\"{\\\"kind\\\":\\\"step\\\",\\\"step\\\":%d}\\n\", i);\n"
                          "  printf(\"{\\\"kind\\\":\\\"final\\\",\\\"steps\\\":200000,\\\"values\\\":{\\\"n\\\":7}}\\n\") }' "
                          ">> \"$CKH_RESULT\"\n", "60s", ""), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- ckh's run folders ---- */

/* A folder named as a dead ckh's run folder whose marker is a FIFO, a
 * link to /dev/zero or a link to a secret: the sweep of stale run folders
 * (every `ckh run` starts with one) neither waits on it nor takes it for
 * ckh's, and removes the real stale folder beside it. */
START_TEST(test_sweep_planted_markers)
{
    pid_t dead = fork();
    ck_assert_int_ge(dead, 0);
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    static const char *const kinds[] = {"fifo", "zero", "secret", "real"};
    char path[4][600];
    for (int k = 0; k < 4; k++) {
        char marker[700];
        /* "ckh-PID-" and six characters, as ckh_tmp_make names them */
        snprintf(path[k], sizeof path[k], "%s/ckh-%ld-%cabcde", tmp, (long)dead, kinds[k][0]);
        ck_assert_int_eq(mkdir(path[k], 0700), 0);
        snprintf(marker, sizeof marker, "%.600s/.ckh-owner", path[k]);
        if (k == 0)
            ck_assert_int_eq(mkfifo(marker, 0600), 0);
        else if (k == 1)
            ck_assert_int_eq(symlink("/dev/zero", marker), 0);
        else if (k == 2)
            ck_assert_int_eq(symlink(secret, marker), 0);
        else {
            char text[64];
            snprintf(text, sizeof text, "ckh %ld 0\n", (long)dead);
            write_text(marker, text);
        }
    }
    ck_assert_int_eq(ckh_tmp_sweep(tmp), 1);
    struct stat st;
    for (int k = 0; k < 3; k++) {
        ck_assert_msg(stat(path[k], &st) == 0, "%s (%s marker) was removed", path[k], kinds[k]);
        ck_assert_int_eq(ckh_tmp_remove(path[k]), 0);
    }
    ck_assert_msg(stat(path[3], &st) != 0, "%s is left", path[3]);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("command_hostile");
    TCase *t = tcase_create("hostile");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, test_result_file, 0, (int)(sizeof results / sizeof results[0]));
    tcase_add_test(t, test_secret_link_cli);
    tcase_add_loop_test(t, test_log_replaced, 0, (int)(sizeof logs / sizeof logs[0]));
    tcase_add_test(t, test_planted_links_not_written);
    tcase_add_test(t, test_planted_folder);
    tcase_add_test(t, test_many_records);
    tcase_set_tags(t, "fuse");
    suite_add_tcase(s, t);
    TCase *folders = tcase_create("run-folders");
    tcase_add_checked_fixture(folders, setup, teardown);
    tcase_add_test(folders, test_sweep_planted_markers);
    suite_add_tcase(s, folders);
    return s;
}

int main(void)
{
    return ckh_test_run(hostile_suite());
}
