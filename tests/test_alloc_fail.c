/* Allocation failures, injected: this binary is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup (see
 * CMakeLists.txt), so every allocation ckh's own code makes (the static
 * libraries and this file; not libc's or libfuse's internal ones) passes
 * through the wrappers below. A case arms the Nth allocation to fail,
 * calls one function, and checks that it answered CKH_ENOMEM (the one
 * error table's code), left its outputs empty, and leaked nothing (ASan's
 * leak check and valgrind run this binary like any other); then N + 1,
 * until the call makes fewer than N allocations and succeeds.
 *
 * Covered: the POSIX fs and environment (platform/posix.c), the described
 * write and digest fallbacks (platform/fs.c), the JSON-lines writer and
 * reader (platform/record_jsonl.c), the real node's fault script and
 * environment (real/), and ckhfs: mounting, and serving a program's
 * requests while the server's allocations fail (harness/ckhfs/). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/alloc.h"
#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/posix.h"
#include "ckh/record.h"
#include "ckh/rng.h"
#include "ckh/simfs.h"
#include "ckhfs/ckhfs.h"
#include "real_env.h"
#include "real_faults.h"
#include "support/fuse.h"
#include "support/skip.h"

/* ------------------------------------------------------------ injection */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static atomic_long countdown = -1; /* allocations left before the failing one; -1: off */
static atomic_bool failed;         /* the armed allocation failed */

static bool fail_now(void)
{
    long left = atomic_load(&countdown);
    while (left >= 0) {
        if (atomic_compare_exchange_weak(&countdown, &left, left - 1)) {
            if (left == 0) {
                atomic_store(&failed, true);
                return true;
            }
            return false;
        }
    }
    return false;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    if (fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_strdup(s);
}

/* The nth allocation from now fails (1-based). */
static void arm(long nth)
{
    atomic_store(&failed, false);
    atomic_store(&countdown, nth - 1);
}

/* Off again: whether the armed allocation failed. */
static bool disarm(void)
{
    atomic_store(&countdown, -1);
    return atomic_load(&failed);
}

/* Runs BODY with the Nth allocation failing, for N = 1, 2, ... until
 * BODY makes fewer than N allocations (it then ran without a failure:
 * DONE_OK checks it succeeded). AFTER_FAIL checks one failed run. */
#define FOR_EACH_FAILURE(n, BODY, AFTER_FAIL, DONE_OK)                                             \
    for (long n = 1;; n++) {                                                                       \
        ck_assert_int_lt(n, 10000);                                                                \
        arm(n);                                                                                    \
        BODY;                                                                                      \
        if (!disarm()) {                                                                           \
            DONE_OK;                                                                               \
            ck_assert_int_gt(n, 1); /* at least one allocation was failed */                      \
            break;                                                                                 \
        }                                                                                          \
        AFTER_FAIL;                                                                                \
    }

/* Every case's folder is made under root, which main makes before the
 * cases run (each in a forked child) and sweeps after them: a case whose
 * assertion fails exits its child before it unmounts ckhfs, and the dead
 * mount would stay in /proc/mounts. */
static char root[64];
static char tmpdir[128];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%.60s/case_XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* ------------------------------------------------------------- platform */

START_TEST(test_posix_out_of_memory)
{
    make_tmp();
    struct ckh_fs *fs = NULL;
    int rc = 0;
    FOR_EACH_FAILURE(n, rc = ckh_posix_fs_create(tmpdir, &fs),
                     ck_assert_int_eq(rc, CKH_ENOMEM),
                     ck_assert_int_eq(rc, 0));
    struct ckh_env *env = NULL;
    FOR_EACH_FAILURE(n, rc = ckh_posix_env_create(tmpdir, 1, "node", &env),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_ptr_null(env); },
                     ck_assert_int_eq(rc, 0));
    ckh_posix_env_destroy(env);
    /* open, a listing of 20 names (the array grows past 16), reading a whole file */
    struct ckh_file *f = NULL;
    FOR_EACH_FAILURE(n, rc = ckh_fs_open(fs, "/a", CKH_O_RDWR | CKH_O_CREAT, &f),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_ptr_null(f); },
                     ck_assert_int_eq(rc, 0));
    ck_assert_int_eq(ckh_file_write_all(f, "0123456789", 10), 0);
    for (int i = 0; i < 19; i++) {
        char p[32];
        snprintf(p, sizeof p, "/n%02d", i);
        ck_assert_int_eq(ckh_fs_mkdir(fs, p), 0);
    }
    struct ckh_listing l;
    FOR_EACH_FAILURE(n, rc = ckh_fs_listdir(fs, "/", &l),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_uint_eq(l.count, 0);
                       ck_assert_ptr_null(l.entries); },
                     { ck_assert_int_eq(rc, 0); ck_assert_uint_eq(l.count, 20); });
    ckh_fs_listing_free(&l);
    /* the described write's fallback buffer, the digest's block buffer */
    struct ckh_gen g = {.seed = 1, .stream = 2};
    int64_t w = 0;
    FOR_EACH_FAILURE(n, w = ckh_file_pwrite_gen(f, &g, 100, 10),
                     ck_assert_int_eq(w, CKH_ENOMEM),
                     ck_assert_int_eq(w, 100));
    uint64_t d = 0;
    FOR_EACH_FAILURE(n, rc = ckh_file_digest(f, 110, NULL, 0, &d),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_uint_eq(d, 0); },
                     ck_assert_int_eq(rc, 0));
    ck_assert_int_eq(ckh_file_close(f), 0);
    char path[200], *buf = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/a", tmpdir);
    FOR_EACH_FAILURE(n, rc = ckh_posix_read_file(path, 1000, NULL, &buf, &len),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_ptr_null(buf); },
                     { ck_assert_int_eq(rc, 0); ck_assert_uint_eq(len, 110); });
    free(buf);
    char *s = NULL;
    FOR_EACH_FAILURE(n, s = ckh_strdup(ckh_alloc_system(), "x"), ck_assert_ptr_null(s),
                     ck_assert_str_eq(s, "x"));
    free(s);
    ckh_posix_fs_destroy(fs);
    rm_tmp();
}
END_TEST

