/* The bytes a pool worker of the ckh command sends back (harness/exec/pool.h):
 * a stdio stream in memory on each side, with length-prefixed strings
 * (u32 length, UINT32_MAX for NULL, then the bytes) and native integers
 * (parent and worker are the same program on the same machine).
 */
#ifndef CKH_CLI_WIRE_H
#define CKH_CLI_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A message being written in a worker. */
struct ckh_wire {
    char *buf;  /* the bytes (open_memstream's) */
    size_t len; /* their count */
    FILE *f;    /* the stream to write to (NULL: could not open) */
};

/* Opens w->f on an empty message. Returns 0 or CKH_ENOMEM. */
int ckh_wire_open(struct ckh_wire *w);

/* Closes w->f, writes the message to fd and frees it. Returns 0 or a
 * negative code (the message is freed either way). */
int ckh_wire_send(struct ckh_wire *w, int fd);

/* A stream reading len bytes of data; NULL when len is 0 or on failure
 * (fclose it). */
FILE *ckh_wire_reader(const void *data, size_t len);

void ckh_wire_put_str(FILE *f, const char *s);
void ckh_wire_put_u64(FILE *f, uint64_t v);

/* Reads a string into *out (malloc'd; NULL when NULL was sent). Returns 0,
 * CKH_ETRUNCATED, CKH_ECORRUPT (longer than 16 MiB) or CKH_ENOMEM. */
int ckh_wire_get_str(FILE *f, char **out);
/* Returns 0 or CKH_ETRUNCATED. */
int ckh_wire_get_u64(FILE *f, uint64_t *v);

#endif
