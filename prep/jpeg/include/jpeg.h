/*
 * decode.h - hardened libjpeg decode of a rectangular region into RGB rows.
 *
 * Only the rows and columns the region needs are decoded (jpeg_skip_scanlines above it,
 * jpeg_crop_scanline around it, jpeg_abort_decompress after it), widened by one iMCU on each
 * side (three to the left and right in progressive files) so that fancy chroma upsampling and
 * block smoothing see the same neighbours as in a full decode: the rows delivered are
 * byte-identical to the same rows of a full decode. Progressive files, whose scans libjpeg
 * decodes in full before the first row, are read from a private copy cut to the region (cut.h).
 */
#ifndef SOPHON_PREP_DECODE_H
#define SOPHON_PREP_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "prep.h"

/* The region to decode, chosen by the header callback once the image size is known. */
struct sophon__region {
    uint32_t scale_denom; /* 1, 2, 4 or 8: DCT-domain downscaling (only in fast mode). */
    uint32_t x, y, w, h;  /* In pixels of the scaled image, ceil(width / scale_denom) wide. */
};

struct sophon__decode_cb {
    /*
     * header - called once with the full-resolution size; fills *rg. Returns 0 or a negative
     * errno that aborts the decode.
     */
    int (*header)(void *ctx, uint32_t width, uint32_t height, struct sophon__region *rg);
    /*
     * row - called for rows 0..rg.h-1 of the region in order; rgb holds rg.w pixels of 3 bytes
     * and is only valid during the call. Returns 0 or a negative errno that aborts the decode.
     */
    int (*row)(void *ctx, const uint8_t *rgb, uint32_t row);
    void *ctx;
};

/* sophon__decode flags. */
#define SOPHON__DECODE_FAST 1u /* The fast IDCT and plain upsampling (the request's fast mode). */
/*
 * Decode a progressive file as it is stored, every scan over the whole image, instead of the
 * private copy that holds only what the region needs (cut.h). The bytes delivered are the same:
 * this is the reference the tests hold the copy to.
 */
#define SOPHON__DECODE_WHOLE_FILE 2u
/*
 * Let libjpeg's own Huffman decoders (jdhuff.c, jdphuff.c) read the scans, not huffman.h's: the
 * reference the tests hold huffman.h to. The same bytes either way.
 */
#define SOPHON__DECODE_LIBJPEG_HUFFMAN 4u

/*
 * sophon__decode - decode the region of jpeg[0..len) chosen by cb->header, under lim (not
 * NULL), with SOPHON__DECODE_* flags. Colour: grayscale is replicated, CMYK and YCCK are
 * converted as Pillow 9.4 converts its "CMYK;I" images to RGB.
 * Returns 0 or a negative errno (see prep.h) with a message in err.
 */
int sophon__decode(const uint8_t *jpeg, size_t len, const struct sophon_limits *lim, unsigned flags,
                   const struct sophon__decode_cb *cb, char *err, size_t errlen);

/*
 * sophon__cmyk_to_rgb - Pillow 9.4's path for Adobe CMYK JPEGs: unpack "CMYK;I" (c = 255 - raw)
 * then cmyk2rgb. n pixels of 4 bytes from src, 3 bytes to dst.
 */
void sophon__cmyk_to_rgb(uint8_t *dst, const uint8_t *src, size_t n);

#endif /* SOPHON_PREP_DECODE_H */
