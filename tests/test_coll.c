/* Tests for the simulated collectives (specification at the top of
 * sim/coll.c). Node programs record what they saw in a shared struct; the
 * assertions run in the test body after the simulation. */
#include <check.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/sim.h"
#include "ckh/sim_testing.h"

#define MAXW 8

struct job {
    int world;             /* ranks */
    int errors[MAXW];      /* wrong results seen by each rank */
    int rc[MAXW][4];       /* return codes of interesting calls */
    uint64_t t[MAXW];      /* virtual time when a rank finished its call */
    uint64_t seed;         /* for the jitter */
    float fsum[MAXW][5];   /* float all-reduce results */
    int runs[MAXW];        /* incarnations started */
};

static struct ckh_sim *make_sim(uint64_t seed, uint64_t latency)
{
    struct ckh_sim_config cfg = {.seed = seed, .coll_latency_ns = latency, .keep_trace = true,
                                 .stack_bytes = 64 * 1024};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    return sim;
}

static void add_ranks(struct ckh_sim *sim, int world, ckh_node_main fn, struct job *job)
{
    for (int r = 0; r < world; r++) {
        char name[32];
        snprintf(name, sizeof name, "trainer_%d", r);
        struct ckh_node_config nc = {.name = name, .main = fn, .arg = job, .rank = r};
        ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    }
}

static struct ckh_sim_result run(struct ckh_sim *sim)
{
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    return res;
}

/* Value rank r contributes at element i (small, exact in every dtype). */
static int64_t val(int r, size_t i)
{
    return (int64_t)((r * 7 + (int)i * 3) % 11) + 1;
}

#define CHECK_REDUCE(T, DT)                                                    \
    do {                                                                       \
        for (int op = CKH_RED_SUM; op <= CKH_RED_MIN; op++) {                  \
            T buf[6];                                                          \
            for (size_t i = 0; i < 6; i++)                                     \
                buf[i] = (T)val(rank, i);                                      \
            if (ckh_coll_allreduce(env->coll, buf, 6, DT, (enum ckh_redop)op, 0) != 0) \
                job->errors[rank]++;                                           \
            for (size_t i = 0; i < 6; i++) {                                   \
                int64_t want = op == CKH_RED_SUM ? 0 : val(0, i);              \
                for (int q = 0; q < w; q++) {                                  \
                    int64_t v = val(q, i);                                     \
                    if (op == CKH_RED_SUM)                                     \
                        want += v;                                             \
                    else if (op == CKH_RED_MAX)                                \
                        want = v > want ? v : want;                            \
                    else                                                       \
                        want = v < want ? v : want;                            \
                }                                                              \
                if (buf[i] != (T)want)                                         \
                    job->errors[rank]++;                                       \
            }                                                                  \
        }                                                                      \
    } while (0)

