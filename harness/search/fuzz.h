/* Swarm testing (`ckh fuzz`), fired-fault bookkeeping and run timelines.
 *
 * Each fuzz seed deterministically picks a job shape (workload, nodes,
 * epochs or steps, backend, saver, crash model, sector size, checkpoint
 * cadence) and a random mix of faults across the catalogue, writes the
 * scenario as YAML text (so every seed is a scenario file a person can
 * read and `ckh run`), runs it with every oracle and counts which fault
 * kinds fired in which phase. Generation and expectations are specified
 * at the top of harness/fuzz.c and in docs/FUZZING.md.
 *
 * Ownership: functions returning text or arrays hand the caller a malloc'd
 * buffer (free()); nothing returned borrows from the arguments.
 */
#ifndef CKH_FUZZ_H
#define CKH_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/op.h"
#include "ckh/sim.h"
#include "report.h"
#include "model/scenario.h"

struct ckh_scenario_run;

/* Columns of the coverage table: the phase a node was in when a fault
 * fired; "rest" is an at-rest fault applied between runs, "-" no phase. */
#define CKH_FUZZ_PHASE_MAP(X)                                                  \
    X(INIT, "init")                                                            \
    X(EPOCH, "epoch")                                                          \
    X(SAVE, "save")                                                            \
    X(LOAD, "load")                                                            \
    X(UPLOAD, "upload")                                                        \
    X(DOWNLOAD, "download")                                                    \
    X(COLLECTIVE, "collective")                                                \
    X(EXIT, "exit")                                                            \
    X(OTHER, "-")                                                              \
    X(REST, "rest")

enum ckh_fuzz_phase {
#define CKH__FZ_PH_ENUM(e, s) CKH_FUZZ_PH_##e,
    CKH_FUZZ_PHASE_MAP(CKH__FZ_PH_ENUM)
#undef CKH__FZ_PH_ENUM
        CKH_FUZZ_PH__COUNT
};

/* Phase column of a phase name (NULL or unknown: OTHER). */
enum ckh_fuzz_phase ckh_fuzz_phase_of(const char *phase);
/* Column name ("save"); "?" out of range. */
const char *ckh_fuzz_phase_name(enum ckh_fuzz_phase p);

/* Fault coverage: how often each action kind fired in each phase. */
struct ckh_fuzz_coverage {
    uint64_t hits[CKH_SCN_ACT__COUNT][CKH_FUZZ_PH__COUNT]; /* [action][phase] */
};

/* Adds b into a. */
void ckh_fuzz_coverage_add(struct ckh_fuzz_coverage *a, const struct ckh_fuzz_coverage *b);
/* Prints the table (rows: action kinds that fired or all with all_rows;
 * columns: phases). */
void ckh_fuzz_coverage_print(FILE *f, const struct ckh_fuzz_coverage *c, bool all_rows);

/* One fault of a scenario that fired during a run, as the concrete
 * trigger that reproduces it: the nth op of `op` on `path` by `node` in
 * run `run` (nth counts that node's ops of that kind on that path in that
 * run). At-rest faults applied between runs have op -1. */
struct ckh_fuzz_fired {
    size_t fault;                /* index into the scenario's faults */
    uint32_t run;                /* 1-based run */
    int node;                    /* node index (-1: environment or between runs) */
    int op;                      /* enum ckh_op_kind, -1: between runs */
    char path[256];              /* the op's path ("" when none) */
    uint64_t nth;                /* 1-based ordinal among matching ops */
    uint64_t time_ns;            /* virtual time it fired */
    enum ckh_fuzz_phase phase;   /* phase of the node then */
    char phase_name[16];         /* the phase as announced ("" if none) */
};

/* Reads the fired faults of a finished run from its simulator's trace
 * (kept: struct ckh_run_options.on_trace) and record. *out is malloc'd
 * (free()), *n its length (0: *out may be NULL). Returns 0 or CKH_ENOMEM. */
int ckh_fuzz_fired_collect(const struct ckh_sim *sim, const struct ckh_scenario_run *r,
                           struct ckh_fuzz_fired **out, size_t *n);

/* What the fuzzer may choose from. Zero / NULL fields mean "pick". */
struct ckh_fuzz_config {
    const char *workload;        /* fuzz only this workload (NULL: every fuzzable one) */
    const char *defect;          /* defect switches on in every seed ("a,b"; NULL: none) */
    const char *backend;         /* storage backend of every seed (NULL: the default) */
    uint32_t determinism_every;  /* every k-th seed also checks determinism (0: never) */
    const char *source_dir;      /* repository root for golden files (NULL: ".") */
    const char *cache_dir;       /* reference-run cache (NULL: none) */
    const char *argv0;           /* the ckh command in replay lines (NULL: "ckh") */
};

/* Writes the scenario of seed as YAML into a malloc'd string *out (free()).
 * The same (seed, cfg) always gives the same text. Returns 0, CKH_EINVAL
 * (unknown workload in cfg) or CKH_ENOMEM. */
int ckh_fuzz_generate(uint64_t seed, const struct ckh_fuzz_config *cfg, char **out);

/* The outcome of one seed. */
struct ckh_fuzz_seed_result {
    uint64_t seed;                    /* the fuzz seed */
    enum ckh_verdict verdict;         /* pass / fail / error */
    char oracle[64];                  /* the first failed oracle ("" if none) */
    char message[512];                /* its detail or the error */
    bool determinism;                 /* ran with the determinism check */
    struct ckh_fuzz_coverage cov;     /* faults that fired */
};

/* Generates, parses and runs seed; fills *out. When rr is not NULL the
 * full report result is also left there (initialised by the caller).
 * Returns 0 (a verdict, see out->verdict) or a negative code. */
int ckh_fuzz_run_seed(uint64_t seed, const struct ckh_fuzz_config *cfg,
                      struct ckh_fuzz_seed_result *out, struct ckh_report_result *rr);

/* The seeds of shard `index` (1-based) of `count`: seed s belongs to it
 * when s % count == index - 1. */
bool ckh_fuzz_in_shard(uint64_t seed, uint32_t index, uint32_t count);

/* The scenario options accepting every registered name (workloads,
 * backends, defects, oracles); the arrays live in static storage. */
void ckh_fuzz_scn_options(struct ckh_scn_options *o);

#endif
