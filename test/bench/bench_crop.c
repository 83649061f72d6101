/*
 * bench_crop - the lossless crop stage against the u8 pixels, on the same boxes: the OSD's CPU
 * per call (sophon_prep_crop, with and without optimized Huffman tables, against
 * sophon_prep_run to u8), the client's CPU to finish a crop against finishing the stored object,
 * and the bytes (stored, crop, u8, the area model's stored x region share).
 *
 *   bench_crop CASES [REPS]
 *
 * CASES has lines "FILE X Y W H OUT_W OUT_H FLIP" (bench_pillow.py make). Each call is timed
 * REPS times in a row, alternating between the kinds of call, and the best repetition counts.
 * Prints one line per bucket (baseline or progressive, source under or over 1 MP): cases,
 * milliseconds per call of each kind and their ratios, and bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prep.h"
#include "read_file.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { U8, CROP, CROP_OPT, FINISH_CROP, KINDS };

struct bucket {
    unsigned long cases;
    double s[KINDS];
    double stored, crop, crop_opt, u8, model, best3, best2;
};

static void add(struct bucket *b, const double *s, double stored, double crop, double crop_opt,
                double model)
{
    double u8 = 224.0 * 224 * 3 + 56;
    b->cases++;
    for (int k = 0; k < KINDS; k++)
        b->s[k] += s[k];
    b->stored += stored;
    b->crop += crop;
    b->crop_opt += crop_opt;
    b->u8 += u8;
    b->model += model;
    b->best2 += stored < u8 ? stored : u8;
    double m = stored < u8 ? stored : u8;
    b->best3 += crop_opt < m ? crop_opt : m;
}

static void print(const char *name, const struct bucket *b)
{
    if (b->cases == 0)
        return;
    double n = (double)b->cases;
    printf("%-12s %5lu  u8 %6.2f ms  crop %6.2f ms (%.2fx)  crop+opt %6.2f ms (%.2fx)  "
           "finish crop %6.2f ms (%.2fx of stored)  bytes: stored %.0f crop %.0f crop+opt %.0f "
           "(%.3f of stored, %.3f of the area model)  min(stored,u8) %.0f  min(stored,crop,u8) "
           "%.0f (%.2fx less)\n",
           name, b->cases, b->s[U8] * 1e3 / n, b->s[CROP] * 1e3 / n, b->s[CROP] / b->s[U8],
           b->s[CROP_OPT] * 1e3 / n, b->s[CROP_OPT] / b->s[U8], b->s[FINISH_CROP] * 1e3 / n,
           b->s[FINISH_CROP] / b->s[U8], b->stored / n, b->crop / n, b->crop_opt / n,
           b->crop_opt / b->stored, b->crop_opt / b->model, b->best2 / n, b->best3 / n,
           b->best2 / b->best3);
}

/* The best of reps timings of one kind of call. Returns -1 on a failed call. */
static double best_of(int kind, int reps, const uint8_t *jpeg, size_t len,
                      const struct sophon_prep_params *p, uint8_t *out, size_t cap, uint8_t *crop,
                      size_t crop_cap, size_t *crop_len, uint32_t *ox, uint32_t *oy)
{
    double best = 1e9;
    for (int r = 0; r < reps; r++) {
        struct sophon_prep_params q = *p;
        double t0 = cpu_now();
        int rc;
        switch (kind) {
        case U8:
            rc = sophon_prep_run(out, cap, jpeg, len, p, NULL, NULL, 0);
            break;
        case CROP:
        case CROP_OPT:
            rc = sophon_prep_crop(crop, crop_cap, crop_len, ox, oy, jpeg, len, p, NULL,
                                  kind == CROP_OPT ? SOPHON_CROP_OPTIMIZE : 0, NULL, 0);
            break;
        default:
            q.box_x -= *ox;
            q.box_y -= *oy;
            rc = sophon_prep_run(out, cap, crop, *crop_len, &q, NULL, NULL, 0);
            break;
        }
        double t = cpu_now() - t0;
        if (rc < 0)
            return -1;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    struct bucket b[3] = {{0}}; /* baseline >= 1 MP, progressive >= 1 MP, under 1 MP */
    char line[4096], file[4000];
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    unsigned long failed = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: bench_crop CASES [REPS]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        unsigned flip;
        if (sscanf(line, "%3999s %u %u %u %u %u %u %u", file, &p.box_x, &p.box_y, &p.box_w,
                   &p.box_h, &p.out_w, &p.out_h, &flip) != 8)
            continue;
        p.flip = (uint8_t)flip;
        size_t len;
        uint8_t *jpeg = NULL;
        struct sophon_probe_info info;
        if (sophon_test_read_file(file, &jpeg, &len, SOPHON_MAX_OBJECT_BYTES) < 0 ||
            sophon_probe(&info, jpeg, len, NULL, 0) < 0) {
            free(jpeg);
            failed++;
            continue;
        }
        size_t cap = (size_t)sophon_prep_output_size(&p), crop_cap = 2 * len + 65536, clen = 0,
               clen_opt = 0;
        uint8_t *out = malloc(cap), *crop = malloc(crop_cap);
        uint32_t ox = 0, oy = 0;
        double s[KINDS];
        int ok = out != NULL && crop != NULL;
        for (int k = 0; ok && k < KINDS; k++) {
            s[k] = best_of(k, reps, jpeg, len, &p, out, cap, crop, crop_cap,
                           k == CROP ? &clen : &clen_opt, &ox, &oy);
            ok = s[k] >= 0;
        }
        uint32_t iw, ih, rx, ry, rw, rh;
        sophon_prep_imcu(info.subsampling, &iw, &ih);
        if (ok &&
            sophon_prep_crop_region(info.width, info.height, iw, ih, &p, &rx, &ry, &rw, &rh) == 0) {
            double model = (double)len * rw * rh / ((double)info.width * info.height);
            int big = (uint64_t)info.width * info.height >= 1000000;
            add(&b[big ? info.progressive : 2], s, (double)len, (double)clen, (double)clen_opt,
                model);
        } else {
            failed++;
        }
        free(out);
        free(crop);
        free(jpeg);
    }
    fclose(f);
    print(">=1MP base", &b[0]);
    print(">=1MP prog", &b[1]);
    print("<1MP", &b[2]);
    printf("failed or skipped: %lu\n", failed);
    return 0;
}
