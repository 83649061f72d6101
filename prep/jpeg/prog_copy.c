/*
 * prog_copy.c - the private copy of a progressive JPEG for a region decode: a lower SOF height, and
 * no AC scans for components decoded at 1/8 scale.
 */
#include "prog_copy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "markers.h"

/*
 * iMCU rows decoded below the last row a region needs. Two effects reach upwards from the bottom
 * of an image, and the cut image has its bottom where the full image does not:
 *  - Fancy upsampling (jdsample.c) interpolates each chroma row with the one below it; the main
 *    controller (jdmainct.c) takes that row from the next iMCU row, and in the last iMCU row
 *    repeats the last row instead. Only the last iMCU row differs.
 *  - Block smoothing (decompress_smooth_data in libjpeg-turbo 2.1's jdcoefct.c, used on the
 *    output pass when some of AC coefficients 1..9 were never sent in full) predicts those
 *    coefficients from the DC values of the blocks up to two block rows below, and treats the
 *    last two iMCU rows as the bottom edge. The last two iMCU rows differ.
 * Together, a pixel row of iMCU row n is upsampled from chroma of row n + 1, which is smoothed
 * from DC values of rows n + 2 and n + 3: rows up to three iMCU rows above the bottom are the
 * same as in the full image. One more iMCU row is room for what this reading may have missed;
 * it costs one iMCU row of entropy decoding per scan.
 */
#define MARGIN_IMCU_ROWS 4

uint32_t sophon__prog_copy_height(uint32_t height, uint32_t imcu_height, uint64_t rows)
{
    uint64_t h;

    if (imcu_height == 0 || rows >= height)
        return height;
    h = rows + (uint64_t)MARGIN_IMCU_ROWS * imcu_height;
    h = (h + imcu_height - 1) / imcu_height * imcu_height;
    return h < height ? (uint32_t)h : height;
}

/*
 * libjpeg's own checks of each scan (jdphuff.c start_pass_phuff_decoder, get_sos), replayed over
 * every scan of the file: coef_bits[c][k] is the point transform Al of the last scan that sent
 * coefficient k of component c, -1 before any. A scan left out of the copy must not hide an
 * error or warning libjpeg would have raised on it (all fatal to us), so any violation keeps
 * every scan.
 */
struct progression {
    int ncomps;
    const uint8_t *id;
    int coef_bits[4][64];
    int valid;
};

static int component_index(const struct progression *pr, uint8_t id)
{
    int c;

    for (c = 0; c < pr->ncomps; c++)
        if (pr->id[c] == id)
            return c;
    return -1;
}

static void progression_add(struct progression *pr, const struct sophon__scan *sc)
{
    int i, k;

    /* DC scans send coefficient 0 alone; AC scans one component's band within 1..63. */
    if (sc->ss == 0 ? sc->se != 0 : (sc->ss > sc->se || sc->se > 63 || sc->ncomps != 1))
        pr->valid = 0;
    if ((sc->ah != 0 && sc->al != sc->ah - 1) || sc->al > 13)
        pr->valid = 0;
    if (!pr->valid)
        return;
    for (i = 0; i < sc->ncomps; i++) {
        int c = component_index(pr, sc->comp[i]);
        int *bits;

        if (c < 0) {
            pr->valid = 0;
            return;
        }
        bits = pr->coef_bits[c];
        if (sc->ss > 0 && bits[0] < 0) /* AC before any DC. */
            pr->valid = 0;
        for (k = sc->ss; k <= sc->se; k++) {
            if (sc->ah != (bits[k] < 0 ? 0 : bits[k]))
                pr->valid = 0;
            bits[k] = sc->al;
        }
    }
}

/*
 * With AC scans left out, libjpeg would smooth the blocks of those components (their
 * coefficients 1..9 look never sent) and change their DC values, so the copy is decoded with
 * block smoothing off. That gives the full decode's bytes only if the full decode does not
 * smooth either: every component must have received coefficients 1..9 to full precision.
 */
static int progression_complete(const struct progression *pr)
{
    int c, k;

    for (c = 0; c < pr->ncomps; c++)
        for (k = 1; k <= 9; k++)
            if (pr->coef_bits[c][k] != 0)
                return 0;
    return 1;
}

/* Whether the copy leaves this scan out: an AC scan of a component that only needs its DC. */
static int drop_scan(const struct sophon__prog_copy *cut, const struct sophon__scan *sc)
{
    int c;

    if (sc->ss == 0 || sc->ncomps != 1)
        return 0;
    for (c = 0; c < cut->ncomps; c++)
        if (cut->id[c] == sc->comp[0])
            return cut->dc_only[c];
    return 0;
}

