/* Benchmarks of ckhfs (harness/ckhfs/ckhfs*.c) against the filesystems a
 * real program would otherwise write to, side by side in one run:
 *
 *   ckhfs  a simfs disk served over FUSE, mounted in a ckh temporary folder,
 *          its bytes in that folder as a run's disks keep them, and the
 *          kernel keeping the names it looked up (cache_names), as command
 *          jobs mount their disks unless a fault changes names mid-run or
 *          matches `stat`
 *   strict the same without cache_names: every path walk asks ckhfs
 *   tmpfs  a folder in /dev/shm (memory; the upper bound of the kernel path)
 *   disk   a folder in the working directory (the disk ckh runs on)
 *
 * Figures, one "name value unit" line each, then a table:
 *   <fs>_write_fsync_mib_s   sequential 1 MiB write(2)s of a new file from a
 *                            page-aligned buffer, then fsync of the file and
 *                            of its folder; MiB/s
 *   <fs>_write_unaligned_mib_s  the same from a buffer 16 bytes past a page
 *                            (what malloc gives a large buffer): FUSE
 *                            carries each such write as two requests
 *                            (1 MiB = 256 pages, the kernel's limit)
 *   <fs>_create_ops_s        open(O_CREAT|O_EXCL) + close of empty files
 *   <fs>_rename_ops_s        rename of each of those files
 *   <fs>_unlink_ops_s        unlink of each
 *   ckhfs_vs_disk_write      ckhfs bandwidth / disk bandwidth (target >= 0.6)
 *   ckhfs_vs_disk_<op>       ckhfs ops/s / disk ops/s for create, rename,
 *                            unlink (target >= 0.3); the table's last rows
 *                            have every ratio side by side (ckhfs/disk,
 *                            strict/disk)
 *   explore_states_s_jobsN   crash states checked per second by `ckh explore`
 *                            of scenarios/programs/torch-atomic-explore.yaml
 *                            (a PyTorch job; its verify is a small Python
 *                            script), with 1 and 2 workers: the figure a CI
 *                            run feels (needs the source tree as the working
 *                            folder and /usr/bin/python3 with torch)
 *
 * Every figure is the median of ROUNDS rounds (3 with "quick"), and the
 * filesystems take turns within each round (ckhfs, tmpfs, disk, strict,
 * then again), so a ratio compares figures of the same moments: on a
 * shared machine the speed of kernel round trips changes by 2-5x within
 * seconds (how busy the processors are, whether they idle), and figures
 * taken one filesystem after the other compared different moments. The
 * I/O runs in a child process (as a program under ckh would), the ckhfs
 * server in this one. The wall clock is read only to measure.
 * Usage: bench_ckhfs [quick] [MiB] [ckhfs|tmpfs|disk|strict|explore]... ("quick": 64
 * MiB and 500 files; else 256 MiB and 2000 files; MiB overrides the size;
 * naming filesystems (or explore) measures only those).
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/simfs.h"
#include "search/explore_program.h"
#include "ckhfs/ckhfs.h"
#include "exec/tmpdir.h"

#define CHUNK (1 << 20)

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Figures of one filesystem. */
struct figures {
    double write_mib_s; /* write + fsync bandwidth, aligned buffer */
    double unaligned_mib_s; /* the same, buffer at page + 16 */
    double create_s;    /* creates per second */
    double rename_s;    /* renames per second */
    double unlink_s;    /* unlinks per second */
};

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* In the child: the write figure (buf: CHUNK bytes). */
static int measure_write(const char *dir, int mib, char *buf, double *out)
{
    memset(buf, 'w', CHUNK);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/big", dir);
    double t0 = wall_s();
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    for (int i = 0; i < mib; i++) {
        buf[0] = (char)i;
        if (write(fd, buf, CHUNK) != CHUNK) {
            close(fd);
            return -1;
        }
    }
    if (fsync(fd) != 0 || close(fd) != 0 || fsync_path(dir, O_RDONLY | O_DIRECTORY) != 0)
        return -1;
    *out = (double)mib / (wall_s() - t0);
    /* Removed for good (the folder fsync makes the unlink durable, so
     * simfs frees the content before the next round). */
    if (unlink(path) != 0)
        return -1;
    return fsync_path(dir, O_RDONLY | O_DIRECTORY);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define ROUNDS 5

/* In the child: the metadata figures. */
static int measure_meta(const char *dir, int files, struct figures *fg)
{
    char a[PATH_MAX + 32], b[PATH_MAX + 32];
    double t0 = wall_s();
    for (int i = 0; i < files; i++) {
        snprintf(a, sizeof a, "%s/f%d", dir, i);
        int fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0 || close(fd) != 0)
            return -1;
    }
    double t1 = wall_s();
    for (int i = 0; i < files; i++) {
        snprintf(a, sizeof a, "%s/f%d", dir, i);
        snprintf(b, sizeof b, "%s/g%d", dir, i);
        if (rename(a, b) != 0)
            return -1;
    }
    double t2 = wall_s();
    for (int i = 0; i < files; i++) {
        snprintf(b, sizeof b, "%s/g%d", dir, i);
        if (unlink(b) != 0)
            return -1;
    }
    double t3 = wall_s();
    fg->create_s = files / (t1 - t0);
    fg->rename_s = files / (t2 - t1);
    fg->unlink_s = files / (t3 - t2);
    return 0;
}

