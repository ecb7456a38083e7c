/* ckh-coll-check-MPI: the collectives' conformance script
 * (ckh_real_coll_check) on the real collectives, one rank per process:
 *
 *   mpirun -np W ckh-coll-check-MPI OUT [skip-last]
 *
 * Rank r writes its results to OUT.<r>. With skip-last the last rank
 * skips the final barrier and the others must time out (500 ms). Exit
 * status 0, 3 when MPI cannot start or a file cannot be written.
 *
 *   mpirun -np W ckh-coll-check-MPI --bench BYTES ITERS
 *
 * times ITERS f32 all-reduces of BYTES (after ITERS / 10 + 1 warm-up
 * calls) and rank 0 prints "allreduce BYTES NS_PER_CALL" (bench_real).
 *
 *   mpirun -np W ckh-coll-check-MPI --bench BYTES ITERS nccl
 *
 * does the same through NCCL on a buffer in device memory (real_nccl.h's
 * device all-reduce, ddp-train's gradient path); exit status 3 with what
 * is missing on stderr when NCCL or a device is not there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "real_coll.h"
#include "real_nccl.h"
#include "ckh/posix.h"

/* One f32 sum all-reduce of buf: on the host collectives, or on the
 * device buffer through gpu when there is one. */
static int reduce(struct ckh_coll *c, struct ckh_gpu *gpu, void *buf, size_t count)
{
    return gpu ? ckh_gpu_allreduce(gpu, buf, count, CKH_DT_F32, CKH_RED_SUM, 0)
               : ckh_coll_allreduce(c, buf, count, CKH_DT_F32, CKH_RED_SUM, 0);
}

static int bench(struct ckh_coll *c, struct ckh_gpu *gpu, int rank, size_t bytes, long iters)
{
    int code = 3;
    float *host = calloc(bytes / 4 + 1, sizeof(float));
    void *buf = host, *dev = NULL;
    if (!host)
        return 3;
    /* A device buffer starts as the host's: zeros (cudaMalloc's memory
     * holds whatever was there). */
    if (gpu && (ckh_gpu_alloc(gpu, rank, bytes, &dev) != 0 ||
                ckh_gpu_copy(gpu, dev, host, bytes, CKH_GPU_TO_DEVICE) != 0))
        goto out;
    if (gpu)
        buf = dev;
    for (long i = 0; i < iters / 10 + 1; i++)
        if (reduce(c, gpu, buf, bytes / 4) != 0)
            goto out;
    uint64_t t0 = ckh_posix_now_ns();
    for (long i = 0; i < iters; i++)
        if (reduce(c, gpu, buf, bytes / 4) != 0)
            goto out;
    uint64_t t = ckh_posix_now_ns() - t0;
    if (rank == 0)
        printf("allreduce %zu %.0f\n", bytes, (double)t / (double)iters);
    code = 0;
out:
    ckh_gpu_free(gpu, dev);
    free(host);
    return code;
}

int main(int argc, char **argv)
{
    char msg[256];
    int rank = 0, world = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: ckh-coll-check-MPI OUT [skip-last]\n");
        return 2;
    }
    bool skip = argc > 2 && !strcmp(argv[2], "skip-last");
    bool benching = argc > 3 && !strcmp(argv[1], "--bench");
    if (ckh_real_mpi_init(&argc, &argv, &rank, &world, msg, sizeof msg) != 0) {
        fprintf(stderr, "ckh-coll-check: %s\n", msg);
        return 3;
    }
    struct ckh_coll *c = NULL;
    unsigned char *out = NULL;
    size_t n = 0;
    int code = 3;
    if (benching) {
        struct ckh_coll *nccl = NULL;
        char why[512];
        bool want_nccl = argc > 4 && !strcmp(argv[4], "nccl");
        if (ckh_real_coll_create(&c) != 0)
            code = 3;
        else if (want_nccl && ckh_real_nccl_create(c, 60000000000ull, &nccl, why, sizeof why) != 0)
            fprintf(stderr, "ckh-coll-check: %s\n", why);
        else
            code = bench(c, nccl ? ckh_real_nccl_gpu(nccl) : NULL, rank, (size_t)atol(argv[2]), atol(argv[3]));
        ckh_real_nccl_destroy(nccl);
    } else if (ckh_real_coll_create(&c) == 0 && ckh_real_coll_check(c, skip, 500000000ull, &out, &n) == 0) {
        char path[1024], tmp[1100];
        snprintf(path, sizeof path, "%s.%d", argv[1], rank);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        code = f && fwrite(out, 1, n, f) == n && fclose(f) == 0 && rename(tmp, path) == 0 ? 0 : 3;
        /* A rank that leaves MPI without MPI_Finalize (after the timeout)
         * may make the launcher kill the others: wait, through the files,
         * until every rank has written its results (at most 20 s). */
        for (int tries = 0, r = 0; r < world && tries < 2000; tries++) {
            snprintf(path, sizeof path, "%s.%d", argv[1], r);
            if (access(path, F_OK) == 0) {
                r++;
                continue;
            }
            struct timespec ts = {.tv_nsec = 10000000};
            nanosleep(&ts, NULL);
        }
    }
    free(out);
    bool failed = ckh_real_coll_failed(c);
    if (!failed)
        ckh_real_coll_destroy(c);
    ckh_real_mpi_finalize(failed ? c : NULL);
    return code;
}
