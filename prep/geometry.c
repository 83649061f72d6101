/*
 * geometry.c - what a request's box, resize target and window mean: the rule the pipeline and
 * the wire format check alike, and torchvision's validation geometry (prep.h, pipeline.h).
 */
#include <errno.h>

#include "pipeline.h"
#include "prep.h"
#include "sophon_common.h"

int sophon__prep_geometry(struct sophon__geometry *out, const struct sophon_prep_params *p,
                          char *err, size_t errlen)
{
    struct sophon__geometry g;

    if (p->resize_w == 0 && p->resize_h == 0) {
        /* RandomResizedCrop: the box resized to the output, all of which is the window. */
        if (p->win_x != 0 || p->win_y != 0) {
            sophon__seterr(err, errlen, "a window at %u,%u needs a resize target",
                           (unsigned)p->win_x, (unsigned)p->win_y);
            return -EINVAL;
        }
        g = (struct sophon__geometry){p->out_w, p->out_h, 0, 0};
    } else {
        g = (struct sophon__geometry){p->resize_w, p->resize_h, p->win_x, p->win_y};
    }
    if (p->out_w == 0 || p->out_h == 0 || p->out_w > SOPHON_MAX_SIDE ||
        p->out_h > SOPHON_MAX_SIDE) {
        sophon__seterr(err, errlen, "bad output size %ux%u (1..%u)", (unsigned)p->out_w,
                       (unsigned)p->out_h, (unsigned)SOPHON_MAX_SIDE);
        return -EINVAL;
    }
    if (g.resize_w == 0 || g.resize_h == 0 || g.resize_w > SOPHON_MAX_RESIZE_SIDE ||
        g.resize_h > SOPHON_MAX_RESIZE_SIDE) {
        sophon__seterr(err, errlen, "bad resize target %ux%u (1..%u)", (unsigned)g.resize_w,
                       (unsigned)g.resize_h, (unsigned)SOPHON_MAX_RESIZE_SIDE);
        return -EINVAL;
    }
    if ((uint64_t)g.win_x + p->out_w > g.resize_w || (uint64_t)g.win_y + p->out_h > g.resize_h) {
        sophon__seterr(err, errlen, "window %ux%u+%u+%u not inside the resized %ux%u",
                       (unsigned)p->out_w, (unsigned)p->out_h, (unsigned)g.win_x, (unsigned)g.win_y,
                       (unsigned)g.resize_w, (unsigned)g.resize_h);
        return -EINVAL;
    }
    if (out != NULL)
        *out = g;
    return 0;
}

/* CenterCrop's offset: int(round((side - size) / 2.0)), Python's round taking halves to even. */
static uint32_t centre_offset(uint32_t side, uint32_t size)
{
    uint32_t d = side - size, half = d / 2;

    return (d & 1u) && (half & 1u) ? half + 1 : half;
}

int sophon_prep_set_val(struct sophon_prep_params *p, uint32_t width, uint32_t height,
                        uint32_t resize, uint32_t size)
{
    uint32_t short_side, long_side;
    uint64_t new_long;

    if (p == NULL || width == 0 || height == 0 || resize == 0 || size == 0 ||
        resize > SOPHON_MAX_RESIZE_SIDE || size > SOPHON_MAX_SIDE)
        return -EINVAL;
    short_side = width <= height ? width : height;
    long_side = width <= height ? height : width;
    /*
     * torchvision's _compute_resized_output_size: int(resize * long / short). The product is
     * exact in a double (below 2^53) and so is the side, and IEEE division rounds the exact
     * quotient as Python's int / int does; the cast truncates as int() does.
     */
    new_long = (uint64_t)((double)((uint64_t)resize * long_side) / (double)short_side);
    if (new_long > SOPHON_MAX_RESIZE_SIDE || new_long < size || resize < size)
        return -EINVAL;
    p->box_x = p->box_y = 0;
    p->box_w = width;
    p->box_h = height;
    p->resize_w = width <= height ? resize : (uint32_t)new_long;
    p->resize_h = width <= height ? (uint32_t)new_long : resize;
    p->out_w = p->out_h = size;
    p->win_x = centre_offset(p->resize_w, size);
    p->win_y = centre_offset(p->resize_h, size);
    p->flip = 0;
    return 0;
}

/* a rounded down (up) to a multiple of m. */
static uint64_t align_down(uint64_t a, uint32_t m)
{
    return a / m * m;
}

static uint64_t align_up(uint64_t a, uint32_t m)
{
    return (a + m - 1) / m * m;
}

int sophon_prep_crop_region(uint32_t width, uint32_t height, uint32_t imcu_w, uint32_t imcu_h,
                            const struct sophon_prep_params *p, uint32_t *x, uint32_t *y,
                            uint32_t *w, uint32_t *h)
{
    if (p == NULL || x == NULL || y == NULL || w == NULL || h == NULL || imcu_w == 0 ||
        imcu_h == 0 || p->box_w == 0 || p->box_h == 0 || (uint64_t)p->box_x + p->box_w > width ||
        (uint64_t)p->box_y + p->box_h > height)
        return -EINVAL;
    /* One pixel more on each side: fancy upsampling's reach (crop.c). */
    uint64_t x0 = align_down(p->box_x > 0 ? p->box_x - 1 : 0, imcu_w);
    uint64_t y0 = align_down(p->box_y > 0 ? p->box_y - 1 : 0, imcu_h);
    uint64_t x1 = align_up((uint64_t)p->box_x + p->box_w + 1, imcu_w);
    uint64_t y1 = align_up((uint64_t)p->box_y + p->box_h + 1, imcu_h);
    /* libjpeg upsamples a component of 2 samples a row or fewer plainly, not fancily
     * (jdsample.c): a region that is only a narrow last iMCU column takes the one before it. */
    uint64_t right = x1 < width ? x1 : width;
    if (x0 > 0 && imcu_w > 8 && (right - x0) * 8 <= 2 * (uint64_t)imcu_w)
        x0 -= imcu_w;
    *x = (uint32_t)x0;
    *y = (uint32_t)y0;
    *w = (uint32_t)((x1 < width ? x1 : width) - x0);
    *h = (uint32_t)((y1 < height ? y1 : height) - y0);
    return 0;
}

void sophon_prep_imcu(int ss, uint32_t *imcu_w, uint32_t *imcu_h)
{
    switch (ss) {
    case SOPHON_SS_444:
    case SOPHON_SS_GRAY:
        *imcu_w = *imcu_h = 8;
        break;
    case SOPHON_SS_422:
        *imcu_w = 16;
        *imcu_h = 8;
        break;
    case SOPHON_SS_420:
        *imcu_w = *imcu_h = 16;
        break;
    case SOPHON_SS_440:
        *imcu_w = 8;
        *imcu_h = 16;
        break;
    case SOPHON_SS_411:
        *imcu_w = 32;
        *imcu_h = 8;
        break;
    default:
        *imcu_w = *imcu_h = 32;
        break;
    }
}
