/* Negative control "text-sort" (defect BK_TEXT_SORT); the backend is in bk_common.h. */
#define BK_NAME "bk_text_sort"
#define BK_DEFECTS BK_TEXT_SORT
#include "bk_common.h"
