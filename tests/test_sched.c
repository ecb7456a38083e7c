/* Tests for the simulator's scheduler, lifecycle, allocator and fault
 * rules (specification at the top of sim/sched.c and sim/node_env.c), and
 * of background tasks (sim/task.c). */
#include <check.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/fs.h"
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

/* The rest of the API's refusals: NULL arguments, disks and nodes that
 * cannot be added (the message names what is wrong), more nodes than the
 * first table holds, rules with strings, and a fault hook that returns an
 * action ckh_sim_add_fault would have refused. */
START_TEST(bad_input_more)
{
    struct ckh_sim *sim = NULL;
    struct ckh_sim_config cfg = {.seed = 1};
    ck_assert_int_eq(ckh_sim_create(&cfg, NULL), CKH_EINVAL);
    ck_assert_str_eq(ckh_sim_errmsg(NULL), "no simulator");
    ck_assert(!ckh_sim_host_out_of_memory(NULL));
    ck_assert_int_eq(ckh_sim_node_count(NULL), 0);
    ck_assert_int_eq(ckh_sim_node_id(NULL, "a"), CKH_EINVAL);
    ck_assert_uint_eq(ckh_sim_fault_fired(NULL, 0), 0);
    ck_assert_int_eq(ckh_sim_yield(NULL), CKH_ESTATE);
    ckh_sim_clear_faults(NULL);
    ckh_sim_set_fault_hook(NULL, NULL, NULL);
    ckh_sim_set_sched_hook(NULL, NULL, NULL);

    sim = make_sim(1, false);
    ck_assert_int_eq(ckh_sim_node_id(sim, NULL), CKH_EINVAL);
    struct ckh_simfs *disk = (struct ckh_simfs *)1;
    ck_assert_int_eq(ckh_sim_add_disk(sim, NULL, &disk), CKH_EINVAL);
    ck_assert_ptr_null(disk);
    ck_assert_str_eq(ckh_sim_errmsg(sim), "ckh_sim_add_disk: NULL argument");
    ck_assert_int_eq(ckh_sim_add_disk(NULL, &(struct ckh_simfs_config){.name = "d"}, NULL), CKH_EINVAL);
    /* a disk the disk model refuses: the message names it */
    struct ckh_simfs_config bad = {.name = "odd", .sector_bytes = 3};
    ck_assert_int_lt(ckh_sim_add_disk(sim, &bad, &disk), 0);
    ck_assert_ptr_nonnull(strstr(ckh_sim_errmsg(sim), "ckh_sim_add_disk odd: "));
    struct ckh_simfs_config ok = {.name = "d", .sector_bytes = 512};
    ck_assert_int_eq(ckh_sim_add_disk(sim, &ok, &disk), 0);
    ck_assert_ptr_nonnull(disk);

    /* nodes: an empty name, mounts that are missing or not absolute, a rank taken */
    struct ckh_node_config nc = {.name = "", .main = prog_steps, .rank = -1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    ck_assert_str_eq(ckh_sim_errmsg(sim), "ckh_sim_add_node: node needs a name");
    nc.name = "n";
    nc.nmounts = 1;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    ck_assert_str_eq(ckh_sim_errmsg(sim), "node n: nmounts without mounts");
    struct ckh_simfs_mount m[2] = {{.prefix = "/", .disk = disk}, {.prefix = "rel", .disk = disk}};
    nc.mounts = m;
    nc.nmounts = 2;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    ck_assert_str_eq(ckh_sim_errmsg(sim), "node n: mount 1 needs an absolute prefix and a disk");
    m[1].prefix = NULL;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    m[1].prefix = "/other";
    m[1].disk = NULL;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EINVAL);
    m[1].disk = disk;
    nc.rank = 0;
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    nc.name = "n2";
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), CKH_EEXISTS);
    ck_assert_str_eq(ckh_sim_errmsg(sim), "node n2: rank 0 already held by n");
    /* more than 8 nodes: the tables grow twice, every node keeps its id */
    for (int i = 1; i <= 17; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i);
        nc.name = name;
        nc.rank = i;
        int id = -1;
        ck_assert_int_eq(ckh_sim_add_node(sim, &nc, &id), 0);
        ck_assert_int_eq(id, i);
    }
    ck_assert_int_eq(ckh_sim_node_count(sim), 18);
    ck_assert_str_eq(ckh_sim_node_name(sim, 17), "r17");
    ck_assert_int_eq(ckh_sim_node_id(sim, "r9"), 9);
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, NULL), CKH_EINVAL);

    /* rules with a glob and a phase are copied; allocation rules; clearing */
    struct ckh_fault_rule r = rule_any();
    r.path_glob = "/d/*";
    r.phase = "save";
    r.action.kind = CKH_FAULT_ERRNO;
    r.action.err = ENOSPC;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    r.kind = CKH_OP_ALLOC;
    r.path_glob = NULL;
    r.action.err = ENOMEM;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    ck_assert_uint_eq(ckh_sim_fault_fired(sim, 0), 0);
    ck_assert_uint_eq(ckh_sim_fault_fired(sim, 2), 0);
    ckh_sim_clear_faults(sim);
    ck_assert_uint_eq(ckh_sim_fault_fired(sim, 0), 0);
    ckh_sim_destroy(sim);
}
END_TEST

