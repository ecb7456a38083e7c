/* Oracle "retention": the newest complete checkpoint in a command job's
 * object store is never deleted by the program's own retention
 * (docs/OBJECT_STORE.md, "Retention").
 *
 * Applies to a job with job.object_store.commit, the key glob of a
 * checkpoint's commit object (the scenarios' manifest of each step
 * folder), matched as a fault's `path` is (fnmatch without flags: `*`
 * also matches '/').
 *
 * Definitions, replayed over the store's operations in the order the
 * store applied them (exec/runner.h, struct ckh_store_op):
 *   - A checkpoint is made by a successful write (PutObject, CopyObject,
 *     CompleteMultipartUpload) of a key matching the glob: its commit
 *     object. The objects it names are the other keys of the same bucket
 *     under the commit object's folder (its key up to and including the
 *     last '/'; no '/': the whole bucket) that exist when it is written.
 *     Writing the commit object again makes the checkpoint again, naming
 *     what exists then.
 *   - A checkpoint is complete while its commit object and every object it
 *     names exist (a key exists while it has a current version: a delete,
 *     an expiry at rest or an undone write can end that, an undone delete
 *     can restore it).
 *   - The newest complete checkpoint is the complete one whose commit
 *     object was written last.
 * The oracle fails at the first DeleteObject of a node (each key of a
 * DeleteObjects request is one) that removes an existing object of the
 * newest complete checkpoint, its commit object included, naming the
 * store's operation, the node, the key, the run and the step the node had
 * reported. Deletes by ckh itself (s3-expire) and the crash model's undos
 * are not the program's retention. */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    const struct ckh_scn_object_store *os = r->sc->job.object_store;
    return os != NULL && os->commit != NULL && r->store_ops != NULL;
}

/* One checkpoint: its commit object and the keys it names (ids into the
 * key table). */
struct ckpt {
    size_t commit;     /* key id of the commit object */
    uint64_t seq;      /* the store operation that last wrote it */
    size_t *members;   /* owned */
    size_t nmembers;
};

struct judge {
    const struct ckh_store_op *ops;
    size_t nops;
    size_t *id_of;     /* [op]: its key's id */
    size_t *first_op;  /* [id]: an op of that key (for its bucket and name) */
    size_t nkeys;
    bool *exists;      /* [id] */
    struct ckpt *ck;   /* checkpoints, by commit key (one per commit object) */
    size_t nck;
};

static int op_cmp(const struct ckh_store_op *a, const struct ckh_store_op *b)
{
    int c = strcmp(a->bucket, b->bucket);
    return c != 0 ? c : strcmp(a->key, b->key);
}

/* qsort: by bucket, key, then place in the trace (pointers into one array). */
static int op_ptr_cmp(const void *pa, const void *pb)
{
    const struct ckh_store_op *a = *(const struct ckh_store_op *const *)pa, *b = *(const struct ckh_store_op *const *)pb;
    int c = op_cmp(a, b);
    return c != 0 ? c : (a > b) - (a < b);
}

