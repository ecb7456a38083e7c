/* The record API: how a workload tells ckh what it did, so that the
 * oracles can judge code they know nothing about.
 *
 * One record model. A node reports four kinds of record; the C calls below
 * and the JSON-lines result protocol of command jobs (docs/SCENARIOS.md,
 * "Result protocol") carry the same records field for field, and both end
 * in the same store (harness/exec/records.c), so `reference`,
 * `resume-equivalence`, `lost-work`, `reshard` and `saves` judge a C
 * plugin, a built-in workload and a Python program the same way:
 *
 *   step    after each unit of progress (an optimizer step): its number,
 *           its epoch, named digests of the state after it ("weights",
 *           "optim", "rng", "sampler", ...), named values ("lr", "loss")
 *           and the sample ids this node consumed in it. Quantities are
 *           compared by name with the uninterrupted reference run; the
 *           verdict names the first that differs and the step.
 *           JSON: {"kind":"step","step":5,"epoch":1,
 *                  "digests":{"weights":"00ff..."},"values":{"lr":0.1},
 *                  "samples":[3,17]}
 *   resume  once per incarnation that restored a checkpoint: the step and
 *           epoch it resumed after (0, 0: started from scratch; a node
 *           that starts from scratch may omit it). What earlier runs
 *           recorded after that step is superseded: the final record set
 *           is the history that led to the final state.
 *           JSON: {"kind":"resume","step":4,"epoch":1}
 *   save    every checkpoint save attempt and its result (0 or a negative
 *           ckh error code; JSON: "ok" true/false and an optional "error"
 *           text). A save that fails while no fault was armed fails the
 *           scenario (the `saves` oracle).
 *           JSON: {"kind":"save","step":4,"epoch":1,"ok":false,
 *                  "error":"ENOENT: /ckpt/step_4/rank_1.bin"}
 *   final   when the node's program completes the job: epochs and steps
 *           done, the headline total, a digest of the final state, named
 *           values (compared with the reference run's; compare.ignore
 *           names those that legitimately differ) and the blob names the
 *           node holds.
 *           JSON: {"kind":"final","epochs":3,"steps":30,"total":30,
 *                  "digest":"0123...","values":{"loss":0.25},
 *                  "blobs":["model","optim"]}
 *
 * Values the oracles read by name: a final record's `dataset_size` (the
 * sample ids are below it) and `drop_last` (1 when the sampler truncates
 * an epoch to a multiple of the world size instead of padding it) let the
 * `reshard` oracle check that a job restarted with another world size
 * read every sample of each epoch exactly once.
 *
 * Digests are 64-bit values the workload computes any way it likes
 * (ckh_hash64 of include/ckh/rng.h is one); in JSON they are 16 hex
 * digits in a string, since JSON numbers lose bits past 2^53. Values are
 * doubles compared bit for bit.
 *
 * Records live outside the node's memory (the store belongs to the
 * harness), so a node killed right after recording keeps its record. Every
 * string and array a record points to is borrowed for the call only.
 *
 * The table is reached through env->record (include/ckh/env.h); a NULL
 * table (a job run outside ckh) makes every call a no-op returning 0.
 * Methods are only ever appended.
 */
#ifndef CKH_RECORD_H
#define CKH_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKH_RECORD_ABI_VERSION 1
/* Longest quantity or value name, without the NUL. */
#define CKH_RECORD_NAME_MAX 63
/* Most digests, and most values, in one record. */
#define CKH_RECORD_FIELDS_MAX 32

/* A named 64-bit digest of part of the state ("weights"). */
struct ckh_rec_digest {
    const char *name; /* 1..CKH_RECORD_NAME_MAX bytes of [A-Za-z0-9_.-] */
    uint64_t digest;  /* the digest */
};

/* A named number ("lr", "loss"). */
struct ckh_rec_value {
    const char *name; /* as for digests */
    double value;     /* compared bit for bit (every NaN alike); NaN and infinities allowed */
};

/* One unit of progress of this node. */
struct ckh_rec_step {
    int64_t step;                          /* global step, >= 1 */
    int64_t epoch;                         /* epoch it belongs to, >= 0 */
    const struct ckh_rec_digest *digests;  /* state after the step (may be NULL if 0) */
    size_t ndigests;                       /* at most CKH_RECORD_FIELDS_MAX */
    const struct ckh_rec_value *values;    /* values of the step (may be NULL if 0) */
    size_t nvalues;                        /* at most CKH_RECORD_FIELDS_MAX */
    const uint64_t *samples;               /* sample ids consumed by this node (may be NULL) */
    size_t nsamples;                       /* number of ids */
};

/* Where an incarnation resumed: after step `step` of epoch `epoch`. */
struct ckh_rec_resume {
    int64_t step;  /* the checkpoint's step (0: scratch) */
    int64_t epoch; /* the checkpoint's epoch (epoch workloads: the epoch loaded) */
};

/* One checkpoint save attempt. */
struct ckh_rec_save {
    int64_t step;     /* step (or epoch, for epoch workloads) it saved */
    int64_t epoch;    /* epoch */
    int rc;           /* 0, or the negative ckh error code it failed with */
    const char *what; /* what failed, naming the file (may be NULL) */
};

/* The node's outcome when its program completes the job. */
struct ckh_rec_final {
    int64_t epochs;                     /* epochs done */
    int64_t steps;                      /* steps done (0 for epoch-only jobs) */
    int64_t total;                      /* the workload's headline number */
    bool has_digest;                    /* digest below is meaningful */
    uint64_t digest;                    /* digest of the final state */
    const struct ckh_rec_value *values; /* named final values (may be NULL if 0) */
    size_t nvalues;                     /* at most CKH_RECORD_FIELDS_MAX */
    const char *const *blobs;           /* names of what the node holds (may be NULL if 0) */
    size_t nblobs;                      /* number of names */
};

