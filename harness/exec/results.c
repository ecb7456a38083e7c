/* Copies of job results: a record that outlives the record store it came
 * from (struct ckh_job_copy), and freeing a run record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "exec/run_ctx.h"

/* ---- results ---- */

void ckh__run_job_copy_free(struct ckh_job_copy *j)
{
    free(j->nodes);
    free(j->steps);
    free(j->samples);
    free(j->sample_counts);
    free(j->epoch_world);
    free(j->quantities);
    free(j->final_values);
    free(j->restored);
    memset(j, 0, sizeof *j);
}

/* Entries of src->sample_counts (0 when not kept). */
size_t ckh__run_counts_len(const struct ckh_job_result *src)
{
    return src->sample_counts && src->dataset_size ? src->nsamples * (size_t)src->dataset_size : 0;
}

int ckh__run_job_copy(struct ckh_job_copy *dst, const struct ckh_job_result *src)
{
    CKH_ASSERT(dst && src && (src->nnodes == 0 || src->nodes) && (src->nsteps == 0 || src->steps));
    ckh__run_job_copy_free(dst);
    dst->r = *src;
    size_t ncounts = ckh__run_counts_len(src);
    dst->nodes = calloc(src->nnodes ? src->nnodes : 1, sizeof *dst->nodes);
    dst->steps = calloc(src->nsteps ? src->nsteps : 1, sizeof *dst->steps);
    dst->samples = calloc(src->nsamples ? src->nsamples : 1, sizeof *dst->samples);
    if (ncounts)
        dst->sample_counts = calloc(ncounts, sizeof *dst->sample_counts);
    if (src->epoch_world)
        dst->epoch_world = calloc(src->nsamples ? src->nsamples : 1, sizeof *dst->epoch_world);
    dst->quantities = calloc(src->nquantities ? src->nquantities : 1, sizeof *dst->quantities);
    dst->final_values = calloc(src->nfinal_values ? src->nfinal_values : 1, sizeof *dst->final_values);
    if (!dst->nodes || !dst->steps || !dst->samples || (ncounts && !dst->sample_counts) ||
        (src->epoch_world && !dst->epoch_world) || !dst->quantities || !dst->final_values)
        return CKH_ENOMEM;
    if (src->nquantities)
        memcpy(dst->quantities, src->quantities, src->nquantities * sizeof *dst->quantities);
    if (src->nfinal_values)
        memcpy(dst->final_values, src->final_values, src->nfinal_values * sizeof *dst->final_values);
    dst->r.quantities = dst->quantities;
    dst->r.final_values = dst->final_values;
    if (src->nnodes)
        memcpy(dst->nodes, src->nodes, src->nnodes * sizeof *dst->nodes);
    if (src->nsteps)
        memcpy(dst->steps, src->steps, src->nsteps * sizeof *dst->steps);
    if (src->nsamples)
        memcpy(dst->samples, src->samples, src->nsamples * sizeof *dst->samples);
    if (ncounts)
        memcpy(dst->sample_counts, src->sample_counts, ncounts * sizeof *dst->sample_counts);
    if (src->epoch_world && src->nsamples)
        memcpy(dst->epoch_world, src->epoch_world, src->nsamples * sizeof *dst->epoch_world);
    dst->r.nodes = dst->nodes;
    dst->r.steps = dst->steps;
    dst->r.samples = dst->samples;
    dst->r.sample_counts = dst->sample_counts;
    dst->r.dataset_size = ncounts ? src->dataset_size : 0;
    dst->r.epoch_world = dst->epoch_world;
    dst->r.restored = NULL;
    dst->r.nrestored = 0;
    if (src->nrestored) {
        if (!(dst->restored = malloc(src->nrestored * sizeof *dst->restored)))
            return CKH_ENOMEM;
        memcpy(dst->restored, src->restored, src->nrestored * sizeof *dst->restored);
        dst->r.restored = dst->restored;
        dst->r.nrestored = src->nrestored;
    }
    return 0;
}

int ckh__run_alloc_runs(struct ckh_scenario_run *out, const struct ckh_scenario *sc, bool with_faults)
{
    uint32_t max_runs = with_faults ? 1 + sc->restart.max_restarts : 1;
    CKH_ASSERT(!out->runs && out->nruns == 0 && max_runs >= 1);
    out->runs = calloc(max_runs, sizeof *out->runs);
    if (!out->runs)
        return CKH_ENOMEM;
    out->runs_cap = max_runs;
    if (with_faults) {
        free(out->fault_fired);
        free(out->fault_armed);
        out->fault_fired = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *out->fault_fired);
        out->fault_armed = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *out->fault_armed);
        if (!out->fault_fired || !out->fault_armed)
            return CKH_ENOMEM;
    }
    return 0;
}

struct ckh_run_info *ckh__run_next(struct ckh_scenario_run *out, const struct ckh_scenario *sc, size_t nnodes)
{
    /* Callers keep pointers to earlier runs: the array never moves. */
    CKH_ASSERT(out->runs && out->nruns < out->runs_cap);
    struct ckh_run_info *ri = &out->runs[out->nruns];
    CKH_ASSERT(!ri->nodes && ri->run == 0);
    ri->nodes = calloc(nnodes ? nnodes : 1, sizeof *ri->nodes);
    if (!ri->nodes)
        return NULL;
    out->nruns++;
    ri->nnodes = nnodes;
    ri->run = (int)out->nruns;
    ri->resume_epoch = ri->run == 1 ? -1 : sc->restart.resume_epoch;
    return ri;
}

const struct ckh_node_result *ckh_job_copy_node(const struct ckh_job_copy *c, const char *node)
{
    for (size_t i = 0; node && i < c->r.nnodes; i++)
        if (strcmp(c->r.nodes[i].node, node) == 0)
            return &c->r.nodes[i];
    return NULL;
}

void ckh_scenario_run_free(struct ckh_scenario_run *r)
{
    if (!r)
        return;
    ckh__run_job_copy_free(&r->ref);
    ckh__run_job_copy_free(&r->got);
    for (size_t i = 0; i < r->nruns; i++)
        free(r->runs[i].nodes);
    free(r->runs);
    free(r->fault_fired);
    free(r->fault_armed);
    for (size_t i = 0; i < r->nstore_ops; i++) {
        free(r->store_ops[i].bucket);
        free(r->store_ops[i].key);
    }
    free(r->store_ops);
    r->store_ops = NULL;
    r->nstore_ops = 0;
    r->fault_fired = NULL;
    r->fault_armed = NULL;
    r->runs = NULL;
    r->nruns = 0;
    r->runs_cap = 0;
}

bool ckh__run_all_shared(const struct ckh_scenario *sc)
{
    bool shared = true;
    for (size_t d = 0; d < sc->job.ndisks; d++)
        shared = shared && sc->job.disks[d].shared;
    return shared;
}

void ckh__run_note_committed(struct ckh_run_info *ri, bool shared, const char *node, int view, bool ok,
                             const char *detail)
{
    ri->committed_ok = ok;
    if (shared)
        snprintf(ri->committed_detail, sizeof ri->committed_detail, "%s", detail);
    else if (!ok || view == 0)
        snprintf(ri->committed_detail, sizeof ri->committed_detail, "%s's disks: %.400s", node, detail);
}
