/* The reference-run cache (harness/exec/cache.c): a scenario's fault-free
 * run is kept in the cache folder (struct ckh_run_options.cache_dir) and
 * read back by the next scenario with the same job. What is checked here
 * is what a user relies on: a cached reference is used (a changed one
 * changes the verdict), and a damaged or foreign cache file is never
 * trusted: the run is done again, the verdict is the one without a cache,
 * and the file is written anew, whole. Nothing here is about time. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "exec/records.h"
#include "exec/runner.h"
#include "exec/tmpdir.h"
#include "judge/judge.h"
#include "model/scenario.h"
#include "report.h"
#include "support/skip.h"

#define HDR_WORDS 10 /* the cache file's header: 10 uint64 (cache.c) */

static const char *const scn = "name: cached\n"
                               "job: {workload: seed-pipeline, nodes: 3}\n"
                               "expect: {values: {epochs: 4, total: 145}}\n";

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ckh-test-ref-cache-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    ck_assert_int_eq(ckh_tmp_remove(dir), 0);
}

/* Runs scn with the cache in cache (NULL: none); fills *r. */
static int run(const char *cache, struct ckh_report_result *r)
{
    struct ckh_scenario *sc = NULL;
    ck_assert_int_eq(ckh_scenario_parse_string(scn, strlen(scn), "t.yaml", NULL, &sc, NULL), 0);
    struct ckh_run_options o = {.source_dir = getenv("CKH_SOURCE_DIR"), .cache_dir = cache};
    ckh_report_result_init(r);
    int rc = ckh_harness_run(sc, &o, r);
    ckh_scenario_free(sc);
    return rc;
}

/* The one cache file in dir (its path into path). */
static void cache_file(char *path, size_t n)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".ref") == 0) {
            snprintf(path, n, "%s/%s", dir, e->d_name);
            found++;
        } else {
            ck_assert_msg(e->d_name[0] == '.', "unexpected file in the cache: %s", e->d_name);
        }
    }
    closedir(d);
    ck_assert_int_eq(found, 1);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, (long)(HDR_WORDS * 8));
    rewind(f);
    char *p = malloc((size_t)n);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void spit(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static ino_t inode(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_ino;
}

static void expect_pass(const struct ckh_report_result *r)
{
    ck_assert_int_eq(r->verdict, CKH_VERDICT_PASS);
    ck_assert_ptr_null(r->failed_oracle);
    ck_assert_uint_eq(r->runs, 1);
}

START_TEST(test_cached_reference_is_used)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run(dir, &r), 0);
    expect_pass(&r);
    ckh_report_result_clear(&r);
    char path[512];
    cache_file(path, sizeof path);
    ino_t first = inode(path);
    size_t len;
    char *orig = slurp(path, &len);

    /* a hit reads the file and leaves it as it was (no new file renamed in) */
    ck_assert_int_eq(run(dir, &r), 0);
    expect_pass(&r);
    ckh_report_result_clear(&r);
    ck_assert(inode(path) == first);

    /* a cached reference whose first node ended elsewhere: the faulted
     * run (the same job) no longer matches it */
    char *changed = malloc(len);
    ck_assert_ptr_nonnull(changed);
    memcpy(changed, orig, len);
    int64_t total;
    size_t at = HDR_WORDS * 8 + offsetof(struct ckh_node_result, total);
    memcpy(&total, changed + at, sizeof total);
    ck_assert_int_eq(total, 145); /* the job's headline value, as the scenario expects */
    total += 1000;
    memcpy(changed + at, &total, sizeof total);
    spit(path, changed, len);
    ck_assert_int_eq(run(dir, &r), 0);
    ck_assert_int_eq(r.verdict, CKH_VERDICT_FAIL);
    ck_assert_ptr_nonnull(r.failed_oracle);
    ckh_report_result_clear(&r);
    free(changed);
    free(orig);
}
END_TEST

/* What damage is done to the file (the header's words, or its length). */
struct damage {
    const char *what;
    int word;         /* header word to set (-1: none) */
    uint64_t value;   /* its new value */
    uint64_t or_bits; /* bits or'ed into the flags word (5) */
    long keep;        /* bytes kept (-1: all; -2: all but the last 8) */
};

