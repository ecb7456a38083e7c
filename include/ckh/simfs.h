/* The simulated filesystem (sim/simfs.c), public part.
 *
 * A ckh_simfs is one disk: a tree of directories, files and symlinks whose
 * durable state and pending (unsynced) operations are tracked separately,
 * so that a crash can apply, drop or tear each pending operation as the
 * crash model allows. The full model is specified at the top of
 * sim/simfs.c. A disk is mounted into nodes' views (struct ckh_fs) by the
 * simulator; it can also be used directly, outside any simulation.
 *
 * Part of the sim API (with ckh/sim.h and ckh/sim_testing.h), not an ops
 * table: only sim/, harness/ and tests include it; code under test sees a
 * disk only as a struct ckh_fs (docs/ARCHITECTURE.md, "The layers", checked by the layers
 * test).
 */
#ifndef CKH_SIMFS_H
#define CKH_SIMFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/fs.h"

struct ckh_sim;
struct ckh_simfs;
struct ckh_fault_action;

enum ckh_crash_model {
    CKH_CRASH_POSIX_WEAK = 0, /* entries durable only after fsync of their directory */
    CKH_CRASH_EXT4_ORDERED,   /* metadata ops persist in order; data before metadata that follows it */
};

/* Whose page cache the nodes that share a disk use (rule S9 in
 * sim/simfs.c). Matters only for a disk that several nodes mount. */
enum ckh_simfs_sharing {
    CKH_SHARING_NETWORK = 0, /* a network filesystem: each node its own client cache (default) */
    CKH_SHARING_MACHINE,     /* one machine's disk: its nodes are processes sharing one page cache */
};

struct ckh_simfs_config {
    const char *name;           /* disk name in traces ("local0", "shared") */
    enum ckh_crash_model model; /* crash model */
    uint32_t sector_bytes;      /* torn-write granularity: 512 or 4096 */
    uint64_t capacity_bytes;    /* 0: unlimited; else writes past it fail ENOSPC */
    uint64_t latency_ns;        /* virtual time charged per operation */
    uint64_t ns_per_kib;        /* extra virtual time per KiB transferred */
    uint64_t seed;              /* seed for crash choices and garbage bytes */
    /* Folder on the real disk for the bytes programs write (NULL: kept in
     * memory). With a folder, the literal bytes of every copy and pending
     * write live in an unnamed file there (sim/simfs_store.c B1-B5): the
     * disk's memory is O(inodes + extents + pending ops), whatever the
     * size of its files. The simulator keeps its disks in memory. */
    const char *store_dir;
    /* Whose cache an fsync flushes and a crash loses (0: network). */
    enum ckh_simfs_sharing sharing;
};

/* What a crash does to one pending operation. */
enum ckh_crash_choice {
    CKH_CRASH_APPLY = 0, /* the operation persists */
    CKH_CRASH_DROP,      /* the operation is lost */
    CKH_CRASH_TORN_ZERO, /* a write persists up to a sector boundary, zeros after */
    CKH_CRASH_TORN_GARBAGE, /* a write persists up to a sector boundary, garbage after */
};

/* One pending (not yet durable) operation, for explorers and tests. */
struct ckh_simfs_pending_info {
    uint64_t seq;       /* order of issue on this disk */
    int node;           /* node that issued it (-1: none) */
    int kind;           /* enum ckh_op_kind: open (file created by open), mkdir,
                           symlink, pwrite (any write), ftruncate (O_TRUNC
                           too), unlink, rmdir, rename */
    const char *path;   /* affected path (borrowed until the disk changes) */
    const char *path2;  /* rename destination / symlink target, or NULL */
    uint64_t off;       /* write offset */
    uint64_t len;       /* write length */
    uint32_t sectors;   /* sectors a write spans (torn choices possible if > 0) */
};

/* Creates a disk with an empty root directory. *out is owned by the caller
 * (ckh_simfs_destroy). */
