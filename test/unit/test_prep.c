/*
 * test_prep.c - unit tests of the image pipeline (prep/).
 *
 * Test JPEGs are made in-test with libjpeg's compressor in every colour and sampling mode. The
 * reference is a deliberately plain re-implementation: a full-image libjpeg decode (no skipping,
 * no cropping), Pillow's CMYK conversion, then Pillow 9.4's two-pass fixed-point bilinear resize
 * on whole buffers. sophon_prep_run (partial decode, streaming resample) must match it byte for
 * byte. Agreement with Pillow itself is checked by test/exact/ over real photos. Progressive
 * files are decoded from a copy cut to the region (prep/jpeg/prog_copy.c); that must match a decode
 * of the whole file (sophon__prep_run with SOPHON__DECODE_WHOLE_FILE) in exact and fast mode alike.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <cmocka.h>
#include <jpeglib.h>

#include "huffman.h"
#include "prog_copy.h"
#include "jpeg.h"
#include "markers.h"
#include "pipeline.h"
#include "prep.h"

/* ---- Allocation failure injection (malloc and calloc are wrapped at link time). ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);

/* Allocations left before failing; < 0 means never fail. Only the main thread arms it. */
static long allocs_left = -1;
/* Zeroed allocations of 256 KB or more so far: coefmem's arrays from the heap. */
static long large_callocs;

static int alloc_should_fail(void)
{
    if (allocs_left < 0)
        return 0;
    if (allocs_left == 0)
        return 1;
    allocs_left--;
    return 0;
}

void *__wrap_malloc(size_t n)
{
    return alloc_should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    if (m != 0 && n >= ((size_t)256 << 10) / m)
        large_callocs++;
    return alloc_should_fail() ? NULL : __real_calloc(n, m);
}

/* ---- Test images. ---- */

enum kind { K_GRAY, K_444, K_422, K_420, K_440, K_411, K_RGB, K_CMYK, K_YCCK, K_COUNT };

static const char *const kind_names[K_COUNT] = {"gray", "444", "422",  "420", "440",
                                                "411",  "rgb", "cmyk", "ycck"};

struct jpeg_buf {
    uint8_t *data;
    size_t len;
    uint32_t w, h;
};

/* Deterministic pixels with smooth areas, edges and noise, so chroma upsampling matters. */
static uint8_t pattern(uint32_t x, uint32_t y, int c, uint32_t seed)
{
    uint32_t v = (x * 2654435761u) ^ (y * 2246822519u) ^ (uint32_t)(c * 3266489917u) ^ seed;
    int base;

    v ^= v >> 15;
    v *= 2246822519u;
    v ^= v >> 13;
    base = (int)((x * (3 + c) + y * (5 - c)) % 256);
    if (((x / 7) + (y / 5)) % 3 == 0)
        base = 255 - base;
    base += (int)(v % 21) - 10;
    return (uint8_t)(base < 0 ? 0 : base > 255 ? 255 : base);
}

struct compress_err {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void compress_error_exit(j_common_ptr cinfo)
{
    longjmp(((struct compress_err *)cinfo->err)->jump, 1);
}

/* How make_jpeg_enc encodes, beyond the kind and size. */
struct enc {
    int progressive; /* jpeg_simple_progression, unless scans is set. */
    int quality;
    unsigned restart_interval;   /* In MCUs; 0: none. */
    int restart_in_rows;         /* In MCU rows, as cjpeg -restart N; 0: none. */
    int arith;                   /* Arithmetic coding instead of Huffman. */
    const jpeg_scan_info *scans; /* A progression of our own (component indices). */
    int nscans;
};

static struct jpeg_buf make_jpeg_enc(enum kind k, uint32_t w, uint32_t h, const struct enc *en);

/* Encodes a w x h image of the given kind; progressive adds jpeg_simple_progression. */
static struct jpeg_buf make_jpeg(enum kind k, uint32_t w, uint32_t h, int progressive, int quality)
{
    struct enc en = {0};

    en.progressive = progressive;
    en.quality = quality;
    return make_jpeg_enc(k, w, h, &en);
}

static struct jpeg_buf make_jpeg_enc(enum kind k, uint32_t w, uint32_t h, const struct enc *en)
{
    struct jpeg_compress_struct c;
    struct compress_err e;
    struct jpeg_buf out = {NULL, 0, w, h};
    unsigned long size = 0;
    unsigned char *mem = NULL;
    uint8_t *row;
    int comps = k == K_GRAY ? 1 : (k == K_CMYK || k == K_YCCK) ? 4 : 3;
    uint32_t x, y;
    int i;

