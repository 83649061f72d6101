/*
 * output.h - writing a prepared sample to a file: an image to look at, or the raw bytes.
 */
#ifndef SOPHON_OUTPUT_H
#define SOPHON_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/*
 * Writes the payload of a response to path. A name ending in .ppm or .png gets an image (an f32
 * tensor is mapped back to 8-bit RGB with the request's mean and std); any other name gets the
 * payload bytes as they are. Returns 0 or a negative errno, with a message in err.
 */
int sophon__write_output(const char *path, const struct sophon_response *h, const uint8_t *payload,
                         const struct sophon_prep_params *p, char *err, size_t errlen);

#endif
