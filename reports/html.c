/* The HTML report: one self-contained page (inline CSS, SVG and a small
 * script; nothing fetched, opens offline) with the run timelines it draws
 * (their values and transport: reports/timeline.c).
 *
 * Page layout (ids and classes are what tests/test_html.c looks for):
 *   section#summary          totals: scenarios, passed, failed, errors
 *                             (and b.n-notrun, not run, when interrupted)
 *   div#interrupted           an interrupted run only: by which signal, how
 *                             many scenarios did not finish
 *   section.scenario          one per result, data-verdict="pass|fail|error|not-run"
 *     span.verdict            PASS / FAIL / ERROR / NOT RUN
 *     div.notrun              not run only: why (the message)
 *     div.failure             failures and errors only:
 *       div.oracle              the failed oracle
 *       pre.diff                its detail: expected against actual
 *       pre.replay              the command that replays it
 *     table.oracles           every oracle that ran, with its detail
 *     figure.run > svg.timeline   one per run when the result has a
 *                             timeline: a row per node; bars (rect.ev-*)
 *                             for phases, epochs, saves, loads and
 *                             collectives with their durations in a
 *                             <title>; markers (.marker-*) for faults,
 *                             crashes, kills, restarts and exits
 *   div#ckh-ok                added by the page's script once it ran
 *   div#ckh-error             added instead by window.onerror
 *
 * Map: escaping · page.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "report.h"

/* ---- escaping ---- */

void ckh_report_html_escape(FILE *f, const char *s)
{
    if (!f || !s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        size_t len = ckh__report_utf8_next(p, &cp);
        if (cp == UINT32_MAX || (cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f) {
            fputs("\xef\xbf\xbd", f);
        } else if (cp == '&') {
            fputs("&amp;", f);
        } else if (cp == '<') {
            fputs("&lt;", f);
        } else if (cp == '>') {
            fputs("&gt;", f);
        } else if (cp == '"') {
            fputs("&quot;", f);
        } else if (cp == '\'') {
            fputs("&#39;", f);
        } else {
            fwrite(p, 1, len, f);
        }
        p += len;
    }
}

/* ---- page ---- */

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin:.2em 0}"
    ".summary{display:flex;gap:1.5em;padding:.6em 1em;background:#fff;border:1px solid #ddd}"
    ".summary b{font-size:1.3em}"
    ".scenario{background:#fff;border:1px solid #ddd;border-left:6px solid #3a3;margin:1em 0;padding:.6em 1em}"
    ".scenario[data-verdict=fail]{border-left-color:#c33}.scenario[data-verdict=error]{border-left-color:#c90}"
    ".verdict{font-weight:bold;padding:0 .4em;border-radius:3px;color:#fff;background:#3a3}"
    ".verdict.fail{background:#c33}.verdict.error{background:#c90}"
    ".scenario[data-verdict=not-run]{border-left-color:#999}.verdict.not-run{background:#999}"
    "#interrupted{margin:.6em 0;padding:.4em 1em;background:#ffe;border:1px solid #cc9}"
    ".meta{color:#666}pre{background:#f3f3f3;padding:.5em;white-space:pre-wrap;margin:.3em 0}"
    "pre.replay{background:#eef}"
    "table.oracles{border-collapse:collapse;margin:.4em 0}"
    "table.oracles td,table.oracles th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
    "tr.ofail td{background:#fee}"
    "figure.run{margin:.5em 0}figcaption{color:#555}"
    "svg.timeline{background:#fff;border:1px solid #eee}"
    "svg text{font:11px sans-serif}"
    ".ev-phase{fill:#ccc}.ev-epoch{fill:#9cf}.ev-save{fill:#f93}.ev-load{fill:#6c6}"
    ".ev-collective{fill:#a8e}"
    ".marker-fault{fill:#e22}.marker-crash{fill:#000}.marker-kill{fill:#b0b}"
    ".marker-restart{fill:#080}.marker-exit{fill:#06c}.marker-collective{fill:#a8e}"
    ".legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}"
    "details summary{cursor:pointer}#ckh-ok{color:#999;font-size:.8em}#ckh-error{color:#c00}";

