/* The checkpoint backend registry (the built-in backends listed in
 * backend_list.h, plugins' added at run time) and the wrappers around the
 * backend ops table (include/ckh/backend.h): argument checks live here,
 * once, so every backend (built in or plugged in) sees only valid node
 * names and epochs.
 */
#include "ckh/backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "backend_list.h"
#include "ckh/err.h"

#define REGISTRY_MAX 16 /* built-in and registered backends together */

/* The built-in backends of backend_list.h, in its order. */
static const struct ckh_backend_ops *const builtins[] = {
#define CKH__BACKEND_REF(id) &ckh_##id##_ops,
    CKH_BACKEND_LIST(CKH__BACKEND_REF)
#undef CKH__BACKEND_REF
};
#define NBUILTINS (sizeof builtins / sizeof builtins[0])
_Static_assert(NBUILTINS <= REGISTRY_MAX, "room for the built-in backends");

/* Backends registered at run time (plugins), after the built-in ones. */
static const struct ckh_backend_ops *added[REGISTRY_MAX - NBUILTINS];
static size_t added_count;

int ckh_backend_find(const char *name, const struct ckh_backend_ops **out, char *msg, size_t msglen)
{
    char known[256] = "";
    const struct ckh_backend_ops *ops;
    if (!name || !out)
        return ckh_errf(msg, msglen, CKH_EINVAL, "backend name or output is NULL");
    for (size_t i = 0; (ops = ckh_backend_at(i)) != NULL; i++) {
        if (strcmp(ops->name, name) == 0) {
            *out = ops;
            return 0;
        }
        if (strlen(known) + strlen(ops->name) + 3 < sizeof known) {
            if (known[0])
                strcat(known, ", ");
            strcat(known, ops->name);
        }
    }
    return ckh_errf(msg, msglen, CKH_ENOTFOUND, "unknown checkpoint backend '%s' (known: %s)", name,
                    known);
}

const struct ckh_backend_ops *ckh_backend_at(size_t i)
{
    if (i < NBUILTINS)
        return builtins[i];
    return i - NBUILTINS < added_count ? added[i - NBUILTINS] : NULL;
}

int ckh_backend_register(const struct ckh_backend_ops *ops)
{
    const struct ckh_backend_ops *known;
    if (!ops || !ops->name || !ops->name[0])
        return CKH_EINVAL;
    if (ops->version < 1 || ops->version > CKH_BACKEND_ABI_VERSION)
        return CKH_EVERSION;
    for (size_t i = 0; (known = ckh_backend_at(i)) != NULL; i++)
        if (strcmp(known->name, ops->name) == 0)
            return CKH_EEXISTS;
    if (added_count == sizeof added / sizeof added[0])
        return CKH_ELIMIT;
    added[added_count++] = ops;
    return 0;
}

int ckh_backend_open(const char *name, const struct ckh_backend_config *cfg,
                     struct ckh_backend **out, char *msg, size_t msglen)
{
    const struct ckh_backend_ops *ops;
    int rc = ckh_backend_find(name, &ops, msg, msglen);
    if (rc != 0)
        return rc;
    if (!cfg || !cfg->fs || !cfg->prefix || !out)
        return ckh_errf(msg, msglen, CKH_EINVAL, "backend '%s': config, fs, prefix or output is NULL",
                        name);
    if (!ops->open)
        return ckh_errf(msg, msglen, CKH_EUNSUPPORTED, "backend '%s' has no open method", name);
    rc = ops->open(cfg, out);
    if (rc != 0)
        return ckh_errf(msg, msglen, rc, "backend '%s': open failed: %s", name, ckh_strerror(rc));
    return rc;
}

int ckh_node_name_check(const char *node)
{
    size_t len;
    if (!node)
        return CKH_EINVAL;
    len = strlen(node);
    if (len == 0 || len > CKH_NODE_NAME_MAX)
        return CKH_EINVAL;
    if (strchr(node, '/') || strcmp(node, ".") == 0 || strcmp(node, "..") == 0)
        return CKH_EESCAPE;
    return 0;
}

