/* minidb: writing a checkpoint (the format and the crash-safety protocol
 * are specified at the top of minidb.c).
 *
 * A save plans the file (its length and the data checksums it can compute
 * in advance), writes it to a fresh temporary through a small write-behind
 * buffer, then commits it: fsync, close, rename over the checkpoint's
 * name, fsync of the directory.
 *
 * Map: buffered writer | blob list and stale temporaries | naming and
 * planning | writing | commit | save.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/endian.h"
#include "ckh/err.h"
#include "minidb_internal.h"

/* ---- buffered writer ---- */

struct writer {
    struct minidb *m;     /* owner (allocator, messages) */
    struct ckh_file *f;   /* destination */
    uint64_t off;         /* file offset of buf[0] */
    unsigned char *buf;   /* pending small writes */
    size_t used;          /* bytes pending */
};

static int pwrite_all(struct ckh_file *f, const void *buf, size_t n, uint64_t off)
{
    const unsigned char *p = buf;
    while (n > 0) {
        int64_t w = ckh_file_pwrite(f, p, n, off);
        if (w < 0)
            return (int)w;
        if (w == 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int w_flush(struct writer *w)
{
    int rc;
    if (w->used == 0)
        return 0;
    rc = pwrite_all(w->f, w->buf, w->used, w->off);
    if (rc == 0) {
        w->off += w->used;
        w->used = 0;
    }
    return rc;
}

static int w_put(struct writer *w, const void *data, uint64_t n)
{
    int rc;
    if (n >= MDB_CHUNK) { /* large: straight from the caller's memory */
        if ((rc = w_flush(w)) != 0)
            return rc;
        if ((rc = pwrite_all(w->f, data, (size_t)n, w->off)) != 0)
            return rc;
        w->off += n;
        return 0;
    }
    if (w->used + n > MDB_CHUNK && (rc = w_flush(w)) != 0)
        return rc;
    memcpy(w->buf + w->used, data, (size_t)n);
    w->used += (size_t)n;
    return 0;
}

static int w_put_gen(struct writer *w, const struct ckh_gen *g, uint64_t n)
{
    int rc = w_flush(w);
    uint64_t done = 0;
    if (rc != 0)
        return rc;
    while (done < n) {
        struct ckh_gen at = *g;
        int64_t k;
        at.offset = g->offset + done;
        k = ckh_file_pwrite_gen(w->f, &at, n - done, w->off);
        if (k < 0)
            return (int)k;
        if (k == 0)
            return -EIO;
        done += (uint64_t)k;
        w->off += (uint64_t)k;
    }
    return 0;
}

/* ---- blob list and stale temporaries ---- */

static int rec_storage(const struct minidb *m, const struct ckh_blob *b)
{
    if (!b->described)
        return ST_INLINE;
    return (m->flags & CKH_BACKEND_MATERIALIZE_DESCRIBED) ? ST_GENERATED : ST_DESCRIBED;
}

static uint64_t rec_meta_bytes(const struct ckh_blob *b)
{
    return MDB_REC_FIXED + 8ull * b->ndim + strlen(b->name) + 8;
}

/* Looks up the blobs to save, refusing missing names and duplicates. */
static int collect(struct minidb *m, const struct ckh_ws *ws, const char *const *names,
                   size_t count, const struct ckh_blob ***out, size_t *nout)
{
    size_t n = names ? count : ckh_ws_count(ws);
    const struct ckh_blob **v = ckh_calloc(m->alloc, n ? n : 1, sizeof *v);
    if (!v)
        return CKH_ERRF(m->base.errmsg, CKH_ENOMEM, "minidb: no memory to list %zu blobs", n);
    for (size_t i = 0; i < n; i++) {
        if (names) {
            if (!names[i]) {
                ckh_free(m->alloc, v);
                return CKH_ERRF(m->base.errmsg, CKH_EINVAL, "minidb: blob name %zu is NULL", i);
            }
            v[i] = ckh_ws_find(ws, names[i]);
            if (!v[i]) {
                ckh_free(m->alloc, v);
                return CKH_ERRF(m->base.errmsg, CKH_ENOTFOUND, "minidb: no blob '%s' to save", names[i]);
            }
            for (size_t j = 0; j < i; j++)
                if (v[j] == v[i]) {
                    ckh_free(m->alloc, v);
                    return CKH_ERRF(m->base.errmsg, CKH_EINVAL, "minidb: blob '%s' named twice", names[i]);
                }
        } else {
            v[i] = ckh_ws_at(ws, i);
        }
    }
    *out = v;
    *nout = n;
    return 0;
}

/* Removes the temporaries named "<stem>*.tmp" in the prefix directory:
 * what an earlier incarnation of this node left when it died mid-save. A
 * missing directory is not an error here (the save reports it). */
static int remove_stale_temps(struct minidb *m, const char *stem)
{
    struct ckh_listing l;
    size_t sl = strlen(stem);
    int rc = ckh_fs_listdir(m->fs, m->prefix, &l);
    if (rc == -ENOENT || rc == -ENOTDIR)
        return 0;
    if (rc != 0)
        return CKH_ERRF(m->base.errmsg, rc, "minidb: cannot list '%s': %s", m->prefix, ckh_strerror(rc));
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        const char *nm = l.entries[i].name;
        size_t nl = strlen(nm);
        if (strncmp(nm, stem, sl) != 0 || nl < sl + 4 || strcmp(nm + nl - 4, ".tmp") != 0)
            continue;
        char p[CKH_PATH_MAX];
        if (ckh_path_join(p, sizeof p, m->prefix, nm) != 0)
            continue;
        rc = ckh_fs_unlink(m->fs, p);
        if (rc == -ENOENT)
            rc = 0;
        else if (rc != 0)
            CKH_ERRF(m->base.errmsg, rc, "minidb: cannot remove the stale temporary '%s': %s", p, ckh_strerror(rc));
    }
    ckh_fs_listing_free(&l);
    return rc;
}

/* ---- naming and planning ---- */

/* One save in progress. */
struct save_job {
    struct minidb *m;                  /* the backend */
    const char *node;                  /* node saved (borrowed) */
    int64_t epoch;                     /* epoch saved */
    char path[CKH_PATH_MAX];           /* the checkpoint's name */
    char stem[CKH_NODE_NAME_MAX + 32]; /* ".<node>.<epoch>.": the temporaries' prefix */
    char tmp[CKH_PATH_MAX];            /* the temporary file */
    uint64_t tag;                      /* the temporary's tag */
    const struct ckh_blob **blobs;     /* blobs saved, in order (owned array) */
    size_t n;                          /* their number */
    uint32_t *data_crcs;               /* each blob's data_crc when known in advance (owned) */
    uint64_t file_bytes;               /* planned length of the file */
    uint32_t file_crc;                 /* whole-file checksum so far */
    struct writer w;                   /* writes the temporary file */
};

/* "<prefix>/<stem><tag>.tmp" into sv->tmp: 0, or CKH_EINVAL if too long. */
static int tmp_name(struct save_job *sv)
{
    const char *dir = strcmp(sv->m->prefix, "/") == 0 ? "" : sv->m->prefix;
    int k = snprintf(sv->tmp, sizeof sv->tmp, "%s/%s%016" PRIx64 ".tmp", dir, sv->stem, sv->tag);
    return k >= (int)sizeof sv->tmp ? CKH_EINVAL : 0;
}

/* Names the checkpoint and its temporary, removing stale temporaries. */
static int save_names(struct save_job *sv)
{
    struct minidb *m = sv->m;
    int rc;
    if ((rc = ckh_db_name(m->prefix, sv->node, sv->epoch, sv->path, sizeof sv->path)) != 0)
        return CKH_ERRF(m->base.errmsg, rc, "minidb: checkpoint name for node '%s' too long", sv->node);
    /* Temporaries are ".<node>.<epoch>.<tag>.tmp": named after their owner
     * so that a restarted node can remove what an earlier incarnation left
     * behind, and tagged so that a name is never reused (the tag stream
     * restarts identically with the node, so a taken name is redrawn). */
    snprintf(sv->stem, sizeof sv->stem, ".%s.%" PRId64 ".", sv->node, sv->epoch);
    if ((rc = remove_stale_temps(m, sv->stem)) != 0)
        return rc;
    sv->tag = ckh_mix64(ckh_rng_next(&m->rng) ^
                        ckh_hash64(CKH_HASH_INIT, sv->path, strlen(sv->path)));
    if (tmp_name(sv) != 0)
        return CKH_ERRF(m->base.errmsg, CKH_EINVAL, "minidb: temporary name for '%s' too long", sv->path);
    return 0;
}

/* Plans the file: its length (the header records it) and the data
 * checksums known before writing. */
static int save_plan(struct save_job *sv)
{
    struct minidb *m = sv->m;
    uint64_t described = 0;
    int rc;
    if (sv->n > UINT32_MAX)
        return CKH_ERRF(m->base.errmsg, CKH_ELIMIT, "minidb: too many blobs for '%s'", sv->path);
    sv->data_crcs = ckh_calloc(m->alloc, sv->n ? sv->n : 1, sizeof *sv->data_crcs);
    sv->w.buf = ckh_malloc(m->alloc, MDB_CHUNK);
    if (!sv->data_crcs || !sv->w.buf)
        return CKH_ERRF(m->base.errmsg, CKH_ENOMEM, "minidb: no memory to save '%s'", sv->path);
    sv->file_bytes = MDB_HDR_FIXED + strlen(sv->node) + 4 + MDB_FOOTER;
    for (size_t i = 0; i < sv->n; i++) {
        const struct ckh_blob *bl = sv->blobs[i];
        sv->file_bytes += rec_meta_bytes(bl);
        if (rec_storage(m, bl) != ST_DESCRIBED)
            sv->file_bytes += bl->size_bytes;
        if (bl->described && bl->size_bytes > MDB_DESCRIBED_MAX - described)
            return CKH_ERRF(m->base.errmsg, CKH_ELIMIT,
                            "minidb: '%s' would describe more than %llu bytes in all",
                            sv->path, (unsigned long long)MDB_DESCRIBED_MAX);
        if (bl->described) {
            described += bl->size_bytes;
            if ((rc = ckh__mdb_gen_crc(m, &bl->gen, bl->size_bytes, &sv->data_crcs[i])) != 0)
                return CKH_ERRF(m->base.errmsg, rc, "minidb: no memory to checksum '%s'", bl->name);
        } else if (bl->size_bytes < MDB_STREAM_MIN) {
            sv->data_crcs[i] = ckh_crc32c(0, bl->data, (size_t)bl->size_bytes);
        } /* else: checksummed while streaming it out (write_streamed) */
    }
    return 0;
}

/* Creates the temporary file, redrawing a taken name up to 8 times. */
static int save_create(struct save_job *sv)
{
    struct minidb *m = sv->m;
    const int fl = CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL;
    int rc = ckh_fs_open(m->fs, sv->tmp, fl, &sv->w.f);
    for (int retry = 0; rc == -EEXIST && retry < 8; retry++) {
        sv->tag = ckh_mix64(ckh_rng_next(&m->rng) ^ sv->tag);
        tmp_name(sv); /* as long as the first name, which fitted */
        rc = ckh_fs_open(m->fs, sv->tmp, fl, &sv->w.f);
    }
    if (rc != 0)
        return CKH_ERRF(m->base.errmsg, rc, "minidb: cannot create '%s' for '%s': %s", sv->tmp, sv->path,
                        ckh_strerror(rc));
    return 0;
}

/* ---- writing ---- */

static int write_header(struct save_job *sv)
{
    unsigned char hdr[MDB_HDR_MAX];
    uint32_t node_len = (uint32_t)strlen(sv->node);
    struct mdb_header h = {.version = MDB_VERSION,
                           .header_bytes = MDB_HDR_FIXED + node_len + 4,
                           .epoch = sv->epoch,
                           .nrecords = (uint32_t)sv->n,
                           .node_len = node_len,
                           .file_bytes = sv->file_bytes};
    sv->file_crc = ckh__mdb_crc_u32(0, ckh__mdb_header_encode(&h, sv->node, hdr));
    return w_put(&sv->w, hdr, h.header_bytes);
}

static void desc_of(const struct minidb *m, const struct ckh_blob *bl, struct mdb_desc *d)
{
    memset(d, 0, sizeof *d);
    d->storage = (unsigned)rec_storage(m, bl);
    d->dtype = (unsigned)bl->dtype;
    d->ndim = bl->ndim;
    d->name_len = (uint32_t)strlen(bl->name);
    d->size_bytes = bl->size_bytes;
    d->data_bytes = d->storage == ST_DESCRIBED ? 0 : bl->size_bytes;
    if (bl->described)
        d->gen = bl->gen;
    memcpy(d->shape, bl->shape, sizeof d->shape);
}

/* Appends name, data_crc and record_crc to the len descriptor bytes in
 * meta; returns record_crc. */
static uint32_t seal(unsigned char *meta, size_t len, const char *name, uint32_t name_len,
                     uint32_t data_crc)
{
    uint32_t rcrc;
    memcpy(meta + len, name, name_len);
    ckh_put_le32(meta + len + name_len, data_crc);
    rcrc = ckh_crc32c(0, meta, len + name_len + 4);
    ckh_put_le32(meta + len + name_len + 4, rcrc);
    return rcrc;
}

/* A large inline blob: reserve its record, stream the data while it is
 * hot in the cache (checksum, then write, piece by piece), then fill in
 * the record: one pass over memory instead of two. */
static int write_streamed(struct save_job *sv, const struct ckh_blob *bl, unsigned char *meta,
                          size_t fixed, uint32_t name_len)
{
    struct writer *w = &sv->w;
    uint64_t meta_off, meta_len = fixed + name_len + 8;
    uint32_t dcrc = 0;
    int rc;
    if ((rc = w_flush(w)) != 0)
        return rc;
    meta_off = w->off;
    for (uint64_t pos = 0; pos < bl->size_bytes; pos += MDB_STREAM_PIECE) {
        size_t k = bl->size_bytes - pos < MDB_STREAM_PIECE ? (size_t)(bl->size_bytes - pos)
                                                           : MDB_STREAM_PIECE;
        const unsigned char *piece = (const unsigned char *)bl->data + pos;
        dcrc = ckh_crc32c(dcrc, piece, k);
        if ((rc = pwrite_all(w->f, piece, k, meta_off + meta_len + pos)) != 0)
            return rc;
    }
    sv->file_crc = ckh__mdb_crc_u32(sv->file_crc, seal(meta, fixed, bl->name, name_len, dcrc));
    if ((rc = pwrite_all(w->f, meta, (size_t)meta_len, meta_off)) != 0)
        return rc;
    w->off = meta_off + meta_len + bl->size_bytes;
    return 0;
}

static int write_record(struct save_job *sv, size_t i)
{
    const struct ckh_blob *bl = sv->blobs[i];
    unsigned char meta[MDB_DESC_MAX + CKH_BLOB_NAME_MAX + 8];
    struct mdb_desc d;
    size_t fixed;
    uint32_t rcrc;
    int rc;
    desc_of(sv->m, bl, &d);
    CKH_ASSERT(d.name_len >= 1 && d.name_len <= CKH_BLOB_NAME_MAX);
    fixed = ckh__mdb_desc_encode(&d, meta);
    if (d.storage == ST_INLINE && bl->size_bytes >= MDB_STREAM_MIN)
        return write_streamed(sv, bl, meta, fixed, d.name_len);
    rcrc = seal(meta, fixed, bl->name, d.name_len, sv->data_crcs[i]);
    /* three puts, so the writer flushes where it always has */
    if ((rc = w_put(&sv->w, meta, fixed)) != 0 ||
        (rc = w_put(&sv->w, meta + fixed, d.name_len)) != 0 ||
        (rc = w_put(&sv->w, meta + fixed + d.name_len, 8)) != 0)
        return rc;
    sv->file_crc = ckh__mdb_crc_u32(sv->file_crc, rcrc);
    if (d.storage == ST_INLINE && bl->size_bytes > 0)
        return w_put(&sv->w, bl->data, bl->size_bytes);
    if (d.storage == ST_GENERATED && bl->size_bytes > 0)
        return w_put_gen(&sv->w, &bl->gen, bl->size_bytes);
    return 0;
}

/* Writes the whole file: header, records, footer. */
static int save_write(struct save_job *sv)
{
    unsigned char foot[MDB_FOOTER];
    int rc;
    if ((rc = write_header(sv)) != 0)
        return rc;
    for (size_t i = 0; i < sv->n; i++)
        if ((rc = write_record(sv, i)) != 0)
            return rc;
    ckh__mdb_footer_encode((uint32_t)sv->n, sv->file_crc, foot);
    if ((rc = w_put(&sv->w, foot, MDB_FOOTER)) != 0)
        return rc;
    return w_flush(&sv->w);
}

/* ---- commit ---- */

/* Makes the written temporary the checkpoint: fsync, close, rename,
 * fsync of the directory. Closes the file; removes the temporary when the
 * checkpoint did not take its place. */
static int save_commit(struct save_job *sv)
{
    struct minidb *m = sv->m;
    int rc = 0;
    if (sv->w.off != sv->file_bytes)
        rc = CKH_ERRF(m->base.errmsg, CKH_EINTERNAL,
                      "minidb: wrote %" PRIu64 " bytes to '%s', planned %" PRIu64, sv->w.off,
                      sv->tmp, sv->file_bytes);
    else if ((rc = ckh_file_fsync(sv->w.f)) != 0)
        CKH_ERRF(m->base.errmsg, rc, "minidb: fsync of '%s' failed: %s", sv->tmp, ckh_strerror(rc));
    if (rc != 0) {
        ckh_file_close(sv->w.f);
        ckh_fs_unlink(m->fs, sv->tmp);
        return rc;
    }
    if ((rc = ckh_file_close(sv->w.f)) != 0)
        CKH_ERRF(m->base.errmsg, rc, "minidb: close of '%s' failed: %s", sv->tmp, ckh_strerror(rc));
    else if ((rc = ckh_fs_rename(m->fs, sv->tmp, sv->path)) != 0)
        CKH_ERRF(m->base.errmsg, rc, "minidb: rename of '%s' to '%s' failed: %s", sv->tmp, sv->path,
                 ckh_strerror(rc));
    if (rc != 0) {
        ckh_fs_unlink(m->fs, sv->tmp);
        return rc;
    }
    if ((rc = ckh_fs_fsync_dir(m->fs, m->prefix)) != 0) /* in place; durability unknown */
        CKH_ERRF(m->base.errmsg, rc, "minidb: fsync of directory '%s' after writing '%s' failed: %s",
                 m->prefix, sv->path, ckh_strerror(rc));
    return rc;
}

/* ---- save ---- */

int ckh__mdb_save(struct ckh_backend *b, const char *node, int64_t epoch, const struct ckh_ws *ws,
                  const char *const *names, size_t count)
{
    struct minidb *m = (struct minidb *)b;
    struct save_job sv = {.m = m, .node = node, .epoch = epoch, .w = {.m = m}};
    int rc;
    if ((rc = save_names(&sv)) != 0)
        return rc;
    if ((rc = collect(m, ws, names, count, &sv.blobs, &sv.n)) != 0)
        return rc;
    if ((rc = save_plan(&sv)) != 0 || (rc = save_create(&sv)) != 0)
        goto out_free;
    if ((rc = save_write(&sv)) != 0) {
        CKH_ERRF(m->base.errmsg, rc, "minidb: write to '%s' (for '%s') failed: %s", sv.tmp, sv.path,
                 ckh_strerror(rc));
        ckh_file_close(sv.w.f);
        ckh_fs_unlink(m->fs, sv.tmp);
        goto out_free;
    }
    rc = save_commit(&sv);
out_free:
    ckh_free(m->alloc, sv.w.buf);
    ckh_free(m->alloc, sv.data_crcs);
    ckh_free(m->alloc, sv.blobs);
    return rc;
}
