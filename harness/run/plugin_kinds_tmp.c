/* Interim loader for workload and saver plugins, until the plugin loader
 * of every kind (run/plugin.c) lands; same contract as run/plugin.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "run/plugin.h"

struct kind_plugin {
    void *dl;
    const void *table;
};

static const char *const symbols[] = {CKH_BACKEND_PLUGIN_SYMBOL, CKH_WORKLOAD_PLUGIN_SYMBOL,
                                      CKH_SAVER_PLUGIN_SYMBOL};

int ckh_plugin_load_kind(const char *path, enum ckh_plugin_kind kind, struct ckh_plugin **out, char *msg,
                         size_t msglen)
{
    if (kind == CKH_PLUGIN_BACKEND)
        return ckh_plugin_load(path, out, msg, msglen);
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return ckh_errf(msg, msglen, CKH_EFOREIGN, "%s: not a loadable plugin: %s", path, dlerror());
    void *sym = dlsym(dl, symbols[kind]);
    if (!sym) {
        dlclose(dl);
        return ckh_errf(msg, msglen, CKH_EFOREIGN, "%s: no entry point %s", path, symbols[kind]);
    }
    const void *(*fn)(void);
    memcpy(&fn, &sym, sizeof fn);
    struct kind_plugin *p = calloc(1, sizeof *p);
    if (!p) {
        dlclose(dl);
        return CKH_ENOMEM;
    }
    p->dl = dl;
    p->table = fn();
    int rc = kind == CKH_PLUGIN_WORKLOAD ? ckh_plugin_check_workload(p->table, msg, msglen)
                                         : ckh_plugin_check_saver(p->table, msg, msglen);
    if (rc) {
        dlclose(dl);
        free(p);
        return rc;
    }
    *out = (struct ckh_plugin *)p;
    return 0;
}

const void *ckh_plugin_table(const struct ckh_plugin *p)
{
    return ((const struct kind_plugin *)p)->table;
}

int ckh_plugin_check_workload(const struct ckh_workload_ops *ops, char *msg, size_t msglen)
{
    if (!ops || ops->version < 1 || ops->version > CKH_WORKLOAD_ABI_VERSION || !ops->name || !ops->create ||
        !ops->destroy || !ops->node_count || !ops->node || !ops->node_main)
        return ckh_errf(msg, msglen, CKH_EVERSION, "workload table is not a valid version-1 table");
    return 0;
}

int ckh_plugin_check_saver(const struct ckh_saver_ops *ops, char *msg, size_t msglen)
{
    if (!ops || ops->version < 1 || ops->version > CKH_SAVER_ABI_VERSION || !ops->name || !ops->create ||
        !ops->destroy || !ops->prepare || !ops->commit || !ops->latest)
        return ckh_errf(msg, msglen, CKH_EVERSION, "saver table is not a valid version-1 table");
    return 0;
}
