/* The real platform's launcher (exec/mpi.h has the data flow and
 * the run folder). Map: what the platform refuses · the fault rules of a
 * run · paths · finding MPI · launching and waiting · reading a run back ·
 * the runs with restarts · the verdict.
 *
 * The runs follow the simulated runner (exec/runner.c) step for step:
 * run 1 starts every node; after a run, a node that did not exit with 0
 * restarts, and when a ranked node failed every ranked node restarts
 * with it (one mpirun for the group, as a real launcher restarts the
 * whole job); a node whose process left no status file was killed. After
 * a kill, the workload's `verify` looks at the node's disk folders, each
 * at its mount path (run/platform_real_fs.h), as it looks at a simfs view
 * in the simulator. restart.world_size: the nodes outside the first world
 * are parked, and before run 2 the workload switches to the new world
 * (resize), as the runner does. With a
 * ckhfs disk (platform_real_disk.c) each run is framed by mounting the
 * disks (after the run's at-rest faults) and unmounting them (then the
 * crash model), and `verify` looks at the simfs disk itself.
 *
 * Interrupts (docs/CLI.md, "Signals"): for the job's duration SIGINT,
 * SIGTERM and SIGHUP are only recorded (the command jobs' watch,
 * exec/command_proc.h). A launcher dies with the process that started it
 * (PR_SET_PDEATHSIG, as a rank dies with its launcher); once a signal is
 * recorded no run starts, the wait loop kills every process group of the
 * run (SIGKILL) and reaps it, ckh as the job's child subreaper kills and
 * reaps what the launchers left, the disks are unmounted, the run folder
 * is removed, and only then does the signal take its course.
 */
#include "exec/mpi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
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
#include "model/fault.h"
#include "exec/mpi_fs.h"
#include "exec/command_proc.h"
#include "exec/mpi_internal.h"
#include "exec/run_ctx.h"
#include "exec/tmpdir.h"

#define LAUNCH_ARGS_MAX 48
#define RANK_FILE_BYTES_MAX (1ull << 30) /* a rank's status or result file past 1 GiB is not read */

bool ckh__real_selected(const struct ckh_scenario *sc, bool forced)
{
    return !ckh_scn_is_command_job(sc) && (forced || sc->job.platform == CKH_SCN_PLATFORM_REAL);
}

/* ---- what the platform refuses ---- */

int ckh__real_check(const struct ckh_scenario *sc, char *err, size_t errlen)
{
    if (ckh_scn_is_command_job(sc))
        return ckh_errf(err, errlen, CKH_EINVAL, "the real platform runs workload jobs; a command job's "
                        "programs are real processes already");
    return ckh_fault_check_mode(sc, CKH_FAULT_MODE_REAL, err, errlen);
}


/* ---- finding MPI ---- */

static bool executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* name on PATH, into out. */
static bool on_path(const char *name, char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        int w = snprintf(out, n, "%.*s/%s", (int)len, p, name);
        if (w > 0 && (size_t)w < n && len && executable(out))
            return true;
        p += len + (colon ? 1 : 0);
    }
    return false;
}

/* The folder of the running executable (the rank programs sit beside ckh). */
static int self_dir(char *buf, size_t n)
{
    const char *env = getenv("CKH_RANK_DIR");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return 0;
    }
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    if (len <= 0)
        return -errno;
    buf[len] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
    return 0;
}

int ckh__real_find_mpi(const char *mpi, char *exe, size_t exen, char *launcher, size_t launchern,
                       char *err, size_t errlen)
{
    static const char *const mpis[] = CKH_REAL_MPIS;
    char dir[PATH_MAX];
    if (!mpi || !*mpi)
        mpi = getenv("CKH_MPI");
    if (self_dir(dir, sizeof dir) != 0)
        return ckh_errf(err, errlen, CKH_EINTERNAL, "cannot find ckh's own folder");
    char tried[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof mpis / sizeof mpis[0]; i++) {
        if (mpi && *mpi && strcmp(mpi, mpis[i]) != 0)
            continue;
        snprintf(exe, exen, "%s/ckh-rank-%s", dir, mpis[i]);
        char want[64];
        snprintf(want, sizeof want, "mpirun.%s", mpis[i]);
        bool have_exe = executable(exe);
        bool have_launcher = on_path(want, launcher, launchern) ||
                             (!strcmp(mpis[i], "mpich") && on_path("mpiexec.hydra", launcher, launchern));
        const char *forced = getenv("CKH_MPIRUN");
        if (have_exe && forced && *forced) {
            /* The launcher named by the environment (a wrapper, another
             * install): used as given, refused when it cannot run. */
            if (!executable(forced))
                return ckh_errf(err, errlen, CKH_EINTERNAL, "CKH_MPIRUN=%s: not an executable file (it names "
                                "the MPI launcher for the real platform's %s ranks)", forced, mpis[i]);
            snprintf(launcher, launchern, "%s", forced);
            return 0;
        }
        if (have_exe && have_launcher)
            return 0;
        used += (size_t)snprintf(tried + used, sizeof tried - used > 0 ? sizeof tried - used : 0,
                                 "%s%s (%s)", used ? "; " : "", mpis[i],
                                 !have_exe ? "ckh was built without it" : "no mpirun on PATH");
        if (used >= sizeof tried)
            used = sizeof tried - 1;
    }
    if (mpi && *mpi && !tried[0])
        return ckh_errf(err, errlen, CKH_EINVAL, "CKH_MPI=%s: unknown MPI (known: openmpi, mpich)", mpi);
    return ckh_errf(err, errlen, CKH_EINTERNAL,
                    "MPI not installed: the real platform needs Open MPI or MPICH at build and run time "
                    "(Debian: openmpi-bin libopenmpi-dev, or mpich libmpich-dev; scripts/setup.sh installs "
                    "them) [%s]", tried);
}

