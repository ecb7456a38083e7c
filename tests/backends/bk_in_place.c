/* Negative control "in_place" (defect BK_IN_PLACE); the backend is in bk_common.h. */
#define BK_NAME "bk_in_place"
#define BK_DEFECTS BK_IN_PLACE
#include "bk_common.h"
