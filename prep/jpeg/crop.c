/*
 * crop.c - the lossless crop (prep.h's sophon_prep_crop): the quantized DCT coefficients of the
 * blocks a box needs, copied into a new sequential JPEG, as jpegtran -crop does, without decoding
 * a pixel.
 *
 * Why the pixels of the box come out the same: every block is the same coefficients under the
 * same quantization tables, so its IDCT gives the same samples; the region starts on the iMCU
 * grid, so blocks and MCUs line up as in the source, and it ends on the grid or at the image's
 * own edge, where the partial iMCU is the source's. What else a pixel depends on:
 *  - fancy upsampling (h2v1, h1v2, h2v2 in libjpeg-turbo 2.1) reads the chroma samples next to
 *    the pixel's own, and takes the image's edge samples for their missing neighbours: the
 *    region is the box widened by one pixel each way (sophon_prep_crop_region), so that no pixel
 *    of the box looks past the crop's edge where the source has more;
 *  - block smoothing, which libjpeg applies to a progressive file whose scans leave some of the
 *    first AC coefficients unknown: a crop (whose coefficients are all known) would not be
 *    smoothed. Those files are refused with -EDOM, as are files with coefficients out of the
 *    range a sequential JPEG can code (codable()), which only a corrupt file has.
 * The colour space, the component identifiers and sampling factors and the quantization tables
 * are copied (jpeg_copy_critical_parameters), with the marker that makes a decoder read the
 * colours as the source's are read: JFIF for YCbCr and grayscale, Adobe for RGB, CMYK and YCCK.
 *
 * Rows below the region are never Huffman-decoded: libjpeg reads a private copy of the file
 * whose frame height ends with the region (prog_copy.h), and skips the rest of every scan.
 * Columns are all decoded (a scan codes whole rows). A baseline source's own Huffman tables are
 * reused where they code every symbol the crop needs (reuse_tables), which saves the statistics
 * pass of optimized tables.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coefmem.h"
#include "guard.h"
#include "huffman.h"
#include "jpeg.h"
#include "markers.h"
#include "prog_copy.h"
#include "sophon_common.h"

/*
 * The destination: the caller's buffer; a crop that does not fit fails with -ENOSPC. libjpeg
 * asks for more room as soon as the buffer is full, even after its last byte: it then gets a
 * spare, and the crop fits if nothing was written there.
 */
struct crop_dest {
    struct jpeg_destination_mgr pub;
    struct sophon__jpeg *j;
    uint8_t *buf;
    size_t cap;
    int in_spare;
    uint8_t spare[16];
};

static void dest_init(j_compress_ptr c)
{
    struct crop_dest *d = (struct crop_dest *)c->dest;
    d->pub.next_output_byte = d->buf;
    d->pub.free_in_buffer = d->cap;
}

static _Noreturn void too_large(struct crop_dest *d)
{
    sophon__jpeg_fail(d->j, -ENOSPC, "the crop is larger than its limit");
}

static boolean dest_full(j_compress_ptr c)
{
    struct crop_dest *d = (struct crop_dest *)c->dest;
    if (d->in_spare)
        too_large(d);
    d->in_spare = 1;
    d->pub.next_output_byte = d->spare;
    d->pub.free_in_buffer = sizeof(d->spare);
    return TRUE;
}

/* The crop's length, once libjpeg has finished it. */
static size_t dest_length(struct crop_dest *d)
{
    if (!d->in_spare)
        return d->cap - d->pub.free_in_buffer;
    if (d->pub.free_in_buffer != sizeof(d->spare))
        too_large(d);
    return d->cap;
}

static void dest_term(j_compress_ptr c)
{
    (void)c;
}

/* Everything a longjmp must not lose: reached through a pointer, never a changed local. */
struct crop_state {
    struct sophon__jpeg j; /* the source's decompressor and the error manager of both */
    struct sophon__coefmem coefmem;
    struct sophon__coefmem dst_coefmem; /* the crop's arrays, zero already (coefmem.h) */
    struct jpeg_compress_struct dst;
    int dst_created;
    struct crop_dest dest;
    uint8_t *copy;  /* the source cut below the region (prog_copy.h), if any */
    uint32_t scans; /* the source's SOS markers */
};

