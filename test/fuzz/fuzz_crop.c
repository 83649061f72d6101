/*
 * fuzz_crop.c - libFuzzer target for sophon_prep_crop, and the pipeline run on its crop.
 *
 * Input: fuzz_prep.c's 13-byte parameter header (flags: bit 0 flip, bit 1 fast, bit 2 f32, bit 3
 * raw box; out_w - 1, out_h - 1; box x, y, w, h as 16-bit values, folded into the image unless
 * raw), then the JPEG; bit 4 of the flags asks for optimized Huffman tables, and bits 5-7 make
 * the crop's cap smaller (1/2^k of the input), to exercise -ENOSPC. A crop that is made must
 * decode, with the box moved by minus its origin, to the pipeline's bytes on the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prep.h"

#define HEADER 13

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t u16(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    struct sophon_limits lim = {4u << 20, 64, 8u << 20, SOPHON_MAX_OBJECT_BYTES};
    struct sophon_probe_info info;
    char err[128];

    if (size < HEADER)
        return 0;
    const uint8_t *jpeg = data + HEADER;
    size_t len = size - HEADER;
    p.flip = data[0] & 1;
    p.fast = (data[0] >> 1) & 1;
    p.format = (data[0] >> 2) & 1 ? SOPHON_FORMAT_F32 : SOPHON_FORMAT_U8;
    p.out_w = u16(data + 1) % 64 + 1;
    p.out_h = u16(data + 3) % 64 + 1;
    p.box_x = u16(data + 5);
    p.box_y = u16(data + 7);
    p.box_w = u16(data + 9);
    p.box_h = u16(data + 11);
    if (sophon_probe(&info, jpeg, len, err, sizeof(err)) == 0 && !(data[0] & 8) && info.width > 0 &&
        info.height > 0) {
        p.box_x %= info.width;
        p.box_y %= info.height;
        p.box_w = 1 + p.box_w % (info.width - p.box_x);
        p.box_h = 1 + p.box_h % (info.height - p.box_y);
    }
    size_t cap = (2 * len + 65536) >> ((data[0] >> 5) & 7);
    uint8_t *crop = malloc(cap ? cap : 1);
    size_t clen = 0;
    uint32_t ox = 0, oy = 0;
    if (crop == NULL)
        return 0;
    unsigned flags = (data[0] & 16) ? SOPHON_CROP_OPTIMIZE : 0;
    if (sophon_prep_crop(crop, cap, &clen, &ox, &oy, jpeg, len, &p, &lim, flags, err,
                         sizeof(err)) == 0) {
        size_t n = (size_t)sophon_prep_output_size(&p);
        uint8_t *want = malloc(n), *got = malloc(n);
        struct sophon_prep_params q = p;
        q.box_x -= ox;
        q.box_y -= oy;
        if (want != NULL && got != NULL &&
            sophon_prep_run(want, n, jpeg, len, &p, &lim, err, sizeof(err)) == 0 &&
            (sophon_prep_run(got, n, crop, clen, &q, &lim, err, sizeof(err)) != 0 ||
             memcmp(want, got, n) != 0))
            abort(); /* a crop that does not give the source's pixels */
        free(want);
        free(got);
    }
    free(crop);
    return 0;
}
