/* The real platform against the simulator, side by side, in one run
 * (docs/REAL.md, "Cost"). Prints "name value unit" lines:
 *   - real all-reduce over Open MPI (f32 sum, 2 and 4 ranks): latency at
 *     8 bytes, bandwidth at 1 MiB (ckh-coll-check-openmpi --bench under
 *     mpirun), against the simulator's cost per collective of the same
 *     size: the host time one simulated all-reduce takes, and the virtual
 *     time it charges (the runner's 20 us latency);
 *   - the same through NCCL on a device buffer (ddp-train's gradient
 *     path), when NCCL and a CUDA device are there (else "skipped" and
 *     why; with CKH_NCCL_LIB naming tests/fakegpu's test double the
 *     figures are the double's, marked so);
 *   - scenarios per second of the representative subset (seed pipeline,
 *     param-server, ddp-train with 2 and 4 ranks, a killed rank) on the
 *     real platform and in the simulator, and on the real platform with
 *     its disks forced onto ckhfs (CKH_REAL_FS=ckhfs: what serving every
 *     disk over FUSE would cost);
 *   - scenarios per second of faulted scenarios that need ckhfs (crash,
 *     power loss, fsync-fail, at-rest) on the real platform and in the
 *     simulator.
 * Usage: bench_real [SOURCE_DIR] (default: $CKH_SOURCE_DIR or "."). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckh/sim.h"
#include "exec/mpi.h"
#include "exec/runner.h"
#include "search/fuzz.h"
#include "judge/judge.h"

#define SIM_ITERS 200

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* a benchmark's timing */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns per real all-reduce of bytes over world ranks (-1 when it fails). */
static double real_allreduce(const char *exe, const char *launcher, int world, size_t bytes, long iters,
                             bool nccl)
{
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "%s %s -np %d %s --bench %zu %ld%s 2>/dev/null", launcher,
             geteuid() == 0 ? "--allow-run-as-root --oversubscribe --bind-to none" : "--oversubscribe --bind-to none",
             world, exe, bytes, iters, nccl ? " nccl" : "");
    FILE *p = popen(cmd, "r");
    double ns = -1;
    size_t b;
    if (p && fscanf(p, "allreduce %zu %lf", &b, &ns) != 2)
        ns = -1;
    if (p)
        pclose(p);
    return ns;
}

struct sim_arg {
    size_t bytes; /* per all-reduce */
};

static int sim_node(struct ckh_env *env, void *arg)
{
    const struct sim_arg *a = arg;
    float *buf = calloc(a->bytes / 4 + 1, sizeof *buf);
    for (int i = 0; buf && i < SIM_ITERS; i++)
        ckh_coll_allreduce(env->coll, buf, a->bytes / 4, CKH_DT_F32, CKH_RED_SUM, 0);
    free(buf);
    return 0;
}

/* Host ns per simulated all-reduce; *virt_ns the virtual time charged. */
static double sim_allreduce(int world, size_t bytes, double *virt_ns)
{
    struct ckh_sim_config cfg = {.seed = 1, .coll_latency_ns = 20000};
    struct ckh_sim *sim = NULL;
    struct sim_arg a = {.bytes = bytes};
    if (ckh_sim_create(&cfg, &sim) != 0)
        return -1;
    for (int r = 0; r < world; r++) {
        char name[16];
        snprintf(name, sizeof name, "rank_%d", r);
        struct ckh_node_config nc = {.name = name, .main = sim_node, .arg = &a, .rank = r};
        ckh_sim_add_node(sim, &nc, NULL);
    }
    struct ckh_sim_result res;
    double t0 = now_s();
    ckh_sim_run(sim, &res);
    double t = now_s() - t0;
    *virt_ns = (double)res.now_ns / SIM_ITERS;
    ckh_sim_destroy(sim);
    return t * 1e9 / SIM_ITERS;
}

static const char *const subset[] = {
    "scenarios/seed/three-nodes.yaml",     "scenarios/seed/param-server.yaml",
    "scenarios/seed/kill-mid-save-resume.yaml", "scenarios/ddp/uninterrupted.yaml",
    "scenarios/ddp/kill-rank1-mid-epoch.yaml",  "scenarios/minidb/kill-mid-write.yaml",
};

static const char *const on_disk[] = {
    "scenarios/minidb/crash-before-rename.yaml", "scenarios/minidb/fsync-fail.yaml",
    "scenarios/minidb/corrupt-bit-flip.yaml",    "scenarios/ddp/power-loss-keep-cache.yaml",
    "scenarios/saver/crash-at-fsync.yaml",
};

