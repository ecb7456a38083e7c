/* Tests of the worker pool (harness/exec/pool.c, pool_resident.c), ckh's
 * temporary folders (harness/exec/tmpdir.c) and the checked option values
 * (harness/cli/opt.c): replies and every job status, the concurrency
 * bound, children that die with their parent, an interrupting signal that
 * leaves no child (each in both modes: a child per job, resident
 * workers); resident workers run many jobs each, a job that dies in a
 * used worker is run again in a fresh one, the others go on; the sweep
 * that removes only stale folders, and the numbers an option refuses. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
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
#include "cli/opt.h"
#include "exec/pool.h"
#include "exec/tmpdir.h"
#include "support/skip.h"

/* ---- jobs ---- */

enum { J_ECHO, J_EXIT7, J_SIGNAL, J_SLEEP, J_EAT, J_BIG, J_MIXED };

/* The pool's two modes, by a loop test's _i: a child per job, and
 * resident workers of 4 jobs each. */
static const uint64_t modes[] = {0, 4};
static uint64_t per_worker; /* the mode of the running test */

/* J_MIXED: what job i does (the others answer "job I pid P"). */
enum { MX_ECHO, MX_CRASH, MX_POISON, MX_SLEEP, MX_EXIT7, MX_FAT };

struct rec {
    int kind;                           /* what every job does */
    struct ckh_pool_result r[16];       /* results by index */
    char data[16][64];                  /* their bytes */
    int calls;                          /* done calls */
    int interrupt_at;                   /* raise SIGINT before this job (-1: never) */
    size_t big_len;                     /* J_BIG: bytes received */
    _Atomic int *running, *running_max; /* shared with the children */
    int mixed[16];                      /* J_MIXED: what each job does */
    _Atomic int *attempts;              /* J_MIXED: runs of each job (shared, 16) */
};

static int ready_fd = -1;       /* J_SLEEP jobs write a byte here once started */
static void *volatile eaten;    /* J_EAT's blocks, chained */
static bool poisoned;           /* MX_POISON ran in this process: later jobs here crash */

static _Noreturn void crash(void)
{
    signal(SIGSEGV, SIG_DFL); /* whatever a sanitizer installed */
    raise(SIGSEGV);
    abort();
}