/* Gives every distinct bucket/key an id; false when out of memory. */
static bool number_keys(struct judge *j)
{
    size_t n = j->nops;
    const struct ckh_store_op **by_key = malloc((n ? n : 1) * sizeof *by_key);
    j->id_of = malloc((n ? n : 1) * sizeof *j->id_of);
    j->first_op = malloc((n ? n : 1) * sizeof *j->first_op);
    if (by_key == NULL || j->id_of == NULL || j->first_op == NULL) {
        free(by_key);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        by_key[i] = &j->ops[i];
    qsort(by_key, n, sizeof *by_key, op_ptr_cmp);
    for (size_t i = 0; i < n; i++) {
        size_t at = (size_t)(by_key[i] - j->ops);
        if (i == 0 || op_cmp(by_key[i - 1], by_key[i]) != 0)
            j->first_op[j->nkeys++] = at;
        j->id_of[at] = j->nkeys - 1;
    }
    free(by_key);
    j->exists = calloc(j->nkeys ? j->nkeys : 1, sizeof *j->exists);
    return j->exists != NULL;
}

static const struct ckh_store_op *key_op(const struct judge *j, size_t id)
{
    return &j->ops[j->first_op[id]];
}

static bool is_commit_write(const struct ckh_store_op *o, const char *glob)
{
    bool write = strcmp(o->op, "PutObject") == 0 || strcmp(o->op, "CopyObject") == 0 ||
                 strcmp(o->op, "CompleteMultipartUpload") == 0;
    return write && o->result == 0 && o->exists && fnmatch(glob, o->key, 0) == 0;
}

/* Op i wrote commit object id: (re)makes its checkpoint, naming the keys
 * of its folder that exist now. false when out of memory. */
static bool commit(struct judge *j, size_t i, size_t id)
{
    struct ckpt *c = NULL;
    for (size_t k = 0; k < j->nck && c == NULL; k++)
        if (j->ck[k].commit == id)
            c = &j->ck[k];
    if (c == NULL) {
        struct ckpt *more = realloc(j->ck, (j->nck + 1) * sizeof *more);
        if (more == NULL)
            return false;
        j->ck = more;
        c = &j->ck[j->nck++];
        *c = (struct ckpt){.commit = id};
    }
    const struct ckh_store_op *o = &j->ops[i];
    const char *slash = strrchr(o->key, '/');
    size_t plen = slash != NULL ? (size_t)(slash - o->key) + 1 : 0;
    free(c->members);
    c->members = NULL;
    c->nmembers = 0;
    c->seq = o->seq;
    size_t cap = 0;
    for (size_t k = 0; k < j->nkeys; k++) {
        const struct ckh_store_op *ko = key_op(j, k);
        if (k == id || !j->exists[k] || strcmp(ko->bucket, o->bucket) != 0 || strncmp(ko->key, o->key, plen) != 0)
            continue;
        if (c->nmembers == cap) {
            cap = cap ? 2 * cap : 8;
            size_t *m = realloc(c->members, cap * sizeof *m);
            if (m == NULL)
                return false;
            c->members = m;
        }
        c->members[c->nmembers++] = k;
    }
    return true;
}

/* The newest complete checkpoint now, or NULL. */
static const struct ckpt *newest_complete(const struct judge *j)
{
    const struct ckpt *best = NULL;
    for (size_t k = 0; k < j->nck; k++) {
        const struct ckpt *c = &j->ck[k];
        bool whole = j->exists[c->commit];
        for (size_t m = 0; whole && m < c->nmembers; m++)
            whole = j->exists[c->members[m]];
        if (whole && (best == NULL || c->seq > best->seq))
            best = c;
    }
    return best;
}

static bool names(const struct ckpt *c, size_t id)
{
    if (c->commit == id)
        return true;
    for (size_t m = 0; m < c->nmembers; m++)
        if (c->members[m] == id)
            return true;
    return false;
}

static void judge_free(struct judge *j)
{
    for (size_t k = 0; k < j->nck; k++)
        free(j->ck[k].members);
    free(j->ck);
    free(j->exists);
    free(j->id_of);
    free(j->first_op);
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    const char *glob = r->sc->job.object_store->commit;
    struct judge j = {.ops = r->store_ops, .nops = r->nstore_ops};
    bool ok = true;
    size_t deletes = 0, commits = 0;
    if (!number_keys(&j)) {
        snprintf(detail, n, "out of memory replaying the object store's %zu operations", j.nops);
        ok = false;
        goto out_free;
    }
    for (size_t i = 0; i < j.nops; i++) {
        const struct ckh_store_op *o = &j.ops[i];
        size_t id = j.id_of[i];
        bool removes = o->node >= 0 && strcmp(o->op, "DeleteObject") == 0 && o->result == 0 && j.exists[id] &&
                       !o->exists;
        if (removes) {
            deletes++;
            const struct ckpt *c = newest_complete(&j);
            if (c != NULL && names(c, id)) {
                const struct ckh_store_op *co = key_op(&j, c->commit);
                char step[32] = "no step reported";
                if (o->step >= 0)
                    snprintf(step, sizeof step, "step %" PRId64, o->step);
                snprintf(detail, n,
                         "run %" PRIu32 ", %s: DeleteObject #%" PRIu64 " of rank_%d removed %s/%s%s of the newest "
                         "complete checkpoint: its commit object %s/%s (written by #%" PRIu64 ") and the %zu "
                         "objects it names",
                         o->run, step, o->seq, o->node, o->bucket, o->key,
                         c->commit == id ? ", the commit object," : "", co->bucket, co->key, c->seq, c->nmembers);
                if (o->step >= 0)
                    *divergent = o->step;
                ok = false;
                goto out_free;
            }
        }
        j.exists[id] = o->exists;
        if (is_commit_write(o, glob)) {
            commits++;
            if (!commit(&j, i, id)) {
                snprintf(detail, n, "out of memory replaying the object store's %zu operations", j.nops);
                ok = false;
                goto out_free;
            }
        }
    }
    snprintf(detail, n,
             "the program's %zu deletes removed no object of the newest complete checkpoint (%zu writes of "
             "commit objects matching %s)",
             deletes, commits, glob);
out_free:
    judge_free(&j);
    return ok;
}

const struct ckh_oracle_ops ckh__oracle_retention = {
    .name = "retention",
    .description = "the program's retention never deletes the newest complete checkpoint in the object store",
    .applies = applies,
    .check = check,
};
