/* The crash explorer's private parts, shared by its files (nothing
 * outside harness/search/explore*.c includes this). The rules E1-E8 cited
 * below are specified at the top of harness/search/explore.c.
 *
 * Files, in the order the data flows:
 *   explore.c            specification, results
 *   explore_entry.c      the public API: the entry points that run the rest
 *   explore_record.c     the recording shim: numbers, records, kills and
 *                        fails the action's ops, snapshots crash points (E2)
 *   explore_run.c        scenario set-up and the traced action (E1)
 *   explore_check.c      the checks on one crash state (E4, E8)
 *   explore_diagnose.c   the diagnosis of a finding (E5) and state texts
 *   explore_states.c     crash points and choice vectors (E2, E3)
 *   explore_schedules.c  two ranks under explicit schedules (E6)
 *   explore_catalogue.c  the fault catalogue (E7)
 *   explore_nodes.c      N ranks on node-local disks, crashed together (E9)
 *   explore_contract.c   load by names and flags, all or nothing, epochs
 *                        past 9 (E10)
 */
#ifndef CKH_HARNESS_EXPLORE_INTERNAL_H
#define CKH_HARNESS_EXPLORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/backend.h"
#include "ckh/fs.h"
#include "ckh/sim.h"
#include "ckh/simfs.h"
#include "search/explore.h"

/* Finding texts are bounded buffers; cutting a long path short is intended. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define CKH__X_PREFIX "/ckpt"            /* the checkpoint directory of every scenario */
#define CKH__X_STACK_BYTES (1u << 20)    /* stack of a rank of the two-rank scenario */

/* Where the action is (struct ckh__xop.phase). */
enum { CKH__PH_OPEN = 0, CKH__PH_SAVE, CKH__PH_RETENTION, CKH__PH_CLOSE };
/* The scenarios of E1, E9 and E10 (indexes of ckh__explore_scen_names). */
enum {
    CKH__SC_NEW_EPOCH = 0, CKH__SC_REPLACE, CKH__SC_TWO_RANKS, CKH__SC_RETENTION,
    CKH__SC_NODE_LOCAL, CKH__SC_LOAD_NAMES, CKH__SC_ALL_OR_NOTHING, CKH__SC_EPOCHS,
    CKH__SC__COUNT
};

extern const char *const ckh__explore_phase_names[4];
extern const char *const ckh__explore_scen_names[CKH__SC__COUNT];

/* One recorded operation. */
struct ckh__xop {
    int kind;     /* enum ckh_op_kind */
    int rank;     /* issuing rank */
    int phase;    /* CKH__PH_* */
    int flags;    /* open flags */
    char *path;   /* path (file ops: the path the file was opened with) (owned) */
    char *path2;  /* rename destination / symlink target (owned, may be NULL) */
    uint64_t off; /* write offset / truncate length */
    uint64_t len; /* write length */
};

/* The disk as it was after the first k ops of the action (E2). */
struct ckh__xsnap {
    uint64_t k;              /* ops applied */
    struct ckh_simfs *disk;  /* clone (owned) */
};

/* One execution of an action on one disk. */
struct ckh__xrun {
    struct ckh_simfs *disk;     /* the disk (owned by the run) */
    uint64_t nops;              /* ops gated so far */
    uint64_t limit;             /* ops allowed before the kill (UINT64_MAX: none) */
    bool killed;                /* the limit was reached */
    bool record;                /* append ops to trace */
    struct ckh__xop *trace;     /* recorded ops (owned) */
    size_t ntrace;              /* number recorded */
    size_t cap;                 /* allocated */
    const struct ckh__xop *ref; /* reference trace to compare kinds with (borrowed) */
    size_t nref;                /* its length */
    bool diverged;              /* a replayed op differed from ref */
    int phase;                  /* current CKH__PH_* */
    uint64_t fail_at;           /* op index that fails (UINT64_MAX: none) */
    int fail_err;               /* positive errno, or 0 with fsync_lost */
    bool fsync_lost;            /* fail_at loses the fsync's data (S6) */
    uint64_t short_at;          /* op index of a write that accepts only half its bytes and
                                   returns that count (UINT64_MAX: none) */
    struct ckh_sim *sim;        /* two ranks: the simulator whose nodes issue the ops
                                   (each op is a scheduling point), else NULL (borrowed) */
    bool snapshot;              /* clone the disk at every crash point (E2) */
    struct ckh__xsnap *snaps;   /* the clones, k ascending (owned) */
    size_t nsnaps;              /* number taken */
    size_t snapcap;             /* allocated */
    int snap_err;               /* first failure to take one (0: none) */
};

