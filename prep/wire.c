/*
 * wire.c - encoders and decoders for the messages of wire.h.
 *
 * Every message starts with the same 8 bytes: u32 magic, u16 layout version, u16 length of the
 * fixed header. All integers are little-endian, floats are IEEE 754 binary32 in little-endian
 * byte order.
 */
#include "wire.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define LAYOUT_VERSION 1

void sophon__put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void sophon__put_le32(uint8_t *p, uint32_t v)
{
    sophon__put_le16(p, (uint16_t)v);
    sophon__put_le16(p + 2, (uint16_t)(v >> 16));
}

void sophon__put_le64(uint8_t *p, uint64_t v)
{
    sophon__put_le32(p, (uint32_t)v);
    sophon__put_le32(p + 4, (uint32_t)(v >> 32));
}

uint16_t sophon__get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t sophon__get_le32(const uint8_t *p)
{
    return (uint32_t)sophon__get_le16(p) | ((uint32_t)sophon__get_le16(p + 2) << 16);
}

uint64_t sophon__get_le64(const uint8_t *p)
{
    return (uint64_t)sophon__get_le32(p) | ((uint64_t)sophon__get_le32(p + 4) << 32);
}

static void put_f32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    sophon__put_le32(p, u);
}

static float get_f32(const uint8_t *p)
{
    uint32_t u = sophon__get_le32(p);
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static void put_header(uint8_t *out, uint32_t magic, uint16_t hdr_len)
{
    sophon__put_le32(out, magic);
    sophon__put_le16(out + 4, LAYOUT_VERSION);
    sophon__put_le16(out + 6, hdr_len);
}

/*
 * Checks the common header. A later layout version may only append fields (and raise the
 * header length) when strict is 0: replies are read by what the reader knows. Requests are
 * strict: an OSD must not run a request whose meaning it does not fully know, and refuses it as
 * malformed (clients learn the class's wire version from the `version` method beforehand).
 */
static int check_header(const uint8_t *buf, size_t len, uint32_t magic, uint16_t min_len,
                        int strict, uint16_t *hdr_len)
{
    if (buf == NULL || len < min_len || sophon__get_le32(buf) != magic)
        return -EINVAL;
    uint16_t version = sophon__get_le16(buf + 4);
    if (version == 0)
        return -EINVAL;
    if (strict && version != LAYOUT_VERSION)
        return -EINVAL;
    *hdr_len = sophon__get_le16(buf + 6);
    if (*hdr_len < min_len || *hdr_len > len || (strict && *hdr_len != min_len))
        return -EINVAL;
    return 0;
}

/*
 * Version reply (16 bytes): header, 8 u32 class version, 12 u16 wire version, 14 u16 reserved.
 */
int sophon_version_encode(uint8_t *out, size_t cap, const struct sophon_version_info *info)
{
    if (cap < SOPHON_VERSION_MSG_LEN)
        return -ERANGE;
    put_header(out, SOPHON_VERSION_MAGIC, SOPHON_VERSION_MSG_LEN);
    sophon__put_le32(out + 8, info->class_version);
    sophon__put_le16(out + 12, info->wire_version);
    sophon__put_le16(out + 14, 0);
    return SOPHON_VERSION_MSG_LEN;
}

int sophon_version_decode(struct sophon_version_info *out, const uint8_t *buf, size_t len)
{
    uint16_t hdr_len;
    int r = check_header(buf, len, SOPHON_VERSION_MAGIC, SOPHON_VERSION_MSG_LEN, 0, &hdr_len);
    if (r < 0)
        return r;
    out->class_version = sophon__get_le32(buf + 8);
    out->wire_version = sophon__get_le16(buf + 12);
    return 0;
}

const char *sophon_version_format(char *buf, size_t len, uint32_t packed)
{
    snprintf(buf, len, "%u.%u.%u", (unsigned)(packed >> 16), (unsigned)((packed >> 8) & 0xff),
             (unsigned)(packed & 0xff));
    return buf;
}

/*
 * Request (60 bytes): header, 8 u32 box x, y, w, h, 24 u32 out w, h, 32 u8 format, 33 u8 flags
 * (1 flip, 2 fast), 34 u16 reserved, 36 f32 mean[3], 48 f32 std[3].
 */
#define REQ_FLIP 0x1
#define REQ_FAST 0x2

static int params_valid(const struct sophon_prep_params *p)
{
    if (p->box_w == 0 || p->box_h == 0 || (uint64_t)p->box_x + p->box_w > UINT32_MAX ||
        (uint64_t)p->box_y + p->box_h > UINT32_MAX)
        return 0;
    if (p->out_w == 0 || p->out_h == 0 || p->out_w > SOPHON_MAX_SIDE || p->out_h > SOPHON_MAX_SIDE)
        return 0;
    if (p->format != SOPHON_FORMAT_U8 && p->format != SOPHON_FORMAT_F32)
        return 0;
    if (p->flip > 1 || p->fast > 1)
        return 0;
    for (int c = 0; c < 3; c++)
        if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0.0f)
            return 0;
    return 1;
}

