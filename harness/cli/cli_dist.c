/* Ranks and the merge folder of a run on many machines (see cli_dist.h,
 * whose header comment is the specification).
 *
 * Map: options · detection · the merge folder (join, deliver, collect,
 * cleanup) · fingerprints.
 */
#include "cli/cli_dist.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "ckh/rng.h"
#include "ckh/version.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/wire.h"
#include "exec/pool.h"
#include "model/scenario.h"

#define PART_MAGIC "CKHPART1"
#define PART_BOM 0x01020304u
#define PART_FORMAT 1u
#define MERGE_SUBDIR ".ckh-merge"
#define POLL_MS_MIN 20u  /* first wait between looks at the folder */
#define POLL_MS_MAX 500u /* longest wait between looks */

/* ---- options ---- */

static const char *const mode_names[] = {
    [CKH_DIST_AUTO] = "auto", [CKH_DIST_OFF] = "off", [CKH_DIST_MPI] = "mpi",
    [CKH_DIST_SRUN] = "srun", [CKH_DIST_ARRAY] = "slurm-array",
};

bool ckh_dist_is_option(int ch)
{
    return ch >= CKH_DIST_OPT_DISTRIBUTED && ch < CKH_DIST_OPT__END;
}

/* A run id is what a file name may hold safely on every filesystem. */
static bool run_id_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len >= CKH_DIST_RUN_ID_LEN - 8)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return s[0] != '.';
}

int ckh_dist_option(struct ckh_dist_opts *o, int ch, const char *value, char *msg, size_t n)
{
    uint64_t v = 0;
    int rc = 0;
    switch (ch) {
    case CKH_DIST_OPT_DISTRIBUTED:
        for (size_t i = 0; i < sizeof mode_names / sizeof mode_names[0]; i++)
            if (strcmp(value, mode_names[i]) == 0) {
                o->mode = (enum ckh_dist_mode)i;
                return 0;
            }
        return ckh_errf(msg, n, CKH_EINVAL, "--distributed expects auto, off, mpi, srun or "
                        "slurm-array, got '%s'", value);
    case CKH_DIST_OPT_RANK:
        rc = ckh_opt_u64("rank", value, 0, CKH_DIST_WORLD_MAX - 1, &v, msg, n);
        o->rank = (uint32_t)v;
        o->have_rank = rc == 0;
        return rc;
    case CKH_DIST_OPT_WORLD:
        rc = ckh_opt_u64("world", value, 1, CKH_DIST_WORLD_MAX, &v, msg, n);
        o->world = (uint32_t)v;
        o->have_world = rc == 0;
        return rc;
    case CKH_DIST_OPT_MERGE_DIR:
        if (!value[0])
            return ckh_errf(msg, n, CKH_EINVAL, "--merge-dir expects a folder, got ''");
        o->merge_dir = value;
        return 0;
    case CKH_DIST_OPT_MERGE_TIMEOUT:
        if (ckh_scn_parse_duration(value, &v) != 0 || v < 1000000u)
            return ckh_errf(msg, n, CKH_EINVAL, "--merge-timeout expects a duration of at least "
                            "1ms such as 90s or 30m, got '%s'", value);
        o->merge_timeout_ms = v / 1000000u;
        return 0;
    case CKH_DIST_OPT_RUN_ID:
        if (!run_id_ok(value))
            return ckh_errf(msg, n, CKH_EINVAL, "--run-id expects 1 to %d letters, digits, '.', "
                            "'_' or '-' (not starting with '.'), got '%s'",
                            CKH_DIST_RUN_ID_LEN - 9, value);
        o->run_id = value;
        return 0;
    default: return ckh_errf(msg, n, CKH_EINVAL, "unknown option");
    }
}

/* ---- detection ---- */

/* What one source says. */
struct found {
    bool present;        /* its variables are set */
    uint32_t rank;       /* 0-based */
    uint32_t world;      /* ranks */
    char what[160];      /* its name and variables, for messages */
    char id[CKH_DIST_RUN_ID_LEN]; /* the launcher's job ("" if none) */
    enum ckh_dist_mode from;      /* MPI, SRUN or ARRAY */
};

