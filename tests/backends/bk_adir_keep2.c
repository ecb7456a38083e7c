/* The atomic directory saver as a backend, keep_last 2, no defect: must pass every state. */
#define BK_ADIR_NAME "bk_adir_keep2"
#define BK_ADIR_KEEP_LAST 2
#define BK_ADIR_DEFECTS 0
#include "bk_adir.h"
