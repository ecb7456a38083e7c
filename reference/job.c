/* Jobs, sessions and the job runner (include/ckh/job.h).
 *
 * Sections: sessions; jobs (task groups, node sets, stop conditions, the
 * epoch limiter); the runner (the epoch protocol, specified at the top of
 * job.h); the upload builder that copies checkpoints into a directory.
 */
#include "ckh/job.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"

/* ---- sessions ---- */

bool ckh_session_is_local(const struct ckh_session *s, const char *node)
{
    if (!s || !node)
        return false;
    return !s->local_node || strcmp(s->local_node, node) == 0;
}

/* ---- jobs ---- */

struct job_task {
    char *node;     /* node the task runs on (owned) */
    char *name;     /* task name for logs (owned) */
    ckh_task_fn fn; /* body */
    void *arg;      /* argument (borrowed or owned via ckh_job_own) */
};

struct job_group {
    struct job_task *tasks; /* in order of addition */
    size_t count;           /* tasks in use */
    size_t cap;             /* tasks allocated */
};

struct job_stop {
    char *node; /* node whose workspace holds the flag (owned) */
    char *blob; /* flag blob name (owned) */
};

struct name_set {
    char **names; /* in order of first use (owned) */
    size_t count; /* names in use */
};

struct ckh_job {
    struct ckh_alloc *alloc;                 /* all memory */
    struct job_group groups[CKH_GROUP__COUNT]; /* the four groups */
    struct job_stop *stops;                  /* stop conditions */
    size_t nstops;                           /* their number */
    struct name_set explicit_ckpt;           /* explicit nodes to checkpoint */
    bool has_explicit;                       /* explicit_ckpt is set */
    struct name_set init_nodes;              /* init group's nodes */
    struct name_set all_nodes;               /* every group's nodes */
    void **owned;                            /* freed with the job */
    size_t nowned;                           /* their number */
    char errmsg[CKH_ERRMSG_BYTES];           /* last error */
};

int ckh_job_create(struct ckh_alloc *a, struct ckh_job **out)
{
    struct ckh_job *job;
    if (!out)
        return CKH_EINVAL;
    job = ckh_calloc(a, 1, sizeof *job);
    if (!job)
        return CKH_ENOMEM;
    job->alloc = a;
    *out = job;
    return 0;
}

static void set_free(struct ckh_alloc *a, struct name_set *s)
{
    for (size_t i = 0; i < s->count; i++)
        ckh_free(a, s->names[i]);
    ckh_free(a, s->names);
    s->names = NULL;
    s->count = 0;
}

static int set_add(struct ckh_alloc *a, struct name_set *s, const char *name)
{
    char **nn;
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->names[i], name) == 0)
            return 0;
    nn = ckh_realloc(a, s->names, (s->count + 1) * sizeof *nn);
    if (!nn)
        return CKH_ENOMEM;
    s->names = nn;
    if (!(s->names[s->count] = ckh_strdup(a, name)))
        return CKH_ENOMEM;
    s->count++;
    return 0;
}

void ckh_job_destroy(struct ckh_job *job)
{
    if (!job)
        return;
    for (int g = 0; g < CKH_GROUP__COUNT; g++) {
        for (size_t i = 0; i < job->groups[g].count; i++) {
            ckh_free(job->alloc, job->groups[g].tasks[i].node);
            ckh_free(job->alloc, job->groups[g].tasks[i].name);
        }
        ckh_free(job->alloc, job->groups[g].tasks);
    }
    for (size_t i = 0; i < job->nstops; i++) {
        ckh_free(job->alloc, job->stops[i].node);
        ckh_free(job->alloc, job->stops[i].blob);
    }
    ckh_free(job->alloc, job->stops);
    set_free(job->alloc, &job->explicit_ckpt);
    set_free(job->alloc, &job->init_nodes);
    set_free(job->alloc, &job->all_nodes);
    for (size_t i = 0; i < job->nowned; i++)
        ckh_free(job->alloc, job->owned[i]);
    ckh_free(job->alloc, job->owned);
    ckh_free(job->alloc, job);
}

const char *ckh_job_errmsg(const struct ckh_job *job)
{
    return job ? job->errmsg : "no job";
}

