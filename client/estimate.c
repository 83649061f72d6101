/*
 * estimate.c - the link's bandwidth from the loader's reads (estimate.h).
 */
#include "estimate.h"

double sophon__rate_estimate(const struct sophon__xfer *x, size_t n)
{
    if (x == NULL || n < 3)
        return 0;
    double span = x[n - 1].t - x[0].t;
    uint64_t bytes = 0;
    for (size_t i = 1; i < n; i++)
        bytes += x[i].bytes;
    return span > 0 ? (double)bytes / span : 0;
}
