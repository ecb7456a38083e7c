/* Tests for harness/model/scenario.c and harness/model/scenario_dir.c: the scenario
 * format of docs/SCENARIOS.md. Every feature is parsed with exact expected
 * values; every error path is checked for its code, file:line:column and
 * message (typo suggestions included). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "model/scenario.h"

static const char *const workloads[] = {"seed-pipeline", "param-server", "ddp-train"};
static const char *const backends[] = {"minidb"};
static const char *const savers[] = {"atomic-dir"};
static const char *const defects[] = {"skip-fsync", "no-dir-fsync", "early-latest"};
static const char *const oracles[] = {"totals", "latest", "liveness", "resume"};

static const struct ckh_scn_options opts = {
    .workloads = {workloads, 3},
    .backends = {backends, 1},
    .savers = {savers, 1},
    .defects = {defects, 3},
    .oracles = {oracles, 4},
};

static struct ckh_scenario *parse_ok(const char *text)
{
    struct ckh_scenario *s = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_string(text, strlen(text), "t.yaml", &opts, &s, &err);
    ck_assert_msg(rc == 0, "parse failed: %d %d:%d %s", rc, err.line, err.column, err.msg);
    ck_assert_ptr_nonnull(s);
    return s;
}

static char data_path_buf[1024];

static const char *data_path(const char *rel)
{
    const char *src = getenv("CKH_SOURCE_DIR");
    snprintf(data_path_buf, sizeof(data_path_buf), "%s/tests/data/scenarios/%s",
             src ? src : "..", rel);
    return data_path_buf;
}

/* ---- good input ---- */

START_TEST(test_full_file)
{
    struct ckh_scenario *s = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_file(data_path("good/full.yaml"), &opts, &s, &err);
    ck_assert_msg(rc == 0, "%s:%d:%d: %s", err.file, err.line, err.column, err.msg);
    ck_assert_str_eq(s->name, "full-example");
    ck_assert_str_eq(s->description, "kill a trainer while it writes its shard, then resume");
    ck_assert_uint_eq(s->seed, 42);
    ck_assert_uint_eq(s->ntags, 3);
    ck_assert_str_eq(s->tags[0], "ddp");
    ck_assert_str_eq(s->tags[2], "smoke");

    const struct ckh_scn_job *j = &s->job;
    ck_assert_str_eq(j->workload, "ddp-train");
    ck_assert_uint_eq(j->nodes, 4);
    ck_assert_uint_eq(j->epochs, 5);
    ck_assert_uint_eq(j->steps, 200);
    ck_assert_str_eq(j->backend, "minidb");
    ck_assert_str_eq(j->saver.kind, "atomic-dir");
    ck_assert_uint_eq(j->saver.keep_last, 2);
    ck_assert_int_eq(j->saver.strategy, CKH_SCN_SYNC_ANY);
    ck_assert_str_eq(j->saver.name, "model");
    ck_assert_str_eq(j->checkpoint_dir, "/shared/ckpt");
    ck_assert_uint_eq(j->every_steps, 50);
    ck_assert_uint_eq(j->every_epochs, 0);
    ck_assert_uint_eq(j->collective_timeout_ns, 2000000000ull);
    ck_assert_uint_eq(j->gpu_mem_bytes, 16ull << 30);
    ck_assert_uint_eq(j->ndefects, 2);
    ck_assert_str_eq(j->defects[0], "skip-fsync");
    ck_assert_str_eq(j->defects[1], "no-dir-fsync");

    ck_assert_uint_eq(j->noptions, 4);
    ck_assert_str_eq(j->options[0].key, "batch");
    ck_assert_int_eq(j->options[0].type, CKH_SCN_INT);
    ck_assert_int_eq(j->options[0].i, 32);
    ck_assert_int_eq(j->options[0].line, 25);
    ck_assert_int_eq(j->options[0].column, 12);
    ck_assert_str_eq(j->options[1].key, "lr");
    ck_assert_int_eq(j->options[1].type, CKH_SCN_FLOAT);
    ck_assert(j->options[1].f == 0.125);
    ck_assert_int_eq(j->options[2].type, CKH_SCN_BOOL);
    ck_assert(j->options[2].b);
    ck_assert_int_eq(j->options[3].type, CKH_SCN_STR); /* quoted stays a string */
    ck_assert_str_eq(j->options[3].text, "007");
    ck_assert_int_eq(j->options[3].line, 28);

    ck_assert_uint_eq(j->ndisks, 2);
    ck_assert_str_eq(j->disks[0].name, "shared");
    ck_assert_str_eq(j->disks[0].mount, "/shared");
    ck_assert(j->disks[0].shared);
    ck_assert_int_eq(j->disks[0].model, CKH_CRASH_EXT4_ORDERED);
    ck_assert_uint_eq(j->disks[0].sector_bytes, 512);
    ck_assert_uint_eq(j->disks[0].capacity_bytes, 1ull << 30);
    ck_assert_uint_eq(j->disks[0].latency_ns, 2000000);
    ck_assert_uint_eq(j->disks[0].ns_per_kib, 953); /* 1024e9 / 2^30 */
    ck_assert_int_eq(j->disks[0].line, 30);
    ck_assert_str_eq(j->disks[1].name, "local");
    ck_assert(!j->disks[1].shared);
    ck_assert_int_eq(j->disks[1].model, CKH_CRASH_POSIX_WEAK);
    ck_assert_uint_eq(j->disks[1].sector_bytes, 4096);
    ck_assert_uint_eq(j->disks[1].capacity_bytes, 512ull << 20);
    ck_assert_uint_eq(j->disks[1].latency_ns, 100000);
    ck_assert_uint_eq(j->disks[1].ns_per_kib, 250);

    ck_assert_uint_eq(s->nfaults, 6);
    const struct ckh_scn_fault *f = &s->faults[0];
    ck_assert_int_eq(f->line, 46);
    ck_assert_int_eq(f->column, 5);
    ck_assert_int_eq(f->on.node, 1);
    ck_assert_ptr_null(f->on.node_name);
    ck_assert_int_eq(f->on.op, CKH_OP_PWRITE);
    ck_assert_str_eq(f->on.path, "/shared/ckpt/*");
    ck_assert_str_eq(f->on.phase, "save");
    ck_assert_uint_eq(f->on.nth, 2);
    ck_assert_uint_eq(f->on.run, 1);
    ck_assert(!f->on.repeat);
    ck_assert(!f->at_rest);
    ck_assert_int_eq(f->act.kind, CKH_SCN_ACT_KILL);
    ck_assert_int_eq(f->act.u.kill.when, CKH_SCN_KILL_MID_WRITE);
    ck_assert(f->act.u.kill.at_is_fraction);
    ck_assert(f->act.u.kill.at_fraction == 0.25);

    f = &s->faults[1];
    ck_assert_int_eq(f->on.node, -1);
    ck_assert_str_eq(f->on.node_name, "trainer_2");
    ck_assert_int_eq(f->on.op, CKH_OP_FSYNC);
    ck_assert_int_eq(f->on.epoch, 3);
    ck_assert_int_eq(f->on.step, -1);
    ck_assert_uint_eq(f->on.run, CKH_SCN_RUN_ANY);
    ck_assert(f->on.repeat);
    ck_assert_int_eq(f->act.kind, CKH_SCN_ACT_ERRNO);
    ck_assert_int_eq(f->act.u.errno_.err, EIO);

    f = &s->faults[2];
    ck_assert_int_eq(f->on.op, CKH_OP_ALLREDUCE);
    ck_assert_int_eq(f->on.step, 120);
    ck_assert(f->on.probability == 0.5);
    ck_assert_int_eq(f->act.kind, CKH_SCN_ACT_DELAY);
    ck_assert_uint_eq(f->act.u.delay.duration_ns, 1500000000ull);

    f = &s->faults[3];
    ck_assert(f->at_rest);
    ck_assert(!f->on.matches_ops);
    ck_assert_uint_eq(f->on.run, 2);
    ck_assert_int_eq(f->act.kind, CKH_SCN_ACT_CORRUPT);
    ck_assert_int_eq(f->act.u.corrupt.mode, CKH_SCN_CORRUPT_BIT_FLIP);
    ck_assert_str_eq(f->act.u.corrupt.path, "/shared/ckpt/latest/model.bin");
    ck_assert_uint_eq(f->act.u.corrupt.offset, 4096);
    ck_assert_uint_eq(f->act.u.corrupt.bit, 3);

    f = &s->faults[4];
    ck_assert_uint_eq(f->on.time_ns, 10000000);
    ck_assert_int_eq(f->act.kind, CKH_SCN_ACT_POWER_LOSS);

    f = &s->faults[5];
    ck_assert_int_eq(f->act.kind, CKH_SCN_ACT_DISK_FULL);
    ck_assert_uint_eq(f->act.u.disk_full.after_bytes, 4ull << 20);
    ck_assert_str_eq(f->act.u.disk_full.disk, "local");
    ck_assert_uint_eq(f->on.run, 1);
    ck_assert_uint_eq(f->on.nth, 1);

    ck_assert_int_eq(s->restart.resume_epoch, 2);
    ck_assert_uint_eq(s->restart.max_restarts, 5);
    ck_assert_uint_eq(s->restart.world_size, 2);

    ck_assert_int_eq(s->expect.outcome, CKH_SCN_OUTCOME_PASS);
    ck_assert(!s->expect.reference);
    ck_assert_str_eq(s->expect.golden, "golden/ddp-train-4.txt");
    ck_assert_uint_eq(s->expect.nvalues, 4);
    ck_assert_str_eq(s->expect.values[0].key, "total.trainer_0");
    ck_assert_int_eq(s->expect.values[0].i, 145);
    ck_assert_str_eq(s->expect.values[1].key, "epochs");
    ck_assert_int_eq(s->expect.values[1].i, 4);
    ck_assert_str_eq(s->expect.values[2].key, "blobs.trainer_0");
    ck_assert_int_eq(s->expect.values[2].type, CKH_SCN_STR);
    ck_assert_int_eq(s->expect.values[3].type, CKH_SCN_STR);
    ck_assert_uint_eq(s->expect.noracles, 2);
    ck_assert_str_eq(s->expect.oracles[1], "latest");
    ck_assert_uint_eq(s->expect.nskip, 1);
    ck_assert_str_eq(s->expect.skip[0], "liveness");
    ckh_scenario_free(s);
}
END_TEST