static int prog_all(struct ckh_env *env, void *arg)
{
    struct job *job = arg;
    int rank = ckh_coll_rank(env->coll);
    int w = ckh_coll_world_size(env->coll);
    if (w != job->world)
        job->errors[rank]++;
    /* jitter so arrivals interleave differently per seed */
    struct ckh_rng rng;
    ckh_rng_seed(&rng, ckh_rand_stream_seed(env->rand, "jitter"));
    ckh_clock_sleep_ns(env->clock, ckh_rng_below(&rng, 1000));

    CHECK_REDUCE(uint8_t, CKH_DT_U8);
    CHECK_REDUCE(int32_t, CKH_DT_I32);
    CHECK_REDUCE(int64_t, CKH_DT_I64);
    CHECK_REDUCE(uint64_t, CKH_DT_U64);
    CHECK_REDUCE(float, CKH_DT_F32);
    CHECK_REDUCE(double, CKH_DT_F64);

    if (ckh_coll_barrier(env->coll, 0) != 0)
        job->errors[rank]++;

    char b[16];
    memset(b, rank == w - 1 ? 'R' : 'x', sizeof b);
    if (ckh_coll_broadcast(env->coll, b, sizeof b, w - 1, 0) != 0)
        job->errors[rank]++;
    for (size_t i = 0; i < sizeof b; i++)
        if (b[i] != 'R')
            job->errors[rank]++;

    uint32_t mine[2] = {(uint32_t)rank * 10, (uint32_t)rank * 10 + 1};
    uint32_t all[2 * MAXW];
    if (ckh_coll_allgather(env->coll, mine, all, sizeof mine, 0) != 0)
        job->errors[rank]++;
    for (int q = 0; q < w; q++)
        if (all[2 * q] != (uint32_t)q * 10 || all[2 * q + 1] != (uint32_t)q * 10 + 1)
            job->errors[rank]++;

    if (w > 1) {
        /* ring: send to the right, receive from the left; even ranks send first */
        int right = (rank + 1) % w, left = (rank + w - 1) % w;
        int out = 100 + rank, in = -1;
        int rc1, rc2;
        if (rank % 2 == 0) {
            rc1 = ckh_coll_send(env->coll, &out, sizeof out, right, 5, 0);
            rc2 = ckh_coll_recv(env->coll, &in, sizeof in, left, 5, 0);
        } else {
            rc2 = ckh_coll_recv(env->coll, &in, sizeof in, left, 5, 0);
            rc1 = ckh_coll_send(env->coll, &out, sizeof out, right, 5, 0);
        }
        if (rc1 != 0 || rc2 != 0 || in != 100 + left)
            job->errors[rank]++;
    }
    return 0;
}

START_TEST(correctness_all_worlds)
{
    int w = _i;
    for (uint64_t seed = 0; seed < 3; seed++) {
        struct job job = {.world = w};
        struct ckh_sim *sim = make_sim(seed, 50);
        add_ranks(sim, w, prog_all, &job);
        struct ckh_sim_result res = run(sim);
        ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
        for (int r = 0; r < w; r++)
            ck_assert_int_eq(job.errors[r], 0);
        ckh_sim_destroy(sim);
    }
}
END_TEST

static int prog_fsum(struct ckh_env *env, void *arg)
{
    struct job *job = arg;
    int rank = ckh_coll_rank(env->coll);
    struct ckh_rng rng;
    ckh_rng_seed(&rng, ckh_rand_stream_seed(env->rand, "jitter") ^ job->seed);
    ckh_clock_sleep_ns(env->clock, ckh_rng_below(&rng, 5) * 10);
    float v[5];
    for (int i = 0; i < 5; i++)
        v[i] = 1.0f / (float)(rank + 3) + (float)i * 1e7f * (rank % 2 ? -1.0f : 1.0f);
    if (ckh_coll_allreduce(env->coll, v, 5, CKH_DT_F32, CKH_RED_SUM, 0) != 0)
        job->errors[rank]++;
    memcpy(job->fsum[rank], v, sizeof v);
    return 0;
}

START_TEST(float_sum_bit_identical)
{
    const int w = 7;
    float want[5];
    for (int i = 0; i < 5; i++) {
        float acc = 0;
        for (int r = 0; r < w; r++) {
            float v = 1.0f / (float)(r + 3) + (float)i * 1e7f * (r % 2 ? -1.0f : 1.0f);
            acc = r == 0 ? v : acc + v;
        }
        want[i] = acc;
    }
    for (uint64_t seed = 0; seed < 20; seed++) {
        struct job job = {.world = w, .seed = seed};
        struct ckh_sim *sim = make_sim(seed, 10);
        add_ranks(sim, w, prog_fsum, &job);
        run(sim);
        for (int r = 0; r < w; r++)
            ck_assert_mem_eq(job.fsum[r], want, sizeof want);
        ckh_sim_destroy(sim);
    }
}
END_TEST

/* Rank 0 calls a barrier, rank 1 an all-reduce: a mismatch. */
static uint64_t mismatch_timeout;

