/* Snapshots of a simulated disk: ckh_simfs_clone (include/ckh/simfs.h).
 *
 * SPECIFICATION (tests/test_explore.c, the clone's main user, cites the rules)
 *
 * C1. A clone is a new, independent disk with the same configuration,
 *     crash-choice stream, garbage seed, inode numbers, pending operations
 *     (same seqs, nodes, dependencies, sync marks) and both copies of every
 *     reachable inode. Whatever is done to one disk afterwards (ops,
 *     crashes, faults, destroy) never shows in the other, and the same
 *     crash choices give the same durable tree on both.
 * C2. Open handles are not cloned: the clone starts with none, so an inode
 *     that only a handle kept alive (unlinked, nothing pending on it) is
 *     not copied. Used bytes are recounted on that basis.
 * C3. Literal bytes (struct sf_buf) are shared, not copied: each extent or
 *     pending write of the clone takes a reference. A clone therefore costs
 *     O(inodes + extents + entries + pending ops), never O(bytes). Shared
 *     bytes count in the heap figure (ckh_simfs_heap_bytes) of the disk
 *     that made them, and leave the figure of whichever disk drops them
 *     last, so the figures of disks that share bytes are approximate.
 * C4. Injected faults (ckh_simfs_fault_next) still waiting are copied.
 *
 * Invariants (CKH_ASSERT): every inode an entry or a pending op refers to
 * is copied (C2 keeps what links or ops reach); the clone's pending table
 * is in seq order (its lookups are binary searches) and holds every live
 * op, each with its per-inode neighbours. CKH_ASSERT_SLOW: both trees of
 * the clone digest as the original's (C1).
 */
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "simfs_internal.h"

/* Copies one copy's extents, taking a reference on each literal buffer (C3). */
static int clone_data(struct ckh_simfs *n, struct sf_data *to, const struct sf_data *from)
{
    to->size = from->size;
    if (!from->n)
        return 0;
    to->ext = ckh__sf_malloc(n, from->n * sizeof(to->ext[0]));
    if (!to->ext)
        return CKH_ENOMEM;
    memcpy(to->ext, from->ext, from->n * sizeof(to->ext[0]));
    to->n = to->cap = from->n;
    for (uint32_t k = 0; k < to->n; k++)
        ckh__sf_buf_ref(to->ext[k].src.buf);
    return 0;
}

/* Copies one copy's entries; inode pointers are remapped by the caller. */
static int clone_dir(struct ckh_simfs *n, struct sf_dir *to, const struct sf_dir *from)
{
    to->nlive = from->nlive;
    if (!from->n)
        return 0;
    to->v = ckh__sf_malloc(n, from->n * sizeof(to->v[0]));
    if (!to->v)
        return CKH_ENOMEM;
    to->cap = from->n;
    for (uint32_t i = 0; i < from->n; i++) {
        to->v[i] = from->v[i];
        to->v[i].name = ckh__sf_strdup(n, from->v[i].name);
        if (!to->v[i].name) {
            to->n = i;
            return CKH_ENOMEM;
        }
    }
    to->n = from->n;
    return 0;
}

/* Whether ino is reachable from anything a clone keeps (C2). */
static bool inode_kept(const struct ckh_simfs *d, const struct sf_inode *ino)
{
    return ino == d->root || ino->links[SF_LIVE] || ino->links[SF_DUR] || ino->oprefs;
}

