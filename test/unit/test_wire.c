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
    uint16_t version = 0;

    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &in), SOPHON_REQUEST_LEN);
    assert_int_equal(SOPHON_REQUEST_LEN, SOPHON_REQUEST_LEN_V3);
    assert_memory_equal(buf, "SPHQ", 4);
    assert_int_equal(sophon_request_decode(&out, &version, buf, sizeof(buf)), 0);
    assert_int_equal(version, SOPHON_WIRE_V3);
    assert_int_equal(out.box_x, 10);
    assert_int_equal(out.box_y, 20);
    assert_int_equal(out.box_w, 300);
    assert_int_equal(out.box_h, 200);
    assert_int_equal(out.out_w, 224);
    assert_int_equal(out.out_h, 224);
    /* The shorthand resize 0 x 0 goes on the wire as what it means. */
    assert_int_equal(out.resize_w, 224);
    assert_int_equal(out.resize_h, 224);
    assert_int_equal(out.win_x, 0);
    assert_int_equal(out.win_y, 0);
    assert_int_equal(out.flip, 1);
    assert_int_equal(out.fast, 0);
    assert_int_equal(out.format, SOPHON_FORMAT_F32);
    assert_int_equal(out.stage, SOPHON_WIRE_PIXELS);
    assert_int_equal(out.fallback, SOPHON_FALLBACK_NONE);
    assert_int_equal(out.crop_max_bytes, 0);
    assert_memory_equal(out.mean, in.mean, sizeof(in.mean));
    assert_memory_equal(out.std, in.std, sizeof(in.std));
}

/* The validation geometry and the crop stage's fields, at their offsets of wire.h (layout 3). */
static void request_v2_layout(void **state)
{
    (void)state;
    struct sophon_prep_params in = sample_params(), out;
    uint8_t buf[SOPHON_REQUEST_LEN];

    assert_int_equal(sophon_prep_set_val(&in, 500, 375, 256, 224), 0);
    in.stage = SOPHON_WIRE_CROP;
    in.fallback = SOPHON_FALLBACK_PIXELS;
    in.crop_max_bytes = 123456;
    in.fast = 1;
    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &in), 80);
    assert_int_equal(sophon__get_le16(buf + 4), 3);
    assert_int_equal(sophon__get_le16(buf + 6), 80);
    assert_int_equal(sophon__get_le32(buf + 16), 500);         /* box w */
    assert_int_equal(sophon__get_le32(buf + 24), 341);         /* resize w = int(256 * 500 / 375) */
    assert_int_equal(sophon__get_le32(buf + 28), 256);         /* resize h */
    assert_int_equal(sophon__get_le32(buf + 32), 58);          /* window x = round(117 / 2), even */
    assert_int_equal(sophon__get_le32(buf + 36), 16);          /* window y */
    assert_int_equal(sophon__get_le32(buf + 40), 224);         /* out w */
    assert_int_equal(sophon__get_le32(buf + 44), 224);         /* out h */
    assert_int_equal(buf[48], SOPHON_FORMAT_F32);              /* format */
    assert_int_equal(buf[49], 2);                              /* flags: fast, no flip */
    assert_int_equal(buf[50], SOPHON_WIRE_CROP);               /* stage */
    assert_int_equal(buf[51], SOPHON_FALLBACK_PIXELS);         /* fallback */
    assert_int_equal(sophon__get_le32(buf + 52), 123456);      /* crop_max_bytes */
    assert_int_equal(sophon__get_le32(buf + 56), 0x3ef851ecu); /* mean[0] = 0.485f */
    assert_int_equal(sophon__get_le32(buf + 68), 0x3e6a7efau); /* std[0] = 0.229f */
    assert_int_equal(sophon_request_decode(&out, NULL, buf, sizeof(buf)), 0);
    assert_int_equal(out.resize_w, 341);
    assert_int_equal(out.win_x, 58);
    assert_int_equal(out.stage, SOPHON_WIRE_CROP);
    assert_int_equal(out.fallback, SOPHON_FALLBACK_PIXELS);
    assert_int_equal(out.crop_max_bytes, 123456);
    /* Layout 1 carries neither, layout 2 not the crop stage: a class of wire version 2 does not
     * make crops, and one of version 3 refuses a crop asked for in layout 2. */
    assert_int_equal(sophon_request_fits(&in, SOPHON_WIRE_V1), 0);
    assert_int_equal(sophon_request_encode_as(buf, sizeof(buf), &in, SOPHON_WIRE_V1), -EINVAL);
    assert_int_equal(sophon_request_fits(&in, SOPHON_WIRE_V2), 0);
    assert_int_equal(sophon_request_encode_as(buf, sizeof(buf), &in, SOPHON_WIRE_V2), -EINVAL);
    sophon__put_le16(buf + 4, 2);
    assert_int_equal(sophon_request_decode(&out, NULL, buf, sizeof(buf)), -EINVAL);
    in.stage = SOPHON_WIRE_PIXELS;
    in.fallback = SOPHON_FALLBACK_NONE;
    in.crop_max_bytes = 0;
    assert_int_equal(sophon_request_fits(&in, SOPHON_WIRE_V1), 0);
    assert_int_equal(sophon_request_fits(&in, SOPHON_WIRE_V2), 1);
    assert_int_equal(sophon_request_fits(&in, SOPHON_WIRE_V3), 1);
    assert_int_equal(sophon_request_fits(&in, 4), 0);
    assert_int_equal(sophon_request_encode_as(buf, sizeof(buf), &in, SOPHON_WIRE_V2), 80);
    assert_int_equal(sophon_request_decode(&out, NULL, buf, sizeof(buf)), 0);
}

