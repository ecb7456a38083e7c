/* The record store: everything the nodes of one job instance reported
 * through the record API (include/ckh/record.h), over all its runs, and
 * the generic job result the oracles judge.
 *
 * One record model, two feeds: a node program in the simulator reports
 * through the struct ckh_record table the store binds to it (env->record),
 * a command job's program writes JSON lines that ckh_records_read_jsonl
 * parses; both end in ckh_records_add_*, field for field. Nothing here
 * knows a workload.
 *
 * Supersession: a resume record of run r at step s supersedes what runs
 * before r recorded for steps after s (every node's), so after the last
 * run the step records are the history that led to the final state.
 *
 * Ownership: the store is created and destroyed by the runner; the tables
 * it hands out and the arrays of a collected result are owned by it and
 * valid until the next collect or destroy. It lives outside simulated node
 * memory, so records survive kills.
 */
#ifndef CKH_RUN_RECORDS_H
#define CKH_RUN_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/record.h"

#define CKH_NODE_NAME_LEN 64
#define CKH_BLOBS_LEN 1024

/* Name i of a table of node names, char names[][CKH_NODE_NAME_LEN] (ctx):
 * the node_name callback of ckh_fault_node and ckh_fault_rules_of_run. */
const char *ckh_node_name_at(const void *names, int i);

/* One node's generic outcome. */
struct ckh_node_result {
    char node[CKH_NODE_NAME_LEN]; /* node name */
    bool finished;                /* the node's program returned */
    int rc;                       /* its return code (0: the job completed on it) */
    int64_t epochs;               /* epochs (or steps, for step-based jobs) the job reported */
    int64_t resumed_from;         /* epoch/step resumed from in the last run (-1: scratch) */
    int64_t total;                /* the workload's headline value */
    char blobs[CKH_BLOBS_LEN];    /* comma-separated sorted blob names */
    uint64_t digest;              /* digest of the node's final state */
    uint64_t saves_failed;        /* failed (logged) saves, all runs */
    uint64_t saves_failed_unfaulted; /* of those, failed before any fault fired in their run */
    char first_failed_save[256];  /* what the first failed save said ("" if none) */
    char refused[256];            /* the first of its records the record API refused, and why ("") */
    int64_t steps;                /* steps the final record reported */
    uint32_t vfirst;              /* final values: the job result's final_values[vfirst .. +vcount) */
    uint32_t vcount;
};

/* One named quantity a step (or a final record) reported. */
struct ckh_step_quantity {
    char name[CKH_RECORD_NAME_MAX + 1]; /* "weights", "rng", "lr" */
    bool is_value;                      /* a value (bits: the double's bits), else a digest */
    uint64_t bits;                      /* the digest, or the value's bits */
};

/* Per-step record of one node (resume-equivalence oracle). A job result's
 * steps are sorted by (step, node). */
struct ckh_step_record {
    int64_t step;    /* global step */
    int64_t epoch;   /* its epoch */
    uint32_t node;   /* index of the node that recorded it */
    uint64_t digest; /* over every quantity, in recorded order */
    uint32_t first;  /* its quantities: the job result's quantities[first .. first + count) */
    uint32_t count;
    uint64_t nids;     /* sample ids it consumed */
    uint64_t multiset; /* their order-independent digest (as ckh_epoch_samples') */
};

/* A node's step that a later run restored from a checkpoint without
 * anyone recording it: the node saved it, was killed before its step
 * record, and its next incarnation resumed after it. */
struct ckh_step_key {
    int64_t step;  /* the step (the resume record's) */
    uint32_t node; /* node index */
};

/* Per-epoch sample-consumption record (multiset digest and count; the
 * per-id counts, where kept, are struct ckh_job_result.sample_counts). */
struct ckh_epoch_samples {
    int64_t epoch;      /* epoch */
    uint64_t count;     /* samples consumed */
    uint64_t multiset;  /* order-independent digest of the consumed sample ids */
};

