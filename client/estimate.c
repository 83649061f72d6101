/*
 * estimate.c - the link's bandwidth from the loader's reads (estimate.h).
 */
#include "estimate.h"

double sophon__rate_estimate(const struct sophon__xfer *x, size_t n)
{
    if (x == NULL || n < 3)
        return 0;
    /* The least-squares slope of the bytes completed so far over the completion times. */
    double mt = 0, mb = 0, cum = 0;
    for (size_t i = 0; i < n; i++) {
        cum += (double)x[i].bytes;
        mt += x[i].t;
        mb += cum;
    }
    mt /= (double)n;
    mb /= (double)n;
    double sxy = 0, sxx = 0;
    cum = 0;
    for (size_t i = 0; i < n; i++) {
        cum += (double)x[i].bytes;
        sxy += (x[i].t - mt) * (cum - mb);
        sxx += (x[i].t - mt) * (x[i].t - mt);
    }
    double rate = sxx > 0 ? sxy / sxx : 0;
    return rate > 0 ? rate : 0;
}
