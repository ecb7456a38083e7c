/* Loading scenario files in pool workers (see cli_load.h).
 *
 * A parse worker answers with one record (cli/wire.h): u8 parsed, the
 * strings name, description and error, the u64 seed.
 */
#include "cli/cli_load.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/wire.h"
#include "exec/pool.h"
#include "search/fuzz.h"

int ckh_cli_parse_one(const char *path, struct ckh_scenario **scn, struct ckh_scn_error *err)
{
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scn_set set;
    *scn = NULL;
    int rc = ckh_scn_set_load(path, &so, NULL, &set, err);
    if (rc)
        return rc;
    if (set.n == 1) {
        *scn = set.v[0].scn;
        set.v[0].scn = NULL;
        *err = set.v[0].err;
        rc = err->code;
    } else {
        rc = ckh_errf(err->msg, sizeof err->msg, CKH_EINVAL, "not one scenario file");
        err->code = rc;
    }
    ckh_scn_set_free(&set);
    return rc;
}

/* The file's base name without its extension: what the parser would name it. */
static char *base_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, base, len);
        s[len] = '\0';
    }
    return s;
}

struct load_ctx {
    const struct ckh_cli_load *l;   /* options */
    char **files;                   /* every listed file, in order */
    struct ckh_cli_scn *v;          /* one entry per file */
    struct ckh_pool_limits limits;  /* of the parse workers */
    int rc;                         /* first failure in the parent */
};

static int parse_job(void *ctx, uint64_t i, int fd)
{
    struct load_ctx *c = ctx;
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    int rc = ckh_cli_parse_one(c->files[i], &sc, &err);
    char msg[800] = "";
    if (!sc)
        ckh_scn_error_format(&err, msg, sizeof msg);
    struct ckh_wire w;
    int wrc = ckh_wire_open(&w);
    if (wrc == 0) {
        uint8_t parsed = sc != NULL;
        fwrite(&parsed, 1, 1, w.f);
        ckh_wire_put_str(w.f, sc ? sc->name : NULL);
        ckh_wire_put_str(w.f, sc ? sc->description : NULL);
        ckh_wire_put_str(w.f, sc ? NULL : msg);
        ckh_wire_put_u64(w.f, sc ? sc->seed : 0);
        wrc = ckh_wire_send(&w, fd);
    }
    ckh_scenario_free(sc);
    if (wrc)
        return CKH_EXIT_INTERNAL;
    return rc == CKH_ENOMEM ? CKH_EXIT_INTERNAL : CKH_EXIT_OK;
}

static int read_answer(const struct ckh_pool_result *r, struct ckh_cli_scn *e, uint8_t *parsed)
{
    FILE *f = r->status == CKH_POOL_OK ? ckh_wire_reader(r->data, r->len) : NULL;
    if (!f)
        return CKH_ETRUNCATED;
    int rc = fread(parsed, 1, 1, f) == 1 ? 0 : CKH_ETRUNCATED;
    rc = rc ? rc : ckh_wire_get_str(f, &e->name);
    rc = rc ? rc : ckh_wire_get_str(f, &e->description);
    rc = rc ? rc : ckh_wire_get_str(f, &e->error);
    rc = rc ? rc : ckh_wire_get_u64(f, &e->seed);
    fclose(f);
    return rc;
}

static void parse_done(void *ctx, uint64_t i, const struct ckh_pool_result *r)
{
    struct load_ctx *c = ctx;
    struct ckh_cli_scn *e = &c->v[i];
    uint8_t parsed = 0;
    if (read_answer(r, e, &parsed) == 0) {
        e->status = parsed ? CKH_EXIT_OK : CKH_EXIT_BAD_INPUT;
    } else {
        char why[160], msg[1200];
        ckh_pool_describe(r, &c->limits, why, sizeof why);
        snprintf(msg, sizeof msg, "%s: parsing stopped: %s%s", c->files[i], why,
                 r->status == CKH_POOL_TIME_LIMIT ? " (the limit for one scenario file)" : "");
        free(e->error);
        e->error = strdup(msg);
        e->status = r->status == CKH_POOL_TIME_LIMIT || r->status == CKH_POOL_MEM_LIMIT
                        ? CKH_EXIT_BAD_INPUT
                        : CKH_EXIT_INTERNAL;
        parsed = 0;
    }
    if (!e->name)
        e->name = base_name(c->files[i]);
    if (!e->name || (!parsed && !e->error))
        c->rc = CKH_ENOMEM;
}

