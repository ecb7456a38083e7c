/* prog_saver: a single-threaded C program that saves N checkpoint files
 * with one fixed sequence of system calls, for command jobs under ckh
 * (scenarios/programs/) and for the test that the nth-operation trigger
 * hits the same operation on every run (one thread, no timing: the same
 * arguments give the same operations in the same order).
 *
 * Usage:  prog_saver [--files N] [--chunks K] [--chunk-bytes B] [--unsafe]
 *         prog_saver --verify [DIR]
 * Environment: CKH_CKPT_DIR (the checkpoint folder; ./ckpt when unset),
 * CKH_RESULT (the result file; no records when unset).
 *
 * File format of step_<i>.bin: a 32-byte header (the magic "CKHSAVE1",
 * then step, chunks and chunk bytes as little-endian uint64), then
 * chunks * chunk-bytes of body whose bytes are a pure function of (step,
 * offset). `latest` holds "step_<i>.bin\n", the newest committed file.
 *
 * Operations of save i (safe mode, the default), in order:
 *   open(step_i.tmp, O_CREAT|O_TRUNC), write(header), K x write(chunk)
 *   (a short write is continued), fsync, close, rename(step_i.tmp,
 *   step_i.bin), fsync(dir); then the same for latest:
 *   open(latest.tmp), write, fsync, close, rename(latest.tmp, latest),
 *   fsync(dir).
 * --unsafe writes step_i.bin and latest in place, without fsync or rename
 * (a torn file after a kill: the resume then fails naming it).
 *
 * On start it resumes after the step `latest` names, when that file
 * verifies; a file that does not verify is an error naming it (exit 1).
 * Records (include/ckh/record.h): resume, one step and one save per file
 * (the step's digest "data" is the file's body digest), and a final with
 * steps = N and the digest of every body. --verify checks that `latest`
 * (if any) names a file that verifies: exit 0, or 1 naming what is wrong;
 * it is this program's `verify:` command.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/record.h"
#include "ckh/rng.h"

#define HEADER_BYTES 32
#define MAGIC "CKHSAVE1"

struct opts {
    long files;        /* files to save (steps) */
    long chunks;       /* body writes per file */
    long chunk_bytes;  /* bytes per body write */
    bool unsafe;       /* write in place, no fsync, no rename */
    bool verify;       /* --verify: check the folder and exit */
    const char *dir;   /* checkpoint folder */
};

struct saver {
    struct opts o;             /* what to do */
    struct ckh_record *rec;    /* result writer (NULL: no records) */
    unsigned char *buf;        /* one chunk */
    char err[8192];            /* what failed */
};

/* ==== file content ==== */

/* Byte j of step's body. */
static unsigned char body_byte(uint64_t step, uint64_t j)
{
    return (unsigned char)(ckh_mix64(step * 0x9e3779b97f4a7c15ull ^ (j >> 3)) >> ((j & 7) * 8));
}

static void fill_chunk(unsigned char *buf, uint64_t step, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = body_byte(step, off + i);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Digest of step's body (the step record's "data"). */
static uint64_t body_digest(const struct opts *o, uint64_t step, unsigned char *buf)
{
    uint64_t h = 0;
    for (long c = 0; c < o->chunks; c++) {
        fill_chunk(buf, step, (uint64_t)c * (uint64_t)o->chunk_bytes, (size_t)o->chunk_bytes);
        h = ckh_hash64(h, buf, (size_t)o->chunk_bytes);
    }
    return h;
}

/* ==== system calls, each failure written to s->err ==== */

static int fail(struct saver *s, const char *what, const char *path)
{
    int e = errno ? errno : EIO;
    snprintf(s->err, sizeof s->err, "%s %s/%s: %s", what, s->o.dir, path, strerror(e));
    return -e;
}

