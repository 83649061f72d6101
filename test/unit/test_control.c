/*
 * test_control.c - the loader's within-epoch controller (client/control.c): its predictions,
 * its decisions, and on synthetic traces of an epoch (a link read in order, OSDs that share their
 * cores among the preparations in flight, a ring of batches) that it shortens the epoch where the
 * OSDs are short of CPU, leaves the plan alone where they are not, and does not oscillate.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control.h"

#define RATE (12.5e6) /* 100 Mbit/s */

static struct sophon__control_in base(void)
{
    struct sophon__control_in in = {
        .rate_Bps = RATE,
        .osd_cores = 0.5,
        .client_cores = 1,
        .own_cpu_s = 0.1,
        .planned_bytes = 150000,
        .stored_bytes = 400000,
        .extra_client_s = 0.005,
    };
    return in;
}

static void test_latency(void **state)
{
    (void)state;
    struct sophon__control_in in = base();
    /* Alone on half a core: twice its CPU. */
    assert_float_equal(sophon__control_latency(&in), 0.2, 1e-12);
    /* With two in flight, one shorter (counted whole), one longer (counted as long as this). */
    double others[] = {0.05, 1.0};
    in.inflight_cpu_s = others;
    in.ninflight = 2;
    assert_float_equal(sophon__control_latency(&in), (0.1 + 0.05 + 0.1) / 0.5, 1e-12);
    /* Four cores: one thread still gets at most one of them. */
    in.osd_cores = 4;
    assert_float_equal(sophon__control_latency(&in), 0.1, 1e-12);
    in.osd_cores = 0;
    assert_true(isinf(sophon__control_latency(&in)));
}

static void test_demote(void **state)
{
    (void)state;
    struct sophon__control_in in = base();
    /* 0.2 s of latency against 0.5 s of link in flight and in the ring: the link never waits. */
    in.cover_bytes = (uint64_t)(0.5 * RATE);
    assert_false(sophon__control_demote(&in));
    /* 0.15 s of it: it would wait 0.05 s, longer than the stored read's 0.02 s of extra bytes. */
    in.cover_bytes = (uint64_t)(0.15 * RATE);
    assert_true(sophon__control_demote(&in));
    /* An object of 16 MB: reading it costs more link (1.3 s) than the wait saves. */
    in.stored_bytes = 16000000;
    assert_false(sophon__control_demote(&in));
    in.stored_bytes = 400000;
    /* Its decode here would take longer than the wait (0.06 s on one core)... */
    in.extra_client_s = 0.06;
    assert_false(sophon__control_demote(&in));
    /* ... and with no client cores to spare, never. */
    in.extra_client_s = 0.005;
    in.client_cores = 0;
    assert_false(sophon__control_demote(&in));
    in.client_cores = 1;
    /* Nothing to judge by: kept as planned. */
    in.rate_Bps = 0;
    assert_false(sophon__control_demote(&in));
    in.rate_Bps = RATE;
    in.osd_cores = 0;
    assert_false(sophon__control_demote(&in));
}

static void test_ring(void **state)
{
    (void)state;
    /* Batches of 1.25 MB take 0.1 s of link. A 0.02 s preparation on 0.5 cores needs 0.08 s:
     * the default ring covers it. */
    assert_int_equal(sophon__control_ring(0.02, 0.5, 1.25e6, RATE, 3, 100), 3);
    /* 0.2 s of CPU at 0.15 cores runs 1.33 s alone, 2.67 s with the margin: 27 batches and
     * the one being filled. */
    assert_int_equal(sophon__control_ring(0.2, 0.15, 1.25e6, RATE, 3, 100), 28);
    /* More cores than one: a thread still runs on one. */
    assert_int_equal(sophon__control_ring(0.2, 4, 1.25e6, RATE, 3, 100), 5);
    /* Memory caps it; nothing to judge by leaves the default. */
    assert_int_equal(sophon__control_ring(0.2, 0.15, 1.25e6, RATE, 3, 10), 10);
    assert_int_equal(sophon__control_ring(0, 0.15, 1.25e6, RATE, 3, 100), 3);
    assert_int_equal(sophon__control_ring(0.2, 0.15, 1.25e6, 0, 3, 100), 3);
}

