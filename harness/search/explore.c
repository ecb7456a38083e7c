/* The crash-state explorer and the fault catalogue for checkpoint backends.
 *
 * SPECIFICATION (tests/test_explore.c and docs/BACKENDS.md cite the rules)
 *
 * E1. Scenarios. One node "rank0" saves into /ckpt of a simulated disk
 *     (crash model and sector size from the config). Blobs are stored
 *     (not described) i64/u8 tensors whose bytes derive from the seed;
 *     v1, v2, v3 are three different workspaces.
 *     - new-epoch: setup saves epoch 1 = v1 and makes the disk durable;
 *       the traced action saves epoch 2 = v2, then retention removes
 *       epoch 1 (when the backend has remove).
 *     - replace: setup as above; the traced action saves epoch 1 = v2.
 *     - two-ranks: "rank0" and "rank1" save epoch 2 concurrently into the
 *       same directory, interleaved op by op (E6).
 *     - retention: setup saves epochs 1..P (P = retention_epochs, 0: 3;
 *       epoch e = its own workspace), each made durable; the traced action
 *       saves epoch P+1 = v2, then, when the backend has remove, removes
 *       the oldest epoch listed after setup (checked by E8).
 *     Setup runs against the disk directly; the action runs through a
 *     recording shim (struct ckh_fs) that numbers every operation.
 *
 * E2. Crash points. For each prefix length k of the action's trace (k = 0
 *     .. N, skipping k whose last op changes nothing: reads, stat, close,
 *     open without create/truncate), the disk as it was after ops [0, k).
 *     The action runs once; the shim snapshots the disk (ckh_simfs_clone)
 *     before each op that follows a crash point, and after the last op.
 *     That equals replaying the action on a fresh disk with op k and
 *     every later one refused, as ops refused after a kill change
 *     nothing, at the cost of one run instead of N. A second full run
 *     must issue the same op kinds as the recorded trace (else
 *     NONDETERMINISTIC).
 *
 * E3. Crash states. The disk's n pending ops are resolved by a power loss
 *     (ckh_simfs_crash, node -1, on a fresh clone of the crash point's
 *     snapshot for each vector) with each of these choice vectors:
 *     all applied (a process kill: the page cache survives); all dropped;
 *     each single op dropped while every other persists (reordering
 *     within a sync window; directory ops reorder only as the model lets
 *     them, the disk enforces dependencies); each prefix of the pending
 *     ops applied and the rest dropped; each write torn at its sector
 *     boundary with zeros and with garbage, the others applied. A state
 *     is identified by the digest of its durable tree; each distinct
 *     state is checked once. Enumeration goes by k ascending, then in the
 *     order above, so the first state that shows a finding is the
 *     smallest one.
 *
 * E4. Checks on a state (recovery is: open, list_epochs, load the latest):
 *     the latest listed epoch is one that was committed (else
 *     WRONG_EPOCH); something is listed (NO_CHECKPOINT); it loads
 *     (LISTED_REFUSED); the data equals the version saved under that
 *     epoch bit-exact by ckh_ws_digest (CORRUPT_RETURNED); once the save
 *     had returned 0 it is the new version (NOT_DURABLE); a next save of
 *     epoch 3 = v3 succeeds and loads back (NEXT_SAVE_FAILS).
 *
 * E5. Diagnosis: the symptom is refined into the protocol step that
 *     allowed it, first rule that matches:
 *     a. a save op wrote, truncated or O_TRUNC-opened a file that held a
 *        committed checkpoint before the save: OVERWRITE_IN_PLACE;
 *     b. nothing survives and a save op unlinked a file that existed
 *        before the save: RETENTION_BEFORE_COMMIT;
 *     c. a write/truncate was dropped or torn while a rename of that same
 *        file persisted: RENAME_BEFORE_DATA (no fsync before the rename);
 *     d. a write/truncate was dropped or torn while a later entry op on
 *        another name (rename preferred) persisted: POINTER_BEFORE_DATA;
 *     e. the dropped/torn data belongs to the file the refused epoch is
 *        stored in (db_name), created by the save: OVERWRITE_IN_PLACE
 *        (written under its final name);
 *     f. NOT_DURABLE with a dropped entry op: NO_DIR_FSYNC;
 *     g. a rename of the save persisted while an op that creates or fills
 *        a file of the save had not even been issued (the pointer moved
 *        to data not yet written): POINTER_BEFORE_DATA;
 *     otherwise the symptom stays. One finding per (scenario, diagnosis).
 *     Rule b also applies to RECOVERY_FAILS (a pointer left naming a
 *     folder whose commit record retention already deleted) and to
 *     TOO_FEW_CHECKPOINTS (E8).
 *
 * E6. Two ranks: schedules "rank0 runs s ops, then rank1 to its end, then
 *     rank0" for every s, and strict alternation. No crash: both saves
 *     must return 0 and each rank must load its own data back. A failure
 *     where both ranks created the same path is SHARED_TEMP_NAME.
 *     Ranks run as coroutines (sim/coro.h); the shim yields before each op.
 *
 * E7. Fault catalogue (ckh_explore_faults), on new-epoch: ERRNO: each op
 *     of the action that changes the disk, or syncs, or opens, fails once
 *     with -err. FSYNC: each fsync/fdatasync loses the file's dirty data
 *     and fails with -EIO (simfs rule S6). Then: a save that returned 0
 *     must survive a power loss that drops every pending op
 *     (ERROR_SWALLOWED); a save that failed must leave a loadable epoch 1
 *     = v1 or epoch 2 = v2 (FAULT_DAMAGE) and a next save must succeed.
 *     AT_REST: after setup, every file under /ckpt gets single bit flips
 *     (first, quarter, middle, three quarters, last byte) and truncations
 *     (0, half, size-1), each on a fresh disk; loading epoch 1 must fail
 *     or return v1 exactly (AT_REST_ACCEPTED). LEAK: open, save, list,
 *     load, remove, close with a counting allocator must free everything.
 *
 *
 * E8. Retention (the retention scenario; its checks replace E4's). The
 *     epochs list_epochs reports after setup, C0, are what the backend
 *     promises to keep: with its own keep-last-N retention inside save
 *     that is min(N, P) epochs, without (retention by remove, or none) all
 *     P. On every crash state, in this order: something is listed
 *     (NO_CHECKPOINT); every listed epoch is in C0 or is P+1 (WRONG_EPOCH);
 *     every listed epoch loads, newest first (LISTED_REFUSED), bit-exact
 *     to the version saved under it (CORRUPT_RETURNED); at least |C0|
 *     epochs are listed (TOO_FEW_CHECKPOINTS: retention must delete only
 *     after the new checkpoint is committed, so the count goes |C0|,
 *     |C0|+1, back to |C0|, and never below); once the save had returned
 *     0 the latest is P+1 (NOT_DURABLE); a next save of epoch P+2 = v3
 *     succeeds and loads back (NEXT_SAVE_FAILS). Diagnosis as E5. The
 *     rule holds for backends without retention in save (the count only
 *     grows until the harness's remove) and for keep-last-N ones alike.
 *
 * Map: results | trace and shim | scenario runs | checks and diagnosis |
 * crash exploration | two ranks | fault catalogue | public API.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "ckh/sim.h"
#include "coro.h"
#include "search/explore.h"

/* Finding texts are bounded buffers; cutting a long path short is intended. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define X_PREFIX "/ckpt"
#define X_STACK_BYTES (1u << 20)

enum { PH_OPEN = 0, PH_SAVE, PH_RETENTION, PH_CLOSE };
static const char *const phase_names[] = {"open", "save", "retention", "close"};

/* ----------------------------------------------------------------- results */

static const char *const vuln_names[] = {
#define CKH__VULN_NAME(e, s, d) s,
    CKH_VULN_MAP(CKH__VULN_NAME)
#undef CKH__VULN_NAME
};
static const char *const vuln_descs[] = {
#define CKH__VULN_DESC(e, s, d) d,
    CKH_VULN_MAP(CKH__VULN_DESC)
#undef CKH__VULN_DESC
};

const char *ckh_vuln_name(enum ckh_vuln_kind k)
{
    return (unsigned)k < CKH_VULN__COUNT ? vuln_names[k] : "?";
}

const char *ckh_vuln_describe(enum ckh_vuln_kind k)
{
    return (unsigned)k < CKH_VULN__COUNT ? vuln_descs[k] : "?";
}

void ckh_explore_result_free(struct ckh_explore_result *r)
{
    if (!r)
        return;
    free(r->vulns);
    memset(r, 0, sizeof(*r));
}

bool ckh_explore_has(const struct ckh_explore_result *r, enum ckh_vuln_kind k)
{
    for (size_t i = 0; r && i < r->nvulns; i++)
        if (r->vulns[i].kind == k)
            return true;
    return false;
}

