/* The DDP training workload "ddp-train" and its pieces: emulated devices,
 * tensors and state dicts, a two-layer MLP, SGD with momentum and weight
 * decay, a warm-up + cosine LR schedule, and the oracle records.
 *
 * One node per rank runs ckh_ddp_node_main. Every rank builds the same
 * model from the seed, reads its data through a ckh_dsampler, computes
 * gradients (a dropout-like mask drawn from its own RNG stream), and the
 * gradients are summed with one all-reduce in rank order, so all ranks
 * hold bit-identical weights. At the configured cadence the leader of
 * each view of the checkpoint folder (rank 0 on a shared disk, every rank
 * on node-local disks) saves the model, optimizer, scheduler, sampler,
 * step and epoch, every rank saves its RNG stream, all through the
 * directory saver cfg->saver (include/ckh/saver.h; NULL: the atomic
 * directory saver); on start every rank loads the checkpoint the saver's
 * ranks agree on, then checks that all ranks loaded the same step. Every
 * rank reports through the record API (env->record, include/ckh/
 * record.h): a step record per optimizer step (digests "weights",
 * "optim", "rng", "sampler", value "lr", its sample ids), a resume record,
 * a save record per save attempt, a final record.
 *
 * With env->gpu (the real platform's GPUs, include/ckh/env.h) the
 * weights, gradients and momentum also live in device memory: gradients
 * are all-reduced there (ckh_gpu_allreduce), saves read the device,
 * loads stage each tensor on the device it maps to (cudaMalloc: running
 * out of memory is the device's answer), cfg->device_capacity_bytes is
 * held as a real limit (ckh_gpu_limit); the arithmetic runs on the host
 * copies. Without it the emulated devices below count the same bytes.
 *
 * The oracle record (struct ckh_ddp_record) lives outside node memory (the
 * harness allocates it and passes it in the node arg) so it survives kills.
 * Per optimizer step and rank it holds digests of weights (with devices),
 * optimizer state, learning rate, RNG stream and sampler state, and the
 * sample IDs the step consumed; a resumed run overwrites the slots of the
 * steps it replays. The harness judges it: the ddp-train adapter digests
 * it per step and per epoch, and the resume-equivalence oracle compares
 * those digests with a reference run's (harness/judge/resume_check.c).
 *
 * Checkpoint folder content (format of each file: ckh_ddp_sd, below):
 *   model.ckh        model tensors "fc1.weight", "fc1.bias", "fc2.weight",
 *                    "fc2.bias" (prefixed "module." under the defect)
 *   train.ckh        "optim.momentum.<key>", "optim.lr", "sched.last_step",
 *                    "sampler", "step", "epoch"
 *   rng_rank_<R>.ckh "rng.dropout": rank R's stream
 */
#ifndef CKH_DDP_H
#define CKH_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/alloc.h"
#include "ckh/atomic.h"
#include "ckh/defects.h"
#include "ckh/env.h"
#include "ckh/sampler.h"
#include "ckh/saver.h"

#define CKH_DDP_MAX_RANKS 64
#define CKH_DDP_KEY_MAX 128

/* ---- emulated devices ---- */

/* Device memory of the emulated GPUs (device d is local rank d's GPU).
 * Shared by all ranks; lives outside node memory. Each rank's own usage is
 * a row, cleared when the rank (re)starts, as a dying process frees its
 * device memory. */
struct ckh_ddp_devices {
    int count;                       /* devices (= world size) */
    uint64_t capacity_bytes;         /* per device (0: unlimited) */
    uint64_t used[CKH_DDP_MAX_RANKS][CKH_DDP_MAX_RANKS]; /* [rank][device] bytes */
    uint64_t peak[CKH_DDP_MAX_RANKS]; /* per device, peak total bytes */
};

/* Charges bytes on device dev to rank; CKH_EOOM_DEVICE past capacity. */
int ckh_ddp_dev_alloc(struct ckh_ddp_devices *d, int rank, int dev, uint64_t bytes);
void ckh_ddp_dev_free(struct ckh_ddp_devices *d, int rank, int dev, uint64_t bytes);
/* Total bytes in use on dev. */
uint64_t ckh_ddp_dev_used(const struct ckh_ddp_devices *d, int dev);

/* ---- state dicts ---- */

struct ckh_ddp_sd_entry {
    char *key;           /* owned */
    enum ckh_dtype dtype; /* element type */
    int device;          /* device the tensor lived on (-1: host) */
    uint64_t size_bytes; /* data size */
    void *data;          /* owned copy */
};

