/* The processes of a command job (exec/command.h): programs resolved and
 * started with their environment, callers mapped to nodes, a run waited
 * for with its triggers and limits, and every process killed and reaped
 * on every path.
 *
 * Map: signals · resolving a program · the environment · starting a node
 * · callers to nodes · killing · waiting for a run · verify.
 *
 * Process model. Each node's program is the root of its own process
 * group (setpgid before exec); everything it starts stays in that group
 * unless it leaves it on purpose (setsid, setpgid), which ckh cannot
 * follow (docs/SCENARIOS.md says so). ckh is their child subreaper
 * (PR_SET_CHILD_SUBREAPER) for the job's duration, so orphans of a node
 * are reparented to ckh and reaped with waitpid(-pgid). A root dies with
 * ckh (PR_SET_PDEATHSIG). A node's group is killed (SIGKILL) when its
 * root ends, when a fault or the agent stops it, at job.timeout, and on
 * every exit path of ckh, SIGINT included.
 *
 * A Python program may instead start from a warm launcher (exec/command_warm.h)
 * when c->warm is set: the process it forks is adopted by ckh and is then
 * ckh's child, its own group's leader, like one started here.
 *
 * Between fork and exec the child calls only async-signal-safe functions:
 * the ckhfs server threads run in this process, and the argv, the
 * environment and the resolved program are prepared before the fork.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/command_proc.h"
#include "exec/command_ns.h"
#include "exec/command_outside.h"
#include "exec/command_result.h"
#include "exec/prog_file.h"
#include "exec/command_warm.h"

extern char **environ;

#define WAIT_POLL_MS 5          /* how often a run's progress and limits are looked at */
#define GROUP_KILL_WAIT_MS 5000 /* a killed group that does not vanish by then is left to init */
/* Result-file bytes one look reads per node: a program that writes faster
 * is read over several looks, and job.timeout is looked at in between. */
#define LOOK_READ_BYTES (4u << 20)

/* ---- signals ---- */

static const int watched[] = {SIGINT, SIGTERM, SIGHUP};
#define NWATCHED (sizeof watched / sizeof watched[0])
static struct sigaction saved[NWATCHED];
static volatile sig_atomic_t caught;
static int installs;

static void on_signal(int sig)
{
    caught = sig;
}

void ckh__cmd_signals_install(void)
{
    if (installs++ > 0)
        return;
    caught = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NWATCHED; i++)
        sigaction(watched[i], &sa, &saved[i]);
}

void ckh__cmd_signals_restore(void)
{
    if (installs == 0 || --installs > 0)
        return;
    for (size_t i = 0; i < NWATCHED; i++)
        sigaction(watched[i], &saved[i], NULL);
    /* The signal still reaches whoever watched it before (the worker
     * pool's self-pipe, or the default action) once the job is cleaned up. */
    if (caught)
        raise(caught);
}

int ckh__cmd_interrupted(void)
{
    return caught;
}

/* ---- resolving a program ---- */

/* The PATH the programs see: job.env's, else ckh's own. */
static const char *job_path(const struct ckh__cmd *c)
{
    for (size_t i = 0; i < c->sc->job.nenv; i++)
        if (!strcmp(c->sc->job.env[i].key, "PATH"))
            return c->sc->job.env[i].text;
    const char *p = getenv("PATH");
    return p && p[0] ? p : "/usr/local/bin:/usr/bin:/bin";
}

static bool is_exec_file(const char *path, int *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        *err = errno;
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        *err = S_ISDIR(st.st_mode) ? EISDIR : EACCES;
        return false;
    }
    if (access(path, X_OK) != 0) {
        *err = errno;
        return false;
    }
    return true;
}

