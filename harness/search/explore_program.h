/* Crash states of a real program: `ckh explore FILE` (and the `explore:`
 * block of a scenario) for command jobs (docs/PROGRAMS.md, "Crash states
 * of your program").
 *
 * (A job of several nodes, or of several disks, goes through
 * search/explore_multi.h: the same options, results and checks, with
 * every node's disks, power loss and each node's crash.)
 *
 * The job runs once, without faults, with its checkpoint directory on a
 * ckhfs mount; every operation the program asks of the mount is recorded,
 * and before each operation that follows one that could change the disk
 * (a crash point) the simfs disk is snapshotted (a clone shares the bytes:
 * O(inodes + extents) each). Each snapshot's pending operations are then
 * resolved by the explorer's choice vectors (all applied, all dropped, one
 * dropped, a prefix kept, one write torn to zeros or garbage: the
 * vectors of harness/search/explore_states.c), within what the disk's
 * crash model allows. Each distinct durable state (by digest) is checked
 * once, in order, by one of two checks:
 *   - verify: the scenario's `verify` command runs against the state
 *     (served by ckhfs, read-only in effect) and must exit 0;
 *   - restart: the job restarts on the state (a second run after the
 *     recorded one) and the scenario's oracles judge it against the
 *     recorded run, exactly as after a scripted crash.
 * States are numbered K = 1, 2, ... in generation order (duplicates
 * counted), so `--state K` checks one state alone, and findings are listed
 * smallest K first (fewest operations, then the fewest changes).
 *
 * Check order: the states are checked likely failures first (the states
 * right after a commit point, a rename, link, fsync or an in-place
 * rewrite of a file the run wrote before, and those whose pending
 * operations were reordered or torn; explore_order.c), the rest in K
 * order; findings are still reported smallest K first.
 *
 * Bounds: max_states (generated states), a time limit (no new check
 * starts after it, but the first state in check order is always
 * checked), a step window (crash points while the program's last
 * recorded step is within it). Checks run in `jobs` forked workers, each
 * starting Python programs from warm launchers (exec/command_warm.h)
 * unless asked for cold starts.
 */
#ifndef CKH_SEARCH_EXPLORE_PROGRAM_H
#define CKH_SEARCH_EXPLORE_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "exec/runner.h"
#include "model/scenario.h"

/* How each check starts the job's programs (docs/PROGRAMS.md, "Warm starts"). */
enum ckh_xprog_start {
    CKH_XPROG_START_AUTO = 0, /* warm where the program allows it, else cold with a note */
    CKH_XPROG_START_COLD,     /* every program by fork and exec, as ckh run does */
    CKH_XPROG_START_WARM,     /* every program from a warm launcher: one that cannot is an error */
};

/* How each crash state is checked. */
enum ckh_xprog_check {
    CKH_XPROG_AUTO = 0,  /* verify when the scenario has one, else restart */
    CKH_XPROG_VERIFY,    /* run `verify` against the state */
    CKH_XPROG_RESTART,   /* restart the job on the state and apply the oracles */
};

/* Which crashes a multi-node job's states have (explore.crashes). */
enum ckh_xprog_crashes {
    CKH_XPROG_CRASH_AUTO = 0, /* the scenario's; not given: all */
    CKH_XPROG_CRASH_ALL,      /* each node's machine crash, and power loss */
    CKH_XPROG_CRASH_NODE,     /* each node's machine crash, one at a time ("crash") */
    CKH_XPROG_CRASH_POWER,    /* every node's machine at once ("power-loss") */
    CKH_XPROG_CRASH_NONE,     /* appended: no crash state, only the orders of the nodes'
                                 operations on a shared disk ("none") */
};

/* What the other nodes do when one node's machine crashes (explore.others). */
enum ckh_xprog_others {
    CKH_XPROG_OTHERS_KILLED = 0, /* killed at the same point: their written data survives */
    CKH_XPROG_OTHERS_RUNNING,    /* they run on up to the crashed node's next operation */
};

