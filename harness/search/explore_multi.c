/* Crash states of a multi-node real program (search/explore_multi.h says
 * what; docs/PROGRAMS.md, "Several nodes", how to use it; docs/
 * ARCHITECTURE.md how the state count grows and is bounded).
 *
 * Data flow:
 *   1. record: the fault-free reference run of the command job, watched.
 *      Every operation on every mount gets its place in one global order
 *      (the watch runs under the job's lock) and its disk's version (how
 *      many operations that disk had seen before it). Each disk is cloned
 *      before an operation that follows one of its own that could change
 *      it (under that mount's own lock, so no other thread touches the
 *      disk meanwhile), and at the end: disk e after v of its operations
 *      is its clone with the largest version <= v (the operations between
 *      changed nothing). Before a global operation that follows one that
 *      could change a disk (a cut), the versions of every disk and how
 *      much of each node's result file had been read are noted;
 *   2. generate: for each cut in order, power loss, then each node's
 *      machine crash in node order (explore.crashes); each crash's
 *      affected pending operations (every disk's for power loss; the
 *      crashed node's own disks' and its own on a shared disk, all of
 *      them on a machine-shared one) resolved by the explorer's choice
 *      vectors (explore_states.c) on one disk at a time, the other
 *      affected disks all applied or all dropped; what no crash affects
 *      is applied (a killed process's written data survives). States are
 *      numbered K in that order; one whose disks' durable digests, taken
 *      together, were seen before is not kept;
 *   3. check: each kept state in `jobs` forked workers (the check both
 *      explorers share, search/explore_workers.h): a fresh execution of
 *      the job whose disks are the state, in the worker's one check
 *      folder, then `verify` once per node of the first run against that
 *      node's view (each disk served by the worker's kept mount for that
 *      disk, the state's disk swapped onto it), or a restart of the whole
 *      job judged by the oracles; programs start from the worker's warm
 *      launchers where they can (cold, with the reason, where not);
 *   4. report: the failures, smallest K first, each with every node's last
 *      operation that could change a disk and what each disk held.
 * Memory: O(clones x (inodes + extents)), never O(bytes).
 * Threads: rec_op runs on the mounts' server threads, the job's lock and
 * its own mount's lock held: it touches only that mount's disk.
 * Determinism: the states follow from the recorded order alone; two
 * recordings of a job whose nodes race give different orders, so K and
 * --state K refer to the run recorded by that call (docs/PROGRAMS.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/command.h"
#include "exec/command_proc.h"
#include "exec/command_result.h"
#include "exec/command_warm.h"
#include "search/explore_internal.h"
#include "search/explore_multi.h"
#include "search/explore_workers.h"

#define XM_NAMES 64 /* nodes named in texts */

/* ---- 1. the recorded run ---- */

/* A disk's clone after its first v operations. */
struct xm_snap {
    uint64_t v;
    struct ckh_simfs *disk; /* (owned) */
};

/* One disk (one mount) of the recorded run. */
struct xm_disk {
    char name[160];           /* "ckpt" (shared) or "ckpt.rank_1" */
    int node;                 /* the node of a node-local disk (-1: shared) */
    bool machine;             /* sharing: machine (a crash loses every node's pending ops) */
    struct xm_snap *s;        /* clones, v ascending (owned) */
    size_t ns, caps;
    uint64_t nops;            /* its operations so far */
    bool prev_changes;        /* its last operation could change it (true before the first) */
};

/* A cut: the point before global operation g. */
struct xm_cut {
    uint64_t g;               /* operations before it */
    uint64_t *vers;           /* [nd]: each disk's operations before it (owned) */
    uint64_t *result_bytes;   /* [n]: each node's result file read by then (owned) */
    int node;                 /* node of operation g (-1: the end of the run) */
    int64_t step;             /* that node's last recorded step (-1: none) */
};

struct xm_rec {
    int n;                        /* nodes of the first run */
    int64_t from_step, to_step;   /* window (-1: open) */
    size_t nd;                    /* disks (0 until the first operation) */
    struct xm_disk *d;            /* [nd] (owned) */
    struct ckh__xop *ops;         /* every operation, in the global order (owned) */
    int *opdisk;                  /* [nops]: its disk (owned) */
    uint64_t *opms;               /* [nops]: ckh_posix_now_ms() when it reached ckhfs (owned) */
    size_t nops, capops;
    struct xm_cut *cuts;          /* cuts, g ascending (owned) */
    size_t ncuts, capcuts;
    bool prev_changes;            /* the last global operation could change its disk */
    int err;                      /* first failure (ENOMEM) */
    char (*results)[CKH__CMD_PATH_MAX]; /* [n]: run 1's result files (owned) */
    char names[XM_NAMES][CKH_NODE_NAME_LEN]; /* node names, for texts */
};

