/* N ranks on node-local disks, crashed together (rule E9 of
 * harness/search/explore.c).
 *
 * Each rank "rank<i>" has a disk of its own with its epoch 1 committed.
 * The ranks run as nodes of a simulator (like E6) and each does what a
 * rank of a training job does at a checkpoint: open, save epoch 2 (its
 * own data), wait until every rank's save has returned, then, when every
 * save returned 0, retention removes its epoch 1 (backends with remove),
 * close. Two schedules order their ops: round robin op by op, and rank by
 * rank (each rank's save in turn). Every op of the action goes through one
 * shared counter, so "after k ops" is one point of the whole job.
 *
 * For every crash point k (as E2: after an op that can change a disk), the
 * action is replayed on fresh disks and killed at op k; then every node's
 * machine loses power at once. Each disk's pending ops are all applied or
 * all dropped, by these vectors: every disk applied; every disk dropped;
 * for each rank i, disk i dropped and the others applied, and disk i
 * applied and the others dropped. Each distinct combination of durable
 * trees is checked once, as a restarted job would: on every node, open and
 * list (RECOVERY_FAILS); only epochs 1 and 2 are listed (WRONG_EPOCH); the
 * latest loads bit-exact (LISTED_REFUSED, CORRUPT_RETURNED); once that
 * rank's save had returned 0 its latest is 2 (NOT_DURABLE). Then the job:
 * some epoch is listed on every node (NO_COMMON_EPOCH), and the newest such
 * loads bit-exact on every node; a next save of epoch 3 works on every node
 * (NEXT_SAVE_FAILS). A node-level finding is diagnosed by E5 on that rank's
 * own ops and disk.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/alloc.h"
#include "ckh/err.h"
#include "ckh/rng.h"
#include "ckh/sim.h"
#include "search/explore_internal.h"

#define NL_MAX CKH_EXPLORE_MAX_RANKS

/* What the ranks save: per rank, epochs 1 and 2. */
struct nl_data {
    int n;                          /* ranks */
    char scen[32];                  /* "node-local-<n>" */
    char names[NL_MAX][16];         /* "rank<i>" */
    struct ckh_ws *w[2][NL_MAX];    /* epoch 1 and epoch 2 data of each rank (owned) */
    uint64_t d[2][NL_MAX];          /* their digests */
    char **pre[NL_MAX];             /* files on each disk after setup (owned) */
    size_t npre[NL_MAX];            /* number of them */
};

/* A rank during one run of the action. */
struct nl_rank {
    struct ckh__xshim shim;  /* its fs: the recording shim over its own disk */
    struct ckh_simfs *disk;  /* its disk (owned) */
    int phase;               /* where it is (CKH__PH_*) */
    int save_rc;             /* its save's result */
    bool saved;              /* its save has returned */
    uint64_t save_end;       /* job ops issued when its save returned 0 (UINT64_MAX: not) */
    struct nl_job *job;      /* back pointer (borrowed) */
    int i;                   /* its index */
};

/* One run of the action on fresh disks. */
struct nl_job {
    struct ckh__xctx *x;        /* the exploration (borrowed) */
    const struct nl_data *data; /* what is saved (borrowed) */
    int sched;                  /* 0: round robin op by op; 1: rank by rank */
    struct ckh__xrun r;         /* shared counter, limit and trace (disk unused) */
    struct nl_rank rk[NL_MAX];  /* the ranks */
    int nsaved;                 /* saves that have returned */
    bool all_ok;                /* every returned save returned 0 */
    int last;                   /* the node picked last */
    struct ckh_sim *sim;        /* the simulator running the ranks */
};

static const char *const sched_names[2] = {"round robin, op by op", "rank by rank"};

/* ----------------------------------------------------------------- set-up */

/* Disk i with rank i's epoch 1 committed. 1 when the backend failed
 * (BASELINE_FAILS added), 0, or an internal error. */
