/* Tests for the simulator's scheduler, lifecycle, allocator and fault
 * rules (specification at the top of sim/sched.c and sim/node_env.c). */
#include <check.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/sim.h"
#include "ckh/sim_testing.h"

static bool under_valgrind(void)
{
    return getenv("CKH_VALGRIND") != NULL;
}

static struct ckh_sim *make_sim(uint64_t seed, bool keep)
{
    struct ckh_sim_config cfg = {.seed = seed, .keep_trace = keep, .stack_bytes = 64 * 1024};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    return sim;
}

static int add_node(struct ckh_sim *sim, const char *name, ckh_node_main fn, void *arg, int rank)
{
    struct ckh_node_config nc = {.name = name, .main = fn, .arg = arg, .rank = rank};
    int id = -1;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, &id), 0);
    return id;
}

static struct ckh_sim_result run(struct ckh_sim *sim)
{
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    return res;
}

/* The full trace as text, one line per record (caller frees). */
static char *trace_text(struct ckh_sim *sim)
{
    size_t cap = 4096, used = 0;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    out[0] = '\0';
    for (uint64_t i = 0; i < ckh_sim_trace_len(sim); i++) {
        struct ckh_trace_rec r;
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &r), 0);
        char line[512];
        int w = ckh_trace_format(sim, &r, line, sizeof line);
        ck_assert_int_gt(w, 0);
        while (used + (size_t)w + 2 > cap) {
            cap *= 2;
            out = realloc(out, cap);
            ck_assert_ptr_nonnull(out);
        }
        memcpy(out + used, line, (size_t)w);
        used += (size_t)w;
        out[used++] = '\n';
        out[used] = '\0';
    }
    return out;
}

/* Index of the first record of node/kind (and path, if not NULL), or -1. */
static int64_t find_rec(struct ckh_sim *sim, int node, enum ckh_op_kind kind, const char *path)
{
    for (uint64_t i = 0; i < ckh_sim_trace_len(sim); i++) {
        struct ckh_trace_rec r;
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &r), 0);
        if (r.node == node && r.kind == kind &&
            (path == NULL || (r.path != NULL && strcmp(r.path, path) == 0)))
            return (int64_t)i;
    }
    return -1;
}

/* ---- programs ---- */

/* Logs "step I" and sleeps 100 ns, 10 times: ties between nodes everywhere. */
static int prog_steps(struct ckh_env *env, void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++) {
        ckh_node_logf(env->node, "step %d", i);
        ckh_clock_sleep_ns(env->clock, 100);
    }
    return 7;
}

static uint64_t job_hash(uint64_t seed, char **text)
{
    struct ckh_sim *sim = make_sim(seed, text != NULL);
    char name[16];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "worker_%d", i);
        add_node(sim, name, prog_steps, NULL, -1);
    }
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_uint_eq(res.now_ns, 1000);
    ck_assert_uint_eq(res.trace_hash, ckh_sim_trace_hash(sim));
    for (int i = 0; i < 4; i++) {
        struct ckh_node_status st;
        ck_assert_int_eq(ckh_sim_node_status(sim, i, &st), 0);
        ck_assert_int_eq(st.state, CKH_NODE_EXITED);
        ck_assert_int_eq(st.exit_status, 7);
        ck_assert_uint_eq(st.ops, 20);
    }
    if (text != NULL)
        *text = trace_text(sim);
    uint64_t h = res.trace_hash;
    ckh_sim_destroy(sim);
    return h;
}

START_TEST(same_seed_same_trace)
{
    char *a = NULL, *b = NULL;
    uint64_t ha = job_hash(42 + (uint64_t)_i, &a);
    uint64_t hb = job_hash(42 + (uint64_t)_i, &b);
    ck_assert_uint_eq(ha, hb);
    ck_assert_str_eq(a, b);
    /* keep_trace does not change the hash */
    ck_assert_uint_eq(job_hash(42 + (uint64_t)_i, NULL), ha);
    free(a);
    free(b);
}
END_TEST

