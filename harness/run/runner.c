/* The runner: reference run, faulted run with restarts, oracles, verdict.
 *
 * Map:
 *   1. simulation set-up   build_sim(): disks (shared or one per node),
 *                          nodes from the workload adapter, the checkpoint
 *                          directory created and synced before the job;
 *   2. fault script        arm_faults(): scenario faults for run N become
 *                          simulator fault rules; at-rest faults without a
 *                          trigger change the disks before the run, with a
 *                          trigger they run as CALL actions;
 *   3. runs                execute(): run, record how each node ended,
 *                          look at the disks after a crash, restart the
 *                          nodes that did not finish, until the job
 *                          completes or the restart budget is spent;
 *   4. reference           reference(): the same job with no faults and
 *                          no defect switches, cached per job description;
 *   5. verdict             judge(): every applicable oracle, in order.
 *
 * Determinism: everything derives from the scenario seed (or --seed); the
 * simulator's trace hash of the faulted job is the run's fingerprint.
 *
 * World size on restart (restart.world_size W', the job's own world W):
 *   - only workloads whose adapter has set_world support it; for the
 *     others the setting is an input error naming restart.world_size;
 *   - W' == W changes nothing; otherwise the faulted job is built with
 *     max(W, W') nodes, and those the adapter gives rank -1 (the ranks
 *     beyond W) are parked (ckh_sim_park) before run 1;
 *   - before run 2 (the first restart) the runner calls set_world(W'),
 *     takes every node's rank from the adapter again and gives it to the
 *     simulator (ckh_sim_set_rank): ranks 0..W'-1 all restart (a resized
 *     group restarts whole, even a rank that had finished), the others
 *     are parked; later restarts keep W';
 *   - parked nodes count neither as crashed nor as unfinished;
 *   - the reference run is the job as written, at W (cache key unchanged);
 *     the record says world, world_restart and resized, and the oracles
 *     that compare with the reference step by step or node by node
 *     (resume-equivalence, reference, no-corrupt-load) do not apply to a
 *     resizing scenario (ckh_oracle_resizes); "reshard" judges the
 *     epochs instead. docs/SCENARIOS.md (restart) says the same for users.
 */
#include "run/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "search/fuzz.h"
#include "oracles/oracle.h"

#define RUN_TIME_LIMIT_NS (48ull * 3600 * 1000000000ull) /* a run hangs past 48 virtual hours */
#define RUN_OP_LIMIT 20000000ull                           /* or past 20 M operations */
#define COLL_LATENCY_NS 20000ull

/* Per-node tracking of progress, fed by the fault hook on every op. */
struct track {
    int64_t progress;     /* highest epoch/step seen in an "epoch" or "save" phase */
    char phase[16];       /* last phase announced */
    bool load_seen;       /* the node loaded a checkpoint in this run */
    int64_t load_epoch;   /* the epoch it loaded (epoch-based jobs) */
    bool resume_known;    /* the node started working in this run */
    int64_t resume_point; /* the epoch/step its work in this run started from */
};

struct run_ctx;

/* An at-rest fault armed on a trigger (CALL action context). */
struct call_ctx {
    struct run_ctx *rc;               /* the run */
    const struct ckh_scn_fault *fault; /* what to do */
    size_t index;                     /* its index in the scenario */
};

struct run_ctx {
    unsigned mode;                       /* CKH_RUN_* flags: NO_FAULTS skips arming and restarts */
    const struct ckh_scenario *sc;       /* the scenario */
    const struct ckh_adapter_ops *ad;    /* its workload adapter */
    void *inst;                          /* the adapter instance */
    struct ckh_sim *sim;                 /* the simulator */
    int n;                               /* nodes */
    char (*names)[CKH_NODE_NAME_LEN];    /* node names */
    struct ckh_simfs **disks;            /* [ndisks * n]: disk d of node i (shared: same) */
    struct ckh_simfs_mount *mounts;      /* [n * ndisks] */
    struct track *track;                 /* [n] */
    struct call_ctx *calls;              /* [nfaults] */
    size_t *rule_fault;                  /* [nfaults]: scenario fault of each armed rule */
    size_t nrules;                       /* rules armed for the current run */
    struct ckh_scenario_run *rec;        /* where firing counts go (NULL: not counted) */
    long at_rest_fault;                  /* scenario fault being applied at rest (-1: none) */
    bool step_based;                     /* progress counted in steps (training jobs) */
    int world_first;                     /* ranks of run 1 */
    int world_restart;                   /* ranks of runs 2.. (world_first: unchanged) */
    char err[512];                       /* set-up error */
};

/* ---- helpers ---- */

