/* Tests for ckhfs (harness/ckhfs/ckhfs*.c): a simfs disk served over FUSE.
 *
 * Each test mounts a fresh disk in a fresh ckh temporary folder and runs
 * real system calls from CHILD processes (fork, mapped to a node by pid).
 * The test process itself never does I/O on its mount: it could (the
 * server is a thread of its own), but a child is what ckh runs, a separate
 * process whose pid FUSE reports, and under valgrind, which runs one
 * thread at a time and keeps its lock across a stat(2), a stat of the
 * mount by the serving process would deadlock. After each child, the test looks at the disk directly
 * (pending and durable state, under ckh_ckhfs_lock) and at the trace.
 *
 * Every child arms alarm() and Check's timeout covers each test, so a
 * request the server never answers fails the test instead of hanging it.
 * Every case is skipped (CKH_SKIP, tests/support/skip.h: CTest shows the
 * test skipped, with the reason) where FUSE is not available.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/op.h"
#include "ckh/simfs.h"
#include "ckhfs/ckhfs.h"
#include "ckhfs/ckhfs_internal.h"
#include "exec/tmpdir.h"
#include "exec/worker.h"
#include "support/fuse.h"
#include "support/skip.h"

/* ------------------------------------------------------------------ fixture */

/* What the callbacks see (read on the server thread; written by the test
 * before the child that triggers them is released). */
struct ctx {
    pid_t pid[8];             /* registered children */
    int node[8];              /* their nodes */
    int n;                    /* entries */
    bool armed;               /* the hook rule is active */
    enum ckh_op_kind kind;    /* rule: op kind */
    const char *path;         /* rule: path (NULL: any) */
    int nth;                  /* rule: fires at the nth match */
    int seen;                 /* matches so far */
    struct ckh_ckhfs_action act; /* rule: the verdict */
    int kills;                /* kill_node calls */
    int killed;               /* last node killed */
    int held_answers;         /* held_answered calls */
    int64_t held_result;      /* the last held operation's answer */
    const char *release_path; /* L5: a HOLD ends once the hook saw a pwrite of this path (NULL: never) */
    bool release_seen;        /* it did */
};

static struct {
    struct ckh_simfs *disk;
    struct ckh_ckhfs *fs;
    struct ctx ctx;
    char dir[PATH_MAX]; /* the ckh temporary folder */
    char mnt[PATH_MAX + 8]; /* dir/mnt, the mount point */
    bool cache_names;       /* the next mount lets the kernel keep names */
} T;

static int node_of_pid(void *c, pid_t pid)
{
    struct ctx *x = c;
    for (int i = 0; i < x->n; i++)
        if (x->pid[i] == pid)
            return x->node[i];
    return -1;
}

static void hook(void *c, const struct ckh_ckhfs_op *op, struct ckh_ckhfs_action *act)
{
    struct ctx *x = c;
    if (x->release_path && op->kind == CKH_OP_PWRITE && !strcmp(op->path, x->release_path))
        x->release_seen = true;
    if (!x->armed || op->kind != x->kind || (x->path && strcmp(op->path, x->path) != 0))
        return;
    if (++x->seen == x->nth)
        *act = x->act;
}

static void kill_node(void *c, int node)
{
    struct ctx *x = c;
    x->kills++;
    x->killed = node;
    for (int i = 0; i < x->n; i++)
        if (x->node[i] == node)
            kill(-x->pid[i], SIGKILL); /* each child leads its process group */
}

/* L5: called under the mount's lock, as the hook is. */
static bool released(void *c, const struct ckh_ckhfs_op *op)
{
    const struct ctx *x = c;
    (void)op;
    return x->release_seen;
}

static void held_answered(void *c, const struct ckh_ckhfs_op *op)
{
    struct ctx *x = c;
    x->held_answers++;
    x->held_result = op->result;
}

static void arm(enum ckh_op_kind kind, const char *path, int nth, struct ckh_ckhfs_action act)
{
    T.ctx.kind = kind;
    T.ctx.path = path;
    T.ctx.nth = nth;
    T.ctx.seen = 0;
    T.ctx.act = act;
    T.ctx.armed = true;
}

/* Whether a ckhfs mount is listed at path (this process's mount table). */
static bool mounted_at(const char *path)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        char mp[PATH_MAX];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && strcmp(mp, path) == 0 &&
            strstr(line, " - fuse.ckhfs "))
            found = true;
    }
    fclose(f);
    return found;
}

static void mount_disk(struct ckh_simfs *disk, bool trace)
{
    struct ckh_ckhfs_config cfg = {.mountpoint = T.mnt,
                                   .disk = disk,
                                   .node_of_pid = node_of_pid,
                                   .hook = hook,
                                   .kill_node = kill_node,
                                   .held_answered = held_answered,
                                   .released = released,
                                   .ctx = &T.ctx,
                                   .keep_trace = trace,
                                   .cache_names = T.cache_names};
    char msg[512];
    int rc = ckh_ckhfs_mount(&cfg, &T.fs, msg, sizeof msg);
    ck_assert_msg(rc == 0, "mount: %s", msg);
    ck_assert(mounted_at(T.mnt));
}

/* A failed check ends the test's process by exit(): the mount goes with it
 * instead of staying behind, disconnected. */
static void unmount_at_exit(void)
{
    if (T.fs)
        ckh_ckhfs_unmount(T.fs);
    T.fs = NULL;
}

/* A disk mounted at a fresh <tmp>/ckh-<pid>-XXXXXX/mnt; with store, its
 * bytes in that folder, as a run's disks keep them. */
static void up_store(enum ckh_crash_model model, bool trace, bool store)
{
    bool cache_names = T.cache_names;
    memset(&T, 0, sizeof T);
    T.cache_names = cache_names;
    atexit(unmount_at_exit);
    ck_assert_int_eq(ckh_tmp_make(T.dir, sizeof T.dir), 0);
    struct ckh_simfs_config dc = {.name = "t", .model = model, .sector_bytes = 512, .seed = 7,
                                  .store_dir = store ? T.dir : NULL};
    ck_assert_int_eq(ckh_simfs_create(&dc, &T.disk), 0);
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(T.dir, real));
    snprintf(T.mnt, sizeof T.mnt, "%s/mnt", real);
    ck_assert_int_eq(mkdir(T.mnt, 0755), 0);
    mount_disk(T.disk, trace);
}

static void up(enum ckh_crash_model model, bool trace)
{
    up_store(model, trace, false);
}

static void down(void)
{
    ckh_ckhfs_unmount(T.fs);
    T.fs = NULL;
    ck_assert(!mounted_at(T.mnt));
    ckh_simfs_destroy(T.disk);
    ck_assert_int_eq(ckh_tmp_remove(T.dir), 0);
}

/* ---------------------------------------------------------------- children */

typedef int (*child_fn)(const char *mnt, const char *arg);
static const char *child_name(child_fn fn);
static char self_exe[PATH_MAX]; /* this test binary: children run it again */

/* In a child: a failed check prints where and exits 1 (via return). */
#define CHK(cond)                                                                        \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "child %s:%d: %s failed (errno %d: %s)\n", __FILE__, __LINE__, \
                    #cond, errno, strerror(errno));                                      \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

/* mnt + p in one of a few rotating buffers. */
static const char *at(const char *mnt, const char *p)
{
    static char buf[4][PATH_MAX];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s%s", mnt, p);
    return buf[k];
}

/* Starts fn in a child process of its own process group, registered as
 * node before it may touch the mount. The child execs this binary again
 * ("--child NAME MNT ARG"): a fresh program, as ckh runs them, that owns
 * nothing of the test process (under valgrind it runs natively, so the
 * server thread's memory, absent from a forked copy, is not reported as
 * lost). Returns its pid. */
static pid_t spawn_as(int node, child_fn fn, const char *arg)
{
    const char *name = child_name(fn);
    ck_assert_ptr_nonnull(name);
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(98);
        close(go[0]);
        alarm(60);
        execl(self_exe, "test_ckhfs", "--child", name, T.mnt, arg ? arg : "-", (char *)NULL);
        _exit(97);
    }
    setpgid(pid, pid);
    ck_assert_int_lt(T.ctx.n, 8);
    T.ctx.pid[T.ctx.n] = pid;
    T.ctx.node[T.ctx.n] = node;
    T.ctx.n++;
    close(go[0]);
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    return pid;
}

