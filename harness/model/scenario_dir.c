/* Finding scenario files in folders and selecting them by name.
 *
 * Specification:
 *   - A folder is walked recursively; every regular file whose name ends
 *     in ".yaml" or ".yml" is a scenario file. Hidden entries (".name")
 *     are skipped. Symbolic links are followed for files, not for folders
 *     (no cycles).
 *   - The result is sorted by full path with strcmp, so the order never
 *     depends on the order the OS lists a folder in.
 *   - A filter is a comma-separated list of shell globs matched against
 *     the scenario name; '*' also matches '/'. Empty or NULL: everything.
 *   - A path given by the caller must be a regular file or a folder
 *     (a FIFO, a device or a socket is refused, never opened, so nothing
 *     blocks). A subfolder that cannot be read is listed as an entry of
 *     its own whose error names it; the rest of the folder still loads.
 *   - A scenario file is opened with O_NONBLOCK and checked with fstat
 *     before it is read (a regular file, at most CKH_SCN_FILE_BYTES_MAX).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "model/scenario.h"

/* The largest scenario file read (no scenario is nearly that large). */

struct path_vec {
    char **v;                /* owned paths */
    size_t n;                /* used */
    size_t cap;              /* allocated */
    struct ckh_alloc *alloc; /* allocator */
};

static int vec_push(struct path_vec *pv, const char *path)
{
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 16;
        char **nv = ckh_realloc(pv->alloc, pv->v, cap * sizeof(*nv));
        if (!nv)
            return CKH_ENOMEM;
        pv->v = nv;
        pv->cap = cap;
    }
    if (!(pv->v[pv->n] = ckh_strdup(pv->alloc, path)))
        return CKH_ENOMEM;
    pv->n++;
    return 0;
}

static bool is_scenario_name(const char *name)
{
    size_t l = strlen(name);
    return (l > 5 && !strcmp(name + l - 5, ".yaml")) || (l > 4 && !strcmp(name + l - 4, ".yml"));
}

static int walk(struct path_vec *pv, const char *dir, int depth)
{
    if (depth > CKH_SCN_DIR_DEPTH_MAX)
        return CKH_ELIMIT;
    DIR *d = opendir(dir);
    if (!d) /* a subfolder that cannot be read is an entry whose error names it */
        return depth > 0 ? vec_push(pv, dir) : -errno;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *full = ckh_malloc(pv->alloc, len);
        if (!full) {
            rc = CKH_ENOMEM;
            break;
        }
        snprintf(full, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name);
        struct stat lst, st;
        if (lstat(full, &lst) == 0) {
            if (S_ISDIR(lst.st_mode))
                rc = walk(pv, full, depth + 1);
            else if (is_scenario_name(de->d_name) && stat(full, &st) == 0 && S_ISREG(st.st_mode))
                rc = vec_push(pv, full);
        }
        ckh_free(pv->alloc, full);
        if (rc)
            break;
    }
    closedir(d);
    return rc;
}

/* The default scenario name of a file that failed to parse: its base name
 * without extension (what the parser would have used). */
static const char *base_name(const char *path, char (*buf)[256])
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(*buf, sizeof(*buf), "%s", b);
    char *dot = strrchr(*buf, '.');
    if (dot && dot != *buf)
        *dot = '\0';
    return *buf;
}

static int entry_error(struct ckh_scn_error *e, const char *path, int code, const char *fmt,
                       const char *arg)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->file, sizeof(e->file), "%s", path);
    snprintf(e->msg, sizeof(e->msg), fmt, arg);
    e->code = code;
    return code;
}

/* Reads and parses one listed path: a scenario file, or a subfolder that
 * could not be read. Never blocks on a FIFO swapped in after the listing. */
