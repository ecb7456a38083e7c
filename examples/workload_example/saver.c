/* example-saver: a multi-rank directory save protocol as a ckh saver
 * plugin (include/ckh/saver.h), for any workload that checkpoints through
 * job->saver (ddp-train: `job.saver: libckh_example_saver.so`).
 *
 * Layout under the output directory D, for name S (cfg->name, default
 * "example"):
 *   D/.member_<R>           rank R uses this disk (how ranks learn who shares it)
 *   D/S_<N>/                one folder per checkpoint, N = 1, 2, ...
 *   D/S_<N>/.rank_<R>       rank R's files in it are durable (written at commit)
 *   D/S_<N>/COMMITTED       "committed N world W force F\n", written last
 *   D/S.latest              "S_<N>\n", replaced atomically
 *
 * Protocol (every rank calls create, prepare and commit in the same order):
 *   create:  D is made (and its entry synced); every rank writes
 *            D/.member_<R>; after an all-reduce, the leader of this
 *            rank's view is the lowest rank whose member file it sees
 *            (rank 0 on a shared disk, every rank on node-local disks):
 *            it writes the files a view shares (view_leader) and
 *            commits. A rank whose `latest` is behind the newest any rank
 *            committed (node-local disks: it died between the vote and
 *            its own commit) finishes that commit, if its .rank_<R> is
 *            there.
 *   prepare: the ranks agree on force (sync_any: any, sync_all: all) and
 *            on N = 1 + the largest N any rank sees; every rank makes
 *            D/S_<N> in its view and syncs D; every rank learns whether
 *            all succeeded.
 *   commit:  every rank writes .rank_<R> and syncs the folder (its own
 *            files were synced by the caller); vote; the leader of each
 *            view writes the marker, then the pointer, each atomically
 *            (tmp, fsync, rename, fsync the folder), then applies
 *            retention (marker first); every rank learns the result.
 *   resume:  the newest N every rank's `latest` names, when all agree;
 *            else the oldest of them, if it is committed in every view.
 * The async strategy (every rank its own folders) is refused.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/saver.h"
#include "example.h"

#define MARKER "COMMITTED"
#define NAME_MAX_LEN 64

static const struct ckh_saver_ops example_saver;

struct exs {
    struct ckh_saver base;           /* must be first */
    struct ckh_env *env;             /* ops tables (borrowed) */
    char dir[CKH_PATH_MAX + 1];      /* output directory D */
    char name[NAME_MAX_LEN];         /* folder prefix S */
    char prefix[NAME_MAX_LEN + 2];   /* "S_" */
    char pointer[NAME_MAX_LEN + 8];  /* "S.latest" */
    int keep_last;                   /* committed non-forced folders kept (<= 0: all) */
    enum ckh_saver_strategy strategy; /* sync_any or sync_all */
    uint64_t timeout_ns;             /* collective timeout */
    int rank, world;                 /* collective rank and size */
    int leader;                      /* the rank that commits this rank's view */
    bool force;                      /* the prepared folder is a forced save */
};

static int sfail(struct exs *s, int rc, const char *what)
{
    return ckh_errf(s->base.errmsg, sizeof s->base.errmsg, rc, "%s: %s", what, ckh_strerror(rc));
}

/* ---- reading a view (shared with check, which has no instance) ---- */

/* Number of folder name S_<N> (0 if it is not one). */
static int64_t folder_num(const char *prefix, const char *name)
{
    int64_t n = 0;
    return exd_parse_num(name, prefix, &n) ? n : 0;
}

/* Reads D/S_<N>/COMMITTED: true with *force when it is this N's marker. */
static bool read_marker(struct ckh_fs *fs, const char *dir, const char *prefix, int64_t n,
                        bool *force)
{
    char path[CKH_PATH_MAX + 1], sub[NAME_MAX_LEN + 48], b[96], want[64];
    size_t len = 0;
    snprintf(sub, sizeof sub, "%s%" PRId64 "/" MARKER, prefix, n);
    if (ckh_path_join(path, sizeof path, dir, sub) || exd_read_file(fs, path, b, sizeof b - 1, &len))
        return false;
    b[len] = '\0';
    snprintf(want, sizeof want, "committed %" PRId64 " world ", n);
    if (strncmp(b, want, strlen(want)) != 0)
        return false;
    if (force)
        *force = strstr(b, " force 1") != NULL;
    return true;
}