/* Adds a finding unless (scenario, kind) is already reported. */
static int vuln_add(struct ckh_explore_result *r, enum ckh_vuln_kind kind, const char *scenario,
                    const char *symptom, const char *state, const char *step)
{
    for (size_t i = 0; i < r->nvulns; i++)
        if (r->vulns[i].kind == kind && strcmp(r->vulns[i].scenario, scenario) == 0)
            return 0;
    struct ckh_vuln *v = realloc(r->vulns, (r->nvulns + 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    r->vulns = v;
    v = &r->vulns[r->nvulns++];
    memset(v, 0, sizeof(*v));
    v->kind = kind;
    snprintf(v->scenario, sizeof(v->scenario), "%s", scenario);
    snprintf(v->symptom, sizeof(v->symptom), "%s", symptom ? symptom : "");
    snprintf(v->state, sizeof(v->state), "%s", state ? state : "");
    snprintf(v->step, sizeof(v->step), "%s", step ? step : "");
    return 0;
}

/* -------------------------------------------------------- trace and shim */

/* One recorded operation. */
struct xop {
    int kind;     /* enum ckh_op_kind */
    int rank;     /* issuing rank */
    int phase;    /* PH_* */
    int flags;    /* open flags */
    char *path;   /* path (file ops: the path the file was opened with) (owned) */
    char *path2;  /* rename destination / symlink target (owned, may be NULL) */
    uint64_t off; /* write offset / truncate length */
    uint64_t len; /* write length */
};

struct xrank;

/* One execution of an action on one disk. */
struct xrun {
    struct ckh_simfs *disk;     /* the disk (owned by the run) */
    uint64_t nops;              /* ops gated so far */
    uint64_t limit;             /* ops allowed before the kill (UINT64_MAX: none) */
    bool killed;                /* the limit was reached */
    bool record;                /* append ops to trace */
    struct xop *trace;          /* recorded ops (owned) */
    size_t ntrace;              /* number recorded */
    size_t cap;                 /* allocated */
    const struct xop *ref;      /* reference trace to compare kinds with (borrowed) */
    size_t nref;                /* its length */
    bool diverged;              /* a replayed op differed from ref */
    int phase;                  /* current PH_* */
    uint64_t fail_at;           /* op index that fails (UINT64_MAX: none) */
    int fail_err;               /* positive errno, or 0 with fsync_lost */
    bool fsync_lost;            /* fail_at loses the fsync's data (S6) */
    struct ckh__coro *host;     /* two ranks: the host context to yield to */
    bool snapshot;              /* clone the disk at every crash point (E2) */
    struct xsnap *snaps;        /* the clones, k ascending (owned) */
    size_t nsnaps;              /* number taken */
    size_t snapcap;             /* allocated */
    int snap_err;               /* first failure to take one (0: none) */
};

/* The disk as it was after the first k ops of the action (E2). */
struct xsnap {
    uint64_t k;              /* ops applied */
    struct ckh_simfs *disk;  /* clone (owned) */
};

struct xshim {
    struct ckh_fs base;   /* must be first */
    struct ckh_fs *inner; /* the disk's direct view */
    struct xrun *run;     /* shared run state */
    int rank;             /* rank whose ops these are */
    struct xrank *co;     /* coroutine of the rank, or NULL */
};

struct xfile {
    struct ckh_file base;   /* must be first */
    struct ckh_file *inner; /* the disk's file */
    char *path;             /* path it was opened with (owned) */
};

/* A rank of the two-rank scenario. */
struct xrank {
    struct ckh__coro co;        /* its coroutine */
    struct ckh__coro *host;     /* host context */
    struct xshim shim;          /* its filesystem */
    const struct ckh_backend_ops *ops; /* backend */
    const char *node;           /* node name */
    const struct ckh_ws *ws;    /* what it saves */
    int rc;                     /* save result */
    bool done;                  /* finished (stack may be freed) */
    bool started;               /* switched to at least once */
};

static bool op_changes(const struct xop *o)
{
    switch (o->kind) {
    case CKH_OP_OPEN:
        return (o->flags & (CKH_O_CREAT | CKH_O_TRUNC)) != 0;
    case CKH_OP_WRITE: case CKH_OP_PWRITE: case CKH_OP_FTRUNCATE: case CKH_OP_RENAME:
    case CKH_OP_UNLINK: case CKH_OP_MKDIR: case CKH_OP_RMDIR: case CKH_OP_SYMLINK:
    case CKH_OP_FSYNC: case CKH_OP_FDATASYNC: case CKH_OP_FSYNC_DIR:
        return true;
    default:
        return false;
    }
}

static void op_desc(const struct xop *o, char *buf, size_t n)
{
    const char *name = ckh_op_name((enum ckh_op_kind)o->kind);
    switch (o->kind) {
    case CKH_OP_OPEN:
        snprintf(buf, n, "open %s%s%s%s", o->path, o->flags & CKH_O_CREAT ? " (create" : " (",
                 o->flags & CKH_O_TRUNC ? ",trunc" : "", o->flags & CKH_O_EXCL ? ",excl)" : ")");
        break;
    case CKH_OP_WRITE: case CKH_OP_PWRITE:
        snprintf(buf, n, "%s %s [%" PRIu64 ",+%" PRIu64 ")", name, o->path, o->off, o->len);
        break;
    case CKH_OP_FTRUNCATE:
        snprintf(buf, n, "ftruncate %s to %" PRIu64, o->path, o->off);
        break;
    case CKH_OP_RENAME: case CKH_OP_SYMLINK:
        snprintf(buf, n, "%s %s -> %s", name, o->path, o->path2 ? o->path2 : "?");
        break;
    default:
        snprintf(buf, n, "%s %s", name, o->path ? o->path : "");
    }
}

/* Appends a clone of r->disk as the state after k ops. */
static void snap_take(struct xrun *r, uint64_t k)
{
    if (r->snap_err)
        return;
    if (r->nsnaps == r->snapcap) {
        size_t cap = r->snapcap ? r->snapcap * 2 : 64;
        struct xsnap *v = realloc(r->snaps, cap * sizeof(*v));
        if (!v) {
            r->snap_err = CKH_ENOMEM;
            return;
        }
        r->snaps = v;
        r->snapcap = cap;
    }
    struct xsnap *sn = &r->snaps[r->nsnaps];
    sn->k = k;
    if ((r->snap_err = ckh_simfs_clone(r->disk, &sn->disk)) == 0)
        r->nsnaps++;
}

static void run_free_snaps(struct xrun *r)
{
    for (size_t i = 0; i < r->nsnaps; i++)
        ckh_simfs_destroy(r->snaps[i].disk);
    free(r->snaps);
    r->snaps = NULL;
    r->nsnaps = r->snapcap = 0;
}

static void run_free_trace(struct xrun *r)
{
    for (size_t i = 0; i < r->ntrace; i++) {
        free(r->trace[i].path);
        free(r->trace[i].path2);
    }
    free(r->trace);
    r->trace = NULL;
    r->ntrace = r->cap = 0;
}

/* Gate of every op: yield (two ranks), count, record, kill, inject.
 * Returns 0 to proceed, or the code the op returns without running. */
static int gate(struct xshim *s, int kind, const char *path, const char *path2, int flags,
                uint64_t off, uint64_t len)
{
    struct xrun *r = s->run;
    if (s->co && r->host)
        ckh__coro_switch(&s->co->co, r->host, false);
    if (r->killed)
        return CKH_EKILLED;
    if (r->nops >= r->limit) {
        r->killed = true;
        return CKH_EKILLED;
    }
    uint64_t idx = r->nops;
    /* E2: a crash point before op idx unless op idx-1 changed nothing. */
    if (r->snapshot && (idx == 0 || op_changes(&r->trace[idx - 1])))
        snap_take(r, idx);
    r->nops++;
    if (r->ref && (idx >= r->nref || r->ref[idx].kind != kind))
        r->diverged = true;
    if (r->record) {
        if (r->ntrace == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 64;
            struct xop *t = realloc(r->trace, cap * sizeof(*t));
            if (!t)
                return CKH_ENOMEM;
            r->trace = t;
            r->cap = cap;
        }
        struct xop *o = &r->trace[r->ntrace];
        memset(o, 0, sizeof(*o));
        o->kind = kind;
        o->rank = s->rank;
        o->phase = r->phase;
        o->flags = flags;
        o->off = off;
        o->len = len;
        o->path = strdup(path ? path : "");
        o->path2 = path2 ? strdup(path2) : NULL;
        if (!o->path || (path2 && !o->path2)) {
            free(o->path);
            free(o->path2);
            return CKH_ENOMEM;
        }
        r->ntrace++;
    }
    if (idx == r->fail_at) {
        if (r->fsync_lost) {
            struct ckh_fault_action act;
            memset(&act, 0, sizeof(act));
            act.kind = CKH_FAULT_FSYNC_LOST;
            ckh_simfs_fault_next(r->disk, kind, NULL, &act);
            return 0;
        }
        return -r->fail_err;
    }
    return 0;
}

#define SHIM(fs) ((struct xshim *)(fs))
#define XF(f) ((struct xfile *)(f))
#define XS(f) SHIM((f)->fs)

static int sh_open(struct ckh_fs *fs, const char *path, int flags, struct ckh_file **out)
{
    int rc = gate(SHIM(fs), CKH_OP_OPEN, path, NULL, flags, 0, 0);
    if (rc)
        return rc;
    struct xfile *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return CKH_ENOMEM;
    }
    if ((rc = ckh_fs_open(SHIM(fs)->inner, path, flags, &f->inner)) != 0) {
        free(f->path);
        free(f);
        return rc;
    }
    f->base.fs = fs;
    *out = &f->base;
    return 0;
}

static int64_t sh_read(struct ckh_file *f, void *buf, size_t n)
{
    int rc = gate(XS(f), CKH_OP_READ, XF(f)->path, NULL, 0, 0, n);
    return rc ? rc : ckh_file_read(XF(f)->inner, buf, n);
}

static int64_t sh_pread(struct ckh_file *f, void *buf, size_t n, uint64_t off)
{
    int rc = gate(XS(f), CKH_OP_PREAD, XF(f)->path, NULL, 0, off, n);
    return rc ? rc : ckh_file_pread(XF(f)->inner, buf, n, off);
}

static int64_t sh_write(struct ckh_file *f, const void *buf, size_t n)
{
    int rc = gate(XS(f), CKH_OP_WRITE, XF(f)->path, NULL, 0, 0, n);
    return rc ? rc : ckh_file_write(XF(f)->inner, buf, n);
}

static int64_t sh_pwrite(struct ckh_file *f, const void *buf, size_t n, uint64_t off)
{
    int rc = gate(XS(f), CKH_OP_PWRITE, XF(f)->path, NULL, 0, off, n);
    return rc ? rc : ckh_file_pwrite(XF(f)->inner, buf, n, off);
}

static int64_t sh_pwrite_gen(struct ckh_file *f, const struct ckh_gen *g, uint64_t n, uint64_t off)
{
    int rc = gate(XS(f), CKH_OP_PWRITE, XF(f)->path, NULL, 0, off, n);
    return rc ? rc : ckh_file_pwrite_gen(XF(f)->inner, g, n, off);
}

static int sh_fsync(struct ckh_file *f)
{
    int rc = gate(XS(f), CKH_OP_FSYNC, XF(f)->path, NULL, 0, 0, 0);
    return rc ? rc : ckh_file_fsync(XF(f)->inner);
}

static int sh_fdatasync(struct ckh_file *f)
{
    int rc = gate(XS(f), CKH_OP_FDATASYNC, XF(f)->path, NULL, 0, 0, 0);
    return rc ? rc : ckh_file_fdatasync(XF(f)->inner);
}

static int sh_ftruncate(struct ckh_file *f, uint64_t len)
{
    int rc = gate(XS(f), CKH_OP_FTRUNCATE, XF(f)->path, NULL, 0, len, 0);
    return rc ? rc : ckh_file_ftruncate(XF(f)->inner, len);
}

/* Close always releases the inner file: it changes nothing on the disk. */
static int sh_close(struct ckh_file *f)
{
    int rc = gate(XS(f), CKH_OP_CLOSE, XF(f)->path, NULL, 0, 0, 0);
    int rc2 = ckh_file_close(XF(f)->inner);
    free(XF(f)->path);
    free(f);
    return rc ? rc : rc2;
}

static int sh_rename(struct ckh_fs *fs, const char *from, const char *to)
{
    int rc = gate(SHIM(fs), CKH_OP_RENAME, from, to, 0, 0, 0);
    return rc ? rc : ckh_fs_rename(SHIM(fs)->inner, from, to);
}

static int sh_unlink(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_UNLINK, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_unlink(SHIM(fs)->inner, path);
}

static int sh_mkdir(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_MKDIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_mkdir(SHIM(fs)->inner, path);
}

static int sh_rmdir(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_RMDIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_rmdir(SHIM(fs)->inner, path);
}

static int sh_listdir(struct ckh_fs *fs, const char *path, struct ckh_listing *out)
{
    int rc = gate(SHIM(fs), CKH_OP_LISTDIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_listdir(SHIM(fs)->inner, path, out);
}

static int sh_stat(struct ckh_fs *fs, const char *path, struct ckh_stat *out)
{
    int rc = gate(SHIM(fs), CKH_OP_STAT, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_stat(SHIM(fs)->inner, path, out);
}

static int sh_symlink(struct ckh_fs *fs, const char *target, const char *linkpath)
{
    int rc = gate(SHIM(fs), CKH_OP_SYMLINK, linkpath, target, 0, 0, 0);
    return rc ? rc : ckh_fs_symlink(SHIM(fs)->inner, target, linkpath);
}

static int64_t sh_readlink(struct ckh_fs *fs, const char *path, char *buf, size_t bufsize)
{
    int rc = gate(SHIM(fs), CKH_OP_READLINK, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_readlink(SHIM(fs)->inner, path, buf, bufsize);
}

static int sh_fsync_dir(struct ckh_fs *fs, const char *path)
{
    int rc = gate(SHIM(fs), CKH_OP_FSYNC_DIR, path, NULL, 0, 0, 0);
    return rc ? rc : ckh_fs_fsync_dir(SHIM(fs)->inner, path);
}

static const struct ckh_fs_ops shim_ops = {
    .version = 1,
    .open = sh_open,
    .read = sh_read,
    .pread = sh_pread,
    .write = sh_write,
    .pwrite = sh_pwrite,
    .pwrite_gen = sh_pwrite_gen,
    .fsync = sh_fsync,
    .fdatasync = sh_fdatasync,
    .ftruncate = sh_ftruncate,
    .close = sh_close,
    .rename = sh_rename,
    .unlink = sh_unlink,
    .mkdir = sh_mkdir,
    .rmdir = sh_rmdir,
    .listdir = sh_listdir,
    .stat = sh_stat,
    .symlink = sh_symlink,
    .readlink = sh_readlink,
    .fsync_dir = sh_fsync_dir,
};

static void shim_init(struct xshim *s, struct xrun *r, int rank)
{
    memset(s, 0, sizeof(*s));
    s->base.ops = &shim_ops;
    s->inner = ckh_simfs_fs(r->disk);
    s->run = r;
    s->rank = rank;
}

/* ---------------------------------------------------------- scenario runs */

enum { SC_NEW_EPOCH = 0, SC_REPLACE, SC_TWO_RANKS, SC_RETENTION };
static const char *const scen_names[] = {"new-epoch", "replace", "two-ranks", "retention"};

/* One exploration: config, workspaces, result. */
struct xctx {
    const struct ckh_explore_config *cfg;  /* the config (borrowed) */
    const struct ckh_backend_ops *ops;     /* backend */
    struct ckh_ws *v[4];                   /* v1, v2, v3, rank1's v2 (index 0..3) */
    uint64_t d[4];                         /* their digests */
    struct ckh_explore_result *res;        /* findings and counters */
    uint64_t *seen;                        /* open-addressing set of state digests */
    size_t seen_cap;                       /* slots (power of two) */
    size_t seen_n;                         /* used slots */
    char **pre;                            /* files under X_PREFIX after setup */
    size_t npre;                           /* number of them */
    struct ckh_ws *rv[CKH_EXPLORE_MAX_RETAINED]; /* E8: epoch e = rv[e - 1], e = 1..nret */
    uint64_t rd[CKH_EXPLORE_MAX_RETAINED]; /* their digests */
    int64_t nret;                          /* P: epochs committed before the traced save */
    int64_t *c0;                           /* E8: epochs listed after setup (owned, malloc) */
    size_t nc0;                            /* number of them: the count the backend keeps */
    char msg[256];                         /* internal error text */
};

static int ws_make(uint64_t seed, uint32_t nblobs, uint64_t bytes, struct ckh_ws **out)
{
    struct ckh_ws *ws;
    int rc = ckh_ws_create(NULL, &ws);
    if (rc)
        return rc;
    unsigned char *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        ckh_ws_destroy(ws);
        return CKH_ENOMEM;
    }
    for (uint32_t i = 0; i < nblobs && rc == 0; i++) {
        char name[32];
        struct ckh_gen g = {seed, i, 0};
        ckh_gen_fill(&g, 0, buf, bytes);
        snprintf(name, sizeof(name), "param.%02u", i);
        uint64_t shape[1] = {bytes};
        rc = ckh_ws_set(ws, name, CKH_DT_U8, 1, shape, buf);
    }
    if (rc == 0)
        rc = ckh_ws_set_i64(ws, "step", (int64_t)(seed & 0xffff));
    free(buf);
    if (rc) {
        ckh_ws_destroy(ws);
        return rc;
    }
    *out = ws;
    return 0;
}

static void backend_cfg(struct ckh_backend_config *c, struct ckh_fs *fs, struct ckh_alloc *a)
{
    memset(c, 0, sizeof(*c));
    c->fs = fs;
    c->alloc = a;
    c->prefix = X_PREFIX;
}

static int disk_new(struct xctx *x, struct ckh_simfs **out)
{
    struct ckh_simfs_config dc;
    memset(&dc, 0, sizeof(dc));
    dc.name = "explore";
    dc.model = x->cfg->model;
    dc.sector_bytes = x->cfg->sector_bytes ? x->cfg->sector_bytes : 512;
    dc.seed = x->cfg->seed;
    int rc = ckh_simfs_create(&dc, out);
    if (rc)
        return rc;
    if ((rc = ckh_fs_mkdirs(ckh_simfs_fs(*out), X_PREFIX)) != 0) {
        ckh_simfs_destroy(*out);
        return rc;
    }
    ckh_simfs_sync_all(*out);
    return 0;
}

/* Fresh disk with the scenario's committed starting point (E1). On a
 * backend failure returns CKH_EINTERNAL-free code > ... : the backend's
 * code, with the message in x->msg. */
static int setup(struct xctx *x, int scen, struct ckh_simfs **out)
{
    struct ckh_backend *b = NULL;
    struct ckh_backend_config c;
    int rc = disk_new(x, out);
    if (rc)
        return rc;
    if (scen == SC_TWO_RANKS)
        return 0;
    backend_cfg(&c, ckh_simfs_fs(*out), NULL);
    if ((rc = x->ops->open(&c, &b)) != 0) {
        snprintf(x->msg, sizeof(x->msg), "open failed without faults: %s", ckh_err_name(rc));
        goto out_destroy;
    }
    int64_t last = scen == SC_RETENTION ? x->nret : 1;
    for (int64_t e = 1; e <= last; e++) {
        const struct ckh_ws *ws = scen == SC_RETENTION ? x->rv[e - 1] : x->v[0];
        if ((rc = ckh_backend_save(b, "rank0", e, ws, NULL, 0)) != 0) {
            snprintf(x->msg, sizeof(x->msg), "save of epoch %" PRId64 " failed without faults: "
                     "%s: %s", e, ckh_err_name(rc), ckh_backend_errmsg(b));
            ckh_backend_close(b);
            goto out_destroy;
        }
        ckh_simfs_sync_all(*out);
    }
    if (scen == SC_RETENTION) {
        /* E8: what the backend lists now is what it promises to keep. */
        free(x->c0);
        x->c0 = NULL;
        x->nc0 = 0;
        int64_t *ep = NULL;
        size_t cnt = 0;
        if ((rc = ckh_backend_list_epochs(b, "rank0", &ep, &cnt)) != 0 || cnt == 0) {
            snprintf(x->msg, sizeof(x->msg), "listing after %" PRId64 " saves without faults: "
                     "%s: %s", x->nret, rc ? ckh_err_name(rc) : "nothing listed",
                     rc ? ckh_backend_errmsg(b) : "");
            ckh_free(NULL, ep);
            ckh_backend_close(b);
            rc = rc ? rc : CKH_ENOTFOUND;
            goto out_destroy;
        }
        if (!(x->c0 = malloc(cnt * sizeof(*x->c0)))) {
            ckh_free(NULL, ep);
            ckh_backend_close(b);
            ckh_simfs_destroy(*out);
            *out = NULL;
            return CKH_ENOMEM;
        }
        memcpy(x->c0, ep, cnt * sizeof(*ep));
        x->nc0 = cnt;
        ckh_free(NULL, ep);
    }
    ckh_backend_close(b);
    ckh_simfs_sync_all(*out);
    return 0;
out_destroy:
    ckh_simfs_destroy(*out);
    *out = NULL;
    return rc;
}

/* Runs the traced action of scen on r->disk. *save_rc: the save's result
 * (CKH_EKILLED when killed before it returned); *save_end: ops issued when
 * the save returned 0, else UINT64_MAX. */
static void act(struct xctx *x, int scen, struct xrun *r, int *save_rc, uint64_t *save_end)
{
    struct xshim s;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    shim_init(&s, r, 0);
    backend_cfg(&c, &s.base, NULL);
    *save_end = UINT64_MAX;
    r->phase = PH_OPEN;
    *save_rc = x->ops->open(&c, &b);
    if (*save_rc)
        return;
    r->phase = PH_SAVE;
    int64_t epoch = scen == SC_REPLACE ? 1 : scen == SC_RETENTION ? x->nret + 1 : 2;
    *save_rc = ckh_backend_save(b, "rank0", epoch, x->v[1], NULL, 0);
    if (*save_rc == 0 && !r->killed)
        *save_end = r->nops;
    if (*save_rc == 0 && scen == SC_NEW_EPOCH && x->ops->remove) {
        r->phase = PH_RETENTION;
        ckh_backend_remove(b, "rank0", 1);
    }
    if (*save_rc == 0 && scen == SC_RETENTION && x->ops->remove && x->nc0) {
        r->phase = PH_RETENTION; /* E8: the oldest kept epoch goes (it may be gone already) */
        ckh_backend_remove(b, "rank0", x->c0[0]);
    }
    r->phase = PH_CLOSE;
    ckh_backend_close(b);
}

static void run_init(struct xrun *r)
{
    memset(r, 0, sizeof(*r));
    r->limit = UINT64_MAX;
    r->fail_at = UINT64_MAX;
}

/* Collects the files under dir of the durable tree after setup. */
static int collect_files(struct ckh_fs *fs, const char *dir, char ***v, size_t *n)
{
    struct ckh_listing l;
    int rc = ckh_fs_listdir(fs, dir, &l);
    if (rc)
        return rc;
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        char p[CKH_PATH_MAX + 1];
        if ((rc = ckh_path_join(p, sizeof(p), dir, l.entries[i].name)) != 0)
            break;
        if (l.entries[i].type == CKH_FT_DIR) {
            rc = collect_files(fs, p, v, n);
            continue;
        }
        char **nv = realloc(*v, (*n + 1) * sizeof(**v));
        if (!nv || !(nv[*n] = strdup(p))) {
            if (nv)
                *v = nv;
            rc = CKH_ENOMEM;
            break;
        }
        *v = nv;
        (*n)++;
    }
    ckh_fs_listing_free(&l);
    return rc;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static bool was_pre(const struct xctx *x, const char *path)
{
    for (size_t i = 0; i < x->npre; i++)
        if (strcmp(x->pre[i], path) == 0)
            return true;
    return false;
}

/* ------------------------------------------------- checks and diagnosis */

/* Loads node's epoch into a fresh workspace: 0 and its digest, or the code. */
static int load_digest(struct ckh_backend *b, const char *node, int64_t epoch, uint64_t *dg,
                       char *msg, size_t msglen)
{
    struct ckh_ws *ws;
    int rc = ckh_ws_create(NULL, &ws);
    if (rc)
        return rc;
    rc = ckh_backend_load(b, node, epoch, ws, NULL, 0, 0, NULL);
    if (rc == 0)
        *dg = ckh_ws_digest(ws, NULL);
    else if (msg)
        snprintf(msg, msglen, "%s: %s", ckh_err_name(rc), ckh_backend_errmsg(b));
    ckh_ws_destroy(ws);
    return rc;
}

/* Opens the backend on d as a restarted node would and lists rank0's
 * epochs. 0 with *b open and *ep allocated, or CKH_VULN_RECOVERY_FAILS with
 * its symptom in sym (nothing left open). */
static int recover_and_list(struct xctx *x, struct ckh_simfs *d, struct ckh_backend **b, int64_t **ep,
                            size_t *cnt, char *sym, size_t n)
{
    struct ckh_backend_config c;
    backend_cfg(&c, ckh_simfs_fs(d), NULL);
    *b = NULL;
    int rc = x->ops->open(&c, b);
    if (rc) {
        snprintf(sym, n, "open after the crash fails: %s", ckh_err_name(rc));
        return CKH_VULN_RECOVERY_FAILS;
    }
    if ((rc = ckh_backend_list_epochs(*b, "rank0", ep, cnt)) != 0) {
        snprintf(sym, n, "list_epochs after the crash fails: %s: %s", ckh_err_name(rc),
                 ckh_backend_errmsg(*b));
        ckh_backend_close(*b);
        *b = NULL;
        return CKH_VULN_RECOVERY_FAILS;
    }
    return 0;
}

/* The save after recovery (epoch, with the third data set) must succeed
 * and load back: -1 when it does, else CKH_VULN_NEXT_SAVE_FAILS with its
 * symptom in sym. */
static int next_save_works(struct xctx *x, struct ckh_backend *b, int64_t epoch, char *sym, size_t n)
{
    char m[200] = "";
    uint64_t dg = 0;
    int rc = ckh_backend_save(b, "rank0", epoch, x->v[2], NULL, 0);
    if (rc != 0) {
        snprintf(sym, n, "the next save (epoch %" PRId64 ") fails: %s: %s", epoch, ckh_err_name(rc),
                 ckh_backend_errmsg(b));
        return CKH_VULN_NEXT_SAVE_FAILS;
    }
    if ((rc = load_digest(b, "rank0", epoch, &dg, m, sizeof(m))) != 0 || dg != x->d[2]) {
        snprintf(sym, n, "the next save (epoch %" PRId64 ") does not load back: %s", epoch,
                 rc ? m : "different data");
        return CKH_VULN_NEXT_SAVE_FAILS;
    }
    return -1;
}

/* E4 on disk d. Returns -1 when the state is fine, else the symptom kind
 * with its text in sym. *epoch_out: the latest listed epoch (-1: none). */
static int check_state(struct xctx *x, int scen, struct ckh_simfs *d, bool save_returned,
                       char *sym, size_t n, int64_t *epoch_out)
{
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL;
    size_t cnt = 0;
    char m[200] = "";
    uint64_t dg = 0;
    int kind = -1;
    *epoch_out = -1;
    int rc = recover_and_list(x, d, &b, &ep, &cnt, sym, n);
    if (rc)
        return rc;
    if (cnt == 0) {
        snprintf(sym, n, "no epoch is listed after the crash (expected epoch %d%s)",
                 scen == SC_REPLACE ? 1 : save_returned ? 2 : 1,
                 save_returned || scen == SC_REPLACE ? "" : " or 2");
        kind = CKH_VULN_NO_CHECKPOINT;
        goto out_free;
    }
    int64_t latest = ep[cnt - 1];
    *epoch_out = latest;
    bool ok_epoch = scen == SC_REPLACE ? latest == 1 : (latest == 1 || latest == 2);
    if (!ok_epoch) {
        snprintf(sym, n, "latest listed epoch is %" PRId64 ", never committed", latest);
        kind = CKH_VULN_WRONG_EPOCH;
        goto out_free;
    }
    if ((rc = load_digest(b, "rank0", latest, &dg, m, sizeof(m))) != 0) {
        snprintf(sym, n, "epoch %" PRId64 " is listed but its load fails: %s", latest, m);
        kind = CKH_VULN_LISTED_REFUSED;
        goto out_free;
    }
    bool is_new = scen == SC_REPLACE ? dg == x->d[1] : (latest == 2 && dg == x->d[1]);
    bool is_old = latest == 1 && dg == x->d[0];
    if (!is_new && !is_old) {
        snprintf(sym, n, "load of epoch %" PRId64 " returned data that was never saved "
                 "(digest %016" PRIx64 ", expected %016" PRIx64 ")", latest, dg,
                 latest == 1 && scen != SC_REPLACE ? x->d[0] : x->d[1]);
        kind = CKH_VULN_CORRUPT_RETURNED;
        goto out_free;
    }
    if (save_returned && !is_new) {
        snprintf(sym, n, "the save of epoch %d returned 0, but recovery finds the previous "
                 "checkpoint", scen == SC_REPLACE ? 1 : 2);
        kind = CKH_VULN_NOT_DURABLE;
        goto out_free;
    }
    kind = next_save_works(x, b, 3, sym, n);
out_free:
    ckh_free(NULL, ep);
    ckh_backend_close(b);
    return kind;
}

/* E8 on disk d (the retention scenario). Same contract as check_state;
 * *epoch_out is the listed epoch that failed, else the latest listed. */
static int check_retention(struct xctx *x, struct ckh_simfs *d, bool save_returned, char *sym,
                           size_t n, int64_t *epoch_out)
{
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL, new_epoch = x->nret + 1;
    size_t cnt = 0;
    char m[200] = "";
    uint64_t dg = 0;
    int kind = -1;
    *epoch_out = -1;
    int rc = recover_and_list(x, d, &b, &ep, &cnt, sym, n);
    if (rc)
        return rc;
    if (cnt == 0) {
        snprintf(sym, n, "no epoch is listed after the crash (the backend kept %zu before the "
                 "save of epoch %" PRId64 ")", x->nc0, new_epoch);
        kind = CKH_VULN_NO_CHECKPOINT;
        goto out_free;
    }
    *epoch_out = ep[cnt - 1];
    /* Every listed epoch was committed: one kept before the save, or the new one. */
    for (size_t i = 0; i < cnt; i++) {
        bool known = ep[i] == new_epoch;
        for (size_t j = 0; j < x->nc0 && !known && ep[i] >= 1 && ep[i] <= x->nret; j++)
            known = ep[i] == x->c0[j];
        if (!known) {
            snprintf(sym, n, "epoch %" PRId64 " is listed but was not committed when the save "
                     "of epoch %" PRId64 " began", ep[i], new_epoch);
            *epoch_out = ep[i];
            kind = CKH_VULN_WRONG_EPOCH;
            goto out_free;
        }
    }
    /* Every listed epoch loads bit-exact, newest first. */
    for (size_t i = cnt; i-- > 0;) {
        uint64_t want = ep[i] == new_epoch ? x->d[1] : x->rd[ep[i] - 1];
        if ((rc = load_digest(b, "rank0", ep[i], &dg, m, sizeof(m))) != 0) {
            snprintf(sym, n, "epoch %" PRId64 " is listed but its load fails: %s", ep[i], m);
            *epoch_out = ep[i];
            kind = CKH_VULN_LISTED_REFUSED;
            goto out_free;
        }
        if (dg != want) {
            snprintf(sym, n, "load of epoch %" PRId64 " returned data that was never saved "
                     "(digest %016" PRIx64 ", expected %016" PRIx64 ")", ep[i], dg, want);
            *epoch_out = ep[i];
            kind = CKH_VULN_CORRUPT_RETURNED;
            goto out_free;
        }
    }
    if (cnt < x->nc0) {
        snprintf(sym, n, "%zu committed checkpoint%s after the crash (latest epoch %"
                 PRId64 "); the backend kept %zu before the save of epoch %" PRId64,
                 cnt, cnt == 1 ? " loads" : "s load", ep[cnt - 1], x->nc0, new_epoch);
        kind = CKH_VULN_TOO_FEW_CHECKPOINTS;
        goto out_free;
    }
    if (save_returned && ep[cnt - 1] != new_epoch) {
        snprintf(sym, n, "the save of epoch %" PRId64 " returned 0, but recovery finds epoch %"
                 PRId64, new_epoch, ep[cnt - 1]);
        kind = CKH_VULN_NOT_DURABLE;
        goto out_free;
    }
    kind = next_save_works(x, b, new_epoch + 1, sym, n);
out_free:
    ckh_free(NULL, ep);
    ckh_backend_close(b);
    return kind;
}

/* A pending op as copied before the crash. */
struct xpend {
    int kind;         /* enum ckh_op_kind */
    char *path;       /* path (owned) */
    char *path2;      /* rename destination (owned, may be NULL) */
    uint64_t off;     /* write offset */
    uint64_t len;     /* write length */
    uint32_t sectors; /* sectors a write spans */
};

static const char *choice_name(enum ckh_crash_choice c)
{
    static const char *const n[] = {"persisted", "DROPPED", "TORN(zeros)", "TORN(garbage)"};
    return (unsigned)c < 4 ? n[c] : "?";
}

static bool is_data(int kind)
{
    return kind == CKH_OP_PWRITE || kind == CKH_OP_WRITE || kind == CKH_OP_FTRUNCATE;
}

static bool is_entry(int kind)
{
    return kind == CKH_OP_RENAME || kind == CKH_OP_UNLINK || kind == CKH_OP_MKDIR ||
           kind == CKH_OP_RMDIR || kind == CKH_OP_SYMLINK || kind == CKH_OP_OPEN;
}

/* Whether trace op o (an entry op) is in effect: not dropped in the vector. */
static bool entry_kept(const struct xop *o, const struct xpend *p, const enum ckh_crash_choice *ch,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ch[i] != CKH_CRASH_DROP || !is_entry(p[i].kind))
            continue;
        if (o->kind == CKH_OP_RENAME && p[i].kind == CKH_OP_RENAME && p[i].path2 && o->path2 &&
            strcmp(p[i].path, o->path) == 0 && strcmp(p[i].path2, o->path2) == 0)
            return false;
        if (o->kind != CKH_OP_RENAME && strcmp(p[i].path, o->path) == 0)
            return false;
    }
    return true;
}

/* db_name of rank0's epoch, from a throwaway instance on a scratch disk. */
static int disk_new(struct xctx *x, struct ckh_simfs **out);
static int final_name(struct xctx *x, int64_t epoch, char *buf, size_t n)
{
    struct ckh_simfs *d = NULL;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int rc = disk_new(x, &d);
    if (rc)
        return rc;
    backend_cfg(&c, ckh_simfs_fs(d), NULL);
    if ((rc = x->ops->open(&c, &b)) == 0) {
        rc = ckh_backend_db_name(b, "rank0", epoch, buf, n);
        ckh_backend_close(b);
    }
    ckh_simfs_destroy(d);
    return rc;
}

/* E5: refines kind into a diagnosis; writes the responsible step. */
static int diagnose(struct xctx *x, int scen, const struct xop *t, size_t k, size_t total,
                    const struct xpend *p,
                    const enum ckh_crash_choice *ch, size_t n, int kind, int64_t epoch,
                    bool returned, char *step, size_t sn)
{
    char od[400];
    /* a. in-place modification of a pre-existing file */
    for (size_t i = 0; i < k; i++) {
        const struct xop *o = &t[i];
        bool modifies = is_data(o->kind) || (o->kind == CKH_OP_OPEN && (o->flags & CKH_O_TRUNC));
        if (o->phase == PH_SAVE && modifies && was_pre(x, o->path)) {
            op_desc(o, od, sizeof(od));
            snprintf(step, sn, "op #%zu %s modifies the committed checkpoint file %s in place "
                     "(write a new file and rename it over instead)", i, od, o->path);
            return CKH_VULN_OVERWRITE_IN_PLACE;
        }
    }
    /* b. retention before commit */
    if (kind == CKH_VULN_NO_CHECKPOINT || kind == CKH_VULN_LISTED_REFUSED ||
        kind == CKH_VULN_RECOVERY_FAILS || kind == CKH_VULN_TOO_FEW_CHECKPOINTS) {
        for (size_t i = 0; i < k; i++) {
            const struct xop *o = &t[i];
            if (o->phase == PH_SAVE && o->kind == CKH_OP_UNLINK && was_pre(x, o->path)) {
                snprintf(step, sn, "op #%zu unlink %s deletes a committed checkpoint before the "
                         "new one is committed", i, o->path);
                return CKH_VULN_RETENTION_BEFORE_COMMIT;
            }
        }
    }
    /* f. not durable with a dropped entry op */
    if (returned && (kind == CKH_VULN_NOT_DURABLE || kind == CKH_VULN_NO_CHECKPOINT)) {
        for (size_t di = 0; di < n; di++) {
            if (!is_entry(p[di].kind) || ch[di] != CKH_CRASH_DROP)
                continue;
            char dir[CKH_PATH_MAX + 1] = "/";
            ckh_path_dirname(p[di].path2 ? p[di].path2 : p[di].path, dir, sizeof(dir));
            char dep[CKH_PATH_MAX + 64] = "";
            for (size_t j = di + 1; j < n; j++)
                if (p[j].kind == CKH_OP_RENAME && strcmp(p[j].path, p[di].path) == 0)
                    snprintf(dep, sizeof(dep), " (nor the rename to %s that depends on it)",
                             p[j].path2 ? p[j].path2 : "?");
            snprintf(step, sn, "%s %s%s%s%s was not durable when the save returned (no fsync of "
                     "the directory %s after it)", ckh_op_name((enum ckh_op_kind)p[di].kind),
                     p[di].path, p[di].path2 ? " -> " : "", p[di].path2 ? p[di].path2 : "", dep,
                     dir);
            return CKH_VULN_NO_DIR_FSYNC;
        }
    }
    /* c, d. a dropped or torn op that creates or fills a file */
    for (size_t di = 0; di < n; di++) {
        bool data = is_data(p[di].kind);
        if ((!data && p[di].kind != CKH_OP_OPEN) || ch[di] == CKH_CRASH_APPLY)
            continue;
        const char *dp = p[di].path; /* after a rename: the file's new name */
        const char *what = data ? "data" : "creation";
        for (size_t i = 0; data && i < k; i++) {
            const struct xop *o = &t[i];
            if (o->kind != CKH_OP_RENAME || !entry_kept(o, p, ch, n) ||
                (strcmp(o->path, dp) != 0 && (!o->path2 || strcmp(o->path2, dp) != 0)))
                continue;
            bool written_before = false;
            for (size_t j = 0; j < i && !written_before; j++)
                written_before = is_data(t[j].kind) && strcmp(t[j].path, o->path) == 0;
            if (!written_before)
                continue;
            snprintf(step, sn, "op #%zu rename %s -> %s persisted before the data of %s "
                     "(%s [%" PRIu64 ",+%" PRIu64 ") %s; no fsync of the file before the "
                     "rename)", i, o->path, o->path2 ? o->path2 : "?", o->path,
                     ckh_op_name((enum ckh_op_kind)p[di].kind), p[di].off, p[di].len,
                     choice_name(ch[di]));
            return CKH_VULN_RENAME_BEFORE_DATA;
        }
        size_t first_w = k;
        for (size_t i = 0; i < k; i++)
            if ((is_data(t[i].kind) || (t[i].kind == CKH_OP_OPEN && (t[i].flags & CKH_O_CREAT))) &&
                strcmp(t[i].path, dp) == 0) {
                first_w = i;
                break;
            }
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = first_w + 1; i < k; i++) {
                const struct xop *o = &t[i];
                bool want = pass == 0 ? o->kind == CKH_OP_RENAME
                                      : (is_entry(o->kind) && o->kind != CKH_OP_RENAME &&
                                         (o->kind != CKH_OP_OPEN || (o->flags & CKH_O_CREAT)));
                if (!want || o->phase != PH_SAVE || strcmp(o->path, dp) == 0 ||
                    (o->path2 && strcmp(o->path2, dp) == 0) || !entry_kept(o, p, ch, n))
                    continue;
                op_desc(o, od, sizeof(od));
                snprintf(step, sn, "op #%zu %s persisted before the %s of %s was durable "
                         "(%s %s %s; fsync the data and its directory before updating what "
                         "points to it)", i, od, what, dp,
                         ckh_op_name((enum ckh_op_kind)p[di].kind), dp, choice_name(ch[di]));
                return CKH_VULN_POINTER_BEFORE_DATA;
            }
        }
    }
    /* e. written under its final name */
    if (epoch >= 0 && x->ops->db_name &&
        (kind == CKH_VULN_LISTED_REFUSED || kind == CKH_VULN_CORRUPT_RETURNED)) {
        char final[CKH_PATH_MAX + 1];
        if (final_name(x, epoch, final, sizeof(final)) == 0) {
            for (size_t i = 0; i < k; i++) {
                const struct xop *o = &t[i];
                bool fills = is_data(o->kind) ||
                             (o->kind == CKH_OP_OPEN && (o->flags & CKH_O_CREAT));
                if (o->phase != PH_SAVE || !fills || strcmp(o->path, final) != 0)
                    continue;
                op_desc(o, od, sizeof(od));
                snprintf(step, sn, "op #%zu %s writes the checkpoint directly under %s, the "
                         "committed name of epoch %" PRId64 " (write a temporary, fsync it, "
                         "rename it over, fsync the directory)", i, od, final, epoch);
                return CKH_VULN_OVERWRITE_IN_PLACE;
            }
        }
    }
    /* g. a rename persisted before the save had written the data it names */
    if (kind != CKH_VULN_NOT_DURABLE && kind != CKH_VULN_NEXT_SAVE_FAILS) {
        for (size_t i = 0; i < k; i++) {
            const struct xop *o = &t[i];
            if (o->kind != CKH_OP_RENAME || o->phase != PH_SAVE || !entry_kept(o, p, ch, n))
                continue;
            for (size_t j = k; j < total; j++) {
                const struct xop *w = &t[j];
                bool fills = is_data(w->kind) || (w->kind == CKH_OP_OPEN && (w->flags & CKH_O_CREAT));
                if (w->phase != PH_SAVE || !fills)
                    continue;
                char wd[400];
                op_desc(o, od, sizeof(od));
                op_desc(w, wd, sizeof(wd));
                snprintf(step, sn, "op #%zu %s persisted before the save wrote the data it "
                         "points to (op #%zu %s comes later; write and fsync the data, then "
                         "update what points to it)", i, od, j, wd);
                return CKH_VULN_POINTER_BEFORE_DATA;
            }
        }
    }
    if (k > 0) {
        op_desc(&t[k - 1], od, sizeof(od));
        snprintf(step, sn, "crash after op #%zu %s (%s phase)", k - 1, od,
                 phase_names[t[k - 1].phase]);
    }
    (void)scen;
    return kind;
}

