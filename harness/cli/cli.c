/* The `ckh` command, its verbs listed once in cli/verbs.h (one table
 * dispatches them and prints the help): run (cli_run.c), list, replay, fuzz
 * (search/fuzz.c), shrink (search/shrink.c), validate-backend
 * (search/validate.c), help, version.
 *
 * Exit status (docs/CLI.md): 0 every scenario passed; 1 some oracle failed
 * (the code under test misbehaved); 2 bad input (a malformed scenario, an
 * unknown option, a missing file); 3 an internal error (ckh itself failed
 * or a scenario crashed a worker); 128+N interrupted by signal N.
 *
 * Scenario files are parsed in workers of the pool (cli_load.c), so a
 * huge or hostile file is one error line, never a hung ckh.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckh/defects.h"
#include "ckh/err.h"
#include "ckh/ref.h"
#include "ckh/version.h"
#include "cli/cli_load.h"
#include "cli/opt.h"
#include "model/fault.h"
#include "judge/oracle.h"
#include "exec/home.h"
#include "exec/workloads.h"
#include "exec/pool.h"
#include "exec/runner.h"
#include "model/scenario.h"
#include "cli/verbs.h"
#include "search/fuzz.h"
#include "search/shrink.h"

/* ---- ckh list ---- */

/* ---- `ckh list`: one category table prints the usage and the lists ---- */

static int list_scenarios(const char *dir)
{
    struct ckh_cli_load l = {.verb = "list", .jobs = 1, .mem_bytes = CKH_POOL_MEM_DEFAULT};
    struct ckh_cli_scn *v = NULL;
    size_t n = 0;
    int code = CKH_EXIT_OK;
    char *paths[] = {(char *)dir};
    int rc = ckh_cli_load_scenarios(&l, paths, 1, &v, &n, &code);
    if (rc) {
        fprintf(stderr, "ckh list: %s\n", ckh_strerror(rc));
        return CKH_EXIT_INTERNAL;
    }
    if (code != CKH_EXIT_OK)
        return code; /* the folder could not be listed: said on stderr */
    printf("scenarios (%s):\n", dir);
    for (size_t i = 0; i < n; i++) {
        if (!v[i].error) {
            printf("  %-44s %s\n", v[i].name, v[i].description ? v[i].description : "");
        } else {
            printf("  %-44s (error) %s\n", v[i].path, v[i].error);
            code = code > v[i].status ? code : v[i].status;
        }
    }
    ckh_cli_scns_free(v, n);
    return code;
}

/* Under a plugin's line in `ckh list`: the file that name loaded (looked
 * up as a scenario in the working folder would: exec/workloads.h), its
 * build id, and the files of that name it shadows. */
static void print_plugin_file(const char *name)
{
    struct ckh_plugin_found found;
    char path[PATH_MAX], id[160];
    if (ckh_workloads_plugin_find(name, NULL, &found, NULL, 0) != 0)
        return;
    if (!realpath(found.path, path))
        snprintf(path, sizeof path, "%s", found.path);
    ckh_workloads_plugin_id(path, id, sizeof id);
    printf("  %-28s file %s (%s)\n", "", path, id);
    for (char *line = found.shadowed, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        if ((nl = strchr(line, '\n')) != NULL)
            *nl = '\0';
        char abs[PATH_MAX];
        printf("  %-28s warning: %s also names %s, shadowed (the first file on the search path is taken)\n",
               "", name, realpath(line, abs) ? abs : line);
    }
}

/* `ckh list workloads [LIB.so...]`: the built-in workloads, then what
 * the plugin libraries named after the category are. */
static int list_workloads(int argc, char **argv, bool all)
{
    printf("workloads:\n");
    for (size_t i = 0; ckh_workloads_at(i); i++)
        printf("  %-28s %s\n", ckh_workloads_at(i)->name, ckh_workloads_at(i)->description);
    for (int a = 2; !all && a < argc; a++) {
        const struct ckh_workload_ops *wl = NULL;
        char msg[1024] = "";
        if (ckh_workloads_lookup(argv[a], NULL, &wl, msg, sizeof msg) != 0) {
            fprintf(stderr, "ckh list: %s\n", msg);
            return CKH_EXIT_BAD_INPUT;
        }
        printf("  %-28s %s\n  %-28s plugin %s, ABI version %d:%s%s%s%s%s%s\n", wl->name, wl->description, "",
               argv[a], wl->version, wl->flags & CKH_WL_COLLECTIVE ? " collective" : "",
               wl->flags & CKH_WL_STEP_BASED ? " step-based" : " epoch-based",
               wl->flags & CKH_WL_USES_BACKEND ? " backend" : "", wl->flags & CKH_WL_USES_SAVER ? " saver" : "",
               wl->latest_link ? " latest-pointer" : "", wl->set_world ? " resizable" : "");
        print_plugin_file(argv[a]);
    }
    return CKH_EXIT_OK;
}

