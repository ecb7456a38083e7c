/* The simulated object store (sim/objstore.c), public part.
 *
 * A ckh_objstore is one S3-like object store: buckets of objects named by
 * keys, multipart uploads, conditional writes, a consistency setting and a
 * crash model for the requests in flight when a job dies. It is the model
 * the S3 endpoint (harness/ckhfs/s3_endpoint.c) serves to real programs;
 * it knows nothing of HTTP. The model is specified at the top of
 * sim/objstore.c (rules O1-O12), and docs/OBJECT_STORE.md explains it to a
 * user of boto3.
 *
 * Part of the sim API (with ckh/sim.h and ckh/simfs.h): only sim/,
 * harness/ and tests include it (cmake/check_layers.cmake).
 *
 * Results: every action returns 0, a positive enum ckh_s3_err (the S3
 * error the request gets; nothing changed), or a negative ckh code
 * (CKH_ENOMEM, CKH_EINVAL for a NULL argument; nothing changed either).
 *
 * Threads: a store is not locked; a caller that serves it from several
 * threads holds one lock around every call, ckh_objstore_object_* and
 * ckh_objstore_blob_* included (the endpoint does).
 */
#ifndef CKH_OBJSTORE_H
#define CKH_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(name, HTTP status, S3 code, message): the S3 errors the model and the
 * endpoint answer with. One table gives the enum, the codes and messages. */
#define CKH_S3_ERR_MAP(X)                                                                          \
    X(NO_SUCH_BUCKET, 404, "NoSuchBucket", "The specified bucket does not exist")                  \
    X(NO_SUCH_KEY, 404, "NoSuchKey", "The specified key does not exist.")                          \
    X(NO_SUCH_UPLOAD, 404, "NoSuchUpload", "The specified multipart upload does not exist.")      \
    X(BUCKET_EXISTS, 409, "BucketAlreadyOwnedByYou", "Your previous request to create the named " \
      "bucket succeeded and you already own it.")                                                  \
    X(BUCKET_NOT_EMPTY, 409, "BucketNotEmpty", "The bucket you tried to delete is not empty")      \
    X(PRECONDITION_FAILED, 412, "PreconditionFailed", "At least one of the pre-conditions you "   \
      "specified did not hold")                                                                    \
    X(NOT_MODIFIED, 304, "NotModified", "Not Modified")                                            \
    X(INVALID_RANGE, 416, "InvalidRange", "The requested range is not satisfiable")               \
    X(ENTITY_TOO_LARGE, 400, "EntityTooLarge", "Your proposed upload exceeds the maximum "        \
      "allowed size")                                                                              \
    X(ENTITY_TOO_SMALL, 400, "EntityTooSmall", "Your proposed upload is smaller than the "        \
      "minimum allowed size")                                                                      \
    X(INVALID_PART, 400, "InvalidPart", "One or more of the specified parts could not be found "  \
      "or did not match its entity tag.")                                                          \
    X(INVALID_PART_ORDER, 400, "InvalidPartOrder", "The list of parts was not in ascending "      \
      "order.")                                                                                    \
    X(MALFORMED_XML, 400, "MalformedXML", "The XML you provided was not well-formed or did not "  \
      "validate against our published schema")                                                     \
    X(INVALID_ARGUMENT, 400, "InvalidArgument", "Invalid Argument")                                \
    X(INVALID_BUCKET_NAME, 400, "InvalidBucketName", "The specified bucket is not valid.")        \
    X(KEY_TOO_LONG, 400, "KeyTooLongError", "Your key is too long")                                \
    X(INCOMPLETE_BODY, 400, "IncompleteBody", "You did not provide the number of bytes specified " \
      "by the Content-Length HTTP header")                                                         \
    X(ACCESS_DENIED, 403, "AccessDenied", "Access Denied")                                          \
    X(METHOD_NOT_ALLOWED, 405, "MethodNotAllowed", "The specified method is not allowed against " \
      "this resource.")                                                                            \
    X(NOT_IMPLEMENTED, 501, "NotImplemented", "A header or query you provided implies "           \
      "functionality that is not implemented")                                                     \
    X(INTERNAL_ERROR, 500, "InternalError", "We encountered an internal error. Please try again.") \
    X(SLOW_DOWN, 503, "SlowDown", "Please reduce your request rate.")

enum ckh_s3_err {
    CKH_S3_OK = 0,
#define CKH__S3_ENUM(name, status, code, msg) CKH_S3_##name,
    CKH_S3_ERR_MAP(CKH__S3_ENUM)
#undef CKH__S3_ENUM
    CKH_S3__COUNT /* number of codes (not an error) */
};

