/* s3-reset: a request to a command job's object store loses its
 * connection, the client living on (docs/OBJECT_STORE.md, "Faults"):
 * `when: before` closes it before the store applies the request, `when:
 * after` once the store has applied it, so the client sees a dropped
 * connection for a request that took effect, and a retry repeats it. */
#include <errno.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"when"};
static const char *const whens[] = {"before", "after"};

static int s3_reset_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *when = ckh__scn_get(p, n, "when");
    int e = 0, rc;
    if (f->on.op < 0 || ckh_op_class((enum ckh_op_kind)f->on.op) != CKH_OPC_OBJ)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: s3-reset' needs 'on.op' to be a request to the object "
                                               "store (s3_put, s3_get, s3_head, s3_delete, s3_list, s3_copy, "
                                               "s3_mpu_create, s3_part, s3_complete, s3_abort)");
    if (when && (rc = ckh__scn_get_enum(p, when, "when", whens, 2, &e)))
        return rc;
    f->act.u.kill.when = e == 1 ? CKH_SCN_KILL_AFTER : CKH_SCN_KILL_BEFORE;
    return 0;
}

static int s3_reset_write(FILE *out, const struct ckh_scn_action *a)
{
    fprintf(out, "    when: %s\n", a->u.kill.when == CKH_SCN_KILL_AFTER ? "after" : "before");
    return 0;
}

/* Carried as an errno the command executor reads as a reset
 * (harness/exec/command_fault.c): ECONNRESET before, ETIMEDOUT after. */
static void s3_reset_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    r->action.kind = CKH_FAULT_ERRNO;
    r->action.err = f->act.u.kill.when == CKH_SCN_KILL_AFTER ? ETIMEDOUT : ECONNRESET;
}

const struct ckh_fault_ops ckh__fault_s3_reset = {
    .name = "s3-reset",
    .kind = CKH_SCN_ACT_S3_RESET,
    .modes = CKH_FAULT_MODE_COMMAND,
    .modes_note = "it acts on a request to job.object_store's endpoint",
    .summary = "an object-store request loses its connection, before or after the store applies it",
    .keys_doc = "`when:` `before` (default) or `after`",
    .meaning = "command jobs with `job.object_store`, `on.op` an `s3_*` request: the connection closes "
               "with no answer, before the store applies the request or after (the client may retry a "
               "request that took effect)",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .touches_data = true,
    .parse = s3_reset_parse,
    .write = s3_reset_write,
    .arm = s3_reset_arm,
};
