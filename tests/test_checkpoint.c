/* Checkpoint runtime: every case of the seed test, on the POSIX platform
 * (a real directory under /tmp, removed afterwards), with the exact figures
 * of the seed (totals 103 115 136 145, 4 epochs). The simulator versions of
 * these cases live in test_workloads.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckh/posix.h"
#include "ckh/ref.h"

static const int64_t EXPECTED[4] = {103, 115, 136, 145};
static char root[256];
static struct ckh_env *env;

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/ckh_test_ckpt_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    ck_assert_int_eq(ckh_posix_env_create(root, 1, "test", &env), 0);
    ck_assert_int_eq(ckh_fs_mkdir(env->fs, "/ckpt"), 0);
}

static void teardown(void)
{
    char cmd[300];
    ckh_posix_env_destroy(env);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

/* The seed pipeline for nodes [first, first + n): n == 1 builds only
 * trainer_<first>, else first must be 0. */
static struct ckh_job *pipeline_job(int first, int n)
{
    const struct ckh_workload *wl = ckh_epoch_workload_find("seed-pipeline");
    char only[32];
    struct ckh_workload_spec spec = {.wl = wl, .nnodes = first + n};
    struct ckh_job *job;
    const char *const *nodes;
    size_t nn;
    ck_assert_ptr_nonnull(wl);
    snprintf(only, sizeof only, "trainer_%d", first);
    if (first > 0 || n == 1)
        spec.only_node = only;
    ck_assert_int_eq(ckh_job_create(NULL, &job), 0);
    ck_assert_int_eq(wl->build_job(&spec, job), 0);
    ck_assert_int_eq(ckh_job_nodes_to_checkpoint(job, &nodes, &nn), 0);
    ck_assert_uint_eq(nn, (size_t)n);
    ck_assert_str_eq(nodes[0], n == 1 ? only : "trainer_0");
    return job;
}

static int64_t total_of(struct ckh_ws *ws, const char *node)
{
    char name[64];
    int64_t v = -1;
    snprintf(name, sizeof name, "%s/total", node);
    ck_assert_int_eq(ckh_ws_get_i64(ws, name, &v), 0);
    return v;
}

static struct ckh_ckpt *make_ckpt(bool multi)
{
    struct ckh_ckpt *ck;
    char msg[256];
    if (multi)
        ck_assert_int_eq(ckh_ckpt_create_multi(env, "/ckpt", "minidb", NULL, &ck, msg, sizeof msg), 0);
    else
        ck_assert_int_eq(ckh_ckpt_create_single(env, "/ckpt", "temp_node", "minidb", NULL, &ck, msg,
                                                sizeof msg), 0);
    return ck;
}

static void run_with(bool multi)
{
    struct ckh_job *job = pipeline_job(0, 1);
    struct ckh_ws *ws;
    struct ckh_ckpt *ck = make_ckpt(multi);
    struct ckh_session s = {.env = env};
    struct ckh_runner_config cfg = {.job = job, .ckpt = ck, .resume_from_epoch = -1};
    int64_t epochs = 0;

    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    s.ws = ws;
    ck_assert_int_eq(ckh_runner_run(&cfg, &s, &epochs), 0);
    ck_assert_int_eq(epochs, 4);
    ck_assert_int_eq(total_of(ws, "trainer_0"), 145);
    ck_assert_uint_eq(cfg.saves_failed, 0);
    ckh_ckpt_destroy(ck);
    ckh_ws_destroy(ws);

    for (int64_t initial = 1; initial <= epochs; initial++) {
        struct ckh_runner_config rc = {.job = job, .resume_from_epoch = initial};
        int64_t e = 0;
        ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
        s.ws = ws;
        ck = make_ckpt(multi);
        rc.ckpt = ck;
        ck_assert_int_eq(ckh_runner_run(&rc, &s, &e), 0);
        /* resuming from the last epoch's checkpoint, whose stop condition
         * holds, runs no epoch again: the job ends at 4 either way */
        ck_assert_int_eq(e, 4);
        ck_assert_int_eq(rc.resumed_from, initial);
        ck_assert_int_eq(total_of(ws, "trainer_0"), 145);
        for (int64_t k = 1; k <= epochs; k++) {
            ck_assert_int_eq(ckh_ckpt_load(ck, &s, k), 0);
            ck_assert_int_eq(total_of(ws, "trainer_0"), EXPECTED[k - 1]);
        }
        ckh_ckpt_destroy(ck);
        ckh_ws_destroy(ws);
    }
    ckh_job_destroy(job);
}

START_TEST(test_single_checkpoint)
{
    run_with(false);
}
END_TEST

START_TEST(test_multi_checkpoint)
{
    run_with(true);
}
END_TEST

