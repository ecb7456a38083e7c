/* The simulator's scheduler, node lifecycle and fault rules.
 *
 * Specification (the tests in tests/test_sched.c cite it):
 *
 * Time. Virtual time (now_ns) only jumps: it becomes the wake time of the
 * node that runs next. Nothing here reads a real clock.
 *
 * Scheduling. The unit of scheduling is a program (struct ckh__thread): a
 * node's main program or one of its background tasks (sim/task.c); "node"
 * below means the program when it does. Every runnable program sits in a
 * binary heap ordered by (wake_ns, tie, node id, task number). `tie` is a
 * fresh 64-bit draw from the scheduler's stream (seeded with
 * ckh_seed_derive(seed, "sched")) each time a program becomes runnable,
 * so equal wake times are ordered by the seed: the same seed gives the
 * same interleaving, other seeds give others.
 * ckh__sim_enter charges the op's latency (wake_ns = now + latency), draws
 * the node's tie and runs the minimum of the heap. When the running node
 * is itself that minimum it continues without a context switch (the fast
 * path); the choice is exactly the one the heap would make, so the trace
 * does not depend on the fast path. Nodes switch directly to one another;
 * the host (the caller of ckh_sim_run) is resumed only when the run ends.
 * A schedule hook (ckh_sim_set_sched_hook) replaces the heap's choice at
 * every scheduling point: the fast path is then off, the chosen node is
 * taken out of the heap wherever it sits, and now becomes its wake time
 * when later; the hook chooses among nodes (those with a runnable program)
 * and the heap order among the chosen node's programs. ckh_sim_yield is a
 * scheduling point without an op (wake time now, nothing traced).
 *
 * Invariants (CKH_ASSERT): after every push, removal or replacement the
 * entry that moved is in order with its parent and children and knows its
 * position, and the first entry is due no later than its children when it
 * is taken; CKH_ASSERT_SLOW checks the order of the whole heap after each
 * change.
 *
 * Blocking. ckh__sim_block takes the running program out of the heap (or
 * leaves it there keyed by its deadline); ckh__sim_wake(node) puts the
 * node's program blocked in ckh__sim_block back at now (one per node: a
 * second program of the node calling it meanwhile gets CKH_ESTATE).
 *
 * End of a run. DONE when no node is READY or RUNNING; DEADLOCK when the
 * heap is empty but some node is blocked without a deadline (the report
 * lists every blocked program in node id order, main program first, then
 * tasks by slot, "node NAME[#TASK] (rank R): PENDING", joined by "; ");
 * TIME_LIMIT when the next wake time is past
 * cfg.time_limit_ns (the node stays runnable); OP_LIMIT when a run has
 * entered cfg.op_limit ops: the node entering the next op is suspended
 * before it (the op completes in a later run). The op limit counts per
 * ckh_sim_run call; the time limit is absolute.
 *
 * Lifecycle. A node is READY when added or restarted; ckh_sim_run (or a
 * restart during a run) launches it: a fresh filesystem view, a fresh
 * accounting allocator, a new coroutine, a START trace line (arg =
 * incarnation). main returning or exit() records EXIT (arg = status). A
 * kill records KILL (arg 0: process, 2: power loss); a machine crash
 * records CRASH (arg 1) and then crashes the node's unsynced writes on
 * each disk it mounts (ckh_simfs_crash(disk, node)); nodes that mount a
 * disk shared with CKH_SHARING_MACHINE are processes of one machine, so
 * the running ones crash with it, each recording CRASH after it (node id
 * order; sim/simfs.c S9); a power loss kills
 * every node, records CRASH for node -1 (arg 2) and crashes every disk
 * (ckh_simfs_crash(disk, -1)). In every case the view is destroyed first
 * (page-cache content stays on the disk as pending operations), every block
 * of the allocator is freed, the node's collective arrivals are withdrawn,
 * and a killed node's coroutines (its main program's and its tasks') are
 * abandoned, never resumed; their stacks are freed at once, the running
 * one's as soon as the simulator runs on another stack. A node's programs
 * all end with it, whichever of them ended it. ckh_sim_park sets
 * a node that is not running aside (PARKED, nothing traced): runs skip it,
 * power losses do not touch it, ckh_sim_restart brings it back as READY.
 * ckh_sim_set_rank changes a stopped node's rank between runs; the next
 * run rebuilds the group (sim/coll.c) and every ranked node launched
 * after it joins a new generation.
 *
 * Faults. ckh__sim_enter consults the rules in the order added, after the
 * op's latency has been charged (so at_time_ns and the trace refer to the
 * time the op takes effect), through the one matcher every mode shares
 * (ckh/fault_rule.h, rules M1 to M7: selectors, counting, nth, repeat,
 * probability streams ckh_seed_derive(seed, "fault/INDEX"), the first
 * rule that fires gives the action); the simulator supplies the node's
 * id, phase, epoch and step and virtual time. Then
 * the hook may change it. A FAULT trace line (path = op path, path2 =
 * "OP:ACTION", off = rule index or -1 for the hook, len = keep_bytes or
 * delay_ns, arg = err) precedes the op's own line. KILL_BEFORE,
 * CRASH_BEFORE and POWER_LOSS are carried out here; DELAY charges more
 * time here and is returned as NONE; KILL_AFTER is armed and executed by
 * ckh__sim_leave after the op's trace line; ERRNO, KILL_MID, FSYNC_LOST
 * and SHORT_WRITE are returned to the device; CALL runs its callback here (the
 * op then proceeds as if no fault fired); MISMATCH is returned to the
 * collective layer (no effect on other ops). KILL_MID on an op other than
 * write/pwrite acts as KILL_BEFORE; FSYNC_LOST on an op other than
 * fsync/fdatasync has no effect. SHORT_WRITE: the write accepts
 * keep_bytes (or keep_fraction of its length, at least one byte, when
 * keep_bytes is 0 and the fraction is not), capped at its length; only
 * that prefix lands and the op's trace line shows the short count as its
 * result; off write/pwrite it has no effect. Rules of kind ALLOC are evaluated by the
 * node's allocator on every allocation (any action makes it fail);
 * rules of any other kind, including -1, never see allocations.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/sim_testing.h"
#include "ckh/simfs.h"
#include "sim_core.h"
#include "sim_internal.h"

#define DEFAULT_STACK_BYTES (256u * 1024u)

enum stop_how { HOW_EXIT, HOW_KILL, HOW_CRASH, HOW_POWER };

/* The handle's side of ckh_verrf: the message goes to sim->errmsg. */
int ckh__sim_err(struct ckh_sim *sim, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckh_verrf(sim != NULL ? sim->errmsg : NULL, sim != NULL ? sizeof sim->errmsg : 0, code, fmt, ap);
    va_end(ap);
    return code;
}

