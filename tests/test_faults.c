/* Tests of the fault descriptors (harness/model/faults/) and of the scenario
 * grammar they take part in (harness/model/):
 *   - the registry lists one descriptor per action kind, in enum order,
 *     and the at-rest answer of each descriptor is what the runner does;
 *   - each descriptor names the modes that deliver it; a mode refuses the
 *     others in one wording, and an unknown node is worded once;
 *   - parse -> write -> parse gives an equal model for every fault and
 *     every key of every fault, and every key of the other sections;
 *   - the writer refuses a value the grammar cannot express (an errno no
 *     fault injects) instead of writing another;
 *   - parsing is linear: a 200k-key job.options and a 100k-tag list parse
 *     (no timing is asserted; a quadratic parser exceeds the timeout);
 *   - a corrupt offset whose bit index or range overflows is refused at
 *     parse time with the fault's line;
 *   - the fuzzer draws faults through the descriptors, by tier;
 *   - docs/SCENARIOS.md lists every fault with its descriptor's keys and
 *     meaning. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/fs.h"
#include "ckh/simfs.h"
#include "model/fault.h"
#include "model/scenario.h"
#include "search/fuzz.h"

/* ---- helpers ---- */

static struct ckh_scenario *parse(const char *text)
{
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_scenario_parse_string(text, strlen(text), "t.yaml", NULL, &sc, &err);
    if (rc) {
        char m[700];
        ckh_scn_error_format(&err, m, sizeof m);
        ck_abort_msg("does not parse: %s\n%s", m, text);
    }
    return sc;
}

static char *write_str(const struct ckh_scenario *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    int rc = ckh_scenario_write(f, sc);
    fclose(f);
    ck_assert_int_eq(rc, 0);
    return buf;
}

#define STR_EQ(a, b) ck_assert_msg(((a) == NULL) == ((b) == NULL) && (!(a) || !strcmp((a), (b))), \
                                   "%s: '%s' != '%s'", #a, (a) ? (a) : "(null)", (b) ? (b) : "(null)")

static void kv_eq(const struct ckh_scn_kv *a, const struct ckh_scn_kv *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        STR_EQ(a[i].key, b[i].key);
        STR_EQ(a[i].text, b[i].text);
        ck_assert_int_eq(a[i].type, b[i].type);
        ck_assert_int_eq(a[i].i, b[i].i);
        ck_assert(a[i].f == b[i].f);
        ck_assert_int_eq(a[i].b, b[i].b);
    }
}

static void names_eq(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    ck_assert_uint_eq(na, nb);
    for (size_t i = 0; i < na; i++)
        STR_EQ(a[i], b[i]);
}

static void job_eq(const struct ckh_scn_job *a, const struct ckh_scn_job *b)
{
    STR_EQ(a->workload, b->workload);
    ck_assert_uint_eq(a->nodes, b->nodes);
    ck_assert_uint_eq(a->epochs, b->epochs);
    ck_assert_uint_eq(a->steps, b->steps);
    STR_EQ(a->backend, b->backend);
    STR_EQ(a->saver.kind, b->saver.kind);
    ck_assert_uint_eq(a->saver.keep_last, b->saver.keep_last);
    ck_assert_int_eq(a->saver.strategy, b->saver.strategy);
    STR_EQ(a->saver.name, b->saver.name);
    STR_EQ(a->checkpoint_dir, b->checkpoint_dir);
    ck_assert_uint_eq(a->every_epochs, b->every_epochs);
    ck_assert_uint_eq(a->every_steps, b->every_steps);
    ck_assert_uint_eq(a->noptions, b->noptions);
    kv_eq(a->options, b->options, a->noptions);
    ck_assert_uint_eq(a->ndisks, b->ndisks);
    for (size_t i = 0; i < a->ndisks; i++) {
        const struct ckh_scn_disk *x = &a->disks[i], *y = &b->disks[i];
        STR_EQ(x->name, y->name);
        STR_EQ(x->mount, y->mount);
        ck_assert_int_eq(x->shared, y->shared);
        ck_assert_int_eq(x->model, y->model);
        ck_assert_uint_eq(x->sector_bytes, y->sector_bytes);
        ck_assert_uint_eq(x->capacity_bytes, y->capacity_bytes);
        ck_assert_uint_eq(x->latency_ns, y->latency_ns);
        ck_assert_uint_eq(x->ns_per_kib, y->ns_per_kib);
    }
    ck_assert_uint_eq(a->collective_timeout_ns, b->collective_timeout_ns);
    ck_assert_uint_eq(a->gpu_mem_bytes, b->gpu_mem_bytes);
    names_eq(a->defects, a->ndefects, b->defects, b->ndefects);
}

static void trigger_eq(const struct ckh_scn_trigger *a, const struct ckh_scn_trigger *b)
{
    ck_assert_int_eq(a->node, b->node);
    STR_EQ(a->node_name, b->node_name);
    ck_assert_int_eq(a->op, b->op);
    STR_EQ(a->path, b->path);
    STR_EQ(a->phase, b->phase);
    ck_assert_int_eq(a->epoch, b->epoch);
    ck_assert_int_eq(a->step, b->step);
    ck_assert_uint_eq(a->nth, b->nth);
    ck_assert_uint_eq(a->time_ns, b->time_ns);
    ck_assert(a->probability == b->probability);
    ck_assert_int_eq(a->repeat, b->repeat);
    ck_assert_uint_eq(a->run, b->run);
    ck_assert_int_eq(a->matches_ops, b->matches_ops);
}

