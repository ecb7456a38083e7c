/* Tests for real/env.c and real/faults.c without MPI: one real node's
 * environment over the POSIX fs of a temporary folder, its fault script,
 * and what each action does to the process and to the files.
 *
 * Every operation of the fs shim is met by the fault script once, with
 * the path it names (an open file's ops carry the path it was opened
 * by); an ERRNO fault fails exactly that op and leaves the folder as it
 * was. Kills are real (SIGKILL to this process): those cases run the node
 * in a forked child and look at its wait status and at what reached the
 * folder, the firing log and the notes to the launcher. */
#include <check.h>
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/fault_rule.h"
#include "ckh/fs.h"
#include "ckh/op.h"
#include "ckh/posix.h"
#include "ckh/rng.h"
#include "exec/worker.h"
#include "real_env.h"
#include "real_faults.h"
#include "real_nccl.h"
#include "support/files.h"
#include "support/skip.h"

/* ------------------------------------------------------------------ fixture */

static char tmpdir[256];   /* the test's folder */
static char rootdir[300];  /* tmpdir/root: the node's "/" */
static char logpath[300];  /* tmpdir/fired.log: the firing log */
static char statepath[300]; /* tmpdir/state: the shared counters */
static char notesdir[300]; /* tmpdir/notes: the notes to the launcher */

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ckh_test_real_env_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(rootdir, sizeof rootdir, "%s/root", tmpdir);
    snprintf(logpath, sizeof logpath, "%s/fired.log", tmpdir);
    snprintf(statepath, sizeof statepath, "%s/state", tmpdir);
    snprintf(notesdir, sizeof notesdir, "%s/notes", tmpdir);
    ck_assert_int_eq(mkdir(rootdir, 0755), 0);
    ck_assert_int_eq(mkdir(notesdir, 0755), 0);
}

