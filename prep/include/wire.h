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
 * The prep request ("SPHQ"): what the class method `prep` (and the client's local path) runs.
 * Carries every parameter explicitly; the OSD draws nothing at random.
 */
#define SOPHON_REQUEST_MAGIC 0x51485053u
#define SOPHON_REQUEST_LEN   60

/* Encodes p. Returns SOPHON_REQUEST_LEN, -ERANGE if cap is too small, -EINVAL if p is not a
 * request that sophon_request_decode() would accept. */
int sophon_request_encode(uint8_t *out, size_t cap, const struct sophon_prep_params *p);

/*
 * Decodes a request. Returns 0; -EINVAL if buf is malformed (bad magic or length, unknown
 * format or flags, nonzero reserved bits, empty box, an output side of 0 or over
 * SOPHON_MAX_SIDE, a mean or std that is not finite or a std of 0, a layout version this build
 * does not know).
 */
int sophon_request_decode(struct sophon_prep_params *out, const uint8_t *buf, size_t len);

/* The prep response ("SPHR"): a header, then the output bytes. */
#define SOPHON_RESPONSE_MAGIC   0x52485053u
#define SOPHON_RESPONSE_HDR_LEN 48

struct sophon_response {
    uint8_t format;     /* enum sophon_format of the payload */
    uint8_t flip, fast; /* as requested */
    uint8_t channels;   /* 3 */
    uint32_t width, height;
    uint64_t cpu_ns;       /* thread CPU time the preparation took where it ran */
    uint64_t source_bytes; /* bytes of the stored object */
    uint64_t payload_len;  /* width * height * channels * (1 for u8, 4 for f32) */
};

/* Bytes of the payload that a response with this geometry and format carries; 0 if invalid. */
uint64_t sophon_response_payload_size(const struct sophon_response *r);

/* Encodes the header only (the payload follows it). Returns SOPHON_RESPONSE_HDR_LEN, -ERANGE,
 * or -EINVAL if payload_len does not match the geometry. */
int sophon_response_encode_header(uint8_t *out, size_t cap, const struct sophon_response *r);

/* Decodes a response; *payload points into buf. Returns 0 or -EINVAL. */
int sophon_response_decode(struct sophon_response *out, const uint8_t **payload, const uint8_t *buf,
                           size_t len);

/* Bytes of the whole response (header and output) to a request p; 0 if p is invalid. */
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

/* Little-endian helpers shared by the encoders and decoders of this format. */
void sophon__put_le16(uint8_t *p, uint16_t v);
void sophon__put_le32(uint8_t *p, uint32_t v);
void sophon__put_le64(uint8_t *p, uint64_t v);
uint16_t sophon__get_le16(const uint8_t *p);
uint32_t sophon__get_le32(const uint8_t *p);
uint64_t sophon__get_le64(const uint8_t *p);

#endif
