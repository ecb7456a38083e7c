/* Runs of the seed pipeline per second in the simulator: each run builds
 * a simulator with one shared disk at "/" and N nodes, runs the job to the
 * end (4 epochs, 5 checkpoints per node) and checks total 145. Prints
 * "name value" lines; asserts nothing about time.
 *
 *   bench_pipeline [NODES [RUNS]]     (defaults: 3 200)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ckh/ref.h"
#include "ckh/sim.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int nodes = argc > 1 ? atoi(argv[1]) : 3;
    int runs = argc > 2 ? atoi(argv[2]) : 200;
    struct ckh_workload_spec spec = {.wl = ckh_epoch_workload_find("seed-pipeline"), .prefix = "/ckpt"};
    struct ckh_workload_node_arg args[64];
    struct ckh_workload_result res[64];
    uint64_t ops = 0;
    double t0;
    if (nodes < 1 || nodes > 64 || runs < 1) {
        fprintf(stderr, "usage: bench_pipeline [NODES (1..64) [RUNS]]\n");
        return 2;
    }
    spec.nnodes = nodes;
    t0 = now_s();
    for (int r = 0; r < runs; r++) {
        struct ckh_sim_config cfg = {.seed = (uint64_t)r + 1, .stack_bytes = 128 * 1024};
        struct ckh_simfs_config dc = {.name = "shared", .sector_bytes = 512, .latency_ns = 1000};
        struct ckh_simfs_mount m = {.prefix = "/"};
        struct ckh_sim *sim;
        struct ckh_sim_result sr;
        if (ckh_sim_create(&cfg, &sim) != 0 || ckh_sim_add_disk(sim, &dc, &m.disk) != 0 ||
            ckh_fs_mkdir(ckh_simfs_fs(m.disk), "/ckpt") != 0)
            return 1;
        for (int i = 0; i < nodes; i++) {
            char name[32];
            struct ckh_node_config nc = {.name = name, .main = spec.wl->node_main, .arg = &args[i],
                                         .mounts = &m, .nmounts = 1, .rank = i};
            spec.wl->node_name(&spec, i, name, sizeof name);
            args[i] = (struct ckh_workload_node_arg){.spec = &spec, .node_index = i, .result = &res[i]};
            int id;
            if (ckh_sim_add_node(sim, &nc, &id) != 0)
                return 1;
        }
        if (ckh_sim_run(sim, &sr) != 0 || sr.outcome != CKH_SIM_DONE)
            return 1;
        for (int i = 0; i < nodes; i++)
            if (res[i].rc != 0 || res[i].total != 145) {
                fprintf(stderr, "run %d node %d: rc %d total %" PRId64 "\n", r, i, res[i].rc, res[i].total);
                return 1;
            }
        ops += sr.ops;
        ckh_sim_destroy(sim);
    }
    {
        double t = now_s() - t0;
        printf("nodes %d\n", nodes);
        printf("runs %d\n", runs);
        printf("pipeline_runs_per_sec %.1f\n", runs / t);
        printf("sim_ops_per_run %.1f\n", (double)ops / runs);
        printf("sim_ops_per_sec %.0f\n", (double)ops / t);
    }
    return 0;
}
