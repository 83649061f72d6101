/*
 * fuzz_huffman.c - differential libFuzzer target: huffman.h's Huffman decoders against
 * libjpeg-turbo's own (jdphuff.c, jdhuff.c).
 *
 * Input: a JPEG. It is read to coefficients (jpeg_read_coefficients) twice, once by each
 * decoder, with warnings allowed (so that the zero-filling of corrupt data is compared too).
 * The two must fail alike (both with an error, or neither), and when neither fails every
 * coefficient and every progression state (coef_bits, which block smoothing reads) must be
 * equal, and so must the warnings, except JWRN_EXTRANEOUS_DATA (huffman.h says why) and, in
 * sequential files, bad Huffman codes that libjpeg-turbo's fast path passes over silently
 * (where huffman.c warns more of those, sophon refuses the file, so its coefficients may differ).
 * A mismatch aborts. Images over 1 megapixel are skipped to keep runs short. With only some
 * blocks wanted (sophon__huffman_want, a pseudo-random half of them), the wanted blocks must
 * come out the same.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "coefmem.h"
#include "huffman.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
    struct jpeg_error_mgr pub; /* First member: cinfo.err points here. */
    struct jpeg_progress_mgr progress;
    jmp_buf jump;
    int ours;      /* Install huffman.h's decoder at the first progress callback: 1 + flags. */
    int installed; /* It was installed. */
    /*
     * Nonzero: only some blocks are wanted (sophon__huffman_want, with coefmem.h's arrays), a
     * pseudo-random half of them drawn from this seed; region_hash covers those alone.
     */
    uint64_t seed;
    int region;
    struct sophon__coefmem coefmem;
    int warnings;  /* Warnings other than JWRN_EXTRANEOUS_DATA and JWRN_HUFF_BAD_CODE. */
    int bad_codes; /* JWRN_HUFF_BAD_CODE warnings. */
    int progressive;
    int arith; /* Arithmetic coding: huffman.h does not take it. */
    int failed;
    uint64_t hash; /* FNV-1a of the coefficients and the progression state. */
    uint64_t region_hash;
};

/* Whether block i (counted through the components' arrays, padding included) is wanted. */
static int wanted(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (int)((z ^ (z >> 31)) & 1);
}

/* A component's array: blocks per row and rows, padded to whole iMCUs as jdcoefct.c asks. */
static void array_size(const jpeg_component_info *comp, uint64_t *blocks, uint64_t *rows)
{
    *blocks = (comp->width_in_blocks + comp->h_samp_factor - 1) / comp->h_samp_factor *
              comp->h_samp_factor;
    *rows = (comp->height_in_blocks + comp->v_samp_factor - 1) / comp->v_samp_factor *
            comp->v_samp_factor;
}

static void want_blocks(struct run *r, j_decompress_ptr c)
{
    JDIMENSION blocks, rows;
    const JBLOCK *base = sophon__coefmem_array(&r->coefmem, 0, &blocks, &rows), *first;
    uint64_t n = 0, b, h, i;
    uint64_t *bits;
    int ci;

    for (ci = 0; ci < c->num_components; ci++) {
        first = sophon__coefmem_array(&r->coefmem, ci, &blocks, &rows);
        array_size(&c->comp_info[ci], &b, &h);
        /* The harness's own assumptions, not the decoder's: abort if they do not hold. */
        if (first == NULL || first != base + n || b != blocks || h != rows)
            abort();
        n += b * h;
    }
    bits = sophon__huffman_want(c, base, (size_t)n);
    if (bits == NULL)
        return;
    for (i = 0; i < n; i++)
        if (wanted(r->seed, i))
            bits[i / 64] |= 1ull << (i % 64);
}

static void on_error(j_common_ptr c)
{
    longjmp(((struct run *)c->err)->jump, 1);
}

static void on_message(j_common_ptr c, int level)
{
    struct run *r = (struct run *)c->err;

    if (level < 0 && c->err->msg_code == JWRN_HUFF_BAD_CODE)
        r->bad_codes++;
    else if (level < 0 && c->err->msg_code != JWRN_EXTRANEOUS_DATA)
        r->warnings++;
}