/* Appends the files under path to *files; reports a path that cannot be listed. */
static int list_path(const struct ckh_cli_load *l, const char *path, char ***files, size_t *n,
                     int *status)
{
    char **v = NULL;
    size_t k = 0;
    int rc = ckh_scn_list_files(path, NULL, &v, &k);
    if (rc == CKH_ENOMEM)
        return rc;
    if (rc) {
        fprintf(stderr, "ckh %s: %s: cannot list scenarios: %s\n", l->verb, path, ckh_scn_list_why(rc));
        *status = CKH_EXIT_BAD_INPUT;
        return 0;
    }
    char **nv = realloc(*files, (*n + k + 1) * sizeof *nv);
    if (!nv) {
        ckh_scn_paths_free(NULL, v, k);
        return CKH_ENOMEM;
    }
    *files = nv;
    if (k) /* a folder with no scenario lists none: v may be NULL */
        memcpy(nv + *n, v, k * sizeof *v);
    *n += k;
    free(v); /* the strings moved to *files */
    return 0;
}

static void scn_clear(struct ckh_cli_scn *e)
{
    free(e->path);
    free(e->name);
    free(e->description);
    free(e->error);
    memset(e, 0, sizeof *e);
}

/* Keeps the entries whose name passes the filter, in order. */
/* Keeps the files that pass the filter and, among them, those of the
 * shard: the same split whatever the machine, since the order is sorted. */
static size_t apply_filter(const struct ckh_cli_load *l, struct ckh_cli_scn *v, size_t n)
{
    size_t k = 0, passed = 0;
    for (size_t i = 0; i < n; i++) {
        bool keep = ckh_scn_filter_match(l->filter, v[i].name);
        if (keep && l->shards > 1)
            keep = passed++ % l->shards == l->shard - 1;
        if (keep)
            v[k++] = v[i];
        else
            scn_clear(&v[i]);
    }
    return k;
}

static unsigned parse_limit_s(void)
{
    const char *env = getenv("CKH_PARSE_LIMIT_S");
    uint64_t v = CKH_CLI_PARSE_LIMIT_S;
    if (env && env[0] && ckh_opt_u64("CKH_PARSE_LIMIT_S", env, 1, 86400, &v, NULL, 0) != 0)
        v = CKH_CLI_PARSE_LIMIT_S;
    return (unsigned)v;
}

int ckh_cli_load_scenarios(const struct ckh_cli_load *l, char *const *paths, size_t npaths,
                           struct ckh_cli_scn **out, size_t *n, int *status)
{
    struct load_ctx c = {.l = l, .limits = {parse_limit_s(), l->mem_bytes}};
    size_t nfiles = 0;
    *out = NULL;
    *n = 0;
    int rc = 0;
    for (size_t i = 0; i < npaths && rc == 0; i++)
        rc = list_path(l, paths[i], &c.files, &nfiles, status);
    if (rc == 0 && nfiles && !(c.v = calloc(nfiles, sizeof *c.v)))
        rc = CKH_ENOMEM;
    static const struct ckh_pool_ops ops = {.run = parse_job, .done = parse_done};
    struct ckh_pool_config cfg = {.workers = l->jobs, .njobs = nfiles, .limits = c.limits,
                                  .ops = &ops, .ctx = &c};
    if (rc == 0 && nfiles)
        rc = ckh_pool_run(&cfg);
    rc = rc ? rc : c.rc;
    for (size_t i = 0; i < nfiles; i++) {
        if (c.v && rc == 0)
            c.v[i].path = c.files[i];
        else
            free(c.files[i]);
    }
    free(c.files);
    if (rc) {
        ckh_cli_scns_free(c.v, c.v ? nfiles : 0);
        return rc;
    }
    *n = apply_filter(l, c.v, nfiles);
    *out = c.v;
    return 0;
}

void ckh_cli_scns_free(struct ckh_cli_scn *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        scn_clear(&v[i]);
    free(v);
}