    row = malloc((size_t)w * (size_t)comps);
    assert_non_null(row);
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = compress_error_exit;
    if (setjmp(e.jump))
        fail_msg("libjpeg compression failed");
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &mem, &size);
    c.image_width = w;
    c.image_height = h;
    c.input_components = comps;
    c.in_color_space = comps == 1 ? JCS_GRAYSCALE : comps == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, en->quality, TRUE);
    if (k == K_RGB)
        jpeg_set_colorspace(&c, JCS_RGB);
    if (k == K_YCCK)
        jpeg_set_colorspace(&c, JCS_YCCK);
    if (comps >= 3) {
        int hs = 1, vs = 1;

        switch (k) {
        case K_422:
            hs = 2;
            break;
        case K_420:
        case K_YCCK:
            hs = 2;
            vs = 2;
            break;
        case K_440:
            vs = 2;
            break;
        case K_411:
            hs = 4;
            break;
        default:
            break;
        }
        for (i = 0; i < c.num_components; i++) {
            c.comp_info[i].h_samp_factor = 1;
            c.comp_info[i].v_samp_factor = 1;
        }
        c.comp_info[0].h_samp_factor = hs;
        c.comp_info[0].v_samp_factor = vs;
        if (k == K_YCCK) {
            c.comp_info[3].h_samp_factor = hs;
            c.comp_info[3].v_samp_factor = vs;
        }
    }
    if (en->progressive)
        jpeg_simple_progression(&c);
    if (en->scans != NULL) {
        c.scan_info = en->scans;
        c.num_scans = en->nscans;
    }
    c.restart_interval = en->restart_interval;
    c.restart_in_rows = en->restart_in_rows;
    c.arith_code = en->arith ? TRUE : FALSE;
    jpeg_start_compress(&c, TRUE);
    for (y = 0; y < h; y++) {
        JSAMPROW rp[1] = {row};

        for (x = 0; x < w; x++)
            for (i = 0; i < comps; i++)
                row[(size_t)x * comps + i] = pattern(x, y, i, (uint32_t)k);
        jpeg_write_scanlines(&c, rp, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    out.data = malloc(size);
    assert_non_null(out.data);
    memcpy(out.data, mem, size);
    out.len = size;
    free(mem);
    return out;
}

enum script { S_DC_ONLY, S_NO_REFINE, S_SEPARATE, S_LOW_ONLY, S_CHROMA_INCOMPLETE, S_COUNT };

static const char *const script_names[S_COUNT] = {"dc-only", "no-refine", "separate", "low-only",
                                                  "chroma-incomplete"};

static void add_scan(jpeg_scan_info *out, int *n, int ncomps, int c0, int ss, int se, int ah,
                     int al)
{
    jpeg_scan_info *sc = &out[(*n)++];
    int i;

    memset(sc, 0, sizeof(*sc));
    sc->comps_in_scan = ncomps;
    for (i = 0; i < ncomps; i++)
        sc->component_index[i] = c0 + i;
    sc->Ss = ss;
    sc->Se = se;
    sc->Ah = ah;
    sc->Al = al;
}

/*
 * Progressions libjpeg accepts that jpeg_simple_progression does not make. dc-only, no-refine
 * and chroma-incomplete never send some of coefficients 1..9 in full, so the decoder smooths
 * blocks with their neighbours' DC values (up to two block rows below); separate has one
 * component per DC scan and split bands; low-only never sends 10..63, which needs no smoothing.
 */
static int make_script(enum script s, int ncomps, jpeg_scan_info *out)
{
    int n = 0, c;

    switch (s) {
    case S_DC_ONLY:
        add_scan(out, &n, ncomps, 0, 0, 0, 0, 0);
        break;
    case S_NO_REFINE:
    case S_LOW_ONLY:
    case S_CHROMA_INCOMPLETE:
        add_scan(out, &n, ncomps, 0, 0, 0, 0, 0);
        for (c = 0; c < ncomps; c++)
            add_scan(out, &n, 1, c, 1, s == S_LOW_ONLY ? 9 : 63, 0,
                     s == S_NO_REFINE || (s == S_CHROMA_INCOMPLETE && c > 0));
        break;
    default:
        for (c = 0; c < ncomps; c++)
            add_scan(out, &n, 1, c, 0, 0, 0, 1);
        for (c = 0; c < ncomps; c++) {
            add_scan(out, &n, 1, c, 1, 2, 0, 0);
            add_scan(out, &n, 1, c, 3, 9, 0, 1);
            add_scan(out, &n, 1, c, 10, 63, 0, 0);
        }
        for (c = 0; c < ncomps; c++) {
            add_scan(out, &n, 1, c, 0, 0, 1, 0);
            add_scan(out, &n, 1, c, 3, 9, 1, 0);
        }
        break;
    }
    return n;
}

static int comps_of(enum kind k)
{
    return k == K_GRAY ? 1 : (k == K_CMYK || k == K_YCCK) ? 4 : 3;
}

/* ---- Reference pipeline: plain and whole-image, following Pillow 9.4 literally. ---- */

/* Full decode to RGB (w*h*3), with Pillow's "CMYK;I" + cmyk2rgb for 4 components. */
static uint8_t *ref_decode(const struct jpeg_buf *j)
{
    struct jpeg_decompress_struct d;
    struct compress_err e;
    uint8_t *rgb, *line;
    uint32_t x, y;

    d.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = compress_error_exit;
    if (setjmp(e.jump))
        fail_msg("reference decode failed");
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, j->data, j->len);
    jpeg_read_header(&d, TRUE);
    d.out_color_space = d.num_components == 4 ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&d);
    rgb = malloc((size_t)d.output_width * d.output_height * 3);
    line = malloc((size_t)d.output_width * d.output_components);
    assert_non_null(rgb);
    assert_non_null(line);
    for (y = 0; y < d.output_height; y++) {
        JSAMPROW rp[1] = {line};
        uint8_t *o = rgb + (size_t)y * d.output_width * 3;

        jpeg_read_scanlines(&d, rp, 1);
        for (x = 0; x < d.output_width; x++) {
            if (d.output_components == 3) {
                memcpy(o + 3 * x, line + 3 * x, 3);
            } else {
                int nk = line[4 * x + 3], c;

                for (c = 0; c < 3; c++) {
                    int in = 255 - line[4 * x + c];
                    int tmp = in * nk + 128;
                    int v = nk - (((tmp >> 8) + tmp) >> 8);

                    o[3 * x + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
            }
        }
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    free(line);
    return rgb;
}

static double ref_filter(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc for one axis. */
static void ref_coeffs(uint32_t in, uint32_t out, int **bounds, int32_t **kk, int *ksize)
{
    double scale = (double)in / out, fs = scale < 1.0 ? 1.0 : scale, support = fs, ss = 1.0 / fs;
    int ks = (int)ceil(support) * 2 + 1;
    double *pre = calloc((size_t)ks, sizeof(double));
    uint32_t xx;
    int x;

    *bounds = calloc((size_t)out * 2, sizeof(int));
    *kk = calloc((size_t)out * ks, sizeof(int32_t));
    assert_true(pre && *bounds && *kk);
    for (xx = 0; xx < out; xx++) {
        double center = (xx + 0.5) * scale, ww = 0.0;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);

        xmin = xmin < 0 ? 0 : xmin;
        xmax = (xmax > (int)in ? (int)in : xmax) - xmin;
        for (x = 0; x < xmax; x++)
            ww += pre[x] = ref_filter((x + xmin - center + 0.5) * ss);
        for (x = 0; x < xmax; x++) {
            double w = pre[x] / ww;

            (*kk)[(size_t)xx * ks + x] =
                (int32_t)(w < 0 ? -0.5 + w * (1 << 22) : 0.5 + w * (1 << 22));
        }
        (*bounds)[2 * xx] = xmin;
        (*bounds)[2 * xx + 1] = xmax;
    }
    *ksize = ks;
    free(pre);
}

static uint8_t ref_clip(int32_t v)
{
    v >>= 22;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* crop + resize (+ window) (+ flip) on a full RGB image, as Pillow's ImagingResampleInner: the
 * whole resize, then the window cut out of it. */
static uint8_t *ref_pipeline(const uint8_t *rgb, uint32_t iw, const struct sophon_prep_params *p)
{
    uint32_t bw = p->box_w, bh = p->box_h, x, y, c;
    uint32_t ow = p->resize_w ? p->resize_w : p->out_w, oh = p->resize_h ? p->resize_h : p->out_h;
    uint8_t *crop = malloc((size_t)bw * bh * 3), *tmp, *full, *out;
    int *hb, *vb, hks, vks, i;
    int32_t *hk, *vk;

    assert_non_null(crop);
    for (y = 0; y < bh; y++)
        memcpy(crop + (size_t)y * bw * 3, rgb + ((size_t)(p->box_y + y) * iw + p->box_x) * 3,
               (size_t)bw * 3);
    ref_coeffs(bw, ow, &hb, &hk, &hks);
    ref_coeffs(bh, oh, &vb, &vk, &vks);
    tmp = crop;
    if (ow != bw) {
        tmp = malloc((size_t)ow * bh * 3);
        assert_non_null(tmp);
        for (y = 0; y < bh; y++)
            for (x = 0; x < ow; x++)
                for (c = 0; c < 3; c++) {
                    int32_t s = 1 << 21;

                    for (i = 0; i < hb[2 * x + 1]; i++)
                        s += crop[((size_t)y * bw + hb[2 * x] + i) * 3 + c] * hk[x * hks + i];
                    tmp[((size_t)y * ow + x) * 3 + c] = ref_clip(s);
                }
    }
    full = malloc((size_t)ow * oh * 3);
    assert_non_null(full);
    if (oh != bh) {
        for (y = 0; y < oh; y++)
            for (x = 0; x < ow; x++)
                for (c = 0; c < 3; c++) {
                    int32_t s = 1 << 21;

                    for (i = 0; i < vb[2 * y + 1]; i++)
                        s += tmp[((size_t)(vb[2 * y] + i) * ow + x) * 3 + c] * vk[y * vks + i];
                    full[((size_t)y * ow + x) * 3 + c] = ref_clip(s);
                }
    } else {
        memcpy(full, tmp, (size_t)ow * oh * 3);
    }
    out = malloc((size_t)p->out_w * p->out_h * 3);
    assert_non_null(out);
    for (y = 0; y < p->out_h; y++)
        memcpy(out + (size_t)y * p->out_w * 3, full + ((size_t)(p->win_y + y) * ow + p->win_x) * 3,
               (size_t)p->out_w * 3);
    ow = p->out_w;
    if (p->flip) {
        for (y = 0; y < p->out_h; y++)
            for (x = 0; x < ow / 2; x++) {
                uint8_t t[3], *a = out + ((size_t)y * ow + x) * 3,
                              *b = out + ((size_t)y * ow + ow - 1 - x) * 3;

                memcpy(t, a, 3);
                memcpy(a, b, 3);
                memcpy(b, t, 3);
            }
    }
    if (tmp != crop)
        free(tmp);
    free(crop);
    free(full);
    free(hb);
    free(hk);
    free(vb);
    free(vk);
    return out;
}

/* ---- Helpers. ---- */

static struct sophon_prep_params params(uint32_t x, uint32_t y, uint32_t w, uint32_t h, uint32_t ow,
                                        uint32_t oh, int flip)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;

    p.box_x = x;
    p.box_y = y;
    p.box_w = w;
    p.box_h = h;
    p.out_w = ow;
    p.out_h = oh;
    p.flip = (uint8_t)flip;
    return p;
}

/* Runs the pipeline and the reference and asserts identical bytes. */
static void check_case(const struct jpeg_buf *j, const uint8_t *full,
                       const struct sophon_prep_params *p, const char *what)
{
    size_t n = (size_t)sophon_prep_output_size(p);
    uint8_t *got = malloc(n), *want;
    char err[256] = "";
    int rc;

    assert_non_null(got);
    rc = sophon_prep_run(got, n, j->data, j->len, p, NULL, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s box %ux%u+%u+%u: rc %d (%s)", what, p->box_w, p->box_h, p->box_x, p->box_y, rc,
                 err);
    want = ref_pipeline(full, j->w, p);
    if (memcmp(got, want, n) != 0)
        fail_msg("%s box %ux%u+%u+%u -> %ux%u window %ux%u+%u+%u flip %u: bytes differ", what,
                 p->box_w, p->box_h, p->box_x, p->box_y, p->resize_w, p->resize_h, p->out_w,
                 p->out_h, p->win_x, p->win_y, p->flip);
    free(got);
    free(want);
}

static uint32_t rnd(uint32_t *s, uint32_t n)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s % n;
}

/* Random boxes of all shapes plus every edge and corner, for one image. */
static void check_boxes(const struct jpeg_buf *j, uint32_t s, int cases, const char *what)
{
    uint8_t *full = ref_decode(j);
    uint32_t w = j->w, h = j->h, i;

    for (i = 0; i < (uint32_t)cases; i++) {
        uint32_t bw = 1 + rnd(&s, w), bh = 1 + rnd(&s, h);
        struct sophon_prep_params p = params(rnd(&s, w - bw + 1), rnd(&s, h - bh + 1), bw, bh,
                                             1 + rnd(&s, 64), 1 + rnd(&s, 64), (int)(i & 1));

        check_case(j, full, &p, what);
    }
    /* Corners and edges, 1-pixel boxes, the whole image, upscaling, same-size passes. */
    {
        const struct sophon_prep_params fixed[] = {
            params(0, 0, w, h, 24, 24, 0),
            params(0, 0, w, h, w, h, 1),
            params(0, 0, w, h, w, (h + 1) / 2, 0),
            params(0, 0, w, h, (w + 1) / 2, h, 1),
            params(0, 0, 1, 1, 5, 7, 0),
            params(w - 1, h - 1, 1, 1, 3, 3, 1),
            params(w - 1, 0, 1, h, 4, 9, 0),
            params(0, h - 1, w, 1, 9, 4, 1),
            params(w / 2, h / 2, w - w / 2, h - h / 2, 50, 50, 0),
            params(0, 0, w < 5 ? w : 5, h < 3 ? h : 3, 224, 224, 1),
        };

        for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
            check_case(j, full, &fixed[i], what);
    }
    free(full);
}

static void check_many(enum kind k, uint32_t w, uint32_t h, int progressive, int cases)
{
    struct jpeg_buf j = make_jpeg(k, w, h, progressive, 85);
    char what[64];

    snprintf(what, sizeof(what), "%s %ux%u%s", kind_names[k], w, h, progressive ? " prog" : "");
    check_boxes(&j, 12345u + (uint32_t)k * 77u + w, cases, what);
    free(j.data);
}

static int run(const struct jpeg_buf *j, const struct sophon_prep_params *p,
               const struct sophon_limits *lim, size_t cap_minus)
{
    size_t n = (size_t)sophon_prep_output_size(p);
    uint8_t *out = malloc(n ? n : 1);
    char err[256] = "";
    int rc;

    assert_non_null(out);
    rc = sophon_prep_run(out, n - cap_minus, j->data, j->len, p, lim, err, sizeof(err));
    if (rc < 0)
        assert_true(err[0] != '\0'); /* Every error explains itself. */
    free(out);
    return rc;
}

/* ---- Tests. ---- */

/* huffman.c agrees with the libjpeg it is linked with (selfcheck.c), and the comparison the
 * self-check runs tells a file both decoders read alike from one they do not. */
static void test_selfcheck(void **state)
{
    char err[400] = "";
    (void)state;
    assert_int_equal(sophon_prep_selfcheck(err, sizeof(err)), 0);
    assert_non_null(strstr(err, "agrees"));
    /* Cached: the same verdict, at once. */
    assert_int_equal(sophon_prep_selfcheck(NULL, 0), 0);

    for (int progressive = 0; progressive <= 1; progressive++) {
        struct jpeg_buf j = make_jpeg(K_422, 200, 120, progressive, 90);
        assert_int_equal(sophon__huffman_compare(j.data, j.len, 0, err, sizeof(err)), 0);
        assert_int_equal(
            sophon__huffman_compare(j.data, j.len, SOPHON__HUFFMAN_PORTABLE, err, sizeof(err)), 0);
        /* Both fail alike on a truncated file: no disagreement. */
        assert_int_equal(sophon__huffman_compare(j.data, j.len / 2, 0, err, sizeof(err)), 0);
        free(j.data);
    }
    /* Out of memory decides nothing. */
    struct jpeg_buf j = make_jpeg(K_420, 64, 48, 1, 90);
    allocs_left = 0;
    int r = sophon__huffman_compare(j.data, j.len, 0, err, sizeof(err));
    allocs_left = -1;
    assert_int_equal(r, -EAGAIN);
    free(j.data);
}

/* A field of /proc/self/status in kB (VmRSS, VmHWM), or -1. */
static long status_kb(const char *field)
{
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

/*
 * sophon_prep_memory_bound holds: the resident memory that sophon_prep_run adds at its peak while
 * it runs on the whole image of large files of each coding stays under the bound the OSD class
 * reserves. The peak is reset first (/proc/self/clear_refs); the large buffers (coefficient
 * arrays, rows of wide images) are fresh mappings, so memory freed by earlier tests and reused
 * here does not hide them.
 */
static void test_memory_bound(void **state)
{
    static const struct {
        enum kind k;
        uint32_t w, h;
        int progressive;
    } cases[] = {
        {K_444, 3000, 2000, 1},  {K_420, 4000, 3000, 1},  {K_420, 4000, 3000, 0},
        {K_GRAY, 2500, 2500, 1}, {K_CMYK, 1500, 1000, 1}, {K_422, 6000, 300, 0},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct jpeg_buf j = make_jpeg(cases[i].k, cases[i].w, cases[i].h, cases[i].progressive, 90);
        struct sophon_probe_info info;
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        assert_int_equal(sophon_probe(&info, j.data, j.len, NULL, 0), 0);
        p.box_w = j.w;
        p.box_h = j.h;
        uint64_t bound = sophon_prep_memory_bound(&info, j.len, &p);
        assert_true(bound > j.len);
        uint8_t *out = malloc(sophon_prep_output_size(&p));
        assert_non_null(out);
        memset(out, 0, sophon_prep_output_size(&p));
        FILE *f = fopen("/proc/self/clear_refs", "w");
        assert_non_null(f);
        assert_true(fputs("5", f) >= 0);
        assert_int_equal(fclose(f), 0);
        long before = status_kb("VmRSS");
        assert_int_equal(
            sophon_prep_run(out, sophon_prep_output_size(&p), j.data, j.len, &p, NULL, NULL, 0), 0);
        long grown = status_kb("VmHWM") - before;
        printf("memory bound: %s %ux%u%s: %ld kB used, bound %llu kB\n", kind_names[cases[i].k],
               cases[i].w, cases[i].h, cases[i].progressive ? " progressive" : "", grown,
               (unsigned long long)(bound >> 10));
        assert_true(before > 0 && grown >= 0);
        assert_true((uint64_t)grown * 1024 <= bound);
        free(out);
        free(j.data);
    }
}

static void test_output_size(void **state)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;

    (void)state;
    assert_int_equal(sophon_prep_output_size(&p), 224u * 224 * 3);
    p.format = SOPHON_FORMAT_F32;
    assert_int_equal(sophon_prep_output_size(&p), 224u * 224 * 3 * 4);
    p.out_w = SOPHON_MAX_SIDE;
    p.out_h = SOPHON_MAX_SIDE;
    assert_int_equal(sophon_prep_output_size(&p), (uint64_t)8192 * 8192 * 12);
    p.out_w = SOPHON_MAX_SIDE + 1;
    assert_int_equal(sophon_prep_output_size(&p), 0);
    p.out_w = 0;
    assert_int_equal(sophon_prep_output_size(&p), 0);
    p.out_w = 1;
    p.format = 7;
    assert_int_equal(sophon_prep_output_size(&p), 0);
    assert_int_equal(sophon_prep_output_size(NULL), 0);
}

static void test_probe_modes(void **state)
{
    static const struct {
        enum kind k;
        int prog;
        uint8_t comps, cs, ss;
    } cases[] = {
        {K_GRAY, 0, 1, SOPHON_CS_GRAY, SOPHON_SS_GRAY},
        {K_444, 0, 3, SOPHON_CS_YCBCR, SOPHON_SS_444},
        {K_422, 1, 3, SOPHON_CS_YCBCR, SOPHON_SS_422},
        {K_420, 0, 3, SOPHON_CS_YCBCR, SOPHON_SS_420},
        {K_440, 0, 3, SOPHON_CS_YCBCR, SOPHON_SS_440},
        {K_411, 0, 3, SOPHON_CS_YCBCR, SOPHON_SS_411},
        {K_RGB, 0, 3, SOPHON_CS_RGB, SOPHON_SS_444},
        {K_CMYK, 0, 4, SOPHON_CS_CMYK, SOPHON_SS_444},
        {K_YCCK, 1, 4, SOPHON_CS_YCCK, SOPHON_SS_420},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct jpeg_buf j = make_jpeg(cases[i].k, 37, 21, cases[i].prog, 80);
        struct sophon_probe_info info;

        assert_int_equal(sophon_probe(&info, j.data, j.len, NULL, 0), 0);
        assert_int_equal(info.width, 37);
        assert_int_equal(info.height, 21);
        assert_int_equal(info.components, cases[i].comps);
        assert_int_equal(info.colorspace, cases[i].cs);
        assert_int_equal(info.subsampling, cases[i].ss);
        assert_int_equal(info.progressive, cases[i].prog);
        assert_int_equal(info.bits, 8);
        assert_int_equal(info.scans, 0); /* The header alone does not tell. */
        assert_true(cases[i].prog ? sophon_count_scans(j.data, j.len) > 1
                                  : sophon_count_scans(j.data, j.len) == 1);
        free(j.data);
    }
    assert_string_equal(sophon_subsampling_name(SOPHON_SS_420), "420");
    assert_string_equal(sophon_colorspace_name(SOPHON_CS_YCCK), "ycck");
    assert_string_equal(sophon_colorspace_name(99), "unknown");
    assert_string_equal(sophon_subsampling_name(-1), "other");
}

/* Every colour and sampling mode, baseline and progressive, sizes not multiple of the MCU. */
static void test_modes_small(void **state)
{
    int k;

    (void)state;
    for (k = 0; k < K_COUNT; k++) {
        check_many((enum kind)k, 37, 23, 0, 30);
        check_many((enum kind)k, 1, 1, 0, 3);
        check_many((enum kind)k, 61, 2, 1, 10);
    }
}

/* Images large enough that rows are skipped and columns cropped by libjpeg. */
static void test_modes_partial_decode(void **state)
{
    int k;

    (void)state;
    for (k = 0; k < K_COUNT; k++) {
        check_many((enum kind)k, 389, 277, 0, 25);
        check_many((enum kind)k, 301, 203, 1, 10);
    }
}

/*
 * Progressive files that never send some of coefficients 1..9 in full: libjpeg smooths each block
 * with the DC values of the blocks two rows and two columns around it, so cropped columns need
 * a wider margin.
 */
static void test_modes_smoothing(void **state)
{
    static const enum kind kinds[] = {K_GRAY, K_444, K_420, K_422, K_411, K_YCCK};
    static const enum script scripts[] = {S_DC_ONLY, S_NO_REFINE, S_CHROMA_INCOMPLETE};
    jpeg_scan_info scans[64];
    struct enc en = {0};
    char what[64];
    size_t i, s;

    (void)state;
    en.quality = 85;
    en.scans = scans;
    for (s = 0; s < sizeof(scripts) / sizeof(scripts[0]); s++) {
        for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
            struct jpeg_buf j;

            en.nscans = make_script(scripts[s], comps_of(kinds[i]), scans);
            j = make_jpeg_enc(kinds[i], 203, 97, &en);
            snprintf(what, sizeof(what), "%s 203x97 %s", kind_names[kinds[i]],
                     script_names[scripts[s]]);
            check_boxes(&j, 777u + (uint32_t)(s * 10 + i), 12, what);
            free(j.data);
        }
    }
}