/* Layout 1, as a v1 client sends it and a v1 class takes it: any output size, pixels. */
static void request_v1_roundtrip(void **state)
{
    (void)state;
    struct sophon_prep_params in = sample_params(), out;
    uint8_t buf[SOPHON_REQUEST_LEN], again[SOPHON_REQUEST_LEN];
    uint16_t version = 0;

    in.out_w = 160;
    in.out_h = 288;
    assert_int_equal(sophon_request_fits(&in, SOPHON_WIRE_V1), 1);
    assert_int_equal(sophon_request_encode_as(buf, sizeof(buf), &in, SOPHON_WIRE_V1),
                     SOPHON_REQUEST_LEN_V1);
    assert_int_equal(sophon__get_le16(buf + 4), 1);
    assert_int_equal(sophon__get_le16(buf + 6), 60);
    assert_int_equal(sophon__get_le32(buf + 24), 160);
    assert_int_equal(sophon__get_le32(buf + 28), 288);
    assert_int_equal(buf[32], SOPHON_FORMAT_F32);
    assert_int_equal(buf[33], 1);
    assert_int_equal(sophon__get_le32(buf + 36), 0x3ef851ecu);
    assert_int_equal(sophon_request_decode(&out, &version, buf, SOPHON_REQUEST_LEN_V1), 0);
    assert_int_equal(version, SOPHON_WIRE_V1);
    assert_int_equal(out.out_w, 160);
    assert_int_equal(out.out_h, 288);
    assert_int_equal(out.resize_w, 0); /* the box resized to the output */
    assert_int_equal(out.resize_h, 0);
    assert_int_equal(out.stage, SOPHON_WIRE_PIXELS);
    assert_int_equal(sophon_request_encode_as(again, sizeof(again), &out, SOPHON_WIRE_V1),
                     SOPHON_REQUEST_LEN_V1);
    assert_memory_equal(again, buf, SOPHON_REQUEST_LEN_V1);
    /* An explicit resize equal to the output, window at 0: still RandomResizedCrop. */
    in.resize_w = 160;
    in.resize_h = 288;
    assert_int_equal(sophon_request_fits(&in, SOPHON_WIRE_V1), 1);
    assert_int_equal(sophon_request_encode_as(again, sizeof(again), &in, SOPHON_WIRE_V1),
                     SOPHON_REQUEST_LEN_V1);
    assert_memory_equal(again, buf, SOPHON_REQUEST_LEN_V1);
    assert_int_equal(
        sophon_request_encode_as(again, SOPHON_REQUEST_LEN_V1 - 1, &in, SOPHON_WIRE_V1), -ERANGE);
}