/* A hook's action that ckh_sim_add_fault would refuse is repaired: ERRNO
 * without an errno fails with EIO; CALL without a function and an unknown
 * kind are no fault at all. */
struct bad_hook {
    int calls;   /* log ops seen */
    int mode;    /* 0 errno 0, 1 call without function, 2 unknown kind */
};

static void bad_action_hook(void *ctx, const struct ckh_op *op, struct ckh_fault_action *act)
{
    struct bad_hook *h = ctx;
    if (op->kind != CKH_OP_OPEN)
        return;
    h->calls++;
    memset(act, 0, sizeof *act);
    act->kind = h->mode == 0 ? CKH_FAULT_ERRNO : h->mode == 1 ? CKH_FAULT_CALL : CKH_FAULT__COUNT + 3;
}

static int prog_open_once(struct ckh_env *env, void *arg)
{
    struct ckh_file *f = NULL;
    int rc = ckh_fs_open(env->fs, "/f", CKH_O_WRONLY | CKH_O_CREAT, &f);
    *(int *)arg = rc;
    if (rc == 0)
        ckh_file_close(f);
    return 0;
}

START_TEST(fault_hook_bad_actions)
{
    for (int mode = 0; mode < 3; mode++) {
        struct ckh_sim *sim = make_sim(3, true);
        struct ckh_simfs_config dc = {.name = "d", .sector_bytes = 512};
        struct ckh_simfs *disk = NULL;
        ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, &disk), 0);
        struct ckh_simfs_mount m = {.prefix = "/", .disk = disk};
        int rc = 12345;
        struct ckh_node_config nc = {.name = "w", .main = prog_open_once, .arg = &rc, .rank = -1,
                                     .mounts = &m, .nmounts = 1};
        ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
        struct bad_hook h = {.mode = mode};
        ckh_sim_set_fault_hook(sim, bad_action_hook, &h);
        struct ckh_sim_result res = run(sim);
        ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
        ck_assert_int_eq(h.calls, 1);
        ck_assert_int_eq(rc, mode == 0 ? -EIO : 0);
        ck_assert_int_eq(find_rec(sim, 0, CKH_OP_FAULT, NULL) >= 0, mode == 0);
        ckh_sim_destroy(sim);
    }
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

/* The simulator's task limit per node (sim/task.c). */
#define TASK_LIMIT 8

/* ---- background tasks (specification at the top of sim/task.c) ---- */

/* Logs "NAME i" and sleeps 100 ns, `rounds` times (rounds < 0: forever). */
struct stepper {
    const char *name; /* logged */
    int rounds;       /* iterations, < 0: forever */
    int done;         /* iterations finished */
    int ret;          /* return value */
};

