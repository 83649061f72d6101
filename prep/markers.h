/*
 * markers.h - a walk over JPEG marker segments without decoding anything.
 */
#ifndef SOPHON_PREP_MARKERS_H
#define SOPHON_PREP_MARKERS_H

#include <stddef.h>
#include <stdint.h>

struct sophon__markers {
    uint32_t scans; /* SOS markers seen. */
    int eoi;        /* 1 if the walk reached an EOI marker: the file is not truncated. */
};

/*
 * sophon__walk_markers - count the SOS markers of jpeg[0..len) and look for EOI, stopping early
 * once the count exceeds stop_after (0 = never stop). Marker segments are skipped by their
 * length, so a JPEG thumbnail inside APP1 is not counted; entropy-coded data is skipped byte by
 * byte up to the next marker. A file that ends early is walked up to where it ends, with
 * eoi = 0. Returns 0, or -EBADMSG when the file does not start with SOI or a segment length is
 * below 2.
 */
int sophon__walk_markers(struct sophon__markers *out, const uint8_t *jpeg, size_t len,
                         uint32_t stop_after);

#endif /* SOPHON_PREP_MARKERS_H */
