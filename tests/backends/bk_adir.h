/* The atomic directory saver (reference/atomic_dir.c, include/ckh/atomic.h)
 * presented as a checkpoint backend, so that the crash explorer and
 * `ckh validate-backend` can judge it. Each tests/backends/bk_adir*.c
 * defines BK_ADIR_NAME, BK_ADIR_KEEP_LAST and BK_ADIR_DEFECTS (a mask of
 * 1 << enum ckh_defect) and includes this file; CMake builds each as a
 * plugin. The saver's own code does the work; this file only maps ops.
 *
 * SPECIFICATION
 * A1. One saver per node: ckh_adir_create with output_dir = the config's
 *     prefix, name = the node, is_master, strategy sync_any, keep_last =
 *     BK_ADIR_KEEP_LAST, the defect switches; env = {fs, alloc, rand of
 *     the config; no collectives (a one-rank world), no node, no clock}.
 *     Folders are <prefix>/<node>_checkpoint_<N>, the pointer
 *     <prefix>/<node>.latest_checkpoint.
 * A2. save(node, epoch): prepare a folder; write the blobs into
 *     <folder>/<node>.<epoch> with the atomic file save (ckh_atomic_save,
 *     same defect switches); commit (marker, pointer, then retention of
 *     committed folders beyond the newest keep_last). A save that fails
 *     leaves an uncommitted folder that the next prepare removes.
 * A3. Committed, as the saver resumes: the folders ckh_adir_list reports
 *     (commit marker present) up to and including the one the pointer
 *     names (ckh_adir_latest); newer marked folders are not committed (the
 *     next prepare removes them). No pointer: nothing is committed. A
 *     pointer naming a folder without a marker is an error (CKH_ECORRUPT,
 *     from ckh_adir_latest) for list_epochs and load: the saver cannot
 *     resume.
 * A4. list_epochs: the epochs of the committed folders, ascending, each
 *     once. load(epoch): the newest committed folder holding
 *     <node>.<epoch>; CKH_ENOTFOUND when none does. exists and db_name
 *     likewise. remove is not offered: retention is the saver's own.
 * A5. File format: "BKAD", u32 nblobs, per blob u32 name_len, name, u32
 *     dtype, u32 ndim, u64 shape[ndim], u64 size, the bytes (described
 *     blobs are written out); last a u32 CRC-32C of every byte before it.
 *     Load verifies the CRC and every length before changing the
 *     workspace (all or nothing).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/atomic.h"
#include "ckh/err.h"
#include "ckh/plugin.h"

/* Error texts are bounded; a long path is cut short on purpose. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

struct bka {
    struct ckh_backend base;       /* must be first */
    struct ckh_env env;            /* what the saver runs on (fs, alloc, rand) */
    struct ckh_defect_set defects; /* BK_ADIR_DEFECTS */
    char prefix[512];              /* output directory */
};

/* A node's committed folders (A3), oldest first. */
struct bka_folders {
    char **names;  /* ckh_adir_list's array (owned through the saver) */
    size_t count;  /* committed folders kept (a prefix of names) */
    size_t all;    /* entries of names (for the free) */
};

static const struct ckh_backend_ops bka_ops;

static int bka_fail(struct bka *k, int rc, const char *fmt, const char *a, const char *b)
{
    snprintf(k->base.errmsg, sizeof(k->base.errmsg), fmt, a, b);
    return rc;
}

static int bka_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    if (!cfg || !cfg->fs || !cfg->prefix || strlen(cfg->prefix) >= sizeof(((struct bka *)0)->prefix))
        return CKH_EINVAL;
    struct bka *k = ckh_calloc(cfg->alloc, 1, sizeof(*k));
    if (!k)
        return CKH_ENOMEM;
    k->base.ops = &bka_ops;
    k->env.fs = cfg->fs;
    k->env.alloc = cfg->alloc;
    k->env.rand = cfg->rand;
    k->defects.bits = BK_ADIR_DEFECTS;
    snprintf(k->prefix, sizeof(k->prefix), "%s", cfg->prefix);
    *out = &k->base;
    return 0;
}

