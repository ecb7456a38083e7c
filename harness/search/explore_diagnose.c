/* The crash explorer's diagnosis (rule E5 of harness/search/explore.c):
 * a symptom seen on a crash state is refined into the protocol step that
 * allowed it, by rules a to g tried in the order E5 gives (a, b, f, c/d,
 * e, g), and the crash state is described in one line for the report.
 *
 * Each rule function returns the refined enum ckh_vuln_kind with the step
 * written, or -1 when it does not apply.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/op.h"
#include "search/explore_internal.h"

static const char *choice_name(enum ckh_crash_choice c)
{
    static const char *const n[] = {"persisted", "DROPPED", "TORN(zeros)", "TORN(garbage)"};
    return (unsigned)c < 4 ? n[c] : "?";
}

static bool is_data(int kind)
{
    return kind == CKH_OP_PWRITE || kind == CKH_OP_WRITE || kind == CKH_OP_FTRUNCATE;
}

static bool is_entry(int kind)
{
    return kind == CKH_OP_RENAME || kind == CKH_OP_UNLINK || kind == CKH_OP_MKDIR ||
           kind == CKH_OP_RMDIR || kind == CKH_OP_SYMLINK || kind == CKH_OP_OPEN;
}

/* Whether op o creates a file or fills one with data. */
static bool fills(const struct ckh__xop *o)
{
    return is_data(o->kind) || (o->kind == CKH_OP_OPEN && (o->flags & CKH_O_CREAT));
}

/* Whether trace op o (an entry op) is in effect: not dropped in the vector. */
static bool entry_kept(const struct ckh__xop *o, const struct ckh__xcrash *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct ckh__xpend *p = &c->p[i];
        if (c->ch[i] != CKH_CRASH_DROP || !is_entry(p->kind))
            continue;
        if (o->kind == CKH_OP_RENAME && p->kind == CKH_OP_RENAME && p->path2 && o->path2 &&
            strcmp(p->path, o->path) == 0 && strcmp(p->path2, o->path2) == 0)
            return false;
        if (o->kind != CKH_OP_RENAME && strcmp(p->path, o->path) == 0)
            return false;
    }
    return true;
}

/* a. a save op modified a file that held a committed checkpoint. */
static int rule_in_place(struct ckh__xctx *x, const struct ckh__xcrash *c, char *step, size_t sn)
{
    char od[400];
    for (size_t i = 0; i < c->k; i++) {
        const struct ckh__xop *o = &c->t[i];
        bool modifies = is_data(o->kind) || (o->kind == CKH_OP_OPEN && (o->flags & CKH_O_TRUNC));
        if (o->phase == CKH__PH_SAVE && modifies && ckh__explore_was_pre(x, o->path)) {
            ckh__explore_op_desc(o, od, sizeof(od));
            snprintf(step, sn, "op #%zu %s modifies the committed checkpoint file %s in place "
                     "(write a new file and rename it over instead)", i, od, o->path);
            return CKH_VULN_OVERWRITE_IN_PLACE;
        }
    }
    return -1;
}

/* b. a save op deleted a committed file before the new one was committed. */
static int rule_retention(struct ckh__xctx *x, const struct ckh__xcrash *c, int kind, char *step,
                          size_t sn)
{
    if (kind != CKH_VULN_NO_CHECKPOINT && kind != CKH_VULN_LISTED_REFUSED &&
        kind != CKH_VULN_RECOVERY_FAILS && kind != CKH_VULN_TOO_FEW_CHECKPOINTS)
        return -1;
    for (size_t i = 0; i < c->k; i++) {
        const struct ckh__xop *o = &c->t[i];
        if (o->phase == CKH__PH_SAVE && o->kind == CKH_OP_UNLINK &&
            ckh__explore_was_pre(x, o->path)) {
            snprintf(step, sn, "op #%zu unlink %s deletes a committed checkpoint before the "
                     "new one is committed", i, o->path);
            return CKH_VULN_RETENTION_BEFORE_COMMIT;
        }
    }
    return -1;
}

