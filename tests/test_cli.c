/* Tests of the ckh command as a user runs it (harness/cli/, the fuzz,
 * shrink and validate-backend verbs): each test executes ./ckh from the
 * build folder (CTest's working folder) on the scenario library of
 * CKH_SOURCE_DIR and checks exit statuses and messages (docs/CLI.md):
 * signals, temporary folders, bad paths, limits and option values. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "ckh/ddp.h"
#include "ckh/version.h"
#include "exec/pool.h"
#include "exec/tmpdir.h"
#include "support/skip.h"

#define MAX_ARGS 32

static char src[1024];    /* the source tree */
static char scen[1200];   /* its scenario library */
static char work[256];    /* a private folder for the test */

static void setup(void)
{
    const char *s = getenv("CKH_SOURCE_DIR");
    snprintf(src, sizeof src, "%s", s && s[0] ? s : "..");
    snprintf(scen, sizeof scen, "%s/scenarios", src);
    snprintf(work, sizeof work, "/tmp/ckh-test-cli-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(work));
    /* Orphans of a killed ckh become this process's children. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static void teardown(void)
{
    ckh_tmp_remove(work);
}

/* Seconds a ckh may take before the test fails (CKH_TEST_BOUND_S, default
 * 240): a generous bound on a hang, never a measure of speed. */
static unsigned bound_s(void)
{
    const char *e = getenv("CKH_TEST_BOUND_S");
    return e && atoi(e) > 0 ? (unsigned)atoi(e) : 240;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts ./ckh with args (NULL-terminated) and the environment variables
 * in env ("NAME=value", NULL-terminated, may be NULL); stdout and stderr
 * go to *fd. */
static pid_t spawn(const char *const *args, const char *const *env, int *fd)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *argv[MAX_ARGS + 2] = {(char *)"./ckh"};
        for (int i = 0; args[i] && i < MAX_ARGS; i++)
            argv[i + 1] = (char *)args[i];
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execv("./ckh", argv);
        _exit(127);
    }
    close(fds[1]);
    *fd = fds[0];
    alarm(bound_s()); /* a ckh that never ends fails the test (wait_status clears it) */
    return pid;
}

/* Reads fd to its end into a malloc'd string. */
static char *slurp_fd(int fd)
{
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (;;) {
        if (cap - n < 2048) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(fd);
    return buf;
}

/* Waits for pid: its exit status, or 128 + the signal that killed it. */
static int wait_status(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ck_assert_int_eq(errno, EINTR);
    alarm(0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs ./ckh to its end; *out (may be NULL) gets its output (free()). */
static int ckh(const char *const *args, const char *const *env, char **out)
{
    int fd;
    pid_t pid = spawn(args, env, &fd);
    char *text = slurp_fd(fd);
    int st = wait_status(pid);
    if (out)
        *out = text;
    else
        free(text);
    return st;
}

/* Every orphan left to this process ends (a live one fails the test). */
static void reap_orphans(void)
{
    alarm(bound_s());
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
    alarm(0);
    ck_assert_int_eq(errno, ECHILD);
}

static int count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

#define HAS(text, what) ck_assert_msg(strstr((text), (what)) != NULL, "'%s' not in:\n%s", (what), (text))

/* ---- version, options, paths ---- */

START_TEST(test_version)
{
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"--version", NULL}, NULL, &out), 0);
    ck_assert_str_eq(out, "ckh " CKH_VERSION_STRING "\n");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"version", NULL}, NULL, &out), 0);
    ck_assert_str_eq(out, "ckh " CKH_VERSION_STRING "\n");
    free(out);
}
END_TEST

/* Reads a whole file the test wrote (free()). */
static char *slurp_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    return slurp_fd(fd);
}

/* A pass through expect.detect or expect.outcome says what was detected:
 * the PASS line, the JSON message and the JUnit system-out name the
 * detecting oracle and the first line of its detail; a plain pass says
 * nothing more than before. */
START_TEST(test_pass_by_detection_says_what)
{
    char *out, *text, path[1300], json[400], junit[400];
    snprintf(json, sizeof json, "%s/r.json", work);
    snprintf(junit, sizeof junit, "%s/r.xml", work);
    snprintf(path, sizeof path, "%s/examples/bug-rng-not-restored.yaml", scen);
    ck_assert_int_eq(ckh((const char *[]){"run", path, "--json", json, "--junit", junit, NULL}, NULL, &out), 0);
    HAS(out, "PASS  bug-rng-not-restored  (2 runs, ");
    HAS(out, " ms): detected as expected by resume-equivalence: step 5: rng, optim, weights of worker_0, "
             "worker_1 diverged first");
    ck_assert_ptr_null(strstr(out, "replay:"));
    free(out);
    text = slurp_path(json);
    HAS(text, "\"message\": \"detected as expected by resume-equivalence: step 5: rng, optim");
    free(text);
    text = slurp_path(junit);
    HAS(text, "<system-out>detected as expected by resume-equivalence: step 5: rng, optim");
    ck_assert_ptr_null(strstr(text, "<failure"));
    free(text);

    /* expect.outcome: the outcome oracle's finding. */
    snprintf(path, sizeof path, "%s/minidb/corrupt-truncate.yaml", scen);
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 0);
    HAS(out, ": detected as expected by outcome: expected to see corruption-detected: seen; the job ended");
    free(out);

    /* A plain pass: the line as before, no message anywhere. */
    snprintf(path, sizeof path, "%s/examples/loop-uninterrupted.yaml", scen);
    ck_assert_int_eq(ckh((const char *[]){"run", path, "--json", json, NULL}, NULL, &out), 0);
    HAS(out, "PASS  loop-uninterrupted  (1 run, ");
    ck_assert_ptr_null(strstr(out, "detected"));
    ck_assert_msg(strstr(out, " ms)\n") != NULL, "the PASS line ends after its figures:\n%s", out);
    free(out);
    text = slurp_path(json);
    HAS(text, "\"message\": null");
    free(text);
}
END_TEST

/* `ckh --help` names where the documentation is (the source tree for the
 * build tree's ckh); `ckh --help-man` writes ckh(1) from the same verb
 * table, every verb's line and its own --help text in it. */
START_TEST(test_help_and_man_page)
{
    char *out, *usage, source[PATH_MAX], want[PATH_MAX + 64];
    ck_assert_ptr_nonnull(realpath(getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : "..", source));
    ck_assert_int_eq(ckh((const char *[]){"--help", NULL}, NULL, &out), 0);
    snprintf(want, sizeof want, "Reference: %s/docs/CLI.md.", source);
    HAS(out, want);
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"--help-man", NULL}, NULL, &out), 0);
    ck_assert_msg(strstr(out, "\n.TH CKH 1 \"\" \"ckh " CKH_VERSION_STRING "\" \"User Commands\"\n") != NULL, "%s",
                  out);
    HAS(out, ".TP\n.B ckh run PATH...\nrun scenario files or folders (ckh run \\-\\-help)\n");
    HAS(out, ".TP\n.B ckh validate\\-backend LIB\nput a backend plugin through the fault catalogue and every "
             "crash state of its save protocol\n");
    HAS(out, ".SS \"ckh run\"\n.nf\nusage: ckh run PATH... [options]\n");
    HAS(out, ".SH EXIT STATUS\n");
    HAS(out, "CKH_PLUGIN_PATH");
    ck_assert_ptr_null(strstr(out, ".SS \"ckh help\"")); /* help and version have no usage of their own */
    /* The usage of `ckh replay` is its --help, line for line. */
    ck_assert_int_eq(ckh((const char *[]){"replay", "--help", NULL}, NULL, &usage), 0);
    const char *sec = strstr(out, ".SS \"ckh replay\"\n.nf\n");
    ck_assert_ptr_nonnull(sec);
    sec += strlen(".SS \"ckh replay\"\n.nf\n");
    for (const char *u = usage; *u; u++, sec++) {
        if (*u == '-') /* written \- in roff */
            ck_assert_msg(sec[0] == '\\' && sec[1] == '-', "at %.40s", sec), sec++;
        else
            ck_assert_msg(*sec == *u, "man page differs from ckh replay --help at %.40s", sec);
    }
    ck_assert(strncmp(sec, ".fi\n", 4) == 0);
    free(usage);
    free(out);
}
END_TEST

struct bad_case {
    const char *args[10]; /* "@" stands for one scenario file, "%" for the library */
    const char *says;     /* part of the message */
};

