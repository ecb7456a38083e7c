/* Workloads: the jobs ckh runs under scenarios, as one public, versioned
 * ops table. The built-in workloads (seed-pipeline, param-server,
 * ddp-train) are registered through this table exactly as a plugin is;
 * nothing in the harness knows a workload by name.
 *
 * A workload says how many nodes a scenario's job has, their names and
 * collective ranks, and gives the program each node runs. The program is
 * written against struct ckh_env only (fs, clock, rand, collectives, node
 * lifecycle and phases, background tasks) and reports what it did through
 * env->record (include/ckh/record.h), which is all the oracles judge: a
 * workload never tells ckh whether it is right.
 *
 * Life of an instance, for one scenario run:
 *   create(job)        once per job: the reference run and the faulted run
 *                      each get their own instance (job->flags says which)
 *   before_run(run)    before each run (1 = first, then one per restart)
 *   node_main(env, i)  per node and incarnation, in the simulator; a node
 *                      killed and restarted calls it again with fresh
 *                      memory, and must resume from what is on disk
 *   destroy
 * The instance (void *) lives outside simulated node memory: what node
 * programs share through it survives kills, so keep job state on disk and
 * in node memory, not in the instance.
 *
 * Plugins. A shared library exports
 *
 *     const struct ckh_workload_ops *ckh_workload_plugin_v1(void);
 *
 * (CKH_WORKLOAD_PLUGIN(ops) defines it) and a scenario names it with
 * `job.workload: ./libloop.so` (a path relative to the scenario file).
 * The library may call the functions of ckh's public headers; the process
 * that loads it exports them, so it links against nothing of ckh. Build
 * flags: `pkg-config --cflags ckh` or find_package(ckh); walk-through in
 * docs/WORKLOADS.md. The table's `version` is the ABI
 * (CKH_WORKLOAD_ABI_VERSION at most); methods are only ever appended;
 * optional methods may be NULL.
 */
#ifndef CKH_WORKLOAD_H
#define CKH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/backend.h"
#include "ckh/env.h"
#include "ckh/rng.h"
#include "ckh/saver.h"

#define CKH_WORKLOAD_ABI_VERSION 1
#define CKH_WORKLOAD_PLUGIN_SYMBOL "ckh_workload_plugin_v1"

/* ---- the job a scenario describes ---- */

enum ckh_wl_option_type { CKH_WL_OPT_STRING, CKH_WL_OPT_INT, CKH_WL_OPT_FLOAT, CKH_WL_OPT_BOOL };

/* One entry of job.options, as written. */
struct ckh_wl_option {
    const char *key;              /* the key */
    const char *text;             /* the value's text, as written */
    enum ckh_wl_option_type type; /* what the scalar looks like */
    int64_t i;                    /* INT: the value */
    double f;                     /* FLOAT (and INT): the value */
    bool b;                       /* BOOL: the value */
    int line;                     /* 1-based line of the value in the scenario file */
    int column;                   /* 1-based column */
    bool has_size;                /* the text reads as a size (4096, 64KiB, 1MiB, 2GB) */
    uint64_t size;                /* if so, in bytes */
};

/* job->flags */
enum {
    /* The fault-free reference run: no defect switches, no faults. */
    CKH_WL_JOB_REFERENCE = 0x1,
    /* The scenario's faults include gpu-oom: size emulated devices so that
     * one rank's model fits but a careless load does not. */
    CKH_WL_JOB_GPU_OOM = 0x2,
};

/* Everything a workload may read of the scenario's job. Strings and
 * arrays are borrowed for the instance's life. */
struct ckh_workload_job {
    const char *scenario;            /* scenario file (for messages) */
    uint64_t seed;                   /* the run's seed */
    unsigned flags;                  /* CKH_WL_JOB_* */
    int nodes;                       /* job.nodes / job.ranks (>= 1) */
    int64_t epochs;                  /* job.epochs (0: the workload's default) */
    int64_t steps;                   /* job.steps (0: the workload's default) */
    const char *checkpoint_dir;      /* job.checkpoint_dir (absolute; default "/ckpt") */
    int64_t every_epochs;            /* job.checkpoint_every.epochs (0: unset) */
    int64_t every_steps;             /* job.checkpoint_every.steps (0: unset) */
    uint64_t collective_timeout_ns;  /* job.collective_timeout */
    uint64_t gpu_mem_bytes;          /* job.gpu_memory (0: unlimited) */
    /* job.backend, resolved: a built-in or a loaded plugin; NULL when the
     * scenario names none (the workload picks its default). Given to a
     * workload without CKH_WL_USES_BACKEND, the scenario is refused. */
    const struct ckh_backend_ops *backend;
    /* job.saver, resolved (kind: built-in name or plugin path); NULL when
     * the scenario names none. Given to a workload without
     * CKH_WL_USES_SAVER, the scenario is refused. */
    const struct ckh_saver_ops *saver;
    struct ckh_saver_config saver_config; /* job.saver's keep_last, strategy, name, and
                                             output_dir = checkpoint_dir */
    const struct ckh_wl_option *options; /* job.options, in file order */
    size_t noptions;
    const char *const *defects;      /* job.defects (empty in the reference run) */
    size_t ndefects;
    int world_restart;               /* restart.world_size in a faulted run (0: unchanged) */
    bool reshard;                    /* a world-size change may be resumed: true unless
                                        job.options says `reshard: false`, in which case the
                                        workload must refuse a resized resume cleanly */
};

