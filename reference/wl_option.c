/* Helpers of the public workload interface (include/ckh/workload.h) for
 * workloads' create methods, built-in and plugins alike. */
#include "ckh/err.h"
#include "ckh/workload.h"

int ckh_wl_option_error(char *msg, size_t n, const struct ckh_wl_option *o, const char *what)
{
    return ckh_errf(msg, n, CKH_EINVAL, "%d:%d: option '%s': %s", o->line, o->column, o->key, what);
}
