/* Oracles: each judges one property of a scenario run. One oracle per
 * source file (harness/<name>_check.c), each exporting one ops table.
 *
 * An oracle is consulted only when it applies to the scenario (for
 * example the golden-file oracle only when the scenario names a golden
 * file). It writes "expected X, got Y" style detail and, where it can, the
 * first step or epoch at which the runs diverged.
 */
#ifndef CKH_ORACLE_H
#define CKH_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/runner.h"
#include "judge/oracle_list.h"

struct ckh_oracle_ops {
    const char *name;        /* stable name, used in scenarios (expect.oracles) */
    const char *description; /* one line for `ckh list` */
    /* Whether the oracle has something to judge in r. */
    bool (*applies)(const struct ckh_scenario_run *r);
    /* Judges r: true when the property holds. detail gets what was
     * checked or expected vs actual; *divergent gets the first divergent
     * step/epoch when known (left at -1 otherwise). */
    bool (*check)(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent);
};

/* The oracles, in the order they run (judge/oracle_list.h); NULL past the end. */
const struct ckh_oracle_ops *ckh_oracle_at(size_t i);
const struct ckh_oracle_ops *ckh_oracle_find(const char *name);

/* Whether the scenario expects the job to complete normally (outcome pass). */
bool ckh_oracle_expects_pass(const struct ckh_scenario_run *r);
/* Whether the scenario's fault script can legitimately lose or refuse
 * data (errno, fsync, disk-full, corruption or removal faults, and
 * mismatched or delayed collectives, which can fail a save), so that
 * crash-only properties do not apply. Defect switches do not count: they
 * are bugs the crash-only properties exist to catch. */
bool ckh_oracle_faults_touch_data(const struct ckh_scenario_run *r);

/* Whether the scenario restarts the job with another world size
 * (restart.world_size differs from run 1's world), whether or not a
 * restart happened: step digests and per-node results are then not
 * comparable with the reference run, which runs at the first world. */
bool ckh_oracle_resizes(const struct ckh_scenario_run *r);

/* Whether name (a final value or step quantity) is in the scenario's
 * compare.ignore: the comparisons with the reference run leave it out. */
bool ckh_oracle_ignored(const struct ckh_scenario_run *r, const char *name);

/* resume_check.c: what differs at the first step where r's step records
 * differ from the reference run's, as the shrinker compares causes
 * (harness/search/shrink.c): the sorted, distinct kinds and quantity
 * names, comma-separated, without step numbers, node names or values:
 * "optim, rng, weights" (other bits), "missing NAME", "extra NAME",
 * "epoch", "no record", "extra record"; or "samples" when every step
 * record agrees but an epoch consumed other samples. Written to buf (n
 * bytes, truncated); returns the step (the epoch for "samples"), or -1
 * with buf "" when nothing differs or the runs have no step records to
 * compare (no reference, no records, another world size). */
int64_t ckh__resume_first_divergence(const struct ckh_scenario_run *r, char *buf, size_t n);

/* The descriptors (private to harness/; listed by oracle.c). */
#define CKH__ORACLE_DECL(id) extern const struct ckh_oracle_ops ckh__oracle_##id;
CKH_ORACLE_LIST(CKH__ORACLE_DECL)
#undef CKH__ORACLE_DECL

#endif
