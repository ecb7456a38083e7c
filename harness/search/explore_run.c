/* The crash explorer's scenarios (rule E1 of harness/search/explore.c):
 * the data sets, the disk, the committed starting point set up directly on
 * the disk, and the traced action that runs through the recording shim.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/alloc.h"
#include "ckh/err.h"
#include "ckh/workspace.h"
#include "search/explore_internal.h"

int ckh__explore_ws_make(uint64_t seed, uint32_t nblobs, uint64_t bytes, struct ckh_ws **out)
{
    struct ckh_ws *ws;
    int rc = ckh_ws_create(NULL, &ws);
    if (rc)
        return rc;
    unsigned char *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        ckh_ws_destroy(ws);
        return CKH_ENOMEM;
    }
    for (uint32_t i = 0; i < nblobs && rc == 0; i++) {
        char name[32];
        struct ckh_gen g = {seed, i, 0};
        ckh_gen_fill(&g, 0, buf, bytes);
        snprintf(name, sizeof(name), "param.%02u", i);
        uint64_t shape[1] = {bytes};
        rc = ckh_ws_set(ws, name, CKH_DT_U8, 1, shape, buf);
    }
    if (rc == 0)
        rc = ckh_ws_set_i64(ws, "step", (int64_t)(seed & 0xffff));
    free(buf);
    if (rc) {
        ckh_ws_destroy(ws);
        return rc;
    }
    *out = ws;
    return 0;
}

int ckh__explore_ws_for(const struct ckh__xctx *x, uint64_t salt, struct ckh_ws **out)
{
    uint32_t nb = x->cfg->nblobs ? x->cfg->nblobs : 4;
    uint64_t bytes = x->cfg->blob_bytes ? x->cfg->blob_bytes : 3000;
    return ckh__explore_ws_make(ckh_mix64(x->cfg->seed + salt), nb, bytes, out);
}

void ckh__explore_backend_cfg(struct ckh_backend_config *c, struct ckh_fs *fs, struct ckh_alloc *a)
{
    memset(c, 0, sizeof(*c));
    c->fs = fs;
    c->alloc = a;
    c->prefix = CKH__X_PREFIX;
}

int ckh__explore_disk_new(struct ckh__xctx *x, struct ckh_simfs **out)
{
    struct ckh_simfs_config dc;
    memset(&dc, 0, sizeof(dc));
    dc.name = "explore";
    dc.model = x->cfg->model;
    dc.sector_bytes = x->cfg->sector_bytes ? x->cfg->sector_bytes : 512;
    dc.seed = x->cfg->seed;
    int rc = ckh_simfs_create(&dc, out);
    if (rc)
        return rc;
    if ((rc = ckh_fs_mkdirs(ckh_simfs_fs(*out), CKH__X_PREFIX)) != 0) {
        ckh_simfs_destroy(*out);
        *out = NULL; /* the caller's cleanup destroys what *out holds */
        return rc;
    }
    ckh_simfs_sync_all(*out);
    return 0;
}

/* E8: what the backend lists after setup is what it promises to keep;
 * copied to x->c0. The backend's code with x->msg set, or CKH_ENOMEM. */
static int list_kept(struct ckh__xctx *x, struct ckh_backend *b)
{
    free(x->c0);
    x->c0 = NULL;
    x->nc0 = 0;
    int64_t *ep = NULL;
    size_t cnt = 0;
    int rc = ckh_backend_list_epochs(b, "rank0", &ep, &cnt);
    if (rc != 0 || cnt == 0) {
        rc = ckh_errf(x->msg, sizeof(x->msg), rc ? rc : CKH_ENOTFOUND,
                      "listing after %" PRId64 " saves without faults: %s: %s", x->nret,
                      rc ? ckh_err_name(rc) : "nothing listed", rc ? ckh_backend_errmsg(b) : "");
    } else if (!(x->c0 = malloc(cnt * sizeof(*x->c0)))) {
        rc = CKH_ENOMEM;
    } else {
        memcpy(x->c0, ep, cnt * sizeof(*ep));
        x->nc0 = cnt;
    }
    ckh_free(NULL, ep);
    return rc;
}

