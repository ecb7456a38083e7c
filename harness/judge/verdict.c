/* The verdict: every selected oracle that applies, in registry order
 * (harness/judge/oracle.c); the golden file a scenario compares with;
 * the control run that shows a planted defect is what was detected.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "exec/run_ctx.h"
#include "judge/judge.h"
#include "judge/oracle.h"

/* ---- verdict ---- */

static bool oracle_selected(const struct ckh_scenario *sc, const char *name)
{
    for (size_t i = 0; i < sc->expect.nskip; i++)
        if (strcmp(sc->expect.skip[i], name) == 0)
            return false;
    if (sc->expect.noracles == 0)
        return true;
    for (size_t i = 0; i < sc->expect.noracles; i++)
        if (strcmp(sc->expect.oracles[i], name) == 0)
            return true;
    return false;
}

static bool must_detect(const struct ckh_scenario *sc, const char *name)
{
    for (size_t i = 0; i < sc->expect.ndetect; i++)
        if (strcmp(sc->expect.detect[i], name) == 0)
            return true;
    return false;
}

/* An earlier oracle failed the scenario and resume-equivalence failed too:
 * its detail, which opens with the step and quantity where the runs
 * began to diverge, becomes the message's second line. */
static int add_first_divergence(struct ckh_report_result *out, const char *detail, int64_t divergent)
{
    /* ckh_report_set formats before it frees the old message. */
    int rc = ckh_report_set(&out->message, "%s\nfirst divergence (resume-equivalence): %s",
                            out->message ? out->message : "", detail);
    if (rc == 0 && out->first_divergent_step < 0)
        out->first_divergent_step = divergent;
    return rc;
}

/* Keeps the first failure (a negative code) of the result's writers in *first. */
static void keep(int *first, int rc)
{
    if (rc != 0 && *first == 0)
        *first = rc;
}

/* Appends "NAME: FIRST LINE OF DETAIL" to what a passing scenario
 * detected as expected, "; " between oracles. */
static void add_detected(char *buf, size_t n, const char *name, const char *detail)
{
    size_t used = strlen(buf);
    if (used + 1 >= n)
        return;
    snprintf(buf + used, n - used, "%s%s: %.*s", used ? "; " : "", name, (int)strcspn(detail, "\n"), detail);
}

/* Runs every selected oracle that applies. Normally the first failing one
 * fails the scenario: its detail, which opens with what differed (the
 * step and quantity, for resume-equivalence and reference), is the
 * message the verdict line shows. With expect.detect (a planted defect), the scenario
 * passes only when each named oracle applies and reports a violation; the
 * other oracles are recorded for information. A pass through expect.detect,
 * or through an expect.outcome other than pass, says what was detected as
 * the message: "detected as expected by ORACLE: FIRST LINE OF ITS DETAIL". */