START_TEST(test_ckpt_name)
{
    struct ckh_job *job = pipeline_job(0, 3);
    struct ckh_ckpt *ck = make_ckpt(true);
    struct ckh_ws *ws;
    struct ckh_session s = {.env = env};
    const char *const *nodes;
    size_t n;
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    s.ws = ws;
    ck_assert_int_eq(ckh_job_nodes_to_checkpoint(job, &nodes, &n), 0);
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, nodes, n, -1), 0);
    for (int i = 0; i < 3; i++) {
        char node[32], want[64], got[CKH_PATH_MAX];
        snprintf(node, sizeof node, "trainer_%d", i);
        snprintf(want, sizeof want, "/ckpt/trainer_%d.5", i);
        ck_assert_int_eq(ckh_ckpt_db_name(ck, node, 5, got, sizeof got), 0);
        ck_assert_str_eq(got, want);
    }
    ck_assert_int_eq(ckh_ckpt_db_name(ck, "trainer_9", 5, (char[64]){0}, 64), CKH_ENOTFOUND);
    ckh_ckpt_destroy(ck);
    ckh_ws_destroy(ws);
    ckh_job_destroy(job);
}
END_TEST

static void run_each_node(int nnodes, ckh_upload_fn upload, void *ctx, const char *prefix,
                          uint64_t want_failed)
{
    for (int i = 0; i < nnodes; i++) {
        struct ckh_job *job = pipeline_job(i, 1);
        struct ckh_ws *ws;
        struct ckh_ckpt *ck;
        char msg[256];
        struct ckh_session s = {.env = env};
        struct ckh_runner_config cfg = {.resume_from_epoch = -1, .upload = upload, .upload_ctx = ctx};
        int64_t epochs = 0;
        char node[32];
        ck_assert_int_eq(ckh_ckpt_create_multi(env, prefix, "minidb", NULL, &ck, msg, sizeof msg), 0);
        ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
        s.ws = ws;
        cfg.job = job;
        cfg.ckpt = ck;
        ck_assert_int_eq(ckh_runner_run(&cfg, &s, &epochs), 0);
        ck_assert_int_eq(epochs, 4);
        ck_assert_uint_eq(cfg.saves_failed, want_failed);
        snprintf(node, sizeof node, "trainer_%d", i);
        ck_assert_int_eq(total_of(ws, node), 145);
        ckh_ckpt_destroy(ck);
        ckh_ws_destroy(ws);
        ckh_job_destroy(job);
    }
}

START_TEST(test_load_model_from_ckpts)
{
    const char *names[] = {"trainer_1/total", "trainer_2/total"};
    struct ckh_job *job;
    struct ckh_ws *ws;
    struct ckh_ckpt *ck;
    struct ckh_session s = {.env = env};
    struct ckh_runner_config cfg = {.resume_from_epoch = -1};

    run_each_node(3, NULL, NULL, "/ckpt", 0);
    job = pipeline_job(0, 3);
    ck = make_ckpt(true);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    ck_assert_uint_eq(ckh_ws_count(ws), 0);
    s.ws = ws;
    cfg.job = job;
    cfg.ckpt = ck;
    ck_assert_int_eq(ckh_runner_load_blobs_from_checkpoints(&cfg, &s, names, 2, 1), 1);
    for (int64_t e = 1; e <= 4; e++) {
        ck_assert_int_eq(ckh_runner_load_blobs_from_checkpoints(&cfg, &s, names, 2, e), 1);
        ck_assert_int_eq(total_of(ws, "trainer_1"), EXPECTED[e - 1]);
        ck_assert_int_eq(total_of(ws, "trainer_2"), EXPECTED[e - 1]);
    }
    ck_assert_uint_eq(ckh_ws_count(ws), 2); /* only the named blobs */
    ck_assert_int_eq(ckh_runner_load_blobs_from_checkpoints(&cfg, &s, names, 2, 5), 0);
    ckh_ckpt_destroy(ck);
    ckh_ws_destroy(ws);
    ckh_job_destroy(job);
}
END_TEST

START_TEST(test_upload_checkpoint)
{
    char dir[] = "/ckpt/upload";
    ck_assert_int_eq(ckh_fs_mkdir(env->fs, dir), 0);
    for (int i = 0; i < 3; i++) {
        char p[64];
        snprintf(p, sizeof p, "/ckpt/upload/trainer_%d", i);
        ck_assert(!ckh_fs_exists(env->fs, p));
    }
    run_each_node(3, ckh_upload_to_dir, dir, "/ckpt", 0);
    for (int i = 0; i < 3; i++) {
        char p[64], q[64];
        struct ckh_stat a, b;
        snprintf(p, sizeof p, "/ckpt/upload/trainer_%d", i);
        snprintf(q, sizeof q, "/ckpt/trainer_%d.4", i);
        ck_assert(ckh_fs_exists(env->fs, p));
        ck_assert_int_eq(ckh_fs_stat(env->fs, p, &a), 0);
        ck_assert_int_eq(ckh_fs_stat(env->fs, q, &b), 0);
        ck_assert_uint_eq(a.size_bytes, b.size_bytes);
    }
}
END_TEST

