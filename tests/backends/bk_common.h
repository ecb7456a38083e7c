/* One small checkpoint backend with switchable defects, for the negative
 * controls of the crash explorer (tests/test_explore.c). Each
 * tests/backends/bk_<defect>.c defines BK_NAME and BK_DEFECTS and includes
 * this file; CMake builds each as a plugin (MODULE library).
 *
 * Format of <prefix>/<node>.<epoch>: "BKV1", u32 nblobs, then per blob
 * u32 name_len, name, u32 dtype, u32 ndim, u64 shape[ndim], u64 size, the
 * bytes (described blobs are written out and load back as stored blobs);
 * last a u32 CRC-32C of every byte before it. Load verifies the CRC and
 * every length before touching the workspace.
 *
 * Correct protocol (BK_DEFECTS 0): write <prefix>/.<node>.<epoch>.tmp,
 * fsync, close, rename over <prefix>/<node>.<epoch>, fsync the directory.
 * Defects (each breaks one step):
 *   BK_IN_PLACE        writes <prefix>/<node>.<epoch> directly (O_TRUNC)
 *   BK_NO_FILE_FSYNC   renames the temporary without fsyncing it
 *   BK_NO_DIR_FSYNC    never fsyncs the directory
 *   BK_POINTER_FIRST   data in <node>.<epoch>.data, a pointer file
 *                      <node>.latest (the only listed epoch) committed
 *                      before the data is fsynced
 *   BK_RETENTION_FIRST deletes the node's other epochs before committing
 *   BK_FIXED_TMP       temporary <prefix>/ckpt.tmp shared by every node
 *   BK_SEGV / BK_HANG  save raises SIGSEGV / never returns
 *   BK_LEAK            open allocates a block that close never frees
 *   BK_ZERO_OP         keeps its checkpoints in process memory, never
 *                      touching cfg->fs (as one writing with open(2) would)
 *   BK_TEXT_SORT       list_epochs sorts epochs as text ("10" < "9")
 *   BK_PARTIAL_LOAD    load adopts the wanted blobs before it checks that
 *                      every name asked for exists (a failed load leaves
 *                      the workspace half-changed)
 *   BK_SHORT_IGNORED   writes each file with one pwrite and takes any
 *                      positive count for the whole (a short write leaves
 *                      a truncated file that is then committed)
 * Load (without BK_PARTIAL_LOAD) honours the name list and
 * CKH_LOAD_ALLOW_MISSING and changes the workspace only once everything
 * it will load is decoded and every name asked for is found.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/plugin.h"

/* Error texts are bounded; a long path is cut short on purpose. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

enum {
    BK_IN_PLACE = 0x1,
    BK_NO_FILE_FSYNC = 0x2,
    BK_NO_DIR_FSYNC = 0x4,
    BK_POINTER_FIRST = 0x8,
    BK_RETENTION_FIRST = 0x10,
    BK_FIXED_TMP = 0x20,
    BK_SEGV = 0x40,
    BK_HANG = 0x80,
    BK_LEAK = 0x100,
    BK_ZERO_OP = 0x200,
    BK_TEXT_SORT = 0x400,
    BK_PARTIAL_LOAD = 0x800,
    BK_SHORT_IGNORED = 0x1000,
};

struct bk {
    struct ckh_backend base; /* must be first */
    struct ckh_fs *fs;       /* borrowed */
    struct ckh_alloc *alloc; /* config allocator */
    char prefix[512];        /* checkpoint directory */
    void *leak;              /* BK_LEAK: never freed */
};

struct bk_buf {
    unsigned char *p; /* bytes (system malloc: scratch only) */
    size_t n;         /* used */
    size_t cap;       /* allocated */
};

static int bk_put(struct bk_buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = (b->cap + n) * 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            return CKH_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    return 0;
}

static int bk_put32(struct bk_buf *b, uint32_t v) { return bk_put(b, &v, 4); }
static int bk_put64(struct bk_buf *b, uint64_t v) { return bk_put(b, &v, 8); }

static int bk_fail(struct bk *k, int rc, const char *what, const char *path)
{
    snprintf(k->base.errmsg, sizeof(k->base.errmsg), "%s %s: %s", what, path, ckh_strerror(rc));
    return rc;
}

