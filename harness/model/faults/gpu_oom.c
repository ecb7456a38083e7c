/* gpu-oom: the emulated GPUs of the faulted runs are sized for about one
 * rank's state, so loading every rank onto one device runs it out of
 * memory. The workload's adapter applies it (harness/exec/adapter_ddp.c):
 * nothing is armed in the simulator, and it counts as fired when armed. */
#include "model/fault.h"

const struct ckh_fault_ops ckh__fault_gpu_oom = {
    .name = "gpu-oom",
    .kind = CKH_SCN_ACT_GPU_OOM,
    .summary = "emulated GPUs sized for one rank's state (ddp-train; job.gpu_memory sets it exactly)",
    .keys_doc = "—",
    .meaning = "`ddp-train`: unless `job.gpu_memory` is set, each emulated GPU holds only about "
               "one rank's state (5x its weights) in the faulted runs, so loading every rank onto "
               "one device runs it out of memory",
    .needs = CKH_FAULT_NEEDS_DEVICES,
    .modes = CKH_FAULT_MODE_SIM | CKH_FAULT_MODE_REAL,
    .modes_note = "a command job's processes have no emulated devices (ckh sees only their files)",
    /* not fuzzed: it needs a device-memory budget */
};
