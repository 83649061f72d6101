/*
 * prep_tool - command-line driver of sophon_prep_run for the exactness check and debugging.
 *
 *   prep_tool probe FILE...
 *       print width, height, components, colour space, subsampling, progressive, scans.
 *   prep_tool run FILE X Y W H OUT_W OUT_H FLIP [FAST [F32]] > out.raw
 *       write the output bytes of one case to stdout.
 *   prep_tool run FILE val RESIZE SIZE [FAST [F32]] > out.raw
 *       the same for torchvision's Resize(RESIZE) + CenterCrop(SIZE) (sophon_prep_set_val).
 *   prep_tool batch [--whole-file] < cases > stream
 *       cases: lines "FILE X Y W H OUT_W OUT_H FLIP [FAST]" or "FILE val RESIZE SIZE [FAST]"
 *       (FILE without spaces). For each line the stream gets a little-endian int32 status (0 or
 *       -errno) then, on success, the OUT_W * OUT_H * 3 (SIZE * SIZE * 3) output bytes. The
 *       format pillow_ref.py batch writes too.
 *   prep_tool crops LIST OUTDIR > crops.tsv
 *       for each JPEG named in LIST (one path a line), two boxes drawn from its path: the lossless
 *       crop (sophon_prep_crop, optimized tables) written to OUTDIR/N.jpg, and the pipeline on it
 *       (u8 224x224, the second box flipped) checked against the pipeline on the file; prints
 *       "FILE CROP X Y W H ORIGIN_X ORIGIN_Y" per crop (for crop_pillow.py), and to stderr the
 *       counts. Exits 1 if any crop decodes to other bytes than its source.
 *       --whole-file decodes progressive files as stored instead of cut to the box, and every
 *       file with libjpeg's own Huffman decoders instead of huffman.h's (the reference both are
 *       compared with: compare.py --reference whole).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg.h"
#include "pipeline.h"
#include "prep.h"
#include "read_file.h"

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v > UINT32_MAX || s[0] == '-')
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

static int cmd_probe(int argc, char **argv)
{
    int i, rc, worst = 0;

    for (i = 0; i < argc; i++) {
        struct sophon_probe_info info;
        uint8_t *buf;
        size_t len;
        char err[256] = "";

        rc = sophon_test_read_file(argv[i], &buf, &len, 0);
        if (rc == 0)
            rc = sophon_probe(&info, buf, len, err, sizeof(err));
        if (rc < 0) {
            printf("%s\terror %d\t%s\n", argv[i], rc, err);
            worst = 1;
        } else {
            printf("%s\t%" PRIu32 "x%" PRIu32 "\tc=%u\t%s\t%s\tprog=%u\tscans=%" PRIu32 "\n",
                   argv[i], info.width, info.height, info.components,
                   sophon_colorspace_name(info.colorspace),
                   sophon_subsampling_name(info.subsampling), info.progressive,
                   (uint32_t)sophon_count_scans(buf, len));
        }
        free(buf);
    }
    return worst;
}

/* The request of a case line: a box and an output size, or "val RESIZE SIZE" (which needs the
 * image's size, so the JPEG is read first). Returns the number of fields it took, or -EINVAL. */
static int parse_case(char **f, int nf, const uint8_t *jpeg, size_t len,
                      struct sophon_prep_params *p, char *err, size_t errlen)
{
    uint32_t flip = 0, resize, size;
    struct sophon_probe_info info;
    int rc;

    if (nf >= 4 && strcmp(f[1], "val") == 0) {
        if (parse_u32(f[2], &resize) || parse_u32(f[3], &size)) {
            snprintf(err, errlen, "bad number in case");
            return -EINVAL;
        }
        rc = sophon_probe(&info, jpeg, len, err, errlen);
        if (rc < 0)
            return rc;
        rc = sophon_prep_set_val(p, info.width, info.height, resize, size);
        if (rc < 0)
            snprintf(err, errlen, "no validation geometry for %ux%u", info.width, info.height);
        return rc < 0 ? rc : 4;
    }
    if (nf < 8 || parse_u32(f[1], &p->box_x) || parse_u32(f[2], &p->box_y) ||
        parse_u32(f[3], &p->box_w) || parse_u32(f[4], &p->box_h) || parse_u32(f[5], &p->out_w) ||
        parse_u32(f[6], &p->out_h) || parse_u32(f[7], &flip)) {
        snprintf(err, errlen, "bad number in case");
        return -EINVAL;
    }
    p->flip = flip != 0;
    return 8;
}

