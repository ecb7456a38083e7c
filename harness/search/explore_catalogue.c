/* The fault catalogue for checkpoint backends (rule E7 of
 * harness/search/explore.c): on the new-epoch scenario, each op of the
 * save fails once with an errno (ERRNO) or loses its fsync'd data
 * (FSYNC), or each write of it is short (SHORT_WRITE); committed files
 * are damaged at rest (AT_REST); a counting allocator checks that a
 * clean cycle frees everything (LEAK).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/alloc.h"
#include "ckh/err.h"
#include "ckh/op.h"
#include "search/explore_internal.h"

/* Counting allocator (LEAK family). */
struct xalloc {
    struct ckh_alloc base; /* must be first */
    int64_t live;          /* blocks not freed */
};

static void *xa_malloc(struct ckh_alloc *a, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p)
        ((struct xalloc *)a)->live++;
    return p;
}

static void *xa_realloc(struct ckh_alloc *a, void *ptr, size_t n)
{
    void *p = realloc(ptr, n ? n : 1);
    if (p && !ptr)
        ((struct xalloc *)a)->live++;
    return p;
}

static void xa_free(struct ckh_alloc *a, void *ptr)
{
    if (ptr)
        ((struct xalloc *)a)->live--;
    free(ptr);
}

static const struct ckh_alloc_ops xa_ops = {1, xa_malloc, xa_realloc, xa_free};

int ckh__explore_faults_leak(struct ckh__xctx *x)
{
    struct xalloc a = {{&xa_ops}, 0};
    struct ckh_simfs *d;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL;
    size_t cnt = 0;
    uint64_t dg;
    char sym[320];
    if (!ckh__explore_next_state(x))
        return 0; /* replaying another state */
    x->res->stats.states_checked++;
    int rc = ckh__explore_disk_new(x, &d);
    if (rc)
        return rc;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), &a.base);
    if (x->ops->open(&c, &b) == 0) {
        ckh_backend_save(b, "rank0", 1, x->v[0], NULL, 0);
        ckh_backend_save(b, "rank0", 2, x->v[1], NULL, 0);
        if (ckh_backend_list_epochs(b, "rank0", &ep, &cnt) == 0)
            ckh_free(&a.base, ep);
        ckh__explore_load_digest(b, "rank0", 2, &dg, NULL, 0);
        ckh__explore_load_digest(b, "rank0", 7, &dg, NULL, 0); /* a refused load frees too */
        if (x->ops->remove)
            ckh_backend_remove(b, "rank0", 1);
        ckh_backend_close(b);
    }
    if (a.live != 0) {
        snprintf(sym, sizeof(sym), "%" PRId64 " blocks from the config's allocator are not freed "
                 "after open, save x2, list_epochs, load, refused load, remove, close", a.live);
        rc = ckh__explore_report(x, CKH_VULN_LEAK, "leak", sym, "no crash", "", x->k);
    }
    ckh_simfs_destroy(d);
    return rc;
}

