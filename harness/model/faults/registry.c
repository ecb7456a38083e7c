/* The fault registry: every descriptor of faults/list.h, in its order,
 * the way harness/judge/oracle.c lists the oracles. */
#include <string.h>

#include "ckh/assert.h"
#include "model/fault.h"
#include "ckh/rng.h"

static const struct ckh_fault_ops *const faults[] = {
#define CKH__FAULT_REF(e, id) &ckh__fault_##id,
    CKH_FAULT_LIST(CKH__FAULT_REF)
#undef CKH__FAULT_REF
};
_Static_assert(sizeof faults / sizeof faults[0] == CKH_SCN_ACT__COUNT, "one descriptor per action");

const struct ckh_fault_ops *ckh_fault_at(size_t i)
{
    if (i >= sizeof faults / sizeof faults[0])
        return NULL;
    CKH_ASSERT(faults[i]->kind == (enum ckh_scn_action_kind)i); /* list order is enum order */
    return faults[i];
}

const struct ckh_fault_ops *ckh_fault_of(enum ckh_scn_action_kind k)
{
    return (unsigned)k < CKH_SCN_ACT__COUNT ? ckh_fault_at((size_t)k) : NULL;
}

const struct ckh_fault_ops *ckh_fault_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof faults / sizeof faults[0]; i++)
        if (strcmp(faults[i]->name, name) == 0)
            return faults[i];
    return NULL;
}

const char *ckh_scn_action_name(enum ckh_scn_action_kind k)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(k);
    return ops ? ops->name : "?";
}

bool ckh_scn_action_is_at_rest(enum ckh_scn_action_kind k)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(k);
    return ops && ops->apply;
}

bool ckh_fault_applied_between_runs(const struct ckh_scn_fault *f)
{
    return ckh_scn_action_is_at_rest(f->act.kind) && !f->on.matches_ops;
}

bool ckh_fault_arms_rule(const struct ckh_scn_fault *f)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
    return ops && !ckh_fault_applied_between_runs(f) && (ops->arm || ops->apply);
}

void ckh_fault_generate(const struct ckh_fault_ops *ops, struct ckh_fault_gen *g)
{
    g->run = g->damaging ? (uint32_t)ckh_fault_gen_pick(g, 1, 3) : (uint32_t)ckh_fault_gen_pick(g, 1, 2);
    if (ops->generate)
        ops->generate(g);
}