static int write_all(struct saver *s, int fd, const unsigned char *p, size_t n, const char *name)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return fail(s, "write", name);
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int fsync_dir(struct saver *s)
{
    int fd = open(s->o.dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return fail(s, "open", ".");
    int rc = fsync(fd) == 0 ? 0 : fail(s, "fsync", ".");
    close(fd);
    return rc;
}

/* Writes a whole file: header+chunks for a step (step > 0) or `text`. */
static int write_file(struct saver *s, const char *name, uint64_t step, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", s->o.dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return fail(s, "open", name);
    int rc = 0;
    if (text) {
        rc = write_all(s, fd, (const unsigned char *)text, strlen(text), name);
    } else {
        unsigned char hdr[HEADER_BYTES];
        memcpy(hdr, MAGIC, 8);
        put_u64(hdr + 8, step);
        put_u64(hdr + 16, (uint64_t)s->o.chunks);
        put_u64(hdr + 24, (uint64_t)s->o.chunk_bytes);
        rc = write_all(s, fd, hdr, sizeof hdr, name);
        for (long c = 0; rc == 0 && c < s->o.chunks; c++) {
            fill_chunk(s->buf, step, (uint64_t)c * (uint64_t)s->o.chunk_bytes, (size_t)s->o.chunk_bytes);
            rc = write_all(s, fd, s->buf, (size_t)s->o.chunk_bytes, name);
        }
    }
    if (rc == 0 && !s->o.unsafe && fsync(fd) != 0)
        rc = fail(s, "fsync", name);
    if (close(fd) != 0 && rc == 0)
        rc = fail(s, "close", name);
    return rc;
}

/* Safe: write tmp, fsync, rename over final, fsync the folder. */
static int commit_file(struct saver *s, const char *name, uint64_t step, const char *text)
{
    if (s->o.unsafe)
        return write_file(s, name, step, text);
    char tmp[256], from[4096], to[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    int rc = write_file(s, tmp, step, text);
    if (rc != 0)
        return rc;
    snprintf(from, sizeof from, "%s/%s", s->o.dir, tmp);
    snprintf(to, sizeof to, "%s/%s", s->o.dir, name);
    if (rename(from, to) != 0)
        return fail(s, "rename", tmp);
    return fsync_dir(s);
}

/* ==== verifying and resuming ==== */

/* Checks dir/name is a whole step file; its step in *step. 0, or -1 with
 * s->err saying what is wrong. */
static int verify_file(struct saver *s, const char *name, uint64_t *step)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", s->o.dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(s, "open", name), -1;
    unsigned char hdr[HEADER_BYTES];
    int rc = -1;
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr || memcmp(hdr, MAGIC, 8) != 0) {
        snprintf(s->err, sizeof s->err, "%s: no header (torn or not a prog_saver file)", path);
        goto out_close;
    }
    *step = get_u64(hdr + 8);
    uint64_t chunks = get_u64(hdr + 16), cb = get_u64(hdr + 24), off = 0;
    int c;
    for (; off < chunks * cb && (c = fgetc(f)) != EOF; off++) {
        if ((unsigned char)c != body_byte(*step, off)) {
            snprintf(s->err, sizeof s->err, "%s: byte %" PRIu64 " of the body is wrong", path, off);
            goto out_close;
        }
    }
    if (off != chunks * cb || fgetc(f) != EOF) {
        snprintf(s->err, sizeof s->err, "%s: %" PRIu64 " body bytes, expected %" PRIu64, path, off,
                 chunks * cb);
        goto out_close;
    }
    rc = 0;
out_close:
    fclose(f);
    return rc;
}

/* The step `latest` names (0: no latest), verified; -1 on error. */
static int64_t newest_step(struct saver *s)
{
    char path[4096], name[256] = "";
    snprintf(path, sizeof path, "%s/latest", s->o.dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        return fail(s, "open", "latest"), -1;
    }
    bool ok = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    name[strcspn(name, "\n")] = '\0';
    if (!ok || strncmp(name, "step_", 5) != 0) {
        snprintf(s->err, sizeof s->err, "%s: holds \"%s\", expected step_<n>.bin", path, name);
        return -1;
    }
    uint64_t step = 0;
    if (verify_file(s, name, &step) != 0)
        return -1;
    return (int64_t)step;
}

/* ==== the job ==== */

static int save_step(struct saver *s, uint64_t step)
{
    char name[64], text[80];
    snprintf(name, sizeof name, "step_%" PRIu64 ".bin", step);
    snprintf(text, sizeof text, "%s\n", name);
    int rc = commit_file(s, name, step, NULL);
    if (rc == 0)
        rc = commit_file(s, "latest", 0, text);
    struct ckh_rec_save sv = {(int64_t)step, 0, rc, rc ? s->err : NULL};
    ckh_record_save(s->rec, &sv);
    return rc;
}

