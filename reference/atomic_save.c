/* Atomic file save (see include/ckh/atomic.h).
 *
 * Protocol, each step's crash outcome in brackets:
 *  1. remove this node's stale temporaries of path      [path unchanged]
 *  2. create "<path>.tmp.<node>.<16 hex>" with O_EXCL   [stray temporary]
 *     (the hex comes from the node's seeded stream, never the process id;
 *     a collision with an existing name draws again)
 *  3. write the content, fsync, close                   [stray temporary]
 *  4. rename the temporary over path                    [old or new: rename is atomic]
 *  5. fsync the parent directory                        [new is durable]
 * A stray temporary is harmless: readers only open path, and step 1 of the
 * next save of the same path by the same node removes it.
 * Defects (include/ckh/defects.h) change steps: no-fsync drops the fsyncs
 * of 3 and 5, fixed-temp-name uses "<path>.temp" opened with O_TRUNC,
 * overwrite-in-place writes path itself with O_TRUNC.
 */
#include "ckh/atomic.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"

int ckh_atomic_init(struct ckh_atomic *a, struct ckh_env *env, const struct ckh_defect_set *defects)
{
    if (!a || !env || !env->fs)
        return CKH_EINVAL;
    memset(a, 0, sizeof *a);
    a->fs = env->fs;
    a->defects = defects;
    a->alloc = env->alloc;
    const char *name = env->node ? ckh_node_name(env->node) : "node";
    size_t i = 0;
    /* Keep only characters that are safe inside a file name. */
    for (; name[i] && i + 1 < sizeof a->node; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        a->node[i] = ok ? c : '_';
    }
    a->node[i] = '\0';
    if (!i)
        strcpy(a->node, "node");
    uint64_t seed = env->rand ? ckh_rand_stream_seed(env->rand, "atomic-save") : 0;
    ckh_rng_seed(&a->rng, seed ^ ckh_hash64(CKH_HASH_INIT, a->node, strlen(a->node)));
    return 0;
}

int ckh_atomic_tmp_prefix(const char *path, const char *node, char *buf, size_t n)
{
    if (!path || !node || !buf)
        return CKH_EINVAL;
    int len = snprintf(buf, n, "%s.tmp.%s.", path, node);
    return len < 0 || (size_t)len >= n ? CKH_EINVAL : 0;
}

int ckh_atomic_listdir(struct ckh_fs *fs, struct ckh_alloc *alloc, const char *dir,
                       struct ckh_listing *out)
{
    if (!fs || !dir || !out)
        return CKH_EINVAL;
    struct ckh_listing l = {0};
    int rc = ckh_fs_listdir(fs, dir, &l);
    if (rc)
        return rc;
    struct ckh_listing c = {0};
    c.entries = ckh_calloc(alloc, l.count ? l.count : 1, sizeof *c.entries);
    if (!c.entries) {
        rc = CKH_ENOMEM;
        goto out_listing;
    }
    for (size_t i = 0; i < l.count; i++) {
        c.entries[i].name = ckh_strdup(alloc, l.entries[i].name);
        c.entries[i].type = l.entries[i].type;
        if (!c.entries[i].name) {
            c.count = i;
            ckh_atomic_listing_free(alloc, &c);
            rc = CKH_ENOMEM;
            goto out_listing;
        }
    }
    c.count = l.count;
    *out = c;
out_listing:
    ckh_fs_listing_free(&l);
    return rc;
}

void ckh_atomic_listing_free(struct ckh_alloc *alloc, struct ckh_listing *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        ckh_free(alloc, l->entries[i].name);
    ckh_free(alloc, l->entries);
    l->entries = NULL;
    l->count = 0;
}

static bool no_fsync(const struct ckh_atomic *a)
{
    return ckh_defect_on(a->defects, CKH_DEFECT_NO_FSYNC);
}

int ckh_atomic_clean_stale(struct ckh_atomic *a, const char *path)
{
    if (!a || !a->fs || !path)
        return CKH_EINVAL;
    int rc = ckh_path_check(path);
    if (rc)
        return CKH_ERRF(a->errmsg, rc, "bad path '%s'", path);
    char dir[CKH_PATH_MAX + 1], prefix[CKH_PATH_MAX + 64], fixed[CKH_PATH_MAX + 8];
    if (ckh_path_dirname(path, dir, sizeof dir) ||
        ckh_atomic_tmp_prefix(strrchr(path, '/') + 1, a->node, prefix, sizeof prefix))
        return CKH_ERRF(a->errmsg, CKH_EINVAL, "path too long: '%s'", path);
    snprintf(fixed, sizeof fixed, "%s.temp", strrchr(path, '/') + 1);
    struct ckh_listing l = {0};
    rc = ckh_atomic_listdir(a->fs, a->alloc, dir, &l);
    if (rc)
        return CKH_ERRF(a->errmsg, rc, "listdir '%s': %s", dir, ckh_strerror(rc));
    size_t plen = strlen(prefix);
    int removed = 0;
    for (size_t i = 0; i < l.count; i++) {
        const char *nm = l.entries[i].name;
        bool stale = strncmp(nm, prefix, plen) == 0 ||
                     (ckh_defect_on(a->defects, CKH_DEFECT_FIXED_TEMP_NAME) && strcmp(nm, fixed) == 0);
        if (!stale || l.entries[i].type != CKH_FT_FILE)
            continue;
        char full[CKH_PATH_MAX + 1];
        if (ckh_path_join(full, sizeof full, dir, nm))
            continue;
        rc = ckh_fs_unlink(a->fs, full);
        if (rc && rc != -ENOENT) {
            ckh_atomic_listing_free(a->alloc, &l);
            return CKH_ERRF(a->errmsg, rc, "unlink stale '%s': %s", full, ckh_strerror(rc));
        }
        removed += rc == 0;
    }
    ckh_atomic_listing_free(a->alloc, &l);
    return removed;
}

