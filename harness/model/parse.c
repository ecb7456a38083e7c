/* The scenario parser's entry points: YAML text -> struct ckh_scenario.
 *
 * Specification (full reference with examples in docs/SCENARIOS.md):
 *   - A scenario file holds exactly one YAML document whose root is a
 *     mapping with the keys name, description, seed, tags, job (required),
 *     faults, restart, expect and compare.
 *   - Every mapping is closed: an unknown key is an error that names the
 *     closest known key ("did you mean"), a duplicate key is an error.
 *   - Scalars are typed by the key that holds them (integer ranges, sizes
 *     with units, durations with units, enums, booleans, absolute simulated
 *     paths). Free-form maps (job.options, expect.values) keep each value's
 *     text and its inferred type.
 *   - A simulated path must be absolute and may not contain a ".."
 *     component; a host path (expect.golden) must be relative without "..".
 *   - Every error carries file, 1-based line and column of the offending
 *     node and a message saying what was expected.
 *   - Parsing is linear in the size of the text (scenario/reader.c).
 *
 * Where each part lives: values.c (scalar conversions), reader.c (arena,
 * errors, getters, closed maps), job.c, faults_section.c (triggers; each
 * action's keys in harness/model/faults/<name>.c), expect.c (restart, expect, compare),
 * names.c (name tables shared with writer.c), and this file (the root).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <fcntl.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "model/reader.h"

/* ---- the root ---- */

static const char *const top_keys[] = {"name",   "description", "seed",    "tags",   "job",
                                       "faults", "restart",     "expect",  "compare", "verify", "explore"};

static bool name_ok(const char *t)
{
    for (; *t; t++)
        if (!isalnum((unsigned char)*t) && !strchr("._-/", *t))
            return false;
    return true;
}

/* "dir/kill-mid.yaml" -> "kill-mid". */
static int default_name(struct ckh_scenario *s, const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *name = ckh__scn_strndup(s, base, len);
    if (!name)
        return CKH_ENOMEM;
    /* A name goes into terminal lines and reports: control characters
     * from a file name become '_' (reports escape everything else). */
    for (char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '_';
    s->name = name;
    return 0;
}

static const char *const explore_keys[] = {"check", "max_states", "time_limit", "from_step", "to_step",
                                           "expect", "start", "crashes", "others", "symptom"};
static const char *const explore_crashes[] = {"all", "crash", "power-loss", "none"};
static const char *const explore_others[] = {"killed", "running"};
static const char *const explore_starts[] = {"auto", "cold", "warm"};
static const char *const explore_expect[] = {"pass", "fail"};
static const char *const explore_checks[] = {"auto", "verify", "restart"};

/* `explore:` (crash states of a command job; harness/search/explore_program.h). */
static int parse_explore(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_explore *e)
{
    yaml_node_t *v;
    int rc = ckh__scn_check_map(p, n, "explore", explore_keys, CKH__NKEYS(explore_keys), NULL, NULL);
    if (rc)
        return rc;
    if (!p->s->job.commands)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'explore' applies to command jobs only (job.command); a "
                             "backend's crash states are explored by ckh validate-backend");
    e->present = true;
    e->line = (int)n->start_mark.line + 1;
    e->column = (int)n->start_mark.column + 1;
    e->from_step = e->to_step = -1;
    if ((v = ckh__scn_get(p, n, "check")) &&
        (rc = ckh__scn_get_enum(p, v, "explore.check", explore_checks, CKH__NKEYS(explore_checks), &e->check)))
        return rc;
    if ((v = ckh__scn_get(p, n, "start")) &&
        (rc = ckh__scn_get_enum(p, v, "explore.start", explore_starts, CKH__NKEYS(explore_starts), &e->start)))
        return rc;
    if ((v = ckh__scn_get(p, n, "max_states")) &&
        (rc = ckh__scn_get_u64(p, v, "explore.max_states", 1, &e->max_states)))
        return rc;
    if ((v = ckh__scn_get(p, n, "time_limit")) &&
        (rc = ckh__scn_get_duration(p, v, "explore.time_limit", &e->time_limit_ns)))
        return rc;
    if ((v = ckh__scn_get(p, n, "from_step")) &&
        (rc = ckh__scn_get_int(p, v, "explore.from_step", 0, INT64_MAX, &e->from_step)))
        return rc;
    if ((v = ckh__scn_get(p, n, "to_step")) &&
        (rc = ckh__scn_get_int(p, v, "explore.to_step", 0, INT64_MAX, &e->to_step)))
        return rc;
    int ex = 0;
    if ((v = ckh__scn_get(p, n, "expect")) &&
        (rc = ckh__scn_get_enum(p, v, "explore.expect", explore_expect, CKH__NKEYS(explore_expect), &ex)))
        return rc;
    e->expect_fail = ex == 1;
    int cr = -1;
    if ((v = ckh__scn_get(p, n, "crashes")) &&
        (rc = ckh__scn_get_enum(p, v, "explore.crashes", explore_crashes, CKH__NKEYS(explore_crashes), &cr)))
        return rc;
    e->crashes = cr + 1;
    if ((v = ckh__scn_get(p, n, "others")) &&
        (rc = ckh__scn_get_enum(p, v, "explore.others", explore_others, CKH__NKEYS(explore_others), &e->others)))
        return rc;
    if ((v = ckh__scn_get(p, n, "symptom")) && (rc = ckh__scn_get_str(p, v, "explore.symptom", &e->symptom)))
        return rc;
    if (e->symptom && !e->expect_fail)
        return ckh__scn_fail(p, v, CKH_EINVAL, "'explore.symptom' names what a failing state says: it needs "
                             "'explore.expect: fail'");
    if (e->check == 1 && !p->s->verify.argc)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'explore.check: verify' needs a 'verify:' command");
    if (e->to_step >= 0 && e->from_step > e->to_step)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'explore.from_step' (%" PRId64 ") is past 'explore.to_step' "
                             "(%" PRId64 ")", e->from_step, e->to_step);
    if (p->s->nfaults)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'explore' makes its own crashes: a scenario with 'explore' "
                             "has no 'faults'");
    return 0;
}

