/* The atomic directory saver (see include/ckh/atomic.h); also ckh's
 * built-in directory saver "atomic-dir" of include/ckh/saver.h
 * (reference/saver.c maps the table onto these functions).
 *
 * Sections: set-up and the views (create, probes); folders and pointer;
 * prepare; commit; latest, resume and the read-only check.
 *
 * SPECIFICATION
 *
 * Layout under the output directory D, for saver name S (async: S is
 * "<name>_rank_<R>"), in every view of D that holds checkpoints (one
 * shared disk, or each rank's node-local disk):
 *   D/S_checkpoint_<N>[_force]/         one folder per checkpoint, N = 1, 2, ...
 *   D/S_checkpoint_<N>/.ckh_committed   commit marker ("<N>\n"), written last
 *   D/S.latest_checkpoint -> D/S_checkpoint_<N>   the pointer (absolute target)
 *   D/S.latest_checkpoint.tmp.<node>.<hex>        a pointer being replaced
 *   D/S.ckh_probe.<nonce>.<R>                     rank R's probe (create only)
 *
 * V1. Views and leaders. Ranks may all see one D (a shared disk), each see
 *     its own (node-local disks), or anything in between. A view's leader
 *     does every write of the saver in that view: the master when it
 *     shares the view, else the lowest rank of the view. On one shared
 *     disk the master is the only leader: no two ranks ever write the
 *     same pointer, marker or folder entry. Async: every rank leads its
 *     own names; one rank: it leads.
 * V2. create: every rank makes a missing D in its view durable (mkdir,
 *     then fsync of each parent; racing ranks of one view both succeed);
 *     all-gather {strategy, is_master, the master's nonce, status}: every
 *     rank fails if one did, one strategy, and (sync) exactly one
 *     master. Sync with several ranks: every rank
 *     creates its probe D/S.ckh_probe.<nonce>.<R>; barrier; each rank
 *     lists D: the probes it sees are the ranks of its view, from which it
 *     derives its leader; all-gather of the leaders (each leader must lead
 *     itself, else CKH_EMISMATCH: the views are inconsistent); each rank
 *     removes its probe (a crash may leave it; prepare removes leftovers).
 * V3. prepare: vote force_save with an all-reduce (sync_any: max,
 *     sync_all: min); each leader cleans its view up (removes temporary
 *     links and probes, every folder without a commit marker except the
 *     one the pointer names, and every folder newer than it) and proposes
 *     N = (largest N its view has seen) + 1; an all-reduce (max) of
 *     {N, failure} gives every rank the same N, or the same failure; each
 *     leader makes folder N; an all-reduce of the statuses. Async: N is
 *     at least the counter that resume set, and the counter moves past N
 *     even when the prepare fails, so every rank's k-th save after a
 *     resume has the same N.
 *     (each rank writes its files into the folder in its view and fsyncs them)
 * V4. commit: barrier; phase 1, each leader: the commit marker atomically
 *     (this fsyncs the folder, making every file's entry durable), fsync
 *     of D (the folder's entry), a temporary link renamed over the
 *     pointer, fsync of D; an all-reduce of the statuses; phase 2, only
 *     when phase 1 succeeded in every view: retention in each view
 *     (committed non-forced folders beyond the newest keep_last are
 *     deleted, each by removing its marker first (fsync), then its files,
 *     then the folder, then a final fsync of D; async keeps one more, see
 *     commit); an all-reduce of the statuses.
 * V5. latest (not collective): this view's pointer, whose folder must
 *     exist and hold a marker naming its N (else CKH_ECORRUPT); without a
 *     pointer, the newest folder with a marker. CKH_ENOTFOUND: none.
 * V6. resume (collective): the newest N committed in every view. The
 *     candidate is the smallest latest N over the ranks (an error of any
 *     rank's latest fails every rank); while some view lacks a committed
 *     folder N, the candidate becomes the smallest, over the ranks, of
 *     "the largest committed N below it" (one all-reduce per step). Async
 *     also sets the counter of V3 to (largest N any view has seen) + 1.
 *
 * Crash safety. One view (a shared disk, or one rank): before the
 * pointer's rename is durable the pointer names the previous committed
 * folder; afterwards the new one, which is complete and durable (every
 * rank's files were fsynced before the barrier, the marker after them).
 * Retention runs only after the new pointer is durable and never touches
 * the folder the pointer names, so at least min(keep_last, committed so
 * far) committed folders exist at every point. A half-deleted folder lost
 * its marker first and the next prepare removes it.
 * Several views (node-local disks): N is agreed by all ranks and exceeds
 * every N any view has seen, so a folder N means one checkpoint in every
 * view that has it. Let P be the last checkpoint whose phase 1 ended in
 * every view. Any crash leaves every view's pointer at P or later and
 * every view still holding P committed: retention, the only deleter of
 * committed folders, runs for a checkpoint only after its phase 1 ended in
 * every view, and spares the folder it commits. So the walk of V6 ends at
 * P or at a newer checkpoint committed in every view, never at one some
 * view lacks; once commit returned 0 on every rank, resume names that
 * checkpoint whatever crash follows. A newer folder committed in some
 * views only (the crash came between two views' phase 1) stays behind
 * their pointers unused until retention removes it; N never repeats it.
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
    struct ckh_env *env;             /* ops tables (borrowed; &own_env for a check) */
    struct ckh_env own_env;          /* check(): a bare fs in an env */
    struct ckh_atomic at;            /* atomic saver for the marker, temp-link names */
    char out_dir[CKH_PATH_MAX + 1];  /* output directory */
    char name[ADIR_NAME_MAX + 32];   /* effective saver name */
    char link_path[CKH_PATH_MAX + 1]; /* D/S.latest_checkpoint */
    bool is_master;                  /* this rank is the master (async: every rank) */
    bool is_leader;                  /* does the saver's writes in its view (V1) */
    int master_rank;                 /* rank of the master (sync) */
    int leader_rank;                 /* leader of this rank's view */
    int keep_last;                   /* -1 unlimited */
    enum ckh_adir_strategy strategy; /* agreed strategy */
    uint64_t timeout_ns;             /* collective timeout */
    const struct ckh_defect_set *defects; /* borrowed */
    int rank;                        /* collective rank */
    int world;                       /* world size */
    uint64_t next_n;                 /* async: least number of the next folder (V3) */
    char errmsg[CKH_ERRMSG_BYTES];   /* last error */
};

