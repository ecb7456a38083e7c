/* The oracle registry and helpers shared by the *_check.c files. */
#include <string.h>

#include "ckh/assert.h"
#include "model/fault.h"
#include "judge/oracle.h"

/* resume-equivalence runs before reference, golden and values: when a
 * resumed run diverges, the first failing oracle (whose detail heads the
 * verdict line) names the step and quantity where it began, not only the
 * end state that differs. */
static const struct ckh_oracle_ops *const oracles[] = {
    &ckh__oracle_faults_fired,    &ckh__oracle_outcome,     &ckh__oracle_liveness,
    &ckh__oracle_hang,            &ckh__oracle_resume,      &ckh__oracle_reference,
    &ckh__oracle_golden,          &ckh__oracle_values,      &ckh__oracle_lost_work,
    &ckh__oracle_committed,       &ckh__oracle_no_corrupt_load, &ckh__oracle_determinism,
    &ckh__oracle_reshard,         &ckh__oracle_saves,       &ckh__oracle_restarts,
};

const struct ckh_oracle_ops *ckh_oracle_at(size_t i)
{
    const struct ckh_oracle_ops *o = i < sizeof oracles / sizeof oracles[0] ? oracles[i] : NULL;
    CKH_ASSERT(!o || (o->name && o->applies && o->check));
    return o;
}

const struct ckh_oracle_ops *ckh_oracle_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof oracles / sizeof oracles[0]; i++)
        if (strcmp(oracles[i]->name, name) == 0)
            return oracles[i];
    return NULL;
}

bool ckh_oracle_expects_pass(const struct ckh_scenario_run *r)
{
    return r->sc->expect.outcome == CKH_SCN_OUTCOME_PASS;
}

bool ckh_oracle_faults_touch_data(const struct ckh_scenario_run *r)
{
    /* Each fault's descriptor says whether it may fail a save or damage
     * data (harness/model/faults/<name>.c, touches_data). */
    for (size_t i = 0; i < r->sc->nfaults; i++) {
        const struct ckh_fault_ops *ops = ckh_fault_of(r->sc->faults[i].act.kind);
        if (ops && ops->touches_data)
            return true;
    }
    return false;
}

bool ckh_oracle_resizes(const struct ckh_scenario_run *r)
{
    return r->world_restart != r->world;
}

bool ckh_oracle_ignored(const struct ckh_scenario_run *r, const char *name)
{
    for (size_t i = 0; i < r->sc->compare.nignore; i++)
        if (strcmp(r->sc->compare.ignore[i], name) == 0)
            return true;
    return false;
}
