/* command_result.c: see exec/command_job.h for the command jobs' files. */
#ifndef CKH_EXEC_COMMAND_RESULT_H
#define CKH_EXEC_COMMAND_RESULT_H

#include "exec/command_job.h"

/* Reads what node i appended to its result file since the last call
 * (lock held), at most budget bytes (UINT64_MAX: all there is, which the
 * limits below bound): progress
 * only, malformed lines ignored (the final read reports them). The buffer
 * holds one partial line; a partial line past CKH_RECORD_JSONL_LINE_MAX or
 * a file past the result file limit (1 GiB; its size is looked at first)
 * sets the node's result_over and c->err naming the limit: the wait loop
 * (command_proc.c) then stops the job.
 * Returns true when its progress moved. */
bool ckh__cmd_progress_read(struct ckh__cmd *c, int i, uint64_t budget);
/* ckh__cmd_progress_read of all there is (lock held): the records up to
 * an operation of the program, for triggers and the crash explorer. */
bool ckh__cmd_progress_refresh(struct ckh__cmd *c, int i);
/* Feeds every node's result file of the current run into the record
 * store (exec/prog_file.h's rules: a FIFO, a folder, a link or a hard
 * link there is refused with CKH_EINVAL naming what was found; a file
 * past 1 GiB with CKH_EINVAL naming the limit). CKH_EPARSE ("$CKH_RESULT
 * of rank_0 in run 1:3:7: ...") or the store's refusal, with c->err set. */
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
/* Whether a file or folder name is no checkpoint and is left out of the
 * folder's snapshot and of the outside-write watch: an interpreter's
 * bytecode cache, .git, ckh's own run folders. */
bool ckh__cmd_snapshot_skipped(const char *name);

#endif
