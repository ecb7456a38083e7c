/* The one fault matcher (ckh/fault_rule.h has the specification, M1 to
 * M7): which operations a rule selects, when it fires, and how much of a
 * write it keeps. The simulator, the real platform and command jobs call
 * it; none of them keeps a copy. */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/fault_rule.h"

static const char *const action_names[] = {
    "none", "errno", "kill_before", "kill_after", "kill_mid",
    "crash_before", "power_loss", "delay", "fsync_lost", "call", "mismatch",
    "short_write",
};
_Static_assert(sizeof action_names / sizeof action_names[0] == CKH_FAULT__COUNT, "one name per action");

const char *ckh_fault_action_name(enum ckh_fault_kind k)
{
    return (unsigned)k < CKH_FAULT__COUNT ? action_names[k] : "?";
}

void ckh_fault_rule_init(struct ckh_fault_rule *r)
{
    if (r == NULL)
        return;
    memset(r, 0, sizeof *r);
    r->node = -1;
    r->kind = -1;
    r->epoch = -1;
    r->step = -1;
    r->nth = 1;
}

int ckh_fault_rule_check(const struct ckh_fault_rule *r, char *msg, size_t msglen)
{
    if (r == NULL)
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: NULL");
    const struct ckh_fault_action *a = &r->action;
    if ((int)a->kind <= CKH_FAULT_NONE || a->kind >= CKH_FAULT__COUNT)
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: bad action kind %d", (int)a->kind);
    if (a->kind == CKH_FAULT_CALL && a->call == NULL)
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: CALL needs a callback");
    if (a->kind == CKH_FAULT_ERRNO && a->err <= 0)
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: ERRNO needs a positive errno, got %d", a->err);
    if (r->kind < -1 || r->kind >= CKH_OP__COUNT)
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: bad op kind %d", r->kind);
    if (r->node < -1)
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: bad node %d", r->node);
    if (!(r->probability >= 0 && r->probability <= 1))
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: probability must be in [0, 1]");
    if (!(r->keep_fraction >= 0 && r->keep_fraction <= 1))
        return ckh_errf(msg, msglen, CKH_EINVAL, "fault rule: keep_fraction must be in [0, 1]");
    return 0;
}

void ckh_fault_state_init(struct ckh_fault_state *s, uint64_t seed, size_t index)
{
    CKH_ASSERT(s != NULL);
    char name[48];
    memset(s, 0, sizeof *s);
    snprintf(name, sizeof name, "fault/%zu", index);
    ckh_rng_seed(&s->rng, ckh_seed_derive(seed, name));
    s->seeded = 1;
}

/* M2 and M3: whether r's action can apply to an op of kind k. */
static bool action_fits(const struct ckh_fault_rule *r, enum ckh_op_kind k)
{
    if (k == CKH_OP_ALLOC)
        return r->kind == CKH_OP_ALLOC; /* any action fails an allocation */
    switch (r->action.kind) {
    case CKH_FAULT_MISMATCH:
        return k == CKH_OP_BARRIER || k == CKH_OP_BROADCAST || k == CKH_OP_ALLREDUCE ||
               k == CKH_OP_ALLGATHER;
    case CKH_FAULT_FSYNC_LOST:
        return k == CKH_OP_FSYNC || k == CKH_OP_FDATASYNC;
    case CKH_FAULT_SHORT_WRITE:
        return k == CKH_OP_WRITE || k == CKH_OP_PWRITE;
    default:
        return true;
    }
}

bool ckh_fault_rule_selects(const struct ckh_fault_rule *r, const struct ckh_op *op, uint64_t now_ns)
{
    CKH_ASSERT(r != NULL && op != NULL);
    CKH_ASSERT(r->kind >= -1 && r->kind < CKH_OP__COUNT && (unsigned)op->kind < CKH_OP__COUNT);
    if (!action_fits(r, op->kind))
        return false;
    if (r->node >= 0 && r->node != op->node)
        return false;
    if (r->kind >= 0 && r->kind != (int)op->kind)
        return false;
    if (r->path_glob != NULL && (op->path == NULL || fnmatch(r->path_glob, op->path, 0) != 0))
        return false;
    if (r->phase != NULL && (op->phase == NULL || strcmp(r->phase, op->phase) != 0))
        return false;
    if (r->epoch >= 0 && r->epoch != op->epoch)
        return false;
    if (r->step >= 0 && r->step != op->step)
        return false;
    return r->at_time_ns == 0 || now_ns >= r->at_time_ns;
}

bool ckh_fault_rule_fires(const struct ckh_fault_rule *r, struct ckh_fault_state *s, bool taken)
{
    CKH_ASSERT(r != NULL && s != NULL && !s->spent);
    CKH_ASSERT(r->probability == 0 || s->seeded);
    s->matches++;
    bool due;
    if (r->probability > 0) {
        due = ckh_rng_unit(&s->rng) < r->probability;
    } else {
        uint64_t nth = r->nth == 0 ? 1 : r->nth;
        due = s->deferred || s->matches == nth || (r->repeat && s->matches > nth);
    }
    if (!due)
        return false;
    if (taken) {
        if (r->probability == 0 && !r->repeat)
            s->deferred = 1;
        return false;
    }
    s->deferred = 0;
    if (!r->repeat)
        s->spent = 1;
    s->fired++;
    return true;
}

bool ckh_fault_rule_match(const struct ckh_fault_rule *r, struct ckh_fault_state *s,
                          const struct ckh_op *op, uint64_t now_ns, bool taken)
{
    CKH_ASSERT(s != NULL);
    return !s->spent && ckh_fault_rule_selects(r, op, now_ns) && ckh_fault_rule_fires(r, s, taken);
}

struct ckh_fault_action ckh_fault_rule_action(const struct ckh_fault_rule *r, uint64_t len)
{
    CKH_ASSERT(r != NULL && r->keep_fraction >= 0 && r->keep_fraction <= 1);
    struct ckh_fault_action act = r->action;
    bool keeps = act.kind == CKH_FAULT_KILL_MID || act.kind == CKH_FAULT_SHORT_WRITE;
    if (keeps && act.keep_bytes == 0 && r->keep_fraction > 0)
        act.keep_bytes = (uint64_t)((double)len * r->keep_fraction);
    /* A short write by a fraction was not asked for 0 bytes. */
    if (act.kind == CKH_FAULT_SHORT_WRITE && act.keep_bytes == 0 && r->keep_fraction > 0 && len > 0)
        act.keep_bytes = 1;
    return act;
}

void ckh_fault_action_cap(struct ckh_fault_action *act, uint64_t len)
{
    CKH_ASSERT(act != NULL);
    if ((act->kind == CKH_FAULT_KILL_MID || act->kind == CKH_FAULT_SHORT_WRITE) && act->keep_bytes > len)
        act->keep_bytes = len;
}
