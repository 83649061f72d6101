/*
 * huffman.c - Huffman decoding for libjpeg-turbo 2.1, progressive and sequential (huffman.h).
 *
 * The decoding rules are those of ITU T.81 (G.1.2), with libjpeg's handling of what the
 * standard leaves open, which decides the coefficients of odd files and so must be the same:
 * - a coefficient index run past the end of the band (a corrupt run length) lands on
 *   coefficient 63 (jpeg_natural_order's padding in jutils.c);
 * - a DC value that overflows int is an error, and every stored value is truncated to JCOEF;
 * - "FF FF ... FF 00" in the data is one FF data byte; the FFs before a marker are fill bytes;
 * - a scan that needs bits past its data warns JWRN_HIT_MARKER and reads zero bits, and the
 *   rest of the segment is left as is; a code of 17 bits or more warns JWRN_HUFF_BAD_CODE and
 *   decodes as symbol 0, as does a refinement scan's coefficient of a size other than 1;
 * - inconsistent progressions warn JWRN_BOGUS_PROGRESSION; impossible scan parameters are
 *   JERR_BAD_PROGRESSION; tables that are not prefix codes, JERR_BAD_HUFF_TABLE.
 */
#include "huffman.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <jerror.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#if defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 2001000 &&            \
    LIBJPEG_TURBO_VERSION_NUMBER < 2002000
#define HUFFMAN_SUPPORTED 1
#else
#define HUFFMAN_SUPPORTED 0
#endif

int sophon__huffman_supported(void)
{
    return HUFFMAN_SUPPORTED;
}

#if HUFFMAN_SUPPORTED

/* libjpeg-turbo 2.1's jpegint.h: the entropy decoder and marker reader modules. */
struct jpeg_entropy_decoder {
    void (*start_pass)(j_decompress_ptr cinfo);
    boolean (*decode_mcu)(j_decompress_ptr cinfo, JBLOCKROW *MCU_data);
    boolean insufficient_data;
};

struct jpeg_marker_reader {
    void (*reset_marker_reader)(j_decompress_ptr cinfo);
    int (*read_markers)(j_decompress_ptr cinfo);
    jpeg_marker_parser_method read_restart_marker;
    boolean saw_SOI;
    boolean saw_SOF;
    int next_restart_num;
    unsigned int discarded_bytes;
};

#define LOOK  10 /* Codes of up to LOOK bits decode with one lookup. */
#define FUSED 0x80u
#define COEF  0x40u /* FUSED, and a coefficient (not an end of band or a run of 16 zeros). */

/* make_table modes: what a symbol's extra bits are, for the fused lookup. */
enum { TAB_DC, TAB_AC, TAB_REFINE };

struct htab {
    /*
     * By the next LOOK bits: bits 0-5 the bits to take (0: a longer code, or none), 8-15 the
     * symbol; with FUSED, the taken bits include the coefficient's extra bits too, and bits
     * 16-31 hold its value; COEF marks those of them that are a coefficient.
     */
    uint32_t look[1 << LOOK];
    int32_t maxcode[18];   /* Largest code of each length, -1 if none; [17] ends the search. */
    int32_t valoffset[18]; /* Index in val of the first code of each length, minus that code. */
    uint8_t val[256];
};

/*
 * The bit reader. buf holds the next bits MSB first: nbits of them are data, and the bits below
 * are zero or the bits of the bytes at p (loaded ahead, 8 at a time, and loaded again in place
 * when their turn comes). p never passes a marker: on one, libjpeg's unread_marker is set.
 */
struct bits {
    uint64_t buf;
    int nbits;
    const uint8_t *p, *end;
};

struct decoder {
    struct jpeg_entropy_decoder pub; /* First member: cinfo->entropy points here. */
    struct bits b; /* The bit reader, between MCUs and for the out-of-line paths. */
    unsigned int eobrun;
    unsigned int restarts_to_go;
    int last_dc[MAX_COMPS_IN_SCAN];
    const struct htab *dc[MAX_COMPS_IN_SCAN]; /* This scan's DC table of each component. */
    const struct htab *ac;                    /* This scan's AC table. */
    struct htab *tabs[2][NUM_HUFF_TBLS];      /* [0] DC, [1] AC; built when first used. */
    /* zz[r][b]: the coefficients 8r..8r+7 flagged in b, coefficient z (zigzag) on bit 63 - z. */
    uint64_t (*zz)[256];
    int bmi2; /* Refinement scans use ac_refine_bmi2. */
    /* Sequential scans (jdhuff.c's decode_mcu): each block's tables, and whether its DC and AC
     * values are wanted (not the AC values of a component scaled to 1/8). */
    const struct htab *dct[D_MAX_BLOCKS_IN_MCU], *act[D_MAX_BLOCKS_IN_MCU];
    uint8_t dc_needed[D_MAX_BLOCKS_IN_MCU], ac_needed[D_MAX_BLOCKS_IN_MCU];
    JBLOCK unwanted; /* Where the AC values nobody wants go. */
    /*
     * sophon__huffman_want: the blocks of every component's array, one after the other from
     * base (nblocks 0 without it); a bit for each, set if its values are wanted; and each
     * one's nonzero AC coefficients as a mask (coefficient z on bit 63 - z), kept up to date
     * by the progressive decoders, which then read no unwanted block and store nothing in one.
     */
    const JBLOCK *base;
    size_t nblocks;
    const uint64_t *wanted;
    uint64_t *masks;
    uint64_t band_rev; /* This scan's coefficients, coefficient z on bit 63 - z. */
};

