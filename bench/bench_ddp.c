/* Benchmark of the DDP workload in the simulator: simulated training steps
 * per second for an 8-rank run with checkpoints every 50 steps, and the
 * wall time of a 1000-step run. Prints "name value unit" lines; asserts
 * nothing about time. */
#include <stdio.h>
#include <time.h>

#include "ckh/ddp.h"
#include "ckh/sim.h"
#include "ckh/simfs.h"

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = 8;
    cfg.batch = 4;
    cfg.samples = 8 * 4 * 100; /* 100 steps per epoch */
    cfg.epochs = 10;           /* 1000 steps */
    cfg.ckpt_every = 50;
    cfg.ckpt_epoch_end = false;
    struct ckh_ddp_record *rec;
    if (ckh_ddp_record_create(&cfg, &rec))
        return 1;
    struct ckh_sim_config sc = {.seed = 1};
    struct ckh_sim *sim;
    struct ckh_simfs *disk;
    struct ckh_simfs_config dc = {.name = "shared", .sector_bytes = 4096};
    if (ckh_sim_create(&sc, &sim) || ckh_sim_add_disk(sim, &dc, &disk))
        return 1;
    struct ckh_simfs_mount m = {"/", disk};
    struct ckh_ddp_node_arg args[8];
    for (int r = 0; r < cfg.world; r++) {
        char name[32];
        snprintf(name, sizeof name, "trainer_%d", r);
        args[r] = (struct ckh_ddp_node_arg){&cfg, r, rec};
        struct ckh_node_config nc = {.name = name, .main = ckh_ddp_node_main, .arg = &args[r],
                                     .mounts = &m, .nmounts = 1, .rank = r};
        if (ckh_sim_add_node(sim, &nc, NULL))
            return 1;
    }
    struct ckh_sim_result res;
    double t0 = wall_s();
    int rc = ckh_sim_run(sim, &res);
    double dt = wall_s() - t0;
    int64_t steps = rec->ranks[0].final_step;
    if (rc || !ckh_ddp_record_finished(rec)) {
        fprintf(stderr, "run failed: %s\n", rec->ranks[0].errmsg);
        return 1;
    }
    printf("ddp_8rank_steps_per_second %.1f steps/s\n", (double)steps / dt);
    printf("ddp_8rank_1000_step_wall_time %.3f s\n", dt * 1000.0 / (double)steps);
    printf("ddp_8rank_steps %lld steps\n", (long long)steps);
    printf("ddp_8rank_sim_ops %llu ops\n", (unsigned long long)res.ops);
    ckh_sim_destroy(sim);
    ckh_ddp_record_destroy(rec);
    return 0;
}
