/* The `faults` section of a scenario: the list, each fault's trigger
 * (`on:`), and its action (`do:` plus the action's keys, which the fault's
 * descriptor in harness/model/faults/<name>.c reads). docs/SCENARIOS.md,
 * "faults". */
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const trigger_keys[] = {"node",  "op",   "path",        "phase",
                                           "epoch", "step", "nth",         "time",
                                           "probability", "repeat", "run"};

struct fault_advice_ctx {
    enum ckh_scn_action_kind kind; /* the fault's action */
    char buf[160];                 /* the advice */
};

/* Advice for a key the fault's action does not take: another action's
 * key, or a trigger key placed beside `do:`. */
static const char *fault_advice(const char *key, void *vctx)
{
    struct fault_advice_ctx *c = vctx;
    for (size_t i = 0; ckh_fault_at(i); i++)
        for (size_t k = 0; k < ckh_fault_at(i)->nkeys; k++)
            if (!strcmp(key, ckh_fault_at(i)->keys[k])) {
                snprintf(c->buf, sizeof(c->buf), "'%s' does not apply to 'do: %s'", key,
                         ckh_scn_action_name(c->kind));
                return c->buf;
            }
    for (size_t i = 0; i < CKH__NKEYS(trigger_keys); i++)
        if (!strcmp(key, trigger_keys[i])) {
            snprintf(c->buf, sizeof(c->buf), "trigger keys such as '%s' go under 'on:'", key);
            return c->buf;
        }
    return NULL;
}

/* on.node and on.op. */
static int parse_node_op(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_trigger *t)
{
    yaml_node_t *v;
    int64_t i;
    int e = 0, rc;
    if ((v = ckh__scn_get(p, n, "node"))) {
        t->matches_ops = true;
        if (ckh__scn_is_scalar(v) && ckh__scn_parse_i64(ckh__scn_text(v), &i)) {
            if ((rc = ckh__scn_get_int(p, v, "on.node", 0, (int64_t)p->s->job.nodes - 1, &i)))
                return rc;
            t->node = (int)i;
        } else if ((rc = ckh__scn_get_str(p, v, "on.node", &t->node_name))) {
            return rc;
        }
    }
    if ((v = ckh__scn_get(p, n, "op"))) {
        t->matches_ops = true;
        const char *names[CKH_OP__COUNT];
        for (int k = 0; k < CKH_OP__COUNT; k++)
            names[k] = ckh_op_name((enum ckh_op_kind)k);
        if ((rc = ckh__scn_get_enum(p, v, "on.op", names, CKH_OP__COUNT, &e)))
            return rc;
        t->op = ckh_op_from_name(names[e]);
    }
    return 0;
}

static int parse_trigger(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_trigger *t)
{
    yaml_node_t *v;
    int64_t i;
    int e = 0, rc;
    if (!n)
        return 0;
    if ((rc = ckh__scn_check_map(p, n, "on", trigger_keys, CKH__NKEYS(trigger_keys), NULL, NULL)))
        return rc;
    if ((rc = parse_node_op(p, n, t)))
        return rc;
    if ((v = ckh__scn_get(p, n, "path"))) {
        t->matches_ops = true;
        if ((rc = ckh__scn_get_sim_path(p, v, "on.path", &t->path)))
            return rc;
    }
    if ((v = ckh__scn_get(p, n, "phase"))) {
        t->matches_ops = true;
        if ((rc = ckh__scn_get_enum(p, v, "on.phase", ckh_scn_phases.names, ckh_scn_phases.n, &e)))
            return rc;
        t->phase = ckh_scn_phases.names[e]; /* static storage, like every enum name */
    }
    if ((v = ckh__scn_get(p, n, "epoch"))) {
        t->matches_ops = true;
        if ((rc = ckh__scn_get_int(p, v, "on.epoch", 0, INT64_MAX, &t->epoch)))
            return rc;
    }
    if ((v = ckh__scn_get(p, n, "step"))) {
        t->matches_ops = true;
        if ((rc = ckh__scn_get_int(p, v, "on.step", 0, INT64_MAX, &t->step)))
            return rc;
    }
    yaml_node_t *nth = ckh__scn_get(p, n, "nth"), *prob = ckh__scn_get(p, n, "probability");
    if (nth && prob)
        return ckh__scn_fail(p, prob, CKH_EINVAL, "'on' takes either 'nth' or 'probability', not both");
    if (nth) {
        t->matches_ops = true;
        if ((rc = ckh__scn_get_u64(p, nth, "on.nth", 1, &t->nth)))
            return rc;
    }
    if (prob) {
        t->matches_ops = true;
        if (!ckh__scn_is_scalar(prob) || !ckh__scn_parse_double(ckh__scn_text(prob), &t->probability) ||
            !(t->probability > 0.0 && t->probability <= 1.0))
            return ckh__scn_fail(p, prob, CKH_EINVAL,
                        "'on.probability' expects a number in (0, 1], got " CKH__GOT_FMT,
                        CKH__GOT_ARGS(prob));
    }
    if ((v = ckh__scn_get(p, n, "time"))) {
        t->matches_ops = true;
        if ((rc = ckh__scn_get_duration(p, v, "on.time", &t->time_ns)))
            return rc;
    }
    if ((v = ckh__scn_get(p, n, "repeat")) && (rc = ckh__scn_get_bool(p, v, "on.repeat", &t->repeat)))
        return rc;
    if ((v = ckh__scn_get(p, n, "run"))) {
        if (ckh__scn_is_scalar(v) && !strcmp(ckh__scn_text(v), "any")) {
            t->run = CKH_SCN_RUN_ANY;
        } else if (!ckh__scn_is_scalar(v) || !ckh__scn_parse_i64(ckh__scn_text(v), &i) || i < 1 || i > 1000000) {
            return ckh__scn_fail(p, v, CKH_EINVAL,
                        "'on.run' expects a run number in 1..1000000 or 'any', got " CKH__GOT_FMT,
                        CKH__GOT_ARGS(v));
        } else {
            t->run = (uint32_t)i;
        }
    }
    return 0;
}

