/* Negative control "partial-load" (defect BK_PARTIAL_LOAD); the backend is in bk_common.h. */
#define BK_NAME "bk_partial_load"
#define BK_DEFECTS BK_PARTIAL_LOAD
#include "bk_common.h"
