/* Run timelines for the HTML report: the simulator's trace of a faulted
 * job turned into per-node events (reports/report.h, struct
 * ckh_report_timeline).
 *
 * Mapping of trace records (ops of include/ckh/op.h):
 *   PHASE      closes the node's previous phase and opens a bar: "epoch"
 *              -> EPOCH, "save" -> SAVE, "load" -> LOAD, "collective" ->
 *              COLLECTIVE, any other name -> PHASE; a bar ends at the
 *              node's next PHASE, its exit or death, or the run's end;
 *   barrier, broadcast, allreduce, allgather, send, recv -> COLLECTIVE
 *              markers (the record's time);
 *   FAULT      -> FAULT marker labelled "<op>:<fault> <path>";
 *   KILL, CRASH -> markers (a CRASH of the environment, a power loss, is
 *              drawn on every node); START of a later incarnation ->
 *              RESTART; EXIT -> EXIT labelled with the status.
 * Runs are delimited by struct ckh_run_info.trace_end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "exec/runner.h"

struct open_phase {
    bool open;          /* a bar is open */
    enum ckh_tl_kind k; /* its kind */
    uint64_t start_ns;  /* its start */
    char label[CKH_TL_LABEL_LEN]; /* its label */
};

static enum ckh_tl_kind phase_kind(const char *p)
{
    if (!p)
        return CKH_TL_PHASE;
    if (strcmp(p, "epoch") == 0)
        return CKH_TL_EPOCH;
    if (strcmp(p, "save") == 0)
        return CKH_TL_SAVE;
    if (strcmp(p, "load") == 0)
        return CKH_TL_LOAD;
    if (strcmp(p, "collective") == 0)
        return CKH_TL_COLLECTIVE;
    return CKH_TL_PHASE;
}

static int close_phase(struct ckh_report_timeline *t, uint32_t run, int node, struct open_phase *o,
                       uint64_t end_ns)
{
    if (!o->open)
        return 0;
    o->open = false;
    return ckh_report_timeline_add(t, run, node, o->k, o->start_ns, end_ns, o->label);
}

static int cmp_ev(const void *a, const void *b)
{
    const struct ckh_report_tl_event *x = a, *y = b;
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    return strcmp(x->label, y->label);
}

int ckh_timeline_build(const struct ckh_sim *sim, const struct ckh_scenario_run *r,
                       struct ckh_report_timeline **out)
{
    if (!sim || !r || !out)
        return CKH_EINVAL;
    ckh_report_timeline_free(*out);
    *out = NULL;
    int nn = ckh_sim_node_count(sim);
    if (nn < 0)
        return CKH_EINVAL;
    struct ckh_report_timeline *t = NULL;
    int rc = ckh_report_timeline_new((uint32_t)nn, (uint32_t)r->nruns, &t);
    if (rc)
        return rc;
    struct open_phase *op = calloc((size_t)(nn ? nn : 1), sizeof *op);
    if (!op) {
        ckh_report_timeline_free(t);
        return CKH_ENOMEM;
    }
    for (int i = 0; i < nn; i++) {
        const char *name = ckh_sim_node_name(sim, i);
        snprintf(t->nodes[i], sizeof t->nodes[i], "%s", name ? name : "?");
    }
    uint64_t begin = 0, last_ns = 0;
    for (size_t ri = 0; ri < r->nruns && rc == 0; ri++) {
        uint32_t run = (uint32_t)r->runs[ri].run;
        uint64_t end = r->runs[ri].trace_end;
        t->runs[ri].start_ns = last_ns;
        bool first = true;
        for (uint64_t s = begin; s < end && rc == 0; s++) {
            struct ckh_trace_rec rec;
            if (ckh_sim_trace_get(sim, s, &rec) != 0)
                break;
            if (first) {
                t->runs[ri].start_ns = rec.time_ns;
                first = false;
            }
            last_ns = rec.time_ns;
            int n = rec.node;
            char label[CKH_TL_LABEL_LEN];
            bool on_node = n >= 0 && n < nn;
            switch (rec.kind) {
            case CKH_OP_PHASE:
                if (!on_node)
                    break;
                rc = close_phase(t, run, n, &op[n], rec.time_ns);
                op[n].open = true;
                op[n].k = phase_kind(rec.path);
                op[n].start_ns = rec.time_ns;
                if ((int64_t)rec.len >= 0)
                    snprintf(op[n].label, sizeof op[n].label, "%s epoch %lld step %lld",
                             rec.path ? rec.path : "?", (long long)(int64_t)rec.off,
                             (long long)(int64_t)rec.len);
                else
                    snprintf(op[n].label, sizeof op[n].label, "%s epoch %lld",
                             rec.path ? rec.path : "?", (long long)(int64_t)rec.off);
                break;
            case CKH_OP_BARRIER:
            case CKH_OP_BROADCAST:
            case CKH_OP_ALLREDUCE:
            case CKH_OP_ALLGATHER:
            case CKH_OP_SEND:
            case CKH_OP_RECV:
                if (on_node)
                    rc = ckh_report_timeline_add(t, run, n, CKH_TL_COLLECTIVE, rec.time_ns,
                                                 rec.time_ns, ckh_op_name(rec.kind));
                break;
            case CKH_OP_FAULT:
                snprintf(label, sizeof label, "%s%s%s", rec.path2 ? rec.path2 : "fault",
                         rec.path ? " " : "", rec.path ? rec.path : "");
                if (on_node)
                    rc = ckh_report_timeline_add(t, run, n, CKH_TL_FAULT, rec.time_ns, rec.time_ns, label);
                break;
            case CKH_OP_KILL:
            case CKH_OP_CRASH:
            case CKH_OP_EXIT:
                if (rec.kind == CKH_OP_EXIT)
                    snprintf(label, sizeof label, "exit %lld", (long long)rec.arg);
                else
                    snprintf(label, sizeof label, "%s%s", rec.kind == CKH_OP_KILL ? "kill" : "crash",
                             rec.arg == 2 ? " (power loss)" : "");
                for (int i = 0; i < nn && rc == 0; i++) {
                    if (on_node ? i != n : rec.kind != CKH_OP_CRASH)
                        continue;
                    rc = close_phase(t, run, i, &op[i], rec.time_ns);
                    if (rc == 0)
                        rc = ckh_report_timeline_add(t, run, i,
                                                     rec.kind == CKH_OP_KILL    ? CKH_TL_KILL
                                                     : rec.kind == CKH_OP_CRASH ? CKH_TL_CRASH
                                                                                : CKH_TL_EXIT,
                                                     rec.time_ns, rec.time_ns, label);
                }
                break;
            case CKH_OP_START:
                if (on_node && rec.arg > 0) {
                    snprintf(label, sizeof label, "restart (incarnation %lld)", (long long)rec.arg);
                    rc = ckh_report_timeline_add(t, run, n, CKH_TL_RESTART, rec.time_ns, rec.time_ns,
                                                 label);
                }
                break;
            default:
                break;
            }
        }
        for (int i = 0; i < nn && rc == 0; i++)
            rc = close_phase(t, run, i, &op[i], last_ns);
        t->runs[ri].end_ns = last_ns;
        begin = end;
    }
    free(op);
    if (rc) {
        ckh_report_timeline_free(t);
        return rc;
    }
    qsort(t->ev, t->n, sizeof *t->ev, cmp_ev);
    *out = t;
    return 0;
}
