/* The one workload and saver registry (the lists are exec/workload_list.h
 * and exec/saver_list.h) and the resolution of a scenario's names
 * (exec/workloads.h). */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/rng.h"
#include "exec/home.h"
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

/* ---- finding a plugin ----
 *
 * The one order (exec/workloads.h; docs/SCENARIOS.md, "Plugins in a
 * scenario"): a name with a '/' is a path, relative to the scenario's
 * folder unless absolute; a bare "libname.so" is looked up beside the
 * scenario, then in each folder of CKH_PLUGIN_PATH, then in ckh's plugin
 * folder (exec/home.h). The first file found is taken; other files of that
 * name further along the way are shadowed, and said so. */

#define PLACES_MAX 32 /* beside the scenario, CKH_PLUGIN_PATH, ckh's folder */

/* The folders a bare name is looked up in, in order: beside the scenario,
 * CKH_PLUGIN_PATH's, ckh's plugin folder. */
struct places {
    const char *dir[PLACES_MAX];  /* not NUL-terminated: len[i] bytes */
    size_t len[PLACES_MAX];
    size_t n;
    bool too_many;                /* CKH_PLUGIN_PATH has more folders than fit */
    char home[PATH_MAX];          /* ckh's plugin folder ("" unknown) */
};

static void places_add(struct places *pl, const char *dir, size_t len)
{
    if (pl->n == PLACES_MAX) {
        pl->too_many = true;
        return;
    }
    pl->dir[pl->n] = dir;
    pl->len[pl->n++] = len;
}

/* The scenario file's folder (the working folder, ".", without one). */
static void scenario_dir(const char *scenario_file, const char **dir, size_t *len)
{
    const char *slash = scenario_file ? strrchr(scenario_file, '/') : NULL;
    *dir = slash ? scenario_file : ".";
    *len = slash ? (slash == scenario_file ? 1 : (size_t)(slash - scenario_file)) : 1;
}

static void places_of(const char *scenario_file, struct places *pl)
{
    const char *dir;
    size_t len;
    memset(pl, 0, sizeof *pl);
    scenario_dir(scenario_file, &dir, &len);
    places_add(pl, dir, len);
    for (const char *p = getenv("CKH_PLUGIN_PATH"); p && *p;) {
        const char *end = strchr(p, ':');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        if (l)
            places_add(pl, p, l);
        p = end ? end + 1 : p + l;
    }
    /* ckh's own folder comes last even when CKH_PLUGIN_PATH is long. */
    if (ckh_home_plugins_dir(pl->home, sizeof pl->home)) {
        if (pl->n == PLACES_MAX) {
            pl->too_many = true;
            pl->n--;
        }
        places_add(pl, pl->home, strlen(pl->home));
    }
}

/* dir/name into buf when that is a file; *st gets its identity. */
static bool try_dir(const char *dir, size_t dirlen, const char *name, char *buf, size_t n, struct stat *st)
{
    int w = snprintf(buf, n, "%.*s%s%s", (int)dirlen, dir, dirlen && dir[dirlen - 1] == '/' ? "" : "/", name);
    return w > 0 && (size_t)w < n && stat(buf, st) == 0 && S_ISREG(st->st_mode);
}

/* Appends line to the '\n'-separated list in buf (cut short, with "...",
 * when it does not fit). */
static void list_add(char *buf, size_t n, const char *line)
{
    size_t at = strlen(buf);
    if (at + 4 >= n)
        return;
    int w = snprintf(buf + at, n - at, "%s%s", at ? "\n" : "", line);
    if (w < 0 || (size_t)w >= n - at)
        snprintf(buf + (n > 4 ? n - 4 : 0), n > 4 ? 4 : n, "...");
}

/* Appends formatted text to the string in buf (cut short when full). */
static void appendf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t n, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, n - at, fmt, ap);
    va_end(ap);
}

/* When base is a file beside the scenario: a hint suggesting "./base". */
static void beside_hint(const char *scenario_file, const char *base, char *hint, size_t n)
{
    const char *dir;
    size_t len;
    char path[PATH_MAX];
    struct stat st;
    scenario_dir(scenario_file, &dir, &len);
    hint[0] = '\0';
    if (base[0] && !strchr(base, '/') && try_dir(dir, len, base, path, sizeof path, &st))
        snprintf(hint, n, "; %s is beside the scenario: write ./%s", path, base);
}

