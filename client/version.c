/*
 * version.c - the versions of libsophon, of its wire format, and of the class in an OSD.
 */
#include "sophon.h"

#include <errno.h>

#include "prep_call.h"
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
    struct sophon_version_info info;

    if (out == NULL)
        return -EINVAL;
    int r = sophon__class_version(&info, io, oid);
    if (r < 0)
        return r;
    out->class_version = info.class_version;
    out->wire_version = info.wire_version;
    return 0;
}
