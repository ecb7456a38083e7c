/* Tests for the DDP workload (reference/ddp_*.c) in the simulator: the
 * schedule and state dicts, bit-identical resume after a kill at every
 * step (world sizes 1, 2, 4, 8; accumulation 1 and 4; three saver
 * strategies and keep_last 1, 2, unlimited), a machine crash at every
 * operation of a save, device mapping (GPU 0 out of memory at 8 ranks
 * without it), strict and normalizing loads of "module." keys, and each
 * DDP defect caught by the oracles.
 *
 * Whether a resumed run is equivalent to the uninterrupted one is judged
 * by the check ckh ships: each such case is a ddp-train scenario run
 * through the harness (the ddp-train adapter collects the record, the
 * "resume-equivalence" oracle, harness/judge/resume_check.c, judges
 * it), so the tests and `ckh run` can never disagree on what equivalent
 * means. The record-level cases (device memory, key matching, world-size
 * changes) drive the simulator directly, as do the cases on what ddp-train
 * reports through the record API (include/ckh/record.h: step, resume,
 * save and final records, read back by a record table of this file), the
 * refusal of another world size with resharding off, and checkpoints on
 * node-local disks through the atomic directory saver and through a saver
 * with the old master-only protocol (cfg->saver), whose saves all fail. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/ddp.h"
#include "ckh/record.h"
#include "ckh/saver.h"
#include "ckh/err.h"
#include "ckh/sim.h"
#include "ckh/simfs.h"
#include "report.h"
#include "exec/runner.h"
#include "model/scenario.h"
#include "judge/judge.h"

static bool under_valgrind(void)
{
    return getenv("CKH_VALGRIND") != NULL;
}

struct job {
    struct ckh_sim *sim;                        /* the simulator */
    struct ckh_simfs *disk;                     /* shared disk at "/" */
    struct ckh_ddp_record *rec;                 /* oracle record */
    struct ckh_ddp_node_arg args[CKH_DDP_MAX_RANKS]; /* node args */
    int ids[CKH_DDP_MAX_RANKS];                 /* node ids */
};

static void job_start(struct job *j, struct ckh_ddp_config *cfg, uint64_t seed)
{
    memset(j, 0, sizeof *j);
    struct ckh_sim_config sc = {.seed = seed};
    ck_assert_int_eq(ckh_sim_create(&sc, &j->sim), 0);
    struct ckh_simfs_config dc = {.name = "shared", .model = CKH_CRASH_POSIX_WEAK, .sector_bytes = 512};
    ck_assert_int_eq(ckh_sim_add_disk(j->sim, &dc, &j->disk), 0);
    ck_assert_int_eq(ckh_ddp_record_create(cfg, &j->rec), 0);
    struct ckh_simfs_mount m = {"/", j->disk};
    for (int r = 0; r < cfg->world; r++) {
        char name[32];
        snprintf(name, sizeof name, "trainer_%d", r);
        j->args[r] = (struct ckh_ddp_node_arg){cfg, r, j->rec};
        struct ckh_node_config nc = {.name = name, .main = ckh_ddp_node_main, .arg = &j->args[r],
                                     .mounts = &m, .nmounts = 1, .rank = r};
        ck_assert_int_eq(ckh_sim_add_node(j->sim, &nc, &j->ids[r]), 0);
    }
}

/* Runs until every node stops; a deadlock (a dead peer) kills the rest. */
static void job_run(struct job *j, int world)
{
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(j->sim, &res), 0);
    if (res.outcome == CKH_SIM_DEADLOCK) {
        for (int r = 0; r < world; r++) {
            struct ckh_node_status st;
            ckh_sim_node_status(j->sim, j->ids[r], &st);
            if (st.state == CKH_NODE_RUNNING)
                ck_assert_int_eq(ckh_sim_kill(j->sim, j->ids[r], false), 0);
        }
    } else {
        ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    }
}

static void job_restart(struct job *j, int world)
{
    ckh_sim_clear_faults(j->sim);
    for (int r = 0; r < world; r++)
        ck_assert_int_eq(ckh_sim_restart(j->sim, j->ids[r]), 0);
    job_run(j, world);
}

static void job_end(struct job *j)
{
    ckh_sim_destroy(j->sim);
}

/* The uninterrupted run of cfg. */
static struct ckh_ddp_record *reference_run(const struct ckh_ddp_config *cfg0)
{
    struct ckh_ddp_config cfg = *cfg0;
    cfg.halt_after_step = 0;
    cfg.defects.bits = 0;
    struct job j;
    job_start(&j, &cfg, 1);
    job_run(&j, cfg.world);
    ck_assert_msg(ckh_ddp_record_finished(j.rec), "reference run failed: %s",
                  j.rec->ranks[0].errmsg);
    struct ckh_ddp_record *rec = j.rec;
    job_end(&j);
    return rec;
}

/* Halts after step `halt`, resumes; returns the record (caller frees). */
static struct ckh_ddp_record *halted_run(struct ckh_ddp_config *cfg, int64_t halt)
{
    struct job j;
    cfg->halt_after_step = halt;
    job_start(&j, cfg, 1);
    job_run(&j, cfg->world);
    cfg->halt_after_step = 0;
    job_restart(&j, cfg->world);
    struct ckh_ddp_record *rec = j.rec;
    job_end(&j);
    return rec;
}

/* ---- judged by the shipped oracles ---- */

/* Runs a ddp-train scenario, `job` (lines under "job:") and `faults` (the
 * faults: section), through the harness; fills *r (caller clears it). */
static void run_scenario(const char *job, const char *faults, struct ckh_report_result *r)
{
    char text[2048];
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    snprintf(text, sizeof text,
             "name: ddp\njob:\n  workload: ddp-train\n  collective_timeout: 5s\n%s%s", job, faults);
    int rc = ckh_scenario_parse_string(text, strlen(text), "ddp.yaml", NULL, &sc, &err);
    ck_assert_msg(rc == 0, "%d:%d: %s\n%s", err.line, err.column, err.msg, text);
    struct ckh_run_options o = {.source_dir = getenv("CKH_SOURCE_DIR")};
    ckh_report_result_init(r);
    ck_assert_int_eq(ckh_harness_run(sc, &o, r), 0);
    ckh_scenario_free(sc);
}

