/* The S3 endpoint over libmicrohttpd (s3_endpoint.h).
 *
 * SPECIFICATION (tests/test_s3_endpoint.py cites the rules)
 *
 * E1. Addressing: path style, "/BUCKET/KEY"; virtual-host style when the
 *     Host header (its name, without the port) is "BUCKET.localhost": the
 *     whole path is then the key. The path is percent-decoded once. "/" with
 *     no bucket is ListBuckets.
 * E2. Authentication: Authorization, X-Amz-Date, presigned query arguments
 *     and X-Amz-Content-Sha256 are accepted and never checked.
 * E3. Operations, by method, bucket/key and query argument:
 *       GET /                         ListBuckets
 *       PUT|DELETE|HEAD /B            CreateBucket, DeleteBucket, HeadBucket
 *       GET /B?list-type=2            ListObjectsV2 (prefix, delimiter,
 *                                     max-keys, continuation-token,
 *                                     start-after, encoding-type=url)
 *       GET /B                        ListObjects (v1: marker as start-after)
 *       GET /B?location               GetBucketLocation
 *       GET /B?versions               ListObjectVersions: buckets are never
 *                                     versioned, so every object is its one
 *                                     version, VersionId "null" (prefix,
 *                                     delimiter, max-keys, key-marker)
 *       POST /B?delete                DeleteObjects
 *       PUT /B/K                      PutObject; with x-amz-copy-source:
 *                                     CopyObject; with partNumber and
 *                                     uploadId: UploadPart
 *       GET|HEAD /B/K                 GetObject, HeadObject (Range,
 *                                     If-Match, If-None-Match)
 *       DELETE /B/K                   DeleteObject; with uploadId:
 *                                     AbortMultipartUpload
 *       POST /B/K?uploads             CreateMultipartUpload
 *       POST /B/K?uploadId=U          CompleteMultipartUpload
 *       GET /B/K?uploadId=U           ListParts
 *     versionId=null on an object's GET, HEAD or DELETE names its one
 *     version (as S3 does for an unversioned bucket); any other versionId
 *     is 400 InvalidArgument. Any other method or query argument naming a
 *     sub-resource (acl, tagging, versioning, policy, uploads on GET...)
 *     is 501 NotImplemented; nothing is applied.
 * E4. Bodies: Content-Length or HTTP chunked; aws-chunked (Content-Encoding
 *     aws-chunked, or X-Amz-Content-Sha256 STREAMING-*) is decoded: chunks
 *     "HEX[;ext]\r\nDATA\r\n" up to a zero chunk, trailers ignored; a body
 *     that breaks the framing, or whose decoded length differs from
 *     X-Amz-Decoded-Content-Length, is IncompleteBody. A body longer than
 *     max_body_bytes is EntityTooLarge, answered as soon as the length is
 *     known, and the body is never held.
 * E5. Errors: S3's XML error document (Code, Message, Resource, RequestId)
 *     with its HTTP status; HEAD errors have no body. A request the endpoint
 *     cannot parse is answered, never a crash: the worst is 400 or 501.
 * E6. Every request is one store operation (one trace line), ListBuckets
 *     and GetBucketLocation aside; x-amz-request-id is the op's number.
 *     Last-Modified is 2026-01-01T00:00:00Z plus the op's number in
 *     seconds, so it is the same on every run.
 * E7. A write is acknowledged (ckh_objstore_ack) when its response was sent
 *     whole; a connection closed before that leaves it in flight.
 * E8. Faults: the hook sees each request after its body arrived; ERROR
 *     answers the error and applies nothing, RESET_BEFORE and RESET_AFTER
 *     close the connection with no answer (before or after applying; after:
 *     acknowledged, the server knows it applied it), LOST_AFTER applies and
 *     closes without acknowledging (the client died: the crash model
 *     decides), DELAY holds the answer (the node's port waits).
 */
#include "ckhfs/s3_endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ckh/err.h"
#include "ckhfs/s3_xml.h"

#define DEFAULT_MAX_BODY (5ull << 30)
#define BASE_TIME 1767225600 /* 2026-01-01T00:00:00Z */
#define READ_BLOCK (64u * 1024u)
#define MAX_ARGS 32
#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

struct node_port {
    struct ckh_s3_server *srv; /* owner */
    int node;                  /* index */
    uint16_t port;             /* listening port */
    struct MHD_Daemon *mhd;    /* its daemon */
};

struct ckh_s3_server {
    struct ckh_s3_server_config cfg; /* as given, defaults resolved */
    pthread_mutex_t lock;            /* the store's lock */
    struct node_port *ports;         /* [cfg.nnodes] */
};

/* One request in progress. */
struct req {
    struct node_port *np;   /* its port */
    char method[8];         /* GET, PUT, ... */
    char *bucket;           /* decoded (NULL: none) */
    char *key;              /* decoded (NULL: a bucket request) */
    struct {
        const char *name;   /* query argument (borrowed from the connection) */
        const char *value;  /* its value (NULL: none given) */
    } args[MAX_ARGS];
    int nargs;
    unsigned char *body;    /* the body so far (malloc'd) */
    size_t len, cap;
    bool too_large;         /* the body passed max_body_bytes */
    bool has_write;         /* write_seq names a write to acknowledge */
    uint64_t write_seq;
    uint64_t list_omit_ops; /* a listing: keys written in the last N ops left out (a fault; 0: none) */
};

bool ckh_s3_available(void)
{
    return true;
}

/* ---- request helpers ---- */

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static bool has_arg(const struct req *r, const char *name, const char **value)
{
    for (int i = 0; i < r->nargs; i++) {
        if (strcmp(r->args[i].name, name) == 0) {
            if (value != NULL)
                *value = r->args[i].value;
            return true;
        }
    }
    return false;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    struct req *r = cls;
    if (r->nargs < MAX_ARGS) {
        r->args[r->nargs].name = key;
        r->args[r->nargs].value = value;
        r->nargs++;
    }
    return MHD_YES;
}

