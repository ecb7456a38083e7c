/* Crash-explorer throughput: crash states explored and checked per second
 * and the time to explore every crash state of one save (harness/search/explore.c).
 * Prints "name value unit" lines; asserts nothing about time.
 *
 * Workloads: "64file_save", the headline: a save of 64 blobs packed in 24
 * files of a per-epoch folder, 100 operations (explore_64file_save_ms,
 * explore_states_per_sec); the same with one file per blob (64 files, 260
 * operations); minidb saving 64 blobs; and, when the test plugins are
 * built, the correct test backend. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/err.h"
#include "search/explore.h"
#include "exec/plugin.h"

#ifndef CKH_BACKENDS_DIR
#define CKH_BACKENDS_DIR "backends"
#endif


/* ---- "dirsave": blobs in files of a per-epoch directory ----
 * save: mkdir <prefix>/.<node>.<epoch>.d; per file open+pwrite+fsync+close
 * of "f<i>" (blob j goes to file j % ds_files; one file per blob when
 * ds_files is 0); fsync_dir of the folder, rename it to
 * <prefix>/<node>.<epoch>, fsync_dir of the prefix: 4 ops per file + 4.
 * A file is a run of records: u32 name_len, name, u32 dtype, u32 ndim,
 * u64 shape[ndim], u64 size, the bytes. */
struct ds {
    struct ckh_backend base; /* must be first */
    struct ckh_fs *fs;       /* borrowed */
    char prefix[256];        /* checkpoint directory */
};

/* Files per checkpoint folder (0: one per blob). */
static size_t ds_files;

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

/* Appends n bytes to a growing buffer; false when out of memory. */
static bool put(unsigned char **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*cap + n) * 2;
        unsigned char *nb = realloc(*buf, c);
        if (!nb)
            return false;
        *buf = nb;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return true;
}

/* The records of the blobs of ws that belong to file fi of nf. */
static int ds_file_bytes(const struct ckh_ws *ws, size_t fi, size_t nf, unsigned char **out,
                         size_t *len)
{
    size_t cap = 0;
    bool ok = true;
    *out = NULL;
    *len = 0;
    for (size_t j = fi; ok && j < ckh_ws_count(ws); j += nf) {
        const struct ckh_blob *bl = ckh_ws_at(ws, j);
        uint32_t nl = (uint32_t)strlen(bl->name), dt = (uint32_t)bl->dtype;
        ok = put(out, len, &cap, &nl, 4) && put(out, len, &cap, bl->name, nl) &&
             put(out, len, &cap, &dt, 4) && put(out, len, &cap, &bl->ndim, 4) &&
             put(out, len, &cap, bl->shape, 8 * bl->ndim) &&
             put(out, len, &cap, &bl->size_bytes, 8) &&
             put(out, len, &cap, bl->data, bl->size_bytes);
    }
    return ok ? 0 : CKH_ENOMEM;
}