START_TEST(test_numeric_options_refused)
{
    static const struct bad_case cases[] = {
        {{"fuzz", "--start", "18446744073709551610", "--seeds", "20"}, "would pass"},
        {{"fuzz", "--seeds"}, "--seeds needs a value"},
        {{"fuzz", "--seeds", "0"}, "--seeds expects an integer 1.."},
        {{"fuzz", "--jobs", "4294967297"}, "--jobs expects an integer 1..256"},
        {{"fuzz", "--start", "-1"}, "--start expects"},
        {{"fuzz", "--shard", "0/2"}, "--shard expects I/N"},
        {{"fuzz", "--shard", "1/-1"}, "--shard expects I/N"},
        {{"fuzz", "--determinism-every", "4294967296"}, "--determinism-every expects"},
        {{"fuzz", "--shrink-max", "5x"}, "--shrink-max expects"},
        {{"fuzz", "--mem-limit", "lots"}, "--mem-limit expects a size"},
        {{"fuzz", "--print-seed", "18446744073709551616"}, "--print-seed expects"},
        {{"run", "--jobs", "4294967297", "@"}, "--jobs expects an integer 1..256, got '4294967297'"},
        {{"run", "--seed", " -1", "@"}, "--seed expects an integer"},
        {{"run", "--seed", "", "@"}, "--seed expects an integer"},
        {{"run", "--mem-limit", "-4GiB", "@"}, "--mem-limit expects a size"},
        {{"replay", "@", "--seed", "1x"}, "--seed expects an integer"},
        {{"shrink", "@", "--max-runs", "-5"}, "--max-runs expects an integer"},
        {{"validate-backend", "--bogus"}, "unknown option --bogus"},
        {{"validate-backend", "x.so", "--timeout", "99999999999999999999"}, "--timeout expects"},
        {{"validate-backend", "x.so", "--mem-limit", "x"}, "--mem-limit expects a size"},
        {{"validate-backend", "x.so", "--timeout"}, "--timeout needs a value"},
    };
    char file[1300];
    snprintf(file, sizeof file, "%s/ddp/uninterrupted.yaml", scen);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[11] = {0};
        for (int k = 0; k < 10 && cases[i].args[k]; k++)
            args[k] = strcmp(cases[i].args[k], "@") == 0 ? file : cases[i].args[k];
        char *out;
        int st = ckh(args, NULL, &out);
        ck_assert_msg(st == 2, "%s %s: status %d:\n%s", args[0], args[1], st, out);
        HAS(out, cases[i].says);
        free(out);
    }
    /* The largest seed prints one scenario, not a campaign. */
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"fuzz", "--print-seed", "18446744073709551615", NULL},
                         NULL, &out), 0);
    HAS(out, "# ckh fuzz seed 18446744073709551615");
    ck_assert_ptr_null(strstr(out, "seeds run"));
    free(out);
}
END_TEST

START_TEST(test_replay_of_a_folder)
{
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"replay", scen, NULL}, NULL, &out), 2);
    HAS(out, "is a folder; replay takes one scenario file");
    free(out);
}
END_TEST

START_TEST(test_report_paths_checked_first)
{
    char file[1300], *out;
    snprintf(file, sizeof file, "%s/ddp/uninterrupted.yaml", scen);
    const char *opts[] = {"--junit", "--json", "--html"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ckh((const char *[]){"run", file, opts[i], "/nonexistent-ckh/r", NULL},
                             NULL, &out), 2);
        HAS(out, "cannot write the");
        HAS(out, "/nonexistent-ckh");
        ck_assert_ptr_null(strstr(out, "PASS"));
        free(out);
    }
    ck_assert_int_eq(ckh((const char *[]){"fuzz", "--seeds", "3", "--out", "/nonexistent-ckh/f",
                                          NULL}, NULL, &out), 2);
    HAS(out, "/nonexistent-ckh");
    ck_assert_ptr_null(strstr(out, "seeds run"));
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"validate-backend", "backends/libbk_adir.so", "--json",
                                          "/nonexistent-ckh/v.json", NULL}, NULL, &out), 2);
    HAS(out, "cannot write the JSON report");
    ck_assert_ptr_null(strstr(out, "PASS"));
    free(out);
    /* Two reports into one file: one would overwrite the other. */
    char same[1300], other[1300];
    snprintf(same, sizeof same, "%s/r.out", work);
    snprintf(other, sizeof other, "%s/./r.out", work);
    ck_assert_int_eq(ckh((const char *[]){"run", file, "--json", same, "--junit", other, NULL}, NULL, &out), 2);
    HAS(out, "--junit and --json name the same file");
    ck_assert_ptr_null(strstr(out, "PASS"));
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"validate-backend", "backends/libbk_adir.so", "--json", same,
                                          "--html", same, NULL}, NULL, &out), 2);
    HAS(out, "--json and --html name the same file");
    ck_assert_ptr_null(strstr(out, "PASS"));
    free(out);
    ck_assert_int_eq(access(same, F_OK), -1); /* nothing written */
}
END_TEST

START_TEST(test_fifo_size_and_folders)
{
    char fifo[400], dir[400], big[500], *out;
    snprintf(fifo, sizeof fifo, "%s/pipe.yaml", work);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(ckh((const char *[]){"run", fifo, NULL}, NULL, &out), 2);
    HAS(out, "not a regular file or folder");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"list", "scenarios", fifo, NULL}, NULL, &out), 2);
    HAS(out, "not a regular file or folder");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"replay", fifo, NULL}, NULL, &out), 2);
    HAS(out, "not a regular file or folder");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"shrink", fifo, NULL}, NULL, &out), 2);
    HAS(out, "pipe.yaml: not a regular file or folder");
    free(out);

    /* A file over the size limit names the limit. */
    snprintf(dir, sizeof dir, "%s/lib", work);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(big, sizeof big, "%s/big.yaml", dir);
    int fd = open(big, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 65 << 20), 0);
    close(fd);
    ck_assert_int_eq(ckh((const char *[]){"run", dir, NULL}, NULL, &out), 2);
    HAS(out, "big.yaml: larger than 64 MiB, the limit for a scenario file");
    free(out);
}
END_TEST

/* An unreadable subfolder is named; the rest of the folder loads (tagged
 * "user": CTest entry test_cli_user). */
START_TEST(test_unreadable_subfolder)
{
    if (geteuid() == 0)
        CKH_SKIP("root reads every folder: an unreadable one needs an ordinary user");
    char dir[400], *out;
    snprintf(dir, sizeof dir, "%s/lib", work);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char sub[500], good[1300];
    snprintf(sub, sizeof sub, "%s/locked", dir);
    ck_assert_int_eq(mkdir(sub, 0000), 0);
    snprintf(good, sizeof good, "%s/ddp/uninterrupted.yaml", scen);
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "cp %s %s/", good, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(ckh((const char *[]){"list", "scenarios", dir, NULL}, NULL, &out), 2);
    HAS(out, "locked: cannot list scenarios: Permission denied");
    HAS(out, "uninterrupted");
    free(out);
    chmod(sub, 0700);
}
END_TEST

START_TEST(test_parse_time_limit)
{
    char path[400], *out;
    snprintf(path, sizeof path, "%s/deep.yaml", work);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("description: nested lists\njob:\n  workload: seed-pipeline\n  options: ", f);
    for (int i = 0; i < 30000; i++)
        fputc('[', f);
    for (int i = 0; i < 30000; i++)
        fputc(']', f);
    fputc('\n', f);
    fclose(f);
    const char *env[] = {"CKH_PARSE_LIMIT_S=1", NULL};
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, env, &out), 2);
    HAS(out, "deep.yaml: parsing stopped: time limit 1 s reached (the limit for one scenario file)");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"list", "scenarios", work, NULL}, env, &out), 2);
    HAS(out, "parsing stopped: time limit 1 s reached");
    free(out);
}
END_TEST

/* A folder with no scenario is bad input, said once, for run and list
 * (the sanitizer stage runs it too: no NULL handed to memcpy). */
START_TEST(test_empty_folder)
{
    char dir[400], *out;
    snprintf(dir, sizeof dir, "%s/empty", work);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(ckh((const char *[]){"run", dir, NULL}, NULL, &out), 2);
    HAS(out, "ckh run: no scenario found");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"list", "scenarios", dir, NULL}, NULL, &out), 0);
    free(out);
    rmdir(dir);
}
END_TEST

/* A valid scenario whose description is over 16 MiB runs: what the
 * parsing worker sends back holds any string a scenario file can hold. */
START_TEST(test_long_description_runs)
{
    char path[400], *out;
    snprintf(path, sizeof path, "%s/long.yaml", work);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("description: ", f);
    for (int i = 0; i < (17 << 20); i++)
        fputc('x', f);
    fputs("\njob: {workload: seed-pipeline}\n", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 0);
    HAS(out, "1 scenario: 1 passed");
    free(out);
    unlink(path);
}
END_TEST

