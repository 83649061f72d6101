/*
 * prep.h - the sophon image pipeline: one JPEG in, one training sample out.
 *
 * The pipeline is torchvision's transforms on its default PIL loader, with the random parameters
 * already drawn: a source box of the image, resized (Pillow BILINEAR) to resize_w x resize_h, of
 * which the out_w x out_h window at (win_x, win_y) is the output:
 *
 *     Image.open(f).convert('RGB').crop(box).resize((resize_w, resize_h), BILINEAR)
 *         .crop((win_x, win_y, win_x + out_w, win_y + out_h))
 *         [.transpose(FLIP_LEFT_RIGHT)]  [-> float32, (x / 255 - mean) / std]
 *
 * RandomResizedCrop(size) + RandomHorizontalFlip: the box is the drawn crop (sophon_draw_crop in
 * the client), resized to the output, the window the whole of it (resize_w = resize_h = 0 says
 * so). Resize(resize) + CenterCrop(size): the box is the whole image, and sophon_prep_set_val
 * sets the rest as torchvision 0.14 computes it. Only the window's pixels are computed, and only
 * the source rows and columns their filter taps reach are decoded: Pillow's weights for the
 * whole resize, restricted to the window, so the bytes are those of the full resize cropped.
 *
 * In exact mode (fast = 0) the u8 output is byte-identical to Pillow 9.4 linked against the same
 * libjpeg-turbo: accurate integer IDCT, fancy upsampling, Pillow's fixed-point bilinear resample.
 * Only the rows and columns the crop needs are decoded; the result does not depend on that.
 *
 * Differences from Pillow, all refusals (never different pixels):
 *  - Any libjpeg warning (corrupt data, premature end of data, extraneous bytes) is an error
 *    (-EBADMSG). Pillow decodes some of those files; on a storage node we refuse them.
 *  - A crop box that is not fully inside the image is -EINVAL (Pillow pads with black).
 *  - Limits (struct sophon_limits) are enforced before any large allocation.
 *
 * Errors: every int-returning function returns 0 or a negative errno:
 *   -EINVAL      bad parameters: NULL pointers, empty box, box not inside the image,
 *                out_w or out_h 0 or > SOPHON_MAX_SIDE, a resize side 0 or over
 *                SOPHON_MAX_RESIZE_SIDE, a window outside the resized box, unknown format, std
 *                of 0 or not finite.
 *   -EBADMSG     not a JPEG, corrupt or truncated data, any libjpeg warning.
 *   -EMEDIUMTYPE valid JPEG of a kind we do not handle (nor does Pillow): not 8-bit, lossless,
 *                unknown colour transform, component counts other than 1, 3 and 4. Not
 *                -EOPNOTSUPP, which is what an OSD answers for a class or method it does not
 *                have: a client must tell "this image" from "this OSD" (wire.h).
 *   -E2BIG       over a limit: width * height > max_pixels, more than max_scans scans.
 *   -EFBIG       the JPEG larger than max_input_bytes; the output larger than
 *                max_output_bytes; libjpeg's working memory over its budget (8 bytes per allowed
 *                pixel: what a legitimate progressive image can need); or the resampler's row
 *                buffers over 256 MiB (only extreme aspect ratios, e.g. a 5000-row box squeezed
 *                into 1 output row of 8192 pixels).
 *   -ENOMEM      allocation failure.
 *   -ERANGE      out_cap smaller than sophon_prep_output_size().
 * On error a one-line message (no newline) is written to err when err != NULL and errlen > 0.
 *
 * All functions are reentrant and thread-safe: no global mutable state; each call owns its
 * decoder. Nothing calls exit() or abort() on bad input.
 */
#ifndef SOPHON_PREP_H
#define SOPHON_PREP_H

#include <stddef.h>
#include <stdint.h>

#include "sophon_common.h" /* enum sophon_subsampling */