/* The faults: section that kills rank_0 in the gradient all-reduce of the
 * step after `after` (so the state after step `after` is what it lost). */
static const char *kill_after(int64_t after, char *buf, size_t n)
{
    snprintf(buf, n, "faults:\n  - on: {node: rank_0, op: allreduce, phase: epoch, step: %lld}\n"
                     "    do: kill\n", (long long)after);
    return buf;
}

/* The verdict of the shipped resume-equivalence check on r; it must have
 * judged the run. */
static const struct ckh_oracle_result *resume_check(const struct ckh_report_result *r,
                                                    const char *what)
{
    for (size_t i = 0; i < r->noracles; i++)
        if (strcmp(r->oracles[i].name, "resume-equivalence") == 0)
            return &r->oracles[i];
    ck_abort_msg("%s: resume-equivalence did not judge the run (%s)", what,
                 r->message ? r->message : "");
    return NULL;
}

/* Interrupts `job` after step `after`, resumes it: the shipped check
 * finds it bit-identical to the uninterrupted run, in two runs. */
static void expect_same(const char *job, int64_t after, const char *what)
{
    struct ckh_report_result r;
    char faults[160];
    run_scenario(job, kill_after(after, faults, sizeof faults), &r);
    const struct ckh_oracle_result *o = resume_check(&r, what);
    ck_assert_msg(o->passed, "%s: %s", what, o->detail);
    ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s: %s", what, r.message ? r.message : "");
    ck_assert_uint_eq(r.runs, 2);
    ckh_report_result_clear(&r);
}

/* As expect_same, but the shipped check must catch a divergence; returns
 * its detail in buf. */
static void expect_caught(const char *job, int64_t after, const char *what, char *buf, size_t n)
{
    struct ckh_report_result r;
    char faults[160];
    run_scenario(job, kill_after(after, faults, sizeof faults), &r);
    const struct ckh_oracle_result *o = resume_check(&r, what);
    ck_assert_msg(!o->passed, "%s not caught: %s", what, o->detail);
    snprintf(buf, n, "%s", o->detail);
    ckh_report_result_clear(&r);
}

/* Whether a divergence detail ("step 6: weights of rank_0, sampler of
 * rank_0 diverged first (rng, lr equal): ...") names `component` among the
 * quantities that diverged first. */
static bool component_differs(const char *detail, const char *component)
{
    const char *end = strstr(detail, " diverged first");
    ck_assert_msg(end != NULL, "no divergence named in '%s'", detail);
    char key[32];
    snprintf(key, sizeof key, "%s of ", component);
    const char *at = strstr(detail, key);
    return at && at < end;
}

/* The "job:" lines of a ddp-train scenario with cfg's world, epochs,
 * cadence, saver (keep_last -1, unlimited, is 0 there) and data, more
 * options `opts` (", keys: normalize"; NULL: none), then lines `extra`. */
static const char *job_text(const struct ckh_ddp_config *cfg, const char *opts, const char *extra,
                            char *buf, size_t n)
{
    static const char *const strategy[] = {"sync_any", "sync_all", "async"};
    snprintf(buf, n,
             "  nodes: %d\n  epochs: %d\n  checkpoint_every: {steps: %u}\n"
             "  saver: {kind: atomic-dir, keep_last: %d, strategy: %s}\n"
             "  options: {samples: %llu, batch: %u, accum: %u%s}\n%s",
             cfg->world, (int)cfg->epochs, (unsigned)cfg->ckpt_every,
             cfg->keep_last < 0 ? 0 : cfg->keep_last, strategy[cfg->strategy],
             (unsigned long long)cfg->samples, (unsigned)cfg->batch, (unsigned)cfg->accum,
             opts ? opts : "", extra ? extra : "");
    return buf;
}

/* ckh_ddp_record_bytes counts what ckh_ddp_record_create_worlds
 * allocates, for a fixed world and a resized one; 0 where it refuses. */
START_TEST(test_record_bytes)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    const int worlds[][2] = {{2, 2}, {2, 4}, {4, 2}, {1, 1}};
    for (size_t i = 0; i < sizeof worlds / sizeof worlds[0]; i++) {
        cfg.world = worlds[i][0];
        struct ckh_ddp_record *rec = NULL;
        ck_assert_int_eq(ckh_ddp_record_create_worlds(&cfg, worlds[i][1], &rec), 0);
        uint64_t want = sizeof *rec + (uint64_t)rec->world * (rec->max_steps + 1) *
                                          (sizeof(struct ckh_ddp_step_rec) + rec->per_step * sizeof(uint32_t));
        ck_assert_uint_eq(ckh_ddp_record_bytes(&cfg, worlds[i][1]), want);
        ckh_ddp_record_destroy(rec);
    }
    ck_assert_uint_eq(ckh_ddp_record_bytes(&cfg, CKH_DDP_MAX_RANKS + 1), 0);
    cfg.samples = 0;
    ck_assert_uint_eq(ckh_ddp_record_bytes(&cfg, 1), 0);
}
END_TEST

