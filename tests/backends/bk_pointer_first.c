/* Negative control "pointer_first" (defect BK_POINTER_FIRST); the backend is in bk_common.h. */
#define BK_NAME "bk_pointer_first"
#define BK_DEFECTS BK_POINTER_FIRST
#include "bk_common.h"
