/* s3_serve: a simulated object store served by the S3 endpoint on its own,
 * for the endpoint's conformance test (tests/test_s3_endpoint.py) and the
 * object-store benchmark (bench/bench_objstore.py).
 *
 *   s3_serve [--nodes N] [--bucket NAME]... [--consistency NAME]
 *            [--delay-ops N] [--max-body BYTES] [--min-part BYTES] [--seed N]
 *
 * Prints one line per node, "NODE PORT", then reads commands on standard
 * input, one a line, answering each with its lines and a line ".":
 *   trace            the store's trace lines so far
 *   inflight         the number of writes in flight
 *   crash NODE       the crash model for NODE (-1: all): "undone N"
 *   expire B K       deletes B/K at rest
 *   corrupt B K OFF  flips the byte at OFF of B/K at rest
 *   bytes            the body bytes the store holds
 * End of input (or SIGTERM) stops the server; exit 0, 2 for bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/objstore.h"
#include "ckhfs/s3_endpoint.h"

#define MAX_BUCKETS 16

static int usage(const char *why)
{
    fprintf(stderr, "s3_serve: %s\nusage: s3_serve [--nodes N] [--bucket NAME]... [--consistency NAME] "
                    "[--delay-ops N] [--max-body BYTES] [--min-part BYTES] [--seed N]\n", why);
    return 2;
}

static void command(struct ckh_s3_server *srv, struct ckh_objstore *s, char *line)
{
    char *save = NULL, *cmd = strtok_r(line, " \n", &save);
    char *a = strtok_r(NULL, " \n", &save), *b = strtok_r(NULL, " \n", &save);
    char *c = strtok_r(NULL, " \n", &save);
    ckh_s3_server_lock(srv);
    if (cmd == NULL) {
        /* empty line */
    } else if (strcmp(cmd, "trace") == 0) {
        for (size_t i = 0; i < ckh_objstore_trace_len(s); i++)
            printf("%s\n", ckh_objstore_trace_line(s, i));
    } else if (strcmp(cmd, "inflight") == 0) {
        printf("%zu\n", ckh_objstore_inflight_count(s, -1));
    } else if (strcmp(cmd, "crash") == 0 && a != NULL) {
        printf("undone %d\n", ckh_objstore_crash(s, atoi(a), NULL, 0));
    } else if (strcmp(cmd, "expire") == 0 && b != NULL) {
        printf("%d\n", ckh_objstore_expire(s, a, b));
    } else if (strcmp(cmd, "corrupt") == 0 && c != NULL) {
        printf("%d\n", ckh_objstore_corrupt(s, a, b, strtoull(c, NULL, 10)));
    } else if (strcmp(cmd, "bytes") == 0) {
        printf("%" PRIu64 "\n", ckh_objstore_body_bytes(s));
    } else {
        printf("unknown command\n");
    }
    ckh_s3_server_unlock(srv);
    printf(".\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct ckh_objstore_config cfg = {.name = "s3", .seed = 1};
    const char *buckets[MAX_BUCKETS];
    int nbuckets = 0, nodes = 1;
    uint64_t max_body = 0;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            return usage("an option without its value");
        if (strcmp(argv[i], "--nodes") == 0 && (nodes = atoi(v)) >= 1) {
        } else if (strcmp(argv[i], "--bucket") == 0 && nbuckets < MAX_BUCKETS) {
            buckets[nbuckets++] = v;
        } else if (strcmp(argv[i], "--consistency") == 0) {
            if (ckh_objstore_consistency_parse(v, &cfg.consistency) != 0)
                return usage("--consistency: strong, list-delay, overwrite-delay or eventual");
        } else if (strcmp(argv[i], "--delay-ops") == 0) {
            cfg.delay_ops = strtoull(v, NULL, 10);
        } else if (strcmp(argv[i], "--max-body") == 0) {
            max_body = strtoull(v, NULL, 10);
        } else if (strcmp(argv[i], "--min-part") == 0) {
            cfg.min_part_bytes = strtoull(v, NULL, 10);
        } else if (strcmp(argv[i], "--seed") == 0) {
            cfg.seed = strtoull(v, NULL, 10);
        } else {
            return usage("unknown option or bad value");
        }
    }
    signal(SIGPIPE, SIG_IGN);
    struct ckh_objstore *s = NULL;
    int rc = ckh_objstore_create(&cfg, &s);
    for (int i = 0; rc == 0 && i < nbuckets; i++)
        if (ckh_objstore_create_bucket(s, -1, buckets[i]) != 0)
            rc = CKH_EINVAL;
    if (rc != 0) {
        fprintf(stderr, "s3_serve: cannot make the store or a bucket\n");
        ckh_objstore_destroy(s);
        return 2;
    }
    struct ckh_s3_server *srv = NULL;
    char err[256];
    struct ckh_s3_server_config sc = {.store = s, .nnodes = nodes, .max_body_bytes = max_body};
    if ((rc = ckh_s3_server_start(&sc, &srv, err, sizeof err)) != 0) {
        fprintf(stderr, "s3_serve: %s\n", err);
        ckh_objstore_destroy(s);
        return rc == CKH_EUNSUPPORTED ? 77 : 1;
    }
    for (int i = 0; i < nodes; i++)
        printf("%d %u\n", i, ckh_s3_server_port(srv, i));
    fflush(stdout);
    char line[4096];
    while (fgets(line, sizeof line, stdin) != NULL)
        command(srv, s, line);
    ckh_s3_server_stop(srv);
    ckh_objstore_destroy(s);
    return 0;
}
