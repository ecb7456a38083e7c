/* The worker pool (see pool.h for the contract): a child per job here;
 * resident workers (jobs_per_worker > 1) in pool_resident.c, which shares
 * the signals and the child's setup through pool_internal.h.
 *
 * Map: signals (the self-pipe) · the child side (limits, death with the
 * parent, the memory-limit verdict) · the parent side (slots, poll loop,
 * reaping) · descriptions.
 *
 * The parent never blocks in waitpid on a child that may still run: it
 * polls the reply pipes and the self-pipe, reads what arrives, and reaps a
 * child once its pipe reached end of file (WNOHANG, polling briefly while
 * a child that closed its pipe has not yet exited) or once it was killed.
 */
#include "exec/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/pool_internal.h"
#include "exec/worker.h"

#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif

/* ---- signals ---- */

static const int caught_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NCAUGHT (sizeof caught_signals / sizeof caught_signals[0])

static int sig_pipe[2] = {-1, -1};       /* the self-pipe: read end, write end */
static volatile sig_atomic_t sig_caught; /* the last signal caught (0: none) */

static void on_signal(int sig)
{
    int saved = errno;
    sig_caught = sig;
    if (sig_pipe[1] >= 0) {
        char c = (char)sig;
        ssize_t w = write(sig_pipe[1], &c, 1); /* full pipe: a byte is already there */
        (void)w;
    }
    errno = saved;
}

int ckh_pool_signals_install(void)
{
    if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        sig_pipe[0] = sig_pipe[1] = -1;
        return -errno;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NCAUGHT; i++)
        if (sigaction(caught_signals[i], &sa, NULL) != 0)
            return -errno;
    return 0;
}

int ckh_pool_interrupted(void)
{
    return sig_caught;
}

int ckh__pool_signal_fd(void)
{
    return sig_pipe[0];
}

void ckh__pool_block_signals(sigset_t *old)
{
    sigset_t block;
    sigemptyset(&block);
    for (size_t i = 0; i < NCAUGHT; i++)
        sigaddset(&block, caught_signals[i]);
    sigprocmask(SIG_BLOCK, &block, old);
}

void ckh_pool_signals_reset(void)
{
    for (size_t i = 0; i < NCAUGHT; i++)
        signal(caught_signals[i], SIG_DFL);
    sig_caught = 0;
    for (int i = 0; i < 2; i++) {
        if (sig_pipe[i] >= 0)
            close(sig_pipe[i]);
        sig_pipe[i] = -1;
    }
}

bool ckh_pool_mem_limit_supported(void)
{
#ifdef POOL_ASAN
    return false;
#else
    return true;
#endif
}

/* ---- the child side ---- */

static uint64_t child_mem_limit; /* the child's own limit (0: none) */

/* VmPeak of this process in bytes from /proc/self/status (0: unknown).
 * Async-signal-safe: open, read and close only. */
static uint64_t vm_peak_bytes(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    for (char *p = buf; *p; p++) {
        if ((p == buf || p[-1] == '\n') && strncmp(p, "VmPeak:", 7) == 0) {
            uint64_t kb = 0;
            for (p += 7; *p == ' ' || *p == '\t'; p++)
                ;
            for (; *p >= '0' && *p <= '9'; p++)
                kb = kb * 10 + (uint64_t)(*p - '0');
            return kb * 1024;
        }
    }
    return 0;
}

bool ckh_pool_child_near_mem_limit(void)
{
    return child_mem_limit && vm_peak_bytes() >= child_mem_limit - child_mem_limit / 4;
}

bool ckh_pool_child_out_of_memory(const char *message)
{
    if (!child_mem_limit)
        return false;
    return ckh_pool_child_near_mem_limit() ||
           (message && strstr(message, ckh_err_name(CKH_ENOMEM)) != NULL);
}

/* A crash near the memory limit (a NULL from a failed allocation
 * dereferenced, an allocator's abort, a stack that could not grow) is the
 * memory limit's verdict. */