/* `ckh list backends [LIB.so...]`: as workloads. */
static int list_backends(int argc, char **argv, bool all)
{
    printf("backends:\n");
    for (size_t i = 0; ckh_backend_at(i); i++)
        printf("  %-28s version %d\n", ckh_backend_at(i)->name, ckh_backend_at(i)->version);
    for (int a = 2; !all && a < argc; a++) {
        const void *t = NULL;
        char msg[1024] = "";
        if (ckh_workloads_plugin(argv[a], NULL, CKH_PLUGIN_BACKEND, &t, msg, sizeof msg) != 0) {
            fprintf(stderr, "ckh list: %s\n", msg);
            return CKH_EXIT_BAD_INPUT;
        }
        const struct ckh_backend_ops *bk = t;
        printf("  %-28s plugin %s, ABI version %d\n", bk->name, argv[a], bk->version);
        print_plugin_file(argv[a]);
    }
    return CKH_EXIT_OK;
}

/* `ckh list savers [LIB.so...]`: as workloads. */
static int list_savers(int argc, char **argv, bool all)
{
    printf("savers:\n");
    const char *summary = NULL;
    for (size_t i = 0; ckh_savers_at(i, &summary); i++)
        printf("  %-28s %s\n", ckh_savers_at(i, NULL)->name, summary);
    for (int a = 2; !all && a < argc; a++) {
        const void *t = NULL;
        char msg[1024] = "";
        if (ckh_workloads_plugin(argv[a], NULL, CKH_PLUGIN_SAVER, &t, msg, sizeof msg) != 0) {
            fprintf(stderr, "ckh list: %s\n", msg);
            return CKH_EXIT_BAD_INPUT;
        }
        const struct ckh_saver_ops *sv = t;
        printf("  %-28s plugin %s, ABI version %d:%s%s%s%s\n", sv->name, argv[a], sv->version,
               sv->check ? " check" : "", sv->latest_path ? " latest-pointer" : "",
               sv->resume ? " resume" : "", sv->view_leader ? " view-leader" : "");
        print_plugin_file(argv[a]);
    }
    return CKH_EXIT_OK;
}

static int list_faults(int argc, char **argv, bool all)
{
    (void)argc, (void)argv, (void)all;
    printf("faults:\n");
    for (size_t i = 0; ckh_fault_at(i); i++) /* the descriptors (harness/model/faults/) */
        printf("  %-28s %s\n", ckh_fault_at(i)->name, ckh_fault_at(i)->summary);
    return CKH_EXIT_OK;
}

static int list_defects(int argc, char **argv, bool all)
{
    (void)argc, (void)argv, (void)all;
    printf("defects:\n");
    for (int i = 0; i < CKH_DEFECT__COUNT; i++)
        printf("  %-36s [%s] %s\n", ckh_defect_name((enum ckh_defect)i), ckh_defect_component((enum ckh_defect)i),
               ckh_defect_desc((enum ckh_defect)i));
    return CKH_EXIT_OK;
}

static int list_oracles(int argc, char **argv, bool all)
{
    (void)argc, (void)argv, (void)all;
    printf("oracles:\n");
    for (size_t i = 0; ckh_oracle_at(i); i++)
        printf("  %-28s %s\n", ckh_oracle_at(i)->name, ckh_oracle_at(i)->description);
    return CKH_EXIT_OK;
}

/* `ckh list scenarios [PATH]`; with everything, ./scenarios when it is there. */
static int list_scenarios_of(int argc, char **argv, bool all)
{
    const char *dir = !all && argc > 2 ? argv[2] : "scenarios";
    struct stat st;
    if (all && stat(dir, &st) != 0)
        return CKH_EXIT_OK;
    return list_scenarios(dir);
}

