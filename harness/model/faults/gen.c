/* Helpers for the descriptors' generate ops: the fuzzer's draws and the
 * trigger every generated fault carries. The draws happen in a fixed
 * order, so a fuzz seed always yields the same text (harness/search/fuzz.c
 * specifies the seed). */
#include <stdarg.h>

#include "model/fault.h"
#include "ckh/rng.h"

/* Ops each workload family performs (seed-pipeline and param-server save
 * through minidb; ddp-train through the atomic directory saver). */
static const char *const ep_write_ops[] = {"pwrite", "fsync", "rename", "fsync_dir", "open", "close"};
static const char *const ep_any_ops[] = {"open", "pread", "pwrite", "fsync", "rename", "listdir",
                                         "stat", "fsync_dir", "close"};
static const char *const ddp_write_ops[] = {"write", "fsync", "rename", "fsync_dir", "open",
                                            "close", "mkdir", "symlink"};
static const char *const ddp_any_ops[] = {"open", "read", "write", "fsync", "rename", "listdir",
                                          "stat", "readlink", "symlink", "fsync_dir", "close",
                                          "mkdir"};
static const char *const phases_epoch[] = {"save", "load", "epoch", "init"};
static const char *const phases_ddp[] = {"save", "load", "epoch", "init", "collective"};

#define PICK(g, arr) ((arr)[ckh_rng_below((g)->rng, sizeof(arr) / sizeof((arr)[0]))])

void ckh_fault_gen_printf(struct ckh_fault_gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g->vprintf(g->out, fmt, ap);
    va_end(ap);
}

uint64_t ckh_fault_gen_pick(struct ckh_fault_gen *g, uint64_t lo, uint64_t hi)
{
    return lo + ckh_rng_below(g->rng, hi - lo + 1);
}

bool ckh_fault_gen_chance(struct ckh_fault_gen *g, double p)
{
    return ckh_rng_unit(g->rng) < p;
}

const char *ckh_fault_gen_write_op(struct ckh_fault_gen *g)
{
    return g->ddp ? PICK(g, ddp_write_ops) : PICK(g, ep_write_ops);
}

const char *ckh_fault_gen_any_op(struct ckh_fault_gen *g)
{
    return g->ddp ? PICK(g, ddp_any_ops) : PICK(g, ep_any_ops);
}

void ckh_fault_gen_trigger(struct ckh_fault_gen *g, const char *op, uint32_t run, bool allow_repeat)
{
    ckh_fault_gen_printf(g, "    on: {");
    bool first = true;
#define SEP() (first ? (first = false, "") : ", ")
    if (op)
        ckh_fault_gen_printf(g, "%sop: %s", SEP(), op);
    if (g->nodes > 1 && ckh_fault_gen_chance(g, 0.4))
        ckh_fault_gen_printf(g, "%snode: %d", SEP(), (int)ckh_fault_gen_pick(g, 0, (uint64_t)g->nodes - 1));
    if (ckh_fault_gen_chance(g, 0.5)) {
        const char *ph = g->ddp ? PICK(g, phases_ddp) : PICK(g, phases_epoch);
        ckh_fault_gen_printf(g, "%sphase: %s", SEP(), ph);
    }
    if (ckh_fault_gen_chance(g, 0.5)) {
        /* A rate: 1% .. 50% per matching op. */
        double p = 0.01 * (double)ckh_fault_gen_pick(g, 1, 50);
        ckh_fault_gen_printf(g, "%sprobability: %.3f", SEP(), p);
        if (allow_repeat && ckh_fault_gen_chance(g, 0.5))
            ckh_fault_gen_printf(g, "%srepeat: true", SEP());
    } else {
        ckh_fault_gen_printf(g, "%snth: %d", SEP(), (int)ckh_fault_gen_pick(g, 1, g->ddp ? 16 : 6));
    }
    ckh_fault_gen_printf(g, "%srun: %u}\n", SEP(), run);
#undef SEP
}
