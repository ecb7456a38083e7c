/* Oracle "resume-equivalence": a training job interrupted and resumed any
 * number of times ends bit-identical to the uninterrupted run: the same
 * per-step digests (weights, optimizer, learning rate, RNG streams,
 * sampler), and every epoch consumed exactly the reference multiset of
 * sample ids. Reports the first divergent step.
 *
 * This is ckh's one definition of resume equivalence: tests/test_ddp.c
 * judges its resumed runs through it (as ddp-train scenarios), and the
 * DDP record (reference/ddp_record.c) keeps no comparison of its own. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "oracles/oracle.h"

/* Not for a job restarted with another world size: its global batch and
 * so every step after the restart differ from the reference run's (the
 * "reshard" oracle judges its epochs instead). */
static bool applies(const struct ckh_scenario_run *r)
{
    return r->ref_ok && r->ref.r.nsteps > 0 && r->completed && !ckh_oracle_resizes(r);
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    const struct ckh_job_result *want = &r->ref.r, *got = &r->got.r;
    size_t ns = want->nsteps < got->nsteps ? want->nsteps : got->nsteps;
    for (size_t i = 0; i < ns; i++) {
        const struct ckh_step_record *w = &want->steps[i], *g = &got->steps[i];
        if (w->step != g->step || w->digest != g->digest) {
            snprintf(detail, n,
                     "first divergent step %" PRId64 ": state %016" PRIx64 ", reference %016" PRIx64
                     "%s%s%s%s%s",
                     w->step, g->digest, w->digest, g->what[0] ? "; got " : "", g->what,
                     w->what[0] ? "; reference " : "", w->what, w->what[0] ? " (component digests)" : "");
            *divergent = w->step;
            return false;
        }
    }
    if (want->nsteps != got->nsteps) {
        snprintf(detail, n, "expected %zu recorded steps, got %zu", want->nsteps, got->nsteps);
        *divergent = (int64_t)ns;
        return false;
    }
    for (size_t i = 0; i < want->nsamples && i < got->nsamples; i++) {
        const struct ckh_epoch_samples *w = &want->samples[i], *g = &got->samples[i];
        if (w->count != g->count || w->multiset != g->multiset) {
            snprintf(detail, n,
                     "epoch %" PRId64 " consumed %" PRIu64 " samples (multiset %016" PRIx64
                     "), reference %" PRIu64 " (%016" PRIx64 "): samples skipped or repeated",
                     w->epoch, g->count, g->multiset, w->count, w->multiset);
            return false;
        }
    }
    snprintf(detail, n, "%zu steps and %zu epochs identical to the uninterrupted run", ns,
             want->nsamples);
    return true;
}

const struct ckh_oracle_ops ckh__oracle_resume = {
    .name = "resume-equivalence",
    .description = "a resumed training run is bit-identical to the uninterrupted one",
    .applies = applies,
    .check = check,
};
