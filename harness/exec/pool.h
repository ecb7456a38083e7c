/* The worker pool: ckh's one way to run work in isolated child processes
 * (ckh run, ckh list, ckh fuzz, ckh validate-backend).
 *
 * A job is a function run in a forked child; the bytes it writes to its
 * reply descriptor come back to the parent over a pipe. At most `workers`
 * children run at a time. Each job has a wall-time limit (past it the
 * parent sends the child SIGTERM, then SIGKILL 5 s later) and a memory
 * limit (RLIMIT_AS of the child), and ends with exactly one status: ok,
 * exited N, killed by signal S, time limit or memory limit.
 *
 * Children die with the parent: each sets PR_SET_PDEATHSIG (SIGKILL) and
 * then checks that its parent is still the pool's process (the parent may
 * have died before the call). Every child is reaped on every exit path of
 * ckh_pool_run, including an error and an interrupting signal.
 *
 * Signals: ckh_pool_signals_install() catches SIGINT, SIGTERM and SIGHUP
 * with a handler that only records the signal and writes one byte to a
 * pipe (the self-pipe); ckh_pool_run watches that pipe, stops and reaps its
 * children and returns -EINTR. Cleanup is the caller's, in its main flow.
 * Stopping a child is SIGTERM, up to 5 s for it to end, then SIGKILL: a
 * worker running a command job kills and reaps its programs' process
 * groups and unmounts its checkpoint folders on SIGTERM (harness/exec/command.h).
 *
 * A job that runs a real program (one per node) does so from its `run`
 * function with execve: the reply descriptor, the memory limit and the
 * parent-death signal survive the exec (the descriptor is not
 * close-on-exec in the child); such a program reports a reached memory
 * limit by exiting with CKH_POOL_EXIT_MEM, or dies by a signal.
 *
 * Resident workers (jobs_per_worker > 1, harness/exec/pool_resident.c):
 * a child runs up to that many jobs one after another, each under its own
 * wall-time limit, instead of one fork per job (`ckh fuzz`: a seed costs
 * a few CPU-ms, a fork and the copy-on-write faults of a fresh child as
 * much again). The job's bytes go to a memory file and come back framed
 * with its status once `run` returns; so `run` must return (no execve, no
 * exit) and must not close fd. What a job sees of earlier jobs of its
 * child is the caller's affair (the fuzzer's seeds share nothing). A job
 * that ends other than ok (a signal, a non-zero status, the memory limit),
 * or whose child's peak address space came within a quarter of its memory
 * limit, in a child that had run earlier jobs is run once more in a fresh
 * child, and that run's outcome is the one reported: a crash or memory
 * left behind by an earlier job is never charged to a later one, so
 * outcomes do not depend on how jobs fell to children. A time limit is
 * not retried. A child that ended a job so is not given another.
 */
#ifndef CKH_POOL_H
#define CKH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit status a child uses when its memory limit was reached (an
 * allocation failed near the limit, or it crashed there). Job functions
 * return statuses below 100. */
#define CKH_POOL_EXIT_MEM 111

/* Default memory limit of a worker: 4 GiB (docs/CLI.md). */
#define CKH_POOL_MEM_DEFAULT (4ull << 30)

/* How a job ended. */
enum ckh_pool_status {
    CKH_POOL_OK,         /* exited with status 0 */
    CKH_POOL_EXITED,     /* exited with a non-zero status (code) */
    CKH_POOL_SIGNALED,   /* killed by a signal (code) */
    CKH_POOL_TIME_LIMIT, /* ran past its wall-time limit; killed */
    CKH_POOL_MEM_LIMIT,  /* reached its memory limit */
};

/* Limits of every job of a pool. */
struct ckh_pool_limits {
    unsigned wall_s;    /* wall time per job in seconds (0: none) */
    uint64_t mem_bytes; /* address-space limit per child (0: none) */
};