static int ds_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                   const char *const *names, size_t count)
{
    struct ds *d = (struct ds *)b;
    char dir[512], fin[512], path[600];
    size_t nb = ckh_ws_count(ws), nf = ds_files && ds_files < nb ? ds_files : nb;
    (void)names;
    (void)count;
    snprintf(dir, sizeof(dir), "%s/.%s.%lld.d", d->prefix, node, (long long)epoch);
    snprintf(fin, sizeof(fin), "%s/%s.%lld", d->prefix, node, (long long)epoch);
    int rc = ckh_fs_mkdir(d->fs, dir);
    for (size_t i = 0; rc == 0 && i < nf; i++) {
        struct ckh_file *f;
        unsigned char *buf;
        size_t len;
        snprintf(path, sizeof(path), "%s/f%03zu", dir, i);
        if ((rc = ds_file_bytes(ws, i, nf, &buf, &len)) != 0)
            break;
        if ((rc = ckh_fs_open(d->fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &f)) != 0) {
            free(buf);
            break;
        }
        int64_t w = ckh_file_pwrite(f, buf, len, 0);
        rc = w == (int64_t)len ? 0 : w < 0 ? (int)w : CKH_EINTERNAL;
        free(buf);
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

/* Parses the records of one file into ws. */
static int ds_parse(const unsigned char *p, size_t n, struct ckh_ws *ws)
{
    size_t at = 0;
    while (at < n) {
        uint32_t nl, dt, nd;
        uint64_t shape[CKH_BLOB_MAX_DIMS], size;
        char name[256];
        if (n - at < 4)
            return CKH_ECORRUPT;
        memcpy(&nl, p + at, 4);
        at += 4;
        if (nl >= sizeof(name) || n - at < (size_t)nl + 8)
            return CKH_ECORRUPT;
        memcpy(name, p + at, nl);
        name[nl] = '\0';
        at += nl;
        memcpy(&dt, p + at, 4);
        memcpy(&nd, p + at + 4, 4);
        at += 8;
        if (nd > CKH_BLOB_MAX_DIMS || n - at < 8 * (size_t)nd + 8)
            return CKH_ECORRUPT;
        memcpy(shape, p + at, 8 * nd);
        at += 8 * nd;
        memcpy(&size, p + at, 8);
        at += 8;
        if (n - at < size)
            return CKH_ECORRUPT;
        int rc = ckh_ws_set(ws, name, (enum ckh_dtype)dt, nd, shape, p + at);
        if (rc)
            return rc;
        at += size;
    }
    return 0;
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
        if (!buf) {
            rc = CKH_ENOMEM;
            break;
        }
        if ((rc = ckh_fs_open(d->fs, path, CKH_O_RDONLY, &f)) == 0) {
            rc = ckh_file_pread_all(f, buf, st.size_bytes, 0);
            ckh_file_close(f);
        }
        if (rc == 0)
            rc = ds_parse(buf, st.size_bytes, ws);
        free(buf);
    }
    if (rc == 0 && loaded)
        *loaded = ckh_ws_count(ws);
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

/* Explores one workload `reps` times (best time kept) and prints its
 * figures; *states_per_s receives the rate of the best run. */
static void bench(const char *name, const struct ckh_backend_ops *ops, uint32_t nblobs,
                  uint64_t bytes, unsigned scen, int reps, double *states_per_s)
{
    struct ckh_explore_config c;
    struct ckh_explore_result r;
    char msg[256];
    double best = 0;
    memset(&c, 0, sizeof(c));
    c.ops = ops;
    c.sector_bytes = 512;
    c.nblobs = nblobs;
    c.blob_bytes = bytes;
    c.seed = 3;
    c.scenarios = scen;
    for (int i = 0; i < reps; i++) {
        double t0 = now_s();
        if (ckh_explore_run(&c, &r, msg, sizeof(msg)) != 0) {
            fprintf(stderr, "%s: %s\n", name, msg);
            return;
        }
        double dt = now_s() - t0;
        if (i == 0 || dt < best)
            best = dt;
        if (i + 1 < reps)
            ckh_explore_result_free(&r);
    }
    printf("explore_%s_trace_ops %llu ops\n", name, (unsigned long long)r.stats.trace_ops);
    printf("explore_%s_states %llu states\n", name, (unsigned long long)r.stats.states);
    printf("explore_%s_states_checked %llu states\n", name,
           (unsigned long long)r.stats.states_checked);
    printf("explore_%s_time %.3f s\n", name, best);
    printf("explore_%s_states_per_s %.0f states/s\n", name, (double)r.stats.states / best);
    printf("explore_%s_checked_per_s %.0f states/s\n", name, (double)r.stats.states_checked / best);
    printf("explore_%s_findings %zu findings\n", name, r.nvulns);
    if (states_per_s)
        *states_per_s = (double)r.stats.states / best;
    if (strcmp(name, "64file_save") == 0) {
        /* The headline figures: one save of 64 blobs in about 100 ops. */
        printf("explore_64file_save_ms %.1f ms\n", best * 1e3);
        printf("explore_64file_save_ops %llu ops\n", (unsigned long long)r.stats.trace_ops);
        printf("explore_64file_save_state_count %llu states\n",
               (unsigned long long)r.stats.states);
    }
    ckh_explore_result_free(&r);
}

int main(void)
{
    double rate = 0;
    /* 63 parameter blobs + "step" = 64 blobs, 1000 bytes each. */
    ds_files = 24; /* 64 blobs in 24 files: 24 * 4 + 4 = 100 ops */
    bench("64file_save", &ds_ops, 63, 1000, CKH_EXPLORE_NEW_EPOCH, 3, &rate);
    printf("explore_states_per_sec %.0f states/s\n", rate);
    ds_files = 0; /* one file per blob: 64 files, 260 ops */
    bench("dirsave_64files", &ds_ops, 63, 1000, CKH_EXPLORE_NEW_EPOCH, 1, NULL);
    bench("minidb_64blobs", &ckh_minidb_ops, 64, 1000, CKH_EXPLORE_NEW_EPOCH, 1, NULL);
    bench("minidb_all_scenarios", &ckh_minidb_ops, 4, 3000, CKH_EXPLORE_ALL, 1, NULL);
    struct ckh_plugin *p = NULL;
    if (ckh_plugin_load(CKH_BACKENDS_DIR "/libbk_good.so", &p, NULL, 0) == 0) {
        bench("bk_good_64blobs", ckh_plugin_ops(p), 64, 1000, CKH_EXPLORE_NEW_EPOCH, 1, NULL);
        ckh_plugin_unload(p);
    }
    return 0;
}