struct ckh__node *ckh__sim_node(const struct ckh_sim *sim, int id)
{
    if (sim == NULL || id < 0 || id >= sim->nnodes)
        return NULL;
    return sim->nodes[id];
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- the run queue: a binary heap on (wake_ns, tie, node id, task) ---- */

static bool thread_before(const struct ckh__thread *a, const struct ckh__thread *b)
{
    if (a->wake_ns != b->wake_ns)
        return a->wake_ns < b->wake_ns;
    if (a->tie != b->tie)
        return a->tie < b->tie;
    if (a->node->id != b->node->id)
        return a->node->id < b->node->id;
    return a->task < b->task;
}

static void heap_set(struct ckh_sim *sim, size_t i, struct ckh__thread *t)
{
    sim->heap[i] = t;
    t->heap_pos = i;
}

static void heap_up(struct ckh_sim *sim, size_t i)
{
    struct ckh__thread *t = sim->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!thread_before(t, sim->heap[parent]))
            break;
        heap_set(sim, i, sim->heap[parent]);
        i = parent;
    }
    heap_set(sim, i, t);
}

static void heap_down(struct ckh_sim *sim, size_t i)
{
    struct ckh__thread *t = sim->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= sim->heap_len)
            break;
        if (child + 1 < sim->heap_len && thread_before(sim->heap[child + 1], sim->heap[child]))
            child++;
        if (!thread_before(sim->heap[child], t))
            break;
        heap_set(sim, i, sim->heap[child]);
        i = child;
    }
    heap_set(sim, i, t);
}

/* Cheap check: the entry at i is in order with its parent and children
 * and knows its position. */
static bool heap_ok_at(const struct ckh_sim *sim, size_t i)
{
    const struct ckh__thread *t = sim->heap[i];
    size_t c = 2 * i + 1;
    return t->heap_pos == i && (i == 0 || !thread_before(t, sim->heap[(i - 1) / 2])) &&
           (c >= sim->heap_len || !thread_before(sim->heap[c], t)) &&
           (c + 1 >= sim->heap_len || !thread_before(sim->heap[c + 1], t));
}

/* Cheapest check, for the hot path: the entry at i is not due before its
 * parent (what a sift down must leave behind). */
static bool heap_parent_ok(const struct ckh_sim *sim, size_t i)
{
    return i == 0 || !thread_before(sim->heap[i], sim->heap[(i - 1) / 2]);
}

#ifdef CKH_SLOW_ASSERTS
/* Slow check: heap order and positions everywhere. */
static bool heap_ok(const struct ckh_sim *sim)
{
    for (size_t i = 0; i < sim->heap_len; i++)
        if (!heap_ok_at(sim, i))
            return false;
    return true;
}
#endif

static void heap_push(struct ckh_sim *sim, struct ckh__thread *t)
{
    size_t i = sim->heap_len++;
    heap_set(sim, i, t);
    heap_up(sim, i);
    CKH_ASSERT(heap_ok_at(sim, t->heap_pos));
    CKH_ASSERT_SLOW(heap_ok(sim));
}

static void heap_remove(struct ckh_sim *sim, struct ckh__thread *t)
{
    size_t i = t->heap_pos;
    if (i == SIZE_MAX)
        return;
    CKH_ASSERT(i < sim->heap_len && sim->heap[i] == t);
    t->heap_pos = SIZE_MAX;
    size_t last = --sim->heap_len;
    if (i != last) {
        struct ckh__thread *moved = sim->heap[last];
        heap_set(sim, i, moved);
        heap_up(sim, i);
        heap_down(sim, moved->heap_pos);
        CKH_ASSERT(heap_ok_at(sim, moved->heap_pos));
    }
    CKH_ASSERT_SLOW(heap_ok(sim));
}

/* ---- switching ---- */

static void reap(struct ckh_sim *sim)
{
    struct ckh__thread *z = sim->zombie;
    if (z != NULL && z != sim->cur) {
        ckh__coro_free(&z->co);
        z->has_coro = false;
        sim->zombie = NULL;
    }
}

void ckh__sched_reap(struct ckh_sim *sim)
{
    reap(sim);
}

static bool any_blocked(const struct ckh_sim *sim)
{
    for (int i = 0; i < sim->nnodes; i++)
        if (sim->nodes[i]->state == CKH_NODE_RUNNING)
            return true;
    return false;
}

/* Calls fn for the main program and every live task of n, in task order;
 * stops when fn returns true and returns that thread. */
static struct ckh__thread *each_thread(struct ckh__node *n,
                                       bool (*fn)(struct ckh__thread *t, void *ctx), void *ctx)
{
    if (fn(&n->main_th, ctx))
        return &n->main_th;
    for (size_t i = 0; n->tasks != NULL && i < CKH__TASK_MAX; i++)
        if (n->tasks[i].used && fn(&n->tasks[i].th, ctx))
            return &n->tasks[i].th;
    return NULL;
}

/* The runnable thread of n that the heap would take first, or NULL. */
static struct ckh__thread *first_runnable(struct ckh__node *n)
{
    struct ckh__thread *best = n->main_th.heap_pos != SIZE_MAX ? &n->main_th : NULL;
    for (size_t i = 0; n->tasks != NULL && i < CKH__TASK_MAX; i++) {
        struct ckh__thread *t = &n->tasks[i].th;
        if (n->tasks[i].used && t->heap_pos != SIZE_MAX &&
            (best == NULL || thread_before(t, best)))
            best = t;
    }
    return best;
}

/* The runnable thread the schedule hook chooses: the hook picks a node
 * (ids of the nodes with a runnable thread, ascending), the heap order
 * picks among that node's threads. The heap's first when the hook
 * declines or names a node with nothing runnable. */
static struct ckh__thread *hook_choice(struct ckh_sim *sim)
{
    size_t n = 0;
    for (int i = 0; i < sim->nnodes; i++)
        if (first_runnable(sim->nodes[i]) != NULL)
            sim->sched_ids[n++] = i;
    CKH_ASSERT(n >= 1 && n <= sim->heap_len);
    int id = sim->sched_hook(sim->sched_ctx, sim->sched_ids, n);
    struct ckh__node *chosen = ckh__sim_node(sim, id);
    struct ckh__thread *t = chosen != NULL ? first_runnable(chosen) : NULL;
    return t != NULL ? t : sim->heap[0];
}

/* Pops the thread to run next and sets now, or returns NULL when the run
 * ends (outcome set). */
static struct ckh__thread *sched_pick(struct ckh_sim *sim)
{
    if (sim->stopping)
        return NULL;
    if (sim->heap_len == 0) {
        sim->stopping = true;
        sim->outcome = any_blocked(sim) ? CKH_SIM_DEADLOCK : CKH_SIM_DONE;
        return NULL;
    }
    CKH_ASSERT(heap_ok_at(sim, 0)); /* the first is due no later than its children */
    struct ckh__thread *t = sim->sched_hook != NULL ? hook_choice(sim) : sim->heap[0];
    if (t->wake_ns > sim->time_limit_ns) {
        sim->stopping = true;
        sim->outcome = CKH_SIM_TIME_LIMIT;
        return NULL;
    }
    heap_remove(sim, t);
    if (t->wake_ns > sim->now_ns)
        sim->now_ns = t->wake_ns;
    return t;
}

