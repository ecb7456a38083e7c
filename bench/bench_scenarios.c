/* Scenarios per second for the whole scenario library, with one worker
 * and with two, side by side. Prints "name value unit" lines.
 * Usage: bench_scenarios [SCENARIO_DIR] (default: $CKH_SOURCE_DIR/scenarios
 * or ./scenarios). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "model/scenario.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs `ckh run DIR --jobs N --quiet` with its output discarded. */
static double run_library(const char *dir, const char *jobs, int *status)
{
    fflush(NULL);
    int saved = dup(1), devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    close(devnull);
    double t0 = now_s();
    *status = ckh_cli_main(6, (char *[]){"ckh", "run", (char *)dir, "--jobs", (char *)jobs, "--quiet", NULL});
    double t = now_s() - t0;
    fflush(NULL);
    dup2(saved, 1);
    close(saved);
    return t;
}

int main(int argc, char **argv)
{
    char dir[1024];
    const char *src = getenv("CKH_SOURCE_DIR");
    if (argc > 1)
        snprintf(dir, sizeof dir, "%s", argv[1]);
    else
        snprintf(dir, sizeof dir, "%s/scenarios", src ? src : ".");
    char **paths = NULL;
    size_t n = 0;
    if (ckh_scn_list_files(dir, NULL, &paths, &n) != 0 || n == 0) {
        fprintf(stderr, "bench_scenarios: no scenario under %s\n", dir);
        return 2;
    }
    ckh_scn_paths_free(NULL, paths, n);
    int st1, st2;
    run_library(dir, "1", &st1); /* warm the page cache */
    double t1 = run_library(dir, "1", &st1);
    double t2 = run_library(dir, "2", &st2);
    printf("scenarios %zu count\n", n);
    printf("scenarios_per_sec_1_worker %.1f scenarios/s\n", (double)n / t1);
    printf("scenarios_per_sec_2_workers %.1f scenarios/s\n", (double)n / t2);
    printf("speedup_2_vs_1 %.2f ratio\n", t1 / t2);
    printf("library_exit_status %d code\n", st1 > st2 ? st1 : st2);
    return 0;
}
