/* The `job` section of a scenario: the workload and its shape, the saver,
 * the checkpoint cadence, free-form options and the disks
 * (docs/SCENARIOS.md, "job" and "job.disks"); or, for a command job, the
 * program each node runs, its environment and its time limit
 * (docs/SCENARIOS.md, "Command jobs").
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/objstore.h"
#include "model/reader.h"

/* ---- job.disks ---- */

static const char *const disk_keys[] = {"name",     "mount",   "shared",    "crash_model",
                                        "sector",   "capacity", "latency",  "bandwidth",
                                        "ns_per_kib", "sharing"};

static void disk_defaults(struct ckh_scn_disk *d)
{
    d->shared = true;
    d->model = CKH_CRASH_POSIX_WEAK;
    d->sharing = CKH_SHARING_NETWORK;
    d->sector_bytes = 4096;
    d->capacity_bytes = 0;
    d->latency_ns = 100000;
    d->ns_per_kib = 1000;
}

static int parse_disk(struct ckh__scn_reader *p, const yaml_node_t *n, size_t idx, struct ckh_scn_disk *d)
{
    yaml_node_t *v;
    int rc = ckh__scn_check_map(p, n, "job.disks[]", disk_keys, CKH__NKEYS(disk_keys), NULL, NULL);
    if (rc)
        return rc;
    disk_defaults(d);
    d->line = (int)n->start_mark.line + 1;
    if ((v = ckh__scn_get(p, n, "name"))) {
        if ((rc = ckh__scn_get_str(p, v, "job.disks[].name", &d->name)))
            return rc;
    } else {
        char buf[32];
        snprintf(buf, sizeof(buf), "disk%zu", idx);
        if (!(d->name = ckh__scn_strdup(p->s, buf)))
            return CKH_ENOMEM;
    }
    if (!(v = ckh__scn_get(p, n, "mount")))
        return ckh__scn_fail(p, n, CKH_EINVAL, "disk '%s' needs 'mount' (an absolute path)", d->name);
    if ((rc = ckh__scn_get_sim_path(p, v, "job.disks[].mount", &d->mount)))
        return rc;
    if ((v = ckh__scn_get(p, n, "shared")) && (rc = ckh__scn_get_bool(p, v, "job.disks[].shared", &d->shared)))
        return rc;
    int e = 0;
    if ((v = ckh__scn_get(p, n, "crash_model"))) {
        if ((rc = ckh__scn_get_enum(p, v, "job.disks[].crash_model", ckh_scn_crash_models.names,
                                     ckh_scn_crash_models.n, &e)))
            return rc;
        d->model = (enum ckh_crash_model)e;
    }
    if ((v = ckh__scn_get(p, n, "sharing"))) {
        if ((rc = ckh__scn_get_enum(p, v, "job.disks[].sharing", ckh_scn_sharings.names, ckh_scn_sharings.n, &e)))
            return rc;
        if (!d->shared)
            return ckh__scn_fail(p, v, CKH_EINVAL,
                                 "disk '%s': 'sharing' applies to a disk the nodes share; this one has "
                                 "'shared: false' (one disk per node)",
                                 d->name);
        d->sharing = (enum ckh_simfs_sharing)e;
    }
    if ((v = ckh__scn_get(p, n, "sector"))) {
        int64_t sec;
        if (!ckh__scn_is_scalar(v) || !ckh__scn_parse_i64(ckh__scn_text(v), &sec) || (sec != 512 && sec != 4096))
            return ckh__scn_fail(p, v, CKH_EINVAL, "'job.disks[].sector' expects 512 or 4096, got " CKH__GOT_FMT,
                        CKH__GOT_ARGS(v));
        d->sector_bytes = (uint32_t)sec;
    }
    if ((v = ckh__scn_get(p, n, "capacity")) && (rc = ckh__scn_get_size(p, v, "job.disks[].capacity",
                                                      &d->capacity_bytes)))
        return rc;
    if ((v = ckh__scn_get(p, n, "latency")) &&
        (rc = ckh__scn_get_duration(p, v, "job.disks[].latency", &d->latency_ns)))
        return rc;
    yaml_node_t *bw = ckh__scn_get(p, n, "bandwidth"), *npk = ckh__scn_get(p, n, "ns_per_kib");
    if (bw && npk)
        return ckh__scn_fail(p, npk, CKH_EINVAL, "give either 'bandwidth' or 'ns_per_kib', not both");
    if (npk && (rc = ckh__scn_get_u64(p, npk, "job.disks[].ns_per_kib", 0, &d->ns_per_kib)))
        return rc;
    if (bw) {
        uint64_t bps = 0;
        size_t len = ckh__scn_is_scalar(bw) ? strlen(ckh__scn_text(bw)) : 0;
        char buf[64];
        if (len > 2 && len < sizeof(buf) && !strcmp(ckh__scn_text(bw) + len - 2, "/s")) {
            memcpy(buf, ckh__scn_text(bw), len - 2);
            buf[len - 2] = '\0';
            if (ckh_scn_parse_size(buf, &bps))
                bps = 0;
        }
        if (!bps)
            return ckh__scn_fail(p, bw, CKH_EINVAL,
                        "'job.disks[].bandwidth' expects a size per second such as '1GiB/s', "
                        "got " CKH__GOT_FMT,
                        CKH__GOT_ARGS(bw));
        d->ns_per_kib = bps >= 1024ull * 1000000000ull ? 1 : 1024ull * 1000000000ull / bps;
    }
    return 0;
}