int ckh__cmd_resolve(struct ckh__cmd *c, const struct ckh_scn_command *cmd, char *exe, size_t n)
{
    const char *prog = cmd->argv[0];
    const char *file = c->sc->file;
    int err = ENOENT;
    if (strchr(prog, '/')) {
        if (prog[0] == '/')
            snprintf(exe, n, "%s", prog);
        else
            snprintf(exe, n, "%s/%s", c->cwd, prog);
        if (is_exec_file(exe, &err))
            return 0;
        if (err == ENOENT)
            return ckh__cmd_fail(c, CKH_EINVAL, "%s:%d:%d: the program '%s' does not exist (looked for %s)",
                                 file, cmd->line, cmd->column, prog, exe);
        return ckh__cmd_fail(c, CKH_EINVAL,
                             "%s:%d:%d: the program '%s' (%s) cannot be run: %s%s", file, cmd->line,
                             cmd->column, prog, exe, strerror(err),
                             err == EACCES ? " (make it executable with chmod +x, or name its "
                                             "interpreter first: [sh, script.sh])" : "");
    }
    const char *path = job_path(c);
    bool seen = false;
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(exe, n, "%.*s%s%s", (int)len, path, len ? "/" : "./", prog);
        int e = 0;
        if (is_exec_file(exe, &e))
            return 0;
        seen |= e != ENOENT && e != ENOTDIR;
        path += len + (colon != NULL);
        if (!colon)
            break;
    }
    return ckh__cmd_fail(c, CKH_EINVAL, "%s:%d:%d: the program '%s' %s on PATH (%s)", file, cmd->line,
                         cmd->column, prog, seen ? "is not executable" : "is not found",
                         job_path(c));
}

/* ---- the environment ---- */

/* A growing NULL-terminated list of owned "NAME=value" strings. */
struct envv {
    char **v;    /* the entries */
    size_t n;    /* in use */
    size_t cap;  /* allocated */
    bool oom;    /* an allocation failed */
};

