/*
 * version.c - the versions of libsophon, of its wire format, and of the class in an OSD.
 */
#include "sophon.h"

#include <errno.h>

#include "sophon_config.h"
#include "wire.h"

const char *sophon_version_string(void)
{
    return SOPHON_VERSION_STRING;
}

uint16_t sophon_wire_version(void)
{
    return SOPHON_WIRE_VERSION;
}

int sophon_class_version_get(struct sophon_class_version *out, rados_ioctx_t io, const char *oid)
{
    /* Larger than today's reply so that a newer class with a longer one still fits. */
    char buf[256];
    struct sophon_version_info info;

    if (out == NULL || io == NULL || oid == NULL)
        return -EINVAL;
    int n = rados_exec(io, oid, "sophon", "version", NULL, 0, buf, sizeof(buf));
    if (n < 0)
        return n;
    if (sophon_version_decode(&info, (const uint8_t *)buf, (size_t)n) < 0)
        return -EPROTO;
    out->class_version = info.class_version;
    out->wire_version = info.wire_version;
    return 0;
}
