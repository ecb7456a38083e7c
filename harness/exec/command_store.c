/* A command job's object store, for the oracles: its operations on keys
 * copied into the scenario run (struct ckh_store_op, exec/runner.h), each
 * with the run it happened in and, for a node's delete, the step the node
 * had reported when it sent it (docs/OBJECT_STORE.md, "Retention"). The
 * store itself is started and ended with the runs in command.c. */
#include <stdlib.h>
#include <string.h>

#include "ckh/objstore.h"
#include "exec/command_job.h"

/* The step node had reported when its delete `seq` arrived: the last note
 * of that node at or before seq (notes are in arrival order, seqs rising). */
static int64_t delete_step(const struct ckh__cmd *c, int node, uint64_t seq)
{
    for (size_t i = c->ndelete_steps; i-- > 0;)
        if (c->delete_steps[i].node == node && c->delete_steps[i].seq <= seq)
            return c->delete_steps[i].step;
    return -1;
}

/* The 1-based run whose trace lines end past line l (past the last run:
 * nstore_run + 1, a verify after it). */
static uint32_t run_of_line(const struct ckh__cmd *c, size_t l)
{
    uint32_t run = 1;
    while (run <= c->nstore_run && c->store_run_end[run - 1] <= l)
        run++;
    return run;
}

static void ops_free(struct ckh_store_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(ops[i].bucket);
        free(ops[i].key);
    }
    free(ops);
}

int ckh__cmd_store_ops_take(struct ckh__cmd *c, struct ckh_scenario_run *r)
{
    ops_free(r->store_ops, r->nstore_ops);
    r->store_ops = NULL;
    r->nstore_ops = 0;
    if (c->store == NULL)
        return 0;
    if (c->s3 != NULL)
        ckh_s3_server_lock(c->s3);
    size_t len = ckh_objstore_trace_len(c->store), n = 0;
    for (size_t l = 0; l < len; l++)
        n += ckh_objstore_trace_op(c->store, l)->key != NULL;
    struct ckh_store_op *ops = calloc(n ? n : 1, sizeof *ops);
    size_t k = 0;
    for (size_t l = 0; ops != NULL && l < len; l++) {
        const struct ckh_objstore_trace_op *t = ckh_objstore_trace_op(c->store, l);
        if (t->key == NULL)
            continue;
        struct ckh_store_op *o = &ops[k++];
        *o = (struct ckh_store_op){.seq = t->seq, .run = run_of_line(c, l), .node = t->node, .step = -1,
                                   .op = t->op, .bucket = strdup(t->bucket != NULL ? t->bucket : ""),
                                   .key = strdup(t->key), .result = t->result, .exists = t->exists == 1};
        if (t->node >= 0 && strcmp(t->op, "DeleteObject") == 0)
            o->step = delete_step(c, t->node, t->seq);
        if (o->bucket == NULL || o->key == NULL) {
            ops_free(ops, k);
            ops = NULL;
        }
    }
    if (c->s3 != NULL)
        ckh_s3_server_unlock(c->s3);
    if (ops == NULL)
        return ckh__cmd_fail(c, CKH_ENOMEM, "out of memory copying the object store's trace");
    r->store_ops = ops;
    r->nstore_ops = n;
    return 0;
}