int ckh_workloads_plugin_find(const char *name, const char *scenario_file, struct ckh_plugin_found *out,
                              char *msg, size_t msglen)
{
    if (!name || !name[0] || !out)
        return CKH_EINVAL;
    memset(out, 0, sizeof *out);
    struct stat st;
    char hint[PATH_MAX + 64] = "";
    if (strchr(name, '/')) {
        const char *dir;
        size_t len;
        scenario_dir(scenario_file, &dir, &len);
        const char *rel = name;
        while (rel[0] == '.' && rel[1] == '/') /* "./libx.so": the folder itself */
            rel += 2;
        int w = name[0] == '/' ? snprintf(out->path, sizeof out->path, "%s", name)
                               : snprintf(out->path, sizeof out->path, "%.*s/%s", (int)len, dir, rel);
        if (w < 0 || (size_t)w >= sizeof out->path)
            return ckh_errf(msg, msglen, CKH_EINVAL, "plugin path '%s' is too long", name);
        if (stat(out->path, &st) == 0 && S_ISREG(st.st_mode))
            return 0;
        beside_hint(scenario_file, strrchr(name, '/') + 1, hint, sizeof hint);
        if (name[0] == '/')
            return ckh_errf(msg, msglen, CKH_ENOTFOUND, "plugin %s: no such file%s", name, hint);
        return ckh_errf(msg, msglen, CKH_ENOTFOUND,
                        "plugin %s: no such file %s (a path is taken from the scenario's folder)%s", name,
                        out->path, hint);
    }
    struct places pl;
    places_of(scenario_file, &pl);
    if (pl.too_many)
        return ckh_errf(msg, msglen, CKH_ELIMIT, "plugin %s: CKH_PLUGIN_PATH names more than %d folders", name,
                        PLACES_MAX - 2);
    struct stat taken;
    bool found = false;
    for (size_t i = 0; i < pl.n; i++) {
        char path[PATH_MAX];
        if (!try_dir(pl.dir[i], pl.len[i], name, path, sizeof path, &st))
            continue;
        if (!found) {
            snprintf(out->path, sizeof out->path, "%s", path);
            taken = st;
            found = true;
        } else if (st.st_dev != taken.st_dev || st.st_ino != taken.st_ino) {
            list_add(out->shadowed, sizeof out->shadowed, path);
        }
    }
    if (found)
        return 0;
    /* Not found: every place, in order, each named once. */
    const char *env = getenv("CKH_PLUGIN_PATH");
    char where[2048] = "";
    appendf(where, sizeof where, "beside the scenario (%.*s), in CKH_PLUGIN_PATH (%s)", (int)pl.len[0], pl.dir[0],
            env ? env : "unset");
    if (pl.home[0])
        appendf(where, sizeof where, " and in ckh's plugin folder (%s)", pl.home);
    /* In the working folder but not beside the scenario: the usual slip. */
    if (!(pl.len[0] == 1 && pl.dir[0][0] == '.') && try_dir(".", 1, name, hint, sizeof hint, &st))
        snprintf(hint, sizeof hint,
                 "; ./%s is in the working folder: name it by its path from the scenario's folder, or add "
                 "its folder to CKH_PLUGIN_PATH",
                 name);
    else
        hint[0] = '\0';
    return ckh_errf(msg, msglen, CKH_ENOTFOUND, "plugin %s not found; looked %s%s", name, where, hint);
}

int ckh_workloads_plugin_path(const char *name, const char *scenario_file, char *buf, size_t n,
                              char *msg, size_t msglen)
{
    struct ckh_plugin_found found;
    if (!buf || n == 0)
        return CKH_EINVAL;
    int rc = ckh_workloads_plugin_find(name, scenario_file, &found, msg, msglen);
    if (rc)
        return rc;
    int w = snprintf(buf, n, "%s", found.path);
    return w > 0 && (size_t)w < n ? 0 : ckh_errf(msg, msglen, CKH_EINVAL, "plugin path '%s' is too long", name);
}

