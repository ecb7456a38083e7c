/* The order in which a real program's crash states are checked
 * (harness/search/explore_program.h, "Check order"): likely failures
 * first, so that a time-limited explore finds them.
 *
 * Where crash-consistency bugs show (the explorer's own findings on the
 * savers of tests/programs/, and the published studies of application
 * crash consistency: ALICE, OSDI 2014; CrashMonkey, OSDI 2018):
 *   - right after a commit point: the operation before the crash is a
 *     rename, link or symlink (a name made to point at new data), an
 *     fsync, fdatasync or directory fsync (the program's claim that
 *     something is durable), a truncation, or an open or write of a file
 *     that the run had already made (a rewrite in place of something a
 *     reader may trust, such as `latest`);
 *   - where the pending operations did not persist as a prefix: one was
 *     dropped while a later one persisted (a reordering that no kill can
 *     produce), or a write was torn.
 * A state's priority is 2 for the first, plus 1 for the second; states
 * are checked by priority, highest first, and by K within a priority.
 * The order changes when states are checked, never what is reported:
 * findings are listed smallest K first, and the set of states checked
 * without a bound is the same.
 */
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/op.h"
#include "search/explore_internal.h"

/* Whether op o names path as the file it makes or writes. */
static bool makes(const struct ckh__xop *o, const char *path)
{
    switch (o->kind) {
    case CKH_OP_OPEN: case CKH_OP_WRITE: case CKH_OP_PWRITE: case CKH_OP_FTRUNCATE: case CKH_OP_SYMLINK:
        return o->path && !strcmp(o->path, path);
    case CKH_OP_RENAME:
        return o->path2 && !strcmp(o->path2, path);
    default:
        return false;
    }
}

/* Whether the state after ops[0..k) follows a commit point. */
static bool after_commit(const struct ckh__xop *ops, size_t k)
{
    if (k == 0)
        return false;
    const struct ckh__xop *last = &ops[k - 1];
    switch (last->kind) {
    case CKH_OP_RENAME: case CKH_OP_SYMLINK: case CKH_OP_FSYNC: case CKH_OP_FDATASYNC: case CKH_OP_FSYNC_DIR:
    case CKH_OP_FTRUNCATE:
        return true;
    case CKH_OP_OPEN: case CKH_OP_WRITE: case CKH_OP_PWRITE:
        if (!last->path)
            return false;
        /* A rewrite in place: the file was made before this file's own
         * run of operations began (its open, then writes). */
        size_t i = k - 1;
        while (i > 0 && ops[i - 1].path && !strcmp(ops[i - 1].path, last->path) &&
               (ops[i - 1].kind == CKH_OP_WRITE || ops[i - 1].kind == CKH_OP_PWRITE ||
                ops[i - 1].kind == CKH_OP_OPEN) && ops[i].kind != CKH_OP_OPEN)
            i--;
        for (size_t j = 0; j < i; j++)
            if (makes(&ops[j], last->path))
                return true;
        return false;
    default:
        return false;
    }
}

/* Whether the choices keep the pending operations other than as a prefix. */
static bool disordered(const enum ckh_crash_choice *ch, size_t n)
{
    bool dropped = false;
    for (size_t i = 0; i < n; i++) {
        if (ch[i] == CKH_CRASH_TORN_ZERO || ch[i] == CKH_CRASH_TORN_GARBAGE)
            return true;
        if (ch[i] == CKH_CRASH_DROP)
            dropped = true;
        else if (dropped)
            return true; /* a later one persisted after a dropped one */
    }
    return false;
}

int ckh__xorder_priority(const struct ckh__xop *ops, size_t k, const enum ckh_crash_choice *ch, size_t n)
{
    int prio = (after_commit(ops, k) ? 2 : 0) + (disordered(ch, n) ? 1 : 0);
    CKH_ASSERT(prio >= 0 && prio <= CKH__XORDER_MAX);
    return prio;
}

/* Priority first (highest first), then the index (K order). */
struct keyed {
    int prio;
    size_t i;
};

static int by_priority(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

int ckh__xorder_sort(const int *prio, size_t n, size_t **order)
{
    struct keyed *v = malloc((n ? n : 1) * sizeof *v);
    size_t *o = malloc((n ? n : 1) * sizeof *o);
    if (!v || !o) {
        free(v);
        free(o);
        return CKH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (struct keyed){.prio = prio[i], .i = i};
    qsort(v, n, sizeof *v, by_priority); /* a total order: the result is the same on every machine */
    for (size_t i = 0; i < n; i++)
        o[i] = v[i].i;
    free(v);
    *order = o;
    return 0;
}
