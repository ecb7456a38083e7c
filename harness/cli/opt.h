/* Checked parsing of the ckh command's option values, shared by every verb
 * (run, replay, fuzz, shrink, validate-backend), so each refuses the same
 * things with the same kind of message naming the option.
 *
 * A number is decimal digits or 0x and hex digits, nothing else: no sign,
 * no blank, no suffix, no empty text, and no value outside [min, max] (an
 * overflow of 64 bits is outside).
 */
#ifndef CKH_CLI_OPT_H
#define CKH_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses text as an integer in [min, max] into *out. On failure writes
 * "--NAME expects an integer MIN..MAX, got 'TEXT'" into msg (n bytes) and
 * returns CKH_EINVAL; *out is then unchanged. */
int ckh_opt_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out,
                char *msg, size_t n);

/* Parses a size ("4GiB", "512MiB", "1000000", docs/SCENARIOS.md sizes) in
 * [min, max]; 0 is allowed when min is 0. Messages as ckh_opt_u64. */
int ckh_opt_size(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out,
                 char *msg, size_t n);

/* Parses a shard "I/N" (1 <= I <= N < 2^32) into *index (1-based) and
 * *count. On failure writes "--NAME expects I/N with 1 <= I <= N, got
 * 'TEXT'" into msg and returns CKH_EINVAL; the outputs are then unchanged. */
int ckh_opt_shard(const char *name, const char *text, uint32_t *index, uint32_t *count, char *msg,
                  size_t n);

/* Checks, before any work starts, that a report file can be written at
 * path: its folder exists, is a folder and is writable, and path itself
 * is not a folder nor a read-only file. With is_dir, path is a folder to
 * be created or reused (its parent must be writable when it is missing).
 * Returns 0, or a negative code with "cannot write the WHAT PATH: why"
 * in msg. */
int ckh_opt_check_output(const char *what, const char *path, bool is_dir, char *msg, size_t n);

/* The report files of a verb (--junit, --json, --html; NULL: not asked),
 * each checked as ckh_opt_check_output does, and no two the same file
 * (the same path, or two paths to one place): then CKH_EINVAL with
 * "--junit and --json name the same file X: ..." in msg. 0 or the code. */
int ckh_opt_check_reports(const char *junit, const char *json, const char *html, char *msg, size_t n);

#endif
