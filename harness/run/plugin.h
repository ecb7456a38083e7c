/* Loading checkpoint backends from shared libraries (harness/plugin.c).
 *
 * ckh_plugin_load dlopens a library, finds its entry point
 * (include/ckh/plugin.h) and checks the table it returns: ABI version in
 * [1, CKH_BACKEND_ABI_VERSION], a name, and the methods the harness needs
 * (open, close, save, load, list_epochs). The loaded table stays valid
 * until ckh_plugin_unload.
 */
#ifndef CKH_HARNESS_PLUGIN_H
#define CKH_HARNESS_PLUGIN_H

#include <stddef.h>

#include "ckh/backend.h"
#include "ckh/plugin.h"

struct ckh_plugin;

/* Loads the plugin at path. On success *out is owned by the caller (free
 * with ckh_plugin_unload). Errors (msg, may be NULL, says why):
 *   CKH_EINVAL     NULL path/out
 *   CKH_ENOTFOUND  the file does not exist
 *   CKH_EFOREIGN   not a loadable library, or no entry point
 *   CKH_EVERSION   the table's version is outside [1, CKH_BACKEND_ABI_VERSION]
 *   CKH_EUNSUPPORTED  a required method is NULL, or the name is missing
 *   CKH_ENOMEM */
int ckh_plugin_load(const char *path, struct ckh_plugin **out, char *msg, size_t msglen);
/* The backend table of a loaded plugin (valid until unload). */
const struct ckh_backend_ops *ckh_plugin_ops(const struct ckh_plugin *p);
/* The path it was loaded from (valid until unload). */
const char *ckh_plugin_path(const struct ckh_plugin *p);
/* dlcloses the library and frees p. NULL is a no-op. */
void ckh_plugin_unload(struct ckh_plugin *p);
/* Checks a backend table as ckh_plugin_load does (0 or a code, msg says
 * why); usable for tables linked in statically. */
int ckh_plugin_check_ops(const struct ckh_backend_ops *ops, char *msg, size_t msglen);

#endif