/* The file's checks and header, as the region decode reads them (guard.h), and the components
 * sophon decodes. */
static void read_source_header(struct crop_state *s, const uint8_t *jpeg, size_t len,
                               const struct sophon_limits *lim)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;

    sophon__jpeg_open(&s->j, jpeg, len, lim, &s->scans);
    if (c->num_components != 1 && c->num_components != 3 && c->num_components != 4)
        sophon__jpeg_fail(&s->j, -EMEDIUMTYPE, "JPEG with a component count other than 1, 3 or 4");
    if (c->num_components == 4 && c->jpeg_color_space != JCS_CMYK &&
        c->jpeg_color_space != JCS_YCCK)
        sophon__jpeg_fail(&s->j, -EMEDIUMTYPE, "4-component JPEG that is neither CMYK nor YCCK");
}

/* The guard's at_start hook: sophon's Huffman decoder before the first MCU is read. */
static void start_huffman(struct sophon__jpeg *j, void *arg)
{
    (void)arg;
    if (!j->cinfo.arith_code)
        sophon__huffman_install(&j->cinfo, 0);
}

/* Reads the coefficients of rows [0, y1), from a copy cut at y1 when that is shorter than the
 * file. */
static jvirt_barray_ptr *read_coefficients(struct crop_state *s, const uint8_t *jpeg, size_t len,
                                           uint32_t y1)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;
    JDIMENSION width = c->image_width, height = c->image_height;
    struct sophon__prog_copy pc;
    uint32_t dropped;
    size_t n;

    /* y1 ends an iMCU row or the image: no margin below it is needed (nothing is upsampled). */
    memset(&pc, 0, sizeof(pc));
    pc.height = y1;
    pc.ncomps = c->num_components;
    for (int ci = 0; ci < c->num_components; ci++)
        pc.id[ci] = (uint8_t)c->comp_info[ci].component_id;
    int rc = sophon__prog_copy_make(&s->copy, &n, &dropped, jpeg, len, &pc);
    if (rc < 0)
        sophon__jpeg_fail(&s->j, rc, "out of memory for the cut copy");
    if (s->copy != NULL) {
        jpeg_abort_decompress(c);
        sophon__jpeg_src(&s->j, s->copy, n);
        if (jpeg_read_header(c, TRUE) != JPEG_HEADER_OK || c->image_width != width ||
            c->image_height != (pc.height < height ? pc.height : height))
            sophon__jpeg_fail(&s->j, -EBADMSG, "the cut copy changed the frame header");
        s->j.allow_scan_tails = c->image_height < height;
    }
    s->j.at_start = start_huffman;
    s->j.at_start_arg = s;
    jvirt_barray_ptr *arrays = jpeg_read_coefficients(c);
    if (arrays == NULL)
        sophon__jpeg_fail(&s->j, -EBADMSG, "libjpeg read no coefficients");
    return arrays;
}

/*
 * libjpeg smooths the blocks of a progressive file whose scans leave any of AC coefficients
 * 1..9 of a component with unknown low bits (smoothing_ok in jdcoefct.c, do_block_smoothing on
 * by default): a crop cannot reproduce that.
 */
static void refuse_smoothed(struct crop_state *s)
{
    const struct jpeg_decompress_struct *c = &s->j.cinfo;
    if (!c->progressive_mode || c->coef_bits == NULL)
        return;
    for (int ci = 0; ci < c->num_components; ci++)
        for (int k = 0; k < 10; k++)
            if (c->coef_bits[ci][k] != 0)
                sophon__jpeg_fail(
                    &s->j, -EDOM,
                    "progressive JPEG whose scans leave coefficients unknown: libjpeg "
                    "smooths its blocks, which no crop reproduces");
}

/*
 * Whether a Huffman table codes every symbol an 8-bit sequential scan can need: for DC the
 * magnitude categories 0..11, for AC end-of-block, the run of 16 zeros and every run of 0..15
 * zeros before a magnitude of 1..10 bits (162 symbols: the standard tables do, most encoders'
 * defaults).
 */