START_TEST(test_defaults)
{
    struct ckh_scenario *s = parse_ok("job:\n  workload: seed-pipeline\n");
    ck_assert_str_eq(s->name, "t");
    ck_assert_str_eq(s->file, "t.yaml");
    ck_assert_ptr_null(s->description);
    ck_assert_uint_eq(s->seed, 1);
    ck_assert_uint_eq(s->ntags, 0);
    ck_assert_uint_eq(s->job.nodes, 1);
    ck_assert_uint_eq(s->job.epochs, 0);
    ck_assert_uint_eq(s->job.steps, 0);
    ck_assert_ptr_null(s->job.backend);
    ck_assert_ptr_null(s->job.saver.kind);
    ck_assert_str_eq(s->job.checkpoint_dir, "/ckpt");
    ck_assert_ptr_null(s->job.checkpoint_mount); /* a command job's key */
    ck_assert_uint_eq(s->job.every_epochs, 0);
    ck_assert_uint_eq(s->job.every_steps, 0);
    ck_assert_uint_eq(s->job.collective_timeout_ns, 30000000000ull);
    ck_assert_uint_eq(s->job.gpu_mem_bytes, 0);
    ck_assert_uint_eq(s->job.ndisks, 1);
    ck_assert_str_eq(s->job.disks[0].name, "shared");
    ck_assert_str_eq(s->job.disks[0].mount, "/");
    ck_assert(s->job.disks[0].shared);
    ck_assert_int_eq(s->job.disks[0].model, CKH_CRASH_POSIX_WEAK);
    ck_assert_uint_eq(s->job.disks[0].sector_bytes, 4096);
    ck_assert_uint_eq(s->job.disks[0].capacity_bytes, 0);
    ck_assert_uint_eq(s->job.disks[0].latency_ns, 100000);
    ck_assert_uint_eq(s->job.disks[0].ns_per_kib, 1000);
    ck_assert_uint_eq(s->nfaults, 0);
    ck_assert_int_eq(s->restart.resume_epoch, -1);
    ck_assert_uint_eq(s->restart.max_restarts, 3);
    ck_assert_uint_eq(s->restart.world_size, 0);
    ck_assert_int_eq(s->expect.outcome, CKH_SCN_OUTCOME_PASS);
    ck_assert(s->expect.reference);
    ck_assert_ptr_null(s->expect.golden);
    ck_assert_uint_eq(s->expect.nvalues, 0);
    ck_assert_uint_eq(s->expect.noracles, 0);
    ckh_scenario_free(s);
}
END_TEST

START_TEST(test_variants)
{
    /* ranks is a synonym of nodes; saver as a plain name; epoch cadence;
     * resume latest; outcomes; hex seed; named disk default. */
    struct ckh_scenario *s = parse_ok("seed: 0xff\n"
                                      "job:\n"
                                      "  workload: param-server\n"
                                      "  ranks: 8\n"
                                      "  saver: atomic-dir\n"
                                      "  checkpoint_every: {epochs: 2}\n"
                                      "  disks:\n"
                                      "    - {mount: /}\n"
                                      "    - {mount: /scratch, shared: no}\n"
                                      "restart: {resume: latest, max_restarts: 0}\n"
                                      "expect: {outcome: corruption-detected, oracles: latest}\n");
    ck_assert_uint_eq(s->seed, 255);
    ck_assert_uint_eq(s->job.nodes, 8);
    ck_assert_str_eq(s->job.saver.kind, "atomic-dir");
    ck_assert_uint_eq(s->job.saver.keep_last, 0);
    ck_assert_int_eq(s->job.saver.strategy, CKH_SCN_SYNC_ALL);
    ck_assert_ptr_null(s->job.saver.name);
    ck_assert_uint_eq(s->job.every_epochs, 2);
    ck_assert_str_eq(s->job.disks[0].name, "disk0");
    ck_assert_str_eq(s->job.disks[1].name, "disk1");
    ck_assert(!s->job.disks[1].shared);
    ck_assert_int_eq(s->restart.resume_epoch, -1);
    ck_assert_uint_eq(s->restart.max_restarts, 0);
    ck_assert_int_eq(s->expect.outcome, CKH_SCN_OUTCOME_CORRUPTION_DETECTED);
    ck_assert_uint_eq(s->expect.noracles, 1);
    ck_assert_str_eq(s->expect.oracles[0], "latest");
    ckh_scenario_free(s);
}
END_TEST

/* expect.max_restarts and compare.ignore: parsed, defaulted, and written
 * back to the same model. */
START_TEST(test_restarts_and_compare)
{
    struct ckh_scenario *s = parse_ok("job: {workload: ddp-train}\n");
    ck_assert(!s->expect.max_restarts_set);
    ck_assert_uint_eq(s->compare.nignore, 0);
    ckh_scenario_free(s);
    s = parse_ok("job: {workload: ddp-train}\n"
                 "expect: {max_restarts: 0}\n"
                 "compare:\n  ignore: [loss, opt.lr-2_B]\n");
    ck_assert(s->expect.max_restarts_set);
    ck_assert_uint_eq(s->expect.max_restarts, 0);
    ck_assert_uint_eq(s->compare.nignore, 2);
    ck_assert_str_eq(s->compare.ignore[0], "loss");
    ck_assert_str_eq(s->compare.ignore[1], "opt.lr-2_B");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_scenario_write(f, s), 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "  max_restarts: 0\ncompare:\n  ignore: [\"loss\", \"opt.lr-2_B\"]\n"));
    struct ckh_scenario *b = parse_ok(buf);
    ck_assert(b->expect.max_restarts_set);
    ck_assert_uint_eq(b->expect.max_restarts, 0);
    ck_assert_uint_eq(b->compare.nignore, 2);
    ck_assert_str_eq(b->compare.ignore[0], "loss");
    ck_assert_str_eq(b->compare.ignore[1], "opt.lr-2_B");
    ckh_scenario_free(b);
    free(buf);
    ckh_scenario_free(s);
    /* Unset stays unset through the writer; a single name is a list. */
    s = parse_ok("job: {workload: ddp-train}\nexpect: {max_restarts: 1000}\ncompare: {ignore: lr}\n");
    ck_assert_uint_eq(s->expect.max_restarts, 1000);
    ck_assert_uint_eq(s->compare.nignore, 1);
    ckh_scenario_free(s);
    s = parse_ok("job: {workload: ddp-train}\ncompare: {}\n");
    f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_scenario_write(f, s), 0);
    fclose(f);
    /* Only restart.max_restarts is written. */
    const char *first = strstr(buf, "max_restarts:");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "max_restarts:"));
    ck_assert_ptr_null(strstr(buf, "compare"));
    b = parse_ok(buf);
    ck_assert(!b->expect.max_restarts_set);
    ck_assert_uint_eq(b->compare.nignore, 0);
    ckh_scenario_free(b);
    free(buf);
    ckh_scenario_free(s);
}
END_TEST

/* job.disks[].sharing: network by default (no existing scenario changes),
 * machine when asked; the writer names it only when not the default, and
 * the written text parses back to the same disk. */
START_TEST(test_disk_sharing)
{
    struct ckh_scenario *s = parse_ok("job:\n  workload: ddp-train\n  disks: [{mount: /}]\n");
    ck_assert_int_eq(s->job.disks[0].sharing, CKH_SHARING_NETWORK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_scenario_write(f, s), 0);
    fclose(f);
    ck_assert_ptr_null(strstr(buf, "sharing"));
    free(buf);
    ckh_scenario_free(s);
    s = parse_ok("job:\n  workload: ddp-train\n  disks: [{mount: /, sharing: machine}, "
                 "{mount: /net, sharing: network}]\n");
    ck_assert_int_eq(s->job.disks[0].sharing, CKH_SHARING_MACHINE);
    ck_assert_int_eq(s->job.disks[1].sharing, CKH_SHARING_NETWORK);
    f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_scenario_write(f, s), 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, ", sharing: machine"));
    struct ckh_scenario *b = parse_ok(buf);
    ck_assert_int_eq(b->job.disks[0].sharing, CKH_SHARING_MACHINE);
    ck_assert_int_eq(b->job.disks[1].sharing, CKH_SHARING_NETWORK);
    ckh_scenario_free(b);
    free(buf);
    ckh_scenario_free(s);
}
END_TEST

