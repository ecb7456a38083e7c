/* The fault script on real processes (run/command.h): the scenario's
 * faults, armed by the same descriptors as in the simulator
 * (harness/faults/), matched against the operations a program asks of a
 * ckhfs mount, or against its progress, and carried out on its processes
 * and disks.
 *
 * Matching is the simulator's (sim/sched.c, "Faults"): a rule matches an
 * operation when each selector it sets matches (node, op, fnmatch of the
 * path glob on the scenario path, step and epoch, time); every match
 * counts; it fires on its nth match (with `repeat` on every later one
 * too, deferred to its next match when an earlier rule took the op), or
 * with `probability` per match from its own stream
 * ckh_seed_derive(seed, "fault/INDEX"). The first rule that fires gives
 * the action. What differs for real processes:
 *   - step and epoch are the node's latest result records (read from its
 *     result file before the operation is matched), time is wall-clock
 *     time since the run started;
 *   - a progress trigger (ckh_scn_fault_is_progress_trigger) fires once,
 *     when the node's records reach its step or epoch, or at its time,
 *     without waiting for an operation;
 *   - actions become ckhfs verdicts: errno, a short write, a delay (wall
 *     clock), a kill before or after the op answers (SIGKILL to the node's
 *     process group from the server thread, before the answer); a
 *     mid-write kill kills the group, then lets `at` bytes land; fsync-fail
 *     arms simfs's FSYNC_LOST on the disk for this very fsync; crash and
 *     power-loss kill (one node, every node) and apply the crash model to
 *     the disks once every process is gone; sigterm sends SIGTERM and
 *     SIGKILL after its grace; an at-rest fault with a trigger changes the
 *     disk from the server thread, which is the only one touching it then.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "run/command.h"
#include "run/workloads.h"

/* ---- the trace ---- */

void ckh__cmd_trace_add(struct ckh__cmd *c, const struct ckh__cmd_trace *t)
{
    if (c->ntrace == c->captrace) {
        size_t cap = c->captrace ? c->captrace * 2 : 256;
        struct ckh__cmd_trace *v = realloc(c->trace, cap * sizeof *v);
        if (!v)
            return; /* the trace is for people: a line lost to memory is not a verdict */
        c->trace = v;
        c->captrace = cap;
    }
    struct ckh__cmd_trace *d = &c->trace[c->ntrace++];
    *d = *t;
    d->path = t->path ? strdup(t->path) : NULL;
    d->path2 = t->path2 ? strdup(t->path2) : NULL;
}

/* ---- arming ---- */

static void rules_free(struct ckh__cmd *c)
{
    free(c->rules);
    c->rules = NULL;
    c->nrules = 0;
}

/* The node fault f names: its index, -1 for any, -2 when the job has none such. */
static int fault_node(const struct ckh__cmd *c, const struct ckh_scn_fault *f)
{
    if (f->on.node_name) {
        for (int i = 0; i < c->n; i++)
            if (!strcmp(c->nodes[i].name, f->on.node_name))
                return i;
        return -2;
    }
    return f->on.node < c->n ? f->on.node : -2;
}

static int unknown_node(struct ckh__cmd *c, const struct ckh_scn_fault *f)
{
    char nodes[256] = "";
    size_t used = 0;
    for (int i = 0; i < c->n && used < sizeof nodes; i++)
        used += (size_t)snprintf(nodes + used, sizeof nodes - used, "%s%s", i ? ", " : "", c->nodes[i].name);
    return ckh__cmd_fail(c, CKH_EINVAL, "%s:%d:%d: the fault names node '%s', which the job does not have "
                         "(its nodes: %s)", c->sc->file, f->line, f->column,
                         f->on.node_name ? f->on.node_name : "?", nodes);
}

