/* The epoch workloads (seed-pipeline, param-server) as tables of the
 * public workload interface (include/ckh/workload.h): one node per job
 * node, each running the generic node program of include/ckh/
 * epoch_workload.h, reporting through env->record.
 *
 * Job mapping: job.nodes -> nodes (param-server: trainers); job.epochs ->
 * epochs (param-server) or an epoch limiter (seed-pipeline); job.backend
 * -> the backend (default minidb); job.checkpoint_dir -> prefix.
 * options: num_ps (int), param_bytes (size), download_every_epoch (bool),
 * no_checkpoint (bool). The job checkpoints after every epoch: job.steps,
 * job.checkpoint_every, job.defects and job.gpu_memory are refused.
 *
 * Records: the epoch runner (reference/job.c) reports each save and the
 * epoch it resumed from; node_main adds the final record (epochs, the
 * headline total, the node's blob names and their digest).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/epoch_workload.h"
#include "ckh/err.h"
#include "ckh/workload.h"

#define PARAM_BYTES_MAX (1ull << 30) /* per parameter-server shard: held in memory */

struct ep_inst {
    struct ckh_workload_spec spec;       /* the job */
    int n;                               /* nodes */
    struct ckh_workload_result *results; /* per node, outside node memory */
    struct ckh_workload_node_arg *args;  /* per node program arguments */
    char prefix[CKH_PATH_MAX];           /* checkpoint directory */
    char backend[64];                    /* backend name */
};

static int apply_options(const struct ckh_workload_job *job, struct ckh_workload_spec *spec, char *msg,
                         size_t msglen)
{
    for (size_t i = 0; i < job->noptions; i++) {
        const struct ckh_wl_option *o = &job->options[i];
        if (strcmp(o->key, "num_ps") == 0) {
            if (o->type != CKH_WL_OPT_INT || o->i < 1 || o->i > 64)
                return ckh_wl_option_error(msg, msglen, o, "expected an integer 1..64");
            spec->num_ps = (int)o->i;
        } else if (strcmp(o->key, "param_bytes") == 0) {
            uint64_t v = o->size;
            if (!o->has_size || v == 0 || v % 8 != 0)
                return ckh_wl_option_error(msg, msglen, o, "expected a size, a positive multiple of 8 bytes");
            if (v > PARAM_BYTES_MAX)
                return ckh_wl_option_error(msg, msglen, o, "more than a parameter server can hold (at most 1GiB)");
            spec->param_bytes = v;
        } else if (strcmp(o->key, "download_every_epoch") == 0) {
            if (o->type != CKH_WL_OPT_BOOL)
                return ckh_wl_option_error(msg, msglen, o, "expected true or false");
            spec->download_every_epoch = o->b;
        } else if (strcmp(o->key, "no_checkpoint") == 0) {
            if (o->type != CKH_WL_OPT_BOOL)
                return ckh_wl_option_error(msg, msglen, o, "expected true or false");
            spec->no_checkpoint = o->b;
        } else {
            return ckh_wl_option_error(msg, msglen, o,
                                       "unknown option (known: num_ps, param_bytes, download_every_epoch, "
                                       "no_checkpoint)");
        }
    }
    return 0;
}

static void ep_destroy(void *p)
{
    struct ep_inst *w = p;
    if (!w)
        return;
    free(w->results);
    free(w->args);
    free(w);
}