static int prog_mismatch(struct ckh_env *env, void *arg)
{
    struct job *job = arg;
    int rank = ckh_coll_rank(env->coll);
    float v[4] = {1, 2, 3, 4};
    /* #1 and #2 match */
    ckh_coll_barrier(env->coll, mismatch_timeout);
    ckh_coll_barrier(env->coll, mismatch_timeout);
    if (rank == 0)
        job->rc[rank][0] = ckh_coll_barrier(env->coll, mismatch_timeout);
    else
        job->rc[rank][0] = ckh_coll_allreduce(env->coll, v, 4, CKH_DT_F32, CKH_RED_SUM,
                                              mismatch_timeout);
    job->t[rank] = ckh_clock_now_ns(env->clock);
    return 0;
}

START_TEST(mismatch_deadlock_report)
{
    struct job job = {.world = 2};
    mismatch_timeout = 0;
    struct ckh_sim *sim = make_sim(1, 10);
    add_ranks(sim, 2, prog_mismatch, &job);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DEADLOCK);
    ck_assert_str_eq(res.report, "node trainer_0 (rank 0): barrier #3; "
                                 "node trainer_1 (rank 1): allreduce #3 count=4 f32 sum");
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 1, &st), 0);
    ck_assert_str_eq(st.pending, "allreduce #3 count=4 f32 sum");
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(mismatch_with_timeout)
{
    struct job job = {.world = 2};
    mismatch_timeout = 1000000;
    struct ckh_sim *sim = make_sim(1, 10);
    add_ranks(sim, 2, prog_mismatch, &job);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(job.rc[0][0], CKH_EMISMATCH);
    ck_assert_int_eq(job.rc[1][0], CKH_EMISMATCH);
    ck_assert_uint_eq(job.t[0], 30 + 1000000);
    ck_assert_uint_eq(job.t[1], 30 + 1000000);
    ckh_sim_destroy(sim);
}
END_TEST

/* Three barriers with a timeout; the fault kills rank 1 at its second. */
static int prog_barriers(struct ckh_env *env, void *arg)
{
    struct job *job = arg;
    int rank = ckh_coll_rank(env->coll);
    job->runs[rank]++;
    for (int i = 0; i < 3; i++)
        job->rc[rank][i] = ckh_coll_barrier(env->coll, 5000);
    job->t[rank] = ckh_clock_now_ns(env->clock);
    return 0;
}

START_TEST(dead_peer_times_out)
{
    struct job job = {.world = 3};
    struct ckh_sim *sim = make_sim(2, 10);
    add_ranks(sim, 3, prog_barriers, &job);
    struct ckh_fault_rule r = {.node = 1, .kind = CKH_OP_BARRIER, .nth = 2, .epoch = -1,
                               .step = -1, .action = {.kind = CKH_FAULT_KILL_BEFORE}};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    for (int rank = 0; rank < 3; rank += 2) {
        ck_assert_int_eq(job.rc[rank][0], 0);
        ck_assert_int_eq(job.rc[rank][1], CKH_EPEER_DEAD);
        /* the third barrier can never complete either */
        ck_assert_int_eq(job.rc[rank][2], CKH_EPEER_DEAD);
        ck_assert_uint_eq(job.t[rank], 20 + 5000 + 10 + 5000);
    }
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 1, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_KILLED);
    ckh_sim_destroy(sim);
}
END_TEST

/* Barrier without timeout; rank 1 is killed at its first. */
static int prog_gen(struct ckh_env *env, void *arg)
{
    struct job *job = arg;
    int rank = ckh_coll_rank(env->coll);
    job->runs[rank]++;
    int v = rank + 1;
    job->rc[rank][0] = ckh_coll_allreduce(env->coll, &v, 1, CKH_DT_I32, CKH_RED_SUM, 0);
    job->rc[rank][1] = v;
    return 0;
}

