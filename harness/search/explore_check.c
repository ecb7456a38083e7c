/* The crash explorer's checks on one crash state (rules E4 and E8 of
 * harness/search/explore.c): recovery as a restarted node would do it,
 * then what must hold of what it finds. Each check returns -1 when the
 * state is fine, else the symptom's enum ckh_vuln_kind with its text.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/alloc.h"
#include "ckh/err.h"
#include "ckh/workspace.h"
#include "search/explore_internal.h"

int ckh__explore_load_digest(struct ckh_backend *b, const char *node, int64_t epoch, uint64_t *dg,
                       char *msg, size_t msglen)
{
    struct ckh_ws *ws;
    int rc = ckh_ws_create(NULL, &ws);
    if (rc)
        return rc;
    rc = ckh_backend_load(b, node, epoch, ws, NULL, 0, 0, NULL);
    if (rc == 0)
        *dg = ckh_ws_digest(ws, NULL);
    else if (msg)
        snprintf(msg, msglen, "%s: %s", ckh_err_name(rc), ckh_backend_errmsg(b));
    ckh_ws_destroy(ws);
    return rc;
}

/* Opens the backend on d as a restarted node would and lists rank0's
 * epochs. 0 with *b open and *ep allocated, or CKH_VULN_RECOVERY_FAILS with
 * its symptom in sym (nothing left open). */
static int recover_and_list(struct ckh__xctx *x, struct ckh_simfs *d, struct ckh_backend **b, int64_t **ep,
                            size_t *cnt, char *sym, size_t n)
{
    struct ckh_backend_config c;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), NULL);
    *b = NULL;
    int rc = x->ops->open(&c, b);
    if (rc) {
        snprintf(sym, n, "open after the crash fails: %s", ckh_err_name(rc));
        return CKH_VULN_RECOVERY_FAILS;
    }
    if ((rc = ckh_backend_list_epochs(*b, "rank0", ep, cnt)) != 0) {
        snprintf(sym, n, "list_epochs after the crash fails: %s: %s", ckh_err_name(rc),
                 ckh_backend_errmsg(*b));
        ckh_backend_close(*b);
        *b = NULL;
        return CKH_VULN_RECOVERY_FAILS;
    }
    return 0;
}

/* The save after recovery (epoch, with the third data set) must succeed
 * and load back: -1 when it does, else CKH_VULN_NEXT_SAVE_FAILS with its
 * symptom in sym. */
static int next_save_works(struct ckh__xctx *x, struct ckh_backend *b, int64_t epoch, char *sym, size_t n)
{
    char m[200] = "";
    uint64_t dg = 0;
    int rc = ckh_backend_save(b, "rank0", epoch, x->v[2], NULL, 0);
    if (rc != 0) {
        snprintf(sym, n, "the next save (epoch %" PRId64 ") fails: %s: %s", epoch, ckh_err_name(rc),
                 ckh_backend_errmsg(b));
        return CKH_VULN_NEXT_SAVE_FAILS;
    }
    if ((rc = ckh__explore_load_digest(b, "rank0", epoch, &dg, m, sizeof(m))) != 0 || dg != x->d[2]) {
        snprintf(sym, n, "the next save (epoch %" PRId64 ") does not load back: %s", epoch,
                 rc ? m : "different data");
        return CKH_VULN_NEXT_SAVE_FAILS;
    }
    return -1;
}

/* E4 on disk d; *epoch_out: the latest listed epoch (-1: none). */
int ckh__explore_check_state(struct ckh__xctx *x, int scen, struct ckh_simfs *d, bool save_returned,
                       char *sym, size_t n, int64_t *epoch_out)
{
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL;
    size_t cnt = 0;
    char m[200] = "";
    uint64_t dg = 0;
    int kind = -1;
    *epoch_out = -1;
    int rc = recover_and_list(x, d, &b, &ep, &cnt, sym, n);
    if (rc)
        return rc;
    if (cnt == 0) {
        snprintf(sym, n, "no epoch is listed after the crash (expected epoch %d%s)",
                 scen == CKH__SC_REPLACE ? 1 : save_returned ? 2 : 1,
                 save_returned || scen == CKH__SC_REPLACE ? "" : " or 2");
        kind = CKH_VULN_NO_CHECKPOINT;
        goto out_free;
    }
    int64_t latest = ep[cnt - 1];
    *epoch_out = latest;
    bool ok_epoch = scen == CKH__SC_REPLACE ? latest == 1 : (latest == 1 || latest == 2);
    if (!ok_epoch) {
        snprintf(sym, n, "latest listed epoch is %" PRId64 ", never committed", latest);
        kind = CKH_VULN_WRONG_EPOCH;
        goto out_free;
    }
    if ((rc = ckh__explore_load_digest(b, "rank0", latest, &dg, m, sizeof(m))) != 0) {
        snprintf(sym, n, "epoch %" PRId64 " is listed but its load fails: %s", latest, m);
        kind = CKH_VULN_LISTED_REFUSED;
        goto out_free;
    }
    bool is_new = scen == CKH__SC_REPLACE ? dg == x->d[1] : (latest == 2 && dg == x->d[1]);
    bool is_old = latest == 1 && dg == x->d[0];
    if (!is_new && !is_old) {
        snprintf(sym, n, "load of epoch %" PRId64 " returned data that was never saved "
                 "(digest %016" PRIx64 ", expected %016" PRIx64 ")", latest, dg,
                 latest == 1 && scen != CKH__SC_REPLACE ? x->d[0] : x->d[1]);
        kind = CKH_VULN_CORRUPT_RETURNED;
        goto out_free;
    }
    if (save_returned && !is_new) {
        snprintf(sym, n, "the save of epoch %d returned 0, but recovery finds the previous "
                 "checkpoint", scen == CKH__SC_REPLACE ? 1 : 2);
        kind = CKH_VULN_NOT_DURABLE;
        goto out_free;
    }
    kind = next_save_works(x, b, 3, sym, n);
out_free:
    ckh_free(NULL, ep);
    ckh_backend_close(b);
    return kind;
}

