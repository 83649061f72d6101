/*
 * test_pool_pgs.c - a pool's placement groups and the cluster's OSDs from the monitors' JSON,
 * and when the loader calls them too few (client/pool_pgs.h), against a librados whose monitor
 * commands answer from the test's strings.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool_pgs.h"

int __wrap_rados_mon_command(rados_t cluster, const char **cmd, size_t cmdlen, const char *inbuf,
                             size_t inbuflen, char **outbuf, size_t *outbuflen, char **outs,
                             size_t *outslen);
void __wrap_rados_buffer_free(char *buf);

/* What the monitors answer: to `osd pool get` and to `osd stat`, or an error for either. */
static const char *pool_json, *stat_json;
static int pool_rc, stat_rc;
static char last_pool_cmd[512];
static int buffers; /* handed out and not yet freed */

static char *dup_buffer(const char *s)
{
    char *b = malloc(strlen(s) + 1);
    assert_non_null(b);
    memcpy(b, s, strlen(s) + 1);
    buffers++;
    return b;
}

int __wrap_rados_mon_command(rados_t cluster, const char **cmd, size_t cmdlen, const char *inbuf,
                             size_t inbuflen, char **outbuf, size_t *outbuflen, char **outs,
                             size_t *outslen)
{
    (void)cluster;
    (void)inbuf;
    (void)inbuflen;
    assert_int_equal(cmdlen, 1);
    int is_pool = strstr(cmd[0], "\"osd pool get\"") != NULL;
    assert_true(is_pool || strstr(cmd[0], "\"osd stat\"") != NULL);
    if (is_pool)
        snprintf(last_pool_cmd, sizeof(last_pool_cmd), "%s", cmd[0]);
    int rc = is_pool ? pool_rc : stat_rc;
    const char *json = is_pool ? pool_json : stat_json;
    /* librados hands out both buffers also on an error (the status string says why). */
    *outs = dup_buffer(rc < 0 ? "error" : "");
    *outslen = strlen(*outs);
    *outbuf = dup_buffer(rc < 0 ? "" : json);
    *outbuflen = strlen(*outbuf);
    return rc;
}

void __wrap_rados_buffer_free(char *buf)
{
    buffers--;
    free(buf);
}

static int setup(void **state)
{
    (void)state;
    pool_json = "{\"pool\":\"images\",\"pool_id\":2,\"pg_num\":128}";
    stat_json = "{\"epoch\":16,\"num_osds\":3,\"num_up_osds\":3,\"osd_up_since\":1796561568,"
                "\"num_in_osds\":3,\"osd_in_since\":1796561561,\"num_remapped_pgs\":0}";
    pool_rc = stat_rc = 0;
    buffers = 0;
    last_pool_cmd[0] = '\0';
    return 0;
}

static void asks_the_pool_and_the_osds(void **state)
{
    (void)state;
    unsigned pgs = 0, osds = 0;
    assert_int_equal(sophon__pool_pgs(NULL, "images", &pgs, &osds), 0);
    assert_int_equal(pgs, 128);
    assert_int_equal(osds, 3);
    assert_non_null(strstr(last_pool_cmd, "\"pool\": \"images\""));
    assert_non_null(strstr(last_pool_cmd, "\"var\": \"pg_num\""));
    assert_int_equal(buffers, 0);
}

static void passes_the_monitors_errors(void **state)
{
    (void)state;
    unsigned pgs = 7, osds = 7;
    pool_rc = -ENOENT;
    assert_int_equal(sophon__pool_pgs(NULL, "gone", &pgs, &osds), -ENOENT);
    pool_rc = 0;
    stat_rc = -EACCES;
    assert_int_equal(sophon__pool_pgs(NULL, "images", &pgs, &osds), -EACCES);
    assert_int_equal(buffers, 0);
}