START_TEST(test_damaged_cache_is_not_trusted)
{
    struct ckh_report_result r;
    ck_assert_int_eq(run(dir, &r), 0);
    expect_pass(&r);
    ckh_report_result_clear(&r);
    char path[512];
    cache_file(path, sizeof path);
    size_t len;
    char *orig = slurp(path, &len);
    uint64_t hdr[HDR_WORDS];
    memcpy(hdr, orig, sizeof hdr);
    ck_assert_uint_ge(hdr[2], 3); /* a node result per node */

    const struct damage cases[] = {
        {"empty", -1, 0, 0, 0},
        {"half a header", -1, 0, 0, 40},
        {"header only", -1, 0, 0, HDR_WORDS * 8},
        {"cut in the node results", -1, 0, 0, HDR_WORDS * 8 + 100},
        {"last word missing", -1, 0, 0, -2},
        {"another magic", 0, 0x1234, 0, -1},
        {"another job's key", 1, hdr[1] ^ 1, 0, -1},
        {"nodes past the limit", 2, 1u << 20, 0, -1},
        {"steps past the limit", 3, 1u << 26, 0, -1},
        {"epochs past the limit", 4, 1u << 20, 0, -1},
        {"dataset past the limit", 6, 1u << 26, 0, -1},
        {"epochs times dataset past the limit", 6, (1u << 26) / 2, 0, -1},
        {"quantities past the limit", 7, 1u << 28, 0, -1},
        {"final values past the limit", 8, 1u << 26, 0, -1},
        {"more nodes than written", 2, hdr[2] + 1000, 0, -1},
        {"sample counts announced, not written", 6, 4096, 1u << 3, -1},
        {"epochs and their worlds announced, not written", 4, 2, 1u << 4, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct damage *d = &cases[i];
        char *bad = malloc(len);
        ck_assert_ptr_nonnull(bad);
        memcpy(bad, orig, len);
        uint64_t h[HDR_WORDS];
        memcpy(h, bad, sizeof h);
        if (d->word >= 0)
            h[d->word] = d->value;
        h[5] |= d->or_bits;
        if (d->word == 6 && h[4] == 0)
            h[4] = 8; /* the product needs epochs */
        memcpy(bad, h, sizeof h);
        size_t keep = d->keep == -1 ? len : d->keep == -2 ? len - 8 : (size_t)d->keep;
        spit(path, bad, keep);
        free(bad);

        ck_assert_int_eq(run(dir, &r), 0);
        ck_assert_msg(r.verdict == CKH_VERDICT_PASS && r.failed_oracle == NULL, "%s: verdict %d (%s: %s)", d->what,
                      r.verdict, r.failed_oracle ? r.failed_oracle : "-", r.message ? r.message : "-");
        ckh_report_result_clear(&r);
        /* the run was done again and stored whole */
        size_t len2;
        char *again = slurp(path, &len2);
        ck_assert_msg(len2 == len && memcmp(again, orig, len) == 0, "%s: the cache file was not written anew",
                      d->what);
        free(again);
    }
    free(orig);
}
END_TEST

START_TEST(test_cache_folder_that_cannot_take_files)
{
    /* a cache "folder" that is a file: nothing is stored, the run still judged */
    char file[256];
    snprintf(file, sizeof file, "%s/not-a-folder", dir);
    spit(file, "x", 1);
    struct ckh_report_result r;
    ck_assert_int_eq(run(file, &r), 0);
    expect_pass(&r);
    ckh_report_result_clear(&r);
    /* and a missing one */
    snprintf(file, sizeof file, "%s/missing/deeper", dir);
    ck_assert_int_eq(run(file, &r), 0);
    expect_pass(&r);
    ckh_report_result_clear(&r);
    struct stat st;
    ck_assert_int_ne(stat(file, &st), 0);
}
END_TEST

static Suite *ref_cache_suite(void)
{
    Suite *s = suite_create("ref_cache");
    TCase *tc = tcase_create("cache");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_cached_reference_is_used);
    tcase_add_test(tc, test_damaged_cache_is_not_trusted);
    tcase_add_test(tc, test_cache_folder_that_cannot_take_files);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ckh_test_run(ref_cache_suite());
}