static bool in_window(const struct xm_rec *x, int64_t step)
{
    return (x->from_step < 0 || step >= x->from_step) && (x->to_step < 0 || step <= x->to_step);
}

static const char *node_name(const struct xm_rec *x, int i)
{
    return i >= 0 && i < XM_NAMES && x->names[i][0] ? x->names[i] : "a process outside the job";
}

/* The disks of c, named as ckh names them, on the first operation. */
static int disks_init(struct xm_rec *x, const struct ckh__cmd *c)
{
    x->d = calloc(c->nmounts ? c->nmounts : 1, sizeof *x->d);
    if (!x->d)
        return CKH_ENOMEM;
    x->nd = c->nmounts;
    for (size_t m = 0; m < c->nmounts; m++) {
        const struct ckh__cmd_mount *mt = &c->mounts[m];
        const struct ckh_scn_disk *sd = &c->sc->job.disks[mt->disk_index];
        struct xm_disk *d = &x->d[m];
        if (mt->node >= 0)
            snprintf(d->name, sizeof d->name, "%s.%s", sd->name, c->nodes[mt->node].name);
        else
            snprintf(d->name, sizeof d->name, "%s", sd->name);
        d->node = mt->node;
        d->machine = sd->sharing == CKH_SHARING_MACHINE;
        d->prev_changes = true;
    }
    for (int i = 0; i < c->n && i < XM_NAMES; i++)
        snprintf(x->names[i], sizeof x->names[i], "%s", c->nodes[i].name);
    return 0;
}

/* Clones disk e (its version now) unless a clone of that version exists. */
static void snap_take(struct xm_rec *x, size_t e, struct ckh_simfs *disk)
{
    struct xm_disk *d = &x->d[e];
    if (x->err || (d->ns && d->s[d->ns - 1].v == d->nops))
        return;
    if (d->ns == d->caps) {
        size_t cap = d->caps ? d->caps * 2 : 32;
        struct xm_snap *v = realloc(d->s, cap * sizeof *v);
        if (!v) {
            x->err = CKH_ENOMEM;
            return;
        }
        d->s = v;
        d->caps = cap;
    }
    struct xm_snap *s = &d->s[d->ns];
    s->v = d->nops;
    if (ckh_simfs_clone(disk, &s->disk) != 0) {
        x->err = CKH_ENOMEM;
        return;
    }
    d->ns++;
}

static void cut_take(struct xm_rec *x, struct ckh__cmd *c, int node, int64_t step)
{
    if (x->err)
        return;
    if (x->ncuts == x->capcuts) {
        size_t cap = x->capcuts ? x->capcuts * 2 : 64;
        struct xm_cut *v = realloc(x->cuts, cap * sizeof *v);
        if (!v) {
            x->err = CKH_ENOMEM;
            return;
        }
        x->cuts = v;
        x->capcuts = cap;
    }
    /* cuts g ascending: an operation lies between two of them */
    CKH_ASSERT(x->ncuts == 0 || x->cuts[x->ncuts - 1].g < x->nops);
    struct xm_cut *k = &x->cuts[x->ncuts];
    *k = (struct xm_cut){.g = x->nops, .node = node, .step = step};
    k->vers = calloc(x->nd ? x->nd : 1, sizeof *k->vers);
    k->result_bytes = calloc((size_t)x->n, sizeof *k->result_bytes);
    if (!k->vers || !k->result_bytes) {
        free(k->vers);
        free(k->result_bytes);
        x->err = CKH_ENOMEM;
        return;
    }
    for (size_t e = 0; e < x->nd; e++)
        k->vers[e] = x->d[e].nops;
    for (int i = 0; i < x->n && i < c->n; i++) {
        if (node >= 0 && i != node)
            ckh__cmd_progress_refresh(c, i); /* lock held: every node's records so far */
        k->result_bytes[i] = ckh__xprog_result_consumed(&c->nodes[i]);
    }
    x->ncuts++;
}

