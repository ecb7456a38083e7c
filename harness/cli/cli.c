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
#include <limits.h>
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
#include "exec/plugin.h"
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

/* ---- plugins named after a category: described in a probe's child ---- */

/* Copies text into out with control characters shown as '?' (a plugin's
 * strings are its own), then a '\n'; returns the new length. */
static size_t put_field(char *out, size_t n, size_t at, const char *text)
{
    for (const char *c = text ? text : ""; *c && at + 2 < n; c++)
        out[at++] = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
    if (at + 1 < n)
        out[at++] = '\n';
    out[at < n ? at : n - 1] = '\0';
    return at;
}

/* In the probe's child: "name\ndescription\nversion\nfeatures\n" of the
 * loaded table (nothing of the plugin runs in ckh's own process). */
static void describe_plugin(enum ckh_plugin_kind kind, const void *table, char *out, size_t n)
{
    char version[16], feat[160];
    const char *name = "", *desc = "";
    feat[0] = '\0';
    if (kind == CKH_PLUGIN_WORKLOAD) {
        const struct ckh_workload_ops *wl = table;
        name = wl->name, desc = wl->description;
        snprintf(version, sizeof version, "%d", wl->version);
        snprintf(feat, sizeof feat, "%s%s%s%s%s%s", wl->flags & CKH_WL_COLLECTIVE ? " collective" : "",
                 wl->flags & CKH_WL_STEP_BASED ? " step-based" : " epoch-based",
                 wl->flags & CKH_WL_USES_BACKEND ? " backend" : "", wl->flags & CKH_WL_USES_SAVER ? " saver" : "",
                 wl->latest_link ? " latest-pointer" : "", wl->set_world ? " resizable" : "");
    } else if (kind == CKH_PLUGIN_SAVER) {
        const struct ckh_saver_ops *sv = table;
        name = sv->name;
        snprintf(version, sizeof version, "%d", sv->version);
        snprintf(feat, sizeof feat, "%s%s%s%s", sv->check ? " check" : "", sv->latest_path ? " latest-pointer" : "",
                 sv->resume ? " resume" : "", sv->view_leader ? " view-leader" : "");
    } else {
        const struct ckh_backend_ops *bo = table;
        name = bo->name;
        snprintf(version, sizeof version, "%d", bo->version);
    }
    size_t at = 0;
    out[0] = '\0';
    at = put_field(out, n, at, name);
    at = put_field(out, n, at, desc);
    at = put_field(out, n, at, version);
    put_field(out, n, at, feat);
}

/* Prints the plugin libraries argv[2..] of `kind` as loaded in a probe's
 * child within the plugin load limit. A library that is missing, not a
 * plugin of that kind, crashes or hangs while it loads is bad input (exit
 * 2), said on stderr with its path. */
static int list_plugins(int argc, char **argv, enum ckh_plugin_kind kind)
{
    unsigned limit_ms = 0;
    char msg[PATH_MAX + 600] = "";
    if (ckh_plugin_timeout_ms(&limit_ms, msg, sizeof msg) != 0) {
        fprintf(stderr, "ckh list: %s\n", msg);
        return CKH_EXIT_BAD_INPUT;
    }
    for (int a = 2; a < argc; a++) {
        char path[PATH_MAX], text[CKH_PLUGIN_DESCRIBE_BYTES];
        int rc = ckh_workloads_plugin_path(argv[a], NULL, path, sizeof path, msg, sizeof msg);
        if (rc == 0)
            rc = ckh_plugin_probe_describe(path, kind, limit_ms, describe_plugin, text, sizeof text, msg,
                                           sizeof msg);
        if (rc != 0) {
            fprintf(stderr, "ckh list: %s\n", msg[0] ? msg : ckh_strerror(rc));
            return rc == CKH_ENOMEM || rc == CKH_EINTERNAL ? CKH_EXIT_INTERNAL : CKH_EXIT_BAD_INPUT;
        }
        char *f[4] = {text, "", "", ""};
        for (int i = 1; i < 4; i++) {
            char *nl = strchr(f[i - 1], '\n');
            if (!nl)
                break;
            *nl = '\0';
            f[i] = nl + 1;
        }
        char *last = strchr(f[3], '\n');
        if (last)
            *last = '\0';
        if (kind == CKH_PLUGIN_WORKLOAD)
            printf("  %-28s %s\n  %-28s plugin %s, ABI version %s:%s\n", f[0], f[1], "", argv[a], f[2], f[3]);
        else
            printf("  %-28s plugin %s, ABI version %s%s%s\n", f[0], argv[a], f[2], f[3][0] ? ":" : "", f[3]);
        print_plugin_file(argv[a]);
    }
    return CKH_EXIT_OK;
}

/* `ckh list workloads [LIB.so...]`: the built-in workloads, then what
 * the plugin libraries named after the category are. */
static int list_workloads(int argc, char **argv, bool all)
{
    printf("workloads:\n");
    for (size_t i = 0; ckh_workloads_at(i); i++)
        printf("  %-28s %s\n", ckh_workloads_at(i)->name, ckh_workloads_at(i)->description);
    return all ? CKH_EXIT_OK : list_plugins(argc, argv, CKH_PLUGIN_WORKLOAD);
}

/* `ckh list backends [LIB.so...]`: as workloads. */
static int list_backends(int argc, char **argv, bool all)
{
    printf("backends:\n");
    for (size_t i = 0; ckh_backend_at(i); i++)
        printf("  %-28s version %d\n", ckh_backend_at(i)->name, ckh_backend_at(i)->version);
    return all ? CKH_EXIT_OK : list_plugins(argc, argv, CKH_PLUGIN_BACKEND);
}

/* `ckh list savers [LIB.so...]`: as workloads. */
static int list_savers(int argc, char **argv, bool all)
{
    printf("savers:\n");
    const char *summary = NULL;
    for (size_t i = 0; ckh_savers_at(i, &summary); i++)
        printf("  %-28s %s\n", ckh_savers_at(i, NULL)->name, summary);
    return all ? CKH_EXIT_OK : list_plugins(argc, argv, CKH_PLUGIN_SAVER);
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
    char msg[PATH_MAX + 1200];
    int rc = ckh_harness_replay(sc, &ro, node, op, stdout, msg, sizeof msg);
    if (rc != 0) { /* "file: why", "file:line:col: why", or a message naming the file already */
        bool named = strncmp(msg, path, strlen(path)) == 0, at = msg[0] >= '0' && msg[0] <= '9';
        fprintf(stderr, "ckh replay: %s%s%s\n", named ? "" : path, named ? "" : at ? ":" : ": ", msg);
    }
    ckh_scenario_free(sc);
    if (rc == 0)
        return CKH_EXIT_OK;
    return ckh_err_is_bad_input(rc) ? CKH_EXIT_BAD_INPUT : CKH_EXIT_INTERNAL;
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