/* E1: bucket and key from the Host header and the path. */
static int parse_target(struct req *r, struct MHD_Connection *c, const char *url)
{
    const char *host = header(c, "Host");
    const char *path = url[0] == '/' ? url + 1 : url;
    if (host != NULL) {
        const char *colon = strrchr(host, ':');
        size_t hl = colon != NULL && strchr(host, ']') == NULL ? (size_t)(colon - host) : strlen(host);
        static const char suffix[] = ".localhost";
        size_t sl = sizeof suffix - 1;
        if (hl > sl && strncasecmp(host + hl - sl, suffix, sl) == 0) {
            if ((r->bucket = strndup(host, hl - sl)) == NULL)
                return CKH_ENOMEM;
            if (path[0] != '\0' && (r->key = strdup(path)) == NULL)
                return CKH_ENOMEM;
            return 0;
        }
    }
    if (path[0] == '\0')
        return 0;
    const char *slash = strchr(path, '/');
    r->bucket = slash != NULL ? strndup(path, (size_t)(slash - path)) : strdup(path);
    if (r->bucket == NULL)
        return CKH_ENOMEM;
    if (slash != NULL && slash[1] != '\0' && (r->key = strdup(slash + 1)) == NULL)
        return CKH_ENOMEM;
    return 0;
}

static void req_free(struct req *r)
{
    if (r == NULL)
        return;
    free(r->bucket);
    free(r->key);
    free(r->body);
    free(r);
}

/* ---- responses ---- */

