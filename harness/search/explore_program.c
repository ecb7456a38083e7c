/* Crash states of a real program (search/explore_program.h says what and
 * why; docs/PROGRAMS.md says how to use it).
 *
 * Data flow:
 *   1. record: the fault-free reference run of the command job, watched:
 *      each operation on the mount is appended to the trace, and before an
 *      operation that follows one that could change the disk, the disk is
 *      cloned (a crash point), together with how many bytes of each node's
 *      result file had been read by then (run 1's records at that crash);
 *   2. generate: each crash point's pending operations are resolved by the
 *      explorer's choice vectors on a clone; states are numbered K in that
 *      order, and each distinct durable state (by digest) is kept;
 *   3. check: each kept state, likely failures first (explore_order.c),
 *      in `jobs` forked workers that take the next state from a shared
 *      counter: a fresh execution of the job whose one disk is the state,
 *      then `verify` (served by the worker's one kept mount, the state's
 *      disk swapped onto it: ckh_ckhfs_swap_disk) or a restart judged by
 *      the oracles (exec/command.h),
 *      its Python programs started from the worker's warm launchers
 *      (exec/command_warm.h) unless cold starts were asked for;
 *   4. report: the failures, smallest K first.
 * Interrupts (SIGINT, SIGTERM, SIGHUP, recorded by the command jobs'
 * watch): the run or check in progress stops at once (its programs'
 * process groups killed and reaped, its mounts unmounted), no further
 * state is generated or checked, the check workers are told (SIGTERM) and
 * reaped, the job's folder goes, and the call returns -EINTR.
 * Memory: every crash point holds a clone (bytes shared with the disk), so
 * the cost is O(crash points x (inodes + extents)), never O(bytes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/command.h"
#include "exec/command_proc.h"
#include "exec/command_result.h"
#include "exec/command_warm.h"
#include "search/explore_internal.h"
#include "search/explore_program.h"
#include "search/explore_multi.h"
#include "search/explore_store.h"
#include "search/explore_workers.h"
#include "judge/judge.h"

/* ---- 1. the recorded run ---- */

/* A crash point: the disk before op k (k ops applied). */
struct xp_point {
    uint64_t k;               /* ops applied */
    struct ckh_simfs *disk;   /* clone (owned) */
    int node;                 /* node of the next op (-1: the end of the run) */
    int64_t step;             /* that node's last recorded step (-1: none) */
    uint64_t *result_bytes;   /* [n]: bytes of each node's result file read by then (owned) */
};

struct xp_rec {
    int n;                        /* nodes of the job */
    int64_t from_step, to_step;   /* window (-1: open) */
    struct ckh__xop *ops;         /* the program's operations on the mount (owned) */
    size_t nops, capops;
    struct xp_point *pts;         /* crash points, k ascending (owned) */
    size_t npts, cappts;
    bool prev_changes;            /* the last op could change the disk */
    int err;                      /* first failure (ENOMEM) */
    char (*results)[CKH__CMD_PATH_MAX]; /* [n]: run 1's result files (owned) */
    char node_names[64][CKH_NODE_NAME_LEN]; /* names of the first 64 nodes, for texts */
};

static bool in_window(const struct xp_rec *x, int64_t step)
{
    return (x->from_step < 0 || step >= x->from_step) && (x->to_step < 0 || step <= x->to_step);
}