/* The HTTP status of e (200 for CKH_S3_OK, 500 when out of range). */
int ckh_s3_err_status(int e);
/* S3's code ("NoSuchKey"); "InternalError" when out of range. Static. */
const char *ckh_s3_err_code(int e);
/* S3's message for e; static, never NULL. */
const char *ckh_s3_err_message(int e);

/* Consistency settings (O6-O8 in sim/objstore.c). */
enum ckh_objstore_consistency {
    CKH_OBJSTORE_STRONG = 0,    /* read-after-write and list-after-write (today's S3) */
    CKH_OBJSTORE_LIST_DELAY,    /* listings lag behind writes and deletes */
    CKH_OBJSTORE_OVERWRITE_DELAY, /* reads of an overwritten or deleted key lag */
    CKH_OBJSTORE_EVENTUAL,      /* both: the S3 of before December 2020 */
    CKH_OBJSTORE__COUNT         /* number of settings (not one) */
};

/* The scenario name of a setting ("strong", "list-delay",
 * "overwrite-delay", "eventual"); NULL when out of range. Static. */
const char *ckh_objstore_consistency_name(enum ckh_objstore_consistency c);
/* The setting named name: 0 and *out, or CKH_ENOTFOUND. */
int ckh_objstore_consistency_parse(const char *name, enum ckh_objstore_consistency *out);

struct ckh_objstore_config {
    const char *name;           /* store name in trace lines ("s3"); copied */
    uint64_t seed;              /* upload ids and crash choices derive from it */
    enum ckh_objstore_consistency consistency; /* CKH_OBJSTORE_STRONG by default */
    uint64_t delay_ops;         /* lagging modes: ops after a write before it shows
                                   (0 with delay_ns 0: 8) */
    uint64_t delay_ns;          /* lagging modes: virtual time after a write before
                                   it shows (0: no time condition) */
    uint64_t max_object_bytes;  /* PutObject/UploadPart/Complete larger: EntityTooLarge
                                   (0: 5 GiB, S3's single-PUT limit) */
    uint64_t min_part_bytes;    /* every part but the last of a Complete (0: 5 MiB) */
};

struct ckh_objstore;

/* A body: len bytes that the store and the objects sharing them hold by
 * reference count. Bytes are never copied by the store (O11). */
struct ckh_objstore_blob;

/* One version of an object as a GET sees it; held by reference. */
struct ckh_objstore_object;

/* Creates an empty store (no buckets); *out is the caller's
 * (ckh_objstore_destroy). 0, CKH_EINVAL, CKH_ENOMEM. */
int ckh_objstore_create(const struct ckh_objstore_config *cfg, struct ckh_objstore **out);
/* Frees the store and its references; objects and blobs the caller still
 * holds stay valid until unreferenced. NULL is a no-op. */
void ckh_objstore_destroy(struct ckh_objstore *s);

/* Sets the store's virtual clock (ns; never moves back: a smaller value is
 * ignored). Lagging modes with delay_ns compare against it. */
void ckh_objstore_set_time(struct ckh_objstore *s, uint64_t now_ns);

/* ---- bodies ---- */

/* Wraps data (len bytes from malloc, may be NULL when len is 0): the blob
 * owns it from now on, whatever the result (freed on failure). *out holds
 * one reference (ckh_objstore_blob_unref). 0 or CKH_ENOMEM. */
int ckh_objstore_blob_wrap(void *data, size_t len, struct ckh_objstore_blob **out);
/* Drops one reference; the last one frees the bytes. NULL is a no-op. */
void ckh_objstore_blob_unref(struct ckh_objstore_blob *b);
/* Bytes of b (borrowed while a reference is held) and their length. */
const unsigned char *ckh_objstore_blob_data(const struct ckh_objstore_blob *b);
size_t ckh_objstore_blob_len(const struct ckh_objstore_blob *b);

/* ---- one request ---- */

/* What every object request says besides its body. Strings are borrowed
 * for the call. */
struct ckh_objstore_req {
    int node;                  /* issuing node (-1: none), for the trace and crashes */
    const char *bucket;        /* bucket name */
    const char *key;           /* object key (NULL for bucket requests) */
    const char *if_match;      /* If-Match: an ETag with or without quotes, "*"; NULL: none */
    const char *if_none_match; /* If-None-Match: "*" (writes) or an ETag (reads); NULL: none */
    const char *content_type;  /* writes: stored and returned by GET (NULL: none) */
};

