/* The fault script of one run: every scenario fault aimed at the run
 * becomes a simulator fault rule (its descriptor's `arm`), or, for an
 * at-rest fault without an op trigger, is applied to the disks before the
 * run starts (its descriptor's `apply`); an at-rest fault with a trigger
 * runs as a CALL rule at the matching op. A fault whose descriptor has
 * neither (gpu-oom) is the workload's to apply. harness/model/fault.h
 * specifies the descriptors.
 */
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "exec/run_ctx.h"

int ckh__run_fault_node(struct ckh__run_ctx *c, const struct ckh_scn_fault *f, int *node)
{
    return ckh_fault_node(f, c->n, ckh_node_name_at, c->names, node, c->err, sizeof c->err);
}

/* Applies fault `index` at rest now; it counts as fired when its change
 * lands (ckh_fault_hit). */
int ckh__run_apply_at_rest(struct ckh__run_ctx *c, size_t index, int node)
{
    const struct ckh_scn_fault *f = &c->sc->faults[index];
    c->env.fired = c->rec && c->rec->fault_fired ? &c->rec->fault_fired[index] : NULL;
    int rc = ckh_fault_of(f->act.kind)->apply(&c->env, f, node);
    c->at_rest_applied = true;
    c->env.fired = NULL;
    return rc;
}

/* A CALL rule's callback: an at-rest fault at its trigger. */
static void call_at_trigger(void *ctx, const struct ckh_op *op)
{
    struct ckh__run_call *cc = ctx;
    bool on_node = cc->fault->on.node >= 0 || cc->fault->on.node_name;
    ckh__run_apply_at_rest(cc->rc, cc->index, on_node ? op->node : -1);
}

/* Arms fault i on the simulator (or applies it now); see the top. */
static int arm_one(struct ckh__run_ctx *c, size_t i, int node)
{
    const struct ckh_scn_fault *f = &c->sc->faults[i];
    const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
    if (c->rec) {
        c->rec->fault_armed[i] = true;
        if (!ops->arm && !ops->apply)
            c->rec->fault_fired[i]++; /* applied by the workload to its devices */
    }
    if (ckh_fault_applied_between_runs(f))
        return ckh__run_apply_at_rest(c, i, node);
    if (!ckh_fault_arms_rule(f))
        return 0;
    struct ckh_fault_rule r;
    ckh_fault_rule_of(f, node, &r);
    if (r.action.kind == CKH_FAULT_CALL) { /* at rest, at its trigger */
        c->calls[i] = (struct ckh__run_call){.rc = c, .fault = f, .index = i};
        r.action.call = call_at_trigger;
        r.action.call_ctx = &c->calls[i];
    }
    int rc = ckh_sim_add_fault(c->sim, &r);
    if (rc != 0) /* the simulator's own code: a rule it refuses, or out of memory */
        return ckh__run_fail(c, rc, "%d:%d: %s", f->line, f->column, ckh_sim_errmsg(c->sim));
    /* A CALL rule counts when its change lands (ckh_fault_hit), not when
     * its trigger matches. */
    c->rule_fault[c->nrules++] = r.action.kind == CKH_FAULT_CALL ? SIZE_MAX : i;
    return 0;
}

int ckh__run_arm_faults(struct ckh__run_ctx *c, int run)
{
    ckh_sim_clear_faults(c->sim);
    c->nrules = 0;
    for (size_t i = 0; i < c->sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &c->sc->faults[i];
        if (f->on.run != CKH_SCN_RUN_ANY && (int)f->on.run != run)
            continue;
        int node, rc;
        if ((rc = ckh__run_fault_node(c, f, &node)) != 0 || (rc = arm_one(c, i, node)) != 0)
            return rc;
    }
    return 0;
}

/* The hook sees every op: it only tracks each node's progress. */
void ckh__run_track_hook(void *ctx, const struct ckh_op *op, struct ckh_fault_action *act)
{
    (void)act;
    struct ckh__run_ctx *c = ctx;
    if (op->node < 0 || op->node >= c->n || !op->phase)
        return;
    struct ckh__run_track *t = &c->track[op->node];
    if (strcmp(t->phase, op->phase) != 0)
        snprintf(t->phase, sizeof t->phase, "%s", op->phase);
    if (strcmp(op->phase, "load") == 0) {
        t->load_seen = true;
        if (op->epoch >= 0)
            t->load_epoch = op->epoch;
    }
    if (strcmp(op->phase, "epoch") == 0 || strcmp(op->phase, "save") == 0) {
        int64_t v = c->step_based ? op->step : op->epoch;
        /* The first working op of a run tells where the run resumed: a
         * training job announces the step it continues from, an epoch job
         * the epoch it loaded (or 0 from scratch). */
        if (!t->resume_known) {
            t->resume_known = true;
            t->resume_point = c->step_based ? (v > 0 ? v : 0) : (t->load_seen ? t->load_epoch : 0);
        }
        if (v > t->progress)
            t->progress = v;
    }
}
