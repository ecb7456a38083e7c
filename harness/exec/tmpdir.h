/* ckh's temporary folders: where they go, how they are named, and how the
 * folders of ckh processes that died without cleaning up (SIGKILL, a
 * power cut) are found and removed by a later run.
 *
 * Specification:
 *   - The base is $TMPDIR when set and non-empty, else /tmp.
 *   - A folder is <base>/ckh-<pid>-XXXXXX (mkdtemp), holding a marker file
 *     ".ckh-owner" with one line "ckh <pid> <start>": the owner's pid and
 *     its start time in clock ticks since boot (/proc/<pid>/stat field 22;
 *     0 where /proc is missing).
 *   - A folder is stale when its name has that form, its marker exists and
 *     names the pid of its name, and that pid is no longer running, or runs
 *     a process that started at another time (the pid was reused).
 *   - Only stale folders are removed; anything else under the base (a
 *     folder without a marker, a live ckh's folder, other files) is never
 *     touched. Removal does not follow symbolic links.
 */
#ifndef CKH_TMPDIR_H
#define CKH_TMPDIR_H

#include <stddef.h>

/* The base folder: $TMPDIR or "/tmp". The string lives until TMPDIR changes. */
const char *ckh_tmp_base(void);

/* Makes a fresh folder of this process under the base (named and marked as
 * above) and writes its path into out (n bytes). Returns 0 or -errno. */
int ckh_tmp_make(char *out, size_t n);

/* Removes dir and everything under it (no symbolic link is followed).
 * Returns 0 or -errno of the first failure. */
int ckh_tmp_remove(const char *dir);
/* Creates path and the folders above it that are missing (mode 0700; a
 * folder already there is fine), as `mkdir -p` does. 0 or -errno. */
int ckh_tmp_mkdirs(const char *path);

/* Removes the stale folders (see above) under base (NULL: ckh_tmp_base()).
 * Returns how many were removed. */
int ckh_tmp_sweep(const char *base);

#endif
