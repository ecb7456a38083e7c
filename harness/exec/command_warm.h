/* command_warm.c: warm starts of a command job's Python programs (see
 * exec/command_job.h for the command jobs' files, docs/ARCHITECTURE.md,
 * "Warm starts", for why a pre-forking launcher).
 *
 * A launcher is one Python interpreter (the program's own, with the
 * program's interpreter options) running tools/ckh_warm.py (built into
 * ckh): it imports what the program's script imports at top level, then
 * forks one process per start of the program, which ckh adopts as its
 * child (ckh is a child subreaper while a launcher set exists) and then
 * treats exactly as a process it forked and executed: its own process
 * group, killed and reaped by the same code, the same environment, folder,
 * descriptors and log. A start pays a fork instead of the interpreter's
 * start-up and the program's imports (torch: seconds).
 *
 * A set belongs to one process (a check worker of ckh explore) and holds
 * at most one launcher per program (interpreter, options, script, folder),
 * each started on the program's first start. A program that cannot start
 * warm (not `PYTHON [options] SCRIPT ...`, a launcher that does not start,
 * an import that fails other than with ImportError) starts cold, and the
 * set keeps the first reason; a required set makes that an error instead.
 */
#ifndef CKH_EXEC_COMMAND_WARM_H
#define CKH_EXEC_COMMAND_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "exec/command_job.h"
#include "exec/command_ns.h"

struct ckh__warm_set;

/* Creates the calling process's launcher set. dir: a folder for the
 * launchers' files and logs (created; removed with the run folder);
 * required: a program that cannot start warm is an error (CKH_EINVAL)
 * rather than a cold start. Makes the caller a child subreaper until
 * ckh__warm_set_destroy. 0 with *out (the caller's), or CKH_ENOMEM /
 * CKH_EINTERNAL with err. */
int ckh__warm_set_create(const char *dir, bool required, struct ckh__warm_set **out, char *err, size_t errlen);
/* Ends every launcher of s (closes its channel, kills its process group,
 * reaps it), restores the subreaper setting, frees s. NULL: no-op. */
void ckh__warm_set_destroy(struct ckh__warm_set *s);
/* Starts so far: *warm from a launcher, *cold not; note gets the first
 * reason a program started cold ("" when none). */
void ckh__warm_set_counts(const struct ckh__warm_set *s, uint64_t *warm, uint64_t *cold, char *note, size_t n);

/* Whether cmd has the shape a launcher serves: a Python interpreter
 * (argv[0] named python, python3, python3.11, ...), interpreter options
 * it supports (-b -B -d -E -I -O -P -q -s -S -u -v -x, -W ARG, -X ARG),
 * then a script file. true with *script_at its index in argv; else false
 * with why (one line) in why. */
bool ckh__warm_serves(const struct ckh_scn_command *cmd, size_t *script_at, char *why, size_t n);

/* Makes sure the launcher of node program cmd (exe: argv[0] resolved) is
 * up, starting it with envp less the per-run variables (not with c->lock
 * held: a start takes the program's imports' time). The time a launcher
 * takes to start is added to c->run_t0_ms (it is not the program's).
 * 0 (a warm or a cold start will follow), or a code with c->err when the
 * set is required and cmd cannot start warm. c->warm NULL: 0. */
int ckh__warm_prepare(struct ckh__cmd *c, const char *exe, const struct ckh_scn_command *cmd, char *const *envp);
/* Starts cmd from its launcher with envp (copied into the process), its
 * output to log, in c->cwd, in the mount namespace ns (the started process
 * makes it before the program's first line; one it cannot make ends the
 * process with status 127 and the reason in log): 0 with *pid (ckh's
 * child, its own process group's leader), 1 when it must start cold (no
 * launcher: counted and noted), or a code with c->err (required set). */
int ckh__warm_spawn(struct ckh__cmd *c, const char *exe, const struct ckh_scn_command *cmd, char *const *envp,
                    const struct ckh__ns_spec *ns, const char *log, pid_t *pid);
/* Whether pid is a launcher of the calling process's set (a child that
 * the stray reaper must leave alone). */
bool ckh__warm_is_launcher(pid_t pid);

#endif
