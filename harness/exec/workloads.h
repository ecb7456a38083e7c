/* The one workload registry, and what a scenario's job names, resolved.
 *
 * Built-in workloads (seed-pipeline, param-server, ddp-train) are tables
 * of include/ckh/workload.h, listed here exactly as a loaded plugin's
 * table is used: nothing else in the harness knows a workload by name.
 *
 * Names and plugins. job.workload, job.backend and job.saver (its kind)
 * name a built-in, or a plugin library (ckh_scn_is_plugin_path):
 *   - a name with a '/' is a path, taken as given when absolute, else
 *     relative to the scenario file's folder;
 *   - a bare "libname.so" is looked up, in this order:
 *       1. beside the scenario file (in its folder);
 *       2. in each folder of CKH_PLUGIN_PATH (colon-separated), in order;
 *       3. in ckh's plugin folder (exec/home.h): build/plugins for the
 *          build tree's ckh, PREFIX/lib/<triplet>/ckh/plugins for an
 *          installed one;
 *     the first file found is taken; other files of that name further
 *     along are shadowed, and every verdict names them
 *     (ckh_workloads_describe) with the file taken and its build id.
 * Without a scenario file (`ckh list workloads LIB`) the working folder
 * stands for the scenario's folder.
 * A plugin is loaded once per process and stays loaded (its tables live
 * as long as the process), so the tables handed out never dangle.
 */
#ifndef CKH_RUN_WORKLOADS_H
#define CKH_RUN_WORKLOADS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/backend.h"
#include "ckh/saver.h"
#include "ckh/workload.h"
#include "exec/plugin.h"
#include "model/scenario.h"
#include "report.h"

/* How an instance runs the job (the `mode` of a run). */
enum {
    CKH_RUN_NO_DEFECTS = 0x1, /* defect switches off: reference and control runs */
    CKH_RUN_NO_FAULTS = 0x2,  /* the fault-free reference run: no fault-driven set-up,
                                 the world as written */
};
#define CKH_RUN_REFERENCE (CKH_RUN_NO_DEFECTS | CKH_RUN_NO_FAULTS)

/* The built-in workloads (exec/workload_list.h), in listing order; NULL
 * past the end. */
const struct ckh_workload_ops *ckh_workloads_at(size_t i);
/* A built-in workload by name; NULL if none. */
const struct ckh_workload_ops *ckh_workloads_find(const char *name);

/* The built-in savers (exec/saver_list.h), in listing order; NULL past the
 * end. *summary (when summary is not NULL) gets the saver's line for
 * `ckh list savers`; both live as long as the program. */
const struct ckh_saver_ops *ckh_savers_at(size_t i, const char **summary);
/* A built-in saver by name; NULL if none. */
const struct ckh_saver_ops *ckh_savers_find(const char *name);

/* A workload by name: a built-in, or a plugin library (loaded once per
 * process; a relative path is relative to scenario_file's folder, or to
 * the working folder when scenario_file is NULL). CKH_EINVAL with msg
 * listing the built-in names for an unknown one; loading errors as
 * ckh_workloads_resolve says. */
int ckh_workloads_lookup(const char *name, const char *scenario_file, const struct ckh_workload_ops **out,
                         char *msg, size_t msglen);

/* A plugin library of `kind` by name or path, loaded once per process:
 * its table (cast to the kind's ops). Errors as ckh_workloads_resolve. */
int ckh_workloads_plugin(const char *name, const char *scenario_file, enum ckh_plugin_kind kind,
                         const void **table, char *msg, size_t msglen);

/* Where a plugin name led (ckh_workloads_plugin_find). */
struct ckh_plugin_found {
    char path[PATH_MAX]; /* the library taken, as found (relative when its folder is) */
    char shadowed[2048]; /* the other files of that name further along the search
                            path, one per line ("": none; cut short with "...") */
};

