/*
 * test_cls_prep.c - the class's probe and prep methods on the dev cluster.
 *
 *   test_cls_prep hostile DIR LARGEST.jpg   hostile objects (DIR/expected.tsv from make_hostile.py)
 *                                           return their errno; the OSD serves on, and its memory
 *                                           does not grow over 1,000 bad calls
 *   test_cls_prep requests PHOTO.jpg        malformed requests (layouts 1 and 2): -EINVAL, the OSD
 *                                           lives on
 *   test_cls_prep layouts PHOTO.jpg         layout 1 and 2 requests answered in their layout,
 *                                           validation transforms, the crop stage refused
 *   test_cls_prep concurrency PHOTO.jpg...  16 clients x 200 calls, every output correct
 *   test_cls_prep eperm PHOTO.jpg           the key without class caps gets -EPERM
 *   test_cls_prep corpus LIST OUT.tsv [N]   for every JPEG in LIST (at most N): the OSD's output
 *                                           equals the local one, byte for byte, for several
 *                                           boxes with and without flip, sizes and the
 *                                           validation transform; OUT.tsv lists every case with
 *                                           its CRC for the Pillow check
 *
 * Needs CEPH_CONF, SOPHON_POOL, and SOPHON_CLUSTER_DIR (for the OSDs' pid files); SOPHON_OSD_ASAN
 * set says the OSDs run under ASan (osd_sanitizer.sh), whose allocator makes their memory
 * growth meaningless.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
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
#include <zlib.h>

#include "read_file.h"
#include "prep_call.h"
#include "prep_response.h"
#include "sampler.h"
#include "wire.h"

static char **args;
static int nargs;

static uint8_t *read_file(const char *path, size_t *len)
{
    uint8_t *buf;
    int r = sophon_test_read_file(path, &buf, len, 0);
    if (r < 0)
        fail_msg("cannot read %s: %s", path, strerror(-r));
    return buf;
}

static void put_object(struct conn *c, const char *oid, const uint8_t *buf, size_t len)
{
    assert_int_equal(rados_write_full(c->io, oid, (const char *)buf, len), 0);
}

static int errno_by_name(const char *name)
{
    static const struct {
        const char *name;
        int value;
    } names[] = {{"0", 0},         {"EBADMSG", EBADMSG}, {"EMEDIUMTYPE", EMEDIUMTYPE},
                 {"E2BIG", E2BIG}, {"EFBIG", EFBIG},     {"EINVAL", EINVAL}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i].name) == 0)
            return -names[i].value;
    fail_msg("unknown errno name %s", name);
    return 1;
}

/* Sum of the resident memory of the cluster's OSDs, in kB. */
static long osd_rss_kb(void)
{
    const char *dir = getenv("SOPHON_CLUSTER_DIR");
    char path[512], line[256];
    long total = 0;

    assert_non_null(dir);
    for (int id = 0; id < 16; id++) {
        snprintf(path, sizeof(path), "%s/run/osd.%d.pid", dir, id);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        long pid = 0;
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
        snprintf(path, sizeof(path), "/proc/%ld/status", pid);
        f = fopen(path, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f) != NULL) {
            long kb;
            if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                total += kb;
        }
        fclose(f);
    }
    assert_true(total > 0);
    return total;
}

static struct sophon_prep_params box_params(uint32_t x, uint32_t y, uint32_t w, uint32_t h)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    p.box_x = x;
    p.box_y = y;
    p.box_w = w;
    p.box_h = h;
    return p;
}

/* Payload of a response, after checking the header. */
static const uint8_t *payload_of(const void *resp, size_t len, size_t *plen)
{
    struct sophon_response h;
    const uint8_t *payload;
    assert_int_equal(sophon_response_decode(&h, &payload, resp, len), 0);
    *plen = h.payload_len;
    return payload;
}

/* The OSD and the local path agree: same errno, or byte-identical payloads. Returns the local
 * result (0 or errno); *crc gets the payload's CRC-32 on success. */