int ckh_job_add_task(struct ckh_job *job, enum ckh_group g, const char *node, const char *name,
                     ckh_task_fn fn, void *arg)
{
    struct job_group *grp;
    struct job_task t = {0};
    int rc;
    if (!job)
        return CKH_EINVAL;
    if ((int)g < 0 || g >= CKH_GROUP__COUNT || !fn)
        return CKH_ERRF(job->errmsg, CKH_EINVAL, "bad group %d or NULL task function", (int)g);
    if ((rc = ckh_node_name_check(node)) != 0)
        return CKH_ERRF(job->errmsg, rc, "bad node name '%s'", node ? node : "(null)");
    grp = &job->groups[g];
    if (grp->count == grp->cap) {
        size_t ncap = grp->cap ? grp->cap * 2 : 8;
        struct job_task *nt = ckh_realloc(job->alloc, grp->tasks, ncap * sizeof *nt);
        if (!nt)
            return CKH_ERRF(job->errmsg, CKH_ENOMEM, "no memory for a task");
        grp->tasks = nt;
        grp->cap = ncap;
    }
    t.node = ckh_strdup(job->alloc, node);
    t.name = ckh_strdup(job->alloc, name ? name : "task");
    t.fn = fn;
    t.arg = arg;
    if (!t.node || !t.name || set_add(job->alloc, &job->all_nodes, node) != 0 ||
        (g == CKH_GROUP_INIT && set_add(job->alloc, &job->init_nodes, node) != 0)) {
        ckh_free(job->alloc, t.node);
        ckh_free(job->alloc, t.name);
        return CKH_ERRF(job->errmsg, CKH_ENOMEM, "no memory for a task");
    }
    grp->tasks[grp->count++] = t;
    return 0;
}

struct ckh_alloc *ckh_job_alloc(const struct ckh_job *job)
{
    return job ? job->alloc : NULL;
}

int ckh_job_own(struct ckh_job *job, void *p)
{
    void **no;
    if (!job || !p)
        return CKH_EINVAL;
    no = ckh_realloc(job->alloc, job->owned, (job->nowned + 1) * sizeof *no);
    if (!no)
        return CKH_ERRF(job->errmsg, CKH_ENOMEM, "no memory");
    job->owned = no;
    job->owned[job->nowned++] = p;
    return 0;
}

int ckh_job_add_stop_condition(struct ckh_job *job, const char *node, const char *blob)
{
    struct job_stop *ns;
    struct job_stop st;
    if (!job)
        return CKH_EINVAL;
    if (ckh_node_name_check(node) != 0 || !blob || !blob[0])
        return CKH_ERRF(job->errmsg, CKH_EINVAL, "bad stop condition");
    ns = ckh_realloc(job->alloc, job->stops, (job->nstops + 1) * sizeof *ns);
    if (!ns)
        return CKH_ERRF(job->errmsg, CKH_ENOMEM, "no memory");
    job->stops = ns;
    st.node = ckh_strdup(job->alloc, node);
    st.blob = ckh_strdup(job->alloc, blob);
    if (!st.node || !st.blob) {
        ckh_free(job->alloc, st.node);
        ckh_free(job->alloc, st.blob);
        return CKH_ERRF(job->errmsg, CKH_ENOMEM, "no memory");
    }
    job->stops[job->nstops++] = st;
    return 0;
}

int ckh_job_set_nodes_to_checkpoint(struct ckh_job *job, const char *const *nodes, size_t n)
{
    int rc;
    if (!job || (!nodes && n > 0))
        return CKH_EINVAL;
    for (size_t i = 0; i < n; i++)
        if ((rc = ckh_node_name_check(nodes[i])) != 0)
            return CKH_ERRF(job->errmsg, rc, "bad node name to checkpoint");
    set_free(job->alloc, &job->explicit_ckpt);
    for (size_t i = 0; i < n; i++)
        if (set_add(job->alloc, &job->explicit_ckpt, nodes[i]) != 0)
            return CKH_ERRF(job->errmsg, CKH_ENOMEM, "no memory");
    job->has_explicit = n > 0;
    return 0;
}

int ckh_job_nodes_to_checkpoint(const struct ckh_job *job, const char *const **nodes, size_t *n)
{
    const struct name_set *s;
    if (!job || !nodes || !n)
        return CKH_EINVAL;
    s = job->has_explicit ? &job->explicit_ckpt : &job->init_nodes;
    *nodes = (const char *const *)s->names;
    *n = s->count;
    return 0;
}

int ckh_job_nodes(const struct ckh_job *job, const char *const **nodes, size_t *n)
{
    if (!job || !nodes || !n)
        return CKH_EINVAL;
    *nodes = (const char *const *)job->all_nodes.names;
    *n = job->all_nodes.count;
    return 0;
}