static void bka_close(struct ckh_backend *b)
{
    if (b)
        ckh_free(((struct bka *)b)->env.alloc, b);
}

/* A1: the node's saver. */
static int bka_saver(struct bka *k, const char *node, struct ckh_adir **out)
{
    struct ckh_adir_config c;
    memset(&c, 0, sizeof(c));
    c.output_dir = k->prefix;
    c.is_master = true;
    c.name = node;
    c.keep_last = BK_ADIR_KEEP_LAST;
    c.strategy = CKH_ADIR_SYNC_ANY;
    c.defects = &k->defects;
    int rc = ckh_adir_create(&k->env, &c, out);
    return rc ? bka_fail(k, rc, "atomic directory saver for %s: %s", node, ckh_strerror(rc)) : 0;
}

/* A3: the committed folders of the saver, oldest first. */
static int bka_committed(struct bka *k, struct ckh_adir *s, struct bka_folders *f)
{
    char latest[CKH_PATH_MAX + 1];
    memset(f, 0, sizeof(*f));
    int rc = ckh_adir_latest(s, latest, sizeof(latest));
    if (rc == CKH_ENOTFOUND)
        return 0;
    if (rc)
        return bka_fail(k, rc, "%s%s", ckh_adir_errmsg(s), "");
    if ((rc = ckh_adir_list(s, &f->names, &f->all)) != 0)
        return bka_fail(k, rc, "listing folders: %s%s", ckh_adir_errmsg(s), "");
    const char *base = strrchr(latest, '/') + 1;
    for (size_t i = 0; i < f->all; i++)
        if (strcmp(f->names[i], base) == 0)
            f->count = i + 1;
    return 0;
}

/* The epoch of a data file name "<node>.<E>"; -1 for anything else. */
static int64_t bka_epoch_of(const char *name, const char *node)
{
    size_t nl = strlen(node);
    if (strncmp(name, node, nl) != 0 || name[nl] != '.' || name[nl + 1] < '0' ||
        name[nl + 1] > '9')
        return -1;
    int64_t e = 0;
    for (const char *p = name + nl + 1; *p; p++) {
        if (*p < '0' || *p > '9' || e > (INT64_MAX - 9) / 10)
            return -1;
        e = e * 10 + (*p - '0');
    }
    return e;
}

/* Calls fn for every committed data file of node (oldest folder first)
 * until it returns non-zero; that value is returned. */
static int bka_walk(struct bka *k, const char *node,
                    int (*fn)(void *ctx, const char *folder, int64_t epoch), void *ctx)
{
    struct ckh_adir *s;
    struct bka_folders f;
    int rc = bka_saver(k, node, &s);
    if (rc)
        return rc;
    if ((rc = bka_committed(k, s, &f)) != 0)
        goto out_saver;
    for (size_t i = 0; i < f.count && rc == 0; i++) {
        char folder[CKH_PATH_MAX + 1];
        struct ckh_listing l;
        if (ckh_path_join(folder, sizeof(folder), k->prefix, f.names[i]))
            continue;
        if ((rc = ckh_atomic_listdir(k->env.fs, k->env.alloc, folder, &l)) != 0) {
            rc = bka_fail(k, rc, "listdir %s: %s", folder, ckh_strerror(rc));
            break;
        }
        for (size_t j = 0; j < l.count && rc == 0; j++) {
            int64_t e = bka_epoch_of(l.entries[j].name, node);
            if (e >= 0 && l.entries[j].type == CKH_FT_FILE)
                rc = fn(ctx, folder, e);
        }
        ckh_atomic_listing_free(k->env.alloc, &l);
    }
    ckh_adir_list_free(s, f.names, f.all);
out_saver:
    ckh_adir_destroy(s);
    return rc;
}

/* ---- save ---- */

struct bka_buf {
    unsigned char *p; /* bytes (from the config's allocator) */
    size_t n;         /* used */
    size_t cap;       /* allocated */
    struct ckh_alloc *alloc; /* where p comes from */
};