static void take_point(struct xp_rec *x, struct ckh__cmd *c, struct ckh_simfs *disk, int node, int64_t step)
{
    if (x->err)
        return;
    if (x->npts == x->cappts) {
        size_t cap = x->cappts ? x->cappts * 2 : 64;
        struct xp_point *v = realloc(x->pts, cap * sizeof *v);
        if (!v) {
            x->err = CKH_ENOMEM;
            return;
        }
        x->pts = v;
        x->cappts = cap;
    }
    /* crash points k ascending: an op is appended between two of them */
    CKH_ASSERT(node < x->n && (x->npts == 0 || x->pts[x->npts - 1].k < x->nops));
    struct xp_point *p = &x->pts[x->npts];
    memset(p, 0, sizeof *p);
    p->k = x->nops;
    p->node = node;
    p->step = step;
    p->result_bytes = calloc((size_t)x->n, sizeof *p->result_bytes);
    if (!p->result_bytes || ckh_simfs_clone(disk, &p->disk) != 0) {
        free(p->result_bytes);
        x->err = CKH_ENOMEM;
        return;
    }
    for (int i = 0; i < x->n; i++) {
        if (node >= 0 && i != node)
            ckh__cmd_progress_refresh(c, i); /* lock held: every node's records so far */
        p->result_bytes[i] = ckh__xprog_result_consumed(&c->nodes[i]);
    }
    x->npts++;
}

/* The watch's on_op (server thread, lock held). */
static void rec_op(void *ctx, struct ckh__cmd_mount *m, const struct ckh_ckhfs_op *op)
{
    struct xp_rec *x = ctx;
    struct ckh__cmd *c = m->c;
    int64_t step = c->nodes[op->node].prog.step;
    if (x->prev_changes && in_window(x, step))
        take_point(x, c, m->disk, op->node, step);
    if (x->err)
        return;
    if (x->nops == x->capops) {
        size_t cap = x->capops ? x->capops * 2 : 128;
        struct ckh__xop *v = realloc(x->ops, cap * sizeof *v);
        if (!v) {
            x->err = CKH_ENOMEM;
            return;
        }
        x->ops = v;
        x->capops = cap;
    }
    struct ckh__xop *o = &x->ops[x->nops];
    if ((x->err = ckh__xprog_op_copy(m, op, o)) != 0)
        return;
    x->nops++;
    /* ckhfs does not report an open's flags: any open may create or truncate. */
    x->prev_changes = ckh__explore_op_changes(o) || o->kind == CKH_OP_OPEN;
}

/* The watch's on_end: the state after the last operation, and where run
 * 1's result files are. */
static void rec_end(void *ctx, struct ckh__cmd *c)
{
    struct xp_rec *x = ctx;
    int64_t step = -1;
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i].prog.step > step)
            step = c->nodes[i].prog.step;
    if (x->prev_changes && in_window(x, step) && c->nmounts == 1)
        take_point(x, c, c->mounts[0].disk, -1, step);
    x->results = calloc((size_t)c->n, sizeof *x->results);
    if (!x->results) {
        x->err = CKH_ENOMEM;
        return;
    }
    for (int i = 0; i < c->n; i++) {
        snprintf(x->results[i], sizeof x->results[i], "%s", c->nodes[i].result);
        if (i < (int)(sizeof x->node_names / sizeof x->node_names[0]))
            snprintf(x->node_names[i], sizeof x->node_names[i], "%s", c->nodes[i].name);
    }
}

static void rec_free(struct xp_rec *x)
{
    for (size_t i = 0; i < x->nops; i++) {
        free(x->ops[i].path);
        free(x->ops[i].path2);
    }
    free(x->ops);
    for (size_t i = 0; i < x->npts; i++) {
        ckh_simfs_destroy(x->pts[i].disk);
        free(x->pts[i].result_bytes);
    }
    free(x->pts);
    free(x->results);
    memset(x, 0, sizeof *x);
}

/* ---- 2. the crash states ---- */

struct xp_state {
    struct ckh__xw_state h;   /* its number, check priority and words (first member) */
    size_t point;             /* its crash point (index into pts) */
    struct ckh_simfs *disk;   /* the crashed disk (owned) */
};

struct xp_states {
    struct xp_state *v;
    size_t n, cap;
    uint64_t generated;
    bool bounded;
};