int ckh__run_judge(const struct ckh_scenario_run *r, struct ckh_report_result *out)
{
    int mem = 0; /* the first result field that could not be written */
    CKH_ASSERT(r && r->sc && out && (r->nruns == 0 || r->runs));
    const struct ckh_scenario *sc = r->sc;
    bool detect_mode = sc->expect.ndetect > 0;
    size_t detected = 0, judged = 0, first = out->noracles;
    char seen[1024] = ""; /* what was detected as expected */
    out->verdict = CKH_VERDICT_PASS;
    for (size_t i = 0; ckh_oracle_at(i); i++) {
        const struct ckh_oracle_ops *o = ckh_oracle_at(i);
        bool wanted = must_detect(sc, o->name);
        if (!wanted && !oracle_selected(sc, o->name))
            continue;
        if (!o->applies(r)) {
            if (wanted && out->verdict == CKH_VERDICT_PASS) {
                out->verdict = CKH_VERDICT_FAIL;
                keep(&mem, ckh_report_set(&out->failed_oracle, "%s", o->name));
                keep(&mem, ckh_report_set(&out->message, "the planted defect was to be detected by '%s', "
                               "which does not apply to this run", o->name));
            }
            continue;
        }
        char detail[1536] = "";
        int64_t divergent = -1;
        bool ok = o->check(r, detail, sizeof detail, &divergent);
        judged++;
        if (detect_mode && wanted) {
            char shown[1600];
            snprintf(shown, sizeof shown, "%s: %s", ok ? "missed the planted defect" : "detected the planted defect", detail);
            keep(&mem, ckh_report_add_oracle(out, o->name, !ok, shown));
            if (!ok) {
                detected++;
                add_detected(seen, sizeof seen, o->name, detail);
                if (out->first_divergent_step < 0)
                    out->first_divergent_step = divergent;
            } else if (out->verdict == CKH_VERDICT_PASS) {
                out->verdict = CKH_VERDICT_FAIL;
                keep(&mem, ckh_report_set(&out->failed_oracle, "%s", o->name));
                keep(&mem, ckh_report_set(&out->message, "the planted defect went undetected: %s", detail));
            }
            continue;
        }
        keep(&mem, ckh_report_add_oracle(out, o->name, ok, detail));
        if (ok && o == &ckh__oracle_outcome && sc->expect.outcome != CKH_SCN_OUTCOME_PASS)
            add_detected(seen, sizeof seen, o->name, detail);
        if (!ok && !detect_mode && out->verdict == CKH_VERDICT_PASS) {
            out->verdict = CKH_VERDICT_FAIL;
            keep(&mem, ckh_report_set(&out->failed_oracle, "%s", o->name));
            keep(&mem, ckh_report_set(&out->message, "%s", detail));
            out->first_divergent_step = divergent;
        } else if (!ok && !detect_mode && o == &ckh__oracle_resume) {
            keep(&mem, add_first_divergence(out, detail, divergent));
        }
    }
    if (!detect_mode && judged == 0 && out->verdict == CKH_VERDICT_PASS) {
        out->verdict = CKH_VERDICT_ERROR;
        keep(&mem, ckh_report_set(&out->message, "no selected oracle applies to this run: nothing was judged "
                                      "(check expect.oracles and expect.skip)"));
    }
    if (detect_mode && out->verdict == CKH_VERDICT_PASS && detected < sc->expect.ndetect) {
        out->verdict = CKH_VERDICT_FAIL;
        keep(&mem, ckh_report_set(&out->message, "expected oracle(s) to detect the planted defect: %zu of %zu did",
                       detected, sc->expect.ndetect));
    }
    if (out->verdict == CKH_VERDICT_PASS && seen[0])
        keep(&mem, ckh_report_set(&out->message, "detected as expected by %s", seen));
    /* A pass judged something, and no oracle it records failed (a planted
     * defect's run records the others' failures for information). */
    CKH_ASSERT(out->verdict != CKH_VERDICT_PASS || detect_mode || judged > 0);
    for (size_t i = first; out->verdict == CKH_VERDICT_PASS && !detect_mode && i < out->noracles; i++)
        CKH_ASSERT(out->oracles[i].passed);
    return mem;
}

/* Whether out names something readable: the first such candidate is the
 * golden file (a folder there is an input error, not a failed check). */
static bool readable(const char *out)
{
    return access(out, R_OK) == 0;
}

/* Looks for reference/<golden> in the scenario's folder and each of its
 * parents, then under source_dir: a scenario library finds its golden
 * files wherever ckh is started from. */
static bool golden_candidate(const struct ckh_scenario *sc, const char *source_dir, char *out, size_t n)
{
    char dir[CKH_PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s", sc->file ? sc->file : ".");
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        *slash = '\0';
        snprintf(out, n, "%s/reference/%s", dir[0] ? dir : "", sc->expect.golden);
        if (readable(out))
            return true;
    }
    snprintf(out, n, "reference/%s", sc->expect.golden);
    if (readable(out))
        return true;
    snprintf(out, n, "%s/reference/%s", source_dir, sc->expect.golden);
    return readable(out);
}

