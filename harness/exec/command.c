/* Command jobs from the scenario to the verdict (exec/command.h has the
 * data flow): the run folder and the checks before anything runs, the
 * disks and their ckhfs mounts, one run of the job, the runs with restarts
 * and `verify`, the reference run, the verdict, and `ckh replay`.
 *
 * Map: set-up · mounts · one run · how each node ended · verify · the runs
 * · entry points (run, replay).
 *
 * The run folder (ckh's temporary folder naming, run/tmpdir.h) holds one
 * folder per execution (ref/, job/, det/) with mnt/ (the mount points),
 * results/<node>.<run>.jsonl (CKH_RESULT) and logs/<node>.<run>.log (what
 * the program printed). It is removed on every exit path, after every
 * process is reaped and every mount is gone.
 *
 * What is deterministic: the fault script's matching (a single-threaded
 * program's n-th pwrite is the same operation in every run), the crash
 * model's choices (seeded per disk), the order of runs and restarts. What
 * is not: the interleaving of several processes' operations, wall-clock
 * triggers and delays, the program's own nondeterminism.
 * docs/SCENARIOS.md ("What is deterministic") says the same to users.
 */
#include "exec/command.h"
#include "exec/command_fault.h"
#include "exec/command_ns.h"
#include "exec/command_proc.h"
#include "exec/command_outside.h"
#include "exec/command_result.h"
#include "exec/prog_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/run_ctx.h"
#include "exec/tmpdir.h"

/* ---- set-up ---- */

/* The program node `name` runs: its own entry, else the default. */
static const struct ckh_scn_command *command_for(const struct ckh_scenario *sc, const char *name)
{
    const struct ckh_scn_command *dflt = NULL;
    for (size_t i = 0; i < sc->job.ncommands; i++) {
        if (sc->job.commands[i].node && !strcmp(sc->job.commands[i].node, name))
            return &sc->job.commands[i];
        if (!sc->job.commands[i].node)
            dflt = &sc->job.commands[i];
    }
    return dflt;
}

/* Every node has a program, every named entry a node. */
static int check_commands(struct ckh__cmd *c)
{
    const struct ckh_scenario *sc = c->sc;
    for (size_t i = 0; i < sc->job.ncommands; i++) {
        const struct ckh_scn_command *e = &sc->job.commands[i];
        long idx = e->node ? strtol(e->node + 5, NULL, 10) : 0;
        if (e->node && idx >= c->n)
            return ckh__cmd_fail(c, CKH_EINVAL, "%s:%d:%d: job.command names %s, which the job does "
                                 "not have (its nodes: rank_0 .. rank_%d)", sc->file, e->line, e->column,
                                 e->node, c->n - 1);
    }
    for (int i = 0; i < c->n; i++)
        if (!c->nodes[i].cmd)
            return ckh__cmd_fail(c, CKH_EINVAL, "%s:%d:%d: job.command gives %s no program (name it, "
                                 "or add a 'default')", sc->file, sc->job.commands[0].line,
                                 sc->job.commands[0].column, c->nodes[i].name);
    return 0;
}

/* The latest pointer of a command job, for the latest-pointer faults
 * without `path:`: <checkpoint_dir>/latest. */
static int latest_link(void *inst, char *buf, size_t n)
{
    struct ckh__cmd *c = inst;
    const char *d = c->sc->job.checkpoint_dir;
    snprintf(buf, n, "%s/latest", strcmp(d, "/") ? d : "");
    return 0;
}

/* The disks (one per disk, or per disk and node when not shared), the
 * checkpoint directory made durable on them, and one mount per disk. */
/* One disk of the job and its mount folder (ckh__exec_build_disks). */
static int make_disk(void *ctx, const struct ckh_simfs_config *dc, size_t d, int node, struct ckh_simfs **out)
{
    struct ckh__cmd *c = ctx;
    /* The bytes the programs write live on the real disk, in the run
     * folder (unnamed, gone with the disk): a checkpoint of any size. */
    struct ckh_simfs_config sdc = *dc;
    sdc.store_dir = c->dir;
    int rc = ckh_simfs_create(&sdc, out);
    if (rc)
        return ckh__cmd_fail(c, rc, "disk %s: %s", dc->name, ckh_strerror(rc));
    struct ckh__cmd_mount *m = &c->mounts[c->nmounts++];
    *m = (struct ckh__cmd_mount){.c = c, .disk = *out, .disk_index = d, .node = node,
                                 .prefix = c->sc->job.disks[d].mount};
    snprintf(m->dir, sizeof m->dir, "%s/mnt/%s", c->dir, dc->name);
    if ((rc = ckh_tmp_mkdirs(m->dir)) != 0)
        return ckh__cmd_fail(c, CKH_EINTERNAL, "cannot create %s: %s", m->dir, strerror(-rc));
    return 0;
}

static int add_disks(struct ckh__cmd *c)
{
    const struct ckh_scn_job *job = &c->sc->job;
    size_t nd = job->ndisks;
    int rc;
    c->disks = calloc(nd * (size_t)c->n, sizeof *c->disks);
    c->mounts = calloc(nd * (size_t)c->n, sizeof *c->mounts);
    if (!c->disks || !c->mounts)
        return ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
    const char *names[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++)
        names[i] = c->nodes[i].name;
    if ((rc = ckh__exec_build_disks(c->sc, c->n, names, c->seed, make_disk, c, c->disks)) != 0)
        return rc;
    c->env = (struct ckh_fault_env){.sc = c->sc, .nnodes = c->n, .disks = c->disks,
                                    .latest_link = latest_link, .inst = c, .err = c->err,
                                    .errlen = sizeof c->err};
    if ((rc = ckh_fault_for_each_disk(&c->env, -1, job->checkpoint_dir, ckh__run_make_dir_fn, NULL)) != 0)
        return ckh__cmd_fail(c, rc, "%s", c->err);
    return 0;
}

/* One execution of sc's job in folder dir (created here). On failure
 * c->err says why; ckh__cmd_free frees c either way. */
/* job.object_store: the store, its buckets and its endpoint, one port per
 * node, up for the whole execution (docs/OBJECT_STORE.md). */
static int store_start(struct ckh__cmd *c)
{
    const struct ckh_scn_object_store *os = c->sc->job.object_store;
    if (os == NULL)
        return 0;
    struct ckh_objstore_config cfg = {.name = "s3",
                                      .seed = ckh_seed_derive(c->seed, "objstore"),
                                      .consistency = (enum ckh_objstore_consistency)os->consistency,
                                      .delay_ops = os->delay_ops};
    int rc = ckh_objstore_create(&cfg, &c->store);
    for (size_t b = 0; rc == 0 && b < os->nbuckets; b++)
        rc = ckh_objstore_create_bucket(c->store, -1, os->buckets[b]);
    if (rc != 0)
        return ckh__cmd_fail(c, rc < 0 ? rc : CKH_EINVAL, "%d:%d: job.object_store: cannot make the store: %s",
                             os->line, os->column, rc < 0 ? ckh_strerror(rc) : ckh_s3_err_code(rc));
    c->env.store = c->store; /* the at-rest faults on it (s3-expire, s3-corrupt) */
    char msg[CKH_ERRMSG_BYTES];
    struct ckh_s3_server_config sc = {.store = c->store, .nnodes = c->n, .hook = ckh__cmd_s3_hook, .hook_ctx = c};
    /* An endpoint this build lacks is the environment's limit (exit status
     * 3), as FUSE that cannot be used is. */
    if ((rc = ckh_s3_server_start(&sc, &c->s3, msg, sizeof msg)) != 0)
        return ckh__cmd_fail(c, rc == CKH_EUNSUPPORTED ? CKH_ELIMIT : rc, "%d:%d: job.object_store: %s", os->line,
                             os->column, msg);
    return 0;
}

/* The end of a run for the store: every write still in flight was in flight
 * when the run's processes died, so the crash model keeps or undoes it
 * (O12, drawn from the seed); the run's trace lines end here. */
static int store_end_run(struct ckh__cmd *c)
{
    if (c->store == NULL)
        return 0;
    size_t *ends = realloc(c->store_run_end, ((size_t)c->nstore_run + 1) * sizeof *ends);
    if (ends == NULL)
        return ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
    c->store_run_end = ends;
    ckh_s3_server_lock(c->s3);
    int rc = ckh_objstore_inflight_count(c->store, -1) > 0 ? ckh_objstore_crash(c->store, -1, NULL, 0) : 0;
    ends[c->nstore_run++] = ckh_objstore_trace_len(c->store);
    ckh_s3_server_unlock(c->s3);
    return rc < 0 ? ckh__cmd_fail(c, rc, "the object store's crash: %s", ckh_strerror(rc)) : 0;
}