/* Switches from `from` to `to` (NULL: the host). Returns when `from` runs
 * again; never when dying. */
static void sched_switch(struct ckh_sim *sim, struct ckh__thread *from, struct ckh__thread *to,
                         bool dying)
{
    struct ckh__coro *fc = from != NULL ? &from->co : &sim->host;
    struct ckh__coro *tc = to != NULL ? &to->co : &sim->host;
    sim->cur = to;
    ckh__coro_switch(fc, tc, dying);
    sim->cur = from;
    reap(sim);
}

/* The running thread is runnable at cur->wake_ns: run whoever comes first.
 * Equivalent to heap_push(cur) followed by sched_pick, done with at most
 * one sift. */
static void sched_yield(struct ckh_sim *sim, struct ckh__thread *cur)
{
    cur->tie = ckh_rng_next(&sim->sched_rng);
    if (!sim->stopping && sim->sched_hook == NULL && cur->wake_ns <= sim->time_limit_ns) {
        if (sim->heap_len == 0 || thread_before(cur, sim->heap[0])) {
            if (cur->wake_ns > sim->now_ns)
                sim->now_ns = cur->wake_ns; /* fast path: cur stays the first */
            return;
        }
        struct ckh__thread *next = sim->heap[0];
        if (next->wake_ns <= sim->time_limit_ns) {
            next->heap_pos = SIZE_MAX;
            heap_set(sim, 0, cur);
            heap_down(sim, 0);
            CKH_ASSERT(heap_parent_ok(sim, cur->heap_pos));
            CKH_ASSERT_SLOW(heap_ok(sim));
            if (next->wake_ns > sim->now_ns)
                sim->now_ns = next->wake_ns;
            sched_switch(sim, cur, next, false);
            return;
        }
    }
    heap_push(sim, cur);
    struct ckh__thread *next = sched_pick(sim);
    if (next != cur)
        sched_switch(sim, cur, next, false);
}

static _Noreturn void sched_leave_for_good(struct ckh_sim *sim, struct ckh__thread *cur)
{
    sim->zombie = cur;
    sched_switch(sim, cur, sched_pick(sim), true);
    abort(); /* unreachable: a dying coroutine is never resumed */
}

/* ---- threads: what tasks (sim/task.c) share with the scheduler ---- */

void ckh__sched_thread_start(struct ckh_sim *sim, struct ckh__thread *t)
{
    t->blocked = false;
    t->woken = false;
    t->kill_after = false;
    t->pending = NULL;
    t->wake_ns = sim->now_ns;
    t->tie = ckh_rng_next(&sim->sched_rng);
    heap_push(sim, t);
}

int ckh__sched_thread_block(struct ckh_sim *sim, const char *what, uint64_t deadline_ns)
{
    struct ckh__thread *cur = sim->cur;
    cur->blocked = true;
    cur->woken = false;
    cur->pending = what;
    if (deadline_ns != UINT64_MAX) {
        cur->wake_ns = deadline_ns > sim->now_ns ? deadline_ns : sim->now_ns;
        cur->tie = ckh_rng_next(&sim->sched_rng);
        heap_push(sim, cur);
    }
    struct ckh__thread *next = sched_pick(sim);
    if (next != cur)
        sched_switch(sim, cur, next, false);
    bool woken = cur->woken;
    cur->blocked = false;
    cur->woken = false;
    cur->pending = NULL;
    return woken ? 0 : CKH_ETIMEOUT;
}

void ckh__sched_thread_wake(struct ckh_sim *sim, struct ckh__thread *t)
{
    if (t == NULL || t->node->state != CKH_NODE_RUNNING || !t->blocked || t->woken)
        return;
    t->woken = true;
    t->wake_ns = sim->now_ns;
    t->tie = ckh_rng_next(&sim->sched_rng);
    if (t->heap_pos != SIZE_MAX) {
        heap_up(sim, t->heap_pos);
        heap_down(sim, t->heap_pos);
        CKH_ASSERT(heap_ok_at(sim, t->heap_pos));
    } else {
        heap_push(sim, t);
    }
}

_Noreturn void ckh__sched_thread_end(struct ckh_sim *sim)
{
    struct ckh__thread *cur = sim->cur;
    CKH_ASSERT(cur->heap_pos == SIZE_MAX);
    sched_leave_for_good(sim, cur);
}

/* ---- lifecycle ---- */

/* Crashes node's pending ops on disk (-1: everyone's) as the fault that
 * caused it asked: drawn from the seed, all dropped or all applied. */
static void crash_disk(struct ckh_sim *sim, struct ckh_simfs *disk, int node)
{
    if (sim->crash_keep == CKH_CRASH_KEEP_SYNCED)
        ckh_simfs_crash_uniform(disk, node, CKH_CRASH_DROP);
    else if (sim->crash_keep == CKH_CRASH_KEEP_CACHE)
        ckh_simfs_crash_uniform(disk, node, CKH_CRASH_APPLY);
    else
        ckh_simfs_crash(disk, node, NULL, 0);
}

/* Takes one thread of a stopping node out of the schedule; its stack is
 * freed now unless it is the running one (freed once the simulator runs
 * on another stack). */
static bool thread_stop(struct ckh__thread *t, void *ctx)
{
    struct ckh_sim *sim = ctx;
    heap_remove(sim, t);
    t->blocked = false;
    t->woken = false;
    t->kill_after = false;
    t->pending = NULL;
    if (t != sim->cur && t->has_coro) {
        ckh__coro_free(&t->co);
        t->has_coro = false;
    }
    return false;
}

static void node_stop(struct ckh_sim *sim, struct ckh__node *n, enum stop_how how, int status);

/* Whether nodes a and b mount one disk with CKH_SHARING_MACHINE: they are
 * processes of one machine (sim/simfs.c S9). */
static bool same_machine(const struct ckh__node *a, const struct ckh__node *b)
{
    for (size_t i = 0; i < a->nmounts; i++) {
        if (ckh_simfs_sharing(a->mounts[i].disk) != CKH_SHARING_MACHINE)
            continue;
        for (size_t j = 0; j < b->nmounts; j++)
            if (b->mounts[j].disk == a->mounts[i].disk)
                return true;
    }
    return false;
}

/* A machine crash of n takes down every running node of its machine too
 * (n is stopped already, so the walk ends). */
static void crash_machine_mates(struct ckh_sim *sim, struct ckh__node *n)
{
    for (int i = 0; i < sim->nnodes; i++) {
        struct ckh__node *m = sim->nodes[i];
        if (m != n && (m->state == CKH_NODE_RUNNING || m->state == CKH_NODE_READY) &&
            same_machine(n, m))
            node_stop(sim, m, HOW_CRASH, 0);
    }
}