START_TEST(test_schedule_and_sd)
{
    struct ckh_ddp_sched s = {.base_lr = 1.0f, .min_lr = 0.0f, .warmup_steps = 4, .total_steps = 14};
    ck_assert_float_eq(ckh_ddp_sched_lr(&s), 0.25f);
    s.last_step = 3;
    ck_assert_float_eq(ckh_ddp_sched_lr(&s), 1.0f);
    s.last_step = 8;
    ck_assert_float_eq_tol(ckh_ddp_sched_lr(&s), 0.5f, 1e-6f);
    s.last_step = 13;
    ck_assert_float_eq_tol(ckh_ddp_sched_lr(&s), 0.0f, 1e-6f);

    struct ckh_ddp_sd sd, back;
    ckh_ddp_sd_init(&sd, NULL);
    float w[3] = {1, 2, 3};
    ck_assert_int_eq(ckh_ddp_sd_put(&sd, "module.fc1.weight", CKH_DT_F32, 0, w, sizeof w), 0);
    ck_assert_int_eq(ckh_ddp_sd_put(&sd, "module.fc1.weight", CKH_DT_F32, 0, w, sizeof w), CKH_EEXISTS);
    ck_assert_int_eq(ckh_ddp_sd_put(&sd, "x", CKH_DT_F32, 0, w, 5), CKH_EINVAL);
    void *buf;
    size_t n;
    ck_assert_int_eq(ckh_ddp_sd_serialize(&sd, &buf, &n), 0);
    ckh_ddp_sd_init(&back, NULL);
    ck_assert_int_eq(ckh_ddp_sd_parse(&back, buf, n), 0);
    ck_assert_uint_eq(back.count, 1);
    ck_assert_int_eq(back.entries[0].device, 0);
    ckh_ddp_sd_fini(&back);
    ((unsigned char *)buf)[n / 2] ^= 4;
    ck_assert_int_eq(ckh_ddp_sd_parse(&back, buf, n), CKH_ECORRUPT);
    ck_assert_int_eq(ckh_ddp_sd_parse(&back, buf, 12), CKH_ETRUNCATED);
    free(buf);

    /* Strict and normalizing key matching. */
    static const char *const want[] = {"fc1.weight", "fc1.bias"};
    size_t idx[2];
    char msg[256];
    ck_assert_int_eq(ckh_ddp_match_keys(&sd, want, 2, CKH_DDP_KEYS_STRICT, idx, msg, sizeof msg),
                     CKH_EMISMATCH);
    ck_assert_str_eq(msg, "missing keys: [fc1.weight, fc1.bias]; unexpected keys: [module.fc1.weight]");
    ck_assert_int_eq(ckh_ddp_match_keys(&sd, want, 2, CKH_DDP_KEYS_NORMALIZE, idx, msg, sizeof msg),
                     CKH_EMISMATCH);
    ck_assert_str_eq(msg, "missing keys: [fc1.bias]; unexpected keys: []");
    ck_assert_int_eq(ckh_ddp_match_keys(&sd, want, 1, CKH_DDP_KEYS_NORMALIZE, idx, msg, sizeof msg), 0);
    ck_assert_uint_eq(idx[0], 0);
    ckh_ddp_sd_fini(&sd);
}
END_TEST

/* Resume after a kill at every step: world sizes x accumulation. */
START_TEST(test_resume_every_step)
{
    static const int worlds[] = {1, 2, 4, 8};
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = worlds[_i % 4];
    cfg.accum = _i >= 4 ? 4 : 1;
    cfg.batch = 2;
    cfg.samples = 40;
    cfg.epochs = 2;
    cfg.ckpt_every = 3;
    struct ckh_ddp_record *ref = reference_run(&cfg);
    int64_t total = ref->ranks[0].final_step;
    ck_assert_int_eq(total, (int64_t)ckh_ddp_total_steps(&cfg));
    ck_assert_int_eq(ref->ranks[0].final_epoch, 2);
    ckh_ddp_record_destroy(ref);
    char job[512];
    job_text(&cfg, NULL, NULL, job, sizeof job);
    int64_t stride = under_valgrind() ? total / 2 + 1 : 1;
    for (int64_t h = 1; h < total; h += stride) {
        char what[64];
        snprintf(what, sizeof what, "world %d accum %u kill after %lld", cfg.world, cfg.accum,
                 (long long)h);
        expect_same(job, h, what);
    }
}
END_TEST

/* Strategies x keep_last, with a kill mid-epoch and at an epoch end. */
START_TEST(test_strategies)
{
    static const enum ckh_adir_strategy strat[] = {CKH_ADIR_SYNC_ANY, CKH_ADIR_SYNC_ALL,
                                                   CKH_ADIR_ASYNC};
    static const int keeps[] = {1, 2, -1};
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = 2;
    cfg.strategy = strat[_i % 3];
    cfg.keep_last = keeps[_i / 3];
    int64_t per_epoch = (int64_t)ckh_ddp_total_steps(&cfg) / cfg.epochs;
    int64_t halts[] = {per_epoch, per_epoch + 4, 2 * per_epoch - 1};
    char job[512];
    job_text(&cfg, NULL, NULL, job, sizeof job);
    for (int k = 0; k < 3; k++)
        expect_same(job, halts[k], "strategy");
}
END_TEST

/* A machine crash of rank 0 at every operation of one save, then a restart
 * of all ranks: the end is bit-identical to the reference. */
START_TEST(test_crash_every_save_op)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = 2;
    cfg.keep_last = 1;
    char job[512];
    job_text(&cfg, NULL, NULL, job, sizeof job);
    int crashes = 0;
    for (uint64_t k = 1; k < 400; k += under_valgrind() ? 5 : 1) {
        struct ckh_report_result r;
        char faults[160], what[64];
        snprintf(faults, sizeof faults,
                 "faults:\n  - on: {node: rank_0, phase: save, step: 10, nth: %llu}\n    do: crash\n",
                 (unsigned long long)k);
        run_scenario(job, faults, &r);
        bool fired = false;
        for (size_t i = 0; i < r.noracles; i++)
            if (strcmp(r.oracles[i].name, "faults-fired") == 0)
                fired = r.oracles[i].passed;
        if (fired) {
            crashes++;
            snprintf(what, sizeof what, "crash before save op %llu", (unsigned long long)k);
            const struct ckh_oracle_result *o = resume_check(&r, what);
            ck_assert_msg(o->passed, "%s: %s", what, o->detail);
            ck_assert_msg(r.verdict == CKH_VERDICT_PASS, "%s: %s", what, r.message ? r.message : "");
        }
        ckh_report_result_clear(&r);
        if (!fired)
            break;
    }
    ck_assert_int_gt(crashes, 10);
}
END_TEST

/* Without a device mapping every rank loads onto GPU 0: out of memory at
 * 8 ranks with a small capacity; with the mapping the run matches. */