/* ---- what a library is: its build id, else its contents' hash ---- */

/* The ELF NT_GNU_BUILD_ID note of the file at path, as hex, into buf. */
static bool elf_build_id(FILE *f, char *buf, size_t n)
{
    unsigned char ident[EI_NIDENT];
    if (fread(ident, 1, sizeof ident, f) != sizeof ident || memcmp(ident, ELFMAG, SELFMAG) != 0)
        return false;
    uint64_t phoff, nph, phentsize;
    bool is64 = ident[EI_CLASS] == ELFCLASS64;
    union {
        Elf64_Ehdr e64;
        Elf32_Ehdr e32;
    } eh;
    const unsigned char native = (union { uint16_t u; unsigned char c; }){.u = 1}.c ? ELFDATA2LSB : ELFDATA2MSB;
    if (ident[EI_DATA] != native || (!is64 && ident[EI_CLASS] != ELFCLASS32) || fseek(f, 0, SEEK_SET) != 0 ||
        fread(&eh, 1, is64 ? sizeof eh.e64 : sizeof eh.e32, f) != (is64 ? sizeof eh.e64 : sizeof eh.e32))
        return false;
    phoff = is64 ? eh.e64.e_phoff : eh.e32.e_phoff;
    nph = is64 ? eh.e64.e_phnum : eh.e32.e_phnum;
    phentsize = is64 ? eh.e64.e_phentsize : eh.e32.e_phentsize;
    if (phentsize != (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) || nph > 256)
        return false;
    for (uint64_t i = 0; i < nph; i++) {
        union {
            Elf64_Phdr p64;
            Elf32_Phdr p32;
        } ph;
        if (fseek(f, (long)(phoff + i * phentsize), SEEK_SET) != 0 || fread(&ph, 1, phentsize, f) != phentsize)
            return false;
        uint64_t type = is64 ? ph.p64.p_type : ph.p32.p_type;
        uint64_t off = is64 ? ph.p64.p_offset : ph.p32.p_offset;
        uint64_t size = is64 ? ph.p64.p_filesz : ph.p32.p_filesz;
        unsigned char note[4096];
        if (type != PT_NOTE || size > sizeof note || fseek(f, (long)off, SEEK_SET) != 0 ||
            fread(note, 1, size, f) != size)
            continue;
        /* Notes: namesz, descsz, type, then name and desc, each padded to 4. */
        for (uint64_t at = 0; at + 12 <= size;) {
            uint32_t hdr[3];
            memcpy(hdr, note + at, sizeof hdr);
            uint64_t name_at = at + 12, desc_at = name_at + ((hdr[0] + 3u) & ~3u);
            uint64_t next = desc_at + ((hdr[1] + 3u) & ~3u);
            if (next > size || desc_at + hdr[1] > size)
                break;
            if (hdr[2] == NT_GNU_BUILD_ID && hdr[0] == 4 && memcmp(note + name_at, "GNU", 4) == 0 && hdr[1] &&
                hdr[1] * 2 < n) {
                for (uint32_t b = 0; b < hdr[1]; b++)
                    snprintf(buf + 2 * b, 3, "%02x", note[desc_at + b]);
                return true;
            }
            at = next;
        }
    }
    return false;
}

void ckh_workloads_plugin_id(const char *path, char *buf, size_t n)
{
    char hex[2 * 64 + 1];
    FILE *f = path && buf && n ? fopen(path, "rb") : NULL;
    if (!f) {
        if (buf && n)
            snprintf(buf, n, "unreadable");
        return;
    }
    if (elf_build_id(f, hex, sizeof hex)) {
        snprintf(buf, n, "build-id %s", hex);
    } else {
        unsigned char chunk[65536];
        size_t got;
        uint64_t h = CKH_HASH_INIT;
        rewind(f);
        while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
            h = ckh_hash64(h, chunk, got);
        snprintf(buf, n, "content-hash %016" PRIx64, h);
    }
    fclose(f);
}

/* ---- loaded plugins: once per process ---- */

#define LOADED_MAX 32

