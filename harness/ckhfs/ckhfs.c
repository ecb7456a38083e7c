/* ckhfs: lifetime of a mount, its server thread, the per-request fault
 * hook and the trace (contract in ckhfs.h, design in docs/ARCHITECTURE.md
 * "ckhfs"). The FUSE operations themselves are in ckhfs_ops.c.
 *
 * Serving. libfuse's high-level API (paths, as simfs's ckh_fs takes them)
 * on server threads of the calling process. They run their own loop (poll
 * on the /dev/fuse descriptor and on a wake pipe, then
 * fuse_session_receive_buf / fuse_session_process_buf) so that unmount can
 * stop them without a signal: stopping set, one byte on the pipe, join,
 * then unmount. One thread at a time holds the lead: it receives the next
 * request and serves it, so requests are answered one at a time, in the
 * order the kernel queued them; each holds fs->lock from the hook to the
 * answer. A DELAY verdict does not hold the mount (L1-L4 below).
 *
 * SPECIFICATION: the leader's wait (bench/bench_ckhfs measures it)
 *
 * S1. After answering, the leader asks for the next request without
 *     sleeping for up to SPIN_US. A program that does file operations
 *     back to back sends its next request within microseconds; sleeping
 *     in poll instead costs a wake-up of an idle processor per request
 *     (tens of microseconds on a virtual machine), which made each
 *     rename or unlink several times slower on an idle machine than on a
 *     busy one. Order and answers do not change: one leader, as before.
 * S2. A wait that catches nothing turns the spinning off; a request that
 *     arrives within SPIN_AGAIN_US of the previous answer turns it back
 *     on. A program that computes between its operations therefore costs
 *     at most one SPIN_US wait per burst, never one per request.
 *
 * SPECIFICATION: held requests (tests/test_ckhfs.c "delay" cases)
 *
 * L1. A request the hook delays is held without fs->lock and without the
 *     lead: its thread hands the lead to an idle server thread (a new one
 *     when none is idle), so other callers' requests are received and
 *     done while it waits. Only the delayed request waits; its caller's
 *     own thread waits for the answer, as for a slow disk.
 * L2. Once its delay has passed, the held request takes fs->lock like any
 *     other and is done: it takes effect after every request answered
 *     meanwhile. The trace keeps arrival order (seq); `answered` numbers
 *     the answers, and held_answered is told when a held one is answered.
 * L3. While any request is held, the leader hands the lead over before
 *     serving each request it receives: a request that waits on libfuse's
 *     path locks behind a held one (a rename of the held file, or of a
 *     folder above it) then waits alone. Requests of different callers
 *     may meanwhile be done in an order other than the kernel's; each
 *     caller thread has one request in flight at a time, so each caller's
 *     own sequence is unchanged. With nothing held, service is in the
 *     kernel's order again.
 * L4. A held request whose caller thread has SIGKILL pending (killed by a
 *     fault, job.timeout, an interrupt) or whose mount stops is answered
 *     at once with -EINTR, not done: a process that waits for a FUSE
 *     answer cannot die before it, so a delay never keeps a killed node
 *     alive. The check runs every HOLD_SLICE_MS of the delay.
 * L5. A HOLD verdict holds its request as a DELAY does (L1-L4), and ends
 *     early once cfg.released, asked under fs->lock every HOLD_SLICE_MS,
 *     says so. Each request holds fs->lock from the hook to its answer,
 *     so a request the hook saw before `released` turned true has been
 *     answered when the held one goes on (unless held itself): the held
 *     operation takes effect after it, the order the explorer forces.
 *
 * Callers. Each node gets its own simfs view (ckh_simfs_view_create with
 * that node and no simulator), so pending operations carry the node that
 * issued them and ckh_simfs_crash(disk, node, ...) resolves exactly that
 * node's unsynced state, as in the simulator. Files keep the view of the
 * node that opened them.
 *
 * Unmount order (every path): stop the thread; fuse_unmount (closes the
 * /dev/fuse descriptor, which aborts the connection so that a process
 * still using the mount gets ENOTCONN instead of waiting, then detaches
 * the mount lazily); then make sure from the mount table that nothing is
 * left at the mount point (ckh__ckhfs_unmount_below); then free.
 *
 * Forks. A child forked without exec would keep a copy of the /dev/fuse
 * descriptor, and with it the connection: after unmount, its own I/O on
 * the old mount would wait for a server that is gone instead of failing
 * with ENOTCONN. A pthread_atfork handler closes the descriptors of every
 * mount in such children (exec'd children lose them by O_CLOEXEC).
 *
 * Swapping the disk (ckh_ckhfs_swap_disk; the contract is in ckhfs.h). One
 * mount serves disk after disk: under fs->lock the open handles of the old
 * disk are closed and marked stale (file NULL: their requests answer -EIO,
 * their late releases only free them), the node views go (made again on
 * the new disk at first use), the trace and the numbering start again;
 * then, without fs->lock, the kernel is told to drop the entries of the
 * old root's names (a folder's entry takes those below it) and the root's
 * attributes. Nothing else can be stale: attributes and names not found
 * are never cached, file data never (direct_io). Dropped entries release
 * their inodes (FUSE evicts an unreferenced inode at once), so the next
 * lookup of a name gets a fresh inode, even where a file became a folder.
 *
 * Map: requests | held requests | trace | server threads | forks | mount |
 * unmount | swapping the disk.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckhfs/ckhfs_internal.h"

#define INIT_WAIT_S 10    /* how long mount waits for the kernel's INIT */
#define HOLD_SLICE_MS 20  /* a held request checks its caller and the mount this often (L4) */
#define EXTRA_STACK_BYTES (2u << 20) /* stack of each server thread started for L1 */
#define SPIN_US 50          /* S1: the leader's wait for the next request before it sleeps */
#define SPIN_AGAIN_US 500   /* S2: a request this close behind the last answer resumes spinning */

