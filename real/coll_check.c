/* The collectives' conformance script (real_coll.h, "ckh_real_coll_check"):
 * the same calls with the same inputs on any struct ckh_coll, their
 * results serialised, so a test compares the real platform's bytes with
 * the simulator's (tests/test_real_coll.c). Inputs are chosen so that the
 * order of a floating-point sum changes its result: each rank contributes
 * values of very different magnitudes and signs. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "real_coll.h"

#define COUNT 257 /* elements per all-reduce */

struct out {
    unsigned char *buf; /* serialised results */
    size_t len, cap;    /* used, allocated */
    bool nomem;         /* an append failed */
};

static void put(struct out *o, int rc, const void *data, size_t n)
{
    if (o->len + n + 8 > o->cap) {
        size_t cap = (o->cap + n + 8) * 2;
        unsigned char *b = realloc(o->buf, cap);
        if (!b) {
            o->nomem = true;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
    int32_t r = rc;
    uint32_t len = (uint32_t)n;
    memcpy(o->buf + o->len, &r, 4);
    memcpy(o->buf + o->len + 4, &len, 4);
    if (n)
        memcpy(o->buf + o->len + 8, data, n);
    o->len += 8 + n;
}

/* Rank r's element i: even ranks hold large values of alternating signs
 * that nearly cancel, odd ranks small ones, so a float sum loses a
 * different part of the small values in each order of the fold. */
static double value(int r, size_t i)
{
    double m = 1.0 + (double)((i * 7 + (size_t)r * 13) % 17) / 16.0;
    if (r % 2 == 1)
        return ((i + (size_t)r) % 3 == 0 ? -1.0 : 1.0) * ldexp(m, -(int)(i % 12));
    return ((r / 2) % 2 == 0 ? 1.0 : -1.0) * ldexp(m, 20 + (int)(i % 9));
}

static void reduce_case(struct ckh_coll *c, struct out *o, enum ckh_dtype dt, enum ckh_redop op,
                        uint64_t timeout_ns)
{
    int r = ckh_coll_rank(c);
    size_t es = ckh_dtype_size(dt);
    unsigned char *b = calloc(COUNT, es);
    if (!b) {
        o->nomem = true;
        return;
    }
    for (size_t i = 0; i < COUNT; i++) {
        double v = value(r, i);
        float f = (float)v;
        int32_t i32 = (int32_t)(v * 1000.0);
        int64_t i64 = (int64_t)(v * 1e6);
        uint64_t u64 = (uint64_t)i64 * 0x9e3779b97f4a7c15ull;
        uint8_t u8 = (uint8_t)(u64 >> 56);
        const void *src = dt == CKH_DT_F32 ? (const void *)&f
                          : dt == CKH_DT_F64 ? (const void *)&v
                          : dt == CKH_DT_I32 ? (const void *)&i32
                          : dt == CKH_DT_I64 ? (const void *)&i64
                          : dt == CKH_DT_U64 ? (const void *)&u64
                                             : (const void *)&u8;
        memcpy(b + i * es, src, es);
    }
    int rc = ckh_coll_allreduce(c, b, COUNT, dt, op, timeout_ns);
    put(o, rc, b, COUNT * es);
    free(b);
}

int ckh_real_coll_check(struct ckh_coll *c, bool skip_last_barrier, uint64_t timeout_ns, unsigned char **out,
                        size_t *n)
{
    struct out o = {0};
    int r = ckh_coll_rank(c), w = ckh_coll_world_size(c);
    put(&o, ckh_coll_barrier(c, timeout_ns), NULL, 0);
    unsigned char bc[100];
    for (size_t i = 0; i < sizeof bc; i++)
        bc[i] = (unsigned char)(r == 1 % w ? i * 3 + 1 : 0xee);
    put(&o, ckh_coll_broadcast(c, bc, sizeof bc, 1 % w, timeout_ns), bc, sizeof bc);
    static const enum ckh_dtype dts[] = {CKH_DT_F32, CKH_DT_F64, CKH_DT_I32, CKH_DT_I64, CKH_DT_U64, CKH_DT_U8};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int op = CKH_RED_SUM; op <= CKH_RED_MIN; op++)
            reduce_case(c, &o, dts[d], (enum ckh_redop)op, timeout_ns);
    unsigned char mine[24], *all = calloc((size_t)w, sizeof mine);
    for (size_t i = 0; i < sizeof mine; i++)
        mine[i] = (unsigned char)(r * 31 + (int)i);
    if (all) {
        put(&o, ckh_coll_allgather(c, mine, all, sizeof mine, timeout_ns), all, (size_t)w * sizeof mine);
        free(all);
    }
    /* A ring of point-to-point messages: even ranks send first. */
    double msg = value(r, 5), got = 0;
    int to = (r + 1) % w, from = (r + w - 1) % w, src = 0, rrc = 0;
    if (w > 1) {
        if (r % 2 == 0) {
            src = ckh_coll_send(c, &msg, sizeof msg, to, 5, timeout_ns);
            rrc = ckh_coll_recv(c, &got, sizeof got, from, 5, timeout_ns);
        } else {
            rrc = ckh_coll_recv(c, &got, sizeof got, from, 5, timeout_ns);
            src = ckh_coll_send(c, &msg, sizeof msg, to, 5, timeout_ns);
        }
    }
    put(&o, src, NULL, 0);
    put(&o, rrc, &got, sizeof got);
    /* The last rank never arrives: the others time out. */
    if (skip_last_barrier && r != w - 1)
        put(&o, ckh_coll_barrier(c, timeout_ns), NULL, 0);
    if (o.nomem) {
        free(o.buf);
        return CKH_ENOMEM;
    }
    *out = o.buf;
    *n = o.len;
    return 0;
}