static int same_both_ways(struct conn *c, const char *oid, const uint8_t *jpeg, size_t len,
                          const struct sophon_prep_params *p, uint32_t *crc)
{
    uint8_t *local = NULL;
    char *remote = NULL;
    size_t local_len = 0, remote_len = 0, a, b;
    char err[256];

    int rl = sophon__local_prep(&local, &local_len, jpeg, len, p, err, sizeof(err));
    int rr = sophon__remote_prep(&remote, &remote_len, c->io, oid, p, SOPHON_WIRE_LATEST);
    if (rl != rr)
        fail_msg("%s box %u,%u,%u,%u: local %d (%s), OSD %d", oid, p->box_x, p->box_y, p->box_w,
                 p->box_h, rl, rl < 0 ? err : "ok", rr);
    if (rl == 0) {
        const uint8_t *pa = payload_of(local, local_len, &a);
        const uint8_t *pb = payload_of(remote, remote_len, &b);
        assert_int_equal(a, b);
        if (memcmp(pa, pb, a) != 0)
            fail_msg("%s box %u,%u,%u,%u flip %u: OSD and local outputs differ", oid, p->box_x,
                     p->box_y, p->box_w, p->box_h, p->flip);
        if (crc != NULL)
            *crc = (uint32_t)crc32(0L, pa, (uInt)a);
        /* Both headers agree on everything but the CPU time (layout 2: at 32). */
        assert_memory_equal(local, remote, 32);
        assert_memory_equal(local + 40, remote + 40, 16);
        free(local);
        rados_buffer_free(remote);
    }
    return rl;
}

/* The crop stage in the OSD: crops of RandomResizedCrop boxes, finished here, give the pixel
 * path's bytes; limits and fallbacks. */
static void check_crops(struct conn *c, const char *oid, const uint8_t *jpeg, size_t len,
                        const struct sophon_probe_info *info)
{
    static const struct sophon_crop_policy rrc = SOPHON_CROP_POLICY_INIT;
    size_t crop_bytes = 0, pixel_bytes = 0;
    for (uint64_t i = 0; i < 12; i++) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        assert_int_equal(sophon_draw_crop(&p, 7, 0, i, info->width, info->height, &rrc), 0);
        p.format = (uint8_t)(i % 2);
        size_t n = (size_t)sophon_prep_output_size(&p);
        uint8_t *want = malloc(n), *got = malloc(n);
        char err[256] = "";
        assert_true(want != NULL && got != NULL);
        assert_int_equal(sophon_prep_run(want, n, jpeg, len, &p, NULL, err, sizeof(err)), 0);
        p.stage = SOPHON_WIRE_CROP;
        p.fallback = (uint8_t)(i % 3 == 0 ? SOPHON_FALLBACK_NONE : SOPHON_FALLBACK_PIXELS);
        assert_int_equal(same_both_ways(c, oid, jpeg, len, &p, NULL), 0);
        char *resp;
        size_t resp_len;
        assert_int_equal(sophon__remote_prep(&resp, &resp_len, c->io, oid, &p, SOPHON_WIRE_V3), 0);
        struct sophon_response h;
        const uint8_t *payload;
        assert_int_equal(sophon_response_decode(&h, &payload, (const uint8_t *)resp, resp_len), 0);
        if (h.stage == SOPHON_WIRE_CROP)
            crop_bytes += resp_len;
        else
            pixel_bytes += resp_len;
        assert_int_equal(sophon_prep_finish(got, n, &h, payload, &p, NULL, err, sizeof(err)), 0);
        if (memcmp(got, want, n) != 0)
            fail_msg("%s box %u,%u,%u,%u: the OSD's %s finished here differs from the pixels", oid,
                     p.box_x, p.box_y, p.box_w, p.box_h,
                     h.stage == SOPHON_WIRE_CROP ? "crop" : "pixels");
        /* At most 100 bytes: the pixels with the fallback, -ENOSPC without. */
        rados_buffer_free(resp);
        p.crop_max_bytes = 100;
        int r = sophon__remote_prep(&resp, &resp_len, c->io, oid, &p, SOPHON_WIRE_V3);
        if (p.fallback == SOPHON_FALLBACK_NONE) {
            assert_int_equal(r, -ENOSPC);
        } else {
            assert_int_equal(r, 0);
            assert_int_equal(sophon_response_decode(&h, &payload, (const uint8_t *)resp, resp_len),
                             0);
            assert_int_equal(h.stage, SOPHON_WIRE_PIXELS);
            rados_buffer_free(resp);
        }
        free(want);
        free(got);
    }
    printf("  crop stage: 12 boxes, OSD == local == pixels; %zu bytes as crops, %zu as pixels\n",
           crop_bytes, pixel_bytes);
}