/* ---------------------------------------------------------------- requests */

struct ckh_fs *ckh__ckhfs_view(struct ckh_ckhfs *fs, int node)
{
    if (node < -1 || node > CKHFS_NODE_MAX)
        node = -1;
    size_t i = (size_t)(node + 1);
    if (i >= fs->nviews) {
        size_t n = fs->nviews ? fs->nviews : 4;
        while (n <= i)
            n *= 2;
        struct ckh_fs **v = realloc(fs->views, n * sizeof(*v));
        if (!v)
            return NULL;
        memset(v + fs->nviews, 0, (n - fs->nviews) * sizeof(*v));
        fs->views = v;
        fs->nviews = n;
    }
    CKH_ASSERT(i < fs->nviews);
    if (!fs->views[i]) {
        struct ckh_simfs_mount m = {.prefix = "/", .disk = fs->cfg.disk};
        if (ckh_simfs_view_create(NULL, node, &m, 1, &fs->views[i]) != 0)
            return NULL;
    }
    return fs->views[i];
}

int ckh__ckhfs_errno(int64_t rc)
{
    if (rc >= 0)
        return 0;
    if (rc > -4096)
        return (int)rc;
    switch ((int)rc) {
    case CKH_ENOMEM:
        return -ENOMEM;
    case CKH_EINVAL:
    case CKH_EESCAPE:
        return -EINVAL;
    case CKH_EUNSUPPORTED:
        return -EOPNOTSUPP;
    case CKH_ENOTFOUND:
        return -ENOENT;
    case CKH_EEXISTS:
        return -EEXIST;
    default:
        return -EIO;
    }
}

/* The process (thread group) of a caller: FUSE reports the calling
 * thread's id, and a multi-threaded program (PyTorch's savers) writes
 * from threads other than its main one. Falls back to tid when the thread
 * is gone. */
static pid_t process_of(pid_t tid)
{
    /* Fast path, one system call that allocates nothing: tgkill(tid, tid,
     * 0) succeeds only when thread tid belongs to thread group tid, i.e.
     * when tid is its process's id (single-threaded callers, and main
     * threads). It checks, sends no signal; EPERM (a caller of another
     * user) falls through to /proc. */
    if (syscall(SYS_tgkill, tid, tid, 0) == 0)
        return tid;
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return tid;
    pid_t tgid = tid;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Tgid:", 5) == 0) {
            tgid = (pid_t)strtol(line + 5, NULL, 10);
            break;
        }
    }
    fclose(f);
    return tgid > 0 ? tgid : tid;
}

static void kill_caller(struct ckh_ckhfs *fs, int node)
{
    if (node >= 0 && fs->cfg.kill_node)
        fs->cfg.kill_node(fs->cfg.ctx, node);
}

static size_t trace_add(struct ckh_ckhfs *fs, const struct ckh_ckhfs_op *op);
static bool hold(struct ckh_ckhfs *fs, pid_t tid, uint32_t ms, const struct ckh_ckhfs_op *op);