static void http_date(uint64_t seq, char *buf, size_t n)
{
    time_t t = (time_t)(BASE_TIME + seq);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void iso_date(uint64_t seq, char *buf, size_t n)
{
    time_t t = (time_t)(BASE_TIME + seq);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/* Queues resp with status and the common headers, then drops our reference. */
static enum MHD_Result send_resp(struct MHD_Connection *c, struct MHD_Response *resp, unsigned status, uint64_t seq)
{
    if (resp == NULL)
        return MHD_NO;
    char id[32];
    snprintf(id, sizeof id, "%016" PRIX64, seq);
    MHD_add_response_header(resp, "x-amz-request-id", id);
    MHD_add_response_header(resp, "x-amz-id-2", id);
    MHD_add_response_header(resp, "Server", "ckh-s3");
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Answers an XML body (taken over) with status. */
static enum MHD_Result send_xml(struct MHD_Connection *c, struct ckh__s3_buf *b, unsigned status, uint64_t seq)
{
    if (b->oom) {
        free(b->p);
        return MHD_NO;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b->len, b->p != NULL ? b->p : (char *)"", b->p != NULL ? MHD_RESPMEM_MUST_FREE
                                                                                             : MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        free(b->p);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/xml");
    return send_resp(c, resp, status, seq);
}

static enum MHD_Result send_empty(struct MHD_Connection *c, unsigned status, uint64_t seq)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
    return send_resp(c, resp, status, seq);
}

/* E5: the error document of e (an S3 error, or a negative ckh code:
 * InternalError) for resource. */
static enum MHD_Result send_error(struct MHD_Connection *c, const struct req *r, int e, uint64_t seq)
{
    if (e < 0)
        e = CKH_S3_INTERNAL_ERROR;
    unsigned status = (unsigned)ckh_s3_err_status(e);
    if (strcmp(r->method, "HEAD") == 0 || e == CKH_S3_NOT_MODIFIED)
        return send_empty(c, status, seq);
    struct ckh__s3_buf b = {0};
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
    ckh__s3_elem(&b, "Code", ckh_s3_err_code(e), false);
    ckh__s3_elem(&b, "Message", ckh_s3_err_message(e), false);
    if (r->bucket != NULL)
        ckh__s3_elem(&b, "BucketName", r->bucket, false);
    if (r->key != NULL)
        ckh__s3_elem(&b, "Key", r->key, false);
    struct ckh__s3_buf res = {0};
    ckh__s3_printf(&res, "/%s%s%s", r->bucket != NULL ? r->bucket : "", r->key != NULL ? "/" : "",
                   r->key != NULL ? r->key : "");
    ckh__s3_elem(&b, "Resource", res.p != NULL ? res.p : "/", false);
    free(res.p);
    ckh__s3_printf(&b, "<RequestId>%016" PRIX64 "</RequestId></Error>", seq);
    return send_xml(c, &b, status, seq);
}

/* ---- the object reader of GET responses ---- */

struct reader {
    struct ckh_s3_server *srv;      /* for the lock */
    struct ckh_objstore_object *o;  /* held */
    uint64_t off;                   /* first byte served */
};

static ssize_t reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct reader *rd = cls;
    pthread_mutex_lock(&rd->srv->lock);
    size_t n = ckh_objstore_object_read(rd->o, rd->off + pos, buf, max);
    pthread_mutex_unlock(&rd->srv->lock);
    return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void reader_free(void *cls)
{
    struct reader *rd = cls;
    pthread_mutex_lock(&rd->srv->lock);
    ckh_objstore_object_unref(rd->o);
    pthread_mutex_unlock(&rd->srv->lock);
    free(rd);
}

/* ---- E4: bodies ---- */

/* Decodes an aws-chunked body in place: 0 or CKH_S3_INCOMPLETE_BODY. */
static int aws_unchunk(struct req *r)
{
    size_t in = 0, out = 0;
    for (;;) {
        size_t start = in;
        while (in < r->len && r->body[in] != '\r' && r->body[in] != ';')
            in++;
        if (in == start || in >= r->len)
            return CKH_S3_INCOMPLETE_BODY;
        char hex[20];
        if (in - start >= sizeof hex)
            return CKH_S3_INCOMPLETE_BODY;
        memcpy(hex, r->body + start, in - start);
        hex[in - start] = '\0';
        char *end = NULL;
        unsigned long long n = strtoull(hex, &end, 16);
        if (*end != '\0')
            return CKH_S3_INCOMPLETE_BODY;
        while (in + 1 < r->len && !(r->body[in] == '\r' && r->body[in + 1] == '\n'))
            in++; /* chunk extensions (signatures) */
        if (in + 1 >= r->len)
            return CKH_S3_INCOMPLETE_BODY;
        in += 2;
        if (n == 0)
            break; /* trailers follow; ignored */
        if (n > r->len - in || r->len - in - n < 2 || r->body[in + n] != '\r' || r->body[in + n + 1] != '\n')
            return CKH_S3_INCOMPLETE_BODY;
        memmove(r->body + out, r->body + in, (size_t)n);
        out += (size_t)n;
        in += (size_t)n + 2;
    }
    r->len = out;
    return 0;
}

static bool is_aws_chunked(struct MHD_Connection *c)
{
    const char *ce = header(c, "Content-Encoding");
    const char *sha = header(c, "x-amz-content-sha256");
    return (ce != NULL && strstr(ce, "aws-chunked") != NULL) || (sha != NULL && strncmp(sha, "STREAMING-", 10) == 0);
}

/* The body as a blob (NULL when empty); 0, INCOMPLETE_BODY, CKH_ENOMEM. */
static int take_body(struct req *r, struct MHD_Connection *c, struct ckh_objstore_blob **out)
{
    *out = NULL;
    if (is_aws_chunked(c)) {
        int rc = aws_unchunk(r);
        if (rc != 0)
            return rc;
        const char *dec = header(c, "x-amz-decoded-content-length");
        if (dec != NULL && strtoull(dec, NULL, 10) != r->len)
            return CKH_S3_INCOMPLETE_BODY;
    }
    if (r->len == 0)
        return 0;
    int rc = ckh_objstore_blob_wrap(r->body, r->len, out); /* the bytes move, never copied */
    r->body = NULL;
    r->len = r->cap = 0;
    return rc;
}

/* ---- operations ---- */

typedef enum MHD_Result (*op_fn)(struct MHD_Connection *c, struct req *r);

static struct ckh_objstore *store_of(const struct req *r)
{
    return r->np->srv->cfg.store;
}

static struct ckh_objstore_req objreq(struct MHD_Connection *c, const struct req *r)
{
    return (struct ckh_objstore_req){.node = r->np->node,
                                     .bucket = r->bucket,
                                     .key = r->key,
                                     .if_match = header(c, "If-Match"),
                                     .if_none_match = header(c, "If-None-Match"),
                                     .content_type = header(c, "Content-Type")};
}

/* Answers a write's result: the ETag header and 200, or the error. */
static enum MHD_Result answer_put(struct MHD_Connection *c, struct req *r, int rc,
                                  const struct ckh_objstore_put_info *info)
{
    if (rc != 0)
        return send_error(c, r, rc, info->seq);
    r->has_write = true;
    r->write_seq = info->seq;
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
    if (resp != NULL)
        MHD_add_response_header(resp, "ETag", info->etag);
    return send_resp(c, resp, 200, info->seq);
}

static enum MHD_Result op_put_object(struct MHD_Connection *c, struct req *r)
{
    struct ckh_objstore_blob *body = NULL;
    struct ckh_objstore_put_info info = {0};
    struct ckh_objstore_req rq = objreq(c, r);
    int rc = take_body(r, c, &body);
    if (rc == 0)
        rc = ckh_objstore_put(store_of(r), &rq, body, &info);
    ckh_objstore_blob_unref(body);
    return answer_put(c, r, rc, &info);
}

/* x-amz-copy-source: "[/]BUCKET/KEY[?versionId=...]", percent-encoded. */
static int split_copy_source(const char *src, char **bucket, char **key)
{
    char *s = strdup(src[0] == '/' ? src + 1 : src);
    if (s == NULL)
        return CKH_ENOMEM;
    char *q = strchr(s, '?');
    if (q != NULL)
        *q = '\0';
    MHD_http_unescape(s);
    char *slash = strchr(s, '/');
    if (slash == NULL || slash == s || slash[1] == '\0') {
        free(s);
        return CKH_S3_INVALID_ARGUMENT;
    }
    *slash = '\0';
    if ((*key = strdup(slash + 1)) == NULL) {
        free(s);
        return CKH_ENOMEM;
    }
    *bucket = s;
    return 0;
}

static enum MHD_Result op_copy_object(struct MHD_Connection *c, struct req *r)
{
    char *sb = NULL, *sk = NULL;
    struct ckh_objstore_put_info info = {0};
    struct ckh_objstore_req rq = objreq(c, r);
    rq.if_match = rq.if_none_match = NULL; /* those of the copy name the source: not modelled */
    int rc = split_copy_source(header(c, "x-amz-copy-source"), &sb, &sk);
    if (rc == 0)
        rc = ckh_objstore_copy(store_of(r), &rq, sb, sk, &info);
    free(sb);
    free(sk);
    if (rc != 0)
        return send_error(c, r, rc, info.seq);
    r->has_write = true;
    r->write_seq = info.seq;
    struct ckh__s3_buf b = {0};
    char date[40];
    iso_date(info.seq, date, sizeof date);
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyObjectResult xmlns=\"" XMLNS "\">");
    ckh__s3_elem(&b, "LastModified", date, false);
    ckh__s3_elem(&b, "ETag", info.etag, false);
    ckh__s3_printf(&b, "</CopyObjectResult>");
    return send_xml(c, &b, 200, info.seq);
}

static enum MHD_Result op_get_object(struct MHD_Connection *c, struct req *r)
{
    bool head = strcmp(r->method, "HEAD") == 0;
    struct ckh_objstore_req rq = objreq(c, r);
    struct ckh_objstore_object *o = NULL;
    int rc = ckh_objstore_get(store_of(r), &rq, head, &o);
    uint64_t seq = ckh_objstore_last_seq(store_of(r));
    if (rc != 0)
        return send_error(c, r, rc, seq);
    uint64_t size = ckh_objstore_object_size(o), off = 0, len = size;
    const char *range = header(c, "Range");
    int rr = range != NULL ? ckh_objstore_range(range, size, &off, &len) : CKH_ENOTFOUND;
    if (rr == CKH_S3_INVALID_RANGE) {
        ckh_objstore_object_unref(o);
        return send_error(c, r, rr, seq);
    }
    bool partial = rr == 0;
    if (!partial) {
        off = 0;
        len = size;
    }
    struct reader *rd = malloc(sizeof *rd);
    struct MHD_Response *resp = NULL;
    char etag[48];
    snprintf(etag, sizeof etag, "%s", ckh_objstore_object_etag(o));
    const char *ctype = ckh_objstore_object_content_type(o);
    char ctype_copy[256];
    snprintf(ctype_copy, sizeof ctype_copy, "%s", ctype != NULL ? ctype : "binary/octet-stream");
    uint64_t oseq = ckh_objstore_object_seq(o);
    if (rd != NULL) {
        *rd = (struct reader){r->np->srv, o, off};
        resp = MHD_create_response_from_callback(len, READ_BLOCK, reader_cb, rd, reader_free);
        if (resp == NULL)
            free(rd);
    }
    if (resp == NULL) {
        ckh_objstore_object_unref(o);
        return MHD_NO;
    }
    char date[40], cr[96], clen[24];
    http_date(oseq, date, sizeof date);
    MHD_add_response_header(resp, "ETag", etag);
    MHD_add_response_header(resp, "Last-Modified", date);
    MHD_add_response_header(resp, "Content-Type", ctype_copy);
    MHD_add_response_header(resp, "Accept-Ranges", "bytes");
    if (partial) {
        snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1, size);
        MHD_add_response_header(resp, "Content-Range", cr);
    }
    if (head) { /* MHD sends no body for HEAD; the length is the object's */
        snprintf(clen, sizeof clen, "%" PRIu64, len);
        MHD_add_response_header(resp, "Content-Length", clen);
    }
    return send_resp(c, resp, partial ? 206 : 200, seq);
}

static enum MHD_Result op_delete_object(struct MHD_Connection *c, struct req *r)
{
    struct ckh_objstore_req rq = objreq(c, r);
    uint64_t seq = 0;
    int rc = ckh_objstore_delete(store_of(r), &rq, &seq);
    if (rc != 0)
        return send_error(c, r, rc, seq);
    r->has_write = true;
    r->write_seq = seq;
    return send_empty(c, 204, seq);
}

static enum MHD_Result op_delete_objects(struct MHD_Connection *c, struct req *r)
{
    struct ckh__s3_delete d = {0};
    struct ckh_objstore_blob *body = NULL;
    int rc = take_body(r, c, &body);
    if (rc == 0)
        rc = ckh__s3_parse_delete(body != NULL ? (const char *)ckh_objstore_blob_data(body) : "",
                                  body != NULL ? ckh_objstore_blob_len(body) : 0, &d);
    ckh_objstore_blob_unref(body);
    if (rc != 0)
        return send_error(c, r, rc, ckh_objstore_last_seq(store_of(r)));
    struct ckh__s3_buf b = {0};
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult xmlns=\"" XMLNS "\">");
    uint64_t seq = 0;
    for (size_t i = 0; i < d.nkeys; i++) {
        struct ckh_objstore_req rq = {.node = r->np->node, .bucket = r->bucket, .key = d.keys[i]};
        int e = ckh_objstore_delete(store_of(r), &rq, &seq);
        if (e == 0 && !d.quiet) {
            ckh__s3_printf(&b, "<Deleted>");
            ckh__s3_elem(&b, "Key", d.keys[i], false);
            ckh__s3_printf(&b, "</Deleted>");
        } else if (e != 0) {
            ckh__s3_printf(&b, "<Error>");
            ckh__s3_elem(&b, "Key", d.keys[i], false);
            ckh__s3_elem(&b, "Code", ckh_s3_err_code(e < 0 ? CKH_S3_INTERNAL_ERROR : e), false);
            ckh__s3_elem(&b, "Message", ckh_s3_err_message(e < 0 ? CKH_S3_INTERNAL_ERROR : e), false);
            ckh__s3_printf(&b, "</Error>");
        }
        if (e == 0) /* each delete is its own write; the response acknowledges them all */
            ckh_objstore_ack(store_of(r), seq);
    }
    ckh__s3_printf(&b, "</DeleteResult>");
    ckh__s3_delete_free(&d);
    return send_xml(c, &b, 200, seq);
}