static void test_window(void **state)
{
    (void)state;
    /* 100 Mbit/s of 50 KB reads: 0.3 s of link is 75 of them, and 8 places ahead. */
    assert_int_equal(sophon__control_window(12.5e6, 50e3), 83);
    /* Half the rate, half the reads; a slow link or big objects never go below 32. */
    assert_int_equal(sophon__control_window(6.25e6, 50e3), 46);
    assert_int_equal(sophon__control_window(12.5e6, 1e6), SOPHON__WINDOW_MIN);
    /* A fast link of small objects stops at the most. */
    assert_int_equal(sophon__control_window(62.5e6, 50e3), SOPHON__WINDOW_MAX);
    assert_int_equal(sophon__control_window(1e12, 1), SOPHON__WINDOW_MAX);
    /* Nothing to go by: the least. */
    assert_int_equal(sophon__control_window(0, 50e3), SOPHON__WINDOW_MIN);
    assert_int_equal(sophon__control_window(12.5e6, 0), SOPHON__WINDOW_MIN);
    assert_int_equal(sophon__control_window(NAN, 50e3), SOPHON__WINDOW_MIN);
    assert_int_equal(sophon__control_window(INFINITY, 50e3), SOPHON__WINDOW_MIN);
    /* The in-order pass keeps the reads asked for: the window less its places ahead. */
    unsigned w = sophon__control_window(12.5e6, 50e3);
    assert_true(w - sophon__ahead_places(w) >= 75);
}

/* ---- synthetic traces ------------------------------------------------------------------------ */

#define N      600
#define BATCH  32
#define RING   3 /* batches */
#define WINDOW 32
#define DT     0.0005

struct sim {
    double cores; /* the OSDs' */
    double cpu_s; /* each preparation's OSD CPU */
    int every;    /* every every-th sample is planned in the OSD */
    int control;  /* the controller decides, or the plan is taken as made */
    double scale; /* the OSDs' true CPU over what the controller is told */
    /* Results. */
    double epoch_s;
    int demoted, quarter[4], most_inflight;
};

/* One epoch in steps of DT: the loader issues in order within the window and the ring, the OSDs
 * share their cores among the preparations in flight (one core at most each), the link carries
 * the answers in the order they became ready, and the consumer takes each batch when whole. */
static void run(struct sim *sm)
{
    static double osd_left[N], link_left[N];
    static int offload[N], issued[N], done[N];
    size_t next = 0, head = 0;
    int inflight = 0, osd_n = 0;
    double t = 0;
    memset(issued, 0, sizeof(issued));
    memset(done, 0, sizeof(done));
    memset(sm->quarter, 0, sizeof(sm->quarter));
    sm->demoted = sm->most_inflight = 0;
    while (head < N && t < 100) {
        /* Issue. */
        while (next < N && inflight < WINDOW && next / BATCH < head / BATCH + RING) {
            size_t p = next++;
            offload[p] = sm->every > 0 && p % (size_t)sm->every == 0;
            if (offload[p] && sm->control) {
                double cpus[WINDOW];
                size_t k = 0;
                uint64_t cover = 0;
                for (size_t q = head; q < p; q++) {
                    if (issued[q] && !done[q]) {
                        cover += offload[q] ? 150000 : 100000;
                        if (offload[q] && osd_left[q] > 0)
                            cpus[k++] = sm->cpu_s / sm->scale;
                    }
                }
                size_t end = (p / BATCH + RING) * BATCH;
                for (size_t q = p + 1; q < end && q < N; q++)
                    cover += (sm->every > 0 && q % (size_t)sm->every == 0) ? 150000 : 100000;
                struct sophon__control_in in = {
                    .rate_Bps = RATE,
                    .osd_cores = sm->cores,
                    .client_cores = 1,
                    .own_cpu_s = sm->cpu_s / sm->scale,
                    .inflight_cpu_s = cpus,
                    .ninflight = k,
                    .cover_bytes = cover,
                    .planned_bytes = 150000,
                    .stored_bytes = 300000,
                    .extra_client_s = 0.004,
                };
                if (sophon__control_demote(&in)) {
                    offload[p] = 0;
                    sm->demoted++;
                    sm->quarter[p * 4 / N]++;
                }
            }
            issued[p] = 1;
            osd_left[p] = offload[p] ? sm->cpu_s : 0;
            link_left[p] = offload[p] ? 150000 : 300000;
            if (!offload[p] && sm->every > 0 && p % (size_t)sm->every != 0)
                link_left[p] = 100000;
            inflight++;
        }
        /* The OSDs: processor sharing. */
        osd_n = 0;
        for (size_t q = head; q < next; q++)
            osd_n += issued[q] && osd_left[q] > 0;
        if (osd_n > sm->most_inflight)
            sm->most_inflight = osd_n;
        double share = fmin(1.0, sm->cores / (osd_n > 0 ? osd_n : 1)) * DT;
        for (size_t q = head; q < next; q++)
            if (osd_left[q] > 0)
                osd_left[q] -= share;
        /* The link: the oldest ready answer first. */
        double bytes = RATE * DT;
        for (size_t q = head; q < next && bytes > 0; q++) {
            if (done[q] || osd_left[q] > 0)
                continue;
            double b = fmin(bytes, link_left[q]);
            link_left[q] -= b;
            bytes -= b;
            if (link_left[q] <= 0) {
                done[q] = 1;
                inflight--;
            }
        }
        /* The consumer: whole batches, in order. */
        while (head < N) {
            size_t end = head / BATCH * BATCH + BATCH;
            if (end > N)
                end = N;
            size_t q = head;
            while (q < end && done[q])
                q++;
            if (q < end)
                break;
            head = end;
        }
        t += DT;
    }
    sm->epoch_s = t;
}