static void states_free(struct xp_states *s)
{
    for (size_t i = 0; i < s->n; i++)
        ckh_simfs_destroy(s->v[i].disk);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int push_state(struct xp_states *s, uint64_t k, size_t point, int prio, struct ckh_simfs *d)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct xp_state *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return CKH_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    /* numbered in generation order: kept states k ascending */
    CKH_ASSERT(k >= 1 && k <= s->generated && (s->n == 0 || s->v[s->n - 1].h.k < k));
    s->v[s->n++] = (struct xp_state){.h = {.k = k, .prio = prio}, .point = point, .disk = d};
    return 0;
}

static void describe(const struct xp_rec *x, const struct xp_point *pt, const struct ckh__xpend *p,
                     const enum ckh_crash_choice *ch, size_t n, char *buf, size_t bn)
{
    char ctx[160];
    const char *who = pt->node >= 0 && pt->node < (int)(sizeof x->node_names / sizeof x->node_names[0])
                          ? x->node_names[pt->node] : "the job";
    if (pt->node < 0)
        snprintf(ctx, sizeof ctx, "after the job ended");
    else if (pt->step >= 0)
        snprintf(ctx, sizeof ctx, "%s after its step %" PRId64, who, pt->step);
    else
        snprintf(ctx, sizeof ctx, "%s before its first step", who);
    struct ckh__xcrash c = {.t = x->ops, .k = (size_t)pt->k, .total = x->nops, .p = p, .ch = ch, .n = n,
                            .node = who, .context = ctx};
    ckh__explore_state_desc(&c, buf, bn);
}

/* Generates the states of every crash point, keeping each distinct one
 * (or state only alone). */
static int generate(const struct xp_rec *x, uint64_t max_states, uint64_t only, struct xp_states *out)
{
    struct ckh__xseen seen = {0};
    int rc = 0;
    for (size_t i = 0; i < x->npts && rc == 0 && !out->bounded; i++) {
        if (ckh__cmd_interrupted()) {
            rc = -EINTR;
            break;
        }
        const struct xp_point *pt = &x->pts[i];
        struct ckh__xpend *p = NULL;
        size_t n = 0;
        if ((rc = ckh__explore_pend_copy(pt->disk, &p, &n)) != 0)
            break;
        enum ckh_crash_choice *ch = calloc(n ? n : 1, sizeof *ch);
        if (!ch)
            rc = CKH_ENOMEM;
        for (size_t v = 0; rc == 0 && ckh__explore_vector(v, p, n, ch); v++) {
            if (max_states && out->generated >= max_states) {
                out->bounded = true;
                break;
            }
            uint64_t k = ++out->generated;
            if (only && k != only)
                continue;
            struct ckh_simfs *d;
            if ((rc = ckh_simfs_clone(pt->disk, &d)) != 0)
                break;
            if (ckh_simfs_crash(d, -1, ch, n) != 0 ||
                (!only && !ckh__explore_seen_insert(&seen, ckh_simfs_digest(d, true)))) {
                ckh_simfs_destroy(d);
                continue;
            }
            if ((rc = push_state(out, k, i, ckh__xorder_priority(x->ops, (size_t)pt->k, ch, n), d)) != 0) {
                ckh_simfs_destroy(d);
                break;
            }
            describe(x, pt, p, ch, n, out->v[out->n - 1].h.desc, sizeof out->v[out->n - 1].h.desc);
            if (only) {
                out->bounded = true; /* found: nothing after it matters */
                break;
            }
        }
        free(ch);
        ckh__explore_pend_free(p, n);
    }
    /* every kept state distinct: the digest set holds one per state kept */
    CKH_ASSERT(rc != 0 || (out->n <= out->generated && (only ? out->n <= 1 : seen.n <= out->n)));
    free(seen.v);
    if (only)
        out->bounded = false;
    return rc;
}

/* ---- 3. the checks ---- */

/* What each check reads (borrowed). */
struct xp_run {
    struct ckh__xw_checker k;           /* how (search/explore_workers.h) */
    const struct xp_rec *rec;
    const struct xp_states *st;
};

/* Replaces every occurrence of what in text by with (in place, n bytes):
 * a state's own folder in a message becomes $CKH_CKPT_DIR, so that equal
 * symptoms read equal. */
