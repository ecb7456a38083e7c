/* Emulated devices, state dicts and key matching for the DDP workload
 * (see include/ckh/ddp.h; the state-dict file format is specified there). */
#include <stdio.h>
#include <string.h>

#include "ckh/endian.h"
#include "ckh/ddp.h"
#include "ckh/err.h"

#define SD_MAGIC "CKHSD001"

/* ---- devices ---- */

uint64_t ckh_ddp_dev_used(const struct ckh_ddp_devices *d, int dev)
{
    if (!d || dev < 0 || dev >= CKH_DDP_MAX_RANKS)
        return 0;
    uint64_t sum = 0;
    for (int r = 0; r < CKH_DDP_MAX_RANKS; r++)
        sum += d->used[r][dev];
    return sum;
}

int ckh_ddp_dev_alloc(struct ckh_ddp_devices *d, int rank, int dev, uint64_t bytes)
{
    if (!d || rank < 0 || rank >= CKH_DDP_MAX_RANKS || dev < 0 || dev >= d->count ||
        dev >= CKH_DDP_MAX_RANKS)
        return CKH_EINVAL;
    uint64_t used = ckh_ddp_dev_used(d, dev);
    if (d->capacity_bytes && used + bytes > d->capacity_bytes)
        return CKH_EOOM_DEVICE;
    d->used[rank][dev] += bytes;
    if (used + bytes > d->peak[dev])
        d->peak[dev] = used + bytes;
    return 0;
}

void ckh_ddp_dev_free(struct ckh_ddp_devices *d, int rank, int dev, uint64_t bytes)
{
    if (!d || rank < 0 || rank >= CKH_DDP_MAX_RANKS || dev < 0 || dev >= CKH_DDP_MAX_RANKS)
        return;
    d->used[rank][dev] -= bytes < d->used[rank][dev] ? bytes : d->used[rank][dev];
}

/* ---- state dicts ---- */

void ckh_ddp_sd_init(struct ckh_ddp_sd *sd, struct ckh_alloc *alloc)
{
    if (!sd)
        return;
    memset(sd, 0, sizeof *sd);
    sd->alloc = alloc;
}

void ckh_ddp_sd_fini(struct ckh_ddp_sd *sd)
{
    if (!sd)
        return;
    for (size_t i = 0; i < sd->count; i++) {
        ckh_free(sd->alloc, sd->entries[i].key);
        ckh_free(sd->alloc, sd->entries[i].data);
    }
    ckh_free(sd->alloc, sd->entries);
    sd->entries = NULL;
    sd->count = sd->cap = 0;
}

const struct ckh_ddp_sd_entry *ckh_ddp_sd_find(const struct ckh_ddp_sd *sd, const char *key)
{
    if (!sd || !key)
        return NULL;
    for (size_t i = 0; i < sd->count; i++)
        if (strcmp(sd->entries[i].key, key) == 0)
            return &sd->entries[i];
    return NULL;
}

int ckh_ddp_sd_put(struct ckh_ddp_sd *sd, const char *key, enum ckh_dtype dtype, int device,
                   const void *data, uint64_t size_bytes)
{
    if (!sd || !key || !key[0] || strlen(key) > CKH_DDP_KEY_MAX || (!data && size_bytes) ||
        !ckh_dtype_size(dtype) || size_bytes % ckh_dtype_size(dtype))
        return CKH_EINVAL;
    if (ckh_ddp_sd_find(sd, key))
        return CKH_EEXISTS;
    if (sd->count == sd->cap) {
        size_t cap = sd->cap ? sd->cap * 2 : 8;
        struct ckh_ddp_sd_entry *e = ckh_realloc(sd->alloc, sd->entries, cap * sizeof *e);
        if (!e)
            return CKH_ENOMEM;
        sd->entries = e;
        sd->cap = cap;
    }
    struct ckh_ddp_sd_entry *e = &sd->entries[sd->count];
    e->key = ckh_strdup(sd->alloc, key);
    e->data = ckh_malloc(sd->alloc, size_bytes ? size_bytes : 1);
    if (!e->key || !e->data) {
        ckh_free(sd->alloc, e->key);
        ckh_free(sd->alloc, e->data);
        return CKH_ENOMEM;
    }
    if (size_bytes)
        memcpy(e->data, data, size_bytes);
    e->dtype = dtype;
    e->device = device;
    e->size_bytes = size_bytes;
    sd->count++;
    return 0;
}

int ckh_ddp_sd_serialize(const struct ckh_ddp_sd *sd, void **out, size_t *n)
{
    if (!sd || !out || !n)
        return CKH_EINVAL;
    size_t total = 8 + 4 + 4;
    for (size_t i = 0; i < sd->count; i++)
        total += 4 + strlen(sd->entries[i].key) + 4 + 4 + 8 + sd->entries[i].size_bytes;
    unsigned char *b = ckh_malloc(sd->alloc, total);
    if (!b)
        return CKH_ENOMEM;
    unsigned char *p = b;
    memcpy(p, SD_MAGIC, 8);
    ckh_put_le32(p + 8, (uint32_t)sd->count);
    p += 12;
    for (size_t i = 0; i < sd->count; i++) {
        const struct ckh_ddp_sd_entry *e = &sd->entries[i];
        uint32_t kl = (uint32_t)strlen(e->key);
        ckh_put_le32(p, kl);
        memcpy(p + 4, e->key, kl);
        p += 4 + kl;
        ckh_put_le32(p, (uint32_t)e->dtype);
        ckh_put_le32(p + 4, (uint32_t)e->device);
        ckh_put_le64(p + 8, e->size_bytes);
        p += 16;
        if (e->size_bytes)
            memcpy(p, e->data, e->size_bytes);
        p += e->size_bytes;
    }
    ckh_put_le32(p, ckh_crc32c(0, b, (size_t)(p - b)));
    *out = b;
    *n = total;
    return 0;
}