/* ---- the job ---- */

static bool probe_fired(void *ctx)
{
    struct real_job *j = ctx;
    return j->fired || j->c.at_rest_applied;
}

/* The scenario file the ranks parse: the scenario's own when it is on
 * disk (plugins resolve beside it), else written into the run folder. */
static int scenario_file(struct real_job *j)
{
    const struct ckh_scenario *sc = j->c.sc;
    if (sc->file && access(sc->file, R_OK) == 0) {
        if (!realpath(sc->file, j->scn))
            snprintf(j->scn, sizeof j->scn, "%s", sc->file);
        return 0;
    }
    snprintf(j->scn, sizeof j->scn, "%s/scenario.yaml", j->dir);
    FILE *f = fopen(j->scn, "w");
    if (!f)
        return ckh__run_fail(&j->c, -errno, "cannot write %s: %s", j->scn, strerror(errno));
    int rc = ckh_scenario_write(f, sc);
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    return rc ? ckh__run_fail(&j->c, rc, "cannot write the scenario for the ranks: %s", ckh_strerror(rc)) : 0;
}

/* Without ckhfs: every disk folder of every node, then the checkpoint
 * directory on the disk that holds it. */
static int make_disk_folders(struct real_job *j)
{
    struct ckh__run_ctx *c = &j->c;
    const struct ckh_scenario *sc = c->sc;
    int rc;
    for (int i = 0; i < c->n; i++) {
        /* Every disk folder of the node, then the checkpoint directory
         * on the disk that holds it. */
        char disk[PATH_MAX];
        struct ckh_fs *fs = NULL;
        for (size_t d = 0; d < sc->job.ndisks; d++)
            if (ckh__real_disk_dir(disk, sizeof disk, j->dir, "disks", sc, d, c->names[i]) != 0 ||
                ckh_tmp_mkdirs(disk) != 0)
                return ckh__run_fail(c, CKH_EINTERNAL, "cannot create the disk folder %s", disk);
        if ((rc = ckh__real_node_fs(j->dir, sc, c->names[i], false, &fs)) == 0)
            rc = ckh_fs_mkdirs(fs, sc->job.checkpoint_dir);
        ckh__real_fs_destroy(fs);
        if (rc != 0)
            return ckh__run_fail(c, CKH_EINTERNAL, "cannot create the checkpoint folder %s of %s: %s",
                                 sc->job.checkpoint_dir, c->names[i], ckh_strerror(rc));
    }
    return 0;
}

/* The workload instance (for its nodes, ranks, verify), the folders, the
 * disks and their checkpoint directory, the record store. */
static int job_init(struct real_job *j, const struct ckh_scenario *sc, uint64_t seed, unsigned mode)
{
    struct ckh__run_ctx *c = &j->c;
    int rc;
    c->sc = sc;
    c->mode = mode;
    j->seed = seed;
    if ((rc = ckh__real_check(sc, c->err, sizeof c->err)) != 0)
        return rc;
    /* Watched before anything is made that an interrupt must undo. */
    ckh__cmd_signals_install();
    j->signals_set = true;
    if ((rc = ckh__real_find_mpi(NULL, j->exe, sizeof j->exe, j->launcher, sizeof j->launcher, c->err,
                                 sizeof c->err)) != 0)
        return rc;
    if ((rc = ckh_workloads_resolve(sc, &c->res, c->err, sizeof c->err)) != 0)
        return rc;
    /* What a launcher leaves behind is reparented to ckh (reap_orphans). */
    if (prctl(PR_GET_CHILD_SUBREAPER, &j->subreaper_was) == 0 && prctl(PR_SET_CHILD_SUBREAPER, 1) == 0)
        j->subreaper_set = true;
    c->wl = c->res.workload;
    if ((rc = ckh__run_check_support(c)) != 0 || (rc = ckh__run_create_workload(c, sc, seed, mode)) != 0)
        return rc;
    c->names = calloc((size_t)c->n, sizeof *c->names);
    c->track = calloc((size_t)c->n, sizeof *c->track);
    j->ranks = calloc((size_t)c->n, sizeof *j->ranks);
    j->start = calloc((size_t)c->n, sizeof *j->start);
    j->groups = calloc((size_t)c->n, sizeof *j->groups);
    j->parked = calloc((size_t)c->n, sizeof *j->parked);
    if (!c->names || !c->track || !j->ranks || !j->start || !j->groups || !j->parked)
        return ckh__run_fail(c, CKH_ENOMEM, "out of memory");
    for (int i = 0; i < c->n; i++) {
        if ((rc = c->wl->node(c->inst, i, c->names[i], sizeof c->names[i], &j->ranks[i])) != 0)
            return ckh__run_fail(c, rc, "workload '%s': node %d: %s", c->wl->name, i, ckh_strerror(rc));
        j->start[i] = true;
        c->world_first += j->ranks[i] >= 0;
    }
    c->world_restart = c->world_first;
    /* A resizing job (restart.world_size): the nodes outside the first
     * world wait, parked, as in the simulated runner. */
    if (!(mode & CKH_RUN_NO_FAULTS) && sc->restart.world_size) {
        c->world_restart = (int)sc->restart.world_size;
        for (int i = 0; i < c->n && c->world_restart != c->world_first; i++)
            if (j->ranks[i] < 0) {
                j->parked[i] = true;
                j->start[i] = false;
            }
    }
    unsigned rflags = ((c->wl->flags & CKH_WL_COLLECTIVE) ? CKH_RECORDS_COLLECTIVE : 0) |
                      (c->step_based ? CKH_RECORDS_STEP_BASED : 0);
    if ((rc = ckh_records_create((size_t)c->n, rflags, &c->records)) != 0)
        return ckh__run_fail(c, rc, "out of memory");
    ckh_records_set_fault_probe(c->records, probe_fired, j);
    if ((rc = ckh_tmp_make(j->dir, sizeof j->dir)) != 0)
        return ckh__run_fail(c, CKH_EINTERNAL, "cannot make a run folder: %s", strerror(-rc));
    static const char *const subs[] = {"results", "track", "status", "faults", "logs", "disks", "pids", "mpi"};
    char sub[PATH_MAX];
    for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++) {
        snprintf(sub, sizeof sub, "%s/%s", j->dir, subs[k]);
        if ((rc = ckh_tmp_mkdirs(sub)) != 0)
            return ckh__run_fail(c, CKH_EINTERNAL, "cannot create %s: %s", sub, strerror(-rc));
    }
    snprintf(j->mpi_tmp, sizeof j->mpi_tmp, "%s/mpi", j->dir);
    j->ckhfs = ckh__real_uses_ckhfs(sc);
    if (j->ckhfs && (rc = ckh__real_disks_init(j)) != 0)
        return rc;
    if (!j->ckhfs && (rc = make_disk_folders(j)) != 0)
        return rc;
    return scenario_file(j);
}

