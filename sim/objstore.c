/* The simulated object store: buckets, objects, listings, multipart
 * uploads, consistency and the crash model of requests in flight
 * (include/ckh/objstore.h). Pure and deterministic: no clock but the one
 * the caller sets, no randomness but the seeded stream, no pointer order.
 *
 * SPECIFICATION (tests/test_objstore.c cites the rules)
 *
 * O1. Every call is one operation with the next sequence number (1, 2,
 *     ...), failed ones included, and one trace line:
 *       NAME #SEQ n=NODE OP BUCKET[/KEY] [FIELD=VALUE ...] -> STATUS[ CODE]
 *     STATUS the HTTP status (200, 204, 404...), CODE S3's error code;
 *     bytes of names below 0x21, 0x7f and '\\' are written \xHH. Same
 *     calls in the same order: same lines, same hash.
 *     ckh_objstore_trace_op gives the same operation as fields, with
 *     whether its key has a current version right after it (an Undo
 *     names the key of its first record).
 * O2. Buckets: S3's naming rules (3-63 of a-z 0-9 . -, a letter or digit
 *     at each end, no "..", ".-" or "-.", not an IPv4 address); a bucket is
 *     deleted only when empty (no object the store holds, no open upload).
 * O3. A key names at most one current version. A put replaces it whole; a
 *     delete removes it (deleting a missing key succeeds). Keys are 1 to
 *     1024 bytes, any bytes but NUL.
 * O4. Ranges: one byte range; "bytes=A-B" (B past the end is cut),
 *     "bytes=A-", "bytes=-N" (the last N, all when N > size). A range
 *     starting at or past the end, or "bytes=-0", is InvalidRange; any
 *     other header is ignored (the whole object).
 * O5. Conditions are strong whatever the consistency: a write with
 *     If-None-Match "*" fails PreconditionFailed when the key has a current
 *     version, with If-Match when the key's current ETag differs ("*":
 *     any) and NoSuchKey when it has none. A read with If-Match fails
 *     PreconditionFailed, with If-None-Match matching NotModified.
 * O6. Consistency STRONG: every read and listing sees every completed
 *     write. A lagging mode delays a write's visibility until both delay_ops
 *     more ops have happened and the clock passed its time + delay_ns.
 *     Until then the lagging view shows the version that was visible when
 *     the write happened (possibly none, possibly a deleted one).
 * O7. OVERWRITE_DELAY (and EVENTUAL): GET, HEAD and a copy's source see the
 *     lagging view of a key that had a visible version when it was written
 *     or deleted; a key that had none is read at once (new keys are
 *     read-after-write, as on the S3 of before 2020).
 * O8. LIST_DELAY (and EVENTUAL): listings see the lagging view of every
 *     key: new keys appear late, deleted ones linger.
 * O9. ListObjectsV2: keys in byte order, after start_after and after the
 *     continuation token, with the prefix; with a delimiter, a key whose
 *     rest after the prefix holds it is rolled into one common prefix (up
 *     to and including the delimiter), left out when that prefix is not
 *     after start_after (a v1 marker may name one). Keys and prefixes count together
 *     towards max_keys; a truncated page gives a token that resumes right
 *     after its last key or past every key of its last prefix. A fault may
 *     leave out the keys written in the last N ops (the listing op's own
 *     number included: N = 1 leaves out the key the op before wrote); its
 *     trace line then ends in omit-newer=N.
 * O10. Multipart: an upload is invisible (no object, not listed) until
 *     completed. Parts 1..10000, a re-sent part replaces the old one.
 *     Complete names parts in ascending order, each with its ETag; every
 *     part but the last holds min_part_bytes. The object's ETag is
 *     "H-N" (H a hash of the parts' tags, N their number). Complete and
 *     Abort end the upload; a part of an ended upload is NoSuchUpload.
 * O11. Bytes are held once: a body is a reference-counted blob; objects
 *     are lists of extents over blobs. Copy, multipart completion and the
 *     lagging views share blobs; only corruption at rest copies one blob,
 *     for the version it damages.
 * O12. Crash model: a write (put, delete, copy, multipart create, part,
 *     complete, abort) is applied when called and stays in flight until
 *     acknowledged. When its node's job dies, each write in flight is kept
 *     or undone (drawn from the seeded stream unless given); undoing
 *     restores what it replaced, where the state is still the one it made
 *     (a later kept write to the same key wins). Undone writes are traced
 *     ("Undo") and visible at once. Bucket operations are durable at once.
 *
 * ETags are not MD5: "\"" + 32 hex digits of two ckh_hash64 chains + "\"".
 */
#include "ckh/objstore.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/rng.h"

#define DEFAULT_MAX_OBJECT (5ull << 30)
#define DEFAULT_MIN_PART (5ull << 20)
#define DEFAULT_DELAY_OPS 8u
#define MAX_KEY_BYTES 1024u
#define MAX_PARTS 10000
#define MAX_LIST_KEYS 1000u

/* ---- error table ---- */

static const struct {
    int status;
    const char *code;
    const char *msg;
} s3_errs[] = {
    {200, "OK", "OK"},
#define CKH__S3_ROW(name, status, code, msg) {status, code, msg},
    CKH_S3_ERR_MAP(CKH__S3_ROW)
#undef CKH__S3_ROW
};

int ckh_s3_err_status(int e)
{
    return (e >= 0 && e < CKH_S3__COUNT) ? s3_errs[e].status : 500;
}

const char *ckh_s3_err_code(int e)
{
    return (e >= 0 && e < CKH_S3__COUNT) ? s3_errs[e].code : "InternalError";
}

const char *ckh_s3_err_message(int e)
{
    return (e >= 0 && e < CKH_S3__COUNT) ? s3_errs[e].msg : s3_errs[CKH_S3_INTERNAL_ERROR].msg;
}

static const char *const consistency_names[CKH_OBJSTORE__COUNT] = {
    [CKH_OBJSTORE_STRONG] = "strong",
    [CKH_OBJSTORE_LIST_DELAY] = "list-delay",
    [CKH_OBJSTORE_OVERWRITE_DELAY] = "overwrite-delay",
    [CKH_OBJSTORE_EVENTUAL] = "eventual",
};

const char *ckh_objstore_consistency_name(enum ckh_objstore_consistency c)
{
    return ((unsigned)c < CKH_OBJSTORE__COUNT) ? consistency_names[c] : NULL;
}

int ckh_objstore_consistency_parse(const char *name, enum ckh_objstore_consistency *out)
{
    for (int i = 0; name != NULL && i < CKH_OBJSTORE__COUNT; i++) {
        if (strcmp(name, consistency_names[i]) == 0) {
            *out = (enum ckh_objstore_consistency)i;
            return 0;
        }
    }
    return CKH_ENOTFOUND;
}

/* ---- data structures ---- */

struct ckh_objstore_blob {
    uint32_t refs;       /* holders */
    uint64_t mark;       /* last body_bytes pass that counted it */
    size_t len;          /* bytes */
    unsigned char *data; /* owned */
};

struct extent {
    struct ckh_objstore_blob *blob; /* one reference */
    size_t off;                     /* into the blob */
    size_t len;                     /* bytes */
};

struct ckh_objstore_object {
    uint32_t refs;        /* holders: entries, views, undo records, callers */
    uint64_t seq;         /* op that wrote it */
    uint64_t size;        /* bytes */
    char etag[48];        /* quoted */
    char *content_type;   /* owned, NULL: none */
    size_t next;          /* extents */
    struct extent *ext;   /* owned */
};

/* One key of a bucket: its current version and the lagging views. */
struct entry {
    char *key;                        /* owned */
    struct ckh_objstore_object *cur;  /* current version, NULL: deleted */
    struct ckh_objstore_object *old;  /* lagging view until visible (NULL: none) */
    bool old_valid;                   /* a lagging view is in force (old may be NULL) */
    bool read_lags;                   /* reads see old too (O7) */
    uint64_t vis_seq;                 /* cur shows from this op on */
    uint64_t vis_ns;                  /* and from this time on */
    uint64_t write_seq;               /* op of the last write or delete */
};

struct part {
    int num;                          /* part number */
    struct ckh_objstore_object *obj;  /* its bytes and ETag */
};

struct upload {
    char id[48];        /* upload id */
    char *key;          /* owned */
    char *content_type; /* owned */
    uint64_t seq;       /* op that created it */
    struct part *parts; /* sorted by num (owned) */
    size_t nparts;
};

struct bucket {
    char *name;              /* owned */
    struct entry *entries;   /* sorted by key (bytes) */
    size_t nentries;
    struct upload **uploads; /* open uploads in creation order */
    size_t nuploads;
};

/* What undoing one write restores. */
enum undo_kind { UNDO_KEY, UNDO_PART, UNDO_UPLOAD_CREATED, UNDO_UPLOAD_ENDED };

struct undo {
    enum undo_kind kind;
    char *bucket;                          /* owned */
    char *key;                             /* owned (KEY) */
    struct ckh_objstore_object *before;    /* KEY, PART: what was there (ref, may be NULL) */
    struct ckh_objstore_object *after;     /* KEY, PART: what the write left (ref, may be NULL) */
    char upload_id[48];                    /* PART, UPLOAD_* */
    int part;                              /* PART */
    struct upload *ended;                  /* UPLOAD_ENDED: the upload, owned until restored */
};

struct inflight {
    uint64_t seq;       /* the write */
    int node;           /* its node */
    const char *op;     /* its name (static) */
    struct undo *u;     /* what undoing it restores (owned) */
    size_t nu;
};

/* One trace line and the same operation as fields (O1). */
struct trace_entry {
    char *line;                    /* owned */
    struct ckh_objstore_trace_op op; /* bucket and key owned (NULL: none) */
};