static int fail(struct run_ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct run_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return code;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Resolves a path of node i's namespace to (disk, path on that disk). */
static struct ckh_simfs *resolve(struct run_ctx *c, int node, const char *path, char *dpath, size_t n)
{
    size_t nd = c->sc->job.ndisks, best = (size_t)-1, best_len = 0;
    for (size_t d = 0; d < nd; d++) {
        const char *m = c->sc->job.disks[d].mount;
        size_t ml = strlen(m);
        bool root = ml == 1 && m[0] == '/';
        if (!root && (strncmp(path, m, ml) != 0 || (path[ml] != '/' && path[ml] != '\0')))
            continue;
        if (best == (size_t)-1 || ml > best_len) {
            best = d;
            best_len = root ? 0 : ml;
        }
    }
    if (best == (size_t)-1)
        return NULL;
    const char *rest = path + best_len;
    snprintf(dpath, n, "%s", rest[0] ? rest : "/");
    return c->disks[best * (size_t)c->n + (size_t)(node < 0 ? 0 : node)];
}

/* Calls fn for every distinct disk that holds path (one per node for a
 * node-local disk, restricted to `node` when it is >= 0). */
static int for_each_disk(struct run_ctx *c, int node, const char *path,
                         int (*fn)(struct run_ctx *, struct ckh_simfs *, const char *, const void *),
                         const void *arg)
{
    struct ckh_simfs *seen = NULL;
    int rc = 0;
    for (int i = 0; i < c->n; i++) {
        if (node >= 0 && i != node)
            continue;
        char dpath[CKH_PATH_MAX];
        struct ckh_simfs *d = resolve(c, i, path, dpath, sizeof dpath);
        if (!d)
            return fail(c, CKH_EINVAL, "path %s is on no disk", path);
        if (d == seen)
            continue; /* a shared disk: once */
        seen = d;
        if ((rc = fn(c, d, dpath, arg)) != 0)
            return rc;
    }
    return 0;
}

static int make_dir_fn(struct run_ctx *c, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    (void)arg;
    int rc = ckh_fs_mkdirs(ckh_simfs_fs(d), dpath);
    if (rc)
        return fail(c, rc, "cannot create %s: %s", dpath, ckh_strerror(rc));
    ckh_simfs_sync_all(d);
    return 0;
}

/* ---- at-rest faults ---- */

/* An at-rest fault changed something: only then does it count as fired
 * (a path that names nothing must not pass for a tested fault). */
static void at_rest_hit(struct run_ctx *c)
{
    if (c->rec && c->at_rest_fault >= 0)
        c->rec->fault_fired[c->at_rest_fault]++;
}

/* Replaces the link at dpath (dangling: to a missing folder; stale: to the
 * oldest sibling with the same name pattern). */
static int latest_fn(struct run_ctx *c, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    const struct ckh_scn_fault *f = arg;
    struct ckh_fs *fs = ckh_simfs_fs(d);
    char target[CKH_PATH_MAX], dir[CKH_PATH_MAX];
    int64_t n = ckh_fs_readlink(fs, dpath, target, sizeof target);
    if (n < 0)
        return 0; /* no link yet: nothing to damage */
    if (f->act.kind == CKH_SCN_ACT_DANGLING_LATEST) {
        snprintf(target, sizeof target, "missing_checkpoint_%" PRIu64, c->sc->seed);
    } else {
        struct ckh_listing l;
        ckh_path_dirname(dpath, dir, sizeof dir);
        if (ckh_fs_listdir(fs, dir, &l) != 0)
            return 0;
        /* The oldest folder other than the current target: names sort
         * with their numbers, so pick the smallest numeric suffix. */
        const char *best = NULL;
        long best_num = -1;
        for (size_t i = 0; i < l.count; i++) {
            const char *nm = l.entries[i].name;
            if (l.entries[i].type != CKH_FT_DIR || strcmp(nm, target) == 0)
                continue;
            const char *u = strrchr(nm, '_');
            long num = u ? strtol(u + 1, NULL, 10) : 0;
            if (!best || num < best_num) {
                best = nm;
                best_num = num;
            }
        }
        if (best)
            snprintf(target, sizeof target, "%s", best);
        ckh_fs_listing_free(&l);
        if (!best)
            return 0;
    }
    ckh_fs_unlink(fs, dpath);
    int rc = ckh_fs_symlink(fs, target, dpath);
    ckh_simfs_sync_all(d);
    if (rc)
        return fail(c, rc, "cannot relink %s: %s", dpath, ckh_strerror(rc));
    at_rest_hit(c);
    return 0;
}

static int corrupt_fn(struct run_ctx *c, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    const struct ckh_scn_fault *f = arg;
    struct ckh_fs *fs = ckh_simfs_fs(d);
    int rc = 0;
    switch (f->act.u.corrupt.mode) {
    case CKH_SCN_CORRUPT_BIT_FLIP:
        rc = ckh_simfs_flip_bit(d, dpath, f->act.u.corrupt.offset * 8 + f->act.u.corrupt.bit);
        break;
    case CKH_SCN_CORRUPT_TRUNCATE:
        rc = ckh_simfs_truncate_at_rest(d, dpath, f->act.u.corrupt.offset);
        break;
    case CKH_SCN_CORRUPT_ZERO_RANGE:
        rc = ckh_simfs_zero_range(d, dpath, f->act.u.corrupt.offset, f->act.u.corrupt.length);
        break;
    case CKH_SCN_CORRUPT_DELETE:
        rc = ckh_fs_unlink(fs, dpath);
        ckh_simfs_sync_all(d);
        break;
    case CKH_SCN_CORRUPT_OLDER_VERSION: {
        /* "<stem>.<N>" is replaced by the content of "<stem>.<N-back>". */
        const char *dot = strrchr(dpath, '.');
        char *end = NULL;
        long num = dot ? strtol(dot + 1, &end, 10) : -1;
        if (!dot || !end || *end || num - (long)f->act.u.corrupt.back < 0)
            return fail(c, CKH_EINVAL,
                        "%d:%d: older-version needs a path ending in .<N> with N >= back",
                        f->line, f->column);
        char older[CKH_PATH_MAX];
        snprintf(older, sizeof older, "%.*s.%ld", (int)(dot - dpath), dpath,
                 num - (long)f->act.u.corrupt.back);
        struct ckh_stat st;
        if ((rc = ckh_fs_stat(fs, older, &st)) != 0)
            break;
        void *buf = malloc(st.size_bytes ? st.size_bytes : 1);
        struct ckh_file *in = NULL, *out = NULL;
        if (!buf)
            return CKH_ENOMEM;
        if ((rc = ckh_fs_open(fs, older, CKH_O_RDONLY, &in)) == 0 &&
            (rc = ckh_file_pread_all(in, buf, st.size_bytes, 0)) == 0 &&
            (rc = ckh_fs_open(fs, dpath, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &out)) == 0)
            rc = ckh_file_write_all(out, buf, st.size_bytes);
        if (in)
            ckh_file_close(in);
        if (out)
            ckh_file_close(out);
        free(buf);
        ckh_simfs_sync_all(d);
        break;
    }
    }
    if (rc == -ENOENT || rc == CKH_ENOTFOUND)
        return 0; /* nothing there: the fault finds nothing to damage (not fired) */
    if (rc)
        return fail(c, rc, "%d:%d: corrupting %s: %s", f->line, f->column, dpath, ckh_strerror(rc));
    at_rest_hit(c);
    return 0;
}

static int remove_fn(struct run_ctx *c, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    (void)arg;
    int rc = ckh_simfs_remove_tree(d, dpath);
    if (rc == 0)
        at_rest_hit(c);
    return rc == -ENOENT ? 0 : rc;
}

static int disk_full_fn(struct run_ctx *c, struct ckh_simfs *d, const char *dpath, const void *arg)
{
    (void)dpath;
    const struct ckh_scn_fault *f = arg;
    at_rest_hit(c);
    return ckh_simfs_set_capacity(d, ckh_simfs_used_bytes(d) + f->act.u.disk_full.after_bytes + 1);
}

static int fault_node(struct run_ctx *c, const struct ckh_scn_fault *f)
{
    if (f->on.node_name) {
        for (int i = 0; i < c->n; i++)
            if (strcmp(c->names[i], f->on.node_name) == 0)
                return i;
        return -2;
    }
    return f->on.node < c->n ? f->on.node : -2;
}

/* Applies an at-rest fault now (between runs, or at its trigger). */
static int apply_at_rest(struct run_ctx *c, const struct ckh_scn_fault *f, int node)
{
    char link[CKH_PATH_MAX];
    switch (f->act.kind) {
    case CKH_SCN_ACT_CORRUPT:
        return for_each_disk(c, node, f->act.u.corrupt.path, corrupt_fn, f);
    case CKH_SCN_ACT_REMOVE_DIR:
        return for_each_disk(c, node, f->act.u.remove_dir.path, remove_fn, f);
    case CKH_SCN_ACT_DANGLING_LATEST:
    case CKH_SCN_ACT_STALE_LATEST:
        if (f->act.u.latest.path)
            snprintf(link, sizeof link, "%s", f->act.u.latest.path);
        else if (!c->ad->latest_link || c->ad->latest_link(c->inst, link, sizeof link) != 0)
            return fail(c, CKH_EINVAL, "%d:%d: workload '%s' keeps no latest pointer", f->line, f->column,
                        c->sc->job.workload);
        return for_each_disk(c, node, link, latest_fn, f);
    case CKH_SCN_ACT_DISK_FULL:
        if (!f->act.u.disk_full.disk)
            return for_each_disk(c, node, c->sc->job.checkpoint_dir, disk_full_fn, f);
        for (size_t d = 0; d < c->sc->job.ndisks; d++) {
            if (strcmp(c->sc->job.disks[d].name, f->act.u.disk_full.disk) != 0)
                continue;
            for (int i = 0; i < c->n; i++)
                if ((node < 0 || i == node) && (i == 0 || !c->sc->job.disks[d].shared))
                    disk_full_fn(c, c->disks[d * (size_t)c->n + (size_t)i], "/", f);
            return 0;
        }
        return fail(c, CKH_EINVAL, "%d:%d: disk-full names no disk of the job ('%s')", f->line, f->column,
                    f->act.u.disk_full.disk);
    default:
        return 0;
    }
}

static void call_at_trigger(void *ctx, const struct ckh_op *op)
{
    struct call_ctx *cc = ctx;
    cc->rc->at_rest_fault = (long)cc->index;
    apply_at_rest(cc->rc, cc->fault, cc->fault->on.node >= 0 || cc->fault->on.node_name ? op->node : -1);
    cc->rc->at_rest_fault = -1;
}

/* ---- fault rules ---- */

static int arm_faults(struct run_ctx *c, int run)
{
    ckh_sim_clear_faults(c->sim);
    c->nrules = 0;
    for (size_t i = 0; i < c->sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &c->sc->faults[i];
        if (f->on.run != CKH_SCN_RUN_ANY && (int)f->on.run != run)
            continue;
        int node = fault_node(c, f);
        if (node == -2)
            return fail(c, CKH_EINVAL, "%d:%d: the fault names a node the job does not have", f->line,
                        f->column);
        bool at_rest_kind = ckh_scn_action_is_at_rest(f->act.kind) || f->act.kind == CKH_SCN_ACT_DISK_FULL;
        if (c->rec) {
            c->rec->fault_armed[i] = true;
            if (f->act.kind == CKH_SCN_ACT_GPU_OOM)
                c->rec->fault_fired[i]++; /* applied by the adapter to the devices */
        }
        if (at_rest_kind && !f->on.matches_ops) {
            c->at_rest_fault = (long)i;
            int rc = apply_at_rest(c, f, node);
            c->at_rest_fault = -1;
            if (rc)
                return rc;
            continue;
        }
        struct ckh_fault_rule r;
        ckh_fault_rule_init(&r);
        r.node = node;
        r.kind = f->on.op;
        r.path_glob = f->on.path;
        r.phase = f->on.phase;
        r.epoch = f->on.epoch;
        r.step = f->on.step;
        r.nth = f->on.nth;
        r.at_time_ns = f->on.time_ns;
        r.probability = f->on.probability;
        r.repeat = f->on.repeat;
        switch (f->act.kind) {
        case CKH_SCN_ACT_KILL:
            if (f->act.u.kill.when == CKH_SCN_KILL_AFTER) {
                r.action.kind = CKH_FAULT_KILL_AFTER;
            } else if (f->act.u.kill.when == CKH_SCN_KILL_MID_WRITE) {
                r.action.kind = CKH_FAULT_KILL_MID;
                if (f->act.u.kill.at_is_fraction)
                    r.keep_fraction = f->act.u.kill.at_fraction;
                else
                    r.action.keep_bytes = f->act.u.kill.at_bytes;
            } else {
                r.action.kind = CKH_FAULT_KILL_BEFORE;
            }
            break;
        case CKH_SCN_ACT_CRASH:
        case CKH_SCN_ACT_POWER_LOSS:
            r.action.kind = f->act.kind == CKH_SCN_ACT_CRASH ? CKH_FAULT_CRASH_BEFORE : CKH_FAULT_POWER_LOSS;
            r.action.crash_keep = f->act.keep == CKH_SCN_KEEP_SYNCED ? CKH_CRASH_KEEP_SYNCED
                                  : f->act.keep == CKH_SCN_KEEP_CACHE ? CKH_CRASH_KEEP_CACHE
                                                                       : CKH_CRASH_KEEP_RANDOM;
            break;
        case CKH_SCN_ACT_ERRNO:
            r.action.kind = CKH_FAULT_ERRNO;
            r.action.err = f->act.u.errno_.err;
            break;
        case CKH_SCN_ACT_FSYNC_FAIL:
            r.action.kind = CKH_FAULT_FSYNC_LOST;
            if (r.kind < 0)
                r.kind = CKH_OP_FSYNC;
            break;
        case CKH_SCN_ACT_DELAY:
            r.action.kind = CKH_FAULT_DELAY;
            r.action.delay_ns = f->act.u.delay.duration_ns;
            break;
        case CKH_SCN_ACT_DIE_IN_COLLECTIVE:
            r.action.kind = CKH_FAULT_KILL_BEFORE;
            if (r.kind < 0)
                r.kind = CKH_OP_ALLREDUCE;
            break;
        case CKH_SCN_ACT_MISMATCH_COLLECTIVE:
            r.action.kind = CKH_FAULT_MISMATCH;
            if (r.kind < 0)
                r.kind = CKH_OP_ALLREDUCE;
            break;
        case CKH_SCN_ACT_GPU_OOM:
            /* Emulated devices belong to the workload: its adapter applies
             * the capacity; nothing to arm in the simulator. */
            continue;
        default: /* at-rest action at a trigger */
            c->calls[i].rc = c;
            c->calls[i].fault = f;
            c->calls[i].index = i;
            r.action.kind = CKH_FAULT_CALL;
            r.action.call = call_at_trigger;
            r.action.call_ctx = &c->calls[i];
            break;
        }
        if (ckh_sim_add_fault(c->sim, &r) != 0)
            return fail(c, CKH_EINVAL, "%d:%d: %s", f->line, f->column, ckh_sim_errmsg(c->sim));
        /* A CALL rule counts when its change lands (at_rest_hit), not when
         * its trigger matches. */
        c->rule_fault[c->nrules++] = r.action.kind == CKH_FAULT_CALL ? SIZE_MAX : i;
    }
    return 0;
}

/* The hook sees every op: it only tracks each node's progress. */
static void track_hook(void *ctx, const struct ckh_op *op, struct ckh_fault_action *act)
{
    (void)act;
    struct run_ctx *c = ctx;
    if (op->node < 0 || op->node >= c->n || !op->phase)
        return;
    struct track *t = &c->track[op->node];
    if (strcmp(t->phase, op->phase) != 0)
        snprintf(t->phase, sizeof t->phase, "%s", op->phase);
    if (strcmp(op->phase, "load") == 0) {
        t->load_seen = true;
        if (op->epoch >= 0)
            t->load_epoch = op->epoch;
    }
    if (strcmp(op->phase, "epoch") == 0 || strcmp(op->phase, "save") == 0) {
        int64_t v = c->step_based ? op->step : op->epoch;
        /* The first working op of a run tells where the run resumed: a
         * training job announces the step it continues from, an epoch job
         * the epoch it loaded (or 0 from scratch). */
        if (!t->resume_known) {
            t->resume_known = true;
            t->resume_point = c->step_based ? (v > 0 ? v : 0) : (t->load_seen ? t->load_epoch : 0);
        }
        if (v > t->progress)
            t->progress = v;
    }
}

/* ---- set-up ---- */

static void ctx_free(struct run_ctx *c)
{
    ckh_sim_destroy(c->sim);
    if (c->inst)
        c->ad->destroy(c->inst);
    free(c->names);
    free(c->disks);
    free(c->mounts);
    free(c->track);
    free(c->calls);
    free(c->rule_fault);
    memset(c, 0, sizeof *c);
}

/* restart.world_size is an input error for a workload that cannot
 * change its world size. */
static int check_world_size(const struct ckh_scenario *sc, const struct ckh_adapter_ops *ad,
                            char *err, size_t errlen)
{
    if (!sc->restart.world_size || ad->set_world)
        return 0;
    snprintf(err, errlen,
             "%d:%d: restart.world_size: workload '%s' cannot restart with another world size "
             "(its nodes are fixed); remove restart.world_size",
             sc->restart.world_size_line, sc->restart.world_size_column, ad->name);
    return CKH_EINVAL;
}

static int build_sim(struct run_ctx *c, const struct ckh_scenario *sc, uint64_t seed, unsigned mode,
                     bool keep_trace)
{
    int rc;
    memset(c, 0, sizeof *c);
    c->sc = sc;
    c->mode = mode;
    c->at_rest_fault = -1;
    c->ad = ckh_adapter_find(sc->job.workload);
    if (!c->ad)
        return fail(c, CKH_EINVAL, "no adapter for workload '%s'", sc->job.workload);
    if ((rc = c->ad->create(sc, seed, mode, &c->inst, c->err, sizeof c->err)) != 0)
        return rc;
    c->step_based = c->ad->step_based;
    if ((rc = check_world_size(sc, c->ad, c->err, sizeof c->err)) != 0)
        return rc;
    c->n = c->ad->node_count(c->inst);
    if (c->n < 1 || c->n > CKH_RUNNER_MAX_NODES)
        return fail(c, CKH_EINVAL, "workload '%s' has %d nodes (1..%d)", sc->job.workload, c->n,
                    CKH_RUNNER_MAX_NODES);
    size_t nd = sc->job.ndisks;
    c->names = calloc((size_t)c->n, sizeof *c->names);
    c->disks = calloc(nd * (size_t)c->n, sizeof *c->disks);
    c->mounts = calloc(nd * (size_t)c->n, sizeof *c->mounts);
    c->track = calloc((size_t)c->n, sizeof *c->track);
    c->calls = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *c->calls);
    c->rule_fault = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *c->rule_fault);
    if (!c->names || !c->disks || !c->mounts || !c->track || !c->calls || !c->rule_fault)
        return fail(c, CKH_ENOMEM, "out of memory");

    struct ckh_sim_config cfg = {
        .seed = seed,
        .time_limit_ns = RUN_TIME_LIMIT_NS,
        .op_limit = RUN_OP_LIMIT,
        .keep_trace = keep_trace,
        .coll_latency_ns = COLL_LATENCY_NS,
    };
    if ((rc = ckh_sim_create(&cfg, &c->sim)) != 0)
        return fail(c, rc, "cannot create the simulator");

    int ranks[CKH_RUNNER_MAX_NODES];
    ckh_node_main mains[CKH_RUNNER_MAX_NODES];
    void *args[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++)
        if ((rc = c->ad->node(c->inst, i, c->names[i], sizeof c->names[i], &ranks[i], &mains[i],
                              &args[i])) != 0)
            return fail(c, rc, "workload '%s': node %d: %s", sc->job.workload, i, ckh_strerror(rc));

    for (size_t d = 0; d < nd; d++) {
        const struct ckh_scn_disk *sd = &sc->job.disks[d];
        for (int i = 0; i < c->n; i++) {
            if (sd->shared && i > 0) {
                c->disks[d * (size_t)c->n + (size_t)i] = c->disks[d * (size_t)c->n];
                continue;
            }
            char name[128];
            if (sd->shared)
                snprintf(name, sizeof name, "%s", sd->name);
            else
                snprintf(name, sizeof name, "%s.%s", sd->name, c->names[i]);
            struct ckh_simfs_config dc = {
                .name = name,
                .model = sd->model,
                .sector_bytes = sd->sector_bytes,
                .capacity_bytes = sd->capacity_bytes,
                .latency_ns = sd->latency_ns,
                .ns_per_kib = sd->ns_per_kib,
            };
            if ((rc = ckh_sim_add_disk(c->sim, &dc, &c->disks[d * (size_t)c->n + (size_t)i])) != 0)
                return fail(c, rc, "disk %s: %s", name, ckh_sim_errmsg(c->sim));
        }
    }
    for (int i = 0; i < c->n; i++) {
        struct ckh_simfs_mount *m = &c->mounts[(size_t)i * nd];
        for (size_t d = 0; d < nd; d++) {
            m[d].prefix = sc->job.disks[d].mount;
            m[d].disk = c->disks[d * (size_t)c->n + (size_t)i];
        }
        struct ckh_node_config nc = {
            .name = c->names[i],
            .main = mains[i],
            .arg = args[i],
            .mounts = m,
            .nmounts = nd,
            .rank = ranks[i],
        };
        int id;
        if ((rc = ckh_sim_add_node(c->sim, &nc, &id)) != 0)
            return fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    }
    /* A resizing job: nodes outside the first world wait, parked. */
    for (int i = 0; i < c->n; i++)
        if (ranks[i] >= 0)
            c->world_first++;
    c->world_restart = c->world_first;
    if (!(mode & CKH_RUN_NO_FAULTS) && c->ad->set_world && sc->restart.world_size) {
        c->world_restart = (int)sc->restart.world_size;
        for (int i = 0; i < c->n && c->world_restart != c->world_first; i++)
            if (ranks[i] < 0 && (rc = ckh_sim_park(c->sim, i)) != 0)
                return fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    }
    /* The job's directories exist (and are durable) before it starts. */
    if ((rc = for_each_disk(c, -1, sc->job.checkpoint_dir, make_dir_fn, NULL)) != 0)
        return rc;
    ckh_sim_set_fault_hook(c->sim, track_hook, c);
    return 0;
}

