/* struct ckh_env for one node run as a real process (real_env.h has the
 * contract). Map: the fault-checked fs shim · clock · rand · node (with
 * pthread tasks) · create/destroy. */
#include "real_env.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "ckh/rng.h"

#define TASKS_MAX 8 /* per node, as in the simulator (sim/task.c) */

/* A task's life (its state): RUNNING until fn returns (DONE) or the node
 * is destroyed first (ORPHANED). A task is its own allocation, not part
 * of the node's: whoever comes second of its thread (fn returned) and the
 * node's destroy frees it, so a task still running when the node goes
 * never writes to freed memory. */
enum { TASK_RUNNING, TASK_DONE, TASK_ORPHANED };

struct ckh_task {
    pthread_t thread;     /* the task's thread */
    struct ckh_env *env;  /* its node's environment, handed to fn */
    ckh_bg_fn fn;         /* program */
    void *arg;            /* its argument */
    int status;           /* fn's return value */
    atomic_int state;     /* TASK_* */
};

struct shim_fs {
    struct ckh_fs base;   /* must be first */
    struct ckh_fs *inner; /* the node's fs: the POSIX fs (owned) or cfg.fs (borrowed) */
    struct real_env *re;  /* the node */
};

struct shim_file {
    struct ckh_file base;   /* must be first */
    struct ckh_file *inner; /* the POSIX file */
    char path[CKH_PATH_MAX + 1]; /* the path it was opened by */
};

struct real_env {
    struct ckh_env env;           /* handed to code under test; must be first */
    struct ckh_clock clock;       /* CLOCK_MONOTONIC */
    struct ckh_rand rand;         /* the simulator's streams */
    struct ckh_node node;         /* lifecycle */
    struct shim_fs fs;            /* the node's filesystem */
    struct ckh_real_env_config cfg; /* as given (strings below are the copies) */
    char *name;                   /* node name (owned) */
    uint64_t rand_base;           /* ckh_node_rand_base(seed, name) */
    pthread_mutex_t lock;         /* phase and tasks */
    const char *phase;            /* last phase announced (static string; NULL: none) */
    int64_t epoch, step;          /* with it */
    int track_fd;                 /* phase lines (-1: none) */
    struct ckh_task *tasks[TASKS_MAX]; /* background tasks not yet joined (owned; NULL: free slot) */
};

#define RE_OF(field, p) ((struct real_env *)(void *)((char *)(p)-offsetof(struct real_env, field)))

/* ---- the fault gate ---- */

static void gate(struct real_env *re, struct ckh_op *op, struct ckh_fault_action *act)
{
    op->node = re->cfg.node_index;
    pthread_mutex_lock(&re->lock);
    op->phase = re->phase;
    op->epoch = re->epoch;
    op->step = re->step;
    pthread_mutex_unlock(&re->lock);
    ckh_real_faults_enter(re->cfg.faults, op, act);
    if (act->kind == CKH_FAULT_CALL) {
        /* An at-rest fault at this op: the launcher applies it to the
         * simulated disk when the mount sees this stat (real_faults.h). */
        struct ckh_stat st;
        (void)ckh_fs_stat(re->fs.inner, "/", &st);
        memset(act, 0, sizeof *act);
    }
}

void ckh_real_env_gate(void *ctx, struct ckh_op *op, struct ckh_fault_action *act)
{
    gate((struct real_env *)ctx, op, act);
}

/* ---- the filesystem shim ---- */

#define SFS(fs) ((struct shim_fs *)(void *)(fs))
#define SF(f) ((struct shim_file *)(void *)(f))

/* Enters op on fs; returns from the caller with -err on an ERRNO fault. */
#define ENTER(sfs, act, ...)                                                   \
    struct ckh_op op_ = {__VA_ARGS__};                                         \
    struct ckh_fault_action act;                                               \
    gate((sfs)->re, &op_, &act);                                               \
    if (act.kind == CKH_FAULT_ERRNO)                                           \
        return -act.err

/* A kill after the op, once it is done. */
#define LEAVE(act)                                                             \
    do {                                                                       \
        if ((act).kind == CKH_FAULT_KILL_AFTER)                                \
            ckh_real_faults_kill();                                            \
    } while (0)

