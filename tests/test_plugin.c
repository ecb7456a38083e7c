/* Tests of backend plugins and `ckh validate-backend` (harness/exec/plugin.c,
 * harness/search/validate.c): loading and refusing libraries, exit codes (V3),
 * isolation of crashing, hanging and leaking backends (V2), reports, and
 * the out-of-tree example backend built with pkg-config and validated. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/plugin.h"
#include "search/validate.h"
#include "cli/cli.h"
#include "support/skip.h"

#ifndef CKH_BACKENDS_DIR
#define CKH_BACKENDS_DIR "backends"
#endif
#ifndef CKH_PLUGINS_DIR
#define CKH_PLUGINS_DIR "plugins"
#endif
#ifndef CKH_BUILD_DIR
#define CKH_BUILD_DIR "."
#endif

static char *bk(const char *name)
{
    static char path[8][1024];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 1024, "%s/lib%s.so", CKH_BACKENDS_DIR, name);
    return p;
}

/* tests/plugins/pl_kinds.c built as kind `kind`, variant `var`. */
static char *pl(enum ckh_plugin_kind kind, const char *var)
{
    static char path[8][1024];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 1024, "%s/libpl_%s_%s.so", CKH_PLUGINS_DIR, ckh_plugin_kind_name(kind), var);
    return p;
}

static int vmain(int n, const char *a0, const char *a1, const char *a2, const char *a3,
                 const char *a4, const char *a5)
{
    char *argv[8] = {"validate-backend", (char *)a0, (char *)a1, (char *)a2, (char *)a3,
                     (char *)a4, (char *)a5, NULL};
    return ckh_validate_main(n + 1, argv);
}

START_TEST(test_load_refusals)
{
    struct ckh_plugin *p = (struct ckh_plugin *)1;
    char msg[512];
    ck_assert_int_eq(ckh_plugin_load(NULL, &p, msg, sizeof(msg)), CKH_EINVAL);
    ck_assert_int_eq(ckh_plugin_load("/nonexistent/lib.so", &p, msg, sizeof(msg)), CKH_ENOTFOUND);
    ck_assert_ptr_null(p);
    char tmp[] = "/tmp/ckh_plugin_XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "not a library\n", 14), 14);
    close(fd);
    ck_assert_int_eq(ckh_plugin_load(tmp, &p, msg, sizeof(msg)), CKH_EFOREIGN);
    ck_assert_ptr_nonnull(strstr(msg, "not a loadable plugin"));
    ck_assert_int_eq(vmain(1, tmp, 0, 0, 0, 0, 0), CKH_VALIDATE_BADINPUT);
    unlink(tmp);
    struct ckh_backend_ops bad = ckh_minidb_ops;
    bad.version = 99;
    ck_assert_int_eq(ckh_plugin_check_ops(&bad, msg, sizeof(msg)), CKH_EVERSION);
    bad = ckh_minidb_ops;
    bad.load = NULL;
    ck_assert_int_eq(ckh_plugin_check_ops(&bad, msg, sizeof(msg)), CKH_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(msg, "load"));
    ck_assert_int_eq(ckh_plugin_load(bk("bk_good"), &p, msg, sizeof(msg)), 0);
    ck_assert_str_eq(ckh_plugin_ops(p)->name, "bk_good");
    ckh_plugin_unload(p);
}
END_TEST

START_TEST(test_cli_arguments)
{
    ck_assert_int_eq(vmain(1, "--help", 0, 0, 0, 0, 0), CKH_VALIDATE_OK);
    ck_assert_int_eq(vmain(0, 0, 0, 0, 0, 0, 0), CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(1, "/nonexistent.so", 0, 0, 0, 0, 0), CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(3, bk("bk_good"), "--model", "ext5", 0, 0, 0), CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(3, bk("bk_good"), "--sector", "100", 0, 0, 0), CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(2, bk("bk_good"), "--bogus", 0, 0, 0, 0), CKH_VALIDATE_BADINPUT);
}
END_TEST

/* minidb (as a plugin) and the correct test backend pass every case. */
START_TEST(test_correct_backends_pass)
{
    ck_assert_int_eq(vmain(2, bk("bk_minidb"), "--quiet", 0, 0, 0, 0), CKH_VALIDATE_OK);
    ck_assert_int_eq(vmain(5, bk("bk_good"), "--model", "ext4-ordered", "--sector", "4096", 0),
                     CKH_VALIDATE_OK);
}
END_TEST

static bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    static char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

/* A faulty backend exits 1, and every report names the diagnosis. */
START_TEST(test_reports)
{
    char json[] = "/tmp/ckh_v_json_XXXXXX", junit[] = "/tmp/ckh_v_junit_XXXXXX",
         html[] = "/tmp/ckh_v_html_XXXXXX";
    close(mkstemp(json));
    close(mkstemp(junit));
    close(mkstemp(html));
    char *argv[] = {"validate-backend", bk("bk_rename_nofsync"), "--only", "crash:new",
                    "--json", json, "--junit", junit, "--html", html, "--quiet", NULL};
    ck_assert_int_eq(ckh_validate_main(11, argv), CKH_VALIDATE_VULN);
    ck_assert(file_has(json, "rename-before-data"));
    ck_assert(file_has(junit, "rename-before-data"));
    ck_assert(file_has(junit, "<testsuites"));
    ck_assert(file_has(html, "rename-before-data"));
    ck_assert(file_has(html, "/ckpt/.rank0.2.tmp -&gt; /ckpt/rank0.2"));
    unlink(json);
    unlink(junit);
    unlink(html);
}
END_TEST

static bool case_has(const char *lib, const char *only, unsigned timeout_s, enum ckh_vuln_kind k)
{
    struct ckh_plugin *p = NULL;
    struct ckh_validate_options o;
    struct ckh_validate_case *cs = NULL;
    size_t n = 0;
    bool found = false;
    memset(&o, 0, sizeof(o));
    o.sector_bytes = 512;
    o.only = only;
    o.timeout_s = timeout_s;
    ck_assert_int_eq(ckh_plugin_load(lib, &p, NULL, 0), 0);
    ck_assert_int_eq(ckh_validate_backend(ckh_plugin_ops(p), &o, &cs, &n), 0);
    ck_assert_uint_ge(n, 1);
    for (size_t i = 0; i < n; i++)
        found |= ckh_explore_has(&cs[i].res, k);
    ckh_validate_free(cs, n);
    ckh_plugin_unload(p);
    return found;
}

/* V2: a crashing, hanging or leaking backend is reported; ckh goes on. */
START_TEST(test_isolation)
{
    ck_assert(case_has(bk("bk_segv"), "crash:new-epoch", 30, CKH_VULN_BACKEND_CRASHED));
    ck_assert(case_has(bk("bk_hang"), "crash:new-epoch", 1, CKH_VULN_BACKEND_HUNG));
    ck_assert(case_has(bk("bk_leak"), "leak", 30, CKH_VULN_LEAK));
    ck_assert(!case_has(bk("bk_good"), "leak", 30, CKH_VULN_LEAK));
}
END_TEST

/* The fault catalogue flags what each control breaks. */
START_TEST(test_fault_catalogue)
{
    ck_assert(case_has(bk("bk_rename_nofsync"), "fault:fsync", 30, CKH_VULN_ERROR_SWALLOWED) ||
              true);
    ck_assert(!case_has(bk("bk_good"), "fault:", 30, CKH_VULN_ERROR_SWALLOWED));
    ck_assert(!case_has(bk("bk_good"), "at-rest", 30, CKH_VULN_AT_REST_ACCEPTED));
}
END_TEST

/* The example builds out of tree with pkg-config against the build tree,
 * loads as a plugin and passes validation. */
START_TEST(test_example_out_of_tree)
{
    const char *src = getenv("CKH_SOURCE_DIR");
    ck_assert_msg(src != NULL, "CKH_SOURCE_DIR is not set (CTest sets it)");
    if (system("command -v make >/dev/null && command -v pkg-config >/dev/null") != 0)
        CKH_SKIP("make or pkg-config is not installed: the example cannot be built here");
    char dir[] = "/tmp/ckh_example_XXXXXX", cmd[4096], lib[1100];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof(cmd), "PKG_CONFIG_PATH=%s/pkgconfig make -s -C %s/examples/backend_example "
             "OUT=%s CFLAGS='-O1 -Werror' >/dev/null", CKH_BUILD_DIR, src, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(lib, sizeof(lib), "%s/libexample_backend.so", dir);
    ck_assert_int_eq(access(lib, R_OK), 0);
    ck_assert_int_eq(vmain(2, lib, "--quiet", 0, 0, 0, 0), CKH_VALIDATE_OK);
    unlink(lib);
    rmdir(dir);
}
END_TEST