/* Disk i of the list that repeats an earlier disk's name or mount among
 * the first n (the earliest such disk; a name before a mount), or n. */
static size_t repeated_disk(struct ckh__scn_reader *p, const struct ckh_scn_disk *d, size_t n,
                            bool *by_mount)
{
    const char **names = ckh_malloc(p->s->alloc, (n ? 2 * n : 1) * sizeof *names);
    size_t first = 0, dn, dm;
    if (!names)
        return SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        names[i] = d[i].name;
        names[n + i] = d[i].mount;
    }
    dn = ckh__scn_first_repeat(p->s->alloc, names, n, &first);
    dm = ckh__scn_first_repeat(p->s->alloc, names + n, n, &first);
    ckh_free(p->s->alloc, names);
    if (dn == SIZE_MAX || dm == SIZE_MAX)
        return SIZE_MAX;
    *by_mount = dm < dn;
    return dm < dn ? dm : dn;
}

/* The list of disks: names and mount points distinct (the first problem in
 * file order is reported). */
static int parse_disks(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    if (n->type != YAML_SEQUENCE_NODE ||
        n->data.sequence.items.top == n->data.sequence.items.start)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'job.disks' expects a non-empty list of disks, got " CKH__GOT_FMT,
                             CKH__GOT_ARGS(n));
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start), ok = 0;
    job->disks = ckh__scn_alloc(p->s, cnt * sizeof(*job->disks));
    if (!job->disks)
        return CKH_ENOMEM;
    int rc = 0;
    for (; ok < cnt; ok++)
        if ((rc = parse_disk(p, ckh__scn_node(p, n->data.sequence.items.start[ok]), ok, &job->disks[ok])))
            break;
    if (rc == CKH_ENOMEM)
        return rc;
    bool by_mount = false;
    size_t dup = repeated_disk(p, job->disks, ok, &by_mount);
    if (dup == SIZE_MAX)
        return CKH_ENOMEM;
    if (dup < ok) {
        yaml_node_t *e = ckh__scn_node(p, n->data.sequence.items.start[dup]);
        return by_mount ? ckh__scn_fail(p, e, CKH_EINVAL, "two disks are mounted at '%s'", job->disks[dup].mount)
                        : ckh__scn_fail(p, e, CKH_EINVAL, "two disks are named '%s'", job->disks[dup].name);
    }
    job->ndisks = ok;
    return rc;
}

/* Whether path lies under the mount point m. */
static bool under_mount(const char *path, const char *m)
{
    size_t lm = strlen(m);
    if (!strcmp(m, "/"))
        return true;
    return !strncmp(path, m, lm) && (path[lm] == '/' || path[lm] == '\0');
}

/* ---- job.saver ---- */

static const char *const saver_keys[] = {"kind", "keep_last", "strategy", "name"};

