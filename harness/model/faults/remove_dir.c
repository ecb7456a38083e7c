/* remove-dir: a directory tree is missing at start (no op trigger) or is
 * removed when the trigger matches. */
#include <errno.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/simfs.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"path"};

static int remove_dir_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "path");
    if (!v)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'do: remove-dir' needs 'path' (the directory)");
    return ckh__scn_get_sim_path(p, v, "path", &f->act.u.remove_dir.path);
}

static int remove_dir_write(FILE *out, const struct ckh_scn_action *a)
{
    if (!a->u.remove_dir.path)
        return CKH_EINVAL;
    ckh_fault_write_str(out, "path", a->u.remove_dir.path);
    return 0;
}

/* A disk's root cannot go (it is where the disk is mounted): removing it
 * removes everything in it, as emptying a checkpoint directory that is a
 * mount point would. */
static int empty_root(struct ckh_simfs *d)
{
    struct ckh_fs *fs = ckh_simfs_fs(d);
    struct ckh_listing l;
    int rc = ckh_fs_listdir(fs, "/", &l);
    if (rc)
        return rc;
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        char p[CKH_PATH_MAX + 1];
        if ((rc = ckh_path_join(p, sizeof p, "/", l.entries[i].name)) != 0)
            break;
        rc = l.entries[i].type == CKH_FT_DIR ? ckh_simfs_remove_tree(d, p) : ckh_fs_unlink(fs, p);
    }
    ckh_fs_listing_free(&l);
    ckh_simfs_sync_all(d);
    return rc;
}

static int remove_fn(struct ckh_fault_env *env, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    const struct ckh_scn_fault *f = arg;
    int rc = strcmp(dpath, "/") ? ckh_simfs_remove_tree(d, dpath) : empty_root(d);
    if (rc == 0)
        ckh_fault_hit(env);
    if (rc == -ENOENT)
        return 0; /* nothing there to remove */
    if (rc)
        return ckh_fault_errf(env, f, rc, "remove-dir %s: %s", f->act.u.remove_dir.path, ckh_strerror(rc));
    return 0;
}

static int remove_dir_apply(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node)
{
    return ckh_fault_for_each_disk(env, node, f->act.u.remove_dir.path, remove_fn, f);
}

static void remove_dir_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: remove-dir\n    path: /ckpt\n    on: {run: %u}\n",
                         g->run < 2 ? 2 : g->run);
}

const struct ckh_fault_ops ckh__fault_remove_dir = {
    .name = "remove-dir",
    .kind = CKH_SCN_ACT_REMOVE_DIR,
    .needs = CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .summary = "a directory is missing at start or removed during the run",
    .keys_doc = "`path:` (required)",
    .meaning = "remove a directory tree",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .touches_data = true,
    .parse = remove_dir_parse,
    .write = remove_dir_write,
    .apply = remove_dir_apply,
    .generate = remove_dir_generate,
};
