/* Benchmark of the scenario parser (harness/model/). Prints "name value
 * unit" lines:
 *
 *   parse_options_<N>_keys_per_sec   job.options keys parsed per wall second
 *                                    for a scenario with N option keys
 *   parse_tags_<N>_tags_per_sec      the same for N tags
 *
 * for N = 10k, 40k and 200k: a linear parser shows about the same rate at
 * every N. The wall clock is read only to measure; nothing here asserts
 * on time. Usage: bench_parse [quick]   ("quick": 10k and 40k only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckh/err.h"
#include "model/scenario.h"

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A scenario with n option keys (tags: false) or n tags (tags: true). */
static char *scenario_text(size_t n, bool tags, size_t *len)
{
    size_t cap = 128 + n * 32, used = 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    used += (size_t)snprintf(t, cap, "job:\n  workload: w\n%s", tags ? "tags: [" : "  options:\n");
    for (size_t i = 0; i < n; i++)
        used += (size_t)(tags ? snprintf(t + used, cap - used, "%st%zu", i ? ", " : "", i)
                              : snprintf(t + used, cap - used, "    key_%zu: %zu\n", i, i));
    if (tags)
        used += (size_t)snprintf(t + used, cap - used, "]\n");
    *len = used;
    return t;
}

static int bench(size_t n, bool tags)
{
    size_t len = 0;
    char *t = scenario_text(n, tags, &len);
    if (!t)
        return CKH_ENOMEM;
    struct ckh_scenario *sc = NULL;
    struct ckh_scn_error err;
    double t0 = wall_s();
    int rc = ckh_scenario_parse_string(t, len, "bench.yaml", NULL, &sc, &err);
    double dt = wall_s() - t0;
    free(t);
    if (rc != 0) {
        fprintf(stderr, "bench_parse: %s\n", err.msg);
        return rc;
    }
    size_t got = tags ? sc->ntags : sc->job.noptions;
    ckh_scenario_free(sc);
    if (got != n) {
        fprintf(stderr, "bench_parse: parsed %zu of %zu\n", got, n);
        return CKH_EINVAL;
    }
    printf("parse_%s_%zuk_%s_per_sec %.0f %s/s\n", tags ? "tags" : "options", n / 1000,
           tags ? "tags" : "keys", (double)n / (dt > 0 ? dt : 1e-9), tags ? "tags" : "keys");
    return 0;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    static const size_t sizes[] = {10000, 40000, 200000};
    for (size_t i = 0; i < (quick ? 2u : 3u); i++)
        if (bench(sizes[i], false) != 0 || bench(sizes[i], true) != 0)
            return 1;
    return 0;
}
