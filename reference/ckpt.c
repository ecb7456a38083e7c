/* Checkpoint managers and the metadata handler (include/ckh/job.h).
 *
 * A manager holds one node manager per checkpointed node. Each node
 * manager fixes, at init, the list of blobs it saves: every workspace blob
 * (single-node manager) or the blobs named "<node>/..." (multi-node
 * manager), or the names held by the checkpoint it is initialised from.
 * Only the session's local nodes are saved and loaded by this process; the
 * partial load reads every node's checkpoint. Each operation's duration is
 * measured with env->clock (virtual time in the simulator).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/job.h"

/* ---- metadata handler ---- */

struct meta_rec {
    char *node;    /* node name (owned) */
    int64_t epoch; /* completed epoch */
};

struct ckh_meta {
    struct ckh_alloc *alloc; /* all memory */
    struct meta_rec *recs;   /* recorded completions, in order of recording */
    size_t count;            /* their number */
};

int ckh_meta_create(struct ckh_alloc *a, struct ckh_meta **out)
{
    struct ckh_meta *m;
    if (!out)
        return CKH_EINVAL;
    m = ckh_calloc(a, 1, sizeof *m);
    if (!m)
        return CKH_ENOMEM;
    m->alloc = a;
    *out = m;
    return 0;
}

void ckh_meta_destroy(struct ckh_meta *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->count; i++)
        ckh_free(m->alloc, m->recs[i].node);
    ckh_free(m->alloc, m->recs);
    ckh_free(m->alloc, m);
}

int ckh_meta_write(struct ckh_meta *m, const char *node, int64_t epoch)
{
    struct meta_rec *nr;
    if (!m || !node || epoch < 0)
        return CKH_EINVAL;
    nr = ckh_realloc(m->alloc, m->recs, (m->count + 1) * sizeof *nr);
    if (!nr)
        return CKH_ENOMEM;
    m->recs = nr;
    if (!(nr[m->count].node = ckh_strdup(m->alloc, node)))
        return CKH_ENOMEM;
    nr[m->count++].epoch = epoch;
    return 0;
}

/* Whether node has completed epoch, per the record or the backend. */
static int meta_has(struct ckh_meta *m, struct ckh_backend *b, const char *node, int64_t epoch,
                    bool *out)
{
    for (size_t i = 0; i < m->count; i++)
        if (m->recs[i].epoch == epoch && strcmp(m->recs[i].node, node) == 0) {
            *out = true;
            return 0;
        }
    *out = false;
    return b ? ckh_backend_exists(b, node, epoch, out) : 0;
}

int ckh_meta_last_epoch(struct ckh_meta *m, struct ckh_backend *b, const char *const *nodes,
                        size_t n, int64_t *out)
{
    int64_t *cand = NULL, best = -1;
    size_t ncand = 0;
    int rc = 0;
    if (!m || !out || (!nodes && n > 0))
        return CKH_EINVAL;
    *out = -1;
    if (n == 0)
        return 0;
    /* Candidates: every epoch known for the first node. */
    if (b && (rc = ckh_backend_list_epochs(b, nodes[0], &cand, &ncand)) != 0)
        return rc;
    for (size_t i = 0; i < ncand; i++)
        if (cand[i] > best) {
            bool all = true;
            for (size_t j = 1; j < n && all; j++)
                if ((rc = meta_has(m, b, nodes[j], cand[i], &all)) != 0)
                    goto out;
            if (all)
                best = cand[i];
        }
    for (size_t i = 0; i < m->count; i++)
        if (strcmp(m->recs[i].node, nodes[0]) == 0 && m->recs[i].epoch > best) {
            bool all = true;
            for (size_t j = 1; j < n && all; j++)
                if ((rc = meta_has(m, b, nodes[j], m->recs[i].epoch, &all)) != 0)
                    goto out;
            if (all)
                best = m->recs[i].epoch;
        }
    *out = best;
out:
    if (cand)
        ckh_free(m->alloc, cand);
    return rc;
}

/* ---- managers ---- */

struct node_mgr {
    char *node;                 /* node name (owned) */
    char **blobs;               /* blob list fixed at init (owned) */
    size_t nblobs;              /* its length */
    bool inited;                /* blob list fixed */
    struct ckh_ckpt_stat stat;  /* last operation */
};

struct ckh_ckpt {
    struct ckh_env *env;        /* platform (borrowed) */
    struct ckh_alloc *alloc;    /* env->alloc */
    struct ckh_backend *backend; /* owned */
    struct ckh_meta *meta;      /* borrowed; NULL: none */
    char *prefix;               /* checkpoint directory (owned) */
    bool single;                /* single-node manager */
    char *single_name;          /* single: the node name (owned) */
    struct node_mgr *nodes;     /* node managers, in init order */
    size_t nnodes;              /* their number */
    char errmsg[CKH_ERRMSG_BYTES]; /* last error */
};