int ckh__ckhfs_begin(struct ckhfs_req *r, enum ckh_op_kind kind, const char *path,
                     const char *path2, uint64_t off, uint64_t len)
{
    struct fuse_context *cx = fuse_get_context();
    struct ckh_ckhfs *fs = cx->private_data;
    r->fs = fs;
    r->slot = SIZE_MAX;
    pthread_mutex_lock(&fs->lock);
    pid_t pid = cx->pid > 0 ? process_of(cx->pid) : cx->pid;
    const bool served = fs->cfg.disk != NULL; /* else swapped out: no callback, no ctx */
    int node = served && pid > 0 && fs->cfg.node_of_pid ? fs->cfg.node_of_pid(fs->cfg.ctx, pid) : -1;
    r->op = (struct ckh_ckhfs_op){.seq = ++fs->seq,
                                  .node = node,
                                  .pid = pid,
                                  .kind = kind,
                                  .path = path ? path : "",
                                  .path2 = path2,
                                  .off = off,
                                  .len = len,
                                  .result = 0};
    r->act = (struct ckh_ckhfs_action){.verdict = CKH_CKHFS_GO};
    if (!served)
        return -EIO; /* no disk served (ckh_ckhfs_swap_disk with NULL): neither hook nor trace */
    if (fs->cfg.hook)
        fs->cfg.hook(fs->cfg.ctx, &r->op, &r->act);
    if (fs->cfg.keep_trace)
        r->slot = trace_add(fs, &r->op); /* its place: arrival order, even when held */
    switch (r->act.verdict) {
    case CKH_CKHFS_ERRNO:
        return -(r->act.err > 0 ? r->act.err : EIO);
    case CKH_CKHFS_KILL:
        kill_caller(fs, node);
        return -EIO; /* the caller is dead; the answer only completes the request */
    case CKH_CKHFS_DELAY:
    case CKH_CKHFS_HOLD: {
        pthread_mutex_unlock(&fs->lock);
        bool whole = hold(fs, cx->pid, r->act.delay_ms, r->act.verdict == CKH_CKHFS_HOLD ? &r->op : NULL);
        pthread_mutex_lock(&fs->lock);
        return whole ? 1 : -EINTR; /* L2, L4 */
    }
    default:
        return 1;
    }
}

/* ---------------------------------------------------------- held requests */

/* Whether the caller thread tid is gone or has SIGKILL pending, from
 * /proc/<tid>/status (its own pending set, SigPnd, and its process's,
 * ShdPnd). */
static bool caller_dying(pid_t tid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    const unsigned long long kill_bit = 1ull << (SIGKILL - 1);
    bool dying = false;
    while (!dying && fgets(line, sizeof line, f)) {
        if (strncmp(line, "State:", 6) == 0)
            dying = strchr(line, 'Z') != NULL || strchr(line, 'X') != NULL;
        else if (strncmp(line, "SigPnd:", 7) == 0 || strncmp(line, "ShdPnd:", 7) == 0)
            dying = (strtoull(line + 7, NULL, 16) & kill_bit) != 0;
    }
    fclose(f);
    return dying;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int thread_start(struct ckh_ckhfs *fs, size_t stack_bytes);

/* Set on a server thread that handed its lead over while serving its
 * current request (L1, L3): it goes back to the idle threads after it. */
static _Thread_local bool tl_off_lead;

/* Hands the calling thread's lead to an idle server thread, starting one
 * when none is idle (serve_lock held). False when none could be started:
 * the caller keeps the lead (and the mount waits for it, as before L1). */
static bool lead_hand_over(struct ckh_ckhfs *fs)
{
    if (tl_off_lead)
        return true;
    if (!fs->stopping && fs->idle == 0 && thread_start(fs, EXTRA_STACK_BYTES) != 0)
        return false;
    fs->leading = false;
    tl_off_lead = true;
    pthread_cond_signal(&fs->lead_cv);
    return true;
}

/* Whether the held op's release has come (L5; fs->lock taken here). */
static bool released(struct ckh_ckhfs *fs, const struct ckh_ckhfs_op *op)
{
    pthread_mutex_lock(&fs->lock);
    bool yes = fs->cfg.disk && fs->cfg.released && fs->cfg.released(fs->cfg.ctx, op);
    pthread_mutex_unlock(&fs->lock);
    return yes;
}

/* Holds the calling request ms milliseconds without fs->lock and without
 * the lead (L1), or, for a HOLD (op not NULL), until its release (L5).
 * False when cut short: its caller thread tid is dying or the mount stops
 * (L4). */
static bool hold(struct ckh_ckhfs *fs, pid_t tid, uint32_t ms, const struct ckh_ckhfs_op *op)
{
    pthread_mutex_lock(&fs->serve_lock);
    fs->held++;
    lead_hand_over(fs);
    pthread_mutex_unlock(&fs->serve_lock);
    const uint64_t until = mono_ms() + ms;
    bool whole = true;
    for (;;) {
        uint64_t now = mono_ms();
        if (now >= until || (op && released(fs, op)))
            break;
        uint64_t k = until - now < HOLD_SLICE_MS ? until - now : HOLD_SLICE_MS;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)k * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&fs->serve_lock);
        bool stopping = fs->stopping;
        pthread_mutex_unlock(&fs->serve_lock);
        if (stopping || (tid > 0 && caller_dying(tid))) {
            whole = false;
            break;
        }
    }
    pthread_mutex_lock(&fs->serve_lock);
    fs->held--;
    pthread_mutex_unlock(&fs->serve_lock);
    return whole;
}