static int parse_root(struct ckh__scn_reader *p, const yaml_node_t *n)
{
    struct ckh_scenario *s = p->s;
    yaml_node_t *v;
    int rc = ckh__scn_check_map(p, n, "scenario", top_keys, CKH__NKEYS(top_keys), NULL, NULL);
    if (rc)
        return rc;
    if ((v = ckh__scn_get(p, n, "name"))) {
        if ((rc = ckh__scn_get_str(p, v, "name", &s->name)))
            return rc;
        if (!name_ok(s->name))
            return ckh__scn_fail(p, v, CKH_EINVAL,
                        "'name' may use only letters, digits, '.', '_', '-' and '/', got '%s'",
                        s->name);
    } else if ((rc = default_name(s, s->file))) {
        return rc;
    }
    if ((v = ckh__scn_get(p, n, "description")) && (rc = ckh__scn_get_str(p, v, "description", &s->description)))
        return rc;
    if ((v = ckh__scn_get(p, n, "seed")) && (rc = ckh__scn_get_u64(p, v, "seed", 0, &s->seed)))
        return rc;
    if ((v = ckh__scn_get(p, n, "tags")) && (rc = ckh__scn_get_name_list(p, v, "tags", NULL, &s->tags, &s->ntags)))
        return rc;
    if (!(v = ckh__scn_get(p, n, "job")))
        return ckh__scn_fail(p, n, CKH_EINVAL, "a scenario needs 'job'");
    if ((rc = ckh__scn_parse_job(p, v, &s->job)))
        return rc;
    if ((v = ckh__scn_get(p, n, "faults")) && (rc = ckh__scn_parse_faults(p, v, s)))
        return rc;
    if ((v = ckh__scn_get(p, n, "restart")) && (rc = ckh__scn_parse_restart(p, v, &s->restart)))
        return rc;
    if ((v = ckh__scn_get(p, n, "expect")) && (rc = ckh__scn_parse_expect(p, v, &s->expect)))
        return rc;
    if ((v = ckh__scn_get(p, n, "compare")) && (rc = ckh__scn_parse_compare(p, v, &s->compare)))
        return rc;
    if ((v = ckh__scn_get(p, n, "verify"))) {
        if (!s->job.commands)
            return ckh__scn_fail(p, v, CKH_EINVAL,
                                 "'verify' applies to command jobs only (job.command); a simulated "
                                 "job's workload checks its own disks");
        if ((rc = ckh__scn_get_argv(p, v, "verify", &s->verify)))
            return rc;
    }
    s->explore.from_step = s->explore.to_step = -1;
    if ((v = ckh__scn_get(p, n, "explore")) && (rc = parse_explore(p, v, &s->explore)))
        return rc;
    return 0;
}

