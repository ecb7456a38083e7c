/* The check workers of `ckh explore` of a real program
 * (search/explore_workers.h says what).
 *
 * Memory shared by the forked workers (one mmap): the counter of the next
 * index into the check order, the program starts counted over every
 * worker, the first reason for a cold start, then one slot per state.
 * Each slot is written by the one worker that took its state; the parent
 * reads them after every worker has been reaped.
 *
 * Then what both explorers share (search/explore_workers.h, "what both
 * explorers share"): one state's check on a fresh execution of the job in
 * the worker's check folder (its verify on the worker's kept mounts, one
 * per disk), the check order, the report, --keep, the recorded run.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/command.h"
#include "ckh/assert.h"
#include "ckhfs/ckhfs.h"
#include "exec/command_proc.h"
#include "exec/tmpdir.h"
#include "exec/worker.h"
#include "judge/judge.h"
#include "search/explore_internal.h"
#include "search/explore_multi.h"
#include "search/explore_workers.h"

/* What the workers share besides the slots (forked workers: shared memory). */
struct xw_shared {
    uint64_t next;            /* the next index into the check order */
    uint64_t warm, cold;      /* program starts, over every worker */
    int noted;                /* note is written */
    char note[320];           /* the first worker's reason for a cold start */
};

/* The worker's warm launchers (NULL: cold starts; a set that cannot be
 * made is a cold start with its reason noted, or an error in *rc when
 * warm starts are required). */
static struct ckh__warm_set *worker_launchers(const struct ckh__xw_pool *p, unsigned worker, int *rc, char *note,
                                              size_t n)
{
    struct ckh__warm_set *set = NULL;
    char dir[CKH__CMD_PATH_MAX + 64];
    *rc = 0;
    if (p->start == CKH_XPROG_START_COLD)
        return NULL;
    snprintf(dir, sizeof dir, "%s/w%u/warm", p->dir, worker);
    int e = ckh__warm_set_create(dir, p->start == CKH_XPROG_START_WARM, &set, note, n);
    if (e && p->start == CKH_XPROG_START_WARM)
        *rc = e;
    return set;
}

/* A worker: takes states in check order from the shared counter until
 * none is left, the deadline passed (the first state in check order is
 * checked whatever the time), ckh was interrupted or a check failed to
 * run; then adds its program starts to the shared counts. */