static void answers_without_the_number_are_protocol_errors(void **state)
{
    (void)state;
    unsigned pgs = 0, osds = 0;
    pool_json = "{\"pool\":\"images\",\"pool_id\":2}";
    assert_int_equal(sophon__pool_pgs(NULL, "images", &pgs, &osds), -EPROTO);
    pool_json = "{\"pool\":\"images\",\"pg_num\":\"many\"}";
    assert_int_equal(sophon__pool_pgs(NULL, "images", &pgs, &osds), -EPROTO);
    pool_json = "{\"pg_num\":99999999999}";
    assert_int_equal(sophon__pool_pgs(NULL, "images", &pgs, &osds), -EPROTO);
    pool_json = "";
    assert_int_equal(sophon__pool_pgs(NULL, "images", &pgs, &osds), -EPROTO);
    assert_int_equal(buffers, 0);
}

static void refuses_names_json_cannot_carry_as_is(void **state)
{
    (void)state;
    unsigned pgs = 0, osds = 0;
    assert_int_equal(sophon__pool_pgs(NULL, "a\"b", &pgs, &osds), -EINVAL);
    assert_int_equal(sophon__pool_pgs(NULL, "a\\b", &pgs, &osds), -EINVAL);
    assert_int_equal(sophon__pool_pgs(NULL, "a\nb", &pgs, &osds), -EINVAL);
    assert_int_equal(sophon__pool_pgs(NULL, NULL, &pgs, &osds), -EINVAL);
    assert_string_equal(last_pool_cmd, ""); /* never asked */
}

static void json_numbers(void **state)
{
    (void)state;
    unsigned v = 0;
    const char *j = "{\"num_osds\": 12, \"num_in_osds\":11}";
    assert_int_equal(sophon__json_uint(j, strlen(j), "num_osds", &v), 0);
    assert_int_equal(v, 12);
    assert_int_equal(sophon__json_uint(j, strlen(j), "num_in_osds", &v), 0);
    assert_int_equal(v, 11);
    assert_int_equal(sophon__json_uint(j, strlen(j), "osds", &v), -EPROTO);
    /* The length bounds the search: the number cut off is not read past it. */
    assert_int_equal(sophon__json_uint(j, strlen(j) - 3, "num_in_osds", &v), -EPROTO);
    assert_int_equal(sophon__json_uint("{\"n\":4294967295}", 16, "n", &v), 0);
    assert_int_equal(v, UINT_MAX);
    assert_int_equal(sophon__json_uint("{\"n\":4294967296}", 16, "n", &v), -EPROTO);
    assert_int_equal(sophon__json_uint("{\"n\":-1}", 8, "n", &v), -EPROTO);
}

static void too_few_and_what_to_suggest(void **state)
{
    (void)state;
    unsigned want = 0;
    assert_int_equal(sophon__pgs_too_few(16, 3, &want), 1); /* vstart.sh's old default */
    assert_int_equal(want, 128);
    assert_int_equal(sophon__pgs_too_few(95, 3, &want), 1);
    assert_int_equal(sophon__pgs_too_few(96, 3, &want), 0);
    assert_int_equal(sophon__pgs_too_few(128, 3, &want), 0);
    assert_int_equal(sophon__pgs_too_few(31, 1, &want), 1);
    assert_int_equal(want, 32);
    assert_int_equal(sophon__pgs_too_few(32, 1, NULL), 0);
    assert_int_equal(sophon__pgs_too_few(1024, 100, &want), 1);
    assert_int_equal(want, 4096);
    assert_int_equal(sophon__pgs_too_few(0, 0, &want), 0); /* nothing to tell */
    assert_int_equal(sophon__pgs_too_few(1, UINT_MAX, &want), 1);
    assert_int_equal(want, UINT_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(asks_the_pool_and_the_osds, setup),
        cmocka_unit_test_setup(passes_the_monitors_errors, setup),
        cmocka_unit_test_setup(answers_without_the_number_are_protocol_errors, setup),
        cmocka_unit_test_setup(refuses_names_json_cannot_carry_as_is, setup),
        cmocka_unit_test(json_numbers),
        cmocka_unit_test(too_few_and_what_to_suggest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
