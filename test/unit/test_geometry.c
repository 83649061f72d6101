/*
 * test_geometry.c - a request's geometry: torchvision's validation transform as
 * sophon_prep_set_val computes it, against the table torchvision itself printed
 * (val_geometry.tsv, from test/exact/gen_val_geometry.py), and the rules every request's box,
 * resize target and window follow (sophon__prep_geometry).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline.h"
#include "prep.h"

/* Every line of the table: torchvision's resized size and CenterCrop corner, or its padding. */
static void val_matches_torchvision(void **state)
{
    FILE *f = fopen(SOPHON_VAL_GEOMETRY_TSV, "r");
    char line[256];
    int lines = 0, pads = 0;

    (void)state;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned w, h, resize, size, rw, rh, left, top;
        char pad[8];
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        int n =
            sscanf(line, "%u %u %u %u %u %u %u %u", &w, &h, &resize, &size, &rw, &rh, &left, &top);
        int rc = sophon_prep_set_val(&p, w, h, resize, size);

        lines++;
        if (n == 6) {
            assert_int_equal(sscanf(line, "%*u %*u %*u %*u %*u %*u %7s", pad), 1);
            assert_string_equal(pad, "pad");
            if (rc != -EINVAL)
                fail_msg("%ux%u Resize(%u) CenterCrop(%u): torchvision pads, got %d", w, h, resize,
                         size, rc);
            pads++;
            continue;
        }
        assert_int_equal(n, 8);
        if (rc != 0 || p.resize_w != rw || p.resize_h != rh || p.win_x != left || p.win_y != top)
            fail_msg("%ux%u Resize(%u) CenterCrop(%u): %d, %ux%u at %u,%u; torchvision %ux%u at "
                     "%u,%u",
                     w, h, resize, size, rc, p.resize_w, p.resize_h, p.win_x, p.win_y, rw, rh, left,
                     top);
        assert_true(p.box_x == 0 && p.box_y == 0 && p.box_w == w && p.box_h == h);
        assert_true(p.out_w == size && p.out_h == size && p.flip == 0);
        assert_int_equal(sophon__prep_geometry(NULL, &p, NULL, 0), 0);
    }
    fclose(f);
    printf("  %d cases, %d where torchvision pads\n", lines, pads);
    assert_true(lines > 500 && pads > 50);
}

static void val_refuses(void **state)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;

    (void)state;
    assert_int_equal(sophon_prep_set_val(NULL, 10, 10, 256, 224), -EINVAL);
    assert_int_equal(sophon_prep_set_val(&p, 0, 10, 256, 224), -EINVAL);
    assert_int_equal(sophon_prep_set_val(&p, 10, 0, 256, 224), -EINVAL);
    assert_int_equal(sophon_prep_set_val(&p, 10, 10, 0, 224), -EINVAL);
    assert_int_equal(sophon_prep_set_val(&p, 10, 10, 256, 0), -EINVAL);
    assert_int_equal(sophon_prep_set_val(&p, 10, 10, 256, SOPHON_MAX_SIDE + 1), -EINVAL);
    assert_int_equal(sophon_prep_set_val(&p, 10, 10, SOPHON_MAX_RESIZE_SIDE + 1, 224), -EINVAL);
    /* A 1:300 panorama at 256 would be 76,800 wide: over the resize limit. */
    assert_int_equal(sophon_prep_set_val(&p, 30000, 100, 256, 224), -EINVAL);
    assert_int_equal(sophon_prep_set_val(&p, 25600, 100, 256, 224), 0);
    assert_int_equal(p.resize_w, 65536);
}

static struct sophon_prep_params window(uint32_t out, uint32_t rw, uint32_t rh, uint32_t x,
                                        uint32_t y)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;

    p.box_w = p.box_h = 100;
    p.out_w = p.out_h = out;
    p.resize_w = rw;
    p.resize_h = rh;
    p.win_x = x;
    p.win_y = y;
    return p;
}

static void geometry_rules(void **state)
{
    struct sophon__geometry g;
    struct sophon_prep_params p = window(224, 0, 0, 0, 0);
    char err[128];

    (void)state;
    /* resize 0 x 0: the output size, the window at the origin. */
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), 0);
    assert_true(g.resize_w == 224 && g.resize_h == 224 && g.win_x == 0 && g.win_y == 0);
    p = window(224, 300, 256, 76, 32);
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), 0);
    assert_true(g.resize_w == 300 && g.resize_h == 256 && g.win_x == 76 && g.win_y == 32);
    p = window(224, 300, 256, 77, 32); /* one column past the right edge */
    assert_int_equal(sophon__prep_geometry(&g, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not inside"));
    p = window(224, 300, 256, 0, 33);
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), -EINVAL);
    p = window(224, 0, 0, 1, 0); /* a window offset with no resize */
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), -EINVAL);
    p = window(224, 300, 0, 0, 0); /* half a resize target */
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), -EINVAL);
    p = window(224, SOPHON_MAX_RESIZE_SIDE + 1, 256, 0, 0);
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), -EINVAL);
    p = window(SOPHON_MAX_SIDE + 1, SOPHON_MAX_RESIZE_SIDE, SOPHON_MAX_RESIZE_SIDE, 0, 0);
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), -EINVAL);
    p = window(SOPHON_MAX_SIDE, SOPHON_MAX_RESIZE_SIDE, SOPHON_MAX_RESIZE_SIDE,
               SOPHON_MAX_RESIZE_SIDE - SOPHON_MAX_SIDE, 0);
    assert_int_equal(sophon__prep_geometry(&g, &p, NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(val_matches_torchvision),
        cmocka_unit_test(val_refuses),
        cmocka_unit_test(geometry_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
