/* The atomic directory saver (see include/ckh/atomic.h).
 *
 * Layout under the output directory D, for saver name S (async: S is
 * "<name>_rank_<R>"):
 *   D/S_checkpoint_<N>[_force]/         one folder per checkpoint, N = 1, 2, ...
 *   D/S_checkpoint_<N>/.ckh_committed   commit marker, written last
 *   D/S.latest_checkpoint -> D/S_checkpoint_<N>   the pointer (absolute target)
 *   D/S.latest_checkpoint.tmp.<node>.<hex>        a pointer being replaced
 *
 * Protocol (sync strategies: every rank calls each step; async: each rank
 * alone, as its own master):
 *   create:  all-gather {strategy, is_master}: every rank must agree on the
 *            strategy and (sync) exactly one rank is master; a missing D is
 *            created and its entry fsynced up to the root.
 *   prepare: vote force_save with an all-reduce (sync_any: max, sync_all:
 *            min); barrier; the master cleans up (removes temporary links,
 *            every folder without a commit marker except the one the pointer
 *            names, and every folder newer than it), then makes folder
 *            N = (largest N ever seen) + 1; the folder's path is broadcast
 *            from the master; barrier.
 *   (every rank writes its files into the folder and fsyncs them)
 *   commit:  barrier; the master writes the commit marker atomically (this
 *            fsyncs the folder, making every file's entry durable), fsyncs D
 *            (the folder's entry), creates a temporary link, renames it over
 *            the pointer, fsyncs D; only then applies retention: committed
 *            non-forced folders beyond the newest keep_last are deleted,
 *            each by removing its marker first (fsync), then its files, then
 *            the folder, then a final fsync of D; barrier.
 * Crash outcomes: before the pointer's rename is durable the pointer names
 * the previous committed folder; afterwards the new one, which is complete
 * and durable. Retention runs only after the new pointer is durable and
 * never touches the folder the pointer names, so at least min(keep_last,
 * committed so far) committed folders exist at every point. A half-deleted
 * folder has lost its marker first and is removed by the next prepare.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/atomic.h"
#include "ckh/err.h"

#define ADIR_NAME_MAX 200

struct ckh_adir {
    struct ckh_env *env;             /* ops tables (borrowed) */
    struct ckh_atomic at;            /* atomic saver for the marker, temp-link names */
    char out_dir[CKH_PATH_MAX + 1];  /* output directory */
    char name[ADIR_NAME_MAX + 32];   /* effective saver name */
    char link_path[CKH_PATH_MAX + 1]; /* D/S.latest_checkpoint */
    bool is_master;                  /* writes marker, pointer, does retention */
    int master_rank;                 /* rank of the master (sync) */
    int keep_last;                   /* -1 unlimited */
    enum ckh_adir_strategy strategy; /* agreed strategy */
    uint64_t timeout_ns;             /* collective timeout */
    const struct ckh_defect_set *defects; /* borrowed */
    int rank;                        /* collective rank */
    int world;                       /* world size */
    char errmsg[512];                /* last error */
};

struct folder {
    uint64_t n;      /* checkpoint number */
    bool force;      /* _force suffix */
    bool committed;  /* marker present */
    char *name;      /* basename (malloc'd from env->alloc) */
};

