/* command_ns.c: the fixed checkpoint path of a command job's programs (see
 * exec/command_job.h for the command jobs' files; docs/SCENARIOS.md,
 * "Command jobs", for the rule; docs/ARCHITECTURE.md, "ckhfs", for the
 * mechanism).
 *
 * ckh serves each disk over FUSE at a folder of its run folder, which
 * differs from one execution to the next (ref/, job/, each verify, each
 * state of `ckh explore`). A program that writes an absolute path into
 * its checkpoint (a `latest` symlink, a manifest) would then find another
 * run's folder there. So each process of a node (and `verify`) starts in
 * a private mount namespace of its own where the disk that holds
 * job.checkpoint_dir is bind-mounted at one host path,
 * job.checkpoint_mount (default CKH_SCN_CHECKPOINT_MOUNT, "/ckh/ckpt"):
 * CKH_CKPT_DIR is that path (and job.checkpoint_dir below it), the same in
 * every run; nodes with node-local disks each see their own disk there.
 *
 * The namespace is made between fork and exec (ckh__ns_enter, raw system
 * calls only), or by the warm launcher's started process through the same
 * steps (tools/ckh_warm.py, _enter_ns): unshare(CLONE_NEWNS) when ckh has
 * CAP_SYS_ADMIN, else unshare(CLONE_NEWUSER | CLONE_NEWNS) with the
 * caller's uid and gid mapped to themselves (CKH_USER_NAMESPACE=1 in
 * ckh's environment takes this route even with CAP_SYS_ADMIN, for tests);
 * every mount made private
 * (MS_REC | MS_PRIVATE), so nothing propagates back to ckh's namespace;
 * the disk's folder bound (MS_BIND) onto the path. ckh creates the path
 * (mode 0755; an empty folder, left in place as a mount point) when it
 * is missing; nothing else is written outside the run folder.
 *
 * Where that cannot be done (no CAP_SYS_ADMIN and no user namespaces, the
 * path cannot be created, CKH_NO_NAMESPACE set in ckh's environment),
 * ckh__ns_say says why in one line on stderr before the first run, and the
 * programs run as before: CKH_CKPT_DIR inside the run folder, absolute
 * link targets into a run's disk compared relative to the disk.
 */
#ifndef CKH_EXEC_COMMAND_NS_H
#define CKH_EXEC_COMMAND_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "exec/command_job.h"

/* How a node's process gets its fixed checkpoint path. */
enum ckh__ns_mode {
    CKH__NS_NONE = 0, /* no namespace: the run folder's path (the fallback) */
    CKH__NS_MOUNT,    /* unshare(CLONE_NEWNS): ckh has CAP_SYS_ADMIN */
    CKH__NS_USER,     /* unshare(CLONE_NEWUSER | CLONE_NEWNS), ids mapped to themselves */
};

/* What one process's namespace is made of, prepared before the fork (the
 * child reads it only). */
struct ckh__ns_spec {
    enum ckh__ns_mode mode;          /* CKH__NS_NONE: nothing to do */
    char src[CKH__CMD_PATH_MAX];     /* the disk's folder (its ckhfs mount) */
    char dst[CKH__CMD_PATH_MAX];     /* job.checkpoint_mount */
    char uid_map[48], gid_map[48];   /* CKH__NS_USER: "ID ID 1\n" each */
};

/* The mode for command jobs whose checkpoint_mount is path, decided once
 * per process and path (a forked worker inherits what its parent
 * decided): the path created when missing, then a probe child that makes
 * a namespace and binds the path onto itself. Thread-safe. */
enum ckh__ns_mode ckh__ns_mode(const char *path);

/* Before a job's first run: where path gives no namespace, one line on
 * stderr says why and what ckh does instead, once per process and path,
 * and once per once_dir (a folder shared by the workers of one `ckh run`,
 * its reference cache; NULL: this process alone decides). */
void ckh__ns_say(const char *path, const char *once_dir);

/* Fills *s for a process of c whose checkpoint disk is served at the
 * folder src (NULL or c->ns_mode CKH__NS_NONE: s->mode CKH__NS_NONE). */
void ckh__ns_spec_make(const struct ckh__cmd *c, const char *src, struct ckh__ns_spec *s);

/* In a child between fork and exec (single-threaded, async-signal-safe
 * calls only): enters the namespace *s describes. 0, or the errno of the
 * step that failed; *step names it (static). */
int ckh__ns_enter(const struct ckh__ns_spec *s, const char **step);

#endif