static const char script[] =
    "window.onerror=function(m){var d=document.createElement('div');d.id='ckh-error';"
    "d.textContent='script error: '+m;document.body.appendChild(d);return false;};\n"
    "(function(){\n"
    "  var svgs=document.querySelectorAll('svg.timeline');\n"
    "  var tip=document.createElement('div');tip.className='tip';\n"
    "  tip.style.cssText='position:fixed;display:none;background:#333;color:#fff;padding:2px 6px;font:12px sans-serif;pointer-events:none';\n"
    "  document.body.appendChild(tip);\n"
    "  for(var i=0;i<svgs.length;i++){\n"
    "    svgs[i].addEventListener('mousemove',function(e){\n"
    "      var t=e.target&&e.target.getAttribute?e.target.getAttribute('data-label'):null;\n"
    "      if(!t){tip.style.display='none';return;}\n"
    "      tip.textContent=t;tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';tip.style.display='block';\n"
    "    });\n"
    "    svgs[i].addEventListener('mouseleave',function(){tip.style.display='none';});\n"
    "  }\n"
    "  var fails=document.querySelectorAll('section.scenario[data-verdict=fail],section.scenario[data-verdict=error]');\n"
    "  var ok=document.createElement('div');ok.id='ckh-ok';\n"
    "  ok.setAttribute('data-timelines',String(svgs.length));\n"
    "  ok.setAttribute('data-failures',String(fails.length));\n"
    "  ok.textContent='report rendered: '+svgs.length+' timelines, '+fails.length+' failures';\n"
    "  document.body.appendChild(ok);\n"
    "})();\n";

#define SVG_W 1000
#define SVG_LEFT 150
#define SVG_ROW 24
#define SVG_TOP 18

static double xpos(const struct ckh_report_tl_run *r, uint64_t ns)
{
    uint64_t span = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 1;
    uint64_t off = ns > r->start_ns ? ns - r->start_ns : 0;
    if (off > span)
        off = span;
    return SVG_LEFT + (double)off * (double)(SVG_W - SVG_LEFT - 10) / (double)span;
}

static void svg_run(FILE *f, const struct ckh_report_timeline *t, uint32_t ri)
{
    const struct ckh_report_tl_run *r = &t->runs[ri];
    uint32_t run = ri + 1;
    unsigned h = SVG_TOP + t->nnodes * SVG_ROW + 6;
    char dur[32], a[32], b[32];
    ckh__report_fmt_ns(r->end_ns - (r->end_ns > r->start_ns ? r->start_ns : r->end_ns), dur, sizeof dur);
    ckh__report_fmt_ns(r->start_ns, a, sizeof a);
    ckh__report_fmt_ns(r->end_ns, b, sizeof b);
    fprintf(f, "<figure class=\"run\"><figcaption>run %u: %s .. %s (%s virtual)</figcaption>\n", run, a,
            b, dur);
    fprintf(f,
            "<svg class=\"timeline\" data-run=\"%u\" xmlns=\"http://www.w3.org/2000/svg\" "
            "width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\">\n",
            run, SVG_W, h, SVG_W, h);
    for (uint32_t i = 0; i < t->nnodes; i++) {
        unsigned y = SVG_TOP + i * SVG_ROW;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%u\" y2=\"%u\" stroke=\"#eee\"/>", SVG_LEFT,
                SVG_W - 10, y + SVG_ROW / 2, y + SVG_ROW / 2);
        fprintf(f, "<text class=\"node\" x=\"4\" y=\"%u\">", y + SVG_ROW / 2 + 4);
        ckh_report_html_escape(f, t->nodes[i]);
        fputs("</text>\n", f);
    }
    for (size_t k = 0; k < t->n; k++) {
        const struct ckh_report_tl_event *e = &t->ev[k];
        if (e->run != run)
            continue;
        double x0 = xpos(r, e->start_ns), x1 = xpos(r, e->end_ns);
        unsigned y = SVG_TOP + (unsigned)e->node * SVG_ROW;
        const char *kn = ckh_tl_kind_name(e->kind);
        char d[32];
        ckh__report_fmt_ns(e->end_ns - e->start_ns, d, sizeof d);
        bool bar = e->kind <= CKH_TL_COLLECTIVE && e->end_ns > e->start_ns;
        if (bar) {
            double w = x1 - x0 < 1.0 ? 1.0 : x1 - x0;
            fprintf(f, "<rect class=\"ev ev-%s\" x=\"%.1f\" y=\"%u\" width=\"%.1f\" height=\"%d\" data-label=\"",
                    kn, x0, y + 4, w, SVG_ROW - 8);
            ckh_report_html_escape(f, e->label);
            fprintf(f, " (%s)\"><title>", d);
        } else {
            /* Markers: a diamond for faults, a square for crashes and
             * kills, a triangle for restarts, a circle otherwise. */
            double cy = y + SVG_ROW / 2.0;
            if (e->kind == CKH_TL_FAULT)
                fprintf(f, "<path class=\"marker marker-fault\" d=\"M%.1f %.1f l6 6 l-6 6 l-6 -6 z\" data-label=\"",
                        x0, cy - 6);
            else if (e->kind == CKH_TL_CRASH || e->kind == CKH_TL_KILL)
                fprintf(f, "<rect class=\"marker marker-%s\" x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" data-label=\"",
                        kn, x0 - 4, cy - 4);
            else if (e->kind == CKH_TL_RESTART)
                fprintf(f, "<path class=\"marker marker-restart\" d=\"M%.1f %.1f l8 5 l-8 5 z\" data-label=\"",
                        x0, cy - 5);
            else
                fprintf(f, "<circle class=\"marker marker-%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" data-label=\"",
                        kn, x0, cy, e->kind == CKH_TL_COLLECTIVE ? 2 : 4);
            ckh_report_html_escape(f, e->label);
            fputs("\"><title>", f);
        }
        ckh_report_html_escape(f, kn);
        fputs(": ", f);
        ckh_report_html_escape(f, e->label);
        if (bar)
            fprintf(f, " (%s)", d);
        fprintf(f, "</title></%s>\n", bar ? "rect" : e->kind == CKH_TL_FAULT || e->kind == CKH_TL_RESTART ? "path"
                                                  : e->kind == CKH_TL_CRASH || e->kind == CKH_TL_KILL ? "rect"
                                                                                                     : "circle");
    }
    fputs("</svg></figure>\n", f);
}