static int ckpt_create(struct ckh_env *env, const char *prefix, const char *node_name,
                       const char *db_type, struct ckh_meta *meta, bool single,
                       struct ckh_ckpt **out, char *msg, size_t msglen)
{
    struct ckh_backend_config bc = {0};
    struct ckh_ckpt *ck;
    int rc;
    if (!env || !env->fs || !prefix || !db_type || !out || (single && !node_name))
        return ckh_errf(msg, msglen, CKH_EINVAL, "checkpoint manager: NULL argument");
    if (single && (rc = ckh_node_name_check(node_name)) != 0)
        return ckh_errf(msg, msglen, rc, "checkpoint manager: bad node name '%s'", node_name);
    ck = ckh_calloc(env->alloc, 1, sizeof *ck);
    if (!ck)
        return CKH_ENOMEM;
    ck->env = env;
    ck->alloc = env->alloc;
    ck->meta = meta;
    ck->single = single;
    ck->prefix = ckh_strdup(env->alloc, prefix);
    ck->single_name = single ? ckh_strdup(env->alloc, node_name) : NULL;
    if (!ck->prefix || (single && !ck->single_name)) {
        rc = CKH_ENOMEM;
        goto out_free;
    }
    bc.fs = env->fs;
    bc.alloc = env->alloc;
    bc.rand = env->rand;
    bc.prefix = prefix;
    if ((rc = ckh_backend_open(db_type, &bc, &ck->backend, msg, msglen)) != 0)
        goto out_free;
    *out = ck;
    return 0;
out_free:
    ckh_free(env->alloc, ck->prefix);
    ckh_free(env->alloc, ck->single_name);
    ckh_free(env->alloc, ck);
    return rc;
}

int ckh_ckpt_create_single(struct ckh_env *env, const char *prefix, const char *node_name,
                           const char *db_type, struct ckh_meta *meta, struct ckh_ckpt **out,
                           char *msg, size_t msglen)
{
    return ckpt_create(env, prefix, node_name, db_type, meta, true, out, msg, msglen);
}

int ckh_ckpt_create_multi(struct ckh_env *env, const char *prefix, const char *db_type,
                          struct ckh_meta *meta, struct ckh_ckpt **out, char *msg, size_t msglen)
{
    return ckpt_create(env, prefix, NULL, db_type, meta, false, out, msg, msglen);
}

static void nm_clear_blobs(struct ckh_ckpt *ck, struct node_mgr *nm)
{
    for (size_t i = 0; i < nm->nblobs; i++)
        ckh_free(ck->alloc, nm->blobs[i]);
    ckh_free(ck->alloc, nm->blobs);
    nm->blobs = NULL;
    nm->nblobs = 0;
    nm->inited = false;
}

void ckh_ckpt_destroy(struct ckh_ckpt *ck)
{
    if (!ck)
        return;
    for (size_t i = 0; i < ck->nnodes; i++) {
        nm_clear_blobs(ck, &ck->nodes[i]);
        ckh_free(ck->alloc, ck->nodes[i].node);
    }
    ckh_free(ck->alloc, ck->nodes);
    ckh_backend_close(ck->backend);
    ckh_free(ck->alloc, ck->prefix);
    ckh_free(ck->alloc, ck->single_name);
    ckh_free(ck->alloc, ck);
}

const char *ckh_ckpt_errmsg(const struct ckh_ckpt *ck)
{
    return ck ? ck->errmsg : "no checkpoint manager";
}

struct ckh_backend *ckh_ckpt_backend(struct ckh_ckpt *ck)
{
    return ck ? ck->backend : NULL;
}

static bool nm_local(const struct ckh_ckpt *ck, const struct ckh_session *s,
                     const struct node_mgr *nm)
{
    return ck->single || ckh_session_is_local(s, nm->node);
}