static void replace_all(char *text, size_t n, const char *what, const char *with)
{
    size_t wl = strlen(what);
    char *at;
    if (!wl)
        return;
    while ((at = strstr(text, what)) != NULL) {
        char rest[1024];
        snprintf(rest, sizeof rest, "%s", at + wl);
        snprintf(at, n - (size_t)(at - text), "%s%s", with, rest);
    }
}

/* The pool's check (search/explore_workers.h): state i's one disk on a
 * fresh execution in the worker's check folder, verify served by the
 * worker's kept mount (wk->keep) unless remounting. */
static void check_state(const void *ctx, struct ckh__xw_worker *wk, size_t i, struct ckh__xw_slot *s)
{
    const struct xp_run *w = ctx;
    const struct xp_state *st = &w->st->v[i];
    ckh__xw_check_state(&w->k, wk, &st->disk, 1, w->rec->pts[st->point].result_bytes, s);
}

/* The pool's end: the worker's verify mount goes. */
static void check_end(const void *ctx, struct ckh__xw_worker *wk)
{
    (void)ctx;
    ckh__xw_check_end(wk);
}

/* ---- keeping one state's files ---- */

static int copy_tree(struct ckh_fs *from, struct ckh_fs *to, const char *dir)
{
    struct ckh_listing l;
    int rc = ckh_fs_listdir(from, dir, &l);
    if (rc)
        return rc;
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        char p[CKH_PATH_MAX + 1];
        if ((rc = ckh_path_join(p, sizeof p, dir, l.entries[i].name)) != 0)
            break;
        if (l.entries[i].type == CKH_FT_DIR) {
            if ((rc = ckh_fs_mkdir(to, p)) == 0 || rc == -EEXIST)
                rc = copy_tree(from, to, p);
            continue;
        }
        if (l.entries[i].type == CKH_FT_SYMLINK) {
            char target[CKH_PATH_MAX + 1];
            int64_t len = ckh_fs_readlink(from, p, target, sizeof target - 1);
            if (len < 0) {
                rc = (int)len;
                break;
            }
            target[len] = '\0';
            rc = ckh_fs_symlink(to, target, p);
            continue;
        }
        struct ckh_file *in = NULL, *out = NULL;
        if ((rc = ckh_fs_open(from, p, CKH_O_RDONLY, &in)) != 0 ||
            (rc = ckh_fs_open(to, p, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &out)) != 0) {
            if (in)
                ckh_file_close(in);
            break;
        }
        char buf[65536];
        int64_t got;
        while ((got = ckh_file_read(in, buf, sizeof buf)) > 0 && rc == 0)
            rc = ckh_file_write_all(out, buf, (size_t)got);
        if (got < 0 && rc == 0)
            rc = (int)got;
        ckh_file_close(in);
        int crc = ckh_file_close(out);
        rc = rc ? rc : crc;
    }
    ckh_fs_listing_free(&l);
    return rc;
}

/* Writes d's files into the real folder dir (absent or empty; created). */
static int keep_state(struct ckh_simfs *d, const char *dir, char *err, size_t errlen)
{
    int krc = ckh__xw_keep_dir(dir, "files", err, errlen);
    if (krc != 0)
        return krc;
    struct ckh_fs *to = NULL;
    int rc = ckh_posix_fs_create(dir, &to);
    if (rc == 0)
        rc = copy_tree(ckh_simfs_fs(d), to, "/");
    ckh_posix_fs_destroy(to);
    if (rc)
        return ckh_errf(err, errlen, CKH_EINTERNAL, "--keep %s: writing the state's files: %s", dir,
                        ckh_strerror(rc));
    return 0;
}

/* The helpers explore_multi.c shares (search/explore_multi.h). */
uint64_t ckh__xprog_result_consumed(const struct ckh__cmd_node *nd)
{
    if (nd->result_fd < 0)
        return 0;
    off_t at = lseek(nd->result_fd, 0, SEEK_CUR);
    return at > (off_t)nd->npartial ? (uint64_t)at - nd->npartial : 0;
}

