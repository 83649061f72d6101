/*
 * pool_pgs.c - a pool's placement groups and the cluster's OSDs, asked of the monitors
 * (pool_pgs.h).
 */
#include "pool_pgs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

int sophon__json_uint(const char *json, size_t len, const char *key, unsigned *out)
{
    char pat[64];
    if (json == NULL || out == NULL || key == NULL)
        return -EPROTO;
    int n = snprintf(pat, sizeof(pat), "\"%s\":", key);
    if (n < 0 || (size_t)n >= sizeof(pat))
        return -EPROTO;
    size_t plen = (size_t)n;
    for (size_t i = 0; i + plen <= len; i++) {
        if (memcmp(json + i, pat, plen) != 0)
            continue;
        size_t j = i + plen;
        while (j < len && json[j] == ' ')
            j++;
        unsigned long v = 0;
        size_t digits = 0;
        for (; j < len && json[j] >= '0' && json[j] <= '9'; j++, digits++) {
            v = v * 10 + (unsigned long)(json[j] - '0');
            if (v > UINT_MAX)
                return -EPROTO;
        }
        if (digits == 0)
            return -EPROTO;
        *out = (unsigned)v;
        return 0;
    }
    return -EPROTO;
}

/* Runs one monitor command and takes the unsigned `key` from its JSON answer. */
static int mon_uint(rados_t cluster, const char *cmd, const char *key, unsigned *out)
{
    char *buf = NULL, *status = NULL;
    size_t buf_len = 0, status_len = 0;
    const char *argv[1] = {cmd};
    int r = rados_mon_command(cluster, argv, 1, "", 0, &buf, &buf_len, &status, &status_len);
    if (r >= 0)
        r = sophon__json_uint(buf, buf_len, key, out);
    if (buf != NULL)
        rados_buffer_free(buf);
    if (status != NULL)
        rados_buffer_free(status);
    return r < 0 ? r : 0;
}

int sophon__pool_pgs(rados_t cluster, const char *pool, unsigned *pg_num, unsigned *osds_in)
{
    char cmd[512];
    if (pool == NULL || pg_num == NULL || osds_in == NULL)
        return -EINVAL;
    for (const char *p = pool; *p != '\0'; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            return -EINVAL;
    int n = snprintf(cmd, sizeof(cmd),
                     "{\"prefix\": \"osd pool get\", \"pool\": \"%s\", \"var\": \"pg_num\", "
                     "\"format\": \"json\"}",
                     pool);
    if (n < 0 || (size_t)n >= sizeof(cmd))
        return -EINVAL;
    int r = mon_uint(cluster, cmd, "pg_num", pg_num);
    if (r == 0)
        r = mon_uint(cluster, "{\"prefix\": \"osd stat\", \"format\": \"json\"}", "num_in_osds",
                     osds_in);
    return r;
}

int sophon__pgs_too_few(unsigned pg_num, unsigned osds, unsigned *suggest)
{
    unsigned long long want = (unsigned long long)SOPHON__PGS_PER_OSD * osds, p = 1;
    if (osds == 0 || pg_num >= want)
        return 0;
    if (suggest != NULL) {
        while (p < want)
            p *= 2;
        *suggest = p > UINT_MAX ? UINT_MAX : (unsigned)p;
    }
    return 1;
}
