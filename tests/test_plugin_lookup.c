/* Where a plugin name leads (harness/exec/workloads.c, "finding a
 * plugin"; harness/exec/home.c): the one lookup order (beside the
 * scenario, CKH_PLUGIN_PATH, ckh's plugin folder), the files a bare name
 * shadows, the not-found message, a library's build id or content hash,
 * what a verdict is told about a job's plugins, and ckh's own folders in
 * the build tree. The installed layout is checked by
 * scripts/package-test.sh on the unpacked package. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/home.h"
#include "exec/workloads.h"
#include "model/scenario.h"
#include "report.h"

#ifndef CKH_PLUGINS_DIR
#define CKH_PLUGINS_DIR "plugins"
#endif
#ifndef CKH_BUILD_DIR
#define CKH_BUILD_DIR "."
#endif

static char work[PATH_MAX]; /* a private folder: a/ b/ c/ under it */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* work/rel into a static buffer (one of 8). */
static const char *at(const char *rel)
{
    static char buf[8][PATH_MAX + 64];
    static int slot;
    char *p = buf[slot++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", work, rel);
    return p;
}

static void setup(void)
{
    snprintf(work, sizeof work, "%s/ckh-lookup-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(work));
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(work, real));
    snprintf(work, sizeof work, "%s", real);
    for (const char *d = "a\0b\0c\0"; *d; d += strlen(d) + 1)
        ck_assert_int_eq(mkdir(at(d), 0755), 0);
    write_file(at("a/scn.yaml"), "job: {workload: libx.so}\n");
    unsetenv("CKH_PLUGIN_PATH");
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    ck_assert_int_eq(system(cmd), 0);
    unsetenv("CKH_PLUGIN_PATH");
}

/* A bare name: beside the scenario first, then CKH_PLUGIN_PATH in order;
 * the files further along are shadowed, in order; the same file reached
 * twice (a folder named twice, a hard link) shadows nothing. */
START_TEST(test_bare_name_order_and_shadowing)
{
    struct ckh_plugin_found f;
    char msg[2048], want[3 * PATH_MAX];
    write_file(at("b/libx.so"), "b");
    write_file(at("c/libx.so"), "c");
    char env[2 * PATH_MAX + 8];
    snprintf(env, sizeof env, "%s:%s", at("b"), at("c"));
    setenv("CKH_PLUGIN_PATH", env, 1);
    ck_assert_int_eq(ckh_workloads_plugin_find("libx.so", at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, at("b/libx.so"));
    ck_assert_str_eq(f.shadowed, at("c/libx.so"));

    write_file(at("a/libx.so"), "a");
    ck_assert_int_eq(ckh_workloads_plugin_find("libx.so", at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, at("a/libx.so"));
    snprintf(want, sizeof want, "%s\n%s", at("b/libx.so"), at("c/libx.so"));
    ck_assert_str_eq(f.shadowed, want);

    /* The scenario's folder named again in CKH_PLUGIN_PATH, and a hard
     * link of the file taken: the same file, nothing shadowed. */
    ck_assert_int_eq(unlink(at("c/libx.so")), 0);
    ck_assert_int_eq(link(at("a/libx.so"), at("c/libx.so")), 0);
    snprintf(env, sizeof env, "%s:%s", at("a"), at("c"));
    setenv("CKH_PLUGIN_PATH", env, 1);
    ck_assert_int_eq(ckh_workloads_plugin_find("libx.so", at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, at("a/libx.so"));
    ck_assert_str_eq(f.shadowed, "");

    /* No scenario file: the working folder stands for its folder. */
    char cwd[PATH_MAX];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(at("b")), 0);
    unsetenv("CKH_PLUGIN_PATH");
    ck_assert_int_eq(ckh_workloads_plugin_find("libx.so", NULL, &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, "./libx.so");
    ck_assert_int_eq(chdir(cwd), 0);
}
END_TEST

/* ckh's plugin folder comes last: a copy of one of its libraries on
 * CKH_PLUGIN_PATH is taken, and the build tree's one named shadowed. */
START_TEST(test_home_folder_last)
{
    struct ckh_plugin_found f;
    char msg[2048], home[PATH_MAX], want[PATH_MAX + 64];
    const char *lib = "libpl_workload_good.so";
    ck_assert(ckh_home_plugins_dir(home, sizeof home));
    snprintf(want, sizeof want, "%s/%s", home, lib);
    ck_assert_int_eq(ckh_workloads_plugin_find(lib, at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, want);
    ck_assert_str_eq(f.shadowed, "");
    write_file(at("b/libpl_workload_good.so"), "copy");
    setenv("CKH_PLUGIN_PATH", at("b"), 1);
    ck_assert_int_eq(ckh_workloads_plugin_find(lib, at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, at("b/libpl_workload_good.so"));
    ck_assert_str_eq(f.shadowed, want);
}
END_TEST

/* Not found: the name once, every place in order, the value of
 * CKH_PLUGIN_PATH; a file of that name in the working folder is pointed at. */
START_TEST(test_not_found_message)
{
    struct ckh_plugin_found f;
    char msg[4096], want[3 * PATH_MAX], home[PATH_MAX];
    ck_assert(ckh_home_plugins_dir(home, sizeof home));
    ck_assert_int_eq(ckh_workloads_plugin_find("libnone.so", at("a/scn.yaml"), &f, msg, sizeof msg),
                     CKH_ENOTFOUND);
    snprintf(want, sizeof want,
             "plugin libnone.so not found; looked beside the scenario (%s), in CKH_PLUGIN_PATH (unset) and in "
             "ckh's plugin folder (%s)",
             at("a"), home);
    ck_assert_str_eq(msg, want);
    setenv("CKH_PLUGIN_PATH", "/nowhere/1:/nowhere/2", 1);
    write_file(at("libnone.so"), "x");
    char cwd[PATH_MAX];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(work), 0);
    int rc = ckh_workloads_plugin_find("libnone.so", "a/scn.yaml", &f, msg, sizeof msg);
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_int_eq(rc, CKH_ENOTFOUND);
    snprintf(want, sizeof want,
             "plugin libnone.so not found; looked beside the scenario (a), in CKH_PLUGIN_PATH "
             "(/nowhere/1:/nowhere/2) and in ckh's plugin folder (%s); ./libnone.so is in the working folder: "
             "name it by its path from the scenario's folder, or add its folder to CKH_PLUGIN_PATH",
             home);
    ck_assert_str_eq(msg, want);
    /* Too many folders for the search path. */
    char many[40 * 4 + 1] = "";
    for (int i = 0; i < 40; i++)
        strcat(many, i ? ":/d" : "/d");
    setenv("CKH_PLUGIN_PATH", many, 1);
    ck_assert_int_eq(ckh_workloads_plugin_find("libnone.so", at("a/scn.yaml"), &f, msg, sizeof msg), CKH_ELIMIT);
    ck_assert_ptr_nonnull(strstr(msg, "CKH_PLUGIN_PATH names more than 30 folders"));
}
END_TEST

/* A path: relative to the scenario's folder ("./" dropped), absolute as
 * given; a miss names the path tried and the file beside the scenario. */
START_TEST(test_paths)
{
    struct ckh_plugin_found f;
    char msg[4096], want[3 * PATH_MAX];
    write_file(at("a/libx.so"), "a");
    write_file(at("b/libx.so"), "b");
    ck_assert_int_eq(ckh_workloads_plugin_find("./libx.so", at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, at("a/libx.so"));
    ck_assert_int_eq(ckh_workloads_plugin_find("../b/libx.so", at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, at("a/../b/libx.so"));
    ck_assert_int_eq(ckh_workloads_plugin_find(at("b/libx.so"), at("a/scn.yaml"), &f, msg, sizeof msg), 0);
    ck_assert_str_eq(f.path, at("b/libx.so"));
    ck_assert_int_eq(ckh_workloads_plugin_find("./lib/libx.so", at("a/scn.yaml"), &f, msg, sizeof msg),
                     CKH_ENOTFOUND);
    snprintf(want, sizeof want,
             "plugin ./lib/libx.so: no such file %s (a path is taken from the scenario's folder); %s is beside "
             "the scenario: write ./libx.so",
             at("a/lib/libx.so"), at("a/libx.so"));
    ck_assert_str_eq(msg, want);
    ck_assert_int_eq(ckh_workloads_plugin_find("/nowhere/libq.so", at("a/scn.yaml"), &f, msg, sizeof msg),
                     CKH_ENOTFOUND);
    ck_assert_str_eq(msg, "plugin /nowhere/libq.so: no such file");
    ck_assert_int_eq(ckh_workloads_plugin_find("", NULL, &f, msg, sizeof msg), CKH_EINVAL);
}
END_TEST

/* An ELF library's id is its GNU build id; two libraries differ; a file
 * without one has a content hash, the same for the same bytes. */
START_TEST(test_plugin_id)
{
    char a[160], b[160], c[160];
    char lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s/libpl_workload_good.so", CKH_PLUGINS_DIR);
    ckh_workloads_plugin_id(lib, a, sizeof a);
    ck_assert_msg(strncmp(a, "build-id ", 9) == 0, "%s", a);
    ck_assert_uint_ge(strlen(a + 9), 16);
    ck_assert_uint_eq(strspn(a + 9, "0123456789abcdef"), strlen(a + 9));
    snprintf(lib, sizeof lib, "%s/libpl_saver_good.so", CKH_PLUGINS_DIR);
    ckh_workloads_plugin_id(lib, b, sizeof b);
    ck_assert_str_ne(a, b);

    write_file(at("one"), "not an ELF file");
    write_file(at("two"), "not an ELF file");
    write_file(at("three"), "\x7f" "ELF but cut short");
    ckh_workloads_plugin_id(at("one"), a, sizeof a);
    ckh_workloads_plugin_id(at("two"), b, sizeof b);
    ckh_workloads_plugin_id(at("three"), c, sizeof c);
    ck_assert_msg(strncmp(a, "content-hash ", 13) == 0 && strlen(a) == 13 + 16, "%s", a);
    ck_assert_str_eq(a, b);
    ck_assert_msg(strncmp(c, "content-hash ", 13) == 0, "%s", c);
    ck_assert_str_ne(a, c);
    ckh_workloads_plugin_id(at("missing"), a, sizeof a);
    ck_assert_str_eq(a, "unreadable");
}
END_TEST

/* What a verdict is told: one entry per plugin name of the job, with the
 * absolute path, the id and the shadowed files; built-in names and names
 * that do not resolve add nothing. */
START_TEST(test_describe)
{
    write_file(at("a/libx.so"), "a");
    write_file(at("b/libx.so"), "b");
    setenv("CKH_PLUGIN_PATH", at("b"), 1);
    const char *text = "job: {workload: libx.so, backend: libnone.so, saver: {kind: ../b/libx.so}}\n";
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), at("a/scn.yaml"), NULL, &sc, &err), 0);
    ck_assert_int_eq(sc->job.workload_line, 1);
    ck_assert_int_eq(sc->job.workload_column, 17);
    ck_assert_int_eq(sc->job.backend_line, 1);
    ck_assert_int_eq(sc->job.backend_column, 35);
    ck_assert_int_eq(sc->job.saver_line, 1);
    ck_assert_int_eq(sc->job.saver_column, 61);
    struct ckh_report_result r;
    ckh_report_result_init(&r);
    ck_assert_int_eq(ckh_workloads_describe(sc, &r), 0);
    ck_assert_uint_eq(r.nplugins, 2);
    ck_assert_str_eq(r.plugins[0].role, "workload");
    ck_assert_str_eq(r.plugins[0].name, "libx.so");
    ck_assert_str_eq(r.plugins[0].path, at("a/libx.so"));
    ck_assert_msg(strncmp(r.plugins[0].id, "content-hash ", 13) == 0, "%s", r.plugins[0].id);
    ck_assert_str_eq(r.plugins[0].shadowed, at("b/libx.so"));
    ck_assert_str_eq(r.plugins[1].role, "saver");
    ck_assert_str_eq(r.plugins[1].path, at("b/libx.so")); /* absolute, no "a/../" */
    ck_assert_ptr_null(r.plugins[1].shadowed);
    ckh_report_result_clear(&r);
    ckh_scenario_free(sc);
    text = "job: {workload: seed-pipeline}\n";
    ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), at("a/scn.yaml"), NULL, &sc, &err), 0);
    ckh_report_result_init(&r);
    ck_assert_int_eq(ckh_workloads_describe(sc, &r), 0);
    ck_assert_uint_eq(r.nplugins, 0);
    ckh_scenario_free(sc);
    ck_assert_int_eq(ckh_workloads_describe(NULL, &r), CKH_EINVAL);
}
END_TEST

/* A test binary lies in the build folder: the build tree's folders. */
START_TEST(test_home_build_tree)
{
    char dir[PATH_MAX], want[PATH_MAX + 16], build[PATH_MAX];
    ck_assert(ckh_home_in_build_tree());
    ck_assert_ptr_nonnull(realpath(CKH_BUILD_DIR, build));
    ck_assert(ckh_home_plugins_dir(dir, sizeof dir));
    snprintf(want, sizeof want, "%s/plugins", build);
    ck_assert_str_eq(dir, want);
    ck_assert(ckh_home_docs_dir(dir, sizeof dir));
    snprintf(want, sizeof want, "%s/docs/CLI.md", dir);
    ck_assert_msg(access(want, R_OK) == 0, "%s", want);
    ck_assert(!ckh_home_plugins_dir(dir, 4)); /* does not fit */
    /* The installed layout, relative to the prefix. */
    ck_assert_msg(strncmp(ckh_home_plugins_rel(), "lib/", 4) == 0, "%s", ckh_home_plugins_rel());
    ck_assert_ptr_nonnull(strstr(ckh_home_plugins_rel(), "/ckh/plugins"));
    ck_assert_str_eq(ckh_home_docs_rel(), "share/doc/ckh");
}
END_TEST

static Suite *lookup_suite(void)
{
    Suite *s = suite_create("plugin-lookup");
    TCase *tc = tcase_create("lookup");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_bare_name_order_and_shadowing);
    tcase_add_test(tc, test_home_folder_last);
    tcase_add_test(tc, test_not_found_message);
    tcase_add_test(tc, test_paths);
    tcase_add_test(tc, test_plugin_id);
    tcase_add_test(tc, test_describe);
    tcase_add_test(tc, test_home_build_tree);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(lookup_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
