/* Tests for command jobs (harness/exec/command*.c): real programs as the
 * nodes of a job, their checkpoint directory served by ckhfs.
 *
 * The programs are tests/programs/cmd_saver.c (built as
 * build/programs/cmd_saver: a single-threaded saver with switches for
 * every misbehaviour tested here) and tests/programs/cmd_job.sh (a
 * shell-script job); a few tests write their own tiny scripts. Each test
 * writes its scenario into a fresh folder (the programs' working folder)
 * and runs it through ckh_harness_run or ckh_harness_replay, as `ckh run`
 * and `ckh replay` do, or through the ckh command for exit statuses.
 * After each test nothing of it may be mounted or running: the teardown
 * checks the mount table, and tests that start processes check their pids.
 * The cases that need FUSE are tagged "fuse" (CTest entry
 * test_command_fuse) and skipped, saying why, where it cannot be used
 * (tests/support/skip.h).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckhfs/ckhfs.h"
#include "exec/command_result.h"
#include "report.h"
#include "exec/runner.h"
#include "model/scenario.h"
#include "judge/judge.h"
#include "support/fuse.h"
#include "support/skip.h"

#ifndef CKH_CMD_SAVER
#define CKH_CMD_SAVER "build/programs/cmd_saver"
#endif
#ifndef CKH_CMD_CKH
#define CKH_CMD_CKH "build/ckh"
#endif
#ifndef CKH_CMD_PROGRAMS
#define CKH_CMD_PROGRAMS "tests/programs"
#endif

static char dir[256]; /* this test's folder: scenario and working folder */
/* Where programs write their pids: beside the working folder, not in it
 * (a program that writes there fails the job: test_writes_outside). */
static char pidfile[300];

/* ---- fixture ---- */


/* Mounts of ckhfs this process left (its temporary folders hold its pid). */
static int leftover_mounts(void)
{
    char mine[64];
    snprintf(mine, sizeof mine, "/ckh-%d-", (int)getpid());
    return ckh_test_ckhfs_mounts(mine);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ckh-test-command-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(pidfile, sizeof pidfile, "%s.pids", dir);
}

static void teardown(void)
{
    ck_assert_int_eq(leftover_mounts(), 0);
    errno = 0;
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1); /* no child of ours left, not even a zombie */
    ck_assert_int_eq(errno, ECHILD);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s.out'", dir, pidfile, dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *name, const char *text, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

/* Writes the scenario (printf-style) as <dir>/s.yaml and parses it. */
static struct ckh_scenario *scenario(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct ckh_scenario *scenario(const char *fmt, ...)
{
    char text[4096], path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    write_file("s.yaml", text, 0644);
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_file(path, NULL, &sc, &err);
    ck_assert_msg(rc == 0, "parse: %d:%d: %s", err.line, err.column, err.msg);
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

static const struct ckh_oracle_result *oracle(const struct ckh_report_result *r, const char *name)
{
    for (size_t i = 0; i < r->noracles; i++)
        if (!strcmp(r->oracles[i].name, name))
            return &r->oracles[i];
    return NULL;
}

/* The pids a program wrote to pidfile are all gone. */
static void pids_gone(void)
{
    const char *path = pidfile;
    FILE *f = fopen(path, "r");
    int pid, n = 0;
    ck_assert_ptr_nonnull(f);
    while (fscanf(f, "%d", &pid) == 1) {
        n++;
        ck_assert_msg(kill(pid, 0) != 0 && errno == ESRCH, "process %d is still there", pid);
    }
    fclose(f);
    ck_assert_int_gt(n, 0);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- jobs that complete ---- */

START_TEST(test_completes)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\", --pidfile, \"%s\"]\n  nodes: 2\n  timeout: 30s\n",
                          CKH_CMD_SAVER, pidfile), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 1);
    const struct ckh_oracle_result *ref = oracle(&r, "reference");
    ck_assert_ptr_nonnull(ref);
    /* Each rank's loss value and its checkpoint file's digest. */
    ck_assert_msg(strstr(ref->detail, "2 nodes match") && strstr(ref->detail, "4 final values"), "%s",
                  ref->detail);
    ck_assert(oracle(&r, "resume-equivalence")->passed);
    pids_gone();
    ckh_report_result_clear(&r);
}
END_TEST

START_TEST(test_shell_job_completes)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [sh, %s/cmd_job.sh, \"3\"]\n  nodes: 3\n  timeout: 30s\n",
                          CKH_CMD_PROGRAMS), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ckh_report_result_clear(&r);
}
END_TEST

/* Killed mid-write of its second checkpoint, the saver resumes from the
 * first and ends where the uninterrupted run ends. */
START_TEST(test_kill_mid_write_resumes)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\"]\n  timeout: 30s\n"
                          "faults:\n  - {on: {op: pwrite, path: /ckpt.0.tmp, nth: 6}, do: kill, when: mid-write}\n",
                          CKH_CMD_SAVER), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 2);
    ck_assert(oracle(&r, "faults-fired")->passed);
    ck_assert_ptr_nonnull(oracle(&r, "lost-work"));
    ck_assert(oracle(&r, "lost-work")->passed);
    ckh_report_result_clear(&r);
}
END_TEST

/* The n-th pwrite trigger lands on the same operation in 20 runs of a
 * single-threaded saver: the FAULT line and the op it fired on are the
 * same every time (pids aside). */
START_TEST(test_nth_pwrite_deterministic)
{
    NEED_FUSE();
    char first[512] = "";
    for (int k = 0; k < 20; k++) {
        struct ckh_scenario *sc = scenario("job:\n  command: [\"%s\", --chunks, \"8\"]\n  timeout: 30s\n"
                                           "faults:\n  - {on: {op: pwrite, nth: 11}, do: kill}\n",
                                           CKH_CMD_SAVER);
        char *buf = NULL, msg[512] = "";
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        struct ckh_run_options o = {0};
        ck_assert_int_eq(ckh_harness_replay(sc, &o, NULL, NULL, f, msg, sizeof msg), 0);
        fclose(f);
        ckh_scenario_free(sc);
        char *fault = strstr(buf, "FAULT");
        ck_assert_ptr_nonnull(fault);
        char *op = strstr(fault, "\n") + 1, *pid = strstr(op, "pid="), *end = strchr(op, '\n');
        char got[512];
        /* "n=0 rank_0 pid=123 pwrite /ckpt.0.tmp off=..." without the pid */
        snprintf(got, sizeof got, "%.*s | %.*s", (int)(strchr(fault, '\n') - fault), fault,
                 (int)(end - strchr(pid, ' ')), strchr(pid, ' '));
        if (k == 0)
            snprintf(first, sizeof first, "%s", got);
        ck_assert_str_eq(got, first);
        free(buf);
    }
    /* Save 1 (step 2) writes 8 chunks then the header; the 11th pwrite is
     * save 2's second chunk. */
    ck_assert_str_eq(first, "FAULT pwrite:kill_before /ckpt.0.tmp len=0 fault=0 |  pwrite /ckpt.0.tmp "
                            "off=4128 len=4096 -> -5 (EIO)");
}
END_TEST

/* rank_0's mkdir of the step folder is held by a delay while rank_1
 * writes its shard into an existing folder: rank_1's writes go on. Judged
 * by the order of `ckh replay`'s lines, not by time: a rank_1 pwrite lies
 * between rank_0's mkdir and the line where that mkdir was answered. The
 * folder rank_1 writes to is made first (rank_0 waits for it): the kernel
 * holds the root folder's lock across the held mkdir, so a name of the
 * root it has not looked up yet would wait for the mkdir (docs/SCENARIOS.md,
 * the delay fault). */