static int parse_saver(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_saver *sv)
{
    const struct ckh_scn_names *names = p->opts ? &p->opts->savers : NULL;
    if (ckh__scn_is_scalar(n))
        return ckh__scn_get_name(p, n, "job.saver", names, &sv->kind);
    int rc = ckh__scn_check_map(p, n, "job.saver", saver_keys, CKH__NKEYS(saver_keys), NULL, NULL);
    if (rc)
        return rc;
    yaml_node_t *v = ckh__scn_get(p, n, "kind");
    if (!v)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'job.saver' needs 'kind' (the saver's name)");
    if ((rc = ckh__scn_get_name(p, v, "job.saver.kind", names, &sv->kind)))
        return rc;
    int64_t i;
    if ((v = ckh__scn_get(p, n, "keep_last"))) {
        if ((rc = ckh__scn_get_int(p, v, "job.saver.keep_last", 0, 1000000, &i)))
            return rc;
        sv->keep_last = (uint32_t)i;
    }
    int e = 0;
    if ((v = ckh__scn_get(p, n, "strategy"))) {
        if ((rc = ckh__scn_get_enum(p, v, "job.saver.strategy", ckh_scn_strategies.names, ckh_scn_strategies.n,
                           &e)))
            return rc;
        sv->strategy = (enum ckh_scn_strategy)e;
    }
    if ((v = ckh__scn_get(p, n, "name")) && (rc = ckh__scn_get_str(p, v, "job.saver.name", &sv->name)))
        return rc;
    return 0;
}

/* ---- job ---- */

static const char *const job_keys[] = {
    "workload",        "nodes",   "ranks",  "epochs",     "steps",
    "backend",         "saver",   "checkpoint_dir",       "checkpoint_every",
    "options",         "disks",   "collective_timeout",   "gpu_memory",
    "defects",         "command", "env",    "timeout",    "platform",
    "checkpoint_mount", "object_store"};
static const char *const every_keys[] = {"epochs", "steps"};

/* job.disks (default: one shared disk at "/"); the checkpoint directory
 * must lie on one of them. */
static int parse_job_disks(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    yaml_node_t *v;
    int rc;
    if ((v = ckh__scn_get(p, n, "disks"))) {
        if ((rc = parse_disks(p, v, job)))
            return rc;
    } else {
        if (!(job->disks = ckh__scn_alloc(p->s, sizeof(*job->disks))))
            return CKH_ENOMEM;
        disk_defaults(&job->disks[0]);
        job->disks[0].name = ckh__scn_strdup(p->s, "shared");
        job->disks[0].mount = ckh__scn_strdup(p->s, "/");
        if (!job->disks[0].name || !job->disks[0].mount)
            return CKH_ENOMEM;
        job->ndisks = 1;
    }
    bool mounted = false;
    for (size_t d = 0; d < job->ndisks; d++)
        mounted |= under_mount(job->checkpoint_dir, job->disks[d].mount);
    yaml_node_t *dir = ckh__scn_get(p, n, "checkpoint_dir");
    if (!mounted)
        return ckh__scn_fail(p, dir ? dir : n, CKH_EINVAL,
                             "'job.checkpoint_dir' %s is not under any disk's mount point",
                             job->checkpoint_dir);
    return 0;
}

/* job.checkpoint_every: {epochs: N} or {steps: N}. */
static int parse_every(struct ckh__scn_reader *p, const yaml_node_t *v, struct ckh_scn_job *job)
{
    int64_t i;
    int rc;
    if ((rc = ckh__scn_check_map(p, v, "job.checkpoint_every", every_keys, CKH__NKEYS(every_keys), NULL,
                        NULL)))
        return rc;
    yaml_node_t *ep = ckh__scn_get(p, v, "epochs"), *st = ckh__scn_get(p, v, "steps");
    if (ep && st)
        return ckh__scn_fail(p, st, CKH_EINVAL,
                    "'job.checkpoint_every' takes either 'epochs' or 'steps', not both");
    if (!ep && !st)
        return ckh__scn_fail(p, v, CKH_EINVAL, "'job.checkpoint_every' needs 'epochs' or 'steps'");
    if (ep) {
        if ((rc = ckh__scn_get_int(p, ep, "job.checkpoint_every.epochs", 1, 1000000, &i)))
            return rc;
        job->every_epochs = (uint32_t)i;
    } else if ((rc = ckh__scn_get_u64(p, st, "job.checkpoint_every.steps", 1, &job->every_steps))) {
        return rc;
    }
    return 0;
}

/* ---- command jobs: job.command, job.env, job.timeout, verify ---- */

/* An argv list: a non-empty list of scalars, kept as written. */
int ckh__scn_get_argv(struct ckh__scn_reader *p, const yaml_node_t *n, const char *what,
                      struct ckh_scn_command *c)
{
    if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.top == n->data.sequence.items.start)
        return ckh__scn_fail(p, n, CKH_EINVAL,
                             "'%s' expects a non-empty list of arguments such as [python3, train.py] "
                             "(no shell: [sh, -c, \"...\"] for one), got " CKH__GOT_FMT,
                             what, CKH__GOT_ARGS(n));
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    c->argv = ckh__scn_alloc(p->s, (cnt + 1) * sizeof(*c->argv));
    if (!c->argv)
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *a = ckh__scn_node(p, n->data.sequence.items.start[i]);
        if (!ckh__scn_is_scalar(a) || (i == 0 && !ckh__scn_text(a)[0]))
            return ckh__scn_fail(p, a, CKH_EINVAL, "'%s' expects %s, got " CKH__GOT_FMT, what,
                                 i == 0 ? "the program as its first argument" : "one argument per entry",
                                 CKH__GOT_ARGS(a));
        if (!(c->argv[i] = ckh__scn_strdup(p->s, ckh__scn_text(a))))
            return CKH_ENOMEM;
    }
    c->argc = cnt;
    c->line = (int)n->start_mark.line + 1;
    c->column = (int)n->start_mark.column + 1;
    return 0;
}