int sophon_request_encode(uint8_t *out, size_t cap, const struct sophon_prep_params *p)
{
    if (cap < SOPHON_REQUEST_LEN)
        return -ERANGE;
    if (!params_valid(p))
        return -EINVAL;
    put_header(out, SOPHON_REQUEST_MAGIC, SOPHON_REQUEST_LEN);
    sophon__put_le32(out + 8, p->box_x);
    sophon__put_le32(out + 12, p->box_y);
    sophon__put_le32(out + 16, p->box_w);
    sophon__put_le32(out + 20, p->box_h);
    sophon__put_le32(out + 24, p->out_w);
    sophon__put_le32(out + 28, p->out_h);
    out[32] = p->format;
    out[33] = (uint8_t)((p->flip ? REQ_FLIP : 0) | (p->fast ? REQ_FAST : 0));
    sophon__put_le16(out + 34, 0);
    for (int c = 0; c < 3; c++) {
        put_f32(out + 36 + 4 * c, p->mean[c]);
        put_f32(out + 48 + 4 * c, p->std[c]);
    }
    return SOPHON_REQUEST_LEN;
}

int sophon_request_decode(struct sophon_prep_params *out, const uint8_t *buf, size_t len)
{
    struct sophon_prep_params p;
    uint16_t hdr_len;
    int r = check_header(buf, len, SOPHON_REQUEST_MAGIC, SOPHON_REQUEST_LEN, 1, &hdr_len);
    if (r < 0)
        return r;
    if (len != hdr_len || (buf[33] & ~(REQ_FLIP | REQ_FAST)) != 0 || sophon__get_le16(buf + 34))
        return -EINVAL;
    p.box_x = sophon__get_le32(buf + 8);
    p.box_y = sophon__get_le32(buf + 12);
    p.box_w = sophon__get_le32(buf + 16);
    p.box_h = sophon__get_le32(buf + 20);
    p.out_w = sophon__get_le32(buf + 24);
    p.out_h = sophon__get_le32(buf + 28);
    p.format = buf[32];
    p.flip = (buf[33] & REQ_FLIP) != 0;
    p.fast = (buf[33] & REQ_FAST) != 0;
    for (int c = 0; c < 3; c++) {
        p.mean[c] = get_f32(buf + 36 + 4 * c);
        p.std[c] = get_f32(buf + 48 + 4 * c);
    }
    if (!params_valid(&p))
        return -EINVAL;
    *out = p;
    return 0;
}

/*
 * Response header (48 bytes): header, 8 u8 format, 9 u8 flags (1 flip, 2 fast), 10 u8
 * channels, 11 u8 reserved, 12 u32 width, 16 u32 height, 20 u32 reserved, 24 u64 cpu ns,
 * 32 u64 source bytes, 40 u64 payload length; then the payload.
 */
uint64_t sophon_response_payload_size(const struct sophon_response *r)
{
    uint64_t sample;
    switch (r->format) {
    case SOPHON_FORMAT_U8:
        sample = 1;
        break;
    case SOPHON_FORMAT_F32:
        sample = 4;
        break;
    default:
        return 0;
    }
    if (r->channels != 3 || r->width == 0 || r->height == 0 || r->width > SOPHON_MAX_SIDE ||
        r->height > SOPHON_MAX_SIDE)
        return 0;
    return (uint64_t)r->width * r->height * r->channels * sample;
}

uint64_t sophon_response_size(const struct sophon_prep_params *p)
{
    uint64_t n = sophon_prep_output_size(p);
    return n == 0 ? 0 : SOPHON_RESPONSE_HDR_LEN + n;
}

