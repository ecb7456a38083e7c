/* The environment a simulated node's program sees (struct ckh_env): the
 * clock, named random streams, lifecycle ops and the accounting allocator.
 * The filesystem view comes from sim/simfs.c and the collectives from
 * sim/coll.c; the scheduler (sim/sched.c) launches and stops nodes.
 *
 * Clock: now_ns is the global virtual time; sleep_ns(ns) is a SLEEP op
 * (arg = ns) whose latency is ns, so sleeping an hour costs no wall time.
 *
 * Rand: stream_seed(name) = ckh_seed_derive(node_seed, name) with
 * node_seed = ckh_node_rand_base(seed, node name) (include/ckh/rng.h,
 * shared with the real platform): stable across incarnations, so a
 * restarted node regenerates the same streams.
 *
 * Node: exit(status) ends the program (EXIT line); log(msg) is a LOG op
 * with the message as its path; phase(p, e, s) stores where the program is
 * and is a PHASE op with path = p, off = e, len = s (two's complement);
 * fault rules and later ops see the stored phase. spawn and join run
 * background tasks (sim/task.c); every program of the node shares this
 * environment, so exit() from a task ends the node.
 *
 * Alloc: every block carries a header linking it into the incarnation's
 * list, so all of them are freed when the incarnation ends (fresh memory
 * on restart). mem_bytes counts payload bytes. An allocation that would
 * take mem_bytes past cfg.node_mem_limit_bytes, or that an ALLOC fault rule
 * hits, returns NULL and records an ALLOC line (len = size, result
 * -ENOMEM). Successful allocations are not traced.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "sim_core.h"
#include "sim_internal.h"

/* ---- clock ---- */

static uint64_t clock_now_ns(struct ckh_clock *c)
{
    struct ckh__node *n = CKH__CONTAINER_OF(c, struct ckh__node, clock);
    return n->sim->now_ns;
}

static int clock_sleep_ns(struct ckh_clock *c, uint64_t ns)
{
    struct ckh__node *n = CKH__CONTAINER_OF(c, struct ckh__node, clock);
    struct ckh_op op = {.kind = CKH_OP_SLEEP, .node = n->id, .arg = (int64_t)ns};
    struct ckh_fault_action act;
    ckh__sim_enter(n->sim, &op, ns, &act);
    int rc = act.kind == CKH_FAULT_ERRNO ? -act.err : 0;
    ckh__sim_leave(n->sim, &op, rc);
    return rc;
}

static const struct ckh_clock_ops clock_ops = {
    .version = 1,
    .now_ns = clock_now_ns,
    .sleep_ns = clock_sleep_ns,
};

/* ---- rand ---- */

static uint64_t rand_stream_seed(struct ckh_rand *r, const char *name)
{
    struct ckh__node *n = CKH__CONTAINER_OF(r, struct ckh__node, rand);
    return ckh_seed_derive(n->rand_seed, name != NULL ? name : "");
}

static const struct ckh_rand_ops rand_ops = {
    .version = 1,
    .stream_seed = rand_stream_seed,
};

/* ---- node ---- */

static void node_exit(struct ckh_node *nd, int status)
{
    struct ckh__node *n = CKH__CONTAINER_OF(nd, struct ckh__node, node);
    if (ckh__sim_cur_node(n->sim) == n) /* its main program or one of its tasks */
        ckh__sim_exit_current(n->sim, status);
    /* Called from outside the node's own program: end it without running it. */
    ckh__sim_exit_other(n->sim, n, status);
}

static const char *node_name(struct ckh_node *nd)
{
    struct ckh__node *n = CKH__CONTAINER_OF(nd, struct ckh__node, node);
    return n->name;
}

static void node_simple_op(struct ckh__node *n, struct ckh_op *op)
{
    struct ckh_fault_action act;
    ckh__sim_enter(n->sim, op, 0, &act);
    ckh__sim_leave(n->sim, op, act.kind == CKH_FAULT_ERRNO ? -act.err : 0);
}

static void node_log(struct ckh_node *nd, const char *msg)
{
    struct ckh__node *n = CKH__CONTAINER_OF(nd, struct ckh__node, node);
    struct ckh_op op = {.kind = CKH_OP_LOG, .node = n->id, .path = msg != NULL ? msg : ""};
    node_simple_op(n, &op);
}

static void node_phase(struct ckh_node *nd, const char *phase, int64_t epoch, int64_t step)
{
    struct ckh__node *n = CKH__CONTAINER_OF(nd, struct ckh__node, node);
    n->phase = phase;
    n->epoch = epoch;
    n->step = step;
    struct ckh_op op = {.kind = CKH_OP_PHASE, .node = n->id, .path = phase,
                        .off = (uint64_t)epoch, .len = (uint64_t)step};
    node_simple_op(n, &op);
}

static int node_spawn(struct ckh_node *nd, ckh_bg_fn fn, void *arg, struct ckh_task **out)
{
    struct ckh__node *n = CKH__CONTAINER_OF(nd, struct ckh__node, node);
    if (out == NULL)
        return CKH_EINVAL;
    struct ckh__task *t = NULL;
    int rc = ckh__sim_task_spawn(n, fn, arg, &t);
    *out = rc == 0 ? (struct ckh_task *)(void *)t : NULL;
    return rc;
}