static int count_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    (void)kind;
    (void)rec;
    ++*(int *)ctx;
    return 0;
}

START_TEST(test_records_out_of_memory)
{
    make_tmp();
    char path[200], msg[256];
    snprintf(path, sizeof path, "%s/r.jsonl", tmpdir);
    struct ckh_record *r = NULL;
    int rc = 0;
    FOR_EACH_FAILURE(n, rc = ckh_record_jsonl_open(path, &r, msg, sizeof msg),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_str_eq(msg, "out of memory");
                       ck_assert_ptr_null(r); },
                     ck_assert_int_eq(rc, 0));
    /* A record whose line outgrows the writer's first buffer: nothing
     * half-written reaches the file. */
    struct ckh_rec_value vals[20];
    char names[20][40];
    for (int i = 0; i < 20; i++) {
        snprintf(names[i], sizeof names[i], "value_with_a_long_name_%02d", i);
        vals[i] = (struct ckh_rec_value){.name = names[i], .value = i * 1.5};
    }
    struct ckh_rec_step st = {.step = 1, .epoch = 0, .values = vals, .nvalues = 20};
    /* Builds with slow asserts read each line back before writing it: a
     * failure there only skips that check, and the record is written. */
    int written = 0;
    FOR_EACH_FAILURE(n, rc = ckh_record_step(r, &st),
                     { ck_assert_msg(rc == CKH_ENOMEM || rc == 0, "%s", ckh_err_name(rc));
                       written += rc == 0; },
                     { ck_assert_int_eq(rc, 0); written++; });
    ckh_record_jsonl_close(r);
    size_t len = 0;
    char *text = NULL;
    ck_assert_int_eq(ckh_posix_read_file(path, 1 << 20, NULL, &text, &len), 0);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    ck_assert_int_eq(lines, written); /* whole lines only */
    ck_assert_int_eq(text[len - 1], '\n');
    /* Reading it back, and a record of every kind with every field. */
    const char *more =
        "{\"kind\":\"step\",\"step\":2,\"epoch\":0,\"digests\":{\"w\":\"00000000000000ff\"},"
        "\"values\":{\"loss\":1.5,\"x\":\"NaN\"},\"samples\":[1,2,3]}\n"
        "{\"kind\":\"resume\",\"step\":2,\"epoch\":0}\n"
        "{\"kind\":\"save\",\"step\":2,\"epoch\":0,\"ok\":false,\"rc\":-5,\"error\":\"disk \\u00e9\"}\n"
        "{\"kind\":\"final\",\"epochs\":1,\"steps\":2,\"total\":3,\"digest\":\"0000000000000001\","
        "\"values\":{\"acc\":0.5},\"blobs\":[\"model\",\"optim\"]}\n";
    size_t all_len = len + strlen(more);
    char *all = malloc(all_len + 1);
    ck_assert_ptr_nonnull(all);
    memcpy(all, text, len);
    memcpy(all + len, more, strlen(more) + 1);
    free(text);
    int records = 0;
    FOR_EACH_FAILURE(n, (records = 0, rc = ckh_record_jsonl_parse(all, all_len, "r.jsonl", count_sink,
                                                                   &records, msg, sizeof msg)),
                     { ck_assert_int_eq(rc, CKH_ENOMEM);
                       ck_assert_msg(strncmp(msg, "r.jsonl:", 8) == 0 && strstr(msg, ": out of memory"),
                                     "%s", msg); },
                     { ck_assert_msg(rc == 0, "%s", msg); ck_assert_int_eq(records, written + 4); });
    free(all);
    /* A record the disk refuses: the write's errno. */
    ck_assert_int_eq(ckh_record_jsonl_open("/dev/full", &r, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_record_step(r, &st), -ENOSPC);
    ckh_record_jsonl_close(r);
    rm_tmp();
}
END_TEST