static void state_desc(const struct xop *t, size_t k, size_t total, const struct xpend *p,
                       const enum ckh_crash_choice *ch, size_t n, bool save_returned, char *buf,
                       size_t bn)
{
    char od[400];
    size_t w = 0;
    if (k > 0) {
        op_desc(&t[k - 1], od, sizeof(od));
        w += (size_t)snprintf(buf, bn, "power loss after %zu of %zu ops (last: %s; save %s); ",
                              k, total, od, save_returned ? "had returned 0" : "not returned");
    } else {
        w += (size_t)snprintf(buf, bn, "power loss before the first op; ");
    }
    if (n == 0 && w < bn)
        w += (size_t)snprintf(buf + w, bn - w, "nothing pending");
    for (size_t i = 0; i < n && w < bn; i++) {
        if (i == 10) {
            snprintf(buf + w, bn - w, "... (%zu pending in all)", n);
            break;
        }
        w += (size_t)snprintf(buf + w, bn - w, "%s%s %s%s%s: %s", i ? ", " : "pending: ",
                              ckh_op_name((enum ckh_op_kind)p[i].kind), p[i].path,
                              p[i].path2 ? " -> " : "", p[i].path2 ? p[i].path2 : "",
                              choice_name(ch[i]));
    }
}

/* --------------------------------------------------------- crash exploration */

