/*
 * control.c - the loader's within-epoch controller (control.h).
 */
#include "control.h"

#include <math.h>

double sophon__control_latency(const struct sophon__control_in *in)
{
    if (!(in->osd_cores > 0))
        return INFINITY;
    double own = in->own_cpu_s > 0 ? in->own_cpu_s : 0, work = own;
    /* Processor sharing: until this one is done, each other takes as much as it has (if less)
     * or as much as this one (if more) of the cores' time. */
    for (size_t i = 0; i < in->ninflight; i++)
        work += fmin(in->inflight_cpu_s[i] > 0 ? in->inflight_cpu_s[i] : 0, own);
    return fmax(work / in->osd_cores, own / fmin(in->osd_cores, 1.0));
}

unsigned sophon__control_window(double rate_Bps, double object_bytes)
{
    if (!(rate_Bps > 0) || !(object_bytes > 0) || !isfinite(rate_Bps) || !isfinite(object_bytes))
        return SOPHON__WINDOW_MIN;
    double reads = ceil(rate_Bps * SOPHON__WINDOW_LINK_S / object_bytes);
    double w = reads + SOPHON__AHEAD;
    if (!(w > SOPHON__WINDOW_MIN))
        return SOPHON__WINDOW_MIN;
    return w < SOPHON__WINDOW_MAX ? (unsigned)w : SOPHON__WINDOW_MAX;
}

int sophon__control_demote(const struct sophon__control_in *in)
{
    if (!(in->rate_Bps > 0) || !isfinite(in->rate_Bps) || !(in->osd_cores > 0))
        return 0;
    double idle = sophon__control_latency(in) - (double)in->cover_bytes / in->rate_Bps;
    if (!(idle > 0))
        return 0;
    double extra_net = in->stored_bytes > in->planned_bytes
                           ? (double)(in->stored_bytes - in->planned_bytes) / in->rate_Bps
                           : 0;
    double extra_client = 0;
    if (in->extra_client_s > 0)
        extra_client = in->client_cores > 0 ? in->extra_client_s / in->client_cores : INFINITY;
    return idle > fmax(extra_net, extra_client);
}

unsigned sophon__control_ring(double longest_cpu_s, double osd_cores, double batch_bytes,
                              double rate_Bps, unsigned dflt, unsigned most)
{
    unsigned want = dflt;
    if (longest_cpu_s > 0 && osd_cores > 0 && batch_bytes > 0 && rate_Bps > 0) {
        double run_s = 2 * longest_cpu_s / fmin(osd_cores, 1.0);
        double n = 1 + ceil(run_s / (batch_bytes / rate_Bps));
        if (n > dflt)
            want = n < (double)most ? (unsigned)n : most;
    }
    return want < most ? want : most;
}

int sophon__keep_placement(double prev_s, double best_s, double static_s)
{
    if (!isfinite(prev_s) || !(best_s > 0))
        return 0;
    return prev_s <= best_s * (1 + SOPHON__KEEP_MARGIN) && prev_s <= static_s;
}

/* A candidate sophon__choose_lean can weigh: every figure finite. */
static int lean_candidate(const double *t, const double *net, const double *osd, int i)
{
    return isfinite(t[i]) && isfinite(net[i]) && isfinite(osd[i]);
}

int sophon__choose_lean(const double *t, const double *net, const double *osd, int k,
                        double static_s)
{
    int best = -1;
    for (int i = 0; i < k; i++)
        if (lean_candidate(t, net, osd, i) && (best < 0 || t[i] < t[best]))
            best = i;
    if (best < 0)
        return -1;
    double limit = fmin(t[best] * (1 + SOPHON__LEAN_MARGIN), fmax(static_s, t[best]));
    for (int i = 0; i < k; i++) {
        if (!lean_candidate(t, net, osd, i) || t[i] > limit)
            continue;
        if (net[i] <= net[best] && osd[i] <= osd[best] && net[i] + osd[i] < net[best] + osd[best])
            best = i;
    }
    return best;
}
