/* Oracle records of the DDP workload: allocation, run-to-run comparison
 * and the per-epoch sample multiset check (see include/ckh/ddp.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/ddp.h"
#include "ckh/err.h"

int ckh_ddp_record_create(const struct ckh_ddp_config *cfg, struct ckh_ddp_record **out)
{
    return ckh_ddp_record_create_worlds(cfg, cfg ? cfg->world : 0, out);
}

int ckh_ddp_record_create_worlds(const struct ckh_ddp_config *cfg, int world_restart,
                                 struct ckh_ddp_record **out)
{
    if (out)
        *out = NULL;
    if (!cfg || !out || cfg->world < 1 || cfg->world > CKH_DDP_MAX_RANKS || world_restart < 1 ||
        world_restart > CKH_DDP_MAX_RANKS)
        return CKH_EINVAL;
    int ranks = cfg->world > world_restart ? cfg->world : world_restart;
    /* The smaller world takes the most steps per epoch. */
    struct ckh_ddp_config small = *cfg;
    small.world = cfg->world < world_restart ? cfg->world : world_restart;
    uint64_t steps = ckh_ddp_total_steps(&small);
    uint64_t big_steps = ckh_ddp_total_steps(cfg);
    if (!steps || !big_steps)
        return CKH_EINVAL;
    struct ckh_ddp_record *r = calloc(1, sizeof *r);
    if (!r)
        return CKH_ENOMEM;
    r->world = ranks;
    /* A defective resume may take more steps than the reference: room for
     * twice as many. A world change mid-epoch splits one epoch between the
     * two worlds: one more epoch of the smaller world and a step. */
    r->max_steps = steps * 2 + 2;
    if (world_restart != cfg->world)
        r->max_steps += steps / (uint64_t)(cfg->epochs > 0 ? cfg->epochs : 1) + 1;
    r->per_step = cfg->batch * cfg->accum;
    r->samples = cfg->samples;
    r->devices.count = ranks;
    r->devices.capacity_bytes = cfg->device_capacity_bytes;
    for (int i = 0; i < ranks; i++) {
        struct ckh_ddp_rank_rec *rr = &r->ranks[i];
        rr->steps = calloc(r->max_steps + 1, sizeof *rr->steps);
        rr->samples = malloc((r->max_steps + 1) * r->per_step * sizeof *rr->samples);
        if (!rr->steps || !rr->samples) {
            ckh_ddp_record_destroy(r);
            return CKH_ENOMEM;
        }
        memset(rr->samples, 0xff, (r->max_steps + 1) * r->per_step * sizeof *rr->samples);
        rr->resumed_step = -1;
    }
    *out = r;
    return 0;
}

void ckh_ddp_record_forget_after(struct ckh_ddp_record *r, int rank, int64_t step)
{
    if (!r || rank < 0 || rank >= r->world || !r->ranks[rank].steps)
        return;
    struct ckh_ddp_rank_rec *rr = &r->ranks[rank];
    uint64_t first = step < 0 ? 0 : (uint64_t)step + 1;
    for (uint64_t s = first; s <= r->max_steps; s++) {
        if (!rr->steps[s].valid)
            continue;
        memset(&rr->steps[s], 0, sizeof rr->steps[s]);
        memset(rr->samples + s * r->per_step, 0xff, r->per_step * sizeof *rr->samples);
    }
}

void ckh_ddp_record_destroy(struct ckh_ddp_record *r)
{
    if (!r)
        return;
    for (int i = 0; i < CKH_DDP_MAX_RANKS; i++) {
        free(r->ranks[i].steps);
        free(r->ranks[i].samples);
    }
    free(r);
}

bool ckh_ddp_record_finished(const struct ckh_ddp_record *r)
{
    if (!r)
        return false;
    for (int i = 0; i < r->world; i++)
        if (!r->ranks[i].finished)
            return false;
    return true;
}

/* Name of the first differing component of two step records, or NULL. */
static const char *step_diff(const struct ckh_ddp_step_rec *a, const struct ckh_ddp_step_rec *b)
{
    if (a->valid != b->valid)
        return "presence";
    if (!a->valid)
        return NULL;
    if (a->epoch != b->epoch)
        return "epoch";
    if (a->weights != b->weights)
        return "weights";
    if (a->optim != b->optim)
        return "optimizer state";
    if (a->lr_bits != b->lr_bits)
        return "learning rate";
    if (a->rng != b->rng)
        return "RNG stream";
    if (a->sampler != b->sampler)
        return "sampler state";
    return NULL;
}