/* Random resize targets with a random window in them, and the validation geometry
 * (Resize(resize) + CenterCrop(size)) at several sizes: the window of the whole resize. */
static void check_windows(const struct jpeg_buf *j, uint32_t s, int cases, const char *what)
{
    static const uint32_t val[][2] = {{256, 224}, {232, 224}, {64, 32},   {40, 40},
                                      {33, 7},    {1, 1},     {160, 160}, {300, 288}};
    uint8_t *full = ref_decode(j);
    uint32_t w = j->w, h = j->h, i;

    for (i = 0; i < (uint32_t)cases; i++) {
        uint32_t bw = 1 + rnd(&s, w), bh = 1 + rnd(&s, h);
        struct sophon_prep_params p =
            params(rnd(&s, w - bw + 1), rnd(&s, h - bh + 1), bw, bh, 0, 0, (int)(i & 1));

        p.resize_w = 1 + rnd(&s, 300);
        p.resize_h = 1 + rnd(&s, 300);
        p.out_w = 1 + rnd(&s, p.resize_w);
        p.out_h = 1 + rnd(&s, p.resize_h);
        p.win_x = rnd(&s, p.resize_w - p.out_w + 1);
        p.win_y = rnd(&s, p.resize_h - p.out_h + 1);
        check_case(j, full, &p, what);
    }
    for (i = 0; i < sizeof(val) / sizeof(val[0]); i++) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;

        assert_int_equal(sophon_prep_set_val(&p, w, h, val[i][0], val[i][1]), 0);
        check_case(j, full, &p, what);
    }
    free(full);
}

static void test_windows(void **state)
{
    static const struct {
        enum kind k;
        uint32_t w, h;
        int prog;
    } images[] = {{K_420, 389, 277, 0},  {K_444, 301, 203, 1},  {K_422, 277, 389, 0},
                  {K_GRAY, 203, 301, 1}, {K_CMYK, 311, 211, 0}, {K_411, 256, 256, 1},
                  {K_440, 97, 333, 0},   {K_420, 333, 97, 1}};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
        struct jpeg_buf j = make_jpeg(images[i].k, images[i].w, images[i].h, images[i].prog, 85);
        char what[64];

        snprintf(what, sizeof(what), "%s %ux%u%s", kind_names[images[i].k], images[i].w,
                 images[i].h, images[i].prog ? " prog" : "");
        check_windows(&j, 4242u + (uint32_t)i, 20, what);
        free(j.data);
    }
}

/*
 * Only the rows the window's taps reach are decoded: a baseline file whose last quarter of
 * entropy-coded data is garbage (every code all ones, which no Huffman table assigns) still
 * prepares the validation window, with the bytes of the intact file, where the whole resize
 * decodes the garbage and refuses the file.
 */
