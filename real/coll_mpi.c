/* struct ckh_coll over MPI point-to-point messages (real_coll.h has the
 * specification). Compiled once per MPI implementation; CKH_MPI_NAME says
 * which. Map: MPI start and end · polling with a deadline · the
 * collective exchange · collectives · send/recv · the table. */
#include "real_coll.h"

#include <mpi.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/posix.h"
#include "real_faults.h"

#ifndef CKH_MPI_NAME
#define CKH_MPI_NAME "mpi"
#endif

#define TAG_COLL 1                /* every collective's messages */
#define TAG_P2P_BASE 16           /* send/recv: TAG_P2P_BASE + (tag & TAG_P2P_MASK) */
#define TAG_P2P_MASK 0x3fff       /* within the 32767 every MPI offers */
#define HDR_MAGIC 0x434b4843u     /* "CHKC" */

/* What every message starts with. */
struct hdr {
    uint32_t magic;  /* HDR_MAGIC */
    uint32_t kind;   /* enum ckh_op_kind of the call */
    uint64_t seq;    /* the sender's #seq of collectives (send/recv: of its sends) */
    uint64_t count;  /* allreduce: elements; else bytes */
    int32_t dtype;   /* allreduce */
    int32_t redop;   /* allreduce */
    int32_t root;    /* broadcast */
    int32_t faulty;  /* joined with a MISMATCH fault: never completes */
    int64_t tag;     /* send/recv: the user's tag */
};

struct real_coll {
    struct ckh_coll base;  /* must be first */
    MPI_Comm comm;         /* duplicate of MPI_COMM_WORLD */
    int rank, world;       /* in comm */
    uint64_t seq;          /* collectives called so far (each takes the next) */
    uint64_t p2p_seq;      /* sends so far */
    atomic_flag busy;      /* a thread of the process is inside a call */
    bool failed;           /* some call failed */
    ckh_real_gate_fn gate; /* fault gate (NULL: none) */
    void *gate_ctx;        /* its context */
};

#define RC(c) ((struct real_coll *)(void *)(c))

const char *ckh_real_mpi_name(void)
{
    return CKH_MPI_NAME;
}

/* ---- MPI start and end ---- */

int ckh_real_mpi_init(int *argc, char ***argv, int *rank, int *world, char *msg, size_t msglen)
{
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return ckh_errf(msg, msglen, CKH_EINTERNAL, "%s: MPI_Init_thread failed", CKH_MPI_NAME);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_SERIALIZED)
        return ckh_errf(msg, msglen, CKH_EINTERNAL, "%s: MPI_THREAD_SERIALIZED is not available",
                        CKH_MPI_NAME);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, world);
    return 0;
}

void ckh_real_mpi_finalize(struct ckh_coll *c)
{
    if (c && RC(c)->failed)
        return; /* unmatched requests would hold MPI_Finalize up */
    MPI_Finalize();
}

/* ---- polling with a deadline ---- */

static uint64_t deadline_of(uint64_t timeout_ns)
{
    uint64_t t = ckh_posix_now_ns();
    return timeout_ns == 0 || timeout_ns > UINT64_MAX - t ? UINT64_MAX : t + timeout_ns;
}

/* Between two polls that found nothing: spin, then yield, then sleep, so
 * ranks oversubscribed on few cores leave the CPU to the ones working. */
static void idle(unsigned *spins)
{
    unsigned s = (*spins)++;
    if (s < 64)
        return;
    if (s < 2048) {
        sched_yield();
        return;
    }
    struct timespec ts = {.tv_nsec = 50000};
    nanosleep(&ts, NULL);
}

/* Tests every request of reqs[n] not yet done; true when all are. */
static bool sends_done(MPI_Request *reqs, int n, int *err)
{
    bool all = true;
    for (int i = 0; i < n; i++) {
        int flag = 1;
        if (reqs[i] != MPI_REQUEST_NULL && MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            *err = CKH_EPEER_DEAD;
        all = all && flag;
    }
    return all;
}

/* Gives up on what did not complete by the deadline. */
static void abandon(MPI_Request *reqs, int n)
{
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&reqs[i]);
            MPI_Request_free(&reqs[i]);
        }
}

