/* ckh error codes.
 *
 * Every action in ckh returns 0 on success or a negative code. OS-style
 * failures are -errno (-EIO, -ENOSPC, ...); ckh's own failures live in a
 * reserved range below CKH__ERR_BASE so they never collide with an errno.
 * One X-macro table generates the enum, ckh_strerror() and ckh_err_name().
 */
#ifndef CKH_ERR_H
#define CKH_ERR_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define CKH__ERR_BASE (-10000)

/* X(name, offset, description) */
#define CKH_ERR_MAP(X)                                                         \
    X(INVAL, 1, "invalid argument")                                            \
    X(NOMEM, 2, "out of memory")                                               \
    X(CORRUPT, 3, "data is corrupt (checksum mismatch)")                       \
    X(TRUNCATED, 4, "data is truncated")                                       \
    X(FOREIGN, 5, "file is not in the expected format")                        \
    X(VERSION, 6, "unsupported format version")                                \
    X(NOTFOUND, 7, "no such item")                                             \
    X(EXISTS, 8, "item already exists")                                        \
    X(TIMEOUT, 9, "operation timed out")                                       \
    X(DEADLOCK, 10, "every live node is blocked")                              \
    X(MISMATCH, 11, "collective mismatch between ranks")                       \
    X(PEER_DEAD, 12, "a peer rank is dead")                                    \
    X(KILLED, 13, "node was killed")                                           \
    X(UNSUPPORTED, 14, "operation not supported")                              \
    X(LIMIT, 15, "a configured limit was reached")                             \
    X(ESCAPE, 16, "path escapes its root")                                     \
    X(STATE, 17, "object is in the wrong state for this call")                 \
    X(PARSE, 18, "malformed input")                                            \
    X(INTERNAL, 19, "internal error")                                          \
    X(OOM_DEVICE, 20, "emulated device out of memory")                         \
    X(CRASH, 21, "a plugin or program crashed")                               \
    X(FAILS_UNFAULTED, 22, "the job fails without any fault")

enum ckh_err {
#define CKH__ERR_ENUM(name, off, desc) CKH_E##name = CKH__ERR_BASE - (off),
    CKH_ERR_MAP(CKH__ERR_ENUM)
#undef CKH__ERR_ENUM
};

/* Returns a static description of a code: a ckh code, a negative errno, or 0.
 * The returned string lives for the whole program. */
const char *ckh_strerror(int code);

/* Returns the symbolic name of a code ("CKH_ECORRUPT", "EIO", "OK");
 * static storage, never NULL. */
const char *ckh_err_name(int code);

/* Whether a harness call that returned code was refused for bad input
 * (a malformed scenario, a missing file, a plugin that is not one or
 * that crashes or hangs while it loads, ...),
 * not for an internal error: the codes a verb maps to exit status 2, and
 * a verdict with nothing to replay. */
bool ckh_err_is_bad_input(int code);

/* The one error-message formatter: writes fmt's message into buf (n bytes,
 * always NUL-terminated when n > 0, cut short when longer) and returns code,
 * so a failing path reads `return ckh_errf(h->msg, sizeof h->msg, CKH_EINVAL,
 * "...", ...);`. buf may be NULL when n is 0 (the message is dropped). */
int ckh_errf(char *buf, size_t n, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ckh_errf with a va_list; ap is consumed. */
int ckh_verrf(char *buf, size_t n, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* The size of the error-message array a handle keeps (the harness's run
 * and command contexts, the simulator's handles, the private handles of
 * the code under test). The structs of include/ckh/ keep the sizes they
 * were published with: plugins are built against them. */
#define CKH_ERRMSG_BYTES 1024

/* ckh_errf into a handle's message array, its size taken from its type,
 * so that no handle needs a formatting wrapper of its own:
 * `return CKH_ERRF(h->errmsg, CKH_EINVAL, "...", ...);`. msg must be an
 * array, never a pointer (the build refuses a pointer). */
#define CKH_ERRF(msg, code, ...)                                                                   \
    ckh_errf((msg), sizeof(msg) + 0 * sizeof(char[CKH__IS_ARRAY(msg) ? 1 : -1]), (code), __VA_ARGS__)
#define CKH__IS_ARRAY(a) (!__builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0])))

#endif
