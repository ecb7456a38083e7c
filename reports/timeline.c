/* Run timelines: the per-node events of every run of a scenario that the
 * HTML report draws (values, their names) and their transport from a
 * worker to the parent (a small binary format over a file or pipe).
 * Model and ownership: reports/report.h.
 *
 * Map: timeline values · transport.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "report.h"

/* ---- timeline values ---- */

static const char *const tl_names[] = {
#define CKH__TL_NAME(e, s) s,
    CKH_TL_KIND_MAP(CKH__TL_NAME)
#undef CKH__TL_NAME
};

const char *ckh_tl_kind_name(enum ckh_tl_kind k)
{
    return (unsigned)k < CKH_TL__COUNT ? tl_names[k] : "?";
}

int ckh_report_timeline_new(uint32_t nnodes, uint32_t nruns, struct ckh_report_timeline **out)
{
    if (!out)
        return CKH_EINVAL;
    *out = NULL;
    struct ckh_report_timeline *t = calloc(1, sizeof *t);
    if (!t)
        return CKH_ENOMEM;
    t->nodes = calloc(nnodes ? nnodes : 1, sizeof *t->nodes);
    t->runs = calloc(nruns ? nruns : 1, sizeof *t->runs);
    if (!t->nodes || !t->runs) {
        ckh_report_timeline_free(t);
        return CKH_ENOMEM;
    }
    t->nnodes = nnodes;
    t->nruns = nruns;
    *out = t;
    return 0;
}

void ckh_report_timeline_free(struct ckh_report_timeline *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t->runs);
    free(t->ev);
    free(t);
}

int ckh_report_timeline_add(struct ckh_report_timeline *t, uint32_t run, int32_t node,
                            enum ckh_tl_kind kind, uint64_t start_ns, uint64_t end_ns,
                            const char *label)
{
    if (!t || node < 0 || (uint32_t)node >= t->nnodes || (unsigned)kind >= CKH_TL__COUNT ||
        end_ns < start_ns)
        return CKH_EINVAL;
    if (t->n >= CKH_TL_MAX_EVENTS) {
        t->dropped++;
        return 0;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        struct ckh_report_tl_event *nv = realloc(t->ev, nc * sizeof *nv);
        if (!nv)
            return CKH_ENOMEM;
        t->ev = nv;
        t->cap = nc;
    }
    CKH_ASSERT(t->n < t->cap && t->n < CKH_TL_MAX_EVENTS);
    struct ckh_report_tl_event *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    e->run = run;
    e->node = node;
    e->kind = kind;
    e->start_ns = start_ns;
    e->end_ns = end_ns;
    snprintf(e->label, sizeof e->label, "%s", label ? label : "");
    return 0;
}

/* ---- transport ---- */

#define TL_MAGIC 0x314c54484b43ull /* "CKHTL1" */

#ifdef CKH_SLOW_ASSERTS
/* Whether every event passes the reader's checks. */
static bool events_readable(const struct ckh_report_timeline *t)
{
    for (size_t i = 0; i < t->n; i++)
        if ((unsigned)t->ev[i].kind >= CKH_TL__COUNT || t->ev[i].node < 0 || (uint32_t)t->ev[i].node >= t->nnodes)
            return false;
    return true;
}
#endif

int ckh_report_timeline_write(FILE *f, const struct ckh_report_timeline *t)
{
    if (!f)
        return CKH_EINVAL;
    uint64_t hdr[5] = {TL_MAGIC, UINT64_MAX, 0, 0, 0};
    if (t) {
        hdr[1] = t->nnodes;
        hdr[2] = t->nruns;
        hdr[3] = t->n;
        hdr[4] = t->dropped;
    }
    /* what the reader takes: the counts within its bounds, every event on a node of the timeline */
    CKH_ASSERT(!t || (t->nnodes <= (1u << 20) && t->nruns <= (1u << 20) && t->n <= CKH_TL_MAX_EVENTS &&
                      t->n <= t->cap));
    CKH_ASSERT_SLOW(!t || events_readable(t));
    if (fwrite(hdr, sizeof hdr, 1, f) != 1)
        return -EIO;
    if (!t)
        return 0;
    if (fwrite(t->nodes, sizeof *t->nodes, t->nnodes, f) != t->nnodes ||
        fwrite(t->runs, sizeof *t->runs, t->nruns, f) != t->nruns ||
        fwrite(t->ev, sizeof *t->ev, t->n, f) != t->n)
        return -EIO;
    return 0;
}

int ckh_report_timeline_read(FILE *f, struct ckh_report_timeline **out)
{
    if (!f || !out)
        return CKH_EINVAL;
    *out = NULL;
    uint64_t hdr[5];
    if (fread(hdr, sizeof hdr, 1, f) != 1)
        return CKH_ETRUNCATED;
    if (hdr[0] != TL_MAGIC)
        return CKH_ECORRUPT;
    if (hdr[1] == UINT64_MAX)
        return 0;
    if (hdr[1] > (1u << 20) || hdr[2] > (1u << 20) || hdr[3] > CKH_TL_MAX_EVENTS)
        return CKH_ECORRUPT;
    struct ckh_report_timeline *t = NULL;
    int rc = ckh_report_timeline_new((uint32_t)hdr[1], (uint32_t)hdr[2], &t);
    if (rc)
        return rc;
    t->dropped = hdr[4];
    if (hdr[3]) {
        t->ev = calloc(hdr[3], sizeof *t->ev);
        if (!t->ev) {
            ckh_report_timeline_free(t);
            return CKH_ENOMEM;
        }
        t->cap = hdr[3];
    }
    t->n = hdr[3];
    if (fread(t->nodes, sizeof *t->nodes, t->nnodes, f) != t->nnodes ||
        fread(t->runs, sizeof *t->runs, t->nruns, f) != t->nruns ||
        fread(t->ev, sizeof *t->ev, t->n, f) != t->n) {
        ckh_report_timeline_free(t);
        return CKH_ETRUNCATED;
    }
    for (uint32_t i = 0; i < t->nnodes; i++)
        t->nodes[i][CKH_TL_NODE_LEN - 1] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        t->ev[i].label[CKH_TL_LABEL_LEN - 1] = '\0';
        if ((unsigned)t->ev[i].kind >= CKH_TL__COUNT || t->ev[i].node < 0 ||
            (uint32_t)t->ev[i].node >= t->nnodes) {
            ckh_report_timeline_free(t);
            return CKH_ECORRUPT;
        }
    }
    *out = t;
    return 0;
}