/* Zigzag index -> natural index, with libjpeg's padding for runs past the end. */
static const uint8_t natural[64 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33,
    40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36,
    29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
};

static void *pool_alloc(j_decompress_ptr c, size_t n)
{
    return (*c->mem->alloc_small)((j_common_ptr)c, JPOOL_IMAGE, n);
}

/* Figure F.12: the value of n extra bits x, without a branch (the sign of a coefficient is a
 * coin toss the CPU would mispredict half the time). */
static inline __attribute__((always_inline)) int extend(unsigned int x, int n)
{
    int neg = (int)((x >> (n - 1)) ^ 1); /* The top bit is 0: negative. */

    return (int)x - (neg << n) + neg;
}

/*
 * jpeg_make_d_derived_tbl's checks, then this decoder's tables for a scan of the mode; fused AC
 * values come shifted left by al (the scan's Al).
 */
static const struct htab *make_table(j_decompress_ptr c, struct decoder *e, int mode, int tblno,
                                     int al)
{
    int dc = mode == TAB_DC;
    uint8_t size[257];
    uint32_t code[257];
    uint32_t cd;
    JHUFF_TBL *h;
    struct htab *t;
    int n, l, i, p, si;

    if (tblno < 0 || tblno >= NUM_HUFF_TBLS)
        ERREXIT1(c, JERR_NO_HUFF_TABLE, tblno);
    h = dc ? c->dc_huff_tbl_ptrs[tblno] : c->ac_huff_tbl_ptrs[tblno];
    if (h == NULL)
        ERREXIT1(c, JERR_NO_HUFF_TABLE, tblno);
    if (e->tabs[!dc][tblno] == NULL)
        e->tabs[!dc][tblno] = pool_alloc(c, sizeof(struct htab));
    t = e->tabs[!dc][tblno];

    n = 0;
    for (l = 1; l <= 16; l++) {
        if (n + h->bits[l] > 256)
            ERREXIT(c, JERR_BAD_HUFF_TABLE);
        for (i = 0; i < h->bits[l]; i++)
            size[n++] = (uint8_t)l;
    }
    size[n] = 0;
    /* Canonical codes; a length's codes must leave its all-ones code unused. */
    cd = 0;
    si = size[0];
    p = 0;
    while (size[p] != 0) {
        while (size[p] == si)
            code[p++] = cd++;
        if (cd >= (1u << si))
            ERREXIT(c, JERR_BAD_HUFF_TABLE);
        cd <<= 1;
        si++;
    }
    if (dc)
        for (i = 0; i < n; i++)
            if (h->huffval[i] > 15)
                ERREXIT(c, JERR_BAD_HUFF_TABLE);

    p = 0;
    for (l = 1; l <= 16; l++) {
        if (h->bits[l] != 0) {
            t->valoffset[l] = p - (int32_t)code[p];
            p += h->bits[l];
            t->maxcode[l] = (int32_t)code[p - 1];
        } else {
            t->maxcode[l] = -1;
        }
    }
    t->valoffset[17] = 0;
    t->maxcode[17] = 0xFFFFF;
    memset(t->look, 0, sizeof(t->look));
    p = 0;
    for (l = 1; l <= LOOK; l++) {
        for (i = 0; i < h->bits[l]; i++, p++) {
            uint32_t first = code[p] << (LOOK - l), k, sym = h->huffval[p];
            /* A refinement scan's new coefficient has 1 extra bit, its sign, whatever its size. */
            int sz = dc ? (int)sym : (int)(sym & 15);
            int extra = mode == TAB_REFINE ? 1 : sz;
            int fused = sz != 0 && l + extra <= LOOK && (mode != TAB_REFINE || sz == 1);

            for (k = 0; k < (1u << (LOOK - l)); k++) {
                uint32_t v = (sym << 8) | (uint32_t)l;

                if (fused)
                    v = (uint32_t)extend(k >> (LOOK - l - extra), extra) << al << 16 | sym << 8 |
                        FUSED | COEF | (uint32_t)(l + extra);
                t->look[first + k] = v;
            }
        }
    }
    memcpy(t->val, h->huffval, sizeof(t->val));
    return t;
}

#define INLINE static inline __attribute__((always_inline))

/*
 * The decoders keep the bit reader in a local struct bits that only always-inline functions
 * see, so that it lives in registers; the out-of-line paths work on e->b, between save and load.
 */
INLINE void load(j_decompress_ptr c, const struct decoder *e, struct bits *b)
{
    b->buf = e->b.buf;
    b->nbits = e->b.nbits;
    b->p = c->src->next_input_byte;
    b->end = b->p + c->src->bytes_in_buffer;
}

INLINE void save(j_decompress_ptr c, struct decoder *e, const struct bits *b)
{
    e->b = *b;
    c->src->next_input_byte = b->p;
    c->src->bytes_in_buffer = (size_t)(b->end - b->p);
}

/* The next byte of the source, asking it for more when it runs dry (jpeg_mem_src warns). */
static int next_byte(j_decompress_ptr c, struct bits *b)
{
    if (b->p == b->end) {
        c->src->next_input_byte = b->p;
        c->src->bytes_in_buffer = 0;
        if (!(*c->src->fill_input_buffer)(c))
            ERREXIT(c, JERR_CANT_SUSPEND);
        b->p = c->src->next_input_byte;
        b->end = b->p + c->src->bytes_in_buffer;
        if (b->p == b->end)
            ERREXIT(c, JERR_INPUT_EMPTY);
    }
    return *b->p++;
}

