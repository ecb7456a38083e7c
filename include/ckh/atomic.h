/* Crash-safe saving: atomic file save and the atomic directory saver.
 *
 * ckh_atomic_save writes a file so that at every crash point the path holds
 * either its old content or the complete new content: a unique temporary
 * name, write, fsync, rename over the path, fsync of the directory.
 *
 * ckh_adir is a checkpoint-folder saver with the behaviour of a well-known
 * "atomic directory" saver for distributed training: checkpoint folders
 * <name>_checkpoint_<N> (suffix _force when force-saved) under an output
 * directory and a pointer symlink <name>.latest_checkpoint naming the
 * latest committed folder. Unlike a naive one it is safe at every crash
 * point, and it works whether the ranks share one disk or each has its own
 * (node-local disks): every view of the output directory gets the folder,
 * a commit marker and a pointer, written by that view's leader, and
 * ranks resume from the newest checkpoint committed in every view
 * (ckh_adir_resume). The protocol is specified at the top of
 * reference/atomic_dir.c. include/ckh/saver.h offers it as the directory
 * saver "atomic-dir" (ckh_atomic_dir_saver_ops).
 *
 * Both are written against the ops tables of struct ckh_env only.
 */
#ifndef CKH_ATOMIC_H
#define CKH_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/defects.h"
#include "ckh/env.h"
#include "ckh/rng.h"

/* ---- atomic file save ---- */

/* Per-writer context: where temporary names come from. Plain value; the
 * caller owns it (no heap). */
struct ckh_atomic {
    struct ckh_fs *fs;                    /* target filesystem (borrowed) */
    struct ckh_alloc *alloc;              /* scratch memory (the node's allocator) */
    char node[64];                        /* node name used in temporary names */
    struct ckh_rng rng;                   /* temporary-name stream */
    const struct ckh_defect_set *defects; /* switched-on defects (borrowed, may be NULL) */
    char errmsg[256];                     /* last error, naming the file */
};

/* Fills a from env: fs, node name, and a temporary-name stream seeded from
 * env->rand's stream "atomic-save" (never the process id). defects is
 * borrowed and may be NULL. CKH_EINVAL for a NULL a, env or env->fs. */
int ckh_atomic_init(struct ckh_atomic *a, struct ckh_env *env, const struct ckh_defect_set *defects);

/* Writes the file's content into f; returns 0 or a negative code. */
typedef int (*ckh_atomic_writer)(void *ctx, struct ckh_file *f);

/* Saves n bytes of buf at path atomically (see above). Stale temporaries of
 * path left by earlier crashes of this node are removed first. On failure
 * the temporary is removed (best effort) and path is untouched. The parent
 * directory must exist. */
int ckh_atomic_save(struct ckh_atomic *a, const char *path, const void *buf, size_t n);
/* Same, with the content produced by a writer callback. */
int ckh_atomic_save_with(struct ckh_atomic *a, const char *path, ckh_atomic_writer writer,
                         void *ctx);
/* Removes this node's stale temporaries of path ("<path>.tmp.<node>.*" and,
 * with fixed-temp-name, "<path>.temp"). Returns the number removed or a
 * negative code. */
int ckh_atomic_clean_stale(struct ckh_atomic *a, const char *path);
/* Reads a whole file: *out allocated from alloc (NULL: system; the caller
 * frees it with ckh_free(alloc, ...)), *n its size. */
int ckh_atomic_read(struct ckh_fs *fs, struct ckh_alloc *alloc, const char *path, void **out,
                    size_t *n);
/* Lists dir like ckh_fs_listdir, but into memory from alloc (NULL:
 * system): the listing is released before any further op, so a node killed
 * while walking it leaks nothing outside its allocator. Free with
 * ckh_atomic_listing_free(alloc, ...). */
int ckh_atomic_listdir(struct ckh_fs *fs, struct ckh_alloc *alloc, const char *dir,
                       struct ckh_listing *out);
void ckh_atomic_listing_free(struct ckh_alloc *alloc, struct ckh_listing *l);
/* The temporary-name pattern prefix of path for node: "<path>.tmp.<node>.". */
int ckh_atomic_tmp_prefix(const char *path, const char *node, char *buf, size_t n);

/* ---- atomic directory saver ---- */

enum ckh_adir_strategy {
    CKH_ADIR_SYNC_ANY = 0, /* shared folder; force_save if any rank asks */
    CKH_ADIR_SYNC_ALL,     /* shared folder; force_save only if every rank asks */
    CKH_ADIR_ASYNC,        /* every rank its own master, name suffix _rank_<R> */
};

