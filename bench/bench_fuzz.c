/* Fuzzing cost and throughput of `ckh fuzz` as a user runs it, and the
 * defect-finding speed of its seeds.
 *
 * Each campaign is `CKH fuzz --seeds N --jobs 2 --no-shrink
 * --determinism-every K [--workload W]`, run as a child whose CPU time
 * (its own and its workers', from wait4) and wall time are measured, for
 * the mix of every built-in workload with the determinism check on every
 * seed (K = 1) and on every 16th (the default), and for each built-in
 * workload alone with K = 1. Given other ckh programs (LABEL=PATH, e.g. a
 * build of an older commit), the same campaigns run with each of them,
 * side by side.
 *
 * Prints "name value unit" lines:
 *   fuzz_cpu_ms_per_seed_<campaign>[_<label>]   CPU-ms per seed (user, sys)
 *   fuzz_cpu_ratio_<campaign>_vs_<label>        this ckh's CPU per seed over
 *                                               the other's
 *   fuzz_seeds_per_hour_jobs2_<campaign>[_<label>] seeds per hour of wall
 *                                               time on 2 workers (target
 *                                               for seed-pipeline: at least
 *                                               1,000,000); wall time on a
 *                                               busy machine: see
 *                                               bench_load_average
 *   fuzz_seeds_to_find_<defect>                 first failing ddp-train seed
 *                                               with the defect switch on
 *                                               (and passing without it), or
 *                                               "not_found_within N"
 * A campaign named <det1|det16>_<mix|workload>.
 * Usage: bench_fuzz [SEEDS [LABEL=CKH ...]] (default 2000 seeds; param-server
 * campaigns run a quarter of them; this ckh is the one next to this
 * program). Asserts nothing about time.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/defects.h"
#include "exec/tmpdir.h"
#include "exec/workloads.h"
#include "search/fuzz.h"

#define MAX_CKH 8

struct ckh_prog {
    const char *label; /* "" for this ckh */
    const char *path;  /* the program */
};

/* One campaign's figures. */
struct cost {
    double user_ms, sys_ms; /* CPU per seed */
    double per_hour;        /* seeds per hour of wall time */
    bool ok;                /* it ran (a campaign with failures exits 1: still measured) */
};

struct campaign {
    const char *name;     /* det1_mix, ... */
    const char *workload; /* NULL: the mix */
    const char *det;      /* --determinism-every */
    unsigned divisor;     /* seeds / divisor */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_ms(struct timeval tv)
{
    return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

/* Runs one campaign with prog in folder dir, output discarded. */
static struct cost measure(const struct ckh_prog *prog, const struct campaign *c, uint64_t seeds,
                           const char *dir)
{
    struct cost r = {0};
    char n[32];
    snprintf(n, sizeof n, "%llu", (unsigned long long)seeds);
    const char *argv[16] = {prog->path, "fuzz", "--seeds", n, "--jobs", "2", "--no-shrink",
                            "--determinism-every", c->det};
    int k = 9;
    if (c->workload) {
        argv[k++] = "--workload";
        argv[k++] = c->workload;
    }
    argv[k] = NULL;
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd < 0 || chdir(dir) != 0)
            _exit(127);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execv(prog->path, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) < 0)
        return r;
    double dt = now_s() - t0;
    if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1))
        return r;
    r.ok = true;
    r.user_ms = tv_ms(ru.ru_utime) / (double)seeds;
    r.sys_ms = tv_ms(ru.ru_stime) / (double)seeds;
    r.per_hour = (double)seeds / (dt > 0 ? dt : 1e-9) * 3600.0;
    return r;
}

static void print_cost(const char *campaign, const char *label, const struct cost *c)
{
    char name[128];
    snprintf(name, sizeof name, "%s%s%s", campaign, label[0] ? "_" : "", label);
    if (!c->ok) {
        printf("fuzz_cpu_ms_per_seed_%s unavailable\n", name);
        return;
    }
    printf("fuzz_cpu_ms_per_seed_%s %.2f ms (user %.2f, sys %.2f)\n", name, c->user_ms + c->sys_ms,
           c->user_ms, c->sys_ms);
    printf("fuzz_seeds_per_hour_jobs2_%s %.0f seeds/h\n", name, c->per_hour);
}

static void campaigns(const struct ckh_prog *progs, int nprogs, uint64_t seeds, const char *dir)
{
    static const struct campaign list[] = {
        {"det1_mix", NULL, "1", 1},
        {"det16_mix", NULL, "16", 1},
        {"det1_seed-pipeline", "seed-pipeline", "1", 1},
        {"det1_param-server", "param-server", "1", 4},
        {"det1_ddp-train", "ddp-train", "1", 1},
    };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
        const struct campaign *c = &list[i];
        if (c->workload && !ckh_workloads_find(c->workload))
            continue;
        uint64_t n = seeds / c->divisor ? seeds / c->divisor : 1;
        struct cost costs[MAX_CKH];
        for (int p = 0; p < nprogs; p++) {
            costs[p] = measure(&progs[p], c, n, dir);
            print_cost(c->name, progs[p].label, &costs[p]);
        }
        for (int p = 1; p < nprogs; p++) {
            double a = costs[0].user_ms + costs[0].sys_ms, b = costs[p].user_ms + costs[p].sys_ms;
            if (costs[0].ok && costs[p].ok && b > 0)
                printf("fuzz_cpu_ratio_%s_vs_%s %.2f x\n", c->name, progs[p].label, a / b);
        }
        fflush(stdout);
    }
}

/* The first ddp-train seed that fails with each defect switch on and
 * passes without it (in this process). */
static void seeds_to_find(void)
{
    if (!ckh_workloads_find("ddp-train"))
        return;
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
}

int main(int argc, char **argv)
{
    uint64_t seeds = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000;
    if (seeds == 0)
        seeds = 1;
    char self[PATH_MAX], ckh[PATH_MAX + 8], tmp[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    snprintf(ckh, sizeof ckh, "%s/ckh", dirname(self));
    struct ckh_prog progs[MAX_CKH] = {{"", ckh}};
    int nprogs = 1;
    for (int i = 2; i < argc && nprogs < MAX_CKH; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i]) {
            fprintf(stderr, "usage: bench_fuzz [SEEDS [LABEL=CKH ...]]\n");
            return 2;
        }
        *eq = '\0';
        progs[nprogs++] = (struct ckh_prog){argv[i], eq + 1};
    }
    if (ckh_tmp_make(tmp, sizeof tmp) != 0) {
        fprintf(stderr, "bench_fuzz: cannot make a temporary folder: %s\n", strerror(errno));
        return 3;
    }
    double load[1] = {0};
    if (getloadavg(load, 1) == 1)
        printf("bench_load_average %.2f runnable\n", load[0]);
    campaigns(progs, nprogs, seeds, tmp);
    ckh_tmp_remove(tmp);
    seeds_to_find();
    return 0;
}
