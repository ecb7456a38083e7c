/* Swarm testing: one seed, one random scenario; many seeds, many workers.
 *
 * Specification of a fuzz seed (docs/FUZZING.md shows examples):
 *   - An rng seeded with ckh_seed_derive(seed, "fuzz") makes every choice,
 *     in a fixed order, so a seed always yields the same YAML text.
 *   - Shape: the workload (cfg->workload, a built-in name or a plugin
 *     library, else one of the built-in workloads), nodes or ranks,
 *     epochs, then whatever the workload's own `generate` draws (ddp-train:
 *     the step cadence and the saver's keep_last; param-server: its
 *     servers), one shared disk at "/" with a random crash model and
 *     sector size, the restart budget. Faults a workload cannot take (no
 *     collectives, no latest pointer, no devices) are never drawn for it.
 *   - Faults: a random subset of the catalogue kinds, each with its own
 *     rate: a trigger on a random op (and sometimes a phase, a node) fires
 *     either on the nth match or with a probability per match, sometimes
 *     repeating.
 *   - Two tiers decide what must hold whatever the faults do:
 *       "recoverable": only faults a correct job recovers from (kill,
 *         crash, power-loss, errno, fsync-fail, short delays, collective
 *         faults), all confined to runs 1 and 2 while the restart budget
 *         leaves at least two fault-free runs; the job must complete and
 *         equal the fault-free reference (every applicable oracle).
 *       "damaging": anything in the catalogue (disk-full, at-rest
 *         corruption, removed folders, a damaged `latest`) on any run;
 *         the job may legitimately fail, so only the oracles that hold
 *         whatever the faults are checked: hang, no-corrupt-load,
 *         committed and determinism.
 *     A failure without a defect switch therefore means a bug in the code
 *     under test or in ckh itself.
 *   - Every `determinism_every`-th seed also runs with the determinism
 *     check (the faulted job twice, same trace hash).
 *
 * `ckh fuzz` itself (the seeds in pool workers, the failure listing and
 * shrinking) is harness/cli/cli_fuzz.c.
 *
 * Map: coverage and phases · fired faults · generation · one seed.
 */
#include "search/fuzz.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/workloads.h"
#include "ckh/assert.h"
#include "ckh/backend.h"
#include "ckh/defects.h"
#include "ckh/err.h"
#include "ckh/rng.h"
#include "model/fault.h"
#include "judge/oracle.h"
#include "exec/runner.h"
#include "search/shrink.h"
#include "judge/judge.h"

/* ---- coverage and phases ---- */

static const char *const phase_names[] = {
#define CKH__FZ_PH_NAME(e, s) s,
    CKH_FUZZ_PHASE_MAP(CKH__FZ_PH_NAME)
#undef CKH__FZ_PH_NAME
};

enum ckh_fuzz_phase ckh_fuzz_phase_of(const char *phase)
{
    if (!phase || !phase[0])
        return CKH_FUZZ_PH_OTHER;
    for (int p = 0; p < CKH_FUZZ_PH_OTHER; p++)
        if (strcmp(phase_names[p], phase) == 0)
            return (enum ckh_fuzz_phase)p;
    return CKH_FUZZ_PH_OTHER;
}

const char *ckh_fuzz_phase_name(enum ckh_fuzz_phase p)
{
    return (unsigned)p < CKH_FUZZ_PH__COUNT ? phase_names[p] : "?";
}

void ckh_fuzz_coverage_add(struct ckh_fuzz_coverage *a, const struct ckh_fuzz_coverage *b)
{
    if (!a || !b)
        return;
    for (int k = 0; k < CKH_SCN_ACT__COUNT; k++)
        for (int p = 0; p < CKH_FUZZ_PH__COUNT; p++)
            a->hits[k][p] += b->hits[k][p];
}

void ckh_fuzz_coverage_print(FILE *f, const struct ckh_fuzz_coverage *c, bool all_rows)
{
    if (!f || !c)
        return;
    fprintf(f, "%-20s", "fault \\ phase");
    for (int p = 0; p < CKH_FUZZ_PH__COUNT; p++)
        fprintf(f, " %9s", phase_names[p]);
    fprintf(f, " %9s\n", "total");
    for (int k = 0; k < CKH_SCN_ACT__COUNT; k++) {
        uint64_t total = 0;
        for (int p = 0; p < CKH_FUZZ_PH__COUNT; p++)
            total += c->hits[k][p];
        if (!total && !all_rows)
            continue;
        fprintf(f, "%-20s", ckh_scn_action_name((enum ckh_scn_action_kind)k));
        for (int p = 0; p < CKH_FUZZ_PH__COUNT; p++)
            fprintf(f, " %9" PRIu64, c->hits[k][p]);
        fprintf(f, " %9" PRIu64 "\n", total);
    }
}

