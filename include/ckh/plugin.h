/* The backend plugin entry point: how a shared library hands ckh its
 * checkpoint backend (the ops table of include/ckh/backend.h).
 *
 * A plugin is a shared library that exports one function,
 *
 *     const struct ckh_backend_ops *ckh_backend_plugin_v1(void);
 *
 * returning a pointer to a static const table that lives as long as the
 * library is loaded. CKH_BACKEND_PLUGIN(ops) defines it. The "v1" in the
 * name is the entry point's version; the table's own `version` field is
 * the ops ABI (CKH_BACKEND_ABI_VERSION at most).
 *
 * A plugin does all its I/O through the struct ckh_fs of its config and all
 * its allocation through the config's allocator (the workspace's allocator
 * for blobs it adopts into a workspace), so ckh can observe, fault and crash
 * every operation. It may call the functions declared in the public headers
 * fs.h, alloc.h, rng.h, err.h, workspace.h, env.h (ckh_dtype_*) and
 * backend.h (ckh_db_name, ckh_node_name_check): the host process that loads
 * it exports them, so a plugin links against nothing of ckh.
 * Build flags: `pkg-config --cflags ckh` or find_package(ckh) (target
 * ckh::headers); see docs/BACKENDS.md.
 */
#ifndef CKH_PLUGIN_H
#define CKH_PLUGIN_H

#include "ckh/backend.h"

/* Name of the exported entry point, for dlsym. */
#define CKH_BACKEND_PLUGIN_SYMBOL "ckh_backend_plugin_v1"

/* The entry point's type. */
typedef const struct ckh_backend_ops *(*ckh_backend_plugin_fn)(void);

/* Declared here so that a plugin defining it has a prototype. */
const struct ckh_backend_ops *ckh_backend_plugin_v1(void);

/* Defines the entry point returning &ops (a static const table). */
#define CKH_BACKEND_PLUGIN(ops)                                                \
    __attribute__((visibility("default"))) const struct ckh_backend_ops *      \
    ckh_backend_plugin_v1(void)                                                \
    {                                                                          \
        return &(ops);                                                         \
    }

#endif
