/* Scenario folders (harness/model/scenario_dir.c): what a folder listing
 * takes (*.yaml and *.yml regular files, through links, sorted) and leaves
 * (hidden names, other extensions, dangling links, FIFOs), a subfolder
 * that cannot be read becoming an entry whose error names it, a folder
 * nested past the limit, a FIFO given directly, files that do not parse
 * keeping their base name for --filter, and the filter's globs.
 *
 * Every case works in a private folder given as TMPDIR. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/tmpdir.h"
#include "model/scenario.h"
#include "search/fuzz.h"

static char base[256];

static void setup(void)
{
    ck_assert_int_eq(ckh_tmp_make(base, sizeof base), 0);
}

static void teardown(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/locked", base);
    chmod(p, 0700); /* so that it can be removed */
    ckh_tmp_remove(base);
}

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "w");
    ck_assert_msg(f != NULL, "%s: %s", p, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static void sub(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    ck_assert_int_eq(mkdir(p, 0700), 0);
}

static const char good[] = "job: {workload: seed-pipeline}\n";

START_TEST(test_listing_takes_and_leaves)
{
    char p[512], q[512];
    put("b.yml", good);
    put("a.yaml", good);
    put(".hidden.yaml", good);
    put("notes.txt", "x");
    put("yml", "x");       /* no extension, only the word */
    put(".yml", good);     /* hidden */
    sub("sub");
    put("sub/c.yaml", good);
    sub("sub/d.yaml"); /* a folder with a scenario's name is walked, not listed */
    put("sub/d.yaml/e.yaml", good);
    snprintf(p, sizeof p, "%s/a.yaml", base);
    snprintf(q, sizeof q, "%s/link.yaml", base);
    ck_assert_int_eq(symlink(p, q), 0);
    snprintf(q, sizeof q, "%s/dangling.yaml", base);
    ck_assert_int_eq(symlink("/nonexistent-ckh/x.yaml", q), 0);
    snprintf(q, sizeof q, "%s/fifo.yaml", base);
    ck_assert_int_eq(mkfifo(q, 0600), 0);

    char **paths = NULL;
    size_t n = 0;
    ck_assert_int_eq(ckh_scn_list_files(base, NULL, &paths, &n), 0);
    static const char *const want[] = {"a.yaml", "b.yml", "link.yaml", "sub/c.yaml", "sub/d.yaml/e.yaml"};
    ck_assert_uint_eq(n, 5);
    for (size_t i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", base, want[i]);
        ck_assert_str_eq(paths[i], p);
    }
    ckh_scn_paths_free(NULL, paths, n);

    /* a trailing slash is not doubled */
    snprintf(p, sizeof p, "%s/sub/", base);
    ck_assert_int_eq(ckh_scn_list_files(p, NULL, &paths, &n), 0);
    ck_assert_uint_eq(n, 2);
    snprintf(q, sizeof q, "%s/sub/c.yaml", base);
    ck_assert_str_eq(paths[0], q);
    ckh_scn_paths_free(NULL, paths, n);

    /* a FIFO named directly is never opened; a file is a list of one */
    snprintf(q, sizeof q, "%s/fifo.yaml", base);
    ck_assert_int_eq(ckh_scn_list_files(q, NULL, &paths, &n), CKH_EUNSUPPORTED);
    ck_assert_str_eq(ckh_scn_list_why(CKH_EUNSUPPORTED), "not a regular file or folder");
    snprintf(q, sizeof q, "%s/notes.txt", base);
    ck_assert_int_eq(ckh_scn_list_files(q, NULL, &paths, &n), 0);
    ck_assert_uint_eq(n, 1);
    ckh_scn_paths_free(NULL, paths, n);
    snprintf(q, sizeof q, "%s/none", base);
    ck_assert_int_eq(ckh_scn_list_files(q, NULL, &paths, &n), -ENOENT);
    ck_assert_str_eq(ckh_scn_list_why(-ENOENT), ckh_strerror(-ENOENT));
    ck_assert_int_eq(ckh_scn_list_files(NULL, NULL, &paths, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_list_files("", NULL, &paths, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_list_files(base, NULL, NULL, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_scn_list_files(base, NULL, &paths, NULL), CKH_EINVAL);
}
END_TEST

START_TEST(test_too_deep)
{
    char rel[4096] = "";
    size_t at = 0;
    for (int i = 0; i <= CKH_SCN_DIR_DEPTH_MAX; i++) {
        at += (size_t)snprintf(rel + at, sizeof rel - at, "%sd", i ? "/" : "");
        sub(rel);
    }
    char **paths = NULL;
    size_t n = 0;
    ck_assert_int_eq(ckh_scn_list_files(base, NULL, &paths, &n), CKH_ELIMIT);
    ck_assert_ptr_nonnull(strstr(ckh_scn_list_why(CKH_ELIMIT), "folders nested more than 64 deep"));
    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scn_set set;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scn_set_load(base, &so, NULL, &set, &err), CKH_ELIMIT);
    ck_assert_str_eq(err.file, base);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot list scenarios: folders nested more than 64 deep"));
}
END_TEST

START_TEST(test_set_entries_and_filter)
{
    put("one.yaml", "name: first\njob: {workload: seed-pipeline}\n");
    put("two.yml", "job: {workload: seed-pipeline, epocs: 1}\n");
    put("three.yaml", "name: third\njob: {workload: seed-pipeline}\n");
    sub("locked");
    put("locked/x.yaml", good);
    bool root = geteuid() == 0;
    char p[512];
    snprintf(p, sizeof p, "%s/locked", base);
    ck_assert_int_eq(chmod(p, 0), 0);

    struct ckh_scn_options so;
    ckh_fuzz_scn_options(&so);
    struct ckh_scn_set set;
    struct ckh_scn_error err;
    ck_assert_int_eq(ckh_scn_set_load(base, &so, NULL, &set, &err), 0);
    /* sorted by path: locked (an error, unless root reads it), one, three, two */
    size_t k = 0;
    if (!root) {
        ck_assert_uint_eq(set.n, 4);
        ck_assert_ptr_null(set.v[0].scn);
        ck_assert_str_eq(set.v[0].err.file, p);
        ck_assert_int_eq(set.v[0].err.code, -EACCES);
        ck_assert_str_eq(set.v[0].err.msg, "cannot read this folder: Permission denied");
        k = 1;
    } else {
        ck_assert_uint_eq(set.n, 4); /* locked/x.yaml parses */
        k = 1;
    }
    ck_assert_str_eq(set.v[k].scn->name, "first");
    ck_assert_str_eq(set.v[k + 1].scn->name, "third");
    ck_assert_ptr_null(set.v[k + 2].scn);
    ck_assert_int_eq(set.v[k + 2].err.code, CKH_EINVAL);
    ckh_scn_set_free(&set);
    ckh_scn_set_free(&set); /* twice: nothing left */
    ckh_scn_set_free(NULL);

    /* --filter: a file that does not parse is named by its base name */
    ck_assert_int_eq(ckh_scn_set_load(base, &so, "two", &set, &err), 0);
    ck_assert_uint_eq(set.n, 1);
    ck_assert_ptr_null(set.v[0].scn);
    ckh_scn_set_free(&set);
    ck_assert_int_eq(ckh_scn_set_load(base, &so, ",,nothing,th*", &set, &err), 0);
    ck_assert_uint_eq(set.n, 1);
    ck_assert_str_eq(set.v[0].scn->name, "third");
    ckh_scn_set_free(&set);

    ck_assert_int_eq(ckh_scn_set_load(NULL, &so, NULL, &set, &err), CKH_EINVAL);
    ck_assert_str_eq(err.msg, "no folder or no result given");
    ck_assert_int_eq(ckh_scn_set_load(base, &so, NULL, NULL, NULL), CKH_EINVAL);
    char q[512];
    snprintf(q, sizeof q, "%s/none", base);
    ck_assert_int_eq(ckh_scn_set_load(q, &so, NULL, &set, &err), -ENOENT);
    ck_assert_str_eq(err.file, q);

    /* the globs themselves */
    ck_assert(ckh_scn_filter_match(NULL, "x"));
    ck_assert(ckh_scn_filter_match("", "x"));
    ck_assert(!ckh_scn_filter_match("x", NULL));
    ck_assert(ckh_scn_filter_match("a/*", "a/b/c"));
    ck_assert(!ckh_scn_filter_match("a,b,", "c"));
    char longpat[700];
    memset(longpat, '*', sizeof longpat - 1);
    longpat[sizeof longpat - 1] = '\0';
    ck_assert(!ckh_scn_filter_match(longpat, "x")); /* a glob too long is never a match */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scenario_dir");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_listing_takes_and_leaves);
    tcase_add_test(tc, test_too_deep);
    tcase_add_test(tc, test_set_entries_and_filter);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