static int codes_every_symbol(const JHUFF_TBL *t, int dc)
{
    int seen[256] = {0}, total = 0, got = 0;
    if (t == NULL)
        return 0;
    for (int l = 1; l <= 16; l++)
        total += t->bits[l];
    for (int k = 0; k < total && k < 256; k++)
        seen[t->huffval[k]] = 1;
    if (dc) {
        for (int v = 0; v <= 11; v++)
            got += seen[v];
        return got == 12;
    }
    for (int run = 0; run < 16; run++)
        for (int size = 1; size <= 10; size++)
            got += seen[run << 4 | size];
    return got == 160 && seen[0x00] && seen[0xf0];
}

static JHUFF_TBL *copy_table(j_compress_ptr d, const JHUFF_TBL *from)
{
    JHUFF_TBL *t = jpeg_alloc_huff_table((j_common_ptr)d);
    memcpy(t->bits, from->bits, sizeof(t->bits));
    memcpy(t->huffval, from->huffval, sizeof(t->huffval));
    t->sent_table = FALSE;
    return t;
}

/*
 * A baseline source's own Huffman tables, where they code every symbol a sequential scan can
 * need. Not only the symbols the source has: DC differences change where the crop's rows begin,
 * and a damaged source can decode to blocks whose coefficients its own codes never spelled (a
 * zero run past the block's end lands on its last coefficient). Such tables are most encoders'
 * defaults (the standard ones); they cost no statistics pass and code the crop as the source was
 * coded. Returns 1 if the crop uses them.
 */
static int reuse_tables(struct crop_state *s)
{
    const struct jpeg_decompress_struct *c = &s->j.cinfo;
    j_compress_ptr d = &s->dst;
    if (c->progressive_mode || c->arith_code || s->scans != 1 ||
        c->comps_in_scan != c->num_components)
        return 0;
    for (int ci = 0; ci < c->num_components; ci++) {
        const jpeg_component_info *k = &c->comp_info[ci];
        if (k->dc_tbl_no < 0 || k->dc_tbl_no >= NUM_HUFF_TBLS || k->ac_tbl_no < 0 ||
            k->ac_tbl_no >= NUM_HUFF_TBLS ||
            !codes_every_symbol(c->dc_huff_tbl_ptrs[k->dc_tbl_no], 1) ||
            !codes_every_symbol(c->ac_huff_tbl_ptrs[k->ac_tbl_no], 0))
            return 0;
    }
    for (int n = 0; n < NUM_HUFF_TBLS; n++) {
        d->dc_huff_tbl_ptrs[n] =
            c->dc_huff_tbl_ptrs[n] ? copy_table(d, c->dc_huff_tbl_ptrs[n]) : NULL;
        d->ac_huff_tbl_ptrs[n] =
            c->ac_huff_tbl_ptrs[n] ? copy_table(d, c->ac_huff_tbl_ptrs[n]) : NULL;
    }
    for (int ci = 0; ci < c->num_components; ci++) {
        d->comp_info[ci].dc_tbl_no = c->comp_info[ci].dc_tbl_no;
        d->comp_info[ci].ac_tbl_no = c->comp_info[ci].ac_tbl_no;
    }
    return 1;
}

/*
 * Whether n blocks' coefficients fit sequential 8-bit Huffman coding: AC magnitudes of at most
 * 10 bits, DC values within [-1024, 1023] (a DC of 8-bit samples is, and their differences then
 * stay within 11 bits). A corrupt or crafted source can hold larger ones, which libjpeg decodes
 * but whose codes a sequential JPEG does not have: its pixels have no crop.
 */
static int codable(const JBLOCK *b, JDIMENSION n)
{
    const JCOEF *c = b[0];
    size_t total = (size_t)n * DCTSIZE2;
    int bad = 0, edge = 0;
    /* One pass the compiler vectorizes: within [-1024, 1023], and whether -1024 occurs at all
     * (allowed for DC only, so then the exact check). */
    for (size_t i = 0; i < total; i++) {
        bad |= (uint16_t)(c[i] + 1024) > 2047;
        edge |= c[i] == -1024;
    }
    if (bad)
        return 0;
    for (JDIMENSION i = 0; edge && i < n; i++)
        for (int k = 1; k < DCTSIZE2; k++)
            if (b[i][k] == -1024)
                return 0;
    return 1;
}

