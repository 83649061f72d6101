/*
 * decode.c - region decode with libjpeg-turbo under a budget, reentrant, no exit().
 */
#include "jpeg.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coefmem.h"
#include "guard.h"
#include "huffman.h"
#include "markers.h"
#include "prog_copy.h"

/* Everything a longjmp must not lose: reached through a pointer, never a changed local. */
struct decode_state {
    struct sophon__jpeg j;
    struct sophon__coefmem coefmem; /* cinfo's coefficient arrays (coefmem.h). */
    /*
     * In a progressive file whose region is not the whole image: the iMCU columns [x0, x1) and
     * rows [y0, y1) whose blocks will be read (sophon__huffman_want); the others get no values.
     * x1 0: every block.
     */
    struct {
        uint32_t x0, x1, y0, y1;
    } want;
    struct sophon__region rg; /* As the header callback chose it, in scaled pixels. */
    JDIMENSION xoff, cw;      /* Columns decoded: [xoff, xoff + cw), the region and margins. */
    uint32_t first;           /* First row decoded; the rows above it are skipped. */
    uint8_t *line;            /* One decoded (cropped) scanline, out_color_components per pixel. */
    uint8_t *rgb;  /* The region's columns of that line as RGB, when a conversion is needed. */
    uint8_t *copy; /* The progressive copy of the file that libjpeg reads, if any (prog_copy.h). */
};

/* Set bits [from, to) of a bitmap. */
static void set_bits(uint64_t *bits, size_t from, size_t to)
{
    for (; from < to && from % 64 != 0; from++)
        bits[from / 64] |= 1ull << (from % 64);
    for (; from + 64 <= to; from += 64)
        bits[from / 64] = ~0ull;
    for (; from < to; from++)
        bits[from / 64] |= 1ull << (from % 64);
}

/*
 * Tell huffman.h which blocks of the coefficient arrays will be read: s->want's iMCUs, in
 * each component's blocks. Nothing if the arrays are not where coefmem.h says they are.
 */
static void want_blocks(struct decode_state *s)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;
    JDIMENSION blocks[MAX_COMPONENTS], rows[MAX_COMPONENTS];
    const JBLOCK *base = NULL, *first;
    size_t n = 0, at;
    uint64_t *bits;
    int ci;

    if (!c->progressive_mode || c->num_components > MAX_COMPONENTS)
        return;
    for (ci = 0; ci < c->num_components; ci++) {
        first = sophon__coefmem_array(&s->coefmem, ci, &blocks[ci], &rows[ci]);
        if (ci == 0)
            base = first;
        if (first == NULL || first != base + n)
            return;
        n += (size_t)blocks[ci] * rows[ci];
    }
    bits = sophon__huffman_want(c, base, n);
    if (bits == NULL)
        return;
    for (ci = 0, at = 0; ci < c->num_components; ci++) {
        const jpeg_component_info *comp = &c->comp_info[ci];
        uint64_t x0 = (uint64_t)s->want.x0 * comp->h_samp_factor;
        uint64_t x1 = (uint64_t)s->want.x1 * comp->h_samp_factor;
        uint64_t y = (uint64_t)s->want.y0 * comp->v_samp_factor;
        uint64_t y1 = (uint64_t)s->want.y1 * comp->v_samp_factor;

        x1 = x1 < blocks[ci] ? x1 : blocks[ci];
        y1 = y1 < rows[ci] ? y1 : rows[ci];
        for (; x0 < x1 && y < y1; y++)
            set_bits(bits, at + (size_t)y * blocks[ci] + x0, at + (size_t)y * blocks[ci] + x1);
        at += (size_t)blocks[ci] * rows[ci];
    }
}

/*
 * The guard's at_start hook in a file with several scans: huffman.h's decoder in place of
 * libjpeg's before the first scan is read, told which blocks will be read when s->want says.
 */