/* J_MIXED's job i: counts its run, then does what c->mixed[i] says. */
static int mixed_job(struct rec *c, uint64_t i, int fd)
{
    atomic_fetch_add(&c->attempts[i], 1);
    char msg[64];
    switch (poisoned ? MX_CRASH : c->mixed[i]) {
    case MX_CRASH: crash();
    case MX_POISON: poisoned = true; break;
    case MX_SLEEP:
        for (;;)
            pause();
    case MX_EXIT7: return 7;
    case MX_FAT: { /* peaks near a 384 MiB limit, frees, answers */
        char *p = malloc(300u << 20);
        if (!p)
            return 1;
        memset(p, 1, 300u << 20);
        __asm__ volatile("" : : "r"(p) : "memory"); /* the compiler may not drop the peak (clang would) */
        free(p);
        break;
    }
    default: break;
    }
    snprintf(msg, sizeof msg, "job %d pid %ld", (int)i, (long)getpid());
    return ckh_pool_reply(fd, msg, strlen(msg) + 1) ? 3 : 0;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int job(void *ctx, uint64_t i, int fd)
{
    struct rec *c = ctx;
    if (c->running) {
        int now = atomic_fetch_add(c->running, 1) + 1;
        int max = atomic_load(c->running_max);
        while (now > max && !atomic_compare_exchange_weak(c->running_max, &max, now))
            ;
        pause_ms(20);
        atomic_fetch_sub(c->running, 1);
    }
    char msg[64];
    switch (c->kind) {
    case J_MIXED: return mixed_job(c, i, fd);
    case J_ECHO:
        snprintf(msg, sizeof msg, "job %d", (int)i);
        return ckh_pool_reply(fd, msg, strlen(msg) + 1) ? 3 : 0;
    case J_EXIT7: return 7;
    case J_SIGNAL: raise(SIGTERM); return 0;
    case J_SLEEP:
        if (ready_fd >= 0 && write(ready_fd, "r", 1) != 1)
            return 3;
        for (;;)
            pause();
    case J_EAT:
        for (;;) { /* until the memory limit refuses; kept, so never optimized away */
            char *p = malloc(8u << 20);
            if (!p)
                return 1;
            memset(p, 1, 8u << 20);
            *(void **)p = eaten;
            eaten = p;
        }
    case J_BIG: {
        static char buf[1 << 20];
        memset(buf, 'x', sizeof buf);
        return ckh_pool_reply(fd, buf, sizeof buf) ? 3 : 0;
    }
    }
    return 0;
}

static void done(void *ctx, uint64_t i, const struct ckh_pool_result *r)
{
    struct rec *c = ctx;
    ck_assert_uint_lt(i, 16);
    c->r[i] = *r;
    c->calls++;
    if (c->kind == J_BIG)
        c->big_len = r->len;
    else if (r->len && r->len <= sizeof c->data[i])
        memcpy(c->data[i], r->data, r->len);
}

static bool more(void *ctx, uint64_t i)
{
    struct rec *c = ctx;
    if ((int)i == c->interrupt_at)
        raise(SIGINT);
    return true;
}

static const struct ckh_pool_ops ops = {.run = job, .done = done, .more = more};

static int run_pool(struct rec *c, unsigned workers, uint64_t njobs, struct ckh_pool_limits lim)
{
    struct ckh_pool_config cfg = {.workers = workers, .njobs = njobs, .limits = lim,
                                  .ops = &ops, .ctx = c, .jobs_per_worker = per_worker};
    return ckh_pool_run(&cfg);
}

/* No child of this process is left (running or unreaped). */
static void assert_no_child(void)
{
    errno = 0;
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
    ck_assert_int_eq(errno, ECHILD);
}

START_TEST(test_replies_in_order_of_index)
{
    per_worker = modes[_i];
    struct rec c = {.kind = J_ECHO, .interrupt_at = -1};
    ck_assert_int_eq(run_pool(&c, 3, 10, (struct ckh_pool_limits){0, 0}), 0);
    ck_assert_int_eq(c.calls, 10);
    for (int i = 0; i < 10; i++) {
        char want[64];
        snprintf(want, sizeof want, "job %d", i);
        ck_assert_int_eq(c.r[i].status, CKH_POOL_OK);
        ck_assert_str_eq(c.data[i], want);
    }
    assert_no_child();
}
END_TEST

START_TEST(test_large_reply)
{
    per_worker = modes[_i];
    struct rec c = {.kind = J_BIG, .interrupt_at = -1};
    ck_assert_int_eq(run_pool(&c, 1, 1, (struct ckh_pool_limits){0, 0}), 0);
    ck_assert_int_eq(c.r[0].status, CKH_POOL_OK);
    ck_assert_uint_eq(c.big_len, 1u << 20);
}
END_TEST

START_TEST(test_statuses)
{
    per_worker = modes[_i];
    struct rec c = {.kind = J_EXIT7, .interrupt_at = -1};
    char line[128];
    struct ckh_pool_limits lim = {1, 0};
    ck_assert_int_eq(run_pool(&c, 1, 1, lim), 0);
    ck_assert_int_eq(c.r[0].status, CKH_POOL_EXITED);
    ck_assert_int_eq(c.r[0].code, 7);
    ckh_pool_describe(&c.r[0], &lim, line, sizeof line);
    ck_assert_str_eq(line, "exited with status 7");

    c.kind = J_SIGNAL;
    ck_assert_int_eq(run_pool(&c, 1, 1, lim), 0);
    ck_assert_int_eq(c.r[0].status, CKH_POOL_SIGNALED);
    ck_assert_int_eq(c.r[0].code, SIGTERM);
    ckh_pool_describe(&c.r[0], &lim, line, sizeof line);
    ck_assert_str_eq(line, "killed by signal 15 (Terminated)");

    c.kind = J_SLEEP; /* stopped by the parent after 1 s */
    ck_assert_int_eq(run_pool(&c, 2, 2, lim), 0);
    ck_assert_int_eq(c.r[0].status, CKH_POOL_TIME_LIMIT);
    ck_assert_int_eq(c.r[1].status, CKH_POOL_TIME_LIMIT);
    ckh_pool_describe(&c.r[0], &lim, line, sizeof line);
    ck_assert_str_eq(line, "time limit 1 s reached");
    assert_no_child();
}
END_TEST

START_TEST(test_memory_limit)
{
    per_worker = modes[_i];
    if (!ckh_pool_mem_limit_supported())
        CKH_SKIP("no memory limit in this build (AddressSanitizer needs the address space)");
    if (getenv("CKH_VALGRIND"))
        CKH_SKIP("under valgrind (it needs the address space)");
    struct rec c = {.kind = J_EAT, .interrupt_at = -1};
    struct ckh_pool_limits lim = {60, 256u << 20};
    ck_assert_int_eq(run_pool(&c, 1, 1, lim), 0);
    ck_assert_int_eq(c.r[0].status, CKH_POOL_MEM_LIMIT);
    char line[128];
    ckh_pool_describe(&c.r[0], &lim, line, sizeof line);
    ck_assert_str_eq(line, "memory limit 256 MiB reached");
}
END_TEST

START_TEST(test_at_most_workers_at_a_time)
{
    per_worker = modes[_i];
    _Atomic int *shared = mmap(NULL, 2 * sizeof(_Atomic int), PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(shared, MAP_FAILED);
    atomic_store(&shared[0], 0);
    atomic_store(&shared[1], 0);
    struct rec c = {.kind = J_ECHO, .interrupt_at = -1, .running = &shared[0],
                    .running_max = &shared[1]};
    ck_assert_int_eq(run_pool(&c, 3, 12, (struct ckh_pool_limits){0, 0}), 0);
    ck_assert_int_eq(c.calls, 12);
    ck_assert_int_le(atomic_load(&shared[1]), 3);
    ck_assert_int_ge(atomic_load(&shared[1]), 1);
    munmap(shared, 2 * sizeof(_Atomic int));
}
END_TEST

START_TEST(test_interrupt_kills_and_reaps)
{
    per_worker = modes[_i];
    ck_assert_int_eq(ckh_pool_signals_install(), 0);
    struct rec c = {.kind = J_SLEEP, .interrupt_at = 2};
    /* Jobs 0 and 1 sleep forever; SIGINT arrives before job 2 starts. */
    ck_assert_int_eq(run_pool(&c, 3, 5, (struct ckh_pool_limits){0, 0}), -EINTR);
    ck_assert_int_eq(ckh_pool_interrupted(), SIGINT);
    ck_assert_int_eq(c.calls, 0);
    assert_no_child();
    /* After an interrupt no job starts until the reset. */
    c.interrupt_at = -1;
    c.kind = J_ECHO;
    ck_assert_int_eq(run_pool(&c, 1, 1, (struct ckh_pool_limits){0, 0}), -EINTR);
    ckh_pool_signals_reset();
    ck_assert_int_eq(ckh_pool_interrupted(), 0);
    ck_assert_int_eq(run_pool(&c, 1, 1, (struct ckh_pool_limits){0, 0}), 0);
    ck_assert_int_eq(c.calls, 1);
}
END_TEST

/* A process running a pool whose jobs sleep forever dies by SIGKILL: its
 * children must die too. This process is their subreaper, so it reaps
 * them once they are orphans (a child that lives on hangs the test). */
START_TEST(test_children_die_with_parent)
{
    per_worker = modes[_i];
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t mid = fork();
    ck_assert_int_ge(mid, 0);
    if (mid == 0) {
        close(fds[0]);
        ready_fd = fds[1];
        struct rec c = {.kind = J_SLEEP, .interrupt_at = -1};
        run_pool(&c, 2, 2, (struct ckh_pool_limits){0, 0});
        _exit(0);
    }
    close(fds[1]);
    char b[2];
    for (int got = 0; got < 2;) { /* both children started */
        ssize_t r = read(fds[0], b, 2 - (size_t)got);
        ck_assert_int_gt(r, 0);
        got += (int)r;
    }
    close(fds[0]);
    kill(mid, SIGKILL);
    alarm(60); /* a child left alive fails the test here */
    int killed = 0, st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, 0)) > 0)
        killed += pid != mid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    alarm(0);
    ck_assert_int_eq(killed, 2);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}
