/* Tests of the record store (harness/exec/records.c): records through a
 * node's table and directly, checks on malformed records, supersession by
 * resume records (per node, and for parked nodes of a collective job),
 * replayed steps, final records, failed saves with and without a fault to
 * blame, and the collected job result (steps sorted by step and node with
 * their quantities, per-epoch samples and counts, the ranks of each
 * epoch's first step, corruption and device errors from return codes). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/rng.h"
#include "exec/records.h"

static const char *const names[] = {"rank_0", "rank_1", "rank_2"};

/* A step with digests "weights" = w and "rng" = r, value lr, samples ids. */
static int step(struct ckh_records *s, size_t node, int64_t st, int64_t ep, uint64_t w, uint64_t r,
                const uint64_t *ids, size_t nids)
{
    struct ckh_rec_digest d[] = {{"weights", w}, {"rng", r}};
    struct ckh_rec_value v[] = {{"lr", 0.5 / (double)st}};
    struct ckh_rec_step x = {.step = st, .epoch = ep, .digests = d, .ndigests = 2, .values = v, .nvalues = 1,
                             .samples = ids, .nsamples = nids};
    return ckh_record_step(ckh_records_table(s, node), &x);
}

static const struct ckh_step_quantity *q(const struct ckh_job_result *r, size_t i, const char *name)
{
    const struct ckh_step_record *st = &r->steps[i];
    for (uint32_t k = 0; k < st->count; k++)
        if (strcmp(r->quantities[st->first + k].name, name) == 0)
            return &r->quantities[st->first + k];
    return NULL;
}

START_TEST(test_steps_sorted_with_quantities)
{
    struct ckh_records *s;
    struct ckh_job_result r;
    ck_assert_int_eq(ckh_records_create(2, CKH_RECORDS_COLLECTIVE | CKH_RECORDS_STEP_BASED, &s), 0);
    uint64_t a[] = {0, 1}, b[] = {2, 3};
    ck_assert_int_eq(step(s, 1, 1, 0, 11, 21, b, 2), 0);
    ck_assert_int_eq(step(s, 0, 1, 0, 10, 20, a, 2), 0);
    ck_assert_int_eq(step(s, 0, 2, 1, 12, 22, a, 2), 0);
    ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
    ck_assert_uint_eq(r.nsteps, 3);
    ck_assert_int_eq(r.steps[0].step, 1);
    ck_assert_uint_eq(r.steps[0].node, 0);
    ck_assert_uint_eq(r.steps[1].node, 1);
    ck_assert_int_eq(r.steps[2].step, 2);
    ck_assert_uint_eq(q(&r, 1, "weights")->bits, 11);
    ck_assert(!q(&r, 1, "weights")->is_value);
    ck_assert(q(&r, 0, "lr")->is_value);
    double lr;
    memcpy(&lr, &q(&r, 2, "lr")->bits, sizeof lr);
    ck_assert(lr == 0.25);
    ck_assert_uint_ne(r.steps[0].digest, r.steps[1].digest);
    /* Samples: epoch 0 has 4 ids, epoch 1 has 2; both ranks ran step 1. */
    ck_assert_uint_eq(r.nsamples, 2);
    ck_assert_uint_eq(r.samples[0].count, 4);
    ck_assert_uint_eq(r.samples[1].count, 2);
    ck_assert_int_eq(r.epoch_world[0], 2);
    ck_assert_int_eq(r.epoch_world[1], 1);
    ck_assert_ptr_null(r.sample_counts); /* no dataset_size reported */
    ckh_records_destroy(s);
}
END_TEST

/* A NaN or infinite value is kept (a diverged loss is a fact to compare);
 * every NaN has the same bits, whatever its sign or payload, so a NaN loss
 * equals a NaN loss in the resume and reference comparisons. */
