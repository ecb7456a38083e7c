/* The crash-state explorer and fault catalogue for checkpoint backends
 * (harness/explore.c; the exploration bounds and the checks are specified
 * at the top of that file and in docs/BACKENDS.md).
 *
 * A backend (struct ckh_backend_ops, linked in or loaded from a plugin)
 * saves through a recording shim over a simulated disk. The explorer
 * replays each prefix of the recorded trace, resolves the disk's pending
 * operations with bounded choice vectors (all, none, one dropped, a
 * prefix, one write torn), and checks each distinct crash state by
 * running the backend's recovery. Findings are struct ckh_vuln values,
 * one per (diagnosis, responsible step), each with the first (smallest)
 * crash state that showed it.
 */
#ifndef CKH_HARNESS_EXPLORE_H
#define CKH_HARNESS_EXPLORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/backend.h"
#include "ckh/simfs.h"

/* X(NAME, "name", "what it means") */
#define CKH_VULN_MAP(X)                                                                         \
    X(OVERWRITE_IN_PLACE, "overwrite-in-place", "checkpoint data written under its committed name") \
    X(RENAME_BEFORE_DATA, "rename-before-data", "rename persisted before the file's data (no fsync of the file)") \
    X(NO_DIR_FSYNC, "no-dir-fsync", "save returned before its directory entry was durable (no fsync of the directory)") \
    X(POINTER_BEFORE_DATA, "pointer-before-data", "a commit record/pointer persisted before the data it names") \
    X(RETENTION_BEFORE_COMMIT, "retention-before-commit", "an old checkpoint was deleted before the new one was committed") \
    X(SHARED_TEMP_NAME, "shared-temp-name", "two ranks use the same temporary path") \
    X(NO_CHECKPOINT, "no-checkpoint", "no committed checkpoint survives the crash") \
    X(TOO_FEW_CHECKPOINTS, "too-few-checkpoints", "fewer committed checkpoints load after the crash than the backend kept before the save") \
    X(CORRUPT_RETURNED, "corrupt-returned", "a load returned data that was never saved") \
    X(LISTED_REFUSED, "listed-refused", "a listed (committed) checkpoint does not load") \
    X(NOT_DURABLE, "not-durable", "a checkpoint whose save returned is lost after a crash") \
    X(WRONG_EPOCH, "wrong-epoch", "recovery resolves to an epoch that was never committed") \
    X(NEXT_SAVE_FAILS, "next-save-fails", "what a crash left behind breaks the next save") \
    X(RECOVERY_FAILS, "recovery-fails", "opening or listing fails after a crash") \
    X(ERROR_SWALLOWED, "error-swallowed", "a failed operation did not fail the save") \
    X(FAULT_DAMAGE, "fault-damage", "a failed save damaged the previous checkpoint") \
    X(AT_REST_ACCEPTED, "at-rest-accepted", "corruption at rest was returned instead of refused") \
    X(BASELINE_FAILS, "baseline-fails", "a save or load fails without any fault") \
    X(BACKEND_CRASHED, "backend-crashed", "the backend killed its process (signal)") \
    X(BACKEND_HUNG, "backend-hung", "the backend did not finish within the time limit") \
    X(LEAK, "leak", "memory from the config's allocator was not freed") \
    X(NONDETERMINISTIC, "nondeterministic", "replaying the same save issued different operations") \
    X(FS_BYPASSED, "fs-bypassed", "a save issued no operation through cfg->fs: its I/O goes around what ckh observes and crashes") \
    X(LOAD_CONTRACT, "load-contract", "a load ignored its name list or its flags (CKH_LOAD_ALLOW_MISSING, CKH_ENOTFOUND for a missing name)") \
    X(PARTIAL_LOAD, "partial-load", "a load that failed changed the workspace (loads are all or nothing)") \
    X(EPOCH_ORDER, "epoch-order", "list_epochs is not in ascending numeric order (epochs past 9 sorted as text)") \
    X(NO_COMMON_EPOCH, "no-common-epoch", "after a crash of every node, no epoch is committed and loads on every node") \
    X(SHORT_WRITE, "short-write", "a write that accepted fewer bytes than asked was neither retried nor failed the save")

enum ckh_vuln_kind {
#define CKH__VULN_ENUM(e, s, d) CKH_VULN_##e,
    CKH_VULN_MAP(CKH__VULN_ENUM)
#undef CKH__VULN_ENUM
        CKH_VULN__COUNT
};

/* Stable name ("rename-before-data"); "?" out of range. Static storage. */
const char *ckh_vuln_name(enum ckh_vuln_kind k);

/* One finding. Plain value (fixed buffers) so that a forked child can send
 * it through a pipe. */
struct ckh_vuln {
    enum ckh_vuln_kind kind; /* diagnosis */
    char scenario[48];       /* where: "new-epoch", "replace", "retention", "two-ranks", "fault:EIO", ... */
    char symptom[320];       /* what the check saw (expected vs actual) */
    char state[1024];        /* the smallest crash state showing it */
    char step[512];          /* the protocol step responsible */
    uint64_t state_index;    /* K: the exploration's K-th state (1-based), which
                                ckh_explore_config.only_state = K checks alone;
                                0: the finding needs no crash state (whole case) */
};

