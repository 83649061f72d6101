/*
 * fuzz_request.c - libFuzzer target for the wire format's decoders: the prep request (what the
 * OSD decodes from any client, in any layout), the response and the probe reply (what clients
 * decode from the OSD). Whatever a decoder accepts must encode back to the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sophon_prep_params p;
    struct sophon_response r;
    struct sophon_probe_reply pr;
    const uint8_t *payload;
    uint8_t buf[SOPHON_PROBE_MSG_LEN > SOPHON_RESPONSE_HDR_LEN ? SOPHON_PROBE_MSG_LEN
                                                               : SOPHON_RESPONSE_HDR_LEN];
    uint8_t req[SOPHON_REQUEST_LEN];
    uint16_t version;
    volatile uint8_t sink = 0;

    if (sophon_request_decode(&p, &version, data, size) == 0) {
        /* A request the OSD accepts is one the client could have sent, in the same layout. */
        if (sophon_request_encode_as(req, sizeof(req), &p, version) != (int)size ||
            memcmp(req, data, size) != 0)
            abort();
        if (sophon_response_size_as(&p, version) == 0)
            abort();
    }
    if (sophon_response_decode(&r, &payload, data, size) == 0) {
        if (payload < data || payload + r.payload_len != data + size)
            abort();
        for (uint64_t i = 0; i < r.payload_len; i++)
            sink ^= payload[i];
        if (sophon_response_encode_header(buf, sizeof(buf), &r) !=
            (int)sophon_response_header_len(r.version))
            abort();
    }
    if (sophon_probe_decode(&pr, data, size) == 0)
        sophon_probe_encode(buf, sizeof(buf), &pr);
    (void)sink;
    return 0;
}