/* f. the save had returned, yet an entry op was dropped. */
static int rule_dir_fsync(const struct ckh__xcrash *c, int kind, char *step, size_t sn)
{
    if (!c->returned || (kind != CKH_VULN_NOT_DURABLE && kind != CKH_VULN_NO_CHECKPOINT))
        return -1;
    const struct ckh__xpend *p = c->p;
    for (size_t di = 0; di < c->n; di++) {
        if (!is_entry(p[di].kind) || c->ch[di] != CKH_CRASH_DROP)
            continue;
        char dir[CKH_PATH_MAX + 1] = "/";
        ckh_path_dirname(p[di].path2 ? p[di].path2 : p[di].path, dir, sizeof(dir));
        char dep[CKH_PATH_MAX + 64] = "";
        for (size_t j = di + 1; j < c->n; j++)
            if (p[j].kind == CKH_OP_RENAME && strcmp(p[j].path, p[di].path) == 0)
                snprintf(dep, sizeof(dep), " (nor the rename to %s that depends on it)",
                         p[j].path2 ? p[j].path2 : "?");
        snprintf(step, sn, "%s %s%s%s%s was not durable when the save returned (no fsync of "
                 "the directory %s after it)", ckh_op_name((enum ckh_op_kind)p[di].kind),
                 p[di].path, p[di].path2 ? " -> " : "", p[di].path2 ? p[di].path2 : "", dep,
                 dir);
        return CKH_VULN_NO_DIR_FSYNC;
    }
    return -1;
}

/* c. pending data op di (dropped or torn) of a file whose rename persisted. */
static int rule_rename_before_data(const struct ckh__xcrash *c, size_t di, char *step, size_t sn)
{
    const struct ckh__xpend *p = &c->p[di];
    const char *dp = p->path; /* after a rename: the file's new name */
    for (size_t i = 0; i < c->k; i++) {
        const struct ckh__xop *o = &c->t[i];
        if (o->kind != CKH_OP_RENAME || !entry_kept(o, c) ||
            (strcmp(o->path, dp) != 0 && (!o->path2 || strcmp(o->path2, dp) != 0)))
            continue;
        bool written_before = false;
        for (size_t j = 0; j < i && !written_before; j++)
            written_before = is_data(c->t[j].kind) && strcmp(c->t[j].path, o->path) == 0;
        if (!written_before)
            continue;
        snprintf(step, sn, "op #%zu rename %s -> %s persisted before the data of %s "
                 "(%s [%" PRIu64 ",+%" PRIu64 ") %s; no fsync of the file before the "
                 "rename)", i, o->path, o->path2 ? o->path2 : "?", o->path,
                 ckh_op_name((enum ckh_op_kind)p->kind), p->off, p->len,
                 choice_name(c->ch[di]));
        return CKH_VULN_RENAME_BEFORE_DATA;
    }
    return -1;
}

/* d. pending op di (dropped or torn) of a file while a later entry op of
 * the save on another name persisted (a rename preferred). */
static int rule_pointer_before_pending(const struct ckh__xcrash *c, size_t di, char *step,
                                       size_t sn)
{
    const struct ckh__xpend *p = &c->p[di];
    const char *dp = p->path;
    const char *what = is_data(p->kind) ? "data" : "creation";
    char od[400];
    size_t first_w = c->k;
    for (size_t i = 0; i < c->k; i++)
        if (fills(&c->t[i]) && strcmp(c->t[i].path, dp) == 0) {
            first_w = i;
            break;
        }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = first_w + 1; i < c->k; i++) {
            const struct ckh__xop *o = &c->t[i];
            bool want = pass == 0 ? o->kind == CKH_OP_RENAME
                                  : (is_entry(o->kind) && o->kind != CKH_OP_RENAME &&
                                     (o->kind != CKH_OP_OPEN || (o->flags & CKH_O_CREAT)));
            if (!want || o->phase != CKH__PH_SAVE || strcmp(o->path, dp) == 0 ||
                (o->path2 && strcmp(o->path2, dp) == 0) || !entry_kept(o, c))
                continue;
            ckh__explore_op_desc(o, od, sizeof(od));
            snprintf(step, sn, "op #%zu %s persisted before the %s of %s was durable "
                     "(%s %s %s; fsync the data and its directory before updating what "
                     "points to it)", i, od, what, dp, ckh_op_name((enum ckh_op_kind)p->kind),
                     dp, choice_name(c->ch[di]));
            return CKH_VULN_POINTER_BEFORE_DATA;
        }
    }
    return -1;
}

/* c, d. a dropped or torn op that creates or fills a file. */
static int rule_lost_data(const struct ckh__xcrash *c, char *step, size_t sn)
{
    for (size_t di = 0; di < c->n; di++) {
        bool data = is_data(c->p[di].kind);
        if ((!data && c->p[di].kind != CKH_OP_OPEN) || c->ch[di] == CKH_CRASH_APPLY)
            continue;
        int kind = data ? rule_rename_before_data(c, di, step, sn) : -1;
        if (kind < 0)
            kind = rule_pointer_before_pending(c, di, step, sn);
        if (kind >= 0)
            return kind;
    }
    return -1;
}