START_TEST(test_delay_holds_only_its_node)
{
    NEED_FUSE();
    write_file("held.sh",
               "set -e\n"
               "d=$CKH_CKPT_DIR\n"
               "printf '{\"kind\":\"step\",\"step\":1,\"epoch\":0}\\n' >> \"$CKH_RESULT\"\n"
               "if [ \"$RANK\" = 0 ]; then\n"
               "    until [ -d \"$d/shards\" ]; do sleep 0.05; done\n"
               "    mkdir \"$d/step_1\"\n"
               "    echo done > \"$d/shards/rank_0_done\"\n"
               "else\n"
               "    mkdir \"$d/shards\"\n"
               "    n=0\n"
               "    until [ -e \"$d/shards/rank_0_done\" ]; do\n"
               "        n=$((n + 1)); [ $n -lt 2000 ] || exit 3\n"
               "        echo $n >> \"$d/shards/rank_1\"\n"
               "        sleep 0.05\n"
               "    done\n"
               "fi\n"
               "printf '{\"kind\":\"final\",\"epochs\":1,\"steps\":1,\"total\":1}\\n' >> \"$CKH_RESULT\"\n",
               0644);
    struct ckh_scenario *sc = scenario("job:\n  command: [sh, held.sh]\n  nodes: 2\n  timeout: 60s\n"
                                       "faults:\n  - {on: {node: rank_0, op: mkdir, path: /step_1}, do: delay, "
                                       "duration: 3s}\nrestart: {max_restarts: 0}\n");
    char *buf = NULL, msg[512] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct ckh_run_options o = {0};
    ck_assert_int_eq(ckh_harness_replay(sc, &o, NULL, NULL, f, msg, sizeof msg), 0);
    fclose(f);
    ckh_scenario_free(sc);
    /* The mkdir's own line, then its answer. */
    const char *mk = NULL, *ans = NULL;
    for (const char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
        if (!mk && strstr(line, "rank_0 pid=") && strstr(line, " mkdir /step_1 "))
            mk = l;
        if (strstr(line, "rank_0 pid=") && strstr(line, " answered mkdir /step_1 "))
            ans = l;
    }
    ck_assert_msg(mk && ans && ans > mk, "%s", buf);
    ck_assert_msg(strstr(ans, "-> 0 after its delay"), "%s", buf);
    bool between = false;
    for (const char *w = strstr(mk, "rank_1 pid="); w && w < ans; w = strstr(w + 1, "rank_1 pid=")) {
        const char *e = strchr(w, '\n');
        const char *pw = strstr(w, " pwrite /shards/rank_1 ");
        between |= pw && (!e || pw < e);
    }
    ck_assert_msg(between, "no write of rank_1 while rank_0's mkdir was held:\n%s", buf);
    free(buf);
}
END_TEST

/* How many lines of `ckh replay`'s output for sc contain needle. */
static int replay_count(struct ckh_scenario *sc, const char *needle)
{
    char *buf = NULL, msg[512] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct ckh_run_options o = {0};
    ck_assert_msg(ckh_harness_replay(sc, &o, NULL, NULL, f, msg, sizeof msg) == 0, "%s", msg);
    fclose(f);
    ckh_scenario_free(sc);
    int n = 0;
    for (const char *p = strstr(buf, needle); p; p = strstr(p + 1, needle))
        n++;
    free(buf);
    return n;
}

/* The kernel keeps the names it looked up (ckhfs cache_names) unless a
 * rule can match a `stat`: then every path walk through /d reaches ckhfs
 * again, so an `nth` over stats counts what the program asked for. */
START_TEST(test_lookups_cached_unless_matched)
{
    NEED_FUSE();
    write_file("names.sh",
               "set -e\n"
               "mkdir \"$CKH_CKPT_DIR/d\"\n"
               "for i in 1 2 3 4 5; do echo x > \"$CKH_CKPT_DIR/d/f$i\"; done\n"
               "printf '{\"kind\":\"final\",\"epochs\":1,\"steps\":1,\"total\":1}\\n' >> \"$CKH_RESULT\"\n",
               0644);
    int cached = replay_count(scenario("job:\n  command: [sh, names.sh]\n  timeout: 30s\n"), " stat /d off=");
    int asked = replay_count(scenario("job:\n  command: [sh, names.sh]\n  timeout: 30s\nfaults:\n"
                                      "  - {on: {op: stat, path: /nothing}, do: errno, errno: EIO}\n"),
                             " stat /d off=");
    ck_assert_msg(cached <= 2 && asked >= cached + 5, "stat lines of /d: %d cached, %d asked", cached, asked);
}
END_TEST

/* ---- hangs ---- */

START_TEST(test_hang_reaped)
{
    NEED_FUSE();
    struct ckh_report_result r;
    uint64_t t0 = now_ms();
    int rc = run(scenario("job:\n  command: [\"%s\", --hang, --pidfile, \"%s\"]\n  timeout: 1s\n",
                          CKH_CMD_SAVER, pidfile), &r);
    uint64_t took = now_ms() - t0;
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    const struct ckh_oracle_result *h = oracle(&r, "hang");
    ck_assert_ptr_nonnull(h);
    ck_assert(!h->passed);
    ck_assert_msg(strstr(h->detail, "run 1 hung") && strstr(h->detail, "last op"), "%s", h->detail);
    ck_assert_msg(took >= 1000 && took < 20000, "took %llu ms", (unsigned long long)took);
    pids_gone(); /* the program and the child it left in its group */
    ckh_report_result_clear(&r);
}
END_TEST

/* A daemon that left the node's process group and session (setsid after
 * a double fork) is still found and reaped: ckh is the job's subreaper. */
START_TEST(test_escaped_daemon_reaped)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\", --escape, --pidfile, \"%s\"]\n  timeout: 1s\n",
                          CKH_CMD_SAVER, pidfile), &r);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    pids_gone(); /* the program, its child and the daemon */
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- bad input: a message naming what and where ---- */

static void expect_error(struct ckh_scenario *sc, int code, const char *want)
{
    struct ckh_report_result r;
    int rc = run(sc, &r);
    ck_assert_msg(rc == code, "rc %s, want %s: %s", ckh_err_name(rc), ckh_err_name(code),
                  r.message ? r.message : "");
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_msg(r.message && strstr(r.message, want), "message '%s'\n lacks '%s'", r.message, want);
    ckh_report_result_clear(&r);
}

START_TEST(test_missing_command)
{
    NEED_FUSE();
    char want[800];
    snprintf(want, sizeof want, "%s/s.yaml:2:12: the program 'no-such-program' is not found on PATH", dir);
    expect_error(scenario("job:\n  command: [no-such-program, x]\n"), CKH_EINVAL, want);
    snprintf(want, sizeof want, "%s/s.yaml:2:12: the program './gone.sh' does not exist (looked for %s/./gone.sh)",
             dir, dir);
    expect_error(scenario("job:\n  command: [./gone.sh]\n"), CKH_EINVAL, want);
}
END_TEST

START_TEST(test_not_executable)
{
    NEED_FUSE();
    write_file("plain.sh", "#!/bin/sh\nexit 0\n", 0644);
    expect_error(scenario("job:\n  command: [./plain.sh]\n"), CKH_EINVAL,
                 "the program './plain.sh' (");
    expect_error(scenario("job:\n  command: [./plain.sh]\n"), CKH_EINVAL,
                 "cannot be run: Permission denied (make it executable with chmod +x");
    /* Executable, but no interpreter line: the exec itself fails. */
    write_file("noshebang.sh", "exit 0\n", 0755);
    expect_error(scenario("job:\n  command: [./noshebang.sh]\n"), CKH_EINVAL,
                 "rank_0: cannot run './noshebang.sh'");
}
END_TEST

/* The program named by a path that is a folder, and a bare name that PATH
 * (job.env's own, with an empty entry meaning the working folder) finds
 * only as a file that cannot be run, or not at all. */
