/* Faults: one descriptor per fault kind, one file per descriptor.
 *
 * harness/model/faults/<name>.c defines `const struct ckh_fault_ops
 * ckh__fault_<ident>` and faults/list.h registers it (the enum value, the
 * registry's order). A descriptor says everything ckh knows about its
 * fault: its name and keys, whether it changes data at rest, how its keys
 * parse into struct ckh_scn_action and write back to YAML, how it is armed
 * on a run (a simulator fault rule), how it is applied to the disks at
 * rest, how the fuzzer draws one, and how `ckh list faults` and the docs
 * describe it. Adding a fault = its file + its line in faults/list.h + its
 * test + its docs line (docs/ARCHITECTURE.md, "Faults as descriptors").
 *
 * Modes: a descriptor says which modes of running can deliver it (the
 * simulator, command jobs, the real platform), whether it acts on the
 * node's processes as a whole, whether it needs simfs's disk model and
 * whether it damages data; ckh_fault_check_mode refuses what a mode
 * cannot deliver, in one wording, before any run.
 *
 * At rest: a descriptor with `apply` changes data at rest. Without an op
 * trigger (struct ckh_scn_fault.at_rest) it is applied to the disks before
 * run `on.run` starts; with one it runs as a CALL rule at the trigger.
 * Every other descriptor is armed as one simulator rule (`arm`), or, with
 * neither `arm` nor `apply`, is applied by the workload's adapter
 * (gpu-oom).
 */
#ifndef CKH_FAULTS_FAULT_H
#define CKH_FAULTS_FAULT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ckh/sim.h"
#include "ckh/objstore.h"
#include "ckh/simfs.h"
#include "model/scenario.h"

struct ckh__scn_reader; /* scenario/reader.h */
struct yaml_node_s;     /* libyaml's yaml_node_t */
struct ckh_rng;

/* What a fault needs from the workload (adapters refuse what they lack)
 * and from the disks. */
#define CKH_FAULT_NEEDS_DEVICES 1u     /* emulated GPUs */
#define CKH_FAULT_NEEDS_LATEST 2u      /* a `latest` checkpoint pointer */
#define CKH_FAULT_NEEDS_COLLECTIVES 4u /* ranks in a collective group */
#define CKH_FAULT_NEEDS_DISK_MODEL 8u  /* simfs and its crash model (every at-rest fault too):
                                          the real platform then serves its disks over ckhfs */

/* The modes of running a job; each delivers faults its own way. */
#define CKH_FAULT_MODE_SIM 1u     /* the simulator (a workload job) */
#define CKH_FAULT_MODE_COMMAND 2u /* a command job: real programs over ckhfs (run/command*.c) */
#define CKH_FAULT_MODE_REAL 4u    /* --platform real: rank programs under mpirun */
#define CKH_FAULT_MODES_ALL (CKH_FAULT_MODE_SIM | CKH_FAULT_MODE_COMMAND | CKH_FAULT_MODE_REAL)

/* How a fault acts on a node's processes as a whole, with no operation
 * needed (so a command job may fire it on the program's progress alone). */
enum ckh_fault_process {
    CKH_FAULT_PROCESS_NONE = 0, /* it acts on an operation, or on data */
    CKH_FAULT_PROCESS_KILL,     /* the processes die (a kill before, a crash, a power loss) */
    CKH_FAULT_PROCESS_PREEMPT,  /* SIGTERM, then SIGKILL after a grace (sigterm) */
};

/* The disks of a job, for applying faults at rest (built by the runner). */
struct ckh_fault_env {
    const struct ckh_scenario *sc;     /* the scenario */
    int nnodes;                        /* nodes of the job */
    struct ckh_simfs *const *disks;    /* [ndisks * nnodes]: disk d of node i (shared: same) */
    int (*latest_link)(void *inst, char *buf, size_t n); /* the adapter's (NULL: none) */
    void *inst;                        /* the adapter instance, for latest_link */
    uint64_t *fired;                   /* count of the fault being applied (NULL: not counted) */
    char *err;                         /* where a failure's message goes */
    size_t errlen;                     /* its size */
    struct ckh_objstore *store;        /* appended: job.object_store's store (NULL: none); the
                                          caller holds its endpoint's lock while applying */
};

/* A fault the fuzzer is drawing (harness/search/fuzz.c owns the text). */
struct ckh_fault_gen {
    struct ckh_rng *rng;  /* every choice, in a fixed order */
    int nodes;            /* nodes (or ranks) of the job */
    int epochs;           /* epochs of the job */
    bool ddp;             /* a training job with collectives and a saver */
    bool damaging;        /* the "damaging" tier (harness/search/fuzz.c) */
    uint32_t run;         /* the run drawn for this fault */
    void (*vprintf)(void *out, const char *fmt, va_list ap); /* appends text */
    void *out;            /* passed to vprintf */
};

