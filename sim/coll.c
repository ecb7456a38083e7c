/* Simulated collectives (struct ckh_coll of a node with rank >= 0).
 *
 * Specification (tests/test_coll.c cites it):
 *
 * World. The ranks are the nodes with rank >= 0; world size W is their
 * count and their ranks must be exactly 0..W-1 (checked when a run
 * starts).
 *
 * Generations. A generation plays the part of a communicator. A ranked
 * node joins the current generation when it is launched. When a member of
 * the current generation stops (killed or exited), the group is "broken":
 * the next launch of a ranked node opens a new generation, and every rank
 * launched after it joins that one. So restarting all ranks (between runs
 * or during one) puts them together in a fresh generation, while a
 * survivor of the old incarnation stays in the old one. Collectives and
 * send/recv only ever match calls of the same generation: a restarted
 * rank can never complete a collective with stale arrivals of dead
 * incarnations, nor with survivors of an older generation.
 *
 * Collectives. Each incarnation numbers its collectives 1, 2, ... (#seq).
 * Collective #seq of a generation completes when all W ranks have arrived
 * with the same kind, count, dtype, op and root; the last to arrive
 * computes the results into every rank's buffers and wakes the others, all
 * at the virtual time of that arrival. Every call first charges
 * cfg.coll_latency_ns. All-reduce folds the ranks' buffers in rank order
 * (0, 1, 2, ...) into a scratch buffer, so float results are bit-identical
 * whatever the interleaving; integer sums wrap. MAX/MIN keep the earlier
 * value on ties and unordered (NaN) comparisons (ckh_coll_reduce of
 * include/ckh/env.h, which the real platform's collectives fold with too). A rank that times out
 * withdraws its arrival (its buffers are not touched afterwards), so the
 * collective can no longer complete and the others time out as well. The
 * error: CKH_EMISMATCH when two arrivals at that #seq disagreed, else
 * CKH_EPEER_DEAD when some rank is not a running member of the generation
 * (killed, exited, or restarted into another generation), else
 * CKH_ETIMEOUT. timeout_ns 0 waits forever (a dead peer or a mismatch then
 * ends in the deadlock report).
 *
 * Send/recv are rendezvous: a send completes when the peer's matching recv
 * (same generation, peer and tag) meets it, and vice versa; calls match in
 * the order each rank makes them. Sizes that differ make both calls fail
 * with CKH_EMISMATCH at once. A timeout gives CKH_EPEER_DEAD when the peer
 * is not a running member of the generation, else CKH_ETIMEOUT.
 *
 * An op failed by an ERRNO fault has no effect: it does not take a #seq.
 *
 * Background tasks. A node's background tasks share its rank: any of its
 * programs may call collectives and send/recv, one at a time; a call made
 * while another program of the node is inside one fails with CKH_ESTATE
 * at once (nothing traced).
 *
 * Trace lines: barrier/allgather off=0; broadcast off=root; send/recv
 * off=peer, arg=tag; allreduce arg = dtype * 16 + op; len = bytes.
 *
 * Invariants (CKH_ASSERT): a node's generation is never ahead of the
 * group's; a collective completes only with W arrivals, each from the
 * running node that holds that rank, a member of the slot's generation
 * that is waiting at that very #seq (no op completes out of generation);
 * a send/recv pair matches within one generation. CKH_ASSERT_SLOW walks
 * every open slot before a rank waits: its present count is the number
 * of arrivals present, and each present arrival is a running member of
 * the slot's generation with that rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/sim_testing.h"
#include "sim_core.h"
#include "sim_internal.h"

static struct ckh__node *coll_node(struct ckh_coll *c)
{
    return CKH__CONTAINER_OF(c, struct ckh__node, coll);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- world and generations ---- */

static void slots_clear(struct ckh__coll_state *cs)
{
    for (size_t i = 0; i < cs->nslots; i++)
        free(cs->slots[i].arr);
    cs->nslots = 0;
}