/* Checks the outcome of a faulted action on disk d (E7). */
static int fault_outcome(struct ckh__xctx *x, const char *sname, struct ckh_simfs *d, int save_rc,
                         const char *what, const char *state)
{
    char sym[320], m[200];
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL;
    size_t cnt = 0;
    uint64_t dg = 0;
    int kind = -1;
    if (save_rc == 0) {
        enum ckh_crash_choice *ch;
        size_t n = ckh_simfs_pending_count(d);
        ch = calloc(n ? n : 1, sizeof(*ch));
        if (!ch)
            return CKH_ENOMEM;
        for (size_t i = 0; i < n; i++)
            ch[i] = CKH_CRASH_DROP;
        ckh_simfs_crash(d, -1, ch, n);
        free(ch);
    }
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), NULL);
    if (x->ops->open(&c, &b) != 0) {
        snprintf(sym, sizeof(sym), "open fails after %s", what);
        kind = CKH_VULN_FAULT_DAMAGE;
        goto out;
    }
    int rc = ckh_backend_list_epochs(b, "rank0", &ep, &cnt);
    int64_t latest = rc == 0 && cnt ? ep[cnt - 1] : -1;
    ckh_free(NULL, ep);
    if (latest >= 0)
        rc = ckh__explore_load_digest(b, "rank0", latest, &dg, m, sizeof(m));
    bool is_new = latest == 2 && rc == 0 && dg == x->d[1];
    bool is_old = latest == 1 && rc == 0 && dg == x->d[0];
    if (save_rc == 0 && !is_new) {
        snprintf(sym, sizeof(sym), "%s, yet the save returned 0; after a power loss epoch 2 %s",
                 what, latest == 2 ? "does not load back" : "is gone");
        kind = CKH_VULN_ERROR_SWALLOWED;
    } else if (save_rc != 0 && !is_new && !is_old) {
        snprintf(sym, sizeof(sym), "%s; the save failed (%s) and left no loadable checkpoint "
                 "(latest listed %" PRId64 ")", what, ckh_err_name(save_rc), latest);
        kind = CKH_VULN_FAULT_DAMAGE;
    } else if ((rc = ckh_backend_save(b, "rank0", 3, x->v[2], NULL, 0)) != 0 ||
               ckh__explore_load_digest(b, "rank0", 3, &dg, m, sizeof(m)) != 0 || dg != x->d[2]) {
        snprintf(sym, sizeof(sym), "%s; afterwards the next save (epoch 3) %s", what,
                 rc ? "fails" : "does not load back");
        kind = CKH_VULN_NEXT_SAVE_FAILS;
    }
    ckh_backend_close(b);
out:
    if (kind < 0)
        return 0;
    return ckh__explore_report(x, (enum ckh_vuln_kind)kind, sname, sym, state, what, x->k);
}

/* The fault-free save of a new epoch, recorded: its ops are where the
 * catalogue's faults go. 0 to go on; 1 when the case ends here (a
 * baseline that fails, recorded as a finding); a negative code on error.
 * A save that bypasses cfg->fs has no op to fail, which is the finding,
 * and *nops is then 0. */
static int reference_save(struct ckh__xctx *x, const char *sname, struct ckh__xrun *ref, int *save_rc,
                          uint64_t *save_end, size_t *nops)
{
    ckh__explore_run_init(ref);
    int rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &ref->disk);
    if (rc && !x->msg[0])
        return rc < 0 ? rc : CKH_EINTERNAL;
    if (rc) {
        rc = ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, sname, x->msg, "", "");
        return rc < 0 ? rc : 1;
    }
    ref->record = true;
    ckh__explore_act(x, CKH__SC_NEW_EPOCH, ref, save_rc, save_end);
    *nops = ref->ntrace;
    if (ckh__explore_bypassed(x, sname, ref->trace, ref->ntrace, 0, "rank0") > 0)
        *nops = 0;
    return 0;
}

int ckh__explore_faults_inject(struct ckh__xctx *x, enum ckh_fault_family fam, int err)
{
    struct ckh__xrun ref;
    int save_rc;
    uint64_t save_end;
    char sname[48], what[512], od[400];
    snprintf(sname, sizeof(sname), "fault:%s", fam == CKH_FAULTS_FSYNC ? "fsync-lost"
                                                                        : ckh_err_name(-err));
    size_t nops = 0;
    int rc = reference_save(x, sname, &ref, &save_rc, &save_end, &nops);
    if (rc)
        return rc < 0 ? rc : 0;
    for (size_t i = 0; i < nops && rc == 0 && !ckh__explore_bounded(x); i++) {
        const struct ckh__xop *o = &ref.trace[i];
        bool pick = fam == CKH_FAULTS_FSYNC
                        ? (o->kind == CKH_OP_FSYNC || o->kind == CKH_OP_FDATASYNC)
                        : (ckh__explore_op_changes(o) || o->kind == CKH_OP_OPEN);
        if (!pick || o->phase == CKH__PH_CLOSE || !ckh__explore_next_state(x))
            continue;
        struct ckh__xrun r;
        ckh__explore_run_init(&r);
        if ((rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &r.disk)) != 0)
            break;
        r.fail_at = i;
        r.fail_err = err;
        r.fsync_lost = fam == CKH_FAULTS_FSYNC;
        ckh__explore_act(x, CKH__SC_NEW_EPOCH, &r, &save_rc, &save_end);
        x->res->stats.states_checked++;
        ckh__explore_op_desc(o, od, sizeof(od));
        snprintf(what, sizeof(what), "op #%zu %s (%s phase) failed with %s%s", i, od,
                 ckh__explore_phase_names[o->phase], fam == CKH_FAULTS_FSYNC ? "EIO" : ckh_err_name(-err),
                 fam == CKH_FAULTS_FSYNC ? " after losing the file's dirty data" : "");
        rc = fault_outcome(x, sname, r.disk, save_rc, what,
                           save_rc == 0 ? "save returned 0, then a power loss dropped every "
                                          "pending op" : "save failed; no crash");
        ckh_simfs_destroy(r.disk);
    }
    ckh__explore_run_free_trace(&ref);
    ckh_simfs_destroy(ref.disk);
    return rc;
}

