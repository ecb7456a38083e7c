/* Scenario files: the in-memory model of one scenario and its parser.
 *
 * A scenario is a YAML file (grammar and every key in docs/SCENARIOS.md)
 * describing a job, a fault script, a restart policy and expectations.
 * ckh_scenario_parse_file() / ckh_scenario_parse_string() turn it into a
 * struct ckh_scenario; every error carries file, line and column.
 *
 * Ownership: a struct ckh_scenario owns every string and array it points
 * to (one arena); ckh_scenario_free() releases all of it. Nothing in it
 * borrows from the caller, so it outlives the text and the options it was
 * parsed from.
 *
 * Conventions in this model: "unset" integers are 0 or -1 as each field
 * says; sizes are in bytes, durations in virtual nanoseconds; node and op
 * selectors use -1 for "any", like struct ckh_fault_rule (ckh/sim.h).
 */
#ifndef CKH_SCENARIO_H
#define CKH_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ckh/alloc.h"
#include "ckh/simfs.h"
#include "model/fault_list.h"

/* ---- generic values (job.options, expect.values) ---- */

enum ckh_scn_value_type {
    CKH_SCN_STR = 0, /* quoted scalar or anything that is not one of the below */
    CKH_SCN_INT,     /* plain scalar that is a decimal integer (int64) */
    CKH_SCN_FLOAT,   /* plain scalar that is a decimal number with '.' or exponent */
    CKH_SCN_BOOL,    /* plain true/false/yes/no/on/off */
};

/* One key/value pair of a free-form map; the scalar text is kept as
 * written so a consumer may re-interpret it. */
struct ckh_scn_kv {
    const char *key;              /* the key, as written */
    const char *text;             /* the value's scalar text, as written */
    enum ckh_scn_value_type type; /* what the plain scalar looks like */
    int64_t i;                    /* CKH_SCN_INT: the value */
    double f;                     /* CKH_SCN_FLOAT (and INT): the value */
    bool b;                       /* CKH_SCN_BOOL: the value */
    int line;                     /* 1-based line of the value */
    int column;                   /* 1-based column of the value */
};

/* ---- job ---- */

enum ckh_scn_strategy {
    CKH_SCN_SYNC_ALL = 0, /* every rank's write is durable before commit (default) */
    CKH_SCN_SYNC_ANY,     /* commit when any rank's write is durable */
    CKH_SCN_ASYNC,        /* writes complete in the background */
};

struct ckh_scn_saver {
    const char *kind;               /* "atomic-dir", ...; NULL: no saver */
    uint32_t keep_last;             /* checkpoints kept (0: all) */
    enum ckh_scn_strategy strategy; /* commit strategy */
    const char *name;               /* checkpoint name prefix; NULL: the saver's default */
};

struct ckh_scn_disk {
    const char *name;               /* unique disk name ("shared", "local") */
    const char *mount;              /* absolute mount point in every node's view */
    bool shared;                    /* true: one disk for all nodes; false: one per node */
    enum ckh_crash_model model;     /* crash model (default posix-weak) */
    enum ckh_simfs_sharing sharing; /* a shared disk's caches: network (default) or machine */
    uint32_t sector_bytes;          /* 512 or 4096 (default 4096) */
    uint64_t capacity_bytes;        /* 0: unlimited (default) */
    uint64_t latency_ns;            /* per operation (default 100us) */
    uint64_t ns_per_kib;            /* per KiB transferred (default 1000, ~1 GiB/s) */
    int line;                       /* 1-based line of the disk's entry */
};

/* One program of a command job (docs/SCENARIOS.md, "Command jobs"): the
 * argv a node runs, or the argv of `verify`. */
struct ckh_scn_command {
    const char *node;  /* the node it runs on ("rank_0"); NULL: every node no other entry names */
    const char **argv; /* argv[0..argc), then NULL */
    size_t argc;       /* >= 1; 0 for an absent `verify` */
    int line;          /* 1-based line of the argv list */
    int column;        /* 1-based column of the argv list */
};

