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
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "prep.h"
#include "prep_response.h"
#include "sophon_common.h"
#include "sophon_config.h"
#include "wire.h"

/*
 * The budget of one call. The stored object is read whole into OSD memory, so its size is
 * bounded too; the pipeline's own limits bound the decoded image, the scans and the output.
 * Worst case per call: the object, the output, and the decoder's working memory (rows of the
 * crop, bounded by max_pixels).
 */
static const struct sophon_limits osd_limits = SOPHON_LIMITS_INIT;
_Static_assert(SOPHON_MAX_OBJECT_BYTES < INT_MAX, "cls_read takes the length as an int");
_Static_assert(SOPHON_WIRE_VERSION == SOPHON_WIRE_LATEST,
               "the class speaks the wire format its prep/ implements (CMakeLists.txt)");

/*
 * The memory all of this OSD's sophon calls hold at once (sophon_config.h): each call reserves
 * sophon_prep_memory_bound of its request before it decodes and gives it back after. The one
 * piece of mutable state the class shares between its calls, atomic; methods run concurrently
 * on the OSD's op threads.
 */
static _Atomic uint64_t reserved_bytes;
#define MEMORY_BUDGET ((uint64_t)SOPHON_OSD_MEMORY_MB << 20)

/*
 * Reserves bytes from the budget. A call alone may take more than the budget (the per-call pixel
 * cap bounds it); one that would go over the budget while others hold part of it is refused
 * with -EBUSY at once, never queued: the client prepares that sample itself.
 */
static int reserve(uint64_t bytes)
{
    uint64_t held = atomic_load(&reserved_bytes);
    do {
        if (held > 0 && held + bytes > MEMORY_BUDGET)
            return -EBUSY;
    } while (!atomic_compare_exchange_weak(&reserved_bytes, &held, held + bytes));
    return 0;
}

static void release(uint64_t bytes)
{
    atomic_fetch_sub(&reserved_bytes, bytes);
}

