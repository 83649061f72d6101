/*
 * calibrate_costs.c - fits the selector's CPU cost model on real JPEGs.
 *
 *     calibrate_costs LIST [RUNS]
 *
 * LIST names one JPEG per line. Each image is probed, then prepared RUNS times (default 5) with
 * the crop of a different epoch, timed with the thread's CPU clock; the median is the image's
 * cost. Files the pipeline refuses are skipped. The u8 cost is fitted by least squares to
 *     a + b * pixels + c * stored_bytes + d * pixels * progressive + e * pixels * (444)
 * (weighted by 1 / cost^2, i.e. relative errors) and the f32 - u8 difference (ToTensor + Normalize)
 * is summarized by its median. Then what the box adds: over each image's runs, its cost against
 * its box's pixels (the share of the image a crop decodes moves the cost of the same image), one
 * slope for baseline and one for progressive images, pooled within images (each image's runs
 * about their own means, weighted by 1 / cost^2 as above), and the mean share of the image the
 * boxes hold. Prints the coefficients, R^2 and the median relative error, that of every run
 * against its box with and without the box's term, and an initializer for cost_model.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prep.h"
#include "read_file.h"
#include "sampler.h"
#include "selector.h"

#define NFEAT    5
#define MAX_RUNS 15

struct sample {
    double x[NFEAT]; /* features, scaled: 1, Mpixels, MB, Mpixels*prog, Mpixels*444 */
    double u8_s, norm_s;
    int runs;
    double run_u8_s[MAX_RUNS], run_box_px[MAX_RUNS]; /* each run's cost and box pixels */
    struct sophon_record rec;
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Times one image; 0 on success, negative when the pipeline refuses it. */
static int time_image(struct sample *s, const uint8_t *jpeg, size_t len, size_t index, int runs,
                      uint8_t *out, size_t out_cap)
{
    struct sophon_probe_info info;
    double u8[MAX_RUNS], diff[MAX_RUNS];
    char err[128];

    memset(s, 0, sizeof(*s));
    int rc = sophon_probe(&info, jpeg, len, err, sizeof(err));
    if (rc < 0)
        return rc;
    for (int k = 0; k < runs; k++) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        rc = sophon_draw_crop(&p, 1, (uint64_t)k, index, info.width, info.height, NULL);
        if (rc < 0)
            return rc;
        double t0 = thread_cpu_s();
        rc = sophon_prep_run(out, out_cap, jpeg, len, &p, NULL, err, sizeof(err));
        double t1 = thread_cpu_s();
        if (rc < 0)
            return rc;
        p.format = SOPHON_FORMAT_F32;
        rc = sophon_prep_run(out, out_cap, jpeg, len, &p, NULL, err, sizeof(err));
        double t2 = thread_cpu_s();
        if (rc < 0)
            return rc;
        u8[k] = t1 - t0;
        diff[k] = (t2 - t1) - (t1 - t0);
        s->run_u8_s[k] = u8[k];
        s->run_box_px[k] = (double)p.box_w * (double)p.box_h;
    }
    s->runs = runs;
    s->u8_s = median(u8, (size_t)runs);
    s->norm_s = median(diff, (size_t)runs);
    double mpx = (double)info.width * (double)info.height * 1e-6;
    s->x[0] = 1.0;
    s->x[1] = mpx;
    s->x[2] = (double)len * 1e-6;
    s->x[3] = info.progressive ? mpx : 0.0;
    s->x[4] = info.subsampling == SOPHON_SS_444 ? mpx : 0.0;
    s->rec.width = info.width;
    s->rec.height = info.height;
    s->rec.stored_bytes = len;
    s->rec.progressive = info.progressive;
    s->rec.subsampling = info.subsampling;
    return 0;
}

/* Weighted least squares by the normal equations with partial pivoting: each image is weighted
 * by 1 / cost^2, so the fit minimizes relative errors (plain least squares lets the few large
 * photos decide everything and is poor on the many small ones). A feature that never occurs gets
 * a coefficient of 0. */
