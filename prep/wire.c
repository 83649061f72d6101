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

#include "pipeline.h"

/* The layout of the messages that never changed: the version and probe replies. */
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

static void put_header(uint8_t *out, uint32_t magic, uint16_t version, uint16_t hdr_len)
{
    sophon__put_le32(out, magic);
    sophon__put_le16(out + 4, version);
    sophon__put_le16(out + 6, hdr_len);
}

/*
 * Checks the common header. Replies (strict 0) are read by what the reader knows: a later
 * layout version may only append fields and raise the header length. Requests (strict 1) must
 * be of a layout this build knows, with exactly its length: an OSD must not run a request whose
 * meaning it does not fully know, and refuses it as malformed (clients learn the class's wire
 * version from the `version` method beforehand). *version gets the layout version.
 */
static int check_header(const uint8_t *buf, size_t len, uint32_t magic, uint16_t min_len,
                        int strict, uint16_t *version, uint16_t *hdr_len)
{
    if (buf == NULL || len < 8 || sophon__get_le32(buf) != magic)
        return -EINVAL;
    *version = sophon__get_le16(buf + 4);
    *hdr_len = sophon__get_le16(buf + 6);
    if (*version == 0 || len < min_len || *hdr_len < min_len || *hdr_len > len ||
        (strict && *hdr_len != min_len))
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
    put_header(out, SOPHON_VERSION_MAGIC, LAYOUT_VERSION, SOPHON_VERSION_MSG_LEN);
    sophon__put_le32(out + 8, info->class_version);
    sophon__put_le16(out + 12, info->wire_version);
    sophon__put_le16(out + 14, 0);
    return SOPHON_VERSION_MSG_LEN;
}

int sophon_version_decode(struct sophon_version_info *out, const uint8_t *buf, size_t len)
{
    uint16_t version, hdr_len;
    int r =
        check_header(buf, len, SOPHON_VERSION_MAGIC, SOPHON_VERSION_MSG_LEN, 0, &version, &hdr_len);
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

/* Request and response flags (wire.h has the layouts). */
#define REQ_FLIP 0x1
#define REQ_FAST 0x2

/* What every layout of a request requires of its parameters. */
static int params_valid(const struct sophon_prep_params *p)
{
    if (p->box_w == 0 || p->box_h == 0 || (uint64_t)p->box_x + p->box_w > UINT32_MAX ||
        (uint64_t)p->box_y + p->box_h > UINT32_MAX)
        return 0;
    if (sophon__prep_geometry(NULL, p, NULL, 0) < 0)
        return 0;
    if (p->format != SOPHON_FORMAT_U8 && p->format != SOPHON_FORMAT_F32)
        return 0;
    if (p->flip > 1 || p->fast > 1)
        return 0;
    switch (p->stage) {
    case SOPHON_WIRE_PIXELS:
        if (p->fallback != SOPHON_FALLBACK_NONE || p->crop_max_bytes != 0)
            return 0;
        break;
    case SOPHON_WIRE_CROP:
        if (p->fallback != SOPHON_FALLBACK_NONE && p->fallback != SOPHON_FALLBACK_PIXELS)
            return 0;
        break;
    default:
        return 0;
    }
    for (int c = 0; c < 3; c++)
        if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0.0f)
            return 0;
    return 1;
}

int sophon_request_fits(const struct sophon_prep_params *p, uint16_t version)
{
    struct sophon__geometry g;

    switch (version) {
    case SOPHON_WIRE_V1:
        /* The box resized to the output, pixels: RandomResizedCrop at any size. */
        return sophon__prep_geometry(&g, p, NULL, 0) == 0 && g.resize_w == p->out_w &&
               g.resize_h == p->out_h && g.win_x == 0 && g.win_y == 0 &&
               p->stage == SOPHON_WIRE_PIXELS;
    case SOPHON_WIRE_V2:
        return p->stage == SOPHON_WIRE_PIXELS;
    case SOPHON_WIRE_V3:
        return 1;
    default:
        return 0;
    }
}

static uint8_t flags_of(const struct sophon_prep_params *p)
{
    return (uint8_t)((p->flip ? REQ_FLIP : 0) | (p->fast ? REQ_FAST : 0));
}

static void put_norm(uint8_t *out, const struct sophon_prep_params *p)
{
    for (int c = 0; c < 3; c++) {
        put_f32(out + 4 * c, p->mean[c]);
        put_f32(out + 12 + 4 * c, p->std[c]);
    }
}

