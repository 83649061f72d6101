/*
 * test_cls_version.c - the sophon class's `version` method on the dev cluster, through librados
 * with cephx keys: client.sophon may call it, client.sophon-read may not.
 *
 * Needs CEPH_CONF pointing at the cluster (the ctest fixture sets it) and SOPHON_POOL.
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
#include "conn.h"
#include <rados/librados.h>

#include "sophon.h"
#include "sophon_config.h"
#include "wire.h"

static int setup(void **state)
{
    static struct conn c;
    connect_as(&c, "client.sophon");
    /* The object the calls are made on; its content does not matter to `version`. */
    assert_int_equal(rados_write_full(c.io, "test.version", "x", 1), 0);
    *state = &c;
    return 0;
}

static int teardown(void **state)
{
    struct conn *c = *state;
    rados_remove(c->io, "test.version");
    disconnect(c);
    return 0;
}

static void version_answers_with_sophon_key(void **state)
{
    struct conn *c = *state;
    char buf[64];
    struct sophon_version_info info;

    int n = rados_exec(c->io, "test.version", "sophon", "version", NULL, 0, buf, sizeof(buf));
    assert_int_equal(n, SOPHON_VERSION_MSG_LEN);
    assert_int_equal(sophon_version_decode(&info, (const uint8_t *)buf, (size_t)n), 0);
    assert_int_equal(info.class_version, SOPHON_VERSION_NUMBER);
    assert_int_equal(info.wire_version, SOPHON_WIRE_VERSION);
}

static void version_through_read_op(void **state)
{
    struct conn *c = *state;
    rados_read_op_t op = rados_create_read_op();
    char *out = NULL;
    size_t out_len = 0;
    int prval = 1;
    struct sophon_version_info info;

    rados_read_op_exec(op, "sophon", "version", NULL, 0, &out, &out_len, &prval);
    assert_int_equal(rados_read_op_operate(op, c->io, "test.version", 0), 0);
    rados_release_read_op(op);
    assert_int_equal(prval, 0);
    assert_int_equal(sophon_version_decode(&info, (const uint8_t *)out, out_len), 0);
    assert_int_equal(info.wire_version, SOPHON_WIRE_VERSION);
    rados_buffer_free(out);
}

static void version_through_library(void **state)
{
    struct conn *c = *state;
    struct sophon_class_version v;

    assert_int_equal(sophon_class_version_get(&v, c->io, "test.version"), 0);
    assert_int_equal(v.class_version, SOPHON_VERSION_NUMBER);
    assert_int_equal(v.wire_version, sophon_wire_version());
}

static void read_only_key_gets_eperm(void **state)
{
    struct conn *c = *state, ro;
    char buf[64];
    struct sophon_class_version v;

    connect_as(&ro, "client.sophon-read");
    /* The key may read the object... */
    assert_int_equal(rados_read(ro.io, "test.version", buf, sizeof(buf), 0), 1);
    /* ...but not call the class on it. */
    assert_int_equal(
        rados_exec(ro.io, "test.version", "sophon", "version", NULL, 0, buf, sizeof(buf)), -EPERM);
    assert_int_equal(sophon_class_version_get(&v, ro.io, "test.version"), -EPERM);
    disconnect(&ro);
    (void)c;
}

static void unknown_method_gets_eopnotsupp(void **state)
{
    struct conn *c = *state;
    char buf[64];

    assert_int_equal(
        rados_exec(c->io, "test.version", "sophon", "no_such_method", NULL, 0, buf, sizeof(buf)),
        -EOPNOTSUPP);
}

static void unknown_class_gets_eopnotsupp(void **state)
{
    struct conn *c = *state;
    char buf[64];

    assert_int_equal(rados_exec(c->io, "test.version", "sophon_no_such_class", "version", NULL, 0,
                                buf, sizeof(buf)),
                     -EOPNOTSUPP);
}

static void missing_object_gets_enoent(void **state)
{
    struct conn *c = *state;
    char buf[64];
    struct sophon_class_version v;

    assert_int_equal(
        rados_exec(c->io, "test.no-such-object", "sophon", "version", NULL, 0, buf, sizeof(buf)),
        -ENOENT);
    assert_int_equal(sophon_class_version_get(&v, c->io, "test.no-such-object"), -ENOENT);
}

static void small_reply_buffer_gets_erange(void **state)
{
    struct conn *c = *state;
    char buf[4];

    assert_int_equal(
        rados_exec(c->io, "test.version", "sophon", "version", NULL, 0, buf, sizeof(buf)), -ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_answers_with_sophon_key),
        cmocka_unit_test(version_through_read_op),
        cmocka_unit_test(version_through_library),
        cmocka_unit_test(read_only_key_gets_eperm),
        cmocka_unit_test(unknown_method_gets_eopnotsupp),
        cmocka_unit_test(unknown_class_gets_eopnotsupp),
        cmocka_unit_test(missing_object_gets_enoent),
        cmocka_unit_test(small_reply_buffer_gets_erange),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