START_TEST(test_device_mapping)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = 8;
    cfg.epochs = 1;
    cfg.samples = 128;
    cfg.ckpt_every = 1;
    struct ckh_ddp_model m;
    ck_assert_int_eq(ckh_ddp_model_init(&m, NULL, &cfg, 0), 0);
    uint64_t mb = ckh_ddp_model_bytes(&m);
    ckh_ddp_model_fini(&m);
    cfg.device_capacity_bytes = 6 * mb; /* own weights + momentum + staging, with room */
    char job[512], extra[64];
    snprintf(extra, sizeof extra, "  gpu_memory: %llu\n", (unsigned long long)cfg.device_capacity_bytes);
    expect_same(job_text(&cfg, NULL, extra, job, sizeof job), 3, "mapped load");

    cfg.no_map_location = true;
    struct ckh_ddp_record *run = halted_run(&cfg, 3);
    ck_assert(!ckh_ddp_record_finished(run));
    int oom = 0;
    for (int r = 0; r < cfg.world; r++) {
        if (run->ranks[r].status == CKH_EOOM_DEVICE) {
            oom++;
            ck_assert_msg(strstr(run->ranks[r].errmsg, "GPU 0 out of memory") != NULL, "%s",
                          run->ranks[r].errmsg);
        }
    }
    ck_assert_int_gt(oom, 0);
    ck_assert_uint_ge(run->devices.peak[0], 5 * mb);
    ckh_ddp_record_destroy(run);
    cfg.no_map_location = false;

    /* The defect with room enough: no OOM, but the loaded state lands on
     * GPU 0 and the run diverges. */
    cfg.device_capacity_bytes = 0;
    cfg.world = 2;
    char detail[512];
    expect_caught(job_text(&cfg, NULL, "  defects: [no-device-map]\n", job, sizeof job), 3,
                  "no-device-map", detail, sizeof detail);
}
END_TEST

START_TEST(test_module_prefix)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    ckh_defect_enable(&cfg.defects, CKH_DEFECT_MODULE_PREFIX_SAVED);
    struct ckh_ddp_record *run = halted_run(&cfg, 6);
    ck_assert(!ckh_ddp_record_finished(run));
    ck_assert_int_eq(run->ranks[1].status, CKH_EMISMATCH);
    ck_assert_msg(strstr(run->ranks[1].errmsg, "missing keys: [fc1.weight, fc1.bias, fc2.weight, "
                                               "fc2.bias]; unexpected keys: [module.fc1.weight") != NULL,
                  "%s", run->ranks[1].errmsg);
    ckh_ddp_record_destroy(run);
    char job[512];
    job_text(&cfg, ", keys: normalize", "  defects: [module-prefix-saved]\n", job, sizeof job);
    expect_same(job, 6, "normalizing load");
}
END_TEST

/* Each DDP defect makes a mid-epoch resume differ from the reference; the
 * two that lose the sampler's place show in its state. */
START_TEST(test_ddp_defects_caught)
{
    static const enum ckh_defect defects[] = {
        CKH_DEFECT_SAMPLER_PROGRESS_NOT_SAVED, CKH_DEFECT_RNG_NOT_SAVED,
        CKH_DEFECT_SCHEDULER_REBUILT_AFTER_OPTIMIZER, CKH_DEFECT_RESUME_EPOCH_FROM_START};
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    char job[512], extra[96], detail[512];
    snprintf(extra, sizeof extra, "  defects: [%s]\n", ckh_defect_name(defects[_i]));
    expect_caught(job_text(&cfg, NULL, extra, job, sizeof job), 5, ckh_defect_name(defects[_i]), detail,
                  sizeof detail);
    if (defects[_i] == CKH_DEFECT_SAMPLER_PROGRESS_NOT_SAVED ||
        defects[_i] == CKH_DEFECT_RESUME_EPOCH_FROM_START)
        ck_assert_msg(component_differs(detail, "sampler"), "%s", detail);
    if (defects[_i] == CKH_DEFECT_RNG_NOT_SAVED)
        ck_assert_msg(component_differs(detail, "rng"), "%s", detail);
}
END_TEST

/* Runs cfg with w0 ranks until the halt after step `halt`, then resumes it
 * with w1 ranks (resharding, as the harness does for restart.world_size):
 * nodes beyond the current world are parked with rank -1. Returns the
 * record (caller frees); *trace_hash receives the trace's hash. */
static struct ckh_ddp_record *resized_run_opt(const struct ckh_ddp_config *cfg0, int w1, int64_t halt,
                                              bool reshard, uint64_t *trace_hash)
{
    struct ckh_ddp_config cfg = *cfg0;
    int w0 = cfg.world, n = w0 > w1 ? w0 : w1;
    struct ckh_sim_config sc = {.seed = 3};
    struct ckh_sim *sim = NULL;
    struct ckh_simfs *disk = NULL;
    struct ckh_ddp_record *rec = NULL;
    struct ckh_ddp_node_arg args[CKH_DDP_MAX_RANKS];
    ck_assert_int_eq(ckh_sim_create(&sc, &sim), 0);
    struct ckh_simfs_config dc = {.name = "shared", .model = CKH_CRASH_POSIX_WEAK, .sector_bytes = 512};
    ck_assert_int_eq(ckh_sim_add_disk(sim, &dc, &disk), 0);
    ck_assert_int_eq(ckh_ddp_record_create_worlds(&cfg, w1, &rec), 0);
    ck_assert_int_eq(rec->world, n);
    struct ckh_simfs_mount m = {"/", disk};
    for (int r = 0; r < n; r++) {
        char name[32];
        snprintf(name, sizeof name, "trainer_%d", r);
        args[r] = (struct ckh_ddp_node_arg){&cfg, r, rec};
        struct ckh_node_config nc = {.name = name, .main = ckh_ddp_node_main, .arg = &args[r],
                                     .mounts = &m, .nmounts = 1, .rank = r < w0 ? r : -1};
        ck_assert_int_eq(ckh_sim_add_node(sim, &nc, NULL), 0);
        if (r >= w0)
            ck_assert_int_eq(ckh_sim_park(sim, r), 0);
    }
    cfg.halt_after_step = halt;
    struct ckh_sim_result res;
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    for (int r = 0; r < w0; r++)
        ck_assert_int_eq(rec->ranks[r].status, CKH_EKILLED);
    cfg.halt_after_step = 0;
    cfg.world = w1;
    cfg.reshard = reshard;
    for (int r = 0; r < n; r++)
        ck_assert_int_eq(ckh_sim_set_rank(sim, r, -1), 0);
    for (int r = 0; r < n; r++) {
        if (r < w1) {
            ck_assert_int_eq(ckh_sim_set_rank(sim, r, r), 0);
            ck_assert_int_eq(ckh_sim_restart(sim, r), 0);
        } else {
            ck_assert_int_eq(ckh_sim_park(sim, r), 0);
        }
    }
    ck_assert_int_eq(ckh_sim_run(sim, &res), 0);
    ck_assert_int_eq(res.outcome, CKH_SIM_DONE);
    *trace_hash = ckh_sim_trace_hash(sim);
    ckh_sim_destroy(sim);
    return rec;
}

