/* The atomic directory saver as a backend, keep_last 1, defect switch fixed-temp-name. */
#define BK_ADIR_NAME "bk_adir_fixed_tmp"
#define BK_ADIR_KEEP_LAST 1
#define BK_ADIR_DEFECTS (1ull << CKH_DEFECT_FIXED_TEMP_NAME)
#include "bk_adir.h"
