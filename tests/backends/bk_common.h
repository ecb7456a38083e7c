/* One small checkpoint backend with switchable defects, for the negative
 * controls of the crash explorer (tests/test_explore.c). Each
 * tests/backends/bk_<defect>.c defines BK_NAME and BK_DEFECTS and includes
 * this file; CMake builds each as a plugin (MODULE library).
 *
 * Format of <prefix>/<node>.<epoch>: "BKV1", u32 nblobs, then per blob
 * u32 name_len, name, u32 dtype, u32 ndim, u64 shape[ndim], u64 size, the
 * bytes (described blobs are written out and load back as stored blobs);
 * last a u32 CRC-32C of every byte before it. Load verifies the CRC and
 * every length before touching the workspace.
 *
 * Correct protocol (BK_DEFECTS 0): write <prefix>/.<node>.<epoch>.tmp,
 * fsync, close, rename over <prefix>/<node>.<epoch>, fsync the directory.
 * Defects (each breaks one step):
 *   BK_IN_PLACE        writes <prefix>/<node>.<epoch> directly (O_TRUNC)
 *   BK_NO_FILE_FSYNC   renames the temporary without fsyncing it
 *   BK_NO_DIR_FSYNC    never fsyncs the directory
 *   BK_POINTER_FIRST   data in <node>.<epoch>.data, a pointer file
 *                      <node>.latest (the only listed epoch) committed
 *                      before the data is fsynced
 *   BK_RETENTION_FIRST deletes the node's other epochs before committing
 *   BK_FIXED_TMP       temporary <prefix>/ckpt.tmp shared by every node
 *   BK_SEGV / BK_HANG  save raises SIGSEGV / never returns
 *   BK_LEAK            open allocates a block that close never frees
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/plugin.h"

/* Error texts are bounded; a long path is cut short on purpose. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

enum {
    BK_IN_PLACE = 0x1,
    BK_NO_FILE_FSYNC = 0x2,
    BK_NO_DIR_FSYNC = 0x4,
    BK_POINTER_FIRST = 0x8,
    BK_RETENTION_FIRST = 0x10,
    BK_FIXED_TMP = 0x20,
    BK_SEGV = 0x40,
    BK_HANG = 0x80,
    BK_LEAK = 0x100,
};

struct bk {
    struct ckh_backend base; /* must be first */
    struct ckh_fs *fs;       /* borrowed */
    struct ckh_alloc *alloc; /* config allocator */
    char prefix[512];        /* checkpoint directory */
    void *leak;              /* BK_LEAK: never freed */
};

struct bk_buf {
    unsigned char *p; /* bytes (system malloc: scratch only) */
    size_t n;         /* used */
    size_t cap;       /* allocated */
};

static int bk_put(struct bk_buf *b, const void *d, size_t n)
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

static int bk_put32(struct bk_buf *b, uint32_t v) { return bk_put(b, &v, 4); }
static int bk_put64(struct bk_buf *b, uint64_t v) { return bk_put(b, &v, 8); }

static int bk_fail(struct bk *k, int rc, const char *what, const char *path)
{
    snprintf(k->base.errmsg, sizeof(k->base.errmsg), "%s %s: %s", what, path, ckh_strerror(rc));
    return rc;
}

static int bk_open(const struct ckh_backend_config *cfg, struct ckh_backend **out);
static void bk_close(struct ckh_backend *b);

static void bk_path(struct bk *k, char *buf, size_t n, const char *node, int64_t epoch,
                    const char *suffix)
{
    snprintf(buf, n, "%s/%s.%" PRId64 "%s", k->prefix, node, epoch, suffix);
}

