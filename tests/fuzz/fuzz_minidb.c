/* Fuzz target: loading a minidb checkpoint file (reference/minidb.c) from
 * arbitrary bytes, through the public backend API (ckh/backend.h).
 *
 * The input is written as /ckpt/n0.1 on a fresh simulated disk
 * (ckh/simfs.h, used directly, no simulator), and the minidb backend loads
 * node "n0", epoch 1 from it, once with every blob and once with a name
 * list and CKH_LOAD_ALLOW_MISSING. The seeds in tests/fuzz/corpus/minidb/
 * are real files ckh wrote for that node and epoch
 * (tests/fuzz/gen_minidb_corpus.c).
 *
 * Every part of a minidb file is checksummed, so a mutated input is
 * nearly always refused at the first CRC. To reach the code behind the
 * checks, each input is also loaded a second time with its checksums
 * recomputed (repair() below, which follows the format at the top of
 * reference/minidb.c): header CRC, file length, each inline blob's data
 * CRC, each record CRC, the file CRC. The raw load still covers the
 * refusals.
 *
 * Invariants checked (abort on violation):
 *   a failed load leaves the workspace unchanged (empty): all or nothing;
 *   a successful load of every blob reports as many blobs as it adopted;
 *   what loaded saves again (epoch 2) and loads back with the same digest.
 */
#include <stdlib.h>
#include <string.h>

#include "ckh/backend.h"
#include "ckh/endian.h"
#include "ckh/rng.h"
#include "ckh/simfs.h"
#include "fuzz.h"

#define HDR_FIXED 40u  /* header bytes before the node name */
#define REC_FIXED 56u  /* record bytes before the shape */
#define FOOTER 16u     /* footer bytes */
#define STORE_INLINE 0 /* record storage kind whose bytes follow it */
/* Generated blobs are checksummed by generating them: a repaired input
 * claiming more than this is not loaded, so no input costs seconds. */
#define GEN_BYTES_MAX (1u << 20)

static uint32_t crc_u32(uint32_t crc, uint32_t v)
{
    unsigned char b[4];
    ckh_put_le32(b, v);
    return ckh_crc32c(crc, b, 4);
}

/* Recomputes the checksums and the length of the minidb file in p[0..n)
 * in place, as far as its structure can be followed. Returns false when
 * the result must not be loaded (a generated blob above GEN_BYTES_MAX). */
static bool repair(unsigned char *p, size_t n)
{
    if (n < HDR_FIXED + 4 + FOOTER || memcmp(p, "CKHMINDB", 8) != 0)
        return true;
    uint32_t node_len = ckh_get_le32(p + 28);
    if (node_len > CKH_NODE_NAME_MAX || HDR_FIXED + node_len + 4 > n)
        return true;
    ckh_put_le32(p + 12, HDR_FIXED + node_len + 4);
    ckh_put_le64(p + 32, n);
    uint32_t hcrc = ckh_crc32c(0, p, HDR_FIXED + node_len);
    ckh_put_le32(p + HDR_FIXED + node_len, hcrc);
    uint32_t fcrc = crc_u32(0, hcrc), nrec = ckh_get_le32(p + 24);
    size_t off = HDR_FIXED + node_len + 4;
    for (uint32_t i = 0; i < nrec; i++) {
        if (n - off < REC_FIXED)
            return true;
        unsigned char *rec = p + off;
        uint32_t ndim = (uint32_t)rec[6] | ((uint32_t)rec[7] << 8);
        uint32_t name_len = ckh_get_le32(rec + 8);
        uint64_t size = ckh_get_le64(rec + 16), data_bytes = ckh_get_le64(rec + 24);
        if (ndim > CKH_BLOB_MAX_DIMS || name_len > CKH_BLOB_NAME_MAX)
            return true;
        size_t meta = REC_FIXED + 8 * ndim + name_len; /* bytes before the data CRC */
        if (n - off < meta + 8 || data_bytes > n - off - meta - 8)
            return true;
        if (rec[4] != STORE_INLINE && size > GEN_BYTES_MAX)
            return false;
        if (rec[4] == STORE_INLINE)
            ckh_put_le32(rec + meta, ckh_crc32c(0, rec + meta + 8, (size_t)data_bytes));
        uint32_t rcrc = ckh_crc32c(0, rec, meta + 4);
        ckh_put_le32(rec + meta + 4, rcrc);
        fcrc = crc_u32(fcrc, rcrc);
        off += meta + 8 + (size_t)data_bytes;
    }
    if (n - off == FOOTER)
        ckh_put_le32(p + off + 12, ckh_crc32c(fcrc, p + off, 12));
    return true;
}