size_t ckh_job_group_size(const struct ckh_job *job, enum ckh_group g)
{
    if (!job || (int)g < 0 || g >= CKH_GROUP__COUNT)
        return 0;
    return job->groups[g].count;
}

struct limiter {
    int64_t num_epochs;     /* the limit */
    char counter[300];      /* "<node>/epoch_counter" */
    char reached[300];      /* "<node>/epoch_limit_reached" */
};

static int limiter_init(struct ckh_session *s, const char *node, void *arg)
{
    struct limiter *l = arg;
    int rc;
    (void)node;
    if ((rc = ckh_ws_set_i64(s->ws, l->counter, l->num_epochs - 1)) != 0)
        return rc;
    return ckh_ws_set_i64(s->ws, l->reached, 0);
}

static int limiter_epoch(struct ckh_session *s, const char *node, void *arg)
{
    struct limiter *l = arg;
    int64_t c;
    int rc = ckh_ws_get_i64(s->ws, l->counter, &c);
    (void)node;
    if (rc != 0)
        return rc;
    if (c > 0) {
        if ((rc = ckh_ws_set_i64(s->ws, l->counter, c - 1)) != 0)
            return rc;
        return ckh_ws_set_i64(s->ws, l->reached, 0);
    }
    return ckh_ws_set_i64(s->ws, l->reached, 1);
}

int ckh_job_epoch_limiter(struct ckh_job *job, const char *node, int64_t num_epochs)
{
    struct limiter *l;
    int rc;
    if (!job)
        return CKH_EINVAL;
    if (num_epochs < 1 || ckh_node_name_check(node) != 0)
        return CKH_ERRF(job->errmsg, CKH_EINVAL, "epoch limiter needs a node and num_epochs >= 1");
    l = ckh_calloc(job->alloc, 1, sizeof *l);
    if (!l)
        return CKH_ERRF(job->errmsg, CKH_ENOMEM, "no memory");
    l->num_epochs = num_epochs;
    snprintf(l->counter, sizeof l->counter, "%s/epoch_counter", node);
    snprintf(l->reached, sizeof l->reached, "%s/epoch_limit_reached", node);
    if ((rc = ckh_job_own(job, l)) != 0) {
        ckh_free(job->alloc, l);
        return rc;
    }
    if ((rc = ckh_job_add_task(job, CKH_GROUP_INIT, node, "epoch_counter_init", limiter_init, l)) != 0 ||
        (rc = ckh_job_add_task(job, CKH_GROUP_EPOCH, node, "epoch_countdown", limiter_epoch, l)) != 0)
        return rc;
    return ckh_job_add_stop_condition(job, node, l->reached);
}

int ckh_job_run_group(struct ckh_job *job, struct ckh_session *s, enum ckh_group g,
                      const char *phase, int64_t epoch)
{
    struct job_group *grp;
    if (!job || !s || !s->env || !s->ws || (int)g < 0 || g >= CKH_GROUP__COUNT || !phase)
        return CKH_EINVAL;
    grp = &job->groups[g];
    for (size_t i = 0; i < grp->count; i++) {
        struct job_task *t = &grp->tasks[i];
        int rc;
        if (!ckh_session_is_local(s, t->node))
            continue;
        ckh_node_phase(s->env->node, phase, epoch, (int64_t)i);
        rc = t->fn(s, t->node, t->arg);
        if (rc < 0)
            return CKH_ERRF(job->errmsg, rc, "task '%s' on node '%s' (%s, epoch %" PRId64 ") failed: %s",
                            t->name, t->node, phase, epoch, ckh_strerror(rc));
    }
    return 0;
}

bool ckh_job_should_stop(const struct ckh_job *job, const struct ckh_session *s)
{
    bool stop = false;
    if (!job || !s)
        return false;
    for (size_t i = 0; i < job->nstops; i++) {
        int64_t v;
        if (!ckh_session_is_local(s, job->stops[i].node))
            continue;
        if (ckh_ws_get_i64(s->ws, job->stops[i].blob, &v) == 0 && v != 0)
            stop = true;
    }
    return stop;
}

/* ---- the runner ---- */

