/*
 * pipeline.c - sophon_prep_run: decode the rows and columns of the source box that the output
 * window's filter taps reach, row by row, resample each row horizontally as it arrives, keep
 * only the rows the vertical filter still needs in a ring, and write each output row (flipped,
 * and as u8 or normalized float) as soon as its input rows are in.
 *
 * Peak memory is one scanline, the ring (vertical kernel size x output row) and the window's
 * weights, independent of the image size.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg.h"
#include "pipeline.h"
#include "prep.h"
#include "resize.h"
#include "sophon_common.h"

/* Cap on the pipeline's own buffers (the ring of horizontally resampled rows and scratch); only
 * extreme aspect ratios, like a 1-row output of a 60000-row box, come near it. */
#define WORK_BYTES_MAX (256u << 20)

struct pipeline {
    const struct sophon_prep_params *p;
    struct sophon__geometry g;
    uint8_t *out;
    char *err;
    size_t errlen;
    struct sophon__coeffs h, v;
    int need_h, need_v; /* Pillow skips a pass whose size does not change. */
    uint32_t in_w;      /* Decoded columns: those the window's horizontal taps reach. */
    uint32_t ring_rows; /* Ring slots: the vertical kernel size bounds the rows in use. */
    size_t stride;      /* Bytes per ring row. */
    uint8_t *ring;
    const uint8_t **rowp;
    int32_t *acc;
    uint8_t *orow;
    uint32_t next_out;  /* Next output row to produce. */
    float norm[3][256]; /* f32 output: normalize() of every channel value. */
};

static const char *const format_names[] = {"u8", "f32"};
#define FORMATS ((int)(sizeof(format_names) / sizeof(format_names[0])))

const char *sophon_format_name(int format)
{
    return sophon__name_of(format_names, FORMATS, format, "unknown");
}

int sophon_format_from_name(const char *name)
{
    return sophon__index_of(format_names, FORMATS, name);
}

uint64_t sophon_prep_output_size(const struct sophon_prep_params *p)
{
    uint64_t n;

    if (p == NULL || p->out_w == 0 || p->out_h == 0 || p->out_w > SOPHON_MAX_SIDE ||
        p->out_h > SOPHON_MAX_SIDE)
        return 0;
    n = (uint64_t)p->out_w * p->out_h * 3;
    switch (p->format) {
    case SOPHON_FORMAT_U8:
        return n;
    case SOPHON_FORMAT_F32:
        return n * sizeof(float);
    default:
        return 0;
    }
}

