/* Negative control "segv" (defect BK_SEGV); the backend is in bk_common.h. */
#define BK_NAME "bk_segv"
#define BK_DEFECTS BK_SEGV
#include "bk_common.h"
