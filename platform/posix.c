/* The real platform (ckh's "Net2" side): POSIX files under a root
 * directory, CLOCK_MONOTONIC, seeded named streams, stderr logging; and
 * the one monotonic clock and whole-file reader of the harness and real/.
 *
 * Every fs path is checked with ckh_path_check and prefixed with the root,
 * and symlinks are kept inside it (absolute targets are rooted, ".." in
 * relative ones refused), so a path can never name a file outside it.
 * Errors are -errno.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/posix.h"

struct posix_fs {
    struct ckh_fs base; /* must be first */
    char *root;         /* real directory the fs is rooted at, no trailing '/' */
};

struct posix_file {
    struct ckh_file base; /* must be first */
    int fd;               /* the real descriptor */
};

static int real_path(struct ckh_fs *fs, const char *path, char *buf, size_t n)
{
    int rc = ckh_path_check(path);
    if (rc)
        return rc;
    const struct posix_fs *pfs = (const struct posix_fs *)fs;
    int len = snprintf(buf, n, "%s%s", pfs->root, strcmp(path, "/") == 0 ? "" : path);
    if (len < 0 || (size_t)len >= n)
        return -ENAMETOOLONG;
    return 0;
}

#define REAL(fs, path, buf)                                                    \
    char buf[CKH_PATH_MAX * 2 + 2];                                            \
    do {                                                                       \
        int rc_ = real_path(fs, path, buf, sizeof buf);                        \
        if (rc_)                                                               \
            return rc_;                                                        \
    } while (0)

static int p_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    REAL(fs, path, rp);
    int of = O_CLOEXEC;
    switch (flags & CKH_O_ACCMODE) {
    case CKH_O_RDONLY: of |= O_RDONLY; break;
    case CKH_O_WRONLY: of |= O_WRONLY; break;
    default: of |= O_RDWR; break;
    }
    if (flags & CKH_O_CREAT) of |= O_CREAT;
    if (flags & CKH_O_EXCL) of |= O_EXCL;
    if (flags & CKH_O_TRUNC) of |= O_TRUNC;
    if (flags & CKH_O_APPEND) of |= O_APPEND;
    struct posix_file *f = malloc(sizeof *f);
    if (!f)
        return CKH_ENOMEM;
    f->fd = open(rp, of, 0644);
    if (f->fd < 0) {
        int e = errno;
        free(f);
        return -e;
    }
    f->base.fs = fs;
    *out = &f->base;
    return 0;
}

#define FD(f) (((struct posix_file *)(f))->fd)

static int64_t p_read(struct ckh_file *f, void *buf, size_t n)
{
    ssize_t r = read(FD(f), buf, n);
    return r < 0 ? -errno : r;
}

static int64_t p_pread(struct ckh_file *f, void *buf, size_t n, uint64_t off)
{
    ssize_t r = pread(FD(f), buf, n, (off_t)off);
    return r < 0 ? -errno : r;
}

static int64_t p_write(struct ckh_file *f, const void *buf, size_t n)
{
    ssize_t r = write(FD(f), buf, n);
    return r < 0 ? -errno : r;
}

static int64_t p_pwrite(struct ckh_file *f, const void *buf, size_t n, uint64_t off)
{
    ssize_t r = pwrite(FD(f), buf, n, (off_t)off);
    return r < 0 ? -errno : r;
}

static int p_fsync(struct ckh_file *f)
{
    return fsync(FD(f)) ? -errno : 0;
}

static int p_fdatasync(struct ckh_file *f)
{
    return fdatasync(FD(f)) ? -errno : 0;
}

static int p_ftruncate(struct ckh_file *f, uint64_t len)
{
    return ftruncate(FD(f), (off_t)len) ? -errno : 0;
}

static int p_close(struct ckh_file *f)
{
    int rc = close(FD(f)) ? -errno : 0;
    free(f);
    return rc;
}

static int p_rename(struct ckh_fs *fs, const char *from, const char *to)
{
    REAL(fs, from, a);
    REAL(fs, to, b);
    return rename(a, b) ? -errno : 0;
}

static int p_unlink(struct ckh_fs *fs, const char *path)
{
    REAL(fs, path, rp);
    return unlink(rp) ? -errno : 0;
}

static int p_mkdir(struct ckh_fs *fs, const char *path)
{
    REAL(fs, path, rp);
    return mkdir(rp, 0755) ? -errno : 0;
}

static int p_rmdir(struct ckh_fs *fs, const char *path)
{
    REAL(fs, path, rp);
    return rmdir(rp) ? -errno : 0;
}

static enum ckh_ftype ftype_of(mode_t m)
{
    if (S_ISDIR(m)) return CKH_FT_DIR;
    if (S_ISLNK(m)) return CKH_FT_SYMLINK;
    return CKH_FT_FILE;
}

static int cmp_dirent(const void *a, const void *b)
{
    return strcmp(((const struct ckh_dirent *)a)->name, ((const struct ckh_dirent *)b)->name);
}