/* Each action kind with its parameters and defaults. */
START_TEST(test_actions)
{
    struct ckh_scenario *s = parse_ok(
        "job: {workload: ddp-train, nodes: 2}\n"
        "faults:\n"
        "  - {on: {op: rename}, do: kill}\n"                                   /* 0 */
        "  - {on: {op: rename}, do: kill, when: after}\n"                      /* 1 */
        "  - {on: {op: write}, do: kill, when: mid-write}\n"                   /* 2 */
        "  - {on: {op: write}, do: kill, when: mid-write, at: 100}\n"          /* 3 */
        "  - {on: {op: write}, do: kill, when: mid-write, at: 0.75}\n"         /* 4 */
        "  - {on: {node: 0, phase: save}, do: crash}\n"                        /* 5 */
        "  - {on: {phase: epoch, epoch: 1}, do: power-loss}\n"                 /* 6 */
        "  - {on: {op: fsync}, do: errno, errno: EROFS}\n"                      /* 7 */
        "  - {do: fsync-fail}\n"                                               /* 8 */
        "  - {do: disk-full}\n"                                                /* 9 */
        "  - {on: {node: 1}, do: delay, duration: 40s}\n"                      /* 10 */
        "  - {do: corrupt, mode: truncate, path: /ckpt/a, offset: 10}\n"       /* 11 */
        "  - {do: corrupt, mode: zero-range, path: /ckpt/a, offset: 8, length: 16}\n" /* 12 */
        "  - {do: corrupt, mode: delete, path: /ckpt/a}\n"                     /* 13 */
        "  - {do: corrupt, mode: older-version, path: /ckpt/a, back: 2}\n"     /* 14 */
        "  - {on: {phase: save, nth: 3}, do: remove-dir, path: /ckpt}\n"       /* 15 */
        "  - {on: {run: 2}, do: dangling-latest}\n"                            /* 16 */
        "  - {do: stale-latest, path: /ckpt/LATEST}\n"                         /* 17 */
        "  - {on: {op: allreduce, node: 1}, do: die-in-collective}\n"          /* 18 */
        "  - {on: {op: broadcast}, do: mismatch-collective}\n"                 /* 19 */
        "  - {on: {op: alloc, step: 7}, do: gpu-oom}\n");                      /* 20 */
    ck_assert_uint_eq(s->nfaults, 21);
    const struct ckh_scn_fault *f = s->faults;
    ck_assert_int_eq(f[0].act.u.kill.when, CKH_SCN_KILL_BEFORE);
    ck_assert_int_eq(f[0].on.op, CKH_OP_RENAME);
    ck_assert_int_eq(f[1].act.u.kill.when, CKH_SCN_KILL_AFTER);
    ck_assert(f[2].act.u.kill.at_is_fraction);
    ck_assert(f[2].act.u.kill.at_fraction == 0.5);
    ck_assert(!f[3].act.u.kill.at_is_fraction);
    ck_assert_uint_eq(f[3].act.u.kill.at_bytes, 100);
    ck_assert(f[4].act.u.kill.at_fraction == 0.75);
    ck_assert_int_eq(f[5].act.kind, CKH_SCN_ACT_CRASH);
    ck_assert_int_eq(f[5].on.node, 0);
    ck_assert_int_eq(f[6].act.kind, CKH_SCN_ACT_POWER_LOSS);
    ck_assert_int_eq(f[6].on.epoch, 1);
    ck_assert_int_eq(f[7].act.u.errno_.err, EROFS);
    ck_assert_int_eq(f[8].act.kind, CKH_SCN_ACT_FSYNC_FAIL);
    ck_assert_int_eq(f[8].on.op, CKH_OP_FSYNC); /* default op of fsync-fail */
    ck_assert_uint_eq(f[9].act.u.disk_full.after_bytes, 0);
    ck_assert_ptr_null(f[9].act.u.disk_full.disk);
    ck_assert_uint_eq(f[10].act.u.delay.duration_ns, 40000000000ull);
    ck_assert_int_eq(f[11].act.u.corrupt.mode, CKH_SCN_CORRUPT_TRUNCATE);
    ck_assert_uint_eq(f[11].act.u.corrupt.offset, 10);
    ck_assert(f[11].at_rest);
    ck_assert_uint_eq(f[11].on.run, 1); /* before the first run */
    ck_assert_int_eq(f[12].act.u.corrupt.mode, CKH_SCN_CORRUPT_ZERO_RANGE);
    ck_assert_uint_eq(f[12].act.u.corrupt.length, 16);
    ck_assert_int_eq(f[13].act.u.corrupt.mode, CKH_SCN_CORRUPT_DELETE);
    ck_assert_uint_eq(f[14].act.u.corrupt.back, 2);
    ck_assert_uint_eq(f[13].act.u.corrupt.back, 1);
    ck_assert_int_eq(f[15].act.kind, CKH_SCN_ACT_REMOVE_DIR);
    ck_assert(!f[15].at_rest); /* it has an op trigger: during the run */
    ck_assert_uint_eq(f[15].on.nth, 3);
    ck_assert_str_eq(f[15].act.u.remove_dir.path, "/ckpt");
    ck_assert_int_eq(f[16].act.kind, CKH_SCN_ACT_DANGLING_LATEST);
    ck_assert_ptr_null(f[16].act.u.latest.path);
    ck_assert(f[16].at_rest);
    ck_assert_uint_eq(f[16].on.run, 2);
    ck_assert_str_eq(f[17].act.u.latest.path, "/ckpt/LATEST");
    ck_assert_int_eq(f[18].act.kind, CKH_SCN_ACT_DIE_IN_COLLECTIVE);
    ck_assert_int_eq(f[19].act.kind, CKH_SCN_ACT_MISMATCH_COLLECTIVE);
    ck_assert_int_eq(f[20].act.kind, CKH_SCN_ACT_GPU_OOM);
    ck_assert_int_eq(f[20].on.op, CKH_OP_ALLOC);
    ck_assert_int_eq(f[20].on.step, 7);
    ckh_scenario_free(s);
}
END_TEST

START_TEST(test_names_of_enums)
{
    ck_assert_str_eq(ckh_scn_action_name(CKH_SCN_ACT_POWER_LOSS), "power-loss");
    ck_assert_str_eq(ckh_scn_action_name(CKH_SCN_ACT_GPU_OOM), "gpu-oom");
    ck_assert_str_eq(ckh_scn_action_name(CKH_SCN_ACT__COUNT), "?");
    ck_assert_str_eq(ckh_scn_outcome_name(CKH_SCN_OUTCOME_SAVE_FAILS), "save-fails");
    ck_assert_str_eq(ckh_scn_outcome_name((enum ckh_scn_outcome)99), "?");
    ck_assert(ckh_scn_action_is_at_rest(CKH_SCN_ACT_CORRUPT));
    ck_assert(!ckh_scn_action_is_at_rest(CKH_SCN_ACT_KILL));
}
END_TEST