/* job.platform: where a workload job's nodes run (ckh_scn_platforms
 * names them). */
enum ckh_scn_platform {
    CKH_SCN_PLATFORM_SIM = 0, /* the simulator (default) */
    CKH_SCN_PLATFORM_REAL,    /* real processes over MPI (harness/exec/mpi.h) */
};

/* job.object_store: an S3-compatible store for a command job's programs
 * (docs/OBJECT_STORE.md; the model: sim/objstore.c, its server:
 * harness/ckhfs/s3_endpoint.c). */
struct ckh_scn_object_store {
    const char **buckets;   /* buckets made before run 1, in file order (>= 1) */
    size_t nbuckets;        /* number of buckets */
    int consistency;        /* enum ckh_objstore_consistency (default strong) */
    uint64_t delay_ops;     /* lagging settings: ops before a write shows (0: the model's 8) */
    int line, column;       /* where job.object_store is (1-based) */
    const char *commit;     /* key glob of a checkpoint's commit object (the retention
                               oracle, harness/judge/retention_check.c); NULL: none */
};

struct ckh_scn_job {
    const char *workload;           /* validated against the caller's list; required unless
                                       `command` is given (then NULL) */
    uint32_t nodes;                 /* 1..1024 (keys `nodes` or `ranks`; default 1) */
    uint32_t epochs;                /* max epochs (0: workload default) */
    uint64_t steps;                 /* max steps (0: workload default) */
    const char *backend;            /* "minidb", ...; NULL: none */
    struct ckh_scn_saver saver;     /* saver and its options (kind NULL: none) */
    const char *checkpoint_dir;     /* absolute simulated path (default "/ckpt") */
    uint32_t every_epochs;          /* checkpoint every N epochs (0: unset) */
    uint64_t every_steps;           /* checkpoint every N steps (0: unset) */
    struct ckh_scn_kv *options;     /* workload-specific options, in file order */
    size_t noptions;                /* number of options */
    struct ckh_scn_disk *disks;     /* disks (default: one shared disk at "/") */
    size_t ndisks;                  /* >= 1 after parsing */
    uint64_t collective_timeout_ns; /* default 30s */
    uint64_t gpu_mem_bytes;         /* emulated device memory (0: unlimited) */
    const char **defects;           /* defect switches, validated against the caller's list */
    size_t ndefects;                /* number of defects */
    /* ---- appended: command jobs (a real program per node; harness/exec/command.h) ---- */
    struct ckh_scn_command *commands; /* job.command: one entry (every node) or one per node
                                         name plus an optional default; NULL: simulated job */
    size_t ncommands;                 /* number of entries */
    struct ckh_scn_kv *env;           /* job.env: the user's own variables, in file order */
    size_t nenv;                      /* number of variables */
    uint64_t timeout_ns;              /* job.timeout: wall-clock limit of one run of a command
                                         job (default 120 s); past it the run hangs */
    /* ---- appended: the platform (docs/REAL.md) ---- */
    enum ckh_scn_platform platform;   /* job.platform: sim (default) or real */
    /* ---- appended: where the job's size keys' values are (1-based; 0:
     * not given), for messages of the workload that refuses them
     * (ckh_workloads_locate) ---- */
    int nodes_line, nodes_column;           /* job.nodes, or job.ranks when nodes_as_ranks */
    bool nodes_as_ranks;                    /* the file says `ranks` */
    int epochs_line, epochs_column;         /* job.epochs */
    int steps_line, steps_column;           /* job.steps */
    int gpu_memory_line, gpu_memory_column; /* job.gpu_memory */
    /* ---- appended: where the names stand, for messages about the plugin
       libraries they name (1-based; 0: not given) ---- */
    int workload_line, workload_column; /* job.workload's value */
    int backend_line, backend_column;   /* job.backend's value */
    int saver_line, saver_column;       /* job.saver's kind */
    /* ---- appended: a command job's fixed checkpoint path (exec/command_ns.h) ---- */
    const char *checkpoint_mount; /* job.checkpoint_mount: the host path where each node's
                                     processes see the disk of checkpoint_dir, in their own
                                     mount namespace (default CKH_SCN_CHECKPOINT_MOUNT; NULL:
                                     a simulated job) */
    /* ---- appended: object stores (docs/OBJECT_STORE.md) ---- */
    struct ckh_scn_object_store *object_store; /* job.object_store; NULL: none */
};

