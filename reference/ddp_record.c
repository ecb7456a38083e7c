/* Oracle records of the DDP workload: allocation, forgetting what a resume
 * replays, completion (see include/ckh/ddp.h). Records are judged by the
 * harness (the ddp-train adapter digests them; the resume-equivalence
 * oracle, harness/judge/resume_check.c, compares the digests). */
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

/* Step slots of a record for cfg restarted with world_restart ranks (0:
 * the job has no step). */
static uint64_t record_step_slots(const struct ckh_ddp_config *cfg, int world_restart)
{
    /* The smaller world takes the most steps per epoch. */
    struct ckh_ddp_config small = *cfg;
    small.world = cfg->world < world_restart ? cfg->world : world_restart;
    uint64_t steps = ckh_ddp_total_steps(&small);
    if (!steps || !ckh_ddp_total_steps(cfg))
        return 0;
    /* A defective resume may take more steps than the reference: room for
     * twice as many. A world change mid-epoch splits one epoch between the
     * two worlds: one more epoch of the smaller world and a step. */
    uint64_t slots = steps * 2 + 2;
    if (world_restart != cfg->world)
        slots += steps / (uint64_t)(cfg->epochs > 0 ? cfg->epochs : 1) + 1;
    return slots;
}

uint64_t ckh_ddp_record_bytes(const struct ckh_ddp_config *cfg, int world_restart)
{
    if (!cfg || cfg->world < 1 || cfg->world > CKH_DDP_MAX_RANKS || world_restart < 1 ||
        world_restart > CKH_DDP_MAX_RANKS)
        return 0;
    uint64_t slots = record_step_slots(cfg, world_restart);
    if (!slots)
        return 0;
    uint64_t ranks = (uint64_t)(cfg->world > world_restart ? cfg->world : world_restart);
    uint64_t per_slot = sizeof(struct ckh_ddp_step_rec) + (uint64_t)cfg->batch * cfg->accum * sizeof(uint32_t);
    return sizeof(struct ckh_ddp_record) + ranks * (slots + 1) * per_slot;
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
    uint64_t slots = record_step_slots(cfg, world_restart);
    if (!slots)
        return CKH_EINVAL;
    struct ckh_ddp_record *r = calloc(1, sizeof *r);
    if (!r)
        return CKH_ENOMEM;
    r->world = ranks;
    r->max_steps = slots; /* ckh_ddp_record_bytes counts the same */
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
