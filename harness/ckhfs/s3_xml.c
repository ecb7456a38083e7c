/* The S3 endpoint's XML writer and its two request parsers (s3_xml.h).
 * Parsing goes through expat: a body that is not well-formed XML, or whose
 * elements are not the ones S3 documents, is MalformedXML; unknown child
 * elements (VersionId, ChecksumCRC32...) are ignored as S3 ignores them. */
#include "ckhfs/s3_xml.h"

#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"

#define MAX_DELETE_KEYS 1000u
#define MAX_TEXT_BYTES 4096u

static bool buf_reserve(struct ckh__s3_buf *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 512;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void ckh__s3_printf(struct ckh__s3_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void put_char(struct ckh__s3_buf *b, char c)
{
    if (buf_reserve(b, 1)) {
        b->p[b->len++] = c;
        b->p[b->len] = '\0';
    }
}

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == '~' || c == '/';
}

void ckh__s3_elem(struct ckh__s3_buf *b, const char *tag, const char *s, bool url)
{
    ckh__s3_printf(b, "<%s>", tag);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (url && !unreserved(*p))
            ckh__s3_printf(b, "%%%02X", *p);
        else if (*p == '&')
            ckh__s3_printf(b, "&amp;");
        else if (*p == '<')
            ckh__s3_printf(b, "&lt;");
        else if (*p == '>')
            ckh__s3_printf(b, "&gt;");
        else if (*p == '"')
            ckh__s3_printf(b, "&quot;");
        else if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
            ckh__s3_printf(b, "&#x%X;", *p); /* XML 1.0 cannot carry it; S3 writes it so too */
        else
            put_char(b, (char)*p);
    }
    ckh__s3_printf(b, "</%s>", tag);
}

/* ---- parsing: one walker for both bodies ---- */

/* The shape both bodies share: ROOT > ITEM > FIELD text, and ROOT > FLAG. */
struct walk {
    const char *root;     /* "CompleteMultipartUpload" or "Delete" */
    const char *item;     /* "Part" or "Object" */
    const char *fields[2]; /* the item's fields kept ("PartNumber", "ETag" / "Key") */
    const char *flag;     /* a root child kept as text ("Quiet"; NULL: none) */
    int depth;            /* elements open */
    int field;            /* field being read (-1: none; 2: the flag) */
    bool in_item;         /* the open depth-2 element is an item (its fields are kept) */
    bool bad;             /* not the expected shape */
    bool oom;             /* out of memory */
    char text[MAX_TEXT_BYTES + 1]; /* the field's text */
    size_t tlen;
    char *(*items)[2];    /* per item its two field texts (malloc'd; NULL: missing) */
    size_t nitems, cap;
    char flag_text[16];   /* the flag's text */
};

/* expat gives names as is (no namespace processing): the local part. */
static const char *local_name(const XML_Char *name)
{
    const char *c = strrchr(name, ':');
    return c != NULL ? c + 1 : name;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    struct walk *w = ud;
    const char *n = local_name(name);
    w->depth++;
    w->field = -1;
    w->tlen = 0;
    if (w->depth == 1 && strcmp(n, w->root) != 0)
        w->bad = true;
    if (w->depth == 2)
        w->in_item = false;
    if (w->depth == 2 && strcmp(n, w->item) == 0) {
        if (w->nitems == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 16;
            void *p = realloc(w->items, cap * sizeof *w->items);
            if (p == NULL) {
                w->oom = true;
                return;
            }
            w->items = p;
            w->cap = cap;
        }
        w->items[w->nitems][0] = w->items[w->nitems][1] = NULL;
        w->nitems++;
        w->in_item = true;
    }
    if (w->depth == 2 && w->flag != NULL && strcmp(n, w->flag) == 0)
        w->field = 2;
    if (w->depth == 3 && w->in_item)
        for (int i = 0; i < 2; i++)
            if (w->fields[i] != NULL && strcmp(n, w->fields[i]) == 0)
                w->field = i;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    struct walk *w = ud;
    if (w->field < 0)
        return;
    if (w->tlen + (size_t)len > MAX_TEXT_BYTES) {
        w->bad = true;
        return;
    }
    memcpy(w->text + w->tlen, s, (size_t)len);
    w->tlen += (size_t)len;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    (void)name;
    struct walk *w = ud;
    w->text[w->tlen] = '\0';
    if (w->field == 2) {
        size_t n = w->tlen < sizeof w->flag_text - 1 ? w->tlen : sizeof w->flag_text - 1;
        memcpy(w->flag_text, w->text, n);
        w->flag_text[n] = '\0';
    } else if (w->field >= 0) {
        char **slot = &w->items[w->nitems - 1][w->field];
        free(*slot);
        if ((*slot = strdup(w->text)) == NULL)
            w->oom = true;
    }
    w->field = -1;
    w->tlen = 0;
    w->depth--;
}

