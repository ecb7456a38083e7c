/* The crash explorer's two-rank scenario (rule E6 of harness/search/explore.c).
 *
 * "rank0" and "rank1" save epoch 2 concurrently into one directory, each
 * through its own recording shim over one disk. They run as nodes of a
 * simulator (sim/, include/ckh/sim.h) whose schedule hook picks the rank
 * that issues the next operation: the shim's gate is a scheduling point
 * (ckh_sim_yield) before every op, so one pick of a rank lets it issue
 * exactly one op (its first pick starts it). The schedules:
 *   - alternation: the ranks take turns op by op; once one has finished,
 *     the other runs to its end;
 *   - split at s, for every s from 0 to the length of rank0's solo save:
 *     rank0 issues s ops, rank1 its whole save, then rank0 the rest.
 * No crash: both saves must return 0 and each rank must load its own data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "ckh/sim.h"
#include "search/explore_internal.h"

/* A rank of the two-rank scenario (node id = index). */
struct xrank {
    struct ckh__xshim shim;             /* its filesystem */
    const struct ckh_backend_ops *ops;  /* backend */
    const char *node;                   /* node name */
    const struct ckh_ws *ws;            /* what it saves */
    int rc;                             /* save result */
    int phase;                          /* where it is (CKH__PH_*) */
};

/* An explicit schedule of the two nodes. */
struct xsched {
    long split;     /* >= 0: rank0's picks before rank1 runs to its end; < 0: alternate */
    long picks0;    /* picks of rank0 so far */
    int last;       /* the node picked last (alternation) */
};

/* The schedule hook: returns the node to run next (E6). */
static int pick(void *ctx, const int *runnable, size_t n)
{
    struct xsched *s = ctx;
    bool can[2] = {false, false};
    for (size_t i = 0; i < n; i++)
        if (runnable[i] == 0 || runnable[i] == 1)
            can[runnable[i]] = true;
    int next;
    if (s->split >= 0)
        next = can[0] && s->picks0 <= s->split ? 0 : can[1] ? 1 : 0;
    else
        next = can[1 - s->last] ? 1 - s->last : s->last;
    if (next == 0)
        s->picks0++;
    s->last = next;
    return next;
}

/* A rank's program: open, save epoch 2, close. */
static int rank_main(struct ckh_env *env, void *arg)
{
    struct xrank *rk = arg;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    (void)env;
    ckh__explore_backend_cfg(&c, &rk->shim.base, NULL);
    rk->phase = CKH__PH_OPEN;
    rk->rc = rk->ops->open(&c, &b);
    if (rk->rc == 0) {
        rk->phase = CKH__PH_SAVE;
        rk->rc = ckh_backend_save(b, rk->node, 2, rk->ws, NULL, 0);
        rk->phase = CKH__PH_CLOSE;
        ckh_backend_close(b);
    }
    return 0;
}

/* Runs both ranks on r->disk under schedule s. 0, or an internal error
 * (x->msg says which) when the simulator cannot run them to their end. */
static int run_schedule(struct ckh__xctx *x, struct ckh__xrun *r, struct xrank *rk,
                        struct xsched *s)
{
    struct ckh_sim_config sc;
    struct ckh_sim *sim = NULL;
    struct ckh_sim_result res;
    memset(&sc, 0, sizeof(sc));
    sc.seed = x->cfg->seed;
    sc.stack_bytes = CKH__X_STACK_BYTES;
    int rc = ckh_sim_create(&sc, &sim);
    if (rc)
        return rc;
    for (int i = 0; i < 2 && rc == 0; i++) {
        struct ckh_node_config nc = {.name = rk[i].node, .main = rank_main, .arg = &rk[i],
                                     .rank = -1};
        rc = ckh_sim_add_node(sim, &nc, NULL);
    }
    ckh_sim_set_sched_hook(sim, pick, s);
    r->sim = sim;
    if (rc == 0 && (rc = ckh_sim_run(sim, &res)) == 0 && res.outcome != CKH_SIM_DONE)
        rc = ckh_errf(x->msg, sizeof(x->msg), CKH_EINTERNAL,
                      "two ranks: the simulator stopped before both saves ended");
    r->sim = NULL;
    ckh_sim_destroy(sim);
    return rc;
}

/* Check: both saved, each loads its own data. -1, or the symptom kind
 * with its text in sym. */
