/*
 * bench_huffman.c - prep/jpeg/huffman.c against libjpeg-turbo's own Huffman decoding, scan by scan.
 *
 *     bench_huffman FILE [REPS]
 *
 * Reads FILE to coefficients in buffered-image mode (jpeg_consume_input until each next SOS),
 * REPS times (default 25) with each decoder, alternating, and prints per scan the fewest
 * milliseconds of thread CPU time each took, then the total over every scan but the first: the
 * first also pays for faulting in the coefficient arrays, which is warm for the second decoder.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

#include "huffman.h"
#include "read_file.h"

#define MAX_SCANS 64

struct guard {
    struct jpeg_error_mgr pub; /* First member: cinfo.err points here. */
    jmp_buf jump;
};

static void on_error(j_common_ptr c)
{
    longjmp(((struct guard *)c->err)->jump, 1);
}

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One decode; ms[i] gets scan i's time and desc[i] its parameters. Returns the scan count. */
static int decode(const uint8_t *data, size_t len, int ours, double *ms, char (*desc)[48])
{
    struct jpeg_decompress_struct c;
    struct guard g;
    volatile int n = 0; /* Read after a longjmp. */
    int rc;
    double t0;

    c.err = jpeg_std_error(&g.pub);
    g.pub.error_exit = on_error;
    jpeg_create_decompress(&c);
    if (setjmp(g.jump)) {
        jpeg_destroy_decompress(&c);
        return -1;
    }
    jpeg_mem_src(&c, data, (unsigned long)len);
    jpeg_read_header(&c, TRUE);
    c.buffered_image = TRUE;
    jpeg_start_decompress(&c);
    if (ours)
        sophon__huffman_install(&c, 0);
    snprintf(desc[0], sizeof(desc[0]), "Ss %d Se %d Ah %d Al %d, %d comp", c.Ss, c.Se, c.Ah, c.Al,
             c.comps_in_scan);
    t0 = now();
    do {
        rc = jpeg_consume_input(&c);
        if (rc == JPEG_REACHED_SOS || rc == JPEG_REACHED_EOI) {
            double t = now();

            ms[n++] = (t - t0) * 1e3;
            t0 = t;
            if (rc == JPEG_REACHED_SOS && n < MAX_SCANS)
                snprintf(desc[n], sizeof(desc[n]), "Ss %d Se %d Ah %d Al %d, %d comp", c.Ss, c.Se,
                         c.Ah, c.Al, c.comps_in_scan);
        }
    } while (rc != JPEG_REACHED_EOI && rc != JPEG_SUSPENDED && n < MAX_SCANS);
    jpeg_destroy_decompress(&c);
    return n;
}

int main(int argc, char **argv)
{
    static char desc[MAX_SCANS][48];
    double best[2][MAX_SCANS], ms[MAX_SCANS], total[2] = {0, 0};
    int reps = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 25, n = 0, r, d, i;
    uint8_t *data;
    size_t len;

    if (argc < 2 || reps <= 0) {
        fprintf(stderr, "usage: %s FILE [REPS]\n", argv[0]);
        return 2;
    }
    if (!sophon__huffman_supported()) {
        fprintf(stderr, "%s: this build uses libjpeg's Huffman decoding only\n", argv[0]);
        return 2;
    }
    if (sophon_test_read_file(argv[1], &data, &len, 0) < 0) {
        perror(argv[1]);
        return 2;
    }
    for (r = 0; r < reps; r++) {
        for (d = 0; d < 2; d++) {
            n = decode(data, len, d, ms, desc);
            if (n < 0) {
                fprintf(stderr, "%s: libjpeg refused the file\n", argv[1]);
                free(data);
                return 1;
            }
            for (i = 0; i < n; i++)
                if (r == 0 || ms[i] < best[d][i])
                    best[d][i] = ms[i];
        }
    }
    printf("%-32s %10s %10s\n", "scan", "libjpeg ms", "sophon ms");
    for (i = 0; i < n; i++) {
        printf("%-32s %10.2f %10.2f\n", desc[i], best[0][i], best[1][i]);
        if (i > 0) {
            total[0] += best[0][i];
            total[1] += best[1][i];
        }
    }
    printf("%-32s %10.2f %10.2f (%.2fx)\n", "scans 2 on", total[0], total[1],
           total[1] > 0 ? total[0] / total[1] : 0.0);
    free(data);
    return 0;
}