struct bad_field {
    const char *what;
    size_t off, width;
    uint32_t value;
};

static void refuse_each(const struct bad_field *cases, size_t n, const uint8_t *good, size_t len)
{
    struct sophon_prep_params out;
    uint8_t bad[SOPHON_REQUEST_LEN + 1];

    for (size_t i = 0; i < n; i++) {
        memcpy(bad, good, len);
        if (cases[i].width == 4)
            sophon__put_le32(bad + cases[i].off, cases[i].value);
        else if (cases[i].width == 2)
            sophon__put_le16(bad + cases[i].off, (uint16_t)cases[i].value);
        else
            bad[cases[i].off] = (uint8_t)cases[i].value;
        if (sophon_request_decode(&out, NULL, bad, len) != -EINVAL)
            fail_msg("request with bad %s accepted", cases[i].what);
    }
    /* Truncated, trailing bytes, nothing at all. */
    assert_int_equal(sophon_request_decode(&out, NULL, good, len - 1), -EINVAL);
    memcpy(bad, good, len);
    assert_int_equal(sophon_request_decode(&out, NULL, bad, len + 1), -EINVAL);
    assert_int_equal(sophon_request_decode(&out, NULL, NULL, 0), -EINVAL);
}

/* Each case breaks one field of a valid request; every one must be refused with -EINVAL. */
static void request_decode_refuses_malformed(void **state)
{
    (void)state;
    static const struct bad_field v2[] = {
        {"magic", 0, 1, 'X'},
        {"layout version 0", 4, 2, 0},
        {"layout version 4", 4, 2, 4},
        {"layout version 1 at length 80", 4, 2, 1},
        {"header length", 6, 2, 79},
        {"box w 0", 16, 4, 0},
        {"box h 0", 20, 4, 0},
        {"box end past 2^32", 8, 4, UINT32_MAX},
        {"resize w 0", 24, 4, 0},
        {"resize h 0", 28, 4, 0},
        {"resize w over the limit", 24, 4, SOPHON_MAX_RESIZE_SIDE + 1},
        {"window x outside", 32, 4, 118},
        {"window y outside", 36, 4, 33},
        {"out w 0", 40, 4, 0},
        {"out h over the limit", 44, 4, SOPHON_MAX_SIDE + 1},
        {"format", 48, 1, 7},
        {"flags", 49, 1, 0x80},
        {"stage 0", 50, 1, 0},
        {"stage 3", 50, 1, 3},
        {"fallback for pixels", 51, 1, 1},
        {"crop bytes for pixels", 52, 4, 1000},
        {"mean inf", 60, 4, 0x7f800000u},
        {"std NaN", 68, 4, 0x7fc00000u},
        {"std 0", 76, 4, 0},
    };
    static const struct bad_field v1[] = {
        {"magic", 0, 1, 'X'},
        {"layout version 2 at length 60", 4, 2, 2},
        {"header length", 6, 2, 59},
        {"box w 0", 16, 4, 0},
        {"out w 0", 24, 4, 0},
        {"out h over the limit", 28, 4, SOPHON_MAX_SIDE + 1},
        {"format", 32, 1, 7},
        {"flags", 33, 1, 0x80},
        {"reserved", 34, 2, 1},
        {"mean inf", 40, 4, 0x7f800000u},
        {"std NaN", 48, 4, 0x7fc00000u},
        {"std 0", 52, 4, 0},
    };
    struct sophon_prep_params in = sample_params();
    uint8_t good[SOPHON_REQUEST_LEN];

    assert_int_equal(sophon_prep_set_val(&in, 500, 375, 256, 224), 0);
    assert_int_equal(sophon_request_encode(good, sizeof(good), &in), SOPHON_REQUEST_LEN_V3);
    refuse_each(v2, sizeof(v2) / sizeof(v2[0]), good, SOPHON_REQUEST_LEN_V3);
    /* A crop with an unknown fallback. */
    in.stage = SOPHON_WIRE_CROP;
    assert_int_equal(sophon_request_encode(good, sizeof(good), &in), SOPHON_REQUEST_LEN_V3);
    {
        static const struct bad_field crop[] = {{"fallback 2", 51, 1, 2}};
        refuse_each(crop, 1, good, SOPHON_REQUEST_LEN_V3);
    }
    in = sample_params();
    assert_int_equal(sophon_request_encode_as(good, sizeof(good), &in, SOPHON_WIRE_V1),
                     SOPHON_REQUEST_LEN_V1);
    refuse_each(v1, sizeof(v1) / sizeof(v1[0]), good, SOPHON_REQUEST_LEN_V1);
}

