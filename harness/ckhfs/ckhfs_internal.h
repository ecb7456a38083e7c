/* Private structures of ckhfs, shared by its files:
 *   ckhfs.c        lifetime: mount, the server thread, unmount, the trace,
 *                  the per-request fault hook (built with FUSE only)
 *   ckhfs_ops.c    the FUSE operations: kernel requests -> simfs calls
 *                  (built with FUSE only)
 *   ckhfs_mounts.c what needs no libfuse: ckh_ckhfs_available, the
 *                  mount table (/proc/self/mountinfo), forced unmounts,
 *                  ckh_ckhfs_sweep_stale
 *   ckhfs_nofuse.c the stubs of a build configured with -DCKH_FUSE=OFF
 * Nothing outside harness/ckhfs/ckhfs*.c includes this header, but for
 * tests/test_ckhfs.c's unit cases (ckh__ckhfs_errno, ckh__ckhfs_abspath).
 */
#ifndef CKH_REAL_CKHFS_INTERNAL_H
#define CKH_REAL_CKHFS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckhfs/ckhfs.h"

/* The fstype and source ckhfs mounts carry in /proc/self/mountinfo; the
 * stale sweep unmounts only mounts of this type. */
#define CKHFS_FSNAME "ckhfs"
#define CKHFS_FSTYPE "fuse.ckhfs"

/* Caller nodes above this are treated as unknown (-1): views are kept in
 * an array indexed by node + 1. */
#define CKHFS_NODE_MAX 65535

struct fuse;

/* One file the kernel holds open on the mount (FUSE file handle). */
struct ckhfs_handle {
    struct ckh_file *file;      /* simfs handle (owned; closed at release) */
    char *path;                 /* the path it was opened by (trace, fault paths) */
    int oflags;                 /* the open(2) flags */
    struct ckhfs_handle *prev;  /* open handles of the mount */
    struct ckhfs_handle *next;
};

struct ckh_ckhfs {
    struct ckh_ckhfs_config cfg; /* copy; cfg.mountpoint points at mnt */
    char *mnt;                   /* canonical mount point (owned) */
    struct fuse *fuse;           /* the libfuse instance (owned) */
    bool mounted;                /* fuse_mount succeeded, not yet unmounted */
    int fuse_fd;                 /* the /dev/fuse descriptor (libfuse's) */
    int wake[2];                 /* pipe: a byte asks the server threads to stop */
    /* The server threads (ckhfs.c "server threads"): one leads (receives
     * and serves requests in the kernel's order); a request held by a
     * DELAY hands the lead over, and while any is held every request is
     * served off the lead. serve_lock guards the fields up to capthreads. */
    pthread_mutex_t serve_lock;
    pthread_cond_t lead_cv;      /* the lead is free, or stopping */
    bool serve_ready;            /* serve_lock and the conditions are initialised */
    bool leading;                /* a thread holds the lead */
    bool stopping;               /* unmount asked, or the connection is gone */
    size_t idle;                 /* threads waiting for the lead, or starting */
    size_t held;                 /* requests held by a DELAY now */
    pthread_t *threads;          /* every server thread started (joined at unmount) */
    size_t nthreads, capthreads; /* entries used and allocated */
    /* The leader's wait (ckhfs.c S1-S2), used by whichever thread leads
     * (the lead passes under serve_lock). */
    bool spin;                   /* wait SPIN_US for the next request before poll */
    uint64_t answered_us;        /* monotonic time of the leader's last answer */
    /* lock guards the disk, the views, the handles and the trace: a
     * server thread holds it for each request, ckh_ckhfs_lock for others. */
    pthread_mutex_t lock;
    pthread_cond_t init_cv;      /* signalled once the kernel's INIT is answered */
    bool inited;                 /* INIT answered */
    struct ckh_fs **views;       /* views[node + 1]: the disk seen by node (owned) */
    size_t nviews;               /* entries of views */
    struct ckhfs_handle *handles; /* open handles (owned) */
    uint64_t seq;                /* operations seen so far */
    uint64_t answered;           /* operations answered so far */
    struct ckh_ckhfs_op *trace;  /* recorded operations (keep_trace; paths owned) */
    size_t ntrace;               /* entries used */
    size_t captrace;             /* entries allocated */
    struct ckh_ckhfs_op *snap;   /* copy handed out by ckh_ckhfs_trace */
    size_t capsnap;              /* entries allocated in snap */
};

/* The FUSE operations table (ckhfs_ops.c); its private data is the
 * struct ckh_ckhfs. */
struct fuse_operations;
extern const struct fuse_operations ckh__ckhfs_ops;

/* Called by the init operation on the server thread: marks the mount as
 * answering and wakes ckh_ckhfs_mount. */
void ckh__ckhfs_inited(struct ckh_ckhfs *fs);

/* One request in flight, between ckh__ckhfs_begin and ckh__ckhfs_end. */
struct ckhfs_req {
    struct ckh_ckhfs *fs;        /* the mount */
    struct ckh_ckhfs_op op;      /* the operation as the hook and trace see it */
    struct ckh_ckhfs_action act; /* the hook's verdict */
    size_t slot;                 /* its entry in fs->trace (SIZE_MAX: none) */
};

/* Begins a request of the calling FUSE context: takes fs->lock, numbers
 * the op, maps the caller to its node, asks the hook and keeps the op's
 * place in the trace. Returns 1 when the operation should be done, else
 * the answer to give instead (-errno: ERRNO and KILL verdicts; KILL has
 * already killed the node). DELAY holds the request with fs->lock
 * released and the lead handed over (other requests go on), then takes
 * fs->lock again: 1, or -EINTR when the caller was killed or the mount
 * stops meanwhile (the op is not done). Strings are borrowed until
 * ckh__ckhfs_end. */
int ckh__ckhfs_begin(struct ckhfs_req *r, enum ckh_op_kind kind, const char *path,
                     const char *path2, uint64_t off, uint64_t len);
/* Ends a request: its trace entry gets result and its answer order,
 * held_answered hears of a held one, kills the node for KILL_AFTER,
 * releases fs->lock. Returns result. */
int64_t ckh__ckhfs_end(struct ckhfs_req *r, int64_t result);
/* The view of the disk for node (created on first use; -1: unknown
 * callers). Call with fs->lock held. NULL when out of memory. */
struct ckh_fs *ckh__ckhfs_view(struct ckh_ckhfs *fs, int node);
/* A ckh error code as the errno FUSE answers with (negative). */
int ckh__ckhfs_errno(int64_t rc);

/* ---- ckhfs_mounts.c ---- */

/* Unmounts the ckhfs mounts at or below dir, deepest first (exact: only a
 * mount at dir itself). Returns how many were unmounted. */
int ckh__ckhfs_unmount_below(const char *dir, bool exact);
/* Writes the canonical absolute form of path into out (realpath when it
 * resolves, else made absolute against the working folder). */
int ckh__ckhfs_abspath(const char *path, char *out, size_t n);

#endif