/* Inserts dg; true when it was new. */
static bool seen_insert(struct xctx *x, uint64_t dg)
{
    if (dg == 0)
        dg = 1;
    if ((x->seen_n + 1) * 2 > x->seen_cap) {
        size_t cap = x->seen_cap ? x->seen_cap * 2 : 1024;
        uint64_t *s = calloc(cap, sizeof(*s));
        if (!s)
            return true;
        for (size_t i = 0; i < x->seen_cap; i++) {
            if (!x->seen[i])
                continue;
            size_t j = x->seen[i] & (cap - 1);
            while (s[j])
                j = (j + 1) & (cap - 1);
            s[j] = x->seen[i];
        }
        free(x->seen);
        x->seen = s;
        x->seen_cap = cap;
    }
    size_t j = dg & (x->seen_cap - 1);
    while (x->seen[j]) {
        if (x->seen[j] == dg)
            return false;
        j = (j + 1) & (x->seen_cap - 1);
    }
    x->seen[j] = dg;
    x->seen_n++;
    return true;
}

/* Fills the v-th choice vector (E3) for n pending ops; false past the end. */
static bool vector(size_t v, const struct xpend *p, size_t n, enum ckh_crash_choice *ch)
{
    size_t i;
    for (i = 0; i < n; i++)
        ch[i] = CKH_CRASH_APPLY;
    if (v == 0)
        return true;
    if (n == 0)
        return false;
    if (v == 1) {
        for (i = 0; i < n; i++)
            ch[i] = CKH_CRASH_DROP;
        return true;
    }
    v -= 2;
    if (v < n) {
        ch[v] = CKH_CRASH_DROP;
        return true;
    }
    v -= n;
    if (v + 1 < n) {
        for (i = v + 1; i < n; i++)
            ch[i] = CKH_CRASH_DROP;
        return true;
    }
    v -= n > 0 ? n - 1 : 0;
    for (i = 0; i < n; i++) {
        if (p[i].sectors == 0 || (p[i].kind != CKH_OP_PWRITE && p[i].kind != CKH_OP_WRITE))
            continue;
        if (v < 2) {
            ch[i] = v == 0 ? CKH_CRASH_TORN_ZERO : CKH_CRASH_TORN_GARBAGE;
            return true;
        }
        v -= 2;
    }
    return false;
}

