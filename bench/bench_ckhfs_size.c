/* A checkpoint of real size through ckhfs (sim/simfs_store.c): a program
 * writes one file of SIZE in 1 MiB write(2)s, fsyncs it and its folder,
 * then the disk loses power (ckh_simfs_crash, every pending op resolved)
 * and the durable copy is digested (ckh_simfs_digest, every byte read back
 * from the store). The same file is first written to a plain folder on
 * the disk ckh runs on, for the bandwidth side by side.
 *
 * Figures, one "name value unit" line each, then a table:
 *   size_mib                 the checkpoint (default: twice MemTotal)
 *   disk_write_fsync_mib_s   plain folder: write + fsync bandwidth
 *   ckhfs_write_fsync_mib_s  ckhfs with its bytes in the run folder
 *   ckhfs_vs_disk_write      the ratio
 *   ckhfs_crash_s            the power loss (metadata only)
 *   ckhfs_digest_mib_s       digest of the durable copy after it
 *   ckhfs_peak_rss_mib       peak resident memory of the process serving
 *                            ckhfs (this one; the writer is a child)
 *   ckhfs_heap_mib           the disk's own bookkeeping (ckh_simfs_heap_bytes)
 *
 * Usage: bench_ckhfs_size [MiB]  (or CKH_BENCH_SIZE_MIB; CI runs it small).
 * Needs SIZE + 1 GiB free in the working folder and in TMPDIR (else says
 * so and exits 0). The wall clock is read only to measure.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/simfs.h"
#include "ckhfs/ckhfs.h"
#include "exec/tmpdir.h"

#define CHUNK (1 << 20)

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* MemTotal of /proc/meminfo in MiB (0: unknown). */
static uint64_t mem_total_mib(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    uint64_t kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib / 1024;
}

static uint64_t free_mib(const char *dir)
{
    struct statvfs sv;
    return statvfs(dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize >> 20 : 0;
}

/* The writer, in a child: mib MiB to dir/ckpt, fsync of it and of dir;
 * exits 0 on success. Each MiB differs (its first 8 bytes are its index). */
static void writer(const char *dir, uint64_t mib)
{
    static char buf[CHUNK] __attribute__((aligned(4096)));
    memset(buf, 'c', sizeof buf);
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/ckpt", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        _exit(2);
    for (uint64_t i = 0; i < mib; i++) {
        memcpy(buf, &i, sizeof i);
        if (write(fd, buf, CHUNK) != CHUNK) {
            fprintf(stderr, "bench_ckhfs_size: write %s at %" PRIu64 " MiB: %s\n", path, i, strerror(errno));
            _exit(3);
        }
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fsync(fd) != 0 || close(fd) != 0 || dfd < 0 || fsync(dfd) != 0)
        _exit(4);
    close(dfd);
    _exit(0);
}

/* Runs the writer on dir; its bandwidth in MiB/s, or a negative value. */
static double write_in_child(const char *dir, uint64_t mib)
{
    double t0 = wall_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        writer(dir, mib);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return (double)mib / (wall_s() - t0);
}

struct ckhfs_figures {
    double write_mib_s, crash_s, digest_mib_s, rss_mib, heap_mib;
};

static int bench_ckhfs(uint64_t mib, struct ckhfs_figures *out)
{
    char dir[PATH_MAX], mnt[PATH_MAX + 8], msg[512];
    struct ckh_simfs *disk = NULL;
    struct ckh_ckhfs *fs = NULL;
    int rc = -1;
    if (ckh_tmp_make(dir, sizeof dir) != 0)
        return -1;
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    struct ckh_simfs_config dc = {.name = "bench", .sector_bytes = 4096, .seed = 1, .store_dir = dir};
    if (mkdir(mnt, 0755) != 0 || ckh_simfs_create(&dc, &disk) != 0)
        goto out_remove;
    struct ckh_ckhfs_config cfg = {.mountpoint = mnt, .disk = disk};
    if (ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg) != 0) {
        fprintf(stderr, "bench_ckhfs_size: %s\n", msg);
        goto out_disk;
    }
    out->write_mib_s = write_in_child(mnt, mib);
    ckh_ckhfs_lock(fs);
    double t0 = wall_s();
    rc = ckh_simfs_crash(disk, -1, NULL, 0);
    double t1 = wall_s();
    uint64_t digest = ckh_simfs_digest(disk, true);
    double t2 = wall_s();
    struct ckh_stat st = {0};
    int src = ckh_fs_stat(ckh_simfs_fs(disk), "/ckpt", &st);
    out->heap_mib = (double)ckh_simfs_heap_bytes(disk) / (1 << 20);
    ckh_ckhfs_unlock(fs);
    ckh_ckhfs_unmount(fs);
    out->crash_s = t1 - t0;
    out->digest_mib_s = (double)mib / (t2 - t1);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    out->rss_mib = (double)ru.ru_maxrss / 1024.0;
    if (rc != 0 || src != 0 || st.size_bytes != mib << 20 || out->write_mib_s < 0) {
        fprintf(stderr, "bench_ckhfs_size: the fsynced file did not survive the power loss whole "
                "(crash %d, stat %d, %" PRIu64 " of %" PRIu64 " bytes)\n", rc, src, st.size_bytes, mib << 20);
        rc = -1;
    }
    printf("ckhfs_durable_digest %016" PRIx64 "\n", digest);
out_disk:
    ckh_simfs_destroy(disk);
out_remove:
    ckh_tmp_remove(dir);
    return rc;
}

