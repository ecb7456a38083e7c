/* The crash explorer's enumeration of crash states (rules E2 and E3 of
 * harness/search/explore.c): the traced action runs once with a snapshot
 * at every crash point, a replay checks that it is deterministic, and each
 * snapshot's pending operations are resolved by every choice vector; each
 * distinct durable state (by digest) is checked once and diagnosed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "search/explore_internal.h"

bool ckh__explore_seen_insert(struct ckh__xseen *s, uint64_t dg)
{
    if (dg == 0)
        dg = 1;
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *v = calloc(cap, sizeof(*v));
        if (!v)
            return true;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->v[i])
                continue;
            size_t j = s->v[i] & (cap - 1);
            while (v[j])
                j = (j + 1) & (cap - 1);
            v[j] = s->v[i];
        }
        free(s->v);
        s->v = v;
        s->cap = cap;
    }
    size_t j = dg & (s->cap - 1);
    while (s->v[j]) {
        if (s->v[j] == dg)
            return false;
        j = (j + 1) & (s->cap - 1);
    }
    s->v[j] = dg;
    s->n++;
    CKH_ASSERT(s->n * 2 <= s->cap && (s->cap & (s->cap - 1)) == 0); /* half full at most: probes end */
    return true;
}

bool ckh__explore_vector(size_t v, const struct ckh__xpend *p, size_t n, enum ckh_crash_choice *ch)
{
    CKH_ASSERT(ch && (n == 0 || p));
    size_t i;
    for (i = 0; i < n; i++)
        ch[i] = CKH_CRASH_APPLY;
    if (v == 0)
        return true;
    if (n == 0)
        return false;
    if (v == 1) {
        for (i = 0; i < n; i++)
            ch[i] = CKH_CRASH_DROP;
        return true;
    }
    v -= 2;
    if (v < n) {
        ch[v] = CKH_CRASH_DROP;
        return true;
    }
    v -= n;
    if (v + 1 < n) {
        for (i = v + 1; i < n; i++)
            ch[i] = CKH_CRASH_DROP;
        return true;
    }
    v -= n > 0 ? n - 1 : 0;
    for (i = 0; i < n; i++) {
        if (p[i].sectors == 0 || (p[i].kind != CKH_OP_PWRITE && p[i].kind != CKH_OP_WRITE))
            continue;
        if (v < 2) {
            ch[i] = v == 0 ? CKH_CRASH_TORN_ZERO : CKH_CRASH_TORN_GARBAGE;
            return true;
        }
        v -= 2;
    }
    return false;
}

void ckh__explore_pend_free(struct ckh__xpend *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].path);
        free(p[i].path2);
    }
    free(p);
}

int ckh__explore_pend_copy(struct ckh_simfs *d, struct ckh__xpend **out, size_t *nout)
{
    return ckh__explore_pend_copy_node(d, -1, out, nout);
}

int ckh__explore_pend_copy_node(struct ckh_simfs *d, int node, struct ckh__xpend **out, size_t *nout)
{
    size_t n = ckh_simfs_pending_count(d), k = 0;
    struct ckh__xpend *p = calloc(n ? n : 1, sizeof(*p));
    if (!p)
        return CKH_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct ckh_simfs_pending_info pi;
        int rc = ckh_simfs_pending_get(d, i, &pi);
        if (rc) {
            ckh__explore_pend_free(p, k);
            return rc;
        }
        if (node >= 0 && pi.node != node)
            continue;
        p[k].kind = pi.kind;
        p[k].path = strdup(pi.path ? pi.path : "");
        p[k].path2 = pi.path2 ? strdup(pi.path2) : NULL;
        p[k].off = pi.off;
        p[k].len = pi.len;
        p[k].sectors = pi.sectors;
        k++;
        if (!p[k - 1].path || (pi.path2 && !p[k - 1].path2)) {
            ckh__explore_pend_free(p, k);
            return CKH_ENOMEM;
        }
    }
    *out = p;
    *nout = k;
    return 0;
}

/* Replays the whole action on a fresh setup disk and reports whether it
 * issued the recorded op kinds (E2's determinism check). */
static int replay_same(struct ckh__xctx *x, int scen, const struct ckh__xrun *ref, bool *same)
{
    struct ckh__xrun r;
    int src;
    uint64_t send;
    ckh__explore_run_init(&r);
    int rc = ckh__explore_setup(x, scen, &r.disk);
    if (rc)
        return rc;
    r.ref = ref->trace;
    r.nref = ref->ntrace;
    ckh__explore_act(x, scen, &r, &src, &send);
    *same = !r.diverged && r.nops == ref->ntrace;
    ckh_simfs_destroy(r.disk);
    return 0;
}