START_TEST(seeds_change_interleaving)
{
    uint64_t hashes[50];
    int n = under_valgrind() ? 12 : 50;
    int distinct = 0;
    for (int s = 0; s < n; s++) {
        hashes[s] = job_hash((uint64_t)s, NULL);
        bool seen = false;
        for (int j = 0; j < s; j++)
            seen = seen || hashes[j] == hashes[s];
        distinct += !seen;
    }
    ck_assert_int_ge(distinct, n / 2);
}
END_TEST

static int prog_sleep_hour(struct ckh_env *env, void *arg)
{
    uint64_t *seen = arg;
    seen[0] = ckh_clock_now_ns(env->clock);
    ck_assert_int_eq(ckh_clock_sleep_ns(env->clock, 3600ull * 1000000000ull), 0);
    seen[1] = ckh_clock_now_ns(env->clock);
    return 0;
}

START_TEST(virtual_time_jumps)
{
    struct ckh_sim *sim = make_sim(1, false);
    uint64_t seen[2] = {99, 99};
    add_node(sim, "sleeper", prog_sleep_hour, seen, -1);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_uint_eq(seen[0], 0);
    ck_assert_uint_eq(seen[1], 3600ull * 1000000000ull);
    ck_assert_uint_eq(res.now_ns, 3600ull * 1000000000ull);
    ck_assert_uint_eq(ckh_sim_now_ns(sim), 3600ull * 1000000000ull);
    ckh_sim_destroy(sim);
}
END_TEST

/* Logs "msg 0" .. "msg 9", 10 ns apart. */
static int prog_msgs(struct ckh_env *env, void *arg)
{
    int *reached = arg;
    for (int i = 0; i < 10; i++) {
        ckh_node_logf(env->node, "msg %d", i);
        if (reached != NULL)
            *reached = i;
        ckh_clock_sleep_ns(env->clock, 10);
    }
    return 0;
}

static struct ckh_fault_rule rule_any(void)
{
    struct ckh_fault_rule r = {.node = -1, .kind = -1, .epoch = -1, .step = -1};
    return r;
}

START_TEST(kill_before_nth_op)
{
    struct ckh_sim *sim = make_sim(5, true);
    int reached = -1;
    add_node(sim, "victim", prog_msgs, &reached, -1);
    add_node(sim, "bystander", prog_msgs, NULL, -1);
    struct ckh_fault_rule r = rule_any();
    r.node = 0;
    r.kind = CKH_OP_LOG;
    r.nth = 5;
    r.action.kind = CKH_FAULT_KILL_BEFORE;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(reached, 3); /* "msg 4" never returned */
    int64_t fault = find_rec(sim, 0, CKH_OP_FAULT, "msg 4");
    ck_assert_int_ge(fault, 0);
    ck_assert_int_eq(find_rec(sim, 0, CKH_OP_LOG, "msg 4"), -1);
    ck_assert_int_ge(find_rec(sim, 0, CKH_OP_LOG, "msg 3"), 0);
    struct ckh_trace_rec kr;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)fault + 1, &kr), 0);
    ck_assert_int_eq(kr.kind, CKH_OP_KILL);
    ck_assert_int_eq(kr.node, 0);
    ck_assert_uint_eq(kr.time_ns, 40);
    struct ckh_trace_rec fr;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)fault, &fr), 0);
    ck_assert_str_eq(fr.path2, "log:kill_before");
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_KILLED);
    ck_assert_int_eq(ckh_sim_node_status(sim, 1, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_EXITED);
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(kill_after_op)
{
    struct ckh_sim *sim = make_sim(5, true);
    int reached = -1;
    add_node(sim, "victim", prog_msgs, &reached, -1);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_LOG;
    r.path_glob = "msg [4]";
    r.action.kind = CKH_FAULT_KILL_AFTER;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    run(sim);
    ck_assert_int_eq(reached, 3);
    int64_t op = find_rec(sim, 0, CKH_OP_LOG, "msg 4");
    ck_assert_int_ge(op, 0);
    struct ckh_trace_rec kr;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)op + 1, &kr), 0);
    ck_assert_int_eq(kr.kind, CKH_OP_KILL);
    ck_assert_uint_eq(ckh_sim_trace_len(sim), (uint64_t)op + 2);
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(kill_from_outside_and_restart)
{
    /* stop after 3 ops, kill from the host, restart, finish */
    struct ckh_sim *sim = NULL;
    struct ckh_sim_result res;
    struct ckh_sim_config cfg = {.seed = 9, .op_limit = 3, .keep_trace = true};
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    add_node(sim, "w", prog_msgs, NULL, -1);
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_OP_LIMIT);
    ck_assert_uint_eq(res.ops, 3);
    ck_assert_int_eq(ckh_sim_kill(sim, 0, false), 0);
    ck_assert_int_eq(ckh_sim_kill(sim, 0, false), CKH_ESTATE);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), 0);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), CKH_ESTATE);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_READY);
    ck_assert_uint_eq(st.incarnation, 1);
    for (int i = 0; i < 20 && res.outcome != CKH_SIM_DONE; i++)
        ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_EXITED);
    ck_assert_uint_eq(st.ops, 20);
    ckh_sim_destroy(sim);
}
END_TEST

