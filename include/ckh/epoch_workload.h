/* Workloads: jobs a harness can run generically, in the simulator (one
 * simulated node per job node) or in one process (every node in one
 * session), plus the golden results they must reproduce.
 *
 *   seed-pipeline  per node trainer_<i>: dataset 0..9, a reader of at most
 *                  3 records per epoch, total starting at 100; stops when
 *                  the data runs out (4 epochs, totals 103 115 136 145).
 *   param-server   trainer_<i> and ps_<j> nodes; each ps holds a parameter
 *                  shard updated every epoch, trainers use a working buffer
 *                  the size of the model each epoch; the download group
 *                  sends every shard to trainer_0 ("trainer_0/model/ps_<j>"),
 *                  or, with download_every_epoch, the epoch group does.
 *                  Transfers: workspace copies when every node is local,
 *                  else env->coll send/recv (rank = node index).
 */
#ifndef CKH_EPOCH_WORKLOAD_H
#define CKH_EPOCH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/env.h"
#include "ckh/job.h"

struct ckh_workload;

struct ckh_workload_spec {
    const struct ckh_workload *wl; /* which workload */
    int nnodes;                    /* seed-pipeline: nodes; param-server: trainers */
    int num_ps;                    /* param-server: ps nodes (0: 2) */
    int64_t num_epochs;            /* param-server: epochs (0: 3); seed-pipeline: an epoch
                                      limiter (0: none, the data decides) */
    uint64_t param_bytes;          /* param-server: bytes per ps shard (0: 1 MiB) */
    bool download_every_epoch;     /* param-server: the wasteful variant */
    const char *prefix;            /* checkpoint directory ("/ckpt") */
    const char *db_type;           /* backend (NULL: "minidb") */
    bool no_checkpoint;            /* run without a checkpoint manager */
    const char *only_node;         /* seed-pipeline: build only this node's tasks (NULL: all) */
    uint64_t coll_timeout_ns;      /* param-server: timeout of its transfers (0: wait forever) */
    bool resume_set;               /* node_main: resume from resume_epoch (else metadata decides) */
    int64_t resume_epoch;          /* the epoch to resume from when resume_set */
};

#define CKH_WORKLOAD_BLOBS_MAX 1024

/* One node's outcome; lives outside node memory so it survives kills. */
struct ckh_workload_result {
    bool finished;          /* the node main returned normally */
    int rc;                 /* its return code */
    char node[64];          /* node name */
    int64_t epochs;         /* epochs the runner reported */
    int64_t resumed_from;   /* epoch resumed from (-1: from scratch) */
    int64_t total;          /* headline value (see each workload) */
    char blobs[CKH_WORKLOAD_BLOBS_MAX]; /* comma-separated sorted names of the node's blobs */
    uint64_t digest;        /* ckh_ws_digest of the node's blobs ("<node>/...") */
    uint64_t saves_failed;  /* failed (logged) saves */
    uint64_t runs;          /* incarnations that reached the runner */
};

/* The argument of node_main (borrowed for the whole run). */
struct ckh_workload_node_arg {
    const struct ckh_workload_spec *spec; /* the job */
    int node_index;                       /* which node (0..node_count-1) */
    struct ckh_workload_result *result;   /* where to report */
};

struct ckh_workload {
    const char *name;        /* registry name */
    const char *description; /* one line */
    bool collective;         /* nodes talk through env->coll (rank = node index), so
                                a failure of one restarts them all */
    /* Number of nodes the spec's job has. */
    int (*node_count)(const struct ckh_workload_spec *spec);
    /* Name of node index (the name the simulated node must have). */
    int (*node_name)(const struct ckh_workload_spec *spec, int index, char *buf, size_t n);
    /* Adds the workload's tasks to job (created with the caller's allocator). */
    int (*build_job)(const struct ckh_workload_spec *spec, struct ckh_job *job);
    /* Node program for ckh_sim_add_node; arg is a struct ckh_workload_node_arg. */
    int (*node_main)(struct ckh_env *env, void *arg);
};

/* Looks a workload up by name; NULL if unknown. Static storage. */
const struct ckh_workload *ckh_epoch_workload_find(const char *name);
/* The i-th registered workload (NULL past the end), for listings. */
const struct ckh_workload *ckh_epoch_workload_at(size_t i);

/* The generic node program: builds the job, a workspace, a multi-node
 * manager with a metadata handler (so a restarted node resumes from the
 * latest epoch complete on every node), runs it for this node only and
 * fills arg->result. */
int ckh_workload_node_main(struct ckh_env *env, void *arg);

/* Runs every node of the spec in one session on env (a single process),
 * resuming from resume_epoch (-1: metadata decides). results has
 * node_count entries. */
int ckh_workload_run_local(const struct ckh_workload_spec *spec, struct ckh_env *env,
                           int64_t resume_epoch, struct ckh_workload_result *results);

/* Fills r's blobs, digest and total for node from ws. */
int ckh_workload_collect(const struct ckh_workload_spec *spec, const char *node,
                         const struct ckh_ws *ws, struct ckh_workload_result *r);

/* ---- golden results (format: reference/golden/README.md) ---- */

struct ckh_golden {
    char workload[64];          /* workload name */
    int nodes;                  /* spec nnodes */
    int64_t epochs;             /* expected epochs */
    char node[64];              /* node name */
    int64_t total;              /* expected total */
    char blobs[CKH_WORKLOAD_BLOBS_MAX]; /* expected blob names, comma-separated */
    uint64_t digest;            /* expected digest */
};

/* Parses golden text; *out (malloc'd with a, freed with ckh_free(a, *out))
 * holds *n lines. CKH_EPARSE with "line N: ..." in msg on bad input. */
int ckh_golden_parse(struct ckh_alloc *a, const char *text, struct ckh_golden **out, size_t *n,
                     char *msg, size_t msglen);
/* Formats one line (no newline) into buf. */
int ckh_golden_format(const struct ckh_golden *g, char *buf, size_t n);
/* Finds the line for (workload, nodes, node) in v; NULL if none. */
const struct ckh_golden *ckh_golden_find(const struct ckh_golden *v, size_t n, const char *workload,
                                         int nodes, const char *node);
/* Compares a result with a golden line; 0 or CKH_EMISMATCH with what
 * differs in msg. */
int ckh_golden_check(const struct ckh_golden *g, const struct ckh_workload_result *r, char *msg,
                     size_t msglen);

#endif
