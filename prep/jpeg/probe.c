/*
 * probe.c - what a JPEG header says, without decoding pixels; and the colour spaces' names.
 */
#include <errno.h>
#include <string.h>

#include "guard.h"
#include "markers.h"
#include "prep.h"

static uint8_t colorspace_of(J_COLOR_SPACE cs)
{
    switch (cs) {
    case JCS_GRAYSCALE:
        return SOPHON_CS_GRAY;
    case JCS_RGB:
        return SOPHON_CS_RGB;
    case JCS_YCbCr:
        return SOPHON_CS_YCBCR;
    case JCS_CMYK:
        return SOPHON_CS_CMYK;
    case JCS_YCCK:
        return SOPHON_CS_YCCK;
    default:
        return SOPHON_CS_UNKNOWN;
    }
}

/*
 * The usual names describe the first component's sampling relative to the others, which must all
 * be 1x1 (for YCCK the K component samples like Y).
 */
static uint8_t subsampling_of(const struct jpeg_decompress_struct *c)
{
    int h, v, i;

    if (c->num_components == 1)
        return SOPHON_SS_GRAY;
    if (c->num_components < 3 || c->comp_info == NULL)
        return SOPHON_SS_OTHER;
    h = c->comp_info[0].h_samp_factor;
    v = c->comp_info[0].v_samp_factor;
    for (i = 1; i < c->num_components; i++) {
        const jpeg_component_info *ci = &c->comp_info[i];

        if (i == 3 && ci->h_samp_factor == h && ci->v_samp_factor == v)
            continue;
        if (ci->h_samp_factor != 1 || ci->v_samp_factor != 1)
            return SOPHON_SS_OTHER;
    }
    if (h == 1 && v == 1)
        return SOPHON_SS_444;
    if (h == 2 && v == 1)
        return SOPHON_SS_422;
    if (h == 2 && v == 2)
        return SOPHON_SS_420;
    if (h == 1 && v == 2)
        return SOPHON_SS_440;
    if (h == 4 && v == 1)
        return SOPHON_SS_411;
    return SOPHON_SS_OTHER;
}

static void fill_info(struct sophon_probe_info *out, const struct jpeg_decompress_struct *c)
{
    out->width = c->image_width;
    out->height = c->image_height;
    out->components =
        (uint8_t)(c->num_components > 0 && c->num_components < 256 ? c->num_components : 0);
    out->progressive = c->progressive_mode ? 1 : 0;
    out->colorspace = colorspace_of(c->jpeg_color_space);
    out->subsampling = subsampling_of(c);
    out->bits = (uint8_t)(c->data_precision > 0 && c->data_precision < 256 ? c->data_precision : 0);
}

int sophon_probe(struct sophon_probe_info *out, const uint8_t *jpeg, size_t len, char *err,
                 size_t errlen)
{
    struct sophon__jpeg j;
    struct sophon__jpeg *jp = &j;
    int rc;

    if (out == NULL || jpeg == NULL) {
        sophon__seterr(err, errlen, "probe: NULL argument");
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    if (len < 2 || jpeg[0] != 0xff || jpeg[1] != 0xd8) {
        sophon__seterr(err, errlen, "not a JPEG (no SOI marker)");
        return -EBADMSG;
    }
    /* jpeg_read_header reads marker segments up to the first SOS and stops there. */
    sophon__jpeg_init(jp, NULL);
    if (setjmp(jp->jump)) {
        rc = jp->code;
        /* A 12-bit or lossless file still has a readable SOF: report what is known. */
        if (rc == -EMEDIUMTYPE)
            fill_info(out, &jp->cinfo);
        sophon__seterr(err, errlen, "%s", jp->msg);
        goto done;
    }
    jpeg_create_decompress(&jp->cinfo);
    sophon__jpeg_src(jp, jpeg, len);
    if (jpeg_read_header(&jp->cinfo, TRUE) != JPEG_HEADER_OK)
        sophon__jpeg_fail(jp, -EBADMSG, "JPEG has tables but no image");
    fill_info(out, &jp->cinfo);
    rc = 0;
done:
    jpeg_destroy_decompress(&jp->cinfo);
    return rc;
}

int64_t sophon_count_scans(const uint8_t *jpeg, size_t len)
{
    struct sophon__markers mk;

    if (jpeg == NULL || sophon__walk_markers(&mk, jpeg, len, 0) < 0)
        return -EBADMSG;
    return mk.scans;
}

const char *sophon_colorspace_name(int cs)
{
    static const char *const names[] = {"unknown", "gray", "rgb", "ycbcr", "cmyk", "ycck"};

    return sophon__name_of(names, (int)(sizeof(names) / sizeof(names[0])), cs, "unknown");
}
