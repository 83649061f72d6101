/*
 * test_wire.c - the wire format's encoders and decoders.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "selector.h"
#include "wire.h"

static void version_roundtrip(void **state)
{
    (void)state;
    struct sophon_version_info in = {.class_version = 0x010203, .wire_version = 7}, out;
    uint8_t buf[SOPHON_VERSION_MSG_LEN];

    assert_int_equal(sophon_version_encode(buf, sizeof(buf), &in), SOPHON_VERSION_MSG_LEN);
    assert_memory_equal(buf, "SPHV", 4);
    assert_int_equal(sophon_version_decode(&out, buf, sizeof(buf)), 0);
    assert_int_equal(out.class_version, 0x010203);
    assert_int_equal(out.wire_version, 7);
}

static void version_encode_small_buffer(void **state)
{
    (void)state;
    struct sophon_version_info in = {0};
    uint8_t buf[SOPHON_VERSION_MSG_LEN - 1];

    assert_int_equal(sophon_version_encode(buf, sizeof(buf), &in), -ERANGE);
}

static void version_decode_refuses_malformed(void **state)
{
    (void)state;
    struct sophon_version_info in = {.class_version = 1, .wire_version = 1}, out;
    uint8_t good[SOPHON_VERSION_MSG_LEN], bad[SOPHON_VERSION_MSG_LEN];

    sophon_version_encode(good, sizeof(good), &in);
    assert_int_equal(sophon_version_decode(&out, NULL, 0), -EINVAL);
    assert_int_equal(sophon_version_decode(&out, good, sizeof(good) - 1), -EINVAL);
    memcpy(bad, good, sizeof(bad));
    bad[0] ^= 1; /* magic */
    assert_int_equal(sophon_version_decode(&out, bad, sizeof(bad)), -EINVAL);
    memcpy(bad, good, sizeof(bad));
    bad[4] = 0; /* layout version 0 */
    assert_int_equal(sophon_version_decode(&out, bad, sizeof(bad)), -EINVAL);
    memcpy(bad, good, sizeof(bad));
    bad[6] = SOPHON_VERSION_MSG_LEN + 1; /* header longer than the buffer */
    assert_int_equal(sophon_version_decode(&out, bad, sizeof(bad)), -EINVAL);
    memcpy(bad, good, sizeof(bad));
    bad[6] = 8; /* header shorter than the fields it must hold */
    assert_int_equal(sophon_version_decode(&out, bad, sizeof(bad)), -EINVAL);
}

static void version_decode_accepts_longer_layout(void **state)
{
    (void)state;
    struct sophon_version_info in = {.class_version = 0x000102, .wire_version = 3}, out;
    uint8_t buf[SOPHON_VERSION_MSG_LEN + 8] = {0};

    sophon_version_encode(buf, sizeof(buf), &in);
    buf[4] = 2;                          /* a later layout */
    buf[6] = SOPHON_VERSION_MSG_LEN + 8; /* with more fields */
    assert_int_equal(sophon_version_decode(&out, buf, sizeof(buf)), 0);
    assert_int_equal(out.wire_version, 3);
}

static void le_helpers(void **state)
{
    (void)state;
    uint8_t b[8];

    sophon__put_le64(b, 0x0102030405060708ull);
    assert_int_equal(b[0], 8);
    assert_int_equal(b[7], 1);
    assert_true(sophon__get_le64(b) == 0x0102030405060708ull);
    assert_int_equal(sophon__get_le32(b + 4), 0x01020304);
    assert_int_equal(sophon__get_le16(b), 0x0708);
}

static void version_format(void **state)
{
    (void)state;
    char buf[32];

    assert_string_equal(sophon_version_format(buf, sizeof(buf), 0x010203), "1.2.3");
}

static struct sophon_prep_params sample_params(void)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    p.box_x = 10;
    p.box_y = 20;
    p.box_w = 300;
    p.box_h = 200;
    p.flip = 1;
    p.format = SOPHON_FORMAT_F32;
    return p;
}