START_TEST(test_ckpt_save_failure)
{
    /* 5 saves per node (epochs 0..4), all fail; the job still runs 4 epochs. */
    run_each_node(3, NULL, NULL, "/path_does_not_exist/", 5);
    ck_assert(!ckh_fs_exists(env->fs, "/path_does_not_exist"));
}
END_TEST

/* ---- download group ---- */

static char order[64];

static int fill8(struct ckh_session *s, const char *name, float v)
{
    float d[8];
    uint64_t shape[1] = {8};
    for (int i = 0; i < 8; i++)
        d[i] = v;
    return ckh_ws_set(s->ws, name, CKH_DT_F32, 1, shape, d);
}

static int dl_init(struct ckh_session *s, const char *node, void *arg)
{
    static const char *const names[] = {"input1", "input2", "output", "download_result"};
    (void)node;
    (void)arg;
    strcat(order, "I");
    for (int i = 0; i < 4; i++)
        if (fill8(s, names[i], 1.0f) != 0)
            return CKH_ENOMEM;
    return 0;
}

static int dl_epoch(struct ckh_session *s, const char *node, void *arg)
{
    const struct ckh_blob *a = ckh_ws_find(s->ws, "input1"), *b = ckh_ws_find(s->ws, "input2");
    float d[8];
    uint64_t shape[1] = {8};
    (void)node;
    (void)arg;
    strcat(order, "E");
    for (int i = 0; i < 8; i++)
        d[i] = ((const float *)a->data)[i] + ((const float *)b->data)[i];
    return ckh_ws_set(s->ws, "output", CKH_DT_F32, 1, shape, d);
}

static int dl_download(struct ckh_session *s, const char *node, void *arg)
{
    (void)node;
    (void)arg;
    strcat(order, "D");
    return ckh_ws_copy(s->ws, "output", "download_result");
}

static int dl_exit(struct ckh_session *s, const char *node, void *arg)
{
    (void)s;
    (void)node;
    (void)arg;
    strcat(order, "X");
    return 0;
}

START_TEST(test_download_group_simple)
{
    struct ckh_job *job;
    struct ckh_ws *ws;
    struct ckh_session s = {.env = env};
    struct ckh_runner_config cfg = {.resume_from_epoch = -1};
    int64_t epochs = 0;
    const struct ckh_blob *o, *d;
    order[0] = '\0';
    ck_assert_int_eq(ckh_job_create(NULL, &job), 0);
    ck_assert_int_eq(ckh_job_epoch_limiter(job, "trainer:0", 1), 0);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_INIT, "trainer:0", "init", dl_init, NULL), 0);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_EPOCH, "trainer:0", "net", dl_epoch, NULL), 0);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_DOWNLOAD, "trainer:0", "dl", dl_download, NULL), 0);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_EXIT, "trainer:0", "exit", dl_exit, NULL), 0);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    s.ws = ws;
    cfg.job = job;
    ck_assert_int_eq(ckh_runner_run(&cfg, &s, &epochs), 0);
    ck_assert_int_eq(epochs, 1);
    ck_assert_str_eq(order, "IEDX");
    o = ckh_ws_find(ws, "output");
    d = ckh_ws_find(ws, "download_result");
    for (int i = 0; i < 8; i++) {
        ck_assert(((const float *)o->data)[i] == 2.0f);
        ck_assert(((const float *)d->data)[i] == 2.0f);
    }
    ckh_ws_destroy(ws);
    ckh_job_destroy(job);
}
END_TEST

