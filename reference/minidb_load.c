/* minidb: verifying and loading a checkpoint (the format, its bounds and
 * its refusals are specified at the top of minidb.c).
 *
 * A load reads the file through a 64 KiB window, checks the header, then
 * each record (descriptor, name, checksums, bounds, and the data of every
 * blob it loads), then the footer and the whole-file checksum; only then
 * does it move the staged blobs into the workspace (all or nothing).
 *
 * Map: reader | one load | header | records | footer and commit | load.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/endian.h"
#include "ckh/err.h"
#include "minidb_internal.h"

/* ---- reader ---- */

struct reader {
    struct minidb *m;     /* owner */
    struct ckh_file *f;   /* source */
    const char *path;     /* for messages */
    unsigned char *buf;   /* window */
    uint64_t win_off;     /* file offset of buf[0] */
    size_t win_len;       /* valid bytes in buf */
    uint64_t size;        /* file size */
};

/* Reads n bytes at off through the window; past the end: CKH_ETRUNCATED. */
static int r_read(struct reader *r, uint64_t off, void *out, size_t n)
{
    int rc;
    if (off + n > r->size || off + n < off)
        return CKH_ETRUNCATED;
    if (n > MDB_CHUNK / 2)
        return ckh_file_pread_all(r->f, out, n, off);
    if (off < r->win_off || off + n > r->win_off + r->win_len) {
        size_t k = r->size - off < MDB_CHUNK ? (size_t)(r->size - off) : MDB_CHUNK;
        if ((rc = ckh_file_pread_all(r->f, r->buf, k, off)) != 0)
            return rc;
        r->win_off = off;
        r->win_len = k;
    }
    CKH_ASSERT(off >= r->win_off && off + n <= r->win_off + r->win_len && r->win_len <= MDB_CHUNK);
    memcpy(out, r->buf + (off - r->win_off), n);
    return 0;
}

static bool wanted(const char *name, const char *const *names, size_t count, bool *seen)
{
    if (!names)
        return true;
    for (size_t i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0) {
            seen[i] = true;
            return true;
        }
    return false;
}

/* ---- one load ---- */

struct load_job {
    struct minidb *m;             /* the backend */
    struct ckh_alloc *wa;         /* the workspace's allocator: staged blobs */
    const char *node;             /* node loaded (borrowed) */
    int64_t epoch;                /* epoch loaded */
    const char *const *names;     /* blobs wanted (NULL: all; borrowed) */
    size_t count;                 /* their number */
    bool *seen;                   /* which names were found (owned) */
    char path[CKH_PATH_MAX];      /* the checkpoint */
    struct reader r;              /* reads it */
    struct mdb_header h;          /* its header */
    uint32_t file_crc;            /* whole-file checksum so far */
    uint64_t off;                 /* offset of the next record */
    uint64_t described;           /* described bytes claimed so far */
    struct ckh_blob *staged;      /* verified blobs, adopted at the end (owned) */
    size_t nstaged;               /* their number */
};

/* One record as read: descriptor, name and checksums. */
struct load_rec {
    struct mdb_desc d;                 /* decoded descriptor */
    unsigned char raw[MDB_DESC_MAX];   /* its bytes, for record_crc */
    char name[CKH_BLOB_NAME_MAX + 1];  /* the blob's name */
    uint32_t data_crc;                 /* as stored */
    uint32_t rcrc;                     /* record_crc, verified */
};

static int read_failed(struct load_job *lj, int rc)
{
    return CKH_ERRF(lj->m->base.errmsg, rc, "minidb: read of '%s' failed: %s", lj->path, ckh_strerror(rc));
}

/* A failed read inside a record: past the end of the file is corruption. */
static int rec_read_failed(struct load_job *lj, int rc)
{
    if (rc == CKH_ETRUNCATED)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT,
                        "minidb: '%s': a record runs past the end of the file", lj->path);
    return read_failed(lj, rc);
}

