/* Oracle "golden": the job's results match the golden file named by the
 * scenario (format: reference/golden/README.md), looked up by workload,
 * node count and node name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/posix.h"
#include "ckh/ref.h"
#include "judge/oracle.h"

#define GOLDEN_BYTES_MAX (64u << 20) /* a larger golden file is not read */

static bool applies(const struct ckh_scenario_run *r)
{
    return r->sc->expect.golden != NULL;
}

static bool check(const struct ckh_scenario_run *r, char *detail, size_t n, int64_t *divergent)
{
    (void)divergent;
    char msg[512];
    const char *path = r->golden_path;
    char *text = NULL;
    size_t len = 0;
    if (ckh_posix_read_file(path, GOLDEN_BYTES_MAX, NULL, &text, &len) != 0) {
        snprintf(detail, n, "cannot read golden file %s", path);
        return false;
    }
    struct ckh_golden *g = NULL;
    size_t ng = 0;
    int rc = ckh_golden_parse(NULL, text, &g, &ng, msg, sizeof msg);
    free(text);
    if (rc != 0) {
        snprintf(detail, n, "%s: %s", path, msg);
        return false;
    }
    bool ok = true;
    const struct ckh_job_result *got = &r->got.r;
    for (size_t i = 0; ok && i < got->nnodes; i++) {
        const struct ckh_node_result *nr = &got->nodes[i];
        const struct ckh_golden *line =
            ckh_golden_find(g, ng, r->sc->job.workload, (int)r->sc->job.nodes, nr->node);
        if (!line) {
            snprintf(detail, n, "%s has no line for workload %s, %u nodes, node %s", path,
                     r->sc->job.workload, r->sc->job.nodes, nr->node);
            ok = false;
            break;
        }
        struct ckh_workload_result wr;
        memset(&wr, 0, sizeof wr);
        snprintf(wr.node, sizeof wr.node, "%s", nr->node);
        wr.epochs = nr->epochs;
        wr.total = nr->total;
        snprintf(wr.blobs, sizeof wr.blobs, "%s", nr->blobs);
        wr.digest = nr->digest;
        wr.finished = nr->finished;
        if (ckh_golden_check(line, &wr, msg, sizeof msg) != 0) {
            snprintf(detail, n, "%s: %s", nr->node, msg);
            ok = false;
        }
    }
    if (ok)
        snprintf(detail, n, "%zu node%s match %s", got->nnodes, got->nnodes == 1 ? "" : "s",
                 r->sc->expect.golden);
    ckh_free(NULL, g);
    return ok;
}

const struct ckh_oracle_ops ckh__oracle_golden = {
    .name = "golden",
    .description = "results equal the golden file in reference/",
    .applies = applies,
    .check = check,
};
