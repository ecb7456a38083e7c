/* The crash-state explorer and the fault catalogue for checkpoint backends.
 *
 * SPECIFICATION (tests/test_explore.c and docs/BACKENDS.md cite the rules)
 *
 * E1. Scenarios. One node "rank0" saves into /ckpt of a simulated disk
 *     (crash model and sector size from the config). Blobs are stored
 *     (not described) i64/u8 tensors whose bytes derive from the seed;
 *     v1, v2, v3 are three different workspaces.
 *     - new-epoch: setup saves epoch 1 = v1 and makes the disk durable;
 *       the traced action saves epoch 2 = v2, then retention removes
 *       epoch 1 (when the backend has remove).
 *     - replace: setup as above; the traced action saves epoch 1 = v2.
 *     - two-ranks: "rank0" and "rank1" save epoch 2 concurrently into the
 *       same directory, interleaved op by op (E6).
 *     - retention: setup saves epochs 1..P (P = retention_epochs, 0: 3;
 *       epoch e = its own workspace), each made durable; the traced action
 *       saves epoch P+1 = v2, then, when the backend has remove, removes
 *       the oldest epoch listed after setup (checked by E8).
 *     Setup runs against the disk directly; the action runs through a
 *     recording shim (struct ckh_fs) that numbers every operation.
 *
 * E2. Crash points. For each prefix length k of the action's trace (k = 0
 *     .. N, skipping k whose last op changes nothing: reads, stat, close,
 *     open without create/truncate), the disk as it was after ops [0, k).
 *     The action runs once; the shim snapshots the disk (ckh_simfs_clone)
 *     before each op that follows a crash point, and after the last op.
 *     That equals replaying the action on a fresh disk with op k and
 *     every later one refused, as ops refused after a kill change
 *     nothing, at the cost of one run instead of N. A second full run
 *     must issue the same op kinds as the recorded trace (else
 *     NONDETERMINISTIC).
 *
 * E3. Crash states. The disk's n pending ops are resolved by a power loss
 *     (ckh_simfs_crash, node -1, on a fresh clone of the crash point's
 *     snapshot for each vector) with each of these choice vectors:
 *     all applied (a process kill: the page cache survives); all dropped;
 *     each single op dropped while every other persists (reordering
 *     within a sync window; directory ops reorder only as the model lets
 *     them, the disk enforces dependencies); each prefix of the pending
 *     ops applied and the rest dropped; each write torn at its sector
 *     boundary with zeros and with garbage, the others applied. A state
 *     is identified by the digest of its durable tree; each distinct
 *     state is checked once. Enumeration goes by k ascending, then in the
 *     order above, so the first state that shows a finding is the
 *     smallest one.
 *
 * E4. Checks on a state (recovery is: open, list_epochs, load the latest):
 *     the latest listed epoch is one that was committed (else
 *     WRONG_EPOCH); something is listed (NO_CHECKPOINT); it loads
 *     (LISTED_REFUSED); the data equals the version saved under that
 *     epoch bit-exact by ckh_ws_digest (CORRUPT_RETURNED); once the save
 *     had returned 0 it is the new version (NOT_DURABLE); a next save of
 *     epoch 3 = v3 succeeds and loads back (NEXT_SAVE_FAILS).
 *
 * E5. Diagnosis: the symptom is refined into the protocol step that
 *     allowed it, first rule that matches:
 *     a. a save op wrote, truncated or O_TRUNC-opened a file that held a
 *        committed checkpoint before the save: OVERWRITE_IN_PLACE;
 *     b. nothing survives and a save op unlinked a file that existed
 *        before the save: RETENTION_BEFORE_COMMIT;
 *     c. a write/truncate was dropped or torn while a rename of that same
 *        file persisted: RENAME_BEFORE_DATA (no fsync before the rename);
 *     d. a write/truncate was dropped or torn while a later entry op on
 *        another name (rename preferred) persisted: POINTER_BEFORE_DATA;
 *     e. the dropped/torn data belongs to the file the refused epoch is
 *        stored in (db_name), created by the save: OVERWRITE_IN_PLACE
 *        (written under its final name);
 *     f. NOT_DURABLE with a dropped entry op: NO_DIR_FSYNC;
 *     g. a rename of the save persisted while an op that creates or fills
 *        a file of the save had not even been issued (the pointer moved
 *        to data not yet written): POINTER_BEFORE_DATA;
 *     otherwise the symptom stays. One finding per (scenario, diagnosis).
 *     Rule b also applies to RECOVERY_FAILS (a pointer left naming a
 *     folder whose commit record retention already deleted) and to
 *     TOO_FEW_CHECKPOINTS (E8).
 *
 * E6. Two ranks: schedules "rank0 runs s ops, then rank1 to its end, then
 *     rank0" for every s, and strict alternation. No crash: both saves
 *     must return 0 and each rank must load its own data back. A failure
 *     where both ranks created the same path is SHARED_TEMP_NAME.
 *     Ranks run as nodes of a simulator whose schedule hook
 *     (ckh_sim_set_sched_hook) picks the rank that issues the next op; the
 *     shim's gate is a scheduling point (ckh_sim_yield) before each op.
 *
 * E7. Fault catalogue (ckh_explore_faults), on new-epoch: ERRNO: each op
 *     of the action that changes the disk, or syncs, or opens, fails once
 *     with -err. FSYNC: each fsync/fdatasync loses the file's dirty data
 *     and fails with -EIO (simfs rule S6). Then: a save that returned 0
 *     must survive a power loss that drops every pending op
 *     (ERROR_SWALLOWED); a save that failed must leave a loadable epoch 1
 *     = v1 or epoch 2 = v2 (FAULT_DAMAGE) and a next save must succeed.
 *     AT_REST: after setup, every file under /ckpt gets single bit flips
 *     (first, quarter, middle, three quarters, last byte) and truncations
 *     (0, half, size-1), each on a fresh disk; loading epoch 1 must fail
 *     or return v1 exactly (AT_REST_ACCEPTED). LEAK: open, save, list,
 *     load, remove, close with a counting allocator must free everything.
 *     SHORT_WRITE: each write/pwrite of the save (of 2 bytes or more), one
 *     per run, accepts only the first half of its bytes and returns that
 *     count, as CKH_FAULT_SHORT_WRITE does in the simulator (the shim
 *     passes the prefix to the disk). The backend must write the rest or
 *     fail the save: a save that returned 0 must list epoch 2 and load v2;
 *     whatever the save returned, the latest listed epoch must load
 *     bit-exact (SHORT_WRITE); then as ERRNO.
 *
 * E8. Retention (the retention scenario; its checks replace E4's). The
 *     epochs list_epochs reports after setup, C0, are what the backend
 *     promises to keep: with its own keep-last-N retention inside save
 *     that is min(N, P) epochs, without (retention by remove, or none) all
 *     P. On every crash state, in this order: something is listed
 *     (NO_CHECKPOINT); every listed epoch is in C0 or is P+1 (WRONG_EPOCH);
 *     every listed epoch loads, newest first (LISTED_REFUSED), bit-exact
 *     to the version saved under it (CORRUPT_RETURNED); at least |C0|
 *     epochs are listed (TOO_FEW_CHECKPOINTS: retention must delete only
 *     after the new checkpoint is committed, so the count goes |C0|,
 *     |C0|+1, back to |C0|, and never below); once the save had returned
 *     0 the latest is P+1 (NOT_DURABLE); a next save of epoch P+2 = v3
 *     succeeds and loads back (NEXT_SAVE_FAILS). Diagnosis as E5. The
 *     rule holds for backends without retention in save (the count only
 *     grows until the harness's remove) and for keep-last-N ones alike.
 *
 * E9. Node-local ranks (explore_nodes.c has the details): N ranks (2,
 *     then 4, or the config's), each with a disk of its own holding its
 *     epoch 1, save epoch 2 concurrently under two schedules (round robin
 *     op by op; rank by rank), then once every save returned 0 each
 *     removes its epoch 1. Every op of the job is one crash point (as
 *     E2); all nodes lose power at once, each disk's pending ops all
 *     applied or all dropped (every disk alike, and each disk against
 *     the others). A restart must find on every node a committed epoch
 *     that loads bit-exact (E4's kinds, NOT_DURABLE per rank whose save
 *     had returned), an epoch committed on every node
 *     (NO_COMMON_EPOCH), and a working next save. Node-level findings are
 *     diagnosed by E5 on that rank's ops.
 *
 * E10. Contract (explore_contract.c; no crash, each check on a fresh
 *     disk): load-names: epoch 1 = v1 loaded with names {param.01, step}
 *     (exactly those, *loaded 2), {param.01, no.such.blob} with
 *     CKH_LOAD_ALLOW_MISSING (param.01 only, *loaded 1) and without
 *     (CKH_ENOTFOUND, the workspace untouched), NULL (every blob)
 *     (LOAD_CONTRACT, PARTIAL_LOAD). all-or-nothing: into a workspace
 *     holding v3's blobs and one more, a load with a missing name, of an
 *     epoch never saved, and of every committed file truncated (0, half,
 *     size-1) or with a bit flipped (middle, last byte) either succeeds
 *     or leaves the workspace exactly as it was (PARTIAL_LOAD). epochs:
 *     epochs 2, 9, 10, 11, 100 saved in this order list in ascending
 *     numeric order ending with 100 (EPOCH_ORDER), each loading its own
 *     data; epoch 1 neither exists nor loads (WRONG_EPOCH: "1" prefixes
 *     10, 100, 11); after remove(10), 10 is gone and the rest intact.
 *
 * Every scenario first checks that the traced save issued at least one op
 * through cfg->fs (FS_BYPASSED: a backend doing its I/O elsewhere would
 * pass every crash state while nothing of it was observed).
 *
 * Replay: the states of one run are numbered K = 1, 2, ... in the order
 * they are generated (crash states, injected faults, schedules, contract
 * checks); every finding records the K of the state that first showed it
 * (ckh_vuln.state_index) and a run with only_state = K generates the same
 * sequence but checks state K alone, reproducing that finding.
 *
 * The explorer's files (harness/search/explore_internal.h has the map):
 * this one holds the results; explore_entry.c the public API (the
 * entry points, which call the others); explore_record.c the
 * shim, explore_run.c the scenarios, explore_check.c E4/E8,
 * explore_diagnose.c E5, explore_states.c E2/E3, explore_schedules.c E6,
 * explore_catalogue.c E7, explore_nodes.c E9, explore_contract.c E10.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/workspace.h"
#include "search/explore_internal.h"

const char *const ckh__explore_phase_names[4] = {"open", "save", "retention", "close"};
const char *const ckh__explore_scen_names[CKH__SC__COUNT] = {
    "new-epoch", "replace", "two-ranks", "retention", "node-local", "load-names",
    "all-or-nothing", "epochs"};

/* ----------------------------------------------------------------- results */