struct folder {
    uint64_t n;      /* checkpoint number */
    bool force;      /* _force suffix */
    bool committed;  /* marker present */
    char *name;      /* basename (malloc'd from env->alloc) */
};

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
    return rc ? CKH_ERRF(d->errmsg, rc, "fsync directory '%s': %s", dir, ckh_strerror(rc)) : 0;
}

/* "D/<base>" into buf (D "/" gives "/<base>"). */
static int dir_join(char *buf, size_t n, const char *dir, const char *base)
{
    int len = snprintf(buf, n, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, base);
    return len < 0 || (size_t)len >= n ? CKH_EINVAL : 0;
}

/* ---- set-up and the views ---- */

/* Checks cfg and fills the names of rank's saver: output directory,
 * effective name, pointer path. */
static int adir_names(const struct ckh_adir_config *cfg, int rank, char *out_dir, size_t out_n,
                      char *name, size_t name_n, char *link, size_t link_n)
{
    if (!cfg || !cfg->output_dir || ckh_path_check(cfg->output_dir) || cfg->keep_last < -1 ||
        cfg->keep_last == 0 || cfg->strategy > CKH_ADIR_ASYNC || rank < 0)
        return CKH_EINVAL;
    const char *base = cfg->name ? cfg->name : "AtomicDirectory";
    size_t nlen = strlen(base);
    if (!nlen || nlen > ADIR_NAME_MAX || strchr(base, '/') || strcmp(base, ".") == 0 ||
        strcmp(base, "..") == 0)
        return CKH_EINVAL;
    if (strlen(cfg->output_dir) + ADIR_NAME_MAX + 96 > CKH_PATH_MAX)
        return CKH_EINVAL;
    int len = cfg->strategy == CKH_ADIR_ASYNC ? snprintf(name, name_n, "%s_rank_%d", base, rank)
                                              : snprintf(name, name_n, "%s", base);
    if (len < 0 || (size_t)len >= name_n)
        return CKH_EINVAL;
    if (snprintf(out_dir, out_n, "%s", cfg->output_dir) >= (int)out_n)
        return CKH_EINVAL;
    char file[ADIR_NAME_MAX + 64];
    snprintf(file, sizeof file, "%s.latest_checkpoint", name);
    return dir_join(link, link_n, cfg->output_dir, file);
}

/* Every rank agrees on the strategy and, in the synchronous strategies,
 * on exactly one master (whose rank d->master_rank becomes); *nonce
 * receives the master's probe nonce. `status` is this rank's set-up so
 * far: a rank that failed makes every rank fail, none waits for it. */
