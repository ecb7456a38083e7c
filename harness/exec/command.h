/* command.c: see exec/command_job.h for the command jobs' files. */
#ifndef CKH_EXEC_COMMAND_H
#define CKH_EXEC_COMMAND_H

#include "exec/command_job.h"

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
    /* appended: as struct ckh__cmd's on_s3 (NULL: not wanted) */
    void (*on_s3)(void *ctx, struct ckh__cmd *c, const struct ckh_s3_request *rq);
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
/* Makes c's object store (job.object_store) hold state's durable content
 * (ckh_objstore_restore; state stays the caller's) in place of the fresh
 * buckets ckh__cmd_init made: the crash state the explorer of requests
 * checks. CKH_EINVAL for a job without a store. */
int ckh__cmd_replace_store(struct ckh__cmd *c, const struct ckh_objstore *state);
/* Makes disks[m] (n of them, owned by c from now on) the disk of mount
 * m, in place of the fresh ones ckh__cmd_init made (mounts in the order
 * ckh__exec_build_disks makes them: disk by disk, node by node for a
 * node-local disk): a multi-disk crash state. CKH_EINVAL when n is not
 * c->nmounts (then c owns none of them). */
int ckh__cmd_replace_disks(struct ckh__cmd *c, struct ckh_simfs *const *disks, size_t n);
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
/* The explorer's order check: c (fresh from ckh__cmd_init, c->order set)
 * runs the whole job from its fresh disks, with its restarts, the order
 * forced by ckhfs; *r (the caller's, freed with ckh_scenario_run_free)
 * gets the runs with ref's reference, interval and source folder, for
 * the oracles. 0, or a code with c->err (r untouched). */
int ckh__cmd_order_run(struct ckh__cmd *c, const struct ckh_scenario_run *ref, struct ckh_scenario_run *r);
/* Runs the scenario's verify command against node i's view of its disks
 * (clones of c->disks, mounted for the call, or served by the kept mounts
 * c->verify_keep, one per disk). *ok: it exited 0; detail:
 * how it ended and the last line it printed. 0, or a code with c->err. */
int ckh__cmd_verify_view(struct ckh__cmd *c, int i, bool *ok, char *detail, size_t n);
/* Why a fault-free run did not complete, naming each node that failed
 * (CKH_EINVAL with err). */
int ckh__cmd_reference_incomplete(const struct ckh__cmd *c, char *err, size_t errlen);
/* Copies c's error (or rc's text) into err, prefixed by what unless it is
 * already located in the scenario file; returns the code. */
int ckh__cmd_take_err(const struct ckh__cmd *c, int rc, const char *what, char *err, size_t errlen);

#endif
