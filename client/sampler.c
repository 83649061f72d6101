/*
 * sampler.c - RandomResizedCrop and RandomHorizontalFlip parameters from (seed, epoch, index).
 */
#include "sampler.h"

#include <errno.h>
#include <math.h>

#include "splitmix64.h"

/* A sample's stream, for sophon__below. */
static uint64_t next(void *state)
{
    return sophon__splitmix64_next(state);
}

/* Uniform in [0, 1) with 53 random bits. */
static double uniform01(uint64_t *state)
{
    return (double)(sophon__splitmix64_next(state) >> 11) * 0x1.0p-53;
}

static double uniform(uint64_t *state, double lo, double hi)
{
    return lo + (hi - lo) * uniform01(state);
}

/* Python's round(): to nearest, ties to even (the default rounding mode of nearbyint). */
static int64_t py_round(double x)
{
    return (int64_t)nearbyint(x);
}

int sophon_draw_crop(struct sophon_prep_params *p, uint64_t seed, uint64_t epoch, uint64_t index,
                     uint32_t width, uint32_t height, const struct sophon_crop_policy *policy)
{
    static const struct sophon_crop_policy defaults = SOPHON_CROP_POLICY_INIT;
    const struct sophon_crop_policy *pol = policy != NULL ? policy : &defaults;

    if (p == NULL || width == 0 || height == 0)
        return -EINVAL;
    if (!(pol->scale_min > 0 && pol->scale_min <= pol->scale_max && pol->ratio_min > 0 &&
          pol->ratio_min <= pol->ratio_max && pol->flip_p >= 0 && pol->flip_p <= 1))
        return -EINVAL;

    /* One stream per sample: the key mixes seed, epoch and index through the generator. */
    uint64_t state = seed;
    state = sophon__splitmix64_next(&state) ^ epoch;
    state = sophon__splitmix64_next(&state) ^ index;
    sophon__splitmix64_next(&state);

    double area = (double)width * height;
    double log_lo = log(pol->ratio_min), log_hi = log(pol->ratio_max);
    for (int attempt = 0; attempt < 10; attempt++) {
        double target_area = area * uniform(&state, pol->scale_min, pol->scale_max);
        double aspect = exp(uniform(&state, log_lo, log_hi));
        int64_t w = py_round(sqrt(target_area * aspect));
        int64_t h = py_round(sqrt(target_area / aspect));
        if (w > 0 && w <= width && h > 0 && h <= height) {
            p->box_y = (uint32_t)sophon__below(next, &state, (uint64_t)(height - h + 1));
            p->box_x = (uint32_t)sophon__below(next, &state, (uint64_t)(width - w + 1));
            p->box_w = (uint32_t)w;
            p->box_h = (uint32_t)h;
            goto flip;
        }
    }
    /* Fallback: the centre crop of the ratio nearest to the image's own. */
    double in_ratio = (double)width / height;
    int64_t w = width, h = height;
    if (in_ratio < pol->ratio_min)
        h = py_round(w / pol->ratio_min);
    else if (in_ratio > pol->ratio_max)
        w = py_round(h * pol->ratio_max);
    if (w < 1)
        w = 1;
    if (h < 1)
        h = 1;
    p->box_w = (uint32_t)w;
    p->box_h = (uint32_t)h;
    p->box_x = (uint32_t)((width - w) / 2);
    p->box_y = (uint32_t)((height - h) / 2);
flip:
    p->flip = uniform01(&state) < pol->flip_p;
    return 0;
}
