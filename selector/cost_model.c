/*
 * cost_model.c - CPU seconds of the pipeline as a function of a record's header facts.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>

#include "selector.h"
#include "sophon_common.h"

/*
 * Fitted by least squares on the real-photo corpus of this machine (one core, thread CPU time,
 * median of 5 random crops per image, exact mode, weighted by 1 / cost^2) with:
 *     build/test/bench/calibrate_costs /root/.cache/sophon-corpus/list.txt 5
 * which printed: 972 images (10 skipped; 328 progressive, 234 4:4:4), median 0.090 Mpixel and
 * 0.631 ms; R^2 = 0.94, median relative error 21.0%. (Refitted after the coefficient masks and
 * quick paths of prep/jpeg/huffman.c; the fits before gave 0.715 ms (R^2 0.93), 0.85 ms (R^2 0.85)
 * before prep/jpeg/huffman.c replaced libjpeg's Huffman decoding, and 1.32 ms (R^2 0.80) before the
 * AVX2 resample and the progressive cut. Unweighted least squares lets the few large photos
 * decide and gives a negative per-pixel term.) The normalize cost is the median f32 - u8
 * difference over the same runs.
 *
 * The box's terms came later, from the same command with 7 runs (the box's slopes pooled within
 * images; the other coefficients of that run, within a few percent of these, left as they were):
 * 972 images, 3.624e-09 s per box pixel baseline and 4.888e-09 progressive, about a mean share of
 * 0.401; every run against its own box: median relative error 16.2%, 19.8% without the box. On
 * the main job's 16 MB progressive photo (5640 x 3172) a box of the whole image costs about 25%
 * more than the expectation and one of a tenth 12% less.
 *
 * Where the box lies counts too (sophon_cost_model_box_at_s): the decoder entropy-decodes every
 * row down to the box's last and none below it. `sophon prep --box` of a quarter (a third) of
 * the image in its top left corner and in its bottom right, the same area, on five of those
 * photos: per unit of depth 6-8 ns a stored byte (a 1 MB baseline photo 6.9 ms, the 16 MB
 * progressive one 133 ms; 12 ns on a 4:4:4 one), about the fit's per-byte term (6.4 ns). The box
 * pays that term times its depth beyond the mean RandomResizedCrop box's, whose last row lies at
 * 0.78-0.87 of the height (SOPHON_COST_MODEL_DEPTH).
 */
const struct sophon_cost_model sophon_cost_model_default = {
    .version = SOPHON_COST_MODEL_VERSION,
    .a_s = 0.0001069,
    .per_pixel_s = 1.077e-09,
    .per_byte_s = 6.4e-09,
    .per_progressive_pixel_s = 4.237e-09,
    .per_444_pixel_s = 1.665e-10,
    .normalize_s = 0.0001221,
    .per_box_pixel_s = 3.624e-09,
    .per_progressive_box_pixel_s = 4.888e-09,
    .box_share = 0.4012,
};

double sophon_cost_model_decode_s(const struct sophon_record *rec,
                                  const struct sophon_cost_model *m)
{
    if (!m)
        m = &sophon_cost_model_default;
    double px = (double)rec->width * (double)rec->height;
    double t = m->a_s + m->per_pixel_s * px + m->per_byte_s * (double)rec->stored_bytes;
    if (rec->progressive)
        t += m->per_progressive_pixel_s * px;
    if (rec->subsampling == SOPHON_SS_444)
        t += m->per_444_pixel_s * px;
    /* A linear fit may dip below zero for tiny images; a decode is never free. */
    return t > 1e-6 ? t : 1e-6;
}

/* sophon_cost_model_box_s for the expectation t = sophon_cost_model_decode_s(rec, m). */
static double box_s(const struct sophon_record *rec, double share, double depth,
                    const struct sophon_cost_model *m, double t)
{
    if (!(share > 0 && share <= 1))
        return t;
    double px = (double)rec->width * (double)rec->height;
    double slope = rec->progressive ? m->per_progressive_box_pixel_s : m->per_box_pixel_s;
    double b = t + slope * (share - m->box_share) * px;
    /* The rows down to the box's last are entropy-decoded, those below it never. */
    if (depth > 0 && depth <= 1)
        b += m->per_byte_s * (double)rec->stored_bytes * (depth - SOPHON_COST_MODEL_DEPTH);
    return isfinite(b) ? fmax(b, 0.25 * t) : t;
}

double sophon_cost_model_box_s(const struct sophon_record *rec, double share,
                               const struct sophon_cost_model *m)
{
    return sophon_cost_model_box_at_s(rec, share, 0, m);
}

double sophon_cost_model_box_factor(const struct sophon_record *rec, double share,
                                    const struct sophon_cost_model *m)
{
    return sophon_cost_model_box_at_factor(rec, share, 0, m);
}

double sophon_cost_model_box_at_s(const struct sophon_record *rec, double share, double depth,
                                  const struct sophon_cost_model *m)
{
    if (!m)
        m = &sophon_cost_model_default;
    return box_s(rec, share, depth, m, sophon_cost_model_decode_s(rec, m));
}

double sophon_cost_model_box_at_factor(const struct sophon_record *rec, double share, double depth,
                                       const struct sophon_cost_model *m)
{
    if (!m)
        m = &sophon_cost_model_default;
    double t = sophon_cost_model_decode_s(rec, m);
    double b = box_s(rec, share, depth, m, t);
    return t > 0 && isfinite(b / t) ? b / t : 1.0;
}

int sophon_cost_model_fill(struct sophon_record *rec, const struct sophon_cost_model *m)
{
    if (!rec)
        return -EINVAL;
    if (!m)
        m = &sophon_cost_model_default;
    if (m->version != SOPHON_COST_MODEL_VERSION || !isfinite(m->normalize_s) || m->normalize_s < 0)
        return -EINVAL;
    double dec = sophon_cost_model_decode_s(rec, m);
    double norm = m->normalize_s;
    if (!isfinite(dec))
        return -EINVAL;
    rec->stage[SOPHON_STAGE_STORED] =
        (struct sophon_stage_cost){rec->stored_bytes, 0.0, dec + norm};
    rec->stage[SOPHON_STAGE_U8] =
        (struct sophon_stage_cost){sophon_stage_bytes(SOPHON_STAGE_U8, SOPHON_SEL_SIDE), dec, norm};
    rec->stage[SOPHON_STAGE_F32] = (struct sophon_stage_cost){
        sophon_stage_bytes(SOPHON_STAGE_F32, SOPHON_SEL_SIDE), dec + norm, 0};
    /* The crop: a share of the stored bytes (the area model), and CPU as measured against the
     * u8 pipeline (selector.h). */
    rec->stage[SOPHON_STAGE_CROP] = (struct sophon_stage_cost){
        SOPHON_SEL_HEADER_BYTES + (uint64_t)((double)rec->stored_bytes * SOPHON_SEL_CROP_SHARE),
        SOPHON_SEL_CROP_OSD * dec, SOPHON_SEL_CROP_CLIENT * dec + norm};
    return 0;
}