static void job_free(struct real_job *j)
{
    ckh__real_disks_free(j); /* unmounted before the folder goes */
    if (j->dir[0] && !getenv("CKH_REAL_KEEP"))
        ckh_tmp_remove(j->dir);
    if (j->subreaper_set)
        prctl(PR_SET_CHILD_SUBREAPER, j->subreaper_was);
    bool signals_set = j->signals_set;
    free(j->ranks);
    free(j->start);
    free(j->groups);
    free(j->parked);
    ckh__run_ctx_free(&j->c);
    memset(j, 0, sizeof *j);
    if (signals_set) /* last: a caught signal takes its course once nothing is left */
        ckh__cmd_signals_restore();
}

/* ---- launching and waiting ---- */

struct proc {
    pid_t pid;    /* the process group leader (mpirun, or the plain rank) */
    bool reaped;  /* waited for */
    int status;   /* its wait status, once reaped (-1: ckh killed it) */
};

/* How long the nodes of a run have to join (rank program started, MPI
 * initialised, communicator made): $CKH_REAL_START_TIMEOUT seconds, 60
 * by default. */
static uint64_t start_timeout_ns(void)
{
    const char *v = getenv("CKH_REAL_START_TIMEOUT");
    char *end = NULL;
    double s = v && *v ? strtod(v, &end) : 0;
    if (!v || !*v || !end || *end || s <= 0 || s > 86400)
        s = 60;
    return (uint64_t)(s * 1e9);
}

/* Whether node i joined run j->run (status/joined.<node>.<run>). */
static bool joined(const struct real_job *j, int i)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/status/joined.%s.%d", j->dir, j->c.names[i], j->run);
    return access(path, F_OK) == 0;
}

/* The nodes of the run that have not joined, "rank_1 (MPI rank 1), ..."
 * into buf; how many. */
static int missing_nodes(const struct real_job *j, char *buf, size_t n)
{
    int missing = 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < j->c.n; i++) {
        if (!j->start[i] || joined(j, i))
            continue;
        missing++;
        int w = j->ranks[i] >= 0 ? snprintf(buf + used, n - used, "%s%s (MPI rank %d)", used ? ", " : "",
                                            j->c.names[i], j->ranks[i])
                                 : snprintf(buf + used, n - used, "%s%s", used ? ", " : "", j->c.names[i]);
        if (w > 0 && (size_t)w < n - used)
            used += (size_t)w;
    }
    return missing;
}

/* The last lines of what the run's launchers printed, one line. */
static void launch_log_tail(const struct real_job *j, char *buf, size_t n)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/logs/launch.%d", j->dir, j->run);
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char tail[600];
    size_t got = 0;
    if (fseek(f, -(long)(sizeof tail - 1), SEEK_END) != 0)
        rewind(f);
    got = fread(tail, 1, sizeof tail - 1, f);
    fclose(f);
    tail[got] = '\0';
    while (got > 0 && (tail[got - 1] == '\n' || tail[got - 1] == ' '))
        tail[--got] = '\0';
    for (char *c = tail; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t')
            *c = ' ';
    snprintf(buf, n, "%s", tail);
}