static int nl_disk(struct ckh__xctx *x, const struct nl_data *dt, int i, struct ckh_simfs **out)
{
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    char sym[320];
    int rc = ckh__explore_disk_new(x, out);
    if (rc)
        return rc;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(*out), NULL);
    if ((rc = x->ops->open(&c, &b)) != 0) {
        snprintf(sym, sizeof(sym), "%s: open failed without faults: %s", dt->names[i],
                 ckh_err_name(rc));
    } else if ((rc = ckh_backend_save(b, dt->names[i], 1, dt->w[0][i], NULL, 0)) != 0) {
        snprintf(sym, sizeof(sym), "%s: save of epoch 1 failed without faults: %s: %s",
                 dt->names[i], ckh_err_name(rc), ckh_backend_errmsg(b));
    }
    ckh_backend_close(b);
    if (rc == 0) {
        ckh_simfs_sync_all(*out);
        return 0;
    }
    ckh_simfs_destroy(*out);
    *out = NULL;
    rc = ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, dt->scen, sym, "no crash",
                               "setup");
    return rc ? rc : 1;
}

static void nl_data_free(struct nl_data *dt)
{
    for (int i = 0; i < NL_MAX; i++) {
        ckh_ws_destroy(dt->w[0][i]);
        ckh_ws_destroy(dt->w[1][i]);
        ckh__explore_free_strv(dt->pre[i], dt->npre[i]);
    }
}

static int nl_data_init(struct ckh__xctx *x, int n, struct nl_data *dt)
{
    memset(dt, 0, sizeof(*dt));
    dt->n = n;
    snprintf(dt->scen, sizeof(dt->scen), "node-local-%d", n);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        snprintf(dt->names[i], sizeof(dt->names[i]), "rank%d", i);
        for (int e = 0; e < 2 && rc == 0; e++)
            if ((rc = ckh__explore_ws_for(x, 200 + 100 * (uint64_t)e + (uint64_t)i,
                                          &dt->w[e][i])) == 0)
                dt->d[e][i] = ckh_ws_digest(dt->w[e][i], NULL);
    }
    return rc;
}

/* ------------------------------------------------------------ the action */

/* The schedule hook (E9): round robin, or the lowest rank whose save has
 * not returned (then the lowest runnable). */
static int nl_pick(void *ctx, const int *runnable, size_t n)
{
    struct nl_job *j = ctx;
    int next = runnable[0];
    if (j->sched == 0) {
        for (size_t i = 0; i < n; i++)
            if (runnable[i] > j->last) {
                next = runnable[i];
                break;
            }
    } else {
        for (size_t i = 0; i < n; i++)
            if (!j->rk[runnable[i]].saved) {
                next = runnable[i];
                break;
            }
    }
    j->last = next;
    return next;
}

/* A rank's program: open, save epoch 2, wait for every save, retention,
 * close. */
static int nl_rank_main(struct ckh_env *env, void *arg)
{
    struct nl_rank *rk = arg;
    struct nl_job *j = rk->job;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    const char *node = j->data->names[rk->i];
    (void)env;
    ckh__explore_backend_cfg(&c, &rk->shim.base, NULL);
    rk->phase = CKH__PH_OPEN;
    rk->save_rc = j->x->ops->open(&c, &b);
    if (rk->save_rc == 0) {
        rk->phase = CKH__PH_SAVE;
        rk->save_rc = ckh_backend_save(b, node, 2, j->data->w[1][rk->i], NULL, 0);
        if (rk->save_rc == 0 && !j->r.killed)
            rk->save_end = j->r.nops;
    }
    rk->saved = true;
    j->nsaved++;
    j->all_ok &= rk->save_rc == 0;
    while (j->nsaved < j->data->n) /* the job's barrier: every rank has saved */
        ckh_sim_yield(j->sim);
    if (b && j->all_ok && j->x->ops->remove) {
        rk->phase = CKH__PH_RETENTION;
        ckh_backend_remove(b, node, 1);
    }
    rk->phase = CKH__PH_CLOSE;
    ckh_backend_close(b);
    return 0;
}

static void nl_job_free(struct nl_job *j)
{
    for (int i = 0; i < NL_MAX; i++)
        ckh_simfs_destroy(j->rk[i].disk);
    ckh__explore_run_free_trace(&j->r);
}

/* Runs the action of every rank on fresh set-up disks, killed at op
 * limit (UINT64_MAX: none), recording the trace when record. 1 when the
 * set-up failed (reported), 0, or an internal error. */