/* ---- hostile objects ---- */

static void hostile_objects(void **state)
{
    (void)state;
    const char *dir = args[0], *largest = args[1];
    char path[1024], line[512];
    struct conn c;
    struct sophon_probe_reply pr;
    char *resp;
    size_t resp_len;
    char *bad[32];
    int nbad = 0;

    connect_as(&c, "client.sophon");
    snprintf(path, sizeof(path), "%s/expected.tsv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    struct sophon_prep_params p = box_params(0, 0, 8, 8);
    struct sophon_prep_params crop = p; /* the crop stage, with the pixels as the fallback */
    crop.stage = SOPHON_WIRE_CROP;
    crop.fallback = SOPHON_FALLBACK_PIXELS;
    while (fgets(line, sizeof(line), f) != NULL) {
        char name[256], probe_e[32], prep_e[32];
        assert_int_equal(sscanf(line, "%255s %31s %31s", name, probe_e, prep_e), 3);
        size_t len;
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        uint8_t *buf = read_file(path, &len);
        char oid[300];
        snprintf(oid, sizeof(oid), "hostile/%s", name);
        put_object(&c, oid, buf, len);
        free(buf);
        int want_probe = errno_by_name(probe_e), want_prep = errno_by_name(prep_e);
        int r = sophon__remote_probe(&pr, c.io, oid);
        if (r != want_probe)
            fail_msg("probe %s: %d, want %d", name, r, want_probe);
        r = sophon__remote_prep(&resp, &resp_len, c.io, oid, &p, SOPHON_WIRE_LATEST);
        if (r != want_prep)
            fail_msg("prep %s: %d, want %d", name, r, want_prep);
        if (r == 0)
            rados_buffer_free(resp);
        else if (nbad < 32 && want_probe < 0)
            bad[nbad++] = strdup(oid);
        /* The crop stage refuses what the pipeline refuses, with the same errno. */
        r = sophon__remote_prep(&resp, &resp_len, c.io, oid, &crop, SOPHON_WIRE_LATEST);
        if (r != want_prep)
            fail_msg("crop %s: %d, want %d", name, r, want_prep);
        if (r == 0)
            rados_buffer_free(resp);
        printf("  %-24s probe %-11s prep %s\n", name, probe_e, prep_e);
    }
    fclose(f);
    assert_true(nbad >= 6);

    /* The largest real photo decodes in the OSD, and equals the local output. */
    size_t len;
    uint8_t *big = read_file(largest, &len);
    put_object(&c, "hostile/largest.jpg", big, len);
    assert_int_equal(sophon__remote_probe(&pr, c.io, "hostile/largest.jpg"), 0);
    struct sophon_prep_params whole = box_params(0, 0, pr.info.width, pr.info.height);
    assert_int_equal(same_both_ways(&c, "hostile/largest.jpg", big, len, &whole, NULL), 0);
    printf("  largest photo: %ux%u, %zu bytes: prepared\n", pr.info.width, pr.info.height, len);

    /*
     * 1,000 bad calls in a row: the OSD's memory does not grow, and it serves on. Each bad call
     * logs a line, and the OSD keeps its recent log lines in memory (`log max recent`, 500 in
     * the dev cluster), so a warm-up fills that ring first. Good calls on a small photo give
     * the OSD's own growth for comparison.
     */
    for (int i = 0; i < 600; i++) {
        sophon__remote_prep(&resp, &resp_len, c.io, bad[i % nbad], &p, SOPHON_WIRE_LATEST);
        sophon__remote_probe(&pr, c.io, bad[i % nbad]);
    }
    long before = osd_rss_kb();
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(
            sophon__remote_prep(&resp, &resp_len, c.io, "hostile/cmyk.jpg", &p, SOPHON_WIRE_LATEST),
            0);
        rados_buffer_free(resp);
        assert_int_equal(sophon__remote_probe(&pr, c.io, "hostile/cmyk.jpg"), 0);
    }
    long mid = osd_rss_kb(), least = LONG_MAX;
    printf("  OSD RSS %ld kB; after 1,000 good prep + probe calls: %+ld kB\n", before,
           mid - before);
    /* RSS moves by whole malloc arenas now and then; a leak moves it every round. */
    for (int round = 0; round < 3; round++) {
        long b = osd_rss_kb();
        for (int i = 0; i < 1000; i++) {
            assert_true(sophon__remote_prep(&resp, &resp_len, c.io, bad[i % nbad], &p,
                                            SOPHON_WIRE_LATEST) < 0);
            assert_true(sophon__remote_probe(&pr, c.io, bad[i % nbad]) < 0);
            assert_true(sophon__remote_prep(&resp, &resp_len, c.io, bad[i % nbad], &crop,
                                            SOPHON_WIRE_LATEST) < 0);
        }
        long grown = osd_rss_kb() - b;
        printf("  after 1,000 bad prep + probe + crop calls: %+ld kB\n", grown);
        least = grown < least ? grown : least;
    }
    /*
     * A leaked decoder or object buffer per call (kilobytes each) would add megabytes to every
     * round. Not where the OSD's allocator is ASan's (osd_sanitizer.sh): its quarantine holds
     * freed memory back until 256 MiB of it wait, so the OSD's memory grows by rounds there
     * whatever the class frees.
     */
    if (getenv("SOPHON_OSD_ASAN") == NULL)
        assert_true(least < 512);
    else
        printf("  (the OSD runs under ASan: its memory growth is not checked)\n");
    assert_int_equal(same_both_ways(&c, "hostile/largest.jpg", big, len, &whole, NULL), 0);
    rados_remove(c.io, "hostile/cmyk.jpg");
    free(big);
    for (int i = 0; i < nbad; i++) {
        rados_remove(c.io, bad[i]);
        free(bad[i]);
    }
    rados_remove(c.io, "hostile/largest.jpg");
    disconnect(&c);
}

