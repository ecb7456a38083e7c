/* Tests of ckh on many machines (harness/cli/cli_dist.c): the rank read
 * from each launcher's environment and the contradictions refused, the
 * option values, and the merge folder's protocol (a run id never mixed
 * with another, a rank never taken twice, nothing overwritten, rank 0's
 * wait naming the ranks that never delivered, partials from other options
 * or damaged refused). The runs under mpirun are tests/test_dist.sh. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckh/err.h"
#include "cli/cli_dist.h"
#include "exec/tmpdir.h"

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "'%s' lacks '%s'", (s), (sub))

/* ---- a fake environment ---- */

static const char *const *fake_env; /* NAME, VALUE, ..., NULL */

static const char *fake_get(const char *name)
{
    for (size_t i = 0; fake_env && fake_env[i]; i += 2)
        if (strcmp(fake_env[i], name) == 0)
            return fake_env[i + 1];
    return NULL;
}

/* Detects with env and the options; returns the code, msg filled. */
static int detect(const char *const *env, const struct ckh_dist_opts *o, struct ckh_dist *d,
                  char *msg, size_t n)
{
    fake_env = env;
    struct ckh_dist_opts none = {0};
    msg[0] = '\0';
    return ckh_dist_detect(o ? o : &none, fake_get, d, msg, n);
}

