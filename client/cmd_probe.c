/*
 * cmd_probe.c - `sophon probe`: the header facts of JPEG files here, or of stored objects as the
 * OSDs holding them read them (no object bytes cross the network).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "prep_call.h"

static const char usage[] =
    "Usage: sophon probe FILE...\n"
    "       sophon probe -p POOL OBJ...\n"
    "Prints each JPEG's header facts without decoding it: size, components, subsampling,\n"
    "progressive, colour space, and the time the header took. Local files also get their scan\n"
    "count (a walk over the whole file, not included in that time). With -p, the OSD holding\n"
    "each object reads its header.\n\n" CLI_COMMON_HELP;

static void print_info(const char *name, const struct sophon_probe_info *i, uint64_t bytes,
                       double usec)
{
    printf("%s: %ux%u, %u component%s, %s, %s %s, %u-bit", name, i->width, i->height, i->components,
           i->components == 1 ? "" : "s", sophon_colorspace_name(i->colorspace),
           sophon_subsampling_name(i->subsampling), i->progressive ? "progressive" : "baseline",
           i->bits);
    if (i->scans > 0)
        printf(", %u scan%s", i->scans, i->scans == 1 ? "" : "s");
    printf(", %llu bytes", (unsigned long long)bytes);
    if (usec >= 0)
        printf(", probed in %.1f us", usec);
    putchar('\n');
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int cmd_probe(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS, {NULL, 0, NULL, 0}};
    struct cli c = {.prog = "sophon probe"};
    int r, code, failed = 0;

    if (cli_parse_options(&c, argc, argv, "", longopts, usage, NULL, NULL, &code) < 0)
        return code;
    if (optind == argc) {
        cli_error(&c, "nothing to probe: give files, or -p POOL and objects");
        return 2;
    }
    if (c.pool != NULL && cli_connect(&c) < 0)
        return 1;
    for (int i = optind; i < argc; i++) {
        const char *name = argv[i];
        if (c.pool != NULL) {
            struct sophon_probe_reply pr;
            r = sophon__remote_probe(&pr, c.io, name);
            if (r < 0) {
                if (r == -EBADMSG)
                    cli_error(&c, "%s: not a valid JPEG (EBADMSG)", name);
                else if (r == -EMEDIUMTYPE)
                    cli_error(&c,
                              "%s: a JPEG of a kind sophon does not decode (12-bit, lossless, "
                              "unusual components), as Pillow neither (EMEDIUMTYPE)",
                              name);
                else if (r == -EOPNOTSUPP || r == -EPERM || r == -ENOENT || r == -EPROTO)
                    cli_class_error(&c, "sophon.probe", name, r);
                else
                    cli_error(&c, "%s: %s (%d)", name, strerror(-r), r);
                failed++;
                continue;
            }
            print_info(name, &pr.info, pr.object_size, -1);
            continue;
        }
        uint8_t *buf;
        size_t len;
        char err[256];
        struct sophon_probe_info info;
        r = cli_read_file(name, &buf, &len, SIZE_MAX);
        if (r < 0) {
            cli_error(&c, "cannot read %s: %s", name, strerror(-r));
            failed++;
            continue;
        }
        double t0 = now_us();
        r = sophon_probe(&info, buf, len, err, sizeof(err));
        double t1 = now_us();
        if (r == 0) {
            int64_t scans = sophon_count_scans(buf, len);

            info.scans = scans > 0 && scans <= UINT32_MAX ? (uint32_t)scans : 0;
        }
        free(buf);
        if (r < 0) {
            cli_error(&c, "%s: %s (%s)", name, err, strerror(-r));
            failed++;
            continue;
        }
        print_info(name, &info, len, t1 - t0);
    }
    cli_disconnect(&c);
    return failed ? 1 : 0;
}
