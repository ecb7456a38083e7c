/* delay: the matched op takes longer (a slow disk, or a slow rank that
 * outlasts the collective timeout). */
#include <inttypes.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"duration"};

static int delay_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "duration");
    if (!v)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: delay' needs 'duration' (such as 5s)");
    return ckh__scn_get_duration(p, v, "duration", &f->act.u.delay.duration_ns);
}

static int delay_write(FILE *out, const struct ckh_scn_action *a)
{
    fprintf(out, "    duration: %" PRIu64 "ns\n", a->u.delay.duration_ns);
    return 0;
}

static void delay_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    r->action.kind = CKH_FAULT_DELAY;
    r->action.delay_ns = f->act.u.delay.duration_ns;
}

static void delay_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: delay\n    duration: %dms\n", (int)ckh_fault_gen_pick(g, 1, 50));
    ckh_fault_gen_trigger(g, ckh_fault_gen_chance(g, 0.5) ? ckh_fault_gen_any_op(g) : NULL, g->run, true);
}

const struct ckh_fault_ops ckh__fault_delay = {
    .name = "delay",
    .kind = CKH_SCN_ACT_DELAY,
    .modes = CKH_FAULT_MODES_ALL,
    .summary = "an operation takes longer (slow disk, slow rank)",
    .keys_doc = "`duration:` (required)",
    .meaning = "the op takes that much longer: a slow disk, or a slow rank that outlasts "
               "`collective_timeout`",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .touches_data = true, /* a late rank times a save's collectives out */
    .fuzz_recoverable = true,
    .parse = delay_parse,
    .write = delay_write,
    .arm = delay_arm,
    .generate = delay_generate,
};