/* "rank_N" (N decimal, no sign or leading zero) or "default". */
static bool command_key_ok(const char *k)
{
    if (!strcmp(k, "default"))
        return true;
    if (strncmp(k, "rank_", 5) != 0 || !isdigit((unsigned char)k[5]) || (k[5] == '0' && k[6]))
        return false;
    for (const char *c = k + 5; *c; c++)
        if (!isdigit((unsigned char)*c))
            return false;
    return strlen(k + 5) <= 4;
}

/* job.command: an argv list (every node), or a mapping from node names
 * (rank_0, rank_1, ...) and `default` to argv lists. */
static int parse_commands(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    int rc;
    if (n->type != YAML_MAPPING_NODE) {
        if (!(job->commands = ckh__scn_alloc(p->s, sizeof(*job->commands))))
            return CKH_ENOMEM;
        job->ncommands = 1;
        return ckh__scn_get_argv(p, n, "job.command", &job->commands[0]);
    }
    if ((rc = ckh__scn_check_map(p, n, "job.command", NULL, 0, NULL, NULL)))
        return rc;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (cnt == 0)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'job.command' expects an argv list, or a mapping from "
                                               "node names (rank_0, ...) and 'default' to argv lists");
    if (!(job->commands = ckh__scn_alloc(p->s, cnt * sizeof(*job->commands))))
        return CKH_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_pair_t *pr = &n->data.mapping.pairs.start[i];
        yaml_node_t *k = ckh__scn_node(p, pr->key);
        const char *key = ckh__scn_text(k);
        char what[96];
        if (!command_key_ok(key))
            return ckh__scn_fail(p, k, CKH_EINVAL,
                                 "'job.command' keys are node names (rank_0, rank_1, ...) or 'default', "
                                 "got '%s'", key);
        snprintf(what, sizeof what, "job.command.%s", key);
        if ((rc = ckh__scn_get_argv(p, ckh__scn_node(p, pr->value), what, &job->commands[i])))
            return rc;
        if (strcmp(key, "default") && !(job->commands[i].node = ckh__scn_strdup(p->s, key)))
            return CKH_ENOMEM;
        job->ncommands = i + 1;
    }
    return 0;
}

