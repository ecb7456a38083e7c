/* The backend contract beyond crashes (rule E10 of harness/search/explore.c):
 * loads by name list and flags, loads that fail leaving the workspace as
 * it was (all or nothing), and epochs past 9 in numeric order. Each
 * numbered check below is one state of its scenario (its K for
 * ckh_explore_config.only_state), run on a fresh disk so that it replays
 * alone.
 *
 * Map: helpers | load-names | all-or-nothing | epochs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/alloc.h"
#include "ckh/err.h"
#include "ckh/workspace.h"
#include "search/explore_internal.h"

#define NO_SUCH_BLOB "no.such.blob"

/* ------------------------------------------------------------------ helpers */

/* One contract check's finding (state index x->k). */
static int finding(struct ckh__xctx *x, int scen, enum ckh_vuln_kind kind, const char *sym,
                   const char *state, const char *step)
{
    return ckh__explore_report(x, kind, ckh__explore_scen_names[scen], sym, state, step, x->k);
}

/* A fresh disk with epoch 1 = v1 committed and an instance open on it
 * (direct view). 1 when the set-up itself failed (BASELINE_FAILS added),
 * 0 with *d and *b, or an internal error. */
static int open_setup(struct ckh__xctx *x, int scen, struct ckh_simfs **d, struct ckh_backend **b)
{
    struct ckh_backend_config c;
    *b = NULL;
    int rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, d);
    if (rc) {
        if (*d || !x->msg[0])
            return rc;
        rc = ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, ckh__explore_scen_names[scen],
                                   x->msg, "no crash", "setup");
        return rc ? rc : 1;
    }
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(*d), NULL);
    if ((rc = x->ops->open(&c, b)) != 0) {
        char sym[200];
        snprintf(sym, sizeof(sym), "open failed without faults: %s", ckh_err_name(rc));
        ckh_simfs_destroy(*d);
        *d = NULL;
        rc = ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS, ckh__explore_scen_names[scen],
                                   sym, "no crash", "open");
        return rc ? rc : 1;
    }
    return 0;
}

static void close_setup(struct ckh_simfs *d, struct ckh_backend *b)
{
    ckh_backend_close(b);
    ckh_simfs_destroy(d);
}

/* "{a, b}" or "NULL (every blob)" into buf. */
static void names_text(const char *const *names, size_t count, char *buf, size_t n)
{
    size_t w = 0;
    if (!names) {
        snprintf(buf, n, "NULL (every blob)");
        return;
    }
    w += (size_t)snprintf(buf, n, "{");
    for (size_t i = 0; i < count && w < n; i++)
        w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? ", " : "", names[i]);
    if (w < n)
        snprintf(buf + w, n - w, "}");
}

