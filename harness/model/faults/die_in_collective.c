/* die-in-collective: the matched rank dies inside a collective (allreduce
 * unless the trigger names another op). */
#include "ckh/op.h"
#include "model/fault.h"

static void die_in_collective_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    (void)f;
    r->action.kind = CKH_FAULT_KILL_BEFORE;
    if (r->kind < 0)
        r->kind = CKH_OP_ALLREDUCE;
}

static void die_in_collective_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: die-in-collective\n");
    ckh_fault_gen_trigger(g, ckh_fault_gen_chance(g, 0.7) ? "allreduce" : "barrier", g->run, false);
}

const struct ckh_fault_ops ckh__fault_die_in_collective = {
    .name = "die-in-collective",
    .kind = CKH_SCN_ACT_DIE_IN_COLLECTIVE,
    .summary = "a rank dies inside a collective (default: allreduce)",
    .keys_doc = "—",
    .meaning = "the matched rank dies inside the collective",
    .needs = CKH_FAULT_NEEDS_COLLECTIVES,
    .modes = CKH_FAULT_MODE_SIM | CKH_FAULT_MODE_REAL,
    .modes_note = "a command job's processes talk over their own network (gloo, NCCL), which ckh does not "
                  "see; kill a rank instead",
    .touches_data = false,
    .fuzz_recoverable = true,
    .arm = die_in_collective_arm,
    .generate = die_in_collective_generate,
};