/* ---- fired faults ---- */

static bool fault_in_run(const struct ckh_scn_fault *f, uint32_t run)
{
    return f->on.run == CKH_SCN_RUN_ANY || f->on.run == run;
}

/* The scenario fault behind simulator rule `rule` of run `run`: the
 * runner arms, in file order, every fault of the run that arms a rule
 * (ckh_fault_arms_rule: neither applied between runs nor the adapter's). */
static long fault_of_rule(const struct ckh_scenario *sc, uint32_t run, uint64_t rule)
{
    uint64_t k = 0;
    for (size_t i = 0; i < sc->nfaults; i++) {
        const struct ckh_scn_fault *f = &sc->faults[i];
        if (!fault_in_run(f, run) || !ckh_fault_arms_rule(f))
            continue;
        if (k++ == rule)
            return (long)i;
    }
    return -1;
}

static int fired_push(struct ckh_fuzz_fired **v, size_t *n, size_t *cap, const struct ckh_fuzz_fired *x)
{
    CKH_ASSERT(*n <= *cap && x->run >= 1 && (x->op < 0 || x->nth >= 1));
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct ckh_fuzz_fired *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return CKH_ENOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = *x;
    return 0;
}

/* The fired fault of trace record rec (a FAULT line at index at of the
 * trace, in run `run` whose records start at begin): which fault, where,
 * the op kind and path, the node's phase (phase[node], nn nodes) and nth,
 * the count of the node's ops of that kind and path in the run so far. */
static void fired_of_record(const struct ckh_sim *sim, const struct ckh_trace_rec *rec, uint64_t at, uint64_t begin,
                            uint32_t run, size_t fault, char (*phase)[16], int nn, struct ckh_fuzz_fired *x)
{
    memset(x, 0, sizeof *x);
    x->fault = fault;
    x->run = run;
    x->node = rec->node;
    x->time_ns = rec->time_ns;
    char opname[32] = "";
    if (rec->path2) {
        const char *colon = strchr(rec->path2, ':');
        size_t l = colon ? (size_t)(colon - rec->path2) : strlen(rec->path2);
        if (l >= sizeof opname)
            l = sizeof opname - 1;
        memcpy(opname, rec->path2, l);
        opname[l] = '\0';
    }
    x->op = ckh_op_from_name(opname);
    snprintf(x->path, sizeof x->path, "%s", rec->path ? rec->path : "");
    if (rec->node >= 0 && rec->node < nn) {
        snprintf(x->phase_name, sizeof x->phase_name, "%s", phase[rec->node]);
        x->phase = ckh_fuzz_phase_of(phase[rec->node]);
    } else {
        x->phase = CKH_FUZZ_PH_OTHER;
    }
    /* nth: this node's earlier ops of the same kind and path in this run, plus one. */
    x->nth = 1;
    for (uint64_t q = begin; q < at; q++) {
        struct ckh_trace_rec o;
        if (ckh_sim_trace_get(sim, q, &o) != 0)
            break;
        if (o.node == rec->node && (int)o.kind == x->op &&
            strcmp(o.path ? o.path : "", x->path) == 0)
            x->nth++;
    }
}

