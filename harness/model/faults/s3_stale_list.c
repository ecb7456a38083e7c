/* s3-stale-list: one listing of a command job's object store leaves out
 * the keys written in its last `ops` operations, as a store whose listings
 * lag behind writes does (docs/OBJECT_STORE.md, "Faults"). The job-wide
 * consistency settings (list-delay, eventual) make every listing lag; this
 * fault makes only the listings its trigger selects (node, key glob, nth,
 * step) lag, so a protocol that trusts a listing right after writing is
 * exposed by one request. The store's model does the omission (O9 in
 * sim/objstore.c, omit_newer_ops); nothing at rest changes. */
#include <errno.h>
#include <inttypes.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"ops"};

/* The lag when the scenario gives none: the store's own default lag for
 * the lagging consistency settings (delay_ops 0 means 8, sim/objstore.c). */
#define S3_STALE_LIST_DEFAULT_OPS 8u

static int s3_stale_list_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "ops");
    if (f->on.op != CKH_OP_S3_LIST)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: s3-stale-list' needs 'on.op: s3_list' (a listing of the "
                                               "object store)");
    f->act.u.stale_list.ops = S3_STALE_LIST_DEFAULT_OPS;
    return v ? ckh__scn_get_u64(p, v, "ops", 1, &f->act.u.stale_list.ops) : 0;
}

static int s3_stale_list_write(FILE *out, const struct ckh_scn_action *a)
{
    fprintf(out, "    ops: %" PRIu64 "\n", a->u.stale_list.ops);
    return 0;
}

/* Carried as an errno the command executor reads as a stale listing
 * (harness/exec/command_fault.c: ESTALE), the lag read from the
 * scenario's fault, as s3-reset carries its `when`. */
static void s3_stale_list_arm(const struct ckh_scn_fault *f, struct ckh_fault_rule *r)
{
    (void)f;
    r->action.kind = CKH_FAULT_ERRNO;
    r->action.err = ESTALE;
}

const struct ckh_fault_ops ckh__fault_s3_stale_list = {
    .name = "s3-stale-list",
    .kind = CKH_SCN_ACT_S3_STALE_LIST,
    .modes = CKH_FAULT_MODE_COMMAND,
    .modes_note = "it acts on a listing of job.object_store's endpoint",
    .summary = "one listing of the object store leaves out the keys written in its last operations",
    .keys_doc = "`ops:` operations of the store (default 8, at least 1)",
    .meaning = "command jobs with `job.object_store`, `on.op: s3_list`: the listing leaves out every key "
               "written or deleted in the store's last `ops` operations (a new key is missing, a "
               "rewritten or deleted one too), as a listing that lags behind writes does",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .parse = s3_stale_list_parse,
    .write = s3_stale_list_write,
    .arm = s3_stale_list_arm,
};