/* The same epoch (every 4th sample planned in the OSD at 40 ms) on `cores`, as planned and
 * controlled, the controller told the CPU over `scale`. */
static void run_both(struct sim *plan, struct sim *ctl, double cores, double scale)
{
    *plan = (struct sim){.cores = cores, .cpu_s = 0.04, .every = 4, .control = 0, .scale = 1};
    *ctl = *plan;
    ctl->control = 1;
    ctl->scale = scale;
    run(plan);
    run(ctl);
}

static void test_trace_short_of_cpu(void **state)
{
    (void)state;
    /* Every 4th sample planned in the OSD at 40 ms, on 0.1 cores: each takes 0.4 s alone while
     * the ring is 0.8 s of link; with 30 in flight they would take seconds. */
    struct sim plan, ctl;
    run_both(&plan, &ctl, 0.1, 1);
    print_message("short of CPU: as planned %.2f s, controlled %.2f s (%d demoted, at most %d "
                  "preparations at once against %d)\n",
                  plan.epoch_s, ctl.epoch_s, ctl.demoted, ctl.most_inflight, plan.most_inflight);
    assert_true(ctl.epoch_s < plan.epoch_s / 1.5);
    assert_true(ctl.demoted > 0 && ctl.demoted < N / 4);
    assert_true(ctl.most_inflight < plan.most_inflight);
    /* Steady: each quarter of the epoch demotes about as many as the others, no swings. */
    for (int i = 0; i < 4; i++)
        assert_true(abs(ctl.quarter[i] - ctl.demoted / 4) <= ctl.demoted / 4 / 2 + 3);
}

static void test_trace_enough_cpu(void **state)
{
    (void)state;
    /* The same plan on 2 cores: nothing to demote, the same epoch. */
    struct sim plan, ctl;
    run_both(&plan, &ctl, 2, 1);
    assert_int_equal(ctl.demoted, 0);
    assert_float_equal(ctl.epoch_s, plan.epoch_s, 1e-9);
}

static void test_trace_model_optimistic(void **state)
{
    (void)state;
    /* The controller told half the true CPU (a model that is optimistic) on 0.1 cores: it
     * still demotes, later, and the epoch is still shorter than the plan's. */
    struct sim plan, ctl;
    run_both(&plan, &ctl, 0.1, 2);
    print_message("optimistic model: as planned %.2f s, controlled %.2f s (%d demoted)\n",
                  plan.epoch_s, ctl.epoch_s, ctl.demoted);
    assert_true(ctl.demoted > 0);
    assert_true(ctl.epoch_s < plan.epoch_s);
}

/* The last epoch's placement stays within the margin of the best, never past a static policy's
 * epoch, and goes where it models longer or cannot be modelled. */
