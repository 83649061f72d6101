/*
 * cli.h - what the subcommands of the `sophon` command share: the rados tool's connection
 * options (-c/--conf, --id, -n/--name, --keyring, -p/--pool), connecting, and error reporting.
 */
#ifndef SOPHON_CLI_H
#define SOPHON_CLI_H

#include <getopt.h>
#include <stdio.h>
#include <stdbool.h>

#include <stdint.h>

#include <rados/librados.h>

#include "prep.h"
#include "sampler.h"

struct cli {
    const char *prog;    /* "sophon version", for messages */
    const char *conf;    /* -c: ceph.conf, default: $CEPH_CONF or Ceph's search path */
    const char *name;    /* -n client.X or --id X, default client.admin */
    const char *keyring; /* --keyring */
    const char *pool;    /* -p */
    const char *nspace;  /* -N: object namespace within the pool */
    rados_t cluster;
    rados_ioctx_t io;
};

/* Long options every subcommand accepts; their getopt values are below 0x100. */
#define CLI_COMMON_SHORTOPTS "c:n:p:N:h"
enum { CLI_OPT_ID = 0x100, CLI_OPT_KEYRING, CLI_OPT_FIRST_OWN };
/* clang-format off */
#define CLI_COMMON_LONGOPTS                                                                        \
    {"conf", required_argument, NULL, 'c'},                                                        \
    {"id", required_argument, NULL, CLI_OPT_ID},                                                   \
    {"name", required_argument, NULL, 'n'},                                                        \
    {"keyring", required_argument, NULL, CLI_OPT_KEYRING},                                         \
    {"pool", required_argument, NULL, 'p'},                                                        \
    {"namespace", required_argument, NULL, 'N'},                                                   \
    {"help", no_argument, NULL, 'h'}
/* clang-format on */

#define CLI_COMMON_HELP                                                                            \
    "Connection options (as the rados tool):\n"                                                    \
    "  -c, --conf FILE     ceph.conf to use (default: $CEPH_CONF, then Ceph's search path)\n"      \
    "      --id ID         client id, e.g. sophon for client.sophon (default: admin)\n"            \
    "  -n, --name NAME     full client name, e.g. client.sophon\n"                                 \
    "      --keyring FILE  keyring holding the client's key\n"                                     \
    "  -p, --pool POOL     pool holding the objects\n"                                             \
    "  -N, --namespace NS  object namespace within the pool (default: none)\n"                     \
    "  -h, --help          this help\n"

/*
 * A subcommand's own options: own(arg, opt, value) returns 1 if opt was one (handled), 0 if
 * not, -1 if its value is invalid (after printing why).
 */
typedef int (*cli_option_fn)(void *arg, int opt, const char *value);

/*
 * The option loop of every subcommand: getopt_long over argv with shortopts (after
 * CLI_COMMON_SHORTOPTS) and longopts; each option goes to own (which may be NULL), then to the
 * connection options, else it is a usage error (usage to stderr). -h prints usage to stdout.
 * Returns 0 with optind at the first operand, or -1 to exit with *code: 0 after --help, 2 for a
 * usage error.
 */
int cli_parse_options(struct cli *c, int argc, char **argv, const char *shortopts,
                      const struct option *longopts, const char *usage, cli_option_fn own,
                      void *arg, int *code);

/* Connects to the cluster and, if a pool was given, opens it. Prints what failed and what to do;
 * returns 0 or a negative errno. Operations time out after CLI_OP_TIMEOUT seconds (-ETIMEDOUT)
 * unless ceph.conf or CEPH_ARGS set rados_osd_op_timeout / rados_mon_op_timeout (to a number of
 * seconds: 0, librados's "never", is taken for unset). */
#define CLI_OP_TIMEOUT "60"
int cli_connect(struct cli *c);
void cli_disconnect(struct cli *c);