static void legend(FILE *f)
{
    static const char *const items[][2] = {
        {"ev-epoch", "epoch / step"}, {"ev-save", "save"},     {"ev-load", "load"},
        {"ev-collective", "collective"}, {"ev-phase", "other phase"}, {"marker-fault", "fault"},
        {"marker-crash", "crash"},    {"marker-kill", "kill"}, {"marker-restart", "restart"},
        {"marker-exit", "exit"},
    };
    fputs("<div class=\"legend\">", f);
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        fprintf(f, "<span><svg width=\"12\" height=\"12\"><rect class=\"%s\" width=\"12\" height=\"12\"/></svg> %s</span>",
                items[i][0], items[i][1]);
    fputs("</div>\n", f);
}

/* A scenario of an interrupted run that did not finish. */
static void scenario_not_run(FILE *f, const struct ckh_report_result *r, size_t idx)
{
    fprintf(f, "<section class=\"scenario\" id=\"scenario-%zu\" data-verdict=\"not-run\">\n"
            "<h2><span class=\"verdict not-run\">NOT RUN</span> ", idx);
    ckh_report_html_escape(f, r->name ? r->name : "?");
    fputs("</h2>\n<div class=\"meta\">", f);
    if (r->file) {
        ckh_report_html_escape(f, r->file);
        fputs(" · ", f);
    }
    fprintf(f, "seed %" PRIu64 "</div>\n<div class=\"notrun\">", r->seed);
    ckh_report_html_escape(f, r->message ? r->message : "not run: the run was interrupted");
    fputs("</div>\n</section>\n", f);
}