/* The outcome of a write. */
struct ckh_objstore_put_info {
    uint64_t seq;   /* the op's sequence number (for ckh_objstore_ack) */
    char etag[48];  /* quoted entity tag, "\"...\"" */
    uint64_t size;  /* object bytes */
};

/* ---- buckets ---- */

/* Whether name follows S3's bucket naming rules (O2): 3 to 63 of a-z,
 * 0-9, '.', '-', starting and ending with a letter or digit. */
bool ckh_objstore_bucket_name_ok(const char *name);
/* CreateBucket: 0, BUCKET_EXISTS, INVALID_BUCKET_NAME (S3's rules: 3-63
 * of [a-z0-9.-], starting and ending with a letter or digit). */
int ckh_objstore_create_bucket(struct ckh_objstore *s, int node, const char *bucket);
/* DeleteBucket: 0, NO_SUCH_BUCKET, BUCKET_NOT_EMPTY (objects or uploads). */
int ckh_objstore_delete_bucket(struct ckh_objstore *s, int node, const char *bucket);
/* HeadBucket: 0 or NO_SUCH_BUCKET (traced). */
int ckh_objstore_head_bucket(struct ckh_objstore *s, int node, const char *bucket);
/* Objects with a current version, every bucket together. */
size_t ckh_objstore_object_count(const struct ckh_objstore *s);
/* Number of buckets and the i-th in name order (borrowed until the store
 * changes; NULL past the end). */
size_t ckh_objstore_bucket_count(const struct ckh_objstore *s);
const char *ckh_objstore_bucket_name(const struct ckh_objstore *s, size_t i);

/* ---- objects ---- */

/* PutObject of body (NULL: empty; the store takes its own reference, the
 * caller keeps its own). Conditions (O5): if_none_match "*" fails with
 * PRECONDITION_FAILED when the key exists, if_match when it does not hold
 * (NO_SUCH_KEY when the key does not exist). Also NO_SUCH_BUCKET,
 * ENTITY_TOO_LARGE, KEY_TOO_LONG (over 1024 bytes), INVALID_ARGUMENT (an
 * empty key). *info (may be NULL) on success. */
int ckh_objstore_put(struct ckh_objstore *s, const struct ckh_objstore_req *rq,
                     struct ckh_objstore_blob *body, struct ckh_objstore_put_info *info);
/* GetObject/HeadObject: *out is a new reference to the version the read
 * sees (O7), ckh_objstore_object_unref. Conditions: if_match not holding
 * PRECONDITION_FAILED, if_none_match matching NOT_MODIFIED. Also
 * NO_SUCH_BUCKET, NO_SUCH_KEY. head: traced as HeadObject. */
int ckh_objstore_get(struct ckh_objstore *s, const struct ckh_objstore_req *rq, bool head,
                     struct ckh_objstore_object **out);
/* DeleteObject: 0 whether or not the key existed (S3's answer);
 * NO_SUCH_BUCKET. *seq (may be NULL) is the op's number. */
int ckh_objstore_delete(struct ckh_objstore *s, const struct ckh_objstore_req *rq, uint64_t *seq);
/* CopyObject of src_bucket/src_key (as a read sees it) to rq's key, which
 * then shares the source's bytes (O11). Errors of a get on the source and
 * of a put on the target. */
int ckh_objstore_copy(struct ckh_objstore *s, const struct ckh_objstore_req *rq,
                      const char *src_bucket, const char *src_key, struct ckh_objstore_put_info *info);

/* Reads of a version held by reference. */
uint64_t ckh_objstore_object_size(const struct ckh_objstore_object *o);
/* Quoted entity tag; borrowed while the reference is held. */
const char *ckh_objstore_object_etag(const struct ckh_objstore_object *o);
/* Content type given when written (NULL: none); borrowed likewise. */
const char *ckh_objstore_object_content_type(const struct ckh_objstore_object *o);
/* The sequence number of the op that wrote it (Last-Modified derives from it). */
uint64_t ckh_objstore_object_seq(const struct ckh_objstore_object *o);
/* Copies up to n bytes from offset off into buf; returns the count (0 at
 * or past the end). */
size_t ckh_objstore_object_read(const struct ckh_objstore_object *o, uint64_t off, void *buf, size_t n);
/* Drops one reference. NULL is a no-op. */
void ckh_objstore_object_unref(struct ckh_objstore_object *o);

/* A Range header against an object of size bytes (O4): "bytes=A-B",
 * "bytes=A-", "bytes=-N". 0 with *off and *len for a satisfiable range;
 * INVALID_RANGE for one past the end; CKH_ENOTFOUND for a header that is
 * not one single byte range (S3 then returns the whole object). */
