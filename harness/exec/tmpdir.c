/* ckh's temporary folders (specification in tmpdir.h). */
#include "exec/tmpdir.h"
#include "ckhfs/ckhfs.h"
#include "exec/prog_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MARKER ".ckh-owner"
#define REMOVE_DEPTH_MAX 16

const char *ckh_tmp_base(void)
{
    const char *b = getenv("TMPDIR");
    return b && b[0] ? b : "/tmp";
}

/* Start time of pid in clock ticks since boot (0: unknown). */
static unsigned long long start_time_of(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Field 2 (comm) may hold spaces: count fields after its ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

int ckh_tmp_make(char *out, size_t n)
{
    int len = snprintf(out, n, "%s/ckh-%ld-XXXXXX", ckh_tmp_base(), (long)getpid());
    if (len < 0 || (size_t)len >= n)
        return -ENAMETOOLONG;
    if (!mkdtemp(out))
        return -errno;
    char marker[1100];
    snprintf(marker, sizeof marker, "%s/" MARKER, out);
    FILE *f = fopen(marker, "we");
    int rc = 0;
    if (!f) {
        rc = -errno;
    } else {
        fprintf(f, "ckh %ld %llu\n", (long)getpid(), start_time_of((long)getpid()));
        if (fclose(f) != 0)
            rc = -EIO;
    }
    if (rc)
        ckh_tmp_remove(out);
    return rc;
}

static int remove_at(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -errno;
    if (depth >= REMOVE_DEPTH_MAX)
        return -ELOOP;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = -errno;
        close(fd);
        return e;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        int r = remove_at(fd, de->d_name, depth + 1);
        if (r && !rc)
            rc = r;
    }
    closedir(d);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && !rc)
        rc = -errno;
    return rc;
}

int ckh_tmp_remove(const char *dir)
{
    if (!dir || !dir[0])
        return -EINVAL;
    return remove_at(AT_FDCWD, dir, 0);
}

/* The pid in a "ckh-<pid>-XXXXXX" name (0: not such a name). */
static long pid_of_name(const char *name)
{
    if (strncmp(name, "ckh-", 4) != 0)
        return 0;
    char *end = NULL;
    long pid = strtol(name + 4, &end, 10);
    if (pid <= 0 || !end || end == name + 4 || *end != '-' || strlen(end + 1) != 6)
        return 0;
    return pid;
}

static bool is_stale(const char *base, const char *name, long pid)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s/" MARKER, base, name);
    /* Anyone may make a folder of this name, and a program under test
     * knows its run folder: the marker is read only as a regular file
     * (a FIFO there must not stop ckh; exec/prog_file.h), one line of it. */
    char line[128], why[256];
    int fd = -1;
    uint64_t size = 0;
    if (ckh__prog_file_open(path, "a run folder's marker", &fd, &size, why, sizeof why) != 0)
        return false;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n <= 0)
        return false;
    line[n] = '\0';
    long mpid = 0;
    unsigned long long mstart = 0;
    if (sscanf(line, "ckh %ld %llu", &mpid, &mstart) != 2 || mpid != pid)
        return false;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    unsigned long long now = start_time_of(pid);
    return mstart && now && now != mstart; /* the pid now names another process */
}

int ckh_tmp_sweep(const char *base)
{
    if (!base)
        base = ckh_tmp_base();
    DIR *d = opendir(base);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long pid = pid_of_name(de->d_name);
        if (!pid || pid == (long)getpid() || !is_stale(base, de->d_name, pid))
            continue;
        char path[1100];
        snprintf(path, sizeof path, "%s/%s", base, de->d_name);
        /* A killed ckh may have left ckhfs mounts in its folder (dead
         * servers: "Transport endpoint is not connected"); they go first,
         * and only those below this folder. */
        ckh_ckhfs_sweep_stale(path);
        if (ckh_tmp_remove(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int ckh_tmp_mkdirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0700) != 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    return mkdir(buf, 0700) != 0 && errno != EEXIST ? -errno : 0;
}