int ckh__coll_prepare(struct ckh_sim *sim)
{
    struct ckh__coll_state *cs = &sim->coll;
    int world = 0;
    for (int i = 0; i < sim->nnodes; i++)
        if (sim->nodes[i]->rank >= 0)
            world++;
    if (world == cs->world)
        return 0;
    int *rank_node = malloc((size_t)(world > 0 ? world : 1) * sizeof *rank_node);
    if (rank_node == NULL)
        return ckh__sim_err(sim, CKH_ENOMEM, "collectives: out of memory");
    for (int r = 0; r < world; r++)
        rank_node[r] = -1;
    for (int i = 0; i < sim->nnodes; i++) {
        int r = sim->nodes[i]->rank;
        if (r < 0)
            continue;
        if (r >= world) {
            free(rank_node);
            return ckh__sim_err(sim, CKH_EINVAL,
                                "node %s has rank %d but there are %d ranks (ranks must be 0..%d)",
                                sim->nodes[i]->name, r, world, world - 1);
        }
        rank_node[r] = i;
    }
    /* The world changed: pending arrivals were sized for the old one. */
    slots_clear(cs);
    free(cs->rank_node);
    cs->rank_node = rank_node;
    cs->world = world;
    return 0;
}

void ckh__coll_node_start(struct ckh_sim *sim, struct ckh__node *n)
{
    struct ckh__coll_state *cs = &sim->coll;
    if (n->rank < 0)
        return;
    if (cs->broken) {
        cs->gen++;
        cs->broken = false;
    }
    n->coll_gen = cs->gen;
    memset(&n->p2p, 0, sizeof n->p2p);
}

#ifdef CKH_SLOW_ASSERTS
/* Slow check: every open slot's arrivals are consistent (see the top). */
static bool slots_consistent(const struct ckh_sim *sim)
{
    const struct ckh__coll_state *cs = &sim->coll;
    for (size_t i = 0; i < cs->nslots; i++) {
        const struct ckh__slot *s = &cs->slots[i];
        int present = 0;
        if (s->gen > cs->gen)
            return false;
        for (int r = 0; r < cs->world; r++) {
            const struct ckh__arrival *a = &s->arr[r];
            if (!a->present)
                continue;
            present++;
            const struct ckh__node *m = ckh__sim_node(sim, a->node);
            if (m == NULL || m->state != CKH_NODE_RUNNING || m->coll_gen != s->gen ||
                m->rank != r)
                return false;
        }
        if (present != s->present)
            return false;
    }
    return true;
}
#endif

/* The members of slot s, about to complete it: every rank has arrived,
 * and each arrival is the running holder of its rank, waiting at this
 * #seq of this generation. */
static void assert_completes_in_generation(const struct ckh_sim *sim, const struct ckh__slot *s)
{
    const struct ckh__coll_state *cs = &sim->coll;
    CKH_ASSERT(s->present == cs->world && s->gen <= cs->gen);
    for (int r = 0; r < cs->world; r++) {
        const struct ckh__node *m = sim->nodes[s->arr[r].node];
        CKH_ASSERT(s->arr[r].present && m->rank == r && m->state == CKH_NODE_RUNNING);
        CKH_ASSERT(m->coll_gen == s->gen && m->coll_seq == s->seq);
    }
}

static bool slot_all_seen(const struct ckh__coll_state *cs, const struct ckh__slot *s)
{
    for (int r = 0; r < cs->world; r++)
        if (!s->arr[r].seen)
            return false;
    return true;
}

static void slot_remove(struct ckh__coll_state *cs, size_t i)
{
    free(cs->slots[i].arr);
    cs->slots[i] = cs->slots[--cs->nslots];
}

/* Withdraws rank's arrival from every slot of gen; frees slots no longer
 * useful (nobody waiting and every rank past them). */
static void withdraw(struct ckh__coll_state *cs, uint64_t gen, int rank)
{
    for (size_t i = cs->nslots; i-- > 0;) {
        struct ckh__slot *s = &cs->slots[i];
        if (s->gen != gen || !s->arr[rank].present)
            continue;
        s->arr[rank].present = false;
        s->arr[rank].sbuf = NULL;
        s->arr[rank].rbuf = NULL;
        s->present--;
        if (s->present == 0 && slot_all_seen(cs, s))
            slot_remove(cs, i);
    }
}

void ckh__coll_node_stop(struct ckh_sim *sim, struct ckh__node *n)
{
    struct ckh__coll_state *cs = &sim->coll;
    if (n->rank < 0 || n->rank >= cs->world)
        return;
    if (n->state == CKH_NODE_RUNNING && n->coll_gen == cs->gen)
        cs->broken = true;
    withdraw(cs, n->coll_gen, n->rank);
    n->p2p.active = false;
}