/* ------------------------------------------------------------------- trace */

/* Appends op (its strings copied) to the trace: its index, or SIZE_MAX
 * when out of memory (the trace misses an entry rather than failing the
 * program). fs->lock held. */
static size_t trace_add(struct ckh_ckhfs *fs, const struct ckh_ckhfs_op *op)
{
    if (fs->ntrace == fs->captrace) {
        size_t cap = fs->captrace ? fs->captrace * 2 : 256;
        struct ckh_ckhfs_op *t = realloc(fs->trace, cap * sizeof(*t));
        if (!t)
            return SIZE_MAX;
        fs->trace = t;
        fs->captrace = cap;
    }
    struct ckh_ckhfs_op e = *op;
    e.path = strdup(op->path);
    e.path2 = op->path2 ? strdup(op->path2) : NULL;
    if (!e.path || (op->path2 && !e.path2)) {
        free((char *)e.path);
        free((char *)e.path2);
        return SIZE_MAX;
    }
    fs->trace[fs->ntrace] = e;
    return fs->ntrace++;
}

int64_t ckh__ckhfs_end(struct ckhfs_req *r, int64_t result)
{
    struct ckh_ckhfs *fs = r->fs;
    CKH_ASSERT(fs && result > -4096); /* FUSE takes a count, 0 or -errno */
    r->op.result = result;
    r->op.answered = ++fs->answered;
    if (r->slot != SIZE_MAX) {
        CKH_ASSERT(r->slot < fs->ntrace && fs->trace[r->slot].seq == r->op.seq);
        fs->trace[r->slot].result = result;
        fs->trace[r->slot].answered = r->op.answered;
    }
    if ((r->act.verdict == CKH_CKHFS_DELAY || r->act.verdict == CKH_CKHFS_HOLD) && fs->cfg.held_answered)
        fs->cfg.held_answered(fs->cfg.ctx, &r->op);
    if (r->act.verdict == CKH_CKHFS_KILL_AFTER)
        kill_caller(fs, r->op.node);
    pthread_mutex_unlock(&fs->lock);
    return result;
}

const struct ckh_ckhfs_op *ckh_ckhfs_trace(const struct ckh_ckhfs *cfs, size_t *n)
{
    struct ckh_ckhfs *fs = (struct ckh_ckhfs *)cfs; /* the snapshot is a cache */
    if (n)
        *n = 0;
    if (!fs)
        return NULL;
    pthread_mutex_lock(&fs->lock);
    size_t k = fs->ntrace;
    if (k > fs->capsnap) {
        struct ckh_ckhfs_op *s = realloc(fs->snap, k * sizeof(*s));
        if (!s)
            k = fs->capsnap;
        else {
            fs->snap = s;
            fs->capsnap = k;
        }
    }
    if (k)
        memcpy(fs->snap, fs->trace, k * sizeof(*fs->snap));
    pthread_mutex_unlock(&fs->lock);
    if (n)
        *n = k;
    return fs->snap;
}

void ckh_ckhfs_lock(struct ckh_ckhfs *fs)
{
    if (fs)
        pthread_mutex_lock(&fs->lock);
}