/* ----------------------------------------------------------------- real */

START_TEST(test_real_out_of_memory)
{
    make_tmp();
    char state[200], log[200], notes[200], track[200], rec[200], msg[256];
    snprintf(state, sizeof state, "%s/state", tmpdir);
    snprintf(log, sizeof log, "%s/log", tmpdir);
    snprintf(notes, sizeof notes, "%s", tmpdir);
    snprintf(track, sizeof track, "%s/track", tmpdir);
    snprintf(rec, sizeof rec, "%s/rec.jsonl", tmpdir);
    struct ckh_real_rule rules[2];
    for (int i = 0; i < 2; i++) {
        ckh_fault_rule_init(&rules[i].rule);
        rules[i].rule.kind = CKH_OP_MKDIR;
        rules[i].rule.action = (struct ckh_fault_action){.kind = CKH_FAULT_ERRNO, .err = EROFS};
        rules[i].fault = (size_t)i;
    }
    struct ckh_real_faults_config fc = {.seed = 1, .rules = rules, .nrules = 2, .state_path = state,
                                        .log_path = log, .notes_dir = notes, .run = 1};
    struct ckh_real_faults *f = NULL;
    int rc = 0;
    FOR_EACH_FAILURE(n, rc = ckh_real_faults_create(&fc, &f, msg, sizeof msg),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_ptr_null(f); },
                     ck_assert_int_eq(rc, 0));
    struct ckh_real_env_config c = {.root_dir = tmpdir, .seed = 2, .node_name = "rank_0", .faults = f,
                                    .track_path = track, .record_path = rec};
    struct ckh_env *env = NULL;
    FOR_EACH_FAILURE(n, rc = ckh_real_env_create(&c, &env, msg, sizeof msg),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_ptr_null(env); },
                     ck_assert_int_eq(rc, 0));
    struct ckh_file *file = NULL;
    FOR_EACH_FAILURE(n, rc = ckh_fs_open(env->fs, "/x", CKH_O_WRONLY | CKH_O_CREAT, &file),
                     { ck_assert_int_eq(rc, CKH_ENOMEM); ck_assert_ptr_null(file); },
                     ck_assert_int_eq(rc, 0));
    ck_assert_int_eq(ckh_file_close(file), 0);
    ck_assert_int_eq(ckh_fs_mkdir(env->fs, "/d"), -EROFS); /* the script still works */
    ckh_real_env_destroy(env);
    ckh_real_faults_destroy(f);
    rm_tmp();
}
END_TEST

/* ---------------------------------------------------------------- ckhfs */

static char self_exe[PATH_MAX];

/* In a child (run as "--child MNT"): file operations on the mount, each
 * of which may fail with ENOMEM while the server's allocations fail, and
 * with nothing else. Exit status 0, or the number of the step that got
 * another answer. */
static int child_ops(const char *m)
{
    char p[PATH_MAX + 32], q[PATH_MAX + 32];
#define OK_OR_ENOMEM(step, expr)                                                                   \
    do {                                                                                           \
        errno = 0;                                                                                 \
        if (!(expr) && errno != ENOMEM) {                                                          \
            fprintf(stderr, "step %d: %s: %s\n", step, #expr, strerror(errno));                  \
            return step;                                                                           \
        }                                                                                          \
    } while (0)
    snprintf(p, sizeof p, "%s/d", m);
    OK_OR_ENOMEM(1, mkdir(p, 0755) == 0 || errno == EEXIST);
    snprintf(p, sizeof p, "%s/f", m);
    int fd = -1;
    OK_OR_ENOMEM(2, (fd = open(p, O_CREAT | O_RDWR, 0644)) >= 0);
    if (fd >= 0) {
        OK_OR_ENOMEM(3, write(fd, "abc", 3) == 3);
        OK_OR_ENOMEM(4, fsync(fd) == 0);
        close(fd);
    }
    snprintf(q, sizeof q, "%s/d/g", m);
    OK_OR_ENOMEM(5, rename(p, q) == 0 || errno == ENOENT);
    snprintf(p, sizeof p, "%s/d", m);
    DIR *dir = NULL;
    OK_OR_ENOMEM(6, (dir = opendir(p)) != NULL);
    if (dir) {
        errno = 0;
        OK_OR_ENOMEM(7, readdir(dir) != NULL || errno == 0);
        closedir(dir);
    }
    struct stat st;
    OK_OR_ENOMEM(8, stat(q, &st) == 0 || errno == ENOENT);
    return 0;
#undef OK_OR_ENOMEM
}

static struct {
    pid_t pid; /* the child */
    int node;  /* its node */
} who;

static int node_of_pid(void *ctx, pid_t pid)
{
    (void)ctx;
    return pid == who.pid ? who.node : -1;
}

/* Runs child_ops as node with the server's nth allocation failing. */
static int run_child(int node, long nth, bool *hit_out)
{
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(98);
        alarm(60);
        execl(self_exe, "test_alloc_fail", "--child", tmpdir, (char *)NULL);
        _exit(97);
    }
    close(go[0]);
    who.pid = pid;
    who.node = node;
    /* No Check assertion while armed: Check allocates too. */
    arm(nth);
    bool sent = write(go[1], "g", 1) == 1;
    close(go[1]);
    int st = 0;
    pid_t got = waitpid(pid, &st, 0);
    bool hit = disarm();
    ck_assert(sent);
    ck_assert_int_eq(got, pid);
    if (hit_out)
        *hit_out = hit;
    return st;
}

