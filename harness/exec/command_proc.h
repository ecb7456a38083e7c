/* command_proc.c: see exec/command_job.h for the command jobs' files. */
#ifndef CKH_EXEC_COMMAND_PROC_H
#define CKH_EXEC_COMMAND_PROC_H

#include "exec/command_job.h"

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
/* A program's child between fork and exec (async-signal-safe calls
 * only): its own process group, dies with ckh (exits 127 at once when
 * parent, ckh, is gone already), default signal dispositions and an empty
 * mask, working folder cwd, stdin in_fd, stdout and stderr out_fd. false
 * when one of those failed (errno says which); the caller exits. */
bool ckh__cmd_child_prepare(pid_t parent, const char *cwd, int in_fd, int out_fd);
/* The same for a caller that holds c->lock (or runs when no server thread
 * does): the node whose root process or process group pid is in, else
 * whose root its parents lead to; -1 for no node's process or one gone. */
int ckh__cmd_node_of_pid_locked(const struct ckh__cmd *c, pid_t pid);
/* Installs ckh's SIGINT, SIGTERM and SIGHUP watch for the duration of a
 * command job (restored by ckh__cmd_signals_restore); the signal caught
 * (0: none). */
void ckh__cmd_signals_install(void);
void ckh__cmd_signals_restore(void);
int ckh__cmd_interrupted(void);

#endif