/* Prints "sophon CMD: " + message to stderr. */
void cli_error(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Prints what a failed class call on object oid means and what to do about it: missing caps,
 * a missing class, a missing object. `what` names the call, e.g. "sophon.version".
 */
void cli_class_error(const struct cli *c, const char *what, const char *oid, int err);

/* Parses an unsigned decimal number of at most max; prints why not and returns -1 if it is not. */
int cli_parse_u64(const struct cli *c, const char *what, const char *s, uint64_t max,
                  uint64_t *out);

/* The same, from min to max. */
int cli_parse_range(const struct cli *c, const char *what, const char *s, uint64_t min,
                    uint64_t max, uint64_t *out);

/* A rate in bytes per second: "500Mbit", "1.5Gbit", "100MB", "1e9" (bytes/s), with an optional
 * "/s" or "ps". Returns 0, or -1 if s is not one (nothing printed). */
int cli_parse_rate(const char *s, double *out);

/* --net: cli_parse_rate, saying what it wants when s is not a rate. */
int cli_parse_net(const struct cli *c, const char *s, double *out);

/* A finite decimal number, > 0, or >= 0 with allow_zero; prints why not and returns -1 if s is
 * not one. */
int cli_parse_number(const struct cli *c, const char *what, const char *s, int allow_zero,
                     double *out);

/* --policy: the selector's policy named s, or prints the names and returns -1. */
int cli_parse_policy(const struct cli *c, const char *s);

/* Parses --format: "u8" or "f32" as an enum sophon_format, whose values the selector's
 * sophon_final_format and libsophon's sophon_sample_format share (cross_checks.h); prints why and
 * returns -1 for anything else. */
int cli_parse_format(const struct cli *c, const char *arg);

/* --transform: "train" or "val" as an enum sophon_transform (sophon.h); prints why and returns
 * -1 for anything else. */
int cli_parse_transform(const struct cli *c, const char *arg);

/* --scale, --ratio: "A,B" with 0 < A <= B, each a decimal number or a fraction like 3/4; prints
 * why and returns -1 if arg is not one. */
int cli_parse_range_pair(const struct cli *c, const char *what, const char *arg, double out[2]);

/* --mean, --std: "a,b,c", finite numbers (not 0 for nonzero); prints why and returns -1 if arg
 * is not that. */
int cli_parse_channels(const struct cli *c, const char *what, const char *arg, int nonzero,
                       float out[3]);

/* The request options of `sophon prep`, `exec` and `bench`. */
struct cli_prep {
    struct sophon_prep_params p;
    int have_box, have_seed, have_size;
    int transform;                    /* enum sophon_transform */
    uint32_t resize;                  /* val: Resize(resize); default 256 */
    struct sophon_crop_policy policy; /* --seed: RandomResizedCrop's scale and ratio */
    uint64_t seed, epoch, index;
    const char *output; /* -o */
};

#define CLI_PREP_SHORTOPTS "o:"
enum {
    CLI_OPT_BOX = CLI_OPT_FIRST_OWN,
    CLI_OPT_SEED,
    CLI_OPT_EPOCH,
    CLI_OPT_INDEX,
    CLI_OPT_SIZE,
    CLI_OPT_FLIP,
    CLI_OPT_FORMAT,
    CLI_OPT_FAST,
    CLI_OPT_TRANSFORM,
    CLI_OPT_RESIZE,
    CLI_OPT_SCALE,
    CLI_OPT_RATIO,
    CLI_OPT_MEAN,
    CLI_OPT_STD,
    CLI_OPT_STAGE,
    CLI_OPT_CROP_MAX,
    CLI_OPT_FIRST_CMD,
};
/* clang-format off */
#define CLI_PREP_LONGOPTS                                                                          \
    {"box", required_argument, NULL, CLI_OPT_BOX},                                                 \
    {"seed", required_argument, NULL, CLI_OPT_SEED},                                               \
    {"epoch", required_argument, NULL, CLI_OPT_EPOCH},                                             \
    {"index", required_argument, NULL, CLI_OPT_INDEX},                                             \
    {"size", required_argument, NULL, CLI_OPT_SIZE},                                               \
    {"flip", no_argument, NULL, CLI_OPT_FLIP},                                                     \
    {"format", required_argument, NULL, CLI_OPT_FORMAT},                                           \
    {"fast", no_argument, NULL, CLI_OPT_FAST},                                                     \
    {"transform", required_argument, NULL, CLI_OPT_TRANSFORM},                                     \
    {"resize", required_argument, NULL, CLI_OPT_RESIZE},                                           \
    {"scale", required_argument, NULL, CLI_OPT_SCALE},                                             \
    {"ratio", required_argument, NULL, CLI_OPT_RATIO},                                             \
    {"mean", required_argument, NULL, CLI_OPT_MEAN},                                               \
    {"std", required_argument, NULL, CLI_OPT_STD},                                                 \
    {"stage", required_argument, NULL, CLI_OPT_STAGE},                                             \
    {"crop-max", required_argument, NULL, CLI_OPT_CROP_MAX},                                       \
    {"output", required_argument, NULL, 'o'}
/* clang-format on */

#define CLI_PREP_HELP                                                                              \
    "Request options:\n"                                                                           \
    "      --transform T   train (the default: a crop box, resized to the output) or val\n"        \
    "                      (torchvision's Resize(--resize) + CenterCrop(--size) of the image)\n"   \
    "      --box X,Y,W,H   train: crop box in source pixels\n"                                     \
    "      --seed S        train: draw box and flip as torchvision's RandomResizedCrop and\n"      \
    "                      RandomHorizontalFlip do, from seed S, --epoch E (default 0) and\n"      \
    "                      --index I (default 0)\n"                                                \
    "      --scale A,B     --seed: RandomResizedCrop's scale (default 0.08,1)\n"                   \
    "      --ratio A,B     --seed: its aspect ratios, e.g. 3/4,4/3 (the default)\n"                \
    "      --size N|WxH    output size (default 224; val: N only)\n"                               \
    "      --resize N      val: the shorter side before the centre crop (default 256)\n"           \
    "      --flip          train: flip horizontally after resizing\n"                              \
    "      --format F      u8 (HWC RGB, the default) or f32 (CHW float32, normalized)\n"           \
    "      --mean a,b,c    f32: Normalize's mean (default ImageNet's 0.485,0.456,0.406)\n"         \
    "      --std a,b,c     f32: Normalize's std (default 0.229,0.224,0.225)\n"                     \
    "      --fast          fast mode: DCT-domain scaling and fast IDCT (not exact)\n"              \
    "      --stage S       pixels (the default); crop: the lossless crop JPEG of the blocks the\n" \
    "                      box needs (no pixel decoded; -o box.jpg writes it); crop,pixels: the\n" \
    "                      crop, or the pixels where they are smaller or the crop is not exact\n"  \
    "      --crop-max N    crop: at most N bytes (else the pixels with crop,pixels, or ENOSPC)\n"  \
    "  -o, --output OUT    write the output: OUT.ppm or OUT.png as an image, a crop as its\n"      \
    "                      JPEG, else raw bytes\n"

void cli_prep_init(struct cli_prep *o);
/* Handles a request option: 1 handled, 0 not one, -1 invalid (after printing why). */
int cli_prep_option(const struct cli *c, struct cli_prep *o, int opt, const char *arg);
/* Whether the request needs the image's size first (--seed, or --transform val). */
int cli_prep_needs_size(const struct cli_prep *o);
/* Completes the request for an image of width x height: draws box and flip from the seed if
 * --seed was given, or sets val's geometry. Returns 0, or -1 after printing why the request is
 * incomplete or impossible. */
int cli_prep_finish(const struct cli *c, struct cli_prep *o, uint32_t width, uint32_t height);

/* Reads a whole file (at most max bytes). Returns 0 or a negative errno. */
int cli_read_file(const char *path, uint8_t **buf, size_t *len, size_t max);

/* Closes a file that was written to: 0, or -EIO if anything written was lost (the stream's
 * error indicator was set, or the last flush failed: a full disk shows there). */
int cli_close_written(FILE *f);

/* Subcommands. */
int cmd_version(int argc, char **argv);
int cmd_prep(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_load(int argc, char **argv);

#endif
