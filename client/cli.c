/*
 * cli.c - connection options, connecting and error messages shared by the subcommands.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cross_checks.h"
#include "sampler.h"
#include "selector.h"
#include "sophon.h"

void cli_error(const struct cli *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", c->prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* A connection option: 1 if opt is one, 0 if not, -1 if its value is invalid (said why). */
static int cli_common_option(struct cli *c, int opt, const char *arg)
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

/* A connection option, else a usage error (usage to stderr): 0, or -1 to exit with 2. */
static int cli_common_or_usage(struct cli *c, int opt, const char *arg, const char *usage)
{
    int r = cli_common_option(c, opt, arg);
    if (r == 0)
        fputs(usage, stderr);
    return r > 0 ? 0 : -1;
}

int cli_parse_options(struct cli *c, int argc, char **argv, const char *shortopts,
                      const struct option *longopts, const char *usage, cli_option_fn own,
                      void *arg, int *code)
{
    char all[64];
    int opt, r;

    snprintf(all, sizeof(all), "%s%s", CLI_COMMON_SHORTOPTS, shortopts);
    *code = 2;
    while ((opt = getopt_long(argc, argv, all, longopts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(usage, stdout);
            *code = 0;
            return -1;
        }
        r = own != NULL ? own(arg, opt, optarg) : 0;
        if (r == 0)
            r = cli_common_or_usage(c, opt, optarg, usage) < 0 ? -1 : 1;
        if (r < 0)
            return -1;
    }
    return 0;
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

/* Gives up on operations after CLI_OP_TIMEOUT where ceph.conf and CEPH_ARGS left option at
 * librados's default, 0: wait for good (an object in a PG that never became readable held
 * `sophon profile` until CI killed it). */
static void default_timeout(rados_t cluster, const char *option)
{
    char v[64];
    if (rados_conf_get(cluster, option, v, sizeof(v)) == 0 && strtod(v, NULL) == 0)
        rados_conf_set(cluster, option, CLI_OP_TIMEOUT);
}

int cli_connect(struct cli *c)
{
    const char *name = c->name != NULL ? c->name : "client.admin";
    int r = rados_create2(&c->cluster, "ceph", name, 0);
    if (r < 0) {
        cli_error(c, "cannot create a cluster handle for %s: %s", name, strerror(-r));
        return r;
    }
    /* Fail in seconds, not the librados default of five minutes, when no monitor answers (what
     * rados_conf_set sets, ceph.conf and CEPH_ARGS cannot change). */
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
    default_timeout(c->cluster, "rados_osd_op_timeout");
    default_timeout(c->cluster, "rados_mon_op_timeout");
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
    case ETIMEDOUT:
        cli_error(c,
                  "%s on %s: no answer within the operation timeout (ETIMEDOUT, %s s unless "
                  "rados_osd_op_timeout says otherwise): is its OSD up, and its placement group "
                  "active (`ceph health detail`, `ceph osd map %s %s`)?",
                  what, oid, CLI_OP_TIMEOUT, c->pool, oid);
        break;
    default:
        cli_error(c, "%s on %s failed: %s (%d)", what, oid, strerror(-err), err);
        break;
    }
}

int cli_parse_range(const struct cli *c, const char *what, const char *s, uint64_t min,
                    uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v = 0;
    if (s != NULL && *s >= '0' && *s <= '9') {
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == 0 && *end == '\0' && v >= min && v <= max) {
            *out = v;
            return 0;
        }
    }
    cli_error(c, "%s: '%s' is not a number from %llu to %llu", what, s != NULL ? s : "",
              (unsigned long long)min, (unsigned long long)max);
    return -1;
}

int cli_parse_u64(const struct cli *c, const char *what, const char *s, uint64_t max, uint64_t *out)
{
    return cli_parse_range(c, what, s, 0, max, out);
}

/* Parses "A<sep>B<sep>..." into n numbers of at most max each. */
static int parse_list(const struct cli *c, const char *what, const char *arg, char sep, int n,
                      uint64_t max, uint64_t *out)
{
    char buf[128];
    if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf)) {
        cli_error(c, "%s: '%s' is too long", what, arg);
        return -1;
    }
    char *p = buf;
    for (int i = 0; i < n; i++) {
        char *next = strchr(p, sep);
        if ((i < n - 1) != (next != NULL)) {
            cli_error(c, "%s wants %d numbers separated by '%c', not '%s'", what, n, sep, arg);
            return -1;
        }
        if (next != NULL)
            *next = '\0';
        if (cli_parse_u64(c, what, p, max, &out[i]) < 0)
            return -1;
        p = next != NULL ? next + 1 : p;
    }
    return 0;
}