/* A job shape drawn for the fuzzer (see generate). */
#define CKH_WL_GEN_OPTIONS_MAX 8
struct ckh_workload_shape {
    int nodes;           /* nodes or ranks (the fuzzer's draw; may be changed) */
    int64_t epochs;      /* epochs (the fuzzer's draw; may be changed) */
    int64_t every_steps; /* checkpoint cadence in steps (0: leave unset) */
    int64_t every_epochs; /* in epochs (0: leave unset) */
    bool saver;          /* give the job an atomic-dir saver with a drawn keep_last */
    struct {
        char key[32];    /* option key */
        char value[96];  /* value, as YAML scalar text */
    } options[CKH_WL_GEN_OPTIONS_MAX];
    size_t noptions;
};

/* ops->flags */
enum {
    /* Nodes talk through env->coll (rank = the rank node() reports), so a
     * failure of one node restarts them all. */
    CKH_WL_COLLECTIVE = 0x1,
    /* Progress and checkpoint cadence count steps, not epochs. */
    CKH_WL_STEP_BASED = 0x2,
    /* Checkpoints go through job->backend (job.backend is accepted). */
    CKH_WL_USES_BACKEND = 0x4,
    /* Checkpoints go through job->saver (job.saver is accepted). */
    CKH_WL_USES_SAVER = 0x8,
    /* The job keeps emulated GPU memory: job.gpu_memory and the gpu-oom
     * fault apply (else they are refused). */
    CKH_WL_DEVICES = 0x10,
    /* The job honours ckh's defect switches (job.defects; else refused). */
    CKH_WL_DEFECTS = 0x20,
};

struct ckh_workload_ops {
    int version;             /* CKH_WORKLOAD_ABI_VERSION */
    const char *name;        /* the name scenarios and `ckh list` show */
    const char *description; /* one line */
    unsigned flags;          /* CKH_WL_* */

    /* --- version 1, required --- */
    /* Builds an instance for job. Bad options: CKH_EINVAL with msg naming
     * the option ("line:col: option 'lr': expected a number"). A job size
     * it cannot run: CKH_EINVAL with msg starting with the key (job.nodes,
     * job.epochs, job.steps, job.gpu_memory, restart.world_size), then
     * what was given and what is accepted ("job.nodes: ddp-train supports
     * at most 64 ranks, got 100"); the harness puts the key's line:col
     * in front. */
    int (*create)(const struct ckh_workload_job *job, void **inst, char *msg, size_t msglen);
    void (*destroy)(void *inst);
    /* Nodes of the job (at most 1024). */
    int (*node_count)(void *inst);
    /* Node i's name (unique, a valid file-name component) and collective
     * rank (-1: none, or parked: the node does not run in the current
     * world, see set_world). */
    int (*node)(void *inst, int i, char *name, size_t namelen, int *rank);
    /* The program of node i (see the life of an instance above). Returns
     * 0 when the job completed on this node, else a negative ckh code. */
    int (*node_main)(struct ckh_env *env, void *inst, int i);

    /* --- version 1, optional --- */
    /* The most progress (epochs, or steps when CKH_WL_STEP_BASED) a crash
     * may cost: the checkpoint interval (NULL: 1). */
    int64_t (*interval)(void *inst);
    /* Called before run `run` (1-based) with the scenario's resume policy
     * (restart.resume_epoch; -1: the latest checkpoint). */
    void (*before_run)(void *inst, int run, int64_t resume_epoch);
    /* Switches the job to `world` ranks before the first restart
     * (restart.world_size W'; create then got job->world_restart and must
     * report max(W, W') nodes, those beyond the current world with rank
     * -1). NULL: the workload cannot, and the scenario is refused. */
    int (*set_world)(void *inst, int world, char *msg, size_t msglen);
    /* Path of the job's `latest` pointer (the default target of the
     * dangling-latest and stale-latest faults). NULL: it keeps none, and
     * those faults are refused. */
    int (*latest_link)(void *inst, char *buf, size_t n);
    /* After a crash: does the state on disk, seen read-only through fs as
     * restarted node `node` would see it, resolve to a committed
     * checkpoint that loads? node is -1 when every disk is shared (one
     * look for the whole job); with node-local disks the runner asks once
     * per node, with that node's view. 0 when it does or nothing was
     * committed yet; else a negative code with msg saying what is wrong.
     * CKH_ENOMEM means the check itself ran out of memory (the process's,
     * not the job's): the run is then an error, not judged. NULL: not
     * checked. */
    int (*verify)(void *inst, struct ckh_fs *fs, int node, char *msg, size_t msglen);
    /* Draws a job shape for `ckh fuzz` from rng. NULL: the fuzzer's
     * defaults (nodes and epochs only). */
    int (*generate)(struct ckh_rng *rng, struct ckh_workload_shape *shape);
};

/* The entry point's type, and its declaration for plugins. */
typedef const struct ckh_workload_ops *(*ckh_workload_plugin_fn)(void);
const struct ckh_workload_ops *ckh_workload_plugin_v1(void);

/* Defines the entry point returning &ops (a static const table). */
#define CKH_WORKLOAD_PLUGIN(ops)                                               \
    __attribute__((visibility("default"))) const struct ckh_workload_ops *     \
    ckh_workload_plugin_v1(void)                                               \
    {                                                                          \
        return &(ops);                                                         \
    }

/* Reports a bad option: "line:col: option 'key': what" into msg (n
 * bytes); returns CKH_EINVAL. For workloads' create. */
int ckh_wl_option_error(char *msg, size_t n, const struct ckh_wl_option *o, const char *what);

/* The built-in workloads' tables (reference/). */
extern const struct ckh_workload_ops ckh_seed_pipeline_workload;
extern const struct ckh_workload_ops ckh_param_server_workload;
extern const struct ckh_workload_ops ckh_ddp_train_workload;

#endif
