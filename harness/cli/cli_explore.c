/* `ckh explore FILE`: every crash state of a real program's run
 * (harness/search/explore_program.h), and the `explore:` scenario's
 * verdict for `ckh run`.
 *
 * SIGINT, SIGTERM and SIGHUP are recorded (the pool's handler, as `ckh
 * run` does): the explorer stops its run or checks at once and cleans up,
 * then ckh says so and exits with 128 + N (docs/CLI.md, "Signals").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "cli/cli.h"
#include "cli/cli_load.h"
#include "cli/opt.h"
#include "exec/pool.h"
#include "search/explore_program.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ckh explore FILE [options]\n"
            "\n"
            "Runs a command job (job.command) once without faults, records every operation its\n"
            "programs ask of the checkpoint directory, and checks each crash state of that run:\n"
            "each prefix of the operations, with the pending ones applied, dropped, reordered or\n"
            "torn as the disk's crash model allows. A state is checked by the scenario's verify\n"
            "command, or by restarting the job on it and applying the oracles.\n"
            "A job with job.object_store is explored over its requests to the store instead: a\n"
            "state is the store after the first K requests (docs/OBJECT_STORE.md).\n"
            "\n"
            "options:\n"
            "  --check verify|restart  how a state is checked (default: verify when the scenario\n"
            "                          has one, else restart)\n"
            "  --jobs N                check N states at a time (default 1)\n"
            "  --start auto|cold|warm  how a check starts the programs: warm, from a launcher per\n"
            "                          worker that has imported what a Python script imports, or\n"
            "                          cold, by fork and exec (default auto: warm where it can)\n"
            "  --max-states N          generate at most N states\n"
            "  --time-limit SECONDS    start no check after this\n"
            "  --state K               check state K alone (the reproduction of a finding)\n"
            "  --keep DIR              with --state: write that state's files (a store's objects as\n"
            "                          DIR/BUCKET/KEY) into DIR (absent or empty)\n"
            "  --seed N                the run's seed (default: the scenario's)\n"
            "  --crashes all|crash|power-loss|none\n"
            "                          a multi-node job's crashes: each node's machine crash in\n"
            "                          turn (crash), every node's at once (power-loss), or both\n"
            "                          (default: the scenario's explore.crashes, else all); none:\n"
            "                          only the orders of the nodes' operations on a shared disk\n"
            "  --others killed|running when one node crashes, the others are killed with it, or\n"
            "                          run on up to its next operation (default: killed)\n"
            "  --order N               a multi-node job on a shared disk: run order N of its nodes'\n"
            "                          operations alone (the reproduction of a finding), no crash state\n"
            "\n"
            "Exit status: 0 every state passed, 1 some failed, 2 bad input, 3 environment (FUSE).\n"
            "Reference: docs/PROGRAMS.md, \"Crash states of your program\".\n");
}

static int exit_of(int rc)
{
    if (rc == -EINTR)
        return CKH_EXIT_SIGNAL + 2;
    return ckh_err_is_bad_input(rc) ? CKH_EXIT_BAD_INPUT : CKH_EXIT_INTERNAL;
}

/* How the checks started the programs, in one line. */
static void print_start(FILE *f, const struct ckh_xprog_result *r)
{
    uint64_t all = r->warm_starts + r->cold_starts;
    if (r->start == CKH_XPROG_START_COLD)
        fprintf(f, "start: cold (--start cold)\n");
    else if (r->cold_starts == 0 && r->warm_starts > 0)
        fprintf(f, "start: warm (%" PRIu64 " program starts from pre-forked launchers)\n", r->warm_starts);
    else if (r->warm_starts > 0)
        fprintf(f, "start: warm for %" PRIu64 " of %" PRIu64 " program starts; cold for the others: %s\n",
                r->warm_starts, all, r->start_note);
    else if (r->cold_starts > 0)
        fprintf(f, "start: cold: %s\n", r->start_note);
}