START_TEST(test_non_finite_values_kept)
{
    struct ckh_records *s;
    struct ckh_job_result r;
    ck_assert_int_eq(ckh_records_create(2, CKH_RECORDS_COLLECTIVE | CKH_RECORDS_STEP_BASED, &s), 0);
    ckh_records_begin_run(s, 1);
    uint64_t neg_payload = 0xfff8000000000123ull;
    double odd_nan;
    memcpy(&odd_nan, &neg_payload, sizeof odd_nan);
    struct ckh_rec_value v0[] = {{"loss", NAN}, {"up", INFINITY}}, v1[] = {{"loss", odd_nan}, {"up", -INFINITY}};
    ck_assert_int_eq(ckh_record_step(ckh_records_table(s, 0), &(struct ckh_rec_step){.step = 1, .values = v0,
                                                                                     .nvalues = 2}), 0);
    ck_assert_int_eq(ckh_record_step(ckh_records_table(s, 1), &(struct ckh_rec_step){.step = 1, .values = v1,
                                                                                     .nvalues = 2}), 0);
    ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
    ck_assert_uint_eq(r.nsteps, 2);
    ck_assert_uint_eq(q(&r, 0, "loss")->bits, q(&r, 1, "loss")->bits);
    ck_assert_uint_ne(q(&r, 0, "up")->bits, q(&r, 1, "up")->bits);
    double loss;
    memcpy(&loss, &q(&r, 1, "loss")->bits, sizeof loss);
    ck_assert(isnan(loss));
    ck_assert_str_eq(r.nodes[0].refused, "");
    ckh_records_destroy(s);
}
END_TEST

START_TEST(test_malformed_records_refused)
{
    struct ckh_records *s;
    ck_assert_int_eq(ckh_records_create(1, 0, &s), 0);
    struct ckh_record *t = ckh_records_table(s, 0);
    struct ckh_rec_digest bad_name[] = {{"we ights", 1}};
    struct ckh_rec_value twice[] = {{"lr", 1}, {"lr", 2}};
    ckh_records_begin_run(s, 1);
    ck_assert_int_eq(ckh_record_step(t, &(struct ckh_rec_step){.step = 1, .digests = bad_name, .ndigests = 1}),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_record_step(t, &(struct ckh_rec_step){.step = 0, .epoch = 0}), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_step(t, &(struct ckh_rec_step){.step = 1, .epoch = -1}), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_step(t, &(struct ckh_rec_step){.step = 1, .values = twice, .nvalues = 2}),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_record_step(t, &(struct ckh_rec_step){.step = 1, .ndigests = CKH_RECORD_FIELDS_MAX + 1,
                                                               .digests = bad_name}),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_record_final(t, &(struct ckh_rec_final){.epochs = -1}), CKH_EINVAL);
    ck_assert_int_eq(ckh_record_save(t, &(struct ckh_rec_save){.rc = 5}), CKH_EINVAL);
    ck_assert_ptr_null(ckh_records_table(s, 1));
    ck_assert_int_eq(ckh_records_add_resume(s, 3, &(struct ckh_rec_resume){0}), CKH_EINVAL);
    /* Nothing malformed was kept. */
    struct ckh_job_result r;
    ck_assert_int_eq(ckh_records_collect(s, NULL, NULL, &r), 0);
    ck_assert_uint_eq(r.nsteps, 0);
    ck_assert_str_eq(r.nodes[0].node, "?");
    /* The first refusal is kept to name the record and the field. */
    ck_assert_str_eq(r.nodes[0].refused, "run 1: its step record was refused: digest name 'we ights' has a "
                                         "character other than A-Z a-z 0-9 _ . -");
    /* A NULL table is a job run outside ckh: every call a no-op. */
    ck_assert_int_eq(ckh_record_step(NULL, &(struct ckh_rec_step){.step = 0}), 0);
    ckh_records_destroy(s);
}
END_TEST

/* Run 1 records steps 1..4 on both ranks; run 2 resumes after step 2 and
 * replays 3..4 with other digests: only run 2's history survives. */
