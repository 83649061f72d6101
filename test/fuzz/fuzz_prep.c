/*
 * fuzz_prep.c - libFuzzer target for sophon_probe + sophon_prep_run.
 *
 * Input: a 13-byte parameter header, then the JPEG.
 *   byte 0      flags: bit 0 flip, bit 1 fast, bit 2 f32, bit 3 raw box (use the box bytes as
 *               is, usually outside the image, to exercise validation)
 *   bytes 1-2   out_w - 1 (little endian, modulo 256)   bytes 3-4  out_h - 1 (modulo 256)
 *   bytes 5-12  box x, y, w, h as 16-bit values; unless raw, folded into the probed image size
 * Seeds in corpus_prep/ are that header + a tiny JPEG (hence .bin, not .jpg).
 * Every output byte is read after a successful run so that ASan checks the whole buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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
    /* Smaller than the defaults so a run stays fast and small under the sanitizers. */
    struct sophon_limits lim = {4u << 20, 64, 8u << 20, SOPHON_MAX_OBJECT_BYTES};
    struct sophon_probe_info info;
    const uint8_t *jpeg = data + HEADER;
    size_t len, n, i;
    uint8_t *out;
    volatile uint8_t sink = 0;
    char err[128];

    if (size < HEADER)
        return 0;
    len = size - HEADER;
    p.flip = data[0] & 1;
    p.fast = (data[0] >> 1) & 1;
    p.format = (data[0] >> 2) & 1 ? SOPHON_FORMAT_F32 : SOPHON_FORMAT_U8;
    p.out_w = u16(data + 1) % 256 + 1;
    p.out_h = u16(data + 3) % 256 + 1;
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
    n = (size_t)sophon_prep_output_size(&p);
    out = malloc(n);
    if (out == NULL)
        return 0;
    if (sophon_prep_run(out, n, jpeg, len, &p, &lim, err, sizeof(err)) == 0) {
        for (i = 0; i < n; i++)
            sink ^= out[i];
    }
    (void)sink;
    free(out);
    return 0;
}
