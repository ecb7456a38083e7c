/* Where a disk's literal bytes live: in memory (struct sf_buf's data[]),
 * or, for a disk created with a store folder (ckh_simfs_config.store_dir),
 * in an unnamed file on the real disk under that folder.
 *
 * SPECIFICATION (tests/test_simfs.c "store" cases cite the rules)
 *
 * B1. Same model. A buffer is immutable once written, whichever home it
 *     has: extents, pending writes and clones refer to byte ranges of
 *     buffers exactly as before (S1, C3). The store changes where bytes
 *     are kept, never which bytes a read, a crash or a digest sees.
 * B2. An append log. New bytes are appended to the store's current file
 *     (a fresh buffer starts on a 4 KiB boundary so that freeing it can
 *     give whole blocks back). A write that continues the disk's last
 *     write (same file, next offset) while that buffer ends at the log's
 *     end extends the buffer (up to SF_SPAN_MAX), so a sequential
 *     writer's extents merge in the live and durable copies and memory
 *     stays O(extents) even for small writes. Pending writes stay one per
 *     write: the crash model sees exactly what it saw. The disk keeps a
 *     reference on its last buffer (to extend it), so up to SF_SPAN_MAX
 *     bytes outlive their file until the next fresh buffer.
 * B3. Space. A buffer no longer referenced has its range punched out of
 *     the file (FALLOC_FL_PUNCH_HOLE): the file's blocks follow the bytes
 *     still referenced by some copy, pending write or clone. The file has
 *     no name (O_TMPFILE, or unlinked at once), so it is gone when the
 *     last disk using it is destroyed or the process dies, and nothing is
 *     left behind in the folder.
 * B4. Forks. A child that keeps using a disk after fork (the explorer's
 *     check workers) must not append where its parent appends, so its
 *     first new bytes go to a file of its own; the bytes it inherited stay
 *     readable in the parent's file, and it never punches holes there.
 *     The parent must not free bytes that such a child still reads while
 *     it runs (the explorer's parent waits for its workers). A child that
 *     cannot make a file there (the folder is gone) keeps its new bytes
 *     in its memory.
 * B5. Errors. A failing read or write of the file (the real disk full,
 *     an I/O error) fails the operation that needed it with -errno
 *     (-ENOSPC reaches the program as ENOSPC) and changes nothing.
 *
 * Threads: disks that share a store (clones) may be used by different
 * threads (each under its own lock), so the file's tail and the reference
 * counts are atomic or under the file's mutex.
 *
 * Map: files | stores | buffers | reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "simfs_internal.h"

#define SF_ALIGN 4096u                       /* a fresh buffer starts on this boundary */
#define SF_SPAN_MAX (UINT64_C(64) << 20)     /* an extended buffer stops growing here */

/* One unnamed file of a store. */
struct sf_sfile {
    int fd;                 /* the file (O_CLOEXEC) */
    pid_t pid;              /* the process that appends to it and punches it */
    uint64_t refs;          /* buffers in it + 1 while a store appends to it (atomic) */
    uint64_t tail;          /* next free offset (under lock) */
    pthread_mutex_t lock;   /* guards tail */
};

/* A disk's store, shared by the disk and its clones. */
struct sf_store {
    uint64_t refs;          /* disks using it (atomic) */
    char *dir;              /* folder of its files (owned) */
    struct sf_sfile *cur;   /* file new bytes go to (NULL until the first write) */
    bool in_memory;         /* a forked child found no folder for a file of its own (B4) */
};

/* ------------------------------------------------------------------- files */

static int sfile_open(const char *dir, struct sf_sfile **out)
{
    struct sf_sfile *f = calloc(1, sizeof *f);
    if (!f)
        return CKH_ENOMEM;
    int fd = -1;
#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) { /* no O_TMPFILE on that filesystem: a named file, unlinked at once */
        char path[4096];
        snprintf(path, sizeof path, "%s/ckh-store.XXXXXX", dir);
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    if (fd < 0) {
        int e = errno;
        free(f);
        return -e;
    }
    f->fd = fd;
    f->pid = getpid();
    f->refs = 1;
    pthread_mutex_init(&f->lock, NULL);
    *out = f;
    return 0;
}