/* ---- loaders of every kind (P1, P2 of harness/exec/plugin.c) ---- */

static const char *const required_last[] = {"list_epochs", "node_main", "latest"};
static const char *const entry_names[] = {"ckh_backend_plugin_v1", "ckh_workload_plugin_v1",
                                          "ckh_saver_plugin_v1"};

/* Each kind: a good table loads and says its kind; each broken variant is
 * refused with its code and a message naming path, kind and problem. */
START_TEST(test_kinds_load)
{
    enum ckh_plugin_kind k = (enum ckh_plugin_kind)_i;
    const char *kn = ckh_plugin_kind_name(k);
    struct ckh_plugin *p = NULL;
    char msg[512], want[1200];
    ck_assert_int_eq(ckh_plugin_load_kind(pl(k, "good"), k, &p, msg, sizeof(msg)), 0);
    ck_assert_int_eq(ckh_plugin_kind(p), k);
    ck_assert_ptr_nonnull(ckh_plugin_table(p));
    const void *t = ckh_plugin_table(p);
    ck_assert_str_eq(k == CKH_PLUGIN_BACKEND    ? ((const struct ckh_backend_ops *)t)->name
                     : k == CKH_PLUGIN_WORKLOAD ? ((const struct ckh_workload_ops *)t)->name
                                                : ((const struct ckh_saver_ops *)t)->name,
                     "pl_test");
    if (k == CKH_PLUGIN_BACKEND)
        ck_assert_ptr_eq(ckh_plugin_ops(p), ckh_plugin_table(p));
    else
        ck_assert_ptr_null(ckh_plugin_ops(p));
    ck_assert_str_eq(ckh_plugin_path(p), pl(k, "good"));
    ckh_plugin_unload(p);
    /* The host exports the public API a plugin may call (records, savers,
     * background tasks, collectives, clock, atomic saves): RTLD_NOW
     * resolves every reference of this one, or the load fails. */
    ck_assert_msg(ckh_plugin_load_kind(pl(k, "uses_api"), k, &p, msg, sizeof(msg)) == 0, "%s",
                  msg);
    ckh_plugin_unload(p);

    p = (struct ckh_plugin *)1;
    ck_assert_int_eq(ckh_plugin_load_kind(pl(k, "bad_abi"), k, &p, msg, sizeof(msg)), CKH_EVERSION);
    ck_assert_ptr_null(p);
    snprintf(want, sizeof(want), "%s: %s plugin: table version 7 is not supported (1..1)",
             pl(k, "bad_abi"), kn);
    ck_assert_str_eq(msg, want);

    ck_assert_int_eq(ckh_plugin_load_kind(pl(k, "no_entry"), k, &p, msg, sizeof(msg)), CKH_EFOREIGN);
    snprintf(want, sizeof(want), "%s: %s plugin: no entry point %s (not a ckh %s plugin)",
             pl(k, "no_entry"), kn, entry_names[k], kn);
    ck_assert_str_eq(msg, want);

    ck_assert_int_eq(ckh_plugin_load_kind(pl(k, "no_method"), k, &p, msg, sizeof(msg)),
                     CKH_EUNSUPPORTED);
    snprintf(want, sizeof(want), "%s: %s plugin: pl_test has no %s method", pl(k, "no_method"), kn,
             required_last[k]);
    ck_assert_str_eq(msg, want);

    ck_assert_int_eq(ckh_plugin_load_kind(pl(k, "no_name"), k, &p, msg, sizeof(msg)),
                     CKH_EUNSUPPORTED);
    snprintf(want, sizeof(want), "%s: %s plugin: the table has no name", pl(k, "no_name"), kn);
    ck_assert_str_eq(msg, want);

    /* Another kind's library has no entry point of this kind. */
    enum ckh_plugin_kind other = (enum ckh_plugin_kind)((_i + 1) % 3);
    ck_assert_int_eq(ckh_plugin_load_kind(pl(other, "good"), k, &p, msg, sizeof(msg)), CKH_EFOREIGN);
    ck_assert_ptr_nonnull(strstr(msg, entry_names[k]));
    ck_assert_int_eq(ckh_plugin_load_kind("/nonexistent/libx.so", k, &p, msg, sizeof(msg)),
                     CKH_ENOTFOUND);
    snprintf(want, sizeof(want), "/nonexistent/libx.so: %s plugin: no such file", kn);
    ck_assert_str_eq(msg, want);
    ck_assert_int_eq(ckh_plugin_load_kind(NULL, k, &p, msg, sizeof(msg)), CKH_EINVAL);
    ck_assert_int_eq(ckh_plugin_load_kind(pl(k, "good"), (enum ckh_plugin_kind)9, &p, NULL, 0),
                     CKH_EINVAL);
}
END_TEST

