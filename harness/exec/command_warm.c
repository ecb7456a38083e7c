/* Warm starts of a command job's Python programs (exec/command_warm.h;
 * the launcher's side and its protocol: tools/ckh_warm.py).
 *
 * Map: the set · which programs a launcher serves · starting a launcher ·
 * starting a program from it.
 *
 * Process model. A launcher is the set owner's child, the leader of its
 * own process group (so no node's group and no terminal signal reaches
 * it), killed with its owner (PR_SET_PDEATHSIG). Ahead of each start it
 * forks a middle process that forks a spare process and exits at once:
 * the spare is then adopted by the nearest child subreaper among its
 * ancestors, which is the set's owner (made one by
 * ckh__warm_set_create), and waits in the launcher's process group for
 * its request; a start hands it the request and answers its pid, so no
 * fork is on a start's way. The spare then makes its own process group.
 * From there on ckh waits for it, kills its group and reaps it exactly as
 * a process it forked (exec/command_proc.c). The stray reaper of
 * command_proc.c leaves launchers alone (ckh__warm_is_launcher).
 */
#include "exec/command_warm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
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
#include "exec/tmpdir.h"

/* tools/ckh_warm.py, built into ckh (cmake/embed.cmake). */
extern const unsigned char ckh__warm_py[];
extern const size_t ckh__warm_py_len;

#define MAX_LAUNCHERS 8
#define SPAWN_ANSWER_MS 30000   /* a launcher that does not answer a start by then is dropped */
#define READY_DEFAULT_MS 120000 /* a launcher's start-up bound when job.timeout is none */

/* ---- the set ---- */

enum launcher_state { L_UP, L_COLD };

struct launcher {
    char *key;               /* interpreter, options, script, folder (owned) */
    enum launcher_state state;
    pid_t pid;               /* the launcher (0: none) */
    int fd;                  /* ckh's end of its channel (-1: none) */
    size_t script_at;        /* the script's index in argv */
    char log[CKH__CMD_PATH_MAX]; /* what it printed */
};

struct ckh__warm_set {
    char dir[CKH__CMD_PATH_MAX - 64]; /* room for the names below it */
    bool required;
    pid_t owner;             /* the process the set belongs to */
    int subreaper_was;       /* PR_GET_CHILD_SUBREAPER before */
    bool source_written;     /* dir/ckh_warm.py is there */
    struct launcher l[MAX_LAUNCHERS];
    size_t n;
    uint64_t warm, cold;     /* starts */
    char note[320];          /* the first reason for a cold start */
};

/* The set of this process (one at a time), for ckh__warm_is_launcher. */
static struct ckh__warm_set *current;

int ckh__warm_set_create(const char *dir, bool required, struct ckh__warm_set **out, char *err, size_t errlen)
{
    *out = NULL;
    struct ckh__warm_set *s = calloc(1, sizeof *s);
    if (!s)
        return ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    int rc = ckh_tmp_mkdirs(s->dir);
    if (rc) {
        free(s);
        return ckh_errf(err, errlen, CKH_EINTERNAL, "cannot create %s: %s", dir, strerror(-rc));
    }
    s->required = required;
    s->owner = getpid();
    prctl(PR_GET_CHILD_SUBREAPER, &s->subreaper_was);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    for (size_t i = 0; i < MAX_LAUNCHERS; i++)
        s->l[i].fd = -1;
    current = s;
    *out = s;
    return 0;
}

static void launcher_end(struct launcher *l)
{
    if (l->fd >= 0)
        close(l->fd); /* EOF: the launcher exits */
    l->fd = -1;
    if (l->pid > 0) {
        /* The launcher and its spare (ckh's child too, in the launcher's group). */
        kill(-l->pid, SIGKILL);
        kill(l->pid, SIGKILL);
        for (;;) {
            pid_t r = waitpid(-l->pid, NULL, 0);
            if (r > 0 || (r < 0 && errno == EINTR))
                continue;
            break;
        }
    }
    l->pid = 0;
}