static int wait_status(pid_t pid)
{
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

/* Runs fn as node and expects it to exit 0. */
static void run_ok(int node, child_fn fn, const char *arg)
{
    int st = wait_status(spawn_as(node, fn, arg));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}

/* ---------------------------------------------------------- disk inspection */

/* The pending list as "kind path[>path2]@node;..." (under the lock). */
static void pending_str(char *out, size_t n)
{
    ckh_ckhfs_lock(T.fs);
    size_t len = 0;
    out[0] = '\0';
    size_t count = ckh_simfs_pending_count(T.disk);
    for (size_t i = 0; i < count; i++) {
        struct ckh_simfs_pending_info pi;
        ck_assert_int_eq(ckh_simfs_pending_get(T.disk, i, &pi), 0);
        len += (size_t)snprintf(out + len, n - len, "%s %s%s%s@%d;",
                                ckh_op_name((enum ckh_op_kind)pi.kind), pi.path,
                                pi.path2 ? ">" : "", pi.path2 ? pi.path2 : "", pi.node);
        ck_assert_uint_lt(len, n);
    }
    ckh_ckhfs_unlock(T.fs);
}

/* Content of path on the disk now (direct view): length, or -errno. */
static int64_t disk_get(const char *path, char *buf, size_t cap)
{
    struct ckh_file *f;
    int rc = ckh_fs_open(ckh_simfs_fs(T.disk), path, CKH_O_RDONLY, &f);
    if (rc)
        return rc;
    int64_t n = ckh_file_pread(f, buf, cap - 1, 0);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    ckh_file_close(f);
    return n;
}

/* The trace without stat entries (the kernel's lookups) as
 * "kind path[>path2][ off+len]=result@node;...". */
static void trace_str(char *out, size_t n, pid_t only_pid)
{
    size_t k = 0, len = 0;
    const struct ckh_ckhfs_op *t = ckh_ckhfs_trace(T.fs, &k);
    out[0] = '\0';
    uint64_t last = 0;
    for (size_t i = 0; i < k; i++) {
        ck_assert_uint_gt(t[i].seq, last); /* arrival order */
        last = t[i].seq;
        if (t[i].kind == CKH_OP_STAT || (only_pid && t[i].pid != only_pid))
            continue;
        len += (size_t)snprintf(out + len, n - len, "%s %s", ckh_op_name(t[i].kind), t[i].path);
        if (t[i].path2)
            len += (size_t)snprintf(out + len, n - len, ">%s", t[i].path2);
        if (t[i].kind == CKH_OP_PWRITE || t[i].kind == CKH_OP_PREAD)
            len += (size_t)snprintf(out + len, n - len, " %llu+%llu",
                                    (unsigned long long)t[i].off, (unsigned long long)t[i].len);
        len += (size_t)snprintf(out + len, n - len, "=%lld@%d;", (long long)t[i].result,
                                t[i].node);
        ck_assert_uint_lt(len, n);
    }
}

/* ------------------------------------------------------------ basic ops */

static int put_file(const char *path, const char *s, bool sync)
{
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHK(fd >= 0);
    CHK(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
    if (sync)
        CHK(fsync(fd) == 0);
    CHK(close(fd) == 0);
    return 0;
}

static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    CHK(fd >= 0);
    CHK(fsync(fd) == 0);
    CHK(close(fd) == 0);
    return 0;
}

static int child_basic(const char *m, const char *arg)
{
    (void)arg;
    char buf[64];
    struct stat st;
    CHK(mkdir(at(m, "/d"), 0755) == 0);
    CHK(put_file(at(m, "/d/a"), "hello world", true) == 0);
    CHK(rename(at(m, "/d/a"), at(m, "/d/b")) == 0);
    CHK(symlink("b", at(m, "/d/l")) == 0);
    ssize_t n = readlink(at(m, "/d/l"), buf, sizeof buf);
    CHK(n == 1 && buf[0] == 'b');
    CHK(stat(at(m, "/d/l"), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 11);
    CHK(lstat(at(m, "/d/l"), &st) == 0 && S_ISLNK(st.st_mode));
    CHK(stat(at(m, "/d"), &st) == 0 && S_ISDIR(st.st_mode));
    CHK(truncate(at(m, "/d/b"), 5) == 0);
    int fd = open(at(m, "/d/b"), O_RDONLY);
    CHK(fd >= 0);
    CHK(read(fd, buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0);
    CHK(fstat(fd, &st) == 0 && st.st_size == 5);
    CHK(close(fd) == 0);
    DIR *d = opendir(at(m, "/d"));
    CHK(d != NULL);
    char names[128] = "";
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        strcat(names, de->d_name);
        strcat(names, de->d_type == DT_LNK ? "@ " : de->d_type == DT_DIR ? "/ " : " ");
    }
    closedir(d);
    CHK(strcmp(names, "./ ../ b l@ ") == 0);
    CHK(unlink(at(m, "/d/l")) == 0);
    CHK(mkdir(at(m, "/e"), 0755) == 0);
    CHK(rmdir(at(m, "/e")) == 0);
    /* errors a program sees as on any filesystem */
    CHK(open(at(m, "/nope"), O_RDONLY) < 0 && errno == ENOENT);
    CHK(mkdir(at(m, "/d"), 0755) < 0 && errno == EEXIST);
    CHK(rmdir(at(m, "/d")) < 0 && errno == ENOTEMPTY);
    CHK(open(at(m, "/d/b"), O_CREAT | O_EXCL | O_WRONLY, 0644) < 0 && errno == EEXIST);
    CHK(unlink(at(m, "/d")) < 0 && errno == EISDIR);
    return 0;
}

START_TEST(test_basic_ops_reach_simfs)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    run_ok(0, child_basic, NULL);
    char p[2048];
    pending_str(p, sizeof p);
    /* The fsynced write is durable; every entry op is still pending (no
     * folder was fsynced); the truncate is a pending data op. */
    ck_assert_str_eq(p, "mkdir /d@0;open /d/a@0;rename /d/a>/d/b@0;symlink /d/l>b@0;"
                        "ftruncate /d/b@0;unlink /d/l>b@0;mkdir /e@0;rmdir /e@0;");
    char buf[64];
    ck_assert_int_eq(disk_get("/d/b", buf, sizeof buf), 5);
    ck_assert_str_eq(buf, "hello");
    down();
}
END_TEST

/* ------------------------------------------------------------ crash models */

static int child_crashy(const char *m, const char *arg)
{
    (void)arg;
    CHK(put_file(at(m, "/kept"), "K", true) == 0);
    CHK(fsync_dir(m) == 0);
    CHK(put_file(at(m, "/lost"), "L", true) == 0); /* file fsynced, folder not */
    CHK(rename(at(m, "/kept"), at(m, "/renamed")) == 0); /* never synced */
    CHK(put_file(at(m, "/unsynced"), "U", false) == 0);
    return 0;
}

/* After the crash, through the mount: what the disk kept (arg: "ext4"). */
static int child_after_crash(const char *m, const char *arg)
{
    bool ext4 = arg != NULL;
    char buf[8] = "";
    int fd = open(at(m, "/kept"), O_RDONLY);
    CHK(fd >= 0);
    CHK(read(fd, buf, sizeof buf) == 1 && buf[0] == 'K');
    close(fd);
    CHK(access(at(m, "/renamed"), F_OK) < 0 && errno == ENOENT);
    CHK(access(at(m, "/unsynced"), F_OK) < 0 && errno == ENOENT);
    CHK((access(at(m, "/lost"), F_OK) == 0) == ext4);
    return 0;
}

static void crash_case(enum ckh_crash_model model)
{
    bool ext4 = model == CKH_CRASH_EXT4_ORDERED;
    up(model, false);
    run_ok(0, child_crashy, NULL);
    char buf[16];
    /* Before the crash, the live state has everything. */
    ck_assert_int_eq(disk_get("/renamed", buf, sizeof buf), 1);
    ck_assert_int_eq(disk_get("/unsynced", buf, sizeof buf), 1);
    ckh_ckhfs_lock(T.fs);
    ck_assert_uint_gt(ckh_simfs_pending_count(T.disk), 0);
    ck_assert_int_eq(ckh_simfs_crash_uniform(T.disk, 0, CKH_CRASH_DROP), 0);
    ck_assert_uint_eq(ckh_simfs_pending_count(T.disk), 0);
    ckh_ckhfs_unlock(T.fs);
    ck_assert_int_eq(disk_get("/kept", buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "K");
    ck_assert_int_eq(disk_get("/renamed", buf, sizeof buf), -ENOENT);
    ck_assert_int_eq(disk_get("/unsynced", buf, sizeof buf), -ENOENT);
    if (ext4) {
        ck_assert_int_eq(disk_get("/lost", buf, sizeof buf), 1); /* fsync committed the journal */
        ck_assert_str_eq(buf, "L");
    } else {
        ck_assert_int_eq(disk_get("/lost", buf, sizeof buf), -ENOENT);
    }
    run_ok(0, child_after_crash, ext4 ? "ext4" : NULL);
    down();
}

START_TEST(test_crash_posix_weak)
{
    NEED_FUSE();
    crash_case(CKH_CRASH_POSIX_WEAK);
}
END_TEST

START_TEST(test_crash_ext4_ordered)
{
    NEED_FUSE();
    crash_case(CKH_CRASH_EXT4_ORDERED);
}
END_TEST

/* O_SYNC writes are durable at once; O_APPEND appends at simfs's end. */
static int child_sync_append(const char *m, const char *arg)
{
    (void)arg;
    int fd = open(at(m, "/s"), O_CREAT | O_WRONLY | O_SYNC, 0644);
    CHK(fd >= 0);
    CHK(write(fd, "sync", 4) == 4);
    CHK(close(fd) == 0);
    CHK(put_file(at(m, "/ap"), "ab", false) == 0);
    int a = open(at(m, "/ap"), O_WRONLY | O_APPEND);
    int b = open(at(m, "/ap"), O_WRONLY | O_APPEND);
    CHK(a >= 0 && b >= 0);
    CHK(write(a, "cd", 2) == 2);
    CHK(write(b, "ef", 2) == 2); /* b's kernel offset is stale; the append is not */
    CHK(write(a, "gh", 2) == 2);
    close(a);
    close(b);
    return 0;
}

START_TEST(test_sync_and_append)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    run_ok(0, child_sync_append, NULL);
    char p[1024];
    pending_str(p, sizeof p);
    ck_assert_str_eq(p, "open /s@0;open /ap@0;pwrite /ap@0;pwrite /ap@0;pwrite /ap@0;"
                        "pwrite /ap@0;");
    char buf[32];
    ck_assert_int_eq(disk_get("/ap", buf, sizeof buf), 8);
    ck_assert_str_eq(buf, "abcdefgh");
    down();
}
END_TEST

/* ------------------------------------------------------------ nodes */

static int child_write_unsynced(const char *m, const char *arg)
{
    CHK(put_file(at(m, (const char *)arg), "data", false) == 0);
    return 0;
}

static int child_read_n1(const char *m, const char *arg)
{
    (void)arg;
    char buf[8] = "";
    int fd = open(at(m, "/n1"), O_RDONLY);
    CHK(fd >= 0);
    CHK(read(fd, buf, sizeof buf) == 4 && memcmp(buf, "data", 4) == 0);
    close(fd);
    CHK(access(at(m, "/n0"), F_OK) < 0 && errno == ENOENT);
    return 0;
}

static int child_stat_root(const char *m, const char *arg)
{
    (void)arg;
    struct stat st;
    CHK(stat(m, &st) == 0 && S_ISDIR(st.st_mode));
    return 0;
}

static void *thread_write(void *arg)
{
    const char *path = arg;
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd >= 0 && write(fd, "t", 1) == 1 && close(fd) == 0)
        return NULL;
    return (void *)1;
}

/* A write from a second thread of the process still maps to its node. */
static int child_threaded(const char *m, const char *arg)
{
    (void)arg;
    pthread_t th;
    void *res = (void *)1;
    CHK(pthread_create(&th, NULL, thread_write, (void *)at(m, "/thr")) == 0);
    CHK(pthread_join(th, &res) == 0 && res == NULL);
    return 0;
}

START_TEST(test_nodes_by_pid)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    run_ok(0, child_write_unsynced, "/n0");
    run_ok(1, child_write_unsynced, "/n1");
    /* Both at once: each child's ops carry its own node. */
    pid_t a = spawn_as(2, child_write_unsynced, "/c2");
    pid_t b = spawn_as(3, child_write_unsynced, "/c3");
    int sa = wait_status(a), sb = wait_status(b);
    ck_assert(WIFEXITED(sa) && WEXITSTATUS(sa) == 0 && WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
    pid_t thr = spawn_as(4, child_threaded, NULL);
    ck_assert_int_eq(wait_status(thr), 0);
    char p[2048];
    pending_str(p, sizeof p);
    ck_assert_ptr_nonnull(strstr(p, "open /n0@0;pwrite /n0@0;open /n1@1;pwrite /n1@1;"));
    ck_assert_ptr_nonnull(strstr(p, "open /c2@2;"));
    ck_assert_ptr_nonnull(strstr(p, "pwrite /c2@2;"));
    ck_assert_ptr_nonnull(strstr(p, "pwrite /c3@3;"));
    ck_assert_ptr_nonnull(strstr(p, "open /thr@4;pwrite /thr@4;"));
    /* The trace names the process (not the thread) and its node. */
    char t[2048];
    trace_str(t, sizeof t, thr);
    ck_assert_str_eq(t, "open /thr=0@4;pwrite /thr 0+1=1@4;close /thr=0@4;");
    /* A process that is no process of the job is node -1. */
    pid_t stranger = spawn_as(-1, child_stat_root, NULL);
    ck_assert_int_eq(wait_status(stranger), 0);
    size_t k = 0, seen = 0;
    const struct ckh_ckhfs_op *tr = ckh_ckhfs_trace(T.fs, &k);
    for (size_t i = 0; i < k; i++) {
        if (tr[i].pid == stranger) {
            ck_assert_int_eq(tr[i].node, -1);
            seen++;
        }
    }
    ck_assert_uint_gt(seen, 0);
    /* A crash of node 0 resolves node 0's ops only. */
    ckh_ckhfs_lock(T.fs);
    ck_assert_int_eq(ckh_simfs_crash_uniform(T.disk, 0, CKH_CRASH_DROP), 0);
    ckh_ckhfs_unlock(T.fs);
    pending_str(p, sizeof p);
    ck_assert_ptr_null(strstr(p, "@0;"));
    ck_assert_ptr_nonnull(strstr(p, "open /n1@1;pwrite /n1@1;"));
    run_ok(1, child_read_n1, NULL);
    /* A node number past what ckhfs keeps views for: its ops go through
     * the view of unknown processes (pending as node -1). */
    run_ok(70000, child_write_unsynced, "/big_node");
    pending_str(p, sizeof p);
    ck_assert_ptr_nonnull(strstr(p, "open /big_node@-1;pwrite /big_node@-1;"));
    down();
}
END_TEST

/* ------------------------------------------------------------ the hook */

static int child_errno(const char *m, const char *arg)
{
    (void)arg;
    int fd = open(at(m, "/e"), O_CREAT | O_WRONLY, 0644);
    CHK(fd >= 0);
    CHK(write(fd, "abcd", 4) < 0 && errno == ENOSPC);
    CHK(write(fd, "wxyz", 4) == 4);
    CHK(close(fd) == 0);
    return 0;
}

static int child_fsync_eio(const char *m, const char *arg)
{
    (void)arg;
    int fd = open(at(m, "/f"), O_CREAT | O_WRONLY, 0644);
    CHK(fd >= 0);
    CHK(write(fd, "abcd", 4) == 4);
    CHK(fsync(fd) < 0 && errno == EIO);
    CHK(close(fd) == 0);
    CHK(rename(at(m, "/f"), at(m, "/g")) == 0);
    return 0;
}

static int child_open_refused(const char *m, const char *arg)
{
    (void)arg;
    CHK(open(at(m, "/o"), O_CREAT | O_WRONLY, 0644) < 0 && errno == EACCES);
    CHK(access(at(m, "/o"), F_OK) < 0 && errno == ENOENT);
    return 0;
}

START_TEST(test_hook_errno)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    arm(CKH_OP_PWRITE, "/e", 1,
        (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_ERRNO, .err = ENOSPC});
    run_ok(0, child_errno, NULL);
    char buf[16];
    ck_assert_int_eq(disk_get("/e", buf, sizeof buf), 4);
    ck_assert_str_eq(buf, "wxyz");
    /* A failed fsync: the program sees EIO and nothing became durable. */
    arm(CKH_OP_FSYNC, NULL, 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_ERRNO, .err = EIO});
    pid_t pid = spawn_as(0, child_fsync_eio, NULL);
    ck_assert_int_eq(wait_status(pid), 0);
    char p[1024];
    pending_str(p, sizeof p);
    ck_assert_str_eq(p, "open /e@0;pwrite /e@0;open /f@0;pwrite /g@0;rename /f>/g@0;");
    char t[2048];
    trace_str(t, sizeof t, pid);
    ck_assert_str_eq(t, "open /f=0@0;pwrite /f 0+4=4@0;fsync /f=-5@0;close /f=0@0;"
                        "rename /f>/g=0@0;");
    arm(CKH_OP_OPEN, "/o", 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_ERRNO, .err = EACCES});
    run_ok(0, child_open_refused, NULL);
    down();
}
END_TEST

