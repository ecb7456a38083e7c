/* Writes outside the checkpoint directory, by the process that made them
 * (command_outside.h).
 *
 * fanotify marks the mount that holds the programs' working folder (its
 * filesystem, when the programs run in their own mount namespaces) for
 * FAN_CLOSE_WRITE: each event carries the writer's pid and an open file
 * of what it wrote. An event counts when the file lies under the folder
 * (not in ckh's run folder, not an interpreter's bytecode cache) and its
 * writer belongs to a node of the job: the writer is in the node's
 * process group, or descends from its root process. The writer is looked
 * up when the event is read, every look of the wait loop (a few
 * milliseconds): a process that exited and was reaped before is no longer
 * there to look up, and its write is not attributed (the limit is written
 * in docs/SCENARIOS.md, "Command jobs").
 */
#include "exec/command_outside.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/command_proc.h"
#include "exec/command_result.h"

/* One file a process of the job wrote. */
struct out_write {
    char *path;    /* absolute (owned) */
    int node;      /* index in c->nodes */
    char comm[20]; /* the writer's command name */
};

struct ckh__cmd_outside {
    const struct ckh__cmd *c; /* the job (borrowed) */
    int fd;                   /* the fanotify group */
    char dir[PATH_MAX];       /* the folder watched */
    char skip[PATH_MAX];      /* ckh's run folder ("" if none) */
    struct out_write *v;      /* what the job wrote, one entry per path */
    size_t n, cap;
};

int ckh__cmd_outside_start(const struct ckh__cmd *c, const char *dir, const char *skip,
                           struct ckh__cmd_outside **out, char *msg, size_t msglen)
{
    *out = NULL;
    int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
    if (fd < 0)
        return ckh_errf(msg, msglen, CKH_EUNSUPPORTED, "fanotify: %s", strerror(errno));
    /* Programs in their own mount namespaces (exec/command_ns.h) reach the
     * folder through copies of its mount, which a mount mark does not
     * see: the mark is then on the folder's filesystem (events elsewhere
     * on it are left out by path, below). */
    bool whole_fs = c->ns_mode != 0;
    if (whole_fs && fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CLOSE_WRITE, AT_FDCWD, dir) == 0)
        ;
    else if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_CLOSE_WRITE, AT_FDCWD, dir) != 0) {
        int e = errno;
        close(fd);
        return ckh_errf(msg, msglen, CKH_EUNSUPPORTED, "fanotify on %s: %s", dir, strerror(e));
    }
    struct ckh__cmd_outside *o = calloc(1, sizeof *o);
    if (!o || !realpath(dir, o->dir) || (skip && skip[0] && !realpath(skip, o->skip))) {
        free(o);
        close(fd);
        return o ? ckh_errf(msg, msglen, CKH_EUNSUPPORTED, "%s: %s", dir, strerror(errno))
                 : ckh_errf(msg, msglen, CKH_ENOMEM, "out of memory");
    }
    o->c = c;
    o->fd = fd;
    *out = o;
    return 0;
}

/* Whether rel (a path under the folder) is no checkpoint: a component
 * that the folder snapshot skips too (bytecode caches, ckh's run folders). */
static bool skipped(const char *rel)
{
    char part[NAME_MAX + 1];
    for (const char *s = rel; *s;) {
        size_t len = strcspn(s, "/");
        snprintf(part, sizeof part, "%.*s", (int)(len < NAME_MAX ? len : NAME_MAX), s);
        if (ckh__cmd_snapshot_skipped(part))
            return true;
        s += len + (s[len] == '/');
    }
    return false;
}

static void keep(struct ckh__cmd_outside *o, const char *path, int node, pid_t pid)
{
    for (size_t i = 0; i < o->n; i++)
        if (!strcmp(o->v[i].path, path))
            return;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 8;
        struct out_write *v = realloc(o->v, cap * sizeof *v);
        if (!v)
            return; /* out of memory: this write goes unreported, the first ones are kept */
        o->v = v;
        o->cap = cap;
    }
    struct out_write *w = &o->v[o->n];
    if (!(w->path = strdup(path)))
        return;
    w->node = node;
    snprintf(w->comm, sizeof w->comm, "?");
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/comm", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, w->comm, sizeof w->comm - 1);
        w->comm[r > 0 ? r : 0] = '\0';
        w->comm[strcspn(w->comm, "\n")] = '\0';
        close(fd);
    }
    o->n++;
}

/* One event: the file it names, if it is the job's write under the folder. */
static void event(struct ckh__cmd_outside *o, const struct fanotify_event_metadata *m)
{
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", m->fd);
    ssize_t len = readlink(link, path, sizeof path - 1);
    close(m->fd);
    if (len <= 0 || m->pid == getpid())
        return;
    path[len] = '\0';
    size_t dl = strlen(o->dir), sl = strlen(o->skip);
    if (strncmp(path, o->dir, dl) || path[dl] != '/' || (sl && !strncmp(path, o->skip, sl) && (!path[sl] || path[sl] == '/')))
        return;
    if (skipped(path + dl + 1))
        return;
    int node = ckh__cmd_node_of_pid_locked(o->c, m->pid);
    if (node >= 0)
        keep(o, path, node, m->pid);
}

void ckh__cmd_outside_poll(struct ckh__cmd_outside *o)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
    if (!o)
        return;
    for (;;) {
        ssize_t r = read(o->fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        const struct fanotify_event_metadata *m = (const void *)buf;
        for (; FAN_EVENT_OK(m, r); m = FAN_EVENT_NEXT(m, r))
            if (m->vers == FANOTIFY_METADATA_VERSION && m->fd >= 0)
                event(o, m);
            else if (m->fd >= 0)
                close(m->fd);
    }
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct out_write *)a)->path, ((const struct out_write *)b)->path);
}

bool ckh__cmd_outside_found(struct ckh__cmd_outside *o, char *msg, size_t msglen)
{
    if (!o)
        return false;
    ckh__cmd_outside_poll(o);
    if (!o->n)
        return false;
    qsort(o->v, o->n, sizeof *o->v, by_path);
    const struct out_write *w = &o->v[0];
    snprintf(msg, msglen, "%s (%s) wrote %s%s", o->c->nodes[w->node].name, w->comm, w->path,
             o->n > 1 ? " (and other files)" : "");
    return true;
}

void ckh__cmd_outside_free(struct ckh__cmd_outside *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++)
        free(o->v[i].path);
    free(o->v);
    close(o->fd);
    free(o);
}
