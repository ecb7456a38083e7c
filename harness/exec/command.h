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
 * Data flow of one scenario (ckh__cmd_harness_run):
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
#ifndef CKH_RUN_COMMAND_H
#define CKH_RUN_COMMAND_H

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
};

/* Pending crash of the current run, applied once every process is gone. */
struct ckh__cmd_crash {
    bool due;        /* a crash or power loss fired */
    bool all;        /* power loss: every node, every disk */
    int keep;        /* CKH_CRASH_KEEP_* */
    bool *nodes;     /* [n]: nodes whose machine crashed (owned) */
};

/* One execution of the job (the reference, the faulted job, a second
 * execution for --check-determinism). */
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
    struct ckh__cmd_node *nodes;     /* [n] (owned) */
    struct ckh_simfs **disks;        /* [ndisks * n]: disk d of node i (shared: the same) (owned) */
    struct ckh__cmd_mount *mounts;   /* every distinct disk (owned) */
    size_t nmounts;                  /* their count */
    struct ckh_records *records;     /* what the nodes reported (owned) */
    struct ckh_fault_env env;        /* the disks, for at-rest faults */
    struct ckh__cmd_rule *rules;     /* armed on the current run (owned) */
    size_t nrules;                   /* their count */
    bool at_rest_applied;            /* an at-rest fault changed the disks before this run */
    struct ckh__cmd_crash crash;     /* pending crash of the current run */
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
};

/* One command job's process-wide set-up: the run folder, FUSE checked,
 * the signal watch and child subreaper, undone by ckh__cmd_job_end. */
struct ckh__cmd_job {
    char dir[CKH__CMD_DIR_MAX - 8]; /* the run folder ("" when none) */
    char cwd[CKH__CMD_PATH_MAX];  /* the programs' working folder */
    int subreaper_was;            /* PR_GET_CHILD_SUBREAPER before */
    bool started;                 /* ckh__cmd_job_begin got that far */
};

/* ---- command.c ---- */

/* Starts a command job (every fault one a command job can deliver:
 * else CKH_EINVAL, ckh_fault_check_mode; FUSE usable: else CKH_ELIMIT,
 * exit 3; a run folder; signals watched; ckh a child subreaper). 0 or a code with err
 * set. ckh__cmd_job_end undoes it on every path (sweeps stale mounts,
 * removes the folder); a je that never started is a no-op there. */
int ckh__cmd_job_begin(const struct ckh_scenario *sc, struct ckh__cmd_job *je, char *err, size_t errlen);
void ckh__cmd_job_end(struct ckh__cmd_job *je);
/* One execution of sc's job in folder dir (created): nodes, programs
 * resolved, the record store, fresh disks with the checkpoint directory
 * and one mount folder per disk. mode CKH_RUN_NO_FAULTS: no fault is
 * armed. On failure c->err says why; ckh__cmd_free frees c either way
 * (kills and reaps what runs, unmounts). */
int ckh__cmd_init(struct ckh__cmd *c, const struct ckh_scenario *sc, uint64_t seed, unsigned mode,
                  const char *dir, const char *cwd);
void ckh__cmd_free(struct ckh__cmd *c);
/* The job with its restarts (one run without faults) into out's runs. */
int ckh__cmd_execute(struct ckh__cmd *c, struct ckh_scenario_run *out);
/* What a caller watches of a run (the crash explorer): on_op as
 * struct ckh__cmd's; on_end once after the run, its disks unmounted and
 * c's result files complete (NULL: not wanted). */
struct ckh__cmd_watch {
    void (*on_op)(void *ctx, struct ckh__cmd_mount *m, const struct ckh_ckhfs_op *op);
    void (*on_end)(void *ctx, struct ckh__cmd *c);
    void *ctx;
};
/* The fault-free reference run of sc in je's folder "ref", watched by w
 * (NULL: not): r->ref (with the checkpoint directory's file digests),
 * r->ref_ok and r->interval. A run that does not complete, hangs, writes
 * outside its mount or saves nothing there is CKH_EINVAL with err. */
int ckh__cmd_reference(const struct ckh_scenario *sc, uint64_t seed, const struct ckh__cmd_job *je,
                       const struct ckh__cmd_watch *w, struct ckh_scenario_run *r, char *err, size_t errlen);
/* Makes disk (owned by c from now on) the one disk of c's job, in place
 * of the fresh one ckh__cmd_init made: the crash state the explorer
 * checks. CKH_EINVAL for a job with more than one mount. */
int ckh__cmd_replace_disk(struct ckh__cmd *c, struct ckh_simfs *disk);
/* The explorer's restart check: c (fresh from ckh__cmd_init, its disk a
 * crash state) restarts a job whose first run was recorded elsewhere.
 * Run 1's records are the first run1_bytes[i] bytes of run1_results[i]
 * (what node i had reported when the crash came) and the crash ended
 * every node; `verify` runs as after any crash; runs 2.. are real, with
 * the scenario's restarts. *r (the caller's, freed with
 * ckh_scenario_run_free) gets the job's runs with ref's reference,
 * interval and source folder, for the oracles (judge/). 0, or a code with
 * c->err (r untouched). */
int ckh__cmd_restart_check(struct ckh__cmd *c, const struct ckh_scenario_run *ref, const char *const *run1_results,
                           const uint64_t *run1_bytes, struct ckh_scenario_run *r);
/* Runs the scenario's verify command against node i's view of its disks
 * (clones of c->disks, mounted for the call). *ok: it exited 0; detail:
 * how it ended and the last line it printed. 0, or a code with c->err. */
int ckh__cmd_verify_view(struct ckh__cmd *c, int i, bool *ok, char *detail, size_t n);
/* Why a fault-free run did not complete, naming each node that failed
 * (CKH_EINVAL with err). */
