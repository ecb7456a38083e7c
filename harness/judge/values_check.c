/* Oracle "values": explicit expected values from the scenario's
 * expect.values map.
 *
 * Keys: `epochs`, `total`, `saves_failed`, `resumed_from`, `digest` (for
 * every node; an integer), the same with `.<node>` for one node
 * (`total.trainer_0`), `blobs.<node>` (the comma-separated name set),
 * `runs` and `restarts` (the faulted job's runs).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/oracle.h"

static bool applies(const struct ckh_scenario_run *r)
{
    return r->sc->expect.nvalues > 0;
}

static bool node_value(const struct ckh_node_result *nr, const char *field, int64_t *out)
{
    if (strcmp(field, "epochs") == 0)
        *out = nr->epochs;
    else if (strcmp(field, "total") == 0)
        *out = nr->total;
    else if (strcmp(field, "saves_failed") == 0)
        *out = (int64_t)nr->saves_failed;
    else if (strcmp(field, "resumed_from") == 0)
        *out = nr->resumed_from;
    else if (strcmp(field, "digest") == 0)
        *out = (int64_t)nr->digest;
    else
        return false;
    return true;
}

static bool check_one(const struct ckh_scenario_run *r, const struct ckh_scn_kv *kv, char *detail,
                      size_t n)
{
    const struct ckh_job_result *got = &r->got.r;
    char field[64];
    const char *dot = strchr(kv->key, '.');
    size_t fl = dot ? (size_t)(dot - kv->key) : strlen(kv->key);
    if (fl >= sizeof field)
        fl = sizeof field - 1;
    memcpy(field, kv->key, fl);
    field[fl] = '\0';
    const char *node = dot ? dot + 1 : NULL;

    if (!node && (strcmp(field, "runs") == 0 || strcmp(field, "restarts") == 0)) {
        int64_t v = (int64_t)r->nruns - (strcmp(field, "restarts") == 0 ? 1 : 0);
        if (kv->type != CKH_SCN_INT || kv->i != v) {
            snprintf(detail, n, "line %d: expected %s %s, got %" PRId64, kv->line, kv->key,
                     kv->text, v);
            return false;
        }
        return true;
    }
    if (strcmp(field, "blobs") == 0) {
        const struct ckh_node_result *nr = node ? ckh_job_copy_node(&r->got, node) : NULL;
        if (!nr) {
            snprintf(detail, n, "line %d: '%s' needs an existing node (blobs.<node>)", kv->line,
                     kv->key);
            return false;
        }
        if (strcmp(nr->blobs, kv->text) != 0) {
            snprintf(detail, n, "line %d: expected %s {%s}, got {%s}", kv->line, kv->key, kv->text,
                     nr->blobs);
            return false;
        }
        return true;
    }
    int64_t v;
    if (got->nnodes == 0 || !node_value(&got->nodes[0], field, &v)) {
        snprintf(detail, n,
                 "line %d: unknown value '%s' (known: epochs, total, saves_failed, resumed_from, "
                 "digest, blobs.<node>, runs, restarts; per node: <key>.<node>)",
                 kv->line, kv->key);
        return false;
    }
    int64_t want = kv->i;
    if (kv->type != CKH_SCN_INT) /* a digest in hex (checked by the parser) */
        want = (int64_t)strtoull(kv->text, NULL, 16);
    for (size_t i = 0; i < got->nnodes; i++) {
        const struct ckh_node_result *nr = &got->nodes[i];
        if (node && strcmp(nr->node, node) != 0)
            continue;
        node_value(nr, field, &v);
        if (v != want) {
            snprintf(detail, n, "line %d: expected %s %s on %s, got %" PRId64, kv->line, field,
                     kv->text, nr->node, v);
            return false;
        }
        if (node)
            return true;
    }
    if (node) {
        snprintf(detail, n, "line %d: no node named '%s'", kv->line, node);
        return false;
    }
    return true;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    for (size_t i = 0; i < r->sc->expect.nvalues; i++)
        if (!check_one(r, &r->sc->expect.values[i], detail, n))
            return false;
    snprintf(detail, n, "%zu expected value%s hold", r->sc->expect.nvalues,
             r->sc->expect.nvalues == 1 ? "" : "s");
    return true;
}

const struct ckh_oracle_ops ckh__oracle_values = {
    .name = "values",
    .description = "explicit expected values (expect.values) hold",
    .applies = applies,
    .check = check,
};
