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

/* Reply of the class method `version`: "SPHV". */
#define SOPHON_VERSION_MAGIC 0x56485053u
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

/* Little-endian helpers shared by the encoders and decoders of this format. */
void sophon__put_le16(uint8_t *p, uint16_t v);
void sophon__put_le32(uint8_t *p, uint32_t v);
void sophon__put_le64(uint8_t *p, uint64_t v);
uint16_t sophon__get_le16(const uint8_t *p);
uint32_t sophon__get_le32(const uint8_t *p);
uint64_t sophon__get_le64(const uint8_t *p);

#endif