/* An ordered list of named tensors (insertion order is file order). */
struct ckh_ddp_sd {
    struct ckh_alloc *alloc;         /* where everything lives */
    struct ckh_ddp_sd_entry *entries; /* count entries */
    size_t count;                    /* entries in use */
    size_t cap;                      /* entries allocated */
};

void ckh_ddp_sd_init(struct ckh_ddp_sd *sd, struct ckh_alloc *alloc);
void ckh_ddp_sd_fini(struct ckh_ddp_sd *sd);
/* Appends a copy of data under key (CKH_EEXISTS for a duplicate key). */
int ckh_ddp_sd_put(struct ckh_ddp_sd *sd, const char *key, enum ckh_dtype dtype, int device,
                   const void *data, uint64_t size_bytes);
/* The entry named key or NULL (valid until sd changes). */
const struct ckh_ddp_sd_entry *ckh_ddp_sd_find(const struct ckh_ddp_sd *sd, const char *key);
/* File format: "CKHSD001", u32 count, then per entry u32 key length, key,
 * u32 dtype, i32 device, u64 size, data; then crc32c (u32) of all before.
 * All little-endian. *out is allocated from sd->alloc. */
int ckh_ddp_sd_serialize(const struct ckh_ddp_sd *sd, void **out, size_t *n);
/* Parses into an empty sd; CKH_EFOREIGN / CKH_ECORRUPT / CKH_ETRUNCATED. */
int ckh_ddp_sd_parse(struct ckh_ddp_sd *sd, const void *buf, size_t n);

/* Model key handling on load. */
enum ckh_ddp_keymode {
    CKH_DDP_KEYS_STRICT = 0, /* keys must match exactly */
    CKH_DDP_KEYS_NORMALIZE,  /* a "module." prefix is stripped (or added) to match */
};
/* Matches the model keys of sd against expected[0..n): for each expected
 * key writes the index of its entry in sd into idx. Strict mode: any
 * missing or unexpected key gives CKH_EMISMATCH and a message listing
 * both sets ("missing keys: [...]; unexpected keys: [...]"). */
int ckh_ddp_match_keys(const struct ckh_ddp_sd *sd, const char *const *expected, size_t n,
                       enum ckh_ddp_keymode mode, size_t *idx, char *msg, size_t msglen);

/* ---- learning-rate schedule ---- */

struct ckh_ddp_sched {
    float base_lr;         /* peak LR */
    float min_lr;          /* floor of the cosine */
    uint64_t warmup_steps; /* linear warm-up from base_lr / warmup_steps */
    uint64_t total_steps;  /* steps of the whole run (cosine reaches min_lr there) */
    uint64_t last_step;    /* optimizer steps taken so far (the state) */
};
/* LR for the next step (last_step + 1). */
float ckh_ddp_sched_lr(const struct ckh_ddp_sched *s);

/* ---- job ---- */

struct ckh_ddp_config {
    uint64_t seed;            /* model init, data, sampler and RNG streams */
    int world;                /* ranks (1..CKH_DDP_MAX_RANKS) */
    uint64_t samples;         /* dataset size */
    uint32_t in_dim;          /* input features */
    uint32_t hidden;          /* hidden units */
    uint32_t out_dim;         /* outputs */
    uint32_t batch;           /* samples per rank per micro-step */
    uint32_t accum;           /* micro-steps per optimizer step */
    int64_t epochs;           /* epochs to train */
    bool drop_last;           /* sampler drop_last */
    float lr;                 /* peak learning rate */
    float min_lr;             /* cosine floor */
    uint64_t warmup_steps;    /* warm-up steps */
    float momentum;           /* SGD momentum */
    float weight_decay;       /* L2 weight decay */
    float dropout;            /* dropout probability of hidden units */
    uint64_t ckpt_every;      /* checkpoint every K optimizer steps (0: never mid-epoch) */
    bool ckpt_epoch_end;      /* checkpoint at every epoch end */
    const char *ckpt_dir;     /* output directory of the saver (NULL: no checkpoints) */
    const char *saver_name;   /* saver name (NULL: "ddp") */
    enum ckh_adir_strategy strategy; /* saver strategy */
    const struct ckh_saver_ops *saver; /* the directory saver (NULL: the built-in atomic-dir,
                                          ckh_atomic_dir_saver_ops) */
    int keep_last;            /* saver keep_last (-1 unlimited) */
    uint64_t device_capacity_bytes; /* per emulated device (0: unlimited) */
    bool no_map_location;     /* load onto the saved device (also the no-device-map defect) */
    enum ckh_ddp_keymode keymode; /* model key handling on load */
    bool reshard;             /* a sampler state of another world size is resharded, a
                                 missing rng_rank_<R>.ckh keeps the fresh stream, and
                                 the record forgets what comes after the resume point */
    uint64_t timeout_ns;      /* collective timeout (0: forever) */
    int64_t halt_after_step;  /* test hook: return CKH_EKILLED after this step (0: never) */
    struct ckh_defect_set defects; /* switched-on defects */
};