static int ep_create(const struct ckh_workload *wl, const struct ckh_workload_job *job, void **out, char *msg,
                     size_t msglen)
{
    /* Refuse what these jobs cannot honour rather than ignore it: a
     * scenario must never pass while claiming something it did not do. */
    if (job->steps)
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "job.steps: workload '%s' does not support job.steps (it counts epochs: use job.epochs)",
                        wl->name);
    const char *unsupported = job->every_steps || job->every_epochs
                                  ? "job.checkpoint_every (these jobs checkpoint after every epoch)"
                                  : NULL;
    if (unsupported)
        return ckh_errf(msg, msglen, CKH_EINVAL, "workload '%s' does not support %s", wl->name, unsupported);
    struct ep_inst *w = calloc(1, sizeof *w);
    if (!w)
        return CKH_ENOMEM;
    int rc;
    w->spec.wl = wl;
    w->spec.nnodes = job->nodes;
    w->spec.num_epochs = job->epochs;
    snprintf(w->prefix, sizeof w->prefix, "%s", job->checkpoint_dir);
    snprintf(w->backend, sizeof w->backend, "%s", job->backend ? job->backend->name : "minidb");
    w->spec.prefix = w->prefix;
    w->spec.db_type = w->backend;
    w->spec.coll_timeout_ns = job->collective_timeout_ns;
    if ((rc = apply_options(job, &w->spec, msg, msglen)) != 0)
        goto out_free;
    w->n = wl->node_count(&w->spec);
    if (w->n < 1) {
        rc = ckh_errf(msg, msglen, CKH_EINVAL, "workload '%s': bad node count", wl->name);
        goto out_free;
    }
    w->results = calloc((size_t)w->n, sizeof *w->results);
    w->args = calloc((size_t)w->n, sizeof *w->args);
    if (!w->results || !w->args) {
        rc = CKH_ENOMEM;
        goto out_free;
    }
    for (int i = 0; i < w->n; i++) {
        w->args[i].spec = &w->spec;
        w->args[i].node_index = i;
        w->args[i].result = &w->results[i];
        w->results[i].resumed_from = -1;
    }
    *out = w;
    return 0;
out_free:
    ep_destroy(w);
    return rc;
}

static int sp_create(const struct ckh_workload_job *job, void **out, char *msg, size_t msglen)
{
    return ep_create(ckh_epoch_workload_find("seed-pipeline"), job, out, msg, msglen);
}

static int ps_create(const struct ckh_workload_job *job, void **out, char *msg, size_t msglen)
{
    return ep_create(ckh_epoch_workload_find("param-server"), job, out, msg, msglen);
}

static int ep_node_count(void *p)
{
    return ((struct ep_inst *)p)->n;
}

static int ep_node(void *p, int i, char *name, size_t namelen, int *rank)
{
    struct ep_inst *w = p;
    if (i < 0 || i >= w->n)
        return CKH_EINVAL;
    *rank = w->spec.wl->collective ? i : -1; /* param-server: point-to-point by node index */
    return w->spec.wl->node_name(&w->spec, i, name, namelen);
}

/* The final record of a node whose job completed. */
static int report_final(struct ckh_env *env, const struct ckh_workload_result *r)
{
    char blobs[sizeof r->blobs];
    const char *names[256];
    size_t n = 0;
    memcpy(blobs, r->blobs, sizeof blobs);
    for (char *tok = blobs, *next; tok && *tok && n < sizeof names / sizeof names[0]; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        names[n++] = tok;
    }
    struct ckh_rec_final f = {.epochs = r->epochs, .total = r->total, .has_digest = true, .digest = r->digest,
                              .blobs = names, .nblobs = n};
    return ckh_record_final(env->record, &f);
}

static int ep_node_main(struct ckh_env *env, void *p, int i)
{
    struct ep_inst *w = p;
    if (i < 0 || i >= w->n)
        return CKH_EINVAL;
    int rc = ckh_workload_node_main(env, &w->args[i]);
    if (rc == 0)
        rc = report_final(env, &w->results[i]);
    return rc;
}

static int64_t ep_interval(void *p)
{
    (void)p;
    return 1; /* the job runner checkpoints after every epoch */
}

static void ep_before_run(void *p, int run, int64_t resume_epoch)
{
    struct ep_inst *w = p;
    (void)run;
    w->spec.resume_set = resume_epoch >= 0;
    w->spec.resume_epoch = resume_epoch;
}

/* The resume point a restarted node would pick (the latest epoch every
 * node has committed) must load on every node. With node-local disks
 * each look sees one node's disk, where the other nodes' checkpoints are
 * absent: the common epoch is then judged by the resumed run. */