static void start_huffman(struct sophon__jpeg *j, void *arg)
{
    struct decode_state *s = arg;

    if (sophon__huffman_install(&j->cinfo, 0) && s->want.x1 != 0)
        want_blocks(s);
}

/* Pillow's MULDIV255: a * b / 255 rounded, without a division. */
static inline int muldiv255(int a, int b)
{
    int tmp = a * b + 128;

    return ((tmp >> 8) + tmp) >> 8;
}

static inline uint8_t clip8(int v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

void sophon__cmyk_to_rgb(uint8_t *dst, const uint8_t *src, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        /* "CMYK;I": Adobe stores inverted inks, so nk = 255 - k = raw k and c = 255 - raw c. */
        int nk = src[4 * i + 3];
        int c;

        for (c = 0; c < 3; c++)
            dst[3 * i + c] = clip8(nk - muldiv255(255 - src[4 * i + c], nk));
    }
}

static void gray_to_rgb(uint8_t *dst, const uint8_t *src, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
}

/* Pick the output colour space Pillow's decoder would use, and refuse what it cannot convert. */
static void choose_color(struct sophon__jpeg *j)
{
    struct jpeg_decompress_struct *c = &j->cinfo;

    switch (c->num_components) {
    case 1:
        c->out_color_space = JCS_GRAYSCALE;
        break;
    case 3:
        c->out_color_space = JCS_RGB;
        break;
    case 4:
        if (c->jpeg_color_space != JCS_CMYK && c->jpeg_color_space != JCS_YCCK)
            sophon__jpeg_fail(j, -EMEDIUMTYPE, "4-component JPEG that is neither CMYK nor YCCK");
        c->out_color_space = JCS_CMYK;
        break;
    default:
        sophon__jpeg_fail(j, -EMEDIUMTYPE, "JPEG with a component count other than 1, 3 or 4");
    }
}

/* After jpeg_read_header: what to decode and how, then the output size. */
static void set_output(struct sophon__jpeg *j, const struct sophon__region *rg, unsigned flags)
{
    struct jpeg_decompress_struct *c = &j->cinfo;
    int fast = (flags & SOPHON__DECODE_FAST) != 0;

    c->scale_num = 1;
    c->scale_denom = rg->scale_denom;
    c->dct_method = fast ? JDCT_IFAST : JDCT_ISLOW;
    c->do_fancy_upsampling = fast ? FALSE : TRUE;
    jpeg_calc_output_dimensions(c);
}

static void check_region(struct sophon__jpeg *j, const struct sophon__region *rg)
{
    const struct jpeg_decompress_struct *c = &j->cinfo;

    if (rg->w == 0 || rg->h == 0 || (uint64_t)rg->x + rg->w > c->output_width ||
        (uint64_t)rg->y + rg->h > c->output_height)
        sophon__jpeg_fail(j, -EINVAL, "region outside the image");
}

/*
 * A progressive file: switch libjpeg to a private copy that holds only what the region needs
 * (prog_copy.h), when that is less than the file, and read its header. The region's rows come from
 * full-resolution rows [0, (y + h) * scale_denom).
 */
