/* Orders of several nodes' operations on a shared disk (search/
 * explore_multi.h, "Orders", says what; docs/ARCHITECTURE.md, "Orders of
 * several nodes", how they are bounded).
 *
 * Data flow: find (pairs read from the recorded run, numbered N) ->
 * check (for each, or for --order N alone: a fresh execution of the whole
 * job, its order forced by the ckhfs hook, judged by the oracles) ->
 * report (each failing order: which node's operation went first, and the
 * symptom).
 * Bound: one order per (maker node, name made, other node) whose other
 * node first used the name after it was made; at most ORDER_MAX orders.
 * Determinism: the orders follow from the recorded run alone; a forced
 * order does not depend on timing, but a held operation waits at most a
 * bound (a dependence ckhfs cannot see, such as a lock the kernel holds or
 * a barrier the nodes meet at outside the disk, would otherwise hold it
 * for ever), and the report says when an order was not forced.
 * The bound, hold_ms: HOLD_MIN_MS plus HOLD_FACTOR times how long the
 * other node took, in the recorded run, from the held operation to its
 * first use of the name, at most HOLD_MAX_MS. A node that in the recorded
 * run got there within a second is waited for a few seconds, not ten: an
 * order that a barrier makes impossible costs that much, not HOLD_MAX_MS.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "ckh/posix.h"
#include "exec/command.h"
#include "exec/command_proc.h"
#include "exec/tmpdir.h"
#include "judge/judge.h"
#include "search/explore_internal.h"
#include "search/explore_multi.h"

#define ORDER_MAX 256       /* orders read from one run */
#define HOLD_MAX_MS 10000u  /* the longest an operation is held for its order */
#define HOLD_MIN_MS 2000u   /* the shortest */
#define HOLD_FACTOR 4u      /* times the recorded run's time to the releasing operation */

/* How long in's operation h may be held for the other node's operation j
 * (j after h in the recorded order). */
static uint32_t hold_ms(const struct ckh__xrace_in *in, size_t h, size_t j)
{
    if (!in->opms)
        return HOLD_MAX_MS;
    uint64_t gap = in->opms[j] > in->opms[h] ? in->opms[j] - in->opms[h] : 0;
    if (gap > (HOLD_MAX_MS - HOLD_MIN_MS) / HOLD_FACTOR)
        return HOLD_MAX_MS;
    return HOLD_MIN_MS + HOLD_FACTOR * (uint32_t)gap;
}

struct xr_order {
    struct ckh__cmd_order rule; /* what the hook forces (its state fields zero) */
    char what[700];             /* the order, for people */
};

/* A recorded path as the hook names it: no trailing '/' but the root's. */
static void norm(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path ? path : "");
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/')
        out[--len] = '\0';
}

/* Whether path is dir or below it. */
static bool below(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/' || (n && dir[n - 1] == '/'));
}

/* Each recorded operation's paths, as the hook names them. */
struct xr_paths {
    char **p, **p2; /* [nops] (owned; p2[i] NULL unless a rename) */
    size_t n;
};

static void paths_free(struct xr_paths *P)
{
    for (size_t i = 0; i < P->n; i++) {
        free(P->p ? P->p[i] : NULL);
        free(P->p2 ? P->p2[i] : NULL);
    }
    free(P->p);
    free(P->p2);
    memset(P, 0, sizeof *P);
}

static int paths_make(const struct ckh__xop *ops, size_t nops, struct xr_paths *P)
{
    memset(P, 0, sizeof *P);
    P->p = calloc(nops ? nops : 1, sizeof *P->p);
    P->p2 = calloc(nops ? nops : 1, sizeof *P->p2);
    if (!P->p || !P->p2) {
        paths_free(P);
        return CKH_ENOMEM;
    }
    P->n = nops;
    for (size_t i = 0; i < nops; i++) {
        char q[CKH_PATH_MAX];
        norm(ops[i].path, q, sizeof q);
        if (!(P->p[i] = strdup(q)))
            goto oom;
        if (ops[i].kind == CKH_OP_RENAME && ops[i].path2) {
            norm(ops[i].path2, q, sizeof q);
            if (!(P->p2[i] = strdup(q)))
                goto oom;
        }
    }
    return 0;
oom:
    paths_free(P);
    return CKH_ENOMEM;
}

/* The name operation i makes (NULL when it makes none). */
static const char *made(const struct ckh__xop *ops, const struct xr_paths *P, size_t i)
{
    switch (ops[i].kind) {
    case CKH_OP_MKDIR: case CKH_OP_SYMLINK:
        return P->p[i];
    case CKH_OP_RENAME:
        return P->p2[i];
    case CKH_OP_OPEN: /* a create: no one had used that name before */
        for (size_t k = 0; k < i; k++)
            if (!strcmp(P->p[k], P->p[i]))
                return NULL;
        return P->p[i];
    default:
        return NULL;
    }
}

