/* The real platform on simulated disks (run/platform_real_internal.h):
 * the job's disks are simfs disks in the launcher, each served during a
 * run over a ckhfs mount that is the rank processes' "/", so crash, power
 * loss, fsync-fail and the at-rest faults meet the simulator's own crash
 * model and descriptors while the nodes are real processes. Each disk
 * (each node's, for a node-local one) has its own mount; a node sees them
 * at their mount paths (run/platform_real_fs.h).
 *
 * Who does what (the rank's half is real/real_faults.h):
 *   - every rule is matched in the rank processes, as without ckhfs (the
 *     node's phase, epoch and step are known only there);
 *   - crash: the rank logs the firing and kills itself before the op;
 *     after the run, every process gone and the disks unmounted, the
 *     crash model (keep: random | synced | cache, ckh__cmd_crash_disk as
 *     for command jobs) resolves that node's unsynced operations on its
 *     disk: ckhfs gives each node its own simfs view, so pending
 *     operations carry their node as in the simulator;
 *   - power loss: the rank leaves faults/power.<run> and kills itself;
 *     from then on the hook answers every operation by killing its node
 *     (so nothing lands after the power loss), the wait loop kills every
 *     process group, and after the run every disk crashes for everyone;
 *   - fsync-fail and at-rest faults with a trigger: the rank leaves
 *     faults/note.<pid>; the hook reads it at that process's next
 *     operation (the fsync itself; a stat of "/" for an at-rest fault)
 *     and arms simfs's FSYNC_LOST for that fsync, or applies the fault
 *     through its descriptor's `apply` (as the simulator's CALL rule);
 *   - at-rest faults without a trigger: applied before their run, through
 *     the descriptors' `apply`, on the unmounted disks (as arm.c does).
 *
 * Map: disks · mounts and their callbacks · before and after a run ·
 * verify.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/rng.h"
#include "ckh/simfs.h"
#include "model/fault.h"
#include "exec/tmpdir.h"
#include "exec/command_fault.h"
#include "exec/mpi_internal.h"

bool ckh__real_uses_ckhfs(const struct ckh_scenario *sc)
{
    const char *force = getenv("CKH_REAL_FS");
    if (force && !strcmp(force, "ckhfs"))
        return true;
    for (size_t i = 0; i < sc->nfaults; i++)
        if (ckh_fault_of(sc->faults[i].act.kind)->needs & CKH_FAULT_NEEDS_DISK_MODEL)
            return true;
    return false;
}

/* ---- disks ---- */

/* One disk of the job and its mount point (ckh__exec_build_disks). */
static int make_disk(void *ctx, const struct ckh_simfs_config *dc, size_t d, int node, struct ckh_simfs **out)
{
    struct real_job *j = ctx;
    struct ckh__run_ctx *c = &j->c;
    /* The bytes the ranks write live on the real disk, in the run folder
     * (unnamed, gone with the disk): a checkpoint of any size. */
    struct ckh_simfs_config sdc = *dc;
    sdc.store_dir = j->dir;
    int rc = ckh_simfs_create(&sdc, out);
    if (rc)
        return ckh__run_fail(c, rc, "disk %s: %s", dc->name, ckh_strerror(rc));
    struct real_mount *m = &j->mounts[j->nmounts++];
    *m = (struct real_mount){.j = j, .prefix = c->sc->job.disks[d].mount, .disk = *out, .node = node};
    if (ckh__real_disk_dir(m->dir, sizeof m->dir, j->dir, "mnt", c->sc, d, c->names[node < 0 ? 0 : node]) != 0 ||
        (rc = ckh_tmp_mkdirs(m->dir)) != 0)
        return ckh__run_fail(c, CKH_EINTERNAL, "cannot create the mount point %s", m->dir);
    return 0;
}