/* Reads variable name as a number 0..max into *v. Returns 0 or CKH_EINVAL. */
static int env_u32(const char *(*get)(const char *), const char *name, uint64_t min, uint64_t max,
                   uint32_t *v, char *msg, size_t n)
{
    const char *text = get(name);
    uint64_t x = 0;
    if (!text || ckh_opt_u64(name, text, min, max, &x, NULL, 0) != 0)
        return ckh_errf(msg, n, CKH_EINVAL, "the environment variable %s is %s%s%s, not a number "
                        "%" PRIu64 "..%" PRIu64, name, text ? "'" : "unset", text ? text : "",
                        text ? "'" : "", min, max);
    *v = (uint32_t)x;
    return 0;
}

/* A rank variable and its size variable: both or neither. */
static int read_pair(const char *(*get)(const char *), const char *label, const char *rank_var,
                     const char *size_var, struct found *f, char *msg, size_t n)
{
    memset(f, 0, sizeof *f);
    if (!get(rank_var) && !get(size_var))
        return 0;
    if (!get(rank_var) || !get(size_var))
        return ckh_errf(msg, n, CKH_EINVAL, "%s is set but %s is not: the environment names no "
                        "rank for %s (ckh run --distributed off ignores it)",
                        get(rank_var) ? rank_var : size_var, get(rank_var) ? size_var : rank_var,
                        label);
    int rc = env_u32(get, size_var, 1, CKH_DIST_WORLD_MAX, &f->world, msg, n);
    rc = rc ? rc : env_u32(get, rank_var, 0, CKH_DIST_WORLD_MAX - 1, &f->rank, msg, n);
    if (rc)
        return rc;
    if (f->rank >= f->world)
        return ckh_errf(msg, n, CKH_EINVAL, "%s=%u is not below %s=%u", rank_var, f->rank, size_var,
                        f->world);
    f->present = true;
    snprintf(f->what, sizeof f->what, "%s (%s=%u %s=%u)", label, rank_var, f->rank, size_var,
             f->world);
    return 0;
}

static void set_id(struct found *f, const char *prefix, const char *a, const char *b)
{
    if (!a || !a[0])
        return;
    snprintf(f->id, sizeof f->id, "%s%s%s%s", prefix, a, b && b[0] ? "." : "", b ? b : "");
    if (!run_id_ok(f->id)) /* a launcher's id with odd characters: not used */
        f->id[0] = '\0';
}

/* Open MPI and MPICH/PMI: both must agree when both are set. */
static int read_mpi(const char *(*get)(const char *), struct found *f, char *msg, size_t n)
{
    struct found pmi;
    int rc = read_pair(get, "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", f, msg, n);
    rc = rc ? rc : read_pair(get, "MPICH/PMI", "PMI_RANK", "PMI_SIZE", &pmi, msg, n);
    if (rc)
        return rc;
    if (f->present && pmi.present && (f->rank != pmi.rank || f->world != pmi.world))
        return ckh_errf(msg, n, CKH_EINVAL, "the environment is contradictory: %s but %s; start "
                        "ckh from one launcher, or name the rank with --rank I --world N "
                        "--distributed off", f->what, pmi.what);
    if (f->present) {
        const char *job = get("OMPI_MCA_ess_base_jobid");
        set_id(f, "ompi-", job ? job : get("PMIX_NAMESPACE"), NULL);
    } else {
        *f = pmi; /* Hydra names no job: the run id comes from the options */
    }
    f->from = CKH_DIST_MPI;
    return 0;
}