/* ---- malformed requests ---- */

static void malformed_requests(void **state)
{
    (void)state;
    struct conn c;
    size_t len;
    uint8_t *jpeg = read_file(args[0], &len);
    uint8_t good[3][SOPHON_REQUEST_LEN], req[256];
    size_t good_len[3];
    char out[64];
    struct sophon_prep_params p = box_params(0, 0, 16, 16), decoded;
    unsigned seed = 4321;
    int refused = 0, accepted = 0, crops = 0;

    connect_as(&c, "client.sophon");
    put_object(&c, "requests.jpg", jpeg, len);
    /* Valid requests of every layout the class speaks, to mutate: layout 3 a crop. */
    good_len[0] = (size_t)sophon_request_encode_as(good[0], sizeof(good[0]), &p, SOPHON_WIRE_V1);
    good_len[1] = (size_t)sophon_request_encode_as(good[1], sizeof(good[1]), &p, SOPHON_WIRE_V2);
    struct sophon_prep_params cp = p;
    cp.stage = SOPHON_WIRE_CROP;
    cp.fallback = SOPHON_FALLBACK_PIXELS;
    good_len[2] = (size_t)sophon_request_encode_as(good[2], sizeof(good[2]), &cp, SOPHON_WIRE_V3);
    /* Random bytes of every length up to 100, and a valid request with random bytes changed. */
    for (int i = 0; i < 800; i++) {
        size_t n;
        if (i < 300) {
            n = (size_t)(rand_r(&seed) % 101);
            for (size_t k = 0; k < n; k++)
                req[k] = (uint8_t)rand_r(&seed);
        } else {
            int v = i % 3;
            n = good_len[v];
            memcpy(req, good[v], n);
            int flips = 1 + rand_r(&seed) % 4;
            for (int k = 0; k < flips; k++)
                req[rand_r(&seed) % n] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
            if (i % 7 == 0)
                n -= 1 + (size_t)(rand_r(&seed) % 8); /* truncated too */
        }
        int local = sophon_request_decode(&decoded, NULL, req, n);
        if (local == 0 && decoded.stage == SOPHON_WIRE_CROP) {
            /* A valid crop request: the OSD crops as the client would. */
            same_both_ways(&c, "requests.jpg", jpeg, len, &decoded, NULL);
            crops++;
            continue;
        }
        if (local == 0) {
            /* A mutation that is still a valid request: the OSD runs it as the client would. */
            same_both_ways(&c, "requests.jpg", jpeg, len, &decoded, NULL);
            accepted++;
            continue;
        }
        assert_int_equal(local, -EINVAL);
        int r = rados_exec(c.io, "requests.jpg", "sophon", "prep", (const char *)req, n, out,
                           sizeof(out));
        if (r != -EINVAL)
            fail_msg("malformed request %d (%zu bytes): OSD returned %d, want -EINVAL", i, n, r);
        refused++;
    }
    printf("  %d malformed requests refused with -EINVAL, %d mutations still valid and run, %d "
           "crop requests cropped alike\n",
           refused, accepted, crops);
    assert_true(refused > 500);
    /* The OSD lives on. */
    assert_int_equal(same_both_ways(&c, "requests.jpg", jpeg, len, &p, NULL), 0);
    rados_remove(c.io, "requests.jpg");
    free(jpeg);
    disconnect(&c);
}

