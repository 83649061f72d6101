/*
 * resize_avx2.c - AVX2 versions of the two resample passes, with the same integer results as the
 * scalar ones in resize.c: every product and sum is the same 32-bit integer (Pillow's weights
 * are non-negative for this filter and sum to about 1 << 22, so 255 * sum stays below 2^31 and
 * no order of additions can overflow), and the final clip is done by saturating packs, which
 * give exactly clip8's 0 and 255. Compiled for any x86-64; chosen at run time when the CPU has
 * AVX2 (see resize.c).
 */
#include "resize.h"

#if SOPHON__HAVE_AVX2

#include <immintrin.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2")))

/* Saturating packs implement clip8 once the fraction is shifted out. */
AVX2 static inline __m256i shift_out(__m256i v)
{
    return _mm256_srai_epi32(v, SOPHON__PRECISION_BITS);
}

AVX2 void sophon__resample_v_avx2(uint8_t *dst, const uint8_t *const *rows, size_t n,
                                  const int32_t *k, uint32_t cnt)
{
    const __m256i half = _mm256_set1_epi32(1 << (SOPHON__PRECISION_BITS - 1));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t i = 0;
    uint32_t y;

    /* 32 bytes at a time, the four accumulators kept in registers across all taps. */
    for (; i + 32 <= n; i += 32) {
        __m256i a0 = half, a1 = half, a2 = half, a3 = half, p01, p23;

        for (y = 0; y < cnt; y++) {
            const uint8_t *r = rows[y] + i;
            const __m256i w = _mm256_set1_epi32(k[y]);
            const __m128i lo = _mm_loadu_si128((const __m128i *)r);
            const __m128i hi = _mm_loadu_si128((const __m128i *)(r + 16));

            a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(lo), w));
            a1 = _mm256_add_epi32(
                a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), w));
            a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(hi), w));
            a3 = _mm256_add_epi32(
                a3, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), w));
        }
        /* Packs work per 128-bit lane: dword j of lane l holds bytes 4j..4j+3 of a(j) half l. */
        p01 = _mm256_packs_epi32(shift_out(a0), shift_out(a1));
        p23 = _mm256_packs_epi32(shift_out(a2), shift_out(a3));
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23), order));
    }
    for (; i < n; i++) {
        int32_t s = 1 << (SOPHON__PRECISION_BITS - 1);

        for (y = 0; y < cnt; y++)
            s += rows[y][i] * k[y];
        dst[i] = sophon__clip8(s);
    }
}

/*
 * Horizontal pass, four output pixels per step. A 256-bit accumulator holds two output pixels,
 * one per 128-bit lane, each as four int32 (R, G, B and a junk lane that is never stored). Taps
 * go in pairs through pmaddwd: a shuffle puts input pixels t and t + 1 of a channel side by side
 * as 16-bit words, and the weights are split as k = (kh << 11) + kl with both halves below 2^11,
 * so that sum(p * k) = (sum(p * kh) << 11) + sum(p * kl) exactly. One 16-byte load per lane
 * covers two pairs of taps.
 *
 * c->kx holds, per pair of output pixels and pair of taps, 8 dwords of (kh[t], kh[t + 1]) then 8
 * of (kl[t], kl[t + 1]), each repeated for the 4 channel lanes of both pixels; kx_taps is even.
 */
/* One line per 128-bit lane. */
/* clang-format off */
#define PAIR_MASK(o)                                                                               \
    _mm256_setr_epi8((o), -1, (o) + 3, -1, (o) + 1, -1, (o) + 4, -1, (o) + 2, -1, (o) + 5, -1,    \
                     -1, -1, -1, -1,                                                               \
                     (o), -1, (o) + 3, -1, (o) + 1, -1, (o) + 4, -1, (o) + 2, -1, (o) + 5, -1,     \
                     -1, -1, -1, -1)
/* clang-format on */

AVX2 static inline __m256i load_pair(const uint8_t *a, const uint8_t *b)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                   _mm_loadu_si128((const __m128i *)b), 1);
}

/* Accumulate one pair of taps: hi and lo halves of the weights, at kx. */
AVX2 static inline void taps2(__m256i *hi, __m256i *lo, __m256i px, __m256i mask, const int32_t *kx)
{
    const __m256i w = _mm256_shuffle_epi8(px, mask);

    *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(w, _mm256_loadu_si256((const __m256i *)kx)));
    *lo =
        _mm256_add_epi32(*lo, _mm256_madd_epi16(w, _mm256_loadu_si256((const __m256i *)(kx + 8))));
}

AVX2 static inline __m256i combine(__m256i hi, __m256i lo)
{
    return _mm256_add_epi32(_mm256_slli_epi32(hi, 11), lo);
}

AVX2 void sophon__resample_h_avx2(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c)
{
    const __m256i m01 = PAIR_MASK(0), m23 = PAIR_MASK(6);
    const __m256i half = _mm256_set1_epi32(1 << (SOPHON__PRECISION_BITS - 1));
    /* After the packs: dword 0 = pixel 0, 4 = pixel 1, 1 = pixel 2, 5 = pixel 3. */
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m128i rgb = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    const size_t in_bytes = (size_t)c->in * 3, taps = c->kx_taps;
    /* Every load reads 16 bytes from pixel t, t a multiple of 4 below taps. */
    const size_t last_load = ((taps - 1) & ~(size_t)3) * 3 + 16;
    uint32_t xx = 0, t;

    for (; xx + 4 <= c->out; xx += 4) {
        const uint8_t *p0 = src + (size_t)c->first[xx] * 3,
                      *p1 = src + (size_t)c->first[xx + 1] * 3;
        const uint8_t *p2 = src + (size_t)c->first[xx + 2] * 3,
                      *p3 = src + (size_t)c->first[xx + 3] * 3;
        const int32_t *ka = &c->kx[(size_t)xx / 2 * taps * 8], *kb = ka + taps * 8;
        __m256i ah = _mm256_setzero_si256(), al = ah, bh = ah, bl = ah, a, b, v;
        __m128i o;

        if ((size_t)c->first[xx + 3] * 3 + last_load > in_bytes)
            break; /* Near the row's end: the rest is scalar. */
        for (t = 0; t + 4 <= taps; t += 4, ka += 32, kb += 32) {
            const __m256i pa = load_pair(p0 + 3 * t, p1 + 3 * t);
            const __m256i pb = load_pair(p2 + 3 * t, p3 + 3 * t);

            taps2(&ah, &al, pa, m01, ka);
            taps2(&bh, &bl, pb, m01, kb);
            taps2(&ah, &al, pa, m23, ka + 16);
            taps2(&bh, &bl, pb, m23, kb + 16);
        }
        if (t < taps) {
            taps2(&ah, &al, load_pair(p0 + 3 * t, p1 + 3 * t), m01, ka);
            taps2(&bh, &bl, load_pair(p2 + 3 * t, p3 + 3 * t), m01, kb);
        }
        a = _mm256_add_epi32(combine(ah, al), half);
        b = _mm256_add_epi32(combine(bh, bl), half);
        v = _mm256_packs_epi32(shift_out(a), shift_out(b));
        v = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(v, v), order);
        o = _mm_shuffle_epi8(_mm256_castsi256_si128(v), rgb);
        _mm_storel_epi64((__m128i *)(dst + (size_t)xx * 3), o);
        t = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(o, 8));
        memcpy(dst + (size_t)xx * 3 + 8, &t, 4);
    }
    for (; xx < c->out; xx++)
        sophon__resample_h_pixel(dst + (size_t)xx * 3, src, c, xx);
}

#endif /* SOPHON__HAVE_AVX2 */
