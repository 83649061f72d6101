/*
 * test_simulate.c - the loader's epoch simulated (client/simulate.c): the cases that can be
 * worked out by hand (one resource alone, a two-stage pipeline, the link shared by connections,
 * processor sharing in the OSDs with the reads served before the preparations, a long
 * preparation holding up the ring, one issued ahead of its turn), and on random epochs that it is
 * never shorter than the busiest resource and never longer than all of them one after another.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "simulate.h"

#define RATE 12.5e6 /* 100 Mbit/s */

static struct sophon__sim_params params(void)
{
    return (struct sophon__sim_params){.rate_Bps = RATE,
                                       .osd_cores = 1,
                                       .client_cores = 1,
                                       .threads = 1,
                                       .batch = 4,
                                       .nbufs = 3,
                                       .window = 8};
}

static double sim(const struct sophon__sim_sample *s, size_t n, struct sophon__sim_params p)
{
    return sophon__sim_epoch(s, n, &p);
}

static void test_link_alone(void **state)
{
    (void)state;
    struct sophon__sim_sample s[10];
    for (int i = 0; i < 10; i++)
        s[i] = (struct sophon__sim_sample){.bytes = 125000};
    /* 10 x 10 ms on the link, whatever the window and the ring. */
    assert_float_equal(sim(s, 10, params()), 0.1, 1e-9);
    struct sophon__sim_params p = params();
    p.window = 1;
    p.nbufs = 1;
    assert_float_equal(sim(s, 10, p), 0.1, 1e-9);
}

static void test_pipeline(void **state)
{
    (void)state;
    /* Link and client both 10 ms a sample: the client starts one sample behind. */
    struct sophon__sim_sample s[20];
    for (int i = 0; i < 20; i++)
        s[i] = (struct sophon__sim_sample){.bytes = 125000, .client_s = 0.01};
    assert_float_equal(sim(s, 20, params()), 0.21, 1e-9);
    /* Two workers on one core: the same work, shared. */
    struct sophon__sim_params p = params();
    p.threads = 2;
    double two = sim(s, 20, p);
    assert_true(two >= 0.20 - 1e-9 && two <= 0.22);
    /* Two workers on two cores: the link binds. */
    p.client_cores = 2;
    assert_float_equal(sim(s, 20, p), 0.21, 1e-9);
}

static void test_connections(void **state)
{
    (void)state;
    /* A response of 1 s alone on the link on one connection, three of 0.1 s on another, each
     * sample 0.3 s of client CPU. */
    struct sophon__sim_sample s[4] = {{.bytes = RATE, .client_s = 0.3, .conn = 0}};
    for (int i = 1; i < 4; i++)
        s[i] = (struct sophon__sim_sample){.bytes = RATE / 10, .client_s = 0.3, .conn = 1};
    /* One connection: the small ones wait behind the large one (done at 1.0, 1.1, 1.2, 1.3 s),
     * the client takes them in that order from 1.0 s. */
    struct sophon__sim_params p = params();
    assert_float_equal(sim(s, 4, p), 2.2, 1e-9);
    p.conns = 1;
    assert_float_equal(sim(s, 4, p), 2.2, 1e-9);
    /* Two: they share the link, the small ones done at 0.2, 0.4 and 0.6 s and the large one, with
     * 0.3 s of its bytes across by then, at 1.3 s; the client busy from 0.2 to 1.1 s, then 1.3 to
     * 1.6 s. */
    p.conns = 2;
    assert_float_equal(sim(s, 4, p), 1.6, 1e-9);
    /* conn is taken modulo conns: 2 is connection 0 again. */
    s[0].conn = 2;
    assert_float_equal(sim(s, 4, p), 1.6, 1e-9);
    /* All on one connection of two: as one. */
    s[0].conn = 1;
    assert_float_equal(sim(s, 4, p), 2.2, 1e-9);
}

static void test_osd_sharing(void **state)
{
    (void)state;
    /* Four preparations of 1 s on 2 cores, issued at once: all done at 2 s, then 4 x 10 ms of
     * link. */
    struct sophon__sim_sample s[4];
    for (int i = 0; i < 4; i++)
        s[i] = (struct sophon__sim_sample){.bytes = 125000, .osd_s = 1, .ahead = 1};
    struct sophon__sim_params p = params();
    p.osd_cores = 2;
    assert_float_equal(sim(s, 4, p), 2.04, 1e-9);
    /* On 8 cores each still takes a whole second: one core at most each. */
    p.osd_cores = 8;
    assert_float_equal(sim(s, 4, p), 1.04, 1e-9);
    /* Two op threads on 8 cores: two at a time, in order. */
    p.osd_threads = 2;
    assert_float_equal(sim(s, 4, p), 2.02, 1e-9);
    /* A window of 1: one after another. */
    p.osd_threads = 0;
    p.window = 1;
    assert_float_equal(sim(s, 4, p), 4.04, 1e-9);
}