static void pend_free(struct xpend *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].path);
        free(p[i].path2);
    }
    free(p);
}

static int pend_copy(struct ckh_simfs *d, struct xpend **out, size_t *nout)
{
    size_t n = ckh_simfs_pending_count(d);
    struct xpend *p = calloc(n ? n : 1, sizeof(*p));
    if (!p)
        return CKH_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct ckh_simfs_pending_info pi;
        int rc = ckh_simfs_pending_get(d, i, &pi);
        if (rc) {
            pend_free(p, i);
            return rc;
        }
        p[i].kind = pi.kind;
        p[i].path = strdup(pi.path ? pi.path : "");
        p[i].path2 = pi.path2 ? strdup(pi.path2) : NULL;
        p[i].off = pi.off;
        p[i].len = pi.len;
        p[i].sectors = pi.sectors;
        if (!p[i].path || (pi.path2 && !p[i].path2)) {
            pend_free(p, i + 1);
            return CKH_ENOMEM;
        }
    }
    *out = p;
    *nout = n;
    return 0;
}

static bool bounded(const struct xctx *x)
{
    return x->cfg->max_states && x->res->stats.states >= x->cfg->max_states;
}

/* Replays the whole action on a fresh setup disk and reports whether it
 * issued the recorded op kinds (E2's determinism check). */
