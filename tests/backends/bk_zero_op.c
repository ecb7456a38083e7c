/* Negative control "zero-op" (defect BK_ZERO_OP); the backend is in bk_common.h. */
#define BK_NAME "bk_zero_op"
#define BK_DEFECTS BK_ZERO_OP
#include "bk_common.h"