/* A task of a Slurm job step (srun). */
static int read_srun(const char *(*get)(const char *), struct found *f, char *msg, size_t n)
{
    memset(f, 0, sizeof *f);
    if (!get("SLURM_STEP_NUM_TASKS")) /* a batch script, or no Slurm */
        return 0;
    int rc = read_pair(get, "Slurm srun", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", f, msg, n);
    if (rc == 0)
        set_id(f, "slurm-", get("SLURM_JOB_ID"), get("SLURM_STEP_ID"));
    f->from = CKH_DIST_SRUN;
    return rc;
}

/* A task of a Slurm job array: (ID - MIN) / STEP of COUNT. */
static int read_array(const char *(*get)(const char *), struct found *f, char *msg, size_t n)
{
    memset(f, 0, sizeof *f);
    uint32_t id = 0, min = 0, step = 1, count = 0;
    int rc = env_u32(get, "SLURM_ARRAY_TASK_ID", 0, UINT32_MAX, &id, msg, n);
    rc = rc ? rc : env_u32(get, "SLURM_ARRAY_TASK_COUNT", 1, CKH_DIST_WORLD_MAX, &count, msg, n);
    rc = rc ? rc : env_u32(get, "SLURM_ARRAY_TASK_MIN", 0, UINT32_MAX, &min, msg, n);
    if (rc == 0 && get("SLURM_ARRAY_TASK_STEP"))
        rc = env_u32(get, "SLURM_ARRAY_TASK_STEP", 1, UINT32_MAX, &step, msg, n);
    if (rc) {
        char why[400];
        snprintf(why, sizeof why, "%s", n ? msg : "");
        return ckh_errf(msg, n, rc, "--distributed slurm-array: %s (not in a job array?)", why);
    }
    if (id < min || (id - min) % step != 0 || (id - min) / step >= count)
        return ckh_errf(msg, n, CKH_EINVAL, "--distributed slurm-array: task %u is not one of the "
                        "%u tasks %u, %u+%u, ... (an array given as a list): name the rank with "
                        "--rank I --world N instead", id, count, min, min, step);
    f->present = true;
    f->rank = (id - min) / step;
    f->world = count;
    snprintf(f->what, sizeof f->what, "Slurm array (SLURM_ARRAY_TASK_ID=%u, task %u of %u)", id,
             f->rank, count);
    set_id(f, "slurm-array-", get("SLURM_ARRAY_JOB_ID"), NULL);
    f->from = CKH_DIST_ARRAY;
    return 0;
}

/* The source the mode names (or, in auto, the innermost one present). */
static int pick_source(const struct ckh_dist_opts *o, const char *(*get)(const char *),
                       struct found *f, char *msg, size_t n)
{
    struct found mpi, srun;
    memset(f, 0, sizeof *f);
    if (o->mode == CKH_DIST_OFF)
        return 0;
    int rc = read_mpi(get, &mpi, msg, n);
    rc = rc ? rc : read_srun(get, &srun, msg, n);
    if (rc)
        return rc;
    switch (o->mode) {
    case CKH_DIST_AUTO: *f = mpi.present ? mpi : srun; break;
    case CKH_DIST_MPI:
        *f = mpi;
        if (!mpi.present)
            return ckh_errf(msg, n, CKH_EINVAL, "--distributed mpi: neither "
                            "OMPI_COMM_WORLD_RANK nor PMI_RANK is set (not started by "
                            "mpirun?)");
        break;
    case CKH_DIST_SRUN:
        *f = srun;
        if (!srun.present)
            return ckh_errf(msg, n, CKH_EINVAL, "--distributed srun: SLURM_STEP_NUM_TASKS is "
                            "not set (not a task of srun?)");
        break;
    case CKH_DIST_ARRAY:
        if ((rc = read_array(get, f, msg, n)) != 0)
            return rc;
        if ((mpi.present && mpi.world > 1) || (srun.present && srun.world > 1))
            return ckh_errf(msg, n, CKH_EINVAL, "the environment is contradictory: %s, and also "
                            "%s: both would split the work; run one ckh per array task, or "
                            "choose --distributed mpi or srun", f->what,
                            mpi.present ? mpi.what : srun.what);
        break;
    case CKH_DIST_OFF: break;
    }
    return 0;
}

int ckh_dist_detect(const struct ckh_dist_opts *o, const char *(*get)(const char *name),
                    struct ckh_dist *d, char *msg, size_t n)
{
    memset(d, 0, sizeof *d);
    d->world = 1;
    d->from = CKH_DIST_OFF;
    snprintf(d->source, sizeof d->source, "a single machine");
    if (o->have_rank != o->have_world)
        return ckh_errf(msg, n, CKH_EINVAL, "--rank and --world go together");
    if (o->have_rank && o->rank >= o->world)
        return ckh_errf(msg, n, CKH_EINVAL, "--rank %u is not below --world %u", o->rank, o->world);
    struct found f;
    int rc = pick_source(o, get, &f, msg, n);
    if (rc)
        return rc;
    bool checked = o->mode != CKH_DIST_AUTO || (f.present && f.world > 1);
    if (o->have_rank && f.present && checked && (f.rank != o->rank || f.world != o->world))
        return ckh_errf(msg, n, CKH_EINVAL, "the environment is contradictory: --rank %u --world "
                        "%u, but %s; drop the options, or add --distributed off to ignore the "
                        "environment", o->rank, o->world, f.what);
    if (o->have_rank) {
        d->rank = o->rank;
        d->world = o->world;
        snprintf(d->source, sizeof d->source, "--rank %u --world %u", o->rank, o->world);
        snprintf(d->launcher_id, sizeof d->launcher_id, "%s", f.present ? f.id : "");
        return 0;
    }
    if (f.present) {
        d->from = f.from;
        d->rank = f.rank;
        d->world = f.world;
        snprintf(d->source, sizeof d->source, "%s", f.what);
        snprintf(d->launcher_id, sizeof d->launcher_id, "%s", f.id);
    }
    return 0;
}

/* ---- the merge folder ---- */

/* dir/name into out (n bytes); -ENAMETOOLONG when it does not fit. */
static int path_of(char *out, size_t n, const char *dir, const char *name)
{
    int len = snprintf(out, n, "%s/%s", dir, name);
    return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

/* Reads up to n-1 bytes of a small text file into buf, without the
 * trailing newline. Returns 0 or -errno. */
static int read_text(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    size_t len = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[len] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* Writes text to dir/name unless that exists: a temporary file made whole
 * first, then link()ed into place. Returns 0, CKH_EEXISTS or -errno. */
static int put_once(const struct ckh_dist_merge *m, const char *name, const char *text)
{
    char tmp[1200], dst[1200];
    char tmpname[160];
    snprintf(tmpname, sizeof tmpname, ".tmp.%s.%.64s.%ld", name, m->host, (long)getpid());
    int rc = path_of(tmp, sizeof tmp, m->dir, tmpname);
    rc = rc ? rc : path_of(dst, sizeof dst, m->dir, name);
    if (rc)
        return rc;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0)
        rc = errno ? -errno : -EIO;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && link(tmp, dst) != 0)
        rc = errno == EEXIST ? CKH_EEXISTS : -errno;
    unlink(tmp);
    return rc;
}

static void make_run_id(struct ckh_dist_merge *m, const struct ckh_dist_opts *o,
                        const struct ckh_dist *d)
{
    if (o->run_id)
        snprintf(m->run_id, sizeof m->run_id, "%s", o->run_id);
    else if (d->launcher_id[0])
        snprintf(m->run_id, sizeof m->run_id, "%s", d->launcher_id);
    else
        snprintf(m->run_id, sizeof m->run_id, "opts-%016" PRIx64, m->fingerprint);
}

/* Makes a folder unless it exists. Returns 0 or -errno. */
static int make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    return -errno;
}