START_TEST(test_resume_supersedes_earlier_runs)
{
    struct ckh_records *s;
    struct ckh_job_result r;
    ck_assert_int_eq(ckh_records_create(2, CKH_RECORDS_COLLECTIVE | CKH_RECORDS_STEP_BASED, &s), 0);
    for (int64_t st = 1; st <= 4; st++)
        for (size_t n = 0; n < 2; n++)
            ck_assert_int_eq(step(s, n, st, 0, 100 + (uint64_t)st, 0, NULL, 0), 0);
    ckh_records_begin_run(s, 2);
    for (size_t n = 0; n < 2; n++) {
        ck_assert_int_eq(ckh_record_resume(ckh_records_table(s, n), &(struct ckh_rec_resume){.step = 2, .epoch = 0}), 0);
        ck_assert_int_eq(step(s, n, 3, 0, 999, 0, NULL, 0), 0);
    }
    ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
    /* Steps 1, 2 of run 1 and step 3 of run 2; run 1's step 4 is gone. */
    ck_assert_uint_eq(r.nsteps, 6);
    ck_assert_int_eq(r.steps[5].step, 3);
    ck_assert_uint_eq(q(&r, 5, "weights")->bits, 999);
    ck_assert_uint_eq(q(&r, 2, "weights")->bits, 102);
    ck_assert_int_eq(r.nodes[0].resumed_from, 2);
    ckh_records_destroy(s);
}
END_TEST

/* Rank 0 saves step 3 and is killed before its step record; run 2
 * resumes after step 3 on both ranks. Rank 0's step 3 is restored without
 * a record (the oracle must not call it missing); rank 1 recorded it.
 * A later run that went back before step 3 and recorded it again leaves
 * nothing restored. Each step record carries its samples' count and
 * multiset digest. */
START_TEST(test_restored_without_record)
{
    struct ckh_records *s;
    struct ckh_job_result r;
    uint64_t ids[] = {5, 9};
    ck_assert_int_eq(ckh_records_create(2, CKH_RECORDS_COLLECTIVE | CKH_RECORDS_STEP_BASED, &s), 0);
    ckh_records_begin_run(s, 1);
    for (int64_t st = 1; st <= 3; st++)
        for (size_t n = 0; n < 2; n++)
            if (!(st == 3 && n == 0))
                ck_assert_int_eq(step(s, n, st, 0, (uint64_t)st, 0, ids, 2), 0);
    ckh_records_begin_run(s, 2);
    for (size_t n = 0; n < 2; n++) {
        ck_assert_int_eq(ckh_record_resume(ckh_records_table(s, n), &(struct ckh_rec_resume){.step = 3}), 0);
        ck_assert_int_eq(step(s, n, 4, 0, 4, 0, NULL, 0), 0);
    }
    ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
    ck_assert_uint_eq(r.nsteps, 7);
    ck_assert_uint_eq(r.nrestored, 1);
    ck_assert_int_eq(r.restored[0].step, 3);
    ck_assert_uint_eq(r.restored[0].node, 0);
    ck_assert_uint_eq(r.steps[0].nids, 2);
    ck_assert_uint_eq(r.steps[0].multiset, ckh_mix64(6) + ckh_mix64(10));
    ck_assert_uint_eq(r.samples[0].multiset, 5 * (ckh_mix64(6) + ckh_mix64(10)));
    /* Run 3 goes back to step 2 and records 3 and 4 again. */
    ckh_records_begin_run(s, 3);
    for (size_t n = 0; n < 2; n++) {
        ck_assert_int_eq(ckh_record_resume(ckh_records_table(s, n), &(struct ckh_rec_resume){.step = 2}), 0);
        ck_assert_int_eq(step(s, n, 3, 0, 3, 0, NULL, 0), 0);
        ck_assert_int_eq(step(s, n, 4, 0, 4, 0, NULL, 0), 0);
    }
    ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
    ck_assert_uint_eq(r.nrestored, 0);
    ck_assert_ptr_null(r.restored);
    ckh_records_destroy(s);
}
END_TEST

/* A collective job shrunk from 3 ranks to 2: rank 2, parked in run 2,
 * loses what it recorded past the resume point; in a job that is not
 * collective a node that did not restart keeps its records. */