START_TEST(test_program_resolution_edges)
{
    NEED_FUSE();
    char sub[400], want[1200];
    snprintf(sub, sizeof sub, "%s/adir", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(want, sizeof want, "%s/s.yaml:2:12: the program './adir' (%s/./adir) cannot be run: Is a directory", dir,
             dir);
    expect_error(scenario("job:\n  command: [./adir]\n"), CKH_EINVAL, want);
    /* a bare name on job.env's PATH: a plain file there is not executable */
    write_file("adir/tool", "#!/bin/sh\nexit 0\n", 0644);
    snprintf(want, sizeof want, "the program 'tool' is not executable on PATH (/nonexistent:%s/s.yaml:%s)", dir, sub);
    expect_error(scenario("job:\n  command: [tool]\n  env: {PATH: \"/nonexistent:%s/s.yaml:%s\"}\n", dir, sub),
                 CKH_EINVAL, want);
    /* a folder named like the program is not one either */
    snprintf(want, sizeof want, "the program 'adir' is not executable on PATH (%s)", dir);
    expect_error(scenario("job:\n  command: [adir]\n  env: {PATH: \"%s\"}\n", dir), CKH_EINVAL, want);
    /* an empty PATH entry is the working folder; a name found nowhere */
    expect_error(scenario("job:\n  command: [tool]\n  env: {PATH: \":/nonexistent\"}\n"), CKH_EINVAL,
                 "the program 'tool' is not found on PATH (:/nonexistent)");
}
END_TEST

START_TEST(test_result_not_json)
{
    NEED_FUSE();
    expect_error(scenario("job:\n  command: [\"%s\", --garbage]\n", CKH_CMD_SAVER), CKH_EPARSE,
                 "$CKH_RESULT of rank_0 in run 1:1:1: expected");
}
END_TEST

START_TEST(test_no_final_record)
{
    NEED_FUSE();
    char want[800];
    snprintf(want, sizeof want, "%s/s.yaml:2:12: rank_0 exited with status 0 in run 1 without a final "
             "result record", dir);
    expect_error(scenario("job:\n  command: [\"%s\", --no-final]\n", CKH_CMD_SAVER), CKH_EINVAL, want);
}
END_TEST

/* A write outside the checkpoint directory is the program's when a
 * process of the job made it: named with its node and command. A file
 * that another process writes into the folder while the job runs is not
 * the job's. (Without fanotify, which needs CAP_SYS_ADMIN, whatever
 * appeared is named, and the message says ckh cannot tell who wrote it.) */
START_TEST(test_writes_outside)
{
    NEED_FUSE();
    char want[800];
    bool watched = geteuid() == 0;
    if (watched)
        snprintf(want, sizeof want, "a program wrote outside its checkpoint directory: rank_0 (cmd_saver) wrote "
                 "%s/stray.ckpt during the fault-free reference run", dir);
    else
        snprintf(want, sizeof want, "a program wrote outside its checkpoint directory: %s/stray.ckpt appeared", dir);
    expect_error(scenario("job:\n  command: [\"%s\", --outside]\n", CKH_CMD_SAVER), CKH_EINVAL, want);
    if (!watched)
        return;
    /* Another process (this test's child, no process of the job) writes
     * beside the scenario while the reference run waits for it: through a
     * FIFO outside the folder the job says it runs, the child writes, the
     * job goes on once the file is there. */
    char text[2400], fifo[600], swp[600];
    snprintf(fifo, sizeof fifo, "%s.fifo", dir);
    snprintf(swp, sizeof swp, "%s/notes.swp", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    snprintf(text, sizeof text, "#!/bin/sh\n"
             "if [ ! -f %s ]; then echo go > %s; while [ ! -f %s ]; do sleep 0.05; done; fi\n"
             "exec %s\n", swp, fifo, swp, CKH_CMD_SAVER);
    write_file("bystander.sh", text, 0755);
    pid_t editor = fork();
    if (editor == 0) {
        char go[8];
        int fd = open(fifo, O_RDONLY);
        if (fd < 0 || read(fd, go, sizeof go) <= 0)
            _exit(1);
        FILE *f = fopen(swp, "w");
        _exit(f && fputs("editor\n", f) >= 0 && fclose(f) == 0 ? 0 : 1);
    }
    struct ckh_report_result r;
    ck_assert_int_eq(run(scenario("job:\n  command: [./bystander.sh]\n"), &r), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ckh_report_result_clear(&r);
    waitpid(editor, NULL, 0); /* ckh, a subreaper that reaps strays, may have reaped it already */
    struct stat sb;
    ck_assert_msg(stat(swp, &sb) == 0 && sb.st_size == 7, "the editor child wrote no %s", swp);
    unlink(fifo);
}
END_TEST

/* A program that saves a step, then records it (tests/programs/
 * prog_step_record.sh), killed between the two: its restart resumes after
 * the saved step, which nobody recorded. That is an exact resume, not a
 * missing step; a restart that skips a step (resumes one past what it
 * restored) still fails. */
START_TEST(test_killed_between_save_and_record)
{
    NEED_FUSE();
    struct ckh_report_result r;
    const char *src = getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    const char *faults = "faults:\n  - on: {node: rank_0, op: rename, nth: 3}\n    do: kill\n    when: after\n"
                         "restart: {max_restarts: 1}\n";
    char text[1400];
    snprintf(text, sizeof text, "job:\n  command: [/bin/sh, %s/tests/programs/prog_step_record.sh, \"6\"]\n%s", src,
             faults);
    ck_assert_int_eq(run(scenario("%s", text), &r), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    const struct ckh_oracle_result *o = oracle(&r, "resume-equivalence");
    ck_assert_msg(o && o->passed && strstr(o->detail, "1 step restored from a checkpoint saved just before a kill"),
                  "%s", o ? o->detail : "no resume-equivalence");
    ckh_report_result_clear(&r);

    snprintf(text, sizeof text, "job:\n  command: [/bin/sh, %s/tests/programs/prog_step_record.sh, \"6\", "
             "--skip-on-resume]\n%s", src, faults);
    ck_assert_int_eq(run(scenario("%s", text), &r), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.message, "step 3: rank_0 missing from the resumed run: rank_0 recorded no step 3 (the "
                                "reference run did)");
    ckh_report_result_clear(&r);
}
END_TEST

/* A saver that publishes `latest` as an absolute symlink into its
 * checkpoint directory (each run mounts it in another folder) and writes
 * bytes that differ from run to run: by default the files compare as a
 * set of names and link targets relative to the disk, so the job passes;
 * compare.content asks for the bytes, and then the difference is named. */
static const char symlink_job[] =
    "#!/bin/sh\n"
    "d=$CKH_CKPT_DIR\n"
    "for s in 1 2 3; do\n"
    "  echo \"step $s written by run $CKH_RUN\" >\"$d/step_$s\"\n"
    "  ln -sfn \"$d/step_$s\" \"$d/latest.tmp\" && mv -T \"$d/latest.tmp\" \"$d/latest\"\n"
    "  printf '{\"kind\":\"step\",\"step\":%d}\\n' \"$s\" >>\"$CKH_RESULT\"\n"
    "done\n"
    "printf '{\"kind\":\"final\",\"steps\":3}\\n' >>\"$CKH_RESULT\"\n";

START_TEST(test_files_compared_by_name)
{
    NEED_FUSE();
    struct ckh_report_result r;
    write_file("job.sh", symlink_job, 0755);
    const char *job = "job:\n  command: [./job.sh]\nfaults:\n  - on: {node: rank_0, op: rename, nth: 2}\n"
                      "    do: kill\nrestart: {max_restarts: 1}\n";
    ck_assert_int_eq(run(scenario("%s", job), &r), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ckh_report_result_clear(&r);
    ck_assert_int_eq(run(scenario("%scompare: {content: [\"step_*\"]}\n", job), &r), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_msg(r.message && strstr(r.message, "final value file:step_") && strstr(r.message, "differs"), "%s",
                  r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* compare.ignore's file globs leave those files out of the comparison (a
 * content rule for them no longer fails the run), and without a mount
 * namespace (CKH_NO_NAMESPACE=1) an absolute link into the run's own
 * mount is compared by the disk and the path in it, so runs that mount
 * their disk in other folders still agree. */
START_TEST(test_files_ignored_and_links_without_namespace)
{
    NEED_FUSE();
    struct ckh_report_result r;
    write_file("job.sh", symlink_job, 0755);
    const char *job = "job:\n  command: [./job.sh]\nfaults:\n  - on: {node: rank_0, op: rename, nth: 2}\n"
                      "    do: kill\nrestart: {max_restarts: 1}\n";
    ck_assert_int_eq(run(scenario("%scompare: {content: [\"step_*\"], ignore: [\"file:step_*\"]}\n", job), &r), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ckh_report_result_clear(&r);
    /* a glob that matches nothing leaves the content rule in force */
    ck_assert_int_eq(run(scenario("%scompare: {content: [\"step_*\"], ignore: [\"file:other/*\"]}\n", job), &r), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_msg(r.message && strstr(r.message, "final value file:step_"), "%s", r.message);
    ckh_report_result_clear(&r);

    ck_assert_int_eq(setenv("CKH_NO_NAMESPACE", "1", 1), 0);
    ck_assert_int_eq(run(scenario("%s", job), &r), 0);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ckh_report_result_clear(&r);
    ck_assert_int_eq(run(scenario("%scompare: {content: [\"step_*\"]}\n", job), &r), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ckh_report_result_clear(&r);
    unsetenv("CKH_NO_NAMESPACE");
}
END_TEST

/* job.command's per-node entries and the faults must fit the job's nodes:
 * an entry for a node the job does not have, a node left without a
 * program, and a fault for a node the job lacks are refused naming the
 * line. */
START_TEST(test_command_entries_fit_nodes)
{
    NEED_FUSE();
    char want[800];
    snprintf(want, sizeof want, "%s/s.yaml:2:21: job.command names rank_5, which the job does not have (its nodes: "
             "rank_0 .. rank_1)", dir);
    expect_error(scenario("job:\n  command: {rank_5: [/bin/true], default: [/bin/true]}\n  nodes: 2\n"), CKH_EINVAL,
                 want);
    snprintf(want, sizeof want, "%s/s.yaml:2:21: job.command gives rank_1 no program (name it, or add a 'default')",
             dir);
    expect_error(scenario("job:\n  command: {rank_0: [/bin/true]}\n  nodes: 2\n"), CKH_EINVAL, want);
    /* a fault for a node the job does not have, named where the fault is */
    write_file("fin.sh", "#!/bin/sh\nprintf '{\"kind\":\"final\",\"steps\":0}\\n' >>\"$CKH_RESULT\"\n", 0755);
    snprintf(want, sizeof want, "%s/s.yaml:5:5: the fault names node 'rank_7', which the job does not have (its nodes: "
             "rank_0, rank_1)", dir);
    expect_error(scenario("job:\n  command: [./fin.sh]\n  nodes: 2\nfaults:\n  - {on: {node: rank_7, op: write}, "
                          "do: kill}\n"),
                 CKH_EINVAL, want);
}
END_TEST

/* A program that reports saves but leaves nothing in $CKH_CKPT_DIR (nor
 * anywhere ckh watches) cannot be judged: ckh says where its checkpoints
 * are not. */
START_TEST(test_saves_with_nothing_on_disk)
{
    NEED_FUSE();
    write_file("nosave.sh",
               "#!/bin/sh\n"
               "printf '{\"kind\":\"save\",\"step\":1,\"epoch\":0,\"ok\":true}\\n' >>\"$CKH_RESULT\"\n"
               "printf '{\"kind\":\"step\",\"step\":1}\\n' >>\"$CKH_RESULT\"\n"
               "printf '{\"kind\":\"final\",\"steps\":1}\\n' >>\"$CKH_RESULT\"\n",
               0755);
    expect_error(scenario("job:\n  command: [./nosave.sh]\n"), CKH_EINVAL,
                 "the reference run recorded 1 successful save but left nothing under $CKH_CKPT_DIR: the program "
                 "writes its checkpoints elsewhere");
}
END_TEST

/* ckh replay of a command job, its operations filtered by node (name or
 * index) and by operation; a node or an operation that does not exist is
 * refused. */
START_TEST(test_replay_filters)
{
    NEED_FUSE();
    const char *job = "job:\n  command: [\"%s\"]\n  nodes: 2\n  timeout: 30s\n";
    struct {
        const char *node, *op;
        int rc;
        const char *msg;
    } cases[] = {
        {"rank_1", NULL, 0, NULL}, {"1", "pwrite", 0, NULL}, {NULL, "rename", 0, NULL},
        {"rank_7", NULL, CKH_EINVAL, "unknown node 'rank_7'"}, {NULL, "scribble", CKH_EINVAL, "unknown operation 'scribble'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ckh_scenario *sc = scenario(job, CKH_CMD_SAVER);
        char *buf = NULL, msg[512] = "";
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        struct ckh_run_options o = {0};
        int rc = ckh_harness_replay(sc, &o, cases[i].node, cases[i].op, f, msg, sizeof msg);
        fclose(f);
        ckh_scenario_free(sc);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d: %s", i, rc, msg);
        if (cases[i].msg)
            ck_assert_str_eq(msg, cases[i].msg);
        if (rc == 0) {
            ck_assert_msg(strstr(buf, "# run 1"), "%s", buf);
            /* every operation line shown is of the node and operation asked */
            int shown = 0;
            for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                if (strncmp(l, "n=", 2) != 0)
                    continue;
                shown++;
                char line[256];
                snprintf(line, sizeof line, "%.*s", (int)(strchrnul(l, '\n') - l), l);
                if (cases[i].node)
                    ck_assert_msg(strstr(line, " rank_1 "), "case %zu: %s", i, line);
                if (cases[i].op)
                    ck_assert_msg(strstr(line, cases[i].op), "case %zu: %s", i, line);
            }
            ck_assert_msg(shown > 0, "case %zu shows no operation:\n%s", i, buf);
        }
        free(buf);
    }
}
END_TEST

/* A job whose fault-free run fails is a found bug, a FAIL of its own (not
 * bad input): the verdict says which node failed and what it printed. A
 * two-rank job where only rank 1 fails names rank 1 alone. */
START_TEST(test_reference_fails)
{
    NEED_FUSE();
    struct ckh_report_result r;
    write_file("fail.sh", "#!/bin/sh\necho 'no module named torch' >&2\nexit 4\n", 0755);
    ck_assert_int_eq(run(scenario("job:\n  command: [./fail.sh]\n"), &r), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "outcome");
    ck_assert_str_eq(r.message, "fails without faults: rank_0 exited with status 4; its last output: "
                                "no module named torch");
    ck_assert_msg(oracle(&r, "outcome") && !oracle(&r, "outcome")->passed, "the outcome oracle is recorded");
    ckh_report_result_clear(&r);

    char text[600];
    snprintf(text, sizeof text, "#!/bin/sh\nif [ \"$RANK\" = 1 ]; then\n  echo \"FileNotFoundError: "
             "$CKH_CKPT_DIR/run\" >&2\n  exit 1\nfi\nexec %s\n", CKH_CMD_SAVER);
    write_file("rank1.sh", text, 0755);
    ck_assert_int_eq(run(scenario("job:\n  nodes: 2\n  command: [./rank1.sh]\n"), &r), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_msg(r.message && !strncmp(r.message, "fails without faults: rank_1 exited with status 1; its last "
                                        "output: FileNotFoundError: ", 77) && !strstr(r.message, "rank_0"),
                  "message '%s'", r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* Runs fn in a child in its own mount namespace whose /dev has no fuse
 * (root only); returns the child's exit status, or -1 when the namespace
 * could not be made (the test then only notes it). */
static int without_fuse(int (*fn)(void))
{
    pid_t p = fork();
    if (p == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("tmpfs", "/dev", "tmpfs", 0, "size=1m") != 0)
            _exit(99);
        _exit(fn());
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) != 99 ? WEXITSTATUS(st) : -1;
}

static int harness_without_fuse(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    if (ckh_scenario_parse_file(path, NULL, &sc, &err) != 0)
        return 10;
    struct ckh_report_result r;
    struct ckh_run_options o = {0};
    ckh_report_result_init(&r);
    int rc = ckh_harness_run(sc, &o, &r);
    int st = rc == CKH_ELIMIT && r.message &&
                     strstr(r.message, "FUSE cannot be used here: FUSE is not available: /dev/fuse is missing")
                 ? 0 : 11;
    ckh_report_result_clear(&r);
    ckh_scenario_free(sc);
    return st;
}

static int cli_without_fuse(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    pid_t p = fork();
    if (p == 0) {
        char out[600];
        snprintf(out, sizeof out, "%s.out", dir); /* /dev/null is gone in this namespace */
        int null = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(null, 1);
        execl(CKH_CMD_CKH, "ckh", "run", path, (char *)NULL);
        _exit(98);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 97;
}

START_TEST(test_fuse_missing)
{
    NEED_FUSE();
    ckh_scenario_free(scenario("job:\n  command: [\"%s\"]\n", CKH_CMD_SAVER));
    int st = without_fuse(harness_without_fuse);
    if (st < 0)
        CKH_SKIP("no private mount namespace without /dev/fuse can be made here (it needs root)");
    ck_assert_int_eq(st, 0);
    ck_assert_int_eq(without_fuse(cli_without_fuse), 3); /* the environment's limit */
}
END_TEST

/* Exit statuses of the ckh command: 2 for bad input. */
START_TEST(test_cli_exit_status)
{
    NEED_FUSE();
    char path[512], cmd[1200];
    ckh_scenario_free(scenario("job:\n  command: [no-such-program]\n"));
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    snprintf(cmd, sizeof cmd, "'%s' run '%s' >/dev/null 2>&1", CKH_CMD_CKH, path);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    ckh_scenario_free(scenario("job:\n  command: [\"%s\"]\n", CKH_CMD_SAVER));
    st = system(cmd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

/* The first pid in pidfile once it holds n pids (waits up to 30 s). */
static int wait_pids(int n)
{
    for (int k = 0; k < 3000; k++) {
        FILE *f = fopen(pidfile, "r");
        int pid, got = 0, first = 0;
        while (f && fscanf(f, "%d", &pid) == 1)
            if (got++ == 0)
                first = pid;
        if (f)
            fclose(f);
        if (got >= n)
            return first;
        usleep(10000);
    }
    return 0;
}

/* What comes after name= in process pid's environment ("" when none). */
static void env_of(int pid, const char *name, char *out, size_t n)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[len] = '\0';
    for (size_t at = 0; at < len; at += strlen(buf + at) + 1)
        if (!strncmp(buf + at, name, strlen(name)) && buf[at + strlen(name)] == '=')
            snprintf(out, n, "%s", buf + at + strlen(name) + 1);
}

/* ^C at a terminal (SIGINT to ckh's process group) while a command job
 * runs: ckh exits 130, and nothing of the job is left running or mounted. */
START_TEST(test_sigint_cleans_up)
{
    NEED_FUSE();
    char path[512], ckpt[1024], run_dir[1024], line[2048];
    ckh_scenario_free(scenario("job:\n  command: [\"%s\", --hang, --pidfile, \"%s\"]\n  timeout: 60s\n",
                               CKH_CMD_SAVER, pidfile));
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    pid_t p = fork();
    if (p == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(CKH_CMD_CKH, "ckh", "run", path, (char *)NULL);
        _exit(98);
    }
    setpgid(p, p);
    int prog = wait_pids(2); /* the program and the child it left */
    ck_assert_int_gt(prog, 0);
    /* The program's TMPDIR lies in the run folder (its CKH_CKPT_DIR is
     * /ckh/ckpt where it has its own mount namespace). */
    env_of(prog, "TMPDIR", ckpt, sizeof ckpt);
    ck_assert_msg(!strncmp(ckpt, "/tmp/ckh-", 9), "TMPDIR=%s", ckpt);
    snprintf(run_dir, sizeof run_dir, "%.*s", (int)(strchr(ckpt + 9, '/') - ckpt), ckpt);
    kill(-p, SIGINT);
    int st = 0;
    ck_assert_int_eq(waitpid(p, &st, 0), p);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %x", st);
    pids_gone();
    FILE *f = fopen("/proc/self/mounts", "r");
    while (f && fgets(line, sizeof line, f))
        ck_assert_msg(!strstr(line, run_dir), "left mounted: %s", line);
    fclose(f);
    struct stat sb;
    ck_assert_msg(stat(run_dir, &sb) != 0, "%s is left", run_dir);
}
END_TEST

/* Faults of the catalogue on the saver: the job completes after `runs`
 * runs and ends where the uninterrupted run ends, or (a full disk stays
 * full) fails as the scenario expects. */
static const struct {
    const char *fault;
    const char *args;
    unsigned runs;
    const char *expect; /* extra scenario lines */
} survived[] = {
    {"{on: {op: fsync, path: /ckpt.0.tmp, nth: 2}, do: errno, errno: EIO}", "", 2},
    {"{on: {op: fsync, nth: 1}, do: fsync-fail}", "", 2},
    {"{on: {op: pwrite, nth: 3}, do: short-write, bytes: 100}", "", 1},
    {"{on: {op: rename, nth: 1}, do: delay, duration: 200ms}", "", 1},
    {"{on: {op: open, path: /ckpt.0.tmp, nth: 2}, do: disk-full, after: 6KiB}", "", 2,
     "restart: {max_restarts: 1}\nexpect: {outcome: job-fails}\n"},
    {"{on: {op: rename, nth: 2}, do: crash, keep: random}", "", 2},
    {"{on: {op: pwrite, nth: 7}, do: kill, when: after}", "", 2},
    {"{on: {time: 300ms}, do: kill}", "--term-save", 2},
    {"{on: {step: 4}, do: power-loss, keep: cache}", "--term-save", 2},
};

START_TEST(test_faults_survived)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\"%s%s]\n  timeout: 30s\nfaults:\n  - %s\n%s", CKH_CMD_SAVER,
                          survived[_i].args[0] ? ", " : "", survived[_i].args, survived[_i].fault,
                          survived[_i].expect ? survived[_i].expect : ""), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s: %s", survived[_i].fault,
                  r.message ? r.message : "");
    ck_assert_msg(r.runs == survived[_i].runs, "%s: %u runs", survived[_i].fault, r.runs);
    ck_assert(oracle(&r, "faults-fired")->passed);
    ckh_report_result_clear(&r);
}
END_TEST

/* An at-rest fault between the runs: the restarted saver finds its
 * checkpoint damaged and refuses it; the job fails as expected. */
START_TEST(test_at_rest_corrupt)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\"]\n  timeout: 30s\n"
                          "faults:\n  - {on: {op: rename, nth: 2}, do: kill}\n"
                          "  - {on: {run: 2}, do: corrupt, mode: bit-flip, path: /ckpt.0, offset: 100, bit: 1}\n"
                          "restart: {max_restarts: 1}\nexpect: {outcome: job-fails}\n", CKH_CMD_SAVER), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 2);
    ck_assert(oracle(&r, "faults-fired")->passed);
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- faults on real processes ---- */

/* Preempted after step 3, the saver saves and exits; the restart resumes. */
START_TEST(test_sigterm_preemption)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\", --term-save, --every, \"5\", --steps, \"8\"]\n"
                          "  timeout: 30s\n"
                          "faults:\n  - {on: {node: rank_0, step: 3}, do: sigterm, grace: 10s}\n",
                          CKH_CMD_SAVER), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 2);
    ck_assert(oracle(&r, "resume-equivalence")->passed);
    ckh_report_result_clear(&r);
}
END_TEST

/* An atomic saver survives a power loss that keeps only what was synced. */
START_TEST(test_power_loss_atomic)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\"]\n  timeout: 30s\n"
                          "faults:\n  - {on: {op: rename, nth: 2}, do: power-loss, keep: synced}\n",
                          CKH_CMD_SAVER), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 2);
    ckh_report_result_clear(&r);
}
END_TEST

/* A saver that overwrites its checkpoint in place is caught by verify
 * after the kill (committed) and cannot load it on the restart. */
START_TEST(test_verify_catches_torn_checkpoint)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [\"%s\", --direct]\n  timeout: 30s\n"
                          "faults:\n  - {on: {op: pwrite, path: /ckpt.0, nth: 6}, do: kill, when: mid-write}\n"
                          "verify: [\"%s\", --verify]\n"
                          "restart: {max_restarts: 1}\nexpect: {outcome: job-fails}\n",
                          CKH_CMD_SAVER, CKH_CMD_SAVER), &r);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_str_eq(r.failed_oracle, "committed");
    ck_assert_msg(strstr(r.message, "after the crash in run 1: verify (") &&
                      strstr(r.message, "exited with status 1: verify: a checkpoint is torn"),
                  "%s", r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* restart.scope: failed restarts only the node that failed. */
START_TEST(test_restart_scope_failed)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [sh, %s/cmd_job.sh, \"4\"]\n  nodes: 2\n  timeout: 30s\n"
                          "faults:\n  - {on: {node: rank_1, op: rename, nth: 2}, do: kill}\n"
                          "restart: {scope: failed}\n", CKH_CMD_PROGRAMS), &r);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 2);
    ckh_report_result_clear(&r);
}
END_TEST

