/* The `restart`, `expect` and `compare` sections of a scenario: the
 * restart policy, what the run must show, and what the comparison with the
 * reference run leaves out (docs/SCENARIOS.md, "restart", "expect",
 * "compare").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/record.h"
#include "model/reader.h"

/* ---- restart ---- */

static const char *const restart_keys[] = {"resume", "max_restarts", "world_size", "scope"};
static const char *const scope_names[] = {"all", "failed"}; /* enum ckh_scn_restart_scope */

int ckh__scn_parse_restart(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_restart *r)
{
    yaml_node_t *v;
    int64_t i;
    int rc = ckh__scn_check_map(p, n, "restart", restart_keys, CKH__NKEYS(restart_keys), NULL, NULL);
    if (rc)
        return rc;
    if ((v = ckh__scn_get(p, n, "resume"))) {
        const char *t = ckh__scn_is_scalar(v) ? ckh__scn_text(v) : "";
        if (!strcmp(t, "latest")) {
            r->resume_epoch = -1;
        } else if (!strncmp(t, "epoch ", 6) && ckh__scn_parse_i64(t + 6, &i) && i >= 0) {
            r->resume_epoch = i;
        } else {
            return ckh__scn_fail(p, v, CKH_EINVAL,
                        "'restart.resume' expects 'latest' or 'epoch N' (N >= 0), got " CKH__GOT_FMT,
                        CKH__GOT_ARGS(v));
        }
    }
    if ((v = ckh__scn_get(p, n, "max_restarts"))) {
        if ((rc = ckh__scn_get_int(p, v, "restart.max_restarts", 0, 1000, &i)))
            return rc;
        r->max_restarts = (uint32_t)i;
    }
    if ((v = ckh__scn_get(p, n, "world_size"))) {
        if ((rc = ckh__scn_get_int(p, v, "restart.world_size", 1, 1024, &i)))
            return rc;
        r->world_size = (uint32_t)i;
        r->world_size_line = (int)v->start_mark.line + 1;
        r->world_size_column = (int)v->start_mark.column + 1;
    }
    if ((v = ckh__scn_get(p, n, "scope"))) {
        int e = 0;
        if (!p->s->job.commands)
            return ckh__scn_fail(p, v, CKH_EINVAL,
                                 "'restart.scope' applies to command jobs only (job.command); a "
                                 "simulated job restarts its unfinished nodes, every rank of a group");
        if ((rc = ckh__scn_get_enum(p, v, "restart.scope", scope_names, CKH__NKEYS(scope_names), &e)))
            return rc;
        r->scope = (enum ckh_scn_restart_scope)e;
    }
    return 0;
}

/* ---- expect ---- */

/* expect.values keys: "<field>" or "<field>.<node>" (the node is checked at
 * run time, when the job's node names are known); blobs needs a node. */
static const char *const value_fields[] = {"epochs", "total", "saves_failed", "resumed_from",
                                           "digest", "blobs", "runs", "restarts"};

