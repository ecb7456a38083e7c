/* Test support: temporary files and whole-file reads (files.h). */
#include "support/files.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void ckh_test_temp_path(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/ckh-test-%s-XXXXXX", name);
    int fd = mkstemp(buf);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

char *ckh_test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    ck_assert_int_ge(size, 0);
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (size_t)size, f);
    ck_assert_uint_eq(*len, (size_t)size);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}