/* Claims the run id: the folder's, or this run's when it has none. */
static int claim_run_id(const struct ckh_dist_merge *m, char *msg, size_t n)
{
    char text[CKH_DIST_RUN_ID_LEN + 2], path[1200], old[CKH_DIST_RUN_ID_LEN + 64] = "";
    snprintf(text, sizeof text, "%s\n", m->run_id);
    int rc = put_once(m, "run-id", text);
    if (rc == 0)
        return 0;
    if (rc != CKH_EEXISTS)
        return ckh_errf(msg, n, rc, "cannot write the run id into the merge folder %s: %s",
                        m->dir, ckh_strerror(rc));
    path_of(path, sizeof path, m->dir, "run-id");
    rc = read_text(path, old, sizeof old);
    if (rc == 0 && strcmp(old, m->run_id) == 0)
        return 0;
    return ckh_errf(msg, n, CKH_EEXISTS, "the merge folder %s holds the partial results of another "
                    "run (run id '%s'; this run is '%s'): nothing was changed there; remove it, "
                    "give another --merge-dir, or give --run-id %s to add to that run", m->dir,
                    rc == 0 ? old : "unreadable", m->run_id, rc == 0 ? old : "ID");
}

int ckh_dist_join(struct ckh_dist_merge *m, const char *base, const struct ckh_dist_opts *o,
                  const struct ckh_dist *d, const char *verb, uint64_t fingerprint, char *msg,
                  size_t n)
{
    memset(m, 0, sizeof *m);
    m->verb = verb;
    m->fingerprint = fingerprint;
    m->rank = d->rank;
    m->world = d->world;
    if (gethostname(m->host, sizeof m->host - 1) != 0 || !m->host[0])
        snprintf(m->host, sizeof m->host, "unknown-host");
    make_run_id(m, o, d);
    int rc = path_of(m->dir, sizeof m->dir, base, MERGE_SUBDIR);
    if (rc)
        return ckh_errf(msg, n, rc, "the merge folder %s/%s: path too long", base, MERGE_SUBDIR);
    if ((rc = make_dir(base)) != 0 || (rc = make_dir(m->dir)) != 0)
        return ckh_errf(msg, n, rc, "cannot make the merge folder %s: %s", m->dir, strerror(-rc));
    if ((rc = claim_run_id(m, msg, n)) != 0)
        return rc;
    char name[32], text[320], path[1200], other[320] = "";
    snprintf(name, sizeof name, "joined.%u", m->rank);
    snprintf(text, sizeof text, "%s %ld\n", m->host, (long)getpid());
    rc = put_once(m, name, text);
    if (rc == CKH_EEXISTS) {
        path_of(path, sizeof path, m->dir, name);
        read_text(path, other, sizeof other);
        return ckh_errf(msg, n, CKH_EEXISTS, "rank %u of run '%s' was already taken (by host and "
                        "pid '%s', %s/%s): two processes were given the same rank; check the "
                        "launcher, --rank and --run-id", m->rank, m->run_id, other, m->dir, name);
    }
    if (rc)
        return ckh_errf(msg, n, rc, "cannot write %s/%s: %s", m->dir, name, ckh_strerror(rc));
    return 0;
}