static char *join_prefix(const char *prefix, const char *path)
{
    if (!path)
        return NULL;
    char buf[CKH_PATH_MAX * 2 + 2];
    bool root = !prefix || !strcmp(prefix, "/");
    snprintf(buf, sizeof buf, "%s%s", root ? "" : prefix, path);
    return strdup(buf);
}

int ckh__xprog_op_copy(const struct ckh__cmd_mount *m, const struct ckh_ckhfs_op *op, struct ckh__xop *o)
{
    *o = (struct ckh__xop){.kind = (int)op->kind, .rank = op->node, .off = op->off, .len = op->len};
    o->path = join_prefix(m->prefix, op->path ? op->path : "");
    o->path2 = op->path2 ? (op->kind == CKH_OP_SYMLINK ? strdup(op->path2) : join_prefix(m->prefix, op->path2))
                         : NULL;
    if (!o->path || (op->path2 && !o->path2)) {
        free(o->path);
        free(o->path2);
        *o = (struct ckh__xop){0};
        return CKH_ENOMEM;
    }
    return 0;
}

int ckh__xprog_keep_disk(struct ckh_simfs *d, const char *dir, char *err, size_t errlen)
{
    return keep_state(d, dir, err, errlen);
}

void ckh__xprog_replace_all(char *text, size_t n, const char *what, const char *with)
{
    replace_all(text, n, what, with);
}

/* ---- the entry point ---- */

const char *ckh_xprog_start_name(enum ckh_xprog_start s)
{
    switch (s) {
    case CKH_XPROG_START_AUTO: return "auto";
    case CKH_XPROG_START_COLD: return "cold";
    case CKH_XPROG_START_WARM: return "warm";
    }
    return "?";
}

const char *ckh_xprog_check_name(enum ckh_xprog_check c)
{
    switch (c) {
    case CKH_XPROG_AUTO: return "auto";
    case CKH_XPROG_VERIFY: return "verify";
    case CKH_XPROG_RESTART: return "restart";
    }
    return "?";
}

void ckh_xprog_result_free(struct ckh_xprog_result *r)
{
    if (!r)
        return;
    free(r->fails);
    free(r->order_fails);
    memset(r, 0, sizeof *r);
}

/* Bad input the explorer cannot take, before anything runs. */
static int refuse(const struct ckh_scenario *sc, enum ckh_xprog_check check, enum ckh_xprog_start start,
                  char *err, size_t errlen)
{
    if (!sc->job.ncommands)
        return ckh_errf(err, errlen, CKH_EINVAL, "%s: ckh explore takes a command job (job.command: a real "
                        "program); a backend plugin goes through ckh validate-backend", sc->file);
    if (sc->nfaults)
        return ckh_errf(err, errlen, CKH_EINVAL, "%s:%d:%d: ckh explore makes its own crashes; the scenario's "
                        "faults would change the run it records (remove 'faults:' or run it with ckh run)",
                        sc->file, sc->faults[0].line, sc->faults[0].column);
    if (check == CKH_XPROG_VERIFY && !sc->verify.argc)
        return ckh_errf(err, errlen, CKH_EINVAL, "%s: the verify check needs a 'verify:' command (or check "
                        "by restarting the job: --check restart)", sc->file);
    /* Warm starts required: every program a check starts must allow them
     * (verify, and with the restart check the job's own programs). */
    for (size_t i = 0; start == CKH_XPROG_START_WARM && i <= sc->job.ncommands; i++) {
        const struct ckh_scn_command *cmd = i < sc->job.ncommands ? &sc->job.commands[i] : &sc->verify;
        char why[300];
        size_t at;
        if ((i < sc->job.ncommands && check != CKH_XPROG_RESTART) || !cmd->argc ||
            ckh__warm_serves(cmd, &at, why, sizeof why))
            continue;
        return ckh_errf(err, errlen, CKH_EINVAL, "%s:%d:%d: --start warm: %s (explore it with --start cold "
                        "or auto)", sc->file, cmd->line, cmd->column, why);
    }
    return 0;
}

