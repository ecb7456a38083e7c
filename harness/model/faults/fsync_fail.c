/* fsync-fail: fsync fails with Linux semantics (the file's dirty data is
 * dropped, fsync returns EIO, a retry succeeds). Matches fsync unless the
 * trigger names another op. */
#include "ckh/op.h"
#include "model/fault.h"

static int fsync_fail_parse(struct ckh__scn_reader *p, const struct yaml_node_s *n,
                            struct ckh_scn_fault *f)
{
    (void)p;
    (void)n;
    if (f->on.op < 0) { /* fsync-fail means the fsync, unless told otherwise */
        f->on.op = CKH_OP_FSYNC;
        f->on.matches_ops = true;
    }
    return 0;
}

static void fsync_fail_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    (void)f;
    r->action.kind = CKH_FAULT_FSYNC_LOST;
    if (r->kind < 0)
        r->kind = CKH_OP_FSYNC;
}

static void fsync_fail_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: fsync-fail\n");
    ckh_fault_gen_trigger(g, "fsync", g->run, true);
}

const struct ckh_fault_ops ckh__fault_fsync_fail = {
    .name = "fsync-fail",
    .kind = CKH_SCN_ACT_FSYNC_FAIL,
    .needs = CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .summary = "fsync fails with Linux semantics: dirty data dropped, retry succeeds",
    .keys_doc = "—",
    .meaning = "Linux semantics: the file's dirty data is dropped, fsync returns EIO, a retry "
               "succeeds. Without `on.op` it matches `fsync`",
    .touches_data = true,
    .fuzz_recoverable = true,
    .parse = fsync_fail_parse,
    .arm = fsync_fail_arm,
    .generate = fsync_fail_generate,
};