/* Runs the measurements in a child process; the figures come back over a
 * pipe. */
static int measure(const char *dir, int mib, int files, struct figures *fg)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(p[0]);
        struct figures f = {0};
        static char space[CHUNK + 8192] __attribute__((aligned(4096)));
        int rc = measure_write(dir, mib, space, &f.write_mib_s);
        if (rc == 0)
            rc = measure_write(dir, mib, space + 16, &f.unaligned_mib_s);
        if (rc == 0)
            rc = measure_meta(dir, files, &f);
        if (rc != 0)
            fprintf(stderr, "bench_ckhfs: %s: %s\n", dir, strerror(errno));
        _exit(rc == 0 && write(p[1], &f, sizeof f) == (ssize_t)sizeof f ? 0 : 1);
    }
    close(p[1]);
    ssize_t n = read(p[0], fg, sizeof *fg);
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return n == (ssize_t)sizeof *fg && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void print(const char *name, const struct figures *f)
{
    printf("%s_write_fsync_mib_s %.0f MiB/s\n", name, f->write_mib_s);
    printf("%s_write_unaligned_mib_s %.0f MiB/s\n", name, f->unaligned_mib_s);
    printf("%s_create_ops_s %.0f ops/s\n", name, f->create_s);
    printf("%s_rename_ops_s %.0f ops/s\n", name, f->rename_s);
    printf("%s_unlink_ops_s %.0f ops/s\n", name, f->unlink_s);
}

/* One filesystem under test: a folder to measure in, and what made it. */
struct target {
    char dir[PATH_MAX];         /* the ckh temporary folder, or the bench folder */
    char mnt[PATH_MAX + 8];     /* where to measure */
    struct ckh_simfs *disk;     /* ckhfs: the disk served (owned) */
    struct ckh_ckhfs *fs;       /* ckhfs: the mount (owned) */
    bool tmp;                   /* dir is a ckh temporary folder */
};

/* A ckhfs mount, its bytes in its run folder as a run's disks keep them
 * (sim/simfs_store.c). */
static int up_ckhfs(struct target *t, bool cache_names)
{
    char msg[512];
    if (ckh_tmp_make(t->dir, sizeof t->dir) != 0)
        return -1;
    t->tmp = true;
    struct ckh_simfs_config dc = {.name = "bench", .sector_bytes = 4096, .seed = 1, .store_dir = t->dir};
    snprintf(t->mnt, sizeof t->mnt, "%s/mnt", t->dir);
    if (mkdir(t->mnt, 0755) != 0 || ckh_simfs_create(&dc, &t->disk) != 0)
        return -1;
    struct ckh_ckhfs_config cfg = {.mountpoint = t->mnt, .disk = t->disk, .cache_names = cache_names};
    if (ckh_ckhfs_mount(&cfg, &t->fs, msg, sizeof msg) != 0) {
        fprintf(stderr, "bench_ckhfs: %s\n", msg);
        return -1;
    }
    return 0;
}