static void rm_tmp(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* rootdir + p */
static const char *in_root(const char *p)
{
    static char buf[4][400];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s%s", rootdir, p);
    return buf[k];
}

/* The whole file at path ("" when missing). */
static char *slurp(const char *path)
{
    if (access(path, F_OK) != 0)
        return strdup("");
    size_t len = 0;
    return ckh_test_slurp(path, &len);
}

/* One rule: op kind (or -1), path glob (or NULL), nth, action. */
static struct ckh_real_rule rule(int kind, const char *glob, uint64_t nth, struct ckh_fault_action act)
{
    struct ckh_real_rule r = {.fault = 0};
    ckh_fault_rule_init(&r.rule);
    r.rule.kind = kind;
    r.rule.path_glob = glob;
    r.rule.nth = nth;
    r.rule.action = act;
    return r;
}

static struct ckh_fault_action errno_act(int e)
{
    return (struct ckh_fault_action){.kind = CKH_FAULT_ERRNO, .err = e};
}

/* A fault script of n rules with the firing log (and the notes folder,
 * when notes). */
static struct ckh_real_faults *script(const struct ckh_real_rule *rules, size_t n, bool notes)
{
    struct ckh_real_faults_config fc = {.seed = 5,
                                        .rules = rules,
                                        .nrules = n,
                                        .state_path = statepath,
                                        .log_path = logpath,
                                        .notes_dir = notes ? notesdir : NULL,
                                        .run = 2};
    struct ckh_real_faults *f = NULL;
    char msg[256] = "";
    ck_assert_msg(ckh_real_faults_create(&fc, &f, msg, sizeof msg) == 0, "faults: %s", msg);
    return f;
}

/* The environment of node 0 ("rank_0") at rootdir with fault script f. */
static struct ckh_env *node_env(struct ckh_real_faults *f)
{
    struct ckh_real_env_config c = {.root_dir = rootdir, .seed = 9, .node_name = "rank_0",
                                    .node_index = 0, .faults = f};
    struct ckh_env *env = NULL;
    char msg[256] = "";
    ck_assert_msg(ckh_real_env_create(&c, &env, msg, sizeof msg) == 0, "env: %s", msg);
    return env;
}

/* ---------------------------------------------------- create and refusals */

START_TEST(test_env_create_errors)
{
    make_tmp();
    struct ckh_env *env = NULL;
    char msg[512] = "";
    struct ckh_real_env_config c = {.root_dir = rootdir, .node_name = "rank_0"};
    ck_assert_int_eq(ckh_real_env_create(NULL, &env, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_real_env_create(&c, NULL, msg, sizeof msg), CKH_EINVAL);
    c.node_name = NULL;
    ck_assert_int_eq(ckh_real_env_create(&c, &env, msg, sizeof msg), CKH_EINVAL);
    c.node_name = "rank_0";
    c.root_dir = NULL;
    ck_assert_int_eq(ckh_real_env_create(&c, &env, msg, sizeof msg), CKH_EINVAL);
    ck_assert_ptr_null(env);
    /* A root that is not there: the message names it. */
    char missing[400];
    snprintf(missing, sizeof missing, "%s/nowhere", tmpdir);
    c.root_dir = missing;
    ck_assert_int_lt(ckh_real_env_create(&c, &env, msg, sizeof msg), 0);
    ck_assert_ptr_null(env);
    ck_assert_msg(strstr(msg, "the node's folder") && strstr(msg, missing), "%s", msg);
    /* A track file and a record file that cannot be opened. */
    c.root_dir = rootdir;
    char bad[400];
    snprintf(bad, sizeof bad, "%s/no/such/track", tmpdir);
    c.track_path = bad;
    ck_assert_int_eq(ckh_real_env_create(&c, &env, msg, sizeof msg), -ENOENT);
    ck_assert_msg(strstr(msg, "cannot open") && strstr(msg, bad), "%s", msg);
    c.track_path = NULL;
    c.record_path = bad;
    ck_assert_int_lt(ckh_real_env_create(&c, &env, msg, sizeof msg), 0);
    ck_assert_ptr_null(env);
    ck_assert_msg(strstr(msg, bad) != NULL, "%s", msg);
    ckh_real_env_destroy(NULL);
    rm_tmp();
}
END_TEST

START_TEST(test_faults_create_errors)
{
    make_tmp();
    struct ckh_real_faults *f = NULL;
    char msg[512] = "";
    struct ckh_real_faults_config fc = {.seed = 1};
    ck_assert_int_eq(ckh_real_faults_create(NULL, &f, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_real_faults_create(&fc, NULL, msg, sizeof msg), CKH_EINVAL);
    fc.nrules = 1; /* rules missing */
    ck_assert_int_eq(ckh_real_faults_create(&fc, &f, msg, sizeof msg), CKH_EINVAL);
    /* Actions that need a simulated disk are refused on a real folder, by
     * the fault's number in the scenario (1-based) and the action's name. */
    static const enum ckh_fault_kind sim_only[] = {CKH_FAULT_CRASH_BEFORE, CKH_FAULT_POWER_LOSS,
                                                   CKH_FAULT_FSYNC_LOST, CKH_FAULT_CALL};
    for (size_t i = 0; i < sizeof sim_only / sizeof sim_only[0]; i++) {
        struct ckh_real_rule r[2] = {rule(-1, NULL, 1, errno_act(EIO)),
                                     rule(-1, NULL, 1, (struct ckh_fault_action){.kind = sim_only[i]})};
        r[1].fault = 6;
        fc.rules = r;
        fc.nrules = 2;
        ck_assert_int_eq(ckh_real_faults_create(&fc, &f, msg, sizeof msg), CKH_EINVAL);
        char want[128];
        snprintf(want, sizeof want, "fault 7: %s cannot be carried out on the real platform",
                 ckh_fault_action_name(sim_only[i]));
        ck_assert_msg(strstr(msg, want) != NULL, "%s", msg);
        /* With the launcher's notes folder they are armed. */
        fc.notes_dir = notesdir;
        ck_assert_int_eq(ckh_real_faults_create(&fc, &f, msg, sizeof msg), 0);
        ckh_real_faults_destroy(f);
        fc.notes_dir = NULL;
    }
    /* State and log files that cannot be opened: -errno, the path named. */
    struct ckh_real_rule r = rule(-1, NULL, 1, errno_act(EIO));
    char bad[400];
    snprintf(bad, sizeof bad, "%s/no/such/file", tmpdir);
    fc.rules = &r;
    fc.nrules = 1;
    fc.state_path = bad;
    ck_assert_int_eq(ckh_real_faults_create(&fc, &f, msg, sizeof msg), -ENOENT);
    ck_assert_msg(strstr(msg, "cannot open") && strstr(msg, bad), "%s", msg);
    fc.state_path = NULL;
    fc.log_path = bad;
    ck_assert_int_eq(ckh_real_faults_create(&fc, &f, msg, sizeof msg), -ENOENT);
    ck_assert_msg(strstr(msg, bad) != NULL, "%s", msg);
    /* No rules: valid, every op passes; NULL set too. */
    fc.log_path = NULL;
    fc.nrules = 0;
    fc.rules = NULL;
    ck_assert_int_eq(ckh_real_faults_create(&fc, &f, msg, sizeof msg), 0);
    struct ckh_op op = {.kind = CKH_OP_OPEN, .path = "/a"};
    struct ckh_fault_action act = {.kind = CKH_FAULT_KILL_BEFORE};
    ckh_real_faults_enter(f, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_NONE);
    ckh_real_faults_destroy(f);
    act.kind = CKH_FAULT_KILL_BEFORE;
    ckh_real_faults_enter(NULL, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_NONE);
    ckh_real_faults_destroy(NULL);
    rm_tmp();
}
END_TEST

/* ------------------------------------------------ every op meets the script */

/* Runs the node's whole sequence of fs operations; with an ERRNO fault
 * armed on `faulted`, that op returns -EXDEV and the sequence goes on.
 * Returns how many ops failed with -EXDEV. */
static int run_sequence(struct ckh_env *env, enum ckh_op_kind faulted)
{
    struct ckh_fs *fs = env->fs;
    int hit = 0;
#define STEP(kind, expr)                                                                           \
    do {                                                                                           \
        int64_t rc_ = (expr);                                                                      \
        if ((kind) == faulted) {                                                                   \
            ck_assert_msg(rc_ == -EXDEV, "%s: %lld, expected -EXDEV", ckh_op_name(kind),          \
                          (long long)rc_);                                                         \
            hit++;                                                                                 \
        } else {                                                                                   \
            ck_assert_msg(rc_ >= 0, "%s: %lld", ckh_op_name(kind), (long long)rc_);               \
        }                                                                                          \
    } while (0)
    STEP(CKH_OP_MKDIR, ckh_fs_mkdir(fs, "/d"));
    if (faulted == CKH_OP_MKDIR) {
        ck_assert_int_ne(access(in_root("/d"), F_OK), 0); /* nothing done */
        ck_assert_int_eq(ckh_fs_mkdir(fs, "/d"), 0);     /* nth 1: fired once */
    }
    struct ckh_file *f = NULL;
    STEP(CKH_OP_OPEN, ckh_fs_open(fs, "/d/a", CKH_O_RDWR | CKH_O_CREAT, &f));
    if (faulted == CKH_OP_OPEN) {
        ck_assert_int_ne(access(in_root("/d/a"), F_OK), 0);
        ck_assert_int_eq(ckh_fs_open(fs, "/d/a", CKH_O_RDWR | CKH_O_CREAT, &f), 0);
    }
    STEP(CKH_OP_WRITE, ckh_file_write(f, "hello", 5));
    STEP(CKH_OP_PWRITE, ckh_file_pwrite(f, " world", 6, 5));
    struct ckh_gen g = {.seed = 1, .stream = 2};
    STEP(CKH_OP_PWRITE, ckh_file_pwrite_gen(f, &g, 100, 11));
    STEP(CKH_OP_FSYNC, ckh_file_fsync(f));
    STEP(CKH_OP_FDATASYNC, ckh_file_fdatasync(f));
    char buf[16] = "";
    STEP(CKH_OP_PREAD, ckh_file_pread(f, buf, 5, 0));
    STEP(CKH_OP_READ, ckh_file_read(f, buf, 5));
    STEP(CKH_OP_FTRUNCATE, ckh_file_ftruncate(f, 11));
    STEP(CKH_OP_CLOSE, ckh_file_close(f));
    STEP(CKH_OP_RENAME, ckh_fs_rename(fs, "/d/a", "/d/b"));
    ck_assert_int_eq(access(in_root("/d/a"), F_OK) == 0, faulted == CKH_OP_RENAME);
    STEP(CKH_OP_FSYNC_DIR, ckh_fs_fsync_dir(fs, "/d"));
    struct ckh_stat st;
    STEP(CKH_OP_STAT, ckh_fs_stat(fs, "/d", &st));
    STEP(CKH_OP_SYMLINK, ckh_fs_symlink(fs, "b", "/d/latest"));
    if (faulted == CKH_OP_SYMLINK) {
        ck_assert_int_ne(access(in_root("/d/latest"), F_OK), 0);
        ck_assert_int_eq(ckh_fs_symlink(fs, "b", "/d/latest"), 0);
    }
    char target[16] = "";
    STEP(CKH_OP_READLINK, ckh_fs_readlink(fs, "/d/latest", target, sizeof target));
    struct ckh_listing l = {.entries = NULL};
    STEP(CKH_OP_LISTDIR, ckh_fs_listdir(fs, "/d", &l));
    ckh_fs_listing_free(&l);
    STEP(CKH_OP_UNLINK, ckh_fs_unlink(fs, "/d/latest"));
    (void)ckh_fs_unlink(fs, "/d/latest");
    (void)ckh_fs_unlink(fs, "/d/a");
    (void)ckh_fs_unlink(fs, "/d/b");
    STEP(CKH_OP_RMDIR, ckh_fs_rmdir(fs, "/d"));
#undef STEP
    return hit;
}

START_TEST(test_every_op_meets_the_script)
{
    static const enum ckh_op_kind kinds[] = {
        CKH_OP_MKDIR,  CKH_OP_OPEN,   CKH_OP_WRITE,    CKH_OP_FSYNC,   CKH_OP_FDATASYNC,
        CKH_OP_PREAD,  CKH_OP_READ,   CKH_OP_FTRUNCATE, CKH_OP_CLOSE,  CKH_OP_RENAME,
        CKH_OP_FSYNC_DIR, CKH_OP_STAT, CKH_OP_SYMLINK, CKH_OP_READLINK, CKH_OP_LISTDIR,
        CKH_OP_UNLINK, CKH_OP_RMDIR};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        make_tmp();
        struct ckh_real_rule r = rule((int)kinds[i], NULL, 1, errno_act(EXDEV));
        struct ckh_real_faults *f = script(&r, 1, false);
        struct ckh_env *env = node_env(f);
        ck_assert_int_eq(run_sequence(env, kinds[i]), 1);
        ckh_real_env_destroy(env);
        ckh_real_faults_destroy(f);
        /* Each firing is one line of the log, with the op's path. */
        char *log = slurp(logpath);
        char want[128];
        snprintf(want, sizeof want, "fired 0 0 %s errno /", ckh_op_name(kinds[i]));
        ck_assert_msg(strncmp(log, want, strlen(want)) == 0 && strchr(log, '\n') == log + strlen(log) - 1,
                      "log: %s", log);
        free(log);
        rm_tmp();
    }
    /* A pwrite fault catches both positional writes (the described write
     * is one pwrite, as in simfs); the bytes of neither land. */
    make_tmp();
    struct ckh_real_rule r = rule(CKH_OP_PWRITE, "/d/*", 1, errno_act(EXDEV));
    r.rule.repeat = true;
    struct ckh_real_faults *f = script(&r, 1, false);
    struct ckh_env *env = node_env(f);
    ck_assert_int_eq(run_sequence(env, CKH_OP_PWRITE), 2);
    ckh_real_env_destroy(env);
    ckh_real_faults_destroy(f);
    char *log = slurp(logpath);
    ck_assert_str_eq(log, "fired 0 0 pwrite errno /d/a\nfired 0 0 pwrite errno /d/a\n");
    free(log);
    rm_tmp();
}
END_TEST

/* With no rule that fires, the shim is the POSIX fs: results as there. */
START_TEST(test_shim_passes_results_through)
{
    make_tmp();
    struct ckh_real_rule r = rule(CKH_OP_OPEN, "/never/*", 1, errno_act(EIO));
    struct ckh_real_faults *f = script(&r, 1, false);
    struct ckh_env *env = node_env(f);
    struct ckh_fs *fs = env->fs;
    struct ckh_file *file = NULL;
    ck_assert_int_eq(ckh_fs_open(fs, "/missing/a", CKH_O_RDONLY, &file), -ENOENT);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/d"), 0);
    ck_assert_int_eq(ckh_fs_mkdir(fs, "/d"), -EEXIST);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/nope"), -ENOENT);
    ck_assert_int_eq(ckh_fs_unlink(fs, "/d"), -EISDIR);
    ck_assert_int_eq(ckh_fs_open(fs, "/d/a", CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &file), 0);
    ck_assert_int_eq(ckh_file_write(file, "abc", 3), 3);
    ck_assert_int_eq(ckh_file_close(file), 0);
    ck_assert_int_eq(ckh_fs_open(fs, "/d/a", CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &file), -EEXIST);
    ck_assert_int_eq(ckh_fs_rmdir(fs, "/d"), -ENOTEMPTY);
    ck_assert_int_eq(ckh_fs_rename(fs, "/d/zz", "/d/b"), -ENOENT);
    struct ckh_stat st;
    ck_assert_int_eq(ckh_fs_stat(fs, "/d/a", &st), 0);
    ck_assert_uint_eq(st.size_bytes, 3);
    ck_assert_int_eq(ckh_fs_stat(fs, "/d/a/x", &st), -ENOTDIR);
    char t[8];
    ck_assert_int_eq(ckh_fs_readlink(fs, "/d/a", t, sizeof t), -EINVAL);
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_listdir(fs, "/d/a", &l), -ENOTDIR);
    ck_assert_int_eq(ckh_fs_fsync_dir(fs, "/nope"), -ENOENT);
    ck_assert_int_eq(ckh_fs_symlink(fs, "../../etc", "/d/up"), CKH_EESCAPE);
    ckh_real_env_destroy(env);
    ckh_real_faults_destroy(f);
    char *log = slurp(logpath);
    ck_assert_str_eq(log, ""); /* nothing fired */
    free(log);
    rm_tmp();
}
END_TEST

/* ------------------------------------------------------- cut writes, delay */

START_TEST(test_short_write_and_delay)
{
    make_tmp();
    struct ckh_real_rule r[3] = {
        rule(CKH_OP_WRITE, "/s", 1, (struct ckh_fault_action){.kind = CKH_FAULT_SHORT_WRITE,
                                                               .keep_bytes = 4}),
        rule(CKH_OP_PWRITE, "/s", 1, (struct ckh_fault_action){.kind = CKH_FAULT_SHORT_WRITE,
                                                                .keep_bytes = 0}),
        rule(CKH_OP_FSYNC, "/s", 1, (struct ckh_fault_action){.kind = CKH_FAULT_DELAY,
                                                               .delay_ns = 1000000}),
    };
    r[1].fault = 1;
    r[2].fault = 2;
    struct ckh_real_faults *f = script(r, 3, false);
    struct ckh_env *env = node_env(f);
    struct ckh_file *file = NULL;
    ck_assert_int_eq(ckh_fs_open(env->fs, "/s", CKH_O_RDWR | CKH_O_CREAT, &file), 0);
    ck_assert_int_eq(ckh_file_write(file, "0123456789", 10), 4); /* the short count */
    ck_assert_int_eq(ckh_file_write(file, "abc", 3), 3);       /* fired once */
    ck_assert_int_eq(ckh_file_pwrite(file, "zzzz", 4, 0), 0);  /* keeps 0 bytes */
    struct ckh_gen g = {.seed = 3, .stream = 4};
    ck_assert_int_eq(ckh_file_pwrite_gen(file, &g, 6, 7), 6);
    ck_assert_int_eq(ckh_file_fsync(file), 0); /* delayed, then done */
    ck_assert_int_eq(ckh_file_close(file), 0);
    char *got = slurp(in_root("/s"));
    unsigned char want[13];
    memcpy(want, "0123abc", 7);
    ckh_gen_fill(&g, 0, want + 7, 6);
    ck_assert_mem_eq(got, want, 13);
    free(got);
    ckh_real_env_destroy(env);
    ckh_real_faults_destroy(f);
    char *log = slurp(logpath);
    ck_assert_str_eq(log, "fired 0 0 write short_write /s\nfired 1 1 pwrite short_write /s\n"
                          "fired 2 2 fsync delay /s\n");
    free(log);
    rm_tmp();
}
END_TEST

/* A described write cut short: only keep_bytes of the generated bytes. */
START_TEST(test_short_write_gen)
{
    make_tmp();
    struct ckh_real_rule r = rule(CKH_OP_PWRITE, NULL, 1,
                                  (struct ckh_fault_action){.kind = CKH_FAULT_SHORT_WRITE,
                                                            .keep_bytes = 5});
    struct ckh_real_faults *f = script(&r, 1, false);
    struct ckh_env *env = node_env(f);
    struct ckh_file *file = NULL;
    ck_assert_int_eq(ckh_fs_open(env->fs, "/g", CKH_O_WRONLY | CKH_O_CREAT, &file), 0);
    struct ckh_gen g = {.seed = 3, .stream = 4};
    ck_assert_int_eq(ckh_file_pwrite_gen(file, &g, 1000, 0), 5);
    ck_assert_int_eq(ckh_file_close(file), 0);
    struct stat st;
    ck_assert_int_eq(stat(in_root("/g"), &st), 0);
    ck_assert_int_eq(st.st_size, 5);
    ckh_real_env_destroy(env);
    ckh_real_faults_destroy(f);
    rm_tmp();
}
END_TEST

/* ------------------------------------------------------------------ kills */

typedef void (*node_fn)(struct ckh_env *env);

/* Runs fn on a node with the rules in a forked child: its wait status. */
static int run_child(const struct ckh_real_rule *rules, size_t n, bool notes, node_fn fn)
{
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(30);
        struct ckh_real_faults_config fc = {.seed = 5, .rules = rules, .nrules = n,
                                            .state_path = statepath, .log_path = logpath,
                                            .notes_dir = notes ? notesdir : NULL, .run = 2};
        struct ckh_real_faults *f = NULL;
        char msg[256];
        if (ckh_real_faults_create(&fc, &f, msg, sizeof msg) != 0)
            _exit(90);
        struct ckh_real_env_config c = {.root_dir = rootdir, .seed = 9, .node_name = "rank_0",
                                        .faults = f};
        struct ckh_env *env = NULL;
        if (ckh_real_env_create(&c, &env, msg, sizeof msg) != 0)
            _exit(91);
        fn(env);
        ckh__worker_exit(0);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

static void writes_ten(struct ckh_env *env)
{
    struct ckh_file *f = NULL;
    if (ckh_fs_open(env->fs, "/k", CKH_O_WRONLY | CKH_O_CREAT, &f) != 0)
        _exit(92);
    (void)ckh_file_write(f, "0123456789", 10);
    (void)ckh_file_close(f);
    (void)ckh_fs_mkdir(env->fs, "/after");
}

static void gen_writes(struct ckh_env *env)
{
    struct ckh_file *f = NULL;
    if (ckh_fs_open(env->fs, "/k", CKH_O_WRONLY | CKH_O_CREAT, &f) != 0)
        _exit(92);
    struct ckh_gen g = {.seed = 1, .stream = 1};
    (void)ckh_file_pwrite_gen(f, &g, 64, 0);
    (void)ckh_fs_mkdir(env->fs, "/after");
}

static void renames(struct ckh_env *env)
{
    struct ckh_file *f = NULL;
    if (ckh_fs_open(env->fs, "/a", CKH_O_WRONLY | CKH_O_CREAT, &f) != 0 || ckh_file_close(f) != 0)
        _exit(92);
    (void)ckh_fs_rename(env->fs, "/a", "/b");
    (void)ckh_fs_mkdir(env->fs, "/after");
}

static bool killed(int st)
{
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

static off_t size_of(const char *p)
{
    struct stat st;
    return stat(in_root(p), &st) == 0 ? st.st_size : -1;
}

START_TEST(test_kills)
{
    /* KILL_BEFORE a write: nothing of it lands. */
    make_tmp();
    struct ckh_real_rule r = rule(CKH_OP_WRITE, NULL, 1,
                                  (struct ckh_fault_action){.kind = CKH_FAULT_KILL_BEFORE});
    ck_assert(killed(run_child(&r, 1, false, writes_ten)));
    ck_assert_int_eq(size_of("/k"), 0);
    ck_assert_int_eq(size_of("/after"), -1);
    char *log = slurp(logpath);
    ck_assert_str_eq(log, "fired 0 0 write kill_before /k\n");
    free(log);
    rm_tmp();
    /* KILL_MID: keep_bytes land, then the node dies. */
    make_tmp();
    r = rule(CKH_OP_WRITE, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_KILL_MID, .keep_bytes = 3});
    ck_assert(killed(run_child(&r, 1, false, writes_ten)));
    ck_assert_int_eq(size_of("/k"), 3);
    ck_assert_int_eq(size_of("/after"), -1);
    rm_tmp();
    /* KILL_MID of a described write, by fraction. */
    make_tmp();
    r = rule(CKH_OP_PWRITE, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_KILL_MID});
    r.rule.keep_fraction = 0.25;
    ck_assert(killed(run_child(&r, 1, false, gen_writes)));
    ck_assert_int_eq(size_of("/k"), 16);
    ck_assert_int_eq(size_of("/after"), -1);
    rm_tmp();
    /* KILL_AFTER a write: all of it lands. */
    make_tmp();
    r = rule(CKH_OP_WRITE, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_KILL_AFTER});
    ck_assert(killed(run_child(&r, 1, false, writes_ten)));
    ck_assert_int_eq(size_of("/k"), 10);
    ck_assert_int_eq(size_of("/after"), -1);
    rm_tmp();
    /* KILL_AFTER a rename: it is done; KILL_BEFORE one: it is not. */
    make_tmp();
    r = rule(CKH_OP_RENAME, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_KILL_AFTER});
    ck_assert(killed(run_child(&r, 1, false, renames)));
    ck_assert_int_eq(size_of("/b"), 0);
    ck_assert_int_eq(size_of("/a"), -1);
    rm_tmp();
    make_tmp();
    r = rule(CKH_OP_RENAME, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_KILL_BEFORE});
    ck_assert(killed(run_child(&r, 1, false, renames)));
    ck_assert_int_eq(size_of("/a"), 0);
    ck_assert_int_eq(size_of("/b"), -1);
    rm_tmp();
    /* KILL_MID on an op that is no write kills before it. */
    make_tmp();
    r = rule(CKH_OP_RENAME, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_KILL_MID});
    ck_assert(killed(run_child(&r, 1, false, renames)));
    ck_assert_int_eq(size_of("/a"), 0);
    rm_tmp();
    /* A node whose script never fires exits normally. */
    make_tmp();
    r = rule(CKH_OP_RMDIR, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_KILL_BEFORE});
    int st = run_child(&r, 1, false, renames);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_int_eq(size_of("/b"), 0);
    rm_tmp();
}
END_TEST