static void on_crash(int sig)
{
    if (ckh_pool_child_near_mem_limit())
        _exit(CKH_POOL_EXIT_MEM);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void child_limits(const struct ckh_pool_limits *lim)
{
    child_mem_limit = 0;
    if (!lim->mem_bytes || !ckh_pool_mem_limit_supported())
        return;
    struct rlimit rl = {.rlim_cur = lim->mem_bytes, .rlim_max = lim->mem_bytes};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return;
    child_mem_limit = lim->mem_bytes;
    static char alt_stack[64 * 1024]; /* the handler runs here after a stack overflow */
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_ONSTACK | SA_NODEFER | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
}

void ckh__pool_child_setup(const struct ckh_pool_limits *lim, pid_t parent, const sigset_t *old_mask)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before the call above */
        _exit(127);
    for (size_t i = 0; i < NCAUGHT; i++)
        signal(caught_signals[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (sig_pipe[0] >= 0) {
        close(sig_pipe[0]);
        close(sig_pipe[1]);
        sig_pipe[0] = sig_pipe[1] = -1;
    }
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    child_limits(lim);
}

/* The child after fork: dies with the parent, default signal actions,
 * limits, the job, then ckh__worker_exit. */
static _Noreturn void child_main(const struct ckh_pool_config *cfg, uint64_t index, int fd,
                                 pid_t parent, const sigset_t *old_mask)
{
    ckh__pool_child_setup(&cfg->limits, parent, old_mask);
    int st = cfg->ops->run(cfg->ctx, index, fd);
    if (st != 0 && ckh_pool_child_near_mem_limit())
        st = CKH_POOL_EXIT_MEM;
    close(fd);
    ckh__worker_exit(st);
}

int ckh_pool_reply(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- the parent side ---- */

#define TERM_GRACE_MS CKH__POOL_TERM_GRACE_MS /* pool_internal.h */

/* One running job. */
struct slot {
    pid_t pid;          /* the child (0: free slot) */
    int fd;             /* read end of its reply pipe (-1: end of file seen) */
    int pidfd;          /* readable once the child ended (-1: none, poll briefly) */
    uint64_t index;     /* the job */
    uint64_t deadline;  /* monotonic ms past which it is stopped (0: none) */
    bool timed_out;     /* stopped for its time limit (SIGTERM sent) */
    uint64_t kill_at;   /* monotonic ms past which a stopped child gets SIGKILL */
    bool killed;        /* SIGKILL sent: the reap may block */
    char *buf;          /* reply bytes so far */
    size_t len;         /* their count */
    size_t cap;         /* allocated */
};

struct pool {
    const struct ckh_pool_config *cfg; /* the caller's */
    struct slot *slots;                /* cfg->workers of them */
    unsigned nslots;                   /* their count */
    unsigned running;                  /* slots in use */
    uint64_t ended;                    /* jobs started and reaped (next == ended + running) */
    uint64_t next;                     /* next job index */
    uint64_t approved;                 /* jobs below this index ops->more allowed */
    bool no_more;                      /* ops->more said no */
    struct pollfd *pfd;                /* a pipe or a pidfd per slot, and the signal pipe;
                                          held here, in memory, so a forked child's leak
                                          check sees it reachable */
};

/* Slots holding a child: must equal p->running. */
static unsigned slots_in_use(const struct pool *p)
{
    unsigned n = 0;
    for (unsigned i = 0; i < p->nslots; i++)
        n += p->slots[i].pid != 0;
    return n;
}

static int start_job(struct pool *p, struct slot *s)
{
    /* a free slot, and a job want_more approved */
    CKH_ASSERT(s->pid == 0 && p->running < p->nslots);
    CKH_ASSERT(p->next < p->cfg->njobs && p->next < p->approved && !p->no_more);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -errno;
    sigset_t old;
    /* Blocked across fork: the child never runs the parent's handler. */
    ckh__pool_block_signals(&old);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        fcntl(fds[1], F_SETFD, 0); /* kept across an exec of a real program */
        child_main(p->cfg, p->next, fds[1], parent, &old);
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return -e;
    }
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->fd = fds[0];
    s->pidfd = ckh_posix_pidfd_open(pid);
    s->index = p->next++;
    unsigned wall = p->cfg->limits.wall_s;
    s->deadline = wall ? ckh_posix_now_ms() + (uint64_t)wall * 1000u : 0;
    p->running++;
    CKH_ASSERT(p->ended + p->running == p->next);
    return 0;
}

bool ckh__pool_want_more(const struct ckh_pool_config *cfg, uint64_t next, uint64_t *approved, bool *no_more)
{
    if (*no_more || next >= cfg->njobs)
        return false;
    if (next < *approved)
        return true;
    if (cfg->ops->more && !cfg->ops->more(cfg->ctx, next))
        *no_more = true;
    else
        *approved = next + 1;
    return !*no_more;
}

int ckh__pool_read_into(int *fd, char **buf, size_t *len, size_t *cap)
{
    CKH_ASSERT(*fd >= 0 && *len <= *cap);
    if (*cap - *len < 4096) {
        size_t nc = *cap ? *cap * 2 : 16384;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return CKH_ENOMEM;
        *buf = nb;
        *cap = nc;
    }
    ssize_t r = read(*fd, *buf + *len, *cap - *len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (r <= 0) {
        close(*fd);
        *fd = -1;
        return 0;
    }
    *len += (size_t)r;
    CKH_ASSERT(*len <= *cap);
    return 0;
}

static int read_reply(struct slot *s)
{
    CKH_ASSERT(s->pid > 0);
    return ckh__pool_read_into(&s->fd, &s->buf, &s->len, &s->cap);
}

static void release(struct pool *p, struct slot *s)
{
    CKH_ASSERT(s->pid > 0 && p->running > 0 && s->index < p->next);
    if (s->fd >= 0)
        close(s->fd);
    if (s->pidfd >= 0)
        close(s->pidfd);
    free(s->buf);
    memset(s, 0, sizeof *s);
    s->fd = s->pidfd = -1;
    p->running--;
    p->ended++;
    CKH_ASSERT(p->ended + p->running == p->next);
}

/* Reaps s's child if it ended (blocking once it got SIGKILL); calls done. */
static void try_reap(struct pool *p, struct slot *s)
{
    CKH_ASSERT(s->pid > 0 && (s->killed ? s->timed_out : true));
    int st;
    pid_t r;
    do
        r = waitpid(s->pid, &st, s->killed ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return;
    CKH_ASSERT(r < 0 || r == s->pid);
    struct ckh_pool_result res = {.data = s->buf, .len = s->len};
    if (r < 0) {
        res.status = CKH_POOL_EXITED; /* cannot happen: the child is ours */
        res.code = -1;
    } else if (s->timed_out) {
        res.status = CKH_POOL_TIME_LIMIT;
    } else if (WIFSIGNALED(st)) {
        res.status = CKH_POOL_SIGNALED;
        res.code = WTERMSIG(st);
    } else {
        res.code = WEXITSTATUS(st);
        res.status = ckh__pool_exit_status(res.code, &p->cfg->limits);
    }
    uint64_t index = s->index;
    /* A terminal's ^C reaches the workers too: their death is the
     * interruption's, not a result. */
    bool interrupted = ckh_pool_interrupted() && res.status == CKH_POOL_SIGNALED;
    if (p->cfg->ops->done && !interrupted)
        p->cfg->ops->done(p->cfg->ctx, index, &res);
    release(p, s);
}

/* Stops and reaps every running child (interrupt and error paths):
 * SIGTERM, up to TERM_GRACE_MS for them to clean up and end, then SIGKILL. */
static void kill_all(struct pool *p)
{
    for (unsigned i = 0; i < p->nslots; i++)
        if (p->slots[i].pid)
            kill(p->slots[i].pid, SIGTERM);
    uint64_t until = ckh_posix_now_ms() + TERM_GRACE_MS;
    for (;;) {
        bool left = false;
        for (unsigned i = 0; i < p->nslots; i++) {
            struct slot *s = &p->slots[i];
            if (!s->pid)
                continue;
            pid_t r = waitpid(s->pid, NULL, WNOHANG);
            if (r == s->pid || (r < 0 && errno != EINTR))
                release(p, s);
            else
                left = true;
        }
        if (!left || ckh_posix_now_ms() >= until)
            break;
        poll(NULL, 0, 10);
    }
    for (unsigned i = 0; i < p->nslots; i++) {
        struct slot *s = &p->slots[i];
        if (!s->pid)
            continue;
        kill(s->pid, SIGKILL);
        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        release(p, s);
    }
}

/* Whether job p->next should start; asks ops->more once per index. */
static bool want_more(struct pool *p)
{
    return ckh__pool_want_more(p->cfg, p->next, &p->approved, &p->no_more);
}

/* One round: waits for replies, the self-pipe or a deadline. */
static int poll_round(struct pool *p, struct pollfd *pfd)
{
    unsigned n = 0;
    int timeout = -1;
    uint64_t now = ckh_posix_now_ms();
    for (unsigned i = 0; i < p->nslots; i++) {
        struct slot *s = &p->slots[i];
        if (!s->pid)
            continue;
        if (s->deadline && now >= s->deadline && !s->timed_out) {
            kill(s->pid, SIGTERM);
            s->timed_out = true;
            s->kill_at = now + TERM_GRACE_MS;
        }
        if (s->timed_out && !s->killed && now >= s->kill_at) {
            kill(s->pid, SIGKILL);
            s->killed = true;
        }
        if (s->timed_out) {
            try_reap(p, s);
            if (s->pid)
                timeout = timeout >= 0 && timeout < 10 ? timeout : 10;
            continue;
        }
        if (s->deadline) {
            uint64_t left = s->deadline - now;
            if (timeout < 0 || left < (uint64_t)timeout)
                timeout = (int)(left > 60000 ? 60000 : left);
        }
        if (s->fd < 0) { /* closed its pipe: reap it, or wait for its end */
            try_reap(p, s);
            if (s->pid && s->pidfd >= 0)
                pfd[n++] = (struct pollfd){.fd = s->pidfd, .events = POLLIN};
            else if (s->pid)
                timeout = timeout >= 0 && timeout < 2 ? timeout : 2;
            continue;
        }
        pfd[n++] = (struct pollfd){.fd = s->fd, .events = POLLIN};
    }
    pfd[n++] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN}; /* -1: ignored */
    CKH_ASSERT(n <= p->nslots + 1 && slots_in_use(p) == p->running);
    if (p->running == 0)
        return 0;
    if (poll(pfd, n, timeout) < 0 && errno != EINTR)
        return -errno;
    for (unsigned i = 0; i < p->nslots; i++) {
        struct slot *s = &p->slots[i];
        if (!s->pid || s->fd < 0)
            continue;
        for (unsigned k = 0; k + 1 < n; k++)
            if (pfd[k].fd == s->fd && pfd[k].revents) {
                int rc = read_reply(s);
                if (rc)
                    return rc;
                if (s->fd < 0)
                    try_reap(p, s);
            }
    }
    return 0;
}

enum ckh_pool_status ckh__pool_exit_status(int code, const struct ckh_pool_limits *lim)
{
    return code == 0 ? CKH_POOL_OK
         : code == CKH_POOL_EXIT_MEM && lim->mem_bytes ? CKH_POOL_MEM_LIMIT
                                                       : CKH_POOL_EXITED;
}

int ckh_pool_run(const struct ckh_pool_config *cfg)
{
    if (!cfg || !cfg->ops || !cfg->ops->run)
        return CKH_EINVAL;
    if (cfg->jobs_per_worker > 1)
        return ckh__pool_run_resident(cfg);
    struct pool p = {.cfg = cfg, .nslots = cfg->workers ? cfg->workers : 1};
    p.slots = calloc(p.nslots, sizeof *p.slots);
    p.pfd = calloc(p.nslots + 1, sizeof *p.pfd);
    int rc = p.slots && p.pfd ? 0 : CKH_ENOMEM;
    for (unsigned i = 0; p.slots && i < p.nslots; i++)
        p.slots[i].fd = p.slots[i].pidfd = -1;
    while (rc == 0) {
        if (ckh_pool_interrupted()) {
            rc = -EINTR;
            break;
        }
        for (unsigned i = 0; rc == 0 && i < p.nslots; i++)
            if (!p.slots[i].pid && want_more(&p))
                rc = start_job(&p, &p.slots[i]);
        CKH_ASSERT(slots_in_use(&p) == p.running && p.ended + p.running == p.next && p.next <= cfg->njobs);
        if (rc || (p.running == 0 && !want_more(&p)))
            break;
        rc = poll_round(&p, p.pfd);
    }
    if (p.slots)
        kill_all(&p);
    CKH_ASSERT(p.running == 0 && p.ended == p.next);
    free(p.pfd);
    free(p.slots);
    return rc;
}

/* ---- descriptions ---- */

void ckh_pool_format_bytes(uint64_t bytes, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && bytes && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, n, "%llu %s", (unsigned long long)bytes, units[u]);
}

void ckh_pool_describe(const struct ckh_pool_result *r, const struct ckh_pool_limits *lim,
                       char *buf, size_t n)
{
    char mem[32];
    switch (r->status) {
    case CKH_POOL_OK: snprintf(buf, n, "exited with status 0"); break;
    case CKH_POOL_EXITED: snprintf(buf, n, "exited with status %d", r->code); break;
    case CKH_POOL_SIGNALED:
        snprintf(buf, n, "killed by signal %d (%s)", r->code, strsignal(r->code));
        break;
    case CKH_POOL_TIME_LIMIT:
        snprintf(buf, n, "time limit %u s reached", lim ? lim->wall_s : 0);
        break;
    case CKH_POOL_MEM_LIMIT:
        ckh_pool_format_bytes(lim ? lim->mem_bytes : 0, mem, sizeof mem);
        snprintf(buf, n, "memory limit %s reached", mem);
        break;
    }
}