static bool listed_in(const char *name, const char *const *names, size_t count)
{
    for (size_t i = 0; names && i < count; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return !names;
}

/* ----------------------------------------------------------------- load-names */

/* One load of epoch 1 (= v1) by name list. */
struct name_case {
    const char *names[3];  /* names asked for */
    size_t count;          /* how many (0 with all NULL: names NULL) */
    unsigned flags;        /* load flags */
    int want_rc;           /* the contract's code */
    size_t want_loaded;    /* blobs loaded when want_rc is 0 */
};

static const struct name_case name_cases[] = {
    {{"param.01", "step", NULL}, 2, 0, 0, 2},
    {{"param.01", NO_SUCH_BLOB, NULL}, 2, CKH_LOAD_ALLOW_MISSING, 0, 1},
    {{"param.01", NO_SUCH_BLOB, NULL}, 2, 0, CKH_ENOTFOUND, 0},
    {{NULL, NULL, NULL}, 0, 0, 0, 5},
};

/* The workspace after a successful load holds exactly the names asked
 * for that v1 has, each bit-exact; -1, or LOAD_CONTRACT with sym. */
static int check_loaded(const struct ckh__xctx *x, const struct ckh_ws *ws,
                        const char *const *names, size_t count, char *sym, size_t n)
{
    const struct ckh_ws *v1 = x->v[0];
    for (size_t i = 0; i < ckh_ws_count(ws); i++) {
        const struct ckh_blob *got = ckh_ws_at(ws, i), *want = ckh_ws_find(v1, got->name);
        if (!listed_in(got->name, names, count) || !want) {
            snprintf(sym, n, "blob %s was loaded though it was not asked for", got->name);
            return CKH_VULN_LOAD_CONTRACT;
        }
        if (ckh_blob_digest(0, got) != ckh_blob_digest(0, want)) {
            snprintf(sym, n, "blob %s was loaded with data that was never saved", got->name);
            return CKH_VULN_CORRUPT_RETURNED;
        }
    }
    for (size_t i = 0; i < ckh_ws_count(v1); i++) {
        const char *name = ckh_ws_at(v1, i)->name;
        if (listed_in(name, names, count) && !ckh_ws_has(ws, name)) {
            snprintf(sym, n, "blob %s was asked for and saved, but not loaded", name);
            return CKH_VULN_LOAD_CONTRACT;
        }
    }
    return -1;
}

/* One name case on b: -1, or the finding's kind with sym. */
static int name_case_run(struct ckh__xctx *x, struct ckh_backend *b, const struct name_case *nc,
                         char *sym, size_t n)
{
    const char *const *names = nc->count ? nc->names : NULL;
    struct ckh_ws *ws;
    size_t loaded = (size_t)-1;
    int kind = -1;
    int rc = ckh_ws_create(NULL, &ws);
    if (rc)
        return rc;
    rc = ckh_backend_load(b, "rank0", 1, ws, names, nc->count, nc->flags, &loaded);
    if (rc != nc->want_rc) {
        snprintf(sym, n, "returned %s (expected %s): %s", rc ? ckh_err_name(rc) : "0",
                 nc->want_rc ? ckh_err_name(nc->want_rc) : "0",
                 rc ? ckh_backend_errmsg(b) : "the missing name was not reported");
        kind = CKH_VULN_LOAD_CONTRACT;
    } else if (rc != 0 && ckh_ws_count(ws) != 0) {
        snprintf(sym, n, "failed as it should, but left %zu blob%s in the workspace",
                 ckh_ws_count(ws), ckh_ws_count(ws) == 1 ? "" : "s");
        kind = CKH_VULN_PARTIAL_LOAD;
    } else if (rc == 0 && loaded != nc->want_loaded) {
        snprintf(sym, n, "reported %zu blobs loaded (expected %zu)", loaded, nc->want_loaded);
        kind = CKH_VULN_LOAD_CONTRACT;
    } else if (rc == 0) {
        kind = check_loaded(x, ws, names, nc->count, sym, n);
    }
    ckh_ws_destroy(ws);
    return kind;
}

static int load_names(struct ckh__xctx *x)
{
    const int scen = CKH__SC_LOAD_NAMES;
    int rc = 0;
    for (size_t i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]) && rc == 0; i++) {
        const struct name_case *nc = &name_cases[i];
        struct ckh_simfs *d;
        struct ckh_backend *b;
        char what[160], sym[300], full[320], state[256];
        if (!ckh__explore_next_state(x))
            continue;
        if ((rc = open_setup(x, scen, &d, &b)) != 0)
            return rc > 0 ? 0 : rc;
        x->res->stats.states_checked++;
        int kind = name_case_run(x, b, nc, sym, sizeof(sym));
        close_setup(d, b);
        if (kind < -1 || kind >= (int)CKH_VULN__COUNT)
            return kind; /* an internal error */
        if (kind < 0)
            continue;
        names_text(nc->count ? nc->names : NULL, nc->count, what, sizeof(what));
        snprintf(full, sizeof(full), "load of epoch 1 with names %s%s %s", what,
                 nc->flags ? " and CKH_LOAD_ALLOW_MISSING" : "", sym);
        snprintf(state, sizeof(state), "no crash; epoch 1 committed with blobs param.00.."
                 "param.%02u and step", (x->cfg->nblobs ? x->cfg->nblobs : 4) - 1);
        rc = finding(x, scen, (enum ckh_vuln_kind)kind, full, state,
                     kind == CKH_VULN_PARTIAL_LOAD
                         ? "load must check every name asked for before it changes the workspace"
                         : "load must honour names (only those blobs), CKH_LOAD_ALLOW_MISSING "
                           "(skip absent ones) and report an absent name with CKH_ENOTFOUND "
                           "otherwise");
    }
    return rc;
}

