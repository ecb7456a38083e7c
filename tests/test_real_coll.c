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
 *     save, on the real platform, pass with the simulator's reference;
 *   - faults on simulated disks served over ckhfs (crash with keep:
 *     random and synced, power loss with keep: cache and synced,
 *     fsync-fail, an at-rest fault between runs and one at a trigger):
 *     the faulted job's runs, firings, verify results and final records
 *     (digests, blobs, every step) equal the simulator's, and it passes;
 *   - the environment: no rank program (MPI not installed), a launcher
 *     that is not there, one that fails at once, a rank that never joins
 *     (the start deadline names it): each CKH_EINTERNAL (exit status 3)
 *     with its message, no run folder and no process left;
 *   - NCCL (options.devices: nccl): without NCCL or a CUDA device, exit
 *     status 3 naming what is missing; with a device, the records of the
 *     simulator.
 *
 *   - NCCL against the CUDA runtime and NCCL test double
 *     (tests/fakegpu/, built with this test): ddp-train's records, device
 *     memory out on an unmapped load, a rank dying in the all-reduce.
 *
 * Skips (exit 77, CTest's skip, the reason on stderr) when no MPI was
 * built and installed; without Open MPI (MPICH only) its cases are skipped
 * one by one (CKH_SKIP, tests/support/skip.h). The cases whose disks are
 * on ckhfs are tagged "fuse", CTest entry test_real_coll_fuse, skipped
 * where FUSE cannot be used. MPI and FUSE are on this project's machines
 * and on CI. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/sim.h"
#include "ckhfs/ckhfs.h"
#include "real_coll.h"
#include "real_nccl.h"
#include "exec/mpi.h"
#include "exec/run_ctx.h"
#include "search/fuzz.h"
#include "support/files.h"
#include "judge/judge.h"
#include "support/fuse.h"
#include "support/skip.h"

#define TIMEOUT_NS 500000000ull

static const char *const mpis[] = {"openmpi", "mpich"};
static bool have[2];
static char missing[2][512]; /* why mpis[i] cannot be used, where !have[i] */

/* Skips the running case (tests/support/skip.h) without MPI mpis[mi]. */
#define NEED_MPI(mi)                                                                               \
    do {                                                                                           \
        if (!have[mi])                                                                             \
            CKH_SKIP("%s", missing[mi]);                                                           \
    } while (0)

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
        unsigned char *got = (unsigned char *)ckh_test_slurp(path, &n);
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
    NEED_MPI(_i / 2);
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

/* sc's job in the simulator (mode: CKH_RUN_REFERENCE, or 0 for the faulted
 * job) into r. */
static void sim_run(const struct ckh_scenario *sc, unsigned mode, struct ckh_scenario_run *r)
{
    struct ckh__run_ctx c;
    memset(r, 0, sizeof *r);
    r->sc = sc;
    int rc = ckh__run_build_sim(&c, sc, sc->seed, mode, false);
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
    NEED_MPI(mi);
    setenv("CKH_MPI", mpis[mi], 1);
    struct ckh_scenario *sc = parse(jobs[_i % 4]);
    struct ckh_scenario_run sim, real;
    char err[1200] = "";
    sim_run(sc, CKH_RUN_REFERENCE, &sim);
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
    NEED_MPI(0);
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

/* ---- faults on simulated disks (ckhfs), against the simulator ---- */

/* Faulted jobs whose every outcome the simulator fixes, so the real run
 * must end exactly where the simulated one does: keep: synced and cache
 * resolve every pending operation one way; the keep: random ones here
 * leave the same pending set on real and simulated disks (checked when
 * written: docs/REAL.md says where they can differ). */
static const char *const on_disk[] = {
    /* a machine crash before rename, keep: random, a shared disk */
    "job: {workload: seed-pipeline, nodes: 2, disks: [{name: shared, mount: /, sector: 512}]}\n"
    "faults:\n  - on: {node: trainer_0, op: rename, phase: save, epoch: 2}\n    do: crash\n"
    "expect: {values: {total: 145}}\n",
    /* a crash at fsync of the atomic-dir saver, keep: synced, 2 ranks */
    "job: {workload: ddp-train, nodes: 2, epochs: 3, checkpoint_every: {steps: 4}, collective_timeout: 5s,\n"
    "      saver: {kind: atomic-dir, keep_last: 1}}\n"
    "faults:\n  - on: {node: rank_0, op: fsync, phase: save, step: 8}\n    do: crash\n    keep: synced\n",
    /* power loss keeping the cache, then one keeping synced data, 2 ranks */
    "job: {workload: ddp-train, nodes: 2, epochs: 3, checkpoint_every: {steps: 4}, collective_timeout: 5s}\n"
    "faults:\n  - on: {node: rank_0, op: write, phase: save, step: 8}\n    do: power-loss\n    keep: cache\n"
    "  - on: {node: rank_1, op: allreduce, step: 11, run: 2}\n    do: power-loss\n    keep: synced\n",
    /* fsync-fail in a save: the save fails, the job goes on */
    "job: {workload: seed-pipeline, nodes: 1}\n"
    "faults:\n  - on: {op: fsync, phase: save, epoch: 1}\n    do: fsync-fail\n"
    "expect: {outcome: save-fails, values: {epochs: 4, total: 145, saves_failed: 1}}\n",
    /* a bit flipped at rest between runs is detected */
    "job: {workload: seed-pipeline, nodes: 1}\n"
    "faults:\n  - on: {op: stat, phase: save, epoch: 3}\n    do: kill\n"
    "  - on: {run: 2}\n    do: corrupt\n    mode: bit-flip\n    path: /ckpt/trainer_0.2\n    offset: 40\n    bit: 2\n"
    "restart: {max_restarts: 1}\nexpect: {outcome: corruption-detected}\n",
    /* the checkpoint directory removed at a phase (an at-rest fault with a trigger) */
    "job: {workload: seed-pipeline, nodes: 1}\n"
    "faults:\n  - on: {phase: epoch, epoch: 2}\n    do: remove-dir\n    path: /ckpt\n"
    "expect: {outcome: save-fails, values: {epochs: 4, total: 145}}\n",
};


/* The faulted job's course and end, real against simulated. */
static void same_course(const struct ckh_scenario_run *a, const struct ckh_scenario_run *b, const char *what)
{
    ck_assert_msg(a->nruns == b->nruns && a->completed == b->completed, "%s: runs %zu/%zu completed %d/%d", what,
                  a->nruns, b->nruns, a->completed, b->completed);
    for (size_t i = 0; i < a->sc->nfaults; i++)
        ck_assert_msg(a->fault_fired[i] == b->fault_fired[i], "%s: fault %zu fired %llu times, %llu in the "
                      "simulator", what, i + 1, (unsigned long long)a->fault_fired[i],
                      (unsigned long long)b->fault_fired[i]);
    for (size_t r = 0; r < a->nruns; r++)
        ck_assert_msg(a->runs[r].committed_ok == b->runs[r].committed_ok, "%s: run %zu: verify %d/%d (%s / %s)",
                      what, r + 1, a->runs[r].committed_ok, b->runs[r].committed_ok, a->runs[r].committed_detail,
                      b->runs[r].committed_detail);
    /* A crashed rank's survivors: the simulator lets them fail their save
     * (a collective with a dead peer), mpirun kills them first (docs/REAL.md,
     * "Dead peer vs timeout"); failed saves are compared for jobs without
     * collectives only. */
    bool group = a->world > 0;
    ck_assert_msg(a->corruption_seen == b->corruption_seen && (group || a->saves_failed == b->saves_failed),
                  "%s: corruption %d/%d saves failed %llu/%llu", what, a->corruption_seen, b->corruption_seen,
                  (unsigned long long)a->saves_failed, (unsigned long long)b->saves_failed);
    const struct ckh_job_result *x = &a->got.r, *y = &b->got.r;
    ck_assert_msg(x->nnodes == y->nnodes, "%s: nodes", what);
    for (size_t i = 0; i < x->nnodes; i++) {
        const struct ckh_node_result *p = &x->nodes[i], *q = &y->nodes[i];
        ck_assert_msg(p->finished == q->finished && p->rc == q->rc && p->epochs == q->epochs &&
                      p->total == q->total && p->resumed_from == q->resumed_from && p->steps == q->steps &&
                      (group || p->saves_failed == q->saves_failed),
                      "%s: %s: finished %d/%d rc %d/%d epochs %lld/%lld total %lld/%lld resumed %lld/%lld", what,
                      p->node, p->finished, q->finished, p->rc, q->rc, (long long)p->epochs, (long long)q->epochs,
                      (long long)p->total, (long long)q->total, (long long)p->resumed_from,
                      (long long)q->resumed_from);
        ck_assert_msg(!strcmp(p->blobs, q->blobs), "%s: %s: blobs %s / %s", what, p->node, p->blobs, q->blobs);
        ck_assert_msg(p->digest == q->digest, "%s: %s: digest differs", what, p->node);
    }
    ck_assert_msg(x->nsteps == y->nsteps, "%s: steps %zu vs %zu", what, x->nsteps, y->nsteps);
    for (size_t i = 0; i < x->nsteps; i++)
        ck_assert_msg(x->steps[i].step == y->steps[i].step && x->steps[i].digest == y->steps[i].digest,
                      "%s: step record %zu differs", what, i);
}

/* The scenario's simulated verdict, and its verdict from one real
 * execution (judged as ckh_harness_run does): into sim_out / real_out
 * (cleared by the caller). With course, the real runs' course (runs,
 * firings, records) must also equal the simulator's. */
static void judge_both(const struct ckh_scenario *sc, const char *what, bool course,
                       struct ckh_report_result *sim_out, struct ckh_report_result *real_out)
{
    const char *root = getenv("CKH_SOURCE_DIR");
    struct ckh_run_options o = {.source_dir = root};
    ckh_report_result_init(sim_out);
    ckh_report_result_init(real_out);
    ck_assert_int_eq(ckh_harness_run(sc, &o, sim_out), 0);
    struct ckh_scenario_run sim, real;
    char err[1200] = "";
    sim_run(sc, 0, &sim);
    memset(&real, 0, sizeof real);
    real.sc = sc;
    real.seed = sc->seed;
    real.source_dir = root ? root : ".";
    o.real_platform = true;
    int rc = ckh__run_reference(sc, sc->seed, &o, &real, err, sizeof err);
    ck_assert_msg(rc == 0 && real.ref_ok, "%s: reference: %s", what, err);
    rc = ckh__real_execute(sc, sc->seed, 0, &real, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: %s", what, err);
    ck_assert_msg(real.world == sim.world && real.world_restart == sim.world_restart && real.resized == sim.resized,
                  "%s: world %d/%d restart %d/%d resized %d/%d", what, real.world, sim.world, real.world_restart,
                  sim.world_restart, real.resized, sim.resized);
    if (course)
        same_course(&real, &sim, what);
    real_out->runs = (uint32_t)real.nruns;
    real_out->restarts = real.nruns ? (uint32_t)real.nruns - 1 : 0;
    ckh__run_judge(&real, real_out);
    ck_assert_msg(real_out->verdict == sim_out->verdict, "%s: verdict %s on the real platform, %s in the simulator",
                  what, ckh_verdict_name(real_out->verdict), ckh_verdict_name(sim_out->verdict));
    ckh_scenario_run_free(&real);
    ckh_scenario_run_free(&sim);
}

START_TEST(test_on_disk_equals_sim)
{
    NEED_MPI(0);
    NEED_FUSE();
    setenv("CKH_MPI", "openmpi", 1);
    struct ckh_scenario *sc = parse(on_disk[_i]);
    ck_assert(ckh__real_uses_ckhfs(sc));
    char what[64];
    snprintf(what, sizeof what, "on-disk case %d", _i);
    /* One real faulted job: its course and its verdict, against the
     * simulator's. */
    struct ckh_report_result sim_out, real_out;
    judge_both(sc, what, true, &sim_out, &real_out);
    ck_assert_msg(real_out.verdict == CKH_VERDICT_PASS, "%s: %s", what, real_out.message ? real_out.message : "");
    ckh_report_result_clear(&sim_out);
    ckh_report_result_clear(&real_out);
    ckh_scenario_free(sc);
    unsetenv("CKH_MPI");
}
END_TEST

/* ---- faults of the environment ---- */

static char env_dir[256]; /* the case's scripts; TMPDIR is env_dir/tmp */

static void write_script(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", env_dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
    ck_assert_int_eq(chmod(path, 0755), 0);
}

/* Runs the 2-rank ddp-train job under the environment set up by the
 * case; it must end in CKH_EINTERNAL (exit status 3) with want in the
 * message, and leave nothing: no run folder under TMPDIR, no process
 * the case's scripts recorded in env_dir/pids. */
static void env_fails(const char *want, const char *want2)
{
    struct ckh_scenario *sc = parse(jobs[2]);
    struct ckh_scenario_run real;
    char err[1200] = "", tmp[300];
    memset(&real, 0, sizeof real);
    real.sc = sc;
    snprintf(tmp, sizeof tmp, "%s/tmp", env_dir);
    mkdir(tmp, 0700);
    setenv("TMPDIR", tmp, 1);
    int rc = ckh__real_execute(sc, sc->seed, CKH_RUN_REFERENCE, &real, err, sizeof err);
    unsetenv("TMPDIR");
    ck_assert_msg(rc == CKH_EINTERNAL, "rc %d: %s", rc, err);
    ck_assert_msg(strstr(err, want) && (!want2 || strstr(err, want2)), "%s", err);
    DIR *d = opendir(tmp);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        ck_assert_msg(de->d_name[0] == '.', "%s left in TMPDIR", de->d_name);
    if (d)
        closedir(d);
    char pids[300];
    snprintf(pids, sizeof pids, "%s/pids", env_dir);
    FILE *f = fopen(pids, "r");
    long pid;
    while (f && fscanf(f, "%ld", &pid) == 1)
        ck_assert_msg(kill((pid_t)pid, 0) != 0, "process %ld of the failed start is still there", pid);
    if (f)
        fclose(f);
    ckh_scenario_run_free(&real);
    ckh_scenario_free(sc);
}

START_TEST(test_environment)
{
    NEED_MPI(0);
    snprintf(env_dir, sizeof env_dir, "/tmp/ckh-test-real-env-%ld-XXXXXX", (long)getpid());
    ck_assert(mkdtemp(env_dir) != NULL);
    setenv("CKH_MPI", "openmpi", 1);
    char exe[1024], launcher[1024], err[512], text[3000];
    ck_assert_int_eq(ckh__real_find_mpi("openmpi", exe, sizeof exe, launcher, sizeof launcher, err, sizeof err), 0);
    switch (_i) {
    case 0: /* no rank program beside ckh: MPI not installed */
        setenv("CKH_RANK_DIR", env_dir, 1);
        env_fails("MPI not installed", NULL);
        unsetenv("CKH_RANK_DIR");
        break;
    case 1: /* a launcher that is not there */
        setenv("CKH_MPIRUN", "/nonexistent/mpirun", 1);
        env_fails("CKH_MPIRUN=/nonexistent/mpirun: not an executable file", NULL);
        break;
    case 2: /* a launcher that fails at once */
        snprintf(text, sizeof text, "#!/bin/sh\necho 'no slots for you' >&2\nexit 7\n");
        write_script("fail.sh", text);
        snprintf(text, sizeof text, "%s/fail.sh", env_dir);
        setenv("CKH_MPIRUN", text, 1);
        env_fails("failed to start the ranks (exit status 7)", "no slots for you");
        break;
    case 3: /* MPI rank 1 never joins: the start deadline names it, and
             * everything of the run is killed and reaped */
        snprintf(text, sizeof text, "#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then\n"
                 "  echo $$ >> %s/pids\n  exec sleep 600\nfi\nexec %s \"$@\"\n", env_dir, exe);
        write_script("stall.sh", text);
        snprintf(text, sizeof text, "#!/bin/sh\necho $$ >> %s/pids\nn=$#\nfor a in \"$@\"; do\n"
                 "  case \"$a\" in */ckh-rank-openmpi) a=%s/stall.sh ;; esac\n  set -- \"$@\" \"$a\"\ndone\n"
                 "shift $n\nexec %s \"$@\"\n", env_dir, env_dir, launcher);
        write_script("launcher.sh", text);
        snprintf(text, sizeof text, "%s/launcher.sh", env_dir);
        setenv("CKH_MPIRUN", text, 1);
        setenv("CKH_REAL_START_TIMEOUT", "3", 1);
        env_fails("never joined within 3 s", "rank_1 (MPI rank 1)");
        unsetenv("CKH_REAL_START_TIMEOUT");
        break;
    }
    unsetenv("CKH_MPIRUN");
    unsetenv("CKH_MPI");
    snprintf(text, sizeof text, "rm -rf %s", env_dir);
    ck_assert_int_eq(system(text), 0);
}
END_TEST

/* ---- NCCL ---- */

/* ddp-train with options.devices: nccl. Without NCCL, the CUDA runtime or
 * a device (this project's CI), it must end in CKH_EINTERNAL (exit status
 * 3) naming what is missing; on a GPU machine, with as many ranks as it
 * has devices (at most 2), in the simulator's records. Case 0 hides NCCL
 * behind CKH_NCCL_LIB. */
START_TEST(test_nccl)
{
    NEED_MPI(0);
    setenv("CKH_MPI", "openmpi", 1);
    if (_i == 0)
        setenv("CKH_NCCL_LIB", "/nonexistent/libnccl.so.2", 1);
    int ndev = 0;
    char why[512] = "";
    int probe = _i == 0 ? CKH_EINTERNAL : ckh_real_nccl_probe(&ndev, why, sizeof why);
    char text[256];
    snprintf(text, sizeof text, "job: {workload: ddp-train, nodes: %d, epochs: 2, checkpoint_every: {steps: 5},\n"
             "      options: {devices: nccl}}\n", ndev >= 2 ? 2 : 1);
    struct ckh_scenario *sc = parse(text);
    struct ckh_scenario_run sim, real;
    char err[1200] = "";
    memset(&real, 0, sizeof real);
    real.sc = sc;
    int rc = ckh__real_execute(sc, sc->seed, CKH_RUN_REFERENCE, &real, err, sizeof err);
    if (probe != 0) {
        ck_assert_msg(rc == CKH_EINTERNAL, "rc %d: %s", rc, err);
        ck_assert_msg(strstr(err, "options.devices: nccl: ") &&
                      (strstr(err, "libnccl.so.2 not found") || strstr(err, "the CUDA runtime not found") ||
                       strstr(err, "no CUDA device")),
                      "%s", err);
        if (_i == 0)
            ck_assert_msg(strstr(err, "libnccl.so.2 not found (CKH_NCCL_LIB: /nonexistent/libnccl.so.2"), "%s", err);
        else
            fprintf(stderr, "test_real_coll: NCCL not run here: %s\n", why);
    } else {
        ck_assert_msg(rc == 0, "%s", err);
        sim_run(sc, CKH_RUN_REFERENCE, &sim);
        same_result(&real.got.r, &sim.got.r, "ddp-train over NCCL");
        ckh_scenario_run_free(&sim);
        fprintf(stderr, "test_real_coll: NCCL ran on %d of %d devices, records equal the simulator's\n",
                ndev >= 2 ? 2 : 1, ndev);
    }
    ckh_scenario_run_free(&real);
    ckh_scenario_free(sc);
    unsetenv("CKH_NCCL_LIB");
    unsetenv("CKH_MPI");
}
END_TEST

/* ---- library scenarios: several disks, restart.world_size ---- */

/* Scenarios of the library the real platform used to refuse: node-local
 * disks beside a shared one (each at its mount path; the last two on
 * ckhfs mounts, one per disk), and restarts at another world size (one
 * mpirun of the new size, the ranks outside it parked). */
static const char *const library[] = {
    "scenarios/saver/node-local-uninterrupted.yaml",
    "scenarios/saver/node-local-kill-rank1-mid-save.yaml",
    "scenarios/saver/node-local-kill-rank1-mid-commit.yaml",
    "scenarios/minidb/local-disks.yaml",
    "scenarios/saver/node-local-power-loss.yaml",
    "scenarios/ddp/world-size-grow.yaml",
    "scenarios/ddp/world-size-shrink.yaml",
    "scenarios/ddp/world-size-reshard-off.yaml",
    "scenarios/defects/reshard-ignored.yaml",
};

/* The scenario, its simulated course and verdict, its real course and
 * verdict: equal. */
/* The library's scenarios by whether they put a disk on ckhfs (FUSE):
 * [0] those that do not, [1] those that do (main sorts them). */
static int lib_idx[2][sizeof library / sizeof library[0]], nlib[2];

static struct ckh_scenario *parse_library(int i)
{
    const char *root = getenv("CKH_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", library[i]);
    struct ckh_scn_options so;
    struct ckh_scn_error e;
    struct ckh_scenario *sc = NULL;
    ckh_fuzz_scn_options(&so);
    if (ckh_scenario_parse_file(path, &so, &sc, &e) != 0) {
        ck_assert_msg(0, "%s", e.msg);
        return NULL;
    }
    return sc;
}

static void library_case(int i)
{
    struct ckh_scenario *sc = parse_library(i);
    setenv("CKH_MPI", "openmpi", 1);
    struct ckh_report_result sim_out, real_out;
    /* A power loss with keep: random may leave other pending sets on the
     * real disks (docs/REAL.md, "Crash timing"): its verdict only. */
    judge_both(sc, library[i], !strstr(library[i], "power-loss"), &sim_out, &real_out);
    ck_assert_msg(sim_out.verdict == CKH_VERDICT_PASS, "%s: %s", library[i], sim_out.message ? sim_out.message : "");
    ckh_report_result_clear(&sim_out);
    ckh_report_result_clear(&real_out);
    ckh_scenario_free(sc);
    unsetenv("CKH_MPI");
}

START_TEST(test_library_equals_sim)
{
    NEED_MPI(0);
    library_case(lib_idx[0][_i]);
}
END_TEST

/* The same for the library's scenarios with a disk on ckhfs. */
START_TEST(test_library_on_ckhfs_equals_sim)
{
    NEED_MPI(0);
    NEED_FUSE();
    library_case(lib_idx[1][_i]);
}
END_TEST

/* ---- NCCL against the test double (tests/fakegpu/) ---- */

/* Points ckh's NCCL and CUDA runtime at libckh_fakegpu.so (beside this
 * program, a build dependency of it) with gpus devices sharing a fresh
 * folder (in dir). */
static void fake_gpus(int gpus, uint64_t mem, char *dir, size_t dirlen)
{
    char exe[1024], lib[1100];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_msg(n > 0, "/proc/self/exe: %s", strerror(errno));
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(lib, sizeof lib, "%s/libckh_fakegpu.so", exe);
    ck_assert_msg(access(lib, R_OK) == 0, "%s missing: the NCCL test double is not built", lib);
    snprintf(dir, dirlen, "/tmp/ckh-fakegpu-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char num[32];
    setenv("CKH_NCCL_LIB", lib, 1);
    setenv("CKH_CUDART_LIB", lib, 1);
    setenv("CKH_FAKE_GPU_DIR", dir, 1);
    snprintf(num, sizeof num, "%d", gpus);
    setenv("CKH_FAKE_GPUS", num, 1);
    snprintf(num, sizeof num, "%llu", (unsigned long long)mem);
    setenv("CKH_FAKE_GPU_MEM", num, 1);
}

static void fake_gpus_end(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    unsetenv("CKH_NCCL_LIB");
    unsetenv("CKH_CUDART_LIB");
    unsetenv("CKH_FAKE_GPU_DIR");
    unsetenv("CKH_FAKE_GPUS");
    unsetenv("CKH_FAKE_GPU_MEM");
}

static const char *const nccl_jobs[] = {
    /* 0, 1: uninterrupted, 2 and 4 ranks: the simulator's records */
    "job: {workload: ddp-train, nodes: 2, epochs: 2, checkpoint_every: {steps: 5}, options: {devices: nccl}}\n",
    "job: {workload: ddp-train, nodes: 4, epochs: 2, checkpoint_every: {steps: 3}, options: {devices: nccl}}\n",
    /* 2: every rank's unmapped load on GPU 0 runs it out of memory (no
     * expect: the verdict's message must say so) */
    "job: {workload: ddp-train, nodes: 4, epochs: 2, checkpoint_every: {steps: 1}, collective_timeout: 5s,\n"
    "      options: {map_location: false, samples: 64, devices: nccl}}\n"
    "faults:\n  - on: {node: rank_3, op: allreduce, step: 3}\n    do: kill\n"
    "  - on: {run: any}\n    do: gpu-oom\n"
    "restart: {max_restarts: 1}\n",
    /* 3: its mapped twin fits */
    "job: {workload: ddp-train, nodes: 4, epochs: 2, checkpoint_every: {steps: 1}, collective_timeout: 5s,\n"
    "      options: {samples: 64, devices: nccl}}\n"
    "faults:\n  - on: {node: rank_3, op: allreduce, step: 3}\n    do: kill\n"
    "  - on: {run: any}\n    do: gpu-oom\n",
    /* 4: a rank dies inside the NCCL all-reduce; its peers time out */
    "job: {workload: ddp-train, nodes: 2, epochs: 2, checkpoint_every: {steps: 4}, collective_timeout: 3s,\n"
    "      options: {devices: nccl}}\n"
    "faults:\n  - on: {node: rank_1, step: 5}\n    do: die-in-collective\n",
};

/* ddp-train over NCCL with its tensors in device memory, every call
 * through the CUDA runtime and NCCL test double: records and verdicts
 * equal the simulator's; device memory is shared and real to ckh (the
 * unmapped load fails on cudaMalloc of GPU 0); no device is exit 3. */
START_TEST(test_nccl_fake)
{
    NEED_MPI(0);
    char dir[256];
    int n = (int)(sizeof nccl_jobs / sizeof nccl_jobs[0]);
    fake_gpus(_i == n ? 0 : 4, 1u << 30, dir, sizeof dir);
    setenv("CKH_MPI", "openmpi", 1);
    if (_i == n) {
        /* No device: the environment, naming it. */
        struct ckh_scenario *sc = parse(nccl_jobs[0]);
        struct ckh_scenario_run real;
        char err[1200] = "";
        memset(&real, 0, sizeof real);
        real.sc = sc;
        int rc = ckh__real_execute(sc, sc->seed, CKH_RUN_REFERENCE, &real, err, sizeof err);
        ck_assert_msg(rc == CKH_EINTERNAL && strstr(err, "options.devices: nccl: no CUDA device"), "rc %d: %s", rc,
                      err);
        ckh_scenario_run_free(&real);
        ckh_scenario_free(sc);
    } else if (_i < 2) {
        struct ckh_scenario *sc = parse(nccl_jobs[_i]);
        struct ckh_scenario_run sim, real;
        char err[1200] = "";
        memset(&real, 0, sizeof real);
        real.sc = sc;
        int rc = ckh__real_execute(sc, sc->seed, CKH_RUN_REFERENCE, &real, err, sizeof err);
        ck_assert_msg(rc == 0, "%s", err);
        sim_run(sc, CKH_RUN_REFERENCE, &sim);
        same_result(&real.got.r, &sim.got.r, nccl_jobs[_i]);
        ckh_scenario_run_free(&sim);
        ckh_scenario_run_free(&real);
        ckh_scenario_free(sc);
    } else {
        struct ckh_scenario *sc = parse(nccl_jobs[_i]);
        struct ckh_report_result sim_out, real_out;
        judge_both(sc, nccl_jobs[_i], false, &sim_out, &real_out);
        /* Only device memory says CKH_EOOM_DEVICE with a gpu: the double's
         * cudaMalloc of GPU 0 said no. */
        ck_assert_msg(real_out.verdict == (_i == 2 ? CKH_VERDICT_FAIL : CKH_VERDICT_PASS), "%s: %s", nccl_jobs[_i],
                      real_out.message ? real_out.message : "");
        if (_i == 2)
            ck_assert_msg(real_out.message && strstr(real_out.message, "the job ended job-fails") &&
                              strstr(real_out.message, "device out of memory"),
                          "%s", real_out.message ? real_out.message : "(no message)");
        ckh_report_result_clear(&sim_out);
        ckh_report_result_clear(&real_out);
        ckh_scenario_free(sc);
    }
    unsetenv("CKH_MPI");
    fake_gpus_end(dir);
}
END_TEST


/* The conformance program's other modes (real/coll_check_main.c): its
 * usage; the all-reduce benchmark over MPI and, with the CUDA and NCCL
 * test double, over NCCL on device buffers; NCCL without a device. */
START_TEST(test_coll_check_modes)
{
    NEED_MPI(0);
    char exe[1024], launcher[1024], err[512], cmd[3000], out[256];
    ck_assert_int_eq(ckh__real_find_mpi(mpis[0], exe, sizeof exe, launcher, sizeof launcher, err, sizeof err), 0);
    char *slash = strrchr(exe, '/');
    snprintf(slash + 1, sizeof exe - (size_t)(slash + 1 - exe), "ckh-coll-check-%s", mpis[0]);
    snprintf(out, sizeof out, "/tmp/ckh-test-real-coll-bench-%ld", (long)getpid());
    /* no arguments: the usage, exit status 2 */
    snprintf(cmd, sizeof cmd, "%s > %s 2>&1", exe, out);
    int st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    size_t n = 0;
    char *text = ckh_test_slurp(out, &n);
    ck_assert_str_eq(text, "usage: ckh-coll-check-MPI OUT [skip-last]\n");
    free(text);
    const char *mpirun_opts = "--allow-run-as-root --oversubscribe --bind-to none";
    char dir[256];
    for (int gpus = 0; gpus <= 2; gpus++) {
        /* 0: host collectives; 1: NCCL asked for, no device; 2: NCCL on
         * the double's 2 devices */
        fake_gpus(gpus == 1 ? 0 : 2, 1u << 26, dir, sizeof dir);
        /* Open MPI's own allocations outlive MPI_Finalize: a sanitizer
         * build's leak report at the ranks' exit is not ckh's to judge here. */
        const char *asan = getenv("ASAN_OPTIONS");
        snprintf(cmd, sizeof cmd, "ASAN_OPTIONS='%s%sdetect_leaks=0' %s %s -np 2 %s --bench 4096 20%s > %s 2>&1",
                 asan ? asan : "", asan ? ":" : "", launcher, mpirun_opts, exe, gpus ? " nccl" : "", out);
        st = system(cmd);
        text = ckh_test_slurp(out, &n);
        if (gpus == 1) {
            /* no device: each rank says why, exit status 3 */
            ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %#x: %s", st, text);
            ck_assert_msg(strstr(text, "ckh-coll-check: ") && strstr(text, "no CUDA device"), "%s", text);
        } else {
            /* rank 0 prints "allreduce BYTES NS_PER_CALL" */
            ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x: %s", st, text);
            unsigned long bytes = 0;
            double ns = -1;
            const char *line = strstr(text, "allreduce ");
            ck_assert_msg(line && sscanf(line, "allreduce %lu %lf", &bytes, &ns) == 2, "%s", text);
            ck_assert_uint_eq(bytes, 4096);
            ck_assert(ns >= 0);
        }
        free(text);
        fake_gpus_end(dir);
    }
    unlink(out);
}
END_TEST


/* The rank program refuses bad arguments (exit status 2, the usage) and
 * a scenario or node it cannot run, leaving the launcher the code and the
 * message in RUNDIR/status/error.RUN.PID. */
static int rank_cmd(const char *exe, const char *args, const char *out, char **text)
{
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "%s %s > %s 2>&1", exe, args, out);
    int st = system(cmd);
    size_t n = 0;
    *text = ckh_test_slurp(out, &n);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_rank_program_refusals)
{
    NEED_MPI(0);
    char exe[1024], launcher[1024], err[512], out[256], dir[256], yaml[300], args[1500], *text;
    ck_assert_int_eq(ckh__real_find_mpi(mpis[0], exe, sizeof exe, launcher, sizeof launcher, err, sizeof err), 0);
    snprintf(out, sizeof out, "/tmp/ckh-test-rank-%ld.out", (long)getpid());
    snprintf(dir, sizeof dir, "/tmp/ckh-test-rank-%ld", (long)getpid());
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(yaml, sizeof yaml, "%s/status", dir);
    ck_assert_int_eq(mkdir(yaml, 0755), 0);
    static const struct {
        const char *args, *why;
    } bad[] = {
        {"", "--scenario, --dir and one of --ranks or --node are required"},
        {"--scenario x.yaml --dir d --ranks 0 --node 0", "--scenario, --dir and one of --ranks or --node are required"},
        {"--scenario", "an option lacks its value"},
        {"--seed abc", "unknown option or bad value"},
        {"--seed 12x", "unknown option or bad value"},
        {"--run 0", "unknown option or bad value"},
        {"--resume -2", "unknown option or bad value"},
        {"--node 1024", "unknown option or bad value"},
        {"--bogus 1", "unknown option or bad value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int code = rank_cmd(exe, bad[i].args, out, &text);
        char want[200];
        snprintf(want, sizeof want, "ckh-rank: %s\nusage: ckh-rank-MPI --scenario FILE", bad[i].why);
        ck_assert_msg(code == 2 && strncmp(text, want, strlen(want)) == 0, "%s: %d: %s", bad[i].args, code, text);
        free(text);
    }
    /* A scenario with an error: exit 2, where and what, for the launcher too. */
    snprintf(yaml, sizeof yaml, "%s/bad.yaml", dir);
    FILE *f = fopen(yaml, "w");
    ck_assert_ptr_nonnull(f);
    fputs("job: {workload: ddp-train, nodes: two}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--scenario %s --dir %s --node 0 --seed 1 --run 1 --resume -1 --reference", yaml, dir);
    int code = rank_cmd(exe, args, out, &text);
    char want[400];
    snprintf(want, sizeof want, "): %s:1:35: 'job.nodes' expects an integer in 1..1024, got 'two'", yaml);
    ck_assert_msg(code == 2 && strstr(text, want), "%d: %s", code, text);
    free(text);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cat %s/status/error.1.* > %s", dir, out);
    ck_assert_int_eq(system(cmd), 0);
    size_t n = 0;
    text = ckh_test_slurp(out, &n);
    snprintf(want, sizeof want, "%d %s:1:35: 'job.nodes' expects", CKH_EINVAL, yaml);
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "%s", text);
    free(text);
    /* A node the job does not have: exit 3. */
    f = fopen(yaml, "w");
    ck_assert_ptr_nonnull(f);
    fputs("job: {workload: ddp-train, nodes: 2, epochs: 1}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--scenario %s --dir %s --node 5", yaml, dir);
    code = rank_cmd(exe, args, out, &text);
    ck_assert_msg(code == 3 && strstr(text, "node 5 is not a node of the job (0..1)"), "%d: %s", code, text);
    free(text);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, out);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_refusals)
{
    struct ckh_scenario *sc = parse("job: {workload: seed-pipeline, nodes: 1, platform: real}\n");
    char err[512] = "";
    ck_assert_int_eq(ckh__real_check(sc, err, sizeof err), 0);
    ckh_scenario_free(sc);
}
END_TEST

/* A disk mounted elsewhere than "/" with ckhfs faults runs now (its own
 * mount); the scenario the platform once refused passes. */
START_TEST(test_disk_elsewhere_runs)
{
    NEED_MPI(0);
    NEED_FUSE();
    setenv("CKH_MPI", "openmpi", 1);
    struct ckh_scenario *sc;
    sc = parse("job: {workload: seed-pipeline, nodes: 1, platform: real,\n"
               "      checkpoint_dir: /data/ckpt, disks: [{name: d, mount: /data}]}\n"
               "faults:\n  - on: {op: pwrite, phase: save, epoch: 2}\n    do: crash\n"
               "expect: {values: {total: 145}}\n");
    struct ckh_run_options o = {0};
    struct ckh_report_result out;
    ckh_report_result_init(&out);
    ck_assert_int_eq(ckh_harness_run(sc, &o, &out), 0);
    ck_assert_msg(out.verdict == CKH_VERDICT_PASS, "%s", out.message ? out.message : "");
    ckh_report_result_clear(&out);
    ckh_scenario_free(sc);
    unsetenv("CKH_MPI");
}
END_TEST

int main(void)
{
    char exe[1024], launcher[1024];
    for (int i = 0; i < 2; i++)
        have[i] = ckh__real_find_mpi(mpis[i], exe, sizeof exe, launcher, sizeof launcher, missing[i],
                                     sizeof missing[i]) == 0;
    if (!have[0] && !have[1]) { /* every case needs one (but test_refusals): all skipped */
        fprintf(stderr, "test_real_coll: SKIPPED every case: %s\n", missing[0]);
        return CKH_TEST_SKIPPED;
    }
    for (size_t i = 0; i < sizeof library / sizeof library[0]; i++) {
        const char *root = getenv("CKH_SOURCE_DIR");
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", root ? root : ".", library[i]);
        struct ckh_scn_options so;
        struct ckh_scn_error e;
        struct ckh_scenario *sc = NULL;
        ckh_fuzz_scn_options(&so);
        /* One that does not parse fails in the first group. */
        int on_ckhfs = ckh_scenario_parse_file(path, &so, &sc, &e) == 0 && ckh__real_uses_ckhfs(sc);
        lib_idx[on_ckhfs][nlib[on_ckhfs]++] = (int)i;
        ckh_scenario_free(sc);
    }
    Suite *s = suite_create("real");
    TCase *tc = tcase_create("real");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, test_coll_bit_identical, 0, 4);
    tcase_add_loop_test(tc, test_workload_equals_sim, 0, 8);
    tcase_add_loop_test(tc, test_faulted_passes, 0, 3);
    tcase_add_loop_test(tc, test_environment, 0, 4);
    tcase_add_loop_test(tc, test_nccl, 0, 2);
    tcase_add_loop_test(tc, test_nccl_fake, 0, (int)(sizeof nccl_jobs / sizeof nccl_jobs[0]) + 1);
    tcase_add_loop_test(tc, test_library_equals_sim, 0, nlib[0]);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_coll_check_modes);
    tcase_add_test(tc, test_rank_program_refusals);
    suite_add_tcase(s, tc);
    /* The real platform's disks on ckhfs: CTest entry test_real_coll_fuse. */
    TCase *fs = tcase_create("ckhfs");
    tcase_set_timeout(fs, 240);
    tcase_set_tags(fs, "fuse");
    tcase_add_loop_test(fs, test_on_disk_equals_sim, 0, (int)(sizeof on_disk / sizeof on_disk[0]));
    tcase_add_loop_test(fs, test_library_on_ckhfs_equals_sim, 0, nlib[1]);
    tcase_add_test(fs, test_disk_elsewhere_runs);
    suite_add_tcase(s, fs);
    return ckh_test_run(s);
}