static struct ckh_ddp_record *resized_run(const struct ckh_ddp_config *cfg0, int w1, int64_t halt,
                                          uint64_t *trace_hash)
{
    return resized_run_opt(cfg0, w1, halt, true, trace_hash);
}

/* Grow 2 -> 4 and shrink 4 -> 2 after a halt mid-epoch: the new world
 * finishes from the checkpoint, the record forgets what came after the
 * resume step (for parked ranks too), new ranks start from their fresh
 * streams, every epoch reads each sample once (64 samples: no padding at 2
 * or 4 ranks), and the whole thing is deterministic. */
START_TEST(test_world_size_change)
{
    static const int w[][2] = {{2, 4}, {4, 2}};
    int w0 = w[_i][0], w1 = w[_i][1];
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = w0;
    cfg.ckpt_every = 3;
    int64_t halt = w0 == 2 ? 11 : 7; /* checkpoint at 9 (epoch 1) or 6 (epoch 1) */
    int64_t resume = w0 == 2 ? 9 : 6;
    uint64_t hash, hash_again;
    struct ckh_ddp_record *rec = resized_run(&cfg, w1, halt, &hash);
    for (int r = 0; r < w1; r++) {
        const struct ckh_ddp_rank_rec *rr = &rec->ranks[r];
        ck_assert_msg(rr->finished, "rank %d: %s", r, rr->errmsg);
        ck_assert_int_eq(rr->resumed_step, resume);
        ck_assert_int_eq(rr->final_epoch, 3);
    }
    for (int r = 0; r < rec->world; r++)
        for (uint64_t s = 1; s <= rec->max_steps; s++) {
            bool valid = rec->ranks[r].steps[s].valid;
            bool ran = (int64_t)s <= resume ? r < w0 : r < w1 && (int64_t)s <= rec->ranks[0].final_step;
            ck_assert_msg(valid == ran, "rank %d step %llu: valid %d", r, (unsigned long long)s, valid);
        }
    /* Each epoch: every sample exactly once (64 divides by 2 and 4). */
    for (int64_t e = 0; e < 3; e++) {
        uint32_t counts[64] = {0};
        for (int r = 0; r < rec->world; r++)
            for (uint64_t s = 1; s <= rec->max_steps; s++) {
                if (!rec->ranks[r].steps[s].valid || rec->ranks[r].steps[s].epoch != e)
                    continue;
                const uint32_t *ids = rec->ranks[r].samples + s * rec->per_step;
                for (uint32_t k = 0; k < rec->per_step; k++)
                    if (ids[k] < 64)
                        counts[ids[k]]++;
            }
        for (int i = 0; i < 64; i++)
            ck_assert_msg(counts[i] == 1, "epoch %lld sample %d read %u times", (long long)e, i,
                          counts[i]);
    }
    /* A new rank's stream is its own (not a copy of an old rank's). */
    if (w1 > w0) {
        int64_t s = resume + 1;
        ck_assert_uint_ne(rec->ranks[w0].steps[s].rng, rec->ranks[0].steps[s].rng);
        ck_assert_uint_ne(rec->ranks[w0].steps[s].rng, rec->ranks[w0 + 1].steps[s].rng);
    }
    /* Deterministic: the same trace, and every rank ends in the same state. */
    struct ckh_ddp_record *again = resized_run(&cfg, w1, halt, &hash_again);
    ck_assert_uint_eq(hash, hash_again);
    for (int r = 0; r < rec->world; r++) {
        const struct ckh_ddp_rank_rec *a = &rec->ranks[r], *b = &again->ranks[r];
        ck_assert_int_eq(a->final_step, b->final_step);
        ck_assert_uint_eq(a->final.weights, b->final.weights);
        ck_assert_uint_eq(a->final.optim, b->final.optim);
        ck_assert_uint_eq(a->final.rng, b->final.rng);
        ck_assert_uint_eq(a->final.sampler, b->final.sampler);
    }
    ckh_ddp_record_destroy(again);
    ckh_ddp_record_destroy(rec);
}
END_TEST


/* With resharding off, a checkpoint of another world size is refused by
 * every rank of the new world, by name, and nothing is trained. */
START_TEST(test_reshard_off_refused)
{
    static const int w[][2] = {{2, 4}, {4, 2}};
    int w0 = w[_i][0], w1 = w[_i][1];
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = w0;
    cfg.ckpt_every = 3;
    cfg.ckpt_epoch_end = false;
    int64_t halt = w0 == 2 ? 11 : 7, resume = w0 == 2 ? 9 : 6;
    uint64_t hash;
    struct ckh_ddp_record *rec = resized_run_opt(&cfg, w1, halt, false, &hash);
    char want[200];
    snprintf(want, sizeof want,
             "checkpoint /ckpt/ddp_checkpoint_%lld was saved by %d ranks; this job has %d and "
             "resharding is off",
             (long long)(resume / 3), w0, w1);
    for (int r = 0; r < w1; r++) {
        const struct ckh_ddp_rank_rec *rr = &rec->ranks[r];
        ck_assert_int_eq(rr->status, CKH_EMISMATCH);
        ck_assert(!rr->finished);
        ck_assert_str_eq(rr->errmsg, want);
        ck_assert_int_eq(rr->resumed_step, -1);
        ck_assert(!rr->steps[halt + 1].valid);
    }
    ckh_ddp_record_destroy(rec);
}
END_TEST

/* ---- the record API ---- */

#define LOG_STEPS 128
#define LOG_SAVES 32

/* What one rank reported (outside node memory). */
struct rank_log {
    struct ckh_record base;              /* must be first */
    int steps;                           /* step records */
    int64_t step_no[LOG_STEPS];          /* their steps, in order */
    uint64_t digest[LOG_STEPS + 1][4];   /* by step: weights, optim, rng, sampler */
    double lr[LOG_STEPS + 1];            /* by step */
    size_t nsamples[LOG_STEPS + 1];      /* by step */
    bool malformed;                      /* a step record without the expected names */
    int resumes;                         /* resume records */
    int64_t resume_step, resume_epoch;   /* the last one */
    int saves;                           /* save records */
    int save_rc[LOG_SAVES];              /* their results */
    char save_what[LOG_SAVES][200];      /* their messages */
    int finals;                          /* final records */
    struct ckh_rec_final final;          /* the last one (no pointers kept) */
};

