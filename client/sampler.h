/*
 * sampler.h - the random parameters of a sample, drawn on the client.
 *
 * torchvision's RandomResizedCrop (scale 0.08-1, ratio 3/4-4/3, ten tries, then the centre crop)
 * and RandomHorizontalFlip(0.5), drawn from a counter-based generator keyed by (seed, epoch,
 * sample index): the same sample of the same epoch gets the same box and flip on every client,
 * whatever order or thread it is prepared in, and the OSD needs no randomness at all.
 */
#ifndef SOPHON_SAMPLER_H
#define SOPHON_SAMPLER_H

#include <stdint.h>

#include "prep.h"

struct sophon_crop_policy {
    double scale_min, scale_max; /* of the image's area */
    double ratio_min, ratio_max; /* width / height */
    double flip_p;               /* probability of a horizontal flip */
};

/* clang-format off */
#define SOPHON_CROP_POLICY_INIT {0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0, 0.5}
/* clang-format on */

/*
 * Sets p's box and flip for sample `index` of `epoch`, for an image of width x height (both > 0),
 * following torchvision's RandomResizedCrop.get_params and RandomHorizontalFlip. policy NULL
 * means SOPHON_CROP_POLICY_INIT. Returns 0 or -EINVAL (an empty image or a bad policy).
 */
int sophon_draw_crop(struct sophon_prep_params *p, uint64_t seed, uint64_t epoch, uint64_t index,
                     uint32_t width, uint32_t height, const struct sophon_crop_policy *policy);

#endif
