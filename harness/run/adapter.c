/* The adapter registry: every workload the harness can run. */
#include <string.h>

#include "run/adapter.h"
#include "ckh/err.h"

static const struct ckh_adapter_ops *const adapters[] = {
    &ckh__adapter_seed_pipeline,
    &ckh__adapter_param_server,
    &ckh__adapter_ddp_train,
};

const struct ckh_adapter_ops *ckh_adapter_find(const char *workload)
{
    for (size_t i = 0; workload && i < sizeof adapters / sizeof adapters[0]; i++)
        if (strcmp(adapters[i]->name, workload) == 0)
            return adapters[i];
    return NULL;
}

const struct ckh_adapter_ops *ckh_adapter_at(size_t i)
{
    return i < sizeof adapters / sizeof adapters[0] ? adapters[i] : NULL;
}

bool ckh_rc_is_corruption(int rc)
{
    return rc == CKH_ECORRUPT || rc == CKH_ETRUNCATED || rc == CKH_EFOREIGN || rc == CKH_EVERSION;
}

int ckh__adapter_option_error(char *msg, size_t n, const struct ckh_scn_kv *kv, const char *what)
{
    return ckh_errf(msg, n, CKH_EINVAL, "%d:%d: option '%s': %s", kv->line, kv->column, kv->key, what);
}