int main(int argc, char **argv)
{
    const char *arg = argc > 1 ? argv[1] : getenv("CKH_BENCH_SIZE_MIB");
    uint64_t mib = arg ? strtoull(arg, NULL, 10) : 2 * mem_total_mib();
    if (mib == 0) {
        fprintf(stderr, "usage: bench_ckhfs_size [MiB] (default: twice MemTotal)\n");
        return 2;
    }
    char msg[256], cwd[PATH_MAX], tmp[PATH_MAX];
    if (ckh_ckhfs_available(msg, sizeof msg) != 0) {
        printf("bench_ckhfs_size: skipped: %s\n", msg);
        return 0;
    }
    if (!getcwd(cwd, sizeof cwd))
        return 1;
    snprintf(tmp, sizeof tmp, "%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (free_mib(cwd) < mib + 1024 || free_mib(tmp) < mib + 1024) {
        printf("bench_ckhfs_size: skipped: %" PRIu64 " MiB needs %" PRIu64 " MiB free in %s (%" PRIu64
               ") and in %s (%" PRIu64 ")\n", mib, mib + 1024, cwd, free_mib(cwd), tmp, free_mib(tmp));
        return 0;
    }
    printf("size_mib %" PRIu64 " MiB (MemTotal %" PRIu64 " MiB)\n", mib, mem_total_mib());
    char dir[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/ckh-bench-size-XXXXXX", cwd);
    if (!mkdtemp(dir))
        return 1;
    double disk = write_in_child(dir, mib);
    ckh_tmp_remove(dir);
    if (disk < 0) {
        fprintf(stderr, "bench_ckhfs_size: writing to %s failed\n", dir);
        return 1;
    }
    struct ckhfs_figures f = {0};
    if (bench_ckhfs(mib, &f) != 0)
        return 1;
    printf("disk_write_fsync_mib_s %.0f MiB/s\n", disk);
    printf("ckhfs_write_fsync_mib_s %.0f MiB/s\n", f.write_mib_s);
    printf("ckhfs_vs_disk_write %.2f ratio\n", f.write_mib_s / disk);
    printf("ckhfs_crash_s %.3f s\n", f.crash_s);
    printf("ckhfs_digest_mib_s %.0f MiB/s\n", f.digest_mib_s);
    printf("ckhfs_peak_rss_mib %.1f MiB\n", f.rss_mib);
    printf("ckhfs_heap_mib %.3f MiB\n", f.heap_mib);
    printf("\n%" PRIu64 " MiB in 1 MiB writes + fsync, then a power loss\n", mib);
    printf("%-8s %12s %10s %12s %14s\n", "", "write MiB/s", "crash s", "digest MiB/s", "peak RSS MiB");
    printf("%-8s %12.0f %10s %12s %14s\n", "disk", disk, "-", "-", "-");
    printf("%-8s %12.0f %10.3f %12.0f %14.1f\n", "ckhfs", f.write_mib_s, f.crash_s, f.digest_mib_s, f.rss_mib);
    return 0;
}
