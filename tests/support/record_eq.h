/* Test support: record-by-record comparison of the record model
 * (include/ckh/record.h), for tests that write records one way and read
 * them back another (the JSON-lines writer and reader, the Python helper).
 * Fails the current Check test on the first difference. */
#ifndef CKH_TEST_RECORD_EQ_H
#define CKH_TEST_RECORD_EQ_H

#include <stdbool.h>

#include "ckh/record.h"

/* got equals want field for field; digests and values bit for bit. With
 * by_name, a step's digests and any record's values may come in another
 * order (a writer that keeps them in a map); else the order must match. */
void ckh_test_record_eq(enum ckh_rec_kind kind, const void *want, const void *got, bool by_name);

#endif