START_TEST(test_epoch_limiter_three)
{
    struct ckh_job *job;
    struct ckh_ws *ws;
    struct ckh_session s = {.env = env};
    struct ckh_runner_config cfg = {.resume_from_epoch = -1};
    int64_t epochs = 0;
    order[0] = '\0';
    ck_assert_int_eq(ckh_job_create(NULL, &job), 0);
    ck_assert_int_eq(ckh_job_epoch_limiter(job, "n", 3), 0);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_DOWNLOAD, "n", "dl", dl_exit, NULL), 0);
    ck_assert_int_eq(ckh_job_epoch_limiter(job, "n", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    s.ws = ws;
    cfg.job = job;
    ck_assert_int_eq(ckh_runner_run(&cfg, &s, &epochs), 0);
    ck_assert_int_eq(epochs, 3);
    ck_assert_str_eq(order, "X");
    ckh_ws_destroy(ws);
    ckh_job_destroy(job);
}
END_TEST

START_TEST(test_metadata_resume)
{
    /* With a metadata handler the runner resumes from the latest epoch
     * complete on every node without being told. */
    struct ckh_job *job = pipeline_job(0, 2);
    struct ckh_meta *meta;
    struct ckh_ckpt *ck;
    struct ckh_ws *ws;
    struct ckh_session s = {.env = env};
    struct ckh_runner_config cfg = {.resume_from_epoch = -1};
    char msg[256];
    int64_t epochs = 0;
    ck_assert_int_eq(ckh_meta_create(NULL, &meta), 0);
    ck_assert_int_eq(ckh_ckpt_create_multi(env, "/ckpt", "minidb", meta, &ck, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    s.ws = ws;
    cfg.job = job;
    cfg.ckpt = ck;
    ck_assert(ckh_ckpt_accessible(ck, -1));
    ck_assert(!ckh_ckpt_accessible(ck, 0));
    ck_assert_int_eq(ckh_runner_run(&cfg, &s, &epochs), 0);
    ck_assert_int_eq(cfg.resumed_from, -1);
    ck_assert(ckh_ckpt_accessible(ck, 4));
    ckh_ckpt_destroy(ck);
    ckh_meta_destroy(meta);
    ckh_ws_destroy(ws);
    /* node trainer_1 loses epochs 3 and 4: resume from 2 */
    ck_assert_int_eq(ckh_fs_unlink(env->fs, "/ckpt/trainer_1.4"), 0);
    ck_assert_int_eq(ckh_fs_unlink(env->fs, "/ckpt/trainer_1.3"), 0);
    ck_assert_int_eq(ckh_meta_create(NULL, &meta), 0);
    ck_assert_int_eq(ckh_ckpt_create_multi(env, "/ckpt", "minidb", meta, &ck, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    s.ws = ws;
    cfg.ckpt = ck;
    ck_assert_int_eq(ckh_runner_run(&cfg, &s, &epochs), 0);
    ck_assert_int_eq(cfg.resumed_from, 2);
    ck_assert_int_eq(epochs, 4);
    ck_assert_int_eq(total_of(ws, "trainer_0"), 145);
    ck_assert_int_eq(total_of(ws, "trainer_1"), 145);
    {
        struct ckh_ckpt_stat st;
        ck_assert_int_eq(ckh_ckpt_stat_get(ck, 1, &st), 0);
        ck_assert_str_eq(st.op, "checkpoint_save");
        ck_assert_str_eq(st.db_name, "/ckpt/trainer_1.4");
        ck_assert_int_eq(st.result, 0);
    }
    ckh_ckpt_destroy(ck);
    ckh_meta_destroy(meta);
    ckh_ws_destroy(ws);
    ckh_job_destroy(job);
}
END_TEST

START_TEST(test_bad_input)
{
    struct ckh_ckpt *ck = NULL;
    char msg[256] = "";
    ck_assert_int_eq(ckh_ckpt_create_multi(env, "/ckpt", "nosuchdb", NULL, &ck, msg, sizeof msg),
                     CKH_ENOTFOUND);
    ck_assert_ptr_null(ck);
    ck_assert_ptr_nonnull(strstr(msg, "nosuchdb"));
    ck_assert_int_eq(ckh_ckpt_create_single(env, "/ckpt", "../x", "minidb", NULL, &ck, msg, sizeof msg),
                     CKH_EESCAPE);
    ck_assert_int_eq(ckh_ckpt_create_single(env, "/ckpt", "", "minidb", NULL, &ck, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_create_multi(NULL, "/ckpt", "minidb", NULL, &ck, msg, sizeof msg),
                     CKH_EINVAL);
    ck = make_ckpt(true);
    {
        struct ckh_ws *ws;
        struct ckh_session s = {.env = env};
        ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
        s.ws = ws;
        ck_assert_int_eq(ckh_ckpt_save(ck, &s, 1), CKH_ESTATE);
        ck_assert_int_eq(ckh_ckpt_init(ck, &s, (const char *const[]){"a/b"}, 1, -1), CKH_EESCAPE);
        ckh_ws_destroy(ws);
    }
    ckh_ckpt_destroy(ck);
}
END_TEST

/* The manager's refusals and states beyond test_bad_input: NULL arguments
 * of every call, calls in the wrong order, init again with other nodes,
 * a session that handles one node of two, and what the accessors answer
 * past the end. */
START_TEST(test_manager_refusals_and_states)
{
    struct ckh_ckpt *ck = NULL;
    struct ckh_ws *ws;
    char msg[256] = "", buf[CKH_PATH_MAX];
    struct ckh_ckpt_stat st;
    int64_t e;
    const char *const ab[] = {"A", "B"}, *const ac[] = {"A", "C"};
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    struct ckh_session s = {.env = env, .ws = ws}, nows = {.env = env};

    ck_assert_int_eq(ckh_ckpt_create_multi(env, NULL, "minidb", NULL, &ck, msg, sizeof msg), CKH_EINVAL);
    ck_assert_str_eq(msg, "checkpoint manager: NULL argument");
    ck_assert_int_eq(ckh_ckpt_create_multi(env, "/ckpt", NULL, NULL, &ck, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_create_multi(env, "/ckpt", "minidb", NULL, NULL, msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_create_single(env, "/ckpt", NULL, "minidb", NULL, &ck, msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_create_single(env, "/ckpt", "..", "minidb", NULL, &ck, msg, sizeof msg),
                     CKH_EESCAPE);
    ck_assert_str_eq(msg, "checkpoint manager: bad node name '..'");
    ck_assert_str_eq(ckh_ckpt_errmsg(NULL), "no checkpoint manager");
    ck_assert_ptr_null(ckh_ckpt_backend(NULL));
    ck_assert_uint_eq(ckh_ckpt_node_count(NULL), 0);
    ck_assert_ptr_null(ckh_ckpt_node_name(NULL, 0));
    ck_assert(!ckh_ckpt_accessible(NULL, 1));
    ckh_ckpt_report_stats(NULL, "x");
    ckh_ckpt_destroy(NULL);

    /* a single-node manager takes one node */
    ck = make_ckpt(false);
    ck_assert_ptr_nonnull(ckh_ckpt_backend(ck));
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, ab, 2, -1), CKH_EINVAL);
    ck_assert_str_eq(ckh_ckpt_errmsg(ck), "a single-node checkpoint manager supports one node, got 2");
    ck_assert_int_eq(ckh_ckpt_load(ck, &s, 1), CKH_ESTATE);
    ck_assert_str_eq(ckh_ckpt_errmsg(ck), "init must be called first");
    ck_assert_int_eq(ckh_ws_set_i64(ws, "temp_node/x", 5), 0);
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, NULL, 0, -1), 0);
    ck_assert_str_eq(ckh_ckpt_node_name(ck, 0), "temp_node");
    ck_assert_ptr_null(ckh_ckpt_node_name(ck, 1));
    ck_assert_int_eq(ckh_ckpt_stat_get(ck, 1, &st), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_stat_get(ck, 0, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_stat_get(NULL, 0, &st), CKH_EINVAL);
    /* a missing epoch: the backend's message, the stats say which file */
    ck_assert_int_lt(ckh_ckpt_load(ck, &s, 7), 0);
    ck_assert_ptr_nonnull(strstr(ckh_ckpt_errmsg(ck), "temp_node.7"));
    ck_assert_int_eq(ckh_ckpt_stat_get(ck, 0, &st), 0);
    ck_assert_str_eq(st.op, "checkpoint_load");
    ck_assert_int_eq(st.epoch, 7);
    ck_assert_ptr_nonnull(strstr(st.db_name, "/ckpt/temp_node.7"));
    ck_assert_int_ne(st.result, 0);
    ck_assert_int_eq(ckh_ckpt_save(ck, &s, 1), 0);
    ck_assert_int_eq(ckh_ckpt_sync(ck, &s, 1), 0);
    ck_assert_int_eq(ckh_ckpt_sync(NULL, &s, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_sync(ck, NULL, 1), CKH_EINVAL);
    ckh_ckpt_report_stats(ck, "after save");
    /* without a metadata handler: every epoch is accessible, nothing is recorded */
    ck_assert(ckh_ckpt_accessible(ck, 99));
    ck_assert_int_eq(ckh_ckpt_write_metadata(ck, &s, 1), 0);
    ck_assert_int_eq(ckh_ckpt_write_metadata(NULL, &s, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_write_metadata(ck, NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, NULL, 0, -1, &e), 0);
    ck_assert_int_eq(e, -1);
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, NULL, 0, 3, &e), 0);
    ck_assert_int_eq(e, 3);
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, NULL, 1, -1, &e), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, NULL, 0, -1, NULL), CKH_EINVAL);
    ckh_ckpt_destroy(ck);

    /* NULL arguments of the calls on a manager */
    ck = make_ckpt(true);
    ck_assert_int_eq(ckh_ckpt_init(NULL, &s, ab, 2, -1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_init(ck, NULL, ab, 2, -1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_init(ck, &nows, ab, 2, -1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, NULL, 2, -1), CKH_EINVAL);
    ck_assert_str_eq(ckh_ckpt_errmsg(ck), "init: NULL argument");
    ck_assert_int_eq(ckh_ckpt_load(NULL, &s, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_load(ck, &nows, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_save(ck, NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_save(ck, &nows, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_load_blobs_locally(ck, &s, ab, 2, NULL, 1, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_load_blobs_locally(NULL, &s, ab, 2, NULL, 0, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_db_name(NULL, "A", 1, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_db_name(ck, NULL, 1, buf, sizeof buf), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_db_name(ck, "A", 1, NULL, sizeof buf), CKH_EINVAL);
    /* multi-node: no nodes yet, then A and B; init again with other nodes is refused */
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, NULL, 0, -1, &e), 0);
    ck_assert_int_eq(ckh_ckpt_db_name(ck, "A", 1, buf, sizeof buf), CKH_ENOTFOUND);
    ck_assert_int_eq(ckh_ws_set_i64(ws, "A/x", 1), 0);
    ck_assert_int_eq(ckh_ws_set_i64(ws, "B/x", 2), 0);
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, ab, 2, -1), 0);
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, ab, 2, -1), 0);
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, ac, 2, -1), CKH_EINVAL);
    ck_assert_str_eq(ckh_ckpt_errmsg(ck), "init called again with different nodes");
    ck_assert_int_eq(ckh_ckpt_init(ck, &s, ab, 1, -1), CKH_EINVAL);
    ck_assert_int_eq(ckh_ckpt_db_name(ck, "B", 4, buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "/ckpt/B.4");
    ckh_ckpt_destroy(ck);
    ckh_ws_destroy(ws);
}
END_TEST

/* A metadata handler: the latest epoch every node completed, from what was
 * recorded in this process and what the backend lists; one session that
 * handles only node A saves and records only A. */
START_TEST(test_metadata_and_a_partial_session)
{
    struct ckh_meta *meta;
    struct ckh_ckpt *ck;
    struct ckh_ws *ws;
    char msg[256];
    int64_t e;
    const char *const ab[] = {"A", "B"};
    ck_assert_int_eq(ckh_meta_create(NULL, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_meta_create(NULL, &meta), 0);
    ck_assert_int_eq(ckh_meta_write(NULL, "A", 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_meta_write(meta, NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_meta_write(meta, "A", -1), CKH_EINVAL);
    ck_assert_int_eq(ckh_meta_last_epoch(NULL, NULL, ab, 2, &e), CKH_EINVAL);
    ck_assert_int_eq(ckh_meta_last_epoch(meta, NULL, NULL, 2, &e), CKH_EINVAL);
    ck_assert_int_eq(ckh_meta_last_epoch(meta, NULL, ab, 2, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_meta_last_epoch(meta, NULL, ab, 0, &e), 0);
    ck_assert_int_eq(e, -1);
    /* recorded: A has 1, 2, 3; B has 1 and 2 */
    for (int64_t k = 1; k <= 3; k++)
        ck_assert_int_eq(ckh_meta_write(meta, "A", k), 0);
    ck_assert_int_eq(ckh_meta_write(meta, "B", 2), 0);
    ck_assert_int_eq(ckh_meta_write(meta, "B", 1), 0);
    ck_assert_int_eq(ckh_meta_last_epoch(meta, NULL, ab, 2, &e), 0);
    ck_assert_int_eq(e, 2);
    ck_assert_int_eq(ckh_meta_last_epoch(meta, NULL, (const char *const[]){"B", "A"}, 2, &e), 0);
    ck_assert_int_eq(e, 2);
    ck_assert_int_eq(ckh_meta_last_epoch(meta, NULL, (const char *const[]){"C"}, 1, &e), 0);
    ck_assert_int_eq(e, -1);

    /* a manager over it: a session for A alone saves A's checkpoints only */
    ck_assert_int_eq(ckh_ckpt_create_multi(env, "/ckpt", "minidb", meta, &ck, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    ck_assert_int_eq(ckh_ws_set_i64(ws, "A/x", 1), 0);
    ck_assert_int_eq(ckh_ws_set_i64(ws, "B/x", 2), 0);
    struct ckh_session sa = {.env = env, .ws = ws, .local_node = "A"};
    ck_assert(!ckh_ckpt_accessible(ck, 5)); /* no nodes yet */
    ck_assert(ckh_ckpt_accessible(ck, -1)); /* the folder exists */
    ck_assert_int_eq(ckh_ckpt_init(ck, &sa, ab, 2, -1), 0);
    ck_assert_int_lt(ckh_ckpt_load(ck, &sa, 1), 0); /* recorded, but never written to disk */
    ck_assert_int_eq(ckh_ckpt_save(ck, &sa, 5), 0);
    ck_assert_int_eq(ckh_ckpt_sync(ck, &sa, 5), 0);
    ck_assert_int_eq(ckh_ckpt_write_metadata(ck, &sa, 5), 0);
    /* B never saved 5: not accessible, and the resume epoch stays at 2 */
    ck_assert(!ckh_ckpt_accessible(ck, 5));
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, ab, 2, -1, &e), 0);
    ck_assert_int_eq(e, 2);
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, ab, 2, 4, &e), 0);
    ck_assert_int_eq(e, 4);
    /* partial loads: A's 5 exists, B's does not (0: not every node's checkpoint exists) */
    ck_assert_int_eq(ckh_ckpt_load_blobs_locally(ck, &sa, ab, 2, (const char *const[]){"A/x"}, 1, 5), 0);
    /* B saves 5 too: accessible, and the last epoch complete everywhere is 5 */
    struct ckh_session sb = {.env = env, .ws = ws, .local_node = "B"};
    ck_assert_int_eq(ckh_ckpt_init(ck, &sb, ab, 2, -1), 0);
    ck_assert_int_eq(ckh_ckpt_save(ck, &sb, 5), 0);
    ck_assert(ckh_ckpt_accessible(ck, 5));
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, ab, 2, -1, &e), 0);
    ck_assert_int_eq(e, 5);
    ck_assert_int_eq(ckh_meta_last_epoch(meta, ckh_ckpt_backend(ck), ab, 2, &e), 0);
    ck_assert_int_eq(e, 5);
    ck_assert_int_eq(ckh_ckpt_load_blobs_locally(ck, &sa, ab, 2, (const char *const[]){"A/x", "Z/none"}, 2, 5), 1);
    ckh_ckpt_destroy(ck);

    /* a single-node manager asks the handler for its one node */
    ck_assert_int_eq(ckh_ckpt_create_single(env, "/ckpt", "A", "minidb", meta, &ck, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_ckpt_resume_epoch(ck, NULL, 0, -1, &e), 0);
    ck_assert_int_eq(e, 5);
    ckh_ckpt_destroy(ck);
    ckh_ws_destroy(ws);
    ckh_meta_destroy(meta);
    ckh_meta_destroy(NULL);
}
END_TEST

static int task_count(struct ckh_session *s, const char *node, void *arg)
{
    (void)s;
    (void)node;
    ++*(int *)arg;
    return 0;
}

static int task_fail(struct ckh_session *s, const char *node, void *arg)
{
    (void)s;
    (void)node;
    (void)arg;
    return CKH_ECORRUPT;
}

/* Jobs: the refusals of every call (the message names what was wrong), a
 * task without a name, a session that runs only its own node's tasks, and
 * the runner's refusals. */
START_TEST(test_job_refusals)
{
    struct ckh_job *job;
    struct ckh_ws *ws;
    const char *const *nodes;
    size_t n;
    int count = 0;
    ck_assert_int_eq(ckh_job_create(NULL, NULL), CKH_EINVAL);
    ck_assert_str_eq(ckh_job_errmsg(NULL), "no job");
    ck_assert_ptr_null(ckh_job_alloc(NULL));
    ck_assert(!ckh_session_is_local(NULL, "a"));
    ck_assert_int_eq(ckh_job_create(NULL, &job), 0);
    ck_assert_int_eq(ckh_ws_create(NULL, &ws), 0);
    struct ckh_session s = {.env = env, .ws = ws}, only_b = {.env = env, .ws = ws, .local_node = "b"};
    ck_assert(!ckh_session_is_local(&s, NULL));

    ck_assert_int_eq(ckh_job_add_task(NULL, CKH_GROUP_INIT, "a", "t", task_count, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP__COUNT, "a", "t", task_count, &count), CKH_EINVAL);
    ck_assert_str_eq(ckh_job_errmsg(job), "bad group 4 or NULL task function");
    ck_assert_int_eq(ckh_job_add_task(job, (enum ckh_group)-1, "a", "t", task_count, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_INIT, "a", "t", NULL, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_INIT, NULL, "t", task_count, &count), CKH_EINVAL);
    ck_assert_str_eq(ckh_job_errmsg(job), "bad node name '(null)'");
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_INIT, "a/b", "t", task_count, &count), CKH_EESCAPE);
    ck_assert_str_eq(ckh_job_errmsg(job), "bad node name 'a/b'");
    ck_assert_uint_eq(ckh_job_group_size(job, CKH_GROUP_INIT), 0);
    ck_assert_uint_eq(ckh_job_group_size(job, CKH_GROUP__COUNT), 0);
    ck_assert_uint_eq(ckh_job_group_size(NULL, CKH_GROUP_INIT), 0);

    ck_assert_int_eq(ckh_job_own(NULL, &count), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_own(job, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_add_stop_condition(NULL, "a", "x"), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_add_stop_condition(job, "a", ""), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_add_stop_condition(job, "a", NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_add_stop_condition(job, "..", "x"), CKH_EINVAL);
    ck_assert_str_eq(ckh_job_errmsg(job), "bad stop condition");
    ck_assert_int_eq(ckh_job_epoch_limiter(NULL, "a", 2), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_epoch_limiter(job, "a", 0), CKH_EINVAL);
    ck_assert_str_eq(ckh_job_errmsg(job), "epoch limiter needs a node and num_epochs >= 1");
    ck_assert_int_eq(ckh_job_epoch_limiter(job, "", 2), CKH_EINVAL);

    ck_assert_int_eq(ckh_job_set_nodes_to_checkpoint(NULL, NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_set_nodes_to_checkpoint(job, NULL, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_set_nodes_to_checkpoint(job, (const char *const[]){"ok", "."}, 2), CKH_EESCAPE);
    ck_assert_str_eq(ckh_job_errmsg(job), "bad node name to checkpoint");
    ck_assert_int_eq(ckh_job_nodes_to_checkpoint(NULL, &nodes, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_nodes_to_checkpoint(job, NULL, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_nodes_to_checkpoint(job, &nodes, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_nodes(NULL, &nodes, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_nodes(job, NULL, &n), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_nodes(job, &nodes, NULL), CKH_EINVAL);

    /* tasks on a and b; a session for b runs b's only */
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_INIT, "a", "count a", task_count, &count), 0);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_INIT, "b", NULL, task_count, &count), 0);
    ck_assert_int_eq(ckh_job_add_task(job, CKH_GROUP_EXIT, "b", NULL, task_fail, NULL), 0);
    ck_assert_int_eq(ckh_job_nodes(job, &nodes, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ckh_job_run_group(job, &only_b, CKH_GROUP_INIT, "init", 0), 0);
    ck_assert_int_eq(count, 1);
    ck_assert_int_eq(ckh_job_run_group(job, &s, CKH_GROUP_INIT, "init", 0), 0);
    ck_assert_int_eq(count, 3);
    /* a failing task is named, with its phase and epoch; "task" when it has no name */
    ck_assert_int_eq(ckh_job_run_group(job, &s, CKH_GROUP_EXIT, "exit", 4), CKH_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(ckh_job_errmsg(job), "task 'task' on node 'b' (exit, epoch 4) failed: "));
    ck_assert_int_eq(ckh_job_run_group(NULL, &s, CKH_GROUP_INIT, "init", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_run_group(job, NULL, CKH_GROUP_INIT, "init", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_run_group(job, &(struct ckh_session){.ws = ws}, CKH_GROUP_INIT, "init", 0),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_job_run_group(job, &(struct ckh_session){.env = env}, CKH_GROUP_INIT, "init", 0),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_job_run_group(job, &s, CKH_GROUP__COUNT, "init", 0), CKH_EINVAL);
    ck_assert_int_eq(ckh_job_run_group(job, &s, CKH_GROUP_INIT, NULL, 0), CKH_EINVAL);
    ck_assert_int_eq(count, 3);

    /* stop conditions: only the session's own nodes count */
    ck_assert_int_eq(ckh_job_add_stop_condition(job, "a", "a/stop"), 0);
    ck_assert(!ckh_job_should_stop(NULL, &s));
    ck_assert(!ckh_job_should_stop(job, NULL));
    ck_assert(!ckh_job_should_stop(job, &s));
    ck_assert_int_eq(ckh_ws_set_i64(ws, "a/stop", 1), 0);
    ck_assert(ckh_job_should_stop(job, &s));
    ck_assert(!ckh_job_should_stop(job, &only_b));

    /* the runner */
    int64_t epochs;
    struct ckh_runner_config cfg = {.job = job, .resume_from_epoch = -1};
    ck_assert_int_eq(ckh_runner_run(NULL, &s, &epochs), CKH_EINVAL);
    ck_assert_int_eq(ckh_runner_run(&(struct ckh_runner_config){0}, &s, &epochs), CKH_EINVAL);
    ck_assert_int_eq(ckh_runner_run(&cfg, NULL, &epochs), CKH_EINVAL);
    ck_assert_int_eq(ckh_runner_run(&cfg, &(struct ckh_session){.env = env}, &epochs), CKH_EINVAL);
    ck_assert_int_eq(ckh_runner_run(&cfg, &s, NULL), CKH_EINVAL);
    ck_assert_int_eq(ckh_runner_load_blobs_from_checkpoints(NULL, &s, NULL, 0, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_runner_load_blobs_from_checkpoints(&cfg, &s, NULL, 0, 1), CKH_EINVAL); /* no ckpt */
    ck_assert_int_eq(ckh_upload_to_dir(NULL, &s, (struct ckh_ckpt *)1, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_upload_to_dir("/up", NULL, (struct ckh_ckpt *)1, 1), CKH_EINVAL);
    ck_assert_int_eq(ckh_upload_to_dir("/up", &s, NULL, 1), CKH_EINVAL);
    ckh_job_destroy(job);
    ckh_job_destroy(NULL);
    ckh_ws_destroy(ws);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("seed");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_single_checkpoint);
    tcase_add_test(tc, test_multi_checkpoint);
    tcase_add_test(tc, test_ckpt_name);
    tcase_add_test(tc, test_load_model_from_ckpts);
    tcase_add_test(tc, test_upload_checkpoint);
    tcase_add_test(tc, test_ckpt_save_failure);
    tcase_add_test(tc, test_download_group_simple);
    tcase_add_test(tc, test_epoch_limiter_three);
    tcase_add_test(tc, test_metadata_resume);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_manager_refusals_and_states);
    tcase_add_test(tc, test_metadata_and_a_partial_session);
    tcase_add_test(tc, test_job_refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
