/* The fault script of one real node (a process of ckh's real platform):
 * fault rules (struct ckh_fault_rule of ckh/fault_rule.h: nothing of the
 * simulator is included or linked), matched against the operations the
 * node asks of its filesystem and collectives, and carried out on the
 * process itself.
 *
 * Matching is the one matcher's (ckh/fault_rule.h, M1 to M7), the same
 * the simulator and command jobs call: a rule matches an operation when
 * each selector it sets matches (node index, op kind, fnmatch of the path
 * glob, the node's phase, epoch and step, time) and its action fits the
 * op (MISMATCH the group collectives, FSYNC_LOST fsync and fdatasync,
 * SHORT_WRITE write and pwrite); every match counts; it fires on its nth
 * match (with `repeat` on every later one too, deferred to the next match
 * when an earlier rule took the op), or with `probability` per match from
 * the stream ckh_seed_derive(seed, "fault/INDEX"). The first rule that
 * fires gives the action.
 *
 * What differs from the simulator:
 *   - time (at_time_ns) is wall-clock time since the node started, not
 *     virtual time;
 *   - the rules' counters live in a state file shared by every process of
 *     the run (under an fcntl lock), so a rule that names no node counts
 *     the matches of the whole job as in the simulator; which process gets
 *     there first is up to the machine, not to a seeded scheduler;
 *   - actions are real: KILL_BEFORE is SIGKILL to this process before the
 *     op, DELAY sleeps in wall time; the caller carries out ERRNO,
 *     KILL_AFTER, KILL_MID, SHORT_WRITE and MISMATCH (ckh_real_faults_kill
 *     for the kills);
 *   - crashes, power loss, FSYNC_LOST and CALL (at-rest changes) need a
 *     simulated disk: only when the node's "/" is a ckhfs mount served by
 *     the launcher (cfg.notes_dir set) are they armed, and then carried
 *     out with the launcher: CRASH_BEFORE kills this process (the launcher
 *     applies the crash model to the disk once the run's processes are
 *     gone, from the firing log); POWER_LOSS first creates the run's
 *     power note (NOTES/power.RUN: the launcher's ckhfs hook kills every
 *     node at its next operation and the launcher kills the rest), then
 *     kills this process; FSYNC_LOST on an fsync leaves the note
 *     NOTES/note.PID "fsync_lost PATH" and comes back to the caller, whose
 *     fsync then reaches the launcher, which drops that file's unsynced
 *     data on the disk and fails the fsync with EIO (simfs's semantics);
 *     CALL leaves "call FAULT" and comes back as CALL: the caller then
 *     asks the mount one operation (a stat of "/"), at which the launcher
 *     applies that at-rest fault to the disk. A note is consumed by the
 *     launcher at the operation it belongs to.
 *
 * Every firing is appended, before it is carried out, as one line
 * "fired RULE FAULT OP ACTION PATH" to the firing log, so the launcher
 * counts firings of a process that the fault then killed.
 */
#ifndef CKH_REAL_FAULTS_H
#define CKH_REAL_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "ckh/fault_rule.h"
#include "ckh/op.h"

struct ckh_real_faults;

/* One armed rule: the rule and the scenario fault it came from. */
struct ckh_real_rule {
    struct ckh_fault_rule rule; /* selectors and action (strings borrowed for the set's life) */
    size_t fault;               /* its index in the scenario (for the firing log) */
};

struct ckh_real_faults_config {
    uint64_t seed;                     /* the run's seed (probability streams) */
    const struct ckh_real_rule *rules; /* every rule armed on the run, in the simulator's
                                          order (rule INDEX is its position), all nodes' */
    size_t nrules;                     /* their count */
    const char *state_path;            /* the run's shared counters (created if missing;
                                          NULL: this process counts alone) */
    const char *log_path;              /* the firing log (appended; NULL: none) */
    const char *notes_dir;             /* the notes to the launcher (see the top); NULL:
                                          the disk is a real folder, and crash, power
                                          loss, fsync_lost and call are refused */
    int run;                           /* the run (1-based), for the power note's name */
};

/* A fault script for one process. CKH_EINVAL for a rule with an action
 * the real platform cannot carry out without a ckhfs mount (crash, power
 * loss, fsync_lost, call, when cfg->notes_dir is NULL; msg names it), -errno when a file cannot be opened, CKH_ENOMEM.
 * *out is freed with ckh_real_faults_destroy; a set with no rules is
 * valid (every op passes). */
int ckh_real_faults_create(const struct ckh_real_faults_config *cfg, struct ckh_real_faults **out,
                           char *msg, size_t msglen);
void ckh_real_faults_destroy(struct ckh_real_faults *f);

/* Evaluates op (op->node: the node index; phase, epoch and step filled
 * in) and fills *act (NONE when nothing fires). KILL_BEFORE,
 * CRASH_BEFORE and POWER_LOSS do not return; DELAY sleeps here and comes
 * back as NONE; KILL_MID and SHORT_WRITE come back with keep_bytes
 * resolved against op->len; FSYNC_LOST (on fsync and fdatasync only) and
 * CALL come back with their note left (see the top). NULL f: NONE.
 * Thread-safe. */
void ckh_real_faults_enter(struct ckh_real_faults *f, const struct ckh_op *op,
                           struct ckh_fault_action *act);

/* SIGKILL to this process (a fault's kill); does not return. */
_Noreturn void ckh_real_faults_kill(void);

#endif