struct ckh_objstore {
    char *name;                     /* trace prefix */
    struct ckh_objstore_config cfg; /* defaults resolved */
    struct ckh_rng crash_rng;       /* O12 choices */
    uint64_t seq;                   /* last op's number */
    uint64_t now_ns;                /* virtual clock */
    uint64_t mark;                  /* body_bytes passes */
    struct bucket *buckets;         /* sorted by name */
    size_t nbuckets;
    struct inflight *inflight;      /* oldest first */
    size_t ninflight;
    struct trace_entry *trace;      /* one per operation (owned) */
    size_t ntrace, captrace;
    uint64_t trace_hash;
};

/* ---- small helpers ---- */

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

/* Keys compare as unsigned bytes (S3's UTF-8 binary order). */
static int key_cmp(const char *a, const char *b)
{
    return strcmp(a, b); /* strcmp compares as unsigned char (C11 7.24.4) */
}

static void obj_ref(struct ckh_objstore_object *o)
{
    if (o != NULL)
        o->refs++;
}

void ckh_objstore_object_unref(struct ckh_objstore_object *o)
{
    if (o == NULL)
        return;
    CKH_ASSERT(o->refs > 0);
    if (--o->refs > 0)
        return;
    for (size_t i = 0; i < o->next; i++)
        ckh_objstore_blob_unref(o->ext[i].blob);
    free(o->ext);
    free(o->content_type);
    free(o);
}

int ckh_objstore_blob_wrap(void *data, size_t len, struct ckh_objstore_blob **out)
{
    struct ckh_objstore_blob *b = calloc(1, sizeof *b);
    if (b == NULL) {
        free(data);
        return CKH_ENOMEM;
    }
    b->refs = 1;
    b->len = len;
    b->data = data;
    *out = b;
    return 0;
}

void ckh_objstore_blob_unref(struct ckh_objstore_blob *b)
{
    if (b == NULL)
        return;
    CKH_ASSERT(b->refs > 0);
    if (--b->refs > 0)
        return;
    free(b->data);
    free(b);
}

const unsigned char *ckh_objstore_blob_data(const struct ckh_objstore_blob *b)
{
    return b->data;
}

size_t ckh_objstore_blob_len(const struct ckh_objstore_blob *b)
{
    return b->len;
}

uint64_t ckh_objstore_object_size(const struct ckh_objstore_object *o)
{
    return o->size;
}

const char *ckh_objstore_object_etag(const struct ckh_objstore_object *o)
{
    return o->etag;
}

const char *ckh_objstore_object_content_type(const struct ckh_objstore_object *o)
{
    return o->content_type;
}

uint64_t ckh_objstore_object_seq(const struct ckh_objstore_object *o)
{
    return o->seq;
}

size_t ckh_objstore_object_read(const struct ckh_objstore_object *o, uint64_t off, void *buf, size_t n)
{
    size_t done = 0;
    uint64_t pos = 0;
    for (size_t i = 0; i < o->next && done < n; i++) {
        const struct extent *e = &o->ext[i];
        if (off + done < pos + e->len) {
            size_t in = (size_t)(off + done - pos);
            size_t take = e->len - in;
            if (take > n - done)
                take = n - done;
            memcpy((char *)buf + done, e->blob->data + e->off + in, take);
            done += take;
        }
        pos += e->len;
    }
    return done;
}

/* A version of size bytes made of next extents (taken over); NULL when
 * out of memory (the extents' references are dropped then). */
static struct ckh_objstore_object *obj_new(uint64_t seq, struct extent *ext, size_t next, const char *ctype)
{
    struct ckh_objstore_object *o = calloc(1, sizeof *o);
    char *ct = dup_or_null(ctype);
    if (o == NULL || (ctype != NULL && ct == NULL)) {
        for (size_t i = 0; i < next; i++)
            ckh_objstore_blob_unref(ext[i].blob);
        free(ext);
        free(o);
        free(ct);
        return NULL;
    }
    o->refs = 1;
    o->seq = seq;
    o->ext = ext;
    o->next = next;
    o->content_type = ct;
    for (size_t i = 0; i < next; i++)
        o->size += ext[i].len;
    return o;
}

static void etag_of_hashes(char etag[48], uint64_t a, uint64_t b, int parts)
{
    if (parts > 0)
        snprintf(etag, 48, "\"%016" PRIx64 "%016" PRIx64 "-%d\"", a, b, parts);
    else
        snprintf(etag, 48, "\"%016" PRIx64 "%016" PRIx64 "\"", a, b);
}

static void etag_of_bytes(struct ckh_objstore_object *o)
{
    uint64_t a = CKH_HASH_INIT, b = ckh_mix64(CKH_HASH_INIT);
    for (size_t i = 0; i < o->next; i++) {
        a = ckh_hash64(a, o->ext[i].blob->data + o->ext[i].off, o->ext[i].len);
        b = ckh_hash64(b, o->ext[i].blob->data + o->ext[i].off, o->ext[i].len);
    }
    etag_of_hashes(o->etag, a, ckh_mix64(b ^ o->size), 0);
}

/* Whether an ETag given by a client (quotes optional) names tag. */
static bool etag_matches(const char *given, const char *tag)
{
    size_t gl = strlen(given), tl = strlen(tag);
    if (strcmp(given, "*") == 0)
        return true;
    if (gl >= 2 && given[0] == '"' && given[gl - 1] == '"') {
        given++;
        gl -= 2;
    }
    return gl + 2 == tl && memcmp(given, tag + 1, gl) == 0;
}

/* ---- the trace ---- */

static void put_escaped(char **p, char *end, const char *s)
{
    for (; *s != '\0' && *p + 5 < end; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c == 0x7f || c == '\\')
            *p += snprintf(*p, (size_t)(end - *p), "\\x%02x", c);
        else
            *(*p)++ = (char)c;
    }
    **p = '\0';
}

static struct bucket *bucket_find(struct ckh_objstore *s, const char *name);
static struct entry *entry_find(struct bucket *b, const char *key);

static void trace_entry_clear(struct trace_entry *t)
{
    free(t->line);
    free((char *)t->op.bucket);
    free((char *)t->op.key);
}

/* Appends one trace line for op `seq` (O1); extra is printf text or NULL.
 * A line that cannot be stored (out of memory) still counts in the hash. */
static void trace_op(struct ckh_objstore *s, uint64_t seq, int node, const char *op, const char *bucket,
                     const char *key, int result, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

static void trace_op(struct ckh_objstore *s, uint64_t seq, int node, const char *op, const char *bucket,
                     const char *key, int result, const char *fmt, ...)
{
    char line[3 * MAX_KEY_BYTES + 1024];
    char *p = line, *end = line + sizeof line;
    p += snprintf(p, (size_t)(end - p), "%s #%" PRIu64 " n=%d %s ", s->name, seq, node, op);
    put_escaped(&p, end, bucket != NULL ? bucket : "-");
    if (key != NULL) {
        *p++ = '/';
        put_escaped(&p, end, key);
    }
    if (fmt != NULL && p + 2 < end) {
        *p++ = ' ';
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(p, (size_t)(end - p), fmt, ap);
        va_end(ap);
        p += (w > 0 && w < end - p) ? w : 0;
    }
    if (result < 0)
        snprintf(p, (size_t)(end - p), " -> error %s", ckh_err_name(result));
    else if (result == 0)
        snprintf(p, (size_t)(end - p), " -> %d", ckh_s3_err_status(0));
    else
        snprintf(p, (size_t)(end - p), " -> %d %s", ckh_s3_err_status(result), ckh_s3_err_code(result));
    s->trace_hash = ckh_hash64(s->trace_hash, line, strlen(line) + 1);
    if (!grow((void **)&s->trace, &s->captrace, s->ntrace + 1, sizeof *s->trace))
        return;
    struct trace_entry t = {.line = strdup(line),
                            .op = {.seq = seq, .node = node, .op = op, .result = result, .exists = -1}};
    t.op.bucket = bucket != NULL ? strdup(bucket) : NULL;
    t.op.key = key != NULL ? strdup(key) : NULL;
    if (t.line == NULL || (bucket != NULL && t.op.bucket == NULL) || (key != NULL && t.op.key == NULL)) {
        trace_entry_clear(&t);
        return;
    }
    if (bucket != NULL && key != NULL) { /* the key's state after the operation */
        struct bucket *b = bucket_find(s, bucket);
        struct entry *e = b != NULL ? entry_find(b, key) : NULL;
        t.op.exists = e != NULL && e->cur != NULL;
    }
    s->trace[s->ntrace++] = t;
}

size_t ckh_objstore_trace_len(const struct ckh_objstore *s)
{
    return s->ntrace;
}

const char *ckh_objstore_trace_line(const struct ckh_objstore *s, size_t i)
{
    return i < s->ntrace ? s->trace[i].line : NULL;
}

const struct ckh_objstore_trace_op *ckh_objstore_trace_op(const struct ckh_objstore *s, size_t i)
{
    return i < s->ntrace ? &s->trace[i].op : NULL;
}

uint64_t ckh_objstore_last_seq(const struct ckh_objstore *s)
{
    return s->seq;
}

uint64_t ckh_objstore_trace_hash(const struct ckh_objstore *s)
{
    return s->trace_hash;
}

/* ---- store and buckets ---- */

int ckh_objstore_create(const struct ckh_objstore_config *cfg, struct ckh_objstore **out)
{
    if (cfg == NULL || out == NULL || (unsigned)cfg->consistency >= CKH_OBJSTORE__COUNT)
        return CKH_EINVAL;
    struct ckh_objstore *s = calloc(1, sizeof *s);
    if (s == NULL)
        return CKH_ENOMEM;
    s->name = strdup(cfg->name != NULL ? cfg->name : "s3");
    if (s->name == NULL) {
        free(s);
        return CKH_ENOMEM;
    }
    s->cfg = *cfg;
    s->cfg.name = s->name;
    if (s->cfg.max_object_bytes == 0)
        s->cfg.max_object_bytes = DEFAULT_MAX_OBJECT;
    if (s->cfg.min_part_bytes == 0)
        s->cfg.min_part_bytes = DEFAULT_MIN_PART;
    if (s->cfg.delay_ops == 0 && s->cfg.delay_ns == 0)
        s->cfg.delay_ops = DEFAULT_DELAY_OPS;
    ckh_rng_seed(&s->crash_rng, ckh_seed_derive(cfg->seed, "objstore/crash"));
    s->trace_hash = CKH_HASH_INIT;
    *out = s;
    return 0;
}

static void upload_free(struct upload *u)
{
    if (u == NULL)
        return;
    for (size_t i = 0; i < u->nparts; i++)
        ckh_objstore_object_unref(u->parts[i].obj);
    free(u->parts);
    free(u->key);
    free(u->content_type);
    free(u);
}

static void entry_clear(struct entry *e)
{
    free(e->key);
    ckh_objstore_object_unref(e->cur);
    ckh_objstore_object_unref(e->old);
}

static void bucket_clear(struct bucket *b)
{
    for (size_t i = 0; i < b->nentries; i++)
        entry_clear(&b->entries[i]);
    free(b->entries);
    for (size_t i = 0; i < b->nuploads; i++)
        upload_free(b->uploads[i]);
    free(b->uploads);
    free(b->name);
}

static void undo_clear(struct undo *u)
{
    free(u->bucket);
    free(u->key);
    ckh_objstore_object_unref(u->before);
    ckh_objstore_object_unref(u->after);
    upload_free(u->ended);
}

static void inflight_clear(struct inflight *f)
{
    for (size_t i = 0; i < f->nu; i++)
        undo_clear(&f->u[i]);
    free(f->u);
}

void ckh_objstore_destroy(struct ckh_objstore *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->nbuckets; i++)
        bucket_clear(&s->buckets[i]);
    free(s->buckets);
    for (size_t i = 0; i < s->ninflight; i++)
        inflight_clear(&s->inflight[i]);
    free(s->inflight);
    for (size_t i = 0; i < s->ntrace; i++)
        trace_entry_clear(&s->trace[i]);
    free(s->trace);
    free(s->name);
    free(s);
}

