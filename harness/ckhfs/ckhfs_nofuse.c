/* ckhfs in a build configured with -DCKH_FUSE=OFF (no libfuse3): mounts
 * fail with CKH_EUNSUPPORTED and ckh_ckhfs_available says why; the stale
 * sweep (ckhfs_mounts.c) still works, it needs no libfuse. */
#include <stddef.h>

#include "ckh/err.h"
#include "ckhfs/ckhfs_internal.h"

int ckh_ckhfs_mount(const struct ckh_ckhfs_config *cfg, struct ckh_ckhfs **out, char *msg,
                    size_t msglen)
{
    (void)cfg;
    if (out)
        *out = NULL;
    return ckh_ckhfs_available(msg, msglen);
}

void ckh_ckhfs_unmount(struct ckh_ckhfs *fs)
{
    (void)fs; /* no mount can exist */
}

const struct ckh_ckhfs_op *ckh_ckhfs_trace(const struct ckh_ckhfs *fs, size_t *n)
{
    (void)fs;
    if (n)
        *n = 0;
    return NULL;
}

void ckh_ckhfs_lock(struct ckh_ckhfs *fs)
{
    (void)fs;
}

void ckh_ckhfs_unlock(struct ckh_ckhfs *fs)
{
    (void)fs;
}

int ckh_ckhfs_swap_disk(struct ckh_ckhfs *fs, struct ckh_simfs *disk, void *ctx)
{
    (void)fs; /* no mount can exist */
    (void)disk;
    (void)ctx;
    return CKH_EINVAL;
}

const char *ckh_ckhfs_mountpoint(const struct ckh_ckhfs *fs)
{
    (void)fs;
    return NULL;
}