/* Applies at-rest fault `index` to the disks now (node -1: every node's). */
static int apply_at_rest(struct ckh__cmd *c, size_t index, int node)
{
    const struct ckh_scn_fault *f = &c->sc->faults[index];
    c->env.fired = c->rec ? &c->rec->fault_fired[index] : NULL;
    c->env.err = c->err;
    c->env.errlen = sizeof c->err;
    int rc = ckh_fault_of(f->act.kind)->apply(&c->env, f, node);
    c->env.fired = NULL;
    c->at_rest_applied = true;
    if (rc && !c->err_code)
        c->err_code = rc;
    return rc;
}

int ckh__cmd_arm(struct ckh__cmd *c, int run)
{
    const struct ckh_scenario *sc = c->sc;
    rules_free(c);
    c->at_rest_applied = false;
    if (c->mode & CKH_RUN_NO_FAULTS)
        return 0;
    if (!(c->rules = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *c->rules)))
        return ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
    for (size_t i = 0; i < sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &sc->faults[i];
        const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
        if (f->on.run != CKH_SCN_RUN_ANY && (int)f->on.run != run)
            continue;
        int node = fault_node(c, f), rc;
        if (node == -2)
            return unknown_node(c, f);
        if (c->rec)
            c->rec->fault_armed[i] = true;
        if (ckh_fault_applied_between_runs(f)) {
            if ((rc = apply_at_rest(c, i, node)) != 0)
                return rc;
            continue;
        }
        struct ckh__cmd_rule *r = &c->rules[c->nrules];
        memset(r, 0, sizeof *r);
        r->fault = i;
        ckh_fault_rule_init(&r->r);
        r->r.node = node;
        r->r.kind = f->on.op;
        r->r.path_glob = f->on.path;
        r->r.epoch = f->on.epoch;
        r->r.step = f->on.step;
        r->r.nth = f->on.nth;
        r->r.at_time_ns = f->on.time_ns;
        r->r.probability = f->on.probability;
        r->r.repeat = f->on.repeat;
        r->progress = ckh_scn_fault_is_progress_trigger(f);
        if (f->act.kind == CKH_SCN_ACT_SIGTERM) {
            r->sigterm = true;
            r->grace_ms = (f->act.u.sigterm.grace_ns + 999999) / 1000000;
        } else if (ops->apply) {
            r->at_rest = true;
        } else if (ops->arm) {
            ops->arm(f, &r->r);
        } else {
            continue; /* refused at parse time (devices, collectives) */
        }
        char name[32];
        snprintf(name, sizeof name, "fault/%zu", c->nrules);
        ckh_rng_seed(&r->rng, ckh_seed_derive(c->seed, name));
        c->nrules++;
    }
    return 0;
}

bool ckh__cmd_fault_fired(void *ctx)
{
    struct ckh__cmd *c = ctx;
    if (c->at_rest_applied)
        return true;
    for (size_t k = 0; k < c->nrules; k++)
        if (c->rules[k].fired)
            return true;
    return false;
}

/* ---- matching ---- */

static uint64_t elapsed_ns(const struct ckh__cmd *c)
{
    return (ckh_posix_now_ms() - c->run_t0_ms) * 1000000u;
}

/* The kernel hands ckhfs every write with its offset, whether the program
 * called write or pwrite (and every read likewise): on a mount the two
 * names select the same operations. */
static bool same_kind(int want, int kind)
{
    bool w = want == CKH_OP_WRITE || want == CKH_OP_PWRITE, r = want == CKH_OP_READ || want == CKH_OP_PREAD;
    return (w && (kind == CKH_OP_WRITE || kind == CKH_OP_PWRITE)) ||
           (r && (kind == CKH_OP_READ || kind == CKH_OP_PREAD));
}