void ckh_objstore_set_time(struct ckh_objstore *s, uint64_t now_ns)
{
    if (now_ns > s->now_ns)
        s->now_ns = now_ns;
}

/* Index of the first of n records (stride bytes apart from base, sorted
 * by the string each holds at name_off) whose string is >= name, in byte
 * order; *found when it equals name. The one binary search over buckets
 * (by name) and a bucket's entries (by key). */
static size_t sorted_pos(const void *base, size_t n, size_t stride, size_t name_off, const char *name, bool *found)
{
    const char *bytes = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(*(char *const *)(const void *)(bytes + mid * stride + name_off), name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < n && key_cmp(*(char *const *)(const void *)(bytes + lo * stride + name_off), name) == 0;
    return lo;
}

/* Index of the first bucket >= name; *found when equal. */
static size_t bucket_pos(const struct ckh_objstore *s, const char *name, bool *found)
{
    return sorted_pos(s->buckets, s->nbuckets, sizeof *s->buckets, offsetof(struct bucket, name), name, found);
}

static struct bucket *bucket_find(struct ckh_objstore *s, const char *name)
{
    bool found = false;
    size_t i = name != NULL ? bucket_pos(s, name, &found) : 0;
    return found ? &s->buckets[i] : NULL;
}

bool ckh_objstore_bucket_name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len < 3 || len > 63)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '.')
            return false;
        if (!alnum && (i == 0 || i == len - 1))
            return false;
        char prev = n[i - 1];
        if (!alnum && (prev == '.' || prev == '-') && (prev == '.' || c == '.'))
            return false; /* "..", ".-", "-." */
    }
    unsigned a, b, c, d; /* not an IPv4 address: "192.168.5.4" */
    char end;
    return sscanf(n, "%3u.%3u.%3u.%3u%c", &a, &b, &c, &d, &end) != 4;
}

