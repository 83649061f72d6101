/*
 * test_resize.c - the resample passes: the AVX2 kernels give the same bytes as the scalar ones
 * (which test_prep and integration.exact_pillow hold to Pillow 9.4) for every kernel width, edge
 * and pixel pattern, and the weights keep the invariants the kernels rely on.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resize.h"

/* A small deterministic generator, so that a failure names a reproducible case. */
static uint64_t rng_state = 0x5eed;

static uint32_t next_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* Pixel patterns that reach both clip ends and every byte value. */
static void fill(uint8_t *p, size_t n, int pattern)
{
    size_t i;

    for (i = 0; i < n; i++) {
        switch (pattern) {
        case 0:
            p[i] = (uint8_t)next_u32();
            break;
        case 1:
            p[i] = 255;
            break;
        case 2:
            p[i] = (i / 3) % 2 ? 255 : 0;
            break;
        default:
            p[i] = (uint8_t)i;
            break;
        }
    }
}

static void check_h(uint32_t in, uint32_t out, int pattern)
{
    struct sophon__coeffs c;
    uint8_t *src, *want, *got;

    assert_int_equal(sophon__coeffs_init(&c, in, out), 0);
    assert_int_equal(sophon__coeffs_expand(&c), 0);
    /* Exactly in * 3 bytes, so that ASan and valgrind see any read past the row. */
    src = malloc((size_t)in * 3);
    want = malloc((size_t)out * 3);
    got = malloc((size_t)out * 3);
    assert_non_null(src);
    assert_non_null(want);
    assert_non_null(got);
    fill(src, (size_t)in * 3, pattern);
    sophon__resample_h_scalar(want, src, &c);
    memset(got, 0xa5, (size_t)out * 3);
    sophon__resample_h(got, src, &c);
    if (memcmp(want, got, (size_t)out * 3) != 0)
        fail_msg("horizontal %u -> %u, pattern %d: AVX2 differs from scalar", in, out, pattern);
    free(src);
    free(want);
    free(got);
    sophon__coeffs_free(&c);
}

static void check_v(uint32_t in, uint32_t out, size_t n, int pattern)
{
    struct sophon__coeffs c;
    uint8_t *img, *want, *got;
    const uint8_t **rows;
    int32_t *acc;
    uint32_t yy, i;

    assert_int_equal(sophon__coeffs_init(&c, in, out), 0);
    img = malloc((size_t)in * n);
    rows = malloc((size_t)c.ksize * sizeof(*rows));
    acc = malloc(n * sizeof(*acc));
    want = malloc(n);
    got = malloc(n);
    assert_non_null(img);
    assert_non_null(rows);
    assert_non_null(acc);
    assert_non_null(want);
    assert_non_null(got);
    fill(img, (size_t)in * n, pattern);
    for (yy = 0; yy < out; yy++) {
        for (i = 0; i < c.count[yy]; i++)
            rows[i] = img + (size_t)(c.first[yy] + i) * n;
        sophon__resample_v_scalar(want, rows, n, &c.k[(size_t)yy * c.ksize], c.count[yy], acc);
        sophon__resample_v(got, rows, n, &c, yy, acc);
        if (memcmp(want, got, n) != 0)
            fail_msg("vertical %u -> %u, row %u of %zu bytes, pattern %d: AVX2 differs", in, out,
                     yy, n, pattern);
    }
    free(img);
    free(rows);
    free(acc);
    free(want);
    free(got);
    sophon__coeffs_free(&c);
}

static int have_avx2(void)
{
    if (!sophon__have_avx2()) {
        print_message("this CPU has no AVX2: only the scalar passes run here\n");
        return 0;
    }
    return 1;
}

/* Every kernel width up to past the AVX2 limit, downscales and upscales, short rows. */
static void test_h_matches_scalar(void **state)
{
    static const uint32_t outs[] = {1, 2, 3, 4, 5, 7, 8, 9, 224, 225, 227};
    uint32_t in, o;
    int pattern;

    (void)state;
    if (!have_avx2())
        skip();
    for (in = 1; in <= 40; in++)
        for (o = 0; o < sizeof(outs) / sizeof(outs[0]); o++)
            for (pattern = 0; pattern < 4; pattern++)
                check_h(in, outs[o], pattern);
    for (o = 0; o < 300; o++)
        check_h(1 + next_u32() % 8000, 1 + next_u32() % 400, (int)(next_u32() % 4));
}