START_TEST(test_memory_limit_verdict)
{
    if (!ckh_pool_mem_limit_supported())
        CKH_SKIP("no memory limit in this build (AddressSanitizer needs the address space)");
    char path[400], *out;
    snprintf(path, sizeof path, "%s/huge.yaml", work);
    /* 1 GiB is within what the parser accepts for a parameter server (a
     * larger value is refused at parse time); under a 256 MiB limit the
     * worker runs out of memory and the verdict says which limit. */
    write_file(path, "description: a 1 GiB model\njob:\n  workload: param-server\n  nodes: 2\n"
                     "  epochs: 2\n  options: {param_bytes: 1GiB}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, "--mem-limit", "256MiB", NULL}, NULL, &out), 3);
    HAS(out, "memory limit 256 MiB reached");
    free(out);
    snprintf(path, sizeof path, "%s/huge.yaml", work);
    write_file(path, "description: a 1 TiB model\njob:\n  workload: param-server\n  nodes: 2\n"
                     "  epochs: 2\n  options: {param_bytes: 1TiB}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 2);
    HAS(out, "at most 1GiB");
    free(out);
}
END_TEST

/* ---- signals and temporary folders ---- */

/* Whether dir holds a folder "ckh-<pid>-*" with its owner marker written. */
static bool marked_folder(const char *dir, pid_t pid)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "ckh-%ld-", (long)pid);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char marker[700];
        struct stat st;
        snprintf(marker, sizeof marker, "%s/%s/.ckh-owner", dir, de->d_name);
        found = stat(marker, &st) == 0 && st.st_size > 0;
    }
    closedir(d);
    return found;
}

/* --shard I/N: the shards of a run partition a folder of the library
 * (every scenario in exactly one shard; the simulated scenarios, so the
 * test stays quick), an empty shard is not an error, a bad one is. */
START_TEST(test_run_shards_partition)
{
    char *all, *out, lib[1300];
    snprintf(lib, sizeof lib, "%s/minidb", scen);
    ck_assert_int_eq(ckh((const char *[]){"run", lib, NULL}, NULL, &all), 0);
    size_t total = 0, seen = 0;
    for (const char *p = all; (p = strstr(p, "PASS  ")) != NULL; p += 6)
        total++;
    ck_assert_uint_gt(total, 10);
    for (int i = 1; i <= 3; i++) {
        char shard[16];
        snprintf(shard, sizeof shard, "%d/3", i);
        ck_assert_int_eq(ckh((const char *[]){"run", lib, "--shard", shard, NULL}, NULL, &out), 0);
        for (const char *p = out; (p = strstr(p, "PASS  ")) != NULL; p += 6) {
            char name[200];
            ck_assert_int_eq(sscanf(p + 6, "%199s", name), 1);
            char line[220];
            snprintf(line, sizeof line, "PASS  %s  (", name);
            ck_assert_msg(strstr(all, line) != NULL, "shard %s ran %s, the whole run did not", shard,
                          name);
            seen++;
        }
        free(out);
    }
    ck_assert_uint_eq(seen, total);
    free(all);
    char one[1300];
    snprintf(one, sizeof one, "%s/ddp/uninterrupted.yaml", scen);
    ck_assert_int_eq(ckh((const char *[]){"run", one, "--shard", "2/2", NULL}, NULL, &out), 0);
    HAS(out, "shard 2/2 holds no scenario");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"run", one, "--shard", "3/2", NULL}, NULL, &out), 2);
    HAS(out, "--shard expects I/N with 1 <= I <= N, got '3/2'");
    free(out);
}
END_TEST

/* Waits until ckh's folder under dir is made and marked. */
static void wait_for_folder(const char *dir, pid_t pid)
{
    for (int i = 0; i < 6000 && !marked_folder(dir, pid); i++)
        pause_ms(10);
    ck_assert(marked_folder(dir, pid));
}

START_TEST(test_run_interrupted_cleans_up)
{
    char env_tmp[400];
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", work);
    const char *env[] = {env_tmp, NULL};
    /* 24 copies of the library: a run that lasts well past the latest
     * signal below even on a fast machine (the signal ends it early). */
    const char *args[MAX_ARGS] = {"run", "--jobs", "2"};
    for (int i = 3; i < 27; i++)
        args[i] = scen;
    static const struct {
        int sig;
        long delay_ms;
    } tries[] = {{SIGINT, 0}, {SIGINT, 150}, {SIGINT, 600}, {SIGTERM, 300}, {SIGINT, 1500}};
    for (size_t t = 0; t < sizeof tries / sizeof tries[0]; t++) {
        int fd;
        pid_t pid = spawn(args, env, &fd);
        wait_for_folder(work, pid);
        pause_ms(tries[t].delay_ms);
        kill(pid, tries[t].sig);
        char *out = slurp_fd(fd);
        int st = wait_status(pid);
        ck_assert_msg(st == 128 + tries[t].sig, "try %zu: status %d", t, st);
        HAS(out, "interrupted by signal");
        free(out);
        reap_orphans();
        ck_assert_int_eq(count_entries(work, "ckh-"), 0);
    }
}
END_TEST

START_TEST(test_killed_run_folder_swept_later)
{
    char env_tmp[400], file[1300], *out;
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", work);
    const char *env[] = {env_tmp, NULL};
    int fd;
    pid_t pid = spawn((const char *[]){"run", "--jobs", "2", scen, scen, NULL}, env, &fd);
    wait_for_folder(work, pid);
    kill(pid, SIGKILL);
    free(slurp_fd(fd));
    ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
    reap_orphans();
    char mine[64];
    snprintf(mine, sizeof mine, "ckh-%ld-", (long)pid);
    ck_assert_int_eq(count_entries(work, mine), 1); /* left behind */
    /* Decoys a sweep must leave alone. */
    char p[600];
    snprintf(p, sizeof p, "%s/ckh-%ld-nomark", work, (long)pid);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/unrelated", work);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    snprintf(file, sizeof file, "%s/ddp/uninterrupted.yaml", scen);
    ck_assert_int_eq(ckh((const char *[]){"run", file, NULL}, env, &out), 0);
    free(out);
    /* The dead run's folder is gone; only the decoys stay. */
    ck_assert_int_eq(count_entries(work, mine), 1);
    ck_assert_int_eq(count_entries(work, "unrelated"), 1);
    snprintf(p, sizeof p, "ckh-%ld-nomark", (long)pid);
    ck_assert_int_eq(count_entries(work, p), 1);
}
END_TEST

START_TEST(test_fuzz_interrupted_reports)
{
    int fd;
    const char *args[] = {"fuzz", "--seeds", "1000000", "--jobs", "2", "--no-shrink", NULL};
    pid_t pid = spawn(args, NULL, &fd);
    pause_ms(1500);
    kill(pid, SIGINT);
    char *out = slurp_fd(fd);
    ck_assert_int_eq(wait_status(pid), 128 + SIGINT);
    HAS(out, "seeds run (shard 1/1, 2 jobs");
    HAS(out, "interrupted by signal 2");
    free(out);
    reap_orphans();
}
END_TEST

START_TEST(test_fuzz_workers_die_with_ckh)
{
    int fd;
    const char *args[] = {"fuzz", "--seeds", "1000000", "--jobs", "2", "--no-shrink", NULL};
    pid_t pid = spawn(args, NULL, &fd);
    pause_ms(1000);
    kill(pid, SIGKILL);
    free(slurp_fd(fd));
    ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
    reap_orphans(); /* workers running the rest of the range fail here */
}
END_TEST

/* The FAIL/ERROR lines and the omission line of a fuzz output. */
static char *failure_lines(const char *out)
{
    char *res = calloc(1, strlen(out) + 1);
    ck_assert_ptr_nonnull(res);
    for (const char *l = out; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l + 1) : strlen(l);
        if (!strncmp(l, "FAIL seed", 9) || !strncmp(l, "ERROR seed", 10) || l[0] == '(')
            strncat(res, l, len);
        l += len;
    }
    return res;
}

START_TEST(test_fuzz_listing_independent_of_jobs)
{
    const char *base[] = {"fuzz", "--seeds", "1400", "--defect", "rng-not-saved", "--no-shrink",
                          "--jobs", NULL, NULL};
    char *lines[2];
    const char *jobs[] = {"1", "3"};
    for (int i = 0; i < 2; i++) {
        base[7] = jobs[i];
        char *out;
        ck_assert_int_eq(ckh(base, NULL, &out), 1);
        lines[i] = failure_lines(out);
        free(out);
    }
    ck_assert_str_eq(lines[0], lines[1]);
    int n = 0;
    for (const char *p = lines[0]; (p = strstr(p, " seed ")) != NULL; p++)
        n++;
    ck_assert_int_eq(n, 64);
    HAS(lines[0], "more failures, seeds above");
    free(lines[0]);
    free(lines[1]);
}
END_TEST

/* A shrunk fuzz failure's line names the oracle and the cause, as the
 * shrunk file's description does (a bare "fails ORACLE" said too little).
 * Which seed fails first depends on the build's floating point (gcc and
 * clang differ), so the line is read, not expected by number. */
