/* The deterministic simulator (sim/), public part.
 *
 * A ckh_sim holds virtual time, a seeded scheduler, simulated nodes (each
 * running an ordinary C function on its own coroutine), disks (simfs) and
 * the collective group. Given the same seed and the same inputs, a run
 * produces the same trace, byte for byte, and the same trace hash.
 *
 * Typical use:
 *   ckh_sim_create(&cfg, &sim);
 *   ckh_sim_add_disk(sim, &disk_cfg, &disk);
 *   ckh_sim_add_node(sim, &node_cfg, &id);      (once per node)
 *   ckh_sim_add_fault(sim, &rule);              (optional)
 *   ckh_sim_run(sim, &res);                     (until all nodes stop)
 *   ckh_sim_restart(sim, id); ckh_sim_run(...)  (resume after a kill)
 *   ckh_sim_destroy(sim);
 *
 * Part of the sim API (with ckh/simfs.h and ckh/sim_testing.h), not an ops
 * table: only sim/, harness/ and tests include it; code under test sees
 * the simulator only through struct ckh_env (docs/ARCHITECTURE.md, "The layers", checked
 * by the layers test).
 */
#ifndef CKH_SIM_H
#define CKH_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/env.h"
#include "ckh/fault_rule.h"
#include "ckh/op.h"
#include "ckh/simfs.h"

struct ckh_sim;

struct ckh_sim_config {
    uint64_t seed;              /* the one seed of the run */
    uint64_t time_limit_ns;     /* stop the run past this virtual time (0: none) */
    uint64_t op_limit;          /* stop the run after this many ops (0: none) */
    size_t stack_bytes;         /* coroutine stack per program: each node's main program
                                   and each background task (0: 256 KiB) */
    bool keep_trace;            /* keep trace records for ckh_sim_trace_get */
    uint64_t coll_latency_ns;   /* virtual time charged per collective */
    uint64_t node_mem_limit_bytes; /* per-node allocator cap (0: none): OOM beyond */
};

/* ---- faults ---- */
/* Rules, actions and the matcher: ckh/fault_rule.h (shared with the real
 * platform and command jobs). */

/* A hook consulted on every op after the rules; may set *act. */
typedef void (*ckh_fault_hook)(void *ctx, const struct ckh_op *op, struct ckh_fault_action *act);

/* ---- nodes ---- */
typedef int (*ckh_node_main)(struct ckh_env *env, void *arg);

struct ckh_node_config {
    const char *name;                    /* unique node name (copied) */
    ckh_node_main main;                  /* the node's program */
    void *arg;                           /* passed to main (borrowed) */
    const struct ckh_simfs_mount *mounts; /* the node's filesystem view (copied) */
    size_t nmounts;                      /* number of mounts */
    int rank;                            /* collective rank, -1: not in the group */
};

enum ckh_node_state {
    CKH_NODE_READY = 0, /* added or restarted, not run yet */
    CKH_NODE_RUNNING,   /* runnable or blocked */
    CKH_NODE_EXITED,    /* main returned or called exit */
    CKH_NODE_KILLED,    /* killed by a fault or ckh_sim_kill */
    CKH_NODE_PARKED,    /* set aside by ckh_sim_park: not launched until restarted */
};

struct ckh_node_status {
    enum ckh_node_state state; /* lifecycle state */
    int exit_status;           /* main's return value or exit() status */
    uint64_t ops;              /* ops performed in this incarnation */
    uint64_t incarnation;      /* 0 first start, +1 per restart */
    uint64_t mem_bytes;        /* bytes currently allocated through its allocator */
    uint64_t mem_peak_bytes;   /* peak of mem_bytes in this incarnation */
    uint64_t mem_at_end_bytes; /* mem_bytes when the incarnation ended (on a clean
                                  exit: what main leaked; it is freed anyway) */
    const char *pending;       /* main program blocked: its pending op ("allreduce #3",
                                  "join trainer_0#1"); else NULL; valid until the
                                  node runs again */
    int rank;                  /* collective rank, -1: not in the group */
};

enum ckh_sim_outcome {
    CKH_SIM_DONE = 0,   /* every node exited or was killed */
    CKH_SIM_DEADLOCK,   /* every live node is blocked and no timer is pending */
    CKH_SIM_TIME_LIMIT, /* virtual time limit reached */
    CKH_SIM_OP_LIMIT,   /* op limit reached */
};

