/* ckhfs: a simfs disk served to real processes over FUSE 3, so that every
 * open, write, fsync, rename, unlink and mkdir of an unmodified program
 * meets simfs's crash model, the fault script and the trace.
 *
 * One struct ckh_ckhfs is one mount of one simfs disk: a job with a
 * shared checkpoint disk has one mount, a job with node-local disks one
 * per node. The server runs on threads of the calling process, one at a
 * time unless a delay holds a request (so the disk, its pending operations
 * and the trace stay in ckh's memory for the crash model, the oracles and
 * `ckh replay`). Kernel caching that would hide operations is off
 * (direct_io, no writeback cache, zero attribute and negative timeouts,
 * zero entry timeout unless the caller sets cache_names): each write,
 * fsync and metadata operation of the program reaches simfs in order.
 * Design notes and the operations ckhfs cannot see (mmap writes, ...) are
 * in docs/ARCHITECTURE.md.
 *
 * Callers. FUSE gives each request the caller's pid; node_of_pid maps it to
 * a node index (the process tree ckh launched for that node), so fault
 * rules match by node as in the simulator.
 *
 * Faults. Before an operation is answered, `hook` sees it and may act:
 * fail it with an errno, accept fewer bytes of a write, delay it, or kill
 * the caller's node from inside the handler (SIGKILL to its process group
 * before the answer, so the kill lands exactly at that operation). A
 * delay holds only the operation it matched: the mount serves every other
 * request meanwhile (ordering promised: docs/ARCHITECTURE.md "ckhfs").
 *
 * Lifetime: ckh_ckhfs_mount returns once the mount answers; every exit
 * path of ckh unmounts (ckh_ckhfs_unmount, and the run's temporary folder
 * sweep for mounts a killed ckh left behind: ckh_ckhfs_sweep_stale).
 */
#ifndef CKH_REAL_CKHFS_H
#define CKH_REAL_CKHFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ckh/op.h"
#include "ckh/simfs.h"

struct ckh_ckhfs;

/* One operation a program asked of the mount, as the hook and the trace
 * see it. Paths are absolute within the disk ("/step_4/model.pt"). */
struct ckh_ckhfs_op {
    uint64_t seq;       /* order of arrival on this mount (1-based) */
    int node;           /* node index of the caller (-1: unknown process) */
    pid_t pid;          /* the caller */
    enum ckh_op_kind kind; /* open, pwrite, fsync, rename, ... */
    const char *path;   /* the path (borrowed for the call) */
    const char *path2;  /* rename destination / symlink target, or NULL */
    uint64_t off;       /* write/read offset */
    uint64_t len;       /* bytes asked */
    int64_t result;     /* in the trace: the answer (bytes, 0, or -errno) */
    uint64_t answered;  /* in the trace: order of the answer on this mount (1-based; 0:
                           not answered yet). Follows seq except around a DELAY */
};

/* What the hook decides for one operation. */
enum ckh_ckhfs_verdict {
    CKH_CKHFS_GO = 0,    /* answer normally */
    CKH_CKHFS_ERRNO,     /* fail with -err, nothing done */
    CKH_CKHFS_SHORT,     /* a write accepts `keep` bytes */
    CKH_CKHFS_DELAY,     /* hold the op delay_ms, then do it and answer; meanwhile other
                            requests are served (a held op of a caller killed meanwhile,
                            or of an unmount, is answered -EINTR undone) */
    CKH_CKHFS_KILL,      /* SIGKILL the caller's node before answering (the op is not done) */
    CKH_CKHFS_KILL_AFTER, /* do the op, then SIGKILL the node before answering */
    CKH_CKHFS_HOLD,      /* appended: held as DELAY is, until cfg.released says so, or at most
                            delay_ms (an order the explorer forces: docs/ARCHITECTURE.md,
                            "Orders of several nodes") */
};

struct ckh_ckhfs_action {
    enum ckh_ckhfs_verdict verdict;
    int err;           /* ERRNO: a positive errno */
    uint64_t keep;     /* SHORT: bytes accepted */
    uint32_t delay_ms; /* DELAY; HOLD: the longest it waits for its release */
};

