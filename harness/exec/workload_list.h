/* The built-in workload list: the one place a built-in workload is
 * registered.
 *
 * X(ident): ident names the table `ckh_<ident>_workload` (struct
 * ckh_workload_ops, include/ckh/workload.h) that reference/wl_*.c defines.
 * The order is `ckh list workloads`' and that of the names an unknown
 * workload's message offers. A user's workload is a plugin library named
 * by job.workload, loaded at run time (exec/workloads.h), and needs no line
 * here.
 */
#ifndef CKH_RUN_WORKLOAD_LIST_H
#define CKH_RUN_WORKLOAD_LIST_H

#define CKH_WORKLOAD_LIST(X)                                                   \
    X(seed_pipeline)                                                           \
    X(param_server)                                                            \
    X(ddp_train)

#endif
