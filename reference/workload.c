/* Workloads (include/ckh/workload.h): seed-pipeline and param-server, the
 * generic node program and the single-process runner.
 *
 * Blob naming: every blob of node N is "N/<name>", so the multi-node
 * manager's node managers each save exactly their node's blobs.
 */
#include "ckh/epoch_workload.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"

#define PIPE_LEN 10
#define PIPE_BATCH 3
#define PIPE_START 100

struct task_arg {
    const struct ckh_workload_spec *spec; /* the job */
    int index;                            /* node's index within its role */
    char node[64];                        /* node name */
};

static struct task_arg *new_arg(struct ckh_job *job, struct ckh_alloc *a,
                                const struct ckh_workload_spec *spec, int index, const char *node)
{
    struct task_arg *t = ckh_calloc(a, 1, sizeof *t);
    if (!t)
        return NULL;
    t->spec = spec;
    t->index = index;
    snprintf(t->node, sizeof t->node, "%s", node);
    if (ckh_job_own(job, t) != 0) {
        ckh_free(a, t);
        return NULL;
    }
    return t;
}

static void blob_name(char *buf, size_t n, const char *node, const char *what)
{
    snprintf(buf, n, "%s/%s", node, what);
}

/* ---- seed-pipeline ---- */

static int pipe_count(const struct ckh_workload_spec *spec)
{
    return spec && spec->nnodes > 0 ? spec->nnodes : CKH_EINVAL;
}

static int pipe_name(const struct ckh_workload_spec *spec, int i, char *buf, size_t n)
{
    if (!spec || i < 0 || i >= spec->nnodes || !buf)
        return CKH_EINVAL;
    return snprintf(buf, n, "trainer_%d", i) < (int)n ? 0 : CKH_EINVAL;
}

static int pipe_init(struct ckh_session *s, const char *node, void *arg)
{
    int64_t data[PIPE_LEN];
    uint64_t shape[1] = {PIPE_LEN};
    char b[128];
    int rc;
    (void)arg;
    for (int i = 0; i < PIPE_LEN; i++)
        data[i] = i;
    blob_name(b, sizeof b, node, "dataset");
    if ((rc = ckh_ws_set(s->ws, b, CKH_DT_I64, 1, shape, data)) != 0)
        return rc;
    blob_name(b, sizeof b, node, "reader_pos");
    if ((rc = ckh_ws_set_i64(s->ws, b, 0)) != 0)
        return rc;
    blob_name(b, sizeof b, node, "data_finished");
    if ((rc = ckh_ws_set_i64(s->ws, b, 0)) != 0)
        return rc;
    blob_name(b, sizeof b, node, "total");
    return ckh_ws_set_i64(s->ws, b, PIPE_START);
}

/* One epoch: read at most PIPE_BATCH records into total; the reader is
 * finished when a read finds no record. */
static int pipe_epoch(struct ckh_session *s, const char *node, void *arg)
{
    char bd[128], bp[128], bt[128], bf[128];
    const struct ckh_blob *ds;
    int64_t pos, total, finished;
    int rc;
    (void)arg;
    blob_name(bd, sizeof bd, node, "dataset");
    blob_name(bp, sizeof bp, node, "reader_pos");
    blob_name(bt, sizeof bt, node, "total");
    blob_name(bf, sizeof bf, node, "data_finished");
    ds = ckh_ws_find(s->ws, bd);
    if (!ds || ds->described || ds->dtype != CKH_DT_I64)
        return CKH_ESTATE;
    if ((rc = ckh_ws_get_i64(s->ws, bp, &pos)) != 0 || (rc = ckh_ws_get_i64(s->ws, bt, &total)) != 0 ||
        (rc = ckh_ws_get_i64(s->ws, bf, &finished)) != 0)
        return rc;
    for (int k = 0; k < PIPE_BATCH; k++) {
        int64_t v;
        if (pos < 0 || (uint64_t)pos >= ds->size_bytes / 8) {
            finished = 1;
            break;
        }
        memcpy(&v, (const char *)ds->data + 8 * pos, 8);
        total += v;
        pos++;
    }
    if ((rc = ckh_ws_set_i64(s->ws, bp, pos)) != 0 || (rc = ckh_ws_set_i64(s->ws, bt, total)) != 0)
        return rc;
    return ckh_ws_set_i64(s->ws, bf, finished);
}