static void env_put(struct envv *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void env_put(struct envv *e, const char *fmt, ...)
{
    if (e->oom)
        return;
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        char **v = realloc(e->v, cap * sizeof *v);
        if (!v) {
            e->oom = true;
            return;
        }
        e->v = v;
        e->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vasprintf(&e->v[e->n], fmt, ap);
    va_end(ap);
    if (len < 0) {
        e->oom = true;
        return;
    }
    e->v[++e->n] = NULL;
}

static void env_free(struct envv *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* Names ckh sets (or job.env sets): never inherited. TMPDIR is the
 * execution's own tmp/ folder, removed with the run folder, so a program
 * killed mid-way leaves no temporary file in the user's TMPDIR. */
static bool env_ours(const struct ckh__cmd *c, const char *entry)
{
    static const char *const set[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                      "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK", "ROLE_RANK",
                                      "ROLE_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT"};
    size_t len = strcspn(entry, "=");
    if (!strncmp(entry, "CKH_", 4) || (len == 6 && !strncmp(entry, "TMPDIR", 6)))
        return true;
    if (c->s3 != NULL && !strncmp(entry, "AWS_", 4)) /* the store's, not the user's */
        return true;
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        if (strlen(set[i]) == len && !strncmp(entry, set[i], len))
            return true;
    for (size_t i = 0; i < c->sc->job.nenv; i++)
        if (strlen(c->sc->job.env[i].key) == len && !strncmp(entry, c->sc->job.env[i].key, len))
            return true;
    return false;
}

/* The mount serving disk d to node i (verify mounts while verify runs). */
static const struct ckh__cmd_mount *mount_of(const struct ckh__cmd *c, struct ckh_simfs *d)
{
    for (size_t m = 0; m < c->nmounts; m++)
        if ((c->mounts[m].disk == d || c->mounts[m].orig == d) && c->mounts[m].fs)
            return &c->mounts[m];
    return NULL;
}

/* The mount of the disk that holds node i's checkpoint directory, and
 * the directory's path in the disk (NULL: not mounted). */
static const struct ckh__cmd_mount *ckpt_mount(struct ckh__cmd *c, int i, char *dpath, size_t n)
{
    struct ckh_simfs *d = ckh_fault_resolve(&c->env, i, c->sc->job.checkpoint_dir, dpath, n);
    return d ? mount_of(c, d) : NULL;
}

/* The namespace of node i's processes (exec/command_ns.h). */
static void ns_spec_of(struct ckh__cmd *c, int i, struct ckh__ns_spec *s)
{
    char dpath[CKH_PATH_MAX];
    const struct ckh__cmd_mount *m = ckpt_mount(c, i, dpath, sizeof dpath);
    ckh__ns_spec_make(c, m ? m->dir : NULL, s);
}

/* CKH_CKPT_DIR and one CKH_DISK_<NAME> per disk, as node i sees them:
 * the checkpoint disk at job.checkpoint_mount in the node's own mount
 * namespace, else (and every other disk) at its folder of the run. */
static void env_mounts(struct ckh__cmd *c, int i, struct envv *e)
{
    const struct ckh_scn_job *job = &c->sc->job;
    char dpath[CKH_PATH_MAX];
    const struct ckh__cmd_mount *m = ckpt_mount(c, i, dpath, sizeof dpath);
    const char *below = strcmp(dpath, "/") ? dpath : "";
    if (m && c->ns_mode != CKH__NS_NONE && job->checkpoint_mount)
        env_put(e, "CKH_CKPT_DIR=%s%s", job->checkpoint_mount, below);
    else if (m)
        env_put(e, "CKH_CKPT_DIR=%s%s", m->dir, below);
    for (size_t k = 0; k < job->ndisks; k++) {
        m = mount_of(c, c->disks[k * (size_t)c->n + (size_t)(i < 0 ? 0 : i)]);
        if (!m)
            continue;
        char name[128];
        size_t j = 0;
        for (const char *s = job->disks[k].name; *s && j + 1 < sizeof name; s++)
            name[j++] = isalnum((unsigned char)*s) ? (char)toupper((unsigned char)*s) : '_';
        name[j] = '\0';
        env_put(e, "CKH_DISK_%s=%s", name, m->dir);
    }
}

/* job.object_store: what boto3, botocore, the AWS CLI and curl scripts
 * read to reach node i's port of the endpoint (docs/OBJECT_STORE.md).
 * The user's own AWS configuration files are not read. */
static void env_store(struct ckh__cmd *c, int i, struct envv *e)
{
    if (c->s3 == NULL)
        return;
    char url[64];
    ckh_s3_server_url(c->s3, i, url, sizeof url);
    env_put(e, "AWS_ENDPOINT_URL=%s", url);
    env_put(e, "AWS_ENDPOINT_URL_S3=%s", url);
    env_put(e, "AWS_ACCESS_KEY_ID=%s", CKH_S3_ACCESS_KEY);
    env_put(e, "AWS_SECRET_ACCESS_KEY=%s", CKH_S3_SECRET_KEY);
    env_put(e, "AWS_DEFAULT_REGION=%s", CKH_S3_REGION);
    env_put(e, "AWS_REGION=%s", CKH_S3_REGION);
    env_put(e, "AWS_CONFIG_FILE=/dev/null");
    env_put(e, "AWS_SHARED_CREDENTIALS_FILE=/dev/null");
    env_put(e, "AWS_EC2_METADATA_DISABLED=true");
    env_put(e, "CKH_S3_BUCKET=%s", c->sc->job.object_store->buckets[0]);
}

/* The environment of node i (i < 0: verify of node -1 - i's view): ckh's
 * own, torchrun's conventions, CKH_*, then job.env. */
static int build_env(struct ckh__cmd *c, int i, int view, struct envv *e)
{
    for (char **p = environ; p && *p; p++)
        if (!env_ours(c, *p))
            env_put(e, "%s", *p);
    if (i >= 0) {
        const struct ckh__cmd_node *nd = &c->nodes[i];
        int world = c->run == 1 ? c->world_first : c->world_restart;
        env_put(e, "RANK=%d", nd->rank);
        env_put(e, "LOCAL_RANK=%d", nd->rank);
        env_put(e, "GROUP_RANK=0");
        env_put(e, "ROLE_RANK=%d", nd->rank);
        env_put(e, "WORLD_SIZE=%d", world);
        env_put(e, "LOCAL_WORLD_SIZE=%d", world);
        env_put(e, "ROLE_WORLD_SIZE=%d", world);
        env_put(e, "MASTER_ADDR=127.0.0.1");
        env_put(e, "MASTER_PORT=%d", c->master_port);
        env_put(e, "TORCHELASTIC_RESTART_COUNT=%d", c->run - 1);
        env_put(e, "CKH_RESULT=%s", nd->result);
    }
    bool own_tmpdir = true; /* unless job.env names it */
    for (size_t k = 0; k < c->sc->job.nenv; k++)
        own_tmpdir = own_tmpdir && strcmp(c->sc->job.env[k].key, "TMPDIR") != 0;
    if (own_tmpdir)
        env_put(e, "TMPDIR=%s/tmp", c->dir);
    env_put(e, "CKH_NODE=%s", c->nodes[view].name);
    env_put(e, "CKH_RUN=%d", c->run);
    env_put(e, "CKH_SEED=%" PRIu64, c->seed);
    env_mounts(c, view, e);
    env_store(c, view, e);
    for (size_t k = 0; k < c->sc->job.nenv; k++)
        env_put(e, "%s=%s", c->sc->job.env[k].key, c->sc->job.env[k].text);
    return e->oom ? ckh__cmd_fail(c, CKH_ENOMEM, "out of memory") : 0;
}

/* A free TCP port on the loopback interface (bind port 0), or 29500. */
int ckh__cmd_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t len = sizeof a;
    int port = 29500;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* ---- starting a process ---- */

bool ckh__cmd_child_prepare(pid_t parent, const char *cwd, int in_fd, int out_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* ckh is gone already: nothing to report to */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    return chdir(cwd) == 0 && dup2(in_fd, 0) >= 0 && dup2(out_fd, 1) >= 0 && dup2(out_fd, 2) >= 0;
}

/* What a child that did not reach its program says on its error pipe. */
struct start_err {
    int err;          /* errno */
    int zero;         /* 0: no byte of what is written is left unset */
    const char *step; /* the namespace's step that failed (static); NULL: the exec */
};

/* The child between fork and exec: async-signal-safe calls only. */
static _Noreturn void child_exec(const char *exe, char *const *argv, char *const *envp, const char *cwd,
                                 const struct ckh__ns_spec *ns, int in_fd, int out_fd, int err_pipe,
                                 pid_t parent)
{
    struct start_err se = {0, 0, NULL};
    if (!ckh__cmd_child_prepare(parent, cwd, in_fd, out_fd))
        goto out_fail;
    if ((se.err = ckh__ns_enter(ns, &se.step)) != 0)
        goto out_report;
    /* Nothing of ckh's reaches the program: the worker pool's reply pipe
     * and every other descriptor close at the exec. */
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
        for (int fd = 3; fd < 4096; fd++)
            if (fd != err_pipe)
                close(fd);
    execve(exe, argv, envp);
out_fail:
    se.err = errno;
    se.step = NULL;
out_report:
    if (write(err_pipe, &se, sizeof se) < 0)
        _exit(126);
    _exit(127);
}

/* Starts argv (argv[0] replaced by exe) with envp, stdout and stderr to
 * log, in the namespace ns; *pid its pid (and process group). errno of a
 * failed exec, or of the namespace's step *ns_step, in *exec_err. */
static int start_process(struct ckh__cmd *c, const char *exe, const struct ckh_scn_command *cmd,
                         char *const *envp, const struct ckh__ns_spec *ns, const char *log, pid_t *pid,
                         int *exec_err, const char **ns_step)
{
    const char **argv = calloc(cmd->argc + 1, sizeof *argv);
    int out_fd = ckh__prog_file_create(log); /* never through a link a program planted */
    if (out_fd < 0)
        errno = -out_fd;
    int in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int ep[2] = {-1, -1};
    int rc = 0;
    *exec_err = 0;
    *ns_step = NULL;
    if (out_fd == -EISDIR) {
        rc = ckh__cmd_fail(c, CKH_EINVAL, "cannot create the log of %s (%s): a program of an earlier run put a "
                           "folder there", exe, log);
        goto out;
    }
    if (!argv || out_fd < 0 || in_fd < 0 || pipe2(ep, O_CLOEXEC) != 0) {
        rc = ckh__cmd_fail(c, argv ? -errno : CKH_ENOMEM, "cannot start %s: %s", exe,
                           argv ? strerror(errno) : "out of memory");
        goto out;
    }
    argv[0] = cmd->argv[0];
    for (size_t k = 1; k < cmd->argc; k++)
        argv[k] = cmd->argv[k];
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* no handler of ckh's runs in the child */
    pid_t parent = getpid();
    pid_t p = fork();
    if (p == 0)
        child_exec(exe, (char *const *)argv, envp, c->cwd, ns, in_fd, out_fd, ep[1], parent);
    int fe = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(ep[1]);
    ep[1] = -1;
    if (p < 0) {
        rc = ckh__cmd_fail(c, -fe, "cannot start %s: fork: %s", exe, strerror(fe));
        goto out;
    }
    setpgid(p, p); /* also here: no race with a kill of the group */
    *pid = p;
    struct start_err se = {0, 0, NULL};
    ssize_t r;
    do
        r = read(ep[0], &se, sizeof se);
    while (r < 0 && errno == EINTR);
    if (r == (ssize_t)sizeof se) {
        *exec_err = se.err;
        *ns_step = se.step;
    }
out:
    if (ep[0] >= 0)
        close(ep[0]);
    if (ep[1] >= 0)
        close(ep[1]);
    if (out_fd >= 0)
        close(out_fd);
    if (in_fd >= 0)
        close(in_fd);
    free(argv);
    return rc;
}

/* Reaps pid (blocking) and its whole group after a failed exec. */
static void reap_group_now(pid_t pgid)
{
    kill(-pgid, SIGKILL);
    for (;;) {
        pid_t r = waitpid(-pgid, NULL, 0);
        if (r > 0 || (r < 0 && errno == EINTR))
            continue;
        break;
    }
}

/* The message of a process that did not reach its program (what: its
 * node, or "verify"). */
static int start_failed(struct ckh__cmd *c, const struct ckh_scn_command *cmd, const char *what,
                        const char *exe, int exec_err, const char *ns_step)
{
    if (ns_step)
        return ckh__cmd_fail(c, CKH_EINTERNAL,
                             "%s:%d:%d: %s: cannot give '%s' its checkpoint disk at %s (%s): %s "
                             "(CKH_NO_NAMESPACE=1 runs it without a mount namespace)",
                             c->sc->file, cmd->line, cmd->column, what, cmd->argv[0],
                             c->sc->job.checkpoint_mount, ns_step, strerror(exec_err));
    return ckh__cmd_fail(c, CKH_EINVAL, "%s:%d:%d: %s: cannot run '%s' (%s): %s%s", c->sc->file, cmd->line,
                         cmd->column, what, cmd->argv[0], exe, strerror(exec_err),
                         exec_err == ENOEXEC ? " (a script needs a '#!' line, or name its "
                                               "interpreter first: [sh, script.sh])" : "");
}

int ckh__cmd_spawn_node(struct ckh__cmd *c, int i)
{
    struct ckh__cmd_node *nd = &c->nodes[i];
    struct envv e = {0};
    struct ckh__ns_spec ns;
    const char *ns_step = NULL;
    int rc, exec_err = 0;
    pid_t pid = 0;
    if ((rc = build_env(c, i, i, &e)) != 0)
        goto out;
    ns_spec_of(c, i, &ns);
    /* A warm launcher starts before the lock is taken (it imports). */
    if ((rc = ckh__warm_prepare(c, nd->exe, nd->cmd, e.v)) != 0)
        goto out;
    pthread_mutex_lock(&c->lock);
    rc = c->warm ? ckh__warm_spawn(c, nd->exe, nd->cmd, e.v, &ns, nd->log, &pid) : 1;
    if (rc == 1) /* a cold start: fork and exec */
        rc = start_process(c, nd->exe, nd->cmd, e.v, &ns, nd->log, &pid, &exec_err, &ns_step);
    if (rc == 0) {
        nd->pid = pid;
        nd->reaped = nd->group_gone = false;
        nd->end = CKH__CMD_RUNNING;
        nd->pidfd = ckh_posix_pidfd_open(pid);
    }
    pthread_mutex_unlock(&c->lock);
    if (rc == 0 && exec_err) {
        /* The program vanished or changed since it was resolved, or it
         * is a script without an interpreter line (ENOEXEC), or its
         * namespace could not be made after all. */
        rc = start_failed(c, nd->cmd, nd->name, nd->exe, exec_err, ns_step);
    }
out:
    env_free(&e);
    return rc;
}

/* ---- callers to nodes ---- */

/* ppid and pgrp of pid from /proc/<pid>/stat; false when gone. */
static bool stat_of(pid_t pid, pid_t *ppid, pid_t *pgrp)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* Field 2 (comm) may hold spaces and parentheses: fields 3.. follow the last ')'. */
    char *p = strrchr(buf, ')');
    int state_ppid_pgrp[2];
    char st;
    if (!p || sscanf(p + 1, " %c %d %d", &st, &state_ppid_pgrp[0], &state_ppid_pgrp[1]) != 3)
        return false;
    *ppid = state_ppid_pgrp[0];
    *pgrp = state_ppid_pgrp[1];
    return true;
}

/* The node whose root is pid or whose process group is pgrp (lock held). */
static int node_with(const struct ckh__cmd *c, pid_t pid, pid_t pgrp)
{
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i].pid > 0 && !c->nodes[i].group_gone &&
            (c->nodes[i].pid == pid || c->nodes[i].pid == pgrp))
            return i;
    return -1;
}

