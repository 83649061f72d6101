/*
 * pipeline.h - sophon_prep_run with decode flags, for the tests and tools that compare the
 * progressive cut with a decode of the whole file.
 */
#ifndef SOPHON_PREP_PIPELINE_H
#define SOPHON_PREP_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "prep.h"

/*
 * sophon__prep_run - sophon_prep_run, with SOPHON__DECODE_WHOLE_FILE and/or
 * SOPHON__DECODE_LIBJPEG_HUFFMAN (jpeg/include/jpeg.h), or 0, in
 * decode_flags (p->fast selects the fast mode, as in sophon_prep_run). The same bytes either way.
 */
int sophon__prep_run(uint8_t *out, size_t out_cap, const uint8_t *jpeg, size_t len,
                     const struct sophon_prep_params *p, const struct sophon_limits *lim,
                     unsigned decode_flags, char *err, size_t errlen);

#endif /* SOPHON_PREP_PIPELINE_H */