static bool rule_matches(const struct ckh__cmd *c, const struct ckh__cmd_rule *r, int node, int kind,
                         const char *path)
{
    const struct ckh__cmd_progress *p = &c->nodes[node].prog;
    if (r->r.node >= 0 && r->r.node != node)
        return false;
    if (r->r.kind >= 0 && r->r.kind != kind && !same_kind(r->r.kind, kind))
        return false;
    if (r->r.path_glob && (!path || fnmatch(r->r.path_glob, path, 0) != 0))
        return false;
    if (r->r.epoch >= 0 && r->r.epoch != p->epoch)
        return false;
    if (r->r.step >= 0 && r->r.step != p->step)
        return false;
    return !r->r.at_time_ns || elapsed_ns(c) >= r->r.at_time_ns;
}

/* Counts a match and says whether r fires on it (sim/sched.c's rule_fires). */
static bool rule_fires(struct ckh__cmd_rule *r, bool taken)
{
    r->matches++;
    bool due;
    if (r->r.probability > 0) {
        due = ckh_rng_unit(&r->rng) < r->r.probability;
    } else {
        uint64_t nth = r->r.nth ? r->r.nth : 1;
        due = r->deferred || r->matches == nth || (r->r.repeat && r->matches > nth);
    }
    if (!due)
        return false;
    if (taken) {
        if (r->r.probability == 0 && !r->r.repeat)
            r->deferred = true;
        return false;
    }
    r->deferred = false;
    if (!r->r.repeat)
        r->spent = true;
    return true;
}

/* Actions that only make sense on some operations do not match others. */
static bool action_fits(const struct ckh__cmd_rule *r, int kind)
{
    if (r->sigterm || r->at_rest)
        return true;
    switch (r->r.action.kind) {
    case CKH_FAULT_FSYNC_LOST: return kind == CKH_OP_FSYNC || kind == CKH_OP_FDATASYNC;
    case CKH_FAULT_SHORT_WRITE: return kind == CKH_OP_WRITE || kind == CKH_OP_PWRITE;
    default: return true;
    }
}

/* ---- carrying a fault out ---- */

/* What rule r does, as a FAULT line names it ("kill_mid", "corrupt"). */
static const char *action_name(const struct ckh__cmd *c, const struct ckh__cmd_rule *r)
{
    if (r->sigterm || r->at_rest)
        return ckh_scn_action_name(c->sc->faults[r->fault].act.kind);
    switch (r->r.action.kind) {
    case CKH_FAULT_ERRNO: return "errno";
    case CKH_FAULT_KILL_BEFORE: return "kill_before";
    case CKH_FAULT_KILL_AFTER: return "kill_after";
    case CKH_FAULT_KILL_MID: return "kill_mid";
    case CKH_FAULT_CRASH_BEFORE: return "crash_before";
    case CKH_FAULT_POWER_LOSS: return "power_loss";
    case CKH_FAULT_DELAY: return "delay";
    case CKH_FAULT_FSYNC_LOST: return "fsync_lost";
    case CKH_FAULT_SHORT_WRITE: return "short_write";
    default: return "none";
    }
}

/* Counts rule r's firing and writes its FAULT line: on node's op `kind` at
 * path, or (kind < 0) on the node's progress. */
static void fired(struct ckh__cmd *c, struct ckh__cmd_rule *r, int node, int kind, const char *path,
                  uint64_t len)
{
    char what[96];
    r->fired++;
    if (c->rec && !r->at_rest) /* an at-rest fault counts when its change lands */
        c->rec->fault_fired[r->fault]++;
    snprintf(what, sizeof what, "%s:%s", kind >= 0 ? ckh_op_name((enum ckh_op_kind)kind) : "progress",
             action_name(c, r));
    struct ckh__cmd_trace t = {.run = c->run, .mount = -1, .node = node, .kind = CKH_OP_FAULT,
                               .path = (char *)path, .path2 = what, .len = len,
                               .result = (int64_t)r->fault};
    if (node >= 0)
        t.pid = c->nodes[node].pid;
    ckh__cmd_trace_add(c, &t);
}