static int check_values(struct ckh__scn_reader *p, const yaml_node_t *map, const struct ckh_scn_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char field[32];
        const char *dot = strchr(kv[i].key, '.');
        size_t fl = dot ? (size_t)(dot - kv[i].key) : strlen(kv[i].key);
        snprintf(field, sizeof field, "%.*s", (int)(fl < sizeof field ? fl : sizeof field - 1), kv[i].key);
        bool known = false;
        for (size_t k = 0; k < CKH__NKEYS(value_fields); k++)
            known |= strcmp(field, value_fields[k]) == 0;
        /* Report at the value: the model keeps its line and column. */
        yaml_node_t at = *map;
        at.start_mark.line = (size_t)(kv[i].line - 1);
        at.start_mark.column = (size_t)(kv[i].column - 1);
        if (!known) {
            char h[256];
            ckh__scn_hint(h, sizeof h, field, value_fields, CKH__NKEYS(value_fields));
            return ckh__scn_fail(p, &at, CKH_EINVAL, "unknown expected value '%s'%s", kv[i].key, h);
        }
        bool per_run = strcmp(field, "runs") == 0 || strcmp(field, "restarts") == 0;
        if (per_run && dot)
            return ckh__scn_fail(p, &at, CKH_EINVAL, "'%s' counts the job's runs; it takes no node", field);
        if (strcmp(field, "blobs") == 0) {
            if (!dot || !dot[1])
                return ckh__scn_fail(p, &at, CKH_EINVAL, "'blobs' needs a node: 'blobs.<node>'");
            continue;
        }
        if (strcmp(field, "digest") == 0 && kv[i].type != CKH_SCN_INT) {
            char *end = NULL;
            errno = 0;
            (void)strtoull(kv[i].text, &end, 16);
            if (errno || !end || *end || !kv[i].text[0])
                return ckh__scn_fail(p, &at, CKH_EINVAL, "'%s' expects an integer or 16 hex digits, got '%s'",
                            kv[i].key, kv[i].text);
            continue;
        }
        if (kv[i].type != CKH_SCN_INT)
            return ckh__scn_fail(p, &at, CKH_EINVAL, "'%s' expects an integer, got '%s'", kv[i].key, kv[i].text);
    }
    return 0;
}

static const char *const expect_keys[] = {"outcome", "reference", "golden",      "values",
                                          "oracles", "skip",      "detect",      "max_restarts"};

int ckh__scn_parse_expect(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_expect *x)
{
    const struct ckh_scn_options *o = p->opts;
    yaml_node_t *v;
    int e = 0;
    int rc = ckh__scn_check_map(p, n, "expect", expect_keys, CKH__NKEYS(expect_keys), NULL, NULL);
    if (rc)
        return rc;
    if ((v = ckh__scn_get(p, n, "outcome"))) {
        if ((rc = ckh__scn_get_enum(p, v, "expect.outcome", ckh_scn_outcomes.names, ckh_scn_outcomes.n, &e)))
            return rc;
        x->outcome = (enum ckh_scn_outcome)e;
    }
    if ((v = ckh__scn_get(p, n, "reference")) && (rc = ckh__scn_get_bool(p, v, "expect.reference", &x->reference)))
        return rc;
    if ((v = ckh__scn_get(p, n, "golden")) && p->s->job.commands)
        return ckh__scn_fail(p, v, CKH_EINVAL,
                             "'expect.golden' does not apply to a command job (golden files hold a "
                             "built-in workload's results); use expect.values or the reference run");
    if ((v = ckh__scn_get(p, n, "golden")) && (rc = ckh__scn_get_rel_path(p, v, "expect.golden", &x->golden)))
        return rc;
    if ((v = ckh__scn_get(p, n, "values")) &&
        ((rc = ckh__scn_get_kv_map(p, v, "expect.values", &x->values, &x->nvalues)) ||
         (rc = check_values(p, v, x->values, x->nvalues))))
        return rc;
    if ((v = ckh__scn_get(p, n, "oracles")) &&
        (rc = ckh__scn_get_name_list(p, v, "expect.oracles", o ? &o->oracles : NULL, &x->oracles,
                            &x->noracles)))
        return rc;
    const yaml_node_t *skip_node = ckh__scn_get(p, n, "skip");
    if (skip_node && (rc = ckh__scn_get_name_list(p, skip_node, "expect.skip", o ? &o->oracles : NULL,
                                         &x->skip, &x->nskip)))
        return rc;
    if ((v = ckh__scn_get(p, n, "detect")) &&
        (rc = ckh__scn_get_name_list(p, v, "expect.detect", o ? &o->oracles : NULL, &x->detect,
                            &x->ndetect)))
        return rc;
    if ((v = ckh__scn_get(p, n, "max_restarts"))) {
        int64_t i;
        if ((rc = ckh__scn_get_int(p, v, "expect.max_restarts", 0, 1000, &i)))
            return rc;
        x->max_restarts = (uint32_t)i;
        x->max_restarts_set = true;
    }
    for (size_t i = 0; i < x->nskip; i++)
        for (size_t j = 0; j < x->noracles; j++)
            if (!strcmp(x->skip[i], x->oracles[j]))
                return ckh__scn_fail(p, skip_node, CKH_EINVAL, "oracle '%s' is both in 'oracles' and 'skip'",
                            x->skip[i]);
    return 0;
}