/* ---- faults ---- */

/* The fault kinds, one per descriptor of harness/model/faults/ (faults/list.h
 * registers them; each descriptor says its name, keys and whether it
 * changes data at rest). Append only. */
enum ckh_scn_action_kind {
#define CKH__SCN_ACT_ENUM(e, id) CKH_SCN_ACT_##e,
    CKH_FAULT_LIST(CKH__SCN_ACT_ENUM)
#undef CKH__SCN_ACT_ENUM
        CKH_SCN_ACT__COUNT
};

enum ckh_scn_kill_when {
    CKH_SCN_KILL_BEFORE = 0, /* before the op (default) */
    CKH_SCN_KILL_AFTER,      /* right after the op completes */
    CKH_SCN_KILL_MID_WRITE,  /* part of a write lands, then the node dies */
};

enum ckh_scn_corrupt_mode {
    CKH_SCN_CORRUPT_BIT_FLIP = 0, /* flip bit `bit` of byte `offset` */
    CKH_SCN_CORRUPT_TRUNCATE,     /* cut the file to `offset` bytes */
    CKH_SCN_CORRUPT_ZERO_RANGE,   /* zero `length` bytes from `offset` */
    CKH_SCN_CORRUPT_DELETE,       /* remove the file */
    CKH_SCN_CORRUPT_OLDER_VERSION, /* replace with its content `back` saves ago */
};

/* struct ckh_scn_trigger.run value that matches every run of the job. */
#define CKH_SCN_RUN_ANY 0

struct ckh_scn_trigger {
    int node;              /* node index, -1: any (or see node_name) */
    const char *node_name; /* node given by name; NULL when by index or any */
    int op;                /* enum ckh_op_kind, -1: any */
    const char *path;      /* absolute glob on the op's path; NULL: any */
    const char *phase;     /* "init", "epoch", "save", ...; NULL: any */
    int64_t epoch;         /* -1: any */
    int64_t step;          /* -1: any */
    uint64_t nth;          /* fire on the nth matching op (default 1) */
    uint64_t time_ns;      /* only ops at or after this virtual time (0: any) */
    double probability;    /* 0: fire on the nth; (0,1]: per matching op */
    bool repeat;           /* keep firing on later matches */
    uint32_t run;          /* 1-based run of the job (default 1); CKH_SCN_RUN_ANY: every run */
    bool matches_ops;      /* false: no op-matching key given (see struct ckh_scn_fault.at_rest) */
};

/* What a crash or power loss keeps of the unsynced state. */
enum ckh_scn_keep {
    CKH_SCN_KEEP_RANDOM = 0, /* each unsynced op applied, dropped or torn, as the seed draws */
    CKH_SCN_KEEP_SYNCED,     /* only what was made durable survives */
    CKH_SCN_KEEP_CACHE,      /* everything that reached the page cache survives */
};

