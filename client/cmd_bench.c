/*
 * cmd_bench.c - `sophon bench`: plain reads of a pool's objects against preparation in the OSDs
 * (sophon.prep), side by side in one run, with many operations in flight.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "progress.h"
#include "sophon.h"
#include "prep_call.h"
#include "sampler.h"

static const char usage[] =
    "Usage: sophon bench -p POOL [--objects N] [--prefix P] [--jobs J] [--repeat R]\n"
    "                    [--seed S] [--transform train|val] [--size N|WxH] [--format u8|f32]\n"
    "                    [--fast]\n"
    "Reads every object of the pool (or the first N named with prefix P) as stored, then has\n"
    "the OSDs prepare each one (RandomResizedCrop boxes drawn from --seed, or the validation\n"
    "transform), J operations in flight, and prints calls/s, bytes stored and received, and the\n"
    "OSDs' CPU time per call.\n\n"
    "      --objects N     at most N objects (default: all)\n"
    "      --prefix P      only objects whose name starts with P\n"
    "      --jobs J        operations in flight (default 16)\n"
    "      --repeat R      passes over the objects per mode (default 1)\n\n" CLI_PREP_HELP
    "\n" CLI_COMMON_HELP;

struct object {
    char *name;
    uint64_t size;
    uint32_t width, height;
};

struct op {
    rados_completion_t c;
    rados_read_op_t rop;
    char *buf; /* read: our buffer; prep: librados' */
    size_t len;
    size_t bytes_read;
    int prval;
    const struct object *obj;
};

struct totals {
    uint64_t calls, failed, stored, received, osd_cpu_ns;
    double secs;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct object *)a)->name, ((const struct object *)b)->name);
}

static int list_objects(struct cli *c, const char *prefix, uint64_t max, struct object **out,
                        size_t *n)
{
    rados_list_ctx_t lc;
    const char *entry;
    size_t cap = 0;
    int r = rados_nobjects_list_open(c->io, &lc);
    if (r < 0)
        return r;
    *out = NULL;
    *n = 0;
    while ((r = rados_nobjects_list_next(lc, &entry, NULL, NULL)) == 0) {
        if (prefix != NULL && strncmp(entry, prefix, strlen(prefix)) != 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            struct object *v = realloc(*out, cap * sizeof(*v));
            if (v == NULL) {
                r = -ENOMEM;
                break;
            }
            *out = v;
        }
        (*out)[*n] = (struct object){.name = strdup(entry)};
        if ((*out)[*n].name == NULL) {
            r = -ENOMEM;
            break;
        }
        (*n)++;
    }
    rados_nobjects_list_close(lc);
    if (r == -ENOENT)
        r = 0;
    if (r < 0)
        return r;
    /* Listing order is by hash: sort by name so that runs take the same objects. */
    qsort(*out, *n, sizeof(**out), by_name);
    if (max > 0 && *n > max) {
        for (size_t i = max; i < *n; i++)
            free((*out)[i].name);
        *n = max;
    }
    return 0;
}

static int start_op(struct cli *c, struct op *op, const struct object *obj, int prep,
                    const struct sophon_prep_params *p, uint16_t wire)
{
    memset(op, 0, sizeof(*op));
    op->obj = obj;
    uint8_t req[SOPHON_REQUEST_LEN];
    int r = prep ? sophon_request_encode_as(req, sizeof(req), p, wire) : 0;
    if (r < 0)
        return r;
    size_t req_len = (size_t)r;
    r = rados_aio_create_completion(NULL, NULL, NULL, &op->c);
    if (r < 0)
        return r;
    op->rop = rados_create_read_op();
    if (op->rop == NULL) {
        r = -ENOMEM;
        goto fail;
    }
    if (prep) {
        rados_read_op_exec(op->rop, "sophon", "prep", (const char *)req, req_len, &op->buf,
                           &op->len, &op->prval);
    } else {
        op->buf = malloc(obj->size > 0 ? obj->size : 1);
        if (op->buf == NULL) {
            r = -ENOMEM;
            goto fail;
        }
        rados_read_op_read(op->rop, 0, obj->size, op->buf, &op->bytes_read, &op->prval);
    }
    r = rados_aio_read_op_operate(op->rop, c->io, op->c, obj->name, 0);
    if (r == 0)
        return 0;
fail:
    if (!prep)
        free(op->buf);
    if (op->rop != NULL)
        rados_release_read_op(op->rop);
    rados_aio_release(op->c);
    return r;
}

