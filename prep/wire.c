/*
 * wire.c - encoders and decoders for the messages of wire.h.
 */
#include "wire.h"

#include <errno.h>
#include <stdio.h>

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

/*
 * Layout of the version reply (16 bytes):
 *   0 magic "SPHV"   4 u16 layout version (1)   6 u16 length of this header (16)
 *   8 u32 class version   12 u16 wire version   14 u16 reserved (0)
 * A later layout may append fields and raise the length; decoders read what they know.
 */
int sophon_version_encode(uint8_t *out, size_t cap, const struct sophon_version_info *info)
{
    if (cap < SOPHON_VERSION_MSG_LEN)
        return -ERANGE;
    sophon__put_le32(out, SOPHON_VERSION_MAGIC);
    sophon__put_le16(out + 4, 1);
    sophon__put_le16(out + 6, SOPHON_VERSION_MSG_LEN);
    sophon__put_le32(out + 8, info->class_version);
    sophon__put_le16(out + 12, info->wire_version);
    sophon__put_le16(out + 14, 0);
    return SOPHON_VERSION_MSG_LEN;
}

int sophon_version_decode(struct sophon_version_info *out, const uint8_t *buf, size_t len)
{
    if (buf == NULL || len < SOPHON_VERSION_MSG_LEN)
        return -EINVAL;
    if (sophon__get_le32(buf) != SOPHON_VERSION_MAGIC || sophon__get_le16(buf + 4) < 1)
        return -EINVAL;
    uint16_t hdr_len = sophon__get_le16(buf + 6);
    if (hdr_len < SOPHON_VERSION_MSG_LEN || hdr_len > len)
        return -EINVAL;
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