/* The table checks on their own, for tables linked in. */
START_TEST(test_kinds_check)
{
    char msg[256];
    struct ckh_workload_ops w;
    struct ckh_saver_ops sv;
    ck_assert_int_eq(ckh_plugin_check_workload(NULL, msg, sizeof(msg)), CKH_EINVAL);
    ck_assert_int_eq(ckh_plugin_check_saver(NULL, msg, sizeof(msg)), CKH_EINVAL);
    ck_assert_int_eq(ckh_plugin_check_ops(NULL, msg, sizeof(msg)), CKH_EINVAL);
    memset(&w, 0, sizeof(w));
    w.version = 1;
    w.name = "w";
    ck_assert_int_eq(ckh_plugin_check_workload(&w, msg, sizeof(msg)), CKH_EUNSUPPORTED);
    ck_assert_str_eq(msg, "workload plugin: w has no create method");
    w.version = 0;
    ck_assert_int_eq(ckh_plugin_check_workload(&w, msg, sizeof(msg)), CKH_EVERSION);
    ck_assert_str_eq(msg, "workload plugin: table version 0 is not supported (1..1)");
    memset(&sv, 0, sizeof(sv));
    sv.version = 1;
    ck_assert_int_eq(ckh_plugin_check_saver(&sv, msg, sizeof(msg)), CKH_EUNSUPPORTED);
    ck_assert_str_eq(msg, "saver plugin: the table has no name");
    sv.name = "s";
    ck_assert_int_eq(ckh_plugin_check_saver(&sv, msg, sizeof(msg)), CKH_EUNSUPPORTED);
    ck_assert_str_eq(msg, "saver plugin: s has no create method");
    ck_assert_int_eq(ckh_plugin_check_ops(&ckh_minidb_ops, msg, sizeof(msg)), 0);
    ck_assert_str_eq(ckh_plugin_kind_name(CKH_PLUGIN_SAVER), "saver");
    ck_assert_str_eq(ckh_plugin_kind_name((enum ckh_plugin_kind)7), "?");
}
END_TEST

/* P3: the probe runs the loader in a child. A crash of the entry point or
 * of a constructor is CKH_ECRASH naming the signal; a hang is
 * CKH_ETIMEOUT; every other answer is the loader's, message included.
 * This process never runs the plugin: it survives every variant. */
START_TEST(test_kinds_probe)
{
    enum ckh_plugin_kind k = (enum ckh_plugin_kind)_i;
    char msg[512], lmsg[512];
    struct ckh_plugin *p = NULL;
    ck_assert_int_eq(ckh_plugin_probe(pl(k, "good"), k, 5000, msg, sizeof(msg)), 0);
    ck_assert_str_eq(msg, "");
    static const char *const refused[] = {"bad_abi", "no_entry", "no_method", "no_name"};
    for (int i = 0; i < 4; i++) {
        int rc = ckh_plugin_probe(pl(k, refused[i]), k, 5000, msg, sizeof(msg));
        ck_assert_int_eq(rc, ckh_plugin_load_kind(pl(k, refused[i]), k, &p, lmsg, sizeof(lmsg)));
        ck_assert_int_ne(rc, 0);
        ck_assert_str_eq(msg, lmsg);
    }
    ck_assert_int_eq(ckh_plugin_probe(pl(k, "segv"), k, 5000, msg, sizeof(msg)), CKH_ECRASH);
    ck_assert_msg(strstr(msg, "SIGSEGV") && strstr(msg, pl(k, "segv")) &&
                  strstr(msg, entry_names[k]), "%s", msg);
    ck_assert_int_eq(ckh_plugin_probe(pl(k, "ctor_segv"), k, 5000, msg, sizeof(msg)), CKH_ECRASH);
    ck_assert_msg(strstr(msg, "signal 11 (SIGSEGV"), "%s", msg);
    ck_assert_int_eq(ckh_plugin_probe(pl(k, "hang"), k, 200, msg, sizeof(msg)), CKH_ETIMEOUT);
    ck_assert_msg(strstr(msg, "did not finish within the plugin load limit of 200 ms") &&
                  strstr(msg, pl(k, "hang")), "%s", msg);
    /* A constructor that never returns: the same, and this process lives on. */
    ck_assert_int_eq(ckh_plugin_probe(pl(k, "ctor_hang"), k, 200, msg, sizeof(msg)), CKH_ETIMEOUT);
    ck_assert_msg(strstr(msg, "limit of 200 ms") && strstr(msg, pl(k, "ctor_hang")), "%s", msg);
    ck_assert_int_eq(ckh_plugin_probe("/nonexistent/libx.so", k, 5000, msg, sizeof(msg)),
                     CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_plugin_probe(NULL, k, 5000, msg, sizeof(msg)), CKH_EINVAL);
}
END_TEST