static int dfail(struct ckh_adir *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int dfail(struct ckh_adir *d, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    code = ckh_verrf(d->errmsg, sizeof d->errmsg, code, fmt, ap);
    va_end(ap);
    return code;
}

static bool sync_mode(const struct ckh_adir *d)
{
    return d->strategy != CKH_ADIR_ASYNC && d->world > 1;
}

static bool no_fsync(const struct ckh_adir *d)
{
    return ckh_defect_on(d->defects, CKH_DEFECT_NO_FSYNC);
}

static int sync_dir(struct ckh_adir *d, const char *dir)
{
    if (no_fsync(d))
        return 0;
    int rc = ckh_fs_fsync_dir(d->env->fs, dir);
    return rc ? dfail(d, rc, "fsync directory '%s': %s", dir, ckh_strerror(rc)) : 0;
}

/* Every rank agrees on the strategy and, in the synchronous strategies,
 * on exactly one master (whose rank d->master_rank becomes). */
static int adir_agree(struct ckh_adir *d, const struct ckh_adir_config *cfg, const char *name)
{
    struct ckh_env *env = d->env;
    int32_t mine[2] = {(int32_t)cfg->strategy, d->is_master ? 1 : 0};
    int32_t *all = ckh_calloc(env->alloc, (size_t)d->world, sizeof mine);
    int rc;
    if (!all)
        return CKH_ENOMEM;
    rc = ckh_coll_allgather(env->coll, mine, all, sizeof mine, cfg->timeout_ns);
    if (!rc) {
        int masters = 0;
        d->master_rank = d->rank;
        for (int r = 0; r < d->world && !rc; r++) {
            if (all[2 * r] != mine[0])
                rc = CKH_EMISMATCH;
            if (all[2 * r + 1]) {
                masters++;
                if (cfg->strategy != CKH_ADIR_ASYNC)
                    d->master_rank = r;
            }
        }
        if (!rc && cfg->strategy != CKH_ADIR_ASYNC && masters != 1)
            rc = CKH_EMISMATCH;
    }
    ckh_free(env->alloc, all);
    if (rc) /* the message would be lost with d; say it through the node log */
        ckh_node_logf(env->node, "atomic directory '%s': ranks disagree on strategy or master (%s)",
                      name, ckh_err_name(rc));
    return rc;
}

/* The master creates a missing output directory and makes its entry (and
 * its parents') durable, else a crash could take every checkpoint with it. */
static int adir_make_dir(struct ckh_adir *d)
{
    struct ckh_env *env = d->env;
    char dir[CKH_PATH_MAX + 1];
    int rc;
    if (!d->is_master || ckh_fs_exists(env->fs, d->out_dir))
        return 0;
    rc = ckh_fs_mkdirs(env->fs, d->out_dir);
    snprintf(dir, sizeof dir, "%s", d->out_dir);
    while (!rc && strcmp(dir, "/") != 0 && !no_fsync(d)) {
        char parent[CKH_PATH_MAX + 1];
        rc = ckh_path_dirname(dir, parent, sizeof parent);
        if (!rc)
            rc = ckh_fs_fsync_dir(env->fs, parent);
        snprintf(dir, sizeof dir, "%s", parent);
    }
    return rc;
}

int ckh_adir_create(struct ckh_env *env, const struct ckh_adir_config *cfg, struct ckh_adir **out)
{
    if (!env || !env->fs || !cfg || !out || !cfg->output_dir || ckh_path_check(cfg->output_dir) ||
        cfg->keep_last < -1 || cfg->keep_last == 0 || cfg->strategy > CKH_ADIR_ASYNC)
        return CKH_EINVAL;
    const char *name = cfg->name ? cfg->name : "AtomicDirectory";
    size_t nlen = strlen(name);
    if (!nlen || nlen > ADIR_NAME_MAX || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
        return CKH_EINVAL;
    if (strlen(cfg->output_dir) + ADIR_NAME_MAX + 96 > CKH_PATH_MAX)
        return CKH_EINVAL;
    struct ckh_adir *d = ckh_calloc(env->alloc, 1, sizeof *d);
    if (!d)
        return CKH_ENOMEM;
    int rc = ckh_atomic_init(&d->at, env, cfg->defects);
    if (rc)
        goto out_free;
    d->env = env;
    snprintf(d->out_dir, sizeof d->out_dir, "%s", cfg->output_dir);
    d->keep_last = cfg->keep_last;
    d->strategy = cfg->strategy;
    d->timeout_ns = cfg->timeout_ns;
    d->defects = cfg->defects;
    d->rank = ckh_coll_rank(env->coll);
    d->world = ckh_coll_world_size(env->coll);
    if (d->rank < 0 || d->world < 1 || d->rank >= d->world) {
        rc = d->rank < 0 ? d->rank : d->world < 0 ? d->world : CKH_EINVAL;
        goto out_free;
    }
    d->is_master = cfg->strategy == CKH_ADIR_ASYNC ? true : cfg->is_master;
    if (cfg->strategy == CKH_ADIR_ASYNC)
        snprintf(d->name, sizeof d->name, "%s_rank_%d", name, d->rank);
    else
        snprintf(d->name, sizeof d->name, "%s", name);
    int plen = snprintf(d->link_path, sizeof d->link_path, "%s/%s.latest_checkpoint",
                        strcmp(d->out_dir, "/") == 0 ? "" : d->out_dir, d->name);
    if (plen < 0 || (size_t)plen >= sizeof d->link_path) {
        rc = CKH_EINVAL;
        goto out_free;
    }

    if ((rc = adir_agree(d, cfg, name)) != 0 || (rc = adir_make_dir(d)) != 0)
        goto out_free;
    *out = d;
    return 0;

out_free:
    ckh_free(env->alloc, d);
    return rc;
}

void ckh_adir_destroy(struct ckh_adir *d)
{
    if (d)
        ckh_free(d->env->alloc, d);
}

const char *ckh_adir_errmsg(const struct ckh_adir *d)
{
    return d ? d->errmsg : "";
}

const char *ckh_adir_name(const struct ckh_adir *d)
{
    return d ? d->name : "";
}

/* Parses "<S>_checkpoint_<N>[_force]"; false for anything else. */
static bool parse_folder(const struct ckh_adir *d, const char *nm, uint64_t *n, bool *force)
{
    size_t sl = strlen(d->name);
    if (strncmp(nm, d->name, sl) != 0 || strncmp(nm + sl, "_checkpoint_", 12) != 0)
        return false;
    const char *p = nm + sl + 12;
    if (*p < '0' || *p > '9')
        return false;
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '\0')
        *force = false;
    else if (strcmp(p, "_force") == 0)
        *force = true;
    else
        return false;
    *n = v;
    return true;
}

static int cmp_folder(const void *a, const void *b)
{
    const struct folder *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void free_folders(struct ckh_adir *d, struct folder *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ckh_free(d->env->alloc, f[i].name);
    ckh_free(d->env->alloc, f);
}

/* Lists this saver's folders, ascending N, with their commit state. */
static int scan_folders(struct ckh_adir *d, struct folder **out, size_t *count)
{
    struct ckh_listing l = {0};
    int rc = ckh_atomic_listdir(d->env->fs, d->env->alloc, d->out_dir, &l);
    if (rc)
        return dfail(d, rc, "listdir '%s': %s", d->out_dir, ckh_strerror(rc));
    struct folder *f = ckh_calloc(d->env->alloc, l.count ? l.count : 1, sizeof *f);
    size_t n = 0;
    if (!f) {
        rc = CKH_ENOMEM;
        goto out_listing;
    }
    for (size_t i = 0; i < l.count; i++) {
        uint64_t num;
        bool force;
        if (l.entries[i].type != CKH_FT_DIR || !parse_folder(d, l.entries[i].name, &num, &force))
            continue;
        char marker[CKH_PATH_MAX + 1];
        int len = snprintf(marker, sizeof marker, "%s/%s/%s", d->out_dir, l.entries[i].name,
                           CKH_ADIR_COMMIT_MARKER);
        if (len < 0 || (size_t)len >= sizeof marker)
            continue;
        f[n].name = ckh_strdup(d->env->alloc, l.entries[i].name);
        if (!f[n].name) {
            rc = CKH_ENOMEM;
            free_folders(d, f, n);
            goto out_listing;
        }
        f[n].n = num;
        f[n].force = force;
        f[n].committed = ckh_fs_exists(d->env->fs, marker);
        n++;
    }
    qsort(f, n, sizeof *f, cmp_folder);
    *out = f;
    *count = n;
out_listing:
    ckh_atomic_listing_free(d->env->alloc, &l);
    return rc;
}

/* Reads the pointer's target basename into buf ("" when there is none). */
static int read_pointer(struct ckh_adir *d, char *buf, size_t n)
{
    char target[CKH_PATH_MAX + 1];
    buf[0] = '\0';
    int64_t len = ckh_fs_readlink(d->env->fs, d->link_path, target, sizeof target);
    if (len == -ENOENT || len == CKH_ENOTFOUND)
        return 0;
    if (len < 0)
        return dfail(d, (int)len, "readlink '%s': %s", d->link_path, ckh_strerror((int)len));
    if ((size_t)len >= sizeof target)
        return dfail(d, CKH_ECORRUPT, "pointer '%s' target too long", d->link_path);
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    if (strlen(base) >= n)
        return dfail(d, CKH_ECORRUPT, "pointer '%s' target too long", d->link_path);
    strcpy(buf, base);
    return 0;
}

/* Removes a folder: marker first (made durable), then the rest, then the
 * folder itself. Subdirectories are removed recursively. */
static int remove_tree(struct ckh_adir *d, const char *path, bool top)
{
    struct ckh_fs *fs = d->env->fs;
    int rc;
    if (top) {
        char marker[CKH_PATH_MAX + 1];
        if (ckh_path_join(marker, sizeof marker, path, CKH_ADIR_COMMIT_MARKER))
            return CKH_EINVAL;
        rc = ckh_fs_unlink(fs, marker);
        if (rc == 0) {
            rc = sync_dir(d, path);
            if (rc)
                return rc;
        } else if (rc != -ENOENT) {
            return dfail(d, rc, "unlink '%s': %s", marker, ckh_strerror(rc));
        }
    }
    struct ckh_listing l = {0};
    rc = ckh_atomic_listdir(fs, d->env->alloc, path, &l);
    if (rc)
        return dfail(d, rc, "listdir '%s': %s", path, ckh_strerror(rc));
    for (size_t i = 0; i < l.count && !rc; i++) {
        char child[CKH_PATH_MAX + 1];
        if (ckh_path_join(child, sizeof child, path, l.entries[i].name)) {
            rc = CKH_EINVAL;
            break;
        }
        if (l.entries[i].type == CKH_FT_DIR)
            rc = remove_tree(d, child, false);
        else
            rc = ckh_fs_unlink(fs, child);
        if (rc == -ENOENT)
            rc = 0;
        if (rc)
            dfail(d, rc, "removing '%s': %s", child, ckh_strerror(rc));
    }
    ckh_atomic_listing_free(d->env->alloc, &l);
    if (rc)
        return rc;
    rc = ckh_fs_rmdir(fs, path);
    if (rc && rc != -ENOENT)
        return dfail(d, rc, "rmdir '%s': %s", path, ckh_strerror(rc));
    return 0;
}

static int remove_folder(struct ckh_adir *d, const char *base)
{
    char path[CKH_PATH_MAX + 1];
    if (ckh_path_join(path, sizeof path, d->out_dir, base))
        return CKH_EINVAL;
    return remove_tree(d, path, true);
}

/* Removes the pointer's temporary links a crash left (*removed: any). */
static int remove_tmp_links(struct ckh_adir *d, bool *removed)
{
    struct ckh_fs *fs = d->env->fs;
    int rc;
    char tmp_prefix[CKH_PATH_MAX + 1];
    snprintf(tmp_prefix, sizeof tmp_prefix, "%s.latest_checkpoint.tmp.", d->name);
    struct ckh_listing l = {0};
    rc = ckh_atomic_listdir(fs, d->env->alloc, d->out_dir, &l);
    if (rc)
        return dfail(d, rc, "listdir '%s': %s", d->out_dir, ckh_strerror(rc));
    for (size_t i = 0; i < l.count && !rc; i++) {
        if (strncmp(l.entries[i].name, tmp_prefix, strlen(tmp_prefix)) != 0 ||
            l.entries[i].type == CKH_FT_DIR)
            continue;
        char p[CKH_PATH_MAX + 1];
        if (ckh_path_join(p, sizeof p, d->out_dir, l.entries[i].name))
            continue;
        rc = ckh_fs_unlink(fs, p);
        if (rc == -ENOENT)
            rc = 0;
        if (rc)
            dfail(d, rc, "unlink '%s': %s", p, ckh_strerror(rc));
        *removed = true;
    }
    ckh_atomic_listing_free(d->env->alloc, &l);
    return rc;
}

/* Master: removes what crashes left; *next_n receives the next number. */
static int cleanup(struct ckh_adir *d, uint64_t *next_n)
{
    bool removed = false;
    int rc = 0;
    rc = remove_tmp_links(d, &removed);
    if (rc)
        return rc;
    char latest[CKH_PATH_MAX + 1];
    rc = read_pointer(d, latest, sizeof latest);
    if (rc)
        return rc;
    uint64_t latest_n = 0;
    bool latest_force, has_latest = latest[0] && parse_folder(d, latest, &latest_n, &latest_force);
    struct folder *f = NULL;
    size_t n = 0;
    rc = scan_folders(d, &f, &n);
    if (rc)
        return rc;
    if (!latest[0]) {
        /* No pointer at all (never written, or lost): the newest folder
         * with its commit marker is complete (the marker is written and
         * synced after the data), so it stands in for the pointer rather
         * than every committed folder counting as stale. */
        for (size_t i = 0; i < n; i++)
            if (f[i].committed && (!has_latest || f[i].n > latest_n)) {
                has_latest = true;
                latest_n = f[i].n;
                snprintf(latest, sizeof latest, "%s", f[i].name);
            }
    }
    uint64_t max_n = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (f[i].n > max_n)
            max_n = f[i].n;
        bool is_latest = has_latest && strcmp(f[i].name, latest) == 0;
        bool stale = !is_latest && (!f[i].committed || !has_latest || f[i].n > latest_n);
        if (!stale)
            continue;
        rc = remove_folder(d, f[i].name);
        removed = true;
    }
    free_folders(d, f, n);
    if (rc)
        return rc;
    if (has_latest && latest_n > max_n)
        max_n = latest_n;
    if (removed) {
        rc = sync_dir(d, d->out_dir);
        if (rc)
            return rc;
    }
    *next_n = max_n + 1;
    return 0;
}

/* Points the pointer at folder (absolute path): temporary link, rename,
 * fsync of the output directory. */
static int move_pointer(struct ckh_adir *d, const char *folder)
{
    char tmp[CKH_PATH_MAX + 1];
    int rc = -EEXIST;
    for (int attempt = 0; attempt < 8 && rc == -EEXIST; attempt++) {
        int len = snprintf(tmp, sizeof tmp, "%s.tmp.%s.%016" PRIx64, d->link_path, d->at.node,
                           ckh_rng_next(&d->at.rng));
        if (len < 0 || (size_t)len >= sizeof tmp)
            return dfail(d, CKH_EINVAL, "path too long for '%s'", d->link_path);
        rc = ckh_fs_symlink(d->env->fs, folder, tmp);
    }
    if (rc)
        return dfail(d, rc, "symlink '%s': %s", tmp, ckh_strerror(rc));
    rc = ckh_fs_rename(d->env->fs, tmp, d->link_path);
    if (rc) {
        ckh_fs_unlink(d->env->fs, tmp);
        return dfail(d, rc, "rename '%s' -> '%s': %s", tmp, d->link_path, ckh_strerror(rc));
    }
    return sync_dir(d, d->out_dir);
}

int ckh_adir_prepare(struct ckh_adir *d, bool force_save, char *buf, size_t n)
{
    if (!d || !buf || n == 0)
        return CKH_EINVAL;
    struct ckh_coll *coll = d->env->coll;
    bool sync = sync_mode(d);
    int rc = 0;
    bool force = force_save;
    if (sync) {
        int32_t vote = force_save ? 1 : 0;
        rc = ckh_coll_allreduce(coll, &vote, 1, CKH_DT_I32,
                                d->strategy == CKH_ADIR_SYNC_ANY ? CKH_RED_MAX : CKH_RED_MIN,
                                d->timeout_ns);
        if (rc)
            return dfail(d, rc, "force_save vote: %s", ckh_strerror(rc));
        force = vote != 0;
        rc = ckh_coll_barrier(coll, d->timeout_ns);
        if (rc)
            return dfail(d, rc, "barrier before prepare: %s", ckh_strerror(rc));
    }
    char folder[CKH_PATH_MAX + 1] = {0};
    int status = 0;
    if (d->is_master) {
        uint64_t next = 0;
        status = cleanup(d, &next);
        if (!status) {
            int len = snprintf(folder, sizeof folder, "%s/%s_checkpoint_%" PRIu64 "%s",
                               strcmp(d->out_dir, "/") == 0 ? "" : d->out_dir, d->name, next,
                               force ? "_force" : "");
            if (len < 0 || (size_t)len >= sizeof folder)
                status = dfail(d, CKH_EINVAL, "folder path too long");
        }
        if (!status) {
            status = ckh_fs_mkdir(d->env->fs, folder);
            if (status)
                dfail(d, status, "mkdir '%s': %s", folder, ckh_strerror(status));
        }
        if (!status && ckh_defect_on(d->defects, CKH_DEFECT_POINTER_BEFORE_DATA))
            status = move_pointer(d, folder);
    }
    if (sync) {
        /* The master's status travels with the folder so that every rank
         * fails together instead of writing into nothing. */
        struct {
            int32_t status;
            char folder[CKH_PATH_MAX + 1];
        } msg;
        memset(&msg, 0, sizeof msg);
        msg.status = status;
        memcpy(msg.folder, folder, sizeof msg.folder);
        rc = ckh_coll_broadcast(coll, &msg, sizeof msg, d->master_rank, d->timeout_ns);
        if (rc)
            return dfail(d, rc, "broadcast of the folder: %s", ckh_strerror(rc));
        status = msg.status;
        memcpy(folder, msg.folder, sizeof folder);
        rc = ckh_coll_barrier(coll, d->timeout_ns);
        if (rc)
            return dfail(d, rc, "barrier after prepare: %s", ckh_strerror(rc));
        if (status && !d->is_master)
            return dfail(d, status, "master failed to prepare: %s", ckh_strerror(status));
    }
    if (status)
        return status;
    if (strlen(folder) >= n)
        return dfail(d, CKH_EINVAL, "buffer too small for '%s'", folder);
    strcpy(buf, folder);
    return 0;
}

/* Deletes committed non-forced folders beyond the newest `keep` (never the
 * one named `live`). */
static int retention(struct ckh_adir *d, int keep, const char *live)
{
    if (keep < 0)
        return 0;
    struct folder *f = NULL;
    size_t n = 0;
    int rc = scan_folders(d, &f, &n);
    if (rc)
        return rc;
    size_t kept = 0;
    bool removed = false;
    for (size_t i = n; i-- > 0 && !rc;) {
        if (!f[i].committed || f[i].force)
            continue;
        if (kept < (size_t)keep) {
            kept++;
            continue;
        }
        if (live && strcmp(f[i].name, live) == 0)
            continue;
        rc = remove_folder(d, f[i].name);
        removed = true;
    }
    free_folders(d, f, n);
    if (!rc && removed)
        rc = sync_dir(d, d->out_dir);
    return rc;
}

int ckh_adir_commit(struct ckh_adir *d, const char *folder)
{
    if (!d || !folder || ckh_path_check(folder))
        return CKH_EINVAL;
    const char *base = strrchr(folder, '/') + 1;
    uint64_t num;
    bool force;
    if (!parse_folder(d, base, &num, &force))
        return dfail(d, CKH_EINVAL, "'%s' is not a folder of saver '%s'", folder, d->name);
    struct ckh_coll *coll = d->env->coll;
    bool sync = sync_mode(d);
    int rc, status = 0;
    if (sync) {
        rc = ckh_coll_barrier(coll, d->timeout_ns);
        if (rc)
            return dfail(d, rc, "barrier before commit: %s", ckh_strerror(rc));
    }
    if (d->is_master) {
        bool early = ckh_defect_on(d->defects, CKH_DEFECT_RETENTION_DELETES_LIVE);
        if (early && d->keep_last > 0)
            status = retention(d, d->keep_last - 1, NULL);
        char marker[CKH_PATH_MAX + 1];
        char content[64];
        int len = snprintf(content, sizeof content, "%" PRIu64 "\n", num);
        if (!status && ckh_path_join(marker, sizeof marker, folder, CKH_ADIR_COMMIT_MARKER))
            status = dfail(d, CKH_EINVAL, "path too long in '%s'", folder);
        if (!status) {
            status = ckh_atomic_save(&d->at, marker, content, (size_t)len);
            if (status)
                dfail(d, status, "commit marker: %s", d->at.errmsg);
        }
        if (!status)
            status = sync_dir(d, d->out_dir);
        if (!status && !ckh_defect_on(d->defects, CKH_DEFECT_POINTER_BEFORE_DATA))
            status = move_pointer(d, folder);
        /* In async mode every rank commits on its own, so the ranks can be
         * one checkpoint apart after a crash; resuming needs a step all of
         * them still hold, hence one folder more than keep_last. */
        if (!status && !early)
            status = retention(d, d->keep_last > 0 && d->strategy == CKH_ADIR_ASYNC && d->world > 1 ? d->keep_last + 1 : d->keep_last, base);
    }
    if (sync) {
        int32_t st = status;
        rc = ckh_coll_broadcast(coll, &st, sizeof st, d->master_rank, d->timeout_ns);
        if (rc)
            return dfail(d, rc, "broadcast of the commit status: %s", ckh_strerror(rc));
        /* Every rank takes the closing barrier, the master's failure
         * notwithstanding: a rank that skipped it would leave the others
         * waiting for it until their collective timeout. */
        rc = ckh_coll_barrier(coll, d->timeout_ns);
        if (rc)
            return dfail(d, rc, "barrier after commit: %s", ckh_strerror(rc));
        if (st && !d->is_master)
            return dfail(d, st, "master failed to commit: %s", ckh_strerror(st));
    }
    return status;
}

int ckh_adir_latest(struct ckh_adir *d, char *buf, size_t n)
{
    if (!d || !buf || !n)
        return CKH_EINVAL;
    char base[CKH_PATH_MAX + 1];
    int rc = read_pointer(d, base, sizeof base);
    if (rc)
        return rc;
    if (!base[0]) {
        /* No pointer: fall back to the newest committed folder (see
         * cleanup); none at all means there is nothing to resume from. */
        struct folder *f = NULL;
        size_t nf = 0;
        uint64_t best = 0;
        rc = scan_folders(d, &f, &nf);
        if (rc == -ENOENT) /* the output directory is not there (yet) */
            return dfail(d, CKH_ENOTFOUND, "no pointer '%s' and no output directory", d->link_path);
        if (rc)
            return rc;
        for (size_t i = 0; i < nf; i++)
            if (f[i].committed && (!base[0] || f[i].n > best)) {
                best = f[i].n;
                snprintf(base, sizeof base, "%s", f[i].name);
            }
        free_folders(d, f, nf);
        if (!base[0])
            return dfail(d, CKH_ENOTFOUND, "no pointer '%s' and no committed folder", d->link_path);
    }
    char folder[CKH_PATH_MAX + 1], marker[CKH_PATH_MAX + 1];
    if (ckh_path_join(folder, sizeof folder, d->out_dir, base) ||
        ckh_path_join(marker, sizeof marker, folder, CKH_ADIR_COMMIT_MARKER))
        return dfail(d, CKH_ECORRUPT, "pointer target too long");
    struct ckh_stat st;
    rc = ckh_fs_stat(d->env->fs, folder, &st);
    if (rc || st.type != CKH_FT_DIR)
        return dfail(d, CKH_ECORRUPT, "pointer '%s' names '%s', which does not exist",
                     d->link_path, folder);
    if (!ckh_fs_exists(d->env->fs, marker))
        return dfail(d, CKH_ECORRUPT, "pointer '%s' names '%s', which was never committed",
                     d->link_path, folder);
    /* The marker holds the folder's number: a damaged or foreign marker is
     * no proof of a commit. */
    uint64_t num = 0;
    bool force = false;
    const char *bn = strrchr(folder, '/') + 1;
    void *mbuf = NULL;
    size_t mlen = 0;
    char want[32];
    if (!parse_folder(d, bn, &num, &force))
        return dfail(d, CKH_ECORRUPT, "pointer '%s' names '%s', not a folder of saver '%s'",
                     d->link_path, folder, d->name);
    int wl = snprintf(want, sizeof want, "%" PRIu64 "\n", num);
    rc = ckh_atomic_read(d->env->fs, d->env->alloc, marker, &mbuf, &mlen);
    bool good = rc == 0 && mlen == (size_t)wl && memcmp(mbuf, want, mlen) == 0;
    ckh_free(d->env->alloc, mbuf);
    if (!good)
        return dfail(d, CKH_ECORRUPT, "the commit marker of '%s' is damaged", folder);
    if (strlen(folder) >= n)
        return dfail(d, CKH_EINVAL, "buffer too small for '%s'", folder);
    strcpy(buf, folder);
    return 0;
}

int ckh_adir_list(struct ckh_adir *d, char ***names, size_t *count)
{
    if (!d || !names || !count)
        return CKH_EINVAL;
    struct folder *f = NULL;
    size_t n = 0;
    int rc = scan_folders(d, &f, &n);
    if (rc)
        return rc;
    char **out = ckh_calloc(d->env->alloc, n ? n : 1, sizeof *out);
    if (!out) {
        free_folders(d, f, n);
        return CKH_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!f[i].committed)
            continue;
        out[k++] = f[i].name;
        f[i].name = NULL;
    }
    free_folders(d, f, n);
    *names = out;
    *count = k;
    return 0;
}

void ckh_adir_list_free(struct ckh_adir *d, char **names, size_t count)
{
    if (!d || !names)
        return;
    for (size_t i = 0; i < count; i++)
        ckh_free(d->env->alloc, names[i]);
    ckh_free(d->env->alloc, names);
}