/* ---- results ---- */

static void job_copy_free(struct ckh_job_copy *j)
{
    free(j->nodes);
    free(j->steps);
    free(j->samples);
    free(j->sample_counts);
    free(j->epoch_world);
    memset(j, 0, sizeof *j);
}

/* Entries of src->sample_counts (0 when not kept). */
static size_t counts_len(const struct ckh_job_result *src)
{
    return src->sample_counts && src->dataset_size ? src->nsamples * (size_t)src->dataset_size : 0;
}

static int job_copy(struct ckh_job_copy *dst, const struct ckh_job_result *src)
{
    job_copy_free(dst);
    dst->r = *src;
    size_t ncounts = counts_len(src);
    dst->nodes = calloc(src->nnodes ? src->nnodes : 1, sizeof *dst->nodes);
    dst->steps = calloc(src->nsteps ? src->nsteps : 1, sizeof *dst->steps);
    dst->samples = calloc(src->nsamples ? src->nsamples : 1, sizeof *dst->samples);
    if (ncounts)
        dst->sample_counts = calloc(ncounts, sizeof *dst->sample_counts);
    if (src->epoch_world)
        dst->epoch_world = calloc(src->nsamples ? src->nsamples : 1, sizeof *dst->epoch_world);
    if (!dst->nodes || !dst->steps || !dst->samples || (ncounts && !dst->sample_counts) ||
        (src->epoch_world && !dst->epoch_world))
        return CKH_ENOMEM;
    if (src->nnodes)
        memcpy(dst->nodes, src->nodes, src->nnodes * sizeof *dst->nodes);
    if (src->nsteps)
        memcpy(dst->steps, src->steps, src->nsteps * sizeof *dst->steps);
    if (src->nsamples)
        memcpy(dst->samples, src->samples, src->nsamples * sizeof *dst->samples);
    if (ncounts)
        memcpy(dst->sample_counts, src->sample_counts, ncounts * sizeof *dst->sample_counts);
    if (src->epoch_world && src->nsamples)
        memcpy(dst->epoch_world, src->epoch_world, src->nsamples * sizeof *dst->epoch_world);
    dst->r.nodes = dst->nodes;
    dst->r.steps = dst->steps;
    dst->r.samples = dst->samples;
    dst->r.sample_counts = dst->sample_counts;
    dst->r.dataset_size = ncounts ? src->dataset_size : 0;
    dst->r.epoch_world = dst->epoch_world;
    return 0;
}