/* The N the pointer names (0: no pointer), CKH_ECORRUPT when it names
 * anything else than a committed S_<N>. */
static int read_pointer(struct ckh_fs *fs, const char *dir, const char *prefix,
                        const char *pointer, int64_t *n, char *msg, size_t msglen)
{
    char path[CKH_PATH_MAX + 1], b[NAME_MAX_LEN + 32];
    size_t len = 0;
    *n = 0;
    if (ckh_path_join(path, sizeof path, dir, pointer))
        return ckh_errf(msg, msglen, CKH_EINVAL, "path too long");
    int rc = exd_read_file(fs, path, b, sizeof b - 1, &len);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return ckh_errf(msg, msglen, rc == CKH_ELIMIT ? CKH_ECORRUPT : rc, "%s: %s", path,
                        ckh_strerror(rc));
    b[len] = '\0';
    if (len > 0 && b[len - 1] == '\n')
        b[len - 1] = '\0';
    if ((*n = folder_num(prefix, b)) < 1)
        return ckh_errf(msg, msglen, CKH_ECORRUPT, "%s holds '%s', expected %s<N>", path, b, prefix);
    if (!read_marker(fs, dir, prefix, *n, NULL))
        return ckh_errf(msg, msglen, CKH_ECORRUPT, "%s names %s, which was never committed", path,
                        b);
    return 0;
}

/* ---- create ---- */

static void names(struct exs *s, const char *name)
{
    snprintf(s->name, sizeof s->name, "%s", name && name[0] ? name : "example");
    snprintf(s->prefix, sizeof s->prefix, "%s_", s->name);
    snprintf(s->pointer, sizeof s->pointer, "%s.latest", s->name);
}

static int make_dir(struct exs *s)
{
    struct ckh_fs *fs = s->env->fs;
    char parent[CKH_PATH_MAX + 1];
    if (ckh_fs_exists(fs, s->dir))
        return 0;
    int rc = ckh_fs_mkdirs(fs, s->dir);
    if (rc == -EEXIST)
        rc = 0;
    if (!rc && !(rc = ckh_path_dirname(s->dir, parent, sizeof parent)))
        rc = ckh_fs_fsync_dir(fs, parent);
    return rc ? sfail(s, rc, s->dir) : 0;
}

/* Marker, then pointer, in this rank's view. */
static int publish(struct exs *s, const char *folder, int64_t n, bool force)
{
    char marker[96], pointer[NAME_MAX_LEN + 32];
    int nm = snprintf(marker, sizeof marker, "committed %" PRId64 " world %d force %d\n", n,
                      s->world, force ? 1 : 0);
    int np = snprintf(pointer, sizeof pointer, "%s%" PRId64 "\n", s->prefix, n);
    int rc = exd_write_atomic(s->env->fs, folder, MARKER, marker, (size_t)nm, s->rank,
                              s->base.errmsg, sizeof s->base.errmsg);
    if (!rc)
        rc = exd_write_atomic(s->env->fs, s->dir, s->pointer, pointer, (size_t)np, s->rank,
                              s->base.errmsg, sizeof s->base.errmsg);
    return rc;
}

/* Who shares this rank's disk: every rank leaves D/.member_<R>, and the
 * lowest rank whose file this rank sees leads its view (create). */
static int find_leader(struct exs *s)
{
    char file[32], path[CKH_PATH_MAX + 1];
    snprintf(file, sizeof file, ".member_%d", s->rank);
    int rc = exd_write_file(s->env->fs, s->dir, file, "", 0, s->base.errmsg, sizeof s->base.errmsg);
    int32_t v = rc;
    int crc = ckh_coll_allreduce(s->env->coll, &v, 1, CKH_DT_I32, CKH_RED_MIN, s->timeout_ns);
    if (crc || v)
        return crc ? sfail(s, crc, "agreeing on the members") : v;
    s->leader = s->rank;
    for (int r = 0; r < s->rank && s->leader == s->rank; r++) {
        snprintf(file, sizeof file, ".member_%d", r);
        if (!ckh_path_join(path, sizeof path, s->dir, file) && ckh_fs_exists(s->env->fs, path))
            s->leader = r;
    }
    return 0;
}