static int bk_open(const struct ckh_backend_config *cfg, struct ckh_backend **out);
static void bk_close(struct ckh_backend *b);

static void bk_path(struct bk *k, char *buf, size_t n, const char *node, int64_t epoch,
                    const char *suffix)
{
    snprintf(buf, n, "%s/%s.%" PRId64 "%s", k->prefix, node, epoch, suffix);
}

/* BK_ZERO_OP: the process-wide store of checkpoints, outside cfg->fs. */
struct bk_mem {
    char name[300];   /* "<node>.<epoch>" */
    unsigned char *p; /* encoded bytes (system malloc) */
    size_t n;         /* their length */
};
static struct bk_mem bk_store[64];
static size_t bk_nstore;

static struct bk_mem *bk_mem_find(const char *node, int64_t epoch)
{
    char name[300];
    snprintf(name, sizeof(name), "%s.%" PRId64, node, epoch);
    for (size_t i = 0; i < bk_nstore; i++)
        if (strcmp(bk_store[i].name, name) == 0)
            return &bk_store[i];
    return NULL;
}

static int bk_mem_put(const char *node, int64_t epoch, const struct bk_buf *b)
{
    struct bk_mem *m = bk_mem_find(node, epoch);
    if (!m) {
        if (bk_nstore == sizeof(bk_store) / sizeof(bk_store[0]))
            return CKH_ELIMIT;
        m = &bk_store[bk_nstore++];
        snprintf(m->name, sizeof(m->name), "%s.%" PRId64, node, epoch);
    }
    unsigned char *p = malloc(b->n);
    if (!p)
        return CKH_ENOMEM;
    memcpy(p, b->p, b->n);
    free(m->p);
    m->p = p;
    m->n = b->n;
    return 0;
}

static void bk_mem_remove(struct bk_mem *m)
{
    free(m->p);
    *m = bk_store[--bk_nstore];
    memset(&bk_store[bk_nstore], 0, sizeof(bk_store[0]));
}

#if BK_DEFECTS & BK_ZERO_OP
__attribute__((destructor)) static void bk_mem_free_all(void)
{
    while (bk_nstore)
        bk_mem_remove(&bk_store[0]);
}
#endif

static int bk_encode(const struct ckh_ws *ws, struct bk_buf *b)
{
    int rc = bk_put(b, "BKV1", 4);
    rc = rc ? rc : bk_put32(b, (uint32_t)ckh_ws_count(ws));
    for (size_t i = 0; rc == 0 && i < ckh_ws_count(ws); i++) {
        const struct ckh_blob *bl = ckh_ws_at(ws, i);
        uint32_t nl = (uint32_t)strlen(bl->name);
        rc = bk_put32(b, nl);
        rc = rc ? rc : bk_put(b, bl->name, nl);
        rc = rc ? rc : bk_put32(b, (uint32_t)bl->dtype);
        rc = rc ? rc : bk_put32(b, bl->ndim);
        for (uint32_t d = 0; rc == 0 && d < bl->ndim; d++)
            rc = bk_put64(b, bl->shape[d]);
        rc = rc ? rc : bk_put64(b, bl->size_bytes);
        if (rc == 0 && bl->size_bytes) {
            if (bl->described) {
                unsigned char *tmp = malloc(bl->size_bytes);
                if (!tmp)
                    return CKH_ENOMEM;
                ckh_gen_fill(&bl->gen, 0, tmp, bl->size_bytes);
                rc = bk_put(b, tmp, bl->size_bytes);
                free(tmp);
            } else {
                rc = bk_put(b, bl->data, bl->size_bytes);
            }
        }
    }
    return rc ? rc : bk_put32(b, ckh_crc32c(0, b->p, b->n));
}