const struct ckh_node_result *ckh_job_copy_node(const struct ckh_job_copy *c, const char *node)
{
    for (size_t i = 0; node && i < c->r.nnodes; i++)
        if (strcmp(c->r.nodes[i].node, node) == 0)
            return &c->r.nodes[i];
    return NULL;
}

void ckh_scenario_run_free(struct ckh_scenario_run *r)
{
    if (!r)
        return;
    job_copy_free(&r->ref);
    job_copy_free(&r->got);
    for (size_t i = 0; i < r->nruns; i++)
        free(r->runs[i].nodes);
    free(r->runs);
    free(r->fault_fired);
    free(r->fault_armed);
    r->fault_fired = NULL;
    r->fault_armed = NULL;
    r->runs = NULL;
    r->nruns = 0;
}

/* ---- execution ---- */

static bool rc_is_collective_failure(int rc)
{
    return rc == CKH_ETIMEOUT || rc == CKH_EPEER_DEAD || rc == CKH_EMISMATCH;
}

/* Between run 1 and run 2 of a resizing job: the adapter switches to the
 * new world, every node takes its new rank (all ranks first leave the
 * group, so no two nodes ever hold one rank), the ranked nodes restart and
 * the others are parked. */
static int resize(struct run_ctx *c)
{
    int rc;
    char msg[256] = "";
    if ((rc = c->ad->set_world(c->inst, c->world_restart, msg, sizeof msg)) != 0)
        return fail(c, rc, "%s", msg[0] ? msg : "restart.world_size: the workload refused it");
    for (int i = 0; i < c->n; i++)
        if ((rc = ckh_sim_set_rank(c->sim, i, -1)) != 0)
            return fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    int world = 0;
    for (int i = 0; i < c->n; i++) {
        char name[CKH_NODE_NAME_LEN];
        int rank = -1;
        ckh_node_main main_fn;
        void *arg;
        if ((rc = c->ad->node(c->inst, i, name, sizeof name, &rank, &main_fn, &arg)) != 0)
            return fail(c, rc, "workload '%s': node %d: %s", c->sc->job.workload, i, ckh_strerror(rc));
        if (rank >= 0) {
            world++;
            rc = ckh_sim_set_rank(c->sim, i, rank);
            if (rc == 0)
                rc = ckh_sim_restart(c->sim, i);
        } else {
            rc = ckh_sim_park(c->sim, i);
        }
        if (rc != 0)
            return fail(c, rc, "node %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
    }
    if (world != c->world_restart)
        return fail(c, CKH_EINVAL, "restart.world_size: workload '%s' gave %d ranks for world size %d",
                    c->sc->job.workload, world, c->world_restart);
    return 0;
}

/* Runs the job with restarts; fills the run records of out. */
static int execute(struct run_ctx *c, struct ckh_scenario_run *out)
{
    const bool with_faults = !(c->mode & CKH_RUN_NO_FAULTS);
    const struct ckh_scenario *sc = c->sc;
    uint32_t max_runs = with_faults ? 1 + sc->restart.max_restarts : 1;
    out->runs = calloc(max_runs, sizeof *out->runs);
    if (!out->runs)
        return fail(c, CKH_ENOMEM, "out of memory");
    if (with_faults) {
        free(out->fault_fired);
        free(out->fault_armed);
        out->fault_fired = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *out->fault_fired);
        out->fault_armed = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *out->fault_armed);
        if (!out->fault_fired || !out->fault_armed)
            return fail(c, CKH_ENOMEM, "out of memory");
        c->rec = out;
    }
    out->world = c->world_first;
    out->world_restart = c->world_restart;
    int rc;
    for (uint32_t run = 1; run <= max_runs; run++) {
        struct ckh_run_info *ri = &out->runs[out->nruns++];
        ri->run = (int)run;
        ri->resume_epoch = run == 1 ? -1 : sc->restart.resume_epoch;
        ri->nodes = calloc((size_t)c->n, sizeof *ri->nodes);
        if (!ri->nodes)
            return fail(c, CKH_ENOMEM, "out of memory");
        ri->nnodes = (size_t)c->n;
        c->ad->before_run(c->inst, (int)run, ri->resume_epoch);
        if (with_faults && (rc = arm_faults(c, (int)run)) != 0)
            return rc;
        for (int i = 0; i < c->n; i++) {
            memset(&c->track[i], 0, sizeof c->track[i]);
            c->track[i].progress = -1;
        }
        struct ckh_sim_result res;
        if ((rc = ckh_sim_run(c->sim, &res)) != 0)
            return fail(c, rc, "simulator: %s", ckh_sim_errmsg(c->sim));
        ri->outcome = res.outcome;
        for (size_t k = 0; with_faults && c->rec && k < c->nrules; k++)
            if (c->rule_fault[k] != SIZE_MAX)
                c->rec->fault_fired[c->rule_fault[k]] += ckh_sim_fault_fired(c->sim, k);
        ri->trace_end = ckh_sim_trace_len(c->sim);
        snprintf(ri->report, sizeof ri->report, "%s", res.report);
        out->virtual_ns = res.now_ns;
        if (res.outcome == CKH_SIM_DEADLOCK)
            out->deadlock_seen = true;
        if (res.outcome == CKH_SIM_TIME_LIMIT || res.outcome == CKH_SIM_OP_LIMIT)
            out->hang_seen = true;

        bool all_ok = res.outcome == CKH_SIM_DONE;
        for (int i = 0; i < c->n; i++) {
            struct ckh_node_status st;
            ckh_sim_node_status(c->sim, i, &st);
            struct ckh_node_end *ne = &ri->nodes[i];
            ne->state = st.state;
            ne->exit_status = st.exit_status;
            ne->progress = c->track[i].progress;
            ne->resume_known = c->track[i].resume_known;
            ne->resume_point = c->track[i].resume_point;
            snprintf(ne->phase, sizeof ne->phase, "%s", c->track[i].phase);
            if (st.pending)
                snprintf(ne->pending, sizeof ne->pending, "%s", st.pending);
            if (st.state == CKH_NODE_PARKED)
                continue; /* not part of this run's world */
            if (st.state == CKH_NODE_KILLED)
                ri->crashed = true;
            if (st.state != CKH_NODE_EXITED || st.exit_status != 0)
                all_ok = false;
            if (st.state == CKH_NODE_EXITED && rc_is_collective_failure(st.exit_status))
                out->timeout_seen = true;
        }
        /* A hung run is stopped by killing what still runs. */
        for (int i = 0; i < c->n; i++)
            if (ri->nodes[i].state == CKH_NODE_RUNNING || ri->nodes[i].state == CKH_NODE_READY)
                ckh_sim_kill(c->sim, i, false);

        struct ckh_job_result jr;
        if ((rc = c->ad->collect(c->inst, &jr)) != 0)
            return fail(c, rc, "collecting results: %s", ckh_strerror(rc));
        for (int i = 0; i < c->n && (size_t)i < jr.nnodes; i++) {
            ri->nodes[i].resumed_from = jr.nodes[i].resumed_from;
            ri->nodes[i].rc = jr.nodes[i].rc;
            if (rc_is_collective_failure(jr.nodes[i].rc))
                out->timeout_seen = true;
        }
        if (jr.corruption_detected)
            out->corruption_seen = true;
        if (jr.device_oom)
            out->oom_seen = true;
        out->saves_failed = 0;
        for (size_t i = 0; i < jr.nnodes; i++)
            out->saves_failed += jr.nodes[i].saves_failed;
        if ((rc = job_copy(&out->got, &jr)) != 0)
            return fail(c, rc, "out of memory");

        ri->completed = all_ok;
        if (all_ok) {
            out->completed = true;
            break;
        }
        if (ri->crashed && c->ad->verify) {
            struct ckh_fs *view = NULL;
            ri->committed_ok = true;
            /* What a restarted node 0 would see (node-local disks: node 0's). */
            if (ckh_simfs_view_create(NULL, -1, c->mounts, sc->job.ndisks, &view) == 0) {
                int v = c->ad->verify(c->inst, view, ri->committed_detail, sizeof ri->committed_detail);
                ri->committed_ok = v == 0;
                ckh_simfs_view_destroy(view);
            }
        }
        if (run == max_runs)
            break;
        if (run == 1 && c->world_restart != c->world_first) {
            if ((rc = resize(c)) != 0)
                return rc;
            out->resized = true;
            continue;
        }
        /* Restart what did not finish. Ranks form one group: when any rank
         * failed, every rank restarts (as a job launcher restarts all
         * workers), since a lone restarted rank could never meet the others. */
        bool group_failed = false;
        for (int i = 0; i < c->n; i++) {
            struct ckh_node_status st;
            ckh_sim_node_status(c->sim, i, &st);
            if (st.rank >= 0 && !(st.state == CKH_NODE_EXITED && st.exit_status == 0))
                group_failed = true;
        }
        for (int i = 0; i < c->n; i++) {
            struct ckh_node_status st;
            ckh_sim_node_status(c->sim, i, &st);
            bool done = st.state == CKH_NODE_EXITED && st.exit_status == 0;
            if (st.state == CKH_NODE_PARKED || (done && !(group_failed && st.rank >= 0)))
                continue;
            if ((rc = ckh_sim_restart(c->sim, i)) != 0)
                return fail(c, rc, "restart of %s: %s", c->names[i], ckh_sim_errmsg(c->sim));
        }
    }
    out->trace_hash = ckh_sim_trace_hash(c->sim);
    return 0;
}

