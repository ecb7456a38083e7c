/* The scenario writer: struct ckh_scenario -> YAML text that parses back
 * to the same scenario (tests/test_faults.c checks parse -> write -> parse
 * for every fault and every key). Used by the shrinker and the fuzzer.
 *
 * Names come from the tables the parser reads (scenario/names.h) and each
 * fault writes its own keys (its descriptor's `write`, faults/fault.h):
 * a value the grammar cannot express is refused (CKH_EINVAL), never
 * written as something else.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/objstore.h"
#include "ckh/op.h"
#include "model/fault.h"
#include "model/names.h"
#include "model/scenario.h"

/* A double-quoted YAML scalar. */
static void q(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void name_list(FILE *f, const char *const *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", f);
        q(f, v[i]);
    }
    fputc(']', f);
}

static void kv_value(FILE *f, const struct ckh_scn_kv *kv)
{
    if (kv->type == CKH_SCN_STR)
        q(f, kv->text);
    else
        fputs(kv->text, f);
}

/* Whether a key that makes the trigger match ops (see
 * struct ckh_scn_trigger.matches_ops) is written besides nth. */
static bool op_key_written(const struct ckh_scn_trigger *t)
{
    return t->node_name || t->node >= 0 || t->op >= 0 || t->path || t->phase || t->epoch >= 0 ||
           t->step >= 0 || t->time_ns || t->probability > 0;
}

static void write_trigger(FILE *f, const struct ckh_scn_trigger *t)
{
    fputs("    on: {", f);
    if (t->node_name) {
        fputs("node: ", f);
        q(f, t->node_name);
        fputs(", ", f);
    } else if (t->node >= 0) {
        fprintf(f, "node: %d, ", t->node);
    }
    if (t->op >= 0)
        fprintf(f, "op: %s, ", ckh_op_name((enum ckh_op_kind)t->op));
    if (t->path) {
        fputs("path: ", f);
        q(f, t->path);
        fputs(", ", f);
    }
    if (t->phase)
        fprintf(f, "phase: %s, ", t->phase);
    if (t->epoch >= 0)
        fprintf(f, "epoch: %" PRId64 ", ", t->epoch);
    if (t->step >= 0)
        fprintf(f, "step: %" PRId64 ", ", t->step);
    if (t->time_ns)
        fprintf(f, "time: %" PRIu64 "ns, ", t->time_ns);
    if (t->probability > 0)
        fprintf(f, "probability: %.17g, ", t->probability);
    else if (t->nth > 1 || (t->matches_ops && !op_key_written(t)))
        fprintf(f, "nth: %" PRIu64 ", ", t->nth); /* an explicit nth: 1 still matches ops */
    if (t->repeat)
        fputs("repeat: true, ", f);
    if (t->run == CKH_SCN_RUN_ANY)
        fputs("run: any}\n", f);
    else
        fprintf(f, "run: %u}\n", t->run);
}

static int write_fault(FILE *f, const struct ckh_scn_fault *x)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(x->act.kind);
    int rc;
    if (!ops)
        return CKH_EINVAL;
    fprintf(f, "  - do: %s\n", ops->name);
    if (ops->write && (rc = ops->write(f, &x->act)) != 0)
        return rc;
    write_trigger(f, &x->on);
    return 0;
}

/* "  key: value\n" with value quoted; nothing when value is NULL. */
static void str_line(FILE *f, const char *indent_key, const char *value)
{
    if (!value)
        return;
    fputs(indent_key, f);
    q(f, value);
    fputc('\n', f);
}

/* "  key: [a, b]\n"; nothing for an empty list. */
static void list_line(FILE *f, const char *indent_key, const char *const *v, size_t n)
{
    if (!n)
        return;
    fputs(indent_key, f);
    name_list(f, v, n);
    fputc('\n', f);
}

/* A free-form map under `key`, one "    k: v" line per entry. */
static void kv_block(FILE *f, const char *indent_key, const struct ckh_scn_kv *kv, size_t n)
{
    if (!n)
        return;
    fprintf(f, "%s\n", indent_key);
    for (size_t i = 0; i < n; i++) {
        fputs("    ", f);
        q(f, kv[i].key);
        fputs(": ", f);
        kv_value(f, &kv[i]);
        fputc('\n', f);
    }
}

static int write_disks(FILE *f, const struct ckh_scn_job *j)
{
    if (j->ndisks)
        fputs("  disks:\n", f);
    for (size_t i = 0; i < j->ndisks; i++) {
        const struct ckh_scn_disk *d = &j->disks[i];
        const char *model = ckh_scn_enum_name(&ckh_scn_crash_models, (int)d->model);
        if (!model)
            return CKH_EINVAL;
        fputs("    - {name: ", f);
        q(f, d->name);
        fputs(", mount: ", f);
        q(f, d->mount);
        fprintf(f, ", shared: %s, crash_model: %s, sector: %u", d->shared ? "true" : "false", model,
                d->sector_bytes);
        if (d->sharing != CKH_SHARING_NETWORK)
            fprintf(f, ", sharing: %s", ckh_scn_enum_name(&ckh_scn_sharings, (int)d->sharing));
        if (d->capacity_bytes)
            fprintf(f, ", capacity: %" PRIu64, d->capacity_bytes);
        fprintf(f, ", latency: %" PRIu64 "ns, ns_per_kib: %" PRIu64 "}\n", d->latency_ns, d->ns_per_kib);
    }
    return 0;
}

