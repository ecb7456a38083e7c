/* Scenario results and their renderers: terminal, JUnit XML, JSON.
 *
 * The runner fills one struct ckh_report_result per scenario; reports/
 * only renders them. The JSON schema and the JUnit layout are specified in
 * docs/SCENARIOS.md ("Reports") and at the top of reports/json.c and
 * reports/junit.c.
 *
 * Ownership: every string in a result is owned by the result (heap copies
 * made with the ckh_report_result_set_* helpers or ckh_strdup(NULL, ...))
 * and released by ckh_report_result_clear(). Renderers only read.
 */
#ifndef CKH_REPORT_H
#define CKH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ckh_report_timeline;

enum ckh_verdict {
    CKH_VERDICT_PASS = 0, /* every oracle passed */
    CKH_VERDICT_FAIL,     /* an oracle failed: the code under test misbehaved */
    CKH_VERDICT_ERROR,    /* bad input (scenario file) or an internal error */
};

/* Whether a result's scenario ran to its verdict. A run interrupted by a
 * signal reports the scenarios that finished as they are and the others
 * as not run (docs/SCENARIOS.md, "Reports"). */
enum ckh_report_state {
    CKH_REPORT_FINISHED = 0,    /* ran to its verdict */
    CKH_REPORT_INTERRUPTED,     /* was running when the run was interrupted: no verdict */
    CKH_REPORT_NOT_STARTED,     /* had not started when the run was interrupted: no verdict */
};

/* One oracle's outcome. */
struct ckh_oracle_result {
    char *name;   /* oracle name ("totals", "latest-committed") (owned) */
    bool passed;  /* whether it held */
    char *detail; /* expected vs actual, or what it checked (owned, may be NULL) */
};

/* A plugin library a scenario's job named, as loaded. */
struct ckh_report_plugin {
    char *role;     /* "workload", "backend" or "saver" (owned) */
    char *name;     /* as the scenario names it ("libloop.so", "./b/libloop.so") (owned) */
    char *path;     /* the file loaded, absolute (owned) */
    char *id;       /* "build-id HEX" (ELF NT_GNU_BUILD_ID) or "content-hash HEX" (owned) */
    char *shadowed; /* files of the same name further along the search path, one per
                       line, that the bare name did not take (owned; NULL: none) */
};

struct ckh_report_result {
    char *name;                   /* scenario name (owned) */
    char *file;                   /* scenario file path (owned, may be NULL) */
    enum ckh_report_state state;  /* finished, or not run (interrupted, not started): then
                                     verdict, oracles and times mean nothing, message says why */
    enum ckh_verdict verdict;     /* pass / fail / error (state finished) */
    char *failed_oracle;          /* first failed oracle (owned, NULL when none) */
    char *message;                /* failure or error text: expected vs actual (owned, may be NULL) */
    int64_t first_divergent_step; /* first step where runs diverged, -1: none or unknown */
    uint64_t seed;                /* the seed of the run */
    char *replay;                 /* command replaying it ("ckh run FILE --seed N") (owned) */
    uint64_t virtual_ns;          /* virtual time the runs took, all runs together */
    uint64_t wall_ms;             /* wall-clock time the scenario took */
    uint32_t runs;                /* runs of the job (1 + restarts), reference excluded */
    uint32_t restarts;            /* restarts performed */
    struct ckh_oracle_result *oracles; /* per-oracle outcomes, in the order they ran (owned) */
    size_t noracles;              /* number of oracles */
    struct ckh_report_timeline *timeline; /* per-node events of every run for the HTML
                                     report (owned; NULL: none; see the end of this file) */
    struct ckh_report_plugin *plugins; /* the plugin libraries of the job, in the order
                                     workload, backend, saver (owned; NULL: none) */
    size_t nplugins;              /* number of plugins */
};