static int adir_agree(struct ckh_adir *d, const struct ckh_adir_config *cfg, int status,
                      uint64_t *nonce)
{
    struct ckh_env *env = d->env;
    /* Unique per incarnation: a restarted master's stream repeats, its
     * clock does not. */
    uint64_t mine_nonce = ckh_mix64(ckh_rand_stream_seed(env->rand, "adir-probe") ^
                                    ckh_clock_now_ns(env->clock));
    int32_t mine[5] = {(int32_t)cfg->strategy, d->is_master ? 1 : 0, (int32_t)(uint32_t)mine_nonce,
                       (int32_t)(uint32_t)(mine_nonce >> 32), status};
    int32_t *all = ckh_calloc(env->alloc, (size_t)d->world, sizeof mine);
    int rc;
    if (!all)
        return CKH_ENOMEM;
    rc = ckh_coll_allgather(env->coll, mine, all, sizeof mine, cfg->timeout_ns);
    for (int r = 0; !rc && !status && r < d->world; r++)
        if (all[5 * r + 4])
            status = CKH_ERRF(d->errmsg, all[5 * r + 4], "rank %d could not set up its view of '%s': %s", r,
                              d->out_dir, ckh_strerror(all[5 * r + 4]));
    if (!rc && status) {
        ckh_free(env->alloc, all);
        ckh_node_logf(env->node, "atomic directory '%s': %s", d->name, d->errmsg);
        return status;
    }
    if (!rc) {
        int masters = 0;
        d->master_rank = d->rank;
        for (int r = 0; r < d->world && !rc; r++) {
            if (all[5 * r] != mine[0])
                rc = CKH_EMISMATCH;
            if (all[5 * r + 1]) {
                masters++;
                if (cfg->strategy != CKH_ADIR_ASYNC) {
                    d->master_rank = r;
                    *nonce = (uint64_t)(uint32_t)all[5 * r + 2] |
                             (uint64_t)(uint32_t)all[5 * r + 3] << 32;
                }
            }
        }
        if (!rc && cfg->strategy != CKH_ADIR_ASYNC && masters != 1)
            rc = CKH_EMISMATCH;
    }
    ckh_free(env->alloc, all);
    if (rc) /* the message would be lost with d; say it through the node log */
        ckh_node_logf(env->node, "atomic directory '%s': ranks disagree on strategy or master (%s)",
                      d->name, ckh_err_name(rc));
    return rc;
}

/* A rank whose view lacks the output directory creates it and makes its
 * entry (and its parents') durable, else a crash could take every
 * checkpoint with it. Ranks of one view may race: mkdirs tolerates that. */
static int adir_make_dir(struct ckh_adir *d)
{
    struct ckh_env *env = d->env;
    char dir[CKH_PATH_MAX + 1];
    int rc;
    if (ckh_fs_exists(env->fs, d->out_dir))
        return 0;
    rc = ckh_fs_mkdirs(env->fs, d->out_dir);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "mkdir '%s': %s", d->out_dir, ckh_strerror(rc));
    snprintf(dir, sizeof dir, "%s", d->out_dir);
    while (!rc && strcmp(dir, "/") != 0 && !no_fsync(d)) {
        char parent[CKH_PATH_MAX + 1];
        rc = ckh_path_dirname(dir, parent, sizeof parent);
        if (!rc)
            rc = sync_dir(d, parent);
        snprintf(dir, sizeof dir, "%s", parent);
    }
    return rc;
}

/* The ranks whose probes with `prefix` this rank's view of D holds. */
static int probe_scan(struct ckh_adir *d, const char *prefix, bool *seen)
{
    struct ckh_listing l = {0};
    int rc = ckh_atomic_listdir(d->env->fs, d->env->alloc, d->out_dir, &l);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "listdir '%s': %s", d->out_dir, ckh_strerror(rc));
    size_t plen = strlen(prefix);
    for (size_t i = 0; i < l.count; i++) {
        const char *nm = l.entries[i].name;
        char *end = NULL;
        if (strncmp(nm, prefix, plen) != 0 || nm[plen] < '0' || nm[plen] > '9')
            continue;
        long r = strtol(nm + plen, &end, 10);
        if (*end == '\0' && r >= 0 && r < d->world)
            seen[r] = true;
    }
    ckh_atomic_listing_free(d->env->alloc, &l);
    return 0;
}

/* The leader of a view whose ranks are seen (V1). */
static int view_leader_of(const struct ckh_adir *d, const bool *seen)
{
    if (seen[d->master_rank])
        return d->master_rank;
    for (int r = 0; r < d->world; r++)
        if (seen[r])
            return r;
    return CKH_EMISMATCH;
}

/* Checks the leaders every rank derived (V2): each must lead itself. */
static int check_leaders(struct ckh_adir *d, const int32_t *leaders)
{
    for (int r = 0; r < d->world; r++) {
        int l = leaders[r];
        if (l < 0)
            return CKH_ERRF(d->errmsg, l, "rank %d could not probe its view of '%s': %s", r, d->out_dir,
                            ckh_strerror(l));
        if (l >= d->world || leaders[l] != l)
            return CKH_ERRF(d->errmsg, CKH_EMISMATCH,
                            "ranks disagree on who shares the disk of '%s' (rank %d names rank %d)",
                            d->out_dir, r, l);
    }
    return 0;
}

/* V2: which ranks share this rank's view of D, and who leads it. Every
 * rank takes both collectives whatever fails locally. */