void ckh_ckhfs_unlock(struct ckh_ckhfs *fs)
{
    if (fs)
        pthread_mutex_unlock(&fs->lock);
}

/* ---------------------------------------------------------- server threads */

void ckh__ckhfs_inited(struct ckh_ckhfs *fs)
{
    pthread_mutex_lock(&fs->lock);
    fs->inited = true;
    pthread_cond_broadcast(&fs->init_cv);
    pthread_mutex_unlock(&fs->lock);
}

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The leader's short wait for the next request before it sleeps in poll
 * (S1-S2 at the top): 1 when buf holds one, 0 when none came, -1 when the
 * connection is gone. */
static int lead_spin(struct ckh_ckhfs *fs, struct fuse_session *se, struct fuse_buf *buf)
{
    if (!fs->spin)
        return 0;
    const uint64_t t0 = mono_us();
    do {
        int rc = fuse_session_receive_buf(se, buf);
        if (rc > 0)
            return 1;
        if (rc != -EAGAIN && rc != -EINTR)
            return -1; /* as in lead_one's loop: connection gone (ENODEV) */
    } while (mono_us() - t0 < SPIN_US);
    fs->spin = false; /* S2: a miss; spinning again once requests come close together */
    return 0;
}

/* The leader's turn: waits for the next request (or the wake pipe) and
 * serves it. -1 when the loop should end (unmount asked, connection
 * gone). */
static int lead_one(struct ckh_ckhfs *fs, struct fuse_buf *buf)
{
    struct fuse_session *se = fuse_get_session(fs->fuse);
    struct pollfd p[2] = {{.fd = fuse_session_fd(se), .events = POLLIN},
                          {.fd = fs->wake[0], .events = POLLIN}};
    int got = lead_spin(fs, se, buf);
    if (got < 0)
        return -1;
    for (; !got;) {
        if (fuse_session_exited(se))
            return -1;
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (p[1].revents)
            return -1; /* unmount asked (the byte stays: every thread sees it) */
        if (!p[0].revents)
            continue;
        int rc = fuse_session_receive_buf(se, buf);
        if (rc == -EINTR || rc == -EAGAIN)
            continue;
        if (rc <= 0)
            return -1; /* connection gone (ENODEV): unmounted or aborted */
        /* S2: a request close behind the last answer starts spinning again. */
        fs->spin = mono_us() - fs->answered_us < SPIN_AGAIN_US;
        break;
    }
    pthread_mutex_lock(&fs->serve_lock);
    if (fs->held > 0)
        lead_hand_over(fs); /* L3: served off the lead while a request is held */
    pthread_mutex_unlock(&fs->serve_lock);
    fuse_session_process_buf(se, buf);
    if (!tl_off_lead)
        fs->answered_us = mono_us(); /* the leader's own: another thread may lead now */
    return 0;
}

/* A server thread: waits for the lead, leads one request, again (L1). It
 * starts counted in fs->idle. */
static void *serve(void *arg)
{
    struct ckh_ckhfs *fs = arg;
    struct fuse_buf buf = {.mem = NULL};
    pthread_mutex_lock(&fs->serve_lock);
    for (;;) {
        while (fs->leading && !fs->stopping)
            pthread_cond_wait(&fs->lead_cv, &fs->serve_lock);
        if (fs->stopping)
            break;
        fs->idle--;
        fs->leading = true;
        pthread_mutex_unlock(&fs->serve_lock);
        int rc = lead_one(fs, &buf);
        pthread_mutex_lock(&fs->serve_lock);
        if (tl_off_lead) {
            tl_off_lead = false; /* the lead went to another thread meanwhile */
        } else {
            fs->leading = false;
            pthread_cond_signal(&fs->lead_cv);
        }
        fs->idle++;
        if (rc < 0) {
            fs->stopping = true;
            pthread_cond_broadcast(&fs->lead_cv);
            break;
        }
    }
    pthread_mutex_unlock(&fs->serve_lock);
    free(buf.mem);
    return NULL;
}

/* Starts one more server thread, counted idle (serve_lock held); 0
 * stack_bytes: the default stack. 0, or the error that stopped it. */