/* The block arrays of the crop, each component's region of blocks at the source's offset. */
static void write_crop(struct crop_state *s, jvirt_barray_ptr *src_arrays, uint32_t x, uint32_t y,
                       uint32_t w, uint32_t h, int optimize)
{
    struct jpeg_decompress_struct *c = &s->j.cinfo;
    struct jpeg_compress_struct *d = &s->dst;
    jvirt_barray_ptr dst_arrays[MAX_COMPONENTS];
    JDIMENSION dst_wb[MAX_COMPONENTS], dst_hb[MAX_COMPONENTS];
    uint32_t imcu_w = (uint32_t)DCTSIZE * (uint32_t)c->max_h_samp_factor;
    uint32_t imcu_h = (uint32_t)DCTSIZE * (uint32_t)c->max_v_samp_factor;

    d->err = &s->j.pub;
    jpeg_create_compress(d);
    s->dst_created = 1;
    d->mem->max_memory_to_use = c->mem->max_memory_to_use;
    /* libjpeg's own arrays come from malloc, fresh pages every call for a large crop, which it
     * then zeroes: a fault every 4 KB, 440 of them (8 ms, more than the rest of the crop) for a
     * 1 MP image on a machine whose faults cost 17 us. */
    sophon__coefmem_install((j_common_ptr)d, &s->dst_coefmem);
    s->dest.pub.init_destination = dest_init;
    s->dest.pub.empty_output_buffer = dest_full;
    s->dest.pub.term_destination = dest_term;
    d->dest = &s->dest.pub;
    jpeg_copy_critical_parameters(c, d);
    d->image_width = w;
    d->image_height = h;
    d->optimize_coding = optimize && !reuse_tables(s) ? TRUE : FALSE;
    for (int ci = 0; ci < d->num_components; ci++) {
        const jpeg_component_info *k = &d->comp_info[ci];
        uint64_t wb = ((uint64_t)w * k->h_samp_factor + imcu_w - 1) / imcu_w * k->h_samp_factor;
        uint64_t hb = ((uint64_t)h * k->v_samp_factor + imcu_h - 1) / imcu_h * k->v_samp_factor;
        dst_wb[ci] = (JDIMENSION)wb;
        dst_hb[ci] = (JDIMENSION)hb;
        dst_arrays[ci] =
            (*d->mem->request_virt_barray)((j_common_ptr)d, JPOOL_IMAGE, TRUE, dst_wb[ci],
                                           dst_hb[ci], (JDIMENSION)k->v_samp_factor);
    }
    jpeg_write_coefficients(d, dst_arrays);
    for (int ci = 0; ci < d->num_components; ci++) {
        const jpeg_component_info *sc = &c->comp_info[ci];
        JDIMENSION x0 = x / imcu_w * (JDIMENSION)sc->h_samp_factor;
        JDIMENSION y0 = y / imcu_h * (JDIMENSION)sc->v_samp_factor;
        JDIMENSION src_wb = (JDIMENSION)(((uint64_t)sc->width_in_blocks + sc->h_samp_factor - 1) /
                                         sc->h_samp_factor * sc->h_samp_factor);
        JDIMENSION src_hb = (JDIMENSION)(((uint64_t)sc->height_in_blocks + sc->v_samp_factor - 1) /
                                         sc->v_samp_factor * sc->v_samp_factor);
        JDIMENSION ncopy = src_wb - x0 < dst_wb[ci] ? src_wb - x0 : dst_wb[ci];
        for (JDIMENSION r = 0; r < dst_hb[ci]; r++) {
            /* Zero already (coefmem.h): blocks past the source's stay so. */
            JBLOCKARRAY out =
                (*d->mem->access_virt_barray)((j_common_ptr)d, dst_arrays[ci], r, 1, TRUE);
            if (y0 + r >= src_hb)
                continue;
            JBLOCKARRAY in =
                (*c->mem->access_virt_barray)((j_common_ptr)c, src_arrays[ci], y0 + r, 1, FALSE);
            memcpy(out[0], in[0] + x0, sizeof(JBLOCK) * ncopy);
            if (!codable(out[0], ncopy))
                sophon__jpeg_fail(&s->j, -EDOM,
                                  "coefficients out of the range a sequential JPEG can code: the "
                                  "file is corrupt or crafted, and no crop reproduces its pixels");
        }
    }
    jpeg_finish_compress(d);
}

