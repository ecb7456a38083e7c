/* The real platform against the simulator (docs/REAL.md, real/real_coll.h):
 *
 *   - collectives: the conformance script (ckh_real_coll_check) under
 *     `mpirun -np 2` and `-np 4` with Open MPI and with MPICH gives the
 *     same bytes as in the simulator, float sums whose value depends on
 *     the fold's order included; a barrier the last rank never joins
 *     fails with CKH_ETIMEOUT on the others (the simulator says
 *     CKH_EPEER_DEAD there: the last rank has exited, which a real rank
 *     cannot tell from a slow one);
 *   - workloads: the uninterrupted seed-pipeline, param-server and
 *     ddp-train (2 and 4 ranks) run as real processes end with the
 *     simulator's records (totals, epochs, blobs, digests, every step);
 *   - faults: a rank killed mid-epoch and a parameter server killed mid
 *     save, on the real platform, pass with the simulator's reference.
 *
 * Skips (exit 77, a message on stderr) only when no MPI was built and
 * installed; both are on this project's machines and on CI. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/sim.h"
#include "real_coll.h"
#include "run/platform_real.h"
#include "run/run_ctx.h"
#include "search/fuzz.h"

#define TIMEOUT_NS 500000000ull

static const char *const mpis[] = {"openmpi", "mpich"};
static bool have[2];

/* ---- collectives ---- */

struct sim_out {
    unsigned char *buf[8]; /* each rank's serialised results */
    size_t len[8];
};

static int sim_rank(struct ckh_env *env, void *arg)
{
    struct sim_out *o = arg;
    int r = ckh_coll_rank(env->coll);
    return ckh_real_coll_check(env->coll, true, TIMEOUT_NS, &o->buf[r], &o->len[r]);
}