/* Receives the probed message from src with tag into a fresh buffer. */
static int recv_probed(struct real_coll *c, int src, int tag, const MPI_Status *st, unsigned char **out,
                       size_t *n)
{
    int count = 0;
    MPI_Get_count(st, MPI_BYTE, &count);
    unsigned char *buf = malloc(count > 0 ? (size_t)count : 1);
    if (!buf)
        return CKH_ENOMEM;
    if (MPI_Recv(buf, count, MPI_BYTE, src, tag, c->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        free(buf);
        return CKH_EPEER_DEAD;
    }
    *out = buf;
    *n = (size_t)count;
    return 0;
}

/* ---- the collective exchange ---- */

static bool same_call(const struct hdr *a, const struct hdr *b)
{
    return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype && a->redop == b->redop &&
           a->root == b->root && !a->faulty && !b->faulty;
}

/* Posts msg (len bytes) to every other rank: reqs[r] (MPI_REQUEST_NULL
 * for this rank). 0 or CKH_EPEER_DEAD. */
static int send_all(struct real_coll *c, unsigned char *msg, size_t len, MPI_Request *reqs)
{
    int rc = 0;
    for (int r = 0; r < c->world; r++) {
        reqs[r] = MPI_REQUEST_NULL;
        if (r != c->rank && MPI_Isend(msg, (int)len, MPI_BYTE, r, TAG_COLL, c->comm, &reqs[r]) != MPI_SUCCESS)
            rc = CKH_EPEER_DEAD;
    }
    return rc;
}

/* One pass over the ranks not heard from: each message that arrived for
 * mine's #seq goes into got[r] (older ones are dropped). *missing: ranks
 * still to hear from; *mismatch turns true when one called another
 * collective; *progress when anything arrived. 0, CKH_EPEER_DEAD or
 * CKH_ENOMEM. */
static int receive_round(struct real_coll *c, const struct hdr *mine, unsigned char **got, size_t *gotlen,
                         int *missing, bool *mismatch, bool *progress)
{
    int rc = 0;
    for (int r = 0; r < c->world && rc == 0; r++) {
        int flag = 0;
        MPI_Status st;
        if (r == c->rank || got[r])
            continue;
        if (MPI_Iprobe(r, TAG_COLL, c->comm, &flag, &st) != MPI_SUCCESS) {
            rc = CKH_EPEER_DEAD;
            break;
        }
        if (!flag)
            continue;
        *progress = true;
        unsigned char *buf = NULL;
        size_t n = 0;
        if ((rc = recv_probed(c, r, TAG_COLL, &st, &buf, &n)) != 0)
            break;
        struct hdr h;
        memcpy(&h, buf, n >= sizeof h ? sizeof h : 0);
        if (n < sizeof h || h.magic != HDR_MAGIC || h.seq < mine->seq) {
            free(buf); /* left over from a call that failed */
            continue;
        }
        got[r] = buf;
        gotlen[r] = n;
        (*missing)--;
        CKH_ASSERT(*missing >= 0); /* one message per rank and call */
        if (h.seq != mine->seq || !same_call(&h, mine))
            *mismatch = true;
    }
    return rc;
}

/* Sends mine (with pbytes of payload) to every other rank and receives
 * every other rank's message of the same #seq into got[r] (got[rank]
 * stays NULL; the caller frees the others). Returns 0, CKH_EMISMATCH,
 * CKH_ETIMEOUT, CKH_EPEER_DEAD or CKH_ENOMEM. */
static int exchange(struct real_coll *c, const struct hdr *mine, const void *payload, size_t pbytes,
                    unsigned char **got, size_t *gotlen, uint64_t timeout_ns)
{
    int w = c->world, rc = 0;
    if (pbytes > (size_t)INT_MAX - sizeof *mine)
        return CKH_ELIMIT;
    size_t len = sizeof *mine + pbytes;
    unsigned char *msg = malloc(len);
    MPI_Request *reqs = malloc((size_t)w * sizeof *reqs);
    if (!msg || !reqs) {
        free(msg);
        free(reqs);
        return CKH_ENOMEM;
    }
    memcpy(msg, mine, sizeof *mine);
    if (pbytes)
        memcpy(msg + sizeof *mine, payload, pbytes);
    rc = send_all(c, msg, len, reqs);
    uint64_t deadline = deadline_of(timeout_ns);
    int missing = w - 1;
    bool mismatch = mine->faulty != 0, sent = false;
    unsigned spins = 0;
    while (rc == 0) {
        bool progress = false;
        rc = receive_round(c, mine, got, gotlen, &missing, &mismatch, &progress);
        if (!sent && rc == 0)
            sent = sends_done(reqs, w, &rc);
        if (rc == 0 && missing == 0 && sent && !mismatch)
            break;
        if (rc == 0 && ckh_posix_now_ns() >= deadline)
            rc = mismatch ? CKH_EMISMATCH : CKH_ETIMEOUT;
        if (!progress)
            idle(&spins);
    }
    if (rc != 0) {
        abandon(reqs, w);
        c->failed = true;
    }
    /* done: a message from every other rank, none for this one */
    for (int r = 0; rc == 0 && r < w; r++)
        CKH_ASSERT((got[r] != NULL) == (r != c->rank));
    free(reqs);
    free(msg);
    return rc;
}

/* One collective: the gate, the exchange, the result; see the top. */
struct call {
    struct hdr h;          /* this rank's header */
    const void *send;      /* payload this rank sends (NULL: none) */
    size_t send_bytes;     /* its size */
    void *buf;             /* broadcast, allreduce: in/out; allgather: recv */
    size_t result_bytes;   /* bytes of one rank's contribution to the result */
};

static const unsigned char *payload_of(struct real_coll *c, const struct call *k, unsigned char **got, int r)
{
    return r == c->rank ? k->send : got[r] + sizeof(struct hdr);
}

static int finish(struct real_coll *c, const struct call *k, unsigned char **got, const size_t *gotlen)
{
    size_t b = k->result_bytes;
    for (int r = 0; r < c->world; r++)
        if (r != c->rank && (k->h.kind != CKH_OP_BROADCAST || r == k->h.root) && b &&
            gotlen[r] < sizeof(struct hdr) + b)
            return CKH_EMISMATCH; /* a payload shorter than its header says */
    switch (k->h.kind) {
    case CKH_OP_BROADCAST:
        if (b && c->rank != k->h.root)
            memcpy(k->buf, payload_of(c, k, got, k->h.root), b);
        return 0;
    case CKH_OP_ALLREDUCE: {
        if (!b)
            return 0;
        unsigned char *acc = malloc(b);
        if (!acc)
            return CKH_ENOMEM;
        memcpy(acc, payload_of(c, k, got, 0), b);
        for (int r = 1; r < c->world; r++)
            ckh_coll_reduce(acc, payload_of(c, k, got, r), (size_t)k->h.count, (enum ckh_dtype)k->h.dtype,
                            (enum ckh_redop)k->h.redop);
        memcpy(k->buf, acc, b);
        free(acc);
        return 0;
    }
    case CKH_OP_ALLGATHER:
        for (int r = 0; r < c->world && b; r++)
            memmove((unsigned char *)k->buf + (size_t)r * b, payload_of(c, k, got, r), b);
        return 0;
    default:
        return 0;
    }
}

static int coll_call(struct real_coll *c, struct call *k, uint64_t off, uint64_t len, int64_t arg,
                     uint64_t timeout_ns)
{
    if (atomic_flag_test_and_set(&c->busy))
        return CKH_ESTATE; /* another thread of the rank is inside a call */
    struct ckh_op op = {.kind = (enum ckh_op_kind)k->h.kind, .off = off, .len = len, .arg = arg};
    struct ckh_fault_action act = {0};
    if (c->gate)
        c->gate(c->gate_ctx, &op, &act);
    int rc;
    if (act.kind == CKH_FAULT_ERRNO) {
        rc = -act.err; /* no effect: takes no #seq */
        goto out;
    }
    k->h.magic = HDR_MAGIC;
    k->h.seq = ++c->seq;
    if (act.kind == CKH_FAULT_MISMATCH) {
        /* Join a different collective than the peers; no buffer is touched. */
        k->h.kind = k->h.kind == CKH_OP_BARRIER ? CKH_OP_ALLREDUCE : CKH_OP_BARRIER;
        k->h.count = 0;
        k->h.faulty = 1;
        k->send = NULL;
        k->send_bytes = 0;
    }
    unsigned char **got = calloc((size_t)c->world, sizeof *got);
    size_t *gotlen = calloc((size_t)c->world, sizeof *gotlen);
    if (!got || !gotlen) {
        free(got);
        free(gotlen);
        rc = CKH_ENOMEM;
        goto out;
    }
    rc = exchange(c, &k->h, k->send, k->send_bytes, got, gotlen, timeout_ns);
    if (rc == 0)
        rc = finish(c, k, got, gotlen);
    for (int r = 0; r < c->world; r++)
        free(got[r]);
    free(got);
    free(gotlen);
out:
    atomic_flag_clear(&c->busy);
    if (act.kind == CKH_FAULT_KILL_AFTER)
        ckh_real_faults_kill();
    return rc;
}

/* ---- collectives ---- */

static int c_rank(struct ckh_coll *c)
{
    return RC(c)->rank;
}

static int c_world(struct ckh_coll *c)
{
    return RC(c)->world;
}

static int c_barrier(struct ckh_coll *c, uint64_t timeout_ns)
{
    struct call k = {.h = {.kind = CKH_OP_BARRIER}};
    return coll_call(RC(c), &k, 0, 0, 0, timeout_ns);
}

static int c_broadcast(struct ckh_coll *c, void *buf, size_t size_bytes, int root, uint64_t timeout_ns)
{
    struct real_coll *rc = RC(c);
    if ((buf == NULL && size_bytes > 0) || root < 0 || root >= rc->world)
        return CKH_EINVAL;
    struct call k = {.h = {.kind = CKH_OP_BROADCAST, .count = size_bytes, .root = root},
                     .send = rc->rank == root ? buf : NULL,
                     .send_bytes = rc->rank == root ? size_bytes : 0,
                     .buf = buf,
                     .result_bytes = size_bytes};
    return coll_call(rc, &k, (uint64_t)root, size_bytes, 0, timeout_ns);
}

static int c_allreduce(struct ckh_coll *c, void *buf, size_t count, enum ckh_dtype dt, enum ckh_redop op,
                       uint64_t timeout_ns)
{
    size_t esize = ckh_dtype_size(dt);
    if (esize == 0 || (unsigned)op > CKH_RED_MIN || (buf == NULL && count > 0) || count > SIZE_MAX / 8)
        return CKH_EINVAL;
    struct call k = {.h = {.kind = CKH_OP_ALLREDUCE, .count = count, .dtype = (int32_t)dt, .redop = (int32_t)op},
                     .send = buf,
                     .send_bytes = count * esize,
                     .buf = buf,
                     .result_bytes = count * esize};
    return coll_call(RC(c), &k, 0, count * esize, (int64_t)dt * 16 + (int64_t)op, timeout_ns);
}

static int c_allgather(struct ckh_coll *c, const void *send, void *recv, size_t size_bytes, uint64_t timeout_ns)
{
    if ((send == NULL || recv == NULL) && size_bytes > 0)
        return CKH_EINVAL;
    struct call k = {.h = {.kind = CKH_OP_ALLGATHER, .count = size_bytes},
                     .send = send,
                     .send_bytes = size_bytes,
                     .buf = recv,
                     .result_bytes = size_bytes};
    return coll_call(RC(c), &k, 0, size_bytes, 0, timeout_ns);
}

/* ---- send/recv ---- */

static int p2p_tag(int tag)
{
    return TAG_P2P_BASE + (int)((unsigned)tag & TAG_P2P_MASK);
}

static int p2p_send(struct real_coll *c, const void *buf, size_t size, int peer, int tag, uint64_t timeout_ns)
{
    if (size > (size_t)INT_MAX - sizeof(struct hdr))
        return CKH_ELIMIT;
    struct hdr h = {.magic = HDR_MAGIC, .kind = CKH_OP_SEND, .seq = ++c->p2p_seq, .count = size, .tag = tag};
    unsigned char *msg = malloc(sizeof h + size);
    if (!msg)
        return CKH_ENOMEM;
    memcpy(msg, &h, sizeof h);
    if (size)
        memcpy(msg + sizeof h, buf, size);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = 0, flag = 0;
    if (MPI_Issend(msg, (int)(sizeof h + size), MPI_BYTE, peer, p2p_tag(tag), c->comm, &req) != MPI_SUCCESS)
        rc = CKH_EPEER_DEAD;
    uint64_t deadline = deadline_of(timeout_ns);
    unsigned spins = 0;
    while (rc == 0 && !flag) {
        if (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            rc = CKH_EPEER_DEAD;
        else if (!flag && ckh_posix_now_ns() >= deadline)
            rc = CKH_ETIMEOUT;
        else if (!flag)
            idle(&spins);
    }
    if (rc != 0) {
        abandon(&req, 1);
        c->failed = true;
    }
    free(msg);
    return rc;
}

static int p2p_recv(struct real_coll *c, void *buf, size_t size, int peer, int tag, uint64_t timeout_ns)
{
    uint64_t deadline = deadline_of(timeout_ns);
    unsigned spins = 0;
    int rc = 0;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(peer, p2p_tag(tag), c->comm, &flag, &st) != MPI_SUCCESS) {
            rc = CKH_EPEER_DEAD;
            break;
        }
        if (flag) {
            unsigned char *msg = NULL;
            size_t n = 0;
            if ((rc = recv_probed(c, peer, p2p_tag(tag), &st, &msg, &n)) != 0)
                break;
            struct hdr h;
            memcpy(&h, msg, n >= sizeof h ? sizeof h : 0);
            if (n < sizeof h || h.magic != HDR_MAGIC || h.tag != tag) {
                free(msg); /* another tag sharing the MPI tag would be a collision: never made */
                continue;
            }
            if (h.count != size || n != sizeof h + size)
                rc = CKH_EMISMATCH;
            else if (size)
                memcpy(buf, msg + sizeof h, size);
            free(msg);
            break;
        }
        if (ckh_posix_now_ns() >= deadline) {
            rc = CKH_ETIMEOUT;
            break;
        }
        idle(&spins);
    }
    if (rc != 0)
        c->failed = true;
    return rc;
}