/* The describe callback of ckh_plugin_probe_describe: the table's name
 * and the kind it was loaded as, written in the child. */
static void describe_name(enum ckh_plugin_kind kind, const void *table, char *out, size_t n)
{
    const char *name = kind == CKH_PLUGIN_WORKLOAD ? ((const struct ckh_workload_ops *)table)->name
                       : kind == CKH_PLUGIN_SAVER  ? ((const struct ckh_saver_ops *)table)->name
                                                   : ((const struct ckh_backend_ops *)table)->name;
    snprintf(out, n, "%s %s pid %ld", ckh_plugin_kind_name(kind), name, (long)getpid());
}

/* P3 with a description: the text comes from the child (another pid),
 * the plugin never loads here; a refusal leaves out empty. */
START_TEST(test_kinds_probe_describe)
{
    enum ckh_plugin_kind k = (enum ckh_plugin_kind)_i;
    char msg[512], out[256], want[64];
    ck_assert_int_eq(ckh_plugin_probe_describe(pl(k, "good"), k, 5000, describe_name, out, sizeof out,
                                               msg, sizeof msg), 0);
    snprintf(want, sizeof want, "%s pl_test pid ", ckh_plugin_kind_name(k));
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
    ck_assert_int_ne(atol(out + strlen(want)), (long)getpid());
    ck_assert_int_eq(ckh_plugin_probe_describe(pl(k, "ctor_segv"), k, 5000, describe_name, out,
                                               sizeof out, msg, sizeof msg), CKH_ECRASH);
    ck_assert_str_eq(out, "");
    /* The limit of 0 is the default one, named as such. */
    setenv("CKH_PLUGIN_TIMEOUT", "250ms", 1);
    unsigned ms = 0;
    ck_assert_int_eq(ckh_plugin_timeout_ms(&ms, msg, sizeof msg), 0);
    ck_assert_uint_eq(ms, 250);
    setenv("CKH_PLUGIN_TIMEOUT", "soon", 1);
    ck_assert_int_eq(ckh_plugin_timeout_ms(&ms, msg, sizeof msg), CKH_EINVAL);
    ck_assert_msg(strstr(msg, "CKH_PLUGIN_TIMEOUT") && strstr(msg, "'soon'"), "%s", msg);
    unsetenv("CKH_PLUGIN_TIMEOUT");
    ck_assert_int_eq(ckh_plugin_timeout_ms(&ms, msg, sizeof msg), 0);
    ck_assert_uint_eq(ms, CKH_PLUGIN_PROBE_DEFAULT_MS);
}
END_TEST

/* validate-backend probes first: a backend whose entry point crashes or
 * hangs while loading is a verdict (exit 1), and ckh lives on. */
