/* Loading checkpoint backends from shared libraries.
 *
 * Spec: a plugin exports CKH_BACKEND_PLUGIN_SYMBOL (include/ckh/plugin.h);
 * it is opened with RTLD_NOW | RTLD_LOCAL so unresolved symbols fail the
 * load at once instead of at the first call. A plugin links against
 * nothing of ckh: the host executable exports the public API (linked with
 * -rdynamic). host_api below references one function of every object file
 * holding that API, so that a static link pulls them all in even when the
 * host itself does not call them.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckh/alloc.h"
#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/rng.h"
#include "ckh/workspace.h"
#include "run/plugin.h"

struct ckh_plugin {
    void *dl;                            /* dlopen handle */
    const struct ckh_backend_ops *ops;   /* the plugin's table */
    char *path;                          /* where it was loaded from (owned) */
};

/* The public API a plugin may call; see the spec above. */
const void *const ckh__plugin_host_api[] = {
    (const void *)ckh_fs_open,        (const void *)ckh_file_pwrite, (const void *)ckh_malloc,
    (const void *)ckh_crc32c,         (const void *)ckh_strerror,    (const void *)ckh_ws_adopt,
    (const void *)ckh_db_name,        (const void *)ckh_dtype_size,  (const void *)ckh_gen_fill,
    (const void *)ckh_backend_errmsg, (const void *)&ckh_minidb_ops,
};
extern const void *const ckh__plugin_host_api[];

static int say(char *msg, size_t msglen, int rc, const char *fmt, const char *a, const char *b)
{
    if (msg && msglen)
        snprintf(msg, msglen, fmt, a, b);
    return rc;
}

int ckh_plugin_check_ops(const struct ckh_backend_ops *ops, char *msg, size_t msglen)
{
    char v[32];
    if (!ops)
        return say(msg, msglen, CKH_EINVAL, "%s%s", "no backend table", "");
    if (ops->version < 1 || ops->version > CKH_BACKEND_ABI_VERSION) {
        char abi[16];
        snprintf(v, sizeof(v), "%d", ops->version);
        snprintf(abi, sizeof(abi), "%d", CKH_BACKEND_ABI_VERSION);
        return say(msg, msglen, CKH_EVERSION, "backend table version %s is not supported (1..%s)",
                   v, abi);
    }
    if (!ops->name || !ops->name[0])
        return say(msg, msglen, CKH_EUNSUPPORTED, "%s%s", "backend table has no name", "");
    const char *missing = !ops->open ? "open" : !ops->close ? "close" : !ops->save ? "save"
                        : !ops->load ? "load" : !ops->list_epochs ? "list_epochs" : NULL;
    if (missing)
        return say(msg, msglen, CKH_EUNSUPPORTED, "backend %s has no %s method", ops->name, missing);
    return 0;
}

int ckh_plugin_load(const char *path, struct ckh_plugin **out, char *msg, size_t msglen)
{
    struct stat st;
    int rc;
    if (!path || !out)
        return say(msg, msglen, CKH_EINVAL, "%s%s", "NULL path or out", "");
    *out = NULL;
    (void)ckh__plugin_host_api;
    if (stat(path, &st) != 0)
        return say(msg, msglen, CKH_ENOTFOUND, "%s: no such file%s", path, "");
    struct ckh_plugin *p = calloc(1, sizeof(*p));
    if (!p)
        return CKH_ENOMEM;
    /* dlopen searches the library path for names without '/'; a plugin is a file. */
    char *rel = NULL;
    if (!strchr(path, '/')) {
        rel = malloc(strlen(path) + 3);
        if (!rel) {
            rc = CKH_ENOMEM;
            goto out_free;
        }
        sprintf(rel, "./%s", path);
    }
    p->dl = dlopen(rel ? rel : path, RTLD_NOW | RTLD_LOCAL);
    free(rel);
    if (!p->dl) {
        const char *e = dlerror();
        rc = say(msg, msglen, CKH_EFOREIGN, "%s: not a loadable plugin: %s", path, e ? e : "?");
        goto out_free;
    }
    ckh_backend_plugin_fn fn;
    void *sym = dlsym(p->dl, CKH_BACKEND_PLUGIN_SYMBOL);
    memcpy(&fn, &sym, sizeof(fn)); /* object pointer to function pointer, as POSIX allows */
    if (!sym) {
        rc = say(msg, msglen, CKH_EFOREIGN, "%s: no entry point %s (not a ckh backend plugin)",
                 path, CKH_BACKEND_PLUGIN_SYMBOL);
        goto out_close;
    }
    p->ops = fn();
    if ((rc = ckh_plugin_check_ops(p->ops, msg, msglen)) != 0)
        goto out_close;
    p->path = strdup(path);
    if (!p->path) {
        rc = CKH_ENOMEM;
        goto out_close;
    }
    *out = p;
    return 0;
out_close:
    dlclose(p->dl);
out_free:
    free(p);
    return rc;
}

const struct ckh_backend_ops *ckh_plugin_ops(const struct ckh_plugin *p)
{
    return p ? p->ops : NULL;
}

const char *ckh_plugin_path(const struct ckh_plugin *p)
{
    return p ? p->path : NULL;
}

void ckh_plugin_unload(struct ckh_plugin *p)
{
    if (!p)
        return;
    dlclose(p->dl);
    free(p->path);
    free(p);
}