static int log_step(struct ckh_record *r, const struct ckh_rec_step *s)
{
    struct rank_log *l = (struct rank_log *)r;
    static const char *const names[] = {"weights", "optim", "rng", "sampler"};
    if (l->steps >= LOG_STEPS || s->step > LOG_STEPS)
        return CKH_ELIMIT;
    l->step_no[l->steps++] = s->step;
    if (s->ndigests != 4 || s->nvalues != 1 || strcmp(s->values[0].name, "lr") != 0)
        l->malformed = true;
    for (size_t i = 0; i < 4 && i < s->ndigests; i++) {
        if (strcmp(s->digests[i].name, names[i]) != 0)
            l->malformed = true;
        l->digest[s->step][i] = s->digests[i].digest;
    }
    l->lr[s->step] = s->nvalues ? s->values[0].value : -1;
    l->nsamples[s->step] = s->nsamples;
    return 0;
}

static int log_resume(struct ckh_record *r, const struct ckh_rec_resume *s)
{
    struct rank_log *l = (struct rank_log *)r;
    l->resumes++;
    l->resume_step = s->step;
    l->resume_epoch = s->epoch;
    return 0;
}

static int log_save(struct ckh_record *r, const struct ckh_rec_save *s)
{
    struct rank_log *l = (struct rank_log *)r;
    if (l->saves >= LOG_SAVES)
        return CKH_ELIMIT;
    l->save_rc[l->saves] = s->rc;
    snprintf(l->save_what[l->saves], sizeof l->save_what[0], "%s", s->what ? s->what : "");
    l->saves++;
    return 0;
}

static int log_final(struct ckh_record *r, const struct ckh_rec_final *s)
{
    struct rank_log *l = (struct rank_log *)r;
    l->finals++;
    l->final = *s;
    l->final.values = NULL;
    l->final.blobs = NULL;
    return 0;
}

static const struct ckh_record_ops log_ops = {
    .version = 1, .step = log_step, .resume = log_resume, .save = log_save, .final = log_final};

/* A node of a recorded job: the record table set on its env, then
 * ddp-train. */
struct rec_node {
    struct ckh_ddp_node_arg na; /* ddp-train's argument */
    struct rank_log *log;       /* where this rank reports */
};

static int rec_main(struct ckh_env *env, void *arg)
{
    struct rec_node *rn = arg;
    env->record = &rn->log->base;
    return ckh_ddp_node_main(env, &rn->na);
}

struct rjob {
    struct ckh_sim *sim;                     /* the simulator */
    struct ckh_ddp_record *rec;              /* ddp-train's own record */
    struct rank_log logs[CKH_DDP_MAX_RANKS]; /* what each rank reported */
    struct rec_node nodes[CKH_DDP_MAX_RANKS]; /* node args */
    int ids[CKH_DDP_MAX_RANKS];              /* node ids */
    int world;                               /* ranks */
};

/* A job of cfg whose ranks report to j->logs; checkpoints on one shared
 * disk at "/", or (local) on a node-local disk per rank at "/ckpt". */
static struct rjob *rjob_start(struct ckh_ddp_config *cfg, bool local)
{
    struct rjob *j = calloc(1, sizeof *j);
    ck_assert_ptr_nonnull(j);
    j->world = cfg->world;
    struct ckh_sim_config sc = {.seed = 1};
    ck_assert_int_eq(ckh_sim_create(&sc, &j->sim), 0);
    struct ckh_simfs_config dc = {.name = "shared", .model = CKH_CRASH_POSIX_WEAK, .sector_bytes = 512};
    struct ckh_simfs *shared;
    ck_assert_int_eq(ckh_sim_add_disk(j->sim, &dc, &shared), 0);
    ck_assert_int_eq(ckh_ddp_record_create(cfg, &j->rec), 0);
    for (int r = 0; r < cfg->world; r++) {
        char name[32];
        struct ckh_simfs_mount m[2] = {{"/", shared}, {"/ckpt", NULL}};
        size_t nm = 1;
        if (local) {
            snprintf(name, sizeof name, "local.rank_%d", r);
            struct ckh_simfs_config lc = {.name = name, .model = CKH_CRASH_POSIX_WEAK,
                                          .sector_bytes = 512};
            ck_assert_int_eq(ckh_sim_add_disk(j->sim, &lc, &m[1].disk), 0);
            nm = 2;
        }
        snprintf(name, sizeof name, "rank_%d", r);
        j->logs[r].base.ops = &log_ops;
        j->nodes[r] = (struct rec_node){{cfg, r, j->rec}, &j->logs[r]};
        struct ckh_node_config nc = {.name = name, .main = rec_main, .arg = &j->nodes[r],
                                     .mounts = m, .nmounts = nm, .rank = r};
        ck_assert_int_eq(ckh_sim_add_node(j->sim, &nc, &j->ids[r]), 0);
    }
    return j;
}

/* Runs until every rank stops (ranks left blocked are killed); a second
 * call restarts every rank first. */
static void rjob_run(struct rjob *j, bool restart)
{
    struct ckh_sim_result res;
    for (int r = 0; restart && r < j->world; r++)
        ck_assert_int_eq(ckh_sim_restart(j->sim, j->ids[r]), 0);
    ck_assert_int_eq(ckh_sim_run(j->sim, &res), 0);
    for (int r = 0; r < j->world; r++) {
        struct ckh_node_status st;
        ckh_sim_node_status(j->sim, j->ids[r], &st);
        if (st.state == CKH_NODE_RUNNING)
            ck_assert_int_eq(ckh_sim_kill(j->sim, j->ids[r], false), 0);
    }
}

static void rjob_end(struct rjob *j)
{
    ckh_sim_destroy(j->sim);
    ckh_ddp_record_destroy(j->rec);
    free(j);
}

