/* Negative control "leak" (defect BK_LEAK); the backend is in bk_common.h. */
#define BK_NAME "bk_leak"
#define BK_DEFECTS BK_LEAK
#include "bk_common.h"
