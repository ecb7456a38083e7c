/* `ckh run` and `ckh fuzz` on many machines: which rank this process is,
 * and the merge folder through which rank 0 collects every rank's results.
 * ckh links no MPI: a launcher (mpirun of Open MPI or MPICH, Slurm's srun,
 * a Slurm job array) only starts N copies of the same command, and each
 * copy learns its rank from the environment the launcher set.
 *
 * Specification (user-facing: docs/MULTIHOST.md):
 *   - Sources of the rank, innermost launcher first:
 *       mpi    OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (Open MPI) and
 *              PMI_RANK / PMI_SIZE (MPICH's Hydra, srun --mpi=pmi2); when
 *              both are set they must agree;
 *       srun   SLURM_PROCID / SLURM_STEP_NUM_TASKS: a task of a job step.
 *              A batch script (SLURM_PROCID without SLURM_STEP_NUM_TASKS)
 *              is one process, not a rank;
 *       array  SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT: rank (ID - MIN) /
 *              STEP of COUNT. Only with --distributed slurm-array: an array
 *              over seeds or folders is common and must not split itself.
 *     --distributed auto (the default) takes mpi, else srun, else none (a
 *     single machine); mpirun inside a Slurm allocation is therefore
 *     ranked by MPI, whatever Slurm variables its daemons passed on.
 *     --distributed mpi|srun|slurm-array takes only that source (missing:
 *     bad input); off reads no variable. --rank I --world N names the rank
 *     explicitly; with a source (not off) that says a world above 1, or
 *     that the mode names, the two must agree.
 *     A variable that is set but not a number, a rank without its size, a
 *     rank not below its world, disagreeing sources: bad input (exit 2).
 *   - World 1 is a single-machine run: no merge folder is used.
 *   - The merge folder is BASE/.ckh-merge, BASE being --merge-dir or the
 *     verb's default (`run`: the folder of its first report; `fuzz`: --out).
 *     It must be one folder every host sees (a shared filesystem). It holds
 *       run-id        the run id (created once, by link(): never replaced);
 *       joined.R      "host pid" of the process that took rank R;
 *       part.R        rank R's partial results (R >= 1), see below;
 *       merge-done    rank 0's exit status when it stopped without a merge;
 *       .tmp.*        files being written (renamed or linked into place).
 *     A process joins by claiming run-id (an existing one must hold the
 *     same run id: another run's partials are refused, exit 2) and then
 *     joined.R (an existing one means two processes took rank R: exit 2).
 *     Nothing is ever overwritten; rank 0 removes the folder after a merge
 *     and leaves it in place otherwise, for a person to look at.
 *   - The run id is --run-id, else the launcher's job (Open MPI's job id,
 *     Slurm's job and step, the array's job id), else "opts-" and the
 *     options' fingerprint (MPICH's Hydra, --rank/--world: give --run-id).
 *   - A partial file: magic "CKHPART1", u32 0x01020304 (byte order), u32
 *     format version, then strings (u32 length, bytes) and native u64s as
 *     cli/wire.h writes them: ckh's version, the verb, the run id, the
 *     options' fingerprint (u64), rank, world, exit status (u64 each), the
 *     error (NULL: none), host, pid (u64), the payload (u64 length, bytes,
 *     u64 ckh_hash64 of them). The payload is the verb's own (cli_run.c,
 *     fuzz_cmd.c).
 *   - Rank 0 waits for part.1 .. part.N-1 up to --merge-timeout (default
 *     30m) after its own share is done; past it, it names every rank that
 *     did not deliver (and whether it joined, from which host and pid) and
 *     exits 3.
 *   - Exit statuses: rank 0 exits with the merged status (that of a
 *     single-machine run). Under mpi and srun a rank above 0 waits, after
 *     delivering, until rank 0 has merged (part.R removed) or given up
 *     (merge-done), at most --merge-timeout, and then exits 0 under mpi
 *     (mpirun's status is then rank 0's: Open MPI ends the job at the first
 *     non-zero exit, MPICH ORs the statuses) or its own status under srun
 *     (whose status is the highest, the merged one). A rank of an array,
 *     or named by --rank, exits with its own status at once.
 *
 * Map: options · detection · the merge folder · partials.
 */
#ifndef CKH_CLI_DIST_H
#define CKH_CLI_DIST_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- options ---- */

/* getopt_long values of the options below, shared by run and fuzz. */
enum {
    CKH_DIST_OPT_DISTRIBUTED = 0x1000, /* --distributed MODE */
    CKH_DIST_OPT_RANK,                 /* --rank I */
    CKH_DIST_OPT_WORLD,                /* --world N */
    CKH_DIST_OPT_MERGE_DIR,            /* --merge-dir DIR */
    CKH_DIST_OPT_MERGE_TIMEOUT,        /* --merge-timeout DURATION */
    CKH_DIST_OPT_RUN_ID,               /* --run-id TEXT */
    CKH_DIST_OPT__END,
};

