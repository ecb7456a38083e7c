/* Wrappers around the clock, rand, collective and node ops tables. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/env.h"
#include "ckh/err.h"

size_t ckh_dtype_size(enum ckh_dtype dt)
{
    switch (dt) {
    case CKH_DT_U8: return 1;
    case CKH_DT_I32: return 4;
    case CKH_DT_F32: return 4;
    case CKH_DT_I64: return 8;
    case CKH_DT_U64: return 8;
    case CKH_DT_F64: return 8;
    }
    return 0;
}

const char *ckh_dtype_name(enum ckh_dtype dt)
{
    switch (dt) {
    case CKH_DT_U8: return "u8";
    case CKH_DT_I32: return "i32";
    case CKH_DT_F32: return "f32";
    case CKH_DT_I64: return "i64";
    case CKH_DT_U64: return "u64";
    case CKH_DT_F64: return "f64";
    }
    return "?";
}

const char *ckh_redop_name(enum ckh_redop op)
{
    switch (op) {
    case CKH_RED_SUM: return "sum";
    case CKH_RED_MAX: return "max";
    case CKH_RED_MIN: return "min";
    }
    return "?";
}

/* ---- the reduction every platform folds collectives with ---- */

#define REDUCE_LOOP(T, EXPR)                                                   \
    do {                                                                       \
        for (size_t i = 0; i < count; i++) {                                   \
            T a, b;                                                            \
            memcpy(&a, (unsigned char *)acc + i * sizeof(T), sizeof(T));       \
            memcpy(&b, (const unsigned char *)in + i * sizeof(T), sizeof(T));  \
            a = (EXPR);                                                        \
            memcpy((unsigned char *)acc + i * sizeof(T), &a, sizeof(T));       \
        }                                                                      \
    } while (0)

#define REDUCE_OPS(T, SUMEXPR)                                                 \
    do {                                                                       \
        if (redop == CKH_RED_SUM)                                              \
            REDUCE_LOOP(T, SUMEXPR);                                           \
        else if (redop == CKH_RED_MAX)                                         \
            REDUCE_LOOP(T, b > a ? b : a);                                     \
        else                                                                   \
            REDUCE_LOOP(T, b < a ? b : a);                                     \
    } while (0)

void ckh_coll_reduce(void *acc, const void *in, size_t count, enum ckh_dtype dtype, enum ckh_redop redop)
{
    switch (dtype) {
    case CKH_DT_U8:
        REDUCE_OPS(uint8_t, (uint8_t)(a + b));
        break;
    case CKH_DT_I32:
        REDUCE_OPS(int32_t, (int32_t)((uint32_t)a + (uint32_t)b));
        break;
    case CKH_DT_I64:
        REDUCE_OPS(int64_t, (int64_t)((uint64_t)a + (uint64_t)b));
        break;
    case CKH_DT_U64:
        REDUCE_OPS(uint64_t, a + b);
        break;
    case CKH_DT_F32:
        REDUCE_OPS(float, a + b);
        break;
    case CKH_DT_F64:
        REDUCE_OPS(double, a + b);
        break;
    }
}

uint64_t ckh_clock_now_ns(struct ckh_clock *c)
{
    return c && c->ops && c->ops->now_ns ? c->ops->now_ns(c) : 0;
}

int ckh_clock_sleep_ns(struct ckh_clock *c, uint64_t ns)
{
    if (!c || !c->ops)
        return CKH_EINVAL;
    if (!c->ops->sleep_ns)
        return CKH_EUNSUPPORTED;
    return c->ops->sleep_ns(c, ns);
}

uint64_t ckh_rand_stream_seed(struct ckh_rand *r, const char *name)
{
    if (!r || !r->ops || !r->ops->stream_seed || !name)
        return 0;
    return r->ops->stream_seed(r, name);
}

#define COLL_CALL(c, method, ...)                                              \
    do {                                                                       \
        if (!(c) || !(c)->ops)                                                 \
            return CKH_EINVAL;                                                 \
        if (!(c)->ops->method)                                                 \
            return CKH_EUNSUPPORTED;                                           \
        return (c)->ops->method(__VA_ARGS__);                                  \
    } while (0)

int ckh_coll_rank(struct ckh_coll *c)
{
    if (!c)
        return 0; /* a single-process job is rank 0 of 1 */
    COLL_CALL(c, rank, c);
}

int ckh_coll_world_size(struct ckh_coll *c)
{
    if (!c)
        return 1;
    COLL_CALL(c, world_size, c);
}

int ckh_coll_barrier(struct ckh_coll *c, uint64_t timeout_ns)
{
    if (!c)
        return 0;
    COLL_CALL(c, barrier, c, timeout_ns);
}

int ckh_coll_broadcast(struct ckh_coll *c, void *buf, size_t size_bytes, int root, uint64_t timeout_ns)
{
    if (!buf && size_bytes)
        return CKH_EINVAL;
    if (!c)
        return root == 0 ? 0 : CKH_EINVAL;
    COLL_CALL(c, broadcast, c, buf, size_bytes, root, timeout_ns);
}

int ckh_coll_allreduce(struct ckh_coll *c, void *buf, size_t count, enum ckh_dtype dt,
                       enum ckh_redop op, uint64_t timeout_ns)
{
    if ((!buf && count) || !ckh_dtype_size(dt) || op > CKH_RED_MIN)
        return CKH_EINVAL;
    if (!c)
        return 0;
    COLL_CALL(c, allreduce, c, buf, count, dt, op, timeout_ns);
}