static int adir_probe(struct ckh_adir *d, uint64_t nonce)
{
    struct ckh_env *env = d->env;
    char prefix[ADIR_NAME_MAX + 96], base[ADIR_NAME_MAX + 128], probe[CKH_PATH_MAX + 1];
    snprintf(prefix, sizeof prefix, "%s.ckh_probe.%016" PRIx64 ".", d->name, nonce);
    snprintf(base, sizeof base, "%s%d", prefix, d->rank);
    bool *seen = ckh_calloc(env->alloc, (size_t)d->world, sizeof *seen);
    int32_t *leaders = ckh_calloc(env->alloc, (size_t)d->world, sizeof *leaders);
    bool made = false;
    int status = !seen || !leaders ? CKH_ENOMEM : dir_join(probe, sizeof probe, d->out_dir, base);
    if (!status) {
        struct ckh_file *f = NULL;
        status = ckh_fs_open(env->fs, probe, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
        if (status) {
            CKH_ERRF(d->errmsg, status, "create probe '%s': %s", probe, ckh_strerror(status));
        } else {
            made = true;
            ckh_file_close(f);
        }
    }
    int rc = ckh_coll_barrier(env->coll, d->timeout_ns);
    if (rc) {
        status = CKH_ERRF(d->errmsg, rc, "barrier after the probes: %s", ckh_strerror(rc));
        goto out;
    }
    if (!status)
        status = probe_scan(d, prefix, seen);
    int32_t mine = status ? status : view_leader_of(d, seen);
    if (!status && !seen[d->rank])
        mine = CKH_ERRF(d->errmsg, CKH_EMISMATCH, "probe '%s' is not in the listing of '%s'", probe, d->out_dir);
    rc = ckh_coll_allgather(env->coll, &mine, leaders, sizeof mine, d->timeout_ns);
    if (rc) {
        status = CKH_ERRF(d->errmsg, rc, "all-gather of the view leaders: %s", ckh_strerror(rc));
        goto out;
    }
    if (!status)
        status = check_leaders(d, leaders);
    if (!status) {
        d->leader_rank = mine;
        d->is_leader = mine == d->rank;
    }
out:
    if (made)
        ckh_fs_unlink(env->fs, probe); /* a leftover is harmless; prepare removes it */
    ckh_free(env->alloc, seen);
    ckh_free(env->alloc, leaders);
    return status;
}

int ckh_adir_create(struct ckh_env *env, const struct ckh_adir_config *cfg, struct ckh_adir **out)
{
    if (!env || !env->fs || !out)
        return CKH_EINVAL;
    int rank = ckh_coll_rank(env->coll), world = ckh_coll_world_size(env->coll);
    if (rank < 0 || world < 1 || rank >= world)
        return rank < 0 ? rank : world < 0 ? world : CKH_EINVAL;
    struct ckh_adir *d = ckh_calloc(env->alloc, 1, sizeof *d);
    if (!d)
        return CKH_ENOMEM;
    int rc = adir_names(cfg, rank, d->out_dir, sizeof d->out_dir, d->name, sizeof d->name,
                        d->link_path, sizeof d->link_path);
    if (!rc)
        rc = ckh_atomic_init(&d->at, env, cfg->defects);
    if (rc)
        goto out_free;
    d->env = env;
    d->keep_last = cfg->keep_last;
    d->strategy = cfg->strategy;
    d->timeout_ns = cfg->timeout_ns;
    d->defects = cfg->defects;
    d->rank = rank;
    d->world = world;
    d->is_master = cfg->strategy == CKH_ADIR_ASYNC ? true : cfg->is_master;
    d->is_leader = d->is_master;
    d->leader_rank = rank;
    uint64_t nonce = 0;
    if ((rc = adir_agree(d, cfg, adir_make_dir(d), &nonce)) != 0)
        goto out_free;
    if (sync_mode(d) && (rc = adir_probe(d, nonce)) != 0) {
        ckh_node_logf(env->node, "atomic directory '%s': %s", d->name, d->errmsg);
        goto out_free;
    }
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

int ckh_adir_view_leader(const struct ckh_adir *d)
{
    return d ? d->leader_rank : CKH_EINVAL;
}

/* ---- folders and pointer ---- */

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
        return CKH_ERRF(d->errmsg, rc, "listdir '%s': %s", d->out_dir, ckh_strerror(rc));
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
        return CKH_ERRF(d->errmsg, (int)len, "readlink '%s': %s", d->link_path, ckh_strerror((int)len));
    if ((size_t)len >= sizeof target)
        return CKH_ERRF(d->errmsg, CKH_ECORRUPT, "pointer '%s' target too long", d->link_path);
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    if (strlen(base) >= n)
        return CKH_ERRF(d->errmsg, CKH_ECORRUPT, "pointer '%s' target too long", d->link_path);
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
            return CKH_ERRF(d->errmsg, rc, "unlink '%s': %s", marker, ckh_strerror(rc));
        }
    }
    struct ckh_listing l = {0};
    rc = ckh_atomic_listdir(fs, d->env->alloc, path, &l);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "listdir '%s': %s", path, ckh_strerror(rc));
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
            CKH_ERRF(d->errmsg, rc, "removing '%s': %s", child, ckh_strerror(rc));
    }
    ckh_atomic_listing_free(d->env->alloc, &l);
    if (rc)
        return rc;
    rc = ckh_fs_rmdir(fs, path);
    if (rc && rc != -ENOENT)
        return CKH_ERRF(d->errmsg, rc, "rmdir '%s': %s", path, ckh_strerror(rc));
    return 0;
}

