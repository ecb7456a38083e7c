/* Benchmarks of the simulator core. Prints "name value unit" lines:
 *
 *   sim_ops_per_sec        simulated ops (small fs ops + collectives) per
 *                          wall second, many nodes, one core
 *   sim_time_per_wall_sec  virtual ns simulated per wall ns in that job
 *   idle_node_bytes        resident memory per idle node (10000 nodes
 *                          blocked in a sleep; RSS delta / node count)
 *   bulk_1024x16GiB_rss_bytes  peak RSS after 1024 nodes each wrote 16 GiB
 *                          of described data (ckh_file_pwrite_gen)
 *
 * The wall clock is read only to measure; nothing here asserts on time.
 * Usage: bench_sim [quick] [ops|idle|bulk]...   ("quick" scales the jobs
 * down; naming benchmarks runs only those).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/sim.h"

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

static long hwm_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib * 1024;
}

static void die(const char *what, int rc, struct ckh_sim *sim)
{
    fprintf(stderr, "bench_sim: %s: %s (%s)\n", what, ckh_strerror(rc),
            sim != NULL ? ckh_sim_errmsg(sim) : "");
    exit(1);
}

/* ---- ops throughput ---- */

static int ops_iters = 20000;

static int prog_ops(struct ckh_env *env, void *arg)
{
    (void)arg;
    char path[64], buf[64];
    snprintf(path, sizeof path, "/%s", ckh_node_name(env->node));
    memset(buf, 'a', sizeof buf);
    struct ckh_file *f = NULL;
    if (ckh_fs_open(env->fs, path, CKH_O_RDWR | CKH_O_CREAT, &f) < 0)
        return 1;
    float grad[4] = {1, 2, 3, 4};
    for (int i = 0; i < ops_iters; i++) {
        ckh_file_pwrite(f, buf, sizeof buf, (uint64_t)(i % 64) * sizeof buf);
        ckh_file_pread(f, buf, sizeof buf, (uint64_t)(i % 64) * sizeof buf);
        if (i % 64 == 63)
            ckh_file_fdatasync(f);
        if (i % 8 == 0)
            ckh_coll_allreduce(env->coll, grad, 4, CKH_DT_F32, CKH_RED_SUM, 0);
    }
    ckh_file_close(f);
    return 0;
}

static void bench_ops(bool quick)
{
    const int nodes = 64;
    if (quick)
        ops_iters = 500;
    struct ckh_sim_config cfg = {.seed = 1, .coll_latency_ns = 2000};
    struct ckh_sim *sim = NULL;
    int rc = ckh_sim_create(&cfg, &sim);
    if (rc < 0)
        die("create", rc, NULL);
    struct ckh_simfs_config dc = {.name = "local", .sector_bytes = 4096, .latency_ns = 1000,
                                  .ns_per_kib = 100};
    struct ckh_simfs *disk = NULL;
    if ((rc = ckh_sim_add_disk(sim, &dc, &disk)) < 0)
        die("add_disk", rc, sim);
    struct ckh_simfs_mount m = {.prefix = "/", .disk = disk};
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "trainer_%d", i);
        struct ckh_node_config nc = {.name = name, .main = prog_ops, .rank = i, .mounts = &m,
                                     .nmounts = 1};
        if ((rc = ckh_sim_add_node(sim, &nc, NULL)) < 0)
            die("add_node", rc, sim);
    }
    struct ckh_sim_result res;
    double t0 = wall_s();
    if ((rc = ckh_sim_run(sim, &res)) < 0)
        die("run", rc, sim);
    double dt = wall_s() - t0;
    if (res.outcome != CKH_SIM_DONE)
        fprintf(stderr, "bench_sim: ops job ended with outcome %d\n", (int)res.outcome);
    printf("sim_ops_per_sec %.0f ops/s\n", (double)res.ops / dt);
    printf("sim_time_per_wall_sec %.4g ratio\n", (double)res.now_ns / (dt * 1e9));
    ckh_sim_destroy(sim);
}

/* ---- idle nodes ---- */

static int prog_idle(struct ckh_env *env, void *arg)
{
    (void)arg;
    ckh_clock_sleep_ns(env->clock, 3600ull * 1000000000ull);
    return 0;
}

