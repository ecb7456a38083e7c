/* Test support: temporary files and reading a whole file, for the suites
 * that write records to a file and read them back. Fails the current Check
 * test when the file system does. */
#ifndef CKH_TEST_FILES_H
#define CKH_TEST_FILES_H

#include <stddef.h>

/* A fresh temporary file /tmp/ckh-test-NAME-XXXXXX (created, empty) into buf. */
void ckh_test_temp_path(const char *name, char *buf, size_t n);
/* The whole file, NUL-terminated, its length in *len (the caller frees). */
char *ckh_test_slurp(const char *path, size_t *len);

#endif