int ckh_objstore_create_bucket(struct ckh_objstore *s, int node, const char *bucket)
{
    if (s == NULL || bucket == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    bool found = false;
    size_t i = bucket_pos(s, bucket, &found);
    int rc = 0;
    if (!ckh_objstore_bucket_name_ok(bucket))
        rc = CKH_S3_INVALID_BUCKET_NAME;
    else if (found)
        rc = CKH_S3_BUCKET_EXISTS;
    else {
        size_t cap = s->nbuckets;
        char *name = strdup(bucket);
        if (name == NULL || !grow((void **)&s->buckets, &cap, s->nbuckets + 1, sizeof *s->buckets)) {
            free(name);
            rc = CKH_ENOMEM;
        } else {
            memmove(&s->buckets[i + 1], &s->buckets[i], (s->nbuckets - i) * sizeof *s->buckets);
            memset(&s->buckets[i], 0, sizeof s->buckets[i]);
            s->buckets[i].name = name;
            s->nbuckets++;
        }
    }
    trace_op(s, seq, node, "CreateBucket", bucket, NULL, rc, NULL);
    return rc;
}

static bool bucket_empty(const struct bucket *b)
{
    for (size_t i = 0; i < b->nentries; i++)
        if (b->entries[i].cur != NULL)
            return false;
    return b->nuploads == 0;
}

int ckh_objstore_delete_bucket(struct ckh_objstore *s, int node, const char *bucket)
{
    if (s == NULL || bucket == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    bool found = false;
    size_t i = bucket_pos(s, bucket, &found);
    int rc = 0;
    if (!found)
        rc = CKH_S3_NO_SUCH_BUCKET;
    else if (!bucket_empty(&s->buckets[i]))
        rc = CKH_S3_BUCKET_NOT_EMPTY;
    else {
        bucket_clear(&s->buckets[i]);
        memmove(&s->buckets[i], &s->buckets[i + 1], (s->nbuckets - i - 1) * sizeof *s->buckets);
        s->nbuckets--;
    }
    trace_op(s, seq, node, "DeleteBucket", bucket, NULL, rc, NULL);
    return rc;
}

int ckh_objstore_head_bucket(struct ckh_objstore *s, int node, const char *bucket)
{
    if (s == NULL || bucket == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    int rc = bucket_find(s, bucket) != NULL ? 0 : CKH_S3_NO_SUCH_BUCKET;
    trace_op(s, seq, node, "HeadBucket", bucket, NULL, rc, NULL);
    return rc;
}

size_t ckh_objstore_object_count(const struct ckh_objstore *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nbuckets; i++)
        for (size_t j = 0; j < s->buckets[i].nentries; j++)
            n += s->buckets[i].entries[j].cur != NULL;
    return n;
}

size_t ckh_objstore_bucket_count(const struct ckh_objstore *s)
{
    return s->nbuckets;
}

const char *ckh_objstore_bucket_name(const struct ckh_objstore *s, size_t i)
{
    return i < s->nbuckets ? s->buckets[i].name : NULL;
}

/* ---- entries and visibility ---- */

/* Index of the first entry of b >= key; *found when equal. */
static size_t entry_pos(const struct bucket *b, const char *key, bool *found)
{
    return sorted_pos(b->entries, b->nentries, sizeof *b->entries, offsetof(struct entry, key), key, found);
}

static struct entry *entry_find(struct bucket *b, const char *key)
{
    bool found = false;
    size_t i = entry_pos(b, key, &found);
    return found ? &b->entries[i] : NULL;
}

/* The entry for key, made (empty) when missing; NULL when out of memory. */
static struct entry *entry_get(struct bucket *b, const char *key)
{
    bool found = false;
    size_t i = entry_pos(b, key, &found);
    if (found)
        return &b->entries[i];
    size_t cap = b->nentries;
    char *k = strdup(key);
    if (k == NULL || !grow((void **)&b->entries, &cap, b->nentries + 1, sizeof *b->entries)) {
        free(k);
        return NULL;
    }
    memmove(&b->entries[i + 1], &b->entries[i], (b->nentries - i) * sizeof *b->entries);
    memset(&b->entries[i], 0, sizeof b->entries[i]);
    b->entries[i].key = k;
    b->nentries++;
    return &b->entries[i];
}

static bool lists_lag(const struct ckh_objstore *s)
{
    return s->cfg.consistency == CKH_OBJSTORE_LIST_DELAY || s->cfg.consistency == CKH_OBJSTORE_EVENTUAL;
}

static bool reads_lag(const struct ckh_objstore *s)
{
    return s->cfg.consistency == CKH_OBJSTORE_OVERWRITE_DELAY || s->cfg.consistency == CKH_OBJSTORE_EVENTUAL;
}

/* Whether e's lagging view is still in force at op seq (O6). */
static bool lagging(const struct ckh_objstore *s, const struct entry *e, uint64_t seq)
{
    return e->old_valid && (seq < e->vis_seq || s->now_ns < e->vis_ns);
}

/* The version a read at op seq sees (O7). */
static struct ckh_objstore_object *read_view(const struct ckh_objstore *s, const struct entry *e, uint64_t seq)
{
    if (e->read_lags && lagging(s, e, seq))
        return e->old;
    return e->cur;
}

/* The version a listing at op seq sees (O8). */
static struct ckh_objstore_object *list_view(const struct ckh_objstore *s, const struct entry *e, uint64_t seq)
{
    if (lists_lag(s) && lagging(s, e, seq))
        return e->old;
    return e->cur;
}

/* Installs obj (a new reference is taken; NULL: delete) as e's current
 * version by op seq, with the lagging view of O6; obj's seq is seq. */
static void entry_set(struct ckh_objstore *s, struct entry *e, struct ckh_objstore_object *obj, uint64_t seq)
{
    if (lists_lag(s) || reads_lag(s)) {
        /* what was visible just before this write stays visible a while */
        struct ckh_objstore_object *was = lagging(s, e, seq) ? e->old : e->cur;
        bool had = was != NULL;
        obj_ref(was);
        ckh_objstore_object_unref(e->old);
        e->old = was;
        e->old_valid = true;
        e->read_lags = reads_lag(s) && had;
        e->vis_seq = seq + s->cfg.delay_ops;
        e->vis_ns = s->cfg.delay_ns > 0 ? s->now_ns + s->cfg.delay_ns : 0;
    }
    obj_ref(obj);
    ckh_objstore_object_unref(e->cur);
    e->cur = obj;
    e->write_seq = seq;
}

/* Undoing a write (O12): e becomes what it was, visible at once. */
static void entry_restore(struct entry *e, struct ckh_objstore_object *before)
{
    obj_ref(before);
    ckh_objstore_object_unref(e->cur);
    e->cur = before;
    ckh_objstore_object_unref(e->old);
    e->old = NULL;
    e->old_valid = false;
    e->read_lags = false;
}

/* ---- in-flight writes (O12) ---- */

/* Starts the in-flight record of write seq; NULL when out of memory. */
static struct inflight *inflight_add(struct ckh_objstore *s, uint64_t seq, int node, const char *op)
{
    size_t cap = s->ninflight;
    if (!grow((void **)&s->inflight, &cap, s->ninflight + 1, sizeof *s->inflight))
        return NULL;
    struct inflight *f = &s->inflight[s->ninflight++];
    memset(f, 0, sizeof *f);
    f->seq = seq;
    f->node = node;
    f->op = op;
    return f;
}

/* Reserves one undo record of f (zeroed); NULL when out of memory. */
static struct undo *undo_add(struct inflight *f, enum undo_kind kind, const char *bucket)
{
    struct undo *u = realloc(f->u, (f->nu + 1) * sizeof *u);
    if (u == NULL)
        return NULL;
    f->u = u;
    u = &f->u[f->nu];
    memset(u, 0, sizeof *u);
    u->kind = kind;
    u->bucket = strdup(bucket);
    if (u->bucket == NULL)
        return NULL;
    f->nu++;
    return u;
}

/* Drops the newest in-flight record (its write failed after all). */
static void inflight_pop(struct ckh_objstore *s)
{
    CKH_ASSERT(s->ninflight > 0);
    inflight_clear(&s->inflight[--s->ninflight]);
}

void ckh_objstore_ack(struct ckh_objstore *s, uint64_t seq)
{
    size_t lo = 0, hi = s->ninflight;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->inflight[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == s->ninflight || s->inflight[lo].seq != seq)
        return;
    inflight_clear(&s->inflight[lo]);
    memmove(&s->inflight[lo], &s->inflight[lo + 1], (s->ninflight - lo - 1) * sizeof *s->inflight);
    s->ninflight--;
}

size_t ckh_objstore_inflight_count(const struct ckh_objstore *s, int node)
{
    size_t n = 0;
    for (size_t i = 0; i < s->ninflight; i++)
        n += (node < 0 || s->inflight[i].node == node);
    return n;
}

/* ---- objects ---- */

static int check_key(const char *key)
{
    if (key == NULL || key[0] == '\0')
        return CKH_S3_INVALID_ARGUMENT;
    if (strlen(key) > MAX_KEY_BYTES)
        return CKH_S3_KEY_TOO_LONG;
    return 0;
}

/* O5 for a write against e's current version (e may be NULL). */
static int write_conditions(const struct ckh_objstore_req *rq, const struct entry *e)
{
    const struct ckh_objstore_object *cur = e != NULL ? e->cur : NULL;
    if (rq->if_none_match != NULL && strcmp(rq->if_none_match, "*") == 0 && cur != NULL)
        return CKH_S3_PRECONDITION_FAILED;
    if (rq->if_match != NULL) {
        if (cur == NULL)
            return CKH_S3_NO_SUCH_KEY;
        if (!etag_matches(rq->if_match, cur->etag))
            return CKH_S3_PRECONDITION_FAILED;
    }
    return 0;
}

/* Installs obj as rq->key's version by write seq (conditions checked),
 * recording the undo of op `op`; obj's reference stays the caller's. */
static int install(struct ckh_objstore *s, const struct ckh_objstore_req *rq, struct bucket *b,
                   struct ckh_objstore_object *obj, uint64_t seq, const char *op)
{
    struct entry *e = entry_find(b, rq->key);
    int rc = write_conditions(rq, e);
    if (rc != 0)
        return rc;
    if (e == NULL && (e = entry_get(b, rq->key)) == NULL)
        return CKH_ENOMEM;
    struct inflight *f = inflight_add(s, seq, rq->node, op);
    struct undo *u = f != NULL ? undo_add(f, UNDO_KEY, b->name) : NULL;
    if (u == NULL || (u->key = strdup(rq->key)) == NULL) {
        if (f != NULL)
            inflight_pop(s);
        return CKH_ENOMEM;
    }
    u->before = e->cur;
    obj_ref(u->before);
    u->after = obj;
    obj_ref(obj);
    entry_set(s, e, obj, seq);
    return 0;
}

int ckh_objstore_put(struct ckh_objstore *s, const struct ckh_objstore_req *rq, struct ckh_objstore_blob *body,
                     struct ckh_objstore_put_info *info)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    size_t len = body != NULL ? body->len : 0;
    struct bucket *b = bucket_find(s, rq->bucket);
    struct ckh_objstore_object *obj = NULL;
    int rc = check_key(rq->key);
    if (rc == 0 && b == NULL)
        rc = CKH_S3_NO_SUCH_BUCKET;
    if (rc == 0 && len > s->cfg.max_object_bytes)
        rc = CKH_S3_ENTITY_TOO_LARGE;
    if (rc == 0) {
        struct extent *ext = NULL;
        if (len > 0 && (ext = malloc(sizeof *ext)) == NULL)
            rc = CKH_ENOMEM;
        if (ext != NULL) {
            body->refs++;
            *ext = (struct extent){body, 0, len};
        }
        if (rc == 0 && (obj = obj_new(seq, ext, len > 0 ? 1 : 0, rq->content_type)) == NULL)
            rc = CKH_ENOMEM;
    }
    if (rc == 0) {
        etag_of_bytes(obj);
        rc = install(s, rq, b, obj, seq, "PutObject");
    }
    if (rc == 0 && info != NULL) {
        info->seq = seq;
        info->size = obj->size;
        memcpy(info->etag, obj->etag, sizeof info->etag);
    }
    trace_op(s, seq, rq->node, "PutObject", rq->bucket, rq->key, rc, "bytes=%zu%s%s", len,
             rq->if_none_match != NULL ? " if-none-match" : "", rq->if_match != NULL ? " if-match" : "");
    ckh_objstore_object_unref(obj);
    return rc;
}

/* O5 for a read of o. */
static int read_conditions(const struct ckh_objstore_req *rq, const struct ckh_objstore_object *o)
{
    if (rq->if_match != NULL && !etag_matches(rq->if_match, o->etag))
        return CKH_S3_PRECONDITION_FAILED;
    if (rq->if_none_match != NULL && etag_matches(rq->if_none_match, o->etag))
        return CKH_S3_NOT_MODIFIED;
    return 0;
}

/* The version a read of bucket/key at op seq sees, or an S3 error. */
static int lookup(struct ckh_objstore *s, const char *bucket, const char *key, uint64_t seq,
                  struct ckh_objstore_object **out)
{
    struct bucket *b = bucket_find(s, bucket);
    if (b == NULL)
        return CKH_S3_NO_SUCH_BUCKET;
    if (key == NULL)
        return CKH_S3_NO_SUCH_KEY;
    struct entry *e = entry_find(b, key);
    *out = e != NULL ? read_view(s, e, seq) : NULL;
    return *out != NULL ? 0 : CKH_S3_NO_SUCH_KEY;
}

int ckh_objstore_get(struct ckh_objstore *s, const struct ckh_objstore_req *rq, bool head,
                     struct ckh_objstore_object **out)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL || out == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct ckh_objstore_object *o = NULL;
    int rc = lookup(s, rq->bucket, rq->key, seq, &o);
    if (rc == 0)
        rc = read_conditions(rq, o);
    if (rc == 0) {
        obj_ref(o);
        *out = o;
        trace_op(s, seq, rq->node, head ? "HeadObject" : "GetObject", rq->bucket, rq->key, 0,
                 "bytes=%" PRIu64 " etag=%s", o->size, o->etag);
    } else {
        trace_op(s, seq, rq->node, head ? "HeadObject" : "GetObject", rq->bucket, rq->key, rc, NULL);
    }
    return rc;
}