static void get_norm(struct sophon_prep_params *p, const uint8_t *buf)
{
    for (int c = 0; c < 3; c++) {
        p->mean[c] = get_f32(buf + 4 * c);
        p->std[c] = get_f32(buf + 12 + 4 * c);
    }
}

int sophon_request_encode_as(uint8_t *out, size_t cap, const struct sophon_prep_params *p,
                             uint16_t version)
{
    struct sophon__geometry g;
    size_t len = version == SOPHON_WIRE_V1   ? SOPHON_REQUEST_LEN_V1
                 : version == SOPHON_WIRE_V2 ? SOPHON_REQUEST_LEN_V2
                 : version == SOPHON_WIRE_V3 ? SOPHON_REQUEST_LEN_V3
                                             : 0;

    if (len == 0 || !params_valid(p) || !sophon_request_fits(p, version))
        return -EINVAL;
    if (cap < len)
        return -ERANGE;
    sophon__prep_geometry(&g, p, NULL, 0);
    memset(out, 0, len);
    put_header(out, SOPHON_REQUEST_MAGIC, version, (uint16_t)len);
    sophon__put_le32(out + 8, p->box_x);
    sophon__put_le32(out + 12, p->box_y);
    sophon__put_le32(out + 16, p->box_w);
    sophon__put_le32(out + 20, p->box_h);
    if (version == SOPHON_WIRE_V1) {
        sophon__put_le32(out + 24, p->out_w);
        sophon__put_le32(out + 28, p->out_h);
        out[32] = p->format;
        out[33] = flags_of(p);
        put_norm(out + 36, p);
        return (int)len;
    }
    sophon__put_le32(out + 24, g.resize_w);
    sophon__put_le32(out + 28, g.resize_h);
    sophon__put_le32(out + 32, g.win_x);
    sophon__put_le32(out + 36, g.win_y);
    sophon__put_le32(out + 40, p->out_w);
    sophon__put_le32(out + 44, p->out_h);
    out[48] = p->format;
    out[49] = flags_of(p);
    out[50] = p->stage;
    out[51] = p->fallback;
    sophon__put_le32(out + 52, p->crop_max_bytes);
    put_norm(out + 56, p);
    return (int)len;
}

int sophon_request_encode(uint8_t *out, size_t cap, const struct sophon_prep_params *p)
{
    return sophon_request_encode_as(out, cap, p, SOPHON_WIRE_LATEST);
}

int sophon_request_decode(struct sophon_prep_params *out, uint16_t *version, const uint8_t *buf,
                          size_t len)
{
    static const struct sophon_prep_params defaults = SOPHON_PREP_PARAMS_INIT;
    struct sophon_prep_params p = defaults;
    uint16_t v, hdr_len;
    int r;

    if (buf == NULL || len < 8)
        return -EINVAL;
    v = sophon__get_le16(buf + 4);
    r = check_header(buf, len, SOPHON_REQUEST_MAGIC,
                     v == SOPHON_WIRE_V1 ? SOPHON_REQUEST_LEN_V1 : SOPHON_REQUEST_LEN_V2, 1, &v,
                     &hdr_len);
    if (r < 0 || v < SOPHON_WIRE_V1 || v > SOPHON_WIRE_V3 || len != hdr_len)
        return -EINVAL;
    p.box_x = sophon__get_le32(buf + 8);
    p.box_y = sophon__get_le32(buf + 12);
    p.box_w = sophon__get_le32(buf + 16);
    p.box_h = sophon__get_le32(buf + 20);
    if (v == SOPHON_WIRE_V1) {
        if ((buf[33] & ~(REQ_FLIP | REQ_FAST)) != 0 || sophon__get_le16(buf + 34))
            return -EINVAL;
        p.out_w = sophon__get_le32(buf + 24);
        p.out_h = sophon__get_le32(buf + 28);
        p.format = buf[32];
        p.flip = (buf[33] & REQ_FLIP) != 0;
        p.fast = (buf[33] & REQ_FAST) != 0;
        get_norm(&p, buf + 36);
    } else {
        if ((buf[49] & ~(REQ_FLIP | REQ_FAST)) != 0)
            return -EINVAL;
        p.resize_w = sophon__get_le32(buf + 24);
        p.resize_h = sophon__get_le32(buf + 28);
        p.win_x = sophon__get_le32(buf + 32);
        p.win_y = sophon__get_le32(buf + 36);
        p.out_w = sophon__get_le32(buf + 40);
        p.out_h = sophon__get_le32(buf + 44);
        p.format = buf[48];
        p.flip = (buf[49] & REQ_FLIP) != 0;
        p.fast = (buf[49] & REQ_FAST) != 0;
        p.stage = buf[50];
        p.fallback = buf[51];
        p.crop_max_bytes = sophon__get_le32(buf + 52);
        get_norm(&p, buf + 56);
        /* 0 x 0 is the request-side shorthand; on the wire the target is explicit. */
        if (p.resize_w == 0 || p.resize_h == 0)
            return -EINVAL;
    }
    if (!params_valid(&p) || !sophon_request_fits(&p, v))
        return -EINVAL;
    *out = p;
    if (version != NULL)
        *version = v;
    return 0;
}

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
    if (r->stage != SOPHON_WIRE_PIXELS || r->channels != 3 || r->width == 0 || r->height == 0 ||
        r->width > SOPHON_MAX_SIDE || r->height > SOPHON_MAX_SIDE)
        return 0;
    return (uint64_t)r->width * r->height * r->channels * sample;
}