void ckh__warm_set_destroy(struct ckh__warm_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        launcher_end(&s->l[i]);
        free(s->l[i].key);
    }
    prctl(PR_SET_CHILD_SUBREAPER, s->subreaper_was);
    if (current == s)
        current = NULL;
    free(s);
}

void ckh__warm_set_counts(const struct ckh__warm_set *s, uint64_t *warm, uint64_t *cold, char *note, size_t n)
{
    *warm = s ? s->warm : 0;
    *cold = s ? s->cold : 0;
    if (n)
        snprintf(note, n, "%s", s ? s->note : "");
}

bool ckh__warm_is_launcher(pid_t pid)
{
    if (!current || current->owner != getpid() || pid <= 0)
        return false;
    pid_t group = getpgid(pid); /* a spare stays in its launcher's group until it is asked for */
    for (size_t i = 0; i < current->n; i++)
        if (current->l[i].pid > 0 && (current->l[i].pid == pid || current->l[i].pid == group))
            return true;
    return false;
}

/* A program starts cold: counted, and the first reason kept. Returns the
 * code for the caller: 1 (start it cold), or CKH_EINVAL with c->err when
 * the set is required. */
static int go_cold(struct ckh__cmd *c, const char *why)
{
    struct ckh__warm_set *s = c->warm;
    if (s->required)
        return ckh__cmd_fail(c, CKH_EINVAL, "--start warm: %s", why);
    if (!s->note[0])
        snprintf(s->note, sizeof s->note, "%.*s", (int)sizeof s->note - 1, why);
    return 1;
}

/* ---- which programs a launcher serves ---- */

static bool is_python(const char *argv0)
{
    const char *b = strrchr(argv0, '/');
    b = b ? b + 1 : argv0;
    if (strncmp(b, "python", 6) != 0)
        return false;
    for (const char *p = b + 6; *p; p++)
        if (!(*p >= '0' && *p <= '9') && *p != '.')
            return false;
    return true;
}

bool ckh__warm_serves(const struct ckh_scn_command *cmd, size_t *script_at, char *why, size_t n)
{
    if (!cmd->argc || !is_python(cmd->argv[0])) {
        snprintf(why, n, "%s is not a Python interpreter", cmd->argc ? cmd->argv[0] : "(no program)");
        return false;
    }
    for (size_t a = 1; a < cmd->argc; a++) {
        const char *o = cmd->argv[a];
        if (o[0] != '-' || !strcmp(o, "-")) {
            if (!strcmp(o, "-"))
                break;
            *script_at = a;
            return true;
        }
        if (!strcmp(o, "--")) {
            if (a + 1 < cmd->argc && strcmp(cmd->argv[a + 1], "-") != 0) {
                *script_at = a + 1;
                return true;
            }
            break;
        }
        if (o[1] == '-') {
            snprintf(why, n, "the interpreter option %s is not supported by the warm start", o);
            return false;
        }
        for (const char *f = o + 1; *f; f++) {
            if (*f == 'W' || *f == 'X') { /* takes the rest, or the next argument */
                if (!f[1])
                    a++;
                break;
            }
            if (*f == 'm' || *f == 'c') {
                snprintf(why, n, "%s runs %s, which starts cold (the warm start runs a script file)",
                         cmd->argv[0], *f == 'm' ? "a module with -m" : "a command with -c");
                return false;
            }
            if (!strchr("bBdEIOPqsSuvx", *f)) {
                snprintf(why, n, "the interpreter option -%c is not supported by the warm start", *f);
                return false;
            }
        }
    }
    snprintf(why, n, "%s runs no script file (the warm start runs one)", cmd->argv[0]);
    return false;
}

/* ---- starting a launcher ---- */

/* The variables that differ from one start to the next (exec/command_proc.c,
 * build_env): a launcher never sees them; each start gets its own. */
static bool per_start(const struct ckh__cmd *c, const char *entry)
{
    static const char *const names[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                        "MASTER_PORT", "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE",
                                        "TORCHELASTIC_RESTART_COUNT", "TMPDIR"};
    size_t len = strcspn(entry, "=");
    for (size_t i = 0; i < c->sc->job.nenv; i++)
        if (strlen(c->sc->job.env[i].key) == len && !strncmp(entry, c->sc->job.env[i].key, len))
            return false; /* job.env's: the same in every start */
    if (!strncmp(entry, "CKH_", 4))
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(entry, names[i], len))
            return true;
    return false;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The launcher's source into the set's folder (once). */
