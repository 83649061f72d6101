/*
 * markers.c - counting scans by walking markers, so that a progressive JPEG with thousands of
 * scans is refused in O(len) before libjpeg starts absorbing it.
 */
#include "markers.h"

#include <errno.h>
#include <string.h>

#define M_SOI 0xd8
#define M_EOI 0xd9
#define M_SOS 0xda
#define M_TEM 0x01

static int is_rst(uint8_t m)
{
    return m >= 0xd0 && m <= 0xd7;
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

int sophon__walk_markers(struct sophon__markers *out, const uint8_t *jpeg, size_t len,
                         uint32_t stop_after)
{
    uint32_t scans = 0;
    int eoi = 0;
    size_t pos;
    size_t seglen;
    uint8_t m;

    out->scans = 0;
    out->eoi = 0;
    if (len < 2 || jpeg[0] != 0xff || jpeg[1] != M_SOI)
        return -EBADMSG;
    pos = 2;
    for (;;) {
        /* Find the next marker: 0xFF, any number of 0xFF fill bytes, then the code. */
        while (pos < len && jpeg[pos] != 0xff)
            pos++;
        while (pos < len && jpeg[pos] == 0xff)
            pos++;
        if (pos >= len)
            break;
        m = jpeg[pos++];
        if (m == M_EOI) {
            eoi = 1;
            break;
        }
        if (m == 0x00 || m == M_TEM || is_rst(m) || m == M_SOI)
            continue; /* Standalone markers carry no length. */
        if (pos + 2 > len)
            break;
        seglen = ((size_t)jpeg[pos] << 8) | jpeg[pos + 1];
        if (seglen < 2)
            return -EBADMSG;
        if (seglen > len - pos)
            break;
        pos += seglen;
        if (m == M_SOS) {
            scans++;
            if (stop_after != 0 && scans > stop_after)
                break;
            pos = skip_entropy(jpeg, len, pos);
        }
    }
    out->scans = scans;
    out->eoi = eoi;
    return 0;
}
