/* Background tasks of a simulated node (node ops spawn and join,
 * include/ckh/env.h version 2).
 *
 * Specification (tests/test_sched.c, suite "tasks", cites it):
 *
 * A task is a second program of its node, like a thread of a process: it
 * runs fn(env, arg) on its own coroutine with the node's own environment
 * (the same struct ckh_env: filesystem view, allocator, collectives,
 * phase), so its memory is the node's and is freed with the incarnation.
 * It is scheduled like any program (sim/sched.c): at each of its ops it
 * charges the op's latency and the seeded heap decides who runs next, so
 * the interleaving with the node's main program and with other nodes is a
 * function of the seed. Its ops count as the node's and are attributed to
 * the node in the trace, marked with its number (ckh_trace_rec.task; the
 * text form shows "trainer_0#1"); tasks are numbered 1, 2, ... in order of
 * spawning within an incarnation.
 *
 * spawn is an op (SPAWN, arg = the new task's number, result 0 or the
 * error), so faults can hit it. A node holds at most CKH__TASK_MAX (8)
 * tasks at once (spawned and not yet joined, whether or not they have
 * returned); one more gives CKH_ELIMIT. When fn returns, the task records
 * TASK_EXIT (arg = fn's value) and ends.
 *
 * join is an op (JOIN, arg = the task's number or -1 for a handle that is
 * not a task of this node): after the op's scheduling point it waits (no
 * deadline) until the task has returned, then gives its value and frees
 * the handle. CKH_EINVAL (traced) for a handle of another node, one
 * already joined or being joined, or the task itself. A join that can
 * never return (the task waits forever) is a deadlock like any other: the
 * report lists each blocked program ("node trainer_0: join trainer_0#1;
 * node trainer_0#1: allreduce #3 ...").
 *
 * Tasks end with their node: a kill, a machine crash or a power loss of
 * the node abandons them with its main program (nothing more of theirs
 * happens), and so does the main program returning or any program calling
 * exit(), as a process exit ends its threads: join what must finish.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "sim_core.h"
#include "sim_internal.h"

static void task_entry(void *arg)
{
    struct ckh__task *t = arg;
    struct ckh__node *n = t->th.node;
    struct ckh_sim *sim = n->sim;
    ckh__sched_reap(sim);
    CKH_ASSERT(t->used && !t->done);
    int status = t->fn(&n->env, t->arg);
    CKH_ASSERT(t->used && !t->done); /* a task is joined only once it returned */
    t->done = true;
    t->status = status;
    ckh__trace_add(sim, n->id, CKH_OP_TASK_EXIT, NULL, NULL, 0, 0, status, 0);
    ckh__sched_thread_wake(sim, t->joiner);
    ckh__sched_thread_end(sim);
}

/* Takes a free slot and makes its task runnable. */
static int task_start(struct ckh__node *n, ckh_bg_fn fn, void *arg, struct ckh__task **out)
{
    struct ckh_sim *sim = n->sim;
    struct ckh__task *t = NULL;
    if (n->tasks == NULL) { /* the simulator's bookkeeping, not the node's memory */
        n->tasks = calloc(CKH__TASK_MAX, sizeof *n->tasks);
        if (n->tasks == NULL) {
            sim->host_oom = true;
            return ckh__sim_err(sim, CKH_ENOMEM, "node %s: no memory for its tasks", n->name);
        }
        for (size_t i = 0; i < CKH__TASK_MAX; i++) {
            n->tasks[i].th.node = n;
            n->tasks[i].th.heap_pos = SIZE_MAX;
        }
    }
    for (size_t i = 0; i < CKH__TASK_MAX && t == NULL; i++)
        if (!n->tasks[i].used)
            t = &n->tasks[i];
    if (t == NULL)
        return ckh__sim_err(sim, CKH_ELIMIT, "node %s: more than %d background tasks at once",
                            n->name, CKH__TASK_MAX);
    int rc = ckh__coro_create(&t->th.co, sim->cfg.stack_bytes, task_entry, t);
    if (rc < 0)
        return ckh__sim_err(sim, rc, "node %s: cannot map a task's stack: %s", n->name,
                            ckh_strerror(rc));
    CKH_ASSERT(!t->used && t->joiner == NULL);
    t->th.has_coro = true;
    t->th.task = ++n->tasks_spawned;
    t->used = true;
    t->done = false;
    t->status = 0;
    t->fn = fn;
    t->arg = arg;
    t->joiner = NULL;
    ckh__sched_thread_start(sim, &t->th);
    *out = t;
    return 0;
}

