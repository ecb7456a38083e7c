/* Benchmark of the S3 endpoint (harness/ckhfs/s3_endpoint.c over
 * sim/objstore.c) against the folders a program would otherwise write its
 * checkpoints to, side by side in one run, the same bytes from the same
 * client process (bench/bench_objstore_client.py, /usr/bin/python3):
 *
 *   s3     PutObject and GetObject through boto3 against the endpoint
 *   ckhfs  the same bytes as files (write, fsync, close; read) in a ckhfs
 *          mount of a simfs disk, its bytes in a ckh temporary folder
 *   disk   the same as files in a folder of the working directory
 *
 * Figures, one "name value unit" line each, then a table with the ratios
 * side by side:
 *   <target>_put_mib_s, <target>_get_mib_s   MiB/s of the puts, the gets
 *   <target>_put_ops_s, <target>_get_ops_s   requests (files) per second
 *   s3_vs_disk_put, s3_vs_disk_get, ckhfs_vs_disk_put, ckhfs_vs_disk_get
 *
 * Each figure is the median of 3 rounds; the targets take turns within a
 * round, so a ratio compares figures of the same moments on a shared
 * machine. Nothing is asserted about time.
 * Usage (from the source tree, or with CKH_SOURCE_DIR set):
 *   bench_objstore [COUNT [SIZE_KIB]]   (default 200 objects of 1024 KiB)
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/objstore.h"
#include "ckh/simfs.h"
#include "ckhfs/ckhfs.h"
#include "ckhfs/s3_endpoint.h"
#include "exec/tmpdir.h"

#define ROUNDS 3
#define NTARGETS 3
#define NFIG 4

static const char *const targets[NTARGETS] = {"s3", "ckhfs", "disk"};
static const char *const figs[NFIG] = {"put_mib_s", "get_mib_s", "put_ops_s", "get_ops_s"};

/* Runs the client once; its four figures into out. 0 or -1. */
static int client(const char *script, const char *const *args, double out[NFIG])
{
    char cmd[3 * PATH_MAX];
    int n = snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s", script);
    for (size_t i = 0; args[i] != NULL && n < (int)sizeof cmd; i++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " '%s'", args[i]);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    char name[64];
    double v;
    int got = 0;
    while (fscanf(p, "%63s %lf", name, &v) == 2)
        for (int f = 0; f < NFIG; f++)
            if (strcmp(name, figs[f]) == 0) {
                out[f] = v;
                got++;
            }
    return (pclose(p) == 0 && got == NFIG) ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Clears a folder's obj_* files between rounds. */
static void clear(const char *dir, int count)
{
    char path[PATH_MAX + 32];
    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/obj_%d", dir, i);
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 200, kib = argc > 2 ? atoi(argv[2]) : 1024;
    const char *src = getenv("CKH_SOURCE_DIR");
    char script[PATH_MAX], url[64], counts[16], sizes[24], msg[512];
    snprintf(script, sizeof script, "%s/bench/bench_objstore_client.py", src ? src : ".");
    snprintf(counts, sizeof counts, "%d", count);
    snprintf(sizes, sizeof sizes, "%d", kib * 1024);
    if (access(script, R_OK) != 0 || count < 1 || kib < 1) {
        fprintf(stderr, "bench_objstore: run it from the source tree (or set CKH_SOURCE_DIR); "
                        "usage: bench_objstore [COUNT [SIZE_KIB]]\n");
        return 2;
    }
    struct ckh_objstore_config oc = {.name = "s3", .seed = 1};
    struct ckh_objstore *store = NULL;
    struct ckh_s3_server *srv = NULL;
    if (ckh_objstore_create(&oc, &store) != 0 || ckh_objstore_create_bucket(store, -1, "bench") != 0)
        return 1;
    struct ckh_s3_server_config sc = {.store = store, .nnodes = 1};
    if (ckh_s3_server_start(&sc, &srv, msg, sizeof msg) != 0) {
        fprintf(stderr, "bench_objstore: %s\n", msg);
        ckh_objstore_destroy(store);
        return 1;
    }
    ckh_s3_server_url(srv, 0, url, sizeof url);
    /* ckhfs, when FUSE can be used here */
    char tdir[PATH_MAX], mnt[PATH_MAX + 8], ddir[] = "ckh-bench-XXXXXX";
    struct ckh_simfs *disk = NULL;
    struct ckh_ckhfs *fs = NULL;
    bool have_ckhfs = ckh_ckhfs_available(msg, sizeof msg) == 0 && ckh_tmp_make(tdir, sizeof tdir) == 0;
    bool tmp_made = have_ckhfs;
    if (have_ckhfs) {
        struct ckh_simfs_config dc = {.name = "bench", .sector_bytes = 4096, .seed = 1, .store_dir = tdir};
        snprintf(mnt, sizeof mnt, "%s/mnt", tdir);
        struct ckh_ckhfs_config cfg = {.mountpoint = mnt, .disk = NULL, .cache_names = true};
        have_ckhfs = mkdir(mnt, 0755) == 0 && ckh_simfs_create(&dc, &disk) == 0;
        cfg.disk = disk;
        have_ckhfs = have_ckhfs && ckh_ckhfs_mount(&cfg, &fs, msg, sizeof msg) == 0;
    }
    if (!have_ckhfs)
        printf("# ckhfs skipped: %s\n", msg);
    if (mkdtemp(ddir) == NULL)
        return 1;
    double r[NTARGETS][NFIG][ROUNDS] = {{{0}}};
    int ok[NTARGETS] = {0};
    for (int round = 0; round < ROUNDS; round++) {
        for (int t = 0; t < NTARGETS; t++) {
            double v[NFIG] = {0};
            const char *s3args[] = {"s3", url, "bench", counts, sizes, NULL};
            const char *ckargs[] = {"dir", mnt, counts, sizes, NULL};
            const char *dkargs[] = {"dir", ddir, counts, sizes, NULL};
            const char *const *args = t == 0 ? s3args : t == 1 ? ckargs : dkargs;
            if (t == 1 && !have_ckhfs)
                continue;
            if (client(script, args, v) != 0) {
                fprintf(stderr, "bench_objstore: the %s client failed\n", targets[t]);
                continue;
            }
            for (int f = 0; f < NFIG; f++)
                r[t][f][round] = v[f];
            ok[t]++;
            if (t > 0)
                clear(t == 1 ? mnt : ddir, count);
        }
    }
    double med[NTARGETS][NFIG] = {{0}};
    for (int t = 0; t < NTARGETS; t++) {
        if (ok[t] != ROUNDS)
            continue;
        for (int f = 0; f < NFIG; f++) {
            qsort(r[t][f], ROUNDS, sizeof r[t][f][0], cmp_double);
            med[t][f] = r[t][f][ROUNDS / 2];
            printf("%s_%s %.2f %s\n", targets[t], figs[f], med[t][f], f < 2 ? "MiB/s" : "ops/s");
        }
    }
    for (int t = 0; t < 2; t++)
        if (ok[t] == ROUNDS && ok[2] == ROUNDS)
            printf("%s_vs_disk_put %.3f ratio\n%s_vs_disk_get %.3f ratio\n", targets[t], med[t][0] / med[2][0],
                   targets[t], med[t][1] / med[2][1]);
    printf("\n%d objects of %d KiB, median of %d rounds\n%-8s %12s %12s %12s %12s %10s %10s\n", count, kib, ROUNDS,
           "target", "put MiB/s", "get MiB/s", "put ops/s", "get ops/s", "put/disk", "get/disk");
    for (int t = 0; t < NTARGETS; t++)
        if (ok[t] == ROUNDS)
            printf("%-8s %12.2f %12.2f %12.1f %12.1f %10.3f %10.3f\n", targets[t], med[t][0], med[t][1], med[t][2],
                   med[t][3], med[2][0] > 0 ? med[t][0] / med[2][0] : 0, med[2][1] > 0 ? med[t][1] / med[2][1] : 0);
    ckh_ckhfs_unmount(fs);
    ckh_simfs_destroy(disk);
    if (tmp_made)
        ckh_tmp_remove(tdir);
    clear(ddir, count);
    rmdir(ddir);
    ckh_s3_server_stop(srv);
    ckh_objstore_destroy(store);
    return 0;
}
