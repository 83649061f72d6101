/*
 * prep_response.h - the response to a prep request, built in one place for the OSD class and
 * the client's local path alike: the pipeline's output (prep.h) behind its header (wire.h).
 */
#ifndef SOPHON_PREP_RESPONSE_H
#define SOPHON_PREP_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

#include "prep.h"

/*
 * sophon_prep_respond - runs the pipeline on jpeg[0..len) and writes the whole pixel response,
 * header (in layout `version`: the request's) then output, to out, which must hold
 * sophon_response_size_as(p, version) bytes (wire.h; the caller allocates it with its own
 * allocator: cls_alloc in the OSD, malloc on the client). The header carries the thread CPU time
 * the preparation took. This is the one place both sides build responses, so that they are
 * byte-identical but for that time. Returns 0, -EINVAL for a version the layout of which cannot
 * carry p, or the pipeline's negative errno (prep.h); err gets a one-line message.
 */
int sophon_prep_respond(uint8_t *out, size_t cap, const uint8_t *jpeg, size_t len,
                        const struct sophon_prep_params *p, const struct sophon_limits *lim,
                        uint16_t version, char *err, size_t errlen);

#endif /* SOPHON_PREP_RESPONSE_H */