/* ---- the reference run and its cache ---- */

/* A canonical description of the job: what the reference run depends on. */
static uint64_t job_key(const struct ckh_scenario *sc, uint64_t seed)
{
    /* Strings are hashed whole (with their terminators), numbers through a
     * fixed-size buffer: nothing is truncated, whatever the lengths. */
    const struct ckh_scn_job *j = &sc->job;
    uint64_t h = ckh_hash64(CKH_HASH_INIT, "v2", 3);
    const char *strs[] = {j->workload, j->backend ? j->backend : "", j->saver.kind ? j->saver.kind : "",
                          j->saver.name ? j->saver.name : "", j->checkpoint_dir};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        h = ckh_hash64(h, strs[i], strlen(strs[i]) + 1);
    uint64_t nums[] = {j->nodes, j->epochs, j->steps, j->saver.keep_last, (uint64_t)j->saver.strategy,
                       j->every_epochs, j->every_steps, j->collective_timeout_ns, j->gpu_mem_bytes, seed};
    h = ckh_hash64(h, nums, sizeof nums);
    for (size_t i = 0; i < j->noptions; i++) {
        h = ckh_hash64(h, j->options[i].key, strlen(j->options[i].key) + 1);
        h = ckh_hash64(h, j->options[i].text, strlen(j->options[i].text) + 1);
    }
    for (size_t i = 0; i < j->ndisks; i++) {
        const struct ckh_scn_disk *d = &j->disks[i];
        h = ckh_hash64(h, d->name, strlen(d->name) + 1);
        h = ckh_hash64(h, d->mount, strlen(d->mount) + 1);
        uint64_t dn[] = {d->shared, (uint64_t)d->model, d->sector_bytes, d->capacity_bytes,
                         d->latency_ns, d->ns_per_kib};
        h = ckh_hash64(h, dn, sizeof dn);
    }
    return h;
}