static int check_ranks(struct ckh__xctx *x, struct ckh__xrun *r, const struct xrank *rk,
                       char *sym, size_t n)
{
    for (int i = 0; i < 2; i++) {
        if (rk[i].rc != 0) {
            snprintf(sym, n, "%s's save failed while %s saved concurrently: %s", rk[i].node,
                     rk[1 - i].node, ckh_err_name(rk[i].rc));
            return CKH_VULN_BASELINE_FAILS;
        }
    }
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int bad = -1;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(r->disk), NULL);
    if (x->ops->open(&c, &b) != 0)
        return -1;
    for (int i = 0; i < 2 && bad < 0; i++) {
        uint64_t dg = 0;
        char m[200];
        int lrc = ckh__explore_load_digest(b, rk[i].node, 2, &dg, m, sizeof(m));
        if (lrc || dg != x->d[i == 0 ? 1 : 3]) {
            snprintf(sym, n, "%s's epoch 2 %s", rk[i].node,
                     lrc ? "does not load" : "holds data it never saved");
            bad = lrc ? CKH_VULN_LISTED_REFUSED : CKH_VULN_CORRUPT_RETURNED;
        }
    }
    ckh_backend_close(b);
    return bad;
}

/* Diagnosis: a path created by both ranks makes the finding
 * SHARED_TEMP_NAME (step written); else kind stays. */
static int diagnose_ranks(const struct ckh__xrun *r, int kind, char *step, size_t sn)
{
    for (size_t i = 0; i < r->ntrace; i++) {
        const struct ckh__xop *a = &r->trace[i];
        if (a->rank != 0 || a->kind != CKH_OP_OPEN || !(a->flags & CKH_O_CREAT))
            continue;
        for (size_t j = 0; j < r->ntrace; j++) {
            const struct ckh__xop *o = &r->trace[j];
            if (o->rank == 1 && o->kind == CKH_OP_OPEN && (o->flags & CKH_O_CREAT) &&
                strcmp(o->path, a->path) == 0) {
                snprintf(step, sn, "rank0 op #%zu and rank1 op #%zu both create %s: a "
                         "temporary name must be unique per rank", i, j, a->path);
                return CKH_VULN_SHARED_TEMP_NAME;
            }
        }
    }
    return kind;
}

/* One schedule: split >= 0 "rank0 split ops, rank1 all, rank0 rest";
 * split < 0 alternate. */
static int two_ranks_once(struct ckh__xctx *x, long split, const char *sched)
{
    struct xrank rk[2];
    struct ckh__xrun r;
    struct xsched s = {split, 0, 1};
    char sym[320], step[512] = "";
    if (!ckh__explore_next_state(x))
        return 0; /* replaying another schedule */
    ckh__explore_run_init(&r);
    int rc = ckh__explore_disk_new(x, &r.disk);
    if (rc)
        return rc;
    r.record = true;
    memset(rk, 0, sizeof(rk));
    for (int i = 0; i < 2; i++) {
        rk[i].ops = x->ops;
        rk[i].node = i == 0 ? "rank0" : "rank1";
        rk[i].ws = x->v[i == 0 ? 1 : 3];
        ckh__explore_shim_init(&rk[i].shim, &r, i);
        rk[i].shim.phase = &rk[i].phase;
    }
    x->res->stats.interleavings++;
    if ((rc = run_schedule(x, &r, rk, &s)) != 0)
        goto out_disk;
    x->res->stats.states_checked++;
    const char *sname = ckh__explore_scen_names[CKH__SC_TWO_RANKS];
    for (int i = 0; i < 2 && rc == 0; i++)
        if ((rc = ckh__explore_bypassed(x, sname, r.trace, r.ntrace, i, rk[i].node)) > 0)
            goto out_disk; /* nothing of the saves was seen: nothing to judge */
    int bad = check_ranks(x, &r, rk, sym, sizeof(sym));
    if (bad >= 0) {
        bad = diagnose_ranks(&r, bad, step, sizeof(step));
        rc = ckh__explore_report(x, (enum ckh_vuln_kind)bad, sname, sym, sched, step, x->k);
    }
out_disk:
    ckh__explore_run_free_trace(&r);
    ckh_simfs_destroy(r.disk);
    return rc > 0 ? 0 : rc;
}

int ckh__explore_two_ranks(struct ckh__xctx *x)
{
    /* The length of rank0's solo save bounds the schedules. */
    struct ckh__xrun ref;
    int src;
    uint64_t send;
    char sched[128];
    ckh__explore_run_init(&ref);
    int rc = ckh__explore_disk_new(x, &ref.disk);
    if (rc)
        return rc;
    ref.record = true;
    ckh__explore_act(x, CKH__SC_TWO_RANKS, &ref, &src, &send);
    size_t n0 = ref.ntrace;
    ckh__explore_run_free_trace(&ref);
    ckh_simfs_destroy(ref.disk);
    snprintf(sched, sizeof(sched), "no crash; schedule: the ranks alternate op by op");
    if ((rc = two_ranks_once(x, -1, sched)) != 0)
        return rc;
    for (size_t s = 0; s <= n0 && rc == 0 && !ckh__explore_bounded(x); s++) {
        snprintf(sched, sizeof(sched), "no crash; schedule: rank0 issues %zu ops, rank1 its whole "
                 "save, then rank0 the rest", s);
        rc = two_ranks_once(x, (long)s, sched);
    }
    return rc;
}