static int bg_steps(struct ckh_env *env, void *arg)
{
    struct stepper *s = arg;
    for (int i = 0; s->rounds < 0 || i < s->rounds; i++) {
        ckh_node_logf(env->node, "%s %d", s->name, i);
        ckh_clock_sleep_ns(env->clock, 100);
        s->done = i + 1;
    }
    return s->ret;
}

struct spawn_job {
    struct stepper task;  /* the task's program */
    struct stepper main;  /* the main program's own steps */
    int join_rc;          /* what join returned */
    int status;           /* the task's value, through join */
    int main_sleep_ns;    /* > 0: sleep this long instead of stepping, then return */
    bool join;            /* join the task before returning */
};

static int prog_spawn(struct ckh_env *env, void *arg)
{
    struct spawn_job *j = arg;
    struct ckh_task *t = NULL;
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_steps, &j->task, &t), 0);
    ck_assert_ptr_nonnull(t);
    if (j->main_sleep_ns > 0)
        ckh_clock_sleep_ns(env->clock, (uint64_t)j->main_sleep_ns);
    else
        bg_steps(env, &j->main);
    if (j->join)
        j->join_rc = ckh_node_join(env->node, t, &j->status);
    return 5;
}

/* Time of the LOG record whose text is msg, and its task. */
static uint64_t log_time(struct ckh_sim *sim, const char *msg, int *task)
{
    int64_t i = find_rec(sim, 0, CKH_OP_LOG, msg);
    ck_assert_msg(i >= 0, "no log '%s'", msg);
    struct ckh_trace_rec r;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)i, &r), 0);
    if (task != NULL)
        *task = r.task;
    return r.time_ns;
}

START_TEST(task_runs_interleaved)
{
    struct ckh_sim *sim = make_sim(21, true);
    struct spawn_job j = {.task = {"task", 5, 0, 42}, .main = {"main", 5, 0, 0}, .join = true};
    add_node(sim, "n0", prog_spawn, &j, -1);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_int_eq(j.join_rc, 0);
    ck_assert_int_eq(j.status, 42);
    ck_assert_int_eq(j.task.done, 5);
    /* Both programs step together in virtual time: round i of each at
     * 100 * i, the task's records marked with its number. */
    for (int i = 0; i < 5; i++) {
        char m[32], t[32];
        int mt = -1, tt = -1;
        snprintf(m, sizeof m, "main %d", i);
        snprintf(t, sizeof t, "task %d", i);
        ck_assert_uint_eq(log_time(sim, m, &mt), 100u * (unsigned)i);
        ck_assert_uint_eq(log_time(sim, t, &tt), 100u * (unsigned)i);
        ck_assert_int_eq(mt, 0);
        ck_assert_int_eq(tt, 1);
    }
    /* spawn, the task's end and join are in the trace; the text marks the task. */
    int64_t sp = find_rec(sim, 0, CKH_OP_SPAWN, NULL), te = find_rec(sim, 0, CKH_OP_TASK_EXIT, NULL);
    int64_t jn = find_rec(sim, 0, CKH_OP_JOIN, NULL);
    ck_assert(sp >= 0 && te > sp && jn > te);
    struct ckh_trace_rec r;
    char line[256];
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)sp, &r), 0);
    ck_assert_int_eq(r.arg, 1);
    ck_assert_int_eq(r.task, 0);
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)te, &r), 0);
    ck_assert_int_eq(r.arg, 42);
    ck_assert_int_eq(r.task, 1);
    ckh_trace_format(sim, &r, line, sizeof line);
    ck_assert_str_eq(line, "t=500 n=0 n0#1 task_exit off=0 len=0 arg=42 -> 0");
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)find_rec(sim, 0, CKH_OP_LOG, "task 2"), &r), 0);
    ckh_trace_format(sim, &r, line, sizeof line);
    ck_assert_str_eq(line, "t=200 n=0 n0#1 log task 2 off=0 len=0 arg=0 -> 0");
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_EXITED);
    ck_assert_int_eq(st.exit_status, 5);
    /* the ops of both programs are the node's: 2 x 5 x (log + sleep), spawn, join */
    ck_assert_uint_eq(st.ops, 22);
    ckh_sim_destroy(sim);
}
END_TEST

