/* The one workload and saver registry (the lists are exec/workload_list.h
 * and exec/saver_list.h) and the resolution of a scenario's names
 * (exec/workloads.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/rng.h"
#include "exec/plugin.h"
#include "exec/workloads.h"
#include "exec/saver_list.h"
#include "exec/workload_list.h"

/* The built-in workloads of exec/workload_list.h, in its order. */
static const struct ckh_workload_ops *const builtins[] = {
#define CKH__WORKLOAD_REF(id) &ckh_##id##_workload,
    CKH_WORKLOAD_LIST(CKH__WORKLOAD_REF)
#undef CKH__WORKLOAD_REF
};

/* The built-in savers of exec/saver_list.h, in its order. */
static const struct {
    const struct ckh_saver_ops *ops; /* the saver's table */
    const char *summary;             /* its line in `ckh list savers` */
} savers[] = {
#define CKH__SAVER_REF(id, summary) {&ckh_##id##_saver_ops, summary},
    CKH_SAVER_LIST(CKH__SAVER_REF)
#undef CKH__SAVER_REF
};

const struct ckh_workload_ops *ckh_workloads_at(size_t i)
{
    return i < sizeof builtins / sizeof builtins[0] ? builtins[i] : NULL;
}

const struct ckh_workload_ops *ckh_workloads_find(const char *name)
{
    for (size_t i = 0; name && ckh_workloads_at(i); i++)
        if (strcmp(ckh_workloads_at(i)->name, name) == 0)
            return ckh_workloads_at(i);
    return NULL;
}

const struct ckh_saver_ops *ckh_savers_at(size_t i, const char **summary)
{
    if (i >= sizeof savers / sizeof savers[0])
        return NULL;
    if (summary)
        *summary = savers[i].summary;
    return savers[i].ops;
}

const struct ckh_saver_ops *ckh_savers_find(const char *name)
{
    for (size_t i = 0; name && ckh_savers_at(i, NULL); i++)
        if (strcmp(ckh_savers_at(i, NULL)->name, name) == 0)
            return ckh_savers_at(i, NULL);
    return NULL;
}

/* ---- finding a plugin ---- */

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* dir/name into buf when that is a file. */
static bool try_dir(const char *dir, size_t dirlen, const char *name, char *buf, size_t n)
{
    int w = snprintf(buf, n, "%.*s/%s", (int)dirlen, dir, name);
    return w > 0 && (size_t)w < n && is_file(buf);
}

/* The folder of the running executable + "/plugins". */
static bool exe_plugins(char *buf, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return false;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    int w = snprintf(buf, n, "%s/plugins", exe);
    return w > 0 && (size_t)w < n;
}

int ckh_workloads_plugin_path(const char *name, const char *scenario_file, char *buf, size_t n,
                              char *msg, size_t msglen)
{
    if (!name || !name[0] || !buf || n == 0)
        return CKH_EINVAL;
    if (strchr(name, '/')) {
        const char *slash = scenario_file ? strrchr(scenario_file, '/') : NULL;
        int w = name[0] == '/' || !slash ? snprintf(buf, n, "%s", name)
                                         : snprintf(buf, n, "%.*s/%s", (int)(slash - scenario_file),
                                                    scenario_file, name);
        if (w < 0 || (size_t)w >= n)
            return ckh_errf(msg, msglen, CKH_EINVAL, "plugin path '%s' is too long", name);
        if (!is_file(buf))
            return ckh_errf(msg, msglen, CKH_ENOTFOUND, "plugin %s: no such file%s", buf,
                            name[0] == '/' ? "" : " (paths are relative to the scenario file)");
        return 0;
    }
    const char *path = getenv("CKH_PLUGIN_PATH");
    for (const char *p = path; p && *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && try_dir(p, len, name, buf, n))
            return 0;
        p = end ? end + 1 : p + len;
    }
    char dir[PATH_MAX];
    if (exe_plugins(dir, sizeof dir) && try_dir(dir, strlen(dir), name, buf, n))
        return 0;
#ifdef CKH_PLUGIN_INSTALL_DIR
    if (try_dir(CKH_PLUGIN_INSTALL_DIR, strlen(CKH_PLUGIN_INSTALL_DIR), name, buf, n))
        return 0;
#endif
    return ckh_errf(msg, msglen, CKH_ENOTFOUND,
                    "plugin %s not found in CKH_PLUGIN_PATH (%s) nor in %s", name, path ? path : "unset",
                    exe_plugins(dir, sizeof dir) ? dir : "the executable's plugins/ folder");
}

