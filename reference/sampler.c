/* Resumable samplers (see include/ckh/sampler.h for the order, the padding,
 * the resharding rule and the state format). */
#include "ckh/endian.h"
#include "ckh/sampler.h"

#include <stdio.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/rng.h"

#define STATE_MAGIC "CKHSMPL1"
#define KIND_DIST 0u
#define KIND_SHARD 1u

/* The decoded state, shared by both samplers. */
struct state {
    uint32_t kind, world, drop_last, epoch_world, pct;
    int64_t epoch;
    uint64_t progress, seed, n, epoch_offset;
};

static void encode(const struct state *st, unsigned char *b)
{
    memset(b, 0, CKH_SAMPLER_STATE_BYTES);
    memcpy(b, STATE_MAGIC, 8);
    ckh_put_le32(b + 8, st->kind);
    ckh_put_le32(b + 12, st->world);
    ckh_put_le64(b + 16, (uint64_t)st->epoch);
    ckh_put_le64(b + 24, st->progress);
    ckh_put_le64(b + 32, st->seed);
    ckh_put_le64(b + 40, st->n);
    ckh_put_le32(b + 48, st->drop_last);
    ckh_put_le32(b + 52, st->epoch_world);
    ckh_put_le64(b + 56, st->epoch_offset);
    ckh_put_le32(b + 64, st->pct);
    ckh_put_le32(b + 72, ckh_crc32c(0, b, 72));
}

static int decode(const void *buf, size_t n, struct state *st, char *msg, size_t msglen)
{
    const unsigned char *b = buf;
    if (!buf)
        return CKH_EINVAL;
    if (n < CKH_SAMPLER_STATE_BYTES)
        return ckh_errf(msg, msglen, CKH_ETRUNCATED, "sampler state is %zu bytes, expected %d", n,
                     CKH_SAMPLER_STATE_BYTES);
    if (memcmp(b, STATE_MAGIC, 8) != 0)
        return ckh_errf(msg, msglen, CKH_EFOREIGN, "not a sampler state (bad magic)");
    if (ckh_get_le32(b + 72) != ckh_crc32c(0, b, 72))
        return ckh_errf(msg, msglen, CKH_ECORRUPT, "sampler state checksum mismatch");
    st->kind = ckh_get_le32(b + 8);
    st->world = ckh_get_le32(b + 12);
    st->epoch = (int64_t)ckh_get_le64(b + 16);
    st->progress = ckh_get_le64(b + 24);
    st->seed = ckh_get_le64(b + 32);
    st->n = ckh_get_le64(b + 40);
    st->drop_last = ckh_get_le32(b + 48);
    st->epoch_world = ckh_get_le32(b + 52);
    st->epoch_offset = ckh_get_le64(b + 56);
    st->pct = ckh_get_le32(b + 64);
    if (st->world < 1 || st->world > (1u << 20) || st->epoch < 0)
        return ckh_errf(msg, msglen, CKH_ECORRUPT, "sampler state has world %u epoch %lld", st->world,
                     (long long)st->epoch);
    return 0;
}

