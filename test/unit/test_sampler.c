/*
 * test_sampler.c - RandomResizedCrop and flip parameters.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sampler.h"

static void box_inside_and_in_range(void **state)
{
    (void)state;
    static const uint32_t sizes[][2] = {{224, 224}, {1024, 768}, {640, 4000}, {5000, 300},
                                        {1, 1},     {3, 1000},   {7, 9}};
    size_t fallbacks = 0, draws = 0;

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        uint32_t w = sizes[s][0], h = sizes[s][1];
        for (uint64_t i = 0; i < 2000; i++) {
            struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
            assert_int_equal(sophon_draw_crop(&p, 42, 3, i, w, h, NULL), 0);
            assert_true(p.box_w >= 1 && p.box_h >= 1);
            assert_true((uint64_t)p.box_x + p.box_w <= w);
            assert_true((uint64_t)p.box_y + p.box_h <= h);
            double frac = (double)p.box_w * p.box_h / ((double)w * h);
            double ratio = (double)p.box_w / p.box_h;
            /* Rounding to whole pixels moves area and ratio a little off the policy's range on
             * small images; the centre-crop fallback may take the whole image. */
            if (w >= 224 && h >= 224 && !(p.box_w == w || p.box_h == h)) {
                assert_true(frac > 0.07 && frac <= 1.0);
                assert_true(ratio > 0.74 && ratio < 1.34);
            }
            if ((p.box_w == w && p.box_x == 0) || (p.box_h == h && p.box_y == 0))
                fallbacks++;
            draws++;
        }
    }
    assert_true(fallbacks < draws);
}

static void deterministic_and_keyed(void **state)
{
    (void)state;
    struct sophon_prep_params a = SOPHON_PREP_PARAMS_INIT, b = SOPHON_PREP_PARAMS_INIT;
    size_t same_epoch = 0, same_seed = 0;

    for (uint64_t i = 0; i < 500; i++) {
        sophon_draw_crop(&a, 7, 1, i, 1000, 800, NULL);
        sophon_draw_crop(&b, 7, 1, i, 1000, 800, NULL);
        assert_true(a.box_x == b.box_x && a.box_y == b.box_y && a.box_w == b.box_w &&
                    a.box_h == b.box_h && a.flip == b.flip);
        sophon_draw_crop(&b, 7, 2, i, 1000, 800, NULL);
        same_epoch += a.box_x == b.box_x && a.box_w == b.box_w && a.box_y == b.box_y;
        sophon_draw_crop(&b, 8, 1, i, 1000, 800, NULL);
        same_seed += a.box_x == b.box_x && a.box_w == b.box_w && a.box_y == b.box_y;
    }
    /* Another epoch or seed draws other boxes (a coincidence now and then is fine). */
    assert_true(same_epoch < 5);
    assert_true(same_seed < 5);
}

static void flip_half_the_time(void **state)
{
    (void)state;
    int flips = 0;
    for (uint64_t i = 0; i < 10000; i++) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        sophon_draw_crop(&p, 1, 0, i, 500, 500, NULL);
        flips += p.flip;
    }
    /* Binomial(10000, 0.5): 5 sigma is 250. */
    assert_in_range(flips, 4750, 5250);
}

static void area_distribution_matches_policy(void **state)
{
    (void)state;
    /* On a large square image, torchvision's algorithm (tries whose box does not fit are drawn
     * again) gives a mean area fraction of 0.4776 (Monte Carlo of the Python code, 200,000
     * draws); a uniform area without retries would give 0.54. */
    double sum = 0;
    int n = 20000;
    for (int i = 0; i < n; i++) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        sophon_draw_crop(&p, 99, 0, (uint64_t)i, 4000, 4000, NULL);
        sum += (double)p.box_w * p.box_h / 16e6;
    }
    assert_true(fabs(sum / n - 0.4776) < 0.01);
}

static void centre_fallback_for_extreme_images(void **state)
{
    (void)state;
    /* A 1 x 1000 strip: no try fits, so the fallback takes the whole width and a height of
     * round(1 / (3/4)) = 1 at the centre. */
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    assert_int_equal(sophon_draw_crop(&p, 5, 0, 0, 1, 1000, NULL), 0);
    assert_int_equal(p.box_w, 1);
    assert_int_equal(p.box_h, 1);
    assert_int_equal(p.box_x, 0);
    assert_int_equal(p.box_y, 499);
}

/*
 * The boxes and flips of a few samples, as sophon has drawn them since the sampler's first
 * version: a change of the generator or of the draw order changes every epoch of every user,
 * so it must be deliberate.
 */
static void same_draws_as_ever(void **state)
{
    static const uint32_t want[][5] = {
        {43, 93, 697, 612, 0},   {33, 84, 565, 657, 1},  {82, 1, 927, 742, 1},
        {186, 172, 253, 296, 0}, {247, 90, 442, 422, 0}, {78, 73, 412, 500, 1},
    };
    (void)state;
    for (uint64_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        assert_int_equal(sophon_draw_crop(&p, 42, 3, i, 1024, 768, NULL), 0);
        assert_int_equal(p.box_x, want[i][0]);
        assert_int_equal(p.box_y, want[i][1]);
        assert_int_equal(p.box_w, want[i][2]);
        assert_int_equal(p.box_h, want[i][3]);
        assert_int_equal(p.flip, want[i][4]);
    }
}

static void bad_arguments(void **state)
{
    (void)state;
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    struct sophon_crop_policy bad = SOPHON_CROP_POLICY_INIT;
    assert_int_equal(sophon_draw_crop(&p, 0, 0, 0, 0, 10, NULL), -EINVAL);
    assert_int_equal(sophon_draw_crop(NULL, 0, 0, 0, 10, 10, NULL), -EINVAL);
    bad.scale_min = 0;
    assert_int_equal(sophon_draw_crop(&p, 0, 0, 0, 10, 10, &bad), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(box_inside_and_in_range),
        cmocka_unit_test(deterministic_and_keyed),
        cmocka_unit_test(flip_half_the_time),
        cmocka_unit_test(area_distribution_matches_policy),
        cmocka_unit_test(centre_fallback_for_extreme_images),
        cmocka_unit_test(same_draws_as_ever),
        cmocka_unit_test(bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