static int remove_folder(struct ckh_adir *d, const char *base)
{
    char path[CKH_PATH_MAX + 1];
    if (ckh_path_join(path, sizeof path, d->out_dir, base))
        return CKH_EINVAL;
    return remove_tree(d, path, true);
}

/* Removes the pointer's temporary links and the probes a crash left
 * (*removed: any). */
static int remove_leftovers(struct ckh_adir *d, bool *removed)
{
    struct ckh_fs *fs = d->env->fs;
    int rc;
    char tmp_prefix[ADIR_NAME_MAX + 64], probe_prefix[ADIR_NAME_MAX + 64];
    snprintf(tmp_prefix, sizeof tmp_prefix, "%s.latest_checkpoint.tmp.", d->name);
    snprintf(probe_prefix, sizeof probe_prefix, "%s.ckh_probe.", d->name);
    struct ckh_listing l = {0};
    rc = ckh_atomic_listdir(fs, d->env->alloc, d->out_dir, &l);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "listdir '%s': %s", d->out_dir, ckh_strerror(rc));
    for (size_t i = 0; i < l.count && !rc; i++) {
        const char *nm = l.entries[i].name;
        if ((strncmp(nm, tmp_prefix, strlen(tmp_prefix)) != 0 &&
             strncmp(nm, probe_prefix, strlen(probe_prefix)) != 0) ||
            l.entries[i].type == CKH_FT_DIR)
            continue;
        char p[CKH_PATH_MAX + 1];
        if (ckh_path_join(p, sizeof p, d->out_dir, nm))
            continue;
        rc = ckh_fs_unlink(fs, p);
        if (rc == -ENOENT)
            rc = 0;
        if (rc)
            CKH_ERRF(d->errmsg, rc, "unlink '%s': %s", p, ckh_strerror(rc));
        *removed = true;
    }
    ckh_atomic_listing_free(d->env->alloc, &l);
    return rc;
}

/* Leader: removes what crashes left in its view; *next_n receives the
 * next number this view proposes. */
static int cleanup(struct ckh_adir *d, uint64_t *next_n)
{
    bool removed = false;
    int rc = remove_leftovers(d, &removed);
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
            return CKH_ERRF(d->errmsg, CKH_EINVAL, "path too long for '%s'", d->link_path);
        rc = ckh_fs_symlink(d->env->fs, folder, tmp);
    }
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "symlink '%s': %s", tmp, ckh_strerror(rc));
    rc = ckh_fs_rename(d->env->fs, tmp, d->link_path);
    if (rc) {
        ckh_fs_unlink(d->env->fs, tmp);
        return CKH_ERRF(d->errmsg, rc, "rename '%s' -> '%s': %s", tmp, d->link_path, ckh_strerror(rc));
    }
    return sync_dir(d, d->out_dir);
}

/* ---- prepare ---- */

/* The all-reduce (max) that closes a step of the sync protocol: every
 * rank learns whether some rank failed; a rank that did not fail itself
 * fails with the other's code and `what`. */
static int agree_status(struct ckh_adir *d, int status, const char *what)
{
    int32_t st = status ? -status : 0;
    int rc = ckh_coll_allreduce(d->env->coll, &st, 1, CKH_DT_I32, CKH_RED_MAX, d->timeout_ns);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "all-reduce after %s: %s", what, ckh_strerror(rc));
    if (st && !status)
        return CKH_ERRF(d->errmsg, -st, "another rank failed to %s: %s", what, ckh_strerror(-st));
    return status;
}

/* Votes force_save over the ranks (sync strategies). */
static int vote_force(struct ckh_adir *d, bool *force)
{
    int32_t vote = *force ? 1 : 0;
    int rc = ckh_coll_allreduce(d->env->coll, &vote, 1, CKH_DT_I32,
                                d->strategy == CKH_ADIR_SYNC_ANY ? CKH_RED_MAX : CKH_RED_MIN,
                                d->timeout_ns);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "force_save vote: %s", ckh_strerror(rc));
    *force = vote != 0;
    return 0;
}

/* The number of the next folder: each leader's proposal, then the largest
 * over the ranks (sync), or at least the resume counter (async). */
static int next_number(struct ckh_adir *d, uint64_t *next)
{
    int status = d->is_leader ? cleanup(d, next) : 0;
    if (d->strategy == CKH_ADIR_ASYNC) {
        if (status || *next < d->next_n)
            *next = d->next_n;
        if (*next)
            d->next_n = *next + 1;
        return status;
    }
    if (!sync_mode(d))
        return status;
    int64_t v[2] = {status ? 0 : (int64_t)*next, status ? -(int64_t)status : 0};
    int rc = ckh_coll_allreduce(d->env->coll, v, 2, CKH_DT_I64, CKH_RED_MAX, d->timeout_ns);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "all-reduce of the next number: %s", ckh_strerror(rc));
    if (v[1] && !status)
        return CKH_ERRF(d->errmsg, (int)-v[1], "another rank failed to clean up its view: %s",
                        ckh_strerror((int)-v[1]));
    *next = (uint64_t)v[0];
    return status;
}

