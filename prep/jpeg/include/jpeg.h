/*
 * jpeg.h - what the rest of prep uses of prep/jpeg/: a hardened libjpeg decode of a rectangular
 * region into RGB rows.
 *
 * ON A LIBJPEG UPGRADE, CHECK prep/jpeg/: it is the one place that knows libjpeg-turbo 2.1
 * beyond its documented API, and nothing outside it includes jpeglib.h. What each file relies on:
 *  - huffman.c: jpegint.h's layout of struct jpeg_entropy_decoder and jpeg_marker_reader (declared
 *    there again), coef_bits and the rest of jdphuff.c's and jdhuff.c's bookkeeping and warnings;
 *    it switches itself off outside 2.1.x (LIBJPEG_TURBO_VERSION_NUMBER), and fuzz_huffman and
 *    integration.exact_cut hold it to libjpeg's own decoders.
 *  - coefmem.c: the memory manager's virtual block array methods, struct jvirt_barray_control
 *    (libjpeg's own is private to jmemmgr.c), and jdcoefct.c asking for one array per component,
 *    in component order.
 *  - guard.c: the error manager's methods, the jerror.h codes it maps to errnos, and the progress
 *    monitor's first call in jpeg_start_decompress coming before any entropy-coded data is read.
 *  - decode.c and prog_copy.c: how far fancy upsampling (jdsample.c, jdmainct.c) and block
 *    smoothing (decompress_smooth_data in jdcoefct.c) reach across block and image edges, which
 *    sets the margins around a region; jpeg_crop_scanline's iMCU alignment; jpeg_idct_1x1 reading
 *    the DC coefficient only; libjpeg skipping a scan's tail with JWRN_EXTRANEOUS_DATA.
 *  - markers.c: which stray bytes and standalone markers jdmarker.c passes over, and which it
 *    warns about.
 *  - probe.c: jpeg_read_header's colour space guess and sampling factors (the public API).
 * The unit tests (test_prep), the fuzz targets and integration.exact_cut / exact_pillow check
 * the result against a whole-file decode and against Pillow.
 *
 * Only the rows and columns the region needs are decoded (jpeg_skip_scanlines above it,
 * jpeg_crop_scanline around it, jpeg_abort_decompress after it), widened by one iMCU on each
 * side (three to the left and right in progressive files) so that fancy chroma upsampling and
 * block smoothing see the same neighbours as in a full decode: the rows delivered are
 * byte-identical to the same rows of a full decode. Progressive files, whose scans libjpeg
 * decodes in full before the first row, are read from a private copy cut to the region
 * (prog_copy.h).
 */
#ifndef SOPHON_PREP_JPEG_H
#define SOPHON_PREP_JPEG_H

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
 * private copy that holds only what the region needs (prog_copy.h). The bytes delivered are the
 * same: this is the reference the tests hold the copy to.
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

#endif /* SOPHON_PREP_JPEG_H */