/* ---- partials ---- */

static void put_u64(FILE *f, uint64_t v)
{
    ckh_wire_put_u64(f, v);
}

static int write_part(FILE *f, const struct ckh_dist_merge *m, int status, const char *error,
                      const void *payload, size_t len)
{
    uint32_t head[2] = {PART_BOM, PART_FORMAT};
    fwrite(PART_MAGIC, 1, 8, f);
    fwrite(head, sizeof head, 1, f);
    ckh_wire_put_str(f, CKH_VERSION_STRING);
    ckh_wire_put_str(f, m->verb);
    ckh_wire_put_str(f, m->run_id);
    put_u64(f, m->fingerprint);
    put_u64(f, m->rank);
    put_u64(f, m->world);
    put_u64(f, (uint64_t)(int64_t)status);
    ckh_wire_put_str(f, error);
    ckh_wire_put_str(f, m->host);
    put_u64(f, (uint64_t)getpid());
    put_u64(f, len);
    if (len)
        fwrite(payload, 1, len, f);
    put_u64(f, ckh_hash64(0, payload, len));
    if (fflush(f) != 0 || ferror(f))
        return -EIO;
    return fsync(fileno(f)) == 0 ? 0 : -errno;
}

int ckh_dist_deliver(const struct ckh_dist_merge *m, int status, const char *error,
                     const void *payload, size_t len, char *msg, size_t n)
{
    char tmp[1200], dst[1200], tmpname[160], name[32];
    snprintf(name, sizeof name, "part.%u", m->rank);
    snprintf(tmpname, sizeof tmpname, ".tmp.%s.%.64s.%ld", name, m->host, (long)getpid());
    int rc = path_of(tmp, sizeof tmp, m->dir, tmpname);
    rc = rc ? rc : path_of(dst, sizeof dst, m->dir, name);
    if (rc)
        return ckh_errf(msg, n, rc, "%s: path too long", m->dir);
    FILE *f = fopen(tmp, "wbe");
    if (!f)
        return ckh_errf(msg, n, -errno, "cannot write %s: %s", tmp, strerror(errno));
    rc = write_part(f, m, status, error, payload, len);
    if (fclose(f) != 0 && rc == 0)
        rc = -EIO;
    if (rc == 0 && link(tmp, dst) != 0)
        rc = errno == EEXIST ? CKH_EEXISTS : -errno;
    unlink(tmp);
    if (rc == CKH_EEXISTS)
        return ckh_errf(msg, n, rc, "rank %u of run '%s' already delivered its results (%s "
                        "exists): two processes were given the same rank", m->rank, m->run_id,
                        dst);
    if (rc)
        return ckh_errf(msg, n, rc, "cannot deliver the results to %s: %s", dst, ckh_strerror(rc));
    return 0;
}

