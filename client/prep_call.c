/*
 * prep_call.c - prep and probe through the sophon class, and the same request run locally.
 */
#include "prep_call.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "prep_response.h"
#include "sophon_common.h"

int sophon__remote_probe(struct sophon_probe_reply *out, rados_ioctx_t io, const char *oid)
{
    char buf[256];
    int n = rados_exec(io, oid, "sophon", "probe", NULL, 0, buf, sizeof(buf));
    if (n < 0)
        return n;
    return sophon_probe_decode(out, (const uint8_t *)buf, (size_t)n) < 0 ? -EPROTO : 0;
}

int sophon__class_version(struct sophon_version_info *out, rados_ioctx_t io, const char *oid)
{
    /* Larger than today's reply so that a newer class with a longer one still fits. */
    char buf[256];

    if (out == NULL || io == NULL || oid == NULL)
        return -EINVAL;
    int n = rados_exec(io, oid, "sophon", "version", NULL, 0, buf, sizeof(buf));
    if (n < 0)
        return n;
    return sophon_version_decode(out, (const uint8_t *)buf, (size_t)n) < 0 ? -EPROTO : 0;
}

int sophon__class_wire(uint16_t *out, rados_ioctx_t io, const char *oid)
{
    struct sophon_version_info v;
    int r = sophon__class_version(&v, io, oid);

    if (r < 0)
        return r;
    *out = v.wire_version < SOPHON_WIRE_LATEST ? v.wire_version : SOPHON_WIRE_LATEST;
    return 0;
}

int sophon__remote_prep(char **resp, size_t *resp_len, rados_ioctx_t io, const char *oid,
                        const struct sophon_prep_params *p, uint16_t version)
{
    uint8_t req[SOPHON_REQUEST_LEN];
    struct sophon_response h;
    const uint8_t *payload;
    char *out = NULL;
    size_t out_len = 0;
    int prval = 0;

    int r = sophon_request_encode_as(req, sizeof(req), p, version);
    if (r < 0)
        return r;
    size_t req_len = (size_t)r;
    /* rados_read_op_exec lets librados size the reply; rados_exec would need a guess. */
    rados_read_op_t op = rados_create_read_op();
    if (op == NULL)
        return -ENOMEM;
    rados_read_op_exec(op, "sophon", "prep", (const char *)req, req_len, &out, &out_len, &prval);
    r = rados_read_op_operate(op, io, oid, 0);
    rados_release_read_op(op);
    if (r == 0 && prval < 0)
        r = prval;
    if (r < 0) {
        if (out != NULL)
            rados_buffer_free(out);
        return r;
    }
    if (sophon_response_decode(&h, &payload, (const uint8_t *)out, out_len) < 0) {
        rados_buffer_free(out);
        return -EPROTO;
    }
    *resp = out;
    *resp_len = out_len;
    return 0;
}

int sophon__local_prep(uint8_t **resp, size_t *resp_len, const uint8_t *jpeg, size_t len,
                       const struct sophon_prep_params *p, char *err, size_t errlen)
{
    uint64_t size = sophon_prep_response_cap(p, len, SOPHON_WIRE_LATEST);
    if (size == 0) {
        sophon__seterr(err, errlen, "invalid output size or format");
        return -EINVAL;
    }
    uint8_t *buf = malloc(size);
    if (buf == NULL) {
        sophon__seterr(err, errlen, "no memory for a %llu-byte response", (unsigned long long)size);
        return -ENOMEM;
    }
    size_t n = 0;
    int r = sophon_prep_respond(buf, size, &n, jpeg, len, p, NULL, SOPHON_WIRE_LATEST, err, errlen);
    if (r < 0) {
        free(buf);
        return r;
    }
    *resp = buf;
    *resp_len = n;
    return 0;
}

int sophon__read_object(uint8_t **buf, size_t *len, rados_ioctx_t io, const char *oid, size_t max)
{
    uint64_t size;
    time_t mtime;
    int r = rados_stat(io, oid, &size, &mtime);
    if (r < 0)
        return r;
    if (size > max)
        return -EFBIG;
    return sophon__read_object_sized(buf, len, io, oid, size);
}

int sophon__read_object_sized(uint8_t **buf, size_t *len, rados_ioctx_t io, const char *oid,
                              uint64_t size)
{
    uint8_t *p = malloc(size > 0 ? size : 1);
    if (p == NULL)
        return -ENOMEM;
    size_t got = 0;
    /* rados_read() returns an int: read in pieces that fit one. */
    while (got < size) {
        size_t chunk = size - got > (1u << 30) ? (1u << 30) : size - got;
        int r = rados_read(io, oid, (char *)p + got, chunk, got);
        if (r < 0) {
            free(p);
            return r;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    *buf = p;
    *len = got;
    return 0;
}
