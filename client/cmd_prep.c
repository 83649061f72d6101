/*
 * cmd_prep.c - `sophon prep` (a local file, no cluster) and `sophon exec` (an object, prepared in
 * the OSD holding it, or with --local on this client): the same request, the same code, the
 * same bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "output.h"
#include "prep_call.h"
#include "sophon_config.h"
#include "sophon.h"

static const char prep_usage[] =
    "Usage: sophon prep FILE (--box X,Y,W,H | --seed S | --transform val) [--size N|WxH]\n"
    "                   [--resize N] [--flip] [--format u8|f32] [--fast] [--stage S] [-o OUT]\n"
    "                   [options]\n"
    "Decodes, crops, resizes and flips a JPEG file here, as the OSD class would (no cluster\n"
    "needed), and prints what it took.\n\n" CLI_PREP_HELP;

static const char exec_usage[] =
    "Usage: sophon exec -p POOL OBJ (--box X,Y,W,H | --seed S | --transform val) [--size N|WxH]\n"
    "                   [--resize N] [--flip] [--format u8|f32] [--fast] [--stage S] [-o OUT]\n"
    "                   [--local]\n"
    "Runs the prep request in the OSD holding OBJ and prints the bytes stored, the bytes\n"
    "returned and the OSD's CPU time. --local reads the object and runs the same request here\n"
    "instead; the output is byte-identical. A request the class's wire format cannot carry (the\n"
    "validation transform, for a class of wire format 1) is prepared here, and said "
    "so.\n\n" CLI_PREP_HELP
    "      --local         prepare on this client instead of in the OSD\n\n" CLI_COMMON_HELP;

#define SOPHON_OSD_MAX_MP_TEXT_(x)  #x
#define SOPHON_OSD_MAX_MP_TEXT_X(x) SOPHON_OSD_MAX_MP_TEXT_(x)
#define SOPHON_OSD_MAX_MP_TEXT      SOPHON_OSD_MAX_MP_TEXT_X(SOPHON_OSD_MAX_MEGAPIXELS)

/* Explains a pipeline errno when only the number is known (the OSD's reply). */
static const char *prep_errno_hint(int err)
{
    switch (-err) {
    case EINVAL:
        return "the request was refused: is the box inside the image (`sophon probe`)?";
    case EBADMSG:
        return "the data is not a valid JPEG (corrupt, truncated or another format)";
    case E2BIG:
        return "the image is over the OSD's limits (its cap of " SOPHON_OSD_MAX_MP_TEXT
               " megapixels a call, or the pixel and scan limits of a decompression bomb): "
               "--local prepares it here unless it is a bomb";
    case EBUSY:
        return "the OSD's memory for sophon calls is taken by other calls: try again, or --local";
    case EFBIG:
        return "the object or the output is over the size limits";
    case EMEDIUMTYPE:
        return "a JPEG of a kind sophon does not decode (12-bit, lossless, unusual components), "
               "as Pillow neither";
    case ENOMEM:
        return "out of memory";
    case ENOSPC:
        return "the crop is larger than --crop-max, the stored object or the pixels allow: "
               "--stage crop,pixels returns the pixels then";
    case EDOM:
        return "no crop of this JPEG decodes to the same pixels (a progressive file whose scans "
               "leave coefficients unknown): --stage crop,pixels returns the pixels then";
    default:
        return strerror(-err);
    }
}

/* Why a file or object was not read: the object limit the OSD applies too, or the errno. */
static void read_error(const struct cli *c, const char *name, int err)
{
    if (err == -EFBIG)
        cli_error(c,
                  "cannot read %s: over the %u MiB that sophon prepares of an object, here as "
                  "in the OSD (EFBIG)",
                  name, SOPHON_MAX_OBJECT_BYTES >> 20);
    else
        cli_error(c, "cannot read %s: %s", name, strerror(-err));
}