/* A rank behind the newest commit of any rank finishes it (create). */
static int catch_up(struct exs *s)
{
    int64_t mine = 0, hi;
    char why[200], folder[CKH_PATH_MAX + 1], sub[NAME_MAX_LEN + 40];
    if (read_pointer(s->env->fs, s->dir, s->prefix, s->pointer, &mine, why, sizeof why))
        mine = 0;
    hi = mine;
    int rc = ckh_coll_allreduce(s->env->coll, &hi, 1, CKH_DT_I64, CKH_RED_MAX, s->timeout_ns);
    if (rc || hi <= mine)
        return rc ? sfail(s, rc, "agreeing on the newest checkpoint") : 0;
    snprintf(sub, sizeof sub, "%s%" PRId64 "/.rank_%d", s->prefix, hi, s->rank);
    if (ckh_path_join(folder, sizeof folder, s->dir, sub) || !ckh_fs_exists(s->env->fs, folder)) {
        ckh_node_logf(s->env->node, "example-saver: rank %d holds no part of %s%" PRId64
                      ", which another rank committed", s->rank, s->prefix, hi);
        return 0;
    }
    snprintf(sub, sizeof sub, "%s%" PRId64, s->prefix, hi);
    ckh_path_join(folder, sizeof folder, s->dir, sub);
    return publish(s, folder, hi, false);
}

static int exs_create(struct ckh_env *env, const struct ckh_saver_config *cfg, struct ckh_saver **out)
{
    if (!env || !cfg || !out || !cfg->output_dir || ckh_path_check(cfg->output_dir))
        return CKH_EINVAL;
    if (cfg->strategy == CKH_SAVER_ASYNC) {
        ckh_node_logf(env->node, "example-saver: the async strategy is not supported");
        return CKH_EUNSUPPORTED;
    }
    struct exs *s = ckh_calloc(env->alloc, 1, sizeof *s);
    if (!s)
        return CKH_ENOMEM;
    s->base.ops = &example_saver;
    s->env = env;
    snprintf(s->dir, sizeof s->dir, "%s", cfg->output_dir);
    names(s, cfg->name);
    s->keep_last = cfg->keep_last;
    s->strategy = cfg->strategy;
    s->timeout_ns = cfg->timeout_ns;
    s->rank = ckh_coll_rank(env->coll);
    s->world = ckh_coll_world_size(env->coll);
    int rc = make_dir(s);
    if (!rc)
        rc = find_leader(s);
    if (!rc)
        rc = catch_up(s);
    if (rc) {
        ckh_node_logf(env->node, "example-saver: %s", s->base.errmsg);
        ckh_free(env->alloc, s);
        return rc;
    }
    *out = &s->base;
    return 0;
}

static void exs_destroy(struct ckh_saver *base)
{
    struct exs *s = (struct exs *)base;
    if (s)
        ckh_free(s->env->alloc, s);
}

/* ---- prepare ---- */

/* All-reduce (min) of each rank's result, so every rank returns the same. */
static int agree(struct exs *s, int rc, const char *what)
{
    int32_t v = rc;
    int crc = ckh_coll_allreduce(s->env->coll, &v, 1, CKH_DT_I32, CKH_RED_MIN, s->timeout_ns);
    if (crc)
        return sfail(s, crc, what);
    if (v && !rc)
        ckh_errf(s->base.errmsg, sizeof s->base.errmsg, v, "%s: another rank failed (%s)", what,
                 ckh_strerror(v));
    return v;
}

/* The largest N of any folder S_<N> in this rank's view. */
static int64_t largest(struct exs *s)
{
    struct ckh_listing l = {0};
    int64_t hi = 0;
    if (ckh_fs_listdir(s->env->fs, s->dir, &l) != 0)
        return 0;
    for (size_t i = 0; i < l.count; i++) {
        int64_t n = folder_num(s->prefix, l.entries[i].name);
        if (n > hi)
            hi = n;
    }
    ckh_fs_listing_free(&l);
    return hi;
}