/* Checks rank r's step records against ddp-train's own record. */
static void expect_steps_match(const struct rjob *j, int r, int64_t from, int64_t to)
{
    const struct rank_log *l = &j->logs[r];
    const struct ckh_ddp_rank_rec *rr = &j->rec->ranks[r];
    ck_assert(!l->malformed);
    for (int64_t s = from; s <= to; s++) {
        const struct ckh_ddp_step_rec *sr = &rr->steps[s];
        float lr;
        uint32_t bits = (uint32_t)sr->lr_bits;
        memcpy(&lr, &bits, sizeof lr);
        ck_assert_uint_eq(l->digest[s][0], sr->weights);
        ck_assert_uint_eq(l->digest[s][1], sr->optim);
        ck_assert_uint_eq(l->digest[s][2], sr->rng);
        ck_assert_uint_eq(l->digest[s][3], sr->sampler);
        ck_assert(l->lr[s] == (double)lr);
        ck_assert_uint_eq(l->nsamples[s], j->rec->per_step);
    }
}

/* Every optimizer step gives one step record per rank, each save one save
 * record per rank, the end one final record; after a halt and a restart,
 * a resume record names the checkpoint and the replayed steps are
 * recorded again. */
START_TEST(test_records_emitted)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg); /* 24 steps; saves at 5, 8, 10, 15, 16, 20, 24 */
    int64_t total = (int64_t)ckh_ddp_total_steps(&cfg);
    ck_assert_int_eq(total, 24);
    struct rjob *j = rjob_start(&cfg, false);
    rjob_run(j, false);
    for (int r = 0; r < cfg.world; r++) {
        const struct rank_log *l = &j->logs[r];
        ck_assert_msg(j->rec->ranks[r].finished, "%s", j->rec->ranks[r].errmsg);
        ck_assert_int_eq(l->steps, total);
        for (int k = 0; k < l->steps; k++)
            ck_assert_int_eq(l->step_no[k], k + 1);
        expect_steps_match(j, r, 1, total);
        ck_assert_int_eq(l->resumes, 0);
        ck_assert_int_eq(l->saves, 7);
        for (int k = 0; k < l->saves; k++) {
            ck_assert_int_eq(l->save_rc[k], 0);
            ck_assert_msg(strncmp(l->save_what[k], "/ckpt/ddp_checkpoint_", 21) == 0, "%s",
                          l->save_what[k]);
        }
        ck_assert_int_eq(l->finals, 1);
        ck_assert_int_eq(l->final.steps, total);
        ck_assert_int_eq(l->final.total, total);
        ck_assert_int_eq(l->final.epochs, 3);
        ck_assert(l->final.has_digest);
    }
    /* Ranks hold the same weights, on their own devices: digests differ. */
    ck_assert_uint_ne(j->logs[0].final.digest, j->logs[1].final.digest);
    uint64_t final0 = j->logs[0].final.digest;
    rjob_end(j);

    cfg.halt_after_step = 7;
    j = rjob_start(&cfg, false);
    rjob_run(j, false);
    cfg.halt_after_step = 0;
    rjob_run(j, true);
    for (int r = 0; r < cfg.world; r++) {
        const struct rank_log *l = &j->logs[r];
        ck_assert_msg(j->rec->ranks[r].finished, "%s", j->rec->ranks[r].errmsg);
        ck_assert_int_eq(l->resumes, 1);
        ck_assert_int_eq(l->resume_step, 5);
        ck_assert_int_eq(l->resume_epoch, 0);
        ck_assert_int_eq(l->steps, 7 + (total - 5));
        ck_assert_int_eq(l->step_no[7], 6); /* the replay starts after the checkpoint */
        expect_steps_match(j, r, 1, total);
        ck_assert_int_eq(l->finals, 1);
        ck_assert_int_eq(l->final.steps, total);
    }
    ck_assert_uint_eq(j->logs[0].final.digest, final0);
    rjob_end(j);
}
END_TEST

/* ---- node-local disks, and the old master-only saver ---- */

/* The atomic directory saver as it was before it learned node-local
 * disks: only rank 0 (the master) makes the folder and writes the marker
 * and the pointer; every rank reads the pointer of its own view. Written
 * as a user's saver plugin would be, through cfg->saver. */
struct master_only {
    struct ckh_saver base; /* must be first */
    struct ckh_env *env;   /* the rank's environment */
    struct ckh_env solo;   /* the same without collectives: a one-rank saver */
    struct ckh_adir *d;    /* this rank's saver over its own view */
    uint64_t timeout_ns;   /* collective timeout */
};

static int mo_create(struct ckh_env *env, const struct ckh_saver_config *cfg, struct ckh_saver **out)
{
    struct master_only *m = ckh_calloc(env->alloc, 1, sizeof *m);
    if (!m)
        return CKH_ENOMEM;
    m->env = env;
    m->solo = *env;
    m->solo.coll = NULL;
    m->timeout_ns = cfg->timeout_ns;
    struct ckh_adir_config ac = {.output_dir = cfg->output_dir, .is_master = true,
                                 .name = cfg->name, .keep_last = cfg->keep_last,
                                 .timeout_ns = cfg->timeout_ns};
    int rc = ckh_adir_create(&m->solo, &ac, &m->d);
    if (rc) {
        ckh_free(env->alloc, m);
        return rc;
    }
    m->base.ops = NULL; /* the wrapper fills it in */
    *out = &m->base;
    return 0;
}

static void mo_destroy(struct ckh_saver *s)
{
    struct master_only *m = (struct master_only *)s;
    ckh_adir_destroy(m->d);
    ckh_free(m->env->alloc, m);
}

static int mo_prepare(struct ckh_saver *s, bool force, char *buf, size_t n)
{
    struct master_only *m = (struct master_only *)s;
    struct {
        int32_t status;
        char folder[CKH_PATH_MAX + 1];
    } msg;
    memset(&msg, 0, sizeof msg);
    if (ckh_coll_rank(m->env->coll) == 0)
        msg.status = ckh_adir_prepare(m->d, force, msg.folder, sizeof msg.folder);
    int rc = ckh_coll_broadcast(m->env->coll, &msg, sizeof msg, 0, m->timeout_ns);
    if (rc || msg.status)
        return rc ? rc : msg.status;
    snprintf(buf, n, "%s", msg.folder);
    return 0;
}

static int mo_commit(struct ckh_saver *s, const char *folder)
{
    struct master_only *m = (struct master_only *)s;
    int32_t st = ckh_coll_rank(m->env->coll) == 0 ? ckh_adir_commit(m->d, folder) : 0;
    int rc = ckh_coll_broadcast(m->env->coll, &st, sizeof st, 0, m->timeout_ns);
    return rc ? rc : st;
}