int ckh__cmd_node_of_pid_locked(const struct ckh__cmd *c, pid_t pid)
{
    if (pid <= 0)
        return -1;
    pid_t ppid = 0, pgrp = 0;
    int node = -1;
    /* Fast path, one system call: its process group (every process a node
     * starts stays in it unless it makes its own). */
    pid_t g = getpgid(pid);
    if (g > 0)
        node = node_with(c, pid, g);
    /* Else its parents (a process that made its own group), from /proc. */
    for (int depth = 0; depth < 32 && pid > 1 && node < 0; depth++) {
        if (!stat_of(pid, &ppid, &pgrp))
            break;
        node = node_with(c, pid, pgrp);
        pid = ppid;
    }
    return node;
}

int ckh__cmd_node_of_pid(void *ctx, pid_t pid)
{
    struct ckh__cmd_mount *m = ctx;
    struct ckh__cmd *c = m->c;
    if (m->verify || pid <= 0)
        return -1;
    pthread_mutex_lock(&c->lock);
    int node = ckh__cmd_node_of_pid_locked(c, pid);
    pthread_mutex_unlock(&c->lock);
    return node;
}

/* ---- killing ---- */

void ckh__cmd_kill_locked(struct ckh__cmd *c, int i, const char *why)
{
    struct ckh__cmd_node *nd = &c->nodes[i];
    if (nd->pid <= 0 || nd->group_gone)
        return;
    if (!nd->killed_why && !nd->reaped)
        nd->killed_why = why;
    kill(-nd->pid, SIGKILL);
}