/* SIGTERM to node i's processes; SIGKILL after the grace (lock held). */
static void preempt(struct ckh__cmd *c, const struct ckh__cmd_rule *r, int i)
{
    struct ckh__cmd_node *nd = &c->nodes[i];
    if (nd->pid <= 0 || nd->reaped)
        return;
    nd->preempted = true;
    nd->kill_at_ms = ckh_posix_now_ms() + r->grace_ms;
    kill(-nd->pid, SIGTERM);
}

/* The machine of node i crashes (every node: a power loss). */
static void crash(struct ckh__cmd *c, const struct ckh__cmd_rule *r, int i, bool all)
{
    c->crash.due = true;
    c->crash.all |= all;
    c->crash.keep = r->r.action.crash_keep;
    for (int k = 0; k < c->n; k++)
        if (all || k == i) {
            c->crash.nodes[k] = true;
            ckh__cmd_kill_locked(c, k, all ? "a power loss" : "a crash of its machine");
        }
}

/* Keeps of a write of len bytes under a kill-mid or short-write rule. */
static uint64_t kept_bytes(const struct ckh__cmd_rule *r, uint64_t len)
{
    uint64_t keep = r->r.action.keep_bytes;
    if (!keep && r->r.keep_fraction > 0) {
        keep = (uint64_t)((double)len * r->r.keep_fraction);
        if (r->r.action.kind == CKH_FAULT_SHORT_WRITE && keep == 0 && len > 0)
            keep = 1;
    }
    return keep < len ? keep : len;
}

/* Rule r fired on node's operation: its verdict into *act (lock held). */
static void carry_out(struct ckh__cmd *c, struct ckh__cmd_mount *m, struct ckh__cmd_rule *r,
                      const struct ckh_ckhfs_op *op, const char *path, struct ckh_ckhfs_action *act)
{
    int node = op->node;
    bool write = op->kind == CKH_OP_WRITE || op->kind == CKH_OP_PWRITE;
    const struct ckh_fault_action *a = &r->r.action;
    uint64_t len = 0;
    if (r->sigterm) {
        fired(c, r, node, (int)op->kind, path, r->grace_ms);
        preempt(c, r, node);
        return;
    }
    if (r->at_rest) {
        const struct ckh_scn_fault *f = &c->sc->faults[r->fault];
        fired(c, r, node, (int)op->kind, path, 0);
        apply_at_rest(c, r->fault, f->on.node >= 0 || f->on.node_name ? node : -1);
        return;
    }
    if (a->kind == CKH_FAULT_KILL_MID && write) {
        len = kept_bytes(r, op->len);
        /* The group is killed first; the server still lands the bytes it
         * accepts, then answers a process that is gone. */
        ckh__cmd_kill_locked(c, node, "a fault");
        act->verdict = CKH_CKHFS_SHORT;
        act->keep = len;
    } else if (a->kind == CKH_FAULT_KILL_BEFORE || a->kind == CKH_FAULT_KILL_MID ||
               a->kind == CKH_FAULT_KILL_AFTER) {
        c->nodes[node].killed_why = "a fault";
        act->verdict = a->kind == CKH_FAULT_KILL_AFTER ? CKH_CKHFS_KILL_AFTER : CKH_CKHFS_KILL;
    } else if (a->kind == CKH_FAULT_CRASH_BEFORE || a->kind == CKH_FAULT_POWER_LOSS) {
        crash(c, r, node, a->kind == CKH_FAULT_POWER_LOSS);
        act->verdict = CKH_CKHFS_KILL;
    } else if (a->kind == CKH_FAULT_ERRNO) {
        act->verdict = CKH_CKHFS_ERRNO;
        act->err = a->err > 0 ? a->err : EIO;
    } else if (a->kind == CKH_FAULT_DELAY) {
        len = (a->delay_ns + 999999) / 1000000;
        act->verdict = CKH_CKHFS_DELAY;
        act->delay_ms = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
    } else if (a->kind == CKH_FAULT_SHORT_WRITE) {
        len = kept_bytes(r, op->len);
        act->verdict = CKH_CKHFS_SHORT;
        act->keep = len;
    } else if (a->kind == CKH_FAULT_FSYNC_LOST) {
        /* simfs's own Linux semantics for this very fsync: the file's
         * dirty data dropped, EIO returned, a retry succeeds. */
        struct ckh_fault_action lost = {.kind = CKH_FAULT_FSYNC_LOST};
        ckh_simfs_fault_next(m->disk, (int)op->kind, op->path, &lost);
    }
    fired(c, r, node, (int)op->kind, path, len);
}

