/*
 * test_loader_options.c - libsophon's versioned structs (client/loader_versions.c): options of
 * every known version accepted with that version's meaning, newer ones refused, a real 0 kept,
 * the budget sentinel resolved; statistics copied by version. No cluster needed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpus.h"
#include "estimate.h"
#include "loader_versions.h"

/* The threads a loader starts by default: one per CPU this process may use (cpus.h). */
static unsigned usable(void)
{
    double n = ceil(sophon__cpus_available());
    return n >= 1 ? (unsigned)(n < 256 ? n : 256) : 1;
}

/* NULL and the INIT macro: the documented defaults, the sentinels resolved. */
static void test_defaults(void **state)
{
    struct sophon_loader_options init = SOPHON_LOADER_OPTIONS_INIT, o;

    (void)state;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sophon__loader_options_resolve(&o, k == 0 ? NULL : &init), 0);
        assert_int_equal(o.version, SOPHON_LOADER_OPTIONS_VERSION);
        assert_null(o.policy);
        assert_int_equal(o.format, SOPHON_SAMPLE_U8);
        assert_int_equal(o.batch_size, 32);
        assert_int_equal(o.rank, 0);
        assert_int_equal(o.world, 1);
        assert_int_equal(o.window, 0); /* chosen per epoch */
        assert_int_equal(o.threads, usable());
        assert_true(o.bandwidth_Bps == 1e9 / 8);
        assert_true(o.storage_cores == 4);
        assert_true(o.client_cores == fmin(o.threads, sophon__cpus_available()));
        assert_int_equal(o.retries, 4);
        assert_int_equal(o.backoff_ms, 100);
        assert_int_equal(o.op_timeout_s, 30);
        assert_int_equal(o.no_adapt, 0);
        assert_int_equal(o.transform, SOPHON_TRANSFORM_TRAIN);
        assert_int_equal(o.size, 224);
        assert_int_equal(o.resize, 256);
        assert_true(o.scale[0] == 0.08 && o.scale[1] == 1.0);
        assert_true(o.ratio[0] == 3.0 / 4.0 && o.ratio[1] == 4.0 / 3.0);
        assert_true(o.mean[0] == 0.485f && o.mean[1] == 0.456f && o.mean[2] == 0.406f);
        assert_true(o.std[0] == 0.229f && o.std[1] == 0.224f && o.std[2] == 0.225f);
    }
}

/* Version 2: 0 means 0 wherever 0 is a meaningful value. */
static void test_real_zero(void **state)
{
    struct sophon_loader_options in = SOPHON_LOADER_OPTIONS_INIT, o;

    (void)state;
    in.retries = 0;
    in.backoff_ms = 0;
    in.op_timeout_s = 0;
    in.storage_cores = 0;
    in.client_cores = 0;
    in.threads = 3;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_int_equal(o.retries, 0);
    assert_int_equal(o.backoff_ms, 0);
    assert_int_equal(o.op_timeout_s, 0);
    assert_true(o.storage_cores == 0);
    assert_true(o.client_cores == 0);
    assert_int_equal(o.threads, 3);
    /* Given budgets are kept as given; the measured client cores are the threads on the CPU the
     * process may use. */
    in.bandwidth_Bps = 12.5e6;
    in.storage_cores = INFINITY;
    in.client_cores = SOPHON_BUDGET_MEASURE;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_true(o.bandwidth_Bps == 12.5e6);
    assert_true(isinf(o.storage_cores));
    assert_true(o.client_cores == fmin(3, sophon__cpus_available()));
}

/* Writes text into root/rel/file, making the directories. */
static void put(const char *root, const char *rel, const char *file, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "mkdir -p '%s%s'", root, rel);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof(path), "%s%s/%s", root, rel, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* The cgroup quota as v1's cpu controller and v2's cpu.max give it, the tightest of a cgroup
 * and its parents, none where nothing limits. */