START_TEST(test_ckhfs_out_of_memory)
{
    NEED_FUSE();
    make_tmp();
    struct ckh_simfs_config dc = {.name = "m", .sector_bytes = 512, .seed = 3};
    struct ckh_simfs *disk = NULL;
    ck_assert_int_eq(ckh_simfs_create(&dc, &disk), 0);
    char mnt[256];
    snprintf(mnt, sizeof mnt, "%s/mnt", tmpdir);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    struct ckh_ckhfs_config cfg = {.mountpoint = mnt, .disk = disk, .node_of_pid = node_of_pid,
                                   .keep_trace = true};
    struct ckh_ckhfs *fs = NULL;
    char msg[256];
    int rc = 0;
    /* Mounting: out of memory is said so, and nothing stays mounted. */
    FOR_EACH_FAILURE(n, rc = ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg),
                     { ck_assert_msg(rc == CKH_ENOMEM, "%s: %s", ckh_err_name(rc), msg);
                       ck_assert_msg(strstr(msg, "out of memory") ||
                                         strstr(msg, "Cannot allocate memory"), "%s", msg);
                       ck_assert_ptr_null(fs);
                       ck_assert_int_eq(ckh_test_ckhfs_mounts(mnt), 0); },
                     ck_assert_int_eq(rc, 0));
    /* Serving: the program gets ENOMEM for a request whose allocation
     * failed, and every other request is answered; each child a new node,
     * so the view of its node is made while allocations fail. */
    int failures = 0;
    for (long nth = 1;; nth++) {
        ck_assert_int_lt(nth, 400);
        bool hit = false;
        int st = run_child((int)nth, nth, &hit);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "allocation %ld: child status %#x", nth, st);
        if (!hit)
            break;
        failures++;
    }
    ck_assert_int_gt(failures, 3);
    /* The mount still serves, and the disk holds what the children did. */
    ck_assert_int_eq(run_child(1, 1000000, NULL), 0);
    ckh_ckhfs_unmount(fs);
    ck_assert_int_eq(ckh_test_ckhfs_mounts(mnt), 0);
    struct ckh_stat sst;
    ck_assert_int_eq(ckh_fs_stat(ckh_simfs_fs(disk), "/d/g", &sst), 0);
    ck_assert_uint_eq(sst.size_bytes, 3);
    ckh_simfs_destroy(disk);
    rm_tmp();
}
END_TEST

static Suite *alloc_fail_suite(void)
{
    Suite *s = suite_create("alloc_fail");
    TCase *tc = tcase_create("enomem");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_posix_out_of_memory);
    tcase_add_test(tc, test_records_out_of_memory);
    tcase_add_test(tc, test_real_out_of_memory);
    tcase_add_test(tc, test_ckhfs_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        char m[PATH_MAX];
        snprintf(m, sizeof m, "%s/mnt", argv[2]);
        return child_ops(m);
    }
    if (!realpath("/proc/self/exe", self_exe)) {
        perror("test_alloc_fail: own path");
        return 1;
    }
    snprintf(root, sizeof root, "/tmp/ckh_test_alloc_fail_XXXXXX");
    if (!mkdtemp(root)) {
        perror("test_alloc_fail: a scratch folder");
        return 1;
    }
    int rc = ckh_test_run(alloc_fail_suite());
    ckh_ckhfs_sweep_stale(root); /* what a failed case left mounted */
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "test_alloc_fail: cannot remove %s\n", root);
    return rc;
}