int ckh_ddp_sd_parse(struct ckh_ddp_sd *sd, const void *buf, size_t n)
{
    if (!sd || (!buf && n) || sd->count)
        return CKH_EINVAL;
    const unsigned char *b = buf;
    if (n < 16)
        return n >= 8 && memcmp(b, SD_MAGIC, 8) != 0 ? CKH_EFOREIGN : CKH_ETRUNCATED;
    if (memcmp(b, SD_MAGIC, 8) != 0)
        return CKH_EFOREIGN;
    if (ckh_get_le32(b + n - 4) != ckh_crc32c(0, b, n - 4))
        return CKH_ECORRUPT;
    uint32_t count = ckh_get_le32(b + 8);
    size_t pos = 12, end = n - 4;
    int rc = 0;
    char key[CKH_DDP_KEY_MAX + 1];
    for (uint32_t i = 0; i < count && !rc; i++) {
        if (end - pos < 4) {
            rc = CKH_ECORRUPT;
            break;
        }
        uint32_t kl = ckh_get_le32(b + pos);
        pos += 4;
        if (kl == 0 || kl > CKH_DDP_KEY_MAX || end - pos < (size_t)kl + 16) {
            rc = CKH_ECORRUPT;
            break;
        }
        memcpy(key, b + pos, kl);
        key[kl] = '\0';
        pos += kl;
        uint32_t dt = ckh_get_le32(b + pos);
        int32_t dev = (int32_t)ckh_get_le32(b + pos + 4);
        uint64_t size = ckh_get_le64(b + pos + 8);
        pos += 16;
        if (size > end - pos) {
            rc = CKH_ECORRUPT;
            break;
        }
        rc = ckh_ddp_sd_put(sd, key, (enum ckh_dtype)dt, dev, b + pos, size);
        if (rc == CKH_EINVAL || rc == CKH_EEXISTS)
            rc = CKH_ECORRUPT;
        pos += size;
    }
    if (!rc && pos != end)
        rc = CKH_ECORRUPT;
    if (rc)
        ckh_ddp_sd_fini(sd);
    return rc;
}

/* ---- key matching ---- */

static const char MODULE_PREFIX[] = "module.";

static void append(char *msg, size_t msglen, size_t *len, const char *s)
{
    if (!msg || !msglen)
        return;
    int w = snprintf(msg + *len, msglen - *len, "%s", s);
    if (w > 0)
        *len = *len + (size_t)w < msglen ? *len + (size_t)w : msglen - 1;
}

int ckh_ddp_match_keys(const struct ckh_ddp_sd *sd, const char *const *expected, size_t n,
                       enum ckh_ddp_keymode mode, size_t *idx, char *msg, size_t msglen)
{
    if (!sd || (!expected && n) || !idx)
        return CKH_EINVAL;
    size_t plen = sizeof MODULE_PREFIX - 1;
    bool missing_any = false;
    size_t matched = 0;
    for (size_t i = 0; i < n; i++) {
        idx[i] = SIZE_MAX;
        for (size_t j = 0; j < sd->count; j++) {
            const char *k = sd->entries[j].key;
            bool eq = strcmp(k, expected[i]) == 0;
            if (!eq && mode == CKH_DDP_KEYS_NORMALIZE) {
                /* Strip a "module." from the saved key or from the expected one. */
                if (strncmp(k, MODULE_PREFIX, plen) == 0 && strcmp(k + plen, expected[i]) == 0)
                    eq = true;
                else if (strncmp(expected[i], MODULE_PREFIX, plen) == 0 &&
                         strcmp(k, expected[i] + plen) == 0)
                    eq = true;
            }
            if (eq) {
                idx[i] = j;
                matched++;
                break;
            }
        }
        missing_any |= idx[i] == SIZE_MAX;
    }
    if (!missing_any && matched == sd->count)
        return 0;
    size_t len = 0;
    if (msg && msglen)
        msg[0] = '\0';
    append(msg, msglen, &len, "missing keys: [");
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (idx[i] != SIZE_MAX)
            continue;
        append(msg, msglen, &len, first ? "" : ", ");
        append(msg, msglen, &len, expected[i]);
        first = false;
    }
    append(msg, msglen, &len, "]; unexpected keys: [");
    first = true;
    for (size_t j = 0; j < sd->count; j++) {
        bool used = false;
        for (size_t i = 0; i < n && !used; i++)
            used = idx[i] == j;
        if (used)
            continue;
        append(msg, msglen, &len, first ? "" : ", ");
        append(msg, msglen, &len, sd->entries[j].key);
        first = false;
    }
    append(msg, msglen, &len, "]");
    return CKH_EMISMATCH;
}
