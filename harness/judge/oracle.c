/* The oracle registry (the list is judge/oracle_list.h) and the helpers
 * shared by the *_check.c files. */
#include <string.h>

#include "ckh/assert.h"
#include "model/fault.h"
#include "judge/oracle.h"

/* The oracles of judge/oracle_list.h, in its order. */
static const struct ckh_oracle_ops *const oracles[] = {
#define CKH__ORACLE_REF(id) &ckh__oracle_##id,
    CKH_ORACLE_LIST(CKH__ORACLE_REF)
#undef CKH__ORACLE_REF
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