int ckh__run_find_golden(const struct ckh_scenario *sc, const char *source_dir, char *out, size_t n,
                         char *err, size_t errlen)
{
    struct stat st;
    if (!golden_candidate(sc, source_dir, out, n))
        return ckh_errf(err, errlen, CKH_EINVAL,
                        "golden file '%s' not found under reference/ next to the scenario, in its "
                        "parent folders, or in %s/reference", sc->expect.golden, source_dir);
    if (stat(out, &st) != 0 || !S_ISREG(st.st_mode))
        return ckh_errf(err, errlen, CKH_EINVAL, "expect.golden '%s' names %s, not a file", sc->expect.golden,
                        out);
    return 0;
}

/* A scenario with planted defects must fail its detecting oracles because
 * of the defects, not because of its faults: the same faulted job without
 * the defect switches (the control) must not trip them. */
int ckh__run_control_check(const struct ckh_scenario *sc, uint64_t seed, const struct ckh_scenario_run *r,
                         struct ckh_report_result *out, char *err, size_t errlen)
{
    struct ckh__run_ctx c;
    struct ckh_scenario_run ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.sc = sc;
    ctl.seed = seed;
    ctl.source_dir = r->source_dir;
    int rc = ckh__run_build_sim(&c, sc, seed, CKH_RUN_NO_DEFECTS, false);
    if (rc == 0)
        rc = ckh__run_execute(&c, &ctl);
    if (rc == 0)
        rc = ckh__run_job_copy(&ctl.ref, &r->ref.r);
    if (rc != 0) {
        snprintf(err, errlen, "control run without the defect switches: %s", c.err[0] ? c.err : ckh_strerror(rc));
        goto out;
    }
    ctl.ref_ok = r->ref_ok;
    ctl.interval = c.wl->interval ? c.wl->interval(c.inst) : 1;
    for (size_t i = 0; i < sc->expect.ndetect && out->verdict == CKH_VERDICT_PASS; i++) {
        const struct ckh_oracle_ops *o = ckh_oracle_find(sc->expect.detect[i]);
        char detail[1536] = "";
        int64_t divergent = -1;
        if (!o || !o->applies(&ctl) || o->check(&ctl, detail, sizeof detail, &divergent))
            continue;
        out->verdict = CKH_VERDICT_FAIL;
        rc = ckh_report_set(&out->failed_oracle, "%s", o->name);
        if (rc == 0)
            rc = ckh_report_set(&out->message,
                                "the planted defect is not what '%s' detects: it reports a violation "
                                "without the defect switches too: %s",
                                o->name, detail);
    }
out:
    ckh_scenario_run_free(&ctl);
    ckh__run_ctx_free(&c);
    return rc;
}

/* A job that hung (a time or op limit, not a deadlock) ends without
 * completing, so outcome (or liveness) fails first; the hang is the
 * cause: its detail heads the verdict. */
static int hang_first(const struct ckh_scenario_run *r, struct ckh_report_result *out)
{
    if (!r->hang_seen || r->deadlock_seen)
        return 0;
    const struct ckh_oracle_result *h = NULL;
    for (size_t i = 0; i < out->noracles; i++)
        if (!strcmp(out->oracles[i].name, "hang") && !out->oracles[i].passed)
            h = &out->oracles[i];
    if (!h || out->verdict != CKH_VERDICT_FAIL || !out->failed_oracle ||
        (strcmp(out->failed_oracle, "outcome") && strcmp(out->failed_oracle, "liveness")))
        return 0;
    int rc = ckh_report_set(&out->message, "%s\n%s: %s", h->detail, out->failed_oracle,
                            out->message ? out->message : "");
    return rc ? rc : ckh_report_set(&out->failed_oracle, "hang");
}

int ckh__run_verdict(const struct ckh_scenario_run *r, struct ckh_report_result *out)
{
    out->runs = (uint32_t)r->nruns;
    out->restarts = r->nruns ? (uint32_t)r->nruns - 1 : 0;
    out->virtual_ns = r->virtual_ns;
    int rc = ckh__run_judge(r, out);
    return rc ? rc : hang_first(r, out);
}