int ckh__cmd_reference_incomplete(const struct ckh__cmd *c, char *err, size_t errlen);
/* Copies c's error (or rc's text) into err, prefixed by what unless it is
 * already located in the scenario file; returns the code. */
int ckh__cmd_take_err(const struct ckh__cmd *c, int rc, const char *what, char *err, size_t errlen);

/* Records what went wrong in c->err (CKH_ERRF; the first failure wins);
 * returns code. */
#define ckh__cmd_fail(c, code, ...)                                                                \
    ((c)->err_code ? (code) : ((c)->err_code = CKH_ERRF((c)->err, (code), __VA_ARGS__)))

/* ---- command_proc.c ---- */

/* Resolves argv[0] of every node's program (and of verify) to an
 * executable file: a name without '/' on PATH (job.env's PATH first), a
 * path relative to the scenario's folder. CKH_EINVAL with a located
 * message when one is missing or not executable. */
int ckh__cmd_resolve(struct ckh__cmd *c, const struct ckh_scn_command *cmd, char *exe, size_t n);
/* A free TCP port on the loopback interface (bound to port 0 and
 * released; 29500 when that fails): MASTER_PORT of a run. */
int ckh__cmd_free_port(void);
/* Starts node i's incarnation for the current run. 0, or a code with
 * c->err set (the exec failed: CKH_EINVAL naming the program). */
int ckh__cmd_spawn_node(struct ckh__cmd *c, int i);
/* Runs argv once against the mounts (verify): waits at most timeout_ms,
 * kills its process group on every path. *status gets the wait status
 * (-1: timed out); out gets the last line it printed. */
int ckh__cmd_run_verify(struct ckh__cmd *c, int node, int *status, char *out, size_t n);
/* Waits for the current run's processes: reaps, fires progress and time
 * triggers, enforces sigterm graces, stops the job when a node fails
 * (scope all) and at job.timeout. Returns 0, or -EINTR when ckh was
 * interrupted (everything killed and reaped). */
int ckh__cmd_wait_run(struct ckh__cmd *c, bool *hung);
/* SIGKILL to node i's process group (lock held); why says by what. */
void ckh__cmd_kill_locked(struct ckh__cmd *c, int i, const char *why);
/* Kills and reaps every process of the job (every exit path). */
void ckh__cmd_kill_all(struct ckh__cmd *c);
/* The node a process belongs to (its process group, else its parents up
 * to a node's root), or -1. Callback of ckhfs (any thread). */
int ckh__cmd_node_of_pid(void *ctx, pid_t pid);
/* Installs ckh's SIGINT, SIGTERM and SIGHUP watch for the duration of a
 * command job (restored by ckh__cmd_signals_restore); the signal caught
 * (0: none). */
void ckh__cmd_signals_install(void);
void ckh__cmd_signals_restore(void);
int ckh__cmd_interrupted(void);

/* ---- command_fault.c ---- */

/* Arms the faults of run `run` and applies the at-rest faults without a
 * trigger (disks unmounted). 0 or a code with c->err. */
int ckh__cmd_arm(struct ckh__cmd *c, int run);
/* The ckhfs hook (server thread). */
void ckh__cmd_hook(void *ctx, const struct ckh_ckhfs_op *op, struct ckh_ckhfs_action *act);
/* The ckhfs kill callback (server thread). */
void ckh__cmd_kill_node(void *ctx, int node);
/* Progress and time triggers after node i's progress moved (lock held;
 * i < 0: time triggers only). Returns true when node i was killed. */
bool ckh__cmd_progress_triggers(struct ckh__cmd *c, int i);
/* Applies the pending crash of the run to the disks (disks unmounted). */
int ckh__cmd_apply_crash(struct ckh__cmd *c);
/* The unsynced operations node issued on disk d (-1: everyone's) meet
 * the crash model as keep (CKH_CRASH_KEEP_*) says. 0 or simfs's code. */
int ckh__cmd_crash_disk(struct ckh_simfs *d, int node, int keep);
/* Whether a fault fired in the current run (the record store's probe). */
bool ckh__cmd_fault_fired(void *ctx);
/* Appends a trace line (lock held). */
void ckh__cmd_trace_add(struct ckh__cmd *c, const struct ckh__cmd_trace *t);

/* ---- command_result.c ---- */

/* Reads what node i appended to its result file since the last call
 * (lock held): progress only, malformed lines ignored (the final read
 * reports them). Returns true when its progress moved. */
bool ckh__cmd_progress_refresh(struct ckh__cmd *c, int i);
/* Feeds every node's result file of the current run into the record
 * store. CKH_EPARSE ("$CKH_RESULT of rank_0 in run 1:3:7: ...") or the
 * store's refusal, with c->err set. */
int ckh__cmd_read_results(struct ckh__cmd *c);
/* Adds "file:<path>" final values (content digests of the checkpoint
 * directory, compare.ignore's file globs left out) to each node of jc:
 * node-local disks to their node, a shared disk to node 0. */
int ckh__cmd_add_file_digests(struct ckh__cmd *c, struct ckh_job_copy *jc);
/* Whether the program left anything in its working folder during the
 * reference run (a checkpoint written outside the mount): snapshot before,
 * compare after. */
struct ckh__cmd_snapshot;
int ckh__cmd_snapshot_take(const char *dir, struct ckh__cmd_snapshot **out);
/* 0, or CKH_EINVAL with msg naming the first file that appeared or changed. */
int ckh__cmd_snapshot_compare(const struct ckh__cmd_snapshot *s, const char *dir, char *msg, size_t n);
void ckh__cmd_snapshot_free(struct ckh__cmd_snapshot *s);

#endif