/* Level 0 reaches the OSD log by default: load messages and real errors only. */
#define SOPHON_LOG(level, fmt, ...)                                                                \
    cls_log((level), "<cls> sophon: %s: " fmt, __func__, ##__VA_ARGS__)

/*
 * The level of a refusal: what a client sent or stored (a malformed request, a corrupt, odd or
 * oversized image) is not the OSD's error, and a client sending garbage must not fill the OSD's
 * log, so those go to level 5 (debug_objclass's in-memory level by default); anything else (no
 * memory, a failed read) is the OSD's and goes to level 0.
 */
static int refusal_level(int r)
{
    switch (-r) {
    case EINVAL:
    case EBADMSG:
    case EMEDIUMTYPE:
    case E2BIG:
    case EFBIG:
    case ENOSPC: /* a crop over the request's limit, with no fallback */
    case EDOM:   /* a crop that would not be exact for this file, with no fallback */
        return 5;
    default:
        return 0;
    }
}

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
 * read_object - reads the whole stored object, refusing an empty one (-EBADMSG: not a JPEG) and
 * one over SOPHON_MAX_OBJECT_BYTES (prep.h, -EFBIG) without reading more than one byte past
 * that. *buf is freed with cls_free().
 */
static int read_object(cls_method_context_t ctx, char **buf, int *len, const char *method)
{
    *buf = NULL;
    int r = cls_read(ctx, 0, (int)SOPHON_MAX_OBJECT_BYTES + 1, buf, len);
    if (r < 0) {
        SOPHON_LOG(0, "%s: reading the object failed: %d", method, r);
        return r;
    }
    if (*len == 0) {
        SOPHON_LOG(5, "%s: empty object, not a JPEG: %d", method, -EBADMSG);
        cls_free(*buf);
        *buf = NULL;
        return -EBADMSG;
    }
    if ((size_t)*len > SOPHON_MAX_OBJECT_BYTES) {
        SOPHON_LOG(5, "%s: object over %u bytes: %d", method, SOPHON_MAX_OBJECT_BYTES, -EFBIG);
        cls_free(*buf);
        *buf = NULL;
        return -EFBIG;
    }
    return 0;
}

/*
 * probe - a read method that returns the stored JPEG's header facts (size, components,
 * subsampling, progressive, colour space) and the object's size, without decoding it. Scans are
 * not counted (that walks the whole object); the reply says 0.
 */
static int probe(cls_method_context_t ctx, char *in, int in_len, char **out, int *out_len)
{
    struct sophon_probe_reply reply_msg = {0};
    uint8_t buf[SOPHON_PROBE_MSG_LEN];
    char err[160] = "";
    char *data;
    int len, r;

    (void)in;
    (void)in_len;
    r = read_object(ctx, &data, &len, "probe");
    if (r < 0)
        return r;
    r = sophon_probe(&reply_msg.info, (const uint8_t *)data, (size_t)len, err, sizeof(err));
    cls_free(data);
    if (r < 0) {
        SOPHON_LOG(refusal_level(r), "probe: %s: %d", err, r);
        return r;
    }
    reply_msg.object_size = (uint64_t)len;
    r = sophon_probe_encode(buf, sizeof(buf), &reply_msg);
    if (r < 0)
        return r;
    SOPHON_LOG(10, "probe: %ux%u, %d bytes", reply_msg.info.width, reply_msg.info.height, len);
    return reply(out, out_len, buf, (size_t)r);
}

/*
 * admit - whether this OSD takes on request p for the stored JPEG jpeg[0..len): its header read
 * (a header that does not parse is left to the pipeline, which says why), an image over the
 * per-call cap refused (-E2BIG), and its memory bound reserved (*need; -EBUSY when the budget
 * is taken). Refusals are the client's to act on, logged at a debug level.
 */
static int admit(uint64_t *need, const uint8_t *jpeg, size_t len,
                 const struct sophon_prep_params *p)
{
    struct sophon_probe_info info;
    *need = 0;
    if (sophon_probe(&info, jpeg, len, NULL, 0) < 0)
        return 0;
    if ((uint64_t)info.width * info.height > SOPHON_OSD_MAX_PIXELS) {
        SOPHON_LOG(5, "prep: %ux%u is over this OSD's cap of %u megapixels a call: %d", info.width,
                   info.height, (unsigned)SOPHON_OSD_MAX_MEGAPIXELS, -E2BIG);
        return -E2BIG;
    }
    /* The bound counts the object read and the output (the reply) too; a crop that may fall
     * back to the pixels may take both. */
    uint64_t bytes = p->stage == SOPHON_WIRE_CROP ? sophon_prep_crop_memory_bound(&info, len, p) +
                                                        sophon_prep_crop_cap(p, len)
                                                  : 0;
    if (p->stage != SOPHON_WIRE_CROP || p->fallback == SOPHON_FALLBACK_PIXELS)
        bytes += sophon_prep_memory_bound(&info, len, p);
    if (reserve(bytes) < 0) {
        SOPHON_LOG(5, "prep: %llu bytes would exceed this OSD's %u MiB for sophon calls: %d",
                   (unsigned long long)bytes, (unsigned)SOPHON_OSD_MEMORY_MB, -EBUSY);
        return -EBUSY;
    }
    *need = bytes;
    return 0;
}

/*
 * prep - a read method that runs a prep request (wire.h) on the stored JPEG and returns the
 * response, in the request's own layout (a client of an older wire version gets the answer it
 * knows): a header with the geometry, format and CPU time, then the pixels or, for the crop
 * stage, the crop JPEG (prep_response.h).
 */
static int prep(cls_method_context_t ctx, char *in, int in_len, char **out, int *out_len)
{
    struct sophon_prep_params p;
    uint16_t version;
    char err[160] = "";
    char *data = NULL, *resp;
    uint64_t need = 0;
    int len, r;

    r = sophon_request_decode(&p, &version, (const uint8_t *)in, in_len > 0 ? (size_t)in_len : 0);
    if (r < 0) {
        SOPHON_LOG(5, "prep: malformed request of %d bytes: %d", in_len, r);
        return r;
    }
    uint64_t size = sophon_response_size_as(&p, version);
    if (size - sophon_response_header_len(version) > osd_limits.max_output_bytes) {
        SOPHON_LOG(5, "prep: output of %llu bytes over the limit: %d", (unsigned long long)size,
                   -EFBIG);
        return -EFBIG;
    }
    r = read_object(ctx, &data, &len, "prep");
    if (r < 0)
        return r;
    r = admit(&need, (const uint8_t *)data, (size_t)len, &p);
    if (r < 0) {
        cls_free(data);
        return r;
    }
    /* Pixels, or a crop JPEG of at most what the request allows (the larger of the two when the
     * crop may fall back to the pixels). */
    size = sophon_prep_response_cap(&p, (uint64_t)len, version);
    resp = cls_alloc(size);
    if (resp == NULL) {
        cls_free(data);
        release(need);
        SOPHON_LOG(0, "prep: no memory for %llu bytes: %d", (unsigned long long)size, -ENOMEM);
        return -ENOMEM;
    }
    size_t resp_len = 0;
    r = sophon_prep_respond((uint8_t *)resp, size, &resp_len, (const uint8_t *)data, (size_t)len,
                            &p, &osd_limits, version, err, sizeof(err));
    cls_free(data);
    release(need);
    if (r < 0) {
        cls_free(resp);
        SOPHON_LOG(refusal_level(r), "prep: %s: %d", err, r);
        return r;
    }
    SOPHON_LOG(10, "prep: v%u box %u,%u,%u,%u -> %ux%u window %ux%u+%u+%u %s%s%s, %d -> %zu bytes",
               (unsigned)version, p.box_x, p.box_y, p.box_w, p.box_h, p.resize_w, p.resize_h,
               p.out_w, p.out_h, p.win_x, p.win_y, sophon_format_name(p.format),
               p.flip ? " flipped" : "", p.stage == SOPHON_WIRE_CROP ? " crop" : "", len, resp_len);
    *out = resp;
    *out_len = (int)resp_len;
    return 0;
}

/*
 * cpu - a read method that returns the CPU this OSD process has used since it started (all its
 * threads) and its monotonic clock, with its host (a hash of the name) and pid: a client asks
 * before and after an epoch and learns what the OSD spent serving it beyond the preparations the
 * class reports (the messenger, the object store, plain reads). Reads no object; the input is
 * ignored.
 */
static int cpu(cls_method_context_t ctx, char *in, int in_len, char **out, int *out_len)
{
    (void)ctx;
    (void)in;
    (void)in_len;
    struct sophon_cpu_reply r = {.pid = (uint32_t)getpid(), .host = 0xcbf29ce484222325ull};
    char host[256] = "";
    int e = sophon__clock_ns(CLOCK_PROCESS_CPUTIME_ID, &r.cpu_ns);
    if (e == 0)
        e = sophon__clock_ns(CLOCK_MONOTONIC, &r.clock_ns);
    if (e < 0) {
        SOPHON_LOG(0, "reading the clocks failed: %d", e);
        return e;
    }
    (void)gethostname(host, sizeof(host) - 1); /* FNV-1a of what it gives, "" on failure */
    for (const char *c = host; *c != '\0'; c++)
        r.host = (r.host ^ (uint8_t)*c) * 0x100000001b3ull;
    uint8_t buf[SOPHON_CPU_MSG_LEN];
    int n = sophon_cpu_encode(buf, sizeof(buf), &r);
    if (n < 0)
        return n;
    return reply(out, out_len, buf, (size_t)n);
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
    cls_method_handle_t h_version, h_probe, h_prep, h_cpu;

    char check[256];

    SOPHON_LOG(0, "loading class sophon %s (wire format %d)", SOPHON_VERSION_STRING,
               SOPHON_WIRE_VERSION);
    /* Once per OSD: a decoder that disagrees with its libjpeg is switched off, and said so. */
    if (sophon_prep_selfcheck(check, sizeof(check)) < 0)
        SOPHON_LOG(0, "%s", check);
    else
        SOPHON_LOG(5, "%s", check);
    if (!cls_register("sophon", &cls)) {
        SOPHON_LOG(0, "cls_register failed");
        return;
    }
    cls_register_method(cls, "version", CLS_METHOD_RD, version, &h_version);
    cls_register_method(cls, "probe", CLS_METHOD_RD, probe, &h_probe);
    cls_register_method(cls, "prep", CLS_METHOD_RD, prep, &h_prep);
    cls_register_method(cls, "cpu", CLS_METHOD_RD, cpu, &h_cpu);
}