struct ckh_ckhfs_config {
    const char *mountpoint;  /* an empty folder ckh owns */
    struct ckh_simfs *disk;  /* the disk served (borrowed; outlives the mount) */
    /* Caller pid -> node index (-1: not a process of the job). */
    int (*node_of_pid)(void *ctx, pid_t pid);
    /* Sees each operation before it is answered (NULL: always GO). Runs on
     * a server thread; must not block for long (a DELAY verdict is how to
     * hold an operation). */
    void (*hook)(void *ctx, const struct ckh_ckhfs_op *op, struct ckh_ckhfs_action *act);
    /* Kills node's processes (SIGKILL to its process group); called from
     * the server thread for KILL verdicts. */
    void (*kill_node)(void *ctx, int node);
    void *ctx;               /* passed to the callbacks */
    bool keep_trace;         /* record every operation (ckh replay) */
    /* Appended. Called when an operation a DELAY verdict held is answered
     * (op->result and op->answered set), under the same rules as hook:
     * requests that arrived meanwhile may have been answered before it.
     * NULL: not told. */
    void (*held_answered)(void *ctx, const struct ckh_ckhfs_op *op);
    /* Appended. The kernel keeps the names it looked up (positive entries,
     * for the mount's lifetime) instead of asking ckhfs again at every
     * path walk; names that do not exist are asked for each time. A
     * rename or unlink then costs one request less, but a lookup the
     * kernel answers from its cache reaches neither the hook nor the
     * trace (as a `stat`). Set it only where nothing changes the disk's
     * names behind the mount while it is mounted (no at-rest change from
     * the hook or under ckh_ckhfs_lock: the kernel would keep a removed
     * name) and no rule counts or matches `stat` operations. */
    bool cache_names;
    /* Appended. Asked, under the lock requests are served under, every
     * few milliseconds while a HOLD verdict holds op: true ends the hold
     * (the op is then done and answered as after a DELAY). A request the
     * hook saw before it returns true has been answered by then, unless
     * it is itself held. NULL: a HOLD lasts its delay_ms. */
    bool (*released)(void *ctx, const struct ckh_ckhfs_op *op);
};

/* Mounts cfg->disk at cfg->mountpoint and starts serving. Errors (msg
 * says what and where; exit status 3 for the CLI): CKH_EUNSUPPORTED when
 * FUSE is missing (/dev/fuse absent or not permitted, no fusermount3),
 * CKH_EIO when the mount fails, CKH_ENOMEM when memory runs out (its
 * threads included). */
int ckh_ckhfs_mount(const struct ckh_ckhfs_config *cfg, struct ckh_ckhfs **out, char *msg, size_t msglen);
/* Stops serving and unmounts (lazily if busy); frees fs. NULL is a no-op. */
void ckh_ckhfs_unmount(struct ckh_ckhfs *fs);
/* Operations recorded so far (keep_trace), in arrival order (seq); one
 * still held by a DELAY has answered 0. Valid until the next call on fs. */
const struct ckh_ckhfs_op *ckh_ckhfs_trace(const struct ckh_ckhfs *fs, size_t *n);
/* Whether FUSE can be used here: 0, or CKH_EUNSUPPORTED with msg naming
 * what is missing. */
int ckh_ckhfs_available(char *msg, size_t msglen);
/* Unmounts every ckhfs mount below dir (a stale run folder of a killed
 * ckh); returns how many. */
int ckh_ckhfs_sweep_stale(const char *dir);

/* ---- appended: direct access to the disk while it is mounted ---- */

/* Holds the server off the disk: while held, no request touches
 * cfg->disk (the server thread waits; a file closed by a dying process may
 * be released at any time, even after waitpid). Take it around direct
 * calls on the disk while the mount is up (ckh_simfs_crash, pending_get,
 * digest, faults at rest). Never do I/O on the mount while holding it
 * (that request would wait for the holder). NULL is a no-op. */
void ckh_ckhfs_lock(struct ckh_ckhfs *fs);
void ckh_ckhfs_unlock(struct ckh_ckhfs *fs);

/* ---- appended: one mount, many disks (the crash explorer's verify) ---- */

/* Serves disk (borrowed; outlives its time on the mount; NULL: none) in
 * place of the disk served so far, with ctx as the callbacks' context from
 * now on, so that one mount serves state after state instead of a mount
 * and an unmount per state. After the call the mount reads exactly as a
 * fresh mount of disk would:
 *   - what the kernel remembers of the old disk is dropped: the entries of
 *     the root folder's names (and below them) are invalidated
 *     (fuse_lowlevel_notify_inval_entry), and so are the root's attributes;
 *     attributes, names not found and file data are never cached (zero
 *     timeouts, direct_io), and kept names (cache_names) go with the
 *     invalidated entries, so the next lookup of any path asks ckhfs;
 *   - files still open on the old disk (a release the kernel sends after
 *     its process exited) are stale: any request on them but the release
 *     is answered -EIO, and none touches either disk;
 *   - the node views start afresh on disk, and the trace and the
 *     operation numbers (seq, answered) start again from 1.
 * With no disk (NULL) every request but a release is answered -EIO until
 * the next swap. The caller's contract: no process uses the mount during
 * the call (the previous disk's processes have exited and been reaped),
 * and no DELAY is held (CKH_EINVAL when one is: nothing changes). Never
 * call it from a callback. 0, or CKH_EINVAL (fs NULL, a held request). */
int ckh_ckhfs_swap_disk(struct ckh_ckhfs *fs, struct ckh_simfs *disk, void *ctx);
/* The mount's canonical mount point (absolute; owned by fs), or NULL. */
const char *ckh_ckhfs_mountpoint(const struct ckh_ckhfs *fs);

/* Note on kill_node, hook and held_answered (they run on a server thread,
 * with the mount's lock held, one at a time): send signals, never wait for the killed processes
 * to exit there; a dying process's close of its files waits for the
 * server to answer (FUSE flush), so a wait inside the callback would
 * deadlock. Reap them from another thread. Inside the callbacks the disk
 * may be used directly (the lock is held); calling ckh_ckhfs_lock or
 * ckh_ckhfs_trace there deadlocks. */

#endif