static int nl_run(struct ckh__xctx *x, const struct nl_data *dt, int sched, uint64_t limit,
                  bool record, struct nl_job *j)
{
    struct ckh_sim_config sc;
    struct ckh_sim_result res;
    memset(j, 0, sizeof(*j));
    j->x = x;
    j->data = dt;
    j->sched = sched;
    j->all_ok = true;
    j->last = -1;
    ckh__explore_run_init(&j->r);
    j->r.limit = limit;
    j->r.record = record;
    int rc = 0;
    for (int i = 0; i < dt->n && rc == 0; i++) {
        struct nl_rank *rk = &j->rk[i];
        if ((rc = nl_disk(x, dt, i, &rk->disk)) != 0)
            break;
        j->r.disk = rk->disk;
        ckh__explore_shim_init(&rk->shim, &j->r, i);
        rk->shim.phase = &rk->phase;
        rk->save_end = UINT64_MAX;
        rk->job = j;
        rk->i = i;
    }
    j->r.disk = NULL;
    if (rc)
        return rc;
    memset(&sc, 0, sizeof(sc));
    sc.seed = x->cfg->seed;
    sc.stack_bytes = CKH__X_STACK_BYTES;
    if ((rc = ckh_sim_create(&sc, &j->sim)) != 0)
        return rc;
    for (int i = 0; i < dt->n && rc == 0; i++) {
        struct ckh_node_config nc = {.name = dt->names[i], .main = nl_rank_main, .arg = &j->rk[i],
                                     .rank = -1};
        rc = ckh_sim_add_node(j->sim, &nc, NULL);
    }
    ckh_sim_set_sched_hook(j->sim, nl_pick, j);
    j->r.sim = j->sim;
    if (rc == 0 && (rc = ckh_sim_run(j->sim, &res)) == 0 && res.outcome != CKH_SIM_DONE)
        rc = ckh_errf(x->msg, sizeof(x->msg), CKH_EINTERNAL,
                      "%s: the simulator stopped before every rank ended", dt->scen);
    j->r.sim = NULL;
    ckh_sim_destroy(j->sim);
    j->sim = NULL;
    return rc;
}

/* --------------------------------------------------------------- checks */

/* One crash state: the crashed clone of every disk. */
struct nl_state {
    struct ckh_simfs *d[NL_MAX];        /* crashed clones (owned) */
    struct ckh__xpend *p[NL_MAX];       /* each disk's pending ops at the crash point (owned) */
    size_t np[NL_MAX];                  /* their numbers */
    enum ckh_crash_choice ch[NL_MAX];   /* what became of each disk's pending ops */
    uint64_t k;                         /* job ops before the crash */
};

static void nl_state_free(struct nl_state *s)
{
    for (int i = 0; i < NL_MAX; i++) {
        ckh_simfs_destroy(s->d[i]);
        ckh__explore_pend_free(s->p[i], s->np[i]);
    }
}

/* Vector v (E9) for disk i of n: apply or drop. False past the end. */
static bool nl_vector(size_t v, int n, int i, enum ckh_crash_choice *out)
{
    if (v >= 2 + 2 * (size_t)n)
        return false;
    bool drop = v == 1 || (v >= 2 && ((v - 2) % 2 == 0 ? (int)((v - 2) / 2) == i
                                                        : (int)((v - 2) / 2) != i));
    *out = drop ? CKH_CRASH_DROP : CKH_CRASH_APPLY;
    return true;
}

/* Clones every disk of j and crashes it by vector v. */
static int nl_crash(const struct nl_job *j, size_t v, struct nl_state *s)
{
    int rc = 0;
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < j->data->n && rc == 0; i++) {
        nl_vector(v, j->data->n, i, &s->ch[i]);
        if ((rc = ckh__explore_pend_copy(j->rk[i].disk, &s->p[i], &s->np[i])) != 0 ||
            (rc = ckh_simfs_clone(j->rk[i].disk, &s->d[i])) != 0)
            break;
        enum ckh_crash_choice *ch = calloc(s->np[i] ? s->np[i] : 1, sizeof(*ch));
        if (!ch)
            return CKH_ENOMEM;
        for (size_t q = 0; q < s->np[i]; q++)
            ch[q] = s->ch[i];
        rc = ckh_simfs_crash(s->d[i], -1, ch, s->np[i]);
        free(ch);
    }
    return rc;
}