int ckh__cmd_init(struct ckh__cmd *c, const struct ckh_scenario *sc, uint64_t seed, unsigned mode,
                    const char *dir, const char *cwd)
{
    const struct ckh_scn_job *job = &sc->job;
    int rc;
    memset(c, 0, sizeof *c);
    c->sc = sc;
    c->seed = seed;
    c->mode = mode;
    c->cwd = cwd;
    c->on_progress = ckh__cmd_progress_triggers;
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    pthread_mutex_init(&c->lock, NULL);
    c->lock_ready = true;
    c->world_first = (int)(job->nodes ? job->nodes : 1);
    c->world_restart = sc->restart.world_size && !(mode & CKH_RUN_NO_FAULTS) ? (int)sc->restart.world_size
                                                                                : c->world_first;
    c->n = c->world_first > c->world_restart ? c->world_first : c->world_restart;
    c->step_based = job->every_epochs == 0;
    c->ns_mode = job->checkpoint_mount ? (int)ckh__ns_mode(job->checkpoint_mount) : CKH__NS_NONE;
    char sub[CKH__CMD_PATH_MAX + 16];
    static const char *const subs[] = {"mnt", "results", "logs", "tmp"};
    for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, subs[k]);
        if ((rc = ckh_tmp_mkdirs(sub)) != 0)
            return ckh__cmd_fail(c, CKH_EINTERNAL, "cannot create %s: %s", sub, strerror(-rc));
    }
    c->nodes = calloc((size_t)c->n, sizeof *c->nodes);
    c->crash.nodes = calloc((size_t)c->n, sizeof *c->crash.nodes);
    if (!c->nodes || !c->crash.nodes)
        return ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
    for (int i = 0; i < c->n; i++) {
        struct ckh__cmd_node *nd = &c->nodes[i];
        snprintf(nd->name, sizeof nd->name, "rank_%d", i);
        nd->cmd = command_for(sc, nd->name);
        nd->rank = i < c->world_first ? i : -1;
        nd->pidfd = nd->result_fd = -1;
    }
    if ((rc = check_commands(c)) != 0)
        return rc;
    for (int i = 0; i < c->n; i++)
        if ((rc = ckh__cmd_resolve(c, c->nodes[i].cmd, c->nodes[i].exe, sizeof c->nodes[i].exe)) != 0)
            return rc;
    unsigned flags = (c->n > 1 && sc->restart.scope == CKH_SCN_RESTART_ALL ? CKH_RECORDS_COLLECTIVE : 0) |
                     (c->step_based ? CKH_RECORDS_STEP_BASED : 0);
    if ((rc = ckh_records_create((size_t)c->n, flags, &c->records)) != 0)
        return ckh__cmd_fail(c, rc, "out of memory");
    ckh_records_set_fault_probe(c->records, ckh__cmd_fault_fired, c);
    if ((rc = add_disks(c)) != 0)
        return rc;
    return store_start(c);
}

static void trace_free(struct ckh__cmd *c)
{
    for (size_t i = 0; i < c->ntrace; i++) {
        free(c->trace[i].path);
        free(c->trace[i].path2);
    }
    free(c->trace);
    c->trace = NULL;
    c->ntrace = c->captrace = 0;
}

/* Unmounts, fills the trace's results from the mounts first. */
static void unmount_all(struct ckh__cmd *c, size_t trace_from);

/* Frees c after killing what runs and unmounting what is mounted. */
void ckh__cmd_free(struct ckh__cmd *c)
{
    if (!c->sc)
        return; /* never initialised */
    if (c->nodes)
        ckh__cmd_kill_all(c);
    unmount_all(c, c->ntrace);
    for (int i = 0; c->nodes && i < c->n; i++) {
        if (c->nodes[i].result_fd >= 0)
            close(c->nodes[i].result_fd);
        free(c->nodes[i].partial);
    }
    const struct ckh_scn_job *job = &c->sc->job;
    for (size_t d = 0; c->disks && d < job->ndisks; d++)
        for (int i = 0; i < c->n; i++)
            if (!job->disks[d].shared || i == 0)
                ckh_simfs_destroy(c->disks[d * (size_t)c->n + (size_t)i]);
    ckh_s3_server_stop(c->s3);
    ckh_objstore_destroy(c->store);
    free(c->store_run_end);
    free(c->delete_steps);
    ckh_records_destroy(c->records);
    trace_free(c);
    free(c->rules);
    free(c->crash.nodes);
    free(c->disks);
    free(c->mounts);
    free(c->nodes);
    if (c->lock_ready)
        pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof *c);
}

/* ---- mounts ---- */