/* Two writes of 100 bytes; the first accepts arg bytes (NULL: 10). */
static int child_short(const char *m, const char *arg)
{
    char data[100];
    memset(data, 'x', sizeof data);
    int fd = open(at(m, "/short"), O_CREAT | O_WRONLY, 0644);
    CHK(fd >= 0);
    CHK(write(fd, data, sizeof data) == (arg ? atoi(arg) : 10));
    CHK(write(fd, data, sizeof data) == 100);
    CHK(close(fd) == 0);
    return 0;
}

static int child_delay(const char *m, const char *arg)
{
    (void)arg;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHK(mkdir(at(m, "/slow"), 0755) == 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    CHK(ms >= 150);
    return 0;
}

START_TEST(test_hook_short_and_delay)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    arm(CKH_OP_PWRITE, NULL, 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_SHORT, .keep = 10});
    run_ok(0, child_short, NULL);
    char buf[256];
    ck_assert_int_eq(disk_get("/short", buf, sizeof buf), 110);
    /* keep more than the write holds: all of it; keep 0: a write of 0 */
    arm(CKH_OP_PWRITE, NULL, 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_SHORT, .keep = 1000});
    run_ok(0, child_short, "100");
    ck_assert_int_eq(disk_get("/short", buf, sizeof buf), 200);
    arm(CKH_OP_PWRITE, NULL, 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_SHORT, .keep = 0});
    run_ok(0, child_short, "0");
    ck_assert_int_eq(disk_get("/short", buf, sizeof buf), 200);
    arm(CKH_OP_MKDIR, NULL, 1,
        (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_DELAY, .delay_ms = 200});
    run_ok(0, child_delay, NULL);
    down();
}
END_TEST

/* mkdir of arg (held by the hook until the test kills this child). */
static int child_mkdir(const char *m, const char *arg)
{
    CHK(mkdir(at(m, arg), 0755) == 0);
    return 0;
}

/* mkdir of arg, failed by the hook with EIO. */
static int child_mkdir_eio(const char *m, const char *arg)
{
    CHK(mkdir(at(m, arg), 0755) < 0 && errno == EIO);
    return 0;
}

/* Makes the folders the delay tests use, through the mount (so the
 * kernel knows their names: see test_delay_holds_only_its_op). */
static int child_folders(const char *m, const char *arg)
{
    (void)arg;
    CHK(mkdir(at(m, "/shards"), 0755) == 0);
    CHK(mkdir(at(m, "/d"), 0755) == 0);
    return 0;
}

/* Writes and fsyncs a shard into the existing folder /shards. */
static int child_shard(const char *m, const char *arg)
{
    (void)arg;
    int fd = open(at(m, "/shards/rank_1"), O_CREAT | O_WRONLY, 0644);
    CHK(fd >= 0);
    CHK(write(fd, "shard", 5) == 5);
    CHK(fsync(fd) == 0);
    CHK(close(fd) == 0);
    return 0;
}

/* rename(/d, /e): waits, in libfuse's path locks, for a held write below /d. */
static int child_rename_dir(const char *m, const char *arg)
{
    (void)arg;
    CHK(rename(at(m, "/d"), at(m, "/e")) == 0);
    return 0;
}

/* Writes /d/f (the hook holds that write until the test kills this child). */
static int child_held_write(const char *m, const char *arg)
{
    (void)arg;
    int fd = open(at(m, "/d/f"), O_CREAT | O_WRONLY, 0644);
    CHK(fd >= 0);
    CHK(write(fd, "held", 4) == 4);
    return 0;
}

/* The trace entry of the first op of kind on path (NULL: none yet), from
 * a fresh snapshot. */
static const struct ckh_ckhfs_op *traced(enum ckh_op_kind kind, const char *path)
{
    size_t k = 0;
    const struct ckh_ckhfs_op *t = ckh_ckhfs_trace(T.fs, &k);
    for (size_t i = 0; i < k; i++)
        if (t[i].kind == kind && strcmp(t[i].path, path) == 0)
            return &t[i];
    return NULL;
}

/* Waits until the op of kind on path has reached the hook (it is then
 * held): no time limit of its own, Check's timeout covers it. */
static void wait_arrived(enum ckh_op_kind kind, const char *path)
{
    while (!traced(kind, path)) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* L1, L2, L4 (harness/ckhfs/ckhfs.c): node 0's mkdir of /step is held
 * (for a minute: the test ends it by killing node 0); node 1 writes and
 * fsyncs its shard into an existing folder meanwhile. Checked by the
 * order of answers in the trace, not by time: node 1's write is answered
 * while the mkdir is not. Killed, node 0 gets its answer at once (-EINTR,
 * not done). The folder was made through the mount: the kernel holds the
 * root folder's lock across the held mkdir, so a name of the root it has
 * not looked up yet (one made directly on the disk, or /step itself)
 * would wait for that lock, before ckhfs sees anything. */
START_TEST(test_delay_holds_only_its_op)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    run_ok(1, child_folders, NULL);
    arm(CKH_OP_MKDIR, "/step", 1,
        (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_DELAY, .delay_ms = 60000});
    pid_t slow = spawn_as(0, child_mkdir, "/step");
    wait_arrived(CKH_OP_MKDIR, "/step");
    run_ok(1, child_shard, NULL);
    const struct ckh_ckhfs_op *w = traced(CKH_OP_PWRITE, "/shards/rank_1");
    ck_assert_ptr_nonnull(w);
    uint64_t w_seq = w->seq, w_answered = w->answered;
    const struct ckh_ckhfs_op *mk = traced(CKH_OP_MKDIR, "/step");
    ck_assert_uint_gt(w_answered, 0);
    ck_assert_uint_lt(mk->seq, w_seq);   /* the mkdir arrived first */
    ck_assert_uint_eq(mk->answered, 0);  /* and is still held */
    ck_assert_int_eq(T.ctx.held_answers, 0);
    ck_assert_int_eq(kill(-slow, SIGKILL), 0);
    int st = wait_status(slow);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    mk = traced(CKH_OP_MKDIR, "/step");
    ck_assert_int_eq(mk->result, -EINTR);
    ck_assert_uint_gt(mk->answered, w_answered);
    ck_assert_int_eq(T.ctx.held_answers, 1);
    ck_assert_int_eq(T.ctx.held_result, -EINTR);
    char buf[16];
    ck_assert_int_eq(disk_get("/shards/rank_1", buf, sizeof buf), 5);
    struct ckh_stat cs;
    ck_assert_int_ne(ckh_fs_stat(ckh_simfs_fs(T.disk), "/step", &cs), 0); /* not done */
    down();
}
END_TEST

/* L5: node 0's mkdir is held by a HOLD (for longer than the test may
 * run) until node 1 has written its shard: then it is done and answered,
 * after the write, and node 0 exits normally. Were the release not seen,
 * the mkdir would wait out its 10 minutes and the test its timeout. */
START_TEST(test_hold_until_released)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    run_ok(1, child_folders, NULL);
    T.ctx.release_path = "/shards/rank_1";
    arm(CKH_OP_MKDIR, "/step", 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_HOLD, .delay_ms = 600000});
    pid_t slow = spawn_as(0, child_mkdir, "/step");
    wait_arrived(CKH_OP_MKDIR, "/step");
    ck_assert_uint_eq(traced(CKH_OP_MKDIR, "/step")->answered, 0); /* held */
    run_ok(1, child_shard, NULL);
    int st = wait_status(slow);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "held mkdir's child status %#x", st);
    const struct ckh_ckhfs_op *mk = traced(CKH_OP_MKDIR, "/step");
    const struct ckh_ckhfs_op *w = traced(CKH_OP_PWRITE, "/shards/rank_1");
    ck_assert_ptr_nonnull(w);
    ck_assert_uint_lt(mk->seq, w->seq);           /* the mkdir arrived first */
    ck_assert_uint_gt(mk->answered, w->answered); /* and was answered after the write */
    ck_assert_int_eq(mk->result, 0);
    ck_assert_int_eq(T.ctx.held_answers, 1);
    struct ckh_stat cs;
    ck_assert_int_eq(ckh_fs_stat(ckh_simfs_fs(T.disk), "/step", &cs), 0); /* done */
    T.ctx.release_path = NULL;
    down();
}
END_TEST

/* L3: while node 0's write of /d/f is held, node 1's rename of /d waits
 * for it (libfuse's path locks), alone: node 2 still writes and fsyncs
 * its shard. Once node 0 is killed, the rename goes through. */
START_TEST(test_delay_rename_waits_alone)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    run_ok(1, child_folders, NULL);
    arm(CKH_OP_PWRITE, "/d/f", 1,
        (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_DELAY, .delay_ms = 60000});
    pid_t slow = spawn_as(0, child_held_write, NULL);
    wait_arrived(CKH_OP_PWRITE, "/d/f");
    pid_t ren = spawn_as(1, child_rename_dir, NULL);
    /* The rename's lookups reach ckhfs, then the rename itself waits in
     * libfuse; a pause lets it get there (whether it does changes what is
     * tested, never the outcome). */
    wait_arrived(CKH_OP_STAT, "/e");
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
    nanosleep(&ts, NULL);
    run_ok(2, child_shard, NULL);
    ck_assert_uint_gt(traced(CKH_OP_PWRITE, "/shards/rank_1")->answered, 0);
    ck_assert_uint_eq(traced(CKH_OP_PWRITE, "/d/f")->answered, 0);
    ck_assert_ptr_null(traced(CKH_OP_RENAME, "/d"));
    ck_assert_int_eq(kill(-slow, SIGKILL), 0);
    int st = wait_status(slow);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    st = wait_status(ren);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rename child status %#x", st);
    ck_assert_int_eq(traced(CKH_OP_RENAME, "/d")->result, 0);
    down();
}
END_TEST

/* Makes /n, creates /n/a, renames it to /n/b, unlinks /n/b, then checks
 * that the kernel's view follows: /n/a and /n/b are gone, /n/b can be
 * made again. */
static int child_names(const char *m, const char *arg)
{
    (void)arg;
    CHK(mkdir(at(m, "/n"), 0755) == 0);
    CHK(put_file(at(m, "/n/a"), "1", false) == 0);
    CHK(rename(at(m, "/n/a"), at(m, "/n/b")) == 0);
    CHK(unlink(at(m, "/n/b")) == 0);
    struct stat st;
    CHK(stat(at(m, "/n/a"), &st) < 0 && errno == ENOENT);
    CHK(stat(at(m, "/n/b"), &st) < 0 && errno == ENOENT);
    int fd = open(at(m, "/n/b"), O_CREAT | O_EXCL | O_WRONLY, 0644);
    CHK(fd >= 0 && close(fd) == 0);
    CHK(stat(at(m, "/n/b"), &st) == 0 && st.st_size == 0);
    return 0;
}

/* How many stat entries of path the trace holds, and the last one's result. */
static int stats_of(const char *path, int64_t *last)
{
    size_t k = 0;
    int n = 0;
    const struct ckh_ckhfs_op *t = ckh_ckhfs_trace(T.fs, &k);
    for (size_t i = 0; i < k; i++)
        if (t[i].kind == CKH_OP_STAT && strcmp(t[i].path, path) == 0) {
            n++;
            if (last)
                *last = t[i].result;
        }
    return n;
}

/* cache_names: the kernel keeps the names it found, so the rename's
 * source and the unlink ask nothing (one lookup of /n in all: the one
 * before its mkdir, which found nothing); names not found are asked for
 * each time. Without it, every path walk asks for every name. The
 * operations and what the program sees are the same either way. */
