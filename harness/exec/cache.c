/* The reference run: the scenario's job with no faults and no defect
 * switches, cached on disk per job description (the cache key) so that
 * scenarios and shrink candidates that share a job share one run.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/rng.h"
#include "exec/run_ctx.h"

/* ---- the reference run and its cache ---- */

/* A canonical description of the job: what the reference run depends on. */
static uint64_t job_key(const struct ckh_scenario *sc, uint64_t seed, uint64_t identity)
{
    /* Strings are hashed whole (with their terminators), numbers through a
     * fixed-size buffer: nothing is truncated, whatever the lengths. */
    const struct ckh_scn_job *j = &sc->job;
    uint64_t h = ckh_hash64(CKH_HASH_INIT, "v5", 3);
    h = ckh_hash64(h, &identity, sizeof identity); /* the plugins' bytes */
    const char *strs[] = {j->workload, j->backend ? j->backend : "", j->saver.kind ? j->saver.kind : "",
                          j->saver.name ? j->saver.name : "", j->checkpoint_dir};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        h = ckh_hash64(h, strs[i], strlen(strs[i]) + 1);
    uint64_t nums[] = {j->nodes, j->epochs, j->steps, j->saver.keep_last, (uint64_t)j->saver.strategy,
                       j->every_epochs, j->every_steps, j->collective_timeout_ns, j->gpu_mem_bytes, seed};
    h = ckh_hash64(h, nums, sizeof nums);
    for (size_t i = 0; i < j->noptions; i++) {
        h = ckh_hash64(h, j->options[i].key, strlen(j->options[i].key) + 1);
        h = ckh_hash64(h, j->options[i].text, strlen(j->options[i].text) + 1);
    }
    for (size_t i = 0; i < j->ndisks; i++) {
        const struct ckh_scn_disk *d = &j->disks[i];
        h = ckh_hash64(h, d->name, strlen(d->name) + 1);
        h = ckh_hash64(h, d->mount, strlen(d->mount) + 1);
        uint64_t dn[] = {d->shared, (uint64_t)d->model, d->sector_bytes, d->capacity_bytes,
                         d->latency_ns, d->ns_per_kib};
        h = ckh_hash64(h, dn, sizeof dn);
    }
    return h;
}

#define CACHE_MAGIC 0x33464552484b43ull /* "CKHREF3" */

/* Cache file: u64 header {magic, key, nnodes, nsteps, nsamples, flags,
 * dataset_size, nquantities, nfinal_values, reserved}, then the node,
 * step, quantity, final-value and epoch records, then
 * (flag bit 3) nsamples * dataset_size u32 sample counts, then (flag bit 4)
 * nsamples i32 epoch worlds. Flags: bit 0 corruption, 1 device OOM, 2 the
 * reference completed, 3 counts, 4 epoch worlds, 5 drop_last. Host byte
 * order: a cache belongs to one machine. */

/* Whether the header's counts are within what a load takes. */
static bool header_fits(const uint64_t hdr[10])
{
    return hdr[2] < 1u << 20 && hdr[3] < 1u << 26 && hdr[4] < 1u << 20 && hdr[6] < 1u << 26 &&
           hdr[4] * hdr[6] < 1u << 26 && hdr[7] < 1u << 28 && hdr[8] < 1u << 26;
}

static int cache_load_path(const char *path, uint64_t key, struct ckh_job_copy *dst, bool *ok)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return CKH_ENOTFOUND;
    uint64_t hdr[10];
    int rc = CKH_ECORRUPT;
    struct ckh_job_result r;
    memset(&r, 0, sizeof r);
    if (fread(hdr, sizeof hdr, 1, f) == 1 && hdr[0] == CACHE_MAGIC && hdr[1] == key && header_fits(hdr)) {
        r.nnodes = hdr[2];
        r.nsteps = hdr[3];
        r.nsamples = hdr[4];
        r.nquantities = hdr[7];
        r.nfinal_values = hdr[8];
        r.corruption_detected = hdr[5] & 1;
        r.device_oom = (hdr[5] >> 1) & 1;
        *ok = (hdr[5] >> 2) & 1;
        bool has_counts = (hdr[5] >> 3) & 1, has_world = (hdr[5] >> 4) & 1;
        r.drop_last = (hdr[5] >> 5) & 1;
        size_t ncounts = has_counts ? r.nsamples * (size_t)hdr[6] : 0;
        struct ckh_node_result *nodes = calloc(r.nnodes + 1, sizeof *nodes);
        struct ckh_step_record *steps = calloc(r.nsteps + 1, sizeof *steps);
        struct ckh_epoch_samples *samples = calloc(r.nsamples + 1, sizeof *samples);
        uint32_t *counts = calloc(ncounts + 1, sizeof *counts);
        int *worlds = calloc(r.nsamples + 1, sizeof *worlds);
        struct ckh_step_quantity *q = calloc(r.nquantities + 1, sizeof *q);
        struct ckh_step_quantity *fv = calloc(r.nfinal_values + 1, sizeof *fv);
        if (!nodes || !steps || !samples || !counts || !worlds || !q || !fv) {
            rc = CKH_ENOMEM; /* not the file's fault */
        } else if (fread(nodes, sizeof *nodes, r.nnodes, f) == r.nnodes &&
            fread(steps, sizeof *steps, r.nsteps, f) == r.nsteps &&
            fread(q, sizeof *q, r.nquantities, f) == r.nquantities &&
            fread(fv, sizeof *fv, r.nfinal_values, f) == r.nfinal_values &&
            fread(samples, sizeof *samples, r.nsamples, f) == r.nsamples &&
            fread(counts, sizeof *counts, ncounts, f) == ncounts &&
            (!has_world || fread(worlds, sizeof *worlds, r.nsamples, f) == r.nsamples)) {
            r.nodes = nodes;
            r.steps = steps;
            r.quantities = q;
            r.final_values = fv;
            r.samples = samples;
            r.sample_counts = ncounts ? counts : NULL;
            r.dataset_size = ncounts ? hdr[6] : 0;
            r.epoch_world = has_world ? worlds : NULL;
            rc = ckh__run_job_copy(dst, &r);
        }
        free(nodes);
        free(steps);
        free(samples);
        free(counts);
        free(worlds);
        free(q);
        free(fv);
    }
    fclose(f);
    return rc;
}