static const char *const vuln_names[] = {
#define CKH__VULN_NAME(e, s, d) s,
    CKH_VULN_MAP(CKH__VULN_NAME)
#undef CKH__VULN_NAME
};
const char *ckh_vuln_name(enum ckh_vuln_kind k)
{
    return (unsigned)k < CKH_VULN__COUNT ? vuln_names[k] : "?";
}

void ckh_explore_result_free(struct ckh_explore_result *r)
{
    if (!r)
        return;
    free(r->vulns);
    memset(r, 0, sizeof(*r));
}

bool ckh_explore_has(const struct ckh_explore_result *r, enum ckh_vuln_kind k)
{
    for (size_t i = 0; r && i < r->nvulns; i++)
        if (r->vulns[i].kind == k)
            return true;
    return false;
}

int ckh__explore_vuln_add(struct ckh_explore_result *r, enum ckh_vuln_kind kind, const char *scenario,
                    const char *symptom, const char *state, const char *step)
{
    for (size_t i = 0; i < r->nvulns; i++)
        if (r->vulns[i].kind == kind && strcmp(r->vulns[i].scenario, scenario) == 0)
            return 0;
    struct ckh_vuln *v = realloc(r->vulns, (r->nvulns + 1) * sizeof(*v));
    if (!v)
        return CKH_ENOMEM;
    r->vulns = v;
    v = &r->vulns[r->nvulns++];
    memset(v, 0, sizeof(*v));
    v->kind = kind;
    snprintf(v->scenario, sizeof(v->scenario), "%s", scenario);
    snprintf(v->symptom, sizeof(v->symptom), "%s", symptom ? symptom : "");
    snprintf(v->state, sizeof(v->state), "%s", state ? state : "");
    snprintf(v->step, sizeof(v->step), "%s", step ? step : "");
    return 0;
}

