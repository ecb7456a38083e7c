/* prog_s3_curl: a single-threaded C job that checkpoints to an object store
 * with libcurl (Debian's libcurl4-openssl-dev), for the object-store
 * scenarios (scenarios/programs/s3-curl-c-*.yaml; docs/OBJECT_STORE.md).
 *
 * Usage:  prog_s3_curl [--steps N] [--save-every K] [--naive]
 *         prog_s3_curl --verify
 * Environment: AWS_ENDPOINT_URL (the store, http://HOST:PORT), CKH_S3_BUCKET
 * (the bucket), AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (default: the
 * fixed pair ckhtestkey/ckhtestsecret of docs/OBJECT_STORE.md; the store
 * accepts any), CKH_RESULT (the result file; no records when unset). ckh
 * sets all of them for a job with job.object_store.
 *
 * Requests are path-style (http://HOST:PORT/BUCKET/KEY), signed with AWS
 * Signature V4 through CURLOPT_AWS_SIGV4 where this libcurl has it (7.75 and
 * later), else sent unsigned.
 *
 * The job: a state of 8 integers advanced by a fixed rule per step (the
 * rule of tests/programs/saver_common.py); every K steps it is saved as 4
 * shards of 2 integers ("step S A B\n"), then a commit object is written
 * last. Two savers:
 *
 *   --naive    shards to fixed keys ckpt/shard_<i> (overwritten by every
 *              save), then ckpt/commit holding "step S\n". It checks what
 *              curl_easy_perform returns and nothing else: an HTTP error
 *              (a 503 SlowDown) is a completed transfer to libcurl, so a
 *              refused shard goes unnoticed and the commit names a step
 *              whose shard is the previous save's. The restart loads the
 *              shards the commit leads to without checking them.
 *   (default)  shards to ckpt/step_<S>/shard_<i>, each PUT checked for
 *              HTTP 200 and retried (3 attempts) on a transport error or a
 *              5xx; then ckpt/commit holding the step and every shard's
 *              FNV-1a hash, written last. A save that fails writes no
 *              commit (a save record with its error) and training goes on.
 *              After the commit, the step folder two saves back is deleted
 *              (retention). The restart GETs ckpt/commit and then each
 *              shard it names, checking each against its hash.
 *
 * --verify checks the default saver's layout: ckpt/commit, if there is
 * one, names shards that are all there with their hashes (exit 0, or 1
 * naming what is wrong): the scenario's `verify:`.
 * Exit status: 0 done, 1 an error (named on stderr), 2 bad arguments.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/record.h"
#include "ckh/rng.h"

#define NX 8
#define SHARDS 4
#define BODY_MAX (1u << 20) /* a response body longer than this is an error */
#define ATTEMPTS 3

struct opts {
    long steps, every;
    bool naive, verify;
};

struct job {
    struct opts o;
    CURL *curl;
    const char *endpoint, *bucket;
    char userpwd[256];
    bool sigv4;                /* CURLOPT_AWS_SIGV4 accepted by this libcurl */
    struct curl_slist *hdrs;   /* headers of every PUT */
    struct ckh_record *rec;    /* result writer (NULL: no records) */
    char body[BODY_MAX + 1];   /* the last response's body, NUL-terminated */
    size_t nbody;
    bool overflow;             /* the last body did not fit */
    char err[512];             /* what failed */
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct job *j = ud;
    size_t len = size * n;
    if (len > BODY_MAX - j->nbody) {
        j->overflow = true;
        return 0; /* curl stops: CURLE_WRITE_ERROR */
    }
    memcpy(j->body + j->nbody, p, len);
    j->nbody += len;
    j->body[j->nbody] = '\0';
    return len;
}

/* One request: method GET, PUT or DELETE of KEY (PUT sends data, len).
 * Returns the HTTP status, or 0 when the transfer failed (j->err says
 * why). The response body is in j->body. */
