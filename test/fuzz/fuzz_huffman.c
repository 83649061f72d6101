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
 * A mismatch aborts. Images over 1 megapixel are skipped to keep runs short.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "huffman.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
    struct jpeg_error_mgr pub; /* First member: cinfo.err points here. */
    struct jpeg_progress_mgr progress;
    jmp_buf jump;
    int ours;      /* Install huffman.h's decoder at the first progress callback: 1 + flags. */
    int installed; /* It was installed. */
    int warnings;  /* Warnings other than JWRN_EXTRANEOUS_DATA and JWRN_HUFF_BAD_CODE. */
    int bad_codes; /* JWRN_HUFF_BAD_CODE warnings. */
    int progressive;
    int failed;
    uint64_t hash; /* FNV-1a of the coefficients and the progression state. */
};

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

    if (r->ours && !r->installed && c->is_decompressor)
        r->installed = sophon__huffman_install((j_decompress_ptr)c, (unsigned int)r->ours - 1);
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
    JDIMENSION y;
    int ci;

    c.err = jpeg_std_error(&r->pub);
    r->pub.error_exit = on_error;
    r->pub.emit_message = on_message;
    r->progress.progress_monitor = on_progress;
    r->hash = 1469598103934665603ull;
    jpeg_create_decompress(&c);
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
    coefs = jpeg_read_coefficients(&c);
    for (ci = 0; ci < c.num_components; ci++) {
        jpeg_component_info *comp = &c.comp_info[ci];

        for (y = 0; y < comp->height_in_blocks; y++) {
            JBLOCKARRAY row =
                (*c.mem->access_virt_barray)((j_common_ptr)&c, coefs[ci], y, 1, FALSE);

            r->hash = fnv(r->hash, row[0], comp->width_in_blocks * sizeof(JBLOCK));
        }
    }
    if (c.progressive_mode && c.coef_bits != NULL)
        r->hash = fnv(r->hash, c.coef_bits, 2 * (size_t)c.num_components * sizeof(c.coef_bits[0]));
    jpeg_destroy_decompress(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* This CPU's decoders, then without GFNI, then the portable ones. */
    static const unsigned int variants[] = {0, SOPHON__HUFFMAN_NO_GFNI, SOPHON__HUFFMAN_PORTABLE};
    struct run theirs, ours;
    unsigned int flags;
    size_t i;
    int extra;

    if (size == 0 || !sophon__huffman_supported())
        return 0;
    memset(&theirs, 0, sizeof(theirs));
    run(&theirs, data, size);
    for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        flags = variants[i];
        memset(&ours, 0, sizeof(ours));
        ours.ours = 1 + (int)flags;
        run(&ours, data, size);
        /*
         * libjpeg-turbo's fast path for sequential scans takes a bad code for symbol 0 without
         * a warning, and "FF FF 00" for a marker (then keeps what it decoded from zero bits);
         * its slow path, and huffman.h, warn bad codes, and huffman.h calls the FF run a bad
         * code. A file with such a warning is refused, whatever its coefficients.
         */
        extra = !theirs.progressive && ours.bad_codes > theirs.bad_codes;
        if (theirs.failed != ours.failed ||
            (!theirs.failed &&
             (theirs.warnings != ours.warnings || (!extra && theirs.hash != ours.hash) ||
              (theirs.progressive ? theirs.bad_codes != ours.bad_codes
                                  : theirs.bad_codes > ours.bad_codes)))) {
            fprintf(
                stderr,
                "huffman.c (flags %u) differs from libjpeg: failed %d/%d, hash %016llx/%016llx, "
                "warnings %d/%d (libjpeg/ours, installed %d)\n",
                flags, theirs.failed, ours.failed, (unsigned long long)theirs.hash,
                (unsigned long long)ours.hash, theirs.warnings, ours.warnings, ours.installed);
            abort();
        }
    }
    return 0;
}