static void node_stop(struct ckh_sim *sim, struct ckh__node *n, enum stop_how how, int status)
{
    switch (how) {
    case HOW_EXIT:
        ckh__trace_add(sim, n->id, CKH_OP_EXIT, NULL, NULL, 0, 0, status, 0);
        break;
    case HOW_KILL:
        ckh__trace_add(sim, n->id, CKH_OP_KILL, NULL, NULL, 0, 0, 0, 0);
        break;
    case HOW_CRASH:
        ckh__trace_add(sim, n->id, CKH_OP_CRASH, NULL, NULL, 0, 0, 1, 0);
        break;
    case HOW_POWER:
        ckh__trace_add(sim, n->id, CKH_OP_KILL, NULL, NULL, 0, 0, 2, 0);
        break;
    }
    /* Every program of the node ends with it: its tasks too. */
    each_thread(n, thread_stop, sim);
    for (size_t i = 0; n->tasks != NULL && i < CKH__TASK_MAX; i++) {
        n->tasks[i].used = false;
        n->tasks[i].joiner = NULL;
    }
    n->dev_waiter = NULL;
    n->coll_busy = false;
    if (n->view != NULL) {
        ckh_simfs_view_destroy(n->view);
        n->view = NULL;
        n->env.fs = NULL;
    }
    if (how == HOW_CRASH) {
        for (size_t i = 0; i < n->nmounts; i++) {
            bool seen = false;
            for (size_t j = 0; j < i; j++)
                seen = seen || n->mounts[j].disk == n->mounts[i].disk;
            if (!seen)
                crash_disk(sim, n->mounts[i].disk, n->id);
        }
    }
    ckh__env_free_memory(n);
    ckh__coll_node_stop(sim, n);
    n->state = how == HOW_EXIT ? CKH_NODE_EXITED : CKH_NODE_KILLED;
    n->exit_status = how == HOW_EXIT ? status : 0;
    if (how == HOW_CRASH) {
        crash_machine_mates(sim, n); /* with the crash's own keep */
        sim->crash_keep = CKH_CRASH_KEEP_RANDOM;
    }
}

static void power_loss(struct ckh_sim *sim)
{
    for (int i = 0; i < sim->nnodes; i++) {
        struct ckh__node *n = sim->nodes[i];
        if (n->state == CKH_NODE_RUNNING || n->state == CKH_NODE_READY)
            node_stop(sim, n, HOW_POWER, 0);
    }
    ckh__trace_add(sim, -1, CKH_OP_CRASH, NULL, NULL, 0, 0, 2, 0);
    for (size_t i = 0; i < sim->ndisks; i++)
        crash_disk(sim, sim->disks[i], -1);
    sim->crash_keep = CKH_CRASH_KEEP_RANDOM;
}

static void node_entry(void *arg)
{
    struct ckh__node *n = arg;
    struct ckh_sim *sim = n->sim;
    reap(sim);
    ckh__trace_add(sim, n->id, CKH_OP_START, NULL, NULL, 0, 0, (int64_t)n->incarnation, 0);
    int status = n->main(&n->env, n->arg);
    ckh__sim_exit_current(sim, status);
}

static int node_launch(struct ckh_sim *sim, struct ckh__node *n)
{
    int rc = 0;
    if (n->nmounts > 0) {
        rc = ckh_simfs_view_create(sim, n->id, n->mounts, n->nmounts, &n->view);
        if (rc < 0)
            return ckh__sim_err(sim, rc, "node %s: cannot create its filesystem view: %s",
                                n->name, ckh_strerror(rc));
    }
    rc = ckh__coro_create(&n->main_th.co, sim->cfg.stack_bytes, node_entry, n);
    if (rc < 0) {
        if (n->view != NULL)
            ckh_simfs_view_destroy(n->view);
        n->view = NULL;
        return ckh__sim_err(sim, rc, "node %s: cannot map its stack: %s", n->name,
                            ckh_strerror(rc));
    }
    n->main_th.has_coro = true;
    n->env.fs = n->view;
    n->ops = 0;
    n->mem_bytes = 0;
    n->mem_peak_bytes = 0;
    n->mem_at_end_bytes = 0;
    n->phase = NULL;
    n->epoch = -1;
    n->step = -1;
    n->exit_status = 0;
    n->coll_seq = 0;
    n->p2p_seq = 0;
    n->tasks_spawned = 0;
    ckh__coll_node_start(sim, n);
    n->state = CKH_NODE_RUNNING;
    n->main_th.wake_ns = sim->now_ns;
    n->main_th.tie = ckh_rng_next(&sim->sched_rng);
    heap_push(sim, &n->main_th);
    return 0;
}

_Noreturn void ckh__sim_exit_current(struct ckh_sim *sim, int status)
{
    struct ckh__thread *cur = sim->cur;
    node_stop(sim, cur->node, HOW_EXIT, status);
    sched_leave_for_good(sim, cur);
}

void ckh__sim_exit_other(struct ckh_sim *sim, struct ckh__node *n, int status)
{
    if (n->state == CKH_NODE_RUNNING)
        node_stop(sim, n, HOW_EXIT, status);
}

_Noreturn void ckh__sim_die(struct ckh_sim *sim, bool machine)
{
    struct ckh__thread *cur = sim != NULL ? sim->cur : NULL;
    if (cur == NULL) {
        fprintf(stderr, "ckh: ckh__sim_die called outside a simulated node\n");
        abort();
    }
    node_stop(sim, cur->node, machine ? HOW_CRASH : HOW_KILL, 0);
    sched_leave_for_good(sim, cur);
}

/* ---- faults ---- */

/* op as the matcher sees it: the node's id, phase, epoch and step. */
static struct ckh_op op_of_node(const struct ckh__node *n, const struct ckh_op *op)
{
    struct ckh_op o = *op;
    o.node = n->id;
    o.phase = n->phase;
    o.epoch = n->epoch;
    o.step = n->step;
    return o;
}

static void record_fault(struct ckh_sim *sim, struct ckh__node *n, const struct ckh_op *op,
                         const struct ckh_fault_action *act, int64_t source)
{
    char what[64];
    snprintf(what, sizeof what, "%s:%s", ckh_op_name(op->kind), ckh_fault_action_name(act->kind));
    uint64_t len = act->kind == CKH_FAULT_KILL_MID || act->kind == CKH_FAULT_SHORT_WRITE
                       ? act->keep_bytes
                   : act->kind == CKH_FAULT_DELAY  ? act->delay_ns
                                                   : 0;
    int64_t arg = act->kind == CKH_FAULT_ERRNO ? act->err : 0;
    ckh__trace_add(sim, n->id, CKH_OP_FAULT, op->path, what, (uint64_t)source, len, arg, 0);
}

/* Fills *act from the rules and the hook for op by node n. */
/* Field by field: the struct's padding is not part of an action (a copy
 * made by value need not carry it, and comparing it reads undefined
 * bytes). */
