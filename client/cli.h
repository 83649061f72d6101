/*
 * cli.h - what the subcommands of the `sophon` command share: the rados tool's connection
 * options (-c/--conf, --id, -n/--name, --keyring, -p/--pool), connecting, and error reporting.
 */
#ifndef SOPHON_CLI_H
#define SOPHON_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include <rados/librados.h>

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
#define CLI_COMMON_LONGOPTS                                                                        \
    {"conf", required_argument, NULL, 'c'}, {"id", required_argument, NULL, CLI_OPT_ID},          \
        {"name", required_argument, NULL, 'n'},                                                    \
        {"keyring", required_argument, NULL, CLI_OPT_KEYRING},                                     \
        {"pool", required_argument, NULL, 'p'}, {"namespace", required_argument, NULL, 'N'},     \
        {"help", no_argument, NULL, 'h'}

#define CLI_COMMON_HELP                                                                            \
    "Connection options (as the rados tool):\n"                                                    \
    "  -c, --conf FILE     ceph.conf to use (default: $CEPH_CONF, then Ceph's search path)\n"       \
    "      --id ID         client id, e.g. sophon for client.sophon (default: admin)\n"            \
    "  -n, --name NAME     full client name, e.g. client.sophon\n"                                 \
    "      --keyring FILE  keyring holding the client's key\n"                                     \
    "  -p, --pool POOL     pool holding the objects\n"                                             \
    "  -N, --namespace NS  object namespace within the pool (default: none)\n"                     \
    "  -h, --help          this help\n"

/*
 * Handles a common option. Returns 1 if opt was one, 0 if not, -1 if its argument is invalid
 * (after printing why).
 */
int cli_common_option(struct cli *c, int opt, const char *arg);

/* Connects to the cluster and, if a pool was given, opens it. Prints what failed and what to do;
 * returns 0 or a negative errno. */
int cli_connect(struct cli *c);
void cli_disconnect(struct cli *c);

/* Prints "sophon CMD: " + message to stderr. */
void cli_error(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Prints what a failed class call on object oid means and what to do about it: missing caps,
 * a missing class, a missing object. `what` names the call, e.g. "sophon.version".
 */
void cli_class_error(const struct cli *c, const char *what, const char *oid, int err);

/* Subcommands. */
int cmd_version(int argc, char **argv);

#endif
