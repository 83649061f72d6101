/*
 * prep_response.h - the response to a prep request, built in one place for the OSD class and
 * the client's local path alike (the pipeline's output, or the crop JPEG, behind its header:
 * wire.h), and the sample finished from any response in one place too.
 */
#ifndef SOPHON_PREP_RESPONSE_H
#define SOPHON_PREP_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

#include "prep.h"
#include "wire.h"

/*
 * sophon_prep_crop_cap - the most bytes the crop stage may answer request p with for a stored
 * JPEG of len bytes: p->crop_max_bytes (0: no limit), never more than the stored object (which
 * the client could read instead) nor, with the pixel fallback, than the pixels. 0 for a request
 * that is not of the crop stage.
 */
uint64_t sophon_prep_crop_cap(const struct sophon_prep_params *p, uint64_t len);

/*
 * sophon_prep_response_cap - the largest response to request p on a stored JPEG of len bytes, in
 * layout `version`: the header and the output for the pixel stage; for the crop stage the header
 * and the larger of sophon_prep_crop_cap and (with the pixel fallback) the output. 0 if p or the
 * version is invalid or cannot carry p.
 */
uint64_t sophon_prep_response_cap(const struct sophon_prep_params *p, uint64_t len,
                                  uint16_t version);

/*
 * sophon_prep_respond - runs request p on jpeg[0..len) and writes the whole response, header (in
 * layout `version`: the request's) then payload, to out, which must hold
 * sophon_prep_response_cap(p, len, version) bytes (the caller allocates it with its own
 * allocator: cls_alloc in the OSD, malloc on the client); *out_len gets its length. The pixel
 * stage runs the pipeline. The crop stage writes the lossless crop (sophon_prep_crop, optimized
 * Huffman tables) of at most sophon_prep_crop_cap bytes; when it cannot (-ENOSPC: larger; -EDOM:
 * not exact for this file) and p->fallback is SOPHON_FALLBACK_PIXELS, the pixels are returned
 * instead, with their stage in the header. The header carries the thread CPU time the whole
 * answer took. This is the one place both sides build responses, so that they are byte-identical
 * but for that time. Returns 0, -EINVAL for a version whose layout cannot carry p, -ERANGE for a
 * small buffer, or the pipeline's or the crop's negative errno (prep.h); err gets a one-line
 * message.
 */
int sophon_prep_respond(uint8_t *out, size_t cap, size_t *out_len, const uint8_t *jpeg, size_t len,
                        const struct sophon_prep_params *p, const struct sophon_limits *lim,
                        uint16_t version, char *err, size_t errlen);

/*
 * sophon_prep_finish - the sample of request p (in p->format) from a response to it that
 * sophon_response_decode accepted (*h and its payload): pixels of the format asked for are
 * copied; u8 pixels for a f32 request are normalized (sophon_prep_normalize); a crop is decoded
 * with the pipeline, the box moved by minus its origin, which gives the bytes the pipeline gives
 * on the stored object. Writes sophon_prep_output_size(p) bytes to out (out_cap at least that).
 * Returns 0, -EPROTO when the response does not answer p (another size, flip or format, a crop
 * whose origin is not above and left of the box), -ERANGE, or the pipeline's errno on the crop
 * (prep.h); err gets a one-line message.
 */
int sophon_prep_finish(uint8_t *out, size_t out_cap, const struct sophon_response *h,
                       const uint8_t *payload, const struct sophon_prep_params *p,
                       const struct sophon_limits *lim, char *err, size_t errlen);

#endif /* SOPHON_PREP_RESPONSE_H */
