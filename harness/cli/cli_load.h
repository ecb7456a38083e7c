/* Loading scenario files for `ckh run` and `ckh list`: each file is parsed
 * in a worker of the pool (harness/exec/pool.h), under a wall-time limit and
 * the memory limit, so a huge or hostile file costs one error line, never
 * a hung or killed ckh. The parent keeps what it needs to list, filter and
 * report: name, description, seed or the error. `ckh run`'s workers parse
 * the file again (parsing is deterministic) before running it.
 */
#ifndef CKH_CLI_LOAD_H
#define CKH_CLI_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/scenario.h"

/* Wall-time limit for parsing one scenario file, in seconds; the
 * environment variable CKH_PARSE_LIMIT_S (1..86400) overrides it. */
#define CKH_CLI_PARSE_LIMIT_S 60

/* One scenario file as its parse worker saw it. Every string is owned. */
struct ckh_cli_scn {
    char *path;        /* the file */
    char *name;        /* scenario name; the file's base name when it did not parse */
    char *description; /* NULL when none */
    uint64_t seed;     /* the scenario's own seed */
    char *error;       /* NULL, or why it did not parse (file, line, column, what) */
    int status;        /* CKH_EXIT_* the file contributes (OK when it parsed) */
};

/* What to load. */
struct ckh_cli_load {
    const char *verb;       /* "run" or "list": prefixes messages */
    const char *filter;     /* --filter globs on names (NULL: all) */
    unsigned jobs;          /* parse workers at a time */
    uint64_t mem_bytes;     /* memory limit per worker (0: none) */
    uint32_t shard;         /* --shard I/N: keep the I-th (1-based) of every N files that
                               pass the filter, in sorted order (0: all) */
    uint32_t shards;        /* N (0: no sharding) */
};

/* Lists the scenario files under each of npaths paths (sorted per path, in
 * argument order) and parses each in a worker. *out (a malloc'd array of
 * *n entries, free with ckh_cli_scns_free) holds the files whose name
 * passes the filter. A path that cannot be listed is reported on stderr
 * and raises *status to CKH_EXIT_BAD_INPUT. Returns 0, -EINTR (a caught
 * signal; *out is then empty) or a negative code. */
int ckh_cli_load_scenarios(const struct ckh_cli_load *l, char *const *paths, size_t npaths,
                           struct ckh_cli_scn **out, size_t *n, int *status);

/* Frees n entries and the array. */
void ckh_cli_scns_free(struct ckh_cli_scn *v, size_t n);

/* Parses one path for a worker: a file, or a folder that could not be
 * listed (its error names it). *scn is NULL on error, with err filled. */
int ckh_cli_parse_one(const char *path, struct ckh_scenario **scn, struct ckh_scn_error *err);

#endif