/*
 * The class answers a request in its own layout: layout 1 (a v1 client) gets a layout 1
 * response with the same pixels as layout 2's; the validation transform and other sizes run in
 * the OSD as here; the crop stage (layout 3 only) the same bytes both ways, finished here into
 * the pixel path's sample.
 */
static void both_layouts(void **state)
{
    (void)state;
    struct conn c;
    size_t len, plen1, plen2;
    uint8_t *jpeg = read_file(args[0], &len);
    char err[256];
    struct sophon_probe_info info;
    char *r1, *r2;
    size_t n1, n2;
    struct sophon_response h1, h2;
    const uint8_t *p1, *p2;

    connect_as(&c, "client.sophon");
    put_object(&c, "layouts.jpg", jpeg, len);
    assert_int_equal(sophon_probe(&info, jpeg, len, err, sizeof(err)), 0);
    struct sophon_prep_params p = box_params(0, 0, 1, 1);
    sophon_draw_crop(&p, 5, 0, 0, info.width, info.height, NULL);
    p.out_w = 160;
    p.out_h = 160;
    assert_int_equal(sophon__remote_prep(&r1, &n1, c.io, "layouts.jpg", &p, SOPHON_WIRE_V1), 0);
    assert_int_equal(sophon__remote_prep(&r2, &n2, c.io, "layouts.jpg", &p, SOPHON_WIRE_V2), 0);
    assert_int_equal(sophon_response_decode(&h1, &p1, (uint8_t *)r1, n1), 0);
    assert_int_equal(sophon_response_decode(&h2, &p2, (uint8_t *)r2, n2), 0);
    assert_int_equal(h1.version, SOPHON_WIRE_V1);
    assert_int_equal(h2.version, SOPHON_WIRE_V2);
    assert_int_equal(n1, 48 + 160 * 160 * 3);
    assert_int_equal(n2, 56 + 160 * 160 * 3);
    plen1 = h1.payload_len;
    plen2 = h2.payload_len;
    assert_int_equal(plen1, plen2);
    assert_memory_equal(p1, p2, plen1);
    assert_int_equal(same_both_ways(&c, "layouts.jpg", jpeg, len, &p, NULL), 0);
    rados_buffer_free(r1);
    rados_buffer_free(r2);
    printf("  layout 1 and 2 answered alike (160x160)\n");
    /* Resize(256) + CenterCrop(224), and Resize(320) + CenterCrop(288), f32 too. */
    assert_int_equal(sophon_prep_set_val(&p, info.width, info.height, 256, 224), 0);
    assert_int_equal(sophon_request_fits(&p, SOPHON_WIRE_V1), 0);
    assert_int_equal(same_both_ways(&c, "layouts.jpg", jpeg, len, &p, NULL), 0);
    assert_int_equal(sophon_prep_set_val(&p, info.width, info.height, 320, 288), 0);
    p.format = SOPHON_FORMAT_F32;
    assert_int_equal(same_both_ways(&c, "layouts.jpg", jpeg, len, &p, NULL), 0);
    printf("  validation transforms: OSD == local\n");
    /* The crop stage, with and without a fallback: the OSD's crop, finished here, is the pixel
     * path's sample; a crop over its limit falls back to the pixels or fails with -ENOSPC; a
     * class of wire format 2 is never asked for a crop. */
    check_crops(&c, "layouts.jpg", jpeg, len, &info);
    p.stage = SOPHON_WIRE_CROP;
    assert_int_equal(sophon_request_fits(&p, SOPHON_WIRE_V2), 0);
    rados_remove(c.io, "layouts.jpg");
    free(jpeg);
    disconnect(&c);
}

