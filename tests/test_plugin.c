/* Tests of backend plugins and `ckh validate-backend` (harness/run/plugin.c,
 * harness/search/validate.c): loading and refusing libraries, exit codes (V3),
 * isolation of crashing, hanging and leaking backends (V2), reports, and
 * the out-of-tree example backend built with pkg-config and validated. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "run/plugin.h"
#include "search/validate.h"

#ifndef CKH_BACKENDS_DIR
#define CKH_BACKENDS_DIR "backends"
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
    if (!src || system("command -v make >/dev/null && command -v pkg-config >/dev/null") != 0)
        return; /* cannot build here (no source dir or tools): nothing to check */
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