/* Names the checkpoint, opens it and allocates the load's buffers. */
static int load_open(struct load_job *lj)
{
    struct minidb *m = lj->m;
    struct ckh_stat st;
    int rc;
    if ((rc = ckh_db_name(m->prefix, lj->node, lj->epoch, lj->path, sizeof lj->path)) != 0)
        return CKH_ERRF(m->base.errmsg, rc, "minidb: checkpoint name for node '%s' too long", lj->node);
    for (size_t i = 0; lj->names && i < lj->count; i++)
        if (!lj->names[i])
            return CKH_ERRF(m->base.errmsg, CKH_EINVAL, "minidb: blob name %zu is NULL", i);
    if ((rc = ckh_fs_stat(m->fs, lj->path, &st)) != 0)
        return CKH_ERRF(m->base.errmsg, rc, "minidb: cannot stat '%s': %s", lj->path, ckh_strerror(rc));
    if (st.type != CKH_FT_FILE)
        return CKH_ERRF(m->base.errmsg, CKH_EFOREIGN, "minidb: '%s' is not a regular file", lj->path);
    lj->r.size = st.size_bytes;
    if ((rc = ckh_fs_open(m->fs, lj->path, CKH_O_RDONLY, &lj->r.f)) != 0)
        return CKH_ERRF(m->base.errmsg, rc, "minidb: cannot open '%s': %s", lj->path, ckh_strerror(rc));
    lj->r.buf = ckh_malloc(m->alloc, MDB_CHUNK);
    lj->seen = ckh_calloc(m->alloc, lj->count ? lj->count : 1, sizeof *lj->seen);
    if (!lj->r.buf || !lj->seen)
        return CKH_ERRF(m->base.errmsg, CKH_ENOMEM, "minidb: no memory to load '%s'", lj->path);
    return 0;
}

/* ---- header ---- */

/* The magic: a file with other first bytes is foreign, one too short for
 * it truncated. */
static int load_magic(struct load_job *lj)
{
    unsigned char p[8];
    size_t k = lj->r.size < 8 ? (size_t)lj->r.size : 8;
    int rc;
    if (k > 0 && (rc = r_read(&lj->r, 0, p, k)) != 0)
        return read_failed(lj, rc);
    if (memcmp(p, ckh__mdb_magic, k) != 0)
        return CKH_ERRF(lj->m->base.errmsg, CKH_EFOREIGN, "minidb: '%s' is not a minidb file (bad magic)",
                        lj->path);
    if (k < 8)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ETRUNCATED, "minidb: '%s' is truncated (%" PRIu64 " bytes)",
                        lj->path, lj->r.size);
    return 0;
}

/* The header's lengths against the file and its node and epoch against
 * the ones asked for; fx holds the verified header. */
static int check_header(struct load_job *lj, const unsigned char *fx)
{
    const struct mdb_header *h = &lj->h;
    const char *path = lj->path;
    if (lj->r.size < h->file_bytes)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ETRUNCATED,
                        "minidb: '%s' is truncated: %" PRIu64 " of %" PRIu64 " bytes", path,
                        lj->r.size, h->file_bytes);
    if (lj->r.size > h->file_bytes)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT,
                        "minidb: '%s' has %" PRIu64 " bytes, header says %" PRIu64, path,
                        lj->r.size, h->file_bytes);
    if (h->file_bytes < (uint64_t)h->header_bytes + MDB_FOOTER ||
        (uint64_t)h->nrecords > (h->file_bytes - h->header_bytes) / (MDB_REC_FIXED + 9))
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': impossible record count %" PRIu32,
                        path, h->nrecords);
    if ((uint64_t)h->epoch != (uint64_t)lj->epoch || h->node_len != strlen(lj->node) ||
        memcmp(fx + MDB_HDR_FIXED, lj->node, h->node_len) != 0)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT,
                        "minidb: '%s' holds another node's or epoch's checkpoint", path);
    return 0;
}

