/* The fault script on real processes (exec/command.h): the scenario's
 * faults, armed by the same descriptors as in the simulator
 * (harness/model/faults/), matched against the operations a program asks of a
 * ckhfs mount by the one matcher every mode calls (ckh/fault_rule.h, M1
 * to M7), or against its progress, and carried out on its processes and
 * disks.
 *
 * What a command job supplies to the matcher, and what differs:
 *   - the op as ckhfs reports it, its path as the scenario names it
 *     ("/prefix" + the path on the disk); ckhfs hands over every write
 *     as a pwrite and every read as a pread (the kernel gives each its
 *     offset), so a rule on write or read is armed on pwrite or pread;
 *   - step and epoch are the node's latest result records (read from its
 *     result file before the operation is matched), time is wall-clock
 *     time since the run started; no phase (refused at parse time);
 *   - a progress trigger (ckh_scn_fault_is_progress_trigger: a fault that
 *     acts on the node's processes, with step, epoch or time alone) fires
 *     once, when the node's records reach its step or epoch, or at its
 *     time, without waiting for an operation;
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
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/command_fault.h"
#include "exec/command_proc.h"
#include "exec/command_result.h"
#include "exec/workloads.h"

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

static const char *node_name(const void *ctx, int i)
{
    const struct ckh__cmd *c = ctx;
    return c->nodes[i].name;
}

/* ckhfs reports writes as pwrite and reads as pread (see the top). */
static int kind_on_mount(int kind)
{
    return kind == CKH_OP_WRITE ? CKH_OP_PWRITE : kind == CKH_OP_READ ? CKH_OP_PREAD : kind;
}

