/* Workspaces: a sorted array of named blobs (see include/ckh/workspace.h).
 *
 * Lookup is a binary search over names in bytewise order; insertion keeps
 * the order, so iteration never depends on pointer values. Every byte is
 * allocated through the workspace's allocator so a simulated node's memory
 * accounting (and OOM injection) sees it.
 */
#include "ckh/workspace.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"

struct ckh_ws {
    struct ckh_alloc *alloc; /* where every byte comes from */
    struct ckh_blob *blobs;  /* sorted by name */
    size_t count;            /* blobs in use */
    size_t cap;              /* blobs allocated */
    char errmsg[CKH_ERRMSG_BYTES]; /* last error */
};

int ckh_ws_create(struct ckh_alloc *a, struct ckh_ws **out)
{
    struct ckh_ws *ws;
    if (!out)
        return CKH_EINVAL;
    ws = ckh_calloc(a, 1, sizeof *ws);
    if (!ws)
        return CKH_ENOMEM;
    ws->alloc = a;
    *out = ws;
    return 0;
}

void ckh_blob_release(struct ckh_alloc *a, struct ckh_blob *b)
{
    if (!b)
        return;
    ckh_free(a, b->name);
    ckh_free(a, b->data);
    b->name = NULL;
    b->data = NULL;
}

void ckh_ws_clear(struct ckh_ws *ws)
{
    if (!ws)
        return;
    for (size_t i = 0; i < ws->count; i++)
        ckh_blob_release(ws->alloc, &ws->blobs[i]);
    ws->count = 0;
}

void ckh_ws_destroy(struct ckh_ws *ws)
{
    if (!ws)
        return;
    ckh_ws_clear(ws);
    ckh_free(ws->alloc, ws->blobs);
    ckh_free(ws->alloc, ws);
}

const char *ckh_ws_errmsg(const struct ckh_ws *ws)
{
    return ws ? ws->errmsg : "no workspace";
}

struct ckh_alloc *ckh_ws_alloc(const struct ckh_ws *ws)
{
    return ws ? ws->alloc : NULL;
}

/* Index of name, or -(insertion point) - 1. */
static long ws_search(const struct ckh_ws *ws, const char *name)
{
    size_t lo = 0, hi = ws->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ws->blobs[mid].name, name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

int ckh_shape_elems(uint32_t ndim, const uint64_t *shape, uint64_t *out)
{
    uint64_t n = 1;
    if (ndim > CKH_BLOB_MAX_DIMS || (ndim > 0 && !shape) || !out)
        return CKH_EINVAL;
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] != 0 && n > UINT64_MAX / shape[i])
            return CKH_EINVAL;
        n *= shape[i];
    }
    *out = n;
    return 0;
}

static int check_name(struct ckh_ws *ws, const char *name)
{
    size_t len;
    if (!name)
        return CKH_ERRF(ws->errmsg, CKH_EINVAL, "blob name is NULL");
    len = strlen(name);
    if (len == 0 || len > CKH_BLOB_NAME_MAX)
        return CKH_ERRF(ws->errmsg, CKH_EINVAL, "blob name length %zu not in 1..%d", len,
                        CKH_BLOB_NAME_MAX);
    return 0;
}

/* Fills the metadata of b (not name/data) and checks it. */
static int fill_meta(struct ckh_ws *ws, struct ckh_blob *b, enum ckh_dtype dtype, uint32_t ndim,
                     const uint64_t *shape)
{
    uint64_t elems;
    size_t es = ckh_dtype_size(dtype);
    if (es == 0)
        return CKH_ERRF(ws->errmsg, CKH_EINVAL, "unknown dtype %d", (int)dtype);
    if (ckh_shape_elems(ndim, shape, &elems) != 0 || elems > UINT64_MAX / es)
        return CKH_ERRF(ws->errmsg, CKH_EINVAL, "bad shape (ndim %u)", ndim);
    memset(b, 0, sizeof *b);
    b->dtype = dtype;
    b->ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        b->shape[i] = shape[i];
    b->size_bytes = elems * es;
    return 0;
}