struct buf_ctx {
    const void *buf; /* content */
    size_t n;        /* its length */
};

static int buf_writer(void *ctx, struct ckh_file *f)
{
    const struct buf_ctx *b = ctx;
    return ckh_file_write_all(f, b->buf, b->n);
}

int ckh_atomic_save(struct ckh_atomic *a, const char *path, const void *buf, size_t n)
{
    if (!a || (!buf && n))
        return CKH_EINVAL;
    struct buf_ctx b = {buf, n};
    return ckh_atomic_save_with(a, path, buf_writer, &b);
}

/* Writes through writer into an open file, fsyncs it and closes it. */
static int write_sync_close(struct ckh_atomic *a, struct ckh_file *f, const char *fpath,
                            ckh_atomic_writer writer, void *ctx)
{
    int rc = writer(ctx, f);
    if (rc) {
        CKH_ERRF(a->errmsg, rc, "writing '%s': %s", fpath, ckh_strerror(rc));
        ckh_file_close(f);
        return rc;
    }
    if (!no_fsync(a)) {
        rc = ckh_file_fsync(f);
        if (rc) {
            CKH_ERRF(a->errmsg, rc, "fsync '%s': %s", fpath, ckh_strerror(rc));
            ckh_file_close(f);
            return rc;
        }
    }
    rc = ckh_file_close(f);
    if (rc)
        return CKH_ERRF(a->errmsg, rc, "close '%s': %s", fpath, ckh_strerror(rc));
    return 0;
}

int ckh_atomic_save_with(struct ckh_atomic *a, const char *path, ckh_atomic_writer writer,
                         void *ctx)
{
    if (!a || !a->fs || !path || !writer)
        return CKH_EINVAL;
    int rc = ckh_path_check(path);
    if (rc)
        return CKH_ERRF(a->errmsg, rc, "bad path '%s'", path);
    char dir[CKH_PATH_MAX + 1];
    if (ckh_path_dirname(path, dir, sizeof dir))
        return CKH_ERRF(a->errmsg, CKH_EINVAL, "bad path '%s'", path);
    struct ckh_file *f = NULL;

    if (ckh_defect_on(a->defects, CKH_DEFECT_OVERWRITE_IN_PLACE)) {
        rc = ckh_fs_open(a->fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
        if (rc)
            return CKH_ERRF(a->errmsg, rc, "open '%s': %s", path, ckh_strerror(rc));
        return write_sync_close(a, f, path, writer, ctx);
    }

    rc = ckh_atomic_clean_stale(a, path);
    if (rc < 0)
        return rc;

    char tmp[CKH_PATH_MAX + 96];
    if (ckh_defect_on(a->defects, CKH_DEFECT_FIXED_TEMP_NAME)) {
        snprintf(tmp, sizeof tmp, "%s.temp", path);
        rc = ckh_fs_open(a->fs, tmp, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
    } else {
        rc = -EEXIST;
        for (int attempt = 0; attempt < 8 && rc == -EEXIST; attempt++) {
            snprintf(tmp, sizeof tmp, "%s.tmp.%s.%016" PRIx64, path, a->node, ckh_rng_next(&a->rng));
            if (strlen(tmp) > CKH_PATH_MAX)
                return CKH_ERRF(a->errmsg, CKH_EINVAL, "path too long for a temporary: '%s'", path);
            rc = ckh_fs_open(a->fs, tmp, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_EXCL, &f);
        }
    }
    if (rc)
        return CKH_ERRF(a->errmsg, rc, "create temporary '%s': %s", tmp, ckh_strerror(rc));
    rc = write_sync_close(a, f, tmp, writer, ctx);
    if (rc)
        goto out_unlink_tmp;
    rc = ckh_fs_rename(a->fs, tmp, path);
    if (rc) {
        CKH_ERRF(a->errmsg, rc, "rename '%s' -> '%s': %s", tmp, path, ckh_strerror(rc));
        goto out_unlink_tmp;
    }
    if (!no_fsync(a)) {
        rc = ckh_fs_fsync_dir(a->fs, dir);
        if (rc)
            return CKH_ERRF(a->errmsg, rc, "fsync directory '%s': %s", dir, ckh_strerror(rc));
    }
    return 0;

out_unlink_tmp:
    ckh_fs_unlink(a->fs, tmp);
    return rc;
}

int ckh_atomic_read(struct ckh_fs *fs, struct ckh_alloc *alloc, const char *path, void **out,
                    size_t *n)
{
    if (!fs || !path || !out || !n)
        return CKH_EINVAL;
    struct ckh_stat st;
    int rc = ckh_fs_stat(fs, path, &st);
    if (rc)
        return rc;
    if (st.type != CKH_FT_FILE)
        return CKH_ENOTFOUND;
    struct ckh_file *f = NULL;
    rc = ckh_fs_open(fs, path, CKH_O_RDONLY, &f);
    if (rc)
        return rc;
    size_t size = (size_t)st.size_bytes;
    void *buf = ckh_malloc(alloc, size ? size : 1);
    if (!buf) {
        ckh_file_close(f);
        return CKH_ENOMEM;
    }
    rc = ckh_file_pread_all(f, buf, size, 0);
    ckh_file_close(f);
    if (rc) {
        ckh_free(alloc, buf);
        return rc;
    }
    *out = buf;
    *n = size;
    return 0;
}
