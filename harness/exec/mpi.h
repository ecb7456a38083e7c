/* The real platform's launcher: a scenario's job run as real processes,
 * one per node, under MPI (docs/REAL.md). Private to harness/.
 *
 * `ckh run --platform real FILE` (or `platform: real` in the scenario)
 * runs the job's nodes as processes of the rank program (real/rank_main.c,
 * ckh-rank-openmpi or ckh-rank-mpich, beside the ckh executable): the
 * ranked nodes (collective rank >= 0) together under `mpirun -np W`, MPI
 * rank r being the node of collective rank r; the nodes without a rank as
 * plain processes. Each process builds the workload instance from the
 * same scenario file exactly as the simulated runner does, runs its node's
 * program on the real environment (real/real_env.h) with the run's fault
 * rules, and leaves its records, its phases, its fault firings and its
 * exit status in the run folder. The launcher reads them into the record
 * store (exec/records.h), restarts what failed as the simulated runner
 * does (a failed rank restarts the whole group, as a real launcher
 * would), and the verdict is the simulator's: the same oracles, against
 * the simulator's reference run (so every real run is also a check of the
 * simulator).
 *
 * The run folder (ckh's temporary folder, run/tmpdir.h), shared with the
 * rank program by these names:
 *   disks/<disk>           a shared disk; disks/<disk>.<node> a node-local one
 *                          (each at its `mount` path in the node's view)
 *   results/<node>.<run>.jsonl   the node's records (JSON lines)
 *   track/<node>.<run>     "phase epoch step" per phase the node announced
 *   status/<node>.<run>    the node program's return code, written at its end
 *   faults/<node>.<run>    "fired RULE FAULT OP ACTION PATH" per firing
 *   faults/state.<run>     the run's shared rule counters
 *   logs/launch.<run>      what mpirun and the processes printed
 *
 * With a ckhfs disk (ckh__real_uses_ckhfs: the scenario has crash,
 * power-loss, fsync-fail or at-rest faults, or CKH_REAL_FS=ckhfs), each
 * disk of the job is a simfs disk in the launcher, served during each run
 * over a ckhfs mount (harness/ckhfs/ckhfs.h) seen at the disk's mount path; the
 * crash model, at-rest faults and `verify` act on the simfs disk between
 * runs, as in the simulator (exec/mpi_disk.c). Then also:
 *   mnt/<disk>[.<node>]    the mount points
 *   pids/<pid>             the node index of a rank process (for the mount)
 *   faults/power.<run>     a power loss happened (the rank that fired it)
 *   faults/note.<pid>      a fault the launcher carries out at that
 *                          process's next operation on the mount
 *                          (real/real_faults.h)
 */
#ifndef CKH_RUN_PLATFORM_REAL_H
#define CKH_RUN_PLATFORM_REAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/sim.h"
#include "ckh/workload.h"
#include "exec/records.h"
#include "exec/runner.h"
#include "model/scenario.h"

/* The MPI implementations a build may offer, in order of preference. */
#define CKH_REAL_MPIS {"openmpi", "mpich"}

/* Whether sc runs on the real platform: `platform: real`, or forced by
 * the caller (ckh run --platform real). */
bool ckh__real_selected(const struct ckh_scenario *sc, bool forced);

/* What the real platform cannot run, refused before anything starts:
 * faults that only apply to command jobs (sigterm), a command job. 0, or CKH_EINVAL with
 * "line:col: ..." (or the file's name) in err. */
int ckh__real_check(const struct ckh_scenario *sc, char *err, size_t errlen);

/* Whether sc's job runs on simfs disks served over ckhfs: it has a
 * crash, power-loss, fsync-fail or at-rest fault, or $CKH_REAL_FS is
 * "ckhfs" (forced, for measuring; "posix" never). */
bool ckh__real_uses_ckhfs(const struct ckh_scenario *sc);



/* The rank program of MPI implementation mpi (NULL: the first of
 * CKH_REAL_MPIS that is built, or $CKH_MPI) and its launcher, into exe
 * and launcher ($CKH_MPIRUN when set: a wrapper or another install).
 * CKH_EINTERNAL ("MPI not installed ...", or a $CKH_MPIRUN that is not
 * an executable file: the environment, exit status 3) when none is;
 * CKH_EINVAL for an unknown $CKH_MPI. */
int ckh__real_find_mpi(const char *mpi, char *exe, size_t exen, char *launcher, size_t launchern,
                       char *err, size_t errlen);

/* Runs sc's job on the real platform with seed, as `mode` says
 * (CKH_RUN_* of exec/workloads.h: CKH_RUN_REFERENCE runs it once without
 * faults or defects), into out's runs and out->got (the record of the
 * simulated runner, minus the trace). out is zeroed by the caller, with
 * out->sc = sc; freed with ckh_scenario_run_free. 0, or a negative code
 * with err set. CKH_EINTERNAL (exit status 3) for the environment, each
 * with its message: MPI missing, $CKH_MPIRUN not executable, FUSE
 * missing when the job needs a ckhfs disk, mpirun ending in an error
 * before any rank joined, a node that has not joined by
 * $CKH_REAL_START_TIMEOUT seconds (60; named in the message). On every
 * path each process group is killed and reaped, the disks unmounted and
 * the run folder removed. */
int ckh__real_execute(const struct ckh_scenario *sc, uint64_t seed, unsigned mode, struct ckh_scenario_run *out,
                      char *err, size_t errlen);

#endif
