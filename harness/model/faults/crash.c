/* crash: the node's machine crashes at the matched op; its unsynced
 * writes meet the disk's crash model (`keep` says what survives). */
#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"keep"};


int ckh__fault_parse_keep(struct ckh__scn_reader *p, const struct yaml_node_s *n,
                          struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "keep");
    int e = 0, rc;
    if (v) {
        if ((rc = ckh__scn_get_enum(p, v, "keep", ckh_scn_keeps.names, ckh_scn_keeps.n, &e)))
            return rc;
        f->act.keep = (enum ckh_scn_keep)e;
    }
    return 0;
}

int ckh__fault_write_keep(FILE *out, const struct ckh_scn_action *a)
{
    const char *keep = ckh_scn_enum_name(&ckh_scn_keeps, (int)a->keep);
    if (!keep)
        return CKH_EINVAL;
    if (a->keep != CKH_SCN_KEEP_RANDOM)
        fprintf(out, "    keep: %s\n", keep);
    return 0;
}

/* The crash keep of the rule: what survives of the unsynced state. */
void ckh__fault_arm_keep(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    r->action.crash_keep = f->act.keep == CKH_SCN_KEEP_SYNCED ? CKH_CRASH_KEEP_SYNCED
                           : f->act.keep == CKH_SCN_KEEP_CACHE ? CKH_CRASH_KEEP_CACHE
                                                                : CKH_CRASH_KEEP_RANDOM;
}

enum ckh_fault_process ckh__fault_on_process_kill(const struct ckh_scn_action *a, uint64_t *grace_ns)
{
    (void)a;
    (void)grace_ns;
    return CKH_FAULT_PROCESS_KILL;
}

static void crash_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    r->action.kind = CKH_FAULT_CRASH_BEFORE;
    ckh__fault_arm_keep(f, r);
}

static void crash_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: crash\n");
    ckh_fault_gen_trigger(g, ckh_fault_gen_write_op(g), g->run, false);
}

const struct ckh_fault_ops ckh__fault_crash = {
    .name = "crash",
    .kind = CKH_SCN_ACT_CRASH,
    .needs = CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .acts_on_process = ckh__fault_on_process_kill,
    .summary = "crash a node's machine: its unsynced writes meet the crash model (keep: random|synced|cache)",
    .keys_doc = "`keep: random \\| synced \\| cache` (default `random`)",
    .meaning = "the node's machine crashes: its unsynced writes follow the crash model",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .fuzz_recoverable = true,
    .parse = ckh__fault_parse_keep,
    .write = ckh__fault_write_keep,
    .arm = crash_arm,
    .generate = crash_generate,
};