static int s_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    ENTER(SFS(fs), act, .kind = CKH_OP_OPEN, .path = path, .arg = flags);
    struct shim_file *f = calloc(1, sizeof *f);
    if (!f)
        return CKH_ENOMEM;
    int rc = ckh_fs_open(SFS(fs)->inner, path, flags, &f->inner);
    if (rc) {
        free(f);
        LEAVE(act);
        return rc;
    }
    snprintf(f->path, sizeof f->path, "%s", path);
    f->base.fs = fs;
    *out = &f->base;
    LEAVE(act);
    return 0;
}

static int64_t s_read(struct ckh_file *fp, void *buf, size_t n)
{
    ENTER(SFS(fp->fs), act, .kind = CKH_OP_READ, .path = SF(fp)->path, .len = n);
    int64_t rc = ckh_file_read(SF(fp)->inner, buf, n);
    LEAVE(act);
    return rc;
}

static int64_t s_pread(struct ckh_file *fp, void *buf, size_t n, uint64_t off)
{
    ENTER(SFS(fp->fs), act, .kind = CKH_OP_PREAD, .path = SF(fp)->path, .off = off, .len = n);
    int64_t rc = ckh_file_pread(SF(fp)->inner, buf, n, off);
    LEAVE(act);
    return rc;
}

/* A write that a fault may cut short (SHORT_WRITE: the program sees the
 * short count) or end with a kill once part of it landed (KILL_MID). */
static int64_t cut_write(struct ckh_file *fp, const void *buf, size_t n, uint64_t off, bool positional,
                         const struct ckh_fault_action *act)
{
    size_t len = n;
    if (act->kind == CKH_FAULT_SHORT_WRITE || act->kind == CKH_FAULT_KILL_MID)
        len = act->keep_bytes < n ? (size_t)act->keep_bytes : n;
    int64_t rc = len == 0 ? 0
                 : positional ? ckh_file_pwrite(SF(fp)->inner, buf, len, off)
                              : ckh_file_write(SF(fp)->inner, buf, len);
    CKH_ASSERT(len <= n && rc <= (int64_t)len); /* a cut write reports what landed, never more */
    if (act->kind == CKH_FAULT_KILL_MID || act->kind == CKH_FAULT_KILL_AFTER)
        ckh_real_faults_kill();
    return rc;
}

static int64_t s_write(struct ckh_file *fp, const void *buf, size_t n)
{
    ENTER(SFS(fp->fs), act, .kind = CKH_OP_WRITE, .path = SF(fp)->path, .len = n);
    return cut_write(fp, buf, n, 0, false, &act);
}

static int64_t s_pwrite(struct ckh_file *fp, const void *buf, size_t n, uint64_t off)
{
    ENTER(SFS(fp->fs), act, .kind = CKH_OP_PWRITE, .path = SF(fp)->path, .off = off, .len = n);
    return cut_write(fp, buf, n, off, true, &act);
}

/* A described write is one PWRITE op, as in simfs; its bytes are
 * materialised chunk by chunk below the gate. */
static int64_t s_pwrite_gen(struct ckh_file *fp, const struct ckh_gen *g, uint64_t n, uint64_t off)
{
    ENTER(SFS(fp->fs), act, .kind = CKH_OP_PWRITE, .path = SF(fp)->path, .off = off, .len = n);
    uint64_t len = n;
    if (act.kind == CKH_FAULT_SHORT_WRITE || act.kind == CKH_FAULT_KILL_MID)
        len = act.keep_bytes < n ? act.keep_bytes : n;
    int64_t rc = len ? ckh_file_pwrite_gen(SF(fp)->inner, g, len, off) : 0;
    CKH_ASSERT(len <= n && rc <= (int64_t)len);
    if (act.kind == CKH_FAULT_KILL_MID || act.kind == CKH_FAULT_KILL_AFTER)
        ckh_real_faults_kill();
    return rc;
}

#define FILE_OP(fn, KIND, call)                                                \
    static int fn(struct ckh_file *fp)                                         \
    {                                                                          \
        ENTER(SFS(fp->fs), act, .kind = KIND, .path = SF(fp)->path);           \
        int rc = call(SF(fp)->inner);                                          \
        LEAVE(act);                                                            \
        return rc;                                                             \
    }