static void work(const struct ckh__xw_pool *p, unsigned worker, struct xw_shared *sh, struct ckh__xw_slot *slots)
{
    char note[320] = "";
    int rc = 0;
    struct ckh__xw_worker wk = {.index = worker};
    wk.warm = worker_launchers(p, worker, &rc, note, sizeof note);
    for (;;) {
        size_t i = (size_t)__atomic_fetch_add(&sh->next, 1, __ATOMIC_SEQ_CST);
        if (i >= p->n || ckh__cmd_interrupted())
            break;
        if (i > 0 && p->deadline_ms && ckh_posix_now_ms() >= p->deadline_ms)
            break;
        size_t s = p->order[i];
        if (rc) { /* no launchers where they were required */
            slots[s] = (struct ckh__xw_slot){.done = 1, .rc = rc};
            snprintf(slots[s].text, sizeof slots[s].text, "--start warm: %s", note);
            break;
        }
        p->check(p->ctx, &wk, s, &slots[s]);
        if (slots[s].rc)
            break;
    }
    uint64_t nw = 0, nc = 0;
    if (wk.warm)
        ckh__warm_set_counts(wk.warm, &nw, &nc, note, sizeof note);
    __atomic_fetch_add(&sh->warm, nw, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&sh->cold, nc, __ATOMIC_SEQ_CST);
    int none = 0;
    if (note[0] && __atomic_compare_exchange_n(&sh->noted, &none, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        snprintf(sh->note, sizeof sh->note, "%s", note);
    ckh__warm_set_destroy(wk.warm);
    if (p->end)
        p->end(p->ctx, &wk);
}

/* A check worker after fork: it dies with ckh (a SIGKILLed ckh leaves no
 * worker; the programs of its check die with it, command_proc.c), and it
 * is the child subreaper of its checks' programs (as ckh is of the
 * recorded run's), so that it reaps what they leave: orphans reparented
 * to ckh instead would stay as zombies of its groups until ckh waited. */
static _Noreturn void worker_main(const struct ckh__xw_pool *p, unsigned j, pid_t parent, struct xw_shared *sh,
                                  struct ckh__xw_slot *slots)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        ckh__worker_exit(0);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    work(p, j, sh, slots);
    ckh__worker_exit(0);
}

/* Waits for the check workers. On an interrupt of ckh (a terminal's ^C
 * reaches them too, a kill of ckh alone does not) each gets SIGTERM: its
 * check stops at once (the programs' process groups killed and reaped,
 * the mounts unmounted, exec/command_proc.c) and it takes no other state;
 * one still running WORKER_GRACE_MS later gets SIGKILL (its programs die
 * with it, its dead mounts go with the job's folder). */
#define WORKER_GRACE_MS 5000u
static void wait_workers(pid_t *pids, unsigned jobs)
{
    bool told = false;
    uint64_t kill_at = 0;
    for (;;) {
        unsigned left = 0;
        for (unsigned j = 0; j < jobs; j++) {
            if (pids[j] <= 0)
                continue;
            pid_t r = waitpid(pids[j], NULL, WNOHANG);
            if (r == pids[j] || (r < 0 && errno == ECHILD))
                pids[j] = 0;
            else
                left++;
        }
        if (!left)
            return;
        if (!told && ckh__cmd_interrupted()) {
            told = true;
            kill_at = ckh_posix_now_ms() + WORKER_GRACE_MS;
            for (unsigned j = 0; j < jobs; j++)
                if (pids[j] > 0)
                    kill(pids[j], SIGTERM);
        }
        if (told && ckh_posix_now_ms() >= kill_at) {
            for (unsigned j = 0; j < jobs; j++)
                if (pids[j] > 0) {
                    kill(pids[j], SIGKILL);
                    while (waitpid(pids[j], NULL, 0) < 0 && errno == EINTR)
                        ;
                    pids[j] = 0;
                }
            return;
        }
        struct timespec ts = {.tv_nsec = 5000000};
        nanosleep(&ts, NULL);
    }
}

int ckh__xw_check_all(const struct ckh__xw_pool *p, struct ckh__xw_slot **out, struct ckh_xprog_result *res)
{
    size_t n = p->n, bytes = sizeof(struct xw_shared) + (n ? n : 1) * sizeof(struct ckh__xw_slot);
    void *shm = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED)
        return CKH_ENOMEM;
    struct xw_shared *sh = shm;
    struct ckh__xw_slot *slots = (struct ckh__xw_slot *)(sh + 1);
    unsigned jobs = p->jobs;
    if (jobs <= 1 || n <= 1) {
        work(p, 0, sh, slots);
    } else {
        pid_t *pids = calloc(jobs, sizeof *pids);
        if (!pids) {
            munmap(shm, bytes);
            return CKH_ENOMEM;
        }
        fflush(NULL);
        const pid_t parent = getpid();
        for (unsigned j = 0; j < jobs; j++) {
            pid_t pid = fork();
            if (pid == 0)
                worker_main(p, j, parent, sh, slots);
            pids[j] = pid > 0 ? pid : 0;
        }
        wait_workers(pids, jobs);
        free(pids);
    }
    struct ckh__xw_slot *copy = malloc((n ? n : 1) * sizeof *copy);
    if (copy)
        memcpy(copy, slots, n * sizeof *copy);
    res->warm_starts = sh->warm;
    res->cold_starts = sh->cold;
    snprintf(res->start_note, sizeof res->start_note, "%s", sh->note);
    munmap(shm, bytes);
    *out = copy;
    return copy ? 0 : CKH_ENOMEM;
}

/* ---- what both explorers share ---- */

/* The verify mounts a worker keeps from check to check (wk->keep): one
 * slot per disk of the job. */
struct xw_kept {
    size_t n;
    struct ckh_ckhfs *fs[];
};

/* Empties a worker's check folder dir for its next state: everything
 * goes but the kept verify mounts' folders (dir/mnt/verify.*, when keep;
 * else dir goes whole). */
static void clear_check_dir(const char *dir, bool keep)
{
    if (!keep) {
        ckh_tmp_remove(dir);
        return;
    }
    char mnt[CKH__CMD_PATH_MAX + 80], path[CKH__CMD_PATH_MAX + 400];
    snprintf(mnt, sizeof mnt, "%s/mnt", dir);
    for (int pass = 0; pass < 2; pass++) {
        const char *at = pass ? mnt : dir;
        DIR *dh = opendir(at);
        struct dirent *de;
        while (dh && (de = readdir(dh)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || (!pass && !strcmp(de->d_name, "mnt")) ||
                (pass && !strncmp(de->d_name, "verify.", 7))) /* never into a kept mount */
                continue;
            snprintf(path, sizeof path, "%s/%s", at, de->d_name);
            ckh_tmp_remove(path);
        }
        if (dh)
            closedir(dh);
    }
}

