/* Shrinking: a failing scenario in, the smallest scenario we can find that
 * still fails the same oracle out.
 *
 * Specification:
 *   1. Run the input once; it must fail (verdict FAIL). Its first failed
 *      oracle is the target; a candidate "still fails" when its first
 *      failed oracle is the target.
 *   2. Concrete schedule: from the run's trace, every fault that fired
 *      becomes one fault with an exact trigger {node, op, path, nth, run}
 *      (nth counts that node's ops of that kind on that path in that run);
 *      at-rest faults applied between runs are kept; faults that never
 *      fired are dropped. Used only when the concrete scenario still fails
 *      (faults whose trigger fired more than 256 times stay as written).
 *   3. Passes, repeated until one changes nothing or the run budget
 *      (default 400 runs) is spent; each accepts a candidate only when it
 *      still fails:
 *        drop faults   ddmin-style: chunks of n/2, n/4, ..., 1;
 *        earlier       nth 1 then nth/2; run r -> r-1; no `repeat`;
 *        smaller job   nodes 1 then nodes-1 (faults on nodes that would
 *                      not exist are dropped with them), epochs 1 then
 *                      epochs-1, steps halved, restart budget cut to the
 *                      runs the failure needs.
 *   4. The result is written with ckh_scenario_write: a scenario file
 *      `ckh run` replays, naming the target oracle in its description.
 * Every candidate runs with a private reference-run cache, so candidates
 * that change only faults cost one faulted run each.
 *
 * Map: candidate runs · concrete schedule · passes · commands (the writer
 * is harness/model/writer.c).
 */
#include "search/shrink.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "exec/runner.h"
#include "exec/tmpdir.h"
#include "judge/judge.h"