/* Variables ckh sets itself (harness/exec/command.c): job.env may not. */
static const char *const reserved_env[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                           "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK",
                                           "ROLE_RANK", "ROLE_WORLD_SIZE"};

/* job.env: NAME: value, NAME a shell variable name that ckh does not set. */
static int parse_env(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    int rc = ckh__scn_get_kv_map(p, n, "job.env", &job->env, &job->nenv);
    if (rc)
        return rc;
    for (size_t i = 0; i < job->nenv; i++) {
        const char *k = job->env[i].key;
        bool ok = k[0] && !isdigit((unsigned char)k[0]);
        for (const char *c = k; *c && ok; c++)
            ok = isalnum((unsigned char)*c) || *c == '_';
        bool reserved = !strncmp(k, "CKH_", 4);
        for (size_t r = 0; r < CKH__NKEYS(reserved_env); r++)
            reserved |= !strcmp(k, reserved_env[r]);
        yaml_node_t at = *n;
        at.start_mark.line = (size_t)(job->env[i].line - 1);
        at.start_mark.column = (size_t)(job->env[i].column - 1);
        if (!ok)
            return ckh__scn_fail(p, &at, CKH_EINVAL,
                                 "'job.env' expects variable names (letters, digits, '_'; not starting "
                                 "with a digit), got '%s'", k);
        if (reserved)
            return ckh__scn_fail(p, &at, CKH_EINVAL,
                                 "'job.env' may not set %s: ckh sets it for every node (RANK, WORLD_SIZE, "
                                 "LOCAL_RANK, MASTER_ADDR, MASTER_PORT, CKH_*; docs/SCENARIOS.md, "
                                 "\"Command jobs\")", k);
    }
    return 0;
}

/* Keys of a simulated job that mean nothing to a command job, and why. */
static const struct {
    const char *key;
    const char *why;
} not_for_commands[] = {
    {"backend", "the program does its own checkpoint I/O"},
    {"saver", "the program does its own checkpoint I/O"},
    {"options", "pass the program its options in job.command or job.env"},
    {"defects", "defect switches exist only in built-in workloads"},
    {"gpu_memory", "a command job has no emulated devices"},
    {"collective_timeout", "its processes time their own collectives out"},
    {"epochs", "pass the program its length in job.command or job.env"},
    {"steps", "pass the program its length in job.command or job.env"},
};

/* job.checkpoint_mount: where each node's processes see the disk that
 * holds job.checkpoint_dir (their own mount namespace; exec/command_ns.h).
 * A host path: absolute, without '..', '.', '//' or a trailing '/', not
 * the root. */
static int parse_checkpoint_mount(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    yaml_node_t *v = ckh__scn_get(p, n, "checkpoint_mount");
    if (!v)
        return (job->checkpoint_mount = ckh__scn_strdup(p->s, CKH_SCN_CHECKPOINT_MOUNT)) ? 0 : CKH_ENOMEM;
    int rc = ckh__scn_get_str(p, v, "job.checkpoint_mount", &job->checkpoint_mount);
    if (rc)
        return rc;
    const char *m = job->checkpoint_mount;
    size_t len = strlen(m);
    bool bad = m[0] != '/' || len < 2 || m[len - 1] == '/' || strstr(m, "//") || strstr(m, "/./") ||
               strstr(m, "/../") || (len >= 2 && !strcmp(m + len - 2, "/.")) ||
               (len >= 3 && !strcmp(m + len - 3, "/.."));
    if (bad)
        return ckh__scn_fail(p, v, CKH_EINVAL,
                             "'job.checkpoint_mount' expects an absolute folder path other than '/', "
                             "without '.', '..', '//' or a trailing '/' (such as /ckh/ckpt), got '%s'", m);
    if (len > CKH_PATH_MAX)
        return ckh__scn_fail(p, v, CKH_EINVAL, "'job.checkpoint_mount' is longer than %d bytes", CKH_PATH_MAX);
    return 0;
}

/* The command-job keys of job n: a command, its environment and its
 * time limit; the simulated-job keys refused. */