/* The recording shim: a struct ckh_fs over the disk's direct view. */
struct ckh__xshim {
    struct ckh_fs base;     /* must be first */
    struct ckh_fs *inner;   /* the disk's direct view */
    struct ckh__xrun *run;  /* shared run state */
    int rank;               /* rank whose ops these are */
    int *phase;             /* where this rank is (CKH__PH_*): &run->phase, or the
                               rank's own when ranks run concurrently (borrowed) */
};

/* A pending op as copied before the crash. */
struct ckh__xpend {
    int kind;         /* enum ckh_op_kind */
    char *path;       /* path (owned) */
    char *path2;      /* rename destination (owned, may be NULL) */
    uint64_t off;     /* write offset */
    uint64_t len;     /* write length */
    uint32_t sectors; /* sectors a write spans */
};

/* A set of state digests (open addressing; 0 is stored as 1). */
struct ckh__xseen {
    uint64_t *v;  /* slots (power of two; owned, malloc) */
    size_t cap;   /* slots */
    size_t n;     /* used */
};

/* One exploration: config, workspaces, result. */
struct ckh__xctx {
    const struct ckh_explore_config *cfg;  /* the config (borrowed) */
    const struct ckh_backend_ops *ops;     /* backend */
    struct ckh_ws *v[4];                   /* v1, v2, v3, rank1's v2 (index 0..3) */
    uint64_t d[4];                         /* their digests */
    struct ckh_explore_result *res;        /* findings and counters */
    struct ckh__xseen seen;                /* durable digests of the states checked */
    char **pre;                            /* files under CKH__X_PREFIX after setup */
    size_t npre;                           /* number of them */
    struct ckh_ws *rv[CKH_EXPLORE_MAX_RETAINED]; /* E8: epoch e = rv[e - 1], e = 1..nret */
    uint64_t rd[CKH_EXPLORE_MAX_RETAINED]; /* their digests */
    int64_t nret;                          /* P: epochs committed before the traced save */
    int64_t *c0;                           /* E8: epochs listed after setup (owned, malloc) */
    size_t nc0;                            /* number of them: the count the backend keeps */
    uint64_t k;                            /* states generated so far: the last one's
                                              index K (see ckh_explore_config.only_state) */
    char msg[256];                         /* internal error text */
};

/* ---- explore.c ---- */
/* ckh__explore_vuln_add: search/explore.h */
/* True once the config's max_states bound is reached. */
bool ckh__explore_bounded(const struct ckh__xctx *x);
/* Counts one more generated state (x->k and stats.states) and tells
 * whether it is to be checked: always, unless the config replays another
 * single state (only_state). */
bool ckh__explore_next_state(struct ckh__xctx *x);
/* Adds a finding (ckh__explore_vuln_add) whose state is the index k (0:
 * none, the whole case). */
int ckh__explore_report(struct ckh__xctx *x, enum ckh_vuln_kind kind, const char *scenario,
                        const char *symptom, const char *state, const char *step, uint64_t k);
/* FS_BYPASSED when rank's save (rank < 0: any) issued no op of the trace
 * t[0..n) (the backend's I/O went around cfg->fs): 1 with the finding
 * added, 0 when it did issue some, or CKH_ENOMEM. */
int ckh__explore_bypassed(struct ckh__xctx *x, const char *scenario, const struct ckh__xop *t,
                          size_t n, int rank, const char *node);