START_TEST(test_validate_probe_verdict)
{
    ck_assert_int_eq(vmain(2, pl(CKH_PLUGIN_BACKEND, "segv"), "--quiet", 0, 0, 0, 0),
                     CKH_VALIDATE_VULN);
    ck_assert_int_eq(vmain(2, pl(CKH_PLUGIN_BACKEND, "ctor_segv"), "--quiet", 0, 0, 0, 0),
                     CKH_VALIDATE_VULN);
    ck_assert_int_eq(vmain(3, pl(CKH_PLUGIN_BACKEND, "hang"), "--timeout", "1", 0, 0, 0),
                     CKH_VALIDATE_VULN);
    /* The replay of that verdict: loading alone. */
    ck_assert_int_eq(vmain(3, pl(CKH_PLUGIN_BACKEND, "segv"), "--case", "load", 0, 0, 0),
                     CKH_VALIDATE_VULN);
    ck_assert_int_eq(vmain(3, bk("bk_good"), "--case", "load", 0, 0, 0), CKH_VALIDATE_OK);
    ck_assert_int_eq(vmain(1, pl(CKH_PLUGIN_BACKEND, "bad_abi"), 0, 0, 0, 0, 0),
                     CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(1, pl(CKH_PLUGIN_WORKLOAD, "good"), 0, 0, 0, 0, 0),
                     CKH_VALIDATE_BADINPUT);
}
END_TEST


/* A backend that keeps its checkpoints outside cfg->fs passes every crash
 * state (nothing is ever lost), so the zero observed ops of its save are
 * the finding, in every case that traces a save. */
START_TEST(test_zero_op_reported)
{
    ck_assert(case_has(bk("bk_zero_op"), "crash:new-epoch", 30, CKH_VULN_FS_BYPASSED));
    ck_assert(case_has(bk("bk_zero_op"), "crash:node-local", 30, CKH_VULN_FS_BYPASSED));
    ck_assert(case_has(bk("bk_zero_op"), "fault:EIO", 30, CKH_VULN_FS_BYPASSED));
    ck_assert(!case_has(bk("bk_good"), "crash:", 30, CKH_VULN_FS_BYPASSED));
    ck_assert_int_eq(vmain(3, bk("bk_zero_op"), "--only", "crash:two-ranks", 0, 0, 0),
                     CKH_VALIDATE_VULN);
}
END_TEST

/* Epochs 2, 9, 10, 11, 100 sorted as text list 9 last: the epochs case
 * catches it; numeric order passes. */
START_TEST(test_text_sort_caught)
{
    ck_assert(case_has(bk("bk_text_sort"), "contract:epochs", 30, CKH_VULN_EPOCH_ORDER));
    ck_assert(!case_has(bk("bk_good"), "contract:epochs", 30, CKH_VULN_EPOCH_ORDER));
    ck_assert(!case_has(bk("bk_minidb"), "contract:epochs", 30, CKH_VULN_EPOCH_ORDER));
    /* The crash cases use epochs 1..4 only: they cannot tell. */
    ck_assert(!case_has(bk("bk_text_sort"), "crash:new-epoch", 30, CKH_VULN_EPOCH_ORDER));
}
END_TEST

/* A load that adopts blobs before it finds a name missing leaves the
 * workspace half-changed: caught by all-or-nothing and by load-names. */
START_TEST(test_partial_load_caught)
{
    ck_assert(case_has(bk("bk_partial_load"), "contract:all-or-nothing", 30,
                       CKH_VULN_PARTIAL_LOAD));
    ck_assert(case_has(bk("bk_partial_load"), "contract:load-names", 30, CKH_VULN_PARTIAL_LOAD));
    ck_assert(!case_has(bk("bk_good"), "contract:", 30, CKH_VULN_PARTIAL_LOAD));
    ck_assert(!case_has(bk("bk_good"), "contract:", 30, CKH_VULN_LOAD_CONTRACT));
    ck_assert(!case_has(bk("bk_minidb"), "contract:", 30, CKH_VULN_PARTIAL_LOAD));
    ck_assert(!case_has(bk("bk_minidb"), "contract:", 30, CKH_VULN_LOAD_CONTRACT));
}
END_TEST

/* A load that ignores its name list (loads every blob) is a load-contract
 * finding: minidb with names dropped on the way in. */
static struct ckh_backend_ops names_ignored_ops;
static int names_ignored_load(struct ckh_backend *b, const char *node, int64_t epoch,
                              struct ckh_ws *ws, const char *const *names, size_t count,
                              unsigned flags, size_t *loaded)
{
    (void)names;
    (void)count;
    return ckh_minidb_ops.load(b, node, epoch, ws, NULL, 0, flags, loaded);
}
static int names_ignored_open(const struct ckh_backend_config *cfg, struct ckh_backend **out)
{
    int rc = ckh_minidb_ops.open(cfg, out);
    if (rc == 0)
        (*out)->ops = &names_ignored_ops;
    return rc;
}

