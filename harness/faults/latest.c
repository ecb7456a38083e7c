/* What dangling-latest and stale-latest share: the `path:` key (the link;
 * default the workload's latest pointer) and replacing the link at rest. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "faults/fault.h"
#include "scenario/reader.h"

int ckh__fault_parse_latest(struct ckh__scn_reader *p, const struct yaml_node_s *n,
                            struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "path");
    return v ? ckh__scn_get_sim_path(p, v, "path", &f->act.u.latest.path) : 0;
}

int ckh__fault_write_latest(FILE *out, const struct ckh_scn_action *a)
{
    if (a->u.latest.path)
        ckh_fault_write_str(out, "path", a->u.latest.path);
    return 0;
}

/* The oldest checkpoint folder beside the link other than its target:
 * names sort with their numbers, so the smallest numeric suffix. */
static bool oldest_sibling(struct ckh_fs *fs, const char *dpath, char *target, size_t n)
{
    char dir[CKH_PATH_MAX];
    struct ckh_listing l;
    ckh_path_dirname(dpath, dir, sizeof dir);
    if (ckh_fs_listdir(fs, dir, &l) != 0)
        return false;
    const char *best = NULL;
    long best_num = -1;
    for (size_t i = 0; i < l.count; i++) {
        const char *nm = l.entries[i].name;
        if (l.entries[i].type != CKH_FT_DIR || strcmp(nm, target) == 0)
            continue;
        const char *u = strrchr(nm, '_');
        long num = u ? strtol(u + 1, NULL, 10) : 0;
        if (!best || num < best_num) {
            best = nm;
            best_num = num;
        }
    }
    if (best)
        snprintf(target, n, "%s", best);
    ckh_fs_listing_free(&l);
    return best != NULL;
}

/* Replaces the link at dpath (dangling: to a missing folder; stale: to the
 * oldest sibling). No link yet: nothing to damage. */
static int relink_fn(struct ckh_fault_env *env, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    const struct ckh_scn_fault *f = arg;
    struct ckh_fs *fs = ckh_simfs_fs(d);
    char target[CKH_PATH_MAX];
    if (ckh_fs_readlink(fs, dpath, target, sizeof target) < 0)
        return 0;
    if (f->act.kind == CKH_SCN_ACT_DANGLING_LATEST)
        snprintf(target, sizeof target, "missing_checkpoint_%" PRIu64, env->sc->seed);
    else if (!oldest_sibling(fs, dpath, target, sizeof target))
        return 0;
    ckh_fs_unlink(fs, dpath);
    int rc = ckh_fs_symlink(fs, target, dpath);
    ckh_simfs_sync_all(d);
    if (rc)
        return ckh_errf(env->err, env->errlen, rc, "cannot relink %s: %s", dpath, ckh_strerror(rc));
    ckh_fault_hit(env);
    return 0;
}

int ckh__fault_apply_latest(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node)
{
    char link[CKH_PATH_MAX];
    if (f->act.u.latest.path)
        snprintf(link, sizeof link, "%s", f->act.u.latest.path);
    else if (!env->latest_link || env->latest_link(env->inst, link, sizeof link) != 0)
        return ckh_fault_errf(env, f, CKH_EINVAL, "workload '%s' keeps no latest pointer",
                              env->sc->job.workload);
    return ckh_fault_for_each_disk(env, node, link, relink_fn, f);
}

void ckh__fault_generate_latest(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "    on: {run: %u}\n", g->run < 2 ? 2 : g->run);
}