START_TEST(test_parked_node_loses_its_future)
{
    for (int collective = 0; collective <= 1; collective++) {
        struct ckh_records *s;
        struct ckh_job_result r;
        ck_assert_int_eq(ckh_records_create(3, collective ? CKH_RECORDS_COLLECTIVE : 0, &s), 0);
        for (int64_t st = 1; st <= 3; st++)
            for (size_t n = 0; n < 3; n++)
                ck_assert_int_eq(step(s, n, st, 0, (uint64_t)st, 0, NULL, 0), 0);
        ckh_records_begin_run(s, 2);
        for (size_t n = 0; n < 2; n++)
            ck_assert_int_eq(ckh_records_add_resume(s, n, &(struct ckh_rec_resume){.step = 1, .epoch = 0}), 0);
        ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
        size_t of2 = 0;
        for (size_t i = 0; i < r.nsteps; i++)
            of2 += r.steps[i].node == 2;
        ck_assert_uint_eq(of2, collective ? 1 : 3);
        ck_assert_uint_eq(r.nsteps, collective ? 3 : 5);
        ck_assert_int_eq(r.nodes[2].resumed_from, -1);
        ck_assert_int_eq(r.nodes[0].resumed_from, 0); /* epoch-based: the resume epoch */
        ckh_records_destroy(s);
    }
}
END_TEST

/* A step recorded again in a later run without a resume record replaces
 * the earlier one. */
START_TEST(test_replayed_step_replaces)
{
    struct ckh_records *s;
    struct ckh_job_result r;
    ck_assert_int_eq(ckh_records_create(1, 0, &s), 0);
    ck_assert_int_eq(step(s, 0, 1, 0, 1, 0, NULL, 0), 0);
    ckh_records_begin_run(s, 2);
    ck_assert_int_eq(step(s, 0, 1, 0, 7, 0, NULL, 0), 0);
    ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
    ck_assert_uint_eq(r.nsteps, 1);
    ck_assert_uint_eq(q(&r, 0, "weights")->bits, 7);
    ckh_records_destroy(s);
}
END_TEST

static bool fired_flag;
static bool probe(void *ctx)
{
    (void)ctx;
    return fired_flag;
}

START_TEST(test_final_and_saves)
{
    struct ckh_records *s;
    struct ckh_job_result r;
    ck_assert_int_eq(ckh_records_create(2, 0, &s), 0);
    ckh_records_set_fault_probe(s, probe, NULL);
    struct ckh_record *t = ckh_records_table(s, 1);
    fired_flag = false;
    ck_assert_int_eq(ckh_record_save(t, &(struct ckh_rec_save){.step = 1, .epoch = 1, .rc = 0}), 0);
    ck_assert_int_eq(ckh_record_save(t, &(struct ckh_rec_save){.step = 2, .epoch = 1, .rc = -2,
                                                               .what = "/ckpt/step_2/rank_1.bin"}),
                     0);
    fired_flag = true;
    ck_assert_int_eq(ckh_record_save(t, &(struct ckh_rec_save){.step = 3, .epoch = 1, .rc = CKH_ECORRUPT}), 0);
    const char *blobs[] = {"b", "a", "c"};
    struct ckh_rec_value v[] = {{"loss", 0.125}, {"dataset_size", 8}, {"drop_last", 1}};
    struct ckh_rec_final f = {.epochs = 3, .steps = 30, .total = 31, .has_digest = true, .digest = 0xabc,
                              .values = v, .nvalues = 3, .blobs = blobs, .nblobs = 3};
    ck_assert_int_eq(ckh_record_final(t, &f), 0);
    uint64_t ids[] = {1, 2, 2, 7};
    ck_assert_int_eq(step(s, 0, 1, 0, 1, 1, ids, 4), 0);
    int rcs[] = {CKH_EOOM_DEVICE, CKH_ETRUNCATED};
    ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, rcs, &r), 0);
    const struct ckh_node_result *n = &r.nodes[1];
    ck_assert(n->finished);
    ck_assert(!r.nodes[0].finished);
    ck_assert_int_eq(n->epochs, 3);
    ck_assert_int_eq(n->steps, 30);
    ck_assert_int_eq(n->total, 31);
    ck_assert_uint_eq(n->digest, 0xabc);
    ck_assert_str_eq(n->blobs, "a,b,c");
    ck_assert_uint_eq(n->saves_failed, 2);
    ck_assert_uint_eq(n->saves_failed_unfaulted, 1);
    ck_assert_ptr_nonnull(strstr(n->first_failed_save, "step 2"));
    ck_assert_ptr_nonnull(strstr(n->first_failed_save, "/ckpt/step_2/rank_1.bin"));
    ck_assert_uint_eq(n->vcount, 3);
    ck_assert_str_eq(r.final_values[n->vfirst].name, "loss");
    ck_assert(r.corruption_detected && r.device_oom);
    /* dataset_size and drop_last feed the per-id counts. */
    ck_assert_uint_eq(r.dataset_size, 8);
    ck_assert(r.drop_last);
    ck_assert_uint_eq(r.sample_counts[2], 2);
    ck_assert_uint_eq(r.sample_counts[7], 1);
    ckh_records_destroy(s);
}
END_TEST