static void action_eq(const struct ckh_scn_action *a, const struct ckh_scn_action *b)
{
    ck_assert_int_eq(a->kind, b->kind);
    ck_assert_int_eq(a->keep, b->keep);
    switch (a->kind) {
    case CKH_SCN_ACT_KILL:
        ck_assert_int_eq(a->u.kill.when, b->u.kill.when);
        ck_assert_uint_eq(a->u.kill.at_bytes, b->u.kill.at_bytes);
        ck_assert(a->u.kill.at_fraction == b->u.kill.at_fraction);
        ck_assert_int_eq(a->u.kill.at_is_fraction, b->u.kill.at_is_fraction);
        break;
    case CKH_SCN_ACT_ERRNO:
        ck_assert_int_eq(a->u.errno_.err, b->u.errno_.err);
        break;
    case CKH_SCN_ACT_DISK_FULL:
        ck_assert_uint_eq(a->u.disk_full.after_bytes, b->u.disk_full.after_bytes);
        STR_EQ(a->u.disk_full.disk, b->u.disk_full.disk);
        break;
    case CKH_SCN_ACT_DELAY:
        ck_assert_uint_eq(a->u.delay.duration_ns, b->u.delay.duration_ns);
        break;
    case CKH_SCN_ACT_CORRUPT:
        ck_assert_int_eq(a->u.corrupt.mode, b->u.corrupt.mode);
        STR_EQ(a->u.corrupt.path, b->u.corrupt.path);
        ck_assert_uint_eq(a->u.corrupt.offset, b->u.corrupt.offset);
        ck_assert_uint_eq(a->u.corrupt.length, b->u.corrupt.length);
        ck_assert_uint_eq(a->u.corrupt.bit, b->u.corrupt.bit);
        ck_assert_uint_eq(a->u.corrupt.back, b->u.corrupt.back);
        break;
    case CKH_SCN_ACT_REMOVE_DIR:
        STR_EQ(a->u.remove_dir.path, b->u.remove_dir.path);
        break;
    case CKH_SCN_ACT_DANGLING_LATEST:
    case CKH_SCN_ACT_STALE_LATEST:
        STR_EQ(a->u.latest.path, b->u.latest.path);
        break;
    case CKH_SCN_ACT_SHORT_WRITE:
        ck_assert_uint_eq(a->u.short_write.bytes, b->u.short_write.bytes);
        ck_assert(a->u.short_write.fraction == b->u.short_write.fraction);
        ck_assert_int_eq(a->u.short_write.is_fraction, b->u.short_write.is_fraction);
        break;
    default:
        break;
    }
}

/* Equal models (positions in the file aside). */
static void scenario_eq(const struct ckh_scenario *a, const struct ckh_scenario *b)
{
    STR_EQ(a->name, b->name);
    STR_EQ(a->description, b->description);
    ck_assert_uint_eq(a->seed, b->seed);
    names_eq(a->tags, a->ntags, b->tags, b->ntags);
    job_eq(&a->job, &b->job);
    ck_assert_uint_eq(a->nfaults, b->nfaults);
    for (size_t i = 0; i < a->nfaults; i++) {
        trigger_eq(&a->faults[i].on, &b->faults[i].on);
        action_eq(&a->faults[i].act, &b->faults[i].act);
        ck_assert_int_eq(a->faults[i].at_rest, b->faults[i].at_rest);
    }
    ck_assert_int_eq(a->restart.resume_epoch, b->restart.resume_epoch);
    ck_assert_uint_eq(a->restart.max_restarts, b->restart.max_restarts);
    ck_assert_uint_eq(a->restart.world_size, b->restart.world_size);
    ck_assert_int_eq(a->expect.outcome, b->expect.outcome);
    ck_assert_int_eq(a->expect.reference, b->expect.reference);
    STR_EQ(a->expect.golden, b->expect.golden);
    ck_assert_uint_eq(a->expect.nvalues, b->expect.nvalues);
    kv_eq(a->expect.values, b->expect.values, a->expect.nvalues);
    names_eq(a->expect.oracles, a->expect.noracles, b->expect.oracles, b->expect.noracles);
    names_eq(a->expect.skip, a->expect.nskip, b->expect.skip, b->expect.nskip);
    names_eq(a->expect.detect, a->expect.ndetect, b->expect.detect, b->expect.ndetect);
}

/* ---- the registry ---- */