struct ckh_xprog_options {
    bool seed_set;            /* use seed instead of the scenario's */
    uint64_t seed;            /* the --seed override */
    unsigned jobs;            /* parallel workers (0: 1) */
    uint64_t max_states;      /* stop after this many generated states (0: the
                                 scenario's explore.max_states, else no bound) */
    uint64_t time_limit_ms;   /* no new check starts after this (0: the scenario's
                                 explore.time_limit, else none) */
    uint64_t only_state;      /* K > 0: check state K alone */
    const char *keep_dir;     /* with only_state: write that state's durable files
                                 here (must be absent or empty; NULL: no) */
    enum ckh_xprog_check check; /* AUTO: the scenario's explore.check */
    bool start_set;           /* use start instead of the scenario's explore.start */
    enum ckh_xprog_start start; /* the --start override */
    const char *argv0;        /* the ckh command, for reproduction lines (NULL: "ckh") */
    const char *source_dir;   /* repository root (golden files of the oracles) */
    bool verify_remount;      /* each verify check mounts its state afresh instead of
                                 swapping it onto its worker's kept mount (the slower
                                 path, kept as bench_explore_program's baseline) */
    /* appended: multi-node jobs (search/explore_multi.h) */
    enum ckh_xprog_crashes crashes; /* AUTO: the scenario's explore.crashes */
    bool others_set;          /* use others instead of the scenario's explore.others */
    enum ckh_xprog_others others; /* the --others override */
    uint64_t only_order;      /* appended: N > 0: run order N alone (--order N), no crash
                                 state (multi-node jobs with a shared disk) */
};

/* One crash state that failed its check. */
struct ckh_xprog_failure {
    uint64_t k;               /* its number (--state K) */
    char state[1024];         /* the crash: where, and what became of each pending op */
    char symptom[900];        /* what the check said */
};

struct ckh_xprog_result {
    uint64_t ops;             /* operations of the program on the mount */
    uint64_t crash_points;    /* snapshots taken (within the window) */
    uint64_t states;          /* crash states generated (K of the last) */
    uint64_t distinct;        /* distinct durable states kept for checking */
    uint64_t checked;         /* states checked */
    bool bounded;             /* max_states or the time limit stopped it */
    char bound[160];          /* which, and where ("" when not bounded) */
    enum ckh_xprog_check check; /* the check used */
    uint64_t record_ms;       /* the recorded run (wall clock; figures only) */
    uint64_t check_ms;        /* the checks (wall clock; figures only) */
    enum ckh_xprog_start start; /* how programs were asked to start */
    uint64_t warm_starts;     /* program starts from a warm launcher */
    uint64_t cold_starts;     /* program starts by fork and exec */
    char start_note[320];     /* why some started cold ("" when none did, or when asked to) */
    struct ckh_xprog_failure *fails; /* ascending k (owned, malloc) */
    size_t nfails;            /* their count */
    /* appended: orders of several nodes' operations on a shared disk
     * (search/explore_multi.h, "Orders") */
    uint64_t orders;          /* orders found in the recorded run */
    uint64_t orders_checked;  /* orders run and judged */
    struct ckh_xprog_failure *order_fails; /* ascending N, k = N (owned, malloc) */
    size_t norder_fails;      /* their count */
    bool orders_only;         /* no crash state was explored (--order N, crashes none) */
    /* appended: a job with job.object_store (search/explore_store.h) */
    char note[1400];          /* what the states are cut from, in one line, and with
                                 --state K that state ("": files) */
};

/* Explores sc (a command job; faults are refused: the explorer makes its
 * own crashes). 0 with *out filled (free with ckh_xprog_result_free), or
 * CKH_EINVAL (bad input: not a command job, no way to check, a state
 * past the last, a keep folder that is not empty),
 * CKH_ELIMIT (FUSE unusable), CKH_EINTERNAL / CKH_ENOMEM, -EINTR when
 * interrupted; err says what and where. *out holds nothing to free after
 * an error. */
int ckh_explore_program(const struct ckh_scenario *sc, const struct ckh_xprog_options *o,
                        struct ckh_xprog_result *out, char *err, size_t errlen);

/* The verdict of a scenario with an `explore:` block, for ckh run: the
 * exploration with the scenario's settings (one worker), PASS when every
 * state checked passes (explore.expect: fail turns it round: some state
 * must fail), else FAIL naming the smallest failing state and how many
 * failed, with `ckh explore FILE --state K` as its replay; ERROR for bad
 * input or a failed environment. Returns 0 when a verdict was reached,
 * else the code (out->verdict ERROR with its message). */
int ckh_explore_program_verdict(const struct ckh_scenario *sc, const struct ckh_run_options *ro,
                                struct ckh_report_result *out);

/* Frees what r holds and zeroes it; NULL is a no-op. */
void ckh_xprog_result_free(struct ckh_xprog_result *r);

/* Stable name of a check ("verify", "restart", "auto"). */
const char *ckh_xprog_check_name(enum ckh_xprog_check c);
/* Stable name of a start mode ("auto", "cold", "warm"). */
const char *ckh_xprog_start_name(enum ckh_xprog_start s);

#endif