int ckh_adir_prepare(struct ckh_adir *d, bool force_save, char *buf, size_t n)
{
    if (!d || !buf || n == 0)
        return CKH_EINVAL;
    bool sync = sync_mode(d);
    bool force = force_save;
    int rc = sync ? vote_force(d, &force) : 0;
    if (rc)
        return rc;
    uint64_t next = 0;
    /* A failure here is known to every rank (sync): all return at once. */
    int status = next_number(d, &next);
    if (status)
        return status;
    char folder[CKH_PATH_MAX + 1] = {0};
    int len = snprintf(folder, sizeof folder, "%s/%s_checkpoint_%" PRIu64 "%s",
                       strcmp(d->out_dir, "/") == 0 ? "" : d->out_dir, d->name, next,
                       force ? "_force" : "");
    if (len < 0 || (size_t)len >= sizeof folder)
        status = CKH_ERRF(d->errmsg, CKH_EINVAL, "folder path too long");
    if (!status && d->is_leader) {
        status = ckh_fs_mkdir(d->env->fs, folder);
        if (status)
            CKH_ERRF(d->errmsg, status, "mkdir '%s': %s", folder, ckh_strerror(status));
        if (!status && ckh_defect_on(d->defects, CKH_DEFECT_POINTER_BEFORE_DATA))
            status = move_pointer(d, folder);
    }
    /* Every rank fails together rather than writing into nothing. */
    if (sync)
        status = agree_status(d, status, "make the checkpoint folder");
    if (status)
        return status;
    if (strlen(folder) >= n)
        return CKH_ERRF(d->errmsg, CKH_EINVAL, "buffer too small for '%s'", folder);
    strcpy(buf, folder);
    return 0;
}

/* ---- commit ---- */

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

/* Phase 1 in this leader's view: marker, fsync of D, pointer. */
static int commit_view(struct ckh_adir *d, const char *folder, uint64_t num, bool early)
{
    int status = 0;
    if (early && d->keep_last > 0)
        status = retention(d, d->keep_last - 1, NULL);
    char marker[CKH_PATH_MAX + 1];
    char content[64];
    int len = snprintf(content, sizeof content, "%" PRIu64 "\n", num);
    if (!status && ckh_path_join(marker, sizeof marker, folder, CKH_ADIR_COMMIT_MARKER))
        status = CKH_ERRF(d->errmsg, CKH_EINVAL, "path too long in '%s'", folder);
    if (!status) {
        status = ckh_atomic_save(&d->at, marker, content, (size_t)len);
        if (status)
            CKH_ERRF(d->errmsg, status, "commit marker: %s", d->at.errmsg);
    }
    if (!status)
        status = sync_dir(d, d->out_dir);
    if (!status && !ckh_defect_on(d->defects, CKH_DEFECT_POINTER_BEFORE_DATA))
        status = move_pointer(d, folder);
    return status;
}

int ckh_adir_commit(struct ckh_adir *d, const char *folder)
{
    if (!d || !folder || ckh_path_check(folder))
        return CKH_EINVAL;
    const char *base = strrchr(folder, '/') + 1;
    uint64_t num;
    bool force;
    if (!parse_folder(d, base, &num, &force))
        return CKH_ERRF(d->errmsg, CKH_EINVAL, "'%s' is not a folder of saver '%s'", folder, d->name);
    bool sync = sync_mode(d);
    bool early = ckh_defect_on(d->defects, CKH_DEFECT_RETENTION_DELETES_LIVE);
    int rc, status = 0;
    if (sync) {
        rc = ckh_coll_barrier(d->env->coll, d->timeout_ns);
        if (rc)
            return CKH_ERRF(d->errmsg, rc, "barrier before commit: %s", ckh_strerror(rc));
    }
    if (d->is_leader)
        status = commit_view(d, folder, num, early);
    if (sync)
        status = agree_status(d, status, "commit");
    /* In async mode every rank commits on its own, so the ranks can be
     * one checkpoint apart after a crash; resuming needs a checkpoint all
     * of them still hold, hence one folder more than keep_last. */
    int keep = d->keep_last > 0 && d->strategy == CKH_ADIR_ASYNC && d->world > 1 ? d->keep_last + 1
                                                                                 : d->keep_last;
    int st2 = 0;
    if (!status && d->is_leader && !early)
        st2 = retention(d, keep, base);
    /* Every rank takes the closing collective, a failure notwithstanding:
     * a rank that skipped it would leave the others waiting for it until
     * their collective timeout. */
    if (sync && (st2 = agree_status(d, st2, "apply retention")) != 0 && !status)
        status = st2;
    return status ? status : st2;
}

/* ---- latest, resume and the read-only check ---- */

/* 0 when folder's marker holds its number num (a damaged or foreign
 * marker is no proof of a commit). */
