/* Crash states of a multi-node real program (search/explore_multi.c):
 * `ckh explore` of a command job whose nodes have disks of their own, or
 * several disks (docs/PROGRAMS.md, "Several nodes"). Private to
 * harness/search/.
 *
 * One run of the job is recorded with every operation's node, disk and
 * place in one global order (the order in which ckh saw them, under the
 * job's lock). A crash state is a global cut (the operations before a
 * point of that order) plus, per crashing node, which of its pending
 * operations survive on each disk it touched:
 *   - power loss: every node's machine at once, every disk crashes;
 *   - a node's machine crashes (each node in turn): the disks it used (its
 *     own, and shared ones for its own pending operations) crash; the
 *     others were killed (their written data survives: their pending
 *     operations are applied) or ran on up to the crashed node's next
 *     operation (explore.others: running).
 * Each state is checked by the scenario's verify run once per node
 * against that node's view of the disks, or by restarting the whole job
 * on it; states are numbered K in generation order and deduplicated by
 * the durable digests of every disk together.
 */
#ifndef CKH_SEARCH_EXPLORE_MULTI_H
#define CKH_SEARCH_EXPLORE_MULTI_H

#include <stdbool.h>
#include <stdint.h>

#include "ckh/simfs.h"
#include "search/explore_program.h"

struct ckh__cmd_job;
struct ckh__cmd_mount;
struct ckh__cmd_node;
struct ckh__xop;
struct ckh_ckhfs_op;

/* Whether sc's exploration takes the multi-node path: its job has
 * several nodes, or more than one disk mount (o: reserved for options
 * that may choose it). */
bool ckh__xmulti_applies(const struct ckh_scenario *sc, const struct ckh_xprog_options *o);

/* ckh_explore_program for such a job (same contract; sc already passed
 * ckh_explore_program's checks; check and start resolved). */
int ckh__xmulti_explore(const struct ckh_scenario *sc, const struct ckh_xprog_options *o,
                        enum ckh_xprog_check check, enum ckh_xprog_start start,
                        struct ckh_xprog_result *out, char *err, size_t errlen);

/* ---- orders (search/explore_races.c) ----
 *
 * ckhfs sees every operation before it answers, so it can hold one
 * node's operation while the others go on (ckhfs.c, L5). An order is a
 * pair read from the recorded run on a shared disk: node A makes a name P
 * (mkdir, a rename or symlink onto P, an open of a P no one had used), and
 * later node B asks its first operation at or below P. The order tried is
 * the reverse: A's operation just before it made P (the last one not at or
 * below P: a held mkdir would keep its parent folder locked in the kernel,
 * and B's lookup would wait behind it before ckhfs saw it) is held until
 * B's first operation at or below P has been answered. Orders are
 * numbered N from 1 in the order of the recorded run; each is checked by
 * running the whole job afresh with that order forced, judged by the
 * oracles. */

/* What the orders are read from and checked with (all borrowed). */
struct ckh__xrace_in {
    const struct ckh_scenario *sc;
    uint64_t seed;
    const struct ckh__cmd_job *je;
    const struct ckh_scenario_run *ref; /* the recorded (reference) run */
    const struct ckh__xop *ops;         /* the recorded operations, global order */
    const int *opdisk;                  /* [nops]: each one's disk */
    const uint64_t *opms;               /* [nops]: when each reached ckhfs, ms on a monotonic clock
                                           (NULL: unknown; every hold gets the longest bound) */
    size_t nops;
    const bool *shared;                 /* [disk]: shared by the nodes */
    const char *const *names;           /* [node]: names, for texts */
    int n;                              /* nodes */
    uint64_t only;                      /* N > 0: order N alone */
    uint64_t deadline_ms;               /* no order starts after this (0: none) */
};

/* Finds the orders of in's run and checks them (or order in->only): out's
 * orders, orders_checked and order_fails. 0, CKH_EINVAL when in->only is
 * past the last order (err says how many there are), CKH_ENOMEM, or the
 * code of a run that could not be judged, with err. */
int ckh__xrace_explore(const struct ckh__xrace_in *in, struct ckh_xprog_result *out, char *err, size_t errlen);

/* ---- explore_program.c's helpers, shared with explore_multi.c ---- */

/* Writes d's files into the real folder dir (absent or empty; created):
 * 0, or CKH_EINVAL / CKH_EINTERNAL with err. */
int ckh__xprog_keep_disk(struct ckh_simfs *d, const char *dir, char *err, size_t errlen);
/* Replaces every occurrence of what in text (n bytes) by with. */
void ckh__xprog_replace_all(char *text, size_t n, const char *what, const char *with);
/* Bytes of nd's result file the job's progress reader has consumed (0:
 * none open). */
uint64_t ckh__xprog_result_consumed(const struct ckh__cmd_node *nd);
/* Fills *o with the recorded op (its paths below m's prefix, malloc'd:
 * o owns them; a symlink's target kept as given): 0, or CKH_ENOMEM with
 * *o holding nothing. */
int ckh__xprog_op_copy(const struct ckh__cmd_mount *m, const struct ckh_ckhfs_op *op, struct ckh__xop *o);

#endif