int ckh_objstore_range(const char *header, uint64_t size, uint64_t *off, uint64_t *len);

/* ---- listings ---- */

struct ckh_objstore_list_params {
    const char *prefix;       /* NULL: "" */
    const char *delimiter;    /* NULL or "": no grouping */
    const char *start_after;  /* NULL: from the start */
    const char *token;        /* continuation token from a previous page (NULL: none) */
    size_t max_keys;          /* 0: 1000 (more is cut to 1000) */
    uint64_t omit_newer_ops;  /* a fault: keys written in the last N ops are left out (0: none) */
};

struct ckh_objstore_list_entry {
    char *key;        /* owned by the listing */
    uint64_t size;    /* bytes */
    char etag[48];    /* quoted */
    uint64_t seq;     /* op that wrote it */
};

struct ckh_objstore_listing {
    struct ckh_objstore_list_entry *entries; /* in key order */
    size_t nentries;
    char **prefixes;   /* common prefixes, in order (owned) */
    size_t nprefixes;
    bool truncated;    /* more follow */
    char *next_token;  /* when truncated: the token of the next page (owned) */
};

/* ListObjectsV2 (O9): *out filled (ckh_objstore_listing_free). Errors:
 * NO_SUCH_BUCKET, INVALID_ARGUMENT (a token this store did not make). */
int ckh_objstore_list(struct ckh_objstore *s, int node, const char *bucket,
                      const struct ckh_objstore_list_params *p, struct ckh_objstore_listing *out);
/* Frees what a listing owns and zeroes it. */
void ckh_objstore_listing_free(struct ckh_objstore_listing *l);

/* ---- multipart uploads (O10) ---- */

/* CreateMultipartUpload: the id (NUL-terminated, at most 40 bytes) in
 * upload_id. NO_SUCH_BUCKET, KEY_TOO_LONG, INVALID_ARGUMENT. */
int ckh_objstore_mpu_create(struct ckh_objstore *s, const struct ckh_objstore_req *rq, char upload_id[48],
                            uint64_t *seq);
/* UploadPart number part (1..10000) of body: NO_SUCH_UPLOAD (also for an
 * upload of another key), INVALID_ARGUMENT, ENTITY_TOO_LARGE. */
int ckh_objstore_mpu_part(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *upload_id,
                          int part, struct ckh_objstore_blob *body, struct ckh_objstore_put_info *info);
/* One part of a Complete request: its number and its ETag (quotes optional). */
struct ckh_objstore_part_ref {
    int part;         /* part number */
    const char *etag; /* borrowed */
};
/* CompleteMultipartUpload: the object becomes the parts' bytes, in order
 * (shared, not copied), visible as a put is. Errors: NO_SUCH_UPLOAD,
 * INVALID_PART (missing part or ETag), INVALID_PART_ORDER, ENTITY_TOO_SMALL,
 * MALFORMED_XML (no parts), conditions as for a put. */
int ckh_objstore_mpu_complete(struct ckh_objstore *s, const struct ckh_objstore_req *rq,
                              const char *upload_id, const struct ckh_objstore_part_ref *parts,
                              size_t nparts, struct ckh_objstore_put_info *info);
/* AbortMultipartUpload: NO_SUCH_UPLOAD. */
int ckh_objstore_mpu_abort(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *upload_id,
                           uint64_t *seq);

struct ckh_objstore_part_info {
    int part;        /* number */
    uint64_t size;   /* bytes */
    char etag[48];   /* quoted */
};
/* ListParts: a malloc'd array in part order in *out (free()), its length
 * in *n. NO_SUCH_UPLOAD, NO_SUCH_BUCKET. */
int ckh_objstore_mpu_list_parts(struct ckh_objstore *s, const struct ckh_objstore_req *rq,
                                const char *upload_id, struct ckh_objstore_part_info **out, size_t *n);
/* Uploads of bucket still open (neither completed nor aborted). */
size_t ckh_objstore_mpu_open_count(const struct ckh_objstore *s, const char *bucket);

/* ---- the crash model for requests in flight (O12) ---- */

/* Marks write seq acknowledged: its response reached the client, so no
 * crash can undo it any more. Unknown or read seqs are ignored. */