/* An argv list, every argument quoted. */
static void argv_list(FILE *f, const struct ckh_scn_command *c)
{
    name_list(f, c->argv, c->argc);
}

/* job.command (the list form when one entry names no node), job.env and
 * job.timeout of a command job. */
static void write_command(FILE *f, const struct ckh_scn_job *j)
{
    if (j->ncommands == 1 && !j->commands[0].node) {
        fputs("  command: ", f);
        argv_list(f, &j->commands[0]);
        fputc('\n', f);
    } else {
        fputs("  command:\n", f);
        for (size_t i = 0; i < j->ncommands; i++) {
            fprintf(f, "    %s: ", j->commands[i].node ? j->commands[i].node : "default");
            argv_list(f, &j->commands[i]);
            fputc('\n', f);
        }
    }
    kv_block(f, "  env:", j->env, j->nenv);
    fprintf(f, "  timeout: %" PRIu64 "ns\n", j->timeout_ns);
    str_line(f, "  checkpoint_mount: ", j->checkpoint_mount);
    if (j->object_store) {
        const struct ckh_scn_object_store *os = j->object_store;
        fputs("  object_store:\n    buckets: ", f);
        name_list(f, os->buckets, os->nbuckets);
        fprintf(f, "\n    consistency: %s\n",
                ckh_objstore_consistency_name((enum ckh_objstore_consistency)os->consistency));
        if (os->delay_ops)
            fprintf(f, "    delay_ops: %" PRIu64 "\n", os->delay_ops);
        str_line(f, "    commit: ", os->commit);
    }
}

static int write_job(FILE *f, const struct ckh_scn_job *j)
{
    fputs("job:\n", f);
    if (j->ncommands) {
        write_command(f, j);
    } else {
        fputs("  workload: ", f);
        q(f, j->workload);
        fputc('\n', f);
    }
    fprintf(f, "  nodes: %u\n", j->nodes ? j->nodes : 1);
    if (j->epochs)
        fprintf(f, "  epochs: %u\n", j->epochs);
    if (j->steps)
        fprintf(f, "  steps: %" PRIu64 "\n", j->steps);
    str_line(f, "  backend: ", j->backend);
    if (j->saver.kind) {
        const char *strategy = ckh_scn_enum_name(&ckh_scn_strategies, (int)j->saver.strategy);
        if (!strategy)
            return CKH_EINVAL;
        fputs("  saver: {kind: ", f);
        q(f, j->saver.kind);
        fprintf(f, ", keep_last: %u, strategy: %s", j->saver.keep_last, strategy);
        if (j->saver.name) {
            fputs(", name: ", f);
            q(f, j->saver.name);
        }
        fputs("}\n", f);
    }
    str_line(f, "  checkpoint_dir: ", j->checkpoint_dir);
    if (j->every_epochs)
        fprintf(f, "  checkpoint_every: {epochs: %u}\n", j->every_epochs);
    else if (j->every_steps)
        fprintf(f, "  checkpoint_every: {steps: %" PRIu64 "}\n", j->every_steps);
    kv_block(f, "  options:", j->options, j->noptions);
    int rc = write_disks(f, j);
    if (rc)
        return rc;
    if (j->collective_timeout_ns)
        fprintf(f, "  collective_timeout: %" PRIu64 "ns\n", j->collective_timeout_ns);
    if (j->gpu_mem_bytes)
        fprintf(f, "  gpu_memory: %" PRIu64 "\n", j->gpu_mem_bytes);
    list_line(f, "  defects: ", j->defects, j->ndefects);
    if (j->platform != CKH_SCN_PLATFORM_SIM) {
        const char *platform = ckh_scn_enum_name(&ckh_scn_platforms, (int)j->platform);
        if (!platform)
            return CKH_EINVAL;
        fprintf(f, "  platform: %s\n", platform);
    }
    return 0;
}