struct ckh_fault_ops {
    const char *name;               /* as scenarios write it after `do:` */
    enum ckh_scn_action_kind kind;  /* its value (faults/list.h order) */
    const char *summary;            /* one line for `ckh list faults` */
    const char *keys_doc;           /* its keys (docs/SCENARIOS.md, "Actions") */
    const char *meaning;            /* what it does (docs/SCENARIOS.md, "Actions") */
    const char *const *keys;        /* keys besides on/do, in the order hints list them */
    size_t nkeys;                   /* number of keys */
    unsigned needs;                 /* CKH_FAULT_NEEDS_* */
    unsigned modes;                 /* CKH_FAULT_MODE_*: the modes that can deliver it;
                                       the others refuse it before any run */
    const char *modes_note;         /* why the other modes cannot, and what to use there
                                       (ends the refusal; NULL: nothing to add) */
    bool touches_data;              /* may legitimately fail a save or damage data */
    bool fuzz_recoverable;          /* drawn in the fuzzer's recoverable tier too */
    /* How the fault as parsed (a) acts on the node's processes; *grace_ns
     * is set for PREEMPT. NULL: CKH_FAULT_PROCESS_NONE. */
    enum ckh_fault_process (*acts_on_process)(const struct ckh_scn_action *a, uint64_t *grace_ns);
    /* Reads the fault's keys from its mapping n into f->act (f->on is
     * parsed already). NULL: no keys. 0 or CKH_EINVAL/CKH_ENOMEM with the
     * error located by the reader. */
    int (*parse)(struct ckh__scn_reader *p, const struct yaml_node_s *n, struct ckh_scn_fault *f);
    /* Writes the fault's key lines ("    key: value\n"). NULL: no keys.
     * 0, or CKH_EINVAL for a value the grammar cannot express. */
    int (*write)(FILE *out, const struct ckh_scn_action *a);
    /* Fills r->action (and a default r->kind) of the rule armed for f;
     * the trigger's selectors are set already. NULL with apply NULL: the
     * adapter applies the fault, nothing is armed. */
    void (*arm)(const struct ckh_scn_fault *f, struct ckh_fault_rule *r);
    /* Applies the fault to the disks now (node -1: every node's). NULL:
     * not an at-rest fault. 0 or a negative code with env->err set. */
    int (*apply)(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node);
    /* Appends one random instance (its "  - do:" entry) to g's text.
     * NULL: never fuzzed. */
    void (*generate)(struct ckh_fault_gen *g);
};

/* ---- the registry (registry.c) ---- */

/* The i-th descriptor in faults/list.h order, NULL past the end. */
const struct ckh_fault_ops *ckh_fault_at(size_t i);
/* The descriptor of kind k, NULL when out of range. */
const struct ckh_fault_ops *ckh_fault_of(enum ckh_scn_action_kind k);
/* The descriptor named name, NULL when none. */
const struct ckh_fault_ops *ckh_fault_find(const char *name);

/* Whether f is applied to the disks before its run (no op trigger). */
bool ckh_fault_applied_between_runs(const struct ckh_scn_fault *f);
/* Whether arming f on a run adds a simulator rule (CALL rules included). */
bool ckh_fault_arms_rule(const struct ckh_scn_fault *f);
/* Fills r with f's trigger (its selectors, on node: an index or -1) and
 * the action its descriptor arms: its `arm`, or CALL for an at-rest fault
 * at its trigger (the caller sets call and call_ctx), or NONE when the
 * descriptor arms nothing (the mode delivers the fault its own way:
 * sigterm, gpu-oom). Strings are borrowed from f. The one way every mode
 * turns a scenario fault into a rule of the matcher (ckh/fault_rule.h). */
void ckh_fault_rule_of(const struct ckh_scn_fault *f, int node, struct ckh_fault_rule *r);
/* How f acts on its node's processes (its descriptor's acts_on_process);
 * *grace_ns (may be NULL) is set for PREEMPT. */
enum ckh_fault_process ckh_fault_on_process(const struct ckh_scn_fault *f, uint64_t *grace_ns);
/* Whether the mode (one CKH_FAULT_MODE_*) can deliver every fault of sc:
 * 0, or CKH_EINVAL with, for the first fault it cannot, the one refusal
 * "LINE:COL: " followed by ckh_fault_refusal's text in err. Every mode
 * asks it before its first run; the caller prefixes the scenario's file. */
int ckh_fault_check_mode(const struct ckh_scenario *sc, unsigned mode, char *err, size_t errlen);
/* The refusal of ops by mode, without a location: "'do: NAME' is
 * delivered only by MODES, not by MODE[: NOTE]". Returns CKH_EINVAL. */
int ckh_fault_refusal(const struct ckh_fault_ops *ops, unsigned mode, char *err, size_t errlen);
/* The node fault f names among a job's n nodes, node i named
 * name_of(ctx, i): *node is its index, or -1 when f names none (any node).
 * 0, or CKH_EINVAL with the one wording, "LINE:COL: the fault names node
 * 'NAME' (or: node INDEX), which the job does not have (its nodes: a, b)",
 * in err (the caller prefixes the scenario's file). */