/* The watch's on_op (server thread of m, the job's and m's locks held). */
static void rec_op(void *ctx, struct ckh__cmd_mount *m, const struct ckh_ckhfs_op *op)
{
    struct xm_rec *x = ctx;
    struct ckh__cmd *c = m->c;
    if (!x->err && !x->d && (x->err = disks_init(x, c)) != 0)
        return;
    size_t e = (size_t)(m - c->mounts);
    CKH_ASSERT(e < x->nd);
    int64_t step = op->node >= 0 ? c->nodes[op->node].prog.step : -1;
    if (x->d[e].prev_changes)
        snap_take(x, e, m->disk); /* m's lock held: its server waits */
    if (x->prev_changes && in_window(x, step))
        cut_take(x, c, op->node, step);
    if (x->err)
        return;
    if (x->nops == x->capops) {
        size_t cap = x->capops ? x->capops * 2 : 128;
        struct ckh__xop *v = realloc(x->ops, cap * sizeof *v);
        int *dv = realloc(x->opdisk, cap * sizeof *dv);
        if (v)
            x->ops = v;
        if (dv)
            x->opdisk = dv;
        uint64_t *tv = realloc(x->opms, cap * sizeof *tv);
        if (tv)
            x->opms = tv;
        if (!v || !dv || !tv) {
            x->err = CKH_ENOMEM;
            return;
        }
        x->capops = cap;
    }
    struct ckh__xop *o = &x->ops[x->nops];
    if ((x->err = ckh__xprog_op_copy(m, op, o)) != 0)
        return;
    x->opdisk[x->nops] = (int)e;
    x->opms[x->nops] = ckh_posix_now_ms();
    x->nops++;
    x->d[e].nops++;
    /* ckhfs does not report an open's flags: any open may create or truncate. */
    bool ch = ckh__explore_op_changes(o) || o->kind == CKH_OP_OPEN;
    x->d[e].prev_changes = ch;
    x->prev_changes = ch;
}

/* The watch's on_end: every disk's final clone (unmounted: no server
 * touches them), the cut after the last operation, run 1's result files. */
static void rec_end(void *ctx, struct ckh__cmd *c)
{
    struct xm_rec *x = ctx;
    if (!x->err && !x->d)
        x->err = disks_init(x, c);
    for (size_t e = 0; e < x->nd && e < c->nmounts; e++)
        snap_take(x, e, c->mounts[e].disk);
    int64_t step = -1;
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i].prog.step > step)
            step = c->nodes[i].prog.step;
    if (x->prev_changes && in_window(x, step))
        cut_take(x, c, -1, step);
    x->results = calloc((size_t)c->n, sizeof *x->results);
    if (!x->results) {
        x->err = CKH_ENOMEM;
        return;
    }
    for (int i = 0; i < c->n; i++)
        snprintf(x->results[i], sizeof x->results[i], "%s", c->nodes[i].result);
}

static void rec_free(struct xm_rec *x)
{
    for (size_t i = 0; i < x->nops; i++) {
        free(x->ops[i].path);
        free(x->ops[i].path2);
    }
    free(x->ops);
    free(x->opdisk);
    free(x->opms);
    for (size_t e = 0; e < x->nd; e++) {
        for (size_t k = 0; k < x->d[e].ns; k++)
            ckh_simfs_destroy(x->d[e].s[k].disk);
        free(x->d[e].s);
    }
    free(x->d);
    for (size_t i = 0; i < x->ncuts; i++) {
        free(x->cuts[i].vers);
        free(x->cuts[i].result_bytes);
    }
    free(x->cuts);
    free(x->results);
    memset(x, 0, sizeof *x);
}

/* Disk e after its first v operations (its clone with the largest
 * version <= v; borrowed). */