/* E3 on one crash point: every choice vector resolves a clone of sn. */
static int explore_point(struct ckh__xctx *x, int scen, const struct ckh__xrun *ref, const struct ckh__xsnap *sn,
                         uint64_t save_end)
{
    const char *sname = ckh__explore_scen_names[scen];
    char sym[320] = "", state[1024] = "", step[512] = ""; /* a check or diagnosis cut short by memory says nothing */
    size_t k = (size_t)sn->k, total = ref->ntrace;
    bool returned = k >= save_end;
    struct ckh__xpend *p = NULL;
    size_t n = 0;
    int rc = ckh__explore_pend_copy(sn->disk, &p, &n);
    if (rc)
        return rc;
    enum ckh_crash_choice *ch = calloc(n ? n : 1, sizeof(*ch));
    if (!ch) {
        ckh__explore_pend_free(p, n);
        return CKH_ENOMEM;
    }
    for (size_t v = 0; ckh__explore_vector(v, p, n, ch) && !ckh__explore_bounded(x); v++) {
        struct ckh_simfs *d;
        if (!ckh__explore_next_state(x))
            continue; /* replaying another state */
        uint64_t k_state = x->k;
        if ((rc = ckh_simfs_clone(sn->disk, &d)) != 0)
            break;
        int crc = ckh_simfs_crash(d, -1, ch, n);
        if (crc != 0 || (!x->cfg->only_state && !ckh__explore_seen_insert(&x->seen, ckh_simfs_digest(d, true)))) {
            ckh_simfs_destroy(d);
            continue;
        }
        x->res->stats.states_checked++;
        /* every distinct digest is checked once: the set never outgrows the checks */
        CKH_ASSERT(x->seen.n <= x->res->stats.states_checked && x->k == k_state);
        int64_t epoch;
        int kind = scen == CKH__SC_RETENTION
                       ? ckh__explore_check_retention(x, d, returned, sym, sizeof(sym), &epoch)
                       : ckh__explore_check_state(x, scen, d, returned, sym, sizeof(sym), &epoch);
        ckh_simfs_destroy(d);
        if (kind < 0)
            continue;
        struct ckh__xcrash c = {ref->trace, k, total, p, ch, n, returned, "rank0"};
        kind = ckh__explore_diagnose(x, &c, kind, epoch, step, sizeof(step));
        ckh__explore_state_desc(&c, state, sizeof(state));
        if ((rc = ckh__explore_report(x, (enum ckh_vuln_kind)kind, sname, sym, state, step,
                                      k_state)) != 0)
            break;
    }
    free(ch);
    ckh__explore_pend_free(p, n);
    return rc;
}

int ckh__explore_scenario(struct ckh__xctx *x, int scen)
{
    struct ckh__xrun ref;
    int save_rc;
    uint64_t save_end;
    const char *sname = ckh__explore_scen_names[scen];
    char sym[320];
    bool same = true;
    ckh__explore_run_init(&ref);
    int rc = ckh__explore_setup(x, scen, &ref.disk);
    if (rc) {
        if (ref.disk == NULL && x->msg[0])
            return ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, sname, x->msg, "no crash", "setup");
        return rc;
    }
    if ((rc = ckh__explore_collect_files(ckh_simfs_fs(ref.disk), CKH__X_PREFIX, &x->pre, &x->npre)) != 0)
        goto out_ref;
    ref.record = true;
    ref.snapshot = true;
    ckh__explore_act(x, scen, &ref, &save_rc, &save_end);
    if (ref.snap_err == 0)
        ckh__explore_snap_take(&ref, ref.ntrace); /* the end of the trace is always a crash point */
    if ((rc = ref.snap_err) != 0)
        goto out_ref;
    x->res->stats.trace_ops += ref.ntrace;
    if (save_rc != 0) {
        snprintf(sym, sizeof(sym), "save failed without faults: %s", ckh_err_name(save_rc));
        rc = ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, sname, sym, "no crash", "save");
        goto out_ref;
    }
    if ((rc = ckh__explore_bypassed(x, sname, ref.trace, ref.ntrace, 0, "rank0")) != 0) {
        rc = rc > 0 ? 0 : rc;
        goto out_ref;
    }
    if ((rc = replay_same(x, scen, &ref, &same)) != 0)
        goto out_ref;
    if (!same) {
        rc = ckh__explore_vuln_add(x->res, CKH_VULN_NONDETERMINISTIC, sname,
                      "a replay of the save issued different operations", "no crash",
                      "the backend depends on something other than its inputs");
        goto out_ref;
    }
    for (size_t i = 0; i < ref.nsnaps && rc == 0 && !ckh__explore_bounded(x); i++) {
        /* crash points in trace order, the last one the end of the trace */
        CKH_ASSERT(ref.snaps[i].k <= ref.ntrace && (i == 0 || ref.snaps[i - 1].k < ref.snaps[i].k));
        x->res->stats.prefixes++;
        rc = explore_point(x, scen, &ref, &ref.snaps[i], save_end);
        ckh_simfs_destroy(ref.snaps[i].disk); /* done with it: keep memory flat */
        ref.snaps[i].disk = NULL;
    }
out_ref:
    ckh__explore_free_strv(x->pre, x->npre);
    x->pre = NULL;
    x->npre = 0;
    ckh__explore_run_free_snaps(&ref);
    ckh__explore_run_free_trace(&ref);
    ckh_simfs_destroy(ref.disk);
    return rc;
}
