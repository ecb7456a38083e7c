/* Directory savers: the multi-rank save protocol of a training job as a
 * pluggable layer (the atomic directory saver's role).
 *
 * A saver decides where a checkpoint's folder is, who creates it, how the
 * ranks agree that it is complete (commit), what the `latest` pointer is,
 * and what is kept (retention). The training loop writes its own files
 * into the folder the saver hands out. Every rank calls prepare and commit
 * in the same order (they may be collective); latest is local.
 *
 *   prepare(force) -> folder      every rank: the folder of the next checkpoint
 *                                 exists in this rank's view of the fs
 *                                 (shared disk or node-local) when it returns
 *   ... each rank writes and fsyncs its files under folder ...
 *   commit(folder)                every rank: after it returns 0 on every
 *                                 rank, a restarted rank's latest() names
 *                                 this folder, whatever crash follows
 *   latest() -> folder            on start: the newest committed folder in
 *                                 this rank's view, or CKH_ENOTFOUND
 *
 * A saver does all its I/O through env->fs and its collectives through
 * env->coll (rank = its rank in the job), allocates from env->alloc, and
 * never touches the real clock, the process id or rand(). It may call the
 * functions of the public headers (fs.h, env.h, alloc.h, rng.h, err.h,
 * atomic.h); the process that loads it exports them.
 *
 * A plugin is a shared library exporting
 *
 *     const struct ckh_saver_ops *ckh_saver_plugin_v1(void);
 *
 * (CKH_SAVER_PLUGIN(ops) defines it); scenarios select it with
 * `job.saver: ./libsaver.so` (docs/WORKLOADS.md). The built-in saver
 * "atomic-dir" (reference/atomic_dir.c) is registered through the same
 * table. Methods are only ever appended; NULL optional methods mean "not
 * supported".
 */
#ifndef CKH_SAVER_H
#define CKH_SAVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/defects.h"
#include "ckh/env.h"

#define CKH_SAVER_ABI_VERSION 1
#define CKH_SAVER_PLUGIN_SYMBOL "ckh_saver_plugin_v1"

enum ckh_saver_strategy {
    CKH_SAVER_SYNC_ANY = 0, /* shared folder; force_save if any rank asks */
    CKH_SAVER_SYNC_ALL,     /* shared folder; force_save only if every rank asks */
    CKH_SAVER_ASYNC,        /* every rank its own folders and pointer */
};

struct ckh_saver_config {
    const char *output_dir;           /* absolute directory in env->fs (borrowed for create) */
    const char *name;                 /* checkpoint name prefix (NULL: the saver's default) */
    int keep_last;                    /* committed non-forced checkpoints kept; -1 unlimited */
    enum ckh_saver_strategy strategy; /* must agree on every rank */
    uint64_t timeout_ns;              /* collective timeout (0: wait forever) */
    /* --- appended --- */
    const struct ckh_defect_set *defects; /* defect switches of ckh's built-in saver
                                             (borrowed, may be NULL; plugins ignore it) */
};

/* Base of every saver instance (first member of the implementation). */
struct ckh_saver {
    const struct ckh_saver_ops *ops; /* methods */
    char errmsg[512];                /* last error, naming the file */
};

