/* s3-expire: an object of job.object_store is deleted at rest, as a
 * lifecycle rule or a cleanup job deletes what looks temporary: before run
 * `on.run` starts (no op trigger), or when the trigger matches
 * (docs/OBJECT_STORE.md, "Faults"). */
#include <string.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"path"};

/* path: "/BUCKET/KEY" (shared with s3-corrupt's parser, which reads the
 * same key the same way). */
static int s3_expire_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "path");
    const char *path = NULL;
    int rc;
    if (!v)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: s3-expire' needs 'path' (/BUCKET/KEY)");
    if ((rc = ckh__scn_get_str(p, v, "path", &path)))
        return rc;
    const char *slash = path[0] == '/' ? strchr(path + 1, '/') : NULL;
    if (!slash || slash == path + 1 || slash[1] == '\0')
        return ckh__scn_fail(p, v, CKH_EINVAL, "'path' of 'do: s3-expire' expects /BUCKET/KEY, got '%s'", path);
    f->act.u.remove_dir.path = path;
    return 0;
}

static int s3_expire_write(FILE *out, const struct ckh_scn_action *a)
{
    if (!a->u.remove_dir.path)
        return CKH_EINVAL;
    ckh_fault_write_str(out, "path", a->u.remove_dir.path);
    return 0;
}

static int s3_expire_apply(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node)
{
    (void)node;
    return ckh_fault_store_change(env, f, f->act.u.remove_dir.path, false, 0);
}

const struct ckh_fault_ops ckh__fault_s3_expire = {
    .name = "s3-expire",
    .kind = CKH_SCN_ACT_S3_EXPIRE,
    .modes = CKH_FAULT_MODE_COMMAND,
    .modes_note = "it deletes an object of job.object_store",
    .summary = "an object of the object store is deleted at rest (a lifecycle rule)",
    .keys_doc = "`path:` /BUCKET/KEY (required)",
    .meaning = "command jobs with `job.object_store`: the object is deleted at once, everywhere (a lifecycle "
               "rule or a cleanup job); a key that is not there is left alone",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .needs = CKH_FAULT_NEEDS_DISK_MODEL, /* an at-rest fault (registry.c): command jobs, whose disks are simfs's */
    .touches_data = true,
    .parse = s3_expire_parse,
    .write = s3_expire_write,
    .apply = s3_expire_apply,
};