static void test_window_decodes_its_rows(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 256, 1536, 0, 90);
    struct sophon_prep_params val = SOPHON_PREP_PARAMS_INIT, whole;
    uint8_t *a, *b, *bad;
    size_t n, i;
    char err[256];

    (void)state;
    /* 256 x 1536 at Resize(128): 128 x 768, the 64-row centre window at rows 352..415 of it,
     * which read source rows 702..833: MCU row 52 of 96 is the last it needs. */
    assert_int_equal(sophon_prep_set_val(&val, j.w, j.h, 128, 64), 0);
    whole = val;
    whole.win_x = whole.win_y = 0;
    whole.out_w = whole.resize_w;
    whole.out_h = whole.resize_h;
    n = (size_t)sophon_prep_output_size(&whole);
    a = malloc(n);
    b = malloc(n);
    bad = malloc(j.len);
    assert_true(a != NULL && b != NULL && bad != NULL);
    memcpy(bad, j.data, j.len);
    for (i = j.len * 3 / 4; i + 2 < j.len - 2; i += 2) {
        bad[i] = 0xff; /* a stuffed 0xFF: eight one bits */
        bad[i + 1] = 0x00;
    }
    assert_int_equal(sophon_prep_run(a, n, j.data, j.len, &val, NULL, err, sizeof(err)), 0);
    if (sophon_prep_run(b, n, bad, j.len, &val, NULL, err, sizeof(err)) != 0)
        fail_msg("damaged tail: %s", err);
    assert_memory_equal(a, b, (size_t)sophon_prep_output_size(&val));
    assert_int_equal(sophon_prep_run(b, n, j.data, j.len, &whole, NULL, err, sizeof(err)), 0);
    assert_int_equal(sophon_prep_run(b, n, bad, j.len, &whole, NULL, err, sizeof(err)), -EBADMSG);
    free(a);
    free(b);
    free(bad);
    free(j.data);
}

static void test_flip_mirrors(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 120, 80, 0, 90);
    struct sophon_prep_params p = params(7, 9, 100, 60, 33, 17, 0);
    size_t n = (size_t)sophon_prep_output_size(&p);
    uint8_t *a = malloc(n), *b = malloc(n);
    uint32_t x, y;

    (void)state;
    assert_int_equal(sophon_prep_run(a, n, j.data, j.len, &p, NULL, NULL, 0), 0);
    p.flip = 1;
    assert_int_equal(sophon_prep_run(b, n, j.data, j.len, &p, NULL, NULL, 0), 0);
    for (y = 0; y < p.out_h; y++)
        for (x = 0; x < p.out_w; x++)
            assert_memory_equal(a + ((size_t)y * p.out_w + x) * 3,
                                b + ((size_t)y * p.out_w + p.out_w - 1 - x) * 3, 3);
    free(a);
    free(b);
    free(j.data);
}

static void test_f32_is_normalized_u8(void **state)
{
    struct jpeg_buf j = make_jpeg(K_422, 150, 99, 1, 90);
    struct sophon_prep_params p = params(10, 3, 120, 90, 31, 29, 1);
    size_t n8, n32;
    uint8_t *u8, *f32;
    uint32_t x, y, c;

    (void)state;
    p.mean[0] = 0.5f;
    p.std[2] = 0.3f;
    n8 = (size_t)sophon_prep_output_size(&p);
    u8 = malloc(n8);
    assert_int_equal(sophon_prep_run(u8, n8, j.data, j.len, &p, NULL, NULL, 0), 0);
    p.format = SOPHON_FORMAT_F32;
    n32 = (size_t)sophon_prep_output_size(&p);
    assert_int_equal(n32, n8 * 4);
    f32 = malloc(n32);
    assert_int_equal(sophon_prep_run(f32, n32, j.data, j.len, &p, NULL, NULL, 0), 0);
    for (c = 0; c < 3; c++)
        for (y = 0; y < p.out_h; y++)
            for (x = 0; x < p.out_w; x++) {
                float got, want;

                /* CHW planes. */
                memcpy(&got, f32 + (((size_t)c * p.out_h + y) * p.out_w + x) * 4, 4);
                want = (u8[((size_t)y * p.out_w + x) * 3 + c] / 255.0 - p.mean[c]) / p.std[c];
                assert_true(fabsf(got - want) <= 1e-6f * fmaxf(1.0f, fabsf(want)));
            }
    /* The client's u8 -> f32 tail gives the pipeline's f32 bytes exactly (flip included). */
    uint8_t *tail = malloc(n32);
    assert_int_equal(sophon_prep_normalize(tail, n32, u8, &p), 0);
    assert_memory_equal(tail, f32, n32);
    assert_int_equal(sophon_prep_normalize(tail, n32 - 1, u8, &p), -ERANGE);
    p.std[1] = 0.0f;
    assert_int_equal(sophon_prep_normalize(tail, n32, u8, &p), -EINVAL);
    free(tail);
    free(u8);
    free(f32);
    free(j.data);
}

/* Replaces the first occurrence of a 2-byte marker by another one. */
static void patch_marker(struct jpeg_buf *j, uint8_t from, uint8_t to)
{
    size_t i;

    for (i = 0; i + 1 < j->len; i++) {
        if (j->data[i] == 0xff && j->data[i + 1] == from) {
            j->data[i + 1] = to;
            return;
        }
    }
    fail_msg("marker %02x not found", from);
}

static void test_errors_params(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 64, 48, 0, 80);
    struct sophon_prep_params p = params(0, 0, 64, 48, 16, 16, 0);
    uint8_t out[16 * 16 * 3];

    (void)state;
    assert_int_equal(run(&j, &p, NULL, 0), 0);
    assert_int_equal(sophon_prep_run(NULL, sizeof(out), j.data, j.len, &p, NULL, NULL, 0), -EINVAL);
    assert_int_equal(sophon_prep_run(out, sizeof(out), NULL, j.len, &p, NULL, NULL, 0), -EINVAL);
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, NULL, NULL, NULL, 0),
                     -EINVAL);
    p = params(0, 0, 0, 48, 16, 16, 0); /* Empty box. */
    assert_int_equal(run(&j, &p, NULL, 0), -EINVAL);
    p = params(0, 0, 64, 0, 16, 16, 0);
    assert_int_equal(run(&j, &p, NULL, 0), -EINVAL);
    p = params(1, 0, 64, 48, 16, 16, 0); /* One column outside. */
    assert_int_equal(run(&j, &p, NULL, 0), -EINVAL);
    p = params(0, 48, 64, 1, 16, 16, 0); /* Starts below the image. */
    assert_int_equal(run(&j, &p, NULL, 0), -EINVAL);
    p = params(UINT32_MAX, 0, 2, 2, 16, 16, 0); /* x + w overflows 32 bits. */
    assert_int_equal(run(&j, &p, NULL, 0), -EINVAL);
    p = params(0, 0, 8, 8, 0, 16, 0);
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &p, NULL, NULL, 0), -EINVAL);
    p = params(0, 0, 8, 8, SOPHON_MAX_SIDE + 1, 1, 0);
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &p, NULL, NULL, 0), -EINVAL);
    p = params(0, 0, 8, 8, 16, 16, 0);
    p.format = 9;
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &p, NULL, NULL, 0), -EINVAL);
    p.format = SOPHON_FORMAT_F32;
    p.std[1] = 0.0f;
    assert_int_equal(run(&j, &p, NULL, 0), -EINVAL);
    p.std[1] = NAN;
    assert_int_equal(run(&j, &p, NULL, 0), -EINVAL);
    free(j.data);
}

static void test_errors_data(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 64, 48, 0, 80);
    struct jpeg_buf bad;
    struct sophon_prep_params p = params(0, 0, 64, 48, 16, 16, 0);
    static const uint8_t junk[] = "this is not a JPEG at all";
    size_t i;

    (void)state;
    bad.w = j.w;
    bad.h = j.h;
    bad.data = (uint8_t *)junk;
    bad.len = sizeof(junk);
    assert_int_equal(run(&bad, &p, NULL, 0), -EBADMSG);
    bad.len = 0;
    assert_int_equal(run(&bad, &p, NULL, 0), -EBADMSG);
    /* Every truncation is refused, even where the box ends before the cut. */
    bad.data = j.data;
    for (i = 1; i < j.len; i += 1 + i / 8) {
        bad.len = i;
        assert_int_equal(run(&bad, &p, NULL, 0), -EBADMSG);
    }
    bad.data = malloc(j.len);
    assert_non_null(bad.data);
    memcpy(bad.data, j.data, j.len);
    bad.len = j.len;
    /* Corrupt entropy-coded data: libjpeg warns, we refuse. */
    for (i = j.len - 40; i < j.len - 10; i++)
        bad.data[i] = (uint8_t)(bad.data[i] ^ 0x5a);
    assert_int_equal(run(&bad, &p, NULL, 0), -EBADMSG);
    free(bad.data);
    free(j.data);
}

static void test_errors_unsupported(void **state)
{
    struct jpeg_buf j = make_jpeg(K_444, 32, 32, 0, 80);
    struct sophon_prep_params p = params(0, 0, 32, 32, 8, 8, 0);
    struct sophon_probe_info info;
    size_t i;

    (void)state;
    /* 12-bit: the SOF0 precision byte follows the marker and the 2-byte length. */
    for (i = 0; i + 4 < j.len; i++) {
        if (j.data[i] == 0xff && j.data[i + 1] == 0xc0) {
            j.data[i + 4] = 12;
            break;
        }
    }
    assert_int_equal(run(&j, &p, NULL, 0), -EMEDIUMTYPE);
    assert_int_equal(sophon_probe(&info, j.data, j.len, NULL, 0), -EMEDIUMTYPE);
    assert_int_equal(info.bits, 12);
    assert_int_equal(info.width, 32);
    free(j.data);

    /* Lossless (SOF3). */
    j = make_jpeg(K_444, 32, 32, 0, 80);
    patch_marker(&j, 0xc0, 0xc3);
    assert_int_equal(run(&j, &p, NULL, 0), -EMEDIUMTYPE);
    free(j.data);

    /* An Adobe APP14 with an unknown colour transform (2 is YCCK, only valid for 4 comps). */
    j = make_jpeg(K_RGB, 32, 32, 0, 80);
    for (i = 0; i + 16 < j.len; i++) {
        if (memcmp(j.data + i, "Adobe", 5) == 0) {
            j.data[i + 11] = 7;
            break;
        }
    }
    assert_true(i + 16 < j.len);
    assert_int_equal(run(&j, &p, NULL, 0), -EMEDIUMTYPE);
    free(j.data);
}