static long request(struct job *j, const char *method, const char *key, const char *data, size_t len)
{
    char url[1024];
    if ((size_t)snprintf(url, sizeof url, "%s/%s/%s", j->endpoint, j->bucket, key) >= sizeof url) {
        snprintf(j->err, sizeof j->err, "%s %s: the URL is longer than %zu bytes", method, key, sizeof url - 1);
        return 0;
    }
    curl_easy_reset(j->curl); /* keeps the connection cache */
    j->nbody = 0;
    j->body[0] = '\0';
    j->overflow = false;
    curl_easy_setopt(j->curl, CURLOPT_URL, url);
    curl_easy_setopt(j->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(j->curl, CURLOPT_WRITEDATA, j);
    curl_easy_setopt(j->curl, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(j->curl, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(j->curl, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(j->curl, CURLOPT_POSTFIELDS, data);
        curl_easy_setopt(j->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(j->curl, CURLOPT_HTTPHEADER, j->hdrs);
    } else if (strcmp(method, "DELETE") == 0) {
        curl_easy_setopt(j->curl, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    if (j->sigv4) {
        curl_easy_setopt(j->curl, CURLOPT_USERPWD, j->userpwd);
#if LIBCURL_VERSION_NUM >= 0x074b00
        curl_easy_setopt(j->curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
#endif
    }
    CURLcode rc = curl_easy_perform(j->curl);
    if (rc != CURLE_OK) {
        snprintf(j->err, sizeof j->err, "%s %s: %s", method, key,
                 j->overflow ? "the answer is longer than 1 MiB" : curl_easy_strerror(rc));
        return 0;
    }
    long status = 0;
    curl_easy_getinfo(j->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200 && status != 204)
        snprintf(j->err, sizeof j->err, "%s %s: HTTP %ld", method, key, status);
    return status;
}

/* PUT with the default saver's checks: 200, or retried on a transport
 * error or a 5xx, ATTEMPTS in all. 0 or -1 (j->err says why). */
static int put_checked(struct job *j, const char *key, const char *data)
{
    long status = 0;
    for (int a = 0; a < ATTEMPTS; a++) {
        status = request(j, "PUT", key, data, strlen(data));
        if (status == 200)
            return 0;
        if (status != 0 && status < 500)
            break;
    }
    return -1;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void advance(int64_t x[NX], long step)
{
    for (int i = 0; i < NX; i++)
        x[i] = (x[i] * 31 + step * (i + 7)) % 1000003;
}

static uint64_t state_digest(const int64_t x[NX])
{
    uint64_t d = 0;
    for (int i = 0; i < NX; i++)
        d = ckh_mix64(d ^ (uint64_t)x[i]);
    return d;
}

static void shard_text(char *out, size_t n, long step, const int64_t x[NX], int i)
{
    snprintf(out, n, "step %ld %" PRId64 " %" PRId64 "\n", step, x[2 * i], x[2 * i + 1]);
}

/* Parses a shard's body into x[2i], x[2i+1]; -1 when it is not one. */
static int parse_shard(const char *body, int64_t x[NX], int i, long *step)
{
    return sscanf(body, "step %ld %" SCNd64 " %" SCNd64, step, &x[2 * i], &x[2 * i + 1]) == 3 ? 0 : -1;
}

/* ==== the naive saver ==== */

static int save_naive(struct job *j, long step, const int64_t x[NX])
{
    char key[64], text[128];
    for (int i = 0; i < SHARDS; i++) {
        snprintf(key, sizeof key, "ckpt/shard_%d", i);
        shard_text(text, sizeof text, step, x, i);
        if (request(j, "PUT", key, text, strlen(text)) == 0) /* the flaw: the HTTP status is not looked at */
            return -1;
    }
    snprintf(text, sizeof text, "step %ld\n", step);
    return request(j, "PUT", "ckpt/commit", text, strlen(text)) == 0 ? -1 : 0;
}

/* The step the commit names (0: none), its shards loaded into x; -1 on error. */
static long load_naive(struct job *j, int64_t x[NX])
{
    long status = request(j, "GET", "ckpt/commit", NULL, 0);
    if (status == 404)
        return 0;
    long step = 0, s = 0;
    if (status != 200 || sscanf(j->body, "step %ld", &step) != 1) {
        snprintf(j->err, sizeof j->err, "ckpt/commit: HTTP %ld, %.80s", status, j->body);
        return -1;
    }
    for (int i = 0; i < SHARDS; i++) {
        char key[64];
        snprintf(key, sizeof key, "ckpt/shard_%d", i);
        if (request(j, "GET", key, NULL, 0) == 0 || parse_shard(j->body, x, i, &s) != 0) {
            snprintf(j->err, sizeof j->err, "%s: not a shard: %.80s", key, j->body);
            return -1;
        }
    }
    return step;
}

/* ==== the saver with a commit object ==== */

static int save_commit(struct job *j, long step, const int64_t x[NX])
{
    char key[64], text[128], commit[512];
    int off = snprintf(commit, sizeof commit, "step %ld\n", step);
    for (int i = 0; i < SHARDS; i++) {
        snprintf(key, sizeof key, "ckpt/step_%06ld/shard_%d", step, i);
        shard_text(text, sizeof text, step, x, i);
        if (put_checked(j, key, text) != 0)
            return -1;
        off += snprintf(commit + off, sizeof commit - (size_t)off, "%016" PRIx64 "\n", fnv1a(text));
    }
    if (put_checked(j, "ckpt/commit", commit) != 0) /* the commit, last */
        return -1;
    long old = step - 2 * j->o.every; /* retention, after the commit: keep two */
    for (int i = 0; old > 0 && i < SHARDS; i++) {
        snprintf(key, sizeof key, "ckpt/step_%06ld/shard_%d", old, i);
        long st = request(j, "DELETE", key, NULL, 0);
        if (st != 204 && st != 200 && st != 404)
            fprintf(stderr, "prog_s3_curl: retention: %s\n", j->err);
    }
    return 0;
}

/* As load_naive, for the commit layout: every shard checked against the
 * commit's hash. With x NULL only checks. */
static long load_commit(struct job *j, int64_t x[NX])
{
    int64_t scratch[NX];
    if (!x)
        x = scratch;
    long status = request(j, "GET", "ckpt/commit", NULL, 0);
    if (status == 404)
        return 0;
    if (status != 200)
        return -1; /* j->err names the request and its status */
    long step = 0;
    uint64_t want[SHARDS];
    const char *p = j->body;
    int n = 0;
    if (sscanf(p, "step %ld%n", &step, &n) != 1 || step < 1) {
        snprintf(j->err, sizeof j->err, "ckpt/commit: expected \"step S\" and %d hashes, found %.80s", SHARDS,
                 j->body);
        return -1;
    }
    p += n;
    for (int i = 0; i < SHARDS; i++) {
        if (sscanf(p, " %16" SCNx64 "%n", &want[i], &n) != 1) {
            snprintf(j->err, sizeof j->err, "ckpt/commit: hash %d of %d is missing", i + 1, SHARDS);
            return -1;
        }
        p += n;
    }
    for (int i = 0; i < SHARDS; i++) {
        char key[64];
        long s = 0;
        snprintf(key, sizeof key, "ckpt/step_%06ld/shard_%d", step, i);
        status = request(j, "GET", key, NULL, 0);
        if (status != 200) {
            snprintf(j->err, sizeof j->err, "ckpt/commit names step %ld, but %s: %s", step, key,
                     status ? "is missing" : "cannot be read");
            return -1;
        }
        if (fnv1a(j->body) != want[i] || parse_shard(j->body, x, i, &s) != 0 || s != step) {
            snprintf(j->err, sizeof j->err, "%s does not match ckpt/commit (step %ld)", key, step);
            return -1;
        }
    }
    return step;
}

static int run(struct job *j)
{
    int64_t x[NX] = {1, 2, 3, 4, 5, 6, 7, 8};
    long start = j->o.naive ? load_naive(j, x) : load_commit(j, x);
    if (start < 0) {
        fprintf(stderr, "prog_s3_curl: cannot resume: %s\n", j->err);
        return 1;
    }
    if (start > 0)
        ckh_record_resume(j->rec, &(struct ckh_rec_resume){start, 0});
    for (long step = start + 1; step <= j->o.steps; step++) {
        advance(x, step);
        struct ckh_rec_digest d = {"x", state_digest(x)};
        struct ckh_rec_value v = {"x0", (double)x[0]};
        ckh_record_step(j->rec, &(struct ckh_rec_step){.step = step, .digests = &d, .ndigests = 1, .values = &v,
                                                      .nvalues = 1});
        if (step % j->o.every != 0)
            continue;
        int rc = j->o.naive ? save_naive(j, step, x) : save_commit(j, step, x);
        if (rc != 0 && j->o.naive) {
            fprintf(stderr, "prog_s3_curl: %s\n", j->err);
            return 1;
        }
        ckh_record_save(j->rec, &(struct ckh_rec_save){step, 0, rc ? -EIO : 0, rc ? j->err : NULL});
        if (rc != 0)
            fprintf(stderr, "prog_s3_curl: the save of step %ld failed, nothing committed: %s\n", step, j->err);
    }
    struct ckh_rec_value v = {"x0", (double)x[0]};
    ckh_record_final(j->rec, &(struct ckh_rec_final){.steps = j->o.steps, .total = j->o.steps, .has_digest = true,
                                                     .digest = state_digest(x), .values = &v, .nvalues = 1});
    printf("prog_s3_curl: steps %ld..%ld done\n", start + 1, j->o.steps);
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    o->steps = 12;
    o->every = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--naive") == 0)
            o->naive = true;
        else if (strcmp(a, "--verify") == 0)
            o->verify = true;
        else if (strcmp(a, "--steps") == 0 && i + 1 < argc && parse_long(argv[i + 1], 1, 1000000, &o->steps) == 0)
            i++;
        else if (strcmp(a, "--save-every") == 0 && i + 1 < argc &&
                 parse_long(argv[i + 1], 1, 1000000, &o->every) == 0)
            i++;
        else {
            fprintf(stderr, "prog_s3_curl: bad argument '%s'\nusage: prog_s3_curl [--steps N (1..1000000)] "
                            "[--save-every K (1..1000000)] [--naive] | --verify\n", a);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct job j; /* the response buffer is 1 MiB: not on the stack */
    if (parse_args(argc, argv, &j.o) != 0)
        return 2;
    j.endpoint = getenv("AWS_ENDPOINT_URL");
    j.bucket = getenv("CKH_S3_BUCKET");
    if (!j.endpoint || !*j.endpoint || !j.bucket || !*j.bucket) {
        fprintf(stderr, "prog_s3_curl: AWS_ENDPOINT_URL and CKH_S3_BUCKET must be set (ckh sets them for a job "
                        "with job.object_store)\n");
        return 2;
    }
    const char *key = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    snprintf(j.userpwd, sizeof j.userpwd, "%s:%s", key && *key ? key : "ckhtestkey",
             secret && *secret ? secret : "ckhtestsecret");
    int rc = 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "prog_s3_curl: curl_global_init failed\n");
        return 1;
    }
    j.curl = curl_easy_init();
    if (!j.curl) {
        fprintf(stderr, "prog_s3_curl: curl_easy_init failed\n");
        goto out_global;
    }
#if LIBCURL_VERSION_NUM >= 0x074b00
    j.sigv4 = curl_easy_setopt(j.curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3") == CURLE_OK;
#endif
    /* No "Expect: 100-continue" round trip; a binary body. */
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    if (h)
        j.hdrs = curl_slist_append(h, "Content-Type: application/octet-stream");
    if (!j.hdrs) {
        curl_slist_free_all(h);
        fprintf(stderr, "prog_s3_curl: out of memory\n");
        goto out_curl;
    }
    if (j.o.verify) {
        long step = load_commit(&j, NULL);
        if (step < 0)
            printf("prog_s3_curl --verify: %s\n", j.err);
        else
            printf("prog_s3_curl --verify: %s\n", step ? "the commit's shards are whole" : "no commit");
        rc = step < 0;
        goto out_hdrs;
    }
    const char *result = getenv("CKH_RESULT");
    char msg[256];
    if (result && *result && ckh_record_jsonl_open(result, &j.rec, msg, sizeof msg) != 0) {
        fprintf(stderr, "prog_s3_curl: %s\n", msg);
        goto out_hdrs;
    }
    rc = run(&j);
    ckh_record_jsonl_close(j.rec);
out_hdrs:
    curl_slist_free_all(j.hdrs);
out_curl:
    curl_easy_cleanup(j.curl);
out_global:
    curl_global_cleanup();
    return rc;
}