int ckh_objstore_delete(struct ckh_objstore *s, const struct ckh_objstore_req *rq, uint64_t *seq_out)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct bucket *b = bucket_find(s, rq->bucket);
    int rc = b == NULL ? CKH_S3_NO_SUCH_BUCKET : check_key(rq->key);
    struct entry *e = rc == 0 ? entry_find(b, rq->key) : NULL;
    bool existed = e != NULL && e->cur != NULL;
    if (existed) {
        struct inflight *f = inflight_add(s, seq, rq->node, "DeleteObject");
        struct undo *u = f != NULL ? undo_add(f, UNDO_KEY, b->name) : NULL;
        if (u == NULL || (u->key = strdup(rq->key)) == NULL) {
            if (f != NULL)
                inflight_pop(s);
            rc = CKH_ENOMEM;
        } else {
            u->before = e->cur;
            obj_ref(u->before);
            entry_set(s, e, NULL, seq);
        }
    }
    if (seq_out != NULL)
        *seq_out = seq;
    trace_op(s, seq, rq->node, "DeleteObject", rq->bucket, rq->key, rc, existed ? "existed" : "absent");
    return rc;
}

int ckh_objstore_copy(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *src_bucket,
                      const char *src_key, struct ckh_objstore_put_info *info)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL || src_bucket == NULL || src_key == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct ckh_objstore_object *src = NULL, *obj = NULL;
    struct bucket *b = bucket_find(s, rq->bucket);
    int rc = check_key(rq->key);
    if (rc == 0)
        rc = lookup(s, src_bucket, src_key, seq, &src);
    if (rc == 0 && b == NULL)
        rc = CKH_S3_NO_SUCH_BUCKET;
    if (rc == 0) {
        struct extent *ext = src->next > 0 ? malloc(src->next * sizeof *ext) : NULL;
        if (src->next > 0 && ext == NULL)
            rc = CKH_ENOMEM;
        for (size_t i = 0; rc == 0 && i < src->next; i++) {
            ext[i] = src->ext[i];
            ext[i].blob->refs++;
        }
        if (rc == 0 && (obj = obj_new(seq, ext, src->next, src->content_type)) == NULL)
            rc = CKH_ENOMEM;
    }
    if (rc == 0) {
        memcpy(obj->etag, src->etag, sizeof obj->etag);
        rc = install(s, rq, b, obj, seq, "CopyObject");
    }
    if (rc == 0 && info != NULL) {
        info->seq = seq;
        info->size = obj->size;
        memcpy(info->etag, obj->etag, sizeof info->etag);
    }
    char from[2 * MAX_KEY_BYTES + 512];
    char *p = from;
    put_escaped(&p, from + sizeof from - 2, src_bucket);
    *p++ = '/';
    put_escaped(&p, from + sizeof from, src_key);
    trace_op(s, seq, rq->node, "CopyObject", rq->bucket, rq->key, rc, "from=%s", from);
    ckh_objstore_object_unref(obj);
    return rc;
}

int ckh_objstore_range(const char *header, uint64_t size, uint64_t *off, uint64_t *len)
{
    const char *p = header;
    if (p == NULL || strncmp(p, "bytes=", 6) != 0)
        return CKH_ENOTFOUND;
    p += 6;
    char *end = NULL;
    if (*p == '-') { /* suffix: the last N bytes */
        if (p[1] < '0' || p[1] > '9')
            return CKH_ENOTFOUND;
        uint64_t n = strtoull(p + 1, &end, 10);
        if (*end != '\0')
            return CKH_ENOTFOUND;
        if (n == 0 || size == 0)
            return CKH_S3_INVALID_RANGE;
        *len = n < size ? n : size;
        *off = size - *len;
        return 0;
    }
    if (*p < '0' || *p > '9')
        return CKH_ENOTFOUND;
    uint64_t a = strtoull(p, &end, 10), b = UINT64_MAX;
    if (*end != '-')
        return CKH_ENOTFOUND;
    p = end + 1;
    if (*p != '\0') {
        if (*p < '0' || *p > '9')
            return CKH_ENOTFOUND;
        b = strtoull(p, &end, 10);
        if (*end != '\0' || b < a)
            return CKH_ENOTFOUND;
    }
    if (a >= size)
        return CKH_S3_INVALID_RANGE;
    if (b >= size)
        b = size - 1;
    *off = a;
    *len = b - a + 1;
    return 0;
}

/* ---- listings (O9) ---- */

void ckh_objstore_listing_free(struct ckh_objstore_listing *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->nentries; i++)
        free(l->entries[i].key);
    free(l->entries);
    for (size_t i = 0; i < l->nprefixes; i++)
        free(l->prefixes[i]);
    free(l->prefixes);
    free(l->next_token);
    memset(l, 0, sizeof *l);
}

/* Tokens: "k" (resume after this key) or "p" (resume past this prefix)
 * then the name, written in hex so any key survives a URL. */
static char *token_make(char tag, const char *name)
{
    size_t n = strlen(name);
    char *t = malloc(2 * n + 3);
    if (t == NULL)
        return NULL;
    t[0] = tag;
    for (size_t i = 0; i < n; i++)
        snprintf(t + 1 + 2 * i, 3, "%02x", (unsigned char)name[i]);
    t[1 + 2 * n] = '\0';
    return t;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes a token into *name (malloc) and *tag; INVALID_ARGUMENT. */
static int token_parse(const char *t, char *tag, char **name)
{
    size_t n = strlen(t);
    if (n < 1 || (t[0] != 'k' && t[0] != 'p') || (n - 1) % 2 != 0)
        return CKH_S3_INVALID_ARGUMENT;
    char *out = malloc((n - 1) / 2 + 1);
    if (out == NULL)
        return CKH_ENOMEM;
    for (size_t i = 0; i < (n - 1) / 2; i++) {
        int hi = hexval(t[1 + 2 * i]), lo = hexval(t[2 + 2 * i]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            return CKH_S3_INVALID_ARGUMENT;
        }
        out[i] = (char)(hi * 16 + lo);
    }
    out[(n - 1) / 2] = '\0';
    *tag = t[0];
    *name = out;
    return 0;
}

static int listing_add_entry(struct ckh_objstore_listing *l, size_t *cap, const struct entry *e,
                             const struct ckh_objstore_object *o)
{
    if (!grow((void **)&l->entries, cap, l->nentries + 1, sizeof *l->entries))
        return CKH_ENOMEM;
    struct ckh_objstore_list_entry *x = &l->entries[l->nentries];
    if ((x->key = strdup(e->key)) == NULL)
        return CKH_ENOMEM;
    x->size = o->size;
    x->seq = o->seq;
    memcpy(x->etag, o->etag, sizeof x->etag);
    l->nentries++;
    return 0;
}

static int listing_add_prefix(struct ckh_objstore_listing *l, size_t *cap, const char *key, size_t len)
{
    if (!grow((void **)&l->prefixes, cap, l->nprefixes + 1, sizeof *l->prefixes))
        return CKH_ENOMEM;
    char *p = strndup(key, len);
    if (p == NULL)
        return CKH_ENOMEM;
    l->prefixes[l->nprefixes++] = p;
    return 0;
}

/* Fills l from b at op seq; the page ends after max_keys names. */
static int list_fill(const struct ckh_objstore *s, const struct bucket *b, const struct ckh_objstore_list_params *p,
                     uint64_t seq, const char *after, const char *past_prefix, struct ckh_objstore_listing *l)
{
    const char *prefix = p->prefix != NULL ? p->prefix : "";
    const char *delim = (p->delimiter != NULL && p->delimiter[0] != '\0') ? p->delimiter : NULL;
    size_t plen = strlen(prefix), max = p->max_keys == 0 ? MAX_LIST_KEYS : p->max_keys;
    if (max > MAX_LIST_KEYS)
        max = MAX_LIST_KEYS;
    size_t ecap = 0, pcap = 0, taken = 0;
    char last_tag = 0;
    const char *last_name = NULL;
    size_t last_len = 0;
    for (size_t i = 0; i < b->nentries; i++) {
        const struct entry *e = &b->entries[i];
        if (strncmp(e->key, prefix, plen) != 0 || (after != NULL && key_cmp(e->key, after) <= 0))
            continue;
        if (past_prefix != NULL && strncmp(e->key, past_prefix, strlen(past_prefix)) == 0)
            continue;
        const struct ckh_objstore_object *o = list_view(s, e, seq);
        if (o == NULL || (p->omit_newer_ops > 0 && e->write_seq + p->omit_newer_ops >= seq))
            continue;
        const char *d = delim != NULL ? strstr(e->key + plen, delim) : NULL;
        size_t cplen = d != NULL ? (size_t)(d - e->key) + strlen(delim) : 0;
        if (d != NULL && last_tag == 'p' && last_len == cplen && strncmp(last_name, e->key, cplen) == 0)
            continue; /* same common prefix as the last name */
        if (d != NULL && after != NULL) { /* a common prefix not after start_after (v1's NextMarker) */
            size_t al = strlen(after);
            int c = memcmp(e->key, after, cplen < al ? cplen : al);
            if (c < 0 || (c == 0 && cplen <= al))
                continue;
        }
        if (taken == max) {
            l->truncated = true;
            break;
        }
        int rc = d != NULL ? listing_add_prefix(l, &pcap, e->key, cplen) : listing_add_entry(l, &ecap, e, o);
        if (rc != 0)
            return rc;
        taken++;
        last_tag = d != NULL ? 'p' : 'k';
        last_name = d != NULL ? l->prefixes[l->nprefixes - 1] : e->key;
        last_len = d != NULL ? cplen : strlen(e->key);
    }
    if (l->truncated && (l->next_token = token_make(last_tag, last_name)) == NULL)
        return CKH_ENOMEM;
    return 0;
}

int ckh_objstore_list(struct ckh_objstore *s, int node, const char *bucket, const struct ckh_objstore_list_params *p,
                      struct ckh_objstore_listing *out)
{
    if (s == NULL || bucket == NULL || p == NULL || out == NULL)
        return CKH_EINVAL;
    memset(out, 0, sizeof *out);
    uint64_t seq = ++s->seq;
    const struct bucket *b = bucket_find(s, bucket);
    char tag = 0, *name = NULL;
    int rc = b == NULL ? CKH_S3_NO_SUCH_BUCKET : 0;
    if (rc == 0 && p->token != NULL)
        rc = token_parse(p->token, &tag, &name);
    if (rc == 0) {
        const char *after = p->start_after;
        if (name != NULL && (after == NULL || key_cmp(name, after) > 0))
            after = name;
        rc = list_fill(s, b, p, seq, after, tag == 'p' ? name : NULL, out);
    }
    free(name);
    if (rc != 0)
        ckh_objstore_listing_free(out);
    char omit[40] = "";
    if (p->omit_newer_ops > 0)
        snprintf(omit, sizeof omit, " omit-newer=%" PRIu64, p->omit_newer_ops);
    trace_op(s, seq, node, "ListObjectsV2", bucket, NULL, rc, "prefix=%s keys=%zu prefixes=%zu%s%s",
             p->prefix != NULL && p->prefix[0] != '\0' ? "set" : "none", out->nentries, out->nprefixes,
             out->truncated ? " truncated" : "", omit);
    return rc;
}

/* ---- multipart uploads (O10) ---- */

static struct upload *upload_find(struct bucket *b, const char *id, size_t *idx)
{
    for (size_t i = 0; id != NULL && i < b->nuploads; i++) {
        if (strcmp(b->uploads[i]->id, id) == 0) {
            if (idx != NULL)
                *idx = i;
            return b->uploads[i];
        }
    }
    return NULL;
}

static int upload_insert(struct bucket *b, struct upload *u)
{
    struct upload **arr = realloc(b->uploads, (b->nuploads + 1) * sizeof *arr);
    if (arr == NULL)
        return CKH_ENOMEM;
    b->uploads = arr;
    arr[b->nuploads++] = u;
    return 0;
}

static struct upload *upload_remove(struct bucket *b, size_t idx)
{
    struct upload *u = b->uploads[idx];
    memmove(&b->uploads[idx], &b->uploads[idx + 1], (b->nuploads - idx - 1) * sizeof *b->uploads);
    b->nuploads--;
    return u;
}

int ckh_objstore_mpu_create(struct ckh_objstore *s, const struct ckh_objstore_req *rq, char upload_id[48],
                            uint64_t *seq_out)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL || upload_id == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct bucket *b = bucket_find(s, rq->bucket);
    struct upload *u = NULL;
    int rc = check_key(rq->key);
    if (rc == 0 && b == NULL)
        rc = CKH_S3_NO_SUCH_BUCKET;
    if (rc == 0 && ((u = calloc(1, sizeof *u)) == NULL || (u->key = strdup(rq->key)) == NULL ||
                    (rq->content_type != NULL && (u->content_type = strdup(rq->content_type)) == NULL)))
        rc = CKH_ENOMEM;
    if (rc == 0) {
        snprintf(u->id, sizeof u->id, "u%016" PRIx64 "%06" PRIu64, ckh_mix64(s->cfg.seed ^ ckh_mix64(seq)), seq);
        u->seq = seq;
        struct inflight *f = inflight_add(s, seq, rq->node, "CreateMultipartUpload");
        struct undo *un = f != NULL ? undo_add(f, UNDO_UPLOAD_CREATED, b->name) : NULL;
        if (un == NULL || upload_insert(b, u) != 0) {
            if (f != NULL)
                inflight_pop(s);
            rc = CKH_ENOMEM;
        } else {
            memcpy(un->upload_id, u->id, sizeof un->upload_id);
            memcpy(upload_id, u->id, sizeof u->id);
            u = NULL;
        }
    }
    upload_free(u);
    if (seq_out != NULL)
        *seq_out = seq;
    trace_op(s, seq, rq->node, "CreateMultipartUpload", rq->bucket, rq->key, rc, "upload=%s",
             rc == 0 ? upload_id : "-");
    return rc;
}