/* Runs one case; *out is malloc'ed (caller frees) when 0 is returned. */
static int run_case(char **f, int nf, unsigned flags, uint8_t **out, size_t *out_len, char *err,
                    size_t errlen)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    struct sophon_limits lim = SOPHON_LIMITS_INIT;
    uint32_t fast = 0, f32 = 0;
    uint8_t *jpeg = NULL;
    size_t len;
    uint64_t size;
    int rc, k;

    *out = NULL;
    rc = sophon_test_read_file(f[0], &jpeg, &len, 0);
    if (rc < 0) {
        snprintf(err, errlen, "cannot read %s", f[0]);
        return rc;
    }
    k = parse_case(f, nf, jpeg, len, &p, err, errlen);
    if (k >= 0 &&
        ((nf > k && parse_u32(f[k], &fast)) || (nf > k + 1 && parse_u32(f[k + 1], &f32)))) {
        snprintf(err, errlen, "bad number in case");
        k = -EINVAL;
    }
    if (k < 0) {
        free(jpeg);
        return k;
    }
    p.fast = fast != 0;
    p.format = f32 ? SOPHON_FORMAT_F32 : SOPHON_FORMAT_U8;
    size = sophon_prep_output_size(&p);
    *out = malloc(size > 0 ? (size_t)size : 1);
    if (*out == NULL) {
        free(jpeg);
        return -ENOMEM;
    }
    rc = sophon__prep_run(*out, (size_t)size, jpeg, len, &p, &lim, flags, err, errlen);
    free(jpeg);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        return rc;
    }
    *out_len = (size_t)size;
    return 0;
}

static int cmd_batch(unsigned flags)
{
    char line[8192];
    unsigned long lineno = 0;

    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *f[10], *save = NULL, *tok;
        int nf = 0;
        uint8_t *out = NULL;
        size_t out_len = 0;
        char err[256] = "";
        int32_t status;
        uint8_t le[4];
        int rc;

        lineno++;
        for (tok = strtok_r(line, " \t\r\n", &save); tok != NULL && nf < 10;
             tok = strtok_r(NULL, " \t\r\n", &save))
            f[nf++] = tok;
        if (nf < 4) {
            fprintf(stderr, "line %lu: need at least 4 fields\n", lineno);
            return 2;
        }
        rc = run_case(f, nf, flags, &out, &out_len, err, sizeof(err));
        status = rc;
        le[0] = (uint8_t)((uint32_t)status);
        le[1] = (uint8_t)((uint32_t)status >> 8);
        le[2] = (uint8_t)((uint32_t)status >> 16);
        le[3] = (uint8_t)((uint32_t)status >> 24);
        if (rc < 0)
            fprintf(stderr, "%s\t%d\t%s\n", f[0], rc, err);
        if (fwrite(le, 1, 4, stdout) != 4 ||
            (rc == 0 && fwrite(out, 1, out_len, stdout) != out_len)) {
            free(out);
            return 2;
        }
        free(out);
    }
    return fflush(stdout) == 0 ? 0 : 2;
}