/* Fisher-Yates permutation of 0..n-1 from rng. */
static void permute(uint64_t *a, uint64_t n, struct ckh_rng *rng)
{
    for (uint64_t i = 0; i < n; i++)
        a[i] = i;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = ckh_rng_below(rng, i);
        uint64_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

static uint64_t epoch_seed(uint64_t seed, int64_t epoch, int64_t salt)
{
    return ckh_mix64(seed ^ ckh_mix64((uint64_t)epoch * 2 + 1) ^ ckh_mix64(~(uint64_t)salt));
}

/* ---- distributed sampler ---- */

int ckh_dsampler_init(struct ckh_dsampler *s, struct ckh_alloc *alloc, uint64_t n, int world,
                      int rank, uint64_t seed, bool drop_last)
{
    if (!s || n == 0 || world < 1 || rank < 0 || rank >= world || (drop_last && n < (uint64_t)world))
        return CKH_EINVAL;
    memset(s, 0, sizeof *s);
    s->alloc = alloc;
    s->n = n;
    s->seed = seed;
    s->drop_last = drop_last;
    s->world = world;
    s->rank = rank;
    s->epoch_world = world;
    s->order_epoch = -1;
    return 0;
}

void ckh_dsampler_fini(struct ckh_dsampler *s)
{
    if (!s)
        return;
    ckh_free(s->alloc, s->order);
    s->order = NULL;
    s->order_epoch = -1;
}

static uint64_t total_for(const struct ckh_dsampler *s, int world)
{
    uint64_t w = (uint64_t)world;
    return s->drop_last ? s->n / w * w : (s->n + w - 1) / w * w;
}

/* Builds the order of the current epoch for epoch_world if not cached. */
static int ensure_order(struct ckh_dsampler *s)
{
    if (s->order && s->order_epoch == s->epoch && s->order_world == s->epoch_world)
        return 0;
    uint64_t total = total_for(s, s->epoch_world);
    uint64_t alloc_n = total > s->n ? total : s->n;
    uint64_t *o = ckh_realloc(s->alloc, s->order, alloc_n * sizeof *o);
    if (!o)
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_ENOMEM, "sampler order of %llu entries",
                     (unsigned long long)alloc_n);
    s->order = o;
    struct ckh_rng rng;
    ckh_rng_seed(&rng, epoch_seed(s->seed, s->epoch, -1));
    permute(o, s->n, &rng);
    for (uint64_t i = s->n; i < total; i++) /* padding repeats the start */
        o[i] = o[i - s->n];
    s->order_total = total;
    s->order_epoch = s->epoch;
    s->order_world = s->epoch_world;
    return 0;
}

int ckh_dsampler_set_epoch(struct ckh_dsampler *s, int64_t epoch)
{
    if (!s || epoch < 0)
        return CKH_EINVAL;
    s->epoch = epoch;
    s->progress = 0;
    s->epoch_world = s->world;
    s->epoch_offset = 0;
    return 0;
}

static uint64_t len_of_rank(const struct ckh_dsampler *s, int rank)
{
    uint64_t total = total_for(s, s->epoch_world);
    if (s->epoch_offset + (uint64_t)rank >= total)
        return 0;
    uint64_t left = total - s->epoch_offset - (uint64_t)rank;
    return (left + (uint64_t)s->world - 1) / (uint64_t)s->world;
}

uint64_t ckh_dsampler_len(const struct ckh_dsampler *s)
{
    return s ? len_of_rank(s, s->rank) : 0;
}

uint64_t ckh_dsampler_len_max(const struct ckh_dsampler *s)
{
    return s ? len_of_rank(s, 0) : 0;
}

uint64_t ckh_dsampler_remaining(const struct ckh_dsampler *s)
{
    uint64_t len = ckh_dsampler_len(s);
    return s && s->progress < len ? len - s->progress : 0;
}

int ckh_dsampler_get(struct ckh_dsampler *s, uint64_t k, uint64_t *index)
{
    if (!s || !index)
        return CKH_EINVAL;
    if (k >= ckh_dsampler_remaining(s))
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EINVAL,
                     "sample %llu past the end of epoch %lld",
                     (unsigned long long)(s->progress + k), (long long)s->epoch);
    int rc = ensure_order(s);
    if (rc)
        return rc;
    uint64_t pos = s->epoch_offset + (uint64_t)s->rank + (s->progress + k) * (uint64_t)s->world;
    *index = s->order[pos];
    return 0;
}

int ckh_dsampler_advance(struct ckh_dsampler *s, uint64_t n)
{
    if (!s)
        return CKH_EINVAL;
    if (n > ckh_dsampler_remaining(s))
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EINVAL,
                     "advance by %llu past the end of epoch %lld (%llu left)", (unsigned long long)n,
                     (long long)s->epoch, (unsigned long long)ckh_dsampler_remaining(s));
    s->progress += n;
    return 0;
}

int ckh_dsampler_save(const struct ckh_dsampler *s, const struct ckh_defect_set *defects,
                      void *buf, size_t n)
{
    if (!s || !buf || n < CKH_SAMPLER_STATE_BYTES)
        return CKH_EINVAL;
    struct state st = {
        .kind = KIND_DIST,
        .world = (uint32_t)s->world,
        .drop_last = s->drop_last,
        .epoch_world = (uint32_t)s->epoch_world,
        .epoch = s->epoch,
        .progress = ckh_defect_on(defects, CKH_DEFECT_SAMPLER_PROGRESS_NOT_SAVED) ? 0 : s->progress,
        .seed = s->seed,
        .n = s->n,
        .epoch_offset = s->epoch_offset,
    };
    encode(&st, buf);
    return 0;
}