static uint32_t ceil_div(uint64_t a, uint32_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

/* Blocks of one component's coefficient array, its share of the image's width and height given
 * as num / den (chroma of 4:2:0: 1/2 each way), with two blocks of padding each way. */
static uint64_t component_blocks(uint64_t w, uint64_t h, uint32_t wnum, uint32_t wden,
                                 uint32_t hnum, uint32_t hden)
{
    return ((w * wnum + wden - 1) / wden / 8 + 3) * ((h * hnum + hden - 1) / hden / 8 + 3);
}

uint64_t sophon_prep_memory_bound(const struct sophon_probe_info *info, uint64_t len,
                                  const struct sophon_prep_params *p)
{
    uint64_t out = sophon_prep_output_size(p), w, h, blocks, rw, rh, bound;

    if (info == NULL || out == 0)
        return 0;
    w = info->width;
    h = info->height;
    /* Coefficient arrays (progressive only): 64 coefficients of 2 bytes and huffman.c's 8-byte
     * mask per block, luma at full size and chroma as subsampled; then the whole mapping in
     * 2 MiB huge pages. */
    blocks = component_blocks(w, h, 1, 1, 1, 1);
    switch (info->components == 3 ? info->subsampling : SOPHON_SS_444) {
    case SOPHON_SS_420:
        blocks += 2 * component_blocks(w, h, 1, 2, 1, 2);
        break;
    case SOPHON_SS_422:
        blocks += 2 * component_blocks(w, h, 1, 2, 1, 1);
        break;
    case SOPHON_SS_440:
        blocks += 2 * component_blocks(w, h, 1, 1, 1, 2);
        break;
    case SOPHON_SS_411:
        blocks += 2 * component_blocks(w, h, 1, 4, 1, 1);
        break;
    default: /* 4:4:4, other factors (bounded by the full size), CMYK */
        blocks *= info->components > 1 ? info->components : 1;
        break;
    }
    bound = len + out + (4u << 20);
    if (info->progressive)
        bound += len + blocks * (128 + 8) + (4u << 20);
    /* libjpeg's sample and upsampling rows (a few iMCU rows of every component, fancy upsampling's
     * context), decode.c's line and RGB row: well under 160 bytes per column. */
    bound += w * 160;
    /* The resampler: weights (a kernel of about 2 x box / resize + 3 taps per output, kept as
     * doubles, fixed point and the expanded AVX2 form) and the ring of resampled rows. */
    rw = p->resize_w ? p->resize_w : p->out_w;
    rh = p->resize_h ? p->resize_h : p->out_h;
    bound += 64 * ((uint64_t)p->out_w * (2 * (uint64_t)p->box_w / rw + 4) +
                   (uint64_t)p->out_h * (2 * (uint64_t)p->box_h / rh + 4)) +
             (uint64_t)p->out_w * 3 * (2 * (uint64_t)p->box_h / rh + 8);
    return bound;
}

/*
 * Fast mode decodes at 1/2, 1/4 or 1/8 scale in the DCT domain: the largest factor whose scaled
 * box still covers the resize target, so the resample never upscales what was decoded smaller.
 */
static uint32_t pick_scale(const struct sophon_prep_params *p, const struct sophon__geometry *g)
{
    uint32_t d;

    if (!p->fast)
        return 1;
    for (d = 8; d > 1; d /= 2) {
        if ((uint64_t)p->box_w / d >= g->resize_w && (uint64_t)p->box_h / d >= g->resize_h)
            return d;
    }
    return 1;
}

/*
 * One axis of the window: the weights of its outputs when the box's `in` samples are resized to
 * `resize`, and which of the box's samples they read (*first, *n). Without a resize (Pillow
 * skips the pass) the window is a plain crop of the box.
 */
static int window_axis(struct sophon__coeffs *c, int need, uint32_t in, uint32_t resize,
                       uint32_t win, uint32_t out, uint32_t *first, uint32_t *n)
{
    int rc;

    if (!need) {
        *first = win;
        *n = out;
        return 0;
    }
    rc = sophon__coeffs_init_window(c, in, resize, win, out);
    *first = c->offset;
    *n = c->in;
    return rc;
}

/* First and one past the last decoded row that output row yy reads. */
static uint32_t v_first(const struct pipeline *pl, uint32_t yy)
{
    return pl->need_v ? pl->v.first[yy] : yy;
}

static uint32_t v_end(const struct pipeline *pl, uint32_t yy)
{
    return pl->need_v ? pl->v.first[yy] + pl->v.count[yy] : yy + 1;
}

static int on_header(void *ctx, uint32_t width, uint32_t height, struct sophon__region *rg)
{
    struct pipeline *pl = ctx;
    const struct sophon_prep_params *p = pl->p;
    const struct sophon__geometry *g = &pl->g;
    uint32_t d, x0, x1, y0, y1, col0 = 0, row0 = 0, rows = 0;
    uint64_t work;
    int rc;

    if ((uint64_t)p->box_x + p->box_w > width || (uint64_t)p->box_y + p->box_h > height) {
        sophon__seterr(pl->err, pl->errlen, "crop box %ux%u+%u+%u not inside the %ux%u image",
                       (unsigned)p->box_w, (unsigned)p->box_h, (unsigned)p->box_x,
                       (unsigned)p->box_y, (unsigned)width, (unsigned)height);
        return -EINVAL;
    }
    d = pick_scale(p, g);
    x0 = p->box_x / d;
    y0 = p->box_y / d;
    x1 = ceil_div((uint64_t)p->box_x + p->box_w, d);
    y1 = ceil_div((uint64_t)p->box_y + p->box_h, d);
    if (x1 > ceil_div(width, d))
        x1 = ceil_div(width, d);
    if (y1 > ceil_div(height, d))
        y1 = ceil_div(height, d);

    pl->need_h = g->resize_w != x1 - x0;
    pl->need_v = g->resize_h != y1 - y0;
    rc =
        window_axis(&pl->h, pl->need_h, x1 - x0, g->resize_w, g->win_x, p->out_w, &col0, &pl->in_w);
    if (rc == 0 && pl->need_h)
        rc = sophon__coeffs_expand(&pl->h);
    if (rc == 0)
        rc =
            window_axis(&pl->v, pl->need_v, y1 - y0, g->resize_h, g->win_y, p->out_h, &row0, &rows);
    if (rc < 0) {
        sophon__seterr(pl->err, pl->errlen, "cannot compute resample weights (%d)", rc);
        return rc;
    }
    pl->ring_rows = pl->need_v ? pl->v.ksize : 1;
    pl->stride = (size_t)(pl->need_h ? p->out_w : pl->in_w) * 3;

    work = (uint64_t)pl->ring_rows * pl->stride + (uint64_t)pl->stride * 5 +
           (uint64_t)pl->ring_rows * sizeof(*pl->rowp);
    if (work > WORK_BYTES_MAX) {
        sophon__seterr(pl->err, pl->errlen, "resample needs %llu bytes of buffers, over %u",
                       (unsigned long long)work, (unsigned)WORK_BYTES_MAX);
        return -EFBIG;
    }
    pl->ring = malloc((size_t)pl->ring_rows * pl->stride);
    pl->rowp = malloc((size_t)pl->ring_rows * sizeof(*pl->rowp));
    pl->acc = malloc((size_t)p->out_w * 3 * sizeof(*pl->acc));
    pl->orow = malloc((size_t)p->out_w * 3);
    if (pl->ring == NULL || pl->rowp == NULL || pl->acc == NULL || pl->orow == NULL) {
        sophon__seterr(pl->err, pl->errlen, "out of memory for resample buffers");
        return -ENOMEM;
    }

    rg->scale_denom = d;
    rg->x = x0 + col0;
    rg->w = pl->in_w;
    rg->y = y0 + row0;
    rg->h = rows;
    return 0;
}

/*
 * ToTensor divides by 255 in float32, Normalize subtracts then divides in float32: three rounded
 * float operations, in that order. The one place f32 values are made (through normalize_table),
 * for sophon_prep_run and sophon_prep_normalize alike, so that both give the same bytes.
 */
static inline float normalize(uint8_t v, const struct sophon_prep_params *p, uint32_t c)
{
    return ((float)v / 255.0f - p->mean[c]) / p->std[c];
}

/* A channel takes 256 values: look them up rather than divide twice per output float. */
static void normalize_table(float t[3][256], const struct sophon_prep_params *p)
{
    uint32_t c, v;

    for (c = 0; c < 3; c++)
        for (v = 0; v < 256; v++)
            t[c][v] = normalize((uint8_t)v, p, c);
}

/* Write one finished RGB output row: mirrored if asked, as bytes or normalized planes. */
static void store_row(struct pipeline *pl, const uint8_t *rgb, uint32_t yy)
{
    const struct sophon_prep_params *p = pl->p;
    uint32_t w = p->out_w, x, c;

    if (p->format == SOPHON_FORMAT_U8) {
        uint8_t *dst = pl->out + (size_t)yy * w * 3;

        if (!p->flip) {
            memcpy(dst, rgb, (size_t)w * 3);
            return;
        }
        for (x = 0; x < w; x++)
            memcpy(dst + (size_t)(w - 1 - x) * 3, rgb + (size_t)x * 3, 3);
        return;
    }
    for (c = 0; c < 3; c++) {
        uint8_t *plane = pl->out + ((size_t)c * p->out_h + yy) * w * sizeof(float);

        for (x = 0; x < w; x++) {
            float f = pl->norm[c][rgb[(size_t)x * 3 + c]];
            uint32_t xo = p->flip ? w - 1 - x : x;

            memcpy(plane + (size_t)xo * sizeof(float), &f, sizeof(f));
        }
    }
}

int sophon_prep_normalize(uint8_t *out, size_t out_cap, const uint8_t *hwc,
                          const struct sophon_prep_params *p)
{
    struct sophon_prep_params f32;
    float norm[3][256];
    uint32_t w, h, x, y, c;

    if (out == NULL || hwc == NULL || p == NULL)
        return -EINVAL;
    f32 = *p;
    f32.format = SOPHON_FORMAT_F32;
    if (sophon_prep_output_size(&f32) == 0)
        return -EINVAL;
    for (c = 0; c < 3; c++)
        if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0.0f)
            return -EINVAL;
    if (sophon_prep_output_size(&f32) > out_cap)
        return -ERANGE;
    w = p->out_w;
    h = p->out_h;
    normalize_table(norm, p);
    /* The u8 output is already flipped: the planes follow it pixel for pixel. */
    for (c = 0; c < 3; c++) {
        for (y = 0; y < h; y++) {
            uint8_t *row = out + ((size_t)c * h + y) * w * sizeof(float);
            const uint8_t *src = hwc + (size_t)y * w * 3 + c;

            for (x = 0; x < w; x++) {
                float f = norm[c][src[(size_t)x * 3]];

                memcpy(row + (size_t)x * sizeof(float), &f, sizeof(f));
            }
        }
    }
    return 0;
}