int ckh_simfs_create(const struct ckh_simfs_config *cfg, struct ckh_simfs **out);
/* Frees the disk; NULL is a no-op. Views on it must be destroyed first. */
void ckh_simfs_destroy(struct ckh_simfs *d);

/* A direct view of the disk as a struct ckh_fs: no simulator, no trace, no
 * faults. Used by tests and by the harness to inspect or prepare a disk at
 * rest. Valid until the disk is destroyed. */
struct ckh_fs *ckh_simfs_fs(struct ckh_simfs *d);

/* Number of pending operations and their descriptions (index 0 oldest).
 * Strings in *out are borrowed until the disk next changes. */
size_t ckh_simfs_pending_count(const struct ckh_simfs *d);
int ckh_simfs_pending_get(const struct ckh_simfs *d, size_t i, struct ckh_simfs_pending_info *out);

/* Crash: every pending operation in `node`'s cache (-1: by anyone, a power
 * loss) is applied, dropped or torn (rules S3-S5, S9 in sim/simfs.c): on a
 * CKH_SHARING_NETWORK disk the ops `node` issued, on a CKH_SHARING_MACHINE
 * disk every node's (the machine's page cache is lost). With
 * choices == NULL each choice is drawn from the disk's seeded stream within
 * what the model allows; else choices[i] is used for the i-th affected
 * pending op in pending_get order (n must equal the number of affected ops;
 * a torn choice for an op that is not a write gives CKH_EINVAL and changes
 * nothing). Where the model forces an outcome (a dependency was dropped, a
 * journal prefix ended, data=ordered) the forced outcome wins over the
 * given choice. Afterwards the affected ops are gone from the pending list;
 * ops outside the crashed cache stay pending and visible, except those that
 * depend on an op this crash dropped, which are dropped with it (S3). */
int ckh_simfs_crash(struct ckh_simfs *d, int node, const enum ckh_crash_choice *choices, size_t n);

/* Snapshot: *out becomes an independent copy of d (both copies of every
 * inode, the pending operations with their seqs and dependencies, the
 * crash-choice stream, waiting injected faults); open handles are not
 * copied. Literal bytes are shared by reference count, so a clone costs
 * O(inodes + extents + pending ops). Crashing or changing either disk
 * afterwards never affects the other. *out is owned by the caller
 * (ckh_simfs_destroy); each disk may be destroyed first. CKH_EINVAL for a
 * NULL argument, CKH_ENOMEM (nothing to free). Spec: sim/simfs_clone.c. */
int ckh_simfs_clone(const struct ckh_simfs *d, struct ckh_simfs **out);

/* Crash with one choice for every affected pending op (CKH_CRASH_APPLY or
 * CKH_CRASH_DROP); the model may still force some (see ckh_simfs_crash). */
int ckh_simfs_crash_uniform(struct ckh_simfs *d, int node, enum ckh_crash_choice choice);

/* The disk's sharing (cfg->sharing at creation); CKH_SHARING_NETWORK for
 * NULL. */
enum ckh_simfs_sharing ckh_simfs_sharing(const struct ckh_simfs *d);

/* Makes everything durable (as if every file and directory was synced). */
void ckh_simfs_sync_all(struct ckh_simfs *d);

/* ---- faults on data at rest (applied to durable and cached content) ---- */
/* Each returns 0, a negative errno when path names no regular file of the
 * disk (-ENOENT), or CKH_EINVAL for bad arguments (a bit past the end). */
/* Flips bit bit_off (byte bit_off / 8, bit bit_off % 8) of the file. */
int ckh_simfs_flip_bit(struct ckh_simfs *d, const char *path, uint64_t bit_off);
/* Cuts the file to len bytes (no-op if it is shorter). */
int ckh_simfs_truncate_at_rest(struct ckh_simfs *d, const char *path, uint64_t len);
/* Zeroes len bytes from off (within the file). */
int ckh_simfs_zero_range(struct ckh_simfs *d, const char *path, uint64_t off, uint64_t len);
/* Removes a directory tree at rest (a directory "removed during the run"). */
int ckh_simfs_remove_tree(struct ckh_simfs *d, const char *path);

