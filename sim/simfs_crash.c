/* simfs: a crash of one node's machine or a power loss (rules S5 and S9 of
 * the specification at the top of simfs.c): each pending op in the crashed
 * cache is applied, dropped or torn as the crash model and the seed (or
 * an explicit list) decide, other caches' ops that built on a dropped one
 * are dropped with it (S3), and the live view is rebuilt from what the
 * disk kept. The rest of the disk's machinery is simfs.c's, shared through
 * simfs_internal.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/op.h"
#include "simfs_internal.h"

/* ------------------------------------------------------------------ crash */

bool ckh__sf_op_affected(const struct ckh_simfs *d, const struct sf_op *op, int node)
{
    return op && (node == -1 || ckh__sf_same_cache(d, op->node, node));
}

/* An op cannot persist without what it depends on: a dependency this crash
 * drops, or one still pending in another node's cache (not part of this
 * crash, so not durable), takes the op down with it. */
static bool dep_dropped(const struct ckh_simfs *d, const struct sf_op *op)
{
    for (int i = 0; i < 3; i++) {
        struct sf_op *x = ckh__sf_op_by_seq(d, op->dep[i]);
        if (x && (!x->affected || x->decision == CKH_CRASH_DROP))
            return true;
    }
    return false;
}

static enum ckh_crash_choice draw_choice(struct ckh_simfs *d, const struct sf_op *op)
{
    if (op->k == SF_OP_WRITE) {
        uint64_t r = ckh_rng_below(&d->rng, 10);
        return r < 4 ? CKH_CRASH_APPLY
             : r < 8 ? CKH_CRASH_DROP
             : r == 8 ? CKH_CRASH_TORN_ZERO
                      : CKH_CRASH_TORN_GARBAGE;
    }
    return ckh_rng_below(&d->rng, 2) ? CKH_CRASH_DROP : CKH_CRASH_APPLY;
}

static void decide_posix(struct ckh_simfs *d, int node, const enum ckh_crash_choice *choices)
{
    size_t ai = 0;
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (!ckh__sf_op_affected(d, op, node))
            continue;
        enum ckh_crash_choice c = choices ? choices[ai] : CKH_CRASH_APPLY;
        ai++;
        if (dep_dropped(d, op))
            c = CKH_CRASH_DROP;
        else if (!choices)
            c = draw_choice(d, op);
        op->decision = (uint8_t)c;
    }
}

static void decide_ext4(struct ckh_simfs *d, int node, const enum ckh_crash_choice *choices)
{
    size_t m = 0, ai = 0;
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (ckh__sf_op_affected(d, op, node)) {
            op->ino->crash_order_seq = 0;
            if (!ckh__sf_op_is_data(op))
                m++;
        }
    }
    /* The journal keeps a prefix of the node's entry ops. */
    size_t keep = choices ? m : (size_t)ckh_rng_below(&d->rng, m + 1);
    size_t mi = 0;
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (!ckh__sf_op_affected(d, op, node))
            continue;
        size_t idx = ai++;
        if (ckh__sf_op_is_data(op))
            continue;
        if (choices && choices[idx] == CKH_CRASH_DROP && keep == m)
            keep = mi;
        /* The journal cannot commit an entry op whose dependency is not
         * durable (another node's pending create, or one dropped here):
         * its prefix ends before it (S3). */
        if (mi < keep && dep_dropped(d, op))
            keep = mi;
        op->decision = mi < keep ? CKH_CRASH_APPLY : CKH_CRASH_DROP;
        if (op->decision == CKH_CRASH_APPLY && op->seq > op->ino->crash_order_seq)
            op->ino->crash_order_seq = op->seq;
        mi++;
    }
    ai = 0;
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (!ckh__sf_op_affected(d, op, node))
            continue;
        size_t idx = ai++;
        if (!ckh__sf_op_is_data(op))
            continue;
        enum ckh_crash_choice c;
        if (dep_dropped(d, op))
            c = CKH_CRASH_DROP;
        else if (op->seq < op->ino->crash_order_seq)
            c = CKH_CRASH_APPLY; /* data=ordered: a later entry op on it persisted */
        else
            c = choices ? choices[idx] : draw_choice(d, op);
        op->decision = (uint8_t)c;
    }
}