/* A fresh folder below base. */
static int up_folder(struct target *t, const char *base)
{
    snprintf(t->dir, sizeof t->dir, "%s/ckh-bench-XXXXXX", base);
    if (!mkdtemp(t->dir))
        return -1;
    snprintf(t->mnt, sizeof t->mnt, "%s", t->dir);
    return 0;
}

static void down(struct target *t)
{
    ckh_ckhfs_unmount(t->fs);
    ckh_simfs_destroy(t->disk);
    if (t->dir[0])
        ckh_tmp_remove(t->dir);
    memset(t, 0, sizeof *t);
}

/* The median of each figure over n rounds. */
static void median_of(const struct figures *r, int n, struct figures *out)
{
    double v[ROUNDS];
    double *out_f[] = {&out->write_mib_s, &out->unaligned_mib_s, &out->create_s, &out->rename_s,
                       &out->unlink_s};
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < n; i++) {
            const double *in_f[] = {&r[i].write_mib_s, &r[i].unaligned_mib_s, &r[i].create_s,
                                    &r[i].rename_s, &r[i].unlink_s};
            v[i] = *in_f[k];
        }
        qsort(v, (size_t)n, sizeof v[0], cmp_double);
        *out_f[k] = v[n / 2];
    }
}

/* Crash states checked per second by the explorer of a real program. */
static int bench_explore(const char *file)
{
    if (access(file, R_OK) != 0 || system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        printf("explore: skipped (needs %s and /usr/bin/python3 with torch)\n", file);
        return 0;
    }
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    if (ckh_scenario_parse_file(file, NULL, &sc, &err) != 0) {
        fprintf(stderr, "bench_ckhfs: %s:%d: %s\n", err.file, err.line, err.msg);
        return 1;
    }
    int rc = 0;
    for (unsigned jobs = 1; jobs <= 2 && rc == 0; jobs++) {
        struct ckh_xprog_options o = {.jobs = jobs};
        struct ckh_xprog_result r;
        char msg[1200];
        if ((rc = ckh_explore_program(sc, &o, &r, msg, sizeof msg)) != 0) {
            fprintf(stderr, "bench_ckhfs: explore %s: %s\n", file, msg);
            break;
        }
        double secs = (double)r.check_ms / 1000.0;
        printf("explore_states_s_jobs%u %.1f states/s (%" PRIu64 " distinct states of %" PRIu64
               " operations, %" PRIu64 " checked by %s in %.1f s; the recorded run %.1f s; %zu failed)\n",
               jobs, secs > 0 ? (double)r.checked / secs : 0.0, r.distinct, r.ops, r.checked,
               ckh_xprog_check_name(r.check), secs, (double)r.record_ms / 1000.0, r.nfails);
        ckh_xprog_result_free(&r);
    }
    ckh_scenario_free(sc);
    return rc;
}

