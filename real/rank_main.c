/* The rank program: ONE node of a scenario's job as a real process
 * (ckh-rank-openmpi, ckh-rank-mpich: this file built against each MPI
 * found). The launcher (harness/exec/mpi.c) starts it under
 * mpirun for the ranked nodes, or as a plain process for a node without
 * a rank:
 *
 *   ckh-rank-MPI --scenario FILE --seed N --run R --resume E --dir RUNDIR
 *                (--ranks I0,I1,... | --node I) [--reference] [--ckhfs]
 *
 * --ranks: MPI rank r runs node I_r (the node of collective rank r);
 * --node: node I, without MPI. The process parses FILE, resolves and
 * creates the workload instance exactly as the simulated runner does
 * (exec/workloads.h), switches it to restart.world_size from run 2 on
 * (set_world, as the runner's resize), calls before_run(R, E), arms the fault rules of run
 * R (none with --reference, which also switches the defects off), builds
 * the real environment (real_env.h) with the collectives (real_coll.h),
 * runs the node's program, and leaves in RUNDIR its records, phases,
 * fault firings and, last, its status (platform_real.h names the files).
 *
 * The node's files are its disks at their mount paths: real folders
 * (RUNDIR/disks/...), or with --ckhfs the launcher's ckhfs mounts of its
 * simulated disks (RUNDIR/mnt/...). With --ckhfs the process first leaves
 * RUNDIR/pids/PID (its node index) so that the launcher knows whose
 * operations reach the mount, and its fault script may carry out
 * crashes, power loss, fsync-fail and at-rest faults with the launcher
 * (real_faults.h).
 *
 * Exit status: 0 when the node's program completed the job, 1 when it
 * returned an error (its code is in the status file), 2 bad arguments or
 * scenario, 3 the environment (MPI failing to start, the run folder).
 *
 * This is the one file of real/ that uses harness/: the program that
 * joins the layers, as harness/cli/main.c joins ckh's.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ckh/err.h"
#include "real_coll.h"
#include "real_env.h"
#include "real_faults.h"
#include "real_nccl.h"
#include "exec/mpi.h"
#include "exec/mpi_fs.h"
#include "exec/workloads.h"
#include "model/fault.h"
#include "search/fuzz.h"

#define MSG 1024

struct args {
    const char *scenario; /* --scenario */
    uint64_t seed;        /* --seed */
    int run;              /* --run (1-based) */
    int64_t resume;       /* --resume (-1: latest) */
    const char *dir;      /* --dir */
    const char *ranks;    /* --ranks (NULL: --node) */
    int node;             /* --node */
    bool reference;       /* --reference */
    bool ckhfs;           /* --ckhfs */
};

/* What the process holds, for exit paths (the node may call exit()). */
struct rank {
    struct args a;                 /* the command line */
    struct ckh_scenario *sc;       /* parsed scenario */
    struct ckh_resolved res;       /* its workload */
    struct ckh_wl_option *opts;    /* the job's options */
    struct ckh_workload_job job;   /* as the workload sees it */
    void *inst;                    /* the instance */
    int n;                         /* nodes */
    char (*names)[CKH_NODE_NAME_LEN]; /* their names */
    int node;                      /* this process's node */
    bool mpi;                      /* MPI was started */
    struct ckh_coll *coll;         /* collectives (NULL: none) */
    struct ckh_coll *nccl;         /* NCCL collectives over coll (NULL: none) */
    struct ckh_real_faults *faults; /* fault script */
    struct ckh_env *env;           /* the node's environment */
    struct ckh_fs *fs;             /* its files: every disk at its mount path */
    bool ended;                    /* the status is written */
};

static int usage(const char *why)
{
    fprintf(stderr, "ckh-rank: %s\nusage: ckh-rank-MPI --scenario FILE --seed N --run R --resume E "
                    "--dir RUNDIR (--ranks I0,I1,... | --node I) [--reference] [--ckhfs]\n", why);
    return 2;
}