static int parse_command_job(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    yaml_node_t *v, *cmd = ckh__scn_get(p, n, "command");
    int rc;
    if ((v = ckh__scn_get(p, n, "workload")))
        return ckh__scn_fail(p, v, CKH_EINVAL,
                             "give either 'workload' (a simulated job) or 'command' (a program per "
                             "node), not both");
    for (size_t i = 0; i < CKH__NKEYS(not_for_commands); i++)
        if ((v = ckh__scn_get(p, n, not_for_commands[i].key)))
            return ckh__scn_fail(p, v, CKH_EINVAL, "'job.%s' does not apply to a command job: %s",
                                 not_for_commands[i].key, not_for_commands[i].why);
    if ((rc = parse_commands(p, cmd, job)))
        return rc;
    if ((v = ckh__scn_get(p, n, "env")) && (rc = parse_env(p, v, job)))
        return rc;
    job->timeout_ns = CKH_SCN_COMMAND_TIMEOUT_NS;
    if ((v = ckh__scn_get(p, n, "timeout"))) {
        if ((rc = ckh__scn_get_duration(p, v, "job.timeout", &job->timeout_ns)))
            return rc;
        if (job->timeout_ns < 1000000)
            return ckh__scn_fail(p, v, CKH_EINVAL, "'job.timeout' expects at least 1ms, got " CKH__GOT_FMT,
                                 CKH__GOT_ARGS(v));
    }
    if ((rc = parse_checkpoint_mount(p, n, job)))
        return rc;
    job->collective_timeout_ns = 0;
    return 0;
}

/* ---- job.object_store ---- */

static const char *const object_store_keys[] = {"buckets", "consistency", "delay_ops", "commit"};

/* job.object_store: {buckets: [names], consistency: NAME, delay_ops: N,
 * commit: KEY_GLOB}
 * (docs/OBJECT_STORE.md); command jobs only: their programs reach the
 * store over HTTP. */
static int parse_object_store(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    yaml_node_t *v;
    int rc, e = 0;
    if (!job->commands)
        return ckh__scn_fail(p, n, CKH_EINVAL, "'job.object_store' applies to command jobs (job.command): "
                                               "their programs reach the store over HTTP");
    if ((rc = ckh__scn_check_map(p, n, "job.object_store", object_store_keys, CKH__NKEYS(object_store_keys),
                                 NULL, NULL)))
        return rc;
    struct ckh_scn_object_store *os = ckh__scn_alloc(p->s, sizeof *os);
    if (!os)
        return CKH_ENOMEM;
    memset(os, 0, sizeof *os);
    os->line = (int)n->start_mark.line + 1;
    os->column = (int)n->start_mark.column + 1;
    if (!(v = ckh__scn_get(p, n, "buckets")))
        return ckh__scn_fail(p, n, CKH_EINVAL, "'job.object_store' needs 'buckets': the buckets the job "
                                               "finds made (a list of names)");
    if ((rc = ckh__scn_get_name_list(p, v, "job.object_store.buckets", NULL, &os->buckets, &os->nbuckets)))
        return rc;
    if (os->nbuckets == 0)
        return ckh__scn_fail(p, v, CKH_EINVAL, "'job.object_store.buckets' expects at least one bucket name");
    for (size_t i = 0; i < os->nbuckets; i++) {
        const yaml_node_t *at = v->type == YAML_SEQUENCE_NODE ? ckh__scn_node(p, v->data.sequence.items.start[i]) : v;
        if (!ckh_objstore_bucket_name_ok(os->buckets[i]))
            return ckh__scn_fail(p, at, CKH_EINVAL, "'job.object_store.buckets' expects S3 bucket names (3 to 63 "
                                                    "of a-z, 0-9, '.', '-', starting and ending with a letter "
                                                    "or digit, no '..', '.-' or '-.', not an IPv4 address), "
                                                    "got '%s'", os->buckets[i]);
    }
    if ((v = ckh__scn_get(p, n, "consistency"))) {
        const char *names[CKH_OBJSTORE__COUNT];
        for (int i = 0; i < CKH_OBJSTORE__COUNT; i++)
            names[i] = ckh_objstore_consistency_name((enum ckh_objstore_consistency)i);
        if ((rc = ckh__scn_get_enum(p, v, "job.object_store.consistency", names, CKH_OBJSTORE__COUNT, &e)))
            return rc;
        os->consistency = e;
    }
    if ((v = ckh__scn_get(p, n, "delay_ops")) &&
        (rc = ckh__scn_get_u64(p, v, "job.object_store.delay_ops", 1, &os->delay_ops)))
        return rc;
    if ((v = ckh__scn_get(p, n, "commit"))) { /* the retention oracle's commit objects */
        if ((rc = ckh__scn_get_str(p, v, "job.object_store.commit", &os->commit)))
            return rc;
        size_t len = strlen(os->commit);
        if (len == 0 || len > 1024 || os->commit[0] == '/')
            return ckh__scn_fail(p, v, CKH_EINVAL, "'job.object_store.commit' expects the key glob of a "
                                                   "checkpoint's commit object (1 to 1024 bytes, not starting "
                                                   "with '/': ckpt/step_*/manifest), got '%s'", os->commit);
    }
    job->object_store = os;
    return 0;
}