static void test_limits(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 64, 48, 1, 80);
    struct sophon_prep_params p = params(0, 0, 64, 48, 16, 16, 0);
    struct sophon_limits lim = SOPHON_LIMITS_INIT;
    uint8_t small[4];

    (void)state;
    assert_int_equal(run(&j, &p, &lim, 0), 0);
    lim.max_pixels = 64 * 48;
    assert_int_equal(run(&j, &p, &lim, 0), 0);
    lim.max_pixels = 64 * 48 - 1;
    assert_int_equal(run(&j, &p, &lim, 0), -E2BIG);
    lim.max_pixels = 0; /* Unlimited. */
    assert_int_equal(run(&j, &p, &lim, 0), 0);

    lim.max_scans = (uint32_t)sophon_count_scans(j.data, j.len);
    assert_true(lim.max_scans > 1);
    assert_int_equal(run(&j, &p, &lim, 0), 0);
    lim.max_scans--;
    assert_int_equal(run(&j, &p, &lim, 0), -E2BIG);
    lim.max_scans = 1000;

    lim.max_output_bytes = 16 * 16 * 3;
    assert_int_equal(run(&j, &p, &lim, 0), 0);
    lim.max_output_bytes = 16 * 16 * 3 - 1;
    assert_int_equal(run(&j, &p, &lim, 0), -EFBIG);
    lim = (struct sophon_limits)SOPHON_LIMITS_INIT;

    lim.max_input_bytes = j.len;
    assert_int_equal(run(&j, &p, &lim, 0), 0);
    lim.max_input_bytes = j.len - 1;
    assert_int_equal(run(&j, &p, &lim, 0), -EFBIG);
    lim = (struct sophon_limits)SOPHON_LIMITS_INIT;
    p.out_w = p.out_h = SOPHON_MAX_SIDE; /* 192 MiB of u8 is over the 64 MiB default. */
    assert_int_equal(sophon_prep_run(small, sizeof(small), j.data, j.len, &p, &lim, NULL, 0),
                     -EFBIG);
    p.out_w = p.out_h = 16;
    assert_int_equal(run(&j, &p, &lim, 1), -ERANGE);
    free(j.data);

    /* The object limit by default (lim NULL too): the JPEG padded with zeros after its EOI
     * decodes at SOPHON_MAX_OBJECT_BYTES and is refused one byte over it, as in the OSD. */
    j = make_jpeg(K_420, 64, 48, 0, 80);
    j.data = realloc(j.data, SOPHON_MAX_OBJECT_BYTES + 1);
    assert_non_null(j.data);
    memset(j.data + j.len, 0, SOPHON_MAX_OBJECT_BYTES + 1 - j.len);
    j.len = SOPHON_MAX_OBJECT_BYTES;
    assert_int_equal(run(&j, &p, NULL, 0), 0);
    j.len = SOPHON_MAX_OBJECT_BYTES + 1;
    assert_int_equal(run(&j, &p, NULL, 0), -EFBIG);
    assert_int_equal(run(&j, &p, &lim, 0), -EFBIG);
    free(j.data);

    /* 6000 rows into 1: the vertical kernel spans 12001 rows of 8192 * 3 bytes, over 256 MiB. */
    j = make_jpeg(K_GRAY, 8, 6000, 0, 50);
    p = params(0, 0, 8, 6000, SOPHON_MAX_SIDE, 1, 0);
    assert_int_equal(run(&j, &p, &lim, 0), -EFBIG);
    p.out_w = 1024; /* 6001 rows of 3 KiB: fine. */
    p.out_h = 2;
    assert_int_equal(run(&j, &p, &lim, 0), 0);
    free(j.data);
}

/* A progressive file whose last scan is repeated thousands of times: refused before decoding. */
static void test_scan_bomb(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 64, 48, 1, 80);
    struct sophon_prep_params p = params(0, 0, 64, 48, 16, 16, 0);
    size_t i, last_sos = 0, body, copies = 5000, n;
    uint8_t *bomb;
    struct jpeg_buf b;

    (void)state;
    for (i = 0; i + 1 < j.len; i++)
        if (j.data[i] == 0xff && j.data[i + 1] == 0xda)
            last_sos = i;
    assert_true(last_sos > 0);
    body = j.len - 2 - last_sos; /* From the last SOS to just before EOI. */
    n = last_sos + copies * body + 2;
    bomb = malloc(n);
    assert_non_null(bomb);
    memcpy(bomb, j.data, last_sos);
    for (i = 0; i < copies; i++)
        memcpy(bomb + last_sos + i * body, j.data + last_sos, body);
    bomb[n - 2] = 0xff;
    bomb[n - 1] = 0xd9;
    b.data = bomb;
    b.len = n;
    b.w = j.w;
    b.h = j.h;
    assert_int_equal(run(&b, &p, NULL, 0), -E2BIG);
    free(bomb);
    free(j.data);
}

/* A header that declares 64250 x 64250 pixels: refused from the header alone. */
static void test_header_bomb(void **state)
{
    struct jpeg_buf j = make_jpeg(K_444, 16, 16, 0, 80);
    struct sophon_prep_params p = params(0, 0, 16, 16, 8, 8, 0);
    size_t i;

    (void)state;
    for (i = 0; i + 8 < j.len; i++) {
        if (j.data[i] == 0xff && j.data[i + 1] == 0xc0) {
            j.data[i + 5] = 0xfa; /* height 0xfafa */
            j.data[i + 6] = 0xfa;
            j.data[i + 7] = 0xfa; /* width 0xfafa */
            j.data[i + 8] = 0xfa;
            break;
        }
    }
    assert_int_equal(run(&j, &p, NULL, 0), -E2BIG);
    free(j.data);
}

/* Every allocation of ours that fails gives -ENOMEM, no leak, no crash. */
/* Fails the n-th allocation and on, for n = 0, 1, ...: each run either fails with ENOMEM or,
 * once enough allocations succeed, passes. Returns how many runs failed. */
static int enomem_runs(const struct jpeg_buf *j, const struct sophon_prep_params *p)
{
    uint8_t out[20 * 20 * 3];
    long n;
    int rc, failures = 0;

    for (n = 0; n < 100; n++) {
        allocs_left = n;
        rc = sophon_prep_run(out, sizeof(out), j->data, j->len, p, NULL, NULL, 0);
        allocs_left = -1;
        if (rc == 0)
            break;
        assert_int_equal(rc, -ENOMEM);
        failures++;
    }
    assert_true(n < 100);
    return failures;
}

static void test_enomem(void **state)
{
    struct jpeg_buf j = make_jpeg(K_CMYK, 100, 70, 0, 80);
    struct sophon_prep_params p = params(10, 10, 80, 50, 20, 20, 0);

    (void)state;
    assert_true(enomem_runs(&j, &p) > 3);
    free(j.data);

    /* A progressive file, through the cut and its copy. */
    j = make_jpeg(K_420, 100, 170, 1, 80);
    assert_true(enomem_runs(&j, &p) > 3);
    free(j.data);
}

struct thread_arg {
    const struct jpeg_buf *j;
    const uint8_t *want;
    int ok;
};

static void *thread_main(void *a)
{
    struct thread_arg *t = a;
    struct sophon_prep_params p = params(3, 5, 200, 100, 50, 40, 1);
    uint8_t out[50 * 40 * 3];
    int i;

    t->ok = 1;
    for (i = 0; i < 20; i++) {
        if (sophon_prep_run(out, sizeof(out), t->j->data, t->j->len, &p, NULL, NULL, 0) != 0 ||
            memcmp(out, t->want, sizeof(out)) != 0)
            t->ok = 0;
    }
    return NULL;
}

/* Reentrancy: concurrent runs give the same bytes as a single run. */
static void test_threads(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 210, 111, 1, 80);
    struct sophon_prep_params p = params(3, 5, 200, 100, 50, 40, 1);
    uint8_t want[50 * 40 * 3];
    struct thread_arg args[4];
    pthread_t th[4];
    int i;

    (void)state;
    assert_int_equal(sophon_prep_run(want, sizeof(want), j.data, j.len, &p, NULL, NULL, 0), 0);
    for (i = 0; i < 4; i++) {
        args[i].j = &j;
        args[i].want = want;
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_true(args[i].ok);
    }
    free(j.data);
}

/* Fast mode: runs, changes pixels only a little (PSNR against exact > 25 dB). */
static void test_fast_mode(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 1200, 900, 0, 90);
    struct sophon_prep_params p = params(17, 33, 1100, 850, 64, 64, 0);
    uint8_t exact[64 * 64 * 3], fast[64 * 64 * 3];
    double se = 0, psnr;
    size_t i;

    (void)state;
    assert_int_equal(sophon_prep_run(exact, sizeof(exact), j.data, j.len, &p, NULL, NULL, 0), 0);
    p.fast = 1;
    assert_int_equal(sophon_prep_run(fast, sizeof(fast), j.data, j.len, &p, NULL, NULL, 0), 0);
    for (i = 0; i < sizeof(exact); i++)
        se += (double)(exact[i] - fast[i]) * (exact[i] - fast[i]);
    psnr = se == 0 ? 99.0 : 10 * log10(255.0 * 255.0 / (se / sizeof(exact)));
    print_message("fast mode PSNR vs exact: %.1f dB\n", psnr);
    assert_true(psnr > 25.0);
    free(j.data);
}

/* ---- The progressive cut (prep/jpeg/prog_copy.c): the same bytes as a decode of the whole file.
 * ---- */

/* One case through the cut and through the whole file: both succeed, with the same bytes. */
static void check_cut_case(const struct jpeg_buf *j, const uint8_t *full,
                           const struct sophon_prep_params *p, const char *what)
{
    size_t n = (size_t)sophon_prep_output_size(p);
    uint8_t *got = malloc(n), *want = malloc(n), *ref;
    char err[256] = "", err2[256] = "";
    int rc, rc2;

    assert_non_null(got);
    assert_non_null(want);
    rc = sophon__prep_run(got, n, j->data, j->len, p, NULL, 0, err, sizeof(err));
    rc2 = sophon__prep_run(want, n, j->data, j->len, p, NULL, SOPHON__DECODE_WHOLE_FILE, err2,
                           sizeof(err2));
    if (rc != 0 || rc2 != 0)
        fail_msg("%s box %ux%u+%u+%u fast %u: rc %d (%s), whole file %d (%s)", what, p->box_w,
                 p->box_h, p->box_x, p->box_y, p->fast, rc, err, rc2, err2);
    if (memcmp(got, want, n) != 0)
        fail_msg("%s box %ux%u+%u+%u -> %ux%u fast %u: cut differs from the whole file", what,
                 p->box_w, p->box_h, p->box_x, p->box_y, p->out_w, p->out_h, p->fast);
    if (!p->fast) {
        ref = ref_pipeline(full, j->w, p);
        if (memcmp(got, ref, n) != 0)
            fail_msg("%s box %ux%u+%u+%u: differs from the reference", what, p->box_w, p->box_h,
                     p->box_x, p->box_y);
        free(ref);
    }
    free(got);
    free(want);
}

/* A box in exact mode, then in fast mode at every scale it allows (1, 1/2, 1/4, 1/8). */
static void check_cut_box(const struct jpeg_buf *j, const uint8_t *full, uint32_t x, uint32_t y,
                          uint32_t bw, uint32_t bh, const char *what)
{
    struct sophon_prep_params p = params(x, y, bw, bh, 1 + bw / 3, 1 + bh / 2, (int)((x + y) & 1));
    uint32_t d;

    check_cut_case(j, full, &p, what);
    p.fast = 1;
    for (d = 1; d <= 8 && bw >= d && bh >= d; d *= 2) {
        /* pick_scale takes the largest d with box / d >= out: this one. */
        p.out_w = bw / d;
        p.out_h = bh / d;
        check_cut_case(j, full, &p, what);
    }
}

