/*
 * pipeline.h - what prep/ shares inside itself about a request: its geometry, checked once for
 * the pipeline and the wire format, and sophon_prep_run with decode flags, for the tests and
 * tools that compare the progressive cut with a decode of the whole file.
 */
#ifndef SOPHON_PREP_PIPELINE_H
#define SOPHON_PREP_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "prep.h"

/* The geometry a request resolves to: the box resized to resize_w x resize_h, and the window of
 * the output at (win_x, win_y) in it. */
struct sophon__geometry {
    uint32_t resize_w, resize_h, win_x, win_y;
};

/*
 * sophon__prep_geometry - p's geometry with resize 0 x 0 made explicit (out_w x out_h, window at
 * 0, 0), checked: the sides within SOPHON_MAX_SIDE and SOPHON_MAX_RESIZE_SIDE, the window
 * inside the resized box, no window offset without a resize. Returns 0 or -EINVAL (with a
 * message in err when err != NULL). The one rule the pipeline and the wire format share.
 */
int sophon__prep_geometry(struct sophon__geometry *out, const struct sophon_prep_params *p,
                          char *err, size_t errlen);

/*
 * sophon__prep_run - sophon_prep_run, with SOPHON__DECODE_WHOLE_FILE and/or
 * SOPHON__DECODE_LIBJPEG_HUFFMAN (jpeg/include/jpeg.h), or 0, in
 * decode_flags (p->fast selects the fast mode, as in sophon_prep_run). The same bytes either way.
 */
int sophon__prep_run(uint8_t *out, size_t out_cap, const uint8_t *jpeg, size_t len,
                     const struct sophon_prep_params *p, const struct sophon_limits *lim,
                     unsigned decode_flags, char *err, size_t errlen);

#endif /* SOPHON_PREP_PIPELINE_H */