static bool action_equal(const struct ckh_fault_action *a, const struct ckh_fault_action *b)
{
    return a->kind == b->kind && a->err == b->err && a->keep_bytes == b->keep_bytes &&
           a->delay_ns == b->delay_ns && a->call == b->call && a->call_ctx == b->call_ctx &&
           a->crash_keep == b->crash_keep;
}

static void fault_eval(struct ckh_sim *sim, struct ckh__node *n, const struct ckh_op *op,
                       struct ckh_fault_action *act)
{
    int64_t source = -1;
    struct ckh_op o = op_of_node(n, op);
    for (size_t i = 0; i < sim->nfaults; i++) {
        struct ckh__fault *f = &sim->faults[i];
        if (!ckh_fault_rule_match(&f->rule, &f->state, &o, sim->now_ns, act->kind != CKH_FAULT_NONE))
            continue;
        *act = ckh_fault_rule_action(&f->rule, op->len);
        source = (int64_t)i;
    }
    if (sim->hook != NULL) {
        struct ckh_fault_action before = *act;
        sim->hook(sim->hook_ctx, &o, act);
        if (!action_equal(&before, act))
            source = -1;
        /* The hook bypasses ckh_sim_add_fault's checks. */
        if (act->kind == CKH_FAULT_ERRNO && act->err <= 0)
            act->err = EIO;
        if ((act->kind == CKH_FAULT_CALL && act->call == NULL) || (unsigned)act->kind >= CKH_FAULT__COUNT)
            memset(act, 0, sizeof *act);
    }
    ckh_fault_action_cap(act, op->len);
    if (act->kind != CKH_FAULT_NONE)
        record_fault(sim, n, op, act, source);
}

bool ckh__sim_alloc_fault(struct ckh_sim *sim, struct ckh__node *n, uint64_t size_bytes)
{
    if (!sim->alloc_faults)
        return false;
    struct ckh_op alloc = {.kind = CKH_OP_ALLOC, .node = n->id, .len = size_bytes, .epoch = -1, .step = -1};
    struct ckh_op op = op_of_node(n, &alloc);
    bool fail = false;
    for (size_t i = 0; i < sim->nfaults; i++) {
        struct ckh__fault *f = &sim->faults[i];
        if (ckh_fault_rule_match(&f->rule, &f->state, &op, sim->now_ns, fail)) {
            fail = true;
            record_fault(sim, n, &op, &f->rule.action, (int64_t)i);
        }
    }
    return fail;
}

/* ---- the device contract (sim_internal.h) ---- */

/* Carries out the action the rules (or the hook) gave op on the current
 * thread: a kill, crash or power loss does not return; a delay, a later
 * kill or a callback is done here and leaves no action; what the
 * operation itself applies (errno, short write, lost fsync, mismatch)
 * stays in *act, cleared where it does not apply to this op's kind. */
static void carry_out(struct ckh_sim *sim, struct ckh__thread *cur, struct ckh__node *n, const struct ckh_op *op,
                      struct ckh_fault_action *act)
{
    switch (act->kind) {
    case CKH_FAULT_KILL_MID:
        if (op->kind == CKH_OP_WRITE || op->kind == CKH_OP_PWRITE)
            break;
        ckh__sim_die(sim, false);
    case CKH_FAULT_KILL_BEFORE:
        ckh__sim_die(sim, false);
    case CKH_FAULT_CRASH_BEFORE:
        sim->crash_keep = act->crash_keep;
        ckh__sim_die(sim, true);
    case CKH_FAULT_POWER_LOSS:
        sim->crash_keep = act->crash_keep;
        power_loss(sim);
        sched_leave_for_good(sim, cur);
    case CKH_FAULT_DELAY:
        cur->wake_ns = add_sat(sim->now_ns, act->delay_ns);
        memset(act, 0, sizeof *act);
        sched_yield(sim, cur);
        break;
    case CKH_FAULT_KILL_AFTER:
        cur->kill_after = true;
        memset(act, 0, sizeof *act);
        break;
    case CKH_FAULT_FSYNC_LOST:
        if (op->kind != CKH_OP_FSYNC && op->kind != CKH_OP_FDATASYNC)
            memset(act, 0, sizeof *act);
        break;
    case CKH_FAULT_CALL: {
        struct ckh_op o = *op;
        o.node = n->id;
        o.phase = n->phase;
        o.epoch = n->epoch;
        o.step = n->step;
        if (act->call != NULL)
            act->call(act->call_ctx, &o);
        memset(act, 0, sizeof *act);
        break;
    }
    case CKH_FAULT_MISMATCH:
        if (ckh_op_class(op->kind) != CKH_OPC_COLL)
            memset(act, 0, sizeof *act);
        break;
    case CKH_FAULT_SHORT_WRITE:
        if (op->kind != CKH_OP_WRITE && op->kind != CKH_OP_PWRITE)
            memset(act, 0, sizeof *act);
        break;
    default:
        break;
    }
}

void ckh__sim_enter(struct ckh_sim *sim, const struct ckh_op *op, uint64_t latency_ns,
                    struct ckh_fault_action *act)
{
    if (act == NULL)
        return;
    memset(act, 0, sizeof *act);
    if (sim == NULL || op == NULL || sim->cur == NULL)
        return; /* outside any node: no scheduling, no faults */
    struct ckh__thread *cur = sim->cur;
    struct ckh__node *n = cur->node;
    while (sim->cfg.op_limit != 0 && sim->run_ops >= sim->cfg.op_limit) {
        /* Suspend before this op; a later run resumes here. */
        sim->stopping = true;
        sim->outcome = CKH_SIM_OP_LIMIT;
        cur->wake_ns = sim->now_ns;
        sched_yield(sim, cur);
    }
    sim->run_ops++;
    sim->ops++;
    n->ops++;
    cur->wake_ns = add_sat(sim->now_ns, latency_ns);
    sched_yield(sim, cur);

    if (sim->nfaults == 0 && sim->hook == NULL)
        return;
    fault_eval(sim, n, op, act);
    carry_out(sim, cur, n, op, act);
}

void ckh__sim_leave(struct ckh_sim *sim, const struct ckh_op *op, int64_t result)
{
    if (sim == NULL || op == NULL)
        return;
    struct ckh__thread *cur = sim->cur;
    ckh__trace_add(sim, cur != NULL ? cur->node->id : op->node, op->kind, op->path, op->path2,
                   op->off, op->len, op->arg, result);
    if (cur != NULL && cur->kill_after) {
        cur->kill_after = false;
        ckh__sim_die(sim, false);
    }
}

struct ckh_alloc *ckh__sim_node_alloc(struct ckh_sim *sim, int node)
{
    if (sim == NULL || node < 0 || node >= sim->nnodes)
        return NULL;
    struct ckh__node *n = sim->nodes[node];
    return n->state == CKH_NODE_RUNNING ? &n->alloc : NULL;
}

