/*
 * test_osd_cpu.c - finding the OSD processes and the CPU they spent between two answers
 * (client/osd_cpu.h), against a librados whose asynchronous calls are wrapped: each object
 * answers from the process the test puts it on, with that process's figures.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "osd_cpu.h"
#include "wire.h"

/* Three processes on two hosts; objects "o0".."o8" on process i % 3 unless moved. */
static struct sophon_cpu_reply procs[3];
static int placed[9], failing[9];

int __wrap_rados_aio_create_completion2(void *arg, rados_callback_t cb, rados_completion_t *pc);
int __wrap_rados_aio_exec(rados_ioctx_t io, const char *oid, rados_completion_t c, const char *cls,
                          const char *method, const char *in, size_t in_len, char *buf,
                          size_t out_len);
int __wrap_rados_aio_wait_for_complete(rados_completion_t c);
int __wrap_rados_aio_get_return_value(rados_completion_t c);
void __wrap_rados_aio_release(rados_completion_t c);

struct fake_completion {
    int rc;
};
static struct fake_completion completions[64];
static size_t ncompletions;

int __wrap_rados_aio_create_completion2(void *arg, rados_callback_t cb, rados_completion_t *pc)
{
    (void)arg;
    (void)cb;
    assert_true(ncompletions < 64);
    *pc = &completions[ncompletions++];
    return 0;
}

int __wrap_rados_aio_exec(rados_ioctx_t io, const char *oid, rados_completion_t c, const char *cls,
                          const char *method, const char *in, size_t in_len, char *buf,
                          size_t out_len)
{
    (void)io;
    (void)in;
    (void)in_len;
    struct fake_completion *f = c;
    assert_string_equal(cls, "sophon");
    assert_string_equal(method, "cpu");
    int i = oid[1] - '0';
    if (failing[i]) {
        f->rc = failing[i];
        return 0;
    }
    f->rc = sophon_cpu_encode((uint8_t *)buf, out_len, &procs[placed[i]]);
    return 0;
}

int __wrap_rados_aio_wait_for_complete(rados_completion_t c)
{
    (void)c;
    return 0;
}

int __wrap_rados_aio_get_return_value(rados_completion_t c)
{
    return ((struct fake_completion *)c)->rc;
}

void __wrap_rados_aio_release(rados_completion_t c)
{
    (void)c;
}

static const char *const oids[9] = {"o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8"};

static int setup(void **state)
{
    (void)state;
    ncompletions = 0;
    for (int i = 0; i < 3; i++)
        procs[i] = (struct sophon_cpu_reply){i < 2 ? 11 : 22, 100 + (uint32_t)i,
                                             1000000000ull * (uint64_t)(i + 1), 5000000000ull};
    procs[2].pid = 100; /* the same pid as process 0, on the other host */
    for (int i = 0; i < 9; i++) {
        placed[i] = i % 3;
        failing[i] = 0;
    }
    return 0;
}

/* Each process once, whatever the number of its objects asked; the second ask sums what each
 * spent since, and takes the longest span. */
static void finds_processes_and_sums_their_cpu(void **state)
{
    (void)state;
    struct sophon__osds o;
    uint64_t ns;
    double span;
    assert_int_equal(sophon__osds_find(&o, NULL, oids, 9), 3);
    procs[0].cpu_ns += 300000000;
    procs[1].cpu_ns += 200000000;
    procs[2].cpu_ns += 100000000;
    procs[0].clock_ns += 2000000000;
    procs[1].clock_ns += 2100000000;
    procs[2].clock_ns += 1900000000;
    ncompletions = 0;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), 0);
    assert_true(ns == 600000000);
    assert_true(span > 2.0999 && span < 2.1001);
    /* Nothing since. */
    ncompletions = 0;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), 0);
    assert_true(ns == 0);
}

/* An object answering from another process (a restarted OSD, a moved object): -ESTALE, its
 * interval left out, and counted again from that answer on. */
static void a_replaced_process_starts_again(void **state)
{
    (void)state;
    struct sophon__osds o;
    uint64_t ns;
    double span;
    assert_int_equal(sophon__osds_find(&o, NULL, oids, 9), 3);
    procs[1].pid = 4242; /* restarted: its CPU from 0 */
    procs[1].cpu_ns = 5000000;
    procs[0].cpu_ns += 70000000;
    ncompletions = 0;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), -ESTALE);
    assert_true(ns == 70000000);
    procs[1].cpu_ns += 9000000;
    ncompletions = 0;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), 0);
    assert_true(ns == 9000000);
}

/* One that does not answer: the error, and its next answer starts a new interval. */
static void a_silent_process_is_not_counted(void **state)
{
    (void)state;
    struct sophon__osds o;
    uint64_t ns;
    double span;
    assert_int_equal(sophon__osds_find(&o, NULL, oids, 3), 3);
    failing[1] = -ETIMEDOUT;
    procs[1].cpu_ns += 1000;
    ncompletions = 0;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), -ETIMEDOUT);
    failing[1] = 0;
    procs[1].cpu_ns += 1000;
    procs[2].cpu_ns += 10;
    procs[2].clock_ns += 10;
    ncompletions = 0;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), -ESTALE);
    assert_true(ns == 10);
    ncompletions = 0;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), 0);
}

/* A class without the method: its error, and nothing to ask. */
static void a_class_without_the_method(void **state)
{
    (void)state;
    struct sophon__osds o;
    for (int i = 0; i < 9; i++)
        failing[i] = -EOPNOTSUPP;
    assert_int_equal(sophon__osds_find(&o, NULL, oids, 9), -EOPNOTSUPP);
    assert_int_equal((int)o.n, 0);
    uint64_t ns;
    double span;
    assert_int_equal(sophon__osds_sample(&o, NULL, &ns, &span), -EINVAL);
}

/* The CPU per operation beyond the preparations: the processes' share of this rank, less its
 * preparations, over its operations; never below 0; nothing to tell without operations. */
static void the_estimate_per_operation(void **state)
{
    (void)state;
    /* 2.0 s of processes over 2 ranks, 0.5 s of preparations, 1000 operations: 0.5 ms. */
    assert_float_equal(sophon__osd_op_estimate(2.0, 0.5, 1000, 2), 0.0005, 1e-12);
    assert_float_equal(sophon__osd_op_estimate(1.0, 1.2, 10, 1), 0.0, 0);
    assert_true(sophon__osd_op_estimate(1.0, 0.5, 0, 1) < 0);
    assert_true(sophon__osd_op_estimate(1.0, 0.5, 10, 0) < 0);
    assert_true(sophon__osd_op_estimate(-1.0, 0.5, 10, 1) < 0);
    assert_true(sophon__osd_op_estimate(1.0 / 0.0, 0.5, 10, 1) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(finds_processes_and_sums_their_cpu, setup),
        cmocka_unit_test_setup(a_replaced_process_starts_again, setup),
        cmocka_unit_test_setup(a_silent_process_is_not_counted, setup),
        cmocka_unit_test_setup(a_class_without_the_method, setup),
        cmocka_unit_test_setup(the_estimate_per_operation, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