/* Creates the node managers for nodes (single: one, named single_name). */
static int set_nodes(struct ckh_ckpt *ck, const char *const *nodes, size_t n)
{
    size_t want = ck->single ? 1 : n;
    int rc;
    if (ck->single && n > 1)
        return CKH_ERRF(ck->errmsg, CKH_EINVAL, "a single-node checkpoint manager supports one node, got %zu", n);
    if (ck->nnodes > 0) {
        if (!ck->single) {
            bool same = ck->nnodes == n;
            for (size_t i = 0; same && i < n; i++)
                same = strcmp(ck->nodes[i].node, nodes[i]) == 0;
            if (!same)
                return CKH_ERRF(ck->errmsg, CKH_EINVAL, "init called again with different nodes");
        }
        return 0;
    }
    ckh_free(ck->alloc, ck->nodes); /* what a failed earlier call left */
    ck->nodes = ckh_calloc(ck->alloc, want ? want : 1, sizeof *ck->nodes);
    if (!ck->nodes)
        return CKH_ERRF(ck->errmsg, CKH_ENOMEM, "no memory for node managers");
    for (size_t i = 0; i < want; i++) {
        const char *name = ck->single ? ck->single_name : nodes[i];
        if ((rc = ckh_node_name_check(name)) != 0)
            return CKH_ERRF(ck->errmsg, rc, "bad node name '%s'", name ? name : "(null)");
        if (!(ck->nodes[i].node = ckh_strdup(ck->alloc, name)))
            return CKH_ERRF(ck->errmsg, CKH_ENOMEM, "no memory for node managers");
        ck->nodes[i].stat.node = ck->nodes[i].node;
        ck->nodes[i].stat.epoch = -1;
        ck->nnodes = i + 1;
    }
    return 0;
}

/* Fixes nm's blob list from the workspace. */
static int nm_take_blobs(struct ckh_ckpt *ck, struct node_mgr *nm, const struct ckh_ws *ws)
{
    size_t plen = strlen(nm->node), n = 0, total = ckh_ws_count(ws);
    nm_clear_blobs(ck, nm);
    nm->blobs = ckh_calloc(ck->alloc, total ? total : 1, sizeof *nm->blobs);
    if (!nm->blobs)
        return CKH_ERRF(ck->errmsg, CKH_ENOMEM, "no memory for the blob list of '%s'", nm->node);
    for (size_t i = 0; i < total; i++) {
        const char *name = ckh_ws_at(ws, i)->name;
        if (!ck->single && !(strncmp(name, nm->node, plen) == 0 && name[plen] == '/'))
            continue;
        if (!(nm->blobs[n] = ckh_strdup(ck->alloc, name))) {
            nm->nblobs = n;
            return CKH_ERRF(ck->errmsg, CKH_ENOMEM, "no memory for the blob list of '%s'", nm->node);
        }
        n++;
    }
    nm->nblobs = n;
    nm->inited = true;
    return 0;
}

static void stat_begin(struct ckh_ckpt *ck, struct node_mgr *nm, const char *op, int64_t epoch,
                       uint64_t *t0)
{
    nm->stat.op = op;
    nm->stat.epoch = epoch;
    nm->stat.result = 0;
    nm->stat.duration_ns = 0;
    if (ckh_backend_db_name(ck->backend, nm->node, epoch, nm->stat.db_name,
                            sizeof nm->stat.db_name) != 0)
        nm->stat.db_name[0] = '\0';
    *t0 = ckh_clock_now_ns(ck->env->clock);
}

static int stat_end(struct ckh_ckpt *ck, struct node_mgr *nm, uint64_t t0, int rc)
{
    nm->stat.duration_ns = ckh_clock_now_ns(ck->env->clock) - t0;
    nm->stat.result = rc;
    if (rc != 0 && rc != CKH_ENOTFOUND)
        CKH_ERRF(ck->errmsg, rc, "%s", ckh_backend_errmsg(ck->backend));
    return rc;
}

/* Loads blob list of nm (NULL list: all) from epoch into ws. */
static int nm_load(struct ckh_ckpt *ck, struct ckh_session *s, struct node_mgr *nm, int64_t epoch,
                   const char *op, const char *const *names, size_t count, unsigned flags)
{
    uint64_t t0;
    int rc;
    stat_begin(ck, nm, op, epoch, &t0);
    rc = ckh_backend_load(ck->backend, nm->node, epoch, s->ws, names, count, flags, NULL);
    if (rc == CKH_ENOTFOUND || rc == -ENOENT)
        CKH_ERRF(ck->errmsg, rc, "%s", ckh_backend_errmsg(ck->backend));
    return stat_end(ck, nm, t0, rc);
}