/* Fill e->b to more than 56 bits, or up to the marker that ends the data. */
static void fill_slow(j_decompress_ptr c, struct decoder *e)
{
    struct bits *b = &e->b;

    while (b->nbits <= 56 && c->unread_marker == 0) {
        int v = next_byte(c, b);

        if (v == 0xFF) {
            int ffs = 0;

            do {
                v = next_byte(c, b);
                ffs++;
            } while (v == 0xFF);
            if (v != 0) {
                c->unread_marker = v;
                return;
            }
            /*
             * "FF FF .. FF 00": one FF data byte to libjpeg's slow paths, but a marker to
             * libjpeg-turbo's fast sequential path, which then redecodes the MCU on the slow
             * path over what it had stored from zero bits. The standard has no such sequence:
             * in a sequential scan, call it corrupt rather than mimic that.
             */
            if (ffs > 1 && !c->progressive_mode)
                WARNMS(c, JWRN_HUFF_BAD_CODE);
            v = 0xFF;
        }
        b->buf |= (uint64_t)v << (56 - b->nbits);
        b->nbits += 8;
    }
}

/* Past the data: warn once per segment, as libjpeg does, and read zero bits from then on. */
static void out_of_data(j_decompress_ptr c, struct decoder *e)
{
    if (!e->pub.insufficient_data) {
        WARNMS(c, JWRN_HIT_MARKER);
        e->pub.insufficient_data = TRUE;
    }
    e->b.nbits = 64;
}

/* Up to 63 bits (64 only past a marker). */
INLINE void fill(j_decompress_ptr c, struct decoder *e, struct bits *b)
{
    if (b->end - b->p >= 8 && c->unread_marker == 0) {
        uint64_t w;

        memcpy(&w, b->p, 8);
        /* No 0xFF among the 8 bytes: no stuffing and no marker, take them as they are. */
        if (((~w - 0x0101010101010101ull) & w & 0x8080808080808080ull) == 0) {
            int n = (63 - b->nbits) >> 3;

            b->buf |= __builtin_bswap64(w) >> b->nbits;
            b->p += n;
            b->nbits += 8 * n;
            return;
        }
    }
    e->b = *b;
    fill_slow(c, e);
    *b = e->b;
}

INLINE void need(j_decompress_ptr c, struct decoder *e, struct bits *b, int n)
{
    if (b->nbits < n) {
        fill(c, e, b);
        if (b->nbits < n) {
            e->b = *b;
            out_of_data(c, e);
            *b = e->b;
        }
    }
}

/* n in 1..16. */
INLINE unsigned int get_bits(j_decompress_ptr c, struct decoder *e, struct bits *b, int n)
{
    unsigned int v;

    need(c, e, b, n);
    v = (unsigned int)(b->buf >> (64 - n));
    b->buf <<= n;
    b->nbits -= n;
    return v;
}

/* A code of at least `from` bits (or none), from e->b filled as far as it goes. */
static int decode_slow(j_decompress_ptr c, struct decoder *e, const struct htab *t, int from)
{
    struct bits *b = &e->b;
    uint32_t w;
    int l;

    /* decode filled to 16 bits; a bad code takes 17. */
    if (b->nbits <= 56)
        fill_slow(c, e);
    w = (uint32_t)(b->buf >> 48);
    for (l = from; l <= 16; l++)
        if ((int32_t)(w >> (16 - l)) <= t->maxcode[l])
            break;
    if (b->nbits < l)
        out_of_data(c, e);
    if (l > 16) {
        /* libjpeg reads 17 bits before it gives up. */
        b->buf <<= 17;
        b->nbits -= 17;
        WARNMS(c, JWRN_HUFF_BAD_CODE);
        return 0;
    }
    b->buf <<= l;
    b->nbits -= l;
    return t->val[((w >> (16 - l)) + (uint32_t)t->valoffset[l]) & 0xFF];
}

/*
 * The next symbol. With 0x100 set in what it returns, *v holds the value of the coefficient's
 * extra bits (FUSED lookups), already taken; else the caller reads them.
 */
INLINE int decode(j_decompress_ptr c, struct decoder *e, struct bits *b, const struct htab *t,
                  int *v)
{
    uint32_t x;
    int l, s;

    if (b->nbits < 16)
        fill(c, e, b);
    x = t->look[b->buf >> (64 - LOOK)];
    l = (int)(x & 63);
    if (l != 0 && l <= b->nbits) {
        b->buf <<= l;
        b->nbits -= l;
        *v = (int32_t)x >> 16;
        return (int)((x >> 8) & 0xFF) | (int)(x & FUSED) << 1;
    }
    /* A long code, or the end of the data: bit by bit, as libjpeg, the code alone. */
    e->b = *b;
    s = decode_slow(c, e, t, l == 0 ? LOOK + 1 : 1);
    *b = e->b;
    return s;
}

/* What starts afresh with every scan and restart interval: bits, DC predictions, EOB run. */
static void new_segment(j_decompress_ptr c, struct decoder *e)
{
    e->b.buf = 0;
    e->b.nbits = 0;
    memset(e->last_dc, 0, sizeof(e->last_dc));
    e->eobrun = 0;
    e->restarts_to_go = c->restart_interval;
}