static int thread_start(struct ckh_ckhfs *fs, size_t stack_bytes)
{
    if (fs->nthreads == fs->capthreads) {
        size_t cap = fs->capthreads ? fs->capthreads * 2 : 4;
        pthread_t *t = realloc(fs->threads, cap * sizeof(*t));
        if (!t)
            return ENOMEM;
        fs->threads = t;
        fs->capthreads = cap;
    }
    pthread_attr_t attr;
    int e = pthread_attr_init(&attr);
    if (e != 0)
        return e;
    if (stack_bytes)
        pthread_attr_setstacksize(&attr, stack_bytes);
    fs->idle++;
    e = pthread_create(&fs->threads[fs->nthreads], &attr, serve, fs);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        fs->idle--;
        return e;
    }
    fs->nthreads++;
    return 0;
}

/* ------------------------------------------------------------------- forks */

/* The /dev/fuse descriptors of this process's mounts. */
static pthread_mutex_t fds_lock = PTHREAD_MUTEX_INITIALIZER;
static int fds[64];
static size_t nfds;

static void fork_prepare(void)
{
    pthread_mutex_lock(&fds_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&fds_lock);
}

static void fork_child(void)
{
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    nfds = 0;
    pthread_mutex_unlock(&fds_lock);
}

static void fds_add(int fd)
{
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    pthread_mutex_lock(&fds_lock);
    if (nfds < sizeof fds / sizeof fds[0])
        fds[nfds++] = fd; /* past 64 mounts, children keep copies (harmless until unmount) */
    pthread_mutex_unlock(&fds_lock);
}

static void fds_remove(int fd)
{
    pthread_mutex_lock(&fds_lock);
    for (size_t i = 0; i < nfds; i++) {
        if (fds[i] == fd) {
            fds[i] = fds[--nfds];
            break;
        }
    }
    pthread_mutex_unlock(&fds_lock);
}

/* ------------------------------------------------------------------- mount */

/* libfuse's last log line, for mount error messages. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_last[256];

static void log_to_buffer(enum fuse_log_level level, const char *fmt, va_list ap)
{
    if (level > FUSE_LOG_ERR)
        return;
    pthread_mutex_lock(&log_lock);
    vsnprintf(log_last, sizeof log_last, fmt, ap);
    log_last[strcspn(log_last, "\n")] = '\0';
    pthread_mutex_unlock(&log_lock);
}

static void log_last_get(char *out, size_t n)
{
    pthread_mutex_lock(&log_lock);
    snprintf(out, n, "%s", log_last[0] ? log_last : "no detail from libfuse");
    log_last[0] = '\0';
    pthread_mutex_unlock(&log_lock);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void install_once(void)
{
    fuse_set_log_func(log_to_buffer);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int check_config(const struct ckh_ckhfs_config *cfg, char *msg, size_t msglen)
{
    if (!cfg || !cfg->mountpoint || !cfg->mountpoint[0] || !cfg->disk)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "ckhfs: a mount needs a mount point and a disk");
    struct stat st;
    if (stat(cfg->mountpoint, &st) != 0)
        return ckh_errf(msg, msglen, CKH_EINVAL, "ckhfs: mount point %s: %s", cfg->mountpoint,
                        strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return ckh_errf(msg, msglen, CKH_EINVAL, "ckhfs: mount point %s is not a folder",
                        cfg->mountpoint);
    return 0;
}

/* Creates the libfuse instance and mounts it. */
static int fuse_start(struct ckh_ckhfs *fs, char *msg, size_t msglen)
{
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    int rc = 0;
    if (fuse_opt_add_arg(&args, "ckhfs") != 0 || fuse_opt_add_arg(&args, "-o") != 0 ||
        fuse_opt_add_arg(&args, "fsname=" CKHFS_FSNAME ",subtype=ckhfs") != 0) {
        rc = ckh_errf(msg, msglen, CKH_ENOMEM, "ckhfs: out of memory");
        goto out_free_args;
    }
    fs->fuse = fuse_new(&args, &ckh__ckhfs_ops, sizeof(ckh__ckhfs_ops), fs);
    if (!fs->fuse) {
        char why[256];
        log_last_get(why, sizeof why);
        rc = ckh_errf(msg, msglen, -EIO, "ckhfs: cannot start a FUSE filesystem: %s", why);
        goto out_free_args;
    }
    if (fuse_mount(fs->fuse, fs->mnt) != 0) {
        char why[256];
        log_last_get(why, sizeof why);
        rc = ckh_errf(msg, msglen, -EIO, "ckhfs: cannot mount %s: %s", fs->mnt, why);
        goto out_free_args;
    }
    fs->mounted = true;
    fs->fuse_fd = fuse_session_fd(fuse_get_session(fs->fuse));
    fds_add(fs->fuse_fd);
    /* Non-blocking: a request poll saw may be gone by the read (a FUSE
     * INTERRUPT withdrawn when its request completed); a blocking read
     * would then wait forever and unmount's join with it. */
    int fl = fcntl(fs->fuse_fd, F_GETFL);
    if (fl >= 0)
        fcntl(fs->fuse_fd, F_SETFL, fl | O_NONBLOCK);
out_free_args:
    fuse_opt_free_args(&args);
    return rc;
}