/* The entries of a verb's getopt_long table, in this order. */
#define CKH_DIST_LONGOPTS                                                      \
    {"distributed", required_argument, NULL, CKH_DIST_OPT_DISTRIBUTED},        \
    {"rank", required_argument, NULL, CKH_DIST_OPT_RANK},                      \
    {"world", required_argument, NULL, CKH_DIST_OPT_WORLD},                    \
    {"merge-dir", required_argument, NULL, CKH_DIST_OPT_MERGE_DIR},            \
    {"merge-timeout", required_argument, NULL, CKH_DIST_OPT_MERGE_TIMEOUT},    \
    {"run-id", required_argument, NULL, CKH_DIST_OPT_RUN_ID}

/* The options' lines of a verb's usage text. */
#define CKH_DIST_USAGE                                                                        \
    "  --distributed MODE   auto (default: the rank from mpirun or srun), off, mpi, srun,\n"    \
    "                       slurm-array (docs/MULTIHOST.md)\n"                                  \
    "  --rank I --world N   this process is rank I (0-based) of N\n"                            \
    "  --merge-dir DIR      folder all ranks see, for the partial results\n"                    \
    "  --merge-timeout D    how long rank 0 waits for the others (default 30m)\n"               \
    "  --run-id TEXT        names the run in the merge folder (default: the launcher's job)\n"

#define CKH_DIST_MERGE_TIMEOUT_MS_DEFAULT (30u * 60u * 1000u)
#define CKH_DIST_WORLD_MAX 65536 /* ranks at most */
#define CKH_DIST_RUN_ID_LEN 96   /* run id, NUL included */

/* Where the rank comes from (--distributed). */
enum ckh_dist_mode {
    CKH_DIST_AUTO = 0, /* mpi, else srun, else a single machine */
    CKH_DIST_OFF,      /* the environment is not read: a single machine, or --rank */
    CKH_DIST_MPI,      /* Open MPI or MPICH variables only */
    CKH_DIST_SRUN,     /* a Slurm job step only */
    CKH_DIST_ARRAY,    /* a Slurm job array only */
};

/* What the command line said. Zero-initialised means: auto, no explicit
 * rank, no merge folder, the default time limit. */
struct ckh_dist_opts {
    enum ckh_dist_mode mode;   /* --distributed */
    bool have_rank;            /* --rank given */
    bool have_world;           /* --world given */
    uint32_t rank;             /* --rank I */
    uint32_t world;            /* --world N */
    const char *merge_dir;     /* --merge-dir (NULL: the verb's default) */
    uint64_t merge_timeout_ms; /* --merge-timeout (0: the default) */
    const char *run_id;        /* --run-id (NULL: from the launcher) */
};

/* Whether getopt value ch is one of the options above. */
bool ckh_dist_is_option(int ch);

/* Applies option ch (CKH_DIST_OPT_*) with its value to *o. Returns 0, or
 * CKH_EINVAL with "--NAME expects ..." in msg (n bytes). */
int ckh_dist_option(struct ckh_dist_opts *o, int ch, const char *value, char *msg, size_t n);

/* ---- detection ---- */

/* This process's place in the run. */
struct ckh_dist {
    uint32_t rank;                     /* 0-based */
    uint32_t world;                    /* ranks (1: a single machine) */
    char source[160];                  /* how it was found, for messages: "Open MPI
                                          (OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=3)" */
    char launcher_id[CKH_DIST_RUN_ID_LEN]; /* the launcher's job ("" when it names none) */
    enum ckh_dist_mode from;           /* the source: MPI, SRUN, ARRAY, or OFF for
                                          --rank and a single machine */
};

/* Reads the environment through get (getenv, or a test's table; it
 * returns NULL for an unset variable) as the specification says and fills
 * *d. Returns 0, or CKH_EINVAL with the contradiction or the bad variable
 * named in msg (n bytes): the command then exits 2. */
int ckh_dist_detect(const struct ckh_dist_opts *o, const char *(*get)(const char *name),
                    struct ckh_dist *d, char *msg, size_t n);

/* ---- the merge folder ---- */

/* One rank's handle on the merge folder. */
struct ckh_dist_merge {
    char dir[1024];                   /* BASE/.ckh-merge */
    char run_id[CKH_DIST_RUN_ID_LEN]; /* the run id */
    const char *verb;                 /* "run" or "fuzz" (static) */
    uint64_t fingerprint;             /* the options that decide the results */
    uint32_t rank, world;             /* this process */
    char host[256];                   /* this host's name */
};