START_TEST(test_fuzz_shrunk_line_names_the_cause)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s/shrunk", work);
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"fuzz", "--seeds", "300", "--defect", "no-fsync",
                                          "--shrink-max", "1", "--out", dir, NULL},
                         NULL, &out),
                     1);
    const char *line = strstr(out, "\n  shrunk seed ");
    ck_assert_msg(line != NULL, "no shrunk line in:\n%s", out);
    unsigned long long seed = 0;
    char oracle[64] = "", cause[384] = "";
    ck_assert_msg(sscanf(line, "\n  shrunk seed %llu in %*u runs: %*u -> %*u faults, %*u -> %*u nodes; "
                               "fails %63[^:\n]: %383[^\n]",
                         &seed, oracle, cause) == 3,
                  "the shrunk line lacks 'fails ORACLE: CAUSE':\n%s", line);
    char file[700], want[1000];
    snprintf(file, sizeof file, "%s/fuzz-%llu-%s.yaml", dir, seed, oracle);
    snprintf(want, sizeof want, "  replay: ckh run %s\n", file);
    HAS(out, want);
    free(out);
    /* The shrunk file's description carries the same cause. */
    char *text = slurp_path(file);
    HAS(text, cause);
    free(text);
}
END_TEST

/* Refusals of the verbs' own arguments, each with its message and exit
 * status 2, and nothing written: a short option without its value, a
 * name no registry knows, a zero duration, an unknown platform, a
 * missing or doubled file, an unexpected argument. */
START_TEST(test_verb_argument_refusals)
{
    static const struct bad_case cases[] = {
        {{"fuzz", "-j"}, "ckh fuzz: --jobs needs a value\nusage: ckh fuzz "},
        {{"fuzz", "--backend", "nosuch"}, "ckh fuzz: unknown checkpoint backend 'nosuch' (known: minidb)"},
        {{"fuzz", "--time", "0"}, "ckh fuzz: --time expects a duration such as 30s or 10m, got '0'"},
        {{"fuzz", "--bogus"}, "ckh fuzz: unknown option '--bogus'\nusage: ckh fuzz "},
        {{"run", "--platform", "gpu", "@"}, "ckh run: --platform: expected sim or real, got 'gpu'"},
        {{"run"}, "ckh run: no scenario file or folder given\nusage: ckh run PATH..."},
        {{"shrink"}, "usage: ckh shrink FILE [-o OUT] [--max-runs N]"},
        {{"shrink", "@", "@"}, "ckh shrink: unexpected argument '"},
        {{"shrink", "--weird"}, "ckh shrink: unexpected argument '--weird'"},
        {{"shrink", "~/no-such.yaml"}, "/no-such.yaml: cannot open: No such file or directory"},
        {{"shrink", "@", "--out", "~/never.yaml"}, "uninterrupted.yaml does not fail: nothing to shrink"},
        {{"replay"}, "ckh replay: expected exactly one scenario file\nusage: ckh replay FILE"},
        {{"replay", "@", "@"}, "ckh replay: expected exactly one scenario file"},
        {{"replay", "~/no-such.yaml"}, "/no-such.yaml: cannot list scenarios: No such file or directory"},
        {{"list", "bogus"}, "ckh list: unknown category 'bogus'\nusage: ckh list ["},
    };
    char file[1300];
    snprintf(file, sizeof file, "%s/ddp/uninterrupted.yaml", scen);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[11] = {0};
        char subst[10][1400];
        for (int k = 0; k < 10 && cases[i].args[k]; k++) {
            const char *a = cases[i].args[k];
            if (strcmp(a, "@") == 0)
                snprintf(subst[k], sizeof subst[k], "%s", file);
            else if (a[0] == '~') /* a path in the test's own folder */
                snprintf(subst[k], sizeof subst[k], "%s%s", work, a + 1);
            else
                snprintf(subst[k], sizeof subst[k], "%s", a);
            args[k] = subst[k];
        }
        char *out;
        int st = ckh(args, NULL, &out);
        ck_assert_msg(st == 2, "%s %s: status %d:\n%s", args[0], args[1] ? args[1] : "", st, out);
        HAS(out, cases[i].says);
        free(out);
    }
    /* No refusal wrote an output file. */
    ck_assert_int_eq(count_entries(work, "never"), 0);
    /* `ckh list --help` is the usage on stdout, status 0. */
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"list", "--help", NULL}, NULL, &out), 0);
    ck_assert_msg(strncmp(out, "usage: ckh list [workloads [LIB.so...]|", 39) == 0, "%s", out);
    free(out);
}
END_TEST

/* `ckh list scenarios DIR` lists a scenario without a description by its
 * name alone and a bad one by its path with the parser's file:line:column
 * message, and then exits 2. */
START_TEST(test_list_scenarios_with_errors)
{
    char path[400];
    snprintf(path, sizeof path, "%s/bad.yaml", work);
    write_file(path, "name: x\nbogus_key: 1\n");
    snprintf(path, sizeof path, "%s/plain.yaml", work);
    write_file(path, "job:\n  workload: ddp-train\n  nodes: 2\n  epochs: 1\n");
    char *out, want[1200];
    ck_assert_int_eq(ckh((const char *[]){"list", "scenarios", work, NULL}, NULL, &out), 2);
    snprintf(want, sizeof want, "scenarios (%s):\n", work);
    HAS(out, want);
    snprintf(want, sizeof want, "(error) %s/bad.yaml:2:1: unknown key 'bogus_key' in 'scenario'; expected one of: name,",
             work);
    HAS(out, want);
    snprintf(want, sizeof want, "  %-44s \n", "plain");
    HAS(out, want);
    free(out);
}
END_TEST

/* `ckh shrink` refuses a scenario that expects a planted defect to be
 * detected (its failure is the defect's, not a fault's), and without -o
 * writes FILE's stem with .shrunk.yaml beside it: a dot in a folder name
 * is not the file's extension. */
START_TEST(test_shrink_refusal_and_default_output)
{
    char file[1300], sub[400], in[500], text_path[1300];
    snprintf(file, sizeof file, "%s/examples/bug-momentum-not-saved.yaml", scen);
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"shrink", file, "-o", "/dev/null", NULL}, NULL, &out), 2);
    HAS(out, "bug-momentum-not-saved.yaml expects a planted defect to be detected (expect.detect): "
             "remove expect.detect to shrink the failure the defect causes");
    free(out);
    /* The same scenario without its expect section fails, and shrinks. */
    char *text = slurp_path(file);
    char *exp = strstr(text, "\nexpect:");
    ck_assert_ptr_nonnull(exp);
    exp[1] = '\0';
    snprintf(sub, sizeof sub, "%s/v1.d", work);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(in, sizeof in, "%s/mom", sub);
    write_file(in, text);
    free(text);
    ck_assert_int_eq(ckh((const char *[]){"shrink", in, "--max-runs", "3", NULL}, NULL, &out), 0);
    char want[1300];
    snprintf(want, sizeof want, "shrunk %s in ", in);
    HAS(out, want);
    HAS(out, "fails resume-equivalence: ");
    snprintf(want, sizeof want, "replay: ckh run %s.shrunk.yaml\n", in);
    HAS(out, want);
    free(out);
    snprintf(text_path, sizeof text_path, "%s.shrunk.yaml", in);
    text = slurp_path(text_path);
    HAS(text, "name: \"mom\"\n");
    HAS(text, "fails oracle resume-equivalence");
    free(text);
    /* The shrunk scenario fails as its description says. */
    ck_assert_int_eq(ckh((const char *[]){"run", text_path, NULL}, NULL, &out), 1);
    HAS(out, "resume-equivalence");
    free(out);
}
END_TEST

/* `ckh shrink`'s refusals after the scenario is read: an option without
 * its value is an unexpected argument (status 2), and a shrunk scenario
 * that cannot be written is status 3 naming the path and why, with
 * nothing written. */
START_TEST(test_shrink_option_without_value_and_unwritable_output)
{
    char file[1300], in[500], bad[600];
    snprintf(file, sizeof file, "%s/examples/bug-momentum-not-saved.yaml", scen);
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"shrink", file, "-o", NULL}, NULL, &out), 2);
    HAS(out, "ckh shrink: unexpected argument '-o'");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"shrink", file, "--max-runs", NULL}, NULL, &out), 2);
    HAS(out, "ckh shrink: unexpected argument '--max-runs'");
    free(out);
    char *text = slurp_path(file);
    char *exp = strstr(text, "\nexpect:");
    ck_assert_ptr_nonnull(exp);
    exp[1] = '\0';
    snprintf(in, sizeof in, "%s/mom.yaml", work);
    write_file(in, text);
    free(text);
    snprintf(bad, sizeof bad, "%s/no-such-folder/out.yaml", work);
    ck_assert_int_eq(ckh((const char *[]){"shrink", in, "--max-runs", "1", "--out", bad, NULL}, NULL, &out), 3);
    char want[700];
    snprintf(want, sizeof want, "ckh shrink: cannot write %s: ", bad);
    HAS(out, want);
    ck_assert_ptr_null(strstr(out, "replay:"));
    free(out);
    struct stat sb;
    ck_assert_int_ne(stat(bad, &sb), 0);
}
END_TEST

