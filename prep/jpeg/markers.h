/*
 * markers.h - a walk over JPEG marker segments without decoding anything.
 */
#ifndef SOPHON_PREP_MARKERS_H
#define SOPHON_PREP_MARKERS_H

#include <stddef.h>
#include <stdint.h>

#define SOPHON__M_EOI 0xd9
#define SOPHON__M_SOS 0xda

struct sophon__markers {
    uint32_t scans; /* SOS markers seen. */
    int eoi;        /* 1 if the walk reached an EOI marker: the file is not truncated. */
};

/* A walk in progress: sophon__walk_start, then sophon__walk_next until it returns 0. */
struct sophon__walk {
    const uint8_t *jpeg;
    size_t len;
    size_t pos; /* Where the search for the next marker starts. */
    int done;   /* EOI was returned, or the data ended. */
};

/*
 * One marker segment. Standalone markers (RSTn, TEM) outside entropy-coded data are passed over
 * and never reported, as libjpeg passes over them.
 */
struct sophon__segment {
    uint8_t marker; /* The code after 0xFF: SOPHON__M_SOS, SOPHON__M_EOI, ... */
    size_t start;   /* Offset of the marker's first 0xFF (fill bytes included). */
    size_t params;  /* Offset of the parameters, just past the 2-byte length. */
    size_t nparams; /* Bytes of parameters: the segment length - 2; 0 for EOI. */
    size_t end;     /* Offset just past the segment; for SOS, past its entropy-coded data. */
    size_t junk;    /* Bytes before start that are neither a segment nor fill: garbage. */
};

/* What an SOS header says (ITU T.81 B.2.3). */
struct sophon__scan {
    uint8_t ncomps;  /* Ns, 1..4. */
    uint8_t comp[4]; /* Component identifiers Cs, as in the SOF. */
    uint8_t ss, se;  /* Spectral selection: the first and last zigzag coefficient. */
    uint8_t ah, al;  /* Successive approximation: previous and current point transform. */
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

/*
 * sophon__walk_start - begin a walk over jpeg[0..len), which the caller keeps alive for the
 * walk. Returns 0, or -EBADMSG when the data does not start with SOI.
 */
int sophon__walk_start(struct sophon__walk *w, const uint8_t *jpeg, size_t len);

/*
 * sophon__walk_next - the next marker segment in *out. Returns 1; 0 once EOI has been returned
 * or the data ends (a segment cut short by the end is not returned); -EBADMSG for a segment
 * length below 2. Every call moves forward, so a walk takes O(len) in all.
 */
int sophon__walk_next(struct sophon__walk *w, struct sophon__segment *out);

/*
 * sophon__parse_sos - read the header of an SOS segment found by the walk. Returns 0, or
 * -EBADMSG when its length does not match its component count or the count is not 1..4.
 */
int sophon__parse_sos(struct sophon__scan *out, const uint8_t *jpeg,
                      const struct sophon__segment *seg);

/* sophon__is_sof - whether marker starts a frame (SOF0..SOF15, not DHT, JPG or DAC). */
int sophon__is_sof(uint8_t marker);

#endif /* SOPHON_PREP_MARKERS_H */