struct mem_probe {
    struct ckh_sim *sim; /* to query its own status */
    uint64_t start_mem[4]; /* mem_bytes seen at the start of each incarnation */
    int incarnations;      /* starts so far */
};

static int prog_mem(struct ckh_env *env, void *arg)
{
    struct mem_probe *p = arg;
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(p->sim, 0, &st), 0);
    p->start_mem[p->incarnations++] = st.mem_bytes;
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_nonnull(ckh_malloc(env->alloc, 1000));
    void *q = ckh_malloc(env->alloc, 24);
    q = ckh_realloc(env->alloc, q, 500);
    ck_assert_ptr_nonnull(q);
    ckh_clock_sleep_ns(env->clock, 1000); /* the fault kills the first incarnation here */
    ckh_free(env->alloc, q);
    return 0;
}

START_TEST(restart_fresh_memory)
{
    struct ckh_sim *sim = make_sim(3, true);
    struct mem_probe p = {.sim = sim};
    add_node(sim, "m", prog_mem, &p, -1);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_SLEEP;
    r.action.kind = CKH_FAULT_KILL_BEFORE;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    run(sim);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_KILLED);
    ck_assert_uint_eq(st.mem_bytes, 0);
    ck_assert_uint_eq(st.mem_peak_bytes, 3500);
    ck_assert_uint_eq(st.mem_at_end_bytes, 3500);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), 0);
    run(sim);
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_EXITED);
    ck_assert_uint_eq(st.incarnation, 1);
    ck_assert_uint_eq(st.mem_at_end_bytes, 3000); /* the leak of a clean exit */
    ck_assert_uint_eq(st.mem_bytes, 0);
    ck_assert_int_eq(p.incarnations, 2);
    ck_assert_uint_eq(p.start_mem[0], 0);
    ck_assert_uint_eq(p.start_mem[1], 0);
    ckh_sim_destroy(sim);
}
END_TEST

static int prog_oom(struct ckh_env *env, void *arg)
{
    int *fails = arg;
    void *a = ckh_malloc(env->alloc, 3000);
    ck_assert_ptr_nonnull(a);
    void *b = ckh_malloc(env->alloc, 2000);
    if (b == NULL)
        (*fails)++;
    void *c = ckh_realloc(env->alloc, a, 5000);
    if (c == NULL)
        (*fails)++;
    else
        a = c;
    ckh_free(env->alloc, a);
    b = ckh_malloc(env->alloc, 2000);
    ck_assert_ptr_nonnull(b);
    ckh_free(env->alloc, b);
    return 0;
}