START_TEST(test_detect_single_machine)
{
    struct ckh_dist d;
    char msg[1024];
    ck_assert_int_eq(detect((const char *[]){NULL}, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.world, 1);
    ck_assert_uint_eq(d.rank, 0);
    ck_assert_str_eq(d.source, "a single machine");
    /* A Slurm batch script is one process: SLURM_PROCID without a step. */
    const char *batch[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "9", NULL};
    ck_assert_int_eq(detect(batch, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.world, 1);
    /* An array task splits nothing unless asked to. */
    const char *array[] = {"SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_COUNT", "4",
                           "SLURM_ARRAY_TASK_MIN", "0", NULL};
    ck_assert_int_eq(detect(array, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.world, 1);
    /* off reads nothing. */
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", NULL};
    struct ckh_dist_opts off = {.mode = CKH_DIST_OFF};
    ck_assert_int_eq(detect(ompi, &off, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.world, 1);
}
END_TEST

START_TEST(test_detect_launchers)
{
    struct ckh_dist d;
    char msg[1024];
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "3",
                          "OMPI_MCA_ess_base_jobid", "1180696577", NULL};
    ck_assert_int_eq(detect(ompi, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 1);
    ck_assert_uint_eq(d.world, 3);
    ck_assert_str_eq(d.launcher_id, "ompi-1180696577");
    ck_assert_str_eq(d.source, "Open MPI (OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=3)");
    ck_assert(ckh_dist_waits(&d));

    const char *pmi[] = {"PMI_RANK", "2", "PMI_SIZE", "3", "PMI_FD", "6", NULL};
    ck_assert_int_eq(detect(pmi, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 2);
    ck_assert_uint_eq(d.world, 3);
    ck_assert_str_eq(d.launcher_id, ""); /* Hydra names no job */

    const char *both[] = {"OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "3", "PMI_RANK",
                          "2", "PMI_SIZE", "3", NULL};
    ck_assert_int_eq(detect(both, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 2);

    const char *srun[] = {"SLURM_PROCID", "3", "SLURM_STEP_NUM_TASKS", "4", "SLURM_NTASKS", "4",
                          "SLURM_JOB_ID", "77", "SLURM_STEP_ID", "0", NULL};
    ck_assert_int_eq(detect(srun, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 3);
    ck_assert_uint_eq(d.world, 4);
    ck_assert_str_eq(d.launcher_id, "slurm-77.0");
    ck_assert(ckh_dist_waits(&d));

    /* mpirun inside an allocation: its daemons' Slurm variables lose. */
    const char *nested[] = {"OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8",
                            "SLURM_PROCID", "1", "SLURM_STEP_NUM_TASKS", "2", NULL};
    ck_assert_int_eq(detect(nested, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 5);
    ck_assert_uint_eq(d.world, 8);

    struct ckh_dist_opts arr = {.mode = CKH_DIST_ARRAY};
    const char *array[] = {"SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "4",
                           "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_STEP", "2",
                           "SLURM_ARRAY_JOB_ID", "4242", NULL};
    ck_assert_int_eq(detect(array, &arr, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 2);
    ck_assert_uint_eq(d.world, 4);
    ck_assert_str_eq(d.launcher_id, "slurm-array-4242");
    ck_assert(!ckh_dist_waits(&d)); /* array tasks do not wait for task 0 */
}
END_TEST

START_TEST(test_detect_refuses)
{
    struct ckh_dist d;
    char msg[1024];
    const char *disagree[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "3",
                              "PMI_RANK", "0", "PMI_SIZE", "2", NULL};
    ck_assert_int_eq(detect(disagree, NULL, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "contradictory");
    HAS(msg, "PMI_RANK=0");

    const char *half[] = {"OMPI_COMM_WORLD_RANK", "1", NULL};
    ck_assert_int_eq(detect(half, NULL, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");

    const char *word[] = {"PMI_RANK", "x1", "PMI_SIZE", "2", NULL};
    ck_assert_int_eq(detect(word, NULL, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "PMI_RANK is 'x1', not a number");

    const char *past[] = {"SLURM_PROCID", "4", "SLURM_STEP_NUM_TASKS", "4", NULL};
    ck_assert_int_eq(detect(past, NULL, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "SLURM_PROCID=4 is not below SLURM_STEP_NUM_TASKS=4");

    const char *zero[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "0", NULL};
    ck_assert_int_eq(detect(zero, NULL, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "OMPI_COMM_WORLD_SIZE is '0'");

    struct ckh_dist_opts mpi = {.mode = CKH_DIST_MPI}, srun = {.mode = CKH_DIST_SRUN};
    ck_assert_int_eq(detect((const char *[]){NULL}, &mpi, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--distributed mpi");
    ck_assert_int_eq(detect((const char *[]){NULL}, &srun, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--distributed srun");

    struct ckh_dist_opts arr = {.mode = CKH_DIST_ARRAY};
    const char *list[] = {"SLURM_ARRAY_TASK_ID", "9", "SLURM_ARRAY_TASK_COUNT", "3",
                          "SLURM_ARRAY_TASK_MIN", "1", NULL};
    ck_assert_int_eq(detect(list, &arr, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--rank I --world N");
    const char *array_srun[] = {"SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_COUNT", "3",
                                "SLURM_ARRAY_TASK_MIN", "0", "SLURM_PROCID", "0",
                                "SLURM_STEP_NUM_TASKS", "2", NULL};
    ck_assert_int_eq(detect(array_srun, &arr, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "both would split the work");
    ck_assert_int_eq(detect((const char *[]){NULL}, &arr, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "SLURM_ARRAY_TASK_ID is unset");
}
END_TEST

START_TEST(test_detect_explicit)
{
    struct ckh_dist d;
    char msg[1024];
    struct ckh_dist_opts o = {.have_rank = true, .have_world = true, .rank = 1, .world = 2};
    ck_assert_int_eq(detect((const char *[]){NULL}, &o, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 1);
    ck_assert_uint_eq(d.world, 2);
    ck_assert_str_eq(d.source, "--rank 1 --world 2");
    ck_assert(!ckh_dist_waits(&d));
    /* One task of srun -n 1 naming its rank of an array: no contradiction. */
    const char *one[] = {"SLURM_PROCID", "0", "SLURM_STEP_NUM_TASKS", "1", NULL};
    ck_assert_int_eq(detect(one, &o, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 1);
    /* Two processes of mpirun -np 2 both claiming rank 1: refused. */
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", NULL};
    ck_assert_int_eq(detect(ompi, &o, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--rank 1 --world 2, but Open MPI (OMPI_COMM_WORLD_RANK=0");
    o.mode = CKH_DIST_OFF;
    ck_assert_int_eq(detect(ompi, &o, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 1);
    struct ckh_dist_opts half = {.have_rank = true, .rank = 0};
    ck_assert_int_eq(detect((const char *[]){NULL}, &half, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--rank and --world go together");
    struct ckh_dist_opts past = {.have_rank = true, .have_world = true, .rank = 2, .world = 2};
    ck_assert_int_eq(detect((const char *[]){NULL}, &past, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--rank 2 is not below --world 2");
}
END_TEST

START_TEST(test_options)
{
    struct ckh_dist_opts o = {0};
    char msg[512];
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_DISTRIBUTED, "slurm-array", msg, sizeof msg), 0);
    ck_assert_int_eq(o.mode, CKH_DIST_ARRAY);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_DISTRIBUTED, "mpich", msg, sizeof msg),
                     CKH_EINVAL);
    HAS(msg, "--distributed expects auto, off, mpi, srun or slurm-array, got 'mpich'");
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_WORLD, "0", msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--world expects an integer 1..65536, got '0'");
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RANK, "-1", msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_MERGE_TIMEOUT, "2s", msg, sizeof msg), 0);
    ck_assert_uint_eq(o.merge_timeout_ms, 2000);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_MERGE_TIMEOUT, "0", msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RUN_ID, "../x", msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "--run-id expects");
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RUN_ID, ".hidden", msg, sizeof msg),
                     CKH_EINVAL);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RUN_ID, "nightly-2024.05_1", msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_MERGE_DIR, "", msg, sizeof msg), CKH_EINVAL);
    ck_assert(ckh_dist_is_option(CKH_DIST_OPT_RUN_ID));
    ck_assert(!ckh_dist_is_option('s'));
}
END_TEST

/* Run ids character by character, and the launchers' ids that ckh takes
 * as the run id (or leaves, when a character would be unsafe in a file
 * name). */
START_TEST(test_options_edges)
{
    struct ckh_dist_opts o = {0};
    char msg[512], id[CKH_DIST_RUN_ID_LEN + 8];
    static const char *const good[] = {"a", "Z", "0", "a.b", "a_b", "a-b", "AZaz09._-"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(ckh_dist_option(&o, CKH_DIST_OPT_RUN_ID, good[i], msg, sizeof msg) == 0, "%s",
                      good[i]);
    static const char *const bad[] = {"", "a b", "a/b", "a:b", "é", "a~", "[x]", "{x}", "a@b", "`"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(ckh_dist_option(&o, CKH_DIST_OPT_RUN_ID, bad[i], msg, sizeof msg) == CKH_EINVAL,
                      "'%s'", bad[i]);
        HAS(msg, "--run-id expects 1 to 87 letters, digits");
    }
    /* the longest id has room for the suffixes of the merge folder's files */
    memset(id, 'i', 87);
    id[87] = '\0';
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RUN_ID, id, msg, sizeof msg), 0);
    id[87] = 'i';
    id[88] = '\0';
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RUN_ID, id, msg, sizeof msg), CKH_EINVAL);
    /* a merge timeout under 1ms, and a value that is not a duration */
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_MERGE_TIMEOUT, "500us", msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "at least 1ms");
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_MERGE_TIMEOUT, "soon", msg, sizeof msg), CKH_EINVAL);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_MERGE_TIMEOUT, "1ms", msg, sizeof msg), 0);
    ck_assert_uint_eq(o.merge_timeout_ms, 1);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_MERGE_DIR, "/shared/m", msg, sizeof msg), 0);
    ck_assert_str_eq(o.merge_dir, "/shared/m");
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RANK, "65535", msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_RANK, "65536", msg, sizeof msg), CKH_EINVAL);
    for (int i = 0; i < 5; i++) {
        static const char *const modes[] = {"auto", "off", "mpi", "srun", "slurm-array"};
        ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT_DISTRIBUTED, modes[i], msg, sizeof msg), 0);
        ck_assert_int_eq((int)o.mode, i);
    }
    /* not one of its options */
    ck_assert_int_eq(ckh_dist_option(&o, CKH_DIST_OPT__END, "x", msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "unknown option");
    ck_assert(!ckh_dist_is_option(CKH_DIST_OPT__END));
    ck_assert(!ckh_dist_is_option(CKH_DIST_OPT_DISTRIBUTED - 1));
    ck_assert(ckh_dist_is_option(CKH_DIST_OPT_DISTRIBUTED));
}
END_TEST

START_TEST(test_detect_launcher_ids)
{
    struct ckh_dist d;
    char msg[1024];
    /* PMIx names the job when Open MPI's variable is absent */
    const char *pmix[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2",
                          "PMIX_NAMESPACE", "prterun-host-1234@1", NULL};
    ck_assert_int_eq(detect(pmix, NULL, &d, msg, sizeof msg), 0);
    ck_assert_str_eq(d.launcher_id, ""); /* '@' is not safe in a file name: not used */
    const char *pmix_ok[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2",
                             "PMIX_NAMESPACE", "prterun-host-1234.1", NULL};
    ck_assert_int_eq(detect(pmix_ok, NULL, &d, msg, sizeof msg), 0);
    ck_assert_str_eq(d.launcher_id, "ompi-prterun-host-1234.1");
    /* Open MPI and MPICH agreeing are one source */
    const char *both[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2",
                          "PMI_RANK", "1", "PMI_SIZE", "2", NULL};
    ck_assert_int_eq(detect(both, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 1);
    /* MPICH alone names no job */
    const char *hydra[] = {"PMI_RANK", "2", "PMI_SIZE", "3", NULL};
    ck_assert_int_eq(detect(hydra, NULL, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 2);
    ck_assert_str_eq(d.launcher_id, "");
    ck_assert_str_eq(d.source, "MPICH/PMI (PMI_RANK=2 PMI_SIZE=3)");
    /* srun: job and step, or the job alone */
    const char *srun[] = {"SLURM_PROCID", "1", "SLURM_STEP_NUM_TASKS", "2", "SLURM_JOB_ID", "77",
                          "SLURM_STEP_ID", "3", NULL};
    ck_assert_int_eq(detect(srun, NULL, &d, msg, sizeof msg), 0);
    ck_assert_str_eq(d.launcher_id, "slurm-77.3");
    const char *srun_job[] = {"SLURM_PROCID", "1", "SLURM_STEP_NUM_TASKS", "2", "SLURM_JOB_ID", "77",
                              "SLURM_STEP_ID", "", NULL};
    ck_assert_int_eq(detect(srun_job, NULL, &d, msg, sizeof msg), 0);
    ck_assert_str_eq(d.launcher_id, "slurm-77");
    const char *srun_half[] = {"SLURM_STEP_NUM_TASKS", "2", NULL};
    ck_assert_int_eq(detect(srun_half, NULL, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "SLURM_STEP_NUM_TASKS is set but SLURM_PROCID is not");
    /* a job array with a step, its array job's id; an MPI world of one beside it is fine */
    struct ckh_dist_opts arr = {.mode = CKH_DIST_ARRAY};
    const char *array[] = {"SLURM_ARRAY_TASK_ID", "7", "SLURM_ARRAY_TASK_COUNT", "3",
                           "SLURM_ARRAY_TASK_MIN", "3", "SLURM_ARRAY_TASK_STEP", "2",
                           "SLURM_ARRAY_JOB_ID", "500", "OMPI_COMM_WORLD_RANK", "0",
                           "OMPI_COMM_WORLD_SIZE", "1", NULL};
    ck_assert_int_eq(detect(array, &arr, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 2);
    ck_assert_uint_eq(d.world, 3);
    ck_assert_str_eq(d.launcher_id, "slurm-array-500");
    const char *array_mpi[] = {"SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_COUNT", "3",
                               "SLURM_ARRAY_TASK_MIN", "0", "OMPI_COMM_WORLD_RANK", "0",
                               "OMPI_COMM_WORLD_SIZE", "2", NULL};
    ck_assert_int_eq(detect(array_mpi, &arr, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "and also Open MPI");
    const char *off_step[] = {"SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_COUNT", "3",
                              "SLURM_ARRAY_TASK_MIN", "3", "SLURM_ARRAY_TASK_STEP", "2", NULL};
    ck_assert_int_eq(detect(off_step, &arr, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "task 4 is not one of the 3 tasks 3, 3+2, ...");
    const char *bad_step[] = {"SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_COUNT", "3",
                              "SLURM_ARRAY_TASK_MIN", "3", "SLURM_ARRAY_TASK_STEP", "0", NULL};
    ck_assert_int_eq(detect(bad_step, &arr, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "SLURM_ARRAY_TASK_STEP is '0'");
    HAS(msg, "(not in a job array?)");
    /* --rank with an environment of one process in auto mode: the options win */
    struct ckh_dist_opts o = {.have_rank = true, .have_world = true, .rank = 3, .world = 4};
    const char *single[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1",
                            "OMPI_MCA_ess_base_jobid", "42", NULL};
    ck_assert_int_eq(detect(single, &o, &d, msg, sizeof msg), 0);
    ck_assert_uint_eq(d.rank, 3);
    ck_assert_str_eq(d.launcher_id, "ompi-42");
    /* ... but not when mpi is asked for by name */
    o.mode = CKH_DIST_MPI;
    ck_assert_int_eq(detect(single, &o, &d, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "the environment is contradictory: --rank 3 --world 4");
}
END_TEST

/* ---- the merge folder ---- */

static char base[1024]; /* a fresh folder per test */

static void base_setup(void)
{
    ck_assert_int_eq(ckh_tmp_make(base, sizeof base), 0);
}

static void base_teardown(void)
{
    ckh_tmp_remove(base);
}

/* Joins rank r of world w with run id and fingerprint fp. */
static int join(struct ckh_dist_merge *m, uint32_t r, uint32_t w, const char *id, uint64_t fp,
                char *msg, size_t n)
{
    struct ckh_dist_opts o = {.run_id = id};
    struct ckh_dist d = {.rank = r, .world = w, .from = CKH_DIST_OFF};
    return ckh_dist_join(m, base, &o, &d, "run", fp, msg, n);
}

static bool exists(const char *dir, const char *name)
{
    char path[1200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

START_TEST(test_merge_round_trip)
{
    struct ckh_dist_merge m0, m1, m2;
    char msg[2048];
    ck_assert_int_eq(join(&m0, 0, 3, "r1", 42, msg, sizeof msg), 0);
    ck_assert_int_eq(join(&m1, 1, 3, "r1", 42, msg, sizeof msg), 0);
    ck_assert_int_eq(join(&m2, 2, 3, "r1", 42, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_dist_deliver(&m1, 1, NULL, "abc", 3, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_dist_deliver(&m2, 3, "cannot create a temporary folder", NULL, 0, msg,
                                      sizeof msg), 0);
    struct ckh_dist_part *parts = NULL;
    ck_assert_int_eq(ckh_dist_collect(&m0, 1000, &parts, msg, sizeof msg), 0);
    ck_assert_int_eq(parts[1].status, 1);
    ck_assert_ptr_null(parts[1].error);
    ck_assert_uint_eq(parts[1].len, 3);
    ck_assert_mem_eq(parts[1].payload, "abc", 3);
    ck_assert_uint_eq(parts[1].pid, (uint64_t)getpid());
    ck_assert_int_eq(parts[2].status, 3);
    ck_assert_str_eq(parts[2].error, "cannot create a temporary folder");
    ckh_dist_parts_free(parts, 3);
    ck_assert(exists(m0.dir, "part.1"));
    int st = -1;
    ck_assert_int_eq(ckh_dist_await_merge(&m1, 1, &st), CKH_ETIMEOUT);
    ckh_dist_cleanup(&m0);
    ck_assert(!exists(base, ".ckh-merge")); /* nothing of the run is left */
    ck_assert_int_eq(ckh_dist_await_merge(&m1, 1000, &st), 0);
}
END_TEST

START_TEST(test_merge_refuses_other_runs)
{
    struct ckh_dist_merge a, b;
    char msg[2048];
    ck_assert_int_eq(join(&a, 1, 2, "first", 7, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_dist_deliver(&a, 0, NULL, "x", 1, msg, sizeof msg), 0);
    /* Another run's rank 0 is refused and changes nothing. */
    ck_assert_int_eq(join(&b, 0, 2, "second", 7, msg, sizeof msg), CKH_EEXISTS);
    HAS(msg, "holds the partial results of another run (run id 'first'; this run is 'second')");
    ck_assert(!exists(a.dir, "joined.0"));
    ck_assert(exists(a.dir, "part.1"));
    /* The same rank twice in one run, and a second delivery: refused. */
    ck_assert_int_eq(join(&b, 1, 2, "first", 7, msg, sizeof msg), CKH_EEXISTS);
    HAS(msg, "rank 1 of run 'first' was already taken");
    ck_assert_int_eq(ckh_dist_deliver(&a, 0, NULL, "y", 1, msg, sizeof msg), CKH_EEXISTS);
    HAS(msg, "already delivered");
    /* The same run id joins. */
    ck_assert_int_eq(join(&b, 0, 2, "first", 7, msg, sizeof msg), 0);
    struct ckh_dist_part *parts = NULL;
    ck_assert_int_eq(ckh_dist_collect(&b, 1000, &parts, msg, sizeof msg), 0);
    ck_assert_mem_eq(parts[1].payload, "x", 1); /* the first delivery, kept */
    ckh_dist_parts_free(parts, 2);
}
END_TEST

START_TEST(test_merge_missing_ranks)
{
    struct ckh_dist_merge m0, m1;
    char msg[2048];
    ck_assert_int_eq(join(&m0, 0, 3, "r", 1, msg, sizeof msg), 0);
    ck_assert_int_eq(join(&m1, 1, 3, "r", 1, msg, sizeof msg), 0);
    struct ckh_dist_part *parts = NULL;
    ck_assert_int_eq(ckh_dist_collect(&m0, 60, &parts, msg, sizeof msg), CKH_ETIMEOUT);
    ck_assert_ptr_null(parts);
    HAS(msg, "rank 0 of 3 waited 60ms for the other ranks' results in");
    HAS(msg, "rank 1 joined (host and pid ");
    HAS(msg, "but delivered nothing");
    HAS(msg, "rank 2 never joined");
    /* Giving up tells the waiting ranks, and keeps the folder. */
    ckh_dist_give_up(&m0, 3);
    ck_assert_int_eq(ckh_dist_deliver(&m1, 0, NULL, "z", 1, msg, sizeof msg), 0);
    int st = 0;
    ck_assert_int_eq(ckh_dist_await_merge(&m1, 1000, &st), CKH_ESTATE);
    ck_assert_int_eq(st, 3);
    ck_assert(exists(m0.dir, "part.1"));
}
END_TEST

START_TEST(test_merge_bad_partials)
{
    struct ckh_dist_merge m0, m1, m2;
    char msg[2048];
    ck_assert_int_eq(join(&m0, 0, 3, "r", 1, msg, sizeof msg), 0);
    ck_assert_int_eq(join(&m1, 1, 3, "r", 2, msg, sizeof msg), 0); /* other options */
    ck_assert_int_eq(join(&m2, 2, 3, "r", 1, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_dist_deliver(&m1, 0, NULL, "a", 1, msg, sizeof msg), 0);
    ck_assert_int_eq(ckh_dist_deliver(&m2, 0, NULL, "payload", 7, msg, sizeof msg), 0);
    struct ckh_dist_part *parts = NULL;
    ck_assert_int_eq(ckh_dist_collect(&m0, 1000, &parts, msg, sizeof msg), CKH_EINVAL);
    HAS(msg, "rank 1 (host ");
    HAS(msg, "ran other options: every rank must run the same command");
    ck_assert_int_eq(ckh_dist_exit_status(CKH_EINVAL), 2);
    /* A damaged byte of a payload. */
    char path[1200];
    snprintf(path, sizeof path, "%s/part.1", m0.dir);
    ck_assert_int_eq(unlink(path), 0);
    m1.fingerprint = 1;
    ck_assert_int_eq(ckh_dist_deliver(&m1, 0, NULL, "a", 1, msg, sizeof msg), 0);
    snprintf(path, sizeof path, "%s/part.2", m0.dir);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, -12, SEEK_END), 0);
    fputc('P', f);
    fclose(f);
    ck_assert_int_eq(ckh_dist_collect(&m0, 1000, &parts, msg, sizeof msg), CKH_ECORRUPT);
    HAS(msg, "rank 2's partial is damaged");
    ck_assert_int_eq(ckh_dist_exit_status(CKH_ECORRUPT), 3);
    /* Not a partial at all. */
    f = fopen(path, "wb");
    fputs("hello", f);
    fclose(f);
    ck_assert_int_eq(ckh_dist_collect(&m0, 1000, &parts, msg, sizeof msg), CKH_EFOREIGN);
    HAS(msg, "is not a partial result ckh can read here");
}
END_TEST

static Suite *dist_suite(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("detect");
    tcase_add_test(tc, test_detect_single_machine);
    tcase_add_test(tc, test_detect_launchers);
    tcase_add_test(tc, test_detect_refuses);
    tcase_add_test(tc, test_detect_explicit);
    tcase_add_test(tc, test_options);
    tcase_add_test(tc, test_options_edges);
    tcase_add_test(tc, test_detect_launcher_ids);
    suite_add_tcase(s, tc);
    tc = tcase_create("merge");
    tcase_add_checked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, test_merge_round_trip);
    tcase_add_test(tc, test_merge_refuses_other_runs);
    tcase_add_test(tc, test_merge_missing_ranks);
    tcase_add_test(tc, test_merge_bad_partials);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dist_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
