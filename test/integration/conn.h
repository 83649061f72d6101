/*
 * conn.h - the integration tests' connection to the dev cluster: $CEPH_CONF as a user has it,
 * the pool $SOPHON_POOL (default sophon), a client name per test. Include after cmocka.h.
 */
#ifndef SOPHON_TEST_CONN_H
#define SOPHON_TEST_CONN_H

#include <stdlib.h>

#include <rados/librados.h>

struct conn {
    rados_t cluster;
    rados_ioctx_t io;
};

static inline const char *pool_name(void)
{
    const char *p = getenv("SOPHON_POOL");
    return p != NULL ? p : "sophon";
}

static inline void connect_as(struct conn *c, const char *name)
{
    assert_int_equal(rados_create2(&c->cluster, "ceph", name, 0), 0);
    /* NULL: $CEPH_CONF, as a user would have it. */
    assert_int_equal(rados_conf_read_file(c->cluster, NULL), 0);
    assert_int_equal(rados_connect(c->cluster), 0);
    assert_int_equal(rados_ioctx_create(c->cluster, pool_name(), &c->io), 0);
}

static inline void disconnect(struct conn *c)
{
    rados_ioctx_destroy(c->io);
    rados_shutdown(c->cluster);
}

#endif