/* Step 1: the watched reference run of the job; out gets how long it took,
 * its ops and its crash points. */
static int record_run(const struct ckh_scenario *sc, uint64_t seed, uint64_t t0, struct ckh__cmd_job *je,
                      struct xp_rec *x, struct ckh_scenario_run *ref, struct ckh_xprog_result *out, char *err,
                      size_t errlen)
{
    struct ckh__cmd_watch watch = {.on_op = rec_op, .on_end = rec_end, .ctx = x};
    int rc = ckh__xw_record(sc, seed, t0, je, &watch, ref, out, err, errlen);
    if (rc)
        return rc;
    if ((rc = x->err) != 0 || !x->results)
        return ckh_errf(err, errlen, rc ? rc : CKH_ENOMEM, "recording the run: out of memory");
    out->ops = x->nops;
    out->crash_points = x->npts;
    return 0;
}

/* Step 2: the crash states (state `only` alone when set); out gets their
 * counts and the bound that stopped the generation. */
static int generate_states(const struct xp_rec *x, uint64_t max_states, uint64_t only, struct xp_states *st,
                           struct ckh_xprog_result *out, char *err, size_t errlen)
{
    int rc;
    if ((rc = generate(x, max_states, only, st)) == -EINTR)
        return ckh_errf(err, errlen, rc, "interrupted by signal %d", ckh__cmd_interrupted());
    if (rc != 0)
        return ckh_errf(err, errlen, rc, "generating crash states: %s", ckh_strerror(rc));
    out->states = st->generated;
    out->distinct = st->n;
    if (st->bounded)
        snprintf(out->bound, sizeof out->bound, "max_states %" PRIu64 " reached (crash points from op %" PRIu64
                 " on were not explored)", max_states,
                 st->n ? x->pts[st->v[st->n - 1].point].k + 1 : 0);
    out->bounded = st->bounded;
    if (only && st->n == 0)
        return ckh_errf(err, errlen, CKH_EINVAL, "--state %" PRIu64 ": this run has %" PRIu64 " crash states",
                        only, st->generated);
    return 0;
}

int ckh_explore_program(const struct ckh_scenario *sc, const struct ckh_xprog_options *o,
                        struct ckh_xprog_result *out, char *err, size_t errlen)
{
    const struct ckh_scn_explore *e = &sc->explore;
    enum ckh_xprog_check check = o->check ? o->check : (enum ckh_xprog_check)e->check;
    if (check == CKH_XPROG_AUTO)
        check = sc->verify.argc ? CKH_XPROG_VERIFY : CKH_XPROG_RESTART;
    enum ckh_xprog_start start = o->start_set ? o->start : (enum ckh_xprog_start)e->start;
    uint64_t max_states = o->max_states ? o->max_states : e->max_states;
    uint64_t limit_ms = o->time_limit_ms ? o->time_limit_ms : e->time_limit_ns / 1000000u;
    memset(out, 0, sizeof *out);
    out->check = check;
    out->start = start;
    int rc = refuse(sc, check, start, err, errlen);
    if (rc)
        return rc;
    if (o->keep_dir && !o->only_state)
        return ckh_errf(err, errlen, CKH_EINVAL, "--keep needs --state K (the state whose files to keep)");
    if (o->only_order && o->only_state)
        return ckh_errf(err, errlen, CKH_EINVAL, "--order N and --state K cannot be given together (an order "
                        "is a run of the whole job, a state a crash of one)");
    if (sc->job.object_store) /* its requests' cuts (search/explore_store.h) */
        return ckh__xstore_explore(sc, o, check, start, out, err, errlen);
    if (ckh__xmulti_applies(sc, o))
        return ckh__xmulti_explore(sc, o, check, start, out, err, errlen);
    if (o->only_order)
        return ckh_errf(err, errlen, CKH_EINVAL, "--order %" PRIu64 ": this job has one node and one disk, and "
                        "orders are of several nodes' operations on a shared disk", o->only_order);
    if ((o->crashes ? (int)o->crashes : sc->explore.crashes) == CKH_XPROG_CRASH_NONE)
        return ckh_errf(err, errlen, CKH_EINVAL, "crashes none: this job has one node and one disk, so it has no "
                        "orders of several nodes' operations to explore instead of its crash states");