/* The open upload id of rq's bucket and key, or an S3 error. */
static int upload_of(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *id, struct bucket **bo,
                     struct upload **uo, size_t *idx)
{
    struct bucket *b = bucket_find(s, rq->bucket);
    if (b == NULL)
        return CKH_S3_NO_SUCH_BUCKET;
    struct upload *u = upload_find(b, id, idx);
    if (u == NULL || rq->key == NULL || strcmp(u->key, rq->key) != 0)
        return CKH_S3_NO_SUCH_UPLOAD;
    *bo = b;
    *uo = u;
    return 0;
}

static size_t part_pos(const struct upload *u, int num, bool *found)
{
    size_t i = 0;
    while (i < u->nparts && u->parts[i].num < num)
        i++;
    *found = i < u->nparts && u->parts[i].num == num;
    return i;
}

/* Sets part num of u to obj (a reference is taken; NULL removes it). */
static int part_set(struct upload *u, int num, struct ckh_objstore_object *obj)
{
    bool found = false;
    size_t i = part_pos(u, num, &found);
    if (found) {
        obj_ref(obj);
        ckh_objstore_object_unref(u->parts[i].obj);
        if (obj != NULL) {
            u->parts[i].obj = obj;
        } else {
            memmove(&u->parts[i], &u->parts[i + 1], (u->nparts - i - 1) * sizeof *u->parts);
            u->nparts--;
        }
        return 0;
    }
    if (obj == NULL)
        return 0;
    struct part *arr = realloc(u->parts, (u->nparts + 1) * sizeof *arr);
    if (arr == NULL)
        return CKH_ENOMEM;
    u->parts = arr;
    memmove(&arr[i + 1], &arr[i], (u->nparts - i) * sizeof *arr);
    obj_ref(obj);
    arr[i] = (struct part){num, obj};
    u->nparts++;
    return 0;
}

static struct ckh_objstore_object *part_get(const struct upload *u, int num)
{
    bool found = false;
    size_t i = part_pos(u, num, &found);
    return found ? u->parts[i].obj : NULL;
}

int ckh_objstore_mpu_part(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *upload_id, int part,
                          struct ckh_objstore_blob *body, struct ckh_objstore_put_info *info)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    size_t len = body != NULL ? body->len : 0;
    struct bucket *b = NULL;
    struct upload *u = NULL;
    struct ckh_objstore_object *obj = NULL;
    int rc = upload_of(s, rq, upload_id, &b, &u, NULL);
    if (rc == 0 && (part < 1 || part > MAX_PARTS))
        rc = CKH_S3_INVALID_ARGUMENT;
    if (rc == 0 && len > s->cfg.max_object_bytes)
        rc = CKH_S3_ENTITY_TOO_LARGE;
    if (rc == 0) {
        struct extent *ext = len > 0 ? malloc(sizeof *ext) : NULL;
        if (len > 0 && ext == NULL)
            rc = CKH_ENOMEM;
        if (ext != NULL) {
            body->refs++;
            *ext = (struct extent){body, 0, len};
        }
        if (rc == 0 && (obj = obj_new(seq, ext, len > 0 ? 1 : 0, NULL)) == NULL)
            rc = CKH_ENOMEM;
    }
    if (rc == 0) {
        etag_of_bytes(obj);
        struct inflight *f = inflight_add(s, seq, rq->node, "UploadPart");
        struct undo *un = f != NULL ? undo_add(f, UNDO_PART, b->name) : NULL;
        if (un == NULL) {
            if (f != NULL)
                inflight_pop(s);
            rc = CKH_ENOMEM;
        } else {
            memcpy(un->upload_id, u->id, sizeof un->upload_id);
            un->part = part;
            un->before = part_get(u, part);
            obj_ref(un->before);
            un->after = obj;
            obj_ref(obj);
            if ((rc = part_set(u, part, obj)) != 0)
                inflight_pop(s);
        }
    }
    if (rc == 0 && info != NULL) {
        info->seq = seq;
        info->size = obj->size;
        memcpy(info->etag, obj->etag, sizeof info->etag);
    }
    trace_op(s, seq, rq->node, "UploadPart", rq->bucket, rq->key, rc, "part=%d bytes=%zu", part, len);
    ckh_objstore_object_unref(obj);
    return rc;
}

/* Checks a Complete's part list against u (O10) and builds the object. */
static int complete_build(const struct ckh_objstore *s, const struct upload *u, const struct ckh_objstore_part_ref *parts,
                          size_t n, uint64_t seq, struct ckh_objstore_object **out)
{
    if (n == 0)
        return CKH_S3_MALFORMED_XML;
    size_t next = 0;
    uint64_t total = 0, ha = CKH_HASH_INIT, hb = ckh_mix64(CKH_HASH_INIT);
    for (size_t i = 1; i < n; i++)
        if (parts[i].part <= parts[i - 1].part)
            return CKH_S3_INVALID_PART_ORDER;
    for (size_t i = 0; i < n; i++) {
        const struct ckh_objstore_object *p = part_get(u, parts[i].part);
        if (p == NULL || parts[i].etag == NULL || !etag_matches(parts[i].etag, p->etag) ||
            strcmp(parts[i].etag, "*") == 0)
            return CKH_S3_INVALID_PART;
        if (i + 1 < n && p->size < s->cfg.min_part_bytes)
            return CKH_S3_ENTITY_TOO_SMALL;
        next += p->next;
        total += p->size;
        ha = ckh_hash64(ha, p->etag, strlen(p->etag));
        hb = ckh_hash64(hb, p->etag, strlen(p->etag));
    }
    if (total > (5ull << 40))
        return CKH_S3_ENTITY_TOO_LARGE; /* S3's 5 TiB object limit */
    struct extent *ext = next > 0 ? malloc(next * sizeof *ext) : NULL;
    if (next > 0 && ext == NULL)
        return CKH_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ckh_objstore_object *p = part_get(u, parts[i].part);
        for (size_t j = 0; j < p->next; j++) {
            ext[k] = p->ext[j];
            ext[k++].blob->refs++;
        }
    }
    struct ckh_objstore_object *o = obj_new(seq, ext, next, u->content_type);
    if (o == NULL)
        return CKH_ENOMEM;
    etag_of_hashes(o->etag, ha, hb, (int)n);
    *out = o;
    return 0;
}