static void finish_op(struct op *op, int prep, struct totals *t, struct progress *pr)
{
    rados_aio_wait_for_complete(op->c);
    int r = rados_aio_get_return_value(op->c);
    if (r == 0 && op->prval < 0)
        r = op->prval;
    t->calls++;
    t->stored += op->obj->size;
    if (r < 0) {
        t->failed++;
    } else if (prep) {
        struct sophon_response h;
        const uint8_t *payload;
        if (sophon_response_decode(&h, &payload, (const uint8_t *)op->buf, op->len) == 0) {
            t->received += op->len;
            t->osd_cpu_ns += h.cpu_ns;
        } else {
            t->failed++;
        }
    } else {
        t->received += op->bytes_read;
    }
    if (prep && op->buf != NULL)
        rados_buffer_free(op->buf);
    else if (!prep)
        free(op->buf);
    rados_release_read_op(op->rop);
    rados_aio_release(op->c);
    progress_add(pr, 1, op->len + op->bytes_read);
}

static int run(struct cli *c, const struct object *objs, size_t n, int prep,
               const struct cli_prep *o, uint64_t jobs, uint64_t repeat, uint16_t wire,
               struct totals *t)
{
    struct op *ops = calloc(jobs, sizeof(*ops));
    struct progress pr;
    size_t head = 0, inflight = 0;
    int r = 0;
    if (ops == NULL)
        return -ENOMEM;
    memset(t, 0, sizeof(*t));
    progress_start(&pr, prep ? "prep" : "read", n * repeat);
    for (uint64_t k = 0; k < n * repeat; k++) {
        const struct object *obj = &objs[k % n];
        struct sophon_prep_params p = o->p;
        if (inflight == jobs) {
            finish_op(&ops[head], prep, t, &pr);
            head = (head + 1) % jobs;
            inflight--;
        }
        if (prep && o->transform == SOPHON_TRANSFORM_VAL)
            r = sophon_prep_set_val(&p, obj->width, obj->height, o->resize, o->p.out_w);
        else if (prep)
            r = sophon_draw_crop(&p, o->seed, k / n, k % n, obj->width, obj->height, &o->policy);
        if (r < 0) {
            cli_error(c, "%s: no request of this transform for a %ux%u image", obj->name,
                      obj->width, obj->height);
            break;
        }
        r = start_op(c, &ops[(head + inflight) % jobs], obj, prep, &p, wire);
        if (r < 0) {
            /* The operations in flight still write into their buffers: wait for them. */
            cli_error(c, "cannot start an operation on %s: %s", obj->name, strerror(-r));
            break;
        }
        inflight++;
    }
    while (inflight > 0) {
        finish_op(&ops[head], prep, t, &pr);
        head = (head + 1) % jobs;
        inflight--;
    }
    t->secs = progress_end(&pr);
    free(ops);
    return r;
}

static void report(const char *what, const struct totals *t)
{
    uint64_t ok = t->calls - t->failed;
    char cpu[32] = "-";
    if (t->osd_cpu_ns > 0 && ok > 0)
        snprintf(cpu, sizeof(cpu), "%.2f", (double)t->osd_cpu_ns / 1e6 / (double)ok);
    printf("%-5s %8llu %9.1f %10.1f %10.1f %9.3f %9.1f %11s", what, (unsigned long long)t->calls,
           t->calls / t->secs, (double)t->stored / 1e6, (double)t->received / 1e6,
           (double)t->received / (double)(t->stored ? t->stored : 1),
           (double)t->received / 1e6 / t->secs, cpu);
    if (t->failed > 0)
        printf("  (%llu failed)", (unsigned long long)t->failed);
    putchar('\n');
}

enum { OPT_OBJECTS = CLI_OPT_FIRST_CMD, OPT_PREFIX, OPT_JOBS, OPT_REPEAT };