/* e. the refused epoch's file was written under its final name. */
static int rule_final_name(struct ckh__xctx *x, const struct ckh__xcrash *c, int kind,
                           int64_t epoch, char *step, size_t sn)
{
    char final[CKH_PATH_MAX + 1], od[400];
    if (epoch < 0 || !x->ops->db_name ||
        (kind != CKH_VULN_LISTED_REFUSED && kind != CKH_VULN_CORRUPT_RETURNED) ||
        ckh__explore_final_name(x, c->node ? c->node : "rank0", epoch, final, sizeof(final)) != 0)
        return -1;
    for (size_t i = 0; i < c->k; i++) {
        const struct ckh__xop *o = &c->t[i];
        if (o->phase != CKH__PH_SAVE || !fills(o) || strcmp(o->path, final) != 0)
            continue;
        ckh__explore_op_desc(o, od, sizeof(od));
        snprintf(step, sn, "op #%zu %s writes the checkpoint directly under %s, the "
                 "committed name of epoch %" PRId64 " (write a temporary, fsync it, "
                 "rename it over, fsync the directory)", i, od, final, epoch);
        return CKH_VULN_OVERWRITE_IN_PLACE;
    }
    return -1;
}

/* g. a rename persisted before the save had written the data it names. */
static int rule_pointer_before_write(const struct ckh__xcrash *c, int kind, char *step, size_t sn)
{
    char od[400], wd[400];
    if (kind == CKH_VULN_NOT_DURABLE || kind == CKH_VULN_NEXT_SAVE_FAILS)
        return -1;
    for (size_t i = 0; i < c->k; i++) {
        const struct ckh__xop *o = &c->t[i];
        if (o->kind != CKH_OP_RENAME || o->phase != CKH__PH_SAVE || !entry_kept(o, c))
            continue;
        for (size_t j = c->k; j < c->total; j++) {
            const struct ckh__xop *w = &c->t[j];
            if (w->phase != CKH__PH_SAVE || !fills(w))
                continue;
            ckh__explore_op_desc(o, od, sizeof(od));
            ckh__explore_op_desc(w, wd, sizeof(wd));
            snprintf(step, sn, "op #%zu %s persisted before the save wrote the data it "
                     "points to (op #%zu %s comes later; write and fsync the data, then "
                     "update what points to it)", i, od, j, wd);
            return CKH_VULN_POINTER_BEFORE_DATA;
        }
    }
    return -1;
}

int ckh__explore_diagnose(struct ckh__xctx *x, const struct ckh__xcrash *c, int kind,
                          int64_t epoch, char *step, size_t sn)
{
    int d;
    if ((d = rule_in_place(x, c, step, sn)) >= 0 ||
        (d = rule_retention(x, c, kind, step, sn)) >= 0 ||
        (d = rule_dir_fsync(c, kind, step, sn)) >= 0 || (d = rule_lost_data(c, step, sn)) >= 0 ||
        (d = rule_final_name(x, c, kind, epoch, step, sn)) >= 0 ||
        (d = rule_pointer_before_write(c, kind, step, sn)) >= 0)
        return d;
    if (c->k > 0) {
        char od[400];
        ckh__explore_op_desc(&c->t[c->k - 1], od, sizeof(od));
        snprintf(step, sn, "crash after op #%zu %s (%s phase)", c->k - 1, od,
                 ckh__explore_phase_names[c->t[c->k - 1].phase]);
    }
    return kind;
}

void ckh__explore_state_desc(const struct ckh__xcrash *c, char *buf, size_t bn)
{
    char od[400];
    size_t w = 0;
    if (c->k > 0) {
        ckh__explore_op_desc(&c->t[c->k - 1], od, sizeof(od));
        w += (size_t)snprintf(buf, bn, "power loss after %zu of %zu ops (last: %s; %s); ",
                              c->k, c->total, od,
                              c->context ? c->context
                                         : c->returned ? "save had returned 0" : "save not returned");
    } else {
        w += (size_t)snprintf(buf, bn, "power loss before the first op; ");
    }
    if (c->n == 0 && w < bn)
        w += (size_t)snprintf(buf + w, bn - w, "nothing pending");
    for (size_t i = 0; i < c->n && w < bn; i++) {
        const struct ckh__xpend *p = &c->p[i];
        if (i == 10) {
            snprintf(buf + w, bn - w, "... (%zu pending in all)", c->n);
            break;
        }
        w += (size_t)snprintf(buf + w, bn - w, "%s%s %s%s%s: %s", i ? ", " : "pending: ",
                              ckh_op_name((enum ckh_op_kind)p->kind), p->path,
                              p->path2 ? " -> " : "", p->path2 ? p->path2 : "",
                              choice_name(c->ch[i]));
    }
}