START_TEST(test_registry)
{
    size_t n = 0;
    for (; ckh_fault_at(n); n++) {
        const struct ckh_fault_ops *ops = ckh_fault_at(n);
        ck_assert_int_eq(ops->kind, (int)n);
        ck_assert_ptr_eq(ckh_fault_of(ops->kind), ops);
        ck_assert_ptr_eq(ckh_fault_find(ops->name), ops);
        ck_assert_str_eq(ckh_scn_action_name(ops->kind), ops->name);
        ck_assert(ops->summary && ops->summary[0] && ops->keys_doc && ops->meaning);
        /* Armed as a rule, applied at rest, or left to the adapter (gpu-oom). */
        ck_assert(!(ops->arm && ops->apply));
        /* Some mode delivers it; changing data at rest needs simfs. */
        ck_assert(ops->modes != 0 && (ops->modes & ~CKH_FAULT_MODES_ALL) == 0);
        ck_assert(!ops->apply || (ops->needs & CKH_FAULT_NEEDS_DISK_MODEL));
    }
    ck_assert_uint_eq(n, CKH_SCN_ACT__COUNT);
    ck_assert_ptr_null(ckh_fault_find("explode"));
    ck_assert_ptr_null(ckh_fault_of(CKH_SCN_ACT__COUNT));
    /* disk-full changes the disk: it is at rest, as the runner applies it. */
    ck_assert(ckh_scn_action_is_at_rest(CKH_SCN_ACT_DISK_FULL));
    ck_assert(ckh_scn_action_is_at_rest(CKH_SCN_ACT_CORRUPT));
    ck_assert(!ckh_scn_action_is_at_rest(CKH_SCN_ACT_KILL));
    ck_assert(!ckh_scn_action_is_at_rest(CKH_SCN_ACT_GPU_OOM));
    struct ckh_scenario *sc = parse("job: {workload: w}\n"
                                    "faults:\n"
                                    "  - {do: disk-full, after: 10}\n"
                                    "  - {do: disk-full, on: {op: write}}\n"
                                    "  - {do: gpu-oom}\n");
    ck_assert(sc->faults[0].at_rest && ckh_fault_applied_between_runs(&sc->faults[0]));
    ck_assert(!ckh_fault_arms_rule(&sc->faults[0]));
    ck_assert(!sc->faults[1].at_rest && ckh_fault_arms_rule(&sc->faults[1]));
    ck_assert(!sc->faults[2].at_rest && !ckh_fault_arms_rule(&sc->faults[2]));
    ckh_scenario_free(sc);
}
END_TEST

/* ---- modes ---- */

static const char *test_node_name(const void *ctx, int i)
{
    (void)ctx;
    static const char *const names[] = {"trainer_0", "trainer_1"};
    return names[i];
}

/* Which modes deliver what; the one refusal, decided before any run;
 * progress triggers follow acts_on_process; the unknown node's wording. */
START_TEST(test_modes)
{
    char err[600];
    struct ckh_scenario *sc = parse("job: {workload: w, nodes: 2}\nfaults:\n"
                                    "  - {on: {op: fsync}, do: kill}\n"
                                    "  - {on: {op: fsync}, do: sigterm}\n");
    ck_assert_int_eq(ckh_fault_check_mode(sc, CKH_FAULT_MODE_COMMAND, err, sizeof err), 0);
    ck_assert_int_eq(ckh_fault_check_mode(sc, CKH_FAULT_MODE_SIM, err, sizeof err), CKH_EINVAL);
    ck_assert_str_eq(err, "4:5: 'do: sigterm' is delivered only by command jobs (job.command), not by the "
                          "simulator: a workload job's nodes have no signal handler, so a SIGTERM to them is a "
                          "kill (use 'do: kill', after a 'delay' for a grace period)");
    ck_assert_int_eq(ckh_fault_check_mode(sc, CKH_FAULT_MODE_REAL, err, sizeof err), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "4:5: 'do: sigterm' is delivered only by command jobs (job.command), not "
                                      "by the real platform (--platform real): "));
    ckh_fault_refusal(ckh_fault_find("mismatch-collective"), CKH_FAULT_MODE_COMMAND, err, sizeof err);
    ck_assert_str_eq(err, "'do: mismatch-collective' is delivered only by the simulator and the real platform "
                          "(--platform real), not by command jobs (job.command): a command job's processes talk "
                          "over their own network (gloo, NCCL), which ckh does not see; kill a rank instead");

    /* Only what acts on the processes as a whole fires on progress alone. */
    ck_assert_int_eq(ckh_fault_on_process(&sc->faults[0], NULL), CKH_FAULT_PROCESS_KILL);
    uint64_t grace = 0;
    ck_assert_int_eq(ckh_fault_on_process(&sc->faults[1], &grace), CKH_FAULT_PROCESS_PREEMPT);
    ck_assert_uint_eq(grace, 30000000000ull);
    ckh_scenario_free(sc);
    sc = parse("job: {workload: w, nodes: 8}\nfaults:\n"
               "  - {on: {step: 3}, do: kill, when: after}\n"
               "  - {on: {step: 3}, do: crash}\n"
               "  - {on: {step: 3}, do: corrupt, mode: bit-flip, path: /x, offset: 1}\n"
               "  - {on: {node: 5, op: write}, do: kill}\n"
               "  - {on: {node: worker_9, op: write}, do: kill}\n");
    ck_assert(!ckh_scn_fault_is_progress_trigger(&sc->faults[0]));
    ck_assert(ckh_scn_fault_is_progress_trigger(&sc->faults[1]));
    ck_assert(!ckh_scn_fault_is_progress_trigger(&sc->faults[2]));

    /* The rule every mode arms: an at-rest fault at a trigger is a CALL. */
    struct ckh_fault_rule r;
    ckh_fault_rule_of(&sc->faults[2], 1, &r);
    ck_assert_int_eq(r.action.kind, CKH_FAULT_CALL);
    ck_assert_int_eq(r.node, 1);
    ck_assert_int_eq(r.step, 3);

    int node = 7; /* the job's workload gives it two nodes */
    ck_assert_int_eq(ckh_fault_node(&sc->faults[0], 2, test_node_name, NULL, &node, err, sizeof err), 0);
    ck_assert_int_eq(node, -1);
    ck_assert_int_eq(ckh_fault_node(&sc->faults[3], 2, test_node_name, NULL, &node, err, sizeof err), CKH_EINVAL);
    ck_assert_str_eq(err, "6:5: the fault names node 5, which the job does not have (its nodes: trainer_0, "
                          "trainer_1)");
    ck_assert_int_eq(ckh_fault_node(&sc->faults[4], 2, test_node_name, NULL, &node, err, sizeof err), CKH_EINVAL);
    ck_assert_str_eq(err, "7:5: the fault names node 'worker_9', which the job does not have (its nodes: "
                          "trainer_0, trainer_1)");
    ckh_scenario_free(sc);
}
END_TEST