int ckh__real_disks_init(struct real_job *j)
{
    struct ckh__run_ctx *c = &j->c;
    const size_t nd = c->sc->job.ndisks, n = (size_t)c->n;
    char msg[512];
    int rc;
    if ((rc = ckh_ckhfs_available(msg, sizeof msg)) != 0)
        return ckh__run_fail(c, CKH_EINTERNAL, "the real platform serves this scenario's disk through "
                             "ckhfs (it has crash, power-loss, fsync-fail or at-rest faults): %s", msg);
    pthread_mutex_init(&j->lock, NULL);
    j->lock_ready = true;
    /* Disk d of node i is c->disks[d * n + i], as the simulated runner
     * lays them out (and the fault env reads them). */
    c->disks = calloc(nd * n, sizeof *c->disks);
    j->mounts = calloc(nd * n, sizeof *j->mounts);
    if (!c->disks || !j->mounts)
        return ckh__run_fail(c, CKH_ENOMEM, "out of memory");
    const char *names[CKH_RUNNER_MAX_NODES];
    for (int i = 0; i < c->n; i++)
        names[i] = c->names[i];
    if ((rc = ckh__exec_build_disks(c->sc, c->n, names, j->seed, make_disk, j, c->disks)) != 0)
        return rc;
    c->env = (struct ckh_fault_env){.sc = c->sc, .nnodes = c->n, .disks = c->disks,
                                    .latest_link = c->wl->latest_link, .inst = c->inst,
                                    .err = c->err, .errlen = sizeof c->err};
    if ((rc = ckh_fault_for_each_disk(&c->env, -1, c->sc->job.checkpoint_dir, ckh__run_make_dir_fn, NULL)) != 0)
        return rc;
    return 0;
}

static void unmount_all(struct real_job *j)
{
    for (size_t i = 0; i < j->nmounts; i++) {
        ckh_ckhfs_unmount(j->mounts[i].fs);
        j->mounts[i].fs = NULL;
    }
}

void ckh__real_disks_free(struct real_job *j)
{
    unmount_all(j);
    for (size_t i = 0; i < j->nmounts; i++)
        ckh_simfs_destroy(j->mounts[i].disk);
    free(j->mounts);
    j->mounts = NULL;
    j->nmounts = 0;
    free(j->pids);
    j->pids = NULL;
    if (j->lock_ready)
        pthread_mutex_destroy(&j->lock);
    j->lock_ready = false;
}

/* ---- mounts and their callbacks ---- */

static int node_of_pid(void *ctx, pid_t pid)
{
    struct real_job *j = ((struct real_mount *)ctx)->j;
    int node = -1;
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; i < j->npids && node < 0; i++)
        if (j->pids[i].pid == pid)
            node = j->pids[i].node;
    if (node < 0) {
        /* A rank writes pids/<pid> before it asks the mount anything; a
         * process without one is none of the job's. */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/pids/%ld", j->dir, (long)pid);
        FILE *f = fopen(path, "r");
        if (f && fscanf(f, "%d", &node) != 1)
            node = -1;
        if (f)
            fclose(f);
        if (node >= j->c.n)
            node = -1;
        if (node >= 0 && j->npids == j->cappids) {
            size_t cap = j->cappids ? 2 * j->cappids : 16;
            struct real_pid *v = realloc(j->pids, cap * sizeof *v);
            if (v) {
                j->pids = v;
                j->cappids = cap;
            }
        }
        if (node >= 0 && j->npids < j->cappids)
            j->pids[j->npids++] = (struct real_pid){.pid = pid, .node = node};
    }
    pthread_mutex_unlock(&j->lock);
    return node;
}

static void kill_node(void *ctx, int node)
{
    struct real_job *j = ((struct real_mount *)ctx)->j;
    pthread_mutex_lock(&j->lock);
    pid_t g = node >= 0 && node < j->c.n ? j->groups[node] : 0;
    pthread_mutex_unlock(&j->lock);
    if (g > 0)
        kill(-g, SIGKILL); /* a ranked node's group is its mpirun: the whole job, as mpirun would */
}