static int pipe_build(const struct ckh_workload_spec *spec, struct ckh_job *job)
{
    int n = pipe_count(spec), rc;
    for (int i = 0; i < n; i++) {
        char node[64], b[128];
        pipe_name(spec, i, node, sizeof node);
        if (spec->only_node && strcmp(spec->only_node, node) != 0)
            continue;
        blob_name(b, sizeof b, node, "data_finished");
        if ((rc = ckh_job_add_task(job, CKH_GROUP_INIT, node, "pipeline_init", pipe_init, NULL)) != 0 ||
            (rc = ckh_job_add_task(job, CKH_GROUP_EPOCH, node, "pipeline_epoch", pipe_epoch, NULL)) != 0 ||
            (rc = ckh_job_add_stop_condition(job, node, b)) != 0)
            return rc;
        /* num_epochs: an epoch limiter too; the job stops at whichever
         * comes first, the limit or the end of the data. */
        if (spec->num_epochs > 0 && (rc = ckh_job_epoch_limiter(job, node, spec->num_epochs)) != 0)
            return rc;
    }
    return n < 0 ? n : 0;
}

/* ---- param-server ---- */

static int ps_num(const struct ckh_workload_spec *spec)
{
    return spec->num_ps > 0 ? spec->num_ps : 2;
}
static uint64_t ps_bytes(const struct ckh_workload_spec *spec)
{
    uint64_t b = spec->param_bytes ? spec->param_bytes : (1u << 20);
    return (b + 7) / 8 * 8;
}
static int64_t ps_epochs(const struct ckh_workload_spec *spec)
{
    return spec->num_epochs > 0 ? spec->num_epochs : 3;
}

static int psv_count(const struct ckh_workload_spec *spec)
{
    return spec && spec->nnodes > 0 ? spec->nnodes + ps_num(spec) : CKH_EINVAL;
}

static int psv_name(const struct ckh_workload_spec *spec, int i, char *buf, size_t n)
{
    int w;
    if (!spec || i < 0 || i >= psv_count(spec) || !buf)
        return CKH_EINVAL;
    if (i < spec->nnodes)
        w = snprintf(buf, n, "trainer_%d", i);
    else
        w = snprintf(buf, n, "ps_%d", i - spec->nnodes);
    return w < (int)n ? 0 : CKH_EINVAL;
}

static int ps_init(struct ckh_session *s, const char *node, void *arg)
{
    struct task_arg *t = arg;
    uint64_t n = ps_bytes(t->spec) / 8, shape[1] = {n};
    struct ckh_blob b = {0};
    int64_t *v;
    char name[128];
    int rc;
    blob_name(name, sizeof name, node, "params");
    v = ckh_malloc(ckh_ws_alloc(s->ws), (size_t)(n * 8));
    if (!v)
        return CKH_ENOMEM;
    for (uint64_t k = 0; k < n; k++)
        v[k] = (int64_t)(t->index * 1000 + (int64_t)k);
    b.name = ckh_strdup(ckh_ws_alloc(s->ws), name);
    b.dtype = CKH_DT_I64;
    b.ndim = 1;
    b.shape[0] = shape[0];
    b.size_bytes = n * 8;
    b.data = v;
    rc = b.name ? ckh_ws_adopt(s->ws, &b) : CKH_ENOMEM;
    if (rc != 0) {
        ckh_blob_release(ckh_ws_alloc(s->ws), &b);
        return rc;
    }
    /* The update counter is state too: it must exist when the init group
     * ends, since only the blobs present then are checkpointed. */
    blob_name(name, sizeof name, node, "updates");
    return ckh_ws_set_i64(s->ws, name, 0);
}

/* Applies this epoch's update in place: params[k] += epoch * (index + 1). */
static int ps_epoch(struct ckh_session *s, const char *node, void *arg)
{
    struct task_arg *t = arg;
    char name[128];
    const struct ckh_blob *b;
    int64_t step = 0;
    char sn[128];
    (void)t;
    blob_name(name, sizeof name, node, "params");
    blob_name(sn, sizeof sn, node, "updates");
    b = ckh_ws_find(s->ws, name);
    if (!b || b->described)
        return CKH_ESTATE;
    ckh_ws_get_i64(s->ws, sn, &step);
    step++;
    for (uint64_t k = 0; k < b->size_bytes / 8; k++)
        ((int64_t *)b->data)[k] += step * (t->index + 1);
    return ckh_ws_set_i64(s->ws, sn, step);
}