static void request_encode_refuses_invalid(void **state)
{
    (void)state;
    struct sophon_prep_params p = sample_params();
    uint8_t buf[SOPHON_REQUEST_LEN];

    assert_int_equal(sophon_request_encode(buf, sizeof(buf) - 1, &p), -ERANGE);
    assert_int_equal(sophon_request_encode_as(buf, sizeof(buf), &p, 0), -EINVAL);
    assert_int_equal(sophon_request_encode_as(buf, sizeof(buf), &p, 4), -EINVAL);
    p.std[1] = 0.0f;
    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &p), -EINVAL);
    p = sample_params();
    p.box_w = 0;
    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &p), -EINVAL);
    p = sample_params();
    p.stage = 0;
    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &p), -EINVAL);
    p = sample_params();
    p.resize_w = 300;
    p.resize_h = 300;
    p.win_x = 77; /* 77 + 224 > 300 */
    assert_int_equal(sophon_request_encode(buf, sizeof(buf), &p), -EINVAL);
}

static struct sophon_response pixels(uint16_t version)
{
    struct sophon_response r = {.version = version,
                                .stage = SOPHON_WIRE_PIXELS,
                                .format = SOPHON_FORMAT_U8,
                                .flip = 1,
                                .channels = 3,
                                .width = 4,
                                .height = 2,
                                .cpu_ns = 123456789012ull,
                                .source_bytes = 5000000000ull,
                                .payload_len = 24};
    return r;
}

static void response_roundtrip(void **state)
{
    (void)state;
    static const uint16_t versions[] = {SOPHON_WIRE_V1, SOPHON_WIRE_V2, SOPHON_WIRE_V3};

    for (size_t v = 0; v < 3; v++) {
        struct sophon_response in = pixels(versions[v]), out;
        size_t hdr = sophon_response_header_len(versions[v]);
        uint8_t buf[SOPHON_RESPONSE_HDR_LEN + 96];
        const uint8_t *payload = NULL;

        assert_int_equal(hdr, versions[v] == SOPHON_WIRE_V1 ? 48 : 56);
        assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), (int)hdr);
        for (int i = 0; i < 24; i++)
            buf[hdr + i] = (uint8_t)i;
        assert_int_equal(sophon_response_decode(&out, &payload, buf, hdr + 24), 0);
        assert_ptr_equal(payload, buf + hdr);
        assert_int_equal(out.version, versions[v]);
        assert_int_equal(out.stage, SOPHON_WIRE_PIXELS);
        assert_int_equal(out.width, 4);
        assert_int_equal(out.height, 2);
        assert_int_equal(out.flip, 1);
        assert_true(out.cpu_ns == 123456789012ull);
        assert_true(out.source_bytes == 5000000000ull);
        assert_true(out.payload_len == 24);
        /* The payload must be exactly as long as the geometry says. */
        assert_int_equal(sophon_response_decode(&out, &payload, buf, hdr + 23), -EINVAL);
        in.format = SOPHON_FORMAT_F32;
        assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), -EINVAL);
        in.payload_len = 96;
        assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), (int)hdr);
        assert_int_equal(sophon_response_decode(&out, &payload, buf, hdr + 24), -EINVAL);
        assert_int_equal(sophon_response_decode(&out, &payload, buf, hdr + 96), 0);
    }
}