/* Applies at-rest fault `index` to the disks now (node -1: every node's). */
static int apply_at_rest(struct ckh__cmd *c, size_t index, int node)
{
    const struct ckh_scn_fault *f = &c->sc->faults[index];
    c->env.fired = c->rec ? &c->rec->fault_fired[index] : NULL;
    c->env.err = c->err;
    c->env.errlen = sizeof c->err;
    if (c->s3) /* the store's faults change it under its lock (recursive: a request's hook holds it) */
        ckh_s3_server_lock(c->s3);
    int rc = ckh_fault_of(f->act.kind)->apply(&c->env, f, node);
    if (c->s3)
        ckh_s3_server_unlock(c->s3);
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
    c->hook_reads_progress = false;
    if (c->mode & CKH_RUN_NO_FAULTS)
        return 0;
    if (!(c->rules = calloc(sc->nfaults ? sc->nfaults : 1, sizeof *c->rules)))
        return ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
    for (size_t i = 0; i < sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &sc->faults[i];
        if (f->on.run != CKH_SCN_RUN_ANY && (int)f->on.run != run)
            continue;
        int node, rc;
        uint64_t grace_ns = 0;
        char msg[sizeof c->err];
        if ((rc = ckh_fault_node(f, c->n, node_name, c, &node, msg, sizeof msg)) != 0)
            return ckh__cmd_fail(c, rc, "%s", msg);
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
        ckh_fault_rule_of(f, node, &r->r);
        r->r.kind = kind_on_mount(r->r.kind);
        r->progress = ckh_scn_fault_is_progress_trigger(f);
        r->sigterm = ckh_fault_on_process(f, &grace_ns) == CKH_FAULT_PROCESS_PREEMPT;
        r->grace_ms = (grace_ns + 999999) / 1000000;
        r->at_rest = r->r.action.kind == CKH_FAULT_CALL;
        if (r->r.action.kind == CKH_FAULT_NONE && !r->sigterm)
            continue; /* refused before the run (the descriptor's modes) */
        ckh_fault_state_init(&r->state, c->seed, c->nrules);
        c->hook_reads_progress |= r->progress || r->r.step >= 0 || r->r.epoch >= 0;
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
        if (c->rules[k].state.fired)
            return true;
    return false;
}

/* ---- matching ---- */

static uint64_t elapsed_ns(const struct ckh__cmd *c)
{
    return (ckh_posix_now_ms() - c->run_t0_ms) * 1000000u;
}

/* ---- carrying a fault out ---- */

/* What rule r does, as a FAULT line names it ("kill_mid", "corrupt"). */
static const char *action_name(const struct ckh__cmd *c, const struct ckh__cmd_rule *r)
{
    enum ckh_scn_action_kind k = c->sc->faults[r->fault].act.kind;
    if (r->sigterm || r->at_rest || k == CKH_SCN_ACT_S3_RESET || k == CKH_SCN_ACT_S3_STALE_LIST)
        return ckh_scn_action_name(k);
    return ckh_fault_action_name(r->r.action.kind);
}

/* Writes rule r's FAULT line (the matcher counted the firing in
 * r->state; a progress trigger counts its own): on node's op `kind` at
 * path, or (kind < 0) on the node's progress. */
static void fired(struct ckh__cmd *c, struct ckh__cmd_rule *r, int node, int kind, const char *path,
                  uint64_t len)
{
    char what[96];
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
    struct ckh_fault_action a = ckh_fault_rule_action(&r->r, len);
    ckh_fault_action_cap(&a, len);
    return a.keep_bytes;
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

/* Whether path is dir or a path below it. */
static bool at_or_below(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/' || (n && dir[n - 1] == '/'));
}

/* The forced order o on node's operation (lock held): the operation it
 * waits for releases it; the operation it holds gets a HOLD verdict. */
static void order_step(struct ckh__cmd_order *o, int node, enum ckh_op_kind kind, const char *path,
                       struct ckh_ckhfs_action *act)
{
    if (node == o->until_node && at_or_below(path, o->until_path))
        o->released = true;
    if (node != o->hold_node || (int)kind != o->hold_kind || strcmp(path, o->hold_path))
        return;
    if (++o->seen != o->hold_nth || o->released || act->verdict != CKH_CKHFS_GO)
        return;
    o->held = true;
    act->verdict = CKH_CKHFS_HOLD;
    act->delay_ms = o->max_ms;
}

bool ckh__cmd_order_released(void *ctx, const struct ckh_ckhfs_op *op)
{
    struct ckh__cmd_mount *m = ctx;
    struct ckh__cmd *c = m->c;
    (void)op;
    pthread_mutex_lock(&c->lock);
    bool yes = !c->order || c->order->released;
    pthread_mutex_unlock(&c->lock);
    return yes;
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
    /* The program's records up to this operation say where it is, for
     * the rules that look at it (a read of the result file per operation
     * otherwise spent for nothing; the wait loop keeps reading them). */
    bool moved = ours && (c->hook_reads_progress || c->on_op) && ckh__cmd_progress_refresh(c, node);
    if (ours && c->on_op)
        c->on_op(c->on_op_ctx, m, op);
    if (ours && faults) {
        if (moved && ckh__cmd_progress_triggers(c, node))
            act->verdict = CKH_CKHFS_KILL;
        const struct ckh__cmd_progress *p = &c->nodes[node].prog;
        const struct ckh_op mop = {.kind = op->kind, .node = node, .path = op->path ? path : NULL,
                                   .len = op->len, .epoch = p->epoch, .step = p->step};
        const uint64_t now = elapsed_ns(c);
        struct ckh__cmd_rule *chosen = NULL;
        for (size_t k = 0; k < c->nrules && act->verdict == CKH_CKHFS_GO; k++) {
            struct ckh__cmd_rule *r = &c->rules[k];
            if (!r->progress && ckh_fault_rule_match(&r->r, &r->state, &mop, now, chosen != NULL))
                chosen = r;
        }
        if (chosen)
            carry_out(c, m, chosen, op, op->path ? path : NULL, act);
    }
    if (ours && c->order && op->path)
        order_step(c->order, node, op->kind, path, act);
    ckh__cmd_trace_add(c, &t);
    pthread_mutex_unlock(&c->lock);
}

/* ---- object-store requests ---- */

/* The S3 error an errno fault answers with (the errnos a scenario can
 * name): ENOENT a 404 NoSuchKey on a key that exists, EACCES a 403
 * AccessDenied, ENOSPC and EDQUOT a 503 SlowDown (the store sheds load),
 * EIO and EROFS a 500 InternalError. */
static int s3_err_of_errno(int err)
{
    switch (err) {
    case ENOENT:
        return CKH_S3_NO_SUCH_KEY;
    case EACCES:
        return CKH_S3_ACCESS_DENIED;
    case ENOSPC:
    case EDQUOT:
        return CKH_S3_SLOW_DOWN;
    default:
        return CKH_S3_INTERNAL_ERROR;
    }
}

/* Rule r fired on node's request: what the endpoint does (lock held). */
static void carry_out_s3(struct ckh__cmd *c, struct ckh__cmd_rule *r, const struct ckh_s3_request *rq,
                         const char *path, struct ckh_s3_fault *out)
{
    int node = rq->node;
    const struct ckh_fault_action *a = &r->r.action;
    uint64_t len = 0;
    if (r->sigterm) {
        fired(c, r, node, rq->kind, path, r->grace_ms);
        preempt(c, r, node);
        return;
    }
    if (r->at_rest) {
        const struct ckh_scn_fault *f = &c->sc->faults[r->fault];
        fired(c, r, node, rq->kind, path, 0);
        apply_at_rest(c, r->fault, f->on.node >= 0 || f->on.node_name ? node : -1);
        return;
    }
    if (a->kind == CKH_FAULT_KILL_BEFORE || a->kind == CKH_FAULT_KILL_MID) {
        /* killed with its request unsent or half sent: nothing applied */
        ckh__cmd_kill_locked(c, node, "a fault");
        out->kind = CKH_S3_FAULT_RESET_BEFORE;
    } else if (a->kind == CKH_FAULT_KILL_AFTER) {
        /* the request reached the store; its client died waiting for the answer */
        ckh__cmd_kill_locked(c, node, "a fault");
        out->kind = CKH_S3_FAULT_LOST_AFTER;
    } else if (a->kind == CKH_FAULT_CRASH_BEFORE || a->kind == CKH_FAULT_POWER_LOSS) {
        crash(c, r, node, a->kind == CKH_FAULT_POWER_LOSS);
        out->kind = CKH_S3_FAULT_RESET_BEFORE;
    } else if (a->kind == CKH_FAULT_ERRNO && a->err == ESTALE) {
        /* s3-stale-list (harness/model/faults/s3_stale_list.c): the listing lags */
        out->kind = CKH_S3_FAULT_STALE_LIST;
        out->omit_ops = c->sc->faults[r->fault].act.u.stale_list.ops;
        len = out->omit_ops; /* the FAULT line's len= */
    } else if (a->kind == CKH_FAULT_ERRNO && (a->err == ECONNRESET || a->err == ETIMEDOUT)) {
        /* s3-reset (harness/model/faults/s3_reset.c): the client lives on */
        out->kind = a->err == ETIMEDOUT ? CKH_S3_FAULT_RESET_AFTER : CKH_S3_FAULT_RESET_BEFORE;
    } else if (a->kind == CKH_FAULT_ERRNO) {
        out->kind = CKH_S3_FAULT_ERROR;
        out->err = s3_err_of_errno(a->err);
    } else if (a->kind == CKH_FAULT_DELAY) {
        len = (a->delay_ns + 999999) / 1000000;
        out->kind = CKH_S3_FAULT_DELAY;
        out->delay_ms = len;
    }
    fired(c, r, node, rq->kind, path, len);
}

/* With job.object_store.commit, a delete of node's: the step it had
 * reported, for the retention oracle (lock held; out of memory leaves the
 * step unknown, -1, and nothing else changes). */
static void delete_step_note(struct ckh__cmd *c, int node)
{
    const struct ckh_scn_object_store *os = c->sc->job.object_store;
    if (os == NULL || os->commit == NULL || c->store == NULL)
        return;
    size_t need = c->ndelete_steps + 1;
    if (need > c->capdelete_steps) {
        size_t cap = c->capdelete_steps ? 2 * c->capdelete_steps : 16;
        struct ckh__cmd_delete_step *d = realloc(c->delete_steps, cap * sizeof *d);
        if (d == NULL)
            return;
        c->delete_steps = d;
        c->capdelete_steps = cap;
    }
    (void)ckh__cmd_progress_refresh(c, node);
    c->delete_steps[c->ndelete_steps++] = (struct ckh__cmd_delete_step){
        .seq = ckh_objstore_last_seq(c->store) + 1, .node = node, .step = c->nodes[node].prog.step};
}

void ckh__cmd_s3_hook(void *ctx, const struct ckh_s3_request *rq, struct ckh_s3_fault *out)
{
    struct ckh__cmd *c = ctx;
    int node = rq->node;
    char path[CKH_PATH_MAX];
    snprintf(path, sizeof path, "/%s%s%s", rq->bucket != NULL ? rq->bucket : "", rq->key != NULL ? "/" : "",
             rq->key != NULL ? rq->key : "");
    pthread_mutex_lock(&c->lock);
    bool ours = node >= 0 && node < c->n && c->nodes[node].pid > 0 && !c->nodes[node].reaped;
    if (ours && c->on_s3)
        c->on_s3(c->on_s3_ctx, c, rq);
    if (ours)
        snprintf(c->nodes[node].last_op, sizeof c->nodes[node].last_op, "%s %.140s",
                 ckh_op_name((enum ckh_op_kind)rq->kind), path);
    if (ours && !(c->mode & CKH_RUN_NO_FAULTS)) {
        bool moved = c->hook_reads_progress && ckh__cmd_progress_refresh(c, node);
        if (moved && ckh__cmd_progress_triggers(c, node))
            out->kind = CKH_S3_FAULT_RESET_BEFORE; /* killed by a progress trigger */
        const struct ckh__cmd_progress *p = &c->nodes[node].prog;
        const struct ckh_op mop = {.kind = (enum ckh_op_kind)rq->kind, .node = node, .path = path,
                                   .len = rq->bytes, .epoch = p->epoch, .step = p->step};
        const uint64_t now = elapsed_ns(c);
        struct ckh__cmd_rule *chosen = NULL;
        for (size_t k = 0; k < c->nrules && out->kind == CKH_S3_FAULT_NONE; k++) {
            struct ckh__cmd_rule *r = &c->rules[k];
            if (!r->progress && ckh_fault_rule_match(&r->r, &r->state, &mop, now, chosen != NULL))
                chosen = r;
        }
        if (chosen)
            carry_out_s3(c, chosen, rq, path, out);
    }
    if (ours && !(c->mode & CKH_RUN_NO_FAULTS) && rq->kind == CKH_OP_S3_DELETE)
        delete_step_note(c, node);
    pthread_mutex_unlock(&c->lock);
}

void ckh__cmd_held_answered(void *ctx, const struct ckh_ckhfs_op *op)
{
    struct ckh__cmd_mount *m = ctx;
    struct ckh__cmd *c = m->c;
    char path[CKH_PATH_MAX], path2[CKH_PATH_MAX];
    scenario_path(m, op->path, path, sizeof path);
    scenario_path(m, op->path2, path2, sizeof path2);
    pthread_mutex_lock(&c->lock);
    struct ckh__cmd_trace t = {.run = c->run, .verify = m->verify, .mount = (int)(m - c->mounts),
                               .seq = op->seq, .node = m->verify ? -1 : op->node, .pid = op->pid,
                               .kind = (int)op->kind, .path = op->path ? path : NULL,
                               .path2 = op->path2 ? path2 : NULL, .off = op->off, .len = op->len,
                               .result = op->result, .answer = true};
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
        if (!r->progress || r->state.spent)
            continue;
        for (int j = i < 0 ? 0 : i; j < (i < 0 ? c->n : i + 1) && !r->state.spent; j++) {
            struct ckh__cmd_node *nd = &c->nodes[j];
            if (nd->pid <= 0 || nd->reaped || nd->killed_why || !progress_due(c, r, j))
                continue;
            r->state.spent = 1;
            r->state.fired++;
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
 * simulator. (Also the real platform's: exec/mpi_disk.c.) */
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