/* ---- explore_record.c ---- */
/* Whether recorded op o can change the disk (a crash point follows it). */
bool ckh__explore_op_changes(const struct ckh__xop *o);
/* One line describing o ("pwrite /ckpt/x [0,+4096)") into buf (n bytes). */
void ckh__explore_op_desc(const struct ckh__xop *o, char *buf, size_t n);
/* A run with no limit, no fault, nothing recorded and no disk. */
void ckh__explore_run_init(struct ckh__xrun *r);
/* Appends a clone of r->disk as the state after k ops (failure in r->snap_err). */
void ckh__explore_snap_take(struct ckh__xrun *r, uint64_t k);
/* Frees the snapshots / the recorded trace of r (the disk stays). */
void ckh__explore_run_free_snaps(struct ckh__xrun *r);
void ckh__explore_run_free_trace(struct ckh__xrun *r);
/* Makes s a shim over r->disk's direct view whose ops count as rank's. */
void ckh__explore_shim_init(struct ckh__xshim *s, struct ckh__xrun *r, int rank);

/* ---- explore_run.c ---- */
/* The config a backend gets in every scenario: fs, allocator (NULL: the
 * default), prefix CKH__X_PREFIX. */
void ckh__explore_backend_cfg(struct ckh_backend_config *c, struct ckh_fs *fs, struct ckh_alloc *a);
/* A fresh disk of the config's model with CKH__X_PREFIX, all durable.
 * *out is the caller's (ckh_simfs_destroy). */
int ckh__explore_disk_new(struct ckh__xctx *x, struct ckh_simfs **out);
/* A stored workspace of nblobs blobs of bytes each, contents from seed. */
int ckh__explore_ws_make(uint64_t seed, uint32_t nblobs, uint64_t bytes, struct ckh_ws **out);
/* A stored workspace of the config's shape whose contents derive from
 * the seed and salt (v1..v3 are salts 1..3). */
int ckh__explore_ws_for(const struct ckh__xctx *x, uint64_t salt, struct ckh_ws **out);
/* Fresh disk with the scenario's committed starting point (E1). A backend
 * failure returns the backend's code with *out NULL and x->msg set. */
int ckh__explore_setup(struct ckh__xctx *x, int scen, struct ckh_simfs **out);
/* Runs the traced action of scen on r->disk. *save_rc: the save's result
 * (CKH_EKILLED when killed before it returned); *save_end: ops issued when
 * the save returned 0, else UINT64_MAX. */
void ckh__explore_act(struct ckh__xctx *x, int scen, struct ckh__xrun *r, int *save_rc,
                      uint64_t *save_end);
/* Appends the files under dir (recursively) to *v (malloc'd strings). */
int ckh__explore_collect_files(struct ckh_fs *fs, const char *dir, char ***v, size_t *n);
/* Frees n strings and the vector. */
void ckh__explore_free_strv(char **v, size_t n);
/* Whether path was a file under the prefix after setup. */
bool ckh__explore_was_pre(const struct ckh__xctx *x, const char *path);
/* db_name of node's epoch, from a throwaway instance on a scratch disk. */
int ckh__explore_final_name(struct ckh__xctx *x, const char *node, int64_t epoch, char *buf,
                            size_t n);

/* ---- explore_check.c ---- */
/* Loads node's epoch into a fresh workspace: 0 and its digest, or the code
 * (with its text in msg when msg is not NULL). */
int ckh__explore_load_digest(struct ckh_backend *b, const char *node, int64_t epoch, uint64_t *dg,
                             char *msg, size_t msglen);
/* E4 (check_state) and E8 (check_retention) on disk d. -1 when the state is
 * fine, else the symptom kind with its text in sym; *epoch_out: the epoch
 * concerned (-1: none). */
int ckh__explore_check_state(struct ckh__xctx *x, int scen, struct ckh_simfs *d,
                             bool save_returned, char *sym, size_t n, int64_t *epoch_out);
int ckh__explore_check_retention(struct ckh__xctx *x, struct ckh_simfs *d, bool save_returned,
                                 char *sym, size_t n, int64_t *epoch_out);

/* ---- explore_diagnose.c ---- */
/* One crash state: the trace, the crash point and how its pending ops
 * were resolved. */