/* ---- concurrency ---- */

#define CLIENTS 16
#define CALLS   200
#define CASES   4

struct job {
    char oid[64];
    struct sophon_prep_params p;
    uint8_t *want;
    size_t want_len;
};

static struct job jobs[64];
static int njobs;

struct worker {
    int id, bad, done;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    rados_t cluster;
    rados_ioctx_t io;
    unsigned seed = (unsigned)w->id * 7919u;

    if (rados_create2(&cluster, "ceph", "client.sophon", 0) < 0 ||
        rados_conf_read_file(cluster, NULL) < 0 || rados_connect(cluster) < 0 ||
        rados_ioctx_create(cluster, pool_name(), &io) < 0) {
        w->bad = CALLS;
        return NULL;
    }
    for (int i = 0; i < CALLS; i++) {
        const struct job *j = &jobs[rand_r(&seed) % njobs];
        char *resp;
        size_t resp_len, plen;
        struct sophon_response h;
        const uint8_t *payload;
        if (sophon__remote_prep(&resp, &resp_len, io, j->oid, &j->p, SOPHON_WIRE_LATEST) < 0) {
            w->bad++;
            continue;
        }
        if (sophon_response_decode(&h, &payload, (uint8_t *)resp, resp_len) < 0 ||
            (plen = h.payload_len) != j->want_len || memcmp(payload, j->want, plen) != 0)
            w->bad++;
        rados_buffer_free(resp);
        w->done++;
    }
    rados_ioctx_destroy(io);
    rados_shutdown(cluster);
    return NULL;
}