int sophon_response_encode_header(uint8_t *out, size_t cap, const struct sophon_response *r)
{
    if (cap < SOPHON_RESPONSE_HDR_LEN)
        return -ERANGE;
    if (r->flip > 1 || r->fast > 1 || sophon_response_payload_size(r) != r->payload_len ||
        r->payload_len == 0)
        return -EINVAL;
    put_header(out, SOPHON_RESPONSE_MAGIC, SOPHON_RESPONSE_HDR_LEN);
    out[8] = r->format;
    out[9] = (uint8_t)((r->flip ? REQ_FLIP : 0) | (r->fast ? REQ_FAST : 0));
    out[10] = r->channels;
    out[11] = 0;
    sophon__put_le32(out + 12, r->width);
    sophon__put_le32(out + 16, r->height);
    sophon__put_le32(out + 20, 0);
    sophon__put_le64(out + 24, r->cpu_ns);
    sophon__put_le64(out + 32, r->source_bytes);
    sophon__put_le64(out + 40, r->payload_len);
    return SOPHON_RESPONSE_HDR_LEN;
}

int sophon_response_decode(struct sophon_response *out, const uint8_t **payload, const uint8_t *buf,
                           size_t len)
{
    struct sophon_response r;
    uint16_t hdr_len;
    int rc = check_header(buf, len, SOPHON_RESPONSE_MAGIC, SOPHON_RESPONSE_HDR_LEN, 0, &hdr_len);
    if (rc < 0)
        return rc;
    r.format = buf[8];
    r.flip = (buf[9] & REQ_FLIP) != 0;
    r.fast = (buf[9] & REQ_FAST) != 0;
    r.channels = buf[10];
    r.width = sophon__get_le32(buf + 12);
    r.height = sophon__get_le32(buf + 16);
    r.cpu_ns = sophon__get_le64(buf + 24);
    r.source_bytes = sophon__get_le64(buf + 32);
    r.payload_len = sophon__get_le64(buf + 40);
    if (r.payload_len == 0 || r.payload_len != sophon_response_payload_size(&r) ||
        r.payload_len != len - hdr_len)
        return -EINVAL;
    *out = r;
    *payload = buf + hdr_len;
    return 0;
}

/*
 * Probe reply (40 bytes): header, 8 u32 width, 12 u32 height, 16 u8 components, 17 u8
 * progressive, 18 u8 colorspace, 19 u8 subsampling, 20 u8 bits, 21..23 reserved, 24 u32 scans,
 * 28 u32 reserved, 32 u64 object size.
 */
int sophon_probe_encode(uint8_t *out, size_t cap, const struct sophon_probe_reply *r)
{
    if (cap < SOPHON_PROBE_MSG_LEN)
        return -ERANGE;
    memset(out, 0, SOPHON_PROBE_MSG_LEN);
    put_header(out, SOPHON_PROBE_MAGIC, SOPHON_PROBE_MSG_LEN);
    sophon__put_le32(out + 8, r->info.width);
    sophon__put_le32(out + 12, r->info.height);
    out[16] = r->info.components;
    out[17] = r->info.progressive;
    out[18] = r->info.colorspace;
    out[19] = r->info.subsampling;
    out[20] = r->info.bits;
    sophon__put_le32(out + 24, r->info.scans);
    sophon__put_le64(out + 32, r->object_size);
    return SOPHON_PROBE_MSG_LEN;
}

int sophon_probe_decode(struct sophon_probe_reply *out, const uint8_t *buf, size_t len)
{
    uint16_t hdr_len;
    int r = check_header(buf, len, SOPHON_PROBE_MAGIC, SOPHON_PROBE_MSG_LEN, 0, &hdr_len);
    if (r < 0)
        return r;
    memset(out, 0, sizeof(*out));
    out->info.width = sophon__get_le32(buf + 8);
    out->info.height = sophon__get_le32(buf + 12);
    out->info.components = buf[16];
    out->info.progressive = buf[17];
    out->info.colorspace = buf[18];
    out->info.subsampling = buf[19];
    out->info.bits = buf[20];
    out->info.scans = sophon__get_le32(buf + 24);
    out->object_size = sophon__get_le64(buf + 32);
    return 0;
}
