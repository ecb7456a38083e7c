/* The fault registry: every descriptor of model/fault_list.h, in its order,
 * the way harness/judge/oracle.c lists the oracles; and what every mode
 * of running asks of a scenario fault through its descriptor: its rule,
 * its node, whether the mode can deliver it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/rng.h"
#include "model/fault.h"

static const struct ckh_fault_ops *const faults[] = {
#define CKH__FAULT_REF(e, id) &ckh__fault_##id,
    CKH_FAULT_LIST(CKH__FAULT_REF)
#undef CKH__FAULT_REF
};
_Static_assert(sizeof faults / sizeof faults[0] == CKH_SCN_ACT__COUNT, "one descriptor per action");

const struct ckh_fault_ops *ckh_fault_at(size_t i)
{
    if (i >= sizeof faults / sizeof faults[0])
        return NULL;
    CKH_ASSERT(faults[i]->kind == (enum ckh_scn_action_kind)i); /* list order is enum order */
    CKH_ASSERT(faults[i]->modes != 0 && (faults[i]->modes & ~CKH_FAULT_MODES_ALL) == 0);
    /* Changing data at rest is changing simfs's disks (or, in command jobs, which have
     * both, job.object_store's store). */
    CKH_ASSERT(!faults[i]->apply || (faults[i]->needs & CKH_FAULT_NEEDS_DISK_MODEL));
    return faults[i];
}

const struct ckh_fault_ops *ckh_fault_of(enum ckh_scn_action_kind k)
{
    return (unsigned)k < CKH_SCN_ACT__COUNT ? ckh_fault_at((size_t)k) : NULL;
}

const struct ckh_fault_ops *ckh_fault_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof faults / sizeof faults[0]; i++)
        if (strcmp(faults[i]->name, name) == 0)
            return faults[i];
    return NULL;
}

const char *ckh_scn_action_name(enum ckh_scn_action_kind k)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(k);
    return ops ? ops->name : "?";
}

bool ckh_scn_action_is_at_rest(enum ckh_scn_action_kind k)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(k);
    return ops && ops->apply;
}

bool ckh_fault_applied_between_runs(const struct ckh_scn_fault *f)
{
    return ckh_scn_action_is_at_rest(f->act.kind) && !f->on.matches_ops;
}

bool ckh_fault_arms_rule(const struct ckh_scn_fault *f)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
    return ops && !ckh_fault_applied_between_runs(f) && (ops->arm || ops->apply);
}

void ckh_fault_rule_of(const struct ckh_scn_fault *f, int node, struct ckh_fault_rule *r)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
    CKH_ASSERT(ops != NULL && node >= -1);
    ckh_fault_rule_init(r);
    r->node = node;
    r->kind = f->on.op;
    r->path_glob = f->on.path;
    r->phase = f->on.phase;
    r->epoch = f->on.epoch;
    r->step = f->on.step;
    r->nth = f->on.nth;
    r->at_time_ns = f->on.time_ns;
    r->probability = f->on.probability;
    r->repeat = f->on.repeat;
    if (!ckh_fault_arms_rule(f))
        return;
    if (ops->apply) /* at rest, at its trigger */
        r->action.kind = CKH_FAULT_CALL;
    else
        ops->arm(f, r);
}

enum ckh_fault_process ckh_fault_on_process(const struct ckh_scn_fault *f, uint64_t *grace_ns)
{
    const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
    uint64_t grace = 0;
    enum ckh_fault_process how = ops && ops->acts_on_process ? ops->acts_on_process(&f->act, &grace)
                                                             : CKH_FAULT_PROCESS_NONE;
    if (grace_ns)
        *grace_ns = grace;
    return how;
}

/* ---- what a mode can deliver ---- */

static const char *mode_name(unsigned mode)
{
    switch (mode) {
    case CKH_FAULT_MODE_SIM: return "the simulator";
    case CKH_FAULT_MODE_COMMAND: return "command jobs (job.command)";
    case CKH_FAULT_MODE_REAL: return "the real platform (--platform real)";
    default: return "?";
    }
}

