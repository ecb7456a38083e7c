/* The filesystem ops table seen by code under test.
 *
 * Code under test (reference/, third-party backends) does all its file I/O
 * through a struct ckh_fs. The simulator (sim/simfs.c) and the POSIX
 * platform (platform/posix.c) each provide one; fault shims wrap any
 * implementation because every implementation embeds struct ckh_fs /
 * struct ckh_file as its first member.
 *
 * Paths are '/'-separated and absolute within the filesystem ("/ckpt/a.1").
 * Methods are only ever appended; each says from which version it exists.
 * A NULL method means "not supported" and the wrapper returns
 * CKH_EUNSUPPORTED (or falls back, where documented).
 * Every method returns 0 / a non-negative count, or a negative error code.
 */
#ifndef CKH_FS_H
#define CKH_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/alloc.h"
#include "ckh/rng.h"

struct ckh_fs;
struct ckh_file;

/* Open flags (ckh's own values, translated by each implementation). */
enum {
    CKH_O_RDONLY = 0x0,
    CKH_O_WRONLY = 0x1,
    CKH_O_RDWR = 0x2,
    CKH_O_ACCMODE = 0x3,
    CKH_O_CREAT = 0x10,
    CKH_O_EXCL = 0x20,
    CKH_O_TRUNC = 0x40,
    CKH_O_APPEND = 0x80,
};

enum ckh_ftype {
    CKH_FT_NONE = 0, /* no such entry */
    CKH_FT_FILE,
    CKH_FT_DIR,
    CKH_FT_SYMLINK,
};

struct ckh_stat {
    enum ckh_ftype type; /* entry type (lstat semantics: links not followed) */
    uint64_t size_bytes; /* file size; link target length for a symlink */
};

struct ckh_dirent {
    char *name;          /* entry name, no '/'; owned by the listing */
    enum ckh_ftype type; /* entry type */
};

/* A directory listing, sorted by name (bytewise) so iteration order is
 * deterministic. Free with ckh_fs_listing_free(). In the simulator the
 * entries come from the calling node's allocator, so a node killed while
 * it holds a listing leaks nothing. */
struct ckh_listing {
    struct ckh_dirent *entries; /* count entries */
    size_t count;               /* number of entries */
    struct ckh_alloc *alloc;    /* allocator of entries and names (NULL: the system's) */
};

/* Where ckh_file_seek looks from an offset. */
enum ckh_seek_whence {
    CKH_SEEK_DATA = 0, /* the next byte that is data (not a hole) */
    CKH_SEEK_HOLE = 1, /* the next byte that is a hole, or the end of the file */
};

struct ckh_fs_ops {
    int version; /* 1, or 2 with seek */
    /* --- version 1 --- */
    int (*open)(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out);
    int64_t (*read)(struct ckh_file *f, void *buf, size_t n);
    int64_t (*pread)(struct ckh_file *f, void *buf, size_t n, uint64_t off);
    int64_t (*write)(struct ckh_file *f, const void *buf, size_t n);
    int64_t (*pwrite)(struct ckh_file *f, const void *buf, size_t n, uint64_t off);
    /* Writes n described bytes at off (see ckh_gen). NULL: the wrapper
     * materializes the bytes in chunks and calls pwrite. */
    int64_t (*pwrite_gen)(struct ckh_file *f, const struct ckh_gen *g, uint64_t n, uint64_t off);
    int (*fsync)(struct ckh_file *f);
    int (*fdatasync)(struct ckh_file *f);
    int (*ftruncate)(struct ckh_file *f, uint64_t len);
    /* Closes and frees f, even when it returns an error. */
    int (*close)(struct ckh_file *f);
    int (*rename)(struct ckh_fs *fs, const char *from, const char *to);
    int (*unlink)(struct ckh_fs *fs, const char *path);
    int (*mkdir)(struct ckh_fs *fs, const char *path);
    int (*rmdir)(struct ckh_fs *fs, const char *path);
    int (*listdir)(struct ckh_fs *fs, const char *path, struct ckh_listing *out);
    int (*stat)(struct ckh_fs *fs, const char *path, struct ckh_stat *out);
    int (*symlink)(struct ckh_fs *fs, const char *target, const char *linkpath);
    /* Copies at most bufsize-1 bytes of the target and a NUL; returns the
     * full target length. */
    int64_t (*readlink)(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize);
    /* Fsyncs a directory (makes its entries' creation, renaming and
     * removal durable). */
    int (*fsync_dir)(struct ckh_fs *fs, const char *path);
    /* --- version 2 --- */
    /* lseek's SEEK_DATA / SEEK_HOLE: the offset of the next data (hole)
     * at or after off; -ENXIO when no data follows off (or off is at or
     * past the end). Holes read as zeros; data may be zeros too. */
    int64_t (*seek)(struct ckh_file *f, uint64_t off, enum ckh_seek_whence whence);
};