/* A node's view after the crash: open, listed epochs. */
struct nl_view {
    struct ckh_backend *b; /* open instance (owned) */
    int64_t *ep;           /* listed epochs (owned, ckh_free) */
    size_t n;              /* their number */
};

static bool nl_lists(const struct nl_view *v, int64_t e)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->ep[i] == e)
            return true;
    return false;
}

/* Node i's checks; -1 or the kind with sym. */
static int nl_check_node(struct ckh__xctx *x, const struct nl_job *j, const struct nl_state *s,
                         int i, struct nl_view *v, char *sym, size_t n, int64_t *epoch)
{
    const char *node = j->data->names[i];
    struct ckh_backend_config c;
    char m[200];
    uint64_t dg = 0;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(s->d[i]), NULL);
    int rc = x->ops->open(&c, &v->b);
    if (rc) {
        v->b = NULL;
        snprintf(sym, n, "%s: open after the crash fails: %s", node, ckh_err_name(rc));
        return CKH_VULN_RECOVERY_FAILS;
    }
    if ((rc = ckh_backend_list_epochs(v->b, node, &v->ep, &v->n)) != 0) {
        snprintf(sym, n, "%s: list_epochs after the crash fails: %s: %s", node, ckh_err_name(rc),
                 ckh_backend_errmsg(v->b));
        return CKH_VULN_RECOVERY_FAILS;
    }
    for (size_t q = 0; q < v->n; q++)
        if (v->ep[q] != 1 && v->ep[q] != 2) {
            snprintf(sym, n, "%s: epoch %" PRId64 " is listed, never committed", node, v->ep[q]);
            *epoch = v->ep[q];
            return CKH_VULN_WRONG_EPOCH;
        }
    if (v->n == 0) {
        snprintf(sym, n, "%s: no epoch is listed after the crash (expected epoch 1 or 2)", node);
        return CKH_VULN_NO_CHECKPOINT;
    }
    int64_t latest = v->ep[v->n - 1];
    *epoch = latest;
    if (ckh__explore_load_digest(v->b, node, latest, &dg, m, sizeof(m)) != 0) {
        snprintf(sym, n, "%s: epoch %" PRId64 " is listed but its load fails: %s", node, latest, m);
        return CKH_VULN_LISTED_REFUSED;
    }
    if (dg != j->data->d[latest - 1][i]) {
        snprintf(sym, n, "%s: load of epoch %" PRId64 " returned data that was never saved", node,
                 latest);
        return CKH_VULN_CORRUPT_RETURNED;
    }
    if (j->rk[i].save_end <= s->k && latest != 2) {
        snprintf(sym, n, "%s: its save of epoch 2 returned 0, but recovery finds epoch 1", node);
        return CKH_VULN_NOT_DURABLE;
    }
    return -1;
}

/* "rank0: 1, 2; rank1: 1" into buf. */
static void nl_listing_text(const struct nl_job *j, const struct nl_view *v, char *buf, size_t bn)
{
    size_t w = 0;
    buf[0] = '\0';
    for (int i = 0; i < j->data->n && w < bn; i++) {
        w += (size_t)snprintf(buf + w, bn - w, "%s%s lists", i ? "; " : "", j->data->names[i]);
        for (size_t q = 0; q < v[i].n && w < bn; q++)
            w += (size_t)snprintf(buf + w, bn - w, "%s%" PRId64, q ? ", " : " ", v[i].ep[q]);
        if (v[i].n == 0 && w < bn)
            w += (size_t)snprintf(buf + w, bn - w, " nothing");
    }
}

/* The job's checks once every node passed its own: a common epoch that
 * loads everywhere, then a next save everywhere. *bad: the node concerned. */