static int p2p_call(struct real_coll *c, bool is_send, const void *sbuf, void *rbuf, size_t size, int peer,
                    int tag, uint64_t timeout_ns)
{
    if ((sbuf == NULL && rbuf == NULL && size > 0) || peer < 0 || peer >= c->world || peer == c->rank)
        return CKH_EINVAL;
    if (atomic_flag_test_and_set(&c->busy))
        return CKH_ESTATE;
    struct ckh_op op = {.kind = is_send ? CKH_OP_SEND : CKH_OP_RECV, .off = (uint64_t)peer, .len = size,
                        .arg = tag};
    struct ckh_fault_action act = {0};
    if (c->gate)
        c->gate(c->gate_ctx, &op, &act);
    int rc = act.kind == CKH_FAULT_ERRNO ? -act.err
             : is_send                   ? p2p_send(c, sbuf, size, peer, tag, timeout_ns)
                                         : p2p_recv(c, rbuf, size, peer, tag, timeout_ns);
    atomic_flag_clear(&c->busy);
    if (act.kind == CKH_FAULT_KILL_AFTER)
        ckh_real_faults_kill();
    return rc;
}

static int c_send(struct ckh_coll *c, const void *buf, size_t size_bytes, int peer, int tag, uint64_t timeout_ns)
{
    return p2p_call(RC(c), true, buf, NULL, size_bytes, peer, tag, timeout_ns);
}

