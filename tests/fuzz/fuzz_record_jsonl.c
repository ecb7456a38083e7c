/* Fuzz target: the JSON-lines result protocol reader on arbitrary bytes.
 *
 * ckh_record_jsonl_parse() (include/ckh/record.h) reads the input as the
 * result file of a command job. The bytes are passed as they are, not
 * NUL-terminated: the reader must honour n.
 *
 * Invariants checked (abort on violation):
 *   every record handed to the sink passes ckh_record_check_* (names,
 *   counts, finite values), and everything it points to can be read;
 *   success -> 0; failure -> CKH_EPARSE or CKH_ENOMEM with a message
 *   "fuzz.jsonl:LINE:COL: expected ..., found ..." whose line exists.
 * Seeds: tests/fuzz/corpus/record_jsonl/ (one file per record kind, a
 * mixed file, edge cases).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/record.h"
#include "fuzz.h"

/* Reads every byte a record points to; returns a sum so the reads stay. */
static size_t touch(const char *s)
{
    return s ? strlen(s) : 0;
}

static int sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    size_t *sum = ctx;
    switch (kind) {
    case CKH_REC_STEP: {
        const struct ckh_rec_step *s = rec;
        if (ckh_record_check_step(s) != 0)
            abort();
        for (size_t i = 0; i < s->ndigests; i++)
            *sum += touch(s->digests[i].name) + (size_t)s->digests[i].digest;
        for (size_t i = 0; i < s->nvalues; i++)
            *sum += touch(s->values[i].name);
        for (size_t i = 0; i < s->nsamples; i++)
            *sum += (size_t)s->samples[i];
        break;
    }
    case CKH_REC_RESUME:
        if (ckh_record_check_resume(rec) != 0)
            abort();
        break;
    case CKH_REC_SAVE: {
        const struct ckh_rec_save *s = rec;
        if (ckh_record_check_save(s) != 0)
            abort();
        *sum += touch(s->what);
        break;
    }
    case CKH_REC_FINAL: {
        const struct ckh_rec_final *s = rec;
        if (ckh_record_check_final(s) != 0)
            abort();
        for (size_t i = 0; i < s->nvalues; i++)
            *sum += touch(s->values[i].name);
        for (size_t i = 0; i < s->nblobs; i++)
            *sum += touch(s->blobs[i]);
        break;
    }
    default:
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[1024];
    size_t sum = 0, line = 0, col = 0, lines = 1;
    int rc = ckh_record_jsonl_parse((const char *)data, size, "fuzz.jsonl", sink, &sum, msg, sizeof msg);
    if (rc == 0 || rc == CKH_ENOMEM)
        return 0;
    if (rc != CKH_EPARSE)
        abort();
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (sscanf(msg, "fuzz.jsonl:%zu:%zu: expected ", &line, &col) != 2 || line < 1 || line > lines ||
        col < 1 || !strstr(msg, ", found "))
        abort();
    return (int)(sum & 0);
}
