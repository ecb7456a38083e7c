/* The built-in saver list: the one place a built-in directory saver is
 * registered.
 *
 * X(ident, summary): ident names the table `ckh_<ident>_saver_ops` (struct
 * ckh_saver_ops, include/ckh/saver.h) that reference/ defines; summary is
 * its line in `ckh list savers` (the ops table has no description of its
 * own). The order is the listing's. A user's saver is a plugin library
 * named by job.saver.kind, loaded at run time (exec/workloads.h), and needs
 * no line here.
 */
#ifndef CKH_RUN_SAVER_LIST_H
#define CKH_RUN_SAVER_LIST_H

#define CKH_SAVER_LIST(X)                                                      \
    X(atomic_dir, "checkpoint folders with a latest symlink, keep_last, sync_any/sync_all/async")

#endif
