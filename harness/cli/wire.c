/* Worker answers of the ckh command (see wire.h). */
#include "cli/wire.h"
#include "model/scenario.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "exec/pool.h"

int ckh_wire_open(struct ckh_wire *w)
{
    memset(w, 0, sizeof *w);
    w->f = open_memstream(&w->buf, &w->len);
    return w->f ? 0 : CKH_ENOMEM;
}

int ckh_wire_send(struct ckh_wire *w, int fd)
{
    int rc = w->f && !ferror(w->f) ? 0 : CKH_ENOMEM;
    if (w->f && fclose(w->f) != 0)
        rc = CKH_ENOMEM;
    if (rc == 0)
        rc = ckh_pool_reply(fd, w->buf, w->len);
    free(w->buf);
    memset(w, 0, sizeof *w);
    return rc;
}

FILE *ckh_wire_reader(const void *data, size_t len)
{
    if (!data || !len) /* no answer: nothing to read (fmemopen refuses size 0) */
        return NULL;
    return fmemopen((void *)data, len, "rb");
}

void ckh_wire_put_str(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    CKH_ASSERT(n < UINT32_MAX); /* UINT32_MAX stands for NULL; a longer length would be cut */
    uint32_t len = s ? (uint32_t)n : UINT32_MAX;
    fwrite(&len, sizeof len, 1, f);
    if (s)
        fwrite(s, 1, len, f);
}

void ckh_wire_put_u64(FILE *f, uint64_t v)
{
    fwrite(&v, sizeof v, 1, f);
}

int ckh_wire_get_str(FILE *f, char **out)
{
    uint32_t len;
    *out = NULL;
    if (fread(&len, sizeof len, 1, f) != 1)
        return CKH_ETRUNCATED;
    if (len == UINT32_MAX)
        return 0;
    /* Every string ckh sends comes from a scenario file (at most
     * CKH_SCN_FILE_BYTES_MAX bytes) or is shorter: longer is corruption. */
    if (len > CKH_SCN_FILE_BYTES_MAX)
        return CKH_ECORRUPT;
    char *s = malloc((size_t)len + 1);
    if (!s)
        return CKH_ENOMEM;
    if (len && fread(s, 1, len, f) != len) {
        free(s);
        return CKH_ETRUNCATED;
    }
    s[len] = '\0';
    *out = s;
    return 0;
}

int ckh_wire_get_u64(FILE *f, uint64_t *v)
{
    return fread(v, sizeof *v, 1, f) == 1 ? 0 : CKH_ETRUNCATED;
}