int ckh_ddp_record_compare(const struct ckh_ddp_record *ref, const struct ckh_ddp_record *run,
                           int64_t *first_step, char *msg, size_t msglen)
{
    if (!ref || !run)
        return CKH_EINVAL;
    if (msg && msglen)
        msg[0] = '\0';
    if (ref->world != run->world) {
        if (msg)
            snprintf(msg, msglen, "world sizes differ: %d vs %d", ref->world, run->world);
        if (first_step)
            *first_step = 0;
        return CKH_EMISMATCH;
    }
    int64_t last = 0;
    for (int r = 0; r < ref->world; r++) {
        if (ref->ranks[r].final_step > last)
            last = ref->ranks[r].final_step;
        if (run->ranks[r].final_step > last)
            last = run->ranks[r].final_step;
    }
    for (int64_t s = 1; s <= last; s++) {
        for (int r = 0; r < ref->world; r++) {
            const struct ckh_ddp_rank_rec *a = &ref->ranks[r], *b = &run->ranks[r];
            struct ckh_ddp_step_rec none = {0};
            const struct ckh_ddp_step_rec *x =
                s <= a->final_step && (uint64_t)s <= ref->max_steps ? &a->steps[s] : &none;
            const struct ckh_ddp_step_rec *y =
                s <= b->final_step && (uint64_t)s <= run->max_steps ? &b->steps[s] : &none;
            const char *what = step_diff(x, y);
            if (what) {
                if (msg)
                    snprintf(msg, msglen, "step %" PRId64 " rank %d: %s differs", s, r, what);
                if (first_step)
                    *first_step = s;
                return CKH_EMISMATCH;
            }
        }
    }
    for (int r = 0; r < ref->world; r++) {
        const struct ckh_ddp_rank_rec *a = &ref->ranks[r], *b = &run->ranks[r];
        const char *what = a->finished != b->finished     ? "completion"
                           : a->final_epoch != b->final_epoch ? "final epoch"
                           : a->final_step != b->final_step   ? "final step"
                                                              : step_diff(&a->final, &b->final);
        if (what) {
            if (msg)
                snprintf(msg, msglen, "end of run, rank %d: %s differs%s%s", r, what,
                         b->errmsg[0] ? " (run: " : "", b->errmsg[0] ? b->errmsg : "");
            if (msg && b->errmsg[0] && strlen(msg) + 2 < msglen)
                strcat(msg, ")");
            if (first_step)
                *first_step = last + 1;
            return CKH_EMISMATCH;
        }
    }
    return 0;
}

static int64_t max_epoch(const struct ckh_ddp_record *r)
{
    int64_t e = 0;
    for (int k = 0; k < r->world; k++)
        if (r->ranks[k].final_epoch > e)
            e = r->ranks[k].final_epoch;
    return e;
}

/* Adds the sample counts of epoch e of r into counts (samples entries). */
static void count_epoch(const struct ckh_ddp_record *r, int64_t e, uint32_t *counts)
{
    for (int k = 0; k < r->world; k++) {
        const struct ckh_ddp_rank_rec *rr = &r->ranks[k];
        for (int64_t s = 1; s <= rr->final_step && (uint64_t)s <= r->max_steps; s++) {
            if (!rr->steps[s].valid || rr->steps[s].epoch != e)
                continue;
            const uint32_t *ids = rr->samples + (uint64_t)s * r->per_step;
            for (uint32_t i = 0; i < r->per_step; i++)
                if (ids[i] < r->samples)
                    counts[ids[i]]++;
        }
    }
}

int ckh_ddp_record_check_epochs(const struct ckh_ddp_record *ref, const struct ckh_ddp_record *run,
                                char *msg, size_t msglen)
{
    if (!ref || !run || ref->samples != run->samples)
        return CKH_EINVAL;
    if (msg && msglen)
        msg[0] = '\0';
    uint32_t *a = calloc(ref->samples, sizeof *a), *b = calloc(ref->samples, sizeof *b);
    int rc = 0;
    if (!a || !b) {
        rc = CKH_ENOMEM;
        goto out_free;
    }
    int64_t epochs = max_epoch(ref) > max_epoch(run) ? max_epoch(ref) : max_epoch(run);
    for (int64_t e = 0; e < epochs && !rc; e++) {
        memset(a, 0, ref->samples * sizeof *a);
        memset(b, 0, ref->samples * sizeof *b);
        count_epoch(ref, e, a);
        count_epoch(run, e, b);
        for (uint64_t i = 0; i < ref->samples; i++) {
            if (a[i] == b[i])
                continue;
            if (msg)
                snprintf(msg, msglen, "epoch %" PRId64 ": sample %" PRIu64 " %s (%u times, expected %u)",
                         e, i, b[i] < a[i] ? "skipped" : "repeated", b[i], a[i]);
            rc = CKH_EMISMATCH;
            break;
        }
    }
out_free:
    free(a);
    free(b);
    return rc;
}