/* ------------------------------------------- actions with the launcher */

static void syncs(struct ckh_env *env)
{
    struct ckh_file *f = NULL;
    if (ckh_fs_open(env->fs, "/ck/w", CKH_O_WRONLY | CKH_O_CREAT, &f) != 0)
        _exit(92);
    if (ckh_file_write(f, "xy", 2) != 2)
        _exit(93);
    int rc = ckh_file_fsync(f); /* FSYNC_LOST comes back to the caller: the fsync goes on */
    (void)ckh_file_close(f);
    if (rc != 0)
        _exit(94);
    (void)ckh_fs_mkdir(env->fs, "/after");
}

START_TEST(test_launcher_notes)
{
    char note[600];
    /* CRASH_BEFORE: killed before the op, nothing left but the log. */
    make_tmp();
    mkdir(in_root("/ck"), 0755);
    struct ckh_real_rule r = rule(CKH_OP_FSYNC, NULL, 1,
                                  (struct ckh_fault_action){.kind = CKH_FAULT_CRASH_BEFORE});
    ck_assert(killed(run_child(&r, 1, true, syncs)));
    char *log = slurp(logpath);
    ck_assert_str_eq(log, "fired 0 0 fsync crash_before /ck/w\n");
    free(log);
    rm_tmp();
    /* POWER_LOSS: the run's power note, then the kill. */
    make_tmp();
    mkdir(in_root("/ck"), 0755);
    r = rule(CKH_OP_FSYNC, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_POWER_LOSS});
    ck_assert(killed(run_child(&r, 1, true, syncs)));
    snprintf(note, sizeof note, "%s/power.2", notesdir);
    ck_assert_int_eq(access(note, F_OK), 0);
    ck_assert_int_ne(access(in_root("/after"), F_OK), 0);
    rm_tmp();
    /* FSYNC_LOST: a note "fsync_lost PATH" for the launcher; the fsync
     * itself goes on (here to the real folder, which keeps the bytes). */
    make_tmp();
    mkdir(in_root("/ck"), 0755);
    r = rule(CKH_OP_FSYNC, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_FSYNC_LOST});
    int st = run_child(&r, 1, true, syncs);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
    ck_assert_int_eq(size_of("/ck/w"), 2);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cat %s/note.* > %s/notes.txt", notesdir, tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(note, sizeof note, "%s/notes.txt", tmpdir);
    char *txt = slurp(note);
    ck_assert_str_eq(txt, "fsync_lost /ck/w");
    free(txt);
    rm_tmp();
    /* CALL: a note "call FAULT", then one stat of "/" asks the launcher. */
    make_tmp();
    mkdir(in_root("/ck"), 0755);
    r = rule(CKH_OP_WRITE, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_CALL});
    r.fault = 4;
    st = run_child(&r, 1, true, syncs);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
    ck_assert_int_eq(size_of("/ck/w"), 2); /* the write went on */
    ck_assert_int_eq(access(in_root("/after"), F_OK), 0);
    snprintf(cmd, sizeof cmd, "cat %s/note.* > %s/notes.txt", notesdir, tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(note, sizeof note, "%s/notes.txt", tmpdir);
    txt = slurp(note);
    ck_assert_str_eq(txt, "call 4");
    free(txt);
    log = slurp(logpath);
    ck_assert_str_eq(log, "fired 0 4 write call /ck/w\n");
    free(log);
    rm_tmp();
}
END_TEST

