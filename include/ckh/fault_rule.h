/* Fault rules and the one matcher every mode of running uses.
 *
 * A fault rule says which operations it selects (node, op kind, path glob,
 * phase, epoch, step, time) and what happens to the one it fires on. The
 * simulator (sim/sched.c), the real platform's rank programs (real/faults.c)
 * and command jobs over ckhfs (harness/exec/command_fault.c) all ask this
 * matcher (platform/fault_match.c); what each of them supplies is the
 * operation as it saw it and its own clock.
 *
 * Matching, the specification the tests cite (tests/test_fault_match.c):
 *   M1 A rule selects an op when each selector it sets matches: node
 *      (-1 any), kind (-1 any), fnmatch(path_glob, op->path, 0) (an op
 *      without a path never matches a glob), phase (strcmp; an op with no
 *      phase never matches one), epoch and step (-1 any), and
 *      now >= at_time_ns (0: any time).
 *   M2 An allocation (CKH_OP_ALLOC) is selected only by a rule whose kind
 *      is ALLOC; a rule of any other kind, including -1, never sees one.
 *   M3 An action that only makes sense on some ops does not select the
 *      others, so it is neither counted nor used up there: MISMATCH only
 *      the group collectives (barrier, broadcast, allreduce, allgather),
 *      FSYNC_LOST only fsync and fdatasync, SHORT_WRITE only write and
 *      pwrite. An allocation takes any action (it fails).
 *   M4 Every selected op counts as a match, even when another rule fires
 *      on it. Without probability a rule is due on its nth match (nth 0
 *      means 1) and, with `repeat`, on every later one too; with
 *      probability > 0 it is due on each match with that chance, drawn
 *      from its own stream ckh_seed_derive(seed, "fault/INDEX").
 *   M5 Rules are asked in order; the first due rule fires and gives the
 *      action. A later rule due on an op an earlier one took does not
 *      fire; if it fires on its nth match only (no probability, no
 *      repeat), it fires on its next match instead of being used up.
 *   M6 A rule that fired without `repeat` is spent: it selects nothing
 *      more.
 *   M7 KILL_MID and SHORT_WRITE keep keep_bytes of the write, or, when
 *      keep_bytes is 0 and keep_fraction is not, that fraction of its
 *      length (a SHORT_WRITE by a fraction keeps at least one byte of a
 *      non-empty write); never more than the write's length.
 */
#ifndef CKH_FAULT_RULE_H
#define CKH_FAULT_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/op.h"
#include "ckh/rng.h"

/* ---- actions ---- */

enum ckh_fault_kind {
    CKH_FAULT_NONE = 0,
    CKH_FAULT_ERRNO,       /* the op fails with -err and has no effect */
    CKH_FAULT_KILL_BEFORE, /* the node dies before the op (process kill) */
    CKH_FAULT_KILL_AFTER,  /* the node dies right after the op completes */
    CKH_FAULT_KILL_MID,    /* write: keep_bytes reach the page cache, then death */
    CKH_FAULT_CRASH_BEFORE, /* the node's machine crashes before the op */
    CKH_FAULT_POWER_LOSS,  /* every node dies, every disk applies its crash model */
    CKH_FAULT_DELAY,       /* the op takes delay_ns more virtual time */
    CKH_FAULT_FSYNC_LOST,  /* fsync: dirty data of the file is dropped, -EIO returned
                              (Linux semantics: a retry then reports success) */
    CKH_FAULT_CALL,        /* call(call_ctx, op) runs, then the op proceeds normally
                              (the harness changes data at rest at a trigger) */
    CKH_FAULT_MISMATCH,    /* collective: this rank joins a different collective than
                              its peers (a barrier for anything else, an allreduce for a
                              barrier), so the group mismatches */
    CKH_FAULT_SHORT_WRITE, /* write/pwrite: only the first keep_bytes bytes are accepted
                              and land; the op returns that short count (as a real
                              pwrite may); the node lives on */
    CKH_FAULT__COUNT       /* number of kinds (not an action) */
};

struct ckh_fault_action {
    enum ckh_fault_kind kind; /* what happens */
    int err;                  /* CKH_FAULT_ERRNO: positive errno (EIO, ENOSPC, ...) */
    uint64_t keep_bytes;      /* CKH_FAULT_KILL_MID: bytes of the write that land;
                                 CKH_FAULT_SHORT_WRITE: bytes the write accepts (0 with no
                                 keep_fraction: a write of 0 bytes) */
    uint64_t delay_ns;        /* CKH_FAULT_DELAY: extra virtual time */
    void (*call)(void *ctx, const struct ckh_op *op); /* CKH_FAULT_CALL: the callback */
    void *call_ctx;           /* CKH_FAULT_CALL: its context (borrowed) */
    int crash_keep;           /* CRASH_BEFORE, POWER_LOSS: CKH_CRASH_KEEP_* */
};