FILE_OP(s_fsync, CKH_OP_FSYNC, ckh_file_fsync)
FILE_OP(s_fdatasync, CKH_OP_FDATASYNC, ckh_file_fdatasync)

static int s_ftruncate(struct ckh_file *fp, uint64_t len)
{
    ENTER(SFS(fp->fs), act, .kind = CKH_OP_FTRUNCATE, .path = SF(fp)->path, .len = len);
    int rc = ckh_file_ftruncate(SF(fp)->inner, len);
    LEAVE(act);
    return rc;
}

static int s_close(struct ckh_file *fp)
{
    struct shim_file *f = SF(fp);
    struct ckh_op op = {.kind = CKH_OP_CLOSE, .path = f->path};
    struct ckh_fault_action act;
    gate(SFS(fp->fs)->re, &op, &act);
    /* The descriptor goes away even when the close reports an error. */
    int rc = ckh_file_close(f->inner);
    free(f);
    LEAVE(act);
    return act.kind == CKH_FAULT_ERRNO ? -act.err : rc;
}

#define PATH_OP(fn, KIND, call)                                                \
    static int fn(struct ckh_fs *fs, const char *path)                         \
    {                                                                          \
        ENTER(SFS(fs), act, .kind = KIND, .path = path);                       \
        int rc = call(SFS(fs)->inner, path);                                   \
        LEAVE(act);                                                            \
        return rc;                                                             \
    }
PATH_OP(s_unlink, CKH_OP_UNLINK, ckh_fs_unlink)
PATH_OP(s_mkdir, CKH_OP_MKDIR, ckh_fs_mkdir)
PATH_OP(s_rmdir, CKH_OP_RMDIR, ckh_fs_rmdir)
PATH_OP(s_fsync_dir, CKH_OP_FSYNC_DIR, ckh_fs_fsync_dir)

static int s_rename(struct ckh_fs *fs, const char *from, const char *to)
{
    ENTER(SFS(fs), act, .kind = CKH_OP_RENAME, .path = from, .path2 = to);
    int rc = ckh_fs_rename(SFS(fs)->inner, from, to);
    LEAVE(act);
    return rc;
}

static int s_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out)
{
    ENTER(SFS(fs), act, .kind = CKH_OP_LISTDIR, .path = path);
    int rc = ckh_fs_listdir(SFS(fs)->inner, path, out);
    LEAVE(act);
    return rc;
}

static int s_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    ENTER(SFS(fs), act, .kind = CKH_OP_STAT, .path = path);
    int rc = ckh_fs_stat(SFS(fs)->inner, path, out);
    LEAVE(act);
    return rc;
}

static int s_symlink(struct ckh_fs *fs, const char *target, const char *linkpath)
{
    ENTER(SFS(fs), act, .kind = CKH_OP_SYMLINK, .path = linkpath, .path2 = target);
    int rc = ckh_fs_symlink(SFS(fs)->inner, target, linkpath);
    LEAVE(act);
    return rc;
}

static int64_t s_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize)
{
    ENTER(SFS(fs), act, .kind = CKH_OP_READLINK, .path = path);
    int64_t rc = ckh_fs_readlink(SFS(fs)->inner, path, buf, bufsize);
    LEAVE(act);
    return rc;
}

static const struct ckh_fs_ops shim_fs_ops = {
    .version = 1,
    .open = s_open,
    .read = s_read,
    .pread = s_pread,
    .write = s_write,
    .pwrite = s_pwrite,
    .pwrite_gen = s_pwrite_gen,
    .fsync = s_fsync,
    .fdatasync = s_fdatasync,
    .ftruncate = s_ftruncate,
    .close = s_close,
    .rename = s_rename,
    .unlink = s_unlink,
    .mkdir = s_mkdir,
    .rmdir = s_rmdir,
    .listdir = s_listdir,
    .stat = s_stat,
    .symlink = s_symlink,
    .readlink = s_readlink,
    .fsync_dir = s_fsync_dir,
};

