/* command_fault.c: see exec/command_job.h for the command jobs' files. */
#ifndef CKH_EXEC_COMMAND_FAULT_H
#define CKH_EXEC_COMMAND_FAULT_H

#include "exec/command_job.h"

/* Arms the faults of run `run` and applies the at-rest faults without a
 * trigger (disks unmounted). 0 or a code with c->err. */
int ckh__cmd_arm(struct ckh__cmd *c, int run);
/* The ckhfs hook (server thread). */
void ckh__cmd_hook(void *ctx, const struct ckh_ckhfs_op *op, struct ckh_ckhfs_action *act);
/* The S3 endpoint's hook (a port's thread, the store's lock held): the
 * fault rules matched against an object-store request (docs/OBJECT_STORE.md,
 * "Faults"). ctx is the struct ckh__cmd. */
void ckh__cmd_s3_hook(void *ctx, const struct ckh_s3_request *rq, struct ckh_s3_fault *out);
/* The ckhfs held_answered callback (server thread): a trace line where a
 * delayed operation was answered. */
void ckh__cmd_held_answered(void *ctx, const struct ckh_ckhfs_op *op);
/* The ckhfs released callback (server thread): whether c->order's held
 * operation may go on. */
bool ckh__cmd_order_released(void *ctx, const struct ckh_ckhfs_op *op);
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

#endif
