/* The JSON-lines result protocol (include/ckh/record.h; docs/SCENARIOS.md,
 * "Result protocol"): a writer, a struct ckh_record table that appends one
 * line per record to a file, and a strict reader that turns those lines
 * back into the same records.
 *
 * Specification of one line (the record.h comment shows an example per
 * kind):
 *   - one JSON object (RFC 8259) with a string "kind": step, resume, save
 *     or final; blank lines (spaces, tabs, CR) are skipped;
 *   - step:   "step" (required, >= 1), "epoch" (>= 0, default 0),
 *             "digests" {name: "16 hex digits"}, "values" {name: number},
 *             "samples" [integer >= 0, < 2^64];
 *   - resume: "step" (required, >= 0), "epoch" (>= 0, default 0);
 *   - save:   "step" (required, >= 0), "epoch" (default 0), "ok"
 *             (required, boolean), "rc" (the negative ckh code; default
 *             -EIO when "ok" is false, 0 when true), "error" (text);
 *   - final:  "epochs", "steps" (>= 0, default 0), "total" (default 0),
 *             "digest" ("16 hex digits", optional), "values" {name:
 *             number}, "blobs" [non-empty text without ','];
 *   - integer keys take integers only (no fraction, no exponent), values
 *     are finite doubles or the strings "NaN", "Infinity", "-Infinity",
 *     names follow ckh_record_name_check, at most
 *     CKH_RECORD_FIELDS_MAX digests and values, no name twice among them;
 *   - unknown keys are ignored whatever valid JSON they hold; a known key
 *     given twice is refused; strings are UTF-8 and may not hold U+0000.
 * The writer emits exactly this: digests as 16 lowercase hex digits,
 * doubles with %.17g (they read back bit for bit; NaN and infinities as
 * the three strings), strings escaped, and
 * invalid UTF-8 in a string written as U+FFFD.
 *
 * Map: 1. shared text helpers, 2. the writer, 3. the reader's arena and
 * JSON parser (a tree per line), 4. from the tree to records, 5. the line
 * loop, 6. the writer's round trip: under CKH_ASSERT_SLOW every line written
 * is read back and compared with its record.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "ckh/record.h"

/* ==== 1. shared text helpers ==== */

/* Length (1..4) of the valid, shortest-form, non-surrogate UTF-8 sequence
 * at s (n bytes available), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* A growable text buffer; `failed` sticks after an allocation failure. */
struct sbuf {
    char *p;     /* the text (owned) */
    size_t len;  /* bytes used */
    size_t cap;  /* bytes allocated */
    bool failed; /* an append ran out of memory */
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_fmt(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(struct sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    CKH_ASSERT(n >= 0 && (size_t)n < sizeof tmp); /* numbers only */
    sb_put(b, tmp, (size_t)n);
}

/* ==== 2. the writer ==== */

/* s as a JSON string literal; invalid UTF-8 becomes U+FFFD. */
static void sb_json_string(struct sbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *c = (const unsigned char *)s;
    size_t n = strlen(s);
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len(c + i, n - i);
        if (c[i] == '"' || c[i] == '\\') {
            char e[2] = {'\\', (char)c[i]};
            sb_put(b, e, 2);
        } else if (c[i] == '\n') {
            sb_str(b, "\\n");
        } else if (c[i] == '\t') {
            sb_str(b, "\\t");
        } else if (c[i] == '\r') {
            sb_str(b, "\\r");
        } else if (c[i] < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c[i] >> 4], hex[c[i] & 15]};
            sb_put(b, e, 6);
        } else if (l == 0) {
            sb_str(b, "\\ufffd");
            l = 1;
        } else {
            sb_put(b, s + i, l);
        }
        i += l ? l : 1;
    }
    sb_put(b, "\"", 1);
}

static void sb_key(struct sbuf *b, const char *key)
{
    sb_put(b, ",", 1);
    sb_json_string(b, key);
    sb_put(b, ":", 1);
}

static void sb_digest(struct sbuf *b, uint64_t d)
{
    sb_fmt(b, "\"%016" PRIx64 "\"", d);
}

/* A finite double with %.17g; NaN and the infinities, which JSON has no
 * literal for, as the strings "NaN", "Infinity" and "-Infinity". */
static void sb_double(struct sbuf *b, double v)
{
    if (isnan(v))
        sb_fmt(b, "\"NaN\"");
    else if (isinf(v))
        sb_fmt(b, "%s", v < 0 ? "\"-Infinity\"" : "\"Infinity\"");
    else
        sb_fmt(b, "%.17g", v);
}

static void sb_values(struct sbuf *b, const struct ckh_rec_value *v, size_t n)
{
    if (!n)
        return;
    sb_str(b, ",\"values\":{");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_put(b, ",", 1);
        sb_json_string(b, v[i].name);
        sb_put(b, ":", 1);
        sb_double(b, v[i].value);
    }
    sb_put(b, "}", 1);
}

/* A record table writing to one file. */
struct jsonl_record {
    struct ckh_record base; /* the table (first member) */
    int fd;                 /* the file, opened for appending (owned) */
};

#ifdef CKH_SLOW_ASSERTS
static bool reads_back(enum ckh_rec_kind kind, const void *rec, const struct sbuf *b);
#endif

