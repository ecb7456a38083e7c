/* Crash states of a multi-node program: a 2-node and a 4-node explore of
 * the same shard-writing job, side by side in one run (docs/ARCHITECTURE.md,
 * "Crash states of several nodes"). Prints "name value unit" lines;
 * asserts nothing about time.
 *
 * The job: scenarios/programs/shell-multi-no-commit-fixed.yaml
 * (tests/programs/prog_multi_save.sh --case no-commit --fixed: every rank
 * writes its shard of two steps to a shared disk, temporary name, fsync,
 * rename, folder fsync; a barrier; rank 0 publishes `latest`), run with 2
 * and with 4 nodes (job.nodes overridden). Each figure is one full `ckh
 * explore` (ckh_explore_program, verify check, every crash: power loss and
 * each node's crash, the others killed): the operations recorded, the
 * crash states generated and kept (distinct), and the states checked per
 * second of checks (the recorded run not counted). The machine may be
 * shared and busy: the ratios, measured in the same run, are what to
 * compare.
 *
 * Then how each check starts and mounts, side by side:
 *   - the shell job (2 and 4 nodes) by verify with a mount per state
 *     (ckh_xprog_options.verify_remount: how every multi-node verify check
 *     was served before the kept mounts) against the kept mounts, one per
 *     disk (the figures above);
 *   - a Python job of 2 nodes (tests/programs/prog_py_saver.py --unsafe
 *     --in-turn, each node's disk its own), by verify: cold starts and a
 *     mount per state, cold and kept, warm with a mount per state (the
 *     default before the kept mounts), warm and kept; by
 *     restart (the first 120 states): cold against warm. Skipped without
 *     /usr/bin/python3.
 *
 * Usage: bench_explore_multi [SOURCE_DIR [JOBS]] (default: $CKH_SOURCE_DIR
 * or ".", 2 workers). Skips (exit 0, saying why) without FUSE. */
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/tmpdir.h"
#include "cli/cli_load.h"
#include "ckhfs/ckhfs.h"
#include "search/explore_program.h"

struct figure {
    uint64_t ops, cuts, states, distinct, checked, fails;
    double check_s;  /* seconds of checks */
    double rate;     /* states checked per second of checks */
    int ok;          /* the explore ran */
};

static struct figure one_how(const struct ckh_scenario *sc, unsigned jobs, enum ckh_xprog_check check,
                             enum ckh_xprog_start start, bool remount, uint64_t max_states)
{
    struct figure f = {0};
    struct ckh_xprog_options o = {.jobs = jobs, .check = check, .start_set = true, .start = start,
                                  .verify_remount = remount, .max_states = max_states};
    struct ckh_xprog_result r;
    char err[1200];
    if (ckh_explore_program(sc, &o, &r, err, sizeof err) != 0) {
        printf("# %u nodes failed: %s\n", sc->job.nodes, err);
        return f;
    }
    f.ok = 1;
    f.ops = r.ops;
    f.cuts = r.crash_points;
    f.states = r.states;
    f.distinct = r.distinct;
    f.checked = r.checked;
    f.fails = r.nfails;
    f.check_s = (double)r.check_ms / 1000.0;
    f.rate = r.check_ms ? (double)r.checked * 1000.0 / (double)r.check_ms : 0.0;
    ckh_xprog_result_free(&r);
    return f;
}

static struct figure one(const struct ckh_scenario *sc, unsigned jobs)
{
    return one_how(sc, jobs, CKH_XPROG_VERIFY, CKH_XPROG_START_COLD, false, 0);
}

static void print_rate(const char *name, const struct figure *f)
{
    if (f->ok)
        printf("%s %.2f states/s (%" PRIu64 " checked, %" PRIu64 " failed, %.1f s of checks)\n", name, f->rate,
               f->checked, f->fails, f->check_s);
}

static void print_ratio(const char *name, const struct figure *a, const struct figure *b)
{
    if (a->ok && b->ok && b->rate > 0)
        printf("%s %.2f x\n", name, a->rate / b->rate);
}

