/* Crash states of a job's object store (search/explore_store.h says what
 * and why; docs/OBJECT_STORE.md, "Exploring the requests", says how to use
 * it).
 *
 * Data flow:
 *   1. record: the fault-free reference run of the job, watched: each
 *      request a node sends to the endpoint is listed (node, operation,
 *      bucket/key), and before a request that follows a write (and before
 *      the first one) the store is cloned with how many bytes of each
 *      node's result file had been read by then (a cut); at the end of
 *      the run, the store once more (after a write) and every mount's
 *      disk, the files every state keeps;
 *   2. generate: each cut's writes in flight (applied, not answered) are
 *      kept, all undone, or each alone undone, on a clone of the cut; the
 *      states are numbered K in that order and each distinct one (by the
 *      store's content digest) is kept;
 *   3. check: each kept state, in K order, in the explorer's worker pool
 *      (search/explore_workers.h): a fresh execution of the job whose disks
 *      are the recorded run's last ones and whose store holds the state
 *      (ckh__cmd_replace_store), then `verify` or a restart judged by the
 *      oracles;
 *   4. report: the failures, smallest K first.
 * Interrupts stop it as they stop search/explore_program.c. Memory: a cut
 * holds a clone of the store's index (bodies shared by reference), so the
 * cost is O(cuts x (keys + parts)), never O(bytes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/objstore.h"
#include "ckh/posix.h"
#include "exec/command.h"
#include "exec/command_proc.h"
#include "exec/command_result.h"
#include "exec/tmpdir.h"
#include "judge/judge.h"
#include "search/explore_internal.h"
#include "search/explore_multi.h"
#include "search/explore_store.h"
#include "search/explore_workers.h"

#define XS_NAMES 64 /* nodes named in texts */

/* ---- 1. the recorded run ---- */

/* One request of the recorded run, in words ("rank_0 PutObject train/ckpt/latest"). */
struct xs_req {
    char text[200];
    bool writes;
};

/* A cut: the store before request k + 1 (requests 1..k applied). */
struct xs_cut {
    uint64_t k;                 /* requests applied */
    struct ckh_objstore *store; /* clone (owned) */
    int node;                   /* node of request k + 1 (-1: the end of the run) */
    int64_t step;               /* that node's last recorded step (-1: none) */
    uint64_t *result_bytes;     /* [n]: bytes of each node's result file read by then (owned) */
};

struct xs_rec {
    int n;                          /* nodes of the job */
    struct xs_req *reqs;            /* every request, in the order the store saw them (owned) */
    size_t nreqs, capreqs;
    struct xs_cut *cuts;            /* k ascending (owned) */
    size_t ncuts, capcuts;
    bool prev_writes;               /* the last request could change the store */
    int err;                        /* first failure (ENOMEM) */
    char (*results)[CKH__CMD_PATH_MAX]; /* [n]: run 1's result files (owned) */
    struct ckh_simfs **disks;       /* [ndisks]: each mount's disk at the end (owned) */
    size_t ndisks;
    bool files;                     /* the recorded run left files on its disks */
    char names[XS_NAMES][CKH_NODE_NAME_LEN];
};

static const char *node_name(const struct xs_rec *x, int node)
{
    return node >= 0 && node < XS_NAMES && x->names[node][0] ? x->names[node] : "the job";
}

static void take_cut(struct xs_rec *x, struct ckh__cmd *c, int node)
{
    if (x->err)
        return;
    if (x->ncuts == x->capcuts) {
        size_t cap = x->capcuts ? x->capcuts * 2 : 64;
        struct xs_cut *v = realloc(x->cuts, cap * sizeof *v);
        if (!v) {
            x->err = CKH_ENOMEM;
            return;
        }
        x->cuts = v;
        x->capcuts = cap;
    }
    /* cuts k ascending: a request lies between two of them */
    CKH_ASSERT(x->ncuts == 0 || x->cuts[x->ncuts - 1].k < x->nreqs);
    struct xs_cut *p = &x->cuts[x->ncuts];
    memset(p, 0, sizeof *p);
    p->k = x->nreqs;
    p->node = node;
    p->step = -1;
    p->result_bytes = calloc((size_t)x->n, sizeof *p->result_bytes);
    if (!p->result_bytes || ckh_objstore_clone(c->store, &p->store) != 0) {
        free(p->result_bytes);
        x->err = CKH_ENOMEM;
        return;
    }
    for (int i = 0; i < x->n && i < c->n; i++) {
        ckh__cmd_progress_refresh(c, i); /* c's lock held: every node's records so far */
        p->result_bytes[i] = ckh__xprog_result_consumed(&c->nodes[i]);
        if (i == node || (node < 0 && c->nodes[i].prog.step > p->step))
            p->step = c->nodes[i].prog.step;
    }
    x->ncuts++;
}