/*
 * The top, the bottom edge, 1-pixel boxes, and boxes whose bottoms lie on, just above and just
 * below multiples of 16 rows (every iMCU height divides 16 here) over the last 100 rows: where
 * the cut falls relative to the region's last row, and, near the bottom, where there is no cut.
 */
static void check_cut(const struct jpeg_buf *j, const char *what)
{
    static const int offsets[] = {-1, 0, 1};
    uint8_t *full = ref_decode(j);
    uint32_t w = j->w, h = j->h, b, bottom, bh;
    size_t i;

    check_cut_box(j, full, 0, 0, w, h, what);
    check_cut_box(j, full, 0, 0, w, 1, what);
    check_cut_box(j, full, w - 1, 0, 1, 1, what);
    check_cut_box(j, full, w / 3, 0, w - w / 3, h / 4, what);
    check_cut_box(j, full, 0, h / 2, w, 1, what);
    check_cut_box(j, full, 0, h - 24, w, 24, what);
    check_cut_box(j, full, w / 2, h - 1, 1, 1, what);
    for (b = h > 116 ? (h - 100) / 16 * 16 : 16; b <= h; b += 16) {
        for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
            bottom = b + offsets[i];
            if (bottom > h)
                continue;
            bh = bottom < 9 + b % 13 ? bottom : 9 + b % 13;
            check_cut_box(j, full, b % w, bottom - bh, w - b % w, bh, what);
        }
    }
    free(full);
}

/* Every colour and sampling mode with libjpeg's usual progression. */
static void test_cut_modes(void **state)
{
    char what[64];
    int k;

    (void)state;
    for (k = 0; k < K_COUNT; k++) {
        struct jpeg_buf j = make_jpeg((enum kind)k, 61, 200, 1, 85);

        snprintf(what, sizeof(what), "%s 61x200 prog", kind_names[k]);
        check_cut(&j, what);
        free(j.data);
    }
}

/* Progressions of our own: incomplete ones (block smoothing), non-interleaved DC, split bands. */
static void test_cut_progressions(void **state)
{
    static const enum kind kinds[] = {K_GRAY, K_420, K_444, K_422, K_YCCK};
    jpeg_scan_info scans[64];
    struct enc en = {0};
    char what[64];
    size_t i;
    int s;

    (void)state;
    en.quality = 80;
    for (s = 0; s < S_COUNT; s++) {
        for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
            struct jpeg_buf j;

            en.nscans = make_script((enum script)s, comps_of(kinds[i]), scans);
            en.scans = scans;
            j = make_jpeg_enc(kinds[i], 45, 200, &en);
            snprintf(what, sizeof(what), "%s 45x200 %s", kind_names[kinds[i]], script_names[s]);
            check_cut(&j, what);
            free(j.data);
        }
    }
}

/* Restart markers every MCU and every MCU row, and arithmetic coding. */
static void test_cut_restart_arith(void **state)
{
    static const struct {
        enum kind k;
        unsigned interval;
        int rows, arith;
        const char *what;
    } cases[] = {
        {K_420, 1, 0, 0, "420 restart 1 MCU"},
        {K_GRAY, 1, 0, 0, "gray restart 1 MCU"},
        {K_411, 1, 0, 0, "411 restart 1 MCU"},
        {K_CMYK, 3, 0, 0, "cmyk restart 3 MCUs"},
        {K_422, 0, 1, 0, "422 restart 1 row"},
        {K_440, 0, 1, 0, "440 restart 1 row"},
        {K_420, 0, 0, 1, "420 arithmetic"},
        {K_GRAY, 0, 0, 1, "gray arithmetic"},
        {K_444, 2, 0, 1, "444 arithmetic restart 2 MCUs"},
    };
    struct enc en = {0};
    size_t i;

    (void)state;
    en.progressive = 1;
    en.quality = 80;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct jpeg_buf j;

        en.restart_interval = cases[i].interval;
        en.restart_in_rows = cases[i].rows;
        en.arith = cases[i].arith;
        j = make_jpeg_enc(cases[i].k, 53, 200, &en);
        check_cut(&j, cases[i].what);
        free(j.data);
    }
}

/* Offsets of the SOS markers of j, in order; returns their count. */
static int find_scans(const struct jpeg_buf *j, size_t *at, int max)
{
    size_t i;
    int n = 0;

    /* In entropy-coded data 0xFF is always followed by 0x00 or RSTn: FF DA is a marker. */
    for (i = 0; i + 1 < j->len && n < max; i++)
        if (j->data[i] == 0xff && j->data[i + 1] == 0xda)
            at[n++] = i;
    return n;
}

/* Puts an RST5 marker (unexpected: no restart interval) at frac of scan k's entropy data. */
static void put_marker_in_scan(struct jpeg_buf *j, int k, double frac)
{
    size_t at[64] = {0}, data, end, pos;
    int n = find_scans(j, at, 64);

    assert_true(k < n);
    data = at[k] + 2 + (((size_t)j->data[at[k] + 2] << 8) | j->data[at[k] + 3]);
    end = k + 1 < n ? at[k + 1] : j->len - 2;
    pos = data + (size_t)((double)(end - data) * frac);
    assert_true(pos + 2 < end);
    j->data[pos] = 0xff;
    j->data[pos + 1] = 0xd5;
}

/* The SOF height of jpeg and, in *scans, its SOS count. */
static uint32_t probe_height(const uint8_t *jpeg, size_t len, uint32_t *scans)
{
    struct sophon_probe_info info;
    struct sophon__markers mk;

    assert_int_equal(sophon_probe(&info, jpeg, len, NULL, 0), 0);
    assert_int_equal(sophon__walk_markers(&mk, jpeg, len, 0), 0);
    assert_true(mk.eoi);
    *scans = mk.scans;
    return info.height;
}

/* Makes the cut copy of src and checks it: scans left out, SOF height and scans left; returns
 * its size. */
static size_t expect_copy(const struct jpeg_buf *src, const struct sophon__prog_copy *cut,
                          uint32_t dropped_want, uint32_t height_want, uint32_t scans_want)
{
    uint32_t dropped, nscans;
    uint8_t *copy;
    size_t n;

    assert_int_equal(sophon__prog_copy_make(&copy, &n, &dropped, src->data, src->len, cut), 0);
    assert_non_null(copy);
    assert_int_equal(dropped, dropped_want);
    assert_int_equal(probe_height(copy, n, &nscans), height_want);
    assert_int_equal(nscans, scans_want);
    free(copy);
    return n;
}

/* The copy itself: a lower SOF height, the AC scans of DC-only components left out, or nothing. */
static void test_cut_copy(void **state)
{
    struct jpeg_buf j = make_jpeg(K_444, 64, 200, 1, 80), g;
    struct sophon__prog_copy cut = {48, 3, {1, 2, 3}, {0, 0, 0}};
    jpeg_scan_info scans[64];
    struct enc en = {0};
    uint32_t dropped;
    uint8_t *copy, *junk;
    size_t n, at[64];

    (void)state;
    assert_int_equal(sophon__prog_copy_height(200, 8, 16), 48);
    assert_int_equal(sophon__prog_copy_height(200, 16, 17), 96);
    assert_int_equal(sophon__prog_copy_height(200, 16, 150), 200);
    assert_int_equal(sophon__prog_copy_height(200, 8, 200), 200);

    /* The height only: the same bytes but two. */
    assert_int_equal(expect_copy(&j, &cut, 0, 48, 10), j.len);

    /* Every component at 1/8: jpeg_simple_progression's 8 AC scans go, its 2 DC scans stay. */
    memset(cut.dc_only, 1, sizeof(cut.dc_only));
    assert_true(expect_copy(&j, &cut, 8, 48, 2) < j.len / 2);

    /* Luma only (4:2:0 at 1/8 upsamples chroma with the 2x2 IDCT): its 4 AC scans go. */
    cut.height = 200;
    cut.dc_only[1] = cut.dc_only[2] = 0;
    expect_copy(&j, &cut, 4, 200, 6);

    /* Nothing to leave out: no copy. */
    cut.dc_only[0] = 0;
    assert_int_equal(sophon__prog_copy_make(&copy, &n, &dropped, j.data, j.len, &cut), 0);
    assert_null(copy);

    /* Garbage between two segments would hide among the skipped tails: no copy. */
    junk = malloc(j.len + 3);
    assert_non_null(junk);
    assert_int_equal(find_scans(&j, at, 64), 10);
    memcpy(junk, j.data, at[1]);
    memcpy(junk + at[1], "abc", 3);
    memcpy(junk + at[1] + 3, j.data + at[1], j.len - at[1]);
    cut.height = 48;
    assert_int_equal(sophon__prog_copy_make(&copy, &n, &dropped, junk, j.len + 3, &cut), 0);
    assert_null(copy);
    free(junk);

    /* Coefficients 1..9 never sent in full: the decoder smooths blocks, so every scan stays. */
    en.quality = 80;
    en.nscans = make_script(S_NO_REFINE, 3, scans);
    en.scans = scans;
    g = make_jpeg_enc(K_444, 64, 200, &en);
    memset(cut.dc_only, 1, sizeof(cut.dc_only));
    expect_copy(&g, &cut, 0, 48, 4);
    free(g.data);
    free(j.data);
}

/*
 * Damage in data the cut never decodes goes unnoticed, as damage in rows below the region always
 * did: a marker in the tail of the last scan (rows far below the region), and, at 1/8 scale, in
 * an AC scan left out. Decoding the whole file refuses both; damage in the region is refused.
 */
static void test_cut_damage(void **state)
{
    struct jpeg_buf j = make_jpeg(K_444, 64, 200, 1, 80);
    struct sophon_prep_params top = params(0, 0, 64, 16, 16, 4, 0);
    struct sophon_prep_params all = params(0, 0, 64, 200, 8, 25, 0);
    uint8_t out[64 * 200 * 3];
    size_t at[64];

    (void)state;
    assert_int_equal(find_scans(&j, at, 64), 10);
    put_marker_in_scan(&j, 9, 0.8);
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &top, NULL, NULL, 0), 0);
    assert_int_equal(sophon__prep_run(out, sizeof(out), j.data, j.len, &top, NULL,
                                      SOPHON__DECODE_WHOLE_FILE, NULL, 0),
                     -EBADMSG);
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &all, NULL, NULL, 0),
                     -EBADMSG);
    free(j.data);

    /* Scan 1 is luma AC 1-5: not read at 1/8 (every component 1x1), needed otherwise. */
    j = make_jpeg(K_444, 64, 200, 1, 80);
    put_marker_in_scan(&j, 1, 0.5);
    all.fast = 1;
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &all, NULL, NULL, 0), 0);
    assert_int_equal(sophon__prep_run(out, sizeof(out), j.data, j.len, &all, NULL,
                                      SOPHON__DECODE_WHOLE_FILE, NULL, 0),
                     -EBADMSG);
    all.fast = 0;
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &all, NULL, NULL, 0),
                     -EBADMSG);
    all.fast = 1;
    all.out_w = 32; /* 1/2 scale: the 4x4 IDCT reads AC coefficients. */
    all.out_h = 100;
    assert_int_equal(sophon_prep_run(out, sizeof(out), j.data, j.len, &all, NULL, NULL, 0),
                     -EBADMSG);
    free(j.data);
}