int ckh_fuzz_fired_collect(const struct ckh_sim *sim, const struct ckh_scenario_run *r,
                           struct ckh_fuzz_fired **out, size_t *n)
{
    if (!sim || !r || !out || !n)
        return CKH_EINVAL;
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int nn = ckh_sim_node_count(sim);
    char(*phase)[16] = calloc((size_t)(nn > 0 ? nn : 1), sizeof *phase);
    if (!phase)
        return CKH_ENOMEM;
    int rc = 0;
    uint64_t begin = 0;
    for (size_t ri = 0; ri < r->nruns && rc == 0; ri++) {
        uint32_t run = (uint32_t)r->runs[ri].run;
        uint64_t end = r->runs[ri].trace_end;
        CKH_ASSERT(end >= begin && run == ri + 1); /* one trace, runs in order */
        for (size_t i = 0; i < r->sc->nfaults && rc == 0; i++) {
            const struct ckh_scn_fault *f = &r->sc->faults[i];
            if (!fault_in_run(f, run) || !ckh_fault_applied_between_runs(f))
                continue;
            struct ckh_fuzz_fired x = {.fault = i, .run = run, .node = -1, .op = -1,
                                       .phase = CKH_FUZZ_PH_REST, .time_ns = 0};
            rc = fired_push(out, n, &cap, &x);
        }
        for (uint64_t s = begin; s < end && rc == 0; s++) {
            struct ckh_trace_rec rec;
            if (ckh_sim_trace_get(sim, s, &rec) != 0)
                break;
            if (rec.kind == CKH_OP_PHASE && rec.node >= 0 && rec.node < nn) {
                snprintf(phase[rec.node], sizeof phase[rec.node], "%s", rec.path ? rec.path : "");
                continue;
            }
            if (rec.kind == CKH_OP_START && rec.node >= 0 && rec.node < nn)
                phase[rec.node][0] = '\0';
            if (rec.kind != CKH_OP_FAULT)
                continue;
            long fi = rec.off == UINT64_MAX ? -1 : fault_of_rule(r->sc, run, rec.off);
            if (fi < 0)
                continue; /* fired by a hook, not by the scenario */
            CKH_ASSERT((size_t)fi < r->sc->nfaults);
            struct ckh_fuzz_fired x;
            fired_of_record(sim, &rec, s, begin, run, (size_t)fi, phase, nn, &x);
            rc = fired_push(out, n, &cap, &x);
        }
        begin = end;
    }
    free(phase);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- generation ---- */

struct sbuf {
    char *s;    /* text (NUL-terminated) */
    size_t n;   /* length */
    size_t cap; /* allocated */
    bool oom;   /* an append failed */
};

/* Appends fmt's text to b (a struct sbuf; also the fault descriptors'
 * output, struct ckh_fault_gen.vprintf). */
static void sb_vprintf(void *out, const char *fmt, va_list ap)
{
    struct sbuf *b = out;
    if (b->oom)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    int w = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (w < 0)
        return;
    if (b->n + (size_t)w + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->n + (size_t)w + 1)
            nc *= 2;
        char *ns = realloc(b->s, nc);
        if (!ns) {
            b->oom = true;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    b->n += (size_t)w;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

static uint64_t pick(struct ckh_rng *g, uint64_t lo, uint64_t hi)
{
    return lo + ckh_rng_below(g, hi - lo + 1);
}

static bool chance(struct ckh_rng *g, double p)
{
    return ckh_rng_unit(g) < p;
}

/* One job shape, chosen before the faults. */
struct shape {
    const struct ckh_workload_ops *wl; /* the workload */
    const char *workload;              /* its name as the scenario writes it */
    int nodes;                         /* nodes (or ranks) */
    int epochs;                        /* epochs */
    bool training;                     /* a step-based collective job: the fault generators'
                                          "ddp" file and phase vocabulary */
    bool damaging;                     /* the "damaging" tier (see the top of the file) */
};

/* Whether fault kind ops may be drawn for shape s in its tier: the
 * descriptor generates, belongs to the tier, and the job has what it
 * needs (collectives, a latest pointer, emulated devices). */
static bool fuzzable(const struct ckh_fault_ops *ops, const struct shape *s)
{
    if (!ops->generate || (!s->damaging && !ops->fuzz_recoverable))
        return false;
    if ((ops->needs & CKH_FAULT_NEEDS_LATEST) && !s->wl->latest_link)
        return false;
    /* Collective faults (a rank dying in or mismatching a collective) are
     * drawn for training jobs, whose ranks meet in collectives every step. */
    if ((ops->needs & CKH_FAULT_NEEDS_COLLECTIVES) && !s->training)
        return false;
    if ((ops->needs & CKH_FAULT_NEEDS_DEVICES) && !(s->wl->flags & CKH_WL_DEVICES))
        return false;
    return true;
}

/* Appends fault kind ops, drawn with g, to b. */
static void gen_fault(struct sbuf *b, struct ckh_rng *g, const struct shape *s, const struct ckh_fault_ops *ops)
{
    struct ckh_fault_gen fg = {.rng = g, .nodes = s->nodes, .epochs = s->epochs, .ddp = s->training,
                               .damaging = s->damaging, .vprintf = sb_vprintf, .out = b};
    ckh_fault_generate(ops, &fg);
}

/* The job section's shape lines: the workload's own draws on top of
 * nodes and epochs. */
static int gen_job(struct sbuf *b, struct ckh_rng *g, struct shape *s, const struct ckh_fuzz_config *c)
{
    struct ckh_workload_shape ws = {.nodes = s->nodes, .epochs = s->epochs};
    if (s->wl->generate && s->wl->generate(g, &ws) != 0)
        return CKH_EINVAL;
    if (ws.nodes >= 1 && ws.nodes <= 64)
        s->nodes = ws.nodes;
    if (ws.epochs >= 1 && ws.epochs <= 1000)
        s->epochs = (int)ws.epochs;
    CKH_ASSERT(s->nodes >= 1 && s->nodes <= 64 && s->epochs >= 1 && s->epochs <= 1000);
    sb_printf(b, "job:\n  workload: %s\n  %s: %d\n  epochs: %d\n", s->workload,
              (s->wl->flags & CKH_WL_COLLECTIVE) && s->training ? "ranks" : "nodes", s->nodes, s->epochs);
    if (c->backend && (s->wl->flags & CKH_WL_USES_BACKEND))
        sb_printf(b, "  backend: %s\n", c->backend);
    if (ws.saver)
        sb_printf(b, "  saver: {kind: atomic-dir, keep_last: %d}\n", (int)pick(g, 0, 2));
    if (ws.every_steps > 0)
        sb_printf(b, "  checkpoint_every: {steps: %" PRId64 "}\n", ws.every_steps);
    else if (ws.every_epochs > 0)
        sb_printf(b, "  checkpoint_every: {epochs: %" PRId64 "}\n", ws.every_epochs);
    if (ws.noptions) {
        sb_printf(b, "  options: {");
        for (size_t i = 0; i < ws.noptions && i < CKH_WL_GEN_OPTIONS_MAX; i++)
            sb_printf(b, "%s%s: %s", i ? ", " : "", ws.options[i].key, ws.options[i].value);
        sb_printf(b, "}\n");
    }
    return 0;
}

/* The faults section: 1..4 faults, each of a kind drawn among those
 * the shape can take, with its own trigger and rate. */
static void gen_faults(struct sbuf *b, struct ckh_rng *g, const struct shape *s)
{
    const struct ckh_fault_ops *kinds[CKH_SCN_ACT__COUNT];
    size_t nk = 0;
    for (size_t k = 0; ckh_fault_at(k); k++)
        if (fuzzable(ckh_fault_at(k), s))
            kinds[nk++] = ckh_fault_at(k);
    /* every shape has a fault to draw (kill needs nothing and is recoverable) */
    CKH_ASSERT(nk >= 1 && nk <= CKH_SCN_ACT__COUNT);
    int nfaults = (int)pick(g, 1, 4);
    sb_printf(b, "faults:\n");
    for (int i = 0; i < nfaults; i++)
        gen_fault(b, g, s, kinds[ckh_rng_below(g, nk)]);
}

/* The restart budget (and, for a workload that can, another world size)
 * and what the seed expects of its oracles. */
static void gen_restart_expect(struct sbuf *b, struct ckh_rng *g, const struct shape *s)
{
    int max_restarts = s->damaging ? (int)pick(g, 1, 4) : 4;
    int world_size = 0;
    if (s->wl->set_world && chance(g, 0.25)) { /* restart with another world size */
        world_size = (int)pick(g, 1, 4);
        if (world_size == s->nodes)
            world_size = s->nodes == 1 ? 2 : 1;
    }
    if (world_size)
        sb_printf(b, "restart: {max_restarts: %d, world_size: %d}\n", max_restarts, world_size);
    else
        sb_printf(b, "restart: {max_restarts: %d}\n", max_restarts);
    /* A trigger drawn at random may match nothing: faults-fired is not an
     * expectation of a fuzz seed. */
    if (s->damaging)
        sb_printf(b, "expect:\n  oracles: [hang, no-corrupt-load, committed, determinism]\n");
    else
        sb_printf(b, "expect:\n  skip: [faults-fired]\n");
}

int ckh_fuzz_generate(uint64_t seed, const struct ckh_fuzz_config *cfg, char **out)
{
    struct ckh_fuzz_config dflt = {0};
    const struct ckh_fuzz_config *c = cfg ? cfg : &dflt;
    if (!out)
        return CKH_EINVAL;
    *out = NULL;
    struct shape s = {0};
    /* The first built-in that honours defect switches. */
    const struct ckh_workload_ops *with_defects = NULL;
    for (size_t i = 0; ckh_workloads_at(i) && !with_defects; i++)
        if (ckh_workloads_at(i)->flags & CKH_WL_DEFECTS)
            with_defects = ckh_workloads_at(i);
    if (c->workload && ckh_workloads_lookup(c->workload, NULL, &s.wl, NULL, 0) != 0)
        return CKH_EINVAL;
    struct ckh_rng g;
    ckh_rng_seed(&g, ckh_seed_derive(seed, "fuzz"));
    struct sbuf b = {0};

    size_t nwl = 0;
    while (ckh_workloads_at(nwl))
        nwl++;
    /* Defect switches live in workloads built for them: a fuzz run with a
     * defect and no workload given fuzzes the first such workload. */
    if (!s.wl)
        s.wl = c->defect && c->defect[0] && with_defects ? with_defects : ckh_workloads_at(ckh_rng_below(&g, nwl));
    s.workload = c->workload ? c->workload : s.wl->name;
    s.training = (s.wl->flags & CKH_WL_STEP_BASED) && (s.wl->flags & CKH_WL_COLLECTIVE);
    s.damaging = chance(&g, 0.5);
    s.nodes = (int)pick(&g, 1, 3);
    s.epochs = (int)pick(&g, s.training ? 1 : 2, s.training ? 2 : 4);

    sb_printf(&b, "# ckh fuzz seed %" PRIu64 " (%s tier)\n", seed,
              s.damaging ? "damaging" : "recoverable");
    sb_printf(&b, "name: fuzz-%" PRIu64 "\nseed: %" PRIu64 "\n", seed,
              ckh_seed_derive(seed, "sim") & 0xffffffffu);
    if (gen_job(&b, &g, &s, c) != 0) {
        free(b.s);
        return CKH_EINVAL;
    }
    sb_printf(&b, "  disks:\n    - {mount: /, crash_model: %s, sector: %d}\n",
              chance(&g, 0.5) ? "posix-weak" : "ext4-ordered", chance(&g, 0.5) ? 512 : 4096);
    if (c->defect && c->defect[0] && (s.wl->flags & CKH_WL_DEFECTS))
        sb_printf(&b, "  defects: [%s]\n", c->defect);

    gen_faults(&b, &g, &s);
    gen_restart_expect(&b, &g, &s);
    if (b.oom) {
        free(b.s);
        return CKH_ENOMEM;
    }
    *out = b.s;
    return 0;
}

/* ---- one seed ---- */

#ifdef CKH_SLOW_ASSERTS
/* Whether a generated scenario can be written back, as the shrinker
 * writes every candidate of a failing seed (the writer's own slow check
 * then reads the text back). */
static bool writable(const struct ckh_scenario *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return true; /* no memory: nothing to check */
    int rc = ckh_scenario_write(f, sc);
    if (fclose(f) != 0 && rc == 0)
        rc = CKH_ENOMEM;
    free(buf);
    return rc == 0 || rc == CKH_ENOMEM;
}
#endif

struct cov_ctx {
    struct ckh_fuzz_coverage *cov; /* where hits go */
    int rc;                        /* CKH_ENOMEM when collecting failed */
};

static void count_fired(void *ctx, const struct ckh_sim *sim, const struct ckh_scenario_run *r)
{
    struct cov_ctx *cc = ctx;
    struct ckh_fuzz_fired *v = NULL;
    size_t n = 0;
    if ((cc->rc = ckh_fuzz_fired_collect(sim, r, &v, &n)) != 0)
        return;
    for (size_t i = 0; i < n; i++)
        cc->cov->hits[r->sc->faults[v[i].fault].act.kind][v[i].phase]++;
    free(v);
}

static const char *wl_names[64];
static const char *be_names[64];
static const char *df_names[64];
static const char *or_names[64];
static const char *const sv_names[] = {"atomic-dir"};

void ckh_fuzz_scn_options(struct ckh_scn_options *o)
{
    size_t nw = 0, nb = 0, nd = 0, no = 0;
    for (size_t i = 0; ckh_workloads_at(i) && nw < 64; i++)
        wl_names[nw++] = ckh_workloads_at(i)->name;
    for (size_t i = 0; ckh_backend_at(i) && nb < 64; i++)
        be_names[nb++] = ckh_backend_at(i)->name;
    for (int i = 0; i < CKH_DEFECT__COUNT && nd < 64; i++)
        df_names[nd++] = ckh_defect_name((enum ckh_defect)i);
    for (size_t i = 0; ckh_oracle_at(i) && no < 64; i++)
        or_names[no++] = ckh_oracle_at(i)->name;
    memset(o, 0, sizeof *o);
    o->workloads = (struct ckh_scn_names){wl_names, nw};
    o->backends = (struct ckh_scn_names){be_names, nb};
    o->savers = (struct ckh_scn_names){sv_names, 1};
    o->defects = (struct ckh_scn_names){df_names, nd};
    o->oracles = (struct ckh_scn_names){or_names, no};
}

int ckh_fuzz_run_seed(uint64_t seed, const struct ckh_fuzz_config *cfg,
                      struct ckh_fuzz_seed_result *out, struct ckh_report_result *rr)
{
    struct ckh_fuzz_config dflt = {0};
    const struct ckh_fuzz_config *c = cfg ? cfg : &dflt;
    if (!out)
        return CKH_EINVAL;
    memset(out, 0, sizeof *out);
    out->seed = seed;
    char *text = NULL;
    int rc = ckh_fuzz_generate(seed, c, &text);
    if (rc != 0) {
        out->verdict = CKH_VERDICT_ERROR;
        snprintf(out->message, sizeof out->message, "generating seed %" PRIu64 ": %s", seed,
                 ckh_strerror(rc));
        return rc;
    }
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    char name[64];
    snprintf(name, sizeof name, "fuzz-%" PRIu64 ".yaml", seed);
    if ((rc = ckh_scenario_parse_string(text, strlen(text), name, &so, &sc, &err)) != 0) {
        out->verdict = CKH_VERDICT_ERROR;
        ckh_scn_error_format(&err, out->message, sizeof out->message);
        free(text);
        return rc;
    }
    free(text);
    CKH_ASSERT_SLOW(writable(sc));
    struct cov_ctx cc = {.cov = &out->cov};
    struct ckh_run_options ro = {
        .source_dir = c->source_dir,
        .cache_dir = c->cache_dir,
        .argv0 = c->argv0,
        .check_determinism = c->determinism_every && seed % c->determinism_every == 0,
        .on_trace = count_fired,
        .on_trace_ctx = &cc,
    };
    out->determinism = ro.check_determinism;
    struct ckh_report_result local;
    struct ckh_report_result *res = rr ? rr : &local;
    if (!rr)
        ckh_report_result_init(&local);
    /* An ERROR verdict is the seed's (a generated scenario ckh refuses is
     * a fuzzer bug worth showing); running out of memory is ckh's. */
    int run_rc = ckh_harness_run(sc, &ro, res);
    out->verdict = res->verdict;
    snprintf(out->oracle, sizeof out->oracle, "%s", res->failed_oracle ? res->failed_oracle : "");
    snprintf(out->message, sizeof out->message, "%s", res->message ? res->message : "");
    if (!rr)
        ckh_report_result_clear(&local);
    ckh_scenario_free(sc);
    if (cc.rc != 0 && out->verdict != CKH_VERDICT_ERROR) {
        /* The verdict stands, but the seed's coverage is incomplete. */
        out->verdict = CKH_VERDICT_ERROR;
        snprintf(out->oracle, sizeof out->oracle, "%s", "");
        snprintf(out->message, sizeof out->message, "%s: collecting the faults that fired: %s (%s)", name,
                 ckh_strerror(cc.rc), ckh_err_name(cc.rc));
    }
    return cc.rc ? cc.rc : run_rc == CKH_ENOMEM ? run_rc : 0;
}

bool ckh_fuzz_in_shard(uint64_t seed, uint32_t index, uint32_t count)
{
    if (count <= 1)
        return true;
    return seed % count == (uint64_t)(index - 1);
}
