/* The atomic directory saver as a backend, keep_last 1, defect switch pointer-before-data. */
#define BK_ADIR_NAME "bk_adir_pointer_first"
#define BK_ADIR_KEEP_LAST 1
#define BK_ADIR_DEFECTS (1ull << CKH_DEFECT_POINTER_BEFORE_DATA)
#include "bk_adir.h"