int main(int argc, char **argv)
{
    bool quick = false, pick = false, want[4] = {false, false, false, false}, explore = false;
    const char *names[] = {"ckhfs", "tmpfs", "disk", "strict"};
    int mib = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "quick") == 0) {
            quick = true;
            continue;
        }
        bool named = false;
        if (strcmp(argv[i], "explore") == 0)
            explore = named = pick = true;
        for (int k = 0; k < 4; k++)
            if (strcmp(argv[i], names[k]) == 0)
                want[k] = named = pick = true;
        if (!named)
            mib = atoi(argv[i]);
    }
    for (int k = 0; k < 4 && !pick; k++)
        want[k] = true;
    explore |= !pick;
    if (mib <= 0)
        mib = quick ? 64 : 256;
    int files = quick ? 500 : 2000;
    char msg[256];
    if (ckh_ckhfs_available(msg, sizeof msg) != 0) {
        fprintf(stderr, "bench_ckhfs: skipped: %s\n", msg);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return 1;
    struct figures all[4] = {{0}};
    static struct figures rounds[4][ROUNDS];
    struct target tg[4];
    memset(tg, 0, sizeof tg);
    const int nrounds = quick ? 3 : ROUNDS;
    int rc = 0;
    if ((want[0] && up_ckhfs(&tg[0], true) != 0) || (want[1] && up_folder(&tg[1], "/dev/shm") != 0) ||
        (want[2] && up_folder(&tg[2], cwd) != 0) || (want[3] && up_ckhfs(&tg[3], false) != 0))
        rc = -1;
    for (int r = 0; r < nrounds && rc == 0; r++)
        for (int i = 0; i < 4 && rc == 0; i++)
            if (want[i])
                rc = measure(tg[i].mnt, mib, files, &rounds[i][r]);
    for (int i = 0; i < 4; i++) {
        if (want[i] && rc == 0)
            median_of(rounds[i], nrounds, &all[i]);
        down(&tg[i]);
    }
    if (rc != 0) {
        fprintf(stderr, "bench_ckhfs: a measurement failed\n");
        return 1;
    }
    for (int i = 0; i < 4; i++)
        if (want[i])
            print(names[i], &all[i]);
    if (want[0] && want[2]) {
        printf("ckhfs_vs_disk_write %.2f ratio (unaligned: %.2f)\n",
               all[0].write_mib_s / all[2].write_mib_s,
               all[0].unaligned_mib_s / all[2].unaligned_mib_s);
        printf("ckhfs_vs_disk_create %.2f ratio\n", all[0].create_s / all[2].create_s);
        printf("ckhfs_vs_disk_rename %.2f ratio\n", all[0].rename_s / all[2].rename_s);
        printf("ckhfs_vs_disk_unlink %.2f ratio\n", all[0].unlink_s / all[2].unlink_s);
    }
    if (want[3] && want[2]) {
        printf("strict_vs_disk_rename %.2f ratio\n", all[3].rename_s / all[2].rename_s);
        printf("strict_vs_disk_unlink %.2f ratio\n", all[3].unlink_s / all[2].unlink_s);
    }
    if (want[0] || want[1] || want[2] || want[3]) {
        printf("\n%d MiB in 1 MiB writes + fsync; %d files; median of %d rounds, filesystems in turn\n",
               mib, files, nrounds);
        printf("%-8s %12s %12s %10s %10s %10s\n", "", "write MiB/s", "unaligned", "create/s",
               "rename/s", "unlink/s");
    }
    for (int i = 0; i < 4; i++)
        if (want[i])
            printf("%-8s %12.0f %12.0f %10.0f %10.0f %10.0f\n", names[i], all[i].write_mib_s,
                   all[i].unaligned_mib_s, all[i].create_s, all[i].rename_s, all[i].unlink_s);
    if (want[0] && want[2])
        printf("%-11s %9.2f %12.2f %10.2f %10.2f %10.2f\n", "ckhfs/disk",
               all[0].write_mib_s / all[2].write_mib_s, all[0].unaligned_mib_s / all[2].unaligned_mib_s,
               all[0].create_s / all[2].create_s, all[0].rename_s / all[2].rename_s,
               all[0].unlink_s / all[2].unlink_s);
    if (want[3] && want[2])
        printf("%-11s %9.2f %12.2f %10.2f %10.2f %10.2f\n", "strict/disk",
               all[3].write_mib_s / all[2].write_mib_s, all[3].unaligned_mib_s / all[2].unaligned_mib_s,
               all[3].create_s / all[2].create_s, all[3].rename_s / all[2].rename_s,
               all[3].unlink_s / all[2].unlink_s);
    if (explore && bench_explore("scenarios/programs/torch-atomic-explore.yaml") != 0)
        return 1;
    return 0;
}