/* Decoded rows count from the first one the window reads: region row r is ring slot r % size. */
static uint8_t *ring_row(struct pipeline *pl, uint32_t row)
{
    return pl->ring + (size_t)(row % pl->ring_rows) * pl->stride;
}

static void emit_row(struct pipeline *pl, uint32_t yy)
{
    uint32_t i, first = v_first(pl, yy);

    if (!pl->need_v) {
        /* Same size vertically: Pillow copies the (horizontally resampled) row. */
        store_row(pl, ring_row(pl, first), yy);
        return;
    }
    for (i = 0; i < pl->v.count[yy]; i++)
        pl->rowp[i] = ring_row(pl, first + i);
    sophon__resample_v(pl->orow, pl->rowp, (size_t)pl->p->out_w * 3, &pl->v, yy, pl->acc);
    store_row(pl, pl->orow, yy);
}

static int on_row(void *ctx, const uint8_t *rgb, uint32_t row)
{
    struct pipeline *pl = ctx;
    uint8_t *slot = ring_row(pl, row);

    if (pl->need_h)
        sophon__resample_h(slot, rgb, &pl->h);
    else
        memcpy(slot, rgb, pl->stride);
    /*
     * Windows [first, end) only move forward, so an output row is final once its last input
     * row is in, and its first row is at most ksize - 1 rows back: still in the ring.
     */
    while (pl->next_out < pl->p->out_h && v_end(pl, pl->next_out) <= row + 1) {
        emit_row(pl, pl->next_out);
        pl->next_out++;
    }
    return 0;
}

