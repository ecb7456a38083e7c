/* Oracle "determinism": with --check-determinism the faulted job runs
 * twice with the same seed and both traces must hash the same. */
#include <inttypes.h>
#include <stdio.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    return r->trace_hash2 != 0;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    if (r->trace_hash != r->trace_hash2) {
        snprintf(detail, n, "same seed %" PRIu64 ", different traces: %016" PRIx64 " vs %016" PRIx64,
                 r->seed, r->trace_hash, r->trace_hash2);
        return false;
    }
    snprintf(detail, n, "two executions, same trace hash %016" PRIx64, r->trace_hash);
    return true;
}

const struct ckh_oracle_ops ckh__oracle_determinism = {
    .name = "determinism",
    .description = "the same seed gives the same trace (with --check-determinism)",
    .applies = applies,
    .check = check,
};
