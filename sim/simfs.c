/* The simulated disk: content, pending operations and the crash model.
 *
 * SPECIFICATION (the tests in tests/test_simfs.c and tests/test_simfs_shared.c
 * cite the numbered rules)
 *
 * S1. State. A disk holds a tree of directories, files and symlinks. Each
 *     inode keeps two copies of its content: the DURABLE copy (what the
 *     platter holds) and the LIVE copy (what reads see: the durable copy
 *     with the page cache on top). Every mutation is recorded as a PENDING
 *     operation, in issue order (seq), attributed to the node that issued
 *     it, and applied to the live copy at once. Why two copies instead of
 *     undo records: reads and path lookups are the hot path and hit the
 *     live copy directly; a crash applies the chosen subset of pending ops
 *     to the durable copy and rebuilds the live copy from it (plus the
 *     pending ops of other nodes), which is simple and obviously right.
 *     Content is a list of extents, each literal (reference-counted bytes
 *     shared between the live copy, the durable copy and the pending
 *     write) or generated (a struct ckh_gen triple), so both copies cost
 *     O(extents), not O(bytes). Directory entries point at inodes, so
 *     operations refer to inodes, not paths: a write through a handle
 *     whose file was renamed or unlinked still hits the right inode, and
 *     an entry created inside a directory that never became durable is
 *     simply unreachable in the durable tree.
 *
 * S2. Operations. Data ops: write (off, len, content) and truncate (size).
 *     Entry ops: link (create, mkdir, symlink: dir/name -> new inode),
 *     unlink (unlink, rmdir) and rename (dir/name -> dir2/name2, replacing
 *     the old target atomically). Reads, stat and listdir record nothing.
 *     Consecutive pending writes to one file by one node that continue
 *     each other (contiguous offsets, same generated stream at matching
 *     positions, no other op on that file in between) merge into one
 *     pending write: a crash treats them as one write (S5 tears it).
 *
 * S3. Dependencies. An op needs the earlier pending ops it builds on:
 *     a data op needs the link that created its file; an entry op needs
 *     the previous pending op on the same name (in each directory it
 *     touches) and the link that created the inode it moves or removes.
 *     A crash never applies an op whose dependency it dropped (the op is
 *     dropped too, whatever its choice said). Making an entry op durable
 *     (S4) first makes its pending dependencies durable; making a data op
 *     durable does not make its file's link durable.
 *
 * S4. Durability, CKH_CRASH_POSIX_WEAK (the default; the weakest state
 *     POSIX allows that a careful application must survive):
 *     - fsync/fdatasync of a file makes the node's pending data ops on
 *       that file durable, in issue order. Nothing else: a file that was
 *       created, written and fsynced, but whose directory was never
 *       fsynced, may vanish at a crash.
 *     - fsync_dir of D makes the node's pending link/unlink ops in D
 *       durable. A rename becomes durable once both its source and its
 *       destination directories have been fsynced (one fsync when equal).
 *     - On a shared disk an fsync flushes the ops in the calling node's
 *       cache (S9): on a network disk only the node's own (another
 *       machine's cache is out of reach), on a machine's disk every
 *       node's. When two caches wrote the same bytes, the durable copy
 *       holds the later flushed one.
 *
 * S4'. Durability, CKH_CRASH_EXT4_ORDERED (what ext4 with data=ordered
 *     and auto_da_alloc gives in practice, as modelled here):
 *     - Entry ops are journaled: they persist in issue order, so a crash
 *       keeps a prefix of the node's pending entry ops. Any fsync,
 *       fdatasync or fsync_dir by a node commits its cache's whole
 *       journal (all its pending entry ops; S9 says whose), so an fsynced
 *       new file keeps its entry.
 *     - Data ordering: when an entry op on an inode persists (create,
 *       rename, unlink), the node's data writes to that inode issued
 *       before it persist too, complete (never torn). This covers the
 *       write-to-temp then rename-over-target pattern. Truncate is a data
 *       op here too.
 *     - Data ops not covered by that rule are as under POSIX_WEAK.
 *
 * S5. Crash (ckh_simfs_crash): every pending op in the crashing node's
 *     cache (S9; all ops when node == -1: a power loss) is resolved, in
 *     issue order: APPLY (persists), DROP (lost), or for writes TORN_ZERO /
 *     TORN_GARBAGE: the write's first k whole sectors persist (k in
 *     [0, sectors), sectors counted at sector_bytes granularity from the
 *     disk's start, the first one possibly partial) and the rest of the
 *     write's bytes read as zeros or as garbage. k and the garbage bytes
 *     are pure functions of (disk seed, op seq), so an explicit choice
 *     list reproduces one exact state. Drawn choices come from the disk's
 *     PRNG (seeded with cfg->seed): writes 40% apply, 40% drop, 10% each
 *     torn kind; other ops 50/50; under EXT4_ORDERED the journal prefix
 *     length is drawn uniformly. Ops of other caches stay pending, except
 *     those that depend (S3, directly or through each other) on an op
 *     this crash dropped: they can never persist and are dropped with it.
 *     The live copy becomes the durable copy with the ops still pending
 *     applied again.
 *
 * S6. Faults. An fsync that gets CKH_FAULT_FSYNC_LOST drops the node's
 *     dirty data of that file without persisting it and fails with -EIO;
 *     the cache keeps showing the data (Linux semantics) and a retry
 *     succeeds because nothing is dirty any more. Faults at rest (flip a
 *     bit, zero a range, truncate, remove a tree) change the durable and
 *     live copies directly, bypassing the pending list.
 *
 * S7. Capacity. With capacity_bytes > 0 the sum of live file sizes may
 *     not exceed it: a write or truncate that would go past it changes
 *     nothing and fails with -ENOSPC (all or nothing, no short write, so
 *     that a checker sees one clean failure).
 *
 * S8. Snapshots. ckh_simfs_clone copies a disk (pending ops included) so
 *     that each copy can be crashed on its own; specified in
 *     sim/simfs_clone.c (C1-C4).
 *
 * S9. Sharing (ckh_simfs_config.sharing). Ops carry the node that issued
 *     them; the sharing says which nodes' ops sit in one CACHE, the unit
 *     an fsync flushes (S4, S4') and a crash resolves (S5):
 *     - CKH_SHARING_NETWORK (the default): a network filesystem mounted
 *       by several machines, each node its own client cache. A node's
 *       fsync and fsync_dir flush only its own ops; its crash resolves
 *       only its own, plus the other nodes' that depend on one it dropped
 *       (S5). Close-to-open consistency is not modelled: every node reads
 *       the one live copy, which holds every node's unsynced ops.
 *     - CKH_SHARING_MACHINE: the local disk of one machine whose nodes are
 *       processes sharing its page cache. Every node's ops are in the one
 *       cache: an fsync of a file by any node makes every node's pending
 *       data ops on it durable, an fsync_dir by any node every node's
 *       entry ops there (under EXT4_ORDERED: the one journal, all entry
 *       ops), and a crash of any node resolves every node's pending op (a
 *       crash of the machine, the same as node -1 on this disk). The
 *       simulator crashes the machine's other running nodes with it
 *       (sim/sched.c); command jobs resolve the crash once their run ends.
 *     Durability promise, both sharings and both crash models: an op made
 *     durable (by any node's fsync, with what it depends on, S3) is in the
 *     durable copy, and no later crash of any node or power loss takes it
 *     out; only a later op that persists (one issued later, or on a
 *     network disk another cache's older op flushed or kept later) can
 *     change what it wrote. tests/test_simfs_shared.c checks this as a
 *     seeded property over random multi-node op sequences.
 *
 * Invariants (CKH_ASSERT; tests/test_simfs.c breaks them on purpose):
 * pending ops are numbered in issue order (the table is sorted by seq);
 * an op depends only on earlier ops (S3); a file's pending data ops are
 * listed in issue order; a file's content has no extent past its size;
 * a crash applies no op whose dependency it dropped or left pending (S3,
 * S5). CKH_ASSERT_SLOW adds the whole-list checks: extents sorted and
 * disjoint; the whole pending table sorted; after an fsync no data op of
 * that node's cache on that file is pending (S4, S9); after fsync_dir
 * (POSIX_WEAK) no link/unlink of that node's cache in that directory is
 * pending.
 *
 * Map: memory | extents | directories | inodes | pending table | applying
 * ops | issuing ops | durability | public API | test-only entries. The crash itself (S5):
 * simfs_crash.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/op.h"
#include "ckh/sim_testing.h"
#include "simfs_internal.h"

/* ------------------------------------------------------------------ memory */

