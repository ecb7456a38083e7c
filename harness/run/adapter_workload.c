/* Adapters for the reference runtime's epoch workloads (seed-pipeline,
 * param-server): one simulated node per job node, each running the
 * generic node program of include/ckh/workload.h.
 *
 * Scenario mapping: job.nodes -> trainers; job.epochs -> epochs
 * (param-server); job.backend -> backend (default minidb);
 * job.checkpoint_dir -> checkpoint prefix; options: num_ps (int),
 * param_bytes (size), download_every_epoch (bool), no_checkpoint (bool).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/adapter.h"
#include "ckh/err.h"
#include "ckh/ref.h"
#include "faults/fault.h"

struct wl_inst {
    struct ckh_workload_spec spec;          /* the job */
    int n;                                  /* nodes */
    struct ckh_workload_result *results;    /* per node, outside node memory */
    struct ckh_workload_node_arg *args;     /* per node program arguments */
    struct ckh_node_result *out;            /* generic results (collect) */
    char prefix[CKH_PATH_MAX];              /* checkpoint directory */
    char backend[64];                       /* backend name */
};

#define PARAM_BYTES_MAX (1ull << 30) /* per parameter-server shard: held in memory */

static int apply_options(const struct ckh_scenario *sc, struct ckh_workload_spec *spec, char *msg,
                         size_t msglen)
{
    for (size_t i = 0; i < sc->job.noptions; i++) {
        const struct ckh_scn_kv *kv = &sc->job.options[i];
        if (strcmp(kv->key, "num_ps") == 0) {
            if (kv->type != CKH_SCN_INT || kv->i < 1 || kv->i > 64)
                return ckh__adapter_option_error(msg, msglen, kv, "expected an integer 1..64");
            spec->num_ps = (int)kv->i;
        } else if (strcmp(kv->key, "param_bytes") == 0) {
            uint64_t v;
            if (ckh_scn_parse_size(kv->text, &v) != 0 || v == 0 || v % 8 != 0)
                return ckh__adapter_option_error(msg, msglen, kv, "expected a size, a positive multiple of 8 bytes");
            if (v > PARAM_BYTES_MAX)
                return ckh__adapter_option_error(msg, msglen, kv, "more than a parameter server can hold (at most 1GiB)");
            spec->param_bytes = v;
        } else if (strcmp(kv->key, "download_every_epoch") == 0) {
            if (kv->type != CKH_SCN_BOOL)
                return ckh__adapter_option_error(msg, msglen, kv, "expected true or false");
            spec->download_every_epoch = kv->b;
        } else if (strcmp(kv->key, "no_checkpoint") == 0) {
            if (kv->type != CKH_SCN_BOOL)
                return ckh__adapter_option_error(msg, msglen, kv, "expected true or false");
            spec->no_checkpoint = kv->b;
        } else {
            return ckh__adapter_option_error(msg, msglen, kv,
                            "unknown option (known: num_ps, param_bytes, download_every_epoch, "
                            "no_checkpoint)");
        }
    }
    return 0;
}

static void wl_destroy(void *p)
{
    struct wl_inst *w = p;
    if (!w)
        return;
    free(w->results);
    free(w->args);
    free(w->out);
    free(w);
}

