/* An out-of-tree checkpoint backend plugin for ckh: the template to start
 * from. It builds against the installed headers only
 *     cc -std=c11 -fPIC -shared $(pkg-config --cflags ckh) -o libexample_backend.so example_backend.c
 * (or find_package(ckh) + ckh_add_backend, see CMakeLists.txt here) and is
 * checked with `ckh validate-backend ./libexample_backend.so`.
 *
 * Format of <prefix>/<node>.<epoch>: "BKV1", u32 nblobs, then per blob
 * u32 name_len, name, u32 dtype, u32 ndim, u64 shape[ndim], u64 size, the
 * bytes (described blobs are written out and load back as stored blobs);
 * last a u32 CRC-32C of every byte before it. Load verifies the CRC and
 * every length, and finds every name asked for (unless
 * CKH_LOAD_ALLOW_MISSING), before touching the workspace; then it moves in
 * the blobs asked for (all of them for names NULL).
 *
 * Crash safety: write <prefix>/.<node>.<epoch>.tmp (unique per node and
 * epoch), fsync it, close, rename it over <prefix>/<node>.<epoch>, fsync
 * the directory. Names starting with '.' are never listed as epochs.
 * All I/O goes through cfg->fs, all memory through cfg->alloc (blobs
 * handed to a workspace come from the workspace's allocator).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/plugin.h"

/* Error texts are bounded; a long path is cut short on purpose. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

struct ex {
    struct ckh_backend base; /* must be first */
    struct ckh_fs *fs;       /* borrowed */
    struct ckh_alloc *alloc; /* config allocator */
    char prefix[512];        /* checkpoint directory */
};

struct ex_buf {
    unsigned char *p; /* bytes (system malloc: scratch only) */
    size_t n;         /* used */
    size_t cap;       /* allocated */
};

static int ex_put(struct ex_buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = (b->cap + n) * 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            return CKH_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    return 0;
}

static int ex_put32(struct ex_buf *b, uint32_t v) { return ex_put(b, &v, 4); }
static int ex_put64(struct ex_buf *b, uint64_t v) { return ex_put(b, &v, 8); }

static int ex_fail(struct ex *k, int rc, const char *what, const char *path)
{
    snprintf(k->base.errmsg, sizeof(k->base.errmsg), "%s %s: %s", what, path, ckh_strerror(rc));
    return rc;
}

static int ex_open(const struct ckh_backend_config *cfg, struct ckh_backend **out);
static void ex_close(struct ckh_backend *b);

static void ex_path(struct ex *k, char *buf, size_t n, const char *node, int64_t epoch,
                    const char *suffix)
{
    snprintf(buf, n, "%s/%s.%" PRId64 "%s", k->prefix, node, epoch, suffix);
}

static int ex_encode(const struct ckh_ws *ws, struct ex_buf *b)
{
    int rc = ex_put(b, "BKV1", 4);
    rc = rc ? rc : ex_put32(b, (uint32_t)ckh_ws_count(ws));
    for (size_t i = 0; rc == 0 && i < ckh_ws_count(ws); i++) {
        const struct ckh_blob *bl = ckh_ws_at(ws, i);
        uint32_t nl = (uint32_t)strlen(bl->name);
        rc = ex_put32(b, nl);
        rc = rc ? rc : ex_put(b, bl->name, nl);
        rc = rc ? rc : ex_put32(b, (uint32_t)bl->dtype);
        rc = rc ? rc : ex_put32(b, bl->ndim);
        for (uint32_t d = 0; rc == 0 && d < bl->ndim; d++)
            rc = ex_put64(b, bl->shape[d]);
        rc = rc ? rc : ex_put64(b, bl->size_bytes);
        if (rc == 0 && bl->size_bytes) {
            if (bl->described) {
                unsigned char *tmp = malloc(bl->size_bytes);
                if (!tmp)
                    return CKH_ENOMEM;
                ckh_gen_fill(&bl->gen, 0, tmp, bl->size_bytes);
                rc = ex_put(b, tmp, bl->size_bytes);
                free(tmp);
            } else {
                rc = ex_put(b, bl->data, bl->size_bytes);
            }
        }
    }
    return rc ? rc : ex_put32(b, ckh_crc32c(0, b->p, b->n));
}

