/* The scenario grammar's name tables (see scenario/names.h). */
#include "model/names.h"

#include <errno.h>
#include <string.h>

#include "model/scenario.h"

#define TABLE(id, ...)                                                                  \
    static const char *const id##_v[] = {__VA_ARGS__};                                  \
    const struct ckh_scn_enum ckh_scn_##id = {id##_v, sizeof id##_v / sizeof id##_v[0]}

TABLE(crash_models, "posix-weak", "ext4-ordered");
TABLE(sharings, "network", "machine");
TABLE(strategies, "sync_all", "sync_any", "async");
TABLE(phases, "init", "epoch", "save", "load", "upload", "download", "exit", "collective");
TABLE(kill_whens, "before", "after", "mid-write");
TABLE(corrupt_modes, "bit-flip", "truncate", "zero-range", "delete", "older-version");
TABLE(keeps, "random", "synced", "cache");
TABLE(errnos, "EIO", "ENOSPC", "EDQUOT", "EACCES", "ENOENT", "EROFS");
TABLE(platforms, "sim", "real");
#define CKH__SCN_OUT_NAME(e, s) s,
TABLE(outcomes, CKH_SCN_OUTCOME_MAP(CKH__SCN_OUT_NAME));
#undef CKH__SCN_OUT_NAME

/* The values of the errnos table, entry for entry. */
static const int errno_values[] = {EIO, ENOSPC, EDQUOT, EACCES, ENOENT, EROFS};
_Static_assert(sizeof errno_values / sizeof errno_values[0] == sizeof errnos_v / sizeof errnos_v[0],
               "one value per errno name");

const char *ckh_scn_enum_name(const struct ckh_scn_enum *e, int v)
{
    return e && v >= 0 && (size_t)v < e->n ? e->names[v] : NULL;
}

int ckh_scn_errno_value(int i)
{
    return i >= 0 && (size_t)i < ckh_scn_errnos.n ? errno_values[i] : 0;
}

const char *ckh_scn_errno_name(int err)
{
    for (size_t i = 0; i < ckh_scn_errnos.n; i++)
        if (errno_values[i] == err)
            return ckh_scn_errnos.names[i];
    return NULL;
}

const char *ckh_scn_outcome_name(enum ckh_scn_outcome o)
{
    const char *s = ckh_scn_enum_name(&ckh_scn_outcomes, (int)o);
    return s ? s : "?";
}