static int write_source(struct ckh__warm_set *s, char *path, size_t n)
{
    snprintf(path, n, "%s/ckh_warm.py", s->dir);
    if (s->source_written)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = write_all(fd, ckh__warm_py, ckh__warm_py_len) ? -errno : 0;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    s->source_written = rc == 0;
    return rc;
}

/* The last non-empty line of the file at path (why a launcher ended). */
static void last_line_of(const char *path, char *out, size_t n)
{
    char buf[2048];
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    ssize_t r = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (r <= 0)
        return;
    buf[r] = '\0';
    while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' ' || buf[r - 1] == '\r'))
        buf[--r] = '\0';
    char *nl = strrchr(buf, '\n');
    snprintf(out, n, "%.*s", (int)n - 1, nl ? nl + 1 : buf);
}

/* Reads one line from fd into buf within ms milliseconds (ckh's
 * interruption ends the wait). 0, or -1 (EOF, error, time out). */
static int read_line(int fd, char *buf, size_t n, uint64_t ms)
{
    size_t got = 0;
    uint64_t until = ckh_posix_now_ms() + ms;
    while (got + 1 < n) {
        uint64_t now = ckh_posix_now_ms();
        if (now >= until || ckh__cmd_interrupted())
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        uint64_t left = until - now;
        int r = poll(&p, 1, left > 100 ? 100 : (int)left);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0)
            continue;
        ssize_t k = read(fd, buf + got, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        if (buf[got] == '\n') {
            buf[got] = '\0';
            return 0;
        }
        got++;
    }
    return -1;
}

/* The launcher between fork and exec: async-signal-safe calls only (as
 * exec/command_proc.c's child). */
static _Noreturn void launcher_exec(const char *exe, char *const *argv, char *const *envp, const char *cwd,
                                    int in_fd, int out_fd, int chan, pid_t parent)
{
    if (!ckh__cmd_child_prepare(parent, cwd, in_fd, out_fd))
        _exit(127);
    if (chan == 3 ? fcntl(3, F_SETFD, 0) != 0 : dup2(chan, 3) < 0)
        _exit(127);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
        for (int fd = 4; fd < 4096; fd++)
            close(fd);
    execve(exe, argv, envp);
    _exit(127);
}

/* Starts launcher l of cmd; on success l->state is L_UP. Returns 0, or a
 * reason in why (the program starts cold). */