/* Writes the whole buffer to path (flags), fsyncing when asked. */
static int ex_write_file(struct ex *k, const char *path, const struct ex_buf *b, bool fsync)
{
    struct ckh_file *f;
    int rc = ckh_fs_open(k->fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
    if (rc)
        return ex_fail(k, rc, "open", path);
    uint64_t off = 0;
    while (rc == 0 && off < b->n) {
        int64_t w = ckh_file_pwrite(f, b->p + off, b->n - off, off);
        if (w <= 0)
            rc = w < 0 ? (int)w : CKH_EINTERNAL;
        else
            off += (uint64_t)w;
    }
    if (rc == 0 && fsync)
        rc = ckh_file_fsync(f);
    int crc = ckh_file_close(f);
    rc = rc ? rc : crc;
    return rc ? ex_fail(k, rc, "write", path) : 0;
}

static int ex_list_raw(struct ex *k, const char *node, int64_t **epochs, size_t *count)
{
    struct ckh_listing l;
    size_t nl = strlen(node);
    int rc = ckh_fs_listdir(k->fs, k->prefix, &l);
    *epochs = NULL;
    *count = 0;
    if (rc)
        return ex_fail(k, rc, "listdir", k->prefix);
    int64_t *v = ckh_malloc(k->alloc, (l.count ? l.count : 1) * sizeof(*v));
    if (!v) {
        ckh_fs_listing_free(&l);
        return CKH_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < l.count; i++) {
        const char *s = l.entries[i].name;
        if (strncmp(s, node, nl) != 0 || s[nl] != '.' || !s[nl + 1])
            continue;
        char *end;
        long long e = strtoll(s + nl + 1, &end, 10);
        if (*end || e < 0)
            continue;
        size_t j = n++;
        while (j > 0 && v[j - 1] > e) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = e;
    }
    ckh_fs_listing_free(&l);
    if (n == 0) {
        ckh_free(k->alloc, v);
        v = NULL;
    }
    *epochs = v;
    *count = n;
    return 0;
}

static int ex_list_epochs(struct ckh_backend *b, const char *node, int64_t **epochs, size_t *count)
{
    struct ex *k = (struct ex *)b;
    return ex_list_raw(k, node, epochs, count);
}

static int ex_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                   const char *const *names, size_t count)
{
    struct ex *k = (struct ex *)b;
    struct ex_buf buf = {0};
    char final[600], tmp[600];
    int rc;
    (void)names;
    (void)count;
    if ((rc = ex_encode(ws, &buf)) != 0)
        goto out;
    ex_path(k, final, sizeof(final), node, epoch, "");
    snprintf(tmp, sizeof(tmp), "%s/.%s.%" PRId64 ".tmp", k->prefix, node, epoch);
    if ((rc = ex_write_file(k, tmp, &buf, true)) != 0)
        goto out_unlink;
    if ((rc = ckh_fs_rename(k->fs, tmp, final)) != 0) {
        ex_fail(k, rc, "rename", tmp);
        goto out_unlink;
    }
    if ((rc = ckh_fs_fsync_dir(k->fs, k->prefix)) != 0)
        ex_fail(k, rc, "fsync_dir", k->prefix);
    goto out;
out_unlink:
    ckh_fs_unlink(k->fs, tmp);
out:
    free(buf.p);
    return rc;
}