/* A program's temporary files go to the execution's own TMPDIR, removed
 * with the run folder: a saver's mktemp leaves nothing in the TMPDIR
 * ckh was started with. */
START_TEST(test_programs_get_own_tmpdir)
{
    NEED_FUSE();
    char user_tmp[600];
    snprintf(user_tmp, sizeof user_tmp, "%s/user_tmp", dir);
    ck_assert_int_eq(mkdir(user_tmp, 0700), 0);
    const char *was = getenv("TMPDIR");
    char *saved = was ? strdup(was) : NULL;
    setenv("TMPDIR", user_tmp, 1);
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [sh, -c, 'mktemp >/dev/null && exec sh %s/cmd_job.sh 2']\n"
                          "  timeout: 30s\n", CKH_CMD_PROGRAMS), &r);
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
    ck_assert_msg(rc == 0 && r.verdict == CKH_VERDICT_PASS, "%s", r.message ? r.message : "");
    DIR *d = opendir(user_tmp);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        ck_assert_msg(!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."), "left in TMPDIR: %s", de->d_name);
    closedir(d);
    rmdir(user_tmp);
    ckh_report_result_clear(&r);
}
END_TEST

/* A command job restarted with another world size is judged by the
 * samples it records, or refused: never passed unjudged. cmd_job.sh
 * records sample ids but no dataset size. */