static void use_prog_copy(struct decode_state *s, const uint8_t *jpeg, size_t len,
                          const struct sophon__region *rg, unsigned flags)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;
    struct sophon__prog_copy pc;
    JDIMENSION width = c->image_width, height = c->image_height;
    uint32_t dropped;
    size_t n;
    int ci, rc;

    memset(&pc, 0, sizeof(pc));
    pc.height = sophon__prog_copy_height(height, (uint32_t)DCTSIZE * (uint32_t)c->max_v_samp_factor,
                                         ((uint64_t)rg->y + rg->h) * rg->scale_denom);
    pc.ncomps = c->num_components; /* 1, 3 or 4 (choose_color). */
    for (ci = 0; ci < c->num_components; ci++) {
        pc.id[ci] = (uint8_t)c->comp_info[ci].component_id;
        /*
         * jpeg_idct_1x1 reads coef_block[0] only. Not every component gets it at 1/8: 4:2:0
         * chroma is scaled up by the IDCT (jpeg_idct_2x2, which reads AC coefficients) rather
         * than by the upsampler (jpeg_calc_output_dimensions).
         */
        pc.dc_only[ci] = c->comp_info[ci].DCT_scaled_size == 1;
    }
    rc = sophon__prog_copy_make(&s->copy, &n, &dropped, jpeg, len, &pc);
    if (rc < 0)
        sophon__jpeg_fail(&s->j, rc, "out of memory for the progressive copy");
    if (s->copy == NULL)
        return;

    jpeg_abort_decompress(c);
    sophon__jpeg_src(&s->j, s->copy, n);
    if (jpeg_read_header(c, TRUE) != JPEG_HEADER_OK || c->image_width != width ||
        c->image_height != (pc.height < height ? pc.height : height))
        sophon__jpeg_fail(&s->j, -EBADMSG, "the progressive copy changed the frame header");
    choose_color(&s->j);
    set_output(&s->j, rg, flags);
    /* Without the AC scans, smoothing would invent AC and DC values (prog_copy.c). */
    if (dropped > 0)
        c->do_block_smoothing = FALSE;
    s->j.allow_scan_tails = c->image_height < height;
}

/* Deliver one decoded scanline's region columns as RGB. */
static const uint8_t *region_rgb(struct decode_state *s, uint32_t col, uint32_t w)
{
    const struct jpeg_decompress_struct *c = &s->j.cinfo;
    const uint8_t *px = s->line + (size_t)col * (size_t)c->out_color_components;

    switch (c->out_color_space) {
    case JCS_RGB:
        return px;
    case JCS_GRAYSCALE:
        gray_to_rgb(s->rgb, px, w);
        return s->rgb;
    default:
        sophon__cmyk_to_rgb(s->rgb, px, w);
        return s->rgb;
    }
}

static void read_line(struct decode_state *s)
{
    JSAMPROW rows[1];

    rows[0] = s->line;
    if (jpeg_read_scanlines(&s->j.cinfo, rows, 1) != 1)
        sophon__jpeg_fail(&s->j, -EBADMSG, "libjpeg returned no scanline");
}

/* The file's checks and header (guard.h), under the limits, then the output colour space. */
static void read_header(struct decode_state *s, const uint8_t *jpeg, size_t len,
                        const struct sophon_limits *lim)
{
    sophon__jpeg_open(&s->j, jpeg, len, lim, NULL);
    choose_color(&s->j);
}

/*
 * The region, from the caller's header callback, and the output it is decoded at; a progressive
 * file switches to its private copy here.
 */
static void choose_region(struct decode_state *s, const uint8_t *jpeg, size_t len,
                          const struct sophon__decode_cb *cb, unsigned flags)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;
    struct sophon__region *rg = &s->rg;
    int rc;

    /* A failing callback has written its own message to err; "" keeps it. */
    rc = cb->header(cb->ctx, c->image_width, c->image_height, rg);
    if (rc < 0)
        sophon__jpeg_fail(&s->j, rc, "");
    if (rg->scale_denom != 1 && rg->scale_denom != 2 && rg->scale_denom != 4 &&
        rg->scale_denom != 8)
        sophon__jpeg_fail(&s->j, -EINVAL, "bad scale denominator");
    set_output(&s->j, rg, flags);
    check_region(&s->j, rg);
    if (c->progressive_mode && !(flags & SOPHON__DECODE_WHOLE_FILE)) {
        use_prog_copy(s, jpeg, len, rg, flags);
        check_region(&s->j, rg);
    }
}