/* The watch's on_s3 (a port's thread; the store's lock and c's held). */
static void rec_req(void *ctx, struct ckh__cmd *c, const struct ckh_s3_request *rq)
{
    struct xs_rec *x = ctx;
    if (x->nreqs == 0 || x->prev_writes)
        take_cut(x, c, rq->node);
    if (x->err)
        return;
    if (x->nreqs == x->capreqs) {
        size_t cap = x->capreqs ? x->capreqs * 2 : 128;
        struct xs_req *v = realloc(x->reqs, cap * sizeof *v);
        if (!v) {
            x->err = CKH_ENOMEM;
            return;
        }
        x->reqs = v;
        x->capreqs = cap;
    }
    struct xs_req *r = &x->reqs[x->nreqs++];
    snprintf(r->text, sizeof r->text, "%s %s %.80s%s%.80s", node_name(x, rq->node), rq->op,
             rq->bucket ? rq->bucket : "-", rq->key ? "/" : "", rq->key ? rq->key : "");
    r->writes = rq->writes;
    x->prev_writes = rq->writes;
}

/* The watch's on_end: the store after the last request, the disks, and
 * where run 1's result files are. */
static void rec_end(void *ctx, struct ckh__cmd *c)
{
    struct xs_rec *x = ctx;
    if (c->store && x->prev_writes) {
        ckh_s3_server_lock(c->s3);
        take_cut(x, c, -1);
        ckh_s3_server_unlock(c->s3);
    }
    x->results = calloc((size_t)c->n, sizeof *x->results);
    x->disks = calloc(c->nmounts ? c->nmounts : 1, sizeof *x->disks);
    if (!x->results || !x->disks) {
        x->err = CKH_ENOMEM;
        return;
    }
    for (size_t m = 0; m < c->nmounts; m++) {
        if (ckh_simfs_clone(c->mounts[m].disk, &x->disks[m]) != 0) {
            x->err = CKH_ENOMEM;
            return;
        }
        x->ndisks++;
    }
    for (int i = 0; i < c->n; i++)
        snprintf(x->results[i], sizeof x->results[i], "%s", c->nodes[i].result);
}

static void rec_free(struct xs_rec *x)
{
    free(x->reqs);
    for (size_t i = 0; i < x->ncuts; i++) {
        ckh_objstore_destroy(x->cuts[i].store);
        free(x->cuts[i].result_bytes);
    }
    free(x->cuts);
    free(x->results);
    for (size_t i = 0; i < x->ndisks; i++)
        ckh_simfs_destroy(x->disks[i]);
    free(x->disks);
    memset(x, 0, sizeof *x);
}

/* ---- 2. the crash states ---- */

struct xs_state {
    uint64_t k;                 /* its number */
    size_t cut;                 /* its cut (index into cuts) */
    struct ckh_objstore *store; /* the crashed store (owned) */
    char desc[1024];            /* the crash, in words */
};

struct xs_states {
    struct xs_state *v;
    size_t n, cap;
    uint64_t generated;
    bool bounded;
};