/* A task writes a file and fills memory the main program allocated;
 * after join the main program sees both. */
struct share {
    char *buf;     /* allocated by main through env->alloc */
    char seen[16]; /* what main read back from the file */
};

static int bg_write(struct ckh_env *env, void *arg)
{
    struct share *s = arg;
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(env->fs, "/bg", CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, "hello", 5), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
    memcpy(s->buf, "shared", 7);
    return 0;
}

static int prog_share(struct ckh_env *env, void *arg)
{
    struct share *s = arg;
    s->buf = ckh_malloc(env->alloc, 16);
    ck_assert_ptr_nonnull(s->buf);
    s->buf[0] = '\0';
    struct ckh_task *t = NULL;
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_write, s, &t), 0);
    int status = -1;
    ck_assert_int_eq(ckh_node_join(env->node, t, &status), 0);
    ck_assert_int_eq(status, 0);
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(env->fs, "/bg", CKH_O_RDONLY, &f), 0);
    ck_assert_int_eq(ckh_file_pread(f, s->seen, 5, 0), 5);
    ckh_file_close(f);
    return 0; /* s->buf is left for the incarnation's end to free */
}

static struct ckh_sim *task_disk_sim(uint64_t seed, ckh_node_main prog, void *arg,
                                     struct ckh_simfs **disk)
{
    struct ckh_sim *sim = make_sim(seed, true);
    struct ckh_simfs_config dc = {.name = "d", .sector_bytes = 512, .latency_ns = 100};
    ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, disk), 0);
    struct ckh_simfs_mount m = {.prefix = "/", .disk = *disk};
    struct ckh_node_config nc = {.name = "n0", .main = prog, .arg = arg, .rank = -1,
                                 .mounts = &m, .nmounts = 1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    return sim;
}

START_TEST(task_writes_visible)
{
    struct share s;
    memset(&s, 0, sizeof s);
    struct ckh_simfs *disk = NULL;
    struct ckh_sim *sim = task_disk_sim(22, prog_share, &s, &disk);
    ck_assert_int_eq(run(sim).outcome, CKH_SIM_DONE);
    ck_assert_str_eq(s.seen, "hello");
    int64_t w = find_rec(sim, 0, CKH_OP_WRITE, "/bg");
    struct ckh_trace_rec r;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)w, &r), 0);
    ck_assert_int_eq(r.task, 1);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_uint_eq(st.mem_at_end_bytes, 16); /* main's block, shared with the task */
    ck_assert_uint_eq(st.mem_bytes, 0);        /* freed with the incarnation */
    ckh_sim_destroy(sim);
}
END_TEST

/* A task writes /t/f0, /t/f1, ... (one per 100 ns) while main steps; the
 * node dies at the task's write of /t/f3 (by a kill, a machine crash or a
 * power loss): nothing of either program happens afterwards. */
static int bg_files(struct ckh_env *env, void *arg)
{
    int *done = arg;
    void *keep = ckh_malloc(env->alloc, 100); /* the node's memory, freed with it */
    ck_assert_ptr_nonnull(keep);
    ckh_fs_mkdir(env->fs, "/t");
    for (int i = 0; i < 10; i++) {
        char path[32];
        snprintf(path, sizeof path, "/t/f%d", i);
        struct ckh_file *f = NULL;
        ck_assert_int_eq(ckh_fs_open(env->fs, path, CKH_O_WRONLY | CKH_O_CREAT, &f), 0);
        ck_assert_int_eq(ckh_file_pwrite(f, "x", 1, 0), 1);
        ckh_file_close(f);
        *done = i + 1;
        ckh_clock_sleep_ns(env->clock, 100);
    }
    return 0;
}