static int node_join(struct ckh_node *nd, struct ckh_task *t, int *status)
{
    struct ckh__node *n = CKH__CONTAINER_OF(nd, struct ckh__node, node);
    return ckh__sim_task_join(n, (struct ckh__task *)(void *)t, status);
}

static const struct ckh_node_ops node_ops = {
    .version = 2,
    .exit = node_exit,
    .name = node_name,
    .log = node_log,
    .phase = node_phase,
    .spawn = node_spawn,
    .join = node_join,
};

/* ---- accounting allocator ---- */

#define HDR_BYTES sizeof(struct ckh__mem_hdr)

static bool mem_refuse(struct ckh__node *n, uint64_t grow_bytes, uint64_t size_bytes)
{
    struct ckh_sim *sim = n->sim;
    uint64_t limit = sim->cfg.node_mem_limit_bytes;
    bool refuse = (limit != 0 && (grow_bytes > limit || n->mem_bytes > limit - grow_bytes)) ||
                  size_bytes > SIZE_MAX - HDR_BYTES;
    if (!refuse && ckh__sim_cur_node(sim) == n)
        refuse = ckh__sim_alloc_fault(sim, n, size_bytes);
    if (refuse)
        ckh__trace_add(sim, n->id, CKH_OP_ALLOC, NULL, NULL, 0, size_bytes, 0, -ENOMEM);
    return refuse;
}

static void mem_link(struct ckh__node *n, struct ckh__mem_hdr *h)
{
    h->prev = NULL;
    h->next = n->mem_head;
    if (n->mem_head != NULL)
        n->mem_head->prev = h;
    n->mem_head = h;
}

static void mem_unlink(struct ckh__node *n, struct ckh__mem_hdr *h)
{
    if (h->prev != NULL)
        h->prev->next = h->next;
    else
        n->mem_head = h->next;
    if (h->next != NULL)
        h->next->prev = h->prev;
}

static void mem_count(struct ckh__node *n, uint64_t add, uint64_t sub)
{
    n->mem_bytes = n->mem_bytes + add - sub;
    if (n->mem_bytes > n->mem_peak_bytes)
        n->mem_peak_bytes = n->mem_bytes;
}

static void *mem_malloc(struct ckh_alloc *a, size_t size_bytes)
{
    struct ckh__node *n = CKH__CONTAINER_OF(a, struct ckh__node, alloc);
    if (mem_refuse(n, size_bytes, size_bytes))
        return NULL;
    struct ckh__mem_hdr *h = malloc(HDR_BYTES + size_bytes);
    if (h == NULL) {
        n->sim->host_oom = true; /* not the node's limit: ckh's own memory */
        return NULL;
    }
    h->size_bytes = size_bytes;
    h->pad = 0;
    mem_link(n, h);
    mem_count(n, size_bytes, 0);
    return h + 1;
}

static void mem_free(struct ckh_alloc *a, void *ptr)
{
    struct ckh__node *n = CKH__CONTAINER_OF(a, struct ckh__node, alloc);
    if (ptr == NULL)
        return;
    struct ckh__mem_hdr *h = (struct ckh__mem_hdr *)ptr - 1;
    mem_unlink(n, h);
    mem_count(n, 0, h->size_bytes);
    free(h);
}

static void *mem_realloc(struct ckh_alloc *a, void *ptr, size_t size_bytes)
{
    struct ckh__node *n = CKH__CONTAINER_OF(a, struct ckh__node, alloc);
    if (ptr == NULL)
        return mem_malloc(a, size_bytes);
    if (size_bytes == 0) {
        mem_free(a, ptr);
        return NULL;
    }
    struct ckh__mem_hdr *h = (struct ckh__mem_hdr *)ptr - 1;
    size_t old = h->size_bytes;
    if (size_bytes > old && mem_refuse(n, size_bytes - old, size_bytes))
        return NULL;
    mem_unlink(n, h);
    struct ckh__mem_hdr *g = realloc(h, HDR_BYTES + size_bytes);
    if (g == NULL) {
        mem_link(n, h);
        n->sim->host_oom = true;
        return NULL;
    }
    g->size_bytes = size_bytes;
    mem_link(n, g);
    mem_count(n, size_bytes, old);
    return g + 1;
}

static const struct ckh_alloc_ops alloc_ops = {
    .version = 1,
    .malloc = mem_malloc,
    .realloc = mem_realloc,
    .free = mem_free,
};

void ckh__env_free_memory(struct ckh__node *n)
{
    n->mem_at_end_bytes = n->mem_bytes;
    struct ckh__mem_hdr *h = n->mem_head;
    while (h != NULL) {
        struct ckh__mem_hdr *next = h->next;
        free(h);
        h = next;
    }
    n->mem_head = NULL;
    n->mem_bytes = 0;
}

void ckh__env_init(struct ckh__node *n)
{
    n->clock.ops = &clock_ops;
    n->rand.ops = &rand_ops;
    n->node.ops = &node_ops;
    n->alloc.ops = &alloc_ops;
    n->coll.ops = &ckh__coll_ops;
    n->env.fs = n->view;
    n->env.clock = &n->clock;
    n->env.rand = &n->rand;
    n->env.coll = n->rank >= 0 ? &n->coll : NULL;
    n->env.node = &n->node;
    n->env.alloc = &n->alloc;
}