/* A state's folders in a message read the same for every state: one
 * disk's mount is $CKH_CKPT_DIR (checkpoint_dir "/") or <disk NAME>; with
 * several views, a mount is "<disk NAME..." and the check folder <state>. */
static void neutral_text(const struct ckh__xw_checker *k, const struct ckh__cmd *c, char *text, size_t n)
{
    char mnt[CKH__CMD_PATH_MAX + 80], as[80];
    if (k->views) {
        snprintf(mnt, sizeof mnt, "%s/mnt/verify.", c->dir);
        ckh__xprog_replace_all(text, n, mnt, "<disk ");
        snprintf(mnt, sizeof mnt, "%s/mnt/", c->dir);
        ckh__xprog_replace_all(text, n, mnt, "<disk ");
        ckh__xprog_replace_all(text, n, c->dir, "<state>");
        return;
    }
    const char *disk = k->sc->job.disks[0].name;
    if (!strcmp(k->sc->job.checkpoint_dir, "/"))
        snprintf(as, sizeof as, "$CKH_CKPT_DIR");
    else
        snprintf(as, sizeof as, "<disk %.60s>", disk);
    snprintf(mnt, sizeof mnt, "%s/mnt/verify.%s", c->dir, disk);
    ckh__xprog_replace_all(text, n, mnt, as);
    snprintf(mnt, sizeof mnt, "%s/mnt/%s", c->dir, disk);
    ckh__xprog_replace_all(text, n, mnt, as);
}

/* Verify: node 0's view, or (k->views) each node of run 1's in turn up to
 * the first that fails. */
static int check_verify(const struct ckh__xw_checker *k, struct ckh__cmd *c, struct ckh__xw_slot *s)
{
    if (!k->views) {
        bool ok = false;
        int rc = ckh__cmd_verify_view(c, 0, &ok, s->text, sizeof s->text);
        s->failed = rc == 0 && !ok;
        return rc;
    }
    int first = k->nodes < c->n ? k->nodes : c->n;
    for (int i = 0; i < first; i++) {
        bool ok = false;
        char detail[700];
        int rc = ckh__cmd_verify_view(c, i, &ok, detail, sizeof detail);
        if (rc)
            return rc;
        if (!ok) {
            snprintf(s->text, sizeof s->text, "%s's view: %s", c->nodes[i].name, detail);
            s->failed = 1;
            return 0;
        }
    }
    return 0;
}

int ckh__xw_restart_judge(struct ckh__cmd *c, const struct ckh_scenario_run *ref, const char *const *results,
                          const uint64_t *result_bytes, struct ckh__xw_slot *s)
{
    struct ckh_report_result r;
    struct ckh_scenario_run run;
    ckh_report_result_init(&r);
    memset(&run, 0, sizeof run);
    int rc = ckh__cmd_restart_check(c, ref, results, result_bytes, &run);
    if (rc == 0)
        rc = ckh__run_verdict(&run, &r);
    ckh_scenario_run_free(&run);
    s->failed = rc == 0 && r.verdict != CKH_VERDICT_PASS;
    if (s->failed)
        snprintf(s->text, sizeof s->text, "%s: %s", r.failed_oracle ? r.failed_oracle : "verdict",
                 r.message ? r.message : "failed");
    ckh_report_result_clear(&r);
    return rc;
}

/* Restart: the job restarted on the state, judged by the oracles (an
 * error judging it, such as out of memory, is the state's error). */
static int check_restart(const struct ckh__xw_checker *k, struct ckh__cmd *c, const uint64_t *result_bytes,
                         struct ckh__xw_slot *s)
{
    return ckh__xw_restart_judge(c, k->ref, k->results, result_bytes, s);
}

