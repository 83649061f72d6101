/*
 * many_scans.c - writes a valid progressive JPEG with 1,324 scans to stdout: the DC scan, then
 * every AC coefficient of every component sent alone at 6 bits less precision and refined bit
 * by bit. A CPU bomb for decoders (each scan is a pass over all coefficients) that jpegtran
 * cannot make (its scan scripts stop at 100 scans).
 */
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

#define W 64
#define H 48

int main(void)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    static jpeg_scan_info scans[1 + 3 * 63 * 7];
    int n = 0;

    scans[n++] = (jpeg_scan_info){3, {0, 1, 2, 0}, 0, 0, 0, 0};
    for (int comp = 0; comp < 3; comp++) {
        for (int k = 1; k < 64; k++) {
            scans[n++] = (jpeg_scan_info){1, {comp, 0, 0, 0}, k, k, 0, 6};
            for (int al = 5; al >= 0; al--)
                scans[n++] = (jpeg_scan_info){1, {comp, 0, 0, 0}, k, k, al + 1, al};
        }
    }
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, stdout);
    c.image_width = W;
    c.image_height = H;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 95, TRUE);
    c.scan_info = scans;
    c.num_scans = n;
    jpeg_start_compress(&c, TRUE);
    JSAMPLE row[W * 3];
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            row[3 * x] = (JSAMPLE)(x * 4);
            row[3 * x + 1] = (JSAMPLE)(y * 5);
            row[3 * x + 2] = (JSAMPLE)((x * y) & 0xff);
        }
        JSAMPROW rp = row;
        jpeg_write_scanlines(&c, &rp, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fprintf(stderr, "many_scans: %d scans\n", n);
    return 0;
}