START_TEST(test_units)
{
    uint64_t v = 7;
    ck_assert_int_eq(ckh_scn_parse_size("4096", &v), 0);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(ckh_scn_parse_size("512MiB", &v), 0);
    ck_assert_uint_eq(v, 512ull << 20);
    ck_assert_int_eq(ckh_scn_parse_size("1.5KiB", &v), 0);
    ck_assert_uint_eq(v, 1536);
    ck_assert_int_eq(ckh_scn_parse_size("2 GB", &v), 0);
    ck_assert_uint_eq(v, 2000000000ull);
    ck_assert_int_eq(ckh_scn_parse_size("16EiB", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_parse_size("-1", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_parse_size("1.1B", &v), CKH_EINVAL); /* not a whole byte */
    ck_assert_int_eq(ckh_scn_parse_size("99999999999TiB", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_parse_size("", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_parse_size(NULL, &v), CKH_EINVAL);
    ck_assert_uint_eq(v, 2000000000ull); /* untouched by the failures */
    ck_assert_int_eq(ckh_scn_parse_duration("100us", &v), 0);
    ck_assert_uint_eq(v, 100000);
    ck_assert_int_eq(ckh_scn_parse_duration("1.5s", &v), 0);
    ck_assert_uint_eq(v, 1500000000ull);
    ck_assert_int_eq(ckh_scn_parse_duration("2m", &v), 0);
    ck_assert_uint_eq(v, 120000000000ull);
    ck_assert_int_eq(ckh_scn_parse_duration("0", &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(ckh_scn_parse_duration("5", &v), CKH_EINVAL); /* unit required */
    ck_assert_int_eq(ckh_scn_parse_duration("5 parsecs", &v), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_parse_duration("1.5ns", &v), CKH_EINVAL);
}
END_TEST

START_TEST(test_edit_distance)
{
    ck_assert_uint_eq(ckh_scn_edit_distance("epocs", "epochs"), 1);
    ck_assert_uint_eq(ckh_scn_edit_distance("kitten", "sitting"), 3);
    ck_assert_uint_eq(ckh_scn_edit_distance("", "abc"), 3);
    ck_assert_uint_eq(ckh_scn_edit_distance("same", "same"), 0);
}
END_TEST

START_TEST(test_filter)
{
    ck_assert(ckh_scn_filter_match(NULL, "x"));
    ck_assert(ckh_scn_filter_match("", "x"));
    ck_assert(ckh_scn_filter_match("kill-*", "kill-mid"));
    ck_assert(!ckh_scn_filter_match("kill-*", "power-loss"));
    ck_assert(ckh_scn_filter_match("kill-*,power*", "power-loss"));
    ck_assert(ckh_scn_filter_match("*mid*", "minidb/kill-mid-write"));
    ck_assert(!ckh_scn_filter_match("a,b", "c"));
    ck_assert(ckh_scn_filter_match("a,,c", "c"));
    ck_assert(!ckh_scn_filter_match("x", NULL));
}
END_TEST

START_TEST(test_load_dir)
{
    struct ckh_scn_set set;
    struct ckh_scn_error err;
    int rc = ckh_scn_set_load(data_path(""), &opts, NULL, &set, &err);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(set.n, 6);
    static const char *const want[] = {"bad/escape.yaml",  "bad/malformed.yaml",
                                       "bad/unknown-key.yaml", "good/full.yaml",
                                       "good/minimal.yml", "good/sub/missing-dir.yaml"};
    for (size_t i = 0; i < set.n; i++) {
        size_t lp = strlen(set.v[i].path), lw = strlen(want[i]);
        ck_assert_uint_ge(lp, lw);
        ck_assert_str_eq(set.v[i].path + lp - lw, want[i]);
        ck_assert_int_eq(set.v[i].scn == NULL, i < 3);
    }
    ck_assert_int_eq(set.v[0].err.code, CKH_EINVAL);
    ck_assert_int_eq(set.v[0].err.line, 3);
    ck_assert_int_eq(set.v[1].err.code, CKH_EPARSE);
    ck_assert_int_eq(set.v[2].err.line, 3);
    ck_assert_int_eq(set.v[2].err.column, 3);
    ck_assert_str_eq(set.v[2].err.msg, "unknown key 'epocs' in 'job'; did you mean 'epochs'?");
    ck_assert_str_eq(set.v[4].scn->name, "minimal");
    ck_assert_str_eq(set.v[5].scn->name, "missing-dir");
    ck_assert(set.v[5].scn->faults[0].at_rest);
    ckh_scn_set_free(&set);
    ck_assert_uint_eq(set.n, 0);

    /* A filter on names (a broken file is named after its file). */
    rc = ckh_scn_set_load(data_path(""), &opts, "mini*,unknown-key", &set, &err);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(set.n, 2);
    ck_assert_ptr_null(set.v[0].scn);
    ck_assert_str_eq(set.v[1].scn->name, "minimal");
    ckh_scn_set_free(&set);

    /* A single file is a set of one; a missing folder is an error. */
    rc = ckh_scn_set_load(data_path("good/minimal.yml"), &opts, NULL, &set, &err);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(set.n, 1);
    ckh_scn_set_free(&set);
    rc = ckh_scn_set_load(data_path("nope"), &opts, NULL, &set, &err);
    ck_assert_int_eq(rc, -ENOENT);
    ck_assert_int_eq(err.code, -ENOENT);

    char **paths;
    size_t n;
    ck_assert_int_eq(ckh_scn_list_files(data_path("good"), NULL, &paths, &n), 0);
    ck_assert_uint_eq(n, 3);
    ckh_scn_paths_free(NULL, paths, n);
    ck_assert_int_eq(ckh_scn_list_files(NULL, NULL, &paths, &n), CKH_EINVAL);
}
END_TEST

START_TEST(test_bad_args)
{
    struct ckh_scenario *s = (void *)1;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(NULL, 0, NULL, NULL, &s, &err), CKH_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(ckh_scenario_parse_string("a: 1", 4, NULL, NULL, NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_scenario_parse_file(NULL, NULL, &s, &err), CKH_EINVAL);
    ck_assert_int_eq(ckh_scenario_parse_file("/nonexistent/x.yaml", NULL, &s, &err), -ENOENT);
    ck_assert_str_eq(err.file, "/nonexistent/x.yaml");
    ckh_scenario_free(NULL);
    /* No options: any workload name is accepted. */
    const char *t = "job: {workload: anything}\n";
    ck_assert_int_eq(ckh_scenario_parse_string(t, strlen(t), NULL, NULL, &s, &err), 0);
    ck_assert_str_eq(s->name, "<string>");
    ckh_scenario_free(s);
    char buf[600];
    struct ckh_scn_error e2 = {.file = "a.yaml", .line = 3, .column = 7, .msg = "boom"};
    ckh_scn_error_format(&e2, buf, sizeof(buf));
    ck_assert_str_eq(buf, "a.yaml:3:7: boom");
    e2.line = 0;
    ckh_scn_error_format(&e2, buf, sizeof(buf));
    ck_assert_str_eq(buf, "a.yaml: boom");
}
END_TEST

/* An allocator that fails after `budget` allocations. */
struct failing_alloc {
    struct ckh_alloc base; /* must be first */
    int budget;            /* allocations left */
};

static void *fa_malloc(struct ckh_alloc *a, size_t n)
{
    struct failing_alloc *fa = (struct failing_alloc *)a;
    if (fa->budget-- <= 0)
        return NULL;
    return malloc(n);
}

static void *fa_realloc(struct ckh_alloc *a, void *p, size_t n)
{
    struct failing_alloc *fa = (struct failing_alloc *)a;
    if (fa->budget-- <= 0)
        return NULL;
    return realloc(p, n);
}

static void fa_free(struct ckh_alloc *a, void *p)
{
    (void)a;
    free(p);
}

static const struct ckh_alloc_ops fa_ops = {
    .version = 1, .malloc = fa_malloc, .realloc = fa_realloc, .free = fa_free};

START_TEST(test_out_of_memory)
{
    /* Every allocation failure gives CKH_ENOMEM and leaks nothing (checked
     * under valgrind and ASan); with enough budget the parse succeeds. */
    struct failing_alloc fa = {.base = {.ops = &fa_ops}};
    struct ckh_scn_options o = opts;
    o.alloc = &fa.base;
    const char *path = data_path("good/full.yaml");
    int rc = CKH_ENOMEM;
    int budget;
    for (budget = 0; budget < 2000 && rc == CKH_ENOMEM; budget++) {
        struct ckh_scenario *s = NULL;
        struct ckh_scn_error err;
        fa.budget = budget;
        rc = ckh_scenario_parse_file(path, &o, &s, &err);
        if (rc == 0) {
            ck_assert_str_eq(s->name, "full-example");
            ckh_scenario_free(s);
        } else {
            ck_assert_int_eq(rc, CKH_ENOMEM);
            ck_assert_int_eq(err.code, CKH_ENOMEM);
            ck_assert_ptr_null(s);
        }
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_gt(budget, 50);
}
END_TEST

/* Every prefix and a byte-flipped copy of every position of the full
 * example parse or fail cleanly (no crash, no leak, error set). */
START_TEST(test_truncations)
{
    FILE *f = fopen(data_path("good/full.yaml"), "rb");
    ck_assert_ptr_nonnull(f);
    static char text[8192];
    size_t len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    size_t stride = getenv("CKH_VALGRIND") ? 13 : 1;
    for (size_t n = 0; n <= len; n += stride) {
        for (int flip = 0; flip < 2; flip++) {
            char saved = text[n];
            if (flip && n < len)
                text[n] = (char)(text[n] ^ 0x20);
            struct ckh_scenario *s = NULL;
            struct ckh_scn_error err;
            int rc = ckh_scenario_parse_string(text, flip ? len : n, "cut.yaml", &opts, &s, &err);
            text[n] = saved;
            if (rc == 0) {
                ck_assert_ptr_nonnull(s);
                ckh_scenario_free(s);
            } else {
                ck_assert_msg(rc == CKH_EINVAL || rc == CKH_EPARSE, "len %zu: rc %d", n, rc);
                ck_assert_ptr_null(s);
                ck_assert_int_eq(err.code, rc);
                ck_assert(err.msg[0] != '\0');
            }
        }
    }
}
END_TEST

/* ---- bad input: code, position and message ---- */

#define J "job: {workload: seed-pipeline, nodes: 2}\n"

struct bad_case {
    const char *text; /* the scenario */
    int code;         /* expected return */
    int line;         /* expected 1-based line */
    int column;       /* expected 1-based column */
    const char *msg;  /* expected message (prefix when it ends in '*') */
};

static const struct bad_case bad_cases[] = {
    {"job:\n  workload: seed-pipeline\n  epocs: 3\n", CKH_EINVAL, 3, 3,
     "unknown key 'epocs' in 'job'; did you mean 'epochs'?"},
    {"seeed: 3\n" J, CKH_EINVAL, 1, 1, "unknown key 'seeed' in 'scenario'; did you mean 'seed'?"},
    {"job:\n  workload: seed-pipeline\n  zzzzzz: 1\n", CKH_EINVAL, 3, 3,
     "unknown key 'zzzzzz' in 'job'; expected one of: workload, nodes, ranks, epochs, steps, "
     "backend, saver, checkpoint_dir, checkpoint_every, options, disks, collective_timeout, "
     "gpu_memory, defects, command, env, timeout, platform, checkpoint_mount, object_store"},
    {"seed: 1\nseed: 2\n" J, CKH_EINVAL, 2, 1,
     "duplicate key 'seed' in 'scenario' (first at line 1)"},
    {"job:\n  workload: seed-pipeline\n  nodes: 2000\n", CKH_EINVAL, 3, 10,
     "'job.nodes' expects an integer in 1..1024, got '2000'"},
    {"job:\n  workload: seed-pipeline\n  nodes: [1]\n", CKH_EINVAL, 3, 10,
     "'job.nodes' expects an integer in 1..1024, got a list"},
    {"job:\n  workload: seed-pipeline\n  nodes:\n", CKH_EINVAL, 3, 9,
     "'job.nodes' expects an integer in 1..1024, got nothing"},
    {"job:\n  workload: ddp-trian\n", CKH_EINVAL, 2, 13,
     "'job.workload' got unknown value 'ddp-trian'; did you mean 'ddp-train'?"},
    {"job:\n  workload: ddp-train\n  defects: [skip-fsink]\n", CKH_EINVAL, 3, 13,
     "'job.defects' got unknown value 'skip-fsink'; did you mean 'skip-fsync'?"},
    {"job:\n  workload: ddp-train\n  backend: sqlite\n", CKH_EINVAL, 3, 12,
     "'job.backend' got unknown value 'sqlite'; expected one of: minidb"},
    {"job:\n  workload: seed-pipeline\n  checkpoint_dir: /ckpt/../etc\n", CKH_EINVAL, 3, 19,
     "'job.checkpoint_dir' must be an absolute path without '..' (it may not leave the "
     "scenario's working folder), got '/ckpt/../etc'"},
    {"job:\n  workload: seed-pipeline\n  checkpoint_dir: ckpt\n", CKH_EINVAL, 3, 19,
     "'job.checkpoint_dir' must be an absolute path without '..' (it may not leave the "
     "scenario's working folder), got 'ckpt'"},
    {J "expect:\n  golden: ../../etc/passwd\n", CKH_EINVAL, 3, 11,
     "'expect.golden' must be a relative path without '..' (it may not leave the reference "
     "folder), got '../../etc/passwd'"},
    {J "faults:\n  - {do: corrupt, mode: delete, path: /ckpt/..}\n", CKH_EINVAL, 3, 39,
     "'path' must be an absolute path without '..' (it may not leave the scenario's working "
     "folder), got '/ckpt/..'"},
    {"job:\n  workload: [seed-pipeline\n  nodes: 2\n", CKH_EPARSE, 3, 8, "malformed YAML: *"},
    {"job: {workload: x\n", CKH_EPARSE, 2, 1, "malformed YAML: *"},
    {"a: b: c\n", CKH_EPARSE, 1, 5, "malformed YAML: mapping values are not allowed in this context"},
    {"job:\n\tworkload: x\n", CKH_EPARSE, 2, 1,
     "malformed YAML: found character that cannot start any token while scanning for the next "
     "token (line 2); YAML indents with spaces, not tabs"},
    {J "faults:\n  - on: {op: fsnyc}\n    do: crash\n", CKH_EINVAL, 3, 14,
     "'on.op' got unknown value 'fsnyc'; did you mean 'fsync'?"},
    {J "faults:\n  - node: 1\n    do: crash\n", CKH_EINVAL, 3, 5,
     "unknown key 'node' in 'fault'; trigger keys such as 'node' go under 'on:'"},
    {J "faults:\n  - do: kill\n    errno: EIO\n", CKH_EINVAL, 4, 5,
     "unknown key 'errno' in 'fault'; 'errno' does not apply to 'do: kill'"},
    {J "faults:\n  - do: kill\n    wen: after\n", CKH_EINVAL, 4, 5,
     "unknown key 'wen' in 'fault'; did you mean 'when'?"},
    {J "faults:\n  - on: {op: fsync}\n", CKH_EINVAL, 3, 5,
     "a fault needs 'do:' (the action: kill, crash, power-loss, errno, ...)"},
    {J "faults:\n  - do: kil\n", CKH_EINVAL, 3, 9, "'do' got unknown value 'kil'; did you mean 'kill'?"},
    {J "faults:\n  - {on: {probability: 1.5}, do: crash}\n", CKH_EINVAL, 3, 24,
     "'on.probability' expects a number in (0, 1], got '1.5'"},
    {J "faults:\n  - {on: {probability: 0}, do: crash}\n", CKH_EINVAL, 3, 24,
     "'on.probability' expects a number in (0, 1], got '0'"},
    {J "faults:\n  - {on: {nth: 2, probability: 0.5}, do: crash}\n", CKH_EINVAL, 3, 32,
     "'on' takes either 'nth' or 'probability', not both"},
    {J "faults:\n  - {on: {nth: 0}, do: crash}\n", CKH_EINVAL, 3, 16,
     "'on.nth' expects an integer in 1..18446744073709551615, got '0'"},
    {J "faults:\n  - {do: errno, errno: EPERM}\n", CKH_EINVAL, 3, 24,
     "'errno' got unknown value 'EPERM'; expected one of: EIO, ENOSPC, EDQUOT, EACCES, ENOENT, "
     "EROFS"},
    {J "faults:\n  - {do: errno}\n", CKH_EINVAL, 3, 5,
     "'do: errno' needs 'errno' (EIO, ENOSPC, EDQUOT, EACCES, ENOENT or EROFS)"},
    {J "faults:\n  - {do: kill, at: 10}\n", CKH_EINVAL, 3, 20, "'at' needs 'when: mid-write'"},
    {J "faults:\n  - {do: kill, when: mid-write, at: 1.5}\n", CKH_EINVAL, 3, 37,
     "'at' expects a byte offset (integer), a fraction in [0.0, 1.0] or a percentage such as "
     "'50%', got '1.5'"},
    {J "faults:\n  - {on: {op: fsync}, do: kill, when: mid-write}\n", CKH_EINVAL, 3, 39,
     "'when: mid-write' needs 'on.op' to be write or pwrite, not 'fsync'"},
    {J "faults:\n  - {on: {node: 2}, do: crash}\n", CKH_EINVAL, 3, 17,
     "'on.node' expects an integer in 0..1, got '2'"},
    {J "faults:\n  - {on: {run: 0}, do: crash}\n", CKH_EINVAL, 3, 16,
     "'on.run' expects a run number in 1..1000000 or 'any', got '0'"},
    {J "faults:\n  - {on: {phase: sav}, do: crash}\n", CKH_EINVAL, 3, 18,
     "'on.phase' got unknown value 'sav'; did you mean 'save'?"},
    {J "faults:\n  - {do: corrupt, mode: truncate, path: /a, bit: 1}\n", CKH_EINVAL, 3, 50,
     "'bit' does not apply to 'mode: truncate'"},
    {J "faults:\n  - {do: corrupt, mode: bit-flip, path: /a, bit: 8}\n", CKH_EINVAL, 3, 50,
     "'bit' expects an integer in 0..7, got '8'"},
    {J "faults:\n  - {do: corrupt, path: /a}\n", CKH_EINVAL, 3, 5,
     "'do: corrupt' needs 'mode' (one of bit-flip, truncate, zero-range, delete, older-version)"},
    {J "faults:\n  - {do: corrupt, mode: bitflip, path: /a}\n", CKH_EINVAL, 3, 25,
     "'mode' got unknown value 'bitflip'; did you mean 'bit-flip'?"},
    {J "faults:\n  - {do: remove-dir}\n", CKH_EINVAL, 3, 5,
     "'do: remove-dir' needs 'path' (the directory)"},
    {J "faults:\n  - {do: delay, duration: 5}\n", CKH_EINVAL, 3, 27,
     "'duration' expects a duration (a number with ns, us, ms, s, m or h), got '5'"},
    {J "faults:\n  - {do: disk-full, disk: locl}\n", CKH_EINVAL, 3, 27,
     "'disk' names no disk of the job: 'locl'; expected one of: shared"},
    {J "faults: {do: crash}\n", CKH_EINVAL, 2, 9, "'faults' expects a list of faults, got a mapping"},
    {J "faults:\n  - crash\n", CKH_EINVAL, 3, 5,
     "'faults[]' expects a mapping with 'do:', got 'crash'"},
    {J "restart: {resume: epoch x}\n", CKH_EINVAL, 2, 19,
     "'restart.resume' expects 'latest' or 'epoch N' (N >= 0), got 'epoch x'"},
    {J "restart: {max_restarts: -1}\n", CKH_EINVAL, 2, 25,
     "'restart.max_restarts' expects an integer in 0..1000, got '-1'"},
    {J "restart: {world_size: 0}\n", CKH_EINVAL, 2, 23,
     "'restart.world_size' expects an integer in 1..1024, got '0'"},
    {J "expect: {outcome: deadlocked}\n", CKH_EINVAL, 2, 19,
     "'expect.outcome' got unknown value 'deadlocked'; did you mean 'deadlock'?"},
    {J "expect: {reference: maybe}\n", CKH_EINVAL, 2, 21,
     "'expect.reference' expects true or false, got 'maybe'"},
    {J "expect: {oracles: [totls]}\n", CKH_EINVAL, 2, 20,
     "'expect.oracles' got unknown value 'totls'; did you mean 'totals'?"},
    {J "expect: {oracles: [totals], skip: [totals]}\n", CKH_EINVAL, 2, 35,
     "oracle 'totals' is both in 'oracles' and 'skip'"},
    {J "expect: {max_restarts: -1}\n", CKH_EINVAL, 2, 24,
     "'expect.max_restarts' expects an integer in 0..1000, got '-1'"},
    {J "expect: {max_restarts: few}\n", CKH_EINVAL, 2, 24,
     "'expect.max_restarts' expects an integer in 0..1000, got 'few'"},
    {J "compare: {ignore: [lr, \"bad name\"]}\n", CKH_EINVAL, 2, 24,
     "'compare.ignore' expects record names (1 to 63 letters, digits, '_', '.' or '-'), got "
     "'bad name'"},
    {J "compare: {ignore: [lr, lr]}\n", CKH_EINVAL, 2, 24, "'compare.ignore' lists 'lr' twice"},
    {J "compare: {ignore: {lr: 1}}\n", CKH_EINVAL, 2, 19,
     "'compare.ignore' expects a list of names, got a mapping"},
    {J "compare: {ignor: [lr]}\n", CKH_EINVAL, 2, 11,
     "unknown key 'ignor' in 'compare'; did you mean 'ignore'?"},
    {J "compare: [lr]\n", CKH_EINVAL, 2, 10, "'compare' expects a mapping, got a list"},
    {J "expect: {values: {a: [1]}}\n", CKH_EINVAL, 2, 22,
     "'expect.values.a' expects a single value, got a list"},
    {J "faults:\n  - {do: crash, keep: sometimes}\n", CKH_EINVAL, 3, 23,
     "'keep' got unknown value 'sometimes'; expected one of: random, synced, cache"},
    {J "expect: {values: {totla: 145}}\n", CKH_EINVAL, 2, 26,
     "unknown expected value 'totla'; did you mean 'total'?"},
    {J "expect: {values: {total.trainer_0: \"145\"}}\n", CKH_EINVAL, 2, 36,
     "'total.trainer_0' expects an integer, got '145'"},
    {J "expect: {values: {blobs: x}}\n", CKH_EINVAL, 2, 26,
     "'blobs' needs a node: 'blobs.<node>'"},
    {"job:\n  workload: seed-pipeline\n  sector: 1\n", CKH_EINVAL, 3, 3,
     "unknown key 'sector' in 'job'; expected one of: workload, nodes, ranks, epochs, steps, "
     "backend, saver, checkpoint_dir, checkpoint_every, options, disks, collective_timeout, "
     "gpu_memory, defects, command, env, timeout, platform, checkpoint_mount, object_store"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /, sector: 1024}]\n", CKH_EINVAL, 3,
     30, "'job.disks[].sector' expects 512 or 4096, got '1024'"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /, crash_model: ext3}]\n", CKH_EINVAL,
     3, 35, "'job.disks[].crash_model' got unknown value 'ext3'; expected one of: posix-weak, "
            "ext4-ordered"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /, sharing: cluster}]\n", CKH_EINVAL,
     3, 31, "'job.disks[].sharing' got unknown value 'cluster'; expected one of: network, machine"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /, shared: false, sharing: machine}]\n",
     CKH_EINVAL, 3, 46,
     "disk 'disk0': 'sharing' applies to a disk the nodes share; this one has 'shared: false' (one "
     "disk per node)"},
    {"job:\n  workload: seed-pipeline\n  disks: [{name: d}]\n", CKH_EINVAL, 3, 11,
     "disk 'd' needs 'mount' (an absolute path)"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /a}, {mount: /a}]\n", CKH_EINVAL, 3,
     24, "two disks are mounted at '/a'"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /data}]\n", CKH_EINVAL, 2, 3,
     "'job.checkpoint_dir' /ckpt is not under any disk's mount point"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /, capacity: 12XB}]\n", CKH_EINVAL, 3,
     32, "'job.disks[].capacity' expects a size (bytes, or a number with B, KiB, MiB, GiB, TiB, "
         "kB, MB, GB, TB), got '12XB'"},
    {"job:\n  workload: seed-pipeline\n  disks: [{mount: /, bandwidth: fast}]\n", CKH_EINVAL, 3,
     33, "'job.disks[].bandwidth' expects a size per second such as '1GiB/s', got 'fast'"},
    {"job:\n  workload: seed-pipeline\n  collective_timeout: 5\n", CKH_EINVAL, 3, 23,
     "'job.collective_timeout' expects a duration (a number with ns, us, ms, s, m or h), got "
     "'5'"},
    {"job:\n  workload: seed-pipeline\n  nodes: 2\n  ranks: 2\n", CKH_EINVAL, 4, 10,
     "give either 'nodes' or 'ranks', not both"},
    {"job:\n  workload: seed-pipeline\n  checkpoint_every: {epochs: 1, steps: 3}\n", CKH_EINVAL,
     3, 40, "'job.checkpoint_every' takes either 'epochs' or 'steps', not both"},
    {"job:\n  workload: seed-pipeline\n  saver: {keep_last: 2}\n", CKH_EINVAL, 3, 10,
     "'job.saver' needs 'kind' (the saver's name)"},
    {"job:\n  workload: seed-pipeline\n  saver: {kind: atomic-dir, strategy: sync-any}\n",
     CKH_EINVAL, 3, 39,
     "'job.saver.strategy' got unknown value 'sync-any'; did you mean 'sync_any'?"},
    {"", CKH_EPARSE, 1, 1, "the file holds no scenario (empty document)"},
    {"# only a comment\n", CKH_EPARSE, 1, 1, "the file holds no scenario (empty document)"},
    {J "---\n" J, CKH_EPARSE, 3, 1, "a scenario file holds one YAML document; found another"},
    {"- a\n", CKH_EINVAL, 1, 1, "'scenario' expects a mapping, got a list"},
    {"seed: 3\n", CKH_EINVAL, 1, 1, "a scenario needs 'job'"},
    {"job: {nodes: 2}\n", CKH_EINVAL, 1, 6,
     "'job' needs 'workload' (a simulated job) or 'command' (a real program run per node)"},
    {"name: has space\n" J, CKH_EINVAL, 1, 7,
     "'name' may use only letters, digits, '.', '_', '-' and '/', got 'has space'"},
    {"seed: -1\n" J, CKH_EINVAL, 1, 7, "'seed' expects an integer in 0..18446744073709551615, got '-1'"},
    {"seed: 18446744073709551616\n" J, CKH_EINVAL, 1, 7,
     "'seed' expects an integer in 0..18446744073709551615, got '18446744073709551616'"},
    {"tags: [a, a]\n" J, CKH_EINVAL, 1, 11, "'tags' lists 'a' twice"},
    {"? [a]\n: 1\n" J, CKH_EINVAL, 1, 3, "keys of 'scenario' must be plain names, got a list"},
    /* null spellings, sizes, durations and lists of the wrong shape */
    {"name: Null\njob: {workload: seed-pipeline}\n",
     CKH_EINVAL, 1, 7,
     "'name' expects a non-empty string, got nothing"},
    {"name: NULL\njob: {workload: seed-pipeline}\n",
     CKH_EINVAL, 1, 7,
     "'name' expects a non-empty string, got nothing"},
    {"name: null\njob: {workload: seed-pipeline}\n",
     CKH_EINVAL, 1, 7,
     "'name' expects a non-empty string, got nothing"},
    {"name: \"\"\njob: {workload: seed-pipeline}\n",
     CKH_EINVAL, 1, 7,
     "'name' expects a non-empty string, got ''"},
    {"job: {workload: ddp-train, gpu_memory: 12Q}\n",
     CKH_EINVAL, 1, 40,
     "'job.gpu_memory' expects a size (bytes, or a number with B, KiB, MiB, GiB, TiB, kB, MB, GB, TB), got '12Q'"},
    {"job: {workload: ddp-train, gpu_memory: [1]}\n",
     CKH_EINVAL, 1, 40,
     "'job.gpu_memory' expects a size (bytes, or a number with B, KiB, MiB, GiB, TiB, kB, MB, GB, TB), got a list"},
    {"job: {workload: seed-pipeline, collective_timeout: [1]}\n",
     CKH_EINVAL, 1, 52,
     "'job.collective_timeout' expects a duration (a number with ns, us, ms, s, m or h), got a list"},
    {"job: {workload: seed-pipeline, defects: {a: 1}}\n",
     CKH_EINVAL, 1, 41,
     "'job.defects' expects a list of names, got a mapping"},
    {"tags: [a, [b]]\njob: {workload: seed-pipeline}\n",
     CKH_EINVAL, 1, 11,
     "'tags' expects a non-empty string, got a list"},
    {"job: {workload: [x]}\n",
     CKH_EINVAL, 1, 17,
     "'job.workload' expects a non-empty string, got a list"},
    /* checkpoint intervals, argv entries, timeouts and the platform of a command job */
    {"job: {workload: seed-pipeline, checkpoint_every: {epochs: 0}}\n",
     CKH_EINVAL, 1, 59,
     "'job.checkpoint_every.epochs' expects an integer in 1..1000000, got '0'"},
    {"job: {workload: seed-pipeline, checkpoint_every: {steps: 0}}\n",
     CKH_EINVAL, 1, 58,
     "'job.checkpoint_every.steps' expects an integer in 1..18446744073709551615, got '0'"},
    {"job:\n  command: [sh, [x]]\n",
     CKH_EINVAL, 2, 17,
     "'job.command' expects one argument per entry, got a list"},
    {"job:\n  command: [sh]\n  checkpoint_mount: /a//b\n",
     CKH_EINVAL, 3, 21,
     "'job.checkpoint_mount' expects an absolute folder path other than '/', without '.', '..', '//' or a trailing '/' (such as /ckh/ckpt), got '/a//b'"},
    {"job:\n  command: [sh]\n  timeout: [1]\n",
     CKH_EINVAL, 3, 12,
     "'job.timeout' expects a duration (a number with ns, us, ms, s, m or h), got a list"},
    {"job:\n  command: [sh]\n  timeout: 0s\n",
     CKH_EINVAL, 3, 12,
     "'job.timeout' expects at least 1ms, got '0s'"},
    {"job:\n  command: [sh]\n  platform: moon\n",
     CKH_EINVAL, 3, 13,
     "'job.platform' applies to workload jobs (a command job's programs are real processes already)"},
    /* disks' booleans, sizes, durations, mounts and crash models; negative counts */
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, shared: maybe}\n",
     CKH_EINVAL, 4, 26,
     "'job.disks[].shared' expects true or false, got 'maybe'"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, shared: [1]}\n",
     CKH_EINVAL, 4, 26,
     "'job.disks[].shared' expects true or false, got a list"},
    {"job: {workload: seed-pipeline, saver: {kind: atomic-dir, keep_last: -2}}\n",
     CKH_EINVAL, 1, 69,
     "'job.saver.keep_last' expects an integer in 0..1000000, got '-2'"},
    {"job: {workload: seed-pipeline, checkpoint_every: {steps: -1}}\n",
     CKH_EINVAL, 1, 58,
     "'job.checkpoint_every.steps' expects an integer in 1..18446744073709551615, got '-1'"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, capacity: lots}\n",
     CKH_EINVAL, 4, 28,
     "'job.disks[].capacity' expects a size (bytes, or a number with B, KiB, MiB, GiB, TiB, kB, MB, GB, TB), got 'lots'"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, latency: [1]}\n",
     CKH_EINVAL, 4, 27,
     "'job.disks[].latency' expects a duration (a number with ns, us, ms, s, m or h), got a list"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: rel}\n",
     CKH_EINVAL, 4, 15,
     "'job.disks[].mount' must be an absolute path without '..' (it may not leave the scenario's working folder), got 'rel'"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, crash_model: zfs}\n",
     CKH_EINVAL, 4, 31,
     "'job.disks[].crash_model' got unknown value 'zfs'; expected one of: posix-weak, ext4-ordered"},
    /* a command job's verify and explore sections */
    {"job: {command: [sh]}\nexplore: {start: lukewarm}\n",
     CKH_EINVAL, 2, 18,
     "'explore.start' got unknown value 'lukewarm'; expected one of: auto, cold, warm"},
    {"job: {command: [sh]}\nexplore: {max_states: 0}\n",
     CKH_EINVAL, 2, 23,
     "'explore.max_states' expects an integer in 1..18446744073709551615, got '0'"},
    {"job: {command: [sh]}\nexplore: {time_limit: soon}\n",
     CKH_EINVAL, 2, 23,
     "'explore.time_limit' expects a duration (a number with ns, us, ms, s, m or h), got 'soon'"},
    {"job: {command: [sh]}\nexplore: {from_step: -1}\n",
     CKH_EINVAL, 2, 22,
     "'explore.from_step' expects an integer in 0..9223372036854775807, got '-1'"},
    {"job: {command: [sh]}\nexplore: {to_step: x}\n",
     CKH_EINVAL, 2, 20,
     "'explore.to_step' expects an integer in 0..9223372036854775807, got 'x'"},
    {"job: {command: [sh]}\nexplore: {expect: maybe}\n",
     CKH_EINVAL, 2, 19,
     "'explore.expect' got unknown value 'maybe'; expected one of: pass, fail"},
    {"job: {command: [sh]}\nexplore: {symptom: [a]}\n",
     CKH_EINVAL, 2, 20,
     "'explore.symptom' expects a non-empty string, got a list"},
    {"job: {command: [sh]}\nexplore: {crashes: some}\n",
     CKH_EINVAL, 2, 20,
     "'explore.crashes' got unknown value 'some'; did you mean 'none'?"},
    {"job: {command: [sh]}\nexplore: {others: asleep}\n",
     CKH_EINVAL, 2, 19,
     "'explore.others' got unknown value 'asleep'; expected one of: killed, running"},
    {"job: {command: [sh]}\nexplore: {check: maybe}\n",
     CKH_EINVAL, 2, 18,
     "'explore.check' got unknown value 'maybe'; expected one of: auto, verify, restart"},
    {"job: {command: [sh]}\nverify: []\n",
     CKH_EINVAL, 2, 9,
     "'verify' expects a non-empty list of arguments such as [python3, train.py] (no shell: [sh, -c, \"...\"] for one), got a list"},
    {"job: {command: [sh]}\nexplore: {from_step: 3, to_step: 2}\n",
     CKH_EINVAL, 2, 10,
     "'explore.from_step' (3) is past 'explore.to_step' (2)"},
    /* fault triggers, fault actions, restart and expect */
    {J "faults:\n  - {on: {op: write, epoch: -1}, do: kill}\n",
     CKH_EINVAL, 3, 29,
     "'on.epoch' expects an integer in 0..9223372036854775807, got '-1'"},
    {J "faults:\n  - {on: {op: write, step: x}, do: kill}\n",
     CKH_EINVAL, 3, 28,
     "'on.step' expects an integer in 0..9223372036854775807, got 'x'"},
    {J "faults:\n  - {on: {op: write, probability: 2}, do: kill}\n",
     CKH_EINVAL, 3, 35,
     "'on.probability' expects a number in (0, 1], got '2'"},
    {J "faults:\n  - {on: {op: write, probability: [1]}, do: kill}\n",
     CKH_EINVAL, 3, 35,
     "'on.probability' expects a number in (0, 1], got a list"},
    {J "faults:\n  - {on: {op: write, run: 0}, do: kill}\n",
     CKH_EINVAL, 3, 27,
     "'on.run' expects a run number in 1..1000000 or 'any', got '0'"},
    {J "faults:\n  - {on: {op: write, run: all}, do: kill}\n",
     CKH_EINVAL, 3, 27,
     "'on.run' expects a run number in 1..1000000 or 'any', got 'all'"},
    {J "faults:\n  - {on: {op: write, run: [1]}, do: kill}\n",
     CKH_EINVAL, 3, 27,
     "'on.run' expects a run number in 1..1000000 or 'any', got a list"},
    {J "faults: {a: 1}\n",
     CKH_EINVAL, 2, 9,
     "'faults' expects a list of faults, got a mapping"},
    {J "restart: {scope: galaxy}\n",
     CKH_EINVAL, 2, 18,
     "'restart.scope' applies to command jobs only (job.command); a simulated job restarts its unfinished nodes, every rank of a group"},
    {J "expect: {golden: ../x.txt}\n",
     CKH_EINVAL, 2, 18,
     "'expect.golden' must be a relative path without '..' (it may not leave the reference folder), got '../x.txt'"},
    {J "expect: {golden: /abs.txt}\n",
     CKH_EINVAL, 2, 18,
     "'expect.golden' must be a relative path without '..' (it may not leave the reference folder), got '/abs.txt'"},
    {J "expect: {values: {digest: 1.5}}\n",
     CKH_EINVAL, 2, 27,
     "'digest' expects an integer or 16 hex digits, got '1.5'"},
    {J "expect: {values: {runs.x: 1}}\n",
     CKH_EINVAL, 2, 27,
     "'runs' counts the job's runs; it takes no node"},
    {J "expect: {values: {nothing: 1}}\n",
     CKH_EINVAL, 2, 28,
     "unknown expected value 'nothing'; expected one of: epochs, total, saves_failed, resumed_from, digest, blobs, runs, restarts"},
    {J "faults:\n  - {on: {op: write}, do: corrupt, mode: zero-range, path: /x, length: 0}\n",
     CKH_EINVAL, 3, 72,
     "'length' expects an integer in 1..18446744073709551615, got '0'"},
    {J "faults:\n  - {on: {op: write}, do: corrupt, mode: older-version, path: /x, back: 0}\n",
     CKH_EINVAL, 3, 73,
     "'back' expects an integer in 1..1000000, got '0'"},
    {J "faults:\n  - {on: {op: write}, do: corrupt, mode: zero}\n",
     CKH_EINVAL, 3, 42,
     "'mode' got unknown value 'zero'; expected one of: bit-flip, truncate, zero-range, delete, older-version"},
    {J "expect: {values: {totals.trainer_0: abc}}\n",
     CKH_EINVAL, 2, 37,
     "unknown expected value 'totals.trainer_0'; did you mean 'total'?"},
    {J "faults:\n  - {on: {op: write, nth: 0}, do: kill}\n",
     CKH_EINVAL, 3, 27,
     "'on.nth' expects an integer in 1..18446744073709551615, got '0'"},
    {J "faults:\n  - {on: {op: write, node: -2}, do: kill}\n",
     CKH_EINVAL, 3, 28,
     "'on.node' expects an integer in 0..1, got '-2'"},
    {J "faults:\n  - {on: {op: write, time: 5}, do: kill}\n",
     CKH_EINVAL, 3, 28,
     "'on.time' expects a duration (a number with ns, us, ms, s, m or h), got '5'"},
    {J "faults:\n  - {on: {op: write}, do: explode}\n",
     CKH_EINVAL, 3, 27,
     "'do' got unknown value 'explode'; expected one of: kill, crash, power-loss, errno, fsync-fail, disk-full, delay, corrupt, remove-dir, dangling-latest, stale-latest, die-in-collective, mismatch-collective, gpu-oom, short-write, sigterm, s3-reset, s3-expire, s3-corrupt, s3-stale-list"},
    {J "faults:\n  - {on: {op: write}}\n",
     CKH_EINVAL, 3, 5,
     "a fault needs 'do:' (the action: kill, crash, power-loss, errno, ...)"},
    {J "faults:\n  - kill\n",
     CKH_EINVAL, 3, 5,
     "'faults[]' expects a mapping with 'do:', got 'kill'"},
    /* disks, commands, env, the checkpoint mount, timeouts, options and names */
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, sector: 1000}\n",
     CKH_EINVAL, 4, 26,
     "'job.disks[].sector' expects 512 or 4096, got '1000'"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, sector: [1]}\n",
     CKH_EINVAL, 4, 26,
     "'job.disks[].sector' expects 512 or 4096, got a list"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, bandwidth: 100MB}\n",
     CKH_EINVAL, 4, 29,
     "'job.disks[].bandwidth' expects a size per second such as '1GiB/s', got '100MB'"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, bandwidth: 100MB/s, ns_per_kib: 3}\n",
     CKH_EINVAL, 4, 50,
     "give either 'bandwidth' or 'ns_per_kib', not both"},
    {"job:\n  workload: seed-pipeline\n  disks: []\n",
     CKH_EINVAL, 3, 10,
     "'job.disks' expects a non-empty list of disks, got a list"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {name: a, mount: /}\n    - {name: a, mount: /x}\n",
     CKH_EINVAL, 5, 7,
     "two disks are named 'a'"},
    {"job:\n  workload: seed-pipeline\n  checkpoint_every: {}\n",
     CKH_EINVAL, 3, 21,
     "'job.checkpoint_every' needs 'epochs' or 'steps'"},
    {"job:\n  command: []\n",
     CKH_EINVAL, 2, 12,
     "'job.command' expects a non-empty list of arguments such as [python3, train.py] (no shell: [sh, -c, \"...\"] for one), got a list"},
    {"job:\n  command: [\"\"]\n",
     CKH_EINVAL, 2, 13,
     "'job.command' expects the program as its first argument, got ''"},
    {"job:\n  command: {rank_01: [a]}\n",
     CKH_EINVAL, 2, 13,
     "'job.command' keys are node names (rank_0, rank_1, ...) or 'default', got 'rank_01'"},
    {"job:\n  command: {rank_x: [a]}\n",
     CKH_EINVAL, 2, 13,
     "'job.command' keys are node names (rank_0, rank_1, ...) or 'default', got 'rank_x'"},
    {"job:\n  command: {}\n",
     CKH_EINVAL, 2, 12,
     "'job.command' expects an argv list, or a mapping from node names (rank_0, ...) and 'default' to argv lists"},
    {"job:\n  command: [a]\n  env: {1ABC: x}\n",
     CKH_EINVAL, 3, 15,
     "'job.env' expects variable names (letters, digits, '_'; not starting with a digit), got '1ABC'"},
    {"job:\n  command: [a]\n  env: {A-B: x}\n",
     CKH_EINVAL, 3, 14,
     "'job.env' expects variable names (letters, digits, '_'; not starting with a digit), got 'A-B'"},
    {"job:\n  command: [a]\n  checkpoint_mount: /a/../b\n",
     CKH_EINVAL, 3, 21,
     "'job.checkpoint_mount' expects an absolute folder path other than '/', without '.', '..', '//' or a trailing '/' (such as /ckh/ckpt), got '/a/../b'"},
    {"job:\n  command: [a]\n  checkpoint_mount: /a/.\n",
     CKH_EINVAL, 3, 21,
     "'job.checkpoint_mount' expects an absolute folder path other than '/', without '.', '..', '//' or a trailing '/' (such as /ckh/ckpt), got '/a/.'"},
    {"job:\n  command: [a]\n  checkpoint_mount: rel\n",
     CKH_EINVAL, 3, 21,
     "'job.checkpoint_mount' expects an absolute folder path other than '/', without '.', '..', '//' or a trailing '/' (such as /ckh/ckpt), got 'rel'"},
    {"job:\n  command: [a]\n  timeout: 500us\n",
     CKH_EINVAL, 3, 12,
     "'job.timeout' expects at least 1ms, got '500us'"},
    {"job:\n  workload: seed-pipeline\n  options: {a: [1]}\n",
     CKH_EINVAL, 3, 16,
     "'job.options.a' expects a single value, got a list"},
    {"job:\n  workload: seed-pipeline\n  options: {a: {b: 1}}\n",
     CKH_EINVAL, 3, 16,
     "'job.options.a' expects a single value, got a mapping"},
    {"name: ~\njob: {workload: seed-pipeline}\n",
     CKH_EINVAL, 1, 7,
     "'name' expects a non-empty string, got nothing"},
    {"job:\n  command: [a]\n  checkpoint_mount: /a/..\n",
     CKH_EINVAL, 3, 21,
     "'job.checkpoint_mount' expects an absolute folder path other than '/', without '.', '..', '//' or a trailing '/' (such as /ckh/ckpt), got '/a/..'"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, bandwidth: [1]}\n",
     CKH_EINVAL, 4, 29,
     "'job.disks[].bandwidth' expects a size per second such as '1GiB/s', got a list"},
    {"job:\n  workload: seed-pipeline\n  disks:\n    - {mount: /, bandwidth: 0/s}\n",
     CKH_EINVAL, 4, 29,
     "'job.disks[].bandwidth' expects a size per second such as '1GiB/s', got '0/s'"},
    {"job:\n  workload: seed-pipeline\n  disks: {a: 1}\n",
     CKH_EINVAL, 3, 10,
     "'job.disks' expects a non-empty list of disks, got a mapping"},
    {"job:\n  command: {default: [a], rank_0: []}\n",
     CKH_EINVAL, 2, 35,
     "'job.command.rank_0' expects a non-empty list of arguments such as [python3, train.py] (no shell: [sh, -c, \"...\"] for one), got a list"},
    {"job:\n  command: [a]\n  env: {\"\": x}\n",
     CKH_EINVAL, 3, 13,
     "'job.env' expects variable names (letters, digits, '_'; not starting with a digit), got ''"},
};