static int replay_same(struct xctx *x, int scen, const struct xrun *ref, bool *same)
{
    struct xrun r;
    int src;
    uint64_t send;
    run_init(&r);
    int rc = setup(x, scen, &r.disk);
    if (rc)
        return rc;
    r.ref = ref->trace;
    r.nref = ref->ntrace;
    act(x, scen, &r, &src, &send);
    *same = !r.diverged && r.nops == ref->ntrace;
    ckh_simfs_destroy(r.disk);
    return 0;
}

/* E3 on one crash point: every choice vector resolves a clone of sn. */
static int explore_point(struct xctx *x, int scen, const struct xrun *ref, const struct xsnap *sn,
                         uint64_t save_end)
{
    const char *sname = scen_names[scen];
    char sym[320], state[1024], step[512];
    size_t k = (size_t)sn->k, total = ref->ntrace;
    bool returned = k >= save_end;
    struct xpend *p = NULL;
    size_t n = 0;
    int rc = pend_copy(sn->disk, &p, &n);
    if (rc)
        return rc;
    enum ckh_crash_choice *ch = calloc(n ? n : 1, sizeof(*ch));
    if (!ch) {
        pend_free(p, n);
        return CKH_ENOMEM;
    }
    for (size_t v = 0; vector(v, p, n, ch) && !bounded(x); v++) {
        struct ckh_simfs *d;
        if ((rc = ckh_simfs_clone(sn->disk, &d)) != 0)
            break;
        int crc = ckh_simfs_crash(d, -1, ch, n);
        x->res->stats.states++;
        if (crc != 0 || !seen_insert(x, ckh_simfs_digest(d, true))) {
            ckh_simfs_destroy(d);
            continue;
        }
        x->res->stats.states_checked++;
        int64_t epoch;
        int kind = scen == SC_RETENTION
                       ? check_retention(x, d, returned, sym, sizeof(sym), &epoch)
                       : check_state(x, scen, d, returned, sym, sizeof(sym), &epoch);
        ckh_simfs_destroy(d);
        if (kind < 0)
            continue;
        kind = diagnose(x, scen, ref->trace, k, total, p, ch, n, kind, epoch, returned, step,
                        sizeof(step));
        state_desc(ref->trace, k, total, p, ch, n, returned, state, sizeof(state));
        if ((rc = vuln_add(x->res, (enum ckh_vuln_kind)kind, sname, sym, state, step)) != 0)
            break;
    }
    free(ch);
    pend_free(p, n);
    return rc;
}

static int explore_scenario(struct xctx *x, int scen)
{
    struct xrun ref;
    int save_rc;
    uint64_t save_end;
    const char *sname = scen_names[scen];
    char sym[320];
    bool same = true;
    run_init(&ref);
    int rc = setup(x, scen, &ref.disk);
    if (rc) {
        if (ref.disk == NULL && x->msg[0])
            return vuln_add(x->res, CKH_VULN_BASELINE_FAILS, sname, x->msg, "no crash", "setup");
        return rc;
    }
    if ((rc = collect_files(ckh_simfs_fs(ref.disk), X_PREFIX, &x->pre, &x->npre)) != 0)
        goto out_ref;
    ref.record = true;
    ref.snapshot = true;
    act(x, scen, &ref, &save_rc, &save_end);
    if (ref.snap_err == 0)
        snap_take(&ref, ref.ntrace); /* the end of the trace is always a crash point */
    if ((rc = ref.snap_err) != 0)
        goto out_ref;
    x->res->stats.trace_ops += ref.ntrace;
    if (save_rc != 0) {
        snprintf(sym, sizeof(sym), "save failed without faults: %s", ckh_err_name(save_rc));
        rc = vuln_add(x->res, CKH_VULN_BASELINE_FAILS, sname, sym, "no crash", "save");
        goto out_ref;
    }
    if ((rc = replay_same(x, scen, &ref, &same)) != 0)
        goto out_ref;
    if (!same) {
        rc = vuln_add(x->res, CKH_VULN_NONDETERMINISTIC, sname,
                      "a replay of the save issued different operations", "no crash",
                      "the backend depends on something other than its inputs");
        goto out_ref;
    }
    for (size_t i = 0; i < ref.nsnaps && rc == 0 && !bounded(x); i++) {
        x->res->stats.prefixes++;
        rc = explore_point(x, scen, &ref, &ref.snaps[i], save_end);
        ckh_simfs_destroy(ref.snaps[i].disk); /* done with it: keep memory flat */
        ref.snaps[i].disk = NULL;
    }
out_ref:
    free_strv(x->pre, x->npre);
    x->pre = NULL;
    x->npre = 0;
    run_free_snaps(&ref);
    run_free_trace(&ref);
    ckh_simfs_destroy(ref.disk);
    return rc;
}

/* ---------------------------------------------------------------- two ranks */

static void rank_main(void *arg)
{
    struct xrank *rk = arg;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    backend_cfg(&c, &rk->shim.base, NULL);
    rk->shim.run->phase = PH_OPEN;
    rk->rc = rk->ops->open(&c, &b);
    if (rk->rc == 0) {
        rk->rc = ckh_backend_save(b, rk->node, 2, rk->ws, NULL, 0);
        ckh_backend_close(b);
    }
    rk->done = true;
    ckh__coro_switch(&rk->co, rk->host, true);
}