START_TEST(oom_at_limit)
{
    struct ckh_sim_config cfg = {.seed = 1, .keep_trace = true, .node_mem_limit_bytes = 4096};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    int fails = 0;
    add_node(sim, "m", prog_oom, &fails, -1);
    run(sim);
    ck_assert_int_eq(fails, 2);
    int64_t i = find_rec(sim, 0, CKH_OP_ALLOC, NULL);
    ck_assert_int_ge(i, 0);
    struct ckh_trace_rec r;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)i, &r), 0);
    ck_assert_int_eq(r.result, -ENOMEM);
    ck_assert_uint_eq(r.len, 2000);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_uint_eq(st.mem_peak_bytes, 3000);
    ck_assert_uint_eq(st.mem_at_end_bytes, 0);
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(oom_by_fault_rule)
{
    struct ckh_sim *sim = make_sim(1, true);
    int fails = 0;
    add_node(sim, "m", prog_oom, &fails, -1);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_ALLOC;
    r.nth = 2;
    r.action.kind = CKH_FAULT_ERRNO;
    r.action.err = ENOMEM;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    run(sim);
    ck_assert_int_eq(fails, 1); /* the second allocation (2000 bytes) */
    ck_assert_int_ge(find_rec(sim, 0, CKH_OP_FAULT, NULL), 0);
    ckh_sim_destroy(sim);
}
END_TEST

/* Counts LOG ops failed by a probability fault. */
static int prob_run(uint64_t seed, uint64_t *hash)
{
    struct ckh_sim *sim = make_sim(seed, true);
    add_node(sim, "a", prog_steps, NULL, -1);
    add_node(sim, "b", prog_steps, NULL, -1);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_LOG;
    r.probability = 0.3;
    r.repeat = true;
    r.action.kind = CKH_FAULT_ERRNO;
    r.action.err = EIO;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res = run(sim);
    int failed = 0;
    for (uint64_t i = 0; i < ckh_sim_trace_len(sim); i++) {
        struct ckh_trace_rec rec;
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &rec), 0);
        if (rec.kind == CKH_OP_LOG && rec.result == -EIO)
            failed++;
    }
    *hash = res.trace_hash;
    ckh_sim_destroy(sim);
    return failed;
}

START_TEST(probability_faults_deterministic)
{
    int counts[10];
    bool differ = false;
    for (int s = 0; s < 10; s++) {
        uint64_t h1, h2;
        counts[s] = prob_run((uint64_t)s, &h1);
        ck_assert_int_eq(prob_run((uint64_t)s, &h2), counts[s]);
        ck_assert_uint_eq(h1, h2);
        ck_assert_int_le(counts[s], 20);
        differ = differ || counts[s] != counts[0];
    }
    ck_assert(differ);
}
END_TEST

static int prog_forever(struct ckh_env *env, void *arg)
{
    (void)arg;
    for (;;)
        ckh_clock_sleep_ns(env->clock, 1000);
    return 0;
}

START_TEST(limits)
{
    struct ckh_sim_config cfg = {.seed = 1, .time_limit_ns = 10500};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    add_node(sim, "f", prog_forever, NULL, -1);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_TIME_LIMIT);
    ck_assert_uint_eq(res.now_ns, 10000);
    ck_assert_uint_eq(res.ops, 11);
    ckh_sim_destroy(sim);

    struct ckh_sim_config cfg2 = {.seed = 1, .op_limit = 25};
    ck_assert_int_eq(ckh_sim_create(&cfg2, &sim), 0);
    add_node(sim, "f", prog_forever, NULL, -1);
    add_node(sim, "g", prog_forever, NULL, -1);
    res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_OP_LIMIT);
    ck_assert_uint_eq(res.ops, 25);
    res = run(sim); /* the limit counts per run */
    ck_assert_int_eq(res.outcome, CKH_SIM_OP_LIMIT);
    ck_assert_uint_eq(res.ops, 50);
    ckh_sim_destroy(sim); /* abandons both coroutines */
}
END_TEST

static int prog_exit(struct ckh_env *env, void *arg)
{
    (void)arg;
    ck_assert_str_eq(ckh_node_name(env->node), "quitter");
    ckh_node_phase(env->node, "save", 2, 17);
    ckh_node_exit(env->node, 3);
    return 99; /* not reached */
}

