/* Workspaces: the named blobs (typed tensors) a node holds.
 *
 * A blob has a name, a dtype, a shape and data. The data is either stored
 * (size_bytes bytes owned by the workspace) or described by a struct
 * ckh_gen (byte p is a pure function of the generator triple), so a node
 * can hold gigabytes of tensors in O(1) memory. Blobs are kept sorted by
 * name (bytewise), so iteration order is deterministic. All memory comes
 * from the workspace's allocator.
 */
#ifndef CKH_WORKSPACE_H
#define CKH_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/alloc.h"
#include "ckh/env.h"
#include "ckh/rng.h"

#define CKH_BLOB_MAX_DIMS 8
#define CKH_BLOB_NAME_MAX 512

struct ckh_blob {
    char *name;                         /* unique within the workspace; owned */
    enum ckh_dtype dtype;               /* element type */
    uint32_t ndim;                      /* number of dimensions (0: scalar) */
    uint64_t shape[CKH_BLOB_MAX_DIMS];  /* extent of each dimension */
    uint64_t size_bytes;                /* elements * dtype size */
    bool described;                     /* true: data is gen, not bytes */
    void *data;                         /* stored bytes (owned); NULL if described or empty */
    struct ckh_gen gen;                 /* described: the generator triple */
};

struct ckh_ws;

/* Creates an empty workspace whose memory comes from a (NULL: system).
 * *out is freed with ckh_ws_destroy. */
int ckh_ws_create(struct ckh_alloc *a, struct ckh_ws **out);
/* Frees the workspace and every blob. NULL is a no-op. */
void ckh_ws_destroy(struct ckh_ws *ws);
/* Removes every blob. */
void ckh_ws_clear(struct ckh_ws *ws);
/* Message about the last failed call on ws; valid until the next call. */
const char *ckh_ws_errmsg(const struct ckh_ws *ws);
/* The allocator of ws. */
struct ckh_alloc *ckh_ws_alloc(const struct ckh_ws *ws);

/* Sets (creates or replaces) a stored blob; the data (elements of shape,
 * may be NULL only when the blob is empty) is copied. Names are 1 to
 * CKH_BLOB_NAME_MAX bytes without NUL. */
int ckh_ws_set(struct ckh_ws *ws, const char *name, enum ckh_dtype dtype, uint32_t ndim,
               const uint64_t *shape, const void *data);
/* Sets a described blob: no bytes are held, only the triple. */
int ckh_ws_set_gen(struct ckh_ws *ws, const char *name, enum ckh_dtype dtype, uint32_t ndim,
                   const uint64_t *shape, const struct ckh_gen *gen);
/* Moves *b into ws (replacing a blob of the same name): on success ws owns
 * b->name and b->data, allocated from the workspace's allocator, and *b is
 * zeroed; on failure *b is untouched and still the caller's. */
int ckh_ws_adopt(struct ckh_ws *ws, struct ckh_blob *b);
/* Frees the name and data of a blob not in any workspace (allocator a). */
void ckh_blob_release(struct ckh_alloc *a, struct ckh_blob *b);

/* Scalar int64 helpers (shape {1}). get: CKH_ENOTFOUND if absent,
 * CKH_EINVAL if the blob is not a one-element i64 stored blob. */
int ckh_ws_set_i64(struct ckh_ws *ws, const char *name, int64_t v);
int ckh_ws_get_i64(const struct ckh_ws *ws, const char *name, int64_t *out);

/* The blob named name, or NULL. Valid until ws changes. */
const struct ckh_blob *ckh_ws_find(const struct ckh_ws *ws, const char *name);
bool ckh_ws_has(const struct ckh_ws *ws, const char *name);
/* Removes a blob; CKH_ENOTFOUND if absent. */
int ckh_ws_remove(struct ckh_ws *ws, const char *name);
/* Copies blob src to dst within ws (described stays described). */
int ckh_ws_copy(struct ckh_ws *ws, const char *src, const char *dst);
size_t ckh_ws_count(const struct ckh_ws *ws);
/* The i-th blob in name order; NULL past the end. Valid until ws changes. */
const struct ckh_blob *ckh_ws_at(const struct ckh_ws *ws, size_t i);
/* Bytes of stored data held (described blobs count 0). */
uint64_t ckh_ws_stored_bytes(const struct ckh_ws *ws);

/* 64-bit digest of a blob / of every blob whose name starts with prefix
 * (NULL: all): names, dtypes, shapes and content (described blobs by their
 * triple and size). Stable across platforms. */
uint64_t ckh_blob_digest(uint64_t h, const struct ckh_blob *b);
uint64_t ckh_ws_digest(const struct ckh_ws *ws, const char *prefix);

/* Element count of a shape; CKH_EINVAL on overflow. */
int ckh_shape_elems(uint32_t ndim, const uint64_t *shape, uint64_t *out);

#endif
