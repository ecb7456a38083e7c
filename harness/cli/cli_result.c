/* One scenario's result as bytes (see cli_result.h). */
#include "cli/cli_result.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/assert.h"
#include "ckh/err.h"
#include "cli/wire.h"

#ifdef CKH_SLOW_ASSERTS
static bool reads_back(const struct ckh_report_result *r);
#endif

static int result_write(FILE *f, const struct ckh_report_result *r)
{
    int32_t verdict = (int32_t)r->verdict;
    fwrite(&verdict, sizeof verdict, 1, f);
    ckh_wire_put_str(f, r->name);
    ckh_wire_put_str(f, r->file);
    ckh_wire_put_str(f, r->failed_oracle);
    ckh_wire_put_str(f, r->message);
    ckh_wire_put_str(f, r->replay);
    uint64_t nums[7] = {(uint64_t)r->first_divergent_step, r->seed, r->virtual_ns, r->wall_ms,
                        r->runs, r->restarts, r->noracles};
    fwrite(nums, sizeof nums, 1, f);
    for (size_t i = 0; i < r->noracles; i++) {
        ckh_wire_put_str(f, r->oracles[i].name);
        uint8_t passed = r->oracles[i].passed;
        fwrite(&passed, 1, 1, f);
        ckh_wire_put_str(f, r->oracles[i].detail);
    }
    uint64_t nplugins = r->nplugins;
    fwrite(&nplugins, sizeof nplugins, 1, f);
    for (size_t i = 0; i < r->nplugins; i++) {
        const struct ckh_report_plugin *p = &r->plugins[i];
        ckh_wire_put_str(f, p->role);
        ckh_wire_put_str(f, p->name);
        ckh_wire_put_str(f, p->path);
        ckh_wire_put_str(f, p->id);
        ckh_wire_put_str(f, p->shadowed);
    }
    uint8_t has_timeline = r->timeline != NULL;
    fwrite(&has_timeline, 1, 1, f);
    if (has_timeline && ckh_report_timeline_write(f, r->timeline) != 0)
        return -EIO;
    return ferror(f) ? -EIO : 0;
}

int ckh_cli_result_write(FILE *f, const struct ckh_report_result *r)
{
    CKH_ASSERT(f && r && (r->noracles == 0 || r->oracles));
    CKH_ASSERT_SLOW(reads_back(r));
    return result_write(f, r);
}

static int result_read_oracles(FILE *f, struct ckh_report_result *r, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        char *name = NULL, *detail = NULL;
        uint8_t passed = 0;
        int rc = ckh_wire_get_str(f, &name);
        if (rc == 0 && fread(&passed, 1, 1, f) != 1)
            rc = CKH_ETRUNCATED;
        rc = rc ? rc : ckh_wire_get_str(f, &detail);
        if (rc == 0)
            rc = ckh_report_add_oracle(r, name ? name : "?", passed != 0, detail);
        free(name);
        free(detail);
        if (rc)
            return rc;
    }
    return 0;
}

static int result_read_plugins(FILE *f, struct ckh_report_result *r)
{
    uint64_t n;
    if (fread(&n, sizeof n, 1, f) != 1)
        return CKH_ETRUNCATED;
    for (uint64_t i = 0; i < n; i++) {
        char *s[5] = {NULL, NULL, NULL, NULL, NULL}; /* role, name, path, id, shadowed */
        int rc = 0;
        for (size_t k = 0; k < 5 && rc == 0; k++)
            rc = ckh_wire_get_str(f, &s[k]);
        if (rc == 0)
            rc = ckh_report_add_plugin(r, s[0] ? s[0] : "?", s[1] ? s[1] : "?", s[2] ? s[2] : "?",
                                       s[3] ? s[3] : "?", s[4]);
        for (size_t k = 0; k < 5; k++)
            free(s[k]);
        if (rc)
            return rc;
    }
    return 0;
}

int ckh_cli_result_read(FILE *f, struct ckh_report_result *r)
{
    int32_t verdict;
    uint64_t nums[7];
    if (fread(&verdict, sizeof verdict, 1, f) != 1)
        return CKH_ETRUNCATED;
    if (verdict < CKH_VERDICT_PASS || verdict > CKH_VERDICT_ERROR)
        return CKH_ECORRUPT;
    r->verdict = (enum ckh_verdict)verdict;
    int rc;
    if ((rc = ckh_wire_get_str(f, &r->name)) || (rc = ckh_wire_get_str(f, &r->file)) ||
        (rc = ckh_wire_get_str(f, &r->failed_oracle)) || (rc = ckh_wire_get_str(f, &r->message)) ||
        (rc = ckh_wire_get_str(f, &r->replay)))
        return rc;
    if (fread(nums, sizeof nums, 1, f) != 1)
        return CKH_ETRUNCATED;
    r->first_divergent_step = (int64_t)nums[0];
    r->seed = nums[1];
    r->virtual_ns = nums[2];
    r->wall_ms = nums[3];
    r->runs = (uint32_t)nums[4];
    r->restarts = (uint32_t)nums[5];
    if ((rc = result_read_oracles(f, r, nums[6])) != 0 || (rc = result_read_plugins(f, r)) != 0)
        return rc;
    uint8_t has_timeline = 0;
    if (fread(&has_timeline, 1, 1, f) != 1)
        return CKH_ETRUNCATED;
    return has_timeline ? ckh_report_timeline_read(f, &r->timeline) : 0;
}

#ifdef CKH_SLOW_ASSERTS
/* r's bytes into *buf (malloc'd); false when no memory. */
static bool encode(const struct ckh_report_result *r, char **buf, size_t *len)
{
    *buf = NULL;
    FILE *f = open_memstream(buf, len);
    if (!f)
        return false;
    int rc = result_write(f, r);
    if (fclose(f) != 0 || rc != 0) {
        free(*buf);
        return false;
    }
    return true;
}

/* Whether r's bytes read back as a result whose bytes are the same. */
static bool reads_back(const struct ckh_report_result *r)
{
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (!encode(r, &a, &na))
        return true; /* no memory: nothing to compare */
    struct ckh_report_result back;
    ckh_report_result_init(&back);
    FILE *f = ckh_wire_reader(a, na);
    int rc = f ? ckh_cli_result_read(f, &back) : CKH_ENOMEM;
    bool rest = f && fgetc(f) != EOF; /* the reader took every byte */
    if (f)
        fclose(f);
    bool same = rc == CKH_ENOMEM;
    if (rc == 0 && !rest && encode(&back, &b, &nb))
        same = na == nb && memcmp(a, b, na) == 0;
    else if (rc == 0 && !rest)
        same = true; /* no memory for the second encoding */
    free(a);
    free(b);
    ckh_report_result_clear(&back);
    return same;
}
#endif