/* Forks argv in a process group of its own, output to the run's log; it
 * dies with ckh (PR_SET_PDEATHSIG: a SIGKILLed ckh leaves no launcher). */
static pid_t spawn(const struct real_job *j, char *const argv[])
{
    char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/logs/launch.%d", j->dir, j->run);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* ckh died before the call above */
        _exit(127);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, 0);
    execv(argv[0], argv);
    _exit(127);
}

/* The rank program's arguments common to every process of run j->run. */
static int rank_args(struct real_job *j, char **argv, char (*bufs)[32])
{
    int a = 0;
    argv[a++] = j->exe;
    argv[a++] = "--scenario";
    argv[a++] = j->scn;
    snprintf(bufs[0], sizeof bufs[0], "%" PRIu64, j->seed);
    snprintf(bufs[1], sizeof bufs[1], "%d", j->run);
    snprintf(bufs[2], sizeof bufs[2], "%" PRId64, j->run == 1 ? (int64_t)-1 : j->c.sc->restart.resume_epoch);
    argv[a++] = "--seed";
    argv[a++] = bufs[0];
    argv[a++] = "--run";
    argv[a++] = bufs[1];
    argv[a++] = "--resume";
    argv[a++] = bufs[2];
    argv[a++] = "--dir";
    argv[a++] = j->dir;
    if (j->c.mode & CKH_RUN_NO_FAULTS)
        argv[a++] = "--reference";
    if (j->ckhfs)
        argv[a++] = "--ckhfs";
    return a;
}

/* The ranked nodes of the run under one mpirun (node of rank r as MPI rank r). */
static pid_t launch_group(struct real_job *j, char *ranks_list, size_t n)
{
    char *argv[LAUNCH_ARGS_MAX];
    char bufs[4][32];
    int a = 0, world = 0;
    size_t used = 0;
    for (int r = 0; r < j->c.n; r++)
        for (int i = 0; i < j->c.n; i++)
            if (j->ranks[i] == r && j->start[i]) {
                used += (size_t)snprintf(ranks_list + used, n - used, "%s%d", world ? "," : "", i);
                world++;
            }
    if (world == 0 || used >= n)
        return 0;
    snprintf(bufs[3], sizeof bufs[3], "%d", world);
    argv[a++] = j->launcher;
    if (strstr(j->exe, "ckh-rank-openmpi")) {
        /* Root (CI containers) and more ranks than cores (a 2-core runner):
         * Open MPI refuses both unless told; docs/REAL.md. */
        if (geteuid() == 0)
            argv[a++] = "--allow-run-as-root";
        argv[a++] = "--oversubscribe";
        argv[a++] = "--bind-to";
        argv[a++] = "none";
        /* Its session folder inside the run folder: a killed mpirun
         * leaves it behind, and the run folder goes at the end. */
        argv[a++] = "--mca";
        argv[a++] = "orte_tmpdir_base";
        argv[a++] = j->mpi_tmp;
    }
    argv[a++] = "-np";
    argv[a++] = bufs[3];
    a += rank_args(j, argv + a, bufs);
    argv[a++] = "--ranks";
    argv[a++] = ranks_list;
    argv[a] = NULL;
    return spawn(j, argv);
}

static pid_t launch_plain(struct real_job *j, int node)
{
    char *argv[LAUNCH_ARGS_MAX];
    char bufs[4][32];
    int a = rank_args(j, argv, bufs);
    snprintf(bufs[3], sizeof bufs[3], "%d", node);
    argv[a++] = "--node";
    argv[a++] = bufs[3];
    argv[a] = NULL;
    return spawn(j, argv);
}

/* Kills (SIGKILL) and reaps every process group of p not reaped yet. */
static void kill_groups(struct proc *p, size_t np)
{
    for (size_t i = 0; i < np; i++)
        if (!p[i].reaped) {
            kill(-p[i].pid, SIGKILL);
            while (waitpid(p[i].pid, NULL, 0) < 0 && errno == EINTR)
                ;
            p[i].reaped = true;
            p[i].status = -1;
        }
}

/* Waits for every process until the run's wall-clock limit; kills what
 * remains then (*hung), or at once when ckh is interrupted. Every process
 * group is killed and reaped on every path. */
static void wait_all(struct real_job *j, struct proc *p, size_t np, uint64_t limit_ns, bool *hung,
                     bool *late)
{
    const uint64_t start_ns = start_timeout_ns();
    bool start_checked = false;
    const uint64_t t0_ns = ckh_posix_now_ns(); /* the run's wall-clock limit */
    size_t left = np;
    for (size_t i = 0; i < np; i++)
        if (p[i].pid <= 0) {
            p[i].reaped = true;
            left--;
        }
    bool power_killed = false;
    while (left > 0) {
        if (ckh__cmd_interrupted()) {
            kill_groups(p, np);
            return;
        }
        if (!power_killed && j->ckhfs && ckh__real_power_lost(j)) {
            /* A power loss stops every machine, not only the one that saw it. */
            power_killed = true;
            for (size_t i = 0; i < np; i++)
                if (!p[i].reaped)
                    kill(-p[i].pid, SIGKILL);
        }
        for (size_t i = 0; i < np; i++) {
            int st;
            if (!p[i].reaped && waitpid(p[i].pid, &st, WNOHANG) == p[i].pid) {
                p[i].reaped = true;
                p[i].status = st;
                left--;
                kill(-p[i].pid, SIGKILL); /* whatever of its group is left */
            }
        }
        uint64_t el = ckh_posix_now_ns() - t0_ns;
        char none[8];
        if (left > 0 && !start_checked && el > start_ns) {
            /* The start deadline: a node that has not joined by now never
             * will (mpirun waits for it forever). */
            start_checked = true;
            if (missing_nodes(j, none, sizeof none) > 0) {
                *late = true;
                el = limit_ns + 1;
            }
        }
        if (left > 0 && el > limit_ns) {
            *hung = !*late;
            kill_groups(p, np);
            left = 0;
        }
        if (left > 0) {
            struct timespec ts = {.tv_nsec = 2000000};
            nanosleep(&ts, NULL);
        }
    }
}