void ckh__coll_free(struct ckh_sim *sim)
{
    struct ckh__coll_state *cs = &sim->coll;
    slots_clear(cs);
    free(cs->slots);
    free(cs->rank_node);
    free(cs->scratch);
    memset(cs, 0, sizeof *cs);
}

/* True when every rank is a running member of gen. */
static bool gen_whole(const struct ckh_sim *sim, uint64_t gen)
{
    const struct ckh__coll_state *cs = &sim->coll;
    for (int r = 0; r < cs->world; r++) {
        const struct ckh__node *m = sim->nodes[cs->rank_node[r]];
        if (m->state != CKH_NODE_RUNNING || m->coll_gen != gen)
            return false;
    }
    return true;
}

/* ---- collectives ---- */

static struct ckh__slot *slot_find(struct ckh__coll_state *cs, uint64_t gen, uint64_t seq)
{
    for (size_t i = 0; i < cs->nslots; i++)
        if (cs->slots[i].gen == gen && cs->slots[i].seq == seq)
            return &cs->slots[i];
    return NULL;
}

static struct ckh__slot *slot_get(struct ckh__coll_state *cs, uint64_t gen, uint64_t seq)
{
    struct ckh__slot *s = slot_find(cs, gen, seq);
    if (s != NULL)
        return s;
    if (cs->nslots == cs->cap_slots) {
        size_t cap = cs->cap_slots != 0 ? 2 * cs->cap_slots : 4;
        struct ckh__slot *slots = realloc(cs->slots, cap * sizeof *slots);
        if (slots == NULL) {
            cs->oom = true;
            return NULL;
        }
        cs->slots = slots;
        cs->cap_slots = cap;
    }
    struct ckh__arrival *arr = calloc((size_t)cs->world, sizeof *arr);
    if (arr == NULL) {
        cs->oom = true;
        return NULL;
    }
    s = &cs->slots[cs->nslots++];
    memset(s, 0, sizeof *s);
    s->gen = gen;
    s->seq = seq;
    s->arr = arr;
    return s;
}

static bool same_call(const struct ckh__arrival *a, const struct ckh__arrival *b)
{
    return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype &&
           a->redop == b->redop && a->root == b->root;
}

static void *scratch(struct ckh__coll_state *cs, size_t bytes)
{
    if (bytes > cs->scratch_bytes) {
        unsigned char *p = realloc(cs->scratch, bytes);
        if (p == NULL) {
            cs->oom = true;
            return NULL;
        }
        cs->scratch = p;
        cs->scratch_bytes = bytes;
    }
    return cs->scratch;
}

/* All W arrivals are present and agree: computes every rank's result. */
static int slot_complete(struct ckh__coll_state *cs, struct ckh__slot *s)
{
    int w = cs->world;
    const struct ckh__arrival *a0 = &s->arr[0];
    switch (a0->kind) {
    case CKH_OP_BROADCAST: {
        const void *src = s->arr[a0->root].rbuf;
        for (int r = 0; r < w; r++)
            if (s->arr[r].rbuf != src && a0->count > 0)
                memmove(s->arr[r].rbuf, src, a0->count);
        break;
    }
    case CKH_OP_ALLREDUCE: {
        size_t bytes = a0->count * ckh_dtype_size((enum ckh_dtype)a0->dtype);
        if (bytes == 0)
            break;
        void *acc = scratch(cs, bytes);
        if (acc == NULL)
            return CKH_ENOMEM;
        memcpy(acc, s->arr[0].rbuf, bytes);
        for (int r = 1; r < w; r++)
            ckh_coll_reduce(acc, s->arr[r].rbuf, a0->count, (enum ckh_dtype)a0->dtype,
                            (enum ckh_redop)a0->redop);
        for (int r = 0; r < w; r++)
            memcpy(s->arr[r].rbuf, acc, bytes);
        break;
    }
    case CKH_OP_ALLGATHER: {
        size_t bytes = a0->count;
        if (bytes == 0)
            break;
        unsigned char *all = scratch(cs, bytes * (size_t)w);
        if (all == NULL)
            return CKH_ENOMEM;
        for (int r = 0; r < w; r++)
            memcpy(all + (size_t)r * bytes, s->arr[r].sbuf, bytes);
        for (int r = 0; r < w; r++)
            memcpy(s->arr[r].rbuf, all, bytes * (size_t)w);
        break;
    }
    default:
        break;
    }
    return 0;
}