size_t sophon_response_header_len(uint16_t version)
{
    switch (version) {
    case SOPHON_WIRE_V1:
        return SOPHON_RESPONSE_HDR_LEN_V1;
    case SOPHON_WIRE_V2:
        return SOPHON_RESPONSE_HDR_LEN_V2;
    case SOPHON_WIRE_V3:
        return SOPHON_RESPONSE_HDR_LEN_V3;
    default:
        return 0;
    }
}

uint64_t sophon_response_size_as(const struct sophon_prep_params *p, uint16_t version)
{
    uint64_t n = sophon_prep_output_size(p);
    size_t hdr = sophon_response_header_len(version);
    return n == 0 || hdr == 0 ? 0 : hdr + n;
}

uint64_t sophon_response_size(const struct sophon_prep_params *p)
{
    return sophon_response_size_as(p, SOPHON_WIRE_LATEST);
}

/* What every layout requires of a response: a pixel payload as long as its geometry says, or a
 * crop JPEG of a plausible size. */
static int response_valid(const struct sophon_response *r)
{
    if (r->flip > 1 || r->fast > 1 || r->payload_len == 0)
        return 0;
    if (r->stage == SOPHON_WIRE_PIXELS)
        return sophon_response_payload_size(r) == r->payload_len && r->origin_x == 0 &&
               r->origin_y == 0;
    return r->stage == SOPHON_WIRE_CROP && r->format == 0 && r->channels == 3 && r->width > 0 &&
           r->height > 0 && r->width <= 65535 && r->height <= 65535;
}

int sophon_response_encode_header(uint8_t *out, size_t cap, const struct sophon_response *r)
{
    size_t len = sophon_response_header_len(r->version);

    if (len == 0 || !response_valid(r) ||
        (r->version < SOPHON_WIRE_V3 && r->stage != SOPHON_WIRE_PIXELS))
        return -EINVAL;
    if (cap < len)
        return -ERANGE;
    memset(out, 0, len);
    put_header(out, SOPHON_RESPONSE_MAGIC, r->version, (uint16_t)len);
    if (r->version == SOPHON_WIRE_V1) {
        out[8] = r->format;
        out[9] = (uint8_t)((r->flip ? REQ_FLIP : 0) | (r->fast ? REQ_FAST : 0));
        out[10] = r->channels;
        sophon__put_le32(out + 12, r->width);
        sophon__put_le32(out + 16, r->height);
        sophon__put_le64(out + 24, r->cpu_ns);
        sophon__put_le64(out + 32, r->source_bytes);
        sophon__put_le64(out + 40, r->payload_len);
        return (int)len;
    }
    out[8] = r->stage;
    out[9] = r->format;
    out[10] = r->flip;
    out[11] = r->fast;
    out[12] = r->channels;
    sophon__put_le32(out + 16, r->width);
    sophon__put_le32(out + 20, r->height);
    sophon__put_le32(out + 24, r->origin_x);
    sophon__put_le32(out + 28, r->origin_y);
    sophon__put_le64(out + 32, r->cpu_ns);
    sophon__put_le64(out + 40, r->source_bytes);
    sophon__put_le64(out + 48, r->payload_len);
    return (int)len;
}

