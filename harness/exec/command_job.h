/* Command jobs: real programs as the nodes of a job (docs/SCENARIOS.md,
 * "Command jobs"). Private to harness/exec/.
 *
 * A scenario with job.command runs, per node, a process (its own process
 * group) with torchrun's environment and ckh's own variables; the
 * checkpoint directory is a ckhfs mount (harness/ckhfs/ckhfs.h) of a simfs
 * disk, so every write, fsync, rename of the program meets simfs's crash
 * model, the fault script and the trace. The run folder, the runs with
 * restarts, verify and the verdict are in command.c; processes in
 * command_proc.c; the fault script on real processes in command_fault.c;
 * result files and the checkpoint directory's file digests in
 * command_result.c. The record store, the job result and the oracles are
 * the simulated path's own (exec/records.h, exec/runner.h, oracles/).
 *
 * The files, in the order they depend on each other (each header is its
 * file's interface; this one holds the types they all share):
 *   command_result.c  result files and the checkpoint directory's digests;
 *   command_proc.c    processes: spawning, waiting, killing, signals;
 *   command_ns.c      the fixed checkpoint path: a mount namespace per process;
 *   command_warm.c    warm starts: Python programs forked from a launcher;
 *   command_fault.c   the fault script on processes and disks;
 *   command_store.c   the object store's operations, copied for the oracles;
 *   command.c         one execution's runs, verify, the executor's tables.
 * Every file a program can reach (its result file, its log, verify's log)
 * is opened and made through exec/prog_file.h: never through a link,
 * never waiting on a FIFO, read only as a regular file under named limits.
 * The process layer reports progress through c->on_progress (set to the
 * fault script's triggers by ckh__cmd_init), so it knows nothing of faults.
 *
 * Data flow of one scenario (the command executor, exec/exec.h):
 *   1. checks: FUSE usable (exit 3 otherwise), every program found and
 *      executable (exit 2), faults that cannot apply refused at parse time;
 *   2. the reference run: the job once, no faults, fresh disks;
 *   3. the faulted job: runs with restarts (scope: every process, or only
 *      the failed ones), the crash model applied to the disks after a
 *      crash or power loss, `verify` before each restart, at-rest faults
 *      between runs;
 *   4. each run's result files read into the record store, collected into
 *      the job result; the checkpoint directory's files added to each
 *      node's final values ("file:<path>", for `reference`);
 *   5. the oracles (run/judge.c).
 *
 * Threads: the ckhfs server threads call the hook, node_of_pid and
 * kill_node while the main thread waits for processes, reads result files
 * and fires progress triggers; `lock` guards the nodes, the rules and the
 * trace order. Simfs disks are touched by the server while mounted, by the
 * main thread only while unmounted (at-rest faults, crashes, digests).
 */
#ifndef CKH_EXEC_COMMAND_JOB_H
#define CKH_EXEC_COMMAND_JOB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ckh/err.h"
#include "ckh/rng.h"
#include "ckh/sim.h"
#include "model/fault.h"
#include "ckhfs/ckhfs.h"
#include "ckhfs/s3_endpoint.h"
#include "exec/exec.h"
#include "exec/records.h"
#include "exec/runner.h"
#include "report.h"

#define CKH__CMD_PATH_MAX 1024
#define CKH__CMD_DIR_MAX 512 /* an execution's folder: room for what goes below it */

/* What one node's result records said so far in the current run. */
struct ckh__cmd_progress {
    int64_t step;         /* its current step: the last recorded, or resumed from (-1: none) */
    int64_t epoch;        /* the epoch of that step (-1: none) */
    int64_t progress;     /* the highest step (or epoch) it recorded */
    bool resume_known;    /* a resume or step record arrived */
    int64_t resume_point; /* the step (or epoch) it resumed from (0: scratch) */
    bool has_final;       /* a final record arrived */
    int64_t last_save;    /* step (epoch) of its last successful save (0: none) */
    int64_t save_gap_max; /* largest gap between successful saves, from 0 */
    uint64_t saves_ok;    /* successful saves recorded */
};

/* How a node's incarnation ended (or did not). */
enum ckh__cmd_end {
    CKH__CMD_NOT_STARTED = 0, /* not part of this run */
    CKH__CMD_RUNNING,         /* still running (or never reaped: a hang) */
    CKH__CMD_EXITED,          /* exited with exit_status */
    CKH__CMD_SIGNALED,        /* died of a signal ckh did not send (term_sig) */
    CKH__CMD_KILLED,          /* ckh killed it (a fault, a grace ran out, the agent, a hang) */
};