struct kill_job {
    int files;            /* files the task finished */
    struct stepper main;  /* main's steps */
};

static int prog_kill_job(struct ckh_env *env, void *arg)
{
    struct kill_job *k = arg;
    struct ckh_task *t = NULL;
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_files, &k->files, &t), 0);
    bg_steps(env, &k->main);
    ckh_node_join(env->node, t, NULL);
    return 0;
}

START_TEST(task_killed_with_node)
{
    static const enum ckh_fault_kind how[] = {CKH_FAULT_KILL_BEFORE, CKH_FAULT_CRASH_BEFORE,
                                              CKH_FAULT_POWER_LOSS};
    struct kill_job k = {.main = {"main", 20, 0, 0}};
    struct ckh_simfs *disk = NULL;
    struct ckh_sim *sim = task_disk_sim(23 + (uint64_t)_i, prog_kill_job, &k, &disk);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_PWRITE;
    r.path_glob = "/t/f3";
    r.action.kind = how[_i];
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    ck_assert_int_eq(run(sim).outcome, CKH_SIM_DONE);
    ck_assert_int_eq(k.files, 3);
    ck_assert_int_lt(k.main.done, 20);
    /* The fault is the task's; after the node's end nothing of it. */
    int64_t fi = find_rec(sim, 0, CKH_OP_FAULT, "/t/f3");
    ck_assert_int_ge(fi, 0);
    struct ckh_trace_rec rec;
    ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)fi, &rec), 0);
    ck_assert_int_eq(rec.task, 1);
    for (uint64_t i = (uint64_t)fi + 1; i < ckh_sim_trace_len(sim); i++) {
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &rec), 0);
        ck_assert_msg(rec.kind == CKH_OP_KILL || rec.kind == CKH_OP_CRASH,
                      "record %llu after the node's end: %s", (unsigned long long)i,
                      ckh_op_name(rec.kind));
    }
    struct ckh_stat sst;
    ck_assert_int_ne(ckh_fs_stat(ckh_simfs_fs(disk), "/t/f4", &sst), 0);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_KILLED);
    ck_assert_uint_eq(st.mem_at_end_bytes, 100); /* the task's block, freed with the node */
    ck_assert_uint_eq(st.mem_bytes, 0);
    /* The next incarnation starts clean and spawns task 1 again. */
    ckh_sim_clear_faults(sim);
    ck_assert_int_eq(ckh_sim_restart(sim, 0), 0);
    k.files = 0;
    k.main.done = 0;
    ck_assert_int_eq(run(sim).outcome, CKH_SIM_DONE);
    ck_assert_int_eq(k.files, 10);
    ck_assert_int_eq(k.main.done, 20);
    ckh_sim_destroy(sim);
}
END_TEST

/* Killed from outside between runs (the op limit stopped the run with
 * both programs runnable): the next run does nothing of them. */
START_TEST(task_killed_between_runs)
{
    struct ckh_sim_config cfg = {.seed = 24, .op_limit = 7, .keep_trace = true,
                                 .stack_bytes = 64 * 1024};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    struct spawn_job j = {.task = {"task", -1, 0, 0}, .main = {"main", 100, 0, 0}, .join = true};
    add_node(sim, "n0", prog_spawn, &j, -1);
    ck_assert_int_eq(run(sim).outcome, CKH_SIM_OP_LIMIT);
    ck_assert_int_gt(j.task.done + j.main.done, 0);
    int task_done = j.task.done, main_done = j.main.done;
    ck_assert_int_eq(ckh_sim_kill(sim, 0, false), 0);
    uint64_t len = ckh_sim_trace_len(sim);
    ck_assert_int_eq(run(sim).outcome, CKH_SIM_DONE);
    ck_assert_uint_eq(ckh_sim_trace_len(sim), len);
    ck_assert_int_eq(j.task.done, task_done);
    ck_assert_int_eq(j.main.done, main_done);
    ckh_sim_destroy(sim);
}
END_TEST

