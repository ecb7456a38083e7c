/* Tests for the retention oracle (harness/judge/retention_check.c): the
 * newest complete checkpoint in a command job's object store is never
 * deleted by the program. Each case replays a store's operations written
 * out by hand (struct ckh_store_op), as a command job copies them from the
 * store's trace; the end-to-end runs are in tests/test_object_store.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "exec/runner.h"
#include "judge/oracle.h"
#include "model/scenario.h"

static struct ckh_scenario *scenario(const char *commit)
{
    char text[512];
    snprintf(text, sizeof text,
             "job:\n  command: [/bin/true]\n  object_store:\n    buckets: [bkt]\n%s%s%s", commit ? "    commit: \"" : "",
             commit ? commit : "", commit ? "\"\n" : "");
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error e;
    ck_assert_msg(ckh_scenario_parse_string(text, strlen(text), "r.yaml", NULL, &sc, &e) == 0, "%s", e.msg);
    return sc;
}

/* A store's operations as the oracle reads them (64 at most; keys owned). */
struct ops {
    struct ckh_store_op v[64];
    size_t n;
};

static void op(struct ops *o, int node, const char *name, const char *key, bool exists, int64_t step)
{
    ck_assert_uint_lt(o->n, 64);
    o->v[o->n] = (struct ckh_store_op){.seq = o->n + 1, .run = 1, .node = node, .step = step, .op = name,
                                       .bucket = "bkt", .key = strdup(key), .exists = exists};
    ck_assert_ptr_nonnull(o->v[o->n].key);
    o->n++;
}

static void put(struct ops *o, const char *key)
{
    op(o, 0, "PutObject", key, true, -1);
}

static void del(struct ops *o, const char *key, int64_t step)
{
    op(o, 0, "DeleteObject", key, false, step);
}

/* A checkpoint: two shards, then its commit object. */
static void save(struct ops *o, const char *folder)
{
    char k[64];
    snprintf(k, sizeof k, "%s/s0", folder);
    put(o, k);
    snprintf(k, sizeof k, "%s/s1", folder);
    put(o, k);
    snprintf(k, sizeof k, "%s/COMMIT", folder);
    put(o, k);
}

static void free_keys(struct ops *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->v[i].key);
}

/* Judges o under commit glob `commit`: passed, detail and step in *out. */
static bool judge(const char *commit, struct ops *o, char *detail, size_t n, int64_t *step)
{
    struct ckh_scenario *sc = scenario(commit);
    struct ckh_scenario_run r = {.sc = sc, .store_ops = o->v, .nstore_ops = o->n};
    const struct ckh_oracle_ops *ora = ckh_oracle_find("retention");
    ck_assert_ptr_nonnull(ora);
    ck_assert(ora->applies(&r));
    *step = -1;
    detail[0] = '\0';
    bool ok = ora->check(&r, detail, n, step);
    ckh_scenario_free(sc);
    return ok;
}

/* Applies only with job.object_store.commit and a store's operations. */
START_TEST(applies_with_commit_only)
{
    const struct ckh_oracle_ops *ora = ckh_oracle_find("retention");
    struct ckh_scenario *sc = scenario(NULL);
    struct ops o = {.n = 0};
    put(&o, "x");
    struct ckh_scenario_run r = {.sc = sc, .store_ops = o.v, .nstore_ops = o.n};
    ck_assert(!ora->applies(&r));
    ckh_scenario_free(sc);
    sc = scenario("c/*/COMMIT");
    r.sc = sc;
    ck_assert(ora->applies(&r));
    r.store_ops = NULL;
    r.nstore_ops = 0;
    ck_assert(!ora->applies(&r)); /* no store: nothing to replay */
    ckh_scenario_free(sc);
    free_keys(&o);
}
END_TEST

/* Retention after the commit: deleting the older checkpoint holds. */
START_TEST(older_checkpoint_may_go)
{
    struct ops o = {.n = 0};
    save(&o, "c/1");
    save(&o, "c/2");
    del(&o, "c/1/s0", 2);
    del(&o, "c/1/s1", 2);
    del(&o, "c/1/COMMIT", 2);
    char d[512];
    int64_t step;
    ck_assert_msg(judge("c/*/COMMIT", &o, d, sizeof d, &step), "%s", d);
    ck_assert_str_eq(d, "the program's 3 deletes removed no object of the newest complete checkpoint (2 writes "
                        "of commit objects matching c/*/COMMIT)");
    ck_assert_int_eq(step, -1);
    free_keys(&o);
}
END_TEST

/* Retention before the commit: c/2 has shards but no commit object, so
 * c/1 is the newest complete one, and deleting its shard fails, naming
 * the operation, node, key, run and step. */
START_TEST(newest_complete_deleted_before_commit)
{
    struct ops o = {.n = 0};
    save(&o, "c/1");
    put(&o, "c/2/s0");
    put(&o, "c/2/s1");
    del(&o, "c/1/s1", 6);
    char d[512];
    int64_t step;
    ck_assert(!judge("c/*/COMMIT", &o, d, sizeof d, &step));
    ck_assert_str_eq(d, "run 1, step 6: DeleteObject #6 of rank_0 removed bkt/c/1/s1 of the newest complete "
                        "checkpoint: its commit object bkt/c/1/COMMIT (written by #3) and the 2 objects it names");
    ck_assert_int_eq(step, 6);
    free_keys(&o);
}
END_TEST