START_TEST(test_world_size_unjudged_refused)
{
    NEED_FUSE();
    struct ckh_report_result r;
    int rc = run(scenario("job:\n  command: [sh, %s/cmd_job.sh, \"4\"]\n  nodes: 2\n  timeout: 30s\n"
                          "faults:\n  - {on: {node: rank_1, op: rename, nth: 2}, do: kill}\n"
                          "restart: {world_size: 1}\n", CKH_CMD_PROGRAMS), &r);
    ck_assert_int_eq(rc, CKH_EINVAL);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_ERROR);
    ck_assert_msg(strstr(r.message, "s.yaml:7:23: restart.world_size: the job restarted with 1 rank after 2 but "
                                    "reported no sample ids and dataset size"), "%s", r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* The simulator refuses sigterm by name. */
START_TEST(test_sim_refuses_sigterm)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run(scenario("job: {workload: seed-pipeline}\n"
                                  "faults:\n  - {on: {op: fsync}, do: sigterm}\n"), &r),
                     CKH_EINVAL);
    ck_assert_msg(strstr(r.message, "s.yaml:3:5: 'do: sigterm' is delivered only by command jobs (job.command), "
                                    "not by the simulator: "), "%s", r.message);
    ckh_report_result_clear(&r);
}
END_TEST