/* main returning ends a task that would run forever (as a process exit
 * ends its threads): the run is DONE, the task stepped while main slept. */
START_TEST(main_return_ends_task)
{
    struct ckh_sim *sim = make_sim(25, true);
    struct spawn_job j = {.task = {"task", -1, 0, 0}, .main_sleep_ns = 350};
    add_node(sim, "n0", prog_spawn, &j, -1);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    ck_assert_uint_eq(res.now_ns, 350);
    ck_assert_int_eq(j.task.done, 3); /* logs at 0, 100, 200, 300; the 4th sleep never ends */
    ck_assert_int_ge(find_rec(sim, 0, CKH_OP_LOG, "task 3"), 0);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.state, CKH_NODE_EXITED);
    ck_assert_int_eq(st.exit_status, 5);
    int64_t ex = find_rec(sim, 0, CKH_OP_EXIT, NULL);
    ck_assert_int_eq(ex + 1, (int64_t)ckh_sim_trace_len(sim)); /* nothing after the exit */
    ck_assert_int_eq(find_rec(sim, 0, CKH_OP_TASK_EXIT, NULL), -1);
    ckh_sim_destroy(sim);
}
END_TEST

/* join: the value of each task, in any order of ending; bad handles; the
 * task limit. */
static int bg_value(struct ckh_env *env, void *arg)
{
    int v = (int)(intptr_t)arg;
    ckh_clock_sleep_ns(env->clock, (uint64_t)(100 - v)); /* later tasks end first */
    return v;
}

static struct ckh_task *other_node_task;
static struct ckh_task *self_task;
static int self_join_rc;

static int bg_join_self(struct ckh_env *env, void *arg)
{
    (void)arg;
    ckh_clock_sleep_ns(env->clock, 10); /* lets spawn hand the handle over */
    self_join_rc = ckh_node_join(env->node, self_task, NULL);
    return 1;
}

static int prog_joins(struct ckh_env *env, void *arg)
{
    int *ok = arg;
    struct ckh_task *t[TASK_LIMIT];
    for (int i = 0; i < TASK_LIMIT; i++)
        ck_assert_int_eq(ckh_node_spawn(env->node, bg_value, (void *)(intptr_t)(10 * i + 1), &t[i]), 0);
    struct ckh_task *extra = (struct ckh_task *)1;
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_value, NULL, &extra), CKH_ELIMIT);
    ck_assert_ptr_null(extra);
    for (int i = 0; i < TASK_LIMIT; i++) {
        int status = -1;
        ck_assert_int_eq(ckh_node_join(env->node, t[i], &status), 0);
        ck_assert_int_eq(status, 10 * i + 1);
    }
    /* joined: invalid now; NULL and foreign handles too */
    ck_assert_int_eq(ckh_node_join(env->node, t[0], NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_node_join(env->node, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_node_join(env->node, (struct ckh_task *)ok, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_node_join(env->node, other_node_task, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_node_spawn(env->node, NULL, NULL, &extra), CKH_EINVAL);
    /* a task cannot join itself */
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_join_self, NULL, &self_task), 0);
    int status = 0;
    ck_assert_int_eq(ckh_node_join(env->node, self_task, &status), 0);
    ck_assert_int_eq(status, 1);
    ck_assert_int_eq(self_join_rc, CKH_EINVAL);
    *ok = 1;
    return 0;
}

static int prog_holder(struct ckh_env *env, void *arg)
{
    (void)arg;
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_value, (void *)(intptr_t)50, &other_node_task), 0);
    ckh_clock_sleep_ns(env->clock, 1000);
    return ckh_node_join(env->node, other_node_task, NULL);
}