/* A list argument as a size: 0 when absent, -1 when not a number. */
static long arg_num(const struct req *r, const char *name)
{
    const char *v = NULL;
    if (!has_arg(r, name, &v) || v == NULL)
        return 0;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    return (*end != '\0' || n < 0 || v[0] == '\0') ? -1 : n;
}

/* The kinds of listing list_body writes. */
enum list_kind { LIST_V1, LIST_V2, LIST_VERSIONS };

/* The last name of a truncated page (v1's NextMarker, NextKeyMarker). */
static const char *page_last(const struct ckh_objstore_listing *l)
{
    if (l->nprefixes > 0 &&
        (l->nentries == 0 || strcmp(l->prefixes[l->nprefixes - 1], l->entries[l->nentries - 1].key) > 0))
        return l->prefixes[l->nprefixes - 1];
    return l->entries[l->nentries - 1].key;
}

static void list_body(struct ckh__s3_buf *b, const struct req *r, const struct ckh_objstore_list_params *p,
                      const struct ckh_objstore_listing *l, enum list_kind kind, bool url, const char *token)
{
    const bool v2 = kind == LIST_V2, versions = kind == LIST_VERSIONS;
    const char *root = versions ? "ListVersionsResult" : "ListBucketResult";
    ckh__s3_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s xmlns=\"" XMLNS "\">", root);
    ckh__s3_elem(b, "Name", r->bucket, false);
    ckh__s3_elem(b, "Prefix", p->prefix != NULL ? p->prefix : "", url);
    if (p->delimiter != NULL && p->delimiter[0] != '\0') /* an empty one is no delimiter */
        ckh__s3_elem(b, "Delimiter", p->delimiter, url);
    ckh__s3_printf(b, "<MaxKeys>%zu</MaxKeys>", p->max_keys);
    if (url)
        ckh__s3_elem(b, "EncodingType", "url", false);
    ckh__s3_printf(b, "<IsTruncated>%s</IsTruncated>", l->truncated ? "true" : "false");
    if (v2) {
        ckh__s3_printf(b, "<KeyCount>%zu</KeyCount>", l->nentries + l->nprefixes);
        if (token != NULL)
            ckh__s3_elem(b, "ContinuationToken", token, false);
        if (l->next_token != NULL)
            ckh__s3_elem(b, "NextContinuationToken", l->next_token, false);
        if (p->start_after != NULL)
            ckh__s3_elem(b, "StartAfter", p->start_after, url);
    } else if (versions) {
        ckh__s3_elem(b, "KeyMarker", p->start_after != NULL ? p->start_after : "", url);
        ckh__s3_elem(b, "VersionIdMarker", "", false);
        if (l->truncated) {
            ckh__s3_elem(b, "NextKeyMarker", page_last(l), url);
            ckh__s3_elem(b, "NextVersionIdMarker", "null", false);
        }
    } else {
        ckh__s3_elem(b, "Marker", p->start_after != NULL ? p->start_after : "", url);
        if (l->truncated) /* v1's NextMarker: the last name of the page */
            ckh__s3_elem(b, "NextMarker", page_last(l), url);
    }
    for (size_t i = 0; i < l->nentries; i++) {
        char date[40];
        iso_date(l->entries[i].seq, date, sizeof date);
        ckh__s3_printf(b, versions ? "<Version>" : "<Contents>");
        ckh__s3_elem(b, "Key", l->entries[i].key, url);
        if (versions)
            ckh__s3_printf(b, "<VersionId>null</VersionId><IsLatest>true</IsLatest>");
        ckh__s3_elem(b, "LastModified", date, false);
        ckh__s3_elem(b, "ETag", l->entries[i].etag, false);
        ckh__s3_printf(b, "<Size>%" PRIu64 "</Size><StorageClass>STANDARD</StorageClass>", l->entries[i].size);
        ckh__s3_printf(b, versions ? "<Owner><ID>ckh</ID><DisplayName>ckh</DisplayName></Owner></Version>"
                                   : "</Contents>");
    }
    for (size_t i = 0; i < l->nprefixes; i++) {
        ckh__s3_printf(b, "<CommonPrefixes>");
        ckh__s3_elem(b, "Prefix", l->prefixes[i], url);
        ckh__s3_printf(b, "</CommonPrefixes>");
    }
    ckh__s3_printf(b, "</%s>", root);
}