#define CACHE_MAGIC 0x32464552484b43ull /* "CKHREF2" */

/* Cache file: u64 header {magic, key, nnodes, nsteps, nsamples, flags,
 * dataset_size, reserved}, then the node, step and epoch records, then
 * (flag bit 3) nsamples * dataset_size u32 sample counts, then (flag bit 4)
 * nsamples i32 epoch worlds. Flags: bit 0 corruption, 1 device OOM, 2 the
 * reference completed, 3 counts, 4 epoch worlds, 5 drop_last. Host byte
 * order: a cache belongs to one machine. */
static int cache_load(const char *dir, uint64_t key, struct ckh_job_copy *dst, bool *ok)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%016" PRIx64 ".ref", dir, key);
    FILE *f = fopen(path, "rb");
    if (!f)
        return CKH_ENOTFOUND;
    uint64_t hdr[8];
    int rc = CKH_ECORRUPT;
    struct ckh_job_result r;
    memset(&r, 0, sizeof r);
    if (fread(hdr, sizeof hdr, 1, f) == 1 && hdr[0] == CACHE_MAGIC && hdr[1] == key &&
        hdr[2] < 1u << 20 && hdr[3] < 1u << 26 && hdr[4] < 1u << 20 && hdr[6] < 1u << 26 &&
        hdr[4] * hdr[6] < 1u << 26) {
        r.nnodes = hdr[2];
        r.nsteps = hdr[3];
        r.nsamples = hdr[4];
        r.corruption_detected = hdr[5] & 1;
        r.device_oom = (hdr[5] >> 1) & 1;
        *ok = (hdr[5] >> 2) & 1;
        bool has_counts = (hdr[5] >> 3) & 1, has_world = (hdr[5] >> 4) & 1;
        r.drop_last = (hdr[5] >> 5) & 1;
        size_t ncounts = has_counts ? r.nsamples * (size_t)hdr[6] : 0;
        struct ckh_node_result *nodes = calloc(r.nnodes + 1, sizeof *nodes);
        struct ckh_step_record *steps = calloc(r.nsteps + 1, sizeof *steps);
        struct ckh_epoch_samples *samples = calloc(r.nsamples + 1, sizeof *samples);
        uint32_t *counts = calloc(ncounts + 1, sizeof *counts);
        int *worlds = calloc(r.nsamples + 1, sizeof *worlds);
        if (nodes && steps && samples && counts && worlds &&
            fread(nodes, sizeof *nodes, r.nnodes, f) == r.nnodes &&
            fread(steps, sizeof *steps, r.nsteps, f) == r.nsteps &&
            fread(samples, sizeof *samples, r.nsamples, f) == r.nsamples &&
            fread(counts, sizeof *counts, ncounts, f) == ncounts &&
            (!has_world || fread(worlds, sizeof *worlds, r.nsamples, f) == r.nsamples)) {
            r.nodes = nodes;
            r.steps = steps;
            r.samples = samples;
            r.sample_counts = ncounts ? counts : NULL;
            r.dataset_size = ncounts ? hdr[6] : 0;
            r.epoch_world = has_world ? worlds : NULL;
            rc = job_copy(dst, &r);
        }
        free(nodes);
        free(steps);
        free(samples);
        free(counts);
        free(worlds);
    }
    fclose(f);
    return rc;
}

static void cache_store(const char *dir, uint64_t key, const struct ckh_job_copy *src, bool ok)
{
    char path[1024], tmp[1100];
    snprintf(path, sizeof path, "%s/%016" PRIx64 ".ref", dir, key);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    size_t ncounts = counts_len(&src->r);
    bool has_world = src->r.epoch_world != NULL;
    uint64_t hdr[8] = {CACHE_MAGIC, key, src->r.nnodes, src->r.nsteps, src->r.nsamples,
                       (uint64_t)src->r.corruption_detected | (uint64_t)src->r.device_oom << 1 |
                           (uint64_t)ok << 2 | (uint64_t)(ncounts > 0) << 3 |
                           (uint64_t)has_world << 4 | (uint64_t)src->r.drop_last << 5,
                       ncounts ? src->r.dataset_size : 0, 0};
    bool good = fwrite(hdr, sizeof hdr, 1, f) == 1 &&
                fwrite(src->r.nodes, sizeof *src->r.nodes, src->r.nnodes, f) == src->r.nnodes &&
                fwrite(src->r.steps, sizeof *src->r.steps, src->r.nsteps, f) == src->r.nsteps &&
                fwrite(src->r.samples, sizeof *src->r.samples, src->r.nsamples, f) == src->r.nsamples &&
                (!ncounts || fwrite(src->r.sample_counts, sizeof *src->r.sample_counts, ncounts, f) == ncounts) &&
                (!has_world || fwrite(src->r.epoch_world, sizeof *src->r.epoch_world, src->r.nsamples, f) ==
                                   src->r.nsamples);
    good = fclose(f) == 0 && good;
    if (good)
        rename(tmp, path); /* atomic: concurrent workers never see half a file */
    else
        unlink(tmp);
}

