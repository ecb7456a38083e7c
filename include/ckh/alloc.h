/* The injectable allocator.
 *
 * All memory that code under test allocates goes through a ckh_alloc so
 * that the simulator can account for it per node, free it when the node is
 * killed, and inject out-of-memory like any other fault.
 */
#ifndef CKH_ALLOC_H
#define CKH_ALLOC_H

#include <stddef.h>

struct ckh_alloc;

struct ckh_alloc_ops {
    int version; /* 1 */
    /* Returns NULL on (possibly injected) out-of-memory. */
    void *(*malloc)(struct ckh_alloc *a, size_t size_bytes);
    /* Like realloc(3); on failure the old block is untouched. */
    void *(*realloc)(struct ckh_alloc *a, void *ptr, size_t size_bytes);
    void (*free)(struct ckh_alloc *a, void *ptr);
};

struct ckh_alloc {
    const struct ckh_alloc_ops *ops; /* methods */
};

/* The process allocator (malloc/realloc/free); never injects failures.
 * Static storage, valid for the whole program. */
struct ckh_alloc *ckh_alloc_system(void);

/* Thin wrappers; a NULL allocator means ckh_alloc_system(). */
/* size_bytes from a; NULL when it fails (an injected OOM included). */
void *ckh_malloc(struct ckh_alloc *a, size_t size_bytes);
/* n * size_bytes zeroed bytes; NULL on overflow or failure. */
void *ckh_calloc(struct ckh_alloc *a, size_t n, size_t size_bytes);
/* Resizes ptr (allocated from a); on failure NULL and ptr is untouched. */
void *ckh_realloc(struct ckh_alloc *a, void *ptr, size_t size_bytes);
/* Frees ptr, which must come from a; NULL is a no-op. */
void ckh_free(struct ckh_alloc *a, void *ptr);
/* Copies a NUL-terminated string; the caller frees it with ckh_free(a, ...). */
char *ckh_strdup(struct ckh_alloc *a, const char *s);

#endif