/* ------------------------------------------------------------ all-or-nothing */

/* The workspace a failing load must leave alone: v3's blobs (same names
 * as v1's, other data) and one blob v1 does not have. */
static int prefilled(struct ckh__xctx *x, struct ckh_ws **out)
{
    int rc = ckh__explore_ws_for(x, 3, out);
    if (rc == 0 && (rc = ckh_ws_set_i64(*out, "extra.keep", 42)) != 0)
        ckh_ws_destroy(*out);
    return rc;
}

/* One load into the prefilled workspace: a load that fails must leave it
 * as it was. must_fail: the load has to fail (a missing name, an epoch
 * never saved). -1, or the finding's kind with sym. */
static int aon_load(struct ckh__xctx *x, struct ckh_backend *b, int64_t epoch,
                    const char *const *names, size_t count, bool must_fail, char *sym, size_t n)
{
    struct ckh_ws *ws;
    int rc = prefilled(x, &ws);
    if (rc)
        return rc;
    uint64_t before = ckh_ws_digest(ws, NULL);
    size_t nbefore = ckh_ws_count(ws);
    int kind = -1;
    rc = ckh_backend_load(b, "rank0", epoch, ws, names, count, 0, NULL);
    if (rc == 0 && must_fail) {
        snprintf(sym, n, "returned 0 (expected an error%s)",
                 names ? ": CKH_ENOTFOUND for the missing name" : "");
        kind = CKH_VULN_LOAD_CONTRACT;
    } else if (rc != 0 && (ckh_ws_digest(ws, NULL) != before || ckh_ws_count(ws) != nbefore)) {
        snprintf(sym, n, "failed (%s) but changed the workspace: %zu blobs before, %zu after, "
                 "contents %s", ckh_err_name(rc), nbefore, ckh_ws_count(ws),
                 ckh_ws_digest(ws, NULL) != before ? "changed" : "the same");
        kind = CKH_VULN_PARTIAL_LOAD;
    }
    ckh_ws_destroy(ws);
    return kind;
}

/* The damage of one all-or-nothing state on file f (s bytes): j = 0..4
 * truncations to 0, s/2, s-1 bytes, bit flips in the middle and the last
 * byte; text in state. False when j does not apply to a file this small. */
static bool damage(struct ckh_simfs *d, const char *f, uint64_t s, int j, char *state, size_t n)
{
    uint64_t at[] = {0, s / 2, s - 1, s / 2, s - 1};
    char how[96];
    if (s < 2 && j != 0 && j != 4)
        return false;
    if (d) {
        if (j < 3)
            ckh_simfs_truncate_at_rest(d, f, at[j]);
        else
            ckh_simfs_flip_bit(d, f, at[j] * 8 + 3);
    }
    if (j < 3)
        snprintf(how, sizeof(how), "truncated to %" PRIu64 " bytes", at[j]);
    else
        snprintf(how, sizeof(how), "bit 3 of byte %" PRIu64 " flipped", at[j]);
    snprintf(state, n, "no crash; %s (%" PRIu64 " bytes) %s at rest; the workspace held v3's "
             "blobs and extra.keep", f, s, how);
    return true;
}

/* States 1 and 2: a missing name, an epoch never saved. */
static int aon_refusals(struct ckh__xctx *x)
{
    const int scen = CKH__SC_ALL_OR_NOTHING;
    static const char *const names[] = {"param.00", NO_SUCH_BLOB};
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        struct ckh_simfs *d;
        struct ckh_backend *b;
        char sym[300], full[320];
        if (!ckh__explore_next_state(x))
            continue;
        if ((rc = open_setup(x, scen, &d, &b)) != 0)
            return rc > 0 ? 0 : rc;
        x->res->stats.states_checked++;
        int kind = i == 0 ? aon_load(x, b, 1, names, 2, true, sym, sizeof(sym))
                          : aon_load(x, b, 7, NULL, 0, true, sym, sizeof(sym));
        close_setup(d, b);
        if (kind < -1 || kind >= (int)CKH_VULN__COUNT)
            return kind;
        if (kind < 0)
            continue;
        snprintf(full, sizeof(full), "%s %s", i == 0 ? "load of epoch 1 with names {param.00, "
                 NO_SUCH_BLOB "}" : "load of epoch 7 (never saved)", sym);
        rc = finding(x, scen, (enum ckh_vuln_kind)kind, full,
                     "no crash; epoch 1 committed; the workspace held v3's blobs and extra.keep",
                     "load must check everything (names, lengths, checksums) before it "
                     "changes the workspace");
    }
    return rc;
}