struct ckh__xcrash {
    const struct ckh__xop *t;            /* the action's trace (borrowed) */
    size_t k;                            /* ops before the crash */
    size_t total;                        /* ops of the whole action */
    const struct ckh__xpend *p;          /* pending ops at the crash point */
    const enum ckh_crash_choice *ch;     /* what became of each */
    size_t n;                            /* number of pending ops */
    bool returned;                       /* the save had returned 0 before op k */
    const char *node;                    /* the node whose files these are ("rank0") */
    const char *context;                 /* where the program was ("rank_0 at step 6"),
                                            in place of the save's state (NULL: the save's) */
};
/* E5: refines kind (of the symptom at epoch) into a diagnosis; writes the
 * responsible step into step (sn bytes). */
int ckh__explore_diagnose(struct ckh__xctx *x, const struct ckh__xcrash *c, int kind,
                          int64_t epoch, char *step, size_t sn);
/* The crash state as one line ("power loss after 3 of 9 ops ..."). */
void ckh__explore_state_desc(const struct ckh__xcrash *c, char *buf, size_t bn);

/* ---- explore_order.c ---- */
#define CKH__XORDER_MAX 3 /* the highest priority */
/* The check priority (0 .. CKH__XORDER_MAX, highest checked first) of
 * the crash state after ops[0..k), its n pending operations resolved by
 * ch: after a commit point, and with its pending operations reordered or
 * torn (explore_order.c says why these). */
int ckh__xorder_priority(const struct ckh__xop *ops, size_t k, const enum ckh_crash_choice *ch, size_t n);
/* *order (malloc, the caller's) gets 0..n-1 by prio[i] (highest first),
 * then i: the check order. 0 or CKH_ENOMEM. */
int ckh__xorder_sort(const int *prio, size_t n, size_t **order);

/* ---- explore_states.c ---- */
/* Inserts dg into s: true when it was new (also when memory ran out:
 * the state is then checked again rather than skipped). */
bool ckh__explore_seen_insert(struct ckh__xseen *s, uint64_t dg);
/* Fills ch with the v-th choice vector (E3) for the n pending ops p: all
 * applied, all dropped, each one dropped, each prefix kept, each write
 * torn to zeros then garbage. False past the last. */
bool ckh__explore_vector(size_t v, const struct ckh__xpend *p, size_t n, enum ckh_crash_choice *ch);
/* Copies d's pending ops into *out (n of them; free with pend_free). */
int ckh__explore_pend_copy(struct ckh_simfs *d, struct ckh__xpend **out, size_t *n);
/* The same, of node's pending ops alone (node < 0: every node's), in
 * ckh_simfs_pending_get order. */
int ckh__explore_pend_copy_node(struct ckh_simfs *d, int node, struct ckh__xpend **out, size_t *n);
void ckh__explore_pend_free(struct ckh__xpend *p, size_t n);
/* E2-E5 on one scenario (not two-ranks). */
int ckh__explore_scenario(struct ckh__xctx *x, int scen);

/* ---- explore_schedules.c ---- */
/* E6: the two-rank schedules. */
int ckh__explore_two_ranks(struct ckh__xctx *x);

/* ---- explore_nodes.c ---- */
/* E9: N ranks on node-local disks (N from the config, else 2 then 4). */
int ckh__explore_node_local(struct ckh__xctx *x);

/* ---- explore_contract.c ---- */
/* E10: one of CKH__SC_LOAD_NAMES, CKH__SC_ALL_OR_NOTHING, CKH__SC_EPOCHS. */
int ckh__explore_contract(struct ckh__xctx *x, int scen);

/* ---- explore_catalogue.c ---- */
/* E7: the families of the fault catalogue. */
int ckh__explore_faults_leak(struct ckh__xctx *x);
int ckh__explore_faults_inject(struct ckh__xctx *x, enum ckh_fault_family fam, int err);
int ckh__explore_faults_at_rest(struct ckh__xctx *x);
int ckh__explore_faults_short_write(struct ckh__xctx *x);

#endif
