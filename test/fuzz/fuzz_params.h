/*
 * fuzz_params.h - the 13-byte parameter header fuzz_prep.c and fuzz_crop.c read before the JPEG:
 *   byte 0      flags: bit 0 flip, bit 1 fast, bit 2 f32, bit 3 raw box (use the box bytes as
 *               is, usually outside the image, to exercise validation); the rest the target's
 *   bytes 1-2   out_w - 1 (little endian, modulo out_mod)   bytes 3-4  out_h - 1 (likewise)
 *   bytes 5-12  box x, y, w, h as 16-bit values; unless raw, folded into the probed image size
 */
#ifndef SOPHON_FUZZ_PARAMS_H
#define SOPHON_FUZZ_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "prep.h"

#define FUZZ_HEADER 13

static inline uint32_t fuzz_u16(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8);
}

/* The request of data[0..size) into *p and its JPEG into *jpeg, *len. Returns 0, or -1 when
 * size is below the header. */
static inline int fuzz_params(struct sophon_prep_params *p, const uint8_t **jpeg, size_t *len,
                              const uint8_t *data, size_t size, uint32_t out_mod)
{
    struct sophon_probe_info info;

    if (size < FUZZ_HEADER)
        return -1;
    *p = (struct sophon_prep_params)SOPHON_PREP_PARAMS_INIT;
    *jpeg = data + FUZZ_HEADER;
    *len = size - FUZZ_HEADER;
    p->flip = data[0] & 1;
    p->fast = (data[0] >> 1) & 1;
    p->format = (data[0] >> 2) & 1 ? SOPHON_FORMAT_F32 : SOPHON_FORMAT_U8;
    p->out_w = fuzz_u16(data + 1) % out_mod + 1;
    p->out_h = fuzz_u16(data + 3) % out_mod + 1;
    p->box_x = fuzz_u16(data + 5);
    p->box_y = fuzz_u16(data + 7);
    p->box_w = fuzz_u16(data + 9);
    p->box_h = fuzz_u16(data + 11);
    if (sophon_probe(&info, *jpeg, *len, NULL, 0) == 0 && !(data[0] & 8) && info.width > 0 &&
        info.height > 0) {
        p->box_x %= info.width;
        p->box_y %= info.height;
        p->box_w = 1 + p->box_w % (info.width - p->box_x);
        p->box_h = 1 + p->box_h % (info.height - p->box_y);
    }
    return 0;
}

#endif