static const struct ckh_simfs *disk_at(const struct xm_rec *x, size_t e, uint64_t v)
{
    const struct xm_disk *d = &x->d[e];
    CKH_ASSERT(d->ns > 0 && d->s[0].v == 0);
    size_t lo = 0, hi = d->ns; /* the answer lies in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->s[mid].v <= v)
            lo = mid;
        else
            hi = mid;
    }
    return d->s[lo].disk;
}

/* ---- 2. the crash states ---- */

/* What crashes at a cut. */
struct xm_crash {
    int node;           /* the crashed node (-1: power loss, every node) */
    uint64_t g;         /* the cut the disks are at: the cut's, or (others running) the crashed
                           node's next operation */
    bool running;       /* the others ran on (explore.others: running) */
};

struct xm_state {
    struct ckh__xw_state h;   /* its number, check priority and words (first member) */
    size_t cut;               /* its cut (index into cuts) */
    struct ckh_simfs **disks; /* [nd]: the crashed disks (owned) */
};

struct xm_states {
    struct xm_state *v;
    size_t n, cap;
    uint64_t generated;
    bool bounded;
};

static void disks_free(struct ckh_simfs **d, size_t nd)
{
    for (size_t e = 0; d && e < nd; e++)
        ckh_simfs_destroy(d[e]);
    free(d);
}

static void states_free(struct xm_states *s, size_t nd)
{
    for (size_t i = 0; i < s->n; i++)
        disks_free(s->v[i].disks, nd);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* The pending operations of d a crash of node (-1: power loss) affects,
 * in pending_get order. */
static int pend_affected(struct ckh_simfs *d, const struct xm_disk *xd, int node, struct ckh__xpend **out,
                         size_t *nout)
{
    /* a network disk: another node's client cache survives */
    bool own = node >= 0 && xd->node < 0 && !xd->machine;
    return ckh__explore_pend_copy_node(d, own ? node : -1, out, nout);
}

/* Whether a crash of node (-1: power loss) reaches disk xd. */
static bool crash_reaches(const struct xm_disk *xd, int node)
{
    return node < 0 || xd->node == node || xd->node < 0;
}

/* One crash at one cut: the affected disks and their pending ops. */
struct xm_site {
    struct ckh_simfs **base;     /* [nd]: the disks at the cut (clones, owned) */
    struct ckh__xpend **p;       /* [nd]: affected pending ops (owned; NULL: not reached) */
    size_t *np;                  /* [nd]: their counts */
    enum ckh_crash_choice **ch;  /* [nd]: the choices of the current combination (owned) */
    size_t *focus;               /* the reached disks with pending ops, in disk order */
    size_t nfocus;
};

static void site_free(struct xm_site *s, size_t nd)
{
    for (size_t e = 0; e < nd; e++) {
        if (s->p && s->p[e])
            ckh__explore_pend_free(s->p[e], s->np[e]);
        if (s->ch)
            free(s->ch[e]);
    }
    disks_free(s->base, nd);
    free(s->p);
    free(s->np);
    free(s->ch);
    free(s->focus);
    memset(s, 0, sizeof *s);
}

static int site_make(const struct xm_rec *x, const uint64_t *vers, int node, struct xm_site *s)
{
    size_t nd = x->nd;
    memset(s, 0, sizeof *s);
    s->base = calloc(nd, sizeof *s->base);
    s->p = calloc(nd, sizeof *s->p);
    s->np = calloc(nd, sizeof *s->np);
    s->ch = calloc(nd, sizeof *s->ch);
    s->focus = calloc(nd, sizeof *s->focus);
    if (!s->base || !s->p || !s->np || !s->ch || !s->focus)
        return CKH_ENOMEM;
    for (size_t e = 0; e < nd; e++) {
        int rc = ckh_simfs_clone(disk_at(x, e, vers[e]), &s->base[e]);
        if (rc)
            return rc;
        if (!crash_reaches(&x->d[e], node))
            continue;
        if ((rc = pend_affected(s->base[e], &x->d[e], node, &s->p[e], &s->np[e])) != 0)
            return rc;
        if (!(s->ch[e] = calloc(s->np[e] ? s->np[e] : 1, sizeof *s->ch[e])))
            return CKH_ENOMEM;
        if (s->np[e])
            s->focus[s->nfocus++] = e;
    }
    return 0;
}

/* Sets s->ch to the c-th combination: 0 every affected op applied; then,
 * for each focus disk f in turn, f's vectors 1.. (explore_states.c) with
 * the other reached disks all applied, and (with several) all dropped.
 * False past the last. */
static bool site_combo(struct xm_site *s, size_t nd, uint64_t c)
{
    for (size_t e = 0; e < nd; e++)
        for (size_t i = 0; s->ch[e] && i < s->np[e]; i++)
            s->ch[e][i] = CKH_CRASH_APPLY;
    if (c == 0)
        return true;
    c--;
    size_t others = s->nfocus > 1 ? 2 : 1;
    for (size_t f = 0; f < s->nfocus; f++) {
        size_t e = s->focus[f];
        for (uint64_t v = 1;; v++) {
            if (!ckh__explore_vector((size_t)v, s->p[e], s->np[e], s->ch[e]))
                break;
            if (c < others) {
                for (size_t g = 0; c == 1 && g < s->nfocus; g++)
                    for (size_t i = 0; g != f && i < s->np[s->focus[g]]; i++)
                        s->ch[s->focus[g]][i] = CKH_CRASH_DROP;
                return true;
            }
            c -= others;
        }
        for (size_t i = 0; i < s->np[e]; i++)
            s->ch[e][i] = CKH_CRASH_APPLY;
    }
    return false;
}

/* Applies every pending op of d (what no crash touched survives). */
static int settle(struct ckh_simfs *d)
{
    size_t n = ckh_simfs_pending_count(d);
    if (!n)
        return 0;
    enum ckh_crash_choice *ch = calloc(n, sizeof *ch); /* CKH_CRASH_APPLY is 0 */
    if (!ch)
        return CKH_ENOMEM;
    int rc = ckh_simfs_crash(d, -1, ch, n);
    free(ch);
    return rc;
}

/* The crashed disks of the current combination into *out (owned), and
 * their digest together; a combination the model refuses is *out NULL. */
static int site_apply(const struct xm_rec *x, const struct xm_site *s, int node, struct ckh_simfs ***out,
                      uint64_t *dg)
{
    struct ckh_simfs **d = calloc(x->nd, sizeof *d);
    if (!d)
        return CKH_ENOMEM;
    uint64_t h = 1469598103934665603ull;
    int rc = 0;
    for (size_t e = 0; e < x->nd && rc == 0; e++) {
        if ((rc = ckh_simfs_clone(s->base[e], &d[e])) != 0)
            break;
        if (s->p[e] && s->np[e] &&
            ckh_simfs_crash(d[e], x->d[e].node >= 0 ? -1 : node, s->ch[e], s->np[e]) != 0) {
            disks_free(d, x->nd);
            *out = NULL;
            return 0;
        }
        if ((rc = settle(d[e])) != 0)
            break;
        h = (h ^ ckh_simfs_digest(d[e], true)) * 1099511628211ull;
        h = (h ^ (uint64_t)e) * 1099511628211ull;
    }
    if (rc) {
        disks_free(d, x->nd);
        return rc;
    }
    *out = d;
    *dg = h;
    return 0;
}

static const char *choice_name(enum ckh_crash_choice c)
{
    switch (c) {
    case CKH_CRASH_APPLY: return "kept";
    case CKH_CRASH_DROP: return "lost";
    case CKH_CRASH_TORN_ZERO: return "torn (zeros)";
    case CKH_CRASH_TORN_GARBAGE: return "torn (garbage)";
    }
    return "?";
}

/* The state in words: who crashed where, each node's last operation that
 * could change a disk, what became of each affected pending operation. */
static void describe(const struct xm_rec *x, const struct xm_cut *cut, const struct xm_crash *cr,
                     const struct xm_site *s, char *buf, size_t bn)
{
    size_t u = 0;
#define PUT(...) (u += (size_t)snprintf(buf + (u < bn ? u : bn), u < bn ? bn - u : 0, __VA_ARGS__))
    char at[64];
    if (cr->g >= x->nops)
        snprintf(at, sizeof at, "after the last of %zu operations", x->nops);
    else
        snprintf(at, sizeof at, "before operation %" PRIu64 " of %zu", cr->g + 1, x->nops);
    if (cr->node < 0)
        PUT("power loss of every node %s", at);
    else if (cr->running && cr->g != cut->g)
        PUT("%s crashes %s (the others ran on to it from operation %" PRIu64 ")", node_name(x, cr->node), at,
            cut->g + 1);
    else if (cr->running)
        PUT("%s crashes %s (the others ran on to it)", node_name(x, cr->node), at);
    else
        PUT("%s crashes %s (the others killed)", node_name(x, cr->node), at);
    if (cut->step >= 0 && cut->node >= 0)
        PUT(", %s after its step %" PRId64, node_name(x, cut->node), cut->step);
    PUT("; last operations:");
    for (int i = 0; i < x->n && i < XM_NAMES; i++) {
        const struct ckh__xop *last = NULL;
        for (size_t j = 0; j < cr->g && j < x->nops; j++)
            if (x->ops[j].rank == i && (ckh__explore_op_changes(&x->ops[j]) || x->ops[j].kind == CKH_OP_OPEN))
                last = &x->ops[j];
        char od[200] = "none";
        if (last)
            ckh__explore_op_desc(last, od, sizeof od);
        PUT(" %s: %s;", node_name(x, i), od);
    }
    for (size_t e = 0; e < x->nd; e++) {
        if (!s->p[e] || !s->np[e])
            continue;
        PUT(" %s:", x->d[e].name);
        for (size_t i = 0; i < s->np[e]; i++)
            PUT(" %s %s %s%s", ckh_op_name((enum ckh_op_kind)s->p[e][i].kind), s->p[e][i].path,
                choice_name(s->ch[e][i]), i + 1 < s->np[e] ? "," : ";");
    }
#undef PUT
    if (u > 0 && u < bn && buf[u - 1] == ';')
        buf[u - 1] = '\0';
}

/* The global operation index at which node's next operation at or after
 * g lies (x->nops: none), and the versions of every disk there. */
static uint64_t next_of(const struct xm_rec *x, const struct xm_cut *cut, int node, uint64_t *vers)
{
    memcpy(vers, cut->vers, x->nd * sizeof *vers);
    uint64_t g = cut->g;
    for (; g < x->nops && x->ops[g].rank != node; g++)
        vers[x->opdisk[g]]++;
    return g;
}

struct xm_gen {
    const struct xm_rec *x;
    enum ckh_xprog_crashes crashes;
    enum ckh_xprog_others others;
    uint64_t max_states, only;
    struct xm_states *out;
    struct ckh__xseen seen;
};

static int push_state(struct xm_states *s, uint64_t k, size_t cut, int prio, struct ckh_simfs **d)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct xm_state *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return CKH_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    CKH_ASSERT(k >= 1 && k <= s->generated && (s->n == 0 || s->v[s->n - 1].h.k < k));
    s->v[s->n++] = (struct xm_state){.h = {.k = k, .prio = prio}, .cut = cut, .disks = d};
    return 0;
}

/* The states of one crash at cut ci. */
static int gen_crash(struct xm_gen *G, size_t ci, const struct xm_crash *cr, const uint64_t *vers)
{
    const struct xm_rec *x = G->x;
    struct xm_site s;
    int rc = site_make(x, vers, cr->node, &s);
    for (uint64_t c = 0; rc == 0 && site_combo(&s, x->nd, c); c++) {
        if (G->max_states && G->out->generated >= G->max_states) {
            G->out->bounded = true;
            break;
        }
        uint64_t k = ++G->out->generated;
        if (G->only && k != G->only)
            continue;
        struct ckh_simfs **d = NULL;
        uint64_t dg = 0;
        if ((rc = site_apply(x, &s, cr->node, &d, &dg)) != 0 || !d)
            continue;
        if (!G->only && !ckh__explore_seen_insert(&G->seen, dg)) {
            disks_free(d, x->nd);
            continue;
        }
        /* priority: the focus disk's choices after the global prefix */
        int prio = 0;
        for (size_t f = 0; f < s.nfocus; f++) {
            int pr = ckh__xorder_priority(x->ops, (size_t)cr->g, s.ch[s.focus[f]], s.np[s.focus[f]]);
            prio = pr > prio ? pr : prio;
        }
        if (s.nfocus == 0)
            prio = ckh__xorder_priority(x->ops, (size_t)cr->g, NULL, 0);
        if ((rc = push_state(G->out, k, ci, prio, d)) != 0) {
            disks_free(d, x->nd);
            break;
        }
        describe(x, &x->cuts[ci], cr, &s, G->out->v[G->out->n - 1].h.desc, sizeof G->out->v[G->out->n - 1].h.desc);
        if (G->only) {
            G->out->bounded = true; /* found: nothing after it matters */
            break;
        }
    }
    site_free(&s, x->nd);
    return rc;
}

/* Every cut's crashes: power loss, then each node's crash, in order. */
static int generate(struct xm_gen *G)
{
    const struct xm_rec *x = G->x;
    int rc = 0;
    uint64_t *vers = calloc(x->nd ? x->nd : 1, sizeof *vers);
    if (!vers)
        return CKH_ENOMEM;
    for (size_t ci = 0; ci < x->ncuts && rc == 0 && !G->out->bounded; ci++) {
        if (ckh__cmd_interrupted()) {
            rc = -EINTR;
            break;
        }
        const struct xm_cut *cut = &x->cuts[ci];
        if (G->crashes != CKH_XPROG_CRASH_NODE) {
            struct xm_crash cr = {.node = -1, .g = cut->g};
            rc = gen_crash(G, ci, &cr, cut->vers);
        }
        for (int i = 0; i < x->n && rc == 0 && !G->out->bounded && G->crashes != CKH_XPROG_CRASH_POWER; i++) {
            struct xm_crash cr = {.node = i, .g = cut->g, .running = G->others == CKH_XPROG_OTHERS_RUNNING};
            if (cr.running)
                cr.g = next_of(x, cut, i, vers);
            else
                memcpy(vers, cut->vers, x->nd * sizeof *vers);
            rc = gen_crash(G, ci, &cr, vers);
        }
    }
    free(vers);
    free(G->seen.v);
    if (G->only)
        G->out->bounded = false;
    return rc;
}

/* ---- 3. the checks ---- */

/* What each check reads (borrowed). */
struct xm_run {
    struct ckh__xw_checker k;  /* how (search/explore_workers.h) */
    const struct xm_rec *rec;
    const struct xm_states *st;
};

/* The pool's check (search/explore_workers.h): state i's disks on a fresh
 * execution in the worker's check folder, verify once per node of the
 * first run against its view, served by the worker's kept mounts (one per
 * disk), or a restart of the whole job. */
static void check_state(const void *ctx, struct ckh__xw_worker *wk, size_t i, struct ckh__xw_slot *s)
{
    const struct xm_run *w = ctx;
    const struct xm_state *st = &w->st->v[i];
    ckh__xw_check_state(&w->k, wk, st->disks, w->rec->nd, w->rec->cuts[st->cut].result_bytes, s);
}

/* The pool's end: the worker's verify mounts go. */
static void check_end(const void *ctx, struct ckh__xw_worker *wk)
{
    (void)ctx;
    ckh__xw_check_end(wk);
}

/* ---- 4. the report ---- */

/* What disk d holds, as "path (N B)" entries below dir, appended to buf. */
static void held_walk(struct ckh_fs *fs, const char *dir, char *buf, size_t bn, size_t *u, int *shown)
{
    struct ckh_listing l;
    if (ckh_fs_listdir(fs, dir, &l) != 0)
        return;
    for (size_t i = 0; i < l.count && *u < bn; i++) {
        char p[CKH_PATH_MAX + 1];
        if (ckh_path_join(p, sizeof p, dir, l.entries[i].name) != 0)
            continue;
        if (*shown >= 12) {
            *u += (size_t)snprintf(buf + *u, bn - *u, " ...");
            break;
        }
        struct ckh_stat sb;
        if (l.entries[i].type == CKH_FT_DIR) {
            (*shown)++;
            *u += (size_t)snprintf(buf + *u, bn - *u, " %s/", p);
            held_walk(fs, p, buf, bn, u, shown);
        } else if (ckh_fs_stat(fs, p, &sb) == 0) {
            (*shown)++;
            *u += (size_t)snprintf(buf + *u, bn - *u, " %s (%" PRIu64 " B)", p, sb.size_bytes);
        }
        if (*shown >= 12)
            break;
    }
    ckh_fs_listing_free(&l);
}

static void held(const struct xm_rec *x, const struct xm_state *st, char *buf, size_t bn)
{
    size_t u = strlen(buf);
    for (size_t e = 0; e < x->nd && u < bn; e++) {
        u += (size_t)snprintf(buf + u, bn - u, "%s %s held:", e ? ";" : "; disks:", x->d[e].name);
        int shown = 0;
        if (u < bn)
            held_walk(ckh_simfs_fs(st->disks[e]), "/", buf, bn, &u, &shown);
        if (!shown && u < bn)
            u += (size_t)snprintf(buf + u, bn - u, " nothing");
    }
}

/* The report's words for failing state i: what each disk held
 * (ckh__xw_report's more). */
static void held_more(const void *ctx, size_t i, char *text, size_t n)
{
    const struct xm_run *w = ctx;
    held(w->rec, &w->st->v[i], text, n);
}

/* --keep DIR: one folder per disk, named as the disk. */
static int keep_disks(const struct xm_rec *x, const struct xm_state *st, const char *dir, char *err, size_t errlen)
{
    const char **names = calloc(x->nd ? x->nd : 1, sizeof *names);
    if (!names)
        return ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
    for (size_t e = 0; e < x->nd; e++)
        names[e] = x->d[e].name;
    int rc = ckh__xw_keep(st->disks, names, x->nd, dir, err, errlen);
    free(names);
    return rc;
}

/* ---- the entry point ---- */

/* The orders of x's run (search/explore_races.c): all, or order only. */
static int check_races(const struct xm_rec *x, const struct ckh_scenario *sc, uint64_t seed,
                       const struct ckh__cmd_job *je, const struct ckh_scenario_run *ref, uint64_t only,
                       uint64_t deadline_ms, struct ckh_xprog_result *out, char *err, size_t errlen)
{
    bool *shared = calloc(x->nd ? x->nd : 1, sizeof *shared);
    const char *names[XM_NAMES];
    if (!shared)
        return ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
    for (size_t e = 0; e < x->nd; e++)
        shared[e] = x->d[e].node < 0;
    for (int i = 0; i < XM_NAMES; i++)
        names[i] = x->names[i];
    struct ckh__xrace_in in = {.sc = sc, .seed = seed, .je = je, .ref = ref, .ops = x->ops, .opdisk = x->opdisk,
                               .opms = x->opms, .nops = x->nops, .shared = shared, .names = names,
                               .n = x->n < XM_NAMES ? x->n : XM_NAMES, .only = only, .deadline_ms = deadline_ms};
    int rc = ckh__xrace_explore(&in, out, err, errlen);
    free(shared);
    return rc;
}

bool ckh__xmulti_applies(const struct ckh_scenario *sc, const struct ckh_xprog_options *o)
{
    const struct ckh_scn_job *job = &sc->job;
    uint32_t nodes = job->nodes ? job->nodes : 1;
    size_t mounts = 0;
    for (size_t d = 0; d < job->ndisks; d++)
        mounts += job->disks[d].shared ? 1 : nodes;
    (void)o;
    return mounts > 1 || nodes > 1;
}

int ckh__xmulti_explore(const struct ckh_scenario *sc, const struct ckh_xprog_options *o,
                        enum ckh_xprog_check check, enum ckh_xprog_start start,
                        struct ckh_xprog_result *out, char *err, size_t errlen)
{
    const struct ckh_scn_explore *e = &sc->explore;
    uint64_t max_states = o->max_states ? o->max_states : e->max_states;
    uint64_t limit_ms = o->time_limit_ms ? o->time_limit_ms : e->time_limit_ns / 1000000u;
    enum ckh_xprog_crashes crashes = o->crashes ? o->crashes : (enum ckh_xprog_crashes)e->crashes;
    if (crashes == CKH_XPROG_CRASH_AUTO)
        crashes = CKH_XPROG_CRASH_ALL;
    enum ckh_xprog_others others = o->others_set ? o->others : (enum ckh_xprog_others)e->others;

    struct ckh__cmd_job je;
    struct xm_rec x;
    struct xm_states st;
    struct ckh_scenario_run ref;
    memset(&je, 0, sizeof je);
    memset(&x, 0, sizeof x);
    memset(&st, 0, sizeof st);
    memset(&ref, 0, sizeof ref);
    x.n = (int)(sc->job.nodes ? sc->job.nodes : 1);
    x.from_step = e->from_step;
    x.to_step = e->to_step;
    ref.sc = sc;
    ref.source_dir = o->source_dir ? o->source_dir : ".";
    uint64_t seed = o->seed_set ? o->seed : sc->seed;
    ref.seed = seed;
    int rc;

    uint64_t t0 = ckh_posix_now_ms();
    struct ckh__cmd_watch watch = {.on_op = rec_op, .on_end = rec_end, .ctx = &x};
    if ((rc = ckh__xw_record(sc, seed, t0, &je, &watch, &ref, out, err, errlen)) != 0)
        goto out;
    if ((rc = x.err) != 0 || !x.results || !x.d) {
        rc = ckh_errf(err, errlen, rc ? rc : CKH_ENOMEM, "recording the run: out of memory");
        goto out;
    }
    out->ops = x.nops;
    out->crash_points = x.ncuts;
    if (o->only_order || crashes == CKH_XPROG_CRASH_NONE) { /* --order N alone; or the orders alone */
        out->orders_only = true;
        if (o->only_state)
            rc = ckh_errf(err, errlen, CKH_EINVAL, "--state %" PRIu64 ": crashes none has no crash state",
                          o->only_state);
        else
            rc = check_races(&x, sc, seed, &je, &ref, o->only_order, limit_ms ? t0 + limit_ms : 0, out, err,
                             errlen);
        goto out;
    }

    struct xm_gen G = {.x = &x, .crashes = crashes, .others = others, .max_states = max_states,
                       .only = o->only_state, .out = &st};
    if ((rc = generate(&G)) == -EINTR) {
        ckh_errf(err, errlen, rc, "interrupted by signal %d", ckh__cmd_interrupted());
        goto out;
    }
    if (rc) {
        ckh_errf(err, errlen, rc, "generating crash states: %s", ckh_strerror(rc));
        goto out;
    }
    out->states = st.generated;
    out->distinct = st.n;
    out->bounded = st.bounded;
    if (st.bounded)
        snprintf(out->bound, sizeof out->bound, "max_states %" PRIu64 " reached (cuts from operation %" PRIu64
                 " on were not explored)", max_states, st.n ? x.cuts[st.v[st.n - 1].cut].g + 1 : 0);
    if (o->only_state && st.n == 0) {
        rc = ckh_errf(err, errlen, CKH_EINVAL, "--state %" PRIu64 ": this run has %" PRIu64 " crash states",
                      o->only_state, st.generated);
        goto out;
    }
    if (o->keep_dir && (rc = keep_disks(&x, &st.v[0], o->keep_dir, err, errlen)) != 0)
        goto out;
    const char *res[CKH_RUNNER_MAX_NODES];
    for (int n = 0; n < x.n && n < CKH_RUNNER_MAX_NODES; n++)
        res[n] = x.results[n];
    struct xm_run w = {.k = {.sc = sc, .seed = seed, .je = &je, .check = check, .ref = &ref, .results = res,
                             .nodes = x.n, .views = true, .remount = o->verify_remount},
                       .rec = &x, .st = &st};
    struct ckh__xw_pool pool = {.n = st.n, .jobs = o->jobs ? o->jobs : 1, .deadline_ms = limit_ms ? t0 + limit_ms : 0,
                                .start = start, .dir = je.dir, .check = check_state, .end = check_end, .ctx = &w};
    if ((rc = ckh__xw_check_report(st.v, sizeof *st.v, &pool, limit_ms, held_more, &w, out, err, errlen)) != 0)
        goto out;
    rc = check_races(&x, sc, seed, &je, &ref, 0, limit_ms ? t0 + limit_ms : 0, out, err, errlen);
out:
    states_free(&st, x.nd);
    rec_free(&x);
    ckh_scenario_run_free(&ref);
    ckh__cmd_job_end(&je);
    if (rc)
        ckh_xprog_result_free(out);
    return rc;
}
