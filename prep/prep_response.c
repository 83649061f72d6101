/*
 * prep_response.c - a whole prep response from a request and the stored bytes, on either side,
 * and the sample from a response (prep_response.h).
 */
#include "prep_response.h"

#include <errno.h>
#include <string.h>

#include "sophon_common.h"

uint64_t sophon_prep_crop_cap(const struct sophon_prep_params *p, uint64_t len)
{
    if (p == NULL || p->stage != SOPHON_WIRE_CROP)
        return 0;
    uint64_t cap = len;
    if (p->crop_max_bytes != 0 && p->crop_max_bytes < cap)
        cap = p->crop_max_bytes;
    if (p->fallback == SOPHON_FALLBACK_PIXELS) {
        uint64_t pixels = sophon_prep_output_size(p);
        cap = pixels < cap ? pixels : cap;
    }
    return cap;
}

uint64_t sophon_prep_response_cap(const struct sophon_prep_params *p, uint64_t len,
                                  uint16_t version)
{
    uint64_t pixels = sophon_response_size_as(p, version);
    if (pixels == 0 || !sophon_request_fits(p, version))
        return 0;
    if (p->stage != SOPHON_WIRE_CROP)
        return pixels;
    uint64_t crop = sophon_response_header_len(version) + sophon_prep_crop_cap(p, len);
    if (p->fallback == SOPHON_FALLBACK_PIXELS && pixels > crop)
        return pixels;
    return crop;
}

/* The pixel answer's payload, after a header of hdr bytes. */
static int respond_pixels(uint8_t *out, size_t cap, size_t hdr, struct sophon_response *h,
                          const uint8_t *jpeg, size_t len, const struct sophon_prep_params *p,
                          const struct sophon_limits *lim, char *err, size_t errlen)
{
    uint64_t n = sophon_prep_output_size(p);
    if (cap < hdr || cap - hdr < n) {
        sophon__seterr(err, errlen, "response buffer of %zu bytes, %llu needed", cap,
                       (unsigned long long)(hdr + n));
        return -ERANGE;
    }
    int r = sophon_prep_run(out + hdr, cap - hdr, jpeg, len, p, lim, err, errlen);
    if (r < 0)
        return r;
    h->stage = SOPHON_WIRE_PIXELS;
    h->format = p->format;
    h->width = p->out_w;
    h->height = p->out_h;
    h->payload_len = n;
    return 0;
}

/* The crop answer's payload: 1 when the crop could not be made and the pixels are wanted. */
static int respond_crop(uint8_t *out, size_t cap, size_t hdr, struct sophon_response *h,
                        const uint8_t *jpeg, size_t len, const struct sophon_prep_params *p,
                        const struct sophon_limits *lim, char *err, size_t errlen)
{
    uint64_t most = sophon_prep_crop_cap(p, len);
    size_t n = 0;
    uint32_t ox = 0, oy = 0;
    if (cap < hdr)
        return -ERANGE;
    if (most > cap - hdr)
        most = cap - hdr;
    int r = sophon_prep_crop(out + hdr, (size_t)most, &n, &ox, &oy, jpeg, len, p, lim,
                             SOPHON_CROP_OPTIMIZE, err, errlen);
    if ((r == -ENOSPC || r == -EDOM) && p->fallback == SOPHON_FALLBACK_PIXELS)
        return 1;
    if (r < 0)
        return r;
    struct sophon_probe_info info;
    r = sophon_probe(&info, out + hdr, n, err, errlen);
    if (r < 0)
        return r;
    h->stage = SOPHON_WIRE_CROP;
    h->format = 0;
    h->width = info.width;
    h->height = info.height;
    h->origin_x = ox;
    h->origin_y = oy;
    h->payload_len = n;
    return 0;
}

int sophon_prep_respond(uint8_t *out, size_t cap, size_t *out_len, const uint8_t *jpeg, size_t len,
                        const struct sophon_prep_params *p, const struct sophon_limits *lim,
                        uint16_t version, char *err, size_t errlen)
{
    uint64_t t0 = sophon__thread_cpu_ns();
    size_t hdr = sophon_response_header_len(version);

    if (sophon_response_size_as(p, version) == 0) {
        sophon__seterr(err, errlen, "invalid output size or format, or wire version %u",
                       (unsigned)version);
        return -EINVAL;
    }
    if (!sophon_request_fits(p, version)) {
        sophon__seterr(err, errlen, "wire version %u cannot carry this request", (unsigned)version);
        return -EINVAL;
    }
    struct sophon_response h = {
        .version = version,
        .flip = p->flip,
        .fast = p->fast,
        .channels = 3,
        .source_bytes = len,
    };
    int r = 1;
    if (p->stage == SOPHON_WIRE_CROP)
        r = respond_crop(out, cap, hdr, &h, jpeg, len, p, lim, err, errlen);
    if (r == 1)
        r = respond_pixels(out, cap, hdr, &h, jpeg, len, p, lim, err, errlen);
    if (r < 0)
        return r;
    h.cpu_ns = sophon__thread_cpu_ns() - t0;
    r = sophon_response_encode_header(out, hdr, &h);
    if (r < 0)
        return r;
    *out_len = hdr + (size_t)h.payload_len;
    return 0;
}

int sophon_prep_finish(uint8_t *out, size_t out_cap, const struct sophon_response *h,
                       const uint8_t *payload, const struct sophon_prep_params *p,
                       const struct sophon_limits *lim, char *err, size_t errlen)
{
    uint64_t n = sophon_prep_output_size(p);
    if (n == 0 || h->flip != p->flip || h->fast != p->fast) {
        sophon__seterr(err, errlen, "the response is not the sample asked for");
        return -EPROTO;
    }
    if (out_cap < n) {
        sophon__seterr(err, errlen, "output buffer of %zu bytes, %llu needed", out_cap,
                       (unsigned long long)n);
        return -ERANGE;
    }
    if (h->stage == SOPHON_WIRE_CROP) {
        struct sophon_prep_params q = *p;
        if (h->origin_x > p->box_x || h->origin_y > p->box_y) {
            sophon__seterr(err, errlen, "the crop at %u,%u does not hold the box at %u,%u",
                           h->origin_x, h->origin_y, p->box_x, p->box_y);
            return -EPROTO;
        }
        q.box_x -= h->origin_x;
        q.box_y -= h->origin_y;
        q.stage = SOPHON_WIRE_PIXELS;
        q.fallback = SOPHON_FALLBACK_NONE;
        q.crop_max_bytes = 0;
        int r =
            sophon_prep_run(out, out_cap, payload, (size_t)h->payload_len, &q, lim, err, errlen);
        /* A box outside the crop is the OSD's mistake, not the image's. */
        return r == -EINVAL ? -EPROTO : r;
    }
    if (h->stage != SOPHON_WIRE_PIXELS || h->width != p->out_w || h->height != p->out_h ||
        (h->format != p->format && h->format != SOPHON_FORMAT_U8)) {
        sophon__seterr(err, errlen, "the response is not the sample asked for");
        return -EPROTO;
    }
    if (h->format == p->format) {
        memcpy(out, payload, n);
        return 0;
    }
    return sophon_prep_normalize(out, out_cap, payload, p);
}