/* Corrupt and truncated progressive files are refused with -EBADMSG, through the cut too. */
static void test_cut_errors(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 64, 200, 1, 80), bad;
    struct sophon_prep_params top = params(0, 0, 64, 16, 8, 2, 0);
    size_t at[64], i;
    int fast;

    (void)state;
    assert_int_equal(find_scans(&j, at, 64), 10);
    bad.w = j.w;
    bad.h = j.h;
    bad.data = malloc(j.len + 2);
    assert_non_null(bad.data);
    for (fast = 0; fast < 2; fast++) {
        top.fast = (uint8_t)fast;
        /* Truncated anywhere: no EOI. */
        for (i = 1; i < j.len; i += 1 + i / 8) {
            memcpy(bad.data, j.data, i);
            bad.len = i;
            assert_int_equal(run(&bad, &top, NULL, 0), -EBADMSG);
        }
        /* Truncated in the region's rows of the first scan, then an EOI. */
        i = at[0] + (at[1] - at[0]) / 20;
        memcpy(bad.data, j.data, i);
        bad.data[i] = 0xff;
        bad.data[i + 1] = 0xd9;
        bad.len = i + 2;
        assert_int_equal(run(&bad, &top, NULL, 0), -EBADMSG);
        /* A DC scan's header naming a component the frame does not have. */
        memcpy(bad.data, j.data, j.len);
        bad.len = j.len;
        bad.data[at[0] + 5] = 9;
        assert_int_equal(run(&bad, &top, NULL, 0), -EBADMSG);
    }
    /* An AC scan the 1/8 decode would leave out, with Se = 64: kept, and refused by libjpeg. */
    memcpy(bad.data, j.data, j.len);
    assert_int_equal(bad.data[at[1] + 4], 1); /* Ns = 1: Cs, Td/Ta, then Ss, Se. */
    bad.data[at[1] + 8] = 64;
    top.fast = 1;
    assert_int_equal(run(&bad, &top, NULL, 0), -EBADMSG);
    free(bad.data);

    /*
     * The last scan (luma AC refinement to Al = 0) twice: every coefficient still ends complete,
     * but libjpeg warns of a bogus progression at the second one. Kept, and refused.
     */
    bad.len = j.len + (j.len - 2 - at[9]);
    bad.data = malloc(bad.len);
    assert_non_null(bad.data);
    memcpy(bad.data, j.data, j.len - 2);
    memcpy(bad.data + j.len - 2, j.data + at[9], j.len - at[9]);
    assert_int_equal(run(&bad, &top, NULL, 0), -EBADMSG);
    free(bad.data);
    free(j.data);
}

/* test_prep [PATTERN]: only the tests whose names match PATTERN (cmocka's * and ? wildcards). */

/* ---- The lossless crop (crop.c). ---- */

/*
 * The crop of request p, then p run on it with the box moved by minus the origin: the same bytes
 * as p run on the source. Returns sophon_prep_crop's result (0: checked); -EDOM is returned
 * unchecked.
 */
static int check_crop_case(const struct jpeg_buf *j, const struct sophon_prep_params *p,
                           const char *what)
{
    size_t n = (size_t)sophon_prep_output_size(p), clen = 0;
    size_t cap = 2 * j->len + 65536; /* a baseline crop of a progressive file may be larger */
    uint8_t *want = malloc(n), *got = malloc(n), *crop = malloc(cap);
    uint32_t ox = 0, oy = 0;
    char err[256] = "";
    struct sophon_probe_info info;

    assert_true(want != NULL && got != NULL && crop != NULL);
    int rc = sophon_prep_crop(crop, cap, &clen, &ox, &oy, j->data, j->len, p, NULL,
                              SOPHON_CROP_OPTIMIZE, err, sizeof(err));
    if (rc == -EDOM)
        goto done;
    if (rc != 0)
        fail_msg("%s box %ux%u+%u+%u: crop rc %d (%s)", what, p->box_w, p->box_h, p->box_x,
                 p->box_y, rc, err);
    /* A sequential JPEG on the iMCU grid, holding the box. */
    assert_int_equal(sophon_probe(&info, crop, clen, NULL, 0), 0);
    assert_int_equal(info.progressive, 0);
    assert_true(ox <= p->box_x && oy <= p->box_y);
    assert_true((uint64_t)p->box_x + p->box_w <= (uint64_t)ox + info.width);
    assert_true((uint64_t)p->box_y + p->box_h <= (uint64_t)oy + info.height);
    struct sophon_prep_params q = *p;
    q.box_x -= ox;
    q.box_y -= oy;
    assert_int_equal(sophon_prep_run(want, n, j->data, j->len, p, NULL, err, sizeof(err)), 0);
    rc = sophon_prep_run(got, n, crop, clen, &q, NULL, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s box %ux%u+%u+%u: prep of the crop rc %d (%s)", what, p->box_w, p->box_h,
                 p->box_x, p->box_y, rc, err);
    if (memcmp(got, want, n) != 0)
        fail_msg("%s box %ux%u+%u+%u (crop %ux%u at %u,%u) fmt %u flip %u fast %u: bytes differ",
                 what, p->box_w, p->box_h, p->box_x, p->box_y, info.width, info.height, ox, oy,
                 p->format, p->flip, p->fast);
done:
    free(want);
    free(got);
    free(crop);
    return rc;
}