static int nl_check_job(struct ckh__xctx *x, const struct nl_job *j, struct nl_view *v, char *sym,
                        size_t n, int *bad)
{
    char lt[200], m[200];
    int64_t common = -1;
    for (int64_t e = 2; e >= 1 && common < 0; e--) {
        bool all = true;
        for (int i = 0; i < j->data->n; i++)
            all &= nl_lists(&v[i], e);
        if (all)
            common = e;
    }
    if (common < 0) {
        nl_listing_text(j, v, lt, sizeof(lt));
        snprintf(sym, n, "no epoch is committed on every node: %s", lt);
        *bad = -1;
        return CKH_VULN_NO_COMMON_EPOCH;
    }
    for (int i = 0; i < j->data->n; i++) {
        uint64_t dg = 0;
        const char *node = j->data->names[i];
        *bad = i;
        if (ckh__explore_load_digest(v[i].b, node, common, &dg, m, sizeof(m)) != 0) {
            snprintf(sym, n, "%s: epoch %" PRId64 ", the newest on every node, does not load: %s",
                     node, common, m);
            return CKH_VULN_LISTED_REFUSED;
        }
        if (dg != j->data->d[common - 1][i]) {
            snprintf(sym, n, "%s: load of epoch %" PRId64 " returned data never saved", node,
                     common);
            return CKH_VULN_CORRUPT_RETURNED;
        }
    }
    for (int i = 0; i < j->data->n; i++) {
        uint64_t dg = 0;
        const char *node = j->data->names[i];
        *bad = i;
        int rc = ckh_backend_save(v[i].b, node, 3, x->v[2], NULL, 0);
        if (rc != 0 || ckh__explore_load_digest(v[i].b, node, 3, &dg, m, sizeof(m)) != 0 ||
            dg != x->d[2]) {
            snprintf(sym, n, "%s: the next save (epoch 3) %s", node,
                     rc ? "fails" : "does not load back");
            return CKH_VULN_NEXT_SAVE_FAILS;
        }
    }
    return -1;
}

/* Every check on state s: -1, or the kind with sym; *bad the node (-1:
 * the job), *epoch the epoch concerned. */
static int nl_check(struct ckh__xctx *x, const struct nl_job *j, const struct nl_state *s,
                    char *sym, size_t n, int *bad, int64_t *epoch)
{
    struct nl_view v[NL_MAX];
    int kind = -1;
    memset(v, 0, sizeof(v));
    *epoch = -1;
    for (int i = 0; i < j->data->n && kind < 0; i++) {
        *bad = i;
        kind = nl_check_node(x, j, s, i, &v[i], sym, n, epoch);
    }
    if (kind < 0)
        kind = nl_check_job(x, j, v, sym, n, bad);
    for (int i = 0; i < j->data->n; i++) {
        ckh_free(NULL, v[i].ep);
        ckh_backend_close(v[i].b);
    }
    return kind;
}

/* ------------------------------------------------------------ diagnosis */

/* E5 on node i alone: its ops (numbered among its own), its disk. */
static int nl_diagnose_node(struct ckh__xctx *x, const struct nl_job *ref,
                            const struct nl_data *dt, const struct nl_state *s, int i, int kind,
                            int64_t epoch, char *step, size_t sn)
{
    struct ckh__xop *sub = calloc(ref->r.ntrace ? ref->r.ntrace : 1, sizeof(*sub));
    enum ckh_crash_choice *ch = calloc(s->np[i] ? s->np[i] : 1, sizeof(*ch));
    size_t nsub = 0, ki = 0;
    char inner[512] = "";
    if (!sub || !ch) {
        free(sub);
        free(ch);
        return kind;
    }
    for (size_t q = 0; q < ref->r.ntrace; q++) {
        if (ref->r.trace[q].rank != i)
            continue;
        if (q < s->k)
            ki++;
        sub[nsub++] = ref->r.trace[q]; /* shallow: the strings stay the trace's */
    }
    for (size_t q = 0; q < s->np[i]; q++)
        ch[q] = s->ch[i];
    struct ckh__xcrash c = {sub, ki, nsub, s->p[i], ch, s->np[i],
                            ref->rk[i].save_end <= s->k, dt->names[i]};
    char **pre = x->pre;
    size_t npre = x->npre;
    x->pre = dt->pre[i];
    x->npre = dt->npre[i];
    kind = ckh__explore_diagnose(x, &c, kind, epoch, inner, sizeof(inner));
    x->pre = pre;
    x->npre = npre;
    snprintf(step, sn, "%s (op numbers count %s's own ops): %s", dt->names[i], dt->names[i],
             inner);
    free(sub);
    free(ch);
    return kind;
}