static void test_reads_in_order(void **state)
{
    (void)state;
    /* Plain reads with 0.1 s of OSD work each, all in flight at once on 0.5 cores: served one
     * after another, the first over the link after 0.2 s, not all of them after 0.8 s as the
     * cores shared among the four would have it; the last read is the last 10 ms. */
    struct sophon__sim_sample s[5];
    for (int i = 0; i < 4; i++)
        s[i] = (struct sophon__sim_sample){.bytes = 125000, .osd_s = 0.1};
    struct sophon__sim_params p = params();
    p.osd_cores = 0.5;
    assert_float_equal(sim(s, 4, p), 0.8 + 0.01, 1e-9);
    /* A preparation of 0.2 s issued first waits while the reads' queue has a read: the reads,
     * 0.2 s each at 0.5 cores, done at 0.2, 0.4, 0.6 and 0.8 s, then the preparation at 0.5
     * cores until 1.2 s, over the link at 1.21 s. */
    s[0] = (struct sophon__sim_sample){.bytes = 125000, .osd_s = 0.2, .ahead = 1};
    s[4] = (struct sophon__sim_sample){.bytes = 125000, .osd_s = 0.1};
    assert_float_equal(sim(s, 5, p), 1.2 + 0.01, 1e-9);
    /* Where the reads come first shows: a read needing 0.3 s of the client behind that
     * preparation is over the link at 0.21 s and done at 0.51 s, the preparation at 0.6 s and
     * over the link at 0.61 s (sharing the cores, the read would be done in the OSD at 0.4 s
     * and the epoch would end at 0.71 s). */
    s[1] = (struct sophon__sim_sample){.bytes = 125000, .osd_s = 0.1, .client_s = 0.3};
    assert_float_equal(sim(s, 2, p), 0.61, 1e-9);
    /* Served by threads that share the cores with the preparation's (read_threads), a queue of
     * one read has one thread's share, 0.25 cores: in the OSD until 0.4 s, done at 0.71 s. */
    p.read_threads = 1;
    assert_float_equal(sim(s, 2, p), 0.71, 1e-9);
    p.read_threads = 5;
    assert_float_equal(sim(s, 2, p), 0.71, 1e-9);
    /* Two reads queued on two threads, 1/3 of the cores each beside the preparation's 1/6: the
     * first done in the OSD at 0.3 s and at 0.61 s; the second then alone with the preparation
     * (0.25 cores each): done at 0.7 s with 0.05 s of the preparation left, which ends at 0.8 s
     * and crosses the link at 0.81 s. */
    p.read_threads = 2;
    s[2] = (struct sophon__sim_sample){.bytes = 125000, .osd_s = 0.1};
    assert_float_equal(sim(s, 3, p), 0.81, 1e-9);
    p.read_threads = 0;
    /* With 1.5 cores the read has one and the preparation the other half until 0.1 s, then a
     * whole one: the preparation done at 0.25 s, the read at 0.1 s, over the link at 0.11 s and
     * done at 0.41 s. */
    p.osd_cores = 1.5;
    assert_float_equal(sim(s, 2, p), 0.41, 1e-9);
}

static void test_ring_held(void **state)
{
    (void)state;
    /* A preparation of 1 s at position 0 and 39 plain reads of 10 ms: with a ring of 2 batches
     * of 4 the link reads 7 of them and waits; with the whole epoch in the ring it reads all 39
     * meanwhile. */
    struct sophon__sim_sample s[40];
    for (int i = 0; i < 40; i++)
        s[i] = (struct sophon__sim_sample){.bytes = 125000};
    s[0].osd_s = 1;
    s[0].ahead = 1;
    struct sophon__sim_params p = params();
    p.nbufs = 2;
    p.window = 64;
    assert_float_equal(sim(s, 40, p), 1.0 + 0.01 + 32 * 0.01, 1e-9);
    p.nbufs = 10;
    assert_float_equal(sim(s, 40, p), 1.01, 1e-9);
}