/* The state's disks (clones of disks[nd]) become c's. */
static int take_disks(struct ckh__cmd *c, struct ckh_simfs *const *disks, size_t nd)
{
    struct ckh_simfs **d = calloc(nd ? nd : 1, sizeof *d);
    int rc = d ? 0 : ckh__cmd_fail(c, CKH_ENOMEM, "out of memory");
    for (size_t e = 0; rc == 0 && e < nd; e++)
        if ((rc = ckh_simfs_clone(disks[e], &d[e])) != 0)
            ckh__cmd_fail(c, rc, "out of memory");
    if (rc == 0)
        rc = nd == 1 && c->sc->job.ndisks == 1 ? ckh__cmd_replace_disk(c, d[0]) : ckh__cmd_replace_disks(c, d, nd);
    if (rc) /* (a refused replacement took nothing) */
        for (size_t e = 0; d && e < nd; e++)
            ckh_simfs_destroy(d[e]);
    free(d); /* its disks are c's now */
    return rc;
}

void ckh__xw_check_state(const struct ckh__xw_checker *k, struct ckh__xw_worker *wk, struct ckh_simfs *const *disks,
                         size_t nd, const uint64_t *result_bytes, struct ckh__xw_slot *s)
{
    char dir[CKH__CMD_PATH_MAX + 64];
    struct ckh__cmd c;
    memset(&c, 0, sizeof c);
    snprintf(dir, sizeof dir, "%s/w%u/check", k->je->dir, wk->index);
    int rc = ckh__cmd_init(&c, k->sc, k->seed, 0, dir, k->je->cwd);
    c.warm = wk->warm;
    size_t ndisks = k->sc->job.ndisks;
    if (rc == 0 && !k->remount && k->check == CKH_XPROG_VERIFY && !wk->keep) {
        struct xw_kept *kept = calloc(1, sizeof *kept + (ndisks ? ndisks : 1) * sizeof kept->fs[0]);
        if (!kept)
            rc = ckh__cmd_fail(&c, CKH_ENOMEM, "out of memory");
        else
            kept->n = ndisks;
        wk->keep = kept;
    }
    struct xw_kept *kept = k->remount ? NULL : wk->keep;
    c.verify_keep = kept ? kept->fs : NULL;
    if (rc == 0)
        rc = take_disks(&c, disks, nd);
    if (rc == 0 && k->check == CKH_XPROG_VERIFY)
        rc = check_verify(k, &c, s);
    else if (rc == 0)
        rc = check_restart(k, &c, result_bytes, s);
    if (rc) {
        s->rc = rc;
        ckh__cmd_take_err(&c, rc, NULL, s->text, sizeof s->text);
    } else {
        neutral_text(k, &c, s->text, sizeof s->text);
    }
    s->done = 1;
    ckh__cmd_free(&c);
    /* Its folder is emptied now (unmounted above; the kept verify mounts
     * stay, with no disk): the job's folder stays small, so its removal
     * at the end, an interrupted run's included, is quick. */
    bool any = false;
    for (size_t e = 0; kept && e < kept->n; e++)
        any = any || kept->fs[e];
    clear_check_dir(dir, any);
}

void ckh__xw_check_end(struct ckh__xw_worker *wk)
{
    struct xw_kept *kept = wk->keep;
    for (size_t e = 0; kept && e < kept->n; e++)
        ckh_ckhfs_unmount(kept->fs[e]);
    free(kept);
    wk->keep = NULL;
}

int ckh__xw_check_order(const void *v, size_t n, size_t size, size_t **order)
{
    int *prio = malloc((n ? n : 1) * sizeof *prio);
    if (!prio)
        return CKH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        prio[i] = ckh__xw_state_at(v, size, i)->prio;
    int rc = ckh__xorder_sort(prio, n, order);
    free(prio);
    return rc;
}