static int check_marker(struct ckh_adir *d, const char *folder, uint64_t num)
{
    char marker[CKH_PATH_MAX + 1], want[32];
    void *mbuf = NULL;
    size_t mlen = 0;
    if (ckh_path_join(marker, sizeof marker, folder, CKH_ADIR_COMMIT_MARKER))
        return CKH_EINVAL;
    int wl = snprintf(want, sizeof want, "%" PRIu64 "\n", num);
    int rc = ckh_atomic_read(d->env->fs, d->env->alloc, marker, &mbuf, &mlen);
    if (rc == CKH_ENOMEM)
        return rc; /* unread, not damaged */
    bool good = rc == 0 && mlen == (size_t)wl && memcmp(mbuf, want, mlen) == 0;
    ckh_free(d->env->alloc, mbuf);
    return good ? 0 : CKH_ECORRUPT;
}

/* V5: the newest committed folder of this view (path into buf, its
 * number into *num). */
static int resolve_latest(struct ckh_adir *d, char *buf, size_t n, uint64_t *num)
{
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
            return CKH_ERRF(d->errmsg, CKH_ENOTFOUND, "no pointer '%s' and no output directory", d->link_path);
        if (rc)
            return rc;
        for (size_t i = 0; i < nf; i++)
            if (f[i].committed && (!base[0] || f[i].n > best)) {
                best = f[i].n;
                snprintf(base, sizeof base, "%s", f[i].name);
            }
        free_folders(d, f, nf);
        if (!base[0])
            return CKH_ERRF(d->errmsg, CKH_ENOTFOUND, "no pointer '%s' and no committed folder", d->link_path);
    }
    char folder[CKH_PATH_MAX + 1], marker[CKH_PATH_MAX + 1];
    if (ckh_path_join(folder, sizeof folder, d->out_dir, base) ||
        ckh_path_join(marker, sizeof marker, folder, CKH_ADIR_COMMIT_MARKER))
        return CKH_ERRF(d->errmsg, CKH_ECORRUPT, "pointer target too long");
    struct ckh_stat st;
    rc = ckh_fs_stat(d->env->fs, folder, &st);
    if (rc || st.type != CKH_FT_DIR)
        return CKH_ERRF(d->errmsg, CKH_ECORRUPT, "pointer '%s' names '%s', which does not exist",
                        d->link_path, folder);
    if (!ckh_fs_exists(d->env->fs, marker))
        return CKH_ERRF(d->errmsg, CKH_ECORRUPT, "pointer '%s' names '%s', which was never committed",
                        d->link_path, folder);
    bool force = false;
    if (!parse_folder(d, base, num, &force))
        return CKH_ERRF(d->errmsg, CKH_ECORRUPT, "pointer '%s' names '%s', not a folder of saver '%s'",
                        d->link_path, folder, d->name);
    if ((rc = check_marker(d, folder, *num)) == CKH_ENOMEM)
        return CKH_ERRF(d->errmsg, rc, "no memory to read the commit marker of '%s'", folder);
    if (rc)
        return CKH_ERRF(d->errmsg, CKH_ECORRUPT, "the commit marker of '%s' is damaged", folder);
    if (strlen(folder) >= n)
        return CKH_ERRF(d->errmsg, CKH_EINVAL, "buffer too small for '%s'", folder);
    strcpy(buf, folder);
    return 0;
}

int ckh_adir_latest(struct ckh_adir *d, char *buf, size_t n)
{
    if (!d || !buf || !n)
        return CKH_EINVAL;
    uint64_t num = 0;
    return resolve_latest(d, buf, n, &num);
}

/* What this view holds around candidate cand (V6): whether folder cand is
 * committed (its basename into name), the largest committed N below cand
 * (-1: none) and the largest N seen at all. A missing D is an empty view. */
struct view_numbers {
    bool has;             /* folder cand committed, valid marker */
    int64_t below;        /* largest committed N < cand, -1: none */
    uint64_t max_seen;    /* largest N of any folder */
    char name[ADIR_NAME_MAX + 64]; /* basename of folder cand */
};

static int view_numbers(struct ckh_adir *d, int64_t cand, struct view_numbers *v)
{
    struct folder *f = NULL;
    size_t nf = 0;
    memset(v, 0, sizeof *v);
    v->below = -1;
    int rc = scan_folders(d, &f, &nf);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return rc;
    for (size_t i = 0; i < nf && !rc; i++) {
        if (f[i].n > v->max_seen)
            v->max_seen = f[i].n;
        if (!f[i].committed || cand < 0 || f[i].n > (uint64_t)cand)
            continue;
        if (f[i].n < (uint64_t)cand) {
            if ((int64_t)f[i].n > v->below)
                v->below = (int64_t)f[i].n;
            continue;
        }
        char path[CKH_PATH_MAX + 1];
        if (ckh_path_join(path, sizeof path, d->out_dir, f[i].name) == 0 &&
            check_marker(d, path, f[i].n) == 0 && strlen(f[i].name) < sizeof v->name) {
            v->has = true;
            strcpy(v->name, f[i].name);
        }
    }
    free_folders(d, f, nf);
    return 0;
}

/* V6, after the first all-reduce: walks the candidate down until every
 * view holds it committed; *cand ends at -1 when no N is. */