static int write_restart_expect(FILE *f, const struct ckh_scenario *sc)
{
    const struct ckh_scn_expect *e = &sc->expect;
    const char *outcome = ckh_scn_enum_name(&ckh_scn_outcomes, (int)e->outcome);
    if (!outcome)
        return CKH_EINVAL;
    fputs("restart:\n", f);
    if (sc->restart.resume_epoch >= 0)
        fprintf(f, "  resume: epoch %" PRId64 "\n", sc->restart.resume_epoch);
    fprintf(f, "  max_restarts: %u\n", sc->restart.max_restarts);
    if (sc->restart.world_size)
        fprintf(f, "  world_size: %u\n", sc->restart.world_size);
    if (sc->restart.scope == CKH_SCN_RESTART_FAILED)
        fputs("  scope: failed\n", f);
    fprintf(f, "expect:\n  outcome: %s\n  reference: %s\n", outcome, e->reference ? "true" : "false");
    str_line(f, "  golden: ", e->golden);
    kv_block(f, "  values:", e->values, e->nvalues);
    list_line(f, "  oracles: ", e->oracles, e->noracles);
    list_line(f, "  skip: ", e->skip, e->nskip);
    list_line(f, "  detect: ", e->detect, e->ndetect);
    if (e->max_restarts_set)
        fprintf(f, "  max_restarts: %u\n", e->max_restarts);
    if (sc->compare.nignore || sc->compare.ncontent) {
        fputs("compare:\n", f);
        list_line(f, "  ignore: ", sc->compare.ignore, sc->compare.nignore);
        list_line(f, "  content: ", sc->compare.content, sc->compare.ncontent);
    }
    return 0;
}

static int write_scenario(FILE *f, const struct ckh_scenario *sc)
{
    int rc;
    fputs("name: ", f);
    q(f, sc->name ? sc->name : "scenario");
    fputc('\n', f);
    str_line(f, "description: ", sc->description);
    fprintf(f, "seed: %" PRIu64 "\n", sc->seed);
    list_line(f, "tags: ", sc->tags, sc->ntags);
    if ((rc = write_job(f, &sc->job)) != 0)
        return rc;
    if (sc->nfaults)
        fputs("faults:\n", f);
    for (size_t i = 0; i < sc->nfaults; i++)
        if ((rc = write_fault(f, &sc->faults[i])) != 0)
            return rc;
    if ((rc = write_restart_expect(f, sc)) != 0)
        return rc;
    if (sc->verify.argc) {
        fputs("verify: ", f);
        argv_list(f, &sc->verify);
        fputc('\n', f);
    }
    if (sc->explore.present) {
        static const char *const checks[] = {"auto", "verify", "restart"};
        const struct ckh_scn_explore *e = &sc->explore;
        fprintf(f, "explore:\n  check: %s\n", checks[e->check >= 0 && e->check < 3 ? e->check : 0]);
        if (e->max_states)
            fprintf(f, "  max_states: %" PRIu64 "\n", e->max_states);
        if (e->time_limit_ns)
            fprintf(f, "  time_limit: %" PRIu64 "ns\n", e->time_limit_ns);
        if (e->from_step >= 0)
            fprintf(f, "  from_step: %" PRId64 "\n", e->from_step);
        if (e->to_step >= 0)
            fprintf(f, "  to_step: %" PRId64 "\n", e->to_step);
        if (e->expect_fail)
            fputs("  expect: fail\n", f);
        if (e->start == 1 || e->start == 2)
            fprintf(f, "  start: %s\n", e->start == 1 ? "cold" : "warm");
        static const char *const crashes[] = {"all", "crash", "power-loss", "none"};
        if (e->crashes >= 1 && e->crashes <= 4)
            fprintf(f, "  crashes: %s\n", crashes[e->crashes - 1]);
        if (e->others == 1)
            fputs("  others: running\n", f);
        if (e->symptom)
            str_line(f, "  symptom: ", e->symptom);
    }
    return ferror(f) ? -EIO : 0;
}

#ifdef CKH_SLOW_ASSERTS
/* sc's text into *buf (malloc'd): 0, or the writer's code (CKH_ENOMEM when
 * no stream could be opened). */
static int write_text(const struct ckh_scenario *sc, char **buf, size_t *len)
{
    *buf = NULL;
    FILE *f = open_memstream(buf, len);
    if (!f)
        return CKH_ENOMEM;
    int rc = write_scenario(f, sc);
    if (fclose(f) != 0 && rc == 0)
        rc = CKH_ENOMEM;
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

/* Whether sc's text, when it parses, parses back to a scenario whose text
 * is the same. A model built in memory may hold what the grammar refuses
 * (the shrinker's candidates: the parser is their filter), so a refusal
 * is not the writer's fault; a scenario that parses must survive the trip. */
static bool parses_back(const struct ckh_scenario *sc)
{
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (write_text(sc, &a, &na) != 0)
        return true; /* refused (CKH_EINVAL) or no memory: nothing written to compare */
    struct ckh_scenario *back = NULL;
    int rc = ckh_scenario_parse_string(a, na, sc->file, NULL, &back, NULL);
    bool same = rc != 0; /* refused, or no memory: nothing to compare */
    if (rc == 0) {
        int wrc = write_text(back, &b, &nb);
        same = wrc == CKH_ENOMEM || (wrc == 0 && na == nb && memcmp(a, b, na) == 0);
    }
    ckh_scenario_free(back);
    free(a);
    free(b);
    return same;
}
#endif

int ckh_scenario_write(FILE *f, const struct ckh_scenario *sc)
{
    if (!f || !sc || (!sc->job.workload && !sc->job.ncommands))
        return CKH_EINVAL;
    CKH_ASSERT_SLOW(parses_back(sc));
    return write_scenario(f, sc);
}
