/* sigterm: the node's processes get SIGTERM, as a scheduler preempts a job
 * (Slurm, Kubernetes, a spot instance's notice), and SIGKILL when they are
 * still running `grace` later. A program that handles SIGTERM may save a
 * checkpoint and exit; ckh then restarts the job like after any failure
 * (a node that ends its job within the grace, with its final record,
 * completed).
 *
 * Command jobs only (harness/exec/command_fault.c carries it out, as a
 * PREEMPT on the node's processes). A simulated node is a C function with
 * no signal handler: a SIGTERM to it could only be a kill some virtual
 * time later, which `delay` and `kill` already express exactly, so the
 * simulator and the real platform refuse it by name (`modes`,
 * ckh_fault_check_mode) rather than pretend. */
#include <inttypes.h>

#include "ckh/err.h"
#include "model/fault.h"
#include "model/reader.h"

static const char *const keys[] = {"grace"};

/* The grace when the scenario gives none: Kubernetes' and Slurm's
 * KillWait default. */
#define SIGTERM_GRACE_DEFAULT_NS (30ull * 1000000000ull)

static int sigterm_parse(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_fault *f)
{
    yaml_node_t *v = ckh__scn_get(p, n, "grace");
    f->act.u.sigterm.grace_ns = SIGTERM_GRACE_DEFAULT_NS;
    return v ? ckh__scn_get_duration(p, v, "grace", &f->act.u.sigterm.grace_ns) : 0;
}

static int sigterm_write(FILE *out, const struct ckh_scn_action *a)
{
    fprintf(out, "    grace: %" PRIu64 "ns\n", a->u.sigterm.grace_ns);
    return 0;
}

static enum ckh_fault_process sigterm_on_process(const struct ckh_scn_action *a, uint64_t *grace_ns)
{
    *grace_ns = a->u.sigterm.grace_ns;
    return CKH_FAULT_PROCESS_PREEMPT;
}

const struct ckh_fault_ops ckh__fault_sigterm = {
    .name = "sigterm",
    .kind = CKH_SCN_ACT_SIGTERM,
    .summary = "preempt a node of a command job: SIGTERM to its processes, SIGKILL after a grace period",
    .keys_doc = "`grace:` duration before SIGKILL (default `30s`)",
    .meaning = "command jobs: the node's processes get SIGTERM, then SIGKILL if still running after "
               "`grace` (a scheduler's preemption)",
    .keys = keys,
    .nkeys = sizeof keys / sizeof keys[0],
    .modes = CKH_FAULT_MODE_COMMAND,
    .modes_note = "a workload job's nodes have no signal handler, so a SIGTERM to them is a kill (use "
                  "'do: kill', after a 'delay' for a grace period)",
    .acts_on_process = sigterm_on_process,
    .parse = sigterm_parse,
    .write = sigterm_write,
};