/* Layout 3's fields at wire.h's offsets (layout 2's too); a crop (the crop stage's answer) only
 * in layout 3. */
static void response_v2_layout(void **state)
{
    (void)state;
    struct sophon_response in = pixels(SOPHON_WIRE_V3), out;
    uint8_t buf[SOPHON_RESPONSE_HDR_LEN + 24] = {0};
    const uint8_t *payload;

    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), 56);
    assert_int_equal(buf[8], SOPHON_WIRE_PIXELS);
    assert_int_equal(buf[9], SOPHON_FORMAT_U8);
    assert_int_equal(buf[10], 1);
    assert_int_equal(buf[11], 0);
    assert_int_equal(buf[12], 3);
    assert_int_equal(sophon__get_le32(buf + 16), 4);
    assert_int_equal(sophon__get_le32(buf + 20), 2);
    assert_true(sophon__get_le64(buf + 32) == 123456789012ull);
    assert_true(sophon__get_le64(buf + 40) == 5000000000ull);
    assert_true(sophon__get_le64(buf + 48) == 24);
    /* Pixels have no origin. */
    in.origin_x = 8;
    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), -EINVAL);
    /* A crop: a JPEG of any length, its size and its place in the source. */
    in = (struct sophon_response){.version = SOPHON_WIRE_V3,
                                  .stage = SOPHON_WIRE_CROP,
                                  .channels = 3,
                                  .width = 48,
                                  .height = 32,
                                  .origin_x = 16,
                                  .origin_y = 64,
                                  .payload_len = 24};
    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), 56);
    assert_int_equal(sophon__get_le32(buf + 24), 16);
    assert_int_equal(sophon__get_le32(buf + 28), 64);
    assert_int_equal(sophon_response_decode(&out, &payload, buf, sizeof(buf)), 0);
    assert_int_equal(out.stage, SOPHON_WIRE_CROP);
    assert_int_equal(out.origin_x, 16);
    assert_int_equal(out.origin_y, 64);
    in.version = SOPHON_WIRE_V1;
    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), -EINVAL);
    in.version = SOPHON_WIRE_V2;
    assert_int_equal(sophon_response_encode_header(buf, sizeof(buf), &in), -EINVAL);
    /* A crop in a layout 2 response is refused too. */
    in.version = SOPHON_WIRE_V3;
    sophon_response_encode_header(buf, sizeof(buf), &in);
    sophon__put_le16(buf + 4, 2);
    assert_int_equal(sophon_response_decode(&out, &payload, buf, sizeof(buf)), -EINVAL);
    /* Reserved bytes and unknown stages are refused. */
    in.version = SOPHON_WIRE_V3;
    sophon_response_encode_header(buf, sizeof(buf), &in);
    buf[14] = 1;
    assert_int_equal(sophon_response_decode(&out, &payload, buf, sizeof(buf)), -EINVAL);
    buf[14] = 0;
    buf[8] = 3;
    assert_int_equal(sophon_response_decode(&out, &payload, buf, sizeof(buf)), -EINVAL);
    /* A later layout that appends fields is read as layout 3. */
    {
        uint8_t longer[SOPHON_RESPONSE_HDR_LEN + 8 + 24] = {0};

        in = pixels(SOPHON_WIRE_V3);
        sophon_response_encode_header(longer, sizeof(longer), &in);
        sophon__put_le16(longer + 4, 4);
        sophon__put_le16(longer + 6, SOPHON_RESPONSE_HDR_LEN + 8);
        assert_int_equal(sophon_response_decode(&out, &payload, longer, sizeof(longer)), 0);
        assert_ptr_equal(payload, longer + SOPHON_RESPONSE_HDR_LEN + 8);
        assert_int_equal(out.width, 4);
    }
}