START_TEST(test_cache_names)
{
    NEED_FUSE();
    int n_dir[2] = {0, 0};
    for (int cached = 0; cached <= 1; cached++) {
        T.cache_names = cached;
        up(CKH_CRASH_POSIX_WEAK, true);
        pid_t pid = spawn_as(0, child_names, NULL);
        int st = wait_status(pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
        char t[2048];
        trace_str(t, sizeof t, pid);
        ck_assert_str_eq(t, "mkdir /n=0@0;open /n/a=0@0;pwrite /n/a 0+1=1@0;close /n/a=0@0;"
                            "rename /n/a>/n/b=0@0;unlink /n/b=0@0;open /n/b=0@0;close /n/b=0@0;");
        /* Lookups (and the kernel's getattrs) of /n: every path walk
         * asks for it without cache_names, only the first (which finds
         * nothing: before the mkdir) and a getattr or so with it. */
        n_dir[cached] = stats_of("/n", NULL);
        /* Names not found are asked for each time, cached or not: the
         * rename's target, the two stats after the unlink, the create. */
        ck_assert_int_ge(stats_of("/n/b", NULL), 3);
        down();
    }
    T.cache_names = false;
    ck_assert_msg(n_dir[1] <= 2 && n_dir[0] >= n_dir[1] + 4, "stats of /n: %d without cache_names, %d with",
                  n_dir[0], n_dir[1]);
}
END_TEST

/* Writes 5 blocks of 4 KiB at increasing offsets, then exits 0. */
static int child_five_writes(const char *m, const char *arg)
{
    (void)arg;
    char block[4096];
    memset(block, 'k', sizeof block);
    int fd = open(at(m, "/k"), O_CREAT | O_WRONLY, 0644);
    CHK(fd >= 0);
    for (int i = 0; i < 5; i++)
        CHK(pwrite(fd, block, sizeof block, (off_t)i * 4096) == 4096);
    close(fd);
    return 0;
}

static void kill_case(enum ckh_ckhfs_verdict v, uint64_t size_after)
{
    up(CKH_CRASH_POSIX_WEAK, true);
    arm(CKH_OP_PWRITE, "/k", 3, (struct ckh_ckhfs_action){.verdict = v});
    pid_t pid = spawn_as(0, child_five_writes, NULL);
    int st = wait_status(pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child status %#x", st);
    ck_assert_int_eq(T.ctx.kills, 1);
    ck_assert_int_eq(T.ctx.killed, 0);
    struct ckh_stat cs;
    ck_assert_int_eq(ckh_fs_stat(ckh_simfs_fs(T.disk), "/k", &cs), 0);
    ck_assert_uint_eq(cs.size_bytes, size_after);
    /* The trace ends at the fatal write: its answer, then the dying
     * process's close. */
    char t[2048];
    trace_str(t, sizeof t, pid);
    char want[512];
    snprintf(want, sizeof want,
             "open /k=0@0;pwrite /k 0+4096=4096@0;pwrite /k 4096+4096=4096@0;"
             "pwrite /k 8192+4096=%d@0;close /k=0@0;",
             v == CKH_CKHFS_KILL ? -EIO : 4096);
    ck_assert_str_eq(t, want);
    down();
}

START_TEST(test_hook_kill_before)
{
    NEED_FUSE();
    kill_case(CKH_CKHFS_KILL, 8192);
}
END_TEST

START_TEST(test_hook_kill_after)
{
    NEED_FUSE();
    kill_case(CKH_CKHFS_KILL_AFTER, 12288);
}
END_TEST

/* ------------------------------------------------------------ trace */

static int child_traced(const char *m, const char *arg)
{
    (void)arg;
    CHK(mkdir(at(m, "/t"), 0755) == 0);
    int fd = open(at(m, "/t/f"), O_CREAT | O_RDWR, 0644);
    CHK(fd >= 0);
    CHK(pwrite(fd, "hello", 5, 3) == 5);
    char buf[8];
    CHK(pread(fd, buf, 8, 0) == 8);
    CHK(fdatasync(fd) == 0);
    CHK(close(fd) == 0);
    CHK(rename(at(m, "/t/f"), at(m, "/t/g")) == 0);
    CHK(symlink("g", at(m, "/t/l")) == 0);
    CHK(fsync_dir(at(m, "/t")) == 0);
    DIR *d = opendir(at(m, "/t"));
    CHK(d != NULL);
    CHK(readdir(d) != NULL);
    closedir(d);
    CHK(unlink(at(m, "/t/g")) == 0);
    CHK(open(at(m, "/t/nope"), O_RDONLY) < 0 && errno == ENOENT);
    return 0;
}

START_TEST(test_trace)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    pid_t pid = spawn_as(0, child_traced, NULL);
    ck_assert_int_eq(wait_status(pid), 0);
    char t[4096];
    trace_str(t, sizeof t, pid);
    ck_assert_str_eq(t, "mkdir /t=0@0;open /t/f=0@0;pwrite /t/f 3+5=5@0;pread /t/f 0+8=8@0;"
                        "fdatasync /t/f=0@0;close /t/f=0@0;rename /t/f>/t/g=0@0;"
                        "symlink /t/l>g=0@0;fsync_dir /t=0@0;listdir /t=0@0;unlink /t/g=0@0;");
    /* Lookups are stat entries; the failed one carries its errno. */
    size_t k = 0;
    const struct ckh_ckhfs_op *tr = ckh_ckhfs_trace(T.fs, &k);
    bool seen = false;
    for (size_t i = 0; i < k; i++)
        if (tr[i].kind == CKH_OP_STAT && strcmp(tr[i].path, "/t/nope") == 0) {
            ck_assert_int_eq(tr[i].result, -ENOENT);
            ck_assert_int_eq(tr[i].pid, pid);
            seen = true;
        }
    ck_assert(seen);
    down();
}
END_TEST

/* ---------------------------------------------------- what ckhfs refuses */

static int child_refused(const char *m, const char *arg)
{
    (void)arg;
    CHK(put_file(at(m, "/r"), "0123456789", false) == 0);
    CHK(link(at(m, "/r"), at(m, "/hard")) < 0 && errno == EPERM);
    CHK(mkfifo(at(m, "/fifo"), 0644) < 0 && errno == EPERM);
    CHK(setxattr(at(m, "/r"), "user.k", "v", 1, 0) < 0 && errno == EOPNOTSUPP);
    char v[8];
    CHK(getxattr(at(m, "/r"), "user.k", v, sizeof v) < 0 && errno == EOPNOTSUPP);
    int fd = open(at(m, "/r"), O_RDWR);
    CHK(fd >= 0);
    CHK(fallocate(fd, 0, 0, 4096) < 0 && errno == EOPNOTSUPP);
    CHK(open(m, O_TMPFILE | O_RDWR, 0644) < 0 && errno == EOPNOTSUPP);
    /* Shared mappings are refused (direct_io); private ones read the file
     * and their writes stay private, as anywhere. */
    void *p = mmap(NULL, 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHK(p == MAP_FAILED && errno == ENODEV);
    p = mmap(NULL, 10, PROT_READ, MAP_SHARED, fd, 0);
    CHK(p == MAP_FAILED && errno == ENODEV);
    char *q = mmap(NULL, 10, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHK(q != MAP_FAILED);
    CHK(memcmp(q, "0123456789", 10) == 0);
    q[0] = 'X';
    CHK(msync(q, 10, MS_SYNC) == 0);
    CHK(munmap(q, 10) == 0);
    char buf[16];
    CHK(pread(fd, buf, 10, 0) == 10 && buf[0] == '0');
    /* File locks are the kernel's own (local to this machine). */
    CHK(flock(fd, LOCK_EX) == 0 && flock(fd, LOCK_UN) == 0);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    CHK(fcntl(fd, F_SETLK, &fl) == 0);
    /* chmod, chown and utimes are accepted and change nothing. */
    CHK(fchmod(fd, 0600) == 0);
    struct stat st;
    CHK(fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0644 && st.st_mtime == 1577836800);
    close(fd);
    /* O_DIRECT works (direct_io already bypasses the page cache). */
    fd = open(at(m, "/direct"), O_CREAT | O_WRONLY | O_DIRECT, 0644);
    CHK(fd >= 0);
    void *blk = NULL;
    CHK(posix_memalign(&blk, 4096, 4096) == 0);
    memset(blk, 'd', 4096);
    CHK(write(fd, blk, 4096) == 4096);
    free(blk);
    close(fd);
    /* Files are not executable (mode 0644). */
    CHK(put_file(at(m, "/x.sh"), "#!/bin/sh\nexit 0\n", false) == 0);
    CHK(execl(at(m, "/x.sh"), "x.sh", (char *)NULL) < 0 && errno == EACCES);
    /* syncfs/sync reach no FUSE server: nothing becomes durable. */
    CHK(put_file(at(m, "/nosync"), "n", false) == 0);
    fd = open(at(m, "/nosync"), O_RDONLY);
    CHK(fd >= 0 && syncfs(fd) == 0);
    close(fd);
    /* copy_file_range: the kernel falls back to reads and writes. */
    int in = open(at(m, "/r"), O_RDONLY), out = open(at(m, "/copy"), O_CREAT | O_WRONLY, 0644);
    CHK(in >= 0 && out >= 0);
    CHK(copy_file_range(in, NULL, out, NULL, 10, 0) == 10);
    close(in);
    close(out);
    /* rename flags simfs does not model */
    CHK(renameat2(AT_FDCWD, at(m, "/r"), AT_FDCWD, at(m, "/direct"), RENAME_NOREPLACE) < 0 &&
        errno == EEXIST);
    CHK(renameat2(AT_FDCWD, at(m, "/r"), AT_FDCWD, at(m, "/direct"), RENAME_EXCHANGE) < 0 &&
        errno == EINVAL);
    return 0;
}

START_TEST(test_refused_and_unseen_ops)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    run_ok(0, child_refused, NULL);
    char buf[4200];
    ck_assert_int_eq(disk_get("/r", buf, sizeof buf), 10);
    ck_assert_str_eq(buf, "0123456789");
    ck_assert_int_eq(disk_get("/direct", buf, sizeof buf), 4096);
    ck_assert_int_eq(disk_get("/hard", buf, sizeof buf), -ENOENT);
    ck_assert_int_eq(disk_get("/copy", buf, sizeof buf), 10);
    ck_assert_str_eq(buf, "0123456789");
    char p[4096];
    pending_str(p, sizeof p);
    ck_assert_ptr_nonnull(strstr(p, "open /nosync@0;pwrite /nosync@0;"));
    down();
}
END_TEST

/* ------------------------------------------------------------ lifetime */

/* Holds a file open across the unmount, then uses it. */
static int child_busy(const char *m, const char *arg)
{
    int pipes[2]; /* ready write end, go read end */
    CHK(sscanf(arg, "%d,%d", &pipes[0], &pipes[1]) == 2);
    int fd = open(at(m, "/busy"), O_CREAT | O_RDWR, 0644);
    CHK(fd >= 0);
    CHK(write(fd, "x", 1) == 1);
    CHK(write(pipes[0], "r", 1) == 1);
    char c;
    CHK(read(pipes[1], &c, 1) == 1);
    char buf[4];
    CHK(pread(fd, buf, 1, 0) < 0 && errno == ENOTCONN); /* server gone: an error, not a hang */
    close(fd);
    return 0;
}

START_TEST(test_unmount_busy)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    char pipes[32];
    snprintf(pipes, sizeof pipes, "%d,%d", ready[1], go[0]);
    pid_t pid = spawn_as(0, child_busy, pipes);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ckh_ckhfs_unmount(T.fs);
    T.fs = NULL;
    ck_assert(!mounted_at(T.mnt));
    ck_assert_int_eq(write(go[1], "g", 1), 1);
    int st = wait_status(pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
    /* The disk keeps what the program wrote. */
    char buf[4];
    ck_assert_int_eq(disk_get("/busy", buf, sizeof buf), 1);
    down();
}
END_TEST

/* A ckh that mounts in its own temporary folder and dies by SIGKILL. */
static void killed_ckh(const char *base, int report)
{
    setenv("TMPDIR", base, 1);
    char dir[PATH_MAX], mnt[PATH_MAX + 8];
    struct ckh_simfs_config dc = {.name = "k", .sector_bytes = 512};
    struct ckh_simfs *disk = NULL;
    if (ckh_tmp_make(dir, sizeof dir) != 0 || ckh_simfs_create(&dc, &disk) != 0)
        _exit(2);
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    struct ckh_ckhfs_config cfg = {.mountpoint = mnt, .disk = disk};
    struct ckh_ckhfs *fs = NULL;
    char msg[256];
    if (mkdir(mnt, 0755) != 0 || ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg) != 0)
        _exit(3);
    char real[PATH_MAX];
    if (!realpath(mnt, real) || write(report, real, strlen(real) + 1) < 0)
        _exit(4);
    for (;;)
        pause();
}

START_TEST(test_sweep_stale_mounts)
{
    NEED_FUSE();
    /* A live mount of this process, outside the swept folder. */
    up(CKH_CRASH_POSIX_WEAK, false);
    char base[PATH_MAX + 8];
    snprintf(base, sizeof base, "%s/base", T.dir);
    ck_assert_int_eq(mkdir(base, 0755), 0);
    int rep[2];
    ck_assert_int_eq(pipe(rep), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(rep[0]);
        alarm(60);
        killed_ckh(base, rep[1]);
    }
    close(rep[1]);
    char dead[PATH_MAX] = "";
    ck_assert_int_gt(read(rep[0], dead, sizeof dead), 0);
    close(rep[0]);
    kill(pid, SIGKILL);
    ck_assert(WIFSIGNALED(wait_status(pid)));
    /* The dead server's mount stays, disconnected. */
    ck_assert(mounted_at(dead));
    struct stat st;
    ck_assert_int_ne(stat(dead, &st), 0);
    ck_assert_int_eq(errno, ENOTCONN);
    /* The stale-folder sweep unmounts it, then removes the folder. */
    ck_assert_int_eq(ckh_tmp_sweep(base), 1);
    ck_assert(!mounted_at(dead));
    ck_assert_int_ne(access(dead, F_OK), 0);
    /* The live mount elsewhere was not touched, nor by a direct sweep of
     * a folder that holds no mount. */
    ck_assert(mounted_at(T.mnt));
    ck_assert_int_eq(ckh_ckhfs_sweep_stale(base), 0);
    ck_assert(mounted_at(T.mnt));
    down();
}
END_TEST

START_TEST(test_sweep_stale_direct)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    int rep[2];
    ck_assert_int_eq(pipe(rep), 0);
    char base[PATH_MAX + 8];
    snprintf(base, sizeof base, "%s/base", T.dir);
    ck_assert_int_eq(mkdir(base, 0755), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(rep[0]);
        alarm(60);
        killed_ckh(base, rep[1]);
    }
    close(rep[1]);
    char dead[PATH_MAX] = "";
    ck_assert_int_gt(read(rep[0], dead, sizeof dead), 0);
    close(rep[0]);
    kill(pid, SIGKILL);
    wait_status(pid);
    ck_assert(mounted_at(dead));
    ck_assert_int_eq(ckh_ckhfs_sweep_stale(base), 1);
    ck_assert(!mounted_at(dead));
    ck_assert(mounted_at(T.mnt));
    down();
}
END_TEST

