/* Negative control "short-ignored" (defect BK_SHORT_IGNORED); the backend is in bk_common.h. */
#define BK_NAME "bk_short_ignored"
#define BK_DEFECTS BK_SHORT_IGNORED
#include "bk_common.h"