bool ckh_scn_is_command_job(const struct ckh_scenario *sc)
{
    return sc && sc->job.ncommands > 0;
}

/* ==== 6. public entry points ==== */

/* Reports libyaml's error: its position, its problem and, for a tab where
 * YAML wants spaces, a hint. */
static int yaml_fail(struct ckh__scn_reader *p, yaml_parser_t *ps)
{
    yaml_mark_t m = ps->problem ? ps->problem_mark : ps->mark;
    struct ckh_scn_error *err = p->err;
    const char *tab = m.index < p->len && p->text[m.index] == '\t'
                          ? "; YAML indents with spaces, not tabs" : "";
    char ctx[96] = "";
    if (ps->context)
        snprintf(ctx, sizeof ctx, " %s (line %d)", ps->context, (int)ps->context_mark.line + 1);
    snprintf(err->file, sizeof(err->file), "%s", p->file);
    err->line = (int)m.line + 1;
    err->column = (int)m.column + 1;
    err->code = ps->error == YAML_MEMORY_ERROR ? CKH_ENOMEM : CKH_EPARSE;
    return ckh_errf(err->msg, sizeof(err->msg), err->code, "malformed YAML: %s%s%s",
                    ps->problem ? ps->problem : "error", ctx, tab);
}

/* Reports a failure that belongs to no node ("out of memory", bad
 * arguments); returns code. */
static int fail_whole(struct ckh_scn_error *err, const char *file, int code, const char *msg)
{
    snprintf(err->file, sizeof(err->file), "%s", file);
    err->code = code;
    return ckh_errf(err->msg, sizeof(err->msg), code, "%s", msg);
}

/* Loads the text's one document into p->doc and parses its root. */
static int load_and_parse(struct ckh__scn_reader *p, yaml_parser_t *ps)
{
    int rc;
    if (!yaml_parser_load(ps, &p->doc))
        return yaml_fail(p, ps);
    yaml_node_t *root = yaml_document_get_root_node(&p->doc);
    if (!root) {
        rc = ckh__scn_fail(p, NULL, CKH_EPARSE, "the file holds no scenario (empty document)");
        p->err->line = 1;
        p->err->column = 1;
        goto out_delete_doc;
    }
    /* Exactly one document per file. */
    yaml_document_t extra;
    if (!yaml_parser_load(ps, &extra)) {
        rc = yaml_fail(p, ps);
        goto out_delete_doc;
    }
    yaml_node_t *xroot = yaml_document_get_root_node(&extra);
    rc = xroot ? ckh__scn_fail(p, xroot, CKH_EPARSE,
                               "a scenario file holds one YAML document; found another")
               : 0;
    yaml_document_delete(&extra);
    if (rc == 0)
        rc = parse_root(p, root);
out_delete_doc:
    yaml_document_delete(&p->doc);
    return rc;
}

