/* The fault script of one real node (real_faults.h has the contract). */
#include "real_faults.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/fault_rule.h"
#include "ckh/fs.h"
#include "ckh/posix.h"

struct ckh_real_faults {
    uint64_t seed;                     /* the run's seed */
    struct ckh_real_rule *rules;       /* copies (strings borrowed) */
    size_t nrules;                     /* their count */
    struct ckh_fault_state *state;     /* [nrules]: this process's copy of the counters
                                          (the matcher's, ckh/fault_rule.h: fixed layout) */
    int state_fd;                      /* the shared counters (-1: local only) */
    int log_fd;                        /* the firing log (-1: none) */
    char *notes_dir;                   /* notes to the launcher (owned; NULL: none) */
    int run;                           /* the run, for the power note */
    uint64_t t0_ns;                    /* when the process armed its rules */
    pthread_mutex_t lock;              /* one evaluation at a time within the process */
};

#ifdef CKH_COVERAGE_BUILD
/* libgcov's: writes the counters out (SIGKILL would lose them). */
extern void __gcov_dump(void);
#endif

_Noreturn void ckh_real_faults_kill(void)
{
#ifdef CKH_COVERAGE_BUILD
    __gcov_dump(); /* a coverage build keeps what a killed node ran */
#endif
    for (;;) {
        kill(getpid(), SIGKILL);
        pause();
    }
}

static bool action_supported(enum ckh_fault_kind k, bool simulated_disk)
{
    if (k == CKH_FAULT_CRASH_BEFORE || k == CKH_FAULT_POWER_LOSS || k == CKH_FAULT_FSYNC_LOST ||
        k == CKH_FAULT_CALL)
        return simulated_disk;
    return k == CKH_FAULT_ERRNO || k == CKH_FAULT_KILL_BEFORE || k == CKH_FAULT_KILL_AFTER ||
           k == CKH_FAULT_KILL_MID || k == CKH_FAULT_DELAY || k == CKH_FAULT_MISMATCH ||
           k == CKH_FAULT_SHORT_WRITE;
}