static void save_checkpoints(struct ckh_runner_config *cfg, struct ckh_session *s, int64_t epoch)
{
    int rc;
    ckh_node_phase(s->env->node, "save", epoch, -1);
    if (!ckh_ckpt_accessible(cfg->ckpt, -1)) {
        ckh_node_logf(s->env->node, "checkpoint files cannot be accessed; epoch %" PRId64 " not saved",
                      epoch);
        cfg->saves_failed++;
        ckh_record_save(s->env->record, &(struct ckh_rec_save){.step = epoch, .epoch = epoch, .rc = CKH_ENOTFOUND,
                                                              .what = "checkpoint files cannot be accessed"});
        return;
    }
    rc = ckh_ckpt_save(cfg->ckpt, s, epoch);
    if (rc == 0)
        rc = ckh_ckpt_write_metadata(cfg->ckpt, s, epoch);
    ckh_record_save(s->env->record, &(struct ckh_rec_save){.step = epoch, .epoch = epoch, .rc = rc,
                                                          .what = rc ? ckh_ckpt_errmsg(cfg->ckpt) : NULL});
    if (rc != 0) {
        cfg->saves_failed++;
        ckh_node_logf(s->env->node, "unable to write checkpoint for epoch %" PRId64 ": %s (%s)",
                      epoch, ckh_ckpt_errmsg(cfg->ckpt), ckh_err_name(rc));
        return;
    }
    ckh_ckpt_report_stats(cfg->ckpt, "checkpoint_save");
}

/* Starts the job: from scratch (init group, then the checkpoint of epoch
 * 0) or from the checkpoint of epoch resume (loaded, then made durable). */
static int runner_start(struct ckh_runner_config *cfg, struct ckh_session *s,
                        const char *const *nodes, size_t nnodes, int64_t resume)
{
    bool from_scratch = resume < 0;
    int rc;
    if (from_scratch && (rc = ckh_job_run_group(cfg->job, s, CKH_GROUP_INIT, "init", 0)) != 0)
        return rc;
    if (!cfg->ckpt)
        return 0;
    ckh_node_phase(s->env->node, from_scratch ? "init" : "load", from_scratch ? 0 : resume, -1);
    if ((rc = ckh_ckpt_init(cfg->ckpt, s, nodes, nnodes, from_scratch ? -1 : resume)) != 0)
        return rc;
    if (from_scratch) {
        save_checkpoints(cfg, s, 0);
        return 0;
    }
    ckh_node_phase(s->env->node, "load", resume, -1);
    if ((rc = ckh_ckpt_load(cfg->ckpt, s, resume)) != 0)
        return rc;
    ckh_ckpt_report_stats(cfg->ckpt, "checkpoint_load");
    /* The job builds on this checkpoint: make it durable (see
     * ckh_ckpt_sync). Like a failed save, a failure is not fatal. */
    if ((rc = ckh_ckpt_sync(cfg->ckpt, s, resume)) != 0)
        ckh_node_logf(s->env->node, "checkpoint of epoch %" PRId64 " not made durable: %s", resume,
                      ckh_ckpt_errmsg(cfg->ckpt));
    return 0;
}

int ckh_runner_run(struct ckh_runner_config *cfg, struct ckh_session *s, int64_t *epochs)
{
    const char *const *nodes;
    size_t nnodes;
    int64_t resume, epoch;
    bool from_scratch;
    int rc;

    if (!cfg || !cfg->job || !s || !s->env || !s->ws || !epochs)
        return CKH_EINVAL;
    if ((rc = ckh_job_nodes_to_checkpoint(cfg->job, &nodes, &nnodes)) != 0)
        return rc;
    resume = cfg->resume_from_epoch;
    if (cfg->ckpt && (rc = ckh_ckpt_resume_epoch(cfg->ckpt, nodes, nnodes, cfg->resume_from_epoch, &resume)) != 0)
        return rc;
    if (resume >= 0) {
        ckh_node_logf(s->env->node, "resuming from epoch %" PRId64, resume);
        ckh_record_resume(s->env->record, &(struct ckh_rec_resume){.step = 0, .epoch = resume});
    }
    from_scratch = resume < 0;
    cfg->resumed_from = resume < 0 ? -1 : resume;
    cfg->saves_failed = 0;
    if ((rc = runner_start(cfg, s, nodes, nnodes, resume)) != 0)
        return rc;
    epoch = from_scratch ? 1 : resume + 1;
    /* A checkpoint whose stop condition already holds is the final epoch's:
     * the job was over, so no epoch runs again (running one more would
     * train past the end for any job whose epochs change state). */
    bool over = !from_scratch && ckh_job_should_stop(cfg->job, s);
    if (over)
        epoch = resume;
    while (!over) {
        bool stop;
        ckh_node_phase(s->env->node, "epoch", epoch, -1);
        if ((rc = ckh_job_run_group(cfg->job, s, CKH_GROUP_EPOCH, "epoch", epoch)) != 0)
            return rc;
        stop = ckh_job_should_stop(cfg->job, s);
        if (cfg->ckpt)
            save_checkpoints(cfg, s, epoch);
        if (stop)
            break;
        epoch++;
    }
    if (cfg->upload) {
        ckh_node_phase(s->env->node, "upload", epoch, -1);
        if ((rc = cfg->upload(cfg->upload_ctx, s, cfg->ckpt, epoch)) != 0)
            return rc;
    }
    if ((rc = ckh_job_run_group(cfg->job, s, CKH_GROUP_DOWNLOAD, "download", epoch)) != 0)
        return rc;
    if ((rc = ckh_job_run_group(cfg->job, s, CKH_GROUP_EXIT, "exit", epoch)) != 0)
        return rc;
    *epochs = epoch;
    return 0;
}

