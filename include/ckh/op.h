/* Operation kinds and the operation descriptor shared by the simulator,
 * its trace, fault rules and the harness's triggers.
 *
 * One X-macro table gives every operation a stable name (used in traces,
 * scenario files and replay filters) and its class.
 */
#ifndef CKH_OP_H
#define CKH_OP_H

#include <stdint.h>

/* X(NAME, "name", class) */
#define CKH_OP_MAP(X)                                                          \
    X(OPEN, "open", FS)                                                        \
    X(READ, "read", FS)                                                        \
    X(PREAD, "pread", FS)                                                      \
    X(WRITE, "write", FS)                                                      \
    X(PWRITE, "pwrite", FS)                                                    \
    X(FSYNC, "fsync", FS)                                                      \
    X(FDATASYNC, "fdatasync", FS)                                              \
    X(FTRUNCATE, "ftruncate", FS)                                              \
    X(CLOSE, "close", FS)                                                      \
    X(RENAME, "rename", FS)                                                    \
    X(UNLINK, "unlink", FS)                                                    \
    X(MKDIR, "mkdir", FS)                                                      \
    X(RMDIR, "rmdir", FS)                                                      \
    X(LISTDIR, "listdir", FS)                                                  \
    X(STAT, "stat", FS)                                                        \
    X(SYMLINK, "symlink", FS)                                                  \
    X(READLINK, "readlink", FS)                                                \
    X(FSYNC_DIR, "fsync_dir", FS)                                              \
    X(BARRIER, "barrier", COLL)                                                \
    X(BROADCAST, "broadcast", COLL)                                            \
    X(ALLREDUCE, "allreduce", COLL)                                            \
    X(ALLGATHER, "allgather", COLL)                                            \
    X(SEND, "send", COLL)                                                      \
    X(RECV, "recv", COLL)                                                      \
    X(SLEEP, "sleep", NODE)                                                    \
    X(ALLOC, "alloc", NODE)                                                    \
    X(LOG, "log", NODE)                                                        \
    X(PHASE, "phase", NODE)                                                    \
    X(START, "start", NODE)                                                    \
    X(EXIT, "exit", NODE)                                                      \
    X(KILL, "kill", NODE)                                                      \
    X(CRASH, "crash", NODE)                                                    \
    X(FAULT, "fault", NODE)                                                    \
    X(SPAWN, "spawn", NODE)                                                    \
    X(JOIN, "join", NODE)                                                      \
    X(TASK_EXIT, "task_exit", NODE)                                            \
    X(S3_PUT, "s3_put", OBJ)                                                   \
    X(S3_GET, "s3_get", OBJ)                                                   \
    X(S3_HEAD, "s3_head", OBJ)                                                 \
    X(S3_DELETE, "s3_delete", OBJ)                                             \
    X(S3_LIST, "s3_list", OBJ)                                                 \
    X(S3_COPY, "s3_copy", OBJ)                                                 \
    X(S3_MPU_CREATE, "s3_mpu_create", OBJ)                                     \
    X(S3_PART, "s3_part", OBJ)                                                 \
    X(S3_COMPLETE, "s3_complete", OBJ)                                         \
    X(S3_ABORT, "s3_abort", OBJ)

enum ckh_op_kind {
#define CKH__OP_ENUM(e, s, c) CKH_OP_##e,
    CKH_OP_MAP(CKH__OP_ENUM)
#undef CKH__OP_ENUM
        CKH_OP__COUNT
};

/* OBJ: a request to an object store's endpoint (command jobs with
 * job.object_store; path "/BUCKET/KEY"; docs/OBJECT_STORE.md). */
enum ckh_op_class { CKH_OPC_FS, CKH_OPC_COLL, CKH_OPC_NODE, CKH_OPC_OBJ };

/* Stable lower-case name of an op ("fsync"); "?" for an unknown kind. */
const char *ckh_op_name(enum ckh_op_kind k);
/* Looks an op up by name; returns its kind or -1. */
int ckh_op_from_name(const char *name);
/* The class of an op (filesystem, collective, node, object store); CKH_OPC_NODE for an
 * unknown kind. */
enum ckh_op_class ckh_op_class(enum ckh_op_kind k);

/* One operation as seen by the simulator's fault rules and trace.
 * Pointers are borrowed for the duration of the call that passes it. */
struct ckh_op {
    enum ckh_op_kind kind; /* what */
    int node;              /* node id performing it (-1: the environment) */
    const char *path;      /* fs: the path (open file: its path); else NULL */
    const char *path2;     /* rename: destination; symlink: target; else NULL */
    uint64_t off;          /* fs: offset; coll: peer or root */
    uint64_t len;          /* fs: byte count; coll: byte count */
    int64_t arg;           /* op-specific (flags, tag, redop, ns to sleep) */
    const char *phase;     /* node's current phase ("save", "epoch", ...) */
    int64_t epoch;         /* node's current epoch (-1 unknown) */
    int64_t step;          /* node's current step (-1 unknown) */
};

#endif