/* Writes the whole buffer to path (flags), fsyncing when asked. */
static int bk_write_file(struct bk *k, const char *path, const struct bk_buf *b, bool fsync)
{
    struct ckh_file *f;
    int rc = ckh_fs_open(k->fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
    if (rc)
        return bk_fail(k, rc, "open", path);
    uint64_t off = 0;
    while (rc == 0 && off < b->n) {
        int64_t w = ckh_file_pwrite(f, b->p + off, b->n - off, off);
        if (w <= 0)
            rc = w < 0 ? (int)w : CKH_EINTERNAL;
        else if (BK_DEFECTS & BK_SHORT_IGNORED)
            off = b->n; /* the defect: a short count taken for the whole write */
        else
            off += (uint64_t)w;
    }
    if (rc == 0 && fsync)
        rc = ckh_file_fsync(f);
    int crc = ckh_file_close(f);
    rc = rc ? rc : crc;
    return rc ? bk_fail(k, rc, "write", path) : 0;
}

/* Whether epoch a sorts before b: numerically, or with BK_TEXT_SORT as
 * the decimal texts do. */
static bool bk_before(int64_t a, int64_t b)
{
    if (!(BK_DEFECTS & BK_TEXT_SORT))
        return a < b;
    char ta[24], tb[24];
    snprintf(ta, sizeof(ta), "%" PRId64, a);
    snprintf(tb, sizeof(tb), "%" PRId64, b);
    return strcmp(ta, tb) < 0;
}

static int bk_list_raw(struct bk *k, const char *node, int64_t **epochs, size_t *count)
{
    struct ckh_listing l;
    size_t nl = strlen(node);
    int rc = 0;
    *epochs = NULL;
    *count = 0;
    if (BK_DEFECTS & BK_ZERO_OP) {
        memset(&l, 0, sizeof(l));
        l.entries = calloc(bk_nstore ? bk_nstore : 1, sizeof(*l.entries));
        if (!l.entries)
            return CKH_ENOMEM;
        for (size_t i = 0; i < bk_nstore; i++) {
            size_t len = strlen(bk_store[i].name) + 1;
            if (!(l.entries[l.count].name = malloc(len))) {
                ckh_fs_listing_free(&l);
                return CKH_ENOMEM;
            }
            memcpy(l.entries[l.count].name, bk_store[i].name, len);
            l.entries[l.count++].type = CKH_FT_FILE;
        }
    } else if ((rc = ckh_fs_listdir(k->fs, k->prefix, &l)) != 0) {
        return bk_fail(k, rc, "listdir", k->prefix);
    }
    int64_t *v = ckh_malloc(k->alloc, (l.count ? l.count : 1) * sizeof(*v));
    if (!v) {
        ckh_fs_listing_free(&l);
        return CKH_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < l.count; i++) {
        const char *s = l.entries[i].name;
        if (strncmp(s, node, nl) != 0 || s[nl] != '.' || !s[nl + 1])
            continue;
        char *end;
        long long e = strtoll(s + nl + 1, &end, 10);
        if (*end || e < 0)
            continue;
        size_t j = n++;
        while (j > 0 && bk_before(e, v[j - 1])) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = e;
    }
    ckh_fs_listing_free(&l);
    if (n == 0) {
        ckh_free(k->alloc, v);
        v = NULL;
    }
    *epochs = v;
    *count = n;
    return 0;
}

static int bk_list_epochs(struct ckh_backend *b, const char *node, int64_t **epochs, size_t *count)
{
    struct bk *k = (struct bk *)b;
    if (BK_DEFECTS & BK_POINTER_FIRST) {
        char p[600], txt[32] = "";
        struct ckh_file *f;
        *epochs = NULL;
        *count = 0;
        snprintf(p, sizeof(p), "%s/%s.latest", k->prefix, node);
        int rc = ckh_fs_open(k->fs, p, CKH_O_RDONLY, &f);
        if (rc == -ENOENT)
            return 0;
        if (rc)
            return bk_fail(k, rc, "open", p);
        int64_t r = ckh_file_pread(f, txt, sizeof(txt) - 1, 0);
        ckh_file_close(f);
        if (r <= 0)
            return 0;
        int64_t *v = ckh_malloc(k->alloc, sizeof(*v));
        if (!v)
            return CKH_ENOMEM;
        v[0] = strtoll(txt, NULL, 10);
        *epochs = v;
        *count = 1;
        return 0;
    }
    return bk_list_raw(k, node, epochs, count);
}

static int bk_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                   const char *const *names, size_t count)
{
    struct bk *k = (struct bk *)b;
    struct bk_buf buf = {0};
    char final[600], tmp[600];
    int rc;
    (void)names;
    (void)count;
    if (BK_DEFECTS & BK_SEGV)
        raise(SIGSEGV);
    if (BK_DEFECTS & BK_HANG)
        for (volatile int spin = 1; spin;)
            ;
    if ((rc = bk_encode(ws, &buf)) != 0)
        goto out;
    if (BK_DEFECTS & BK_ZERO_OP) {
        rc = bk_mem_put(node, epoch, &buf);
        goto out;
    }
    bk_path(k, final, sizeof(final), node, epoch, "");
    if (BK_DEFECTS & BK_RETENTION_FIRST) {
        int64_t *ep;
        size_t n;
        if ((rc = bk_list_raw(k, node, &ep, &n)) != 0)
            goto out;
        for (size_t i = 0; i < n; i++) {
            if (ep[i] == epoch)
                continue;
            bk_path(k, tmp, sizeof(tmp), node, ep[i], "");
            ckh_fs_unlink(k->fs, tmp);
        }
        ckh_free(k->alloc, ep);
        ckh_fs_fsync_dir(k->fs, k->prefix);
    }
    if (BK_DEFECTS & BK_IN_PLACE) {
        if ((rc = bk_write_file(k, final, &buf, true)) == 0)
            rc = ckh_fs_fsync_dir(k->fs, k->prefix);
        goto out;
    }
    if (BK_DEFECTS & BK_POINTER_FIRST) {
        char ptr[600], txt[32];
        struct bk_buf pb = {0};
        struct ckh_file *f;
        bk_path(k, final, sizeof(final), node, epoch, ".data");
        if ((rc = bk_write_file(k, final, &buf, false)) != 0)
            goto out;
        snprintf(txt, sizeof(txt), "%" PRId64 "\n", epoch);
        if ((rc = bk_put(&pb, txt, strlen(txt))) != 0)
            goto out;
        snprintf(tmp, sizeof(tmp), "%s/.%s.latest.tmp", k->prefix, node);
        snprintf(ptr, sizeof(ptr), "%s/%s.latest", k->prefix, node);
        rc = bk_write_file(k, tmp, &pb, true);
        free(pb.p);
        if (rc == 0 && (rc = ckh_fs_rename(k->fs, tmp, ptr)) == 0)
            rc = ckh_fs_fsync_dir(k->fs, k->prefix);
        if (rc == 0 && (rc = ckh_fs_open(k->fs, final, CKH_O_WRONLY, &f)) == 0) {
            rc = ckh_file_fsync(f);
            int crc = ckh_file_close(f);
            rc = rc ? rc : crc;
        }
        goto out;
    }
    if (BK_DEFECTS & BK_FIXED_TMP)
        snprintf(tmp, sizeof(tmp), "%s/ckpt.tmp", k->prefix);
    else
        snprintf(tmp, sizeof(tmp), "%s/.%s.%" PRId64 ".tmp", k->prefix, node, epoch);
    if ((rc = bk_write_file(k, tmp, &buf, !(BK_DEFECTS & BK_NO_FILE_FSYNC))) != 0)
        goto out_unlink;
    if ((rc = ckh_fs_rename(k->fs, tmp, final)) != 0) {
        bk_fail(k, rc, "rename", tmp);
        goto out_unlink;
    }
    if (!(BK_DEFECTS & BK_NO_DIR_FSYNC) && (rc = ckh_fs_fsync_dir(k->fs, k->prefix)) != 0)
        bk_fail(k, rc, "fsync_dir", k->prefix);
    goto out;
out_unlink:
    ckh_fs_unlink(k->fs, tmp);
out:
    free(buf.p);
    return rc;
}