int ckh_real_faults_create(const struct ckh_real_faults_config *cfg, struct ckh_real_faults **out,
                           char *msg, size_t msglen)
{
    if (!cfg || !out || (cfg->nrules && !cfg->rules))
        return CKH_EINVAL;
    for (size_t i = 0; i < cfg->nrules; i++)
        if (!action_supported(cfg->rules[i].rule.action.kind, cfg->notes_dir != NULL))
            return ckh_errf(msg, msglen, CKH_EINVAL, "fault %zu: %s cannot be carried out on the real "
                            "platform (it needs a simulated disk)", cfg->rules[i].fault + 1,
                            ckh_fault_action_name(cfg->rules[i].rule.action.kind));
    struct ckh_real_faults *f = calloc(1, sizeof *f);
    if (!f)
        return CKH_ENOMEM;
    int rc = CKH_ENOMEM;
    f->state_fd = -1;
    f->log_fd = -1;
    f->seed = cfg->seed;
    f->run = cfg->run;
    f->nrules = cfg->nrules;
    if (cfg->notes_dir && !(f->notes_dir = strdup(cfg->notes_dir)))
        goto out_free;
    f->rules = calloc(cfg->nrules + 1, sizeof *f->rules);
    f->state = calloc(cfg->nrules + 1, sizeof *f->state);
    if (!f->rules || !f->state)
        goto out_free;
    if (cfg->nrules)
        memcpy(f->rules, cfg->rules, cfg->nrules * sizeof *f->rules);
    if (cfg->state_path && cfg->nrules &&
        (f->state_fd = open(cfg->state_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
        rc = ckh_errf(msg, msglen, -errno, "cannot open %s: %s", cfg->state_path, strerror(errno));
        goto out_free;
    }
    if (cfg->log_path &&
        (f->log_fd = open(cfg->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0) {
        rc = ckh_errf(msg, msglen, -errno, "cannot open %s: %s", cfg->log_path, strerror(errno));
        goto out_free;
    }
    pthread_mutex_init(&f->lock, NULL);
    f->t0_ns = ckh_posix_now_ns();
    *out = f;
    return 0;
out_free:
    ckh_real_faults_destroy(f);
    return rc;
}

void ckh_real_faults_destroy(struct ckh_real_faults *f)
{
    if (!f)
        return;
    if (f->state_fd >= 0)
        close(f->state_fd);
    if (f->log_fd >= 0)
        close(f->log_fd);
    free(f->rules);
    free(f->state);
    free(f->notes_dir);
    free(f);
}

/* Time for at_time_ns: wall-clock time since the process armed its rules. */
static uint64_t now_ns(const struct ckh_real_faults *f)
{
    return ckh_posix_now_ns() - f->t0_ns;
}

/* The shared counters: locked and read in, or written back and unlocked. */
static void state_lock(struct ckh_real_faults *f, bool lock)
{
    if (f->state_fd < 0)
        return;
    size_t bytes = f->nrules * sizeof *f->state;
    struct flock fl = {.l_type = lock ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET};
    if (lock) {
        while (fcntl(f->state_fd, F_SETLKW, &fl) != 0 && errno == EINTR)
            ;
        memset(f->state, 0, bytes);
        if (pread(f->state_fd, f->state, bytes, 0) < 0)
            memset(f->state, 0, bytes);
        return;
    }
    if (pwrite(f->state_fd, f->state, bytes, 0) != (ssize_t)bytes)
        fprintf(stderr, "ckh real: cannot update the fault counters: %s\n", strerror(errno));
    fcntl(f->state_fd, F_SETLK, &fl);
}

static void log_firing(struct ckh_real_faults *f, size_t i, const struct ckh_op *op,
                       const struct ckh_fault_action *act)
{
    if (f->log_fd < 0)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "fired %zu %zu %s %s %s\n", i, f->rules[i].fault,
                     ckh_op_name(op->kind), ckh_fault_action_name(act->kind), op->path ? op->path : "-");
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    if (write(f->log_fd, line, (size_t)n) != n)
        fprintf(stderr, "ckh real: cannot log a fault firing: %s\n", strerror(errno));
}

/* Leaves a note for the launcher (see real_faults.h): name in the notes
 * folder, text its content ("" for the power note). The note is whole
 * before the operation it announces reaches the mount. */
static void leave_note(const struct ckh_real_faults *f, const char *name, const char *text)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", f->notes_dir ? f->notes_dir : ".", name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(text);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len)
        fprintf(stderr, "ckh real: cannot leave the note %s: %s\n", path, strerror(errno));
    if (fd >= 0)
        close(fd);
}

/* The actions carried out with the launcher (see real_faults.h). */
static void with_launcher(struct ckh_real_faults *f, const struct ckh_op *op, size_t source,
                          struct ckh_fault_action *act)
{
    char name[64], text[CKH_PATH_MAX + 32];
    switch (act->kind) {
    case CKH_FAULT_CRASH_BEFORE:
        ckh_real_faults_kill();
    case CKH_FAULT_POWER_LOSS:
        snprintf(name, sizeof name, "power.%d", f->run);
        leave_note(f, name, "");
        ckh_real_faults_kill();
    case CKH_FAULT_FSYNC_LOST: /* on fsync or fdatasync only (the matcher's M3) */
        snprintf(name, sizeof name, "note.%ld", (long)getpid());
        snprintf(text, sizeof text, "fsync_lost %s", op->path ? op->path : "");
        leave_note(f, name, text);
        return;
    case CKH_FAULT_CALL:
        snprintf(name, sizeof name, "note.%ld", (long)getpid());
        snprintf(text, sizeof text, "call %zu", f->rules[source].fault);
        leave_note(f, name, text);
        return;
    default:
        return;
    }
}

void ckh_real_faults_enter(struct ckh_real_faults *f, const struct ckh_op *op,
                           struct ckh_fault_action *act)
{
    memset(act, 0, sizeof *act);
    if (!f || !f->nrules)
        return;
    const uint64_t now = now_ns(f);
    bool any = false;
    for (size_t i = 0; i < f->nrules && !any; i++)
        any = ckh_fault_rule_selects(&f->rules[i].rule, op, now);
    if (!any)
        return;
    pthread_mutex_lock(&f->lock);
    state_lock(f, true);
    size_t source = SIZE_MAX;
    for (size_t i = 0; i < f->nrules; i++) {
        const struct ckh_fault_rule *r = &f->rules[i].rule;
        struct ckh_fault_state *s = &f->state[i];
        if (!s->seeded) /* first selected here: no process has counted it yet */
            ckh_fault_state_init(s, f->seed, i);
        if (!ckh_fault_rule_match(r, s, op, now, act->kind != CKH_FAULT_NONE))
            continue;
        *act = ckh_fault_rule_action(r, op->len);
        source = i;
    }
    state_lock(f, false);
    ckh_fault_action_cap(act, op->len);
    if (source != SIZE_MAX)
        log_firing(f, source, op, act);
    if (source != SIZE_MAX)
        with_launcher(f, op, source, act);
    pthread_mutex_unlock(&f->lock);
    if (act->kind == CKH_FAULT_KILL_BEFORE ||
        (act->kind == CKH_FAULT_KILL_MID && op->kind != CKH_OP_WRITE && op->kind != CKH_OP_PWRITE))
        ckh_real_faults_kill();
    if (act->kind == CKH_FAULT_DELAY) {
        struct timespec ts = {.tv_sec = (time_t)(act->delay_ns / 1000000000ull),
                              .tv_nsec = (long)(act->delay_ns % 1000000000ull)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        memset(act, 0, sizeof *act);
    }
}
