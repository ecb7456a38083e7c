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

#include "ckh/simfs.h"
#include "exec/command_warm.h"
#include "search/explore_program.h"

struct ckh__cmd_job;
struct ckh__cmd_watch;
struct ckh_ckhfs;

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

/* ---- what both explorers share: a state, its check, the report ----
 *
 * (search/explore_workers.c; an explorer of its own states, such as the
 * multi-node one, builds on these and keeps only how it records and
 * generates its states.) */

/* What every explorer's state begins with (its first member), so that
 * the check order and the report read states of any explorer: an array
 * of its own state structs, each `size` bytes. */
struct ckh__xw_state {
    uint64_t k;               /* its number (--state K) */
    int prio;                 /* its check priority (ckh__xorder_priority) */
    char desc[1024];          /* the crash, in words */
};

/* The i-th state of v (an array of n structs of size bytes, each
 * beginning with a struct ckh__xw_state; borrowed). */
static inline const struct ckh__xw_state *ckh__xw_state_at(const void *v, size_t size, size_t i)
{
    return (const struct ckh__xw_state *)(const void *)((const char *)v + i * size);
}

/* How an explorer's states are checked (all borrowed; the same for every
 * state). */
struct ckh__xw_checker {
    const struct ckh_scenario *sc;
    uint64_t seed;
    const struct ckh__cmd_job *je;      /* the job's folder: checks in <dir>/w<worker>/check */
    enum ckh_xprog_check check;         /* VERIFY or RESTART */
    const struct ckh_scenario_run *ref; /* the reference (restart check) */
    const char *const *results;         /* [nodes]: run 1's result files (restart check) */
    int nodes;                          /* nodes of run 1 */
    bool views;                         /* verify once per node of run 1, each against its
                                         * view, the symptom "NAME's view: ..." (several nodes
                                         * or disks); false: node 0's view alone */
    bool remount;                       /* verify: a mount per state instead of the worker's
                                         * kept mounts (one per disk) */
};

/* Checks one state on a fresh execution of the job in the worker's check
 * folder (<dir>/w<index>/check, emptied after each state so that every
 * state's programs see the same paths): its disks (disks[nd], one per
 * mount of the job: ckh__cmd_replace_disk(s); borrowed, cloned for the
 * check), then verify (served by wk's kept mounts, made on first use and
 * kept in wk->keep, unless k->remount) or a restart of the job judged by
 * the oracles (result_bytes[nodes]: each node's result file read by the
 * state's crash). Programs start from wk->warm's launchers where they
 * can. Fills s (done; failed and the symptom; or rc and the error), the
 * state's folders in its text written the same for every state. */
void ckh__xw_check_state(const struct ckh__xw_checker *k, struct ckh__xw_worker *wk, struct ckh_simfs *const *disks,
                         size_t nd, const uint64_t *result_bytes, struct ckh__xw_slot *s);

/* Releases what ckh__xw_check_state kept in wk->keep (unmounts the kept
 * verify mounts); a pool's `end` may call it. */
void ckh__xw_check_end(struct ckh__xw_worker *wk);

/* The check order of n states (v: n structs of size bytes, each beginning
 * with a struct ckh__xw_state): by priority, then K (explore_order.c).
 * 0 with *order ([n], the caller's, free), or CKH_ENOMEM. */
int ckh__xw_check_order(const void *v, size_t n, size_t size, size_t **order);

/* Step 4 of both explorers: the checks' outcome (slots[n], state order)
 * into out: how many ran, the time bound (limit_ms) that stopped them,
 * the failures smallest K first, each state's text its desc plus what
 * more(ctx, i, text, size) appends (NULL: nothing). 0, or the first
 * check that could not run (its code, err "state K: why"), or
 * CKH_ENOMEM. */
int ckh__xw_report(const void *v, size_t n, size_t size, const struct ckh__xw_slot *slots, uint64_t limit_ms,
                   void (*more)(const void *ctx, size_t i, char *text, size_t size), const void *ctx,
                   struct ckh_xprog_result *out, char *err, size_t errlen);

/* The restart check of one state: c (its disks or store already the
 * state's) restarts the job after the recorded run (ref, its results and
 * the bytes of them consumed at the cut) and the oracles judge it; a
 * failing verdict sets s->failed and s->text ("ORACLE: message"). 0, or
 * the error that kept the run from being judged (such as CKH_ENOMEM). */
int ckh__xw_restart_judge(struct ckh__cmd *c, const struct ckh_scenario_run *ref, const char *const *results,
                          const uint64_t *result_bytes, struct ckh__xw_slot *s);

/* --keep DIR's folder: made if absent, an empty one taken (removed and
 * made again), anything else refused, its content never touched: 0, or
 * CKH_EINVAL with err naming DIR (what: "files", "objects", for the
 * message). */
int ckh__xw_keep_dir(const char *dir, const char *what, char *err, size_t errlen);

/* --keep DIR: writes the state's disks (disks[nd]) into DIR (absent or
 * empty; created): the files themselves when names is NULL (one disk),
 * else one folder per disk named names[e]. 0, or CKH_EINVAL (DIR is not
 * absent or empty, or cannot be made) / CKH_EINTERNAL with err. */
int ckh__xw_keep(struct ckh_simfs *const *disks, const char *const *names, size_t nd, const char *dir, char *err,
                 size_t errlen);

/* Step 1 of both explorers: the fault-free reference run of sc, watched
 * (ckh__cmd_job_begin, then ckh__cmd_reference with watch); out gets
 * record_ms (since t0). 0, or the code with err. The caller ends je
 * (ckh__cmd_job_end) and frees ref in either case. */
int ckh__xw_record(const struct ckh_scenario *sc, uint64_t seed, uint64_t t0, struct ckh__cmd_job *je,
                   const struct ckh__cmd_watch *watch, struct ckh_scenario_run *ref, struct ckh_xprog_result *out,
                   char *err, size_t errlen);

/* Step 3 of both explorers, with step 4: the states' check order, the
 * checks (pool: everything but order; its `check` and `ctx`, and `end`
 * when it keeps something), then the report (ckh__xw_report with
 * more/ctx2). out gets check_ms and what ckh__xw_report gives. 0, -EINTR
 * when ckh was interrupted, or the code with err. */
int ckh__xw_check_report(const void *v, size_t size, struct ckh__xw_pool *pool, uint64_t limit_ms,
                         void (*more)(const void *ctx, size_t i, char *text, size_t size), const void *ctx2,
                         struct ckh_xprog_result *out, char *err, size_t errlen);

#endif