static void concurrent_clients(void **state)
{
    (void)state;
    struct conn c;
    pthread_t threads[CLIENTS];
    struct worker workers[CLIENTS];
    char err[256];

    connect_as(&c, "client.sophon");
    for (int i = 0; i < nargs && njobs + CASES <= 64; i++) {
        size_t len;
        uint8_t *jpeg = read_file(args[i], &len);
        struct sophon_probe_info info;
        assert_int_equal(sophon_probe(&info, jpeg, len, err, sizeof(err)), 0);
        char oid[64];
        snprintf(oid, sizeof(oid), "concurrency/%d.jpg", i);
        put_object(&c, oid, jpeg, len);
        for (int k = 0; k < CASES; k++) {
            struct job *j = &jobs[njobs++];
            snprintf(j->oid, sizeof(j->oid), "%s", oid);
            j->p = box_params(0, 0, 1, 1);
            sophon_draw_crop(&j->p, 77, 0, (uint64_t)(i * CASES + k), info.width, info.height,
                             NULL);
            j->p.format = k == 3 ? SOPHON_FORMAT_F32 : SOPHON_FORMAT_U8;
            uint8_t *resp;
            size_t resp_len, plen;
            assert_int_equal(
                sophon__local_prep(&resp, &resp_len, jpeg, len, &j->p, err, sizeof(err)), 0);
            const uint8_t *payload = payload_of(resp, resp_len, &plen);
            j->want = malloc(plen);
            memcpy(j->want, payload, plen);
            j->want_len = plen;
            free(resp);
        }
        free(jpeg);
    }
    for (int i = 0; i < CLIENTS; i++) {
        workers[i] = (struct worker){.id = i};
        assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
    }
    int bad = 0, done = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(threads[i], NULL);
        bad += workers[i].bad;
        done += workers[i].done;
    }
    printf("  %d clients x %d calls on %d cases: %d correct, %d wrong or failed\n", CLIENTS, CALLS,
           njobs, done - bad, bad);
    assert_int_equal(bad, 0);
    assert_int_equal(done, CLIENTS * CALLS);
    for (int i = 0; i < njobs; i++) {
        free(jobs[i].want);
        rados_remove(c.io, jobs[i].oid);
    }
    disconnect(&c);
}

/* ---- caps ---- */

static void no_class_caps(void **state)
{
    (void)state;
    struct conn c, ro;
    size_t len;
    uint8_t *jpeg = read_file(args[0], &len);
    struct sophon_probe_reply pr;
    struct sophon_prep_params p = box_params(0, 0, 8, 8);
    char *resp;
    size_t resp_len;

    connect_as(&c, "client.sophon");
    put_object(&c, "caps.jpg", jpeg, len);
    connect_as(&ro, "client.sophon-read");
    assert_int_equal(sophon__remote_probe(&pr, ro.io, "caps.jpg"), -EPERM);
    assert_int_equal(
        sophon__remote_prep(&resp, &resp_len, ro.io, "caps.jpg", &p, SOPHON_WIRE_LATEST), -EPERM);
    /* The same key can still read the object: the fallback path works. */
    uint8_t *back;
    size_t back_len;
    assert_int_equal(sophon__read_object(&back, &back_len, ro.io, "caps.jpg", len), 0);
    assert_int_equal(back_len, len);
    assert_memory_equal(back, jpeg, len);
    free(back);
    disconnect(&ro);
    rados_remove(c.io, "caps.jpg");
    disconnect(&c);
    free(jpeg);
}

/* ---- the real-photo corpus ---- */