/* After a run's launchers are reaped: whatever they left (a rank in a
 * process group of its own, as Open MPI makes them, that outlived its
 * mpirun) was reparented to ckh, the child subreaper during a real job:
 * killed and reaped here, so nothing of the run is left. */
static void reap_orphans(void)
{
    const pid_t me = getpid();
    for (int round = 0; round < 500; round++) {
        bool any = false;
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            char *end = NULL;
            long pid = strtol(de->d_name, &end, 10);
            if (pid <= 0 || *end)
                continue;
            char path[64], buf[512];
            snprintf(path, sizeof path, "/proc/%ld/stat", pid);
            FILE *f = fopen(path, "r");
            size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            if (f)
                fclose(f);
            buf[got] = '\0';
            char *rp = strrchr(buf, ')'); /* "pid (comm) state ppid ..." */
            char state;
            long ppid;
            if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2 || ppid != (long)me)
                continue;
            any = true;
            kill((pid_t)pid, SIGKILL);
            waitpid((pid_t)pid, NULL, WNOHANG);
        }
        if (d)
            closedir(d);
        if (!any)
            return;
        struct timespec ts = {.tv_nsec = 1000000};
        nanosleep(&ts, NULL);
    }
}

/* The process group of node `node` (-1: every node, -2: every ranked
 * node of the run) is g from now on (0: none); the mounts' kill_node
 * reads it. */
static void set_groups(struct real_job *j, int node, pid_t g)
{
    if (j->lock_ready)
        pthread_mutex_lock(&j->lock);
    for (int i = 0; i < j->c.n; i++)
        if (i == node || node == -1 || (node == -2 && j->ranks[i] >= 0 && j->start[i]))
            j->groups[i] = g;
    if (j->lock_ready)
        pthread_mutex_unlock(&j->lock);
}

/* The error of an interrupted job. */
static int interrupted(struct real_job *j)
{
    int sig = ckh__cmd_interrupted();
    return ckh__run_fail(&j->c, -EINTR, "interrupted by signal %d (%s)", sig, strsignal(sig));
}

/* Starts every node of the run and waits for them. */
static int launch_run(struct real_job *j, bool *hung)
{
    if (ckh__cmd_interrupted()) /* no run starts once ckh is told to stop */
        return interrupted(j);
    struct proc *p = calloc((size_t)j->c.n + 1, sizeof *p);
    char *list = malloc(8u * (size_t)j->c.n + 8);
    if (!p || !list) {
        free(p);
        free(list);
        return ckh__run_fail(&j->c, CKH_ENOMEM, "out of memory");
    }
    size_t np = 0;
    int rc = 0;
    set_groups(j, -1, 0);
    pid_t g = launch_group(j, list, 8u * (size_t)j->c.n + 8);
    if (g < 0)
        rc = ckh__run_fail(&j->c, CKH_EINTERNAL, "cannot start %s: %s", j->launcher, strerror(errno));
    else if (g > 0) {
        p[np++].pid = g;
        set_groups(j, -2, g);
    }
    for (int i = 0; i < j->c.n && rc == 0; i++) {
        if (j->ranks[i] >= 0 || !j->start[i])
            continue;
        pid_t pid = launch_plain(j, i);
        if (pid < 0)
            rc = ckh__run_fail(&j->c, CKH_EINTERNAL, "cannot start %s: %s", j->exe, strerror(errno));
        else {
            p[np++].pid = pid;
            set_groups(j, i, pid);
        }
    }
    /* job.timeout belongs to command jobs; a workload job gets their default. */
    bool late = false;
    wait_all(j, p, np, CKH_SCN_COMMAND_TIMEOUT_NS, hung, &late);
    reap_orphans();
    set_groups(j, -1, 0);
    char missing[512], tail[600];
    if (ckh__cmd_interrupted()) {
        rc = interrupted(j);
    } else if (rc == 0 && late) {
        missing_nodes(j, missing, sizeof missing);
        launch_log_tail(j, tail, sizeof tail);
        rc = ckh__run_fail(&j->c, CKH_EINTERNAL, "run %d: never joined within %.0f s "
                           "(CKH_REAL_START_TIMEOUT): %s; everything of the run killed [%s: %s]", j->run,
                           (double)start_timeout_ns() / 1e9, missing, j->launcher, tail[0] ? tail : "printed nothing");
    } else if (rc == 0 && g > 0 && p[0].status != 0) {
        /* mpirun ended in an error and no rank got as far as joining: it
         * failed to start the job (a broken MPI, no slots, its own ports). */
        bool any = false;
        for (int i = 0; i < j->c.n && !any; i++)
            any = j->ranks[i] >= 0 && j->start[i] && joined(j, i);
        if (!any) {
            launch_log_tail(j, tail, sizeof tail);
            int st = p[0].status;
            rc = ckh__run_fail(&j->c, CKH_EINTERNAL, "run %d: %s failed to start the ranks (%s %d): %s", j->run,
                               j->launcher, WIFSIGNALED(st) ? "signal" : "exit status",
                               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), tail[0] ? tail : "it printed nothing");
        }
    }
    free(p);
    free(list);
    return rc;
}

