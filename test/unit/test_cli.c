/*
 * test_cli.c - the command's connection (client/cli.c) against a librados that records what it
 * is told: the operation timeouts are set where ceph.conf and CEPH_ARGS (read first) left them
 * at librados's default, and left as they set them otherwise; and what a timed-out operation's
 * error says.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"

int __wrap_rados_create2(rados_t *cluster, const char *const clustername, const char *const name,
                         uint64_t flags);
int __wrap_rados_conf_set(rados_t cluster, const char *option, const char *value);
int __wrap_rados_conf_read_file(rados_t cluster, const char *path);
int __wrap_rados_conf_get(rados_t cluster, const char *option, char *buf, size_t len);
int __wrap_rados_conf_parse_env(rados_t cluster, const char *var);
int __wrap_rados_connect(rados_t cluster);
void __wrap_rados_shutdown(rados_t cluster);

/* Every call, in order: "set OPTION=VALUE", "read", "env", "connect", "shutdown". */
static char calls[32][128];
static int ncalls, connect_rc;
/* What ceph.conf set rados_osd_op_timeout to ("0": librados's default, never). */
static const char *conf_osd_timeout = "0";
static int handle; /* what rados_create2 hands out */

static void record(const char *what, const char *option, const char *value)
{
    assert_true(ncalls < 32);
    if (option != NULL)
        snprintf(calls[ncalls++], sizeof(calls[0]), "%s %s=%s", what, option, value);
    else
        snprintf(calls[ncalls++], sizeof(calls[0]), "%s", what);
}

int __wrap_rados_create2(rados_t *cluster, const char *const clustername, const char *const name,
                         uint64_t flags)
{
    (void)clustername, (void)name, (void)flags;
    *cluster = (rados_t)&handle;
    return 0;
}

int __wrap_rados_conf_set(rados_t cluster, const char *option, const char *value)
{
    assert_ptr_equal(cluster, &handle);
    record("set", option, value);
    return 0;
}

int __wrap_rados_conf_read_file(rados_t cluster, const char *path)
{
    (void)cluster, (void)path;
    record("read", NULL, NULL);
    return 0;
}

int __wrap_rados_conf_get(rados_t cluster, const char *option, char *buf, size_t len)
{
    (void)cluster;
    /* The value set last, else ceph.conf's for the OSD timeout, else librados's default. */
    const char *v = strcmp(option, "rados_osd_op_timeout") == 0 ? conf_osd_timeout : "0";
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "set %s=", option);
    for (int i = 0; i < ncalls; i++)
        if (strncmp(calls[i], prefix, strlen(prefix)) == 0)
            v = calls[i] + strlen(prefix);
    snprintf(buf, len, "%s", v);
    return 0;
}

int __wrap_rados_conf_parse_env(rados_t cluster, const char *var)
{
    (void)cluster, (void)var;
    record("env", NULL, NULL);
    return 0;
}

int __wrap_rados_connect(rados_t cluster)
{
    (void)cluster;
    record("connect", NULL, NULL);
    return connect_rc;
}

void __wrap_rados_shutdown(rados_t cluster)
{
    (void)cluster;
    record("shutdown", NULL, NULL);
}

static int find(const char *call)
{
    for (int i = 0; i < ncalls; i++)
        if (strcmp(calls[i], call) == 0)
            return i;
    return -1;
}

/* Both operation timeouts set after ceph.conf and CEPH_ARGS are read (what rados_conf_set sets,
 * they cannot change), before the connect; a timeout ceph.conf set is left as it is. */
static void test_timeouts_after_conf(void **state)
{
    (void)state;
    struct cli c = {.prog = "sophon test"};
    ncalls = 0;
    connect_rc = 0;
    conf_osd_timeout = "0";
    assert_int_equal(cli_connect(&c), 0);
    int osd = find("set rados_osd_op_timeout=" CLI_OP_TIMEOUT);
    int mon = find("set rados_mon_op_timeout=" CLI_OP_TIMEOUT);
    int read = find("read"), env = find("env"), conn = find("connect");
    assert_true(osd >= 0 && mon >= 0 && read >= 0 && env >= 0 && conn >= 0);
    assert_true(read < env && env < osd && env < mon && osd < conn && mon < conn);
    assert_true(atoi(CLI_OP_TIMEOUT) > 0);
    cli_disconnect(&c);
    assert_true(find("shutdown") > conn);

    ncalls = 0;
    conf_osd_timeout = "7.000000";
    assert_int_equal(cli_connect(&c), 0);
    assert_int_equal(find("set rados_osd_op_timeout=" CLI_OP_TIMEOUT), -1);
    assert_true(find("set rados_mon_op_timeout=" CLI_OP_TIMEOUT) >= 0);
    cli_disconnect(&c);
}

/* What cli_error printed while fn ran: stderr into a temporary file. */
static void captured(char *out, size_t len, void (*fn)(void))
{
    char path[] = "/tmp/test_cli.XXXXXX";
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    fn();
    fflush(stderr);
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

static void timed_out_call(void)
{
    struct cli c = {.prog = "sophon prep", .pool = "sophon"};
    cli_class_error(&c, "sophon.prep", "a/b.jpg", -ETIMEDOUT);
}

/* A timed-out operation names the object, the timeout, and where to look. */
static void test_timeout_message(void **state)
{
    (void)state;
    char out[1024];
    captured(out, sizeof(out), timed_out_call);
    assert_non_null(strstr(out, "sophon prep: sophon.prep on a/b.jpg: no answer"));
    assert_non_null(strstr(out, "ETIMEDOUT, " CLI_OP_TIMEOUT " s"));
    assert_non_null(strstr(out, "`ceph osd map sophon a/b.jpg`"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeouts_after_conf),
        cmocka_unit_test(test_timeout_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