/* Writes p[0..n) as path on fs; 0 or a negative code. */
static int put_file(struct ckh_fs *fs, const char *path, const unsigned char *p, size_t n)
{
    struct ckh_file *f;
    int rc = ckh_fs_open(fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
    if (rc)
        return rc;
    rc = n ? ckh_file_write_all(f, p, n) : 0;
    int crc = ckh_file_close(f);
    return rc ? rc : crc;
}

/* Saves what loaded as epoch 2 and checks it loads back the same. */
static void check_round_trip(struct ckh_backend *db, const struct ckh_ws *ws)
{
    struct ckh_ws *back;
    size_t loaded = 0;
    if (ckh_ws_create(NULL, &back) != 0)
        abort();
    if (ckh_backend_save(db, "n0", 2, ws, NULL, 0) != 0 ||
        ckh_backend_load(db, "n0", 2, back, NULL, 0, 0, &loaded) != 0 ||
        loaded != ckh_ws_count(ws) || ckh_ws_digest(back, NULL) != ckh_ws_digest(ws, NULL))
        abort();
    ckh_ws_destroy(back);
}

/* Loads node n0 epoch 1 from bytes p[0..n) on a fresh disk, twice. */
static void load_one(const unsigned char *p, size_t n)
{
    static const char *const names[] = {"model/w", "step", "missing"};
    struct ckh_simfs_config dc = {.name = "fuzz", .sector_bytes = 512, .seed = 1};
    struct ckh_backend_config bc = {.prefix = "/ckpt"};
    struct ckh_simfs *disk;
    struct ckh_backend *db;
    struct ckh_ws *ws;
    size_t loaded = 0;
    if (ckh_simfs_create(&dc, &disk) != 0)
        abort();
    bc.fs = ckh_simfs_fs(disk);
    if (ckh_fs_mkdir(bc.fs, "/ckpt") != 0 || put_file(bc.fs, "/ckpt/n0.1", p, n) != 0 ||
        ckh_backend_open("minidb", &bc, &db, NULL, 0) != 0 || ckh_ws_create(NULL, &ws) != 0)
        abort();
    int rc = ckh_backend_load(db, "n0", 1, ws, NULL, 0, 0, &loaded);
    if (rc != 0 && ckh_ws_count(ws) != 0)
        abort();
    if (rc == 0) {
        if (loaded != ckh_ws_count(ws))
            abort();
        check_round_trip(db, ws);
    }
    ckh_ws_clear(ws);
    rc = ckh_backend_load(db, "n0", 1, ws, names, 3, CKH_LOAD_ALLOW_MISSING, &loaded);
    if ((rc != 0 && ckh_ws_count(ws) != 0) || (rc == 0 && loaded != ckh_ws_count(ws)))
        abort();
    ckh_ws_destroy(ws);
    ckh_backend_close(db);
    ckh_simfs_destroy(disk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *fixed = malloc(size ? size : 1);
    if (!fixed)
        abort();
    load_one(data, size);
    if (size)
        memcpy(fixed, data, size);
    if (size && repair(fixed, size) && memcmp(fixed, data, size) != 0)
        load_one(fixed, size);
    free(fixed);
    return 0;
}