static int load_header(struct load_job *lj)
{
    struct mdb_header *h = &lj->h;
    unsigned char fx[MDB_HDR_MAX];
    int rc;
    if (lj->r.size < MDB_HDR_FIXED + 4)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ETRUNCATED, "minidb: '%s' is truncated in its header",
                        lj->path);
    if ((rc = r_read(&lj->r, 0, fx, MDB_HDR_FIXED)) != 0)
        return read_failed(lj, rc);
    ckh__mdb_header_decode(fx, h);
    if (h->version != MDB_VERSION)
        return CKH_ERRF(lj->m->base.errmsg, CKH_EVERSION,
                        "minidb: '%s' has format version %" PRIu32 ", expected %u", lj->path,
                        h->version, MDB_VERSION);
    if (h->node_len > CKH_NODE_NAME_MAX || h->header_bytes != MDB_HDR_FIXED + h->node_len + 4)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s' has a corrupt header", lj->path);
    if (lj->r.size < h->header_bytes)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ETRUNCATED, "minidb: '%s' is truncated in its header",
                        lj->path);
    if ((rc = r_read(&lj->r, MDB_HDR_FIXED, fx + MDB_HDR_FIXED, h->node_len + 4)) != 0)
        return read_failed(lj, rc);
    if (ckh_crc32c(0, fx, MDB_HDR_FIXED + h->node_len) != ckh_get_le32(fx + MDB_HDR_FIXED + h->node_len))
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': header checksum mismatch",
                        lj->path);
    if ((rc = check_header(lj, fx)) != 0)
        return rc;
    lj->file_crc = ckh__mdb_crc_u32(0, ckh_get_le32(fx + MDB_HDR_FIXED + h->node_len));
    lj->off = h->header_bytes;
    lj->staged = ckh_calloc(lj->m->alloc, h->nrecords ? h->nrecords : 1, sizeof *lj->staged);
    if (!lj->staged)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ENOMEM, "minidb: no memory to load '%s'", lj->path);
    return 0;
}

/* ---- records ---- */

/* The fields of a checksummed descriptor agree with each other and with
 * the file; on success lj->off moves past the record's metadata. */
static int check_desc(struct load_job *lj, uint32_t i, const struct load_rec *lr, size_t fixed)
{
    const struct mdb_desc *d = &lr->d;
    size_t es = ckh_dtype_size((enum ckh_dtype)d->dtype);
    uint64_t elems;
    if (ckh_shape_elems(d->ndim, d->shape, &elems) != 0 || elems > UINT64_MAX / es ||
        elems * es != d->size_bytes || memchr(lr->name, '\0', d->name_len) ||
        d->data_bytes != (d->storage == ST_DESCRIBED ? 0 : d->size_bytes))
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': record %" PRIu32 " is inconsistent",
                        lj->path, i);
    if (d->storage != ST_INLINE && d->size_bytes > MDB_DESCRIBED_MAX - lj->described)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT,
                        "minidb: '%s': blob '%s' claims %" PRIu64 " described bytes, more than "
                        "a file may describe (%llu in all)",
                        lj->path, lr->name, d->size_bytes,
                        (unsigned long long)MDB_DESCRIBED_MAX);
    if (d->storage != ST_INLINE)
        lj->described += d->size_bytes;
    lj->off += fixed + d->name_len + 8;
    if (lj->off + d->data_bytes > lj->h.file_bytes - MDB_FOOTER || lj->off + d->data_bytes < lj->off)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': record %" PRIu32 " overruns the file",
                        lj->path, i);
    lj->file_crc = ckh__mdb_crc_u32(lj->file_crc, lr->rcrc);
    for (size_t j = 0; j < lj->nstaged; j++)
        if (strcmp(lj->staged[j].name, lr->name) == 0)
            return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': blob '%s' appears twice",
                            lj->path, lr->name);
    return 0;
}

/* Reads record i's descriptor, name and checksums at lj->off and
 * verifies them. */
