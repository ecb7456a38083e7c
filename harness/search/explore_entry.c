/* The crash explorer's entry points (search/explore.h): set up a context
 * over the configuration and run the scenarios of E1 (explore_states.c),
 * the two-rank schedules (explore_schedules.c) and the fault catalogue
 * (explore_catalogue.c). The specification and the result helpers are in
 * explore.c. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/workspace.h"
#include "search/explore_internal.h"

/* ---------------------------------------------------------------- public API */

static int ctx_init(struct ckh__xctx *x, const struct ckh_explore_config *cfg,
                    struct ckh_explore_result *out, char *msg, size_t msglen)
{
    memset(x, 0, sizeof(*x));
    if (!out)
        return CKH_EINVAL;
    memset(out, 0, sizeof(*out));
    if (!cfg || !cfg->ops || !cfg->ops->open || !cfg->ops->close || !cfg->ops->save ||
        !cfg->ops->load || !cfg->ops->list_epochs)
        return ckh_errf(msg, msglen, CKH_EINVAL, "explore: a backend with open, close, save, "
                        "load and list_epochs is required");
    if (cfg->sector_bytes != 0 && cfg->sector_bytes != 512 && cfg->sector_bytes != 4096)
        return ckh_errf(msg, msglen, CKH_EINVAL, "explore: sector size %u is not 512 or 4096",
                        cfg->sector_bytes);
    if (cfg->model != CKH_CRASH_POSIX_WEAK && cfg->model != CKH_CRASH_EXT4_ORDERED)
        return ckh_errf(msg, msglen, CKH_EINVAL, "explore: unknown crash model %d",
                        (int)cfg->model);
    if (cfg->retention_epochs > CKH_EXPLORE_MAX_RETAINED)
        return ckh_errf(msg, msglen, CKH_EINVAL, "explore: %u retention epochs (at most %d)",
                        cfg->retention_epochs, CKH_EXPLORE_MAX_RETAINED);
    if (cfg->ranks == 1 || cfg->ranks > CKH_EXPLORE_MAX_RANKS)
        return ckh_errf(msg, msglen, CKH_EINVAL, "explore: %u node-local ranks (2 to %d)",
                        cfg->ranks, CKH_EXPLORE_MAX_RANKS);
    x->cfg = cfg;
    x->ops = cfg->ops;
    x->res = out;
    uint32_t nb = cfg->nblobs ? cfg->nblobs : 4;
    uint64_t bytes = cfg->blob_bytes ? cfg->blob_bytes : 3000;
    for (int i = 0; i < 4; i++) {
        int rc = ckh__explore_ws_for(x, (uint64_t)i + 1, &x->v[i]);
        if (rc)
            return rc;
        x->d[i] = ckh_ws_digest(x->v[i], NULL);
    }
    x->nret = cfg->retention_epochs ? cfg->retention_epochs : 3;
    for (int64_t e = 1; e <= x->nret; e++) {
        int rc = ckh__explore_ws_make(ckh_mix64(cfg->seed + 100 + (uint64_t)e), nb, bytes, &x->rv[e - 1]);
        if (rc)
            return rc;
        x->rd[e - 1] = ckh_ws_digest(x->rv[e - 1], NULL);
    }
    return 0;
}

static void ctx_fini(struct ckh__xctx *x)
{
    for (int i = 0; i < 4; i++)
        ckh_ws_destroy(x->v[i]);
    for (int i = 0; i < CKH_EXPLORE_MAX_RETAINED; i++)
        ckh_ws_destroy(x->rv[i]);
    free(x->c0);
    free(x->seen.v);
}

/* Ends an entry point: releases the context and, on failure, the partial
 * result; the message names the code unless the call refused its input. */
static int finish(struct ckh__xctx *x, int rc, struct ckh_explore_result *out, char *msg,
                  size_t msglen)
{
    if (rc == 0) {
        /* generated >= checked >= distinct digests; a replay of one state checks it alone */
        const struct ckh_explore_stats *st = &out->stats;
        CKH_ASSERT(x->k == st->states && st->states_checked <= st->states && x->seen.n <= st->states_checked);
        CKH_ASSERT(st->interleavings <= st->states && (!x->cfg->only_state || st->states_checked <= 1));
        for (size_t i = 0; i < out->nvulns; i++)
            CKH_ASSERT(out->vulns[i].state_index <= st->states);
    }
    ctx_fini(x);
    if (rc && out) {
        if (rc != CKH_EINVAL)
            ckh_errf(msg, msglen, rc, "explore: %s", ckh_strerror(rc));
        ckh_explore_result_free(out);
    }
    return rc;
}

int ckh_explore_run(const struct ckh_explore_config *cfg, struct ckh_explore_result *out,
                    char *msg, size_t msglen)
{
    struct ckh__xctx x;
    int rc = ctx_init(&x, cfg, out, msg, msglen);
    unsigned sc = cfg && cfg->scenarios ? cfg->scenarios : CKH_EXPLORE_ALL;
    if (rc == 0 && (sc & CKH_EXPLORE_NEW_EPOCH))
        rc = ckh__explore_scenario(&x, CKH__SC_NEW_EPOCH);
    if (rc == 0 && (sc & CKH_EXPLORE_REPLACE))
        rc = ckh__explore_scenario(&x, CKH__SC_REPLACE);
    if (rc == 0 && (sc & CKH_EXPLORE_RETENTION))
        rc = ckh__explore_scenario(&x, CKH__SC_RETENTION);
    if (rc == 0 && (sc & CKH_EXPLORE_TWO_RANKS))
        rc = ckh__explore_two_ranks(&x);
    if (rc == 0 && (sc & CKH_EXPLORE_NODE_LOCAL))
        rc = ckh__explore_node_local(&x);
    if (rc == 0 && (sc & CKH_EXPLORE_LOAD_NAMES))
        rc = ckh__explore_contract(&x, CKH__SC_LOAD_NAMES);
    if (rc == 0 && (sc & CKH_EXPLORE_ALL_OR_NOTHING))
        rc = ckh__explore_contract(&x, CKH__SC_ALL_OR_NOTHING);
    if (rc == 0 && (sc & CKH_EXPLORE_EPOCHS))
        rc = ckh__explore_contract(&x, CKH__SC_EPOCHS);
    return finish(&x, rc, out, msg, msglen);
}

int ckh_explore_faults(const struct ckh_explore_config *cfg, enum ckh_fault_family fam, int err,
                       struct ckh_explore_result *out, char *msg, size_t msglen)
{
    struct ckh__xctx x;
    int rc = ctx_init(&x, cfg, out, msg, msglen);
    if (rc == 0) {
        switch (fam) {
        case CKH_FAULTS_ERRNO:
            if (err <= 0) {
                rc = ckh_errf(msg, msglen, CKH_EINVAL, "explore: errno %d must be positive", err);
                break;
            }
            rc = ckh__explore_faults_inject(&x, fam, err);
            break;
        case CKH_FAULTS_FSYNC:
            rc = ckh__explore_faults_inject(&x, fam, EIO);
            break;
        case CKH_FAULTS_AT_REST:
            rc = ckh__explore_faults_at_rest(&x);
            break;
        case CKH_FAULTS_LEAK:
            rc = ckh__explore_faults_leak(&x);
            break;
        case CKH_FAULTS_SHORT_WRITE:
            rc = ckh__explore_faults_short_write(&x);
            break;
        default:
            rc = ckh_errf(msg, msglen, CKH_EINVAL, "explore: unknown fault family %d", (int)fam);
        }
    }
    return finish(&x, rc, out, msg, msglen);
}