/*
 * The margins around the region that make its pixels those of a full decode. An iMCU is
 * max_samp_factor * min_DCT_scaled_size output pixels each way (8 or 16 at full scale): the unit
 * in which libjpeg upsamples, crops and skips.
 *
 * Columns [xoff, xoff + cw): the region widened by `margin` on each side, within the image.
 *  - One iMCU: fancy upsampling interpolates each chroma sample with its neighbours, and at the
 *    ends of a cropped scanline it takes them for the image's edges (libjpeg.txt, "Decompressing
 *    partial scanlines"), so the outer iMCU of the crop may differ from a full decode.
 *  - Three in a progressive file: block smoothing (decompress_smooth_data in jdcoefct.c, when
 *    some of AC coefficients 1..9 were never sent in full) predicts each block from the DC
 *    values of the two blocks on either side, and takes the first cropped block column for the
 *    left edge of the image, so the first two blocks of every component differ; with the
 *    upsampling neighbour next to them, three iMCUs keep every difference out of the region.
 * jpeg_crop_scanline may then widen the crop to whole iMCUs, which only adds margin.
 *
 * Rows: rows [first, y) are decoded and dropped before the region. first = y - one iMCU row,
 * so that the region's first row gets its upsampling context (the chroma row above it) from
 * rows decoded as in a full decode; jpeg_skip_scanlines passes over the rows above first. When
 * y is within the first two iMCU rows, there is not a whole iMCU row to skip: decode from 0.
 * Below the region nothing is decoded at all (the progressive copy keeps its own margin of rows
 * below, prog_copy.c).
 */
static void add_margins(struct decode_state *s)
{
    const struct jpeg_decompress_struct *c = &s->j.cinfo;
    const struct sophon__region *rg = &s->rg;
    uint32_t imcu_w = (uint32_t)c->max_h_samp_factor * (uint32_t)c->min_DCT_scaled_size;
    uint32_t imcu_h = (uint32_t)c->max_v_samp_factor * (uint32_t)c->min_DCT_scaled_size;
    uint32_t margin = c->progressive_mode ? 3 * imcu_w : imcu_w;
    JDIMENSION x1 = (uint64_t)rg->x + rg->w + margin < c->output_width ? rg->x + rg->w + margin
                                                                       : c->output_width;

    s->xoff = rg->x > margin ? rg->x - margin : 0;
    s->cw = x1 - s->xoff;
    s->first = rg->y > 2 * imcu_h ? rg->y - imcu_h : 0;
    if (c->progressive_mode && (s->xoff != 0 || s->cw != c->output_width || s->first > 0 ||
                                rg->y + rg->h < c->output_height)) {
        /*
         * In iMCUs, the blocks libjpeg will read: the columns jpeg_crop_scanline keeps (it
         * starts them on an iMCU) and the rows from the one before the first row decoded
         * (upsampling context) to the one after the last; two more on every side for block
         * smoothing, which reads two blocks beyond the one it smooths.
         */
        s->want.x0 = s->xoff / imcu_w > 2 ? s->xoff / imcu_w - 2 : 0;
        s->want.x1 = (x1 + imcu_w - 1) / imcu_w + 2;
        s->want.y0 = s->first / imcu_h > 3 ? s->first / imcu_h - 3 : 0;
        s->want.y1 = (uint32_t)(((uint64_t)rg->y + rg->h + imcu_h - 1) / imcu_h + 3);
    }
}

/*
 * jpeg_start_decompress, with huffman.h's decoder taking over before the first MCU is read: in
 * the first progress callback of jpeg_start_decompress when libjpeg reads every scan first
 * (told which blocks will be read), else right after it. Then the crop of the columns.
 */