/* Makes room for n more bytes. */
static int bka_reserve(struct bka_buf *b, size_t n)
{
    if (b->n + n <= b->cap)
        return 0;
    size_t cap = (b->cap + n) * 2;
    unsigned char *p = ckh_realloc(b->alloc, b->p, cap);
    if (!p)
        return CKH_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int bka_put(struct bka_buf *b, const void *d, size_t n)
{
    int rc = bka_reserve(b, n);
    if (rc == 0 && n) {
        memcpy(b->p + b->n, d, n);
        b->n += n;
    }
    return rc;
}

static bool bka_wanted(const char *name, const char *const *names, size_t count)
{
    if (!names)
        return true;
    for (size_t i = 0; i < count; i++)
        if (names[i] && strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* A5: encodes the wanted blobs of ws. */
static int bka_encode(const struct ckh_ws *ws, const char *const *names, size_t count,
                      struct bka_buf *b)
{
    uint32_t nb = 0;
    for (size_t i = 0; i < ckh_ws_count(ws); i++)
        nb += bka_wanted(ckh_ws_at(ws, i)->name, names, count);
    int rc = bka_put(b, "BKAD", 4);
    rc = rc ? rc : bka_put(b, &nb, 4);
    for (size_t i = 0; rc == 0 && i < ckh_ws_count(ws); i++) {
        const struct ckh_blob *bl = ckh_ws_at(ws, i);
        if (!bka_wanted(bl->name, names, count))
            continue;
        uint32_t nl = (uint32_t)strlen(bl->name), dt = (uint32_t)bl->dtype;
        rc = bka_put(b, &nl, 4);
        rc = rc ? rc : bka_put(b, bl->name, nl);
        rc = rc ? rc : bka_put(b, &dt, 4);
        rc = rc ? rc : bka_put(b, &bl->ndim, 4);
        rc = rc ? rc : bka_put(b, bl->shape, 8 * (size_t)bl->ndim);
        rc = rc ? rc : bka_put(b, &bl->size_bytes, 8);
        if (rc == 0 && bl->described) {
            size_t at = b->n;
            rc = bka_reserve(b, bl->size_bytes);
            if (rc == 0) {
                ckh_gen_fill(&bl->gen, 0, b->p + at, bl->size_bytes);
                b->n = at + bl->size_bytes;
            }
        } else if (rc == 0 && bl->size_bytes) {
            rc = bka_put(b, bl->data, bl->size_bytes);
        }
    }
    if (rc == 0) {
        uint32_t crc = ckh_crc32c(0, b->p, b->n);
        rc = bka_put(b, &crc, 4);
    }
    return rc;
}

static int bka_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                    const char *const *names, size_t count)
{
    struct bka *k = (struct bka *)b;
    struct ckh_adir *s;
    struct ckh_atomic at;
    struct bka_buf buf = {.alloc = k->env.alloc};
    char folder[CKH_PATH_MAX + 1], path[CKH_PATH_MAX + 1], file[CKH_NODE_NAME_MAX + 24];
    int rc = bka_saver(k, node, &s);
    if (rc)
        return rc;
    if ((rc = ckh_adir_prepare(s, false, folder, sizeof(folder))) != 0) {
        bka_fail(k, rc, "prepare: %s%s", ckh_adir_errmsg(s), "");
        goto out_saver;
    }
    snprintf(file, sizeof(file), "%s.%" PRId64, node, epoch);
    if (ckh_path_join(path, sizeof(path), folder, file)) {
        rc = bka_fail(k, CKH_EINVAL, "path too long: %s/%s", folder, file);
        goto out_saver;
    }
    if ((rc = bka_encode(ws, names, count, &buf)) != 0) {
        bka_fail(k, rc, "encoding %s: %s", path, ckh_strerror(rc));
        goto out_buf;
    }
    if ((rc = ckh_atomic_init(&at, &k->env, &k->defects)) != 0 ||
        (rc = ckh_atomic_save(&at, path, buf.p, buf.n)) != 0) {
        bka_fail(k, rc, "saving %s: %s", path, at.errmsg);
        goto out_buf;
    }
    if ((rc = ckh_adir_commit(s, folder)) != 0)
        bka_fail(k, rc, "commit: %s%s", ckh_adir_errmsg(s), "");
out_buf:
    ckh_free(k->env.alloc, buf.p);
out_saver:
    ckh_adir_destroy(s);
    return rc;
}

/* ---- list, exists, db_name ---- */

struct bka_epochs {
    struct ckh_alloc *alloc; /* the config's allocator */
    int64_t *v;              /* sorted, unique */
    size_t n;                /* used */
    size_t cap;              /* allocated */
};

static int bka_add_epoch(void *ctx, const char *folder, int64_t e)
{
    struct bka_epochs *x = ctx;
    (void)folder;
    size_t j = 0;
    while (j < x->n && x->v[j] < e)
        j++;
    if (j < x->n && x->v[j] == e)
        return 0;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        int64_t *v = ckh_realloc(x->alloc, x->v, cap * sizeof(*v));
        if (!v)
            return CKH_ENOMEM;
        x->v = v;
        x->cap = cap;
    }
    memmove(&x->v[j + 1], &x->v[j], (x->n - j) * sizeof(*x->v));
    x->v[j] = e;
    x->n++;
    return 0;
}

static int bka_list_epochs(struct ckh_backend *b, const char *node, int64_t **epochs, size_t *count)
{
    struct bka *k = (struct bka *)b;
    struct bka_epochs x = {.alloc = k->env.alloc};
    *epochs = NULL;
    *count = 0;
    int rc = bka_walk(k, node, bka_add_epoch, &x);
    if (rc || x.n == 0) {
        ckh_free(k->env.alloc, x.v);
        return rc;
    }
    *epochs = x.v;
    *count = x.n;
    return 0;
}

/* Finds the newest committed folder holding one epoch. */
struct bka_find {
    int64_t epoch;                  /* wanted */
    char folder[CKH_PATH_MAX + 1];  /* newest folder seen holding it ("" none) */
};

static int bka_find_cb(void *ctx, const char *folder, int64_t e)
{
    struct bka_find *f = ctx;
    if (e == f->epoch)
        snprintf(f->folder, sizeof(f->folder), "%s", folder);
    return 0;
}

static int bka_locate(struct bka *k, const char *node, int64_t epoch, char *path, size_t n)
{
    struct bka_find f = {.epoch = epoch};
    char file[CKH_NODE_NAME_MAX + 24];
    int rc = bka_walk(k, node, bka_find_cb, &f);
    if (rc)
        return rc;
    snprintf(file, sizeof(file), "%s.%" PRId64, node, epoch);
    if (!f.folder[0])
        return bka_fail(k, CKH_ENOTFOUND, "no committed folder holds %s%s", file, "");
    if (ckh_path_join(path, n, f.folder, file))
        return bka_fail(k, CKH_EINVAL, "path too long: %s/%s", f.folder, file);
    return 0;
}

static int bka_exists(struct ckh_backend *b, const char *node, int64_t epoch, bool *out)
{
    char path[CKH_PATH_MAX + 1];
    int rc = bka_locate((struct bka *)b, node, epoch, path, sizeof(path));
    *out = rc == 0;
    return rc == CKH_ENOTFOUND ? 0 : rc;
}

static int bka_db_name(struct ckh_backend *b, const char *node, int64_t epoch, char *buf, size_t n)
{
    return bka_locate((struct bka *)b, node, epoch, buf, n);
}

/* ---- load ---- */

static uint32_t bka_get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t bka_get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* One decoded blob, pointing into the file's bytes. */
struct bka_blob {
    char name[CKH_BLOB_NAME_MAX + 1]; /* blob name */
    uint32_t dtype;                   /* enum ckh_dtype */
    uint32_t ndim;                    /* dimensions */
    uint64_t shape[CKH_BLOB_MAX_DIMS]; /* shape */
    const unsigned char *data;        /* bytes (in the file buffer) */
};

/* A5: checks and decodes every record before anything is loaded. */
static int bka_decode(const unsigned char *p, size_t n, struct bka_blob **out, uint32_t *cnt,
                      struct ckh_alloc *alloc)
{
    if (n < 12 || memcmp(p, "BKAD", 4) != 0 || ckh_crc32c(0, p, n - 4) != bka_get32(p + n - 4))
        return CKH_ECORRUPT;
    uint32_t nb = bka_get32(p + 4);
    size_t at = 8, end = n - 4;
    if (nb > end / 20)
        return CKH_ECORRUPT;
    struct bka_blob *v = ckh_calloc(alloc, nb ? nb : 1, sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    for (uint32_t i = 0; i < nb; i++) {
        uint32_t nl;
        if (end - at < 4 || (nl = bka_get32(p + at)) > CKH_BLOB_NAME_MAX || end - at - 4 < nl + 8)
            goto out_corrupt;
        memcpy(v[i].name, p + at + 4, nl);
        v[i].name[nl] = '\0';
        at += 4 + nl;
        v[i].dtype = bka_get32(p + at);
        v[i].ndim = bka_get32(p + at + 4);
        at += 8;
        if (v[i].ndim > CKH_BLOB_MAX_DIMS || end - at < 8 * (size_t)v[i].ndim + 8)
            goto out_corrupt;
        for (uint32_t d = 0; d < v[i].ndim; d++)
            v[i].shape[d] = bka_get64(p + at + 8 * d);
        at += 8 * (size_t)v[i].ndim;
        uint64_t size = bka_get64(p + at);
        at += 8;
        if (end - at < size)
            goto out_corrupt;
        v[i].data = p + at;
        at += size;
    }
    if (at != end)
        goto out_corrupt;
    *out = v;
    *cnt = nb;
    return 0;
out_corrupt:
    ckh_free(alloc, v);
    return CKH_ECORRUPT;
}

static int bka_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                    const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    struct bka *k = (struct bka *)b;
    char path[CKH_PATH_MAX + 1];
    void *p = NULL;
    size_t n = 0, done = 0;
    struct bka_blob *v = NULL;
    uint32_t nb = 0;
    int rc = bka_locate(k, node, epoch, path, sizeof(path));
    if (rc)
        return rc;
    if ((rc = ckh_atomic_read(k->env.fs, k->env.alloc, path, &p, &n)) != 0)
        return bka_fail(k, rc, "reading %s: %s", path, ckh_strerror(rc));
    if ((rc = bka_decode(p, n, &v, &nb, k->env.alloc)) != 0) {
        bka_fail(k, rc, "%s: %s", path, rc == CKH_ECORRUPT ? "checksum or length mismatch"
                                                           : ckh_strerror(rc));
        goto out_free;
    }
    /* Every wanted name must be present unless missing ones are allowed. */
    for (size_t i = 0; names && i < count && !(flags & CKH_LOAD_ALLOW_MISSING); i++) {
        bool found = false;
        for (uint32_t j = 0; j < nb && !found; j++)
            found = names[i] && strcmp(names[i], v[j].name) == 0;
        if (!found) {
            rc = bka_fail(k, CKH_ENOTFOUND, "%s: no blob %s", path, names[i] ? names[i] : "?");
            goto out_free;
        }
    }
    for (uint32_t j = 0; j < nb && rc == 0; j++) {
        if (!bka_wanted(v[j].name, names, count))
            continue;
        rc = ckh_ws_set(ws, v[j].name, (enum ckh_dtype)v[j].dtype, v[j].ndim, v[j].shape,
                        v[j].data);
        if (rc)
            bka_fail(k, rc, "%s: blob %s does not fit the workspace", path, v[j].name);
        else
            done++;
    }
    if (rc == 0 && loaded)
        *loaded = done;
out_free:
    ckh_free(k->env.alloc, v);
    ckh_free(k->env.alloc, p);
    return rc;
}

static const struct ckh_backend_ops bka_ops = {
    .version = 1,
    .name = BK_ADIR_NAME,
    .open = bka_open,
    .close = bka_close,
    .save = bka_save,
    .load = bka_load,
    .exists = bka_exists,
    .list_epochs = bka_list_epochs,
    .db_name = bka_db_name,
};

CKH_BACKEND_PLUGIN(bka_ops)