void ckh_objstore_ack(struct ckh_objstore *s, uint64_t seq);
/* Writes of node (-1: every node) applied but not acknowledged. */
size_t ckh_objstore_inflight_count(const struct ckh_objstore *s, int node);
/* The job of node (-1: every node) died: each of its unacknowledged writes
 * is kept or undone. choices NULL: drawn from the store's seeded stream;
 * else choices[i] (true: kept) for the i-th affected write, oldest first
 * (n must equal their number, else CKH_EINVAL and nothing changes).
 * Afterwards none of them is in flight. Returns the number undone, or a
 * negative code. Traced. */
int ckh_objstore_crash(struct ckh_objstore *s, int node, const bool *choices, size_t n);

/* ---- data at rest (faults) ---- */

/* Deletes bucket/key as a lifecycle rule would: at once, everywhere, no
 * delay. 0, NO_SUCH_BUCKET, NO_SUCH_KEY. Traced. */
int ckh_objstore_expire(struct ckh_objstore *s, const char *bucket, const char *key);
/* Flips the byte at offset off (past the end: the last byte) of the current
 * version: only that version's bytes change (the blob holding them is copied
 * once, O11); the ETag is kept, as bit rot keeps it. 0, NO_SUCH_BUCKET,
 * NO_SUCH_KEY, INVALID_RANGE (an empty object), CKH_ENOMEM. Traced. */
int ckh_objstore_corrupt(struct ckh_objstore *s, const char *bucket, const char *key, uint64_t off);

/* ---- the trace ---- */

/* Lines so far, one per operation (format at the top of sim/objstore.c),
 * and the i-th (borrowed while the store lives; NULL past the end). */
size_t ckh_objstore_trace_len(const struct ckh_objstore *s);
const char *ckh_objstore_trace_line(const struct ckh_objstore *s, size_t i);
/* One operation of the trace as fields (the same operation as the line). */
struct ckh_objstore_trace_op {
    uint64_t seq;        /* its number (Undo lines share their Crash's) */
    int node;            /* the node it came from (-1: ckh itself) */
    const char *op;      /* "PutObject", "DeleteObject", "Undo", "Expire", ... (static) */
    const char *bucket;  /* NULL: none */
    const char *key;     /* NULL: a bucket or store operation */
    int result;          /* 0, an enum ckh_s3_err, or a negative ckh code */
    int exists;          /* with a key: 1 when the key had a current version right after the
                            operation, 0 when not; -1 without a key */
};
/* The i-th operation of the trace as fields; NULL past the end. Borrowed,
 * strings included, while the store lives. The oracle of retention
 * (harness/judge/retention_check.c) replays them. */
const struct ckh_objstore_trace_op *ckh_objstore_trace_op(const struct ckh_objstore *s, size_t i);
/* The number of the last operation (0 before the first). */
uint64_t ckh_objstore_last_seq(const struct ckh_objstore *s);
/* Hash of every trace line so far (ckh_hash64 chain; same ops, same hash). */
uint64_t ckh_objstore_trace_hash(const struct ckh_objstore *s);
/* Bytes of object bodies the store references (each blob counted once,
 * however many versions, copies and parts share it). Not traced. */
uint64_t ckh_objstore_body_bytes(struct ckh_objstore *s);

/* ---- copies of a store's state (ckh explore over requests) ---- */

/* A copy of s as it stands (*out the caller's, ckh_objstore_destroy): its
 * configuration and seeded stream, its sequence number, its buckets with
 * every key's versions and lagging views, its open uploads and its writes
 * in flight (so ckh_objstore_crash on the copy undoes them as on s); the
 * trace starts empty. Versions are shared with s by reference (O11), never
 * copied: neither store may be corrupted at rest (ckh_objstore_corrupt)
 * while the other is used. 0, CKH_EINVAL, CKH_ENOMEM (nothing made). */
int ckh_objstore_clone(const struct ckh_objstore *s, struct ckh_objstore **out);
/* dst's buckets become src's durable content: its buckets, every key's
 * current version (bytes shared, versions new: a corruption in dst stays
 * in dst), its open uploads with their parts; no lagging view, nothing in
 * flight. dst keeps its configuration, seeded stream, sequence and trace,
 * which gets one line ("Restore"). 0, CKH_EINVAL, CKH_ENOMEM (dst
 * unchanged). */
int ckh_objstore_restore(struct ckh_objstore *dst, const struct ckh_objstore *src);
/* A digest of s's durable content: bucket names, each key with a current
 * version and that version's bytes and content type, each open upload's key
 * and parts (numbers and bytes); not ETags, sequence numbers, upload ids or
 * lagging views. Equal content, equal digest. */
uint64_t ckh_objstore_content_digest(const struct ckh_objstore *s);

#endif