static void scenario(FILE *f, const struct ckh_report_result *r, size_t idx)
{
    if (!ckh_report_finished(r)) {
        scenario_not_run(f, r, idx);
        return;
    }
    const char *v = ckh_verdict_name(r->verdict);
    char vt[32];
    ckh__report_fmt_ns(r->virtual_ns, vt, sizeof vt);
    fprintf(f, "<section class=\"scenario\" id=\"scenario-%zu\" data-verdict=\"%s\">\n", idx, v);
    fprintf(f, "<h2><span class=\"verdict %s\">%s</span> ", v,
            r->verdict == CKH_VERDICT_PASS ? "PASS" : r->verdict == CKH_VERDICT_FAIL ? "FAIL" : "ERROR");
    ckh_report_html_escape(f, r->name ? r->name : "?");
    fputs("</h2>\n<div class=\"meta\">", f);
    if (r->file) {
        ckh_report_html_escape(f, r->file);
        fputs(" · ", f);
    }
    fprintf(f, "seed %" PRIu64 " · %u run%s, %u restart%s · %s virtual · %" PRIu64 " ms</div>\n",
            r->seed, r->runs, r->runs == 1 ? "" : "s", r->restarts, r->restarts == 1 ? "" : "s", vt,
            r->wall_ms);
    if (r->verdict != CKH_VERDICT_PASS) {
        fputs("<div class=\"failure\">", f);
        if (r->failed_oracle) {
            fputs("<div class=\"oracle\">oracle: <b>", f);
            ckh_report_html_escape(f, r->failed_oracle);
            fputs("</b></div>", f);
        }
        fputs("<pre class=\"diff\">", f);
        ckh_report_html_escape(f, r->message ? r->message : "(no message)");
        if (r->first_divergent_step >= 0)
            fprintf(f, "\nfirst divergent step: %" PRId64, r->first_divergent_step);
        fputs("</pre>", f);
        if (r->replay) {
            fputs("<pre class=\"replay\">", f);
            ckh_report_html_escape(f, r->replay);
            fputs("</pre>", f);
        }
        fputs("</div>\n", f);
    }
    if (r->noracles) {
        fputs("<details open><summary>oracles</summary><table class=\"oracles\"><tr><th>oracle</th>"
              "<th>result</th><th>detail</th></tr>\n",
              f);
        for (size_t i = 0; i < r->noracles; i++) {
            const struct ckh_oracle_result *o = &r->oracles[i];
            fprintf(f, "<tr class=\"%s\"><td>", o->passed ? "opass" : "ofail");
            ckh_report_html_escape(f, o->name);
            fprintf(f, "</td><td>%s</td><td>", o->passed ? "pass" : "FAIL");
            ckh_report_html_escape(f, o->detail ? o->detail : "");
            fputs("</td></tr>\n", f);
        }
        fputs("</table></details>\n", f);
    }
    const struct ckh_report_timeline *t = r->timeline;
    if (t && t->nruns) {
        fputs("<details open class=\"timelines\"><summary>timeline</summary>\n", f);
        for (uint32_t i = 0; i < t->nruns; i++)
            svg_run(f, t, i);
        if (t->dropped)
            fprintf(f, "<div class=\"meta\">%" PRIu64 " further events not drawn</div>\n", t->dropped);
        fputs("</details>\n", f);
    }
    fputs("</section>\n", f);
}

int ckh_report_html(FILE *f, const struct ckh_report_meta *meta, const struct ckh_report_result *rs,
                    size_t n)
{
    if (!f || (!rs && n > 0))
        return CKH_EINVAL;
    struct ckh_report_summary s;
    ckh_report_summarize(rs, n, &s);
    const char *suite = meta && meta->suite ? meta->suite : "ckh";
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", f);
    ckh_report_html_escape(f, suite);
    fprintf(f, " report</title>\n<style>%s</style></head><body>\n<h1>", css);
    ckh_report_html_escape(f, suite);
    fputs(" report</h1>\n", f);
    char vt[32];
    ckh__report_fmt_ns(s.virtual_ns, vt, sizeof vt);
    fprintf(f,
            "<section id=\"summary\" class=\"summary\"><div><b>%zu</b> scenarios</div>"
            "<div><b class=\"n-pass\">%zu</b> passed</div><div><b class=\"n-fail\">%zu</b> failed</div>"
            "<div><b class=\"n-error\">%zu</b> errors</div>",
            s.total, s.passed, s.failed, s.errors);
    if (s.not_run)
        fprintf(f, "<div><b class=\"n-notrun\">%zu</b> not run</div>", s.not_run);
    fprintf(f, "<div>%" PRIu64 " ms wall, %s virtual</div></section>\n", s.wall_ms, vt);
    if (meta && meta->interrupted_by)
        fprintf(f, "<div id=\"interrupted\">interrupted by signal %d (%s): %zu of %zu scenarios did not "
                "finish</div>\n", meta->interrupted_by, strsignal(meta->interrupted_by), s.not_run, s.total);
    if (meta && (meta->command || meta->timestamp || meta->hostname)) {
        fputs("<div class=\"meta\">", f);
        if (meta->command) {
            fputs("<code>", f);
            ckh_report_html_escape(f, meta->command);
            fputs("</code> ", f);
        }
        if (meta->timestamp)
            ckh_report_html_escape(f, meta->timestamp);
        if (meta->hostname) {
            fputs(" on ", f);
            ckh_report_html_escape(f, meta->hostname);
        }
        fputs("</div>\n", f);
    }
    bool any_tl = false;
    for (size_t i = 0; i < n; i++)
        any_tl |= rs[i].timeline != NULL;
    if (any_tl)
        legend(f);
    for (size_t i = 0; i < n; i++)
        scenario(f, &rs[i], i);
    fprintf(f, "<script>\n%s</script>\n</body></html>\n", script);
    return ferror(f) ? -EIO : 0;
}