/* One AT_REST case: file f (s bytes) of a fresh setup disk gets a bit
 * flip at byte `at`, or with trunc a truncation to `at` bytes; loading
 * epoch 1 must fail or return v1 exactly. */
static int at_rest_case(struct ckh__xctx *x, const char *f, uint64_t s, uint64_t at, bool trunc)
{
    struct ckh_simfs *d = NULL;
    char sym[320], state[600];
    if (!ckh__explore_next_state(x))
        return 0; /* replaying another state */
    int rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &d);
    if (rc)
        return rc;
    if (trunc) {
        ckh_simfs_truncate_at_rest(d, f, at);
        snprintf(state, sizeof(state), "%s (%" PRIu64 " bytes) truncated at rest to %" PRIu64
                 " bytes", f, s, at);
    } else {
        ckh_simfs_flip_bit(d, f, at * 8 + 3);
        snprintf(state, sizeof(state), "bit 3 of byte %" PRIu64 " of %s (%" PRIu64
                 " bytes) flipped at rest", at, f, s);
    }
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), NULL);
    x->res->stats.states_checked++;
    if (x->ops->open(&c, &b) == 0) {
        uint64_t dg = 0;
        if (ckh__explore_load_digest(b, "rank0", 1, &dg, NULL, 0) == 0 && dg != x->d[0]) {
            snprintf(sym, sizeof(sym), "load of epoch 1 returned 0 with data that was never "
                     "saved");
            rc = ckh__explore_report(x, CKH_VULN_AT_REST_ACCEPTED,
                                     trunc ? "at-rest:truncate" : "at-rest:bitflip", sym, state,
                                     "load must verify checksums and lengths before "
                                     "returning data", x->k);
        }
        ckh_backend_close(b);
    }
    ckh_simfs_destroy(d);
    return rc;
}

int ckh__explore_faults_at_rest(struct ckh__xctx *x)
{
    struct ckh_simfs *d = NULL;
    char **files = NULL;
    size_t nf = 0;
    int rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &d);
    if (rc)
        return !x->msg[0] ? rc
                          : ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, "at-rest",
                                                  x->msg, "", "");
    rc = ckh__explore_collect_files(ckh_simfs_fs(d), CKH__X_PREFIX, &files, &nf);
    ckh_simfs_destroy(d);
    for (size_t f = 0; f < nf && rc == 0; f++) {
        struct ckh_stat st;
        if ((rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &d)) != 0)
            break;
        rc = ckh_fs_stat(ckh_simfs_fs(d), files[f], &st);
        ckh_simfs_destroy(d);
        if (rc || st.size_bytes == 0) {
            rc = 0;
            continue;
        }
        uint64_t s = st.size_bytes;
        uint64_t at[8] = {0, s / 4, s / 2, 3 * s / 4, s - 1, 0, s / 2, s - 1};
        for (int j = 0; j < 8 && rc == 0; j++) {
            if (j == 7 && s < 2)
                continue;
            rc = at_rest_case(x, files[f], s, at[j], j >= 5);
        }
    }
    ckh__explore_free_strv(files, nf);
    return rc;
}

/* SHORT_WRITE, before the crash: what the faulted save left must be a
 * checkpoint that loads whole. A save that returned 0 must list epoch 2
 * and load v2; one that failed must leave its latest listed epoch loading
 * bit-exact (v1, or a complete v2). -1, or SHORT_WRITE with sym. */
