/* The atomic directory saver as a backend, keep_last 1, no defect: must pass every state. */
#define BK_ADIR_NAME "bk_adir"
#define BK_ADIR_KEEP_LAST 1
#define BK_ADIR_DEFECTS 0
#include "bk_adir.h"