static void request_roundtrip(void **state)
{
    (void)state;
    struct sophon_prep_params in = sample_params(), out;
    uint8_t buf[SOPHON_REQUEST_LEN];

    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &in), SOPHON_REQUEST_LEN);
    assert_memory_equal(buf, "SPHQ", 4);
    assert_int_equal(sophon_request_decode(&out, buf, sizeof(buf)), 0);
    assert_int_equal(out.box_x, 10);
    assert_int_equal(out.box_y, 20);
    assert_int_equal(out.box_w, 300);
    assert_int_equal(out.box_h, 200);
    assert_int_equal(out.out_w, 224);
    assert_int_equal(out.out_h, 224);
    assert_int_equal(out.flip, 1);
    assert_int_equal(out.fast, 0);
    assert_int_equal(out.format, SOPHON_FORMAT_F32);
    assert_memory_equal(out.mean, in.mean, sizeof(in.mean));
    assert_memory_equal(out.std, in.std, sizeof(in.std));
}

/* Each case breaks one field of a valid request; every one must be refused with -EINVAL. */
static void request_decode_refuses_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        size_t off, width;
        uint32_t value;
    } cases[] = {
        {"magic", 0, 1, 'X'},
        {"layout version 0", 4, 2, 0},
        {"header length", 6, 2, 59},
        {"box w 0", 16, 4, 0},
        {"box h 0", 20, 4, 0},
        {"out w 0", 24, 4, 0},
        {"format", 32, 1, 7},
        {"flags", 33, 1, 0x80},
        {"reserved", 34, 2, 1},
        {"mean inf", 40, 4, 0x7f800000u},
        {"std NaN", 48, 4, 0x7fc00000u},
        {"std 0", 52, 4, 0},
    };
    struct sophon_prep_params in = sample_params(), out;
    uint8_t good[SOPHON_REQUEST_LEN], bad[SOPHON_REQUEST_LEN + 1];

    sophon_request_encode(good, sizeof(good), &in);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(bad, good, sizeof(good));
        if (cases[i].width == 4)
            sophon__put_le32(bad + cases[i].off, cases[i].value);
        else if (cases[i].width == 2)
            sophon__put_le16(bad + cases[i].off, (uint16_t)cases[i].value);
        else
            bad[cases[i].off] = (uint8_t)cases[i].value;
        if (sophon_request_decode(&out, bad, sizeof(good)) != -EINVAL)
            fail_msg("request with bad %s accepted", cases[i].what);
    }
    /* Truncated, trailing bytes, nothing at all. */
    assert_int_equal(sophon_request_decode(&out, good, sizeof(good) - 1), -EINVAL);
    memcpy(bad, good, sizeof(good));
    assert_int_equal(sophon_request_decode(&out, bad, sizeof(good) + 1), -EINVAL);
    assert_int_equal(sophon_request_decode(&out, NULL, 0), -EINVAL);
    /* An output side over the maximum. */
    memcpy(bad, good, sizeof(good));
    sophon__put_le32(bad + 28, SOPHON_MAX_SIDE + 1);
    assert_int_equal(sophon_request_decode(&out, bad, sizeof(good)), -EINVAL);
    /* A box whose end overflows 32 bits. */
    memcpy(bad, good, sizeof(good));
    sophon__put_le32(bad + 8, UINT32_MAX);
    assert_int_equal(sophon_request_decode(&out, bad, sizeof(good)), -EINVAL);
}

static void request_newer_layout_is_refused(void **state)
{
    (void)state;
    struct sophon_prep_params in = sample_params(), out;
    uint8_t buf[SOPHON_REQUEST_LEN];

    sophon_request_encode(buf, sizeof(buf), &in);
    buf[4] = 2;
    assert_int_equal(sophon_request_decode(&out, buf, sizeof(buf)), -EINVAL);
}

static void request_encode_refuses_invalid(void **state)
{
    (void)state;
    struct sophon_prep_params p = sample_params();
    uint8_t buf[SOPHON_REQUEST_LEN];

    assert_int_equal(sophon_request_encode(buf, sizeof(buf) - 1, &p), -ERANGE);
    p.std[1] = 0.0f;
    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &p), -EINVAL);
    p = sample_params();
    p.box_w = 0;
    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &p), -EINVAL);
}