/* States 3..: each file of the committed checkpoint damaged five ways;
 * a load that fails must leave the workspace as it was. */
static int aon_damaged(struct ckh__xctx *x, char **files, size_t nf)
{
    const int scen = CKH__SC_ALL_OR_NOTHING;
    static const char *const subset[] = {"param.01", "step"};
    int rc = 0;
    for (size_t f = 0; f < nf && rc == 0; f++) {
        struct ckh_stat st;
        struct ckh_simfs *d;
        struct ckh_backend *b;
        if ((rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &d)) != 0)
            return rc;
        rc = ckh_fs_stat(ckh_simfs_fs(d), files[f], &st);
        ckh_simfs_destroy(d);
        if (rc || st.size_bytes == 0) {
            rc = 0;
            continue;
        }
        for (int j = 0; j < 5 && rc == 0; j++) {
            char state[600], sym[300], full[320];
            if (!damage(NULL, files[f], st.size_bytes, j, state, sizeof(state)) ||
                !ckh__explore_next_state(x))
                continue;
            if ((rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &d)) != 0)
                return rc;
            damage(d, files[f], st.size_bytes, j, state, sizeof(state));
            struct ckh_backend_config c;
            ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), NULL);
            int kind = -1;
            if (x->ops->open(&c, &b) == 0) {
                x->res->stats.states_checked++;
                bool sub = j == 1; /* one of them loads a subset of the names */
                kind = aon_load(x, b, 1, sub ? subset : NULL, sub ? 2 : 0, false, sym, sizeof(sym));
                ckh_backend_close(b);
            }
            ckh_simfs_destroy(d);
            if (kind < -1 || kind >= (int)CKH_VULN__COUNT)
                return kind;
            if (kind < 0)
                continue;
            snprintf(full, sizeof(full), "load of epoch 1%s %s", j == 1 ? " with names "
                     "{param.01, step}" : "", sym);
            rc = finding(x, scen, (enum ckh_vuln_kind)kind, full, state,
                         "load must verify the whole checkpoint before it changes the "
                         "workspace (decode into scratch, then move the blobs in)");
        }
    }
    return rc;
}

static int all_or_nothing(struct ckh__xctx *x)
{
    struct ckh_simfs *d = NULL;
    char **files = NULL;
    size_t nf = 0;
    int rc = aon_refusals(x);
    if (rc)
        return rc;
    if ((rc = ckh__explore_setup(x, CKH__SC_NEW_EPOCH, &d)) != 0) {
        if (d || !x->msg[0])
            return rc;
        return ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS,
                                     ckh__explore_scen_names[CKH__SC_ALL_OR_NOTHING], x->msg,
                                     "no crash", "setup");
    }
    rc = ckh__explore_collect_files(ckh_simfs_fs(d), CKH__X_PREFIX, &files, &nf);
    ckh_simfs_destroy(d);
    if (rc == 0)
        rc = aon_damaged(x, files, nf);
    ckh__explore_free_strv(files, nf);
    return rc;
}

/* -------------------------------------------------------------------- epochs */

/* The epochs saved, ascending; a text sort gives 10, 100, 11, 2, 9. */
static const int64_t epochs_saved[] = {2, 9, 10, 11, 100};
#define NEPOCHS (sizeof(epochs_saved) / sizeof(epochs_saved[0]))

/* The data saved under epoch e (a workspace of its own). */
static int epoch_ws(struct ckh__xctx *x, int64_t e, struct ckh_ws **out)
{
    return ckh__explore_ws_for(x, 1000 + (uint64_t)e, out);
}

