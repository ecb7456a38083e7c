/* Durable small files through ckh_fs: the pieces of a directory save
 * protocol, shared by the example loop's saver (loop_ckpt.c) and the
 * saver plugin (saver.c).
 *
 * The rule every function follows: a file, a rename or a new directory
 * entry counts only once it is fsynced, and a directory's entries count
 * only once the directory is fsynced. What a crash keeps of anything else
 * is up to the disk (ckh's crash model draws it).
 */
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "example.h"

static int join(char *buf, size_t n, const char *dir, const char *name, char *msg, size_t msglen)
{
    if (ckh_path_join(buf, n, dir, name))
        return ckh_errf(msg, msglen, CKH_EINVAL, "path '%s/%s' too long", dir, name);
    return 0;
}

static int fail(char *msg, size_t msglen, int rc, const char *what, const char *path)
{
    return ckh_errf(msg, msglen, rc, "%s '%s': %s", what, path, ckh_strerror(rc));
}

/* Writes data to path (create or truncate), fsyncs and closes it. */
static int write_synced(struct ckh_fs *fs, const char *path, const void *data, size_t n,
                        char *msg, size_t msglen)
{
    struct ckh_file *f = NULL;
    int rc = ckh_fs_open(fs, path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f);
    if (rc)
        return fail(msg, msglen, rc, "open", path);
    rc = ckh_file_write_all(f, data, n);
    if (rc) {
        fail(msg, msglen, rc, "write", path);
        goto out_close;
    }
    rc = ckh_file_fsync(f);
    if (rc)
        fail(msg, msglen, rc, "fsync", path);
out_close:;
    int crc = ckh_file_close(f);
    if (!rc && crc)
        rc = fail(msg, msglen, crc, "close", path);
    return rc;
}

int exd_write_file(struct ckh_fs *fs, const char *dir, const char *name, const void *data,
                   size_t n, char *msg, size_t msglen)
{
    char path[CKH_PATH_MAX + 1];
    int rc = join(path, sizeof path, dir, name, msg, msglen);
    return rc ? rc : write_synced(fs, path, data, n, msg, msglen);
}

int exd_write_atomic(struct ckh_fs *fs, const char *dir, const char *name, const void *data,
                     size_t n, int tag, char *msg, size_t msglen)
{
    char path[CKH_PATH_MAX + 1], tmp[CKH_PATH_MAX + 1], tname[256];
    snprintf(tname, sizeof tname, "%s.tmp.%d", name, tag);
    int rc = join(path, sizeof path, dir, name, msg, msglen);
    if (!rc)
        rc = join(tmp, sizeof tmp, dir, tname, msg, msglen);
    if (!rc)
        rc = write_synced(fs, tmp, data, n, msg, msglen);
    if (!rc) {
        rc = ckh_fs_rename(fs, tmp, path);
        if (rc)
            fail(msg, msglen, rc, "rename onto", path);
    }
    if (rc) {
        ckh_fs_unlink(fs, tmp); /* best effort: a leftover is ignored by every reader */
        return rc;
    }
    rc = ckh_fs_fsync_dir(fs, dir);
    return rc ? fail(msg, msglen, rc, "fsync directory", dir) : 0;
}

int exd_read_file(struct ckh_fs *fs, const char *path, void *buf, size_t cap, size_t *len)
{
    struct ckh_stat st;
    int rc = ckh_fs_stat(fs, path, &st);
    if (rc)
        return rc;
    if (st.type != CKH_FT_FILE)
        return CKH_EFOREIGN;
    if (st.size_bytes > cap)
        return CKH_ELIMIT;
    struct ckh_file *f = NULL;
    rc = ckh_fs_open(fs, path, CKH_O_RDONLY, &f);
    if (rc)
        return rc;
    rc = ckh_file_pread_all(f, buf, (size_t)st.size_bytes, 0);
    ckh_file_close(f);
    if (!rc)
        *len = (size_t)st.size_bytes;
    return rc;
}

int exd_mkdir_durable(struct ckh_fs *fs, const char *dir, const char *name, char *msg,
                      size_t msglen)
{
    char path[CKH_PATH_MAX + 1];
    int rc = join(path, sizeof path, dir, name, msg, msglen);
    if (rc)
        return rc;
    rc = ckh_fs_mkdir(fs, path);
    if (rc == -EEXIST) {
        /* Another rank on a shared disk made it first, or a save of the
         * same step before a restart did. It must be a folder. */
        struct ckh_stat st;
        rc = ckh_fs_stat(fs, path, &st);
        if (!rc && st.type != CKH_FT_DIR)
            rc = CKH_EEXISTS;
    }
    if (rc)
        return fail(msg, msglen, rc, "mkdir", path);
    rc = ckh_fs_fsync_dir(fs, dir);
    return rc ? fail(msg, msglen, rc, "fsync directory", dir) : 0;
}

int exd_remove_folder(struct ckh_fs *fs, const char *dir, const char *name, const char *marker,
                      char *msg, size_t msglen)
{
    char folder[CKH_PATH_MAX + 1], path[CKH_PATH_MAX + 1];
    struct ckh_listing l = {0};
    int rc = join(folder, sizeof folder, dir, name, msg, msglen);
    if (rc)
        return rc;
    /* The marker goes first and durably: a folder half removed by a crash
     * is then an uncommitted one, which nobody loads. */
    if (!join(path, sizeof path, folder, marker, msg, msglen) && ckh_fs_exists(fs, path)) {
        rc = ckh_fs_unlink(fs, path);
        if (!rc)
            rc = ckh_fs_fsync_dir(fs, folder);
        if (rc)
            return fail(msg, msglen, rc, "removing the marker of", folder);
    }
    rc = ckh_fs_listdir(fs, folder, &l);
    if (rc)
        return fail(msg, msglen, rc, "listing", folder);
    for (size_t i = 0; i < l.count && !rc; i++) {
        rc = join(path, sizeof path, folder, l.entries[i].name, msg, msglen);
        if (!rc && (rc = ckh_fs_unlink(fs, path)) != 0)
            fail(msg, msglen, rc, "unlink", path);
    }
    ckh_fs_listing_free(&l);
    if (!rc && (rc = ckh_fs_rmdir(fs, folder)) != 0)
        fail(msg, msglen, rc, "rmdir", folder);
    if (!rc && (rc = ckh_fs_fsync_dir(fs, dir)) != 0)
        fail(msg, msglen, rc, "fsync directory", dir);
    return rc;
}

bool exd_parse_num(const char *name, const char *prefix, int64_t *n)
{
    size_t p = strlen(prefix);
    if (strncmp(name, prefix, p) != 0 || !name[p] || strlen(name + p) > 15)
        return false;
    int64_t v = 0;
    for (const char *c = name + p; *c; c++) {
        if (*c < '0' || *c > '9')
            return false;
        v = v * 10 + (*c - '0');
    }
    *n = v;
    return true;
}
