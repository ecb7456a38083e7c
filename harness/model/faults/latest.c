/* What dangling-latest and stale-latest share: the `path:` key (the
 * pointer; default the workload's latest pointer) and replacing it at
 * rest. A pointer is a symbolic link, or a small regular file holding a
 * checkpoint's name (how real programs often keep `latest`). */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/simfs.h"
#include "model/fault.h"
#include "model/reader.h"

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

/* The name's shape: what precedes its last run of digits (prefix, plen
 * bytes), the number, and what follows (suffix). False without digits. */
static bool name_shape(const char *nm, size_t *plen, long *num, const char **suffix)
{
    const char *end = NULL, *start = NULL;
    for (const char *c = nm; *c; c++)
        if (*c >= '0' && *c <= '9') {
            if (!end || c != end)
                start = c;
            end = c + 1;
        }
    if (!start)
        return false;
    *plen = (size_t)(start - nm);
    *num = strtol(start, NULL, 10);
    *suffix = end;
    return true;
}

/* The oldest checkpoint beside the pointer other than its target: the
 * entry of the target's type (folder or file) and shape ("step_8.pt":
 * "step_" digits ".pt"; without digits, any name) with the smallest
 * number; names starting with '.' (temporary files) are skipped. The
 * target keeps its form: "/ckpt/ddp_checkpoint_2" becomes
 * "/ckpt/ddp_checkpoint_1", "step_8.pt" becomes "step_4.pt". */
static bool oldest_sibling(struct ckh_fs *fs, const char *dpath, char *target, size_t n)
{
    char dir[CKH_PATH_MAX], tpath[CKH_PATH_MAX * 2];
    struct ckh_listing l;
    struct ckh_stat ts;
    ckh_path_dirname(dpath, dir, sizeof dir);
    const char *tslash = strrchr(target, '/');
    const char *tbase = tslash ? tslash + 1 : target;
    size_t tdirlen = (size_t)(tbase - target);
    if (target[0] == '/')
        snprintf(tpath, sizeof tpath, "%s", target);
    else
        snprintf(tpath, sizeof tpath, "%s/%s", strcmp(dir, "/") ? dir : "", target);
    enum ckh_ftype type = ckh_fs_stat(fs, tpath, &ts) == 0 ? ts.type : CKH_FT_DIR;
    size_t tplen = 0;
    long tnum;
    const char *tsuf = "";
    bool shaped = name_shape(tbase, &tplen, &tnum, &tsuf);
    const char *base = strrchr(dpath, '/');
    base = base ? base + 1 : dpath;
    if (ckh_fs_listdir(fs, dir, &l) != 0)
        return false;
    const char *best = NULL;
    long best_num = -1;
    for (size_t i = 0; i < l.count; i++) {
        const char *nm = l.entries[i].name;
        size_t plen;
        long num = 0;
        const char *suf;
        if (l.entries[i].type != type || strcmp(nm, tbase) == 0 || strcmp(nm, base) == 0 || nm[0] == '.')
            continue;
        if (shaped && (!name_shape(nm, &plen, &num, &suf) || plen != tplen || strncmp(nm, tbase, plen) ||
                       strcmp(suf, tsuf)))
            continue;
        if (!shaped) { /* any name: its trailing number, if any, orders it */
            const char *u = strrchr(nm, '_');
            num = u ? strtol(u + 1, NULL, 10) : 0;
        }
        if (!best || num < best_num) {
            best = nm;
            best_num = num;
        }
    }
    if (best) {
        char form[CKH_PATH_MAX];
        snprintf(form, sizeof form, "%.*s%s", (int)tdirlen, target, best);
        snprintf(target, n, "%s", form);
    }
    ckh_fs_listing_free(&l);
    return best != NULL;
}

/* A name of the target's shape that names nothing ("step_8.pt" ->
 * "step_1000008.pt"), else "missing_checkpoint_SEED". */
static void missing_name(const char *target, uint64_t seed, char *out, size_t n)
{
    size_t plen;
    long num;
    const char *suf;
    const char *slash = strrchr(target, '/');
    const char *tbase = slash ? slash + 1 : target;
    if (name_shape(tbase, &plen, &num, &suf))
        snprintf(out, n, "%.*s%ld%s", (int)(tbase - target + (ptrdiff_t)plen), target, num + 1000000, suf);
    else
        snprintf(out, n, "%.*smissing_checkpoint_%" PRIu64, (int)(tbase - target), target, seed);
}

/* The pointer at dpath: a symbolic link (its target), or a small regular
 * file holding a name (DeepSpeed's `latest`, a program's own). 1 link,
 * 2 file (*nl: its content ended with a newline), 0 none. */
static int read_pointer(struct ckh_fs *fs, const char *dpath, char *target, size_t n, bool *nl)
{
    int64_t len = ckh_fs_readlink(fs, dpath, target, n - 1);
    if (len >= 0) {
        target[len] = '\0';
        return 1;
    }
    struct ckh_stat st;
    struct ckh_file *f = NULL;
    if (ckh_fs_stat(fs, dpath, &st) != 0 || st.type != CKH_FT_FILE || st.size_bytes == 0 || st.size_bytes >= n ||
        ckh_fs_open(fs, dpath, CKH_O_RDONLY, &f) != 0)
        return 0;
    int rc = ckh_file_pread_all(f, target, (size_t)st.size_bytes, 0);
    ckh_file_close(f);
    if (rc)
        return 0;
    target[st.size_bytes] = '\0';
    *nl = target[st.size_bytes - 1] == '\n';
    target[strcspn(target, "\r\n")] = '\0';
    return target[0] && !strchr(target, '/') ? 2 : 0;
}

/* Replaces the pointer at dpath (dangling: to a missing checkpoint;
 * stale: to the oldest sibling). No pointer yet: nothing to damage. */
static int relink_fn(struct ckh_fault_env *env, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    const struct ckh_scn_fault *f = arg;
    struct ckh_fs *fs = ckh_simfs_fs(d);
    char target[CKH_PATH_MAX], to[CKH_PATH_MAX + 16];
    bool nl = false;
    int kind = read_pointer(fs, dpath, target, sizeof target, &nl);
    if (kind == 0)
        return 0;
    if (f->act.kind == CKH_SCN_ACT_DANGLING_LATEST)
        missing_name(target, env->sc->seed, to, sizeof to);
    else if (oldest_sibling(fs, dpath, target, sizeof target))
        snprintf(to, sizeof to, "%s", target);
    else
        return 0;
    int rc = ckh_fs_unlink(fs, dpath);
    if (rc == 0 && kind == 1) {
        rc = ckh_fs_symlink(fs, to, dpath);
    } else if (rc == 0) {
        struct ckh_file *w = NULL;
        if ((rc = ckh_fs_open(fs, dpath, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &w)) == 0) {
            if (nl)
                strcat(to, "\n");
            rc = ckh_file_write_all(w, to, strlen(to));
            int crc = ckh_file_close(w);
            rc = rc ? rc : crc;
        }
    }
    ckh_simfs_sync_all(d);
    if (rc)
        return ckh_errf(env->err, env->errlen, rc, "cannot rewrite %s: %s", dpath, ckh_strerror(rc));
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