/* Zeroes r and sets first_divergent_step to -1. */
void ckh_report_result_init(struct ckh_report_result *r);
/* Frees every string and the oracle array; r is left initialised. NULL is a no-op. */
void ckh_report_result_clear(struct ckh_report_result *r);
/* Replaces *field (a char * of r) with a heap copy of the formatted text.
 * Returns 0 or CKH_ENOMEM (the field is then unchanged). */
int ckh_report_set(char **field, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends an oracle outcome (name and detail are copied; detail may be NULL).
 * Returns 0, CKH_EINVAL (NULL r or name) or CKH_ENOMEM. */
int ckh_report_add_oracle(struct ckh_report_result *r, const char *name, bool passed,
                          const char *detail);

/* Appends a plugin entry (every string copied; shadowed may be NULL).
 * Returns 0, CKH_EINVAL (NULL r, role, name, path or id) or CKH_ENOMEM. */
int ckh_report_add_plugin(struct ckh_report_result *r, const char *role, const char *name,
                          const char *path, const char *id, const char *shadowed);

/* Verdict name: "pass", "fail", "error" ("?" when out of range). */
const char *ckh_verdict_name(enum ckh_verdict v);
/* State name: "finished", "interrupted", "not-started" ("?" when out of range). */
const char *ckh_report_state_name(enum ckh_report_state s);
/* Whether r ran to its verdict (state finished). */
bool ckh_report_finished(const struct ckh_report_result *r);

/* Counts over a set of results. */
struct ckh_report_summary {
    size_t total;      /* results */
    size_t passed;     /* CKH_VERDICT_PASS */
    size_t failed;     /* CKH_VERDICT_FAIL */
    size_t errors;     /* CKH_VERDICT_ERROR */
    size_t not_run;    /* not finished (interrupted, not started): none of the three above */
    uint64_t wall_ms;  /* sum of wall_ms */
    uint64_t virtual_ns; /* sum of virtual_ns */
};
void ckh_report_summarize(const struct ckh_report_result *rs, size_t n,
                          struct ckh_report_summary *out);

/* What an invocation says about itself in reports. Every field may be
 * NULL / 0; a NULL meta means all unset. */
struct ckh_report_meta {
    const char *suite;     /* suite name (NULL: "ckh") */
    const char *timestamp; /* ISO 8601 start time (NULL: omitted, keeps output reproducible) */
    const char *hostname;  /* host (NULL: omitted) */
    const char *command;   /* the command line of the invocation (NULL: omitted) */
    int interrupted_by;    /* the signal that interrupted the run (0: it ran to its end) */
};

/* ---- JUnit XML (reports/junit.c) ---- */

/* Writes one <testsuites> with one <testsuite> holding one <testcase> per
 * result, in order. Returns 0, CKH_EINVAL (NULL f, or NULL rs with n > 0)
 * or -EIO when writing fails. */
int ckh_report_junit(FILE *f, const struct ckh_report_meta *meta,
                     const struct ckh_report_result *rs, size_t n);

/* The JUnit classname of a scenario file: its folder with '/' replaced by
 * '.' ("scenarios/minidb/kill.yaml" -> "scenarios.minidb"); "ckh" when the
 * file has no folder or is NULL. Writes at most size bytes (NUL included). */
void ckh_report_junit_classname(const char *file, char *buf, size_t size);

/* ---- JSON (reports/json.c) ---- */

/* The version of the JSON report schema written by ckh_report_json. */
#define CKH_REPORT_JSON_VERSION 1

/* Writes the JSON report (schema in docs/SCENARIOS.md). Returns 0,
 * CKH_EINVAL or -EIO. */
int ckh_report_json(FILE *f, const struct ckh_report_meta *meta,
                    const struct ckh_report_result *rs, size_t n);

/* Writes s as a JSON string literal (with quotes), escaping '"', '\\',
 * control characters and invalid UTF-8 (as U+FFFD). NULL writes null. */
void ckh_report_json_string(FILE *f, const char *s);

/* ---- terminal (reports/term.c) ---- */

/* One line per scenario: "PASS name (runs, virtual time)" or
 * "FAIL name: oracle: message" followed by an indented "replay:" line;
 * under either, one indented "plugin ROLE NAME: PATH (ID)" line per
 * plugin library, and a "warning:" line for each that shadows others.
 * color adds ANSI colours (use only on a terminal). */
void ckh_report_term_result(FILE *f, const struct ckh_report_result *r, bool color);

/* The closing summary: every failure again with its replay command, then
 * "N scenarios: P passed, F failed, E errors". */
void ckh_report_term_summary(FILE *f, const struct ckh_report_result *rs, size_t n, bool color);

/* Progress of a run, for the progress line. */
struct ckh_report_progress {
    size_t done;        /* scenarios finished */
    size_t total;       /* scenarios in the run */
    size_t failed;      /* finished with CKH_VERDICT_FAIL */
    size_t errors;      /* finished with CKH_VERDICT_ERROR */
    uint64_t elapsed_ms; /* wall time since the start (for the estimate only) */
};

/* Formats the progress line without newline, fitting width columns (0:
 * 80; the bar keeps at least 10 cells, so a very narrow width overflows), e.g.
 *   "[#########...........]  12/40  2 failed  0 errors  ~0:21 left"
 * The estimate is elapsed/done * (total-done); "--:--" before the first.
 * Returns what snprintf returns. */
int ckh_report_progress_format(const struct ckh_report_progress *p, unsigned width, char *buf,
                               size_t size);

/* Prints progress. tty: redraws one line in place ("\r...\033[K", no
 * newline). Not a tty: prints a plain line ("progress: 12/40 done, 2
 * failed, 0 errors") each time it is called. */
void ckh_report_progress_print(FILE *f, const struct ckh_report_progress *p, bool tty);

/* On a tty, erases the progress line so that normal lines can follow. */
void ckh_report_progress_clear(FILE *f, bool tty);

/* ---- private to reports/ ---- */

/* Decodes one UTF-8 sequence at s (s[0] != 0). Returns the bytes it
 * takes (>= 1) and the code point in *cp, or 1 with *cp = UINT32_MAX for a
 * byte that does not start a valid, shortest-form, non-surrogate sequence. */
size_t ckh__report_utf8_next(const unsigned char *s, uint32_t *cp);

/* Formats a virtual duration for people: "0s", "340us", "12.5ms", "1.234s". */
void ckh__report_fmt_ns(uint64_t ns, char *buf, size_t size);

/* ==== HTML report (reports/html.c) and run timelines (reports/timeline.c) ====
 * Everything from here to the end of the file belongs to those two files.
 *
 * A timeline is what the HTML report draws for one scenario: for every run
 * of the faulted job, one row per node with its phases (epochs, steps,
 * saves and loads as bars with their durations), collectives, faults as
 * markers, crashes, kills, restarts and exits. The runner fills it when
 * struct ckh_run_options.timeline is set (harness/exec/timeline.c builds
 * it from the simulator's trace). Virtual time runs on across runs.
 */

/* X(ENUM, "name") */
#define CKH_TL_KIND_MAP(X)                                                     \
    X(PHASE, "phase")           /* a phase other than the ones below: bar */  \
    X(EPOCH, "epoch")           /* an epoch or training step: bar */          \
    X(SAVE, "save")             /* a checkpoint save: bar */                  \
    X(LOAD, "load")             /* a checkpoint load: bar */                  \
    X(COLLECTIVE, "collective") /* a collective operation: bar */             \
    X(FAULT, "fault")           /* an injected fault fired: marker */         \
    X(CRASH, "crash")           /* the node's machine crashed: marker */      \
    X(KILL, "kill")             /* the node's process died: marker */         \
    X(RESTART, "restart")       /* the node started again: marker */          \
    X(EXIT, "exit")             /* the node's program returned: marker */

enum ckh_tl_kind {
#define CKH__TL_ENUM(e, s) CKH_TL_##e,
    CKH_TL_KIND_MAP(CKH__TL_ENUM)
#undef CKH__TL_ENUM
        CKH_TL__COUNT
};

#define CKH_TL_LABEL_LEN 96
#define CKH_TL_NODE_LEN 64
#define CKH_TL_MAX_EVENTS 20000 /* further events are counted in `dropped` */

struct ckh_report_tl_event {
    uint32_t run;               /* 1-based run of the job */
    int32_t node;               /* node index (row) */
    enum ckh_tl_kind kind;      /* what */
    uint64_t start_ns;          /* virtual start */
    uint64_t end_ns;            /* virtual end (== start for markers) */
    char label[CKH_TL_LABEL_LEN]; /* "epoch 3", "kill before pwrite /ckpt/a.3" */
};

struct ckh_report_tl_run {
    uint64_t start_ns; /* virtual time when the run started */
    uint64_t end_ns;   /* virtual time when it ended */
};

struct ckh_report_timeline {
    char (*nodes)[CKH_TL_NODE_LEN];  /* node names, one row each (owned) */
    uint32_t nnodes;                 /* rows */
    struct ckh_report_tl_run *runs;  /* per run (owned) */
    uint32_t nruns;                  /* runs */
    struct ckh_report_tl_event *ev;  /* events, ordered by run then start (owned) */
    size_t n;                        /* events */
    size_t cap;                      /* allocated events */
    uint64_t dropped;                /* events past CKH_TL_MAX_EVENTS, not kept */
};

/* Creates an empty timeline with nnodes rows and nruns runs (names "" and
 * times 0 until set). *out is owned by the caller (ckh_report_timeline_free).
 * Returns 0, CKH_EINVAL or CKH_ENOMEM. */
int ckh_report_timeline_new(uint32_t nnodes, uint32_t nruns, struct ckh_report_timeline **out);
/* Frees t and everything it owns. NULL is a no-op. */
void ckh_report_timeline_free(struct ckh_report_timeline *t);
/* Appends one event (label copied, truncated). Past CKH_TL_MAX_EVENTS the
 * event is only counted. Returns 0, CKH_EINVAL or CKH_ENOMEM. */
int ckh_report_timeline_add(struct ckh_report_timeline *t, uint32_t run, int32_t node,
                            enum ckh_tl_kind kind, uint64_t start_ns, uint64_t end_ns,
                            const char *label);
/* Stable kind name ("save"); "?" out of range. */
const char *ckh_tl_kind_name(enum ckh_tl_kind k);
/* Binary transport (for forked workers): writes t to f / reads one back
 * into *out (owned by the caller). A NULL t is written as "none" and read
 * back as NULL. Returns 0, -EIO, CKH_ETRUNCATED, CKH_ECORRUPT, CKH_ENOMEM. */
int ckh_report_timeline_write(FILE *f, const struct ckh_report_timeline *t);
int ckh_report_timeline_read(FILE *f, struct ckh_report_timeline **out);

/* Writes one self-contained HTML page (inline CSS, SVG and script; no
 * external reference, opens offline): the summary, every scenario with its
 * verdict and oracles, for a failure the oracle's detail (expected against
 * actual) and the replay command, and for every scenario with a timeline
 * one SVG per run with a row per node. The page's script marks itself
 * done by adding an element with id "ckh-ok" (or "ckh-error" with the
 * message when a script error happens), which browser tests look for.
 * Returns 0, CKH_EINVAL (NULL f, or NULL rs with n > 0) or -EIO. */
int ckh_report_html(FILE *f, const struct ckh_report_meta *meta, const struct ckh_report_result *rs,
                    size_t n);

/* Writes s with & < > " ' escaped as HTML entities; control characters
 * other than newline and tab and invalid UTF-8 become U+FFFD. NULL writes
 * nothing. */
void ckh_report_html_escape(FILE *f, const char *s);

#endif