static void test_cgroup_quota(void **state)
{
    char root[] = "/tmp/sophon-cgroup-XXXXXX", cg[600];
    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(cg, sizeof(cg), "%s/proc-cgroup", root);

    /* v1: the job's cgroup allows half a core, its parent two. */
    put(root, "", "proc-cgroup", "4:memory:/x\n2:cpu,cpuacct:/jobs/a\n0::/\n");
    put(root, "/cpu/jobs", "cpu.cfs_quota_us", "200000\n");
    put(root, "/cpu/jobs", "cpu.cfs_period_us", "100000\n");
    put(root, "/cpu/jobs/a", "cpu.cfs_quota_us", "50000\n");
    put(root, "/cpu/jobs/a", "cpu.cfs_period_us", "100000\n");
    assert_true(sophon__cgroup_cpu_quota(cg, root) == 0.5);
    put(root, "/cpu/jobs/a", "cpu.cfs_quota_us", "-1\n");
    assert_true(sophon__cgroup_cpu_quota(cg, root) == 2.0);

    /* v2: 1.5 cores, under a parent without a limit. */
    put(root, "", "proc-cgroup", "0::/svc/b\n");
    put(root, "/svc", "cpu.max", "max 100000\n");
    put(root, "/svc/b", "cpu.max", "150000 100000\n");
    assert_true(sophon__cgroup_cpu_quota(cg, root) == 1.5);
    put(root, "/svc/b", "cpu.max", "max 100000\n");
    assert_true(isinf(sophon__cgroup_cpu_quota(cg, root)));

    /* Nothing to read: no limit. */
    snprintf(cg, sizeof(cg), "%s/none", root);
    assert_true(isinf(sophon__cgroup_cpu_quota(cg, root)));
    assert_true(sophon__cpus_available() > 0);
    snprintf(cg, sizeof(cg), "rm -rf '%s'", root);
    assert_int_equal(system(cg), 0);
}

/* Two threads named as librados's messenger names its own, each burning CPU and then holding. */
struct burner {
    pthread_barrier_t *hold;
    uint64_t ns;  /* its own CPU when it started holding */
    double spent; /* what it computed, kept so that the loop is not optimized away */
};

static uint64_t own_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *burn(void *arg)
{
    struct burner *b = arg;
    double x = 0;
    pthread_setname_np(pthread_self(), "test-burn-w");
    while (own_cpu_ns() < 30000000u)
        for (int i = 0; i < 100000; i++)
            x += i * 1e-9;
    b->spent = x;
    b->ns = own_cpu_ns();
    pthread_barrier_wait(b->hold); /* burnt */
    pthread_barrier_wait(b->hold); /* measured */
    return NULL;
}

/* sophon__threads_cpu_ns: the CPU of the threads of that name, nanoseconds, and none of others'. */
static void test_threads_cpu(void **state)
{
    (void)state;
    pthread_barrier_t hold;
    pthread_t t[2];
    struct burner b[2];
    uint64_t ns, none;
    assert_int_equal(pthread_barrier_init(&hold, NULL, 3), 0);
    for (int k = 0; k < 2; k++) {
        b[k].hold = &hold;
        assert_int_equal(pthread_create(&t[k], NULL, burn, &b[k]), 0);
    }
    pthread_barrier_wait(&hold);
    assert_int_equal(sophon__threads_cpu_ns("test-burn-", &ns), 0);
    assert_int_equal(sophon__threads_cpu_ns("no-such-thread-", &none), 0);
    pthread_barrier_wait(&hold);
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_join(t[k], NULL), 0);
    pthread_barrier_destroy(&hold);
    /* At least what they had burnt, and not much more (a second: valgrind serializes them). */
    assert_true(ns >= b[0].ns + b[1].ns);
    assert_true(ns < b[0].ns + b[1].ns + 1000000000u);
    assert_true(none == 0);
    /* Ended threads no longer count. */
    assert_int_equal(sophon__threads_cpu_ns("test-burn-", &ns), 0);
    assert_true(ns == 0);
}