/* process_restart in jdphuff.c: at the start of every restart interval but the first. */
static void restart(j_decompress_ptr c, struct decoder *e)
{
    c->marker->discarded_bytes += (unsigned int)(e->b.nbits < 64 ? e->b.nbits / 8 : 0);
    if (!(*c->marker->read_restart_marker)(c))
        ERREXIT(c, JERR_CANT_SUSPEND);
    new_segment(c, e);
    /* Right against a marker, the next segment is empty: leave the flag set. */
    if (c->unread_marker == 0)
        e->pub.insufficient_data = FALSE;
}

INLINE void mcu_start(j_decompress_ptr c, struct decoder *e)
{
    if (c->restart_interval != 0 && e->restarts_to_go == 0)
        restart(c, e);
}

INLINE void mcu_end(j_decompress_ptr c, struct decoder *e)
{
    if (c->restart_interval != 0)
        e->restarts_to_go--;
}

/* Figure F.12's DC difference: a size symbol, then that many extra bits. */
INLINE int dc_diff(j_decompress_ptr c, struct decoder *e, struct bits *b, const struct htab *t)
{
    int v = 0, s = decode(c, e, b, t, &v);

    if (s & 0x100)
        return v;
    return s != 0 ? extend(get_bits(c, e, b, s), s) : 0;
}

/* The index of blk among sophon__huffman_want's blocks, nblocks or more if it is not one. */
INLINE size_t block_index(const struct decoder *e, const void *blk)
{
    return ((uintptr_t)blk - (uintptr_t)e->base) / sizeof(JBLOCK);
}

/* Whether the values of block i (from block_index) are wanted: all are, without masks. */
INLINE int wanted(const struct decoder *e, size_t i)
{
    return i >= e->nblocks || (e->wanted[i / 64] >> (i % 64) & 1);
}

static boolean dc_first(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;
    struct bits b;
    int blkn;

    mcu_start(c, e);
    if (!e->pub.insufficient_data) {
        load(c, e, &b);
        for (blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
            int ci = c->MCU_membership[blkn];
            int s = dc_diff(c, e, &b, e->dc[ci]);
            int last = e->last_dc[ci];

            if ((last >= 0 && s > INT_MAX - last) || (last < 0 && s < INT_MIN - last))
                ERREXIT(c, JERR_BAD_DCT_COEF);
            last += s;
            e->last_dc[ci] = last;
            if (wanted(e, block_index(e, mcu[blkn])))
                mcu[blkn][0][0] = (JCOEF)(int)((unsigned int)last << c->Al);
        }
        save(c, e, &b);
    }
    mcu_end(c, e);
    return TRUE;
}

static boolean dc_refine(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;
    struct bits b;
    int blkn;

    mcu_start(c, e);
    /* As jdphuff.c: no check of insufficient_data, the zero bits change nothing. */
    load(c, e, &b);
    for (blkn = 0; blkn < c->blocks_in_MCU; blkn++)
        if (get_bits(c, e, &b, 1) && wanted(e, block_index(e, mcu[blkn])))
            mcu[blkn][0][0] = (JCOEF)(mcu[blkn][0][0] | (1 << c->Al));
    save(c, e, &b);
    mcu_end(c, e);
    return TRUE;
}

/* blk's nonzero coefficients, coefficient z (zigzag order) on bit 63 - z, as the block masks. */
INLINE uint64_t nonzero(const struct decoder *e, const JCOEF *blk)
{
    uint64_t nat = 0, zz;
    int r;

#ifdef __SSE2__
    const __m128i zero = _mm_setzero_si128();

    for (r = 0; r < 8; r += 2) {
        __m128i a = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(blk + 8 * r)), zero);
        __m128i b = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(blk + 8 * r + 8)), zero);

        nat |= (uint64_t)(~_mm_movemask_epi8(_mm_packs_epi16(a, b)) & 0xFFFF) << (8 * r);
    }
#else
    for (r = 0; r < 64; r++)
        nat |= (uint64_t)(blk[r] != 0) << r;
#endif
    zz = 0;
    for (r = 0; r < 8; r++)
        zz |= e->zz[r][(nat >> (8 * r)) & 0xFF];
    return zz;
}

/* v with its bits in reverse order. */
INLINE uint64_t rev64(uint64_t v)
{
    v = __builtin_bswap64(v);
    v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
    v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
    return ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
}

/* Bits from..63 of a 64-bit mask (none from 64 on). */
INLINE uint64_t from_bit(int from)
{
    return from < 64 ? ~0ull << from : 0;
}

/* Record in mask (coefficient z on bit 63 - z) whether the coefficient stored at zigzag index k
 * is nonzero; k past 63 stored on 63 (natural's padding). */
INLINE void note(uint64_t *mask, int k, int v)
{
    uint64_t bit = 1ull << (63 - (k < 64 ? k : 63));

    *mask = (*mask & ~bit) | (v != 0 ? bit : 0);
}

/*
 * A coefficient with a FUSED lookup, taken without a check for bits: the caller has seen to
 * them (past_end then notices zero bits taken past the end of the data). Returns 0, having
 * taken nothing, if the next symbol is something else. With mask, notes the coefficient there.
 */
INLINE int quick_coef(struct bits *b, const struct htab *t, JCOEF *blk, int *k, uint64_t *mask)
{
    uint32_t x = t->look[b->buf >> (64 - LOOK)];
    JCOEF v;

    if (!(x & COEF))
        return 0;
    b->buf <<= x & 63;
    b->nbits -= (int)(x & 63);
    *k += (int)(x >> 12) & 15;
    v = (JCOEF)((int32_t)x >> 16);
    blk[natural[*k]] = v;
    if (mask != NULL)
        note(mask, *k, v);
    (*k)++;
    return 1;
}