static void test_ahead(void **state)
{
    (void)state;
    /* A preparation of 1 s in the last batch, 39 plain reads of 10 ms, the whole epoch in the
     * ring, a window of 8: in order it starts only when position 28 is over the link (0.29 s);
     * issued ahead it starts at once and the reads cross the link meanwhile. */
    struct sophon__sim_sample s[40];
    for (int i = 0; i < 40; i++)
        s[i] = (struct sophon__sim_sample){.bytes = 125000};
    s[36] = (struct sophon__sim_sample){.bytes = 150528, .osd_s = 1, .ahead = 1};
    struct sophon__sim_params p = params();
    p.nbufs = 10;
    assert_float_equal(sim(s, 40, p), 0.29 + 1 + 150528 / RATE, 1e-9);
    p.ahead = 1;
    assert_float_equal(sim(s, 40, p), 1 + 150528 / RATE, 1e-9);
    /* Not marked ahead (a plain read's OSD work): in order, in the 7 places of the window the
     * in-order pass has (one kept for those started ahead), after position 29 (0.30 s). */
    s[36].ahead = 0;
    assert_float_equal(sim(s, 40, p), 0.30 + 1 + 150528 / RATE, 1e-9);
    /* Only as far as the ring reaches: with 2 batches of 4, position 36's batch enters it when
     * batch 7 is done (32 reads over the link, 0.32 s). */
    s[36].ahead = 1;
    p.nbufs = 2;
    assert_float_equal(sim(s, 40, p), 0.32 + 1 + 150528 / RATE, 1e-9);
}

static void test_bounds(void **state)
{
    (void)state;
    srand(7);
    enum { n = 300 };
    static struct sophon__sim_sample s[n];
    for (int trial = 0; trial < 50; trial++) {
        double link = 0, osd = 0, client = 0;
        struct sophon__sim_params p = params();
        p.osd_cores = 0.1 + (rand() % 20) / 10.0;
        p.threads = 1 + rand() % 3;
        p.nbufs = 1 + rand() % 6;
        p.batch = 1 + rand() % 40;
        p.window = 1 + rand() % 64;
        p.ahead = p.window > 2 ? (unsigned)(rand() % 3) : 0;
        p.conns = (unsigned)(rand() % 5);
        for (int i = 0; i < n; i++) {
            int off = rand() % 3 == 0;
            s[i].conn = (unsigned)rand();
            s[i].ahead = off;
            s[i].bytes = off ? 150528 : 20000 + rand() % 600000;
            s[i].osd_s = off ? 0.001 + (rand() % 100) / 1e4 : 0.0002;
            s[i].client_s = off ? 0.0001 : 0.001 + (rand() % 100) / 1e4;
            link += s[i].bytes / p.rate_Bps;
            osd += s[i].osd_s;
            client += s[i].client_s;
        }
        double busiest = fmax(link, fmax(osd / p.osd_cores, client / p.client_cores));
        double worst = link + osd / fmin(p.osd_cores, 1) + client;
        double t = sim(s, n, p);
        assert_true(t >= busiest * (1 - 1e-9));
        assert_true(t <= worst * (1 + 1e-9));
    }
}

static void test_errors(void **state)
{
    (void)state;
    struct sophon__sim_sample s[2] = {{.bytes = 1000}, {.bytes = 1000, .osd_s = 0.1}};
    struct sophon__sim_params p = params();
    assert_true(sim(s, 0, p) == 0);
    p.batch = 0;
    assert_true(sim(s, 2, p) == -EINVAL);
    p = params();
    p.window = 0;
    assert_true(sim(s, 2, p) == -EINVAL);
    assert_true(sophon__sim_epoch(NULL, 2, &p) == -EINVAL);
    /* No place of the window left to the in-order pass. */
    p = params();
    p.ahead = p.window;
    assert_true(sim(s, 2, p) == -EINVAL);
    /* No OSD cores for a preparation, no link for the bytes: never. */
    p = params();
    p.osd_cores = 0;
    assert_true(isinf(sim(s, 2, p)));
    p = params();
    p.rate_Bps = 0;
    assert_true(isinf(sim(s, 2, p)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link_alone),     cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_connections),    cmocka_unit_test(test_osd_sharing),
        cmocka_unit_test(test_reads_in_order), cmocka_unit_test(test_ring_held),
        cmocka_unit_test(test_ahead),          cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