static int fit(const struct sample *s, size_t n, double beta[NFEAT])
{
    double m[NFEAT][NFEAT + 1] = {{0}};
    for (size_t i = 0; i < n; i++) {
        double wt = 1.0 / (s[i].u8_s * s[i].u8_s);
        for (int r = 0; r < NFEAT; r++) {
            for (int c = 0; c < NFEAT; c++)
                m[r][c] += wt * s[i].x[r] * s[i].x[c];
            m[r][NFEAT] += wt * s[i].x[r] * s[i].u8_s;
        }
    }
    for (int r = 0; r < NFEAT; r++)
        if (m[r][r] == 0.0) {
            memset(m[r], 0, sizeof(m[r]));
            m[r][r] = 1.0;
        }
    for (int c = 0; c < NFEAT; c++) {
        int piv = c;
        for (int r = c + 1; r < NFEAT; r++)
            if (fabs(m[r][c]) > fabs(m[piv][c]))
                piv = r;
        if (fabs(m[piv][c]) < 1e-300)
            return -EDOM;
        for (int k = 0; k <= NFEAT; k++) {
            double t = m[c][k];
            m[c][k] = m[piv][k];
            m[piv][k] = t;
        }
        for (int r = 0; r < NFEAT; r++) {
            if (r == c)
                continue;
            double f = m[r][c] / m[c][c];
            for (int k = c; k <= NFEAT; k++)
                m[r][k] -= f * m[c][k];
        }
    }
    for (int c = 0; c < NFEAT; c++)
        beta[c] = m[c][NFEAT] / m[c][c];
    return 0;
}

/* The box's slopes (seconds per box pixel) for baseline (slope[0]) and progressive (slope[1])
 * images, pooled within images, and the mean share of an image its boxes hold. */
static void fit_box(const struct sample *s, size_t n, double slope[2], double *share)
{
    double sxy[2] = {0}, sxx[2] = {0}, sh = 0;
    size_t runs = 0;
    for (size_t i = 0; i < n; i++) {
        double mc = 0, mb = 0, px = (double)s[i].rec.width * (double)s[i].rec.height;
        int k = s[i].rec.progressive != 0;
        for (int r = 0; r < s[i].runs; r++) {
            mc += s[i].run_u8_s[r] / s[i].runs;
            mb += s[i].run_box_px[r] / s[i].runs;
            sh += s[i].run_box_px[r] / px;
            runs++;
        }
        double wt = 1.0 / (s[i].u8_s * s[i].u8_s);
        for (int r = 0; r < s[i].runs; r++) {
            sxy[k] += wt * (s[i].run_box_px[r] - mb) * (s[i].run_u8_s[r] - mc);
            sxx[k] += wt * (s[i].run_box_px[r] - mb) * (s[i].run_box_px[r] - mb);
        }
    }
    for (int k = 0; k < 2; k++)
        slope[k] = sxx[k] > 0 ? sxy[k] / sxx[k] : 0;
    *share = runs > 0 ? sh / (double)runs : 0;
}

