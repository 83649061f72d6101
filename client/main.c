/*
 * main.c - the `sophon` command: finds the subcommand and hands it the rest of the line.
 *
 * As with the rados tool, options may come before or after the subcommand:
 * `sophon -p data version obj` and `sophon version -p data obj` are the same.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sophon.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"version", cmd_version, "client version; with -p POOL OBJ, the class version in the OSD"},
    {"put", cmd_put, "store JPEG files or directories as objects, many writes in flight"},
    {"probe", cmd_probe, "header facts of JPEG files, or of objects read in their OSDs"},
    {"prep", cmd_prep, "decode, crop, resize and flip a JPEG file here (no cluster)"},
    {"exec", cmd_exec, "prepare an object in the OSD holding it (or --local) and report"},
    {"profile", cmd_profile, "records of a dataset's objects, made in the OSDs, into its index"},
    {"plan", cmd_plan, "per-object offload decisions under network and CPU budgets"},
    {"load", cmd_load, "training epochs of a dataset, placed per the plan, with their costs"},
    {"bench", cmd_bench, "plain reads against preparation in the OSDs, side by side"},
};

static void usage(FILE *f)
{
    fputs("Usage: sophon [OPTIONS] COMMAND [ARGS]\n\nCommands:\n", f);
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fputs("\n`sophon COMMAND --help` tells more.\n\n" CLI_COMMON_HELP, f);
}

/* Options of the connection group that take a value, so that the value is not taken for the
 * subcommand's name. */
static int takes_value(const char *arg)
{
    static const char *const with_value[] = {"-c",        "--conf", "--id",   "-n", "--name",
                                             "--keyring", "-p",     "--pool", "-N", "--namespace"};
    for (size_t i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
        if (strcmp(arg, with_value[i]) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int cmd = 0;

    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-') {
            cmd = i;
            break;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("sophon %s\n", sophon_version_string());
            return 0;
        }
        if (takes_value(argv[i]))
            i++;
    }
    if (cmd == 0) {
        int help = argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0);
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
        if (strcmp(argv[cmd], subcommands[i].name) != 0)
            continue;
        /* Drop the subcommand's name; getopt_long() then sees every option in order, and names
         * the command in its messages as "sophon NAME". */
        static char prog[64];
        snprintf(prog, sizeof(prog), "sophon %s", argv[cmd]);
        memmove(&argv[cmd], &argv[cmd + 1], (size_t)(argc - cmd) * sizeof(argv[0]));
        argv[0] = prog;
        return subcommands[i].run(argc - 1, argv);
    }
    fprintf(stderr, "sophon: unknown command '%s'\n\n", argv[cmd]);
    usage(stderr);
    return 2;
}