static int exs_prepare(struct ckh_saver *base, bool force, char *buf, size_t n)
{
    struct exs *s = (struct exs *)base;
    int64_t v[2] = {force ? 1 : 0, largest(s)};
    enum ckh_redop op = s->strategy == CKH_SAVER_SYNC_ALL ? CKH_RED_MIN : CKH_RED_MAX;
    int rc = ckh_coll_allreduce(s->env->coll, &v[0], 1, CKH_DT_I64, op, s->timeout_ns);
    if (!rc)
        rc = ckh_coll_allreduce(s->env->coll, &v[1], 1, CKH_DT_I64, CKH_RED_MAX, s->timeout_ns);
    if (rc)
        return sfail(s, rc, "agreeing on the next checkpoint");
    s->force = v[0] != 0;
    char name[NAME_MAX_LEN + 24];
    snprintf(name, sizeof name, "%s%" PRId64, s->prefix, v[1] + 1);
    rc = exd_mkdir_durable(s->env->fs, s->dir, name, s->base.errmsg, sizeof s->base.errmsg);
    if (!rc && ckh_path_join(buf, n, s->dir, name))
        rc = ckh_errf(s->base.errmsg, sizeof s->base.errmsg, CKH_EINVAL, "buffer too small");
    return agree(s, rc, "preparing the checkpoint folder");
}

/* ---- commit ---- */

static int by_num_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Folders older than n: uncommitted ones go, and committed non-forced
 * ones beyond the keep_last newest. */
static int retain(struct exs *s, int64_t n, bool force)
{
    struct ckh_fs *fs = s->env->fs;
    struct ckh_listing l = {0};
    int rc = ckh_fs_listdir(fs, s->dir, &l);
    if (rc)
        return sfail(s, rc, s->dir);
    int64_t *older = ckh_calloc(s->env->alloc, l.count + 1, sizeof *older);
    size_t k = 0;
    if (!older) {
        rc = sfail(s, CKH_ENOMEM, "retention");
        goto out_listing;
    }
    for (size_t i = 0; i < l.count; i++) {
        int64_t m = folder_num(s->prefix, l.entries[i].name);
        if (m > 0 && m < n && l.entries[i].type == CKH_FT_DIR)
            older[k++] = m;
    }
    qsort(older, k, sizeof *older, by_num_desc);
    int kept = force ? 0 : 1;
    for (size_t i = 0; i < k && !rc; i++) {
        bool forced = false, done = read_marker(fs, s->dir, s->prefix, older[i], &forced);
        if (done && (forced || s->keep_last <= 0 || kept < s->keep_last)) {
            kept += !forced;
            continue;
        }
        char name[NAME_MAX_LEN + 24];
        snprintf(name, sizeof name, "%s%" PRId64, s->prefix, older[i]);
        rc = exd_remove_folder(fs, s->dir, name, MARKER, s->base.errmsg, sizeof s->base.errmsg);
    }
    ckh_free(s->env->alloc, older);
out_listing:
    ckh_fs_listing_free(&l);
    return rc;
}

static int exs_commit(struct ckh_saver *base, const char *folder)
{
    struct exs *s = (struct exs *)base;
    char file[32], last[CKH_PATH_MAX + 1];
    const char *slash = strrchr(folder, '/');
    int64_t n = slash ? folder_num(s->prefix, slash + 1) : 0;
    if (n < 1 || ckh_path_dirname(folder, last, sizeof last) || strcmp(last, s->dir) != 0)
        return agree(s, ckh_errf(s->base.errmsg, sizeof s->base.errmsg, CKH_EINVAL,
                                 "'%s' is not a folder this saver prepared", folder),
                     "commit");
    snprintf(file, sizeof file, ".rank_%d", s->rank);
    int rc = exd_write_file(s->env->fs, folder, file, "", 0, s->base.errmsg, sizeof s->base.errmsg);
    if (!rc && (rc = ckh_fs_fsync_dir(s->env->fs, folder)) != 0)
        sfail(s, rc, folder);
    rc = agree(s, rc, "vote on the checkpoint");
    if (rc == CKH_ETIMEOUT || rc == CKH_EPEER_DEAD || rc == CKH_EMISMATCH)
        return rc;
    if (!rc && s->leader == s->rank) {
        rc = publish(s, folder, n, s->force);
        if (!rc)
            rc = retain(s, n, s->force);
    }
    return agree(s, rc, "commit");
}

/* ---- latest, check, latest_path ---- */

