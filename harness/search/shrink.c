/* Shrinking: a failing scenario in, the smallest scenario we can find that
 * still fails the same oracle for the same cause out.
 *
 * Specification:
 *   1. Run the input once; it must fail (verdict FAIL). Its cause is the
 *      target; a candidate "still fails" when its cause is the target's.
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
 *   4. No silent faults: the result runs once more, and each fault that
 *      did not fire in that run (its trigger matched nothing, or its
 *      change did not land) is dropped, last first, when the scenario
 *      still fails without it. This pass is outside the budget (one run,
 *      and one per such fault), so that a spent budget leaves no fault in
 *      the file that the failure does not need.
 *   5. The result is written with ckh_scenario_write: a scenario file
 *      `ckh run` replays, its description naming the oracle and the cause.
 *
 * The cause of a failure is its first failed oracle and the kind of its
 * first difference, with what shrinking legitimately changes (step and run
 * numbers, node names and counts, digests, checkpoint folders) left out:
 *   resume-equivalence  the distinct kinds and names of what differs at
 *                       the first divergent step ("first divergence:
 *                       optim, rng, weights"; "missing NAME", "extra
 *                       NAME", "epoch", "no record", "extra record"), or
 *                       "samples" when only an epoch's samples differ;
 *   no-corrupt-load     the kinds of the damaging faults that fired and,
 *                       as for resume-equivalence, what differs first;
 *   outcome             the expected outcome, how the job ended, and when
 *                       it failed each distinct "ERROR in PHASE" of the
 *                       nodes that ended with an error in the causal run
 *                       (the run the oracle's first cause names), or that
 *                       run's own report, masked as below;
 *   determinism         the oracle alone;
 *   any other oracle    its detail's first line masked: every word holding
 *                       a digit becomes '#' ("rank_1, rank_2" one '#'),
 *                       asides in parentheses go, a repeated "; " clause
 *                       is written once, and a word after a '#' compares
 *                       without a plural 's' ("# run" = "# runs"); for
 *                       hang and liveness only up to the first ':' (which
 *                       run and which ranks hung is detail).
 * And a failure that no fault caused stays so: when no fault fired in the
 * input's run (a planted defect or a wrong expectation alone), a candidate
 * still fails only if no fault fires in its run either, and the final
 * pass leaves a scenario with no faults at all. Where the runs give no
 * record to look at (a job the simulator does not run), every oracle's
 * cause is its masked detail.
 *
 * Every candidate runs with a private reference-run cache, so candidates
 * that change only faults cost one faulted run each.
 *
 * Map: the cause · candidate runs · concrete schedule · passes · commands (the writer
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
#include "judge/oracle.h"


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

/* ---- the cause ---- */

/* What the run hook saw of a run, for its cause and the final pass. */
struct run_facts {
    bool seen;                   /* the hook ran (a simulated job) */
    bool want_fired;             /* collect what fired for the concrete schedule */
    struct ckh_fuzz_fired *v;    /* fired triggers (malloc'd; want_fired only) */
    size_t n;                    /* count */
    int rc;                      /* collection result */
    uint64_t *landed;            /* per fault: times it fired (malloc'd; NULL: not counted) */
    size_t nfaults;              /* length of landed */
    bool any_landed;             /* some fault fired (or firings are not counted) */
    char divergence[160];        /* ckh__resume_first_divergence ("" none) */
    char damage[96];             /* damaging fault kinds that fired, sorted */
    char ended[320];             /* outcome: how the job ended and its first cause */
    bool ended_report;           /* the first cause is the causal run's report (the message's) */
};

static void facts_clear(struct run_facts *f)
{
    free(f->v);
    free(f->landed);
    memset(f, 0, sizeof *f);
}

/* Appends "SEP TEXT" to buf (n bytes) at *used, truncating. */
static void append(char *buf, size_t n, size_t *used, const char *text)
{
    if (*used + 1 >= n)
        return;
    int k = snprintf(buf + *used, n - *used, "%s%s", *used ? ", " : "", text);
    *used = k > 0 && *used + (size_t)k < n ? *used + (size_t)k : n - 1;
}