/* ---- the grammar ---- */

static const struct {
    const char *text;
    int line, column;
    const char *msg;
} bad[] = {
    {"job: {workload: seed-pipeline, command: [x]}\n", 1, 17,
     "give either 'workload' (a simulated job) or 'command' (a program per node), not both"},
    {"job: {command: x}\n", 1, 16,
     "'job.command' expects a non-empty list of arguments such as [python3, train.py] (no shell: [sh, -c, "
     "\"...\"] for one), got 'x'"},
    {"job: {command: {worker: [x]}}\n", 1, 17,
     "'job.command' keys are node names (rank_0, rank_1, ...) or 'default', got 'worker'"},
    {"job: {command: [x], env: {RANK: 3}}\n", 1, 33,
     "'job.env' may not set RANK: ckh sets it for every node (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, "
     "MASTER_PORT, CKH_*; docs/SCENARIOS.md, \"Command jobs\")"},
    {"job: {command: [x], backend: minidb}\n", 1, 30,
     "'job.backend' does not apply to a command job: the program does its own checkpoint I/O"},
    {"job: {workload: seed-pipeline, env: {A: b}}\n", 1, 37, "'job.env' applies to command jobs only (job.command)"},
    {"job: {workload: seed-pipeline, checkpoint_mount: /ckh/ckpt}\n", 1, 50,
     "'job.checkpoint_mount' applies to command jobs only (job.command)"},
    {"job: {command: [x], checkpoint_mount: /ckh/../etc}\n", 1, 39,
     "'job.checkpoint_mount' expects an absolute folder path other than '/', without '.', '..', '//' or a "
     "trailing '/' (such as /ckh/ckpt), got '/ckh/../etc'"},
    {"job: {command: [x]}\nfaults: [{on: {phase: save}, do: kill}]\n", 2, 23,
     "'on.phase' does not apply to a command job: a real program announces no phases; use 'path', 'step' or "
     "'epoch'"},
    {"job: {command: [x]}\nfaults: [{on: {step: 3, nth: 2}, do: kill}]\n", 2, 30,
     "'on.nth' needs 'op' or 'path': a trigger on the program's progress (step, epoch or time alone) fires once"},
    {"job: {command: [x], nodes: 2}\nfaults: [{do: die-in-collective}]\n", 2, 15,
     "'do: die-in-collective' is delivered only by the simulator and the real platform (--platform real), not by "
     "command jobs (job.command): a command job's processes talk over their own network (gloo, NCCL), which ckh "
     "does not see; kill a rank instead"},
    {"job: {workload: seed-pipeline}\nverify: [x]\n", 2, 9,
     "'verify' applies to command jobs only (job.command); a simulated job's workload checks its own disks"},
    {"job: {workload: seed-pipeline}\nrestart: {scope: failed}\n", 2, 18,
     "'restart.scope' applies to command jobs only (job.command); a simulated job restarts its unfinished "
     "nodes, every rank of a group"},
    {"job: {command: [x]}\ncompare: {content: [\"/abs/*\"]}\n", 2, 21,
     "'compare.content' expects globs relative to the checkpoint directory (such as '*.json' or 'latest'; "
     "'**' is not special, '*' does not cross '/'), got '/abs/*'"},
    {"job: {workload: seed-pipeline}\ncompare: {content: [latest]}\n", 2, 21,
     "'compare.content' names checkpoint files, which are compared for command jobs only (job.command)"},
    {"job: {command: [x]}\ncompare: {ignore: [\"file:/abs\"]}\n", 2, 20,
     "'compare.ignore' expects 'file:' and a glob relative to the checkpoint directory (such as 'file:logs/*'), "
     "got 'file:/abs'"},
    {"job: {workload: seed-pipeline}\nexplore: {check: verify}\n", 2, 10,
     "'explore' applies to command jobs only (job.command); a backend's crash states are explored by ckh "
     "validate-backend"},
    {"job: {command: [x]}\nfaults: [{on: {op: write}, do: kill}]\nexplore: {}\n", 3, 10,
     "'explore' makes its own crashes: a scenario with 'explore' has no 'faults'"},
    {"job: {command: [x]}\nexplore: {check: verify}\n", 2, 10, "'explore.check: verify' needs a 'verify:' command"},
    {"job: {command: [x]}\nexplore: {from_step: 5, to_step: 2}\n", 2, 10,
     "'explore.from_step' (5) is past 'explore.to_step' (2)"},
    {"job: {command: [x]}\nexplore: {check: maybe}\n", 2, 18,
     "'explore.check' got unknown value 'maybe'; expected one of: auto, verify, restart"},
    {"job: {command: [x]}\nexplore: {crashes: sometimes}\n", 2, 20,
     "'explore.crashes' got unknown value 'sometimes'; expected one of: all, crash, power-loss, none"},
    {"job: {command: [x]}\nexplore: {others: asleep}\n", 2, 19,
     "'explore.others' got unknown value 'asleep'; expected one of: killed, running"},
    {"job: {command: [x]}\nexplore: {symptom: x}\n", 2, 20,
     "'explore.symptom' names what a failing state says: it needs 'explore.expect: fail'"},
};