struct ckh_scn_action {
    enum ckh_scn_action_kind kind; /* selects the member of the union below */
    enum ckh_scn_keep keep;        /* CKH_SCN_ACT_CRASH, CKH_SCN_ACT_POWER_LOSS: what survives */
    union {
        struct {
            enum ckh_scn_kill_when when; /* when the node dies */
            uint64_t at_bytes;           /* mid-write: bytes that land (if !at_is_fraction) */
            double at_fraction;          /* mid-write: fraction that lands, [0,1] */
            bool at_is_fraction;         /* which of at_bytes / at_fraction is meant */
        } kill;                          /* CKH_SCN_ACT_KILL; CKH_SCN_ACT_S3_RESET: `when`
                                            before or after only */
        struct {
            int err; /* positive errno: EIO ENOSPC EDQUOT EACCES ENOENT EROFS */
        } errno_;    /* CKH_SCN_ACT_ERRNO */
        struct {
            uint64_t after_bytes; /* writes beyond this many more bytes fail ENOSPC */
            const char *disk;     /* disk name; NULL: the disk of the matched op / first disk */
        } disk_full;              /* CKH_SCN_ACT_DISK_FULL */
        struct {
            uint64_t duration_ns; /* extra virtual time per matching op */
        } delay;                  /* CKH_SCN_ACT_DELAY */
        struct {
            enum ckh_scn_corrupt_mode mode; /* what to do to the file */
            const char *path;               /* absolute simulated path (required) */
            uint64_t offset;                /* byte offset (bit-flip, truncate, zero-range) */
            uint64_t length;                /* zero-range: byte count (default 1) */
            uint32_t bit;                   /* bit-flip: bit 0..7 of the byte */
            uint32_t back;                  /* older-version: saves back (default 1) */
        } corrupt;                          /* CKH_SCN_ACT_CORRUPT; CKH_SCN_ACT_S3_CORRUPT: path
                                               (/BUCKET/KEY) and offset only */
        struct {
            const char *path; /* absolute simulated path (required) */
        } remove_dir;         /* CKH_SCN_ACT_REMOVE_DIR; CKH_SCN_ACT_S3_EXPIRE: /BUCKET/KEY */
        struct {
            const char *path; /* the link; NULL: "<checkpoint_dir>/latest" */
        } latest;             /* CKH_SCN_ACT_DANGLING_LATEST, CKH_SCN_ACT_STALE_LATEST */
        struct {
            uint64_t bytes;   /* bytes the write accepts (if !is_fraction) */
            double fraction;  /* fraction of the write it accepts, [0,1] (if is_fraction) */
            bool is_fraction; /* which of bytes / fraction is meant */
        } short_write;        /* CKH_SCN_ACT_SHORT_WRITE */
        struct {
            uint64_t grace_ns; /* SIGKILL this long after SIGTERM (wall clock) */
        } sigterm;             /* CKH_SCN_ACT_SIGTERM */
        struct {
            uint64_t ops; /* keys written in the store's last `ops` operations are left out */
        } stale_list;     /* CKH_SCN_ACT_S3_STALE_LIST */
    } u;                      /* kind-specific parameters; other kinds have none */
};

struct ckh_scn_fault {
    struct ckh_scn_trigger on;  /* when it fires */
    struct ckh_scn_action act;  /* what happens */
    bool at_rest;               /* at-rest action (its descriptor has `apply`) with no
                                   op trigger: applied to the disks before run
                                   `on.run` starts (faults/fault.h) */
    int line;                   /* 1-based line of the fault's entry */
    int column;                 /* 1-based column of the fault's entry */
};

/* ---- restart policy ---- */

/* Which processes of a command job restart after a failure. */
enum ckh_scn_restart_scope {
    CKH_SCN_RESTART_ALL = 0, /* every process (torchrun's elastic agent; default) */
    CKH_SCN_RESTART_FAILED,  /* only the nodes that did not complete */
};

struct ckh_scn_restart {
    int64_t resume_epoch;   /* -1: resume from latest (default); else that epoch */
    uint32_t max_restarts;  /* default 3 */
    uint32_t world_size;    /* nodes on restart (0: unchanged) */
    int world_size_line;    /* 1-based line of world_size (0: not given) */
    int world_size_column;  /* 1-based column of world_size */
    enum ckh_scn_restart_scope scope; /* command jobs: who restarts (appended) */
};

/* ---- expectations ---- */

/* X(ENUM, "name") */
#define CKH_SCN_OUTCOME_MAP(X)                                                 \
    X(PASS, "pass")                                                            \
    X(CORRUPTION_DETECTED, "corruption-detected")                              \
    X(DEADLOCK, "deadlock")                                                    \
    X(TIMEOUT, "timeout")                                                      \
    X(JOB_FAILS, "job-fails")                                                  \
    X(SAVE_FAILS, "save-fails")