int ckh_ws_adopt(struct ckh_ws *ws, struct ckh_blob *b)
{
    long at;
    int rc;
    if (!ws || !b)
        return CKH_EINVAL;
    if ((rc = check_name(ws, b->name)) != 0)
        return rc;
    /* The blob comes from the caller: its metadata must be what set would
     * have made (backends write shape[ndim] into fixed-size records). */
    {
        struct ckh_blob meta;
        if ((rc = fill_meta(ws, &meta, b->dtype, b->ndim, b->shape)) != 0)
            return rc;
        if (meta.size_bytes != b->size_bytes)
            return CKH_ERRF(ws->errmsg, CKH_EINVAL, "blob '%s': %llu bytes, its shape says %llu", b->name,
                            (unsigned long long)b->size_bytes, (unsigned long long)meta.size_bytes);
        if (!b->described && b->size_bytes && !b->data)
            return CKH_ERRF(ws->errmsg, CKH_EINVAL, "blob '%s' has no data", b->name);
    }
    at = ws_search(ws, b->name);
    if (at >= 0) {
        ckh_blob_release(ws->alloc, &ws->blobs[at]);
        ws->blobs[at] = *b;
    } else {
        size_t pos = (size_t)(-at - 1);
        if (ws->count == ws->cap) {
            size_t ncap = ws->cap ? ws->cap * 2 : 16;
            struct ckh_blob *nb = ckh_realloc(ws->alloc, ws->blobs, ncap * sizeof *nb);
            if (!nb)
                return CKH_ERRF(ws->errmsg, CKH_ENOMEM, "no memory for blob '%s'", b->name);
            ws->blobs = nb;
            ws->cap = ncap;
        }
        memmove(&ws->blobs[pos + 1], &ws->blobs[pos], (ws->count - pos) * sizeof *ws->blobs);
        ws->blobs[pos] = *b;
        ws->count++;
    }
    memset(b, 0, sizeof *b);
    return 0;
}

int ckh_ws_set(struct ckh_ws *ws, const char *name, enum ckh_dtype dtype, uint32_t ndim,
               const uint64_t *shape, const void *data)
{
    struct ckh_blob b = {0};
    int rc;
    if (!ws)
        return CKH_EINVAL;
    if ((rc = check_name(ws, name)) != 0 || (rc = fill_meta(ws, &b, dtype, ndim, shape)) != 0)
        return rc;
    if (b.size_bytes > 0 && !data)
        return CKH_ERRF(ws->errmsg, CKH_EINVAL, "blob '%s': data is NULL", name);
    if (b.size_bytes > SIZE_MAX)
        return CKH_ERRF(ws->errmsg, CKH_EINVAL, "blob '%s': too large to store", name);
    b.name = ckh_strdup(ws->alloc, name);
    if (!b.name)
        return CKH_ERRF(ws->errmsg, CKH_ENOMEM, "no memory for blob '%s'", name);
    if (b.size_bytes > 0) {
        b.data = ckh_malloc(ws->alloc, (size_t)b.size_bytes);
        if (!b.data) {
            ckh_free(ws->alloc, b.name);
            return CKH_ERRF(ws->errmsg, CKH_ENOMEM, "no memory for %llu bytes of blob '%s'",
                            (unsigned long long)b.size_bytes, name);
        }
        memcpy(b.data, data, (size_t)b.size_bytes);
    }
    rc = ckh_ws_adopt(ws, &b);
    if (rc != 0)
        ckh_blob_release(ws->alloc, &b);
    return rc;
}

int ckh_ws_set_gen(struct ckh_ws *ws, const char *name, enum ckh_dtype dtype, uint32_t ndim,
                   const uint64_t *shape, const struct ckh_gen *gen)
{
    struct ckh_blob b = {0};
    int rc;
    if (!ws)
        return CKH_EINVAL;
    if (!gen)
        return CKH_ERRF(ws->errmsg, CKH_EINVAL, "generator is NULL");
    if ((rc = check_name(ws, name)) != 0 || (rc = fill_meta(ws, &b, dtype, ndim, shape)) != 0)
        return rc;
    b.described = true;
    b.gen = *gen;
    b.name = ckh_strdup(ws->alloc, name);
    if (!b.name)
        return CKH_ERRF(ws->errmsg, CKH_ENOMEM, "no memory for blob '%s'", name);
    rc = ckh_ws_adopt(ws, &b);
    if (rc != 0)
        ckh_blob_release(ws->alloc, &b);
    return rc;
}

int ckh_ws_set_i64(struct ckh_ws *ws, const char *name, int64_t v)
{
    uint64_t shape[1] = {1};
    return ckh_ws_set(ws, name, CKH_DT_I64, 1, shape, &v);
}

