/* Crash states of a real program per second, cold against warm, side by
 * side in one run (docs/PROGRAMS.md, "Warm starts"). Prints "name value
 * unit" lines; asserts nothing about time.
 *
 * The job: the PyTorch job of scenarios/programs/torch-atomic-explore.yaml
 * (tests/programs/prog_torch_atomic.py: 8 steps, a checkpoint every 4,
 * torch.save through a temporary file, fsync, rename). Each figure is one
 * `ckh explore` of it (ckh_explore_program), bounded by a time limit for
 * the checks, with the same workers:
 *   - restart check: each state restarts the job on it (the interpreter
 *     and `import torch` each time when cold) and the oracles judge it;
 *   - verify check: the scenario's verify (a standard-library Python
 *     script) on each state.
 * The rates count checked states over the checks' wall time (the launchers'
 * start-up included, the recorded run not). The machine may be shared and
 * busy: the ratios, measured in the same run, are what to compare.
 *
 * Usage: bench_explore_program [SOURCE_DIR [SECONDS [JOBS]]] (default: $CKH_SOURCE_DIR
 * or ".", 60 s of checks per figure, 2 workers). Skips (exit 0, saying
 * why) without /usr/bin/python3 with torch, or without FUSE. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "cli/cli_load.h"
#include "ckhfs/ckhfs.h"
#include "search/explore_program.h"

struct figure {
    double rate;       /* states checked per second of checks */
    uint64_t checked;  /* states checked */
    uint64_t distinct; /* distinct states */
    uint64_t warm;     /* program starts from launchers */
    int ok;            /* the explore ran */
};

static struct figure one(const struct ckh_scenario *sc, enum ckh_xprog_check check, enum ckh_xprog_start start,
                         uint64_t seconds, unsigned jobs)
{
    struct figure f = {0};
    struct ckh_xprog_options o = {.jobs = jobs, .check = check, .start_set = true, .start = start,
                                  .time_limit_ms = 0, .source_dir = NULL};
    struct ckh_xprog_result r;
    char err[1200];
    /* The time limit counts from the recorded run's start: give the checks
     * `seconds` after it (the recorded run is timed once, first). */
    static uint64_t record_ms;
    o.time_limit_ms = seconds * 1000 + record_ms;
    if (ckh_explore_program(sc, &o, &r, err, sizeof err) != 0) {
        printf("# %s %s failed: %s\n", ckh_xprog_check_name(check), ckh_xprog_start_name(start), err);
        return f;
    }
    if (!record_ms)
        record_ms = r.record_ms;
    f.ok = 1;
    f.checked = r.checked;
    f.distinct = r.distinct;
    f.warm = r.warm_starts;
    f.rate = r.check_ms ? (double)r.checked * 1000.0 / (double)r.check_ms : 0.0;
    ckh_xprog_result_free(&r);
    return f;
}

int main(int argc, char **argv)
{
    const char *src = argc > 1 ? argv[1] : getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    uint64_t seconds = argc > 2 ? strtoull(argv[2], NULL, 10) : 60;
    unsigned jobs = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 2;
    char msg[512], path[1024];
    if (ckh_ckhfs_available(msg, sizeof msg) != 0) {
        printf("# skipped: FUSE cannot be used here: %s\n", msg);
        return 0;
    }
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        printf("# skipped: /usr/bin/python3 cannot import torch\n");
        return 0;
    }
    snprintf(path, sizeof path, "%s/scenarios/programs/torch-atomic-explore.yaml", src);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error e;
    if (ckh_cli_parse_one(path, &sc, &e) != 0) {
        ckh_scn_error_format(&e, msg, sizeof msg);
        fprintf(stderr, "bench_explore_program: %s\n", msg);
        return 2;
    }
    printf("# %s: %u workers, %" PRIu64 " s of checks per figure (a shared machine: compare the ratios)\n",
           path, jobs, seconds);
    static const struct {
        const char *name;
        enum ckh_xprog_check check;
    } checks[] = {{"restart", CKH_XPROG_RESTART}, {"verify", CKH_XPROG_VERIFY}};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        struct figure cold = one(sc, checks[i].check, CKH_XPROG_START_COLD, seconds, jobs);
        struct figure warm = one(sc, checks[i].check, CKH_XPROG_START_WARM, seconds, jobs);
        printf("explore_torch_%s_cold_states_per_sec %.2f states/s (%" PRIu64 " of %" PRIu64 " checked)\n",
               checks[i].name, cold.rate, cold.checked, cold.distinct);
        printf("explore_torch_%s_warm_states_per_sec %.2f states/s (%" PRIu64 " of %" PRIu64 " checked, %" PRIu64
               " warm starts)\n", checks[i].name, warm.rate, warm.checked, warm.distinct, warm.warm);
        if (cold.ok && warm.ok && cold.rate > 0)
            printf("explore_torch_%s_warm_over_cold %.1f x\n", checks[i].name, warm.rate / cold.rate);
    }
    ckh_scenario_free(sc);
    return 0;
}