/* Per-id sample counts are kept only for a dataset_size that makes sense
 * and fits (1 .. 2^22 ids, epochs times ids at most 2^22): otherwise the
 * epochs' sample multisets are still kept, the counts are not; an id past
 * the dataset is counted in its epoch's multiset but not per id. */
START_TEST(test_dataset_size_edges)
{
    const struct {
        double ds;
        int64_t epochs;  /* step records in epochs 0 .. epochs-1 */
        bool counted;
    } cases[] = {
        {0.5, 1, false},                 /* under one id */
        {8, 2, true},                    /* the usual */
        {4194304.0, 1, true},            /* 2^22 ids, one epoch */
        {4194304.0, 2, false},           /* two epochs of 2^22: too many counts */
        {4194305.0, 1, false},           /* past 2^22 ids */
        {-3, 1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ckh_records *s;
        struct ckh_job_result r;
        ck_assert_int_eq(ckh_records_create(1, 0, &s), 0);
        ckh_records_begin_run(s, 1);
        struct ckh_rec_value v[] = {{"dataset_size", cases[i].ds}};
        struct ckh_rec_final f = {.epochs = cases[i].epochs, .steps = cases[i].epochs, .values = v, .nvalues = 1};
        ck_assert_int_eq(ckh_record_final(ckh_records_table(s, 0), &f), 0);
        uint64_t ids[] = {0, 3, 9}; /* 9: past a dataset of 8 */
        for (int64_t e = 0; e < cases[i].epochs; e++)
            ck_assert_int_eq(step(s, 0, e + 1, e, 1, 1, ids, 3), 0);
        ck_assert_int_eq(ckh_records_collect(s, (const char *const *)names, NULL, &r), 0);
        ck_assert_uint_eq(r.nsamples, (size_t)cases[i].epochs);
        for (int64_t e = 0; e < cases[i].epochs; e++)
            ck_assert_uint_eq(r.samples[e].count, 3);
        if (cases[i].counted) {
            ck_assert_msg(r.sample_counts != NULL, "case %zu", i);
            ck_assert_uint_eq(r.dataset_size, (uint64_t)cases[i].ds);
            ck_assert_uint_eq(r.sample_counts[0], 1);
            ck_assert_uint_eq(r.sample_counts[3], 1);
            if (cases[i].ds == 8) {
                ck_assert_uint_eq(r.sample_counts[8 + 3], 1); /* epoch 1's */
                ck_assert_uint_eq(r.sample_counts[7], 0);
            } else {
                ck_assert_uint_eq(r.sample_counts[9], 1);
            }
        } else {
            ck_assert_msg(r.sample_counts == NULL, "case %zu: counts kept for dataset_size %g", i, cases[i].ds);
        }
        ckh_records_destroy(s);
    }
}
END_TEST

/* One record model: the same records, once through a node's table and
 * once written as JSON lines by ckh_record_jsonl_open and read back, give
 * the same job result; a torn last line is not a record; a bad line names
 * the file and line. */
START_TEST(test_jsonl_feed_equals_table_feed)
{
    char path[] = "/tmp/ckh-test-store-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    struct ckh_records *direct, *viajson;
    ck_assert_int_eq(ckh_records_create(1, CKH_RECORDS_STEP_BASED, &direct), 0);
    ck_assert_int_eq(ckh_records_create(1, CKH_RECORDS_STEP_BASED, &viajson), 0);
    struct ckh_record *w = NULL;
    char msg[256];
    ck_assert_int_eq(ckh_record_jsonl_open(path, &w, msg, sizeof msg), 0);
    struct ckh_record *tables[] = {ckh_records_table(direct, 0), w};
    for (int t = 0; t < 2; t++) {
        uint64_t ids[] = {4, 9};
        struct ckh_rec_digest d[] = {{"weights", 0x8000000000000001ull}, {"rng", 7}};
        struct ckh_rec_value v[] = {{"lr", 0.1}, {"loss", -3.5e-300}};
        for (int64_t st = 1; st <= 3; st++)
            ck_assert_int_eq(ckh_record_step(tables[t], &(struct ckh_rec_step){.step = st, .epoch = 0, .digests = d,
                                                                                .ndigests = 2, .values = v, .nvalues = 2,
                                                                                .samples = ids, .nsamples = 2}),
                             0);
        ck_assert_int_eq(ckh_record_save(tables[t], &(struct ckh_rec_save){.step = 3, .rc = -28,
                                                                           .what = "no \"room\""}),
                         0);
        ck_assert_int_eq(ckh_record_resume(tables[t], &(struct ckh_rec_resume){.step = 2, .epoch = 0}), 0);
        const char *blobs[] = {"model", "optim"};
        ck_assert_int_eq(ckh_record_final(tables[t], &(struct ckh_rec_final){.epochs = 1, .steps = 3, .total = 3,
                                                                             .has_digest = true, .digest = 5,
                                                                             .values = v, .nvalues = 1,
                                                                             .blobs = blobs, .nblobs = 2}),
                         0);
    }
    ckh_record_jsonl_close(w);
    /* A torn record at the end, as a killed program leaves it. */
    FILE *f = fopen(path, "a");
    fputs("{\"kind\":\"step\",\"st", f);
    fclose(f);
    f = fopen(path, "rb");
    char text[8192];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    ck_assert_int_eq(ckh_records_read_jsonl(viajson, 0, text, n, path, msg, sizeof msg), 0);
    struct ckh_job_result a, b;
    ck_assert_int_eq(ckh_records_collect(direct, (const char *const *)names, NULL, &a), 0);
    ck_assert_int_eq(ckh_records_collect(viajson, (const char *const *)names, NULL, &b), 0);
    ck_assert_uint_eq(a.nsteps, b.nsteps);
    for (size_t i = 0; i < a.nsteps; i++)
        ck_assert_uint_eq(a.steps[i].digest, b.steps[i].digest);
    ck_assert_uint_eq(a.samples[0].multiset, b.samples[0].multiset);
    ck_assert_uint_eq(a.nodes[0].digest, b.nodes[0].digest);
    ck_assert_str_eq(a.nodes[0].blobs, b.nodes[0].blobs);
    ck_assert_uint_eq(a.nodes[0].saves_failed, b.nodes[0].saves_failed);
    ck_assert_int_eq(a.nodes[0].resumed_from, b.nodes[0].resumed_from);
    ck_assert_uint_eq(a.final_values[0].bits, b.final_values[0].bits);
    /* A bad line: file and line named. */
    const char bad[] = "{\"kind\":\"resume\",\"step\":1,\"epoch\":0}\n{\"kind\":\"step\"}\n";
    ck_assert_int_eq(ckh_records_read_jsonl(viajson, 0, bad, sizeof bad - 1, "result.jsonl", msg, sizeof msg),
                     CKH_EPARSE);
    ck_assert_ptr_nonnull(strstr(msg, "result.jsonl:2:"));
    ckh_records_destroy(direct);
    ckh_records_destroy(viajson);
    unlink(path);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("record_store");
    TCase *tc = tcase_create("store");
    tcase_add_test(tc, test_steps_sorted_with_quantities);
    tcase_add_test(tc, test_malformed_records_refused);
    tcase_add_test(tc, test_non_finite_values_kept);
    tcase_add_test(tc, test_restored_without_record);
    tcase_add_test(tc, test_resume_supersedes_earlier_runs);
    tcase_add_test(tc, test_parked_node_loses_its_future);
    tcase_add_test(tc, test_replayed_step_replaces);
    tcase_add_test(tc, test_final_and_saves);
    tcase_add_test(tc, test_dataset_size_edges);
    tcase_add_test(tc, test_jsonl_feed_equals_table_feed);
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