/* Fills cfg with a small default job (2 ranks, 64 samples, 3 epochs). */
void ckh_ddp_config_default(struct ckh_ddp_config *cfg);
/* Optimizer steps an uninterrupted run of cfg takes. */
uint64_t ckh_ddp_total_steps(const struct ckh_ddp_config *cfg);

/* ---- model ---- */

enum { CKH_DDP_NPARAM = 4 }; /* fc1.weight, fc1.bias, fc2.weight, fc2.bias */

/* Model key names, in state-dict order. Static storage. */
extern const char *const ckh_ddp_param_names[CKH_DDP_NPARAM];

/* The two-layer MLP y = W2 * mask(relu(W1 x + b1)) + b2 with its gradient
 * and momentum buffers. Parameters and buffers carry their device. */
struct ckh_ddp_model {
    struct ckh_alloc *alloc;          /* host memory of all arrays */
    uint32_t in_dim;                  /* inputs */
    uint32_t hidden;                  /* hidden units */
    uint32_t out_dim;                 /* outputs */
    uint64_t count[CKH_DDP_NPARAM];   /* elements per parameter */
    float *param[CKH_DDP_NPARAM];     /* weights */
    float *grad[CKH_DDP_NPARAM];      /* accumulated gradients */
    float *mom[CKH_DDP_NPARAM];       /* momentum buffers */
    int param_device[CKH_DDP_NPARAM]; /* device of each weight */
    int mom_device[CKH_DDP_NPARAM];   /* device of each momentum buffer */
    float *act;                       /* scratch: hidden activations, mask, deltas */
};

/* Allocates the model of cfg on device `device` with weights drawn from
 * cfg->seed (identical on every rank); momentum zero. Host memory from
 * alloc; release with ckh_ddp_model_fini. */
int ckh_ddp_model_init(struct ckh_ddp_model *m, struct ckh_alloc *alloc,
                       const struct ckh_ddp_config *cfg, int device);
void ckh_ddp_model_fini(struct ckh_ddp_model *m);
/* Bytes of all weights (= bytes of all momentum buffers). */
uint64_t ckh_ddp_model_bytes(const struct ckh_ddp_model *m);
/* Sample `index` of the synthetic dataset of cfg: x[in_dim], y[out_dim]. */
void ckh_ddp_sample(const struct ckh_ddp_config *cfg, uint64_t index, float *x, float *y);
/* Forward and backward pass of one sample; adds scale * dLoss/dparam to
 * the gradients (loss 0.5*|out-y|^2); the dropout mask is drawn from rng. */
void ckh_ddp_model_backward(struct ckh_ddp_model *m, const float *x, const float *y, float dropout,
                            struct ckh_rng *rng, float scale);
/* SGD step with momentum and weight decay; zeroes the gradients. */
void ckh_ddp_sgd_step(struct ckh_ddp_model *m, float lr, float momentum, float weight_decay);
/* Digests of the weights / momentum buffers, devices included. */
uint64_t ckh_ddp_model_digest(const struct ckh_ddp_model *m);
uint64_t ckh_ddp_optim_digest(const struct ckh_ddp_model *m);

/* ---- oracle record ---- */

struct ckh_ddp_step_rec {
    bool valid;        /* the step was recorded */
    int64_t epoch;     /* epoch the step belongs to */
    uint64_t weights;  /* digest of the weights and their devices */
    uint64_t optim;    /* digest of the momentum buffers and their devices */
    uint64_t lr_bits;  /* the LR used (float bits) */
    uint64_t rng;      /* the rank's RNG stream after the step */
    uint64_t sampler;  /* sampler state digest after the step */
};

struct ckh_ddp_rank_rec {
    int status;               /* last node main return code */
    bool finished;            /* the last incarnation completed the run */
    char errmsg[256];         /* what failed */
    uint64_t incarnations;    /* node main calls */
    int64_t resumed_step;     /* step the last incarnation resumed from (-1 none) */
    uint64_t saves_failed;    /* checkpoints this rank saw fail (logged, training went on) */
    int64_t final_step;       /* steps at the end */
    int64_t final_epoch;      /* epochs at the end */
    struct ckh_ddp_step_rec final; /* digests at the end */
    struct ckh_ddp_step_rec *steps; /* [max_steps + 1], slot s: optimizer step s */
    uint32_t *samples;        /* [(max_steps + 1) * per_step] sample IDs, UINT32_MAX: none */
};