START_TEST(test_grammar_errors)
{
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    const char *t = bad[_i].text;
    ck_assert_int_eq(ckh_scenario_parse_string(t, strlen(t), "b.yaml", NULL, &sc, &err), CKH_EINVAL);
    ck_assert_msg(err.line == bad[_i].line && err.column == bad[_i].column, "case %d at %d:%d: %s", _i,
                  err.line, err.column, err.msg);
    ck_assert_str_eq(err.msg, bad[_i].msg);
}
END_TEST

/* A command job written back parses to the same job. */
START_TEST(test_round_trip)
{
    static const char text[] =
        "job:\n"
        "  command: {rank_0: [python3, a.py, \"--x\", \"1\"], default: [python3, b.py]}\n"
        "  nodes: 3\n"
        "  env: {SEED: 7, NAME: \"a b\"}\n"
        "  timeout: 1.5s\n"
        "  checkpoint_mount: /ckh/other\n"
        "  checkpoint_every: {steps: 4}\n"
        "faults:\n  - {on: {node: rank_1, step: 2}, do: sigterm, grace: 3s}\n"
        "restart: {scope: failed, world_size: 2}\n"
        "compare: {ignore: [\"file:logs/*\", lr]}\n"
        "verify: [python3, check.py]\n";
    struct ckh_scenario *a = NULL, *b = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "r.yaml", NULL, &a, &err), 0);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ck_assert_int_eq(ckh_scenario_write(f, a), 0);
    fclose(f);
    ck_assert_msg(ckh_scenario_parse_string(out, len, "w.yaml", NULL, &b, &err) == 0, "%s\n%s", err.msg, out);
    ck_assert_uint_eq(b->job.ncommands, 2);
    ck_assert_str_eq(b->job.commands[0].node, "rank_0");
    ck_assert_uint_eq(b->job.commands[0].argc, 4);
    ck_assert_str_eq(b->job.commands[0].argv[3], "1");
    ck_assert_ptr_null(b->job.commands[1].node);
    ck_assert_ptr_null(b->job.commands[0].argv[4]);
    ck_assert_uint_eq(b->job.nenv, 2);
    ck_assert_str_eq(b->job.env[1].text, "a b");
    ck_assert_uint_eq(b->job.timeout_ns, 1500000000ull);
    ck_assert_str_eq(b->job.checkpoint_dir, "/");
    ck_assert_str_eq(b->job.checkpoint_mount, "/ckh/other");
    ck_assert_int_eq(b->restart.scope, CKH_SCN_RESTART_FAILED);
    ck_assert_uint_eq(b->verify.argc, 2);
    ck_assert_str_eq(b->verify.argv[1], "check.py");
    ck_assert_int_eq(b->faults[0].act.kind, CKH_SCN_ACT_SIGTERM);
    ck_assert_uint_eq(b->faults[0].act.u.sigterm.grace_ns, 3000000000ull);
    ck_assert(ckh_scn_fault_is_progress_trigger(&b->faults[0]));
    ck_assert_str_eq(b->compare.ignore[0], "file:logs/*");
    char *again = NULL;
    size_t len2 = 0;
    f = open_memstream(&again, &len2);
    ck_assert_int_eq(ckh_scenario_write(f, b), 0);
    fclose(f);
    ck_assert_str_eq(out, again);
    free(out);
    free(again);
    ckh_scenario_free(a);
    ckh_scenario_free(b);
    /* Without the key: the documented default. */
    static const char plain[] = "job: {command: [x]}\n";
    ck_assert_int_eq(ckh_scenario_parse_string(plain, strlen(plain), "d.yaml", NULL, &a, &err), 0);
    ck_assert_str_eq(a->job.checkpoint_mount, "/ckh/ckpt");
    ckh_scenario_free(a);
}
END_TEST

/* An explore: block written back parses to the same block. */
START_TEST(test_explore_round_trip)
{
    static const char text[] = "job:\n  command: [python3, a.py]\n"
                               "verify: [python3, check.py]\n"
                               "explore: {check: restart, max_states: 300, time_limit: 90s, from_step: 4, "
                               "to_step: 8, expect: fail, crashes: power-loss, others: running, "
                               "symptom: \"a stale: marker\"}\n";
    struct ckh_scenario *a = NULL, *b = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "x.yaml", NULL, &a, &err), 0);
    ck_assert(a->explore.present);
    char *out = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    FILE *f = open_memstream(&out, &len);
    ck_assert_int_eq(ckh_scenario_write(f, a), 0);
    fclose(f);
    ck_assert_msg(ckh_scenario_parse_string(out, len, "w.yaml", NULL, &b, &err) == 0, "%s\n%s", err.msg, out);
    const struct ckh_scn_explore *e = &b->explore;
    ck_assert(e->present && e->expect_fail);
    ck_assert_int_eq(e->check, 2);
    ck_assert_uint_eq(e->max_states, 300);
    ck_assert_uint_eq(e->time_limit_ns, 90000000000ull);
    ck_assert_int_eq(e->from_step, 4);
    ck_assert_int_eq(e->to_step, 8);
    ck_assert_int_eq(e->crashes, 3);
    ck_assert_int_eq(e->others, 1);
    ck_assert_str_eq(e->symptom, "a stale: marker");
    f = open_memstream(&again, &len2);
    ck_assert_int_eq(ckh_scenario_write(f, b), 0);
    fclose(f);
    ck_assert_str_eq(out, again);
    /* Without the block: nothing to explore, no window. */
    ckh_scenario_free(a);
    ck_assert_int_eq(ckh_scenario_parse_string("job: {command: [x]}\n", 20, "y.yaml", NULL, &a, &err), 0);
    ck_assert(!a->explore.present);
    ck_assert_int_eq(a->explore.from_step, -1);
    ck_assert(a->explore.crashes == 0 && a->explore.others == 0 && !a->explore.symptom);
    free(out);
    free(again);
    ckh_scenario_free(a);
    ckh_scenario_free(b);
}
END_TEST