int ckh_dsampler_load(struct ckh_dsampler *s, const void *buf, size_t n, bool reshard)
{
    return ckh_dsampler_load_defects(s, buf, n, reshard, NULL);
}

int ckh_dsampler_load_defects(struct ckh_dsampler *s, const void *buf, size_t n, bool reshard,
                              const struct ckh_defect_set *defects)
{
    if (!s)
        return CKH_EINVAL;
    struct state st;
    int rc = decode(buf, n, &st, s->errmsg, sizeof s->errmsg);
    if (rc)
        return rc;
    if (st.kind != KIND_DIST)
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EMISMATCH,
                     "state belongs to a sharded sampler, not a distributed one");
    if (st.n != s->n || st.seed != s->seed || (bool)st.drop_last != s->drop_last)
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EMISMATCH,
                     "sampler state is for n=%llu seed=%llu drop_last=%u, this sampler has "
                     "n=%llu seed=%llu drop_last=%d",
                     (unsigned long long)st.n, (unsigned long long)st.seed, st.drop_last,
                     (unsigned long long)s->n, (unsigned long long)s->seed, s->drop_last);
    if (st.epoch_world < 1 || st.epoch_world > (1u << 20))
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_ECORRUPT, "bad epoch world size %u",
                     st.epoch_world);
    struct ckh_dsampler probe = *s;
    probe.world = (int)st.world;
    probe.epoch_world = (int)st.epoch_world;
    probe.epoch_offset = st.epoch_offset;
    probe.epoch = st.epoch;
    probe.rank = 0;
    uint64_t total = total_for(&probe, probe.epoch_world);
    if (st.epoch_offset > total || st.progress > len_of_rank(&probe, 0))
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_ECORRUPT,
                     "sampler state progress %llu is past its epoch",
                     (unsigned long long)st.progress);
    if ((int)st.world != s->world) {
        if (!reshard)
            return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EMISMATCH,
                         "sampler state was saved with world size %u, loading with world size "
                         "%d; ask for resharding to redistribute the rest of epoch %lld",
                         st.world, s->world, (long long)st.epoch);
        uint64_t consumed = st.epoch_offset + st.progress * st.world;
        if (ckh_defect_on(defects, CKH_DEFECT_RESHARD_IGNORED)) {
            ckh_dsampler_set_epoch(s, st.epoch);
            uint64_t len = ckh_dsampler_len(s);
            s->progress = st.progress < len ? st.progress : len;
            return 0;
        }
        if (consumed == 0) {
            ckh_dsampler_set_epoch(s, st.epoch); /* untouched: a fresh epoch for this world */
            return 0;
        }
        s->epoch = st.epoch;
        s->epoch_world = (int)st.epoch_world;
        s->epoch_offset = consumed < total ? consumed : total;
        s->progress = 0;
        return 0;
    }
    s->epoch = st.epoch;
    s->progress = st.progress;
    s->epoch_world = (int)st.epoch_world;
    s->epoch_offset = st.epoch_offset;
    return 0;
}

uint64_t ckh_dsampler_digest(const struct ckh_dsampler *s)
{
    if (!s)
        return 0;
    uint64_t v[6] = {(uint64_t)s->epoch, s->progress, s->seed, (uint64_t)s->world,
                     (uint64_t)s->epoch_world, s->epoch_offset};
    return ckh_hash64(CKH_HASH_INIT, v, sizeof v);
}

/* ---- sharded sampler ---- */

int ckh_ssampler_init(struct ckh_ssampler *s, struct ckh_alloc *alloc, uint64_t n, int world,
                      int rank, uint32_t pct, uint64_t seed)
{
    if (!s || n == 0 || world < 1 || rank < 0 || rank >= world || pct < 1 || pct > 100)
        return CKH_EINVAL;
    memset(s, 0, sizeof *s);
    s->alloc = alloc;
    s->n = n;
    s->world = world;
    s->rank = rank;
    s->pct = pct;
    s->seed = seed;
    s->order_epoch = -1;
    uint64_t m = (n * pct + 99) / 100;
    if (m > n)
        m = n;
    if (m == 0)
        m = 1;
    s->shard = ckh_malloc(alloc, m * sizeof *s->shard);
    s->order = ckh_malloc(alloc, m * sizeof *s->order);
    if (!s->shard || !s->order) {
        ckh_free(alloc, s->shard);
        ckh_free(alloc, s->order);
        s->shard = s->order = NULL;
        return CKH_ENOMEM;
    }
    s->m = m;
    uint64_t start = (uint64_t)rank * n / (uint64_t)world;
    for (uint64_t j = 0; j < m; j++)
        s->shard[j] = (start + j) % n;
    return 0;
}