static int reference(const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                     struct ckh_scenario_run *out, char *err, size_t errlen)
{
    uint64_t key = job_key(sc, seed);
    if (o->cache_dir && cache_load(o->cache_dir, key, &out->ref, &out->ref_ok) == 0)
        return 0;
    struct run_ctx c;
    struct ckh_scenario_run tmp;
    memset(&tmp, 0, sizeof tmp);
    int rc = build_sim(&c, sc, seed, CKH_RUN_REFERENCE, false);
    if (rc == 0)
        rc = execute(&c, &tmp);
    if (rc == 0) {
        out->ref_ok = tmp.completed;
        rc = job_copy(&out->ref, &tmp.got.r);
        if (rc == 0 && o->cache_dir)
            cache_store(o->cache_dir, key, &out->ref, out->ref_ok);
    } else {
        /* A located message is an input error: no "reference run" prefix. */
        snprintf(err, errlen, "%s%s", c.err[0] >= '0' && c.err[0] <= '9' ? "" : "reference run: ", c.err);
    }
    ckh_scenario_run_free(&tmp);
    ctx_free(&c);
    return rc;
}

/* ---- verdict ---- */

static bool oracle_selected(const struct ckh_scenario *sc, const char *name)
{
    for (size_t i = 0; i < sc->expect.nskip; i++)
        if (strcmp(sc->expect.skip[i], name) == 0)
            return false;
    if (sc->expect.noracles == 0)
        return true;
    for (size_t i = 0; i < sc->expect.noracles; i++)
        if (strcmp(sc->expect.oracles[i], name) == 0)
            return true;
    return false;
}

static bool must_detect(const struct ckh_scenario *sc, const char *name)
{
    for (size_t i = 0; i < sc->expect.ndetect; i++)
        if (strcmp(sc->expect.detect[i], name) == 0)
            return true;
    return false;
}

/* Runs every selected oracle that applies. Normally the first failing one
 * fails the scenario. With expect.detect (a planted defect), the scenario
 * passes only when each named oracle applies and reports a violation; the
 * other oracles are recorded for information. */
static void judge(const struct ckh_scenario_run *r, struct ckh_report_result *out)
{
    const struct ckh_scenario *sc = r->sc;
    bool detect_mode = sc->expect.ndetect > 0;
    size_t detected = 0, judged = 0;
    out->verdict = CKH_VERDICT_PASS;
    for (size_t i = 0; ckh_oracle_at(i); i++) {
        const struct ckh_oracle_ops *o = ckh_oracle_at(i);
        bool wanted = must_detect(sc, o->name);
        if (!wanted && !oracle_selected(sc, o->name))
            continue;
        if (!o->applies(r)) {
            if (wanted && out->verdict == CKH_VERDICT_PASS) {
                out->verdict = CKH_VERDICT_FAIL;
                ckh_report_set(&out->failed_oracle, "%s", o->name);
                ckh_report_set(&out->message, "the planted defect was to be detected by '%s', "
                               "which does not apply to this run", o->name);
            }
            continue;
        }
        char detail[1536] = "";
        int64_t divergent = -1;
        bool ok = o->check(r, detail, sizeof detail, &divergent);
        judged++;
        if (detect_mode && wanted) {
            char shown[1600];
            snprintf(shown, sizeof shown, "%s: %s", ok ? "missed the planted defect" : "detected the planted defect", detail);
            ckh_report_add_oracle(out, o->name, !ok, shown);
            if (!ok) {
                detected++;
                if (out->first_divergent_step < 0)
                    out->first_divergent_step = divergent;
            } else if (out->verdict == CKH_VERDICT_PASS) {
                out->verdict = CKH_VERDICT_FAIL;
                ckh_report_set(&out->failed_oracle, "%s", o->name);
                ckh_report_set(&out->message, "the planted defect went undetected: %s", detail);
            }
            continue;
        }
        ckh_report_add_oracle(out, o->name, ok, detail);
        if (!ok && !detect_mode && out->verdict == CKH_VERDICT_PASS) {
            out->verdict = CKH_VERDICT_FAIL;
            ckh_report_set(&out->failed_oracle, "%s", o->name);
            ckh_report_set(&out->message, "%s", detail);
            out->first_divergent_step = divergent;
        }
    }
    if (!detect_mode && judged == 0 && out->verdict == CKH_VERDICT_PASS) {
        out->verdict = CKH_VERDICT_ERROR;
        ckh_report_set(&out->message, "no selected oracle applies to this run: nothing was judged "
                                      "(check expect.oracles and expect.skip)");
    }
    if (detect_mode && out->verdict == CKH_VERDICT_PASS && detected < sc->expect.ndetect) {
        out->verdict = CKH_VERDICT_FAIL;
        ckh_report_set(&out->message, "expected oracle(s) to detect the planted defect: %zu of %zu did",
                       detected, sc->expect.ndetect);
    }
}

/* Looks for reference/<golden> in the scenario's folder and each of its
 * parents, then under source_dir: a scenario library finds its golden
 * files wherever ckh is started from. */
static int find_golden(const struct ckh_scenario *sc, const char *source_dir, char *out, size_t n)
{
    char dir[CKH_PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s", sc->file ? sc->file : ".");
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        *slash = '\0';
        snprintf(out, n, "%s/reference/%s", dir[0] ? dir : "", sc->expect.golden);
        if (access(out, R_OK) == 0)
            return 0;
    }
    snprintf(out, n, "reference/%s", sc->expect.golden);
    if (access(out, R_OK) == 0)
        return 0;
    snprintf(out, n, "%s/reference/%s", source_dir, sc->expect.golden);
    return access(out, R_OK) == 0 ? 0 : CKH_EINVAL;
}

/* A scenario with planted defects must fail its detecting oracles because
 * of the defects, not because of its faults: the same faulted job without
 * the defect switches (the control) must not trip them. */
static int control_check(const struct ckh_scenario *sc, uint64_t seed, const struct ckh_scenario_run *r,
                         struct ckh_report_result *out, char *err, size_t errlen)
{
    struct run_ctx c;
    struct ckh_scenario_run ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.sc = sc;
    ctl.seed = seed;
    ctl.source_dir = r->source_dir;
    int rc = build_sim(&c, sc, seed, CKH_RUN_NO_DEFECTS, false);
    if (rc == 0)
        rc = execute(&c, &ctl);
    if (rc == 0)
        rc = job_copy(&ctl.ref, &r->ref.r);
    if (rc != 0) {
        snprintf(err, errlen, "control run without the defect switches: %s", c.err[0] ? c.err : ckh_strerror(rc));
        goto out;
    }
    ctl.ref_ok = r->ref_ok;
    ctl.interval = c.ad->interval ? c.ad->interval(c.inst) : 1;
    for (size_t i = 0; i < sc->expect.ndetect && out->verdict == CKH_VERDICT_PASS; i++) {
        const struct ckh_oracle_ops *o = ckh_oracle_find(sc->expect.detect[i]);
        char detail[1536] = "";
        int64_t divergent = -1;
        if (!o || !o->applies(&ctl) || o->check(&ctl, detail, sizeof detail, &divergent))
            continue;
        out->verdict = CKH_VERDICT_FAIL;
        ckh_report_set(&out->failed_oracle, "%s", o->name);
        ckh_report_set(&out->message,
                       "the planted defect is not what '%s' detects: it reports a violation without "
                       "the defect switches too: %s",
                       o->name, detail);
    }
out:
    ckh_scenario_run_free(&ctl);
    ctx_free(&c);
    return rc;
}