/* The outcome of one job, as the parent sees it. */
struct ckh_pool_result {
    enum ckh_pool_status status; /* how it ended */
    int code;                    /* exit status (OK, EXITED) or signal (SIGNALED) */
    const void *data;            /* bytes the job wrote (valid during the done call) */
    size_t len;                  /* their count */
};

/* What a pool runs; ctx is the caller's, passed through. */
struct ckh_pool_ops {
    /* Child: runs job `index`, writes its answer to reply_fd (see
     * ckh_pool_reply) and returns its exit status (0..99). Runs after
     * fork in a copy of the parent: it may use everything the parent had. */
    int (*run)(void *ctx, uint64_t index, int reply_fd);
    /* Parent: job `index` ended. r and r->data live until it returns. */
    void (*done)(void *ctx, uint64_t index, const struct ckh_pool_result *r);
    /* Parent, optional: whether job `index` should start (false: no more
     * jobs). Called once per index, in index order, just before the job
     * would start; never past njobs. NULL: all njobs. */
    bool (*more)(void *ctx, uint64_t index);
};

/* One pool run. */
struct ckh_pool_config {
    unsigned workers;              /* children at most at a time (0: 1) */
    uint64_t njobs;                /* jobs 0..njobs-1 */
    struct ckh_pool_limits limits; /* per job */
    const struct ckh_pool_ops *ops; /* the jobs */
    void *ctx;                     /* handed to ops */
    uint64_t jobs_per_worker;      /* jobs a child runs at most (0, 1: one child per
                                      job; more: resident workers, see the top) */
};

/* Runs the jobs; done is called in the parent as each ends (in the order
 * they end), once per job. Returns 0 when every started job ended; -EINTR
 * when a signal caught by ckh_pool_signals_install arrived (no new job
 * starts, the running ones are killed, their done is not called); or a
 * negative code (a failed fork or pipe, CKH_ENOMEM). On every return no
 * child is left. */
int ckh_pool_run(const struct ckh_pool_config *cfg);

/* Child: writes n bytes to fd, retrying short writes. Returns 0 or -errno. */
int ckh_pool_reply(int fd, const void *p, size_t n);

/* In a job (child): whether its peak address space came within a quarter
 * of its memory limit, so that a failure now is the limit's doing (false
 * without a limit). A job that reports failures itself (an error result
 * rather than a non-zero status) returns CKH_POOL_EXIT_MEM when this
 * holds; the pool does so for a non-zero status and for a crash. */
bool ckh_pool_child_near_mem_limit(void);

/* In a job (child) that reports a failure itself (an error result rather
 * than a non-zero status): whether that failure is the memory limit's
 * doing, so the job should end with CKH_POOL_EXIT_MEM. True near the limit
 * (ckh_pool_child_near_mem_limit), or under a limit when message names
 * CKH_ENOMEM (one allocation larger than what was left, far below the
 * limit). message may be NULL. False without a limit. */
bool ckh_pool_child_out_of_memory(const char *message);

/* Writes one line describing r ("killed by signal 11 (Segmentation
 * fault)", "time limit 600 s reached", "memory limit 4 GiB reached",
 * "exited with status 3") into buf (n bytes) for the given limits. */
void ckh_pool_describe(const struct ckh_pool_result *r, const struct ckh_pool_limits *lim,
                       char *buf, size_t n);

/* Writes a byte count as ckh prints limits ("4 GiB", "512 MiB", "1000 B"). */
void ckh_pool_format_bytes(uint64_t bytes, char *buf, size_t n);

/* Catches SIGINT, SIGTERM and SIGHUP for the pool (see the top of the
 * file). Idempotent. Returns 0 or -errno. */
int ckh_pool_signals_install(void);

/* The signal caught since the install (0: none). Async-signal-safe. */
int ckh_pool_interrupted(void);

/* Restores the default actions of the three signals, forgets a caught
 * signal and closes the self-pipe. */
void ckh_pool_signals_reset(void);

/* Whether this build can limit a child's memory (not under
 * AddressSanitizer, whose shadow memory needs terabytes of address space). */
bool ckh_pool_mem_limit_supported(void);

#endif