/* The categories of `ckh list`, in the order everything is listed. */
static const struct {
    const char *name;  /* the category */
    const char *args;  /* what may follow it in the usage line */
    int (*print)(int argc, char **argv, bool all);
} list_categories[] = {
    {"workloads", " [LIB.so...]", list_workloads}, {"backends", " [LIB.so...]", list_backends},
    {"savers", " [LIB.so...]", list_savers},       {"faults", "", list_faults},
    {"defects", "", list_defects},                 {"oracles", "", list_oracles},
    {"scenarios", " [PATH]", list_scenarios_of},
};
#define NLIST_CATEGORIES (sizeof list_categories / sizeof list_categories[0])

static void print_usage_list(FILE *f)
{
    fprintf(f, "usage: ckh list [");
    for (size_t i = 0; i < NLIST_CATEGORIES; i++)
        fprintf(f, "%s%s%s", i ? "|" : "", list_categories[i].name, list_categories[i].args);
    fprintf(f, "]\n"
               "\n"
               "Lists what ckh knows; with no argument, everything (scenarios from ./scenarios).\n");
}

static int cmd_list(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : NULL;
    if (what && (strcmp(what, "-h") == 0 || strcmp(what, "--help") == 0)) {
        print_usage_list(stdout);
        return CKH_EXIT_OK;
    }
    bool known = false;
    for (size_t i = 0; i < NLIST_CATEGORIES; i++) {
        if (what && strcmp(what, list_categories[i].name) != 0)
            continue;
        known = true;
        int rc = list_categories[i].print(argc, argv, what == NULL);
        if (rc != CKH_EXIT_OK)
            return rc;
    }
    if (!known) {
        fprintf(stderr, "ckh list: unknown category '%s'\n", what);
        print_usage_list(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    return CKH_EXIT_OK;
}

/* ---- ckh replay ---- */

static void print_usage_replay(FILE *f)
{
    fprintf(f, "usage: ckh replay FILE [--seed N] [--node NAME] [--op OP]\n"
               "\n"
               "Runs the scenario's faulted job once more (its restarts included) and prints\n"
               "its trace, one operation per line: virtual time, node, operation, arguments,\n"
               "result. --node and --op keep only one node's or one operation's lines.\n");
}

static int replay_options(int argc, char **argv, struct ckh_run_options *ro, const char **node,
                          const char **op)
{
    static const struct option longopts[] = {
        {"seed", required_argument, NULL, 's'}, {"node", required_argument, NULL, 'n'},
        {"op", required_argument, NULL, 'o'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0; /* 0: GNU getopt re-initializes (ckh_cli_main may run more than once) */
    char msg[256];
    int c;
    while ((c = getopt_long(argc, argv, "s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (ckh_opt_u64("seed", optarg, 0, UINT64_MAX, &ro->seed, msg, sizeof msg) != 0) {
                fprintf(stderr, "ckh replay: %s\n", msg);
                return CKH_EXIT_BAD_INPUT;
            }
            ro->seed_set = true;
            break;
        case 'n': *node = optarg; break;
        case 'o': *op = optarg; break;
        case 'h': print_usage_replay(stdout); return CKH_EXIT_OK;
        default: print_usage_replay(stderr); return CKH_EXIT_BAD_INPUT;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "ckh replay: expected exactly one scenario file\n");
        print_usage_replay(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    return -1;
}

static int cmd_replay(int argc, char **argv)
{
    struct ckh_run_options ro;
    memset(&ro, 0, sizeof ro);
    const char *node = NULL, *op = NULL;
    int st = replay_options(argc, argv, &ro, &node, &op);
    if (st >= 0)
        return st;
    const char *path = argv[optind];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "ckh replay: %s is a folder; replay takes one scenario file\n", path);
        return CKH_EXIT_BAD_INPUT;
    }
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    if (ckh_cli_parse_one(path, &sc, &err) != 0) {
        char msg[800];
        ckh_scn_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "ckh replay: %s\n", msg);
        return err.code == CKH_ENOMEM ? CKH_EXIT_INTERNAL : CKH_EXIT_BAD_INPUT;
    }
    char msg[600];
    int rc = ckh_harness_replay(sc, &ro, node, op, stdout, msg, sizeof msg);
    if (rc != 0)
        fprintf(stderr, "ckh replay: %s: %s\n", path, msg);
    ckh_scenario_free(sc);
    if (rc == 0)
        return CKH_EXIT_OK;
    return rc == CKH_EINVAL || rc == CKH_EPARSE || rc == -ENOENT ? CKH_EXIT_BAD_INPUT
                                                                  : CKH_EXIT_INTERNAL;
}

/* ---- the verbs (cli/verbs.h) ---- */

static int verb_run(int argc, char **argv, const char *argv0)
{
    return ckh__cli_run(argc, argv, argv0);
}

static int verb_list(int argc, char **argv, const char *argv0)
{
    (void)argv0;
    return cmd_list(argc, argv);
}

static int verb_replay(int argc, char **argv, const char *argv0)
{
    (void)argv0;
    return cmd_replay(argc, argv);
}

static int verb_validate_backend(int argc, char **argv, const char *argv0)
{
    (void)argv0;
    return ckh_validate_main(argc, argv);
}

static int verb_explore(int argc, char **argv, const char *argv0)
{
    return ckh__cli_explore(argc, argv, argv0);
}

static int verb_fuzz(int argc, char **argv, const char *argv0)
{
    (void)argv0;
    return ckh_fuzz_main(argc, argv);
}

static int verb_shrink(int argc, char **argv, const char *argv0)
{
    (void)argv0;
    return ckh_shrink_main(argc, argv);
}

static int verb_help(int argc, char **argv, const char *argv0);

static int verb_version(int argc, char **argv, const char *argv0)
{
    (void)argc, (void)argv, (void)argv0;
    printf("ckh %s\n", CKH_VERSION_STRING);
    return CKH_EXIT_OK;
}

/* One verb: what dispatches it and its line in the help. */
struct verb {
    const char *name;     /* as typed */
    const char *aliases;  /* other spellings, space-separated ("" none) */
    const char *synopsis; /* the help line's left column */
    const char *summary;  /* its right column ("\n" continues it) */
    int (*run)(int argc, char **argv, const char *argv0); /* argv[0]: the verb */
};

static const struct verb verbs[] = {
#define CKH__VERB_ROW(id, name, aliases, synopsis, summary) {name, aliases, synopsis, summary, verb_##id},
    CKH_VERB_LIST(CKH__VERB_ROW)
#undef CKH__VERB_ROW
};

/* Whether word is one of the space-separated words of list. */
static bool in_words(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; n && (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static const struct verb *verb_find(const char *word)
{
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strcmp(verbs[i].name, word) == 0 || in_words(verbs[i].aliases, word))
            return &verbs[i];
    return NULL;
}

/* ---- entry ---- */

static void print_usage(FILE *f)
{
    fputs("usage: ckh <command> [options]\n"
          "\n"
          "ckh runs checkpoint/resume code in a deterministic simulator, injects\n"
          "failures, resumes the job and checks it against reference results.\n"
          "\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        const char *line = verbs[i].summary;
        fprintf(f, "  %-24s", verbs[i].synopsis);
        for (const char *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1)
            fprintf(f, "%.*s\n  %-24s", (int)(nl - line), line, "");
        fprintf(f, "%s\n", line);
    }
    /* Where the pages are: the source tree for the build tree's ckh,
     * PREFIX/share/doc/ckh for an installed one (exec/home.h). */
    char docs[PATH_MAX];
    if (!ckh_home_docs_dir(docs, sizeof docs))
        snprintf(docs, sizeof docs, ".");
    fprintf(f,
            "\n"
            "Reference: %s/docs/CLI.md. Scenario format: %s/docs/SCENARIOS.md.\n"
            "All the documentation: %s (README.md, docs/); installed, also man ckh.\n",
            docs, docs, docs);
}

/* `ckh help [COMMAND]` (also -h, --help): the help, or COMMAND's;
 * `ckh --help-man`: the manual page (cli_man.c). */
static int verb_help(int argc, char **argv, const char *argv0)
{
    if (strcmp(argv[0], "--help-man") == 0)
        return ckh__cli_man(stdout, argv0);
    if (argc > 1 && strcmp(argv[0], "help") == 0)
        return ckh_cli_main(3, (char *[]){(char *)argv0, argv[1], (char *)"--help", NULL});
    print_usage(stdout);
    return CKH_EXIT_OK;
}

int ckh_cli_main(int argc, char **argv)
{
    const char *argv0 = argc > 0 ? argv[0] : "ckh";
    if (argc < 2) {
        print_usage(stderr);
        return CKH_EXIT_BAD_INPUT;
    }
    const struct verb *v = verb_find(argv[1]);
    if (v)
        return v->run(argc - 1, argv + 1, argv0);
    fprintf(stderr, "ckh: unknown command '%s'\n", argv[1]);
    print_usage(stderr);
    return CKH_EXIT_BAD_INPUT;
}