/* A 0 where 0 means nothing is refused, not silently replaced; so is any value out of range. */
#define REFUSED(change)                                                                            \
    do {                                                                                           \
        struct sophon_loader_options in = SOPHON_LOADER_OPTIONS_INIT, o;                           \
        change;                                                                                    \
        if (sophon__loader_options_resolve(&o, &in) != -EINVAL)                                    \
            fail_msg("not refused: %s", #change);                                                  \
    } while (0)

static void test_refused(void **state)
{
    struct sophon_loader_options good = SOPHON_LOADER_OPTIONS_INIT, got;

    (void)state;
    REFUSED(in.transform = 2);
    REFUSED(in.size = 0);
    REFUSED(in.size = 8193);
    REFUSED(in.resize = 0);
    REFUSED(in.resize = 65537);
    REFUSED(in.transform = SOPHON_TRANSFORM_VAL; in.size = 257); /* torchvision would pad */
    REFUSED(in.scale[0] = 0);
    REFUSED(in.scale[0] = 0.5; in.scale[1] = 0.4);
    REFUSED(in.scale[1] = INFINITY);
    REFUSED(in.ratio[0] = -1);
    REFUSED(in.ratio[1] = NAN);
    REFUSED(in.mean[1] = NAN);
    REFUSED(in.std[2] = 0);
    REFUSED(in.std[0] = INFINITY);
    REFUSED(in.batch_size = 0);
    REFUSED(in.batch_size = 65537);
    REFUSED(in.window = 4097);
    REFUSED(in.world = 0);
    REFUSED((in.rank = 2, in.world = 2));
    REFUSED(in.threads = 257);
    REFUSED(in.format = 2);
    REFUSED(in.policy = "fastest");
    REFUSED(in.bandwidth_Bps = 0);
    REFUSED(in.bandwidth_Bps = INFINITY);
    REFUSED(in.bandwidth_Bps = -2);
    REFUSED(in.storage_cores = -2);
    REFUSED(in.storage_cores = NAN);
    REFUSED(in.client_cores = -0.5);
    /* And what is in range passes. */
    good.policy = "oracle";
    good.rank = 1;
    good.world = 2;
    assert_int_equal(sophon__loader_options_resolve(&got, &good), 0);
}

/* libgit2's rule: older versions accepted with their meaning, newer ones refused. */
/* Resolves the first `size` bytes of *init as a caller built against options `version` passes
 * them: a copy of just that much in memory of its own, so that ASan and valgrind see any read
 * past it. */
static int resolve_older(struct sophon_loader_options *out, struct sophon_loader_options *init,
                         unsigned version, size_t size)
{
    unsigned char *old = malloc(size);
    assert_non_null(old);
    init->version = version;
    memcpy(old, init, size);
    int r = sophon__loader_options_resolve(out, (const void *)old);
    free(old);
    return r;
}

static void trace_nothing(void *arg, const struct sophon_sample_trace *t)
{
    (void)arg;
    (void)t;
}

static void test_versions(void **state)
{
    struct sophon_loader_options in, o;

    (void)state;
    /* A version 1 caller: its zeros were defaults. */
    memset(&in, 0, sizeof(in));
    in.version = 1;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_int_equal(o.version, SOPHON_LOADER_OPTIONS_VERSION);
    assert_int_equal(o.batch_size, 32);
    assert_int_equal(o.world, 1);
    assert_int_equal(o.window, 0); /* its 0, the default: chosen per epoch */
    assert_int_equal(o.threads, usable());
    assert_int_equal(o.retries, 4);
    assert_int_equal(o.backoff_ms, 100);
    assert_int_equal(o.op_timeout_s, 30);
    assert_true(o.bandwidth_Bps == 1e9 / 8);
    assert_true(o.storage_cores == 4);
    assert_true(o.client_cores == fmin(o.threads, sophon__cpus_available()));
    /* What it did set is kept. */
    in.retries = 2;
    in.storage_cores = 1.5;
    in.format = SOPHON_SAMPLE_F32;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_int_equal(o.retries, 2);
    assert_true(o.storage_cores == 1.5);
    assert_int_equal(o.format, SOPHON_SAMPLE_F32);

    /* A version 2 caller's struct ends before the transform: only that much is read (ASan and
     * valgrind would see a read past it), and the transform gets its defaults. */
    struct sophon_loader_options init = SOPHON_LOADER_OPTIONS_INIT;
    init.retries = 0;
    assert_int_equal(resolve_older(&o, &init, 2, offsetof(struct sophon_loader_options, transform)),
                     0);
    assert_int_equal(o.retries, 0);
    assert_int_equal(o.transform, SOPHON_TRANSFORM_TRAIN);
    assert_int_equal(o.size, 224);
    assert_true(o.std[2] == 0.225f);
    /* A version 3 caller's struct ends before the stages: every stage. */
    init = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    assert_int_equal(resolve_older(&o, &init, 3, offsetof(struct sophon_loader_options, stages)),
                     0);
    assert_null(o.stages);
    /* A version 4 caller's struct ends before prefetch: the default (0, the window's). */
    init.stages = "stored,u8";
    assert_int_equal(resolve_older(&o, &init, 4, offsetof(struct sophon_loader_options, prefetch)),
                     0);
    assert_string_equal(o.stages, "stored,u8");
    assert_int_equal(o.prefetch, 0);
    /* A version 5 caller's struct ends before nspace: NULL, the namespace put recorded. */
    init.prefetch = 7;
    assert_int_equal(resolve_older(&o, &init, 5, offsetof(struct sophon_loader_options, nspace)),
                     0);
    assert_int_equal(o.prefetch, 7);
    assert_null(o.nspace);
    /* A version 6 caller's struct ends before the trace: none. */
    init.nspace = "train";
    assert_int_equal(resolve_older(&o, &init, 6, offsetof(struct sophon_loader_options, trace)), 0);
    assert_string_equal(o.nspace, "train");
    assert_null(o.trace);
    assert_null(o.trace_arg);
    in = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    assert_null(in.trace);
    in.trace = trace_nothing;
    in.trace_arg = &in;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_ptr_equal(o.trace, trace_nothing);
    assert_ptr_equal(o.trace_arg, &in);
    in = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    in.nspace = "train";
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_string_equal(o.nspace, "train");
    in = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    in.prefetch = 12;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_int_equal(o.prefetch, 12);
    in.prefetch = 65537;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), -EINVAL);
    in = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    in.stages = "stored,crop";
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    in.stages = "stored,png";
    assert_int_equal(sophon__loader_options_resolve(&o, &in), -EINVAL);
    in.stages = "";
    assert_int_equal(sophon__loader_options_resolve(&o, &in), -EINVAL);
    /* Version 3's own fields are read. */
    in = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    in.transform = SOPHON_TRANSFORM_VAL;
    in.size = 160;
    in.resize = 182;
    in.mean[0] = 0.5f;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), 0);
    assert_int_equal(o.transform, SOPHON_TRANSFORM_VAL);
    assert_int_equal(o.size, 160);
    assert_int_equal(o.resize, 182);
    assert_true(o.mean[0] == 0.5f);

    in = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    in.version = SOPHON_LOADER_OPTIONS_VERSION + 1;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), -EINVAL);
    in.version = 0;
    assert_int_equal(sophon__loader_options_resolve(&o, &in), -EINVAL);
    assert_int_equal(sophon__loader_options_resolve(NULL, NULL), -EINVAL);
}