static void start(struct decode_state *s, unsigned flags)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;
    const struct sophon__region *rg = &s->rg;
    int huffman = !c->arith_code && !(flags & SOPHON__DECODE_LIBJPEG_HUFFMAN);

    if (huffman && jpeg_has_multiple_scans(c)) {
        s->j.at_start = start_huffman;
        s->j.at_start_arg = s;
    }
    jpeg_start_decompress(c);
    if (huffman && !jpeg_has_multiple_scans(c))
        sophon__huffman_install(c, 0);
    if (c->output_components != 3 &&
        !(c->out_color_space == JCS_GRAYSCALE && c->output_components == 1) &&
        !(c->out_color_space == JCS_CMYK && c->output_components == 4))
        sophon__jpeg_fail(&s->j, -EMEDIUMTYPE, "unexpected output component count");

    if (s->xoff != 0 || s->cw != c->output_width)
        jpeg_crop_scanline(c, &s->xoff, &s->cw);
    if (s->xoff > rg->x || (uint64_t)s->xoff + c->output_width < (uint64_t)rg->x + rg->w)
        sophon__jpeg_fail(&s->j, -EBADMSG, "libjpeg cropped the wrong columns");
}

/* The scanline buffer, and the RGB row of the region when the colours need converting. */
static void alloc_lines(struct decode_state *s)
{
    const struct jpeg_decompress_struct *c = &s->j.cinfo;
    uint64_t line_bytes = (uint64_t)c->output_width * (uint64_t)c->out_color_components;

    if (line_bytes > SIZE_MAX / 2)
        sophon__jpeg_fail(&s->j, -E2BIG, "scanline too large");
    s->line = malloc((size_t)line_bytes);
    if (c->out_color_space != JCS_RGB)
        s->rgb = malloc((size_t)s->rg.w * 3);
    if (s->line == NULL || (c->out_color_space != JCS_RGB && s->rgb == NULL))
        sophon__jpeg_fail(&s->j, -ENOMEM, "out of memory for a scanline");
}

/* Rows [first, y) decoded and dropped, then the region's rows handed to cb->row in order. */
static void deliver_rows(struct decode_state *s, const struct sophon__decode_cb *cb)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;
    const struct sophon__region *rg = &s->rg;
    uint32_t y;
    int rc;

    if (s->first > 0 && jpeg_skip_scanlines(c, s->first) != s->first)
        sophon__jpeg_fail(&s->j, -EBADMSG, "could not skip scanlines");
    while (c->output_scanline < rg->y)
        read_line(s);
    for (y = 0; y < rg->h; y++) {
        read_line(s);
        rc = cb->row(cb->ctx, region_rgb(s, rg->x - s->xoff, rg->w), y);
        if (rc < 0)
            sophon__jpeg_fail(&s->j, rc, "");
    }
}

int sophon__decode(const uint8_t *jpeg, size_t len, const struct sophon_limits *lim, unsigned flags,
                   const struct sophon__decode_cb *cb, char *err, size_t errlen)
{
    struct decode_state st;
    struct decode_state *s = &st;
    struct jpeg_decompress_struct *c = &st.j.cinfo;
    int rc;

    memset(s, 0, sizeof(*s));
    sophon__jpeg_init(&s->j, lim);
    if (setjmp(s->j.jump)) {
        rc = s->j.code;
        if (s->j.msg[0] != '\0')
            sophon__seterr(err, errlen, "%s", s->j.msg);
        goto done;
    }
    jpeg_create_decompress(c);
    sophon__coefmem_install((j_common_ptr)c, &s->coefmem);
    read_header(s, jpeg, len, lim);
    choose_region(s, jpeg, len, cb, flags);
    add_margins(s);
    start(s, flags);
    alloc_lines(s);
    deliver_rows(s, cb);
    /*
     * Rows below the region are never decoded (in a progressive file, never entropy-decoded
     * below the copy's height): corruption there goes unnoticed, by design.
     */
    if (c->output_scanline < c->output_height)
        jpeg_abort_decompress(c);
    else
        jpeg_finish_decompress(c);
    rc = 0;
done:
    jpeg_destroy_decompress(c);
    free(s->line);
    free(s->rgb);
    free(s->copy);
    return rc;
}