/* A user who may not open /dev/fuse is told so, with what to do. */
START_TEST(test_fuse_not_permitted)
{
    NEED_FUSE();
    if (geteuid() != 0)
        CKH_SKIP("needs root, to become a user without access to /dev/fuse");
    struct stat st;
    ck_assert_int_eq(stat("/dev/fuse", &st), 0);
    if (st.st_mode & 0006)
        CKH_SKIP("/dev/fuse is open to every user here");
    int out[2];
    ck_assert_int_eq(pipe(out), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(out[0]);
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        char msg[512] = "";
        int rc = ckh_ckhfs_available(msg, sizeof msg);
        struct ckh_ckhfs_config cfg = {.mountpoint = "/tmp", .disk = (struct ckh_simfs *)msg};
        struct ckh_ckhfs *fs = NULL;
        char msg2[512] = "";
        int rc2 = ckh_ckhfs_mount(&cfg, &fs, msg2, sizeof msg2);
        dprintf(out[1], "%d %d %s|%s", rc == CKH_EUNSUPPORTED, rc2 == CKH_EUNSUPPORTED && !fs, msg,
                msg2);
        _exit(0);
    }
    close(out[1]);
    char got[1100] = "";
    ssize_t n = read(out[0], got, sizeof got - 1);
    close(out[0]);
    ck_assert_int_eq(wait_status(pid), 0);
    ck_assert_int_gt(n, 0);
    ck_assert_msg(strncmp(got, "1 1 FUSE is not available: cannot open /dev/fuse read-write: Permission "
                               "denied (give this user access to /dev/fuse or run as root",
                          102) == 0,
                  "%s", got);
    ck_assert_ptr_nonnull(strstr(got, "|FUSE is not available: cannot open /dev/fuse"));
}
END_TEST

/* path as the mount table writes it (octal escapes for space, tab, newline
 * and backslash). */
static const char *escaped(const char *path)
{
    static char buf[2][PATH_MAX * 4];
    static int k;
    k = (k + 1) % 2;
    char *w = buf[k];
    for (const char *r = path; *r; r++) {
        if (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\\')
            w += sprintf(w, "\\%03o", (unsigned char)*r);
        else
            *w++ = *r;
    }
    *w = '\0';
    return buf[k];
}

/* Stale mounts whose paths hold a space and a tab (escaped in the mount
 * table), one deeper than the other: the sweep finds and removes both. */
START_TEST(test_sweep_escaped_paths)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    char base[PATH_MAX + 32], deeper[PATH_MAX + 64];
    snprintf(base, sizeof base, "%s/sp ace\tand\\tab", T.dir);
    snprintf(deeper, sizeof deeper, "%s/deeper dir", base);
    ck_assert_int_eq(mkdir(base, 0755), 0);
    ck_assert_int_eq(mkdir(deeper, 0755), 0);
    const char *bases[2] = {base, deeper};
    char dead[2][PATH_MAX];
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        int rep[2];
        ck_assert_int_eq(pipe(rep), 0);
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0) {
            close(rep[0]);
            alarm(60);
            killed_ckh(bases[i], rep[1]);
        }
        close(rep[1]);
        dead[i][0] = '\0';
        ck_assert_int_gt(read(rep[0], dead[i], sizeof dead[i]), 0);
        close(rep[0]);
    }
    for (int i = 0; i < 2; i++) {
        kill(pids[i], SIGKILL);
        wait_status(pids[i]);
        ck_assert_msg(ckh_test_ckhfs_mounts(escaped(dead[i])) == 1, "%s not listed", dead[i]);
    }
    /* An exact unmount of a folder above them touches neither. */
    ck_assert_int_eq(ckh__ckhfs_unmount_below(base, true), 0);
    ck_assert_int_eq(ckh_ckhfs_sweep_stale(base), 2);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(ckh_test_ckhfs_mounts(escaped(dead[i])), 0);
    ck_assert(mounted_at(T.mnt));
    down();
}
END_TEST

/* In a user namespace as uid 1000 (arg: the folder to sweep): prints
 * "A B C BEFORE SWEPT AFTER|M1|M2|M3" for test_fuse_as_user. */
static int child_as_user(const char *m, const char *arg)
{
    (void)m;
    char m1[512] = "", m2[512] = "", m3[512] = "";
    unsetenv("PATH"); /* the default: /usr/bin:/bin */
    int a = ckh_ckhfs_available(m1, sizeof m1);
    setenv("PATH", "/nonexistent::/also/not", 1);
    int b = ckh_ckhfs_available(m2, sizeof m2);
    /* an empty PATH is the default; a folder name too long for a path is
     * passed over; no message wanted: none written */
    char longpath[6000];
    memset(longpath, 'x', 5000);
    snprintf(longpath + 5000, sizeof longpath - 5000, ":/usr/local/bin:/usr/bin:/bin");
    longpath[0] = '/';
    setenv("PATH", "", 1);
    int c = ckh_ckhfs_available(m3, sizeof m3);
    setenv("PATH", longpath, 1);
    c |= ckh_ckhfs_available(m3, sizeof m3) | ckh_ckhfs_available(NULL, 0);
    char dead[PATH_MAX];
    snprintf(dead, sizeof dead, "%s/", arg);
    int before = ckh_test_ckhfs_mounts(dead);
    int swept = ckh_ckhfs_sweep_stale(arg);
    int after = ckh_test_ckhfs_mounts(dead);
    printf("%d %d %d %d %d %d|%s|%s|%s", a, b == CKH_EUNSUPPORTED, c, before, swept, after, m1, m2, m3);
    return 0;
}

/* Writes "1000 0 1" (uid or gid 1000 of pid's user namespace is the real
 * root) to /proc/PID/<file>, from this process (the parent namespace). */
static bool map_id(pid_t pid, const char *file)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, file);
    int fd = open(path, O_WRONLY);
    bool ok = fd >= 0 && write(fd, "1000 0 1", 8) == 8;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* ckh run by a user other than root (here: uid 1000 of a user namespace,
 * the real root outside, so that /dev/fuse still opens): FUSE needs
 * fusermount3 on PATH, and a stale mount that user may not detach is
 * handed to fusermount3; what the sweep says it unmounted is what left
 * the mount table. */
START_TEST(test_fuse_as_user)
{
    NEED_FUSE();
    if (geteuid() != 0)
        CKH_SKIP("needs root, to map the real root to an ordinary user of a user namespace");
    up(CKH_CRASH_POSIX_WEAK, false);
    char base[PATH_MAX + 8];
    snprintf(base, sizeof base, "%s/base", T.dir);
    ck_assert_int_eq(mkdir(base, 0755), 0);
    int rep[2];
    ck_assert_int_eq(pipe(rep), 0);
    pid_t dead_pid = fork();
    ck_assert_int_ge(dead_pid, 0);
    if (dead_pid == 0) {
        close(rep[0]);
        alarm(60);
        killed_ckh(base, rep[1]);
    }
    close(rep[1]);
    char dead[PATH_MAX] = "";
    ck_assert_int_gt(read(rep[0], dead, sizeof dead), 0);
    close(rep[0]);
    kill(dead_pid, SIGKILL);
    wait_status(dead_pid);
    ck_assert(mounted_at(dead));
    int out[2], ready[2], go[2];
    ck_assert_int_eq(pipe(out), 0);
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(out[0]);
        close(ready[0]);
        close(go[1]);
        alarm(60);
        char sig = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'x';
        if (sig == 'x')
            dprintf(out[1], "unshare: %s", strerror(errno));
        if (write(ready[1], &sig, 1) != 1 || sig == 'x')
            _exit(77);
        if (read(go[0], &sig, 1) != 1 || sig != 'm' || geteuid() != 1000) {
            dprintf(out[1], "no id map (euid %d)", (int)geteuid());
            _exit(77);
        }
        /* A fresh program (child_as_user) that owns nothing of this one. */
        dup2(out[1], 1);
        execl(self_exe, "test_ckhfs", "--child", "as_user", T.mnt, base, (char *)NULL);
        _exit(97);
    }
    close(out[1]);
    close(ready[1]);
    close(go[0]);
    char sig = 0;
    ck_assert_int_eq(read(ready[0], &sig, 1), 1);
    close(ready[0]);
    if (sig == 'u')
        sig = map_id(pid, "uid_map") && map_id(pid, "gid_map") ? 'm' : 'x';
    ck_assert_int_eq(write(go[1], &sig, 1), 1);
    close(go[1]);
    char got[2048] = "";
    ssize_t n = read(out[0], got, sizeof got - 1);
    close(out[0]);
    int st = wait_status(pid);
    ck_assert_int_gt(n, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        ck_assert_int_eq(ckh_ckhfs_sweep_stale(base), 1);
        down();
        CKH_SKIP("no user namespace here (%s)", got);
    }
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x: %s", st, got);
    int a, b, c, before, swept, after;
    ck_assert_msg(sscanf(got, "%d %d %d %d %d %d|", &a, &b, &c, &before, &swept, &after) == 6, "%s", got);
    ck_assert_msg(a == 0 && c == 0, "%s", got);
    ck_assert_msg(b == 1 && strstr(got, "|FUSE is not available: fusermount3 is not on PATH and ckh is not root "
                                        "(install Debian's fuse3 package)|"), "%s", got);
    ck_assert_int_eq(before, 1);
    ck_assert_int_eq(swept, before - after);
    /* Root detaches whatever the user could not: that mount exactly,
     * then nothing is left below the folder. */
    ck_assert_int_eq(ckh__ckhfs_unmount_below(dead, true), after);
    ck_assert_int_eq(ckh_ckhfs_sweep_stale(base), 0);
    ck_assert(!mounted_at(dead));
    ck_assert(mounted_at(T.mnt));
    down();
}
END_TEST

START_TEST(test_mount_errors)
{
    NEED_FUSE();
    char msg[256] = "";
    ck_assert_int_eq(ckh_ckhfs_available(msg, sizeof msg), 0);
    ck_assert_str_eq(msg, "");
    struct ckh_simfs_config dc = {.name = "e", .sector_bytes = 512};
    struct ckh_simfs *disk = NULL;
    ck_assert_int_eq(ckh_simfs_create(&dc, &disk), 0);
    struct ckh_ckhfs_config cfg = {.mountpoint = "/nonexistent/ckhfs-mnt", .disk = disk};
    struct ckh_ckhfs *fs = (struct ckh_ckhfs *)&cfg;
    ck_assert_int_eq(ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg), CKH_EINVAL);
    ck_assert_ptr_null(fs);
    ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/ckhfs-mnt"));
    cfg.disk = NULL;
    cfg.mountpoint = "/tmp";
    ck_assert_int_eq(ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "ckhfs: a mount needs a mount point and a disk");
    cfg.disk = disk;
    cfg.mountpoint = "";
    ck_assert_int_eq(ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "ckhfs: a mount needs a mount point and a disk");
    cfg.mountpoint = NULL;
    ck_assert_int_eq(ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckhfs_mount(NULL, &fs, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckhfs_mount(&cfg, NULL, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "ckhfs: no output handle");
    /* A mount point that is a file. */
    char file[] = "/tmp/ckh_test_ckhfs_file_XXXXXX";
    int fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    close(fd);
    cfg.mountpoint = file;
    ck_assert_int_eq(ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg), CKH_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "ckhfs: mount point %s is not a folder", file);
    ck_assert_str_eq(msg, want);
    ck_assert_ptr_null(fs);
    unlink(file);
    ck_assert_int_eq(ckh_ckhfs_available(NULL, 0), 0);
    ckh_ckhfs_unmount(NULL);
    ck_assert_ptr_null(ckh_ckhfs_trace(NULL, NULL));
    size_t n = 5;
    ck_assert_ptr_null(ckh_ckhfs_trace(NULL, &n));
    ck_assert_uint_eq(n, 0);
    ckh_ckhfs_lock(NULL);
    ckh_ckhfs_unlock(NULL);
    ckh_simfs_destroy(disk);
}
END_TEST

/* ------------------------------------------------------------ memory */