static void test_stats_versions(void **state)
{
    struct sophon_loader_stats src, out;

    (void)state;
    memset(&src, 0, sizeof(src));
    src.version = 77;
    src.samples = 1234;
    src.bytes_by_stage[SOPHON_LOADER_STAGE_F32] = 99;
    out = (struct sophon_loader_stats)SOPHON_LOADER_STATS_INIT;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.version, SOPHON_LOADER_STATS_VERSION);
    assert_int_equal(out.samples, 1234);
    assert_int_equal(out.bytes_by_stage[SOPHON_LOADER_STAGE_F32], 99);
    /* A caller built against version 1 gets nothing past its struct's end (declined). */
    src.declined = 5;
    memset(&out, 0xab, sizeof(out));
    out.version = 1;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.samples, 1234);
    assert_int_equal(out.declined, 0xababababababababull);
    out.version = 2;
    src.crop_samples = 7;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.declined, 5);
    assert_int_equal(out.crop_samples, 0xababababababababull); /* version 3's */
    out.version = 3;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.crop_samples, 7);
    /* Version 5 stops before ahead (version 6's). */
    src.ahead = 11;
    memset(&out, 0xab, sizeof(out));
    out.version = 5;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.ahead, 0xababababababababull);
    out.version = 6;
    src.crop_work = 1.25;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.ahead, 11);
    assert_true(out.crop_work != 1.25); /* version 7's */
    out.version = 7;
    src.window = 83;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_true(out.crop_work == 1.25);
    assert_int_equal(out.window, 0xababababu); /* version 8's */
    out.version = 8;
    src.client_msgr_ns = 29;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.window, 83);
    assert_int_equal(out.client_msgr_ns, 0xababababababababull); /* version 9's */
    out.version = 9;
    src.crop_speed_measured = 2;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.client_msgr_ns, 29);
    assert_int_equal(out.crop_speed_measured, (int)0xababababu); /* version 10's */
    out.version = 10;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), 0);
    assert_int_equal(out.crop_speed_measured, 2);
    out.version = SOPHON_LOADER_STATS_VERSION + 1;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), -EINVAL);
    out.version = 0;
    assert_int_equal(sophon__loader_stats_copy(&out, &src), -EINVAL);
}