static int exs_latest(struct ckh_saver *base, char *buf, size_t n)
{
    struct exs *s = (struct exs *)base;
    int64_t num = 0;
    int rc = read_pointer(s->env->fs, s->dir, s->prefix, s->pointer, &num, s->base.errmsg,
                          sizeof s->base.errmsg);
    if (rc)
        return rc;
    if (num == 0)
        return ckh_errf(s->base.errmsg, sizeof s->base.errmsg, CKH_ENOTFOUND,
                        "no checkpoint committed in '%s'", s->dir);
    char name[NAME_MAX_LEN + 24];
    snprintf(name, sizeof name, "%s%" PRId64, s->prefix, num);
    return ckh_path_join(buf, n, s->dir, name) ? CKH_EINVAL : 0;
}

static int exs_resume(struct ckh_saver *base, char *buf, size_t n)
{
    struct exs *s = (struct exs *)base;
    int64_t mine = 0, v[2];
    char why[200], name[NAME_MAX_LEN + 24];
    if (read_pointer(s->env->fs, s->dir, s->prefix, s->pointer, &mine, why, sizeof why))
        mine = 0; /* a pointer that does not resolve counts as nothing committed */
    v[0] = mine;
    v[1] = -mine;
    int rc = ckh_coll_allreduce(s->env->coll, v, 2, CKH_DT_I64, CKH_RED_MIN, s->timeout_ns);
    if (rc)
        return sfail(s, rc, "agreeing on the resume point");
    int64_t lo = v[0], hi = -v[1];
    /* After create's catch-up the views agree; if one could not catch up,
     * the oldest pointer is the newest checkpoint every view may hold. */
    int32_t have = lo > 0 && (lo == hi || read_marker(s->env->fs, s->dir, s->prefix, lo, NULL));
    rc = ckh_coll_allreduce(s->env->coll, &have, 1, CKH_DT_I32, CKH_RED_MIN, s->timeout_ns);
    if (rc)
        return sfail(s, rc, "agreeing on the resume point");
    if (!have)
        return ckh_errf(s->base.errmsg, sizeof s->base.errmsg, CKH_ENOTFOUND,
                        "no checkpoint is committed in every rank's view of '%s'", s->dir);
    snprintf(name, sizeof name, "%s%" PRId64, s->prefix, lo);
    return ckh_path_join(buf, n, s->dir, name) ? CKH_EINVAL : 0;
}

static int exs_view_leader(struct ckh_saver *base)
{
    return ((struct exs *)base)->leader;
}

static int exs_check(struct ckh_fs *fs, const struct ckh_saver_config *cfg, int rank, int world,
                     char *buf, size_t n, char *msg, size_t msglen)
{
    struct exs s = {0};
    int64_t num = 0;
    (void)world;
    if (!cfg || !cfg->output_dir)
        return CKH_EINVAL;
    snprintf(s.dir, sizeof s.dir, "%s", cfg->output_dir);
    names(&s, cfg->name);
    int rc = read_pointer(fs, s.dir, s.prefix, s.pointer, &num, msg, msglen);
    if (rc)
        return rc;
    if (num == 0) {
        snprintf(buf, n, "%s", "");
        snprintf(msg, msglen, "rank %d: nothing committed yet", rank);
        return 0;
    }
    char name[NAME_MAX_LEN + 24];
    snprintf(name, sizeof name, "%s%" PRId64, s.prefix, num);
    if (ckh_path_join(buf, n, s.dir, name))
        return CKH_EINVAL;
    snprintf(msg, msglen, "rank %d: %s/%s names %s, committed", rank, s.dir, s.pointer, name);
    return 0;
}

static int exs_latest_path(const struct ckh_saver_config *cfg, char *buf, size_t n)
{
    struct exs s = {0};
    if (!cfg || !cfg->output_dir)
        return CKH_EINVAL;
    snprintf(s.dir, sizeof s.dir, "%s", cfg->output_dir);
    names(&s, cfg->name);
    return ckh_path_join(buf, n, s.dir, s.pointer) ? CKH_EINVAL : 0;
}

static const struct ckh_saver_ops example_saver = {
    .version = 1,
    .name = "example-saver",
    .create = exs_create,
    .destroy = exs_destroy,
    .prepare = exs_prepare,
    .commit = exs_commit,
    .latest = exs_latest,
    .check = exs_check,
    .latest_path = exs_latest_path,
    .resume = exs_resume,
    .view_leader = exs_view_leader,
};

CKH_SAVER_PLUGIN(example_saver)