/* The orders of several nodes' operations: a line, and each failing one. */
static void print_orders(FILE *f, const char *file, const char *argv0, const struct ckh_xprog_result *r,
                         const char *extra)
{
    CKH_ASSERT(r->norder_fails <= r->orders_checked && r->orders_checked <= r->orders);
    if (!r->orders)
        return;
    fprintf(f, "orders: %" PRIu64 " of the nodes' operations on a shared disk, %" PRIu64 " run and judged\n",
            r->orders, r->orders_checked);
    if (!r->norder_fails) {
        if (r->orders_checked)
            fprintf(f, "%s: every order run passes\n", r->orders_checked < r->orders ? "order passes" : "PASS");
        return;
    }
    fprintf(f, "FAIL: %zu order%s failed:\n", r->norder_fails, r->norder_fails == 1 ? "" : "s");
    for (size_t i = 0; i < r->norder_fails; i++) {
        const struct ckh_xprog_failure *x = &r->order_fails[i];
        fprintf(f, "  order %" PRIu64 ": %s\n    %s\n", x->k, x->state, x->symptom);
        fprintf(f, "    reproduce: %s explore %s%s --order %" PRIu64 "\n", argv0, file, extra, x->k);
    }
}

static void print_result(FILE *f, const char *file, const char *argv0, const struct ckh_xprog_result *r,
                         uint64_t only, const char *extra)
{
    /* the explorer's counts: failed <= checked <= distinct <= generated */
    CKH_ASSERT(r->nfails <= r->checked && r->checked <= r->distinct && r->distinct <= r->states &&
               (r->nfails == 0 || r->fails));
    double secs = (double)r->check_ms / 1000.0;
    fprintf(f, "explore %s: %" PRIu64 " operations recorded, %" PRIu64 " crash points, %" PRIu64
            " states (%" PRIu64 " distinct), %" PRIu64 " checked by %s in %.1f s",
            file, r->ops, r->crash_points, r->states, r->distinct, r->checked, ckh_xprog_check_name(r->check), secs);
    if (r->checked && r->check_ms)
        fprintf(f, " (%.1f states/s)", (double)r->checked / secs);
    fputc('\n', f);
    print_start(f, r);
    if (r->note[0])
        fprintf(f, "%s\n", r->note);
    if (r->bounded)
        fprintf(f, "bounded: %s\n", r->bound);
    if (!r->nfails) {
        fprintf(f, "%s: %s\n", only ? "state passes" : r->norder_fails ? "crash states pass" : "PASS",
                only ? "its check passed" : "every crash state checked passes");
        return;
    }
    /* One line per distinct symptom, at its smallest state. */
    size_t groups = 0, shown = 0;
    for (size_t i = 0; i < r->nfails; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(r->fails[j].symptom, r->fails[i].symptom);
        groups += !seen;
    }
    fprintf(f, "FAIL: %zu crash state%s failed (%zu distinct symptom%s), smallest first:\n", r->nfails,
            r->nfails == 1 ? "" : "s", groups, groups == 1 ? "" : "s");
    for (size_t i = 0; i < r->nfails && shown < 10; i++) {
        const struct ckh_xprog_failure *x = &r->fails[i];
        bool seen = false;
        size_t same = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(r->fails[j].symptom, x->symptom);
        if (seen)
            continue;
        for (size_t j = i + 1; j < r->nfails; j++)
            same += !strcmp(r->fails[j].symptom, x->symptom);
        shown++;
        fprintf(f, "  state %" PRIu64 ": %s\n    %s\n", x->k, x->state, x->symptom);
        if (same)
            fprintf(f, "    (and %zu larger state%s with this symptom)\n", same, same == 1 ? "" : "s");
        fprintf(f, "    reproduce: %s explore %s%s --state %" PRIu64 " [--keep DIR]\n", argv0, file, extra, x->k);
    }
    CKH_ASSERT(shown <= groups && groups <= r->nfails);
    if (groups > shown)
        fprintf(f, "  ... %zu more symptoms\n", groups - shown);
}