static int cache_load(const char *dir, uint64_t key, struct ckh_job_copy *dst, bool *ok)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%016" PRIx64 ".ref", dir, key);
    return cache_load_path(path, key, dst, ok);
}

#ifdef CKH_SLOW_ASSERTS
static bool same_bytes(const void *a, const void *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

/* Whether two results are the same, byte for byte. */
static bool same_result(const struct ckh_job_result *a, const struct ckh_job_result *b)
{
    size_t na = ckh__run_counts_len(a), nb = ckh__run_counts_len(b);
    return a->nnodes == b->nnodes && a->nsteps == b->nsteps && a->nquantities == b->nquantities &&
           a->nfinal_values == b->nfinal_values && a->nsamples == b->nsamples && na == nb &&
           (na == 0 || a->dataset_size == b->dataset_size) && !a->epoch_world == !b->epoch_world &&
           a->drop_last == b->drop_last && a->corruption_detected == b->corruption_detected &&
           a->device_oom == b->device_oom && same_bytes(a->nodes, b->nodes, a->nnodes * sizeof *a->nodes) &&
           same_bytes(a->steps, b->steps, a->nsteps * sizeof *a->steps) &&
           same_bytes(a->quantities, b->quantities, a->nquantities * sizeof *a->quantities) &&
           same_bytes(a->final_values, b->final_values, a->nfinal_values * sizeof *a->final_values) &&
           same_bytes(a->samples, b->samples, a->nsamples * sizeof *a->samples) &&
           same_bytes(a->sample_counts, b->sample_counts, na * sizeof *a->sample_counts) &&
           (!a->epoch_world || same_bytes(a->epoch_world, b->epoch_world, a->nsamples * sizeof *a->epoch_world));
}

/* Whether the file just written at path loads back as src (a result too
 * large for a load is stored for nothing, but is not wrong). */
static bool stored_reads_back(const char *path, const uint64_t hdr[10], const struct ckh_job_copy *src, bool ok)
{
    if (!header_fits(hdr))
        return true;
    struct ckh_job_copy back;
    bool back_ok = !ok;
    memset(&back, 0, sizeof back);
    int rc = cache_load_path(path, hdr[1], &back, &back_ok);
    bool same = rc == CKH_ENOMEM || (rc == 0 && back_ok == ok && same_result(&src->r, &back.r));
    ckh__run_job_copy_free(&back);
    return same;
}
#endif

static void cache_store(const char *dir, uint64_t key, const struct ckh_job_copy *src, bool ok)
{
    char path[1024], tmp[1100];
    if (src->r.nrestored) /* a fault-free run restores nothing; one that does is not kept */
        return;
    snprintf(path, sizeof path, "%s/%016" PRIx64 ".ref", dir, key);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    size_t ncounts = ckh__run_counts_len(&src->r);
    bool has_world = src->r.epoch_world != NULL;
    uint64_t hdr[10] = {CACHE_MAGIC, key, src->r.nnodes, src->r.nsteps, src->r.nsamples,
                        (uint64_t)src->r.corruption_detected | (uint64_t)src->r.device_oom << 1 |
                            (uint64_t)ok << 2 | (uint64_t)(ncounts > 0) << 3 |
                            (uint64_t)has_world << 4 | (uint64_t)src->r.drop_last << 5,
                        ncounts ? src->r.dataset_size : 0, src->r.nquantities, src->r.nfinal_values, 0};
    bool good = fwrite(hdr, sizeof hdr, 1, f) == 1 &&
                fwrite(src->r.nodes, sizeof *src->r.nodes, src->r.nnodes, f) == src->r.nnodes &&
                fwrite(src->r.steps, sizeof *src->r.steps, src->r.nsteps, f) == src->r.nsteps &&
                fwrite(src->r.quantities, sizeof *src->r.quantities, src->r.nquantities, f) == src->r.nquantities &&
                fwrite(src->r.final_values, sizeof *src->r.final_values, src->r.nfinal_values, f) ==
                    src->r.nfinal_values &&
                fwrite(src->r.samples, sizeof *src->r.samples, src->r.nsamples, f) == src->r.nsamples &&
                (!ncounts || fwrite(src->r.sample_counts, sizeof *src->r.sample_counts, ncounts, f) == ncounts) &&
                (!has_world || fwrite(src->r.epoch_world, sizeof *src->r.epoch_world, src->r.nsamples, f) ==
                                   src->r.nsamples);
    good = fclose(f) == 0 && good;
    CKH_ASSERT_SLOW(!good || stored_reads_back(tmp, hdr, src, ok));
    if (good)
        rename(tmp, path); /* atomic: concurrent workers never see half a file */
    else
        unlink(tmp);
}

int ckh__run_reference(const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                     struct ckh_scenario_run *out, char *err, size_t errlen)
{
    struct ckh_resolved res;
    int rc = ckh_workloads_resolve(sc, &res, err, errlen);
    if (rc)
        return rc;
    uint64_t key = job_key(sc, seed, res.identity);
    if (o->cache_dir && cache_load(o->cache_dir, key, &out->ref, &out->ref_ok) == 0)
        return 0;
    struct ckh__run_ctx c;
    struct ckh_scenario_run tmp;
    memset(&tmp, 0, sizeof tmp);
    rc = ckh__run_build_sim(&c, sc, seed, CKH_RUN_REFERENCE, false);
    if (rc == 0)
        rc = ckh__run_execute(&c, &tmp);
    if (rc == 0) {
        out->ref_ok = tmp.completed;
        rc = ckh__run_job_copy(&out->ref, &tmp.got.r);
        if (rc == 0 && o->cache_dir)
            cache_store(o->cache_dir, key, &out->ref, out->ref_ok);
    } else {
        /* A located message is an input error: no "reference run" prefix. */
        bool located = (c.err[0] >= '0' && c.err[0] <= '9') || !strncmp(c.err, sc->file, strlen(sc->file));
        snprintf(err, errlen, "%s%s", located ? "" : "reference run: ", c.err[0] ? c.err : ckh_strerror(rc));
    }
    ckh_scenario_run_free(&tmp);
    ckh__run_ctx_free(&c);
    return rc;
}

/* Without faults and defects the job must complete: one whose reference
 * run fails is a found bug (CKH_EFAILS_UNFAULTED, judged FAIL by
 * ckh_harness_run), named by each node that failed and its code; one
 * that ran out of memory reached the worker's limit (CKH_ENOMEM). */
static int reference_incomplete(const struct ckh_scenario_run *r, char *err, size_t errlen)
{
    /* Out of memory is the worker's limit, not the job's bug. */
    for (size_t i = 0; i < r->ref.r.nnodes; i++)
        if (r->ref.r.nodes[i].rc == CKH_ENOMEM)
            return ckh_errf(err, errlen, CKH_ENOMEM, "the fault-free reference run of this job does not "
                            "complete: %s: CKH_ENOMEM", r->ref.r.nodes[i].node);
    char why[900] = "";
    size_t used = 0;
    for (size_t i = 0; i < r->ref.r.nnodes && used < sizeof why; i++)
        if (r->ref.r.nodes[i].rc != 0)
            used += (size_t)snprintf(why + used, sizeof why - used, "%s%s: %s%s%s%s", used ? "; " : "",
                                     r->ref.r.nodes[i].node, ckh_err_name(r->ref.r.nodes[i].rc),
                                     r->ref.r.nodes[i].refused[0] ? " (" : "", r->ref.r.nodes[i].refused,
                                     r->ref.r.nodes[i].refused[0] ? ")" : "");
    return ckh_errf(err, errlen, CKH_EFAILS_UNFAULTED, "%s", why[0] ? why : "no node completed");
}

/* The simulated reference run (cached, exec/cache.c): also the real
 * platform's, whose passing run ends where the simulated one ends. */
int ckh__run_sim_reference(void *job, const struct ckh_scenario *sc, uint64_t seed,
                           const struct ckh_run_options *o, struct ckh_scenario_run *r, bool *judged, char *err,
                           size_t errlen)
{
    (void)job;
    *judged = false;
    int rc = ckh__run_reference(sc, seed, o, r, err, errlen);
    if (rc == 0 && !r->ref_ok)
        rc = reference_incomplete(r, err, errlen);
    return rc;
}
