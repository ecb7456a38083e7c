/* mismatch-collective: the matched rank issues a different collective than
 * its peers (allreduce unless the trigger names another op); it fails the
 * collectives of a save. */
#include "ckh/op.h"
#include "model/fault.h"

static void mismatch_collective_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    (void)f;
    r->action.kind = CKH_FAULT_MISMATCH;
    if (r->kind < 0)
        r->kind = CKH_OP_ALLREDUCE;
}

static void mismatch_collective_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: mismatch-collective\n");
    ckh_fault_gen_trigger(g, ckh_fault_gen_chance(g, 0.7) ? "allreduce" : "barrier", g->run, false);
}

const struct ckh_fault_ops ckh__fault_mismatch_collective = {
    .name = "mismatch-collective",
    .kind = CKH_SCN_ACT_MISMATCH_COLLECTIVE,
    .summary = "a rank joins a different collective than its peers",
    .keys_doc = "—",
    .meaning = "the matched rank issues a different collective than its peers",
    .needs = CKH_FAULT_NEEDS_COLLECTIVES,
    .modes = CKH_FAULT_MODE_SIM | CKH_FAULT_MODE_REAL,
    .modes_note = "a command job's processes talk over their own network (gloo, NCCL), which ckh does not "
                  "see; kill a rank instead",
    .touches_data = true,
    .fuzz_recoverable = true,
    .arm = mismatch_collective_arm,
    .generate = mismatch_collective_generate,
};