static int mo_latest(struct ckh_saver *s, char *buf, size_t n)
{
    return ckh_adir_latest(((struct master_only *)s)->d, buf, n);
}

static const struct ckh_saver_ops master_only_ops = {
    .version = 1, .name = "master-only", .create = mo_create, .destroy = mo_destroy,
    .prepare = mo_prepare, .commit = mo_commit, .latest = mo_latest};

/* Checkpoints on node-local disks, halted after step 7 and resumed. The
 * atomic directory saver: every save succeeds on every rank, both ranks
 * resume from step 5, each from its own disk, and the end is the
 * uninterrupted run's. The old master-only protocol (a user's saver,
 * through cfg->saver): every save fails (rank 1 has no folder: ENOENT)
 * though no fault is armed, and the restart loses every step. */
START_TEST(test_node_local_saves)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    struct ckh_ddp_record *ref = reference_run(&cfg);
    int64_t total = ref->ranks[0].final_step;
    for (int old = 0; old < 2; old++) {
        cfg.saver = old ? &master_only_ops : NULL;
        cfg.halt_after_step = 7;
        struct rjob *j = rjob_start(&cfg, true);
        rjob_run(j, false);
        cfg.halt_after_step = 0;
        rjob_run(j, true);
        int failed = 0;
        for (int r = 0; r < cfg.world; r++) {
            const struct rank_log *l = &j->logs[r];
            const struct ckh_ddp_rank_rec *rr = &j->rec->ranks[r];
            ck_assert_msg(rr->finished, "%s saver, rank %d: %s", old ? "old" : "atomic-dir", r,
                          rr->errmsg);
            /* Step 5 before the halt, then 8..24 (old: 5..24 from scratch). */
            ck_assert_int_eq(l->saves, old ? 1 + 7 : 1 + 6);
            for (int k = 0; k < l->saves; k++)
                failed += l->save_rc[k] != 0;
            ck_assert_int_eq(rr->final_step, total);
            if (!old) {
                ck_assert_int_eq(l->resumes, 1);
                ck_assert_int_eq(l->resume_step, 5);
                ck_assert_int_eq(rr->resumed_step, 5);
                ck_assert_uint_eq(rr->final.weights, ref->ranks[r].final.weights);
                ck_assert_uint_eq(rr->final.rng, ref->ranks[r].final.rng);
                ck_assert_uint_eq(rr->final.sampler, ref->ranks[r].final.sampler);
            } else {
                /* Nothing was ever committed: a restart from scratch. */
                ck_assert_int_eq(rr->resumed_step, -1);
                ck_assert_int_eq(l->resume_step, 0);
                ck_assert_int_eq(l->steps, 7 + total);
            }
        }
        if (!old) {
            ck_assert_int_eq(failed, 0);
        } else {
            ck_assert_int_eq(failed, 2 * 8);
            const struct rank_log *l1 = &j->logs[1];
            ck_assert_int_eq(l1->save_rc[0], -ENOENT);
            ck_assert_msg(strstr(l1->save_what[0], "rng_rank_1.ckh") != NULL, "%s", l1->save_what[0]);
            ck_assert_msg(strstr(j->logs[0].save_what[0], "another rank could not write") != NULL,
                          "%s", j->logs[0].save_what[0]);
        }
        rjob_end(j);
    }
    ckh_ddp_record_destroy(ref);
}
END_TEST

START_TEST(test_record_worlds_and_forget)
{
    struct ckh_ddp_config cfg;
    ckh_ddp_config_default(&cfg);
    cfg.world = 4;
    struct ckh_ddp_record *r = NULL;
    ck_assert_int_eq(ckh_ddp_record_create_worlds(&cfg, 0, &r), CKH_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(ckh_ddp_record_create_worlds(&cfg, CKH_DDP_MAX_RANKS + 1, &r), CKH_EINVAL);
    ck_assert_int_eq(ckh_ddp_record_create_worlds(NULL, 2, &r), CKH_EINVAL);
    /* 64 samples, batch 4: 8 steps per epoch at 2 ranks, 4 at 4. */
    ck_assert_int_eq(ckh_ddp_record_create_worlds(&cfg, 2, &r), 0);
    ck_assert_int_eq(r->world, 4);
    ck_assert_uint_eq(r->max_steps, 24 * 2 + 2 + 8 + 1);
    r->ranks[1].steps[3].valid = true;
    r->ranks[1].steps[5].valid = true;
    r->ranks[1].samples[5 * r->per_step] = 7;
    ckh_ddp_record_forget_after(r, 1, 4);
    ck_assert(r->ranks[1].steps[3].valid);
    ck_assert(!r->ranks[1].steps[5].valid);
    ck_assert_uint_eq(r->ranks[1].samples[5 * r->per_step], UINT32_MAX);
    ckh_ddp_record_forget_after(r, 9, 0); /* no such rank: no-op */
    ckh_ddp_record_forget_after(NULL, 0, 0);
    ckh_ddp_record_destroy(r);
    ck_assert_int_eq(ckh_ddp_record_create(&cfg, &r), 0);
    ck_assert_uint_eq(r->max_steps, 12 * 2 + 2);
    ckh_ddp_record_destroy(r);
}
END_TEST

static Suite *ddp_suite(void)
{
    Suite *s = suite_create("ddp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_schedule_and_sd);
    tcase_add_loop_test(tc, test_resume_every_step, 0, 8);
    tcase_add_loop_test(tc, test_strategies, 0, 9);
    tcase_add_test(tc, test_crash_every_save_op);
    tcase_add_test(tc, test_device_mapping);
    tcase_add_test(tc, test_module_prefix);
    tcase_add_loop_test(tc, test_ddp_defects_caught, 0, 4);
    tcase_add_loop_test(tc, test_world_size_change, 0, 2);
    tcase_add_test(tc, test_record_worlds_and_forget);
    tcase_add_loop_test(tc, test_reshard_off_refused, 0, 2);
    tcase_add_test(tc, test_records_emitted);
    tcase_add_test(tc, test_record_bytes);
    tcase_add_test(tc, test_node_local_saves);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ddp_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
