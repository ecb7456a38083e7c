/* Tests for the simulator's trace: the text form and the hash (both
 * specified at the top of sim/trace.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/sim.h"

/* Pinned: the hash of the small trace made by small_job(). A change means
 * the trace encoding (or the run's behaviour) changed: every recorded
 * replay hash becomes invalid, so change it only on purpose. */
#define SMALL_JOB_HASH 0xfacb0d5c2219cc72ull

static int prog_small(struct ckh_env *env, void *arg)
{
    (void)arg;
    ckh_node_logf(env->node, "hello world");
    ckh_clock_sleep_ns(env->clock, 1200);
    ckh_node_phase(env->node, "epoch", 1, -1);
    ckh_node_logf(env->node, "a\nb\\c");
    return 0;
}

static struct ckh_sim *small_job(bool keep)
{
    struct ckh_sim_config cfg = {.seed = 7, .keep_trace = keep, .stack_bytes = 64 * 1024};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    struct ckh_node_config nc = {.name = "trainer_0", .main = prog_small, .rank = -1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    struct ckh_fault_rule r = {.node = -1, .kind = CKH_OP_SLEEP, .epoch = -1, .step = -1,
                               .action = {.kind = CKH_FAULT_ERRNO, .err = EIO}};
    ck_assert_int_eq(ckh_sim_add_fault(sim, &r), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    return sim;
}

static const char *const small_lines[] = {
    "t=0 n=0 trainer_0 start off=0 len=0 arg=0 -> 0",
    "t=0 n=0 trainer_0 log hello world off=0 len=0 arg=0 -> 0",
    "t=1200 n=0 trainer_0 fault -> sleep:errno off=0 len=0 arg=5 -> 0",
    "t=1200 n=0 trainer_0 sleep off=0 len=0 arg=1200 -> -5 (EIO)",
    "t=1200 n=0 trainer_0 phase epoch off=1 len=-1 arg=0 -> 0",
    "t=1200 n=0 trainer_0 log a\\x0ab\\x5cc off=0 len=0 arg=0 -> 0",
    "t=1200 n=0 trainer_0 exit off=0 len=0 arg=0 -> 0",
};

START_TEST(format_is_stable)
{
    struct ckh_sim *sim = small_job(true);
    size_t n = sizeof small_lines / sizeof small_lines[0];
    ck_assert_uint_eq(ckh_sim_trace_len(sim), n);
    for (size_t i = 0; i < n; i++) {
        struct ckh_trace_rec r;
        ck_assert_int_eq(ckh_sim_trace_get(sim, i, &r), 0);
        ck_assert_uint_eq(r.seq, i);
        char line[256];
        int w = ckh_trace_format(sim, &r, line, sizeof line);
        ck_assert_str_eq(line, small_lines[i]);
        ck_assert_int_eq(w, (int)strlen(small_lines[i]));
        /* a short buffer: truncated, NUL-terminated, full length returned */
        char tiny[8];
        ck_assert_int_eq(ckh_trace_format(sim, &r, tiny, sizeof tiny), w);
        ck_assert_uint_eq(strlen(tiny), 7);
        ck_assert_int_eq(strncmp(tiny, small_lines[i], 7), 0);
    }
    struct ckh_trace_rec r;
    ck_assert_int_eq(ckh_sim_trace_get(sim, n, &r), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_trace_format(sim, NULL, NULL, 0), CKH_EINVAL);
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(hash_is_pinned)
{
    struct ckh_sim *sim = small_job(true);
    uint64_t h = ckh_sim_trace_hash(sim);
    if (h != SMALL_JOB_HASH)
        fprintf(stderr, "small job trace hash: 0x%016llxull\n", (unsigned long long)h);
    ck_assert_uint_eq(h, SMALL_JOB_HASH);
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(hash_without_keeping)
{
    struct ckh_sim *kept = small_job(true);
    struct ckh_sim *bare = small_job(false);
    ck_assert_uint_eq(ckh_sim_trace_hash(bare), ckh_sim_trace_hash(kept));
    ck_assert_uint_eq(ckh_sim_trace_len(bare), ckh_sim_trace_len(kept));
    ck_assert_uint_ne(ckh_sim_trace_hash(bare), CKH_HASH_INIT);
    struct ckh_trace_rec r;
    ck_assert_int_eq(ckh_sim_trace_get(bare, 0, &r), CKH_ESTATE);
    ck_assert_ptr_nonnull(strstr(ckh_sim_errmsg(bare), "keep_trace"));
    ckh_sim_destroy(kept);
    ckh_sim_destroy(bare);
}
END_TEST

START_TEST(hash_sees_every_field)
{
    /* One record differing in any field changes the hash. */
    struct ckh_sim *sim = small_job(true);
    uint64_t base = ckh_sim_trace_hash(sim);
    ckh_sim_destroy(sim);

    struct ckh_sim_config cfg = {.seed = 8, .keep_trace = false};
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    struct ckh_node_config nc = {.name = "trainer_0", .main = prog_small, .rank = -1};
    ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_uint_ne(res.trace_hash, base); /* no fault: the sleep succeeds */
    ckh_sim_destroy(sim);
}
END_TEST

START_TEST(environment_records)
{
    struct ckh_sim_config cfg = {.seed = 1, .keep_trace = true};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    ck_assert_int_eq(ckh_sim_power_loss(sim), 0);
    ck_assert_uint_eq(ckh_sim_trace_len(sim), 1);
    struct ckh_trace_rec r;
    ck_assert_int_eq(ckh_sim_trace_get(sim, 0, &r), 0);
    char line[128];
    ckh_trace_format(sim, &r, line, sizeof line);
    ck_assert_str_eq(line, "t=0 n=-1 env crash off=0 len=0 arg=2 -> 0");
    ckh_sim_destroy(sim);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, format_is_stable);
    tcase_add_test(tc, hash_is_pinned);
    tcase_add_test(tc, hash_without_keeping);
    tcase_add_test(tc, hash_sees_every_field);
    tcase_add_test(tc, environment_records);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
