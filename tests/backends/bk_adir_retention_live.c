/* The atomic directory saver as a backend, keep_last 1, defect switch retention-deletes-live. */
#define BK_ADIR_NAME "bk_adir_retention_live"
#define BK_ADIR_KEEP_LAST 1
#define BK_ADIR_DEFECTS (1ull << CKH_DEFECT_RETENTION_DELETES_LIVE)
#include "bk_adir.h"