static enum MHD_Result op_list_objects(struct MHD_Connection *c, struct req *r)
{
    const char *lt = NULL, *enc = NULL;
    const bool versions = has_arg(r, "versions", NULL);
    bool v2 = !versions && has_arg(r, "list-type", &lt) && lt != NULL && strcmp(lt, "2") == 0;
    struct ckh_objstore_list_params p = {0};
    has_arg(r, "prefix", &p.prefix);
    has_arg(r, "delimiter", &p.delimiter);
    has_arg(r, versions ? "key-marker" : v2 ? "start-after" : "marker", &p.start_after);
    if (p.start_after != NULL && p.start_after[0] == '\0')
        p.start_after = NULL;
    const char *token = NULL; /* an empty token is the first page, echoed back */
    if (v2 && has_arg(r, "continuation-token", &token) && token != NULL && token[0] != '\0')
        p.token = token;
    bool url = has_arg(r, "encoding-type", &enc) && enc != NULL && strcmp(enc, "url") == 0;
    long mk = arg_num(r, "max-keys");
    bool mk_given = has_arg(r, "max-keys", NULL);
    const char *vmark = NULL; /* versions: a version-id-marker needs a key-marker */
    if (versions && has_arg(r, "version-id-marker", &vmark) && vmark != NULL && vmark[0] != '\0' &&
        p.start_after == NULL)
        return send_error(c, r, CKH_S3_INVALID_ARGUMENT, ckh_objstore_last_seq(store_of(r)));
    if (mk < 0 || (enc != NULL && !url))
        return send_error(c, r, CKH_S3_INVALID_ARGUMENT, ckh_objstore_last_seq(store_of(r)));
    p.max_keys = mk_given ? (size_t)(mk > 1000 ? 1000 : mk) : 1000;
    p.omit_newer_ops = r->list_omit_ops;
    struct ckh_objstore_listing l = {0};
    int rc;
    if (mk_given && mk == 0) { /* max-keys=0: an empty page, still an op */
        rc = ckh_objstore_head_bucket(store_of(r), r->np->node, r->bucket);
    } else {
        rc = ckh_objstore_list(store_of(r), r->np->node, r->bucket, &p, &l);
    }
    uint64_t seq = ckh_objstore_last_seq(store_of(r));
    if (rc != 0)
        return send_error(c, r, rc, seq);
    struct ckh__s3_buf b = {0};
    list_body(&b, r, &p, &l, versions ? LIST_VERSIONS : v2 ? LIST_V2 : LIST_V1, url, token);
    ckh_objstore_listing_free(&l);
    return send_xml(c, &b, 200, seq);
}

static enum MHD_Result op_list_buckets(struct MHD_Connection *c, struct req *r)
{
    struct ckh_objstore *s = store_of(r);
    struct ckh__s3_buf b = {0};
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListAllMyBucketsResult xmlns=\"" XMLNS
                       "\"><Owner><ID>ckh</ID><DisplayName>ckh</DisplayName></Owner><Buckets>");
    char date[40];
    iso_date(0, date, sizeof date);
    for (size_t i = 0; i < ckh_objstore_bucket_count(s); i++) {
        ckh__s3_printf(&b, "<Bucket>");
        ckh__s3_elem(&b, "Name", ckh_objstore_bucket_name(s, i), false);
        ckh__s3_elem(&b, "CreationDate", date, false);
        ckh__s3_printf(&b, "</Bucket>");
    }
    ckh__s3_printf(&b, "</Buckets></ListAllMyBucketsResult>");
    return send_xml(c, &b, 200, 0);
}

static enum MHD_Result op_bucket_location(struct MHD_Connection *c, struct req *r)
{
    int rc = ckh_objstore_head_bucket(store_of(r), r->np->node, r->bucket);
    uint64_t seq = ckh_objstore_last_seq(store_of(r));
    if (rc != 0)
        return send_error(c, r, rc, seq);
    struct ckh__s3_buf b = {0};
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint xmlns=\"" XMLNS
                       "\"></LocationConstraint>");
    return send_xml(c, &b, 200, seq);
}

static enum MHD_Result op_bucket(struct MHD_Connection *c, struct req *r)
{
    struct ckh_objstore *s = store_of(r);
    int rc;
    unsigned ok = 200;
    if (strcmp(r->method, "PUT") == 0)
        rc = ckh_objstore_create_bucket(s, r->np->node, r->bucket);
    else if (strcmp(r->method, "DELETE") == 0) {
        rc = ckh_objstore_delete_bucket(s, r->np->node, r->bucket);
        ok = 204;
    } else
        rc = ckh_objstore_head_bucket(s, r->np->node, r->bucket);
    uint64_t seq = ckh_objstore_last_seq(s);
    if (rc != 0)
        return send_error(c, r, rc, seq);
    if (ok == 200 && strcmp(r->method, "PUT") == 0) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
        if (resp != NULL) {
            char loc[80];
            snprintf(loc, sizeof loc, "/%s", r->bucket);
            MHD_add_response_header(resp, "Location", loc);
        }
        return send_resp(c, resp, 200, seq);
    }
    return send_empty(c, ok, seq);
}