bool ckh__real_power_lost(struct real_job *j)
{
    if (!j->power_armed)
        return false;
    pthread_mutex_lock(&j->lock);
    if (!j->power) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/faults/power.%d", j->dir, j->run);
        j->power = access(path, F_OK) == 0;
    }
    bool lost = j->power;
    pthread_mutex_unlock(&j->lock);
    return lost;
}

/* The note of op's process, when it left one (real/real_faults.h), read
 * into text; false when none. */
static bool read_note(struct real_job *j, pid_t pid, char *path, size_t pathn, char *text, size_t n)
{
    snprintf(path, pathn, "%s/faults/note.%ld", j->dir, (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t got = read(fd, text, n - 1);
    close(fd);
    text[got > 0 ? got : 0] = '\0';
    return got > 0;
}

/* Carries out the note op's process left, at this op (server thread,
 * the mount's lock held: the disk is ours for the call). */
static void take_note(struct real_mount *m, const struct ckh_ckhfs_op *op)
{
    struct real_job *j = m->j;
    char path[PATH_MAX], text[CKH_PATH_MAX + 64];
    if (!read_note(j, op->pid, path, sizeof path, text, sizeof text))
        return;
    size_t fault;
    if (!strncmp(text, "fsync_lost ", 11)) {
        /* The note names the node's path; the mount sees the path on its
         * disk (the mount path taken off). */
        const char *p = text + 11;
        size_t pl = strlen(m->prefix);
        if (pl > 1 && !strncmp(p, m->prefix, pl) && (p[pl] == '/' || p[pl] == '\0'))
            p = p[pl] ? p + pl : "/";
        if ((op->kind != CKH_OP_FSYNC && op->kind != CKH_OP_FDATASYNC) || strcmp(p, op->path) != 0)
            return; /* another thread's op (or disk): the note waits for its fsync */
        unlink(path);
        /* simfs's own semantics for this very fsync: the file's unsynced
         * data dropped, EIO returned, a retry succeeds. */
        struct ckh_fault_action lost = {.kind = CKH_FAULT_FSYNC_LOST};
        ckh_simfs_fault_next(m->disk, (int)op->kind, op->path, &lost);
    } else if (sscanf(text, "call %zu", &fault) == 1 && fault < j->c.sc->nfaults) {
        if (unlink(path) != 0)
            return; /* another mount's thread took it first */
        const struct ckh_scn_fault *f = &j->c.sc->faults[fault];
        bool on_node = f->on.node >= 0 || f->on.node_name;
        pthread_mutex_lock(&j->lock);
        int rc = ckh__run_apply_at_rest(&j->c, fault, on_node ? op->node : -1);
        pthread_mutex_unlock(&j->lock);
        if (rc)
            fprintf(stderr, "ckh: %s: fault %zu at rest: %s\n", j->c.sc->file, fault + 1, j->c.err);
    }
}

static void hook(void *ctx, const struct ckh_ckhfs_op *op, struct ckh_ckhfs_action *act)
{
    struct real_mount *m = ctx;
    act->verdict = CKH_CKHFS_GO;
    if (ckh__real_power_lost(m->j)) {
        /* Nothing lands after a power loss: the caller's node dies first. */
        act->verdict = op->node >= 0 ? CKH_CKHFS_KILL : CKH_CKHFS_ERRNO;
        act->err = EIO;
        return;
    }
    if (m->j->notes && op->node >= 0)
        take_note(m, op);
}

/* ---- before and after a run ---- */

int ckh__real_disks_before_run(struct real_job *j)
{
    struct ckh__run_ctx *c = &j->c;
    const bool faults = !(c->mode & CKH_RUN_NO_FAULTS);
    int rc;
    j->npids = 0;
    j->power = j->power_armed = j->notes = false;
    c->at_rest_applied = false;
    for (size_t i = 0; faults && i < c->sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &c->sc->faults[i];
        if (f->on.run != CKH_SCN_RUN_ANY && (int)f->on.run != j->run)
            continue;
        /* What the ranks carry out with the launcher (real/real_faults.h)
         * follows from the rule each fault arms. */
        struct ckh_fault_rule r;
        ckh_fault_rule_of(f, -1, &r);
        j->power_armed |= r.action.kind == CKH_FAULT_POWER_LOSS;
        j->notes |= r.action.kind == CKH_FAULT_FSYNC_LOST || r.action.kind == CKH_FAULT_CALL;
        if (!ckh_fault_applied_between_runs(f))
            continue;
        int node;
        if ((rc = ckh__run_fault_node(c, f, &node)) != 0)
            return rc;
        if ((rc = ckh__run_apply_at_rest(c, i, node)) != 0)
            return c->err[0] ? rc : ckh__run_fail(c, rc, "%s", ckh_strerror(rc));
    }
    for (size_t i = 0; i < j->nmounts; i++) {
        struct real_mount *m = &j->mounts[i];
        char msg[512];
        struct ckh_ckhfs_config cfg = {.mountpoint = m->dir, .disk = m->disk, .node_of_pid = node_of_pid,
                                       .hook = hook, .kill_node = kill_node, .ctx = m};
        if ((rc = ckh_ckhfs_mount(&cfg, &m->fs, msg, sizeof msg)) != 0)
            return ckh__run_fail(c, CKH_EINTERNAL, "%s", msg);
    }
    return 0;
}

/* The crashes of the run, from the firing logs: crashed[i] for node i's
 * machine, *power for a power loss, *keep as the rule said. */
static int crashes_of_run(struct real_job *j, bool *crashed, bool *power, int *keep)
{
    struct ckh_fault_rule *rules = NULL;
    size_t *fault_of = NULL, nrules = 0;
    int rc = ckh_fault_rules_of_run(j->c.sc, j->run, j->c.n, ckh_node_name_at, j->c.names, &rules,
                             &fault_of, &nrules, j->c.err, sizeof j->c.err);
    for (int i = 0; i < j->c.n && rc == 0; i++) {
        char path[PATH_MAX], line[CKH_PATH_MAX + 128];
        if (ckh__real_path(path, sizeof path, j->dir, "faults", j->c.names[i], j->run) != 0)
            continue;
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f)) {
            size_t rule, fault;
            char op[32], action[32];
            if (sscanf(line, "fired %zu %zu %31s %31s", &rule, &fault, op, action) != 4 || rule >= nrules)
                continue;
            bool all = !strcmp(action, "power_loss");
            if (!all && strcmp(action, "crash_before") != 0)
                continue;
            crashed[i] = true;
            *power |= all;
            *keep = rules[rule].action.crash_keep;
        }
        if (f)
            fclose(f);
    }
    free(rules);
    free(fault_of);
    return rc;
}