/* The result of mount m's operation seq, from its trace (0 when gone). */
static int64_t op_result(const struct ckh_ckhfs_op *ops, size_t n, uint64_t seq)
{
    if (seq >= 1 && seq <= n && ops[seq - 1].seq == seq)
        return ops[seq - 1].result;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ops[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ops[lo].seq == seq ? ops[lo].result : 0;
}

/* trace_results fills in the results of the trace's lines since
 * trace_from from the mounts' own traces; unmount_all does that, then
 * unmounts. The mounts' traces are taken first
 * and c->lock only then: the server holds its mount's lock while it takes
 * c->lock (in the hook), never the other way round. */
static void trace_results(struct ckh__cmd *c, size_t trace_from)
{
    const struct ckh_ckhfs_op **ops = c->nmounts ? calloc(c->nmounts, sizeof *ops) : NULL;
    size_t *nops = c->nmounts ? calloc(c->nmounts, sizeof *nops) : NULL;
    for (size_t m = 0; ops && nops && m < c->nmounts; m++)
        if (c->mounts[m].fs)
            ops[m] = ckh_ckhfs_trace(c->mounts[m].fs, &nops[m]);
    pthread_mutex_lock(&c->lock);
    for (size_t k = trace_from; ops && nops && k < c->ntrace; k++) {
        struct ckh__cmd_trace *t = &c->trace[k];
        if (!t->answer && t->mount >= 0 && (size_t)t->mount < c->nmounts && ops[t->mount])
            t->result = op_result(ops[t->mount], nops[t->mount], t->seq);
    }
    pthread_mutex_unlock(&c->lock);
    free(ops);
    free(nops);
}

static void unmount_all(struct ckh__cmd *c, size_t trace_from)
{
    trace_results(c, trace_from);
    for (size_t m = 0; c->mounts && m < c->nmounts; m++) {
        ckh_ckhfs_unmount(c->mounts[m].fs);
        c->mounts[m].fs = NULL;
    }
}

/* FUSE that cannot be used is the environment's limit (exit status 3). */
static int mount_failed(struct ckh__cmd *c, int rc, const char *dir, const char *msg)
{
    if (rc == CKH_EUNSUPPORTED)
        return ckh__cmd_fail(c, CKH_ELIMIT, "FUSE cannot be used here: %s (command jobs serve their "
                             "checkpoint directory over FUSE; docs/SCENARIOS.md, \"Command jobs\")", msg);
    return ckh__cmd_fail(c, rc == CKH_ENOMEM ? rc : CKH_EINTERNAL, "cannot mount ckhfs at %s: %s", dir,
                         msg[0] ? msg : ckh_strerror(rc));
}

/* Whether the kernel may keep the names it looked up on this run's
 * mounts (ckh_ckhfs_config.cache_names): no armed rule changes the disks
 * at its trigger (an at-rest fault mid-run would remove names behind the
 * kernel), and none can match or count a `stat` (the lookups the kernel
 * then answers itself would be missing). */
static bool names_stable(const struct ckh__cmd *c)
{
    for (size_t k = 0; k < c->nrules; k++) {
        const struct ckh__cmd_rule *r = &c->rules[k];
        if (r->at_rest || (!r->progress && (r->r.kind < 0 || r->r.kind == CKH_OP_STAT)))
            return false;
    }
    return true;
}

/* Mounts mt with the command job's callbacks (mt->fs; NULL on failure). */
static int mount_one(struct ckh__cmd_mount *mt, bool stable, char *msg, size_t n)
{
    struct ckh_ckhfs_config cfg = {.mountpoint = mt->dir, .disk = mt->disk,
                                   .node_of_pid = ckh__cmd_node_of_pid, .hook = ckh__cmd_hook,
                                   .kill_node = ckh__cmd_kill_node, .ctx = mt, .keep_trace = true,
                                   .held_answered = ckh__cmd_held_answered, .cache_names = stable,
                                   .released = ckh__cmd_order_released};
    int rc = ckh_ckhfs_mount(&cfg, &mt->fs, msg, n);
    if (rc)
        mt->fs = NULL;
    return rc;
}

static int mount_all(struct ckh__cmd *c)
{
    const bool stable = names_stable(c);
    for (size_t m = 0; m < c->nmounts; m++) {
        struct ckh__cmd_mount *mt = &c->mounts[m];
        char msg[512] = "";
        int rc = mount_one(mt, stable, msg, sizeof msg);
        if (rc) {
            unmount_all(c, c->ntrace);
            return mount_failed(c, rc, mt->dir, msg);
        }
    }
    return 0;
}

/* Verify's mounts on the kept mounts c->verify_keep[d], one per disk
 * (each made on first use): each disk swapped in, its callbacks' context
 * this call's mount. A kept mount that cannot be made is the error; those
 * made or swapped before it are released by release_kept. */
static int mount_kept(struct ckh__cmd *c)
{
    for (size_t m = 0; m < c->nmounts; m++) {
        struct ckh__cmd_mount *mt = &c->mounts[m];
        struct ckh_ckhfs **keep = &c->verify_keep[mt->disk_index];
        char msg[512] = "";
        int rc;
        if (*keep) {
            if ((rc = ckh_ckhfs_swap_disk(*keep, mt->disk, mt)) != 0)
                return ckh__cmd_fail(c, CKH_EINTERNAL, "cannot serve the state at %s: %s", mt->dir,
                                     ckh_strerror(rc));
            mt->fs = *keep;
            continue;
        }
        if ((rc = mount_one(mt, names_stable(c), msg, sizeof msg)) != 0)
            return mount_failed(c, rc, mt->dir, msg);
        *keep = mt->fs;
    }
    return 0;
}

/* After verify on the kept mounts: the trace's results, then each mount
 * left up with no disk (the clones it served are freed next). */
static void release_kept(struct ckh__cmd *c, size_t trace_from)
{
    trace_results(c, trace_from);
    for (size_t m = 0; m < c->nmounts; m++) {
        if (c->mounts[m].fs)
            ckh_ckhfs_swap_disk(c->mounts[m].fs, NULL, NULL); /* no held request: verify's ops hold none */
        c->mounts[m].fs = NULL;
    }
}

/* ---- one run ---- */

/* Node i's files and state for the current run. */
static int prepare_node(struct ckh__cmd *c, int i)
{
    struct ckh__cmd_node *nd = &c->nodes[i];
    snprintf(nd->result, sizeof nd->result, "%s/results/%s.%d.jsonl", c->dir, nd->name, c->run);
    snprintf(nd->log, sizeof nd->log, "%s/logs/%s.%d.log", c->dir, nd->name, c->run);
    if (nd->result_fd >= 0)
        close(nd->result_fd);
    free(nd->partial);
    nd->partial = NULL;
    nd->npartial = nd->cpartial = 0;
    nd->result_read = 0;
    nd->result_over = false;
    nd->pid = 0;
    nd->pidfd = -1;
    nd->reaped = nd->group_gone = nd->preempted = false;
    nd->end = nd->start ? CKH__CMD_RUNNING : CKH__CMD_NOT_STARTED;
    nd->exit_status = nd->term_sig = 0;
    nd->killed_why = NULL;
    nd->kill_at_ms = 0;
    nd->last_op[0] = '\0';
    memset(&nd->prog, 0, sizeof nd->prog);
    nd->prog.step = nd->prog.epoch = nd->prog.progress = -1;
    nd->result_fd = -1;
    if (!nd->start)
        return 0;
    /* Made afresh: a program of an earlier run may have put a link or a
     * FIFO at this path (exec/prog_file.h). */
    int fd = ckh__prog_file_create(nd->result);
    if (fd == -EISDIR)
        return ckh__cmd_fail(c, CKH_EINVAL, "cannot create $CKH_RESULT of %s in run %d (%s): a program of an "
                             "earlier run put a folder there", nd->name, c->run, nd->result);
    if (fd < 0)
        return ckh__cmd_fail(c, CKH_EINTERNAL, "cannot create %s: %s", nd->result, strerror(-fd));
    close(fd);
    nd->result_fd = open(nd->result, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    return 0;
}

/* Starts the run's nodes and waits for them; the mounts are up meanwhile. */
static int run_processes(struct ckh__cmd *c, bool *hung)
{
    size_t from = c->ntrace;
    int rc = mount_all(c);
    if (rc)
        return rc;
    c->run_t0_ms = ckh_posix_now_ms();
    for (int i = 0; i < c->n && rc == 0; i++)
        if (c->nodes[i].start)
            rc = ckh__cmd_spawn_node(c, i);
    if (rc == 0)
        rc = ckh__cmd_wait_run(c, hung);
    if (rc)
        ckh__cmd_kill_all(c);
    unmount_all(c, from);
    for (int i = 0; i < c->n; i++)
        if (c->nodes[i].pidfd >= 0) {
            close(c->nodes[i].pidfd);
            c->nodes[i].pidfd = -1;
        }
    return rc;
}

/* ---- how each node ended ---- */

/* The last non-empty line node i printed, for messages (a log the
 * program replaced by something else is not read: exec/prog_file.h). */
static void node_said(const struct ckh__cmd_node *nd, char *out, size_t n)
{
    ckh__prog_file_last_line(nd->log, out, n);
}

/* "exited with status 1", "died of signal 11 (Segmentation fault)", ... */
static void describe_end(const struct ckh__cmd_node *nd, char *out, size_t n)
{
    char said[300];
    node_said(nd, said, sizeof said);
    int k;
    switch (nd->end) {
    case CKH__CMD_EXITED: k = snprintf(out, n, "exited with status %d", nd->exit_status); break;
    case CKH__CMD_SIGNALED:
        k = snprintf(out, n, "died of signal %d (%s)", nd->term_sig, strsignal(nd->term_sig));
        break;
    case CKH__CMD_KILLED: k = snprintf(out, n, "was killed (%s)", nd->killed_why ? nd->killed_why : "?"); break;
    default: k = snprintf(out, n, "did not start"); break;
    }
    if (said[0] && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, "; its last output: %s", said);
}

/* Node i's end into ne (started this run). */
static void node_end(struct ckh__cmd *c, int i, bool hung, struct ckh_node_end *ne)
{
    const struct ckh__cmd_node *nd = &c->nodes[i];
    bool hang = hung && nd->killed_why && !strcmp(nd->killed_why, "hang");
    ne->progress = nd->prog.progress;
    ne->resume_known = nd->prog.resume_known;
    ne->resume_point = nd->prog.resume_point;
    ne->resumed_from = -1;
    if (nd->prog.step >= 0)
        snprintf(ne->phase, sizeof ne->phase, "step %" PRIu64, (uint64_t)nd->prog.step % 10000000000u);
    if (hang) {
        ne->state = CKH_NODE_RUNNING;
        snprintf(ne->pending, sizeof ne->pending, "%s%.140s", nd->last_op[0] ? "last op " : "no op on a mount",
                 nd->last_op);
    } else if (nd->end == CKH__CMD_KILLED || (nd->preempted && !nd->prog.has_final)) {
        ne->state = CKH_NODE_KILLED;
    } else {
        ne->state = CKH_NODE_EXITED;
        ne->exit_status = nd->end == CKH__CMD_SIGNALED ? 128 + nd->term_sig : nd->exit_status;
    }
}

/* A program that exits 0 without its final record broke the protocol. */
static int check_final(struct ckh__cmd *c)
{
    for (int i = 0; i < c->n; i++) {
        const struct ckh__cmd_node *nd = &c->nodes[i];
        if (nd->start && nd->end == CKH__CMD_EXITED && nd->exit_status == 0 && !nd->preempted &&
            !nd->prog.has_final)
            return ckh__cmd_fail(c, CKH_EINVAL,
                                 "%s:%d:%d: %s exited with status 0 in run %d without a final result record: "
                                 "a program writes {\"kind\":\"final\", ...} to $CKH_RESULT when it "
                                 "completes the job (docs/SCENARIOS.md, \"Result protocol\")",
                                 c->sc->file, nd->cmd->line, nd->cmd->column, nd->name, c->run);
    }
    return 0;
}

/* The run's record: each node's end, the job result so far. */
static int record_run(struct ckh__cmd *c, bool hung, struct ckh_run_info *ri, const struct ckh_run_info *prev,
                      struct ckh_scenario_run *out)
{
    const char *names[CKH_RUNNER_MAX_NODES];
    int rcs[CKH_RUNNER_MAX_NODES], rc;
    bool all_ok = true;
    size_t used = 0;
    for (int i = 0; i < c->n; i++) {
        const struct ckh__cmd_node *nd = &c->nodes[i];
        struct ckh_node_end *ne = &ri->nodes[i];
        names[i] = nd->name;
        if (nd->start)
            node_end(c, i, hung, ne);
        else if (nd->rank < 0)
            ne->state = CKH_NODE_PARKED;
        else if (prev) {
            *ne = prev->nodes[i]; /* completed before: not restarted (restart.scope: failed) */
            ne->resume_known = false;
        }
        if (ne->state == CKH_NODE_PARKED)
            ne->resume_known = false;
        rcs[i] = ne->state == CKH_NODE_EXITED ? ne->exit_status : 0;
        if (ne->state == CKH_NODE_PARKED)
            continue;
        ri->crashed |= ne->state == CKH_NODE_KILLED;
        all_ok &= ne->state == CKH_NODE_EXITED && ne->exit_status == 0;
        if (hung && ne->state == CKH_NODE_RUNNING && used < sizeof ri->report)
            used += (size_t)snprintf(ri->report + used, sizeof ri->report - used, "%s%s (%s)",
                                     used ? ", " : "", nd->name, ne->pending);
        /* A program that failed on its own says why: its end and last
         * output line become the run's report (the outcome's detail). */
        bool failed_itself = nd->start && (nd->end == CKH__CMD_SIGNALED ||
                                           (nd->end == CKH__CMD_EXITED && nd->exit_status != 0));
        if (!hung && failed_itself && used < sizeof ri->report) {
            char why[512];
            describe_end(nd, why, sizeof why);
            used += (size_t)snprintf(ri->report + used, sizeof ri->report - used, "%s%s %s", used ? "; " : "",
                                     nd->name, why);
        }
    }
    ri->outcome = hung ? CKH_SIM_TIME_LIMIT : CKH_SIM_DONE;
    if (hung) /* job.timeout is a command job's timeout (expect.outcome: timeout) */
        out->hang_seen = out->timeout_seen = true;
    struct ckh_job_result jr;
    if ((rc = ckh_records_collect(c->records, names, rcs, &jr)) != 0)
        return ckh__cmd_fail(c, rc, "collecting results: %s", ckh_strerror(rc));
    for (int i = 0; i < c->n && (size_t)i < jr.nnodes; i++) {
        ri->nodes[i].resumed_from = jr.nodes[i].resumed_from;
        ri->nodes[i].rc = jr.nodes[i].rc;
    }
    out->saves_failed = 0;
    for (size_t i = 0; i < jr.nnodes; i++)
        out->saves_failed += jr.nodes[i].saves_failed;
    if ((rc = ckh__run_job_copy(&out->got, &jr)) != 0)
        return ckh__cmd_fail(c, rc, "out of memory");
    ri->completed = all_ok && !hung;
    ri->trace_end = c->ntrace;
    for (size_t k = 0; k < c->nrules; k++)
        ri->faults_fired += c->rules[k].state.fired;
    return 0;
}

/* ---- verify ---- */

/* Runs verify against a clone of node i's disks (so nothing it does
 * changes them); its verdict into *ok and detail. */
int ckh__cmd_verify_view(struct ckh__cmd *c, int i, bool *ok, char *detail, size_t n)
{
    const struct ckh_scn_job *job = &c->sc->job;
    struct ckh__cmd_mount *saved = c->mounts, *vm = calloc(job->ndisks, sizeof *vm);
    size_t saved_n = c->nmounts, nv = 0, from = c->ntrace;
    int rc = vm ? 0 : ckh__cmd_fail(c, CKH_ENOMEM, "out of memory"), st = -1;
    const bool keep = c->verify_keep != NULL;
    char said[300] = "";
    for (size_t d = 0; rc == 0 && d < job->ndisks; d++) {
        struct ckh__cmd_mount *m = &vm[nv];
        *m = (struct ckh__cmd_mount){.c = c, .orig = c->disks[d * (size_t)c->n + (size_t)i], .disk_index = d,
                                     .node = i, .verify = true, .prefix = job->disks[d].mount};
        if (keep && c->verify_keep_dir && job->ndisks == 1)
            snprintf(m->dir, sizeof m->dir, "%s", c->verify_keep_dir);
        else
            snprintf(m->dir, sizeof m->dir, "%s/mnt/verify.%s", c->dir, job->disks[d].name);
        /* (a kept mount's folder exists: a look at it would ask the mount) */
        if ((rc = ckh_simfs_clone(m->orig, &m->disk)) != 0 ||
            (!(keep && c->verify_keep[d]) && (rc = ckh_tmp_mkdirs(m->dir)) != 0))
            rc = ckh__cmd_fail(c, rc, "verify: cannot prepare %s: %s", m->dir, ckh_strerror(rc));
        else
            nv++;
    }
    c->mounts = vm;
    c->nmounts = nv;
    if (rc == 0)
        rc = keep ? mount_kept(c) : mount_all(c);
    if (rc == 0)
        rc = ckh__cmd_run_verify(c, i, &st, said, sizeof said);
    if (keep)
        release_kept(c, from);
    else
        unmount_all(c, from);
    for (size_t k = 0; k < nv; k++)
        ckh_simfs_destroy(vm[k].disk);
    free(vm);
    c->mounts = saved;
    c->nmounts = saved_n;
    if (rc)
        return rc;
    char what[200] = "";
    for (size_t a = 0, used = 0; a < c->sc->verify.argc && used < sizeof what; a++)
        used += (size_t)snprintf(what + used, sizeof what - used, "%s%s", a ? " " : "", c->sc->verify.argv[a]);
    *ok = st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (st < 0)
        snprintf(detail, n, "verify (%s) did not exit within job.timeout", what);
    else if (WIFEXITED(st))
        snprintf(detail, n, "verify (%s) exited with status %d%s%s", what, WEXITSTATUS(st),
                 said[0] ? ": " : "", said);
    else
        snprintf(detail, n, "verify (%s) died of signal %d", what, WTERMSIG(st));
    return 0;
}

/* ---- the runs ---- */

/* Who starts in run `run` after prev (NULL: run 1): run 1 and the first
 * run of a new world start every ranked node; a restart follows the
 * driver's rule (ckh__exec_plan_restart), the group being every node
 * unless restart.scope is failed. */
static void plan_run(struct ckh__cmd *c, int run, const struct ckh_run_info *prev)
{
    bool resized = run == 2 && c->world_restart != c->world_first;
    int world = run == 1 ? c->world_first : c->world_restart;
    int rank[CKH_RUNNER_MAX_NODES];
    bool start[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++)
        c->nodes[i].rank = rank[i] = i < world ? i : -1;
    if (prev && !resized)
        ckh__exec_plan_restart(prev, c->n, rank, NULL, c->sc->restart.scope == CKH_SCN_RESTART_ALL, start);
    for (int i = 0; i < c->n; i++)
        c->nodes[i].start = rank[i] >= 0 && (!prev || resized || start[i]);
}

static int run_once(struct ckh__cmd *c, struct ckh_run_info *ri, const struct ckh_run_info *prev,
                    struct ckh_scenario_run *out)
{
    bool hung = false;
    int rc;
    c->run = ri->run;
    plan_run(c, ri->run, prev);
    if ((rc = ckh__cmd_arm(c, ri->run)) != 0)
        return c->err_code ? c->err_code : rc;
    for (int i = 0; i < c->n; i++)
        if ((rc = prepare_node(c, i)) != 0)
            return rc;
    c->master_port = ckh__cmd_free_port();
    if ((rc = run_processes(c, &hung)) != 0)
        return rc;
    if (c->err_code) /* a fault applied at its trigger failed (a bad offset) */
        return c->err_code;
    if ((rc = ckh__cmd_read_results(c)) != 0 || (rc = check_final(c)) != 0)
        return rc;
    if ((rc = record_run(c, hung, ri, prev, out)) != 0 || (rc = store_end_run(c)) != 0)
        return rc;
    return ckh__cmd_apply_crash(c);
}

/* Per-node hashes of the operations (a single-threaded program's sequence
 * is deterministic; the interleaving of nodes is not), combined in node order. */
static uint64_t trace_hash(const struct ckh__cmd *c)
{
    uint64_t *h = calloc((size_t)c->n, sizeof *h), all = CKH_HASH_INIT;
    if (!h)
        return 0;
    for (int i = 0; i < c->n; i++)
        h[i] = CKH_HASH_INIT;
    for (size_t k = 0; k < c->ntrace; k++) {
        const struct ckh__cmd_trace *t = &c->trace[k];
        /* An answer line repeats its operation's line. Lookups and stats
         * depend on the kernel's name cache, which every process of the
         * machine shares (and, with cache_names, fills for the others):
         * they are traced but not hashed. */
        if (t->node < 0 || t->node >= c->n || t->verify || t->answer || t->kind == CKH_OP_STAT)
            continue;
        int64_t v[5] = {t->run, t->kind, (int64_t)t->off, (int64_t)t->len, t->result};
        uint64_t *x = &h[t->node];
        *x = ckh_hash64(*x, v, sizeof v);
        if (t->path)
            *x = ckh_hash64(*x, t->path, strlen(t->path) + 1);
        if (t->path2)
            *x = ckh_hash64(*x, t->path2, strlen(t->path2) + 1);
    }
    for (int i = 0; i < c->n; i++)
        all = ckh_hash64(all, &h[i], sizeof h[i]);
    free(h);
    return all;
}

/* ---- the executor's operations (exec/exec.h) ---- */

static int cmd_run(void *x, struct ckh_run_info *ri, const struct ckh_run_info *prev, struct ckh_scenario_run *out)
{
    struct ckh__cmd *c = x;
    if (!(c->mode & CKH_RUN_NO_FAULTS))
        c->rec = out;
    return run_once(c, ri, prev, out);
}

static int cmd_verify_view(void *x, int v, bool *ok, char *detail, size_t n)
{
    return ckh__cmd_verify_view(x, v, ok, detail, n);
}

static uint64_t cmd_trace_hash(void *x)
{
    return trace_hash(x);
}

static const char *cmd_node_name(void *x, int i)
{
    return ((struct ckh__cmd *)x)->nodes[i].name;
}

/* Restarts and world changes are planned in run (plan_run): a command
 * job's nodes are numbered by rank. */
static const struct ckh_exec_ops cmd_ops = {
    .name = "command",
    .run = cmd_run,
    .verify_view = cmd_verify_view,
    .trace_hash = cmd_trace_hash,
    .node_name = cmd_node_name,
};

/* The driver's view of c's job: `verify` (the program) after every
 * failed run of the faulted job. */
static void exec_job(const struct ckh__cmd *c, struct ckh_exec_job *job)
{
    *job = (struct ckh_exec_job){.sc = c->sc, .mode = c->mode, .n = c->n, .world_first = c->world_first,
                                 .world_restart = c->world_restart, .records = c->records,
                                 .verify = !(c->mode & CKH_RUN_NO_FAULTS) && c->sc->verify.argc,
                                 .verify_any_failure = true};
}

/* Whether a disk of the job ran out of ckh's own memory (the programs'
 * requests through ckhfs were then refused with ENOMEM by ckh, not by
 * the scenario): whatever the runs gave is no run of the scenario. */
static int disks_out_of_memory(struct ckh__cmd *c)
{
    bool oom = c->disks_oom;
    for (size_t i = 0; c->disks && i < c->sc->job.ndisks * (size_t)c->n && !oom; i++)
        oom = ckh_simfs_host_out_of_memory(c->disks[i]);
    if (!oom)
        return 0;
    return ckh__cmd_fail(c, CKH_ENOMEM, "%s in a simulated disk: the runs cannot be judged (%s)",
                         ckh_strerror(CKH_ENOMEM), ckh_err_name(CKH_ENOMEM));
}

/* The job with restarts (one run for the reference); fills out's runs. */
int ckh__cmd_execute(struct ckh__cmd *c, struct ckh_scenario_run *out)
{
    struct ckh_exec_job job;
    exec_job(c, &job);
    int rc = ckh__exec_runs(&cmd_ops, c, &job, out);
    if (disks_out_of_memory(c) != 0)
        return CKH_ENOMEM;
    if (rc == CKH_ENOMEM && !c->err[0])
        return ckh__cmd_fail(c, rc, "out of memory");
    return rc;
}

/* ---- entry points ---- */

/* The programs' working folder: the scenario file's, absolute. */
static void scenario_folder(const struct ckh_scenario *sc, char *out, size_t n)
{
    char dir[CKH__CMD_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", sc->file ? sc->file : ".");
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0'; /* "/s.yaml" leaves "", the root */
    const char *d = slash ? (dir[0] ? dir : "/") : ".";
    char real[PATH_MAX];
    snprintf(out, n, "%.*s", (int)(n ? n - 1 : 0), realpath(d, real) ? real : d);
}

int ckh__cmd_job_begin(const struct ckh_scenario *sc, struct ckh__cmd_job *je, char *err, size_t errlen)
{
    char msg[512] = "";
    memset(je, 0, sizeof *je);
    int rc = ckh_fault_check_mode(sc, CKH_FAULT_MODE_COMMAND, err, errlen);
    if (rc != 0)
        return rc;
    if (ckh_ckhfs_available(msg, sizeof msg) != 0)
        return ckh_errf(err, errlen, CKH_ELIMIT,
                        "FUSE cannot be used here: %s (command jobs serve their checkpoint directory over "
                        "FUSE; docs/SCENARIOS.md, \"Command jobs\")", msg);
    scenario_folder(sc, je->cwd, sizeof je->cwd);
    /* Decided before anything runs (said by the reference run's caller). */
    if (sc->job.checkpoint_mount)
        ckh__ns_mode(sc->job.checkpoint_mount);
    rc = ckh_tmp_make(je->dir, sizeof je->dir);
    if (rc) {
        je->dir[0] = '\0';
        return ckh_errf(err, errlen, CKH_EINTERNAL, "cannot create a folder under %s: %s", ckh_tmp_base(),
                        strerror(-rc));
    }
    prctl(PR_GET_CHILD_SUBREAPER, &je->subreaper_was);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    ckh__cmd_signals_install();
    je->started = true;
    return 0;
}

void ckh__cmd_job_end(struct ckh__cmd_job *je)
{
    if (!je->started)
        return;
    if (je->dir[0]) {
        ckh_ckhfs_sweep_stale(je->dir); /* nothing should be left; nothing must stay */
        ckh_tmp_remove(je->dir);
    }
    prctl(PR_SET_CHILD_SUBREAPER, je->subreaper_was);
    ckh__cmd_signals_restore();
    je->started = false;
}

/* Copies c's error into err (a located one as it is). */
int ckh__cmd_take_err(const struct ckh__cmd *c, int rc, const char *what, char *err, size_t errlen)
{
    if (rc == -EINTR)
        return ckh_errf(err, errlen, rc, "interrupted by signal %d", ckh__cmd_interrupted());
    const char *m = c->err[0] ? c->err : ckh_strerror(rc);
    bool located = !strncmp(m, c->sc->file, strlen(c->sc->file));
    return ckh_errf(err, errlen, c->err_code ? c->err_code : rc, "%s%s", located || !what ? "" : what, m);
}

/* Whether nd was stopped because another node failed (restart.scope:
 * all), not by its own failure. */
static bool collateral(const struct ckh__cmd_node *nd)
{
    return nd->end == CKH__CMD_KILLED && nd->killed_why &&
           !strncmp(nd->killed_why, "stopped after another node failed", 33);
}

/* Why the reference run did not complete: each node that failed, as
 * CKH_EFAILS_UNFAULTED (a found bug, judged FAIL by ckh_harness_run);
 * the nodes stopped because of them are left out. */
int ckh__cmd_reference_incomplete(const struct ckh__cmd *c, char *err, size_t errlen)
{
    char why[700] = "";
    size_t used = 0;
    int own = 0; /* nodes that failed on their own, not stopped after another one failed */
    for (int i = 0; i < c->n; i++)
        own += c->nodes[i].start && !collateral(&c->nodes[i]) &&
               !(c->nodes[i].end == CKH__CMD_EXITED && c->nodes[i].exit_status == 0);
    for (int i = 0; i < c->n && used < sizeof why; i++) {
        const struct ckh__cmd_node *nd = &c->nodes[i];
        if (!nd->start || (nd->end == CKH__CMD_EXITED && nd->exit_status == 0) || (own && collateral(nd)))
            continue;
        char d[600];
        if (nd->killed_why && !strcmp(nd->killed_why, "hang"))
            snprintf(d, sizeof d, "still running after job.timeout (%" PRIu64 " ms)",
                     c->sc->job.timeout_ns / 1000000u);
        else
            describe_end(nd, d, sizeof d);
        used += (size_t)snprintf(why + used, sizeof why - used, "%s%s %s", used ? "; " : "", nd->name, d);
    }
    return ckh_errf(err, errlen, CKH_EFAILS_UNFAULTED, "%s", why[0] ? why : "no node completed");
}

/* The job hangs without any fault: that run (tmp's, taken over) is what
 * the oracles judge (hang, outcome), and no faulted job needs to hang
 * again. */
static int take_hung_reference(struct ckh_scenario_run *tmp, struct ckh_scenario_run *r)
{
    int rc = ckh__run_job_copy(&r->got, &tmp->got.r);
    r->runs = tmp->runs;
    r->nruns = tmp->nruns;
    r->runs_cap = tmp->runs_cap;
    tmp->runs = NULL;
    tmp->nruns = 0;
    tmp->runs_cap = 0;
    r->hang_seen = r->timeout_seen = true;
    r->world = tmp->world;
    r->world_restart = tmp->world_restart;
    return rc;
}

/* A completed reference run (tmp, of execution c) becomes r->ref with the
 * checkpoint directory's file digests; *gap is the largest gap between
 * its saves. Saves that left nothing under $CKH_CKPT_DIR are refused. */
static int keep_reference(struct ckh__cmd *c, const struct ckh_scenario_run *tmp, struct ckh_scenario_run *r,
                          int64_t *gap, char *err, size_t errlen)
{
    uint64_t saves = 0;
    int rc;
    *gap = 0;
    for (int i = 0; i < c->n; i++) {
        saves += c->nodes[i].prog.saves_ok;
        if (c->nodes[i].prog.save_gap_max > *gap)
            *gap = c->nodes[i].prog.save_gap_max;
    }
    r->ref_ok = true;
    if ((rc = ckh__run_job_copy(&r->ref, &tmp->got.r)) != 0 || (rc = ckh__cmd_add_file_digests(c, &r->ref)) != 0) {
        ckh__cmd_take_err(c, rc, "reference run: ", err, errlen);
        return rc;
    }
    size_t files = 0;
    for (size_t i = 0; i < r->ref.r.nfinal_values; i++)
        files += !strncmp(r->ref.r.final_values[i].name, "file:", 5);
    if (c->store != NULL) { /* job.object_store: the checkpoints may live in the store */
        ckh_s3_server_lock(c->s3);
        files += ckh_objstore_object_count(c->store);
        ckh_s3_server_unlock(c->s3);
    }
    if (saves && !files)
        return ckh_errf(err, errlen, CKH_EINVAL,
                        "the reference run recorded %" PRIu64 " successful save%s but left nothing under "
                        "$CKH_CKPT_DIR%s: the program writes its checkpoints elsewhere, where ckh's crash model "
                        "and faults never reach them", saves, saves == 1 ? "" : "s",
                        c->store != NULL ? " nor in job.object_store" : "");
    return 0;
}

/* The reference run into r->ref, with its checks: nothing written outside
 * the mount, saves that left files in the checkpoint directory. A
 * reference run that hangs (*hung) is the judged run itself: its runs and
 * result go to r, with no reference (ref_ok false). */
static int reference_run(const struct ckh_scenario *sc, uint64_t seed, const struct ckh__cmd_job *je,
                         const struct ckh__cmd_watch *w, struct ckh_scenario_run *r, int64_t *gap, bool *hung,
                         char *err, size_t errlen)
{
    struct ckh__cmd c;
    struct ckh_scenario_run tmp;
    struct ckh__cmd_snapshot *snap = NULL;
    struct ckh__cmd_outside *outside = NULL;
    char dir[CKH__CMD_PATH_MAX + 8], msg[CKH__CMD_PATH_MAX + 600], unwatched[300] = "";
    memset(&tmp, 0, sizeof tmp);
    tmp.sc = sc;
    snprintf(dir, sizeof dir, "%s/ref", je->dir);
    int rc = ckh__cmd_init(&c, sc, seed, CKH_RUN_NO_FAULTS, dir, je->cwd);
    /* Writes outside the checkpoint directory are the job's when a
     * process of it made them (fanotify); without fanotify, whatever
     * appeared in the folder, said as such. */
    if (rc == 0 && ckh__cmd_outside_start(&c, je->cwd, je->dir, &outside, unwatched, sizeof unwatched) != 0 &&
        !unwatched[0])
        rc = CKH_ENOMEM;
    c.outside = outside;
    if (rc == 0 && !outside)
        rc = ckh__cmd_snapshot_take(je->cwd, &snap);
    if (rc == 0 && w) {
        c.on_op = w->on_op;
        c.on_op_ctx = w->ctx;
        c.on_s3 = w->on_s3;
        c.on_s3_ctx = w->ctx;
    }
    if (rc == 0)
        rc = ckh__cmd_execute(&c, &tmp);
    if (rc == 0 && w && w->on_end)
        w->on_end(w->ctx, &c);
    if (rc) {
        ckh__cmd_take_err(&c, rc, "reference run: ", err, errlen);
        goto out;
    }
    if (!tmp.completed && tmp.hang_seen) {
        rc = take_hung_reference(&tmp, r);
        *hung = true;
        goto out;
    }
    if (!tmp.completed) {
        rc = ckh__cmd_reference_incomplete(&c, err, errlen);
        goto out;
    }
    if (outside && ckh__cmd_outside_found(outside, msg, sizeof msg)) {
        rc = ckh_errf(err, errlen, CKH_EINVAL, "a program wrote outside its checkpoint directory: %s during the "
                      "fault-free reference run; only files under $CKH_CKPT_DIR meet ckh's crash model and faults "
                      "(docs/SCENARIOS.md, \"Command jobs\")", msg);
        goto out;
    }
    if (!outside && (rc = ckh__cmd_snapshot_compare(snap, je->cwd, msg, sizeof msg)) != 0) {
        ckh_errf(err, errlen, rc, "a program wrote outside its checkpoint directory: %s (ckh cannot tell which "
                 "process wrote it here: %s); only files under $CKH_CKPT_DIR meet ckh's crash model and faults "
                 "(docs/SCENARIOS.md, \"Command jobs\")", msg, unwatched);
        goto out;
    }
    rc = keep_reference(&c, &tmp, r, gap, err, errlen);
out:
    ckh__cmd_snapshot_free(snap);
    c.outside = NULL;
    ckh__cmd_outside_free(outside);
    ckh_scenario_run_free(&tmp);
    ckh__cmd_free(&c);
    return rc;
}

/* The checkpoint interval lost-work allows: job.checkpoint_every, else the
 * largest gap between the reference run's saves, else the whole job. */
static int64_t interval_of(const struct ckh_scenario *sc, const struct ckh_scenario_run *r, int64_t gap)
{
    if (sc->job.every_steps || sc->job.every_epochs)
        return sc->job.every_epochs ? (int64_t)sc->job.every_epochs : (int64_t)sc->job.every_steps;
    if (gap > 0)
        return gap;
    int64_t most = 1;
    for (size_t i = 0; i < r->ref.r.nnodes; i++) {
        int64_t v = sc->job.every_epochs ? r->ref.r.nodes[i].epochs : r->ref.r.nodes[i].steps;
        if (v > most)
            most = v;
    }
    return most;
}

/* The faulted job (mode 0) in folder `name` of the run folder: its runs
 * into r; keep: c stays for the caller (replay), freed by cmd_free. */
static int faulted_run(const struct ckh_scenario *sc, uint64_t seed, const struct ckh__cmd_job *je, const char *name,
                       struct ckh_scenario_run *r, struct ckh__cmd *c, char *err, size_t errlen)
{
    char dir[CKH__CMD_PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/%s", je->dir, name);
    int rc = ckh__cmd_init(c, sc, seed, 0, dir, je->cwd);
    if (rc == 0)
        rc = ckh__cmd_execute(c, r);
    if (rc == 0)
        rc = ckh__cmd_store_ops_take(c, r);
    if (rc == 0 && r->got.r.nnodes)
        rc = ckh__cmd_add_file_digests(c, &r->got);
    if (rc)
        ckh__cmd_take_err(c, rc, NULL, err, errlen);
    return rc;
}

int ckh__cmd_reference(const struct ckh_scenario *sc, uint64_t seed, const struct ckh__cmd_job *je,
                        const struct ckh__cmd_watch *w, struct ckh_scenario_run *r, char *err, size_t errlen)
{
    int64_t gap = 0;
    bool hung = false;
    if (sc->job.checkpoint_mount)
        ckh__ns_say(sc->job.checkpoint_mount, NULL);
    int rc = reference_run(sc, seed, je, w, r, &gap, &hung, err, errlen);
    if (rc == 0 && hung)
        rc = ckh_errf(err, errlen, CKH_EINVAL, "the fault-free run of this job hangs (still running after "
                      "job.timeout, %" PRIu64 " ms)", sc->job.timeout_ns / 1000000u);
    if (rc == 0)
        r->interval = interval_of(sc, r, gap);
    return rc;
}

int ckh__cmd_replace_disk(struct ckh__cmd *c, struct ckh_simfs *disk)
{
    if (c->sc->job.ndisks != 1 || c->nmounts != 1)
        return ckh__cmd_fail(c, CKH_EINVAL, "a job with %zu disks and %zu mounts has no single disk to replace",
                             c->sc->job.ndisks, c->nmounts);
    c->disks_oom = c->disks_oom || ckh_simfs_host_out_of_memory(c->disks[0]);
    ckh_simfs_destroy(c->disks[0]);
    for (int i = 0; i < c->n; i++)
        c->disks[i] = disk;
    c->mounts[0].disk = disk;
    c->env.disks = c->disks;
    return 0;
}

int ckh__cmd_replace_store(struct ckh__cmd *c, const struct ckh_objstore *state)
{
    if (c->store == NULL)
        return ckh__cmd_fail(c, CKH_EINVAL, "a job without job.object_store has no store to replace");
    ckh_s3_server_lock(c->s3);
    int rc = ckh_objstore_restore(c->store, state);
    ckh_s3_server_unlock(c->s3);
    return rc ? ckh__cmd_fail(c, rc, "restoring the object store's state: %s", ckh_strerror(rc)) : 0;
}

int ckh__cmd_replace_disks(struct ckh__cmd *c, struct ckh_simfs *const *disks, size_t n)
{
    if (n != c->nmounts)
        return ckh__cmd_fail(c, CKH_EINVAL, "a job with %zu mounts cannot take %zu disks", c->nmounts, n);
    for (size_t m = 0; m < n; m++) {
        struct ckh__cmd_mount *mt = &c->mounts[m];
        ckh_simfs_destroy(mt->disk);
        mt->disk = disks[m];
        for (int i = 0; i < c->n; i++)
            if (mt->node < 0 || mt->node == i)
                c->disks[mt->disk_index * (size_t)c->n + (size_t)i] = disks[m];
    }
    c->env.disks = c->disks;
    return 0;
}

/* Run 1 of a restart check: node i's records are the first run1_bytes[i]
 * bytes of run1_results[i], and the crash ended every node. */
static int replay_first_run(struct ckh__cmd *c, const char *const *run1_results, const uint64_t *run1_bytes,
                            struct ckh_run_info *ri, struct ckh_scenario_run *out)
{
    int rc;
    c->run = 1;
    plan_run(c, 1, NULL);
    ckh_records_begin_run(c->records, 1);
    for (int i = 0; i < c->n; i++) {
        struct ckh__cmd_node *nd = &c->nodes[i];
        if ((rc = prepare_node(c, i)) != 0)
            return rc;
        if (!nd->start)
            continue;
        /* Run 1's file was the program's: read as one (exec/prog_file.h),
         * and only the bytes the progress reader had taken by the crash. */
        char what[96], why[CKH_ERRMSG_BYTES] = "";
        int in = -1;
        uint64_t size = 0, left = run1_bytes[i];
        snprintf(what, sizeof what, "$CKH_RESULT of %s in run 1", nd->name);
        if ((rc = ckh__prog_file_open(run1_results[i], what, &in, &size, why, sizeof why)) != 0)
            return ckh__cmd_fail(c, rc == -ENOENT ? CKH_EINVAL : rc, "%s", why);
        FILE *to = fopen(nd->result, "we");
        char buf[8192];
        while (to && left > 0) {
            ssize_t got = read(in, buf, left < sizeof buf ? (size_t)left : sizeof buf);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0 || fwrite(buf, 1, (size_t)got, to) != (size_t)got)
                break;
            left -= (uint64_t)got;
        }
        bool ok = to && left == 0;
        close(in);
        if ((to && fclose(to) != 0) || !ok)
            return ckh__cmd_fail(c, CKH_EINTERNAL, "cannot copy the first run's records of %s from %s to %s",
                                 nd->name, run1_results[i], nd->result);
        ckh__cmd_progress_refresh(c, i);
        nd->end = CKH__CMD_KILLED;
        nd->killed_why = "the explored crash";
    }
    if ((rc = ckh__cmd_read_results(c)) != 0)
        return rc;
    return record_run(c, false, ri, NULL, out);
}

int ckh__cmd_restart_check(struct ckh__cmd *c, const struct ckh_scenario_run *ref, const char *const *run1_results,
                           const uint64_t *run1_bytes, struct ckh_scenario_run *rp)
{
    const struct ckh_scenario *sc = c->sc;
    struct ckh_scenario_run r;
    memset(&r, 0, sizeof r);
    r.sc = sc;
    r.seed = c->seed;
    r.source_dir = ref->source_dir;
    r.interval = ref->interval;
    r.ref_ok = true;
    int rc = ckh__run_job_copy(&r.ref, &ref->ref.r);
    if (rc == 0 && ckh__run_alloc_runs(&r, sc, true) != 0)
        rc = CKH_ENOMEM;
    if (rc) {
        ckh__cmd_fail(c, rc, "out of memory");
        goto out;
    }
    c->rec = &r;
    r.world = c->world_first;
    r.world_restart = c->world_restart;
    struct ckh_run_info *ri = ckh__run_next(&r, sc, (size_t)c->n);
    if (!ri) {
        rc = ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = replay_first_run(c, run1_results, run1_bytes, ri, &r)) != 0)
        goto out;
    struct ckh_exec_job job;
    exec_job(c, &job);
    if (sc->verify.argc && (rc = ckh__exec_check_committed(&cmd_ops, c, &job, ri)) != 0)
        goto out;
    rc = ckh__exec_runs(&cmd_ops, c, &job, &r); /* runs 2.. */
    if (disks_out_of_memory(c) != 0)
        rc = CKH_ENOMEM;
    if (rc != 0)
        goto out;
    if (r.got.r.nnodes && (rc = ckh__cmd_add_file_digests(c, &r.got)) != 0)
        goto out;
    *rp = r; /* the caller's from here */
    memset(&r, 0, sizeof r);
out:
    c->rec = NULL;
    ckh_scenario_run_free(&r);
    return rc;
}

int ckh__cmd_order_run(struct ckh__cmd *c, const struct ckh_scenario_run *ref, struct ckh_scenario_run *rp)
{
    struct ckh_scenario_run r;
    memset(&r, 0, sizeof r);
    r.sc = c->sc;
    r.seed = c->seed;
    r.source_dir = ref->source_dir;
    r.interval = ref->interval;
    r.ref_ok = true;
    int rc = ckh__run_job_copy(&r.ref, &ref->ref.r);
    if (rc) {
        ckh__cmd_fail(c, rc, "out of memory");
        goto out;
    }
    if ((rc = ckh__cmd_execute(c, &r)) != 0)
        goto out;
    if (r.got.r.nnodes && (rc = ckh__cmd_add_file_digests(c, &r.got)) != 0)
        goto out;
    *rp = r; /* the caller's from here */
    memset(&r, 0, sizeof r);
out:
    ckh_scenario_run_free(&r);
    return rc;
}

/* ---- command jobs as an executor (exec/exec.h) ---- */

/* A command job's job-wide state: its run folder and the largest gap
 * between the reference run's saves. */
struct cmd_exec {
    struct ckh__cmd_job je; /* the run folder, signals, subreaper */
    int64_t gap;            /* the reference run's largest save gap */
};

static bool cmd_selects(const struct ckh_scenario *sc, const struct ckh_run_options *o)
{
    (void)o;
    return ckh_scn_is_command_job(sc);
}

static int cmd_begin(const struct ckh_scenario *sc, void **job, char *err, size_t errlen)
{
    struct cmd_exec *x = calloc(1, sizeof *x);
    *job = x;
    if (!x)
        return ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
    return ckh__cmd_job_begin(sc, &x->je, err, errlen);
}

static void cmd_end(void *job)
{
    struct cmd_exec *x = job;
    if (!x)
        return;
    ckh__cmd_job_end(&x->je);
    free(x);
}

/* The reference run; one that hangs is itself what the oracles judge. */
static int cmd_reference(void *job, const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                         struct ckh_scenario_run *r, bool *judged, char *err, size_t errlen)
{
    struct cmd_exec *x = job;
    *judged = false;
    /* Said once per `ckh run`: its workers share the reference cache folder. */
    if (sc->job.checkpoint_mount)
        ckh__ns_say(sc->job.checkpoint_mount, o ? o->cache_dir : NULL);
    int rc = reference_run(sc, seed, &x->je, NULL, r, &x->gap, judged, err, errlen);
    if (rc == 0 && *judged) /* the hung reference is what the oracles judge */
        r->interval = interval_of(sc, r, x->gap);
    return rc;
}

static int cmd_faulted(void *job, const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                       bool second, struct ckh_scenario_run *r, struct ckh_report_result *out, char *err,
                       size_t errlen)
{
    (void)o;
    (void)out;
    struct cmd_exec *x = job;
    struct ckh__cmd c;
    memset(&c, 0, sizeof c);
    int rc = faulted_run(sc, seed, &x->je, second ? "det" : "job", r, &c, err, errlen);
    ckh__cmd_free(&c);
    if (rc == 0 && !second)
        r->interval = interval_of(sc, r, x->gap);
    return rc;
}

static int cmd_replay(const struct ckh_scenario *sc, const struct ckh_run_options *o, const char *node_filter,
                      const char *op_filter, void *f, char *msg, size_t msglen);

const struct ckh_executor ckh_executor_command = {
    .name = "command",
    .replay_flags = "",
    .traced = true,
    .selects = cmd_selects,
    .begin = cmd_begin,
    .end = cmd_end,
    .reference = cmd_reference,
    .faulted = cmd_faulted,
    .replay = cmd_replay,
};

/* ---- replay ---- */

static void print_line(FILE *f, const struct ckh__cmd *c, const struct ckh__cmd_trace *t)
{
    const char *name = t->node >= 0 && t->node < c->n ? c->nodes[t->node].name : t->verify ? "verify" : "?";
    if (t->kind == CKH_OP_FAULT) {
        fprintf(f, "n=%d %s FAULT %s %s len=%" PRIu64 " fault=%" PRId64 "\n", t->node, name,
                t->path2 ? t->path2 : "?", t->path ? t->path : "-", t->len, t->result);
        return;
    }
    fprintf(f, "n=%d %s pid=%d %s%s", t->node, name, (int)t->pid, t->answer ? "answered " : "",
            ckh_op_name((enum ckh_op_kind)t->kind));
    if (t->path)
        fprintf(f, " %s", t->path);
    if (t->path2)
        fprintf(f, " -> %s", t->path2);
    fprintf(f, " off=%" PRIu64 " len=%" PRIu64 " -> %" PRId64, t->off, t->len, t->result);
    if (t->result < 0)
        fprintf(f, " (%s)", ckh_err_name((int)t->result));
    if (t->answer)
        fputs(" after its delay", f);
    fputc('\n', f);
}

/* How each node of run ri ended, as "# " lines, with the last line a
 * failed program printed. */
static void print_run_end(FILE *f, const struct ckh__cmd *c, const struct ckh_run_info *ri)
{
    for (size_t i = 0; i < ri->nnodes; i++) {
        const struct ckh_node_end *e = &ri->nodes[i];
        struct ckh__cmd_node said = {0};
        char last[300] = "";
        if (e->state == CKH_NODE_PARKED)
            continue;
        fprintf(f, "# %s: %s", c->nodes[i].name,
                e->state == CKH_NODE_KILLED    ? "killed"
                : e->state == CKH_NODE_RUNNING ? "still running at job.timeout"
                                               : "exited");
        if (e->state == CKH_NODE_EXITED)
            fprintf(f, " with status %d", e->exit_status);
        if (e->state == CKH_NODE_EXITED && e->exit_status != 0) {
            snprintf(said.log, sizeof said.log, "%s/logs/%s.%d.log", c->dir, c->nodes[i].name, ri->run);
            node_said(&said, last, sizeof last);
        }
        fprintf(f, "%s%s\n", last[0] ? "; its last output: " : "", last);
    }
}

static int cmd_replay(const struct ckh_scenario *sc, const struct ckh_run_options *o, const char *node_filter,
                      const char *op_filter, void *fp, char *msg, size_t msglen)
{
    FILE *f = fp;
    uint64_t seed = o && o->seed_set ? o->seed : sc->seed;
    struct ckh_scenario_run r;
    struct ckh__cmd c;
    struct ckh__cmd_job je;
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    r.sc = sc;
    int op = -1, node = -1;
    if (op_filter && (op = ckh_op_from_name(op_filter)) < 0)
        return ckh_errf(msg, msglen, CKH_EINVAL, "unknown operation '%s'", op_filter);
    int rc = ckh__cmd_job_begin(sc, &je, msg, msglen);
    if (rc == 0 && sc->job.checkpoint_mount)
        ckh__ns_say(sc->job.checkpoint_mount, NULL);
    if (rc == 0)
        rc = faulted_run(sc, seed, &je, "job", &r, &c, msg, msglen);
    if (rc == 0 && node_filter) {
        char *end = NULL;
        long idx = strtol(node_filter, &end, 10);
        for (int i = 0; i < c.n && node < 0; i++)
            if (!strcmp(c.nodes[i].name, node_filter) || (end && !*end && idx == i))
                node = i;
        if (node < 0)
            rc = ckh_errf(msg, msglen, CKH_EINVAL, "unknown node '%s'", node_filter);
    }
    /* Run by run: its operations, how its nodes ended, then its verify. */
    size_t k = 0;
    for (size_t run = 1; rc == 0 && run <= r.nruns; run++) {
        const struct ckh_run_info *ri = &r.runs[run - 1];
        fprintf(f, run > 1 ? "# run %zu (restart %zu)\n" : "# run %zu\n", run, run - 1);
        for (bool verify = false;; verify = true) {
            if (verify && ri->committed_detail[0])
                fprintf(f, "# verify after run %zu\n", run);
            for (; k < c.ntrace && (size_t)c.trace[k].run == run && c.trace[k].verify == verify; k++) {
                const struct ckh__cmd_trace *t = &c.trace[k];
                if ((node < 0 || t->node == node) && (op < 0 || t->kind == op || t->kind == CKH_OP_FAULT))
                    print_line(f, &c, t);
            }
            if (verify)
                break;
            print_run_end(f, &c, ri);
            for (size_t l = run > 1 && run - 1 <= c.nstore_run ? c.store_run_end[run - 2] : 0;
                 c.store != NULL && run <= c.nstore_run && l < c.store_run_end[run - 1]; l++)
                fprintf(f, "%s\n", ckh_objstore_trace_line(c.store, l));
        }
        if (ri->committed_detail[0])
            fprintf(f, "# %s\n", ri->committed_detail);
    }
    if (rc == 0) {
        fprintf(f, "# %zu run%s, %s, operation hash %016" PRIx64 ", seed %" PRIu64 "\n", r.nruns,
                r.nruns == 1 ? "" : "s", r.completed ? "completed" : "did not complete", r.trace_hash, seed);
    }
    ckh__cmd_free(&c);
    ckh_scenario_run_free(&r);
    ckh__cmd_job_end(&je);
    return rc;
}