/* Reaps what node i's group has left (lock held): the root's status, and
 * every other member (ckh is their subreaper). */
static void reap_node(struct ckh__cmd *c, int i)
{
    struct ckh__cmd_node *nd = &c->nodes[i];
    if (nd->pid <= 0 || nd->group_gone)
        return;
    for (;;) {
        int st = 0;
        /* What the group's exited processes wrote was queued before they
         * exited: read it while they are still there to look up. */
        ckh__cmd_outside_poll(c->outside);
        pid_t r = waitpid(-nd->pid, &st, WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (r != nd->pid)
            continue;
        nd->reaped = true;
        if (nd->killed_why) {
            nd->end = CKH__CMD_KILLED;
        } else if (WIFEXITED(st)) {
            nd->end = CKH__CMD_EXITED;
            nd->exit_status = WEXITSTATUS(st);
        } else {
            nd->end = CKH__CMD_SIGNALED;
            nd->term_sig = WTERMSIG(st);
        }
        /* A node's processes end with its root. */
        kill(-nd->pid, SIGKILL);
    }
    if (nd->reaped && kill(-nd->pid, 0) != 0 && errno == ESRCH) {
        nd->group_gone = true;
        if (nd->pidfd >= 0)
            close(nd->pidfd);
        nd->pidfd = -1;
    }
}

/* The parent of process pid (from /proc/PID/stat), or -1. */
static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    int ppid;
    char state;
    return rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 ? (pid_t)ppid : -1;
}