void ckh_dist_parts_free(struct ckh_dist_part *parts, uint32_t world)
{
    for (uint32_t r = 0; parts && r < world; r++) {
        free(parts[r].error);
        free(parts[r].host);
        free(parts[r].payload);
    }
    free(parts);
}

/* Reads the strings and numbers of a partial's header after its magic. */
static int read_header(FILE *f, const struct ckh_dist_merge *m, uint32_t r, struct ckh_dist_part *p,
                       const char *path, char *msg, size_t n)
{
    char *version = NULL, *verb = NULL, *run_id = NULL;
    uint64_t fp = 0, rank = 0, world = 0, status = 0;
    int rc = ckh_wire_get_str(f, &version);
    rc = rc ? rc : ckh_wire_get_str(f, &verb);
    rc = rc ? rc : ckh_wire_get_str(f, &run_id);
    rc = rc ? rc : ckh_wire_get_u64(f, &fp);
    rc = rc ? rc : ckh_wire_get_u64(f, &rank);
    rc = rc ? rc : ckh_wire_get_u64(f, &world);
    rc = rc ? rc : ckh_wire_get_u64(f, &status);
    rc = rc ? rc : ckh_wire_get_str(f, &p->error);
    rc = rc ? rc : ckh_wire_get_str(f, &p->host);
    rc = rc ? rc : ckh_wire_get_u64(f, &p->pid);
    if (rc)
        ckh_errf(msg, n, rc, "%s: rank %u's partial is damaged: %s", path, r, ckh_strerror(rc));
    else if (!version || strcmp(version, CKH_VERSION_STRING) != 0)
        rc = ckh_errf(msg, n, CKH_EVERSION, "%s: rank %u ran ckh %s, rank 0 ckh %s: every host "
                      "must run the same ckh", path, r, version ? version : "?", CKH_VERSION_STRING);
    else if (!verb || strcmp(verb, m->verb) != 0 || !run_id || strcmp(run_id, m->run_id) != 0 ||
             rank != r)
        rc = ckh_errf(msg, n, CKH_ECORRUPT, "%s: not rank %u's results of this `ckh %s` (run '%s')",
                      path, r, m->verb, m->run_id);
    else if (world != m->world || fp != m->fingerprint)
        rc = ckh_errf(msg, n, CKH_EINVAL, "rank %u (host %s, pid %" PRIu64 ") ran %s: every rank "
                      "must run the same command with the same options", r,
                      p->host ? p->host : "?", p->pid,
                      world != m->world ? "in a world of another size" : "other options");
    p->status = (int)(int64_t)status;
    free(version);
    free(verb);
    free(run_id);
    return rc;
}

static int read_payload(FILE *f, struct ckh_dist_part *p)
{
    uint64_t len = 0, hash = 0;
    int rc = ckh_wire_get_u64(f, &len);
    if (rc)
        return rc;
    if (len > ((uint64_t)1 << 40))
        return CKH_ECORRUPT;
    if (len && !(p->payload = malloc((size_t)len)))
        return CKH_ENOMEM;
    if (len && fread(p->payload, 1, (size_t)len, f) != len)
        return CKH_ETRUNCATED;
    p->len = (size_t)len;
    if ((rc = ckh_wire_get_u64(f, &hash)) != 0)
        return rc;
    return hash == ckh_hash64(0, p->payload, p->len) ? 0 : CKH_ECORRUPT;
}

