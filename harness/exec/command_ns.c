/* The fixed checkpoint path of a command job's programs: a private mount
 * namespace per process (exec/command_ns.h has the rule and the
 * mechanism).
 *
 * Map: entering a namespace (the child's side) · the mode of this process
 * (the probe, once per path) · a process's spec.
 */
#include "exec/command_ns.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- entering a namespace (async-signal-safe) ---- */

/* Writes text to the file at path (a /proc file of the caller). 0 or errno. */
static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    int e = w == (ssize_t)n ? 0 : (w < 0 ? errno : EIO);
    close(fd);
    return e;
}

int ckh__ns_enter(const struct ckh__ns_spec *s, const char **step)
{
    int e;
    *step = "";
    if (s->mode == CKH__NS_NONE)
        return 0;
    if (s->mode == CKH__NS_USER) {
        *step = "unshare(CLONE_NEWUSER | CLONE_NEWNS)";
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            return errno;
        /* An unprivileged process may map only its own ids, and its gid
         * only once setgroups is denied. */
        *step = "writing /proc/self/setgroups";
        if ((e = write_file("/proc/self/setgroups", "deny")) != 0 && e != ENOENT)
            return e;
        *step = "writing /proc/self/gid_map";
        if ((e = write_file("/proc/self/gid_map", s->gid_map)) != 0)
            return e;
        *step = "writing /proc/self/uid_map";
        if ((e = write_file("/proc/self/uid_map", s->uid_map)) != 0)
            return e;
    } else {
        *step = "unshare(CLONE_NEWNS)";
        if (unshare(CLONE_NEWNS) != 0)
            return errno;
    }
    /* Nothing this process mounts reaches ckh's namespace, and nothing
     * ckh mounts later reaches this one. The type is ignored by both
     * calls: "none", as mount(8) passes, rather than NULL, which memory
     * checkers read as a string. */
    *step = "making / private (MS_REC | MS_PRIVATE)";
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
        return errno;
    *step = "bind-mounting the checkpoint disk";
    if (mount(s->src, s->dst, "none", MS_BIND, NULL) != 0)
        return errno;
    *step = "";
    return 0;
}

/* ---- the mode of this process ---- */

/* mkdir -p path with mode 0755; 0 or errno (ENOTDIR: a part is no folder). */
static int make_path(const char *path)
{
    char buf[CKH__CMD_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return ENAMETOOLONG;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char was = *p;
        *p = '\0';
        struct stat st;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return errno;
        if (stat(buf, &st) != 0)
            return errno;
        if (!S_ISDIR(st.st_mode))
            return ENOTDIR;
        *p = was;
        if (!was)
            return 0;
    }
}

/* One probe: a child makes a namespace of mode and binds path onto
 * itself. 0, or errno with *step (what failed). */
