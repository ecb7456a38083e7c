/* The real platform: POSIX files under a root directory, the monotonic
 * clock, named random streams from a seed, no collectives (a single
 * process). The same reference code that runs in the simulator runs here
 * on a real disk.
 */
#ifndef CKH_POSIX_H
#define CKH_POSIX_H

#include <stddef.h>
#include <stdint.h>

#include "ckh/alloc.h"
#include "ckh/env.h"

/* A struct ckh_fs whose path "/x/y" is the real file root_dir/x/y. Paths
 * are validated (no "..", no empty components) and symlinks stay inside
 * root_dir (an absolute target "/a" is root_dir/a; ".." in a relative
 * target gives CKH_EESCAPE), so nothing outside root_dir is reached.
 * root_dir must exist. *out is freed with ckh_posix_fs_destroy. */
int ckh_posix_fs_create(const char *root_dir, struct ckh_fs **out);
void ckh_posix_fs_destroy(struct ckh_fs *fs);

/* A whole env for one process: fs rooted at root_dir, CLOCK_MONOTONIC,
 * streams derived from seed and node_name, coll NULL, the system
 * allocator, node ops whose log writes to stderr and whose exit calls
 * exit(3). *out is freed with ckh_posix_env_destroy. */
int ckh_posix_env_create(const char *root_dir, uint64_t seed, const char *node_name,
                         struct ckh_env **out);
/* Frees an env made by ckh_posix_env_create; NULL is a no-op. */
void ckh_posix_env_destroy(struct ckh_env *env);

/* The one reading of the real monotonic clock (CLOCK_MONOTONIC), in
 * nanoseconds since an arbitrary start: the real platform's clock and
 * deadlines, and the harness's time limits, progress lines and wall
 * times. Never an input to a result: the simulator's time is virtual, and
 * the code under test (reference/, which may not include this header)
 * reads time only through env->clock. */
uint64_t ckh_posix_now_ns(void);
/* ckh_posix_now_ns in whole milliseconds. */
uint64_t ckh_posix_now_ms(void);

/* A pidfd for process pid (pidfd_open), or -1 where the kernel or the C
 * library has none, or it fails (the caller then polls instead). */
int ckh_posix_pidfd_open(int pid);

/* The one whole-file reader: the regular file at path (a real path, not
 * under an fs root) into *buf, NUL-terminated, its length in *len. The
 * buffer comes from alloc and the caller frees it with ckh_free(alloc,
 * *buf) (alloc NULL: the system allocator, whose buffers free() releases). Opening never waits (a FIFO is
 * refused, not read). Errors, with *buf NULL: -errno from open, fstat or
 * read; -EISDIR for a folder; CKH_EUNSUPPORTED for anything else that is
 * not a regular file; CKH_ELIMIT when it holds more than max_bytes;
 * CKH_ENOMEM. A file that shrinks while read is read as far as it goes. */
int ckh_posix_read_file(const char *path, size_t max_bytes, struct ckh_alloc *alloc, char **buf,
                        size_t *len);

#endif