static int check_params(const struct sophon_prep_params *p, struct sophon__geometry *g, char *err,
                        size_t errlen)
{
    int c, rc;

    if (sophon_prep_output_size(p) == 0) {
        sophon__seterr(err, errlen, "bad output size %ux%u (1..%u) or format %u",
                       (unsigned)p->out_w, (unsigned)p->out_h, (unsigned)SOPHON_MAX_SIDE,
                       (unsigned)p->format);
        return -EINVAL;
    }
    if (p->box_w == 0 || p->box_h == 0) {
        sophon__seterr(err, errlen, "empty crop box");
        return -EINVAL;
    }
    rc = sophon__prep_geometry(g, p, err, errlen);
    if (rc < 0)
        return rc;
    if (p->format == SOPHON_FORMAT_F32) {
        for (c = 0; c < 3; c++) {
            if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0.0f) {
                sophon__seterr(err, errlen, "bad normalization for channel %d", c);
                return -EINVAL;
            }
        }
    }
    return 0;
}

int sophon_prep_run(uint8_t *out, size_t out_cap, const uint8_t *jpeg, size_t len,
                    const struct sophon_prep_params *p, const struct sophon_limits *lim, char *err,
                    size_t errlen)
{
    return sophon__prep_run(out, out_cap, jpeg, len, p, lim, 0, err, errlen);
}

int sophon__prep_run(uint8_t *out, size_t out_cap, const uint8_t *jpeg, size_t len,
                     const struct sophon_prep_params *p, const struct sophon_limits *lim,
                     unsigned decode_flags, char *err, size_t errlen)
{
    static const struct sophon_limits default_limits = SOPHON_LIMITS_INIT;
    struct pipeline pl;
    struct sophon__decode_cb cb;
    uint64_t size;
    int rc;

    if (out == NULL || jpeg == NULL || p == NULL) {
        sophon__seterr(err, errlen, "NULL argument");
        return -EINVAL;
    }
    if (lim == NULL)
        lim = &default_limits;
    memset(&pl, 0, sizeof(pl));
    rc = check_params(p, &pl.g, err, errlen);
    if (rc < 0)
        return rc;
    size = sophon_prep_output_size(p);
    if (lim->max_output_bytes != 0 && size > lim->max_output_bytes) {
        sophon__seterr(err, errlen, "output of %llu bytes over the limit of %llu",
                       (unsigned long long)size, (unsigned long long)lim->max_output_bytes);
        return -EFBIG;
    }
    if (lim->max_input_bytes != 0 && len > lim->max_input_bytes) {
        sophon__seterr(err, errlen, "JPEG of %zu bytes over the limit of %llu", len,
                       (unsigned long long)lim->max_input_bytes);
        return -EFBIG;
    }
    if (size > out_cap) {
        sophon__seterr(err, errlen, "output needs %llu bytes, buffer has %zu",
                       (unsigned long long)size, out_cap);
        return -ERANGE;
    }

    if (p->format == SOPHON_FORMAT_F32)
        normalize_table(pl.norm, p);
    pl.p = p;
    pl.out = out;
    pl.err = err;
    pl.errlen = errlen;
    cb.header = on_header;
    cb.row = on_row;
    cb.ctx = &pl;
    decode_flags &= SOPHON__DECODE_WHOLE_FILE | SOPHON__DECODE_LIBJPEG_HUFFMAN;
    if (p->fast)
        decode_flags |= SOPHON__DECODE_FAST;
    rc = sophon__decode(jpeg, len, lim, decode_flags, &cb, err, errlen);
    if (rc == 0 && pl.next_out != p->out_h) {
        sophon__seterr(err, errlen, "decoder delivered %u of %u output rows", (unsigned)pl.next_out,
                       (unsigned)p->out_h);
        rc = -EBADMSG;
    }
    sophon__coeffs_free(&pl.h);
    sophon__coeffs_free(&pl.v);
    free(pl.ring);
    free(pl.rowp);
    free(pl.acc);
    free(pl.orow);
    return rc;
}