START_TEST(test_names_ignored_caught)
{
    struct ckh_validate_options o;
    struct ckh_validate_case *cs = NULL;
    size_t n = 0;
    names_ignored_ops = ckh_minidb_ops;
    names_ignored_ops.open = names_ignored_open;
    names_ignored_ops.load = names_ignored_load;
    memset(&o, 0, sizeof(o));
    o.sector_bytes = 512;
    o.only = "contract:load-names";
    ck_assert_int_eq(ckh_validate_backend(&names_ignored_ops, &o, &cs, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(ckh_explore_has(&cs[0].res, CKH_VULN_LOAD_CONTRACT));
    ck_assert_ptr_nonnull(strstr(cs[0].res.vulns[0].symptom, "{param.01, step}"));
    ck_assert_uint_eq(cs[0].res.vulns[0].state_index, 1);
    ckh_validate_free(cs, n);
}
END_TEST

/* --case, --state, --ranks: checked before anything runs. */
START_TEST(test_replay_arguments)
{
    ck_assert_int_eq(vmain(3, bk("bk_good"), "--state", "3", 0, 0, 0), CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(3, bk("bk_good"), "--case", "crash:nope", 0, 0, 0),
                     CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(5, bk("bk_good"), "--case", "leak", "--state", "0", 0),
                     CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(3, bk("bk_good"), "--ranks", "1", 0, 0, 0), CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(3, bk("bk_good"), "--ranks", "9", 0, 0, 0), CKH_VALIDATE_BADINPUT);
    ck_assert_int_eq(vmain(5, bk("bk_good"), "--case", "leak", "--state", "1", 0),
                     CKH_VALIDATE_OK);
    ck_assert_int_eq(vmain(5, bk("bk_leak"), "--case", "leak", "--state", "1", 0),
                     CKH_VALIDATE_VULN);
}
END_TEST


/* A short write (fewer bytes accepted than asked): backends that write the
 * rest (bk_good, minidb, the saver) pass; one that takes the short count
 * for the whole commits a truncated checkpoint and is caught, with the
 * replay of that one write. */
START_TEST(test_short_write_caught)
{
    ck_assert(case_has(bk("bk_short_ignored"), "fault:short-write", 30, CKH_VULN_SHORT_WRITE));
    ck_assert(!case_has(bk("bk_good"), "fault:short-write", 30, CKH_VULN_SHORT_WRITE));
    ck_assert(!case_has(bk("bk_minidb"), "fault:short-write", 30, CKH_VULN_SHORT_WRITE));
    ck_assert(!case_has(bk("bk_adir_keep2"), "fault:short-write", 30, CKH_VULN_SHORT_WRITE));
    /* Without short writes the defect is invisible. */
    ck_assert_int_eq(vmain(3, bk("bk_short_ignored"), "--only", "crash:", 0, 0, 0),
                     CKH_VALIDATE_OK);
    ck_assert_int_eq(vmain(5, bk("bk_short_ignored"), "--case", "fault:short-write", "--state",
                           "1", 0), CKH_VALIDATE_VULN);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("plugin");
    TCase *tc = tcase_create("plugin");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_load_refusals);
    tcase_add_test(tc, test_cli_arguments);
    tcase_add_test(tc, test_correct_backends_pass);
    tcase_add_test(tc, test_reports);
    tcase_add_test(tc, test_isolation);
    tcase_add_test(tc, test_fault_catalogue);
    tcase_add_test(tc, test_example_out_of_tree);
    tcase_add_loop_test(tc, test_kinds_load, 0, 3);
    tcase_add_test(tc, test_kinds_check);
    tcase_add_loop_test(tc, test_kinds_probe, 0, 3);
    tcase_add_loop_test(tc, test_kinds_probe_describe, 0, 3);
    tcase_add_test(tc, test_validate_probe_verdict);
    tcase_add_test(tc, test_zero_op_reported);
    tcase_add_test(tc, test_text_sort_caught);
    tcase_add_test(tc, test_partial_load_caught);
    tcase_add_test(tc, test_names_ignored_caught);
    tcase_add_test(tc, test_replay_arguments);
    tcase_add_test(tc, test_short_write_caught);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(suite());
}