/* One node of the job. */
struct ckh__cmd_node {
    char name[CKH_NODE_NAME_LEN];      /* "rank_0" */
    const struct ckh_scn_command *cmd; /* its program (borrowed from the scenario) */
    char exe[CKH__CMD_PATH_MAX];       /* argv[0] resolved to a file */
    int rank;                          /* rank in the current run; -1: not in it */
    bool start;                        /* starts in the current run */
    pid_t pid;                         /* root process and process group (0: none) */
    int pidfd;                         /* the root's pidfd (-1: none) */
    bool reaped;                       /* the root was reaped */
    bool group_gone;                   /* nothing of its process group is left */
    enum ckh__cmd_end end;             /* how this incarnation ended */
    int exit_status;                   /* EXITED: the status */
    int term_sig;                      /* SIGNALED: the signal */
    const char *killed_why;            /* KILLED: by what ("a fault", ...; static) */
    bool preempted;                    /* a sigterm fault reached it */
    uint64_t kill_at_ms;               /* SIGKILL due then (sigterm grace; 0: none) */
    char result[CKH__CMD_PATH_MAX];    /* CKH_RESULT of this incarnation */
    char log[CKH__CMD_PATH_MAX];       /* its stdout and stderr */
    int result_fd;                     /* open for progress reading (-1: none) */
    char *partial;                     /* bytes after the last newline read (owned) */
    size_t npartial;                   /* their count */
    size_t cpartial;                   /* partial's allocated bytes */
    uint64_t result_read;              /* bytes the progress reader read in this run */
    bool result_over;                  /* the result file broke a limit: no more reading */
    struct ckh__cmd_progress prog;     /* what its records said in this run */
    char last_op[160];                 /* the last operation it asked of a mount */
};

/* One ckhfs mount: a disk served at a folder of the run. */
struct ckh__cmd_mount {
    struct ckh__cmd *c;           /* the job */
    struct ckh_simfs *disk;       /* the disk (borrowed; for verify, a clone it owns) */
    struct ckh_simfs *orig;       /* verify: the job's disk it is a clone of (else NULL) */
    size_t disk_index;            /* its job.disks entry */
    int node;                     /* the node of a node-local disk (-1: shared) */
    bool verify;                  /* served to `verify`: no faults, no nodes */
    const char *prefix;           /* the disk's mount point in scenario paths ("/") */
    char dir[CKH__CMD_PATH_MAX];  /* where it is mounted */
    struct ckh_ckhfs *fs;         /* the mount (NULL: not mounted) */
};

/* A scenario fault armed on the current run (command_fault.c). */
struct ckh__cmd_rule {
    size_t fault;             /* its index in the scenario */
    struct ckh_fault_rule r;  /* selectors and action, as the descriptor arms them
                                 (path_glob borrowed from the scenario) */
    bool progress;            /* fires on progress or time (ckh_scn_fault_is_progress_trigger) */
    bool sigterm;             /* a preemption (its descriptor's acts_on_process) */
    bool at_rest;             /* an at-rest fault applied at its trigger (a CALL rule) */
    uint64_t grace_ms;        /* sigterm: SIGKILL this long after */
    struct ckh_fault_state state; /* the matcher's counters and its stream
                                     ckh_seed_derive(seed, "fault/INDEX") (ckh/fault_rule.h) */
};

/* One line of the trace `ckh replay` prints. */
struct ckh__cmd_trace {
    int run;            /* 1-based run the line belongs to */
    bool verify;        /* an operation of `verify`, after run `run` */
    int mount;          /* index of the mount in c->mounts (-1: a fault line) */
    uint64_t seq;       /* the operation's seq on that mount (its result is filled in
                           from the mount's trace when the run ends) */
    int node;           /* node index (-1: not a process of the job) */
    pid_t pid;          /* the caller */
    int kind;           /* enum ckh_op_kind; CKH_OP_FAULT for a fault line */
    char *path;         /* scenario path (owned; NULL: none) */
    char *path2;        /* rename destination, symlink target, or a fault's "op:action" (owned) */
    uint64_t off;       /* offset */
    uint64_t len;       /* length (a fault: bytes kept or ms delayed) */
    int64_t result;     /* the answer (bytes, 0, -errno); a fault: its scenario index */
    bool answer;        /* the answer to a delayed operation (seq), where it was given:
                           other operations may lie between it and the operation's line */
};

