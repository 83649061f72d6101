/*
 * cut.c - the private copy of a progressive JPEG for a region decode: a lower SOF height.
 */
#include "cut.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "markers.h"

/*
 * iMCU rows decoded below the last row a region needs. Two effects reach upwards from the bottom
 * of an image, and the cut image has its bottom where the full image does not:
 *  - Fancy upsampling (jdsample.c) interpolates each chroma row with the one below it; the main
 *    controller (jdmainct.c) takes that row from the next iMCU row, and in the last iMCU row
 *    repeats the last row instead. Only the last iMCU row differs.
 *  - Block smoothing (decompress_smooth_data in libjpeg-turbo 2.1's jdcoefct.c, used on the
 *    output pass when some of AC coefficients 1..9 were never sent in full) predicts those
 *    coefficients from the DC values of the blocks up to two block rows below, and treats the
 *    last two iMCU rows as the bottom edge. The last two iMCU rows differ.
 * Together, a pixel row of iMCU row n is upsampled from chroma of row n + 1, which is smoothed
 * from DC values of rows n + 2 and n + 3: rows up to three iMCU rows above the bottom are the
 * same as in the full image. One more iMCU row is room for what this reading may have missed;
 * it costs one iMCU row of entropy decoding per scan.
 */
#define MARGIN_IMCU_ROWS 4

uint32_t sophon__cut_height(uint32_t height, uint32_t imcu_height, uint64_t rows)
{
    uint64_t h;

    if (imcu_height == 0 || rows >= height)
        return height;
    h = rows + (uint64_t)MARGIN_IMCU_ROWS * imcu_height;
    h = (h + imcu_height - 1) / imcu_height * imcu_height;
    return h < height ? (uint32_t)h : height;
}

/*
 * The offset of the 2-byte height in the SOF, when the copy is to have a lower one; 0 when the
 * file is to be decoded as it is.
 */
static size_t height_at(const uint8_t *jpeg, size_t len, const struct sophon__cut *cut)
{
    struct sophon__walk w;
    struct sophon__segment seg;
    size_t sof_at = 0;
    int rc, eoi = 0;

    if (sophon__walk_start(&w, jpeg, len) < 0)
        return 0;
    while ((rc = sophon__walk_next(&w, &seg)) > 0) {
        /* Garbage makes libjpeg warn; the skipped scan tails would hide it among theirs. */
        if (seg.junk != 0)
            return 0;
        /* libjpeg has read the first SOF, before any scan, as the frame header. */
        if (sophon__is_sof(seg.marker) && sof_at == 0 && seg.nparams >= 6)
            sof_at = seg.params + 1;
        if (seg.marker == SOPHON__M_EOI) {
            eoi = 1;
            break;
        }
        if (seg.marker == SOPHON__M_SOS && sof_at == 0)
            return 0;
    }
    if (rc < 0 || !eoi || cut->height == 0 ||
        cut->height >= (((uint32_t)jpeg[sof_at] << 8) | jpeg[sof_at + 1]))
        return 0;
    return sof_at;
}

int sophon__cut_copy(uint8_t **out, size_t *out_len, const uint8_t *jpeg, size_t len,
                     const struct sophon__cut *cut)
{
    size_t at = height_at(jpeg, len, cut);
    uint8_t *copy;

    *out = NULL;
    *out_len = 0;
    if (at == 0)
        return 0;
    copy = malloc(len);
    if (copy == NULL)
        return -ENOMEM;
    memcpy(copy, jpeg, len);
    copy[at] = (uint8_t)(cut->height >> 8);
    copy[at + 1] = (uint8_t)cut->height;
    *out = copy;
    *out_len = len;
    return 0;
}
