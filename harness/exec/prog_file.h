/* Files a program under test can reach: its result file, its log, the
 * logs of verify (harness/exec/command*.c). Private to harness/exec/.
 *
 * A program runs as the user who runs ckh and learns where ckh keeps its
 * files ($CKH_RESULT names the execution's folder), so anything at those
 * paths may have been put there on purpose or by mistake: a FIFO (opening
 * it for reading waits for a writer), a folder, a symbolic link to
 * /dev/zero or to a secret file, a hard link to another file, a sparse
 * file of terabytes. Every path here is opened without following a link
 * at its last component and without waiting (O_NOFOLLOW | O_NONBLOCK),
 * and only a regular file with one name is read; anything else is refused
 * with a message that names what was found and never holds a byte of it.
 * Files ckh creates for a program are made afresh (whatever was planted
 * at the path is unlinked, never written through). Reading is bounded by
 * the caller's limits (sizes checked with fstat before a byte is read).
 */
#ifndef CKH_EXEC_PROG_FILE_H
#define CKH_EXEC_PROG_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a node of type mode is, for messages: "a FIFO", "a folder",
 * "a symbolic link", "a character device", ... (static text). */
const char *ckh__prog_file_kind(mode_t mode);

/* Opens path for reading as a program's file. what names it in messages
 * ("$CKH_RESULT of rank_0 in run 1"). Returns 0 with *fd open (O_CLOEXEC,
 * O_NONBLOCK; the caller closes it) and *size its size in bytes; else
 * *fd is -1 and msg says why, naming what and path:
 *   CKH_EINVAL: not a regular file ("... is a FIFO, not a regular file"),
 *               a symbolic link (refused, its target never read), or a
 *               file with more than one name (a hard link);
 *   -ENOENT:    gone (removed or renamed while the program ran);
 *   -errno:     open or fstat failed otherwise. */
int ckh__prog_file_open(const char *path, const char *what, int *fd, uint64_t *size, char *msg, size_t n);

/* Reads the whole file at path (ckh__prog_file_open's rules) into *buf,
 * NUL-terminated, its length in *len; a newline is added when add_nl and
 * the last line lacks one. The caller frees *buf (free). What the file
 * holds past max_bytes is refused before anything is read: CKH_ELIMIT,
 * with msg naming the size found and limit_name (such as "the result
 * file limit of 1 GiB"). Other errors as ckh__prog_file_open, or
 * CKH_ENOMEM; *buf is NULL on every error. */
int ckh__prog_file_read(const char *path, const char *what, uint64_t max_bytes, const char *limit_name,
                        bool add_nl, char **buf, size_t *len, char *msg, size_t n);

/* The last non-empty line of the file at path (its last 4 KiB are
 * looked at, however large the file is; cut to n - 1 bytes) into out; "" when
 * there is none or it cannot be opened. A path that is not a regular
 * file gives a note in brackets instead, such as "[not read: the log is
 * a FIFO, not a regular file]", never bytes of whatever it is. */
void ckh__prog_file_last_line(const char *path, char *out, size_t n);

/* Creates path afresh for writing (mode 0644, O_CLOEXEC): whatever is at
 * path (a link, a FIFO, a file a program planted) is unlinked first and
 * the new file is created exclusively, never written through a link.
 * Returns the fd, or -errno (a folder at path: -EISDIR). */
int ckh__prog_file_create(const char *path);

#endif