/* Pending crash of the current run, applied once every process is gone. */
struct ckh__cmd_crash {
    bool due;        /* a crash or power loss fired */
    bool all;        /* power loss: every node, every disk */
    int keep;        /* CKH_CRASH_KEEP_* */
    bool *nodes;     /* [n]: nodes whose machine crashed (owned) */
};

/* An order of two nodes' operations the explorer forces on a shared disk
 * (docs/ARCHITECTURE.md, "Orders of several nodes"): the nth operation of
 * kind hold_kind on hold_path that node hold_node asks is held (ckhfs's
 * HOLD, L5) until node until_node has asked anything of until_path or a
 * path below it, and that request has been answered; at most max_ms. */
struct ckh__cmd_order {
    int hold_node;                   /* the node whose operation waits */
    int hold_kind;                   /* enum ckh_op_kind of that operation */
    char hold_path[CKH_PATH_MAX];    /* its path, as the scenario names it */
    uint64_t hold_nth;               /* which of that node's such operations (1-based) */
    int until_node;                  /* the node that goes first */
    char until_path[CKH_PATH_MAX];   /* the path it goes first on */
    uint32_t max_ms;                 /* the longest hold */
    /* what happened (the hook's, under the job's lock) */
    uint64_t seen;                   /* hold_node's matching operations so far */
    bool held;                       /* the operation was held */
    bool released;                   /* until_node reached until_path */
};

/* One execution of the job (the reference, the faulted job, a second
 * execution for --check-determinism). */
struct ckh__cmd_outside;