/* The clone's op with the given seq (binary search; NULL: none). */
static struct sf_op *clone_op_by_seq(const struct ckh_simfs *n, const struct sf_op *old)
{
    if (!old)
        return NULL;
    size_t lo = 0, hi = n->pn;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (n->pv[mid].seq < old->seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n->pn && n->pv[lo].seq == old->seq ? n->pv[lo].op : NULL;
}

static struct sf_inode *remap(struct sf_inode *const *map, const struct sf_inode *old)
{
    CKH_ASSERT(!old || map[old->slot]); /* C2: a link or an op keeps it */
    return old ? map[old->slot] : NULL;
}

/* Copies the inodes into n; map[old slot] receives the new inode. */
static int clone_inodes(const struct ckh_simfs *d, struct ckh_simfs *n, struct sf_inode **map)
{
    n->inodes = ckh__sf_malloc(n, (d->ninodes ? d->ninodes : 1) * sizeof(n->inodes[0]));
    if (!n->inodes)
        return CKH_ENOMEM;
    n->icap = d->ninodes ? d->ninodes : 1;
    for (uint32_t s = 0; s < d->ninodes; s++) {
        const struct sf_inode *o = d->inodes[s];
        if (!o || !inode_kept(d, o))
            continue;
        struct sf_inode *c = ckh__sf_malloc(n, sizeof(*c));
        if (!c)
            return CKH_ENOMEM;
        c->ino = o->ino;
        c->type = o->type;
        c->slot = n->ninodes;
        n->inodes[n->ninodes++] = c;
        map[s] = c;
        memcpy(c->links, o->links, sizeof(c->links));
        c->oprefs = o->oprefs;
        c->create_seq = o->create_seq;
        c->crash_order_seq = o->crash_order_seq;
        c->opens = o == d->root ? 1 : 0; /* the root stays pinned (C2) */
        if ((o->target && !(c->target = ckh__sf_strdup(n, o->target))) ||
            (o->hint && !(c->hint = ckh__sf_strdup(n, o->hint))))
            return CKH_ENOMEM;
        for (int w = 0; w < 2; w++) {
            int rc = clone_data(n, &c->data[w], &o->data[w]);
            if (rc == 0)
                rc = clone_dir(n, &c->dir[w], &o->dir[w]);
            if (rc)
                return rc;
        }
    }
    for (uint32_t s = 0; s < n->ninodes; s++) {
        struct sf_inode *c = n->inodes[s];
        for (int w = 0; w < 2; w++)
            for (uint32_t i = 0; i < c->dir[w].n; i++)
                c->dir[w].v[i].ino = remap(map, c->dir[w].v[i].ino);
        c->counted = c->links[SF_LIVE] || c->opens;
        if (c->counted)
            n->used_bytes += c->data[SF_LIVE].size;
    }
    return 0;
}

/* Copies the pending table into n (inodes already mapped). */
static int clone_ops(const struct ckh_simfs *d, struct ckh_simfs *n, struct sf_inode **map)
{
    size_t live = d->pn - d->ptomb;
    n->pcap = live ? live : 1;
    n->pv = ckh__sf_malloc(n, n->pcap * sizeof(n->pv[0]));
    if (!n->pv)
        return CKH_ENOMEM;
    for (size_t i = 0; i < d->pn; i++) {
        const struct sf_op *o = d->pv[i].op;
        if (!o)
            continue;
        struct sf_op *c = ckh__sf_malloc(n, sizeof(*c));
        if (!c)
            return CKH_ENOMEM;
        *c = *o;
        c->path = c->path2 = NULL;
        c->name = c->name2 = NULL;
        c->iprev = c->inext = NULL;
        c->src.buf = NULL;
        CKH_ASSERT(n->pn < n->pcap && (n->pn == 0 || n->pv[n->pn - 1].seq < c->seq));
        n->pv[n->pn++] = (struct sf_pend){.seq = c->seq, .op = c};
        c->ino = remap(map, o->ino);
        c->dir = remap(map, o->dir);
        c->dir2 = remap(map, o->dir2);
        if (o->src.buf) {
            c->src.buf = o->src.buf;
            ckh__sf_buf_ref(c->src.buf);
        }
        if (o->path) {
            if (!(c->path = ckh__sf_strdup(n, o->path)))
                return CKH_ENOMEM;
            c->name = c->path + (o->name - o->path);
        }
        if (o->path2) {
            if (!(c->path2 = ckh__sf_strdup(n, o->path2)))
                return CKH_ENOMEM;
            c->name2 = c->path2 + (o->name2 - o->path2);
        }
    }
    /* Per-inode op lists and last ops, now that every op has a twin. */
    for (size_t i = 0; i < d->pn; i++) {
        const struct sf_op *o = d->pv[i].op;
        if (!o)
            continue;
        struct sf_op *c = clone_op_by_seq(n, o);
        CKH_ASSERT(c);
        c->iprev = clone_op_by_seq(n, o->iprev);
        c->inext = clone_op_by_seq(n, o->inext);
        CKH_ASSERT(!o->iprev == !c->iprev && !o->inext == !c->inext); /* neighbours are pending too */
    }
    for (uint32_t s = 0; s < d->ninodes; s++) {
        const struct sf_inode *o = d->inodes[s];
        struct sf_inode *c = o ? map[s] : NULL;
        if (!c)
            continue;
        c->ops_head = clone_op_by_seq(n, o->ops_head);
        c->ops_tail = clone_op_by_seq(n, o->ops_tail);
        c->last_op = clone_op_by_seq(n, o->last_op);
        CKH_ASSERT(!o->ops_head == !c->ops_head && !o->ops_tail == !c->ops_tail);
    }
    CKH_ASSERT(n->pn == d->pn - d->ptomb);
    return 0;
}

static int clone_faults(const struct ckh_simfs *d, struct ckh_simfs *n)
{
    if (!d->nfaults)
        return 0;
    n->faults = calloc(d->nfaults, sizeof(n->faults[0]));
    if (!n->faults)
        return CKH_ENOMEM;
    for (size_t i = 0; i < d->nfaults; i++) {
        n->faults[i] = d->faults[i];
        n->faults[i].path = NULL;
        n->nfaults = i + 1;
        if (d->faults[i].path && !(n->faults[i].path = strdup(d->faults[i].path)))
            return CKH_ENOMEM;
    }
    return 0;
}

int ckh_simfs_clone(const struct ckh_simfs *d, struct ckh_simfs **out)
{
    if (out)
        *out = NULL;
    if (!d || !out)
        return CKH_EINVAL;
    struct ckh_simfs *n = calloc(1, sizeof(*n));
    if (!n)
        return CKH_ENOMEM;
    struct sf_inode **map = calloc(d->ninodes ? d->ninodes : 1, sizeof(*map));
    int rc = CKH_ENOMEM;
    if (!map)
        goto out_destroy;
    n->cfg = d->cfg;
    if (!(n->name = ckh__sf_strdup(n, d->name)))
        goto out_destroy;
    n->cfg.name = n->name;
    n->store = ckh__sf_store_ref(d->store); /* C3: bytes shared, wherever they live */
    n->next_ino = d->next_ino;
    n->next_seq = d->next_seq;
    n->rng = d->rng;
    n->garbage_seed = d->garbage_seed;
    n->crashes = d->crashes;
    n->direct_mount = (struct sf_mount){.prefix = "/", .plen = 1, .disk = n};
    n->direct = (struct sf_view){.base = {.ops = &ckh__sf_view_ops},
                                 .node = -1,
                                 .mounts = &n->direct_mount,
                                 .nmounts = 1,
                                 .direct = true};
    if ((rc = clone_inodes(d, n, map)) != 0 || (rc = clone_ops(d, n, map)) != 0 ||
        (rc = clone_faults(d, n)) != 0)
        goto out_destroy;
    n->root = map[d->root->slot];
    CKH_ASSERT(n->root && n->ninodes <= d->ninodes);
    CKH_ASSERT_SLOW(ckh_simfs_digest(n, true) == ckh_simfs_digest(d, true) &&
                    ckh_simfs_digest(n, false) == ckh_simfs_digest(d, false));
    free(map);
    *out = n;
    return 0;
out_destroy:
    free(map);
    /* A half-built clone is consistent enough to destroy: every pointer is
     * either NULL or owned, and nothing refers to an inode not yet mapped
     * except entry and op pointers, which destroy never follows. */
    ckh_simfs_destroy(n);
    return rc;
}