static uint32_t ex_get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t ex_get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Whether blob name is asked for (names NULL: every blob). */
static bool ex_wanted(const char *name, const char *const *names, size_t count)
{
    for (size_t i = 0; names && i < count; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return !names;
}

static int ex_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                   const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    struct ex *k = (struct ex *)b;
    struct ckh_stat st;
    struct ckh_file *f;
    char path[600];
    unsigned char *p = NULL;
    struct ckh_blob *bl = NULL;
    size_t nb = 0;
    uint32_t cnt = 0;
    int rc;
    ex_path(k, path, sizeof(path), node, epoch, "");
    if ((rc = ckh_fs_stat(k->fs, path, &st)) != 0)
        return ex_fail(k, rc == -ENOENT ? CKH_ENOTFOUND : rc, "stat", path);
    if (st.size_bytes < 12 || st.size_bytes > (1u << 30))
        return ex_fail(k, CKH_ETRUNCATED, "load", path);
    size_t n = (size_t)st.size_bytes;
    if (!(p = malloc(n)))
        return CKH_ENOMEM;
    if ((rc = ckh_fs_open(k->fs, path, CKH_O_RDONLY, &f)) == 0) {
        rc = ckh_file_pread_all(f, p, n, 0);
        ckh_file_close(f);
    }
    if (rc)
        goto out;
    if (memcmp(p, "BKV1", 4) != 0 || ckh_crc32c(0, p, n - 4) != ex_get32(p + n - 4)) {
        rc = ex_fail(k, CKH_ECORRUPT, "verify", path);
        goto out;
    }
    cnt = ex_get32(p + 4);
    size_t at = 8, end = n - 4;
    struct ckh_alloc *wa = ckh_ws_alloc(ws);
    if (cnt > end || !(bl = calloc(cnt ? cnt : 1, sizeof(*bl)))) {
        rc = cnt > end ? CKH_ECORRUPT : CKH_ENOMEM;
        goto out;
    }
    for (nb = 0; nb < cnt; nb++) {
        struct ckh_blob *x = &bl[nb];
        if (at + 4 > end) { rc = CKH_ECORRUPT; goto out; }
        uint32_t nl = ex_get32(p + at);
        at += 4;
        if (nl == 0 || nl > end - at || end - at - nl < 8) { rc = CKH_ECORRUPT; goto out; }
        if (!(x->name = ckh_malloc(wa, nl + 1))) { rc = CKH_ENOMEM; goto out; }
        memcpy(x->name, p + at, nl);
        x->name[nl] = 0;
        at += nl;
        x->dtype = (enum ckh_dtype)ex_get32(p + at);
        x->ndim = ex_get32(p + at + 4);
        at += 8;
        if (x->ndim > CKH_BLOB_MAX_DIMS || (end - at) / 8 < x->ndim + 1) { rc = CKH_ECORRUPT; goto out; }
        for (uint32_t d = 0; d < x->ndim; d++, at += 8)
            x->shape[d] = ex_get64(p + at);
        x->size_bytes = ex_get64(p + at);
        at += 8;
        if (x->size_bytes > end - at) { rc = CKH_ECORRUPT; goto out; }
        if (x->size_bytes) {
            if (!(x->data = ckh_malloc(wa, x->size_bytes))) { rc = CKH_ENOMEM; goto out; }
            memcpy(x->data, p + at, x->size_bytes);
            at += x->size_bytes;
        }
    }
    if (at != end) {
        rc = CKH_ECORRUPT;
        goto out;
    }
    /* All or nothing: every name asked for is found before ws changes. */
    for (size_t i = 0; names && i < count && !(flags & CKH_LOAD_ALLOW_MISSING); i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = strcmp(bl[j].name, names[i]) == 0;
        if (!found) {
            snprintf(k->base.errmsg, sizeof(k->base.errmsg), "%s: no blob %s", path, names[i]);
            rc = CKH_ENOTFOUND;
            goto out;
        }
    }
    size_t done = 0;
    for (size_t i = 0; i < nb && rc == 0; i++)
        if (ex_wanted(bl[i].name, names, count) && (rc = ckh_ws_adopt(ws, &bl[i])) == 0)
            done++;
    if (rc == 0 && loaded)
        *loaded = done;
out:
    for (size_t i = 0; bl && i < cnt; i++)
        ckh_blob_release(ckh_ws_alloc(ws), &bl[i]);
    free(bl);
    free(p);
    if (rc && !k->base.errmsg[0])
        ex_fail(k, rc, "load", path);
    return rc;
}

static int ex_exists(struct ckh_backend *b, const char *node, int64_t epoch, bool *out)
{
    struct ex *k = (struct ex *)b;
    char path[600];
    ex_path(k, path, sizeof(path), node, epoch, "");
    *out = ckh_fs_exists(k->fs, path);
    return 0;
}

static int ex_remove(struct ckh_backend *b, const char *node, int64_t epoch)
{
    struct ex *k = (struct ex *)b;
    char path[600];
    ex_path(k, path, sizeof(path), node, epoch, "");
    int rc = ckh_fs_unlink(k->fs, path);
    if (rc)
        return ex_fail(k, rc == -ENOENT ? CKH_ENOTFOUND : rc, "unlink", path);
    return ckh_fs_fsync_dir(k->fs, k->prefix);
}

static int ex_db_name(struct ckh_backend *b, const char *node, int64_t epoch, char *buf, size_t n)
{
    struct ex *k = (struct ex *)b;
    ex_path(k, buf, n, node, epoch, "");
    return 0;
}

static const struct ckh_backend_ops ex_ops = {
    .version = 1,
    .name = "example",
    .open = ex_open,
    .close = ex_close,
    .save = ex_save,
    .load = ex_load,
    .exists = ex_exists,
    .list_epochs = ex_list_epochs,
    .remove = ex_remove,
    .db_name = ex_db_name,
};

static int ex_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    if (!cfg || !cfg->fs || !cfg->prefix || !out)
        return CKH_EINVAL;
    struct ex *k = ckh_calloc(cfg->alloc, 1, sizeof(*k));
    if (!k)
        return CKH_ENOMEM;
    k->base.ops = &ex_ops;
    k->fs = cfg->fs;
    k->alloc = cfg->alloc;
    snprintf(k->prefix, sizeof(k->prefix), "%s", cfg->prefix);
    *out = &k->base;
    return 0;
}

static void ex_close(struct ckh_backend *b)
{
    struct ex *k = (struct ex *)b;
    if (k)
        ckh_free(k->alloc, k);
}

CKH_BACKEND_PLUGIN(ex_ops)