/* What a machine crash or power loss keeps of each disk's unsynced state. */
enum {
    CKH_CRASH_KEEP_RANDOM = 0, /* the crash model draws per op from the disk's seed */
    CKH_CRASH_KEEP_SYNCED,     /* every pending op is dropped: only durable state survives */
    CKH_CRASH_KEEP_CACHE,      /* every pending op is applied (as far as the model allows) */
};

/* Stable lower-case name of an action ("kill_mid"), as trace lines and
 * firing logs write it; "?" for an unknown kind. */
const char *ckh_fault_action_name(enum ckh_fault_kind k);

/* ---- rules ---- */

/* A scripted fault: fires on the nth (1-based) op that matches. */
struct ckh_fault_rule {
    int node;                  /* node id, -1: any */
    int kind;                  /* enum ckh_op_kind, -1: any */
    const char *path_glob;     /* fnmatch pattern on op->path, NULL: any */
    const char *phase;         /* phase name, NULL: any */
    int64_t epoch;             /* -1: any */
    int64_t step;              /* -1: any */
    uint64_t nth;              /* fire on this matching occurrence (0 or 1: first) */
    uint64_t at_time_ns;       /* only ops at or after this time (0: any); the mode's
                                  clock: virtual time in the simulator */
    double probability;        /* 0: fire on the nth; else per matching op with this chance */
    double keep_fraction;      /* KILL_MID, SHORT_WRITE: fraction of the write that lands
                                  (if keep_bytes 0); a SHORT_WRITE fraction > 0 keeps at
                                  least one byte */
    bool repeat;               /* keep firing on every later match too */
    struct ckh_fault_action action; /* what to do */
};

/* Sets every selector of r to "any" (node, kind, epoch, step -1), nth 1,
 * and the action to NONE; fill in what the rule needs afterwards. */
void ckh_fault_rule_init(struct ckh_fault_rule *r);

/* Checks that r can be armed: an action kind other than NONE, a CALL with
 * a callback, an ERRNO with a positive errno, an op kind in range, a node
 * >= -1, probability and keep_fraction in [0, 1]. 0, or CKH_EINVAL with
 * "fault rule: ..." in msg. */
int ckh_fault_rule_check(const struct ckh_fault_rule *r, char *msg, size_t msglen);

/* ---- the matcher ---- */

/* One rule's counters (fixed layout: the real platform keeps them in a
 * file its processes share). Zeroed, then seeded by ckh_fault_state_init. */
struct ckh_fault_state {
    uint64_t matches;   /* ops selected so far (M4) */
    uint64_t fired;     /* times the rule fired */
    uint8_t spent;      /* fired and not repeating (M6) */
    uint8_t deferred;   /* due on an op an earlier rule took: fires on the next match (M5) */
    uint8_t seeded;     /* rng is seeded */
    uint8_t pad[5];     /* zero */
    struct ckh_rng rng; /* probability draws: ckh_seed_derive(seed, "fault/INDEX") */
};

/* Zeroes s and seeds its stream for rule `index` (its position among the
 * rules armed on the run) of the run seeded with seed. */
void ckh_fault_state_init(struct ckh_fault_state *s, uint64_t seed, size_t index);

/* Whether r's selectors and action select op at time now_ns (M1 to M3),
 * counters aside. op->node, phase, epoch and step must be the node's. */
bool ckh_fault_rule_selects(const struct ckh_fault_rule *r, const struct ckh_op *op, uint64_t now_ns);

/* Counts one match of r (an op it selects) in s and says whether r fires
 * on it (M4 to M6); `taken`: an earlier rule fired on this op. A firing
 * counts in s->fired. s must be seeded when r has a probability. */
bool ckh_fault_rule_fires(const struct ckh_fault_rule *r, struct ckh_fault_state *s, bool taken);

/* The one step every mode takes per rule, in rule order: false when s is
 * spent or r does not select op; else ckh_fault_rule_fires. */
bool ckh_fault_rule_match(const struct ckh_fault_rule *r, struct ckh_fault_state *s,
                          const struct ckh_op *op, uint64_t now_ns, bool taken);

/* The action of rule r firing on a write (or any op) of len bytes: r's
 * action with keep_bytes resolved from keep_fraction (M7, before the cap). */
struct ckh_fault_action ckh_fault_rule_action(const struct ckh_fault_rule *r, uint64_t len);

/* Caps a KILL_MID or SHORT_WRITE action's keep_bytes at len (M7). */
void ckh_fault_action_cap(struct ckh_fault_action *act, uint64_t len);

#endif