/* Writes sc into a malloc'd string. */
static int write_text(const struct ckh_scenario *sc, char **out)
{
    size_t len = 0;
    *out = NULL;
    FILE *f = open_memstream(out, &len);
    if (!f)
        return CKH_ENOMEM;
    int rc = ckh_scenario_write(f, sc);
    if (fclose(f) != 0 && rc == 0)
        rc = CKH_ENOMEM;
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- candidate runs ---- */

struct shrinker {
    const struct ckh_shrink_config *cfg; /* budget, paths */
    struct ckh_scn_options so;           /* names accepted */
    char cache[64];                      /* private reference cache folder ("" if none) */
    char oracle[64];                     /* the target */
    bool determinism;                    /* the target is the determinism oracle */
    size_t runs;                         /* runs so far */
    size_t max_runs;                     /* budget */
    struct ckh_scenario *cur;            /* smallest failing scenario so far (owned) */
    char *error;                         /* why the last run did not run (malloc'd; NULL: it ran) */
};

struct fired_ctx {
    struct ckh_fuzz_fired *v; /* fired faults (malloc'd) */
    size_t n;                 /* count */
    int rc;                   /* collection result */
};

static void collect_fired(void *ctx, const struct ckh_sim *sim, const struct ckh_scenario_run *r)
{
    struct fired_ctx *fc = ctx;
    fc->rc = ckh_fuzz_fired_collect(sim, r, &fc->v, &fc->n);
}

/* Runs sc once: 1 when it fails the target oracle (or any, with no target
 * yet: then the target is set), 0 otherwise, negative on error. */
static int still_fails(struct shrinker *s, const struct ckh_scenario *sc, struct fired_ctx *fired)
{
    struct ckh_run_options ro = {
        .source_dir = s->cfg->source_dir,
        .cache_dir = s->cache[0] ? s->cache : NULL,
        .argv0 = s->cfg->argv0,
        .check_determinism = s->determinism,
        .on_trace = fired ? collect_fired : NULL,
        .on_trace_ctx = fired,
    };
    struct ckh_report_result rr;
    ckh_report_result_init(&rr);
    s->runs++;
    int rc = ckh_harness_run(sc, &ro, &rr);
    free(s->error);
    s->error = rc && rr.message ? strdup(rr.message) : NULL;
    int ok = 0;
    if (rr.verdict == CKH_VERDICT_FAIL && rr.failed_oracle) {
        if (!s->oracle[0])
            snprintf(s->oracle, sizeof s->oracle, "%s", rr.failed_oracle);
        ok = strcmp(rr.failed_oracle, s->oracle) == 0;
    }
    ckh_report_result_clear(&rr);
    return ok;
}

/* Writes the candidate, parses it back and runs it; on success it
 * replaces s->cur. Returns 1 accepted, 0 rejected, negative on error. */
static int try_candidate(struct shrinker *s, const struct ckh_scenario *cand)
{
    if (s->runs >= s->max_runs)
        return 0;
    char *text = NULL;
    int rc = write_text(cand, &text);
    if (rc)
        return rc;
    struct ckh_scenario *parsed = NULL;
    struct ckh_scn_error err;
    rc = ckh_scenario_parse_string(text, strlen(text), s->cur->file, &s->so, &parsed, &err);
    free(text);
    if (rc)
        return 0; /* a candidate the grammar refuses is simply not smaller */
    rc = still_fails(s, parsed, NULL);
    if (rc == 1) {
        ckh_scenario_free(s->cur);
        s->cur = parsed;
        return 1;
    }
    ckh_scenario_free(parsed);
    return rc;
}

/* ---- concrete schedule ---- */

static bool glob_free(const char *p)
{
    return !strpbrk(p, "*?[\\");
}

/* Builds the concrete fault list from what fired; *out (malloc'd) borrows
 * strings from sc and from fired. */
static int concrete_faults(const struct ckh_scenario *sc, const struct ckh_fuzz_fired *v, size_t n,
                           struct ckh_scn_fault **out, size_t *nout)
{
    size_t *per = calloc(sc->nfaults + 1, sizeof *per);
    struct ckh_scn_fault *f = calloc(n + sc->nfaults + 1, sizeof *f);
    if (!per || !f) {
        free(per);
        free(f);
        return CKH_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        per[v[i].fault]++;
    size_t k = 0;
    for (size_t i = 0; i < sc->nfaults; i++) {
        const struct ckh_scn_fault *src = &sc->faults[i];
        bool op_trigger = src->on.matches_ops;
        if (!op_trigger || !ckh_fault_arms_rule(src) || per[i] > 256) {
            f[k++] = *src; /* between runs, adapter-handled or too many: as written */
            continue;
        }
        for (size_t x = 0; x < n; x++) {
            if (v[x].fault != i)
                continue;
            /* A phase announcement's "path" is the phase's name, which a
             * trigger cannot name as a path (the grammar refuses it): such
             * a fault stays as written, like one whose path is a glob. */
            if (v[x].op < 0 || v[x].op == CKH_OP_PHASE || !glob_free(v[x].path)) {
                f[k++] = *src;
                break;
            }
            struct ckh_scn_fault c = *src;
            c.on.node = v[x].node;
            c.on.node_name = NULL;
            c.on.op = v[x].op;
            c.on.path = v[x].path[0] ? v[x].path : NULL;
            c.on.phase = NULL;
            c.on.epoch = -1;
            c.on.step = -1;
            c.on.nth = v[x].nth;
            c.on.time_ns = 0;
            c.on.probability = 0;
            c.on.repeat = false;
            c.on.run = v[x].run;
            c.on.matches_ops = true;
            f[k++] = c;
        }
    }
    free(per);
    *out = f;
    *nout = k;
    return 0;
}

/* ---- passes ---- */

/* A shallow copy of s->cur with faults replaced (strings borrowed). */
static struct ckh_scenario with_faults(const struct ckh_scenario *cur, struct ckh_scn_fault *f, size_t n)
{
    struct ckh_scenario c = *cur;
    c.faults = f;
    c.nfaults = n;
    return c;
}

static int pass_drop(struct shrinker *s, bool *changed)
{
    size_t chunk = s->cur->nfaults / 2 ? s->cur->nfaults / 2 : 1;
    while (s->cur->nfaults > 0 && s->runs < s->max_runs) {
        bool any = false;
        for (size_t start = 0; start < s->cur->nfaults && s->runs < s->max_runs;) {
            size_t n = s->cur->nfaults;
            size_t end = start + chunk < n ? start + chunk : n;
            struct ckh_scn_fault *f = malloc(n * sizeof *f);
            if (!f)
                return CKH_ENOMEM;
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (i < start || i >= end)
                    f[k++] = s->cur->faults[i];
            struct ckh_scenario c = with_faults(s->cur, f, k);
            int rc = try_candidate(s, &c);
            free(f);
            if (rc < 0)
                return rc;
            if (rc == 1)
                any = *changed = true; /* the same start now names the next chunk */
            else
                start = end;
        }
        if (chunk == 1 && !any)
            break;
        if (chunk > 1)
            chunk /= 2;
    }
    return 0;
}

static int try_fault_change(struct shrinker *s, size_t i, const struct ckh_scn_fault *nf, bool *changed)
{
    size_t n = s->cur->nfaults;
    struct ckh_scn_fault *f = malloc(n * sizeof *f);
    if (!f)
        return CKH_ENOMEM;
    memcpy(f, s->cur->faults, n * sizeof *f);
    f[i] = *nf;
    struct ckh_scenario c = with_faults(s->cur, f, n);
    int rc = try_candidate(s, &c);
    free(f);
    if (rc == 1)
        *changed = true;
    return rc < 0 ? rc : 0;
}

static int pass_earlier(struct shrinker *s, bool *changed)
{
    for (size_t i = 0; i < s->cur->nfaults && s->runs < s->max_runs; i++) {
        struct ckh_scn_fault nf = s->cur->faults[i];
        int rc;
        if (nf.on.repeat) {
            nf.on.repeat = false;
            if ((rc = try_fault_change(s, i, &nf, changed)) != 0)
                return rc;
            nf = s->cur->faults[i];
        }
        if (nf.on.probability == 0 && nf.on.nth > 1) {
            uint64_t want[2] = {1, nf.on.nth / 2};
            for (int w = 0; w < 2; w++) {
                nf = s->cur->faults[i];
                if (want[w] >= nf.on.nth || want[w] < 1)
                    continue;
                nf.on.nth = want[w];
                if ((rc = try_fault_change(s, i, &nf, changed)) != 0)
                    return rc;
            }
        }
        nf = s->cur->faults[i];
        if (nf.on.run > 1) {
            nf.on.run--;
            if ((rc = try_fault_change(s, i, &nf, changed)) != 0)
                return rc;
        }
    }
    return 0;
}

static int pass_job(struct shrinker *s, bool *changed)
{
    int rc;
    /* Fewer nodes: 1 first, then one less. */
    uint32_t cand_nodes[2] = {1, s->cur->job.nodes > 1 ? s->cur->job.nodes - 1 : 1};
    for (int w = 0; w < 2; w++) {
        uint32_t nn = cand_nodes[w];
        if (nn >= s->cur->job.nodes || s->runs >= s->max_runs)
            continue;
        struct ckh_scenario c = *s->cur;
        c.job.nodes = nn;
        /* Drop faults on nodes that would not exist. */
        struct ckh_scn_fault *f = malloc((s->cur->nfaults + 1) * sizeof *f);
        if (!f)
            return CKH_ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < s->cur->nfaults; i++)
            if (s->cur->faults[i].on.node < (int)nn && !s->cur->faults[i].on.node_name)
                f[k++] = s->cur->faults[i];
        c.faults = f;
        c.nfaults = k;
        if (c.restart.world_size > nn)
            c.restart.world_size = 0;
        rc = try_candidate(s, &c);
        free(f);
        if (rc < 0)
            return rc;
        if (rc == 1)
            *changed = true;
    }
    uint32_t cand_epochs[2] = {1, s->cur->job.epochs > 1 ? s->cur->job.epochs - 1 : 1};
    for (int w = 0; w < 2; w++) {
        if (!s->cur->job.epochs || cand_epochs[w] >= s->cur->job.epochs || s->runs >= s->max_runs)
            continue;
        struct ckh_scenario c = *s->cur;
        c.job.epochs = cand_epochs[w];
        if ((rc = try_candidate(s, &c)) < 0)
            return rc;
        if (rc == 1)
            *changed = true;
    }
    if (s->cur->job.steps > 1 && s->runs < s->max_runs) {
        struct ckh_scenario c = *s->cur;
        c.job.steps = s->cur->job.steps / 2;
        if ((rc = try_candidate(s, &c)) < 0)
            return rc;
        if (rc == 1)
            *changed = true;
    }
    if (s->cur->restart.max_restarts > 1 && s->runs < s->max_runs) {
        struct ckh_scenario c = *s->cur;
        c.restart.max_restarts = s->cur->restart.max_restarts - 1;
        if ((rc = try_candidate(s, &c)) < 0)
            return rc;
        if (rc == 1)
            *changed = true;
    }
    return 0;
}

static void cache_remove(const char *dir)
{
    if (!dir[0])
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Parses the input into s (private cache folder made); refuses a scenario
 * that expects a planted defect to be detected. */
static int shrink_open(struct shrinker *s, const char *text, size_t len, const char *name, char *msg,
                       size_t msglen)
{
    struct ckh_scn_error err;
    ckh_fuzz_scn_options(&s->so);
    if (ckh_scenario_parse_string(text, len, name, &s->so, &s->cur, &err) != 0) {
        ckh_scn_error_format(&err, msg, msglen);
        return CKH_EINVAL;
    }
    if (s->cur->expect.ndetect) {
        /* Such a scenario fails when its planted defect goes undetected;
         * shrinking that would only remove what could detect it. */
        snprintf(msg, msglen, "%s expects a planted defect to be detected (expect.detect): remove "
                              "expect.detect to shrink the failure the defect causes",
                 name ? name : "the scenario");
        ckh_scenario_free(s->cur);
        s->cur = NULL;
        return CKH_EINVAL;
    }
    snprintf(s->cache, sizeof s->cache, "%s/ckh-shrink-XXXXXX", ckh_tmp_base()); /* $TMPDIR */
    if (!mkdtemp(s->cache))
        s->cache[0] = '\0';
    return 0;
}

/* Step 1: the input must fail; *fired gets what fired. */
static int input_fails(struct shrinker *s, struct fired_ctx *fired, const char *name, char *msg,
                       size_t msglen)
{
    int rc = still_fails(s, s->cur, fired);
    if (rc <= 0 && !s->oracle[0]) {
        /* A determinism failure shows only with the check on. */
        s->determinism = true;
        free(fired->v);
        memset(fired, 0, sizeof *fired);
        rc = still_fails(s, s->cur, fired);
    }
    if (rc <= 0 && s->error) {
        /* It did not run (a plugin that does not load, a job the workload
         * refuses): that message, not "does not fail". */
        snprintf(msg, msglen, "%s", s->error);
        return CKH_EINVAL;
    }
    if (rc <= 0) {
        snprintf(msg, msglen, "%s does not fail: nothing to shrink", name ? name : "the scenario");
        return CKH_EINVAL;
    }
    s->determinism = strcmp(s->oracle, "determinism") == 0;
    return 0;
}

/* Step 2: the concrete schedule, kept when it still fails. */
static int make_concrete(struct shrinker *s, const struct fired_ctx *fired, struct ckh_shrink_stats *st)
{
    struct ckh_scn_fault *cf = NULL;
    size_t ncf = 0;
    int rc = concrete_faults(s->cur, fired->v, fired->n, &cf, &ncf);
    if (rc != 0)
        return rc;
    struct ckh_scenario c = with_faults(s->cur, cf, ncf);
    rc = try_candidate(s, &c);
    free(cf);
    if (rc < 0)
        return rc;
    st->concrete = rc == 1;
    return 0;
}

int ckh_shrink_text(const char *text, size_t len, const char *name,
                    const struct ckh_shrink_config *cfg, char **out, struct ckh_shrink_stats *st,
                    char *msg, size_t msglen)
{
    struct ckh_shrink_config dflt = {0};
    struct shrinker s;
    struct ckh_shrink_stats local;
    struct fired_ctx fired = {0};
    char dummy[8];
    int rc;
    if (!msg) {
        msg = dummy;
        msglen = sizeof dummy;
    }
    msg[0] = '\0';
    if (!text || !out)
        return CKH_EINVAL;
    *out = NULL;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    memset(&s, 0, sizeof s);
    s.cfg = cfg ? cfg : &dflt;
    s.max_runs = s.cfg->max_runs ? s.cfg->max_runs : 400;
    if ((rc = shrink_open(&s, text, len, name, msg, msglen)) != 0)
        return rc;
    st->faults_before = s.cur->nfaults;
    st->nodes_before = s.cur->job.nodes;
    if ((rc = input_fails(&s, &fired, name, msg, msglen)) != 0)
        goto out;
    if (fired.rc == 0 && (rc = make_concrete(&s, &fired, st)) != 0)
        goto out;
    /* 3. Passes until nothing changes. */
    for (bool changed = true; changed && s.runs < s.max_runs;) {
        changed = false;
        if ((rc = pass_drop(&s, &changed)) < 0 || (rc = pass_earlier(&s, &changed)) < 0 ||
            (rc = pass_job(&s, &changed)) < 0)
            goto out;
    }
    /* 4. The result, saying what it reproduces. */
    char desc[256];
    snprintf(desc, sizeof desc, "shrunk from %s in %zu runs; fails oracle %s",
             name ? name : "a failing scenario", s.runs, s.oracle);
    struct ckh_scenario c = *s.cur;
    c.description = desc;
    rc = write_text(&c, out);
    st->runs = s.runs;
    st->faults_after = s.cur->nfaults;
    st->nodes_after = s.cur->job.nodes;
    snprintf(st->oracle, sizeof st->oracle, "%s", s.oracle);
out:
    free(fired.v);
    free(s.error);
    ckh_scenario_free(s.cur);
    cache_remove(s.cache);
    return rc;
}

int ckh_shrink_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -EIO;
}

int ckh_shrink_seed(uint64_t seed, const struct ckh_fuzz_config *fc,
                    const struct ckh_shrink_config *cfg, const char *path,
                    struct ckh_shrink_stats *st, char *msg, size_t msglen)
{
    char *text = NULL, *out = NULL;
    int rc = ckh_fuzz_generate(seed, fc, &text);
    if (rc)
        return rc;
    char name[64];
    snprintf(name, sizeof name, "fuzz seed %" PRIu64, seed);
    rc = ckh_shrink_text(text, strlen(text), name, cfg, &out, st, msg, msglen);
    free(text);
    if (rc == 0 && path && (rc = ckh_shrink_write(path, out)) != 0 && msg)
        snprintf(msg, msglen, "cannot write %s: %s", path, ckh_strerror(rc));
    free(out);
    return rc;
}
