/*
 * wire.h - the messages the sophon class and its clients exchange.
 *
 * Every message is little-endian and starts with a 4-byte magic, a 16-bit layout version and a
 * 16-bit length of the fixed header, so that either side can refuse what it does not understand
 * instead of misreading it. One encoder and one decoder per message, shared by the OSD class and
 * the client. Decoders return 0 or -EINVAL for anything malformed.
 */
#ifndef SOPHON_WIRE_H
#define SOPHON_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "prep.h"

/* Reply of the class method `version`: "SPHV". */
#define SOPHON_VERSION_MAGIC   0x56485053u
#define SOPHON_VERSION_MSG_LEN 16

struct sophon_version_info {
    uint32_t class_version; /* major << 16 | minor << 8 | patch */
    uint16_t wire_version;  /* the request/response format the class speaks */
};

/*
 * Encodes the version reply into out, which must hold SOPHON_VERSION_MSG_LEN bytes.
 * Returns the number of bytes written or -ERANGE if cap is too small.
 */
int sophon_version_encode(uint8_t *out, size_t cap, const struct sophon_version_info *info);

/* Decodes a version reply. Returns 0 or -EINVAL if buf is not one. */
int sophon_version_decode(struct sophon_version_info *out, const uint8_t *buf, size_t len);

/* Formats a packed version as "major.minor.patch" into buf; returns buf. */
const char *sophon_version_format(char *buf, size_t len, uint32_t packed);

/*
 * Layout versions of the prep request and response, "the wire format" of `sophon version`. A
 * class speaks its version and every older one (it answers a request in the request's own
 * layout); a client asks the class's version first (the `version` method) and sends what the
 * class speaks. Version 2 added the resize target and window (the validation transform, any
 * size), and the fields of the crop stage, which a class of version 2 refuses. Version 3 has
 * version 2's layouts and is the first a class makes crops in: the crop stage (stage 2) is valid
 * in layout 3 only, so that a client asks for crops exactly from the classes that make them.
 */
#define SOPHON_WIRE_V1     1
#define SOPHON_WIRE_V2     2
#define SOPHON_WIRE_V3     3
#define SOPHON_WIRE_LATEST SOPHON_WIRE_V3

/*
 * The prep request ("SPHQ"): what the class method `prep` (and the client's local path) runs.
 * Carries every parameter explicitly; the OSD draws nothing at random. The methods `prep` and
 * `probe` fail with prep.h's errnos: -EMEDIUMTYPE for a JPEG of a kind sophon does not decode,
 * never -EOPNOTSUPP, which the OSD itself returns for a class or method it does not have.
 *
 * Layouts 2 and 3 (80 bytes): 0 u32 magic, 4 u16 layout version, 6 u16 header length, 8 u32 box x,
 * y, w, h, 24 u32 resize w, h, 32 u32 window x, y, 40 u32 out w, h, 48 u8 format, 49 u8 flags (bit
 * 0 flip, bit 1 fast, the rest 0), 50 u8 stage (enum sophon_wire_stage), 51 u8 fallback (enum
 * sophon_wire_fallback, 0 for the pixel stage), 52 u32 crop_max_bytes (0 for the pixel stage), 56
 * f32 mean[3], 68 f32 std[3]. Layout 1 (60 bytes): header, 8 u32 box x, y, w, h, 24 u32 out w, h,
 * 32 u8 format, 33 u8 flags, 34 u16 reserved (0), 36 f32 mean[3], 48 f32 std[3]: the box resized to
 * the output, pixels.
 */
#define SOPHON_REQUEST_MAGIC  0x51485053u
#define SOPHON_REQUEST_LEN_V1 60
#define SOPHON_REQUEST_LEN_V2 80
#define SOPHON_REQUEST_LEN_V3 80
#define SOPHON_REQUEST_LEN    SOPHON_REQUEST_LEN_V3 /* the longest: a buffer for any layout */

/*
 * Whether layout `version` can carry request p (which must be valid): layout 1 only the pixels
 * of a box resized to the output (RandomResizedCrop at any size), layout 2 the pixels of any
 * request, layout 3 everything (the crop stage too). 1 or 0.
 */
int sophon_request_fits(const struct sophon_prep_params *p, uint16_t version);

/* Encodes p in layout `version`. Returns its length, -ERANGE if cap is too small, -EINVAL if p
 * is not a request that sophon_request_decode() would accept, or one the layout cannot carry, or
 * the version is unknown. */
int sophon_request_encode_as(uint8_t *out, size_t cap, const struct sophon_prep_params *p,
                             uint16_t version);

/* sophon_request_encode_as in the latest layout: returns SOPHON_REQUEST_LEN. */
int sophon_request_encode(uint8_t *out, size_t cap, const struct sophon_prep_params *p);

/*
 * Decodes a request of any layout this build knows; *version (when not NULL) gets its layout,
 * in which the class answers. A layout 1 request decodes with resize 0 x 0 (the box resized to
 * the output) and the pixel stage. Returns 0; -EINVAL if buf is malformed (bad magic or length,
 * unknown format, flags, stage or fallback, nonzero reserved bits or crop fields for the pixel
 * stage, an empty box, an output side of 0 or over SOPHON_MAX_SIDE, a resize side of 0 or over
 * SOPHON_MAX_RESIZE_SIDE, a window outside the resized box, a mean or std that is not finite or
 * a std of 0, the crop stage in a layout before 3, a layout version this build does not know).
 */
int sophon_request_decode(struct sophon_prep_params *out, uint16_t *version, const uint8_t *buf,
                          size_t len);