static int p_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out)
{
    REAL(fs, path, rp);
    DIR *d = opendir(rp);
    if (!d)
        return -errno;
    int rc = 0;
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (out->count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct ckh_dirent *ne = realloc(out->entries, ncap * sizeof *ne);
            if (!ne) {
                rc = CKH_ENOMEM;
                goto out_free;
            }
            out->entries = ne;
            cap = ncap;
        }
        struct stat st;
        char child[sizeof rp + 256];
        snprintf(child, sizeof child, "%s/%s", rp, de->d_name);
        enum ckh_ftype t = lstat(child, &st) == 0 ? ftype_of(st.st_mode) : CKH_FT_FILE;
        char *name = strdup(de->d_name);
        if (!name) {
            rc = CKH_ENOMEM;
            goto out_free;
        }
        out->entries[out->count].name = name;
        out->entries[out->count].type = t;
        out->count++;
    }
    closedir(d);
    if (out->count)
        qsort(out->entries, out->count, sizeof *out->entries, cmp_dirent);
    return 0;
out_free:
    closedir(d);
    ckh_fs_listing_free(out);
    return rc;
}

static int p_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    REAL(fs, path, rp);
    struct stat st;
    if (lstat(rp, &st))
        return -errno;
    out->type = ftype_of(st.st_mode);
    out->size_bytes = (uint64_t)st.st_size;
    return 0;
}

/* Symlink targets stay inside the root too: an absolute target names a
 * path of this filesystem and is stored with the root in front (and read
 * back without it); a relative target may not climb with "..". */
static int p_symlink(struct ckh_fs *fs, const char *target, const char *linkpath)
{
    REAL(fs, linkpath, rp);
    if (target[0] == '/') {
        REAL(fs, target, real_target);
        return symlink(real_target, rp) ? -errno : 0;
    }
    for (const char *t = target; *t;) {
        const char *slash = strchr(t, '/');
        size_t n = slash ? (size_t)(slash - t) : strlen(t);
        if (n == 2 && t[0] == '.' && t[1] == '.')
            return CKH_EESCAPE;
        t += n + (slash ? 1 : 0);
    }
    return symlink(target, rp) ? -errno : 0;
}

static int64_t p_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize)
{
    REAL(fs, path, rp);
    char tmp[CKH_PATH_MAX * 2 + 2];
    ssize_t n = readlink(rp, tmp, sizeof tmp - 1);
    if (n < 0)
        return -errno;
    tmp[n] = '\0';
    const char *t = tmp;
    const struct posix_fs *pfs = (const struct posix_fs *)fs;
    size_t rl = strlen(pfs->root);
    if (strncmp(tmp, pfs->root, rl) == 0 && tmp[rl] == '/')
        t = tmp + rl; /* an absolute target of this filesystem */
    else if (strcmp(tmp, pfs->root) == 0)
        t = "/"; /* its root (p_symlink stored "/" as the root folder itself) */
    size_t len = strlen(t);
    size_t copy = len < bufsize - 1 ? len : bufsize - 1;
    memcpy(buf, t, copy);
    buf[copy] = '\0';
    return (int64_t)len;
}

static int p_fsync_dir(struct ckh_fs *fs, const char *path)
{
    REAL(fs, path, rp);
    int fd = open(rp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) ? -errno : 0;
    close(fd);
    return rc;
}

static int64_t p_seek(struct ckh_file *f, uint64_t off, enum ckh_seek_whence whence)
{
    off_t r = lseek(FD(f), (off_t)off, whence == CKH_SEEK_HOLE ? SEEK_HOLE : SEEK_DATA);
    return r < 0 ? -errno : (int64_t)r;
}

static const struct ckh_fs_ops posix_fs_ops = {
    .version = 2,
    .open = p_open,
    .read = p_read,
    .pread = p_pread,
    .write = p_write,
    .pwrite = p_pwrite,
    .pwrite_gen = NULL, /* the wrapper materializes described data */
    .fsync = p_fsync,
    .fdatasync = p_fdatasync,
    .ftruncate = p_ftruncate,
    .close = p_close,
    .rename = p_rename,
    .unlink = p_unlink,
    .mkdir = p_mkdir,
    .rmdir = p_rmdir,
    .listdir = p_listdir,
    .stat = p_stat,
    .symlink = p_symlink,
    .readlink = p_readlink,
    .fsync_dir = p_fsync_dir,
    .seek = p_seek,
};

int ckh_posix_fs_create(const char *root_dir, struct ckh_fs **out)
{
    if (!root_dir || !out)
        return CKH_EINVAL;
    struct stat st;
    if (stat(root_dir, &st))
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    struct posix_fs *fs = calloc(1, sizeof *fs);
    if (!fs)
        return CKH_ENOMEM;
    fs->root = strdup(root_dir);
    if (!fs->root) {
        free(fs);
        return CKH_ENOMEM;
    }
    size_t n = strlen(fs->root);
    while (n > 1 && fs->root[n - 1] == '/')
        fs->root[--n] = '\0';
    fs->base.ops = &posix_fs_ops;
    *out = &fs->base;
    return 0;
}

