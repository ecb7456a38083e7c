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

#include "ckh/assert.h"
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

/* A PHASE record of node n: closes the node's open bar and opens the next. */
static int phase_begin(struct ckh_report_timeline *t, uint32_t run, int n, struct open_phase *o,
                       const struct ckh_trace_rec *rec)
{
    int rc = close_phase(t, run, n, o, rec->time_ns);
    o->open = true;
    o->k = phase_kind(rec->path);
    o->start_ns = rec->time_ns;
    if ((int64_t)rec->len >= 0)
        snprintf(o->label, sizeof o->label, "%s epoch %lld step %lld", rec->path ? rec->path : "?",
                 (long long)(int64_t)rec->off, (long long)(int64_t)rec->len);
    else
        snprintf(o->label, sizeof o->label, "%s epoch %lld", rec->path ? rec->path : "?",
                 (long long)(int64_t)rec->off);
    return rc;
}

/* A KILL, CRASH or EXIT record: the bars it ends and its markers (a CRASH
 * of the environment is drawn on every node). */
static int node_end(struct ckh_report_timeline *t, uint32_t run, int nn, struct open_phase *op,
                    const struct ckh_trace_rec *rec)
{
    char label[CKH_TL_LABEL_LEN];
    int n = rec->node, rc = 0;
    bool on_node = n >= 0 && n < nn;
    if (rec->kind == CKH_OP_EXIT)
        snprintf(label, sizeof label, "exit %lld", (long long)rec->arg);
    else
        snprintf(label, sizeof label, "%s%s", rec->kind == CKH_OP_KILL ? "kill" : "crash",
                 rec->arg == 2 ? " (power loss)" : "");
    for (int i = 0; i < nn && rc == 0; i++) {
        if (on_node ? i != n : rec->kind != CKH_OP_CRASH)
            continue;
        rc = close_phase(t, run, i, &op[i], rec->time_ns);
        if (rc == 0)
            rc = ckh_report_timeline_add(t, run, i,
                                         rec->kind == CKH_OP_KILL    ? CKH_TL_KILL
                                         : rec->kind == CKH_OP_CRASH ? CKH_TL_CRASH
                                                                     : CKH_TL_EXIT,
                                         rec->time_ns, rec->time_ns, label);
    }
    return rc;
}

/* One trace record of run `run` as events of t (the mapping at the top). */
static int add_record(struct ckh_report_timeline *t, uint32_t run, int nn, struct open_phase *op,
                      const struct ckh_trace_rec *rec)
{
    int n = rec->node;
    char label[CKH_TL_LABEL_LEN];
    bool on_node = n >= 0 && n < nn;
    switch (rec->kind) {
    case CKH_OP_PHASE:
        return on_node ? phase_begin(t, run, n, &op[n], rec) : 0;
    case CKH_OP_BARRIER:
    case CKH_OP_BROADCAST:
    case CKH_OP_ALLREDUCE:
    case CKH_OP_ALLGATHER:
    case CKH_OP_SEND:
    case CKH_OP_RECV:
        return on_node ? ckh_report_timeline_add(t, run, n, CKH_TL_COLLECTIVE, rec->time_ns, rec->time_ns,
                                                 ckh_op_name(rec->kind))
                       : 0;
    case CKH_OP_FAULT:
        snprintf(label, sizeof label, "%s%s%s", rec->path2 ? rec->path2 : "fault", rec->path ? " " : "",
                 rec->path ? rec->path : "");
        return on_node ? ckh_report_timeline_add(t, run, n, CKH_TL_FAULT, rec->time_ns, rec->time_ns, label) : 0;
    case CKH_OP_KILL:
    case CKH_OP_CRASH:
    case CKH_OP_EXIT:
        return node_end(t, run, nn, op, rec);
    case CKH_OP_START:
        if (!on_node || rec->arg <= 0)
            return 0;
        snprintf(label, sizeof label, "restart (incarnation %lld)", (long long)rec->arg);
        return ckh_report_timeline_add(t, run, n, CKH_TL_RESTART, rec->time_ns, rec->time_ns, label);
    default:
        return 0;
    }
}

/* Run ri (trace records begin .. its trace_end) into t: its events, its
 * bars closed at its end, its span. *last_ns: the time of the latest
 * record so far, across runs. */
static int add_run(const struct ckh_sim *sim, const struct ckh_scenario_run *r, size_t ri, uint64_t begin,
                   struct ckh_report_timeline *t, struct open_phase *op, int nn, uint64_t *last_ns)
{
    uint32_t run = (uint32_t)r->runs[ri].run;
    uint64_t end = r->runs[ri].trace_end;
    int rc = 0;
    t->runs[ri].start_ns = *last_ns;
    bool first = true;
    for (uint64_t s = begin; s < end && rc == 0; s++) {
        struct ckh_trace_rec rec;
        if (ckh_sim_trace_get(sim, s, &rec) != 0)
            break;
        if (first) {
            t->runs[ri].start_ns = rec.time_ns;
            first = false;
        }
        *last_ns = rec.time_ns;
        rc = add_record(t, run, nn, op, &rec);
    }
    for (int i = 0; i < nn && rc == 0; i++)
        rc = close_phase(t, run, i, &op[i], *last_ns);
    t->runs[ri].end_ns = *last_ns;
    return rc;
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
        CKH_ASSERT(r->runs[ri].trace_end >= begin); /* one trace, runs in order */
        rc = add_run(sim, r, ri, begin, t, op, nn, &last_ns);
        begin = r->runs[ri].trace_end;
    }
    free(op);
    if (rc) {
        ckh_report_timeline_free(t);
        return rc;
    }
    /* every bar closed: no event ends before it starts */
    for (size_t i = 0; i < t->n; i++)
        CKH_ASSERT(t->ev[i].start_ns <= t->ev[i].end_ns && t->ev[i].run >= 1 && t->ev[i].run <= r->nruns);
    qsort(t->ev, t->n, sizeof *t->ev, cmp_ev);
    *out = t;
    return 0;
}