static bool num(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, struct args *a)
{
    int64_t v;
    *a = (struct args){.run = 1, .resume = -1, .node = -1};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--reference") || !strcmp(k, "--ckhfs")) {
            *(k[2] == 'r' ? &a->reference : &a->ckhfs) = true;
            continue;
        }
        if (!val)
            return usage("an option lacks its value");
        i++;
        if (!strcmp(k, "--scenario"))
            a->scenario = val;
        else if (!strcmp(k, "--dir"))
            a->dir = val;
        else if (!strcmp(k, "--ranks"))
            a->ranks = val;
        else if (!strcmp(k, "--seed") && num(val, 0, INT64_MAX, &v))
            a->seed = (uint64_t)v;
        else if (!strcmp(k, "--run") && num(val, 1, 1000000, &v))
            a->run = (int)v;
        else if (!strcmp(k, "--resume") && num(val, -1, INT64_MAX, &v))
            a->resume = v;
        else if (!strcmp(k, "--node") && num(val, 0, 1023, &v))
            a->node = (int)v;
        else
            return usage("unknown option or bad value");
    }
    if (!a->scenario || !a->dir || (!a->ranks) == (a->node < 0))
        return usage("--scenario, --dir and one of --ranks or --node are required");
    return 0;
}

/* The workload instance, as the simulated runner builds it. */
static int build_job(struct rank *k, char *msg)
{
    struct ckh_scn_options so;
    struct ckh_scn_error e;
    int rc;
    ckh_fuzz_scn_options(&so);
    if ((rc = ckh_scenario_parse_file(k->a.scenario, &so, &k->sc, &e)) != 0) {
        ckh_scn_error_format(&e, msg, MSG);
        return rc;
    }
    if ((rc = ckh_workloads_resolve(k->sc, &k->res, msg, MSG)) != 0)
        return rc;
    k->opts = calloc(k->sc->job.noptions + 1, sizeof *k->opts);
    if (!k->opts)
        return CKH_ENOMEM;
    ckh_workloads_job(k->sc, &k->res, k->a.seed, k->a.reference ? CKH_RUN_REFERENCE : 0, &k->job, k->opts);
    if ((rc = k->res.workload->create(&k->job, &k->inst, msg, MSG)) != 0)
        return rc;
    k->n = k->res.workload->node_count(k->inst);
    if (k->n < 1 || k->n > 1024 || !(k->names = calloc((size_t)k->n, sizeof *k->names)))
        return ckh_errf(msg, MSG, CKH_EINVAL, "the workload has %d nodes", k->n);
    for (int i = 0; i < k->n; i++) {
        int rank;
        if ((rc = k->res.workload->node(k->inst, i, k->names[i], sizeof k->names[i], &rank)) != 0)
            return ckh_errf(msg, MSG, rc, "node %d: %s", i, ckh_strerror(rc));
    }
    /* A resizing job (restart.world_size) runs its restarts in the new
     * world, as the simulated runner switches it before run 2. */
    int world = 0;
    for (int i = 0; i < k->n; i++) {
        int rank = -1;
        k->res.workload->node(k->inst, i, k->names[i], sizeof k->names[i], &rank);
        world += rank >= 0;
    }
    if (k->a.run >= 2 && !k->a.reference && k->sc->restart.world_size && k->res.workload->set_world &&
        (int)k->sc->restart.world_size != world &&
        (rc = k->res.workload->set_world(k->inst, (int)k->sc->restart.world_size, msg, MSG)) != 0)
        return rc;
    if (k->res.workload->before_run)
        k->res.workload->before_run(k->inst, k->a.run, k->a.resume);
    return 0;
}

#define NCCL_SETUP_TIMEOUT_NS (60ull * 1000000000ull)

/* Whether the job asks for NCCL (ddp-train's options.devices). */
static bool wants_nccl(const struct ckh_scenario *sc)
{
    for (size_t i = 0; i < sc->job.noptions; i++)
        if (!strcmp(sc->job.options[i].key, "devices") && sc->job.options[i].text &&
            !strcmp(sc->job.options[i].text, "nccl"))
            return true;
    return false;
}

