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
 * completion time: the bytes of every read after the first over the time from the first
 * completion to the last (the first read's own time holds the requests' latency and TCP's slow
 * start, not the link's rate). 0 when it cannot tell: fewer than 3 reads, or no time between the
 * first completion and the last.
 */
double sophon__rate_estimate(const struct sophon__xfer *x, size_t n);

#endif