/* Reads part.r when it is there: 0, -ENOENT (not yet) or an error with msg. */
static int read_part(const struct ckh_dist_merge *m, uint32_t r, struct ckh_dist_part *p,
                     char *msg, size_t n)
{
    char path[1200], name[32];
    snprintf(name, sizeof name, "part.%u", r);
    path_of(path, sizeof path, m->dir, name);
    FILE *f = fopen(path, "rbe");
    if (!f)
        return errno == ENOENT ? -ENOENT
                               : ckh_errf(msg, n, -errno, "cannot read %s: %s", path, strerror(errno));
    char magic[8];
    uint32_t head[2] = {0, 0};
    int rc = 0;
    p->rank = r;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, PART_MAGIC, 8) != 0 ||
        fread(head, sizeof head, 1, f) != 1 || head[0] != PART_BOM)
        rc = ckh_errf(msg, n, CKH_EFOREIGN, "%s is not a partial result ckh can read here (another "
                      "program, or a host of another byte order)", path);
    else if (head[1] != PART_FORMAT)
        rc = ckh_errf(msg, n, CKH_EVERSION, "%s: partial format %u, this ckh reads %u", path,
                      head[1], PART_FORMAT);
    rc = rc ? rc : read_header(f, m, r, p, path, msg, n);
    if (rc == 0 && (rc = read_payload(f, p)) != 0)
        ckh_errf(msg, n, rc, "%s: rank %u's partial is damaged: %s", path, r, ckh_strerror(rc));
    fclose(f);
    return rc;
}

static void fmt_ms(uint64_t ms, char *buf, size_t n)
{
    if (ms % 60000u == 0)
        snprintf(buf, n, "%" PRIu64 "m", ms / 60000u);
    else if (ms % 1000u == 0)
        snprintf(buf, n, "%" PRIu64 "s", ms / 1000u);
    else
        snprintf(buf, n, "%" PRIu64 "ms", ms);
}

/* The message for ranks that never delivered: each named, with whether it joined. */
static int missing_message(const struct ckh_dist_merge *m, const struct ckh_dist_part *parts,
                           uint64_t timeout_ms, char *msg, size_t n)
{
    char waited[32];
    fmt_ms(timeout_ms, waited, sizeof waited);
    size_t len = 0, shown = 0, missing = 0;
    len += (size_t)snprintf(msg, n, "rank 0 of %u waited %s for the other ranks' results in %s "
                            "(run '%s'):", m->world, waited, m->dir, m->run_id);
    for (uint32_t r = 1; r < m->world; r++) {
        if (parts[r].host)
            continue;
        missing++;
        if (shown++ >= 16 || len >= n)
            continue;
        char path[1200], name[32], who[320] = "";
        snprintf(name, sizeof name, "joined.%u", r);
        path_of(path, sizeof path, m->dir, name);
        if (read_text(path, who, sizeof who) == 0)
            len += (size_t)snprintf(msg + len, n - len, " rank %u joined (host and pid %s) but "
                                    "delivered nothing;", r, who);
        else
            len += (size_t)snprintf(msg + len, n - len, " rank %u never joined;", r);
    }
    if (len < n && missing > 16)
        len += (size_t)snprintf(msg + len, n - len, " and %zu more;", missing - 16);
    if (len < n)
        snprintf(msg + len, n - len, " is the folder on a filesystem every host sees, and did "
                 "every rank start? (--merge-timeout sets the wait); the partials stay there");
    return CKH_ETIMEOUT;
}

int ckh_dist_collect(const struct ckh_dist_merge *m, uint64_t timeout_ms,
                     struct ckh_dist_part **parts, char *msg, size_t n)
{
    if (!timeout_ms)
        timeout_ms = CKH_DIST_MERGE_TIMEOUT_MS_DEFAULT;
    struct ckh_dist_part *p = calloc(m->world, sizeof *p);
    *parts = NULL;
    if (!p)
        return ckh_errf(msg, n, CKH_ENOMEM, "out of memory");
    uint64_t deadline = ckh_posix_now_ms() + timeout_ms;
    unsigned poll_ms = POLL_MS_MIN;
    int rc = 0;
    for (;;) {
        uint32_t have = 1;
        for (uint32_t r = 1; r < m->world && rc == 0; r++) {
            if (!p[r].host && (rc = read_part(m, r, &p[r], msg, n)) == -ENOENT)
                rc = 0;
            have += p[r].host != NULL;
        }
        if (rc || have == m->world)
            break;
        if (ckh_pool_interrupted()) {
            rc = -EINTR;
            break;
        }
        if (ckh_posix_now_ms() >= deadline) {
            rc = missing_message(m, p, timeout_ms, msg, n);
            break;
        }
        struct timespec ts = {0, (long)poll_ms * 1000000L};
        nanosleep(&ts, NULL); /* a caught signal ends it early */
        poll_ms = poll_ms * 2 > POLL_MS_MAX ? POLL_MS_MAX : poll_ms * 2;
    }
    if (rc) {
        ckh_dist_parts_free(p, m->world);
        return rc;
    }
    *parts = p;
    return 0;
}