START_TEST(exit_and_phase)
{
    struct ckh_sim *sim = make_sim(1, true);
    add_node(sim, "quitter", prog_exit, NULL, -1);
    struct ckh_fault_rule r = rule_any();
    r.phase = "save";
    r.epoch = 2;
    r.step = 17;
    r.kind = CKH_OP_PHASE;
    r.action.kind = CKH_FAULT_DELAY;
    r.action.delay_ns = 500;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res = run(sim);
    ck_assert_uint_eq(res.now_ns, 500);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_EXITED);
    ck_assert_int_eq(st.exit_status, 3);
    char *text = trace_text(sim);
    ck_assert_str_eq(text, "t=0 n=0 quitter start off=0 len=0 arg=0 -> 0\n"
                           "t=0 n=0 quitter fault save -> phase:delay off=0 len=500 arg=0 -> 0\n"
                           "t=500 n=0 quitter phase save off=2 len=17 arg=0 -> 0\n"
                           "t=500 n=0 quitter exit off=0 len=0 arg=3 -> 0\n");
    free(text);
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(bad_input)
{
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(NULL, &sim), CKH_EINVAL);
    ck_assert_ptr_null(sim);
    sim = make_sim(1, false);
    struct ckh_node_config nc = {.name = "a", .main = prog_steps, .rank = -1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EEXISTS);
    ck_assert_ptr_nonnull(strstr(ckh_sim_errmsg(sim), "already used"));
    nc.name = NULL;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    nc.name = "b";
    nc.main = NULL;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    nc.main = prog_steps;
    nc.rank = -5;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_add_node(NULL, &nc, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_node_count(sim), 1);
    ck_assert_int_eq(ckh_sim_node_id(sim, "a"), 0);
    ck_assert_int_eq(ckh_sim_node_id(sim, "zz"), CKH_ENOTFOUND);
    ck_assert_ptr_null(ckh_sim_node_name(sim, 5));
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 7, &st), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_kill(sim, -1, false), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), CKH_ESTATE);
    struct ckh_fault_rule r = rule_any();
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), CKH_EINVAL); /* no action */
    r.action.kind = CKH_FAULT_ERRNO;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), CKH_EINVAL); /* no errno */
    r.action.err = EIO;
    r.probability = 2;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), CKH_EINVAL);
    r.probability = 0;
    r.kind = 1000;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_add_fault(NULL, &r), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_run(sim, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_sim_trace_get(sim, 0, &(struct ckh_trace_rec){0}), CKH_ESTATE);
    ckh_sim_destroy(sim);
    ckh_sim_destroy(NULL);
}
END_TEST


/* ---- with a disk ---- */

/* Writes /d/f0 .. /d/f4 (4 KiB each, fsync'd) and then /d/g unsynced. */
static int prog_files(struct ckh_env *env, void *arg)
{
    int *done = arg;
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    ckh_fs_mkdir(env->fs, "/d");
    for (int i = 0; i < 5; i++) {
        char path[32];
        snprintf(path, sizeof path, "/d/f%d", i);
        struct ckh_file *f = NULL;
        ck_assert_int_eq(ckh_fs_open(env->fs, path, CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
        ck_assert_int_eq(ckh_file_pwrite(f, buf, sizeof buf, 0), (int64_t)sizeof buf);
        ck_assert_int_eq(ckh_file_fsync(f), 0);
        ck_assert_int_eq(ckh_file_close(f), 0);
        *done = i;
    }
    return 0;
}

static struct ckh_sim *disk_sim(uint64_t seed, int *done)
{
    struct ckh_sim *sim = make_sim(seed, true);
    struct ckh_simfs_config dc = {.name = "local0", .sector_bytes = 512, .latency_ns = 100};
    struct ckh_simfs *disk = NULL;
    ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, &disk), 0);
    ck_assert_ptr_nonnull(disk);
    struct ckh_simfs_mount m = {.prefix = "/", .disk = disk};
    struct ckh_node_config nc = {.name = "writer", .main = prog_files, .arg = done, .rank = -1,
                                 .mounts = &m, .nmounts = 1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    return sim;
}

START_TEST(kill_at_nth_fs_op)
{
    int done = -1;
    struct ckh_sim *sim = disk_sim(11, &done);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_PWRITE;
    r.path_glob = "/d/f*";
    r.nth = 3;
    r.action.kind = CKH_FAULT_KILL_BEFORE;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(done, 1);
    int64_t fi = find_rec(sim, 0, CKH_OP_FAULT, "/d/f2");
    ck_assert_int_ge(fi, 0);
    ck_assert_int_eq(find_rec(sim, 0, CKH_OP_PWRITE, "/d/f2"), -1);
    ck_assert_int_ge(find_rec(sim, 0, CKH_OP_PWRITE, "/d/f1"), 0);
    struct ckh_trace_rec kr;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)fi + 1, &kr), 0);
    ck_assert_int_eq(kr.kind, CKH_OP_KILL);
    /* the next incarnation runs to the end */
    ck_assert_int_eq(ckh_sim_restart(sim, 0), 0);
    ckh_sim_clear_faults(sim);
    res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(done, 4);
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(crash_and_power_loss)
{
    for (int k = 0; k < 2; k++) {
        int done = -1;
        struct ckh_sim *sim = disk_sim(12, &done);
        struct ckh_fault_rule r = rule_any();
        r.kind = CKH_OP_FSYNC;
        r.nth = 2;
        r.action.kind = k == 0 ? CKH_FAULT_CRASH_BEFORE : CKH_FAULT_POWER_LOSS;
        ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
        struct ckh_sim_result res = run(sim);
        ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
        ck_assert_int_eq(done, 0);
        int64_t ci = find_rec(sim, k == 0 ? 0 : -1, CKH_OP_CRASH, NULL);
        ck_assert_int_ge(ci, 0);
        struct ckh_node_status st;
        ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
        ck_assert_int_eq(st.state, CKH_NODE_KILLED);
        ckh_sim_destroy(sim);
    }
}
END_TEST