static void test_keep_placement(void **state)
{
    (void)state;
    assert_true(sophon__keep_placement(2.23, 2.77, 2.92));  /* better than every plan */
    assert_true(sophon__keep_placement(2.30, 2.20, 2.90));  /* 4.5% over the best */
    assert_false(sophon__keep_placement(2.40, 2.20, 2.90)); /* 9% over */
    assert_true(sophon__keep_placement(2.20 * (1 + SOPHON__KEEP_MARGIN), 2.20, 3.0));
    assert_false(sophon__keep_placement(2.30, 2.20, 2.25)); /* a static policy models shorter */
    assert_true(sophon__keep_placement(2.25, 2.20, 2.25));
    assert_false(sophon__keep_placement(INFINITY, 2.20, INFINITY));
    assert_false(sophon__keep_placement(NAN, 2.20, 3.0));
    assert_false(sophon__keep_placement(1.0, 0, 3.0));
    assert_true(sophon__keep_placement(1.0, 1.0, INFINITY)); /* no static policy could be made */
}

/* The shortest epoch's plan, or one within the margin and no longer than a static policy's that
 * takes no more of the link and the OSDs and less of the two together; never one that is not
 * finite. */
static void test_choose_lean(void **state)
{
    (void)state;
    /* The main job's photos at 500Mbit/0.1: the planner's 69 MB plan against none's 46.7 MB one
     * (no OSD time but plain reads), a tie in the model: none's is run. */
    double t1[] = {1.560, 1.564, 13.6}, n1[] = {1.16, 0.78, 0.73}, o1[] = {0.70, 0.02, 13.5};
    assert_int_equal(sophon__choose_lean(t1, n1, o1, 3, 1.564), 1);
    /* A trade, fewer bytes for more OSD time or the other way round, is not leaner. */
    double n1b[] = {1.16, 1.17, 0.73};
    assert_int_equal(sophon__choose_lean(t1, n1b, o1, 3, 1.564), 0);
    /* Past the margin the shortest stays, however lean the other. */
    double t2[] = {1.40, 1.50}, n2[] = {1.0, 0.5}, o2[] = {1.0, 0.3};
    assert_int_equal(sophon__choose_lean(t2, n2, o2, 2, 1.50), 0);
    assert_int_equal(sophon__choose_lean(t2, n2, o2, 2, INFINITY), 0);
    /* Within the margin, but a static policy models shorter than the leanest. */
    double t3[] = {1.000, 1.015, 1.010}, n3[] = {1.0, 0.5, 0.8}, o3[] = {1.0, 0.5, 0.7};
    assert_int_equal(sophon__choose_lean(t3, n3, o3, 3, 1.010), 2);
    assert_int_equal(sophon__choose_lean(t3, n3, o3, 3, 1.020), 1);
    /* The margin's edge is in; equal resources are no leaner: the lower index. */
    double t4[] = {1.0, 1.0 + SOPHON__LEAN_MARGIN}, n4[] = {1.0, 0.5}, o4[] = {1.0, 0.5};
    assert_int_equal(sophon__choose_lean(t4, n4, o4, 2, INFINITY), 1);
    double t5[] = {1.0, 1.0}, n5[] = {0.5, 0.5}, o5[] = {0.5, 0.5};
    assert_int_equal(sophon__choose_lean(t5, n5, o5, 2, INFINITY), 0);
    /* Not finite: never chosen, and -1 when nothing else is. */
    double t6[] = {INFINITY, 2.0, NAN}, n6[] = {0.1, 1.0, 0.1}, o6[] = {0.1, 1.0, 0.1};
    assert_int_equal(sophon__choose_lean(t6, n6, o6, 3, INFINITY), 1);
    double o7[] = {0.1, INFINITY, 0.1};
    assert_int_equal(sophon__choose_lean(t6, n6, o7, 3, INFINITY), -1);
    assert_int_equal(sophon__choose_lean(t6, n6, o6, 0, INFINITY), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency),
        cmocka_unit_test(test_demote),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_keep_placement),
        cmocka_unit_test(test_choose_lean),
        cmocka_unit_test(test_trace_short_of_cpu),
        cmocka_unit_test(test_trace_enough_cpu),
        cmocka_unit_test(test_trace_model_optimistic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