START_TEST(restart_generations)
{
    struct job job = {.world = 2};
    struct ckh_sim *sim = make_sim(3, 10);
    add_ranks(sim, 2, prog_gen, &job);
    struct ckh_fault_rule r = {.node = 1, .kind = CKH_OP_ALLREDUCE, .epoch = -1, .step = -1,
                               .action = {.kind = CKH_FAULT_KILL_BEFORE}};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DEADLOCK);
    ck_assert_str_eq(res.report, "node trainer_0 (rank 0): allreduce #1 count=1 i32 sum");

    /* Rank 1 restarts into a new generation: it must not meet rank 0's
     * stale arrival from the old one. */
    ck_assert_int_eq(ckh_sim_restart(sim, 1), 0);
    res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DEADLOCK);
    ck_assert_str_eq(res.report, "node trainer_0 (rank 0): allreduce #1 count=1 i32 sum; "
                                 "node trainer_1 (rank 1): allreduce #1 count=1 i32 sum");

    /* Rank 0 restarts too and joins rank 1's generation. */
    ck_assert_int_eq(ckh_sim_kill(sim, 0, false), 0);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), 0);
    res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(job.runs[0], 2);
    ck_assert_int_eq(job.runs[1], 2);
    ck_assert_int_eq(job.rc[0][0], 0);
    ck_assert_int_eq(job.rc[1][0], 0);
    ck_assert_int_eq(job.rc[0][1], 3);
    ck_assert_int_eq(job.rc[1][1], 3);

    /* Both stop, both restart: a fresh generation works again. */
    ckh_sim_clear_faults(sim);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), 0);
    ck_assert_int_eq(ckh_sim_restart(sim, 1), 0);
    res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(job.rc[0][1], 3);
    ckh_sim_destroy(sim);
}
END_TEST

static int prog_p2p(struct ckh_env *env, void *arg)
{
    struct job *job = arg;
    int rank = ckh_coll_rank(env->coll);
    if (rank == 0) {
        int a = 1, b = 2;
        job->rc[0][0] = ckh_coll_send(env->coll, &a, sizeof a, 1, 7, 0);
        job->rc[0][1] = ckh_coll_send(env->coll, &b, sizeof b, 1, 7, 0);
        job->rc[0][2] = ckh_coll_send(env->coll, &b, sizeof b, 1, 8, 0); /* size mismatch */
        job->rc[0][3] = ckh_coll_recv(env->coll, &a, sizeof a, 1, 9, 3000); /* peer exits */
    } else {
        int x = 0, y = 0;
        long long z = 0;
        ckh_clock_sleep_ns(env->clock, 500);
        job->rc[1][0] = ckh_coll_recv(env->coll, &x, sizeof x, 0, 7, 0);
        job->rc[1][1] = ckh_coll_recv(env->coll, &y, sizeof y, 0, 7, 0);
        job->rc[1][2] = ckh_coll_recv(env->coll, &z, sizeof z, 0, 8, 0);
        job->rc[1][3] = x * 10 + y;
        job->t[1] = ckh_coll_send(env->coll, &x, sizeof x, 1, 0, 0); /* self: invalid */
    }
    return 0;
}

START_TEST(send_recv)
{
    struct job job = {.world = 2};
    struct ckh_sim *sim = make_sim(4, 10);
    add_ranks(sim, 2, prog_p2p, &job);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(job.rc[0][0], 0);
    ck_assert_int_eq(job.rc[0][1], 0);
    ck_assert_int_eq(job.rc[1][0], 0);
    ck_assert_int_eq(job.rc[1][1], 0);
    ck_assert_int_eq(job.rc[1][3], 12);
    ck_assert_int_eq(job.rc[0][2], CKH_EMISMATCH);
    ck_assert_int_eq(job.rc[1][2], CKH_EMISMATCH);
    ck_assert_int_eq(job.rc[0][3], CKH_EPEER_DEAD);
    ck_assert_int_eq((int)job.t[1], CKH_EINVAL);
    ckh_sim_destroy(sim);
}
END_TEST