int ckh_coll_allgather(struct ckh_coll *c, const void *send, void *recv, size_t size_bytes,
                       uint64_t timeout_ns)
{
    if ((!send || !recv) && size_bytes)
        return CKH_EINVAL;
    if (!c) {
        if (size_bytes && send != recv)
            for (size_t i = 0; i < size_bytes; i++)
                ((unsigned char *)recv)[i] = ((const unsigned char *)send)[i];
        return 0;
    }
    COLL_CALL(c, allgather, c, send, recv, size_bytes, timeout_ns);
}

int ckh_coll_send(struct ckh_coll *c, const void *buf, size_t size_bytes, int peer, int tag,
                  uint64_t timeout_ns)
{
    if (!buf && size_bytes)
        return CKH_EINVAL;
    COLL_CALL(c, send, c, buf, size_bytes, peer, tag, timeout_ns);
}

int ckh_coll_recv(struct ckh_coll *c, void *buf, size_t size_bytes, int peer, int tag,
                  uint64_t timeout_ns)
{
    if (!buf && size_bytes)
        return CKH_EINVAL;
    COLL_CALL(c, recv, c, buf, size_bytes, peer, tag, timeout_ns);
}

/* ---- devices ---- */

#define GPU_CALL(g, method, ...)                                               \
    do {                                                                       \
        if (!(g) || !(g)->ops || !(g)->ops->method)                            \
            return CKH_EUNSUPPORTED;                                           \
        return (g)->ops->method(__VA_ARGS__);                                  \
    } while (0)

int ckh_gpu_alloc(struct ckh_gpu *g, int dev, uint64_t bytes, void **dptr)
{
    if (!dptr || dev < 0)
        return CKH_EINVAL;
    *dptr = NULL;
    GPU_CALL(g, alloc, g, dev, bytes, dptr);
}

void ckh_gpu_free(struct ckh_gpu *g, void *dptr)
{
    if (g && g->ops && g->ops->free && dptr)
        g->ops->free(g, dptr);
}

int ckh_gpu_copy(struct ckh_gpu *g, void *dst, const void *src, uint64_t bytes, enum ckh_gpu_copy dir)
{
    if (bytes && (!dst || !src))
        return CKH_EINVAL;
    if (dir != CKH_GPU_TO_DEVICE && dir != CKH_GPU_TO_HOST && dir != CKH_GPU_ON_DEVICE)
        return CKH_EINVAL;
    if (!bytes)
        return 0;
    GPU_CALL(g, copy, g, dst, src, bytes, dir);
}

void ckh_gpu_mem(struct ckh_gpu *g, int dev, uint64_t *used, uint64_t *capacity)
{
    uint64_t u = 0, c = 0;
    if (g && g->ops && g->ops->mem)
        g->ops->mem(g, dev, &u, &c);
    if (used)
        *used = u;
    if (capacity)
        *capacity = c;
}

int ckh_gpu_limit(struct ckh_gpu *g, int dev, uint64_t bytes)
{
    if (dev < 0)
        return CKH_EINVAL;
    GPU_CALL(g, limit, g, dev, bytes);
}

int ckh_gpu_allreduce(struct ckh_gpu *g, void *dptr, size_t count, enum ckh_dtype dt, enum ckh_redop op,
                      uint64_t timeout_ns)
{
    if ((!dptr && count) || !ckh_dtype_size(dt) || op > CKH_RED_MIN)
        return CKH_EINVAL;
    GPU_CALL(g, allreduce, g, dptr, count, dt, op, timeout_ns);
}

int ckh_gpu_prepare(struct ckh_gpu *g, size_t max_bytes)
{
    GPU_CALL(g, prepare, g, max_bytes);
}

void ckh_node_exit(struct ckh_node *n, int status)
{
    if (n && n->ops && n->ops->exit)
        n->ops->exit(n, status);
}

const char *ckh_node_name(struct ckh_node *n)
{
    if (!n || !n->ops || !n->ops->name)
        return "?";
    return n->ops->name(n);
}

void ckh_node_phase(struct ckh_node *n, const char *phase, int64_t epoch, int64_t step)
{
    if (n && n->ops && n->ops->phase && phase)
        n->ops->phase(n, phase, epoch, step);
}

int ckh_node_spawn(struct ckh_node *n, ckh_bg_fn fn, void *arg, struct ckh_task **out)
{
    if (out)
        *out = NULL;
    if (!n || !n->ops || !fn || !out)
        return CKH_EINVAL;
    /* An ops table older than version 2 has no spawn member at all. */
    if (n->ops->version < 2 || !n->ops->spawn)
        return CKH_EUNSUPPORTED;
    return n->ops->spawn(n, fn, arg, out);
}

int ckh_node_join(struct ckh_node *n, struct ckh_task *t, int *status)
{
    if (!n || !n->ops || !t)
        return CKH_EINVAL;
    if (n->ops->version < 2 || !n->ops->join)
        return CKH_EUNSUPPORTED;
    return n->ops->join(n, t, status);
}

void ckh_node_logf(struct ckh_node *n, const char *fmt, ...)
{
    if (!n || !n->ops || !n->ops->log || !fmt)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    n->ops->log(n, buf);
}
