/*
 * cls_sophon.c - the sophon object class: JPEG preprocessing inside the Ceph OSD.
 *
 * Clients call its methods with rados_exec() or rados_read_op_exec() on a stored JPEG object so
 * that the OSD holding the object returns prepared pixels instead of the stored bytes, where that
 * cuts network traffic. The work itself is done by prep/, the same code the client links, so the
 * output is byte-identical wherever it was computed.
 *
 * Methods run on OSD op threads with the placement group locked: they keep no mutable global
 * state, allocate only what the request's limits allow, and return a negative errno (never exit,
 * abort or assert) on bad input.
 */
#include "objclass.h"

#include <errno.h>
#include <stdint.h>

#include "sophon_config.h"
#include "wire.h"

/* Level 0 reaches the OSD log by default: load messages and real errors only. */
#define SOPHON_LOG(level, fmt, ...) cls_log((level), "<cls> sophon: %s: " fmt, __func__, ##__VA_ARGS__)

/*
 * Copies len bytes into a buffer the OSD will own and free, and hands it over as the reply.
 */
static int reply(char **out, int *out_len, const uint8_t *buf, size_t len)
{
    char *p = cls_alloc(len);
    if (p == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < len; i++)
        p[i] = (char)buf[i];
    *out = p;
    *out_len = (int)len;
    return 0;
}

/*
 * version - a read method that returns the class version and the wire format version it speaks,
 * so that a client can detect a mismatched deployment before sending requests.
 */
static int version(cls_method_context_t ctx, char *in, int in_len, char **out, int *out_len)
{
    (void)ctx;
    (void)in;
    (void)in_len;
    struct sophon_version_info info = {
        .class_version = SOPHON_VERSION_NUMBER,
        .wire_version = SOPHON_WIRE_VERSION,
    };
    uint8_t buf[SOPHON_VERSION_MSG_LEN];
    int n = sophon_version_encode(buf, sizeof(buf), &info);
    if (n < 0) {
        SOPHON_LOG(0, "encoding failed: %d", n);
        return n;
    }
    return reply(out, out_len, buf, (size_t)n);
}

void __cls_init(void)
{
    cls_handle_t cls;
    cls_method_handle_t h_version;

    SOPHON_LOG(0, "loading class sophon %s (wire format %d)", SOPHON_VERSION_STRING,
               SOPHON_WIRE_VERSION);
    if (!cls_register("sophon", &cls)) {
        SOPHON_LOG(0, "cls_register failed");
        return;
    }
    cls_register_method(cls, "version", CLS_METHOD_RD, version, &h_version);
}
