/* The S3 endpoint: a simulated object store (include/ckh/objstore.h)
 * served over HTTP on the loopback interface, so that an unmodified program
 * using boto3, the AWS CLI or curl meets the store's model, the fault
 * script and the trace, as a program on ckhfs meets simfs's.
 *
 * One struct ckh_s3_server serves one store to the nodes of a job: one
 * listening port per node on 127.0.0.1 (ephemeral, chosen by the kernel),
 * so every request is known to come from its node. Each port is served by
 * one thread (libmicrohttpd's internal polling thread) that answers its
 * node's requests one at a time; the store is used under one lock shared
 * by every port, so the store sees one request at a time, in arrival order.
 *
 * The REST API served, the addressing (path style, and virtual-host style
 * through "BUCKET.localhost"), authentication (accepted, never checked: the
 * documented key pair is CKH_S3_ACCESS_KEY / CKH_S3_SECRET_KEY), the bodies
 * accepted (Content-Length, HTTP chunked, aws-chunked with or without
 * signatures and trailers) and the errors are specified at the top of
 * s3_endpoint.c; docs/OBJECT_STORE.md explains them to a user.
 *
 * Crash model: a write's response that reached its client acknowledges it
 * (ckh_objstore_ack); a write whose response did not (the client died or
 * hung up) stays in flight for ckh_objstore_crash.
 */
#ifndef CKH_CKHFS_S3_ENDPOINT_H
#define CKH_CKHFS_S3_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/objstore.h"
#include "ckh/op.h"

/* The documented key pair (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): any
 * other is accepted too, since signatures are never checked. */
#define CKH_S3_ACCESS_KEY "ckhtestkey"
#define CKH_S3_SECRET_KEY "ckhtestsecret"
#define CKH_S3_REGION "us-east-1"

/* One request as the fault hook and the trace see it (strings borrowed for
 * the call). */
struct ckh_s3_request {
    int node;            /* the node whose port it came to */
    const char *op;      /* S3 operation name ("PutObject", "UploadPart", ...) */
    int kind;            /* its enum ckh_op_kind (CKH_OP_S3_PUT, ...), as fault rules name it */
    const char *bucket;  /* NULL: none (ListBuckets) */
    const char *key;     /* NULL: a bucket request */
    uint64_t bytes;      /* body bytes (decoded) */
    bool writes;         /* it may change the store */
};

/* What the hook does to a request. */
enum ckh_s3_fault_kind {
    CKH_S3_FAULT_NONE = 0,    /* served as usual */
    CKH_S3_FAULT_ERROR,       /* answered with error `err`, nothing applied */
    CKH_S3_FAULT_RESET_BEFORE, /* the connection is closed with no answer, nothing applied */
    CKH_S3_FAULT_RESET_AFTER, /* applied, then the connection is closed with no answer */
    CKH_S3_FAULT_DELAY,       /* answered delay_ms later (the node's port waits) */
    CKH_S3_FAULT_LOST_AFTER,  /* applied, then the connection is closed with no answer and
                                 the write stays in flight: its client died waiting (a kill
                                 after the request), so the crash model decides (O12) */
    CKH_S3_FAULT_STALE_LIST,  /* a listing leaves out the keys written in the store's last
                                 omit_ops operations (O9); other requests are served as usual */
};

struct ckh_s3_fault {
    enum ckh_s3_fault_kind kind; /* what happens */
    int err;                     /* ERROR: an enum ckh_s3_err */
    uint64_t delay_ms;           /* DELAY: wall-clock milliseconds */
    uint64_t omit_ops;           /* STALE_LIST: operations whose keys the listing leaves out */
};

/* Called under the store lock once per request, after its body arrived and
 * before it is applied; fills *out (zeroed: NONE). */
typedef void (*ckh_s3_hook_fn)(void *ctx, const struct ckh_s3_request *rq, struct ckh_s3_fault *out);

struct ckh_s3_server_config {
    struct ckh_objstore *store;  /* served (borrowed; outlives the server) */
    int nnodes;                  /* ports to open, one per node (>= 1) */
    uint64_t max_body_bytes;     /* a larger body: EntityTooLarge (0: 5 GiB) */
    ckh_s3_hook_fn hook;         /* NULL: no faults */
    void *hook_ctx;              /* passed to hook */
};

struct ckh_s3_server;

/* Whether this ckh was built with the endpoint (libmicrohttpd and expat). */
bool ckh_s3_available(void);

/* Starts the ports and their threads; *out is the caller's
 * (ckh_s3_server_stop). 0, or CKH_EUNSUPPORTED (built without the
 * endpoint), CKH_EINVAL, CKH_ENOMEM, -errno (a port could not be opened),
 * with a message in err. Nothing is left running on failure. */
int ckh_s3_server_start(const struct ckh_s3_server_config *cfg, struct ckh_s3_server **out, char *err,
                        size_t errlen);
/* The port of node's endpoint (0 for a node out of range). */
uint16_t ckh_s3_server_port(const struct ckh_s3_server *srv, int node);
/* Writes "http://127.0.0.1:PORT" for node into buf (n bytes). */
void ckh_s3_server_url(const struct ckh_s3_server *srv, int node, char *buf, size_t n);
/* Takes and releases the store lock: whoever uses the store while the
 * server runs (a crash, a fault at rest, the trace) holds it. Recursive:
 * the hook, which runs with it held, may take it again. */
void ckh_s3_server_lock(struct ckh_s3_server *srv);
void ckh_s3_server_unlock(struct ckh_s3_server *srv);
/* Stops every port (requests in progress are cut), joins the threads and
 * frees the server; the store stays the caller's. NULL is a no-op. */
void ckh_s3_server_stop(struct ckh_s3_server *srv);

#endif