static void response_roundtrip(void **state)
{
    (void)state;
    struct sophon_response in = {.format = SOPHON_FORMAT_U8,
                                 .flip = 1,
                                 .channels = 3,
                                 .width = 4,
                                 .height = 2,
                                 .cpu_ns = 123456789012ull,
                                 .source_bytes = 5000000000ull,
                                 .payload_len = 24},
                           out;
    uint8_t buf[SOPHON_RESPONSE_HDR_LEN + 24];
    const uint8_t *payload = NULL;

    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), SOPHON_RESPONSE_HDR_LEN);
    for (int i = 0; i < 24; i++)
        buf[SOPHON_RESPONSE_HDR_LEN + i] = (uint8_t)i;
    assert_int_equal(sophon_response_decode(&out, &payload, buf, sizeof(buf)), 0);
    assert_ptr_equal(payload, buf + SOPHON_RESPONSE_HDR_LEN);
    assert_int_equal(out.width, 4);
    assert_int_equal(out.height, 2);
    assert_int_equal(out.flip, 1);
    assert_true(out.cpu_ns == 123456789012ull);
    assert_true(out.source_bytes == 5000000000ull);
    assert_true(out.payload_len == 24);
    /* The payload must be exactly as long as the geometry says. */
    assert_int_equal(sophon_response_decode(&out, &payload, buf, sizeof(buf) - 1), -EINVAL);
    in.format = SOPHON_FORMAT_F32;
    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), -EINVAL);
    in.payload_len = 96;
    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), SOPHON_RESPONSE_HDR_LEN);
    assert_int_equal(sophon_response_decode(&out, &payload, buf, sizeof(buf)), -EINVAL);
}

/* The selector's byte figures are the sizes of the responses to the loader's requests. */
static void response_sizes_are_the_selectors(void **state)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;

    (void)state;
    p.box_w = p.box_h = 500;
    p.out_w = p.out_h = SOPHON_SEL_SIDE;
    assert_int_equal(sophon_response_size(&p), SOPHON_SEL_U8_BYTES);
    p.format = SOPHON_FORMAT_F32;
    assert_int_equal(sophon_response_size(&p), SOPHON_SEL_F32_BYTES);
}

static void format_names(void **state)
{
    (void)state;
    assert_string_equal(sophon_format_name(SOPHON_FORMAT_U8), "u8");
    assert_string_equal(sophon_format_name(SOPHON_FORMAT_F32), "f32");
    assert_string_equal(sophon_format_name(2), "unknown");
    assert_int_equal(sophon_format_from_name("f32"), SOPHON_FORMAT_F32);
    assert_int_equal(sophon_format_from_name("u8"), SOPHON_FORMAT_U8);
    assert_int_equal(sophon_format_from_name("f16"), -1);
    assert_int_equal(sophon_format_from_name(NULL), -1);
}

static void probe_roundtrip(void **state)
{
    (void)state;
    struct sophon_probe_reply in = {0}, out;
    uint8_t buf[SOPHON_PROBE_MSG_LEN];

    in.info.width = 64250;
    in.info.height = 64250;
    in.info.components = 3;
    in.info.progressive = 1;
    in.info.colorspace = SOPHON_CS_YCBCR;
    in.info.subsampling = SOPHON_SS_420;
    in.info.bits = 8;
    in.info.scans = 10;
    in.object_size = 1400;
    assert_int_equal(sophon_probe_encode(buf, sizeof(buf), &in), SOPHON_PROBE_MSG_LEN);
    assert_int_equal(sophon_probe_decode(&out, buf, sizeof(buf)), 0);
    assert_memory_equal(&in.info, &out.info, sizeof(in.info));
    assert_true(out.object_size == 1400);
    buf[0] = 0;
    assert_int_equal(sophon_probe_decode(&out, buf, sizeof(buf)), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_roundtrip),
        cmocka_unit_test(version_encode_small_buffer),
        cmocka_unit_test(version_decode_refuses_malformed),
        cmocka_unit_test(version_decode_accepts_longer_layout),
        cmocka_unit_test(le_helpers),
        cmocka_unit_test(version_format),
        cmocka_unit_test(request_roundtrip),
        cmocka_unit_test(request_decode_refuses_malformed),
        cmocka_unit_test(request_newer_layout_is_refused),
        cmocka_unit_test(request_encode_refuses_invalid),
        cmocka_unit_test(response_roundtrip),
        cmocka_unit_test(response_sizes_are_the_selectors),
        cmocka_unit_test(format_names),
        cmocka_unit_test(probe_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