static int resume_walk(struct ckh_adir *d, int64_t *cand, char *name, size_t namelen)
{
    for (;;) {
        struct view_numbers v;
        int status = view_numbers(d, *cand, &v);
        if (status)
            CKH_ERRF(d->errmsg, status, "listing '%s': %s", d->out_dir, ckh_strerror(status));
        int64_t w[4] = {v.has ? 1 : 0, v.below, -(int64_t)v.max_seen, status};
        int rc = ckh_coll_allreduce(d->env->coll, w, 4, CKH_DT_I64, CKH_RED_MIN, d->timeout_ns);
        if (rc)
            return CKH_ERRF(d->errmsg, rc, "all-reduce of the resume candidate: %s", ckh_strerror(rc));
        if (w[3])
            return status ? status
                          : CKH_ERRF(d->errmsg, (int)w[3], "another rank cannot list its checkpoints: %s",
                                     ckh_strerror((int)w[3]));
        if (d->strategy == CKH_ADIR_ASYNC)
            d->next_n = (uint64_t)-w[2] + 1;
        if (*cand < 0)
            return 0;
        if (w[0]) {
            snprintf(name, namelen, "%s", v.name);
            return 0;
        }
        *cand = w[1];
    }
}

int ckh_adir_resume(struct ckh_adir *d, char *buf, size_t n)
{
    if (!d || !buf || !n)
        return CKH_EINVAL;
    char folder[CKH_PATH_MAX + 1], name[ADIR_NAME_MAX + 64];
    uint64_t num = 0;
    int own = resolve_latest(d, folder, sizeof folder, &num);
    if (d->world == 1) {
        if (own == 0 && strlen(folder) >= n)
            return CKH_ERRF(d->errmsg, CKH_EINVAL, "buffer too small for '%s'", folder);
        if (own == 0)
            strcpy(buf, folder);
        return own;
    }
    int64_t v[2] = {own ? -1 : (int64_t)num, own && own != CKH_ENOTFOUND ? own : 0};
    int rc = ckh_coll_allreduce(d->env->coll, v, 2, CKH_DT_I64, CKH_RED_MIN, d->timeout_ns);
    if (rc)
        return CKH_ERRF(d->errmsg, rc, "all-reduce of the latest checkpoints: %s", ckh_strerror(rc));
    if (v[1])
        return own && own != CKH_ENOTFOUND
                   ? own
                   : CKH_ERRF(d->errmsg, (int)v[1], "another rank cannot resume from its latest checkpoint: %s",
                              ckh_strerror((int)v[1]));
    int64_t cand = v[0];
    if ((rc = resume_walk(d, &cand, name, sizeof name)) != 0)
        return rc;
    if (cand < 0)
        return CKH_ERRF(d->errmsg, CKH_ENOTFOUND, "no checkpoint of '%s' is committed in every rank's view",
                        d->name);
    if (ckh_path_join(folder, sizeof folder, d->out_dir, name) || strlen(folder) >= n)
        return CKH_ERRF(d->errmsg, CKH_EINVAL, "buffer too small for '%s/%s'", d->out_dir, name);
    strcpy(buf, folder);
    return 0;
}

int ckh_adir_check(struct ckh_fs *fs, const struct ckh_adir_config *cfg, int rank, char *buf,
                   size_t n, char *msg, size_t msglen)
{
    if (!fs || !buf || !n || !msg || !msglen)
        return CKH_EINVAL;
    struct ckh_adir *d = calloc(1, sizeof *d);
    if (!d)
        return CKH_ENOMEM;
    d->own_env.fs = fs;
    d->env = &d->own_env;
    d->rank = rank;
    d->world = 1;
    buf[0] = '\0';
    uint64_t num = 0;
    int rc = adir_names(cfg, rank, d->out_dir, sizeof d->out_dir, d->name, sizeof d->name,
                        d->link_path, sizeof d->link_path);
    if (rc) {
        snprintf(msg, msglen, "bad saver configuration for rank %d", rank);
        goto out;
    }
    d->strategy = cfg->strategy;
    rc = resolve_latest(d, buf, n, &num);
    if (rc == CKH_ENOTFOUND) {
        buf[0] = '\0';
        snprintf(msg, msglen, "nothing committed in rank %d's view of %s: it starts from scratch",
                 rank, d->out_dir);
        rc = 0;
    } else if (rc) {
        buf[0] = '\0';
        snprintf(msg, msglen, "%s", d->errmsg);
    } else {
        snprintf(msg, msglen, "rank %d's view resolves to %s, a committed checkpoint", rank, buf);
    }
out:
    free(d);
    return rc;
}

int ckh_adir_latest_path(const struct ckh_adir_config *cfg, int rank, char *buf, size_t n)
{
    char out_dir[CKH_PATH_MAX + 1], name[ADIR_NAME_MAX + 32];
    if (!buf || !n)
        return CKH_EINVAL;
    return adir_names(cfg, rank, out_dir, sizeof out_dir, name, sizeof name, buf, n);
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
