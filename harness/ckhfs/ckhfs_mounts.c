/* ckhfs without libfuse: whether FUSE can be used here, the mount table,
 * and forced unmounts of ckhfs mounts (the stale sweep and the last step
 * of every unmount).
 *
 * Mounts are found in /proc/self/mountinfo (this process's mount
 * namespace): field 5 is the mount point (octal escapes for space, tab,
 * newline and backslash), the field after " - " is the fstype. Only mounts
 * of fstype CKHFS_FSTYPE at or below the asked folder are touched, deepest
 * first. A mount is detached with umount2(MNT_DETACH) when this process
 * may (root), else with `fusermount3 -u -q -z` (the user who mounted it).
 * Both work on a mount whose server died ("Transport endpoint is not
 * connected").
 *
 * Map: availability | mount table | unmounting.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckhfs/ckhfs_internal.h"

extern char **environ;

/* ------------------------------------------------------------ availability */

/* Whether an executable named prog is on $PATH. */
static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path || !path[0])
        path = "/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        char full[PATH_MAX];
        if (len > 0 && len + strlen(prog) + 2 <= sizeof full) {
            memcpy(full, path, len);
            full[len] = '/';
            strcpy(full + len + 1, prog);
            if (access(full, X_OK) == 0)
                return true;
        }
        path += len + (end ? 1 : 0);
    }
    return false;
}

int ckh_ckhfs_available(char *msg, size_t msglen)
{
#ifndef CKH_HAVE_FUSE
    return ckh_errf(msg, msglen, CKH_EUNSUPPORTED,
                    "FUSE is not available: ckh was built without FUSE support (-DCKH_FUSE=OFF); "
                    "install libfuse3-dev and fuse3 and configure with -DCKH_FUSE=ON");
#endif
    if (access("/dev/fuse", F_OK) != 0)
        return ckh_errf(msg, msglen, CKH_EUNSUPPORTED,
                        "FUSE is not available: /dev/fuse is missing (load the fuse kernel "
                        "module with `modprobe fuse`; in a container, pass --device /dev/fuse)");
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return ckh_errf(msg, msglen, CKH_EUNSUPPORTED,
                        "FUSE is not available: cannot open /dev/fuse read-write: %s (give "
                        "this user access to /dev/fuse or run as root; in a container, pass "
                        "--device /dev/fuse)",
                        strerror(errno));
    close(fd);
    if (geteuid() != 0 && !on_path("fusermount3"))
        return ckh_errf(msg, msglen, CKH_EUNSUPPORTED,
                        "FUSE is not available: fusermount3 is not on PATH and ckh is not "
                        "root (install Debian's fuse3 package)");
    if (msg && msglen)
        msg[0] = '\0';
    return 0;
}

/* ------------------------------------------------------------- mount table */

int ckh__ckhfs_abspath(const char *path, char *out, size_t n)
{
    char buf[PATH_MAX];
    if (realpath(path, buf)) {
        if (strlen(buf) >= n)
            return -ENAMETOOLONG;
        strcpy(out, buf);
        return 0;
    }
    /* A dead mount does not resolve (ENOTCONN): keep the path as given. */
    int len;
    if (path[0] == '/') {
        len = snprintf(out, n, "%s", path);
    } else {
        if (!getcwd(buf, sizeof buf))
            return -errno;
        len = snprintf(out, n, "%s/%s", buf, path);
    }
    if (len < 0 || (size_t)len >= n)
        return -ENAMETOOLONG;
    while (len > 1 && out[len - 1] == '/')
        out[--len] = '\0';
    return 0;
}

/* Decodes mountinfo's octal escapes (\040 ...) in place. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* Parses one mountinfo line: *mp (unescaped, in place) and *fstype. */
static bool parse_line(char *line, char **mp, char **fstype)
{
    char *save = NULL;
    char *f[5];
    for (int i = 0; i < 5; i++) {
        f[i] = strtok_r(i == 0 ? line : NULL, " ", &save);
        if (!f[i])
            return false;
    }
    char *t;
    while ((t = strtok_r(NULL, " ", &save)) != NULL && strcmp(t, "-") != 0)
        ; /* optional fields */
    if (!t || !(*fstype = strtok_r(NULL, " ", &save)))
        return false;
    unescape(f[4]);
    *mp = f[4];
    return true;
}

/* Whether mp is dir or below it. */
static bool is_below(const char *mp, const char *dir, bool exact)
{
    size_t n = strlen(dir);
    if (strcmp(mp, dir) == 0)
        return true;
    if (exact)
        return false;
    if (n == 1 && dir[0] == '/')
        return mp[0] == '/';
    return strncmp(mp, dir, n) == 0 && mp[n] == '/';
}

/* The ckhfs mount points at or below dir, deepest (longest) first; *out is
 * an array of owned strings (free both). Returns the count or -errno. */
static int list_mounts(const char *dir, bool exact, char ***out)
{
    *out = NULL;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char **v = NULL;
    int n = 0, rc = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *mp, *fstype;
        if (!parse_line(line, &mp, &fstype) || strcmp(fstype, CKHFS_FSTYPE) != 0 ||
            !is_below(mp, dir, exact))
            continue;
        char **nv = realloc(v, (size_t)(n + 1) * sizeof(*v));
        char *s = strdup(mp);
        if (!nv || !s) {
            free(s);
            if (nv)
                v = nv;
            rc = -ENOMEM;
            break;
        }
        v = nv;
        /* insertion: longest first, so nested mounts go before their parents */
        int i = n++;
        while (i > 0 && strlen(v[i - 1]) < strlen(s)) {
            v[i] = v[i - 1];
            i--;
        }
        v[i] = s;
    }
    free(line);
    fclose(f);
    if (rc) {
        for (int i = 0; i < n; i++)
            free(v[i]);
        free(v);
        return rc;
    }
    *out = v;
    return n;
}

/* -------------------------------------------------------------- unmounting */

/* Runs `fusermount3 -u -q -z -- mp`; 0 when it exits 0. */
static int fusermount_lazy(const char *mp)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -ENOMEM;
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {"fusermount3", "-u", "-q", "-z", "--", (char *)mp, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "fusermount3", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -rc;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EPERM;
}

/* Detaches the mount at mp (lazily: a busy mount goes at once from the
 * namespace, its last user releases it). */
static int unmount_one(const char *mp)
{
    if (umount2(mp, MNT_DETACH) == 0)
        return 0;
    if (errno == EINVAL || errno == ENOENT)
        return -errno; /* not a mount point any more */
    return fusermount_lazy(mp);
}

int ckh__ckhfs_unmount_below(const char *dir, bool exact)
{
    char base[PATH_MAX];
    if (!dir || ckh__ckhfs_abspath(dir, base, sizeof base) != 0)
        return 0;
    char **mps = NULL;
    int n = list_mounts(base, exact, &mps);
    int done = 0;
    for (int i = 0; i < n; i++) {
        if (unmount_one(mps[i]) == 0)
            done++;
        free(mps[i]);
    }
    free(mps);
    return done;
}

int ckh_ckhfs_sweep_stale(const char *dir)
{
    return ckh__ckhfs_unmount_below(dir, false);
}