/* After quick_coef: zero bits taken past the end of the data warn, as libjpeg does. */
INLINE void past_end(j_decompress_ptr c, struct decoder *e, struct bits *b)
{
    if (b->nbits < 0) {
        e->b = *b;
        out_of_data(c, e);
        *b = e->b;
    }
}

/*
 * AC coefficients k..se of one block, for a sequential scan or a progressive first AC scan:
 * those whose code and extra bits take LOOK bits or less four at a time (a refill leaves room
 * for four, so one check for bits covers them; their values shifted by al already), the rest
 * one by one, each stored in blk and, with mask, noted there. Returns the zero run of the
 * end-of-band symbol that ended the band early, or -1 if it ran to se.
 */
INLINE int ac_band(j_decompress_ptr c, struct decoder *e, struct bits *b, const struct htab *t,
                   JCOEF *blk, int k, int se, int al, uint64_t *mask)
{
    while (k <= se) {
        int v = 0, rs, r, s;

        if (b->nbits < 4 * LOOK)
            fill(c, e, b);
        if (quick_coef(b, t, blk, &k, mask) && k <= se && quick_coef(b, t, blk, &k, mask) &&
            k <= se && quick_coef(b, t, blk, &k, mask) && k <= se &&
            quick_coef(b, t, blk, &k, mask)) {
            past_end(c, e, b);
            continue;
        }
        past_end(c, e, b);
        if (k > se)
            break;
        rs = decode(c, e, b, t, &v);
        r = (rs >> 4) & 15;
        s = rs & 15;
        if (s != 0) {
            k += r;
            if (!(rs & 0x100))
                v = (int)((unsigned int)extend(get_bits(c, e, b, s), s) << al);
            blk[natural[k]] = (JCOEF)v;
            if (mask != NULL)
                note(mask, k, (JCOEF)v);
        } else if (r == 15) {
            k += 15;
        } else {
            return r;
        }
        k++;
    }
    return -1;
}

__attribute__((noinline)) static boolean first_block(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;
    struct bits b;

    mcu_start(c, e);
    if (!e->pub.insufficient_data) {
        if (e->eobrun > 0) {
            e->eobrun--;
        } else {
            JCOEF *blk = mcu[0][0];
            size_t i = block_index(e, blk);
            uint64_t mask = i < e->nblocks ? e->masks[i] : 0;
            int r;

            if (!wanted(e, i))
                blk = e->unwanted;
            load(c, e, &b);
            r = ac_band(c, e, &b, e->ac, blk, c->Ss, c->Se, c->Al, &mask);
            if (r >= 0) {
                unsigned int run = 1u << r;

                if (r != 0)
                    run += get_bits(c, e, &b, r);
                e->eobrun = run - 1;
            }
            if (i < e->nblocks)
                e->masks[i] = mask;
            save(c, e, &b);
        }
    }
    mcu_end(c, e);
    return TRUE;
}

/*
 * A refinement scan's correction bits, one for each nonzero coefficient in todo (zigzag bits),
 * in order: a 1 adds the scan's bit to the magnitude, unless it is there already.
 */
INLINE void correct(j_decompress_ptr c, struct decoder *e, struct bits *b, JCOEF *blk,
                    uint64_t todo, int p1)
{
    while (todo != 0) {
        JCOEF *x;
        int bit, sign, add;

        if (b->nbits == 0)
            need(c, e, b, 1);
        x = &blk[natural[__builtin_ctzll(todo)]];
        todo &= todo - 1;
        bit = (int)(b->buf >> 63);
        b->buf <<= 1;
        b->nbits--;
        sign = *x < 0 ? -1 : 0;
        add = -(bit & ((*x & p1) == 0));
        *x = (JCOEF)(*x + (((p1 ^ sign) - sign) & add));
    }
}

/*
 * A refinement scan's next symbol: 1 with *r the zeros to pass and *v the new coefficient (p1 or
 * -p1; 0 for a run of 16 zeros), or 0 at the end of the band, with *run the blocks it covers.
 */
INLINE int refine_symbol(j_decompress_ptr c, struct decoder *e, struct bits *b,
                         const struct htab *t, int p1, int *r, int *v, unsigned int *run)
{
    int x = 0, rs = decode(c, e, b, t, &x), s = rs & 15;

    *r = (rs >> 4) & 15;
    if (s != 0) {
        if (s != 1)
            WARNMS(c, JWRN_HUFF_BAD_CODE);
        if (!(rs & 0x100))
            x = (int)get_bits(c, e, b, 1) * 2 - 1;
        *v = (p1 ^ (x >> 31)) - (x >> 31); /* x * p1, x = 1 or -1. */
        return 1;
    }
    *v = 0;
    if (*r == 15)
        return 1;
    *run = 1u << *r;
    if (*r != 0)
        *run += get_bits(c, e, b, *r);
    return 0;
}

