/* The simulator's trace: every op, in the order it took effect.
 *
 * Hash. Every record is folded into a running 64-bit hash, whether or not
 * records are kept:
 *   h = ckh_hash64(h, FIXED, 60)   FIXED = little-endian
 *       u64 time_ns, u64 node (int64, -1 = environment), u32 kind,
 *       u64 off, u64 len, u64 arg, u64 result,
 *       u32 length of path, u32 length of path2 (0xffffffff: NULL)
 *   then h = ckh_hash64(h, path, its length) when path is not NULL,
 *   and likewise path2; then, only for a record of a background task,
 *   h = ckh_hash64(h, TASK, 4) with TASK its number as little-endian u32
 *   (so traces without tasks hash as they always did).
 * The initial value is CKH_HASH_INIT. Same seed and inputs: same hash.
 *
 * Storage (cfg.keep_trace): records in one growing array, their strings in
 * an arena of chunks that never move, so pointers handed out stay valid
 * while the simulator lives.
 *
 * Text form (ckh_trace_format), one line, fields separated by one space:
 *   t=TIME n=NODE NAME OP [PATH] [-> PATH2] off=OFF len=LEN arg=ARG -> RESULT[ (ERRNAME)]
 * TIME in ns; NODE the id (-1 for the environment, NAME then "env"; a
 * background task's records show NAME#TASK, "trainer_0#1"); OP
 * the op name (op.h); PATH and PATH2 only when present, with bytes below
 * 0x20, 0x7f and '\\' written as \xHH; OFF and LEN unsigned decimal (signed
 * for a phase op, which stores epoch and step there); ARG and RESULT signed
 * decimal; a negative RESULT is followed by its error name in parentheses.
 * Example:
 *   t=1200 n=0 trainer_0 pwrite /ckpt/a.tmp off=0 len=4096 arg=0 -> 4096
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/endian.h"
#include "ckh/err.h"
#include "sim_core.h"

#define ARENA_CHUNK_BYTES (64u * 1024u)
#define FIXED_BYTES 60

void ckh__trace_init(struct ckh__trace *t, bool keep)
{
    memset(t, 0, sizeof *t);
    t->hash = CKH_HASH_INIT;
    t->keep = keep;
}

void ckh__trace_free(struct ckh__trace *t)
{
    struct ckh__arena_chunk *c = t->arena;
    while (c != NULL) {
        struct ckh__arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(t->items);
    memset(t, 0, sizeof *t);
}

/* Copies s into the arena; NULL when s is NULL or memory runs out. */
static const char *arena_strdup(struct ckh__trace *t, const char *s, size_t len)
{
    if (s == NULL)
        return NULL;
    struct ckh__arena_chunk *c = t->arena;
    if (c == NULL || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > ARENA_CHUNK_BYTES ? len + 1 : ARENA_CHUNK_BYTES;
        c = malloc(sizeof *c + cap);
        if (c == NULL) {
            t->oom = true;
            return NULL;
        }
        c->cap = cap;
        c->used = 0;
        c->next = t->arena;
        t->arena = c;
    }
    char *p = c->data + c->used;
    memcpy(p, s, len);
    p[len] = '\0';
    c->used += len + 1;
    return p;
}

void ckh__trace_add(struct ckh_sim *sim, int node, int kind, const char *path, const char *path2,
                    uint64_t off, uint64_t len, int64_t arg, int64_t result)
{
    struct ckh__trace *t = &sim->trace;
    size_t plen = path != NULL ? strlen(path) : 0;
    size_t p2len = path2 != NULL ? strlen(path2) : 0;
    unsigned char fixed[FIXED_BYTES];
    ckh_put_le64(fixed + 0, sim->now_ns);
    ckh_put_le64(fixed + 8, (uint64_t)(int64_t)node);
    ckh_put_le32(fixed + 16, (uint32_t)kind);
    ckh_put_le64(fixed + 20, off);
    ckh_put_le64(fixed + 28, len);
    ckh_put_le64(fixed + 36, (uint64_t)arg);
    ckh_put_le64(fixed + 44, (uint64_t)result);
    ckh_put_le32(fixed + 52, path != NULL ? (uint32_t)plen : 0xffffffffu);
    ckh_put_le32(fixed + 56, path2 != NULL ? (uint32_t)p2len : 0xffffffffu);
    uint64_t h = ckh_hash64(t->hash, fixed, sizeof fixed);
    if (path != NULL)
        h = ckh_hash64(h, path, plen);
    if (path2 != NULL)
        h = ckh_hash64(h, path2, p2len);
    uint32_t task = 0;
    if (sim->cur != NULL && sim->cur->task != 0 && sim->cur->node->id == node)
        task = sim->cur->task;
    if (task != 0) {
        unsigned char tb[4];
        ckh_put_le32(tb, task);
        h = ckh_hash64(h, tb, sizeof tb);
    }
    t->hash = h;
    t->len++;
    if (!t->keep)
        return;
    if (t->len > t->cap) {
        size_t cap = t->cap != 0 ? 2 * t->cap : 1024;
        struct ckh__trace_item *items = realloc(t->items, cap * sizeof *items);
        if (items == NULL) {
            t->keep = false; /* out of memory: keep hashing, stop storing */
            t->oom = true;
            return;
        }
        t->items = items;
        t->cap = cap;
    }
    struct ckh__trace_item *it = &t->items[t->len - 1];
    it->time_ns = sim->now_ns;
    it->node = node;
    it->task = task;
    it->kind = kind;
    it->path = arena_strdup(t, path, plen);
    it->path2 = arena_strdup(t, path2, p2len);
    it->off = off;
    it->len = len;
    it->arg = arg;
    it->result = result;
}

