/* cmd_saver: a small single-threaded training loop run as a command job
 * by tests/test_command.c. It reports through the result protocol
 * (ckh_record_jsonl_open, include/ckh/record.h) and checkpoints into
 * $CKH_CKPT_DIR one file per save, written in fixed-size pwrites so that
 * the n-th pwrite of a run is always the same operation.
 *
 *   cmd_saver [--steps N] [--every K] [--chunks C] [--chunk BYTES]
 *             [--direct] [--term-save] [--hang] [--escape] [--no-final] [--garbage]
 *             [--outside] [--pidfile PATH] [--verify]
 *
 * Checkpoint: $CKH_CKPT_DIR/ckpt.<rank> holding a 32-byte header (magic,
 * step, state, checksum of the body) then C chunks whose bytes derive from
 * the state. Saved atomically (ckpt.<rank>.tmp, fsync, rename, fsync of the
 * folder) unless --direct (straight over the final file, no fsync: the
 * bug a crash exposes). A checkpoint that does not verify makes the
 * program exit 3 naming it; --verify checks every rank's checkpoint and
 * exits 0 (all whole, or none yet) or 1.
 *
 * Test switches: --hang never exits after the first save (and leaves a
 * sleeping child in its process group); --escape is --hang that also
 * leaves a daemon outside its process group and session (a double fork
 * with setsid, the middle process gone); --no-final exits 0 without the
 * final record; --garbage writes a line that is not JSON; --outside writes
 * a file into its working folder; --term-save saves and exits 143 on
 * SIGTERM; --pidfile appends the pids of its processes to PATH.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/record.h"
#include "ckh/rng.h"

#define MAGIC 0x31564b5344434b43ull /* "CKCDSKV1" */

struct opts {
    int64_t steps, every;
    uint64_t chunks, chunk;
    int direct, term_save, hang, escape, no_final, garbage, outside, verify;
    const char *pidfile;
};

static volatile sig_atomic_t term_seen;

static void on_term(int sig)
{
    (void)sig;
    term_seen = 1;
}

static int die(const char *what, const char *path)
{
    fprintf(stderr, "cmd_saver: %s %s: %s\n", what, path, strerror(errno));
    exit(2);
}

static void write_all(int fd, const void *p, size_t n, uint64_t off, const char *path)
{
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("cannot write", path);
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
}

/* The body's chunk k for a state: bytes derived from it. */
static void fill(unsigned char *buf, size_t n, uint64_t state, uint64_t k)
{
    struct ckh_rng r;
    ckh_rng_seed(&r, state ^ (k * 0x9e3779b97f4a7c15ull));
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)ckh_rng_next(&r);
}

static void save(const struct opts *o, const char *dir, int rank, int64_t step, uint64_t state)
{
    char path[1100], tmp[1100];
    snprintf(path, sizeof path, "%s/ckpt.%d", dir, rank);
    snprintf(tmp, sizeof tmp, "%s/ckpt.%d.tmp", dir, rank);
    const char *target = o->direct ? path : tmp;
    int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        die("cannot create", target);
    unsigned char *buf = malloc(o->chunk);
    uint64_t sum = CKH_HASH_INIT;
    for (uint64_t k = 0; k < o->chunks; k++) {
        fill(buf, o->chunk, state, k);
        sum = ckh_hash64(sum, buf, o->chunk);
        write_all(fd, buf, o->chunk, 32 + k * o->chunk, target);
    }
    free(buf);
    uint64_t hdr[4] = {MAGIC, (uint64_t)step, state, sum};
    write_all(fd, hdr, sizeof hdr, 0, target);
    if (!o->direct && fsync(fd) != 0)
        die("cannot fsync", target);
    close(fd);
    if (o->direct)
        return;
    if (rename(tmp, path) != 0)
        die("cannot rename", tmp);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0)
        die("cannot fsync", dir);
    close(dfd);
}

/* Loads rank's checkpoint: 0 (none), 1 (loaded into *step, *state), or
 * -1 (present but not whole: what names it is printed). */
static int load(const struct opts *o, const char *dir, int rank, int64_t *step, uint64_t *state)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/ckpt.%d", dir, rank);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : die("cannot open", path);
    uint64_t hdr[4] = {0}, sum = CKH_HASH_INIT;
    int ok = pread(fd, hdr, sizeof hdr, 0) == (ssize_t)sizeof hdr && hdr[0] == MAGIC;
    unsigned char *buf = malloc(o->chunk);
    for (uint64_t k = 0; ok && k < o->chunks; k++) {
        ok = pread(fd, buf, o->chunk, (off_t)(32 + k * o->chunk)) == (ssize_t)o->chunk;
        sum = ckh_hash64(sum, buf, o->chunk);
    }
    free(buf);
    close(fd);
    if (!ok || sum != hdr[3]) {
        fprintf(stderr, "cmd_saver: checkpoint %s is not whole\n", path);
        return -1;
    }
    *step = (int64_t)hdr[1];
    *state = hdr[2];
    return 1;
}