/* ---- round trip ---- */

/* Every fault, every key of every fault, and every key of the other
 * sections (the keys each fault's entries below use are listed in
 * `covered`, checked against the descriptors). */
static const char every_key[] =
    "name: every-key\n"
    "description: \"all the grammar: \\\"quoted\\\"\"\n"
    "seed: 0x2a\n"
    "tags: [one, two]\n"
    "job:\n"
    "  workload: ddp-train\n"
    "  ranks: 3\n"
    "  epochs: 2\n"
    "  steps: 40\n"
    "  backend: minidb\n"
    "  saver: {kind: atomic-dir, keep_last: 2, strategy: sync_any, name: ck}\n"
    "  checkpoint_dir: /data/ckpt\n"
    "  checkpoint_every: {steps: 4}\n"
    "  options: {lr: 0.125, batch: 8, drop_last: true, keys: normalize, label: \"007\"}\n"
    "  disks:\n"
    "    - {name: shared, mount: /data, shared: true, crash_model: ext4-ordered, sector: 512,\n"
    "       capacity: 1MiB, latency: 2ms, bandwidth: 1GiB/s}\n"
    "    - {name: local, mount: /local, shared: false, ns_per_kib: 7}\n"
    "  collective_timeout: 2s\n"
    "  gpu_memory: 64MiB\n"
    "  defects: [rng-not-saved]\n"
    "faults:\n"
    "  - {on: {node: 1, op: write, path: \"/data/ckpt/*\", phase: save, epoch: 1, step: 3, nth: 2,\n"
    "          time: 10ms, repeat: true, run: 2}, do: kill, when: mid-write, at: 25%}\n"
    "  - {on: {op: write}, do: kill, when: mid-write, at: 0.3}\n"
    "  - {on: {op: pwrite}, do: kill, when: mid-write, at: 100}\n"
    "  - {on: {node: rank_2, op: fsync, run: any}, do: kill, when: after}\n"
    "  - {on: {op: fsync, probability: 0.25}, do: crash, keep: synced}\n"
    "  - {on: {op: rename}, do: power-loss, keep: cache}\n"
    "  - {on: {op: open}, do: errno, errno: EIO}\n"
    "  - {on: {op: open}, do: errno, errno: ENOSPC}\n"
    "  - {on: {op: open}, do: errno, errno: EDQUOT}\n"
    "  - {on: {op: open}, do: errno, errno: EACCES}\n"
    "  - {on: {op: open}, do: errno, errno: ENOENT}\n"
    "  - {on: {op: open}, do: errno, errno: EROFS}\n"
    "  - {do: fsync-fail}\n"
    "  - {on: {op: fsync_dir}, do: fsync-fail}\n"
    "  - {do: disk-full, after: 4KiB, disk: local}\n"
    "  - {on: {op: write, nth: 3}, do: disk-full}\n"
    "  - {on: {op: fsync}, do: delay, duration: 1.5ms}\n"
    "  - {on: {run: 2}, do: corrupt, mode: bit-flip, path: /data/ckpt/x, offset: 7, bit: 3}\n"
    "  - {on: {run: 2}, do: corrupt, mode: truncate, path: /data/ckpt/x, offset: 9}\n"
    "  - {on: {run: 2}, do: corrupt, mode: zero-range, path: /data/ckpt/x, offset: 8, length: 16}\n"
    "  - {on: {op: rename}, do: corrupt, mode: delete, path: /data/ckpt/x}\n"
    "  - {on: {run: 3}, do: corrupt, mode: older-version, path: /data/ckpt/x.3, back: 2}\n"
    "  - {on: {run: 2}, do: remove-dir, path: /data/ckpt}\n"
    "  - {on: {run: 2}, do: dangling-latest, path: /data/ckpt/latest}\n"
    "  - {do: stale-latest}\n"
    "  - {on: {op: barrier}, do: die-in-collective}\n"
    "  - {do: mismatch-collective}\n"
    "  - {do: gpu-oom}\n"
    "  - {on: {op: s3_put, path: /b/latest}, do: s3-reset, when: after}\n"
    "  - {on: {run: 2}, do: s3-expire, path: /b/ckpt/latest}\n"
    "  - {on: {op: s3_get}, do: s3-corrupt, path: /b/ckpt/x, offset: 5}\n"
    "  - {on: {op: s3_list, path: \"/b/ckpt/*\", nth: 2}, do: s3-stale-list, ops: 3}\n"
    "  - {on: {op: pwrite, repeat: true}, do: short-write, bytes: 512}\n"
    "  - {on: {op: write}, do: short-write, fraction: 0.3}\n"
    "  - {on: {op: fsync, nth: 2}, do: sigterm, grace: 1.5s}\n"
    "restart: {resume: epoch 1, max_restarts: 5, world_size: 2}\n"
    "expect:\n"
    "  outcome: corruption-detected\n"
    "  reference: false\n"
    "  golden: golden/x.txt\n"
    "  values: {total.rank_0: 145, digest: \"00000000deadbeef\", blobs.rank_1: \"a,b\", runs: 2}\n"
    "  oracles: [reference, values]\n"
    "  skip: [liveness]\n"
    "  detect: [resume-equivalence]\n";

