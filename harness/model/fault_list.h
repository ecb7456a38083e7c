/* The fault list: the one place a fault is registered.
 *
 * X(ENUM, ident): ENUM names enum ckh_scn_action_kind's value
 * (CKH_SCN_ACT_<ENUM>), ident the descriptor `ckh__fault_<ident>` that
 * harness/model/faults/<name>.c defines (struct ckh_fault_ops, faults/fault.h).
 * The order is the enum's, the registry's, `ckh list faults`' and the
 * fuzzer's; append only (stored scenarios and coverage tables index it).
 * Everything else about a fault (name, keys, parser, writer, arming,
 * at-rest application, generation, description) lives in its own file.
 */
#ifndef CKH_FAULTS_LIST_H
#define CKH_FAULTS_LIST_H

#define CKH_FAULT_LIST(X)                                                      \
    X(KILL, kill)                                                              \
    X(CRASH, crash)                                                            \
    X(POWER_LOSS, power_loss)                                                  \
    X(ERRNO, errno_fault)                                                       \
    X(FSYNC_FAIL, fsync_fail)                                                  \
    X(DISK_FULL, disk_full)                                                    \
    X(DELAY, delay)                                                            \
    X(CORRUPT, corrupt)                                                        \
    X(REMOVE_DIR, remove_dir)                                                  \
    X(DANGLING_LATEST, dangling_latest)                                        \
    X(STALE_LATEST, stale_latest)                                              \
    X(DIE_IN_COLLECTIVE, die_in_collective)                                    \
    X(MISMATCH_COLLECTIVE, mismatch_collective)                                \
    X(GPU_OOM, gpu_oom)                                                        \
    X(SHORT_WRITE, short_write)                                                \
    X(SIGTERM, sigterm)                                                        \
    X(S3_RESET, s3_reset)                                                      \
    X(S3_EXPIRE, s3_expire)                                                    \
    X(S3_CORRUPT, s3_corrupt)                                                  \
    X(S3_STALE_LIST, s3_stale_list)

#endif
