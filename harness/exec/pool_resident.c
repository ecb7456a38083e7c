/* Resident workers: the pool's loop when a child runs many jobs
 * (struct ckh_pool_config.jobs_per_worker > 1; the contract is in pool.h).
 *
 * Protocol. A worker and the pool share one stream socket. The pool sends
 * a job as its index (u64); the worker runs it with a memory file as the
 * reply descriptor, then answers with one frame: struct frame, then the
 * len bytes the job wrote. The pool shutting down its side (end of file
 * for the worker) tells an idle worker to end; it exits with status 0.
 * A worker also ends by itself after a frame marked FRAME_RETIRE.
 *
 * The pool's side. A slot holds at most one worker, in one state:
 *   empty     no child
 *   idle      a child waiting for a job
 *   busy      a child running job `index` under the job's deadline
 *   retiring  a child that will take no more jobs (it said so, the pool
 *             told it, or its time limit killed it)
 * A job goes to an idle slot, or to an empty one once a worker is forked
 * there. A job run again (pool.h: it ended other than ok in a worker that
 * had run earlier jobs) goes only to an empty slot, so to a fresh worker;
 * an idle slot whose worker ran jobs is retired to make room for it.
 * Once a worker's socket reaches end of file it is reaped; a busy
 * worker's job then ends with the child's wait status (the time limit, a
 * signal, or an exit status, 0 included: it never answered). Every index
 * below `next` is always ended, busy in one slot, or waiting to run again:
 * ended + busy + retries == next.
 *
 * Time limits, the interrupting signals and the end of every child on
 * every return are as in pool.c: SIGTERM, CKH__POOL_TERM_GRACE_MS, then
 * SIGKILL; at the normal end idle workers are told to end and are given
 * the same grace before SIGKILL.
 *
 * Map: the child · slots and jobs · reading frames and reaping · the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/pool_internal.h"
#include "exec/worker.h"

/* One answer, worker to pool. */
struct frame {
    uint64_t index;  /* the job */
    int32_t status;  /* what run returned (CKH_POOL_EXIT_MEM: the memory limit's doing) */
    uint32_t flags;  /* FRAME_* */
    uint64_t len;    /* bytes of the job's answer that follow */
};

enum {
    FRAME_RETIRE = 1, /* the worker ends after this frame */
    FRAME_NEAR = 2,   /* its peak address space came within a quarter of the memory
                         limit: what earlier jobs left in it may have weighed on this one */
};

/* Answers above this are refused as a broken frame (the one-job pool's
 * replies are bounded only by memory; a resident job's answer is small). */
#define FRAME_LEN_MAX (1ull << 30)

/* ---- the child ---- */

