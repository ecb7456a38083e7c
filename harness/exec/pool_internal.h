/* What the worker pool's two loops share (harness/exec/pool.c: one child
 * per job; harness/exec/pool_resident.c: resident workers). Internal to
 * the pool. */
#ifndef CKH_POOL_INTERNAL_H
#define CKH_POOL_INTERNAL_H

#include <signal.h>
#include <sys/types.h>

#include "exec/pool.h"

/* A child that is stopped gets SIGTERM first and this long to end before
 * SIGKILL: a worker running a command job (harness/exec/command.h) kills
 * and reaps its programs' process groups and unmounts its ckhfs mounts on
 * SIGTERM, which SIGKILL would not let it do. A worker that does not
 * catch SIGTERM dies of it at once. */
#define CKH__POOL_TERM_GRACE_MS 5000u

/* The self-pipe's read end, readable once a caught signal arrived (-1:
 * ckh_pool_signals_install was not called). */
int ckh__pool_signal_fd(void);

/* Blocks the caught signals into *old (across a fork: the child never
 * runs the parent's handler). */
void ckh__pool_block_signals(sigset_t *old);

/* In a child just forked: dies with the parent (exits 127 if parent, its
 * pid, is already gone), default actions for the caught signals and
 * SIGPIPE, the self-pipe closed, old_mask restored, then lim applied. */
void ckh__pool_child_setup(const struct ckh_pool_limits *lim, pid_t parent, const sigset_t *old_mask);

/* How a job that ended with exit status code ended, under lim: ok, the
 * memory limit (CKH_POOL_EXIT_MEM under a limit) or exited. */
enum ckh_pool_status ckh__pool_exit_status(int code, const struct ckh_pool_limits *lim);

/* ckh_pool_run with cfg->jobs_per_worker > 1 (pool_resident.c). */
/* Whether job index next should start: below *approved it may; else
 * cfg->ops->more is asked once for it (*approved moves past it, or
 * *no_more is set for good); never past cfg->njobs. */
bool ckh__pool_want_more(const struct ckh_pool_config *cfg, uint64_t next, uint64_t *approved, bool *no_more);

/* Reads what is there on *fd into *buf (len bytes in use of cap, grown
 * as needed); at end of file or on an error closes *fd and sets it to -1.
 * 0, or CKH_ENOMEM. */
int ckh__pool_read_into(int *fd, char **buf, size_t *len, size_t *cap);
int ckh__pool_run_resident(const struct ckh_pool_config *cfg);

#endif