/* The command line into o: -1 to go on with the scenario file at
 * argv[optind], else the exit status (help shown, bad input). */
static int parse_options(int argc, char **argv, struct ckh_xprog_options *o)
{
    static const struct option longopts[] = {
        {"check", required_argument, NULL, 'c'},      {"jobs", required_argument, NULL, 'j'},
        {"max-states", required_argument, NULL, 'm'}, {"time-limit", required_argument, NULL, 't'},
        {"state", required_argument, NULL, 'k'},      {"keep", required_argument, NULL, 'K'},
        {"seed", required_argument, NULL, 's'},       {"help", no_argument, NULL, 'h'},
        {"start", required_argument, NULL, 'S'},      {"crashes", required_argument, NULL, 'C'},
        {"others", required_argument, NULL, 'O'},     {"order", required_argument, NULL, 'N'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    char msg[1200];
    uint64_t v;
    int c;
    while ((c = getopt_long(argc, argv, "j:h", longopts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'c':
            if (!strcmp(optarg, "verify"))
                o->check = CKH_XPROG_VERIFY;
            else if (!strcmp(optarg, "restart"))
                o->check = CKH_XPROG_RESTART;
            else
                rc = ckh_errf(msg, sizeof msg, CKH_EINVAL, "--check expects verify or restart, got '%s'", optarg);
            break;
        case 'j': rc = ckh_opt_u64("jobs", optarg, 1, 256, &v, msg, sizeof msg); o->jobs = (unsigned)v; break;
        case 'm': rc = ckh_opt_u64("max-states", optarg, 1, UINT64_MAX, &o->max_states, msg, sizeof msg); break;
        case 't':
            rc = ckh_opt_u64("time-limit", optarg, 1, UINT64_MAX / 1000, &v, msg, sizeof msg);
            o->time_limit_ms = v * 1000;
            break;
        case 'k': rc = ckh_opt_u64("state", optarg, 1, UINT64_MAX, &o->only_state, msg, sizeof msg); break;
        case 'K': o->keep_dir = optarg; break;
        case 'N': rc = ckh_opt_u64("order", optarg, 1, UINT64_MAX, &o->only_order, msg, sizeof msg); break;
        case 'S':
            o->start_set = true;
            if (!strcmp(optarg, "auto"))
                o->start = CKH_XPROG_START_AUTO;
            else if (!strcmp(optarg, "cold"))
                o->start = CKH_XPROG_START_COLD;
            else if (!strcmp(optarg, "warm"))
                o->start = CKH_XPROG_START_WARM;
            else
                rc = ckh_errf(msg, sizeof msg, CKH_EINVAL, "--start expects auto, cold or warm, got '%s'", optarg);
            break;
        case 'C':
            if (!strcmp(optarg, "all"))
                o->crashes = CKH_XPROG_CRASH_ALL;
            else if (!strcmp(optarg, "crash"))
                o->crashes = CKH_XPROG_CRASH_NODE;
            else if (!strcmp(optarg, "power-loss"))
                o->crashes = CKH_XPROG_CRASH_POWER;
            else if (!strcmp(optarg, "none"))
                o->crashes = CKH_XPROG_CRASH_NONE;
            else
                rc = ckh_errf(msg, sizeof msg, CKH_EINVAL, "--crashes expects all, crash, power-loss or none, got '%s'",
                              optarg);
            break;
        case 'O':
            o->others_set = true;
            if (!strcmp(optarg, "killed"))
                o->others = CKH_XPROG_OTHERS_KILLED;
            else if (!strcmp(optarg, "running"))
                o->others = CKH_XPROG_OTHERS_RUNNING;
            else
                rc = ckh_errf(msg, sizeof msg, CKH_EINVAL, "--others expects killed or running, got '%s'", optarg);
            break;
        case 's':
            rc = ckh_opt_u64("seed", optarg, 0, UINT64_MAX, &o->seed, msg, sizeof msg);
            o->seed_set = true;
            break;
        case 'h': usage(stdout); return CKH_EXIT_OK;
        default: usage(stderr); return CKH_EXIT_BAD_INPUT;
        }
        if (rc) {
            fprintf(stderr, "ckh explore: %s\n", msg);
            return CKH_EXIT_BAD_INPUT;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "ckh explore: expected exactly one scenario file\n");
        usage(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    return -1;
}

int ckh__cli_explore(int argc, char **argv, const char *argv0)
{
    struct ckh_xprog_options o;
    memset(&o, 0, sizeof o);
    o.argv0 = argv0;
    int st = parse_options(argc, argv, &o);
    if (st >= 0)
        return st;
    char msg[1200];
    const char *path = argv[optind];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "ckh explore: %s is a folder; explore takes one scenario file\n", path);
        return CKH_EXIT_BAD_INPUT;
    }
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    if (ckh_cli_parse_one(path, &sc, &err) != 0) {
        ckh_scn_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "ckh explore: %s\n", msg);
        return err.code == CKH_ENOMEM ? CKH_EXIT_INTERNAL : CKH_EXIT_BAD_INPUT;
    }
    if (ckh_pool_signals_install() != 0) {
        fprintf(stderr, "ckh explore: cannot catch signals: %s\n", strerror(errno));
        ckh_scenario_free(sc);
        return CKH_EXIT_INTERNAL;
    }
    struct ckh_xprog_result r;
    int rc = ckh_pool_interrupted() ? -EINTR : ckh_explore_program(sc, &o, &r, msg, sizeof msg);
    int sig = ckh_pool_interrupted(); /* the explorer's watch hands a signal on once it cleaned up */
    ckh_pool_signals_reset();
    if (sig) {
        if (rc == 0)
            ckh_xprog_result_free(&r);
        fprintf(stderr, "ckh explore: interrupted by signal %d (%s)\n", sig, strsignal(sig));
        ckh_scenario_free(sc);
        return CKH_EXIT_SIGNAL + sig;
    }
    if (rc == CKH_EFAILS_UNFAULTED) { /* a found bug: the fault-free run itself fails */
        printf("explore %s: the fault-free run of the job fails; no crash state was explored\n"
               "FAIL: fails without faults: %s\n    reproduce: %s run %s\n", path, msg, argv0, path);
        ckh_scenario_free(sc);
        return CKH_EXIT_FAILED;
    }
    if (rc) {
        fprintf(stderr, "ckh explore: %s\n", msg);
        ckh_scenario_free(sc);
        return rc == CKH_ELIMIT ? CKH_EXIT_INTERNAL : exit_of(rc);
    }
    /* The options that change the numbering of states go into the reproduction line. */
    static const char *const crash_names[] = {"", "all", "crash", "power-loss", "none"};
    char extra[96] = "";
    int used = 0;
    if (o.crashes != CKH_XPROG_CRASH_AUTO)
        used = snprintf(extra, sizeof extra, " --crashes %s", crash_names[o.crashes]);
    if (o.others_set && used >= 0 && (size_t)used < sizeof extra)
        snprintf(extra + used, sizeof extra - (size_t)used, " --others %s",
                 o.others == CKH_XPROG_OTHERS_RUNNING ? "running" : "killed");
    if (!r.orders_only)
        print_result(stdout, path, argv0, &r, o.only_state, extra);
    else if (o.only_order)
        printf("explore %s: %" PRIu64 " operations recorded; order %" PRIu64 " of %" PRIu64 " run alone\n", path,
               r.ops, o.only_order, r.orders);
    else
        printf("explore %s: %" PRIu64 " operations recorded; no crash state (crashes none)\n", path, r.ops);
    print_orders(stdout, path, argv0, &r, extra);
    if (o.keep_dir)
        printf("state %" PRIu64 "'s files are in %s\n", o.only_state, o.keep_dir);
    st = r.nfails || r.norder_fails ? CKH_EXIT_FAILED : CKH_EXIT_OK;
    ckh_xprog_result_free(&r);
    ckh_scenario_free(sc);
    return st;
}