/* ---- loaded plugins: once per process ---- */

#define LOADED_MAX 32

static struct loaded {
    char path[PATH_MAX];        /* as resolved */
    enum ckh_plugin_kind kind;  /* what it was loaded as */
    struct ckh_plugin *p;       /* kept loaded for the process's life */
    uint64_t digest;            /* of the library's bytes */
} loaded[LOADED_MAX];
static size_t nloaded;

static uint64_t file_digest(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint64_t h = ckh_hash64(CKH_HASH_INIT, path, strlen(path) + 1);
    if (!f)
        return h;
    unsigned char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        h = ckh_hash64(h, buf, got);
    fclose(f);
    return h;
}

/* The table of plugin `name` of `kind`; *digest gets its identity. */
static int load_plugin(const char *name, const char *scenario_file, enum ckh_plugin_kind kind,
                       const void **table, uint64_t *digest, char *msg, size_t msglen)
{
    char path[PATH_MAX], why[PATH_MAX + 512] = "";
    unsigned limit_ms = 0;
    int rc = ckh_workloads_plugin_path(name, scenario_file, path, sizeof path, msg, msglen);
    if (rc)
        return rc;
    for (size_t i = 0; i < nloaded; i++)
        if (loaded[i].kind == kind && strcmp(loaded[i].path, path) == 0) {
            *table = ckh_plugin_table(loaded[i].p);
            *digest = loaded[i].digest;
            return 0;
        }
    if (nloaded == LOADED_MAX)
        return ckh_errf(msg, msglen, CKH_ELIMIT, "plugin %s: more than %d plugins in one run", path,
                        LOADED_MAX);
    struct loaded *l = &loaded[nloaded];
    /* A constructor or entry point that crashes or hangs ends a probe's
     * child, not this process (exec/plugin.c P3); only a library that
     * loaded there is loaded here. */
    if ((rc = ckh_plugin_timeout_ms(&limit_ms, msg, msglen)) != 0)
        return rc;
    if ((rc = ckh_plugin_probe(path, kind, limit_ms, why, sizeof why)) != 0)
        return ckh_errf(msg, msglen, rc, "%s", why);
    if ((rc = ckh_plugin_load_kind(path, kind, &l->p, why, sizeof why)) != 0)
        return ckh_errf(msg, msglen, rc, "%s", why);
    snprintf(l->path, sizeof l->path, "%s", path);
    l->kind = kind;
    l->digest = file_digest(path);
    nloaded++;
    *table = ckh_plugin_table(l->p);
    *digest = l->digest;
    return 0;
}

int ckh_workloads_plugin(const char *name, const char *scenario_file, enum ckh_plugin_kind kind,
                         const void **table, char *msg, size_t msglen)
{
    uint64_t d;
    return load_plugin(name, scenario_file, kind, table, &d, msg, msglen);
}

/* ---- resolving a scenario's names ---- */

/* A workload by name, and the identity of its library (0: built-in). */
static int lookup(const char *name, const char *scenario_file, const struct ckh_workload_ops **out,
                  uint64_t *digest, char *msg, size_t msglen)
{
    *digest = 0;
    if (!name)
        return CKH_EINVAL;
    if (!ckh_scn_is_plugin_path(name)) {
        *out = ckh_workloads_find(name);
        if (*out)
            return 0;
        char known[256] = "";
        for (size_t i = 0, at = 0; ckh_workloads_at(i) && at < sizeof known; i++)
            at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "", ckh_workloads_at(i)->name);
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "unknown workload '%s' (built-in: %s; a plugin is a path or a lib*.so name)", name, known);
    }
    const void *t = NULL;
    int rc = load_plugin(name, scenario_file, CKH_PLUGIN_WORKLOAD, &t, digest, msg, msglen);
    if (rc == 0)
        *out = t;
    return rc;
}

int ckh_workloads_lookup(const char *name, const char *scenario_file, const struct ckh_workload_ops **out,
                         char *msg, size_t msglen)
{
    uint64_t d;
    const struct ckh_workload_ops *wl = NULL;
    int rc = lookup(name, scenario_file, &wl, &d, msg, msglen);
    if (rc == 0 && out)
        *out = wl;
    return rc;
}