uint64_t sophon_prep_crop_memory_bound(const struct sophon_probe_info *info, uint64_t len,
                                       const struct sophon_prep_params *p)
{
    (void)p;
    if (info == NULL)
        return 0;
    /* The object and its cut copy, the source's coefficient arrays (8 bytes a pixel at most:
     * 4:4:4 CMYK, 4 components of 2 bytes a coefficient), the crop's (no larger), and libjpeg's
     * tables and buffers. */
    uint64_t px = (uint64_t)info->width * info->height;
    return 2 * len + px * 8 * 2 + (4u << 20);
}

/* sophon_prep_crop with its arguments checked and lim set: the function that owns the setjmp. */
static int crop(uint8_t *out, size_t cap, size_t *out_len, uint32_t *origin_x, uint32_t *origin_y,
                const uint8_t *jpeg, size_t len, const struct sophon_prep_params *p,
                const struct sophon_limits *lim, unsigned flags, char *err, size_t errlen)
{
    struct crop_state st;
    struct crop_state *s = &st;
    struct jpeg_decompress_struct *c = &st.j.cinfo;
    int rc;

    memset(s, 0, sizeof(*s));
    sophon__jpeg_init(&s->j, lim);
    s->dest.j = &s->j;
    s->dest.buf = out;
    s->dest.cap = cap;
    if (setjmp(s->j.jump)) {
        rc = s->j.code;
        if (s->j.msg[0] != '\0')
            sophon__seterr(err, errlen, "%s", s->j.msg);
        goto done;
    }
    jpeg_create_decompress(c);
    sophon__coefmem_install((j_common_ptr)c, &s->coefmem);
    read_source_header(s, jpeg, len, lim);
    uint32_t imcu_w = (uint32_t)DCTSIZE * (uint32_t)c->max_h_samp_factor;
    uint32_t imcu_h = (uint32_t)DCTSIZE * (uint32_t)c->max_v_samp_factor;
    uint32_t x, y, w, h;
    if (sophon_prep_crop_region(c->image_width, c->image_height, imcu_w, imcu_h, p, &x, &y, &w,
                                &h) < 0)
        sophon__jpeg_fail(&s->j, -EINVAL, "the box is not inside the image");
    jvirt_barray_ptr *arrays = read_coefficients(s, jpeg, len, y + h);
    refuse_smoothed(s);
    write_crop(s, arrays, x, y, w, h, (flags & SOPHON_CROP_OPTIMIZE) != 0);
    *out_len = dest_length(&s->dest);
    *origin_x = x;
    *origin_y = y;
    rc = 0;
done:
    if (s->dst_created)
        jpeg_destroy_compress(&s->dst);
    jpeg_destroy_decompress(c);
    free(s->copy);
    return rc;
}

int sophon_prep_crop(uint8_t *out, size_t cap, size_t *out_len, uint32_t *origin_x,
                     uint32_t *origin_y, const uint8_t *jpeg, size_t len,
                     const struct sophon_prep_params *p, const struct sophon_limits *lim,
                     unsigned flags, char *err, size_t errlen)
{
    static const struct sophon_limits defaults = SOPHON_LIMITS_INIT;

    if (out == NULL || out_len == NULL || origin_x == NULL || origin_y == NULL || jpeg == NULL ||
        p == NULL) {
        sophon__seterr(err, errlen, "NULL argument");
        return -EINVAL;
    }
    if (lim == NULL)
        lim = &defaults;
    if (lim->max_input_bytes != 0 && len > lim->max_input_bytes) {
        sophon__seterr(err, errlen, "JPEG of %zu bytes over the limit", len);
        return -EFBIG;
    }
    return crop(out, cap, out_len, origin_x, origin_y, jpeg, len, p, lim, flags, err, errlen);
}