static void trigger_defaults(struct ckh_scn_trigger *t)
{
    t->node = -1;
    t->op = -1;
    t->epoch = -1;
    t->step = -1;
    t->nth = 1;
    t->run = 1;
}

/* `do:` -> the fault's descriptor. */
static int parse_do(struct ckh__scn_reader *p, const yaml_node_t *n, const struct ckh_fault_ops **ops)
{
    const char *names[CKH_SCN_ACT__COUNT];
    for (size_t i = 0; i < CKH_SCN_ACT__COUNT; i++)
        names[i] = ckh_fault_at(i)->name;
    yaml_node_t *d = ckh__scn_get(p, n, "do");
    int e = 0, rc;
    if (!d)
        return ckh__scn_fail(p, n, CKH_EINVAL, "a fault needs 'do:' (the action: kill, crash, "
                                               "power-loss, errno, ...)");
    if ((rc = ckh__scn_get_enum(p, d, "do", names, CKH_SCN_ACT__COUNT, &e)))
        return rc;
    *ops = ckh_fault_at((size_t)e);
    return 0;
}

/* ---- faults of command jobs (docs/SCENARIOS.md, "Faults on real processes") ---- */

bool ckh_scn_fault_is_progress_trigger(const struct ckh_scn_fault *f)
{
    return ckh_fault_on_process(f, NULL) != CKH_FAULT_PROCESS_NONE && f->on.op < 0 && !f->on.path &&
           (f->on.step >= 0 || f->on.epoch >= 0 || f->on.time_ns > 0);
}

/* What a command job cannot do with fault f: a fault its mode cannot
 * deliver (the descriptor's `modes`, in ckh_fault_refusal's wording; the
 * job's mode is known here, so it is refused at its `do:`), a phase (real
 * programs announce none), a progress trigger that counts or draws (it
 * fires once). */
static int check_command_fault(struct ckh__scn_reader *p, const yaml_node_t *n, const struct ckh_scn_fault *f,
                               const struct ckh_fault_ops *ops)
{
    const yaml_node_t *on = ckh__scn_get(p, n, "on");
    char why[400];
    if (!p->s->job.commands)
        return 0;
    if (!(ops->modes & CKH_FAULT_MODE_COMMAND)) {
        ckh_fault_refusal(ops, CKH_FAULT_MODE_COMMAND, why, sizeof why);
        return ckh__scn_fail(p, ckh__scn_get(p, n, "do"), CKH_EINVAL, "%s", why);
    }
    if (f->on.phase)
        return ckh__scn_fail(p, ckh__scn_get(p, on, "phase"), CKH_EINVAL,
                             "'on.phase' does not apply to a command job: a real program announces no "
                             "phases; use 'path', 'step' or 'epoch'");
    static const char *const counting[] = {"nth", "probability", "repeat"};
    for (size_t i = 0; ckh_scn_fault_is_progress_trigger(f) && i < CKH__NKEYS(counting); i++)
        if (ckh__scn_get(p, on, counting[i]))
            return ckh__scn_fail(p, ckh__scn_get(p, on, counting[i]), CKH_EINVAL,
                                 "'on.%s' needs 'op' or 'path': a trigger on the program's progress "
                                 "(step, epoch or time alone) fires once", counting[i]);
    return 0;
}

static int parse_fault(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    const struct ckh_fault_ops *ops = NULL;
    const char *keys[16];
    size_t nk = 0;
    int rc;
    f->line = (int)n->start_mark.line + 1;
    f->column = (int)n->start_mark.column + 1;
    trigger_defaults(&f->on);
    if (n->type != YAML_MAPPING_NODE)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'faults[]' expects a mapping with 'do:', got " CKH__GOT_FMT,
                             CKH__GOT_ARGS(n));
    if ((rc = parse_do(p, n, &ops)))
        return rc;
    f->act.kind = ops->kind;
    keys[nk++] = "on";
    keys[nk++] = "do";
    for (size_t i = 0; i < ops->nkeys && nk < CKH__NKEYS(keys); i++)
        keys[nk++] = ops->keys[i];
    struct fault_advice_ctx actx = {.kind = f->act.kind};
    if ((rc = ckh__scn_check_map(p, n, "fault", keys, nk, fault_advice, &actx)))
        return rc;
    if ((rc = parse_trigger(p, ckh__scn_get(p, n, "on"), &f->on)))
        return rc;
    if (ops->parse && (rc = ops->parse(p, n, f)))
        return rc;
    if ((rc = check_command_fault(p, n, f, ops)))
        return rc;
    f->at_rest = ckh_fault_applied_between_runs(f);
    return 0;
}

int ckh__scn_parse_faults(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scenario *s)
{
    if (ckh__scn_is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'faults' expects a list of faults, got " CKH__GOT_FMT,
                             CKH__GOT_ARGS(n));
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    s->faults = ckh__scn_alloc(s, (cnt ? cnt : 1) * sizeof(*s->faults));
    if (!s->faults)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        int rc = parse_fault(p, ckh__scn_node(p, n->data.sequence.items.start[i]), &s->faults[i]);
        if (rc)
            return rc;
        s->nfaults = i + 1;
    }
    return 0;
}