static uint32_t bk_get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t bk_get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* The encoded checkpoint of node's epoch into *p (malloc'd, *n bytes). */
static int bk_read(struct bk *k, const char *path, const char *node, int64_t epoch,
                   unsigned char **p, size_t *n)
{
    struct ckh_stat st;
    struct ckh_file *f;
    int rc;
    *p = NULL;
    if (BK_DEFECTS & BK_ZERO_OP) {
        struct bk_mem *m = bk_mem_find(node, epoch);
        if (!m)
            return bk_fail(k, CKH_ENOTFOUND, "load", path);
        if (!(*p = malloc(m->n)))
            return CKH_ENOMEM;
        memcpy(*p, m->p, m->n);
        *n = m->n;
        return 0;
    }
    if ((rc = ckh_fs_stat(k->fs, path, &st)) != 0)
        return bk_fail(k, rc == -ENOENT ? CKH_ENOTFOUND : rc, "stat", path);
    if (st.size_bytes < 12 || st.size_bytes > (1u << 30))
        return bk_fail(k, CKH_ETRUNCATED, "load", path);
    *n = (size_t)st.size_bytes;
    if (!(*p = malloc(*n)))
        return CKH_ENOMEM;
    if ((rc = ckh_fs_open(k->fs, path, CKH_O_RDONLY, &f)) == 0) {
        rc = ckh_file_pread_all(f, *p, *n, 0);
        ckh_file_close(f);
    }
    if (rc) {
        free(*p);
        *p = NULL;
        return bk_fail(k, rc, "read", path);
    }
    return 0;
}