static void test_v_matches_scalar(void **state)
{
    static const size_t widths[] = {1, 3, 31, 32, 33, 96, 672, 675};
    uint32_t in, o;
    size_t w;
    int pattern;

    (void)state;
    if (!have_avx2())
        skip();
    for (in = 1; in <= 60; in += 3)
        for (w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
            for (pattern = 0; pattern < 4; pattern++)
                check_v(in, 1 + next_u32() % 230, widths[w], pattern);
    for (o = 0; o < 40; o++)
        check_v(1 + next_u32() % 3000, 1 + next_u32() % 300, 3 * (1 + next_u32() % 300),
                (int)(next_u32() % 4));
}

/* The AVX2 passes accumulate in int32 in a different order: only safe without overflow, which
 * needs non-negative weights summing to about one. */
static void test_weights_invariants(void **state)
{
    struct sophon__coeffs c;
    uint32_t in, out, xx, t;
    int i;

    (void)state;
    for (i = 0; i < 2000; i++) {
        int64_t sum;

        in = 1 + next_u32() % (i < 1000 ? 400 : 100000);
        out = 1 + next_u32() % 500;
        assert_int_equal(sophon__coeffs_init(&c, in, out), 0);
        assert_int_equal(sophon__coeffs_expand(&c), 0);
        assert_true(c.kx == NULL || c.kx_taps % 2 == 0);
        assert_true(c.kx == NULL || c.kx_taps <= SOPHON__KX_TAPS_MAX);
        for (xx = 0; xx < out; xx++) {
            sum = 0;
            assert_true(c.count[xx] <= c.ksize);
            assert_true((uint64_t)c.first[xx] + c.count[xx] <= in);
            for (t = 0; t < c.count[xx]; t++) {
                assert_true(c.k[(size_t)xx * c.ksize + t] >= 0);
                sum += c.k[(size_t)xx * c.ksize + t];
            }
            assert_true(sum * 255 + (1 << (SOPHON__PRECISION_BITS - 1)) < INT32_MAX);
        }
        sophon__coeffs_free(&c);
    }
}

/*
 * A window of a resample has the whole one's weights for its outputs, reads only the inputs they
 * reach (counted from c.offset), and its AVX2 pass on exactly those inputs gives the scalar
 * pass's bytes.
 */
static void check_window(uint32_t in, uint32_t out, uint32_t first, uint32_t n)
{
    struct sophon__coeffs whole, win;
    uint8_t *src, *want, *got;
    uint32_t i, t, lo = UINT32_MAX, hi = 0;

    assert_int_equal(sophon__coeffs_init(&whole, in, out), 0);
    assert_int_equal(whole.in, in);
    assert_int_equal(whole.offset, 0);
    assert_int_equal(sophon__coeffs_init_window(&win, in, out, first, n), 0);
    assert_int_equal(win.out, n);
    assert_int_equal(win.ksize, whole.ksize);
    for (i = 0; i < n; i++) {
        uint32_t xx = first + i;

        assert_int_equal(win.count[i], whole.count[xx]);
        assert_int_equal(win.offset + win.first[i], whole.first[xx]);
        for (t = 0; t < win.count[i]; t++)
            assert_int_equal(win.k[(size_t)i * win.ksize + t],
                             whole.k[(size_t)xx * whole.ksize + t]);
        lo = whole.first[xx] < lo ? whole.first[xx] : lo;
        hi = whole.first[xx] + whole.count[xx] > hi ? whole.first[xx] + whole.count[xx] : hi;
    }
    /* Exactly the inputs the window's taps reach. */
    assert_int_equal(win.offset, lo);
    assert_int_equal(win.in, hi - lo);
    assert_int_equal(sophon__coeffs_expand(&win), 0);
    src = malloc((size_t)win.in * 3);
    want = malloc((size_t)n * 3);
    got = malloc((size_t)n * 3);
    assert_true(src != NULL && want != NULL && got != NULL);
    fill(src, (size_t)win.in * 3, 0);
    sophon__resample_h_scalar(want, src, &win);
    sophon__resample_h(got, src, &win);
    if (memcmp(want, got, (size_t)n * 3) != 0)
        fail_msg("window %u+%u of %u -> %u: AVX2 differs from scalar", n, first, in, out);
    free(src);
    free(want);
    free(got);
    sophon__coeffs_free(&whole);
    sophon__coeffs_free(&win);
}

static void test_window_weights(void **state)
{
    int i;

    (void)state;
    /* Resize(256) + CenterCrop(224) of common shapes, and edge windows. */
    check_window(500, 256, 16, 224);
    check_window(375, 341, 58, 224);
    check_window(4032, 256, 16, 224);
    check_window(100, 300, 0, 1);
    check_window(100, 300, 299, 1);
    check_window(7, 7, 2, 3);
    check_window(1, 65536, 65000, 536);
    for (i = 0; i < 400; i++) {
        uint32_t in = 1 + next_u32() % 5000, out = 1 + next_u32() % 3000;
        uint32_t n = 1 + next_u32() % out, first = next_u32() % (out - n + 1);

        check_window(in, out, first, n);
    }
    /* Windows outside the resample are refused. */
    {
        struct sophon__coeffs c;

        assert_int_equal(sophon__coeffs_init_window(&c, 10, 20, 15, 6), -EINVAL);
        assert_int_equal(sophon__coeffs_init_window(&c, 10, 20, 21, 1), -EINVAL);
        assert_int_equal(sophon__coeffs_init_window(&c, 10, 20, 0, 0), -EINVAL);
        assert_int_equal(sophon__coeffs_init_window(&c, 10, 20, 20, 0), -EINVAL);
    }
}

/* Wider kernels than the AVX2 pass takes stay scalar, and are still right. */
static void test_wide_kernel_is_scalar(void **state)
{
    struct sophon__coeffs c;

    (void)state;
    assert_int_equal(sophon__coeffs_init(&c, 20000, 224), 0);
    assert_int_equal(sophon__coeffs_expand(&c), 0);
    assert_null(c.kx);
    sophon__coeffs_free(&c);
    check_h(20000, 224, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h_matches_scalar),   cmocka_unit_test(test_v_matches_scalar),
        cmocka_unit_test(test_weights_invariants), cmocka_unit_test(test_wide_kernel_is_scalar),
        cmocka_unit_test(test_window_weights),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
