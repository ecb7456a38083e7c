/* Shrinking failing scenarios (`ckh shrink`, and every failing fuzz seed).
 *
 * A failing scenario is first made concrete: every fault that fired
 * becomes an exact trigger (the nth op of that kind on that path by that
 * node in that run) and faults that never fired are dropped, so the file
 * no longer depends on probabilities. Then it is minimized while it keeps
 * failing the same oracle with the same cause (the kind of first
 * difference): faults dropped (halves, then quarters, ..., then one by
 * one), faults moved earlier (smaller nth, earlier run), fewer nodes,
 * fewer epochs and steps, fewer restarts; last, every fault that did not
 * fire is dropped when the failure stays the same. The algorithm, its
 * budget and what "the same cause" means are specified at the top of
 * harness/search/shrink.c; the scenario writer is harness/model/writer.c.
 *
 * Ownership: text results are malloc'd (free()); the scenario writer only
 * reads its argument.
 */
#ifndef CKH_SHRINK_H
#define CKH_SHRINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "search/fuzz.h"
#include "model/scenario.h"

struct ckh_shrink_config {
    const char *source_dir; /* repository root for golden files (NULL: ".") */
    const char *argv0;      /* the ckh command in replay lines (NULL: "ckh") */
    size_t max_runs;        /* scenario runs the minimization may take (0: 400); the
                               final pass adds one, and one per fault that did not fire */
};

struct ckh_shrink_stats {
    size_t runs;             /* scenario runs shrinking took (the first one included) */
    size_t faults_before;    /* faults of the input */
    size_t faults_after;     /* faults of the result */
    uint32_t nodes_before;   /* nodes of the input */
    uint32_t nodes_after;    /* nodes of the result */
    bool concrete;           /* probability triggers were replaced by exact ones */
    char oracle[64];         /* the oracle the input and the result fail */
    char cause[384];         /* what the failure is, as both show it (shrink.c's "cause") */
    size_t silent_dropped;   /* faults dropped by the final pass: they did not fire */
};

/* The scenario writer, ckh_scenario_write, lives in scenario/scenario.h. */

/* Shrinks the scenario text (name: used in messages). On success *out is
 * the shrunk scenario's YAML (malloc'd) and *st says what happened.
 * Returns 0; CKH_EINVAL when the text does not parse or the scenario
 * passes (msg says which); or another negative code. */
int ckh_shrink_text(const char *text, size_t len, const char *name,
                    const struct ckh_shrink_config *cfg, char **out, struct ckh_shrink_stats *st,
                    char *msg, size_t msglen);

/* Generates fuzz seed `seed` with fc, shrinks it and writes the result to
 * path (NULL: not written). Same returns as ckh_shrink_text. */
int ckh_shrink_seed(uint64_t seed, const struct ckh_fuzz_config *fc,
                    const struct ckh_shrink_config *cfg, const char *path,
                    struct ckh_shrink_stats *st, char *msg, size_t msglen);


/* Writes text to path (created or truncated); 0 or a negative code. */
int ckh_shrink_write(const char *path, const char *text);

#endif