/* validate-backend refuses what cannot run (exit 2, the reason said):
 * two libraries, --state with more than one case or with the load case
 * (which has no states); -h is the usage on stdout, status 0. */
START_TEST(test_validate_backend_refusals)
{
    static const struct bad_case cases[] = {
        {{"validate-backend", "a.so", "b.so"}, "ckh validate-backend: one library at a time (a.so, b.so)"},
        {{"validate-backend", "backends/libbk_adir.so", "--state", "3"},
         "ckh validate-backend: --state needs --case NAME (the state numbers count within one case)"},
        {{"validate-backend", "backends/libbk_adir.so", "--case", "load", "--state", "1"},
         "ckh validate-backend: --state needs exactly one case selected"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int st = ckh(cases[i].args, NULL, &out);
        ck_assert_msg(st == 2, "case %zu: status %d:\n%s", i, st, out);
        HAS(out, cases[i].says);
        free(out);
    }
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"validate-backend", "-h", NULL}, NULL, &out), 0);
    ck_assert_msg(strncmp(out, "usage: ckh validate-backend LIB.so [options]\n", 45) == 0, "%s", out);
    free(out);
}
END_TEST

/* `ckh list savers|backends LIB.so` describes each plugin library after
 * the built-in ones: its name, path, ABI version, features and the file
 * that was loaded with its build id; a missing library is exit 2 naming
 * its path. */
START_TEST(test_list_plugin_libraries)
{
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"list", "savers", "plugins/libckh_example_saver.so", NULL}, NULL, &out),
                     0);
    HAS(out, "savers:\n  atomic-dir ");
    HAS(out, "example-saver                plugin plugins/libckh_example_saver.so, ABI version 1: "
             "check latest-pointer resume view-leader\n");
    HAS(out, "/plugins/libckh_example_saver.so (build-id ");
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"list", "backends", "backends/libbk_adir.so", NULL}, NULL, &out), 0);
    HAS(out, "backends:\n  minidb                       version 1\n");
    HAS(out, "bk_adir                      plugin backends/libbk_adir.so, ABI version 1\n");
    HAS(out, "/backends/libbk_adir.so (build-id ");
    free(out);
    char missing[400];
    snprintf(missing, sizeof missing, "%s/x.so", work);
    ck_assert_int_eq(ckh((const char *[]){"list", "savers", missing, NULL}, NULL, &out), 2);
    char want[500];
    snprintf(want, sizeof want, "ckh list: plugin %s: no such file\n", missing);
    HAS(out, want);
    free(out);
}
END_TEST

/* Integer options take 0x/0X and hexadecimal digits of either case (the
 * same seed as in decimal) and refuse an empty or bad hex number; an
 * output whose folder is a file, or a report path that is a folder, and a
 * failure folder that is a file are refused before anything runs. */
START_TEST(test_hex_options_and_output_kinds)
{
    char *dec, *out;
    ck_assert_int_eq(ckh((const char *[]){"fuzz", "--print-seed", "31", NULL}, NULL, &dec), 0);
    HAS(dec, "# ckh fuzz seed 31 ");
    ck_assert_int_eq(ckh((const char *[]){"fuzz", "--print-seed", "0x1f", NULL}, NULL, &out), 0);
    ck_assert_str_eq(out, dec);
    free(out);
    ck_assert_int_eq(ckh((const char *[]){"fuzz", "--print-seed", "0X1F", NULL}, NULL, &out), 0);
    ck_assert_str_eq(out, dec);
    free(out);
    free(dec);
    char file[1300], plain[400], inside[500], want[1400];
    snprintf(file, sizeof file, "%s/ddp/uninterrupted.yaml", scen);
    snprintf(plain, sizeof plain, "%s/afile", work);
    write_file(plain, "x\n");
    snprintf(inside, sizeof inside, "%s/x.json", plain);
    const struct {
        const char *args[6];
        const char *says;  /* the message: says, then path, then after */
        const char *path;
        const char *after;
    } cases[] = {
        {{"fuzz", "--print-seed", "0x1G"}, "--print-seed expects an integer 0..18446744073709551615, got '0x1G'", "", ""},
        {{"fuzz", "--print-seed", "0x"}, "--print-seed expects an integer 0..18446744073709551615, got '0x'", "", ""},
        {{"run", "--json", work, file}, "ckh run: cannot write the JSON report ", work, ": is a folder"},
        {{"run", "--json", inside, file}, "ckh run: cannot write the JSON report ", inside, ": Not a directory"},
        {{"fuzz", "--out", plain}, "ckh fuzz: cannot write the failure folder (--out) ", plain, ": not a folder"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = ckh(cases[i].args, NULL, &out);
        ck_assert_msg(st == 2, "case %zu: status %d:\n%s", i, st, out);
        snprintf(want, sizeof want, "%s%s%s", cases[i].says, cases[i].path, cases[i].after);
        HAS(out, want);
        free(out);
    }
    /* Nothing was written: the file is as it was, the folder holds only it. */
    char *text = slurp_path(plain);
    ck_assert_str_eq(text, "x\n");
    free(text);
    ck_assert_int_eq(count_entries(work, ""), 3); /* ., .., afile */
}
END_TEST

static void copy_file(const char *from, const char *to);

/* The HTML report of validate-backend escapes the library's path (a
 * folder may hold <, >, & and "), and names each case with its verdict. */
START_TEST(test_validate_html_escapes)
{
    char dir[400], lib[500], html[500];
    snprintf(dir, sizeof dir, "%s/a&b<c>\"d", work);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(lib, sizeof lib, "%s/lib.so", dir);
    copy_file("backends/libbk_adir.so", lib);
    snprintf(html, sizeof html, "%s/v.html", work);
    char *out;
    ck_assert_int_eq(ckh((const char *[]){"validate-backend", lib, "--case", "contract:epochs", "--html", html,
                                          NULL}, NULL, &out), 0);
    HAS(out, "PASS  contract:epochs (");
    free(out);
    char *text = slurp_path(html), want[700];
    snprintf(want, sizeof want, "<h1>ckh validate-backend %s/a&amp;b&lt;c&gt;&quot;d/lib.so</h1>", work);
    HAS(text, want);
    HAS(text, "<tr><td>contract:epochs</td><td class=\"pass\">PASS</td>");
    ck_assert_ptr_null(strstr(text, "a&b"));
    free(text);
}
END_TEST

/* A fuzz seed's scenario names the --backend only for a workload that
 * uses a checkpoint backend; the same seed without --backend names none. */
START_TEST(test_fuzz_backend_in_scenario)
{
    int with = 0, without = 0;
    for (int seed = 1; seed <= 6; seed++) {
        char num[8], *out, *plain;
        snprintf(num, sizeof num, "%d", seed);
        ck_assert_int_eq(ckh((const char *[]){"fuzz", "--print-seed", num, "--backend", "minidb", NULL}, NULL, &out),
                         0);
        ck_assert_int_eq(ckh((const char *[]){"fuzz", "--print-seed", num, NULL}, NULL, &plain), 0);
        ck_assert_ptr_null(strstr(plain, "backend: "));
        if (strstr(out, "backend: minidb\n")) {
            with++;
            ck_assert_ptr_null(strstr(out, "workload: ddp-train\n"));
        } else {
            without++;
        }
        free(out);
        free(plain);
    }
    /* Seeds 1..6 draw both kinds of workload (fixed by the generator). */
    ck_assert_int_gt(with, 0);
    ck_assert_int_gt(without, 0);
}
END_TEST

START_TEST(test_shrink_uses_tmpdir)
{
    char env_tmp[400], file[1300], outp[400];
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", work);
    const char *env[] = {env_tmp, NULL};
    int in = inotify_init1(IN_NONBLOCK);
    ck_assert_int_ge(in, 0);
    ck_assert_int_ge(inotify_add_watch(in, work, IN_CREATE), 0);
    snprintf(file, sizeof file, "%s/ddp/uninterrupted.yaml", scen);
    snprintf(outp, sizeof outp, "%s/out.yaml", work);
    char *out;
    /* It passes, so nothing shrinks; the cache folder is made first. */
    ck_assert_int_eq(ckh((const char *[]){"shrink", file, "-o", outp, NULL}, env, &out), 2);
    free(out);
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n = read(in, buf, sizeof buf);
    bool seen = false;
    for (ssize_t off = 0; n > 0 && off < n;) {
        const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
        seen |= ev->len && strncmp(ev->name, "ckh-shrink-", 11) == 0;
        off += (ssize_t)(sizeof *ev + ev->len);
    }
    close(in);
    ck_assert_msg(seen, "ckh shrink made no folder under TMPDIR");
}
END_TEST

/* ---- user code under scenarios: workload plugins ---- */

/* Writes a scenario for the counter test plugin (found through
 * CKH_PLUGIN_PATH) with extra text after the job, into work/name. */
static void counter_scenario(const char *name, const char *options, const char *rest)
{
    char path[512], text[2048];
    snprintf(path, sizeof path, "%s/%s", work, name);
    snprintf(text, sizeof text,
             "job:\n  workload: libwl_counter.so\n  nodes: 2\n  options: {%s}\n"
             "  collective_timeout: 5s\n%s",
             options, rest);
    write_file(path, text);
}

static const char *const plugin_env[] = {"CKH_PLUGIN_PATH=test-plugins", NULL};

/* A user's workload plugin runs under a kill of rank 1 and passes; the
 * same plugin with a resume bug fails with a verdict naming the quantity
 * and the step where it first diverged. */
START_TEST(test_workload_plugin_judged)
{
    char *out = NULL, path[512];
    const char *kill = "faults:\n  - {on: {node: rank_1, phase: epoch, step: 8, op: allreduce}, do: kill}\n";
    counter_scenario("good.yaml", "steps: 12, every: 3", kill);
    snprintf(path, sizeof path, "%s/good.yaml", work);
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, plugin_env, &out), 0);
    HAS(out, "PASS  good");
    free(out);
    counter_scenario("bug.yaml", "steps: 12, every: 3, bug_resume_zero: true", kill);
    snprintf(path, sizeof path, "%s/bug.yaml", work);
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, plugin_env, &out), 1);
    HAS(out, "FAIL  bug");
    HAS(out, "counter");
    HAS(out, "step 7");
    free(out);
}
END_TEST

