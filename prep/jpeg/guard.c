/*
 * guard.c - error, warning and progress handling that keeps libjpeg inside its call.
 */
#include "guard.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <jerror.h>

#include "markers.h"

/*
 * libjpeg's message texts, indexed by message code: jerror.h lists them once more when JMESSAGE
 * is defined (the way jerror.c builds its own table). The error manager is set up here rather
 * than by jpeg_std_error so that jerror.c is never linked: its output_message writes to stderr
 * through a relocation a shared object cannot hold, and libjpeg.a is linked into the class and
 * libsophon (prep/jpeg/CMakeLists.txt).
 */
#define JMESSAGE(code, string) string,
/* The two texts jerror.h takes from libjpeg's private jversion.h, for the trace messages that
 * name them (sophon never formats those). */
#define JVERSION         "libjpeg-turbo"
#define JCOPYRIGHT_SHORT "libjpeg-turbo's copyright: see its README"
static const char *const message_table[] = {
#include <jerror.h>
    NULL,
};
#undef JMESSAGE
#undef JVERSION
#undef JCOPYRIGHT_SHORT

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
        return -EMEDIUMTYPE;
    case JERR_OUT_OF_MEMORY:
        return -ENOMEM;
    case JERR_NO_BACKING_STORE: /* A virtual array exceeds mem->max_memory_to_use. */
    case JERR_TFILE_CREATE:
        return -EFBIG;
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW:
        return -E2BIG;
    case JERR_MISMATCHED_QUANT_TABLE: /* the crop's (crop.c): a table slot redefined between
                                       * scans, which a sequential JPEG cannot say */
        return -EDOM;
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

/*
 * Called by libjpeg at each SOS while absorbing input (and per iMCU row): refuse files with more
 * scans than allowed before the work of decoding them is done, and run j->at_start the first
 * time.
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
    if (j->at_start != NULL) {
        void (*at_start)(struct sophon__jpeg *, void *) = j->at_start;

        j->at_start = NULL;
        at_start(j, j->at_start_arg);
    }
}

/*
 * libjpeg's format_message rule: the text of msg_code with its parameters, the string one when the
 * text's first conversion is %s, else the eight integers. The texts are jerror.h's own, compiled
 * in, never data.
 */
static void format_message(j_common_ptr cinfo, char *buffer)
{
    const struct jpeg_error_mgr *e = cinfo->err;
    const char *text = NULL, *pct;

    if (e->msg_code > 0 && e->msg_code < JMSG_LASTMSGCODE)
        text = message_table[e->msg_code];
    if (text == NULL) {
        snprintf(buffer, JMSG_LENGTH_MAX, "libjpeg message code %d", e->msg_code);
        return;
    }
    pct = strchr(text, '%');
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    if (pct != NULL && pct[1] == 's')
        snprintf(buffer, JMSG_LENGTH_MAX, text, e->msg_parm.s);
    else
        snprintf(buffer, JMSG_LENGTH_MAX, text, e->msg_parm.i[0], e->msg_parm.i[1],
                 e->msg_parm.i[2], e->msg_parm.i[3], e->msg_parm.i[4], e->msg_parm.i[5],
                 e->msg_parm.i[6], e->msg_parm.i[7]);
#pragma GCC diagnostic pop
}

static void reset_error_mgr(j_common_ptr cinfo)
{
    cinfo->err->num_warnings = 0;
    cinfo->err->msg_code = 0;
}

void sophon__jpeg_init(struct sophon__jpeg *j, const struct sophon_limits *lim)
{
    memset(j, 0, sizeof(*j));
    j->pub.error_exit = on_error_exit;
    j->pub.emit_message = on_emit_message;
    j->pub.output_message = on_output_message;
    j->pub.format_message = format_message;
    j->pub.reset_error_mgr = reset_error_mgr;
    j->pub.jpeg_message_table = message_table;
    j->pub.last_jpeg_message = (int)JMSG_LASTMSGCODE - 1;
    j->cinfo.err = &j->pub;
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

/* libjpeg's working memory budget: what a legitimate image within max_pixels can need (a
 * progressive 4:4:4 file keeps 2 bytes per coefficient, 3 components: 6 bytes per pixel), plus
 * slack for tables and row buffers. */
static long memory_budget(const struct sophon_limits *lim)
{
    uint64_t b;

    if (lim->max_pixels == 0)
        return 0;
    if (lim->max_pixels > (uint64_t)LONG_MAX / 8)
        return LONG_MAX;
    b = lim->max_pixels * 8 + (16u << 20);
    return b > (uint64_t)LONG_MAX ? LONG_MAX : (long)b;
}

void sophon__jpeg_open(struct sophon__jpeg *j, const uint8_t *jpeg, size_t len,
                       const struct sophon_limits *lim, uint32_t *scans)
{
    struct jpeg_decompress_struct *c = &j->cinfo;
    struct sophon__markers mk;

    /* Scan bombs are refused before libjpeg absorbs a single scan, and truncated files even when
     * what is read ends before the truncation. */
    if (sophon__walk_markers(&mk, jpeg, len, lim->max_scans) < 0)
        sophon__jpeg_fail(j, -EBADMSG, "not a JPEG (no SOI marker or bad segment length)");
    if (lim->max_scans != 0 && mk.scans > lim->max_scans)
        sophon__jpeg_fail(j, -E2BIG, "too many scans");
    if (!mk.eoi)
        sophon__jpeg_fail(j, -EBADMSG, "truncated JPEG (no EOI marker)");
    if (scans != NULL)
        *scans = mk.scans;
    sophon__jpeg_src(j, jpeg, len);
    c->mem->max_memory_to_use = memory_budget(lim);
    if (jpeg_read_header(c, TRUE) != JPEG_HEADER_OK)
        sophon__jpeg_fail(j, -EBADMSG, "JPEG has tables but no image");
    if (c->data_precision != 8)
        sophon__jpeg_fail(j, -EMEDIUMTYPE, "not an 8-bit JPEG");
    if (lim->max_pixels != 0 && (uint64_t)c->image_width * c->image_height > lim->max_pixels)
        sophon__jpeg_fail(j, -E2BIG, "image has more pixels than allowed");
}