/* ---- reading a run back ---- */

/* The whole file at path (NUL-terminated) into *buf; -errno. */
static int slurp(const char *path, char **buf, size_t *n)
{
    return ckh_posix_read_file(path, RANK_FILE_BYTES_MAX, NULL, buf, n);
}

/* A rank program that stopped on bad input or its environment left
 * status/error.<run>.<pid>: "code message". 0 when none did. */
static int rank_errors(struct real_job *j)
{
    char dir[PATH_MAX], prefix[32];
    snprintf(dir, sizeof dir, "%s/status", j->dir);
    snprintf(prefix, sizeof prefix, "error.%d.", j->run);
    DIR *d = opendir(dir);
    struct dirent *de;
    int rc = 0;
    while (d && rc == 0 && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char path[PATH_MAX + 300], *text = NULL;
        size_t n = 0;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (slurp(path, &text, &n) != 0)
            continue;
        int code = CKH_EINTERNAL, used = 0;
        if (sscanf(text, "%d %n", &code, &used) < 1 || code >= 0)
            code = CKH_EINTERNAL;
        rc = ckh__run_fail(&j->c, code, "%s (%s)", text + used, j->exe);
        free(text);
    }
    if (d)
        closedir(d);
    return rc;
}

/* The node's phases, through the simulated runner's own tracking hook. */
static void read_track(struct real_job *j, int i)
{
    char path[PATH_MAX], *text = NULL;
    size_t n = 0;
    memset(&j->c.track[i], 0, sizeof j->c.track[i]);
    j->c.track[i].progress = -1;
    if (ckh__real_path(path, sizeof path, j->dir, "track", j->c.names[i], j->run) != 0 ||
        slurp(path, &text, &n) != 0)
        return;
    static const char *const phases[] = {"init", "epoch", "save", "load", "upload", "download", "exit",
                                         "collective"};
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (!next)
            break; /* a line cut by a kill was never announced whole */
        *next++ = '\0';
        char phase[32];
        long long e, s;
        if (sscanf(line, "%31s %lld %lld", phase, &e, &s) != 3)
            continue;
        const char *stat = NULL; /* the hook keeps static phase strings */
        for (size_t k = 0; k < sizeof phases / sizeof phases[0] && !stat; k++)
            if (!strcmp(phases[k], phase))
                stat = phases[k];
        struct ckh_op op = {.kind = CKH_OP_PHASE, .node = i, .phase = stat ? stat : "?", .epoch = e, .step = s};
        ckh__run_track_hook(&j->c, &op, NULL);
    }
    free(text);
}

/* Firings of run j->run into out (per scenario fault); sets j->fired. */
static void read_firings(struct real_job *j, struct ckh_scenario_run *out)
{
    j->fired = false;
    for (int i = 0; i < j->c.n; i++) {
        char path[PATH_MAX], *text = NULL;
        size_t n = 0;
        if (ckh__real_path(path, sizeof path, j->dir, "faults", j->c.names[i], j->run) != 0 ||
            slurp(path, &text, &n) != 0)
            continue;
        for (char *line = text, *next; line && *line; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            size_t rule, fault;
            char op[32], action[32];
            if (sscanf(line, "fired %zu %zu %31s %31s", &rule, &fault, op, action) != 4 ||
                fault >= j->c.sc->nfaults)
                continue;
            if (!strcmp(action, "call"))
                continue; /* an at-rest fault counts when its change lands (the launcher applies it) */
            j->fired = true;
            if (out->fault_fired)
                out->fault_fired[fault]++;
        }
        free(text);
    }
}

/* How node i ended: its status file, else killed. */
static void read_end(struct real_job *j, int i, struct ckh_run_info *ri)
{
    struct ckh_node_end *ne = &ri->nodes[i];
    char path[PATH_MAX], *text = NULL;
    size_t n = 0;
    read_track(j, i);
    ne->progress = j->c.track[i].progress;
    ne->resume_known = j->c.track[i].resume_known;
    ne->resume_point = j->c.track[i].resume_point;
    snprintf(ne->phase, sizeof ne->phase, "%s", j->c.track[i].phase);
    if (ckh__real_path(path, sizeof path, j->dir, "status", j->c.names[i], j->run) == 0 &&
        slurp(path, &text, &n) == 0) {
        ne->state = CKH_NODE_EXITED;
        ne->exit_status = atoi(text);
        free(text);
    } else {
        ne->state = CKH_NODE_KILLED;
        ri->crashed = true;
    }
}

static bool collective_failure(int rc)
{
    return rc == CKH_ETIMEOUT || rc == CKH_EPEER_DEAD || rc == CKH_EMISMATCH;
}