/* The keys of each fault kind the text above uses. */
static const char *const covered[CKH_SCN_ACT__COUNT] = {
    [CKH_SCN_ACT_KILL] = " when at ",
    [CKH_SCN_ACT_CRASH] = " keep ",
    [CKH_SCN_ACT_POWER_LOSS] = " keep ",
    [CKH_SCN_ACT_ERRNO] = " errno ",
    [CKH_SCN_ACT_DISK_FULL] = " after disk ",
    [CKH_SCN_ACT_DELAY] = " duration ",
    [CKH_SCN_ACT_CORRUPT] = " mode path offset length bit back ",
    [CKH_SCN_ACT_REMOVE_DIR] = " path ",
    [CKH_SCN_ACT_DANGLING_LATEST] = " path ",
    [CKH_SCN_ACT_STALE_LATEST] = " path ",
    [CKH_SCN_ACT_SHORT_WRITE] = " bytes fraction ",
    [CKH_SCN_ACT_SIGTERM] = " grace ",
    [CKH_SCN_ACT_S3_RESET] = " when ",
    [CKH_SCN_ACT_S3_EXPIRE] = " path ",
    [CKH_SCN_ACT_S3_CORRUPT] = " path offset ",
    [CKH_SCN_ACT_S3_STALE_LIST] = " ops ",
};

START_TEST(test_round_trip_every_key)
{
    struct ckh_scenario *a = parse(every_key);
    bool seen[CKH_SCN_ACT__COUNT] = {false};
    for (size_t i = 0; i < a->nfaults; i++)
        seen[a->faults[i].act.kind] = true;
    for (size_t k = 0; k < CKH_SCN_ACT__COUNT; k++) {
        const struct ckh_fault_ops *ops = ckh_fault_at(k);
        ck_assert_msg(seen[k], "the round trip misses fault '%s'", ops->name);
        for (size_t j = 0; j < ops->nkeys; j++) {
            char pat[40];
            snprintf(pat, sizeof pat, " %s ", ops->keys[j]);
            ck_assert_msg(covered[k] && strstr(covered[k], pat), "the round trip misses '%s' of '%s'",
                          ops->keys[j], ops->name);
        }
    }
    char *t1 = write_str(a);
    struct ckh_scenario *b = parse(t1);
    scenario_eq(a, b);
    char *t2 = write_str(b);
    ck_assert_str_eq(t1, t2);
    /* Spot checks that the models hold what the text says. */
    ck_assert(a->faults[0].act.u.kill.at_fraction == 0.25);
    ck_assert(a->faults[1].act.u.kill.at_fraction == 0.3);
    ck_assert_uint_eq(a->faults[2].act.u.kill.at_bytes, 100);
    ck_assert_int_eq(a->faults[11].act.u.errno_.err, EROFS);
    ck_assert(a->faults[14].at_rest);
    const struct ckh_scn_fault *sw = &a->faults[a->nfaults - 3];
    ck_assert_int_eq(sw->act.kind, CKH_SCN_ACT_SHORT_WRITE);
    ck_assert(!sw->act.u.short_write.is_fraction);
    ck_assert_uint_eq(sw->act.u.short_write.bytes, 512);
    ck_assert(sw[1].act.u.short_write.is_fraction && sw[1].act.u.short_write.fraction == 0.3);
    ckh_scenario_free(a);
    ckh_scenario_free(b);
    free(t1);
    free(t2);
}
END_TEST

/* Fractions that no short percentage expresses still come back exact. */
START_TEST(test_round_trip_kill_fractions)
{
    static const double fr[] = {0.0, 1.0, 0.1, 1.0 / 3.0, 0.123456789012345678, 1e-7};
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) {
        struct ckh_scenario *a = parse("job: {workload: w}\n"
                                       "faults:\n  - {on: {op: write}, do: kill, when: mid-write}\n");
        a->faults[0].act.u.kill.at_fraction = fr[i];
        char *t = write_str(a);
        struct ckh_scenario *b = parse(t);
        ck_assert_msg(b->faults[0].act.u.kill.at_fraction == fr[i], "%.17g:\n%s", fr[i], t);
        ck_assert(b->faults[0].act.u.kill.at_is_fraction);
        ckh_scenario_free(a);
        ckh_scenario_free(b);
        free(t);
    }
}
END_TEST

/* An errno no fault can inject is refused, never written as EIO. */
START_TEST(test_writer_refuses_unknown_values)
{
    struct ckh_scenario *a = parse("job: {workload: w}\nfaults:\n  - {do: errno, errno: ENOENT}\n");
    char *buf = NULL;
    size_t len = 0;
    a->faults[0].act.u.errno_.err = EPERM;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_scenario_write(f, a), CKH_EINVAL);
    fclose(f);
    free(buf);
    a->faults[0].act.u.errno_.err = ENOENT;
    a->job.disks[0].model = (enum ckh_crash_model)7;
    f = open_memstream(&buf, &len);
    ck_assert_int_eq(ckh_scenario_write(f, a), CKH_EINVAL);
    fclose(f);
    free(buf);
    ckh_scenario_free(a);
}
END_TEST

/* ---- parse-time checks ---- */

static void parse_fails(const char *text, int line, const char *msg)
{
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "t.yaml", NULL, &sc, &err), CKH_EINVAL);
    ck_assert_ptr_null(sc);
    ck_assert_int_eq(err.line, line);
    ck_assert_msg(strstr(err.msg, msg) != NULL, "%s", err.msg);
}