/* Lets rank rk run until it is about to issue its next op (or ends). */
static void rank_step(struct xrank *rk)
{
    if (rk->done)
        return;
    rk->started = true;
    ckh__coro_switch(rk->host, &rk->co, false);
    if (rk->done)
        ckh__coro_free(&rk->co);
}

/* One schedule: s >= 0 "rank0 s ops, rank1 all, rank0 rest"; s < 0 alternate. */
static int two_ranks_once(struct xctx *x, long s, const char *sched)
{
    struct ckh__coro host;
    struct xrank rk[2];
    struct xrun r;
    char sym[320], step[512] = "";
    int rc;
    run_init(&r);
    if ((rc = disk_new(x, &r.disk)) != 0)
        return rc;
    r.record = true;
    r.host = &host;
    ckh__coro_init_host(&host);
    memset(rk, 0, sizeof(rk));
    for (int i = 0; i < 2; i++) {
        rk[i].host = &host;
        rk[i].ops = x->ops;
        rk[i].node = i == 0 ? "rank0" : "rank1";
        rk[i].ws = x->v[i == 0 ? 1 : 3];
        shim_init(&rk[i].shim, &r, i);
        rk[i].shim.co = &rk[i];
        if ((rc = ckh__coro_create(&rk[i].co, X_STACK_BYTES, rank_main, &rk[i])) != 0) {
            if (i == 1)
                ckh__coro_free(&rk[0].co);
            goto out_disk;
        }
    }
    x->res->stats.interleavings++;
    if (s >= 0) {
        for (long i = 0; i <= s; i++)
            rank_step(&rk[0]);
        while (!rk[1].done)
            rank_step(&rk[1]);
        while (!rk[0].done)
            rank_step(&rk[0]);
    } else {
        while (!rk[0].done || !rk[1].done) {
            rank_step(&rk[0]);
            rank_step(&rk[1]);
        }
    }
    /* Check: both saved, each loads its own data. */
    int bad = -1;
    for (int i = 0; i < 2 && bad < 0; i++) {
        if (rk[i].rc != 0) {
            snprintf(sym, sizeof(sym), "%s's save failed while %s saved concurrently: %s",
                     rk[i].node, rk[1 - i].node, ckh_err_name(rk[i].rc));
            bad = CKH_VULN_BASELINE_FAILS;
        }
    }
    if (bad < 0) {
        struct ckh_backend_config c;
        struct ckh_backend *b = NULL;
        backend_cfg(&c, ckh_simfs_fs(r.disk), NULL);
        if (x->ops->open(&c, &b) == 0) {
            for (int i = 0; i < 2 && bad < 0; i++) {
                uint64_t dg = 0;
                char m[200];
                int lrc = load_digest(b, rk[i].node, 2, &dg, m, sizeof(m));
                if (lrc || dg != x->d[i == 0 ? 1 : 3]) {
                    snprintf(sym, sizeof(sym), "%s's epoch 2 %s", rk[i].node,
                             lrc ? "does not load" : "holds data it never saved");
                    bad = lrc ? CKH_VULN_LISTED_REFUSED : CKH_VULN_CORRUPT_RETURNED;
                }
            }
            ckh_backend_close(b);
        }
    }
    if (bad >= 0) {
        /* Diagnosis: a path created by both ranks. */
        for (size_t i = 0; i < r.ntrace && !step[0]; i++) {
            const struct xop *a = &r.trace[i];
            if (a->rank != 0 || a->kind != CKH_OP_OPEN || !(a->flags & CKH_O_CREAT))
                continue;
            for (size_t j = 0; j < r.ntrace; j++) {
                const struct xop *o = &r.trace[j];
                if (o->rank == 1 && o->kind == CKH_OP_OPEN && (o->flags & CKH_O_CREAT) &&
                    strcmp(o->path, a->path) == 0) {
                    snprintf(step, sizeof(step), "rank0 op #%zu and rank1 op #%zu both create "
                             "%s: a temporary name must be unique per rank", i, j, a->path);
                    bad = CKH_VULN_SHARED_TEMP_NAME;
                    break;
                }
            }
        }
        rc = vuln_add(x->res, (enum ckh_vuln_kind)bad, scen_names[SC_TWO_RANKS], sym, sched, step);
    }
    for (int i = 0; i < 2; i++)
        if (!rk[i].done)
            ckh__coro_free(&rk[i].co); /* cannot happen: both ran to the end */
out_disk:
    run_free_trace(&r);
    ckh_simfs_destroy(r.disk);
    return rc;
}

static int explore_two_ranks(struct xctx *x)
{
    /* The length of rank0's solo save bounds the schedules. */
    struct xrun ref;
    int src;
    uint64_t send;
    char sched[128];
    run_init(&ref);
    int rc = disk_new(x, &ref.disk);
    if (rc)
        return rc;
    ref.record = true;
    act(x, SC_TWO_RANKS, &ref, &src, &send);
    size_t n0 = ref.ntrace;
    run_free_trace(&ref);
    ckh_simfs_destroy(ref.disk);
    snprintf(sched, sizeof(sched), "no crash; schedule: the ranks alternate op by op");
    if ((rc = two_ranks_once(x, -1, sched)) != 0)
        return rc;
    for (size_t s = 0; s <= n0 && rc == 0 && !bounded(x); s++) {
        snprintf(sched, sizeof(sched), "no crash; schedule: rank0 issues %zu ops, rank1 its whole "
                 "save, then rank0 the rest", s);
        rc = two_ranks_once(x, (long)s, sched);
    }
    return rc;
}

/* ---------------------------------------------------------- fault catalogue */

/* Counting allocator (LEAK family). */
struct xalloc {
    struct ckh_alloc base; /* must be first */
    int64_t live;          /* blocks not freed */
};

static void *xa_malloc(struct ckh_alloc *a, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p)
        ((struct xalloc *)a)->live++;
    return p;
}

static void *xa_realloc(struct ckh_alloc *a, void *ptr, size_t n)
{
    void *p = realloc(ptr, n ? n : 1);
    if (p && !ptr)
        ((struct xalloc *)a)->live++;
    return p;
}

static void xa_free(struct ckh_alloc *a, void *ptr)
{
    if (ptr)
        ((struct xalloc *)a)->live--;
    free(ptr);
}

static const struct ckh_alloc_ops xa_ops = {1, xa_malloc, xa_realloc, xa_free};

static int faults_leak(struct xctx *x)
{
    struct xalloc a = {{&xa_ops}, 0};
    struct ckh_simfs *d;
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL;
    size_t cnt = 0;
    uint64_t dg;
    char sym[320];
    int rc = disk_new(x, &d);
    if (rc)
        return rc;
    backend_cfg(&c, ckh_simfs_fs(d), &a.base);
    if (x->ops->open(&c, &b) == 0) {
        ckh_backend_save(b, "rank0", 1, x->v[0], NULL, 0);
        ckh_backend_save(b, "rank0", 2, x->v[1], NULL, 0);
        if (ckh_backend_list_epochs(b, "rank0", &ep, &cnt) == 0)
            ckh_free(&a.base, ep);
        load_digest(b, "rank0", 2, &dg, NULL, 0);
        load_digest(b, "rank0", 7, &dg, NULL, 0); /* a refused load frees too */
        if (x->ops->remove)
            ckh_backend_remove(b, "rank0", 1);
        ckh_backend_close(b);
    }
    if (a.live != 0) {
        snprintf(sym, sizeof(sym), "%" PRId64 " blocks from the config's allocator are not freed "
                 "after open, save x2, list_epochs, load, refused load, remove, close", a.live);
        rc = vuln_add(x->res, CKH_VULN_LEAK, "leak", sym, "no crash", "");
    }
    ckh_simfs_destroy(d);
    return rc;
}

/* Checks the outcome of a faulted action on disk d (E7). */
static int fault_outcome(struct xctx *x, const char *sname, struct ckh_simfs *d, int save_rc,
                         const char *what, const char *state)
{
    char sym[320], m[200];
    struct ckh_backend_config c;
    struct ckh_backend *b = NULL;
    int64_t *ep = NULL;
    size_t cnt = 0;
    uint64_t dg = 0;
    int kind = -1;
    if (save_rc == 0) {
        enum ckh_crash_choice *ch;
        size_t n = ckh_simfs_pending_count(d);
        ch = calloc(n ? n : 1, sizeof(*ch));
        if (!ch)
            return CKH_ENOMEM;
        for (size_t i = 0; i < n; i++)
            ch[i] = CKH_CRASH_DROP;
        ckh_simfs_crash(d, -1, ch, n);
        free(ch);
    }
    backend_cfg(&c, ckh_simfs_fs(d), NULL);
    if (x->ops->open(&c, &b) != 0) {
        snprintf(sym, sizeof(sym), "open fails after %s", what);
        kind = CKH_VULN_FAULT_DAMAGE;
        goto out;
    }
    int rc = ckh_backend_list_epochs(b, "rank0", &ep, &cnt);
    int64_t latest = rc == 0 && cnt ? ep[cnt - 1] : -1;
    ckh_free(NULL, ep);
    if (latest >= 0)
        rc = load_digest(b, "rank0", latest, &dg, m, sizeof(m));
    bool is_new = latest == 2 && rc == 0 && dg == x->d[1];
    bool is_old = latest == 1 && rc == 0 && dg == x->d[0];
    if (save_rc == 0 && !is_new) {
        snprintf(sym, sizeof(sym), "%s, yet the save returned 0; after a power loss epoch 2 %s",
                 what, latest == 2 ? "does not load back" : "is gone");
        kind = CKH_VULN_ERROR_SWALLOWED;
    } else if (save_rc != 0 && !is_new && !is_old) {
        snprintf(sym, sizeof(sym), "%s; the save failed (%s) and left no loadable checkpoint "
                 "(latest listed %" PRId64 ")", what, ckh_err_name(save_rc), latest);
        kind = CKH_VULN_FAULT_DAMAGE;
    } else if ((rc = ckh_backend_save(b, "rank0", 3, x->v[2], NULL, 0)) != 0 ||
               load_digest(b, "rank0", 3, &dg, m, sizeof(m)) != 0 || dg != x->d[2]) {
        snprintf(sym, sizeof(sym), "%s; afterwards the next save (epoch 3) %s", what,
                 rc ? "fails" : "does not load back");
        kind = CKH_VULN_NEXT_SAVE_FAILS;
    }
    ckh_backend_close(b);
out:
    if (kind < 0)
        return 0;
    return vuln_add(x->res, (enum ckh_vuln_kind)kind, sname, sym, state, what);
}