static void sfile_unref(struct sf_sfile *f)
{
    if (!f || __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    close(f->fd);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

/* Reserves len bytes at the end of f (a fresh buffer: aligned). */
static uint64_t sfile_reserve(struct sf_sfile *f, uint64_t len)
{
    pthread_mutex_lock(&f->lock);
    uint64_t at = (f->tail + SF_ALIGN - 1) / SF_ALIGN * SF_ALIGN;
    f->tail = at + len;
    pthread_mutex_unlock(&f->lock);
    return at;
}

/* Reserves len bytes at `at` if that is still f's end (extending a buffer). */
static bool sfile_extend(struct sf_sfile *f, uint64_t at, uint64_t len)
{
    pthread_mutex_lock(&f->lock);
    bool ok = f->tail == at;
    if (ok)
        f->tail = at + len;
    pthread_mutex_unlock(&f->lock);
    return ok;
}

static int sfile_write(struct sf_sfile *f, const void *data, uint64_t len, uint64_t at)
{
    const unsigned char *p = data;
    while (len) {
        size_t k = len < (UINT64_C(1) << 30) ? (size_t)len : (size_t)1 << 30;
        ssize_t w = pwrite(f->fd, p, k, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        at += (uint64_t)w;
        len -= (uint64_t)w;
    }
    return 0;
}

/* Gives [at, at + len) of f back to the real disk (B3, B4). */
static void sfile_punch(struct sf_sfile *f, uint64_t at, uint64_t len)
{
    if (len == 0 || f->pid != getpid())
        return;
    /* Best effort: a filesystem without hole punching keeps the blocks
     * until the file closes. */
    (void)fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)at, (off_t)len);
}

/* ------------------------------------------------------------------ stores */

int ckh__sf_store_new(const char *dir, struct sf_store **out)
{
    *out = NULL;
    struct stat st;
    if (stat(dir, &st) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    struct sf_store *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = strdup(dir))) {
        free(s);
        return CKH_ENOMEM;
    }
    s->refs = 1;
    *out = s;
    return 0;
}