START_TEST(fs_trace_deterministic)
{
    uint64_t h[2];
    for (int k = 0; k < 2; k++) {
        int done = -1;
        struct ckh_sim *sim = disk_sim(13, &done);
        h[k] = run(sim).trace_hash;
        ck_assert_int_eq(done, 4);
        ckh_sim_destroy(sim);
    }
    ck_assert_uint_eq(h[0], h[1]);
}
END_TEST

START_TEST(kill_mid_write)
{
    int done = -1;
    struct ckh_sim *sim = disk_sim(14, &done);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_PWRITE;
    r.path_glob = "/d/f1";
    r.keep_fraction = 0.5;
    r.action.kind = CKH_FAULT_KILL_MID;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    run(sim);
    ck_assert_int_eq(done, 0);
    int64_t fi = find_rec(sim, 0, CKH_OP_FAULT, "/d/f1");
    ck_assert_int_ge(fi, 0);
    struct ckh_trace_rec fr;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)fi, &fr), 0);
    ck_assert_str_eq(fr.path2, "pwrite:kill_mid");
    ck_assert_uint_eq(fr.len, 2048);
    ck_assert_int_ge(find_rec(sim, 0, CKH_OP_KILL, NULL), fi);
    ckh_sim_destroy(sim);
}
END_TEST

struct hook_ctx {
    int calls;     /* ops seen */
    int delay_at;  /* which op (1-based) to delay */
};

static void delay_hook(void *ctx, const struct ckh_op *op, struct ckh_fault_action *act)
{
    struct hook_ctx *h = ctx;
    if (op->kind == CKH_OP_LOG && ++h->calls == h->delay_at) {
        act->kind = CKH_FAULT_DELAY;
        act->delay_ns = 1000000;
    }
}

START_TEST(fault_hook)
{
    struct ckh_sim *sim = make_sim(2, true);
    add_node(sim, "w", prog_msgs, NULL, -1);
    struct hook_ctx h = {.delay_at = 3};
    ckh_sim_set_fault_hook(sim, delay_hook, &h);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(h.calls, 10);
    ck_assert_uint_eq(res.now_ns, 100 + 1000000);
    int64_t fi = find_rec(sim, 0, CKH_OP_FAULT, "msg 2");
    ck_assert_int_ge(fi, 0);
    struct ckh_trace_rec fr;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)fi, &fr), 0);
    ck_assert_int_eq((int64_t)fr.off, -1); /* from the hook */
    ck_assert_uint_eq(fr.time_ns, 20);
    ckh_sim_destroy(sim);
}
END_TEST

/* ---- explicit schedules (ckh_sim_set_sched_hook, ckh_sim_yield) ---- */