static int resolve_workload(const struct ckh_scenario *sc, struct ckh_resolved *out, char *msg, size_t msglen)
{
    uint64_t d = 0;
    char why[PATH_MAX + 512] = "";
    int rc = lookup(sc->job.workload, sc->file, &out->workload, &d, why, sizeof why);
    if (rc)
        return ckh_errf(msg, msglen, rc, "%s: job.workload: %s", sc->file, why);
    if (d)
        out->identity = ckh_hash64(out->identity, &d, sizeof d);
    return 0;
}

static int resolve_backend(const struct ckh_scenario *sc, struct ckh_resolved *out, char *msg, size_t msglen)
{
    const char *name = sc->job.backend;
    char why[PATH_MAX + 512] = "";
    if (!name)
        return 0;
    if (!(out->workload->flags & CKH_WL_USES_BACKEND))
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "%s: job.backend: workload '%s' does not checkpoint through a backend, so "
                        "'%s' would be ignored; remove job.backend",
                        sc->file, out->workload->name, name);
    if (!ckh_scn_is_plugin_path(name)) {
        int rc = ckh_backend_find(name, &out->backend, why, sizeof why);
        return rc ? ckh_errf(msg, msglen, rc, "%s: job.backend: %s", sc->file, why) : 0;
    }
    const void *t = NULL;
    uint64_t d = 0;
    int rc = load_plugin(name, sc->file, CKH_PLUGIN_BACKEND, &t, &d, msg, msglen);
    if (rc)
        return rc;
    out->backend = t;
    out->identity = ckh_hash64(out->identity, &d, sizeof d);
    /* Epoch workloads open their backend by name: make the plugin's known. */
    const struct ckh_backend_ops *known = NULL;
    if (ckh_backend_find(out->backend->name, &known, NULL, 0) == 0 && known != out->backend)
        return ckh_errf(msg, msglen, CKH_EEXISTS,
                        "%s: job.backend: plugin %s calls its backend '%s', a name already taken",
                        sc->file, name, out->backend->name);
    if (!known && (rc = ckh_backend_register(out->backend)) != 0)
        return ckh_errf(msg, msglen, rc, "%s: job.backend: plugin %s: %s", sc->file, name,
                        rc == CKH_ELIMIT ? "more backends than one ckh process registers (the limit is 16, "
                                           "built-in ones included)"
                                         : ckh_strerror(rc));
    return 0;
}

static int resolve_saver(const struct ckh_scenario *sc, struct ckh_resolved *out, char *msg, size_t msglen)
{
    const char *name = sc->job.saver.kind;
    if (!name)
        return 0;
    if (!(out->workload->flags & CKH_WL_USES_SAVER))
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "%s: job.saver: workload '%s' does not save through a directory saver, so "
                        "'%s' would be ignored; remove job.saver",
                        sc->file, out->workload->name, name);
    if (!ckh_scn_is_plugin_path(name)) {
        out->saver = ckh_savers_find(name);
        if (out->saver)
            return 0;
        char known[256] = "";
        for (size_t i = 0, at = 0; ckh_savers_at(i, NULL) && at < sizeof known; i++)
            at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "", ckh_savers_at(i, NULL)->name);
        return ckh_errf(msg, msglen, CKH_EINVAL, "%s: job.saver: unknown saver '%s' (known: %s)", sc->file, name,
                        known);
    }
    const void *t = NULL;
    uint64_t d = 0;
    int rc = load_plugin(name, sc->file, CKH_PLUGIN_SAVER, &t, &d, msg, msglen);
    if (rc)
        return rc;
    out->saver = t;
    out->identity = ckh_hash64(out->identity, &d, sizeof d);
    return 0;
}

int ckh_workloads_resolve(const struct ckh_scenario *sc, struct ckh_resolved *out, char *msg, size_t msglen)
{
    int rc;
    if (!sc || !out)
        return CKH_EINVAL;
    memset(out, 0, sizeof *out);
    if ((rc = resolve_workload(sc, out, msg, msglen)) != 0 || (rc = resolve_backend(sc, out, msg, msglen)) != 0 ||
        (rc = resolve_saver(sc, out, msg, msglen)) != 0)
        return rc;
    return 0;
}

/* ---- the public job ---- */

static enum ckh_wl_option_type option_type(enum ckh_scn_value_type t)
{
    switch (t) {
    case CKH_SCN_INT: return CKH_WL_OPT_INT;
    case CKH_SCN_FLOAT: return CKH_WL_OPT_FLOAT;
    case CKH_SCN_BOOL: return CKH_WL_OPT_BOOL;
    default: return CKH_WL_OPT_STRING;
    }
}