static int read_desc(struct load_job *lj, uint32_t i, struct load_rec *lr)
{
    struct mdb_desc *d = &lr->d;
    unsigned char tail[8];
    size_t fixed;
    int rc;
    if ((rc = r_read(&lj->r, lj->off, lr->raw, MDB_REC_FIXED)) != 0)
        return rec_read_failed(lj, rc);
    ckh__mdb_desc_decode(lr->raw, d);
    if (memcmp(lr->raw, ckh__mdb_rec_magic, 4) != 0 || d->storage > ST_GENERATED ||
        ckh_dtype_size((enum ckh_dtype)d->dtype) == 0 || d->ndim > CKH_BLOB_MAX_DIMS ||
        d->name_len == 0 || d->name_len > CKH_BLOB_NAME_MAX || d->reserved != 0)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': record %" PRIu32 " is corrupt",
                        lj->path, i);
    fixed = MDB_REC_FIXED + 8 * d->ndim;
    if ((rc = r_read(&lj->r, lj->off + MDB_REC_FIXED, lr->raw + MDB_REC_FIXED, 8 * d->ndim)) != 0 ||
        (rc = r_read(&lj->r, lj->off + fixed, lr->name, d->name_len)) != 0 ||
        (rc = r_read(&lj->r, lj->off + fixed + d->name_len, tail, 8)) != 0)
        return rec_read_failed(lj, rc);
    lr->name[d->name_len] = '\0';
    lr->data_crc = ckh_get_le32(tail);
    lr->rcrc = ckh_crc32c(ckh_crc32c(ckh_crc32c(0, lr->raw, fixed), lr->name, d->name_len), tail, 4);
    if (lr->rcrc != ckh_get_le32(tail + 4))
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': record %" PRIu32 " checksum mismatch",
                        lj->path, i);
    ckh__mdb_desc_decode_shape(lr->raw, d);
    return check_desc(lj, i, lr, fixed);
}

/* A described or generated blob: its generator must reproduce data_crc,
 * and a generated blob's stored bytes must match it too. */
static int verify_generator(struct load_job *lj, const struct load_rec *lr, struct ckh_blob *bl)
{
    uint32_t crc, c2 = 0;
    unsigned char part[4096];
    int rc;
    bl->gen = lr->d.gen;
    if ((rc = ckh__mdb_gen_crc(lj->m, &bl->gen, bl->size_bytes, &crc)) != 0)
        return CKH_ERRF(lj->m->base.errmsg, rc, "minidb: no memory to verify '%s'", lj->path);
    if (crc != lr->data_crc)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT,
                        "minidb: '%s': blob '%s' generator does not match its checksum",
                        lj->path, lr->name);
    if (lr->d.storage != ST_GENERATED)
        return 0;
    for (uint64_t pos = 0; pos < lr->d.data_bytes;) {
        size_t q = lr->d.data_bytes - pos < sizeof part ? (size_t)(lr->d.data_bytes - pos) : sizeof part;
        if ((rc = r_read(&lj->r, lj->off + pos, part, q)) != 0)
            return rec_read_failed(lj, rc);
        c2 = ckh_crc32c(c2, part, q);
        pos += q;
    }
    if (c2 != lr->data_crc)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT,
                        "minidb: '%s': bytes of blob '%s' do not match their checksum",
                        lj->path, lr->name);
    return 0;
}

/* An inline blob's bytes, read into bl->data and checked against data_crc
 * (bl->data stays NULL on failure). */
static int read_inline(struct load_job *lj, const struct load_rec *lr, struct ckh_blob *bl)
{
    unsigned char *data;
    uint32_t crc = 0;
    int rc;
    if (bl->size_bytes > SIZE_MAX || !(data = ckh_malloc(lj->wa, (size_t)bl->size_bytes)))
        return CKH_ERRF(lj->m->base.errmsg, CKH_ENOMEM, "minidb: no memory for blob '%s' of '%s'", lr->name,
                        lj->path);
    for (uint64_t pos = 0; pos < bl->size_bytes; pos += MDB_STREAM_PIECE) {
        size_t k = bl->size_bytes - pos < MDB_STREAM_PIECE ? (size_t)(bl->size_bytes - pos)
                                                           : MDB_STREAM_PIECE;
        if ((rc = r_read(&lj->r, lj->off + pos, data + pos, k)) != 0) {
            ckh_free(lj->wa, data);
            return rec_read_failed(lj, rc);
        }
        crc = ckh_crc32c(crc, data + pos, k);
    }
    if (crc != lr->data_crc) {
        ckh_free(lj->wa, data);
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': data of blob '%s' checksum mismatch",
                        lj->path, lr->name);
    }
    bl->data = data;
    return 0;
}

