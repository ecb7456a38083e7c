/* What the test suites that mount ckhfs share (tests/support/fuse.c). */
#ifndef CKH_TEST_SUPPORT_FUSE_H
#define CKH_TEST_SUPPORT_FUSE_H

#include "ckhfs/ckhfs.h"
#include "support/skip.h"

/* Skips the running case where FUSE cannot be used, saying why (the cases
 * that use it are tagged "fuse": a CTest entry NAME_fuse runs them). */
#define NEED_FUSE()                                                                                \
    do {                                                                                           \
        char why_[256];                                                                            \
        if (ckh_ckhfs_available(why_, sizeof why_) != 0)                                           \
            CKH_SKIP("%s", why_);                                                                  \
    } while (0)

/* How many ckhfs mounts of this process's mount table hold marker in
 * their line (a folder of the test, or "/ckh-PID-" for its run folders). */
int ckh_test_ckhfs_mounts(const char *marker);

#endif