END_TEST

/* ---- resident workers ---- */

/* A J_MIXED record whose jobs do what kinds says (n of them). */
static struct rec *mixed_rec(const int *kinds, int n)
{
    struct rec *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    c->kind = J_MIXED;
    c->interrupt_at = -1;
    for (int i = 0; i < n; i++)
        c->mixed[i] = kinds[i];
    c->attempts = mmap(NULL, 16 * sizeof(_Atomic int), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(c->attempts, MAP_FAILED);
    for (int i = 0; i < 16; i++)
        atomic_store(&c->attempts[i], 0);
    return c;
}

static void mixed_free(struct rec *c)
{
    munmap(c->attempts, 16 * sizeof(_Atomic int));
    free(c);
}

/* The pid in job i's answer "job I pid P". */
static long answer_pid(const struct rec *c, int i)
{
    const char *p = strstr(c->data[i], " pid ");
    ck_assert_ptr_nonnull(p);
    return strtol(p + 5, NULL, 10);
}

static int distinct_pids(const struct rec *c, int n)
{
    long seen[16];
    int k = 0;
    for (int i = 0; i < n; i++) {
        long pid = answer_pid(c, i);
        bool dup = false;
        for (int j = 0; j < k; j++)
            dup |= seen[j] == pid;
        if (!dup)
            seen[k++] = pid;
    }
    return k;
}

/* One worker of 4 jobs runs 12 jobs in 3 children; 16 jobs a worker: in
 * one. Every job ends once, in order of index, with its answer. */
START_TEST(test_resident_workers_run_many_jobs)
{
    int kinds[12] = {0};
    struct rec *c = mixed_rec(kinds, 12);
    per_worker = 4;
    ck_assert_int_eq(run_pool(c, 1, 12, (struct ckh_pool_limits){0, 0}), 0);
    ck_assert_int_eq(c->calls, 12);
    for (int i = 0; i < 12; i++) {
        ck_assert_int_eq(c->r[i].status, CKH_POOL_OK);
        ck_assert_int_eq(atomic_load(&c->attempts[i]), 1);
    }
    ck_assert_int_eq(distinct_pids(c, 12), 3);
    ck_assert_int_eq(answer_pid(c, 0), answer_pid(c, 3));
    ck_assert_int_ne(answer_pid(c, 3), answer_pid(c, 4));
    mixed_free(c);
    c = mixed_rec(kinds, 12);
    per_worker = 16;
    ck_assert_int_eq(run_pool(c, 2, 12, (struct ckh_pool_limits){0, 0}), 0);
    ck_assert_int_eq(c->calls, 12);
    ck_assert_int_le(distinct_pids(c, 12), 2);
    mixed_free(c);
    assert_no_child();
}
END_TEST

/* A job that crashes its worker ends as that crash (signal 11), after a
 * second run in a fresh worker when its worker had run other jobs; the
 * first job of a worker is not run again; every other job still runs and
 * answers. */
START_TEST(test_resident_crash_reported_and_others_run)
{
    int kinds[10] = {[0] = MX_CRASH, [5] = MX_CRASH};
    struct rec *c = mixed_rec(kinds, 10);
    per_worker = 100;
    ck_assert_int_eq(run_pool(c, 1, 10, (struct ckh_pool_limits){0, 0}), 0);
    ck_assert_int_eq(c->calls, 10);
    for (int i = 0; i < 10; i++) {
        if (i == 0 || i == 5) {
            ck_assert_int_eq(c->r[i].status, CKH_POOL_SIGNALED);
            ck_assert_int_eq(c->r[i].code, SIGSEGV);
        } else {
            ck_assert_int_eq(c->r[i].status, CKH_POOL_OK);
            ck_assert_int_eq(atomic_load(&c->attempts[i]), 1);
        }
    }
    ck_assert_int_eq(atomic_load(&c->attempts[0]), 1); /* the first job of its worker */
    ck_assert_int_eq(atomic_load(&c->attempts[5]), 2); /* job 5 followed jobs 1..4 */
    ck_assert_int_eq(answer_pid(c, 1), answer_pid(c, 4));
    ck_assert_int_ne(answer_pid(c, 4), answer_pid(c, 6));
    mixed_free(c);
    assert_no_child();
}
END_TEST

/* A job that leaves its worker broken (here: every later job there
 * crashes) costs the next job nothing: that job dies, runs again in a
 * fresh worker and answers, as it would have in a child of its own. With
 * two workers and a broken one the outcomes are the same as with one. */
START_TEST(test_resident_outcome_independent_of_history)
{
    int kinds[8] = {[2] = MX_POISON};
    for (unsigned workers = 1; workers <= 2; workers++) {
        struct rec *c = mixed_rec(kinds, 8);
        per_worker = 100;
        ck_assert_int_eq(run_pool(c, workers, 8, (struct ckh_pool_limits){0, 0}), 0);
        ck_assert_int_eq(c->calls, 8);
        int runs = 0;
        for (int i = 0; i < 8; i++) {
            ck_assert_int_eq(c->r[i].status, CKH_POOL_OK);
            runs += atomic_load(&c->attempts[i]);
        }
        if (workers == 1) /* job 3 died after job 2 and ran again (with two workers
                             the poisoned one may get no further job) */
            ck_assert_int_ge(runs, 9);
        mixed_free(c);
    }
    assert_no_child();
}
END_TEST

/* A job past its time limit ends as such and is not run again; the jobs
 * after it run in another worker. */
START_TEST(test_resident_time_limit)
{
    int kinds[6] = {[2] = MX_SLEEP};
    struct rec *c = mixed_rec(kinds, 6);
    per_worker = 100;
    struct ckh_pool_limits lim = {2, 0}; /* the other jobs answer well within it */
    ck_assert_int_eq(run_pool(c, 1, 6, lim), 0);
    ck_assert_int_eq(c->calls, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(c->r[i].status, i == 2 ? CKH_POOL_TIME_LIMIT : CKH_POOL_OK);
    ck_assert_int_eq(atomic_load(&c->attempts[2]), 1);
    ck_assert_int_ne(answer_pid(c, 1), answer_pid(c, 3));
    mixed_free(c);
    assert_no_child();
}
END_TEST

/* A job that peaks near the memory limit in a used worker runs again in a
 * fresh one (what the earlier jobs left may have weighed on it), and that
 * worker takes no further job: the next job's own failure status is its
 * outcome, not the memory limit's. */
START_TEST(test_resident_peak_near_limit_retires)
{
    if (!ckh_pool_mem_limit_supported())
        CKH_SKIP("no memory limit in this build (AddressSanitizer needs the address space)");
    if (getenv("CKH_VALGRIND"))
        CKH_SKIP("under valgrind (it needs the address space)");
    int kinds[5] = {[1] = MX_FAT, [3] = MX_EXIT7};
    struct rec *c = mixed_rec(kinds, 5);
    per_worker = 100;
    struct ckh_pool_limits lim = {60, 384u << 20};
    ck_assert_int_eq(run_pool(c, 1, 5, lim), 0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(c->r[i].status, i == 3 ? CKH_POOL_EXITED : CKH_POOL_OK);
    ck_assert_int_eq(c->r[3].code, 7);
    ck_assert_int_eq(atomic_load(&c->attempts[1]), 2);
    ck_assert_int_ne(answer_pid(c, 0), answer_pid(c, 1)); /* the fresh worker's answer */
    ck_assert_int_ne(answer_pid(c, 1), answer_pid(c, 2)); /* retired after its peak */
    /* job 3 failed in a used worker: run again in a fresh one, same outcome */
    ck_assert_int_eq(atomic_load(&c->attempts[3]), 2);
    ck_assert_int_ne(answer_pid(c, 2), answer_pid(c, 4));
    mixed_free(c);
    assert_no_child();
}
END_TEST

/* ---- temporary folders ---- */

static char base[256];

static void make_base(void)
{
    snprintf(base, sizeof base, "/tmp/ckh-test-pool-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
}

static void make_folder(const char *name, const char *marker)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, name);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    if (!marker)
        return;
    snprintf(p, sizeof p, "%s/%s/.ckh-owner", base, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(marker, f);
    fclose(f);
}

static bool exists(const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", base, name);
    return stat(p, &st) == 0;
}

START_TEST(test_tmp_make_names_and_marks)
{
    make_base();
    setenv("TMPDIR", base, 1);
    ck_assert_str_eq(ckh_tmp_base(), base);
    char dir[512], want[300], marker[600], line[128];
    ck_assert_int_eq(ckh_tmp_make(dir, sizeof dir), 0);
    snprintf(want, sizeof want, "%s/ckh-%ld-", base, (long)getpid());
    ck_assert_int_eq(strncmp(dir, want, strlen(want)), 0);
    ck_assert_uint_eq(strlen(dir), strlen(want) + 6);
    snprintf(marker, sizeof marker, "%s/.ckh-owner", dir);
    FILE *f = fopen(marker, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    snprintf(want, sizeof want, "ckh %ld ", (long)getpid());
    ck_assert_int_eq(strncmp(line, want, strlen(want)), 0);
    /* Our own folder is never stale. */
    ck_assert_int_eq(ckh_tmp_sweep(base), 0);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/a", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    ck_assert_int_eq(ckh_tmp_remove(dir), 0);
    ck_assert_int_eq(rmdir(base), 0);
    unsetenv("TMPDIR");
    ck_assert_str_eq(ckh_tmp_base(), "/tmp");
}
END_TEST

START_TEST(test_tmp_sweep_removes_only_stale)
{
    make_base();
    pid_t dead = fork();
    ck_assert_int_ge(dead, 0);
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    char name[64], marker[64], live[64], live_marker[64], wrong[64];
    snprintf(name, sizeof name, "ckh-%ld-abcdef", (long)dead);
    snprintf(marker, sizeof marker, "ckh %ld 0\n", (long)dead);
    make_folder(name, marker);
    char inner[600];
    snprintf(inner, sizeof inner, "%s/%s/result", base, name);
    FILE *f = fopen(inner, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(wrong, sizeof wrong, "ckh-%ld-nomark", (long)dead);
    make_folder(wrong, NULL);               /* no marker: not ckh's */
    make_folder("ckh-other-abcdef", "ckh 1 0\n"); /* not a pid name */
    snprintf(live, sizeof live, "ckh-%ld-uvwxyz", (long)getppid());
    snprintf(live_marker, sizeof live_marker, "ckh %ld 0\n", (long)getppid());
    make_folder(live, live_marker);         /* a live process */
    make_folder("other", NULL);
    ck_assert_int_eq(ckh_tmp_sweep(base), 1);
    ck_assert(!exists(name));
    ck_assert(exists(wrong));
    ck_assert(exists("ckh-other-abcdef"));
    ck_assert(exists(live));
    ck_assert(exists("other"));
    ck_assert_int_eq(ckh_tmp_remove(base), 0);
}
END_TEST

/* ---- option values ---- */

START_TEST(test_opt_u64)
{
    char msg[200];
    uint64_t v = 99;
    ck_assert_int_eq(ckh_opt_u64("seed", "0", 0, UINT64_MAX, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(ckh_opt_u64("seed", "18446744073709551615", 0, UINT64_MAX, &v, msg,
                                 sizeof msg), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert_int_eq(ckh_opt_u64("seed", "0x10", 0, UINT64_MAX, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, 16);
    static const char *const bad[] = {"", " 1", "-1", "+1", "1x", "1 ", "0x",
                                      "18446744073709551616", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 5;
        ck_assert_int_eq(ckh_opt_u64("seed", bad[i], 0, UINT64_MAX, &v, msg, sizeof msg),
                         CKH_EINVAL);
        ck_assert_uint_eq(v, 5);
    }
    ck_assert_int_eq(ckh_opt_u64("jobs", "4294967297", 1, 256, &v, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "--jobs expects an integer 1..256, got '4294967297'");
    ck_assert_int_eq(ckh_opt_u64("jobs", "0", 1, 256, &v, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_opt_u64("jobs", "256", 1, 256, &v, msg, sizeof msg), 0);
}
END_TEST

START_TEST(test_opt_size_and_output)
{
    char msg[300];
    uint64_t v = 0;
    ck_assert_int_eq(ckh_opt_size("mem-limit", "4GiB", 0, UINT64_MAX, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, 4ull << 30);
    ck_assert_int_eq(ckh_opt_size("mem-limit", "0", 0, UINT64_MAX, &v, msg, sizeof msg), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(ckh_opt_size("mem-limit", "-1GiB", 0, UINT64_MAX, &v, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_opt_size("mem-limit", "lots", 0, UINT64_MAX, &v, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_str_eq(msg, "--mem-limit expects a size such as 512MiB or 4GiB, got 'lots'");

    make_base();
    char p[512];
    snprintf(p, sizeof p, "%s/report.xml", base);
    ck_assert_int_eq(ckh_opt_check_output("JUnit report", p, false, msg, sizeof msg), 0);
    snprintf(p, sizeof p, "%s/missing/report.xml", base);
    ck_assert_int_eq(ckh_opt_check_output("JUnit report", p, false, msg, sizeof msg), -ENOENT);
    ck_assert_ptr_nonnull(strstr(msg, "cannot write the JUnit report"));
    ck_assert_ptr_nonnull(strstr(msg, "/missing"));
    ck_assert_int_eq(ckh_opt_check_output("JSON report", base, false, msg, sizeof msg), -EISDIR);
    snprintf(p, sizeof p, "%s/new-folder", base);
    ck_assert_int_eq(ckh_opt_check_output("failure folder", p, true, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_tmp_remove(base), 0);
}
END_TEST

static Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_replies_in_order_of_index, 0, 2);
    tcase_add_loop_test(tc, test_large_reply, 0, 2);
    tcase_add_loop_test(tc, test_statuses, 0, 2);
    tcase_add_loop_test(tc, test_at_most_workers_at_a_time, 0, 2);
    tcase_add_loop_test(tc, test_interrupt_kills_and_reaps, 0, 2);
    tcase_add_loop_test(tc, test_children_die_with_parent, 0, 2);
    tcase_add_test(tc, test_resident_workers_run_many_jobs);
    tcase_add_test(tc, test_resident_crash_reported_and_others_run);
    tcase_add_test(tc, test_resident_outcome_independent_of_history);
    tcase_add_test(tc, test_resident_time_limit);
    suite_add_tcase(s, tc);
    /* A build or tool that needs the address space cannot limit it: a
     * CTest entry of its own (test_pool_memlimit), skipped there. */
    TCase *tm = tcase_create("memlimit");
    tcase_set_timeout(tm, 120);
    tcase_set_tags(tm, "memlimit");
    tcase_add_loop_test(tm, test_memory_limit, 0, 2);
    tcase_add_test(tm, test_resident_peak_near_limit_retires);
    suite_add_tcase(s, tm);
    TCase *tt = tcase_create("tmpdir");
    tcase_add_test(tt, test_tmp_make_names_and_marks);
    tcase_add_test(tt, test_tmp_sweep_removes_only_stale);
    suite_add_tcase(s, tt);
    TCase *to = tcase_create("opt");
    tcase_add_test(to, test_opt_u64);
    tcase_add_test(to, test_opt_size_and_output);
    suite_add_tcase(s, to);
    return s;
}

int main(void)
{
    return ckh_test_run(pool_suite());
}