START_TEST(test_corrupt_offsets_that_overflow)
{
    /* 2^61 + 40: * 8 wraps to bit 320, byte 40. */
    parse_fails("job: {workload: w}\nfaults:\n"
                "  - {do: corrupt, mode: bit-flip, path: /x, offset: 2305843009213693992}\n",
                3, "'offset' of a bit-flip must be at most 2305843009213693951");
    parse_fails("job: {workload: w}\nfaults:\n"
                "  - {do: corrupt, mode: zero-range, path: /x, offset: 18446744073709551615, length: 2}\n",
                3, "'offset' + 'length' of a zero-range must fit in 64 bits");
    struct ckh_scenario *sc = parse("job: {workload: w}\nfaults:\n"
                                    "  - {do: corrupt, mode: bit-flip, path: /x, offset: 2305843009213693951, bit: 7}\n");
    ck_assert_uint_eq(sc->faults[0].act.u.corrupt.offset, 2305843009213693951ull);
    ckh_scenario_free(sc);
}
END_TEST

START_TEST(test_fault_key_errors)
{
    parse_fails("job: {workload: w}\nfaults:\n  - {do: kill, errno: EIO}\n", 3,
                "'errno' does not apply to 'do: kill'");
    parse_fails("job: {workload: w}\nfaults:\n  - {do: kill, node: 1}\n", 3,
                "trigger keys such as 'node' go under 'on:'");
    parse_fails("job: {workload: w}\nfaults:\n  - {do: corrupt, mode: truncate, path: /x, bit: 1}\n", 3,
                "'bit' does not apply to 'mode: truncate'");
    parse_fails("job: {workload: w}\nfaults:\n  - {do: explode}\n", 3, "'do' got unknown value 'explode'");
    parse_fails("job: {workload: w}\nfaults:\n  - {do: kill, wen: after}\n", 3, "did you mean 'when'?");
    parse_fails("job: {workload: w}\nfaults:\n  - {do: short-write, bytes: 1, fraction: 0.5}\n", 3,
                "'do: short-write' takes 'bytes' or 'fraction', not both");
    parse_fails("job: {workload: w}\nfaults:\n  - {on: {op: fsync}, do: short-write}\n", 3,
                "'do: short-write' needs 'on.op' to be write or pwrite, not 'fsync'");
    parse_fails("job: {workload: w}\nfaults:\n  - {do: short-write, fraction: 1.5}\n", 3,
                "'fraction' expects a number in [0.0, 1.0], got");
    parse_fails("job: {workload: w}\nfaults:\n  - {on: {op: s3_put}, do: s3-stale-list}\n", 3,
                "'do: s3-stale-list' needs 'on.op: s3_list'");
    parse_fails("job: {workload: w}\nfaults:\n  - {on: {op: s3_list}, do: s3-stale-list, ops: 0}\n", 3,
                "'ops'");
}
END_TEST

/* short-write: half by default; bytes or a fraction become the rule's
 * keep_bytes or keep_fraction; 0 bytes is armed as asked. */
START_TEST(test_short_write_arms)
{
    struct ckh_scenario *sc = parse("job: {workload: w}\nfaults:\n"
                                    "  - {do: short-write}\n"
                                    "  - {on: {op: pwrite}, do: short-write, bytes: 4KiB}\n"
                                    "  - {do: short-write, fraction: 0}\n"
                                    "  - {do: short-write, bytes: 0}\n");
    const struct ckh_fault_ops *ops = ckh_fault_find("short-write");
    ck_assert_ptr_nonnull(ops);
    struct ckh_fault_rule r[4];
    for (int i = 0; i < 4; i++) {
        ckh_fault_rule_init(&r[i]);
        ops->arm(&sc->faults[i], &r[i]);
        ck_assert_int_eq(r[i].action.kind, CKH_FAULT_SHORT_WRITE);
    }
    ck_assert(sc->faults[0].act.u.short_write.is_fraction);
    ck_assert(r[0].keep_fraction == 0.5 && r[0].action.keep_bytes == 0);
    ck_assert(r[1].keep_fraction == 0 && r[1].action.keep_bytes == 4096);
    ck_assert(r[2].keep_fraction == 0 && r[2].action.keep_bytes == 0);
    ck_assert(r[3].keep_fraction == 0 && r[3].action.keep_bytes == 0);
    ck_assert_int_eq(r[0].kind, -1); /* the simulator matches only writes */
    ckh_scenario_free(sc);
}
END_TEST

/* ---- linear parsing ---- */

START_TEST(test_big_maps_parse)
{
    /* Scaled down under valgrind only (scripts/memcheck.sh). */
    const size_t nkeys = getenv("CKH_VALGRIND") ? 20000 : 200000, ntags = nkeys / 2;
    size_t cap = 64 + (size_t)nkeys * 32 + (size_t)ntags * 16, len = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    len += (size_t)snprintf(t + len, cap - len, "tags: [");
    for (size_t i = 0; i < ntags; i++)
        len += (size_t)snprintf(t + len, cap - len, "%st%zu", i ? ", " : "", i);
    len += (size_t)snprintf(t + len, cap - len, "]\njob:\n  workload: w\n  options:\n");
    for (size_t i = 0; i < nkeys; i++)
        len += (size_t)snprintf(t + len, cap - len, "    key_%zu: %zu\n", i, i);
    struct ckh_scenario *sc = parse(t);
    ck_assert_uint_eq(sc->job.noptions, nkeys);
    ck_assert_uint_eq(sc->ntags, ntags);
    char last[32];
    snprintf(last, sizeof last, "key_%zu", nkeys - 1);
    ck_assert_str_eq(sc->job.options[nkeys - 1].key, last);
    ck_assert_int_eq(sc->job.options[12345].i, 12345);
    ckh_scenario_free(sc);
    /* A duplicate deep in a big map is still found, at its line. */
    len += (size_t)snprintf(t + len, cap - len, "    key_77: 1\n");
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(t, len, "t.yaml", NULL, &sc, &err), CKH_EINVAL);
    ck_assert_int_eq(err.line, (int)(4 + nkeys + 1));
    ck_assert_str_eq(err.msg, "duplicate key 'key_77' in 'job.options' (first at line 82)");
    free(t);
}
END_TEST