/* Writes the line in b (a newline added) with as many write(2) calls as it
 * takes, then frees b. kind and rec: the record the line encodes, which
 * the slow asserts read back from it. */
static int emit(struct ckh_record *r, struct sbuf *b, enum ckh_rec_kind kind, const void *rec)
{
    struct jsonl_record *j = (struct jsonl_record *)r;
    int rc = 0;
    sb_put(b, "}\n", 2);
    if (b->failed) {
        rc = CKH_ENOMEM;
        goto out_free;
    }
    (void)kind;
    (void)rec;
    CKH_ASSERT_SLOW(reads_back(kind, rec, b));
    for (size_t done = 0; done < b->len;) {
        ssize_t w = write(j->fd, b->p + done, b->len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            goto out_free;
        }
        done += (size_t)w;
    }
out_free:
    free(b->p);
    return rc;
}

static int w_step(struct ckh_record *r, const struct ckh_rec_step *s)
{
    struct sbuf b = {0};
    int rc = ckh_record_check_step(s);
    if (rc)
        return rc;
    sb_fmt(&b, "{\"kind\":\"step\",\"step\":%" PRId64 ",\"epoch\":%" PRId64, s->step, s->epoch);
    if (s->ndigests) {
        sb_str(&b, ",\"digests\":{");
        for (size_t i = 0; i < s->ndigests; i++) {
            if (i)
                sb_put(&b, ",", 1);
            sb_json_string(&b, s->digests[i].name);
            sb_put(&b, ":", 1);
            sb_digest(&b, s->digests[i].digest);
        }
        sb_put(&b, "}", 1);
    }
    sb_values(&b, s->values, s->nvalues);
    if (s->nsamples) {
        sb_str(&b, ",\"samples\":[");
        for (size_t i = 0; i < s->nsamples; i++)
            sb_fmt(&b, "%s%" PRIu64, i ? "," : "", s->samples[i]);
        sb_put(&b, "]", 1);
    }
    return emit(r, &b, CKH_REC_STEP, s);
}

static int w_resume(struct ckh_record *r, const struct ckh_rec_resume *s)
{
    struct sbuf b = {0};
    int rc = ckh_record_check_resume(s);
    if (rc)
        return rc;
    sb_fmt(&b, "{\"kind\":\"resume\",\"step\":%" PRId64 ",\"epoch\":%" PRId64, s->step, s->epoch);
    return emit(r, &b, CKH_REC_RESUME, s);
}

static int w_save(struct ckh_record *r, const struct ckh_rec_save *s)
{
    struct sbuf b = {0};
    int rc = ckh_record_check_save(s);
    if (rc)
        return rc;
    sb_fmt(&b, "{\"kind\":\"save\",\"step\":%" PRId64 ",\"epoch\":%" PRId64 ",\"ok\":%s", s->step,
           s->epoch, s->rc == 0 ? "true" : "false");
    if (s->rc != 0)
        sb_fmt(&b, ",\"rc\":%d", s->rc);
    if (s->what) {
        sb_key(&b, "error");
        sb_json_string(&b, s->what);
    }
    return emit(r, &b, CKH_REC_SAVE, s);
}

static int w_final(struct ckh_record *r, const struct ckh_rec_final *s)
{
    struct sbuf b = {0};
    int rc = ckh_record_check_final(s);
    if (rc)
        return rc;
    sb_fmt(&b, "{\"kind\":\"final\",\"epochs\":%" PRId64 ",\"steps\":%" PRId64, s->epochs, s->steps);
    sb_fmt(&b, ",\"total\":%" PRId64, s->total);
    if (s->has_digest) {
        sb_str(&b, ",\"digest\":");
        sb_digest(&b, s->digest);
    }
    sb_values(&b, s->values, s->nvalues);
    if (s->nblobs) {
        sb_str(&b, ",\"blobs\":[");
        for (size_t i = 0; i < s->nblobs; i++) {
            if (i)
                sb_put(&b, ",", 1);
            sb_json_string(&b, s->blobs[i]);
        }
        sb_put(&b, "]", 1);
    }
    return emit(r, &b, CKH_REC_FINAL, s);
}

static const struct ckh_record_ops jsonl_ops = {
    .version = 1,
    .step = w_step,
    .resume = w_resume,
    .save = w_save,
    .final = w_final,
};

int ckh_record_jsonl_open(const char *path, struct ckh_record **out, char *msg, size_t msglen)
{
    if (!out)
        return ckh_errf(msg, msglen, CKH_EINVAL, "no result pointer given");
    *out = NULL;
    if (!path)
        return ckh_errf(msg, msglen, CKH_EINVAL, "no path given");
    struct jsonl_record *j = calloc(1, sizeof *j);
    if (!j)
        return ckh_errf(msg, msglen, CKH_ENOMEM, "out of memory");
    j->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (j->fd < 0) {
        int e = errno;
        free(j);
        return ckh_errf(msg, msglen, -EIO, "cannot open %s: %s", path, strerror(e));
    }
    j->base.ops = &jsonl_ops;
    *out = &j->base;
    return 0;
}

void ckh_record_jsonl_close(struct ckh_record *r)
{
    if (!r)
        return;
    struct jsonl_record *j = (struct jsonl_record *)r;
    close(j->fd);
    free(j);
}

/* ==== 3. the reader: arena and JSON parser ==== */

