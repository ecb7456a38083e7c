/* The run context's helpers shared by the runner's files (run/run_ctx.h):
 * its failure message and its release. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "exec/run_ctx.h"

int ckh__run_fail(struct ckh__run_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckh_verrf(c->err, sizeof c->err, code, fmt, ap);
    va_end(ap);
    return code;
}

void ckh__run_ctx_free(struct ckh__run_ctx *c)
{
    ckh_sim_destroy(c->sim);
    if (c->inst)
        c->wl->destroy(c->inst);
    ckh_records_destroy(c->records);
    free(c->nodes);
    free(c->opts);
    free(c->names);
    free(c->disks);
    free(c->mounts);
    free(c->track);
    free(c->calls);
    free(c->rule_fault);
    memset(c, 0, sizeof *c);
}