/* Joins the run: makes BASE (one level) and BASE/.ckh-merge when missing,
 * claims the run id and rank d->rank as the specification says. The run
 * id is o->run_id, else d->launcher_id, else "opts-" and the fingerprint.
 * Returns 0; CKH_EEXISTS (another run's partials, or the rank taken twice:
 * exit 2) or -errno (the folder cannot be made or written: exit 3), with
 * the reason in msg. */
int ckh_dist_join(struct ckh_dist_merge *m, const char *base, const struct ckh_dist_opts *o,
                  const struct ckh_dist *d, const char *verb, uint64_t fingerprint, char *msg,
                  size_t n);

/* A rank's results as rank 0 reads them. */
struct ckh_dist_part {
    uint32_t rank;    /* whose */
    int status;       /* the exit status that rank gives */
    char *error;      /* why it has no results (malloc'd; NULL: it has) */
    char *host;       /* where it ran (malloc'd) */
    uint64_t pid;     /* its process */
    void *payload;    /* the verb's bytes (malloc'd) */
    size_t len;       /* their count */
};

/* Rank R >= 1: writes its partial (status, error or NULL, payload) under a
 * temporary name and links it to part.R. Returns 0, CKH_EEXISTS (part.R
 * exists: rank R delivered twice) or -errno, with msg. */
int ckh_dist_deliver(const struct ckh_dist_merge *m, int status, const char *error,
                     const void *payload, size_t len, char *msg, size_t n);

/* Rank 0: waits up to timeout_ms (0: the default) for part.1 .. part.N-1,
 * reads and checks each (version, run id, world, fingerprint). *parts is a
 * malloc'd array of world entries (entry 0 unused), free with
 * ckh_dist_parts_free. Returns 0; CKH_ETIMEOUT (msg names every rank
 * missing: exit 3); -EINTR (a caught signal); CKH_EINVAL (a rank ran other
 * options: exit 2); CKH_EFOREIGN, CKH_EVERSION, CKH_ECORRUPT,
 * CKH_ETRUNCATED (a partial ckh cannot read: exit 3) or CKH_ENOMEM. */
int ckh_dist_collect(const struct ckh_dist_merge *m, uint64_t timeout_ms,
                     struct ckh_dist_part **parts, char *msg, size_t n);

void ckh_dist_parts_free(struct ckh_dist_part *parts, uint32_t world);

/* Rank 0, after a merge: removes the files of the merge folder named in
 * the specification and the folder itself (left alone when it holds
 * anything else). */
void ckh_dist_cleanup(const struct ckh_dist_merge *m);

/* Rank 0, when it stops without a merge (the folder stays): writes
 * merge-done with its exit status, so that the other ranks stop waiting. */
void ckh_dist_give_up(const struct ckh_dist_merge *m, int status);

/* Rank R >= 1, after delivering: waits up to timeout_ms (0: the default)
 * until rank 0 has merged (part.R is gone: returns 0) or given up
 * (merge-done: returns CKH_ESTATE with rank 0's status in *status).
 * Returns CKH_ETIMEOUT past the limit, -EINTR on a caught signal. */
int ckh_dist_await_merge(const struct ckh_dist_merge *m, uint64_t timeout_ms, int *status);

/* Whether a rank above 0 waits for rank 0's merge before it exits, and
 * exits 0 when its results were merged: under mpirun (Open MPI ends the
 * whole job at the first process that exits non-zero; MPICH's mpiexec
 * ORs the statuses) and srun (whose --kill-on-bad-exit would end rank 0
 * too). A rank of an array, or named by --rank, exits at once with its
 * own status. */
bool ckh_dist_waits(const struct ckh_dist *d);

/* Rank R >= 1 after delivering, status being its own exit status: waits
 * for the merge where ckh_dist_waits says so and returns the status the
 * rank exits with (the rules of the specification). */
int ckh_dist_rank_exit(const struct ckh_dist_merge *m, const struct ckh_dist *d,
                       uint64_t timeout_ms, const char *verb, int status);

/* The exit status of a ckh_dist_* error code: 2 for CKH_EINVAL and
 * CKH_EEXISTS, 128 + the signal for -EINTR, else 3. */
int ckh_dist_exit_status(int rc);

/* FNV-style fingerprint helpers: folds a string (NULL folds a marker) or
 * a number into h. */
uint64_t ckh_dist_fold_str(uint64_t h, const char *s);
uint64_t ckh_dist_fold_u64(uint64_t h, uint64_t v);

#endif