static void walk_free(struct walk *w)
{
    for (size_t i = 0; i < w->nitems; i++) {
        free(w->items[i][0]);
        free(w->items[i][1]);
    }
    free(w->items);
}

/* Runs expat over xml into w: 0, MALFORMED_XML, CKH_ENOMEM. */
static int walk_run(struct walk *w, const char *xml, size_t len)
{
    XML_Parser p = XML_ParserCreate("UTF-8");
    if (p == NULL)
        return CKH_ENOMEM;
    XML_SetUserData(p, w);
    XML_SetElementHandler(p, on_start, on_end);
    XML_SetCharacterDataHandler(p, on_text);
    w->field = -1;
    int ok = len <= (size_t)INT32_MAX && XML_Parse(p, xml, (int)len, 1) == XML_STATUS_OK;
    XML_ParserFree(p);
    if (w->oom)
        return CKH_ENOMEM;
    return (ok && !w->bad) ? 0 : CKH_S3_MALFORMED_XML;
}

int ckh__s3_parse_complete(const char *xml, size_t len, struct ckh__s3_complete *out)
{
    struct walk *w = calloc(1, sizeof *w);
    if (w == NULL)
        return CKH_ENOMEM;
    *w = (struct walk){.root = "CompleteMultipartUpload", .item = "Part", .fields = {"PartNumber", "ETag"}};
    int rc = walk_run(w, xml, len);
    struct ckh_objstore_part_ref *parts = NULL;
    if (rc == 0 && w->nitems == 0)
        rc = CKH_S3_MALFORMED_XML;
    if (rc == 0 && (parts = calloc(w->nitems, sizeof *parts)) == NULL)
        rc = CKH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < w->nitems; i++) {
        char *end = NULL;
        const char *num = w->items[i][0];
        long v = num != NULL ? strtol(num, &end, 10) : 0;
        if (num == NULL || *end != '\0' || v < 1 || v > 10000 || w->items[i][1] == NULL)
            rc = CKH_S3_MALFORMED_XML;
        else {
            parts[i].part = (int)v;
            parts[i].etag = w->items[i][1];
            w->items[i][1] = NULL; /* moved */
        }
    }
    if (rc == 0) {
        out->parts = parts;
        out->nparts = w->nitems;
    } else if (parts != NULL) {
        for (size_t i = 0; i < w->nitems; i++)
            free((char *)parts[i].etag);
        free(parts);
    }
    walk_free(w);
    free(w);
    return rc;
}

void ckh__s3_complete_free(struct ckh__s3_complete *c)
{
    for (size_t i = 0; i < c->nparts; i++)
        free((char *)c->parts[i].etag);
    free(c->parts);
    memset(c, 0, sizeof *c);
}

int ckh__s3_parse_delete(const char *xml, size_t len, struct ckh__s3_delete *out)
{
    struct walk *w = calloc(1, sizeof *w);
    if (w == NULL)
        return CKH_ENOMEM;
    *w = (struct walk){.root = "Delete", .item = "Object", .fields = {"Key", NULL}, .flag = "Quiet"};
    int rc = walk_run(w, xml, len);
    char **keys = NULL;
    if (rc == 0 && (w->nitems == 0 || w->nitems > MAX_DELETE_KEYS))
        rc = CKH_S3_MALFORMED_XML;
    if (rc == 0 && (keys = calloc(w->nitems, sizeof *keys)) == NULL)
        rc = CKH_ENOMEM;
    for (size_t i = 0; rc == 0 && i < w->nitems; i++) {
        if (w->items[i][0] == NULL)
            rc = CKH_S3_MALFORMED_XML;
        keys[i] = w->items[i][0];
        w->items[i][0] = NULL; /* moved */
    }
    if (rc == 0) {
        out->keys = keys;
        out->nkeys = w->nitems;
        out->quiet = strcmp(w->flag_text, "true") == 0;
    } else if (keys != NULL) {
        for (size_t i = 0; i < w->nitems; i++)
            free(keys[i]);
        free(keys);
    }
    walk_free(w);
    free(w);
    return rc;
}

void ckh__s3_delete_free(struct ckh__s3_delete *d)
{
    for (size_t i = 0; i < d->nkeys; i++)
        free(d->keys[i]);
    free(d->keys);
    memset(d, 0, sizeof *d);
}