int ckh_ws_get_i64(const struct ckh_ws *ws, const char *name, int64_t *out)
{
    const struct ckh_blob *b;
    if (!ws || !name || !out)
        return CKH_EINVAL;
    b = ckh_ws_find(ws, name);
    if (!b)
        return CKH_ENOTFOUND;
    if (b->described || b->dtype != CKH_DT_I64 || b->size_bytes != 8)
        return CKH_EINVAL;
    memcpy(out, b->data, 8);
    return 0;
}

const struct ckh_blob *ckh_ws_find(const struct ckh_ws *ws, const char *name)
{
    long at;
    if (!ws || !name)
        return NULL;
    at = ws_search(ws, name);
    return at >= 0 ? &ws->blobs[at] : NULL;
}

bool ckh_ws_has(const struct ckh_ws *ws, const char *name)
{
    return ckh_ws_find(ws, name) != NULL;
}

int ckh_ws_remove(struct ckh_ws *ws, const char *name)
{
    long at;
    if (!ws || !name)
        return CKH_EINVAL;
    at = ws_search(ws, name);
    if (at < 0)
        return CKH_ERRF(ws->errmsg, CKH_ENOTFOUND, "no blob '%s'", name);
    ckh_blob_release(ws->alloc, &ws->blobs[at]);
    memmove(&ws->blobs[at], &ws->blobs[at + 1],
            (ws->count - (size_t)at - 1) * sizeof *ws->blobs);
    ws->count--;
    return 0;
}

int ckh_ws_copy(struct ckh_ws *ws, const char *src, const char *dst)
{
    const struct ckh_blob *b;
    struct ckh_blob copy;
    if (!ws || !src || !dst)
        return CKH_EINVAL;
    b = ckh_ws_find(ws, src);
    if (!b)
        return CKH_ERRF(ws->errmsg, CKH_ENOTFOUND, "no blob '%s' to copy", src);
    if (strcmp(src, dst) == 0)
        return 0;
    copy = *b; /* b may move when dst is inserted: keep a shallow copy */
    if (copy.described)
        return ckh_ws_set_gen(ws, dst, copy.dtype, copy.ndim, copy.shape, &copy.gen);
    return ckh_ws_set(ws, dst, copy.dtype, copy.ndim, copy.shape, copy.data);
}

size_t ckh_ws_count(const struct ckh_ws *ws)
{
    return ws ? ws->count : 0;
}

const struct ckh_blob *ckh_ws_at(const struct ckh_ws *ws, size_t i)
{
    if (!ws || i >= ws->count)
        return NULL;
    return &ws->blobs[i];
}

uint64_t ckh_ws_stored_bytes(const struct ckh_ws *ws)
{
    uint64_t n = 0;
    for (size_t i = 0; ws && i < ws->count; i++)
        if (!ws->blobs[i].described)
            n += ws->blobs[i].size_bytes;
    return n;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return ckh_hash64(h, b, 8);
}

uint64_t ckh_blob_digest(uint64_t h, const struct ckh_blob *b)
{
    if (!b)
        return h;
    h = ckh_hash64(h, b->name, strlen(b->name) + 1);
    h = hash_u64(h, (uint64_t)b->dtype);
    h = hash_u64(h, b->ndim);
    for (uint32_t i = 0; i < b->ndim; i++)
        h = hash_u64(h, b->shape[i]);
    h = hash_u64(h, b->size_bytes);
    h = hash_u64(h, b->described);
    if (b->described) {
        h = hash_u64(h, b->gen.seed);
        h = hash_u64(h, b->gen.stream);
        h = hash_u64(h, b->gen.offset);
    } else if (b->size_bytes > 0) {
        h = ckh_hash64(h, b->data, (size_t)b->size_bytes);
    }
    return h;
}

uint64_t ckh_ws_digest(const struct ckh_ws *ws, const char *prefix)
{
    uint64_t h = CKH_HASH_INIT;
    size_t plen = prefix ? strlen(prefix) : 0;
    for (size_t i = 0; ws && i < ws->count; i++) {
        if (prefix && strncmp(ws->blobs[i].name, prefix, plen) != 0)
            continue;
        h = ckh_blob_digest(h, &ws->blobs[i]);
    }
    return h;
}
