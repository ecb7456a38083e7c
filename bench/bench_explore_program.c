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
 *     script) on each state, served by each worker's one kept mount
 *     (ckh_ckhfs_swap_disk), and as before it by a mount and an unmount
 *     per state (ckh_xprog_options.verify_remount): `remount` figures.
 * The rates count checked states over the checks' wall time (the launchers'
 * start-up included, the recorded run not). The machine may be shared and
 * busy: the ratios, measured in the same run, are what to compare. The
 * verify figures take ROUNDS explores each, interleaved (kept, remount,
 * kept, ...), and print the median rate of each.
 *
 * Usage: bench_explore_program [SOURCE_DIR [SECONDS [JOBS [WHICH [ROUNDS]]]]]
 * (default: $CKH_SOURCE_DIR or ".", 60 s of checks per figure, 2 workers,
 * WHICH all (or restart, or verify), 3 rounds). Skips (exit 0, saying
 * why) without /usr/bin/python3 with torch, or without FUSE. */
#include <inttypes.h>
#include <stdbool.h>
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
                         bool remount, uint64_t seconds, unsigned jobs)
{
    struct figure f = {0};
    struct ckh_xprog_options o = {.jobs = jobs, .check = check, .start_set = true, .start = start,
                                  .time_limit_ms = 0, .source_dir = NULL, .verify_remount = remount};
    struct ckh_xprog_result r;
    char err[1200];
    /* The time limit counts from the recorded run's start: give the checks
     * `seconds` after it (the recorded run is timed once, first). */
    static uint64_t record_ms;
    o.time_limit_ms = seconds * 1000 + record_ms;
    if (ckh_explore_program(sc, &o, &r, err, sizeof err) != 0) {
        printf("# %s %s%s failed: %s\n", ckh_xprog_check_name(check), ckh_xprog_start_name(start),
               remount ? " remount" : "", err);
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

static int by_rate(const void *a, const void *b)
{
    double x = ((const struct figure *)a)->rate, y = ((const struct figure *)b)->rate;
    return (x > y) - (x < y);
}

/* The figure of median rate among n (sorted in place). */
static struct figure median(struct figure *v, size_t n)
{
    qsort(v, n, sizeof *v, by_rate);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    const char *src = argc > 1 ? argv[1] : getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    uint64_t seconds = argc > 2 ? strtoull(argv[2], NULL, 10) : 60;
    unsigned jobs = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 2;
    const char *which = argc > 4 ? argv[4] : "all";
    size_t rounds = argc > 5 ? (size_t)strtoul(argv[5], NULL, 10) : 3;
    if (rounds < 1 || rounds > 15 || (strcmp(which, "all") && strcmp(which, "restart") && strcmp(which, "verify"))) {
        fprintf(stderr, "usage: bench_explore_program [SOURCE_DIR [SECONDS [JOBS [all|restart|verify [ROUNDS "
                        "1..15]]]]]\n");
        return 2;
    }
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
    if (strcmp(which, "verify")) {
        struct figure cold = one(sc, CKH_XPROG_RESTART, CKH_XPROG_START_COLD, false, seconds, jobs);
        struct figure warm = one(sc, CKH_XPROG_RESTART, CKH_XPROG_START_WARM, false, seconds, jobs);
        printf("explore_torch_restart_cold_states_per_sec %.2f states/s (%" PRIu64 " of %" PRIu64 " checked)\n",
               cold.rate, cold.checked, cold.distinct);
        printf("explore_torch_restart_warm_states_per_sec %.2f states/s (%" PRIu64 " of %" PRIu64 " checked, %"
               PRIu64 " warm starts)\n", warm.rate, warm.checked, warm.distinct, warm.warm);
        if (cold.ok && warm.ok && cold.rate > 0)
            printf("explore_torch_restart_warm_over_cold %.1f x\n", warm.rate / cold.rate);
    }
    if (strcmp(which, "restart")) {
        /* cold and warm with the kept mount; warm with a mount per state
         * (the path before the kept mount); interleaved rounds */
        struct figure cold[15], warm[15], remount[15];
        for (size_t r = 0; r < rounds; r++) {
            warm[r] = one(sc, CKH_XPROG_VERIFY, CKH_XPROG_START_WARM, false, seconds, jobs);
            remount[r] = one(sc, CKH_XPROG_VERIFY, CKH_XPROG_START_WARM, true, seconds, jobs);
            cold[r] = one(sc, CKH_XPROG_VERIFY, CKH_XPROG_START_COLD, false, seconds, jobs);
        }
        struct figure c = median(cold, rounds), w = median(warm, rounds), m = median(remount, rounds);
        printf("explore_torch_verify_cold_states_per_sec %.2f states/s (%" PRIu64 " of %" PRIu64 " checked; "
               "median of %zu)\n", c.rate, c.checked, c.distinct, rounds);
        printf("explore_torch_verify_warm_remount_states_per_sec %.2f states/s (%" PRIu64 " of %" PRIu64
               " checked, a mount per state; median of %zu)\n", m.rate, m.checked, m.distinct, rounds);
        printf("explore_torch_verify_warm_states_per_sec %.2f states/s (%" PRIu64 " of %" PRIu64 " checked, %"
               PRIu64 " warm starts, a kept mount per worker; median of %zu)\n", w.rate, w.checked, w.distinct,
               w.warm, rounds);
        if (c.ok && w.ok && c.rate > 0)
            printf("explore_torch_verify_warm_over_cold %.1f x\n", w.rate / c.rate);
        if (m.ok && w.ok && m.rate > 0)
            printf("explore_torch_verify_kept_over_remount %.2f x\n", w.rate / m.rate);
    }
    ckh_scenario_free(sc);
    return 0;
}
