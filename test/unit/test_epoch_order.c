/*
 * test_epoch_order.c - the epoch shuffle and its shards (client/epoch_order.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "epoch_order.h"

static void test_permutation_deterministic(void **state)
{
    uint64_t *a, *b, *c;
    size_t na, nb, nc;

    (void)state;
    assert_int_equal(sophon__epoch_order(&a, &na, 1000, 7, 3, 0, 1), 0);
    assert_int_equal(sophon__epoch_order(&b, &nb, 1000, 7, 3, 0, 1), 0);
    assert_int_equal(sophon__epoch_order(&c, &nc, 1000, 7, 4, 0, 1), 0);
    assert_int_equal(na, 1000);
    assert_memory_equal(a, b, na * sizeof(*a));
    /* Another epoch is another order, of the same indices. */
    assert_memory_not_equal(a, c, na * sizeof(*a));
    char seen[1000] = {0};
    size_t fixed = 0;
    for (size_t i = 0; i < na; i++) {
        assert_true(a[i] < 1000);
        assert_int_equal(seen[a[i]], 0);
        seen[a[i]] = 1;
        fixed += a[i] == i;
    }
    /* A shuffle, not the identity: about one fixed point is expected. */
    assert_true(fixed < 10);
    free(a);
    free(b);
    free(c);
}

/* Shards of every world size from 1 to 7 over sizes around it cover the epoch exactly once. */
static void test_shards_cover_once(void **state)
{
    (void)state;
    for (unsigned world = 1; world <= 7; world++) {
        for (size_t n = 0; n <= 20; n++) {
            uint64_t *all;
            size_t nall;
            assert_int_equal(sophon__epoch_order(&all, &nall, n, 11, 2, 0, 1), 0);
            int hits[21] = {0};
            size_t smallest = SIZE_MAX, largest = 0;
            for (unsigned r = 0; r < world; r++) {
                uint64_t *s;
                size_t ns;
                assert_int_equal(sophon__epoch_order(&s, &ns, n, 11, 2, r, world), 0);
                for (size_t k = 0; k < ns; k++) {
                    hits[s[k]]++;
                    /* Position k of shard r is position r + k * world of the whole epoch. */
                    assert_int_equal(s[k], all[r + k * world]);
                }
                smallest = ns < smallest ? ns : smallest;
                largest = ns > largest ? ns : largest;
                free(s);
            }
            for (size_t i = 0; i < n; i++)
                assert_int_equal(hits[i], 1);
            assert_true(largest - smallest <= 1);
            free(all);
        }
    }
}

/* The order sophon has always drawn for (seed 7, epoch 3): a change must be deliberate. */
static void test_same_order_as_ever(void **state)
{
    static const uint64_t whole[] = {11, 3, 0, 4, 9, 6, 8, 2, 7, 1, 5, 10};
    static const uint64_t shard[] = {3, 9, 2, 5};
    uint64_t *o;
    size_t n;

    (void)state;
    assert_int_equal(sophon__epoch_order(&o, &n, 12, 7, 3, 0, 1), 0);
    assert_int_equal(n, 12);
    assert_memory_equal(o, whole, sizeof(whole));
    free(o);
    assert_int_equal(sophon__epoch_order(&o, &n, 12, 7, 3, 1, 3), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(o, shard, sizeof(shard));
    free(o);
}

/* Validation: the dataset order, split as the shuffled one is. */
static void test_sequential(void **state)
{
    uint64_t *o;
    size_t n, i;

    (void)state;
    assert_int_equal(sophon__epoch_order_sequential(&o, &n, 10, 0, 1), 0);
    assert_int_equal(n, 10);
    for (i = 0; i < n; i++)
        assert_int_equal(o[i], i);
    free(o);
    assert_int_equal(sophon__epoch_order_sequential(&o, &n, 10, 1, 3), 0);
    assert_int_equal(n, 3);
    assert_int_equal(o[0], 1);
    assert_int_equal(o[1], 4);
    assert_int_equal(o[2], 7);
    free(o);
    assert_int_equal(sophon__epoch_order_sequential(&o, &n, 0, 0, 1), 0);
    assert_int_equal(n, 0);
    free(o);
    assert_int_equal(sophon__epoch_order_sequential(&o, &n, 10, 3, 3), -EINVAL);
}

static void test_bad_arguments(void **state)
{
    uint64_t *o;
    size_t n;

    (void)state;
    assert_int_equal(sophon__epoch_order(&o, &n, 10, 0, 0, 2, 2), -EINVAL);
    assert_int_equal(sophon__epoch_order(&o, &n, 10, 0, 0, 0, 0), -EINVAL);
    assert_int_equal(sophon__epoch_order(NULL, &n, 10, 0, 0, 0, 1), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_permutation_deterministic),
        cmocka_unit_test(test_shards_cover_once),
        cmocka_unit_test(test_same_order_as_ever),
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