static void describe(struct ckh__node *n, const struct ckh__arrival *a)
{
    char *buf = n->pending_buf;
    size_t size = sizeof n->pending_buf;
    unsigned long long seq = (unsigned long long)n->coll_seq;
    switch (a->kind) {
    case CKH_OP_BARRIER:
        snprintf(buf, size, "barrier #%llu", seq);
        break;
    case CKH_OP_BROADCAST:
        snprintf(buf, size, "broadcast #%llu bytes=%zu root=%d", seq, a->count, a->root);
        break;
    case CKH_OP_ALLREDUCE:
        snprintf(buf, size, "allreduce #%llu count=%zu %s %s", seq, a->count,
                 ckh_dtype_name((enum ckh_dtype)a->dtype), ckh_redop_name((enum ckh_redop)a->redop));
        break;
    case CKH_OP_ALLGATHER:
        snprintf(buf, size, "allgather #%llu bytes=%zu", seq, a->count);
        break;
    default:
        snprintf(buf, size, "collective #%llu", seq);
        break;
    }
}

/* Arrives at the node's next collective and waits for it to complete. */
static int coll_arrive(struct ckh_sim *sim, struct ckh__node *n, const struct ckh__arrival *a,
                       uint64_t timeout_ns)
{
    struct ckh__coll_state *cs = &sim->coll;
    uint64_t gen = n->coll_gen;
    uint64_t seq = ++n->coll_seq;
    CKH_ASSERT(gen <= cs->gen);
    struct ckh__slot *s = slot_get(cs, gen, seq);
    if (s == NULL)
        return CKH_ENOMEM;
    for (int r = 0; r < cs->world; r++)
        if (r != n->rank && s->arr[r].seen && !same_call(&s->arr[r], a))
            s->mismatch = true;
    if (a->faulty)
        s->mismatch = true;
    s->arr[n->rank] = *a;
    s->arr[n->rank].present = true;
    s->arr[n->rank].seen = true;
    s->arr[n->rank].node = n->id;
    s->present++;
    if (s->present == cs->world && !s->mismatch) {
        assert_completes_in_generation(sim, s);
        int rc = slot_complete(cs, s);
        for (int r = 0; r < cs->world; r++) {
            struct ckh__node *m = sim->nodes[s->arr[r].node];
            if (m != n) {
                m->coll_result = rc;
                ckh__sim_wake(sim, m->id);
            }
        }
        slot_remove(cs, (size_t)(s - cs->slots));
        return rc;
    }
    CKH_ASSERT_SLOW(slots_consistent(sim));
    describe(n, a);
    uint64_t deadline = timeout_ns != 0 ? add_sat(sim->now_ns, timeout_ns) : UINT64_MAX;
    int rc = ckh__sim_block(sim, n->pending_buf, deadline);
    if (rc == 0)
        return n->coll_result;
    s = slot_find(cs, gen, seq); /* slots may have moved while blocked */
    bool mismatch = s != NULL && s->mismatch;
    withdraw(cs, gen, n->rank);
    if (mismatch)
        return CKH_EMISMATCH;
    return gen_whole(sim, gen) ? CKH_ETIMEOUT : CKH_EPEER_DEAD;
}

/* A collective or send/recv while another program of the same node (its
 * main program or a background task) is inside one: refused, since a
 * rank's calls are numbered in one sequence (NCCL: one communicator is
 * not used from two threads at once). */
static int busy(struct ckh__node *n)
{
    return ckh__sim_err(n->sim, CKH_ESTATE,
                        "node %s: a collective while another of its programs is in one", n->name);
}

