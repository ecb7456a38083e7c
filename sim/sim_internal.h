/* The contract between the scheduler (sim/sched.c) and the simulated
 * devices (sim/simfs.c, sim/coll.c, the clock and node ops).
 *
 * Every operation a node performs on a simulated device goes through
 * ckh__sim_enter() before it takes effect and ckh__sim_leave() after. The
 * scheduler uses them to consult the fault rules, charge virtual time, let
 * other nodes run (the deterministic interleaving), record the trace and
 * kill the node at the requested point. A device used outside a simulation
 * (sim == NULL, e.g. in unit tests or for the harness inspecting a disk at
 * rest) skips both calls.
 */
#ifndef CKH_SIM_INTERNAL_H
#define CKH_SIM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ckh/op.h"
#include "ckh/sim.h"

/* Called by a device at the start of op on behalf of the running node
 * (op->node). Charges latency_ns of virtual time, may switch to other
 * nodes, and fills *act with the fault to apply (CKH_FAULT_NONE usually).
 * Does not return when the fault kills the node before the op
 * (CKH_FAULT_KILL_BEFORE, CKH_FAULT_CRASH_BEFORE, CKH_FAULT_POWER_LOSS).
 * For CKH_FAULT_ERRNO the device returns -act->err without performing the
 * op (and still calls ckh__sim_leave with that result). For
 * CKH_FAULT_KILL_MID the device performs the first act->keep_bytes bytes of
 * a write and then calls ckh__sim_die(). For CKH_FAULT_SHORT_WRITE (write
 * and pwrite only) the device performs the first act->keep_bytes bytes of
 * the write and returns that count. */
void ckh__sim_enter(struct ckh_sim *sim, const struct ckh_op *op, uint64_t latency_ns,
                    struct ckh_fault_action *act);

/* Called by a device after op with its result (>= 0 or a negative code).
 * Records the trace line; does not return when a CKH_FAULT_KILL_AFTER
 * fault was armed for this op. */
void ckh__sim_leave(struct ckh_sim *sim, const struct ckh_op *op, int64_t result);

/* Kills the running node now (no cleanup runs); does not return. When
 * machine is true the node's machine crashes too: its unsynced writes are
 * subjected to the crash model. */
_Noreturn void ckh__sim_die(struct ckh_sim *sim, bool machine);

/* Blocks the running node until ckh__sim_wake(sim, node) is called or the
 * absolute virtual deadline passes (UINT64_MAX: none). Returns 0 when woken,
 * CKH_ETIMEOUT at the deadline. `what` describes the pending operation for
 * deadlock reports ("allreduce #3 count=4 sum"); it must stay valid while
 * blocked. */
int ckh__sim_block(struct ckh_sim *sim, const char *what, uint64_t deadline_ns);

/* Makes a blocked node runnable at the current virtual time. */
void ckh__sim_wake(struct ckh_sim *sim, int node);

/* The accounting allocator of node id's current incarnation (memory from
 * it is freed when the node dies), or NULL outside a running node. */
struct ckh_alloc *ckh__sim_node_alloc(struct ckh_sim *sim, int node);

#endif