struct ckh__node *ckh__sim_cur_node(const struct ckh_sim *sim)
{
    return sim != NULL && sim->cur != NULL ? sim->cur->node : NULL;
}

int ckh__sim_block(struct ckh_sim *sim, const char *what, uint64_t deadline_ns)
{
    if (sim == NULL || sim->cur == NULL)
        return CKH_ESTATE;
    struct ckh__node *n = sim->cur->node;
    if (n->dev_waiter != NULL) /* the devices wake a node: one waiter per node */
        return CKH_ESTATE;
    n->dev_waiter = sim->cur;
    int rc = ckh__sched_thread_block(sim, what, deadline_ns);
    n->dev_waiter = NULL;
    return rc;
}

void ckh__sim_wake(struct ckh_sim *sim, int node)
{
    struct ckh__node *n = ckh__sim_node(sim, node);
    if (n != NULL)
        ckh__sched_thread_wake(sim, n->dev_waiter);
}

/* ---- public API ---- */

int ckh_sim_create(const struct ckh_sim_config *cfg, struct ckh_sim **out)
{
    if (out != NULL)
        *out = NULL;
    if (cfg == NULL || out == NULL)
        return CKH_EINVAL;
    struct ckh_sim *sim = calloc(1, sizeof *sim);
    if (sim == NULL)
        return CKH_ENOMEM;
    sim->cfg = *cfg;
    if (sim->cfg.stack_bytes == 0)
        sim->cfg.stack_bytes = DEFAULT_STACK_BYTES;
    sim->time_limit_ns = cfg->time_limit_ns != 0 ? cfg->time_limit_ns : UINT64_MAX;
    ckh_rng_seed(&sim->sched_rng, ckh_seed_derive(cfg->seed, "sched"));
    ckh__coro_init_host(&sim->host);
    ckh__trace_init(&sim->trace, cfg->keep_trace);
    *out = sim;
    return 0;
}

static void fault_free_strings(struct ckh__fault *f)
{
    free(f->path_glob);
    free(f->phase);
}

void ckh_sim_destroy(struct ckh_sim *sim)
{
    if (sim == NULL)
        return;
    for (int i = 0; i < sim->nnodes; i++) {
        struct ckh__node *n = sim->nodes[i];
        ckh__coro_free(&n->main_th.co); /* idempotent: freed stacks are skipped */
        for (size_t t = 0; n->tasks != NULL && t < CKH__TASK_MAX; t++)
            ckh__coro_free(&n->tasks[t].th.co);
        free(n->tasks);
        if (n->view != NULL)
            ckh_simfs_view_destroy(n->view);
        ckh__env_free_memory(n);
        for (size_t m = 0; m < n->nmounts; m++)
            free((char *)n->mounts[m].prefix);
        free(n->mounts);
        free(n->name);
        free(n);
    }
    free(sim->nodes);
    free(sim->heap);
    free(sim->sched_ids);
    for (size_t i = 0; i < sim->ndisks; i++)
        ckh_simfs_destroy(sim->disks[i]);
    free(sim->disks);
    for (size_t i = 0; i < sim->nfaults; i++)
        fault_free_strings(&sim->faults[i]);
    free(sim->faults);
    ckh__coll_free(sim);
    ckh__trace_free(&sim->trace);
    free(sim);
}

const char *ckh_sim_errmsg(const struct ckh_sim *sim)
{
    return sim != NULL ? sim->errmsg : "no simulator";
}

bool ckh_sim_host_out_of_memory(const struct ckh_sim *sim)
{
    if (sim == NULL)
        return false;
    bool oom = sim->host_oom || sim->coll.oom || sim->trace.oom;
    for (size_t i = 0; i < sim->ndisks && !oom; i++)
        oom = ckh_simfs_host_out_of_memory(sim->disks[i]);
    return oom;
}