/* One collective call: enter (latency, faults), arrive, leave (trace). */
static int coll_call(struct ckh__node *n, const struct ckh__arrival *a, uint64_t off, uint64_t len,
                     int64_t arg, uint64_t timeout_ns)
{
    struct ckh_sim *sim = n->sim;
    if (sim->coll.world == 0 || n->rank >= sim->coll.world || n->state != CKH_NODE_RUNNING)
        return ckh__sim_err(sim, CKH_ESTATE, "node %s: collectives used outside a run", n->name);
    if (n->coll_busy)
        return busy(n);
    struct ckh_op op = {.kind = (enum ckh_op_kind)a->kind, .node = n->id, .off = off,
                        .len = len, .arg = arg};
    struct ckh_fault_action act;
    n->coll_busy = true;
    ckh__sim_enter(sim, &op, sim->cfg.coll_latency_ns, &act);
    struct ckh__arrival alt;
    if (act.kind == CKH_FAULT_MISMATCH) {
        /* Join a different collective than the peers: no buffer of this
         * call is touched, since a mismatched collective never completes. */
        alt = *a;
        alt.kind = a->kind == CKH_OP_BARRIER ? CKH_OP_ALLREDUCE : CKH_OP_BARRIER;
        alt.count = 0;
        alt.sbuf = NULL;
        alt.rbuf = NULL;
        alt.faulty = true; /* even if every rank is faulted, none may complete */
        a = &alt;
    }
    int rc = act.kind == CKH_FAULT_ERRNO ? -act.err : coll_arrive(sim, n, a, timeout_ns);
    n->coll_busy = false;
    ckh__sim_leave(sim, &op, rc);
    return rc;
}

static int coll_rank(struct ckh_coll *c)
{
    return coll_node(c)->rank;
}

static int coll_world_size(struct ckh_coll *c)
{
    return coll_node(c)->sim->coll.world;
}

static int coll_barrier(struct ckh_coll *c, uint64_t timeout_ns)
{
    struct ckh__arrival a = {.kind = CKH_OP_BARRIER};
    return coll_call(coll_node(c), &a, 0, 0, 0, timeout_ns);
}

static int coll_broadcast(struct ckh_coll *c, void *buf, size_t size_bytes, int root,
                          uint64_t timeout_ns)
{
    struct ckh__node *n = coll_node(c);
    if ((buf == NULL && size_bytes > 0) || root < 0 || root >= n->sim->coll.world)
        return ckh__sim_err(n->sim, CKH_EINVAL, "node %s: broadcast with bad buffer or root %d",
                            n->name, root);
    struct ckh__arrival a = {.kind = CKH_OP_BROADCAST, .count = size_bytes, .root = root,
                             .sbuf = buf, .rbuf = buf};
    return coll_call(n, &a, (uint64_t)root, size_bytes, 0, timeout_ns);
}

static int coll_allreduce(struct ckh_coll *c, void *buf, size_t count, enum ckh_dtype dt,
                          enum ckh_redop op, uint64_t timeout_ns)
{
    struct ckh__node *n = coll_node(c);
    size_t esize = ckh_dtype_size(dt);
    if (esize == 0 || (unsigned)op > CKH_RED_MIN || (buf == NULL && count > 0) ||
        count > SIZE_MAX / 8)
        return ckh__sim_err(n->sim, CKH_EINVAL, "node %s: allreduce with bad arguments", n->name);
    struct ckh__arrival a = {.kind = CKH_OP_ALLREDUCE, .count = count, .dtype = (int)dt,
                             .redop = (int)op, .sbuf = buf, .rbuf = buf};
    return coll_call(n, &a, 0, count * esize, (int64_t)dt * 16 + (int64_t)op, timeout_ns);
}

static int coll_allgather(struct ckh_coll *c, const void *send, void *recv, size_t size_bytes,
                          uint64_t timeout_ns)
{
    struct ckh__node *n = coll_node(c);
    if ((send == NULL || recv == NULL) && size_bytes > 0)
        return ckh__sim_err(n->sim, CKH_EINVAL, "node %s: allgather with NULL buffer", n->name);
    struct ckh__arrival a = {.kind = CKH_OP_ALLGATHER, .count = size_bytes, .sbuf = send,
                             .rbuf = recv};
    return coll_call(n, &a, 0, size_bytes, 0, timeout_ns);
}

/* ---- point to point ---- */

