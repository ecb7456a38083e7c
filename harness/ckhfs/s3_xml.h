/* The S3 endpoint's XML: a growing text buffer that writes responses
 * (escaped, or URL-encoded where the client asked encoding-type=url), and
 * expat parsers for the two request bodies the endpoint reads:
 * CompleteMultipartUpload and DeleteObjects (harness/ckhfs/s3_endpoint.c).
 */
#ifndef CKH_CKHFS_S3_XML_H
#define CKH_CKHFS_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckh/objstore.h"

/* A response body being written; oom set once an append failed (the text
 * is then incomplete and the caller answers InternalError). */
struct ckh__s3_buf {
    char *p;     /* NUL-terminated text (malloc'd; the caller frees) */
    size_t len;  /* bytes without the NUL */
    size_t cap;  /* allocated */
    bool oom;    /* an append failed */
};

/* Appends formatted text. */
void ckh__s3_printf(struct ckh__s3_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends <tag>s</tag> with s XML-escaped, or URL-encoded (RFC 3986
 * unreserved bytes and '/' kept, others %XX) when url is true. */
void ckh__s3_elem(struct ckh__s3_buf *b, const char *tag, const char *s, bool url);

/* A CompleteMultipartUpload body: its parts (etags owned by the result). */
struct ckh__s3_complete {
    struct ckh_objstore_part_ref *parts; /* malloc'd; parts[i].etag malloc'd */
    size_t nparts;
};
/* Parses len bytes of xml. 0, CKH_S3_MALFORMED_XML (not well-formed, not
 * that root, a part without a number in 1..10000 or without an ETag), or
 * CKH_ENOMEM. *out is filled only on success (ckh__s3_complete_free). */
int ckh__s3_parse_complete(const char *xml, size_t len, struct ckh__s3_complete *out);
void ckh__s3_complete_free(struct ckh__s3_complete *c);

/* A DeleteObjects body: the keys (owned) and Quiet. */
struct ckh__s3_delete {
    char **keys;   /* malloc'd, each malloc'd */
    size_t nkeys;
    bool quiet;    /* <Quiet>true</Quiet> */
};
/* Parses len bytes of xml: 0, CKH_S3_MALFORMED_XML (not well-formed, not a
 * Delete, an Object without a Key, no Object, more than 1000), CKH_ENOMEM. */
int ckh__s3_parse_delete(const char *xml, size_t len, struct ckh__s3_delete *out);
void ckh__s3_delete_free(struct ckh__s3_delete *d);

#endif
