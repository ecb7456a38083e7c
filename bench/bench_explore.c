/* Crash-explorer throughput: crash states explored and checked per second
 * and the time to explore every crash state of one save (harness/explore.c).
 * Prints "name value unit" lines; asserts nothing about time.
 *
 * Workloads: minidb saving 64 blobs (one file, about a hundred writes),
 * and, when the test plugins are built, the correct test backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/err.h"
#include "explore.h"
#include "plugin.h"

#ifndef CKH_BACKENDS_DIR
#define CKH_BACKENDS_DIR "backends"
#endif


/* ---- "dirsave": one file per blob in a per-epoch directory ----
 * save: mkdir <prefix>/.<node>.<epoch>.d, per blob open+pwrite+fsync+close
 * of a file named after the blob, fsync_dir of the folder, rename it to
 * <prefix>/<node>.<epoch>, fsync_dir of the prefix. The blob header is
 * u32 dtype, u32 ndim, u64 shape[ndim]; then the bytes. */
struct ds {
    struct ckh_backend base; /* must be first */
    struct ckh_fs *fs;       /* borrowed */
    char prefix[256];        /* checkpoint directory */
};

static const struct ckh_backend_ops ds_ops;

static int ds_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    struct ds *d = calloc(1, sizeof(*d));
    if (!d)
        return CKH_ENOMEM;
    d->base.ops = &ds_ops;
    d->fs = cfg->fs;
    snprintf(d->prefix, sizeof(d->prefix), "%s", cfg->prefix);
    *out = &d->base;
    return 0;
}

static void ds_close(struct ckh_backend *b)
{
    free(b);
}

static int ds_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                   const char *const *names, size_t count)
{
    struct ds *d = (struct ds *)b;
    char dir[512], fin[512], path[1100];
    (void)names;
    (void)count;
    snprintf(dir, sizeof(dir), "%s/.%s.%lld.d", d->prefix, node, (long long)epoch);
    snprintf(fin, sizeof(fin), "%s/%s.%lld", d->prefix, node, (long long)epoch);
    int rc = ckh_fs_mkdir(d->fs, dir);
    for (size_t i = 0; rc == 0 && i < ckh_ws_count(ws); i++) {
        const struct ckh_blob *bl = ckh_ws_at(ws, i);
        struct ckh_file *f;
        unsigned char hdr[8 + 8 * CKH_BLOB_MAX_DIMS];
        uint32_t dt = (uint32_t)bl->dtype;
        memcpy(hdr, &dt, 4);
        memcpy(hdr + 4, &bl->ndim, 4);
        memcpy(hdr + 8, bl->shape, 8 * bl->ndim);
        size_t hn = 8 + 8 * bl->ndim;
        snprintf(path, sizeof(path), "%s/%s", dir, bl->name);
        if ((rc = ckh_fs_open(d->fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &f)) != 0)
            break;
        unsigned char *buf = malloc(hn + bl->size_bytes);
        if (!buf)
            rc = CKH_ENOMEM;
        if (buf) {
            memcpy(buf, hdr, hn);
            memcpy(buf + hn, bl->data, bl->size_bytes);
            int64_t w = ckh_file_pwrite(f, buf, hn + bl->size_bytes, 0);
            rc = w == (int64_t)(hn + bl->size_bytes) ? 0 : w < 0 ? (int)w : CKH_EINTERNAL;
            free(buf);
        }
        if (rc == 0)
            rc = ckh_file_fsync(f);
        int crc = ckh_file_close(f);
        rc = rc ? rc : crc;
    }
    if (rc == 0)
        rc = ckh_fs_fsync_dir(d->fs, dir);
    if (rc == 0)
        rc = ckh_fs_rename(d->fs, dir, fin);
    if (rc == 0)
        rc = ckh_fs_fsync_dir(d->fs, d->prefix);
    return rc;
}

