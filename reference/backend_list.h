/* The built-in backend list: the one place a built-in checkpoint backend
 * is registered.
 *
 * X(ident): ident names the table `ckh_<ident>_ops` (struct
 * ckh_backend_ops, include/ckh/backend.h) that reference/<ident>*.c
 * defines. The order is the registry's and `ckh list backends`'. A
 * plugin's backend is added after these at run time, through
 * ckh_backend_register, and needs no line here.
 */
#ifndef CKH_REFERENCE_BACKEND_LIST_H
#define CKH_REFERENCE_BACKEND_LIST_H

#define CKH_BACKEND_LIST(X)                                                    \
    X(minidb)

#endif
