/* The run context's helpers shared by the runner's files (run/run_ctx.h):
 * its release. */
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "exec/run_ctx.h"

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