int cli_parse_format(const struct cli *c, const char *arg)
{
    int f = sophon_format_from_name(arg);

    if (f < 0)
        cli_error(c, "--format wants u8 or f32, not '%s'", arg);
    return f;
}

int cli_parse_transform(const struct cli *c, const char *arg)
{
    if (strcmp(arg, "train") == 0)
        return SOPHON_TRANSFORM_TRAIN;
    if (strcmp(arg, "val") == 0)
        return SOPHON_TRANSFORM_VAL;
    cli_error(c, "--transform wants train or val, not '%s'", arg);
    return -1;
}

/* A finite decimal number, or with fractions set also a fraction A/B of two: 0 with *end past
 * it, or -1. */
static int parse_one(const char *s, int fractions, double *out, char **end)
{
    errno = 0;
    double v = strtod(s, end);
    if (*end == s || errno != 0)
        return -1;
    if (fractions && **end == '/') {
        const char *t = *end + 1;
        double d = strtod(t, end);
        if (*end == t || errno != 0 || d == 0)
            return -1;
        v /= d;
    }
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* n comma-separated numbers into out: 0, or -1. */
static int parse_numbers(const char *arg, int n, int fractions, double *out)
{
    const char *p = arg;
    for (int i = 0; i < n; i++) {
        char *end;
        if (parse_one(p, fractions, &out[i], &end) < 0 || *end != (i < n - 1 ? ',' : '\0'))
            return -1;
        p = end + 1;
    }
    return 0;
}

int cli_parse_range_pair(const struct cli *c, const char *what, const char *arg, double out[2])
{
    double v[2];
    if (parse_numbers(arg, 2, 1, v) == 0 && v[0] > 0 && v[0] <= v[1]) {
        out[0] = v[0];
        out[1] = v[1];
        return 0;
    }
    cli_error(c, "%s wants A,B with 0 < A <= B (numbers or fractions like 3/4), not '%s'", what,
              arg);
    return -1;
}

int cli_parse_channels(const struct cli *c, const char *what, const char *arg, int nonzero,
                       float out[3])
{
    double v[3];
    if (parse_numbers(arg, 3, 0, v) == 0) {
        int ok = 1;
        for (int i = 0; i < 3; i++) {
            out[i] = (float)v[i];
            ok = ok && isfinite(out[i]) && (!nonzero || out[i] != 0.0f);
        }
        if (ok)
            return 0;
    }
    cli_error(c, "%s wants three numbers a,b,c (one per channel R, G, B%s), not '%s'", what,
              nonzero ? ", none 0" : "", arg);
    return -1;
}

void cli_prep_init(struct cli_prep *o)
{
    static const struct sophon_prep_params defaults = SOPHON_PREP_PARAMS_INIT;
    static const struct sophon_crop_policy policy = SOPHON_CROP_POLICY_INIT;
    memset(o, 0, sizeof(*o));
    o->p = defaults;
    o->transform = SOPHON_TRANSFORM_TRAIN;
    o->resize = 256;
    o->policy = policy;
}

int cli_prep_option(const struct cli *c, struct cli_prep *o, int opt, const char *arg)
{
    uint64_t v[4];

    switch (opt) {
    case CLI_OPT_BOX:
        if (parse_list(c, "--box", arg, ',', 4, UINT32_MAX, v) < 0)
            return -1;
        if (v[2] == 0 || v[3] == 0) {
            cli_error(c, "--box %s is empty: W and H must be at least 1", arg);
            return -1;
        }
        o->p.box_x = (uint32_t)v[0];
        o->p.box_y = (uint32_t)v[1];
        o->p.box_w = (uint32_t)v[2];
        o->p.box_h = (uint32_t)v[3];
        o->have_box = 1;
        return 1;
    case CLI_OPT_SEED:
        o->have_seed = 1;
        return cli_parse_u64(c, "--seed", arg, UINT64_MAX, &o->seed) < 0 ? -1 : 1;
    case CLI_OPT_EPOCH:
        return cli_parse_u64(c, "--epoch", arg, UINT64_MAX, &o->epoch) < 0 ? -1 : 1;
    case CLI_OPT_INDEX:
        return cli_parse_u64(c, "--index", arg, UINT64_MAX, &o->index) < 0 ? -1 : 1;
    case CLI_OPT_SIZE:
        if (strchr(arg, 'x') != NULL) {
            if (parse_list(c, "--size", arg, 'x', 2, SOPHON_MAX_SIDE, v) < 0)
                return -1;
        } else {
            if (cli_parse_u64(c, "--size", arg, SOPHON_MAX_SIDE, &v[0]) < 0)
                return -1;
            v[1] = v[0];
        }
        if (v[0] == 0 || v[1] == 0) {
            cli_error(c, "--size %s: sides must be from 1 to %u", arg, SOPHON_MAX_SIDE);
            return -1;
        }
        o->p.out_w = (uint32_t)v[0];
        o->p.out_h = (uint32_t)v[1];
        o->have_size = 1;
        return 1;
    case CLI_OPT_FLIP:
        o->p.flip = 1;
        return 1;
    case CLI_OPT_FORMAT: {
        int f = cli_parse_format(c, arg);
        if (f < 0)
            return -1;
        o->p.format = (uint8_t)f;
        return 1;
    }
    case CLI_OPT_FAST:
        o->p.fast = 1;
        return 1;
    case CLI_OPT_STAGE:
        if (strcmp(arg, "pixels") == 0) {
            o->p.stage = SOPHON_WIRE_PIXELS;
            o->p.fallback = SOPHON_FALLBACK_NONE;
        } else if (strcmp(arg, "crop") == 0 || strcmp(arg, "crop,pixels") == 0) {
            o->p.stage = SOPHON_WIRE_CROP;
            o->p.fallback = arg[4] == ',' ? SOPHON_FALLBACK_PIXELS : SOPHON_FALLBACK_NONE;
        } else {
            cli_error(c, "--stage %s: want pixels, crop or crop,pixels", arg);
            return -1;
        }
        return 1;
    case CLI_OPT_CROP_MAX:
        if (cli_parse_range(c, "--crop-max", arg, 1, UINT32_MAX, &v[0]) < 0)
            return -1;
        o->p.crop_max_bytes = (uint32_t)v[0];
        return 1;
    case CLI_OPT_TRANSFORM: {
        int t = cli_parse_transform(c, arg);
        if (t < 0)
            return -1;
        o->transform = t;
        return 1;
    }
    case CLI_OPT_RESIZE:
        if (cli_parse_range(c, "--resize", arg, 1, SOPHON_MAX_RESIZE_SIDE, &v[0]) < 0)
            return -1;
        o->resize = (uint32_t)v[0];
        return 1;
    case CLI_OPT_SCALE: {
        double r[2];
        if (cli_parse_range_pair(c, "--scale", arg, r) < 0)
            return -1;
        o->policy.scale_min = r[0];
        o->policy.scale_max = r[1];
        return 1;
    }
    case CLI_OPT_RATIO: {
        double r[2];
        if (cli_parse_range_pair(c, "--ratio", arg, r) < 0)
            return -1;
        o->policy.ratio_min = r[0];
        o->policy.ratio_max = r[1];
        return 1;
    }
    case CLI_OPT_MEAN:
        return cli_parse_channels(c, "--mean", arg, 0, o->p.mean) < 0 ? -1 : 1;
    case CLI_OPT_STD:
        return cli_parse_channels(c, "--std", arg, 1, o->p.std) < 0 ? -1 : 1;
    case 'o':
        o->output = arg;
        return 1;
    default:
        return 0;
    }
}

int cli_prep_needs_size(const struct cli_prep *o)
{
    return o->have_seed || o->transform == SOPHON_TRANSFORM_VAL;
}

/* val: Resize(resize) + CenterCrop(size) of the whole image, nothing else. */
static int finish_val(const struct cli *c, struct cli_prep *o, uint32_t width, uint32_t height)
{
    if (o->have_box || o->have_seed || o->p.flip) {
        cli_error(c, "--transform val takes the whole image and does not flip: no --box, --seed "
                     "or --flip");
        return -1;
    }
    if (o->p.out_w != o->p.out_h) {
        cli_error(c, "--transform val crops a square: --size N, not %ux%u", o->p.out_w, o->p.out_h);
        return -1;
    }
    if (o->resize < o->p.out_w) {
        cli_error(c,
                  "--resize %u is smaller than --size %u: torchvision would pad the centre crop "
                  "with black, which sophon does not do",
                  o->resize, o->p.out_w);
        return -1;
    }
    if (sophon_prep_set_val(&o->p, width, height, o->resize, o->p.out_w) < 0) {
        cli_error(c,
                  "no Resize(%u) + CenterCrop(%u) of a %ux%u image: a resized side would be "
                  "over %u",
                  o->resize, o->p.out_w, width, height, SOPHON_MAX_RESIZE_SIDE);
        return -1;
    }
    return 0;
}

int cli_prep_finish(const struct cli *c, struct cli_prep *o, uint32_t width, uint32_t height)
{
    if (o->p.crop_max_bytes != 0 && o->p.stage != SOPHON_WIRE_CROP) {
        cli_error(c, "--crop-max is for --stage crop or crop,pixels");
        return -1;
    }
    if (o->transform == SOPHON_TRANSFORM_VAL)
        return finish_val(c, o, width, height);
    if (o->have_box == o->have_seed) {
        cli_error(c, "give either --box X,Y,W,H or --seed S (or --transform val)");
        return -1;
    }
    if (o->have_seed) {
        uint8_t flip = o->p.flip;
        if (sophon_draw_crop(&o->p, o->seed, o->epoch, o->index, width, height, &o->policy) < 0) {
            cli_error(c, "cannot draw a crop for a %ux%u image", width, height);
            return -1;
        }
        o->p.flip |= flip;
    }
    return 0;
}

int cli_read_file(const char *path, uint8_t **buf, size_t *len, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -errno;
    int r = 0;
    uint8_t *p = NULL;
    long size;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        r = -EIO;
        goto done;
    }
    if ((unsigned long)size > max) {
        r = -EFBIG;
        goto done;
    }
    p = malloc(size > 0 ? (size_t)size : 1);
    if (p == NULL) {
        r = -ENOMEM;
        goto done;
    }
    if (fread(p, 1, (size_t)size, f) != (size_t)size) {
        r = -EIO;
        free(p);
        goto done;
    }
    *buf = p;
    *len = (size_t)size;
done:
    fclose(f);
    return r;
}

