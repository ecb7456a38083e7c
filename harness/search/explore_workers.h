/* The check workers of `ckh explore` of a real program
 * (search/explore_workers.c): the pool that search/explore_program.c
 * (one node) and search/explore_multi.c (several nodes or disks) check
 * their kept crash states with. Private to harness/search/.
 *
 * The caller owns the states and says how to check one (check); the pool
 * hands the states out in the caller's check order to `jobs` forked
 * workers through a shared counter, each with its own warm launchers
 * (exec/command_warm.h) unless cold starts were asked for, stops at the
 * deadline or on an interrupt, and returns one slot per state plus the
 * program starts counted over every worker.
 */
#ifndef CKH_SEARCH_EXPLORE_WORKERS_H
#define CKH_SEARCH_EXPLORE_WORKERS_H

#include <stddef.h>
#include <stdint.h>

#include "exec/command_warm.h"
#include "search/explore_program.h"

/* What one check found (a plain value: forked workers write it to shared
 * memory). */
struct ckh__xw_slot {
    int done;             /* 0: not checked (time limit), 1: checked */
    int rc;               /* 0, or the error that stopped the check */
    int failed;           /* the state failed its check */
    char text[900];       /* the symptom, or the error */
};

/* One check worker as its check function sees it. */
struct ckh__xw_worker {
    unsigned index;              /* 0..jobs-1: its folders lie below <dir>/w<index>/ */
    struct ckh__warm_set *warm;  /* its warm launchers (NULL: cold starts; owned by the pool) */
    void *keep;                  /* the check function's own, kept from check to check
                                  * (NULL at first; released by end) */
};

/* How to check the states. */
struct ckh__xw_pool {
    size_t n;                   /* states (slots) */
    const size_t *order;        /* [n]: the check order (indexes of states) */
    unsigned jobs;              /* workers (<= 1, or n <= 1: ckh checks them itself) */
    uint64_t deadline_ms;       /* ckh_posix_now_ms() past it: no further state
                                 * (the first in check order is checked whatever
                                 * the time); 0: none */
    enum ckh_xprog_start start; /* how programs start */
    const char *dir;            /* the job's folder: warm launchers in <dir>/w<index>/warm */
    /* Checks state i (an index into the caller's states) into s (zeroed;
     * sets s->done; s->rc stops the worker). */
    void (*check)(const void *ctx, struct ckh__xw_worker *wk, size_t i, struct ckh__xw_slot *s);
    /* Releases wk->keep when the worker is done (NULL: nothing to release). */
    void (*end)(const void *ctx, struct ckh__xw_worker *wk);
    const void *ctx;            /* for check and end */
};

/* Checks p's states: forked workers that die with ckh (PR_SET_PDEATHSIG)
 * and are the child subreapers of their checks' programs, each taking the
 * next state in check order until none is left, the deadline passed, ckh
 * was interrupted (the workers are told with SIGTERM, then SIGKILL) or a
 * check failed to run. 0 with *out the slots, [p->n] in state order
 * (owned by the caller, free), and res's warm_starts, cold_starts and
 * start_note (the first worker's reason for a cold start) set; or
 * CKH_ENOMEM. */
int ckh__xw_check_all(const struct ckh__xw_pool *p, struct ckh__xw_slot **out, struct ckh_xprog_result *res);

#endif