/* 100 MiB; 8 under valgrind (CKH_VALGRIND), where RSS says nothing. */
static int big_mib(void)
{
    return getenv("CKH_VALGRIND") ? 8 : 100;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static int child_big(const char *m, const char *arg)
{
    bool write_it = arg != NULL;
    /* page-aligned: an unaligned 1 MiB buffer spans 257 pages and the
     * kernel sends it as two requests (256 pages at most) */
    static char chunk[1 << 20] __attribute__((aligned(4096)));
    int fd = open(at(m, "/big"), write_it ? O_CREAT | O_WRONLY : O_RDONLY, 0644);
    CHK(fd >= 0);
    for (int i = 0; i < big_mib(); i++) {
        if (write_it) {
            memset(chunk, 'a' + i % 26, sizeof chunk);
            CHK(write(fd, chunk, sizeof chunk) == (ssize_t)sizeof chunk);
        } else {
            CHK(read(fd, chunk, sizeof chunk) == (ssize_t)sizeof chunk);
            CHK(chunk[0] == 'a' + i % 26 && chunk[sizeof chunk - 1] == 'a' + i % 26);
        }
    }
    if (write_it)
        CHK(fsync(fd) == 0);
    else
        CHK(read(fd, chunk, 1) == 0);
    close(fd);
    return 0;
}

START_TEST(test_big_file_memory)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    long before = rss_kib();
    run_ok(0, child_big, "write");
    long written = rss_kib();
    run_ok(0, child_big, NULL);
    long read_back = rss_kib();
    const int mib = big_mib();
    fprintf(stderr, "test_ckhfs: RSS +%ld KiB after writing %d MiB, +%ld KiB after reading it\n",
            written - before, mib, read_back - before);
    /* 1 MiB write(2)s arrive whole (max_write): one pwrite each. */
    size_t k = 0, writes = 0;
    const struct ckh_ckhfs_op *tr = ckh_ckhfs_trace(T.fs, &k);
    for (size_t i = 0; i < k; i++) {
        if (tr[i].kind == CKH_OP_PWRITE) {
            ck_assert_uint_eq(tr[i].len, 1u << 20);
            writes++;
        }
    }
    ck_assert_uint_eq(writes, (size_t)mib);
    /* One copy, in simfs: the FUSE layer holds no file content. */
    ck_assert_uint_ge(ckh_simfs_heap_bytes(T.disk), (uint64_t)mib << 20);
    ck_assert_uint_lt(ckh_simfs_heap_bytes(T.disk), (uint64_t)(mib + 8) << 20);
#if !defined(__SANITIZE_ADDRESS__)
    /* (ASan's quarantine keeps freed request buffers resident.) */
    if (!getenv("CKH_VALGRIND")) {
        ck_assert_int_lt(written - before, (mib + mib / 2) * 1024);
        ck_assert_int_lt(read_back - written, 16 * 1024);
    }
#endif
    down();
}
END_TEST

/* A byte at 2^40: SEEK_DATA / SEEK_HOLE from the disk's extents; statfs
 * says what ckh_simfs_space says (arg: the expected total and free bytes,
 * "T F"). */
static int child_sparse(const char *m, const char *arg)
{
    const off_t far = (off_t)1 << 40;
    int fd = open(at(m, "/sparse"), O_CREAT | O_RDWR, 0644);
    CHK(fd >= 0);
    CHK(pwrite(fd, "x", 1, far) == 1);
    CHK(fsync(fd) == 0);
    CHK(lseek(fd, 0, SEEK_DATA) == far);
    CHK(lseek(fd, 0, SEEK_HOLE) == 0);
    CHK(lseek(fd, far, SEEK_HOLE) == far + 1);
    CHK(lseek(fd, far + 1, SEEK_DATA) < 0 && errno == ENXIO);
    char c = 0;
    CHK(pread(fd, &c, 1, far) == 1 && c == 'x');
    CHK(pread(fd, &c, 1, far / 2) == 1 && c == 0);
    close(fd);
    unsigned long long total = 0, avail = 0;
    CHK(sscanf(arg, "%llu %llu", &total, &avail) == 2);
    struct statvfs sv;
    CHK(statvfs(m, &sv) == 0);
    CHK((unsigned long long)sv.f_blocks * sv.f_frsize == total / 4096 * 4096);
    /* the real disk's free space moves while others write: within 1 GiB */
    unsigned long long got = (unsigned long long)sv.f_bavail * sv.f_frsize;
    CHK(got + (1ull << 30) > avail && got < avail + (1ull << 30));
    return 0;
}

/* Real size (sim/simfs_store.c): with the disk's bytes in the run folder,
 * writing and reading 100 MiB through the mount leaves ckh's memory
 * about where it was, and simfs's heap holds metadata only; a 1 TiB
 * sparse file is one byte of data, seen as such by lseek; statfs reports
 * the real filesystem of the run folder. */
START_TEST(test_store_real_size)
{
    NEED_FUSE();
    up_store(CKH_CRASH_POSIX_WEAK, false, true);
    long before = rss_kib();
    run_ok(0, child_big, "write");
    run_ok(0, child_big, NULL);
    long after = rss_kib();
    const int mib = big_mib();
    fprintf(stderr, "test_ckhfs: store: RSS +%ld KiB after writing and reading %d MiB, heap %llu bytes\n",
            after - before, mib, (unsigned long long)ckh_simfs_heap_bytes(T.disk));
    ck_assert_uint_lt(ckh_simfs_heap_bytes(T.disk), 1u << 20);
#if !defined(__SANITIZE_ADDRESS__)
    if (!getenv("CKH_VALGRIND"))
        ck_assert_int_lt(after - before, 16 * 1024);
#endif
    uint64_t total = 0, avail = 0;
    ckh_ckhfs_lock(T.fs);
    ck_assert_int_eq(ckh_simfs_space(T.disk, &total, &avail), 0);
    ckh_ckhfs_unlock(T.fs);
    struct statvfs sv;
    ck_assert_int_eq(statvfs(T.dir, &sv), 0);
    ck_assert_uint_eq(total, (uint64_t)sv.f_blocks * sv.f_frsize);
    char arg[64];
    snprintf(arg, sizeof arg, "%llu %llu", (unsigned long long)total, (unsigned long long)avail);
    run_ok(0, child_sparse, arg);
    ckh_ckhfs_lock(T.fs);
    ck_assert_int_eq(ckh_simfs_crash(T.disk, -1, NULL, 0), 0); /* fsynced: it stays, whole */
    struct ckh_stat st;
    ck_assert_int_eq(ckh_fs_stat(ckh_simfs_fs(T.disk), "/big", &st), 0);
    ck_assert_uint_eq(st.size_bytes, (uint64_t)mib << 20);
    ckh_ckhfs_unlock(T.fs);
    down();
}
END_TEST


/* ------------------------------------------------- errors through the mount */

/* What a program meets when it asks simfs for something it refuses: the
 * errno it would get from a local filesystem, nothing changed. */
static int child_errors(const char *m, const char *arg)
{
    (void)arg;
    struct stat st;
    char buf[64];
    CHK(open(at(m, "/nothere"), O_RDONLY) < 0 && errno == ENOENT);
    CHK(stat(at(m, "/nothere"), &st) < 0 && errno == ENOENT);
    CHK(mkdir(at(m, "/d"), 0755) == 0);
    CHK(mkdir(at(m, "/d"), 0755) < 0 && errno == EEXIST);
    CHK(put_file(at(m, "/d/f"), "0123456789", false) == 0);
    CHK(open(at(m, "/d/f"), O_CREAT | O_EXCL | O_WRONLY, 0644) < 0 && errno == EEXIST);
    CHK(open(at(m, "/d/f/x"), O_CREAT | O_WRONLY, 0644) < 0 && errno == ENOTDIR);
    CHK(rmdir(at(m, "/d")) < 0 && errno == ENOTEMPTY);
    CHK(rmdir(at(m, "/d/f")) < 0 && errno == ENOTDIR);
    CHK(rmdir(at(m, "/nothere")) < 0 && errno == ENOENT);
    CHK(unlink(at(m, "/nothere")) < 0 && errno == ENOENT);
    CHK(unlink(at(m, "/d")) < 0 && errno == EISDIR);
    CHK(open(at(m, "/d"), O_WRONLY) < 0 && errno == EISDIR);
    /* rename: over a folder that holds something, a file over a folder,
     * a folder over a file, a folder into itself, a missing source */
    CHK(mkdir(at(m, "/e"), 0755) == 0);
    CHK(rename(at(m, "/e"), at(m, "/d")) < 0 && errno == ENOTEMPTY);
    CHK(rename(at(m, "/d/f"), at(m, "/e")) < 0 && errno == EISDIR);
    CHK(rename(at(m, "/e"), at(m, "/d/f")) < 0 && errno == ENOTDIR);
    CHK(rename(at(m, "/d"), at(m, "/d/sub")) < 0 && errno == EINVAL);
    CHK(rename(at(m, "/nothere"), at(m, "/x")) < 0 && errno == ENOENT);
    /* RENAME_NOREPLACE to a free name: done */
    CHK(renameat2(AT_FDCWD, at(m, "/e"), AT_FDCWD, at(m, "/e3"), RENAME_NOREPLACE) == 0);
    CHK(rename(at(m, "/e3"), at(m, "/e")) == 0);
    /* a folder over an empty folder replaces it */
    CHK(mkdir(at(m, "/e2"), 0755) == 0);
    CHK(rename(at(m, "/e2"), at(m, "/e")) == 0);
    CHK(stat(at(m, "/e2"), &st) < 0 && errno == ENOENT);
    CHK(stat(at(m, "/e"), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0755);
    /* a name longer than simfs takes */
    char longname[300];
    longname[0] = '/';
    memset(longname + 1, 'n', 280);
    longname[281] = '\0';
    CHK(open(at(m, longname), O_CREAT | O_WRONLY, 0644) < 0 && errno == ENAMETOOLONG);
    CHK(mkdir(at(m, longname), 0755) < 0 && errno == ENAMETOOLONG);
    /* links: readlink of a file, a link over a name that exists */
    CHK(readlink(at(m, "/d/f"), buf, sizeof buf) < 0 && errno == EINVAL);
    CHK(readlink(at(m, "/nothere"), buf, sizeof buf) < 0 && errno == ENOENT);
    CHK(symlink("f", at(m, "/d/f")) < 0 && errno == EEXIST);
    CHK(symlink("f", at(m, "/d/l")) == 0);
    ssize_t n = readlink(at(m, "/d/l"), buf, sizeof buf);
    CHK(n == 1 && buf[0] == 'f');
    CHK(lstat(at(m, "/d/l"), &st) == 0 && S_ISLNK(st.st_mode) && (st.st_mode & 0777) == 0777);
    CHK(stat(at(m, "/d/l"), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 10);
    /* truncate by name (no open file) and by descriptor */
    CHK(truncate(at(m, "/d/f"), 4) == 0);
    CHK(stat(at(m, "/d/f"), &st) == 0 && st.st_size == 4);
    CHK(truncate(at(m, "/nothere"), 4) < 0 && errno == ENOENT);
    int fd = open(at(m, "/d/f"), O_RDWR);
    CHK(fd >= 0);
    CHK(ftruncate(fd, 6) == 0);
    CHK(fstat(fd, &st) == 0 && st.st_size == 6 && st.st_nlink == 1);
    CHK(pread(fd, buf, sizeof buf, 0) == 6 && memcmp(buf, "0123\0\0", 6) == 0);
    /* An open file whose name is removed: still read through its handle;
     * its size, asked with the handle (lseek SEEK_END), is 0; fstat, which
     * the kernel asks by inode without the handle, finds no name: ESTALE. */
    CHK(unlink(at(m, "/d/f")) == 0);
    CHK(pread(fd, buf, sizeof buf, 0) == 6 && memcmp(buf, "0123\0\0", 6) == 0);
    CHK(lseek(fd, 0, SEEK_END) == 0);
    CHK(fstat(fd, &st) < 0 && errno == ESTALE);
    CHK(close(fd) == 0);
    /* fsync of a folder; O_DSYNC: each write made durable (an fdatasync
     * inside the write request) */
    CHK(fsync_dir(at(m, "/d")) == 0);
    fd = open(at(m, "/g"), O_CREAT | O_WRONLY | O_DSYNC, 0644);
    CHK(fd >= 0);
    CHK(write(fd, "dsync", 5) == 5);
    CHK(close(fd) == 0);
    /* accepted and ignored: owners, times */
    CHK(chown(at(m, "/g"), getuid(), getgid()) == 0);
    CHK(utimensat(AT_FDCWD, at(m, "/g"), NULL, 0) == 0);
    CHK(stat(at(m, "/g"), &st) == 0 && st.st_mtime == 1577836800 && st.st_uid == getuid());
    /* a listing with every kind of entry */
    DIR *dir = opendir(at(m, "/d"));
    CHK(dir != NULL);
    int files = 0, links = 0, dots = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            dots++;
        else if (de->d_type == DT_LNK)
            links++;
        else
            files++;
    }
    closedir(dir);
    CHK(dots == 2 && links == 1 && files == 0);
    CHK(opendir(at(m, "/nothere")) == NULL && errno == ENOENT);
    return 0;
}

START_TEST(test_errors_reach_the_program)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    run_ok(0, child_errors, NULL);
    /* Nothing that failed changed the disk. */
    char buf[64];
    ck_assert_int_eq(disk_get("/d/f", buf, sizeof buf), -ENOENT);
    ck_assert_int_eq(disk_get("/g", buf, sizeof buf), 5);
    ck_assert_str_eq(buf, "dsync");
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_listdir(ckh_simfs_fs(T.disk), "/", &l), 0);
    char names[128] = "";
    for (size_t i = 0; i < l.count; i++) {
        strcat(names, l.entries[i].name);
        strcat(names, ";");
    }
    ckh_fs_listing_free(&l);
    ck_assert_str_eq(names, "d;e;g;");
    /* The failed operations that reached ckhfs are in the trace with their
     * answers (the kernel answers EEXIST itself from its lookups). */
    size_t n = 0;
    ck_assert_ptr_nonnull(ckh_ckhfs_trace(T.fs, NULL));
    const struct ckh_ckhfs_op *t = ckh_ckhfs_trace(T.fs, &n);
    int enoent = 0, enotempty = 0, truncs = 0, dirsyncs = 0, datasyncs = 0;
    for (size_t i = 0; i < n; i++) {
        enoent += t[i].result == -ENOENT;
        enotempty += t[i].kind == CKH_OP_RENAME && t[i].result == -ENOTEMPTY;
        truncs += t[i].kind == CKH_OP_FTRUNCATE && t[i].result == 0;
        dirsyncs += t[i].kind == CKH_OP_FSYNC_DIR && t[i].result == 0;
        datasyncs += t[i].kind == CKH_OP_FDATASYNC && t[i].result == 0;
    }
    ck_assert_int_gt(enoent, 0);
    ck_assert_int_eq(enotempty, 1);
    ck_assert_int_ge(truncs, 2);
    ck_assert_int_eq(dirsyncs, 1);
    ck_assert_int_eq(datasyncs, 0);
    char p[4096];
    pending_str(p, sizeof p);
    ck_assert_msg(strstr(p, "open /g@0;") && !strstr(p, "pwrite /g"), "pending: %s", p);
    down();
}
END_TEST