/* The link's rate from a trace of reads (estimate.h). */
static void test_rate_estimate(void **state)
{
    struct sophon__xfer x[64];
    (void)state;
    /* 12.5 MB/s (100 Mbit/s): reads of 200 KB complete every 16 ms after a first one that took
     * the requests' latency and slow start (0.3 s). */
    for (int i = 0; i < 64; i++)
        x[i] = (struct sophon__xfer){0.3 + 0.016 * i, 200000};
    double r = sophon__rate_estimate(x, 64);
    assert_true(fabs(r - 12.5e6) < 1e3);
    /* Reads of other sizes, each completing when its bytes have crossed the busy link. */
    double t = 0.3;
    for (int i = 0; i < 64; i++) {
        x[i].bytes = 50000 + 37000 * (uint64_t)(i % 7);
        if (i > 0)
            t += (double)x[i].bytes / 12.5e6;
        x[i].t = t;
    }
    r = sophon__rate_estimate(x, 64);
    assert_true(fabs(r - 12.5e6) < 1e3);
    /* Three connections sharing the link, each sending its responses of 1 MB in turn: they
     * complete three at a time, every 3 MB of the link. The first completion's bytes are not
     * all that crossed before it (the other two connections' first reads did too): counting
     * every read after the first from it read 1.17x the link with five reads a connection. */
    for (int k = 0; k < 5; k++)
        for (int c = 0; c < 3; c++)
            x[3 * k + c] = (struct sophon__xfer){0.05 + 3e6 * (k + 1) / 12.5e6, 1000000};
    r = sophon__rate_estimate(x, 15);
    assert_true(fabs(r - 12.5e6) < 1e3);
    /* Too few reads, or no time between the first completion and the last: cannot tell. */
    assert_true(sophon__rate_estimate(x, 2) == 0);
    assert_true(sophon__rate_estimate(NULL, 10) == 0);
    for (int i = 0; i < 5; i++)
        x[i].t = 1.0;
    assert_true(sophon__rate_estimate(x, 5) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),       cmocka_unit_test(test_real_zero),
        cmocka_unit_test(test_refused),        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_stats_versions), cmocka_unit_test(test_cgroup_quota),
        cmocka_unit_test(test_rate_estimate),  cmocka_unit_test(test_threads_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