#ifdef __cplusplus
extern "C" {
#endif

/* Largest accepted out_w and out_h. */
#define SOPHON_MAX_SIDE 8192u
/* Largest accepted resize_w and resize_h. Larger than the output's: only the window is computed
 * (its weights and rows), so a Resize(256) of a 1:40 panorama (256 x 10240) costs no more than
 * its 224 x 224 centre. */
#define SOPHON_MAX_RESIZE_SIDE 65536u

enum sophon_format {
    SOPHON_FORMAT_U8 = 0,  /* out_h rows of out_w RGB pixels, 3 bytes each (HWC, interleaved). */
    SOPHON_FORMAT_F32 = 1, /* 3 planes R, G, B of out_h * out_w host-endian floats (CHW, the
                            * layout of a torch tensor), value (u8 / 255 - mean[c]) / std[c]
                            * computed in float exactly as ToTensor + Normalize do. */
};

/* What a prep request asks the class to return (wire.h); sophon_prep_run always makes pixels. */
enum sophon_wire_stage {
    SOPHON_WIRE_PIXELS = 1, /* the output in `format` */
    SOPHON_WIRE_CROP = 2,   /* a baseline JPEG of the blocks the box needs (lossless crop) */
};

/* What the class does when a crop (SOPHON_WIRE_CROP) cannot be made exactly or would exceed
 * crop_max_bytes. */
enum sophon_wire_fallback {
    SOPHON_FALLBACK_NONE = 0,   /* return the crop's errno */
    SOPHON_FALLBACK_PIXELS = 1, /* return the pixels, in `format` */
};

/* What to do with one JPEG. Start from SOPHON_PREP_PARAMS_INIT. */
struct sophon_prep_params {
    uint32_t box_x, box_y, box_w, box_h; /* Source box in source pixels; must lie in the image. */
    uint32_t out_w, out_h;               /* Output (window) size, 1..SOPHON_MAX_SIDE. */
    uint8_t flip;                        /* 1 = mirror the output horizontally. */
    uint8_t format;                      /* enum sophon_format. */
    uint8_t fast; /* 1 = fast mode: fast IDCT, simple upsampling and DCT-domain downscaling by
                   * 1/2, 1/4 or 1/8 while the scaled box stays >= the resize target (not
                   * exact). */
    float mean[3], std[3]; /* f32 normalization; ImageNet defaults in the INIT macro. */
    /* The box resized to resize_w x resize_h (1..SOPHON_MAX_RESIZE_SIDE), of which the output is
     * the window at (win_x, win_y), inside it. resize 0 x 0 (the default) means out_w x out_h
     * with the window at 0, 0: RandomResizedCrop's geometry. */
    uint32_t resize_w, resize_h;
    uint32_t win_x, win_y;
    /* What the class returns (wire.h); the pipeline itself ignores these. */
    uint8_t stage;           /* enum sophon_wire_stage; SOPHON_WIRE_PIXELS by default */
    uint8_t fallback;        /* enum sophon_wire_fallback; for SOPHON_WIRE_CROP only, else 0 */
    uint32_t crop_max_bytes; /* for SOPHON_WIRE_CROP only (0: no limit), else 0 */
};

/* clang-format off */
#define SOPHON_PREP_PARAMS_INIT \
    { 0, 0, 0, 0, 224, 224, 0, SOPHON_FORMAT_U8, 0, \
      {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 0, 0, 0, 0, SOPHON_WIRE_PIXELS, \
      SOPHON_FALLBACK_NONE, 0 }
/* clang-format on */

/*
 * sophon_prep_set_val - p's geometry for torchvision 0.14's Resize(resize) + CenterCrop(size) of
 * a width x height image (PIL path, max_size None): the box is the whole image; the shorter side
 * is resized to `resize` and the longer to int(resize * long / short) (Python's float division,
 * truncated); the window is size x size at left = int(round((resize_w - size) / 2.0)), top
 * likewise (Python's round: half to even); flip 0. out_w = out_h = size. The other fields are
 * left as they are.
 * Returns 0, or -EINVAL: p NULL, a side 0, resize or size 0 or over their limits, a resized side
 * over SOPHON_MAX_RESIZE_SIDE, or size larger than a resized side (where torchvision pads with
 * black: not supported).
 */
int sophon_prep_set_val(struct sophon_prep_params *p, uint32_t width, uint32_t height,
                        uint32_t resize, uint32_t size);

/*
 * The largest stored object sophon prepares, and the largest output: 64 MiB each. The OSD class
 * reads at most that much of an object and refuses larger ones (-EFBIG); every other path
 * refuses them alike through SOPHON_LIMITS_INIT, so that a sample fails the same way wherever
 * it is prepared.
 */
#define SOPHON_MAX_OBJECT_BYTES (64u << 20)
#define SOPHON_MAX_OUTPUT_BYTES (64u << 20)

/* Budget for untrusted input. A field of 0 means "no limit" for that field. */
struct sophon_limits {
    uint64_t max_pixels;       /* width * height of the JPEG (not of the crop). */
    uint32_t max_scans;        /* Scans in the file (progressive JPEGs have several). */
    uint64_t max_output_bytes; /* sophon_prep_output_size() upper bound. */
    uint64_t max_input_bytes;  /* Bytes of the JPEG (the stored object). */
};

/* clang-format off */
#define SOPHON_LIMITS_INIT { 89478485u /* Pillow MAX_IMAGE_PIXELS */, 1000, \
                             SOPHON_MAX_OUTPUT_BYTES, SOPHON_MAX_OBJECT_BYTES }
/* clang-format on */

enum sophon_colorspace {
    SOPHON_CS_UNKNOWN = 0,
    SOPHON_CS_GRAY = 1,
    SOPHON_CS_RGB = 2,
    SOPHON_CS_YCBCR = 3,
    SOPHON_CS_CMYK = 4,
    SOPHON_CS_YCCK = 5,
};

/* What the JPEG header says; filled by sophon_probe() without decoding any pixel. */
struct sophon_probe_info {
    uint32_t width, height;
    uint8_t components;  /* 1, 3 or 4 for images we can decode. */
    uint8_t progressive; /* 1 if progressive (SOF2/SOF10). */
    uint8_t colorspace;  /* enum sophon_colorspace, as libjpeg guesses it from the markers. */
    uint8_t subsampling; /* enum sophon_subsampling (sophon_common.h), from the factors. */
    uint8_t bits;        /* Sample precision, 8 for images we can decode. */
    uint32_t scans;      /* SOS markers in the file; 0 = not counted (see sophon_count_scans). */
};

/*
 * sophon_probe - read the header of jpeg[0..len) into *out: the marker segments up to the first
 * SOS, nothing after it, so the cost does not grow with the file (microseconds). out->scans is
 * left 0: counting them means walking the whole file (sophon_count_scans).
 * Returns 0, -EINVAL (NULL out/jpeg), -EBADMSG (not a JPEG / corrupt header),
 * -EMEDIUMTYPE (e.g. 12-bit: width/height/bits are still filled in when known).
 */
int sophon_probe(struct sophon_probe_info *out, const uint8_t *jpeg, size_t len, char *err,
                 size_t errlen);

/*
 * sophon_count_scans - the number of SOS markers in jpeg[0..len), by a walk over the whole file
 * (marker segments skipped by length, entropy-coded data scanned for the next marker): O(len).
 * Returns the count, or -EBADMSG when the file does not start with SOI or has a bad segment.
 */
int64_t sophon_count_scans(const uint8_t *jpeg, size_t len);

/* Static name of an enum sophon_format ("u8", "f32"), "unknown" when out of range; and the format
 * named name, or -1. */
const char *sophon_format_name(int format);
int sophon_format_from_name(const char *name);

/*
 * sophon_prep_output_size - bytes the output needs: out_w * out_h * 3 (u8) or
 * out_w * out_h * 3 * 4 (f32), computed in 64 bits. 0 if p is NULL, a side is 0 or larger
 * than SOPHON_MAX_SIDE, or the format is unknown.
 */
uint64_t sophon_prep_output_size(const struct sophon_prep_params *p);

/*
 * sophon_prep_memory_bound - an upper bound on the memory that running request p on a JPEG of
 * len bytes whose header says *info (sophon_probe) takes, in bytes: the JPEG itself, the
 * progressive copy and coefficient arrays (the whole image's, which bounds what the box needs),
 * libjpeg's row buffers and tables, the resampler's weights and rows, and the output. The OSD
 * class reserves it from its memory budget before it decodes. 0 for NULL arguments or an output
 * size of 0.
 */
uint64_t sophon_prep_memory_bound(const struct sophon_probe_info *info, uint64_t len,
                                  const struct sophon_prep_params *p);

/*
 * sophon_prep_run - run the pipeline on jpeg[0..len) with parameters p and budget lim
 * (NULL = SOPHON_LIMITS_INIT). Writes exactly sophon_prep_output_size(p) bytes to out, which the
 * caller owns and which must hold out_cap >= that many bytes; on error the content of out is
 * unspecified. Temporary memory is malloc'ed and freed before returning.
 * Returns 0 or a negative errno (see the top of this file); err gets a one-line message.
 */
int sophon_prep_run(uint8_t *out, size_t out_cap, const uint8_t *jpeg, size_t len,
                    const struct sophon_prep_params *p, const struct sophon_limits *lim, char *err,
                    size_t errlen);

/*
 * sophon_prep_normalize - the f32 output of request p from its u8 output: hwc holds the
 * p->out_h x p->out_w x 3 bytes sophon_prep_run wrote for p with format U8 (already flipped);
 * out gets exactly the bytes sophon_prep_run writes for p with format F32 (p->format is ignored),
 * out_cap >= out_w * out_h * 12. Returns 0, -EINVAL (NULL, bad size or normalization) or -ERANGE.
 */
int sophon_prep_normalize(uint8_t *out, size_t out_cap, const uint8_t *hwc,
                          const struct sophon_prep_params *p);

/*
 * sophon_prep_selfcheck - whether sophon's own Huffman decoder (prep/jpeg/huffman.c, which works
 * on libjpeg-turbo 2.1's private structures) agrees with the libjpeg it runs with: checked once
 * per process, before its first use, on embedded baseline and progressive files. Returns 0 (it
 * agrees, or this build does not use it), -EPROTO (it disagrees, and libjpeg's own decoder
 * reads every file of this process: the same bytes, slower) or -EAGAIN (the check ran out of
 * memory: libjpeg decodes meanwhile, and the next call checks again); err gets a one-line
 * verdict. Cheap once decided; thread-safe.
 */
int sophon_prep_selfcheck(char *err, size_t errlen);

/* sophon_prep_crop flags */
#define SOPHON_CROP_OPTIMIZE                                                                       \
    1u /* optimized Huffman tables (smaller, a second pass over the                                \
        * coefficients) */

/*
 * sophon_prep_crop - the lossless crop of jpeg[0..len) that request p's pixels need (see
 * crop.c): the smallest iMCU-aligned region holding p's box and the context its exact decode
 * needs, clamped to the image, written as a baseline JPEG with the source's quantization tables
 * and coefficients into out[0..cap). *out_len gets its length, *origin_x, *origin_y the region's
 * top-left in source pixels. p with the box moved by minus the origin gives the same bytes on the
 * crop as p on the source. Returns 0 or a negative errno as sophon_prep_run, and -ENOSPC (the
 * crop would not fit in cap), -EDOM (no crop of this file reproduces its pixels exactly).
 */
int sophon_prep_crop(uint8_t *out, size_t cap, size_t *out_len, uint32_t *origin_x,
                     uint32_t *origin_y, const uint8_t *jpeg, size_t len,
                     const struct sophon_prep_params *p, const struct sophon_limits *lim,
                     unsigned flags, char *err, size_t errlen);

/*
 * sophon_prep_crop_region - the region of a width x height image that the crop of request p holds
 * (what sophon_prep_crop cuts, and the planner's area model): p's box widened by one pixel on
 * each side (the reach of fancy upsampling), aligned outwards to the grid of iMCUs of
 * imcu_w x imcu_h pixels and clamped to the image; one iMCU more to the left where it would
 * leave a subsampled component 2 samples wide or less (which libjpeg upsamples otherwise). *x, *y,
 * *w, *h get it. Returns 0, or -EINVAL for a NULL argument, an iMCU side of 0 or a box not inside
 * the image.
 */
int sophon_prep_crop_region(uint32_t width, uint32_t height, uint32_t imcu_w, uint32_t imcu_h,
                            const struct sophon_prep_params *p, uint32_t *x, uint32_t *y,
                            uint32_t *w, uint32_t *h);

/* The iMCU of a JPEG of enum sophon_subsampling ss in pixels (8 x 8 for 4:4:4 and gray, 16 x 16
 * for 4:2:0, ...; 32 x 32, the most a frame can have, for another sampling). */
void sophon_prep_imcu(int ss, uint32_t *imcu_w, uint32_t *imcu_h);

/* An upper bound on the memory sophon_prep_crop takes for p on a JPEG of len bytes with header
 * *info, its output buffer excluded (the OSD reserves it before it crops). */
uint64_t sophon_prep_crop_memory_bound(const struct sophon_probe_info *info, uint64_t len,
                                       const struct sophon_prep_params *p);

/* Static name of an enum sophon_colorspace value ("ycbcr", ...); "unknown" when out of range.
 * (sophon_subsampling_name is sophon_common.h's.) */
const char *sophon_colorspace_name(int cs);

#ifdef __cplusplus
}
#endif

#endif /* SOPHON_PREP_H */