int ckh_objstore_mpu_complete(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *upload_id,
                              const struct ckh_objstore_part_ref *parts, size_t nparts,
                              struct ckh_objstore_put_info *info)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL || (parts == NULL && nparts > 0))
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct bucket *b = NULL;
    struct upload *u = NULL;
    struct ckh_objstore_object *obj = NULL;
    size_t idx = 0;
    int rc = upload_of(s, rq, upload_id, &b, &u, &idx);
    if (rc == 0)
        rc = complete_build(s, u, parts, nparts, seq, &obj);
    if (rc == 0)
        rc = install(s, rq, b, obj, seq, "CompleteMultipartUpload");
    if (rc == 0) {
        struct inflight *f = &s->inflight[s->ninflight - 1];
        struct undo *un = undo_add(f, UNDO_UPLOAD_ENDED, b->name);
        if (un == NULL) { /* the object stays; the upload is then not restorable */
            rc = 0;
            upload_free(upload_remove(b, idx));
        } else {
            memcpy(un->upload_id, u->id, sizeof un->upload_id);
            un->ended = upload_remove(b, idx);
        }
    }
    if (rc == 0 && info != NULL) {
        info->seq = seq;
        info->size = obj->size;
        memcpy(info->etag, obj->etag, sizeof info->etag);
    }
    trace_op(s, seq, rq->node, "CompleteMultipartUpload", rq->bucket, rq->key, rc, "parts=%zu bytes=%" PRIu64,
             nparts, obj != NULL ? obj->size : 0);
    ckh_objstore_object_unref(obj);
    return rc;
}

int ckh_objstore_mpu_abort(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *upload_id,
                           uint64_t *seq_out)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct bucket *b = NULL;
    struct upload *u = NULL;
    size_t idx = 0;
    int rc = upload_of(s, rq, upload_id, &b, &u, &idx);
    if (rc == 0) {
        struct inflight *f = inflight_add(s, seq, rq->node, "AbortMultipartUpload");
        struct undo *un = f != NULL ? undo_add(f, UNDO_UPLOAD_ENDED, b->name) : NULL;
        if (un == NULL) {
            if (f != NULL)
                inflight_pop(s);
            rc = CKH_ENOMEM;
        } else {
            memcpy(un->upload_id, u->id, sizeof un->upload_id);
            un->ended = upload_remove(b, idx);
        }
    }
    if (seq_out != NULL)
        *seq_out = seq;
    trace_op(s, seq, rq->node, "AbortMultipartUpload", rq->bucket, rq->key, rc, NULL);
    return rc;
}

int ckh_objstore_mpu_list_parts(struct ckh_objstore *s, const struct ckh_objstore_req *rq, const char *upload_id,
                                struct ckh_objstore_part_info **out, size_t *n)
{
    if (s == NULL || rq == NULL || rq->bucket == NULL || out == NULL || n == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct bucket *b = NULL;
    struct upload *u = NULL;
    *out = NULL;
    *n = 0;
    int rc = upload_of(s, rq, upload_id, &b, &u, NULL);
    if (rc == 0 && u->nparts > 0 && (*out = calloc(u->nparts, sizeof **out)) == NULL)
        rc = CKH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < u->nparts; i++) {
        (*out)[i].part = u->parts[i].num;
        (*out)[i].size = u->parts[i].obj->size;
        memcpy((*out)[i].etag, u->parts[i].obj->etag, sizeof (*out)[i].etag);
    }
    if (rc == 0)
        *n = u->nparts;
    trace_op(s, seq, rq->node, "ListParts", rq->bucket, rq->key, rc, "parts=%zu", *n);
    return rc;
}

size_t ckh_objstore_mpu_open_count(const struct ckh_objstore *s, const char *bucket)
{
    bool found = false;
    size_t i = bucket != NULL ? bucket_pos(s, bucket, &found) : 0;
    return found ? s->buckets[i].nuploads : 0;
}

/* ---- crashes (O12) ---- */

/* Undoes one record; bucket gone or state changed since: nothing to do. */
static void undo_apply(struct ckh_objstore *s, struct undo *u)
{
    struct bucket *b = bucket_find(s, u->bucket);
    if (b == NULL)
        return;
    switch (u->kind) {
    case UNDO_KEY: {
        struct entry *e = entry_find(b, u->key);
        if (e != NULL && e->cur == u->after)
            entry_restore(e, u->before);
        break;
    }
    case UNDO_PART: {
        struct upload *up = upload_find(b, u->upload_id, NULL);
        if (up != NULL && part_get(up, u->part) == u->after)
            (void)part_set(up, u->part, u->before); /* a restore never grows the array */
        break;
    }
    case UNDO_UPLOAD_CREATED: {
        size_t idx = 0;
        if (upload_find(b, u->upload_id, &idx) != NULL)
            upload_free(upload_remove(b, idx));
        break;
    }
    case UNDO_UPLOAD_ENDED:
        if (u->ended != NULL && upload_insert(b, u->ended) == 0)
            u->ended = NULL;
        break;
    }
}

int ckh_objstore_crash(struct ckh_objstore *s, int node, const bool *choices, size_t n)
{
    if (s == NULL)
        return CKH_EINVAL;
    size_t affected = ckh_objstore_inflight_count(s, node);
    if (choices != NULL && n != affected)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    int undone = 0;
    /* draw (or take) every choice oldest first, then undo newest first */
    bool *keep = affected > 0 ? calloc(affected, sizeof *keep) : NULL;
    if (affected > 0 && keep == NULL)
        return CKH_ENOMEM;
    for (size_t i = 0; i < affected; i++)
        keep[i] = choices != NULL ? choices[i] : (ckh_rng_next(&s->crash_rng) & 1u) != 0;
    size_t k = affected;
    for (size_t i = s->ninflight; i-- > 0;) {
        struct inflight *f = &s->inflight[i];
        if (node >= 0 && f->node != node)
            continue;
        k--;
        if (!keep[k]) {
            for (size_t j = f->nu; j-- > 0;)
                undo_apply(s, &f->u[j]);
            trace_op(s, seq, f->node, "Undo", f->nu > 0 ? f->u[0].bucket : NULL, f->nu > 0 ? f->u[0].key : NULL, 0,
                     "write=#%" PRIu64 " op=%s", f->seq, f->op);
            undone++;
        }
        inflight_clear(f);
        memmove(f, f + 1, (s->ninflight - i - 1) * sizeof *f);
        s->ninflight--;
    }
    free(keep);
    trace_op(s, seq, node, "Crash", NULL, NULL, 0, "in-flight=%zu undone=%d", affected, undone);
    return undone;
}

/* ---- data at rest ---- */

