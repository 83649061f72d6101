/*
 * huffman.h - Huffman decoding for libjpeg-turbo 2.1, faster than its jdphuff.c and jdhuff.c.
 *
 * On progressive photos of a megapixel and more, 85-90% of a decode was jdphuff.c working
 * through the scans bit by bit; on large baseline photos, 90% was jdhuff.c. This decoder, for
 * progressive and sequential scans alike, produces the same coefficients, updates libjpeg's
 * progression state (coef_bits, read by block smoothing) the same way and reports the same
 * corrupt data through the same warnings, faster:
 * - it reads the entropy-coded data 8 bytes at a time where they hold no 0xFF;
 * - it decodes Huffman codes of up to 10 bits with one table lookup, together with the
 *   coefficient's extra bits when they fit in the 10;
 * - in successive-approximation AC refinement scans (most of a progressive file's bits), it
 *   finds the nonzero coefficients of a block with one mask (SSE2) and jumps over zero runs
 *   with bit operations, instead of visiting the 63 coefficients one by one; where the CPU has
 *   a fast BMI2 pdep, it also reads each stretch of correction bits at once.
 *
 * It takes the place of libjpeg's entropy module (struct jpeg_entropy_decoder, whose layout
 * libjpeg-turbo 2.1's jpegint.h gives) once jpeg_start_decompress has set libjpeg up and before
 * it reads the first MCU: libjpeg then calls it for every MCU and scan as it would its own
 * (with MCU_data NULL where jpeg_skip_scanlines only needs the data passed over).
 * Built against another libjpeg (where that layout or the progression bookkeeping may differ),
 * sophon__huffman_install does nothing and libjpeg decodes on its own.
 *
 * Known differences, on invalid data only:
 * - In sequential scans, libjpeg-turbo decodes most MCUs on a fast path that takes a bad Huffman
 *   code (17 bits without a match) for symbol 0 without a warning; its slow path, and this
 *   decoder, warn JWRN_HUFF_BAD_CODE, which sophon refuses as corrupt data. The fast path also
 *   takes "FF FF 00" in the data (not a valid JPEG sequence; one FF data byte to libjpeg's slow
 *   paths) for a marker, and keeps coefficients decoded from zero bits: this decoder warns a bad
 *   code there too.
 * - Junk bytes after the last bits a scan needs are noticed by libjpeg (JWRN_EXTRANEOUS_DATA)
 *   only when its byte-at-a-time reader happens not to have buffered them; this reader buffers
 *   more eagerly, so it notices such junk in fewer cases. The junk is never decoded.
 */
#ifndef SOPHON_PREP_HUFFMAN_H
#define SOPHON_PREP_HUFFMAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first. */

#include <jpeglib.h>

/* 1 if this build can replace libjpeg's Huffman decoders, else 0. */
int sophon__huffman_supported(void);

/*
 * sophon__huffman_install - replace cinfo's Huffman decoder with this one, if the process's
 * self-check (selfcheck.c, run once before the first install) found it to agree with the linked
 * libjpeg; else return 0 and leave libjpeg's. sophon__huffman_install_unchecked installs without
 * asking (the self-check itself). Call it once libjpeg has set up
 * its modules and the first scan and before it reads any entropy-coded data: in the first
 * progress-monitor callback of jpeg_start_decompress (or jpeg_read_coefficients) when
 * jpeg_has_multiple_scans, else right after jpeg_start_decompress. Not for arithmetic coding.
 * Its memory comes from cinfo's JPOOL_IMAGE pool. Errors go through cinfo->err like libjpeg's
 * own. Returns 1 if installed, 0 if not supported here.
 */
int sophon__huffman_install(j_decompress_ptr cinfo, unsigned int flags);
int sophon__huffman_install_unchecked(j_decompress_ptr cinfo, unsigned int flags);

/*
 * sophon__huffman_compare - reads jpeg[0..len) to coefficients with libjpeg's decoder and with
 * this one (flags as for install): 0 if both fail alike or give the same coefficients and
 * progression state, -EPROTO otherwise (err says how). What the self-check runs.
 */
int sophon__huffman_compare(const uint8_t *jpeg, size_t len, unsigned flags, char *err,
                            size_t errlen);

/*
 * sophon__huffman_want - in a progressive decode, right after sophon__huffman_install: give
 * values only to the blocks that will be read. base is the first block of the first
 * component's coefficient array, the other components' following it (n blocks in all, as
 * coefmem.h lays them out). Returns a bitmap to fill before the first scan is read, bit i % 64 of
 * word i / 64 set for each wanted block, the others cleared (zero as returned); NULL if not
 * installed or not progressive (then every block is decoded). The decoders still decode every
 * block, but store nothing in an unwanted one and never read it: they keep each block's
 * nonzero coefficients (what a refinement scan's decoding depends on) in a mask of their own,
 * 8 bytes instead of the block's 128. Wanted blocks come out as without it; unwanted ones stay
 * zero.
 */
uint64_t *sophon__huffman_want(j_decompress_ptr cinfo, const JBLOCK *base, size_t n);

/* sophon__huffman_install flag: not the BMI2 refinement decoder even where the CPU has it (tests).
 */
#define SOPHON__HUFFMAN_PORTABLE 1u

#endif /* SOPHON_PREP_HUFFMAN_H */
