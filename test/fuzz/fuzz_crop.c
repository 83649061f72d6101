/*
 * fuzz_crop.c - libFuzzer target for sophon_prep_crop, and the pipeline run on its crop.
 *
 * Input: the 13-byte parameter header of fuzz_params.h (outputs up to 64 x 64), then the JPEG;
 * bit 4 of the flags asks for optimized Huffman tables, and bits 5-7 make the crop's cap smaller
 * (1/2^k of the input), to exercise -ENOSPC. A crop that is made must
 * decode, with the box moved by minus its origin, to the pipeline's bytes on the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_params.h"
#include "prep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sophon_prep_params p;
    struct sophon_limits lim = {4u << 20, 64, 8u << 20, SOPHON_MAX_OBJECT_BYTES};
    const uint8_t *jpeg;
    size_t len;
    char err[128];

    if (fuzz_params(&p, &jpeg, &len, data, size, 64) < 0)
        return 0;
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