/* Which struct a record is: what a record sink receives, and what a
 * table's refused method is told. */
enum ckh_rec_kind {
    CKH_REC_STEP = 1, /* struct ckh_rec_step */
    CKH_REC_RESUME,   /* struct ckh_rec_resume */
    CKH_REC_SAVE,     /* struct ckh_rec_save */
    CKH_REC_FINAL,    /* struct ckh_rec_final */
};

struct ckh_record;
struct ckh_record_ops {
    int version; /* 1, or 2 with refused below */
    int (*step)(struct ckh_record *r, const struct ckh_rec_step *s);
    int (*resume)(struct ckh_record *r, const struct ckh_rec_resume *s);
    int (*save)(struct ckh_record *r, const struct ckh_rec_save *s);
    int (*final)(struct ckh_record *r, const struct ckh_rec_final *s);
    /* Version 2: told of each record the wrappers refuse, with what is
     * wrong (why, borrowed for the call), so that the table's owner can
     * name the node, the record and the field; may be NULL. */
    void (*refused)(struct ckh_record *r, enum ckh_rec_kind kind, const char *why);
};
struct ckh_record {
    const struct ckh_record_ops *ops; /* methods */
};

/* Wrappers: a NULL r (or method) is a no-op returning 0; else the
 * method's result: 0, CKH_EINVAL for a malformed record (a name too long
 * or with other characters, too many fields, a step < 1; ckh_record_why
 * says which, and a version-2 table's refused method hears it), CKH_ELIMIT when the store is full. A value may be NaN or
 * infinite: values compare bit for bit, every NaN equal to every NaN. */
int ckh_record_step(struct ckh_record *r, const struct ckh_rec_step *s);
int ckh_record_resume(struct ckh_record *r, const struct ckh_rec_resume *s);
int ckh_record_save(struct ckh_record *r, const struct ckh_rec_save *s);
int ckh_record_final(struct ckh_record *r, const struct ckh_rec_final *s);

/* Checks a name as the wrappers do: 0 or CKH_EINVAL. */
int ckh_record_name_check(const char *name);

/* A record table that writes the JSON-lines protocol above to the file at
 * path (appending, one line per record, flushed per record), for C
 * programs run as command jobs and for the real platform. *out is freed
 * with ckh_record_jsonl_close. CKH_EIO (with errno's text in msg) when
 * the file cannot be opened. */
int ckh_record_jsonl_open(const char *path, struct ckh_record **out, char *msg, size_t msglen);
void ckh_record_jsonl_close(struct ckh_record *r);

/* ---- Appended: record checks and the JSON-lines reader ----
 *
 * The checks the wrappers apply, for code that takes records from
 * elsewhere (the harness's store, the JSON-lines reader): 0, or CKH_EINVAL
 * for a malformed record. Beyond the rules above they refuse a name that
 * appears twice among one record's digests and values (quantities are
 * compared by name), an epoch or a resume/save step below 0, a save rc
 * above 0, and a blob name that is NULL, empty or holds a ','. */
int ckh_record_check_step(const struct ckh_rec_step *s);
int ckh_record_check_resume(const struct ckh_rec_resume *s);
int ckh_record_check_save(const struct ckh_rec_save *s);
int ckh_record_check_final(const struct ckh_rec_final *s);
/* The same check of rec (the struct kind names) with, when it fails, what
 * is wrong in why ("value name 'a b' has a character other than ...",
 * "step 0, expected 1 or more"): 0 (why "") or CKH_EINVAL. */
int ckh_record_why(enum ckh_rec_kind kind, const void *rec, char *why, size_t n);


/* Receives one parsed record; rec points to the struct named by kind,
 * borrowed (with everything it points to) for the call only. A nonzero
 * return stops the parse, which returns it. */
typedef int (*ckh_record_sink)(void *ctx, enum ckh_rec_kind kind, const void *rec);

/* Longest line the reader takes, without its newline. */
#define CKH_RECORD_JSONL_LINE_MAX (1u << 20)
/* Deepest nesting of arrays and objects in one line (the record's own
 * object counts as 1). */
#define CKH_RECORD_JSONL_DEPTH_MAX 32

/* Parses n bytes of JSON-lines text (the protocol above; docs/SCENARIOS.md,
 * "Result protocol") and hands each record, in order, to sink. Blank lines
 * are skipped; unknown keys are ignored (any valid JSON value); the line
 * is refused when it is not one JSON object, a known key has the wrong
 * type or range, a required key is missing, a value is neither a finite
 * number nor "NaN", "Infinity" or "-Infinity" (JSON has no literal for
 * them), a digest is not 16 hex digits, a name breaks the rules above, or the line
 * is longer than CKH_RECORD_JSONL_LINE_MAX or nests deeper than
 * CKH_RECORD_JSONL_DEPTH_MAX. Returns 0; CKH_EPARSE with
 * "file:line:col: expected ..., found ..." in msg (file NULL: "<jsonl>");
 * CKH_ENOMEM; or the sink's nonzero return (msg then names the line).
 * Records before the failing line have been handed to the sink. */
int ckh_record_jsonl_parse(const char *text, size_t n, const char *file, ckh_record_sink sink,
                           void *ctx, char *msg, size_t msglen);

#endif