static void print_result(const char *name, const struct sophon_response *h, size_t resp_len,
                         const struct sophon_prep_params *p, const char *where)
{
    char resized[64] = "";
    if (p->resize_w != 0)
        snprintf(resized, sizeof(resized), " resized to %ux%u, window at %u,%u", p->resize_w,
                 p->resize_h, p->win_x, p->win_y);
    if (h->stage == SOPHON_WIRE_CROP)
        printf("%s: box %u,%u,%u,%u -> crop JPEG %ux%u at %u,%u (the box at %u,%u in it)\n", name,
               p->box_x, p->box_y, p->box_w, p->box_h, h->width, h->height, h->origin_x,
               h->origin_y, p->box_x - h->origin_x, p->box_y - h->origin_y);
    else
        printf("%s: box %u,%u,%u,%u%s%s -> %ux%u %s%s%s\n", name, p->box_x, p->box_y, p->box_w,
               p->box_h, resized, p->flip ? " flipped" : "", h->width, h->height,
               sophon_format_name(h->format), h->fast ? " (fast)" : "",
               p->stage == SOPHON_WIRE_CROP ? " (pixels: smaller than the crop, or the crop not "
                                              "exact)"
                                            : "");
    printf("  stored %llu bytes, returned %zu bytes (%.2fx), %s CPU %.3f ms\n",
           (unsigned long long)h->source_bytes, resp_len,
           h->source_bytes > 0 ? (double)resp_len / (double)h->source_bytes : 0.0, where,
           (double)h->cpu_ns / 1e6);
}