    struct ckh__cmd_job je;
    struct xp_rec x;
    struct xp_states st;
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

    uint64_t t0 = ckh_posix_now_ms();
    if ((rc = record_run(sc, seed, t0, &je, &x, &ref, out, err, errlen)) != 0)
        goto out;
    if ((rc = generate_states(&x, max_states, o->only_state, &st, out, err, errlen)) != 0)
        goto out;
    if (o->keep_dir && (rc = ckh__xw_keep(&st.v[0].disk, NULL, 1, o->keep_dir, err, errlen)) != 0)
        goto out;

    const char *res[CKH_RUNNER_MAX_NODES];
    for (int n = 0; n < x.n && n < CKH_RUNNER_MAX_NODES; n++)
        res[n] = x.results[n];
    struct xp_run w = {.k = {.sc = sc, .seed = seed, .je = &je, .check = check, .ref = &ref, .results = res,
                             .nodes = x.n, .remount = o->verify_remount},
                       .rec = &x, .st = &st};
    struct ckh__xw_pool pool = {.n = st.n, .jobs = o->jobs ? o->jobs : 1, .deadline_ms = limit_ms ? t0 + limit_ms : 0,
                                .start = start, .dir = je.dir, .check = check_state, .end = check_end, .ctx = &w};
    rc = ckh__xw_check_report(st.v, sizeof *st.v, &pool, limit_ms, NULL, NULL, out, err, errlen);
out:
    states_free(&st);
    rec_free(&x);
    ckh_scenario_run_free(&ref);
    ckh__cmd_job_end(&je);
    if (rc)
        ckh_xprog_result_free(out);
    return rc;
}