uint64_t ckh_sim_trace_hash(const struct ckh_sim *sim)
{
    return sim != NULL ? sim->trace.hash : 0;
}

uint64_t ckh_sim_trace_len(const struct ckh_sim *sim)
{
    return sim != NULL ? sim->trace.len : 0;
}

int ckh_sim_trace_get(const struct ckh_sim *sim, uint64_t i, struct ckh_trace_rec *out)
{
    if (sim == NULL || out == NULL)
        return CKH_EINVAL;
    const struct ckh__trace *t = &sim->trace;
    if (t->items == NULL || i >= t->len || i >= t->cap)
        return ckh__sim_err((struct ckh_sim *)sim, t->keep ? CKH_ENOTFOUND : CKH_ESTATE,
                            "trace record %" PRIu64 " %s", i,
                            t->keep ? "does not exist" : "not kept (keep_trace is off)");
    const struct ckh__trace_item *it = &t->items[i];
    out->seq = i;
    out->time_ns = it->time_ns;
    out->node = it->node;
    out->task = (int)it->task;
    out->kind = (enum ckh_op_kind)it->kind;
    out->path = it->path;
    out->path2 = it->path2;
    out->off = it->off;
    out->len = it->len;
    out->arg = it->arg;
    out->result = it->result;
    return 0;
}

/* Appends formatted text at buf[*used], tracking the full length. */
static void emit(char *buf, size_t n, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void emit(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = *used < n ? buf + *used : NULL;
    size_t room = *used < n ? n - *used : 0;
    int w = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (w > 0)
        *used += (size_t)w;
}

static void emit_escaped(char *buf, size_t n, size_t *used, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '\\')
            emit(buf, n, used, "\\x%02x", *p);
        else
            emit(buf, n, used, "%c", *p);
    }
}

int ckh_trace_format(const struct ckh_sim *sim, const struct ckh_trace_rec *r, char *buf, size_t n)
{
    if (r == NULL || (buf == NULL && n > 0))
        return CKH_EINVAL;
    if (n > 0)
        buf[0] = '\0';
    size_t used = 0;
    const char *name = r->node < 0 ? "env" : ckh_sim_node_name(sim, r->node);
    emit(buf, n, &used, "t=%" PRIu64 " n=%d %s", r->time_ns, r->node, name != NULL ? name : "?");
    if (r->task > 0)
        emit(buf, n, &used, "#%d", r->task);
    emit(buf, n, &used, " %s", ckh_op_name(r->kind));
    if (r->path != NULL) {
        emit(buf, n, &used, " ");
        emit_escaped(buf, n, &used, r->path);
    }
    if (r->path2 != NULL) {
        emit(buf, n, &used, " -> ");
        emit_escaped(buf, n, &used, r->path2);
    }
    if (r->kind == CKH_OP_PHASE)
        emit(buf, n, &used, " off=%" PRId64 " len=%" PRId64, (int64_t)r->off, (int64_t)r->len);
    else
        emit(buf, n, &used, " off=%" PRIu64 " len=%" PRIu64, r->off, r->len);
    emit(buf, n, &used, " arg=%" PRId64 " -> %" PRId64, r->arg, r->result);
    if (r->result < 0)
        emit(buf, n, &used, " (%s)", ckh_err_name((int)r->result));
    if (n > 0 && used >= n)
        buf[n - 1] = '\0';
    return used > INT32_MAX ? INT32_MAX : (int)used;
}