/* One crop of the crops command: 1 checked, 0 skipped (-EDOM, or a file prep refuses), -1 bad. */
static int check_one_crop(const char *path, const uint8_t *jpeg, size_t len,
                          const struct sophon_probe_info *info, uint32_t seed, int k,
                          const char *outdir, unsigned long *n)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    uint32_t bw = 1 + seed % info->width, bh = 1 + (seed / 7) % info->height;
    p.box_w = bw;
    p.box_h = bh;
    p.box_x = (seed / 13) % (info->width - bw + 1);
    p.box_y = (seed / 17) % (info->height - bh + 1);
    p.flip = (uint8_t)k;
    size_t cap = 2 * len + 65536, clen = 0, on = (size_t)sophon_prep_output_size(&p);
    uint8_t *crop = malloc(cap), *a = malloc(on), *b = malloc(on);
    uint32_t ox, oy;
    int r = -1;
    char err[256] = "", name[4200];
    if (crop == NULL || a == NULL || b == NULL)
        goto done;
    int rc = sophon_prep_crop(crop, cap, &clen, &ox, &oy, jpeg, len, &p, NULL, SOPHON_CROP_OPTIMIZE,
                              err, sizeof(err));
    if (rc == -EDOM || sophon_prep_run(a, on, jpeg, len, &p, NULL, NULL, 0) < 0) {
        r = 0;
        goto done;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: crop failed: %s (%d)\n", path, err, rc);
        goto done;
    }
    struct sophon_prep_params q = p;
    q.box_x -= ox;
    q.box_y -= oy;
    rc = sophon_prep_run(b, on, crop, clen, &q, NULL, err, sizeof(err));
    if (rc < 0 || memcmp(a, b, on) != 0) {
        fprintf(stderr, "DIFFERS: %s box %u,%u,%u,%u: %s\n", path, p.box_x, p.box_y, p.box_w,
                p.box_h, rc < 0 ? err : "other bytes");
        goto done;
    }
    snprintf(name, sizeof(name), "%s/%lu.jpg", outdir, (*n)++);
    FILE *f = fopen(name, "wb");
    if (f == NULL || fwrite(crop, 1, clen, f) != clen) {
        if (f != NULL)
            fclose(f);
        goto done;
    }
    fclose(f);
    printf("%s\t%s\t%u\t%u\t%u\t%u\t%u\t%u\n", path, name, p.box_x, p.box_y, p.box_w, p.box_h, ox,
           oy);
    r = 1;
done:
    free(crop);
    free(a);
    free(b);
    return r;
}

static int cmd_crops(const char *list, const char *outdir)
{
    FILE *f = fopen(list, "r");
    char path[4096];
    unsigned long n = 0, checked = 0, skipped = 0, bad = 0;
    if (f == NULL) {
        perror(list);
        return 2;
    }
    while (fgets(path, sizeof(path), f) != NULL) {
        path[strcspn(path, "\n")] = '\0';
        uint8_t *jpeg = NULL;
        size_t len;
        struct sophon_probe_info info;
        if (sophon_test_read_file(path, &jpeg, &len, SOPHON_MAX_OBJECT_BYTES) < 0 ||
            sophon_probe(&info, jpeg, len, NULL, 0) < 0 || info.width == 0 || info.height == 0) {
            free(jpeg);
            skipped++;
            continue;
        }
        uint32_t seed = 2166136261u;
        for (const char *c = path; *c; c++)
            seed = (seed ^ (uint8_t)*c) * 16777619u;
        for (int k = 0; k < 2; k++) {
            int r = check_one_crop(path, jpeg, len, &info, seed, k, outdir, &n);
            checked += r > 0;
            skipped += r == 0;
            bad += r < 0;
            seed = seed * 1103515245u + 12345u;
        }
        free(jpeg);
    }
    fclose(f);
    fprintf(stderr,
            "crops: %lu checked (the pipeline on the crop == on the file), %lu skipped, %lu "
            "bad\n",
            checked, skipped, bad);
    return bad > 0 || checked == 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "crops") == 0)
        return cmd_crops(argv[2], argv[3]);
    if (argc >= 3 && strcmp(argv[1], "probe") == 0)
        return cmd_probe(argc - 2, argv + 2);
    if ((argc >= 10 || (argc >= 6 && strcmp(argv[3], "val") == 0)) && strcmp(argv[1], "run") == 0) {
        uint8_t *out;
        size_t n;
        char err[256] = "";
        int rc = run_case(argv + 2, argc - 2, 0, &out, &n, err, sizeof(err));

        if (rc < 0) {
            fprintf(stderr, "error %d: %s\n", rc, err);
            return 1;
        }
        rc = fwrite(out, 1, n, stdout) == n ? 0 : 1;
        free(out);
        return rc;
    }
    if (argc == 2 && strcmp(argv[1], "batch") == 0)
        return cmd_batch(0);
    if (argc == 3 && strcmp(argv[1], "batch") == 0 && strcmp(argv[2], "--whole-file") == 0)
        return cmd_batch(SOPHON__DECODE_WHOLE_FILE | SOPHON__DECODE_LIBJPEG_HUFFMAN);
    fprintf(stderr,
            "usage: %s probe FILE... | run FILE (X Y W H OUT_W OUT_H FLIP | val RESIZE SIZE) "
            "[FAST [F32]] | batch [--whole-file] < cases | crops LIST OUTDIR\n",
            argv[0]);
    return 2;
}
