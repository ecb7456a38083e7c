/* minidb as a plugin: the reference backend, which must pass every state.
 * The table lives in the host (reference/minidb.c), exported to plugins. */
#include "ckh/plugin.h"

CKH_BACKEND_PLUGIN(ckh_minidb_ops)