static int bk_encode(const struct ckh_ws *ws, struct bk_buf *b)
{
    int rc = bk_put(b, "BKV1", 4);
    rc = rc ? rc : bk_put32(b, (uint32_t)ckh_ws_count(ws));
    for (size_t i = 0; rc == 0 && i < ckh_ws_count(ws); i++) {
        const struct ckh_blob *bl = ckh_ws_at(ws, i);
        uint32_t nl = (uint32_t)strlen(bl->name);
        rc = bk_put32(b, nl);
        rc = rc ? rc : bk_put(b, bl->name, nl);
        rc = rc ? rc : bk_put32(b, (uint32_t)bl->dtype);
        rc = rc ? rc : bk_put32(b, bl->ndim);
        for (uint32_t d = 0; rc == 0 && d < bl->ndim; d++)
            rc = bk_put64(b, bl->shape[d]);
        rc = rc ? rc : bk_put64(b, bl->size_bytes);
        if (rc == 0 && bl->size_bytes) {
            if (bl->described) {
                unsigned char *tmp = malloc(bl->size_bytes);
                if (!tmp)
                    return CKH_ENOMEM;
                ckh_gen_fill(&bl->gen, 0, tmp, bl->size_bytes);
                rc = bk_put(b, tmp, bl->size_bytes);
                free(tmp);
            } else {
                rc = bk_put(b, bl->data, bl->size_bytes);
            }
        }
    }
    return rc ? rc : bk_put32(b, ckh_crc32c(0, b->p, b->n));
}