struct ckh_saver_ops {
    int version;      /* 1 */
    const char *name; /* registry name ("atomic-dir") */
    /* --- version 1, required --- */
    /* Creates this rank's saver (collective: every rank calls it). *out
     * is freed with destroy. */
    int (*create)(struct ckh_env *env, const struct ckh_saver_config *cfg, struct ckh_saver **out);
    void (*destroy)(struct ckh_saver *s);
    /* The next checkpoint's folder (absolute) into buf; see above. */
    int (*prepare)(struct ckh_saver *s, bool force, char *buf, size_t n);
    /* Commits the folder prepare returned; see above. */
    int (*commit)(struct ckh_saver *s, const char *folder);
    /* The newest committed folder in this rank's view into buf, or
     * CKH_ENOTFOUND (nothing committed yet); CKH_ECORRUPT when the pointer
     * names something that was never committed. Not collective. */
    int (*latest)(struct ckh_saver *s, char *buf, size_t n);
    /* --- version 1, optional --- */
    /* Read-only look, after a crash, at what a restarted rank `rank` of
     * `world` would resume from through fs: 0 with the folder in buf (""
     * when nothing was committed), or a negative code and msg says what is
     * wrong. Used by the `committed` oracle; NULL: not checked. */
    int (*check)(struct ckh_fs *fs, const struct ckh_saver_config *cfg, int rank, int world,
                 char *buf, size_t n, char *msg, size_t msglen);
    /* Path of the `latest` pointer of rank 0 (the default target of the
     * dangling-latest and stale-latest faults); NULL: it keeps none. */
    int (*latest_path)(const struct ckh_saver_config *cfg, char *buf, size_t n);
    /* --- version 1, optional, appended (before any release of v1) --- */
    /* Collective (every rank calls it, on start): the checkpoint every
     * rank resumes from, the same one on every rank, as its folder in this
     * rank's view into buf: the newest checkpoint committed in every
     * rank's view. Views can disagree after a crash when ranks have
     * node-local disks (one rank's commit was durable, another's not).
     * CKH_ENOTFOUND when no checkpoint is committed in every view. NULL:
     * callers use latest() and must check that the ranks agree. */
    int (*resume)(struct ckh_saver *s, char *buf, size_t n);
    /* The rank that writes, for this rank's view of the output directory
     * (the same disk), the files every rank of that view reads (a model
     * saved once per disk): this rank's own number when it is that rank.
     * On one shared disk it is the same rank for everyone; on node-local
     * disks each rank leads its own view. NULL: one shared view, rank 0. */
    int (*view_leader)(struct ckh_saver *s);
};

/* Wrappers: argument checks, then the method (CKH_EUNSUPPORTED when an
 * optional one is NULL). */
int ckh_saver_create(const struct ckh_saver_ops *ops, struct ckh_env *env,
                     const struct ckh_saver_config *cfg, struct ckh_saver **out);
void ckh_saver_destroy(struct ckh_saver *s);
int ckh_saver_prepare(struct ckh_saver *s, bool force, char *buf, size_t n);
int ckh_saver_commit(struct ckh_saver *s, const char *folder);
int ckh_saver_latest(struct ckh_saver *s, char *buf, size_t n);
/* The last error message of s ("" if none). */
const char *ckh_saver_errmsg(const struct ckh_saver *s);
/* Appended wrappers. resume falls back to latest() when the saver has no
 * resume method (the caller then checks that the ranks agree);
 * view_leader gives 0 when the saver has no view_leader method; check and
 * latest_path give CKH_EUNSUPPORTED when their method is NULL. */
int ckh_saver_resume(struct ckh_saver *s, char *buf, size_t n);
int ckh_saver_view_leader(struct ckh_saver *s);
int ckh_saver_check(const struct ckh_saver_ops *ops, struct ckh_fs *fs,
                    const struct ckh_saver_config *cfg, int rank, int world, char *buf, size_t n,
                    char *msg, size_t msglen);
int ckh_saver_latest_path(const struct ckh_saver_ops *ops, const struct ckh_saver_config *cfg,
                          char *buf, size_t n);

/* The built-in atomic directory saver (include/ckh/atomic.h) as a table. */
extern const struct ckh_saver_ops ckh_atomic_dir_saver_ops;

/* The entry point's type, and its declaration for plugins. */
typedef const struct ckh_saver_ops *(*ckh_saver_plugin_fn)(void);
const struct ckh_saver_ops *ckh_saver_plugin_v1(void);

/* Defines the entry point returning &ops (a static const table). */
#define CKH_SAVER_PLUGIN(ops)                                                  \
    __attribute__((visibility("default"))) const struct ckh_saver_ops *        \
    ckh_saver_plugin_v1(void)                                                  \
    {                                                                          \
        return &(ops);                                                         \
    }

#endif