int ckh_fault_refusal(const struct ckh_fault_ops *ops, unsigned mode, char *err, size_t errlen)
{
    CKH_ASSERT(ops != NULL && !(ops->modes & mode));
    char can[160] = "";
    size_t used = 0, k = 0;
    for (unsigned m = CKH_FAULT_MODE_SIM; m <= CKH_FAULT_MODE_REAL; m <<= 1)
        if ((ops->modes & m) && used < sizeof can)
            used += (size_t)snprintf(can + used, sizeof can - used, "%s%s", k++ ? " and " : "", mode_name(m));
    return ckh_errf(err, errlen, CKH_EINVAL, "'do: %s' is delivered only by %s, not by %s%s%s", ops->name, can,
                    mode_name(mode), ops->modes_note ? ": " : "", ops->modes_note ? ops->modes_note : "");
}

int ckh_fault_check_mode(const struct ckh_scenario *sc, unsigned mode, char *err, size_t errlen)
{
    CKH_ASSERT(mode == CKH_FAULT_MODE_SIM || mode == CKH_FAULT_MODE_COMMAND || mode == CKH_FAULT_MODE_REAL);
    for (size_t i = 0; i < sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &sc->faults[i];
        const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
        char why[400];
        if (ops->modes & mode)
            continue;
        ckh_fault_refusal(ops, mode, why, sizeof why);
        return ckh_errf(err, errlen, CKH_EINVAL, "%d:%d: %s", f->line, f->column, why);
    }
    return 0;
}

/* ---- the node a fault names ---- */

int ckh_fault_node(const struct ckh_scn_fault *f, int n, const char *(*name_of)(const void *ctx, int i),
                   const void *ctx, int *node, char *err, size_t errlen)
{
    CKH_ASSERT(f != NULL && name_of != NULL && node != NULL && n >= 0);
    if (f->on.node_name) {
        for (int i = 0; i < n; i++)
            if (strcmp(name_of(ctx, i), f->on.node_name) == 0) {
                *node = i;
                return 0;
            }
    } else if (f->on.node < n) {
        *node = f->on.node < 0 ? -1 : f->on.node;
        return 0;
    }
    char nodes[256] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof nodes; i++)
        used += (size_t)snprintf(nodes + used, sizeof nodes - used, "%s%s", i ? ", " : "", name_of(ctx, i));
    if (f->on.node_name)
        return ckh_errf(err, errlen, CKH_EINVAL, "%d:%d: the fault names node '%s', which the job does not "
                        "have (its nodes: %s)", f->line, f->column, f->on.node_name, nodes);
    return ckh_errf(err, errlen, CKH_EINVAL, "%d:%d: the fault names node %d, which the job does not have "
                    "(its nodes: %s)", f->line, f->column, f->on.node, nodes);
}

void ckh_fault_generate(const struct ckh_fault_ops *ops, struct ckh_fault_gen *g)
{
    g->run = g->damaging ? (uint32_t)ckh_fault_gen_pick(g, 1, 3) : (uint32_t)ckh_fault_gen_pick(g, 1, 2);
    if (ops->generate)
        ops->generate(g);
}

/* ---- the rules of a run ---- */

int ckh_fault_rules_of_run(const struct ckh_scenario *sc, int run, int n,
                           const char *(*node_name)(const void *ctx, int i), const void *names,
                           struct ckh_fault_rule **rules, size_t **fault_of, size_t *nrules, char *err,
                           size_t errlen)
{
    *rules = calloc(sc->nfaults + 1, sizeof **rules);
    *fault_of = calloc(sc->nfaults + 1, sizeof **fault_of);
    *nrules = 0;
    if (!*rules || !*fault_of)
        return CKH_ENOMEM;
    for (size_t i = 0; i < sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &sc->faults[i];
        int node, rc;
        if ((f->on.run != CKH_SCN_RUN_ANY && (int)f->on.run != run) || !ckh_fault_arms_rule(f))
            continue;
        if ((rc = ckh_fault_node(f, n, node_name, names, &node, err, errlen)) != 0)
            return rc;
        /* An at-rest fault at its trigger is a CALL rule, as arm.c numbers it. */
        ckh_fault_rule_of(f, node, &(*rules)[*nrules]);
        (*fault_of)[(*nrules)++] = i;
    }
    return 0;
}