static int parse_path(const char *path, const struct ckh_scn_options *opts,
                      struct ckh_scenario **out, struct ckh_scn_error *e)
{
    struct ckh_alloc *alloc = opts && opts->alloc ? opts->alloc : ckh_alloc_system();
    *out = NULL;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        int rc = d ? CKH_EINVAL : -errno;
        if (d)
            closedir(d);
        return entry_error(e, path, rc, "cannot read this folder: %s", ckh_strerror(rc));
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = ckh_scn_read_file(path, alloc, &buf, &len, e);
    if (rc == 0)
        rc = ckh_scenario_parse_string(buf, len, path, opts, out, e);
    ckh_free(alloc, buf);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ckh_scn_list_files(const char *dir, struct ckh_alloc *alloc, char ***paths, size_t *n)
{
    if (!dir || !*dir || !paths || !n)
        return CKH_EINVAL;
    struct path_vec pv = {.alloc = alloc ? alloc : ckh_alloc_system()};
    struct stat st;
    int rc;
    if (stat(dir, &st) != 0)
        return -errno;
    if (S_ISDIR(st.st_mode))
        rc = walk(&pv, dir, 0);
    else if (S_ISREG(st.st_mode))
        rc = vec_push(&pv, dir);
    else
        return CKH_EUNSUPPORTED; /* a FIFO, device or socket: never opened */
    if (rc) {
        ckh_scn_paths_free(pv.alloc, pv.v, pv.n);
        return rc;
    }
    if (pv.n)
        qsort(pv.v, pv.n, sizeof(*pv.v), cmp_str);
    *paths = pv.v;
    *n = pv.n;
    return 0;
}

#define DEPTH_TEXT_(n) #n
#define DEPTH_TEXT_OF(n) DEPTH_TEXT_(n)
#define DEPTH_TEXT DEPTH_TEXT_OF(CKH_SCN_DIR_DEPTH_MAX)

const char *ckh_scn_list_why(int rc)
{
    if (rc == CKH_ELIMIT)
        return "folders nested more than " DEPTH_TEXT " deep below it (the limit of a scenario "
               "folder's depth is " DEPTH_TEXT ")";
    if (rc == CKH_EUNSUPPORTED)
        return "not a regular file or folder";
    return ckh_strerror(rc);
}

void ckh_scn_paths_free(struct ckh_alloc *alloc, char **paths, size_t n)
{
    if (!paths)
        return;
    for (size_t i = 0; i < n; i++)
        ckh_free(alloc, paths[i]);
    ckh_free(alloc, paths);
}

int ckh_scn_set_load(const char *dir, const struct ckh_scn_options *opts, const char *filter,
                     struct ckh_scn_set *set, struct ckh_scn_error *err)
{
    struct ckh_scn_error dummy;
    struct ckh_scn_error *e = err ? err : &dummy;
    memset(e, 0, sizeof(*e));
    if (!set || !dir) {
        e->code = CKH_EINVAL;
        snprintf(e->msg, sizeof(e->msg), "no folder or no result given");
        return CKH_EINVAL;
    }
    struct ckh_alloc *alloc = opts && opts->alloc ? opts->alloc : ckh_alloc_system();
    memset(set, 0, sizeof(*set));
    set->alloc = alloc;
    char **paths = NULL;
    size_t n = 0;
    int rc = ckh_scn_list_files(dir, alloc, &paths, &n);
    if (rc) {
        snprintf(e->file, sizeof(e->file), "%s", dir);
        snprintf(e->msg, sizeof(e->msg), "cannot list scenarios: %s", ckh_scn_list_why(rc));
        e->code = rc;
        return rc;
    }
    set->v = ckh_calloc(alloc, n ? n : 1, sizeof(*set->v));
    if (!set->v) {
        rc = CKH_ENOMEM;
        goto out_free_paths;
    }
    char nb[256];
    for (size_t i = 0; i < n; i++) {
        struct ckh_scn_entry *en = &set->v[set->n];
        int prc = parse_path(paths[i], opts, &en->scn, &en->err);
        if (prc == CKH_ENOMEM) {
            rc = CKH_ENOMEM;
            goto out_free_set;
        }
        if (!ckh_scn_filter_match(filter, en->scn ? en->scn->name : base_name(paths[i], &nb))) {
            ckh_scenario_free(en->scn);
            memset(en, 0, sizeof(*en));
            continue;
        }
        en->path = paths[i]; /* ownership moves to the entry */
        paths[i] = NULL;
        set->n++;
    }
    goto out_free_paths;

out_free_set:
    ckh_scn_set_free(set);
out_free_paths:
    ckh_scn_paths_free(alloc, paths, n);
    if (rc) {
        e->code = rc;
        snprintf(e->msg, sizeof(e->msg), "%s", ckh_strerror(rc));
    }
    return rc;
}

void ckh_scn_set_free(struct ckh_scn_set *set)
{
    if (!set || !set->v)
        return;
    for (size_t i = 0; i < set->n; i++) {
        ckh_free(set->alloc, set->v[i].path);
        ckh_scenario_free(set->v[i].scn);
    }
    ckh_free(set->alloc, set->v);
    set->v = NULL;
    set->n = 0;
}

bool ckh_scn_filter_match(const char *filter, const char *name)
{
    if (!filter || !*filter)
        return true;
    if (!name)
        return false;
    char pat[512];
    const char *c = filter;
    for (;;) {
        const char *end = strchr(c, ',');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        if (len > 0 && len < sizeof(pat)) {
            memcpy(pat, c, len);
            pat[len] = '\0';
            if (fnmatch(pat, name, 0) == 0)
                return true;
        }
        if (!end)
            return false;
        c = end + 1;
    }
}
