/*
 * prep_call.h - prep and probe, in the OSD (through the sophon class) or locally, with the same
 * wire format either way. Internal to the client.
 */
#ifndef SOPHON_PREP_CALL_H
#define SOPHON_PREP_CALL_H

#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>

#include "wire.h"

/* Calls sophon.probe on oid. Returns 0 or a negative errno (-EPROTO: reply not understood). */
int sophon__remote_probe(struct sophon_probe_reply *out, rados_ioctx_t io, const char *oid);

/* sophon_class_version_get (sophon.h), for the client's internals. */
int sophon__class_version(struct sophon_version_info *out, rados_ioctx_t io, const char *oid);

/*
 * The wire version to send the class in the OSD holding oid: what its `version` method says it
 * speaks, at most this build's latest (a class answers every older version). Returns 0, or what
 * sophon__class_version returns (-EOPNOTSUPP no class, -EPERM no class caps, ...).
 */
int sophon__class_wire(uint16_t *out, rados_ioctx_t io, const char *oid);

/*
 * Calls sophon.prep on oid with request p in wire layout `version` (sophon__class_wire; p must
 * fit it, sophon_request_fits). On success *resp (freed with rados_buffer_free()) holds a
 * response that sophon_response_decode() accepted, of *resp_len bytes.
 */
int sophon__remote_prep(char **resp, size_t *resp_len, rados_ioctx_t io, const char *oid,
                        const struct sophon_prep_params *p, uint16_t version);

/*
 * The same request run here on jpeg[0..len): *resp (freed with free()) holds the response.
 * err gets a one-line message on failure.
 */
int sophon__local_prep(uint8_t **resp, size_t *resp_len, const uint8_t *jpeg, size_t len,
                       const struct sophon_prep_params *p, char *err, size_t errlen);

/* Reads a whole object into a malloc'ed buffer (at most max bytes: -EFBIG past that). */
int sophon__read_object(uint8_t **buf, size_t *len, rados_ioctx_t io, const char *oid, size_t max);

/* Reads the first size bytes of an object whose size is known (one read under 1 GiB, no stat)
 * into a malloc'ed buffer; *len is what there was, fewer where the object is shorter. */
int sophon__read_object_sized(uint8_t **buf, size_t *len, rados_ioctx_t io, const char *oid,
                              uint64_t size);

#endif
