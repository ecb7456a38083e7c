/* Writes the seed corpus of the minidb fuzz target: real checkpoint files,
 * saved by ckh's minidb backend on a simulated disk, for node "n0" and
 * epoch 1 (the node and epoch fuzz_minidb.c loads).
 *
 *   gen_minidb_corpus OUTDIR      (tests/fuzz/corpus/minidb)
 *
 * One file per shape of content: no blob; inline blobs of several dtypes
 * and shapes; described blobs (generator triple only); described blobs
 * written out (storage GENERATED); and the limits (8 dimensions, a long
 * name, an empty blob). Each stays a few KiB. Exit status 0, or 1 with a
 * message on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/backend.h"
#include "ckh/err.h"
#include "ckh/simfs.h"

struct seed {
    const char *file;                  /* name in OUTDIR */
    uint32_t flags;                    /* CKH_BACKEND_* */
    int (*fill)(struct ckh_ws *ws);    /* the blobs saved */
};

static int fill_empty(struct ckh_ws *ws)
{
    (void)ws;
    return 0;
}

static int fill_inline(struct ckh_ws *ws)
{
    int32_t a[6] = {1, -2, 3, -4, 5, -6};
    double d[2] = {0.5, -1.25};
    float w[4] = {0.25f, 1.5f, -3.0f, 8.0f};
    int rc = ckh_ws_set(ws, "model/w", CKH_DT_F32, 2, (uint64_t[]){2, 2}, w);
    rc = rc ? rc : ckh_ws_set(ws, "opt/a", CKH_DT_I32, 2, (uint64_t[]){2, 3}, a);
    rc = rc ? rc : ckh_ws_set(ws, "opt/d", CKH_DT_F64, 1, (uint64_t[]){2}, d);
    return rc ? rc : ckh_ws_set_i64(ws, "step", 145);
}

static int fill_described(struct ckh_ws *ws)
{
    struct ckh_gen g = {.seed = 42, .stream = 3, .offset = 100};
    struct ckh_gen h = {.seed = 7, .stream = 1, .offset = 0};
    int rc = ckh_ws_set_gen(ws, "model/w", CKH_DT_F32, 2, (uint64_t[]){64, 16}, &g);
    rc = rc ? rc : ckh_ws_set_gen(ws, "model/b", CKH_DT_U8, 1, (uint64_t[]){1000}, &h);
    return rc ? rc : ckh_ws_set_i64(ws, "step", 3);
}

static int fill_generated(struct ckh_ws *ws)
{
    struct ckh_gen g = {.seed = 9, .stream = 2, .offset = 5};
    int rc = ckh_ws_set_gen(ws, "model/w", CKH_DT_U64, 1, (uint64_t[]){200}, &g);
    return rc ? rc : ckh_ws_set_i64(ws, "step", 1);
}

static int fill_limits(struct ckh_ws *ws)
{
    char name[CKH_BLOB_NAME_MAX + 1];
    uint8_t b[2] = {0xab, 0xcd};
    uint64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 2};
    memset(name, 'x', CKH_BLOB_NAME_MAX);
    name[CKH_BLOB_NAME_MAX] = '\0';
    int rc = ckh_ws_set(ws, "dims8", CKH_DT_U8, 8, s8, b);
    rc = rc ? rc : ckh_ws_set(ws, name, CKH_DT_U8, 1, (uint64_t[]){2}, b);
    rc = rc ? rc : ckh_ws_set(ws, "empty", CKH_DT_U8, 1, (uint64_t[]){0}, NULL);
    return rc ? rc : ckh_ws_set(ws, "scalar", CKH_DT_I64, 0, NULL, (int64_t[]){-1});
}

static const struct seed seeds[] = {
    {"empty.minidb", 0, fill_empty},
    {"inline.minidb", 0, fill_inline},
    {"described.minidb", 0, fill_described},
    {"generated.minidb", CKH_BACKEND_MATERIALIZE_DESCRIBED, fill_generated},
    {"limits.minidb", 0, fill_limits},
};

/* Copies /ckpt/n0.1 of fs to the real file out. */
static int copy_out(struct ckh_fs *fs, const char *out)
{
    struct ckh_stat st;
    struct ckh_file *f;
    unsigned char *buf;
    int rc = ckh_fs_stat(fs, "/ckpt/n0.1", &st);
    if (rc)
        return rc;
    if (!(buf = malloc(st.size_bytes ? (size_t)st.size_bytes : 1)))
        return CKH_ENOMEM;
    if ((rc = ckh_fs_open(fs, "/ckpt/n0.1", CKH_O_RDONLY, &f)) == 0) {
        rc = ckh_file_pread_all(f, buf, (size_t)st.size_bytes, 0);
        ckh_file_close(f);
    }
    FILE *o = rc ? NULL : fopen(out, "wb");
    if (!rc && (!o || fwrite(buf, 1, (size_t)st.size_bytes, o) != st.size_bytes))
        rc = -EIO;
    if (o && fclose(o) != 0)
        rc = -EIO;
    free(buf);
    return rc;
}

/* Saves one seed's workspace on a fresh disk and copies the file to dir. */
static int write_seed(const struct seed *s, const char *dir)
{
    struct ckh_simfs_config dc = {.name = "gen", .sector_bytes = 512, .seed = 1};
    struct ckh_backend_config bc = {.prefix = "/ckpt", .flags = s->flags};
    struct ckh_simfs *disk;
    struct ckh_backend *db = NULL;
    struct ckh_ws *ws = NULL;
    char out[4096];
    int rc = ckh_simfs_create(&dc, &disk);
    if (rc)
        return rc;
    bc.fs = ckh_simfs_fs(disk);
    if ((rc = ckh_fs_mkdir(bc.fs, "/ckpt")) != 0 ||
        (rc = ckh_backend_open("minidb", &bc, &db, NULL, 0)) != 0 ||
        (rc = ckh_ws_create(NULL, &ws)) != 0 || (rc = s->fill(ws)) != 0 ||
        (rc = ckh_backend_save(db, "n0", 1, ws, NULL, 0)) != 0)
        goto out;
    snprintf(out, sizeof out, "%s/%s", dir, s->file);
    rc = copy_out(bc.fs, out);
out:
    ckh_ws_destroy(ws);
    ckh_backend_close(db);
    ckh_simfs_destroy(disk);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 1;
    }
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        int rc = write_seed(&seeds[i], argv[1]);
        if (rc) {
            fprintf(stderr, "gen_minidb_corpus: %s: %s\n", seeds[i].file, ckh_strerror(rc));
            return 1;
        }
        printf("%s/%s\n", argv[1], seeds[i].file);
    }
    return 0;
}