void ckh_workloads_locate(const struct ckh_scenario *sc, char *msg, size_t msglen)
{
    if (!sc || !msg || !msglen)
        return;
    const struct ckh_scn_job *j = &sc->job;
    const struct {
        const char *key;   /* as workloads write it */
        const char *shown; /* as the file has it */
        int line, column;
    } keys[] = {
        {"job.nodes", j->nodes_as_ranks ? "job.ranks" : "job.nodes", j->nodes_line, j->nodes_column},
        {"job.ranks", j->nodes_as_ranks ? "job.ranks" : "job.nodes", j->nodes_line, j->nodes_column},
        {"job.epochs", "job.epochs", j->epochs_line, j->epochs_column},
        {"job.steps", "job.steps", j->steps_line, j->steps_column},
        {"job.gpu_memory", "job.gpu_memory", j->gpu_memory_line, j->gpu_memory_column},
        {"restart.world_size", "restart.world_size", sc->restart.world_size_line,
         sc->restart.world_size_column},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t klen = strlen(keys[i].key);
        if (strncmp(msg, keys[i].key, klen) != 0 || msg[klen] != ':' || keys[i].line <= 0)
            continue;
        char *rest = strdup(msg + klen);
        if (!rest)
            return; /* the message stays as the workload wrote it */
        snprintf(msg, msglen, "%d:%d: %s%s", keys[i].line, keys[i].column, keys[i].shown, rest);
        free(rest);
        return;
    }
}

void ckh_workloads_job(const struct ckh_scenario *sc, const struct ckh_resolved *res, uint64_t seed,
                       unsigned mode, struct ckh_workload_job *job, struct ckh_wl_option *opts)
{
    const struct ckh_scn_job *j = &sc->job;
    memset(job, 0, sizeof *job);
    job->scenario = sc->file;
    job->seed = seed;
    job->flags = (mode & CKH_RUN_NO_FAULTS) ? CKH_WL_JOB_REFERENCE : 0;
    for (size_t i = 0; !(mode & CKH_RUN_NO_FAULTS) && i < sc->nfaults; i++)
        if (sc->faults[i].act.kind == CKH_SCN_ACT_GPU_OOM)
            job->flags |= CKH_WL_JOB_GPU_OOM;
    job->nodes = (int)(j->nodes ? j->nodes : 1);
    job->epochs = j->epochs;
    job->steps = (int64_t)j->steps;
    job->checkpoint_dir = j->checkpoint_dir ? j->checkpoint_dir : "/ckpt";
    job->every_epochs = j->every_epochs;
    job->every_steps = (int64_t)j->every_steps;
    job->collective_timeout_ns = j->collective_timeout_ns;
    job->gpu_mem_bytes = j->gpu_mem_bytes;
    job->reshard = true;
    job->backend = res->backend;
    job->saver = res->saver;
    job->saver_config = (struct ckh_saver_config){
        .output_dir = job->checkpoint_dir,
        .name = j->saver.name,
        .keep_last = j->saver.keep_last ? (int)j->saver.keep_last : -1,
        .strategy = j->saver.strategy == CKH_SCN_SYNC_ALL ? CKH_SAVER_SYNC_ALL
                    : j->saver.strategy == CKH_SCN_ASYNC  ? CKH_SAVER_ASYNC
                                                          : CKH_SAVER_SYNC_ANY,
        .timeout_ns = j->collective_timeout_ns,
    };
    for (size_t i = 0; i < j->noptions; i++) {
        const struct ckh_scn_kv *kv = &j->options[i];
        opts[i] = (struct ckh_wl_option){.key = kv->key, .text = kv->text, .type = option_type(kv->type),
                                         .i = kv->i, .f = kv->f, .b = kv->b, .line = kv->line,
                                         .column = kv->column};
        opts[i].has_size = kv->text && ckh_scn_parse_size(kv->text, &opts[i].size) == 0;
        if (strcmp(kv->key, "reshard") == 0 && kv->type == CKH_SCN_BOOL)
            job->reshard = kv->b;
    }
    job->options = opts;
    job->noptions = j->noptions;
    if (!(mode & CKH_RUN_NO_DEFECTS)) {
        job->defects = j->defects;
        job->ndefects = j->ndefects;
    }
    if (!(mode & CKH_RUN_NO_FAULTS))
        job->world_restart = (int)sc->restart.world_size;
}