/* ---- compare ---- */

static const char *const compare_keys[] = {"ignore", "content"};

/* The i-th entry of a name list node (a sequence, or one scalar). */
static const yaml_node_t *list_item(struct ckh__scn_reader *p, const yaml_node_t *n, size_t i)
{
    return n->type == YAML_SEQUENCE_NODE ? ckh__scn_node(p, n->data.sequence.items.start[i]) : n;
}

/* compare.content: globs of checkpoint files compared by content (command
 * jobs), relative to the checkpoint directory. */
static int parse_content(struct ckh__scn_reader *p, const yaml_node_t *v, struct ckh_scn_compare *c)
{
    int rc = ckh__scn_get_name_list(p, v, "compare.content", NULL, &c->content, &c->ncontent);
    if (rc)
        return rc;
    for (size_t i = 0; i < c->ncontent; i++) {
        const char *g = c->content[i];
        if (!p->s->job.commands)
            return ckh__scn_fail(p, list_item(p, v, i), CKH_EINVAL,
                                 "'compare.content' names checkpoint files, which are compared for command "
                                 "jobs only (job.command)");
        if (!g[0] || g[0] == '/' || strstr(g, "..") || strlen(g) > 1000)
            return ckh__scn_fail(p, list_item(p, v, i), CKH_EINVAL,
                                 "'compare.content' expects globs relative to the checkpoint directory "
                                 "(such as '*.json' or 'latest'; '**' is not special, '*' does not cross "
                                 "'/'), got '%s'", g);
    }
    return 0;
}

int ckh__scn_parse_compare(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_compare *c)
{
    yaml_node_t *v;
    int rc = ckh__scn_check_map(p, n, "compare", compare_keys, CKH__NKEYS(compare_keys), NULL, NULL);
    if (rc)
        return rc;
    if ((v = ckh__scn_get(p, n, "content")) && (rc = parse_content(p, v, c)) != 0)
        return rc;
    if (!(v = ckh__scn_get(p, n, "ignore")))
        return 0;
    if ((rc = ckh__scn_get_name_list(p, v, "compare.ignore", NULL, &c->ignore, &c->nignore)))
        return rc;
    /* The names are record names (include/ckh/record.h), checked alike;
     * a command job may also leave files of its checkpoint directory out
     * ("file:GLOB", GLOB relative to the directory). */
    for (size_t i = 0; i < c->nignore; i++) {
        const char *e = c->ignore[i];
        if (!strncmp(e, "file:", 5)) {
            if (!p->s->job.commands)
                return ckh__scn_fail(p, list_item(p, v, i), CKH_EINVAL,
                                     "'compare.ignore' entry '%s': files are compared for command "
                                     "jobs only (job.command)", e);
            if (!e[5] || e[5] == '/' || strstr(e, "..") || strlen(e) > 1000)
                return ckh__scn_fail(p, list_item(p, v, i), CKH_EINVAL,
                                     "'compare.ignore' expects 'file:' and a glob relative to the "
                                     "checkpoint directory (such as 'file:logs/*'), got '%s'", e);
            continue;
        }
        if (ckh_record_name_check(e) != 0)
            return ckh__scn_fail(p, list_item(p, v, i), CKH_EINVAL,
                                 "'compare.ignore' expects record names (1 to %d letters, digits, "
                                 "'_', '.' or '-')%s, got '%s'",
                                 CKH_RECORD_NAME_MAX, p->s->job.commands ? " or 'file:GLOB'" : "", e);
    }
    return 0;
}
