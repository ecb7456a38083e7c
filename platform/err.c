/* ckh_strerror / ckh_err_name: generated from the one table in err.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"

#include "ckh/err.h"

/* errno values ckh reports by name; anything else falls back to strerror. */
#define CKH__ERRNO_NAMES(X)                                                    \
    X(EPERM) X(ENOENT) X(EIO) X(EBADF) X(ENOMEM) X(EACCES) X(EEXIST) X(EXDEV)  \
    X(ENOTDIR) X(EISDIR) X(EINVAL) X(EMFILE) X(EFBIG) X(ENOSPC) X(EROFS)       \
    X(ENAMETOOLONG) X(ENOTEMPTY) X(ELOOP) X(EDQUOT) X(ETIMEDOUT) X(EAGAIN)     \
    X(ENOSYS) X(ERANGE) X(EINTR) X(ESPIPE)

const char *ckh_strerror(int code)
{
    if (code == 0)
        return "success";
    switch (code) {
#define CKH__ERR_STR(name, off, desc)                                          \
    case CKH_E##name:                                                          \
        return desc;
        CKH_ERR_MAP(CKH__ERR_STR)
#undef CKH__ERR_STR
    default:
        break;
    }
    if (code < 0 && code > CKH__ERR_BASE)
        return strerror(-code);
    return "unknown error";
}

const char *ckh_err_name(int code)
{
    if (code == 0)
        return "OK";
    switch (code) {
#define CKH__ERR_NAME(name, off, desc)                                         \
    case CKH_E##name:                                                          \
        return "CKH_E" #name;
        CKH_ERR_MAP(CKH__ERR_NAME)
#undef CKH__ERR_NAME
#define CKH__ERRNO_CASE(e)                                                     \
    case -e:                                                                   \
        return #e;
        CKH__ERRNO_NAMES(CKH__ERRNO_CASE)
#undef CKH__ERRNO_CASE
    default:
        return "UNKNOWN";
    }
}

int ckh_verrf(char *buf, size_t n, int code, const char *fmt, va_list ap)
{
    if (buf != NULL && n > 0)
        vsnprintf(buf, n, fmt, ap);
    return code;
}

int ckh_errf(char *buf, size_t n, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ckh_verrf(buf, n, code, fmt, ap);
    va_end(ap);
    return code;
}

_Noreturn void ckh__assert_fail(const char *cond, const char *file, int line, const char *func)
{
    fprintf(stderr, "ckh: assertion failed: %s (%s:%d, %s)\n", cond, file, line, func);
    fflush(stderr);
    abort();
}

bool ckh_err_is_bad_input(int code)
{
    /* CKH_ECRASH and CKH_ETIMEOUT: a plugin the input names crashed or hung
     * while it loaded (exec/plugin.c's probe). */
    return code == CKH_EINVAL || code == CKH_EPARSE || code == -ENOENT || code == CKH_ENOTFOUND ||
           code == CKH_EFOREIGN || code == CKH_EVERSION || code == CKH_EUNSUPPORTED || code == CKH_EEXISTS ||
           code == CKH_ECRASH || code == CKH_ETIMEOUT;
}