/* Random boxes, edges, corners, 1-pixel boxes and the whole image, u8 and f32, flipped or not. */
static int check_crop_boxes(const struct jpeg_buf *j, uint32_t s, int cases, const char *what)
{
    uint32_t w = j->w, h = j->h;
    int edom = 0;

    for (int i = 0; i < cases; i++) {
        uint32_t bw = 1 + rnd(&s, w), bh = 1 + rnd(&s, h);
        struct sophon_prep_params p = params(rnd(&s, w - bw + 1), rnd(&s, h - bh + 1), bw, bh,
                                             1 + rnd(&s, 48), 1 + rnd(&s, 48), i & 1);
        p.format = (uint8_t)((i >> 1) & 1);
        edom += check_crop_case(j, &p, what) == -EDOM;
    }
    const struct sophon_prep_params fixed[] = {
        params(0, 0, w, h, 24, 24, 0),
        params(0, 0, 1, 1, 5, 7, 0),
        params(w - 1, h - 1, 1, 1, 3, 3, 1),
        params(w - 1, 0, 1, h, 4, 9, 0),
        params(0, h - 1, w, 1, 9, 4, 1),
        params(w / 2, h / 2, w - w / 2, h - h / 2, 50, 50, 0),
        params(w / 3, h / 3, w / 3 + 1, h / 3 + 1, 17, 13, 1),
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        edom += check_crop_case(j, &fixed[i], what) == -EDOM;
    return edom;
}

/* Every kind, baseline and progressive, at sizes on and off the iMCU grid. */
static void test_crop_modes(void **state)
{
    static const uint32_t sizes[][2] = {{203, 97}, {64, 48}, {17, 301}};
    char what[64];

    (void)state;
    for (int k = 0; k < K_COUNT; k++)
        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
            for (int prog = 0; prog < 2; prog++) {
                struct jpeg_buf j = make_jpeg((enum kind)k, sizes[z][0], sizes[z][1], prog, 85);
                snprintf(what, sizeof(what), "crop %s %ux%u%s", kind_names[k], j.w, j.h,
                         prog ? " prog" : "");
                assert_int_equal(
                    check_crop_boxes(&j, 99u + (uint32_t)k * 31u + (uint32_t)z, 10, what), 0);
                free(j.data);
            }
}

/* Boxes in a last iMCU column of a few pixels: a crop that narrow would have 2 chroma samples a
 * row or fewer, which libjpeg upsamples plainly, not as the source's fancy upsampling. */
static void test_crop_narrow_edge(void **state)
{
    static const enum kind kinds[] = {K_420, K_422, K_444, K_440, K_411, K_YCCK};
    char what[64];
    (void)state;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (uint32_t w = 33; w <= 40; w++) {
            struct jpeg_buf j = make_jpeg(kinds[k], w, 37, (int)(w & 1), 90);
            snprintf(what, sizeof(what), "crop %s %ux37 narrow edge", kind_names[kinds[k]], w);
            for (uint32_t x = 30; x < w; x++)
                for (uint32_t bw = 1; x + bw <= w; bw++) {
                    struct sophon_prep_params p = params(x, 3, bw, 30, 7, 9, (int)(x & 1));
                    assert_int_equal(check_crop_case(&j, &p, what), 0);
                    p = params(3, x < 37 ? x : 36, 30, 1, 9, 7, 0);
                    assert_int_equal(check_crop_case(&j, &p, what), 0);
                }
            free(j.data);
        }
}

/* Restart intervals and arithmetic coding in the source; the fast mode. */
static void test_crop_restart_arith_fast(void **state)
{
    struct enc en = {0};
    (void)state;
    en.quality = 80;
    en.restart_interval = 1;
    struct jpeg_buf j = make_jpeg_enc(K_420, 203, 97, &en);
    assert_int_equal(check_crop_boxes(&j, 5, 12, "crop 420 restart 1 MCU"), 0);
    free(j.data);
    en.restart_interval = 0;
    en.restart_in_rows = 1;
    en.progressive = 1;
    j = make_jpeg_enc(K_422, 203, 97, &en);
    assert_int_equal(check_crop_boxes(&j, 6, 12, "crop 422 prog restart 1 row"), 0);
    free(j.data);
    en.restart_in_rows = 0;
    en.arith = 1;
    j = make_jpeg_enc(K_444, 203, 97, &en);
    assert_int_equal(check_crop_boxes(&j, 7, 12, "crop 444 prog arithmetic"), 0);
    free(j.data);
    j = make_jpeg(K_420, 1200, 900, 0, 90);
    for (uint32_t i = 0; i < 8; i++) {
        struct sophon_prep_params p =
            params(37 * i, 29 * i, 700 - 40 * i, 500 - 30 * i, 224, 224, (int)(i & 1));
        p.fast = 1;
        assert_int_equal(check_crop_case(&j, &p, "crop 420 1200x900 fast"), 0);
    }
    free(j.data);
}

/* Progressions that leave coefficients unknown: libjpeg smooths those blocks, a crop cannot. */
static void test_crop_smoothing(void **state)
{
    jpeg_scan_info scans[64];
    struct enc en = {0};
    (void)state;
    en.quality = 85;
    en.scans = scans;
    en.nscans = make_script(S_DC_ONLY, 3, scans);
    struct jpeg_buf j = make_jpeg_enc(K_420, 203, 97, &en);
    struct sophon_prep_params p = params(10, 10, 100, 50, 32, 32, 0);
    uint8_t out[1 << 16];
    size_t n;
    uint32_t ox, oy;
    char err[256] = "";
    assert_int_equal(
        sophon_prep_crop(out, sizeof(out), &n, &ox, &oy, j.data, j.len, &p, NULL, 0, err, 256),
        -EDOM);
    assert_true(strstr(err, "smooth") != NULL);
    free(j.data);
    /* A complete progression is cropped. */
    en.nscans = make_script(S_SEPARATE, 3, scans);
    j = make_jpeg_enc(K_420, 203, 97, &en);
    assert_int_equal(check_crop_boxes(&j, 8, 8, "crop 420 separate scans"), 0);
    free(j.data);
}

/* Limits and bad input: every refusal an errno and a message, never a crash. */
static void test_crop_errors(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 640, 480, 0, 90);
    struct sophon_prep_params p = params(100, 100, 300, 200, 224, 224, 0);
    uint8_t *out = malloc(j.len + 4096);
    size_t n = 0, whole;
    uint32_t ox, oy;
    char err[256];
    (void)state;
    assert_non_null(out);
    assert_int_equal(sophon_prep_crop(out, j.len + 4096, &whole, &ox, &oy, j.data, j.len, &p, NULL,
                                      0, err, sizeof(err)),
                     0);
    /* A crop one byte larger than the cap: -ENOSPC. */
    err[0] = '\0';
    assert_int_equal(sophon_prep_crop(out, whole - 1, &n, &ox, &oy, j.data, j.len, &p, NULL, 0, err,
                                      sizeof(err)),
                     -ENOSPC);
    assert_true(err[0] != '\0');
    assert_int_equal(
        sophon_prep_crop(out, whole, &n, &ox, &oy, j.data, j.len, &p, NULL, 0, err, sizeof(err)),
        0);
    assert_int_equal(n, whole);
    /* The box outside the image, NULLs. */
    struct sophon_prep_params bad = params(500, 100, 300, 200, 224, 224, 0);
    assert_int_equal(
        sophon_prep_crop(out, j.len, &n, &ox, &oy, j.data, j.len, &bad, NULL, 0, err, sizeof(err)),
        -EINVAL);
    assert_int_equal(
        sophon_prep_crop(NULL, 0, &n, &ox, &oy, j.data, j.len, &p, NULL, 0, err, sizeof(err)),
        -EINVAL);
    /* Truncated anywhere, and bytes changed: an errno, never a crash. */
    for (size_t cut = 0; cut < j.len; cut += j.len / 97 + 1) {
        int rc = sophon_prep_crop(out, j.len + 4096, &n, &ox, &oy, j.data, cut, &p, NULL, 0, err,
                                  sizeof(err));
        assert_true(rc == -EBADMSG || rc == -EINVAL);
    }
    uint32_t seed = 4242;
    for (int i = 0; i < 300; i++) {
        uint8_t *copy = malloc(j.len);
        assert_non_null(copy);
        memcpy(copy, j.data, j.len);
        for (int k = 0; k < 4; k++)
            copy[rnd(&seed, (uint32_t)j.len)] ^= (uint8_t)(1u << rnd(&seed, 8));
        int rc = sophon_prep_crop(out, j.len + 4096, &n, &ox, &oy, copy, j.len, &p, NULL,
                                  (unsigned)i & SOPHON_CROP_OPTIMIZE, err, sizeof(err));
        assert_true(rc == 0 || rc == -EBADMSG || rc == -EINVAL || rc == -EMEDIUMTYPE ||
                    rc == -E2BIG || rc == -ENOSPC || rc == -EFBIG || rc == -EDOM);
        /* A crop made of a damaged file still gives what the pipeline gives on the file. */
        struct jpeg_buf damaged = {copy, j.len, j.w, j.h};
        if (rc == 0 && run(&damaged, &p, NULL, 0) == 0)
            assert_int_equal(check_crop_case(&damaged, &p, "damaged"), 0);
        free(copy);
    }
    /* Limits: pixels and input bytes. */
    struct sophon_limits lim = SOPHON_LIMITS_INIT;
    lim.max_pixels = 640 * 480 - 1;
    assert_int_equal(
        sophon_prep_crop(out, j.len, &n, &ox, &oy, j.data, j.len, &p, &lim, 0, err, sizeof(err)),
        -E2BIG);
    lim = (struct sophon_limits)SOPHON_LIMITS_INIT;
    lim.max_input_bytes = j.len - 1;
    assert_int_equal(
        sophon_prep_crop(out, j.len, &n, &ox, &oy, j.data, j.len, &p, &lim, 0, err, sizeof(err)),
        -EFBIG);
    free(out);
    free(j.data);
}

/* Allocation failures anywhere in a crop: -ENOMEM, nothing leaked (valgrind's run checks). */
static void test_crop_enomem(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 300, 200, 1, 80);
    struct sophon_prep_params p = params(50, 40, 120, 90, 64, 64, 0);
    uint8_t *out = malloc(j.len + 4096);
    size_t n;
    uint32_t ox, oy;
    int ok = 0;
    (void)state;
    assert_non_null(out);
    for (long k = 0; k < 200 && !ok; k++) {
        allocs_left = k;
        int rc = sophon_prep_crop(out, j.len + 4096, &n, &ox, &oy, j.data, j.len, &p, NULL,
                                  SOPHON_CROP_OPTIMIZE, NULL, 0);
        allocs_left = -1;
        assert_true(rc == 0 || rc == -ENOMEM);
        ok = rc == 0;
    }
    assert_true(ok);
    free(out);
    free(j.data);
}

/* One image's crop and progressive decode, as bytes to compare: 0, or what failed. */
static int crop_and_pixels(const struct jpeg_buf *j, const struct sophon_prep_params *p,
                           uint8_t *crop, size_t cap, size_t *n, uint8_t *px, size_t px_len)
{
    uint32_t ox, oy;
    int rc = sophon_prep_crop(crop, cap, n, &ox, &oy, j->data, j->len, p, NULL,
                              SOPHON_CROP_OPTIMIZE, NULL, 0);
    return rc != 0 ? rc : sophon_prep_run(px, px_len, j->data, j->len, p, NULL, NULL, 0);
}

/*
 * Where the process has no transparent huge pages (Ceph's OSDs turn them off), the coefficient
 * arrays of a crop and of a progressive decode (over 256 KB here) come from the heap instead of a
 * mapping of their own: the same bytes, allocation failures still -ENOMEM without a leak
 * (valgrind's run). This process turns them off for itself, then on again.
 */
static void test_coefmem_without_huge_pages(void **state)
{
    struct jpeg_buf j = make_jpeg(K_420, 720, 540, 1, 90);
    struct sophon_prep_params p = params(101, 37, 400, 380, 96, 96, 1);
    size_t cap = j.len + 4096, px_len = sophon_prep_output_size(&p), n0 = 0, n = 0;
    uint8_t *crop0 = malloc(cap), *crop = malloc(cap), *px0 = malloc(px_len), *px = malloc(px_len);
    (void)state;
    assert_true(crop0 != NULL && crop != NULL && px0 != NULL && px != NULL);
    large_callocs = 0;
    assert_int_equal(crop_and_pixels(&j, &p, crop0, cap, &n0, px0, px_len), 0);
    /* Here, with huge pages (where the kernel has them), a mapping of their own. */
    int kernel_thp = 0;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char buf[128] = "";
    if (f != NULL) {
        kernel_thp = fgets(buf, sizeof(buf), f) != NULL && strstr(buf, "[never]") == NULL;
        fclose(f);
    }
    int was_off = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
    if (kernel_thp && was_off == 0)
        assert_int_equal(large_callocs, 0);
    assert_int_equal(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0), 0);
    large_callocs = 0;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(crop_and_pixels(&j, &p, crop, cap, &n, px, px_len), 0);
        assert_true(n == n0 && memcmp(crop, crop0, n) == 0);
        assert_memory_equal(px, px0, px_len);
    }
    /* The crop's source arrays and the decode's, each time. */
    assert_true(large_callocs >= 6);
    int ok = 0;
    for (long k = 0; k < 300 && !ok; k++) {
        allocs_left = k;
        int rc = crop_and_pixels(&j, &p, crop, cap, &n, px, px_len);
        allocs_left = -1;
        assert_true(rc == 0 || rc == -ENOMEM);
        ok = rc == 0;
    }
    assert_true(ok);
    assert_int_equal(prctl(PR_SET_THP_DISABLE, was_off == 1, 0, 0, 0), 0);
    free(crop0);
    free(crop);
    free(px0);
    free(px);
    free(j.data);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selfcheck),
        cmocka_unit_test(test_memory_bound),
        cmocka_unit_test(test_output_size),
        cmocka_unit_test(test_probe_modes),
        cmocka_unit_test(test_modes_small),
        cmocka_unit_test(test_modes_partial_decode),
        cmocka_unit_test(test_modes_smoothing),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_window_decodes_its_rows),
        cmocka_unit_test(test_flip_mirrors),
        cmocka_unit_test(test_f32_is_normalized_u8),
        cmocka_unit_test(test_errors_params),
        cmocka_unit_test(test_errors_data),
        cmocka_unit_test(test_errors_unsupported),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_scan_bomb),
        cmocka_unit_test(test_header_bomb),
        cmocka_unit_test(test_enomem),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_fast_mode),
        cmocka_unit_test(test_cut_modes),
        cmocka_unit_test(test_cut_progressions),
        cmocka_unit_test(test_cut_restart_arith),
        cmocka_unit_test(test_cut_copy),
        cmocka_unit_test(test_cut_damage),
        cmocka_unit_test(test_cut_errors),
        cmocka_unit_test(test_crop_modes),
        cmocka_unit_test(test_crop_restart_arith_fast),
        cmocka_unit_test(test_crop_narrow_edge),
        cmocka_unit_test(test_crop_smoothing),
        cmocka_unit_test(test_crop_errors),
        cmocka_unit_test(test_crop_enomem),
        cmocka_unit_test(test_coefmem_without_huge_pages),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
