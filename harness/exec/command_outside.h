/* Writes outside the checkpoint directory, by the process that made them
 * (exec/command_outside.c): while a command job's fault-free reference
 * run goes on, ckh watches the programs' working folder with fanotify and
 * keeps each file there that a process of the job closed after writing,
 * with the node it belongs to. A file that another process wrote (an
 * editor, another ckh writing its reports) is not the job's.
 *
 * Where fanotify cannot be used (it needs CAP_SYS_ADMIN), the watch says
 * why, and the caller falls back to comparing the folder before and after
 * the run (command_result.h's snapshot), naming what appeared without a
 * writer.
 */
#ifndef CKH_EXEC_COMMAND_OUTSIDE_H
#define CKH_EXEC_COMMAND_OUTSIDE_H

#include <stdbool.h>
#include <stddef.h>

#include "exec/command_job.h"

struct ckh__cmd_outside;

/* Starts watching the folder dir (the scenario's) for c's programs; the
 * run folder of ckh (skip, may be NULL) is left out. *out is freed with
 * ckh__cmd_outside_free. Returns 0; CKH_EUNSUPPORTED with why in msg when
 * fanotify cannot watch here (then *out is NULL and nothing is watched);
 * CKH_ENOMEM. */
int ckh__cmd_outside_start(const struct ckh__cmd *c, const char *dir, const char *skip,
                           struct ckh__cmd_outside **out, char *msg, size_t msglen);

/* Reads the events so far and attributes each to a node of c, while its
 * writer can still be looked up (called from the wait loop, lock held). */
void ckh__cmd_outside_poll(struct ckh__cmd_outside *o);

/* After the run: the events left, then the first file (by path) a
 * process of the job wrote, as "NODE (COMMAND) wrote PATH" in msg.
 * Returns true when there is one. */
bool ckh__cmd_outside_found(struct ckh__cmd_outside *o, char *msg, size_t msglen);

void ckh__cmd_outside_free(struct ckh__cmd_outside *o);

#endif