/* The simulator's collectives check their own arguments: a caller may use
 * the ops table (include/ckh/env.h) without the wrappers' checks. Each bad
 * call fails with CKH_EINVAL and a message naming the node and the call,
 * and the job goes on: the good call after it still meets its peer. */
static int prog_bad_args(struct ckh_env *env, void *arg)
{
    struct job *job = arg;
    const struct ckh_coll_ops *ops = env->coll->ops;
    struct ckh_coll *c = env->coll;
    int rank = ckh_coll_rank(c), x = rank + 1, errs = 0;
    int64_t v[2] = {1, 2};
    errs += ops->broadcast(c, NULL, 4, 0, 0) == CKH_EINVAL;
    errs += ops->broadcast(c, &x, sizeof x, -1, 0) == CKH_EINVAL;
    errs += ops->broadcast(c, &x, sizeof x, 2, 0) == CKH_EINVAL;
    errs += ops->allreduce(c, v, 2, (enum ckh_dtype)77, CKH_RED_SUM, 0) == CKH_EINVAL;
    errs += ops->allreduce(c, v, 2, CKH_DT_I64, (enum ckh_redop)(CKH_RED_MIN + 1), 0) == CKH_EINVAL;
    errs += ops->allreduce(c, NULL, 2, CKH_DT_I64, CKH_RED_SUM, 0) == CKH_EINVAL;
    errs += ops->allreduce(c, v, SIZE_MAX / 4, CKH_DT_I64, CKH_RED_SUM, 0) == CKH_EINVAL;
    errs += ops->allgather(c, NULL, v, 8, 0) == CKH_EINVAL;
    errs += ops->allgather(c, v, NULL, 8, 0) == CKH_EINVAL;
    errs += ops->send(c, NULL, 4, 1 - rank, 0, 0) == CKH_EINVAL;
    errs += ops->send(c, &x, sizeof x, 2, 0, 0) == CKH_EINVAL;
    errs += ops->recv(c, &x, sizeof x, -1, 0, 0) == CKH_EINVAL;
    errs += ops->recv(c, &x, sizeof x, rank, 0, 0) == CKH_EINVAL;
    job->errors[rank] = errs;
    /* zero bytes need no buffer; then a real exchange still works */
    job->rc[rank][0] = ops->broadcast(c, NULL, 0, 0, 0);
    job->rc[rank][1] = ops->allgather(c, NULL, NULL, 0, 0);
    job->rc[rank][2] = ops->allreduce(c, v, 2, CKH_DT_I64, CKH_RED_MAX, 0);
    job->fsum[rank][0] = (float)v[1];
    if (rank == 0)
        job->rc[0][3] = ops->send(c, &x, sizeof x, 1, 5, 0);
    else
        job->rc[1][3] = ops->recv(c, &x, sizeof x, 0, 5, 0);
    job->t[rank] = (uint64_t)x;
    return 0;
}

START_TEST(bad_arguments_through_the_ops_table)
{
    struct job job = {.world = 2};
    struct ckh_sim *sim = make_sim(2, 10);
    add_ranks(sim, 2, prog_bad_args, &job);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(job.errors[r], 13);
        for (int k = 0; k < 4; k++)
            ck_assert_msg(job.rc[r][k] == 0, "rank %d call %d: %d", r, k, job.rc[r][k]);
        ck_assert_float_eq(job.fsum[r][0], 2.0f);
    }
    ck_assert_uint_eq(job.t[1], 1); /* rank 1 received rank 0's value */
    ckh_sim_destroy(sim);
}
END_TEST

static int prog_noop(struct ckh_env *env, void *arg)
{
    (void)env;
    (void)arg;
    return 0;
}

/* ---- the device-memory wrappers (include/ckh/env.h) ---- */