static int faults_inject(struct xctx *x, enum ckh_fault_family fam, int err)
{
    struct xrun ref;
    int save_rc;
    uint64_t save_end;
    char sname[48], what[512], od[400];
    snprintf(sname, sizeof(sname), "fault:%s", fam == CKH_FAULTS_FSYNC ? "fsync-lost"
                                                                        : ckh_err_name(-err));
    run_init(&ref);
    int rc = setup(x, SC_NEW_EPOCH, &ref.disk);
    if (rc)
        return !x->msg[0] ? rc : vuln_add(x->res, CKH_VULN_BASELINE_FAILS, sname, x->msg, "", "");
    ref.record = true;
    act(x, SC_NEW_EPOCH, &ref, &save_rc, &save_end);
    for (size_t i = 0; i < ref.ntrace && rc == 0 && !bounded(x); i++) {
        const struct xop *o = &ref.trace[i];
        bool pick = fam == CKH_FAULTS_FSYNC
                        ? (o->kind == CKH_OP_FSYNC || o->kind == CKH_OP_FDATASYNC)
                        : (op_changes(o) || o->kind == CKH_OP_OPEN);
        if (!pick || o->phase == PH_CLOSE)
            continue;
        struct xrun r;
        run_init(&r);
        if ((rc = setup(x, SC_NEW_EPOCH, &r.disk)) != 0)
            break;
        r.fail_at = i;
        r.fail_err = err;
        r.fsync_lost = fam == CKH_FAULTS_FSYNC;
        act(x, SC_NEW_EPOCH, &r, &save_rc, &save_end);
        x->res->stats.states++;
        op_desc(o, od, sizeof(od));
        snprintf(what, sizeof(what), "op #%zu %s (%s phase) failed with %s%s", i, od,
                 phase_names[o->phase], fam == CKH_FAULTS_FSYNC ? "EIO" : ckh_err_name(-err),
                 fam == CKH_FAULTS_FSYNC ? " after losing the file's dirty data" : "");
        rc = fault_outcome(x, sname, r.disk, save_rc, what,
                           save_rc == 0 ? "save returned 0, then a power loss dropped every "
                                          "pending op" : "save failed; no crash");
        ckh_simfs_destroy(r.disk);
    }
    run_free_trace(&ref);
    ckh_simfs_destroy(ref.disk);
    return rc;
}

static int faults_at_rest(struct xctx *x)
{
    struct ckh_simfs *d = NULL;
    char **files = NULL;
    size_t nf = 0;
    char sym[320], state[600];
    int rc = setup(x, SC_NEW_EPOCH, &d);
    if (rc)
        return !x->msg[0] ? rc : vuln_add(x->res, CKH_VULN_BASELINE_FAILS, "at-rest", x->msg, "", "");
    rc = collect_files(ckh_simfs_fs(d), X_PREFIX, &files, &nf);
    ckh_simfs_destroy(d);
    for (size_t f = 0; f < nf && rc == 0; f++) {
        struct ckh_stat st;
        if ((rc = setup(x, SC_NEW_EPOCH, &d)) != 0)
            break;
        rc = ckh_fs_stat(ckh_simfs_fs(d), files[f], &st);
        ckh_simfs_destroy(d);
        if (rc || st.size_bytes == 0) {
            rc = 0;
            continue;
        }
        uint64_t s = st.size_bytes;
        uint64_t at[8] = {0, s / 4, s / 2, 3 * s / 4, s - 1, 0, s / 2, s - 1};
        for (int j = 0; j < 8 && rc == 0; j++) {
            bool trunc = j >= 5;
            if (trunc && j == 7 && s < 2)
                continue;
            if ((rc = setup(x, SC_NEW_EPOCH, &d)) != 0)
                break;
            if (trunc) {
                ckh_simfs_truncate_at_rest(d, files[f], at[j]);
                snprintf(state, sizeof(state), "%s (%" PRIu64 " bytes) truncated at rest to %"
                         PRIu64 " bytes", files[f], s, at[j]);
            } else {
                ckh_simfs_flip_bit(d, files[f], at[j] * 8 + 3);
                snprintf(state, sizeof(state), "bit 3 of byte %" PRIu64 " of %s (%" PRIu64
                         " bytes) flipped at rest", at[j], files[f], s);
            }
            x->res->stats.states++;
            struct ckh_backend_config c;
            struct ckh_backend *b = NULL;
            backend_cfg(&c, ckh_simfs_fs(d), NULL);
            if (x->ops->open(&c, &b) == 0) {
                uint64_t dg = 0;
                if (load_digest(b, "rank0", 1, &dg, NULL, 0) == 0 && dg != x->d[0]) {
                    snprintf(sym, sizeof(sym), "load of epoch 1 returned 0 with data that was "
                             "never saved");
                    rc = vuln_add(x->res, CKH_VULN_AT_REST_ACCEPTED,
                                  trunc ? "at-rest:truncate" : "at-rest:bitflip", sym, state,
                                  "load must verify checksums and lengths before returning data");
                }
                ckh_backend_close(b);
            }
            ckh_simfs_destroy(d);
        }
    }
    free_strv(files, nf);
    return rc;
}

/* ---------------------------------------------------------------- public API */

static int ctx_init(struct xctx *x, const struct ckh_explore_config *cfg,
                    struct ckh_explore_result *out, char *msg, size_t msglen)
{
    memset(x, 0, sizeof(*x));
    if (!out)
        return CKH_EINVAL;
    memset(out, 0, sizeof(*out));
    if (!cfg || !cfg->ops || !cfg->ops->open || !cfg->ops->close || !cfg->ops->save ||
        !cfg->ops->load || !cfg->ops->list_epochs) {
        if (msg && msglen)
            snprintf(msg, msglen, "explore: a backend with open, close, save, load and "
                     "list_epochs is required");
        return CKH_EINVAL;
    }
    if (cfg->sector_bytes != 0 && cfg->sector_bytes != 512 && cfg->sector_bytes != 4096) {
        if (msg && msglen)
            snprintf(msg, msglen, "explore: sector size %u is not 512 or 4096", cfg->sector_bytes);
        return CKH_EINVAL;
    }
    if (cfg->model != CKH_CRASH_POSIX_WEAK && cfg->model != CKH_CRASH_EXT4_ORDERED) {
        if (msg && msglen)
            snprintf(msg, msglen, "explore: unknown crash model %d", (int)cfg->model);
        return CKH_EINVAL;
    }
    if (cfg->retention_epochs > CKH_EXPLORE_MAX_RETAINED) {
        if (msg && msglen)
            snprintf(msg, msglen, "explore: %u retention epochs (at most %d)",
                     cfg->retention_epochs, CKH_EXPLORE_MAX_RETAINED);
        return CKH_EINVAL;
    }
    x->cfg = cfg;
    x->ops = cfg->ops;
    x->res = out;
    uint32_t nb = cfg->nblobs ? cfg->nblobs : 4;
    uint64_t bytes = cfg->blob_bytes ? cfg->blob_bytes : 3000;
    for (int i = 0; i < 4; i++) {
        int rc = ws_make(ckh_mix64(cfg->seed + (uint64_t)i + 1), nb, bytes, &x->v[i]);
        if (rc)
            return rc;
        x->d[i] = ckh_ws_digest(x->v[i], NULL);
    }
    x->nret = cfg->retention_epochs ? cfg->retention_epochs : 3;
    for (int64_t e = 1; e <= x->nret; e++) {
        int rc = ws_make(ckh_mix64(cfg->seed + 100 + (uint64_t)e), nb, bytes, &x->rv[e - 1]);
        if (rc)
            return rc;
        x->rd[e - 1] = ckh_ws_digest(x->rv[e - 1], NULL);
    }
    return 0;
}

static void ctx_fini(struct xctx *x)
{
    for (int i = 0; i < 4; i++)
        ckh_ws_destroy(x->v[i]);
    for (int i = 0; i < CKH_EXPLORE_MAX_RETAINED; i++)
        ckh_ws_destroy(x->rv[i]);
    free(x->c0);
    free(x->seen);
}

int ckh_explore_run(const struct ckh_explore_config *cfg, struct ckh_explore_result *out,
                    char *msg, size_t msglen)
{
    struct xctx x;
    int rc = ctx_init(&x, cfg, out, msg, msglen);
    unsigned sc = cfg && cfg->scenarios ? cfg->scenarios : CKH_EXPLORE_ALL;
    if (rc == 0 && (sc & CKH_EXPLORE_NEW_EPOCH))
        rc = explore_scenario(&x, SC_NEW_EPOCH);
    if (rc == 0 && (sc & CKH_EXPLORE_REPLACE))
        rc = explore_scenario(&x, SC_REPLACE);
    if (rc == 0 && (sc & CKH_EXPLORE_RETENTION))
        rc = explore_scenario(&x, SC_RETENTION);
    if (rc == 0 && (sc & CKH_EXPLORE_TWO_RANKS))
        rc = explore_two_ranks(&x);
    ctx_fini(&x);
    if (rc && out) {
        if (msg && msglen && rc != CKH_EINVAL)
            snprintf(msg, msglen, "explore: %s", ckh_strerror(rc));
        ckh_explore_result_free(out);
    }
    return rc;
}

int ckh_explore_faults(const struct ckh_explore_config *cfg, enum ckh_fault_family fam, int err,
                       struct ckh_explore_result *out, char *msg, size_t msglen)
{
    struct xctx x;
    int rc = ctx_init(&x, cfg, out, msg, msglen);
    if (rc == 0) {
        switch (fam) {
        case CKH_FAULTS_ERRNO:
            if (err <= 0) {
                rc = CKH_EINVAL;
                if (msg && msglen)
                    snprintf(msg, msglen, "explore: errno %d must be positive", err);
                break;
            }
            rc = faults_inject(&x, fam, err);
            break;
        case CKH_FAULTS_FSYNC:
            rc = faults_inject(&x, fam, EIO);
            break;
        case CKH_FAULTS_AT_REST:
            rc = faults_at_rest(&x);
            break;
        case CKH_FAULTS_LEAK:
            rc = faults_leak(&x);
            break;
        default:
            rc = CKH_EINVAL;
            if (msg && msglen)
                snprintf(msg, msglen, "explore: unknown fault family %d", (int)fam);
        }
    }
    ctx_fini(&x);
    if (rc && out) {
        if (msg && msglen && rc != CKH_EINVAL)
            snprintf(msg, msglen, "explore: %s", ckh_strerror(rc));
        ckh_explore_result_free(out);
    }
    return rc;
}