static void on_progress(j_common_ptr c)
{
    struct run *r = (struct run *)c->err;

    if (r->ours && !r->installed && c->is_decompressor) {
        r->installed = sophon__huffman_install((j_decompress_ptr)c, (unsigned int)r->ours - 1);
        if (r->installed && r->region)
            want_blocks(r, (j_decompress_ptr)c);
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void run(struct run *r, const uint8_t *data, size_t size)
{
    struct jpeg_decompress_struct c;
    jvirt_barray_ptr *coefs;
    JDIMENSION x, y;
    uint64_t at;
    int ci;

    c.err = jpeg_std_error(&r->pub);
    r->pub.error_exit = on_error;
    r->pub.emit_message = on_message;
    r->progress.progress_monitor = on_progress;
    r->hash = 1469598103934665603ull;
    r->region_hash = r->hash;
    jpeg_create_decompress(&c);
    if (r->region)
        sophon__coefmem_install((j_common_ptr)&c, &r->coefmem);
    if (setjmp(r->jump)) {
        r->failed = 1;
        jpeg_destroy_decompress(&c);
        return;
    }
    c.mem->max_memory_to_use = 64L << 20;
    jpeg_mem_src(&c, data, (unsigned long)size);
    if (jpeg_read_header(&c, TRUE) != JPEG_HEADER_OK ||
        (uint64_t)c.image_width * c.image_height > (1u << 20)) {
        r->failed = 2;
        jpeg_destroy_decompress(&c);
        return;
    }
    c.progress = &r->progress;
    r->progressive = c.progressive_mode;
    r->arith = c.arith_code;
    coefs = jpeg_read_coefficients(&c);
    for (ci = 0, at = 0; ci < c.num_components; ci++) {
        jpeg_component_info *comp = &c.comp_info[ci];
        uint64_t blocks, rows;

        array_size(comp, &blocks, &rows);
        for (y = 0; y < comp->height_in_blocks; y++) {
            JBLOCKARRAY row =
                (*c.mem->access_virt_barray)((j_common_ptr)&c, coefs[ci], y, 1, FALSE);

            r->hash = fnv(r->hash, row[0], comp->width_in_blocks * sizeof(JBLOCK));
            for (x = 0; x < comp->width_in_blocks; x++)
                if (wanted(r->seed, at + y * blocks + x))
                    r->region_hash = fnv(r->region_hash, row[0][x], sizeof(JBLOCK));
        }
        at += blocks * rows;
    }
    if (c.progressive_mode && c.coef_bits != NULL) {
        size_t n = 2 * (size_t)c.num_components * sizeof(c.coef_bits[0]);

        r->hash = fnv(r->hash, c.coef_bits, n);
        r->region_hash = fnv(r->region_hash, c.coef_bits, n);
    }
    jpeg_destroy_decompress(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* This CPU's decoders, then the portable ones; then both with only some blocks wanted. */
    static const struct {
        unsigned int flags;
        int region;
    } variants[] = {{0, 0}, {SOPHON__HUFFMAN_PORTABLE, 0}, {0, 1}, {SOPHON__HUFFMAN_PORTABLE, 1}};
    struct run theirs, ours;
    uint64_t hash;
    size_t i;
    int extra;

    /* A target that compares nothing must not pass: fail loudly where it cannot run. */
    if (!sophon__huffman_supported()) {
        fprintf(stderr, "fuzz_huffman: this build cannot replace libjpeg's Huffman decoders "
                        "(sophon__huffman_supported() is 0: not libjpeg-turbo 2.1?), so there "
                        "is nothing to compare\n");
        abort();
    }
    if (size == 0)
        return 0;
    memset(&theirs, 0, sizeof(theirs));
    theirs.seed = fnv(0, data, size);
    run(&theirs, data, size);
    for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        memset(&ours, 0, sizeof(ours));
        ours.ours = 1 + (int)variants[i].flags;
        ours.region = variants[i].region;
        ours.seed = theirs.seed;
        run(&ours, data, size);
        /* Decoded without huffman.h's decoder: libjpeg would be compared with itself. */
        if (!ours.failed && !ours.arith && !ours.installed) {
            fprintf(stderr,
                    "fuzz_huffman: huffman.c was not installed on a file libjpeg "
                    "decoded (flags %u, region %d)\n",
                    variants[i].flags, ours.region);
            abort();
        }
        /*
         * libjpeg-turbo's fast path for sequential scans takes a bad code for symbol 0 without
         * a warning, and "FF FF 00" for a marker (then keeps what it decoded from zero bits);
         * its slow path, and huffman.h, warn bad codes, and huffman.h calls the FF run a bad
         * code. A file with such a warning is refused, whatever its coefficients.
         */
        extra = !theirs.progressive && ours.bad_codes > theirs.bad_codes;
        hash = ours.region ? theirs.region_hash : theirs.hash;
        if (theirs.failed != ours.failed ||
            (!theirs.failed && (theirs.warnings != ours.warnings ||
                                (!extra && hash != (ours.region ? ours.region_hash : ours.hash)) ||
                                (theirs.progressive ? theirs.bad_codes != ours.bad_codes
                                                    : theirs.bad_codes > ours.bad_codes)))) {
            fprintf(stderr,
                    "huffman.c (flags %u, region %d) differs from libjpeg: failed %d/%d, "
                    "hash %016llx/%016llx, warnings %d/%d (libjpeg/ours, installed %d)\n",
                    variants[i].flags, ours.region, theirs.failed, ours.failed,
                    (unsigned long long)hash,
                    (unsigned long long)(ours.region ? ours.region_hash : ours.hash),
                    theirs.warnings, ours.warnings, ours.installed);
            abort();
        }
    }
    return 0;
}