/* A process a node left outside its process group (a daemon's setsid and
 * double fork) becomes ckh's child when its parent dies, ckh being the
 * job's subreaper (PR_SET_CHILD_SUBREAPER). Once every node's group is
 * gone, any child still there is such a stray: each is killed and reaped,
 * until none is left or until `until`. */
/* This process's children (those of each of its threads, a stray being
 * reparented to one of them) from /proc/self/task/TID/children: a file
 * per thread instead of /proc/PID/stat of every process of the machine
 * (the crash explorer asks once per state). At most cap into out, *n of
 * them; false where the kernel has no such files (then scan /proc). */
static bool children_of_self(pid_t *out, size_t cap, size_t *n)
{
    char path[96], buf[4096];
    *n = 0;
    snprintf(path, sizeof path, "/proc/self/task/%ld/children", (long)syscall(SYS_gettid));
    if (access(path, R_OK) != 0) /* the calling thread's own: absent only without kernel support */
        return false;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < cap) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%.20s/children", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* that thread ended meanwhile */
        ssize_t got = read(fd, buf, sizeof buf - 1);
        close(fd);
        buf[got > 0 ? got : 0] = '\0';
        for (char *p = buf, *end; *n < cap; p = end) {
            long pid = strtol(p, &end, 10);
            if (end == p)
                break;
            if (pid > 0)
                out[(*n)++] = (pid_t)pid;
        }
    }
    closedir(d);
    return true;
}

