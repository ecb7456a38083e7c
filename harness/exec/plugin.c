/* Loading plugins (backends, workloads, savers) from shared libraries.
 *
 * Spec:
 * P1. A plugin of kind K exports K's entry point (CKH_BACKEND_PLUGIN_SYMBOL,
 *     CKH_WORKLOAD_PLUGIN_SYMBOL, CKH_SAVER_PLUGIN_SYMBOL) returning a
 *     static table. It is opened with RTLD_NOW | RTLD_LOCAL so unresolved
 *     symbols fail the load at once instead of at the first call.
 * P2. The table is checked before anything else of it is used: the ABI
 *     version is in [1, CKH_<K>_ABI_VERSION], the name is set, and every
 *     method the harness calls unconditionally is present (backend: open,
 *     close, save, load, list_epochs; workload: create, destroy,
 *     node_count, node, node_main; saver: create, destroy, prepare,
 *     commit, latest). Every message names the path, the kind and the
 *     problem: "./libloop.so: workload plugin: table version 7 is not
 *     supported (1..1)".
 * P3. The probe (ckh_plugin_probe) runs P1-P2 in a forked child with a
 *     time limit, so a constructor or an entry point that crashes or
 *     hangs ends the child, not the caller: CKH_ECRASH names the signal,
 *     CKH_ETIMEOUT the limit; the child is reaped on every path. Nothing
 *     of the plugin runs in the calling process.
 * P4. A plugin links against nothing of ckh: the host executable exports
 *     the public API (linked with -rdynamic). host_api below references
 *     one function of every object file holding that API, so that a
 *     static link pulls them all in even when the host itself does not
 *     call them.
 */
#include <dlfcn.h>
#include <limits.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/alloc.h"
#include "ckh/atomic.h"
#include "ckh/env.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/posix.h"
#include "ckh/record.h"
#include "ckh/rng.h"
#include "ckh/saver.h"
#include "ckh/workload.h"
#include "ckh/workspace.h"
#include "exec/plugin.h"
#include "exec/worker.h"
#include "model/scenario.h"

struct ckh_plugin {
    void *dl;                  /* dlopen handle */
    enum ckh_plugin_kind kind; /* what the table is */
    const void *table;         /* the plugin's table (its kind's ops) */
    char *path;                /* where it was loaded from (owned) */
};

/* The public API a plugin may call (P4): functions of every object file
 * behind fs.h, alloc.h, rng.h, err.h, workspace.h, env.h (dtype names,
 * clock, rand, collectives, node lifecycle and background tasks),
 * backend.h, atomic.h (atomic file save, the atomic directory saver),
 * saver.h (the saver wrappers and the built-in saver's table), record.h
 * (the record calls and the JSON-lines writer) and workload.h (option
 * errors). tests/plugins/pl_kinds.c (PL_USES_API) refers to them all. */
const void *const ckh__plugin_host_api[] = {
    (const void *)ckh_fs_open,          (const void *)ckh_file_pwrite,
    (const void *)ckh_malloc,           (const void *)ckh_crc32c,
    (const void *)ckh_seed_derive,      (const void *)ckh_strerror,
    (const void *)ckh_errf,             (const void *)ckh_ws_adopt,
    (const void *)ckh_db_name,          (const void *)ckh_backend_errmsg,
    (const void *)&ckh_minidb_ops,      (const void *)ckh_dtype_size,
    (const void *)ckh_gen_fill,         (const void *)ckh_clock_now_ns,
    (const void *)ckh_rand_stream_seed, (const void *)ckh_coll_barrier,
    (const void *)ckh_node_phase,       (const void *)ckh_node_spawn,
    (const void *)ckh_node_join,        (const void *)ckh_atomic_init,
    (const void *)ckh_adir_create,      (const void *)ckh_saver_create,
    (const void *)ckh_saver_commit,     (const void *)&ckh_atomic_dir_saver_ops,
    (const void *)ckh_record_step,      (const void *)ckh_record_save,
    (const void *)ckh_record_jsonl_open, (const void *)ckh_wl_option_error,
};
extern const void *const ckh__plugin_host_api[];