/* Reads one job index; 1, 0 at end of file, or -1 on an error. */
static int read_index(int sock, uint64_t *index)
{
    size_t got = 0;
    while (got < sizeof *index) {
        ssize_t r = read(sock, (char *)index + got, sizeof *index - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 && got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

/* Sends the frame of job index: the header, then what the job wrote to
 * mfd. Returns 0 or -errno. */
static int send_frame(int sock, int mfd, uint64_t index, int status, uint32_t flags)
{
    static char chunk[64 * 1024];
    struct stat st;
    if (fstat(mfd, &st) != 0)
        return -errno;
    struct frame h = {.index = index, .status = status, .flags = flags, .len = (uint64_t)st.st_size};
    int rc = ckh_pool_reply(sock, &h, sizeof h);
    for (uint64_t off = 0; rc == 0 && off < h.len;) {
        size_t want = h.len - off < sizeof chunk ? (size_t)(h.len - off) : sizeof chunk;
        ssize_t r = pread(mfd, chunk, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        rc = ckh_pool_reply(sock, chunk, (size_t)r);
        off += (uint64_t)r;
    }
    return rc;
}

/* A worker: jobs until the pool's end of file, a job that ends other than
 * ok, the memory limit within reach, or jobs_per_worker jobs. */
static _Noreturn void worker_main(const struct ckh_pool_config *cfg, int sock, pid_t parent,
                                  const sigset_t *old_mask)
{
    ckh__pool_child_setup(&cfg->limits, parent, old_mask);
    int mfd = memfd_create("ckh-pool-job", MFD_CLOEXEC);
    int st = 0;
    for (uint64_t done = 0;;) {
        uint64_t index;
        int r = read_index(sock, &index);
        if (r <= 0) {
            st = r < 0 ? 3 : 0;
            break;
        }
        /* a job that cannot answer: its worker exits with status 3 */
        if (mfd < 0 || ftruncate(mfd, 0) != 0 || lseek(mfd, 0, SEEK_SET) != 0) {
            st = 3;
            break;
        }
        int js = cfg->ops->run(cfg->ctx, index, mfd);
        bool near = ckh_pool_child_near_mem_limit();
        if (js != 0 && near)
            js = CKH_POOL_EXIT_MEM;
        done++;
        bool retire = js != 0 || near || done >= cfg->jobs_per_worker;
        uint32_t flags = (retire ? FRAME_RETIRE : 0u) | (near ? FRAME_NEAR : 0u);
        if (send_frame(sock, mfd, index, js, flags) != 0) {
            st = 3;
            break;
        }
        if (retire)
            break;
    }
    if (mfd >= 0)
        close(mfd);
    close(sock);
    ckh__worker_exit(st);
}

/* ---- slots and jobs ---- */

enum wstate { W_EMPTY, W_IDLE, W_BUSY, W_RETIRING };

/* One slot and its worker. */
struct worker {
    enum wstate state;  /* see the top of the file */
    pid_t pid;          /* the child (0: empty) */
    int fd;             /* the pool's end of its socket (-1: end of file seen) */
    int pidfd;          /* readable once the child ended (-1: none, poll briefly) */
    uint64_t jobs;      /* jobs it answered */
    uint64_t index;     /* busy: the job */
    bool final;         /* busy: the job's outcome is reported whatever it is */
    uint64_t deadline;  /* busy: monotonic ms past which it is stopped (0: none) */
    bool timed_out;     /* stopped for the job's time limit (SIGTERM sent) */
    uint64_t kill_at;   /* monotonic ms past which a stopped child gets SIGKILL */
    bool killed;        /* SIGKILL sent: the reap may block */
    char *buf;          /* bytes read and not yet taken as a frame */
    size_t len, cap;    /* their count, allocated */
};

struct rpool {
    const struct ckh_pool_config *cfg; /* the caller's */
    struct worker *w;                  /* nslots of them */
    unsigned nslots;                   /* their count */
    unsigned busy;                     /* busy slots */
    uint64_t ended;                    /* jobs whose outcome was reported (or dropped by an
                                          interruption) */
    uint64_t next;                     /* next new job index */
    uint64_t approved;                 /* jobs below this index ops->more allowed */
    bool no_more;                      /* ops->more said no */
    uint64_t *again;                   /* jobs to run again in a fresh worker */
    size_t nagain, again_cap;          /* their count, allocated */
    struct pollfd *pfd;                /* a socket or pidfd per slot, and the signal pipe */
};

static void check_counts(const struct rpool *p)
{
    unsigned busy = 0;
    for (unsigned i = 0; i < p->nslots; i++) {
        busy += p->w[i].state == W_BUSY;
        CKH_ASSERT((p->w[i].state == W_EMPTY) == (p->w[i].pid == 0));
    }
    CKH_ASSERT(busy == p->busy && p->ended + p->busy + p->nagain == p->next);
}

/* Whether job p->next should start; asks ops->more once per index. */
static bool want_more(struct rpool *p)
{
    return ckh__pool_want_more(p->cfg, p->next, &p->approved, &p->no_more);
}

/* Forks a worker into empty slot w. */
static int spawn(struct rpool *p, struct worker *w)
{
    CKH_ASSERT(w->state == W_EMPTY && w->pid == 0);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -errno;
    sigset_t old;
    ckh__pool_block_signals(&old);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (unsigned i = 0; i < p->nslots; i++) { /* the other workers' sockets */
            if (p->w[i].fd >= 0)
                close(p->w[i].fd);
            if (p->w[i].pidfd >= 0)
                close(p->w[i].pidfd);
        }
        worker_main(p->cfg, sv[1], parent, &old);
    }
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return -e;
    }
    memset(w, 0, sizeof *w);
    w->state = W_IDLE;
    w->pid = pid;
    w->fd = sv[0];
    w->pidfd = ckh_posix_pidfd_open(pid);
    return 0;
}

/* Hands job index to idle slot w. A worker that died meanwhile fails the
 * send; its end of file then ends the job as its death. */
static void assign(struct rpool *p, struct worker *w, uint64_t index, bool final)
{
    CKH_ASSERT(w->state == W_IDLE && w->fd >= 0 && w->len == 0);
    w->state = W_BUSY;
    w->index = index;
    w->final = final || w->jobs == 0;
    unsigned wall = p->cfg->limits.wall_s;
    w->deadline = wall ? ckh_posix_now_ms() + (uint64_t)wall * 1000u : 0;
    p->busy++;
    for (;;) {
        ssize_t r = send(w->fd, &index, sizeof index, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        break; /* a short send of 8 bytes on a fresh stream: none */
    }
}

/* Tells w's worker to take no more jobs. */
static void retire(struct worker *w)
{
    CKH_ASSERT(w->state != W_EMPTY);
    if (w->state != W_BUSY)
        w->state = W_RETIRING;
    if (w->fd >= 0)
        shutdown(w->fd, SHUT_WR);
}

/* Slots that are empty or will be: where a fresh worker can start. */
static size_t fresh_room(const struct rpool *p)
{
    size_t n = 0;
    for (unsigned i = 0; i < p->nslots; i++)
        n += p->w[i].state == W_EMPTY || p->w[i].state == W_RETIRING;
    return n;
}

/* Gives the free slots jobs: the jobs to run again to empty slots (fresh
 * workers), new ones while ops->more allows; an idle worker is retired
 * when the jobs to run again outnumber the slots that are or will be
 * empty. */
static int fill(struct rpool *p)
{
    for (unsigned i = 0; i < p->nslots; i++) {
        struct worker *w = &p->w[i];
        if (w->state == W_BUSY || w->state == W_RETIRING)
            continue;
        bool again = w->state == W_EMPTY && p->nagain > 0;
        if (w->state == W_IDLE && p->nagain > fresh_room(p)) {
            retire(w);
            continue;
        }
        if (!again && !want_more(p))
            continue;
        if (w->state == W_EMPTY) {
            int rc = spawn(p, w);
            if (rc)
                return rc;
        }
        uint64_t index = again ? p->again[--p->nagain] : p->next++;
        assign(p, w, index, again);
    }
    check_counts(p);
    return 0;
}

/* ---- reading frames and reaping ---- */

/* Job w->index ended with r (near: its worker's peak came near the memory
 * limit): queued to run again, or reported (also when there is no memory
 * to queue it). */
static void job_ended(struct rpool *p, struct worker *w, const struct ckh_pool_result *r, bool near)
{
    CKH_ASSERT(w->state == W_BUSY && p->busy > 0);
    /* A terminal's ^C reaches the workers too: their death is the
     * interruption's, not a result. */
    bool interrupted = ckh_pool_interrupted() && r->status == CKH_POOL_SIGNALED;
    bool again = !w->final && !interrupted && (r->status != CKH_POOL_OK || near) &&
                 r->status != CKH_POOL_TIME_LIMIT;
    p->busy--;
    w->state = W_RETIRING;
    if (again && p->nagain == p->again_cap) {
        size_t nc = p->again_cap ? p->again_cap * 2 : 8;
        uint64_t *nv = realloc(p->again, nc * sizeof *nv);
        if (nv) {
            p->again = nv;
            p->again_cap = nc;
        }
        again = nv != NULL;
    }
    if (again) {
        p->again[p->nagain++] = w->index;
        return;
    }
    p->ended++;
    if (p->cfg->ops->done && !interrupted)
        p->cfg->ops->done(p->cfg->ctx, w->index, r);
}

/* Takes a whole frame off w's bytes, if there is one. A frame that is
 * not the busy job's answer stops the worker (SIGKILL): its job ends as
 * that death. */
static void take_frame(struct rpool *p, struct worker *w)
{
    struct frame h;
    if (w->len < sizeof h)
        return;
    memcpy(&h, w->buf, sizeof h);
    bool ok = w->state == W_BUSY && h.index == w->index && h.len <= FRAME_LEN_MAX && h.status >= 0;
    if (!ok) {
        kill(w->pid, SIGKILL);
        w->killed = true; /* the reap may block */
        w->len = 0;
        return;
    }
    if (w->len - sizeof h < h.len)
        return;
    struct ckh_pool_result r = {.status = ckh__pool_exit_status(h.status, &p->cfg->limits),
                                .code = h.status, .data = w->buf + sizeof h, .len = (size_t)h.len};
    job_ended(p, w, &r, h.flags & FRAME_NEAR);
    w->jobs++;
    size_t used = sizeof h + (size_t)h.len;
    memmove(w->buf, w->buf + used, w->len - used);
    w->len -= used;
    /* answered just past its deadline: SIGTERM is on its way, no job may
     * start there (and SIGKILL follows the grace as for a busy one) */
    w->state = (h.flags & FRAME_RETIRE) || w->timed_out ? W_RETIRING : W_IDLE;
    if (w->timed_out)
        retire(w);
}

/* Reads what w's worker sent; at end of file closes its socket. */
static int read_worker(struct rpool *p, struct worker *w)
{
    CKH_ASSERT(w->pid > 0);
    size_t had = w->len;
    int rc = ckh__pool_read_into(&w->fd, &w->buf, &w->len, &w->cap);
    if (rc == 0 && w->len > had)
        take_frame(p, w);
    return rc;
}

static void empty_slot(struct worker *w)
{
    if (w->fd >= 0)
        close(w->fd);
    if (w->pidfd >= 0)
        close(w->pidfd);
    free(w->buf);
    memset(w, 0, sizeof *w);
    w->state = W_EMPTY;
    w->fd = w->pidfd = -1;
}

/* Reaps w's child if it ended (blocking once it got SIGKILL); a busy one's
 * job ends as the child did. */
static void try_reap(struct rpool *p, struct worker *w)
{
    CKH_ASSERT(w->pid > 0 && w->fd < 0);
    int st;
    pid_t r;
    do
        r = waitpid(w->pid, &st, w->killed ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return;
    if (w->state == W_BUSY) {
        struct ckh_pool_result res = {.data = w->buf, .len = 0};
        if (r < 0) {
            res.status = CKH_POOL_EXITED; /* cannot happen: the child is ours */
            res.code = -1;
        } else if (w->timed_out) {
            res.status = CKH_POOL_TIME_LIMIT;
        } else if (WIFSIGNALED(st)) {
            res.status = CKH_POOL_SIGNALED;
            res.code = WTERMSIG(st);
        } else { /* it exited without answering: never ok, whatever the status */
            res.code = WEXITSTATUS(st);
            res.status = res.code == CKH_POOL_EXIT_MEM && p->cfg->limits.mem_bytes ? CKH_POOL_MEM_LIMIT
                                                                                   : CKH_POOL_EXITED;
        }
        job_ended(p, w, &res, false);
    }
    empty_slot(w);
}

/* Stops every worker and reaps it: the end of its socket, and SIGTERM
 * with term; up to the grace period to end, then SIGKILL.
 * Busy jobs end without their done call. */
static void stop_all(struct rpool *p, bool term)
{
    for (unsigned i = 0; i < p->nslots; i++) {
        struct worker *w = &p->w[i];
        if (!w->pid)
            continue;
        if (w->fd >= 0)
            shutdown(w->fd, SHUT_WR);
        if (term)
            kill(w->pid, SIGTERM);
    }
    uint64_t until = ckh_posix_now_ms() + CKH__POOL_TERM_GRACE_MS;
    for (;;) {
        bool left = false;
        for (unsigned i = 0; i < p->nslots; i++) {
            struct worker *w = &p->w[i];
            if (!w->pid)
                continue;
            pid_t r = waitpid(w->pid, NULL, WNOHANG);
            if (r == w->pid || (r < 0 && errno != EINTR)) {
                p->busy -= w->state == W_BUSY;
                p->ended += w->state == W_BUSY;
                empty_slot(w);
            } else {
                left = true;
            }
        }
        if (!left || ckh_posix_now_ms() >= until)
            break;
        poll(NULL, 0, 10);
    }
    for (unsigned i = 0; i < p->nslots; i++) {
        struct worker *w = &p->w[i];
        if (!w->pid)
            continue;
        kill(w->pid, SIGKILL);
        while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        p->busy -= w->state == W_BUSY;
        p->ended += w->state == W_BUSY;
        empty_slot(w);
    }
}

/* ---- the loop ---- */

/* The deadlines of w: SIGTERM at the job's, SIGKILL after the grace. */
static void enforce_deadline(struct worker *w, uint64_t now)
{
    if (w->state == W_BUSY && w->deadline && now >= w->deadline && !w->timed_out) {
        kill(w->pid, SIGTERM);
        w->timed_out = true;
        w->kill_at = now + CKH__POOL_TERM_GRACE_MS;
    }
    if (w->timed_out && !w->killed && now >= w->kill_at) {
        kill(w->pid, SIGKILL);
        w->killed = true;
    }
}

static int min_timeout(int t, uint64_t ms)
{
    int m = (int)(ms > 60000 ? 60000 : ms);
    return t >= 0 && t < m ? t : m;
}

/* One round: waits for frames, ends of file, the self-pipe or a deadline. */
static int poll_round(struct rpool *p)
{
    unsigned n = 0;
    int timeout = -1, rc = 0;
    bool reaped = false; /* a slot emptied: fill it before waiting */
    uint64_t now = ckh_posix_now_ms();
    for (unsigned i = 0; i < p->nslots; i++) {
        struct worker *w = &p->w[i];
        if (!w->pid)
            continue;
        enforce_deadline(w, now);
        if (w->timed_out)
            timeout = min_timeout(timeout, 10);
        else if (w->state == W_BUSY && w->deadline)
            timeout = min_timeout(timeout, w->deadline > now ? w->deadline - now : 0);
        if (w->fd >= 0) {
            p->pfd[n++] = (struct pollfd){.fd = w->fd, .events = POLLIN};
            continue;
        }
        try_reap(p, w); /* end of file seen: reap it, or wait for its end */
        reaped |= !w->pid;
        if (w->pid && w->pidfd >= 0)
            p->pfd[n++] = (struct pollfd){.fd = w->pidfd, .events = POLLIN};
        else if (w->pid)
            timeout = min_timeout(timeout, 2);
    }
    if (reaped)
        return 0;
    p->pfd[n++] = (struct pollfd){.fd = ckh__pool_signal_fd(), .events = POLLIN}; /* -1: ignored */
    CKH_ASSERT(n <= p->nslots + 1 && n + (timeout >= 0) > 1); /* a worker to wait for */
    if (poll(p->pfd, n, timeout) < 0 && errno != EINTR)
        return -errno;
    for (unsigned i = 0; i < p->nslots && rc == 0; i++) {
        struct worker *w = &p->w[i];
        if (!w->pid || w->fd < 0)
            continue;
        for (unsigned k = 0; k + 1 < n && rc == 0; k++)
            if (p->pfd[k].fd == w->fd && p->pfd[k].revents) {
                rc = read_worker(p, w);
                if (rc == 0 && w->fd < 0)
                    try_reap(p, w);
                break;
            }
    }
    return rc;
}

int ckh__pool_run_resident(const struct ckh_pool_config *cfg)
{
    CKH_ASSERT(cfg && cfg->ops && cfg->ops->run && cfg->jobs_per_worker > 1);
    struct rpool p = {.cfg = cfg, .nslots = cfg->workers ? cfg->workers : 1};
    p.w = calloc(p.nslots, sizeof *p.w);
    p.pfd = calloc(p.nslots + 1, sizeof *p.pfd);
    int rc = p.w && p.pfd ? 0 : CKH_ENOMEM;
    for (unsigned i = 0; p.w && i < p.nslots; i++)
        p.w[i].fd = p.w[i].pidfd = -1;
    while (rc == 0) {
        if (ckh_pool_interrupted()) {
            rc = -EINTR;
            break;
        }
        rc = fill(&p);
        if (rc || (p.busy == 0 && p.nagain == 0 && !want_more(&p)))
            break;
        rc = poll_round(&p);
    }
    if (p.w)
        stop_all(&p, rc != 0);
    CKH_ASSERT(!p.w || (p.busy == 0 && (rc != 0 || p.ended == p.next)));
    free(p.again);
    free(p.pfd);
    free(p.w);
    return rc;
}