/* Decodes every blob of the n bytes at p into (*out)[0..*nb) (names and
 * data from the allocator wa), checking the CRC first and every length as
 * it goes; on failure the caller releases the *nb entries all the same. */
static int bk_decode(const unsigned char *p, size_t n, struct ckh_alloc *wa, struct ckh_blob **out,
                     size_t *nb)
{
    struct ckh_blob *bl;
    *out = NULL;
    *nb = 0;
    if (n < 12 || memcmp(p, "BKV1", 4) != 0 || ckh_crc32c(0, p, n - 4) != bk_get32(p + n - 4))
        return CKH_ECORRUPT;
    uint32_t cnt = bk_get32(p + 4);
    size_t at = 8, end = n - 4;
    if (cnt > end)
        return CKH_ECORRUPT;
    if (!(bl = calloc(cnt ? cnt : 1, sizeof(*bl))))
        return CKH_ENOMEM;
    *out = bl;
    *nb = cnt; /* every entry is released by the caller, filled or not */
    for (uint32_t i = 0; i < cnt; i++) {
        struct ckh_blob *x = &bl[i];
        if (at + 4 > end)
            return CKH_ECORRUPT;
        uint32_t nl = bk_get32(p + at);
        at += 4;
        if (nl == 0 || nl > end - at || end - at - nl < 8)
            return CKH_ECORRUPT;
        if (!(x->name = ckh_malloc(wa, nl + 1)))
            return CKH_ENOMEM;
        memcpy(x->name, p + at, nl);
        x->name[nl] = 0;
        at += nl;
        x->dtype = (enum ckh_dtype)bk_get32(p + at);
        x->ndim = bk_get32(p + at + 4);
        at += 8;
        if (x->ndim > CKH_BLOB_MAX_DIMS || (end - at) / 8 < x->ndim + 1)
            return CKH_ECORRUPT;
        for (uint32_t d = 0; d < x->ndim; d++, at += 8)
            x->shape[d] = bk_get64(p + at);
        x->size_bytes = bk_get64(p + at);
        at += 8;
        if (x->size_bytes > end - at)
            return CKH_ECORRUPT;
        if (x->size_bytes) {
            if (!(x->data = ckh_malloc(wa, x->size_bytes)))
                return CKH_ENOMEM;
            memcpy(x->data, p + at, x->size_bytes);
            at += x->size_bytes;
        }
    }
    return at == end ? 0 : CKH_ECORRUPT;
}

/* Whether blob name is asked for (names NULL: every blob). */
static bool bk_wanted(const char *name, const char *const *names, size_t count)
{
    for (size_t i = 0; names && i < count; i++)
        if (names[i] && strcmp(names[i], name) == 0)
            return true;
    return !names;
}

/* The first name asked for that bl lacks, or NULL. */
static const char *bk_missing(const struct ckh_blob *bl, size_t nb, const char *const *names,
                              size_t count)
{
    for (size_t i = 0; names && i < count; i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = names[i] && strcmp(bl[j].name, names[i]) == 0;
        if (!found)
            return names[i] ? names[i] : "(null)";
    }
    return NULL;
}

/* Moves the wanted blobs of bl into ws; *done counts them. */
static int bk_adopt_wanted(struct ckh_ws *ws, struct ckh_blob *bl, size_t nb,
                           const char *const *names, size_t count, size_t *done)
{
    int rc = 0;
    for (size_t i = 0; i < nb && rc == 0; i++)
        if (bk_wanted(bl[i].name, names, count) && (rc = ckh_ws_adopt(ws, &bl[i])) == 0)
            (*done)++;
    return rc;
}