/* NO_COMMON_EPOCH: the first op of a save that deleted a file present
 * after set-up, while another rank had not committed the new epoch. */
static void nl_diagnose_job(const struct nl_job *ref, const struct nl_data *dt,
                            const struct nl_state *s, char *step, size_t sn)
{
    char od[400];
    for (size_t q = 0; q < s->k && q < ref->r.ntrace; q++) {
        const struct ckh__xop *o = &ref->r.trace[q];
        bool was_pre = false;
        for (size_t f = 0; f < dt->npre[o->rank] && !was_pre; f++)
            was_pre = strcmp(dt->pre[o->rank][f], o->path) == 0;
        if ((o->kind != CKH_OP_UNLINK && o->kind != CKH_OP_RMDIR) || !was_pre)
            continue;
        ckh__explore_op_desc(o, od, sizeof(od));
        snprintf(step, sn, "job op #%zu %s (%s, %s phase) deleted the rank's committed epoch 1 "
                 "before every rank had committed epoch 2: with node-local disks a rank may "
                 "drop an epoch only once the job as a whole has committed a newer one",
                 q, od, dt->names[o->rank], ckh__explore_phase_names[o->phase]);
        return;
    }
    snprintf(step, sn, "the ranks' checkpoints diverged (no deletion found)");
}

/* The state's description: crash point, schedule, saves, each disk. */
static void nl_state_desc(const struct nl_job *ref, const struct nl_data *dt,
                          const struct nl_state *s, char *buf, size_t bn)
{
    char od[400];
    size_t w;
    if (s->k > 0) {
        const struct ckh__xop *o = &ref->r.trace[s->k - 1];
        ckh__explore_op_desc(o, od, sizeof(od));
        w = (size_t)snprintf(buf, bn, "power loss of all %d nodes after %" PRIu64 " of %zu job "
                             "ops (schedule: %s; last: %s %s)", dt->n, s->k, ref->r.ntrace,
                             sched_names[ref->sched], dt->names[o->rank], od);
    } else {
        w = (size_t)snprintf(buf, bn, "power loss of all %d nodes before the first op "
                             "(schedule: %s)", dt->n, sched_names[ref->sched]);
    }
    for (int i = 0; i < dt->n && w < bn; i++)
        w += (size_t)snprintf(buf + w, bn - w, "; %s: save %s, %zu pending op%s %s", dt->names[i],
                              ref->rk[i].save_end <= s->k ? "had returned 0" : "not returned",
                              s->np[i], s->np[i] == 1 ? "" : "s",
                              s->ch[i] == CKH_CRASH_DROP ? "DROPPED" : "persisted");
}

/* ------------------------------------------------------------ exploration */

/* Checks the crash states of crash point k (the action replayed and
 * killed at op k). */