enum ckh_scn_outcome {
#define CKH__SCN_OUT_ENUM(e, s) CKH_SCN_OUTCOME_##e,
    CKH_SCN_OUTCOME_MAP(CKH__SCN_OUT_ENUM)
#undef CKH__SCN_OUT_ENUM
        CKH_SCN_OUTCOME__COUNT
};

struct ckh_scn_expect {
    enum ckh_scn_outcome outcome; /* default pass */
    bool reference;               /* compare with the fault-free run (default true) */
    const char *golden;           /* relative path under the reference dir; NULL: none */
    struct ckh_scn_kv *values;    /* explicit expected values, in file order */
    size_t nvalues;               /* number of values */
    const char **oracles;         /* run only these (NULL/0: every applicable one) */
    size_t noracles;              /* number of oracles */
    const char **skip;            /* never run these */
    size_t nskip;                 /* number of skipped oracles */
    const char **detect;          /* a planted defect must be detected: the scenario passes
                                     only when each of these oracles reports a violation */
    size_t ndetect;               /* number of oracles that must detect it */
    bool max_restarts_set;        /* expect.max_restarts was given */
    uint32_t max_restarts;        /* the job may need at most this many restarts
                                     (the `restarts` oracle; 0..1000) */
};

/* ---- comparison with the reference run ---- */

struct ckh_scn_compare {
    const char **ignore; /* record names (final values, step quantities) that
                            `reference` and `resume-equivalence` leave out; for
                            command jobs also "file:GLOB": files of the checkpoint
                            directory (GLOB relative to it) left out */
    size_t nignore;      /* number of names */
    const char **content; /* command jobs: globs of checkpoint files (relative to
                             the checkpoint directory) compared by content; the
                             others are compared as a set of names (and link
                             targets) */
    size_t ncontent;      /* number of globs */
};

/* ---- crash states of a command job (`explore:`, ckh explore) ---- */

struct ckh_scn_explore {
    bool present;           /* the block is there: ckh run explores instead of running faults */
    int check;              /* 0 auto, 1 verify, 2 restart (enum ckh_xprog_check) */
    int start;              /* 0 auto, 1 cold, 2 warm (enum ckh_xprog_start) */
    uint64_t max_states;    /* generated states at most (0: no bound) */
    uint64_t time_limit_ns; /* no check starts after it (0: none) */
    int64_t from_step;      /* crash points from this step of the program on (-1: from the start) */
    int64_t to_step;        /* up to this step (-1: to the end) */
    bool expect_fail;       /* expect: fail (a negative control: some state must fail) */
    int line, column;       /* where the block is */
    /* appended: multi-node jobs (search/explore_multi.h) */
    int crashes;            /* 0 not given, 1 all, 2 crash, 3 power-loss, 4 none (enum ckh_xprog_crashes) */
    int others;             /* 0 killed, 1 running (enum ckh_xprog_others) */
    const char *symptom;    /* with expect: fail, text some failing state's symptom holds (NULL: any) */
};

/* ---- the scenario ---- */

struct ckh__scn_arena;

struct ckh_scenario {
    const char *file;              /* the path it was parsed from (or the given name) */
    const char *name;              /* `name:`, default the file name without extension */
    const char *description;       /* NULL: none */
    uint64_t seed;                 /* default 1 */
    const char **tags;             /* tags, in file order */
    size_t ntags;                  /* number of tags */
    struct ckh_scn_job job;        /* the job */
    struct ckh_scn_fault *faults;  /* the fault script, in file order */
    size_t nfaults;                /* number of faults */
    struct ckh_scn_restart restart; /* restart policy */
    struct ckh_scn_expect expect;  /* expectations */
    struct ckh_scn_compare compare; /* what the reference comparison leaves out */
    struct ckh_alloc *alloc;       /* allocator of the arena */
    struct ckh__scn_arena *arena;  /* owns every pointer above */
    /* ---- appended ---- */
    struct ckh_scn_command verify; /* `verify:` (command jobs): run against the checkpoint
                                      directory before each restart; argc 0: none */
    struct ckh_scn_explore explore; /* `explore:` (command jobs): crash states of the run */
};