static int bk_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                   const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    struct bk *k = (struct bk *)b;
    char path[600];
    unsigned char *p = NULL;
    struct ckh_blob *bl = NULL;
    size_t n = 0, nb = 0, done = 0;
    const char *missing;
    int rc;
    bk_path(k, path, sizeof(path), node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    if ((rc = bk_read(k, path, node, epoch, &p, &n)) != 0)
        return rc;
    if ((rc = bk_decode(p, n, ckh_ws_alloc(ws), &bl, &nb)) != 0) {
        bk_fail(k, rc, "decode", path);
        goto out;
    }
    missing = (flags & CKH_LOAD_ALLOW_MISSING) ? NULL : bk_missing(bl, nb, names, count);
    if (BK_DEFECTS & BK_PARTIAL_LOAD) /* the defect: the workspace changes first */
        rc = bk_adopt_wanted(ws, bl, nb, names, count, &done);
    if (rc == 0 && missing) {
        snprintf(k->base.errmsg, sizeof(k->base.errmsg), "%s: no blob %s", path, missing);
        rc = CKH_ENOTFOUND;
        goto out;
    }
    if (rc == 0 && !(BK_DEFECTS & BK_PARTIAL_LOAD))
        rc = bk_adopt_wanted(ws, bl, nb, names, count, &done);
    if (rc == 0 && loaded)
        *loaded = done;
out:
    for (size_t i = 0; bl && i < nb; i++)
        ckh_blob_release(ckh_ws_alloc(ws), &bl[i]);
    free(bl);
    free(p);
    return rc;
}

static int bk_exists(struct ckh_backend *b, const char *node, int64_t epoch, bool *out)
{
    struct bk *k = (struct bk *)b;
    char path[600];
    bk_path(k, path, sizeof(path), node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    *out = BK_DEFECTS & BK_ZERO_OP ? bk_mem_find(node, epoch) != NULL : ckh_fs_exists(k->fs, path);
    return 0;
}

static int bk_remove(struct ckh_backend *b, const char *node, int64_t epoch)
{
    struct bk *k = (struct bk *)b;
    char path[600];
    bk_path(k, path, sizeof(path), node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    if (BK_DEFECTS & BK_ZERO_OP) {
        struct bk_mem *m = bk_mem_find(node, epoch);
        if (!m)
            return bk_fail(k, CKH_ENOTFOUND, "remove", path);
        bk_mem_remove(m);
        return 0;
    }
    int rc = ckh_fs_unlink(k->fs, path);
    if (rc)
        return bk_fail(k, rc == -ENOENT ? CKH_ENOTFOUND : rc, "unlink", path);
    return BK_DEFECTS & BK_NO_DIR_FSYNC ? 0 : ckh_fs_fsync_dir(k->fs, k->prefix);
}

static int bk_db_name(struct ckh_backend *b, const char *node, int64_t epoch, char *buf, size_t n)
{
    struct bk *k = (struct bk *)b;
    bk_path(k, buf, n, node, epoch, BK_DEFECTS & BK_POINTER_FIRST ? ".data" : "");
    return 0;
}

static const struct ckh_backend_ops bk_ops = {
    .version = 1,
    .name = BK_NAME,
    .open = bk_open,
    .close = bk_close,
    .save = bk_save,
    .load = bk_load,
    .exists = bk_exists,
    .list_epochs = bk_list_epochs,
    .remove = bk_remove,
    .db_name = bk_db_name,
};

static int bk_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    if (!cfg || !cfg->fs || !cfg->prefix || !out)
        return CKH_EINVAL;
    struct bk *k = ckh_calloc(cfg->alloc, 1, sizeof(*k));
    if (!k)
        return CKH_ENOMEM;
    k->base.ops = &bk_ops;
    k->fs = cfg->fs;
    k->alloc = cfg->alloc;
    snprintf(k->prefix, sizeof(k->prefix), "%s", cfg->prefix);
    if (BK_DEFECTS & BK_LEAK)
        k->leak = ckh_malloc(cfg->alloc, 64);
    *out = &k->base;
    return 0;
}

static void bk_close(struct ckh_backend *b)
{
    struct bk *k = (struct bk *)b;
    if (k)
        ckh_free(k->alloc, k);
}

CKH_BACKEND_PLUGIN(bk_ops)
