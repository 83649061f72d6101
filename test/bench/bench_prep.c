/*
 * bench_prep - single-thread throughput of sophon_prep_run, exact and fast, by image size.
 *
 *   bench_prep CASES [REPS] [exact|fast]
 *
 * With a mode, only that mode is timed (the other column prints 0): for perf.
 * CASES has lines "FILE X Y W H OUT_W OUT_H FLIP" (as written by bench_pillow.py). Files are
 * read into memory first, so the time is decode + crop + resize + flip only, like the Pillow
 * counterpart. Prints, per bucket of source megapixels (<1, 1-4, >=4, any) and coding
 * (baseline, progressive, all), cases and images per second (cases / total time); then how
 * long sophon_probe takes per file (mean of 20 calls; median, 99th percentile, max).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prep.h"
#include "read_file.h"

/* Buckets: source size class x coding, each with an "any" row (see bench_pillow.py). */
#define NSIZES   4
#define NCODINGS 3

static const char *const size_names[NSIZES] = {"<1MP", "1-4MP", ">=4MP", "any"};
static const char *const coding_names[NCODINGS] = {"base", "prog", "all"};

struct bucket {
    unsigned long cases;
    double exact_s, fast_s;
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int size_of(const struct sophon_probe_info *info)
{
    double mp = (double)info->width * info->height / 1e6;

    return mp < 1 ? 0 : mp < 4 ? 1 : 2;
}

/* Probe timings, one per file: the mean of PROBE_REPS calls. */
#define PROBE_REPS 20

struct probe_times {
    double *us;
    size_t n, cap;
    double max_us;
    size_t max_bytes; /* Size of the file with the slowest probe. */
};

static int probe_us(struct sophon_probe_info *info, const uint8_t *jpeg, size_t len,
                    struct probe_times *pt)
{
    double t0 = now(), us;
    int r, rc = 0;

    for (r = 0; r < PROBE_REPS && rc == 0; r++)
        rc = sophon_probe(info, jpeg, len, NULL, 0);
    if (rc < 0)
        return rc;
    us = (now() - t0) * 1e6 / PROBE_REPS;
    if (pt->n == pt->cap) {
        size_t cap = pt->cap ? 2 * pt->cap : 1024;
        double *p = realloc(pt->us, cap * sizeof(*p));

        if (p == NULL)
            return -ENOMEM;
        pt->us = p;
        pt->cap = cap;
    }
    if (us > pt->max_us) {
        pt->max_us = us;
        pt->max_bytes = len;
    }
    pt->us[pt->n++] = us;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double time_runs(uint8_t *out, size_t n, const uint8_t *jpeg, size_t len,
                        const struct sophon_prep_params *p, int reps, int *rc)
{
    double t0 = now();
    int r;

    *rc = 0;
    for (r = 0; r < reps && *rc == 0; r++)
        *rc = sophon_prep_run(out, n, jpeg, len, p, NULL, NULL, 0);
    return (now() - t0) / reps;
}

int main(int argc, char **argv)
{
    struct bucket b[NSIZES][NCODINGS];
    char line[8192], path[4096] = "";
    uint8_t *jpeg = NULL, *out = NULL;
    size_t len = 0, cap = 0;
    struct sophon_probe_info info;
    struct probe_times probes = {NULL, 0, 0, 0.0, 0};
    unsigned long refused = 0;
    int reps = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 3, i, k;
    const char *mode = argc > 3 ? argv[3] : "both";
    int do_exact = strcmp(mode, "fast") != 0, do_fast = strcmp(mode, "exact") != 0;
    FILE *cases;

    if (argc < 2 || reps <= 0 || (!do_exact && !do_fast) ||
        (strcmp(mode, "both") != 0 && do_exact && do_fast)) {
        fprintf(stderr, "usage: %s CASES [REPS] [exact|fast]\n", argv[0]);
        return 2;
    }
    cases = fopen(argv[1], "r");
    if (cases == NULL) {
        perror(argv[1]);
        return 2;
    }
    memset(b, 0, sizeof(b));
    while (fgets(line, sizeof(line), cases) != NULL) {
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        char file[4096];
        unsigned x, y, w, h, ow, oh, flip;
        double te, tf;
        size_t n;
        int rc;

        if (sscanf(line, "%4095s %u %u %u %u %u %u %u", file, &x, &y, &w, &h, &ow, &oh, &flip) != 8)
            continue;
        if (strcmp(file, path) != 0) {
            free(jpeg);
            jpeg = NULL;
            snprintf(path, sizeof(path), "%s", file);
            if (sophon_test_read_file(path, &jpeg, &len, 0) < 0 ||
                probe_us(&info, jpeg, len, &probes) < 0) {
                free(jpeg);
                jpeg = NULL;
            }
        }
        if (jpeg == NULL) {
            refused++;
            continue;
        }
        p.box_x = x;
        p.box_y = y;
        p.box_w = w;
        p.box_h = h;
        p.out_w = ow;
        p.out_h = oh;
        p.flip = (uint8_t)flip;
        n = (size_t)sophon_prep_output_size(&p);
        if (n > cap) {
            free(out);
            out = malloc(n);
            cap = out ? n : 0;
            if (out == NULL)
                return 2;
        }
        te = do_exact ? time_runs(out, n, jpeg, len, &p, reps, &rc) : (rc = 0, 0.0);
        if (rc != 0) {
            refused++;
            continue;
        }
        p.fast = 1;
        tf = do_fast ? time_runs(out, n, jpeg, len, &p, reps, &rc) : (rc = 0, 0.0);
        if (rc != 0) {
            refused++;
            continue;
        }
        /* Each case counts in its own bucket and in the "any" and "all" rows around it. */
        for (i = 0; i < NSIZES; i++) {
            if (i != size_of(&info) && i != NSIZES - 1)
                continue;
            for (k = 0; k < NCODINGS; k++) {
                if (k != (info.progressive ? 1 : 0) && k != NCODINGS - 1)
                    continue;
                b[i][k].cases++;
                b[i][k].exact_s += te;
                b[i][k].fast_s += tf;
            }
        }
    }
    fclose(cases);
    free(jpeg);
    free(out);
    printf("%-12s %7s %12s %12s\n", "bucket", "cases", "exact img/s", "fast img/s");
    for (i = 0; i < NSIZES; i++) {
        for (k = 0; k < NCODINGS; k++) {
            char name[32];

            if (b[i][k].cases == 0)
                continue;
            snprintf(name, sizeof(name), "%s/%s", size_names[i], coding_names[k]);
            printf("%-12s %7lu %12.1f %12.1f\n", name, b[i][k].cases,
                   do_exact ? b[i][k].cases / b[i][k].exact_s : 0.0,
                   do_fast ? b[i][k].cases / b[i][k].fast_s : 0.0);
        }
    }
    printf("refused: %lu\n", refused);
    if (probes.n > 0) {
        qsort(probes.us, probes.n, sizeof(*probes.us), cmp_double);
        printf(
            "probe: %zu files, median %.1f us, 99th percentile %.1f us, max %.1f us (%zu bytes)\n",
            probes.n, probes.us[probes.n / 2], probes.us[probes.n * 99 / 100], probes.max_us,
            probes.max_bytes);
    }
    free(probes.us);
    return 0;
}