/* The run's records into the store, and the job result into out. */
static int read_run(struct real_job *j, struct ckh_run_info *ri, struct ckh_scenario_run *out)
{
    struct ckh__run_ctx *c = &j->c;
    const char *names[CKH_RUNNER_MAX_NODES];
    int rcs[CKH_RUNNER_MAX_NODES], rc;
    read_firings(j, out);
    for (int i = 0; i < c->n; i++) {
        names[i] = c->names[i];
        struct ckh_node_end *ne = &ri->nodes[i];
        if (j->parked[i]) { /* outside this run's world, as the simulator parks it */
            ne->state = CKH_NODE_PARKED;
            ne->exit_status = 0;
            ne->progress = -1;
            rcs[i] = 0;
            continue;
        }
        if (!j->start[i]) { /* done in an earlier run: it stays ended, as in the simulator */
            const struct ckh_node_end *prev = &out->runs[ri->run - 2].nodes[i];
            ne->state = prev->state;
            ne->exit_status = prev->exit_status;
            ne->progress = -1;
            rcs[i] = 0;
            continue;
        }
        read_end(j, i, ri);
        rcs[i] = ne->state == CKH_NODE_EXITED ? ne->exit_status : 0;
        if (ne->state == CKH_NODE_EXITED && collective_failure(ne->exit_status))
            out->timeout_seen = true;
        char path[PATH_MAX], msg[512], *text = NULL;
        size_t n = 0;
        if (ckh__real_path(path, sizeof path, j->dir, "results", c->names[i], j->run) != 0 ||
            slurp(path, &text, &n) != 0)
            continue;
        rc = ckh_records_read_jsonl(c->records, (size_t)i, text, n, path, msg, sizeof msg);
        free(text);
        if (rc != 0)
            return ckh__run_fail(c, rc, "%s's records: %s", c->names[i], msg);
    }
    struct ckh_job_result jr;
    if ((rc = ckh_records_collect(c->records, names, rcs, &jr)) != 0)
        return ckh__run_fail(c, rc, "collecting results: %s", ckh_strerror(rc));
    for (int i = 0; i < c->n && (size_t)i < jr.nnodes; i++) {
        ri->nodes[i].resumed_from = jr.nodes[i].resumed_from;
        ri->nodes[i].rc = jr.nodes[i].rc;
        if (collective_failure(jr.nodes[i].rc))
            out->timeout_seen = true;
    }
    out->corruption_seen |= jr.corruption_detected;
    out->oom_seen |= jr.device_oom;
    out->saves_failed = 0;
    for (size_t i = 0; i < jr.nnodes; i++)
        out->saves_failed += jr.nodes[i].saves_failed;
    ckh__run_job_copy_free(&out->got);
    if ((rc = ckh__run_job_copy(&out->got, &jr)) != 0)
        return ckh__run_fail(c, rc, "out of memory");
    return 0;
}

/* After a kill: node v's disk folders (or its simfs disks), seen by
 * `verify` as a restarted node would see them (one look for a shared
 * disk). */
static int real_verify_view(void *x, int v, bool *ok, char *detail, size_t n)
{
    struct real_job *j = x;
    if (j->ckhfs)
        return ckh__run_verify_simfs_view(&j->c, v, ok, detail, n);
    bool shared = ckh__run_all_shared(j->c.sc);
    struct ckh_fs *fs = NULL;
    if (ckh__real_node_fs(j->dir, j->c.sc, j->c.names[v], false, &fs) != 0)
        return CKH__EXEC_NO_VIEW;
    *ok = j->c.wl->verify(j->c.inst, fs, shared ? -1 : v, detail, n) == 0;
    ckh__real_fs_destroy(fs);
    return 0;
}

/* Which nodes run next: the driver's rule (ckh__exec_plan_restart). */
static int real_restart(void *x, const struct ckh_run_info *ri)
{
    struct real_job *j = x;
    ckh__exec_plan_restart(ri, j->c.n, j->ranks, j->parked, true, j->start);
    return 0;
}

/* Between run 1 and run 2 of a resizing job, as the simulated runner's
 * resize: the workload switches to the new world (its set_world), every
 * node takes its new rank, the ranked nodes all restart (one mpirun of
 * the new size) and the others are parked. The rank programs of run 2
 * call set_world themselves (real/rank_main.c). */
static int real_resize(void *x)
{
    struct real_job *j = x;
    struct ckh__run_ctx *c = &j->c;
    char msg[256] = "";
    int rc, world = 0;
    if ((rc = c->wl->set_world(c->inst, c->world_restart, msg, sizeof msg)) != 0)
        return ckh__run_fail(c, rc, "%s", msg[0] ? msg : "restart.world_size: the workload refused it");
    for (int i = 0; i < c->n; i++) {
        char name[CKH_NODE_NAME_LEN];
        if ((rc = c->wl->node(c->inst, i, name, sizeof name, &j->ranks[i])) != 0)
            return ckh__run_fail(c, rc, "workload '%s': node %d: %s", c->wl->name, i, ckh_strerror(rc));
        j->parked[i] = j->ranks[i] < 0;
        j->start[i] = !j->parked[i];
        world += !j->parked[i];
    }
    if (world != c->world_restart)
        return ckh__run_fail(c, CKH_EINVAL, "restart.world_size: workload '%s' gave %d ranks for world size %d",
                             c->wl->name, world, c->world_restart);
    return 0;
}