/* E8: every listed epoch was committed: one kept before the save, or the
 * new one. -1, or WRONG_EPOCH with *bad the epoch. */
static int all_committed(const struct ckh__xctx *x, const int64_t *ep, size_t cnt, char *sym,
                         size_t n, int64_t *bad)
{
    int64_t new_epoch = x->nret + 1;
    for (size_t i = 0; i < cnt; i++) {
        bool known = ep[i] == new_epoch;
        for (size_t j = 0; j < x->nc0 && !known && ep[i] >= 1 && ep[i] <= x->nret; j++)
            known = ep[i] == x->c0[j];
        if (!known) {
            snprintf(sym, n, "epoch %" PRId64 " is listed but was not committed when the save "
                     "of epoch %" PRId64 " began", ep[i], new_epoch);
            *bad = ep[i];
            return CKH_VULN_WRONG_EPOCH;
        }
    }
    return -1;
}

/* E8: every listed epoch loads bit-exact, newest first. -1, or
 * LISTED_REFUSED / CORRUPT_RETURNED with *bad the epoch. */
static int all_load(const struct ckh__xctx *x, struct ckh_backend *b, const int64_t *ep,
                    size_t cnt, char *sym, size_t n, int64_t *bad)
{
    char m[200] = "";
    uint64_t dg = 0;
    for (size_t i = cnt; i-- > 0;) {
        uint64_t want = ep[i] == x->nret + 1 ? x->d[1] : x->rd[ep[i] - 1];
        if (ckh__explore_load_digest(b, "rank0", ep[i], &dg, m, sizeof(m)) != 0) {
            snprintf(sym, n, "epoch %" PRId64 " is listed but its load fails: %s", ep[i], m);
            *bad = ep[i];
            return CKH_VULN_LISTED_REFUSED;
        }
        if (dg != want) {
            snprintf(sym, n, "load of epoch %" PRId64 " returned data that was never saved "
                     "(digest %016" PRIx64 ", expected %016" PRIx64 ")", ep[i], dg, want);
            *bad = ep[i];
            return CKH_VULN_CORRUPT_RETURNED;
        }
    }
    return -1;
}

/* E8 on disk d (the retention scenario); *epoch_out is the listed epoch
 * that failed, else the latest listed. */
int ckh__explore_check_retention(struct ckh__xctx *x, struct ckh_simfs *d, bool save_returned,
                                 char *sym, size_t n, int64_t *epoch_out)
{
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL, new_epoch = x->nret + 1;
    size_t cnt = 0;
    int kind = -1;
    *epoch_out = -1;
    int rc = recover_and_list(x, d, &b, &ep, &cnt, sym, n);
    if (rc)
        return rc;
    if (cnt == 0) {
        snprintf(sym, n, "no epoch is listed after the crash (the backend kept %zu before the "
                 "save of epoch %" PRId64 ")", x->nc0, new_epoch);
        kind = CKH_VULN_NO_CHECKPOINT;
        goto out_free;
    }
    *epoch_out = ep[cnt - 1];
    if ((kind = all_committed(x, ep, cnt, sym, n, epoch_out)) >= 0 ||
        (kind = all_load(x, b, ep, cnt, sym, n, epoch_out)) >= 0)
        goto out_free;
    if (cnt < x->nc0) {
        snprintf(sym, n, "%zu committed checkpoint%s after the crash (latest epoch %"
                 PRId64 "); the backend kept %zu before the save of epoch %" PRId64,
                 cnt, cnt == 1 ? " loads" : "s load", ep[cnt - 1], x->nc0, new_epoch);
        kind = CKH_VULN_TOO_FEW_CHECKPOINTS;
        goto out_free;
    }
    if (save_returned && ep[cnt - 1] != new_epoch) {
        snprintf(sym, n, "the save of epoch %" PRId64 " returned 0, but recovery finds epoch %"
                 PRId64, new_epoch, ep[cnt - 1]);
        kind = CKH_VULN_NOT_DURABLE;
        goto out_free;
    }
    kind = next_save_works(x, b, new_epoch + 1, sym, n);
out_free:
    ckh_free(NULL, ep);
    ckh_backend_close(b);
    return kind;
}