/* Which node this process runs; with --ranks, MPI starts here. */
static int pick_node(struct rank *k, int *argc, char ***argv, char *msg)
{
    if (!k->a.ranks) {
        k->node = k->a.node;
    } else {
        int rank = 0, world = 0, rc;
        if ((rc = ckh_real_mpi_init(argc, argv, &rank, &world, msg, MSG)) != 0)
            return rc;
        k->mpi = true;
        const char *p = k->a.ranks;
        int r = 0;
        k->node = -1;
        for (; *p && r <= rank; r++) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (r == rank)
                k->node = end != p ? (int)v : -1;
            p = *end == ',' ? end + 1 : end;
        }
        int listed = 1;
        for (const char *q = k->a.ranks; *q; q++)
            listed += *q == ',';
        if (listed != world)
            return ckh_errf(msg, MSG, CKH_EINVAL, "--ranks lists %d nodes but mpirun started %d ranks",
                            listed, world);
        if ((rc = ckh_real_coll_create(&k->coll)) != 0)
            return ckh_errf(msg, MSG, rc, "%s: cannot create the communicator", ckh_real_mpi_name());
        /* options: {devices: nccl}: all-reduces through NCCL on this
         * machine's GPUs; no NCCL or no device is the environment. */
        char why[MSG];
        if (wants_nccl(k->sc) && (rc = ckh_real_nccl_create(k->coll, NCCL_SETUP_TIMEOUT_NS, &k->nccl, why, MSG)) != 0)
            return ckh_errf(msg, MSG, CKH_EINTERNAL, "options.devices: nccl: %.900s", why);
    }
    if (k->node < 0 || k->node >= k->n)
        return ckh_errf(msg, MSG, CKH_EINVAL, "node %d is not a node of the job (0..%d)", k->node, k->n - 1);
    int rank = -1;
    k->res.workload->node(k->inst, k->node, k->names[k->node], sizeof k->names[k->node], &rank);
    if (k->coll && rank != ckh_coll_rank(k->coll))
        return ckh_errf(msg, MSG, CKH_EINVAL, "node %s has collective rank %d, MPI gave it %d",
                        k->names[k->node], rank, ckh_coll_rank(k->coll));
    return 0;
}

static int arm(struct rank *k, char *msg)
{
    struct ckh_fault_rule *rules = NULL;
    size_t *fault_of = NULL, nrules = 0;
    int rc = 0;
    if (!k->a.reference &&
        (rc = ckh_fault_rules_of_run(k->sc, k->a.run, k->n, ckh_node_name_at, k->names, &rules,
                              &fault_of, &nrules, msg, MSG)) != 0)
        return rc;
    struct ckh_real_rule *rr = calloc(nrules + 1, sizeof *rr);
    char state[1024], log[1024], notes[1024];
    char run_name[32];
    snprintf(run_name, sizeof run_name, "state.%d", k->a.run);
    if (!rr) {
        rc = CKH_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nrules; i++)
        rr[i] = (struct ckh_real_rule){.rule = rules[i], .fault = fault_of[i]};
    snprintf(state, sizeof state, "%s/faults/%s", k->a.dir, run_name);
    ckh__real_path(log, sizeof log, k->a.dir, "faults", k->names[k->node], k->a.run);
    snprintf(notes, sizeof notes, "%s/faults", k->a.dir);
    struct ckh_real_faults_config fc = {.seed = k->a.seed, .rules = rr, .nrules = nrules,
                                        .state_path = state, .log_path = log,
                                        .notes_dir = k->a.ckhfs ? notes : NULL, .run = k->a.run};
    rc = ckh_real_faults_create(&fc, &k->faults, msg, MSG);
out:
    free(rr);
    free(rules);
    free(fault_of);
    return rc;
}

/* The status file: the node program's return code (written last). */
static void write_status(struct rank *k, int status)
{
    char path[1024];
    if (k->ended || ckh__real_path(path, sizeof path, k->a.dir, "status", k->names[k->node], k->a.run) != 0)
        return;
    k->ended = true;
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%d\n", status) < 0 || fclose(f) != 0)
        fprintf(stderr, "ckh-rank: cannot write %s: %s\n", path, strerror(errno));
}

/* A stop on bad input or the environment, for the launcher to report:
 * status/error.<run>.<pid> holds "code message". */
static void write_error(const struct rank *k, int code, const char *msg)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/status/error.%d.%ld", k->a.dir, k->a.run, (long)getpid());
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d %s", code, msg);
        fclose(f);
    }
}

static void release(struct rank *k)
{
    ckh_real_env_destroy(k->env);
    k->env = NULL;
    ckh__real_fs_destroy(k->fs);
    k->fs = NULL;
    ckh_real_faults_destroy(k->faults);
    k->faults = NULL;
    bool nccl_failed = ckh_real_nccl_failed(k->nccl);
    ckh_real_nccl_destroy(k->nccl);
    k->nccl = NULL;
    struct ckh_coll *c = k->coll;
    bool failed = ckh_real_coll_failed(c) || nccl_failed;
    if (k->mpi && !failed)
        ckh_real_coll_destroy(c);
    k->coll = NULL;
    if (k->mpi)
        ckh_real_mpi_finalize(failed ? c : NULL);
    k->mpi = false;
    if (k->inst)
        k->res.workload->destroy(k->inst);
    k->inst = NULL;
    free(k->names);
    free(k->opts);
    ckh_scenario_free(k->sc);
}

