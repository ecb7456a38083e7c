/* power-loss: every node dies at once and every disk applies its crash
 * model (`keep` as for crash). */
#include "model/fault.h"

static const char *const keys[] = {"keep"};


static void power_loss_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    r->action.kind = CKH_FAULT_POWER_LOSS;
    ckh__fault_arm_keep(f, r);
}

static void power_loss_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: power-loss\n");
    ckh_fault_gen_trigger(g, ckh_fault_gen_write_op(g), g->run, false);
}

const struct ckh_fault_ops ckh__fault_power_loss = {
    .name = "power-loss",
    .kind = CKH_SCN_ACT_POWER_LOSS,
    .needs = CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .acts_on_process = ckh__fault_on_process_kill,
    .summary = "kill every node at once; every disk applies its crash model (keep: as for crash)",
    .keys_doc = "`keep:` as for `crash`",
    .meaning = "every node dies, every disk applies its crash model",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .fuzz_recoverable = true,
    .parse = ckh__fault_parse_keep,
    .write = ckh__fault_write_keep,
    .arm = power_loss_arm,
    .generate = power_loss_generate,
};
