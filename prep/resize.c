/*
 * resize.c - the fixed-point bilinear resample of Pillow 9.4, reproduced operation for
 * operation: same double-precision weights, same rounding to 22 fractional bits, same integer
 * accumulation and clipping. Must be compiled without -ffast-math and without FP contraction.
 */
#include "resize.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Pillow's bilinear_filter: the triangle 1 - |x| on [-1, 1]. Support 1.0. */
static double triangle(double x)
{
    if (x < 0.0)
        x = -x;
    if (x < 1.0)
        return 1.0 - x;
    return 0.0;
}

/*
 * Pillow's normalize_coeffs_8bpc: round half away from zero via a truncating cast.
 * (1 << PRECISION_BITS) is an int in Pillow; the product is done in double.
 */
static int32_t fixed_point(double w)
{
    if (w < 0)
        return (int32_t)(-0.5 + w * (1 << SOPHON__PRECISION_BITS));
    return (int32_t)(0.5 + w * (1 << SOPHON__PRECISION_BITS));
}

void sophon__coeffs_free(struct sophon__coeffs *c)
{
    if (c == NULL)
        return;
    free(c->first);
    free(c->count);
    free(c->k);
    free(c->kx);
    c->first = NULL;
    c->count = NULL;
    c->k = NULL;
    c->kx = NULL;
    c->kx_taps = 0;
}

int sophon__coeffs_init(struct sophon__coeffs *c, uint32_t in, uint32_t out)
{
    return sophon__coeffs_init_window(c, in, out, 0, out);
}

int sophon__coeffs_init_window(struct sophon__coeffs *c, uint32_t in, uint32_t out, uint32_t first,
                               uint32_t n)
{
    /* Pillow passes the box as floats (in0 = 0, in1 = in); keep the same types. */
    const float in0 = 0.0f, in1 = (float)in;
    double scale, filterscale, support, center, ww, ss;
    double *pre = NULL;
    uint32_t i, lo = UINT32_MAX, hi = 0;
    int64_t xmin, xmax, x, ksize;
    int rc = -ENOMEM;

    memset(c, 0, sizeof(*c));
    if (in == 0 || out == 0 || in > (1u << 24) || n == 0 || first > out || n > out - first)
        return -EINVAL;
    filterscale = scale = (double)(in1 - in0) / out;
    if (filterscale < 1.0)
        filterscale = 1.0;
    support = 1.0 * filterscale;
    ksize = (int64_t)ceil(support) * 2 + 1;

    c->out = n;
    c->avx2 = sophon__have_avx2();
    c->ksize = (uint32_t)ksize;
    c->first = calloc(n, sizeof(*c->first));
    c->count = calloc(n, sizeof(*c->count));
    c->k = calloc((size_t)n * (size_t)ksize, sizeof(*c->k));
    pre = calloc((size_t)ksize, sizeof(*pre));
    if (c->first == NULL || c->count == NULL || c->k == NULL || pre == NULL)
        goto done;

    for (i = 0; i < n; i++) {
        /* Output xx of the whole resample, computed as Pillow's precompute_coeffs does. */
        uint32_t xx = first + i;

        center = in0 + (xx + 0.5) * scale;
        ww = 0.0;
        ss = 1.0 / filterscale;
        /* Pillow rounds with (int)(v + 0.5), which truncates toward zero for negatives. */
        xmin = (int)(center - support + 0.5);
        if (xmin < 0)
            xmin = 0;
        xmax = (int)(center + support + 0.5);
        if (xmax > (int64_t)in)
            xmax = in;
        xmax -= xmin;
        if (xmax > ksize)
            xmax = ksize; /* Cannot happen for this filter; keeps writes inside k. */
        if (xmax < 0)
            xmax = 0;
        for (x = 0; x < xmax; x++) {
            double w = triangle((x + xmin - center + 0.5) * ss);

            pre[x] = w;
            ww += w;
        }
        for (x = 0; x < xmax; x++) {
            if (ww != 0.0)
                pre[x] /= ww;
            c->k[(size_t)i * (size_t)ksize + (size_t)x] = fixed_point(pre[x]);
        }
        c->first[i] = (uint32_t)xmin;
        c->count[i] = (uint32_t)xmax;
        if (xmax > 0) {
            lo = (uint32_t)xmin < lo ? (uint32_t)xmin : lo;
            hi = (uint32_t)(xmin + xmax) > hi ? (uint32_t)(xmin + xmax) : hi;
        }
    }
    /* The window's inputs, counted from the first of them. */
    if (lo > hi)
        lo = hi = 0;
    c->offset = lo;
    c->in = hi - lo;
    for (i = 0; i < n; i++)
        c->first[i] = c->count[i] > 0 ? c->first[i] - lo : 0;
    rc = 0;
done:
    free(pre);
    if (rc < 0)
        sophon__coeffs_free(c);
    return rc;
}

