/* The check workers of `ckh explore` of a real program
 * (search/explore_workers.h says what).
 *
 * Memory shared by the forked workers (one mmap): the counter of the next
 * index into the check order, the program starts counted over every
 * worker, the first reason for a cold start, then one slot per state.
 * Each slot is written by the one worker that took its state; the parent
 * reads them after every worker has been reaped.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "exec/command.h"
#include "exec/command_proc.h"
#include "exec/worker.h"
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