int cli_close_written(FILE *f)
{
    int lost = ferror(f);

    if (fclose(f) != 0)
        lost = 1;
    return lost ? -EIO : 0;
}

/* "500Mbit", "1.5Gbit", "100MB", "1e9" (bytes/s); an optional "/s" or "ps". */
int cli_parse_rate(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v > 0) || !isfinite(v))
        return -1;
    static const struct {
        const char *unit;
        double factor;
    } units[] = {{"", 1},           {"B", 1},          {"KB", 1e3},       {"MB", 1e6},
                 {"GB", 1e9},       {"bit", 1.0 / 8},  {"Kbit", 1e3 / 8}, {"kbit", 1e3 / 8},
                 {"Mbit", 1e6 / 8}, {"mbit", 1e6 / 8}, {"Gbit", 1e9 / 8}, {"gbit", 1e9 / 8},
                 {"Tbit", 1e12 / 8}};
    char unit[16];
    size_t n = strcspn(end, "/p");
    if (n >= sizeof(unit) ||
        (end[n] != '\0' && strcmp(end + n, "/s") != 0 && strcmp(end + n, "ps") != 0))
        return -1;
    memcpy(unit, end, n);
    unit[n] = '\0';
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(unit, units[i].unit) == 0) {
            *out = v * units[i].factor;
            return 0;
        }
    }
    return -1;
}

int cli_parse_net(const struct cli *c, const char *s, double *out)
{
    if (cli_parse_rate(s, out) == 0)
        return 0;
    cli_error(c, "--net wants a rate such as 500Mbit, 10Gbit or 100MB, not '%s'", s);
    return -1;
}

int cli_parse_number(const struct cli *c, const char *what, const char *s, int allow_zero,
                     double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v) || v < 0 || (v == 0 && !allow_zero) ||
        (errno != 0 && v != 0)) {
        cli_error(c, "%s wants a number %s 0, not '%s'", what, allow_zero ? ">=" : ">", s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_policy(const struct cli *c, const char *s)
{
    int p = sophon_policy_from_name(s);
    if (p < 0)
        cli_error(c, "--policy wants none, all, resize, sophon, selective or oracle, not '%s'", s);
    return p;
}
