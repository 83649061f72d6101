/*
 * prep_response.c - a whole prep response from a request and the stored bytes, on either side
 * (prep_response.h).
 */
#include "prep_response.h"

#include <errno.h>

#include "sophon_common.h"
#include "wire.h"

int sophon_prep_respond(uint8_t *out, size_t cap, const uint8_t *jpeg, size_t len,
                        const struct sophon_prep_params *p, const struct sophon_limits *lim,
                        uint16_t version, char *err, size_t errlen)
{
    uint64_t t0 = sophon__thread_cpu_ns();
    uint64_t size = sophon_response_size_as(p, version);
    size_t hdr = sophon_response_header_len(version);

    if (size == 0) {
        sophon__seterr(err, errlen, "invalid output size or format, or wire version %u",
                       (unsigned)version);
        return -EINVAL;
    }
    if (!sophon_request_fits(p, version)) {
        sophon__seterr(err, errlen, "wire version %u cannot carry this request", (unsigned)version);
        return -EINVAL;
    }
    if (cap < size) {
        sophon__seterr(err, errlen, "response buffer of %zu bytes, %llu needed", cap,
                       (unsigned long long)size);
        return -ERANGE;
    }
    int r = sophon_prep_run(out + hdr, cap - hdr, jpeg, len, p, lim, err, errlen);
    if (r < 0)
        return r;
    struct sophon_response h = {
        .version = version,
        .stage = SOPHON_WIRE_PIXELS,
        .format = p->format,
        .flip = p->flip,
        .fast = p->fast,
        .channels = 3,
        .width = p->out_w,
        .height = p->out_h,
        .source_bytes = len,
        .payload_len = size - hdr,
    };
    h.cpu_ns = sophon__thread_cpu_ns() - t0;
    r = sophon_response_encode_header(out, hdr, &h);
    return r < 0 ? r : 0;
}