/* Whether operation k touches path or a path below it. */
static bool touches(const struct xr_paths *P, size_t k, const char *path)
{
    return below(P->p[k], path) || (P->p2[k] && below(P->p2[k], path));
}

/* Whether path's folder is dir ("/" has none). */
static bool in_folder(const char *path, const char *dir)
{
    const char *slash = strrchr(path, '/');
    if (!slash || !strcmp(path, "/"))
        return false;
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    return strlen(dir) == n && !strncmp(path, dir, n);
}

/* Whether operation k, held, would keep the kernel from asking ckhfs about
 * a name in folder dir: a listing of dir, or a lookup, creation or removal
 * of a name in it. ckhfs turns the kernel's parallel directory operations
 * off, so the kernel serves one such request per folder at a time (and
 * holds the folder's lock across a creation): another node's lookup in
 * dir would wait in the kernel behind the held one, unseen by the hook. */
static bool locks_folder(const struct ckh__xop *ops, const struct xr_paths *P, size_t k, const char *dir)
{
    switch (ops[k].kind) {
    case CKH_OP_LISTDIR:
        return !strcmp(P->p[k], dir);
    case CKH_OP_STAT: case CKH_OP_OPEN: case CKH_OP_MKDIR: case CKH_OP_RMDIR: case CKH_OP_UNLINK:
    case CKH_OP_SYMLINK: case CKH_OP_READLINK: case CKH_OP_RENAME:
        return in_folder(P->p[k], dir) || (P->p2[k] && in_folder(P->p2[k], dir));
    default:
        return false;
    }
}

/* The orders of in's run into *out (malloc'd), *n of them. */
static int find(const struct ckh__xrace_in *in, struct xr_order **out, size_t *n)
{
    struct xr_order *v = NULL;
    size_t nv = 0;
    struct xr_paths P;
    *out = NULL;
    *n = 0;
    if (paths_make(in->ops, in->nops, &P) != 0)
        return CKH_ENOMEM;
    for (size_t i = 0; i < in->nops && nv < ORDER_MAX; i++) {
        const struct ckh__xop *mk = &in->ops[i];
        int a = mk->rank, e = in->opdisk[i];
        if (a < 0 || a >= in->n || !in->shared[e])
            continue;
        const char *p = made(in->ops, &P, i);
        if (!p || !strcmp(p, "/"))
            continue;
        for (int b = 0; b < in->n && nv < ORDER_MAX; b++) {
            if (b == a)
                continue;
            size_t j = SIZE_MAX;
            bool before = false;
            for (size_t k = 0; k < in->nops && j == SIZE_MAX && !before; k++) {
                if (in->ops[k].rank != b || in->opdisk[k] != e || !touches(&P, k, p))
                    continue;
                if (k < i)
                    before = true; /* b used the name first already */
                else
                    j = k;
            }
            if (before || j == SIZE_MAX)
                continue;
            /* a's operation to hold: its last before i that neither
             * touches p nor locks p's folder in the kernel; else its last
             * that does not touch p (b's lookup then waits in the kernel
             * until the hold ends, hold_ms); else the maker itself */
            char dir[CKH_PATH_MAX];
            snprintf(dir, sizeof dir, "%s", p);
            char *slash = strrchr(dir, '/');
            slash[slash == dir ? 1 : 0] = '\0';
            size_t h = SIZE_MAX, loose = SIZE_MAX;
            for (size_t k = i; k-- > 0 && h == SIZE_MAX;) {
                if (in->ops[k].rank != a || in->opdisk[k] != e || touches(&P, k, p))
                    continue;
                if (loose == SIZE_MAX)
                    loose = k;
                if (!locks_folder(in->ops, &P, k, dir))
                    h = k;
            }
            if (h == SIZE_MAX)
                h = loose != SIZE_MAX ? loose : i;
            struct xr_order o;
            memset(&o, 0, sizeof o);
            o.rule.hold_node = a;
            o.rule.hold_kind = in->ops[h].kind;
            snprintf(o.rule.hold_path, sizeof o.rule.hold_path, "%s", P.p[h]);
            for (size_t k = 0; k <= h; k++)
                o.rule.hold_nth += in->ops[k].rank == a && in->ops[k].kind == o.rule.hold_kind &&
                                   !strcmp(P.p[k], o.rule.hold_path);
            o.rule.until_node = b;
            snprintf(o.rule.until_path, sizeof o.rule.until_path, "%s", p);
            o.rule.max_ms = hold_ms(in, h, j);
            snprintf(o.what, sizeof o.what, "%s's %s %.200s before %s's %s %.200s (%s held at its %s %.200s)",
                     in->names[b], ckh_op_name((enum ckh_op_kind)in->ops[j].kind), P.p[j], in->names[a],
                     ckh_op_name((enum ckh_op_kind)mk->kind), p, in->names[a],
                     ckh_op_name((enum ckh_op_kind)o.rule.hold_kind), o.rule.hold_path);
            struct xr_order *nvv = realloc(v, (nv + 1) * sizeof *v);
            if (!nvv) {
                free(v);
                paths_free(&P);
                return CKH_ENOMEM;
            }
            v = nvv;
            v[nv++] = o;
        }
    }
    paths_free(&P);
    *out = v;
    *n = nv;
    return 0;
}