/* Which kind of job n is: a command job's keys, or a simulated job's
 * workload (command-only keys refused). */
static int parse_job_kind(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    const struct ckh_scn_options *o = p->opts;
    yaml_node_t *v;
    int rc;
    if (ckh__scn_get(p, n, "command")) {
        if ((rc = parse_command_job(p, n, job)))
            return rc;
    } else if (!(v = ckh__scn_get(p, n, "workload"))) {
        return ckh__scn_fail(p, n, CKH_EINVAL, "'job' needs 'workload' (a simulated job) or 'command' "
                                               "(a real program run per node)");
    } else if ((rc = ckh__scn_get_name(p, v, "job.workload", o ? &o->workloads : NULL, &job->workload))) {
        return rc;
    } else {
        job->workload_line = (int)v->start_mark.line + 1;
        job->workload_column = (int)v->start_mark.column + 1;
    }
    static const char *const command_only[] = {"env", "timeout", "checkpoint_mount"};
    for (size_t k = 0; !job->commands && k < CKH__NKEYS(command_only); k++)
        if ((v = ckh__scn_get(p, n, command_only[k])))
            return ckh__scn_fail(p, v, CKH_EINVAL, "'job.%s' applies to command jobs only (job.command)",
                                 command_only[k]);
    return 0;
}

/* The job's size: nodes (or ranks), epochs, steps. */
static int parse_job_size(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    yaml_node_t *v;
    int64_t i;
    int rc;
    yaml_node_t *nodes = ckh__scn_get(p, n, "nodes"), *ranks = ckh__scn_get(p, n, "ranks");
    if (nodes && ranks)
        return ckh__scn_fail(p, ranks, CKH_EINVAL, "give either 'nodes' or 'ranks', not both");
    if ((v = nodes ? nodes : ranks)) {
        if ((rc = ckh__scn_get_int(p, v, nodes ? "job.nodes" : "job.ranks", 1, 1024, &i)))
            return rc;
        job->nodes = (uint32_t)i;
        job->nodes_line = (int)v->start_mark.line + 1;
        job->nodes_column = (int)v->start_mark.column + 1;
        job->nodes_as_ranks = !nodes;
    }
    if ((v = ckh__scn_get(p, n, "epochs"))) {
        if ((rc = ckh__scn_get_int(p, v, "job.epochs", 1, 1000000, &i)))
            return rc;
        job->epochs = (uint32_t)i;
        job->epochs_line = (int)v->start_mark.line + 1;
        job->epochs_column = (int)v->start_mark.column + 1;
    }
    if ((v = ckh__scn_get(p, n, "steps"))) {
        if ((rc = ckh__scn_get_u64(p, v, "job.steps", 1, &job->steps)))
            return rc;
        job->steps_line = (int)v->start_mark.line + 1;
        job->steps_column = (int)v->start_mark.column + 1;
    }
    return 0;
}