/* The 2-node Python job, cold against warm (see the top of the file). */
static void python_side_by_side(const char *src, unsigned jobs)
{
    char dir[PATH_MAX], prog[PATH_MAX], path[PATH_MAX + 32], msg[512];
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("# python job skipped: /usr/bin/python3 is not installed\n");
        return;
    }
    if (!realpath(src, prog) || ckh_tmp_make(dir, sizeof dir) != 0) {
        printf("# python job skipped: no source folder %s or no temporary folder\n", src);
        return;
    }
    strncat(prog, "/tests/programs/prog_py_saver.py", sizeof prog - strlen(prog) - 1);
    snprintf(path, sizeof path, "%s/py-multi.yaml", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "job:\n  command: [/usr/bin/python3, %s, --unsafe, --in-turn]\n  nodes: 2\n  timeout: 300s\n"
                   "  disks:\n    - {name: ckpt, mount: /, shared: false}\n"
                   "verify: [/usr/bin/python3, %s, --verify]\n", prog, prog);
        fclose(f);
    }
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error e;
    if (!f || ckh_cli_parse_one(path, &sc, &e) != 0) {
        ckh_scn_error_format(&e, msg, sizeof msg);
        printf("# python job skipped: %s\n", f ? msg : "cannot write its scenario");
        ckh_tmp_remove(dir);
        return;
    }
    printf("# python job: %s --unsafe --in-turn, 2 nodes, node-local disks, %u workers\n", prog, jobs);
    struct figure before = one_how(sc, jobs, CKH_XPROG_VERIFY, CKH_XPROG_START_COLD, true, 0);
    struct figure cold = one_how(sc, jobs, CKH_XPROG_VERIFY, CKH_XPROG_START_COLD, false, 0);
    struct figure wremount = one_how(sc, jobs, CKH_XPROG_VERIFY, CKH_XPROG_START_WARM, true, 0);
    struct figure warm = one_how(sc, jobs, CKH_XPROG_VERIFY, CKH_XPROG_START_WARM, false, 0);
    print_rate("explore_multi_py_verify_cold_remount", &before);
    print_rate("explore_multi_py_verify_cold_kept", &cold);
    print_rate("explore_multi_py_verify_warm_remount", &wremount);
    print_rate("explore_multi_py_verify_warm_kept", &warm);
    print_ratio("explore_multi_py_verify_warm_kept_over_cold_remount", &warm, &before);
    print_ratio("explore_multi_py_verify_warm_kept_over_warm_remount", &warm, &wremount);
    struct figure rcold = one_how(sc, jobs, CKH_XPROG_RESTART, CKH_XPROG_START_COLD, false, 120);
    struct figure rwarm = one_how(sc, jobs, CKH_XPROG_RESTART, CKH_XPROG_START_WARM, false, 120);
    print_rate("explore_multi_py_restart_cold", &rcold);
    print_rate("explore_multi_py_restart_warm", &rwarm);
    print_ratio("explore_multi_py_restart_warm_over_cold", &rwarm, &rcold);
    ckh_scenario_free(sc);
    ckh_tmp_remove(dir);
}

int main(int argc, char **argv)
{
    const char *src = argc > 1 ? argv[1] : getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    unsigned jobs = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 2;
    char msg[512], path[1024];
    if (ckh_ckhfs_available(msg, sizeof msg) != 0) {
        printf("# skipped: FUSE cannot be used here: %s\n", msg);
        return 0;
    }
    snprintf(path, sizeof path, "%s/scenarios/programs/shell-multi-no-commit-fixed.yaml", src);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error e;
    if (ckh_cli_parse_one(path, &sc, &e) != 0) {
        ckh_scn_error_format(&e, msg, sizeof msg);
        fprintf(stderr, "bench_explore_multi: %s\n", msg);
        return 2;
    }
    printf("# %s: %u workers, verify check, every crash (a shared machine: compare the ratios)\n", path, jobs);
    struct figure fig[2];
    const uint32_t nodes[2] = {2, 4};
    for (int i = 0; i < 2; i++) {
        sc->job.nodes = nodes[i];
        fig[i] = one(sc, jobs);
        if (!fig[i].ok)
            continue;
        printf("explore_multi_%unodes_ops %" PRIu64 " operations (%" PRIu64 " cuts)\n", nodes[i], fig[i].ops,
               fig[i].cuts);
        printf("explore_multi_%unodes_states %" PRIu64 " states (%" PRIu64 " distinct, %" PRIu64 " checked, %"
               PRIu64 " failed)\n", nodes[i], fig[i].states, fig[i].distinct, fig[i].checked, fig[i].fails);
        printf("explore_multi_%unodes_states_per_sec %.2f states/s (%.1f s of checks)\n", nodes[i], fig[i].rate,
               fig[i].check_s);
    }
    if (fig[0].ok && fig[1].ok && fig[0].states && fig[0].distinct && fig[0].check_s > 0) {
        printf("explore_multi_4_over_2_states %.2f x\n", (double)fig[1].states / (double)fig[0].states);
        printf("explore_multi_4_over_2_distinct %.2f x\n", (double)fig[1].distinct / (double)fig[0].distinct);
        printf("explore_multi_4_over_2_check_time %.2f x\n", fig[1].check_s / fig[0].check_s);
    }
    for (int i = 0; i < 2; i++) {
        char name[96];
        sc->job.nodes = nodes[i];
        struct figure remount = one_how(sc, jobs, CKH_XPROG_VERIFY, CKH_XPROG_START_COLD, true, 0);
        snprintf(name, sizeof name, "explore_multi_%unodes_remount_states_per_sec", nodes[i]);
        print_rate(name, &remount);
        snprintf(name, sizeof name, "explore_multi_%unodes_kept_over_remount", nodes[i]);
        print_ratio(name, &fig[i], &remount);
    }
    python_side_by_side(src, jobs);
    ckh_scenario_free(sc);
    return 0;
}