/* Record i: verified, then staged if wanted, else skipped. */
static int load_record(struct load_job *lj, uint32_t i)
{
    struct load_rec lr;
    struct ckh_blob bl;
    int rc;
    if ((rc = read_desc(lj, i, &lr)) != 0)
        return rc;
    if (!wanted(lr.name, lj->names, lj->count, lj->seen)) {
        lj->off += lr.d.data_bytes;
        return 0;
    }
    memset(&bl, 0, sizeof bl);
    bl.dtype = (enum ckh_dtype)lr.d.dtype;
    bl.ndim = lr.d.ndim;
    memcpy(bl.shape, lr.d.shape, 8 * (size_t)lr.d.ndim);
    bl.size_bytes = lr.d.size_bytes;
    bl.described = lr.d.storage != ST_INLINE;
    if (bl.described && (rc = verify_generator(lj, &lr, &bl)) != 0)
        return rc;
    if (lr.d.storage == ST_INLINE && bl.size_bytes > 0 && (rc = read_inline(lj, &lr, &bl)) != 0)
        return rc;
    if (!(bl.name = ckh_strdup(lj->wa, lr.name))) {
        ckh_free(lj->wa, bl.data);
        return CKH_ERRF(lj->m->base.errmsg, CKH_ENOMEM, "minidb: no memory for blob '%s' of '%s'", lr.name,
                        lj->path);
    }
    CKH_ASSERT(lj->nstaged < lj->h.nrecords);
    lj->staged[lj->nstaged++] = bl;
    lj->off += lr.d.data_bytes;
    return 0;
}

/* ---- footer and commit ---- */

static int load_footer(struct load_job *lj)
{
    unsigned char foot[MDB_FOOTER];
    uint64_t at = lj->h.file_bytes - MDB_FOOTER;
    int rc;
    if (lj->off != at)
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT,
                        "minidb: '%s': records end at %" PRIu64 ", footer at %" PRIu64,
                        lj->path, lj->off, at);
    if ((rc = r_read(&lj->r, lj->off, foot, MDB_FOOTER)) != 0)
        return read_failed(lj, rc);
    if (!ckh__mdb_footer_check(foot, lj->h.nrecords, lj->file_crc))
        return CKH_ERRF(lj->m->base.errmsg, CKH_ECORRUPT, "minidb: '%s': footer or file checksum mismatch",
                        lj->path);
    return 0;
}

/* Everything verified: every name asked for was found (or may be
 * missing), and the staged blobs move into the workspace. */
static int load_commit(struct load_job *lj, struct ckh_ws *ws, unsigned flags, size_t *loaded)
{
    int rc;
    for (size_t i = 0; lj->names && i < lj->count; i++)
        if (!lj->seen[i] && !(flags & CKH_LOAD_ALLOW_MISSING))
            return CKH_ERRF(lj->m->base.errmsg, CKH_ENOTFOUND, "minidb: '%s' has no blob '%s'", lj->path,
                            lj->names[i]);
    for (size_t i = 0; i < lj->nstaged; i++)
        if ((rc = ckh_ws_adopt(ws, &lj->staged[i])) != 0)
            return CKH_ERRF(lj->m->base.errmsg, rc, "minidb: cannot add blob '%s' of '%s' to the workspace",
                            lj->staged[i].name, lj->path);
    if (loaded)
        *loaded = lj->nstaged;
    return 0;
}

/* ---- load ---- */

int ckh__mdb_load(struct ckh_backend *b, const char *node, int64_t epoch, struct ckh_ws *ws,
                  const char *const *names, size_t count, unsigned flags, size_t *loaded)
{
    struct minidb *m = (struct minidb *)b;
    struct load_job lj = {.m = m, .wa = ckh_ws_alloc(ws), .node = node, .epoch = epoch,
                          .names = names, .count = count};
    int rc;
    lj.r.m = m;
    lj.r.path = lj.path;
    rc = load_open(&lj);
    if (rc == 0)
        rc = load_magic(&lj);
    if (rc == 0)
        rc = load_header(&lj);
    for (uint32_t i = 0; rc == 0 && i < lj.h.nrecords; i++)
        rc = load_record(&lj, i);
    if (rc == 0)
        rc = load_footer(&lj);
    if (rc == 0)
        rc = load_commit(&lj, ws, flags, loaded);
    for (size_t i = 0; i < lj.nstaged; i++)
        ckh_blob_release(lj.wa, &lj.staged[i]);
    ckh_free(m->alloc, lj.staged);
    ckh_free(m->alloc, lj.seen);
    ckh_free(m->alloc, lj.r.buf);
    if (lj.r.f)
        ckh_file_close(lj.r.f);
    return rc;
}
