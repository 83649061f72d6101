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

struct sophon__coeffs {
    uint32_t in, out; /* Input and output length along this axis. */
    uint32_t ksize;   /* Stride of k: Pillow's (int)ceil(support) * 2 + 1. */
    uint32_t *first;  /* out entries: first input index (Pillow's xmin). */
    uint32_t *count;  /* out entries: number of inputs (Pillow's xmax after "xmax -= xmin"). */
    int32_t *k;       /* out * ksize fixed-point weights. */
};

/*
 * sophon__coeffs_init - weights for resampling in -> out samples (both >= 1) with Pillow's
 * triangle filter. Allocates; free with sophon__coeffs_free. Returns 0, -EINVAL or -ENOMEM.
 */
int sophon__coeffs_init(struct sophon__coeffs *c, uint32_t in, uint32_t out);

/* sophon__coeffs_free - release what sophon__coeffs_init allocated; NULL and zeroed are fine. */
void sophon__coeffs_free(struct sophon__coeffs *c);

/* sophon__resample_h - one RGB row of c->in pixels to c->out pixels (Pillow's horizontal pass). */
void sophon__resample_h(uint8_t *dst, const uint8_t *src, const struct sophon__coeffs *c);

/*
 * sophon__resample_v - output row yy of the vertical pass: rows[i] is input row
 * c->first[yy] + i (i < c->count[yy]), each of n bytes (n = 3 * width). acc is scratch of n
 * int32_t.
 */
void sophon__resample_v(uint8_t *dst, const uint8_t *const *rows, size_t n,
                        const struct sophon__coeffs *c, uint32_t yy, int32_t *acc);

#endif /* SOPHON_PREP_RESIZE_H */