struct order_log {
    struct ckh_sim *sim;  /* the simulator the nodes yield to */
    int ran[64];          /* node id at each step, in order */
    int n;                /* steps logged */
    int first_runnable[8];/* the runnable list of the hook's first call */
    size_t nfirst;        /* its length (0: not called yet) */
    int calls;            /* hook calls */
};

struct order_node {
    struct order_log *log; /* shared log */
    int id;                /* this node's id */
};

/* Logs its id, then yields; three times. */
static int prog_yield3(struct ckh_env *env, void *arg)
{
    struct order_node *me = arg;
    (void)env;
    for (int i = 0; i < 3; i++) {
        me->log->ran[me->log->n++] = me->id;
        ck_assert_int_eq(ckh_sim_yield(me->log->sim), 0);
    }
    return 0;
}

static void note_call(struct order_log *log, const int *runnable, size_t n)
{
    if (log->calls++ == 0) {
        memcpy(log->first_runnable, runnable, n * sizeof *runnable);
        log->nfirst = n;
    }
}

/* Picks the runnable node with the highest id. */
static int pick_highest(void *ctx, const int *runnable, size_t n)
{
    note_call(ctx, runnable, n);
    return runnable[n - 1];
}

/* Declines: the seeded heap decides. */
static int pick_none(void *ctx, const int *runnable, size_t n)
{
    note_call(ctx, runnable, n);
    return -1;
}

/* Names a node that does not exist: the heap decides. */
static int pick_bad(void *ctx, const int *runnable, size_t n)
{
    note_call(ctx, runnable, n);
    return 99;
}

static void run_order(uint64_t seed, ckh_sched_hook hook, struct order_log *log, uint64_t *hash)
{
    struct ckh_sim *sim = make_sim(seed, false);
    struct order_node nodes[3];
    memset(log, 0, sizeof *log);
    log->sim = sim;
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        nodes[i] = (struct order_node){log, i};
        add_node(sim, name, prog_yield3, &nodes[i], -1);
    }
    if (hook != NULL)
        ckh_sim_set_sched_hook(sim, hook, log);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_uint_eq(res.now_ns, 0);
    *hash = res.trace_hash;
    ckh_sim_destroy(sim);
}

START_TEST(sched_hook_orders_nodes)
{
    struct order_log log;
    uint64_t h;
    run_order(5, pick_highest, &log, &h);
    /* Highest id first, each to its end: yields do not hand over. */
    static const int want[9] = {2, 2, 2, 1, 1, 1, 0, 0, 0};
    ck_assert_int_eq(log.n, 9);
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(log.ran[i], want[i]);
    ck_assert_uint_eq(log.nfirst, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(log.first_runnable[i], i);
    /* A pick at the start, after each of the 9 yields and at each of 3 ends
     * (the last end has nobody left to pick). */
    ck_assert_int_eq(log.calls, 1 + 9 + 2);
}
END_TEST

START_TEST(sched_hook_declining_keeps_seeded_order)
{
    struct order_log plain, declined, bad;
    uint64_t hp, hd, hb;
    run_order(11, NULL, &plain, &hp);
    run_order(11, pick_none, &declined, &hd);
    run_order(11, pick_bad, &bad, &hb);
    ck_assert_int_eq(plain.calls, 0);
    ck_assert_int_gt(declined.calls, 0);
    ck_assert_int_eq(plain.n, 9);
    ck_assert_mem_eq(plain.ran, declined.ran, sizeof plain.ran);
    ck_assert_mem_eq(plain.ran, bad.ran, sizeof plain.ran);
    ck_assert_uint_eq(hp, hd);
    ck_assert_uint_eq(hp, hb);
}
END_TEST

/* Sleeps (node 0: 100 ns, else 10 ns), then logs its id. */
static int prog_sleep_log(struct ckh_env *env, void *arg)
{
    struct order_node *me = arg;
    ckh_clock_sleep_ns(env->clock, me->id == 0 ? 100 : 10);
    me->log->ran[me->log->n++] = me->id;
    return 0;
}

/* Prefers node 0 whenever it is runnable. */
static int pick_zero(void *ctx, const int *runnable, size_t n)
{
    (void)ctx;
    return runnable[0] == 0 ? 0 : runnable[n - 1];
}

START_TEST(sched_hook_time_moves_forward)
{
    struct ckh_sim *sim = make_sim(3, true);
    struct order_log log;
    memset(&log, 0, sizeof log);
    struct order_node nodes[2] = {{&log, 0}, {&log, 1}};
    add_node(sim, "slow", prog_sleep_log, &nodes[0], -1);
    add_node(sim, "fast", prog_sleep_log, &nodes[1], -1);
    ckh_sim_set_sched_hook(sim, pick_zero, NULL);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    /* node 0 is chosen to start and again when its sleep ends (time jumps to
     * 100); node 1 starts only then, at 100, and its own sleep ends at 110. */
    ck_assert_int_eq(log.n, 2);
    ck_assert_int_eq(log.ran[0], 0);
    ck_assert_int_eq(log.ran[1], 1);
    ck_assert_uint_eq(res.now_ns, 110);
    uint64_t prev = 0;
    for (uint64_t i = 0; i < ckh_sim_trace_len(sim); i++) {
        struct ckh_trace_rec r;
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &r), 0);
        ck_assert_uint_ge(r.time_ns, prev);
        prev = r.time_ns;
    }
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(yield_outside_a_node)
{
    struct ckh_sim *sim = make_sim(1, false);
    ck_assert_int_eq(ckh_sim_yield(sim), CKH_ESTATE);
    ck_assert_int_eq(ckh_sim_yield(NULL), CKH_ESTATE);
    ckh_sim_set_sched_hook(NULL, pick_zero, NULL); /* no-op */
    ckh_sim_destroy(sim);
}
END_TEST