/* One operation (arg: its name) on the files test_hook_every_op made;
 * the hook fails it with EROFS. */
static int child_one_op(const char *m, const char *arg)
{
    char buf[16];
    struct stat st;
    int fd;
    if (strcmp(arg, "stat") == 0)
        CHK(stat(at(m, "/file"), &st) < 0 && errno == EROFS);
    else if (strcmp(arg, "readlink") == 0)
        CHK(readlink(at(m, "/link"), buf, sizeof buf) < 0 && errno == EROFS);
    else if (strcmp(arg, "mkdir") == 0)
        CHK(mkdir(at(m, "/new"), 0755) < 0 && errno == EROFS);
    else if (strcmp(arg, "unlink") == 0)
        CHK(unlink(at(m, "/file")) < 0 && errno == EROFS);
    else if (strcmp(arg, "rmdir") == 0)
        CHK(rmdir(at(m, "/dir")) < 0 && errno == EROFS);
    else if (strcmp(arg, "symlink") == 0)
        CHK(symlink("file", at(m, "/new")) < 0 && errno == EROFS);
    else if (strcmp(arg, "rename") == 0)
        CHK(rename(at(m, "/file"), at(m, "/new")) < 0 && errno == EROFS);
    else if (strcmp(arg, "truncate") == 0)
        CHK(truncate(at(m, "/file"), 1) < 0 && errno == EROFS);
    else if (strcmp(arg, "open") == 0)
        CHK(open(at(m, "/file"), O_RDONLY) < 0 && errno == EROFS);
    else if (strcmp(arg, "listdir") == 0) {
        DIR *d = opendir(at(m, "/dir"));
        CHK(d != NULL);
        errno = 0;
        CHK(readdir(d) == NULL && errno == EROFS);
        closedir(d);
    } else if (strcmp(arg, "fsync_dir") == 0) {
        fd = open(at(m, "/dir"), O_RDONLY | O_DIRECTORY);
        CHK(fd >= 0);
        CHK(fsync(fd) < 0 && errno == EROFS);
        close(fd);
    } else {
        fd = open(at(m, "/file"), O_RDWR);
        CHK(fd >= 0);
        if (strcmp(arg, "pread") == 0)
            CHK(pread(fd, buf, 4, 0) < 0 && errno == EROFS);
        else if (strcmp(arg, "pwrite") == 0)
            CHK(pwrite(fd, "zz", 2, 0) < 0 && errno == EROFS);
        else if (strcmp(arg, "ftruncate") == 0)
            CHK(ftruncate(fd, 1) < 0 && errno == EROFS);
        else if (strcmp(arg, "fsync") == 0)
            CHK(fsync(fd) < 0 && errno == EROFS);
        else if (strcmp(arg, "fdatasync") == 0)
            CHK(fdatasync(fd) < 0 && errno == EROFS);
        else if (strcmp(arg, "close") == 0) {
            CHK(close(fd) < 0 && errno == EROFS);
            return 0;
        } else
            return 2;
        CHK(close(fd) == 0);
    }
    return 0;
}

/* Every kind of request meets the hook: an ERRNO verdict fails it with
 * that errno, and the disk is left as it was. */
START_TEST(test_hook_every_op)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, false);
    struct ckh_fs *d = ckh_simfs_fs(T.disk);
    struct ckh_file *f = NULL;
    ckh_ckhfs_lock(T.fs);
    ck_assert_int_eq(ckh_fs_open(d, "/file", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, "abcd", 4), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    ck_assert_int_eq(ckh_fs_mkdir(d, "/dir"), 0);
    ck_assert_int_eq(ckh_fs_symlink(d, "file", "/link"), 0);
    ckh_ckhfs_unlock(T.fs);
    static const struct {
        const char *name;
        enum ckh_op_kind kind;
        const char *path;
    } ops[] = {
        {"stat", CKH_OP_STAT, "/file"},         {"readlink", CKH_OP_READLINK, "/link"},
        {"mkdir", CKH_OP_MKDIR, "/new"},         {"unlink", CKH_OP_UNLINK, "/file"},
        {"rmdir", CKH_OP_RMDIR, "/dir"},         {"symlink", CKH_OP_SYMLINK, "/new"},
        {"rename", CKH_OP_RENAME, "/file"},      {"truncate", CKH_OP_FTRUNCATE, "/file"},
        {"open", CKH_OP_OPEN, "/file"},          {"listdir", CKH_OP_LISTDIR, "/dir"},
        {"fsync_dir", CKH_OP_FSYNC_DIR, "/dir"}, {"pread", CKH_OP_PREAD, "/file"},
        {"pwrite", CKH_OP_PWRITE, "/file"},      {"ftruncate", CKH_OP_FTRUNCATE, "/file"},
        {"fsync", CKH_OP_FSYNC, "/file"},        {"fdatasync", CKH_OP_FDATASYNC, "/file"},
        {"close", CKH_OP_CLOSE, "/file"},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        arm(ops[i].kind, ops[i].path, 1,
            (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_ERRNO, .err = EROFS});
        T.ctx.n = 0; /* the children before this one are gone */
        int st = wait_status(spawn_as(0, child_one_op, ops[i].name));
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status %#x", ops[i].name, st);
        ck_assert_msg(T.ctx.seen >= 1, "%s: the hook never saw it", ops[i].name);
        T.ctx.armed = false;
        char buf[16];
        ck_assert_int_eq(disk_get("/file", buf, sizeof buf), 4);
        ck_assert_str_eq(buf, "abcd");
        ck_assert(ckh_fs_exists(d, "/dir") && ckh_fs_exists(d, "/link") && !ckh_fs_exists(d, "/new"));
    }
    /* An ERRNO verdict without an errno fails with EIO. */
    arm(CKH_OP_MKDIR, "/new", 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_ERRNO});
    run_ok(0, child_mkdir_eio, "/new");
    ck_assert(!ckh_fs_exists(d, "/new"));
    down();
}
END_TEST

/* ckh's own error codes reach the kernel as the nearest errno. */
START_TEST(test_errno_of_ckh_codes)
{
    ck_assert_int_eq(ckh__ckhfs_errno(0), 0);
    ck_assert_int_eq(ckh__ckhfs_errno(7), 0);
    ck_assert_int_eq(ckh__ckhfs_errno(-ENOSPC), -ENOSPC);
    ck_assert_int_eq(ckh__ckhfs_errno(CKH_ENOMEM), -ENOMEM);
    ck_assert_int_eq(ckh__ckhfs_errno(CKH_EINVAL), -EINVAL);
    ck_assert_int_eq(ckh__ckhfs_errno(CKH_EESCAPE), -EINVAL);
    ck_assert_int_eq(ckh__ckhfs_errno(CKH_EUNSUPPORTED), -EOPNOTSUPP);
    ck_assert_int_eq(ckh__ckhfs_errno(CKH_ENOTFOUND), -ENOENT);
    ck_assert_int_eq(ckh__ckhfs_errno(CKH_EEXISTS), -EEXIST);
    ck_assert_int_eq(ckh__ckhfs_errno(CKH_ECORRUPT), -EIO);
}
END_TEST

/* Absolute mount paths: resolved when they exist, kept as given (made
 * absolute, trailing slashes cut) when they do not, refused when too long. */