int ckh_harness_run(const struct ckh_scenario *sc, const struct ckh_run_options *opts,
                   struct ckh_report_result *out)
{
    struct ckh_run_options dflt = {0};
    const struct ckh_run_options *o = opts ? opts : &dflt;
    uint64_t t0 = wall_ms();
    uint64_t seed = o->seed_set ? o->seed : sc->seed;
    struct ckh_scenario_run r;
    struct run_ctx c;
    char err[600] = "";
    int rc;
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    r.sc = sc;
    r.seed = seed;
    r.source_dir = o->source_dir ? o->source_dir : ".";

    ckh_report_set(&out->name, "%s", sc->name);
    ckh_report_set(&out->file, "%s", sc->file);
    out->seed = seed;
    ckh_report_set(&out->replay, "%s run %s --seed %" PRIu64, o->argv0 ? o->argv0 : "ckh", sc->file, seed);

    const struct ckh_adapter_ops *ad = ckh_adapter_find(sc->job.workload);
    if (ad && (rc = check_world_size(sc, ad, err, sizeof err)) != 0)
        goto out_error;
    if ((rc = reference(sc, seed, o, &r, err, sizeof err)) != 0)
        goto out_error;
    if (!r.ref_ok) {
        /* Without faults and defects the job must complete: a scenario
         * whose reference fails judges nothing (bad input). */
        const char *why = "";
        for (size_t i = 0; i < r.ref.r.nnodes && !why[0]; i++)
            if (r.ref.r.nodes[i].rc != 0)
                why = ckh_err_name(r.ref.r.nodes[i].rc);
        snprintf(err, sizeof err, "the fault-free reference run of this job does not complete%s%s",
                 why[0] ? ": " : "", why);
        rc = CKH_EINVAL;
        goto out_error;
    }
    if (sc->expect.golden && (rc = find_golden(sc, r.source_dir, r.golden_path, sizeof r.golden_path)) != 0) {
        snprintf(err, sizeof err, "golden file '%s' not found under reference/ next to the scenario, "
                 "in its parent folders, or in %s/reference", sc->expect.golden, r.source_dir);
        goto out_error;
    }
    if ((rc = build_sim(&c, sc, seed, 0, o->on_trace || o->timeline)) != 0 ||
        (rc = execute(&c, &r)) != 0) {
        snprintf(err, sizeof err, "%s", c.err);
        goto out_error;
    }
    r.interval = c.ad->interval ? c.ad->interval(c.inst) : 1;
    if (o->on_trace)
        o->on_trace(o->on_trace_ctx, c.sim, &r);
    if (o->timeline)
        ckh_timeline_build(c.sim, &r, &out->timeline); /* harness/fuzz_timeline.c */
    if (o->check_determinism) {
        struct run_ctx c2;
        struct ckh_scenario_run r2;
        memset(&r2, 0, sizeof r2);
        r2.sc = sc;
        if ((rc = build_sim(&c2, sc, seed, 0, false)) == 0 && (rc = execute(&c2, &r2)) == 0)
            r.trace_hash2 = r2.trace_hash ? r2.trace_hash : 1;
        ckh_scenario_run_free(&r2);
        ctx_free(&c2);
        if (rc != 0) {
            snprintf(err, sizeof err, "second execution: %s", ckh_strerror(rc));
            goto out_error;
        }
    }
    out->runs = (uint32_t)r.nruns;
    out->restarts = r.nruns ? (uint32_t)r.nruns - 1 : 0;
    out->virtual_ns = r.virtual_ns;
    judge(&r, out);
    if (sc->expect.ndetect && sc->job.ndefects && out->verdict == CKH_VERDICT_PASS &&
        (rc = control_check(sc, seed, &r, out, err, sizeof err)) != 0)
        goto out_error;
    out->wall_ms = wall_ms() - t0;
    ctx_free(&c);
    ckh_scenario_run_free(&r);
    return 0;

out_error:
    out->verdict = CKH_VERDICT_ERROR;
    /* A message that starts with "line:column:" joins its file directly. */
    ckh_report_set(&out->message, "%s%s%s", sc->file,
                   err[0] >= '0' && err[0] <= '9' ? ":" : ": ", err[0] ? err : ckh_strerror(rc));
    out->wall_ms = wall_ms() - t0;
    ctx_free(&c);
    ckh_scenario_run_free(&r);
    return rc;
}

int ckh_harness_replay(const struct ckh_scenario *sc, const struct ckh_run_options *opts,
                      const char *node_filter, const char *op_filter, void *fp, char *msg,
                      size_t msglen)
{
    FILE *f = fp;
    uint64_t seed = opts && opts->seed_set ? opts->seed : sc->seed;
    struct run_ctx c;
    struct ckh_scenario_run r;
    memset(&r, 0, sizeof r);
    r.sc = sc;
    int rc = build_sim(&c, sc, seed, 0, true);
    if (rc == 0)
        rc = execute(&c, &r);
    if (rc != 0) {
        snprintf(msg, msglen, "%s", c.err[0] ? c.err : ckh_strerror(rc));
        goto out;
    }
    int op = -1;
    if (op_filter && (op = ckh_op_from_name(op_filter)) < 0) {
        snprintf(msg, msglen, "unknown operation '%s'", op_filter);
        rc = CKH_EINVAL;
        goto out;
    }
    int node = -1;
    char *end = NULL;
    long idx = node_filter ? strtol(node_filter, &end, 10) : -1;
    if (node_filter && end && !*end && idx >= 0 && idx < c.n) /* a node index, as triggers allow */
        node = (int)idx;
    else if (node_filter && (node = ckh_sim_node_id(c.sim, node_filter)) < 0) {
        snprintf(msg, msglen, "unknown node '%s'", node_filter);
        rc = CKH_EINVAL;
        goto out;
    }
    uint64_t len = ckh_sim_trace_len(c.sim);
    size_t run = 0;
    if (r.nruns > 0)
        fprintf(f, "# run 1\n");
    for (uint64_t i = 0; i < len; i++) {
        struct ckh_trace_rec rec;
        if (ckh_sim_trace_get(c.sim, i, &rec) != 0)
            break;
        /* Runs are separated so a restart is visible at a glance. */
        while (run + 1 < r.nruns && i >= r.runs[run].trace_end) {
            run++;
            fprintf(f, "# run %zu (restart %zu)\n", run + 1, run);
        }
        if ((node >= 0 && rec.node != node) || (op >= 0 && (int)rec.kind != op))
            continue;
        char line[1024];
        ckh_trace_format(c.sim, &rec, line, sizeof line);
        fprintf(f, "%s\n", line);
    }
    fprintf(f, "# %zu run%s, trace hash %016" PRIx64 ", seed %" PRIu64 "\n", r.nruns,
            r.nruns == 1 ? "" : "s", ckh_sim_trace_hash(c.sim), seed);
out:
    ckh_scenario_run_free(&r);
    ctx_free(&c);
    return rc;
}