START_TEST(test_bad_input)
{
    const struct bad_case *c = &bad_cases[_i];
    struct ckh_scenario *s = (void *)1;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_string(c->text, strlen(c->text), "bad.yaml", &opts, &s, &err);
    ck_assert_msg(rc == c->code, "case %d: rc %d (%s), want %d; msg: %s", _i, rc,
                  ckh_err_name(rc), c->code, err.msg);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(err.code, rc);
    ck_assert_str_eq(err.file, "bad.yaml");
    ck_assert_msg(err.line == c->line && err.column == c->column,
                  "case %d: at %d:%d, want %d:%d (%s)", _i, err.line, err.column, c->line,
                  c->column, err.msg);
    size_t lm = strlen(c->msg);
    if (lm && c->msg[lm - 1] == '*')
        ck_assert_msg(!strncmp(err.msg, c->msg, lm - 1), "case %d: msg '%s'", _i, err.msg);
    else
        ck_assert_msg(!strcmp(err.msg, c->msg), "case %d: msg '%s'\n want '%s'", _i, err.msg,
                      c->msg);
}
END_TEST

START_TEST(test_bad_file_format)
{
    struct ckh_scenario *s;
    struct ckh_scn_error err;
    char buf[1024];
    const char *p = data_path("bad/unknown-key.yaml");
    ck_assert_int_eq(ckh_scenario_parse_file(p, &opts, &s, &err), CKH_EINVAL);
    ckh_scn_error_format(&err, buf, sizeof(buf));
    char want[1200];
    snprintf(want, sizeof(want), "%s:3:3: unknown key 'epocs' in 'job'; did you mean 'epochs'?",
             p);
    ck_assert_str_eq(buf, want);
}
END_TEST