/* A plugin that crashes in its node program is an error verdict of that
 * scenario, with the signal named; ckh itself goes on. */
START_TEST(test_crashing_plugin_is_a_verdict)
{
    char *out = NULL, path[512], text[256];
    snprintf(path, sizeof path, "%s/crash.yaml", work);
    snprintf(text, sizeof text, "job: {workload: ./libwl_crash.so}\n");
    write_file(path, text);
    char lib[600], real[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/libwl_crash.so", work);
    ck_assert_ptr_nonnull(realpath("test-plugins/libwl_crash.so", real));
    ck_assert_int_eq(symlink(real, lib), 0);
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 3);
    HAS(out, "signal 11");
    HAS(out, "code under test");
    free(out);
}
END_TEST

/* Copies the file at from to to (a copy, not a link: another file). */
static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *o = fopen(to, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(o);
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, got, o), got);
    fclose(in);
    ck_assert_int_eq(fclose(o), 0);
}

/* How many times what occurs in the line of text that starts with prefix. */
static int count_in_line(const char *text, const char *prefix, const char *what)
{
    const char *line = strstr(text, prefix);
    ck_assert_ptr_nonnull(line);
    const char *end = strchr(line, '\n');
    int n = 0;
    for (const char *p = line; (p = strstr(p, what)) != NULL && (!end || p < end); p += strlen(what))
        n++;
    return n;
}

/* A bare plugin name is looked up beside the scenario first: the copy
 * there is taken over the one of CKH_PLUGIN_PATH, every verdict (terminal,
 * JSON, JUnit) names the file taken with its build id, and the other file
 * of that name is named as shadowed. */
START_TEST(test_plugin_beside_scenario_taken)
{
    char *out = NULL, path[512], lib[512], here[PATH_MAX], env_lib[PATH_MAX], want[PATH_MAX + 512];
    ck_assert_ptr_nonnull(realpath("test-plugins/libwl_counter.so", env_lib));
    snprintf(lib, sizeof lib, "%s/libwl_counter.so", work);
    copy_file(env_lib, lib);
    ck_assert_ptr_nonnull(realpath(lib, here));
    counter_scenario("beside.yaml", "steps: 6, every: 3", "");
    snprintf(path, sizeof path, "%s/beside.yaml", work);
    char json[600], junit[600];
    snprintf(json, sizeof json, "%s/r.json", work);
    snprintf(junit, sizeof junit, "%s/r.xml", work);
    ck_assert_int_eq(ckh((const char *[]){"run", path, "--json", json, "--junit", junit, NULL}, plugin_env, &out), 0);
    HAS(out, "PASS  beside");
    snprintf(want, sizeof want, "      plugin workload libwl_counter.so: %s (build-id ", here);
    HAS(out, want);
    snprintf(want, sizeof want, "      warning: libwl_counter.so also names %s, shadowed", env_lib);
    HAS(out, want);
    free(out);
    out = slurp_path(json);
    snprintf(want, sizeof want, "{\"role\": \"workload\", \"name\": \"libwl_counter.so\", \"path\": \"%s\", \"id\": \"build-id ",
             here);
    HAS(out, want);
    snprintf(want, sizeof want, "\"shadowed\": [\"%s\"]}", env_lib);
    HAS(out, want);
    free(out);
    out = slurp_path(junit);
    snprintf(want, sizeof want, "<property name=\"plugin.workload\" value=\"libwl_counter.so: %s (build-id ", here);
    HAS(out, want);
    snprintf(want, sizeof want, "<property name=\"plugin.workload.shadowed\" value=\"%s\"/>", env_lib);
    HAS(out, want);
    free(out);
    /* ckh list names the file the same way, the working folder standing
     * for the scenario's: here CKH_PLUGIN_PATH's. */
    ck_assert_int_eq(ckh((const char *[]){"list", "workloads", "libwl_counter.so", NULL}, plugin_env, &out), 0);
    snprintf(want, sizeof want, "file %s (build-id ", env_lib);
    HAS(out, want);
    ck_assert_ptr_null(strstr(out, "warning:"));
    free(out);
}
END_TEST

/* A plugin that is not found: the error names the scenario's
 * file:line:column and the plugin once, lists every place looked in, in
 * order, and points at the file beside the scenario when the path missed
 * it. */