/* The commit object itself is part of the checkpoint; no step reported. */
START_TEST(commit_object_deleted)
{
    struct ops o = {.n = 0};
    save(&o, "c/1");
    del(&o, "c/1/COMMIT", -1);
    char d[512];
    int64_t step;
    ck_assert(!judge("c/*/COMMIT", &o, d, sizeof d, &step));
    ck_assert_ptr_nonnull(strstr(d, "run 1, no step reported: DeleteObject #4 of rank_0 removed bkt/c/1/COMMIT, the "
                                    "commit object, of the newest complete checkpoint"));
    ck_assert_int_eq(step, -1);
    free_keys(&o);
}
END_TEST

/* Incomplete checkpoints are not the newest complete one: after ckh
 * expires a shard of c/2 (a fault at rest, not the program), c/1 is the
 * newest complete again; the crash model's undo of c/3's commit leaves c/3
 * incomplete. Deleting c/2's rest holds, deleting c/1's fails. */
START_TEST(completeness_follows_the_keys)
{
    struct ops o = {.n = 0};
    save(&o, "c/1");
    save(&o, "c/2");
    save(&o, "c/3");
    op(&o, 0, "Undo", "c/3/COMMIT", false, -1); /* the commit undone: c/3 incomplete */
    op(&o, -1, "Expire", "c/2/s0", false, -1);  /* ckh's, not the program's */
    del(&o, "c/2/s1", 9);                        /* c/2 incomplete already: holds */
    del(&o, "c/3/s0", 9);                        /* c/3 never complete since the undo */
    del(&o, "nowhere", 9);                       /* a key that is not there: nothing removed */
    char d[512];
    int64_t step;
    ck_assert_msg(judge("c/*/COMMIT", &o, d, sizeof d, &step), "%s", d);
    del(&o, "c/1/s0", 9);
    ck_assert(!judge("c/*/COMMIT", &o, d, sizeof d, &step));
    ck_assert_ptr_nonnull(strstr(d, "removed bkt/c/1/s0 of the newest complete checkpoint"));
    /* an undone delete restores the key: c/1 whole again, then deleted */
    free(o.v[--o.n].key);
    op(&o, 0, "DeleteObject", "c/1/s0", false, 9);
    op(&o, 0, "Undo", "c/1/s0", true, -1);
    del(&o, "c/1/COMMIT", 10);
    ck_assert(!judge("c/*/COMMIT", &o, d, sizeof d, &step));
    ck_assert_ptr_nonnull(strstr(d, "step 9: DeleteObject"));
    free_keys(&o);
}
END_TEST

/* Writing a commit object again makes its checkpoint again, naming what
 * exists then: a shard added after the first commit is named too. Keys
 * outside the folder, or in another bucket, are never named. */
START_TEST(recommit_names_what_exists)
{
    struct ops o = {.n = 0};
    save(&o, "c/1");
    put(&o, "c/1/s2");
    put(&o, "elsewhere");
    del(&o, "c/1/s2", 4); /* not named yet: holds */
    put(&o, "c/1/s2");
    put(&o, "c/1/COMMIT"); /* the checkpoint again, s2 named now */
    del(&o, "elsewhere", 4);
    char d[512];
    int64_t step;
    ck_assert_msg(judge("c/*/COMMIT", &o, d, sizeof d, &step), "%s", d);
    del(&o, "c/1/s2", 5);
    ck_assert(!judge("c/*/COMMIT", &o, d, sizeof d, &step));
    ck_assert_ptr_nonnull(strstr(d, "removed bkt/c/1/s2 of the newest complete checkpoint: its commit object "
                                    "bkt/c/1/COMMIT (written by #8) and the 3 objects it names"));
    free_keys(&o);
}
END_TEST

/* job.object_store.commit is written back as read (ckh shrink keeps it),
 * and a path or an empty glob is refused at its line and column. */
START_TEST(commit_key_round_trip_and_errors)
{
    struct ckh_scenario *sc = scenario("ckpt/step_*/manifest");
    ck_assert_str_eq(sc->job.object_store->commit, "ckpt/step_*/manifest");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ckh_scenario_write(f, sc), 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "    commit: \"ckpt/step_*/manifest\"\n"));
    struct ckh_scenario *back = NULL;
    struct ckh_scn_error e;
    ck_assert_msg(ckh_scenario_parse_string(buf, len, "w.yaml", NULL, &back, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(back->job.object_store->commit, "ckpt/step_*/manifest");
    ckh_scenario_free(back);
    ckh_scenario_free(sc);
    free(buf);
    static const char *const bad[] = {"/bkt/ckpt/*", ""};
    for (size_t i = 0; i < 2; i++) {
        char text[256];
        snprintf(text, sizeof text, "job:\n  command: [/bin/true]\n  object_store:\n    buckets: [bkt]\n"
                                    "    commit: \"%s\"\n", bad[i]);
        struct ckh_scenario *no = NULL;
        ck_assert_int_eq(ckh_scenario_parse_string(text, strlen(text), "r.yaml", NULL, &no, &e), CKH_EINVAL);
        ck_assert_ptr_null(no);
        ck_assert_int_eq(e.line, 5);
        ck_assert_int_eq(e.column, 13);
        ck_assert_msg(strstr(e.msg, "'job.object_store.commit' expects ") != NULL, "%s", e.msg);
    }
}
END_TEST

static Suite *retention_suite(void)
{
    Suite *s = suite_create("retention");
    TCase *tc = tcase_create("oracle");
    tcase_add_test(tc, applies_with_commit_only);
    tcase_add_test(tc, older_checkpoint_may_go);
    tcase_add_test(tc, newest_complete_deleted_before_commit);
    tcase_add_test(tc, commit_object_deleted);
    tcase_add_test(tc, completeness_follows_the_keys);
    tcase_add_test(tc, recommit_names_what_exists);
    tcase_add_test(tc, commit_key_round_trip_and_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(retention_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
