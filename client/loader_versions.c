/*
 * loader_versions.c - the loader's options and statistics under libgit2's version rule
 * (loader_versions.h, sophon.h).
 */
#include "loader_versions.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpus.h"
#include "prep.h"
#include "selector.h"

/* What SOPHON_BUDGET_MEASURE stands for until the loader measures budgets: sophon plan's
 * defaults (client cores: the worker threads). */
#define MEASURE_BANDWIDTH_BPS (1e9 / 8)
#define MEASURE_STORAGE_CORES 4.0

/*
 * Bytes of the options struct each version has, for a caller built against an older sophon.h:
 * only those are read. Versions 1 and 2 have the same fields and differ in what a 0 means;
 * version 3 appended the transform's.
 */
#define OPTIONS_V2_SIZE offsetof(struct sophon_loader_options, transform)
static const size_t options_size[SOPHON_LOADER_OPTIONS_VERSION + 1] = {
    [1] = OPTIONS_V2_SIZE,
    [2] = OPTIONS_V2_SIZE,
    [3] = offsetof(struct sophon_loader_options, stages),
    [4] = offsetof(struct sophon_loader_options, prefetch),
    [5] = offsetof(struct sophon_loader_options, nspace),
    [6] = offsetof(struct sophon_loader_options, trace),
    [7] = sizeof(struct sophon_loader_options),
};

/* And of the stats struct each version has. */
static const size_t stats_size[SOPHON_LOADER_STATS_VERSION + 1] = {
    [1] = offsetof(struct sophon_loader_stats, declined),
    [2] = offsetof(struct sophon_loader_stats, crop_bytes),
    [3] = offsetof(struct sophon_loader_stats, demoted),
    [4] = offsetof(struct sophon_loader_stats, osd_op_s),
    [5] = offsetof(struct sophon_loader_stats, ahead),
    [6] = offsetof(struct sophon_loader_stats, crop_work),
    [7] = offsetof(struct sophon_loader_stats, window),
    [8] = offsetof(struct sophon_loader_stats, client_byte_s),
    [9] = offsetof(struct sophon_loader_stats, crop_speed),
    [10] = sizeof(struct sophon_loader_stats),
};

/* Version 1: every field left at 0 took its default. */
static void version1_zeros(struct sophon_loader_options *o,
                           const struct sophon_loader_options *defaults)
{
    if (o->batch_size == 0)
        o->batch_size = defaults->batch_size;
    if (o->world == 0)
        o->world = defaults->world;
    if (o->bandwidth_Bps == 0)
        o->bandwidth_Bps = SOPHON_BUDGET_MEASURE;
    if (o->storage_cores == 0)
        o->storage_cores = SOPHON_BUDGET_MEASURE;
    if (o->client_cores == 0)
        o->client_cores = SOPHON_BUDGET_MEASURE;
    if (o->retries == 0)
        o->retries = defaults->retries;
    if (o->backoff_ms == 0)
        o->backoff_ms = defaults->backoff_ms;
    if (o->op_timeout_s == 0)
        o->op_timeout_s = defaults->op_timeout_s;
}

/* The worker threads that the CPU this process may use keeps busy (cpus.h): at least 1, at most
 * 256. */
static unsigned usable_cpus(double cpus)
{
    double n = ceil(cpus);
    return n >= 1 ? (unsigned)(n < 256 ? n : 256) : 1;
}

/* A budget of cores: finite or infinite, >= 0 (0 is no core at all). */
static int cores_ok(double v)
{
    return v >= 0 && !isnan(v);
}

/* A range of RandomResizedCrop: finite, positive, in order. */
static int range_ok(const double r[2])
{
    return r[0] > 0 && r[0] <= r[1] && isfinite(r[1]);
}

/* The transform and its parameters (version 3's fields). */
static int transform_ok(const struct sophon_loader_options *o)
{
    if (o->transform != SOPHON_TRANSFORM_TRAIN && o->transform != SOPHON_TRANSFORM_VAL)
        return 0;
    if (o->size == 0 || o->size > SOPHON_MAX_SIDE || o->resize == 0 ||
        o->resize > SOPHON_MAX_RESIZE_SIDE)
        return 0;
    /* torchvision pads a centre crop larger than the resized image: not supported. */
    if (o->transform == SOPHON_TRANSFORM_VAL && o->resize < o->size)
        return 0;
    if (!range_ok(o->scale) || !range_ok(o->ratio))
        return 0;
    for (int c = 0; c < 3; c++)
        if (!isfinite(o->mean[c]) || !isfinite(o->std[c]) || o->std[c] == 0.0f)
            return 0;
    return 1;
}

int sophon__loader_options_resolve(struct sophon_loader_options *out,
                                   const struct sophon_loader_options *in)
{
    static const struct sophon_loader_options defaults = SOPHON_LOADER_OPTIONS_INIT;
    struct sophon_loader_options o = defaults;

    if (out == NULL)
        return -EINVAL;
    if (in == NULL)
        in = &defaults;
    if (in->version == 0 || in->version > SOPHON_LOADER_OPTIONS_VERSION)
        return -EINVAL;
    memcpy(&o, in, options_size[in->version]);
    if (in->version == 1)
        version1_zeros(&o, &defaults);
    o.version = SOPHON_LOADER_OPTIONS_VERSION;

    double cpus = sophon__cpus_available();
    if (o.threads == 0)
        o.threads = usable_cpus(cpus);
    if (o.bandwidth_Bps == SOPHON_BUDGET_MEASURE)
        o.bandwidth_Bps = MEASURE_BANDWIDTH_BPS;
    if (o.storage_cores == SOPHON_BUDGET_MEASURE)
        o.storage_cores = MEASURE_STORAGE_CORES;
    /* The client's budget as measured: its workers, on the CPU it may use. */
    if (o.client_cores == SOPHON_BUDGET_MEASURE)
        o.client_cores = fmin(o.threads, cpus);

    if (o.world == 0 || o.rank >= o.world ||
        (o.policy != NULL && sophon_policy_from_name(o.policy) < 0) ||
        (o.format != SOPHON_SAMPLE_U8 && o.format != SOPHON_SAMPLE_F32) || o.batch_size == 0 ||
        o.batch_size > 65536 || o.window > 4096 || o.threads > 256 || o.prefetch > 65536 ||
        !(o.bandwidth_Bps > 0) || !isfinite(o.bandwidth_Bps) || !cores_ok(o.storage_cores) ||
        !cores_ok(o.client_cores) || !transform_ok(&o))
        return -EINVAL;
    unsigned stages;
    if (o.stages != NULL && sophon_stages_parse(&stages, o.stages, NULL, 0) < 0)
        return -EINVAL;
    *out = o;
    return 0;
}

int sophon__loader_stats_copy(struct sophon_loader_stats *out,
                              const struct sophon_loader_stats *src)
{
    unsigned version;

    if (out == NULL || src == NULL || out->version == 0 ||
        out->version > SOPHON_LOADER_STATS_VERSION)
        return -EINVAL;
    version = out->version;
    memcpy(out, src, stats_size[version]);
    out->version = version;
    return 0;
}