/* The running thread, when it is a program of n; else NULL (message set). */
static struct ckh__thread *caller_of(struct ckh__node *n, const char *what)
{
    struct ckh__thread *cur = n->sim->cur;
    if (cur == NULL || cur->node != n || n->state != CKH_NODE_RUNNING) {
        ckh__sim_err(n->sim, CKH_ESTATE, "node %s: %s outside the node's programs", n->name, what);
        return NULL;
    }
    return cur;
}

int ckh__sim_task_spawn(struct ckh__node *n, ckh_bg_fn fn, void *arg, struct ckh__task **out)
{
    struct ckh_sim *sim = n->sim;
    *out = NULL;
    if (fn == NULL)
        return ckh__sim_err(sim, CKH_EINVAL, "node %s: spawn without a function", n->name);
    if (caller_of(n, "spawn") == NULL)
        return CKH_ESTATE;
    struct ckh_op op = {.kind = CKH_OP_SPAWN, .node = n->id,
                        .arg = (int64_t)n->tasks_spawned + 1, .epoch = -1, .step = -1};
    struct ckh_fault_action act;
    ckh__sim_enter(sim, &op, 0, &act);
    op.arg = (int64_t)n->tasks_spawned + 1; /* another program may have spawned meanwhile */
    int rc = act.kind == CKH_FAULT_ERRNO ? -act.err : task_start(n, fn, arg, out);
    ckh__sim_leave(sim, &op, rc);
    return rc;
}

/* t when it is a live task of n (compared as addresses: t may point
 * anywhere), else NULL. */
static struct ckh__task *task_of(struct ckh__node *n, struct ckh__task *t)
{
    if (n->tasks == NULL)
        return NULL;
    uintptr_t p = (uintptr_t)t, lo = (uintptr_t)&n->tasks[0];
    uintptr_t hi = (uintptr_t)&n->tasks[CKH__TASK_MAX];
    if (p < lo || p >= hi || (p - lo) % sizeof n->tasks[0] != 0)
        return NULL;
    return &n->tasks[(p - lo) / sizeof n->tasks[0]];
}

/* Waits for t (a live task of n) to return; 0 or CKH_EINVAL. */
static int join_wait(struct ckh__node *n, struct ckh__thread *cur, struct ckh__task *t, int *status)
{
    struct ckh_sim *sim = n->sim;
    if (t == NULL || !t->used || t->joiner != NULL || &t->th == cur)
        return ckh__sim_err(sim, CKH_EINVAL,
                            "node %s: join of a task that is not its own, already joined or "
                            "being joined, or of itself", n->name);
    if (!t->done) {
        snprintf(t->join_what, sizeof t->join_what, "join %s#%u", n->name, t->th.task);
        t->joiner = cur;
        int rc = ckh__sched_thread_block(sim, t->join_what, UINT64_MAX);
        t->joiner = NULL;
        if (rc != 0)
            return rc; /* not reached: no deadline, and a kill does not return */
    }
    CKH_ASSERT(t->done && t->used); /* woken by task_entry only */
    if (status != NULL)
        *status = t->status;
    t->used = false;
    return 0;
}

int ckh__sim_task_join(struct ckh__node *n, struct ckh__task *handle, int *status)
{
    struct ckh_sim *sim = n->sim;
    struct ckh__thread *cur = caller_of(n, "join");
    if (cur == NULL)
        return CKH_ESTATE;
    struct ckh__task *t = task_of(n, handle);
    struct ckh_op op = {.kind = CKH_OP_JOIN, .node = n->id,
                        .arg = t != NULL && t->used ? (int64_t)t->th.task : -1,
                        .epoch = -1, .step = -1};
    struct ckh_fault_action act;
    ckh__sim_enter(sim, &op, 0, &act);
    int rc = act.kind == CKH_FAULT_ERRNO ? -act.err : join_wait(n, cur, t, status);
    ckh__sim_leave(sim, &op, rc);
    return rc;
}