struct ckh_sim_result {
    enum ckh_sim_outcome outcome; /* why the run stopped */
    uint64_t now_ns;              /* virtual time at the end */
    uint64_t ops;                 /* total ops so far (all runs) */
    uint64_t trace_hash;          /* running hash of the whole trace */
    char report[1024];            /* deadlock: each rank's pending op; else "" */
};

/* Creates a simulator. *out is owned by the caller (ckh_sim_destroy).
 * Returns CKH_EINVAL for a NULL argument. */
int ckh_sim_create(const struct ckh_sim_config *cfg, struct ckh_sim **out);
/* Frees the simulator, its nodes, disks and trace. NULL is a no-op. */
void ckh_sim_destroy(struct ckh_sim *sim);
/* Message describing the last error (static buffer in sim; valid until the
 * next call on sim). */
const char *ckh_sim_errmsg(const struct ckh_sim *sim);
/* Whether an allocation of ckh's own process failed inside the simulator
 * (a node's allocator below its limit, or a disk's bookkeeping): what the
 * code under test then saw was not a simulated out-of-memory, so the
 * run's outcome is not the scenario's. A node's memory limit
 * (node_mem_limit_bytes) and injected allocation faults do not count.
 * Sticky for the simulator's life. */
bool ckh_sim_host_out_of_memory(const struct ckh_sim *sim);

/* Adds a disk; *out stays owned by the simulator. cfg->seed 0 means
 * "derive from the simulation seed and the disk name". */
int ckh_sim_add_disk(struct ckh_sim *sim, const struct ckh_simfs_config *cfg, struct ckh_simfs **out);
/* Adds a node; its id (0, 1, ... in order of addition) goes to *id. */
int ckh_sim_add_node(struct ckh_sim *sim, const struct ckh_node_config *cfg, int *id);
/* Number of nodes added (0 for a NULL sim). */
int ckh_sim_node_count(const struct ckh_sim *sim);
/* Fills *out with node id's state; CKH_EINVAL for a bad id or NULL. The
 * `pending` string stays valid until the node runs again. */
int ckh_sim_node_status(const struct ckh_sim *sim, int id, struct ckh_node_status *out);
/* The node's name; valid while sim lives. NULL for a bad id. */
const char *ckh_sim_node_name(const struct ckh_sim *sim, int id);
/* The id of the node called name, or CKH_ENOTFOUND / CKH_EINVAL. */
int ckh_sim_node_id(const struct ckh_sim *sim, const char *name);

/* Arms a fault rule (copied, strings included); allowed between runs and
 * from a fault hook. CKH_EINVAL for a bad action, op kind, node,
 * probability or keep fraction, CKH_ENOMEM (message in ckh_sim_errmsg). Rules are
 * numbered in order of addition, from 0 after each clear. */
int ckh_sim_add_fault(struct ckh_sim *sim, const struct ckh_fault_rule *rule);
/* Removes every rule (their counts with them). */
void ckh_sim_clear_faults(struct ckh_sim *sim);
/* How many times rule number `rule` (0-based, in order of addition since
 * the last clear) applied its action; 0 for an unknown rule. */
uint64_t ckh_sim_fault_fired(const struct ckh_sim *sim, size_t rule);
/* Installs a hook consulted on every operation after the rules (NULL
 * removes it); ctx is borrowed until replaced. The hook sees the op with
 * the node's phase, epoch and step filled in and may set or change *act;
 * an ERRNO without an errno becomes EIO. */
void ckh_sim_set_fault_hook(struct ckh_sim *sim, ckh_fault_hook hook, void *ctx);

/* ---- explicit schedules ----
 * By default the seeded heap decides which runnable node runs next
 * (sim/sched.c). A schedule hook takes that decision instead: at every
 * scheduling point of a run (a run's start, an op a node enters, a
 * ckh_sim_yield, a node blocking or ending) it is called with the ids of
 * the runnable nodes in ascending order (n >= 1; the node that reached the
 * point is among them unless it blocked or ended) and returns the id of
 * the one to run next. An id not in the list, or -1, leaves the choice to
 * the heap. A node with background tasks is listed once when any of its
 * programs is runnable; the heap's order picks among them. Virtual time
 * still only moves forward: it becomes the chosen
 * node's wake time when that is later than now. The time and op limits
 * still apply. The hook must not call back into the simulator. */
typedef int (*ckh_sched_hook)(void *ctx, const int *runnable, size_t n);

