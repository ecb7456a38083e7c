/* kill: the node's process dies before or after the matched op, or in the
 * middle of a write (part of it lands). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"when", "at"};

/* `at:` of a mid-write kill: bytes, a fraction in [0, 1] or a percentage. */
static int parse_at(struct ckh__scn_reader *p, const yaml_node_t *v, struct ckh_scn_action *a)
{
    const char *t = ckh__scn_is_scalar(v) ? ckh__scn_text(v) : "";
    size_t len = strlen(t);
    int64_t i;
    double f;
    char buf[64];
    if (len > 1 && len < sizeof(buf) && t[len - 1] == '%') {
        memcpy(buf, t, len - 1);
        buf[len - 1] = '\0';
        if (ckh__scn_parse_double(buf, &f) && f >= 0.0 && f <= 100.0) {
            a->u.kill.at_fraction = f / 100.0;
            return 0;
        }
    } else if (ckh__scn_parse_i64(t, &i) && i >= 0) {
        a->u.kill.at_is_fraction = false;
        a->u.kill.at_fraction = 0.0;
        a->u.kill.at_bytes = (uint64_t)i;
        return 0;
    } else if (strchr(t, '.') && ckh__scn_parse_double(t, &f) && f >= 0.0 && f <= 1.0) {
        a->u.kill.at_fraction = f;
        return 0;
    }
    return ckh__scn_fail(p, v, CKH_EINVAL,
                         "'at' expects a byte offset (integer), a fraction in [0.0, 1.0] or a "
                         "percentage such as '50%%', got " CKH__GOT_FMT,
                         CKH__GOT_ARGS(v));
}

static int kill_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    struct ckh_scn_action *a = &f->act;
    yaml_node_t *v, *when = ckh__scn_get(p, n, "when");
    int e = 0, rc;
    if (when) {
        if ((rc = ckh__scn_get_enum(p, when, "when", ckh_scn_kill_whens.names, ckh_scn_kill_whens.n, &e)))
            return rc;
        a->u.kill.when = (enum ckh_scn_kill_when)e;
    }
    a->u.kill.at_is_fraction = true;
    a->u.kill.at_fraction = 0.5;
    if ((v = ckh__scn_get(p, n, "at"))) {
        if (a->u.kill.when != CKH_SCN_KILL_MID_WRITE)
            return ckh__scn_fail(p, v, CKH_EINVAL, "'at' needs 'when: mid-write'");
        if ((rc = parse_at(p, v, a)))
            return rc;
    }
    if (a->u.kill.when == CKH_SCN_KILL_MID_WRITE && f->on.op >= 0 && f->on.op != CKH_OP_WRITE &&
        f->on.op != CKH_OP_PWRITE)
        return ckh__scn_fail(p, when, CKH_EINVAL,
                             "'when: mid-write' needs 'on.op' to be write or pwrite, not '%s'",
                             ckh_op_name((enum ckh_op_kind)f->on.op));
    return 0;
}

/* A fraction as `at:` text that parses back to exactly f: a percentage
 * ("25%") when one is exact, else the fraction itself. */
static const char *fraction_text(double f, char *buf, size_t n)
{
    snprintf(buf, n, "%.15g%%", f * 100.0);
    if (strtod(buf, NULL) / 100.0 == f)
        return buf;
    snprintf(buf, n, "%.17g", f);
    if (strchr(buf, '.') && !strchr(buf, 'e'))
        return buf;
    snprintf(buf, n, "%.17g%%", f * 100.0);
    return buf;
}

static int kill_write(FILE *out, const struct ckh_scn_action *a)
{
    char buf[64];
    const char *when = ckh_scn_enum_name(&ckh_scn_kill_whens, (int)a->u.kill.when);
    if (!when)
        return CKH_EINVAL;
    fprintf(out, "    when: %s\n", when);
    if (a->u.kill.when == CKH_SCN_KILL_MID_WRITE) {
        if (a->u.kill.at_is_fraction)
            fprintf(out, "    at: %s\n", fraction_text(a->u.kill.at_fraction, buf, sizeof buf));
        else
            fprintf(out, "    at: %" PRIu64 "\n", a->u.kill.at_bytes);
    }
    return 0;
}

static void kill_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    if (f->act.u.kill.when == CKH_SCN_KILL_AFTER) {
        r->action.kind = CKH_FAULT_KILL_AFTER;
    } else if (f->act.u.kill.when == CKH_SCN_KILL_MID_WRITE) {
        r->action.kind = CKH_FAULT_KILL_MID;
        if (f->act.u.kill.at_is_fraction)
            r->keep_fraction = f->act.u.kill.at_fraction;
        else
            r->action.keep_bytes = f->act.u.kill.at_bytes;
    } else {
        r->action.kind = CKH_FAULT_KILL_BEFORE;
    }
}

static void kill_generate(struct ckh_fault_gen *g)
{
    const char *when = ckh_scn_kill_whens.names[ckh_fault_gen_pick(g, 0, ckh_scn_kill_whens.n - 1)];
    bool mid = strcmp(when, "mid-write") == 0;
    const char *op = mid ? (g->ddp ? "write" : "pwrite") : ckh_fault_gen_write_op(g);
    ckh_fault_gen_printf(g, "  - do: kill\n    when: %s\n", when);
    if (mid)
        ckh_fault_gen_printf(g, "    at: %d%%\n", (int)ckh_fault_gen_pick(g, 0, 99));
    ckh_fault_gen_trigger(g, op, g->run, false);
}

/* A kill before the op ends the process as a whole; after it or in the
 * middle of a write it needs the op. */
static enum ckh_fault_process kill_on_process(const struct ckh_scn_action *a, uint64_t *grace_ns)
{
    (void)grace_ns;
    return a->u.kill.when == CKH_SCN_KILL_BEFORE ? CKH_FAULT_PROCESS_KILL : CKH_FAULT_PROCESS_NONE;
}

const struct ckh_fault_ops ckh__fault_kill = {
    .name = "kill",
    .kind = CKH_SCN_ACT_KILL,
    .summary = "kill a node before/after an operation or mid-write (when: before|after|mid-write)",
    .keys_doc = "`when: before \\| after \\| mid-write` (default `before`); `at:` (mid-write only) "
                "bytes (`100`), fraction (`0.25`) or percentage (`25%`), default half",
    .meaning = "the node's process dies at the op",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .modes = CKH_FAULT_MODES_ALL,
    .acts_on_process = kill_on_process,
    .fuzz_recoverable = true,
    .parse = kill_parse,
    .write = kill_write,
    .arm = kill_arm,
    .generate = kill_generate,
};