static void reap_strays(uint64_t until)
{
    pid_t self = getpid();
    for (;;) {
        pid_t found[64], kids[64];
        size_t n = 0, nkids = 0;
        if (children_of_self(kids, sizeof kids / sizeof kids[0], &nkids)) {
            for (size_t k = 0; k < nkids && n < sizeof found / sizeof found[0]; k++) {
                if (ckh__warm_is_launcher(kids[k]))
                    continue;
                kill(kids[k], SIGKILL);
                found[n++] = kids[k];
            }
        } else {
            DIR *d = opendir("/proc");
            struct dirent *e;
            while (d && (e = readdir(d)) != NULL && n < sizeof found / sizeof found[0]) {
                char *end;
                long pid = strtol(e->d_name, &end, 10);
                if (*end || pid <= 0 || parent_of((pid_t)pid) != self || ckh__warm_is_launcher((pid_t)pid))
                    continue;
                kill((pid_t)pid, SIGKILL);
                found[n++] = (pid_t)pid;
            }
            if (d)
                closedir(d);
        }
        for (size_t k = 0; k < n; k++)
            while (waitpid(found[k], NULL, 0) < 0 && errno == EINTR)
                ;
        if (n == 0 || ckh_posix_now_ms() >= until)
            return;
    }
}

void ckh__cmd_kill_all(struct ckh__cmd *c)
{
    uint64_t until = ckh_posix_now_ms() + GROUP_KILL_WAIT_MS;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n; i++)
        ckh__cmd_kill_locked(c, i, "ckh stopped the job");
    for (;;) {
        bool left = false;
        for (int i = 0; i < c->n; i++) {
            reap_node(c, i);
            left |= c->nodes[i].pid > 0 && !c->nodes[i].group_gone;
        }
        if (!left || ckh_posix_now_ms() >= until)
            break;
        pthread_mutex_unlock(&c->lock);
        poll(NULL, 0, 2);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    reap_strays(until);
}

/* ---- waiting for a run ---- */

/* Whether node i failed in this run so far (reaped, not with status 0). */
static bool node_failed(const struct ckh__cmd_node *nd)
{
    return nd->reaped && !(nd->end == CKH__CMD_EXITED && nd->exit_status == 0 && !nd->preempted);
}

/* One look at the run (lock held): reaps, progress, graces, the agent's
 * rule, the time limit. Returns true when every started node is gone. */
static bool look(struct ckh__cmd *c, uint64_t deadline, bool *hung)
{
    uint64_t now = ckh_posix_now_ms();
    bool done = true, failed = false;
    for (int i = 0; i < c->n; i++) {
        struct ckh__cmd_node *nd = &c->nodes[i];
        if (nd->pid <= 0)
            continue;
        reap_node(c, i);
        if (!nd->reaped && ckh__cmd_progress_read(c, i, LOOK_READ_BYTES))
            c->on_progress(c, i);
        if (!nd->reaped && nd->kill_at_ms && now >= nd->kill_at_ms)
            ckh__cmd_kill_locked(c, i, "the sigterm grace ran out");
        failed |= node_failed(nd);
        done &= nd->group_gone;
    }
    c->on_progress(c, -1);
    /* A result file that broke its limit (command_result.c) stops the job. */
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i].result_over)
            for (int k = 0; k < c->n; k++)
                if (c->nodes[k].pid > 0 && !c->nodes[k].reaped)
                    ckh__cmd_kill_locked(c, k, "ckh stopped the job: a result file broke its limit");
    /* torchrun's elastic agent: a failed worker stops every worker. */
    if (failed && c->sc->restart.scope == CKH_SCN_RESTART_ALL)
        for (int i = 0; i < c->n; i++)
            if (c->nodes[i].pid > 0 && !c->nodes[i].reaped)
                ckh__cmd_kill_locked(c, i, "stopped after another node failed (restart.scope: all)");
    if (!done && now >= deadline && !*hung) {
        *hung = true;
        for (int i = 0; i < c->n; i++)
            if (c->nodes[i].pid > 0 && !c->nodes[i].reaped)
                ckh__cmd_kill_locked(c, i, "hang");
    }
    return done;
}

