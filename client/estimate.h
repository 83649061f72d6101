/*
 * estimate.h - the link's bandwidth from the loader's own reads. Internal.
 *
 * The loader measures the link before it plans (sophon_loader_open, when the bandwidth is
 * SOPHON_BUDGET_MEASURE): it reads a sample of the dataset's objects as stored, many in flight
 * so that the link stays busy, and takes their rate. Plain reads cost the OSDs no preparation,
 * so what limits them is the link (or the OSDs' disks and messengers, which the plan then rightly
 * counts as the link).
 */
#ifndef SOPHON_ESTIMATE_H
#define SOPHON_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

/* One read: when it completed (seconds on any monotonic clock) and its bytes. */
struct sophon__xfer {
    double t;
    uint64_t bytes;
};

/*
 * sophon__rate_estimate - bytes per second of reads x[0..n) that kept the link busy, sorted by
 * completion time: the least-squares slope of the bytes completed so far over the completion
 * times. Not the bytes after the first completion over the time from it to the last: each OSD's
 * connection sends its responses in turn and the connections share the link, so that at the
 * first completion the other connections' reads have crossed as much of it as the first:
 * counted after it, C connections of K reads each read the link too fast by (C - 1) / (C (K - 1))
 * (three of five: 1.17x). The slope holds whatever the first reads' latency or the connections'
 * phases. 0 when it cannot tell: fewer than 3 reads, or no time between the first completion
 * and the last.
 */
double sophon__rate_estimate(const struct sophon__xfer *x, size_t n);

#endif