static void run_sim(int world, struct sim_out *o)
{
    struct ckh_sim_config cfg = {.seed = 1, .coll_latency_ns = 20000, .stack_bytes = 256 * 1024};
    struct ckh_sim *sim = NULL;
    ck_assert_int_eq(ckh_sim_create(&cfg, &sim), 0);
    for (int r = 0; r < world; r++) {
        char name[32];
        snprintf(name, sizeof name, "rank_%d", r);
        struct ckh_node_config nc = {.name = name, .main = sim_rank, .arg = o, .rank = r};
        ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
    }
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ckh_sim_destroy(sim);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    unsigned char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

/* The last record's return code and where it starts. */
static size_t last_record(const unsigned char *b, size_t n, int32_t *rc)
{
    size_t at = 0, last = 0;
    while (at + 8 <= n) {
        uint32_t len;
        memcpy(&len, b + at + 4, 4);
        last = at;
        at += 8 + len;
    }
    memcpy(rc, b + last, 4);
    return last;
}

static void check_coll(int mi, int world)
{
    if (!have[mi])
        return;
    char exe[1024], launcher[1024], err[512], out[256], cmd[2400];
    ck_assert_int_eq(ckh__real_find_mpi(mpis[mi], exe, sizeof exe, launcher, sizeof launcher, err, sizeof err), 0);
    char *slash = strrchr(exe, '/');
    snprintf(slash + 1, sizeof exe - (size_t)(slash + 1 - exe), "ckh-coll-check-%s", mpis[mi]);
    snprintf(out, sizeof out, "/tmp/ckh-test-real-coll-%ld-%s-%d", (long)getpid(), mpis[mi], world);
    snprintf(cmd, sizeof cmd, "%s %s -np %d %s %s skip-last >/dev/null 2>&1", launcher,
             mi == 0 ? "--allow-run-as-root --oversubscribe --bind-to none" : "", world, exe, out);
    int st = system(cmd);
    (void)st; /* Open MPI reports the ranks that skipped MPI_Finalize after the timeout */
    struct sim_out so = {0};
    run_sim(world, &so);
    for (int r = 0; r < world; r++) {
        char path[300];
        size_t n;
        snprintf(path, sizeof path, "%s.%d", out, r);
        unsigned char *got = slurp(path, &n);
        unlink(path);
        int32_t rc_real = 0, rc_sim = 0;
        size_t cut_real = last_record(got, n, &rc_real), cut_sim = last_record(so.buf[r], so.len[r], &rc_sim);
        if (r == world - 1) { /* it skipped the last barrier: everything else agrees */
            cut_real = n;
            cut_sim = so.len[r];
        } else {
            ck_assert_msg(rc_real == CKH_ETIMEOUT, "%s -np %d rank %d: the barrier the last rank skipped "
                          "gave %d, want CKH_ETIMEOUT", mpis[mi], world, r, rc_real);
            ck_assert_int_eq(rc_sim, CKH_EPEER_DEAD);
        }
        ck_assert_msg(cut_real == cut_sim && memcmp(got, so.buf[r], cut_real) == 0,
                      "%s -np %d rank %d: results differ from the simulator's", mpis[mi], world, r);
        /* Every call before the skipped barrier succeeded. */
        for (size_t at = 0; at + 8 <= cut_real;) {
            int32_t rc;
            uint32_t len;
            memcpy(&rc, got + at, 4);
            memcpy(&len, got + at + 4, 4);
            ck_assert_msg(rc == 0, "%s -np %d rank %d: a call failed with %d", mpis[mi], world, r, rc);
            at += 8 + len;
        }
        free(got);
        free(so.buf[r]);
    }
}

START_TEST(test_coll_bit_identical)
{
    check_coll(_i / 2, _i % 2 ? 4 : 2);
}
END_TEST

/* ---- workloads ---- */

static struct ckh_scenario *parse(const char *text)
{
    struct ckh_scn_options so;
    struct ckh_scn_error e;
    struct ckh_scenario *sc = NULL;
    ckh_fuzz_scn_options(&so);
    int rc = ckh_scenario_parse_string(text, strlen(text), "real.yaml", &so, &sc, &e);
    ck_assert_msg(rc == 0, "%s", e.msg);
    return sc;
}

static void sim_reference(const struct ckh_scenario *sc, struct ckh_scenario_run *r)
{
    struct ckh__run_ctx c;
    memset(r, 0, sizeof *r);
    r->sc = sc;
    int rc = ckh__run_build_sim(&c, sc, sc->seed, CKH_RUN_REFERENCE, false);
    if (rc == 0)
        rc = ckh__run_execute(&c, r);
    ck_assert_msg(rc == 0, "%s", c.err);
    ckh__run_ctx_free(&c);
}

static void same_result(const struct ckh_job_result *a, const struct ckh_job_result *b, const char *what)
{
    ck_assert_msg(a->nnodes == b->nnodes, "%s: nodes %zu vs %zu", what, a->nnodes, b->nnodes);
    for (size_t i = 0; i < a->nnodes; i++) {
        const struct ckh_node_result *x = &a->nodes[i], *y = &b->nodes[i];
        ck_assert_str_eq(x->node, y->node);
        ck_assert_msg(x->finished && y->finished && x->rc == 0 && y->rc == 0, "%s: %s did not finish", what,
                      x->node);
        ck_assert_msg(x->epochs == y->epochs && x->total == y->total && x->steps == y->steps,
                      "%s: %s: epochs %lld/%lld total %lld/%lld", what, x->node, (long long)x->epochs,
                      (long long)y->epochs, (long long)x->total, (long long)y->total);
        ck_assert_str_eq(x->blobs, y->blobs);
        ck_assert_msg(x->digest == y->digest, "%s: %s: digest differs", what, x->node);
    }
    ck_assert_msg(a->nsteps == b->nsteps, "%s: steps %zu vs %zu", what, a->nsteps, b->nsteps);
    for (size_t i = 0; i < a->nsteps; i++)
        ck_assert_msg(a->steps[i].step == b->steps[i].step && a->steps[i].node == b->steps[i].node &&
                      a->steps[i].digest == b->steps[i].digest,
                      "%s: step record %zu differs", what, i);
    ck_assert_msg(a->nfinal_values == b->nfinal_values &&
                  (a->nfinal_values == 0 ||
                   memcmp(a->final_values, b->final_values, a->nfinal_values * sizeof *a->final_values) == 0),
                  "%s: final values differ", what);
}

static const char *const jobs[] = {
    "job: {workload: seed-pipeline, nodes: 3}\n",
    "job: {workload: param-server, nodes: 2, epochs: 3, options: {num_ps: 2, param_bytes: 64KiB}}\n",
    "job: {workload: ddp-train, nodes: 2, epochs: 2, checkpoint_every: {steps: 5}}\n",
    "job: {workload: ddp-train, nodes: 4, epochs: 2, checkpoint_every: {steps: 4}}\n",
};

START_TEST(test_workload_equals_sim)
{
    int mi = _i / 4;
    if (!have[mi])
        return;
    setenv("CKH_MPI", mpis[mi], 1);
    struct ckh_scenario *sc = parse(jobs[_i % 4]);
    struct ckh_scenario_run sim, real;
    char err[1200] = "";
    sim_reference(sc, &sim);
    memset(&real, 0, sizeof real);
    real.sc = sc;
    int rc = ckh__real_execute(sc, sc->seed, CKH_RUN_REFERENCE, &real, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: %s", mpis[mi], err);
    ck_assert(real.completed && sim.completed);
    char what[128];
    snprintf(what, sizeof what, "%s, %s", mpis[mi], jobs[_i % 4]);
    same_result(&real.got.r, &sim.got.r, what);
    ckh_scenario_run_free(&real);
    ckh_scenario_run_free(&sim);
    ckh_scenario_free(sc);
    unsetenv("CKH_MPI");
}
END_TEST

/* ---- faults ---- */

static const char *const faulted[] = {
    "job: {workload: ddp-train, nodes: 4, epochs: 3, checkpoint_every: {steps: 4}, collective_timeout: 5s}\n"
    "faults:\n  - on: {node: rank_1, op: allreduce, epoch: 1, nth: 3}\n    do: kill\n",
    "job: {workload: param-server, nodes: 2, epochs: 3, options: {num_ps: 2, param_bytes: 64KiB}}\n"
    "faults:\n  - on: {node: ps_0, op: pwrite, phase: save, epoch: 2}\n    do: kill\n"
    "expect: {values: {runs: 2}}\n",
    "job: {workload: seed-pipeline, nodes: 2}\n"
    "faults:\n  - on: {node: trainer_0, op: pwrite, phase: save, epoch: 3}\n    do: kill\n"
    "    when: mid-write\n    at: 40%\nexpect: {values: {runs: 2, resumed_from.trainer_0: 2, total: 145}}\n",
};

START_TEST(test_faulted_passes)
{
    if (!have[0])
        return;
    setenv("CKH_MPI", "openmpi", 1);
    struct ckh_scenario *sc = parse(faulted[_i]);
    struct ckh_run_options o = {.real_platform = true};
    struct ckh_report_result out;
    ckh_report_result_init(&out);
    ck_assert_int_eq(ckh_harness_run(sc, &o, &out), 0);
    ck_assert_msg(out.verdict == CKH_VERDICT_PASS, "%s", out.message ? out.message : "");
    ck_assert_uint_eq(out.runs, 2);
    ckh_report_result_clear(&out);
    ckh_scenario_free(sc);
    unsetenv("CKH_MPI");
}
END_TEST

START_TEST(test_refusals)
{
    struct ckh_scenario *sc = parse("job: {workload: seed-pipeline, nodes: 1, platform: real}\n"
                                    "faults:\n  - on: {op: pwrite}\n    do: crash\n");
    struct ckh_run_options o = {0};
    struct ckh_report_result out;
    ckh_report_result_init(&out);
    ck_assert_int_eq(ckh_harness_run(sc, &o, &out), CKH_EINVAL);
    ck_assert(out.verdict == CKH_VERDICT_ERROR);
    ck_assert_msg(strstr(out.message, "3:5: do: crash:") && strstr(out.message, "refused on the real platform"),
                  "%s", out.message);
    ckh_report_result_clear(&out);
    ckh_scenario_free(sc);
}
END_TEST

int main(void)
{
    char exe[1024], launcher[1024], err[512];
    for (int i = 0; i < 2; i++)
        have[i] = ckh__real_find_mpi(mpis[i], exe, sizeof exe, launcher, sizeof launcher, err, sizeof err) == 0;
    if (!have[0] && !have[1]) {
        fprintf(stderr, "test_real_coll: skipped: %s\n", err);
        return 77;
    }
    for (int i = 0; i < 2; i++)
        if (!have[i])
            fprintf(stderr, "test_real_coll: %s not available, its cases pass without running\n", mpis[i]);
    Suite *s = suite_create("real");
    TCase *tc = tcase_create("real");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, test_coll_bit_identical, 0, 4);
    tcase_add_loop_test(tc, test_workload_equals_sim, 0, 8);
    tcase_add_loop_test(tc, test_faulted_passes, 0, 3);
    tcase_add_test(tc, test_refusals);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