/* A fresh disk with every epoch of epochs_saved committed, in ascending
 * order, and an instance open on it. 1 when a save failed (reported). */
static int epochs_setup(struct ckh__xctx *x, struct ckh_simfs **d, struct ckh_backend **b)
{
    struct ckh_backend_config c;
    char sym[320];
    *b = NULL;
    int rc = ckh__explore_disk_new(x, d);
    if (rc)
        return rc;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(*d), NULL);
    if ((rc = x->ops->open(&c, b)) != 0) {
        snprintf(sym, sizeof(sym), "open failed without faults: %s", ckh_err_name(rc));
        goto out_fail;
    }
    for (size_t i = 0; i < NEPOCHS; i++) {
        struct ckh_ws *ws;
        if ((rc = epoch_ws(x, epochs_saved[i], &ws)) != 0)
            goto out_err;
        rc = ckh_backend_save(*b, "rank0", epochs_saved[i], ws, NULL, 0);
        ckh_ws_destroy(ws);
        if (rc != 0) {
            snprintf(sym, sizeof(sym), "save of epoch %" PRId64 " failed without faults: %s: %s",
                     epochs_saved[i], ckh_err_name(rc), ckh_backend_errmsg(*b));
            goto out_fail;
        }
        ckh_simfs_sync_all(*d);
    }
    return 0;
out_fail:
    rc = ckh__explore_vuln_add(x->res, CKH_VULN_BASELINE_FAILS,
                               ckh__explore_scen_names[CKH__SC_EPOCHS], sym, "no crash",
                               "saving epochs 2, 9, 10, 11, 100");
    rc = rc ? rc : 1;
out_err:
    close_setup(*d, *b);
    *d = NULL;
    *b = NULL;
    return rc;
}

/* "2, 9, 10" into buf. */
static void epochs_text(const int64_t *ep, size_t n, char *buf, size_t bn)
{
    size_t w = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && w < bn; i++)
        w += (size_t)snprintf(buf + w, bn - w, "%s%" PRId64, i ? ", " : "", ep[i]);
}

/* The listing is ascending, holds only saved epochs, ends with newest
 * (unless it was removed: newest < 0 skips that), and every listed epoch
 * loads bit-exact. -1, or the kind with sym. */
static int check_listing(struct ckh__xctx *x, struct ckh_backend *b, const int64_t *ep, size_t n,
                         int64_t newest, char *sym, size_t sn)
{
    char lt[200];
    epochs_text(ep, n, lt, sizeof(lt));
    for (size_t i = 0; i < n; i++) {
        bool saved = false;
        for (size_t j = 0; j < NEPOCHS; j++)
            saved |= ep[i] == epochs_saved[j];
        if (!saved) {
            snprintf(sym, sn, "list_epochs returned %s: epoch %" PRId64 " was never saved", lt,
                     ep[i]);
            return CKH_VULN_WRONG_EPOCH;
        }
        if (i > 0 && ep[i] <= ep[i - 1]) {
            snprintf(sym, sn, "list_epochs returned %s: not ascending in numeric order, so the "
                     "latest checkpoint reads as epoch %" PRId64 ", not %" PRId64, lt, ep[n - 1],
                     newest);
            return CKH_VULN_EPOCH_ORDER;
        }
    }
    if (newest >= 0 && (n == 0 || ep[n - 1] != newest)) {
        snprintf(sym, sn, "list_epochs returned %s after saves of epochs 2, 9, 10, 11, %" PRId64
                 " (each made durable): epoch %" PRId64 " is missing", n ? lt : "nothing", newest,
                 newest);
        return CKH_VULN_NOT_DURABLE;
    }
    for (size_t i = n; i-- > 0;) {
        struct ckh_ws *want;
        uint64_t dg = 0;
        char m[200];
        int rc = epoch_ws(x, ep[i], &want);
        if (rc)
            return rc;
        uint64_t wd = ckh_ws_digest(want, NULL);
        ckh_ws_destroy(want);
        if (ckh__explore_load_digest(b, "rank0", ep[i], &dg, m, sizeof(m)) != 0) {
            snprintf(sym, sn, "epoch %" PRId64 " is listed but its load fails: %s", ep[i], m);
            return CKH_VULN_LISTED_REFUSED;
        }
        if (dg != wd) {
            snprintf(sym, sn, "load of epoch %" PRId64 " returned another epoch's data (or data "
                     "never saved)", ep[i]);
            return CKH_VULN_CORRUPT_RETURNED;
        }
    }
    return -1;
}