struct ckh_fs {
    const struct ckh_fs_ops *ops; /* methods */
};

struct ckh_file {
    struct ckh_fs *fs; /* the filesystem whose ops serve this file */
};

/* Wrappers: argument checks, then the method. NULL pointers and bad flags
 * give CKH_EINVAL; a missing method gives CKH_EUNSUPPORTED. */
int ckh_fs_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out);
int64_t ckh_file_read(struct ckh_file *f, void *buf, size_t n);
int64_t ckh_file_pread(struct ckh_file *f, void *buf, size_t n, uint64_t off);
int64_t ckh_file_write(struct ckh_file *f, const void *buf, size_t n);
int64_t ckh_file_pwrite(struct ckh_file *f, const void *buf, size_t n, uint64_t off);
int64_t ckh_file_pwrite_gen(struct ckh_file *f, const struct ckh_gen *g, uint64_t n, uint64_t off);
int ckh_file_fsync(struct ckh_file *f);
int ckh_file_fdatasync(struct ckh_file *f);
int ckh_file_ftruncate(struct ckh_file *f, uint64_t len);
int ckh_file_close(struct ckh_file *f);
int ckh_fs_rename(struct ckh_fs *fs, const char *from, const char *to);
int ckh_fs_unlink(struct ckh_fs *fs, const char *path);
int ckh_fs_mkdir(struct ckh_fs *fs, const char *path);
int ckh_fs_rmdir(struct ckh_fs *fs, const char *path);
int ckh_fs_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out);
int ckh_fs_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out);
int ckh_fs_symlink(struct ckh_fs *fs, const char *target, const char *linkpath);
int64_t ckh_fs_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize);
int ckh_fs_fsync_dir(struct ckh_fs *fs, const char *path);

/* Next data or hole of f at or after off (the method above). Without the
 * method (version 1) the whole file is data: DATA gives off, HOLE gives
 * INT64_MAX ("no hole known": read up to the end). */
int64_t ckh_file_seek(struct ckh_file *f, uint64_t off, enum ckh_seek_whence whence);

/* Frees a listing filled by ckh_fs_listdir (with the allocator it names). */
void ckh_fs_listing_free(struct ckh_listing *l);

/* Helpers built only on the ops (usable with any implementation). */

/* Writes all n bytes (looping over short writes); -EIO when a write
 * accepts nothing. */
int ckh_file_write_all(struct ckh_file *f, const void *buf, size_t n);
/* Reads exactly n bytes at off; a short file gives CKH_ETRUNCATED. */
int ckh_file_pread_all(struct ckh_file *f, void *buf, size_t n, uint64_t off);
/* Content digest of f, whose length is size (from ckh_fs_stat): the
 * bytes by 64 KiB block, leaving out blocks that are all zeros (holes,
 * found with ckh_file_seek, are never read), then the length. A pure
 * function of the bytes: a hole and written zeros digest alike, and a
 * 1 TiB sparse file costs what its data costs. Reads through buf
 * (bufsize >= 64 KiB; NULL: a buffer of its own on the heap), so memory
 * stays bounded. 0, or the first read error (CKH_ETRUNCATED: the file is
 * shorter than size). */
int ckh_file_digest(struct ckh_file *f, uint64_t size, void *buf, size_t bufsize,
                    uint64_t *digest_out);
/* True when path exists (any type). */
bool ckh_fs_exists(struct ckh_fs *fs, const char *path);
/* mkdir -p: creates missing parents; existing directories are fine. */
int ckh_fs_mkdirs(struct ckh_fs *fs, const char *path);
/* Validates a path: absolute, no empty, "." or ".." component, at most
 * CKH_PATH_MAX bytes. Returns 0, CKH_EINVAL, CKH_EESCAPE or -ENAMETOOLONG. */
int ckh_path_check(const char *path);
/* Writes the parent directory of path into buf ("/" for "/a"). */
int ckh_path_dirname(const char *path, char *buf, size_t bufsize);
/* Joins dir and name with one '/'; CKH_EINVAL if it does not fit. */
int ckh_path_join(char *buf, size_t bufsize, const char *dir, const char *name);

#define CKH_PATH_MAX 1024

#endif