int ckh_objstore_expire(struct ckh_objstore *s, const char *bucket, const char *key)
{
    if (s == NULL || bucket == NULL || key == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct bucket *b = bucket_find(s, bucket);
    struct entry *e = b != NULL ? entry_find(b, key) : NULL;
    int rc = b == NULL ? CKH_S3_NO_SUCH_BUCKET : (e == NULL || e->cur == NULL) ? CKH_S3_NO_SUCH_KEY : 0;
    if (rc == 0) {
        entry_restore(e, NULL);
        e->write_seq = seq;
    }
    trace_op(s, seq, -1, "Expire", bucket, key, rc, NULL);
    return rc;
}

int ckh_objstore_corrupt(struct ckh_objstore *s, const char *bucket, const char *key, uint64_t off)
{
    if (s == NULL || bucket == NULL || key == NULL)
        return CKH_EINVAL;
    uint64_t seq = ++s->seq;
    struct bucket *b = bucket_find(s, bucket);
    struct entry *e = b != NULL ? entry_find(b, key) : NULL;
    int rc = b == NULL ? CKH_S3_NO_SUCH_BUCKET : (e == NULL || e->cur == NULL) ? CKH_S3_NO_SUCH_KEY : 0;
    struct ckh_objstore_object *o = rc == 0 ? e->cur : NULL;
    if (rc == 0 && o->size == 0)
        rc = CKH_S3_INVALID_RANGE;
    if (rc == 0) {
        if (off >= o->size)
            off = o->size - 1;
        uint64_t pos = 0;
        size_t i = 0;
        while (pos + o->ext[i].len <= off)
            pos += o->ext[i++].len;
        struct extent *x = &o->ext[i];
        unsigned char *copy = malloc(x->len);
        struct ckh_objstore_blob *nb = NULL;
        if (copy == NULL) {
            rc = CKH_ENOMEM;
        } else {
            memcpy(copy, x->blob->data + x->off, x->len);
            copy[off - pos] ^= 0xff;
            if ((rc = ckh_objstore_blob_wrap(copy, x->len, &nb)) == 0) {
                ckh_objstore_blob_unref(x->blob);
                *x = (struct extent){nb, 0, x->len};
            }
        }
    }
    trace_op(s, seq, -1, "Corrupt", bucket, key, rc, "off=%" PRIu64, off);
    return rc;
}

uint64_t ckh_objstore_body_bytes(struct ckh_objstore *s)
{
    uint64_t mark = ++s->mark, total = 0;
    for (size_t i = 0; i < s->nbuckets; i++) {
        const struct bucket *b = &s->buckets[i];
        for (size_t j = 0; j < b->nentries + b->nuploads; j++) {
            const struct ckh_objstore_object *objs[3] = {NULL, NULL, NULL};
            size_t nobj = 0, nparts = 0;
            const struct part *parts = NULL;
            if (j < b->nentries) {
                objs[nobj++] = b->entries[j].cur;
                objs[nobj++] = b->entries[j].old;
            } else {
                parts = b->uploads[j - b->nentries]->parts;
                nparts = b->uploads[j - b->nentries]->nparts;
            }
            for (size_t k = 0; k < nobj + nparts; k++) {
                const struct ckh_objstore_object *o = k < nobj ? objs[k] : parts[k - nobj].obj;
                for (size_t x = 0; o != NULL && x < o->next; x++) {
                    if (o->ext[x].blob->mark != mark) {
                        o->ext[x].blob->mark = mark;
                        total += o->ext[x].blob->len;
                    }
                }
            }
        }
    }
    return total;
}

/* ---- copies of a store's state (ckh explore over requests) ---- */

/* A new version with o's bytes (its blobs shared), tag and type; NULL when
 * out of memory. A restored store gets these, so that a corruption at rest
 * there (which replaces an extent of the version in place) never reaches
 * the copy it came from. */
static struct ckh_objstore_object *obj_dup(const struct ckh_objstore_object *o)
{
    struct extent *ext = o->next ? calloc(o->next, sizeof *ext) : NULL;
    if (o->next && ext == NULL)
        return NULL;
    for (size_t i = 0; i < o->next; i++) {
        ext[i] = o->ext[i];
        ext[i].blob->refs++;
    }
    struct ckh_objstore_object *d = obj_new(o->seq, ext, o->next, o->content_type);
    if (d != NULL)
        memcpy(d->etag, o->etag, sizeof d->etag);
    return d;
}

/* A reference to o for a copy: the same version (share) or a new one. */
static struct ckh_objstore_object *obj_for_copy(struct ckh_objstore_object *o, bool share, bool *oom)
{
    if (o == NULL)
        return NULL;
    if (share) {
        obj_ref(o);
        return o;
    }
    struct ckh_objstore_object *d = obj_dup(o);
    *oom |= d == NULL;
    return d;
}

static struct upload *upload_copy(const struct upload *u, bool share)
{
    struct upload *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    bool oom = false;
    memcpy(c->id, u->id, sizeof c->id);
    c->key = strdup(u->key);
    c->content_type = dup_or_null(u->content_type);
    c->seq = u->seq;
    c->parts = u->nparts ? calloc(u->nparts, sizeof *c->parts) : NULL;
    oom = c->key == NULL || (u->content_type != NULL && c->content_type == NULL) || (u->nparts && !c->parts);
    for (size_t i = 0; !oom && i < u->nparts; i++) {
        c->parts[i].num = u->parts[i].num;
        c->parts[i].obj = obj_for_copy(u->parts[i].obj, share, &oom);
        c->nparts = i + 1;
    }
    if (oom) {
        upload_free(c);
        return NULL;
    }
    return c;
}

/* dst (zeroed) becomes a copy of b: with its lagging views and versions
 * shared (share), or its current versions only, as new versions. */
static int bucket_copy(struct bucket *dst, const struct bucket *b, bool share)
{
    bool oom = false;
    dst->name = strdup(b->name);
    dst->entries = b->nentries ? calloc(b->nentries, sizeof *dst->entries) : NULL;
    dst->uploads = b->nuploads ? calloc(b->nuploads, sizeof *dst->uploads) : NULL;
    oom = dst->name == NULL || (b->nentries && !dst->entries) || (b->nuploads && !dst->uploads);
    for (size_t i = 0; !oom && i < b->nentries; i++) {
        const struct entry *e = &b->entries[i];
        if (!share && e->cur == NULL)
            continue; /* a deleted key: nothing durable */
        struct entry *d = &dst->entries[dst->nentries];
        if ((d->key = strdup(e->key)) == NULL) {
            oom = true;
            break;
        }
        dst->nentries++;
        d->cur = obj_for_copy(e->cur, share, &oom);
        d->write_seq = e->write_seq;
        if (share) {
            d->old = obj_for_copy(e->old, true, &oom);
            d->old_valid = e->old_valid;
            d->read_lags = e->read_lags;
            d->vis_seq = e->vis_seq;
            d->vis_ns = e->vis_ns;
        }
    }
    for (size_t i = 0; !oom && i < b->nuploads; i++) {
        if ((dst->uploads[i] = upload_copy(b->uploads[i], share)) == NULL)
            oom = true;
        else
            dst->nuploads++;
    }
    return oom ? CKH_ENOMEM : 0;
}

static int undo_copy(struct undo *d, const struct undo *u)
{
    *d = *u;
    d->bucket = strdup(u->bucket);
    d->key = dup_or_null(u->key);
    obj_ref(d->before);
    obj_ref(d->after);
    d->ended = u->ended != NULL ? upload_copy(u->ended, true) : NULL;
    if (d->bucket == NULL || (u->key != NULL && d->key == NULL) || (u->ended != NULL && d->ended == NULL))
        return CKH_ENOMEM;
    return 0;
}

int ckh_objstore_clone(const struct ckh_objstore *s, struct ckh_objstore **out)
{
    if (s == NULL || out == NULL)
        return CKH_EINVAL;
    struct ckh_objstore *c = NULL;
    int rc = ckh_objstore_create(&s->cfg, &c);
    if (rc != 0)
        return rc;
    c->crash_rng = s->crash_rng;
    c->seq = s->seq;
    c->now_ns = s->now_ns;
    c->buckets = s->nbuckets ? calloc(s->nbuckets, sizeof *c->buckets) : NULL;
    c->inflight = s->ninflight ? calloc(s->ninflight, sizeof *c->inflight) : NULL;
    if ((s->nbuckets && c->buckets == NULL) || (s->ninflight && c->inflight == NULL))
        rc = CKH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < s->nbuckets; i++) {
        c->nbuckets++;
        rc = bucket_copy(&c->buckets[i], &s->buckets[i], true);
    }
    for (size_t i = 0; rc == 0 && i < s->ninflight; i++) {
        const struct inflight *f = &s->inflight[i];
        struct inflight *g = &c->inflight[c->ninflight++];
        *g = (struct inflight){.seq = f->seq, .node = f->node, .op = f->op};
        if (f->nu && (g->u = calloc(f->nu, sizeof *g->u)) == NULL)
            rc = CKH_ENOMEM;
        for (size_t j = 0; rc == 0 && j < f->nu; j++) {
            g->nu++;
            rc = undo_copy(&g->u[j], &f->u[j]);
        }
    }
    if (rc != 0) {
        ckh_objstore_destroy(c);
        return rc;
    }
    /* the same durable content, the same writes in flight */
    CKH_ASSERT(c->nbuckets == s->nbuckets && c->ninflight == s->ninflight);
    *out = c;
    return 0;
}

int ckh_objstore_restore(struct ckh_objstore *dst, const struct ckh_objstore *src)
{
    if (dst == NULL || src == NULL || dst == src)
        return CKH_EINVAL;
    struct bucket *bs = src->nbuckets ? calloc(src->nbuckets, sizeof *bs) : NULL;
    size_t nb = 0;
    int rc = src->nbuckets && bs == NULL ? CKH_ENOMEM : 0;
    for (size_t i = 0; rc == 0 && i < src->nbuckets; i++) {
        nb++;
        rc = bucket_copy(&bs[i], &src->buckets[i], false);
    }
    if (rc != 0) {
        for (size_t i = 0; i < nb; i++)
            bucket_clear(&bs[i]);
        free(bs);
        return rc;
    }
    for (size_t i = 0; i < dst->nbuckets; i++)
        bucket_clear(&dst->buckets[i]);
    free(dst->buckets);
    for (size_t i = 0; i < dst->ninflight; i++)
        inflight_clear(&dst->inflight[i]);
    free(dst->inflight);
    dst->inflight = NULL;
    dst->ninflight = 0;
    dst->buckets = bs;
    dst->nbuckets = nb;
    uint64_t seq = ++dst->seq;
    trace_op(dst, seq, -1, "Restore", NULL, NULL, 0, "objects=%zu", ckh_objstore_object_count(dst));
    return 0;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return s != NULL ? ckh_hash64(h, s, strlen(s) + 1) : ckh_hash64(h, "", 0);
}

static uint64_t hash_obj(uint64_t h, const struct ckh_objstore_object *o)
{
    h = ckh_hash64(h, &o->size, sizeof o->size);
    h = hash_str(h, o->content_type);
    for (size_t i = 0; i < o->next; i++)
        h = ckh_hash64(h, o->ext[i].blob->data + o->ext[i].off, o->ext[i].len);
    return h;
}

uint64_t ckh_objstore_content_digest(const struct ckh_objstore *s)
{
    uint64_t h = CKH_HASH_INIT;
    for (size_t i = 0; i < s->nbuckets; i++) {
        const struct bucket *b = &s->buckets[i];
        h = hash_str(h, b->name);
        for (size_t j = 0; j < b->nentries; j++) {
            if (b->entries[j].cur == NULL)
                continue;
            h = hash_str(ckh_hash64(h, "o", 1), b->entries[j].key);
            h = hash_obj(h, b->entries[j].cur);
        }
        for (size_t j = 0; j < b->nuploads; j++) {
            const struct upload *u = b->uploads[j];
            h = hash_str(ckh_hash64(h, "u", 1), u->key);
            for (size_t k = 0; k < u->nparts; k++) {
                h = ckh_hash64(h, &u->parts[k].num, sizeof u->parts[k].num);
                h = hash_obj(h, u->parts[k].obj);
            }
        }
    }
    return h;
}