/* Waits until the server answered the kernel's INIT (or INIT_WAIT_S). */
static bool wait_inited(struct ckh_ckhfs *fs)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += INIT_WAIT_S;
    pthread_mutex_lock(&fs->lock);
    while (!fs->inited) {
        if (pthread_cond_timedwait(&fs->init_cv, &fs->lock, &until) != 0)
            break;
    }
    bool ok = fs->inited;
    pthread_mutex_unlock(&fs->lock);
    return ok;
}

int ckh_ckhfs_mount(const struct ckh_ckhfs_config *cfg, struct ckh_ckhfs **out, char *msg,
                    size_t msglen)
{
    if (out)
        *out = NULL;
    if (!out)
        return ckh_errf(msg, msglen, CKH_EINVAL, "ckhfs: no output handle");
    int rc = check_config(cfg, msg, msglen);
    if (rc)
        return rc;
    rc = ckh_ckhfs_available(msg, msglen);
    if (rc)
        return rc;
    pthread_once(&once, install_once);
    struct ckh_ckhfs *fs = calloc(1, sizeof(*fs));
    char mnt[4096];
    if (!fs || ckh__ckhfs_abspath(cfg->mountpoint, mnt, sizeof mnt) != 0 ||
        !(fs->mnt = strdup(mnt))) {
        free(fs);
        return ckh_errf(msg, msglen, CKH_ENOMEM, "ckhfs: out of memory");
    }
    fs->cfg = *cfg;
    fs->cfg.mountpoint = fs->mnt;
    fs->wake[0] = fs->wake[1] = -1;
    pthread_mutex_init(&fs->lock, NULL);
    pthread_cond_init(&fs->init_cv, NULL);
    pthread_mutex_init(&fs->serve_lock, NULL);
    pthread_cond_init(&fs->lead_cv, NULL);
    fs->serve_ready = true;
    if (pipe2(fs->wake, O_CLOEXEC) != 0) {
        rc = ckh_errf(msg, msglen, -EIO, "ckhfs: pipe: %s", strerror(errno));
        goto out_unmount;
    }
    rc = fuse_start(fs, msg, msglen);
    if (rc)
        goto out_unmount;
    pthread_mutex_lock(&fs->serve_lock);
    int e = thread_start(fs, 0);
    pthread_mutex_unlock(&fs->serve_lock);
    if (e != 0) {
        rc = ckh_errf(msg, msglen, e == ENOMEM ? CKH_ENOMEM : -EIO,
                      "ckhfs: cannot start the server thread: %s", strerror(e));
        goto out_unmount;
    }
    if (!wait_inited(fs)) {
        rc = ckh_errf(msg, msglen, -EIO,
                      "ckhfs: the kernel did not start the mount at %s within %d s", fs->mnt,
                      INIT_WAIT_S);
        goto out_unmount;
    }
    *out = fs;
    return 0;
out_unmount:
    ckh_ckhfs_unmount(fs);
    return rc;
}

/* ----------------------------------------------------------------- unmount */

/* Stops every server thread and joins them: stopping set (idle threads
 * and held requests see it, L4), a byte on the wake pipe for the leader. */
static void stop_threads(struct ckh_ckhfs *fs)
{
    if (!fs->serve_ready)
        return;
    pthread_mutex_lock(&fs->serve_lock);
    fs->stopping = true;
    pthread_cond_broadcast(&fs->lead_cv);
    size_t n = fs->nthreads; /* no thread starts once stopping is set */
    pthread_mutex_unlock(&fs->serve_lock);
    if (n) {
        char c = 'x';
        while (write(fs->wake[1], &c, 1) < 0 && errno == EINTR)
            ;
    }
    for (size_t i = 0; i < n; i++)
        pthread_join(fs->threads[i], NULL);
    free(fs->threads);
    fs->threads = NULL;
    fs->nthreads = fs->capthreads = 0;
}