static int p2p_call(struct ckh__node *n, bool is_send, const void *sbuf, void *rbuf, size_t size,
                    int peer, int tag, uint64_t timeout_ns)
{
    struct ckh_sim *sim = n->sim;
    struct ckh__coll_state *cs = &sim->coll;
    if ((sbuf == NULL && rbuf == NULL && size > 0) || peer < 0 || peer >= cs->world ||
        peer == n->rank)
        return ckh__sim_err(sim, CKH_EINVAL, "node %s: %s with bad buffer or peer %d", n->name,
                            is_send ? "send" : "recv", peer);
    if (n->state != CKH_NODE_RUNNING || n->rank >= cs->world)
        return ckh__sim_err(sim, CKH_ESTATE, "node %s: collectives used outside a run", n->name);
    if (n->coll_busy)
        return busy(n);
    struct ckh_op op = {.kind = is_send ? CKH_OP_SEND : CKH_OP_RECV, .node = n->id,
                        .off = (uint64_t)peer, .len = size, .arg = tag};
    struct ckh_fault_action act;
    n->coll_busy = true;
    ckh__sim_enter(sim, &op, sim->cfg.coll_latency_ns, &act);
    int rc;
    if (act.kind == CKH_FAULT_ERRNO) {
        rc = -act.err;
        goto out;
    }
    n->p2p_seq++;
    struct ckh__node *pn = sim->nodes[cs->rank_node[peer]];
    struct ckh__p2p *pp = &pn->p2p;
    if (pn->state == CKH_NODE_RUNNING && pp->active && pp->gen == n->coll_gen &&
        pp->is_send != is_send && pp->peer == n->rank && pp->tag == tag) {
        CKH_ASSERT(pn->coll_gen == n->coll_gen && n->coll_gen <= cs->gen);
        if (pp->size_bytes != size) {
            rc = CKH_EMISMATCH;
        } else {
            rc = 0;
            const void *from = is_send ? sbuf : pp->sbuf;
            void *to = is_send ? pp->rbuf : rbuf;
            if (size > 0 && from != to)
                memmove(to, from, size);
        }
        pp->active = false;
        pp->result = rc;
        ckh__sim_wake(sim, pn->id);
        goto out;
    }
    n->p2p = (struct ckh__p2p){.active = true, .is_send = is_send, .peer = peer, .tag = tag,
                               .size_bytes = size, .sbuf = sbuf, .rbuf = rbuf,
                               .gen = n->coll_gen};
    snprintf(n->pending_buf, sizeof n->pending_buf, "%s #%llu %s=%d tag=%d bytes=%zu",
             is_send ? "send" : "recv", (unsigned long long)n->p2p_seq, is_send ? "to" : "from",
             peer, tag, size);
    uint64_t deadline = timeout_ns != 0 ? add_sat(sim->now_ns, timeout_ns) : UINT64_MAX;
    rc = ckh__sim_block(sim, n->pending_buf, deadline);
    if (rc == 0) {
        rc = n->p2p.result;
    } else {
        n->p2p.active = false;
        bool peer_ok = pn->state == CKH_NODE_RUNNING && pn->coll_gen == n->coll_gen;
        rc = peer_ok ? CKH_ETIMEOUT : CKH_EPEER_DEAD;
    }
out:
    n->coll_busy = false;
    ckh__sim_leave(sim, &op, rc);
    return rc;
}

static int coll_send(struct ckh_coll *c, const void *buf, size_t size_bytes, int peer, int tag,
                     uint64_t timeout_ns)
{
    return p2p_call(coll_node(c), true, buf, NULL, size_bytes, peer, tag, timeout_ns);
}

static int coll_recv(struct ckh_coll *c, void *buf, size_t size_bytes, int peer, int tag,
                     uint64_t timeout_ns)
{
    return p2p_call(coll_node(c), false, NULL, buf, size_bytes, peer, tag, timeout_ns);
}

const struct ckh_coll_ops ckh__coll_ops = {
    .version = 1,
    .rank = coll_rank,
    .world_size = coll_world_size,
    .barrier = coll_barrier,
    .broadcast = coll_broadcast,
    .allreduce = coll_allreduce,
    .allgather = coll_allgather,
    .send = coll_send,
    .recv = coll_recv,
};

/* ---- test-only entries (include/ckh/sim_testing.h) ---- */

void ckh__sim_test_set_coll_gen(struct ckh_sim *sim, int id, uint64_t gen)
{
    struct ckh__node *n = ckh__sim_node(sim, id);
    if (n != NULL)
        n->coll_gen = gen;
}