static void states_free(struct xs_states *s)
{
    for (size_t i = 0; i < s->n; i++)
        ckh_objstore_destroy(s->v[i].store);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* Choice vector v of a cut with n writes in flight into keep (true:
 * kept): 0 all kept; 1 all undone; 2 + i only write i undone (n > 1).
 * false past the last. */
static bool vector(size_t v, size_t n, bool *keep)
{
    size_t last = n == 0 ? 0 : n == 1 ? 1 : 1 + n;
    if (v > last)
        return false;
    for (size_t i = 0; i < n; i++)
        keep[i] = v == 0 || (v >= 2 && i != v - 2);
    return true;
}

/* Open uploads of st, in words ("" when none). */
static void uploads_desc(const struct ckh_objstore *st, char *buf, size_t n)
{
    size_t open = 0;
    for (size_t b = 0; b < ckh_objstore_bucket_count(st); b++)
        open += ckh_objstore_mpu_open_count(st, ckh_objstore_bucket_name(st, b));
    buf[0] = '\0';
    if (open)
        snprintf(buf, n, "; %zu multipart upload%s left incomplete", open, open == 1 ? "" : "s");
}

static void describe(const struct xs_rec *x, const struct xs_cut *cut, size_t inflight, size_t v,
                     const struct ckh_objstore *st, char *buf, size_t bn)
{
    char at[480], rest[300] = "", up[96];
    if (cut->k == 0)
        snprintf(at, sizeof at, "before the first request (%s, not applied)", x->reqs[0].text);
    else
        snprintf(at, sizeof at, "after request %" PRIu64 " of %zu (%s)", cut->k, x->nreqs, x->reqs[cut->k - 1].text);
    if (cut->node >= 0 && cut->k > 0)
        snprintf(rest, sizeof rest, "; request %" PRIu64 " (%s) not applied", cut->k + 1, x->reqs[cut->k].text);
    size_t used = (size_t)snprintf(buf, bn, "%s%s", at, rest);
    if (cut->node < 0 && used < bn)
        used += (size_t)snprintf(buf + used, bn - used, ", the job's last");
    if (cut->step >= 0 && used < bn)
        used += (size_t)snprintf(buf + used, bn - used, "; %s after its step %" PRId64,
                                 cut->node >= 0 ? node_name(x, cut->node) : "the job", cut->step);
    if (inflight && used < bn)
        used += (size_t)snprintf(buf + used, bn - used, "; %zu write%s in flight: %s", inflight,
                                 inflight == 1 ? "" : "s",
                                 v == 0 ? "kept" : v == 1 ? "undone" : "one undone");
    if (v >= 2 && used < bn)
        used += (size_t)snprintf(buf + used, bn - used, " (the %zu%s)", v - 1,
                                 v - 1 == 1 ? "st" : v - 1 == 2 ? "nd" : v - 1 == 3 ? "rd" : "th");
    uploads_desc(st, up, sizeof up);
    if (up[0] && used < bn)
        snprintf(buf + used, bn - used, "%s", up);
}

/* Generates the states of every cut, keeping each distinct one (or state
 * `only` alone). */
static int generate(const struct xs_rec *x, uint64_t max_states, uint64_t only, struct xs_states *out)
{
    struct ckh__xseen seen = {0};
    int rc = 0;
    for (size_t i = 0; i < x->ncuts && rc == 0 && !out->bounded; i++) {
        if (ckh__cmd_interrupted()) {
            rc = -EINTR;
            break;
        }
        const struct xs_cut *cut = &x->cuts[i];
        size_t n = ckh_objstore_inflight_count(cut->store, -1);
        bool *keep = calloc(n ? n : 1, sizeof *keep);
        if (!keep) {
            rc = CKH_ENOMEM;
            break;
        }
        for (size_t v = 0; vector(v, n, keep); v++) {
            if (max_states && out->generated >= max_states) {
                out->bounded = true;
                break;
            }
            uint64_t k = ++out->generated;
            if (only && k != only)
                continue;
            struct ckh_objstore *st = NULL;
            if ((rc = ckh_objstore_clone(cut->store, &st)) != 0)
                break;
            int crc = n ? ckh_objstore_crash(st, -1, keep, n) : 0;
            if (crc < 0 || (!only && !ckh__explore_seen_insert(&seen, ckh_objstore_content_digest(st)))) {
                ckh_objstore_destroy(st);
                if (crc < 0) {
                    rc = crc;
                    break;
                }
                continue;
            }
            if (out->n == out->cap) {
                size_t cap = out->cap ? out->cap * 2 : 64;
                struct xs_state *nv = realloc(out->v, cap * sizeof *nv);
                if (!nv) {
                    ckh_objstore_destroy(st);
                    rc = CKH_ENOMEM;
                    break;
                }
                out->v = nv;
                out->cap = cap;
            }
            /* numbered in generation order: kept states k ascending */
            CKH_ASSERT(out->n == 0 || out->v[out->n - 1].k < k);
            struct xs_state *s = &out->v[out->n++];
            *s = (struct xs_state){.k = k, .cut = i, .store = st};
            describe(x, cut, n, v, st, s->desc, sizeof s->desc);
            if (only) {
                out->bounded = true; /* found: nothing after it matters */
                break;
            }
        }
        free(keep);
    }
    CKH_ASSERT(rc != 0 || (out->n <= out->generated && (only ? out->n <= 1 : seen.n == out->n)));
    free(seen.v);
    if (only)
        out->bounded = false;
    return rc;
}

/* ---- 3. the checks ---- */

struct xs_run {
    const struct ckh_scenario *sc;
    uint64_t seed;
    const struct ckh__cmd_job *je;
    const struct xs_rec *rec;
    const struct xs_states *st;
    const struct ckh_scenario_run *ref; /* the reference (restart check) */
    enum ckh_xprog_check check;
};

/* The pool's check (search/explore_workers.h): state i on a fresh
 * execution of the job in the worker's folder w<worker>/check (removed
 * after each state, so every state's programs see the same paths). */
static void check_state(const void *ctx, struct ckh__xw_worker *wk, size_t i, struct ckh__xw_slot *s)
{
    const struct xs_run *w = ctx;
    const struct xs_state *st = &w->st->v[i];
    char dir[CKH__CMD_PATH_MAX + 64];
    struct ckh__cmd c;
    memset(&c, 0, sizeof c);
    snprintf(dir, sizeof dir, "%s/w%u/check", w->je->dir, wk->index);
    int rc = ckh__cmd_init(&c, w->sc, w->seed, 0, dir, w->je->cwd);
    c.warm = wk->warm;
    /* the files as the recorded run left them */
    struct ckh_simfs **disks = calloc(w->rec->ndisks ? w->rec->ndisks : 1, sizeof *disks);
    size_t nd = 0;
    if (rc == 0 && !disks)
        rc = ckh__cmd_fail(&c, CKH_ENOMEM, "out of memory");
    for (; rc == 0 && nd < w->rec->ndisks; nd++)
        if ((rc = ckh_simfs_clone(w->rec->disks[nd], &disks[nd])) != 0)
            rc = ckh__cmd_fail(&c, rc, "out of memory");
    if (rc == 0 && (rc = ckh__cmd_replace_disks(&c, disks, nd)) == 0)
        nd = 0; /* c owns them */
    for (size_t d = 0; d < nd; d++)
        ckh_simfs_destroy(disks[d]);
    free(disks);
    if (rc == 0)
        rc = ckh__cmd_replace_store(&c, st->store);
    if (rc == 0 && w->check == CKH_XPROG_VERIFY) {
        bool ok = false;
        rc = ckh__cmd_verify_view(&c, 0, &ok, s->text, sizeof s->text);
        s->failed = rc == 0 && !ok;
    } else if (rc == 0) {
        const char *res[CKH_RUNNER_MAX_NODES];
        for (int n = 0; n < c.n && n < CKH_RUNNER_MAX_NODES; n++)
            res[n] = w->rec->results[n];
        rc = ckh__xw_restart_judge(&c, w->ref, res, w->rec->cuts[st->cut].result_bytes, s);
    }
    if (rc) {
        s->rc = rc;
        ckh__cmd_take_err(&c, rc, NULL, s->text, sizeof s->text);
    } else {
        /* the check's own folder in a message reads the same for every state */
        ckh__xprog_replace_all(s->text, sizeof s->text, c.dir, "<check>");
    }
    s->done = 1;
    ckh__cmd_free(&c);
    ckh_tmp_remove(dir);
}

/* ---- keeping one state's objects ---- */

/* path (n bytes) gets "/" and one key component, escaped where a file
 * name could not hold it or could be mistaken: "" as "%", "." and ".." as
 * %2E, and every '%' as %25. */
static void add_component(char *path, size_t n, const char *comp, size_t len)
{
    size_t at = strlen(path);
    bool esc = len == 0 || (len == 1 && comp[0] == '.') || (len == 2 && comp[0] == '.' && comp[1] == '.');
    at += (size_t)snprintf(path + at, n - at, "/");
    for (size_t i = 0; i < len || (esc && i == 0 && len == 0); i++) {
        if (at + 4 >= n)
            return;
        if (len == 0) {
            at += (size_t)snprintf(path + at, n - at, "%%");
            break;
        }
        if (esc || comp[i] == '%')
            at += (size_t)snprintf(path + at, n - at, "%%%02X", (unsigned char)comp[i]);
        else
            path[at++] = comp[i], path[at] = '\0';
    }
}

/* Writes o's bytes to the file DIR/BUCKET/KEY (folders made on the way). */
static int keep_object(const char *dir, const char *bucket, const char *key, const struct ckh_objstore_object *o,
                       char *err, size_t errlen)
{
    char path[CKH__CMD_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s", dir);
    add_component(path, sizeof path, bucket, strlen(bucket));
    const char *p = key;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        add_component(path, sizeof path, p, len);
        if (!slash)
            break;
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return ckh_errf(err, errlen, CKH_EINTERNAL, "--keep: cannot create %s for the object %s/%s: %s", path,
                            bucket, key, strerror(errno));
        p = slash + 1;
    }
    FILE *f = fopen(path, "wbx");
    if (!f)
        return ckh_errf(err, errlen, CKH_EINTERNAL, "--keep: cannot write the object %s/%s to %s: %s", bucket,
                        key, path, strerror(errno));
    char buf[65536];
    uint64_t off = 0;
    size_t got;
    bool ok = true;
    while (ok && (got = ckh_objstore_object_read(o, off, buf, sizeof buf)) > 0) {
        ok = fwrite(buf, 1, got, f) == got;
        off += got;
    }
    if (fclose(f) != 0 || !ok)
        return ckh_errf(err, errlen, CKH_EINTERNAL, "--keep: writing %s: %s", path, strerror(errno));
    return 0;
}

/* Writes st's objects into the real folder dir (absent or empty; created):
 * DIR/BUCKET/KEY, each key's '/' a folder. st is the caller's state: the
 * reads add trace lines to it and nothing else. */
static int keep_store(struct ckh_objstore *st, const char *dir, char *err, size_t errlen)
{
    int krc = ckh__xw_keep_dir(dir, "objects", err, errlen);
    if (krc != 0)
        return krc;
    int rc = 0;
    for (size_t b = 0; rc == 0 && b < ckh_objstore_bucket_count(st); b++) {
        char *bucket = strdup(ckh_objstore_bucket_name(st, b));
        char bdir[CKH__CMD_PATH_MAX * 2];
        if (!bucket)
            return ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
        snprintf(bdir, sizeof bdir, "%s", dir);
        add_component(bdir, sizeof bdir, bucket, strlen(bucket));
        if (mkdir(bdir, 0777) != 0 && errno != EEXIST)
            rc = ckh_errf(err, errlen, CKH_EINTERNAL, "--keep: cannot create %s: %s", bdir, strerror(errno));
        char *token = NULL;
        do {
            struct ckh_objstore_list_params lp = {.token = token};
            struct ckh_objstore_listing l;
            memset(&l, 0, sizeof l);
            int lrc = rc ? rc : ckh_objstore_list(st, -1, bucket, &lp, &l);
            free(token);
            token = NULL;
            if (lrc != 0 && rc == 0)
                rc = ckh_errf(err, errlen, CKH_EINTERNAL, "--keep: listing %s: %s", bucket,
                              lrc < 0 ? ckh_strerror(lrc) : ckh_s3_err_code(lrc));
            for (size_t e = 0; rc == 0 && e < l.nentries; e++) {
                struct ckh_objstore_req rq = {.node = -1, .bucket = bucket, .key = l.entries[e].key};
                struct ckh_objstore_object *o = NULL;
                int grc = ckh_objstore_get(st, &rq, false, &o);
                if (grc != 0)
                    rc = ckh_errf(err, errlen, CKH_EINTERNAL, "--keep: reading %s/%s: %s", bucket,
                                  l.entries[e].key, grc < 0 ? ckh_strerror(grc) : ckh_s3_err_code(grc));
                else
                    rc = keep_object(dir, bucket, l.entries[e].key, o, err, errlen);
                ckh_objstore_object_unref(o);
            }
            if (rc == 0 && l.truncated && l.next_token && !(token = strdup(l.next_token)))
                rc = ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
            ckh_objstore_listing_free(&l);
        } while (rc == 0 && token);
        free(token);
        free(bucket);
    }
    return rc;
}

/* ---- the entry point ---- */

static int record_run(const struct ckh_scenario *sc, uint64_t seed, uint64_t t0, struct ckh__cmd_job *je,
                      struct xs_rec *x, struct ckh_scenario_run *ref, struct ckh_xprog_result *out, char *err,
                      size_t errlen)
{
    int rc;
    if ((rc = ckh__cmd_job_begin(sc, je, err, errlen)) != 0)
        return rc;
    struct ckh__cmd_watch watch = {.on_end = rec_end, .on_s3 = rec_req, .ctx = x};
    if ((rc = ckh__cmd_reference(sc, seed, je, &watch, ref, err, errlen)) != 0)
        return rc;
    if ((rc = x->err) != 0 || !x->results)
        return ckh_errf(err, errlen, rc ? rc : CKH_ENOMEM, "recording the run: out of memory");
    out->record_ms = ckh_posix_now_ms() - t0;
    out->ops = x->nreqs;
    out->crash_points = x->ncuts;
    return 0;
}

/* Whether the recorded run left any file on its disks (then every state
 * keeps them, and the report says so). */
static bool any_files(const struct xs_rec *x)
{
    for (size_t d = 0; d < x->ndisks; d++) {
        struct ckh_listing l;
        if (ckh_fs_listdir(ckh_simfs_fs(x->disks[d]), "/", &l) != 0)
            continue;
        bool some = l.count > 0;
        ckh_fs_listing_free(&l);
        if (some)
            return true;
    }
    return false;
}

int ckh__xstore_explore(const struct ckh_scenario *sc, const struct ckh_xprog_options *o,
                        enum ckh_xprog_check check, enum ckh_xprog_start start,
                        struct ckh_xprog_result *out, char *err, size_t errlen)
{
    const struct ckh_scn_explore *e = &sc->explore;
    uint64_t max_states = o->max_states ? o->max_states : e->max_states;
    uint64_t limit_ms = o->time_limit_ms ? o->time_limit_ms : e->time_limit_ns / 1000000u;
    if (o->only_order)
        return ckh_errf(err, errlen, CKH_EINVAL, "--order %" PRIu64 ": this job's states are cuts of its object "
                        "store's requests; orders are of several nodes' operations on a shared disk", o->only_order);
    if ((o->crashes ? (int)o->crashes : e->crashes) == CKH_XPROG_CRASH_NONE)
        return ckh_errf(err, errlen, CKH_EINVAL, "crashes none: this job's states are cuts of its object store's "
                        "requests, and it has no orders of several nodes' operations to explore instead");
    struct ckh__cmd_job je;
    struct xs_rec x;
    struct xs_states st;
    struct ckh_scenario_run ref;
    struct ckh__xw_slot *slots = NULL;
    size_t *order = NULL;
    memset(&je, 0, sizeof je);
    memset(&x, 0, sizeof x);
    memset(&st, 0, sizeof st);
    memset(&ref, 0, sizeof ref);
    x.n = (int)(sc->job.nodes ? sc->job.nodes : 1);
    for (int i = 0; i < x.n && i < XS_NAMES; i++)
        snprintf(x.names[i], sizeof x.names[i], "rank_%d", i);
    ref.sc = sc;
    ref.source_dir = o->source_dir ? o->source_dir : ".";
    uint64_t seed = o->seed_set ? o->seed : sc->seed;
    ref.seed = seed;
    out->check = check;
    out->start = start;

    uint64_t t0 = ckh_posix_now_ms();
    int rc = record_run(sc, seed, t0, &je, &x, &ref, out, err, errlen);
    if (rc != 0)
        goto out;
    if (x.nreqs == 0) {
        rc = ckh_errf(err, errlen, CKH_EINVAL, "%s: the recorded run sent no request to job.object_store's "
                      "endpoint, so it has no request to cut (explore its files without job.object_store)",
                      sc->file);
        goto out;
    }
    x.files = any_files(&x);
    snprintf(out->note, sizeof out->note, "store: %zu requests to the object store cut at %zu points%s", x.nreqs,
             x.ncuts, x.files ? "; the files are as the recorded run left them at its end in every state" : "");
    if ((rc = generate(&x, max_states, o->only_state, &st)) != 0) {
        if (rc == -EINTR)
            ckh_errf(err, errlen, rc, "interrupted by signal %d", ckh__cmd_interrupted());
        else
            ckh_errf(err, errlen, rc, "generating crash states: %s", ckh_strerror(rc));
        goto out;
    }
    out->states = st.generated;
    out->distinct = st.n;
    out->bounded = st.bounded;
    if (st.bounded)
        snprintf(out->bound, sizeof out->bound, "max_states %" PRIu64 " reached (the cuts after request %" PRIu64
                 " were not explored)", max_states, st.n ? x.cuts[st.v[st.n - 1].cut].k : 0);
    if (o->only_state && st.n == 0) {
        rc = ckh_errf(err, errlen, CKH_EINVAL, "--state %" PRIu64 ": this run has %" PRIu64 " crash states",
                      o->only_state, st.generated);
        goto out;
    }
    if (o->only_state) {
        size_t used = strlen(out->note);
        snprintf(out->note + used, sizeof out->note - used, "\nstate %" PRIu64 ": %s", st.v[0].k, st.v[0].desc);
    }
    if (o->keep_dir && (rc = keep_store(st.v[0].store, o->keep_dir, err, errlen)) != 0)
        goto out;
    if (!(order = malloc((st.n ? st.n : 1) * sizeof *order))) {
        rc = ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < st.n; i++)
        order[i] = i; /* K order */
    uint64_t t1 = ckh_posix_now_ms();
    struct xs_run w = {.sc = sc, .seed = seed, .je = &je, .rec = &x, .st = &st, .ref = &ref, .check = check};
    struct ckh__xw_pool p = {.n = st.n, .order = order, .jobs = o->jobs ? o->jobs : 1,
                             .deadline_ms = limit_ms ? t0 + limit_ms : 0, .start = start, .dir = je.dir,
                             .check = check_state, .end = NULL, .ctx = &w};
    if ((rc = ckh__xw_check_all(&p, &slots, out)) != 0) {
        ckh_errf(err, errlen, rc, "checking crash states: %s", ckh_strerror(rc));
        goto out;
    }
    out->check_ms = ckh_posix_now_ms() - t1;
    if (ckh__cmd_interrupted()) {
        rc = ckh_errf(err, errlen, -EINTR, "interrupted by signal %d", ckh__cmd_interrupted());
        goto out;
    }
    size_t nfail = 0;
    for (size_t i = 0; i < st.n; i++) {
        if (slots[i].rc) {
            rc = ckh_errf(err, errlen, slots[i].rc, "state %" PRIu64 ": %s", st.v[i].k, slots[i].text);
            goto out;
        }
        out->checked += slots[i].done != 0;
        nfail += slots[i].failed != 0;
    }
    if (out->checked < st.n && !out->bounded) {
        out->bounded = true;
        snprintf(out->bound, sizeof out->bound, "time limit %" PRIu64 " s reached (%" PRIu64 " of %zu distinct "
                 "states checked)", limit_ms / 1000u, out->checked, st.n);
    }
    if (nfail && !(out->fails = calloc(nfail, sizeof *out->fails))) {
        rc = ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < st.n; i++) {
        if (!slots[i].failed)
            continue;
        struct ckh_xprog_failure *f = &out->fails[out->nfails++];
        f->k = st.v[i].k;
        snprintf(f->state, sizeof f->state, "%s", st.v[i].desc);
        snprintf(f->symptom, sizeof f->symptom, "%s", slots[i].text);
    }
    CKH_ASSERT(out->nfails == nfail && nfail <= out->checked && out->checked <= out->distinct);
out:
    free(slots);
    free(order);
    states_free(&st);
    rec_free(&x);
    ckh_scenario_run_free(&ref);
    ckh__cmd_job_end(&je);
    if (rc)
        ckh_xprog_result_free(out);
    return rc;
}
