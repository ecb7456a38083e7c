/* Negative control "fixed_tmp" (defect BK_FIXED_TMP); the backend is in bk_common.h. */
#define BK_NAME "bk_fixed_tmp"
#define BK_DEFECTS BK_FIXED_TMP
#include "bk_common.h"
