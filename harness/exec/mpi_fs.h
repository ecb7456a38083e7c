/* A node's filesystem on the real platform (private to harness/exec/ and
 * the rank program): one real folder per disk of the job, each mounted at
 * the disk's `mount` path, the longest prefix winning (the simulator's
 * mapping, sim/simfs_view.c). Each folder is served by the POSIX fs of
 * platform/posix.c (paths checked, symlinks kept inside); this layer only
 * picks the folder and hands the rest of the path on. With ckhfs disks
 * the folders are the disks' mounts.
 *
 * As in the simulator: a rename across two mounts is -EXDEV; a path under
 * no mount is -ENOENT. An absolute symlink target must lie on the link's
 * own mount (-EXDEV otherwise; the simulator allows it: docs/REAL.md).
 * Files opened here are the POSIX fs's own (their ops are its ops).
 */
#ifndef CKH_RUN_PLATFORM_REAL_FS_H
#define CKH_RUN_PLATFORM_REAL_FS_H

#include <stdbool.h>
#include <stddef.h>

#include "ckh/fs.h"
#include "model/scenario.h"

/* One disk of a node: the path it is mounted at ("/", "/local") and the
 * real folder that holds it. */
struct ckh__real_mount {
    const char *prefix; /* absolute, checked like a path ("/" or "/a/b") */
    const char *dir;    /* the real folder (must exist) */
};

/* The fs over n mounts (copied; 1..16). CKH_EINVAL for a bad prefix or
 * two mounts at one prefix, -errno when a folder cannot be used,
 * CKH_ENOMEM. *out is freed with ckh__real_fs_destroy. */
int ckh__real_fs_create(const struct ckh__real_mount *mounts, size_t n, struct ckh_fs **out);
/* Frees an fs made by ckh__real_fs_create; NULL is a no-op. */
void ckh__real_fs_destroy(struct ckh_fs *fs);

/* ---- the run folder's paths (exec/mpi.c says what lives where) ---- */

/* A path of the run folder dir (see the top): kind is "results", "track",
 * "status" or "faults" (node's file of run `run`). -ENAMETOOLONG when it
 * does not fit. */
int ckh__real_path(char *buf, size_t n, const char *dir, const char *kind, const char *node, int run);
/* Where node's disk number `disk` of sc's job.disks is in the run folder:
 * dir/<sub>/<disk>[.<node>] (".<node>": a node-local disk); sub is
 * "disks" (the disk's folder) or "mnt" (its ckhfs mount point). */
int ckh__real_disk_dir(char *buf, size_t n, const char *dir, const char *sub, const struct ckh_scenario *sc,
                       size_t disk, const char *node);
/* Node's files: every disk of the job at its mount path (disk folders,
 * or their ckhfs mounts with ckhfs), as above. *out is
 * freed with ckh__real_fs_destroy. -ENAMETOOLONG, or as
 * ckh__real_fs_create. */
int ckh__real_node_fs(const char *dir, const struct ckh_scenario *sc, const char *node, bool ckhfs,
                      struct ckh_fs **out);

#endif
