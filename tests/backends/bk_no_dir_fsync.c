/* Negative control "no_dir_fsync" (defect BK_NO_DIR_FSYNC); the backend is in bk_common.h. */
#define BK_NAME "bk_no_dir_fsync"
#define BK_DEFECTS BK_NO_DIR_FSYNC
#include "bk_common.h"