/* What the copy will be, from one walk over the file. */
struct plan {
    size_t height_at; /* Offset of the SOF's 2-byte height; 0 if not patched. */
    int drop;         /* Leave out the scans drop_scan() names. */
    size_t drop_bytes;
    uint32_t dropped;
};

/* Returns 1 with *pl filled, 0 when the file is to be decoded as it is. */
static int make_plan(struct plan *pl, const uint8_t *jpeg, size_t len,
                     const struct sophon__prog_copy *cut)
{
    struct sophon__walk w;
    struct sophon__segment seg;
    struct sophon__scan sc;
    struct progression pr;
    size_t sof_at = 0;
    int rc, eoi = 0, any_dc_only = 0, c;

    memset(pl, 0, sizeof(*pl));
    memset(&pr, 0, sizeof(pr));
    if (cut->ncomps < 1 || cut->ncomps > 4)
        return 0;
    for (c = 0; c < cut->ncomps; c++)
        any_dc_only |= cut->dc_only[c];
    pr.ncomps = cut->ncomps;
    pr.id = cut->id;
    pr.valid = 1;
    memset(pr.coef_bits, 0xff, sizeof(pr.coef_bits)); /* -1: nothing sent yet. */
    if (sophon__walk_start(&w, jpeg, len) < 0)
        return 0;
    while ((rc = sophon__walk_next(&w, &seg)) > 0) {
        /* Garbage makes libjpeg warn; the skipped scan tails would hide it among theirs. */
        if (seg.junk != 0)
            return 0;
        /* libjpeg has read the first SOF, before any scan, as the frame header. */
        if (sophon__is_sof(seg.marker) && sof_at == 0 && seg.nparams >= 6)
            sof_at = seg.params + 1;
        if (seg.marker == SOPHON__M_EOI) {
            eoi = 1;
            break;
        }
        if (seg.marker != SOPHON__M_SOS)
            continue;
        if (sof_at == 0 || sophon__parse_sos(&sc, jpeg, &seg) < 0)
            return 0;
        progression_add(&pr, &sc);
        if (drop_scan(cut, &sc)) {
            pl->drop_bytes += seg.end - seg.start;
            pl->dropped++;
        }
    }
    if (rc < 0 || !eoi)
        return 0;
    pl->drop = any_dc_only && pl->dropped > 0 && pr.valid && progression_complete(&pr);
    if (!pl->drop) {
        pl->drop_bytes = 0;
        pl->dropped = 0;
    }
    if (cut->height > 0 && cut->height < (((uint32_t)jpeg[sof_at] << 8) | jpeg[sof_at + 1]))
        pl->height_at = sof_at;
    return pl->height_at != 0 || pl->drop;
}

int sophon__prog_copy_make(uint8_t **out, size_t *out_len, uint32_t *dropped, const uint8_t *jpeg,
                           size_t len, const struct sophon__prog_copy *cut)
{
    struct sophon__walk w;
    struct sophon__segment seg;
    struct sophon__scan sc;
    struct plan pl;
    size_t from = 0, n = 0;
    uint8_t *copy;

    *out = NULL;
    *out_len = 0;
    *dropped = 0;
    if (!make_plan(&pl, jpeg, len, cut))
        return 0;
    copy = malloc(len - pl.drop_bytes);
    if (copy == NULL)
        return -ENOMEM;
    /* The same walk again: copy everything but the [start, end) of each scan left out. */
    if (pl.drop) {
        (void)sophon__walk_start(&w, jpeg, len);
        while (sophon__walk_next(&w, &seg) > 0 && seg.marker != SOPHON__M_EOI) {
            if (seg.marker != SOPHON__M_SOS || sophon__parse_sos(&sc, jpeg, &seg) < 0 ||
                !drop_scan(cut, &sc))
                continue;
            memcpy(copy + n, jpeg + from, seg.start - from);
            n += seg.start - from;
            from = seg.end;
        }
    }
    memcpy(copy + n, jpeg + from, len - from);
    n += len - from;
    /* The SOF comes before the first scan, so it is at the same offset in the copy. */
    if (pl.height_at != 0) {
        copy[pl.height_at] = (uint8_t)(cut->height >> 8);
        copy[pl.height_at + 1] = (uint8_t)cut->height;
    }
    *out = copy;
    *out_len = n;
    *dropped = pl.dropped;
    return 0;
}