/* Writes text to path (folders made as needed). */
static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *sl = strchr(path + strlen(root) + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
        *sl = '\0';
        mkdir(path, 0755);
        *sl = '/';
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

/* The working folder's snapshot (where checkpoints written outside the
 * mount are caught without fanotify, as an ordinary user): a file that
 * appears or changes is named with its path; interpreters' caches, .git
 * and ckh's own run folders are not looked at, nor what is deeper than
 * six folders, nor the inside of a link to a folder. */
START_TEST(test_working_folder_snapshot)
{
    char root[300], msg[1200], want[1200];
    snprintf(root, sizeof root, "%s/wd", dir);
    ck_assert_int_eq(mkdir(root, 0755), 0);
    put(root, "train.py", "print()\n");
    put(root, "data/a.bin", "0123");
    char target[400], link[400];
    snprintf(target, sizeof target, "%s/elsewhere", dir);
    ck_assert_int_eq(mkdir(target, 0755), 0);
    snprintf(link, sizeof link, "%s/linked", root);
    ck_assert_int_eq(symlink(target, link), 0);
    struct ckh__cmd_snapshot *snap = NULL;
    ck_assert_int_eq(ckh__cmd_snapshot_take(root, &snap), 0);
    ck_assert_int_eq(ckh__cmd_snapshot_compare(snap, root, msg, sizeof msg), 0);
    /* What is not looked at. */
    put(root, "__pycache__/train.cpython-311.pyc", "x");
    put(root, "lib.pyc", "x");
    put(root, ".git/HEAD", "ref\n");
    put(root, "ckh-4242-abcdef/run/file", "x");
    put(root, "1/2/3/4/5/6/7/deep.ckpt", "x"); /* seven folders down */
    put(target, "behind-the-link.ckpt", "x");
    ck_assert_msg(ckh__cmd_snapshot_compare(snap, root, msg, sizeof msg) == 0, "%s", msg);
    /* What is. */
    put(root, "data/ckpt/step-3.pt", "weights");
    ck_assert_int_eq(ckh__cmd_snapshot_compare(snap, root, msg, sizeof msg), CKH_EINVAL);
    snprintf(want, sizeof want, "%s/data/ckpt/step-3.pt appeared during the fault-free reference run", root);
    ck_assert_str_eq(msg, want);
    ckh__cmd_snapshot_free(snap);
    ck_assert_int_eq(ckh__cmd_snapshot_take(root, &snap), 0);
    put(root, "data/a.bin", "012345"); /* another size */
    ck_assert_int_eq(ckh__cmd_snapshot_compare(snap, root, msg, sizeof msg), CKH_EINVAL);
    snprintf(want, sizeof want, "%s/data/a.bin changed during the fault-free reference run", root);
    ck_assert_str_eq(msg, want);
    ckh__cmd_snapshot_free(snap);
    /* A folder that is not there is empty; whatever appears in it counts. */
    char gone[400];
    snprintf(gone, sizeof gone, "%s/not-yet", dir);
    ck_assert_int_eq(ckh__cmd_snapshot_take(gone, &snap), 0);
    ck_assert_int_eq(ckh__cmd_snapshot_compare(snap, gone, msg, sizeof msg), 0);
    ck_assert_int_eq(mkdir(gone, 0755), 0);
    put(gone, "latest", "3\n");
    ck_assert_int_eq(ckh__cmd_snapshot_compare(snap, gone, msg, sizeof msg), CKH_EINVAL);
    snprintf(want, sizeof want, "%s/latest appeared during the fault-free reference run", gone);
    ck_assert_str_eq(msg, want);
    ckh__cmd_snapshot_free(snap);
    ckh__cmd_snapshot_free(NULL);
    /* The names left out, one by one. */
    ck_assert(ckh__cmd_snapshot_skipped("__pycache__"));
    ck_assert(ckh__cmd_snapshot_skipped("model.pyc"));
    ck_assert(ckh__cmd_snapshot_skipped(".git"));
    ck_assert(ckh__cmd_snapshot_skipped("ckh-1-x"));
    ck_assert(!ckh__cmd_snapshot_skipped(".pyc")); /* a name, not an extension */
    ck_assert(!ckh__cmd_snapshot_skipped("ckh-run"));
    ck_assert(!ckh__cmd_snapshot_skipped("ckh-"));
    ck_assert(!ckh__cmd_snapshot_skipped("model.pyc.bak"));
    ck_assert(!ckh__cmd_snapshot_skipped(".gitignore"));
}
END_TEST

static Suite *command_suite(void)
{
    Suite *s = suite_create("command");
    TCase *jobs = tcase_create("jobs");
    tcase_add_checked_fixture(jobs, setup, teardown);
    tcase_set_timeout(jobs, 120);
    tcase_add_test(jobs, test_completes);
    tcase_add_test(jobs, test_shell_job_completes);
    tcase_add_test(jobs, test_kill_mid_write_resumes);
    tcase_add_test(jobs, test_nth_pwrite_deterministic);
    tcase_add_test(jobs, test_delay_holds_only_its_node);
    tcase_add_test(jobs, test_lookups_cached_unless_matched);
    tcase_add_test(jobs, test_hang_reaped);
    tcase_add_test(jobs, test_escaped_daemon_reaped);
    tcase_add_test(jobs, test_sigterm_preemption);
    tcase_add_test(jobs, test_power_loss_atomic);
    tcase_add_test(jobs, test_verify_catches_torn_checkpoint);
    tcase_add_test(jobs, test_restart_scope_failed);
    tcase_add_test(jobs, test_world_size_unjudged_refused);
    tcase_add_test(jobs, test_programs_get_own_tmpdir);
    tcase_add_test(jobs, test_sigint_cleans_up);
    tcase_add_loop_test(jobs, test_faults_survived, 0, (int)(sizeof survived / sizeof survived[0]));
    tcase_add_test(jobs, test_at_rest_corrupt);
    suite_add_tcase(s, jobs);
    TCase *badin = tcase_create("bad-input");
    tcase_add_checked_fixture(badin, setup, teardown);
    tcase_set_timeout(badin, 120);
    tcase_add_test(badin, test_missing_command);
    tcase_add_test(badin, test_not_executable);
    tcase_add_test(badin, test_program_resolution_edges);
    tcase_add_test(badin, test_command_entries_fit_nodes);
    tcase_add_test(badin, test_saves_with_nothing_on_disk);
    tcase_add_test(jobs, test_replay_filters);
    tcase_add_test(badin, test_result_not_json);
    tcase_add_test(badin, test_no_final_record);
    tcase_add_test(badin, test_writes_outside);
    tcase_add_test(badin, test_reference_fails);
    tcase_add_test(jobs, test_killed_between_save_and_record);
    tcase_add_test(jobs, test_files_compared_by_name);
    tcase_add_test(jobs, test_files_ignored_and_links_without_namespace);
    tcase_add_test(badin, test_fuse_missing);
    tcase_add_test(badin, test_cli_exit_status);
    suite_add_tcase(s, badin);
    /* The cases above run real programs on ckhfs (FUSE): a CTest entry of
     * their own, skipped where FUSE cannot be used (CMakeLists.txt). */
    tcase_set_tags(jobs, "fuse");
    tcase_set_tags(badin, "fuse");
    TCase *sim = tcase_create("sim");
    tcase_add_checked_fixture(sim, setup, teardown);
    tcase_add_test(sim, test_sim_refuses_sigterm);
    tcase_add_test(sim, test_working_folder_snapshot);
    suite_add_tcase(s, sim);
    TCase *grammar = tcase_create("grammar");
    tcase_add_loop_test(grammar, test_grammar_errors, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(grammar, test_round_trip);
    tcase_add_test(grammar, test_explore_round_trip);
    suite_add_tcase(s, grammar);
    return s;
}

int main(void)
{
    return ckh_test_run(command_suite());
}