static int tr_init(struct ckh_session *s, const char *node, void *arg)
{
    char name[128];
    (void)arg;
    blob_name(name, sizeof name, node, "step");
    return ckh_ws_set_i64(s->ws, name, 0);
}

/* A training epoch: gradients the size of the whole model live for the
 * duration of the epoch (this is what collides with downloaded params). */
static int tr_epoch(struct ckh_session *s, const char *node, void *arg)
{
    struct task_arg *t = arg;
    uint64_t n = ps_bytes(t->spec) * (uint64_t)ps_num(t->spec);
    struct ckh_alloc *a = ckh_ws_alloc(s->ws);
    unsigned char *grad = ckh_malloc(a, (size_t)n);
    char name[128];
    int64_t step;
    int rc;
    if (!grad)
        return CKH_ENOMEM;
    memset(grad, (int)(t->index + 1), (size_t)n);
    ckh_free(a, grad);
    blob_name(name, sizeof name, node, "step");
    if ((rc = ckh_ws_get_i64(s->ws, name, &step)) != 0)
        return rc;
    return ckh_ws_set_i64(s->ws, name, step + 1);
}

/* Download, ps side: send the shard to trainer_0 unless it is local. */
static int ps_download(struct ckh_session *s, const char *node, void *arg)
{
    struct task_arg *t = arg;
    char name[128];
    const struct ckh_blob *b;
    if (ckh_session_is_local(s, "trainer_0"))
        return 0; /* trainer_0's task copies within the workspace */
    if (!s->env->coll)
        return CKH_EUNSUPPORTED;
    blob_name(name, sizeof name, node, "params");
    b = ckh_ws_find(s->ws, name);
    if (!b || b->described)
        return CKH_ESTATE;
    return ckh_coll_send(s->env->coll, b->data, (size_t)b->size_bytes, 0, t->index,
                         t->spec->coll_timeout_ns);
}