static void bench_idle(bool quick)
{
    const int nodes = quick ? 1000 : 10000;
    long before = rss_bytes();
    struct ckh_sim_config cfg = {.seed = 1, .time_limit_ns = 1000000000ull};
    struct ckh_sim *sim = NULL;
    int rc = ckh_sim_create(&cfg, &sim);
    if (rc < 0)
        die("create", rc, NULL);
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "idle_%d", i);
        struct ckh_node_config nc = {.name = name, .main = prog_idle, .rank = -1};
        if ((rc = ckh_sim_add_node(sim, &nc, NULL)) < 0)
            die("add_node", rc, sim);
    }
    struct ckh_sim_result res;
    if ((rc = ckh_sim_run(sim, &res)) < 0)
        die("run", rc, sim);
    long after = rss_bytes();
    printf("idle_node_bytes %ld bytes\n", (after - before) / nodes);
    ckh_sim_destroy(sim);
}

/* ---- bulk described writes ---- */

#define BULK_NODES 1024
#define BULK_BYTES (16ull << 30)
#define BULK_FILES 4
#define BULK_CHUNK (256ull << 20)

static uint64_t bulk_bytes = BULK_BYTES;

static int prog_bulk(struct ckh_env *env, void *arg)
{
    (void)arg;
    uint64_t per_file = bulk_bytes / BULK_FILES;
    for (int k = 0; k < BULK_FILES; k++) {
        char path[96];
        snprintf(path, sizeof path, "/ckpt/%s.%d", ckh_node_name(env->node), k);
        struct ckh_file *f = NULL;
        if (ckh_fs_open(env->fs, path, CKH_O_WRONLY | CKH_O_CREAT, &f) < 0)
            return 1;
        for (uint64_t off = 0; off < per_file; off += BULK_CHUNK) {
            struct ckh_gen g = {.seed = 7, .stream = (uint64_t)k, .offset = off};
            uint64_t n = per_file - off < BULK_CHUNK ? per_file - off : BULK_CHUNK;
            if (ckh_file_pwrite_gen(f, &g, n, off) < 0)
                return 2;
        }
        ckh_file_fsync(f);
        ckh_file_close(f);
    }
    return 0;
}

static void bench_bulk(bool quick)
{
    const int nodes = quick ? 64 : BULK_NODES;
    struct ckh_sim_config cfg = {.seed = 1, .stack_bytes = 64 * 1024};
    struct ckh_sim *sim = NULL;
    int rc = ckh_sim_create(&cfg, &sim);
    if (rc < 0)
        die("create", rc, NULL);
    struct ckh_simfs_config dc = {.name = "shared", .sector_bytes = 4096, .latency_ns = 1000};
    struct ckh_simfs *disk = NULL;
    if ((rc = ckh_sim_add_disk(sim, &dc, &disk)) < 0)
        die("add_disk", rc, sim);
    rc = ckh_fs_mkdir(ckh_simfs_fs(disk), "/ckpt");
    if (rc < 0)
        die("mkdir", rc, sim);
    struct ckh_simfs_mount m = {.prefix = "/", .disk = disk};
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "writer_%d", i);
        struct ckh_node_config nc = {.name = name, .main = prog_bulk, .rank = -1, .mounts = &m,
                                     .nmounts = 1};
        if ((rc = ckh_sim_add_node(sim, &nc, NULL)) < 0)
            die("add_node", rc, sim);
    }
    struct ckh_sim_result res;
    if ((rc = ckh_sim_run(sim, &res)) < 0)
        die("run", rc, sim);
    for (int i = 0; i < nodes; i++) {
        struct ckh_node_status st;
        ckh_sim_node_status(sim, i, &st);
        if (st.exit_status != 0) {
            fprintf(stderr, "bench_sim: bulk writer %d failed (%d)\n", i, st.exit_status);
            break;
        }
    }
    printf("bulk_%dx16GiB_rss_bytes %ld bytes\n", nodes, hwm_bytes());
    ckh_sim_destroy(sim);
}

static bool wanted(int argc, char **argv, const char *name)
{
    bool any = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "quick") == 0)
            continue;
        any = true;
        if (strcmp(argv[i], name) == 0)
            return true;
    }
    return !any;
}

int main(int argc, char **argv)
{
    bool quick = false;
    for (int i = 1; i < argc; i++)
        quick = quick || strcmp(argv[i], "quick") == 0;
    if (wanted(argc, argv, "ops"))
        bench_ops(quick);
    if (wanted(argc, argv, "idle"))
        bench_idle(quick);
    if (wanted(argc, argv, "bulk"))
        bench_bulk(quick);
    return 0;
}