int ckh_db_name(const char *prefix, const char *node, int64_t epoch, char *buf, size_t n)
{
    size_t plen;
    int w;
    if (!prefix || !node || !buf || n == 0 || epoch < 0)
        return CKH_EINVAL;
    plen = strlen(prefix);
    while (plen > 1 && prefix[plen - 1] == '/')
        plen--;
    if (plen == 1 && prefix[0] == '/')
        plen = 0; /* root: "/node.epoch" */
    w = snprintf(buf, n, "%.*s/%s.%" PRId64, (int)plen, prefix, node, epoch);
    if (w < 0 || (size_t)w >= n)
        return CKH_EINVAL;
    return 0;
}

static int check_call(struct ckh_backend *b, const char *node, int64_t epoch)
{
    int rc;
    if (!b || !b->ops)
        return CKH_EINVAL;
    rc = ckh_node_name_check(node);
    if (rc != 0)
        return ckh_errf(b->errmsg, sizeof b->errmsg, rc,
                        "node name '%s' is not a valid file name (%s)", node ? node : "(null)",
                        ckh_err_name(rc));
    if (epoch < 0)
        return ckh_errf(b->errmsg, sizeof b->errmsg, CKH_EINVAL, "epoch %" PRId64 " is negative",
                        epoch);
    return 0;
}

void ckh_backend_close(struct ckh_backend *b)
{
    if (b && b->ops && b->ops->close)
        b->ops->close(b);
}

int ckh_backend_save(struct ckh_backend *b, const char *node, int64_t epoch,
                     const struct ckh_ws *ws, const char *const *names, size_t count)
{
    int rc = check_call(b, node, epoch);
    if (rc != 0)
        return rc;
    if (!ws || (!names && count > 0))
        return ckh_errf(b->errmsg, sizeof b->errmsg, CKH_EINVAL, "save: workspace or names is NULL");
    if (!b->ops->save)
        return CKH_EUNSUPPORTED;
    return b->ops->save(b, node, epoch, ws, names, count);
}

int ckh_backend_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                     const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    int rc = check_call(b, node, epoch);
    if (loaded)
        *loaded = 0;
    if (rc != 0)
        return rc;
    if (!ws || (!names && count > 0) || (flags & ~(unsigned)CKH_LOAD_ALLOW_MISSING))
        return ckh_errf(b->errmsg, sizeof b->errmsg, CKH_EINVAL,
                        "load: bad workspace, names or flags");
    if (!b->ops->load)
        return CKH_EUNSUPPORTED;
    return b->ops->load(b, node, epoch, ws, names, count, flags, loaded);
}

int ckh_backend_exists(struct ckh_backend *b, const char *node, int64_t epoch, bool *out)
{
    int rc = check_call(b, node, epoch);
    if (rc != 0)
        return rc;
    if (!out)
        return CKH_EINVAL;
    if (!b->ops->exists)
        return CKH_EUNSUPPORTED;
    return b->ops->exists(b, node, epoch, out);
}

int ckh_backend_list_epochs(struct ckh_backend *b, const char *node, int64_t **epochs,
                            size_t *count)
{
    int rc = check_call(b, node, 0);
    if (rc != 0)
        return rc;
    if (!epochs || !count)
        return CKH_EINVAL;
    *epochs = NULL;
    *count = 0;
    if (!b->ops->list_epochs)
        return CKH_EUNSUPPORTED;
    return b->ops->list_epochs(b, node, epochs, count);
}

int ckh_backend_remove(struct ckh_backend *b, const char *node, int64_t epoch)
{
    int rc = check_call(b, node, epoch);
    if (rc != 0)
        return rc;
    if (!b->ops->remove)
        return CKH_EUNSUPPORTED;
    return b->ops->remove(b, node, epoch);
}

int ckh_backend_db_name(struct ckh_backend *b, const char *node, int64_t epoch, char *buf,
                        size_t n)
{
    int rc = check_call(b, node, epoch);
    if (rc != 0)
        return rc;
    if (!buf || n == 0)
        return CKH_EINVAL;
    if (!b->ops->db_name)
        return CKH_EUNSUPPORTED;
    return b->ops->db_name(b, node, epoch, buf, n);
}

const char *ckh_backend_errmsg(const struct ckh_backend *b)
{
    return b ? b->errmsg : "no backend";
}