int ckh_fault_node(const struct ckh_scn_fault *f, int n, const char *(*name_of)(const void *ctx, int i),
                   const void *ctx, int *node, char *err, size_t errlen);

/* Appends fault kind k drawn at random to g: draws its run (1..3 in the
 * damaging tier, 1..2 otherwise), then calls its generate. */
void ckh_fault_generate(const struct ckh_fault_ops *ops, struct ckh_fault_gen *g);

/* ---- helpers for descriptors (env.c, gen.c) ---- */

/* The disk holding path in node's namespace (node < 0: node 0's) and the
 * path on that disk; NULL when no disk holds it. */
struct ckh_simfs *ckh_fault_resolve(const struct ckh_fault_env *env, int node, const char *path,
                                    char *dpath, size_t n);
/* Calls fn once per distinct disk holding path (restricted to node when
 * >= 0); stops at the first non-zero return. */
int ckh_fault_for_each_disk(struct ckh_fault_env *env, int node, const char *path,
                            int (*fn)(struct ckh_fault_env *env, struct ckh_simfs *d,
                                      const char *dpath, const void *arg),
                            const void *arg);
/* Changes the object "/BUCKET/KEY" (path) of env->store at rest, as
 * fault f: deletes it (corrupt false: a lifecycle rule) or flips its byte
 * at off (ckh_objstore_expire, ckh_objstore_corrupt). A key that is not
 * there is left alone (not fired); a job without a store, or a missing
 * bucket, is an error located at f. */
int ckh_fault_store_change(struct ckh_fault_env *env, const struct ckh_scn_fault *f, const char *path, bool corrupt,
                           uint64_t off);
/* The at-rest change landed: only then does the fault count as fired. */
void ckh_fault_hit(struct ckh_fault_env *env);
/* Writes "line:column: <message>" for f into env->err; returns code. */
int ckh_fault_errf(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int code,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Writes "    key: " and s as a double-quoted YAML scalar, then a newline. */
void ckh_fault_write_str(FILE *out, const char *key, const char *s);

void ckh_fault_gen_printf(struct ckh_fault_gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
uint64_t ckh_fault_gen_pick(struct ckh_fault_gen *g, uint64_t lo, uint64_t hi);
bool ckh_fault_gen_chance(struct ckh_fault_gen *g, double p);
/* An op the job performs when it writes a checkpoint / at any time. */
const char *ckh_fault_gen_write_op(struct ckh_fault_gen *g);
const char *ckh_fault_gen_any_op(struct ckh_fault_gen *g);
/* Writes the `on:` mapping of a fault: op (NULL: none), maybe a node and
 * a phase, an nth or a probability (maybe repeating when allow_repeat),
 * and run. */
void ckh_fault_gen_trigger(struct ckh_fault_gen *g, const char *op, uint32_t run, bool allow_repeat);

/* ---- shared by descriptors of one family ---- */

/* `keep:` of crash and power-loss (crash.c). */
int ckh__fault_parse_keep(struct ckh__scn_reader *p, const struct yaml_node_s *n,
                          struct ckh_scn_fault *f);
int ckh__fault_write_keep(FILE *out, const struct ckh_scn_action *a);
void ckh__fault_arm_keep(const struct ckh_scn_fault *f, struct ckh_fault_rule *r);
/* acts_on_process of crash and power-loss: the processes die (crash.c). */
enum ckh_fault_process ckh__fault_on_process_kill(const struct ckh_scn_action *a, uint64_t *grace_ns);

/* The `latest` pointer faults, dangling-latest and stale-latest (latest.c). */
int ckh__fault_parse_latest(struct ckh__scn_reader *p, const struct yaml_node_s *n,
                            struct ckh_scn_fault *f);
int ckh__fault_write_latest(FILE *out, const struct ckh_scn_action *a);
int ckh__fault_apply_latest(struct ckh_fault_env *env, const struct ckh_scn_fault *f, int node);
void ckh__fault_generate_latest(struct ckh_fault_gen *g);

/* The descriptors (private to harness/; listed by registry.c). */
#define CKH__FAULT_DECL(e, id) extern const struct ckh_fault_ops ckh__fault_##id;
CKH_FAULT_LIST(CKH__FAULT_DECL)
#undef CKH__FAULT_DECL

/* The fault rules of run `run` (1-based), in the simulator's order (rule
 * INDEX is its position, as ckh_sim_add_fault numbers them; an at-rest
 * fault with a trigger is a CALL rule, as in arm.c), over the
 * job's n nodes, node i named node_name(names, i): *rules and *fault_of (the scenario fault of each
 * rule) are malloc'd arrays of *nrules entries (the caller frees both;
 * path globs and phases are borrowed from sc). CKH_EINVAL for a fault
 * naming a node the job does not have, CKH_ENOMEM. */
int ckh_fault_rules_of_run(const struct ckh_scenario *sc, int run, int n,
                           const char *(*node_name)(const void *ctx, int i), const void *names,
                           struct ckh_fault_rule **rules, size_t **fault_of, size_t *nrules, char *err,
                           size_t errlen);

#endif