static void parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.steps = 6, .every = 2, .chunks = 4, .chunk = 4096};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--steps")) o->steps = atoll(v), i++;
        else if (!strcmp(a, "--every")) o->every = atoll(v), i++;
        else if (!strcmp(a, "--chunks")) o->chunks = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--chunk")) o->chunk = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--pidfile")) o->pidfile = v, i++;
        else if (!strcmp(a, "--direct")) o->direct = 1;
        else if (!strcmp(a, "--term-save")) o->term_save = 1;
        else if (!strcmp(a, "--hang")) o->hang = 1;
        else if (!strcmp(a, "--escape")) o->hang = o->escape = 1;
        else if (!strcmp(a, "--no-final")) o->no_final = 1;
        else if (!strcmp(a, "--garbage")) o->garbage = 1;
        else if (!strcmp(a, "--outside")) o->outside = 1;
        else if (!strcmp(a, "--verify")) o->verify = 1;
        else {
            fprintf(stderr, "cmd_saver: unknown option %s\n", a);
            exit(2);
        }
    }
}

static void note_pid(const struct opts *o, pid_t pid)
{
    if (!o->pidfile)
        return;
    FILE *f = fopen(o->pidfile, "a");
    if (f) {
        fprintf(f, "%d\n", (int)pid);
        fclose(f);
    }
}

/* --verify: every rank's checkpoint in the folder is whole. */
static int verify(const struct opts *o, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int bad = 0;
    if (!d)
        return die("cannot list", dir);
    while ((de = readdir(d)) != NULL) {
        int rank;
        char tail;
        int64_t step;
        uint64_t state;
        if (sscanf(de->d_name, "ckpt.%d%c", &rank, &tail) == 1 && load(o, dir, rank, &step, &state) < 0)
            bad = 1;
    }
    closedir(d);
    printf("verify: %s\n", bad ? "a checkpoint is torn" : "every checkpoint is whole");
    return bad;
}

int main(int argc, char **argv)
{
    struct opts o;
    parse(argc, argv, &o);
    const char *dir = getenv("CKH_CKPT_DIR"), *result = getenv("CKH_RESULT"), *r = getenv("RANK");
    int rank = r ? atoi(r) : 0;
    if (!dir) {
        fprintf(stderr, "cmd_saver: CKH_CKPT_DIR is not set\n");
        return 2;
    }
    if (o.verify)
        return verify(&o, dir);
    struct ckh_record *rec = NULL;
    char msg[256];
    if (!result || ckh_record_jsonl_open(result, &rec, msg, sizeof msg) != 0) {
        fprintf(stderr, "cmd_saver: no result file: %s\n", result ? msg : "CKH_RESULT is not set");
        return 2;
    }
    note_pid(&o, getpid());
    if (o.term_save)
        signal(SIGTERM, on_term);
    int64_t step = 0;
    uint64_t state = ckh_hash64(CKH_HASH_INIT, "start", 5) + (uint64_t)rank;
    int got = load(&o, dir, rank, &step, &state);
    if (got < 0)
        return 3;
    if (got > 0)
        ckh_record_resume(rec, &(struct ckh_rec_resume){.step = step, .epoch = 0});
    if (o.garbage) {
        FILE *f = fopen(result, "a");
        fputs("this is not json\n", f);
        fclose(f);
    }
    if (o.outside) {
        FILE *f = fopen("stray.ckpt", "w");
        if (f)
            fclose(f);
    }
    while (step < o.steps) {
        step++;
        state = ckh_hash64(state, &step, sizeof step);
        struct ckh_rec_digest dg = {"state", state};
        uint64_t sample = (uint64_t)step;
        ckh_record_step(rec, &(struct ckh_rec_step){.step = step, .epoch = 0, .digests = &dg, .ndigests = 1,
                                                    .samples = &sample, .nsamples = 1});
        if (step % o.every == 0 || term_seen) {
            save(&o, dir, rank, step, state);
            ckh_record_save(rec, &(struct ckh_rec_save){.step = step, .epoch = 0, .rc = 0});
        }
        if (term_seen) {
            ckh_record_jsonl_close(rec);
            return 143;
        }
        if (o.hang) {
            pid_t child = fork();
            if (child == 0) {
                for (;;)
                    pause();
            }
            note_pid(&o, child);
            if (o.escape) {
                /* A daemon's double fork: a new session (out of the
                 * node's process group), its parent gone at once. */
                pid_t mid = fork();
                if (mid == 0) {
                    setsid();
                    pid_t d = fork();
                    if (d == 0) {
                        for (;;)
                            pause();
                    }
                    note_pid(&o, d);
                    _exit(0);
                }
                waitpid(mid, NULL, 0);
            }
            for (;;)
                pause();
        }
        if (o.term_save)
            usleep(100000); /* a preemption can land between steps */
    }
    if (!o.no_final) {
        struct ckh_rec_value v = {"loss", 1.0 / (double)(step + 1)};
        ckh_record_final(rec, &(struct ckh_rec_final){.epochs = 1, .steps = step, .total = step,
                                                      .has_digest = true, .digest = state, .values = &v,
                                                      .nvalues = 1});
    }
    ckh_record_jsonl_close(rec);
    return 0;
}