struct sf_store *ckh__sf_store_ref(struct sf_store *s)
{
    if (s)
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void ckh__sf_store_unref(struct sf_store *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    sfile_unref(s->cur);
    free(s->dir);
    free(s);
}

const char *ckh__sf_store_dir(const struct sf_store *s)
{
    return s ? s->dir : NULL;
}

/* The file this process appends to (B4: a forked child opens its own). */
static int store_file(struct ckh_simfs *d, struct sf_sfile **out)
{
    struct sf_store *s = d->store;
    if (!s->cur || s->cur->pid != getpid()) {
        struct sf_sfile *f = NULL;
        int rc = sfile_open(s->dir, &f);
        if (rc && s->cur && rc != CKH_ENOMEM) {
            /* A forked child whose parent's folder is gone (B4): its new
             * bytes stay in its own memory. */
            s->in_memory = true;
            *out = NULL;
            return 0;
        }
        if (rc)
            return ckh__sf_set_err(d, rc, "disk %s: cannot create its data file in %s: %s",
                                   d->name, s->dir, strerror(-rc));
        sfile_unref(s->cur);
        s->cur = f;
        if (d->tail_buf) { /* its bytes are in the parent's file: never extended here */
            ckh__sf_buf_unref(d, d->tail_buf);
            d->tail_buf = NULL;
        }
    }
    *out = s->cur;
    return 0;
}

/* ----------------------------------------------------------------- buffers */

struct sf_buf *ckh__sf_buf_new(struct ckh_simfs *d, const void *data, uint64_t len)
{
    /* With data, malloc rather than calloc: every byte is written here,
     * and a large calloc is zeroed by the allocator (jemalloc gives the
     * pages back with MADV_DONTNEED and faults them in again), which cost
     * a page fault per 4 KiB written. */
    struct sf_buf *b = data ? malloc(sizeof(*b) + len) : ckh__sf_malloc(d, sizeof(*b) + len);
    if (!b) {
        d->host_oom = true;
        return NULL;
    }
    *b = (struct sf_buf){.refs = 1, .len = len};
    if (data) {
        d->heap_bytes += sizeof(*b) + len;
        memcpy(b->data, data, len);
    }
    return b;
}

void ckh__sf_buf_unref(struct ckh_simfs *d, struct sf_buf *b)
{
    if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (b->file) {
        sfile_punch(b->file, b->at, __atomic_load_n(&b->len, __ATOMIC_ACQUIRE));
        sfile_unref(b->file);
        ckh__sf_free(d, b, sizeof(*b));
    } else {
        ckh__sf_free(d, b, sizeof(*b) + b->len);
    }
}

void ckh__sf_buf_ref(struct sf_buf *b)
{
    if (b)
        __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
}

/* Appends to the disk's last buffer if this write continues the last
 * one (same file, next offset) and that buffer ends where the log ends
 * (B2). */
static bool buf_extend(struct ckh_simfs *d, struct sf_sfile *f, const void *data, uint64_t len,
                       const void *key, uint64_t off, struct sf_src *out, int *rc)
{
    struct sf_buf *t = d->tail_buf;
    uint64_t tlen = t ? __atomic_load_n(&t->len, __ATOMIC_ACQUIRE) : 0;
    if (!t || t->file != f || key != d->tail_key || off != d->tail_end ||
        tlen + len > SF_SPAN_MAX || !sfile_extend(f, t->at + tlen, len))
        return false;
    *rc = sfile_write(f, data, len, t->at + tlen);
    if (*rc == 0) {
        __atomic_store_n(&t->len, tlen + len, __ATOMIC_RELEASE);
        ckh__sf_buf_ref(t);
        *out = (struct sf_src){.buf = t, .gen = {.offset = tlen}};
    }
    return true;
}

int ckh__sf_buf_put(struct ckh_simfs *d, const void *data, uint64_t len, const void *key,
                    uint64_t off, struct sf_src *out)
{
    *out = (struct sf_src){.buf = NULL};
    struct sf_sfile *f = NULL;
    int rc = d->store && !d->store->in_memory ? store_file(d, &f) : 0;
    if (rc)
        return rc;
    if (!f) {
        out->buf = ckh__sf_buf_new(d, data, len);
        return out->buf ? 0 : CKH_ENOMEM;
    }
    if (buf_extend(d, f, data, len, key, off, out, &rc)) {
        d->tail_end = rc ? d->tail_end : off + len;
        goto out_err;
    }
    struct sf_buf *b = ckh__sf_malloc(d, sizeof(*b));
    if (!b)
        return CKH_ENOMEM;
    b->refs = 2; /* the caller's and the disk's tail_buf */
    b->len = len;
    b->file = f;
    b->at = sfile_reserve(f, len);
    if ((rc = sfile_write(f, data, len, b->at)) != 0) {
        ckh__sf_free(d, b, sizeof(*b));
        goto out_err;
    }
    __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
    ckh__sf_buf_unref(d, d->tail_buf);
    d->tail_buf = b;
    d->tail_key = key;
    d->tail_end = off + len;
    out->buf = b;
out_err:
    if (rc)
        return ckh__sf_set_err(d, rc, "disk %s: writing its data file in %s: %s", d->name,
                               d->store->dir, strerror(-rc));
    return 0;
}

/* ------------------------------------------------------------------- reads */

int ckh__sf_buf_read(const struct sf_buf *b, uint64_t at, void *out, uint64_t n)
{
    if (!b->file) {
        memcpy(out, b->data + at, n);
        return 0;
    }
    unsigned char *p = out;
    uint64_t pos = b->at + at;
    while (n) {
        size_t k = n < (UINT64_C(1) << 30) ? (size_t)n : (size_t)1 << 30;
        ssize_t r = pread(b->file->fd, p, k, (off_t)pos);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO; /* the file is never shorter than a buffer's end */
        p += r;
        pos += (uint64_t)r;
        n -= (uint64_t)r;
    }
    return 0;
}

int ckh__sf_store_space(const struct sf_store *s, uint64_t *total, uint64_t *avail)
{
    struct statvfs sv;
    if (!s || statvfs(s->dir, &sv) != 0)
        return s ? -errno : CKH_EINVAL;
    *total = (uint64_t)sv.f_blocks * sv.f_frsize;
    *avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    return 0;
}