/* Epoch 1 was never saved, though "1" begins "10", "100", "11". */
static int check_epoch_one(struct ckh_backend *b, char *sym, size_t sn)
{
    uint64_t dg;
    bool ex = false;
    if (b->ops->exists && ckh_backend_exists(b, "rank0", 1, &ex) == 0 && ex) {
        snprintf(sym, sn, "exists reports epoch 1, which was never saved (epochs 10, 100, 11 "
                 "begin with its digits)");
        return CKH_VULN_WRONG_EPOCH;
    }
    if (ckh__explore_load_digest(b, "rank0", 1, &dg, NULL, 0) == 0) {
        snprintf(sym, sn, "load of epoch 1, which was never saved, returned data (epochs 10, "
                 "100, 11 begin with its digits)");
        return CKH_VULN_WRONG_EPOCH;
    }
    return -1;
}

/* State 1: the listing and the loads; state 2: remove(10), then again. */
static int epochs_state(struct ckh__xctx *x, struct ckh_backend *b, int st, char *sym, size_t sn)
{
    int64_t *ep = NULL;
    size_t n = 0;
    int rc;
    if (st == 2) {
        if (!b->ops->remove)
            return -1;
        if ((rc = ckh_backend_remove(b, "rank0", 10)) != 0 && rc != CKH_ENOTFOUND) {
            snprintf(sym, sn, "remove of epoch 10 failed: %s: %s", ckh_err_name(rc),
                     ckh_backend_errmsg(b));
            return CKH_VULN_BASELINE_FAILS;
        }
    }
    if ((rc = ckh_backend_list_epochs(b, "rank0", &ep, &n)) != 0) {
        snprintf(sym, sn, "list_epochs failed: %s: %s", ckh_err_name(rc), ckh_backend_errmsg(b));
        return CKH_VULN_RECOVERY_FAILS;
    }
    int kind = -1;
    for (size_t i = 0; st == 2 && i < n && kind < 0; i++)
        if (ep[i] == 10) {
            snprintf(sym, sn, "epoch 10 is still listed after its remove returned 0");
            kind = CKH_VULN_WRONG_EPOCH;
        }
    if (kind < 0)
        kind = check_listing(x, b, ep, n, 100, sym, sn);
    if (kind < 0 && st == 1)
        kind = check_epoch_one(b, sym, sn);
    ckh_free(NULL, ep);
    return kind;
}

static int epochs(struct ckh__xctx *x)
{
    const int scen = CKH__SC_EPOCHS;
    int rc = 0;
    for (int st = 1; st <= 2 && rc == 0; st++) {
        struct ckh_simfs *d;
        struct ckh_backend *b;
        char sym[320];
        if (!ckh__explore_next_state(x))
            continue;
        if ((rc = epochs_setup(x, &d, &b)) != 0)
            return rc > 0 ? 0 : rc;
        x->res->stats.states_checked++;
        int kind = epochs_state(x, b, st, sym, sizeof(sym));
        close_setup(d, b);
        if (kind < -1 || kind >= (int)CKH_VULN__COUNT)
            return kind;
        if (kind >= 0)
            rc = finding(x, scen, (enum ckh_vuln_kind)kind, sym,
                         st == 1 ? "no crash; epochs 2, 9, 10, 11, 100 saved in this order"
                                 : "no crash; epochs 2, 9, 10, 11, 100 saved, then epoch 10 "
                                   "removed",
                         "parse epochs as numbers and sort them as numbers; match whole "
                         "names, never prefixes");
    }
    return rc;
}

int ckh__explore_contract(struct ckh__xctx *x, int scen)
{
    switch (scen) {
    case CKH__SC_LOAD_NAMES: return load_names(x);
    case CKH__SC_ALL_OR_NOTHING: return all_or_nothing(x);
    case CKH__SC_EPOCHS: return epochs(x);
    default: return CKH_EINVAL;
    }
}