/* Scenario selection (ckh_explore_config.scenarios). */
enum {
    CKH_EXPLORE_NEW_EPOCH = 0x1, /* epoch 1 committed; save epoch 2, retention removes 1 */
    CKH_EXPLORE_REPLACE = 0x2,   /* epoch 1 committed; save epoch 1 again (replace) */
    CKH_EXPLORE_TWO_RANKS = 0x4, /* two ranks save concurrently into one directory */
    CKH_EXPLORE_CRASHES = 0x3,   /* new-epoch and replace */
    CKH_EXPLORE_RETENTION = 0x8, /* epochs 1..P committed; save P+1, retention removes old ones (E8) */
    CKH_EXPLORE_NODE_LOCAL = 0x10, /* N ranks, each on its own disk, save one epoch (E9) */
    CKH_EXPLORE_LOAD_NAMES = 0x20, /* load by name list and flags (E10) */
    CKH_EXPLORE_ALL_OR_NOTHING = 0x40, /* a failed load leaves the workspace unchanged (E10) */
    CKH_EXPLORE_EPOCHS = 0x80,   /* epochs past 9: numeric order (E10) */
    CKH_EXPLORE_CONTRACT = 0xe0, /* the three above */
    CKH_EXPLORE_ALL = 0xff,
};

struct ckh_explore_config {
    const struct ckh_backend_ops *ops; /* backend under test (borrowed) */
    enum ckh_crash_model model;        /* crash model of the simulated disk */
    uint32_t sector_bytes;             /* torn-write granularity: 512 or 4096 (0: 512) */
    uint32_t nblobs;                   /* blobs per checkpoint (0: 4) */
    uint64_t blob_bytes;               /* bytes per blob (0: 3000: spans sectors, not aligned) */
    uint64_t seed;                     /* disk seed (tear points, garbage) and blob contents */
    unsigned scenarios;                /* CKH_EXPLORE_* (0: CKH_EXPLORE_ALL) */
    uint64_t max_states;               /* stop after this many crash states (0: no bound) */
    uint32_t retention_epochs;         /* P: epochs committed before the retention scenario's
                                          traced save (0: 3; at most CKH_EXPLORE_MAX_RETAINED) */
    /* --- appended --- */
    uint32_t ranks;                    /* node-local scenario: ranks (0: 2, then 4; at most
                                          CKH_EXPLORE_MAX_RANKS) */
    uint64_t only_state;               /* K > 0: check only the K-th state of the run (the
                                          replay of one finding, ckh_vuln.state_index); 0: all */
};

/* Bound of ckh_explore_config.ranks. */
#define CKH_EXPLORE_MAX_RANKS 8

/* Bound of ckh_explore_config.retention_epochs. */
#define CKH_EXPLORE_MAX_RETAINED 16

struct ckh_explore_stats {
    uint64_t trace_ops;       /* operations in the recorded traces (all scenarios) */
    uint64_t prefixes;        /* trace prefixes crashed */
    uint64_t states;          /* crash states generated */
    uint64_t states_checked;  /* distinct states (by durable digest) recovered and checked */
    uint64_t interleavings;   /* two-rank schedules run */
};

struct ckh_explore_result {
    struct ckh_explore_stats stats; /* counters */
    struct ckh_vuln *vulns;         /* findings, in discovery order (owned, malloc) */
    size_t nvulns;                  /* number of findings */
};

/* Explores every crash state of cfg's scenarios. Returns 0 (findings, if
 * any, in *out; free with ckh_explore_result_free), or CKH_EINVAL for a
 * bad config (msg says why), CKH_ENOMEM, CKH_EINTERNAL. *out is zeroed
 * first and holds nothing to free after an error. */
int ckh_explore_run(const struct ckh_explore_config *cfg, struct ckh_explore_result *out,
                    char *msg, size_t msglen);

/* Fault catalogue case families (ckh_explore_faults). */
enum ckh_fault_family {
    CKH_FAULTS_ERRNO = 0, /* each mutating op of the save fails with one errno */
    CKH_FAULTS_FSYNC,     /* each fsync fails after dropping the dirty data */
    CKH_FAULTS_AT_REST,   /* bit flips and truncations of committed files */
    CKH_FAULTS_LEAK,      /* a clean save/load/list/remove cycle frees all memory */
    CKH_FAULTS_SHORT_WRITE, /* each write of the save accepts only half its bytes */
};

/* Runs one family of the fault catalogue; err is the errno for
 * CKH_FAULTS_ERRNO (EIO, ENOSPC, EDQUOT, EACCES, EROFS, ENOENT), else
 * ignored. Same result contract as ckh_explore_run. */
int ckh_explore_faults(const struct ckh_explore_config *cfg, enum ckh_fault_family fam, int err,
                       struct ckh_explore_result *out, char *msg, size_t msglen);

/* Frees what a result holds and zeroes it. NULL is a no-op. */
void ckh_explore_result_free(struct ckh_explore_result *r);

/* True when r has a finding of kind k. */
bool ckh_explore_has(const struct ckh_explore_result *r, enum ckh_vuln_kind k);

/* Adds a finding to r unless (scenario, kind) is already reported; the
 * strings are copied (NULL state or step: empty). 0 or CKH_ENOMEM. Shared
 * by the explorer and ckh validate-backend. */
int ckh__explore_vuln_add(struct ckh_explore_result *r, enum ckh_vuln_kind kind,
                          const char *scenario, const char *symptom, const char *state,
                          const char *step);

#endif
