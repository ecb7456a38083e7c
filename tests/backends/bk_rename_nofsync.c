/* Negative control "rename_nofsync" (defect BK_NO_FILE_FSYNC); the backend is in bk_common.h. */
#define BK_NAME "bk_rename_nofsync"
#define BK_DEFECTS BK_NO_FILE_FSYNC
#include "bk_common.h"
