/*
 * sophon.h - libsophon, the client library of sophon.
 *
 * sophon prepares training samples (JPEG decode, crop, resize, flip) inside the Ceph OSDs that
 * store them, through the `sophon` object class, where that cuts network traffic. This header is
 * the library's public API. Every function returning int returns 0 (or a documented
 * non-negative length) on success and a negative errno on failure.
 */
#ifndef SOPHON_H
#define SOPHON_H

#include <stdint.h>

#include <rados/librados.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SOPHON_API __attribute__((visibility("default")))
#else
#define SOPHON_API
#endif

/* The version of this library, "major.minor.patch". */
SOPHON_API const char *sophon_version_string(void);

/* What the sophon class in an OSD reports about itself. */
struct sophon_class_version {
    uint32_t class_version; /* major << 16 | minor << 8 | patch */
    uint16_t wire_version;  /* request/response format it speaks */
};

/*
 * Asks the OSD holding object oid (in io's pool and namespace) for the version of its sophon
 * class. Thread-safe as far as librados is.
 *
 * Returns 0, or: -ENOENT no such object; -EPERM the client's key may not call classes on this
 * pool (it needs 'x' or 'class-read' in its osd caps); -EOPNOTSUPP the OSD has no sophon class
 * (or it is too old to know the method); -EPROTO the reply was not understood; other librados
 * errors as they come.
 */
SOPHON_API int sophon_class_version_get(struct sophon_class_version *out, rados_ioctx_t io,
                                        const char *oid);

/* Wire format version this library speaks. */
SOPHON_API uint16_t sophon_wire_version(void);

#ifdef __cplusplus
}
#endif

#endif