/* The selector's byte figures are the sizes of the responses to the loader's requests. */
static void response_sizes_are_the_selectors(void **state)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;

    (void)state;
    p.box_w = p.box_h = 500;
    p.out_w = p.out_h = SOPHON_SEL_SIDE;
    assert_int_equal(sophon_response_size(&p), SOPHON_SEL_U8_BYTES);
    assert_int_equal(sophon_response_size(&p), sophon_stage_bytes(SOPHON_STAGE_U8, 224));
    p.format = SOPHON_FORMAT_F32;
    assert_int_equal(sophon_response_size(&p), SOPHON_SEL_F32_BYTES);
    /* Any side, and the validation window's: the bytes of the output, not of the resize. */
    p.out_w = p.out_h = 160;
    assert_int_equal(sophon_response_size(&p), sophon_stage_bytes(SOPHON_STAGE_F32, 160));
    assert_int_equal(sophon_prep_set_val(&p, 500, 375, 320, 288), 0);
    assert_int_equal(sophon_response_size(&p), sophon_stage_bytes(SOPHON_STAGE_F32, 288));
    p.format = SOPHON_FORMAT_U8;
    assert_int_equal(sophon_response_size(&p), sophon_stage_bytes(SOPHON_STAGE_U8, 288));
    assert_int_equal(sophon_response_size_as(&p, SOPHON_WIRE_V1), 288 * 288 * 3 + 48);
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

static void cpu_roundtrip(void **state)
{
    (void)state;
    struct sophon_cpu_reply in = {0xfedcba9876543210ull, 4000123, 123456789012345ull,
                                  987654321098765ull},
                            out;
    uint8_t buf[SOPHON_CPU_MSG_LEN + 8];

    assert_int_equal(sophon_cpu_encode(buf, SOPHON_CPU_MSG_LEN - 1, &in), -ERANGE);
    assert_int_equal(sophon_cpu_encode(buf, sizeof(buf), &in), SOPHON_CPU_MSG_LEN);
    assert_int_equal(sophon_cpu_decode(&out, buf, SOPHON_CPU_MSG_LEN), 0);
    assert_true(out.host == in.host && out.pid == in.pid && out.cpu_ns == in.cpu_ns &&
                out.clock_ns == in.clock_ns);
    /* Short, or another message's magic: refused. */
    assert_int_equal(sophon_cpu_decode(&out, buf, SOPHON_CPU_MSG_LEN - 1), -EINVAL);
    uint8_t probe[SOPHON_PROBE_MSG_LEN];
    struct sophon_probe_reply pr = {0};
    assert_int_equal(sophon_probe_encode(probe, sizeof(probe), &pr), SOPHON_PROBE_MSG_LEN);
    assert_int_equal(sophon_cpu_decode(&out, probe, sizeof(probe)), -EINVAL);
    /* A later layout may append fields: read by what this one knows. */
    buf[4] = 2;
    buf[6] = SOPHON_CPU_MSG_LEN + 8;
    assert_int_equal(sophon_cpu_decode(&out, buf, sizeof(buf)), 0);
    assert_true(out.cpu_ns == in.cpu_ns);
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
        cmocka_unit_test(request_v2_layout),
        cmocka_unit_test(request_v1_roundtrip),
        cmocka_unit_test(request_decode_refuses_malformed),
        cmocka_unit_test(request_encode_refuses_invalid),
        cmocka_unit_test(response_roundtrip),
        cmocka_unit_test(response_v2_layout),
        cmocka_unit_test(response_sizes_are_the_selectors),
        cmocka_unit_test(format_names),
        cmocka_unit_test(probe_roundtrip),
        cmocka_unit_test(cpu_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