static int save(const struct cli *c, const struct cli_prep *o, const struct sophon_response *h,
                const uint8_t *payload)
{
    char err[256];
    if (o->output == NULL)
        return 0;
    if (h->stage == SOPHON_WIRE_CROP) {
        FILE *f = fopen(o->output, "wb");
        int ok = f != NULL && fwrite(payload, 1, h->payload_len, f) == h->payload_len;
        if (f != NULL && fclose(f) != 0)
            ok = 0;
        if (!ok) {
            cli_error(c, "cannot write %s: %s", o->output, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (sophon__write_output(o->output, h, payload, &o->p, err, sizeof(err)) < 0) {
        cli_error(c, "%s", err);
        return -1;
    }
    return 0;
}

/* Runs the request on jpeg bytes here; prints and saves. Returns the exit code. */
static int prep_here(const struct cli *c, struct cli_prep *o, const char *name, const uint8_t *jpeg,
                     size_t len)
{
    struct sophon_probe_info info;
    struct sophon_response h;
    const uint8_t *payload;
    uint8_t *resp = NULL;
    size_t resp_len;
    char err[256];
    int r;

    if (cli_prep_needs_size(o)) {
        r = sophon_probe(&info, jpeg, len, err, sizeof(err));
        if (r < 0) {
            cli_error(c, "%s: %s (%s)", name, err, strerror(-r));
            return 1;
        }
        if (cli_prep_finish(c, o, info.width, info.height) < 0)
            return 2;
    } else if (cli_prep_finish(c, o, 0, 0) < 0) {
        return 2;
    }
    r = sophon__local_prep(&resp, &resp_len, jpeg, len, &o->p, err, sizeof(err));
    if (r < 0) {
        cli_error(c, "%s: %s (%s)", name, err, strerror(-r));
        return 1;
    }
    sophon_response_decode(&h, &payload, resp, resp_len);
    print_result(name, &h, resp_len, &o->p, "local");
    r = save(c, o, &h, payload);
    free(resp);
    return r < 0 ? 1 : 0;
}

enum { OPT_LOCAL = CLI_OPT_FIRST_CMD };

static const struct option longopts[] = {
    CLI_COMMON_LONGOPTS,
    CLI_PREP_LONGOPTS,
    {"local", no_argument, NULL, OPT_LOCAL},
    {NULL, 0, NULL, 0},
};

/* What prep and exec take: the request, and exec's --local (local NULL for prep). */
struct prep_args {
    const struct cli *c;
    struct cli_prep *o;
    int *local;
};

static int prep_option(void *arg_, int opt, const char *arg)
{
    struct prep_args *a = arg_;

    if (opt == OPT_LOCAL && a->local != NULL) {
        *a->local = 1;
        return 1;
    }
    return cli_prep_option(a->c, a->o, opt, arg);
}

/* Parses the command line shared by prep and exec. Returns -1 to exit with *code. */
static int parse(int argc, char **argv, struct cli *c, struct cli_prep *o, int *local,
                 const char *usage, int *code)
{
    struct prep_args a = {c, o, local};

    cli_prep_init(o);
    return cli_parse_options(c, argc, argv, CLI_PREP_SHORTOPTS, longopts, usage, prep_option, &a,
                             code);
}

int cmd_prep(int argc, char **argv)
{
    struct cli c = {.prog = "sophon prep"};
    struct cli_prep o;
    uint8_t *jpeg;
    size_t len;
    int code;

    if (parse(argc, argv, &c, &o, NULL, prep_usage, &code) < 0)
        return code;
    if (optind + 1 != argc) {
        cli_error(&c, "want one JPEG file: sophon prep FILE --box X,Y,W,H");
        return 2;
    }
    const char *path = argv[optind];
    int r = cli_read_file(path, &jpeg, &len, SOPHON_MAX_OBJECT_BYTES);
    if (r < 0) {
        read_error(&c, path, r);
        return 1;
    }
    code = prep_here(&c, &o, path, jpeg, len);
    free(jpeg);
    return code;
}

/* exec --local: the object read and the request run here. Returns the exit code. */
static int read_and_prep_here(const struct cli *c, struct cli_prep *o, const char *oid)
{
    uint8_t *jpeg;
    size_t len;
    int r = sophon__read_object(&jpeg, &len, c->io, oid, SOPHON_MAX_OBJECT_BYTES);
    if (r < 0) {
        if (r == -ENOENT)
            cli_error(c, "no object %s in pool %s", oid, c->pool);
        else
            read_error(c, oid, r);
        return 1;
    }
    r = prep_here(c, o, oid, jpeg, len);
    free(jpeg);
    return r;
}

/* The OSD's refusal, in words: the class's own (the image, the request) or the OSD's. */
static void exec_error(struct cli *c, const char *oid, int err)
{
    if (err == -EOPNOTSUPP || err == -EPERM || err == -EACCES || err == -ENOENT || err == -EPROTO) {
        cli_class_error(c, "sophon.prep", oid, err);
        return;
    }
    cli_error(c, "sophon.prep on %s failed in the OSD: %s (%s)", oid, prep_errno_hint(err),
              strerror(-err));
}

int cmd_exec(int argc, char **argv)
{
    struct cli c = {.prog = "sophon exec"};
    struct cli_prep o;
    int local = 0, code, r;

    if (parse(argc, argv, &c, &o, &local, exec_usage, &code) < 0)
        return code;
    if (optind + 1 != argc || c.pool == NULL) {
        cli_error(&c, "want one object and its pool: sophon exec -p POOL OBJ --box X,Y,W,H");
        return 2;
    }
    const char *oid = argv[optind];
    if (o.transform == SOPHON_TRANSFORM_TRAIN && o.have_box == o.have_seed) {
        cli_error(&c, "give either --box X,Y,W,H or --seed S (or --transform val)");
        return 2;
    }
    if (cli_connect(&c) < 0)
        return 1;
    code = 1;
    if (local) {
        code = read_and_prep_here(&c, &o, oid);
        goto done;
    }
    if (cli_prep_needs_size(&o)) {
        struct sophon_probe_reply pr;
        r = sophon__remote_probe(&pr, c.io, oid);
        if (r < 0) {
            exec_error(&c, oid, r);
            goto done;
        }
        if (cli_prep_finish(&c, &o, pr.info.width, pr.info.height) < 0) {
            code = 2; /* a request that cannot be made, as prep says */
            goto done;
        }
    }
    char *resp;
    size_t resp_len;
    uint16_t wire;
    r = sophon__class_wire(&wire, c.io, oid);
    if (r == 0 && !sophon_request_fits(&o.p, wire)) {
        printf("the sophon class in the OSD speaks wire format %u, which cannot carry this "
               "request: prepared here from the stored object\n",
               (unsigned)wire);
        code = read_and_prep_here(&c, &o, oid);
        goto done;
    }
    if (r == 0)
        r = sophon__remote_prep(&resp, &resp_len, c.io, oid, &o.p, wire);
    if (r < 0) {
        exec_error(&c, oid, r);
        goto done;
    }
    struct sophon_response h;
    const uint8_t *payload;
    sophon_response_decode(&h, &payload, (const uint8_t *)resp, resp_len);
    print_result(oid, &h, resp_len, &o.p, "OSD");
    code = save(&c, &o, &h, payload) < 0 ? 1 : 0;
    rados_buffer_free(resp);
done:
    cli_disconnect(&c);
    return code;
}