static int short_outcome(struct ckh__xctx *x, struct ckh_simfs *d, int save_rc, char *sym,
                         size_t n)
{
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL;
    size_t cnt = 0;
    uint64_t dg = 0;
    char m[200] = "";
    int kind = -1;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), NULL);
    if (x->ops->open(&c, &b) != 0)
        return -1; /* fault_outcome reports it */
    int rc = ckh_backend_list_epochs(b, "rank0", &ep, &cnt);
    int64_t latest = rc == 0 && cnt ? ep[cnt - 1] : -1;
    ckh_free(NULL, ep);
    if (latest == 1 || latest == 2)
        rc = ckh__explore_load_digest(b, "rank0", latest, &dg, m, sizeof(m));
    uint64_t want = latest == 2 ? x->d[1] : x->d[0];
    if (save_rc == 0 && latest != 2) {
        snprintf(sym, n, "the save returned 0, yet epoch 2 is not listed (latest %" PRId64 ")",
                 latest);
        kind = CKH_VULN_SHORT_WRITE;
    } else if ((latest == 1 || latest == 2) && (rc != 0 || dg != want)) {
        snprintf(sym, n, "the save %s, and epoch %" PRId64 " is listed but %s", save_rc == 0
                 ? "returned 0" : "failed", latest, rc ? m : "returns data that was never saved "
                 "(the checkpoint holds a truncated write)");
        kind = CKH_VULN_SHORT_WRITE;
    }
    ckh_backend_close(b);
    return kind;
}

/* One short write: op i of the save (a write of len >= 2) accepts half. */
static int short_case(struct ckh__xctx *x, const struct ckh__xop *o, size_t i)
{
    struct ckh__xrun r;
    int save_rc;
    uint64_t save_end;
    char sym[320], what[512], od[400];
    ckh__explore_run_init(&r);
    int rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &r.disk);
    if (rc)
        return rc;
    r.short_at = i;
    ckh__explore_act(x, CKH__SC_NEW_EPOCH, &r, &save_rc, &save_end);
    x->res->stats.states_checked++;
    ckh__explore_op_desc(o, od, sizeof(od));
    snprintf(what, sizeof(what), "op #%zu %s (save phase) accepted only %" PRIu64 " of its %"
             PRIu64 " bytes and returned that count", i, od, o->len / 2, o->len);
    int kind = short_outcome(x, r.disk, save_rc, sym, sizeof(sym));
    if (kind >= 0) {
        char step[600];
        snprintf(step, sizeof(step), "%s; %s", what, save_rc == 0
                 ? "the save went on as if every byte had been written (write the rest in a "
                   "loop, or fail the save)"
                 : "the save failed but left the truncated file committed");
        rc = ckh__explore_report(x, CKH_VULN_SHORT_WRITE, "fault:short-write", sym,
                                 save_rc == 0 ? "save returned 0; no crash"
                                              : "save failed; no crash", step, x->k);
    } else {
        rc = fault_outcome(x, "fault:short-write", r.disk, save_rc, what,
                           save_rc == 0 ? "save returned 0, then a power loss dropped every "
                                          "pending op" : "save failed; no crash");
    }
    ckh_simfs_destroy(r.disk);
    return rc;
}

int ckh__explore_faults_short_write(struct ckh__xctx *x)
{
    struct ckh__xrun ref;
    int save_rc;
    uint64_t save_end;
    const char *sname = "fault:short-write";
    size_t nops = 0;
    int rc = reference_save(x, sname, &ref, &save_rc, &save_end, &nops);
    if (rc)
        return rc < 0 ? rc : 0;
    for (size_t i = 0; i < nops && rc == 0 && !ckh__explore_bounded(x); i++) {
        const struct ckh__xop *o = &ref.trace[i];
        if ((o->kind != CKH_OP_WRITE && o->kind != CKH_OP_PWRITE) || o->phase != CKH__PH_SAVE ||
            o->len < 2 || !ckh__explore_next_state(x))
            continue;
        rc = short_case(x, o, i);
    }
    ckh__explore_run_free_trace(&ref);
    ckh_simfs_destroy(ref.disk);
    return rc;
}