/* Adds word to the sorted, distinct, comma-separated set in buf. */
static void set_add(char *buf, size_t n, const char *word)
{
    char tmp[512] = "";
    size_t used = 0;
    bool placed = false;
    for (const char *p = buf; *p;) {
        size_t len = strcspn(p, ",");
        char cur[160];
        snprintf(cur, sizeof cur, "%.*s", (int)len, p);
        if (strcmp(cur, word) == 0)
            return;
        if (!placed && strcmp(word, cur) < 0) {
            append(tmp, sizeof tmp, &used, word);
            placed = true;
        }
        append(tmp, sizeof tmp, &used, cur);
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    if (!placed)
        append(tmp, sizeof tmp, &used, word);
    snprintf(buf, n, "%s", tmp);
}

/* The outcome oracle's view of the job's end (harness/judge/outcome_check.c):
 * how it ended and, when it failed, its first cause: each distinct
 * "ERROR in PHASE" of the nodes that ended with an error in the causal
 * run (the first failed run with no node killed, else the last failed
 * run); *report when that run has a report of its own instead (a command
 * job's node that exited, a deadlock), which cause_of masks. */
static void outcome_facts(const struct ckh_scenario_run *r, char *buf, size_t n, bool *report)
{
    const char *end = !r->completed ? "job-fails" : r->saves_failed > 0 ? "save-fails" : "pass";
    char causes[256] = "";
    const struct ckh_run_info *ri = NULL;
    for (size_t i = 0; i < r->nruns; i++) {
        if (r->runs[i].completed)
            continue;
        ri = &r->runs[i];
        if (!r->runs[i].crashed)
            break;
    }
    for (size_t i = 0; ri && !ri->report[0] && i < ri->nnodes; i++) {
        const struct ckh_node_end *ne = &ri->nodes[i];
        int code = ne->state == CKH_NODE_EXITED ? ne->exit_status : 0;
        if (!code)
            continue;
        char w[96];
        snprintf(w, sizeof w, "%s%s%s", ckh_err_name(code), ne->phase[0] ? " in " : "", ne->phase);
        set_add(causes, sizeof causes, w);
    }
    int k = snprintf(buf, n, "expected %s, the job ended %s%s", ckh_scn_outcome_name(r->sc->expect.outcome),
                     end, r->deadlock_seen ? " after a deadlock" : "");
    if (k < 0 || (size_t)k >= n || r->completed)
        return;
    if (ri && ri->report[0])
        *report = true;
    else
        snprintf(buf + k, n - (size_t)k, ": %s", causes[0] ? causes : "no node failed with an error");
}

/* Kinds the no-corrupt-load oracle counts as damage
 * (harness/judge/no_corrupt_load_check.c). */
static bool damaging(const struct ckh_scenario *sc, const struct ckh_scn_fault *f)
{
    enum ckh_scn_action_kind k = f->act.kind;
    return k == CKH_SCN_ACT_CORRUPT || k == CKH_SCN_ACT_STALE_LATEST || k == CKH_SCN_ACT_DANGLING_LATEST ||
           (k == CKH_SCN_ACT_KILL && sc->job.ndefects == 0);
}

/* The run hook: records what the cause and the passes need. */
static void take_facts(void *ctx, const struct ckh_sim *sim, const struct ckh_scenario_run *r)
{
    struct run_facts *f = ctx;
    f->seen = true;
    if (f->want_fired)
        f->rc = ckh_fuzz_fired_collect(sim, r, &f->v, &f->n);
    f->any_landed = !r->fault_fired;
    if (r->fault_fired && r->sc->nfaults) {
        f->landed = malloc(r->sc->nfaults * sizeof *f->landed);
        if (f->landed) {
            memcpy(f->landed, r->fault_fired, r->sc->nfaults * sizeof *f->landed);
            f->nfaults = r->sc->nfaults;
        } else if (f->rc == 0) {
            f->rc = CKH_ENOMEM;
        }
    }
    for (size_t i = 0; i < r->sc->nfaults; i++) {
        bool fired = !r->fault_fired || r->fault_fired[i] > 0;
        f->any_landed |= fired;
        if (fired && damaging(r->sc, &r->sc->faults[i]))
            set_add(f->damage, sizeof f->damage, ckh_scn_action_name(r->sc->faults[i].act.kind));
    }
    ckh__resume_first_divergence(r, f->divergence, sizeof f->divergence);
    outcome_facts(r, f->ended, sizeof f->ended, &f->ended_report);
}

/* The cause of a failure: see the top of the file. */
struct cause {
    char oracle[64];  /* the first failed oracle */
    char what[384];   /* the kind of first difference, as the description shows it */
    char key[384];    /* what, as causes are compared (plurals after '#' made singular) */
    bool bare;        /* no fault fired: the failure is the code's (a planted defect) alone */
};

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* text's first line with what shrinking legitimately changes masked:
 * every word holding a digit (steps, runs, counts, node names such as
 * rank_1, digests, checkpoint folders) becomes '#' (a list of them one
 * '#'), with singular a word right after a '#' loses a plural 's' (for
 * comparing, not for showing), parenthesised asides go, a "; " clause
 * already written is not repeated, and with cut the text ends at its
 * first ':'. */
static void mask(const char *text, bool cut, bool singular, char *out, size_t n)
{
    char flat[1024];
    size_t k = 0;
    int depth = 0;
    bool after_num = false;
    for (const char *p = text ? text : ""; *p && *p != '\n' && k + 2 < sizeof flat;) {
        if (*p == '(' || *p == ')') {
            depth += *p == '(' ? 1 : depth > 0 ? -1 : 0;
            if (*p++ == ')' && k && flat[k - 1] == ' ' && (*p == ' ' || *p == ';' || *p == ':' || !*p))
                k--; /* "a (b) c" -> "a c" */
            continue;
        }
        if (depth) {
            p++;
            continue;
        }
        if (cut && *p == ':')
            break;
        if (!word_char(*p)) {
            if (*p != ' ')
                after_num = false;
            flat[k++] = *p++;
            continue;
        }
        const char *w = p;
        bool digit = false;
        for (; word_char(*p); p++)
            digit |= *p >= '0' && *p <= '9';
        if (digit) {
            if (k >= 3 && memcmp(flat + k - 3, "#, ", 3) == 0)
                k -= 2; /* "rank_0, rank_1" -> "#" */
            else
                flat[k++] = '#';
            after_num = true;
            continue;
        }
        size_t len = (size_t)(p - w);
        if (singular && after_num && len > 1 && w[len - 1] == 's')
            len--;
        after_num = false;
        if (k + len + 1 >= sizeof flat)
            break;
        memcpy(flat + k, w, len);
        k += len;
    }
    while (k && flat[k - 1] == ' ')
        k--;
    flat[k] = '\0';
    /* Distinct "; " clauses, in order. */
    size_t used = 0;
    out[0] = '\0';
    for (char *c = flat; c && *c && used + 1 < n;) {
        char *next = strstr(c, "; ");
        if (next)
            *next = '\0';
        bool dup = false;
        for (const char *q = out; *q && !dup;) {
            size_t len = strcspn(q, ";");
            dup = len == strlen(c) && strncmp(q, c, len) == 0;
            q += len;
            while (*q == ';' || *q == ' ')
                q++;
        }
        if (!dup) {
            int w = snprintf(out + used, n - used, "%s%s", used ? "; " : "", c);
            used = w > 0 && used + (size_t)w < n ? used + (size_t)w : n - 1;
        }
        c = next ? next + 2 : NULL;
    }
}

/* The cause of a failed run from its verdict and what the hook saw. */
static void cause_of(const struct ckh_report_result *rr, const struct run_facts *f, struct cause *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->oracle, sizeof c->oracle, "%s", rr->failed_oracle ? rr->failed_oracle : "");
    c->bare = f->seen && !f->any_landed;
    const char *o = c->oracle;
    if (f->seen && strcmp(o, "resume-equivalence") == 0 && f->divergence[0]) {
        snprintf(c->what, sizeof c->what, "first divergence: %s", f->divergence);
    } else if (f->seen && strcmp(o, "no-corrupt-load") == 0) {
        snprintf(c->what, sizeof c->what, "damaged by %s, the job completed with another state%s%s",
                 f->damage[0] ? f->damage : "no fault", f->divergence[0] ? "; first divergence: " : "",
                 f->divergence);
    } else if (f->seen && strcmp(o, "outcome") == 0) {
        char m[256] = "";
        if (f->ended_report)
            mask(rr->message, false, false, m, sizeof m);
        /* A long ending is cut to what fits; causes compared are cut alike. */
        int w = snprintf(c->what, sizeof c->what, "%s%s%s", f->ended, m[0] ? ": " : "", m);
        (void)w;
    } else if (strcmp(o, "determinism") == 0) {
        snprintf(c->what, sizeof c->what, "the same seed gave different traces");
    } else {
        bool cut = strcmp(o, "hang") == 0 || strcmp(o, "liveness") == 0;
        mask(rr->message, cut, false, c->what, sizeof c->what);
        mask(rr->message, cut, true, c->key, sizeof c->key);
        return;
    }
    snprintf(c->key, sizeof c->key, "%s", c->what);
}