void ckh_dist_cleanup(const struct ckh_dist_merge *m)
{
    char path[1200], name[32];
    for (uint32_t r = 0; r < m->world; r++) {
        snprintf(name, sizeof name, "part.%u", r);
        if (path_of(path, sizeof path, m->dir, name) == 0)
            unlink(path);
        snprintf(name, sizeof name, "joined.%u", r);
        if (path_of(path, sizeof path, m->dir, name) == 0)
            unlink(path);
    }
    if (path_of(path, sizeof path, m->dir, "run-id") == 0)
        unlink(path);
    if (path_of(path, sizeof path, m->dir, "merge-done") == 0)
        unlink(path);
    rmdir(m->dir); /* stays when it holds anything else */
}

void ckh_dist_give_up(const struct ckh_dist_merge *m, int status)
{
    char text[32];
    snprintf(text, sizeof text, "%d\n", status);
    put_once(m, "merge-done", text); /* best effort: the others time out otherwise */
}

int ckh_dist_await_merge(const struct ckh_dist_merge *m, uint64_t timeout_ms, int *status)
{
    char part[1200], done[1200], name[32], text[32];
    snprintf(name, sizeof name, "part.%u", m->rank);
    path_of(part, sizeof part, m->dir, name);
    path_of(done, sizeof done, m->dir, "merge-done");
    uint64_t deadline = ckh_posix_now_ms() + (timeout_ms ? timeout_ms : CKH_DIST_MERGE_TIMEOUT_MS_DEFAULT);
    unsigned poll_ms = POLL_MS_MIN;
    for (;;) {
        struct stat st;
        if (read_text(done, text, sizeof text) == 0) {
            *status = atoi(text);
            return CKH_ESTATE;
        }
        if (stat(part, &st) != 0 && errno == ENOENT)
            return 0;
        if (ckh_pool_interrupted())
            return -EINTR;
        if (ckh_posix_now_ms() >= deadline)
            return CKH_ETIMEOUT;
        struct timespec ts = {0, (long)poll_ms * 1000000L};
        nanosleep(&ts, NULL);
        poll_ms = poll_ms * 2 > POLL_MS_MAX ? POLL_MS_MAX : poll_ms * 2;
    }
}

bool ckh_dist_waits(const struct ckh_dist *d)
{
    return d->world > 1 && (d->from == CKH_DIST_MPI || d->from == CKH_DIST_SRUN);
}

int ckh_dist_rank_exit(const struct ckh_dist_merge *m, const struct ckh_dist *d,
                       uint64_t timeout_ms, const char *verb, int status)
{
    if (!ckh_dist_waits(d))
        return status;
    int st0 = 0, rc = ckh_dist_await_merge(m, timeout_ms, &st0);
    if (rc == 0)
        return d->from == CKH_DIST_MPI ? CKH_EXIT_OK : status;
    if (rc == -EINTR)
        return CKH_EXIT_SIGNAL + ckh_pool_interrupted();
    if (rc == CKH_ETIMEOUT)
        fprintf(stderr, "ckh %s: rank %u of %u: rank 0 did not merge the results within the "
                "--merge-timeout\n", verb, d->rank, d->world);
    return status;
}

int ckh_dist_exit_status(int rc)
{
    if (rc == CKH_EINVAL || rc == CKH_EEXISTS)
        return CKH_EXIT_BAD_INPUT;
    if (rc == -EINTR && ckh_pool_interrupted())
        return CKH_EXIT_SIGNAL + ckh_pool_interrupted();
    return CKH_EXIT_INTERNAL;
}

/* ---- fingerprints ---- */

uint64_t ckh_dist_fold_str(uint64_t h, const char *s)
{
    static const char none[] = "\xff(null)";
    return s ? ckh_hash64(h, s, strlen(s) + 1) : ckh_hash64(h, none, sizeof none);
}

uint64_t ckh_dist_fold_u64(uint64_t h, uint64_t v)
{
    return ckh_hash64(h, &v, sizeof v);
}