/* Scenarios per second of the n scenarios of set; *passed how many passed. */
static double subset_rate(const char *src, const char *const *set, size_t n, bool real, int *passed)
{
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    double t = 0;
    *passed = 0;
    for (size_t i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", src, set[i]);
        struct ckh_scenario *sc = NULL;
        struct ckh_scn_error e;
        if (ckh_scenario_parse_file(path, &so, &sc, &e) != 0)
            continue;
        struct ckh_run_options o = {.source_dir = src, .real_platform = real};
        struct ckh_report_result out;
        ckh_report_result_init(&out);
        double t0 = now_s();
        ckh_harness_run(sc, &o, &out);
        t += now_s() - t0;
        *passed += out.verdict == CKH_VERDICT_PASS;
        ckh_report_result_clear(&out);
        ckh_scenario_free(sc);
    }
    return t > 0 ? (double)n / t : 0;
}

int main(int argc, char **argv)
{
    const char *src = argc > 1 ? argv[1] : getenv("CKH_SOURCE_DIR") ? getenv("CKH_SOURCE_DIR") : ".";
    char exe[1024], launcher[1024], err[512];
    bool have = ckh__real_find_mpi("openmpi", exe, sizeof exe, launcher, sizeof launcher, err, sizeof err) == 0;
    if (!have)
        fprintf(stderr, "bench_real: %s (real figures skipped)\n", err);
    char *slash = strrchr(exe, '/');
    if (have && slash)
        snprintf(slash + 1, sizeof exe - (size_t)(slash + 1 - exe), "ckh-coll-check-openmpi");
    static const struct {
        size_t bytes;
        long iters;
    } sizes[] = {{8, 2000}, {1u << 20, 50}};
    for (int world = 2; world <= 4; world += 2)
        for (size_t k = 0; k < 2; k++) {
            size_t b = sizes[k].bytes;
            double virt = 0, sim = sim_allreduce(world, b, &virt);
            double real = have ? real_allreduce(exe, launcher, world, b, sizes[k].iters, false) : -1;
            const char *what = b == 8 ? "latency" : "bandwidth";
            printf("allreduce_%s_%dranks_%zuB_openmpi %.0f ns\n", what, world, b, real);
            if (b > 8 && real > 0)
                printf("allreduce_bandwidth_%dranks_openmpi %.1f MiB/s\n", world, (double)b / (1 << 20) / (real * 1e-9));
            printf("allreduce_%s_%dranks_%zuB_sim_host %.0f ns\n", what, world, b, sim);
            printf("allreduce_%s_%dranks_%zuB_sim_virtual %.0f ns\n", what, world, b, virt);
        }
    /* NCCL on device buffers, at the ranks the devices allow. */
    const char *lib = getenv("CKH_NCCL_LIB");
    const char *tag = lib && strstr(lib, "fakegpu") ? "_test_double" : "";
    for (int world = 2; have && world <= 4; world += 2)
        for (size_t k = 0; k < 2; k++) {
            size_t b = sizes[k].bytes;
            double real = real_allreduce(exe, launcher, world, b, sizes[k].iters, true);
            if (real < 0) {
                printf("allreduce_nccl_%dranks skipped (no NCCL, CUDA runtime or %d devices here)\n", world, world);
                break;
            }
            printf("allreduce_%s_%dranks_%zuB_nccl%s %.0f ns\n", b == 8 ? "latency" : "bandwidth", world, b, tag,
                   real);
            if (b > 8)
                printf("allreduce_bandwidth_%dranks_nccl%s %.1f MiB/s\n", world, tag,
                       (double)b / (1 << 20) / (real * 1e-9));
        }
    const size_t ns = sizeof subset / sizeof subset[0], nd = sizeof on_disk / sizeof on_disk[0];
    int pass_sim = 0, pass_real = 0, pass_fuse = 0;
    double sim_rate = subset_rate(src, subset, ns, false, &pass_sim);
    double real_rate = have ? subset_rate(src, subset, ns, true, &pass_real) : 0;
    setenv("CKH_REAL_FS", "ckhfs", 1);
    double fuse_rate = have ? subset_rate(src, subset, ns, true, &pass_fuse) : 0;
    unsetenv("CKH_REAL_FS");
    printf("subset_scenarios %zu scenarios\n", ns);
    printf("subset_sim %.2f scenarios/s (%d passed)\n", sim_rate, pass_sim);
    printf("subset_real_openmpi %.2f scenarios/s (%d passed)\n", real_rate, pass_real);
    printf("subset_real_openmpi_ckhfs %.2f scenarios/s (%d passed)\n", fuse_rate, pass_fuse);
    pass_sim = pass_real = 0;
    sim_rate = subset_rate(src, on_disk, nd, false, &pass_sim);
    real_rate = have ? subset_rate(src, on_disk, nd, true, &pass_real) : 0;
    printf("on_disk_scenarios %zu scenarios\n", nd);
    printf("on_disk_sim %.2f scenarios/s (%d passed)\n", sim_rate, pass_sim);
    printf("on_disk_real_openmpi %.2f scenarios/s (%d passed)\n", real_rate, pass_real);
    return 0;
}