void ckh_posix_fs_destroy(struct ckh_fs *fs)
{
    if (!fs)
        return;
    struct posix_fs *pfs = (struct posix_fs *)fs;
    free(pfs->root);
    free(pfs);
}

/* ---- whole files ---- */

/* The open regular file fd of size bytes into a new NUL-terminated buffer. */
static int read_fd(int fd, size_t size, struct ckh_alloc *alloc, char **buf, size_t *len)
{
    char *b = ckh_malloc(alloc, size + 1);
    if (!b)
        return CKH_ENOMEM;
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, b + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = -errno;
            ckh_free(alloc, b);
            return e;
        }
        if (r == 0)
            break; /* the file shrank while read: keep what is there */
        got += (size_t)r;
    }
    b[got] = '\0';
    *buf = b;
    *len = got;
    return 0;
}

int ckh_posix_read_file(const char *path, size_t max_bytes, struct ckh_alloc *alloc, char **buf,
                        size_t *len)
{
    *buf = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = -errno;
        if (fd >= 0)
            close(fd);
        return e;
    }
    int rc;
    if (S_ISDIR(st.st_mode))
        rc = -EISDIR;
    else if (!S_ISREG(st.st_mode))
        rc = CKH_EUNSUPPORTED;
    else if ((uint64_t)st.st_size > max_bytes)
        rc = CKH_ELIMIT;
    else
        rc = read_fd(fd, (size_t)st.st_size, alloc, buf, len);
    close(fd);
    return rc;
}

/* ---- clock, rand, node ---- */

struct posix_env {
    struct ckh_env env;     /* handed to code under test */
    struct ckh_clock clock; /* CLOCK_MONOTONIC */
    struct ckh_rand rand;   /* streams from seed + node name */
    struct ckh_node node;   /* lifecycle */
    uint64_t seed;          /* run seed */
    char *name;             /* node name */
};

#define PENV_OF(field, p) ((struct posix_env *)((char *)(p)-offsetof(struct posix_env, field)))

uint64_t ckh_posix_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ckh_posix_now_ms(void)
{
    return ckh_posix_now_ns() / 1000000u;
}

static uint64_t pc_now(struct ckh_clock *c)
{
    (void)c;
    return ckh_posix_now_ns();
}

static int pc_sleep(struct ckh_clock *c, uint64_t ns)
{
    (void)c;
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
    return 0;
}

static const struct ckh_clock_ops posix_clock_ops = {.version = 1, .now_ns = pc_now, .sleep_ns = pc_sleep};

static uint64_t pr_stream(struct ckh_rand *r, const char *name)
{
    struct posix_env *pe = PENV_OF(rand, r);
    return ckh_seed_derive(ckh_node_rand_base(pe->seed, pe->name), name); /* as the simulator */
}

static const struct ckh_rand_ops posix_rand_ops = {.version = 1, .stream_seed = pr_stream};

static void pn_exit(struct ckh_node *n, int status)
{
    (void)n;
    exit(status);
}

static const char *pn_name(struct ckh_node *n)
{
    return PENV_OF(node, n)->name;
}

static void pn_log(struct ckh_node *n, const char *msg)
{
    fprintf(stderr, "[%s] %s\n", PENV_OF(node, n)->name, msg);
}

static void pn_phase(struct ckh_node *n, const char *phase, int64_t epoch, int64_t step)
{
    (void)n, (void)phase, (void)epoch, (void)step;
}

static const struct ckh_node_ops posix_node_ops = {
    .version = 1, .exit = pn_exit, .name = pn_name, .log = pn_log, .phase = pn_phase};

int ckh_posix_env_create(const char *root_dir, uint64_t seed, const char *node_name,
                         struct ckh_env **out)
{
    if (!root_dir || !node_name || !out)
        return CKH_EINVAL;
    struct posix_env *pe = calloc(1, sizeof *pe);
    if (!pe)
        return CKH_ENOMEM;
    int rc = ckh_posix_fs_create(root_dir, &pe->env.fs);
    if (rc)
        goto out_free;
    pe->name = strdup(node_name);
    if (!pe->name) {
        rc = CKH_ENOMEM;
        goto out_fs;
    }
    pe->seed = seed;
    pe->clock.ops = &posix_clock_ops;
    pe->rand.ops = &posix_rand_ops;
    pe->node.ops = &posix_node_ops;
    pe->env.clock = &pe->clock;
    pe->env.rand = &pe->rand;
    pe->env.node = &pe->node;
    pe->env.coll = NULL;
    pe->env.alloc = ckh_alloc_system();
    *out = &pe->env;
    return 0;
out_fs:
    ckh_posix_fs_destroy(pe->env.fs);
out_free:
    free(pe);
    return rc;
}

void ckh_posix_env_destroy(struct ckh_env *env)
{
    if (!env)
        return;
    struct posix_env *pe = (struct posix_env *)env;
    ckh_posix_fs_destroy(pe->env.fs);
    free(pe->name);
    free(pe);
}

int ckh_posix_pidfd_open(int pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}
