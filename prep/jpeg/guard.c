/*
 * guard.c - error, warning and progress handling that keeps libjpeg inside its call.
 */
#include "guard.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <jerror.h>

#include "huffman.h"

/*
 * Which errno a libjpeg message code means. Codes about features libjpeg (or this build) does
 * not implement are "unsupported"; memory codes are resources; everything else is bad data.
 */
static int errno_of_code(int msg_code)
{
    switch (msg_code) {
    case JERR_BAD_PRECISION:
    case JERR_NOT_COMPILED:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_SOF_UNSUPPORTED:
    case JERR_ARITH_NOTIMPL:
    case JERR_CCIR601_NOTIMPL:
    case JWRN_ADOBE_XFORM: /* Unknown Adobe colour transform: we will not guess. */
        return -EOPNOTSUPP;
    case JERR_OUT_OF_MEMORY:
        return -ENOMEM;
    case JERR_NO_BACKING_STORE: /* A virtual array exceeds mem->max_memory_to_use. */
    case JERR_TFILE_CREATE:
        return -EFBIG;
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW:
        return -E2BIG;
    default:
        return -EBADMSG;
    }
}

_Noreturn void sophon__jpeg_fail(struct sophon__jpeg *j, int code, const char *msg)
{
    j->code = code;
    snprintf(j->msg, sizeof(j->msg), "%s", msg);
    longjmp(j->jump, 1);
}

static _Noreturn void fail_with_libjpeg_message(j_common_ptr cinfo)
{
    struct sophon__jpeg *j = (struct sophon__jpeg *)cinfo->err;
    char buf[JMSG_LENGTH_MAX];

    buf[0] = '\0';
    (*cinfo->err->format_message)(cinfo, buf);
    j->code = errno_of_code(cinfo->err->msg_code);
    snprintf(j->msg, sizeof(j->msg), "libjpeg: %s", buf);
    longjmp(j->jump, 1);
}

static void on_error_exit(j_common_ptr cinfo)
{
    fail_with_libjpeg_message(cinfo);
}

/*
 * Warnings (msg_level < 0) are "corrupt data", "premature end", "extraneous bytes": libjpeg
 * would substitute grey or zero coefficients and go on. We refuse rather than hand out pixels
 * that differ from what the file was meant to contain. Trace messages (level >= 0) are ignored.
 * The one exception: the skipped tails of the scans of a cut progressive copy.
 */
static void on_emit_message(j_common_ptr cinfo, int msg_level)
{
    const struct sophon__jpeg *j = (const struct sophon__jpeg *)cinfo->err;

    if (msg_level >= 0)
        return;
    if (j->allow_scan_tails && cinfo->err->msg_code == JWRN_EXTRANEOUS_DATA)
        return;
    fail_with_libjpeg_message(cinfo);
}

/* Never print from inside a storage daemon. */
static void on_output_message(j_common_ptr cinfo)
{
    (void)cinfo;
}

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
 * Tell huffman.h which blocks of the coefficient arrays will be read: j->want's iMCUs, in
 * each component's blocks. Nothing if the arrays are not where coefmem.h says they are.
 */
static void want_blocks(struct sophon__jpeg *j)
{
    struct jpeg_decompress_struct *c = &j->cinfo;
    JDIMENSION blocks[MAX_COMPONENTS], rows[MAX_COMPONENTS];
    const JBLOCK *base = NULL, *first;
    size_t n = 0, at;
    uint64_t *bits;
    int ci;

    if (!c->progressive_mode || c->num_components > MAX_COMPONENTS)
        return;
    for (ci = 0; ci < c->num_components; ci++) {
        first = sophon__coefmem_array(&j->coefmem, ci, &blocks[ci], &rows[ci]);
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
        uint64_t x0 = (uint64_t)j->want.x0 * comp->h_samp_factor;
        uint64_t x1 = (uint64_t)j->want.x1 * comp->h_samp_factor;
        uint64_t y = (uint64_t)j->want.y0 * comp->v_samp_factor;
        uint64_t y1 = (uint64_t)j->want.y1 * comp->v_samp_factor;

        x1 = x1 < blocks[ci] ? x1 : blocks[ci];
        y1 = y1 < rows[ci] ? y1 : rows[ci];
        for (; x0 < x1 && y < y1; y++)
            set_bits(bits, at + (size_t)y * blocks[ci] + x0, at + (size_t)y * blocks[ci] + x1);
        at += (size_t)blocks[ci] * rows[ci];
    }
}

/*
 * Called by libjpeg at each SOS while absorbing input (and per iMCU row): refuse files with more
 * scans than allowed before the work of decoding them is done, and install huffman.h's decoder
 * (telling it which blocks will be read) when asked.
 */
static void on_progress(j_common_ptr cinfo)
{
    struct sophon__jpeg *j = (struct sophon__jpeg *)cinfo->err;
    char msg[96];

    if (cinfo->is_decompressor && j->max_scans != 0 &&
        (uint32_t)j->cinfo.input_scan_number > j->max_scans) {
        snprintf(msg, sizeof(msg), "more than %u scans", (unsigned)j->max_scans);
        sophon__jpeg_fail(j, -E2BIG, msg);
    }
    /* The first call is in jpeg_start_decompress, before the first scan is read. */
    if (j->fast_huffman) {
        j->fast_huffman = 0;
        if (sophon__huffman_install(&j->cinfo, 0) && j->want.x1 != 0)
            want_blocks(j);
    }
}

void sophon__jpeg_init(struct sophon__jpeg *j, const struct sophon_limits *lim)
{
    memset(j, 0, sizeof(*j));
    j->cinfo.err = jpeg_std_error(&j->pub);
    j->pub.error_exit = on_error_exit;
    j->pub.emit_message = on_emit_message;
    j->pub.output_message = on_output_message;
    j->progress.progress_monitor = on_progress;
    j->max_scans = lim != NULL ? lim->max_scans : 0;
}

void sophon__jpeg_src(struct sophon__jpeg *j, const uint8_t *jpeg, size_t len)
{
    if (len > ULONG_MAX)
        sophon__jpeg_fail(j, -EFBIG, "input larger than libjpeg can address");
    jpeg_mem_src(&j->cinfo, jpeg, (unsigned long)len);
    j->cinfo.progress = &j->progress;
}