/* Saves the scenario's committed epochs through a fresh instance on disk d. */
static int commit_epochs(struct ckh__xctx *x, int scen, struct ckh_simfs *d)
{
    struct ckh_backend *b = NULL;
    struct ckh_backend_config c;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), NULL);
    int rc = x->ops->open(&c, &b);
    if (rc != 0)
        return ckh_errf(x->msg, sizeof(x->msg), rc, "open failed without faults: %s",
                        ckh_err_name(rc));
    int64_t last = scen == CKH__SC_RETENTION ? x->nret : 1;
    for (int64_t e = 1; e <= last && rc == 0; e++) {
        const struct ckh_ws *ws = scen == CKH__SC_RETENTION ? x->rv[e - 1] : x->v[0];
        if ((rc = ckh_backend_save(b, "rank0", e, ws, NULL, 0)) != 0)
            ckh_errf(x->msg, sizeof(x->msg), rc, "save of epoch %" PRId64 " failed without "
                     "faults: %s: %s", e, ckh_err_name(rc), ckh_backend_errmsg(b));
        else
            ckh_simfs_sync_all(d);
    }
    if (rc == 0 && scen == CKH__SC_RETENTION)
        rc = list_kept(x, b);
    ckh_backend_close(b);
    return rc;
}

int ckh__explore_setup(struct ckh__xctx *x, int scen, struct ckh_simfs **out)
{
    int rc = ckh__explore_disk_new(x, out);
    if (rc || scen == CKH__SC_TWO_RANKS)
        return rc;
    if ((rc = commit_epochs(x, scen, *out)) != 0) {
        ckh_simfs_destroy(*out);
        *out = NULL;
        return rc;
    }
    ckh_simfs_sync_all(*out);
    return 0;
}

void ckh__explore_act(struct ckh__xctx *x, int scen, struct ckh__xrun *r, int *save_rc, uint64_t *save_end)
{
    struct ckh__xshim s;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    ckh__explore_shim_init(&s, r, 0);
    ckh__explore_backend_cfg(&c, &s.base, NULL);
    *save_end = UINT64_MAX;
    r->phase = CKH__PH_OPEN;
    *save_rc = x->ops->open(&c, &b);
    if (*save_rc)
        return;
    r->phase = CKH__PH_SAVE;
    int64_t epoch = scen == CKH__SC_REPLACE ? 1 : scen == CKH__SC_RETENTION ? x->nret + 1 : 2;
    *save_rc = ckh_backend_save(b, "rank0", epoch, x->v[1], NULL, 0);
    if (*save_rc == 0 && !r->killed)
        *save_end = r->nops;
    if (*save_rc == 0 && scen == CKH__SC_NEW_EPOCH && x->ops->remove) {
        r->phase = CKH__PH_RETENTION;
        ckh_backend_remove(b, "rank0", 1);
    }
    if (*save_rc == 0 && scen == CKH__SC_RETENTION && x->ops->remove && x->nc0) {
        r->phase = CKH__PH_RETENTION; /* E8: the oldest kept epoch goes (it may be gone already) */
        ckh_backend_remove(b, "rank0", x->c0[0]);
    }
    r->phase = CKH__PH_CLOSE;
    ckh_backend_close(b);
}

int ckh__explore_collect_files(struct ckh_fs *fs, const char *dir, char ***v, size_t *n)
{
    struct ckh_listing l;
    int rc = ckh_fs_listdir(fs, dir, &l);
    if (rc)
        return rc;
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        char p[CKH_PATH_MAX + 1];
        if ((rc = ckh_path_join(p, sizeof(p), dir, l.entries[i].name)) != 0)
            break;
        if (l.entries[i].type == CKH_FT_DIR) {
            rc = ckh__explore_collect_files(fs, p, v, n);
            continue;
        }
        char **nv = realloc(*v, (*n + 1) * sizeof(**v));
        if (!nv || !(nv[*n] = strdup(p))) {
            if (nv)
                *v = nv;
            rc = CKH_ENOMEM;
            break;
        }
        *v = nv;
        (*n)++;
    }
    ckh_fs_listing_free(&l);
    return rc;
}

void ckh__explore_free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

bool ckh__explore_was_pre(const struct ckh__xctx *x, const char *path)
{
    for (size_t i = 0; i < x->npre; i++)
        if (strcmp(x->pre[i], path) == 0)
            return true;
    return false;
}

int ckh__explore_final_name(struct ckh__xctx *x, const char *node, int64_t epoch, char *buf,
                            size_t n)
{
    struct ckh_simfs *d = NULL;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int rc = ckh__explore_disk_new(x, &d);
    if (rc)
        return rc;
    ckh__explore_backend_cfg(&c, ckh_simfs_fs(d), NULL);
    if ((rc = x->ops->open(&c, &b)) == 0) {
        rc = ckh_backend_db_name(b, node, epoch, buf, n);
        ckh_backend_close(b);
    }
    ckh_simfs_destroy(d);
    return rc;
}
