/*
 * cmd_version.c - `sophon version`: this client's version and, given an object, the version of
 * the sophon class answering in the OSD that holds it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sophon.h"
#include "wire.h"

static const char usage[] =
    "Usage: sophon version [-p POOL OBJ]\n"
    "Prints the client's version and wire format; given an object, also those of the sophon\n"
    "class in the OSD holding it, and what an older class's format means for this "
    "client.\n\n" CLI_COMMON_HELP;

int cmd_version(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_COMMON_LONGOPTS, {NULL, 0, NULL, 0}};
    struct cli c = {.prog = "sophon version"};
    struct sophon_class_version v;
    char vbuf[32];
    int r, code;

    if (cli_parse_options(&c, argc, argv, "", longopts, usage, NULL, NULL, &code) < 0)
        return code;
    printf("client: sophon %s, wire format %u\n", sophon_version_string(),
           (unsigned)sophon_wire_version());
    if (optind == argc)
        return 0;
    if (optind + 1 != argc || c.pool == NULL) {
        cli_error(&c, "want exactly one object and its pool: sophon version -p POOL OBJ");
        return 2;
    }
    const char *oid = argv[optind];
    if (cli_connect(&c) < 0)
        return 1;
    r = sophon_class_version_get(&v, c.io, oid);
    cli_disconnect(&c);
    if (r < 0) {
        cli_class_error(&c, "sophon.version", oid, r);
        return 1;
    }
    printf("class:  sophon %s, wire format %u (OSD holding %s in pool %s)\n",
           sophon_version_format(vbuf, sizeof(vbuf), v.class_version), (unsigned)v.wire_version,
           oid, c.pool);
    if (v.wire_version < sophon_wire_version())
        printf(
            "note: the class speaks an older wire format: requests it can carry (RandomResizedCrop "
            "at any size) go to it, the others (the validation transform) are prepared on the "
            "client from the stored object; deploy this sophon version on the OSDs for all of "
            "them\n");
    return 0;
}