/* Writes the whole buffer to path (flags), fsyncing when asked. */
static int bk_write_file(struct bk *k, const char *path, const struct bk_buf *b, bool fsync)
{
    struct ckh_file *f;
    int rc = ckh_fs_open(k->fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
    if (rc)
        return bk_fail(k, rc, "open", path);
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
    return rc ? bk_fail(k, rc, "write", path) : 0;
}

static int bk_list_raw(struct bk *k, const char *node, int64_t **epochs, size_t *count)
{
    struct ckh_listing l;
    size_t nl = strlen(node);
    int rc = ckh_fs_listdir(k->fs, k->prefix, &l);
    *epochs = NULL;
    *count = 0;
    if (rc)
        return bk_fail(k, rc, "listdir", k->prefix);
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

static int bk_list_epochs(struct ckh_backend *b, const char *node, int64_t **epochs, size_t *count)
{
    struct bk *k = (struct bk *)b;
    if (BK_DEFECTS & BK_POINTER_FIRST) {
        char p[600], txt[32] = "";
        struct ckh_file *f;
        *epochs = NULL;
        *count = 0;
        snprintf(p, sizeof(p), "%s/%s.latest", k->prefix, node);
        int rc = ckh_fs_open(k->fs, p, CKH_O_RDONLY, &f);
        if (rc == -ENOENT)
            return 0;
        if (rc)
            return bk_fail(k, rc, "open", p);
        int64_t r = ckh_file_pread(f, txt, sizeof(txt) - 1, 0);
        ckh_file_close(f);
        if (r <= 0)
            return 0;
        int64_t *v = ckh_malloc(k->alloc, sizeof(*v));
        if (!v)
            return CKH_ENOMEM;
        v[0] = strtoll(txt, NULL, 10);
        *epochs = v;
        *count = 1;
        return 0;
    }
    return bk_list_raw(k, node, epochs, count);
}

static int bk_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                   const char *const *names, size_t count)
{
    struct bk *k = (struct bk *)b;
    struct bk_buf buf = {0};
    char final[600], tmp[600];
    int rc;
    (void)names;
    (void)count;
    if (BK_DEFECTS & BK_SEGV)
        raise(SIGSEGV);
    if (BK_DEFECTS & BK_HANG)
        for (volatile int spin = 1; spin;)
            ;
    if ((rc = bk_encode(ws, &buf)) != 0)
        goto out;
    bk_path(k, final, sizeof(final), node, epoch, "");
    if (BK_DEFECTS & BK_RETENTION_FIRST) {
        int64_t *ep;
        size_t n;
        if ((rc = bk_list_raw(k, node, &ep, &n)) != 0)
            goto out;
        for (size_t i = 0; i < n; i++) {
            if (ep[i] == epoch)
                continue;
            bk_path(k, tmp, sizeof(tmp), node, ep[i], "");
            ckh_fs_unlink(k->fs, tmp);
        }
        ckh_free(k->alloc, ep);
        ckh_fs_fsync_dir(k->fs, k->prefix);
    }
    if (BK_DEFECTS & BK_IN_PLACE) {
        if ((rc = bk_write_file(k, final, &buf, true)) == 0)
            rc = ckh_fs_fsync_dir(k->fs, k->prefix);
        goto out;
    }
    if (BK_DEFECTS & BK_POINTER_FIRST) {
        char ptr[600], txt[32];
        struct bk_buf pb = {0};
        struct ckh_file *f;
        bk_path(k, final, sizeof(final), node, epoch, ".data");
        if ((rc = bk_write_file(k, final, &buf, false)) != 0)
            goto out;
        snprintf(txt, sizeof(txt), "%" PRId64 "\n", epoch);
        if ((rc = bk_put(&pb, txt, strlen(txt))) != 0)
            goto out;
        snprintf(tmp, sizeof(tmp), "%s/.%s.latest.tmp", k->prefix, node);
        snprintf(ptr, sizeof(ptr), "%s/%s.latest", k->prefix, node);
        rc = bk_write_file(k, tmp, &pb, true);
        free(pb.p);
        if (rc == 0 && (rc = ckh_fs_rename(k->fs, tmp, ptr)) == 0)
            rc = ckh_fs_fsync_dir(k->fs, k->prefix);
        if (rc == 0 && (rc = ckh_fs_open(k->fs, final, CKH_O_WRONLY, &f)) == 0) {
            rc = ckh_file_fsync(f);
            int crc = ckh_file_close(f);
            rc = rc ? rc : crc;
        }
        goto out;
    }
    if (BK_DEFECTS & BK_FIXED_TMP)
        snprintf(tmp, sizeof(tmp), "%s/ckpt.tmp", k->prefix);
    else
        snprintf(tmp, sizeof(tmp), "%s/.%s.%" PRId64 ".tmp", k->prefix, node, epoch);
    if ((rc = bk_write_file(k, tmp, &buf, !(BK_DEFECTS & BK_NO_FILE_FSYNC))) != 0)
        goto out_unlink;
    if ((rc = ckh_fs_rename(k->fs, tmp, final)) != 0) {
        bk_fail(k, rc, "rename", tmp);
        goto out_unlink;
    }
    if (!(BK_DEFECTS & BK_NO_DIR_FSYNC) && (rc = ckh_fs_fsync_dir(k->fs, k->prefix)) != 0)
        bk_fail(k, rc, "fsync_dir", k->prefix);
    goto out;
out_unlink:
    ckh_fs_unlink(k->fs, tmp);
out:
    free(buf.p);
    return rc;
}

static uint32_t bk_get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t bk_get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int bk_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                   const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    struct bk *k = (struct bk *)b;
    struct ckh_stat st;
    struct ckh_file *f;
    char path[600];
    unsigned char *p = NULL;
    struct ckh_blob *bl = NULL;
    size_t nb = 0;
    uint32_t cnt = 0;
    int rc;
    (void)names;
    (void)count;
    (void)flags;
    bk_path(k, path, sizeof(path), node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    if ((rc = ckh_fs_stat(k->fs, path, &st)) != 0)
        return bk_fail(k, rc == -ENOENT ? CKH_ENOTFOUND : rc, "stat", path);
    if (st.size_bytes < 12 || st.size_bytes > (1u << 30))
        return bk_fail(k, CKH_ETRUNCATED, "load", path);
    size_t n = (size_t)st.size_bytes;
    if (!(p = malloc(n)))
        return CKH_ENOMEM;
    if ((rc = ckh_fs_open(k->fs, path, CKH_O_RDONLY, &f)) == 0) {
        rc = ckh_file_pread_all(f, p, n, 0);
        ckh_file_close(f);
    }
    if (rc)
        goto out;
    if (memcmp(p, "BKV1", 4) != 0 || ckh_crc32c(0, p, n - 4) != bk_get32(p + n - 4)) {
        rc = bk_fail(k, CKH_ECORRUPT, "verify", path);
        goto out;
    }
    cnt = bk_get32(p + 4);
    size_t at = 8, end = n - 4;
    struct ckh_alloc *wa = ckh_ws_alloc(ws);
    if (cnt > end || !(bl = calloc(cnt ? cnt : 1, sizeof(*bl)))) {
        rc = cnt > end ? CKH_ECORRUPT : CKH_ENOMEM;
        goto out;
    }
    for (nb = 0; nb < cnt; nb++) {
        struct ckh_blob *x = &bl[nb];
        if (at + 4 > end) { rc = CKH_ECORRUPT; goto out; }
        uint32_t nl = bk_get32(p + at);
        at += 4;
        if (nl == 0 || nl > end - at || end - at - nl < 8) { rc = CKH_ECORRUPT; goto out; }
        if (!(x->name = ckh_malloc(wa, nl + 1))) { rc = CKH_ENOMEM; goto out; }
        memcpy(x->name, p + at, nl);
        x->name[nl] = 0;
        at += nl;
        x->dtype = (enum ckh_dtype)bk_get32(p + at);
        x->ndim = bk_get32(p + at + 4);
        at += 8;
        if (x->ndim > CKH_BLOB_MAX_DIMS || (end - at) / 8 < x->ndim + 1) { rc = CKH_ECORRUPT; goto out; }
        for (uint32_t d = 0; d < x->ndim; d++, at += 8)
            x->shape[d] = bk_get64(p + at);
        x->size_bytes = bk_get64(p + at);
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
    for (size_t i = 0; i < nb && rc == 0; i++)
        rc = ckh_ws_adopt(ws, &bl[i]);
    if (rc == 0 && loaded)
        *loaded = nb;
out:
    for (size_t i = 0; bl && i < cnt; i++)
        ckh_blob_release(ckh_ws_alloc(ws), &bl[i]);
    free(bl);
    free(p);
    if (rc && !k->base.errmsg[0])
        bk_fail(k, rc, "load", path);
    return rc;
}

static int bk_exists(struct ckh_backend *b, const char *node, int64_t epoch, bool *out)
{
    struct bk *k = (struct bk *)b;
    char path[600];
    bk_path(k, path, sizeof(path), node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    *out = ckh_fs_exists(k->fs, path);
    return 0;
}

static int bk_remove(struct ckh_backend *b, const char *node, int64_t epoch)
{
    struct bk *k = (struct bk *)b;
    char path[600];
    bk_path(k, path, sizeof(path), node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    int rc = ckh_fs_unlink(k->fs, path);
    if (rc)
        return bk_fail(k, rc == -ENOENT ? CKH_ENOTFOUND : rc, "unlink", path);
    return BK_DEFECTS & BK_NO_DIR_FSYNC ? 0 : ckh_fs_fsync_dir(k->fs, k->prefix);
}

static int bk_db_name(struct ckh_backend *b, const char *node, int64_t epoch, char *buf, size_t n)
{
    struct bk *k = (struct bk *)b;
    bk_path(k, buf, n, node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    return 0;
}

static const struct ckh_backend_ops bk_ops = {
    .version = 1,
    .name = BK_NAME,
    .open = bk_open,
    .close = bk_close,
    .save = bk_save,
    .load = bk_load,
    .exists = bk_exists,
    .list_epochs = bk_list_epochs,
    .remove = bk_remove,
    .db_name = bk_db_name,
};

static int bk_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    if (!cfg || !cfg->fs || !cfg->prefix || !out)
        return CKH_EINVAL;
    struct bk *k = ckh_calloc(cfg->alloc, 1, sizeof(*k));
    if (!k)
        return CKH_ENOMEM;
    k->base.ops = &bk_ops;
    k->fs = cfg->fs;
    k->alloc = cfg->alloc;
    snprintf(k->prefix, sizeof(k->prefix), "%s", cfg->prefix);
    if (BK_DEFECTS & BK_LEAK)
        k->leak = ckh_malloc(cfg->alloc, 64);
    *out = &k->base;
    return 0;
}

static void bk_close(struct ckh_backend *b)
{
    struct bk *k = (struct bk *)b;
    if (k)
        ckh_free(k->alloc, k);
}

CKH_BACKEND_PLUGIN(bk_ops)