START_TEST(test_plugin_not_found_says_where)
{
    char *out = NULL, path[512], lib[512], want[1024];
    snprintf(path, sizeof path, "%s/notfound.yaml", work);
    write_file(path, "# a plugin nowhere\njob:\n  workload: libnothing.so\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, plugin_env, &out), 2);
    snprintf(want, sizeof want,
             "notfound.yaml:3:13: job.workload: plugin libnothing.so not found; looked beside the scenario (%s), "
             "in CKH_PLUGIN_PATH (test-plugins) and in ckh's plugin folder (",
             work);
    HAS(out, want);
    ck_assert_int_eq(count_in_line(out, "ERROR", "libnothing.so"), 1);
    free(out);
    snprintf(lib, sizeof lib, "%s/libwl_counter.so", work);
    copy_file("test-plugins/libwl_counter.so", lib);
    snprintf(path, sizeof path, "%s/wrongdir.yaml", work);
    write_file(path, "job:\n  workload: ./lib/libwl_counter.so\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 2);
    HAS(out, "wrongdir.yaml:2:13: job.workload: plugin ./lib/libwl_counter.so: no such file");
    HAS(out, "libwl_counter.so is beside the scenario: write ./libwl_counter.so");
    free(out);
}
END_TEST

/* A fuzz output without its summary line ("N seeds run (shard 1/1, J
 * jobs, ...) in T s: ..."), the one line that names --jobs and the time. */
static char *without_summary(const char *out)
{
    char *res = calloc(1, strlen(out) + 1);
    ck_assert_ptr_nonnull(res);
    for (const char *l = out; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l + 1) : strlen(l);
        const char *mark = strstr(l, " seeds run (shard ");
        if (!mark || mark >= l + len)
            strncat(res, l, len);
        l += len;
    }
    return res;
}

/* A campaign over a workload whose node crashes its worker in some seeds
 * (the crash test plugin draws crash: true one seed in four): each such
 * seed, and only those, is an error naming the signal, with the message
 * of a worker that died; the other seeds still run and pass; everything
 * but the summary line is the same with one, two and three workers. */
START_TEST(test_fuzz_crashing_seeds_reported_whatever_jobs)
{
    enum { SEEDS = 40 };
    const char *args[] = {"fuzz", "--workload", "libwl_crash.so", "--seeds", "40", "--no-shrink",
                          "--determinism-every", "1", "--jobs", NULL, NULL};
    const char *jobs[] = {"1", "2", "3"};
    char *rest[3], summary[128];
    for (int i = 0; i < 3; i++) {
        char *out;
        args[9] = jobs[i];
        ck_assert_int_eq(ckh(args, plugin_env, &out), 3);
        rest[i] = without_summary(out);
        free(out);
    }
    ck_assert_str_eq(rest[0], rest[1]);
    ck_assert_str_eq(rest[0], rest[2]);
    int crashed = 0;
    for (int s = 1; s <= SEEDS; s++) {
        char seed[16], line[128], *text;
        snprintf(seed, sizeof seed, "%d", s);
        ck_assert_int_eq(ckh((const char *[]){"fuzz", "--workload", "libwl_crash.so", "--print-seed",
                                              seed, NULL}, plugin_env, &text), 0);
        bool crash = strstr(text, "crash: true") != NULL;
        HAS(text, crash ? "crash: true" : "crash: false");
        free(text);
        snprintf(line, sizeof line, "ERROR seed %d: the worker died running the seed (killed by "
                 "signal 11", s);
        ck_assert_msg((strstr(rest[0], line) != NULL) == crash, "seed %d (crash: %d) in:\n%s", s,
                      crash, rest[0]);
        crashed += crash;
    }
    ck_assert_int_ge(crashed, 2); /* and not every seed: the rest ran and passed */
    ck_assert_int_le(crashed, SEEDS - 2);
    char *out;
    ck_assert_int_eq(ckh(args, plugin_env, &out), 3);
    /* a seed whose worker died did not report its determinism check */
    snprintf(summary, sizeof summary, "%d seeds run (shard 1/1, 3 jobs, %d with the determinism check)",
             SEEDS, SEEDS - crashed);
    HAS(out, summary);
    snprintf(summary, sizeof summary, ": 0 failed, %d errors", crashed);
    HAS(out, summary);
    free(out);
    for (int i = 0; i < 3; i++)
        free(rest[i]);
}
END_TEST

/* What a workload cannot honour is refused with exit status 2, naming the
 * file and the key; a plugin that is not there names where ckh looked. */
START_TEST(test_plugin_refusals)
{
    char *out = NULL, path[512];
    snprintf(path, sizeof path, "%s/backend.yaml", work);
    write_file(path, "job: {workload: ddp-train, ranks: 2, backend: minidb}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 2);
    HAS(out, "job.backend");
    HAS(out, "would be ignored");
    free(out);
    snprintf(path, sizeof path, "%s/saver.yaml", work);
    write_file(path, "job: {workload: seed-pipeline, saver: atomic-dir}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 2);
    HAS(out, "job.saver");
    free(out);
    snprintf(path, sizeof path, "%s/missing.yaml", work);
    write_file(path, "job: {workload: ./nowhere/libloop.so}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 2);
    HAS(out, "missing.yaml:1:17: job.workload: plugin ./nowhere/libloop.so: no such file");
    HAS(out, "a path is taken from the scenario's folder");
    free(out);
    snprintf(path, sizeof path, "%s/notfound.yaml", work);
    write_file(path, "job: {workload: libnothing.so}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, plugin_env, &out), 2);
    HAS(out, "CKH_PLUGIN_PATH (test-plugins)");
    free(out);
    snprintf(path, sizeof path, "%s/oom.yaml", work);
    write_file(path, "job: {workload: seed-pipeline}\nfaults:\n  - {on: {op: open}, do: gpu-oom}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, NULL}, NULL, &out), 2);
    HAS(out, "does not support the gpu-oom fault");
    free(out);
}
END_TEST

/* Plugin code never runs in ckh's own process: every verb that loads a
 * plugin loads it first in a child with the plugin load limit. A
 * constructor that crashes is bad input (exit 2) naming the file and the
 * signal; one that never returns is killed at the limit, named. */
static const char *const fast_limit_env[] = {"CKH_PLUGIN_TIMEOUT=1s", NULL};

START_TEST(test_plugin_load_contained)
{
    static const char *const cats[] = {"workloads", "savers", "backends"};
    static const char *const kinds[] = {"workload", "saver", "backend"};
    char *out = NULL, lib[256], want[PATH_MAX + 512];
    for (int i = 0; i < 3; i++) {
        snprintf(lib, sizeof lib, "plugins/libpl_%s_good.so", kinds[i]);
        ck_assert_int_eq(ckh((const char *[]){"list", cats[i], lib, NULL}, NULL, &out), 0);
        snprintf(want, sizeof want, "pl_test");
        HAS(out, want);
        snprintf(want, sizeof want, "plugin %s, ABI version 1", lib);
        HAS(out, want);
        free(out);
        snprintf(lib, sizeof lib, "plugins/libpl_%s_ctor_segv.so", kinds[i]);
        ck_assert_int_eq(ckh((const char *[]){"list", cats[i], lib, NULL}, NULL, &out), 2);
        snprintf(want, sizeof want, "ckh list: ./%s: %s plugin: a constructor or the entry point "
                 "ckh_%s_plugin_v1 crashed with signal 11 (SIGSEGV", lib, kinds[i], kinds[i]);
        HAS(out, want);
        free(out);
        snprintf(lib, sizeof lib, "plugins/libpl_%s_ctor_hang.so", kinds[i]);
        ck_assert_int_eq(ckh((const char *[]){"list", cats[i], lib, NULL}, fast_limit_env, &out), 2);
        snprintf(want, sizeof want, "ckh list: ./%s: %s plugin: loading did not finish within the "
                 "plugin load limit of 1000 ms", lib, kinds[i]);
        HAS(out, want);
        free(out);
    }
    ck_assert_int_eq(ckh((const char *[]){"list", "workloads", "plugins/libpl_workload_good.so", NULL},
                         (const char *const[]){"CKH_PLUGIN_TIMEOUT=later", NULL}, &out), 2);
    HAS(out, "CKH_PLUGIN_TIMEOUT: expected a duration");
    free(out);

    /* A scenario naming such a workload: run (in a worker), replay and
     * shrink (in ckh's process), and fuzz --workload, all bad input. */
    char segv[PATH_MAX], hang[PATH_MAX], path[PATH_MAX + 64], text[PATH_MAX + 64];
    ck_assert_ptr_nonnull(realpath("plugins/libpl_workload_ctor_segv.so", segv));
    ck_assert_ptr_nonnull(realpath("plugins/libpl_workload_ctor_hang.so", hang));
    snprintf(path, sizeof path, "%s/segv.yaml", work);
    snprintf(text, sizeof text, "job: {workload: %s}\n", segv);
    write_file(path, text);
    static const char *const verbs[] = {"run", "replay", "shrink"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ckh((const char *[]){verbs[i], path, NULL}, NULL, &out), 2);
        snprintf(want, sizeof want, "job.workload: %s: workload plugin: a constructor or the entry "
                 "point ckh_workload_plugin_v1 crashed with signal 11 (SIGSEGV", segv);
        HAS(out, want);
        free(out);
    }
    ck_assert_int_eq(ckh((const char *[]){"fuzz", "--workload", segv, "--seeds", "1", NULL}, NULL, &out), 2);
    HAS(out, "crashed with signal 11 (SIGSEGV");
    free(out);
    snprintf(path, sizeof path, "%s/hang.yaml", work);
    snprintf(text, sizeof text, "job: {workload: %s}\n", hang);
    write_file(path, text);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(ckh((const char *[]){verbs[i], path, NULL}, fast_limit_env, &out), 2);
        snprintf(want, sizeof want, "%s: workload plugin: loading did not finish within the plugin "
                 "load limit of 1000 ms", hang);
        HAS(out, want);
        free(out);
    }
}
END_TEST

/* A job size a workload refuses names the file, the line:column of the
 * key's value, the key, what was given and what is accepted, with exit
 * status 2: before the run starts, never a memory limit or a failed
 * reference run. */
START_TEST(test_job_size_refusals_located)
{
    static const struct {
        const char *job;  /* the job block after "job:\n" */
        const char *want; /* after "<file>:" */
    } cases[] = {
        {"  workload: ddp-train\n  nodes: 100\n", "3:10: job.nodes: ddp-train supports at most 64 ranks, got 100"},
        {"  workload: ddp-train\n  ranks: 65\n", "3:10: job.ranks: ddp-train supports at most 64 ranks, got 65"},
        {"  workload: ddp-train\n  nodes: 2\n  gpu_memory: 1B\n",
         "4:15: job.gpu_memory: 1 byte cannot hold a rank's model on its GPU (weights and momentum of "
         "in_dim 8, hidden 16, out_dim 4: 1696 bytes); expected at least 1696 bytes"},
        {"  workload: ddp-train\n  nodes: 2\n  epochs: 1000000\n",
         "4:11: job.epochs: 1000000 epochs need a 2.1 GiB record per run (8 optimizer steps per epoch, "
         "each step's digests and sample ids for 2 ranks), over ddp-train's limit of 1 GiB; at most "},
        {"  workload: ddp-train\n  nodes: 2\n  steps: 9\n",
         "4:10: job.steps: ddp-train counts epochs: use job.epochs (and options.samples) instead of steps"},
        {"  workload: param-server\n  nodes: 1024\n",
         "3:10: job.nodes: workload 'param-server' has 1026 nodes for 1024 given; a job has 1 to 1024"},
        {"  workload: seed-pipeline\n  steps: 5\n",
         "3:10: job.steps: workload 'seed-pipeline' does not support job.steps (it counts epochs: use job.epochs)"},
        {"  workload: ddp-train\n  nodes: 2\n  epochs: 2\nrestart:\n  world_size: 1024\n",
         "6:15: restart.world_size: ddp-train supports at most 64 ranks, got 1024"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[PATH_MAX], text[512], want[PATH_MAX + 512], *out = NULL;
        snprintf(path, sizeof path, "%s/size%zu.yaml", work, i);
        snprintf(text, sizeof text, "job:\n%s", cases[i].job);
        write_file(path, text);
        ck_assert_int_eq(ckh((const char *[]){"run", path, "--quiet", NULL}, NULL, &out), 2);
        snprintf(want, sizeof want, "%s:%s", path, cases[i].want);
        HAS(out, want);
        const char *most = strstr(out, "; at most ");
        if (most && strstr(cases[i].want, "job.epochs")) {
            /* The most epochs said: the largest whose record fits. */
            struct ckh_ddp_config cfg;
            ckh_ddp_config_default(&cfg);
            cfg.world = 2;
            cfg.epochs = atoll(most + strlen("; at most "));
            ck_assert_int_gt(cfg.epochs, 0);
            ck_assert_uint_le(ckh_ddp_record_bytes(&cfg, 2), CKH_DDP_RECORD_MAX_BYTES);
            cfg.epochs++;
            ck_assert_uint_gt(ckh_ddp_record_bytes(&cfg, 2), CKH_DDP_RECORD_MAX_BYTES);
            HAS(most, " epochs with this job's ranks, samples, batch and accum");
        }
        free(out);
    }
}
END_TEST

/* Paths longer than 255 characters are whole in every message: a
 * scenario that does not parse, a job size refused, a plugin that
 * crashes loading, replay's and shrink's messages. */
START_TEST(test_long_paths_whole_in_messages)
{
    char dir[1024], path[PATH_MAX], want[2 * PATH_MAX + 512], lib[PATH_MAX], real[PATH_MAX], *out = NULL;
    int at = snprintf(dir, sizeof dir, "%s", work);
    for (int i = 0; i < 4; i++) { /* 4 folders of 90 characters: a path of over 360 */
        at += snprintf(dir + at, sizeof dir - (size_t)at, "/%c", 'a' + i);
        for (int k = 1; k < 90; k++)
            dir[at++] = (char)('a' + i);
        dir[at] = '\0';
        ck_assert_int_eq(mkdir(dir, 0755), 0);
    }
    snprintf(path, sizeof path, "%s/syntax.yaml", dir);
    write_file(path, "job: [\n");
    ck_assert_int_gt((int)strlen(path), 355);
    ck_assert_int_eq(ckh((const char *[]){"run", path, "--quiet", NULL}, NULL, &out), 2);
    snprintf(want, sizeof want, "%s:2:1: malformed YAML", path);
    HAS(out, want);
    free(out);
    snprintf(path, sizeof path, "%s/size.yaml", dir);
    write_file(path, "job:\n  workload: ddp-train\n  nodes: 100\n");
    static const char *const verbs[] = {"run", "replay", "shrink"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ckh((const char *[]){verbs[i], path, NULL}, NULL, &out), 2);
        snprintf(want, sizeof want, "%s:3:10: job.nodes: ddp-train supports at most 64 ranks, got 100", path);
        HAS(out, want);
        free(out);
    }
    snprintf(lib, sizeof lib, "%s/libcrash.so", dir);
    ck_assert_ptr_nonnull(realpath("plugins/libpl_workload_ctor_segv.so", real));
    ck_assert_int_eq(symlink(real, lib), 0);
    ck_assert_int_eq(ckh((const char *[]){"list", "workloads", lib, NULL}, NULL, &out), 2);
    snprintf(want, sizeof want, "ckh list: %s: workload plugin: a constructor", lib);
    HAS(out, want);
    free(out);
    snprintf(path, sizeof path, "%s/plugin.yaml", dir);
    write_file(path, "job: {workload: ./libcrash.so}\n");
    ck_assert_int_eq(ckh((const char *[]){"run", path, "--quiet", NULL}, NULL, &out), 2);
    snprintf(want, sizeof want, "%s:1:17: job.workload: %s/libcrash.so: workload plugin: a constructor", path, dir);
    HAS(out, want);
    free(out);
}
END_TEST

/* A folder nested deeper than ckh walks names the limit and its value. */
START_TEST(test_folder_depth_limit_named)
{
    char dir[PATH_MAX], *out = NULL;
    int at = snprintf(dir, sizeof dir, "%s/top", work);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    for (int i = 0; i <= 65; i++) {
        at += snprintf(dir + at, sizeof dir - (size_t)at, "/d");
        ck_assert_int_eq(mkdir(dir, 0755), 0);
    }
    char top[PATH_MAX];
    snprintf(top, sizeof top, "%s/top", work);
    ck_assert_int_eq(ckh((const char *[]){"run", top, NULL}, NULL, &out), 2);
    char want[PATH_MAX + 200];
    snprintf(want, sizeof want, "ckh run: %s: cannot list scenarios: folders nested more than 64 deep below it "
             "(the limit of a scenario folder's depth is 64)", top);
    HAS(out, want);
    free(out);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("paths-and-options");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_pass_by_detection_says_what);
    tcase_add_test(tc, test_help_and_man_page);
    tcase_add_test(tc, test_run_shards_partition);
    tcase_add_test(tc, test_numeric_options_refused);
    tcase_add_test(tc, test_replay_of_a_folder);
    tcase_add_test(tc, test_report_paths_checked_first);
    tcase_add_test(tc, test_fifo_size_and_folders);
    tcase_add_test(tc, test_parse_time_limit);
    tcase_add_test(tc, test_long_description_runs);
    tcase_add_test(tc, test_empty_folder);
    tcase_add_test(tc, test_shrink_uses_tmpdir);
    tcase_add_test(tc, test_verb_argument_refusals);
    tcase_add_test(tc, test_list_scenarios_with_errors);
    tcase_add_test(tc, test_shrink_refusal_and_default_output);
    tcase_add_test(tc, test_shrink_option_without_value_and_unwritable_output);
    tcase_add_test(tc, test_validate_backend_refusals);
    tcase_add_test(tc, test_list_plugin_libraries);
    tcase_add_test(tc, test_hex_options_and_output_kinds);
    tcase_add_test(tc, test_validate_html_escapes);
    tcase_add_test(tc, test_fuzz_backend_in_scenario);
    suite_add_tcase(s, tc);
    /* Cases a machine or build may not allow: CTest entries of their own
     * (test_cli_user, test_cli_memlimit), skipped, saying why, elsewhere. */
    TCase *tu = tcase_create("user");
    tcase_add_checked_fixture(tu, setup, teardown);
    tcase_set_timeout(tu, 280);
    tcase_set_tags(tu, "user");
    tcase_add_test(tu, test_unreadable_subfolder);
    suite_add_tcase(s, tu);
    TCase *tm = tcase_create("memlimit");
    tcase_add_checked_fixture(tm, setup, teardown);
    tcase_set_timeout(tm, 280);
    tcase_set_tags(tm, "memlimit");
    tcase_add_test(tm, test_memory_limit_verdict);
    suite_add_tcase(s, tm);
    TCase *tp = tcase_create("plugins");
    tcase_add_checked_fixture(tp, setup, teardown);
    tcase_set_timeout(tp, 280);
    tcase_add_test(tp, test_workload_plugin_judged);
    tcase_add_test(tp, test_crashing_plugin_is_a_verdict);
    tcase_add_test(tp, test_plugin_beside_scenario_taken);
    tcase_add_test(tp, test_plugin_not_found_says_where);
    tcase_add_test(tp, test_fuzz_crashing_seeds_reported_whatever_jobs);
    tcase_add_test(tp, test_plugin_refusals);
    tcase_add_test(tp, test_plugin_load_contained);
    tcase_add_test(tp, test_job_size_refusals_located);
    tcase_add_test(tp, test_long_paths_whole_in_messages);
    tcase_add_test(tp, test_folder_depth_limit_named);
    suite_add_tcase(s, tp);
    TCase *ts = tcase_create("signals");
    tcase_add_checked_fixture(ts, setup, teardown);
    tcase_set_timeout(ts, 280);
    tcase_add_test(ts, test_run_interrupted_cleans_up);
    tcase_add_test(ts, test_killed_run_folder_swept_later);
    tcase_add_test(ts, test_fuzz_interrupted_reports);
    tcase_add_test(ts, test_fuzz_workers_die_with_ckh);
    tcase_add_test(ts, test_fuzz_listing_independent_of_jobs);
    tcase_add_test(ts, test_fuzz_shrunk_line_names_the_cause);
    suite_add_tcase(s, ts);
    return s;
}

int main(int argc, char **argv)
{
    /* Run from the build folder (CTest's working folder), where ckh and
     * backends/ are; another caller (scripts/memcheck.sh) names this
     * program by its path in that folder. */
    struct stat st;
    if (stat("./ckh", &st) != 0 && argc > 0 && strrchr(argv[0], '/')) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(argv[0], '/') - argv[0]), argv[0]);
        if (chdir(dir) != 0)
            return EXIT_FAILURE;
    }
    return ckh_test_run(cli_suite());
}