START_TEST(test_abspath)
{
    char out[PATH_MAX];
    ck_assert_int_eq(ckh__ckhfs_abspath("/", out, sizeof out), 0);
    ck_assert_str_eq(out, "/");
    ck_assert_int_eq(ckh__ckhfs_abspath("/nonexistent/ckh/x///", out, sizeof out), 0);
    ck_assert_str_eq(out, "/nonexistent/ckh/x");
    char cwd[PATH_MAX], want[PATH_MAX + 32];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(ckh__ckhfs_abspath("no-such-ckh-dir/y/", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/no-such-ckh-dir/y", cwd);
    ck_assert_str_eq(out, want);
    char small[8];
    ck_assert_int_eq(ckh__ckhfs_abspath("/nonexistent/ckh/x", small, sizeof small), -ENAMETOOLONG);
    ck_assert_int_eq(ckh__ckhfs_abspath("/usr/lib", small, 4), -ENAMETOOLONG);
    /* nothing mounted below a folder that is not there */
    ck_assert_int_eq(ckh_ckhfs_sweep_stale("/nonexistent/ckh"), 0);
    ck_assert_int_eq(ckh__ckhfs_unmount_below(NULL, true), 0);
}
END_TEST

/* ------------------------------------------------------ swapping the disk */

/* Checks what the mount shows against arg, entries split by ';':
 * "PATH=TEXT" (a file holding TEXT), "PATH=/" (a folder), "PATH=-" (no
 * such name), "PATH=~" (ENOTDIR: a parent is a file), "PATH=!" (EIO: no disk served), "ls=A,B" (the root's names,
 * sorted). Each looked at twice (a second walk is the one a kernel cache
 * would answer). */
static int child_expect(const char *m, const char *arg)
{
    char spec[1024];
    snprintf(spec, sizeof spec, "%s", arg);
    for (char *save = NULL, *e = strtok_r(spec, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(e, '=');
        CHK(eq != NULL);
        *eq = '\0';
        const char *want = eq + 1;
        for (int twice = 0; twice < 2; twice++) {
            if (!strcmp(e, "ls")) {
                char got[512] = "";
                char *names[32];
                int n = 0;
                DIR *d = opendir(m);
                CHK(d != NULL);
                struct dirent *de;
                while ((de = readdir(d)) != NULL && n < 32)
                    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        names[n++] = strdup(de->d_name);
                closedir(d);
                for (int i = 0; i < n; i++) /* sorted: insertion */
                    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
                        char *t = names[j];
                        names[j] = names[j - 1];
                        names[j - 1] = t;
                    }
                for (int i = 0; i < n; i++) {
                    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "," : "", names[i]);
                    free(names[i]);
                }
                if (strcmp(got, want)) {
                    fprintf(stderr, "child expect: ls: got %s, want %s\n", got, want);
                    return 1;
                }
                continue;
            }
            struct stat st;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", m, e);
            int rc = stat(path, &st);
            if (!strcmp(want, "-")) {
                CHK(rc < 0 && errno == ENOENT);
            } else if (!strcmp(want, "~")) {
                CHK(rc < 0 && errno == ENOTDIR);
            } else if (!strcmp(want, "!")) {
                CHK(rc < 0 && errno == EIO);
            } else if (!strcmp(want, "/")) {
                CHK(rc == 0 && S_ISDIR(st.st_mode));
            } else {
                CHK(rc == 0 && S_ISREG(st.st_mode) && st.st_size == (off_t)strlen(want));
                char buf[256] = "";
                int fd = open(path, O_RDONLY);
                CHK(fd >= 0);
                ssize_t got = read(fd, buf, sizeof buf - 1);
                CHK(close(fd) == 0);
                CHK(got == (ssize_t)strlen(want));
                buf[got] = '\0';
                if (strcmp(buf, want)) {
                    fprintf(stderr, "child expect: %s holds '%s', want '%s'\n", e, buf, want);
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* Writes /new (what a verify may do to the state it checks). */
static int child_write_new(const char *m, const char *arg)
{
    (void)arg;
    return put_file(at(m, "/new"), "written", false);
}

/* Opens /x, stops itself (the test swaps the disk meanwhile), then finds
 * the open file stale: reads, writes and fsync fail with EIO, close works. */
static int child_hold_open(const char *m, const char *arg)
{
    (void)arg;
    char c;
    int fd = open(at(m, "/x"), O_RDWR);
    CHK(fd >= 0);
    CHK(pread(fd, &c, 1, 0) == 1);
    CHK(raise(SIGSTOP) == 0);
    CHK(pread(fd, &c, 1, 0) < 0 && errno == EIO);
    CHK(pwrite(fd, "z", 1, 0) < 0 && errno == EIO);
    CHK(fsync(fd) < 0 && errno == EIO);
    CHK(close(fd) == 0);
    return 0;
}

/* A disk holding spec's names ("PATH=TEXT" files, "PATH=/" folders,
 * parents first), synced. */
static struct ckh_simfs *disk_with(const char *spec)
{
    struct ckh_simfs_config dc = {.name = "s", .model = CKH_CRASH_POSIX_WEAK, .sector_bytes = 512, .seed = 7};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&dc, &d), 0);
    struct ckh_fs *f = ckh_simfs_fs(d);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *e = strtok_r(buf, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(e, '=');
        ck_assert_ptr_nonnull(eq);
        *eq = '\0';
        char path[PATH_MAX];
        snprintf(path, sizeof path, "/%s", e);
        if (!strcmp(eq + 1, "/")) {
            ck_assert_int_eq(ckh_fs_mkdir(f, path), 0);
            continue;
        }
        struct ckh_file *fl = NULL;
        ck_assert_int_eq(ckh_fs_open(f, path, CKH_O_WRONLY | CKH_O_CREAT, &fl), 0);
        ck_assert_int_eq(ckh_file_write_all(fl, eq + 1, strlen(eq + 1)), 0);
        ck_assert_int_eq(ckh_file_fsync(fl), 0);
        ckh_file_close(fl);
    }
    return d;
}

/* Swaps d onto the mount and runs child_expect with want as node 0. */
static void swap_expect(struct ckh_simfs *d, const char *want)
{
    ck_assert_int_eq(ckh_ckhfs_swap_disk(T.fs, d, &T.ctx), 0);
    T.ctx.n = 0; /* earlier children are reaped */
    run_ok(0, child_expect, want);
}

/* ckh_ckhfs_swap_disk: one mount shows each disk swapped onto it exactly,
 * whatever the one before held (same name and size with other bytes, a
 * name gone, a file that became a folder and back, an empty disk), with
 * and without cache_names; what a child writes goes to the disk served
 * then, and only there; the trace starts again at seq 1; with no disk
 * every request fails with EIO. */
START_TEST(test_swap_disk_seen_exactly)
{
    NEED_FUSE();
    static const char *const spec[4] = {
        "x=one;d=/;d/f=A",
        "x=two;d=/;d/f=BB;y=why",
        "x=/;x/z=three;d=dfile",
        "",
    };
    static const char *const want[4] = {
        "ls=d,x;x=one;d=/;d/f=A;y=-;new=-",
        "ls=d,x,y;x=two;d/f=BB;y=why;x/z=~;new=-",
        "ls=d,x;x=/;x/z=three;d=dfile;d/f=~;y=-",
        "ls=;x=-;d=-;y=-",
    };
    for (int cached = 0; cached <= 1; cached++) {
        T.cache_names = cached;
        up(CKH_CRASH_POSIX_WEAK, true);
        struct ckh_simfs *d[4];
        for (int i = 0; i < 4; i++)
            d[i] = disk_with(spec[i]);
        static const int order[] = {0, 1, 2, 3, 1, 0, 2, 0, 3, 2, 1, 1, 0};
        for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
            swap_expect(d[order[k]], want[order[k]]);
            size_t n = 0;
            const struct ckh_ckhfs_op *t = ckh_ckhfs_trace(T.fs, &n);
            ck_assert_uint_gt(n, 0);
            ck_assert_uint_eq(t[0].seq, 1); /* numbered afresh for each disk */
            for (size_t i = 0; i < n; i++)
                ck_assert_int_ne(t[i].result, -EIO);
        }
        /* a write lands on the disk served at the time, and only there */
        ck_assert_int_eq(ckh_ckhfs_swap_disk(T.fs, d[0], &T.ctx), 0);
        T.ctx.n = 0;
        run_ok(0, child_write_new, NULL);
        struct ckh_stat cs;
        ck_assert_int_eq(ckh_fs_stat(ckh_simfs_fs(d[0]), "/new", &cs), 0);
        swap_expect(d[1], want[1]);
        swap_expect(d[0], "ls=d,new,x;new=written;x=one");
        ck_assert_int_ne(ckh_fs_stat(ckh_simfs_fs(d[1]), "/new", &cs), 0);
        /* no disk: EIO, nothing traced */
        ck_assert_int_eq(ckh_ckhfs_swap_disk(T.fs, NULL, NULL), 0);
        T.ctx.n = 0;
        run_ok(0, child_expect, "x=!;d=!");
        size_t n = 1;
        ckh_ckhfs_trace(T.fs, &n);
        ck_assert_uint_eq(n, 0);
        swap_expect(T.disk, want[3]);
        down();
        for (int i = 0; i < 4; i++)
            ckh_simfs_destroy(d[i]);
    }
    T.cache_names = false;
    ck_assert_int_eq(ckh_ckhfs_swap_disk(NULL, NULL, NULL), CKH_EINVAL);
    ck_assert_ptr_null(ckh_ckhfs_mountpoint(NULL));
}
END_TEST

/* A file a process holds open across a swap is stale: its reads, writes
 * and fsync fail with EIO and reach neither disk; its close and release
 * work. */
START_TEST(test_swap_disk_stale_handle)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    ck_assert_str_eq(ckh_ckhfs_mountpoint(T.fs), T.mnt);
    struct ckh_simfs *a = disk_with("x=one"), *b = disk_with("x=two");
    ck_assert_int_eq(ckh_ckhfs_swap_disk(T.fs, a, &T.ctx), 0);
    T.ctx.n = 0;
    pid_t pid = spawn_as(0, child_hold_open, NULL);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, WUNTRACED), pid);
    ck_assert(WIFSTOPPED(st));
    ck_assert_int_eq(ckh_ckhfs_swap_disk(T.fs, b, &T.ctx), 0);
    ck_assert_int_eq(kill(pid, SIGCONT), 0);
    st = wait_status(pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
    swap_expect(b, "x=two");
    swap_expect(a, "x=one");
    swap_expect(T.disk, "ls=");
    down();
    ckh_simfs_destroy(a);
    ckh_simfs_destroy(b);
}
END_TEST

/* A swap while a request is held by a DELAY is refused (CKH_EINVAL) and
 * changes nothing: the held request ends on the disk it arrived at. */
START_TEST(test_swap_disk_refused_while_held)
{
    NEED_FUSE();
    up(CKH_CRASH_POSIX_WEAK, true);
    struct ckh_simfs *a = disk_with("x=one");
    arm(CKH_OP_MKDIR, "/step", 1, (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_DELAY, .delay_ms = 60000});
    pid_t slow = spawn_as(0, child_mkdir, "/step");
    wait_arrived(CKH_OP_MKDIR, "/step");
    ck_assert_int_eq(ckh_ckhfs_swap_disk(T.fs, a, &T.ctx), CKH_EINVAL);
    ck_assert_int_eq(kill(-slow, SIGKILL), 0);
    int st = wait_status(slow);
    ck_assert(WIFSIGNALED(st));
    T.ctx.armed = false;
    ck_assert_ptr_nonnull(traced(CKH_OP_MKDIR, "/step")); /* the trace was kept: no swap */
    T.ctx.n = 0;
    run_ok(0, child_expect, "ls=;x=-");
    down();
    ckh_simfs_destroy(a);
}
END_TEST

/* ------------------------------------------------------------ children */

static const struct {
    const char *name; /* on the command line */
    child_fn fn;      /* the function */
} children[] = {
    {"basic", child_basic},          {"crashy", child_crashy},
    {"after_crash", child_after_crash}, {"sync_append", child_sync_append},
    {"write_unsynced", child_write_unsynced}, {"read_n1", child_read_n1},
    {"threaded", child_threaded},    {"stat_root", child_stat_root},    {"errno", child_errno},
    {"fsync_eio", child_fsync_eio},  {"open_refused", child_open_refused},
    {"short", child_short},          {"delay", child_delay},
    {"mkdir", child_mkdir},          {"shard", child_shard},   {"folders", child_folders},
    {"rename_dir", child_rename_dir}, {"held_write", child_held_write},
    {"names", child_names},
    {"five_writes", child_five_writes}, {"traced", child_traced},
    {"refused", child_refused},      {"busy", child_busy},
    {"big", child_big},              {"sparse", child_sparse},
    {"errors", child_errors},        {"one_op", child_one_op},
    {"mkdir_eio", child_mkdir_eio},  {"as_user", child_as_user},
    {"expect", child_expect},        {"write_new", child_write_new},
    {"hold_open", child_hold_open},
};

static const char *child_name(child_fn fn)
{
    for (size_t i = 0; i < sizeof children / sizeof children[0]; i++)
        if (children[i].fn == fn)
            return children[i].name;
    return NULL;
}

/* "--child NAME MNT ARG": runs one child function ("-": no argument). */
static int child_main(char **argv)
{
    for (size_t i = 0; i < sizeof children / sizeof children[0]; i++)
        if (strcmp(children[i].name, argv[2]) == 0)
            return children[i].fn(argv[3], strcmp(argv[4], "-") == 0 ? NULL : argv[4]);
    fprintf(stderr, "test_ckhfs: no child named %s\n", argv[2]);
    return 2;
}

static Suite *ckhfs_suite(void)
{
    Suite *s = suite_create("ckhfs");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_basic_ops_reach_simfs);
    tcase_add_test(tc, test_crash_posix_weak);
    tcase_add_test(tc, test_crash_ext4_ordered);
    tcase_add_test(tc, test_sync_and_append);
    tcase_add_test(tc, test_nodes_by_pid);
    tcase_add_test(tc, test_refused_and_unseen_ops);
    tcase_add_test(tc, test_cache_names);
    tcase_add_test(tc, test_errors_reach_the_program);
    suite_add_tcase(s, tc);
    TCase *th = tcase_create("hook");
    tcase_set_timeout(th, 120);
    tcase_add_test(th, test_hook_errno);
    tcase_add_test(th, test_hook_short_and_delay);
    tcase_add_test(th, test_delay_holds_only_its_op);
    tcase_add_test(th, test_hold_until_released);
    tcase_add_test(th, test_delay_rename_waits_alone);
    tcase_add_test(th, test_hook_kill_before);
    tcase_add_test(th, test_hook_kill_after);
    tcase_add_test(th, test_trace);
    tcase_add_test(th, test_hook_every_op);
    suite_add_tcase(s, th);
    TCase *tl = tcase_create("lifetime");
    tcase_set_timeout(tl, 120);
    tcase_add_test(tl, test_unmount_busy);
    tcase_add_test(tl, test_sweep_stale_mounts);
    tcase_add_test(tl, test_sweep_stale_direct);
    tcase_add_test(tl, test_mount_errors);
    tcase_add_test(tl, test_fuse_not_permitted);
    tcase_add_test(tl, test_fuse_as_user);
    tcase_add_test(tl, test_sweep_escaped_paths);
    tcase_add_test(tl, test_big_file_memory);
    tcase_add_test(tl, test_store_real_size);
    suite_add_tcase(s, tl);
    TCase *tu = tcase_create("units"); /* no mount */
    tcase_add_test(tu, test_errno_of_ckh_codes);
    tcase_add_test(tu, test_abspath);
    suite_add_tcase(s, tu);
    TCase *ts = tcase_create("swap");
    tcase_set_timeout(ts, 120);
    tcase_add_test(ts, test_swap_disk_seen_exactly);
    tcase_add_test(ts, test_swap_disk_stale_handle);
    tcase_add_test(ts, test_swap_disk_refused_while_held);
    suite_add_tcase(s, ts);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--child") == 0)
        return child_main(argv);
    if (!realpath("/proc/self/exe", self_exe) && !realpath(argv[0], self_exe)) {
        perror("test_ckhfs: own path");
        return 1;
    }
    return ckh_test_run(ckhfs_suite());
}