/* How the job checkpoints: backend, saver, folder, interval. */
static int parse_job_checkpoint(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    const struct ckh_scn_options *o = p->opts;
    yaml_node_t *v;
    int rc;
    if ((v = ckh__scn_get(p, n, "backend"))) {
        if ((rc = ckh__scn_get_name(p, v, "job.backend", o ? &o->backends : NULL, &job->backend)))
            return rc;
        job->backend_line = (int)v->start_mark.line + 1;
        job->backend_column = (int)v->start_mark.column + 1;
    }
    if ((v = ckh__scn_get(p, n, "saver"))) {
        if ((rc = parse_saver(p, v, &job->saver)))
            return rc;
        const yaml_node_t *kind = ckh__scn_is_scalar(v) ? v : ckh__scn_get(p, v, "kind");
        job->saver_line = (int)kind->start_mark.line + 1;
        job->saver_column = (int)kind->start_mark.column + 1;
    }
    if ((v = ckh__scn_get(p, n, "checkpoint_dir"))) {
        if ((rc = ckh__scn_get_sim_path(p, v, "job.checkpoint_dir", &job->checkpoint_dir)))
            return rc;
    } else if (!(job->checkpoint_dir = ckh__scn_strdup(p->s, job->commands ? "/" : "/ckpt"))) {
        /* A command job's $CKH_CKPT_DIR is its disk's root by default, so
         * its scenario paths read like the program's: /step_4.pt. */
        return CKH_ENOMEM;
    }
    if ((v = ckh__scn_get(p, n, "checkpoint_every")) && (rc = parse_every(p, v, job)))
        return rc;
    return 0;
}

/* job.platform: workload jobs only. */
static int parse_job_platform(struct ckh__scn_reader *p, const yaml_node_t *v, struct ckh_scn_job *job)
{
    int e, rc;
    if (job->commands)
        return ckh__scn_fail(p, v, CKH_EINVAL, "'job.platform' applies to workload jobs (a command "
                                               "job's programs are real processes already)");
    if ((rc = ckh__scn_get_enum(p, v, "job.platform", ckh_scn_platforms.names, ckh_scn_platforms.n, &e)))
        return rc;
    job->platform = (enum ckh_scn_platform)e;
    return 0;
}

int ckh__scn_parse_job(struct ckh__scn_reader *p, const yaml_node_t *n, struct ckh_scn_job *job)
{
    const struct ckh_scn_options *o = p->opts;
    yaml_node_t *v;
    int rc = ckh__scn_check_map(p, n, "job", job_keys, CKH__NKEYS(job_keys), NULL, NULL);
    if (rc)
        return rc;
    job->nodes = 1;
    job->collective_timeout_ns = 30ull * 1000000000ull;
    if ((rc = parse_job_kind(p, n, job)) || (rc = parse_job_size(p, n, job)) ||
        (rc = parse_job_checkpoint(p, n, job)))
        return rc;
    if ((v = ckh__scn_get(p, n, "options")) &&
        (rc = ckh__scn_get_kv_map(p, v, "job.options", &job->options, &job->noptions)))
        return rc;
    if ((rc = parse_job_disks(p, n, job)))
        return rc;
    if ((v = ckh__scn_get(p, n, "collective_timeout")) &&
        (rc = ckh__scn_get_duration(p, v, "job.collective_timeout", &job->collective_timeout_ns)))
        return rc;
    if ((v = ckh__scn_get(p, n, "gpu_memory"))) {
        if ((rc = ckh__scn_get_size(p, v, "job.gpu_memory", &job->gpu_mem_bytes)))
            return rc;
        job->gpu_memory_line = (int)v->start_mark.line + 1;
        job->gpu_memory_column = (int)v->start_mark.column + 1;
    }
    if ((v = ckh__scn_get(p, n, "defects")) &&
        (rc = ckh__scn_get_name_list(p, v, "job.defects", o ? &o->defects : NULL, &job->defects,
                            &job->ndefects)))
        return rc;
    if ((v = ckh__scn_get(p, n, "platform")) && (rc = parse_job_platform(p, v, job)))
        return rc;
    if ((v = ckh__scn_get(p, n, "object_store")) && (rc = parse_object_store(p, v, job)))
        return rc;
    /* what the parser accepted: one kind of job, its size in range, a folder */
    CKH_ASSERT(!job->workload != !job->commands && job->nodes >= 1 && job->nodes <= 1024 && job->checkpoint_dir);
    return 0;
}