START_TEST(test_duplicates_in_lists)
{
    /* The first problem in file order wins: the repeated name before the
     * unknown one. */
    struct ckh_scn_names only = {(const char *const[]){"a", "b", "c"}, 3};
    struct ckh_scn_options o = {.oracles = only};
    const char *text = "job: {workload: w}\nexpect: {oracles: [a, b, a, zz]}\n";
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "t.yaml", &o, &sc, &err), CKH_EINVAL);
    ck_assert_str_eq(err.msg, "'expect.oracles' lists 'a' twice");
    text = "job: {workload: w}\nexpect: {oracles: [a, zz, a]}\n";
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "t.yaml", &o, &sc, &err), CKH_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'expect.oracles' got unknown value 'zz'"));
    char big[4096] = "job: {workload: w}\ntags: [";
    for (int i = 0; i < 40; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "t%d, ", i % 30 == 29 ? 3 : i);
    strcat(big, "end]\n");
    ck_assert_int_eq(ckh_scenario_parse_string(big, strlen(big), "t.yaml", NULL, &sc, &err), CKH_EINVAL);
    ck_assert_str_eq(err.msg, "'tags' lists 't3' twice");
    /* Disks: 40 of them (sorted, not pairwise), a mount repeated at the
     * 31st, a name at the 36th: the earlier problem is reported. */
    char disks[8192] = "job:\n  workload: w\n  disks:\n";
    for (int i = 0; i < 40; i++)
        snprintf(disks + strlen(disks), sizeof disks - strlen(disks), "    - {name: d%d, mount: /m%d}\n",
                 i == 35 ? 2 : i, i == 30 ? 5 : i);
    ck_assert_int_eq(ckh_scenario_parse_string(disks, strlen(disks), "t.yaml", NULL, &sc, &err), CKH_EINVAL);
    ck_assert_str_eq(err.msg, "two disks are mounted at '/m5'");
    ck_assert_int_eq(err.line, 4 + 30);
}
END_TEST


/* ---- generation (the descriptors' generate ops, via the fuzzer) ---- */

/* Generated faults parse, come from their tier (recoverable seeds draw only
 * fuzz_recoverable kinds), fit their job (collective and latest-pointer
 * faults only in ddp-train) and round-trip through the writer. */
START_TEST(test_generated_faults)
{
    bool drawn[CKH_SCN_ACT__COUNT] = {false};
    uint64_t nseeds = getenv("CKH_VALGRIND") ? 60 : 300;
    for (uint64_t seed = 0; seed < nseeds; seed++) {
        char *text = NULL;
        ck_assert_int_eq(ckh_fuzz_generate(seed, NULL, &text), 0);
        struct ckh_scenario *a = parse(text);
        bool recoverable = strstr(text, "(recoverable tier)") != NULL;
        bool ddp = strcmp(a->job.workload, "ddp-train") == 0;
        for (size_t i = 0; i < a->nfaults; i++) {
            const struct ckh_fault_ops *ops = ckh_fault_of(a->faults[i].act.kind);
            drawn[ops->kind] = true;
            ck_assert_ptr_nonnull(ops->generate);
            ck_assert_msg(!recoverable || ops->fuzz_recoverable, "seed %llu: %s", (unsigned long long)seed, ops->name);
            ck_assert(ddp || !(ops->needs & (CKH_FAULT_NEEDS_LATEST | CKH_FAULT_NEEDS_COLLECTIVES)));
        }
        char *w = write_str(a);
        struct ckh_scenario *b = parse(w);
        scenario_eq(a, b);
        ckh_scenario_free(a);
        ckh_scenario_free(b);
        free(w);
        free(text);
    }
    for (size_t k = 0; k < CKH_SCN_ACT__COUNT && nseeds >= 300; k++)
        ck_assert_msg(drawn[k] == (ckh_fault_at(k)->generate != NULL), "fault '%s'", ckh_fault_at(k)->name);
}
END_TEST

/* ---- the docs ---- */

START_TEST(test_docs_list_every_fault)
{
    char path[1024];
    const char *root = getenv("CKH_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/docs/SCENARIOS.md", root ? root : ".");
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    for (size_t i = 0; ckh_fault_at(i); i++) {
        const struct ckh_fault_ops *ops = ckh_fault_at(i);
        char row[1024];
        snprintf(row, sizeof row, "| `%s` | %s | %s |\n", ops->name, ops->keys_doc, ops->meaning);
        ck_assert_msg(strstr(doc, row) != NULL, "docs/SCENARIOS.md lacks the row\n%s", row);
    }
}
END_TEST

/* ---- at-rest faults on a command job's disk ---- */

static void put_file(struct ckh_simfs *d, const char *path, const char *text)
{
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(ckh_simfs_fs(d), path, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &f), 0);
    ck_assert_int_eq(ckh_file_write_all(f, text, strlen(text)), 0);
    ck_assert_int_eq(ckh_file_close(f), 0);
}