void ckh_ssampler_fini(struct ckh_ssampler *s)
{
    if (!s)
        return;
    ckh_free(s->alloc, s->shard);
    ckh_free(s->alloc, s->order);
    s->shard = s->order = NULL;
    s->m = 0;
}

int ckh_ssampler_set_epoch(struct ckh_ssampler *s, int64_t epoch)
{
    if (!s || epoch < 0)
        return CKH_EINVAL;
    s->epoch = epoch;
    s->progress = 0;
    return 0;
}

uint64_t ckh_ssampler_len(const struct ckh_ssampler *s)
{
    return s ? s->m : 0;
}

uint64_t ckh_ssampler_remaining(const struct ckh_ssampler *s)
{
    return s && s->progress < s->m ? s->m - s->progress : 0;
}

int ckh_ssampler_get(struct ckh_ssampler *s, uint64_t k, uint64_t *index)
{
    if (!s || !index || !s->shard)
        return CKH_EINVAL;
    if (k >= ckh_ssampler_remaining(s))
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EINVAL, "sample past the end of the shard");
    if (s->order_epoch != s->epoch) {
        struct ckh_rng rng;
        ckh_rng_seed(&rng, epoch_seed(s->seed, s->epoch, s->rank));
        permute(s->order, s->m, &rng);
        s->order_epoch = s->epoch;
    }
    *index = s->shard[s->order[s->progress + k]];
    return 0;
}

int ckh_ssampler_advance(struct ckh_ssampler *s, uint64_t n)
{
    if (!s)
        return CKH_EINVAL;
    if (n > ckh_ssampler_remaining(s))
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EINVAL, "advance past the end of the shard");
    s->progress += n;
    return 0;
}

int ckh_ssampler_save(const struct ckh_ssampler *s, const struct ckh_defect_set *defects, void *buf,
                      size_t n)
{
    if (!s || !buf || n < CKH_SAMPLER_STATE_BYTES)
        return CKH_EINVAL;
    struct state st = {
        .kind = KIND_SHARD,
        .world = (uint32_t)s->world,
        .epoch_world = (uint32_t)s->world,
        .epoch = s->epoch,
        .progress = ckh_defect_on(defects, CKH_DEFECT_SAMPLER_PROGRESS_NOT_SAVED) ? 0 : s->progress,
        .seed = s->seed,
        .n = s->n,
        .pct = s->pct,
    };
    encode(&st, buf);
    return 0;
}

int ckh_ssampler_load(struct ckh_ssampler *s, const void *buf, size_t n, bool reshard)
{
    if (!s)
        return CKH_EINVAL;
    struct state st;
    int rc = decode(buf, n, &st, s->errmsg, sizeof s->errmsg);
    if (rc)
        return rc;
    if (st.kind != KIND_SHARD)
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EMISMATCH,
                     "state belongs to a distributed sampler, not a sharded one");
    if ((int)st.world != s->world)
        return ckh_errf(s->errmsg, sizeof s->errmsg, reshard ? CKH_EUNSUPPORTED : CKH_EMISMATCH,
                     "sharded sampler state was saved with world size %u, loading with %d%s",
                     st.world, s->world,
                     reshard ? "; a sharded dataset cannot be resharded (shards depend on the "
                               "world size)"
                             : "");
    if (st.n != s->n || st.seed != s->seed || st.pct != s->pct)
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_EMISMATCH,
                     "sharded sampler state is for n=%llu seed=%llu pct=%u",
                     (unsigned long long)st.n, (unsigned long long)st.seed, st.pct);
    if (st.progress > s->m)
        return ckh_errf(s->errmsg, sizeof s->errmsg, CKH_ECORRUPT, "progress past the shard");
    s->epoch = st.epoch;
    s->progress = st.progress;
    return 0;
}