__attribute__((noinline)) static boolean refine_block(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;
    struct bits b;

    mcu_start(c, e);
    if (!e->pub.insufficient_data) {
        JCOEF *blk = mcu[0][0];
        const struct htab *t = e->ac;
        int k = c->Ss, Se = c->Se, p1 = 1 << c->Al;
        uint64_t band = from_bit(k) & (~0ull >> (63 - Se));
        size_t i = block_index(e, blk);
        /* This decoder's masks are in zigzag order. */
        uint64_t nz = rev64(i < e->nblocks ? e->masks[i] : nonzero(e, blk)) & band;
        unsigned int run = e->eobrun;

        if (!wanted(e, i))
            blk = e->unwanted;

        load(c, e, &b);
        if (run == 0) {
            while (k <= Se) {
                uint64_t rest = band & from_bit(k), zeros, before;
                int r, v, z;

                if (!refine_symbol(c, e, &b, t, p1, &r, &v, &run))
                    break;
                /* Pass r zero coefficients, and correct the nonzero ones on the way; the new
                 * coefficient (or the end of a ZRL) is the next zero. */
                zeros = rest & ~nz;
                while (r-- > 0 && zeros != 0)
                    zeros &= zeros - 1;
                if (zeros != 0) {
                    z = __builtin_ctzll(zeros);
                    before = rest & nz & ~from_bit(z);
                } else {
                    z = Se + 1;
                    before = rest & nz;
                }
                correct(c, e, &b, blk, before, p1);
                if (v != 0) {
                    blk[natural[z]] = (JCOEF)v;
                    nz |= 1ull << (z < 64 ? z : 63); /* natural[64] is 63. */
                }
                k = z + 1;
            }
        }
        if (run > 0) {
            correct(c, e, &b, blk, nz & from_bit(k), p1);
            run--;
        }
        if (i < e->nblocks)
            e->masks[i] |= rev64(nz);
        e->eobrun = run;
        save(c, e, &b);
    }
    mcu_end(c, e);
    return TRUE;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_BMI2   1
#define TARGET_BMI2 __attribute__((target("popcnt,bmi,bmi2")))

/*
 * The BMI2 decoder works on masks in reverse zigzag order, as nonzero() and the block masks
 * give them: coefficient z on bit 63 - z. Then the correction bits, first read first in
 * zigzag order, go where they belong with one pdep, which fills a mask's bits from the lowest.
 */

/* Zigzag coefficients from..63, in reverse order (none from 64 on). */
INLINE uint64_t from_rev(int from)
{
    return from < 64 ? ~0ull >> from : 0;
}

/* Add the scan's bit to the magnitude of blk's coefficients in hits (reverse zigzag bits). */
INLINE void apply(JCOEF *blk, uint64_t hits, int p1)
{
    while (hits != 0) {
        JCOEF *x = &blk[natural[63 - __builtin_ctzll(hits)]];
        int sign = *x < 0 ? -1 : 0, add = -((*x & p1) == 0);

        hits &= hits - 1;
        *x = (JCOEF)(*x + (((p1 ^ sign) - sign) & add));
    }
}

/*
 * The correction bits of the nonzero coefficients in todo (reverse zigzag bits), read at once:
 * the coefficients whose bit is 1. The n bits read, as a number, have the first on top, and
 * pdep puts that on todo's highest bit: the coefficient first in zigzag order.
 */
TARGET_BMI2 static inline __attribute__((always_inline)) uint64_t
take_hits(j_decompress_ptr c, struct decoder *e, struct bits *b, uint64_t todo)
{
    uint64_t hits = 0;
    int n = __builtin_popcountll(todo);

    /* Mostly all at once, without a branch: n may be 0. */
    if (n <= b->nbits) {
        hits = _pdep_u64(b->buf >> (63 - n) >> 1, todo);
        b->buf <<= n;
        b->nbits -= n;
        return hits;
    }
    while (todo != 0) {
        int m;
        uint64_t part;

        n = __builtin_popcountll(todo);
        if (b->nbits < n) {
            fill(c, e, b);
            if (b->nbits == 0)
                need(c, e, b, 1);
        }
        /* The m coefficients first in zigzag order: todo but its n - m lowest bits. */
        m = n < b->nbits ? n : b->nbits;
        part = todo & ~_pdep_u64((1ull << (n - m)) - 1, todo);
        hits |= _pdep_u64(b->buf >> (64 - m), part);
        b->buf <<= m;
        b->nbits -= m;
        todo &= ~part;
    }
    return hits;
}

/*
 * ac_refine with BMI2: the zero a run ends on is one pdep away, and each stretch of correction
 * bits is read in one go; the corrections are applied at the end of the block (they touch
 * coefficients that were nonzero before it, which nothing else in the block changes, but for a
 * run past the band's end, which libjpeg stores on coefficient 63: then they go first).
 */
TARGET_BMI2 __attribute__((noinline)) static boolean refine_block_bmi2(j_decompress_ptr c,
                                                                       JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;
    struct bits b;

    mcu_start(c, e);
    if (!e->pub.insufficient_data) {
        JCOEF *blk = mcu[0][0];
        const struct htab *t = e->ac;
        int k = c->Ss, Se = c->Se, p1 = 1 << c->Al;
        uint64_t band = e->band_rev, hits = 0;
        size_t i = block_index(e, blk);
        uint64_t nz = (i < e->nblocks ? e->masks[i] : nonzero(e, blk)) & band;
        unsigned int run = e->eobrun;

        if (!wanted(e, i))
            blk = e->unwanted;

        load(c, e, &b);
        if (run == 0) {
            while (k <= Se) {
                uint64_t rest = band & from_rev(k), zeros = rest & ~nz, before;
                int r, v, z, left;

                if (!refine_symbol(c, e, &b, t, p1, &r, &v, &run))
                    break;
                /* The zero the run ends on: the (r + 1)-th highest bit of zeros. */
                left = __builtin_popcountll(zeros) - r;
                if (left > 0) {
                    uint64_t sel = _pdep_u64(1ull << (left - 1), zeros);

                    z = __builtin_clzll(sel);
                    before = rest & nz & ~(sel | (sel - 1));
                } else {
                    z = Se + 1;
                    before = rest & nz;
                }
                hits |= take_hits(c, e, &b, before);
                if (v != 0) {
                    if (z > Se) {
                        apply(blk, hits, p1);
                        hits = 0;
                    }
                    blk[natural[z]] = (JCOEF)v;
                    nz |= 1ull << (63 - (z < 64 ? z : 63)); /* natural[64] is 63. */
                }
                k = z + 1;
            }
        }
        if (run > 0) {
            hits |= take_hits(c, e, &b, nz & from_rev(k));
            run--;
        }
        apply(blk, hits, p1);
        if (i < e->nblocks)
            e->masks[i] |= nz;
        e->eobrun = run;
        save(c, e, &b);
    }
    mcu_end(c, e);
    return TRUE;
}
#else
#define HAVE_BMI2 0
#endif

/*
 * Most calls of a progressive AC scan are for a block inside an end-of-band run, with nothing
 * to read: always in a first scan, and in a refinement scan when the block has no nonzero
 * coefficient in the band (its mask tells, without a look at the block). Those take the run's
 * next block here, in a small function, and the decoders below only get the others.
 */
INLINE int quiet_block(j_decompress_ptr c, struct decoder *e, JBLOCKROW *mcu, int refine)
{
    if (e->eobrun == 0 || c->restart_interval != 0 || e->pub.insufficient_data)
        return 0;
    if (refine) {
        size_t i = block_index(e, mcu[0]);

        if (i >= e->nblocks || (e->masks[i] & e->band_rev) != 0)
            return 0;
    }
    e->eobrun--;
    return 1;
}

static boolean ac_first(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;

    return quiet_block(c, e, mcu, 0) ? TRUE : first_block(c, mcu);
}

static boolean ac_refine(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;

    return quiet_block(c, e, mcu, 1) ? TRUE : refine_block(c, mcu);
}

#if HAVE_BMI2
static boolean ac_refine_bmi2(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;

    return quiet_block(c, e, mcu, 1) ? TRUE : refine_block_bmi2(c, mcu);
}
#endif

/* nonzero()'s tables, once. */
static void make_zz(j_decompress_ptr c, struct decoder *e)
{
    int r, v;

    if (e->zz != NULL)
        return;
    e->zz = pool_alloc(c, 8 * sizeof(*e->zz));
    for (r = 0; r < 8; r++) {
        e->zz[r][0] = 0;
        for (v = 1; v < 256; v++) {
            int j = __builtin_ctz((unsigned int)v), z;

            for (z = 0; natural[z] != 8 * r + j; z++)
                ;
            e->zz[r][v] = e->zz[r][v & (v - 1)] | 1ull << (63 - z);
        }
    }
}

/* Set the current scan up: tables, decoder, and fresh bit reader and predictions. */
static void setup_scan(j_decompress_ptr c)
{
    struct decoder *e = (struct decoder *)c->entropy;
    int ci;

    if (c->Ah == 0)
        e->pub.decode_mcu = c->Ss == 0 ? dc_first : ac_first;
    else if (c->Ss == 0)
        e->pub.decode_mcu = dc_refine;
    else
#if HAVE_BMI2
        e->pub.decode_mcu = e->bmi2 ? ac_refine_bmi2 : ac_refine;
#else
        e->pub.decode_mcu = ac_refine;
#endif
    e->band_rev = (~0ull >> c->Ss) & ~(c->Se < 63 ? ~0ull >> (c->Se + 1) : 0);
    for (ci = 0; ci < c->comps_in_scan; ci++) {
        jpeg_component_info *comp = c->cur_comp_info[ci];

        if (c->Ss == 0) {
            if (c->Ah == 0)
                e->dc[ci] = make_table(c, e, TAB_DC, comp->dc_tbl_no, 0);
        } else {
            e->ac = make_table(c, e, c->Ah != 0 ? TAB_REFINE : TAB_AC, comp->ac_tbl_no, c->Al);
        }
    }
    if (c->Ss != 0 && c->Ah != 0)
        make_zz(c, e);
    new_segment(c, e);
    e->pub.insufficient_data = FALSE;
}

/* start_pass_phuff_decoder's checks and progression bookkeeping, for every scan after the first. */
static void start_pass(j_decompress_ptr c)
{
    int dc = c->Ss == 0, ci, k;

    if ((dc && c->Se != 0) ||
        (!dc && (c->Ss > c->Se || c->Se >= DCTSIZE2 || c->comps_in_scan != 1)) ||
        (c->Ah != 0 && c->Al != c->Ah - 1) || c->Al > 13)
        ERREXIT4(c, JERR_BAD_PROGRESSION, c->Ss, c->Se, c->Ah, c->Al);
    for (ci = 0; ci < c->comps_in_scan; ci++) {
        int cindex = c->cur_comp_info[ci]->component_index;
        int *bits = c->coef_bits[cindex];
        /* 2.1's block smoothing also keeps each component's state before the scan. */
        int *prev = c->coef_bits[cindex + c->num_components];

        if (!dc && bits[0] < 0)
            WARNMS2(c, JWRN_BOGUS_PROGRESSION, cindex, 0);
        for (k = c->Ss < 1 ? c->Ss : 1; k <= (c->Se > 9 ? c->Se : 9); k++)
            prev[k] = c->input_scan_number > 1 ? bits[k] : 0;
        for (k = c->Ss; k <= c->Se; k++) {
            if (c->Ah != (bits[k] < 0 ? 0 : bits[k]))
                WARNMS2(c, JWRN_BOGUS_PROGRESSION, cindex, k);
            bits[k] = c->Al;
        }
    }
    setup_scan(c);
}

/*
 * A sequential (baseline or extended) MCU, as jdhuff.c's decode_mcu_slow decodes it: bad codes
 * warn (libjpeg-turbo's fast path takes them as symbol 0 without a word; the coefficients are the
 * same either way). MCU_data NULL (jpeg_skip_scanlines) decodes and drops.
 */
static boolean seq_decode(j_decompress_ptr c, JBLOCKROW *mcu)
{
    struct decoder *e = (struct decoder *)c->entropy;
    struct bits b;
    int blkn;

    mcu_start(c, e);
    if (!e->pub.insufficient_data) {
        load(c, e, &b);
        for (blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
            JCOEF *blk = mcu != NULL ? mcu[blkn][0] : NULL;
            int v = dc_diff(c, e, &b, e->dct[blkn]);

            if (e->dc_needed[blkn]) {
                int ci = c->MCU_membership[blkn];

                /* libjpeg lets a corrupt file's DC sum wrap around. */
                e->last_dc[ci] = (int)((unsigned int)e->last_dc[ci] + (unsigned int)v);
                if (blk != NULL)
                    blk[0] = (JCOEF)e->last_dc[ci];
            }
            if (blk == NULL || !e->ac_needed[blkn])
                blk = e->unwanted;
            /* An end of block (any zero run but 15) ends it, with no bits of its own. */
            ac_band(c, e, &b, e->act[blkn], blk, 1, DCTSIZE2 - 1, 0, NULL);
        }
        save(c, e, &b);
    }
    mcu_end(c, e);
    return TRUE;
}

/* start_pass_huff_decoder: tables, and per block of the MCU, which tables and what is needed. */
static void seq_setup(j_decompress_ptr c)
{
    struct decoder *e = (struct decoder *)c->entropy;
    int ci, blkn;

    for (ci = 0; ci < c->comps_in_scan; ci++) {
        make_table(c, e, TAB_DC, c->cur_comp_info[ci]->dc_tbl_no, 0);
        make_table(c, e, TAB_AC, c->cur_comp_info[ci]->ac_tbl_no, 0);
    }
    for (blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
        jpeg_component_info *comp = c->cur_comp_info[c->MCU_membership[blkn]];

        e->dct[blkn] = e->tabs[0][comp->dc_tbl_no];
        e->act[blkn] = e->tabs[1][comp->ac_tbl_no];
        e->dc_needed[blkn] = comp->component_needed != 0;
        e->ac_needed[blkn] = comp->component_needed && comp->DCT_scaled_size > 1;
    }
    e->pub.decode_mcu = seq_decode;
    new_segment(c, e);
    e->pub.insufficient_data = FALSE;
}

static void seq_start_pass(j_decompress_ptr c)
{
    /* A warning in libjpeg: some baseline files out there have zeroes in these bytes. */
    if (c->Ss != 0 || c->Se != DCTSIZE2 - 1 || c->Ah != 0 || c->Al != 0)
        WARNMS(c, JWRN_NOT_SEQUENTIAL);
    seq_setup(c);
}

int sophon__huffman_install_unchecked(j_decompress_ptr c, unsigned int flags)
{
    struct decoder *e;

    if (c->arith_code || (c->progressive_mode && c->coef_bits == NULL))
        return 0;
    e = pool_alloc(c, sizeof(*e));
    memset(e, 0, sizeof(*e));
    e->pub.start_pass = c->progressive_mode ? start_pass : seq_start_pass;
#if HAVE_BMI2
    /* pdep is microcoded, and slow, on AMD before Zen 3. */
    e->bmi2 = !(flags & SOPHON__HUFFMAN_PORTABLE) && __builtin_cpu_supports("bmi2") &&
              __builtin_cpu_supports("popcnt") && !__builtin_cpu_is("znver1") &&
              !__builtin_cpu_is("znver2");
#else
    (void)flags;
#endif
    c->entropy = &e->pub;
    /* libjpeg has checked the first scan (and recorded its progression): only set it up. */
    if (c->progressive_mode)
        setup_scan(c);
    else
        seq_setup(c);
    return 1;
}

uint64_t *sophon__huffman_want(j_decompress_ptr c, const JBLOCK *base, size_t n)
{
    struct decoder *e = (struct decoder *)c->entropy;
    size_t words = (n + 63) / 64;
    uint64_t *wanted;

    if (!c->progressive_mode || e == NULL || e->pub.start_pass != start_pass || n == 0 ||
        n > SIZE_MAX / 2 / sizeof(uint64_t))
        return NULL;
    e->masks = (*c->mem->alloc_large)((j_common_ptr)c, JPOOL_IMAGE, n * sizeof(uint64_t));
    wanted = (*c->mem->alloc_large)((j_common_ptr)c, JPOOL_IMAGE, words * sizeof(uint64_t));
    memset(e->masks, 0, n * sizeof(uint64_t));
    memset(wanted, 0, words * sizeof(uint64_t));
    e->base = base;
    e->nblocks = n;
    e->wanted = wanted;
    return wanted;
}

#else /* !HUFFMAN_SUPPORTED */

int sophon__huffman_install_unchecked(j_decompress_ptr c, unsigned int flags)
{
    (void)c;
    (void)flags;
    return 0;
}

uint64_t *sophon__huffman_want(j_decompress_ptr c, const JBLOCK *base, size_t n)
{
    (void)c;
    (void)base;
    (void)n;
    return NULL;
}

#endif