static int ep_verify(void *p, struct ckh_fs *fs, int index, char *msg, size_t msglen)
{
    struct ep_inst *w = p;
    (void)index;
    struct ckh_backend_config cfg = {.fs = fs, .prefix = w->prefix};
    struct ckh_backend *b = NULL;
    char bmsg[256], node[64];
    int rc;
    if (w->spec.no_checkpoint)
        return 0;
    if ((rc = ckh_backend_open(w->backend, &cfg, &b, bmsg, sizeof bmsg)) != 0)
        return ckh_errf(msg, msglen, rc, "backend %s: %s", w->backend, bmsg);
    int64_t common = INT64_MAX;
    for (int i = 0; i < w->n && common >= 0; i++) {
        int64_t *epochs = NULL;
        size_t count = 0;
        w->spec.wl->node_name(&w->spec, i, node, sizeof node);
        rc = ckh_backend_list_epochs(b, node, &epochs, &count);
        if (rc == -ENOENT) {
            count = 0;
            rc = 0;
        }
        if (rc != 0) {
            ckh_errf(msg, msglen, rc, "listing %s's checkpoints: %s", node, ckh_strerror(rc));
            goto out;
        }
        int64_t last = count ? epochs[count - 1] : -1;
        ckh_free(NULL, epochs);
        if (last < common)
            common = last;
    }
    if (common < 0) {
        snprintf(msg, msglen, "no epoch committed on every node yet: the job restarts from scratch");
        rc = 0;
        goto out;
    }
    for (int i = 0; i < w->n; i++) {
        struct ckh_ws *ws = NULL;
        w->spec.wl->node_name(&w->spec, i, node, sizeof node);
        if ((rc = ckh_ws_create(NULL, &ws)) != 0)
            goto out;
        rc = ckh_backend_load(b, node, common, ws, NULL, 0, 0, NULL);
        ckh_ws_destroy(ws);
        if (rc != 0) {
            ckh_errf(msg, msglen, rc, "resume point epoch %lld does not load on %s: %s (%s)", (long long)common,
                     node, ckh_err_name(rc), ckh_backend_errmsg(b));
            goto out;
        }
    }
    snprintf(msg, msglen, "resume point epoch %lld loads on every node", (long long)common);
out:
    ckh_backend_close(b);
    return rc;
}

/* The fuzzer's job shape for param-server: 1 or 2 trainers and servers. */
static int ps_generate(struct ckh_rng *rng, struct ckh_workload_shape *shape)
{
    shape->nodes = 1 + (int)ckh_rng_below(rng, 2);
    snprintf(shape->options[0].key, sizeof shape->options[0].key, "num_ps");
    snprintf(shape->options[0].value, sizeof shape->options[0].value, "%d", 1 + (int)ckh_rng_below(rng, 2));
    shape->noptions = 1;
    return 0;
}

const struct ckh_workload_ops ckh_seed_pipeline_workload = {
    .version = CKH_WORKLOAD_ABI_VERSION,
    .name = "seed-pipeline",
    .description = "the seed test's pipeline: per node 0..9, 3 records per epoch, total from 100",
    .flags = CKH_WL_USES_BACKEND,
    .create = sp_create,
    .destroy = ep_destroy,
    .node_count = ep_node_count,
    .node = ep_node,
    .node_main = ep_node_main,
    .interval = ep_interval,
    .before_run = ep_before_run,
    .verify = ep_verify,
};

const struct ckh_workload_ops ckh_param_server_workload = {
    .version = CKH_WORKLOAD_ABI_VERSION,
    .name = "param-server",
    .description = "trainers and parameter servers; parameters downloaded to trainer_0 after training",
    .flags = CKH_WL_USES_BACKEND | CKH_WL_COLLECTIVE,
    .create = ps_create,
    .destroy = ep_destroy,
    .node_count = ep_node_count,
    .node = ep_node,
    .node_main = ep_node_main,
    .interval = ep_interval,
    .before_run = ep_before_run,
    .verify = ep_verify,
    .generate = ps_generate,
};