/* The node called exit(status) (node ops): what main would do after it. */
static void on_node_exit(void *ctx, int status)
{
    struct rank *k = ctx;
    write_status(k, status);
    release(k);
}

/* RUNDIR/status/joined.<node>.<run>: the process started, MPI is up and
 * the communicator made (the launcher's start deadline waits for it). */
static int announce_joined(const struct rank *k, char *msg)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/status/joined.%s.%d", k->a.dir, k->names[k->node], k->a.run);
    FILE *f = fopen(path, "w");
    if (!f || fclose(f) != 0)
        return ckh_errf(msg, MSG, CKH_EINTERNAL, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* --ckhfs: RUNDIR/pids/PID says which node this process is, before it
 * asks the mount anything. */
static int register_pid(const struct rank *k, char *msg)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/pids/%ld", k->a.dir, (long)getpid());
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%d\n", k->node) < 0 || fclose(f) != 0)
        return ckh_errf(msg, MSG, CKH_EINTERNAL, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

static int run_node(struct rank *k, char *msg)
{
    char rec[1024], track[1024];
    int rc;
    const char *name = k->names[k->node];
    if (k->a.ckhfs && (rc = register_pid(k, msg)) != 0)
        return rc;
    if ((rc = ckh__real_path(rec, sizeof rec, k->a.dir, "results", name, k->a.run)) != 0 ||
        (rc = ckh__real_path(track, sizeof track, k->a.dir, "track", name, k->a.run)) != 0)
        return ckh_errf(msg, MSG, rc, "the run folder's paths are too long");
    /* Every disk of the job at its mount path: its folder, or its ckhfs mount. */
    if ((rc = ckh__real_node_fs(k->a.dir, k->sc, name, k->a.ckhfs, &k->fs)) != 0)
        return ckh_errf(msg, MSG, rc, "the node's disks under %s: %s", k->a.dir, ckh_strerror(rc));
    struct ckh_real_env_config ec = {.fs = k->fs, .seed = k->a.seed, .node_name = name,
                                     .node_index = k->node, .coll = k->nccl ? k->nccl : k->coll,
                                     .gpu = k->nccl ? ckh_real_nccl_gpu(k->nccl) : NULL,
                                     .faults = k->faults,
                                     .record_path = rec, .track_path = track, .on_exit = on_node_exit,
                                     .on_exit_ctx = k};
    if ((rc = ckh_real_env_create(&ec, &k->env, msg, MSG)) != 0)
        return rc;
    if (k->coll)
        ckh_real_coll_set_gate(k->coll, ckh_real_env_gate, k->env);
    if (k->nccl)
        ckh_real_nccl_set_gate(k->nccl, ckh_real_env_gate, k->env);
    int status = k->res.workload->node_main(k->env, k->inst, k->node);
    write_status(k, status);
    return status;
}

int main(int argc, char **argv)
{
    static struct rank k; /* static: the node's exit() reaches it through on_exit */
    char msg[MSG] = "";
    int rc;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the launcher gone: so is the node */
    if ((rc = parse_args(argc, argv, &k.a)) != 0)
        return rc;
    int code = 2;
    if ((rc = build_job(&k, msg)) != 0)
        goto out;
    code = 3;
    if ((rc = pick_node(&k, &argc, &argv, msg)) != 0)
        goto out;
    if ((rc = announce_joined(&k, msg)) != 0)
        goto out;
    code = 2;
    if ((rc = arm(&k, msg)) != 0)
        goto out;
    code = 3;
    if ((rc = run_node(&k, msg)) != 0 && !k.ended)
        goto out;
    code = rc == 0 ? 0 : 1;
    msg[0] = '\0';
out:
    if (msg[0]) {
        fprintf(stderr, "ckh-rank (%s, node %d): %s\n", ckh_real_mpi_name(), k.node, msg);
        write_error(&k, rc ? rc : CKH_EINTERNAL, msg);
    }
    release(&k);
    return code;
}
