/* errno: the matched op fails with the given error and has no effect. */
#include <errno.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"errno"};

static int errno_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "errno");
    int e = 0, rc;
    if (!v)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: errno' needs 'errno' (EIO, ENOSPC, EDQUOT, "
                                               "EACCES, ENOENT or EROFS)");
    if ((rc = ckh__scn_get_enum(p, v, "errno", ckh_scn_errnos.names, ckh_scn_errnos.n, &e)))
        return rc;
    f->act.u.errno_.err = ckh_scn_errno_value(e);
    return 0;
}

/* An errno no scenario can name is refused, never written as another. */
static int errno_write(FILE *out, const struct ckh_scn_action *a)
{
    const char *name = ckh_scn_errno_name(a->u.errno_.err);
    if (!name)
        return CKH_EINVAL;
    fprintf(out, "    errno: %s\n", name);
    return 0;
}

static void errno_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    r->action.kind = CKH_FAULT_ERRNO;
    r->action.err = f->act.u.errno_.err;
}

static void errno_generate(struct ckh_fault_gen *g)
{
    const char *name = ckh_scn_errnos.names[ckh_fault_gen_pick(g, 0, ckh_scn_errnos.n - 1)];
    ckh_fault_gen_printf(g, "  - do: errno\n    errno: %s\n", name);
    ckh_fault_gen_trigger(g, ckh_fault_gen_any_op(g), g->run, true);
}

const struct ckh_fault_ops ckh__fault_errno_fault = {
    .name = "errno",
    .kind = CKH_SCN_ACT_ERRNO,
    .modes = CKH_FAULT_MODES_ALL,
    .summary = "fail an operation with EIO, ENOSPC, EDQUOT, EACCES, ENOENT or EROFS",
    .keys_doc = "`errno: EIO \\| ENOSPC \\| EDQUOT \\| EACCES \\| ENOENT \\| EROFS` (required)",
    .meaning = "the op fails with that error and has no effect",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .touches_data = true,
    .fuzz_recoverable = true,
    .parse = errno_parse,
    .write = errno_write,
    .arm = errno_arm,
    .generate = errno_generate,
};