/* A device layer over host memory that remembers its last call. */
struct toy_gpu {
    struct ckh_gpu base;
    int calls, last_dev;
    uint64_t last_bytes;
};

static int toy_alloc(struct ckh_gpu *g, int dev, uint64_t bytes, void **dptr)
{
    struct toy_gpu *t = (struct toy_gpu *)g;
    t->calls++;
    t->last_dev = dev;
    t->last_bytes = bytes;
    if (bytes > 1024)
        return CKH_EOOM_DEVICE;
    *dptr = malloc(bytes ? bytes : 1);
    return *dptr ? 0 : CKH_ENOMEM;
}

static void toy_free(struct ckh_gpu *g, void *dptr)
{
    ((struct toy_gpu *)g)->calls++;
    free(dptr);
}

static int toy_copy(struct ckh_gpu *g, void *dst, const void *src, uint64_t bytes, enum ckh_gpu_copy dir)
{
    ((struct toy_gpu *)g)->calls++;
    (void)dir;
    memcpy(dst, src, bytes);
    return 0;
}

static void toy_mem(struct ckh_gpu *g, int dev, uint64_t *used, uint64_t *capacity)
{
    (void)g;
    *used = (uint64_t)dev;
    *capacity = 1024;
}

START_TEST(gpu_wrappers)
{
    static const struct ckh_gpu_ops ops = {.version = 1, .alloc = toy_alloc, .free = toy_free,
                                           .copy = toy_copy, .mem = toy_mem};
    struct toy_gpu toy = {.base = {.ops = &ops}};
    struct ckh_gpu *g = &toy.base;
    void *d = (void *)1;
    /* No device layer (the simulator): every call says so, nothing moves. */
    ck_assert_int_eq(ckh_gpu_alloc(NULL, 0, 8, &d), CKH_EUNSUPPORTED);
    ck_assert_ptr_null(d);
    uint64_t used = 7, cap = 7;
    ckh_gpu_mem(NULL, 0, &used, &cap);
    ck_assert(used == 0 && cap == 0);
    ckh_gpu_free(NULL, &used); /* does nothing */
    ck_assert_int_eq(ckh_gpu_allreduce(NULL, &used, 1, CKH_DT_U64, CKH_RED_SUM, 0), CKH_EUNSUPPORTED);
    /* Arguments are checked before the method. */
    ck_assert_int_eq(ckh_gpu_alloc(g, -1, 8, &d), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_alloc(g, 0, 8, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_copy(g, NULL, &used, 8, CKH_GPU_TO_DEVICE), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_copy(g, &cap, &used, 8, (enum ckh_gpu_copy)9), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_allreduce(g, NULL, 4, CKH_DT_F32, CKH_RED_SUM, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_gpu_limit(g, -2, 8), CKH_EINVAL);
    ck_assert_int_eq(toy.calls, 0);
    /* Methods the layer lacks. */
    ck_assert_int_eq(ckh_gpu_limit(g, 0, 8), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_gpu_prepare(g, 8), CKH_EUNSUPPORTED);
    ck_assert_int_eq(ckh_gpu_allreduce(g, &used, 1, CKH_DT_U64, CKH_RED_SUM, 0), CKH_EUNSUPPORTED);
    /* Through to the method: alloc, copies both ways, out of memory, free. */
    ck_assert_int_eq(ckh_gpu_alloc(g, 3, 16, &d), 0);
    ck_assert(toy.last_dev == 3 && toy.last_bytes == 16);
    uint64_t in[2] = {11, 22}, out[2] = {0, 0};
    ck_assert_int_eq(ckh_gpu_copy(g, d, in, sizeof in, CKH_GPU_TO_DEVICE), 0);
    ck_assert_int_eq(ckh_gpu_copy(g, out, d, sizeof out, CKH_GPU_TO_HOST), 0);
    ck_assert(out[0] == 11 && out[1] == 22);
    int calls = toy.calls;
    ck_assert_int_eq(ckh_gpu_copy(g, out, d, 0, CKH_GPU_TO_HOST), 0); /* nothing to move: no call */
    ck_assert_int_eq(toy.calls, calls);
    void *big = (void *)1;
    ck_assert_int_eq(ckh_gpu_alloc(g, 0, 4096, &big), CKH_EOOM_DEVICE);
    ck_assert_ptr_null(big);
    ckh_gpu_mem(g, 5, &used, &cap);
    ck_assert(used == 5 && cap == 1024);
    int before = toy.calls;
    ckh_gpu_free(g, d);
    ckh_gpu_free(g, NULL); /* nothing */
    ck_assert_int_eq(toy.calls, before + 1);
}
END_TEST

START_TEST(bad_ranks)
{
    struct ckh_sim *sim = make_sim(1, 0);
    struct ckh_node_config nc = {.name = "a", .main = prog_noop, .rank = 1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(ckh_sim_errmsg(sim), "ranks must be 0..0"));
    nc.name = "b";
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EEXISTS);
    nc.rank = 0;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ckh_sim_destroy(sim);
}
END_TEST

/* The simulator of the generation tests (their nodes reach it here). */
static struct ckh_sim *gen_sim;

/* Rank 1 arrives last at a barrier; with arg != NULL it first moves rank
 * 0 (node 0, waiting at the barrier) into another generation. */
static int prog_barrier_last(struct ckh_env *env, void *arg)
{
    int r = ckh_coll_rank(env->coll);
    if (r == 1) {
        ckh_clock_sleep_ns(env->clock, 1000);
        if (arg != NULL)
            ckh__sim_test_set_coll_gen(gen_sim, 0, 5);
    }
    return ckh_coll_barrier(env->coll, 0);
}

static void barrier_job(void *arg)
{
    gen_sim = make_sim(1, 0);
    for (int r = 0; r < 2; r++) {
        char name[16];
        snprintf(name, sizeof name, "rank_%d", r);
        struct ckh_node_config nc = {.name = name, .main = prog_barrier_last, .arg = arg, .rank = r};
        ck_assert_int_eq(ckh_sim_add_node(gen_sim, &nc, NULL), 0);
    }
    struct ckh_sim_result res = run(gen_sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    for (int r = 0; r < 2; r++) {
        struct ckh_node_status st;
        ck_assert_int_eq(ckh_sim_node_status(gen_sim, r, &st), 0);
        ck_assert_int_eq(st.exit_status, 0);
    }
    ckh_sim_destroy(gen_sim);
}

/* Invariants (top of sim/coll.c): a collective completes only among
 * members of one generation. */
START_TEST(generation_invariant_holds)
{
    barrier_job(NULL);
}
END_TEST

/* A rank moved into another generation while it waits makes the barrier
 * complete out of generation: CKH_ASSERT aborts. */
START_TEST(generation_invariant_aborts)
{
    static int moved;
    barrier_job(&moved);
}
END_TEST

static Suite *coll_suite(void)
{
    Suite *s = suite_create("coll");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, correctness_all_worlds, 1, MAXW + 1);
    tcase_add_test(tc, float_sum_bit_identical);
    tcase_add_test(tc, mismatch_deadlock_report);
    tcase_add_test(tc, mismatch_with_timeout);
    tcase_add_test(tc, dead_peer_times_out);
    tcase_add_test(tc, restart_generations);
    tcase_add_test(tc, send_recv);
    tcase_add_test(tc, bad_ranks);
    tcase_add_test(tc, bad_arguments_through_the_ops_table);
    tcase_add_test(tc, gpu_wrappers);
    tcase_add_test(tc, generation_invariant_holds);
    /* A failed CKH_ASSERT aborts: only where each test runs in its own
     * process (not under valgrind's CK_FORK=no). */
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode == NULL || strcmp(fork_mode, "no") != 0)
        tcase_add_test_raise_signal(tc, generation_invariant_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(coll_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
