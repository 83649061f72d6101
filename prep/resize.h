/*
 * resize.h - Pillow 9.4's BILINEAR resample (libImaging/Resample.c), bit for bit, on RGB rows.
 *
 * One axis is described by struct sophon__coeffs: for each output position, the first input
 * index, the number of inputs, and their weights in fixed point with SOPHON__PRECISION_BITS
 * fractional bits. The image is resampled horizontally first (each row rounded to 8 bits), then
 * vertically, as Pillow does.
 */
#ifndef SOPHON_PREP_RESIZE_H
#define SOPHON_PREP_RESIZE_H

#include <stddef.h>
#include <stdint.h>

/* Pillow: PRECISION_BITS = 32 - 8 - 2, leaving 2 bits of headroom over 8-bit samples. */
#define SOPHON__PRECISION_BITS 22

/* x86-64 builds carry AVX2 versions of both passes, used when the CPU has AVX2. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SOPHON__HAVE_AVX2 1
#else
#define SOPHON__HAVE_AVX2 0
#endif

/* Most taps (after padding to an even number) the AVX2 horizontal pass takes; wider kernels,
 * from downscaling by more than about 30, use the scalar pass. */
#define SOPHON__KX_TAPS_MAX 64

struct sophon__coeffs {
    uint32_t in, out; /* Inputs the weights read and outputs they make, along this axis. */
    uint32_t offset;  /* Index of input 0 (first[] counts from it) in the whole axis. */
    uint32_t ksize;   /* Stride of k: Pillow's (int)ceil(support) * 2 + 1. */
    uint32_t *first;  /* out entries: first input index (Pillow's xmin). */
    uint32_t *count;  /* out entries: number of inputs (Pillow's xmax after "xmax -= xmin"). */
    int32_t *k;       /* out * ksize fixed-point weights. */
    /* Optional, from sophon__coeffs_expand: the weights laid out for resample_h_avx2. */
    int32_t *kx;
    uint32_t kx_taps;
    int avx2; /* Set by sophon__coeffs_init when the CPU has AVX2; clear it to force scalar. */
};

/*
 * sophon__coeffs_init - weights for resampling in -> out samples (both >= 1) with Pillow's
 * triangle filter. Allocates; free with sophon__coeffs_free. Returns 0, -EINVAL or -ENOMEM.
 * Then c->in = in, c->out = out and c->offset = 0.
 */
int sophon__coeffs_init(struct sophon__coeffs *c, uint32_t in, uint32_t out);

/*
 * sophon__coeffs_init_window - the weights of outputs first .. first + n - 1 (first + n <= out)
 * of that resample, each the same as in the whole one: c->out = n, output i of c is output
 * first + i of the whole. Their inputs are c->in samples from input c->offset on (c->first[]
 * counts from there), so that only those need be decoded. Returns 0, -EINVAL or -ENOMEM.
 */
int sophon__coeffs_init_window(struct sophon__coeffs *c, uint32_t in, uint32_t out, uint32_t first,
                               uint32_t n);

/* sophon__coeffs_free - release what sophon__coeffs_init allocated; NULL and zeroed are fine. */
void sophon__coeffs_free(struct sophon__coeffs *c);

/*
 * sophon__coeffs_expand - lay the weights out for the AVX2 horizontal pass (c->kx), when the CPU
 * has AVX2 and the kernel is at most SOPHON__KX_TAPS_MAX wide; otherwise leave kx NULL. Returns
 * 0 or -ENOMEM. sophon__coeffs_free releases it.
 */
int sophon__coeffs_expand(struct sophon__coeffs *c);

/* Pillow's clip8: drop the fraction, clamp to 0..255. */
static inline uint8_t sophon__clip8(int32_t v)
{
    if (v >= (1 << SOPHON__PRECISION_BITS << 8))
        return 255;
    if (v <= 0)
        return 0;
    return (uint8_t)(v >> SOPHON__PRECISION_BITS);
}

/*
 * sophon__resample_h - one RGB row of c->in pixels to c->out pixels (Pillow's horizontal pass),
 * with AVX2 when c->kx is set.
 */
void sophon__resample_h(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c);

/* The scalar horizontal pass, for one output pixel xx and for the whole row. */
void sophon__resample_h_pixel(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c,
                              uint32_t xx);
void sophon__resample_h_scalar(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c);

/*
 * sophon__resample_v - output row yy of the vertical pass: rows[i] is input row
 * c->first[yy] + i (i < c->count[yy]), each of n bytes (n = 3 * width). acc is scratch of n
 * int32_t.
 */
void sophon__resample_v(uint8_t *dst, const uint8_t *const *rows, size_t n,
                        const struct sophon__coeffs *c, uint32_t yy, int32_t *acc);

/* The vertical pass's kernel on rows[0..cnt) with weights k: scalar (acc is n int32_t of
 * scratch) and AVX2 (no scratch). */
void sophon__resample_v_scalar(uint8_t *dst, const uint8_t *const *rows, size_t n, const int32_t *k,
                               uint32_t cnt, int32_t *acc);

/* sophon__have_avx2 - whether this CPU runs the AVX2 passes. */
int sophon__have_avx2(void);

#if SOPHON__HAVE_AVX2
void sophon__resample_h_avx2(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c);
void sophon__resample_v_avx2(uint8_t *dst, const uint8_t *const *rows, size_t n, const int32_t *k,
                             uint32_t cnt);
#endif

#endif /* SOPHON_PREP_RESIZE_H */
