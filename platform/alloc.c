/* The system allocator and the ckh_malloc family of wrappers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/alloc.h"

static void *sys_malloc(struct ckh_alloc *a, size_t size)
{
    (void)a;
    return malloc(size ? size : 1);
}

static void *sys_realloc(struct ckh_alloc *a, void *p, size_t size)
{
    (void)a;
    return realloc(p, size ? size : 1);
}

static void sys_free(struct ckh_alloc *a, void *p)
{
    (void)a;
    free(p);
}

static const struct ckh_alloc_ops sys_ops = {
    .version = 1,
    .malloc = sys_malloc,
    .realloc = sys_realloc,
    .free = sys_free,
};

static struct ckh_alloc sys_alloc = {.ops = &sys_ops};

struct ckh_alloc *ckh_alloc_system(void)
{
    return &sys_alloc;
}

void *ckh_malloc(struct ckh_alloc *a, size_t size_bytes)
{
    if (!a)
        a = &sys_alloc;
    return a->ops->malloc(a, size_bytes);
}

void *ckh_calloc(struct ckh_alloc *a, size_t n, size_t size_bytes)
{
    if (size_bytes && n > SIZE_MAX / size_bytes)
        return NULL;
    void *p = ckh_malloc(a, n * size_bytes);
    if (p)
        memset(p, 0, n * size_bytes);
    return p;
}

void *ckh_realloc(struct ckh_alloc *a, void *ptr, size_t size_bytes)
{
    if (!a)
        a = &sys_alloc;
    return a->ops->realloc(a, ptr, size_bytes);
}

void ckh_free(struct ckh_alloc *a, void *ptr)
{
    if (!ptr)
        return;
    if (!a)
        a = &sys_alloc;
    a->ops->free(a, ptr);
}

char *ckh_strdup(struct ckh_alloc *a, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = ckh_malloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}
