/* Fuzz target: the scenario parser on arbitrary bytes.
 *
 * ckh_scenario_parse_string() (harness/model/scenario.h) reads the
 * input as a scenario file, with no name lists (every workload, backend
 * and oracle name accepted, so the fuzzer reaches past name checks).
 * The bytes are passed as they are, not NUL-terminated: the parser must
 * honour len.
 *
 * Invariants checked (abort on violation):
 *   success  -> *out set, 0 returned
 *   failure  -> a negative code, *out left NULL, err.code equal to it,
 *               and the error formats (file:line:column: message).
 * Seeds: tests/fuzz/corpus/scenario/ (library scenarios and edge cases);
 * dictionary: tests/fuzz/scenario.dict.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "model/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ckh_scenario *s = NULL;
    struct ckh_scn_error err;
    char msg[1024];
    int rc = ckh_scenario_parse_string((const char *)data, size, "fuzz.yaml", NULL, &s, &err);
    if (rc == 0) {
        if (!s)
            abort();
        ckh_scenario_free(s);
        return 0;
    }
    if (rc > 0 || s != NULL || err.code != rc)
        abort();
    if (ckh_scn_error_format(&err, msg, sizeof msg) < 0)
        abort();
    return 0;
}