#define ARENA_BLOCK (16u << 10)
#define ARENA_ALIGN 16u

struct arena_block {
    struct arena_block *next; /* the block allocated before */
    size_t used;              /* bytes handed out */
    size_t cap;               /* bytes available after the header */
};

#define ARENA_HDR ((sizeof(struct arena_block) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN)

/* Blocks of one line's tree and records, freed together. */
struct arena {
    struct arena_block *head; /* newest block (owned, with the older ones) */
};

static void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    struct arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = malloc(ARENA_HDR + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (char *)b + ARENA_HDR + b->used;
    b->used += n;
    return p;
}

static void arena_free(struct arena *a)
{
    while (a->head) {
        struct arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

enum jtype { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

/* One JSON value of the line's tree (in the arena). */
struct jval {
    enum jtype type;    /* what it is */
    size_t col;         /* 1-based column where it starts */
    struct jval *next;  /* next element or member of its parent */
    const char *key;    /* member key, decoded (NULL in an array) */
    size_t key_col;     /* 1-based column of the key */
    const char *text;   /* J_NUM: the number's text, J_STR: the decoded string (NUL-terminated) */
    size_t len;         /* bytes of text */
    struct jval *first; /* J_ARR, J_OBJ: first element or member */
    size_t n;           /* J_ARR, J_OBJ: number of elements or members */
};

/* One line being parsed. */
struct jparse {
    const char *s;      /* the line (not NUL-terminated) */
    size_t len;         /* its length */
    size_t pos;         /* next byte */
    const char *file;   /* name in messages */
    size_t lineno;      /* 1-based line number */
    char *msg;          /* where errors go */
    size_t msglen;      /* its size */
    struct arena arena; /* the tree and the records */
};

/* Reports "file:line:col: <fmt>" and returns CKH_EPARSE. */
static int failf(struct jparse *p, size_t col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(struct jparse *p, size_t col, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ckh_errf(p->msg, p->msglen, CKH_EPARSE, "%s:%zu:%zu: %s", p->file, p->lineno, col, what);
}

/* What is at byte pos, for "found ...". */
static void describe(const struct jparse *p, size_t pos, char *buf, size_t n)
{
    if (pos >= p->len) {
        snprintf(buf, n, "end of line");
        return;
    }
    unsigned char c = (unsigned char)p->s[pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, n, "'%c'", c);
    else
        snprintf(buf, n, "byte 0x%02x", c);
}

/* "expected <expected>, found <what is at pos>" at pos. */
static int fail_at(struct jparse *p, size_t pos, const char *expected)
{
    char found[32];
    describe(p, pos, found, sizeof found);
    return failf(p, pos + 1, "expected %s, found %s", expected, found);
}

static struct jval *new_val(struct jparse *p, enum jtype t, size_t pos)
{
    struct jval *v = arena_alloc(&p->arena, sizeof *v);
    if (v) {
        memset(v, 0, sizeof *v);
        v->type = t;
        v->col = pos + 1;
    }
    return v;
}

static void skip_ws(struct jparse *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\r'))
        p->pos++;
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits at pos as a code unit, or -1 (error reported). */
static int32_t parse_u4(struct jparse *p, size_t pos)
{
    int32_t u = 0;
    for (size_t i = 0; i < 4; i++) {
        int h = pos + i < p->len ? hex_val(p->s[pos + i]) : -1;
        if (h < 0) {
            fail_at(p, pos + i, "a hex digit of a \\u escape");
            return -1;
        }
        u = u << 4 | h;
    }
    return u;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A \u escape at p->pos (just after the 'u'): the code point, with a
 * surrogate pair joined; -1 after an error. */
static int32_t parse_u_escape(struct jparse *p)
{
    size_t at = p->pos - 2;
    int32_t u = parse_u4(p, p->pos);
    if (u < 0)
        return -1;
    p->pos += 4;
    if (u >= 0xdc00 && u <= 0xdfff) {
        failf(p, at + 1, "expected a character or a high surrogate, found a lone low surrogate \\u%04x", (unsigned)u);
        return -1;
    }
    if (u >= 0xd800 && u <= 0xdbff) {
        if (p->pos + 1 >= p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
            fail_at(p, p->pos, "a \\u escape with the low surrogate");
            return -1;
        }
        int32_t lo = parse_u4(p, p->pos + 2);
        if (lo < 0)
            return -1;
        if (lo < 0xdc00 || lo > 0xdfff) {
            failf(p, p->pos + 1, "expected a low surrogate, found \\u%04x", (unsigned)lo);
            return -1;
        }
        p->pos += 6;
        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (u == 0) {
        failf(p, at + 1, "expected a character other than U+0000, found \\u0000");
        return -1;
    }
    return u;
}

/* Decodes the string starting at p->pos (the '"') into the arena. */
static int parse_string(struct jparse *p, const char **out, size_t *outlen)
{
    size_t end = p->pos + 1;
    while (end < p->len && p->s[end] != '"')
        end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->len)
        return fail_at(p, p->len, "'\"' closing the string");
    /* Decoding never lengthens: the raw bytes and a NUL fit. */
    size_t cap = end - p->pos;
    char *o = arena_alloc(&p->arena, cap);
    if (!o)
        return CKH_ENOMEM;
    size_t n = 0;
    p->pos++;
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20)
            return fail_at(p, p->pos, "a character of a string (control characters are escaped)");
        if (c >= 0x80) {
            size_t l = utf8_len((const unsigned char *)p->s + p->pos, end - p->pos);
            if (!l)
                return fail_at(p, p->pos, "UTF-8 text");
            memcpy(o + n, p->s + p->pos, l);
            n += l;
            p->pos += l;
            continue;
        }
        if (c != '\\') {
            o[n++] = (char)c;
            p->pos++;
            continue;
        }
        char e = p->s[p->pos + 1];
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = e ? strchr(from, e) : NULL;
        p->pos += 2;
        if (k) {
            o[n++] = to[k - from];
        } else if (e == 'u') {
            int32_t cp = parse_u_escape(p);
            if (cp < 0)
                return CKH_EPARSE;
            n += put_utf8(o + n, (uint32_t)cp);
            CKH_ASSERT(n < cap);
        } else {
            return fail_at(p, p->pos - 1, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
        }
    }
    o[n] = '\0';
    p->pos = end + 1;
    *out = o;
    *outlen = n;
    return 0;
}

static bool is_digit(const struct jparse *p, size_t i)
{
    return i < p->len && p->s[i] >= '0' && p->s[i] <= '9';
}

/* A number by RFC 8259's grammar; its text is kept for the typed getters. */
static int parse_number(struct jparse *p, struct jval *v)
{
    size_t i = p->pos;
    if (p->s[i] == '-')
        i++;
    if (!is_digit(p, i))
        return fail_at(p, i, "a digit");
    if (p->s[i] == '0')
        i++;
    else
        while (is_digit(p, i))
            i++;
    if (i < p->len && p->s[i] == '.') {
        if (!is_digit(p, ++i))
            return fail_at(p, i, "a digit after '.'");
        while (is_digit(p, i))
            i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (!is_digit(p, i))
            return fail_at(p, i, "a digit of the exponent");
        while (is_digit(p, i))
            i++;
    }
    v->text = p->s + p->pos;
    v->len = i - p->pos;
    p->pos = i;
    return 0;
}

static int parse_value(struct jparse *p, unsigned depth, struct jval **out);

/* Elements (or members, obj) up to the closing bracket. */
static int parse_container(struct jparse *p, unsigned depth, struct jval *v, bool obj)
{
    char close = obj ? '}' : ']';
    struct jval **tail = &v->first;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t keylen = 0, key_col = p->pos + 1;
        int rc;
        if (obj) {
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return fail_at(p, p->pos, v->n ? "a string key" : "a string key or '}'");
            if ((rc = parse_string(p, &key, &keylen)) != 0)
                return rc;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':')
                return fail_at(p, p->pos, "':' after the key");
            p->pos++;
            skip_ws(p);
        }
        struct jval *e = NULL;
        if ((rc = parse_value(p, depth, &e)) != 0)
            return rc;
        e->key = key;
        e->key_col = key_col;
        *tail = e;
        tail = &e->next;
        v->n++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            skip_ws(p);
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return 0;
        }
        return fail_at(p, p->pos, obj ? "',' or '}'" : "',' or ']'");
    }
}

/* Any JSON value at p->pos; depth counts the containers around it. */
static int parse_value(struct jparse *p, unsigned depth, struct jval **out)
{
    static const struct {
        const char *word;
        enum jtype type;
    } literals[] = {{"true", J_TRUE}, {"false", J_FALSE}, {"null", J_NULL}};
    if (p->pos >= p->len)
        return fail_at(p, p->pos, "a value");
    char c = p->s[p->pos];
    struct jval *v = new_val(p, J_NULL, p->pos);
    if (!v)
        return CKH_ENOMEM;
    *out = v;
    if (c == '{' || c == '[') {
        if (depth >= CKH_RECORD_JSONL_DEPTH_MAX)
            return failf(p, p->pos + 1, "expected at most %d nested arrays and objects, found '%c' "
                         "opening one more", CKH_RECORD_JSONL_DEPTH_MAX, c);
        v->type = c == '{' ? J_OBJ : J_ARR;
        return parse_container(p, depth + 1, v, c == '{');
    }
    if (c == '"') {
        v->type = J_STR;
        return parse_string(p, &v->text, &v->len);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = J_NUM;
        return parse_number(p, v);
    }
    for (size_t i = 0; i < sizeof literals / sizeof literals[0]; i++) {
        size_t l = strlen(literals[i].word);
        if (p->len - p->pos >= l && memcmp(p->s + p->pos, literals[i].word, l) == 0) {
            v->type = literals[i].type;
            p->pos += l;
            return 0;
        }
    }
    return fail_at(p, p->pos, "a value (object, array, string, number, true, false or null)");
}

/* ==== 4. from the tree to records ==== */

static const char *type_name(enum jtype t)
{
    switch (t) {
    case J_NULL: return "null";
    case J_FALSE: return "false";
    case J_TRUE: return "true";
    case J_NUM: return "a number";
    case J_STR: return "a string";
    case J_ARR: return "an array";
    case J_OBJ: return "an object";
    }
    return "?";
}

/* text (n bytes) quoted for a message: at most 40 bytes, non-printable
 * bytes as '?'. */
static void quoted(const char *text, size_t n, char *buf, size_t size)
{
    size_t o = 0, max = n > 40 ? 40 : n;
    buf[o++] = '"';
    for (size_t i = 0; i < max && o + 5 < size; i++)
        buf[o++] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
    if (max < n && o + 5 < size) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
}

/* How v looks in "found ...": a number's text, a quoted string or its type. */
static void shown(const struct jval *v, char *buf, size_t size)
{
    if (v->type == J_NUM)
        snprintf(buf, size, "%.*s", (int)(v->len > 40 ? 40 : v->len), v->text);
    else if (v->type == J_STR)
        quoted(v->text, v->len, buf, size);
    else
        snprintf(buf, size, "%s", type_name(v->type));
}

/* "expected <what> for "<key>", found <v>" at v. */
static int fail_val(struct jparse *p, const struct jval *v, const char *key, const char *what)
{
    char got[64];
    shown(v, got, sizeof got);
    return failf(p, v->col, "expected %s for \"%s\", found %s", what, key, got);
}

/* The member `key` of obj in *out (NULL when absent); a second one is refused. */
static int member(struct jparse *p, const struct jval *obj, const char *key, const struct jval **out)
{
    *out = NULL;
    for (const struct jval *m = obj->first; m; m = m->next) {
        if (strcmp(m->key, key) != 0)
            continue;
        if (*out)
            return failf(p, m->key_col, "expected \"%s\" once in a record, found it again", key);
        *out = m;
    }
    return 0;
}

/* As member, but absence is an error naming the record ("a step record"). */
static int required(struct jparse *p, const struct jval *obj, const char *record, const char *key,
                    const struct jval **out)
{
    int rc = member(p, obj, key, out);
    if (rc == 0 && !*out)
        return failf(p, obj->col, "expected key \"%s\" in %s, found none", key, record);
    return rc;
}

/* An integer number v as its sign and magnitude; false when v is not one
 * (or its magnitude passes UINT64_MAX). */
static bool int_text(const struct jval *v, bool *neg, uint64_t *mag)
{
    if (v->type != J_NUM)
        return false;
    size_t i = 0;
    *neg = v->text[0] == '-';
    i += *neg;
    *mag = 0;
    for (; i < v->len; i++) {
        char c = v->text[i];
        if (c < '0' || c > '9')
            return false;
        uint64_t d = (uint64_t)(c - '0');
        if (*mag > (UINT64_MAX - d) / 10)
            return false;
        *mag = *mag * 10 + d;
    }
    return true;
}

/* An integer in [lo, hi] (v may be NULL: *out untouched). */
static int get_i64(struct jparse *p, const struct jval *v, const char *key, int64_t lo, int64_t hi,
                   int64_t *out)
{
    bool neg;
    uint64_t mag;
    char want[96];
    if (!v)
        return 0;
    snprintf(want, sizeof want, "an integer from %" PRId64 " to %" PRId64, lo, hi);
    if (!int_text(v, &neg, &mag) || (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX))
        return fail_val(p, v, key, want);
    int64_t x = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    if (x < lo || x > hi)
        return fail_val(p, v, key, want);
    *out = x;
    return 0;
}

/* A value: a finite number, or one of the strings "NaN", "Infinity",
 * "-Infinity" (JSON has no literal for them). */
static int get_double(struct jparse *p, const struct jval *v, const char *key, double *out)
{
    static const char want[] = "a finite number, or \"NaN\", \"Infinity\" or \"-Infinity\"";
    if (v->type == J_STR) {
        if (v->len == 3 && !memcmp(v->text, "NaN", 3))
            *out = NAN;
        else if (v->len == 8 && !memcmp(v->text, "Infinity", 8))
            *out = INFINITY;
        else if (v->len == 9 && !memcmp(v->text, "-Infinity", 9))
            *out = -INFINITY;
        else
            return fail_val(p, v, key, want);
        return 0;
    }
    if (v->type != J_NUM)
        return fail_val(p, v, key, want);
    char *t = arena_alloc(&p->arena, v->len + 1);
    if (!t)
        return CKH_ENOMEM;
    memcpy(t, v->text, v->len);
    t[v->len] = '\0';
    double d = strtod(t, NULL);
    if (!isfinite(d))
        return fail_val(p, v, key, want);
    *out = d;
    return 0;
}

/* A digest: a string of exactly 16 hex digits. */
static int get_digest(struct jparse *p, const struct jval *v, const char *key, uint64_t *out)
{
    uint64_t d = 0;
    bool ok = v->type == J_STR && v->len == 16;
    for (size_t i = 0; ok && i < 16; i++) {
        int h = hex_val(v->text[i]);
        ok = h >= 0;
        d = d << 4 | (uint64_t)(h & 15);
    }
    if (!ok)
        return fail_val(p, v, key, "a digest of 16 hex digits in a string");
    *out = d;
    return 0;
}

/* The keys of an object v of named fields (at most CKH_RECORD_FIELDS_MAX,
 * valid names, none already in seen[0..nseen)). */
static int check_names(struct jparse *p, const struct jval *v, const char *key,
                       const char *const *seen, size_t nseen)
{
    if (v->type != J_OBJ)
        return fail_val(p, v, key, "an object of named fields");
    if (v->n > CKH_RECORD_FIELDS_MAX)
        return failf(p, v->col, "expected at most %d entries in \"%s\", found %zu",
                     CKH_RECORD_FIELDS_MAX, key, v->n);
    for (const struct jval *m = v->first; m; m = m->next) {
        char got[64];
        quoted(m->key, strlen(m->key), got, sizeof got);
        if (ckh_record_name_check(m->key) != 0)
            return failf(p, m->key_col, "expected a name of 1 to %d letters, digits, '_', '.' or "
                         "'-' in \"%s\", found %s", CKH_RECORD_NAME_MAX, key, got);
        bool again = false;
        for (size_t i = 0; i < nseen; i++)
            again |= strcmp(seen[i], m->key) == 0;
        for (const struct jval *e = v->first; e != m; e = e->next)
            again |= strcmp(e->key, m->key) == 0;
        if (again)
            return failf(p, m->key_col, "expected each name once among a record's digests and "
                         "values, found %s again", got);
    }
    return 0;
}

static int get_digests(struct jparse *p, const struct jval *v, struct ckh_rec_digest **out, size_t *n)
{
    int rc = check_names(p, v, "digests", NULL, 0);
    if (rc)
        return rc;
    struct ckh_rec_digest *d = arena_alloc(&p->arena, (v->n ? v->n : 1) * sizeof *d);
    if (!d)
        return CKH_ENOMEM;
    size_t i = 0;
    for (const struct jval *m = v->first; m; m = m->next, i++) {
        d[i].name = m->key;
        if ((rc = get_digest(p, m, m->key, &d[i].digest)) != 0)
            return rc;
    }
    *out = d;
    *n = v->n;
    return 0;
}

/* Named values; their names must differ from the n digests' names. */
static int get_values(struct jparse *p, const struct jval *v, const struct ckh_rec_digest *dig,
                      size_t ndig, struct ckh_rec_value **out, size_t *n)
{
    const char *seen[CKH_RECORD_FIELDS_MAX];
    for (size_t i = 0; i < ndig; i++)
        seen[i] = dig[i].name;
    int rc = check_names(p, v, "values", seen, ndig);
    if (rc)
        return rc;
    struct ckh_rec_value *x = arena_alloc(&p->arena, (v->n ? v->n : 1) * sizeof *x);
    if (!x)
        return CKH_ENOMEM;
    size_t i = 0;
    for (const struct jval *m = v->first; m; m = m->next, i++) {
        x[i].name = m->key;
        if ((rc = get_double(p, m, m->key, &x[i].value)) != 0)
            return rc;
    }
    *out = x;
    *n = v->n;
    return 0;
}

static int get_samples(struct jparse *p, const struct jval *v, uint64_t **out, size_t *n)
{
    if (v->type != J_ARR)
        return fail_val(p, v, "samples", "an array of sample ids");
    uint64_t *s = arena_alloc(&p->arena, (v->n ? v->n : 1) * sizeof *s);
    if (!s)
        return CKH_ENOMEM;
    size_t i = 0;
    for (const struct jval *e = v->first; e; e = e->next, i++) {
        bool neg;
        if (!int_text(e, &neg, &s[i]) || (neg && s[i] != 0))
            return fail_val(p, e, "samples", "a sample id (an integer from 0 to 18446744073709551615)");
    }
    *out = s;
    *n = v->n;
    return 0;
}

static int get_blobs(struct jparse *p, const struct jval *v, const char ***out, size_t *n)
{
    if (v->type != J_ARR)
        return fail_val(p, v, "blobs", "an array of blob names");
    const char **b = arena_alloc(&p->arena, (v->n ? v->n : 1) * sizeof *b);
    if (!b)
        return CKH_ENOMEM;
    size_t i = 0;
    for (const struct jval *e = v->first; e; e = e->next, i++) {
        if (e->type != J_STR || e->len == 0 || memchr(e->text, ',', e->len))
            return fail_val(p, e, "blobs", "a blob name (non-empty text without ',')");
        b[i] = e->text;
    }
    *out = b;
    *n = v->n;
    return 0;
}

static int rec_step(struct jparse *p, const struct jval *o, ckh_record_sink sink, void *ctx)
{
    struct ckh_rec_step s = {0};
    struct ckh_rec_digest *d = NULL;
    struct ckh_rec_value *x = NULL;
    uint64_t *samples = NULL;
    const struct jval *step, *epoch, *dig, *val, *smp;
    int rc;
    if ((rc = required(p, o, "a step record", "step", &step)) || (rc = member(p, o, "epoch", &epoch)) ||
        (rc = member(p, o, "digests", &dig)) || (rc = member(p, o, "values", &val)) ||
        (rc = member(p, o, "samples", &smp)) || (rc = get_i64(p, step, "step", 1, INT64_MAX, &s.step)) ||
        (rc = get_i64(p, epoch, "epoch", 0, INT64_MAX, &s.epoch)) ||
        (dig && (rc = get_digests(p, dig, &d, &s.ndigests))) ||
        (val && (rc = get_values(p, val, d, s.ndigests, &x, &s.nvalues))) ||
        (smp && (rc = get_samples(p, smp, &samples, &s.nsamples))))
        return rc;
    s.digests = d;
    s.values = x;
    s.samples = samples;
    CKH_ASSERT(ckh_record_check_step(&s) == 0);
    return sink(ctx, CKH_REC_STEP, &s);
}

static int rec_resume(struct jparse *p, const struct jval *o, ckh_record_sink sink, void *ctx)
{
    struct ckh_rec_resume s = {0};
    const struct jval *step, *epoch;
    int rc;
    if ((rc = required(p, o, "a resume record", "step", &step)) || (rc = member(p, o, "epoch", &epoch)) ||
        (rc = get_i64(p, step, "step", 0, INT64_MAX, &s.step)) ||
        (rc = get_i64(p, epoch, "epoch", 0, INT64_MAX, &s.epoch)))
        return rc;
    CKH_ASSERT(ckh_record_check_resume(&s) == 0);
    return sink(ctx, CKH_REC_RESUME, &s);
}

static int rec_save(struct jparse *p, const struct jval *o, ckh_record_sink sink, void *ctx)
{
    struct ckh_rec_save s = {0};
    const struct jval *step, *epoch, *ok, *rcv, *err;
    int64_t code = 0;
    int rc;
    if ((rc = required(p, o, "a save record", "step", &step)) || (rc = member(p, o, "epoch", &epoch)) ||
        (rc = required(p, o, "a save record", "ok", &ok)) || (rc = member(p, o, "rc", &rcv)) ||
        (rc = member(p, o, "error", &err)) || (rc = get_i64(p, step, "step", 0, INT64_MAX, &s.step)) ||
        (rc = get_i64(p, epoch, "epoch", 0, INT64_MAX, &s.epoch)))
        return rc;
    if (ok->type != J_TRUE && ok->type != J_FALSE)
        return fail_val(p, ok, "ok", "true or false");
    if (ok->type == J_TRUE && (rc = get_i64(p, rcv, "rc", 0, 0, &code)))
        return rc;
    if (ok->type == J_FALSE) {
        code = -EIO;
        if ((rc = get_i64(p, rcv, "rc", INT_MIN, -1, &code)))
            return rc;
    }
    if (err && err->type != J_STR)
        return fail_val(p, err, "error", "a string");
    s.rc = (int)code;
    s.what = err ? err->text : NULL;
    CKH_ASSERT(ckh_record_check_save(&s) == 0);
    return sink(ctx, CKH_REC_SAVE, &s);
}

static int rec_final(struct jparse *p, const struct jval *o, ckh_record_sink sink, void *ctx)
{
    struct ckh_rec_final s = {0};
    struct ckh_rec_value *x = NULL;
    const char **blobs = NULL;
    const struct jval *epochs, *steps, *total, *dig, *val, *bl;
    int rc;
    if ((rc = member(p, o, "epochs", &epochs)) || (rc = member(p, o, "steps", &steps)) ||
        (rc = member(p, o, "total", &total)) || (rc = member(p, o, "digest", &dig)) ||
        (rc = member(p, o, "values", &val)) || (rc = member(p, o, "blobs", &bl)) ||
        (rc = get_i64(p, epochs, "epochs", 0, INT64_MAX, &s.epochs)) ||
        (rc = get_i64(p, steps, "steps", 0, INT64_MAX, &s.steps)) ||
        (rc = get_i64(p, total, "total", INT64_MIN, INT64_MAX, &s.total)) ||
        (dig && (rc = get_digest(p, dig, "digest", &s.digest))) ||
        (val && (rc = get_values(p, val, NULL, 0, &x, &s.nvalues))) ||
        (bl && (rc = get_blobs(p, bl, &blobs, &s.nblobs))))
        return rc;
    s.has_digest = dig != NULL;
    s.values = x;
    s.blobs = blobs;
    CKH_ASSERT(ckh_record_check_final(&s) == 0);
    return sink(ctx, CKH_REC_FINAL, &s);
}

/* The record the object o describes, handed to sink. */
static int to_record(struct jparse *p, const struct jval *o, ckh_record_sink sink, void *ctx)
{
    static const struct {
        const char *name;
        int (*fn)(struct jparse *, const struct jval *, ckh_record_sink, void *);
    } kinds[] = {{"step", rec_step}, {"resume", rec_resume}, {"save", rec_save}, {"final", rec_final}};
    const struct jval *kind;
    int rc = required(p, o, "the record", "kind", &kind);
    if (rc)
        return rc;
    for (size_t i = 0; kind->type == J_STR && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kind->text, kinds[i].name) == 0)
            return kinds[i].fn(p, o, sink, ctx);
    return fail_val(p, kind, "kind", "\"step\", \"resume\", \"save\" or \"final\"");
}

/* ==== 5. the line loop ==== */

/* One non-blank line: its object, then only whitespace. */
static int parse_line(struct jparse *p, ckh_record_sink sink, void *ctx)
{
    struct jval *obj = NULL;
    int rc;
    if (p->len > CKH_RECORD_JSONL_LINE_MAX)
        return failf(p, 1, "expected a line of at most %u bytes, found %zu bytes",
                     CKH_RECORD_JSONL_LINE_MAX, p->len);
    skip_ws(p);
    if (p->s[p->pos] != '{')
        return fail_at(p, p->pos, "'{' starting a record");
    if ((rc = parse_value(p, 0, &obj)) != 0)
        return rc;
    skip_ws(p);
    if (p->pos < p->len)
        return fail_at(p, p->pos, "the end of the line after the record");
    rc = to_record(p, obj, sink, ctx);
    if (rc != 0 && rc != CKH_EPARSE && rc != CKH_ENOMEM)
        ckh_errf(p->msg, p->msglen, rc, "%s:%zu: the record was refused: %s", p->file, p->lineno,
                 ckh_strerror(rc));
    return rc;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

int ckh_record_jsonl_parse(const char *text, size_t n, const char *file, ckh_record_sink sink,
                           void *ctx, char *msg, size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    if ((!text && n) || !sink)
        return ckh_errf(msg, msglen, CKH_EINVAL, "no text or no sink given");
    struct jparse p = {.file = file ? file : "<jsonl>", .msg = msg, .msglen = msglen};
    int rc = 0;
    for (size_t at = 0; at < n && rc == 0;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (text + at)) : n - at;
        p.lineno++;
        p.s = text + at;
        p.len = len;
        p.pos = 0;
        if (!blank(p.s, len))
            rc = parse_line(&p, sink, ctx);
        if (rc == CKH_ENOMEM && msg && msglen && !msg[0])
            ckh_errf(msg, msglen, rc, "%s:%zu: out of memory", p.file, p.lineno);
        arena_free(&p.arena);
        at += len + 1;
    }
    return rc;
}

/* ==== 6. the writer's round trip (slow asserts) ==== */

#ifdef CKH_SLOW_ASSERTS
/* What reading one written line back found. */
struct readback {
    enum ckh_rec_kind kind; /* the record written */
    const void *rec;
    int calls;              /* records the line gave (one) */
    bool same;              /* each equal to the one written */
};

/* Whether the text reads back as itself: invalid UTF-8 is written as U+FFFD. */
static bool text_same(const char *written, const char *read)
{
    if (!written || !read)
        return written == read;
    for (size_t i = 0, n = strlen(written); i < n; i += utf8_len((const unsigned char *)written + i, n - i))
        if (utf8_len((const unsigned char *)written + i, n - i) == 0)
            return true; /* replaced on the way: nothing to compare */
    return strcmp(written, read) == 0;
}

static bool values_same(const struct ckh_rec_value *a, size_t na, const struct ckh_rec_value *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        /* bit for bit, but every NaN alike: "NaN" carries no payload */
        bool nan = isnan(a[i].value) && isnan(b[i].value);
        if (strcmp(a[i].name, b[i].name) != 0 || (!nan && memcmp(&a[i].value, &b[i].value, sizeof a[i].value)))
            return false;
    }
    return true;
}

