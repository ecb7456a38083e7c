/* stale-latest: the `latest` pointer is made to name the oldest checkpoint beside it
 * (shared code in latest.c). */
#include "model/fault.h"

static const char *const keys[] = {"path"};

static void stale_latest_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: stale-latest\n");
    ckh__fault_generate_latest(g);
}

const struct ckh_fault_ops ckh__fault_stale_latest = {
    .name = "stale-latest",
    .kind = CKH_SCN_ACT_STALE_LATEST,
    .summary = "the latest pointer names an older checkpoint",
    .keys_doc = "`path:` as above",
    .meaning = "make `latest` point at an older checkpoint",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .needs = CKH_FAULT_NEEDS_LATEST | CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .touches_data = true,
    .parse = ckh__fault_parse_latest,
    .write = ckh__fault_write_latest,
    .apply = ckh__fault_apply_latest,
    .generate = stale_latest_generate,
};