const char *ckh_plugin_kind_name(enum ckh_plugin_kind kind)
{
    switch (kind) {
    case CKH_PLUGIN_BACKEND: return "backend";
    case CKH_PLUGIN_WORKLOAD: return "workload";
    case CKH_PLUGIN_SAVER: return "saver";
    }
    return "?";
}

/* Formats "<kind> plugin: <what>" into msg (may be NULL); returns rc. */
static int say(char *msg, size_t msglen, int rc, enum ckh_plugin_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int say(char *msg, size_t msglen, int rc, enum ckh_plugin_kind kind, const char *fmt, ...)
{
    if (!msg || !msglen)
        return rc;
    int w = snprintf(msg, msglen, "%s plugin: ", ckh_plugin_kind_name(kind));
    if (w >= 0 && (size_t)w < msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + w, msglen - (size_t)w, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* P2, common part: version in [1, abi] and a name. */
static int check_head(enum ckh_plugin_kind kind, const void *table, int version, int abi,
                      const char *name, char *msg, size_t msglen)
{
    if (!table)
        return say(msg, msglen, CKH_EINVAL, kind, "the entry point returned no table");
    if (version < 1 || version > abi)
        return say(msg, msglen, CKH_EVERSION, kind, "table version %d is not supported (1..%d)",
                   version, abi);
    if (!name || !name[0])
        return say(msg, msglen, CKH_EUNSUPPORTED, kind, "the table has no name");
    return 0;
}

/* P2: the first missing method of names[i] / present[i], reported. */
static int check_methods(enum ckh_plugin_kind kind, const char *name, const char *const *names,
                         const bool *present, size_t n, char *msg, size_t msglen)
{
    for (size_t i = 0; i < n; i++)
        if (!present[i])
            return say(msg, msglen, CKH_EUNSUPPORTED, kind, "%s has no %s method", name,
                       names[i]);
    return 0;
}

int ckh_plugin_check_ops(const struct ckh_backend_ops *ops, char *msg, size_t msglen)
{
    const enum ckh_plugin_kind k = CKH_PLUGIN_BACKEND;
    int rc = check_head(k, ops, ops ? ops->version : 0, CKH_BACKEND_ABI_VERSION,
                        ops ? ops->name : NULL, msg, msglen);
    if (rc)
        return rc;
    static const char *const names[] = {"open", "close", "save", "load", "list_epochs"};
    const bool present[] = {ops->open, ops->close, ops->save, ops->load, ops->list_epochs};
    return check_methods(k, ops->name, names, present, 5, msg, msglen);
}

int ckh_plugin_check_workload(const struct ckh_workload_ops *ops, char *msg, size_t msglen)
{
    const enum ckh_plugin_kind k = CKH_PLUGIN_WORKLOAD;
    int rc = check_head(k, ops, ops ? ops->version : 0, CKH_WORKLOAD_ABI_VERSION,
                        ops ? ops->name : NULL, msg, msglen);
    if (rc)
        return rc;
    static const char *const names[] = {"create", "destroy", "node_count", "node", "node_main"};
    const bool present[] = {ops->create, ops->destroy, ops->node_count, ops->node,
                            ops->node_main};
    return check_methods(k, ops->name, names, present, 5, msg, msglen);
}

int ckh_plugin_check_saver(const struct ckh_saver_ops *ops, char *msg, size_t msglen)
{
    const enum ckh_plugin_kind k = CKH_PLUGIN_SAVER;
    int rc = check_head(k, ops, ops ? ops->version : 0, CKH_SAVER_ABI_VERSION,
                        ops ? ops->name : NULL, msg, msglen);
    if (rc)
        return rc;
    static const char *const names[] = {"create", "destroy", "prepare", "commit", "latest"};
    const bool present[] = {ops->create, ops->destroy, ops->prepare, ops->commit, ops->latest};
    return check_methods(k, ops->name, names, present, 5, msg, msglen);
}

static const char *entry_symbol(enum ckh_plugin_kind kind)
{
    return kind == CKH_PLUGIN_WORKLOAD ? CKH_WORKLOAD_PLUGIN_SYMBOL
         : kind == CKH_PLUGIN_SAVER    ? CKH_SAVER_PLUGIN_SYMBOL
                                       : CKH_BACKEND_PLUGIN_SYMBOL;
}

/* Calls the entry point (every kind's returns a pointer to a const table)
 * and checks the table (P2). */
static int call_and_check(enum ckh_plugin_kind kind, void *sym, const void **table, char *msg,
                          size_t msglen)
{
    switch (kind) {
    case CKH_PLUGIN_WORKLOAD: {
        ckh_workload_plugin_fn fn;
        memcpy(&fn, &sym, sizeof(fn)); /* object pointer to function pointer, as POSIX allows */
        const struct ckh_workload_ops *ops = fn();
        *table = ops;
        return ckh_plugin_check_workload(ops, msg, msglen);
    }
    case CKH_PLUGIN_SAVER: {
        ckh_saver_plugin_fn fn;
        memcpy(&fn, &sym, sizeof(fn));
        const struct ckh_saver_ops *ops = fn();
        *table = ops;
        return ckh_plugin_check_saver(ops, msg, msglen);
    }
    case CKH_PLUGIN_BACKEND: {
        ckh_backend_plugin_fn fn;
        memcpy(&fn, &sym, sizeof(fn));
        const struct ckh_backend_ops *ops = fn();
        *table = ops;
        return ckh_plugin_check_ops(ops, msg, msglen);
    }
    }
    return CKH_EINVAL;
}

/* Puts "path: " in front of what msg holds. */
static int prefix_path(char *msg, size_t msglen, const char *path, int rc)
{
    if (!msg || !msglen)
        return rc;
    /* The path goes in front whole (a path may be PATH_MAX long); the
     * tail moves right and is what a short msg cuts. */
    size_t plen = strlen(path), tlen = strlen(msg);
    if (plen + 2 >= msglen) {
        snprintf(msg, msglen, "%s", path);
        return rc;
    }
    if (plen + 2 + tlen >= msglen)
        tlen = msglen - plen - 3;
    memmove(msg + plen + 2, msg, tlen);
    msg[plen + 2 + tlen] = '\0';
    memcpy(msg, path, plen);
    msg[plen] = ':';
    msg[plen + 1] = ' ';
    return rc;
}

/* dlopen of path: dlopen searches the library path for names without a
 * '/', and a plugin is a file, so such a name gets "./" in front. */
static int open_library(const char *path, enum ckh_plugin_kind kind, void **dl, char *msg,
                        size_t msglen)
{
    char *rel = NULL;
    if (!strchr(path, '/')) {
        rel = malloc(strlen(path) + 3);
        if (!rel)
            return CKH_ENOMEM;
        sprintf(rel, "./%s", path);
    }
    *dl = dlopen(rel ? rel : path, RTLD_NOW | RTLD_LOCAL);
    free(rel);
    if (*dl)
        return 0;
    const char *e = dlerror();
    say(msg, msglen, CKH_EFOREIGN, kind, "not a loadable plugin: %s", e ? e : "?");
    return prefix_path(msg, msglen, path, CKH_EFOREIGN);
}

int ckh_plugin_load_kind(const char *path, enum ckh_plugin_kind kind, struct ckh_plugin **out,
                         char *msg, size_t msglen)
{
    struct stat st;
    int rc;
    if (msg && msglen)
        msg[0] = '\0';
    if (!path || !out || (unsigned)kind > CKH_PLUGIN_SAVER)
        return say(msg, msglen, CKH_EINVAL, kind, "NULL path or out, or unknown kind");
    *out = NULL;
    (void)ckh__plugin_host_api;
    if (stat(path, &st) != 0) {
        say(msg, msglen, CKH_ENOTFOUND, kind, "no such file");
        return prefix_path(msg, msglen, path, CKH_ENOTFOUND);
    }
    struct ckh_plugin *p = calloc(1, sizeof(*p));
    if (!p)
        return CKH_ENOMEM;
    p->kind = kind;
    if ((rc = open_library(path, kind, &p->dl, msg, msglen)) != 0)
        goto out_free;
    void *sym = dlsym(p->dl, entry_symbol(kind));
    if (!sym) {
        say(msg, msglen, CKH_EFOREIGN, kind, "no entry point %s (not a ckh %s plugin)",
            entry_symbol(kind), ckh_plugin_kind_name(kind));
        rc = prefix_path(msg, msglen, path, CKH_EFOREIGN);
        goto out_close;
    }
    if ((rc = call_and_check(kind, sym, &p->table, msg, msglen)) != 0) {
        prefix_path(msg, msglen, path, rc);
        goto out_close;
    }
    if (!(p->path = strdup(path))) {
        rc = CKH_ENOMEM;
        goto out_close;
    }
    *out = p;
    return 0;
out_close:
    dlclose(p->dl);
out_free:
    free(p);
    return rc;
}

int ckh_plugin_load(const char *path, struct ckh_plugin **out, char *msg, size_t msglen)
{
    return ckh_plugin_load_kind(path, CKH_PLUGIN_BACKEND, out, msg, msglen);
}

enum ckh_plugin_kind ckh_plugin_kind(const struct ckh_plugin *p)
{
    return p ? p->kind : CKH_PLUGIN_BACKEND;
}

const void *ckh_plugin_table(const struct ckh_plugin *p)
{
    return p ? p->table : NULL;
}

const struct ckh_backend_ops *ckh_plugin_ops(const struct ckh_plugin *p)
{
    return p && p->kind == CKH_PLUGIN_BACKEND ? p->table : NULL;
}

const char *ckh_plugin_path(const struct ckh_plugin *p)
{
    return p ? p->path : NULL;
}

void ckh_plugin_unload(struct ckh_plugin *p)
{
    if (!p)
        return;
    dlclose(p->dl);
    free(p->path);
    free(p);
}

/* ------------------------------------------------------------------ probe */


/* What the probe's child sends back. */
struct probe_answer {
    int rc;                                /* the loader's code */
    char msg[PATH_MAX + 512];              /* its message (the path in it whole) */
    char text[CKH_PLUGIN_DESCRIBE_BYTES];  /* what describe wrote (rc 0) */
};

/* The conventional name of the signals a crashing plugin raises. */
static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "a signal";
    }
}

/* The child of the probe: load, check, answer, exit without running any
 * of the parent's exit handlers. */
static void probe_child(int fd, const char *path, enum ckh_plugin_kind kind,
                        ckh_plugin_describe_fn describe)
{
    static struct probe_answer a; /* static: the child's stack stays small */
    struct ckh_plugin *p = NULL;
    /* A fault ends the child by its signal, whatever handlers the parent
     * had installed (a sanitizer's would exit with a status instead). */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
        signal(fatal[i], SIG_DFL);
    memset(&a, 0, sizeof(a));
    a.rc = ckh_plugin_load_kind(path, kind, &p, a.msg, sizeof(a.msg));
    if (a.rc == 0 && describe)
        describe(kind, ckh_plugin_table(p), a.text, sizeof(a.text));
    a.text[sizeof(a.text) - 1] = '\0';
    size_t off = 0;
    while (off < sizeof(a)) {
        ssize_t w = write(fd, (const char *)&a + off, sizeof(a) - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    ckh__worker_dump_coverage();
    _exit(off < sizeof(a) ? 3 : 0);
}

/* Reads the child's answer until EOF or the deadline. 0 with *got set,
 * or CKH_ETIMEOUT. */
static int probe_read(int fd, uint64_t deadline, struct probe_answer *a, size_t *got)
{
    *got = 0;
    for (;;) {
        uint64_t t = ckh_posix_now_ms();
        if (t >= deadline)
            return CKH_ETIMEOUT;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int pr = poll(&pf, 1, (int)(deadline - t > 60000 ? 60000 : deadline - t));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue; /* the deadline is checked at the top */
        ssize_t r = read(fd, (char *)a + *got, sizeof(*a) - *got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0; /* EOF: the child is done or dead */
        *got += (size_t)r;
        if (*got == sizeof(*a))
            return 0;
    }
}

/* Waits for the child until the deadline (0: kill it at once), then
 * kills it; reaps it on every path. 0, or CKH_ETIMEOUT when it had to be
 * killed. */
static int probe_reap(pid_t pid, uint64_t deadline, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return CKH_EINTERNAL;
        if (deadline == 0 || ckh_posix_now_ms() >= deadline)
            break;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return CKH_ETIMEOUT;
}

int ckh_plugin_probe(const char *path, enum ckh_plugin_kind kind, unsigned timeout_ms, char *msg,
                     size_t msglen)
{
    return ckh_plugin_probe_describe(path, kind, timeout_ms, NULL, NULL, 0, msg, msglen);
}

int ckh_plugin_probe_describe(const char *path, enum ckh_plugin_kind kind, unsigned timeout_ms,
                              ckh_plugin_describe_fn describe, char *out, size_t outlen, char *msg,
                              size_t msglen)
{
    int fds[2];
    struct probe_answer a;
    size_t got = 0;
    int status = 0;
    unsigned limit_ms = timeout_ms ? timeout_ms : CKH_PLUGIN_PROBE_DEFAULT_MS;
    if (msg && msglen)
        msg[0] = '\0';
    if (out && outlen)
        out[0] = '\0';
    if (!path || (unsigned)kind > CKH_PLUGIN_SAVER)
        return say(msg, msglen, CKH_EINVAL, kind, "NULL path or unknown kind");
    if (pipe(fds) != 0)
        return say(msg, msglen, -errno, kind, "pipe: %s", strerror(errno));
    fflush(NULL); /* the child must not write the parent's buffers again */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return say(msg, msglen, -e, kind, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        probe_child(fds[1], path, kind, describe);
    }
    close(fds[1]);
    memset(&a, 0, sizeof(a));
    uint64_t deadline = ckh_posix_now_ms() + limit_ms;
    int rc = probe_read(fds[0], deadline, &a, &got);
    close(fds[0]);
    rc = probe_reap(pid, rc == 0 ? deadline : 0, &status);
    if (rc == CKH_EINTERNAL)
        return say(msg, msglen, rc, kind, "waitpid: %s", strerror(errno));
    if (rc == CKH_ETIMEOUT) {
        say(msg, msglen, rc, kind, "loading did not finish within the plugin load limit of %u ms "
            "(a constructor or the entry point hangs; CKH_PLUGIN_TIMEOUT sets the limit)", limit_ms);
        return prefix_path(msg, msglen, path, rc);
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        say(msg, msglen, CKH_ECRASH, kind, "a constructor or the entry point %s crashed with "
            "signal %d (%s: %s)", entry_symbol(kind), sig, signal_name(sig), strsignal(sig));
        return prefix_path(msg, msglen, path, CKH_ECRASH);
    }
    if (got != sizeof(a)) {
        say(msg, msglen, CKH_ECRASH, kind, "loading ended the process with status %d "
            "before it answered (a constructor or the entry point called exit)",
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return prefix_path(msg, msglen, path, CKH_ECRASH);
    }
    a.msg[sizeof(a.msg) - 1] = '\0';
    a.text[sizeof(a.text) - 1] = '\0';
    if (msg && msglen)
        snprintf(msg, msglen, "%s", a.msg);
    if (a.rc == 0 && out && outlen)
        snprintf(out, outlen, "%s", a.text);
    return a.rc;
}

int ckh_plugin_timeout_ms(unsigned *out, char *msg, size_t msglen)
{
    const char *v = getenv("CKH_PLUGIN_TIMEOUT");
    uint64_t ns = 0;
    *out = CKH_PLUGIN_PROBE_DEFAULT_MS;
    if (!v || !*v)
        return 0;
    if (ckh_scn_parse_duration(v, &ns) != 0 || ns < 1000000u || ns / 1000000u > 3600000u)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "CKH_PLUGIN_TIMEOUT: expected a duration from 1ms to 1h such as 10s, got '%s'", v);
    *out = (unsigned)(ns / 1000000u);
    return 0;
}
