/*
 * prog_copy.h - the private copy of a progressive JPEG that a region decode reads instead of the
 * file, cut to the region.
 *
 * libjpeg entropy-decodes every scan of a progressive JPEG over the whole image before the first
 * row comes out, so the rows below a region cost as much as the region. The copy makes it decode
 * less, without changing a single output byte of the rows the region needs:
 *
 *  - The SOF height is lowered to the rows the region needs plus a margin
 * (sophon__prog_copy_height). Each scan codes its blocks in raster order, so the blocks of a
 * shorter image of the same width are a prefix of every scan; libjpeg decodes that prefix, then
 * skips the rest of the scan up to the next marker and reports the skipped bytes as
 * JWRN_EXTRANEOUS_DATA.
 *  - AC scans (Ss > 0) of components whose IDCT reads only the DC coefficient (1/8 scaling,
 *    jpeg_idct_1x1) are left out.
 */
#ifndef SOPHON_PREP_PROG_COPY_H
#define SOPHON_PREP_PROG_COPY_H

#include <stddef.h>
#include <stdint.h>

/* What a region decode needs of the file. */
struct sophon__prog_copy {
    uint32_t height;    /* SOF height of the copy; the file's height keeps every row. */
    int ncomps;         /* Frame components, 1..4, in SOF order. */
    uint8_t id[4];      /* Their component identifiers. */
    uint8_t dc_only[4]; /* 1 if the component's IDCT reads the DC coefficient only. */
};

/*
 * sophon__prog_copy_height - the image height to decode when the region's scaled rows come from
 * full-resolution rows [0, rows) of an image of height rows: rows plus the margin, rounded up
 * to a whole iMCU row of imcu_height rows (8 * max_v_samp_factor), never above height.
 */
uint32_t sophon__prog_copy_height(uint32_t height, uint32_t imcu_height, uint64_t rows);

/*
 * sophon__prog_copy_make - build the copy of jpeg[0..len) that *cut describes, in *out (malloc'd,
 * out_len bytes; the caller frees it). Sets *out to NULL when the copy would be the file itself
 * or when the file has something the copy could hide from libjpeg's checks (garbage between
 * segments, an invalid progression): then the file is decoded as it is. *dropped counts the
 * scans left out. The file must have passed sophon__walk_markers with an EOI and a frame
 * header libjpeg accepted. Returns 0 or -ENOMEM.
 */
int sophon__prog_copy_make(uint8_t **out, size_t *out_len, uint32_t *dropped, const uint8_t *jpeg,
                           size_t len, const struct sophon__prog_copy *cut);

#endif /* SOPHON_PREP_PROG_COPY_H */