static struct loaded {
    char path[PATH_MAX];        /* as resolved */
    enum ckh_plugin_kind kind;  /* what it was loaded as */
    struct ckh_plugin *p;       /* kept loaded for the process's life */
    uint64_t digest;            /* of the library's bytes */
    char id[160];               /* ckh_workloads_plugin_id */
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
    ckh_workloads_plugin_id(path, l->id, sizeof l->id);
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

/* ---- what a scenario's plugins are ---- */

int ckh_workloads_describe(const struct ckh_scenario *sc, struct ckh_report_result *r)
{
    if (!sc || !r)
        return CKH_EINVAL;
    const struct {
        const char *role, *name;
    } named[] = {{"workload", sc->job.workload}, {"backend", sc->job.backend}, {"saver", sc->job.saver.kind}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (!named[i].name || !ckh_scn_is_plugin_path(named[i].name))
            continue;
        struct ckh_plugin_found f;
        if (ckh_workloads_plugin_find(named[i].name, sc->file, &f, NULL, 0) != 0)
            continue; /* the verdict's error says why */
        char path[PATH_MAX], id[160] = "", shadowed[sizeof f.shadowed] = "";
        for (size_t k = 0; k < nloaded && !id[0]; k++) /* its id as loaded */
            if (strcmp(loaded[k].path, f.path) == 0)
                snprintf(id, sizeof id, "%s", loaded[k].id);
        if (!realpath(f.path, path))
            snprintf(path, sizeof path, "%s", f.path);
        if (!id[0])
            ckh_workloads_plugin_id(path, id, sizeof id);
        for (char *line = f.shadowed, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            char abs[PATH_MAX];
            if ((nl = strchr(line, '\n')) != NULL)
                *nl = '\0';
            list_add(shadowed, sizeof shadowed, realpath(line, abs) ? abs : line);
        }
        int rc = ckh_report_add_plugin(r, named[i].role, named[i].name, path, id, shadowed[0] ? shadowed : NULL);
        if (rc)
            return rc;
    }
    return 0;
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
        /* "libmyloop" for the libmyloop.so beside the scenario. */
        char hint[PATH_MAX + 64] = "", file[256];
        snprintf(file, sizeof file, "%s.so", name);
        beside_hint(scenario_file, file, hint, sizeof hint);
        if (!hint[0] && strncmp(name, "lib", 3) != 0) {
            snprintf(file, sizeof file, "lib%s.so", name);
            beside_hint(scenario_file, file, hint, sizeof hint);
        }
        return ckh_errf(msg, msglen, CKH_EINVAL,
                        "unknown workload '%s' (built-in: %s; a plugin is a path or a lib*.so name)%s", name, known,
                        hint);
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

/* A name of sc's job that did not resolve: "FILE:LINE:COLUMN: KEY: WHY"
 * (no line:column when the scenario was not read from a file). */
static int job_err(const struct ckh_scenario *sc, const char *key, int line, int column, int rc, const char *why,
                   char *msg, size_t msglen)
{
    if (!why[0]) /* out of memory before anything was said */
        why = ckh_strerror(rc);
    if (line > 0)
        return ckh_errf(msg, msglen, rc, "%s:%d:%d: %s: %s", sc->file, line, column, key, why);
    return ckh_errf(msg, msglen, rc, "%s: %s: %s", sc->file, key, why);
}

static int resolve_workload(const struct ckh_scenario *sc, struct ckh_resolved *out, char *msg, size_t msglen)
{
    uint64_t d = 0;
    char why[PATH_MAX + 512] = "";
    int rc = lookup(sc->job.workload, sc->file, &out->workload, &d, why, sizeof why);
    if (rc)
        return job_err(sc, "job.workload", sc->job.workload_line, sc->job.workload_column, rc, why, msg, msglen);
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
    int rc = load_plugin(name, sc->file, CKH_PLUGIN_BACKEND, &t, &d, why, sizeof why);
    if (rc)
        return job_err(sc, "job.backend", sc->job.backend_line, sc->job.backend_column, rc, why, msg, msglen);
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
    char why[1024] = "";
    int rc = load_plugin(name, sc->file, CKH_PLUGIN_SAVER, &t, &d, why, sizeof why);
    if (rc)
        return job_err(sc, "job.saver", sc->job.saver_line, sc->job.saver_column, rc, why, msg, msglen);
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
