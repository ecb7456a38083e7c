/* Test support: temporary files and whole-file reads (files.h). */
#include "support/files.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ckh/posix.h"

void ckh_test_temp_path(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/ckh-test-%s-XXXXXX", name);
    int fd = mkstemp(buf);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

char *ckh_test_slurp(const char *path, size_t *len)
{
    char *buf = NULL;
    ck_assert_int_eq(ckh_posix_read_file(path, SIZE_MAX, NULL, &buf, len), 0);
    return buf;
}