/* Where and why parsing failed. */
struct ckh_scn_error {
    char file[4096]; /* file name, whole (PATH_MAX) */
    int line;       /* 1-based; 0 when not tied to a position */
    int column;     /* 1-based; 0 when not tied to a position */
    int code;       /* the returned code */
    char msg[512];  /* what was expected, what was found */
};

/* Names the caller accepts; a NULL list (or n == 0) accepts any name. */
struct ckh_scn_names {
    const char *const *list; /* accepted names (borrowed during the call) */
    size_t n;                /* number of names */
};

struct ckh_scn_options {
    struct ckh_scn_names workloads; /* job.workload */
    struct ckh_scn_names backends;  /* job.backend */
    struct ckh_scn_names savers;    /* job.saver kind */
    struct ckh_scn_names defects;   /* job.defects */
    struct ckh_scn_names oracles;   /* expect.oracles and expect.skip */
    struct ckh_alloc *alloc;        /* NULL: the system allocator */
};

/* Whether a workload, backend or saver name names a plugin library
 * instead of a built-in: it holds a '/' (a path, relative to the scenario
 * file) or ends in ".so" (a file name looked up in the plugin search path,
 * harness/exec/workloads.h). Such names are not checked against the
 * caller's lists; loading them is the runner's job. */
bool ckh_scn_is_plugin_path(const char *name);

/* Parses the scenario file at path. opts may be NULL (accept any names).
 * On success *out is owned by the caller (ckh_scenario_free). On failure
 * returns CKH_EPARSE (malformed YAML, unreadable file: -errno), CKH_EINVAL
 * (unknown key, wrong type, out of range, duplicate key, bad path) or
 * CKH_ENOMEM, fills *err when err is not NULL and leaves *out NULL. */
int ckh_scenario_parse_file(const char *path, const struct ckh_scn_options *opts,
                            struct ckh_scenario **out, struct ckh_scn_error *err);

/* The largest scenario file ckh reads. */
#define CKH_SCN_FILE_BYTES_MAX (64u << 20)

/* job.timeout of a command job when the scenario gives none. */
#define CKH_SCN_COMMAND_TIMEOUT_NS (120ull * 1000000000ull)

/* job.checkpoint_mount of a command job when the scenario gives none: the
 * folder where its programs see their checkpoint disk (docs/SCENARIOS.md). */
#define CKH_SCN_CHECKPOINT_MOUNT "/ckh/ckpt"

/* Reads the scenario file at path into *buf (NUL-terminated, *len bytes,
 * freed with alloc; NULL: the system allocator) without ever blocking:
 * a folder, a FIFO or another non-regular file, and a file over
 * CKH_SCN_FILE_BYTES_MAX, are refused. Returns 0, or a negative code
 * with *e filled (file, code, what). */
int ckh_scn_read_file(const char *path, struct ckh_alloc *alloc, char **buf, size_t *len,
                      struct ckh_scn_error *e);

/* Like ckh_scenario_parse_file on len bytes of text; file is the name used
 * in messages and for the default scenario name (NULL: "<string>"). */
int ckh_scenario_parse_string(const char *text, size_t len, const char *file,
                              const struct ckh_scn_options *opts, struct ckh_scenario **out,
                              struct ckh_scn_error *err);

/* Frees a scenario and everything it owns. NULL is a no-op. */
void ckh_scenario_free(struct ckh_scenario *s);

/* Formats err as "file:line:column: message" (no newline); returns what
 * snprintf returns. */
int ckh_scn_error_format(const struct ckh_scn_error *err, char *buf, size_t n);

/* Stable names of the enums above ("kill", "corruption-detected", ...);
 * "?" when out of range. Action names come from the fault descriptors
 * (harness/model/faults/registry.c). */
const char *ckh_scn_action_name(enum ckh_scn_action_kind k);
const char *ckh_scn_outcome_name(enum ckh_scn_outcome o);
/* Whether sc runs real programs (job.command) instead of a simulated
 * workload. */
bool ckh_scn_is_command_job(const struct ckh_scenario *sc);