/* Finds the library a plugin name leads to, in the order at the top of
 * this file, into *out. CKH_ENOTFOUND with msg naming every place it
 * looked, in order (and, when the file is beside the scenario or in the
 * working folder under another spelling, how to name it); CKH_ELIMIT when
 * CKH_PLUGIN_PATH names too many folders. scenario_file may be NULL. msg
 * does not name the scenario (the caller adds FILE:LINE:COLUMN). */
int ckh_workloads_plugin_find(const char *name, const char *scenario_file, struct ckh_plugin_found *out,
                              char *msg, size_t msglen);

/* What a library file is, for people: "build-id HEX" (its ELF
 * NT_GNU_BUILD_ID note) or, without one, "content-hash HEX" (a 64-bit hash
 * of its bytes); "unreadable" when it cannot be read. */
void ckh_workloads_plugin_id(const char *path, char *buf, size_t n);

/* Adds to r (ckh_report_add_plugin) one entry per plugin library sc's job
 * names (workload, backend, saver kind): the name, the file it resolves
 * to (absolute), its id (ckh_workloads_plugin_id) and the files it
 * shadows. A name that does not resolve is left out (the verdict's error
 * says why). 0, CKH_EINVAL or CKH_ENOMEM. */
int ckh_workloads_describe(const struct ckh_scenario *sc, struct ckh_report_result *r);

/* Where a plugin name leads: the library's path into buf. CKH_ENOTFOUND
 * with msg naming where it looked. scenario_file may be NULL (paths are
 * then relative to the working folder). */
int ckh_workloads_plugin_path(const char *name, const char *scenario_file, char *buf, size_t n,
                              char *msg, size_t msglen);

/* What a scenario's job names. */
struct ckh_resolved {
    const struct ckh_workload_ops *workload; /* the workload's table */
    const struct ckh_backend_ops *backend;   /* job.backend's table (NULL: none named) */
    const struct ckh_saver_ops *saver;       /* job.saver's table (NULL: none named; the
                                                workload then picks its default) */
    uint64_t identity;                       /* digest of the plugin libraries' contents
                                                (0: all built-in): rebuilding a plugin
                                                changes the reference-cache key */
};

/* Resolves sc's workload, backend and saver, loading plugins as needed.
 * Errors, with msg naming the scenario file, the key and what is wrong
 * (exit status 2 for the CLI): CKH_EINVAL for an unknown built-in name,
 * or a backend / saver given to a workload that does not checkpoint
 * through one (nothing is silently ignored); CKH_ENOTFOUND, CKH_EFOREIGN,
 * CKH_EVERSION, CKH_EUNSUPPORTED from loading a plugin. */
int ckh_workloads_resolve(const struct ckh_scenario *sc, struct ckh_resolved *out, char *msg,
                          size_t msglen);

/* The public job of sc for a run with seed, as `mode` says (CKH_RUN_*
 * flags above: a reference run gets no defects and no faults).
 * opts must have room for sc->job.noptions entries; job borrows it, sc
 * and res for its life. */
/* A workload that refuses a job names the scenario key first
 * ("job.nodes: ddp-train supports at most 64 ranks, got 100";
 * include/ckh/workload.h, create). When msg starts with a size key the
 * scenario gave (job.nodes or job.ranks, job.epochs, job.steps,
 * job.gpu_memory, restart.world_size) this puts "LINE:COLUMN: " of its
 * value in front, and writes the key as the file does (job.ranks for
 * job.nodes when the file says ranks), so the message reads
 * "scenario.yaml:7:11: job.epochs: ..." once the file is named. Other
 * messages are left as they are. msg is NUL-terminated, msglen its size;
 * what does not fit is cut at the end. */
void ckh_workloads_locate(const struct ckh_scenario *sc, char *msg, size_t msglen);
void ckh_workloads_job(const struct ckh_scenario *sc, const struct ckh_resolved *res, uint64_t seed,
                       unsigned mode, struct ckh_workload_job *job, struct ckh_wl_option *opts);

#endif