static enum MHD_Result op_mpu_create(struct MHD_Connection *c, struct req *r)
{
    struct ckh_objstore_req rq = objreq(c, r);
    char id[48];
    uint64_t seq = 0;
    int rc = ckh_objstore_mpu_create(store_of(r), &rq, id, &seq);
    if (rc != 0)
        return send_error(c, r, rc, seq);
    r->has_write = true;
    r->write_seq = seq;
    struct ckh__s3_buf b = {0};
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult xmlns=\"" XMLNS
                       "\">");
    ckh__s3_elem(&b, "Bucket", r->bucket, false);
    ckh__s3_elem(&b, "Key", r->key, false);
    ckh__s3_elem(&b, "UploadId", id, false);
    ckh__s3_printf(&b, "</InitiateMultipartUploadResult>");
    return send_xml(c, &b, 200, seq);
}

static enum MHD_Result op_mpu_part(struct MHD_Connection *c, struct req *r)
{
    const char *id = NULL, *pn = NULL;
    has_arg(r, "uploadId", &id);
    has_arg(r, "partNumber", &pn);
    char *end = NULL;
    long part = pn != NULL ? strtol(pn, &end, 10) : 0;
    struct ckh_objstore_put_info info = {0};
    if (pn == NULL || *end != '\0' || part < 1 || part > 10000) {
        int rc = ckh_objstore_mpu_part(store_of(r), &(struct ckh_objstore_req){.node = r->np->node,
                                                                              .bucket = r->bucket,
                                                                              .key = r->key},
                                       id, 0, NULL, NULL); /* traced as the failed op it is */
        return send_error(c, r, rc, ckh_objstore_last_seq(store_of(r)));
    }
    struct ckh_objstore_blob *body = NULL;
    struct ckh_objstore_req rq = objreq(c, r);
    int rc = take_body(r, c, &body);
    if (rc == 0)
        rc = ckh_objstore_mpu_part(store_of(r), &rq, id, (int)part, body, &info);
    else
        info.seq = ckh_objstore_last_seq(store_of(r));
    ckh_objstore_blob_unref(body);
    return answer_put(c, r, rc, &info);
}

static enum MHD_Result op_mpu_complete(struct MHD_Connection *c, struct req *r)
{
    const char *id = NULL;
    has_arg(r, "uploadId", &id);
    struct ckh__s3_complete cm = {0};
    struct ckh_objstore_blob *body = NULL;
    struct ckh_objstore_put_info info = {0};
    int rc = take_body(r, c, &body);
    if (rc == 0)
        rc = ckh__s3_parse_complete(body != NULL ? (const char *)ckh_objstore_blob_data(body) : "",
                                    body != NULL ? ckh_objstore_blob_len(body) : 0, &cm);
    ckh_objstore_blob_unref(body);
    struct ckh_objstore_req rq = objreq(c, r);
    rq.content_type = NULL;
    if (rc == 0)
        rc = ckh_objstore_mpu_complete(store_of(r), &rq, id, cm.parts, cm.nparts, &info);
    else
        info.seq = ckh_objstore_last_seq(store_of(r));
    ckh__s3_complete_free(&cm);
    if (rc != 0)
        return send_error(c, r, rc, info.seq);
    r->has_write = true;
    r->write_seq = info.seq;
    struct ckh__s3_buf b = {0};
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult xmlns=\"" XMLNS
                       "\">");
    char loc[64];
    snprintf(loc, sizeof loc, "http://127.0.0.1:%u/", r->np->port);
    ckh__s3_elem(&b, "Location", loc, false);
    ckh__s3_elem(&b, "Bucket", r->bucket, false);
    ckh__s3_elem(&b, "Key", r->key, false);
    ckh__s3_elem(&b, "ETag", info.etag, false);
    ckh__s3_printf(&b, "</CompleteMultipartUploadResult>");
    return send_xml(c, &b, 200, info.seq);
}

static enum MHD_Result op_mpu_abort(struct MHD_Connection *c, struct req *r)
{
    const char *id = NULL;
    has_arg(r, "uploadId", &id);
    struct ckh_objstore_req rq = objreq(c, r);
    uint64_t seq = 0;
    int rc = ckh_objstore_mpu_abort(store_of(r), &rq, id, &seq);
    if (rc != 0)
        return send_error(c, r, rc, seq);
    r->has_write = true;
    r->write_seq = seq;
    return send_empty(c, 204, seq);
}

static enum MHD_Result op_list_parts(struct MHD_Connection *c, struct req *r)
{
    const char *id = NULL;
    has_arg(r, "uploadId", &id);
    struct ckh_objstore_req rq = objreq(c, r);
    struct ckh_objstore_part_info *parts = NULL;
    size_t n = 0;
    int rc = ckh_objstore_mpu_list_parts(store_of(r), &rq, id, &parts, &n);
    uint64_t seq = ckh_objstore_last_seq(store_of(r));
    if (rc != 0)
        return send_error(c, r, rc, seq);
    struct ckh__s3_buf b = {0};
    ckh__s3_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListPartsResult xmlns=\"" XMLNS "\">");
    ckh__s3_elem(&b, "Bucket", r->bucket, false);
    ckh__s3_elem(&b, "Key", r->key, false);
    ckh__s3_elem(&b, "UploadId", id, false);
    ckh__s3_printf(&b, "<MaxParts>1000</MaxParts><IsTruncated>false</IsTruncated>");
    for (size_t i = 0; i < n; i++) {
        char date[40];
        iso_date(seq, date, sizeof date);
        ckh__s3_printf(&b, "<Part><PartNumber>%d</PartNumber>", parts[i].part);
        ckh__s3_elem(&b, "LastModified", date, false);
        ckh__s3_elem(&b, "ETag", parts[i].etag, false);
        ckh__s3_printf(&b, "<Size>%" PRIu64 "</Size></Part>", parts[i].size);
    }
    ckh__s3_printf(&b, "</ListPartsResult>");
    free(parts);
    return send_xml(c, &b, 200, seq);
}

/* A versionId other than "null" on an object: buckets are never
 * versioned, so no such version exists (E3). */
static enum MHD_Result op_bad_version(struct MHD_Connection *c, struct req *r)
{
    return send_error(c, r, CKH_S3_INVALID_ARGUMENT, ckh_objstore_last_seq(store_of(r)));
}