int ckh_explore_program_verdict(const struct ckh_scenario *sc, const struct ckh_run_options *ro,
                                struct ckh_report_result *out)
{
    uint64_t t0 = ckh_posix_now_ms();
    const char *argv0 = ro->argv0 ? ro->argv0 : "ckh";
    struct ckh_xprog_options o = {.seed_set = ro->seed_set, .seed = ro->seed, .jobs = 1, .argv0 = argv0,
                                  .source_dir = ro->source_dir};
    struct ckh_xprog_result r;
    char err[1200];
    uint64_t seed = ro->seed_set ? ro->seed : sc->seed;
    ckh_report_set(&out->name, "%s", sc->name);
    ckh_report_set(&out->file, "%s", sc->file);
    out->seed = seed;
    ckh_report_set(&out->replay, "%s explore %s --seed %" PRIu64, argv0, sc->file, seed);
    int rc = ckh_explore_program(sc, &o, &r, err, sizeof err);
    out->wall_ms = ckh_posix_now_ms() - t0;
    if (rc == CKH_EFAILS_UNFAULTED) { /* a found bug: the fault-free run itself fails */
        bool expected = sc->explore.expect_fail && (!sc->explore.symptom || strstr(err, sc->explore.symptom));
        char detail[1400];
        snprintf(detail, sizeof detail, "the fault-free run of the job fails: %.1300s", err);
        ckh_report_add_oracle(out, "explore", expected, detail);
        out->verdict = expected ? CKH_VERDICT_PASS : CKH_VERDICT_FAIL;
        if (!expected) {
            ckh_report_set(&out->failed_oracle, "explore");
            if (sc->explore.expect_fail)
                ckh_report_set(&out->message, "expected a crash state%s whose check says '%s' (explore.symptom), "
                               "but %s", r.orders_checked ? " or order" : "", sc->explore.symptom, detail);
            else
                ckh_report_set(&out->message, "%s", detail);
            ckh_report_set(&out->replay, "%s run %s --seed %" PRIu64, argv0, sc->file, seed);
        }
        out->runs = 1;
        return 0;
    }
    if (rc) {
        out->verdict = CKH_VERDICT_ERROR;
        ckh_report_set(&out->message, "%s", err);
        return rc;
    }
    char detail[1400];
    snprintf(detail, sizeof detail, "%" PRIu64 " distinct crash states of %" PRIu64 " operations pass %s%s%s",
             r.checked, r.ops, ckh_xprog_check_name(r.check), r.bounded ? "; bounded: " : "",
             r.bounded ? r.bound : "");
    /* explore.symptom: some failing state's (or order's) check says it
     * (the first such is the one named; crash states before orders). */
    size_t all = r.nfails + r.norder_fails, named = 0;
#define XP_FAIL(i) ((i) < r.nfails ? &r.fails[(i)] : &r.order_fails[(i) - r.nfails])
    while (sc->explore.symptom && named < all && !strstr(XP_FAIL(named)->symptom, sc->explore.symptom) &&
           !strstr(XP_FAIL(named)->state, sc->explore.symptom))
        named++;
    const struct ckh_xprog_failure *pick = all ? XP_FAIL(named < all ? named : 0) : NULL;
    bool pick_order = all && (named < all ? named : 0) >= r.nfails;
#undef XP_FAIL
    if (r.orders_checked && !all)
        snprintf(detail + strlen(detail), sizeof detail - strlen(detail), "; %" PRIu64 " orders of the nodes' "
                 "operations pass", r.orders_checked);
    if (pick && !pick_order)
        snprintf(detail, sizeof detail, "%zu of %" PRIu64 " crash states fail %s; the smallest%s, state %" PRIu64
                 ": %.500s: %.700s", r.nfails, r.checked, ckh_xprog_check_name(r.check),
                 named && named < all ? " with the expected symptom" : "", pick->k, pick->state, pick->symptom);
    else if (pick)
        snprintf(detail, sizeof detail, "%zu of %" PRIu64 " orders of the nodes' operations fail; the first%s, "
                 "order %" PRIu64 ": %.500s: %.700s", r.norder_fails, r.orders_checked,
                 named && named < all ? " with the expected symptom" : "", pick->k, pick->state, pick->symptom);
    bool passed = sc->explore.expect_fail ? all > 0 && named < all : all == 0;
    ckh_report_add_oracle(out, "explore", passed, detail);
    out->verdict = passed ? CKH_VERDICT_PASS : CKH_VERDICT_FAIL;
    if (!passed) {
        ckh_report_set(&out->failed_oracle, "explore");
        if (all && !sc->explore.expect_fail)
            ckh_report_set(&out->message, "%s", detail);
        else if (all)
            ckh_report_set(&out->message, "expected a crash state whose check says '%s' (explore.symptom), "
                           "but %s", sc->explore.symptom, detail);
        else
            ckh_report_set(&out->message, "expected some crash state to fail %s%s (explore.expect: fail), but %s",
                           ckh_xprog_check_name(r.check), r.orders_checked ? ", or some order to fail" : "", detail);
        if (pick)
            ckh_report_set(&out->replay, "%s explore %s --seed %" PRIu64 " --%s %" PRIu64, argv0, sc->file, seed,
                           pick_order ? "order" : "state", pick->k);
    }
    /* Runs of the job: the recorded one, and one restart per state checked by restarting. */
    uint64_t runs = 1 + (r.check == CKH_XPROG_RESTART ? r.checked : 0) + r.orders_checked;
    out->runs = (uint32_t)(runs > UINT32_MAX ? UINT32_MAX : runs);
    ckh_xprog_result_free(&r);
    return 0;
}