/* ---- clock ---- */

static uint64_t c_now(struct ckh_clock *c)
{
    (void)c;
    return ckh_posix_now_ns();
}

static int c_sleep(struct ckh_clock *c, uint64_t ns)
{
    struct real_env *re = RE_OF(clock, c);
    struct ckh_op op = {.kind = CKH_OP_SLEEP, .arg = (int64_t)ns};
    struct ckh_fault_action act;
    gate(re, &op, &act);
    if (act.kind == CKH_FAULT_ERRNO)
        return -act.err;
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    LEAVE(act);
    return 0;
}

static const struct ckh_clock_ops clock_ops = {.version = 1, .now_ns = c_now, .sleep_ns = c_sleep};

/* ---- rand ---- */

static uint64_t r_stream(struct ckh_rand *r, const char *name)
{
    return ckh_seed_derive(RE_OF(rand, r)->rand_base, name != NULL ? name : "");
}

static const struct ckh_rand_ops rand_ops = {.version = 1, .stream_seed = r_stream};

/* ---- node ---- */

static void n_exit(struct ckh_node *n, int status)
{
    struct real_env *re = RE_OF(node, n);
    if (re->cfg.on_exit)
        re->cfg.on_exit(re->cfg.on_exit_ctx, status);
    exit(status == 0 ? 0 : 1);
}

static const char *n_name(struct ckh_node *n)
{
    return RE_OF(node, n)->name;
}

static void n_log(struct ckh_node *n, const char *msg)
{
    fprintf(stderr, "[%s] %s\n", RE_OF(node, n)->name, msg ? msg : "");
}

static void n_phase(struct ckh_node *n, const char *phase, int64_t epoch, int64_t step)
{
    struct real_env *re = RE_OF(node, n);
    pthread_mutex_lock(&re->lock);
    re->phase = phase;
    re->epoch = epoch;
    re->step = step;
    if (re->track_fd >= 0 && phase) {
        char line[96];
        int len = snprintf(line, sizeof line, "%.31s %lld %lld\n", phase, (long long)epoch, (long long)step);
        if (write(re->track_fd, line, (size_t)len) != len)
            fprintf(stderr, "[%s] cannot write the track file: %s\n", re->name, strerror(errno));
    }
    pthread_mutex_unlock(&re->lock);
    struct ckh_op op = {.kind = CKH_OP_PHASE, .path = phase, .off = (uint64_t)epoch, .len = (uint64_t)step};
    struct ckh_fault_action act;
    gate(re, &op, &act);
    LEAVE(act);
}

static void *task_main(void *p)
{
    struct ckh_task *t = p;
    t->status = t->fn(t->env, t->arg);
    if (atomic_exchange(&t->state, TASK_DONE) == TASK_ORPHANED)
        free(t); /* the node is gone: nobody joins this task */
    return NULL;
}

static int n_spawn(struct ckh_node *n, ckh_bg_fn fn, void *arg, struct ckh_task **out)
{
    struct real_env *re = RE_OF(node, n);
    if (!out)
        return CKH_EINVAL;
    struct ckh_task *t = calloc(1, sizeof *t);
    if (!t)
        return CKH_ENOMEM;
    *t = (struct ckh_task){.env = &re->env, .fn = fn, .arg = arg};
    atomic_init(&t->state, TASK_RUNNING);
    pthread_mutex_lock(&re->lock);
    size_t slot = TASKS_MAX;
    for (size_t i = 0; i < TASKS_MAX && slot == TASKS_MAX; i++)
        if (!re->tasks[i])
            slot = i;
    if (slot < TASKS_MAX)
        re->tasks[slot] = t;
    pthread_mutex_unlock(&re->lock);
    if (slot == TASKS_MAX) {
        free(t);
        return CKH_ELIMIT;
    }
    if (pthread_create(&t->thread, NULL, task_main, t) != 0) {
        pthread_mutex_lock(&re->lock);
        re->tasks[slot] = NULL;
        pthread_mutex_unlock(&re->lock);
        free(t);
        return CKH_ENOMEM;
    }
    *out = t;
    return 0;
}