static int wl_create(const struct ckh_scenario *sc, uint64_t seed, unsigned mode, void **out,
                     char *msg, size_t msglen)
{
    (void)seed;      /* these jobs draw nothing from the seed but their interleaving */
    (void)mode;      /* and have no defect switches (refused below) or devices */
    /* Refuse what these jobs cannot honour rather than ignore it: a
     * scenario must never pass while claiming something it did not do. */
    const char *unsupported = sc->job.ndefects ? "job.defects (defect switches live in ddp-train)"
                              : sc->job.saver.kind ? "job.saver"
                              : sc->job.gpu_mem_bytes ? "job.gpu_memory"
                              : sc->job.steps ? "job.steps"
                              : sc->job.every_steps || sc->job.every_epochs
                                  ? "job.checkpoint_every (these jobs checkpoint after every epoch)"
                                  : NULL;
    /* What each fault needs is in its descriptor (harness/faults/). */
    for (size_t i = 0; !unsupported && i < sc->nfaults; i++) {
        const struct ckh_fault_ops *ops = ckh_fault_of(sc->faults[i].act.kind);
        if (ops->needs & CKH_FAULT_NEEDS_DEVICES)
            unsupported = "the gpu-oom fault (no emulated devices)";
        else if (ops->needs & CKH_FAULT_NEEDS_LATEST)
            unsupported = "latest-pointer faults (minidb keeps no latest pointer)";
    }
    if (unsupported) {
        snprintf(msg, msglen, "workload '%s' does not support %s", sc->job.workload, unsupported);
        return CKH_EINVAL;
    }
    const struct ckh_workload *wl = ckh_workload_find(sc->job.workload);
    if (!wl) {
        snprintf(msg, msglen, "unknown workload '%s'", sc->job.workload);
        return CKH_EINVAL;
    }
    struct wl_inst *w = calloc(1, sizeof *w);
    if (!w)
        return CKH_ENOMEM;
    int rc;
    w->spec.wl = wl;
    w->spec.nnodes = (int)(sc->job.nodes ? sc->job.nodes : 1);
    w->spec.num_epochs = sc->job.epochs;
    snprintf(w->prefix, sizeof w->prefix, "%s", sc->job.checkpoint_dir ? sc->job.checkpoint_dir : "/ckpt");
    snprintf(w->backend, sizeof w->backend, "%s", sc->job.backend ? sc->job.backend : "minidb");
    w->spec.prefix = w->prefix;
    w->spec.db_type = w->backend;
    w->spec.coll_timeout_ns = sc->job.collective_timeout_ns;
    if ((rc = apply_options(sc, &w->spec, msg, msglen)) != 0)
        goto out_free;
    w->n = wl->node_count(&w->spec);
    if (w->n < 1) {
        snprintf(msg, msglen, "workload '%s': bad node count", wl->name);
        rc = CKH_EINVAL;
        goto out_free;
    }
    w->results = calloc((size_t)w->n, sizeof *w->results);
    w->args = calloc((size_t)w->n, sizeof *w->args);
    w->out = calloc((size_t)w->n, sizeof *w->out);
    if (!w->results || !w->args || !w->out) {
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
    wl_destroy(w);
    return rc;
}

static int wl_node_count(void *p)
{
    return ((struct wl_inst *)p)->n;
}

static int wl_node(void *p, int i, char *name, size_t namelen, int *rank, ckh_node_main *main,
                   void **arg)
{
    struct wl_inst *w = p;
    if (i < 0 || i >= w->n)
        return CKH_EINVAL;
    int rc = w->spec.wl->node_name(&w->spec, i, name, namelen);
    if (rc)
        return rc;
    *rank = w->spec.wl->collective ? i : -1; /* param-server: point-to-point by node index */
    *main = w->spec.wl->node_main;
    *arg = &w->args[i];
    return 0;
}

static int64_t wl_interval(void *p)
{
    (void)p;
    return 1; /* the job runner checkpoints after every epoch */
}

static void wl_before_run(void *p, int run, int64_t resume_epoch)
{
    struct wl_inst *w = p;
    (void)run;
    w->spec.resume_set = resume_epoch >= 0;
    w->spec.resume_epoch = resume_epoch;
}

/* The one conversion of a workload node's result into the generic one. */
static void node_result_from(struct ckh_node_result *o, const struct ckh_workload_result *r)
{
    memset(o, 0, sizeof *o);
    snprintf(o->node, sizeof o->node, "%s", r->node);
    o->finished = r->finished;
    o->rc = r->rc;
    o->epochs = r->epochs;
    o->resumed_from = r->resumed_from;
    o->total = r->total;
    snprintf(o->blobs, sizeof o->blobs, "%s", r->blobs);
    o->digest = r->digest;
    o->saves_failed = r->saves_failed;
}

static int wl_collect(void *p, struct ckh_job_result *out)
{
    struct wl_inst *w = p;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < w->n; i++) {
        const struct ckh_workload_result *r = &w->results[i];
        node_result_from(&w->out[i], r);
        if (r->finished && ckh_rc_is_corruption(r->rc))
            out->corruption_detected = true;
    }
    out->nodes = w->out;
    out->nnodes = (size_t)w->n;
    return 0;
}

/* The resume point a restarted node would pick (the latest epoch every
 * node has committed) must load on every node. */
static int wl_verify(void *p, struct ckh_fs *fs, char *msg, size_t msglen)
{
    struct wl_inst *w = p;
    struct ckh_backend_config cfg = {.fs = fs, .prefix = w->prefix};
    struct ckh_backend *b = NULL;
    char bmsg[256];
    int rc;
    if (w->spec.no_checkpoint)
        return 0;
    if ((rc = ckh_backend_open(w->backend, &cfg, &b, bmsg, sizeof bmsg)) != 0) {
        snprintf(msg, msglen, "backend %s: %s", w->backend, bmsg);
        return rc;
    }
    int64_t common = INT64_MAX;
    char node[64];
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
            snprintf(msg, msglen, "listing %s's checkpoints: %s", node, ckh_strerror(rc));
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
            snprintf(msg, msglen, "resume point epoch %lld does not load on %s: %s (%s)",
                     (long long)common, node, ckh_err_name(rc), ckh_backend_errmsg(b));
            goto out;
        }
    }
    snprintf(msg, msglen, "resume point epoch %lld loads on every node", (long long)common);
out:
    ckh_backend_close(b);
    return rc;
}

const struct ckh_adapter_ops ckh__adapter_seed_pipeline = {
    .name = "seed-pipeline",
    .description = "the seed test's pipeline: per node 0..9, 3 records per epoch, total from 100",
    .create = wl_create,
    .destroy = wl_destroy,
    .node_count = wl_node_count,
    .node = wl_node,
    .interval = wl_interval,
    .before_run = wl_before_run,
    .collect = wl_collect,
    .verify = wl_verify,
};

const struct ckh_adapter_ops ckh__adapter_param_server = {
    .name = "param-server",
    .description = "trainers and parameter servers; parameters downloaded to trainer_0 after training",
    .create = wl_create,
    .destroy = wl_destroy,
    .node_count = wl_node_count,
    .node = wl_node,
    .interval = wl_interval,
    .before_run = wl_before_run,
    .collect = wl_collect,
    .verify = wl_verify,
};