int sophon__have_avx2(void)
{
#if SOPHON__HAVE_AVX2
    /* Safe to call more than once; needed when this runs from a constructor of a dlopened .so. */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

int sophon__coeffs_expand(struct sophon__coeffs *c)
{
    uint32_t taps = (c->ksize + 1) & ~1u, xx, t, l;

    if (c->kx != NULL || !c->avx2 || taps > SOPHON__KX_TAPS_MAX)
        return 0;
    /* Per pair of output pixels (rounded up) and pair of taps: 8 dwords of high halves, then 8
     * of low halves, each dword two 16-bit weights (tap t low, t + 1 high). */
    c->kx = calloc((size_t)(c->out + 1) / 2 * taps * 8, sizeof(*c->kx));
    if (c->kx == NULL)
        return -ENOMEM;
    c->kx_taps = taps;
    for (xx = 0; xx < c->out; xx++) {
        for (t = 0; t < c->count[xx]; t++) {
            uint32_t k = (uint32_t)c->k[(size_t)xx * c->ksize + t]; /* 0 <= k <= 1 << 22 */
            uint32_t half_bits[2] = {k >> 11, k & 2047u};
            int part;

            for (part = 0; part < 2; part++) {
                int32_t *d = &c->kx[((size_t)xx / 2 * taps + (t & ~1u)) * 8 + (size_t)part * 8 +
                                    (xx % 2) * 4];

                for (l = 0; l < 4; l++)
                    d[l] |= (int32_t)(half_bits[part] << (16 * (t & 1)));
            }
        }
    }
    return 0;
}

void sophon__resample_h_pixel(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c,
                              uint32_t xx)
{
    const int32_t *k = &c->k[(size_t)xx * c->ksize];
    const uint8_t *p = src + (size_t)c->first[xx] * 3;
    uint32_t n = c->count[xx], x;
    /* Start at one half so that the final shift rounds to nearest. */
    int32_t s0 = 1 << (SOPHON__PRECISION_BITS - 1), s1 = s0, s2 = s0;

    for (x = 0; x < n; x++) {
        s0 += p[3 * x + 0] * k[x];
        s1 += p[3 * x + 1] * k[x];
        s2 += p[3 * x + 2] * k[x];
    }
    dst[0] = sophon__clip8(s0);
    dst[1] = sophon__clip8(s1);
    dst[2] = sophon__clip8(s2);
}

void sophon__resample_h_scalar(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c)
{
    uint32_t xx;

    for (xx = 0; xx < c->out; xx++)
        sophon__resample_h_pixel(dst + (size_t)xx * 3, src, c, xx);
}

void sophon__resample_h(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c)
{
#if SOPHON__HAVE_AVX2
    if (c->avx2 && c->kx != NULL) {
        sophon__resample_h_avx2(dst, src, c);
        return;
    }
#endif
    sophon__resample_h_scalar(dst, src, c);
}

void sophon__resample_v_scalar(uint8_t *dst, const uint8_t *const *rows, size_t n, const int32_t *k,
                               uint32_t cnt, int32_t *acc)
{
    uint32_t y;
    size_t i;

    /* Row-major accumulation: same sums as Pillow's per-pixel loop, in a cache-friendly order. */
    for (i = 0; i < n; i++)
        acc[i] = 1 << (SOPHON__PRECISION_BITS - 1);
    for (y = 0; y < cnt; y++) {
        const uint8_t *r = rows[y];
        int32_t w = k[y];

        for (i = 0; i < n; i++)
            acc[i] += r[i] * w;
    }
    for (i = 0; i < n; i++)
        dst[i] = sophon__clip8(acc[i]);
}

void sophon__resample_v(uint8_t *dst, const uint8_t *const *rows, size_t n,
                        const struct sophon__coeffs *c, uint32_t yy, int32_t *acc)
{
    const int32_t *k = &c->k[(size_t)yy * c->ksize];

#if SOPHON__HAVE_AVX2
    if (c->avx2) {
        sophon__resample_v_avx2(dst, rows, n, k, c->count[yy]);
        return;
    }
#endif
    sophon__resample_v_scalar(dst, rows, n, k, c->count[yy], acc);
}