int ckh_scenario_parse_string(const char *text, size_t len, const char *file,
                              const struct ckh_scn_options *opts, struct ckh_scenario **out,
                              struct ckh_scn_error *err)
{
    struct ckh_scn_error dummy;
    struct ckh__scn_reader p = {.file = file ? file : "<string>", .opts = opts,
                                .err = err ? err : &dummy, .text = text, .len = len};
    yaml_parser_t ps;
    int rc;
    memset(p.err, 0, sizeof(*p.err));
    if (out)
        *out = NULL;
    if (!text || !out)
        return fail_whole(p.err, p.file, CKH_EINVAL, "no text or no result pointer given");
    struct ckh_alloc *alloc = opts && opts->alloc ? opts->alloc : ckh_alloc_system();
    struct ckh_scenario *s = ckh_calloc(alloc, 1, sizeof(*s));
    if (!s)
        return fail_whole(p.err, p.file, CKH_ENOMEM, "out of memory");
    s->alloc = alloc;
    s->seed = 1;
    s->expect.reference = true;
    s->restart.resume_epoch = -1;
    s->restart.max_restarts = 3;
    p.s = s;
    if (!(s->file = ckh__scn_strdup(s, p.file))) {
        rc = CKH_ENOMEM;
        goto out_free_scenario;
    }
    if (!yaml_parser_initialize(&ps)) {
        rc = CKH_ENOMEM;
        goto out_free_scenario;
    }
    yaml_parser_set_input_string(&ps, (const unsigned char *)text, len);
    rc = load_and_parse(&p, &ps);
    yaml_parser_delete(&ps);
    if (rc == 0) {
        *out = s;
        return 0;
    }
out_free_scenario:
    if (rc == CKH_ENOMEM && !p.err->msg[0])
        fail_whole(p.err, p.file, CKH_ENOMEM, "out of memory");
    ckh_scenario_free(s);
    return rc;
}

static int read_fail(struct ckh_scn_error *e, const char *path, int code, const char *fmt,
                     const char *arg)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->file, sizeof(e->file), "%s", path);
    e->code = code;
    return ckh_errf(e->msg, sizeof(e->msg), code, fmt, arg);
}

int ckh_scn_read_file(const char *path, struct ckh_alloc *alloc, char **buf, size_t *len,
                      struct ckh_scn_error *e)
{
    if (!alloc)
        alloc = ckh_alloc_system();
    int rc = ckh_posix_read_file(path, CKH_SCN_FILE_BYTES_MAX, alloc, buf, len);
    switch (rc) {
    case 0: return 0;
    case -EISDIR: return read_fail(e, path, CKH_EINVAL, "%s", "is a folder, not a scenario file");
    case CKH_EUNSUPPORTED: return read_fail(e, path, rc, "%s", "not a regular file or folder");
    case CKH_ELIMIT: return read_fail(e, path, rc, "%s", "larger than 64 MiB, the limit for a scenario file");
    case CKH_ENOMEM: return read_fail(e, path, rc, "cannot read: %s", ckh_strerror(rc));
    default: return read_fail(e, path, rc, "cannot open: %s", strerror(-rc));
    }
}

int ckh_scenario_parse_file(const char *path, const struct ckh_scn_options *opts,
                            struct ckh_scenario **out, struct ckh_scn_error *err)
{
    struct ckh_scn_error dummy;
    struct ckh_scn_error *e = err ? err : &dummy;
    struct ckh_alloc *alloc = opts && opts->alloc ? opts->alloc : ckh_alloc_system();
    memset(e, 0, sizeof(*e));
    if (out)
        *out = NULL;
    if (!path || !out)
        return fail_whole(e, "", CKH_EINVAL, "no path or no result pointer given");
    char *buf = NULL;
    size_t len = 0;
    int rc = ckh_scn_read_file(path, alloc, &buf, &len, e);
    if (rc == 0) {
        rc = ckh_scenario_parse_string(buf, len, path, opts, out, e);
        ckh_free(alloc, buf);
    }
    if (rc && !e->code) {
        e->code = rc;
        ckh_errf(e->msg, sizeof(e->msg), rc, "cannot read: %s", ckh_strerror(rc));
    }
    return rc;
}

int ckh_scn_error_format(const struct ckh_scn_error *err, char *buf, size_t n)
{
    if (!err || (!buf && n))
        return CKH_EINVAL;
    if (err->line > 0)
        return snprintf(buf, n, "%s:%d:%d: %s", err->file, err->line, err->column, err->msg);
    return snprintf(buf, n, "%s: %s", err->file, err->msg);
}
