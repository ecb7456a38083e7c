/* Negative control "retention_first" (defect BK_RETENTION_FIRST); the backend is in bk_common.h. */
#define BK_NAME "bk_retention_first"
#define BK_DEFECTS BK_RETENTION_FIRST
#include "bk_common.h"
