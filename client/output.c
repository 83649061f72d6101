/*
 * output.c - PPM, PNG or raw output of a prepared sample.
 */
#include "output.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "sophon_common.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/* An f32 CHW tensor back to u8 HWC: x * std + mean, times 255, rounded and clamped. */
static uint8_t *tensor_to_rgb(const struct sophon_response *h, const uint8_t *payload,
                              const struct sophon_prep_params *p)
{
    size_t plane = (size_t)h->width * h->height;
    uint8_t *rgb = malloc(plane * 3);
    if (rgb == NULL)
        return NULL;
    for (size_t c = 0; c < 3; c++) {
        for (size_t i = 0; i < plane; i++) {
            float f;
            memcpy(&f, payload + 4 * (c * plane + i), sizeof(f));
            float v = (f * p->std[c] + p->mean[c]) * 255.0f;
            rgb[3 * i + c] = v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)lrintf(v);
        }
    }
    return rgb;
}

static int write_ppm(FILE *f, const uint8_t *rgb, uint32_t w, uint32_t h)
{
    if (fprintf(f, "P6\n%u %u\n255\n", w, h) < 0)
        return -EIO;
    return fwrite(rgb, 3, (size_t)w * h, f) == (size_t)w * h ? 0 : -EIO;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int write_chunk(FILE *f, const char *type, const uint8_t *data, size_t len)
{
    uint8_t hdr[8], crc_be[4];
    put_be32(hdr, (uint32_t)len);
    memcpy(hdr + 4, type, 4);
    uLong crc = crc32(0L, hdr + 4, 4);
    if (len > 0)
        crc = crc32(crc, data, (uInt)len);
    put_be32(crc_be, (uint32_t)crc);
    if (fwrite(hdr, 1, 8, f) != 8 || (len > 0 && fwrite(data, 1, len, f) != len) ||
        fwrite(crc_be, 1, 4, f) != 4)
        return -EIO;
    return 0;
}

/* An 8-bit RGB PNG: every row with filter type 0, one zlib stream in one IDAT chunk. */
static int write_png(FILE *f, const uint8_t *rgb, uint32_t w, uint32_t h)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13];
    size_t row = (size_t)w * 3 + 1, raw_len = row * h;
    uint8_t *raw = malloc(raw_len);
    uLongf z_len = compressBound((uLong)raw_len);
    uint8_t *z = malloc(z_len);
    int r = -ENOMEM;

    if (raw == NULL || z == NULL)
        goto done;
    for (uint32_t y = 0; y < h; y++) {
        raw[y * row] = 0;
        memcpy(raw + y * row + 1, rgb + (size_t)y * w * 3, (size_t)w * 3);
    }
    if (compress2(z, &z_len, raw, (uLong)raw_len, 6) != Z_OK) {
        r = -EIO;
        goto done;
    }
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering */
    ihdr[12] = 0; /* no interlace */
    r = -EIO;
    if (fwrite(sig, 1, sizeof(sig), f) != sizeof(sig))
        goto done;
    if (write_chunk(f, "IHDR", ihdr, sizeof(ihdr)) < 0 || write_chunk(f, "IDAT", z, z_len) < 0 ||
        write_chunk(f, "IEND", NULL, 0) < 0)
        goto done;
    r = 0;
done:
    free(raw);
    free(z);
    return r;
}

int sophon__write_output(const char *path, const struct sophon_response *h, const uint8_t *payload,
                         const struct sophon_prep_params *p, char *err, size_t errlen)
{
    int image = ends_with(path, ".ppm") ? 1 : ends_with(path, ".png") ? 2 : 0;
    uint8_t *converted = NULL;
    const uint8_t *rgb = payload;
    int r;

    if (image && h->format == SOPHON_FORMAT_F32) {
        converted = tensor_to_rgb(h, payload, p);
        if (converted == NULL) {
            sophon__seterr(err, errlen, "no memory to convert the tensor to an image");
            return -ENOMEM;
        }
        rgb = converted;
    }
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        r = -errno;
        sophon__seterr(err, errlen, "cannot create %s: %s", path, strerror(errno));
        free(converted);
        return r;
    }
    if (image == 1)
        r = write_ppm(f, rgb, h->width, h->height);
    else if (image == 2)
        r = write_png(f, rgb, h->width, h->height);
    else
        r = fwrite(payload, 1, h->payload_len, f) == h->payload_len ? 0 : -EIO;
    if (fclose(f) != 0 && r == 0)
        r = -EIO;
    if (r < 0)
        sophon__seterr(err, errlen, "writing %s failed: %s", path, strerror(-r));
    free(converted);
    return r;
}