struct ckh_ddp_record {
    int world;                /* rank slots (the larger world of a resized job) */
    uint64_t max_steps;       /* step slots */
    uint32_t per_step;        /* sample slots per rank and step (batch * accum) */
    uint64_t samples;         /* dataset size (sample IDs are below it) */
    struct ckh_ddp_devices devices; /* the emulated GPUs */
    struct ckh_ddp_rank_rec ranks[CKH_DDP_MAX_RANKS]; /* per rank */
};

/* Allocates a record for cfg (system allocator: outside node memory).
 * Free with ckh_ddp_record_destroy. */
int ckh_ddp_record_create(const struct ckh_ddp_config *cfg, struct ckh_ddp_record **out);
/* The same for a job that starts with cfg->world ranks and is restarted
 * with world_restart ranks: rank slots for the larger world, step slots
 * for the smaller one (it takes more steps per epoch) plus one epoch for
 * the epoch split between the two. world_restart == cfg->world is
 * ckh_ddp_record_create. CKH_EINVAL for a world outside
 * 1..CKH_DDP_MAX_RANKS or a job without steps. */
int ckh_ddp_record_create_worlds(const struct ckh_ddp_config *cfg, int world_restart,
                                 struct ckh_ddp_record **out);
/* Bytes ckh_ddp_record_create_worlds(cfg, world_restart) allocates: the
 * record, and per rank slot one step record and batch * accum sample ids
 * per step slot. 0 where it would refuse (no step, a world out of range). */
uint64_t ckh_ddp_record_bytes(const struct ckh_ddp_config *cfg, int world_restart);
/* The most a ddp-train job's record may take (ckh_ddp_record_bytes): a
 * quarter of a scenario worker's default memory limit (4 GiB), which
 * also holds the harness's copy of every step's sample ids and the
 * simulator. A longer job is refused up front, naming job.epochs. */
#define CKH_DDP_RECORD_MAX_BYTES (1ull << 30)
/* Forgets what rank recorded for the steps after `step` (slots cleared,
 * sample ids none): a resumed run keeps only the history that led to its
 * state. No-op for a bad rank. */
void ckh_ddp_record_forget_after(struct ckh_ddp_record *r, int rank, int64_t step);
void ckh_ddp_record_destroy(struct ckh_ddp_record *r);
/* True when every rank finished. */
bool ckh_ddp_record_finished(const struct ckh_ddp_record *r);

/* The node arg of ckh_ddp_node_main (borrowed for the whole run). */
struct ckh_ddp_node_arg {
    const struct ckh_ddp_config *cfg; /* the job */
    int rank;                         /* this node's rank */
    struct ckh_ddp_record *rec;       /* oracle record (outside node memory) */
};

/* The node program of "ddp-train": trains (resuming from the latest
 * committed checkpoint if any) and fills rec. The record may have more
 * rank slots than cfg->world (a job restarted with another world size);
 * the collective group must be exactly cfg->world ranks.
 *
 * Another world size on resume (cfg->reshard set, cfg->world changed
 * between runs): model, optimizer and scheduler load unchanged; rank 0's
 * sampler state, saved for the old world, is resharded (include/ckh/
 * sampler.h) so the rest of the interrupted epoch is read exactly once by
 * the new ranks; rank R restores rng_rank_<R>.ckh when the checkpoint has
 * it, else keeps the stream every fresh rank R starts with, seeded from
 * (cfg->seed, "ddp-dropout") mixed with R + 1; files of ranks that no
 * longer exist are not read. Each rank then forgets its record after the
 * resume step, and rank 0 also forgets it for the record's ranks beyond
 * cfg->world, so the record holds only the history that led to the final
 * state. Without cfg->reshard, a checkpoint saved by another world size is
 * refused: CKH_EMISMATCH with "checkpoint <folder> was saved by W ranks;
 * this job has W' and resharding is off". Returns 0, or the error
 * (CKH_EOOM_DEVICE for a device out of memory, CKH_EKILLED at the test
 * halt, CKH_EMISMATCH for that refusal or for ranks that loaded different
 * steps), also stored in rec->ranks[rank].status / errmsg. */
int ckh_ddp_node_main(struct ckh_env *env, void *arg);

#endif
