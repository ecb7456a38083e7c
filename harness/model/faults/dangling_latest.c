/* dangling-latest: the `latest` pointer is made to name a checkpoint that does not exist
 * (shared code in latest.c). */
#include "model/fault.h"

static const char *const keys[] = {"path"};

static void dangling_latest_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: dangling-latest\n");
    ckh__fault_generate_latest(g);
}

const struct ckh_fault_ops ckh__fault_dangling_latest = {
    .name = "dangling-latest",
    .kind = CKH_SCN_ACT_DANGLING_LATEST,
    .summary = "the latest pointer names a checkpoint that does not exist",
    .keys_doc = "`path:` the link (default `<checkpoint_dir>/latest`)",
    .meaning = "make `latest` point at nothing",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .needs = CKH_FAULT_NEEDS_LATEST | CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .touches_data = true,
    .parse = ckh__fault_parse_latest,
    .write = ckh__fault_write_latest,
    .apply = ckh__fault_apply_latest,
    .generate = dangling_latest_generate,
};