static bool same_cause(const struct cause *target, const struct cause *c)
{
    return strcmp(target->oracle, c->oracle) == 0 && strcmp(target->key, c->key) == 0 &&
           (!target->bare || c->bare);
}

/* ---- candidate runs ---- */

struct shrinker {
    const struct ckh_shrink_config *cfg; /* budget, paths */
    struct ckh_scn_options so;           /* names accepted */
    char cache[64];                      /* private reference cache folder ("" if none) */
    struct cause target;                 /* the input's cause (oracle "" until known) */
    bool determinism;                    /* the target is the determinism oracle */
    size_t runs;                         /* runs so far */
    size_t max_runs;                     /* budget of the minimization */
    struct ckh_scenario *cur;            /* smallest failing scenario so far (owned) */
    char *error;                         /* why the last run did not run (malloc'd; NULL: it ran) */
};

/* Runs sc once, facts into *f (cleared by the caller): 1 when it fails
 * with the target's cause (with no target yet, when it fails at all: its
 * cause becomes the target), 0 otherwise, negative on error. */
static int still_fails(struct shrinker *s, const struct ckh_scenario *sc, struct run_facts *f)
{
    struct ckh_run_options ro = {
        .source_dir = s->cfg->source_dir,
        .cache_dir = s->cache[0] ? s->cache : NULL,
        .argv0 = s->cfg->argv0,
        .check_determinism = s->determinism,
        .on_trace = take_facts,
        .on_trace_ctx = f,
    };
    struct ckh_report_result rr;
    ckh_report_result_init(&rr);
    s->runs++;
    int rc = ckh_harness_run(sc, &ro, &rr);
    free(s->error);
    s->error = rc && rr.message ? strdup(rr.message) : NULL;
    int ok = 0;
    if (f->rc < 0) {
        ok = f->rc;
    } else if (rc == CKH_ENOMEM) {
        ok = rc; /* ckh's own memory, not the scenario's verdict */
    } else if (rr.verdict == CKH_VERDICT_FAIL && rr.failed_oracle) {
        struct cause c;
        cause_of(&rr, f, &c);
        if (!s->target.oracle[0])
            s->target = c;
        ok = same_cause(&s->target, &c);
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
    if (rc == CKH_ENOMEM)
        return rc;
    if (rc)
        return 0; /* a candidate the grammar refuses is simply not smaller */
    struct run_facts f = {0};
    rc = still_fails(s, parsed, &f);
    facts_clear(&f);
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
    int rc = ckh_scenario_parse_string(text, len, name, &s->so, &s->cur, &err);
    if (rc != 0) {
        ckh_scn_error_format(&err, msg, msglen);
        return rc == CKH_ENOMEM ? rc : CKH_EINVAL;
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
static int input_fails(struct shrinker *s, struct run_facts *fired, const char *name, char *msg,
                       size_t msglen)
{
    fired->want_fired = true;
    int rc = still_fails(s, s->cur, fired);
    if (rc == 0 && !s->target.oracle[0]) {
        /* A determinism failure shows only with the check on. */
        s->determinism = true;
        facts_clear(fired);
        fired->want_fired = true;
        rc = still_fails(s, s->cur, fired);
    }
    if (rc <= 0 && rc != CKH_ENOMEM && s->error) {
        /* It did not run (a plugin that does not load, a job the workload
         * refuses): that message, not "does not fail". */
        snprintf(msg, msglen, "%s", s->error);
        return CKH_EINVAL;
    }
    if (rc < 0)
        return rc;
    if (rc == 0) {
        snprintf(msg, msglen, "%s does not fail: nothing to shrink", name ? name : "the scenario");
        return CKH_EINVAL;
    }
    s->determinism = strcmp(s->target.oracle, "determinism") == 0;
    return 0;
}

/* Step 2: the concrete schedule, kept when it still fails. */
static int make_concrete(struct shrinker *s, const struct run_facts *fired, struct ckh_shrink_stats *st)
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

/* Step 4: no silent faults. Every fault that did not fire in the final
 * scenario's run is dropped, last first, when the scenario still fails
 * with the same cause without it. Not bound by the budget: one run, and
 * one per fault that did not fire. */
static int pass_silent(struct shrinker *s, struct ckh_shrink_stats *st)
{
    struct run_facts f = {0};
    size_t budget = s->max_runs;
    s->max_runs = SIZE_MAX;
    int rc = s->cur->nfaults ? still_fails(s, s->cur, &f) : 0;
    if (rc == 1 && f.landed && f.nfaults == s->cur->nfaults) {
        for (size_t i = f.nfaults; i-- > 0 && rc >= 0;) {
            if (f.landed[i] > 0)
                continue;
            size_t n = s->cur->nfaults;
            struct ckh_scn_fault *keep = malloc(n * sizeof *keep);
            if (!keep) {
                rc = CKH_ENOMEM;
                break;
            }
            size_t k = 0;
            for (size_t j = 0; j < n; j++)
                if (j != i)
                    keep[k++] = s->cur->faults[j];
            struct ckh_scenario c = with_faults(s->cur, keep, k);
            rc = try_candidate(s, &c);
            free(keep);
            if (rc == 1)
                st->silent_dropped++;
        }
    }
    facts_clear(&f);
    s->max_runs = budget;
    return rc < 0 ? rc : 0;
}

int ckh_shrink_text(const char *text, size_t len, const char *name,
                    const struct ckh_shrink_config *cfg, char **out, struct ckh_shrink_stats *st,
                    char *msg, size_t msglen)
{
    struct ckh_shrink_config dflt = {0};
    struct shrinker s;
    struct ckh_shrink_stats local;
    struct run_facts fired = {0};
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
    if (fired.seen && fired.rc == 0 && (rc = make_concrete(&s, &fired, st)) != 0)
        goto out;
    /* 3. Passes until nothing changes. */
    for (bool changed = true; changed && s.runs < s.max_runs;) {
        changed = false;
        if ((rc = pass_drop(&s, &changed)) < 0 || (rc = pass_earlier(&s, &changed)) < 0 ||
            (rc = pass_job(&s, &changed)) < 0)
            goto out;
    }
    /* 4. No silent faults. */
    if ((rc = pass_silent(&s, st)) != 0)
        goto out;
    /* 5. The result, saying what it reproduces. */
    char desc[640];
    snprintf(desc, sizeof desc, "shrunk from %s in %zu runs; fails oracle %s: %s%s",
             name ? name : "a failing scenario", s.runs, s.target.oracle, s.target.what,
             s.target.bare ? "; no fault fired" : "");
    struct ckh_scenario c = *s.cur;
    c.description = desc;
    rc = write_text(&c, out);
    st->runs = s.runs;
    st->faults_after = s.cur->nfaults;
    st->nodes_after = s.cur->job.nodes;
    snprintf(st->oracle, sizeof st->oracle, "%s", s.target.oracle);
    snprintf(st->cause, sizeof st->cause, "%.360s%s", s.target.what, s.target.bare ? "; no fault fired" : "");
out:
    facts_clear(&fired);
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