/* A note that cannot be written is said on stderr; the node goes on. */
START_TEST(test_note_unwritable)
{
    make_tmp();
    struct ckh_real_rule r = rule(CKH_OP_FSYNC, NULL, 1,
                                  (struct ckh_fault_action){.kind = CKH_FAULT_FSYNC_LOST});
    struct ckh_real_faults_config fc = {.seed = 5, .rules = &r, .nrules = 1,
                                        .notes_dir = "/nonexistent/ckh-notes"};
    struct ckh_real_faults *f = NULL;
    char msg[256];
    ck_assert_int_eq(ckh_real_faults_create(&fc, &f, msg, sizeof msg), 0);
    struct ckh_op op = {.kind = CKH_OP_FSYNC, .path = "/w", .node = 0};
    struct ckh_fault_action act;
    ckh_real_faults_enter(f, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_FSYNC_LOST);
    ckh_real_faults_destroy(f);
    rm_tmp();
}
END_TEST

/* ---------------------------------------------------- the shared counters */

/* Two processes' scripts with one state file count one job's matches: a
 * rule that fires on the 2nd match fires in the second script. */
START_TEST(test_shared_counters)
{
    make_tmp();
    struct ckh_real_rule r = rule(CKH_OP_MKDIR, NULL, 2, errno_act(ENOSPC));
    struct ckh_real_faults *a = script(&r, 1, false);
    struct ckh_real_faults *b = script(&r, 1, false);
    struct ckh_op op = {.kind = CKH_OP_MKDIR, .path = "/x", .node = 0, .epoch = -1, .step = -1};
    struct ckh_fault_action act;
    ckh_real_faults_enter(a, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_NONE);
    op.node = 1;
    ckh_real_faults_enter(b, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_ERRNO);
    ck_assert_int_eq(act.err, ENOSPC);
    ckh_real_faults_enter(a, &op, &act); /* spent, in every process */
    ck_assert_int_eq(act.kind, CKH_FAULT_NONE);
    ckh_real_faults_destroy(a);
    ckh_real_faults_destroy(b);
    /* Without a state file, each process counts alone. */
    struct ckh_real_faults_config fc = {.seed = 5, .rules = &r, .nrules = 1};
    char msg[128];
    ck_assert_int_eq(ckh_real_faults_create(&fc, &a, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_real_faults_create(&fc, &b, msg, sizeof msg), 0);
    ckh_real_faults_enter(a, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_NONE);
    ckh_real_faults_enter(b, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_NONE);
    ckh_real_faults_enter(b, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_ERRNO);
    ckh_real_faults_destroy(a);
    ckh_real_faults_destroy(b);
    rm_tmp();
}
END_TEST

/* ------------------------------------------------ clock, rand, node, gate */

static int task_fn(struct ckh_env *env, void *arg)
{
    (void)env;
    return *(int *)arg * 2;
}

/* Waits for a byte on the pipe read end *arg, then returns. */
static int parked_task(struct ckh_env *env, void *arg)
{
    (void)env;
    char c;
    return read(*(int *)arg, &c, 1) == 1 ? 0 : 1;
}

/* The threads of this process. */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static void on_exit_cb(void *ctx, int status)
{
    *(int *)ctx = status;
    /* what the rank program does: a status file; here a marker of the status */
    char p[400];
    snprintf(p, sizeof p, "%s/exit.%d", tmpdir, status);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
}

START_TEST(test_clock_rand_node)
{
    make_tmp();
    struct ckh_real_rule r[2] = {
        rule(CKH_OP_SLEEP, NULL, 1, errno_act(EINTR)),
        rule(CKH_OP_BARRIER, NULL, 1, (struct ckh_fault_action){.kind = CKH_FAULT_MISMATCH}),
    };
    r[1].fault = 1;
    r[1].rule.phase = "save";
    r[1].rule.epoch = 1;
    r[1].rule.step = 7;
    struct ckh_real_faults *f = script(r, 2, false);
    char track[400], record[400];
    snprintf(track, sizeof track, "%s/track", tmpdir);
    snprintf(record, sizeof record, "%s/records.jsonl", tmpdir);
    int seen = -1;
    struct ckh_real_env_config c = {.root_dir = rootdir, .seed = 9, .node_name = "rank_3",
                                    .node_index = 3, .faults = f, .track_path = track,
                                    .record_path = record, .on_exit = on_exit_cb,
                                    .on_exit_ctx = &seen};
    struct ckh_env *env = NULL;
    char msg[256] = "";
    ck_assert_msg(ckh_real_env_create(&c, &env, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_ptr_nonnull(env->record);
    /* clock: monotonic; a faulted sleep fails with the errno, the next sleeps */
    uint64_t t0 = ckh_clock_now_ns(env->clock);
    ck_assert_int_eq(ckh_clock_sleep_ns(env->clock, 1000), -EINTR);
    ck_assert_int_eq(ckh_clock_sleep_ns(env->clock, 1000), 0);
    ck_assert_uint_ge(ckh_clock_now_ns(env->clock), t0);
    /* rand: the simulator's streams */
    ck_assert_uint_eq(ckh_rand_stream_seed(env->rand, "data"),
                      ckh_seed_derive(ckh_node_rand_base(9, "rank_3"), "data"));
    ck_assert_uint_eq(env->rand->ops->stream_seed(env->rand, NULL), /* no name: "" */
                      ckh_seed_derive(ckh_node_rand_base(9, "rank_3"), ""));
    /* node: name, log, phase lines in the track file */
    ck_assert_str_eq(ckh_node_name(env->node), "rank_3");
    ckh_node_logf(env->node, "hello %d", 1);
    ckh_node_phase(env->node, "save", 1, 7);
    ckh_node_phase(env->node, NULL, 2, 8); /* no phase: no track line */
    ckh_node_phase(env->node, "save", 1, 7);
    char *t = slurp(track);
    ck_assert_str_eq(t, "save 1 7\nsave 1 7\n");
    free(t);
    /* the gate of the collectives: node, phase, epoch and step filled in */
    struct ckh_op op = {.kind = CKH_OP_BARRIER};
    struct ckh_fault_action act;
    ckh_real_env_gate(env, &op, &act);
    ck_assert_int_eq(op.node, 3);
    ck_assert_str_eq(op.phase, "save");
    ck_assert_int_eq(op.epoch, 1);
    ck_assert_int_eq(op.step, 7);
    ck_assert_int_eq(act.kind, CKH_FAULT_MISMATCH);
    ckh_real_env_gate(env, &op, &act);
    ck_assert_int_eq(act.kind, CKH_FAULT_NONE);
    /* tasks: at most 8 at a time, joined once */
    struct ckh_task *tasks[9];
    int args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = i + 1;
        ck_assert_int_eq(ckh_node_spawn(env->node, task_fn, &args[i], &tasks[i]), 0);
    }
    ck_assert_int_eq(ckh_node_spawn(env->node, task_fn, &args[0], &tasks[8]), CKH_ELIMIT);
    ck_assert_int_eq(env->node->ops->spawn(env->node, task_fn, &args[0], NULL), CKH_EINVAL);
    for (int i = 0; i < 8; i++) {
        int status = -1;
        ck_assert_int_eq(ckh_node_join(env->node, tasks[i], &status), 0);
        ck_assert_int_eq(status, 2 * (i + 1));
    }
    ck_assert_int_eq(ckh_node_join(env->node, tasks[0], NULL), CKH_EINVAL); /* joined already */
    ck_assert_int_eq(env->node->ops->join(env->node, NULL, NULL), CKH_EINVAL);
    /* A task left unjoined outlives its node: destroy lets it run, and
     * when it returns afterwards it touches nothing of the node (this
     * was a use after free that ASan and valgrind report). One that has
     * returned before destroy is reclaimed by it. */
    int park[2];
    ck_assert_int_eq(pipe(park), 0);
    int threads = thread_count();
    ck_assert_int_eq(ckh_node_spawn(env->node, parked_task, &park[0], &tasks[0]), 0);
    ck_assert_int_eq(ckh_node_spawn(env->node, task_fn, &args[0], &tasks[1]), 0);
    while (thread_count() > threads + 1) /* the second has returned */
        sched_yield();
    ckh_real_env_destroy(env);
    ck_assert_int_eq(write(park[1], "x", 1), 1);
    while (thread_count() > threads) /* the parked task has returned too */
        sched_yield();
    close(park[0]);
    close(park[1]);
    ckh_real_faults_destroy(f);
    char *log = slurp(logpath);
    ck_assert_str_eq(log, "fired 0 0 sleep errno -\nfired 1 1 barrier mismatch -\n");
    free(log);
    rm_tmp();
}
END_TEST

/* The node's exit: on_exit with the status, then exit 0 or 1. */
START_TEST(test_node_exit)
{
    for (int status = 0; status <= 3; status += 3) {
        make_tmp();
        fflush(NULL);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            int seen = -1;
            struct ckh_real_env_config c = {.root_dir = rootdir, .node_name = "rank_0",
                                            .on_exit = on_exit_cb, .on_exit_ctx = &seen};
            struct ckh_env *env = NULL;
            char msg[128];
            if (ckh_real_env_create(&c, &env, msg, sizeof msg) != 0)
                _exit(90);
            ckh_node_exit(env->node, status);
            _exit(91);
        }
        int st = 0;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), status == 0 ? 0 : 1);
        char p[400];
        snprintf(p, sizeof p, "%s/exit.%d", tmpdir, status);
        ck_assert_int_eq(access(p, F_OK), 0);
        rm_tmp();
    }
    /* Without on_exit: exit alone. */
    make_tmp();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct ckh_real_env_config c = {.root_dir = rootdir, .node_name = "rank_0"};
        struct ckh_env *env = NULL;
        char msg[128];
        if (ckh_real_env_create(&c, &env, msg, sizeof msg) != 0)
            _exit(90);
        ckh_node_exit(env->node, 2);
        _exit(91);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    rm_tmp();
}
END_TEST