struct ckh_adir_config {
    const char *output_dir;          /* absolute directory in env->fs (copied) */
    bool is_master;                  /* this rank writes the pointer (async: ignored, true) */
    const char *name;                /* saver name (NULL: "AtomicDirectory") */
    int keep_last;                   /* committed non-forced folders kept; -1 unlimited */
    enum ckh_adir_strategy strategy; /* must agree on every rank */
    uint64_t timeout_ns;             /* collective timeout (0: wait forever) */
    const struct ckh_defect_set *defects; /* borrowed, may be NULL */
};

/* Name of the marker file written into a folder when it is committed. */
#define CKH_ADIR_COMMIT_MARKER ".ckh_committed"

struct ckh_adir;

/* Creates a saver (collective in the sync strategies: every rank calls it;
 * an all-gather checks that all ranks chose the same strategy, else
 * CKH_EMISMATCH naming the ranks; with several ranks, probes find which
 * ranks share a view of the output directory and who leads each). Every
 * rank creates the output directory in its view if missing. *out is freed
 * with ckh_adir_destroy; memory from env->alloc. */
int ckh_adir_create(struct ckh_env *env, const struct ckh_adir_config *cfg, struct ckh_adir **out);
void ckh_adir_destroy(struct ckh_adir *d);
/* Last error message of d ("" if none); valid until the next call on d. */
const char *ckh_adir_errmsg(const struct ckh_adir *d);
/* The effective saver name ("<name>" or "<name>_rank_<R>"); valid while d lives. */
const char *ckh_adir_name(const struct ckh_adir *d);

/* Prepares the next checkpoint folder (every rank calls it in the sync
 * strategies). force_save is voted (sync_any: any; sync_all: all; async:
 * own). Each view's leader first cleans what earlier crashes left
 * (temporary links, probes, folders without a commit marker) then creates
 * the folder, whose number the ranks agree on. Writes the folder's
 * absolute path (the same on every rank) into buf. */
int ckh_adir_prepare(struct ckh_adir *d, bool force_save, char *buf, size_t n);
/* Commits the folder returned by prepare (every rank calls it in the sync
 * strategies, after writing and fsyncing its files there): in each view,
 * commit marker, fsyncs, pointer move; then, once every view has moved
 * its pointer, retention. Alias of the seed's symlink_latest. */
int ckh_adir_commit(struct ckh_adir *d, const char *folder);
/* The latest committed folder, for resuming: writes its absolute path into
 * buf and returns 0, or CKH_ENOTFOUND when there is none. A pointer naming
 * a folder without a commit marker gives CKH_ECORRUPT. Not collective. */
int ckh_adir_latest(struct ckh_adir *d, char *buf, size_t n);
/* Committed folder names (basenames, ascending N) into an array allocated
 * from env->alloc (free each and the array with ckh_adir_list_free). */
int ckh_adir_list(struct ckh_adir *d, char ***names, size_t *count);
void ckh_adir_list_free(struct ckh_adir *d, char **names, size_t count);

/* ---- several views: node-local disks (protocol in reference/atomic_dir.c) ---- */

/* The checkpoint to resume from, agreed by every rank (collective in the
 * sync strategies and in async with more than one rank): the newest one
 * committed in every rank's view, as its absolute path in this rank's view
 * into buf. CKH_ENOTFOUND when none is; CKH_ECORRUPT (on every rank) when
 * some rank's pointer names what was never committed. Async: also sets
 * the number of the next folder to one past the largest any rank has
 * seen, so the ranks' saves keep matching numbers. */
int ckh_adir_resume(struct ckh_adir *d, char *buf, size_t n);
/* The rank that does the saver's writes in this rank's view of the output
 * directory (the master when it shares the view, else the view's lowest
 * rank); async: this rank. */
int ckh_adir_view_leader(const struct ckh_adir *d);
/* Read-only look, without a saver, at what rank `rank` would find through
 * fs (that rank's view), as ckh_adir_latest does: 0 with the folder in buf
 * ("" when nothing is committed) and a summary in msg, or CKH_ECORRUPT /
 * a read error with msg naming the pointer and the folder. cfg as for
 * ckh_adir_create (is_master and defects are not used). */
int ckh_adir_check(struct ckh_fs *fs, const struct ckh_adir_config *cfg, int rank, char *buf,
                   size_t n, char *msg, size_t msglen);
/* Path of rank `rank`'s pointer (sync strategies: the one pointer of a
 * view, whatever the rank) into buf. */
int ckh_adir_latest_path(const struct ckh_adir_config *cfg, int rank, char *buf, size_t n);

#endif