/*
 * The prep response ("SPHR"): a header, then the payload.
 *
 * Layouts 2 and 3 (56 bytes; layout 2 carries pixels only): header, 8 u8 stage (1 pixels, 2 crop),
 * 9 u8 format, 10 u8 flip, 11 u8 fast, 12 u8 channels (3), 13..15 zero, 16 u32 width, 20 u32 height
 * (pixels: out w, h; crop: the crop JPEG's size), 24 u32 origin x, 28 u32 origin y (crop: its
 * top-left in source pixels, the client runs the request on it with the box moved by minus the
 * origin; pixels: 0), 32 u64 cpu ns, 40 u64 source bytes, 48 u64 payload length. A later layout may
 * append fields. Layout 1 (48 bytes): header, 8 u8 format, 9 u8 flags (1 flip, 2 fast), 10 u8
 * channels, 11 u8 reserved, 12 u32 width, 16 u32 height, 20 u32 reserved, 24 u64 cpu ns, 32 u64
 * source bytes, 40 u64 payload length: pixels only.
 */
#define SOPHON_RESPONSE_MAGIC      0x52485053u
#define SOPHON_RESPONSE_HDR_LEN_V1 48
#define SOPHON_RESPONSE_HDR_LEN_V2 56
#define SOPHON_RESPONSE_HDR_LEN_V3 56
#define SOPHON_RESPONSE_HDR_LEN    SOPHON_RESPONSE_HDR_LEN_V3 /* the latest layout's */

struct sophon_response {
    uint16_t version;   /* layout (SOPHON_WIRE_V1..V3): decoded, or the one to encode */
    uint8_t stage;      /* enum sophon_wire_stage of the payload */
    uint8_t format;     /* enum sophon_format of a pixel payload (0 for a crop) */
    uint8_t flip, fast; /* as requested */
    uint8_t channels;   /* 3 */
    uint32_t width, height;
    uint32_t origin_x, origin_y; /* a crop's top-left in the source; 0 for pixels */
    uint64_t cpu_ns;             /* thread CPU time the preparation took where it ran */
    uint64_t source_bytes;       /* bytes of the stored object */
    uint64_t payload_len; /* pixels: width * height * channels * (1 for u8, 4 for f32); a crop:
                           * the JPEG's bytes (> 0) */
};

/* Bytes of the pixel payload that a response with this geometry and format carries; 0 if
 * invalid (and for a crop, whose length the JPEG sets). */
uint64_t sophon_response_payload_size(const struct sophon_response *r);

/* Length of the response header of layout `version`; 0 for a version this build does not know. */
size_t sophon_response_header_len(uint16_t version);

/* Encodes the header only (the payload follows it) in layout r->version. Returns its length,
 * -ERANGE, or -EINVAL if payload_len does not match the geometry, or the layout cannot carry r
 * (layouts 1 and 2: pixels only, at origin 0). */
int sophon_response_encode_header(uint8_t *out, size_t cap, const struct sophon_response *r);

/* Decodes a response of any layout; *payload points into buf. Returns 0 or -EINVAL. */
int sophon_response_decode(struct sophon_response *out, const uint8_t **payload, const uint8_t *buf,
                           size_t len);

/* Bytes of the whole pixel response (header of layout `version`, and output) to a request p; 0 if
 * p or the version is invalid. */
uint64_t sophon_response_size_as(const struct sophon_prep_params *p, uint16_t version);

/* sophon_response_size_as in the latest layout. */
uint64_t sophon_response_size(const struct sophon_prep_params *p);

/* The probe reply ("SPHP"): the header facts of a stored JPEG and the object's size. */
#define SOPHON_PROBE_MAGIC   0x50485053u
#define SOPHON_PROBE_MSG_LEN 40

struct sophon_probe_reply {
    struct sophon_probe_info info;
    uint64_t object_size;
};

int sophon_probe_encode(uint8_t *out, size_t cap, const struct sophon_probe_reply *r);
int sophon_probe_decode(struct sophon_probe_reply *out, const uint8_t *buf, size_t len);

/*
 * The reply of the class method `cpu` ("SPHC"): the CPU the OSD process that answered has used
 * since it started, all its threads (the messenger, the object store, the op threads and the
 * class's preparations), and its monotonic clock, so that a client that asks twice knows what the
 * OSD spent in between, and over what time. The host and pid name the process: a client finds
 * the OSDs holding its objects by asking on a few of them.
 */
#define SOPHON_CPU_MAGIC   0x43485053u
#define SOPHON_CPU_MSG_LEN 40

struct sophon_cpu_reply {
    uint64_t host;     /* a hash of the OSD's host name */
    uint32_t pid;      /* the OSD process's */
    uint64_t cpu_ns;   /* CLOCK_PROCESS_CPUTIME_ID */
    uint64_t clock_ns; /* CLOCK_MONOTONIC */
};

int sophon_cpu_encode(uint8_t *out, size_t cap, const struct sophon_cpu_reply *r);
int sophon_cpu_decode(struct sophon_cpu_reply *out, const uint8_t *buf, size_t len);

/* Little-endian helpers shared by the encoders and decoders of this format. */
void sophon__put_le16(uint8_t *p, uint16_t v);
void sophon__put_le32(uint8_t *p, uint32_t v);
void sophon__put_le64(uint8_t *p, uint64_t v);
uint16_t sophon__get_le16(const uint8_t *p);
uint32_t sophon__get_le32(const uint8_t *p);
uint64_t sophon__get_le64(const uint8_t *p);

#endif