/* "/prefix" + "/disk/path" as the scenario names it. */
static void scenario_path(const struct ckh__cmd_mount *m, const char *dpath, char *out, size_t n)
{
    if (!dpath)
        out[0] = '\0';
    else if (!strcmp(m->prefix, "/"))
        snprintf(out, n, "%s", dpath);
    else
        snprintf(out, n, "%s%s", m->prefix, strcmp(dpath, "/") ? dpath : "");
}

void ckh__cmd_hook(void *ctx, const struct ckh_ckhfs_op *op, struct ckh_ckhfs_action *act)
{
    struct ckh__cmd_mount *m = ctx;
    struct ckh__cmd *c = m->c;
    char path[CKH_PATH_MAX], path2[CKH_PATH_MAX];
    int node = op->node;
    act->verdict = CKH_CKHFS_GO;
    scenario_path(m, op->path, path, sizeof path);
    scenario_path(m, op->path2, path2, sizeof path2);
    pthread_mutex_lock(&c->lock);
    struct ckh__cmd_trace t = {.run = c->run, .verify = m->verify, .mount = (int)(m - c->mounts),
                               .seq = op->seq, .node = m->verify ? -1 : node, .pid = op->pid,
                               .kind = (int)op->kind, .path = op->path ? path : NULL,
                               .path2 = op->path2 ? path2 : NULL, .off = op->off, .len = op->len};
    bool ours = !m->verify && node >= 0 && node < c->n;
    if (ours)
        snprintf(c->nodes[node].last_op, sizeof c->nodes[node].last_op, "%s %.140s",
                 ckh_op_name(op->kind), path);
    const bool faults = !(c->mode & CKH_RUN_NO_FAULTS);
    /* The program's records up to this operation say where it is. */
    bool moved = ours && (faults || c->on_op) && ckh__cmd_progress_refresh(c, node);
    if (ours && c->on_op)
        c->on_op(c->on_op_ctx, m, op);
    if (ours && faults) {
        if (moved && ckh__cmd_progress_triggers(c, node))
            act->verdict = CKH_CKHFS_KILL;
        struct ckh__cmd_rule *chosen = NULL;
        for (size_t k = 0; k < c->nrules && act->verdict == CKH_CKHFS_GO; k++) {
            struct ckh__cmd_rule *r = &c->rules[k];
            if (r->spent || r->progress || !action_fits(r, (int)op->kind) ||
                !rule_matches(c, r, node, (int)op->kind, op->path ? path : NULL))
                continue;
            if (rule_fires(r, chosen != NULL))
                chosen = r;
        }
        if (chosen)
            carry_out(c, m, chosen, op, op->path ? path : NULL, act);
    }
    ckh__cmd_trace_add(c, &t);
    pthread_mutex_unlock(&c->lock);
}

void ckh__cmd_kill_node(void *ctx, int node)
{
    struct ckh__cmd_mount *m = ctx;
    struct ckh__cmd *c = m->c;
    if (node < 0 || node >= c->n)
        return;
    pthread_mutex_lock(&c->lock);
    ckh__cmd_kill_locked(c, node, "a fault");
    pthread_mutex_unlock(&c->lock);
}

/* ---- progress triggers ---- */