/* Runs four stepping nodes until the op limit stops the run (all four
 * still runnable); with brk, breaks the run queue's order first. */
static void heap_job(bool brk)
{
    struct ckh_sim_config cfg = {.seed = 9, .op_limit = 6, .stack_bytes = 64 * 1024};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        add_node(sim, name, prog_steps, NULL, -1);
    }
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_OP_LIMIT);
    if (brk)
        ckh__sim_test_break_heap(sim);
    for (int i = 0; i < 20; i++) /* 80 ops, 6 per run */
        res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ckh_sim_destroy(sim);
}

/* Invariants (top of sim/sched.c): the run queue stays a heap. */
START_TEST(heap_invariant_holds)
{
    heap_job(false);
}
END_TEST

/* A run queue whose first node is due after its child aborts at the next
 * scheduling point. */
START_TEST(heap_invariant_aborts)
{
    heap_job(true);
}
END_TEST

static Suite *sched_suite(void)
{
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, same_seed_same_trace, 0, 3);
    tcase_add_test(tc, seeds_change_interleaving);
    tcase_add_test(tc, virtual_time_jumps);
    tcase_add_test(tc, kill_before_nth_op);
    tcase_add_test(tc, kill_after_op);
    tcase_add_test(tc, kill_from_outside_and_restart);
    tcase_add_test(tc, restart_fresh_memory);
    tcase_add_test(tc, oom_at_limit);
    tcase_add_test(tc, oom_by_fault_rule);
    tcase_add_test(tc, probability_faults_deterministic);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, exit_and_phase);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, kill_at_nth_fs_op);
    tcase_add_test(tc, crash_and_power_loss);
    tcase_add_test(tc, fs_trace_deterministic);
    tcase_add_test(tc, kill_mid_write);
    tcase_add_test(tc, fault_hook);
    tcase_add_test(tc, sched_hook_orders_nodes);
    tcase_add_test(tc, sched_hook_declining_keeps_seeded_order);
    tcase_add_test(tc, sched_hook_time_moves_forward);
    tcase_add_test(tc, yield_outside_a_node);
    tcase_add_test(tc, heap_invariant_holds);
    /* A failed CKH_ASSERT aborts: only where each test runs in its own
     * process (not under valgrind's CK_FORK=no). */
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode == NULL || strcmp(fork_mode, "no") != 0)
        tcase_add_test_raise_signal(tc, heap_invariant_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sched_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
