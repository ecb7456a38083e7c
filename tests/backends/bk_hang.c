/* Negative control "hang" (defect BK_HANG); the backend is in bk_common.h. */
#define BK_NAME "bk_hang"
#define BK_DEFECTS BK_HANG
#include "bk_common.h"
