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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_roundtrip),
        cmocka_unit_test(version_encode_small_buffer),
        cmocka_unit_test(version_decode_refuses_malformed),
        cmocka_unit_test(version_decode_accepts_longer_layout),
        cmocka_unit_test(le_helpers),
        cmocka_unit_test(version_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