int sophon_response_decode(struct sophon_response *out, const uint8_t **payload, const uint8_t *buf,
                           size_t len)
{
    struct sophon_response r = {0};
    uint16_t version, hdr_len;
    int rc;

    if (buf == NULL || len < 8)
        return -EINVAL;
    version = sophon__get_le16(buf + 4);
    rc = check_header(buf, len, SOPHON_RESPONSE_MAGIC,
                      version == SOPHON_WIRE_V1 ? SOPHON_RESPONSE_HDR_LEN_V1
                                                : SOPHON_RESPONSE_HDR_LEN_V2,
                      0, &version, &hdr_len);
    if (rc < 0)
        return rc;
    if (version == SOPHON_WIRE_V1) {
        r.version = SOPHON_WIRE_V1;
        r.stage = SOPHON_WIRE_PIXELS;
        r.format = buf[8];
        r.flip = (buf[9] & REQ_FLIP) != 0;
        r.fast = (buf[9] & REQ_FAST) != 0;
        r.channels = buf[10];
        r.width = sophon__get_le32(buf + 12);
        r.height = sophon__get_le32(buf + 16);
        r.cpu_ns = sophon__get_le64(buf + 24);
        r.source_bytes = sophon__get_le64(buf + 32);
        r.payload_len = sophon__get_le64(buf + 40);
    } else {
        /* Layout 2 or 3, or a later one that appended fields: read as layout 3. */
        r.version = version == SOPHON_WIRE_V2 ? SOPHON_WIRE_V2 : SOPHON_WIRE_V3;
        r.stage = buf[8];
        r.format = buf[9];
        r.flip = buf[10];
        r.fast = buf[11];
        r.channels = buf[12];
        r.width = sophon__get_le32(buf + 16);
        r.height = sophon__get_le32(buf + 20);
        r.origin_x = sophon__get_le32(buf + 24);
        r.origin_y = sophon__get_le32(buf + 28);
        r.cpu_ns = sophon__get_le64(buf + 32);
        r.source_bytes = sophon__get_le64(buf + 40);
        r.payload_len = sophon__get_le64(buf + 48);
        if (buf[13] != 0 || buf[14] != 0 || buf[15] != 0)
            return -EINVAL;
    }
    if (!response_valid(&r) || r.payload_len != len - hdr_len ||
        (r.version < SOPHON_WIRE_V3 && r.stage != SOPHON_WIRE_PIXELS))
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
    put_header(out, SOPHON_PROBE_MAGIC, LAYOUT_VERSION, SOPHON_PROBE_MSG_LEN);
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
    uint16_t version, hdr_len;
    int r = check_header(buf, len, SOPHON_PROBE_MAGIC, SOPHON_PROBE_MSG_LEN, 0, &version, &hdr_len);
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

/* CPU reply (40 bytes): header, 8 u32 pid, 12 u32 reserved, 16 u64 host, 24 u64 process CPU ns,
 * 32 u64 monotonic ns. */
int sophon_cpu_encode(uint8_t *out, size_t cap, const struct sophon_cpu_reply *r)
{
    if (cap < SOPHON_CPU_MSG_LEN)
        return -ERANGE;
    memset(out, 0, SOPHON_CPU_MSG_LEN);
    put_header(out, SOPHON_CPU_MAGIC, LAYOUT_VERSION, SOPHON_CPU_MSG_LEN);
    sophon__put_le32(out + 8, r->pid);
    sophon__put_le64(out + 16, r->host);
    sophon__put_le64(out + 24, r->cpu_ns);
    sophon__put_le64(out + 32, r->clock_ns);
    return SOPHON_CPU_MSG_LEN;
}

int sophon_cpu_decode(struct sophon_cpu_reply *out, const uint8_t *buf, size_t len)
{
    uint16_t version, hdr_len;
    int r = check_header(buf, len, SOPHON_CPU_MAGIC, SOPHON_CPU_MSG_LEN, 0, &version, &hdr_len);
    if (r < 0)
        return r;
    out->pid = sophon__get_le32(buf + 8);
    out->host = sophon__get_le64(buf + 16);
    out->cpu_ns = sophon__get_le64(buf + 24);
    out->clock_ns = sophon__get_le64(buf + 32);
    return 0;
}