/* Whether node i's progress (and the clock) satisfy progress rule r. */
static bool progress_due(const struct ckh__cmd *c, const struct ckh__cmd_rule *r, int i)
{
    const struct ckh__cmd_progress *p = &c->nodes[i].prog;
    if (r->r.node >= 0 && r->r.node != i)
        return false;
    if (r->r.step >= 0 && p->progress < r->r.step)
        return false;
    if (r->r.epoch >= 0 && p->epoch < r->r.epoch)
        return false;
    return !r->r.at_time_ns || elapsed_ns(c) >= r->r.at_time_ns;
}

bool ckh__cmd_progress_triggers(struct ckh__cmd *c, int i)
{
    bool killed = false;
    for (size_t k = 0; k < c->nrules; k++) {
        struct ckh__cmd_rule *r = &c->rules[k];
        if (!r->progress || r->spent)
            continue;
        for (int j = i < 0 ? 0 : i; j < (i < 0 ? c->n : i + 1) && !r->spent; j++) {
            struct ckh__cmd_node *nd = &c->nodes[j];
            if (nd->pid <= 0 || nd->reaped || nd->killed_why || !progress_due(c, r, j))
                continue;
            r->spent = true;
            char at[64];
            if (r->r.step >= 0 || r->r.epoch >= 0)
                snprintf(at, sizeof at, "step %" PRId64 " epoch %" PRId64, nd->prog.step, nd->prog.epoch);
            else
                snprintf(at, sizeof at, "after %" PRIu64 " ms", elapsed_ns(c) / 1000000u);
            fired(c, r, j, -1, at, r->sigterm ? r->grace_ms : 0);
            if (r->sigterm)
                preempt(c, r, j);
            else if (r->r.action.kind == CKH_FAULT_CRASH_BEFORE || r->r.action.kind == CKH_FAULT_POWER_LOSS)
                crash(c, r, j, r->r.action.kind == CKH_FAULT_POWER_LOSS);
            else
                ckh__cmd_kill_locked(c, j, "a fault");
            killed |= i >= 0 && c->nodes[i].killed_why;
        }
    }
    return killed;
}

/* ---- crashes ---- */

/* The unsynced state node issued on disk d (-1: anyone's) meets the
 * crash model; keep says what survives. ckhfs serves each node through its
 * own simfs view, so pending operations carry their node, as in the
 * simulator. (Also the real platform's: run/platform_real_disk.c.) */
int ckh__cmd_crash_disk(struct ckh_simfs *d, int node, int keep)
{
    if (keep == CKH_CRASH_KEEP_SYNCED)
        return ckh_simfs_crash_uniform(d, node, CKH_CRASH_DROP);
    if (keep == CKH_CRASH_KEEP_CACHE)
        return ckh_simfs_crash_uniform(d, node, CKH_CRASH_APPLY);
    return ckh_simfs_crash(d, node, NULL, 0);
}

int ckh__cmd_apply_crash(struct ckh__cmd *c)
{
    const struct ckh_scn_job *job = &c->sc->job;
    int rc = 0;
    if (!c->crash.due)
        return 0;
    for (size_t d = 0; d < job->ndisks && rc == 0; d++) {
        if (job->disks[d].shared && c->crash.all) { /* a power loss: everyone's, once */
            rc = ckh__cmd_crash_disk(c->disks[d * (size_t)c->n], -1, c->crash.keep);
            continue;
        }
        for (int i = 0; i < c->n && rc == 0; i++)
            if (c->crash.nodes[i])
                rc = ckh__cmd_crash_disk(c->disks[d * (size_t)c->n + (size_t)i], i, c->crash.keep);
    }
    if (rc)
        ckh__cmd_fail(c, rc, "crash of the job's disks: %s", ckh_strerror(rc));
    c->crash.due = c->crash.all = false;
    memset(c->crash.nodes, 0, (size_t)c->n * sizeof *c->crash.nodes);
    return rc;
}