static bool step_same(const struct ckh_rec_step *a, const struct ckh_rec_step *b)
{
    if (a->step != b->step || a->epoch != b->epoch || a->ndigests != b->ndigests || a->nsamples != b->nsamples ||
        !values_same(a->values, a->nvalues, b->values, b->nvalues))
        return false;
    for (size_t i = 0; i < a->ndigests; i++)
        if (strcmp(a->digests[i].name, b->digests[i].name) != 0 || a->digests[i].digest != b->digests[i].digest)
            return false;
    return a->nsamples == 0 || memcmp(a->samples, b->samples, a->nsamples * sizeof *a->samples) == 0;
}

static bool final_same(const struct ckh_rec_final *a, const struct ckh_rec_final *b)
{
    if (a->epochs != b->epochs || a->steps != b->steps || a->total != b->total || a->has_digest != b->has_digest ||
        (a->has_digest && a->digest != b->digest) || a->nblobs != b->nblobs ||
        !values_same(a->values, a->nvalues, b->values, b->nvalues))
        return false;
    for (size_t i = 0; i < a->nblobs; i++)
        if (!text_same(a->blobs[i], b->blobs[i]))
            return false;
    return true;
}

static int readback_sink(void *ctx, enum ckh_rec_kind kind, const void *rec)
{
    struct readback *r = ctx;
    r->calls++;
    if (kind != r->kind) {
        r->same = false;
        return 0;
    }
    switch (kind) {
    case CKH_REC_STEP: r->same = r->same && step_same(r->rec, rec); break;
    case CKH_REC_RESUME: {
        const struct ckh_rec_resume *a = r->rec, *b = rec;
        r->same = r->same && a->step == b->step && a->epoch == b->epoch;
        break;
    }
    case CKH_REC_SAVE: {
        const struct ckh_rec_save *a = r->rec, *b = rec;
        r->same = r->same && a->step == b->step && a->epoch == b->epoch && a->rc == b->rc &&
                  text_same(a->what, b->what);
        break;
    }
    case CKH_REC_FINAL: r->same = r->same && final_same(r->rec, rec); break;
    }
    return 0;
}

/* Whether the line in b reads back as the record it encodes. A line past
 * the reader's limit is the program's to keep short, not checked here. */
static bool reads_back(enum ckh_rec_kind kind, const void *rec, const struct sbuf *b)
{
    if (b->len > CKH_RECORD_JSONL_LINE_MAX)
        return true;
    struct readback r = {.kind = kind, .rec = rec, .same = true};
    char msg[256];
    int rc = ckh_record_jsonl_parse(b->p, b->len, "<written>", readback_sink, &r, msg, sizeof msg);
    return rc == CKH_ENOMEM || (rc == 0 && r.calls == 1 && r.same);
}
#endif