static int probe_one(enum ckh__ns_mode mode, const char *path, const char **step)
{
    struct ckh__ns_spec s;
    memset(&s, 0, sizeof s);
    s.mode = mode;
    snprintf(s.src, sizeof s.src, "%s", path);
    snprintf(s.dst, sizeof s.dst, "%s", path);
    snprintf(s.uid_map, sizeof s.uid_map, "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
    snprintf(s.gid_map, sizeof s.gid_map, "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
    int fds[2];
    *step = "pipe";
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    pid_t p = fork();
    if (p == 0) {
        const char *st;
        int e = ckh__ns_enter(&s, &st);
        /* The step's text is static: its address means the same in the parent. */
        if (write(fds[1], &e, sizeof e) < 0 || write(fds[1], &st, sizeof st) < 0)
            _exit(2);
        _exit(e ? 1 : 0);
    }
    int fe = errno;
    close(fds[1]);
    if (p < 0) {
        close(fds[0]);
        *step = "fork";
        return fe;
    }
    int e = ECHILD;
    const char *st = "the probe process";
    if (read(fds[0], &e, sizeof e) != (ssize_t)sizeof e || read(fds[0], &st, sizeof st) != (ssize_t)sizeof st) {
        e = ECHILD;
        st = "the probe process";
    }
    *step = st;
    close(fds[0]);
    while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
        ;
    return e;
}

/* Decides the mode for path; why (one line) when it is CKH__NS_NONE. */
static enum ckh__ns_mode decide(const char *path, char *why, size_t n)
{
    const char *off = getenv("CKH_NO_NAMESPACE");
    if (off && off[0] && strcmp(off, "0") != 0) {
        snprintf(why, n, "CKH_NO_NAMESPACE is set");
        return CKH__NS_NONE;
    }
    int e = make_path(path);
    if (e) {
        snprintf(why, n, "cannot create %s: %s", path, strerror(e));
        return CKH__NS_NONE;
    }
    /* CKH_USER_NAMESPACE=1: the unprivileged route even where ckh has
     * CAP_SYS_ADMIN (how a root CI tests it). */
    const char *user = getenv("CKH_USER_NAMESPACE");
    bool user_only = user && user[0] && strcmp(user, "0") != 0;
    const char *step1 = "unshare(CLONE_NEWNS) not tried (CKH_USER_NAMESPACE is set)", *step2 = "";
    int e1 = user_only ? EPERM : probe_one(CKH__NS_MOUNT, path, &step1);
    if (e1 == 0)
        return CKH__NS_MOUNT;
    int e2 = probe_one(CKH__NS_USER, path, &step2);
    if (e2 == 0)
        return CKH__NS_USER;
    if (user_only)
        snprintf(why, n, "%s: %s", step2, strerror(e2));
    else
        snprintf(why, n, "%s: %s; %s: %s", step1, strerror(e1), step2, strerror(e2));
    return CKH__NS_NONE;
}

/* The decisions so far: one per path (a run uses one or two). */
#define KNOWN_MAX 8
static struct {
    char path[CKH__CMD_PATH_MAX];
    enum ckh__ns_mode mode;
    char why[CKH__CMD_PATH_MAX + 200]; /* CKH__NS_NONE: why */
    bool said;                         /* the line was printed, or is another process's to print */
} known[KNOWN_MAX];
static size_t nknown;
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;

/* The entry of path, decided now if it is new (known_lock held;
 * KNOWN_MAX: the table is full, *mode and why decided anyway). */
static size_t entry_of(const char *path, enum ckh__ns_mode *mode, char *why, size_t n)
{
    for (size_t i = 0; i < nknown; i++)
        if (!strcmp(known[i].path, path)) {
            *mode = known[i].mode;
            snprintf(why, n, "%s", known[i].why);
            return i;
        }
    *mode = decide(path, why, n);
    if (nknown == KNOWN_MAX)
        return KNOWN_MAX;
    snprintf(known[nknown].path, sizeof known[nknown].path, "%s", path);
    snprintf(known[nknown].why, sizeof known[nknown].why, "%s", why);
    known[nknown].mode = *mode;
    known[nknown].said = false;
    return nknown++;
}

enum ckh__ns_mode ckh__ns_mode(const char *path)
{
    enum ckh__ns_mode mode;
    char why[CKH__CMD_PATH_MAX + 200] = "";
    pthread_mutex_lock(&known_lock);
    entry_of(path, &mode, why, sizeof why);
    pthread_mutex_unlock(&known_lock);
    return mode;
}

/* Whether this process is the first to claim the line in folder dir: a
 * file named after the path, made there exclusively. */
static bool first_in(const char *dir, const char *path)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the path */
    for (const char *p = path; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    char marker[CKH__CMD_PATH_MAX + 64];
    snprintf(marker, sizeof marker, "%s/ns-said.%016llx", dir, (unsigned long long)h);
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno != EEXIST; /* a folder that cannot be written: say it here */
    close(fd);
    return true;
}

void ckh__ns_say(const char *path, const char *once_dir)
{
    enum ckh__ns_mode mode;
    char why[CKH__CMD_PATH_MAX + 200] = "";
    pthread_mutex_lock(&known_lock);
    size_t i = entry_of(path, &mode, why, sizeof why);
    bool say = mode == CKH__NS_NONE && (i == KNOWN_MAX || !known[i].said);
    if (say && i < KNOWN_MAX)
        known[i].said = true;
    if (say && once_dir && once_dir[0])
        say = first_in(once_dir, path);
    if (say)
        fprintf(stderr,
                "ckh: no private mount namespace for command jobs (%s): programs see their checkpoint disk "
                "in ckh's run folder instead of %s; absolute link targets into it are compared relative to "
                "the disk\n",
                why, path);
    pthread_mutex_unlock(&known_lock);
}

/* ---- a process's spec ---- */

void ckh__ns_spec_make(const struct ckh__cmd *c, const char *src, struct ckh__ns_spec *s)
{
    memset(s, 0, sizeof *s);
    s->mode = src && c->sc->job.checkpoint_mount ? c->ns_mode : CKH__NS_NONE;
    if (s->mode == CKH__NS_NONE)
        return;
    snprintf(s->src, sizeof s->src, "%s", src);
    snprintf(s->dst, sizeof s->dst, "%s", c->sc->job.checkpoint_mount);
    snprintf(s->uid_map, sizeof s->uid_map, "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
    snprintf(s->gid_map, sizeof s->gid_map, "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
}
