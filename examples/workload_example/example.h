/* The example training loop's private header: what its three files share
 * (loop.c: the job, options and training loop; loop_ckpt.c: its state
 * file and directory saver; dirsave.c: durable-file helpers, shared with
 * the saver plugin saver.c).
 *
 * Everything here is the example's own code. It includes only ckh's public
 * headers, and ckh knows nothing of it: the planted bugs (EXAMPLE_BUG_*,
 * see loop_ckpt.c) are compiled in by the build, never switched on by ckh.
 */
#ifndef EXAMPLE_H
#define EXAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/env.h"
#include "ckh/fs.h"
#include "ckh/workload.h"

#define EX_DIM_MAX 16    /* most model weights */
#define EX_WORLD_MAX 64  /* most ranks */
#define EX_BATCH_MAX 64  /* most samples per rank and step */
#define EX_MSG_LEN 256   /* error messages */

/* The job, as create() read it from the scenario. Read-only after create;
 * it lives in the workload instance, outside node memory. */
struct ex_config {
    uint64_t seed;          /* the run's seed (the sampler's order derives from it) */
    int world;              /* ranks */
    int64_t total_steps;    /* the job ends after this many optimizer steps */
    int64_t every_steps;    /* checkpoint cadence in steps */
    int keep_last;          /* committed checkpoints kept (0: all) */
    uint32_t samples;       /* dataset size */
    uint32_t batch;         /* samples per rank and step */
    uint32_t dim;           /* model weights */
    float lr;               /* peak learning rate */
    int64_t warmup_steps;   /* linear warm-up length */
    int64_t decay_every;    /* step decay period after warm-up */
    float decay;            /* step decay factor */
    float momentum;         /* SGD momentum */
    float noise;            /* gradient noise drawn from the rank's RNG */
    bool async_save;        /* a background task writes each rank's file */
    uint64_t timeout_ns;    /* collective timeout */
    char dir[CKH_PATH_MAX + 1]; /* checkpoint folder */
};

/* Steps in one epoch: every rank reads `batch` samples per step until the
 * epoch's shuffled order is used up (the last step wraps round). */
int64_t ex_steps_per_epoch(const struct ex_config *c);

/* ---- the loop's own RNG: xorshift64* ---- */
struct ex_rng {
    uint64_t s; /* state, never 0 */
};
void ex_rng_seed(struct ex_rng *r, uint64_t seed);
/* Uniform float in [0, 1). */
float ex_rng_unit(struct ex_rng *r);

/* ---- the loop's own sampler: a fresh shuffle per epoch ---- */
struct ex_sampler {
    uint64_t seed;   /* the job's sampler seed */
    int64_t epoch;   /* epoch whose order is in perm */
    uint64_t pos;    /* position in the epoch (resumable) */
    uint32_t n;      /* dataset size */
    uint32_t *perm;  /* the epoch's order (node memory) */
};

struct ex_pending;

/* ---- the trainer: one rank's state, in node memory ---- */
struct ex_trainer {
    struct ckh_env *env;          /* the node's ops tables */
    const struct ex_config *cfg;  /* the job (borrowed) */
    int rank;                     /* collective rank */
    int64_t step;                 /* optimizer steps done */
    int64_t epoch;                /* current epoch */
    int64_t sched_step;           /* steps the LR schedule has taken (resumes from step) */
    float w[EX_DIM_MAX];          /* weights */
    float v[EX_DIM_MAX];          /* momentum */
    float lr;                     /* LR of the last step */
    float loss;                   /* loss of the last step */
    struct ex_rng rng;            /* gradient noise */
    struct ex_sampler smp;        /* data order */
    struct ex_pending *pending;   /* async_save: the save in flight (loop_ckpt.c; node memory) */
    char msg[EX_MSG_LEN];         /* last error */
};

/* Builds the sampler's order for smp->epoch (perm from env's allocator). */
int ex_sampler_reset(struct ex_trainer *t);

/* ---- loop_ckpt.c: the loop's checkpoints ----
 * Layout under cfg->dir (D):
 *   D/step_<N>/rank_<R>.bin   rank R's state after step N
 *   D/step_<N>/COMMITTED      "step N world W\n", written once every rank's file is durable
 *   D/latest                  "step_<N>\n", replaced atomically after the marker
 */
/* One checkpoint after t->step (collective). Returns 0 or a collective
 * error (fatal); a failed save is recorded and training goes on. With
 * async_save it returns while a background task writes this rank's file;
 * the vote and commit follow at the next save or at ex_ckpt_finish. */
int ex_ckpt_save(struct ex_trainer *t);
/* async_save: concludes the save in flight, if any (collective; at the
 * end of training). 0 or a collective error. */
int ex_ckpt_finish(struct ex_trainer *t);
/* Waits for a background write still running and frees it, without a
 * commit (a node giving up). */
void ex_ckpt_drop(struct ex_trainer *t);
/* On start (collective): resumes from the newest checkpoint every rank
 * can load, or leaves t fresh. 0, or an error (fatal). */
int ex_ckpt_load(struct ex_trainer *t);
/* The workload's verify: does D/latest in fs name a committed checkpoint
 * whose rank files load? node -1: a shared view, where every rank's file
 * must be there; else node-local disks seen as rank `node`, whose own file
 * must be. Read-only. */
int ex_ckpt_verify(const struct ex_config *c, struct ckh_fs *fs, int node, char *msg, size_t n);

/* ---- dirsave.c: durable small files (used by the loop and saver.c) ---- */
/* Writes n bytes to dir/name: dir/name.tmp.<tag>, fsync, close, rename over
 * dir/name, fsync dir. Message into msg on failure. */
int exd_write_atomic(struct ckh_fs *fs, const char *dir, const char *name, const void *data,
                     size_t n, int tag, char *msg, size_t msglen);
/* Writes and fsyncs dir/name in place (no rename). */
int exd_write_file(struct ckh_fs *fs, const char *dir, const char *name, const void *data,
                   size_t n, char *msg, size_t msglen);
/* Reads at most cap bytes of path into buf; *len gets the count.
 * CKH_ELIMIT when the file is larger than cap. */
int exd_read_file(struct ckh_fs *fs, const char *path, void *buf, size_t cap, size_t *len);
/* Makes dir/name a directory (an existing one is fine) and makes its
 * entry durable (fsync dir). */
int exd_mkdir_durable(struct ckh_fs *fs, const char *dir, const char *name, char *msg,
                      size_t msglen);
/* Removes folder dir/name: its `marker` first (then fsync), then every
 * other entry, then the folder; fsyncs dir. */
int exd_remove_folder(struct ckh_fs *fs, const char *dir, const char *name, const char *marker,
                      char *msg, size_t msglen);
/* True when name is prefix followed by a decimal number (into *n). */
bool exd_parse_num(const char *name, const char *prefix, int64_t *n);

#endif
