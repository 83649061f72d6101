/*
 * cli.c - connection options, connecting and error messages shared by the subcommands.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cli_error(const struct cli *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", c->prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_common_option(struct cli *c, int opt, const char *arg)
{
    static char name_buf[256];

    switch (opt) {
    case 'c':
        c->conf = arg;
        return 1;
    case 'n':
        if (strchr(arg, '.') == NULL) {
            cli_error(c, "--name wants TYPE.ID, e.g. client.sophon (or use --id %s)", arg);
            return -1;
        }
        c->name = arg;
        return 1;
    case CLI_OPT_ID:
        if (snprintf(name_buf, sizeof(name_buf), "client.%s", arg) >= (int)sizeof(name_buf)) {
            cli_error(c, "--id is too long");
            return -1;
        }
        c->name = name_buf;
        return 1;
    case CLI_OPT_KEYRING:
        c->keyring = arg;
        return 1;
    case 'p':
        c->pool = arg;
        return 1;
    case 'N':
        c->nspace = arg;
        return 1;
    default:
        return 0;
    }
}

static const char *connect_hint(int err)
{
    switch (-err) {
    case ENOENT:
        return "no key was found for this client: pass --keyring FILE, or set `keyring` in "
               "ceph.conf";
    case EACCES:
    case EPERM:
        return "the monitors refused the key: check --id/--name and that the keyring holds "
               "this client's current key (`ceph auth get client.ID`)";
    case ETIMEDOUT:
        return "no monitor answered: is the cluster running (`ceph -s`)? check `mon host` in "
               "ceph.conf, or start the dev cluster with `vstart/vstart.sh start`";
    default:
        return "check ceph.conf (-c or $CEPH_CONF) and the client's key";
    }
}

int cli_connect(struct cli *c)
{
    const char *name = c->name != NULL ? c->name : "client.admin";
    int r = rados_create2(&c->cluster, "ceph", name, 0);
    if (r < 0) {
        cli_error(c, "cannot create a cluster handle for %s: %s", name, strerror(-r));
        return r;
    }
    /* Fail in seconds, not the librados default of five minutes, when no monitor answers;
     * ceph.conf and CEPH_ARGS, read after this, may still change it. */
    rados_conf_set(c->cluster, "client_mount_timeout", "30");
    r = rados_conf_read_file(c->cluster, c->conf);
    if (r < 0) {
        if (c->conf != NULL)
            cli_error(c, "cannot read ceph.conf %s: %s", c->conf, strerror(-r));
        else
            cli_error(c, "no ceph.conf found: pass -c FILE or set CEPH_CONF (the dev cluster "
                         "prints it: `vstart/vstart.sh status`)");
        goto fail;
    }
    r = rados_conf_parse_env(c->cluster, NULL);
    if (r < 0) {
        cli_error(c, "cannot parse CEPH_ARGS: %s", strerror(-r));
        goto fail;
    }
    if (c->keyring != NULL) {
        r = rados_conf_set(c->cluster, "keyring", c->keyring);
        if (r < 0) {
            cli_error(c, "bad --keyring %s: %s", c->keyring, strerror(-r));
            goto fail;
        }
    }
    r = rados_connect(c->cluster);
    if (r < 0) {
        cli_error(c, "cannot connect to the cluster as %s: %s; %s", name, strerror(-r),
                  connect_hint(r));
        goto fail;
    }
    if (c->pool != NULL) {
        r = rados_ioctx_create(c->cluster, c->pool, &c->io);
        if (r < 0) {
            if (r == -ENOENT)
                cli_error(c, "pool %s does not exist: check -p (`ceph osd pool ls` lists them)",
                          c->pool);
            else
                cli_error(c, "cannot open pool %s: %s", c->pool, strerror(-r));
            rados_shutdown(c->cluster);
            c->cluster = NULL;
            return r;
        }
        if (c->nspace != NULL)
            rados_ioctx_set_namespace(c->io, c->nspace);
    }
    return 0;

fail:
    rados_shutdown(c->cluster);
    c->cluster = NULL;
    return r;
}

void cli_disconnect(struct cli *c)
{
    if (c->io != NULL)
        rados_ioctx_destroy(c->io);
    if (c->cluster != NULL)
        rados_shutdown(c->cluster);
    c->io = NULL;
    c->cluster = NULL;
}

void cli_class_error(const struct cli *c, const char *what, const char *oid, int err)
{
    const char *name = c->name != NULL ? c->name : "client.admin";

    switch (-err) {
    case EPERM:
    case EACCES:
        cli_error(c,
                  "%s on %s: permission denied (EPERM): the key of %s may not call object "
                  "classes on pool %s. Its osd caps need 'x' or 'class-read', e.g. "
                  "`ceph auth caps %s mon 'allow r' osd 'allow rwx pool=%s'`",
                  what, oid, name, c->pool, name, c->pool);
        break;
    case EOPNOTSUPP:
        cli_error(c,
                  "%s on %s: not supported (EOPNOTSUPP): the OSD holding it has no sophon class, "
                  "or one too old for this call. Install libcls_sophon.so into the OSDs' `osd "
                  "class dir`, allow it in `osd class load list` and `osd class default list`, "
                  "and restart the OSDs",
                  what, oid);
        break;
    case ENOENT:
        cli_error(c, "%s: no object %s in pool %s (ENOENT)", what, oid, c->pool);
        break;
    case EPROTO:
        cli_error(c,
                  "%s on %s: the OSD's reply was not understood (EPROTO): the class and this "
                  "client come from different sophon versions; deploy matching versions",
                  what, oid);
        break;
    default:
        cli_error(c, "%s on %s failed: %s (%d)", what, oid, strerror(-err), err);
        break;
    }
}