/* Median relative error of every run's cost against the model, with its box or without. */
static double run_error(const struct sample *s, size_t n, const struct sophon_cost_model *m,
                        int with_box)
{
    size_t k = 0, total = 0;
    for (size_t i = 0; i < n; i++)
        total += (size_t)s[i].runs;
    double *e = malloc(total * sizeof(*e));
    if (e == NULL)
        return NAN;
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < s[i].runs; r++) {
            double px = (double)s[i].rec.width * (double)s[i].rec.height;
            double share = with_box ? s[i].run_box_px[r] / px : -1;
            double pred = sophon_cost_model_box_s(&s[i].rec, share, m);
            e[k++] = fabs(pred - s[i].run_u8_s[r]) / s[i].run_u8_s[r];
        }
    double med = median(e, k);
    free(e);
    return med;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s LIST [RUNS]\n", argv[0]);
        return 2;
    }
    int runs = 5;
    if (argc == 3) {
        char *end;
        long v = strtol(argv[2], &end, 10);
        if (*end || v < 1 || v > MAX_RUNS) {
            fprintf(stderr, "RUNS must be 1..%d\n", MAX_RUNS);
            return 2;
        }
        runs = (int)v;
    }
    FILE *list = fopen(argv[1], "r");
    if (!list) {
        perror(argv[1]);
        return 1;
    }
    size_t out_cap = 224 * 224 * 3 * 4;
    uint8_t *out = malloc(out_cap);
    struct sample *s = NULL;
    size_t n = 0, cap = 0, skipped = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, list) > 0) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!*line)
            continue;
        uint8_t *jpeg = NULL;
        size_t len = 0;
        if (sophon_test_read_file(line, &jpeg, &len, 256u << 20) < 0) {
            skipped++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            struct sample *t = realloc(s, cap * sizeof(*s));
            if (!t || !out) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            s = t;
        }
        if (time_image(&s[n], jpeg, len, n + skipped, runs, out, out_cap) == 0)
            n++;
        else
            skipped++;
        free(jpeg);
    }
    free(line);
    fclose(list);
    if (n < 2 * NFEAT) {
        fprintf(stderr, "only %zu usable images\n", n);
        return 1;
    }

    double beta[NFEAT];
    if (fit(s, n, beta) < 0) {
        fprintf(stderr, "singular fit\n");
        return 1;
    }
    struct sophon_cost_model m = {
        .version = SOPHON_COST_MODEL_VERSION,
        .a_s = beta[0],
        .per_pixel_s = beta[1] * 1e-6,
        .per_byte_s = beta[2] * 1e-6,
        .per_progressive_pixel_s = beta[3] * 1e-6,
        .per_444_pixel_s = beta[4] * 1e-6,
    };
    double *tmp = malloc(n * sizeof(*tmp));
    double mean = 0, ss_tot = 0, ss_res = 0;
    size_t prog = 0, s444 = 0;
    for (size_t i = 0; i < n; i++)
        mean += s[i].u8_s / (double)n;
    for (size_t i = 0; i < n; i++) {
        double pred = sophon_cost_model_decode_s(&s[i].rec, &m);
        ss_tot += (s[i].u8_s - mean) * (s[i].u8_s - mean);
        ss_res += (s[i].u8_s - pred) * (s[i].u8_s - pred);
        tmp[i] = fabs(pred - s[i].u8_s) / s[i].u8_s;
        prog += s[i].rec.progressive;
        s444 += s[i].rec.subsampling == SOPHON_SS_444;
    }
    double med_rel = median(tmp, n);
    for (size_t i = 0; i < n; i++)
        tmp[i] = s[i].norm_s;
    m.normalize_s = median(tmp, n);
    double px_med, u8_med;
    for (size_t i = 0; i < n; i++)
        tmp[i] = s[i].x[1];
    px_med = median(tmp, n);
    for (size_t i = 0; i < n; i++)
        tmp[i] = s[i].u8_s;
    u8_med = median(tmp, n);

    printf("images %zu (skipped %zu; %zu progressive, %zu 4:4:4), %d runs each\n", n, skipped, prog,
           s444, runs);
    printf("median image %.3f Mpixel, median u8 pipeline %.3f ms\n", px_med, u8_med * 1e3);
    printf("u8 = %.4g s + %.4g s/pixel + %.4g s/byte + %.4g s/progressive pixel"
           " + %.4g s/444 pixel\n",
           m.a_s, m.per_pixel_s, m.per_byte_s, m.per_progressive_pixel_s, m.per_444_pixel_s);
    printf("normalize (f32 - u8, median) = %.4g s\n", m.normalize_s);
    printf("fit: R^2 = %.4f, median relative error = %.1f%%\n", 1.0 - ss_res / ss_tot,
           med_rel * 100.0);
    double slope[2], share;
    fit_box(s, n, slope, &share);
    m.per_box_pixel_s = slope[0];
    m.per_progressive_box_pixel_s = slope[1];
    m.box_share = share;
    printf("box: %.4g s/box pixel baseline, %.4g s/box pixel progressive, about the mean share "
           "%.3f\n",
           m.per_box_pixel_s, m.per_progressive_box_pixel_s, m.box_share);
    printf("every run against its box: median relative error %.1f%% (without the box %.1f%%)\n",
           run_error(s, n, &m, 1) * 100.0, run_error(s, n, &m, 0) * 100.0);
    printf("\n    .a_s = %.4g,\n    .per_pixel_s = %.4g,\n    .per_byte_s = %.4g,\n"
           "    .per_progressive_pixel_s = %.4g,\n    .per_444_pixel_s = %.4g,\n"
           "    .normalize_s = %.4g,\n    .per_box_pixel_s = %.4g,\n"
           "    .per_progressive_box_pixel_s = %.4g,\n    .box_share = %.4g,\n",
           m.a_s, m.per_pixel_s, m.per_byte_s, m.per_progressive_pixel_s, m.per_444_pixel_s,
           m.normalize_s, m.per_box_pixel_s, m.per_progressive_box_pixel_s, m.box_share);
    free(tmp);
    free(s);
    free(out);
    return 0;
}