/* Whether fault f of a command job fires on the program's progress rather
 * than on a filesystem operation: a process-level action (kill before the
 * op, sigterm, crash, power-loss) whose trigger names neither `op` nor
 * `path` but a `step`, an `epoch` or a `time` (docs/SCENARIOS.md, "Faults
 * on real processes"). */
bool ckh_scn_fault_is_progress_trigger(const struct ckh_scn_fault *f);

/* Whether the action changes data at rest (its descriptor applies it to
 * the disks: corrupt, remove-dir, the latest-pointer faults, disk-full). */
bool ckh_scn_action_is_at_rest(enum ckh_scn_action_kind k);

/* Writes sc as a scenario file that parses back to the same scenario
 * (every key explicit where it differs from the default; writer.c).
 * Returns 0; CKH_EINVAL when sc holds a value the grammar cannot express
 * (an errno no fault can inject, an enum out of range; nothing useful is
 * written then); -EIO when f fails. */
int ckh_scenario_write(FILE *f, const struct ckh_scenario *sc);

/* Value helpers, also used by the parser (exposed for the CLI and tests).
 * Each returns 0 or CKH_EINVAL and leaves *out untouched on error. */
int ckh_scn_parse_size(const char *text, uint64_t *out_bytes);   /* "4096", "512MiB", "1GiB" */
int ckh_scn_parse_duration(const char *text, uint64_t *out_ns);  /* "100us", "2ms", "1.5s", "0" */

/* Levenshtein distance between a and b (for "did you mean" suggestions). */
size_t ckh_scn_edit_distance(const char *a, const char *b);

/* ---- loading folders and filtering ---- */

/* One scenario file found in a folder: parsed, or the error it gave. */
struct ckh_scn_entry {
    char *path;                 /* file path (owned) */
    struct ckh_scenario *scn;   /* parsed scenario (owned), NULL on error */
    struct ckh_scn_error err;   /* err.code != 0 when scn is NULL */
};

struct ckh_scn_set {
    struct ckh_scn_entry *v;  /* entries sorted by path (strcmp) */
    size_t n;                 /* number of entries */
    struct ckh_alloc *alloc;  /* allocator of v and the paths */
};

/* Lists every *.yaml and *.yml file under dir (recursively; a file path is
 * taken as itself) sorted by path with strcmp, and parses each one; a file
 * that fails to parse gets an entry with its error. Returns 0, -errno when
 * dir cannot be read (message in *err), or CKH_ENOMEM. On success *set is
 * owned by the caller (ckh_scn_set_free); names not matching filter (see
 * ckh_scn_filter_match; NULL: all) are left out after parsing. */
int ckh_scn_set_load(const char *dir, const struct ckh_scn_options *opts, const char *filter,
                     struct ckh_scn_set *set, struct ckh_scn_error *err);

/* Lists the scenario file paths under dir, sorted, without parsing. On
 * success *paths (an array of *n owned strings) is freed with
 * ckh_scn_paths_free. */
int ckh_scn_list_files(const char *dir, struct ckh_alloc *alloc, char ***paths, size_t *n);
/* The deepest folder ckh_scn_list_files walks below dir; a folder nested
 * deeper is CKH_ELIMIT. */
#define CKH_SCN_DIR_DEPTH_MAX 64
/* Why ckh_scn_list_files returned rc, in words for "cannot list
 * scenarios: ...": the limit and its value for CKH_ELIMIT, "not a
 * regular file or folder" for CKH_EUNSUPPORTED, else ckh_strerror(rc).
 * Static storage. */
const char *ckh_scn_list_why(int rc);
void ckh_scn_paths_free(struct ckh_alloc *alloc, char **paths, size_t n);

/* Frees every entry; the set is left empty. */
void ckh_scn_set_free(struct ckh_scn_set *set);

/* --filter semantics: filter is a comma-separated list of shell globs
 * (fnmatch, '*' also crosses '/'); name matches when any glob matches.
 * A NULL or empty filter matches everything. */
bool ckh_scn_filter_match(const char *filter, const char *name);

#endif