static void corpus(void **state)
{
    (void)state;
    const char *list = args[0], *out = args[1];
    long max = nargs > 2 ? atol(args[2]) : 0;
    FILE *in = fopen(list, "r"), *tsv = fopen(out, "w");
    char path[4096], err[256];
    struct conn c;
    long images = 0, cases = 0, refused = 0;

    assert_non_null(in);
    assert_non_null(tsv);
    connect_as(&c, "client.sophon");
    while (fgets(path, sizeof(path), in) != NULL && (max == 0 || images < max)) {
        path[strcspn(path, "\n")] = '\0';
        if (path[0] == '\0')
            continue;
        size_t len;
        uint8_t *jpeg = read_file(path, &len);
        char oid[64];
        snprintf(oid, sizeof(oid), "corpus/%ld.jpg", images);
        put_object(&c, oid, jpeg, len);
        struct sophon_probe_info info;
        struct sophon_probe_reply pr;
        int rl = sophon_probe(&info, jpeg, len, err, sizeof(err));
        int rr = sophon__remote_probe(&pr, c.io, oid);
        if (rl != rr)
            fail_msg("probe %s: local %d, OSD %d", path, rl, rr);
        if (rl < 0) {
            refused++;
        } else {
            assert_true(
                info.width == pr.info.width && info.height == pr.info.height &&
                info.components == pr.info.components && info.progressive == pr.info.progressive &&
                info.colorspace == pr.info.colorspace && info.subsampling == pr.info.subsampling &&
                info.bits == pr.info.bits && info.scans == pr.info.scans);
            assert_int_equal(pr.object_size, len);
            /* Three random boxes (one flipped, one not, one either) and the f32 tensor; one
             * of another size; the validation transform at 256/224 and at another pair. */
            for (int k = 0; k < 7; k++) {
                static const uint32_t val[][2] = {{232, 224}, {182, 160}, {320, 288}};
                struct sophon_prep_params p = box_params(0, 0, 1, 1);
                sophon_draw_crop(&p, 2024, 0, (uint64_t)(images * 7 + k), info.width, info.height,
                                 NULL);
                if (k < 2)
                    p.flip = (uint8_t)k;
                if (k == 3)
                    p.format = SOPHON_FORMAT_F32;
                if (k == 4)
                    p.out_w = p.out_h = images % 2 ? 160 : 288;
                if (k == 5 && sophon_prep_set_val(&p, info.width, info.height, 256, 224) < 0)
                    continue;
                if (k == 6 && sophon_prep_set_val(&p, info.width, info.height, val[images % 3][0],
                                                  val[images % 3][1]) < 0)
                    continue;
                uint32_t crc = 0;
                int r = same_both_ways(&c, oid, jpeg, len, &p, &crc);
                if (r == 0 && p.format == SOPHON_FORMAT_U8)
                    fprintf(tsv, "%s\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%08x\n", path,
                            p.box_x, p.box_y, p.box_w, p.box_h, p.resize_w ? p.resize_w : p.out_w,
                            p.resize_h ? p.resize_h : p.out_h, p.win_x, p.win_y, p.out_w, p.out_h,
                            p.flip, crc);
                else if (r < 0)
                    fprintf(stderr, "  refused %s: %d\n", path, r);
                cases++;
            }
        }
        rados_remove(c.io, oid);
        free(jpeg);
        images++;
        if (images % 100 == 0)
            printf("  %ld images, %ld cases, OSD == local so far\n", images, cases);
    }
    fclose(in);
    fclose(tsv);
    printf("  %ld images (%ld refused by both alike), %ld cases: OSD == local, byte for byte\n",
           images, refused, cases);
    assert_true(images > 0);
    disconnect(&c);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int min_args;
        struct CMUnitTest test;
    } modes[] = {
        {"hostile", 2, cmocka_unit_test(hostile_objects)},
        {"requests", 1, cmocka_unit_test(malformed_requests)},
        {"layouts", 1, cmocka_unit_test(both_layouts)},
        {"concurrency", 1, cmocka_unit_test(concurrent_clients)},
        {"eperm", 1, cmocka_unit_test(no_class_caps)},
        {"corpus", 2, cmocka_unit_test(corpus)},
    };
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; argc >= 2 && i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(argv[1], modes[i].name) != 0)
            continue;
        if (argc - 2 < modes[i].min_args)
            break;
        args = argv + 2;
        nargs = argc - 2;
        const struct CMUnitTest tests[] = {modes[i].test};
        return _cmocka_run_group_tests(modes[i].name, tests, 1, NULL, NULL);
    }
    fprintf(stderr, "usage: see the top of test_cls_prep.c\n");
    return 2;
}
