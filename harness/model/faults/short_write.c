/* short-write: the matched write accepts only part of its bytes and
 * returns the short count, as a real write/pwrite may (a signal, a quota,
 * a network filesystem). Only that prefix lands; the node lives on. A
 * correct writer writes the rest (ckh_file_write_all); one that keeps the
 * truncated file, or gives the save up, is what this fault exposes. Only
 * write and pwrite match (the simulator's SHORT_WRITE action ignores
 * other ops). */
#include <inttypes.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"bytes", "fraction"};

static int short_write_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    struct ckh_scn_action *a = &f->act;
    yaml_node_t *b = ckh__scn_get(p, n, "bytes"), *fr = ckh__scn_get(p, n, "fraction");
    int rc;
    if (b && fr)
        return ckh__scn_fail(p, fr, CKH_EINVAL, "'do: short-write' takes 'bytes' or 'fraction', not both");
    a->u.short_write.is_fraction = true;
    a->u.short_write.fraction = 0.5;
    if (b) {
        a->u.short_write.is_fraction = false;
        if ((rc = ckh__scn_get_size(p, b, "bytes", &a->u.short_write.bytes)))
            return rc;
    } else if (fr) {
        double v = 0;
        if (!ckh__scn_is_scalar(fr) || !ckh__scn_parse_double(ckh__scn_text(fr), &v) || v < 0.0 ||
            v > 1.0)
            return ckh__scn_fail(p, fr, CKH_EINVAL,
                                 "'fraction' expects a number in [0.0, 1.0], got " CKH__GOT_FMT,
                                 CKH__GOT_ARGS(fr));
        a->u.short_write.fraction = v;
    }
    if (f->on.op >= 0 && f->on.op != CKH_OP_WRITE && f->on.op != CKH_OP_PWRITE)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: short-write' needs 'on.op' to be write or pwrite, not '%s'",
                             ckh_op_name((enum ckh_op_kind)f->on.op));
    return 0;
}

static int short_write_write(FILE *out, const struct ckh_scn_action *a)
{
    if (!a->u.short_write.is_fraction) {
        fprintf(out, "    bytes: %" PRIu64 "\n", a->u.short_write.bytes);
        return 0;
    }
    double v = a->u.short_write.fraction;
    if (!(v >= 0.0 && v <= 1.0))
        return CKH_EINVAL;
    fprintf(out, "    fraction: %.17g\n", v); /* %.17g reads back exactly */
    return 0;
}

static void short_write_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    r->action.kind = CKH_FAULT_SHORT_WRITE;
    if (f->act.u.short_write.is_fraction)
        r->keep_fraction = f->act.u.short_write.fraction; /* 0: a write of 0 bytes, as asked */
    else
        r->action.keep_bytes = f->act.u.short_write.bytes;
}

/* Repeated short writes only by a fraction: each retry then still makes
 * progress in proportion, where a fixed byte count would cost one op per
 * few bytes of a large file. */
static void short_write_generate(struct ckh_fault_gen *g)
{
    bool fraction = ckh_fault_gen_chance(g, 0.5);
    ckh_fault_gen_printf(g, "  - do: short-write\n");
    if (fraction)
        ckh_fault_gen_printf(g, "    fraction: 0.%02d\n", (int)ckh_fault_gen_pick(g, 10, 90));
    else
        ckh_fault_gen_printf(g, "    bytes: %d\n", (int)ckh_fault_gen_pick(g, 1, 4096));
    ckh_fault_gen_trigger(g, g->ddp ? "write" : "pwrite", g->run, fraction);
}

const struct ckh_fault_ops ckh__fault_short_write = {
    .name = "short-write",
    .kind = CKH_SCN_ACT_SHORT_WRITE,
    .modes = CKH_FAULT_MODES_ALL,
    .summary = "a write accepts only part of its bytes and returns the short count",
    .keys_doc = "`bytes:` size accepted, or `fraction:` 0..1 of the write (default 0.5; a "
                "fraction > 0 accepts at least one byte)",
    .meaning = "only that prefix of the write lands and the op returns its length, as a real "
               "`pwrite` may; the writer must write the rest. Only `write` and `pwrite` match",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .fuzz_recoverable = true,
    .parse = short_write_parse,
    .write = short_write_write,
    .arm = short_write_arm,
    .generate = short_write_generate,
};
