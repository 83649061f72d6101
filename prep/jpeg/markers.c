/*
 * markers.c - walking the marker segments of a JPEG without decoding: counting scans, so that a
 * progressive JPEG with thousands of scans is refused in O(len) before libjpeg starts absorbing
 * it, and finding where each segment and scan lies and what its header says.
 */
#include "markers.h"

#include <errno.h>
#include <string.h>

#define M_SOF0  0xc0
#define M_DHT   0xc4
#define M_JPG   0xc8
#define M_DAC   0xcc
#define M_SOF15 0xcf
#define M_SOI   0xd8
#define M_TEM   0x01

static int is_rst(uint8_t m)
{
    return m >= 0xd0 && m <= 0xd7;
}

int sophon__is_sof(uint8_t m)
{
    return m >= M_SOF0 && m <= M_SOF15 && m != M_DHT && m != M_JPG && m != M_DAC;
}

/*
 * Skip entropy-coded data starting at pos: inside it 0xFF is followed by 0x00 (a stuffed byte),
 * by RSTn, or by more 0xFF fill; anything else is the next marker. Returns the position of that
 * marker's 0xFF, or len.
 */
static size_t skip_entropy(const uint8_t *p, size_t len, size_t pos)
{
    /* memchr() scans for the 0xFF bytes at memory speed: the probe walks whole files. */
    while (pos + 1 < len) {
        const uint8_t *ff = memchr(p + pos, 0xff, len - 1 - pos);
        if (ff == NULL)
            return len;
        pos = (size_t)(ff - p);
        if (p[pos + 1] == 0x00 || is_rst(p[pos + 1]) || p[pos + 1] == 0xff) {
            pos++;
            continue;
        }
        return pos;
    }
    return len;
}

int sophon__walk_start(struct sophon__walk *w, const uint8_t *jpeg, size_t len)
{
    w->jpeg = jpeg;
    w->len = len;
    w->pos = 2;
    w->done = 0;
    if (len < 2 || jpeg[0] != 0xff || jpeg[1] != M_SOI) {
        w->done = 1;
        return -EBADMSG;
    }
    return 0;
}

int sophon__walk_next(struct sophon__walk *w, struct sophon__segment *out)
{
    const uint8_t *jpeg = w->jpeg;
    size_t len = w->len, pos = w->pos, from, seglen;
    uint8_t m;

    if (w->done)
        return 0;
    out->junk = 0;
    for (;;) {
        /* Find the next marker: 0xFF, any number of 0xFF fill bytes, then the code. */
        from = pos;
        while (pos < len && jpeg[pos] != 0xff)
            pos++;
        out->start = pos;
        out->junk += pos - from;
        while (pos < len && jpeg[pos] == 0xff)
            pos++;
        if (pos >= len)
            break;
        m = jpeg[pos++];
        if (m == 0x00)
            out->junk += 2; /* A stuffed byte outside entropy-coded data: garbage to libjpeg. */
        if (m == 0x00 || m == M_TEM || is_rst(m) || m == M_SOI)
            continue; /* Standalone markers carry no length. */
        out->marker = m;
        if (m == SOPHON__M_EOI) {
            out->params = out->end = pos;
            out->nparams = 0;
            w->pos = pos;
            w->done = 1;
            return 1;
        }
        if (pos + 2 > len)
            break;
        seglen = ((size_t)jpeg[pos] << 8) | jpeg[pos + 1];
        if (seglen < 2) {
            w->done = 1;
            return -EBADMSG;
        }
        if (seglen > len - pos)
            break;
        out->params = pos + 2;
        out->nparams = seglen - 2;
        pos += seglen;
        if (m == SOPHON__M_SOS)
            pos = skip_entropy(jpeg, len, pos);
        out->end = pos;
        w->pos = pos;
        return 1;
    }
    w->pos = len;
    w->done = 1;
    return 0;
}

int sophon__parse_sos(struct sophon__scan *out, const uint8_t *jpeg,
                      const struct sophon__segment *seg)
{
    const uint8_t *p = jpeg + seg->params;
    size_t i;

    memset(out, 0, sizeof(*out));
    if (seg->marker != SOPHON__M_SOS || seg->nparams < 1 || p[0] < 1 || p[0] > 4 ||
        seg->nparams != 1 + 2 * (size_t)p[0] + 3)
        return -EBADMSG;
    out->ncomps = p[0];
    for (i = 0; i < out->ncomps; i++)
        out->comp[i] = p[1 + 2 * i];
    p += 1 + 2 * (size_t)out->ncomps;
    out->ss = p[0];
    out->se = p[1];
    out->ah = p[2] >> 4;
    out->al = p[2] & 15;
    return 0;
}

int sophon__walk_markers(struct sophon__markers *out, const uint8_t *jpeg, size_t len,
                         uint32_t stop_after)
{
    struct sophon__walk w;
    struct sophon__segment seg;
    int rc;

    out->scans = 0;
    out->eoi = 0;
    if (sophon__walk_start(&w, jpeg, len) < 0)
        return -EBADMSG;
    while ((rc = sophon__walk_next(&w, &seg)) > 0) {
        if (seg.marker == SOPHON__M_EOI) {
            out->eoi = 1;
            break;
        }
        if (seg.marker == SOPHON__M_SOS) {
            out->scans++;
            if (stop_after != 0 && out->scans > stop_after)
                break;
        }
    }
    return rc < 0 ? rc : 0;
}