/* A node over a caller's fs (cfg.fs): the shim wraps it, destroy leaves it. */
START_TEST(test_env_over_given_fs)
{
    make_tmp();
    struct ckh_fs *inner = NULL;
    ck_assert_int_eq(ckh_posix_fs_create(rootdir, &inner), 0);
    struct ckh_real_rule r = rule(CKH_OP_MKDIR, "/x", 1, errno_act(EROFS));
    struct ckh_real_faults *f = script(&r, 1, false);
    struct ckh_real_env_config c = {.fs = inner, .node_name = "rank_1", .node_index = 1, .faults = f};
    struct ckh_env *env = NULL;
    char msg[128];
    ck_assert_int_eq(ckh_real_env_create(&c, &env, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_fs_mkdir(env->fs, "/x"), -EROFS);
    ck_assert_int_eq(ckh_fs_mkdir(env->fs, "/y"), 0);
    ckh_real_env_destroy(env);
    ck_assert_int_eq(ckh_fs_mkdir(inner, "/x"), 0); /* still usable */
    ckh_posix_fs_destroy(inner);
    ckh_real_faults_destroy(f);
    rm_tmp();
}
END_TEST


/* KILL_AFTER on each kind of op: the node dies once the op is done. */
static void whole_sequence(struct ckh_env *env)
{
    (void)run_sequence(env, CKH_OP__COUNT); /* no op fails; the kill ends it */
}

START_TEST(test_kill_after_every_op)
{
    static const enum ckh_op_kind kinds[] = {
        CKH_OP_MKDIR,  CKH_OP_OPEN,   CKH_OP_WRITE,    CKH_OP_PWRITE,  CKH_OP_FSYNC,
        CKH_OP_FDATASYNC, CKH_OP_PREAD, CKH_OP_READ,  CKH_OP_FTRUNCATE, CKH_OP_CLOSE,
        CKH_OP_RENAME, CKH_OP_FSYNC_DIR, CKH_OP_STAT,  CKH_OP_SYMLINK, CKH_OP_READLINK,
        CKH_OP_LISTDIR, CKH_OP_UNLINK, CKH_OP_RMDIR};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        make_tmp();
        struct ckh_real_rule r = rule((int)kinds[i], NULL, 1,
                                      (struct ckh_fault_action){.kind = CKH_FAULT_KILL_AFTER});
        int st = run_child(&r, 1, false, whole_sequence);
        ck_assert_msg(killed(st), "%s: status %#x", ckh_op_name(kinds[i]), st);
        char *log = slurp(logpath);
        char want[128];
        snprintf(want, sizeof want, "fired 0 0 %s kill_after /", ckh_op_name(kinds[i]));
        ck_assert_msg(strncmp(log, want, strlen(want)) == 0, "log: %s", log);
        free(log);
        /* the op itself was done */
        if (kinds[i] == CKH_OP_MKDIR)
            ck_assert_int_eq(access(in_root("/d"), F_OK), 0);
        if (kinds[i] == CKH_OP_RENAME)
            ck_assert_int_eq(access(in_root("/d/b"), F_OK), 0);
        if (kinds[i] == CKH_OP_UNLINK)
            ck_assert_int_ne(access(in_root("/d/latest"), F_OK), 0);
        if (kinds[i] == CKH_OP_RMDIR)
            ck_assert_int_ne(access(in_root("/d"), F_OK), 0);
        if (kinds[i] == CKH_OP_FTRUNCATE)
            ck_assert_int_eq(size_of("/d/a"), 11);
        rm_tmp();
    }
}
END_TEST

