/* Checked option values (see opt.h). */
#include "cli/opt.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "model/scenario.h"

/* Digits only: decimal, or 0x and hex. */
static int parse_digits(const char *t, uint64_t *out)
{
    unsigned base = 10;
    if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
        base = 16;
        t += 2;
    }
    if (!*t)
        return CKH_EINVAL;
    uint64_t v = 0;
    for (; *t; t++) {
        unsigned d;
        if (*t >= '0' && *t <= '9')
            d = (unsigned)(*t - '0');
        else if (base == 16 && *t >= 'a' && *t <= 'f')
            d = (unsigned)(*t - 'a' + 10);
        else if (base == 16 && *t >= 'A' && *t <= 'F')
            d = (unsigned)(*t - 'A' + 10);
        else
            return CKH_EINVAL;
        if (v > (UINT64_MAX - d) / base)
            return CKH_EINVAL; /* overflow */
        v = v * base + d;
    }
    *out = v;
    return 0;
}

int ckh_opt_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out,
                char *msg, size_t n)
{
    uint64_t v = 0;
    if (!text || parse_digits(text, &v) != 0 || v < min || v > max)
        return ckh_errf(msg, n, CKH_EINVAL, "--%s expects an integer %" PRIu64 "..%" PRIu64
                        ", got '%s'", name, min, max, text ? text : "");
    *out = v;
    return 0;
}

int ckh_opt_size(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out,
                 char *msg, size_t n)
{
    uint64_t v = 0;
    bool plain = text && text[0] >= '0' && text[0] <= '9'; /* no sign, no blank */
    if (!plain || ckh_scn_parse_size(text, &v) != 0 || v < min || v > max)
        return ckh_errf(msg, n, CKH_EINVAL, "--%s expects a size such as 512MiB or 4GiB, got '%s'",
                        name, text ? text : "");
    *out = v;
    return 0;
}

int ckh_opt_check_output(const char *what, const char *path, bool is_dir, char *msg, size_t n)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!path[0])
        return ckh_errf(msg, n, -ENOENT, "cannot write the %s '': no file name", what);
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode) != is_dir)
            return ckh_errf(msg, n, is_dir ? -ENOTDIR : -EISDIR, "cannot write the %s %s: %s",
                            what, path, is_dir ? "not a folder" : "is a folder");
        if (access(path, W_OK | (is_dir ? X_OK : 0)) != 0)
            return ckh_errf(msg, n, -errno, "cannot write the %s %s: %s", what, path,
                            strerror(errno));
        return 0;
    }
    if (errno != ENOENT)
        return ckh_errf(msg, n, -errno, "cannot write the %s %s: %s", what, path, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ckh_errf(msg, n, -ENOENT, "cannot write the %s %s: no folder %s", what, path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return ckh_errf(msg, n, -errno, "cannot write the %s %s: folder %s: %s", what, path, dir,
                        strerror(errno));
    return 0;
}

int ckh_opt_shard(const char *name, const char *text, uint32_t *index, uint32_t *count, char *msg,
                  size_t n)
{
    const char *slash = strchr(text, '/');
    char first[32];
    uint64_t i = 0, c = 0;
    int rc = CKH_EINVAL;
    if (slash && (size_t)(slash - text) < sizeof first) {
        snprintf(first, sizeof first, "%.*s", (int)(slash - text), text);
        rc = ckh_opt_u64(name, slash + 1, 1, UINT32_MAX, &c, msg, n);
        rc = rc ? rc : ckh_opt_u64(name, first, 1, c, &i, msg, n);
    }
    if (rc)
        return ckh_errf(msg, n, CKH_EINVAL, "--%s expects I/N with 1 <= I <= N, got '%s'", name,
                        text);
    *index = (uint32_t)i;
    *count = (uint32_t)c;
    return 0;
}

/* Where path would be written: its folder resolved, then its name
 * ("" when the folder cannot be resolved). */
static void output_identity(const char *path, char *out, size_t n)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (!realpath(dir, real)) {
        snprintf(out, n, "%s", "");
        return;
    }
    snprintf(out, n, "%s/%s", strcmp(real, "/") ? real : "", name);
}

int ckh_opt_check_reports(const char *junit, const char *json, const char *html, char *msg, size_t n)
{
    static const char *const what[] = {"JUnit report", "JSON report", "HTML report"};
    static const char *const flag[] = {"--junit", "--json", "--html"};
    const char *path[] = {junit, json, html};
    char id[3][PATH_MAX + 256];
    for (int i = 0; i < 3; i++) {
        int rc = path[i] ? ckh_opt_check_output(what[i], path[i], false, msg, n) : 0;
        if (rc != 0)
            return rc;
        if (path[i])
            output_identity(path[i], id[i], sizeof id[i]);
    }
    for (int i = 0; i < 3; i++)
        for (int k = i + 1; k < 3; k++)
            if (path[i] && path[k] && id[i][0] && !strcmp(id[i], id[k]))
                return ckh_errf(msg, n, CKH_EINVAL, "%s and %s name the same file %s: one report would "
                                "overwrite the other", flag[i], flag[k], path[k]);
    return 0;
}