static int nl_point(struct ckh__xctx *x, const struct nl_data *dt, const struct nl_job *ref,
                    uint64_t k, uint64_t *seen_digests, size_t *nseen)
{
    size_t nvec = 2 + 2 * (size_t)dt->n;
    if (x->cfg->only_state && (x->cfg->only_state <= x->k || x->cfg->only_state > x->k + nvec)) {
        x->k += nvec; /* replaying a state of another crash point */
        x->res->stats.states += nvec;
        return 0;
    }
    struct nl_job j;
    int rc = nl_run(x, dt, ref->sched, k, false, &j);
    for (size_t v = 0; v < nvec && rc == 0 && !ckh__explore_bounded(x); v++) {
        struct nl_state s;
        char sym[320], step[512] = "", state[1024];
        int bad = -1;
        int64_t epoch = -1;
        if (!ckh__explore_next_state(x))
            continue;
        uint64_t kstate = x->k;
        if ((rc = nl_crash(&j, v, &s)) != 0) {
            nl_state_free(&s);
            break;
        }
        s.k = k;
        uint64_t h = 0;
        for (int i = 0; i < dt->n; i++)
            h = ckh_mix64(h ^ ckh_simfs_digest(s.d[i], true)) + (uint64_t)i;
        bool fresh = true;
        for (size_t q = 0; q < *nseen && fresh; q++)
            fresh = seen_digests[q] != h;
        if (!fresh && !x->cfg->only_state) {
            nl_state_free(&s);
            continue;
        }
        if (fresh && *nseen < 4096)
            seen_digests[(*nseen)++] = h;
        x->res->stats.states_checked++;
        int kind = nl_check(x, ref, &s, sym, sizeof(sym), &bad, &epoch);
        if (kind >= 0) {
            if (bad >= 0 && kind != CKH_VULN_NEXT_SAVE_FAILS)
                kind = nl_diagnose_node(x, ref, dt, &s, bad, kind, epoch, step, sizeof(step));
            else if (kind == CKH_VULN_NO_COMMON_EPOCH)
                nl_diagnose_job(ref, dt, &s, step, sizeof(step));
            nl_state_desc(ref, dt, &s, state, sizeof(state));
            rc = ckh__explore_report(x, (enum ckh_vuln_kind)kind, dt->scen, sym, state, step,
                                     kstate);
        }
        nl_state_free(&s);
    }
    nl_job_free(&j);
    return rc > 0 ? 0 : rc;
}

/* One schedule: the reference run, then every crash point. */
static int nl_schedule(struct ckh__xctx *x, const struct nl_data *dt, int sched,
                       uint64_t *seen, size_t *nseen)
{
    struct nl_job ref;
    int rc = nl_run(x, dt, sched, UINT64_MAX, true, &ref);
    if (rc)
        goto out;
    x->res->stats.trace_ops += ref.r.ntrace;
    for (int i = 0; i < dt->n && rc == 0; i++) {
        if ((rc = ckh__explore_bypassed(x, dt->scen, ref.r.trace, ref.r.ntrace, i,
                                        dt->names[i])) != 0)
            goto out;
        if (ref.rk[i].save_rc != 0) {
            char sym[320];
            snprintf(sym, sizeof(sym), "%s's save failed without faults while %d ranks saved "
                     "on their own disks: %s", dt->names[i], dt->n, ckh_err_name(ref.rk[i].save_rc));
            rc = ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, dt->scen, sym, "no crash",
                                       "save");
            goto out;
        }
    }
    for (uint64_t k = 0; k <= ref.r.ntrace && rc == 0 && !ckh__explore_bounded(x); k++) {
        if (k > 0 && !ckh__explore_op_changes(&ref.r.trace[k - 1]))
            continue;
        x->res->stats.prefixes++;
        rc = nl_point(x, dt, &ref, k, seen, nseen);
    }
out:
    nl_job_free(&ref);
    return rc > 0 ? 0 : rc;
}

/* E9 with n ranks. */
static int nl_explore(struct ckh__xctx *x, int n)
{
    struct nl_data dt;
    uint64_t *seen = calloc(4096, sizeof(*seen));
    size_t nseen = 0;
    int rc = seen ? nl_data_init(x, n, &dt) : CKH_ENOMEM;
    if (!seen)
        return rc;
    for (int i = 0; i < n && rc == 0; i++) {
        struct ckh_simfs *d = NULL;
        if ((rc = nl_disk(x, &dt, i, &d)) != 0)
            break;
        rc = ckh__explore_collect_files(ckh_simfs_fs(d), CKH__X_PREFIX, &dt.pre[i], &dt.npre[i]);
        ckh_simfs_destroy(d);
    }
    for (int sched = 0; sched < 2 && rc == 0; sched++)
        rc = nl_schedule(x, &dt, sched, seen, &nseen);
    nl_data_free(&dt);
    free(seen);
    return rc > 0 ? 0 : rc;
}

int ckh__explore_node_local(struct ckh__xctx *x)
{
    if (x->cfg->ranks)
        return nl_explore(x, (int)x->cfg->ranks);
    int rc = nl_explore(x, 2);
    return rc ? rc : nl_explore(x, 4);
}