static int launcher_start(struct ckh__cmd *c, struct launcher *l, const char *exe,
                          const struct ckh_scn_command *cmd, char *const *envp, char *why, size_t wn)
{
    struct ckh__warm_set *s = c->warm;
    char src[CKH__CMD_PATH_MAX + 32];
    size_t ne = 0;
    for (char *const *e = envp; *e; e++)
        ne++;
    char **env = calloc(ne + 2, sizeof *env);
    const char **argv = calloc(cmd->argc + 4, sizeof *argv);
    char tmp[CKH__CMD_PATH_MAX], tmpdir[CKH__CMD_PATH_MAX + 16];
    int sv[2] = {-1, -1}, in_fd = -1, out_fd = -1, rc = -1;
    pid_t p = -1;
    if (!env || !argv) {
        snprintf(why, wn, "out of memory");
        goto out;
    }
    if (write_source(s, src, sizeof src) != 0) {
        snprintf(why, wn, "cannot write the launcher's source into %.200s: %s", s->dir, strerror(errno));
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (!per_start(c, envp[i]))
            env[k++] = envp[i];
    snprintf(tmp, sizeof tmp, "%s/tmp%zu", s->dir, (size_t)(l - s->l));
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
    bool own_tmpdir = true;
    for (size_t i = 0; i < c->sc->job.nenv; i++)
        own_tmpdir = own_tmpdir && strcmp(c->sc->job.env[i].key, "TMPDIR") != 0;
    if (own_tmpdir) {
        env[k++] = tmpdir;
        ckh_tmp_mkdirs(tmp);
    }
    /* PYTHON [options] ckh_warm.py 3 SCRIPT */
    size_t a = 0;
    for (size_t i = 0; i < l->script_at; i++)
        argv[a++] = cmd->argv[i];
    argv[a++] = src;
    argv[a++] = "3";
    argv[a++] = cmd->argv[l->script_at];
    snprintf(l->log, sizeof l->log, "%s/launcher%zu.log", s->dir, (size_t)(l - s->l));
    out_fd = open(l->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out_fd < 0 || in_fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(why, wn, "cannot start its launcher: %s", strerror(errno));
        goto out;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t parent = getpid();
    p = fork();
    if (p == 0)
        launcher_exec(exe, (char *const *)argv, env, c->cwd, in_fd, out_fd, sv[1], parent);
    int fe = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p < 0) {
        snprintf(why, wn, "cannot start its launcher: fork: %s", strerror(fe));
        goto out;
    }
    setpgid(p, p);
    l->pid = p;
    l->fd = sv[0];
    sv[0] = -1;
    close(sv[1]);
    sv[1] = -1;
    uint64_t limit = c->sc->job.timeout_ns ? c->sc->job.timeout_ns / 1000000u : READY_DEFAULT_MS;
    char line[600];
    if (read_line(l->fd, line, sizeof line, limit) != 0) {
        char said[300];
        last_line_of(l->log, said, sizeof said);
        snprintf(why, wn, "the launcher of %s did not start%s%s", cmd->argv[l->script_at], said[0] ? ": " : "",
                 said[0] ? said : (ckh__cmd_interrupted() ? " (interrupted)" : " within job.timeout"));
        goto out;
    }
    if (strncmp(line, "ready ", 6) != 0) {
        snprintf(why, wn, "the launcher of %.100s cannot serve it: %.*s", cmd->argv[l->script_at],
                 (int)wn / 2, !strncmp(line, "cold ", 5) ? line + 5 : line);
        goto out;
    }
    l->state = L_UP;
    rc = 0;
out:
    if (rc != 0)
        launcher_end(l);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (in_fd >= 0)
        close(in_fd);
    if (out_fd >= 0)
        close(out_fd);
    free(env);
    free(argv);
    return rc;
}

/* The launcher of cmd (NULL: none may be had; why says why). */
static struct launcher *launcher_for(struct ckh__cmd *c, const char *exe, const struct ckh_scn_command *cmd,
                                     char *const *envp, char *why, size_t wn)
{
    struct ckh__warm_set *s = c->warm;
    size_t at = 0;
    if (!ckh__warm_serves(cmd, &at, why, wn))
        return NULL;
    char key[CKH__CMD_PATH_MAX * 3];
    size_t used = (size_t)snprintf(key, sizeof key, "%s|%s", exe, c->cwd);
    for (size_t i = 1; i <= at && used < sizeof key; i++)
        used += (size_t)snprintf(key + used, sizeof key - used, "|%s", cmd->argv[i]);
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->l[i].key, key) != 0)
            continue;
        if (s->l[i].state == L_UP)
            return &s->l[i];
        snprintf(why, wn, "its launcher could not be used");
        return NULL;
    }
    if (s->n == MAX_LAUNCHERS) {
        snprintf(why, wn, "more than %d programs to keep warm", MAX_LAUNCHERS);
        return NULL;
    }
    struct launcher *l = &s->l[s->n];
    memset(l, 0, sizeof *l);
    l->fd = -1;
    l->state = L_COLD;
    l->script_at = at;
    if (!(l->key = strdup(key))) {
        snprintf(why, wn, "out of memory");
        return NULL;
    }
    s->n++;
    uint64_t t0 = ckh_posix_now_ms();
    int rc = launcher_start(c, l, exe, cmd, envp, why, wn);
    c->run_t0_ms += ckh_posix_now_ms() - t0; /* the launcher's start-up is not the run's */
    return rc == 0 ? l : NULL;
}