int ckh_ckpt_init(struct ckh_ckpt *ck, struct ckh_session *s, const char *const *nodes, size_t n,
                  int64_t retrieve_from_epoch)
{
    int rc;
    if (!ck || !s || !s->ws || (!nodes && n > 0))
        return ck ? CKH_ERRF(ck->errmsg, CKH_EINVAL, "init: NULL argument") : CKH_EINVAL;
    if ((rc = set_nodes(ck, nodes, n)) != 0)
        return rc;
    for (size_t i = 0; i < ck->nnodes; i++) {
        struct node_mgr *nm = &ck->nodes[i];
        if (!nm_local(ck, s, nm))
            continue;
        if (retrieve_from_epoch >= 0 &&
            (rc = nm_load(ck, s, nm, retrieve_from_epoch, "checkpoint_init", NULL, 0, 0)) != 0)
            return rc;
        if ((rc = nm_take_blobs(ck, nm, s->ws)) != 0)
            return rc;
    }
    return 0;
}

int ckh_ckpt_load(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch)
{
    int rc;
    if (!ck || !s || !s->ws)
        return CKH_EINVAL;
    if (ck->nnodes == 0)
        return CKH_ERRF(ck->errmsg, CKH_ESTATE, "init must be called first");
    for (size_t i = 0; i < ck->nnodes; i++) {
        struct node_mgr *nm = &ck->nodes[i];
        if (!nm_local(ck, s, nm))
            continue;
        if (!nm->inited) /* a NULL blob list would mean "every blob" */
            return CKH_ERRF(ck->errmsg, CKH_ESTATE, "node '%s': init must run before load", nm->node);
        rc = nm_load(ck, s, nm, epoch, "checkpoint_load", (const char *const *)nm->blobs,
                     nm->nblobs, 0);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Why resuming syncs: the save protocol (temporary file, fsync, rename,
 * fsync of the directory) can be cut by a kill between the rename and the
 * directory fsync. The restarted process sees the renamed checkpoint and
 * resumes from it, but the rename is still pending: a machine crash later
 * drops it and the next restart falls back one checkpoint further, losing
 * the interval it had resumed from as well as the one it was working on.
 * Syncing on resume closes that window; the file's data was fsynced before
 * the rename, so the directory is all that can still be pending. */
int ckh_ckpt_sync(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch)
{
    int rc;
    if (!ck || !s)
        return CKH_EINVAL;
    for (size_t i = 0; i < ck->nnodes; i++) {
        char name[CKH_PATH_MAX], dir[CKH_PATH_MAX];
        if (!nm_local(ck, s, &ck->nodes[i]))
            continue;
        if ((rc = ckh_backend_db_name(ck->backend, ck->nodes[i].node, epoch, name, sizeof name)) != 0 ||
            (rc = ckh_path_dirname(name, dir, sizeof dir)) != 0)
            return CKH_ERRF(ck->errmsg, rc, "no directory for the checkpoint of '%s', epoch %" PRId64,
                            ck->nodes[i].node, epoch);
        if ((rc = ckh_fs_fsync_dir(ck->env->fs, dir)) != 0)
            return CKH_ERRF(ck->errmsg, rc, "cannot sync %s holding %s: %s", dir, name, ckh_strerror(rc));
    }
    return 0;
}

int ckh_ckpt_save(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch)
{
    int rc;
    if (!ck || !s || !s->ws)
        return CKH_EINVAL;
    if (ck->nnodes == 0)
        return CKH_ERRF(ck->errmsg, CKH_ESTATE, "init must be called first");
    for (size_t i = 0; i < ck->nnodes; i++) {
        struct node_mgr *nm = &ck->nodes[i];
        uint64_t t0;
        if (!nm_local(ck, s, nm))
            continue;
        if (!nm->inited) /* a NULL blob list would save every node's blobs */
            return CKH_ERRF(ck->errmsg, CKH_ESTATE, "node '%s': init must run before save", nm->node);
        stat_begin(ck, nm, "checkpoint_save", epoch, &t0);
        rc = ckh_backend_save(ck->backend, nm->node, epoch, s->ws,
                              (const char *const *)nm->blobs, nm->nblobs);
        if ((rc = stat_end(ck, nm, t0, rc)) != 0)
            return CKH_ERRF(ck->errmsg, rc, "%s", ckh_backend_errmsg(ck->backend));
    }
    return 0;
}

int ckh_ckpt_load_blobs_locally(struct ckh_ckpt *ck, struct ckh_session *s,
                                const char *const *nodes, size_t n, const char *const *names,
                                size_t count, int64_t epoch)
{
    int rc;
    if (!ck || !s || !s->ws || (!names && count > 0))
        return CKH_EINVAL;
    if ((rc = set_nodes(ck, nodes, n)) != 0)
        return rc;
    for (size_t i = 0; i < ck->nnodes; i++) {
        struct node_mgr *nm = &ck->nodes[i];
        bool exists = false;
        if ((rc = ckh_backend_exists(ck->backend, nm->node, epoch, &exists)) != 0)
            return CKH_ERRF(ck->errmsg, rc, "%s", ckh_backend_errmsg(ck->backend));
        if (!exists) {
            char name[CKH_PATH_MAX];
            ckh_backend_db_name(ck->backend, nm->node, epoch, name, sizeof name);
            ckh_node_logf(ck->env->node, "checkpoint %s does not exist", name);
            return 0;
        }
        rc = nm_load(ck, s, nm, epoch, "checkpoint_partial_load", names, count,
                     CKH_LOAD_ALLOW_MISSING);
        if (rc != 0)
            return rc;
    }
    return 1;
}

int ckh_ckpt_db_name(const struct ckh_ckpt *ck, const char *node, int64_t epoch, char *buf,
                     size_t n)
{
    if (!ck || !node || !buf)
        return CKH_EINVAL;
    for (size_t i = 0; i < ck->nnodes; i++)
        if (strcmp(ck->nodes[i].node, node) == 0)
            return ckh_backend_db_name(ck->backend, node, epoch, buf, n);
    return CKH_ENOTFOUND;
}

int ckh_ckpt_write_metadata(struct ckh_ckpt *ck, struct ckh_session *s, int64_t epoch)
{
    int rc;
    if (!ck || !s)
        return CKH_EINVAL;
    if (!ck->meta)
        return 0;
    for (size_t i = 0; i < ck->nnodes; i++) {
        if (!nm_local(ck, s, &ck->nodes[i]))
            continue;
        if ((rc = ckh_meta_write(ck->meta, ck->nodes[i].node, epoch)) != 0)
            return CKH_ERRF(ck->errmsg, rc, "cannot record epoch %" PRId64, epoch);
    }
    return 0;
}

int ckh_ckpt_resume_epoch(struct ckh_ckpt *ck, const char *const *nodes, size_t n,
                          int64_t user_epoch, int64_t *out)
{
    const char **names;
    int rc;
    if (!ck || !out || (!nodes && n > 0))
        return CKH_EINVAL;
    *out = user_epoch < 0 ? -1 : user_epoch;
    if ((rc = set_nodes(ck, nodes, n)) != 0)
        return rc;
    if (!ck->meta || user_epoch >= 0)
        return 0;
    if (ck->single) {
        const char *one = ck->single_name;
        return ckh_meta_last_epoch(ck->meta, ck->backend, &one, 1, out);
    }
    if (ck->nnodes == 0)
        return 0;
    names = ckh_calloc(ck->alloc, ck->nnodes, sizeof *names);
    if (!names)
        return CKH_ENOMEM;
    for (size_t i = 0; i < ck->nnodes; i++)
        names[i] = ck->nodes[i].node;
    rc = ckh_meta_last_epoch(ck->meta, ck->backend, names, ck->nnodes, out);
    ckh_free(ck->alloc, names);
    return rc;
}

bool ckh_ckpt_accessible(struct ckh_ckpt *ck, int64_t epoch)
{
    struct ckh_stat st;
    if (!ck)
        return false;
    if (!ck->meta)
        return true;
    if (epoch < 0)
        return ckh_fs_stat(ck->env->fs, ck->prefix, &st) == 0 && st.type == CKH_FT_DIR;
    if (ck->nnodes == 0)
        return false;
    for (size_t i = 0; i < ck->nnodes; i++) {
        bool e = false;
        if (ckh_backend_exists(ck->backend, ck->nodes[i].node, epoch, &e) != 0 || !e)
            return false;
    }
    return true;
}

size_t ckh_ckpt_node_count(const struct ckh_ckpt *ck)
{
    return ck ? ck->nnodes : 0;
}

const char *ckh_ckpt_node_name(const struct ckh_ckpt *ck, size_t i)
{
    return ck && i < ck->nnodes ? ck->nodes[i].node : NULL;
}

int ckh_ckpt_stat_get(const struct ckh_ckpt *ck, size_t i, struct ckh_ckpt_stat *out)
{
    if (!ck || !out || i >= ck->nnodes)
        return CKH_EINVAL;
    *out = ck->nodes[i].stat;
    return 0;
}

void ckh_ckpt_report_stats(struct ckh_ckpt *ck, const char *action)
{
    if (!ck || !action)
        return;
    for (size_t i = 0; i < ck->nnodes; i++) {
        const struct ckh_ckpt_stat *st = &ck->nodes[i].stat;
        if (!st->op)
            continue;
        ckh_node_logf(ck->env->node, "checkpoint stats %s: %s %s %" PRIu64 " ns result %s", action,
                      st->node, st->db_name, st->duration_ns, ckh_err_name(st->result));
    }
}