/* Installs a schedule hook (NULL restores the seeded scheduler); ctx is
 * borrowed until replaced. Allowed between runs and from a hook. */
void ckh_sim_set_sched_hook(struct ckh_sim *sim, ckh_sched_hook hook, void *ctx);

/* A scheduling point without an op: the running node stays runnable at
 * the current virtual time and the scheduler (or the schedule hook) picks
 * who runs next; returns when the node runs again. Nothing is traced and
 * no op is counted. For code that runs inside a node but does not go
 * through a simulated device (a recording shim over a disk used
 * directly). Returns 0, or CKH_ESTATE outside a running node. */
int ckh_sim_yield(struct ckh_sim *sim);

/* Runs until every node has stopped, a deadlock, or a limit. */
int ckh_sim_run(struct ckh_sim *sim, struct ckh_sim_result *res);

/* Kills a node from outside a run (machine: also crash its unsynced
 * writes, and every running node that mounts a disk shared with it with
 * CKH_SHARING_MACHINE crashes too: sim/simfs.c S9). Inside a run, use
 * fault rules. */
int ckh_sim_kill(struct ckh_sim *sim, int id, bool machine);
/* Power loss: kills every node and crashes every disk. */
int ckh_sim_power_loss(struct ckh_sim *sim);
/* Restarts a stopped (EXITED, KILLED) or parked node with fresh memory:
 * its main runs again at the next ckh_sim_run, seeing only what its
 * filesystems kept. Its incarnation counts one more. */
int ckh_sim_restart(struct ckh_sim *sim, int id);

/* ---- changing the job's shape between runs ----
 * A job restarted with another world size keeps one node per rank it ever
 * has; ranks beyond the current world are parked. */

/* Parks a node that is not running (READY, EXITED or KILLED; already
 * PARKED is a no-op): ckh_sim_run leaves it alone until ckh_sim_restart.
 * Nothing is traced and nothing else changes: its disks keep what they
 * hold, its rank stays (give it rank -1 with ckh_sim_set_rank to take it
 * out of the collective group). CKH_ESTATE for a RUNNING node, CKH_EINVAL
 * for a bad id. */
int ckh_sim_park(struct ckh_sim *sim, int id);
/* Gives a node that is not running (READY, EXITED, KILLED or PARKED)
 * collective rank `rank` (-1: out of the group). Allowed only between
 * runs (CKH_ESTATE inside ckh_sim_run or for a RUNNING node);
 * CKH_EEXISTS when another node holds the rank; CKH_EINVAL for a bad id or
 * a rank below -1. The group is rebuilt at the next ckh_sim_run, which
 * checks that the ranks are exactly 0..W-1 (W: nodes with rank >= 0);
 * survivors of the old group, if any, cannot meet the new one (the next
 * launch opens a new generation, as after any stop). */
int ckh_sim_set_rank(struct ckh_sim *sim, int id, int rank);

/* ---- trace ---- */
struct ckh_trace_rec {
    uint64_t seq;          /* index in the trace */
    uint64_t time_ns;      /* virtual time */
    int node;              /* node id (-1: environment) */
    enum ckh_op_kind kind; /* op */
    const char *path;      /* borrowed from the trace; NULL if none */
    const char *path2;     /* borrowed from the trace; NULL if none */
    uint64_t off;          /* op offset / peer / root */
    uint64_t len;          /* op length */
    int64_t arg;           /* op-specific */
    int64_t result;        /* result code or count */
    /* --- appended --- */
    int task;              /* 0: the node's main program; k: its background task k
                              (numbered 1, 2, ... per incarnation) */
};

/* The running hash of every trace record so far (kept or not). */
uint64_t ckh_sim_trace_hash(const struct ckh_sim *sim);
/* Number of trace records so far. */
uint64_t ckh_sim_trace_len(const struct ckh_sim *sim);
/* Requires keep_trace; pointers in *out stay valid while sim lives. */
int ckh_sim_trace_get(const struct ckh_sim *sim, uint64_t i, struct ckh_trace_rec *out);
/* Formats one record as a single line (no newline); returns the length
 * snprintf would have written. The format is stable and documented. */
int ckh_trace_format(const struct ckh_sim *sim, const struct ckh_trace_rec *r, char *buf, size_t n);

/* Virtual time now, in ns. */
uint64_t ckh_sim_now_ns(const struct ckh_sim *sim);
/* The seed the simulator was created with. */
uint64_t ckh_sim_seed(const struct ckh_sim *sim);

#endif