static int c_recv(struct ckh_coll *c, void *buf, size_t size_bytes, int peer, int tag, uint64_t timeout_ns)
{
    return p2p_call(RC(c), false, NULL, buf, size_bytes, peer, tag, timeout_ns);
}

/* ---- the table ---- */

static const struct ckh_coll_ops mpi_coll_ops = {
    .version = 1,
    .rank = c_rank,
    .world_size = c_world,
    .barrier = c_barrier,
    .broadcast = c_broadcast,
    .allreduce = c_allreduce,
    .allgather = c_allgather,
    .send = c_send,
    .recv = c_recv,
};

int ckh_real_coll_create(struct ckh_coll **out)
{
    struct real_coll *c = calloc(1, sizeof *c);
    if (!c)
        return CKH_ENOMEM;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &c->comm) != MPI_SUCCESS) {
        free(c);
        return CKH_EPEER_DEAD;
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->world);
    atomic_flag_clear(&c->busy);
    c->base.ops = &mpi_coll_ops;
    *out = &c->base;
    return 0;
}

void ckh_real_coll_destroy(struct ckh_coll *c)
{
    if (!c)
        return;
    if (!RC(c)->failed)
        MPI_Comm_free(&RC(c)->comm);
    free(c);
}

void ckh_real_coll_set_gate(struct ckh_coll *c, ckh_real_gate_fn fn, void *ctx)
{
    RC(c)->gate = fn;
    RC(c)->gate_ctx = ctx;
}

bool ckh_real_coll_failed(const struct ckh_coll *c)
{
    return c && ((const struct real_coll *)(const void *)c)->failed;
}