int ckh_sim_add_disk(struct ckh_sim *sim, const struct ckh_simfs_config *cfg, struct ckh_simfs **out)
{
    if (out != NULL)
        *out = NULL;
    if (sim == NULL || cfg == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_add_disk: NULL argument");
    struct ckh_simfs_config c = *cfg;
    if (c.seed == 0) {
        char name[160];
        snprintf(name, sizeof name, "disk/%s", c.name != NULL ? c.name : "");
        c.seed = ckh_seed_derive(sim->cfg.seed, name);
    }
    struct ckh_simfs **disks = realloc(sim->disks, (sim->ndisks + 1) * sizeof *disks);
    if (disks == NULL)
        return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_disk: out of memory");
    sim->disks = disks;
    struct ckh_simfs *d = NULL;
    int rc = ckh_simfs_create(&c, &d);
    if (rc < 0)
        return ckh__sim_err(sim, rc, "ckh_sim_add_disk %s: %s", c.name != NULL ? c.name : "?",
                            ckh_strerror(rc));
    sim->disks[sim->ndisks++] = d;
    if (out != NULL)
        *out = d;
    return 0;
}

static int check_node_config(struct ckh_sim *sim, const struct ckh_node_config *cfg)
{
    if (cfg->name == NULL || cfg->name[0] == '\0')
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_add_node: node needs a name");
    if (cfg->main == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "node %s: no main function", cfg->name);
    if (cfg->rank < -1)
        return ckh__sim_err(sim, CKH_EINVAL, "node %s: bad rank %d", cfg->name, cfg->rank);
    if (cfg->nmounts > 0 && cfg->mounts == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "node %s: nmounts without mounts", cfg->name);
    for (size_t i = 0; i < cfg->nmounts; i++)
        if (cfg->mounts[i].prefix == NULL || cfg->mounts[i].prefix[0] != '/' ||
            cfg->mounts[i].disk == NULL)
            return ckh__sim_err(sim, CKH_EINVAL, "node %s: mount %zu needs an absolute prefix and a disk",
                                cfg->name, i);
    for (int i = 0; i < sim->nnodes; i++) {
        if (strcmp(sim->nodes[i]->name, cfg->name) == 0)
            return ckh__sim_err(sim, CKH_EEXISTS, "node %s: name already used", cfg->name);
        if (cfg->rank >= 0 && sim->nodes[i]->rank == cfg->rank)
            return ckh__sim_err(sim, CKH_EEXISTS, "node %s: rank %d already held by %s", cfg->name,
                                cfg->rank, sim->nodes[i]->name);
    }
    return 0;
}

/* Room for twice the nodes (8 at first): the node table, the run queue
 * (a node and its tasks) and the scheduling ids. */
static int grow_nodes(struct ckh_sim *sim)
{
    int cap = sim->cap_nodes != 0 ? 2 * sim->cap_nodes : 8;
    struct ckh__node **nodes = realloc(sim->nodes, (size_t)cap * sizeof *nodes);
    if (nodes == NULL)
        return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_node: out of memory");
    sim->nodes = nodes;
    struct ckh__thread **heap =
        realloc(sim->heap, (size_t)cap * (1 + CKH__TASK_MAX) * sizeof *heap);
    if (heap == NULL)
        return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_node: out of memory");
    sim->heap = heap;
    int *ids = realloc(sim->sched_ids, (size_t)cap * sizeof *ids);
    if (ids == NULL)
        return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_node: out of memory");
    sim->sched_ids = ids;
    sim->cap_nodes = cap;
    return 0;
}

int ckh_sim_add_node(struct ckh_sim *sim, const struct ckh_node_config *cfg, int *id)
{
    if (sim == NULL || cfg == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_add_node: NULL argument");
    int rc = check_node_config(sim, cfg);
    if (rc < 0)
        return rc;
    if (sim->nnodes == sim->cap_nodes && (rc = grow_nodes(sim)) < 0)
        return rc;
    struct ckh__node *n = calloc(1, sizeof *n);
    if (n == NULL)
        return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_node: out of memory");
    n->name = strdup(cfg->name);
    if (n->name == NULL)
        goto out_free_node;
    if (cfg->nmounts > 0) {
        n->mounts = calloc(cfg->nmounts, sizeof *n->mounts);
        if (n->mounts == NULL)
            goto out_free_name;
        for (size_t i = 0; i < cfg->nmounts; i++) {
            n->mounts[i].disk = cfg->mounts[i].disk;
            n->mounts[i].prefix = strdup(cfg->mounts[i].prefix);
            if (n->mounts[i].prefix == NULL)
                goto out_free_mounts;
        }
    }
    n->nmounts = cfg->nmounts;
    n->sim = sim;
    n->id = sim->nnodes;
    n->main = cfg->main;
    n->arg = cfg->arg;
    n->rank = cfg->rank;
    n->state = CKH_NODE_READY;
    n->main_th.node = n;
    n->main_th.heap_pos = SIZE_MAX;
    n->epoch = -1;
    n->step = -1;
    n->rand_seed = ckh_node_rand_base(sim->cfg.seed, n->name);
    ckh__env_init(n);
    sim->nodes[sim->nnodes++] = n;
    if (id != NULL)
        *id = n->id;
    if (sim->running) {
        rc = ckh__coll_prepare(sim);
        if (rc == 0)
            rc = node_launch(sim, n);
        return rc;
    }
    return 0;

out_free_mounts:
    for (size_t i = 0; i < cfg->nmounts; i++)
        free((char *)n->mounts[i].prefix);
    free(n->mounts);
out_free_name:
    free(n->name);
out_free_node:
    free(n);
    return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_node: out of memory");
}

int ckh_sim_node_count(const struct ckh_sim *sim)
{
    return sim != NULL ? sim->nnodes : 0;
}

int ckh_sim_node_status(const struct ckh_sim *sim, int id, struct ckh_node_status *out)
{
    const struct ckh__node *n = ckh__sim_node(sim, id);
    if (n == NULL || out == NULL)
        return ckh__sim_err((struct ckh_sim *)sim, CKH_EINVAL, "ckh_sim_node_status: bad node id %d", id);
    memset(out, 0, sizeof *out);
    out->state = n->state;
    out->exit_status = n->exit_status;
    out->ops = n->ops;
    out->incarnation = n->incarnation;
    out->mem_bytes = n->mem_bytes;
    out->mem_peak_bytes = n->mem_peak_bytes;
    out->mem_at_end_bytes = n->mem_at_end_bytes;
    out->pending = n->state == CKH_NODE_RUNNING && n->main_th.blocked ? n->main_th.pending : NULL;
    out->rank = n->rank;
    return 0;
}

const char *ckh_sim_node_name(const struct ckh_sim *sim, int id)
{
    const struct ckh__node *n = ckh__sim_node(sim, id);
    return n != NULL ? n->name : NULL;
}

int ckh_sim_node_id(const struct ckh_sim *sim, const char *name)
{
    if (sim == NULL || name == NULL)
        return CKH_EINVAL;
    for (int i = 0; i < sim->nnodes; i++)
        if (strcmp(sim->nodes[i]->name, name) == 0)
            return i;
    return CKH_ENOTFOUND;
}

int ckh_sim_add_fault(struct ckh_sim *sim, const struct ckh_fault_rule *rule)
{
    if (sim == NULL || rule == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_add_fault: NULL argument");
    char msg[160];
    if (ckh_fault_rule_check(rule, msg, sizeof msg) != 0)
        return ckh__sim_err(sim, CKH_EINVAL, "%s", msg);
    /* The array holds the next power of two of nfaults: it doubles when
     * nfaults is one, so adding n rules copies O(n), not O(n^2). */
    if ((sim->nfaults & (sim->nfaults - 1)) == 0) {
        size_t cap = sim->nfaults ? sim->nfaults * 2 : 1;
        struct ckh__fault *faults = realloc(sim->faults, cap * sizeof *faults);
        if (faults == NULL)
            return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_fault: out of memory");
        sim->faults = faults;
    }
    struct ckh__fault *f = &sim->faults[sim->nfaults];
    memset(f, 0, sizeof *f);
    f->rule = *rule;
    if (rule->path_glob != NULL && (f->path_glob = strdup(rule->path_glob)) == NULL)
        goto out_nomem;
    if (rule->phase != NULL && (f->phase = strdup(rule->phase)) == NULL)
        goto out_nomem;
    f->rule.path_glob = f->path_glob;
    f->rule.phase = f->phase;
    ckh_fault_state_init(&f->state, sim->cfg.seed, sim->nfaults);
    if (rule->kind == CKH_OP_ALLOC)
        sim->alloc_faults = true;
    sim->nfaults++;
    return 0;

out_nomem:
    fault_free_strings(f);
    return ckh__sim_err(sim, CKH_ENOMEM, "ckh_sim_add_fault: out of memory");
}

uint64_t ckh_sim_fault_fired(const struct ckh_sim *sim, size_t rule)
{
    return sim != NULL && rule < sim->nfaults ? sim->faults[rule].state.fired : 0;
}

void ckh_sim_clear_faults(struct ckh_sim *sim)
{
    if (sim == NULL)
        return;
    for (size_t i = 0; i < sim->nfaults; i++)
        fault_free_strings(&sim->faults[i]);
    sim->nfaults = 0;
    sim->alloc_faults = false;
}

void ckh_sim_set_fault_hook(struct ckh_sim *sim, ckh_fault_hook hook, void *ctx)
{
    if (sim == NULL)
        return;
    sim->hook = hook;
    sim->hook_ctx = ctx;
}

void ckh_sim_set_sched_hook(struct ckh_sim *sim, ckh_sched_hook hook, void *ctx)
{
    if (sim == NULL)
        return;
    sim->sched_hook = hook;
    sim->sched_ctx = hook != NULL ? ctx : NULL;
}

int ckh_sim_yield(struct ckh_sim *sim)
{
    if (sim == NULL || sim->cur == NULL)
        return CKH_ESTATE;
    struct ckh__thread *cur = sim->cur;
    cur->wake_ns = sim->now_ns;
    sched_yield(sim, cur);
    return 0;
}

struct report_ctx {
    char *buf;   /* the report */
    size_t size; /* its size */
    size_t used; /* bytes written (may pass size: the rest is cut) */
};

/* Appends "node NAME[#TASK] (rank R): PENDING" for a blocked thread. */
static bool report_thread(struct ckh__thread *t, void *ctx)
{
    struct report_ctx *r = ctx;
    if (!t->blocked || r->used >= r->size)
        return false;
    const struct ckh__node *n = t->node;
    char who[48] = "", rank[32] = "";
    if (t->task != 0)
        snprintf(who, sizeof who, "#%u", t->task);
    if (n->rank >= 0)
        snprintf(rank, sizeof rank, " (rank %d)", n->rank);
    int w = snprintf(r->buf + r->used, r->size - r->used, "%snode %s%s%s: %s",
                     r->used > 0 ? "; " : "", n->name, who, rank,
                     t->pending != NULL ? t->pending : "blocked");
    if (w > 0)
        r->used += (size_t)w;
    return false;
}

static void build_report(struct ckh_sim *sim, char *buf, size_t size)
{
    struct report_ctx r = {.buf = buf, .size = size};
    buf[0] = '\0';
    for (int i = 0; i < sim->nnodes; i++)
        if (sim->nodes[i]->state == CKH_NODE_RUNNING)
            each_thread(sim->nodes[i], report_thread, &r);
}

int ckh_sim_run(struct ckh_sim *sim, struct ckh_sim_result *res)
{
    if (sim == NULL || res == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_run: NULL argument");
    memset(res, 0, sizeof *res);
    if (sim->running)
        return ckh__sim_err(sim, CKH_ESTATE, "ckh_sim_run: already running");
    int rc = ckh__coll_prepare(sim);
    if (rc < 0)
        return rc;
    for (int i = 0; i < sim->nnodes; i++) {
        if (sim->nodes[i]->state == CKH_NODE_READY) {
            rc = node_launch(sim, sim->nodes[i]);
            if (rc < 0)
                return rc;
        }
    }
    sim->running = true;
    sim->stopping = false;
    sim->outcome = CKH_SIM_DONE;
    sim->run_ops = 0;
    struct ckh__thread *next = sched_pick(sim);
    if (next != NULL)
        sched_switch(sim, NULL, next, false);
    sim->running = false;
    sim->cur = NULL;
    reap(sim);
    res->outcome = sim->outcome;
    res->now_ns = sim->now_ns;
    res->ops = sim->ops;
    res->trace_hash = sim->trace.hash;
    if (res->outcome == CKH_SIM_DEADLOCK)
        build_report(sim, res->report, sizeof res->report);
    return 0;
}

int ckh_sim_kill(struct ckh_sim *sim, int id, bool machine)
{
    struct ckh__node *n = ckh__sim_node(sim, id);
    if (n == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_kill: bad node id %d", id);
    if (n->state != CKH_NODE_RUNNING && n->state != CKH_NODE_READY)
        return ckh__sim_err(sim, CKH_ESTATE, "ckh_sim_kill: node %s is not running", n->name);
    if (sim->cur != NULL && sim->cur->node == n)
        ckh__sim_die(sim, machine);
    node_stop(sim, n, machine ? HOW_CRASH : HOW_KILL, 0);
    if (sim->cur != NULL && sim->cur->node->state == CKH_NODE_KILLED)
        sched_leave_for_good(sim, sim->cur); /* the caller's machine crashed with n's */
    return 0;
}

int ckh_sim_power_loss(struct ckh_sim *sim)
{
    if (sim == NULL)
        return CKH_EINVAL;
    power_loss(sim);
    if (sim->cur != NULL)
        sched_leave_for_good(sim, sim->cur);
    return 0;
}

int ckh_sim_restart(struct ckh_sim *sim, int id)
{
    struct ckh__node *n = ckh__sim_node(sim, id);
    if (n == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_restart: bad node id %d", id);
    if (n->state != CKH_NODE_EXITED && n->state != CKH_NODE_KILLED && n->state != CKH_NODE_PARKED)
        return ckh__sim_err(sim, CKH_ESTATE, "ckh_sim_restart: node %s has not stopped", n->name);
    n->state = CKH_NODE_READY;
    n->incarnation++;
    if (sim->running)
        return node_launch(sim, n);
    return 0;
}

int ckh_sim_park(struct ckh_sim *sim, int id)
{
    struct ckh__node *n = ckh__sim_node(sim, id);
    if (n == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_park: bad node id %d", id);
    if (n->state == CKH_NODE_RUNNING)
        return ckh__sim_err(sim, CKH_ESTATE, "ckh_sim_park: node %s is running", n->name);
    n->state = CKH_NODE_PARKED;
    return 0;
}

int ckh_sim_set_rank(struct ckh_sim *sim, int id, int rank)
{
    struct ckh__node *n = ckh__sim_node(sim, id);
    if (n == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_set_rank: bad node id %d", id);
    if (rank < -1)
        return ckh__sim_err(sim, CKH_EINVAL, "ckh_sim_set_rank: node %s: bad rank %d", n->name, rank);
    if (sim->running)
        return ckh__sim_err(sim, CKH_ESTATE, "ckh_sim_set_rank: node %s: not during a run", n->name);
    if (n->state == CKH_NODE_RUNNING)
        return ckh__sim_err(sim, CKH_ESTATE, "ckh_sim_set_rank: node %s is running", n->name);
    if (n->rank == rank)
        return 0;
    for (int i = 0; rank >= 0 && i < sim->nnodes; i++)
        if (i != id && sim->nodes[i]->rank == rank)
            return ckh__sim_err(sim, CKH_EEXISTS, "ckh_sim_set_rank: node %s: rank %d already held by %s",
                                n->name, rank, sim->nodes[i]->name);
    n->rank = rank;
    n->env.coll = rank >= 0 ? &n->coll : NULL; /* as ckh__env_init gives it */
    /* The group's shape changed even when its size did not: the next run
     * rebuilds the rank map (a world no group has) and opens a new
     * generation, so nothing of the old group can match the new one. */
    sim->coll.world = -1;
    sim->coll.broken = true;
    return 0;
}

uint64_t ckh_sim_now_ns(const struct ckh_sim *sim)
{
    return sim != NULL ? sim->now_ns : 0;
}

uint64_t ckh_sim_seed(const struct ckh_sim *sim)
{
    return sim != NULL ? sim->cfg.seed : 0;
}

/* ---- test-only entries (include/ckh/sim_testing.h) ---- */

void ckh__sim_test_break_heap(struct ckh_sim *sim)
{
    if (sim != NULL && sim->heap_len >= 2)
        sim->heap[0]->wake_ns = sim->heap[1]->wake_ns + 1;
}