/* S3 across caches: an op outside this crash that builds on an op the
 * crash dropped (directly or through another op dropped so) can never
 * persist, so it is dropped with it. The table is in issue order, so one
 * pass reaches every chain. */
static void drop_dependents(struct ckh_simfs *d)
{
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (!op || op->affected)
            continue;
        for (int k = 0; k < 3; k++) {
            const struct sf_op *x = ckh__sf_op_by_seq(d, op->dep[k]);
            if (x && x->affected && x->decision == CKH_CRASH_DROP) {
                op->affected = true;
                op->decision = CKH_CRASH_DROP;
                break;
            }
        }
    }
}

/* Makes the live copy the durable copy plus the still-pending ops. */
static void rebuild_live(struct ckh_simfs *d)
{
    d->gc_hold = true;
    for (uint32_t s = 0; s < d->ninodes; s++) {
        struct sf_inode *ino = d->inodes[s];
        if (!ino)
            continue;
        ckh__sf_dir_clear(d, ino, SF_LIVE, false);
        ino->create_seq = 0;
        ino->last_op = NULL;
        ino->counted = false;
    }
    d->used_bytes = 0;
    for (uint32_t s = 0; s < d->ninodes; s++) {
        struct sf_inode *ino = d->inodes[s];
        if (!ino)
            continue;
        if (ino->type == CKH_FT_FILE)
            ckh__sf_data_copy(d, &ino->data[SF_LIVE], &ino->data[SF_DUR]);
        const struct sf_dir *dur = &ino->dir[SF_DUR];
        for (uint32_t i = 0; i < dur->n; i++)
            ckh__sf_ent_set(d, ino, SF_LIVE, dur->v[i].name, dur->v[i].ino, 0);
    }
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (!op)
            continue;
        ckh__sf_apply_op(d, op, SF_LIVE, CKH_CRASH_APPLY);
        if (op->k == SF_OP_LINK)
            op->ino->create_seq = op->seq;
        op->ino->last_op = op;
    }
    d->gc_hold = false;
    for (uint32_t s = 0; s < d->ninodes; s++)
        ckh__sf_inode_maybe_free(d, d->inodes[s]);
}

int ckh_simfs_crash(struct ckh_simfs *d, int node, const enum ckh_crash_choice *choices, size_t n)
{
    if (!d)
        return CKH_EINVAL;
    ckh__sf_pv_compact(d);
    size_t na = 0;
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        op->affected = ckh__sf_op_affected(d, op, node);
        op->decision = CKH_CRASH_APPLY;
        if (op->affected) {
            if (choices && na < n) {
                enum ckh_crash_choice c = choices[na];
                if ((unsigned)c > CKH_CRASH_TORN_GARBAGE ||
                    (c >= CKH_CRASH_TORN_ZERO && op->k != SF_OP_WRITE))
                    return ckh__sf_set_err(d, CKH_EINVAL,
                                           "crash choice %zu (%d) not allowed for op seq %llu",
                                           na, (int)c, (unsigned long long)op->seq);
            }
            na++;
        }
    }
    if (choices && n != na)
        return ckh__sf_set_err(d, CKH_EINVAL, "crash: %zu choices for %zu pending ops", n, na);
    if (d->cfg.model == CKH_CRASH_EXT4_ORDERED)
        decide_ext4(d, node, choices);
    else
        decide_posix(d, node, choices);
    drop_dependents(d);
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (op && op->affected && op->decision != CKH_CRASH_DROP) {
            CKH_ASSERT(!dep_dropped(d, op)); /* S3: never without what it builds on */
            ckh__sf_apply_op(d, op, SF_DUR, (enum ckh_crash_choice)op->decision);
        }
    }
    d->gc_hold = true; /* retiring ops must not free inodes the rebuild walks */
    for (size_t i = 0; i < d->pn; i++) {
        struct sf_op *op = d->pv[i].op;
        if (op && op->affected)
            ckh__sf_op_retire(d, op);
    }
    d->gc_hold = false;
    ckh__sf_pv_compact(d);
    rebuild_live(d);
    d->crashes++;
    return 0;
}

