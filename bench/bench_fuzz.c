/* Fuzzing throughput and defect-finding speed.
 *
 * Prints "name value unit" lines:
 *   fuzz_seeds_per_hour_2cores_<workload>   seeds per hour with two forked
 *                                           workers (target for
 *                                           seed-pipeline: >= 1,000,000)
 *   fuzz_seeds_to_find_<defect>             first failing ddp-train seed with
 *                                           the defect switch on, or
 *                                           "not_found_within N" 
 * Usage: bench_fuzz [SEEDS_PER_WORKER]. Asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/workloads.h"
#include "ckh/defects.h"
#include "search/fuzz.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void throughput(const char *workload, uint64_t per_worker)
{
    if (!ckh_workloads_find(workload))
        return;
    struct ckh_fuzz_config cfg = {.workload = workload, .determinism_every = 16};
    fflush(stdout);
    double t0 = now_s();
    pid_t pids[2];
    for (int w = 0; w < 2; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            for (uint64_t k = 0; k < per_worker; k++) {
                struct ckh_fuzz_seed_result r;
                ckh_fuzz_run_seed(1 + k * 2 + (uint64_t)w, &cfg, &r, NULL);
            }
            _exit(0);
        }
    }
    for (int w = 0; w < 2; w++)
        if (pids[w] > 0)
            waitpid(pids[w], NULL, 0);
    double dt = now_s() - t0;
    printf("fuzz_seeds_per_hour_2cores_%s %.0f seeds/h\n", workload,
           (double)(2 * per_worker) / (dt > 0 ? dt : 1e-9) * 3600.0);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000;
    throughput("seed-pipeline", n);
    throughput("param-server", n / 20 ? n / 20 : 1);
    throughput("ddp-train", n / 4 ? n / 4 : 1);
    if (!ckh_workloads_find("ddp-train"))
        return 0;
    const uint64_t limit = 1000;
    for (int d = 0; d < CKH_DEFECT__COUNT; d++) {
        const char *name = ckh_defect_name((enum ckh_defect)d);
        struct ckh_fuzz_config cfg = {.workload = "ddp-train", .defect = name};
        struct ckh_fuzz_config clean = {.workload = "ddp-train"};
        uint64_t found = 0;
        for (uint64_t s = 1; s <= limit && !found; s++) {
            struct ckh_fuzz_seed_result r, r0;
            ckh_fuzz_run_seed(s, &cfg, &r, NULL);
            if (r.verdict != CKH_VERDICT_FAIL)
                continue;
            /* Count only seeds that pass without the defect. */
            ckh_fuzz_run_seed(s, &clean, &r0, NULL);
            if (r0.verdict == CKH_VERDICT_PASS)
                found = s;
        }
        if (found)
            printf("fuzz_seeds_to_find_%s %llu seeds\n", name, (unsigned long long)found);
        else
            printf("fuzz_seeds_to_find_%s not_found_within %llu seeds\n", name,
                   (unsigned long long)limit);
    }
    return 0;
}