static int ds_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                   const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    struct ds *d = (struct ds *)b;
    char dir[512], path[1100];
    struct ckh_listing l;
    (void)names;
    (void)count;
    (void)flags;
    snprintf(dir, sizeof(dir), "%s/%s.%lld", d->prefix, node, (long long)epoch);
    int rc = ckh_fs_listdir(d->fs, dir, &l);
    if (rc)
        return rc == -ENOENT ? CKH_ENOTFOUND : rc;
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        struct ckh_stat st;
        struct ckh_file *f;
        snprintf(path, sizeof(path), "%s/%s", dir, l.entries[i].name);
        if ((rc = ckh_fs_stat(d->fs, path, &st)) != 0)
            break;
        unsigned char *buf = malloc(st.size_bytes + 1);
        if (!buf || st.size_bytes < 8) {
            free(buf);
            rc = buf ? CKH_ETRUNCATED : CKH_ENOMEM;
            break;
        }
        if ((rc = ckh_fs_open(d->fs, path, CKH_O_RDONLY, &f)) == 0) {
            rc = ckh_file_pread_all(f, buf, st.size_bytes, 0);
            ckh_file_close(f);
        }
        uint32_t dt, nd;
        memcpy(&dt, buf, 4);
        memcpy(&nd, buf + 4, 4);
        uint64_t shape[CKH_BLOB_MAX_DIMS];
        if (rc == 0 && (nd > CKH_BLOB_MAX_DIMS || st.size_bytes < 8 + 8 * (uint64_t)nd))
            rc = CKH_ECORRUPT;
        if (rc == 0) {
            memcpy(shape, buf + 8, 8 * nd);
            rc = ckh_ws_set(ws, l.entries[i].name, (enum ckh_dtype)dt, nd, shape, buf + 8 + 8 * nd);
        }
        free(buf);
    }
    if (rc == 0 && loaded)
        *loaded = l.count;
    ckh_fs_listing_free(&l);
    return rc;
}

static int ds_list(struct ckh_backend *b, const char *node, int64_t **epochs, size_t *count)
{
    struct ds *d = (struct ds *)b;
    struct ckh_listing l;
    size_t nl = strlen(node), n = 0;
    int rc = ckh_fs_listdir(d->fs, d->prefix, &l);
    *epochs = NULL;
    *count = 0;
    if (rc)
        return rc;
    int64_t *v = ckh_malloc(NULL, (l.count + 1) * sizeof(*v));
    for (size_t i = 0; v && i < l.count; i++)
        if (!strncmp(l.entries[i].name, node, nl) && l.entries[i].name[nl] == '.')
            v[n++] = atoll(l.entries[i].name + nl + 1); /* listing is sorted; epochs < 10 here */
    ckh_fs_listing_free(&l);
    if (!v)
        return CKH_ENOMEM;
    *epochs = v;
    *count = n;
    return 0;
}

static const struct ckh_backend_ops ds_ops = {
    .version = 1,
    .name = "dirsave",
    .open = ds_open,
    .close = ds_close,
    .save = ds_save,
    .load = ds_load,
    .list_epochs = ds_list,
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bench(const char *name, const struct ckh_backend_ops *ops, uint32_t nblobs,
                  uint64_t bytes, unsigned scen)
{
    struct ckh_explore_config c;
    struct ckh_explore_result r;
    char msg[256];
    memset(&c, 0, sizeof(c));
    c.ops = ops;
    c.sector_bytes = 512;
    c.nblobs = nblobs;
    c.blob_bytes = bytes;
    c.seed = 3;
    c.scenarios = scen;
    double t0 = now_s();
    if (ckh_explore_run(&c, &r, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "%s: %s\n", name, msg);
        return;
    }
    double dt = now_s() - t0;
    printf("explore_%s_trace_ops %llu ops\n", name, (unsigned long long)r.stats.trace_ops);
    printf("explore_%s_states %llu states\n", name, (unsigned long long)r.stats.states);
    printf("explore_%s_states_checked %llu states\n", name,
           (unsigned long long)r.stats.states_checked);
    printf("explore_%s_time %.3f s\n", name, dt);
    printf("explore_%s_states_per_s %.0f states/s\n", name, (double)r.stats.states / dt);
    printf("explore_%s_checked_per_s %.0f states/s\n", name, (double)r.stats.states_checked / dt);
    printf("explore_%s_findings %zu findings\n", name, r.nvulns);
    ckh_explore_result_free(&r);
}

int main(void)
{
    bench("dirsave_64files", &ds_ops, 63, 1000, CKH_EXPLORE_NEW_EPOCH);
    bench("minidb_64blobs", &ckh_minidb_ops, 64, 1000, CKH_EXPLORE_NEW_EPOCH);
    bench("minidb_all_scenarios", &ckh_minidb_ops, 4, 3000, CKH_EXPLORE_ALL);
    struct ckh_plugin *p = NULL;
    if (ckh_plugin_load(CKH_BACKENDS_DIR "/libbk_good.so", &p, NULL, 0) == 0) {
        bench("bk_good_64blobs", ckh_plugin_ops(p), 64, 1000, CKH_EXPLORE_NEW_EPOCH);
        ckh_plugin_unload(p);
    }
    return 0;
}