/* Whether r names a version other than an unversioned object's "null". */
static bool other_version(const struct req *r)
{
    const char *v = NULL;
    return has_arg(r, "versionId", &v) && (v == NULL || strcmp(v, "null") != 0);
}

/* Sub-resources that name an operation this endpoint does not serve. */
static const char *const unserved_args[] = {
    "acl", "tagging", "versioning", "policy", "lifecycle", "cors", "website", "logging", "notification",
    "replication", "encryption", "object-lock", "retention", "legal-hold", "torrent", "restore", "select",
    "inventory", "metrics", "analytics", "accelerate", "requestPayment",
    "ownershipControls", "publicAccessBlock", "intelligent-tiering", "attributes", "policyStatus",
};

static bool unserved(const struct req *r)
{
    for (size_t i = 0; i < sizeof unserved_args / sizeof unserved_args[0]; i++)
        if (has_arg(r, unserved_args[i], NULL))
            return true;
    return false;
}

/* E3: the operation of r, and its name (NULL: NotImplemented). */
static op_fn route(struct MHD_Connection *c, const struct req *r, const char **name, bool *writes)
{
    const char *m = r->method;
    bool get = strcmp(m, "GET") == 0, put = strcmp(m, "PUT") == 0, post = strcmp(m, "POST") == 0;
    bool del = strcmp(m, "DELETE") == 0, head = strcmp(m, "HEAD") == 0;
    *writes = put || post || del;
    if (unserved(r) || (r->key != NULL && has_arg(r, "versions", NULL)))
        return NULL;
    if (r->bucket == NULL)
        return get ? (*name = "ListBuckets", op_list_buckets) : NULL;
    if (r->key == NULL) {
        if (has_arg(r, "versionId", NULL))
            return NULL;
        if (get && has_arg(r, "versions", NULL))
            return *name = "ListObjectVersions", op_list_objects;
        if (has_arg(r, "versions", NULL))
            return NULL;
        if (get && has_arg(r, "location", NULL))
            return *name = "GetBucketLocation", op_bucket_location;
        if (get && !has_arg(r, "uploads", NULL))
            return *name = "ListObjects", op_list_objects;
        if (post && has_arg(r, "delete", NULL))
            return *name = "DeleteObjects", op_delete_objects;
        if ((put || del || head) && r->nargs == 0)
            return *name = put ? "CreateBucket" : del ? "DeleteBucket" : "HeadBucket", op_bucket;
        return NULL;
    }
    if (has_arg(r, "versions", NULL) || (has_arg(r, "versionId", NULL) && !(get || head || del)))
        return NULL;
    if (other_version(r))
        return *name = "BadVersionId", op_bad_version;
    bool upload = has_arg(r, "uploadId", NULL);
    if (put && upload)
        return header(c, "x-amz-copy-source") != NULL ? NULL : (*name = "UploadPart", op_mpu_part);
    if (put)
        return header(c, "x-amz-copy-source") != NULL ? (*name = "CopyObject", op_copy_object)
                                                      : (*name = "PutObject", op_put_object);
    if ((get || head) && !upload && !has_arg(r, "partNumber", NULL))
        return *name = head ? "HeadObject" : "GetObject", op_get_object;
    if (get && upload)
        return *name = "ListParts", op_list_parts;
    if (del)
        return upload ? (*name = "AbortMultipartUpload", op_mpu_abort) : (*name = "DeleteObject", op_delete_object);
    if (post && has_arg(r, "uploads", NULL))
        return *name = "CreateMultipartUpload", op_mpu_create;
    if (post && upload)
        return *name = "CompleteMultipartUpload", op_mpu_complete;
    return NULL;
}

/* The op kind fault rules name an S3 operation by (ckh/op.h). */
static int op_kind(const char *name)
{
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {
        {"PutObject", CKH_OP_S3_PUT},          {"GetObject", CKH_OP_S3_GET},
        {"HeadObject", CKH_OP_S3_HEAD},        {"HeadBucket", CKH_OP_S3_HEAD},
        {"DeleteObject", CKH_OP_S3_DELETE},    {"DeleteObjects", CKH_OP_S3_DELETE},
        {"DeleteBucket", CKH_OP_S3_DELETE},    {"ListObjects", CKH_OP_S3_LIST},
        {"ListObjectVersions", CKH_OP_S3_LIST},
        {"ListBuckets", CKH_OP_S3_LIST},       {"ListParts", CKH_OP_S3_LIST},
        {"ListObjectVersions", CKH_OP_S3_LIST},
        {"GetBucketLocation", CKH_OP_S3_HEAD}, {"CreateBucket", CKH_OP_S3_PUT},
        {"CopyObject", CKH_OP_S3_COPY},        {"CreateMultipartUpload", CKH_OP_S3_MPU_CREATE},
        {"UploadPart", CKH_OP_S3_PART},        {"CompleteMultipartUpload", CKH_OP_S3_COMPLETE},
        {"AbortMultipartUpload", CKH_OP_S3_ABORT},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].name, name) == 0)
            return kinds[i].kind;
    return CKH_OP_S3_GET;
}