/* The job's folder in a message reads the same for every order. */
static void neutral(const struct ckh__cmd *c, char *text, size_t n)
{
    char mnt[CKH__CMD_PATH_MAX + 32];
    snprintf(mnt, sizeof mnt, "%s/mnt/", c->dir);
    ckh__xprog_replace_all(text, n, mnt, "<disk ");
    ckh__xprog_replace_all(text, n, c->dir, "<order>");
}

/* Runs order N (ord) and judges it: *failed and text, or a code with text. */
static int check(const struct ckh__xrace_in *in, uint64_t N, const struct xr_order *ord, bool *failed, char *text,
                 size_t n)
{
    char dir[CKH__CMD_PATH_MAX + 64];
    struct ckh__cmd c;
    struct ckh__cmd_order rule = ord->rule;
    struct ckh_scenario_run run;
    struct ckh_report_result r;
    memset(&c, 0, sizeof c);
    memset(&run, 0, sizeof run);
    ckh_report_result_init(&r);
    *failed = false;
    text[0] = '\0';
    snprintf(dir, sizeof dir, "%s/order%" PRIu64, in->je->dir, N);
    int rc = ckh__cmd_init(&c, in->sc, in->seed, 0, dir, in->je->cwd);
    if (rc == 0) {
        c.order = &rule;
        rc = ckh__cmd_order_run(&c, in->ref, &run);
    }
    if (rc == 0)
        rc = ckh__run_verdict(&run, &r);
    if (rc == 0) {
        *failed = r.verdict != CKH_VERDICT_PASS;
        if (*failed)
            snprintf(text, n, "%s: %s", r.failed_oracle ? r.failed_oracle : "verdict",
                     r.message ? r.message : "failed");
        if (*failed && (!rule.held || !rule.released))
            snprintf(text + strlen(text), n - strlen(text), " (the order was %s)",
                     !rule.held ? "not forced: the other node went first on its own"
                                : "forced only in part: the hold ended before its release");
        neutral(&c, text, n);
    } else {
        ckh__cmd_take_err(&c, rc, NULL, text, n);
    }
    ckh_report_result_clear(&r);
    ckh_scenario_run_free(&run);
    c.order = NULL;
    ckh__cmd_free(&c);
    ckh_tmp_remove(dir);
    return rc;
}

int ckh__xrace_explore(const struct ckh__xrace_in *in, struct ckh_xprog_result *out, char *err, size_t errlen)
{
    struct xr_order *v = NULL;
    size_t nv = 0;
    int rc = find(in, &v, &nv);
    if (rc)
        return ckh_errf(err, errlen, rc, "finding the orders: %s", ckh_strerror(rc));
    out->orders = nv;
    if (in->only > nv) {
        rc = ckh_errf(err, errlen, CKH_EINVAL, "--order %" PRIu64 ": this run has %zu order%s of its nodes' "
                      "operations", in->only, nv, nv == 1 ? "" : "s");
        goto out;
    }
    if (nv && !(out->order_fails = calloc(in->only ? 1 : nv, sizeof *out->order_fails))) {
        rc = ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nv; i++) {
        uint64_t N = i + 1;
        if (in->only && N != in->only)
            continue;
        if (in->deadline_ms && ckh_posix_now_ms() >= in->deadline_ms)
            break;
        if (ckh__cmd_interrupted()) {
            rc = ckh_errf(err, errlen, -EINTR, "interrupted by signal %d", ckh__cmd_interrupted());
            goto out;
        }
        bool failed;
        char text[900];
        if ((rc = check(in, N, &v[i], &failed, text, sizeof text)) != 0) {
            ckh_errf(err, errlen, rc, "order %" PRIu64 ": %s", N, text);
            goto out;
        }
        out->orders_checked++;
        if (!failed)
            continue;
        struct ckh_xprog_failure *f = &out->order_fails[out->norder_fails++];
        f->k = N;
        snprintf(f->state, sizeof f->state, "%s", v[i].what);
        snprintf(f->symptom, sizeof f->symptom, "%s", text);
    }
out:
    free(v);
    return rc;
}