int ckh__warm_prepare(struct ckh__cmd *c, const char *exe, const struct ckh_scn_command *cmd, char *const *envp)
{
    char why[400];
    if (!c->warm || launcher_for(c, exe, cmd, envp, why, sizeof why))
        return 0;
    int rc = go_cold(c, why);
    return rc < 0 ? rc : 0;
}

/* ---- starting a program from its launcher ---- */

/* Appends s and its NUL to the request (grown as needed). */
static int put(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s) + 1;
    if (*len + n > *cap) {
        size_t cap2 = (*cap ? *cap * 2 : 4096) + n;
        char *b = realloc(*buf, cap2);
        if (!b)
            return -1;
        *buf = b;
        *cap = cap2;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    return 0;
}

int ckh__warm_spawn(struct ckh__cmd *c, const char *exe, const struct ckh_scn_command *cmd, char *const *envp,
                    const struct ckh__ns_spec *ns, const char *log, pid_t *pid)
{
    char why[400];
    struct ckh__warm_set *s = c->warm;
    if (!s)
        return 1;
    struct launcher *l = launcher_for(c, exe, cmd, envp, why, sizeof why);
    if (!l) {
        int rc = go_cold(c, why);
        s->cold += rc == 1;
        return rc;
    }
    /* reaper, folder, log, the script's index, argc, argv, envc, env, then
     * the namespace: its mode (0: none), the disk's folder, the path, the
     * uid and gid maps (exec/command_ns.h) */
    size_t len = 4, cap = 4096, ne = 0; /* 4: the length, written last */
    char *req = malloc(cap), num[32];
    int bad = req ? 0 : -1;
    snprintf(num, sizeof num, "%d", (int)getpid());
    bad |= put(&req, &len, &cap, num) | put(&req, &len, &cap, c->cwd) | put(&req, &len, &cap, log);
    snprintf(num, sizeof num, "%zu", l->script_at);
    bad |= put(&req, &len, &cap, num);
    snprintf(num, sizeof num, "%zu", cmd->argc);
    bad |= put(&req, &len, &cap, num);
    for (size_t i = 0; i < cmd->argc; i++)
        bad |= put(&req, &len, &cap, cmd->argv[i]);
    for (char *const *e = envp; *e; e++)
        ne++;
    snprintf(num, sizeof num, "%zu", ne);
    bad |= put(&req, &len, &cap, num);
    for (char *const *e = envp; *e; e++)
        bad |= put(&req, &len, &cap, *e);
    snprintf(num, sizeof num, "%d", (int)ns->mode);
    bad |= put(&req, &len, &cap, num) | put(&req, &len, &cap, ns->src) | put(&req, &len, &cap, ns->dst) |
           put(&req, &len, &cap, ns->uid_map) | put(&req, &len, &cap, ns->gid_map);
    if (bad) {
        free(req);
        return ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
    }
    uint32_t body = (uint32_t)(len - 4);
    unsigned char head[4] = {(unsigned char)body, (unsigned char)(body >> 8), (unsigned char)(body >> 16),
                             (unsigned char)(body >> 24)};
    memcpy(req, head, 4);
    char line[600];
    int wrc = write_all(l->fd, req, len);
    free(req);
    if (wrc != 0 || read_line(l->fd, line, sizeof line, SPAWN_ANSWER_MS) != 0 || strncmp(line, "pid ", 4) != 0) {
        char said[300] = "";
        if (wrc == 0 && !strncmp(line, "error ", 6))
            snprintf(said, sizeof said, "%.*s", (int)sizeof said - 1, line + 6);
        else
            last_line_of(l->log, said, sizeof said);
        snprintf(why, sizeof why, "the launcher of %s stopped serving%s%s", cmd->argv[l->script_at],
                 said[0] ? ": " : "", said);
        launcher_end(l);
        l->state = L_COLD;
        int rc = go_cold(c, why);
        s->cold += rc == 1;
        return rc;
    }
    *pid = (pid_t)strtol(line + 4, NULL, 10);
    setpgid(*pid, *pid); /* it does too: whichever comes first, no kill of the group misses it */
    s->warm++;
    return 0;
}
