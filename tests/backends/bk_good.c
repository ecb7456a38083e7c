/* Positive control "good": the correct protocol, no defect; the backend is in bk_common.h. */
#define BK_NAME "bk_good"
#define BK_DEFECTS 0
#include "bk_common.h"
