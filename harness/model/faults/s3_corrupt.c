/* s3-corrupt: an object of job.object_store is damaged at rest (bit rot;
 * its ETag is kept): the byte at `offset` is flipped, before run `on.run`
 * starts (no op trigger) or when the trigger matches (docs/OBJECT_STORE.md,
 * "Faults"). */
#include <inttypes.h>

#include <string.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"path", "offset"};

static int s3_corrupt_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "path");
    const char *path = NULL;
    int rc;
    if (!v)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: s3-corrupt' needs 'path' (/BUCKET/KEY)");
    if ((rc = ckh__scn_get_str(p, v, "path", &path)))
        return rc;
    const char *slash = path[0] == '/' ? strchr(path + 1, '/') : NULL;
    if (!slash || slash == path + 1 || slash[1] == '\0')
        return ckh__scn_fail(p, v, CKH_EINVAL, "'path' of 'do: s3-corrupt' expects /BUCKET/KEY, got '%s'", path);
    f->act.u.corrupt.path = path;
    f->act.u.corrupt.offset = 0;
    if ((v = ckh__scn_get(p, n, "offset")) && (rc = ckh__scn_get_u64(p, v, "offset", 0, &f->act.u.corrupt.offset)))
        return rc;
    return 0;
}

static int s3_corrupt_write(FILE *out, const struct ckh_scn_action *a)
{
    if (!a->u.corrupt.path)
        return CKH_EINVAL;
    ckh_fault_write_str(out, "path", a->u.corrupt.path);
    fprintf(out, "    offset: %" PRIu64 "\n", a->u.corrupt.offset);
    return 0;
}

static int s3_corrupt_apply(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node)
{
    (void)node;
    return ckh_fault_store_change(env, f, f->act.u.corrupt.path, true, f->act.u.corrupt.offset);
}

const struct ckh_fault_ops ckh__fault_s3_corrupt = {
    .name = "s3-corrupt",
    .kind = CKH_SCN_ACT_S3_CORRUPT,
    .modes = CKH_FAULT_MODE_COMMAND,
    .modes_note = "it damages an object of job.object_store",
    .summary = "an object of the object store is damaged at rest (bit rot, its ETag kept)",
    .keys_doc = "`path:` /BUCKET/KEY (required), `offset:` byte (default 0; past the end: the last byte)",
    .meaning = "command jobs with `job.object_store`: the byte at `offset` of the object is flipped, its ETag "
               "kept as bit rot keeps it; a key that is not there is left alone",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .needs = CKH_FAULT_NEEDS_DISK_MODEL, /* an at-rest fault (registry.c): command jobs, whose disks are simfs's */
    .touches_data = true,
    .parse = s3_corrupt_parse,
    .write = s3_corrupt_write,
    .apply = s3_corrupt_apply,
};