static const struct option longopts[] = {
    CLI_COMMON_LONGOPTS,
    CLI_PREP_LONGOPTS,
    {"objects", required_argument, NULL, OPT_OBJECTS},
    {"prefix", required_argument, NULL, OPT_PREFIX},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct bench_args {
    struct cli c;
    struct cli_prep o;
    uint64_t max, jobs, repeat;
    const char *prefix;
};

/* One option of sophon bench's own or a request option: 1 handled, 0 not one of them, -1
 * invalid (said why). */
static int bench_option(void *arg_, int opt, const char *arg)
{
    struct bench_args *a = arg_;

    switch (opt) {
    case OPT_OBJECTS:
        return cli_parse_u64(&a->c, "--objects", arg, UINT32_MAX, &a->max) < 0 ? -1 : 1;
    case OPT_PREFIX:
        a->prefix = arg;
        return 1;
    case OPT_JOBS:
        return cli_parse_range(&a->c, "--jobs", arg, 1, 1024, &a->jobs) < 0 ? -1 : 1;
    case OPT_REPEAT:
        return cli_parse_range(&a->c, "--repeat", arg, 1, 1000, &a->repeat) < 0 ? -1 : 1;
    default:
        return cli_prep_option(&a->c, &a->o, opt, arg);
    }
}

int cmd_bench(int argc, char **argv)
{
    struct bench_args a = {.c = {.prog = "sophon bench"}, .jobs = 16, .repeat = 1};
    struct cli *c = &a.c;
    const struct cli_prep *o = &a.o;
    struct object *objs = NULL;
    size_t n = 0, usable = 0, scanned = 0;
    int r, code;

    cli_prep_init(&a.o);
    if (cli_parse_options(&a.c, argc, argv, CLI_PREP_SHORTOPTS, longopts, usage, bench_option, &a,
                          &code) < 0)
        return code;
    code = 1;
    if (c->pool == NULL || optind != argc) {
        cli_error(c, "want a pool: sophon bench -p POOL");
        return 2;
    }
    if (o->have_box) {
        cli_error(c, "boxes are drawn per object from --seed; --box does not apply");
        return 2;
    }
    if (cli_connect(c) < 0)
        return 1;
    r = list_objects(c, a.prefix, a.max, &objs, &n);
    if (r < 0) {
        cli_error(c, "cannot list pool %s: %s", c->pool, strerror(-r));
        goto done;
    }
    /* Sizes and dimensions, probed in the OSDs; objects that are not JPEGs are left out. */
    for (size_t i = 0; i < n; i++, scanned = i) {
        struct sophon_probe_reply pr;
        r = sophon__remote_probe(&pr, c->io, objs[i].name);
        if (r < 0) {
            if (r == -EPERM || r == -EOPNOTSUPP) {
                cli_class_error(c, "sophon.probe", objs[i].name, r);
                goto done;
            }
            free(objs[i].name);
            continue;
        }
        objs[usable++] =
            (struct object){objs[i].name, pr.object_size, pr.info.width, pr.info.height};
    }
    scanned = n;
    n = usable;
    if (n == 0) {
        cli_error(c, "no JPEG objects in pool %s%s%s", c->pool, a.prefix ? " with a.prefix " : "",
                  a.prefix ? a.prefix : "");
        goto done;
    }
    struct totals read_t, prep_t;
    uint16_t wire;
    r = sophon__class_wire(&wire, c->io, objs[0].name);
    if (r < 0) {
        cli_class_error(c, "sophon.version", objs[0].name, r);
        goto done;
    }
    if (o->transform == SOPHON_TRANSFORM_VAL && wire < SOPHON_WIRE_V2) {
        cli_error(c,
                  "the sophon class in the OSDs speaks wire format %u, which cannot carry the "
                  "validation transform: deploy this sophon version on the OSDs",
                  (unsigned)wire);
        goto done;
    }
    if (run(c, objs, n, 0, o, a.jobs, a.repeat, wire, &read_t) < 0 ||
        run(c, objs, n, 1, o, a.jobs, a.repeat, wire, &prep_t) < 0)
        goto done;
    printf("%zu objects, %llu in flight, output %ux%u %s%s\n", n, (unsigned long long)a.jobs,
           o->p.out_w, o->p.out_h, sophon_format_name(o->p.format), o->p.fast ? " fast" : "");
    printf("%-5s %8s %9s %10s %10s %9s %9s %11s\n", "mode", "calls", "calls/s", "stored MB",
           "recv MB", "recv/stor", "recv MB/s", "OSD ms/call");
    report("read", &read_t);
    report("prep", &prep_t);
    code = read_t.failed || prep_t.failed ? 1 : 0;
done:
    /* Kept objects are packed at the front; those not probed yet are still at their place. */
    for (size_t i = 0; i < usable; i++)
        free(objs[i].name);
    for (size_t i = scanned; i < n; i++)
        free(objs[i].name);
    free(objs);
    cli_disconnect(c);
    return code;
}