/* Runs r's operation under the lock, with the hook's fault (E8). */
static enum MHD_Result serve(struct MHD_Connection *c, struct req *r)
{
    struct ckh_s3_server *srv = r->np->srv;
    const char *name = NULL;
    bool writes = false;
    op_fn fn = route(c, r, &name, &writes);
    struct ckh_s3_fault f = {0};
    pthread_mutex_lock(&srv->lock);
    if (fn != NULL && srv->cfg.hook != NULL) {
        /* a listing is matched by its prefix, as /BUCKET/PREFIX */
        const char *key = r->key, *prefix = NULL;
        if (key == NULL && strncmp(name, "ListObject", 10) == 0 && has_arg(r, "prefix", &prefix) && prefix != NULL &&
            prefix[0] != '\0')
            key = prefix;
        struct ckh_s3_request info = {r->np->node, name, op_kind(name), r->bucket, key, r->len, writes};
        srv->cfg.hook(srv->cfg.hook_ctx, &info, &f);
    }
    r->list_omit_ops = f.kind == CKH_S3_FAULT_STALE_LIST ? f.omit_ops : 0;
    enum MHD_Result ret;
    if (fn == NULL)
        ret = send_error(c, r, r->too_large ? CKH_S3_ENTITY_TOO_LARGE : CKH_S3_NOT_IMPLEMENTED, 0);
    else if (r->too_large)
        ret = send_error(c, r, CKH_S3_ENTITY_TOO_LARGE, 0);
    else if (f.kind == CKH_S3_FAULT_ERROR)
        ret = send_error(c, r, f.err, 0);
    else if (f.kind == CKH_S3_FAULT_RESET_BEFORE)
        ret = MHD_NO;
    else {
        ret = fn(c, r);
        if (f.kind == CKH_S3_FAULT_LOST_AFTER) {
            r->has_write = false; /* never acknowledged: in flight until the crash model */
            ret = MHD_NO;
        } else if (f.kind == CKH_S3_FAULT_RESET_AFTER) {
            if (r->has_write) /* applied and known applied: the server saw it through */
                ckh_objstore_ack(srv->cfg.store, r->write_seq);
            r->has_write = false;
            ret = MHD_NO;
        }
    }
    pthread_mutex_unlock(&srv->lock);
    if (f.kind == CKH_S3_FAULT_DELAY && f.delay_ms > 0)
        usleep((useconds_t)(f.delay_ms > 60000 ? 60000000u : f.delay_ms * 1000u));
    return ret;
}

/* ---- libmicrohttpd callbacks ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    struct node_port *np = cls;
    struct req *r = *con_cls;
    if (r == NULL) {
        if ((r = calloc(1, sizeof *r)) == NULL)
            return MHD_NO;
        r->np = np;
        snprintf(r->method, sizeof r->method, "%s", method);
        *con_cls = r;
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, r);
        if (parse_target(r, c, url) != 0)
            return MHD_NO;
        const char *cl = header(c, "Content-Length");
        uint64_t want = cl != NULL ? strtoull(cl, NULL, 10) : 0;
        if (want > np->srv->cfg.max_body_bytes) { /* E4: answered before the body comes */
            r->too_large = true;
            return send_error(c, r, CKH_S3_ENTITY_TOO_LARGE, 0);
        }
        if (want > 0 && (r->body = malloc((size_t)want)) != NULL)
            r->cap = (size_t)want;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->too_large || r->len + n > np->srv->cfg.max_body_bytes) {
            r->too_large = true;
            return MHD_YES; /* the rest is read and dropped */
        }
        if (r->len + n > r->cap) {
            size_t cap = r->cap ? r->cap : 64 * 1024;
            while (cap < r->len + n)
                cap *= 2;
            unsigned char *p = realloc(r->body, cap);
            if (p == NULL)
                return MHD_NO;
            r->body = p;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        return MHD_YES;
    }
    return serve(c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)c;
    struct node_port *np = cls;
    struct req *r = *con_cls;
    if (r == NULL)
        return;
    if (r->has_write && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) { /* E7 */
        pthread_mutex_lock(&np->srv->lock);
        ckh_objstore_ack(np->srv->cfg.store, r->write_seq);
        pthread_mutex_unlock(&np->srv->lock);
    }
    req_free(r);
    *con_cls = NULL;
}

/* ---- the server ---- */

static int port_start(struct node_port *np, char *err, size_t errlen)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    np->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_SUPPRESS_DATE_NO_CLOCK, 0, NULL, NULL, on_request, np,
                               MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED,
                               on_completed, np, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                               MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024), MHD_OPTION_END);
    if (np->mhd == NULL)
        return ckh_errf(err, errlen, -EADDRNOTAVAIL, "s3 endpoint: could not listen on 127.0.0.1 for node %d",
                        np->node);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(np->mhd, MHD_DAEMON_INFO_BIND_PORT);
    np->port = info != NULL ? info->port : 0;
    if (np->port == 0)
        return ckh_errf(err, errlen, -EADDRNOTAVAIL, "s3 endpoint: no port for node %d", np->node);
    return 0;
}

int ckh_s3_server_start(const struct ckh_s3_server_config *cfg, struct ckh_s3_server **out, char *err, size_t errlen)
{
    if (cfg == NULL || cfg->store == NULL || cfg->nnodes < 1 || out == NULL)
        return ckh_errf(err, errlen, CKH_EINVAL, "s3 endpoint: a store and at least one node are needed");
    struct ckh_s3_server *srv = calloc(1, sizeof *srv);
    if (srv == NULL)
        return ckh_errf(err, errlen, CKH_ENOMEM, "s3 endpoint: out of memory");
    srv->cfg = *cfg;
    if (srv->cfg.max_body_bytes == 0)
        srv->cfg.max_body_bytes = DEFAULT_MAX_BODY;
    pthread_mutexattr_t attr; /* recursive: a fault the hook fires may change the store at rest */
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&srv->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    srv->ports = calloc((size_t)cfg->nnodes, sizeof *srv->ports);
    if (srv->ports == NULL) {
        ckh_s3_server_stop(srv);
        return ckh_errf(err, errlen, CKH_ENOMEM, "s3 endpoint: out of memory");
    }
    for (int i = 0; i < cfg->nnodes; i++) {
        srv->ports[i] = (struct node_port){.srv = srv, .node = i};
        int rc = port_start(&srv->ports[i], err, errlen);
        if (rc != 0) {
            ckh_s3_server_stop(srv);
            return rc;
        }
    }
    *out = srv;
    return 0;
}

uint16_t ckh_s3_server_port(const struct ckh_s3_server *srv, int node)
{
    return (node >= 0 && node < srv->cfg.nnodes) ? srv->ports[node].port : 0;
}

void ckh_s3_server_url(const struct ckh_s3_server *srv, int node, char *buf, size_t n)
{
    snprintf(buf, n, "http://127.0.0.1:%u", ckh_s3_server_port(srv, node));
}

void ckh_s3_server_lock(struct ckh_s3_server *srv)
{
    pthread_mutex_lock(&srv->lock);
}

void ckh_s3_server_unlock(struct ckh_s3_server *srv)
{
    pthread_mutex_unlock(&srv->lock);
}

void ckh_s3_server_stop(struct ckh_s3_server *srv)
{
    if (srv == NULL)
        return;
    for (int i = 0; srv->ports != NULL && i < srv->cfg.nnodes; i++)
        if (srv->ports[i].mhd != NULL)
            MHD_stop_daemon(srv->ports[i].mhd);
    free(srv->ports);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}
