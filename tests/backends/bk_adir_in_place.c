/* The atomic directory saver as a backend, keep_last 1, defect switch overwrite-in-place. */
#define BK_ADIR_NAME "bk_adir_in_place"
#define BK_ADIR_KEEP_LAST 1
#define BK_ADIR_DEFECTS (1ull << CKH_DEFECT_OVERWRITE_IN_PLACE)
#include "bk_adir.h"