bool ckh__explore_bounded(const struct ckh__xctx *x)
{
    return x->cfg->max_states && x->res->stats.states >= x->cfg->max_states;
}

bool ckh__explore_next_state(struct ckh__xctx *x)
{
    x->k++;
    x->res->stats.states++;
    /* K names the same state in every run of one config (only_state) */
    CKH_ASSERT(x->k == x->res->stats.states && x->res->stats.states_checked < x->res->stats.states);
    return !x->cfg->only_state || x->k == x->cfg->only_state;
}

int ckh__explore_report(struct ckh__xctx *x, enum ckh_vuln_kind kind, const char *scenario,
                        const char *symptom, const char *state, const char *step, uint64_t k)
{
    size_t before = x->res->nvulns;
    CKH_ASSERT((unsigned)kind < CKH_VULN__COUNT && k <= x->k);
    int rc = ckh__explore_vuln_add(x->res, kind, scenario, symptom, state, step);
    if (rc == 0 && x->res->nvulns > before)
        x->res->vulns[before].state_index = k;
    return rc;
}

int ckh__explore_bypassed(struct ckh__xctx *x, const char *scenario, const struct ckh__xop *t,
                          size_t n, int rank, const char *node)
{
    char sym[320];
    for (size_t i = 0; i < n; i++)
        if (t[i].phase == CKH__PH_SAVE && (rank < 0 || t[i].rank == rank))
            return 0;
    snprintf(sym, sizeof(sym), "%s's save returned without a single operation through "
             "cfg->fs (%zu ops in all): nothing of it can be observed, faulted or crashed",
             node, n);
    int rc = ckh__explore_report(x, CKH_VULN_FS_BYPASSED, scenario, sym, "no crash",
                                 "do every read and write through cfg->fs (never open(2), "
                                 "fopen or process memory)", 0);
    return rc ? rc : 1;
}
