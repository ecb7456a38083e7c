/* disk-full: the disk holding the checkpoint directory (or the named
 * disk) accepts only `after` more bytes, then fails writes with ENOSPC.
 * It changes the disk's state, so it is an at-rest fault: applied before
 * its run without an op trigger, at the op with one. */
#include <inttypes.h>
#include <string.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"after", "disk"};

static int disk_full_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    struct ckh_scn_action *a = &f->act;
    yaml_node_t *v;
    int rc;
    if ((v = ckh__scn_get(p, n, "after")) &&
        (rc = ckh__scn_get_size(p, v, "after", &a->u.disk_full.after_bytes)))
        return rc;
    if (!(v = ckh__scn_get(p, n, "disk")))
        return 0;
    if ((rc = ckh__scn_get_str(p, v, "disk", &a->u.disk_full.disk)))
        return rc;
    bool found = false;
    const char *names[64];
    size_t nn = 0;
    for (size_t d = 0; d < p->s->job.ndisks; d++) {
        found |= !strcmp(p->s->job.disks[d].name, a->u.disk_full.disk);
        if (nn < CKH__NKEYS(names))
            names[nn++] = p->s->job.disks[d].name;
    }
    if (found)
        return 0;
    char h[400];
    ckh__scn_hint(h, sizeof(h), a->u.disk_full.disk, names, nn);
    return ckh__scn_fail(p, v, CKH_EINVAL, "'disk' names no disk of the job: '%s'%s",
                         a->u.disk_full.disk, h);
}

static int disk_full_write(FILE *out, const struct ckh_scn_action *a)
{
    fprintf(out, "    after: %" PRIu64 "\n", a->u.disk_full.after_bytes);
    if (a->u.disk_full.disk)
        ckh_fault_write_str(out, "disk", a->u.disk_full.disk);
    return 0;
}

/* The disk accepts `after` more bytes from now on. */
static int fill_fn(struct ckh_fault_env *env, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    (void)dpath;
    const struct ckh_scn_fault *f = arg;
    uint64_t used = ckh_simfs_used_bytes(d), after = f->act.u.disk_full.after_bytes;
    ckh_fault_hit(env);
    return ckh_simfs_set_capacity(d, after >= UINT64_MAX - used ? UINT64_MAX : used + after + 1);
}

static int disk_full_apply(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node)
{
    const struct ckh_scn_job *job = &env->sc->job;
    if (!f->act.u.disk_full.disk)
        return ckh_fault_for_each_disk(env, node, job->checkpoint_dir, fill_fn, f);
    for (size_t d = 0; d < job->ndisks; d++) {
        if (strcmp(job->disks[d].name, f->act.u.disk_full.disk) != 0)
            continue;
        for (int i = 0; i < env->nnodes; i++)
            if ((node < 0 || i == node) && (i == 0 || !job->disks[d].shared))
                fill_fn(env, env->disks[d * (size_t)env->nnodes + (size_t)i], "/", f);
        return 0;
    }
    return ckh_fault_errf(env, f, CKH_EINVAL, "disk-full names no disk of the job ('%s')",
                          f->act.u.disk_full.disk);
}

static void disk_full_generate(struct ckh_fault_gen *g)
{
    ckh_fault_gen_printf(g, "  - do: disk-full\n    after: %d\n", (int)ckh_fault_gen_pick(g, 0, 1 << 16));
    if (ckh_fault_gen_chance(g, 0.5))
        ckh_fault_gen_trigger(g, ckh_fault_gen_write_op(g), g->run, false);
    else
        ckh_fault_gen_printf(g, "    on: {run: %u}\n", g->run);
}

const struct ckh_fault_ops ckh__fault_disk_full = {
    .name = "disk-full",
    .kind = CKH_SCN_ACT_DISK_FULL,
    .needs = CKH_FAULT_NEEDS_DISK_MODEL,
    .modes = CKH_FAULT_MODES_ALL,
    .summary = "the disk holding a path is full after N more bytes",
    .keys_doc = "`after:` size (default 0), `disk:` a disk name",
    .meaning = "the disk accepts only `after` more bytes, then ENOSPC",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .touches_data = true,
    .parse = disk_full_parse,
    .write = disk_full_write,
    .apply = disk_full_apply,
    .generate = disk_full_generate,
};
