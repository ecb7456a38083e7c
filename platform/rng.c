/* Deterministic randomness, hashing, CRC-32C and described bulk data.
 *
 * Specification (stable: traces, digests and checkpoint files depend on it):
 * - ckh_rng: xoshiro256**, seeded by four successive SplitMix64 outputs.
 * - ckh_hash64: consumes the input in 8-byte little-endian words
 *   (zero-padded tail): h = ((h ^ w) * 0x9fb21c651e98df25) ^ (that >> 28)
 *   per word, then the SplitMix64 finalizer of h ^ length. Not
 *   cryptographic.
 * - ckh_seed_derive(seed, name) = ckh_mix64(seed ^ ckh_hash64(INIT, name)).
 * - ckh_gen: byte p of stream (seed, stream) is byte (p mod 8) (little
 *   endian) of ckh_mix64(seed ^ ckh_mix64(stream) ^ (p / 8) * K) with
 *   K = 0x9e3779b97f4a7c15.
 * - CRC-32C: reflected Castagnoli polynomial 0x82f63b78, hardware
 *   instruction when the CPU has SSE4.2 (three interleaved streams joined
 *   by GF(2) shifts), table otherwise (same result).
 */
#include <stdbool.h>
#include <string.h>

#include "ckh/endian.h"
#include "ckh/rng.h"

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void ckh_rng_seed(struct ckh_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        r->s[i] = ckh_mix64(x);
        x += 0x9e3779b97f4a7c15ull;
    }
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1;
}

uint64_t ckh_rng_next(struct ckh_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t ckh_rng_below(struct ckh_rng *r, uint64_t bound)
{
    if (bound == 0)
        return 0;
    /* Rejection sampling: the threshold removes the modulo bias. */
    uint64_t threshold = -bound % bound;
    for (;;) {
        uint64_t x = ckh_rng_next(r);
        if (x >= threshold)
            return x % bound;
    }
}

double ckh_rng_unit(struct ckh_rng *r)
{
    return (double)(ckh_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t ckh_hash64(uint64_t h, const void *data, size_t len)
{
    /* One multiply and one xor-shift per word (both bijective, so no word
     * is lost), the full SplitMix64 finalizer once at the end: the trace
     * hashes every simulated operation, so this sits on the hot path. */
    const unsigned char *p = data;
    size_t n = len;
    while (n >= 8) {
        h = (h ^ ckh_get_le64(p)) * 0x9fb21c651e98df25ull;
        h ^= h >> 28;
        p += 8;
        n -= 8;
    }
    if (n) {
        unsigned char tail[8] = {0};
        memcpy(tail, p, n);
        h = (h ^ ckh_get_le64(tail)) * 0x9fb21c651e98df25ull;
        h ^= h >> 28;
    }
    return ckh_mix64(h ^ (uint64_t)len);
}

uint64_t ckh_seed_derive(uint64_t seed, const char *name)
{
    return ckh_mix64(seed ^ ckh_hash64(CKH_HASH_INIT, name, name ? strlen(name) : 0));
}

uint64_t ckh_node_rand_base(uint64_t seed, const char *node_name)
{
    return ckh_seed_derive(ckh_seed_derive(seed, "node-rand"), node_name != NULL ? node_name : "");
}

/* ---- CRC-32C ---- */

static uint32_t crc_table[8][256];
static bool crc_ready;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
    crc_ready = true;
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    if (!crc_ready)
        crc_init();
    while (n >= 8) {
        uint64_t w = ckh_get_le64(p) ^ crc;
        crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
              crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
              crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
              crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

/* Three-way hardware CRC: the crc32 instruction has a latency of about
 * three cycles but a throughput of one per cycle, so three independent
 * streams over adjacent blocks run about three times faster than one. The
 * streams are joined with the linearity of the CRC register: after a block
 * of L bytes that started from 0, the state is shift_L(previous) xor
 * crc(block), where shift_L multiplies by x^(8L) modulo the polynomial. */
#define CRC_BLOCK 4096

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    for (int i = 0; vec; i++, vec >>= 1)
        if (vec & 1)
            sum ^= mat[i];
    return sum;
}

static void gf2_square(uint32_t *sq, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        sq[n] = gf2_times(mat, mat[n]);
}

static uint32_t shift_block[32]; /* operator: append CRC_BLOCK zero bytes */
static bool shift_ready;

static void shift_init(void)
{
    uint32_t a[32], b[32];
    a[0] = 0x82f63b78u; /* one zero bit */
    for (int n = 1; n < 32; n++)
        a[n] = 1u << (n - 1);
    gf2_square(b, a); /* 2 bits */
    gf2_square(a, b); /* 4 bits */
    gf2_square(b, a); /* 1 byte */
    /* b is the operator for 1 byte; square it log2(CRC_BLOCK) times. */
    for (unsigned len = 1; len < CRC_BLOCK; len <<= 1) {
        gf2_square(a, b);
        memcpy(b, a, sizeof a);
    }
    memcpy(shift_block, b, sizeof b);
    shift_ready = true;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t n)
{
    uint64_t c = crc;
    if (n >= 3 * CRC_BLOCK) {
        if (!shift_ready)
            shift_init();
        while (n >= 3 * CRC_BLOCK) {
            uint64_t c1 = 0, c2 = 0;
            const unsigned char *q = p;
            for (size_t i = 0; i < CRC_BLOCK; i += 8, q += 8) {
                uint64_t w0, w1, w2;
                memcpy(&w0, q, 8);
                memcpy(&w1, q + CRC_BLOCK, 8);
                memcpy(&w2, q + 2 * CRC_BLOCK, 8);
                c = _mm_crc32_u64(c, w0);
                c1 = _mm_crc32_u64(c1, w1);
                c2 = _mm_crc32_u64(c2, w2);
            }
            c = gf2_times(shift_block, (uint32_t)c) ^ (uint32_t)c1;
            c = gf2_times(shift_block, (uint32_t)c) ^ (uint32_t)c2;
            p += 3 * CRC_BLOCK;
            n -= 3 * CRC_BLOCK;
        }
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#endif

uint32_t ckh_crc32c(uint32_t crc, const void *data, size_t len)
{
    crc = ~crc;
#if defined(__x86_64__)
    static int has_hw = -1;
    if (has_hw < 0) {
        __builtin_cpu_init();
        has_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    if (has_hw)
        return ~crc_hw(crc, data, len);
#endif
    return ~crc_sw(crc, data, len);
}

/* ---- described bulk data ---- */

static inline uint64_t gen_word(uint64_t key, uint64_t w)
{
    return ckh_mix64(key ^ (w * 0x9e3779b97f4a7c15ull));
}

void ckh_gen_fill(const struct ckh_gen *g, uint64_t pos, void *buf, size_t n)
{
    unsigned char *out = buf;
    uint64_t key = g->seed ^ ckh_mix64(g->stream);
    uint64_t p = g->offset + pos;
    while (n && (p & 7)) {
        *out++ = (unsigned char)(gen_word(key, p >> 3) >> (8 * (p & 7)));
        p++;
        n--;
    }
    while (n >= 8) {
        uint64_t v = gen_word(key, p >> 3);
        for (int i = 0; i < 8; i++)
            out[i] = (unsigned char)(v >> (8 * i));
        out += 8;
        p += 8;
        n -= 8;
    }
    while (n) {
        *out++ = (unsigned char)(gen_word(key, p >> 3) >> (8 * (p & 7)));
        p++;
        n--;
    }
}