/* Per-disk errno injection without a simulator (tests): the next matching
 * op on this disk fails with -err (err > 0) and has no effect. kind is an
 * enum ckh_op_kind or -1 (any); path is a disk path or NULL (any). Applies
 * to ops from every view of the disk, the direct view included. */
int ckh_simfs_fail_next(struct ckh_simfs *d, int kind, const char *path, int err);
/* Like ckh_simfs_fail_next with a whole action: CKH_FAULT_ERRNO, or
 * CKH_FAULT_FSYNC_LOST (matches only fsync/fdatasync: the file's dirty data
 * of the calling node is dropped, -EIO returned; see S6 in sim/simfs.c).
 * Other kinds need a simulator and give CKH_EINVAL. */
int ckh_simfs_fault_next(struct ckh_simfs *d, int kind, const char *path,
                         const struct ckh_fault_action *act);

/* Description of the last error on the disk (static buffer in d, valid
 * until the next call on d; "" when none). */
const char *ckh_simfs_errmsg(const struct ckh_simfs *d);

/* Hash of the whole tree (names, types, sizes, contents, link targets) in
 * the live copy (durable false: what reads see) or the durable copy.
 * File contents are hashed by 16 KiB block, leaving out holes (never
 * read) and all-zero blocks: O(bytes of data) time, O(1) memory. */
uint64_t ckh_simfs_digest(const struct ckh_simfs *d, bool durable);

/* Changes the capacity limit (0: unlimited) from now on; data already
 * written stays even when it exceeds the new limit. */
int ckh_simfs_set_capacity(struct ckh_simfs *d, uint64_t capacity_bytes);

/* Bytes currently used: the sum of live file sizes (what capacity_bytes
 * limits; holes count). */
uint64_t ckh_simfs_used_bytes(const struct ckh_simfs *d);
/* What statfs reports for the disk: with capacity_bytes, the capacity and
 * what is left of it; else the real filesystem of store_dir (its size and
 * the space free there), or, for a disk in memory, the machine's memory
 * and the memory free. 0, CKH_EINVAL or -errno. */
int ckh_simfs_space(const struct ckh_simfs *d, uint64_t *total_bytes, uint64_t *avail_bytes);
/* Heap bytes the disk's own bookkeeping takes (for memory benchmarks). */
uint64_t ckh_simfs_heap_bytes(const struct ckh_simfs *d);
/* Whether an allocation of ckh's own process for the disk's bookkeeping
 * failed (its state may then lack an entry, a block or a pending op it
 * was given, so nothing the disk shows can be trusted). Sticky. */
bool ckh_simfs_host_out_of_memory(const struct ckh_simfs *d);

/* A node's view: mounts[i].prefix ("/local", "/shared") maps onto disks
 * (longest prefix wins). All ops from the view are attributed to `node`
 * and reported to sim (NULL: no simulator). The view owns its open files;
 * ckh_simfs_view_destroy closes them without flushing anything (page-cache
 * content stays pending on the disk). Mounts are copied; the disks must
 * outlive the view. Symlink targets are resolved in the view's namespace
 * (an absolute target may lead to another mount; relative targets are
 * resolved against the link's directory, ".." included, never above a
 * disk's root). *out is owned by the caller (ckh_simfs_view_destroy). */
struct ckh_simfs_mount {
    const char *prefix;     /* mount point, absolute, no trailing '/' ("/" allowed) */
    struct ckh_simfs *disk; /* the disk mounted there */
};
int ckh_simfs_view_create(struct ckh_sim *sim, int node, const struct ckh_simfs_mount *mounts,
                          size_t nmounts, struct ckh_fs **out);
/* Closes the view's open files (no flush) and frees it; NULL is a no-op. */
void ckh_simfs_view_destroy(struct ckh_fs *view);

#endif