START_TEST(join_returns_status)
{
    struct ckh_sim *sim = make_sim(26, true);
    int ok = 0;
    add_node(sim, "holder", prog_holder, NULL, -1);
    add_node(sim, "joiner", prog_joins, &ok, -1);
    ck_assert_int_eq(run(sim).outcome, CKH_SIM_DONE);
    ck_assert_int_eq(ok, 1);
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_int_eq(st.exit_status, 0); /* the holder still joined its own task */
    /* the refused spawn and joins are traced with their errors */
    int64_t i = find_rec(sim, 1, CKH_OP_SPAWN, NULL);
    int refused = 0;
    for (; i >= 0 && (uint64_t)i < ckh_sim_trace_len(sim); i++) {
        struct ckh_trace_rec r;
        ck_assert_int_eq(ckh_sim_trace_get(sim, (uint64_t)i, &r), 0);
        refused += r.node == 1 && (r.kind == CKH_OP_SPAWN || r.kind == CKH_OP_JOIN) && r.result < 0;
    }
    ck_assert_int_eq(refused, 1 + 3 + 1); /* the limit; joined, foreign x2 (NULL never reaches it); self */
    ckh_sim_destroy(sim);
}
END_TEST

/* Same seed, same trace (text and hash); other seeds interleave the
 * programs of two nodes and their tasks differently. */
static int prog_two_tasks(struct ckh_env *env, void *arg)
{
    (void)arg;
    struct stepper a = {"a", 4, 0, 1}, b = {"b", 4, 0, 2}, m = {"m", 4, 0, 0};
    struct ckh_task *ta = NULL, *tb = NULL;
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_steps, &a, &ta), 0);
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_steps, &b, &tb), 0);
    bg_steps(env, &m);
    int sa = 0, sb = 0;
    ck_assert_int_eq(ckh_node_join(env->node, tb, &sb), 0);
    ck_assert_int_eq(ckh_node_join(env->node, ta, &sa), 0);
    return sa * 10 + sb;
}

static uint64_t task_job_hash(uint64_t seed, char **text, ckh_sched_hook hook)
{
    struct ckh_sim *sim = make_sim(seed, text != NULL);
    add_node(sim, "x", prog_two_tasks, NULL, -1);
    add_node(sim, "y", prog_two_tasks, NULL, -1);
    if (hook != NULL)
        ckh_sim_set_sched_hook(sim, hook, NULL);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    for (int i = 0; i < 2; i++) {
        struct ckh_node_status st;
        ck_assert_int_eq(ckh_sim_node_status(sim, i, &st), 0);
        ck_assert_int_eq(st.exit_status, 12);
    }
    if (text != NULL)
        *text = trace_text(sim);
    uint64_t h = res.trace_hash;
    ckh_sim_destroy(sim);
    return h;
}

static int decline(void *ctx, const int *runnable, size_t n)
{
    (void)ctx;
    for (size_t i = 1; i < n; i++)
        ck_assert_int_lt(runnable[i - 1], runnable[i]); /* node ids, ascending, once each */
    return -1;
}

START_TEST(tasks_deterministic)
{
    char *a = NULL, *b = NULL;
    uint64_t ha = task_job_hash(7, &a, NULL), hb = task_job_hash(7, &b, NULL);
    ck_assert_uint_eq(ha, hb);
    ck_assert_str_eq(a, b);
    ck_assert_ptr_nonnull(strstr(a, " x#2 log b 3 "));
    ck_assert_uint_eq(task_job_hash(7, NULL, NULL), ha); /* keep_trace changes nothing */
    ck_assert_uint_eq(task_job_hash(7, NULL, decline), ha); /* nor a hook that declines */
    free(a);
    free(b);
    int distinct = 0, n = under_valgrind() ? 8 : 30;
    uint64_t hs[30];
    for (int s = 0; s < n; s++) {
        hs[s] = task_job_hash((uint64_t)s + 100, NULL, NULL);
        bool seen = false;
        for (int k = 0; k < s; k++)
            seen = seen || hs[k] == hs[s];
        distinct += !seen;
    }
    ck_assert_int_ge(distinct, n / 2);
}
END_TEST

