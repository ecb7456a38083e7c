/* ckh on many machines against one machine, measured on one: the same
 * fuzz campaign (and the same scenario folder) by one ckh with two
 * workers, and by two ckh ranks of one worker each under mpirun of Open
 * MPI and of MPICH (the launcher's start, the merge folder and rank 0's
 * merge included).
 *
 * Prints "name value unit" lines:
 *   fuzz_seeds_per_hour_jobs2                `ckh fuzz --jobs 2`
 *   fuzz_seeds_per_hour_mpirun_<mpi>_np2     `mpirun -np 2 ckh fuzz`
 *   run_scenarios_per_s_jobs2                `ckh run scenarios/minidb --jobs 2`
 *   run_scenarios_per_s_mpirun_<mpi>_np2     the same under `mpirun -np 2`
 * A launcher that is not installed prints "unavailable".
 * Usage: bench_dist [SEEDS [CKH [SOURCE_DIR]]] (default 1000 seeds, the ckh
 * next to this program, the current folder). Asserts nothing about time.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/tmpdir.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv with its output discarded; returns the wall seconds, or -1
 * when it could not run or ended by a signal. */
static double timed(char *const *argv)
{
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) == 127)
        return -1;
    return now_s() - t0; /* a campaign with failures exits 1: still measured */
}

static bool have(const char *prog)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

/* The argv of `LAUNCH ckh ARGS`: LAUNCH is NULL (one process), "openmpi"
 * or "mpich" (two ranks). */
static int build_argv(char **out, const char *launch, const char *ckh, char *const *args)
{
    int n = 0;
    if (launch && strcmp(launch, "openmpi") == 0) {
        out[n++] = "mpirun.openmpi";
        out[n++] = "--oversubscribe";
    } else if (launch) {
        out[n++] = "mpirun.mpich";
    }
    if (launch) {
        out[n++] = "-np";
        out[n++] = "2";
    }
    out[n++] = (char *)ckh;
    for (int i = 0; args[i]; i++)
        out[n++] = args[i];
    out[n] = NULL;
    return n;
}

static void fuzz_line(const char *launch, const char *ckh, const char *seeds, const char *tmp)
{
    char out[1200], name[96];
    static int k;
    snprintf(out, sizeof out, "%s/fuzz-%d", tmp, k++);
    char *args[] = {"fuzz", "--seeds", (char *)seeds, "--jobs", launch ? "1" : "2",
                    "--no-shrink", "--out", out, NULL};
    char *argv[20];
    build_argv(argv, launch, ckh, args);
    snprintf(name, sizeof name, launch ? "fuzz_seeds_per_hour_mpirun_%s_np2" : "fuzz_seeds_per_hour_jobs2",
             launch);
    double dt = launch && !have(argv[0]) ? -1 : timed(argv);
    if (dt < 0)
        printf("%s unavailable\n", name);
    else
        printf("%s %.0f seeds/h\n", name, strtod(seeds, NULL) / (dt > 0 ? dt : 1e-9) * 3600.0);
    fflush(stdout);
}

static void run_line(const char *launch, const char *ckh, const char *dir, const char *tmp)
{
    char json[1200], name[96];
    static int k;
    snprintf(json, sizeof json, "%s/run-%d.json", tmp, k++);
    char *args[] = {"run", (char *)dir, "--jobs", launch ? "1" : "2", "--quiet", "--json", json,
                    NULL};
    char *argv[20];
    build_argv(argv, launch, ckh, args);
    snprintf(name, sizeof name, launch ? "run_scenarios_per_s_mpirun_%s_np2" : "run_scenarios_per_s_jobs2",
             launch);
    double dt = launch && !have(argv[0]) ? -1 : timed(argv);
    FILE *f = fopen(json, "r");
    unsigned total = 0;
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, " \"summary\": {\"total\": %u", &total) == 1)
            break;
    if (f)
        fclose(f);
    if (dt < 0 || total == 0)
        printf("%s unavailable\n", name);
    else
        printf("%s %.1f scenarios/s\n", name, total / (dt > 0 ? dt : 1e-9));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *seeds = argc > 1 ? argv[1] : "1000";
    char self[PATH_MAX], ckh[PATH_MAX + 8], dir[PATH_MAX + 32], tmp[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    snprintf(ckh, sizeof ckh, "%s/ckh", dirname(self));
    if (argc > 2)
        snprintf(ckh, sizeof ckh, "%s", argv[2]);
    snprintf(dir, sizeof dir, "%s/scenarios/minidb", argc > 3 ? argv[3] : ".");
    /* Open MPI refuses root without these (CI runs as root). */
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    if (ckh_tmp_make(tmp, sizeof tmp) != 0) {
        fprintf(stderr, "bench_dist: cannot make a temporary folder: %s\n", strerror(errno));
        return 3;
    }
    const char *launch[] = {NULL, "openmpi", "mpich"};
    for (int i = 0; i < 3; i++)
        fuzz_line(launch[i], ckh, seeds, tmp);
    for (int i = 0; i < 3; i++)
        run_line(launch[i], ckh, dir, tmp);
    ckh_tmp_remove(tmp);
    return 0;
}