static void read_file(struct ckh_simfs *d, const char *path, char *buf, size_t n)
{
    struct ckh_file *f = NULL;
    ck_assert_int_eq(ckh_fs_open(ckh_simfs_fs(d), path, CKH_O_RDONLY, &f), 0);
    int64_t got = ckh_file_read(f, buf, n - 1);
    ck_assert_int_ge(got, 0);
    buf[got] = '\0';
    ckh_file_close(f);
}

static int latest_of(void *inst, char *buf, size_t n)
{
    (void)inst;
    snprintf(buf, n, "/latest");
    return 0;
}

/* Applies the only fault of text (a command job) to a disk holding a
 * program's checkpoints: `latest` a file naming step_8.pt; step_4.pt,
 * step_8.pt, a temporary .step_12.pt.tmp and a notes.txt beside it. */
static struct ckh_simfs *apply_to_program_disk(const char *text, uint64_t *fired, char *err, size_t errlen,
                                               int *rc)
{
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error e;
    ck_assert_msg(ckh_scenario_parse_string(text, strlen(text), "p.yaml", NULL, &sc, &e) == 0, "%s", e.msg);
    struct ckh_simfs_config dc = {.name = "shared", .seed = 1};
    struct ckh_simfs *d = NULL;
    ck_assert_int_eq(ckh_simfs_create(&dc, &d), 0);
    put_file(d, "/latest", "step_8.pt\n");
    put_file(d, "/step_4.pt", "four");
    put_file(d, "/step_8.pt", "eight");
    put_file(d, "/.step_12.pt.tmp", "twelve");
    put_file(d, "/notes.txt", "n");
    ckh_simfs_sync_all(d);
    struct ckh_simfs *disks[1] = {d};
    struct ckh_fault_env env = {.sc = sc, .nnodes = 1, .disks = disks, .latest_link = latest_of,
                                .fired = fired, .err = err, .errlen = errlen};
    *rc = ckh_fault_of(sc->faults[0].act.kind)->apply(&env, &sc->faults[0], -1);
    ckh_scenario_free(sc);
    return d;
}

/* A program's `latest` is often a file holding a name: stale-latest names
 * the oldest checkpoint of the same shape (not the temporary file, not an
 * unrelated file), dangling-latest a name of that shape that does not
 * exist; the newline stays. */
START_TEST(test_latest_file_pointer)
{
    char buf[64], err[256] = "";
    uint64_t fired = 0;
    int rc;
    struct ckh_simfs *d = apply_to_program_disk("job: {command: [x]}\nfaults: [{on: {run: 2}, do: stale-latest}]\n",
                                                &fired, err, sizeof err, &rc);
    ck_assert_msg(rc == 0, "%s", err);
    read_file(d, "/latest", buf, sizeof buf);
    ck_assert_str_eq(buf, "step_4.pt\n");
    ck_assert_uint_eq(fired, 1);
    ckh_simfs_destroy(d);
    fired = 0;
    d = apply_to_program_disk("job: {command: [x]}\nfaults: [{on: {run: 2}, do: dangling-latest}]\n", &fired, err,
                              sizeof err, &rc);
    ck_assert_msg(rc == 0, "%s", err);
    read_file(d, "/latest", buf, sizeof buf);
    ck_assert_str_eq(buf, "step_1000008.pt\n");
    struct ckh_stat st;
    ck_assert_int_ne(ckh_fs_stat(ckh_simfs_fs(d), "/step_1000008.pt", &st), 0);
    ck_assert_uint_eq(fired, 1);
    ckh_simfs_destroy(d);
}
END_TEST

/* remove-dir of a disk's root empties it (the root itself is the mount). */
START_TEST(test_remove_dir_root_empties)
{
    char err[256] = "";
    uint64_t fired = 0;
    int rc;
    struct ckh_simfs *d = apply_to_program_disk(
        "job: {command: [x]}\nfaults: [{on: {run: 2}, do: remove-dir, path: /}]\n", &fired, err, sizeof err, &rc);
    ck_assert_msg(rc == 0, "%s", err);
    struct ckh_listing l;
    ck_assert_int_eq(ckh_fs_listdir(ckh_simfs_fs(d), "/", &l), 0);
    ck_assert_uint_eq(l.count, 0);
    ckh_fs_listing_free(&l);
    ck_assert_uint_eq(fired, 1);
    ckh_simfs_destroy(d);
}
END_TEST

static Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("descriptors");
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_modes);
    tcase_add_test(tc, test_latest_file_pointer);
    tcase_add_test(tc, test_remove_dir_root_empties);
    tcase_add_test(tc, test_round_trip_every_key);
    tcase_add_test(tc, test_round_trip_kill_fractions);
    tcase_add_test(tc, test_writer_refuses_unknown_values);
    tcase_add_test(tc, test_corrupt_offsets_that_overflow);
    tcase_add_test(tc, test_fault_key_errors);
    tcase_add_test(tc, test_short_write_arms);
    tcase_add_test(tc, test_docs_list_every_fault);
    tcase_add_test(tc, test_generated_faults);
    suite_add_tcase(s, tc);
    TCase *big = tcase_create("linear");
    tcase_set_timeout(big, 120); /* a quadratic parser takes far longer */
    tcase_add_test(big, test_big_maps_parse);
    tcase_add_test(big, test_duplicates_in_lists);
    suite_add_tcase(s, big);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(faults_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
