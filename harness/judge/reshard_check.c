/* Oracle "reshard": a job restarted with another world size still reads
 * every epoch exactly once, with only the padding the sampler's rule
 * allows.
 *
 * Applies when the job ran with another world size after a restart
 * (restart.world_size, r->resized) and completed, and the workload kept
 * per-epoch sample-id counts (struct ckh_job_result.sample_counts).
 *
 * Expected multiset of epoch e, over the samples whose steps survive in
 * the final history (a resumed run replaces what came after its resume
 * point): let W_e be the number of ranks that ran the epoch's first step
 * (epoch_world[e]) and n the dataset size. The epoch's order is a
 * permutation of 0..n-1 brought to T_e entries for W_e ranks, the
 * reference distributed sampler's rule: T_e = ceil(n / W_e) * W_e by
 * repeating the order's start, or floor(n / W_e) * W_e with drop_last.
 * So with q = T_e / n and m = T_e mod n, exactly m ids are read q + 1
 * times and every other id q times. This holds
 *   - for an epoch run entirely under one world W (W_e = W);
 *   - for the interrupted epoch: the ranks of the old world read the
 *     order's first entries up to the checkpoint, the new ranks read the
 *     rest of the same order round-robin (resharding never pads again),
 *     so the union is the order padded for the world that began it;
 *   - for an epoch nothing of which was read before the restart: the
 *     sampler starts it afresh for the new world (W_e = the new world).
 * The oracle checks, per epoch: W_e is one of the job's two worlds, the
 * counts sum to T_e, and every id is read q or q + 1 times. A lost sample
 * (read fewer times) or a repeated one (more) fails it, naming the epoch
 * and the sample.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    const struct ckh_job_result *got = &r->got.r;
    return r->resized && r->completed && got->sample_counts && got->epoch_world &&
           got->dataset_size > 0 && got->nsamples > 0;
}

/* Entries of an epoch's order for `world` ranks. */
static uint64_t padded_total(uint64_t n, uint64_t world, bool drop_last)
{
    return drop_last ? n / world * world : (n + world - 1) / world * world;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t len, int64_t *divergent)
{
    const struct ckh_job_result *got = &r->got.r;
    uint64_t n = got->dataset_size;
    for (size_t e = 0; e < got->nsamples; e++) {
        int w = got->epoch_world[e];
        if (w != r->world && w != r->world_restart) {
            snprintf(detail, len,
                     "epoch %zu: its first step was run by %d rank%s, expected %d (before the "
                     "restart) or %d (after)",
                     e, w, w == 1 ? "" : "s", r->world, r->world_restart);
            *divergent = (int64_t)e;
            return false;
        }
        uint64_t total = padded_total(n, (uint64_t)w, got->drop_last);
        uint64_t q = total / n;
        const uint32_t *c = got->sample_counts + e * n;
        uint64_t sum = 0, extra = 0;
        for (uint64_t i = 0; i < n; i++) {
            sum += c[i];
            extra += c[i] == q + 1;
            if (c[i] < q || c[i] > q + 1) {
                snprintf(detail, len,
                         "epoch %zu (order for %d ranks: %" PRIu64 " entries, each of the %" PRIu64
                         " samples read %" PRIu64 " or %" PRIu64 " times): sample %" PRIu64
                         " was read %u time%s: %s across the world-size change",
                         e, w, total, n, q, q + 1, i, c[i], c[i] == 1 ? "" : "s",
                         c[i] < q ? "lost" : "repeated");
                *divergent = (int64_t)e;
                return false;
            }
        }
        if (sum != total) {
            snprintf(detail, len,
                     "epoch %zu read %" PRIu64 " entries, expected %" PRIu64
                     " (its order padded for %d ranks): %" PRIu64 " samples read %" PRIu64
                     " times where the padding allows %" PRIu64 ": samples %s across the "
                     "world-size change",
                     e, sum, total, w, extra, q + 1, total % n, sum < total ? "lost" : "repeated");
            *divergent = (int64_t)e;
            return false;
        }
    }
    snprintf(detail, len,
             "world %d -> %d: each of %zu epochs read all %" PRIu64
             " samples with exactly the padding of its order",
             r->world, r->world_restart, got->nsamples, n);
    return true;
}

const struct ckh_oracle_ops ckh__oracle_reshard = {
    .name = "reshard",
    .description = "after a restart with another world size, every epoch reads each sample once (plus padding)",
    .applies = applies,
    .check = check,
};