int ckh_runner_load_blobs_from_checkpoints(struct ckh_runner_config *cfg, struct ckh_session *s,
                                           const char *const *names, size_t count, int64_t epoch)
{
    const char *const *nodes;
    size_t nnodes;
    int rc;
    if (!cfg || !cfg->job || !cfg->ckpt || !s)
        return CKH_EINVAL;
    if ((rc = ckh_job_nodes_to_checkpoint(cfg->job, &nodes, &nnodes)) != 0)
        return rc;
    ckh_node_phase(s->env->node, "load", epoch, -1);
    rc = ckh_ckpt_load_blobs_locally(cfg->ckpt, s, nodes, nnodes, names, count, epoch);
    ckh_ckpt_report_stats(cfg->ckpt, "checkpoint_partial_load");
    return rc;
}

/* ---- upload builder ---- */

/* Copies from to `to` without ever leaving `to` half-written: the copy
 * goes to "<to>.tmp" (one uploader per destination, so a stale one is
 * simply overwritten), is fsynced and renamed over `to`; the caller fsyncs
 * the directory. */
static int copy_file(struct ckh_fs *fs, struct ckh_alloc *a, const char *from, const char *to)
{
    struct ckh_file *in = NULL, *out = NULL;
    char tmp[CKH_PATH_MAX + 8];
    unsigned char *buf = ckh_malloc(a, 65536);
    uint64_t off = 0;
    int rc;
    if (!buf)
        return CKH_ENOMEM;
    if (snprintf(tmp, sizeof tmp, "%s.tmp", to) >= (int)sizeof tmp) {
        rc = CKH_EINVAL;
        goto out_free;
    }
    if ((rc = ckh_fs_open(fs, from, CKH_O_RDONLY, &in)) != 0)
        goto out_free;
    if ((rc = ckh_fs_open(fs, tmp, CKH_O_WRONLY | CKH_O_CREAT | CKH_O_TRUNC, &out)) != 0)
        goto out_close;
    for (;;) {
        int64_t k = ckh_file_pread(in, buf, 65536, off);
        if (k < 0) {
            rc = (int)k;
            break;
        }
        if (k == 0)
            break;
        if ((rc = ckh_file_write_all(out, buf, (size_t)k)) != 0)
            break;
        off += (uint64_t)k;
    }
    if (rc == 0)
        rc = ckh_file_fsync(out);
    if (ckh_file_close(out) != 0 && rc == 0)
        rc = -EIO;
    if (rc == 0)
        rc = ckh_fs_rename(fs, tmp, to);
    else
        ckh_fs_unlink(fs, tmp);
out_close:
    ckh_file_close(in);
out_free:
    ckh_free(a, buf);
    return rc;
}

int ckh_upload_to_dir(void *dir, struct ckh_session *s, struct ckh_ckpt *ck, int64_t epoch)
{
    const char *d = dir;
    int rc;
    if (!d || !s || !ck)
        return CKH_EINVAL;
    for (size_t i = 0; i < ckh_ckpt_node_count(ck); i++) {
        const char *node = ckh_ckpt_node_name(ck, i);
        char src[CKH_PATH_MAX], dst[CKH_PATH_MAX];
        if (!ckh_session_is_local(s, node))
            continue;
        if ((rc = ckh_ckpt_db_name(ck, node, epoch, src, sizeof src)) != 0 ||
            (rc = ckh_path_join(dst, sizeof dst, d, node)) != 0)
            return rc;
        if ((rc = copy_file(s->env->fs, s->env->alloc, src, dst)) != 0) {
            ckh_node_logf(s->env->node, "upload of '%s' to '%s' failed: %s", src, dst,
                          ckh_strerror(rc));
            return rc;
        }
    }
    return ckh_fs_fsync_dir(s->env->fs, d);
}