/* ------------------------------------------------------- NCCL's loading */

/* ckh_real_nccl_probe in a fresh process (it loads the libraries once)
 * with CKH_NCCL_LIB and CKH_CUDART_LIB set: its message. */
static void probe(const char *nccl, const char *cudart, int gpus, char *out, size_t n)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        setenv("CKH_NCCL_LIB", nccl, 1);
        setenv("CKH_CUDART_LIB", cudart, 1);
        char num[16];
        snprintf(num, sizeof num, "%d", gpus);
        setenv("CKH_FAKE_GPUS", num, 1);
        setenv("CKH_FAKE_GPU_DIR", tmpdir, 1);
        char msg[600] = "";
        int ndev = -1;
        int rc = ckh_real_nccl_probe(&ndev, msg, sizeof msg);
        dprintf(fds[1], "%d %d %s", rc == 0 ? 0 : rc == CKH_EINTERNAL ? 1 : 2, ndev, msg);
        ckh__worker_exit(0);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, n - 1);
    close(fds[0]);
    out[got > 0 ? got : 0] = '\0';
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

START_TEST(test_nccl_probe_messages)
{
    make_tmp();
    char fake[1100], exe[1024], out[700];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(k, 0);
    exe[k] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(fake, sizeof fake, "%s/libckh_fakegpu.so", exe);
    ck_assert_msg(access(fake, R_OK) == 0, "%s missing: the NCCL test double is not built", fake);
    probe("/nonexistent/libnccl.so.2", fake, 1, out, sizeof out);
    ck_assert_msg(strncmp(out, "1 0 libnccl.so.2 not found (CKH_NCCL_LIB: /nonexistent/libnccl.so.2", 67) == 0,
                  "%s", out);
    probe(fake, "/nonexistent/libcudart.so", 1, out, sizeof out);
    ck_assert_msg(strncmp(out, "1 0 the CUDA runtime not found (CKH_CUDART_LIB: /nonexistent/libcudart.so",
                          73) == 0, "%s", out);
    probe("libm.so.6", fake, 1, out, sizeof out);
    ck_assert_str_eq(out, "1 0 libnccl.so.2 lacks ncclGetUniqueId");
    probe(fake, "libm.so.6", 1, out, sizeof out);
    ck_assert_str_eq(out, "1 0 the CUDA runtime lacks cudaGetDeviceCount");
    probe(fake, fake, 0, out, sizeof out);
    ck_assert_msg(strncmp(out, "1 0 no CUDA device (cudaGetDeviceCount: ", 40) == 0, "%s", out);
    probe(fake, fake, 3, out, sizeof out);
    ck_assert_str_eq(out, "0 3 ");
    rm_tmp();
}
END_TEST

static Suite *real_env_suite(void)
{
    Suite *s = suite_create("real_env");
    TCase *tc = tcase_create("env");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_env_create_errors);
    tcase_add_test(tc, test_faults_create_errors);
    tcase_add_test(tc, test_every_op_meets_the_script);
    tcase_add_test(tc, test_shim_passes_results_through);
    tcase_add_test(tc, test_short_write_and_delay);
    tcase_add_test(tc, test_short_write_gen);
    tcase_add_test(tc, test_kills);
    tcase_add_test(tc, test_launcher_notes);
    tcase_add_test(tc, test_note_unwritable);
    tcase_add_test(tc, test_shared_counters);
    tcase_add_test(tc, test_clock_rand_node);
    tcase_add_test(tc, test_node_exit);
    tcase_add_test(tc, test_env_over_given_fs);
    tcase_add_test(tc, test_kill_after_every_op);
    tcase_add_test(tc, test_nccl_probe_messages);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(real_env_suite());
}