/* Everything an adapter reports about a job after its runs. */
struct ckh_job_result {
    struct ckh_node_result *nodes;     /* one per node (owned by the adapter) */
    size_t nnodes;                     /* number of nodes */
    const struct ckh_step_record *steps; /* per-step records, sorted by (step, node) (may be NULL) */
    size_t nsteps;                     /* number of step records */
    const struct ckh_step_quantity *quantities; /* pool of the steps' quantities */
    size_t nquantities;
    const struct ckh_step_quantity *final_values; /* pool of the nodes' final values */
    size_t nfinal_values;
    const struct ckh_epoch_samples *samples; /* per-epoch sample records (may be NULL) */
    size_t nsamples;                   /* number of epoch records */
    const uint32_t *sample_counts;     /* [nsamples * dataset_size]: row e counts how often
                                          epoch e consumed each sample id (NULL: not kept) */
    uint64_t dataset_size;             /* sample ids per row of sample_counts */
    const int *epoch_world;            /* [nsamples]: ranks that ran epoch e's first step
                                          (0: none ran it; NULL: not kept) */
    bool drop_last;                    /* the sampler truncates epochs instead of padding */
    const struct ckh_step_key *restored; /* steps restored unrecorded, sorted (may be NULL) */
    size_t nrestored;
    bool corruption_detected;          /* a load refused a corrupt/truncated/foreign file */
    bool device_oom;                   /* an emulated device ran out of memory */
};

struct ckh_records;

/* Flags of ckh_records_create. */
enum {
    /* The nodes form one collective job: every node restarts with the
     * others, so a node that records nothing in a run where others resumed
     * (parked by a world-size change) loses what it recorded past the
     * earliest resume point of that run too. */
    CKH_RECORDS_COLLECTIVE = 0x1,
    /* Progress counts steps: a node's resumed_from is its resume step
     * (else its resume epoch). */
    CKH_RECORDS_STEP_BASED = 0x2,
};

/* A store for nnodes nodes (flags: CKH_RECORDS_*). */
int ckh_records_create(size_t nnodes, unsigned flags, struct ckh_records **out);
void ckh_records_destroy(struct ckh_records *s);
/* Records added from now on belong to run `run` (1-based). */
void ckh_records_begin_run(struct ckh_records *s, int run);
/* Tells the store how to learn whether a fault has fired in the current
 * run (a save failing before that is a failure with no fault to blame). */
void ckh_records_set_fault_probe(struct ckh_records *s, bool (*fired)(void *ctx), void *ctx);
/* The record table bound to node i (valid until destroy). */
struct ckh_record *ckh_records_table(struct ckh_records *s, size_t node);

/* Adds one record of node i (both feeds call these; the record is checked
 * as include/ckh/record.h says and copied). */
int ckh_records_add_step(struct ckh_records *s, size_t node, const struct ckh_rec_step *r);
int ckh_records_add_resume(struct ckh_records *s, size_t node, const struct ckh_rec_resume *r);
int ckh_records_add_save(struct ckh_records *s, size_t node, const struct ckh_rec_save *r);
int ckh_records_add_final(struct ckh_records *s, size_t node, const struct ckh_rec_final *r);

/* Parses n bytes of JSON-lines text (the result protocol) as node i's
 * records. An unterminated last line (a program killed while writing it)
 * is ignored: that record was never made. file names the source in
 * messages. CKH_EPARSE with "file:line:col: what was expected" in msg, or
 * the store's refusal naming the line; records before the bad line are
 * kept. */
int ckh_records_read_jsonl(struct ckh_records *s, size_t node, const char *text, size_t n,
                           const char *file, char *msg, size_t msglen);

/* Fills *out from the store: node i's result is named names[i]; rc[i] is
 * the return code of node i's program in the last run (0 when it
 * completed). Arrays are owned by s. CKH_ENOMEM when memory ran out,
 * here or for a record added before (that node was told CKH_ENOMEM and
 * the records are incomplete). */
int ckh_records_collect(struct ckh_records *s, const char *const *names, const int *rc,
                        struct ckh_job_result *out);

#endif
