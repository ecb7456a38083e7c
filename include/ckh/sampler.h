/* Resumable samplers: which dataset indices each rank reads, in which
 * order, and how far it got, saved and restored bit-for-bit.
 *
 * ckh_dsampler is the interruptible distributed sampler. For epoch e its
 * global order G is a permutation of 0..n-1 drawn with a ckh_rng seeded
 * from (seed, e), padded to total = ceil(n/W)*W by repeating G's start
 * (drop_last: truncated to floor(n/W)*W); rank r reads G[r], G[r+W], ...
 * `progress` counts the samples this rank has consumed in the epoch and
 * moves only with advance(n).
 *
 * Resharding: a state saved under world size W0 at progress p means the
 * first p*W0 entries of G were consumed. Loading it under W1 != W0 with
 * reshard set keeps G and hands out the remaining entries G[p*W0 ..] to the
 * W1 ranks round-robin (epoch_offset = p*W0), so no entry of the epoch is
 * lost or repeated; ranks may then get one sample more than others. The
 * next epoch is built for W1 again. An epoch nothing of which was
 * consumed (p*W0 plus any earlier offset is 0, as in a state saved at an
 * epoch boundary) is not resharded but started afresh for W1: its order
 * is padded for W1. So an epoch's order is always padded for the world
 * that reads its first entry.
 *
 * ckh_ssampler is the interruptible sampler over a distributed sharded
 * dataset: rank r holds m = ceil(n * pct / 100) samples, indices
 * (r*n/W + j) mod n for j < m, and reads them in a per-(seed, epoch, rank)
 * permutation. Its state cannot be resharded (a shard is defined by W).
 *
 * State format (CKH_SAMPLER_STATE_BYTES, little-endian): "CKHSMPL1",
 * kind u32 (0 distributed, 1 sharded), world u32, epoch i64, progress u64,
 * seed u64, n u64, drop_last u32, epoch_world u32, epoch_offset u64,
 * pct u32, reserved u32, crc32c u32 of the preceding bytes, pad u32.
 */
#ifndef CKH_SAMPLER_H
#define CKH_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/alloc.h"
#include "ckh/defects.h"

#define CKH_SAMPLER_STATE_BYTES 88

struct ckh_dsampler {
    struct ckh_alloc *alloc; /* where the order cache lives */
    uint64_t n;              /* dataset size */
    uint64_t seed;           /* order seed */
    bool drop_last;          /* truncate instead of padding */
    int world;               /* ranks reading now */
    int rank;                /* this rank */
    int64_t epoch;           /* current epoch */
    uint64_t progress;       /* samples this rank consumed in the epoch */
    int epoch_world;         /* world size the epoch's order was padded for */
    uint64_t epoch_offset;   /* entries of the order consumed before a reshard */
    uint64_t *order;         /* cached global order of order_epoch */
    uint64_t order_total;    /* entries in order */
    int64_t order_epoch;     /* epoch of the cache (-1: none) */
    int order_world;         /* epoch_world of the cache */
    char errmsg[256];        /* last error */
};

/* Initializes s for rank of world over n samples (n >= 1, 0 <= rank <
 * world), at epoch 0, progress 0. Nothing is allocated until first use;
 * release with ckh_dsampler_fini. */
int ckh_dsampler_init(struct ckh_dsampler *s, struct ckh_alloc *alloc, uint64_t n, int world,
                      int rank, uint64_t seed, bool drop_last);
void ckh_dsampler_fini(struct ckh_dsampler *s);
/* Starts epoch e at progress 0, with an order built for the current world. */
int ckh_dsampler_set_epoch(struct ckh_dsampler *s, int64_t epoch);
/* Samples this rank reads in the current epoch (consumed ones included). */
uint64_t ckh_dsampler_len(const struct ckh_dsampler *s);
/* Samples left in the epoch for this rank. */
uint64_t ckh_dsampler_remaining(const struct ckh_dsampler *s);
/* Largest epoch length over the ranks (ranks differ only after a reshard). */
uint64_t ckh_dsampler_len_max(const struct ckh_dsampler *s);
/* The dataset index of this rank's k-th not yet consumed sample. */
int ckh_dsampler_get(struct ckh_dsampler *s, uint64_t k, uint64_t *index);
/* Marks n samples consumed; CKH_EINVAL past the end of the epoch. */
int ckh_dsampler_advance(struct ckh_dsampler *s, uint64_t n);
/* Serializes the state into buf (CKH_SAMPLER_STATE_BYTES). defects: with
 * sampler-progress-not-saved the progress is written as 0. */
int ckh_dsampler_save(const struct ckh_dsampler *s, const struct ckh_defect_set *defects,
                      void *buf, size_t n);
/* Restores a saved state (seed, n and drop_last must match: CKH_EMISMATCH).
 * A different world size gives CKH_EMISMATCH with a message unless
 * reshard is true. CKH_EFOREIGN / CKH_ECORRUPT / CKH_ETRUNCATED for bad
 * bytes. On error s is unchanged. */
int ckh_dsampler_load(struct ckh_dsampler *s, const void *buf, size_t n, bool reshard);
/* ckh_dsampler_load with defect switches (NULL: none): with
 * reshard-ignored, a state of another world size loads (when reshard is
 * set) as if saved under the current world: the saved progress becomes
 * this rank's progress in an epoch padded for the current world. */
int ckh_dsampler_load_defects(struct ckh_dsampler *s, const void *buf, size_t n, bool reshard,
                              const struct ckh_defect_set *defects);
/* 64-bit digest of the state (epoch, progress, seed, world, offsets). */
uint64_t ckh_dsampler_digest(const struct ckh_dsampler *s);

struct ckh_ssampler {
    struct ckh_alloc *alloc; /* where the shard and order live */
    uint64_t n;              /* whole dataset size */
    int world;               /* ranks */
    int rank;                /* this rank */
    uint32_t pct;            /* samples_pct_per_replica, 1..100 */
    uint64_t seed;           /* order seed */
    int64_t epoch;           /* current epoch */
    uint64_t progress;       /* samples consumed in the epoch */
    uint64_t *shard;         /* this rank's dataset indices (m) */
    uint64_t m;              /* shard size */
    uint64_t *order;         /* permutation of 0..m-1 for order_epoch */
    int64_t order_epoch;     /* epoch of the cache (-1: none) */
    char errmsg[256];        /* last error */
};

/* Initializes the sharded sampler; allocates the shard (release with
 * ckh_ssampler_fini). pct in 1..100. */
int ckh_ssampler_init(struct ckh_ssampler *s, struct ckh_alloc *alloc, uint64_t n, int world,
                      int rank, uint32_t pct, uint64_t seed);
void ckh_ssampler_fini(struct ckh_ssampler *s);
int ckh_ssampler_set_epoch(struct ckh_ssampler *s, int64_t epoch);
/* The shard size (samples per epoch). */
uint64_t ckh_ssampler_len(const struct ckh_ssampler *s);
uint64_t ckh_ssampler_remaining(const struct ckh_ssampler *s);
int ckh_ssampler_get(struct ckh_ssampler *s, uint64_t k, uint64_t *index);
int ckh_ssampler_advance(struct ckh_ssampler *s, uint64_t n);
int ckh_ssampler_save(const struct ckh_ssampler *s, const struct ckh_defect_set *defects, void *buf,
                      size_t n);
/* A different world size (or pct, seed, n) gives CKH_EMISMATCH; reshard
 * true with a different world gives CKH_EUNSUPPORTED. */
int ckh_ssampler_load(struct ckh_ssampler *s, const void *buf, size_t n, bool reshard);

#endif