/* A join that can never return is a deadlock; the report names both
 * programs. A collective while another program of the node is in one is
 * refused. */
static int bg_barrier(struct ckh_env *env, void *arg)
{
    (void)arg;
    return ckh_coll_barrier(env->coll, 0); /* rank 1 never comes */
}

static int second_barrier_rc;

static int prog_join_stuck(struct ckh_env *env, void *arg)
{
    (void)arg;
    struct ckh_task *t = NULL;
    ck_assert_int_eq(ckh_node_spawn(env->node, bg_barrier, NULL, &t), 0);
    ckh_clock_sleep_ns(env->clock, 10); /* the task is in its barrier now */
    second_barrier_rc = ckh_coll_barrier(env->coll, 0);
    ckh_node_join(env->node, t, NULL);
    return 0;
}

static int prog_gone(struct ckh_env *env, void *arg)
{
    (void)env;
    (void)arg;
    return 0;
}

START_TEST(join_deadlock_reported)
{
    struct ckh_sim *sim = make_sim(27, true);
    add_node(sim, "a", prog_join_stuck, NULL, 0);
    add_node(sim, "b", prog_gone, NULL, 1);
    struct ckh_sim_result res = run(sim);
    ck_assert_int_eq(res.outcome, CKH_SIM_DEADLOCK);
    ck_assert_int_eq(second_barrier_rc, CKH_ESTATE);
    ck_assert_str_eq(res.report, "node a (rank 0): join a#1; node a#1 (rank 0): barrier #1");
    struct ckh_node_status st;
    ck_assert_int_eq(ckh_sim_node_status(sim, 0, &st), 0);
    ck_assert_str_eq(st.pending, "join a#1");
    ckh_sim_destroy(sim);
}
END_TEST

/* spawn is an op: an ERRNO rule fails it and no task starts. */
static int prog_spawn_fails(struct ckh_env *env, void *arg)
{
    int *rc = arg;
    struct stepper s = {"never", 1, 0, 0};
    struct ckh_task *t = (struct ckh_task *)1;
    *rc = ckh_node_spawn(env->node, bg_steps, &s, &t);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(s.done, 0);
    return 0;
}

START_TEST(spawn_fault)
{
    struct ckh_sim *sim = make_sim(28, true);
    int rc = 0;
    add_node(sim, "n0", prog_spawn_fails, &rc, -1);
    struct ckh_fault_rule r = rule_any();
    r.kind = CKH_OP_SPAWN;
    r.action.kind = CKH_FAULT_ERRNO;
    r.action.err = EAGAIN;
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    ck_assert_int_eq(run(sim).outcome, CKH_SIM_DONE);
    ck_assert_int_eq(rc, -EAGAIN);
    ck_assert_int_eq(find_rec(sim, 0, CKH_OP_LOG, "never 0"), -1);
    ckh_sim_destroy(sim);
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
    tcase_add_test(tc, bad_input_more);
    tcase_add_test(tc, kill_at_nth_fs_op);
    tcase_add_test(tc, crash_and_power_loss);
    tcase_add_test(tc, fs_trace_deterministic);
    tcase_add_test(tc, kill_mid_write);
    tcase_add_test(tc, fault_hook);
    tcase_add_test(tc, fault_hook_bad_actions);
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
    TCase *tt = tcase_create("tasks");
    tcase_add_test(tt, task_runs_interleaved);
    tcase_add_test(tt, task_writes_visible);
    tcase_add_loop_test(tt, task_killed_with_node, 0, 3);
    tcase_add_test(tt, task_killed_between_runs);
    tcase_add_test(tt, main_return_ends_task);
    tcase_add_test(tt, join_returns_status);
    tcase_add_test(tt, tasks_deterministic);
    tcase_add_test(tt, join_deadlock_reported);
    tcase_add_test(tt, spawn_fault);
    suite_add_tcase(s, tt);
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
