/* The real platform's launcher, shared by its two files: platform_real.c
 * (the job, launching, reading runs back, the verdict) and
 * platform_real_disk.c (simfs disks served over ckhfs: crashes, power
 * loss, fsync-fail and at-rest faults). Private to harness/exec/.
 *
 * Threads: with ckhfs, each mount's server thread calls node_of_pid, the
 * hook and kill_node while the main thread waits for the processes;
 * `lock` guards the pid cache, the process groups and the power flag.
 * The simfs disks are touched by the servers while mounted, by the main
 * thread only while unmounted (at-rest faults, crashes, verify).
 */
#ifndef CKH_RUN_PLATFORM_REAL_INTERNAL_H
#define CKH_RUN_PLATFORM_REAL_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "ckhfs/ckhfs.h"
#include "exec/mpi.h"
#include "exec/mpi_fs.h"
#include "exec/run_ctx.h"

struct real_job;

/* One ckhfs mount: a disk of the job served at a folder of the run. */
struct real_mount {
    struct real_job *j;       /* the job */
    const char *prefix;       /* the disk's mount path in the nodes' view (borrowed from the scenario) */
    struct ckh_simfs *disk;   /* the disk (borrowed from j->c.disks) */
    int node;                 /* the node of a node-local disk (-1: shared) */
    char dir[PATH_MAX];       /* its mount point */
    struct ckh_ckhfs *fs;     /* the mount (NULL: not mounted) */
};

/* A rank process and its node (read from pids/<pid>). */
struct real_pid {
    pid_t pid;
    int node;
};

struct real_job {
    struct ckh__run_ctx c;       /* workload, instance, names, records, track, disks, env
                                    (no simulator) */
    uint64_t seed;               /* the seed in use */
    char dir[PATH_MAX / 2];      /* the run folder (owned: removed at the end) */
    char scn[PATH_MAX];          /* the scenario file the ranks read */
    char exe[PATH_MAX];          /* the rank program */
    char launcher[PATH_MAX];     /* mpirun of its MPI */
    char mpi_tmp[PATH_MAX];      /* Open MPI's session folder base (inside dir) */
    int *ranks;                  /* [n]: each node's collective rank (-1: none) */
    bool *start;                 /* [n]: the node runs in the current run */
    bool *parked;                /* [n]: outside the current world (restart.world_size) */
    bool fired;                  /* a fault fired in the current run (the store's probe) */
    int run;                     /* the current run (1-based) */
    pid_t *groups;               /* [n]: the process group node i runs in this run (0: none) */
    int subreaper_was;           /* PR_GET_CHILD_SUBREAPER before the job */
    bool subreaper_set;          /* ckh is the child subreaper during the job (restored at the end) */
    bool signals_set;            /* SIGINT, SIGTERM, SIGHUP watched (exec/command_proc.h), restored last */
    /* ---- ckhfs disks (platform_real_disk.c) ---- */
    bool ckhfs;                  /* the disks are simfs disks served over ckhfs */
    struct real_mount *mounts;   /* every distinct disk (owned) */
    size_t nmounts;              /* their count */
    pthread_mutex_t lock;        /* see the top */
    bool lock_ready;             /* lock initialised */
    struct real_pid *pids;       /* the current run's rank processes seen so far (owned) */
    size_t npids, cappids;       /* their count and capacity */
    bool power_armed;            /* the run has a power-loss rule: the hook looks for its note */
    bool power;                  /* the run's power loss happened */
    bool notes;                  /* the run has fsync-fail or at-rest rules: the hook reads notes */
};

/* The simfs disks of the job (one per disk, or per node when not
 * shared), the checkpoint directory made durable on them, one mount
 * folder each, and the fault env for at-rest faults. 0 or a code with
 * j->c.err. */
int ckh__real_disks_init(struct real_job *j);
/* Unmounts and destroys the disks (every path; nothing set up: no-op). */
void ckh__real_disks_free(struct real_job *j);
/* Before run j->run: the at-rest faults of the run without a trigger
 * applied to the disks (firings into j->c.rec), the hook's state reset,
 * then every disk mounted. 0 or a code with j->c.err (FUSE missing or a
 * mount failing: CKH_EINTERNAL, exit status 3). */
int ckh__real_disks_before_run(struct real_job *j);
/* After run j->run, every process gone: every disk unmounted, then the
 * crash model applied for the crashes and the power loss the firing logs
 * show. 0 or a code with j->c.err. */
int ckh__real_disks_after_run(struct real_job *j);
/* Whether the current run's power loss happened (the wait loop then
 * kills every node still running). */
bool ckh__real_power_lost(struct real_job *j);

#endif