int ckh__real_disks_after_run(struct real_job *j)
{
    struct ckh__run_ctx *c = &j->c;
    unmount_all(j);
    if (c->mode & CKH_RUN_NO_FAULTS)
        return 0;
    bool *crashed = calloc((size_t)c->n, sizeof *crashed), power = false;
    int keep = CKH_CRASH_KEEP_RANDOM, rc;
    if (!crashed)
        return ckh__run_fail(c, CKH_ENOMEM, "out of memory");
    rc = crashes_of_run(j, crashed, &power, &keep);
    power |= j->power;
    /* A power loss crashes every disk for everyone (the simulator's
     * ckh_simfs_crash(disk, -1)); a machine crash, its node's unsynced
     * operations on its disk. */
    for (size_t i = 0; i < j->nmounts && rc == 0; i++) {
        struct real_mount *m = &j->mounts[i];
        if (power) {
            rc = ckh__cmd_crash_disk(m->disk, -1, keep);
            continue;
        }
        for (int k = 0; k < c->n && rc == 0; k++)
            if (crashed[k] && (m->node < 0 || m->node == k))
                rc = ckh__cmd_crash_disk(m->disk, k, keep);
    }
    free(crashed);
    if (rc)
        return ckh__run_fail(c, rc, "the crash of the job's disks: %s", ckh_strerror(rc));
    return 0;
}
