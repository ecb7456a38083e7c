/* The atomic directory saver as a backend, keep_last 1, defect switch no-fsync. */
#define BK_ADIR_NAME "bk_adir_no_fsync"
#define BK_ADIR_KEEP_LAST 1
#define BK_ADIR_DEFECTS (1ull << CKH_DEFECT_NO_FSYNC)
#include "bk_adir.h"