int ckh__xw_report(const void *v, size_t n, size_t size, const struct ckh__xw_slot *slots, uint64_t limit_ms,
                   void (*more)(const void *ctx, size_t i, char *text, size_t size), const void *ctx,
                   struct ckh_xprog_result *out, char *err, size_t errlen)
{
    size_t nfail = 0;
    for (size_t i = 0; i < n; i++) {
        if (slots[i].rc) /* a check that could not run: the first one's reason */
            return ckh_errf(err, errlen, slots[i].rc, "state %" PRIu64 ": %s", ckh__xw_state_at(v, size, i)->k,
                            slots[i].text);
        CKH_ASSERT(slots[i].done || !slots[i].failed); /* a state fails only once checked */
        out->checked += slots[i].done != 0;
        nfail += slots[i].failed != 0;
    }
    if (out->checked < n && !out->bounded) {
        out->bounded = true;
        snprintf(out->bound, sizeof out->bound, "time limit %" PRIu64 " s reached (%" PRIu64 " of %zu distinct "
                 "states checked)", limit_ms / 1000u, out->checked, n);
    }
    if (nfail && !(out->fails = calloc(nfail, sizeof *out->fails)))
        return ckh_errf(err, errlen, CKH_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!slots[i].failed)
            continue;
        const struct ckh__xw_state *st = ckh__xw_state_at(v, size, i);
        struct ckh_xprog_failure *f = &out->fails[out->nfails++];
        f->k = st->k;
        snprintf(f->state, sizeof f->state, "%s", st->desc);
        if (more)
            more(ctx, i, f->state, sizeof f->state);
        snprintf(f->symptom, sizeof f->symptom, "%s", slots[i].text);
    }
    /* the smallest K first, no more than were checked */
    CKH_ASSERT(out->nfails == nfail && nfail <= out->checked && out->checked <= out->distinct);
    return 0;
}

int ckh__xw_keep_dir(const char *dir, const char *what, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return ckh_errf(err, errlen, CKH_EINVAL, "--keep %s: exists and is not a folder", dir);
        if (rmdir(dir) != 0) /* only an empty folder goes; its content is never touched */
            return ckh_errf(err, errlen, CKH_EINVAL, "--keep %s: the folder is not empty (ckh writes a "
                            "state's %s only into an absent or empty folder)", dir, what);
    }
    if (mkdir(dir, 0777) != 0)
        return ckh_errf(err, errlen, CKH_EINVAL, "--keep %s: cannot create it: %s", dir, strerror(errno));
    return 0;
}

int ckh__xw_keep(struct ckh_simfs *const *disks, const char *const *names, size_t nd, const char *dir, char *err,
                 size_t errlen)
{
    if (!names) {
        CKH_ASSERT(nd == 1);
        return ckh__xprog_keep_disk(disks[0], dir, err, errlen);
    }
    int krc = ckh__xw_keep_dir(dir, "files", err, errlen);
    if (krc != 0)
        return krc;
    for (size_t e = 0; e < nd; e++) {
        char sub[CKH__CMD_PATH_MAX + 200];
        snprintf(sub, sizeof sub, "%s/%s", dir, names[e]);
        int rc = ckh__xprog_keep_disk(disks[e], sub, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

int ckh__xw_record(const struct ckh_scenario *sc, uint64_t seed, uint64_t t0, struct ckh__cmd_job *je,
                   const struct ckh__cmd_watch *watch, struct ckh_scenario_run *ref, struct ckh_xprog_result *out,
                   char *err, size_t errlen)
{
    int rc;
    if ((rc = ckh__cmd_job_begin(sc, je, err, errlen)) != 0)
        return rc;
    if ((rc = ckh__cmd_reference(sc, seed, je, watch, ref, err, errlen)) != 0)
        return rc;
    out->record_ms = ckh_posix_now_ms() - t0;
    return 0;
}

int ckh__xw_check_report(const void *v, size_t size, struct ckh__xw_pool *pool, uint64_t limit_ms,
                         void (*more)(const void *ctx, size_t i, char *text, size_t size), const void *ctx2,
                         struct ckh_xprog_result *out, char *err, size_t errlen)
{
    size_t *order = NULL;
    struct ckh__xw_slot *slots = NULL;
    int rc = ckh__xw_check_order(v, pool->n, size, &order);
    if (rc) {
        ckh_errf(err, errlen, rc, "ordering crash states: %s", ckh_strerror(rc));
        goto out;
    }
    pool->order = order;
    uint64_t t1 = ckh_posix_now_ms();
    if ((rc = ckh__xw_check_all(pool, &slots, out)) != 0) {
        ckh_errf(err, errlen, rc, "checking crash states: %s", ckh_strerror(rc));
        goto out;
    }
    out->check_ms = ckh_posix_now_ms() - t1;
    if (ckh__cmd_interrupted()) {
        rc = ckh_errf(err, errlen, -EINTR, "interrupted by signal %d", ckh__cmd_interrupted());
        goto out;
    }
    rc = ckh__xw_report(v, pool->n, size, slots, limit_ms, more, ctx2, out, err, errlen);
out:
    pool->order = NULL;
    free(slots);
    free(order);
    return rc;
}