/* Download, trainer_0 side: "trainer_0/model/ps_<j>" for every shard. */
static int tr_download(struct ckh_session *s, const char *node, void *arg)
{
    struct task_arg *t = arg;
    int nps = ps_num(t->spec);
    for (int j = 0; j < nps; j++) {
        char src_node[64], src[128], dst[160];
        int rc;
        snprintf(src_node, sizeof src_node, "ps_%d", j);
        blob_name(src, sizeof src, src_node, "params");
        snprintf(dst, sizeof dst, "%s/model/ps_%d", node, j);
        if (ckh_session_is_local(s, src_node)) {
            rc = ckh_ws_copy(s->ws, src, dst);
        } else if (s->env->coll) {
            struct ckh_alloc *a = ckh_ws_alloc(s->ws);
            struct ckh_blob b = {0};
            uint64_t n = ps_bytes(t->spec);
            b.dtype = CKH_DT_I64;
            b.ndim = 1;
            b.shape[0] = n / 8;
            b.size_bytes = n;
            b.name = ckh_strdup(a, dst);
            b.data = ckh_malloc(a, (size_t)n);
            if (!b.name || !b.data) {
                ckh_blob_release(a, &b);
                return CKH_ENOMEM;
            }
            rc = ckh_coll_recv(s->env->coll, b.data, (size_t)n, t->spec->nnodes + j, j,
                               t->spec->coll_timeout_ns);
            if (rc == 0)
                rc = ckh_ws_adopt(s->ws, &b);
            if (rc != 0)
                ckh_blob_release(a, &b);
        } else {
            rc = CKH_EUNSUPPORTED;
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int psv_build(const struct ckh_workload_spec *spec, struct ckh_job *job)
{
    int nt = spec->nnodes, np = ps_num(spec), rc;
    struct ckh_alloc *a = ckh_job_alloc(job);
    enum ckh_group dl = spec->download_every_epoch ? CKH_GROUP_EPOCH : CKH_GROUP_DOWNLOAD;
    if (nt < 1)
        return CKH_EINVAL;
    for (int i = 0; i < nt + np; i++) {
        char node[64];
        struct task_arg *t;
        psv_name(spec, i, node, sizeof node);
        t = new_arg(job, a, spec, i < nt ? i : i - nt, node);
        if (!t)
            return CKH_ENOMEM;
        if (i < nt)
            rc = ckh_job_add_task(job, CKH_GROUP_INIT, node, "trainer_init", tr_init, t);
        else
            rc = ckh_job_add_task(job, CKH_GROUP_INIT, node, "ps_init", ps_init, t);
        if (rc != 0 || (rc = ckh_job_epoch_limiter(job, node, ps_epochs(spec))) != 0)
            return rc;
        if (i < nt)
            rc = ckh_job_add_task(job, CKH_GROUP_EPOCH, node, "trainer_epoch", tr_epoch, t);
        else
            rc = ckh_job_add_task(job, CKH_GROUP_EPOCH, node, "ps_epoch", ps_epoch, t);
        if (rc != 0)
            return rc;
    }
    /* Download: every ps sends, then trainer_0 receives, in ps order. */
    for (int j = 0; j < np; j++) {
        char node[64];
        struct task_arg *t;
        psv_name(spec, nt + j, node, sizeof node);
        if (!(t = new_arg(job, a, spec, j, node)))
            return CKH_ENOMEM;
        if ((rc = ckh_job_add_task(job, dl, node, "ps_download", ps_download, t)) != 0)
            return rc;
    }
    {
        struct task_arg *t = new_arg(job, a, spec, 0, "trainer_0");
        if (!t)
            return CKH_ENOMEM;
        return ckh_job_add_task(job, dl, "trainer_0", "trainer_download", tr_download, t);
    }
}

/* ---- registry ---- */

static const struct ckh_workload seed_pipeline = {
    .name = "seed-pipeline",
    .description = "per node: dataset 0..9, 3 records per epoch into total=100, stop at end of data",
    .node_count = pipe_count,
    .node_name = pipe_name,
    .build_job = pipe_build,
    .node_main = ckh_workload_node_main,
};

static const struct ckh_workload param_server = {
    .name = "param-server",
    .description = "trainers and parameter servers; shards downloaded to trainer_0 after training",
    .collective = true,
    .node_count = psv_count,
    .node_name = psv_name,
    .build_job = psv_build,
    .node_main = ckh_workload_node_main,
};

/* The epoch workloads, one line each, in listing order. */
#define EPOCH_WORKLOAD_LIST(X)                                                 \
    X(seed_pipeline)                                                           \
    X(param_server)

static const struct ckh_workload *const workloads[] = {
#define EPOCH_WORKLOAD_REF(id) &id,
    EPOCH_WORKLOAD_LIST(EPOCH_WORKLOAD_REF)
#undef EPOCH_WORKLOAD_REF
};

const struct ckh_workload *ckh_epoch_workload_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof workloads / sizeof workloads[0]; i++)
        if (strcmp(workloads[i]->name, name) == 0)
            return workloads[i];
    return NULL;
}

const struct ckh_workload *ckh_epoch_workload_at(size_t i)
{
    return i < sizeof workloads / sizeof workloads[0] ? workloads[i] : NULL;
}

/* ---- results ---- */

int ckh_workload_collect(const struct ckh_workload_spec *spec, const char *node,
                         const struct ckh_ws *ws, struct ckh_workload_result *r)
{
    char prefix[80], name[128];
    size_t plen, used = 0;
    int64_t v = 0;
    if (!spec || !node || !ws || !r)
        return CKH_EINVAL;
    snprintf(r->node, sizeof r->node, "%s", node);
    snprintf(prefix, sizeof prefix, "%s/", node);
    plen = strlen(prefix);
    r->blobs[0] = '\0';
    for (size_t i = 0; i < ckh_ws_count(ws); i++) {
        const char *bn = ckh_ws_at(ws, i)->name;
        size_t l = strlen(bn);
        if (strncmp(bn, prefix, plen) != 0)
            continue;
        if (used + l + 2 > sizeof r->blobs)
            return CKH_ELIMIT;
        if (used)
            r->blobs[used++] = ',';
        memcpy(r->blobs + used, bn, l + 1);
        used += l;
    }
    r->digest = ckh_ws_digest(ws, prefix);
    /* total: seed-pipeline "total"; param-server trainers "step", ps the
     * sum of their parameters. */
    blob_name(name, sizeof name, node, "total");
    if (ckh_ws_get_i64(ws, name, &v) != 0) {
        blob_name(name, sizeof name, node, "step");
        if (ckh_ws_get_i64(ws, name, &v) != 0) {
            const struct ckh_blob *b;
            blob_name(name, sizeof name, node, "params");
            b = ckh_ws_find(ws, name);
            v = 0;
            for (uint64_t k = 0; b && !b->described && k < b->size_bytes / 8; k++)
                v += ((const int64_t *)b->data)[k];
        }
    }
    r->total = v;
    return 0;
}

/* Runs spec's job in one session; local_node NULL: every node. */
static int run_session(const struct ckh_workload_spec *spec, struct ckh_env *env,
                       const char *local_node, int64_t resume_epoch, int first_index,
                       int count, struct ckh_workload_result *results)
{
    struct ckh_job *job = NULL;
    struct ckh_ws *ws = NULL;
    struct ckh_meta *meta = NULL;
    struct ckh_ckpt *ck = NULL;
    struct ckh_runner_config rc_cfg = {0};
    struct ckh_session s = {0};
    char msg[256];
    int64_t epochs = 0;
    int rc;

    if ((rc = ckh_job_create(env->alloc, &job)) != 0)
        return rc;
    if ((rc = spec->wl->build_job(spec, job)) != 0)
        goto out;
    if ((rc = ckh_ws_create(env->alloc, &ws)) != 0)
        goto out;
    if (!spec->no_checkpoint) {
        if ((rc = ckh_meta_create(env->alloc, &meta)) != 0)
            goto out;
        rc = ckh_ckpt_create_multi(env, spec->prefix ? spec->prefix : "/ckpt",
                                   spec->db_type ? spec->db_type : "minidb", meta, &ck, msg,
                                   sizeof msg);
        if (rc != 0) {
            ckh_node_logf(env->node, "%s", msg);
            goto out;
        }
    }
    s.env = env;
    s.ws = ws;
    s.local_node = local_node;
    rc_cfg.job = job;
    rc_cfg.ckpt = ck;
    rc_cfg.resume_from_epoch = resume_epoch;
    for (int i = 0; i < count; i++)
        results[i].runs++;
    rc = ckh_runner_run(&rc_cfg, &s, &epochs);
    if (rc != 0)
        ckh_node_logf(env->node, "job failed: %s / %s", ckh_job_errmsg(job),
                      ck ? ckh_ckpt_errmsg(ck) : "");
    for (int i = 0; i < count; i++) {
        char node[64];
        struct ckh_workload_result *r = &results[i];
        spec->wl->node_name(spec, first_index + i, node, sizeof node);
        r->rc = rc;
        r->epochs = epochs;
        r->saves_failed = rc_cfg.saves_failed;
        r->resumed_from = rc_cfg.resumed_from;
        if (rc == 0)
            ckh_workload_collect(spec, node, ws, r);
        r->finished = true;
    }
out:
    ckh_ckpt_destroy(ck);
    ckh_meta_destroy(meta);
    ckh_ws_destroy(ws);
    ckh_job_destroy(job);
    return rc;
}

int ckh_workload_node_main(struct ckh_env *env, void *arg)
{
    struct ckh_workload_node_arg *a = arg;
    char node[64];
    int rc;
    if (!env || !a || !a->spec || !a->spec->wl || !a->result)
        return CKH_EINVAL;
    if ((rc = a->spec->wl->node_name(a->spec, a->node_index, node, sizeof node)) != 0)
        return rc;
    snprintf(a->result->node, sizeof a->result->node, "%s", node);
    a->result->finished = false;
    return run_session(a->spec, env, node,
                       a->spec->resume_set && a->spec->resume_epoch >= 0 ? a->spec->resume_epoch : -1,
                       a->node_index, 1, a->result);
}

int ckh_workload_run_local(const struct ckh_workload_spec *spec, struct ckh_env *env,
                           int64_t resume_epoch, struct ckh_workload_result *results)
{
    int n;
    if (!spec || !spec->wl || !env || !results)
        return CKH_EINVAL;
    n = spec->wl->node_count(spec);
    if (n < 1)
        return CKH_EINVAL;
    memset(results, 0, (size_t)n * sizeof *results);
    return run_session(spec, env, NULL, resume_epoch, 0, n, results);
}