static int run(struct saver *s)
{
    int64_t start = newest_step(s);
    if (start < 0) {
        fprintf(stderr, "prog_saver: cannot resume: %s\n", s->err);
        return 1;
    }
    if (start > 0)
        ckh_record_resume(s->rec, &(struct ckh_rec_resume){start, 0});
    for (uint64_t step = (uint64_t)start + 1; step <= (uint64_t)s->o.files; step++) {
        /* The step's progress is recorded before its checkpoint: a kill
         * between the two resumes from the step before and redoes it. */
        struct ckh_rec_digest d = {"data", body_digest(&s->o, step, s->buf)};
        ckh_record_step(s->rec, &(struct ckh_rec_step){.step = (int64_t)step, .digests = &d, .ndigests = 1});
        if (save_step(s, step) != 0) {
            fprintf(stderr, "prog_saver: save of step %" PRIu64 " failed: %s\n", step, s->err);
            return 1;
        }
    }
    uint64_t all = 0;
    for (uint64_t step = 1; step <= (uint64_t)s->o.files; step++)
        all = ckh_mix64(all ^ body_digest(&s->o, step, s->buf));
    const char *blobs[] = {"latest"};
    struct ckh_rec_final fin = {.epochs = 0, .steps = s->o.files, .total = s->o.files,
                                .has_digest = true, .digest = all, .blobs = blobs, .nblobs = 1};
    ckh_record_final(s->rec, &fin);
    return 0;
}

static int verify(struct saver *s)
{
    int64_t step = newest_step(s);
    if (step < 0) {
        fprintf(stderr, "prog_saver --verify: %s\n", s->err);
        return 1;
    }
    printf("prog_saver --verify: %s: %s\n", s->o.dir,
           step ? "latest names a whole checkpoint" : "no checkpoint yet");
    return 0;
}

/* ==== arguments ==== */

static int parse_long(const char *flag, const char *text, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "prog_saver: %s expects an integer in %ld..%ld, got '%s'\n", flag, lo, hi,
                text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.files = 4, .chunks = 4, .chunk_bytes = 4096};
    o->dir = getenv("CKH_CKPT_DIR");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (strcmp(a, "--files") == 0)
            rc = parse_long(a, v, 1, 1000000, &o->files), i++;
        else if (strcmp(a, "--chunks") == 0)
            rc = parse_long(a, v, 0, 1000000, &o->chunks), i++;
        else if (strcmp(a, "--chunk-bytes") == 0)
            rc = parse_long(a, v, 1, 1 << 24, &o->chunk_bytes), i++;
        else if (strcmp(a, "--unsafe") == 0)
            o->unsafe = true;
        else if (strcmp(a, "--verify") == 0)
            o->verify = true;
        else if (o->verify && a[0] != '-')
            o->dir = a;
        else {
            fprintf(stderr, "prog_saver: unknown argument '%s'\nusage: prog_saver [--files N] "
                            "[--chunks K] [--chunk-bytes B] [--unsafe] | --verify [DIR]\n", a);
            return -1;
        }
        if (rc != 0)
            return -1;
    }
    if (!o->dir || !*o->dir)
        o->dir = "ckpt";
    return 0;
}

int main(int argc, char **argv)
{
    struct saver s = {0};
    if (parse_args(argc, argv, &s.o) != 0)
        return 2;
    if (!s.o.verify && mkdir(s.o.dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "prog_saver: cannot create %s: %s\n", s.o.dir, strerror(errno));
        return 1;
    }
    if (s.o.verify)
        return verify(&s);
    const char *result = getenv("CKH_RESULT");
    char msg[256];
    if (result && *result && ckh_record_jsonl_open(result, &s.rec, msg, sizeof msg) != 0) {
        fprintf(stderr, "prog_saver: %s\n", msg);
        return 1;
    }
    int rc = 1;
    s.buf = malloc((size_t)s.o.chunk_bytes);
    if (!s.buf) {
        fprintf(stderr, "prog_saver: out of memory\n");
        goto out_close;
    }
    rc = run(&s);
    free(s.buf);
out_close:
    ckh_record_jsonl_close(s.rec);
    return rc;
}