int ckh__cmd_wait_run(struct ckh__cmd *c, bool *hung)
{
    uint64_t timeout_ms = c->sc->job.timeout_ns / 1000000u;
    uint64_t deadline = c->run_t0_ms + (timeout_ms ? timeout_ms : 1);
    uint64_t give_up = 0;
    *hung = false;
    for (;;) {
        if (ckh__cmd_interrupted()) {
            ckh__cmd_kill_all(c);
            return -EINTR;
        }
        pthread_mutex_lock(&c->lock);
        bool done = look(c, deadline, hung);
        pthread_mutex_unlock(&c->lock);
        if (done)
            return 0;
        /* A killed process that never goes (stuck in the kernel) is left
         * behind rather than waited for forever. */
        if (*hung && !give_up)
            give_up = ckh_posix_now_ms() + GROUP_KILL_WAIT_MS;
        if (give_up && ckh_posix_now_ms() >= give_up)
            return ckh__cmd_fail(c, CKH_EINTERNAL, "processes of the job did not end after SIGKILL");
        poll(NULL, 0, WAIT_POLL_MS);
    }
}

/* ---- verify ---- */

int ckh__cmd_run_verify(struct ckh__cmd *c, int node, int *status, char *out, size_t n)
{
    struct envv e = {0};
    char exe[CKH__CMD_PATH_MAX], log[CKH__CMD_PATH_MAX + 64];
    struct ckh__ns_spec ns;
    const char *ns_step = NULL;
    pid_t pid = 0;
    int rc, exec_err = 0;
    *status = -1;
    out[0] = '\0';
    snprintf(log, sizeof log, "%s/verify.%d.%s.log", c->dir, c->run, c->nodes[node].name);
    if ((rc = ckh__cmd_resolve(c, &c->sc->verify, exe, sizeof exe)) != 0 ||
        (rc = build_env(c, -1, node, &e)) != 0 || (rc = ckh__warm_prepare(c, exe, &c->sc->verify, e.v)) != 0)
        goto out;
    ns_spec_of(c, node, &ns);
    rc = c->warm ? ckh__warm_spawn(c, exe, &c->sc->verify, e.v, &ns, log, &pid) : 1;
    if (rc == 1)
        rc = start_process(c, exe, &c->sc->verify, e.v, &ns, log, &pid, &exec_err, &ns_step);
    if (rc)
        goto out;
    if (exec_err) {
        reap_group_now(pid);
        rc = start_failed(c, &c->sc->verify, "verify", exe, exec_err, ns_step);
        goto out;
    }
    uint64_t deadline = ckh_posix_now_ms() + c->sc->job.timeout_ns / 1000000u;
    /* Woken by its exit (a pidfd is readable then), not at the next
     * WAIT_POLL_MS tick: a verify of a few milliseconds (the crash
     * explorer runs one per state) would otherwise wait half a tick more
     * on average. The tick stays for interrupts and the time limit. */
    int pidfd = ckh_posix_pidfd_open(pid);
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            *status = st;
            break;
        }
        if (ckh__cmd_interrupted() || ckh_posix_now_ms() >= deadline || (r < 0 && errno != EINTR))
            break;
        struct pollfd pf = {.fd = pidfd, .events = POLLIN};
        poll(pidfd >= 0 ? &pf : NULL, pidfd >= 0 ? 1 : 0, WAIT_POLL_MS);
    }
    if (pidfd >= 0)
        close(pidfd);
    reap_group_now(pid);
    if (ckh__cmd_interrupted())
        rc = -EINTR;
    ckh__prog_file_last_line(log, out, n);
out:
    env_free(&e);
    return rc;
}