void *ckh__sf_malloc(struct ckh_simfs *d, size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (p)
        d->heap_bytes += n;
    else
        d->host_oom = true;
    return p;
}

void ckh__sf_free(struct ckh_simfs *d, void *p, size_t n)
{
    if (!p)
        return;
    /* Saturating: a clone may drop bytes another disk counted (simfs_clone.c C3). */
    d->heap_bytes -= n < d->heap_bytes ? n : d->heap_bytes;
    free(p);
}

/* Grows an array from old_n to new_n elements of size sz; NULL on failure
 * (the old array is untouched). */
static void *sf_grow(struct ckh_simfs *d, void *p, size_t old_n, size_t new_n, size_t sz)
{
    void *q = realloc(p, new_n * sz);
    if (!q) {
        d->host_oom = true;
        return NULL;
    }
    d->heap_bytes += (new_n - old_n) * sz;
    return q;
}

char *ckh__sf_strdup(struct ckh_simfs *d, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = ckh__sf_malloc(d, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

void ckh__sf_strfree(struct ckh_simfs *d, char *s)
{
    if (s)
        ckh__sf_free(d, s, strlen(s) + 1);
}

static void buf_ref(struct sf_buf *b)
{
    ckh__sf_buf_ref(b);
}

/* The handle's side of ckh_verrf: the message goes to d->errmsg. */
int ckh__sf_set_err(struct ckh_simfs *d, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckh_verrf(d ? d->errmsg : NULL, d ? sizeof(d->errmsg) : 0, rc, fmt, ap);
    va_end(ap);
    return rc;
}

/* ----------------------------------------------------------------- extents */

static bool ext_continues(const struct sf_ext *a, const struct sf_ext *b)
{
    if (a->off + a->len != b->off || a->src.buf != b->src.buf)
        return false;
    if (!a->src.buf &&
        (a->src.gen.seed != b->src.gen.seed || a->src.gen.stream != b->src.gen.stream))
        return false;
    return a->src.gen.offset + a->len == b->src.gen.offset;
}

/* Index of the first extent ending after a. */
static uint32_t ext_first_after(const struct sf_data *dt, uint64_t a)
{
    uint32_t lo = 0, hi = dt->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (dt->ext[mid].off + dt->ext[mid].len <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Merges extent i+1 into extent i (they continue each other). */
static void ext_merge(struct ckh_simfs *d, struct sf_data *dt, uint32_t i)
{
    dt->ext[i].len += dt->ext[i + 1].len;
    ckh__sf_buf_unref(d, dt->ext[i + 1].src.buf);
    memmove(&dt->ext[i + 1], &dt->ext[i + 2], (dt->n - i - 2) * sizeof(dt->ext[0]));
    dt->n--;
}

/* Replaces bytes [a, b) with the extent nx (NULL: a hole reading zeros).
 * Does not change the size. */
static int ext_replace(struct ckh_simfs *d, struct sf_data *dt, uint64_t a, uint64_t b,
                       const struct sf_ext *nx)
{
    if (a >= b)
        return 0;
    if (dt->n + 3 > dt->cap) {
        uint32_t cap = dt->cap ? dt->cap * 2 : 2;
        while (cap < dt->n + 3)
            cap *= 2;
        struct sf_ext *v = sf_grow(d, dt->ext, dt->cap, cap, sizeof(*v));
        if (!v)
            return CKH_ENOMEM;
        dt->ext = v;
        dt->cap = cap;
    }
    uint32_t i = ext_first_after(dt, a);
    uint32_t j = i;
    while (j < dt->n && dt->ext[j].off < b)
        j++;
    struct sf_ext repl[3];
    uint32_t nr = 0, at_new = UINT32_MAX;
    if (i < j && dt->ext[i].off < a) {
        repl[nr] = dt->ext[i];
        repl[nr].len = a - dt->ext[i].off;
        buf_ref(repl[nr].src.buf);
        nr++;
    }
    if (nx) {
        at_new = i + nr;
        repl[nr] = *nx;
        buf_ref(repl[nr].src.buf);
        nr++;
    }
    if (i < j) {
        const struct sf_ext *last = &dt->ext[j - 1];
        uint64_t end = last->off + last->len;
        if (end > b) {
            repl[nr] = *last;
            repl[nr].src.gen.offset += b - last->off;
            repl[nr].off = b;
            repl[nr].len = end - b;
            buf_ref(repl[nr].src.buf);
            nr++;
        }
    }
    for (uint32_t k = i; k < j; k++)
        ckh__sf_buf_unref(d, dt->ext[k].src.buf);
    memmove(&dt->ext[i + nr], &dt->ext[j], (dt->n - j) * sizeof(dt->ext[0]));
    memcpy(&dt->ext[i], repl, nr * sizeof(repl[0]));
    dt->n = dt->n - (j - i) + nr;
    if (at_new != UINT32_MAX) {
        if (at_new + 1 < dt->n && ext_continues(&dt->ext[at_new], &dt->ext[at_new + 1]))
            ext_merge(d, dt, at_new);
        if (at_new > 0 && ext_continues(&dt->ext[at_new - 1], &dt->ext[at_new]))
            ext_merge(d, dt, at_new - 1);
    }
    return 0;
}

static void ext_clear(struct ckh_simfs *d, struct sf_data *dt)
{
    for (uint32_t k = 0; k < dt->n; k++)
        ckh__sf_buf_unref(d, dt->ext[k].src.buf);
    ckh__sf_free(d, dt->ext, dt->cap * sizeof(dt->ext[0]));
    dt->ext = NULL;
    dt->n = dt->cap = 0;
    dt->size = 0;
}

int ckh__sf_data_copy(struct ckh_simfs *d, struct sf_data *to, const struct sf_data *from)
{
    ext_clear(d, to);
    if (from->n) {
        to->ext = ckh__sf_malloc(d, from->n * sizeof(to->ext[0]));
        if (!to->ext)
            return CKH_ENOMEM;
        to->cap = from->n;
        memcpy(to->ext, from->ext, from->n * sizeof(to->ext[0]));
        to->n = from->n;
        for (uint32_t k = 0; k < to->n; k++)
            buf_ref(to->ext[k].src.buf);
    }
    to->size = from->size;
    return 0;
}

int64_t ckh__sf_read(const struct sf_data *dt, void *buf, uint64_t n, uint64_t off)
{
    if (off >= dt->size || n == 0) /* nothing to copy: buf may be NULL (a read of 0 bytes) */
        return 0;
    if (n > dt->size - off)
        n = dt->size - off;
    if (n > INT64_MAX)
        n = INT64_MAX;
    unsigned char *out = buf;
    uint64_t done = 0; /* bytes of out filled so far */
    for (uint32_t k = ext_first_after(dt, off); k < dt->n && dt->ext[k].off < off + n; k++) {
        const struct sf_ext *e = &dt->ext[k];
        uint64_t s = e->off > off ? e->off : off;
        uint64_t t = e->off + e->len < off + n ? e->off + e->len : off + n;
        memset(out + done, 0, s - off - done); /* the hole before the extent */
        if (e->src.buf) {
            int rc = ckh__sf_buf_read(e->src.buf, e->src.gen.offset + (s - e->off), out + (s - off),
                                      t - s);
            if (rc)
                return rc;
        } else {
            ckh_gen_fill(&e->src.gen, s - e->off, out + (s - off), t - s);
        }
        done = t - off;
    }
    memset(out + done, 0, n - done);
    return (int64_t)n;
}

uint64_t ckh__sf_seek(const struct sf_data *dt, uint64_t off, bool hole)
{
    if (off >= dt->size)
        return dt->size;
    uint32_t k = ext_first_after(dt, off);
    if (!hole)
        return k < dt->n ? (dt->ext[k].off > off ? dt->ext[k].off : off) : dt->size;
    /* Inside data: the hole starts where a run of touching extents ends. */
    if (k >= dt->n || dt->ext[k].off > off)
        return off;
    uint64_t end = dt->ext[k].off + dt->ext[k].len;
    while (++k < dt->n && dt->ext[k].off == end)
        end += dt->ext[k].len;
    return end < dt->size ? end : dt->size;
}

/* Cheap check: no extent reaches past the size (the last one ends first). */
static bool data_within_size(const struct sf_data *dt)
{
    return dt->n == 0 || dt->ext[dt->n - 1].off + dt->ext[dt->n - 1].len <= dt->size;
}

#ifdef CKH_SLOW_ASSERTS
/* Slow check: extents sorted by offset, disjoint, non-empty, within size. */
static bool data_ok(const struct sf_data *dt)
{
    for (uint32_t i = 0; i < dt->n; i++) {
        const struct sf_ext *e = &dt->ext[i];
        if (e->len == 0 || (i > 0 && dt->ext[i - 1].off + dt->ext[i - 1].len > e->off))
            return false;
    }
    return data_within_size(dt);
}
#endif

static void data_set_size(struct ckh_simfs *d, struct sf_inode *ino, int w, uint64_t size)
{
    if (w == SF_LIVE && ino->counted)
        d->used_bytes = d->used_bytes - ino->data[w].size + size;
    ino->data[w].size = size;
}

static inline __attribute__((always_inline)) int data_write(struct ckh_simfs *d, struct sf_inode *ino, int w, uint64_t off,
                      uint64_t len, const struct sf_src *src)
{
    struct sf_ext nx = {.off = off, .len = len, .src = *src};
    int rc = ext_replace(d, &ino->data[w], off, off + len, &nx);
    if (rc == 0 && off + len > ino->data[w].size)
        data_set_size(d, ino, w, off + len);
    CKH_ASSERT(rc != 0 || data_within_size(&ino->data[w]));
    CKH_ASSERT_SLOW(rc != 0 || data_ok(&ino->data[w]));
    return rc;
}

static int data_trunc(struct ckh_simfs *d, struct sf_inode *ino, int w, uint64_t len)
{
    int rc = ext_replace(d, &ino->data[w], len, UINT64_MAX, NULL);
    if (rc == 0)
        data_set_size(d, ino, w, len);
    CKH_ASSERT(rc != 0 || data_within_size(&ino->data[w]));
    CKH_ASSERT_SLOW(rc != 0 || data_ok(&ino->data[w]));
    return rc;
}

/* ------------------------------------------------------------- directories */

/* Index of name in dir, or of where it would go (*found false). */
static uint32_t dir_index(const struct sf_dir *dir, const char *name, bool *found)
{
    uint32_t lo = 0, hi = dir->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(dir->v[mid].name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

struct sf_dent *ckh__sf_dir_find(struct sf_dir *dir, const char *name)
{
    bool found;
    uint32_t i = dir_index(dir, name, &found);
    return found ? &dir->v[i] : NULL;
}

struct sf_inode *ckh__sf_lookup(struct sf_inode *dir, int which, const char *name)
{
    if (dir->type != CKH_FT_DIR)
        return NULL;
    struct sf_dent *e = ckh__sf_dir_find(&dir->dir[which], name);
    return e ? e->ino : NULL;
}

bool ckh__sf_dir_contains(struct sf_inode *top, int which, const struct sf_inode *x)
{
    if (top->type != CKH_FT_DIR)
        return false;
    const struct sf_dir *dir = &top->dir[which];
    for (uint32_t i = 0; i < dir->n; i++) {
        struct sf_inode *c = dir->v[i].ino;
        if (!c)
            continue;
        if (c == x || (c->type == CKH_FT_DIR && ckh__sf_dir_contains(c, which, x)))
            return true;
    }
    return false;
}

/* Points dir/name at ino in copy w (replacing what was there). */
int ckh__sf_ent_set(struct ckh_simfs *d, struct sf_inode *dirino, int w, const char *name,
                   struct sf_inode *ino, uint64_t seq)
{
    struct sf_dir *dir = &dirino->dir[w];
    bool found;
    uint32_t i = dir_index(dir, name, &found);
    if (found) {
        struct sf_inode *old = dir->v[i].ino;
        dir->v[i].seq = seq;
        if (old == ino)
            return 0;
        dir->v[i].ino = ino;
        ino->links[w]++;
        ckh__sf_inode_account(d, ino);
        if (old) {
            old->links[w]--;
            ckh__sf_inode_maybe_free(d, old);
        } else {
            dir->nlive++;
        }
        return 0;
    }
    if (dir->n == dir->cap) {
        uint32_t cap = dir->cap ? dir->cap * 2 : 4;
        struct sf_dent *v = sf_grow(d, dir->v, dir->cap, cap, sizeof(*v));
        if (!v)
            return CKH_ENOMEM;
        dir->v = v;
        dir->cap = cap;
    }
    char *nm = ckh__sf_strdup(d, name);
    if (!nm)
        return CKH_ENOMEM;
    memmove(&dir->v[i + 1], &dir->v[i], (dir->n - i) * sizeof(dir->v[0]));
    dir->v[i] = (struct sf_dent){.name = nm, .ino = ino, .seq = seq};
    dir->n++;
    dir->nlive++;
    ino->links[w]++;
    ckh__sf_inode_account(d, ino);
    return 0;
}

/* Removes dir/name from copy w when it points at expect. In the live copy
 * with seq != 0 the name stays as a whiteout carrying seq (S3). */
static void ent_remove(struct ckh_simfs *d, struct sf_inode *dirino, int w, const char *name,
                       struct sf_inode *expect, uint64_t seq)
{
    struct sf_dir *dir = &dirino->dir[w];
    bool found;
    uint32_t i = dir_index(dir, name, &found);
    if (!found || dir->v[i].ino != expect || !expect)
        return;
    if (w == SF_LIVE && seq) {
        dir->v[i].ino = NULL;
        dir->v[i].seq = seq;
    } else {
        ckh__sf_strfree(d, dir->v[i].name);
        memmove(&dir->v[i], &dir->v[i + 1], (dir->n - i - 1) * sizeof(dir->v[0]));
        dir->n--;
    }
    dir->nlive--;
    expect->links[w]--;
    ckh__sf_inode_maybe_free(d, expect);
}

/* Drops every entry of copy w of dirino (children lose a link). */
void ckh__sf_dir_clear(struct ckh_simfs *d, struct sf_inode *dirino, int w, bool free_children)
{
    struct sf_dir *dir = &dirino->dir[w];
    for (uint32_t i = 0; i < dir->n; i++) {
        struct sf_inode *c = dir->v[i].ino;
        ckh__sf_strfree(d, dir->v[i].name);
        if (c) {
            c->links[w]--;
            if (free_children)
                ckh__sf_inode_maybe_free(d, c);
        }
    }
    ckh__sf_free(d, dir->v, dir->cap * sizeof(dir->v[0]));
    dir->v = NULL;
    dir->n = dir->cap = dir->nlive = 0;
}

/* ------------------------------------------------------------------ inodes */

static bool seq_pending(const struct ckh_simfs *d, uint64_t seq);

/* Removes whiteouts whose removal is no longer pending. */
static void dir_purge_whiteouts(struct ckh_simfs *d, struct sf_inode *dirino)
{
    struct sf_dir *dir = &dirino->dir[SF_LIVE];
    uint32_t j = 0;
    for (uint32_t i = 0; i < dir->n; i++) {
        if (!dir->v[i].ino && !seq_pending(d, dir->v[i].seq)) {
            ckh__sf_strfree(d, dir->v[i].name);
            continue;
        }
        dir->v[j++] = dir->v[i];
    }
    dir->n = j;
}

static void inode_table_compact(struct ckh_simfs *d)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < d->ninodes; i++) {
        if (!d->inodes[i])
            continue;
        d->inodes[i]->slot = j;
        d->inodes[j++] = d->inodes[i];
    }
    d->ninodes = j;
    d->ifree = 0;
}

struct sf_inode *ckh__sf_inode_new(struct ckh_simfs *d, enum ckh_ftype type)
{
    if (d->ifree > 16 && d->ifree > d->ninodes / 2)
        inode_table_compact(d);
    if (d->ninodes == d->icap) {
        uint32_t cap = d->icap ? d->icap * 2 : 16;
        struct sf_inode **v = sf_grow(d, d->inodes, d->icap, cap, sizeof(*v));
        if (!v)
            return NULL;
        d->inodes = v;
        d->icap = cap;
    }
    struct sf_inode *ino = ckh__sf_malloc(d, sizeof(*ino));
    if (!ino)
        return NULL;
    ino->ino = d->next_ino++;
    ino->type = type;
    ino->slot = d->ninodes;
    d->inodes[d->ninodes++] = ino;
    return ino;
}

/* Frees an inode's own memory; children keep their counts untouched. */
static void inode_free_raw(struct ckh_simfs *d, struct sf_inode *ino)
{
    for (int w = 0; w < 2; w++) {
        ext_clear(d, &ino->data[w]);
        struct sf_dir *dir = &ino->dir[w];
        for (uint32_t i = 0; i < dir->n; i++)
            ckh__sf_strfree(d, dir->v[i].name);
        ckh__sf_free(d, dir->v, dir->cap * sizeof(dir->v[0]));
    }
    ckh__sf_strfree(d, ino->target);
    ckh__sf_strfree(d, ino->hint);
    d->inodes[ino->slot] = NULL;
    d->ifree++;
    ckh__sf_free(d, ino, sizeof(*ino));
}

void ckh__sf_inode_account(struct ckh_simfs *d, struct sf_inode *ino)
{
    bool want = ino->links[SF_LIVE] || ino->opens;
    if (want == ino->counted || d->gc_hold)
        return;
    uint64_t size = ino->data[SF_LIVE].size;
    d->used_bytes = want ? d->used_bytes + size : d->used_bytes - size;
    ino->counted = want;
}

void ckh__sf_inode_maybe_free(struct ckh_simfs *d, struct sf_inode *ino)
{
    if (ino)
        ckh__sf_inode_account(d, ino);
    if (!ino || d->gc_hold || ino->links[0] || ino->links[1] || ino->opens || ino->oprefs)
        return;
    if (ino->type == CKH_FT_FILE)
        data_set_size(d, ino, SF_LIVE, 0);
    for (int w = 0; w < 2; w++)
        ckh__sf_dir_clear(d, ino, w, true);
    inode_free_raw(d, ino);
}

void ckh__sf_inode_set_hint(struct ckh_simfs *d, struct sf_inode *ino, const char *path)
{
    if (ino->hint && strcmp(ino->hint, path) == 0)
        return;
    char *h = ckh__sf_strdup(d, path);
    if (!h)
        return;
    ckh__sf_strfree(d, ino->hint);
    ino->hint = h;
}

/* ----------------------------------------------------------- pending table */

static size_t pv_find(const struct ckh_simfs *d, uint64_t seq)
{
    size_t lo = 0, hi = d->pn;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->pv[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->pn && d->pv[lo].seq == seq ? lo : SIZE_MAX;
}

struct sf_op *ckh__sf_op_by_seq(const struct ckh_simfs *d, uint64_t seq)
{
    if (!seq)
        return NULL;
    size_t i = pv_find(d, seq);
    return i == SIZE_MAX ? NULL : d->pv[i].op;
}

static bool seq_pending(const struct ckh_simfs *d, uint64_t seq)
{
    return ckh__sf_op_by_seq(d, seq) != NULL;
}

void ckh__sf_pv_compact(struct ckh_simfs *d)
{
    if (!d->ptomb)
        return;
    size_t j = 0;
    for (size_t i = 0; i < d->pn; i++)
        if (d->pv[i].op)
            d->pv[j++] = d->pv[i];
    d->pn = j;
    d->ptomb = 0;
}

bool ckh__sf_op_is_data(const struct sf_op *op)
{
    return op->k == SF_OP_WRITE || op->k == SF_OP_TRUNC;
}

static void op_ref_inode(struct sf_inode *ino)
{
    if (ino)
        ino->oprefs++;
}

static void op_unref_inode(struct ckh_simfs *d, struct sf_inode *ino)
{
    if (ino) {
        ino->oprefs--;
        ckh__sf_inode_maybe_free(d, ino);
    }
}

/* Creates a pending op (seq assigned, appended to the table). */
static struct sf_op *op_new(struct ckh_simfs *d, enum sf_opk k, int node, int ckind)
{
    if (d->pn == d->pcap) {
        size_t cap = d->pcap ? d->pcap * 2 : 64;
        struct sf_pend *v = sf_grow(d, d->pv, d->pcap, cap, sizeof(*v));
        if (!v)
            return NULL;
        d->pv = v;
        d->pcap = cap;
    }
    struct sf_op *op = ckh__sf_malloc(d, sizeof(*op));
    if (!op)
        return NULL;
    op->seq = ++d->next_seq;
    CKH_ASSERT(d->pn == 0 || d->pv[d->pn - 1].seq < op->seq); /* issue order */
    op->node = node;
    op->k = (uint8_t)k;
    op->ckind = (uint8_t)ckind;
    d->pv[d->pn++] = (struct sf_pend){.seq = op->seq, .op = op};
    return op;
}

/* Removes op from the table and frees it (the caller applied or dropped it). */
void ckh__sf_op_retire(struct ckh_simfs *d, struct sf_op *op)
{
    size_t i = pv_find(d, op->seq);
    if (i != SIZE_MAX && d->pv[i].op == op) {
        d->pv[i].op = NULL;
        d->ptomb++;
    }
    struct sf_inode *ino = op->ino;
    if (ckh__sf_op_is_data(op)) {
        if (op->iprev)
            op->iprev->inext = op->inext;
        else
            ino->ops_head = op->inext;
        if (op->inext)
            op->inext->iprev = op->iprev;
        else
            ino->ops_tail = op->iprev;
    }
    if (ino && ino->last_op == op)
        ino->last_op = NULL;
    if (ino && op->k == SF_OP_LINK && ino->create_seq == op->seq)
        ino->create_seq = 0;
    ckh__sf_buf_unref(d, op->src.buf);
    ckh__sf_strfree(d, op->path);
    ckh__sf_strfree(d, op->path2);
    struct sf_inode *dir = op->dir, *dir2 = op->dir2;
    ckh__sf_free(d, op, sizeof(*op));
    op_unref_inode(d, ino);
    op_unref_inode(d, dir);
    op_unref_inode(d, dir2);
}

static uint64_t pending_or_zero(const struct ckh_simfs *d, uint64_t seq)
{
    return seq_pending(d, seq) ? seq : 0;
}

static uint64_t name_seq(const struct ckh_simfs *d, struct sf_inode *dir, const char *name)
{
    struct sf_dent *e = ckh__sf_dir_find(&dir->dir[SF_LIVE], name);
    return e ? pending_or_zero(d, e->seq) : 0;
}

static uint32_t op_sectors(const struct ckh_simfs *d, const struct sf_op *op)
{
    if (op->k != SF_OP_WRITE || op->len == 0)
        return 0;
    uint64_t s = d->cfg.sector_bytes;
    uint64_t n = (op->off + op->len - 1) / s - op->off / s + 1;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* --------------------------------------------------------- applying ops */

/* Applies op to copy w; choice APPLY or a torn kind (S5). */
int ckh__sf_apply_op(struct ckh_simfs *d, struct sf_op *op, int w, enum ckh_crash_choice choice)
{
    /* S3: an op depends only on ops issued before it. */
    CKH_ASSERT(op->dep[0] < op->seq && op->dep[1] < op->seq && op->dep[2] < op->seq);
    uint64_t seq = w == SF_LIVE ? op->seq : 0;
    switch (op->k) {
    case SF_OP_WRITE:
        if (choice == CKH_CRASH_APPLY)
            return data_write(d, op->ino, w, op->off, op->len, &op->src);
        {
            uint64_t s = d->cfg.sector_bytes;
            uint64_t first = op->off / s;
            uint64_t k = ckh_mix64(d->garbage_seed ^ ckh_mix64(op->seq)) % op_sectors(d, op);
            uint64_t cut = (first + k) * s;
            if (cut < op->off)
                cut = op->off;
            uint64_t end = op->off + op->len;
            int rc = 0;
            if (cut > op->off)
                rc = data_write(d, op->ino, w, op->off, cut - op->off, &op->src);
            if (rc == 0 && choice == CKH_CRASH_TORN_GARBAGE) {
                struct sf_src g = {.gen = {.seed = d->garbage_seed, .stream = op->seq, .offset = 0}};
                rc = data_write(d, op->ino, w, cut, end - cut, &g);
            } else if (rc == 0) {
                rc = ext_replace(d, &op->ino->data[w], cut, end, NULL);
                if (rc == 0 && end > op->ino->data[w].size)
                    data_set_size(d, op->ino, w, end);
            }
            return rc;
        }
    case SF_OP_TRUNC:
        return data_trunc(d, op->ino, w, op->len);
    case SF_OP_LINK:
        return ckh__sf_ent_set(d, op->dir, w, op->name, op->ino, seq);
    case SF_OP_UNLINK:
        ent_remove(d, op->dir, w, op->name, op->ino, seq);
        return 0;
    case SF_OP_RENAME:
        if (op->ino->type == CKH_FT_DIR &&
            (op->dir2 == op->ino || ckh__sf_dir_contains(op->ino, w, op->dir2)))
            return 0; /* would make a cycle in this copy: the move cannot land */
        ent_remove(d, op->dir, w, op->name, op->ino, seq);
        return ckh__sf_ent_set(d, op->dir2, w, op->name2, op->ino, seq);
    }
    return CKH_EINTERNAL;
}

/* ------------------------------------------------------------ issuing ops */

static int capacity_check(struct ckh_simfs *d, struct sf_inode *ino, uint64_t new_size)
{
    uint64_t cur = ino->data[SF_LIVE].size;
    if (d->cfg.capacity_bytes && new_size > cur &&
        d->used_bytes + (new_size - cur) > d->cfg.capacity_bytes)
        return ckh__sf_set_err(d, -ENOSPC, "disk %s full: %llu of %llu bytes used", d->name,
                               (unsigned long long)d->used_bytes,
                               (unsigned long long)d->cfg.capacity_bytes);
    return 0;
}

static void data_op_append(struct sf_inode *ino, struct sf_op *op)
{
    CKH_ASSERT(ino->ops_tail == NULL || ino->ops_tail->seq < op->seq);
    op->iprev = ino->ops_tail;
    if (ino->ops_tail)
        ino->ops_tail->inext = op;
    else
        ino->ops_head = op;
    ino->ops_tail = op;
    ino->last_op = op;
}

int ckh__sf_issue_write(struct ckh_simfs *d, int node, struct sf_inode *ino, uint64_t off,
                        uint64_t len, const struct sf_src *src)
{
    if (len == 0)
        return 0;
    uint64_t end = off + len;
    int rc = capacity_check(d, ino, end > ino->data[SF_LIVE].size ? end : 0);
    if (rc)
        return rc;
    struct sf_op *t = ino->ops_tail;
    if (t && t == ino->last_op && t->k == SF_OP_WRITE && t->node == node && !t->src.buf &&
        !src->buf && t->off + t->len == off && t->src.gen.seed == src->gen.seed &&
        t->src.gen.stream == src->gen.stream && t->src.gen.offset + t->len == src->gen.offset) {
        rc = data_write(d, ino, SF_LIVE, off, len, src);
        if (rc == 0)
            t->len += len;
        return rc;
    }
    struct sf_op *op = op_new(d, SF_OP_WRITE, node, CKH_OP_PWRITE);
    if (!op)
        return CKH_ENOMEM;
    op->ino = ino;
    op_ref_inode(ino);
    op->off = off;
    op->len = len;
    op->src = *src;
    buf_ref(src->buf);
    op->dep[0] = pending_or_zero(d, ino->create_seq);
    data_op_append(ino, op);
    return data_write(d, ino, SF_LIVE, off, len, src);
}

int ckh__sf_issue_trunc(struct ckh_simfs *d, int node, struct sf_inode *ino, uint64_t len)
{
    int rc = capacity_check(d, ino, len);
    if (rc)
        return rc;
    struct sf_op *op = op_new(d, SF_OP_TRUNC, node, CKH_OP_FTRUNCATE);
    if (!op)
        return CKH_ENOMEM;
    op->ino = ino;
    op_ref_inode(ino);
    op->len = len;
    op->dep[0] = pending_or_zero(d, ino->create_seq);
    data_op_append(ino, op);
    return data_trunc(d, ino, SF_LIVE, len);
}

/* Fills path and name of an entry op. */
static int op_set_path(struct ckh_simfs *d, const char *path, char **out, const char **name)
{
    *out = ckh__sf_strdup(d, path);
    if (!*out)
        return CKH_ENOMEM;
    *name = strrchr(*out, '/') + 1;
    return 0;
}

/* A pending entry op on (dir, path) for ino: references taken, path
 * recorded, and ordered after the previous pending op on that name. */
static int entry_op_new(struct ckh_simfs *d, enum sf_opk kind, int node, int ckind, struct sf_inode *dir,
                        const char *path, struct sf_inode *ino, struct sf_op **out)
{
    struct sf_op *op = op_new(d, kind, node, ckind);
    if (!op)
        return CKH_ENOMEM;
    op->ino = ino;
    op->dir = dir;
    op_ref_inode(ino);
    op_ref_inode(dir);
    int rc = op_set_path(d, path, &op->path, &op->name);
    if (rc) {
        ckh__sf_op_retire(d, op);
        ckh__sf_pv_compact(d);
        return rc;
    }
    op->dep[0] = name_seq(d, dir, op->name);
    *out = op;
    return 0;
}

int ckh__sf_issue_link(struct ckh_simfs *d, int node, int ckind, struct sf_inode *dir,
                       const char *path, struct sf_inode *ino)
{
    struct sf_op *op;
    int rc = entry_op_new(d, SF_OP_LINK, node, ckind, dir, path, ino, &op);
    if (rc)
        return rc;
    ino->create_seq = op->seq;
    ino->last_op = op;
    ckh__sf_inode_set_hint(d, ino, path);
    return ckh__sf_apply_op(d, op, SF_LIVE, CKH_CRASH_APPLY);
}

int ckh__sf_issue_unlink(struct ckh_simfs *d, int node, int ckind, struct sf_inode *dir,
                         const char *path, struct sf_inode *ino)
{
    struct sf_op *op;
    int rc = entry_op_new(d, SF_OP_UNLINK, node, ckind, dir, path, ino, &op);
    if (rc)
        return rc;
    op->dep[1] = pending_or_zero(d, ino->create_seq);
    ino->last_op = op;
    return ckh__sf_apply_op(d, op, SF_LIVE, CKH_CRASH_APPLY);
}

int ckh__sf_issue_rename(struct ckh_simfs *d, int node, struct sf_inode *dir, const char *path,
                         struct sf_inode *dir2, const char *path2, struct sf_inode *ino)
{
    struct sf_op *op = op_new(d, SF_OP_RENAME, node, CKH_OP_RENAME);
    if (!op)
        return CKH_ENOMEM;
    op->ino = ino;
    op->dir = dir;
    op->dir2 = dir2;
    op_ref_inode(ino);
    op_ref_inode(dir);
    op_ref_inode(dir2);
    int rc = op_set_path(d, path, &op->path, &op->name);
    if (rc == 0)
        rc = op_set_path(d, path2, &op->path2, &op->name2);
    if (rc) {
        ckh__sf_op_retire(d, op);
        ckh__sf_pv_compact(d);
        return rc;
    }
    op->dep[0] = name_seq(d, dir, op->name);
    op->dep[1] = name_seq(d, dir2, op->name2);
    op->dep[2] = pending_or_zero(d, ino->create_seq);
    ino->last_op = op;
    ckh__sf_inode_set_hint(d, ino, path2);
    return ckh__sf_apply_op(d, op, SF_LIVE, CKH_CRASH_APPLY);
}

/* ------------------------------------------------------------- durability */

static void commit(struct ckh_simfs *d, struct sf_op *op)
{
    ckh__sf_apply_op(d, op, SF_DUR, CKH_CRASH_APPLY);
    ckh__sf_op_retire(d, op);
}

/* Commits one entry op; under EXT4_ORDERED first the node's earlier data
 * writes to its inode (S4'). */
static void commit_entry(struct ckh_simfs *d, struct sf_op *op)
{
    if (d->cfg.model == CKH_CRASH_EXT4_ORDERED) {
        struct sf_op *x = op->ino->ops_head;
        while (x && x->seq < op->seq) {
            struct sf_op *next = x->inext;
            if (ckh__sf_same_cache(d, x->node, op->node))
                commit(d, x);
            x = next;
        }
    }
    commit(d, op);
}

/* Commits an entry op after its pending dependencies (S3). */
static void commit_entry_deps(struct ckh_simfs *d, struct sf_op *op)
{
    uint64_t stack_small[32];
    uint64_t *st = stack_small;
    size_t n = 0, cap = 32;
    st[n++] = op->seq;
    while (n) {
        struct sf_op *top = ckh__sf_op_by_seq(d, st[n - 1]);
        if (!top) {
            n--;
            continue;
        }
        struct sf_op *dep = NULL;
        for (int i = 0; i < 3 && !dep; i++)
            dep = ckh__sf_op_by_seq(d, top->dep[i]);
        if (!dep) {
            n--;
            commit_entry(d, top);
            continue;
        }
        if (n == cap) {
            size_t ncap = cap * 2;
            uint64_t *nst = malloc(ncap * sizeof(*nst));
            if (!nst) { /* out of memory: commit without the rest of the chain */
                d->host_oom = true;
                n--;
                commit_entry(d, top);
                continue;
            }
            memcpy(nst, st, n * sizeof(*st));
            if (st != stack_small)
                free(st);
            st = nst;
            cap = ncap;
        }
        st[n++] = dep->seq;
    }
    if (st != stack_small)
        free(st);
}

/* EXT4_ORDERED: commits every pending entry op of node, in order. */
static void commit_journal(struct ckh_simfs *d, int node)
{
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (op && !ckh__sf_op_is_data(op) && ckh__sf_same_cache(d, op->node, node))
            commit_entry_deps(d, op);
    }
}

#ifdef CKH_SLOW_ASSERTS
/* Slow check of S4: whether node's cache still has pending data ops on ino. */
static bool node_has_data_ops(const struct ckh_simfs *d, const struct sf_inode *ino, int node)
{
    for (const struct sf_op *x = ino->ops_head; x; x = x->inext)
        if (ckh__sf_same_cache(d, x->node, node))
            return true;
    return false;
}

/* Slow check of S4 (POSIX_WEAK): whether node's cache still has a pending
 * link or unlink in dir. */
static bool node_has_entry_ops(const struct ckh_simfs *d, const struct sf_inode *dir, int node)
{
    for (size_t i = 0; i < d->pn; i++) {
        const struct sf_op *op = d->pv[i].op;
        if (op && ckh__sf_same_cache(d, op->node, node) && op->dir == dir &&
            (op->k == SF_OP_LINK || op->k == SF_OP_UNLINK))
            return true;
    }
    return false;
}
#endif

void ckh__sf_fsync(struct ckh_simfs *d, int node, struct sf_inode *ino)
{
    struct sf_op *x = ino->ops_head;
    while (x) {
        struct sf_op *next = x->inext;
        if (ckh__sf_same_cache(d, x->node, node))
            commit(d, x);
        x = next;
    }
    if (d->cfg.model == CKH_CRASH_EXT4_ORDERED)
        commit_journal(d, node);
    ckh__sf_pv_compact(d);
    CKH_ASSERT_SLOW(!node_has_data_ops(d, ino, node));
}

void ckh__sf_fsync_dir(struct ckh_simfs *d, int node, struct sf_inode *dir)
{
    if (d->cfg.model == CKH_CRASH_EXT4_ORDERED) {
        commit_journal(d, node);
    } else {
        for (size_t i = 0; i < d->pn; i++) {
            struct sf_op *op = d->pv[i].op;
            if (!op || ckh__sf_op_is_data(op) || !ckh__sf_same_cache(d, op->node, node))
                continue;
            if (op->k == SF_OP_RENAME) {
                if (op->dir == dir)
                    op->synced |= 1;
                if (op->dir2 == dir)
                    op->synced |= 2;
                if (op->synced == 3)
                    commit_entry_deps(d, op);
            } else if (op->dir == dir) {
                commit_entry_deps(d, op);
            }
        }
    }
    dir_purge_whiteouts(d, dir);
    ckh__sf_pv_compact(d);
    CKH_ASSERT_SLOW(d->cfg.model != CKH_CRASH_POSIX_WEAK || !node_has_entry_ops(d, dir, node));
}

void ckh__sf_fsync_lost(struct ckh_simfs *d, int node, struct sf_inode *ino)
{
    struct sf_op *x = ino->ops_head;
    while (x) {
        struct sf_op *next = x->inext;
        if (ckh__sf_same_cache(d, x->node, node))
            ckh__sf_op_retire(d, x);
        x = next;
    }
    ckh__sf_pv_compact(d);
}

/* ------------------------------------------------------------- public API */

int ckh_simfs_crash_uniform(struct ckh_simfs *d, int node, enum ckh_crash_choice choice)
{
    if (d == NULL || (choice != CKH_CRASH_APPLY && choice != CKH_CRASH_DROP))
        return CKH_EINVAL;
    size_t n = 0;
    for (size_t i = 0; i < d->pn; i++)
        if (ckh__sf_op_affected(d, d->pv[i].op, node))
            n++;
    enum ckh_crash_choice *v = malloc((n ? n : 1) * sizeof *v);
    if (v == NULL)
        return CKH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        v[i] = choice;
    int rc = ckh_simfs_crash(d, node, v, n);
    free(v);
    return rc;
}

int ckh_simfs_create(const struct ckh_simfs_config *cfg, struct ckh_simfs **out)
{
    if (out)
        *out = NULL;
    if (!cfg || !out)
        return CKH_EINVAL;
    if (cfg->sector_bytes != 0 && cfg->sector_bytes != 512 && cfg->sector_bytes != 4096)
        return CKH_EINVAL;
    if (cfg->model != CKH_CRASH_POSIX_WEAK && cfg->model != CKH_CRASH_EXT4_ORDERED)
        return CKH_EINVAL;
    if (cfg->sharing != CKH_SHARING_NETWORK && cfg->sharing != CKH_SHARING_MACHINE)
        return CKH_EINVAL;
    struct ckh_simfs *d = calloc(1, sizeof(*d));
    if (!d)
        return CKH_ENOMEM;
    d->cfg = *cfg;
    if (!d->cfg.sector_bytes)
        d->cfg.sector_bytes = 512;
    d->name = ckh__sf_strdup(d, cfg->name ? cfg->name : "disk");
    if (!d->name)
        goto out_free;
    d->cfg.name = d->name;
    if (cfg->store_dir) {
        int rc = ckh__sf_store_new(cfg->store_dir, &d->store);
        if (rc) {
            ckh_simfs_destroy(d);
            return rc;
        }
    }
    d->cfg.store_dir = ckh__sf_store_dir(d->store);
    d->next_ino = 1;
    ckh_rng_seed(&d->rng, cfg->seed);
    d->garbage_seed = ckh_seed_derive(cfg->seed, "simfs.garbage");
    d->root = ckh__sf_inode_new(d, CKH_FT_DIR);
    if (!d->root)
        goto out_free;
    d->root->opens = 1; /* pinned */
    ckh__sf_inode_set_hint(d, d->root, "/");
    d->direct_mount = (struct sf_mount){.prefix = "/", .plen = 1, .disk = d};
    d->direct = (struct sf_view){.base = {.ops = &ckh__sf_view_ops},
                                 .node = -1,
                                 .mounts = &d->direct_mount,
                                 .nmounts = 1,
                                 .direct = true};
    *out = d;
    return 0;
out_free:
    ckh_simfs_destroy(d);
    return CKH_ENOMEM;
}

void ckh_simfs_destroy(struct ckh_simfs *d)
{
    if (!d)
        return;
    while (d->direct.files) {
        struct sf_file *f = d->direct.files;
        d->direct.files = f->next;
        free(f->vpath);
        free(f->dpath);
        free(f);
    }
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (!op)
            continue;
        ckh__sf_buf_unref(d, op->src.buf);
        ckh__sf_strfree(d, op->path);
        ckh__sf_strfree(d, op->path2);
        ckh__sf_free(d, op, sizeof(*op));
    }
    free(d->pv);
    for (uint32_t s = 0; s < d->ninodes; s++)
        if (d->inodes[s])
            inode_free_raw(d, d->inodes[s]);
    free(d->inodes);
    for (size_t i = 0; i < d->nfaults; i++)
        free(d->faults[i].path);
    free(d->faults);
    ckh__sf_buf_unref(d, d->tail_buf);
    ckh__sf_store_unref(d->store);
    ckh__sf_strfree(d, d->name);
    free(d);
}

struct ckh_fs *ckh_simfs_fs(struct ckh_simfs *d)
{
    return d ? &d->direct.base : NULL;
}

const char *ckh_simfs_errmsg(const struct ckh_simfs *d)
{
    return d ? d->errmsg : "no disk";
}

size_t ckh_simfs_pending_count(const struct ckh_simfs *d)
{
    return d ? d->pn - d->ptomb : 0;
}

int ckh_simfs_pending_get(const struct ckh_simfs *d, size_t i, struct ckh_simfs_pending_info *out)
{
    if (!d || !out || d->ptomb || i >= d->pn)
        return CKH_EINVAL;
    const struct sf_op *op = d->pv[i].op;
    *out = (struct ckh_simfs_pending_info){
        .seq = op->seq,
        .node = op->node,
        .kind = op->ckind,
        .path = op->path ? op->path : (op->ino->hint ? op->ino->hint : ""),
        .path2 = op->k == SF_OP_RENAME ? op->path2 : op->ino->target,
        .off = op->k == SF_OP_WRITE ? op->off : 0,
        .len = ckh__sf_op_is_data(op) ? op->len : 0,
        .sectors = op_sectors(d, op),
    };
    return 0;
}

enum ckh_simfs_sharing ckh_simfs_sharing(const struct ckh_simfs *d)
{
    return d ? d->cfg.sharing : CKH_SHARING_NETWORK;
}

void ckh_simfs_sync_all(struct ckh_simfs *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->pn; i++)
        if (d->pv[i].op)
            commit(d, d->pv[i].op);
    ckh__sf_pv_compact(d);
    for (uint32_t s = 0; s < d->ninodes; s++)
        if (d->inodes[s] && d->inodes[s]->type == CKH_FT_DIR)
            dir_purge_whiteouts(d, d->inodes[s]);
}

/* Resolves a disk path at rest to a regular file (following symlinks). */
static int rest_file(struct ckh_simfs *d, const char *path, struct sf_inode **out)
{
    struct sf_res r;
    int rc = ckh__sf_resolve(&d->direct, path, true, &r);
    if (rc)
        return ckh__sf_set_err(d, rc, "%s: cannot resolve", path ? path : "(null)");
    if (!r.ino || r.d != d)
        return ckh__sf_set_err(d, -ENOENT, "%s: no such file", path);
    if (r.ino->type != CKH_FT_FILE)
        return ckh__sf_set_err(d, -EISDIR, "%s: not a regular file", path);
    *out = r.ino;
    return 0;
}

int ckh_simfs_set_capacity(struct ckh_simfs *d, uint64_t capacity_bytes)
{
    if (d == NULL)
        return CKH_EINVAL;
    d->cfg.capacity_bytes = capacity_bytes;
    return 0;
}

int ckh_simfs_flip_bit(struct ckh_simfs *d, const char *path, uint64_t bit_off)
{
    if (!d)
        return CKH_EINVAL;
    struct sf_inode *ino;
    int rc = rest_file(d, path, &ino);
    if (rc)
        return rc;
    uint64_t byte_off = bit_off / 8;
    if (byte_off >= ino->data[SF_LIVE].size && byte_off >= ino->data[SF_DUR].size)
        return ckh__sf_set_err(d, CKH_EINVAL, "%s: bit %llu past the end", path,
                               (unsigned long long)bit_off);
    for (int w = 0; w < 2; w++) {
        struct sf_data *dt = &ino->data[w];
        if (byte_off >= dt->size)
            continue;
        unsigned char b;
        int64_t got = ckh__sf_read(dt, &b, 1, byte_off);
        if (got < 0)
            return ckh__sf_set_err(d, (int)got, "%s: cannot read byte %llu: %s", path,
                                   (unsigned long long)byte_off, ckh_strerror((int)got));
        b ^= (unsigned char)(1u << (bit_off % 8));
        struct sf_buf *nb = ckh__sf_buf_new(d, &b, 1);
        if (!nb)
            return CKH_ENOMEM;
        struct sf_ext nx = {.off = byte_off, .len = 1, .src = {.buf = nb}};
        rc = ext_replace(d, dt, byte_off, byte_off + 1, &nx);
        ckh__sf_buf_unref(d, nb);
        if (rc)
            return rc;
    }
    return 0;
}

int ckh_simfs_truncate_at_rest(struct ckh_simfs *d, const char *path, uint64_t len)
{
    if (!d)
        return CKH_EINVAL;
    struct sf_inode *ino;
    int rc = rest_file(d, path, &ino);
    for (int w = 0; rc == 0 && w < 2; w++)
        if (len < ino->data[w].size)
            rc = data_trunc(d, ino, w, len);
    return rc;
}

int ckh_simfs_zero_range(struct ckh_simfs *d, const char *path, uint64_t off, uint64_t len)
{
    if (!d || len > UINT64_MAX - off)
        return CKH_EINVAL;
    struct sf_inode *ino;
    int rc = rest_file(d, path, &ino);
    for (int w = 0; rc == 0 && w < 2; w++) {
        uint64_t end = off + len < ino->data[w].size ? off + len : ino->data[w].size;
        if (off < end)
            rc = ext_replace(d, &ino->data[w], off, end, NULL);
    }
    return rc;
}

/* Finds dir/name of a disk path in the durable copy (no symlinks). */
static struct sf_inode *dur_lookup(struct ckh_simfs *d, const char *path, struct sf_inode **dir,
                                   const char **name)
{
    struct sf_inode *cur = d->root, *parent = NULL;
    const char *p = path + 1, *last = p;
    char comp[CKH_PATH_MAX + 1];
    while (*p && cur) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        memcpy(comp, p, n);
        comp[n] = '\0';
        parent = cur;
        last = p;
        cur = ckh__sf_lookup(cur, SF_DUR, comp);
        p = slash ? slash + 1 : p + n;
    }
    *dir = parent;
    *name = last;
    return cur;
}

/* Drops, depth first, every entry of copy w below directory dir. */
static void tree_clear(struct ckh_simfs *d, struct sf_inode *dir, int w)
{
    if (!dir || dir->type != CKH_FT_DIR)
        return;
    struct sf_dir *dd = &dir->dir[w];
    for (uint32_t i = 0; i < dd->n; i++) {
        struct sf_inode *c = dd->v[i].ino;
        if (c && c != dir && c->type == CKH_FT_DIR)
            tree_clear(d, c, w);
    }
    ckh__sf_dir_clear(d, dir, w, true);
}

int ckh_simfs_remove_tree(struct ckh_simfs *d, const char *path)
{
    if (!d)
        return CKH_EINVAL;
    int rc = ckh_path_check(path);
    if (rc)
        return ckh__sf_set_err(d, rc, "remove_tree: bad path");
    if (strcmp(path, "/") == 0)
        return ckh__sf_set_err(d, -EBUSY, "remove_tree: cannot remove the root");
    struct sf_res r;
    rc = ckh__sf_resolve(&d->direct, path, false, &r);
    struct sf_inode *live = rc == 0 && r.d == d ? r.ino : NULL;
    struct sf_inode *ddir, *dur;
    const char *dname;
    dur = dur_lookup(d, path, &ddir, &dname);
    if (!live && !dur)
        return ckh__sf_set_err(d, -ENOENT, "remove_tree: %s: no such entry", path);
    d->gc_hold = true;
    if (live)
        ent_remove(d, r.dir, SF_LIVE, r.name, live, 0);
    if (dur)
        ent_remove(d, ddir, SF_DUR, dname, dur, 0);
    /* Pending ops that would link the removed inodes again are void. */
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (op && (op->k == SF_OP_LINK || op->k == SF_OP_RENAME) &&
            (op->ino == live || op->ino == dur))
            ckh__sf_op_retire(d, op);
    }
    d->gc_hold = false;
    ckh__sf_pv_compact(d);
    /* Everything below is gone too: its files stop counting against the
     * capacity even while pending ops still refer to them. */
    tree_clear(d, live, SF_LIVE);
    tree_clear(d, dur, SF_DUR);
    ckh__sf_inode_maybe_free(d, live);
    if (dur != live)
        ckh__sf_inode_maybe_free(d, dur);
    return 0;
}

int ckh_simfs_fault_next(struct ckh_simfs *d, int kind, const char *path,
                         const struct ckh_fault_action *act)
{
    if (!d || !act || kind < -1 || kind >= CKH_OP__COUNT)
        return CKH_EINVAL;
    if (act->kind == CKH_FAULT_ERRNO ? act->err <= 0 : act->kind != CKH_FAULT_FSYNC_LOST)
        return ckh__sf_set_err(d, CKH_EINVAL, "fault_next: only ERRNO and FSYNC_LOST");
    if (path && ckh_path_check(path))
        return ckh__sf_set_err(d, CKH_EINVAL, "fault_next: bad path");
    struct sf_fault *v = realloc(d->faults, (d->nfaults + 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    d->faults = v;
    char *p = NULL;
    if (path && !(p = strdup(path)))
        return CKH_ENOMEM;
    d->faults[d->nfaults++] = (struct sf_fault){.kind = kind, .path = p, .act = *act};
    return 0;
}

int ckh_simfs_fail_next(struct ckh_simfs *d, int kind, const char *path, int err)
{
    struct ckh_fault_action act = {.kind = CKH_FAULT_ERRNO, .err = err};
    return ckh_simfs_fault_next(d, kind, path, &act);
}

void ckh__sf_fault_take(struct ckh_simfs *d, int kind, const char *dpath,
                        struct ckh_fault_action *act)
{
    for (size_t i = 0; i < d->nfaults; i++) {
        struct sf_fault *f = &d->faults[i];
        if (f->kind != -1 && f->kind != kind)
            continue;
        if (f->path && (!dpath || strcmp(f->path, dpath) != 0))
            continue;
        if (f->act.kind == CKH_FAULT_FSYNC_LOST && kind != CKH_OP_FSYNC &&
            kind != CKH_OP_FDATASYNC)
            continue;
        *act = f->act;
        free(f->path);
        memmove(f, f + 1, (d->nfaults - i - 1) * sizeof(*f));
        d->nfaults--;
        return;
    }
}

uint64_t ckh_simfs_used_bytes(const struct ckh_simfs *d)
{
    return d ? d->used_bytes : 0;
}

int ckh_simfs_space(const struct ckh_simfs *d, uint64_t *total_bytes, uint64_t *avail_bytes)
{
    if (!d || !total_bytes || !avail_bytes)
        return CKH_EINVAL;
    uint64_t total, avail;
    if (d->cfg.capacity_bytes) {
        total = d->cfg.capacity_bytes;
        avail = 0;
    } else if (d->store) {
        int rc = ckh__sf_store_space(d->store, &total, &avail);
        if (rc)
            return rc;
    } else {
        long pg = sysconf(_SC_PAGESIZE), all = sysconf(_SC_PHYS_PAGES), fr = sysconf(_SC_AVPHYS_PAGES);
        if (pg <= 0 || all <= 0 || fr < 0)
            return -EIO;
        total = (uint64_t)all * (uint64_t)pg;
        avail = (uint64_t)fr * (uint64_t)pg;
    }
    if (d->cfg.capacity_bytes)
        avail = d->used_bytes < total ? total - d->used_bytes : 0;
    *total_bytes = total;
    *avail_bytes = avail;
    return 0;
}

uint64_t ckh_simfs_heap_bytes(const struct ckh_simfs *d)
{
    return d ? d->heap_bytes + sizeof(*d) : 0;
}

bool ckh_simfs_host_out_of_memory(const struct ckh_simfs *d)
{
    return d && d->host_oom;
}

#define DIGEST_BLOCK 16384u /* bytes hashed at once; an all-zero block is left out */

static bool all_zero(const unsigned char *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Hashes a file's content by blocks: each block that is not all zeros,
 * with its index. Holes (no extent) are never read, so a 1 TiB sparse file
 * costs what its data costs; the value depends only on the bytes (a
 * written zero block and a hole hash alike). */
static uint64_t digest_data(const struct sf_data *dt, uint64_t h)
{
    h = ckh_hash64(h, &dt->size, sizeof(dt->size));
    unsigned char buf[DIGEST_BLOCK];
    uint64_t off = 0;
    while ((off = ckh__sf_seek(dt, off, false)) < dt->size) {
        uint64_t blk = off / DIGEST_BLOCK, end = ckh__sf_seek(dt, off, true);
        for (; blk * DIGEST_BLOCK < end; blk++) {
            int64_t n = ckh__sf_read(dt, buf, DIGEST_BLOCK, blk * DIGEST_BLOCK);
            if (n < 0) /* the store could not be read: no state equals this one */
                return ckh_hash64(h, &n, sizeof n);
            if (all_zero(buf, (size_t)n))
                continue;
            h = ckh_hash64(h, &blk, sizeof blk);
            h = ckh_hash64(h, buf, (size_t)n);
        }
        off = blk * DIGEST_BLOCK;
    }
    return h;
}

/* Hashes one inode of copy w into h (recursing into directories). */
static uint64_t digest_inode(const struct sf_inode *ino, int w, uint64_t h)
{
    uint32_t t = (uint32_t)ino->type;
    h = ckh_hash64(h, &t, sizeof(t));
    if (ino->type == CKH_FT_FILE) {
        h = digest_data(&ino->data[w], h);
    } else if (ino->type == CKH_FT_SYMLINK) {
        h = ckh_hash64(h, ino->target, strlen(ino->target));
    } else {
        const struct sf_dir *dir = &ino->dir[w];
        for (uint32_t i = 0; i < dir->n; i++) {
            if (!dir->v[i].ino)
                continue;
            h = ckh_hash64(h, dir->v[i].name, strlen(dir->v[i].name) + 1);
            h = digest_inode(dir->v[i].ino, w, h);
        }
        h = ckh_hash64(h, "/", 1);
    }
    return h;
}

uint64_t ckh_simfs_digest(const struct ckh_simfs *d, bool durable)
{
    return d ? digest_inode(d->root, durable ? SF_DUR : SF_LIVE, CKH_HASH_INIT) : 0;
}

/* ------------------------------------------------------ test-only entries */

void ckh__simfs_test_rewind_seq(struct ckh_simfs *d)
{
    if (d != NULL)
        d->next_seq = 0;
}

int64_t ckh__simfs_test_read(const struct ckh_simfs *d, const char *path, bool durable, void *buf,
                             size_t cap, uint64_t *ino)
{
    if (!d || !path || path[0] != '/' || (cap && !buf))
        return CKH_EINVAL;
    int w = durable ? SF_DUR : SF_LIVE;
    struct sf_inode *cur = d->root;
    char comp[CKH_PATH_MAX + 1];
    for (const char *p = path + 1; *p && cur;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n > CKH_PATH_MAX)
            return CKH_EINVAL;
        memcpy(comp, p, n);
        comp[n] = '\0';
        cur = ckh__sf_lookup(cur, w, comp);
        p = slash ? slash + 1 : p + n;
    }
    if (!cur)
        return -ENOENT;
    if (cur->type != CKH_FT_FILE)
        return -EISDIR;
    const struct sf_data *dt = &cur->data[w];
    int64_t got = cap ? ckh__sf_read(dt, buf, cap < dt->size ? cap : dt->size, 0) : 0;
    if (got < 0)
        return got;
    if (ino)
        *ino = cur->ino;
    return (int64_t)dt->size;
}

int ckh__simfs_test_set_size(struct ckh_simfs *d, const char *path, uint64_t size_bytes)
{
    struct sf_inode *ino;
    if (d == NULL)
        return CKH_EINVAL;
    int rc = rest_file(d, path, &ino);
    if (rc == 0)
        ino->data[SF_LIVE].size = size_bytes;
    return rc;
}
