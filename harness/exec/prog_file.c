/* Files a program under test can reach (specification in prog_file.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/prog_file.h"

const char *ckh__prog_file_kind(mode_t mode)
{
    if (S_ISREG(mode))
        return "a regular file";
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a file ckh knows";
}

/* Opens path (the rules of prog_file.h) into *fd with st its fstat.
 * CKH_EINVAL when it is not a regular file with one name (st says what
 * it is: a link's own lstat), else -errno. */
static int open_checked(const char *path, int *fd, struct stat *st)
{
    *fd = -1;
    /* O_NONBLOCK: a FIFO opens at once (and is refused), never waits for
     * a writer; O_NOFOLLOW: a link fails with ELOOP, its target untouched;
     * O_NOCTTY: a terminal does not become ckh's. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (f < 0) {
        int e = errno;
        return e == ELOOP && lstat(path, st) == 0 && S_ISLNK(st->st_mode) ? CKH_EINVAL : -e;
    }
    if (fstat(f, st) != 0) {
        int e = errno;
        close(f);
        return -e;
    }
    if (!S_ISREG(st->st_mode) || st->st_nlink > 1) {
        close(f);
        return CKH_EINVAL;
    }
    *fd = f;
    return 0;
}

/* What was found instead of a regular file with one name (st from a
 * refusing open_checked): "is a FIFO, not a regular file". */
static void found_text(const struct stat *st, char *out, size_t n)
{
    if (S_ISREG(st->st_mode))
        snprintf(out, n, "has %ju names (a hard link to another file)", (uintmax_t)st->st_nlink);
    else
        snprintf(out, n, "is %s, not a regular file", ckh__prog_file_kind(st->st_mode));
}

int ckh__prog_file_open(const char *path, const char *what, int *fd, uint64_t *size, char *msg, size_t n)
{
    struct stat st;
    char found[96];
    *size = 0;
    int rc = open_checked(path, fd, &st);
    if (rc == CKH_EINVAL) {
        found_text(&st, found, sizeof found);
        return ckh_errf(msg, n, rc, "%s (%s) %s: ckh reads a program's file only when it is a regular file "
                        "with one name, and never follows a link", what, path, found);
    }
    if (rc == -ENOENT)
        return ckh_errf(msg, n, rc, "%s (%s) is gone: removed or renamed while the program ran", what, path);
    if (rc)
        return ckh_errf(msg, n, rc, "cannot open %s (%s): %s", what, path, strerror(-rc));
    *size = (uint64_t)st.st_size;
    return 0;
}

/* "2199023255552 bytes (2.0 TiB)" */
static void size_text(uint64_t b, char *out, size_t n)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)b;
    int u = -1;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u < 0)
        snprintf(out, n, "%" PRIu64 " bytes", b);
    else
        snprintf(out, n, "%" PRIu64 " bytes (%.1f %s)", b, v, unit[u]);
}

int ckh__prog_file_read(const char *path, const char *what, uint64_t max_bytes, const char *limit_name,
                        bool add_nl, char **buf, size_t *len, char *msg, size_t n)
{
    int fd = -1;
    uint64_t size = 0;
    *buf = NULL;
    *len = 0;
    int rc = ckh__prog_file_open(path, what, &fd, &size, msg, n);
    if (rc)
        return rc;
    if (size > max_bytes || size > SIZE_MAX - 2) {
        char got[64];
        size_text(size, got, sizeof got);
        close(fd);
        return ckh_errf(msg, n, CKH_ELIMIT, "%s (%s) holds %s, over %s", what, path, got, limit_name);
    }
    char *b = malloc((size_t)size + 2);
    if (!b) {
        close(fd);
        return ckh_errf(msg, n, CKH_ENOMEM, "out of memory reading %s (%s)", what, path);
    }
    /* At most the size fstat gave: a file that grows meanwhile is read
     * as far as it was, one that shrinks as far as it goes. */
    size_t got = 0;
    while (got < (size_t)size) {
        ssize_t r = read(fd, b + got, (size_t)size - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0) {
            int e = errno;
            free(b);
            close(fd);
            return ckh_errf(msg, n, -e, "cannot read %s (%s): %s", what, path, strerror(e));
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (add_nl && got && b[got - 1] != '\n')
        b[got++] = '\n';
    b[got] = '\0';
    *buf = b;
    *len = got;
    return 0;
}

void ckh__prog_file_last_line(const char *path, char *out, size_t n)
{
    char buf[4096], found[96];
    struct stat st;
    int fd = -1;
    if (!n)
        return;
    out[0] = '\0';
    int rc = open_checked(path, &fd, &st);
    if (rc == CKH_EINVAL) {
        found_text(&st, found, sizeof found);
        snprintf(out, n, "[not read: the log %s]", found);
        return;
    }
    if (rc)
        return;
    uint64_t size = (uint64_t)st.st_size, want = sizeof buf - 1;
    ssize_t r;
    while ((r = pread(fd, buf, (size_t)want, (off_t)(size > want ? size - want : 0))) < 0 && errno == EINTR)
        ;
    close(fd);
    if (r <= 0)
        return;
    buf[r] = '\0';
    while (r > 0 && isspace((unsigned char)buf[r - 1]))
        buf[--r] = '\0';
    char *nl = strrchr(buf, '\n');
    snprintf(out, n, "%.*s", (int)(n - 1), nl ? nl + 1 : buf);
}

int ckh__prog_file_create(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT)
        return -errno; /* a folder: EISDIR */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    return fd >= 0 ? fd : -errno;
}