static void free_state(struct ckh_ckhfs *fs)
{
    while (fs->handles) {
        struct ckhfs_handle *h = fs->handles;
        fs->handles = h->next;
        free(h->path);
        free(h);
    }
    /* Destroying a view closes its files without flushing (pending state
     * stays on the disk). */
    for (size_t i = 0; i < fs->nviews; i++)
        ckh_simfs_view_destroy(fs->views[i]);
    free(fs->views);
    for (size_t i = 0; i < fs->ntrace; i++) {
        free((char *)fs->trace[i].path);
        free((char *)fs->trace[i].path2);
    }
    free(fs->trace);
    free(fs->snap);
}

void ckh_ckhfs_unmount(struct ckh_ckhfs *fs)
{
    if (!fs)
        return;
    stop_threads(fs);
    if (fs->mounted) {
        fds_remove(fs->fuse_fd);
        fuse_unmount(fs->fuse);
        fs->mounted = false;
    }
    /* libfuse skips the unmount when the connection was already aborted;
     * whatever is still listed at the mount point goes now. */
    ckh__ckhfs_unmount_below(fs->mnt, true);
    if (fs->fuse)
        fuse_destroy(fs->fuse);
    free_state(fs);
    if (fs->wake[0] >= 0)
        close(fs->wake[0]);
    if (fs->wake[1] >= 0)
        close(fs->wake[1]);
    pthread_cond_destroy(&fs->init_cv);
    pthread_mutex_destroy(&fs->lock);
    if (fs->serve_ready) {
        pthread_cond_destroy(&fs->lead_cv);
        pthread_mutex_destroy(&fs->serve_lock);
    }
    free(fs->mnt);
    free(fs);
}

/* -------------------------------------------------------- swapping the disk */

int ckh_ckhfs_swap_disk(struct ckh_ckhfs *fs, struct ckh_simfs *disk, void *ctx)
{
    if (!fs || !fs->serve_ready)
        return CKH_EINVAL;
    pthread_mutex_lock(&fs->serve_lock);
    bool held = fs->held > 0;
    pthread_mutex_unlock(&fs->serve_lock);
    if (held)
        return CKH_EINVAL; /* a held request would be done on the new disk */
    struct ckh_listing names = {.entries = NULL};
    bool listed = false;
    pthread_mutex_lock(&fs->lock);
    if (fs->cfg.disk) {
        /* The old root's names: every name the kernel may keep an entry for
         * (each change went through this mount, so it saw no other). */
        struct ckh_fs *v = ckh__ckhfs_view(fs, -1);
        listed = v && ckh_fs_listdir(v, "/", &names) == 0;
    }
    for (struct ckhfs_handle *h = fs->handles; h; h = h->next) {
        if (h->file)
            ckh_file_close(h->file); /* no flush: the old disk is the caller's */
        h->file = NULL;              /* stale: -EIO, and its release only frees it */
    }
    for (size_t i = 0; i < fs->nviews; i++) {
        ckh_simfs_view_destroy(fs->views[i]);
        fs->views[i] = NULL;
    }
    for (size_t i = 0; i < fs->ntrace; i++) {
        free((char *)fs->trace[i].path);
        free((char *)fs->trace[i].path2);
    }
    fs->ntrace = 0;
    fs->seq = fs->answered = 0;
    fs->cfg.disk = disk;
    fs->cfg.ctx = ctx;
    pthread_mutex_unlock(&fs->lock);
    /* Without fs->lock: the kernel takes the root folder's lock to drop an
     * entry, and a request that holds it could be waiting for fs->lock.
     * -ENOENT (no such entry kept) is the common answer and not an error. */
    struct fuse_session *se = fs->fuse ? fuse_get_session(fs->fuse) : NULL;
    for (size_t i = 0; se && listed && i < names.count; i++)
        fuse_lowlevel_notify_inval_entry(se, FUSE_ROOT_ID, names.entries[i].name,
                                         strlen(names.entries[i].name));
    if (se)
        fuse_lowlevel_notify_inval_inode(se, FUSE_ROOT_ID, 0, 0);
    if (listed)
        ckh_fs_listing_free(&names);
    return 0;
}

const char *ckh_ckhfs_mountpoint(const struct ckh_ckhfs *fs)
{
    return fs ? fs->mnt : NULL;
}
