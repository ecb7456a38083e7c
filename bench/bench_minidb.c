/* minidb save and load throughput on the real disk (POSIX platform), side
 * by side with dd writing/reading the same number of bytes in the same
 * directory. Prints "name value" lines; asserts nothing about time.
 *
 *   bench_minidb [DIR [MIB [REPEATS]]]     (defaults: /tmp 256 3)
 *
 * Each figure is the best of REPEATS runs. Save: one stored blob of MIB
 * MiB written as <DIR>/ckh_bench_XXXXXX/ckpt/n.<k> (write, fsync, rename,
 * fsync dir) vs `dd if=/dev/zero of=FILE bs=1M count=MIB conv=fsync`.
 * Load: reading and verifying that checkpoint vs `dd if=FILE of=/dev/null
 * bs=1M` (both from the page cache, right after the write).
 *
 * A third column, "raw", does the least a crash-safe save can do with the
 * same bytes through the same POSIX ops (write in 1 MiB pieces, fsync,
 * rename, fsync of the directory; load: read into freshly allocated memory),
 * so minidb's own cost (format, checksums) shows apart from the platform's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/posix.h"
#include "ckh/ref.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The least a crash-safe save does: write, fsync, rename, fsync dir. */
static double raw_save(struct ckh_env *env, const unsigned char *data, uint64_t n, int r)
{
    char tmp[64], dst[64];
    snprintf(tmp, sizeof tmp, "/ckpt/raw.%d.tmp", r);
    snprintf(dst, sizeof dst, "/ckpt/raw.%d", r);
    double t0 = now_s();
    struct ckh_file *f;
    if (ckh_fs_open(env->fs, tmp, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &f) != 0)
        exit(1);
    for (uint64_t off = 0; off < n; off += 1u << 20) {
        size_t k = n - off < (1u << 20) ? (size_t)(n - off) : (1u << 20);
        if (ckh_file_pwrite(f, data + off, k, off) != (int64_t)k)
            exit(1);
    }
    if (ckh_file_fsync(f) || ckh_file_close(f) || ckh_fs_rename(env->fs, tmp, dst) ||
        ckh_fs_fsync_dir(env->fs, "/ckpt"))
        exit(1);
    return now_s() - t0;
}

static double raw_load(struct ckh_env *env, uint64_t n, int r)
{
    char dst[64];
    snprintf(dst, sizeof dst, "/ckpt/raw.%d", r);
    double t0 = now_s();
    struct ckh_file *f;
    unsigned char *buf = malloc(n);
    if (!buf || ckh_fs_open(env->fs, dst, CKH_O_RDONLY, &f) != 0 || ckh_file_pread_all(f, buf, n, 0) != 0)
        exit(1);
    ckh_file_close(f);
    double t = now_s() - t0;
    free(buf);
    ckh_fs_unlink(env->fs, dst);
    return t;
}

static double run_cmd(const char *cmd)
{
    double t0 = now_s();
    if (system(cmd) != 0) {
        fprintf(stderr, "command failed: %s\n", cmd);
        exit(1);
    }
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : "/tmp";
    long mib = argc > 2 ? atol(argv[2]) : 256;
    int repeats = argc > 3 ? atoi(argv[3]) : 3;
    char root[512], cmd[2048], msg[256];
    struct ckh_env *env;
    struct ckh_backend *db;
    struct ckh_backend_config bc = {0};
    struct ckh_ws *ws, *back;
    uint64_t n = (uint64_t)mib << 20;
    unsigned char *data;
    double best_save = 1e30, best_dd = 1e30, best_load = 1e30, best_dd_read = 1e30;
    double best_raw = 1e30, best_raw_read = 1e30;
    int rc;

    if (mib <= 0 || repeats <= 0) {
        fprintf(stderr, "usage: bench_minidb [DIR [MIB [REPEATS]]]\n");
        return 2;
    }
    snprintf(root, sizeof root, "%s/ckh_bench_XXXXXX", base);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    if ((rc = ckh_posix_env_create(root, 1, "bench", &env)) != 0 ||
        (rc = ckh_fs_mkdir(env->fs, "/ckpt")) != 0) {
        fprintf(stderr, "env: %d\n", rc);
        return 1;
    }
    bc.fs = env->fs;
    bc.alloc = env->alloc;
    bc.rand = env->rand;
    bc.prefix = "/ckpt";
    if ((rc = ckh_backend_open("minidb", &bc, &db, msg, sizeof msg)) != 0) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    ckh_ws_create(NULL, &ws);
    data = malloc(n);
    for (uint64_t i = 0; i < n; i++)
        data[i] = (unsigned char)(i * 131 + (i >> 12));
    rc = ckh_ws_set(ws, "n/weights", CKH_DT_U8, 1, (uint64_t[]){n}, data);
    if (rc != 0)
        return 1;

    for (int r = 0; r < repeats; r++) {
        double t0 = now_s(), t;
        if ((rc = ckh_backend_save(db, "n", r, ws, NULL, 0)) != 0) {
            fprintf(stderr, "save: %s\n", ckh_backend_errmsg(db));
            return 1;
        }
        t = now_s() - t0;
        if (t < best_save)
            best_save = t;
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s/dd.%d' bs=1M count=%ld conv=fsync status=none",
                 root, r, mib);
        t = run_cmd(cmd);
        if (t < best_dd)
            best_dd = t;
        ckh_ws_create(NULL, &back);
        t0 = now_s();
        if ((rc = ckh_backend_load(db, "n", r, back, NULL, 0, 0, NULL)) != 0) {
            fprintf(stderr, "load: %s\n", ckh_backend_errmsg(db));
            return 1;
        }
        t = now_s() - t0;
        ckh_ws_destroy(back);
        if (t < best_load)
            best_load = t;
        snprintf(cmd, sizeof cmd, "dd if='%s/dd.%d' of=/dev/null bs=1M status=none", root, r);
        t = run_cmd(cmd);
        if (t < best_dd_read)
            best_dd_read = t;
        snprintf(cmd, sizeof cmd, "rm -f '%s/dd.%d' '%s/ckpt/n.%d'", root, r, root, r);
        run_cmd(cmd);
        t = raw_save(env, data, n, r);
        if (t < best_raw)
            best_raw = t;
        t = raw_load(env, n, r);
        if (t < best_raw_read)
            best_raw_read = t;
    }
    free(data);
    printf("bytes %" PRIu64 "\n", n);
    printf("minidb_save_mib_per_sec %.1f\n", (double)mib / best_save);
    printf("dd_mib_per_sec %.1f\n", (double)mib / best_dd);
    printf("minidb_save_vs_dd_ratio %.3f\n", best_dd / best_save);
    printf("minidb_load_mib_per_sec %.1f\n", (double)mib / best_load);
    printf("dd_read_mib_per_sec %.1f\n", (double)mib / best_dd_read);
    printf("minidb_load_vs_dd_ratio %.3f\n", best_dd_read / best_load);
    printf("raw_save_mib_per_sec %.1f\n", (double)mib / best_raw);
    printf("minidb_save_vs_raw_ratio %.3f\n", best_raw / best_save);
    printf("raw_load_mib_per_sec %.1f\n", (double)mib / best_raw_read);
    printf("minidb_load_vs_raw_ratio %.3f\n", best_raw_read / best_load);

    ckh_ws_destroy(ws);
    ckh_backend_close(db);
    ckh_posix_env_destroy(env);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    run_cmd(cmd);
    return 0;
}