/* Marks the faults aimed at run `run` as armed (as arm.c does); a fault
 * the workload applies itself (gpu-oom) counts as fired. */
static void mark_armed(const struct ckh_scenario *sc, int run, struct ckh_scenario_run *out)
{
    for (size_t i = 0; out->fault_armed && i < sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &sc->faults[i];
        if (f->on.run != CKH_SCN_RUN_ANY && (int)f->on.run != run)
            continue;
        const struct ckh_fault_ops *ops = ckh_fault_of(f->act.kind);
        out->fault_armed[i] = true;
        if (!ops->arm && !ops->apply)
            out->fault_fired[i]++;
    }
}

/* One run: the planned nodes launched (one mpirun for the ranked ones),
 * the disks mounted around it, what they left read back. */
static int real_run(void *x, struct ckh_run_info *ri, const struct ckh_run_info *prev,
                    struct ckh_scenario_run *out)
{
    (void)prev; /* j->start holds the plan */
    struct real_job *j = x;
    const struct ckh_scenario *sc = j->c.sc;
    const bool with_faults = !(j->c.mode & CKH_RUN_NO_FAULTS);
    int rc;
    j->c.rec = with_faults ? out : NULL;
    j->run = ri->run;
    if (with_faults)
        mark_armed(sc, ri->run, out);
    bool hung = false;
    if (j->ckhfs && (rc = ckh__real_disks_before_run(j)) != 0)
        return rc;
    rc = launch_run(j, &hung);
    /* Every process is gone: the disks come down, crashes apply. The
     * message that tells most wins: a rank's own (bad input, its
     * environment), then the launch's, then the disks'. */
    char launch_err[sizeof j->c.err];
    memcpy(launch_err, j->c.err, sizeof launch_err);
    int drc = j->ckhfs ? ckh__real_disks_after_run(j) : 0;
    if (rc != 0)
        memcpy(j->c.err, launch_err, sizeof launch_err);
    int erc = rank_errors(j);
    if (erc != 0 || (erc = rc) != 0 || (erc = drc) != 0)
        return erc;
    ri->outcome = hung ? CKH_SIM_TIME_LIMIT : CKH_SIM_DONE;
    out->hang_seen |= hung;
    if ((rc = read_run(j, ri, out)) != 0)
        return rc;
    bool all_ok = !hung;
    for (int i = 0; i < j->c.n; i++)
        all_ok = all_ok && (j->parked[i] ||
                            (ri->nodes[i].state == CKH_NODE_EXITED && ri->nodes[i].exit_status == 0));
    ri->completed = all_ok;
    return 0;
}

static uint64_t real_trace_hash(void *x)
{
    (void)x;
    return 0; /* real processes keep no trace: the determinism oracle does not apply */
}

static const char *real_node_name(void *x, int i)
{
    return ((struct real_job *)x)->c.names[i];
}

const struct ckh_exec_ops ckh__exec_real = {
    .name = "real",
    .run = real_run,
    .verify_view = real_verify_view,
    .resize = real_resize,
    .restart = real_restart,
    .trace_hash = real_trace_hash,
    .node_name = real_node_name,
};

static int execute(struct real_job *j, struct ckh_scenario_run *out)
{
    struct ckh_exec_job job;
    ckh__run_exec_job(&j->c, &job);
    int rc = ckh__exec_runs(&ckh__exec_real, j, &job, out);
    if (rc == CKH_ENOMEM && !j->c.err[0])
        return ckh__run_fail(&j->c, rc, "out of memory");
    return rc;
}

int ckh__real_execute(const struct ckh_scenario *sc, uint64_t seed, unsigned mode, struct ckh_scenario_run *out,
                      char *err, size_t errlen)
{
    struct real_job j;
    memset(&j, 0, sizeof j);
    int rc = job_init(&j, sc, seed, mode);
    if (rc == 0)
        rc = execute(&j, out);
    if (rc == 0)
        out->interval = j.c.wl->interval ? j.c.wl->interval(j.c.inst) : 1;
    if (rc != 0)
        snprintf(err, errlen, "%s", j.c.err[0] ? j.c.err : ckh_strerror(rc));
    job_free(&j);
    return rc;
}

/* ---- the real platform as an executor (exec/exec.h) ---- */

static bool real_selects(const struct ckh_scenario *sc, const struct ckh_run_options *o)
{
    return ckh__real_selected(sc, o->real_platform);
}

/* The faulted job as real processes (the reference is the simulator's:
 * a real run that passes ends where the simulated uninterrupted run
 * ends). */
static int real_faulted(void *job, const struct ckh_scenario *sc, uint64_t seed, const struct ckh_run_options *o,
                        bool second, struct ckh_scenario_run *r, struct ckh_report_result *out, char *err,
                        size_t errlen)
{
    (void)job;
    (void)o;
    (void)out;
    (void)second; /* not asked: real processes keep no trace to compare */
    return ckh__real_execute(sc, seed, 0, r, err, errlen);
}

const struct ckh_executor ckh_executor_real = {
    .name = "real",
    .replay_flags = " --platform real",
    .selects = real_selects,
    .check = ckh__real_check,
    .reference = ckh__run_sim_reference,
    .faulted = real_faulted,
    .replay = ckh__run_sim_replay, /* the ranks keep no trace: the simulated job's */
};