static int n_join(struct ckh_node *n, struct ckh_task *t, int *status)
{
    struct real_env *re = RE_OF(node, n);
    size_t slot = TASKS_MAX;
    pthread_mutex_lock(&re->lock);
    for (size_t i = 0; t && i < TASKS_MAX && slot == TASKS_MAX; i++)
        if (re->tasks[i] == t)
            slot = i;
    pthread_mutex_unlock(&re->lock);
    if (slot == TASKS_MAX)
        return CKH_EINVAL; /* not a task of this node, or joined already */
    pthread_join(t->thread, NULL);
    if (status)
        *status = t->status;
    pthread_mutex_lock(&re->lock);
    re->tasks[slot] = NULL;
    pthread_mutex_unlock(&re->lock);
    free(t);
    return 0;
}

static const struct ckh_node_ops node_ops = {
    .version = 2,
    .exit = n_exit,
    .name = n_name,
    .log = n_log,
    .phase = n_phase,
    .spawn = n_spawn,
    .join = n_join,
};

/* ---- create / destroy ---- */

int ckh_real_env_create(const struct ckh_real_env_config *cfg, struct ckh_env **out, char *msg,
                        size_t msglen)
{
    if (!cfg || (!cfg->root_dir && !cfg->fs) || !cfg->node_name || !out)
        return CKH_EINVAL;
    struct real_env *re = calloc(1, sizeof *re);
    if (!re)
        return CKH_ENOMEM;
    int rc;
    re->cfg = *cfg;
    re->track_fd = -1;
    re->epoch = -1;
    re->step = -1;
    pthread_mutex_init(&re->lock, NULL);
    if (!(re->name = strdup(cfg->node_name))) {
        rc = CKH_ENOMEM;
        goto out_free;
    }
    re->cfg.node_name = re->name;
    re->rand_base = ckh_node_rand_base(cfg->seed, re->name);
    if (cfg->fs)
        re->fs.inner = cfg->fs;
    else if ((rc = ckh_posix_fs_create(cfg->root_dir, &re->fs.inner)) != 0) {
        ckh_errf(msg, msglen, rc, "the node's folder %s: %s", cfg->root_dir, ckh_strerror(rc));
        goto out_free;
    }
    re->fs.base.ops = &shim_fs_ops;
    re->fs.re = re;
    if (cfg->track_path &&
        (re->track_fd = open(cfg->track_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0) {
        rc = ckh_errf(msg, msglen, -errno, "cannot open %s: %s", cfg->track_path, strerror(errno));
        goto out_free;
    }
    if (cfg->record_path && (rc = ckh_record_jsonl_open(cfg->record_path, &re->env.record, msg, msglen)) != 0)
        goto out_free;
    re->clock.ops = &clock_ops;
    re->rand.ops = &rand_ops;
    re->node.ops = &node_ops;
    re->env.fs = &re->fs.base;
    re->env.clock = &re->clock;
    re->env.rand = &re->rand;
    re->env.coll = cfg->coll;
    re->env.gpu = cfg->gpu;
    re->env.node = &re->node;
    re->env.alloc = ckh_alloc_system();
    *out = &re->env;
    return 0;
out_free:
    ckh_real_env_destroy(&re->env);
    return rc;
}

void ckh_real_env_destroy(struct ckh_env *env)
{
    if (!env)
        return;
    struct real_env *re = (struct real_env *)(void *)env;
    for (size_t i = 0; i < TASKS_MAX; i++) {
        struct ckh_task *t = re->tasks[i];
        if (!t)
            continue;
        if (atomic_exchange(&t->state, TASK_ORPHANED) == TASK_DONE) {
            pthread_join(t->thread, NULL); /* it has returned: reclaim it */
            free(t);
        } else {
            pthread_detach(t->thread); /* still running: the process ends it, as exit
                                          does; its thread frees it if it returns */
        }
    }
    if (re->env.record)
        ckh_record_jsonl_close(re->env.record);
    if (re->track_fd >= 0)
        close(re->track_fd);
    if (!re->cfg.fs)
        ckh_posix_fs_destroy(re->fs.inner);
    pthread_mutex_destroy(&re->lock);
    free(re->name);
    free(re);
}