/* A command job with every key of its own (commands per node, env, the
 * checkpoint mount, an object store, verify and an explore section) is
 * written as it was read: the text reads back to the same text. */
START_TEST(test_command_scenario_round_trip)
{
    static const char text[] =
        "name: round-trip\n"
        "job:\n"
        "  command:\n"
        "    default: [python3, train.py]\n"
        "    rank_1: [python3, train.py, --slow]\n"
        "  nodes: 2\n"
        "  env: {A_B: \"1\", C: \"x y\"}\n"
        "  timeout: 90s\n"
        "  checkpoint_mount: /ckh/other\n"
        "  object_store:\n"
        "    buckets: [ckpt, logs]\n"
        "    consistency: eventual\n"
        "    delay_ops: 3\n"
        "verify: [python3, verify.py]\n"
        "explore:\n"
        "  check: restart\n"
        "  max_states: 5\n"
        "  time_limit: 2s\n"
        "  from_step: 1\n"
        "  to_step: 3\n"
        "  expect: fail\n"
        "  start: warm\n"
        "  crashes: power-loss\n"
        "  others: running\n"
        "  symptom: \"lost \\\"epoch\\\"\"\n";
    struct ckh_scenario *a = parse_ok(text);
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    FILE *f = open_memstream(&t1, &n1);
    ck_assert_int_eq(ckh_scenario_write(f, a), 0);
    ck_assert_int_eq(fclose(f), 0);
    struct ckh_scenario *b = parse_ok(t1);
    f = open_memstream(&t2, &n2);
    ck_assert_int_eq(ckh_scenario_write(f, b), 0);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(t1, t2);
    ck_assert_ptr_nonnull(strstr(t1, "  command:\n    default: [\"python3\", \"train.py\"]\n"));
    ck_assert_ptr_nonnull(strstr(t1, "    rank_1: [\"python3\", \"train.py\", \"--slow\"]\n"));
    ck_assert_ptr_nonnull(strstr(t1, "  timeout: 90000000000ns\n"));
    ck_assert_ptr_nonnull(strstr(t1, "  object_store:\n    buckets: [\"ckpt\", \"logs\"]\n    consistency: eventual\n"
                                     "    delay_ops: 3\n"));
    ck_assert_ptr_nonnull(strstr(t1, "explore:\n  check: restart\n  max_states: 5\n  time_limit: 2000000000ns\n"
                                     "  from_step: 1\n  to_step: 3\n  expect: fail\n  start: warm\n"
                                     "  crashes: power-loss\n  others: running\n  symptom: \"lost \\\"epoch\\\"\"\n"));
    ck_assert_int_eq(ckh_scenario_write(NULL, a), CKH_EINVAL);
    ck_assert_int_eq(ckh_scenario_write(stdout, NULL), CKH_EINVAL);
    ckh_scenario_free(a);
    ckh_scenario_free(b);
    free(t1);
    free(t2);
}
END_TEST

static Suite *scenario_suite(void)
{
    Suite *s = suite_create("scenario");
    TCase *tc = tcase_create("parse");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_full_file);
    tcase_add_test(tc, test_disk_sharing);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_variants);
    tcase_add_test(tc, test_restarts_and_compare);
    tcase_add_test(tc, test_actions);
    tcase_add_test(tc, test_names_of_enums);
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_edit_distance);
    tcase_add_test(tc, test_bad_args);
    tcase_add_test(tc, test_out_of_memory);
    suite_add_tcase(s, tc);
    TCase *bad = tcase_create("errors");
    tcase_set_timeout(bad, 60);
    tcase_add_loop_test(bad, test_bad_input, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
    tcase_add_test(bad, test_bad_file_format);
    tcase_add_test(bad, test_command_scenario_round_trip);
    tcase_add_test(bad, test_truncations);
    suite_add_tcase(s, bad);
    TCase *dir = tcase_create("folders");
    tcase_set_timeout(dir, 60);
    tcase_add_test(dir, test_filter);
    tcase_add_test(dir, test_load_dir);
    suite_add_tcase(s, dir);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(scenario_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