struct ckh__cmd {
    const struct ckh_scenario *sc;   /* the scenario */
    uint64_t seed;                   /* the seed in use */
    unsigned mode;                   /* CKH_RUN_NO_FAULTS for the reference */
    char dir[CKH__CMD_DIR_MAX];      /* this execution's folder (inside the run folder) */
    const char *cwd;                 /* the programs' working folder (the scenario's) */
    int n;                           /* nodes: max(job.nodes, restart.world_size) */
    bool step_based;                 /* progress counts steps (else epochs: checkpoint_every.epochs) */
    int world_first;                 /* ranks of run 1 */
    int world_restart;               /* ranks of runs 2.. */
    int run;                         /* the current run (1-based) */
    uint64_t run_t0_ms;              /* when it started (monotonic) */
    int master_port;                 /* MASTER_PORT of the current run */
    int ns_mode;                     /* enum ckh__ns_mode (exec/command_ns.h): how its
                                        processes see job.checkpoint_mount */
    struct ckh__cmd_node *nodes;     /* [n] (owned) */
    struct ckh_simfs **disks;        /* [ndisks * n]: disk d of node i (shared: the same) (owned) */
    bool disks_oom;                  /* a disk replaced since had run out of ckh's memory */
    struct ckh__cmd_mount *mounts;   /* every distinct disk (owned) */
    size_t nmounts;                  /* their count */
    struct ckh_records *records;     /* what the nodes reported (owned) */
    struct ckh_fault_env env;        /* the disks, for at-rest faults */
    struct ckh__cmd_rule *rules;     /* armed on the current run (owned) */
    size_t nrules;                   /* their count */
    bool at_rest_applied;            /* an at-rest fault changed the disks before this run */
    bool hook_reads_progress;        /* an armed rule needs the node's records at each
                                        operation: a progress trigger, or a step or epoch
                                        selector (ckh__cmd_arm) */
    struct ckh__cmd_crash crash;     /* pending crash of the current run */
    struct ckh__cmd_outside *outside; /* the watch for writes outside the checkpoint
                                         directory (command_outside.h; borrowed, NULL: none) */
    struct ckh_scenario_run *rec;    /* firing counts go here (NULL: reference) */
    struct ckh__cmd_trace *trace;    /* every operation, every run (owned) */
    size_t ntrace, captrace;         /* its length and capacity */
    pthread_mutex_t lock;            /* see the top of the file */
    bool lock_ready;                 /* lock initialised */
    char err[CKH_ERRMSG_BYTES];      /* what went wrong (located where possible) */
    int err_code;                    /* its code (0: none) */
    /* Called first for every operation a process of the job asks of a
     * mount (server thread, lock held, the mount's disk usable directly),
     * with the node's progress read up to that operation; NULL: none.
     * The crash explorer records and snapshots a program's save with it. */
    void (*on_op)(void *ctx, struct ckh__cmd_mount *m, const struct ckh_ckhfs_op *op);
    void *on_op_ctx;                 /* passed to on_op */
    /* Called first for every request a node sends to the object store's
     * endpoint (a port's thread, the store's lock and c's lock held),
     * before it is applied: the store then holds every request before it.
     * NULL: none. The explorer of requests (search/explore_store.c) cuts
     * the store with it. */
    void (*on_s3)(void *ctx, struct ckh__cmd *c, const struct ckh_s3_request *rq);
    void *on_s3_ctx;                 /* passed to on_s3 */
    /* Called by the wait loop (command_proc.c, lock held) after node i's
     * progress moved (i < 0: time passed): the fault script's progress
     * and time triggers (ckh__cmd_progress_triggers, set by
     * ckh__cmd_init). Returns true when node i was killed. */
    bool (*on_progress)(struct ckh__cmd *c, int i);
    /* Warm launchers of this process (exec/command_warm.h; borrowed):
     * programs start from them where they can. NULL: every start cold. */
    struct ckh__warm_set *warm;
    /* Verify mounts kept from one execution to the next (the crash
     * explorer's check workers; the slots are the caller's). NULL: each
     * verify mounts its clone of the disks and unmounts it. Else
     * verify_keep[d] (one slot per disk of the job, job.disks order)
     * serves verify's clone of disk d (ckh_ckhfs_swap_disk): mounted by
     * the first call that needs it (the slot NULL) at
     * <dir>/mnt/verify.<disk name> (verify_keep_dir instead for a job with
     * one disk, when set), left mounted with no disk after each; the
     * caller unmounts them (ckh_ckhfs_unmount). Their kernel settings
     * (cache_names) are the first call's. */
    struct ckh_ckhfs **verify_keep;
    const char *verify_keep_dir;
    /* job.object_store (docs/OBJECT_STORE.md): the store lives as long as
     * the execution, across its runs, served to every node on its own port
     * (ckh__cmd_store_start); NULL when the job has none. */
    struct ckh_objstore *store;      /* the store (owned) */
    struct ckh_s3_server *s3;        /* its endpoint (owned) */
    size_t *store_run_end;           /* [run - 1]: the store's trace length when run ended (owned) */
    size_t nstore_run;               /* runs ended so far */
    /* Appended: an order the explorer forces (NULL: none; borrowed,
     * changed under lock by the hook). */
    struct ckh__cmd_order *order;
    /* Appended: with job.object_store.commit, the step each node had
     * reported when it sent a delete to the store (the retention oracle
     * names it; ckh__cmd_store_ops_take). Owned; changed under lock. */
    struct ckh__cmd_delete_step *delete_steps;
    size_t ndelete_steps, capdelete_steps;
};

/* A delete request of a node: the store's next operation number when it
 * arrived, and the node's last reported step (-1: none). */
struct ckh__cmd_delete_step {
    uint64_t seq;
    int node;
    int64_t step;
};

/* The store's operations on keys, with the run and (for a node's delete)
 * the step, copied into r->store_ops (any earlier copy freed first). With
 * no store, nothing. 0 or CKH_ENOMEM (c->err says so; r keeps none). */
int ckh__cmd_store_ops_take(struct ckh__cmd *c, struct ckh_scenario_run *r);

/* One command job's process-wide set-up: the run folder, FUSE checked,
 * the signal watch and child subreaper, undone by ckh__cmd_job_end. */
struct ckh__cmd_job {
    char dir[CKH__CMD_DIR_MAX - 8]; /* the run folder ("" when none) */
    char cwd[CKH__CMD_PATH_MAX];  /* the programs' working folder */
    int subreaper_was;            /* PR_GET_CHILD_SUBREAPER before */
    bool started;                 /* ckh__cmd_job_begin got that far */
};

/* Records what went wrong in c->err (CKH_ERRF; the first failure wins);
 * returns code. */
#define ckh__cmd_fail(c, code, ...)                                                                \
    ((c)->err_code ? (code) : ((c)->err_code = CKH_ERRF((c)->err, (code), __VA_ARGS__)))


#endif
