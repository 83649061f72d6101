/*
 * cmd_profile.c - `sophon profile`: one record per object of a dataset, made in the OSDs (probe:
 * no object bytes cross the network), CPU costs from the cost model and a calibration of the
 * speeds at which the OSDs and this client run it, on a sample, stored in the dataset's index.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cpus.h"
#include "dataset.h"
#include "osd_cpu.h"
#include "progress.h"
#include "prep_call.h"
#include "sampler.h"
#include "sophon_common.h"

static const char usage[] =
    "Usage: sophon profile -p POOL [--dataset NAME] [--list FILE] [--sample K] [--jobs J]\n"
    "                      [--export FILE.csv] [--import FILE.csv]\n"
    "Makes a record for every JPEG object of the dataset: its header facts, read by the OSD\n"
    "holding it (sophon.probe), and the bytes and CPU costs of each stage the pipeline can stop\n"
    "at. CPU costs come from the cost model; the OSDs' speed is calibrated against this client's\n"
    "by preparing a sample of objects in both places, and each object's OSD CPU is measured\n"
    "(one preparation in its OSD). Records go to the dataset's index in the\n"
    "cluster, where every client finds them. A second run profiles only new or changed objects.\n\n"
    "      --dataset NAME  dataset (default: the pool's name). Its objects are those `sophon put\n"
    "                      --dataset` registered, else those of --list, else the whole pool\n"
    "      --list FILE     object names, one a line\n"
    "      --sample K      objects prepared in the OSDs and here to calibrate (default 64, 0: no)\n"
    "      --jobs J        operations in flight (default 32)\n"
    "      --export FILE   write the dataset's records as CSV (after profiling, if -p is given)\n"
    "      --import FILE   store the records of a CSV file into the index instead of "
    "profiling\n"
    "      --no-measure    records keep the cost model's OSD CPU (default: each object is\n"
    "                      prepared once in its OSD and its records carry what it "
    "took)\n\n" CLI_COMMON_HELP;

struct item {
    char *name;
    uint64_t size;
    int64_t mtime;
    int todo;   /* new or changed since the last profile */
    int result; /* of stat or probe */
    struct sophon_probe_reply probe;
    int measure;      /* to be prepared in its OSD (measure_costs) */
    double osd_s;     /* the least OSD CPU seconds of its measured preparations; 0: none */
    double osd_ratio; /* its records' OSD CPU against the model's (measure_costs); 0: the model's */
    double crop_s;    /* the same for the crop stage of that box */
    double crop_ratio; /* its crop record's against the model's; 0: osd_ratio's */
};

static int by_item_name(const void *a, const void *b)
{
    return strcmp(((const struct item *)a)->name, ((const struct item *)b)->name);
}

static int by_stamp_name(const void *key, const void *elem)
{
    return strcmp(key, ((const struct sophon_index_stamp *)elem)->name);
}

/* An item's record as its probe describes it, without costs (sophon_cost_model_fill adds them). */
static struct sophon_record probed_record(const struct item *it)
{
    return (struct sophon_record){.name = it->name,
                                  .stored_bytes = it->size,
                                  .width = it->probe.info.width,
                                  .height = it->probe.info.height,
                                  .components = it->probe.info.components,
                                  .subsampling = it->probe.info.subsampling,
                                  .progressive = it->probe.info.progressive};
}

/* The dataset's objects: registered members, else the list file, else the pool. */
static int gather(struct cli *c, const char *dataset, const char *list, struct item **out,
                  size_t *n)
{
    struct sophon_index_member *members = NULL;
    size_t nmembers = 0, cap = 0;
    int r = sophon__index_members(c->io, dataset, &members, &nmembers);
    if (r < 0) {
        cli_error(c, "cannot read the index of dataset %s: %s", dataset, strerror(-r));
        return r;
    }
    *out = NULL;
    *n = 0;
    if (nmembers > 0) {
        *out = calloc(nmembers, sizeof(**out));
        if (*out == NULL)
            r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < nmembers; i++) {
            (*out)[i].name = members[i].name;
            members[i].name = NULL;
        }
        *n = *out != NULL ? nmembers : 0;
        sophon__index_members_free(members, nmembers);
        return r;
    }
    sophon__index_members_free(members, nmembers);
    if (list != NULL) {
        FILE *f = fopen(list, "r");
        char line[4096];
        if (f == NULL) {
            r = -errno; /* cli_error may change errno */
            cli_error(c, "cannot read %s: %s", list, strerror(-r));
            return r;
        }
        while (fgets(line, sizeof(line), f) != NULL) {
            line[strcspn(line, "\r\n")] = '\0';
            if (line[0] == '\0')
                continue;
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                struct item *v = realloc(*out, cap * sizeof(*v));
                if (v == NULL) {
                    fclose(f);
                    return -ENOMEM;
                }
                *out = v;
            }
            (*out)[*n] = (struct item){.name = strdup(line)};
            if ((*out)[*n].name == NULL) {
                fclose(f);
                return -ENOMEM;
            }
            (*n)++;
        }
        r = ferror(f) ? -EIO : 0;
        fclose(f);
        return r;
    }
    rados_list_ctx_t lc;
    const char *entry;
    if ((r = rados_nobjects_list_open(c->io, &lc)) < 0)
        return r;
    while ((r = rados_nobjects_list_next(lc, &entry, NULL, NULL)) == 0) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            struct item *v = realloc(*out, cap * sizeof(*v));
            if (v == NULL) {
                r = -ENOMEM;
                break;
            }
            *out = v;
        }
        (*out)[*n] = (struct item){.name = strdup(entry)};
        if ((*out)[*n].name == NULL) {
            r = -ENOMEM;
            break;
        }
        (*n)++;
    }
    rados_nobjects_list_close(lc);
    return r == -ENOENT ? 0 : r;
}

/* What run_ops does to each item: stat it (every item), stat and probe it (those marked todo),
 * or prepare it in its OSD (those marked measure: the box of measure_params, its OSD CPU into
 * the item's osd_s, the least of its measurements; the crop stage of that box into crop_s). */
enum op_kind { OP_STAT, OP_PROBE, OP_MEASURE, OP_MEASURE_CROP };

struct pending {
    rados_completion_t c;
    rados_read_op_t op;
    struct item *it;
    uint64_t size;
    time_t mtime;
    int stat_rval, exec_rval;
    char *out;
    size_t out_len;
    uint8_t req[SOPHON_REQUEST_LEN]; /* OP_MEASURE's request, alive until it completes */
};

/* p asking for the crop stage of its box, as the loader does (the crop, or the u8 pixels where
 * they are smaller or the crop is not exact). */
static void ask_crop(struct sophon_prep_params *p)
{
    p->stage = SOPHON_WIRE_CROP;
    p->fallback = SOPHON_FALLBACK_PIXELS;
}

/* The cost model's OSD CPU for rec's preparation of p's box (its share and depth), model
 * seconds. */
static double box_model_s(const struct sophon_record *rec, const struct sophon_prep_params *p)
{
    double area = (double)rec->width * rec->height;
    return sophon_cost_model_box_at_s(rec, (double)p->box_w * p->box_h / area,
                                      (double)(p->box_y + p->box_h) / rec->height, NULL);
}

/* The preparation measure_costs has the OSDs make of an object: a box of the cost model's mean
 * share of the image, of its shape, in its centre (RandomResizedCrop's boxes lie anywhere; the
 * rows down to a box's last are decoded, the centre's is the mean), resized to 224x224 u8. */
static struct sophon_prep_params measure_params(const struct item *it, enum op_kind kind)
{
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    if (kind == OP_MEASURE_CROP)
        ask_crop(&p);
    uint32_t w = it->probe.info.width, h = it->probe.info.height;
    double side = sqrt(sophon_cost_model_default.box_share);
    p.box_w = w > 1 ? (uint32_t)fmax(1.0, round(w * side)) : 1;
    p.box_h = h > 1 ? (uint32_t)fmax(1.0, round(h * side)) : 1;
    p.box_x = (w - p.box_w) / 2;
    p.box_y = (h - p.box_h) / 2;
    return p;
}

static void pending_finish(struct pending *p, enum op_kind kind, struct progress *pr)
{
    rados_aio_wait_for_complete(p->c);
    int r = rados_aio_get_return_value(p->c);
    if (kind == OP_MEASURE || kind == OP_MEASURE_CROP) {
        struct sophon_response h;
        const uint8_t *payload;
        double *least = kind == OP_MEASURE ? &p->it->osd_s : &p->it->crop_s;
        if (r == 0 && p->exec_rval == 0 &&
            sophon_response_decode(&h, &payload, (const uint8_t *)p->out, p->out_len) == 0 &&
            h.cpu_ns > 0) {
            double s = (double)h.cpu_ns / 1e9;
            *least = *least > 0 ? fmin(*least, s) : s;
        }
    } else {
        if (r == 0 && p->stat_rval < 0)
            r = p->stat_rval;
        if (r == 0 && kind == OP_PROBE && p->exec_rval < 0)
            r = p->exec_rval;
        if (r == 0) {
            p->it->size = p->size;
            p->it->mtime = p->mtime;
            if (kind == OP_PROBE &&
                sophon_probe_decode(&p->it->probe, (const uint8_t *)p->out, p->out_len) < 0)
                r = -EPROTO;
        }
        p->it->result = r;
    }
    if (p->out != NULL)
        rados_buffer_free(p->out);
    rados_release_read_op(p->op);
    rados_aio_release(p->c);
    progress_add(pr, 1, 0);
}

/* Whether run_ops does `kind` to item it. */
static int op_wanted(const struct item *it, enum op_kind kind)
{
    return kind == OP_STAT || (kind == OP_PROBE && it->todo) ||
           ((kind == OP_MEASURE || kind == OP_MEASURE_CROP) && it->measure);
}

/* Runs `kind` on the items it applies to, jobs at a time, with a progress bar; wire is the
 * class's wire version for OP_MEASURE's requests. Returns 0 or -ENOMEM (the items' own errors
 * go into them). */
static int run_ops(struct cli *c, struct item *items, size_t n, enum op_kind kind, uint16_t wire,
                   uint64_t jobs, const char *what)
{
    struct pending *ring = calloc(jobs, sizeof(*ring));
    struct progress pr;
    size_t head = 0, inflight = 0, total = 0;
    if (ring == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        total += op_wanted(&items[i], kind);
    progress_start(&pr, what, total);
    for (size_t i = 0; i < n; i++) {
        if (!op_wanted(&items[i], kind))
            continue;
        if (inflight == jobs) {
            pending_finish(&ring[head], kind, &pr);
            head = (head + 1) % jobs;
            inflight--;
        }
        struct pending *p = &ring[(head + inflight) % jobs];
        memset(p, 0, sizeof(*p));
        p->it = &items[i];
        int req_len = 0;
        int measuring = kind == OP_MEASURE || kind == OP_MEASURE_CROP;
        if (measuring) {
            struct sophon_prep_params q = measure_params(&items[i], kind);
            if ((req_len = sophon_request_encode_as(p->req, sizeof(p->req), &q, wire)) < 0)
                continue; /* left unmeasured */
        }
        int r = rados_aio_create_completion(NULL, NULL, NULL, &p->c);
        if (r < 0) {
            if (!measuring)
                items[i].result = r;
            continue;
        }
        p->op = rados_create_read_op();
        if (p->op == NULL) {
            rados_aio_release(p->c);
            if (!measuring)
                items[i].result = -ENOMEM;
            continue;
        }
        if (measuring) {
            rados_read_op_exec(p->op, "sophon", "prep", (const char *)p->req, (size_t)req_len,
                               &p->out, &p->out_len, &p->exec_rval);
        } else {
            rados_read_op_stat(p->op, &p->size, &p->mtime, &p->stat_rval);
            if (kind == OP_PROBE)
                rados_read_op_exec(p->op, "sophon", "probe", NULL, 0, &p->out, &p->out_len,
                                   &p->exec_rval);
        }
        r = rados_aio_read_op_operate(p->op, c->io, p->c, items[i].name, 0);
        if (r < 0) {
            rados_release_read_op(p->op);
            rados_aio_release(p->c);
            if (!measuring)
                items[i].result = r;
            continue;
        }
        inflight++;
    }
    while (inflight > 0) {
        pending_finish(&ring[head], kind, &pr);
        head = (head + 1) % jobs;
        inflight--;
    }
    progress_end(&pr);
    free(ring);
    return 0;
}

/* The speeds at which the OSDs and this client run what the cost model counts (model seconds per
 * second measured), measured on the same requests; both 0 where nothing could be measured. */
struct calibration {
    double storage_speed, client_speed;
    double osd_op_s; /* the OSDs' CPU per operation beyond the preparations; -1: not measured */
    double client_byte_s; /* this client's (librados's messenger) per byte; -1: not measured */
    double crop_speed;    /* an OSD core's for the crop stage's figures; 0: not measured */
    double crop_ratio;    /* the crop's OSD CPU over the u8 pipeline's on the same boxes */
    size_t measured, cropped;
    size_t passes;               /* passes over the measured objects */
    double client_lo, client_hi; /* the passes' least and greatest client speeds */
};

/* Passes over the calibration's objects; the speeds are the median pass's. */
#define CALIBRATION_PASSES 3

/* One preparation of name in the OSD: the CPU seconds its response reports into *osd_s. Returns 0
 * or a negative errno (said). */
static int osd_prep(struct cli *c, const char *name, const struct sophon_prep_params *p,
                    uint16_t wire, double *osd_s)
{
    char *resp;
    size_t resp_len;
    struct sophon_response h;
    const uint8_t *payload;
    int r = sophon__remote_prep(&resp, &resp_len, c->io, name, p, wire);
    if (r < 0) {
        fprintf(stderr, "sophon profile: calibration: preparing %s in the OSD%s failed: %s\n", name,
                p->stage == SOPHON_WIRE_CROP ? " (crop stage)" : "", strerror(-r));
        return r;
    }
    /* sophon__remote_prep has decoded it once: this cannot fail. */
    r = sophon_response_decode(&h, &payload, (const uint8_t *)resp, resp_len);
    rados_buffer_free(resp);
    if (r < 0)
        return r;
    *osd_s = (double)h.cpu_ns / 1e9;
    return 0;
}

/* One object of size bytes of the calibration prepared in the OSD and here (one read of it, as the
 * loader reads): its CPU seconds in each into *osd_s and *local_s. *wire: the class's wire
 * version, asked on first use. Returns 0 or a negative errno (said for the OSD's). */
static int calibrate_one(struct cli *c, const char *name, uint64_t size,
                         const struct sophon_prep_params *p, uint16_t *wire, double *osd_s,
                         double *local_s)
{
    int r = *wire != 0 ? 0 : sophon__class_wire(wire, c->io, name);
    if (r < 0) {
        fprintf(stderr, "sophon profile: calibration: preparing %s in the OSD failed: %s\n", name,
                strerror(-r));
        return r;
    }
    if ((r = osd_prep(c, name, p, *wire, osd_s)) < 0)
        return r;
    uint8_t *jpeg, *out;
    size_t len, out_len;
    char err[256];
    if (size > SOPHON_MAX_OBJECT_BYTES)
        return -EFBIG;
    if ((r = sophon__read_object_sized(&jpeg, &len, c->io, name, size)) < 0)
        return r;
    uint64_t t0 = sophon__thread_cpu_ns();
    r = sophon__local_prep(&out, &out_len, jpeg, len, p, err, sizeof(err));
    *local_s = (double)(sophon__thread_cpu_ns() - t0) / 1e9;
    free(jpeg);
    if (r == 0)
        free(out);
    return r;
}

/* The crop stage of the same box in the OSD, as the loader asks for it (the crop, or the u8
 * pixels where they are smaller or the crop is not exact): its OSD CPU seconds into *osd_s.
 * Returns 0, -EOPNOTSUPP where the class makes no crops (wire format 3), or a negative errno. */
static int calibrate_crop(struct cli *c, const char *name, const struct sophon_prep_params *p,
                          uint16_t wire, double *osd_s)
{
    if (wire < SOPHON_WIRE_V3)
        return -EOPNOTSUPP;
    struct sophon_prep_params q = *p;
    ask_crop(&q);
    return osd_prep(c, name, &q, wire, osd_s);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Plain reads in flight at once, and at most this many bytes of them, while read_op_cost
 * measures. */
#define OP_READS_AT_ONCE 16
#define OP_READ_BYTES    (64u << 20)

struct op_read {
    rados_completion_t c;
    char *buf;
};

/*
 * The OSDs' CPU per operation beyond the preparations, what the plans count until a loader has
 * measured its own: the OSD processes holding the calibration's objects asked for their CPU
 * (osd_cpu.h) around one plain read of each, OP_READS_AT_ONCE in flight as the loader keeps
 * them. One at a time an operation costs more (the threads wake for each): around the
 * calibration's passes, a preparation and a read an object, it came out 0.59 ms on the OI-like
 * objects where the loaders' epochs measured 0.31-0.44 ms. Seconds, or -1 where the OSDs did not
 * answer (a class before 0.3) or nothing was read. And this client's over the same reads, its
 * librados messenger's threads' CPU per byte read, into *client_byte_s (-1 where not
 * measured).
 */
static double read_op_cost(struct cli *c, const struct item *items, const size_t *pick, size_t done,
                           double *client_byte_s)
{
    struct sophon__osds osds;
    struct op_read ops[OP_READS_AT_ONCE];
    const char *oids[SOPHON__OSDS_ASK_AT_ONCE];
    size_t k = 0, reads = 0, read_bytes = 0;
    uint64_t cpu_ns, msgr0, msgr1;
    double span;
    *client_byte_s = -1;
    for (size_t j = 0; j < done && k < SOPHON__OSDS_ASK_AT_ONCE; j++)
        oids[k++] = items[pick[j]].name;
    /* Finding them starts the interval. */
    if (sophon__osds_find(&osds, c->io, oids, k) <= 0)
        return -1;
    int msgr = sophon__threads_cpu_ns(SOPHON__MSGR_THREADS, &msgr0);
    for (size_t j = 0; j < done;) {
        size_t m = 0, bytes = 0;
        for (; j < done && m < OP_READS_AT_ONCE && (m == 0 || bytes < OP_READ_BYTES); j++) {
            const struct item *it = &items[pick[j]];
            struct op_read *o = &ops[m];
            o->buf = malloc(it->size > 0 ? it->size : 1);
            if (o->buf == NULL)
                continue;
            if (rados_aio_create_completion(NULL, NULL, NULL, &o->c) < 0) {
                free(o->buf);
                continue;
            }
            if (rados_aio_read(c->io, it->name, o->c, o->buf, it->size, 0) < 0) {
                rados_aio_release(o->c);
                free(o->buf);
                continue;
            }
            bytes += it->size;
            m++;
        }
        for (size_t i = 0; i < m; i++) {
            rados_aio_wait_for_complete(ops[i].c);
            int got = rados_aio_get_return_value(ops[i].c);
            reads += got >= 0;
            read_bytes += got > 0 ? (size_t)got : 0;
            rados_aio_release(ops[i].c);
            free(ops[i].buf);
        }
    }
    if (msgr == 0 && sophon__threads_cpu_ns(SOPHON__MSGR_THREADS, &msgr1) == 0 && read_bytes > 0 &&
        msgr1 > msgr0)
        *client_byte_s = (double)(msgr1 - msgr0) / 1e9 / (double)read_bytes;
    if (sophon__osds_sample(&osds, c->io, &cpu_ns, &span) < 0)
        return -1;
    return sophon__osd_op_estimate((double)cpu_ns / 1e9, 0, reads, 1);
}

/*
 * The same requests (RandomResizedCrop boxes) on a sample of objects, prepared in the OSD (its CPU
 * time comes back in the response) and here (this thread's CPU time), against the cost model's
 * figure for each box, as the loader counts its samples'. The planner divides the records' costs
 * (the model's) by these speeds, as the loader does with the speeds it measures over its epochs:
 * the model's error on these images (small ones cost more than it counts) goes into them, not
 * into the plans. This machine's CPU time for the same work varies by a fifth from one minute to
 * the next, and a few large photos carry most of a sample's: one pass over the sample gave speeds
 * from 0.51 to 0.80 on the same 64 objects and boxes. CALIBRATION_PASSES passes, one after the
 * other, and the median pass's speed on each side.
 */
static struct calibration calibrate(struct cli *c, const struct item *items, size_t n,
                                    uint64_t sample)
{
    double osd[CALIBRATION_PASSES] = {0}, local[CALIBRATION_PASSES] = {0}, model = 0;
    double crop[CALIBRATION_PASSES] = {0}, crop_model = 0;
    double sspeed[CALIBRATION_PASSES], cspeed[CALIBRATION_PASSES], xspeed[CALIBRATION_PASSES];
    size_t done = 0, cropped = 0, step = n / (sample ? sample : 1);
    size_t *pick = malloc((n ? n : 1) * sizeof(*pick));
    struct sophon_prep_params *params = malloc((n ? n : 1) * sizeof(*params));
    /* Per object picked: whether its crop was measured in the first pass (the later ones
     * measure the same). */
    unsigned char *has_crop = calloc(n ? n : 1, 1);
    int crop_ok = 1;
    uint16_t wire = 0;
    struct calibration k = {.osd_op_s = -1, .client_byte_s = -1};
    if (pick == NULL || params == NULL || has_crop == NULL)
        goto out;
    if (step == 0)
        step = 1;
    /* The first pass picks the objects: those it could prepare in both places. */
    for (size_t i = 0; i < n && done < sample; i += step) {
        const struct item *it = &items[i];
        /* Only objects probed in this run have their header facts at hand. */
        if (!it->todo || it->result < 0)
            continue;
        struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
        sophon_draw_crop(&p, 0x50f0, 0, i, it->probe.info.width, it->probe.info.height, NULL);
        double osd_s, local_s;
        if (calibrate_one(c, it->name, it->size, &p, &wire, &osd_s, &local_s) < 0)
            continue;
        struct sophon_record rec = probed_record(it);
        osd[0] += osd_s;
        local[0] += local_s;
        /* The box's figure, not the expectation over all boxes: the loader's speeds are its
         * samples' boxes' figures over their CPU. */
        double box = box_model_s(&rec, &p);
        model += box;
        /* And the crop stage's: its records' figure is SOPHON_SEL_CROP_OSD of the decode. */
        if (calibrate_crop(c, it->name, &p, wire, &osd_s) == 0) {
            crop[0] += osd_s;
            crop_model += SOPHON_SEL_CROP_OSD * box;
            has_crop[done] = 1;
            cropped++;
        }
        params[done] = p;
        pick[done++] = i;
    }
    if (done == 0 || model <= 0)
        goto out;
    size_t passes = 1;
    for (; passes < CALIBRATION_PASSES; passes++) {
        size_t j = 0;
        for (; j < done; j++) {
            double osd_s, local_s;
            const struct item *it = &items[pick[j]];
            if (calibrate_one(c, it->name, it->size, &params[j], &wire, &osd_s, &local_s) < 0)
                break;
            osd[passes] += osd_s;
            local[passes] += local_s;
            if (!has_crop[j] || !crop_ok)
                continue;
            /* A crop that failed now, having answered before, leaves the crop unmeasured. */
            crop_ok = calibrate_crop(c, it->name, &params[j], wire, &osd_s) == 0;
            crop[passes] += osd_s;
        }
        if (j < done) /* an object gone meanwhile: the passes complete so far */
            break;
    }
    k.osd_op_s = read_op_cost(c, items, pick, done, &k.client_byte_s);
    for (size_t q = 0; q < passes; q++) {
        if (!(osd[q] > 0 && local[q] > 0))
            goto out;
        sspeed[q] = model / osd[q];
        cspeed[q] = model / local[q];
        xspeed[q] = crop_ok && crop[q] > 0 && crop_model > 0 ? crop_model / crop[q] : 0;
    }
    qsort(sspeed, passes, sizeof(double), by_value);
    qsort(cspeed, passes, sizeof(double), by_value);
    qsort(xspeed, passes, sizeof(double), by_value);
    k.storage_speed = sspeed[passes / 2];
    k.client_speed = cspeed[passes / 2];
    k.measured = done;
    k.passes = passes;
    k.client_lo = cspeed[0];
    k.client_hi = cspeed[passes - 1];
    k.crop_speed = xspeed[passes / 2];
    k.cropped = k.crop_speed > 0 ? cropped : 0;
    k.crop_ratio = k.crop_speed > 0 ? SOPHON_SEL_CROP_OSD * k.storage_speed / k.crop_speed : 0;
out:
    free(pick);
    free(params);
    free(has_crop);
    return k;
}

static int import_csv(struct cli *c, const char *dataset, const char *path)
{
    FILE *f = fopen(path, "r");
    sophon_records *set = NULL;
    char err[256] = "";
    if (f == NULL) {
        cli_error(c, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    int r = sophon_records_read_csv(&set, f, err, sizeof(err));
    fclose(f);
    if (r < 0) {
        cli_error(c, "%s: %s", path, err[0] ? err : strerror(-r));
        return -1;
    }
    size_t n = sophon_records_count(set);
    struct sophon_index_entry *e = calloc(n ? n : 1, sizeof(*e));
    for (size_t i = 0; e != NULL && i < n; i++) {
        const struct sophon_record *rec = sophon_records_get(set, i);
        /* No mtime is known: the next profile checks these objects again. */
        e[i] = (struct sophon_index_entry){
            .name = rec->name, .record = rec, .size = rec->stored_bytes, .mtime = -1};
    }
    r = e == NULL ? -ENOMEM : sophon__index_write(c->io, dataset, e, n);
    free(e);
    sophon_records_free(set);
    if (r < 0) {
        cli_error(c, "writing the index of dataset %s failed: %s", dataset, strerror(-r));
        return -1;
    }
    printf("imported %zu records from %s into dataset %s\n", n, path, dataset);
    return 0;
}

static int export_csv(struct cli *c, const char *dataset, const char *path)
{
    struct sophon_dataset ds;
    char err[256] = "";
    int r = sophon__dataset_read(&ds, c->io, dataset, err, sizeof(err));
    if (r < 0) {
        cli_error(c, "%s", err[0] ? err : strerror(-r));
        return -1;
    }
    FILE *f = fopen(path, "w");
    r = f == NULL ? -errno : sophon_records_write_csv(ds.records, f);
    if (f != NULL && cli_close_written(f) < 0 && r == 0)
        r = -EIO;
    if (r < 0) {
        cli_error(c, "cannot write %s: %s", path, strerror(-r));
        sophon__dataset_free(&ds);
        return -1;
    }
    printf("exported %zu records of dataset %s to %s\n", sophon_records_count(ds.records), dataset,
           path);
    sophon__dataset_free(&ds);
    return 0;
}

enum {
    OPT_DATASET = CLI_OPT_FIRST_CMD,
    OPT_LIST,
    OPT_SAMPLE,
    OPT_JOBS,
    OPT_EXPORT,
    OPT_IMPORT,
    OPT_NO_MEASURE,
};

static const struct option longopts[] = {
    CLI_COMMON_LONGOPTS,
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"list", required_argument, NULL, OPT_LIST},
    {"sample", required_argument, NULL, OPT_SAMPLE},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"export", required_argument, NULL, OPT_EXPORT},
    {"import", required_argument, NULL, OPT_IMPORT},
    {"no-measure", no_argument, NULL, OPT_NO_MEASURE},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct profile_args {
    struct cli c;
    const char *dataset, *list, *export_path, *import_path;
    uint64_t sample, jobs;
    int no_measure;
};

/* One option of sophon profile's own: 1 handled, 0 not one of them, -1 invalid (said why). */
static int profile_option(void *arg_, int opt, const char *arg)
{
    struct profile_args *a = arg_;

    switch (opt) {
    case OPT_DATASET:
        a->dataset = arg;
        return 1;
    case OPT_LIST:
        a->list = arg;
        return 1;
    case OPT_SAMPLE:
        return cli_parse_u64(&a->c, "--sample", arg, 100000, &a->sample) < 0 ? -1 : 1;
    case OPT_JOBS:
        return cli_parse_range(&a->c, "--jobs", arg, 1, 1024, &a->jobs) < 0 ? -1 : 1;
    case OPT_EXPORT:
        a->export_path = arg;
        return 1;
    case OPT_IMPORT:
        a->import_path = arg;
        return 1;
    case OPT_NO_MEASURE:
        a->no_measure = 1;
        return 1;
    default:
        return 0;
    }
}

/* The command line into *a, checked. Returns 0, or -1 to exit with *code (0 after --help). */
static int parse_args(int argc, char **argv, struct profile_args *a, int *code)
{
    memset(a, 0, sizeof(*a));
    a->c.prog = "sophon profile";
    a->sample = 64;
    a->jobs = 32;
    if (cli_parse_options(&a->c, argc, argv, "", longopts, usage, profile_option, a, code) < 0)
        return -1;
    if (a->c.pool == NULL || optind != argc) {
        cli_error(&a->c, "want a pool: sophon profile -p POOL [--dataset NAME]");
        return -1;
    }
    if (a->dataset == NULL)
        a->dataset = a->c.pool;
    return 0;
}

/* A preparation measured over RATIO_AGAIN times the model's figure, or under its inverse, is
 * made again and the lesser CPU kept: this machine's CPU time for the same call jumps now and
 * then (3.2 ms became 43.5 once in a run of six in an OSD, 4.8 became 15.5 here), never down.
 * The ratio an object's records keep lies within [1 / RATIO_MAX, RATIO_MAX]. */
#define RATIO_AGAIN 1.5
#define RATIO_MAX   8.0

/* The cost model's OSD CPU for item it's measure_params box, in model seconds. */
static double measured_box_model_s(const struct item *it)
{
    struct sophon_record rec = probed_record(it);
    struct sophon_prep_params p = measure_params(it, OP_MEASURE);
    return box_model_s(&rec, &p);
}

/*
 * Each object probed in this run prepared in its OSD (measure_params: one box of the mean
 * share, in the image's centre), as a profiling epoch of the SOPHON paper records every sample's
 * preparation time: its OSD CPU against the cost model's figure at the OSDs' speed (model
 * seconds per second, the calibration's) is the ratio its records' OSD CPU is scaled by (item
 * osd_ratio), so that a plan divides each record by the speed and gets the object's own. The
 * model's error is not the same on every image: on the main job's photos, an 18-megapixel
 * progressive one cost 1.6-1.9x its figure where the sample's small ones cost 0.5-0.8x, and the
 * plans offloading it first ran 25-30% longer than they said. Where the class makes crops (wire
 * format 3), the crop stage of the same box too, twice (the lesser kept), against the crop's
 * figure at the OSDs' speed for it (crop_speed, the calibration's; the pipeline's where it has
 * none): item crop_ratio. Its ratio to the pipeline is not the same on every image either: the
 * crop's fixed work (a compressor, its tables and markers) weighs on small images, and the
 * loaders' first epochs measured their crops at 2-3.6x what the calibration's sample said.
 * Objects that could not be prepared keep the model's figure. Said on stdout.
 */
static void measure_costs(struct profile_args *a, struct item *items, size_t n, double speed,
                          double crop_speed)
{
    uint16_t wire = 0;
    size_t want = 0, again = 0, m = 0;
    double *ratios = NULL;
    for (size_t i = 0; i < n; i++) {
        struct item *it = &items[i];
        it->measure = it->todo && it->result == 0 && it->probe.info.width > 0 &&
                      it->probe.info.height > 0 && measured_box_model_s(it) > 0;
        want += it->measure;
        if (it->measure && wire == 0) {
            int r = sophon__class_wire(&wire, a->c.io, it->name);
            if (r < 0) {
                fprintf(stderr,
                        "sophon profile: measuring the preparations in the OSDs failed (%s): "
                        "the records keep the cost model's OSD CPU\n",
                        strerror(-r));
                goto out;
            }
        }
    }
    if (want == 0 || (ratios = malloc(want * sizeof(*ratios))) == NULL ||
        run_ops(&a->c, items, n, OP_MEASURE, wire, a->jobs, "measure") < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct item *it = &items[i];
        if (!it->measure || !(it->osd_s > 0)) {
            it->measure = 0;
            continue;
        }
        double r = it->osd_s * speed / measured_box_model_s(it);
        it->measure = !(r <= RATIO_AGAIN && r >= 1 / RATIO_AGAIN);
        again += it->measure;
    }
    if (again > 0 && run_ops(&a->c, items, n, OP_MEASURE, wire, a->jobs, "measure again") < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct item *it = &items[i];
        if (it->osd_s > 0) {
            double r = it->osd_s * speed / measured_box_model_s(it);
            it->osd_ratio = fmin(RATIO_MAX, fmax(1 / RATIO_MAX, r));
            ratios[m++] = it->osd_ratio;
        }
    }
    if (m == 0) {
        fprintf(stderr, "sophon profile: no object could be prepared in the OSDs to measure its "
                        "CPU: the records keep the cost model's OSD CPU\n");
        goto out;
    }
    qsort(ratios, m, sizeof(*ratios), by_value);
    printf("measured in the OSDs: %zu objects, one preparation each (a centred box of %.0f%% of "
           "the image, %zu again, the lesser kept); the records' OSD CPU is each one's own: the "
           "model's times %.2f (median), %.2f to %.2f (10th to 90th percentile)",
           m, 100 * sophon_cost_model_default.box_share, again, ratios[m / 2],
           ratios[(size_t)(0.1 * (double)(m - 1))], ratios[(size_t)(0.9 * (double)(m - 1))]);
    if (m < want)
        printf("; %zu could not be prepared (the model's figure)", want - m);
    printf("\n");
    if (wire < SOPHON_WIRE_V3)
        goto out;
    for (size_t i = 0; i < n; i++)
        items[i].measure = items[i].osd_s > 0;
    if (run_ops(&a->c, items, n, OP_MEASURE_CROP, wire, a->jobs, "measure crops") < 0 ||
        run_ops(&a->c, items, n, OP_MEASURE_CROP, wire, a->jobs, "measure crops again") < 0)
        goto out;
    size_t mc = 0;
    for (size_t i = 0; i < n; i++) {
        struct item *it = &items[i];
        if (it->crop_s > 0) {
            double r = it->crop_s * crop_speed / (SOPHON_SEL_CROP_OSD * measured_box_model_s(it));
            it->crop_ratio = fmin(RATIO_MAX, fmax(1 / RATIO_MAX, r));
            ratios[mc++] = it->crop_ratio;
        }
    }
    if (mc == 0)
        goto out;
    qsort(ratios, mc, sizeof(*ratios), by_value);
    printf("and the crop stage of the same box, twice each (the lesser kept), on %zu of them: "
           "the model's crop times %.2f (median), %.2f to %.2f (10th to 90th percentile)\n",
           mc, ratios[mc / 2], ratios[(size_t)(0.1 * (double)(mc - 1))],
           ratios[(size_t)(0.9 * (double)(mc - 1))]);
out:
    for (size_t i = 0; i < n; i++)
        items[i].measure = 0;
    free(ratios);
}

/*
 * Marks the items new or changed since the last profile (todo): stat every object and compare
 * with the stamps; *missing counts those gone, *unchanged the others not marked. Then probes the
 * marked ones in their OSDs. Returns 0 or -1 (said why).
 */
static int find_changes(struct profile_args *a, struct item *items, size_t n, size_t *unchanged,
                        size_t *missing)
{
    struct sophon_index_stamp *stamps = NULL;
    size_t nstamps = 0;
    int r;

    *unchanged = *missing = 0;
    if ((r = sophon__index_stamps(a->c.io, a->dataset, &stamps, &nstamps)) < 0) {
        cli_error(&a->c, "cannot read the index of dataset %s: %s", a->dataset, strerror(-r));
        return -1;
    }
    if ((r = run_ops(&a->c, items, n, OP_STAT, 0, a->jobs, "stat")) < 0) {
        sophon__index_stamps_free(stamps, nstamps);
        cli_error(&a->c, "cannot stat the objects: %s", strerror(-r));
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (items[i].result < 0) {
            (*missing)++;
            continue;
        }
        /* A new dataset has no stamps (NULL): bsearch may not be given NULL. */
        const struct sophon_index_stamp *s =
            nstamps == 0 ? NULL
                         : bsearch(items[i].name, stamps, nstamps, sizeof(*stamps), by_stamp_name);
        items[i].todo = s == NULL || s->size != items[i].size || s->mtime != items[i].mtime;
        *unchanged += !items[i].todo;
    }
    sophon__index_stamps_free(stamps, nstamps);
    if ((r = run_ops(&a->c, items, n, OP_PROBE, 0, a->jobs, "probe")) < 0) {
        cli_error(&a->c, "cannot probe the objects: %s", strerror(-r));
        return -1;
    }
    return 0;
}

/*
 * The record of an object the OSD's probe refused as a JPEG of a kind sophon does not decode
 * (-EMEDIUMTYPE): it stays in the dataset, never offloaded (its U8 and F32 stages unavailable),
 * with its geometry unknown (0 x 0): the loader reads it as stored, finds out from its bytes and
 * reports the sample as failed, or prepares it if the object was rewritten since.
 */
static int unsupported_record(struct sophon_record *rec, const struct item *it)
{
    *rec = (struct sophon_record){.name = it->name, .stored_bytes = it->size};
    int r = sophon_cost_model_fill(rec, NULL);
    rec->stage[SOPHON_STAGE_U8] = (struct sophon_stage_cost){0};
    rec->stage[SOPHON_STAGE_F32] = (struct sophon_stage_cost){0};
    return r;
}

/*
 * A record for every item probed (header facts, costs from the model), written into the index
 * with its stamp; *written counts them, *unsupported those of them that are JPEGs of a kind
 * sophon does not decode, *rejected the items left out (not JPEGs, unreadable). A key that may
 * not call classes, or OSDs without the class, stop it. Returns 0 or -1 (said why).
 */
static int write_records(struct profile_args *a, const struct item *items, size_t n,
                         size_t *written, size_t *unsupported, size_t *rejected)
{
    struct sophon_index_entry *entries = calloc(n ? n : 1, sizeof(*entries));
    struct sophon_record *recs = calloc(n ? n : 1, sizeof(*recs));
    size_t ne = 0;
    int r = -1;

    *rejected = *unsupported = 0;
    if (entries == NULL || recs == NULL) {
        cli_error(&a->c, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const struct item *it = &items[i];
        struct sophon_record *rec = &recs[ne];
        if (!it->todo)
            continue;
        if (it->result == -EPERM || it->result == -EOPNOTSUPP) {
            cli_class_error(&a->c, "sophon.probe", it->name, it->result);
            goto done;
        }
        if (it->result == -EMEDIUMTYPE) {
            if (unsupported_record(rec, it) < 0) {
                (*rejected)++;
                continue;
            }
            fprintf(stderr,
                    "sophon profile: %s: a JPEG of a kind sophon does not decode (12-bit, "
                    "lossless, unusual components), as Pillow neither: recorded, never "
                    "offloaded; its samples will fail\n",
                    it->name);
            (*unsupported)++;
        } else if (it->result < 0) {
            if (it->result != -ENOENT)
                fprintf(stderr, "sophon profile: skipped %s: %s\n", it->name,
                        it->result == -EBADMSG ? "not a valid JPEG" : strerror(-it->result));
            (*rejected)++;
            continue;
        } else {
            *rec = probed_record(it);
            if (sophon_cost_model_fill(rec, NULL) < 0) {
                (*rejected)++;
                continue;
            }
            /* The OSD CPU its own preparations took, where measured (measure_costs). */
            for (int s = 0; s < SOPHON_STAGE_COUNT && it->osd_ratio > 0; s++)
                if (s != SOPHON_STAGE_STORED)
                    rec->stage[s].storage_cpu_s *= s == SOPHON_STAGE_CROP && it->crop_ratio > 0
                                                       ? it->crop_ratio
                                                       : it->osd_ratio;
        }
        entries[ne] = (struct sophon_index_entry){
            .name = it->name, .record = rec, .size = it->size, .mtime = it->mtime};
        ne++;
    }
    r = sophon__index_write(a->c.io, a->dataset, entries, ne);
    if (r < 0) {
        cli_error(&a->c, "writing the index of dataset %s failed: %s", a->dataset, strerror(-r));
        r = -1;
    }
    *written = ne;
done:
    free(entries);
    free(recs);
    return r;
}

/* The OSDs' speed against this client's (calibrate, on a sample of the items just probed), into
 * the index. A failure is said and leaves the records as they are. */
static void store_calibration(struct profile_args *a, struct calibration k)
{
    int r;

    if (k.storage_speed <= 0) {
        cli_error(&a->c, "calibration: no object could be prepared in the OSDs and here; the "
                         "records keep an OSD speed of 1 (see the messages above)");
        return;
    }
    r = sophon__index_write_profile(a->c.io, a->dataset, k.storage_speed, k.client_speed,
                                    k.osd_op_s, k.client_byte_s, k.crop_speed);
    if (r < 0)
        cli_error(&a->c, "writing the calibration failed: %s", strerror(-r));
    printf("calibration on %zu objects: an OSD core is %.2fx as fast as this client's; the cost "
           "model's CPU runs at %.2fx in an OSD core and %.2fx here (the plans' speeds; the median "
           "of %zu passes, here %.2f to %.2f)\n",
           k.measured, k.storage_speed / k.client_speed, k.storage_speed, k.client_speed, k.passes,
           k.client_lo, k.client_hi);
    if (k.osd_op_s > 0)
        printf("the OSDs spent %.2f ms an operation beyond the preparations (the plans' figure "
               "until a loader measures its own)\n",
               k.osd_op_s * 1e3);
    else
        printf("the OSDs' CPU per operation was not measured (a class before 0.3, or the OSDs "
               "did not answer): the plans count %.2f ms until a loader measures its own\n",
               SOPHON_SEL_OSD_OP_S * 1e3);
    if (k.client_byte_s > 0)
        printf("this client's librados spent %.2f ns a byte taking the responses in (the plans' "
               "figure until a loader measures its own)\n",
               k.client_byte_s * 1e9);
    else
        printf("this client's CPU per byte received was not measured (no librados messenger "
               "threads found): the plans count %.2f ns until a loader measures its own\n",
               SOPHON_SEL_CLIENT_BYTE_S * 1e9);
    if (k.crop_speed > 0)
        printf("the crop stage on %zu of them: %.2fx the u8 pipeline's OSD CPU on the same boxes "
               "(the model's %.2fx; the plans' crop speed %.2f until a loader measures its own)\n",
               k.cropped, k.crop_ratio, SOPHON_SEL_CROP_OSD, k.crop_speed);
    else
        printf("the crop stage's OSD CPU was not measured (a class before wire format 3, or no "
               "crop answered): the plans count %.2fx the u8 pipeline's until a loader measures "
               "its own\n",
               SOPHON_SEL_CROP_OSD);
}

/* The whole profile of the dataset's objects (*items, *n: the caller frees them). Returns 0 or
 * -1 (said why). */
static int profile(struct profile_args *a, struct item **items, size_t *n)
{
    double t0 = progress_now(), secs;
    size_t unchanged, missing, written = 0, unsupported, rejected;
    int r;

    if ((r = gather(&a->c, a->dataset, a->list, items, n)) < 0) {
        cli_error(&a->c, "cannot list the objects of dataset %s: %s", a->dataset, strerror(-r));
        return -1;
    }
    qsort(*items, *n, sizeof(**items), by_item_name);
    if (find_changes(a, *items, *n, &unchanged, &missing) < 0)
        return -1;
    size_t probed = 0;
    for (size_t i = 0; i < *n; i++)
        probed += (*items)[i].todo && (*items)[i].result == 0;
    /* The speeds first: the measured objects' ratios are against the model at the OSDs' speed. */
    struct calibration k = {.osd_op_s = -1, .client_byte_s = -1};
    if (a->sample > 0 && probed > 0)
        k = calibrate(&a->c, *items, *n, a->sample);
    if (!a->no_measure && probed > 0)
        measure_costs(a, *items, *n, k.storage_speed > 0 ? k.storage_speed : 1.0,
                      k.crop_speed > 0      ? k.crop_speed
                      : k.storage_speed > 0 ? k.storage_speed
                                            : 1.0);
    if (write_records(a, *items, *n, &written, &unsupported, &rejected) < 0)
        return -1;
    secs = progress_now() - t0;
    char kinds[64] = "";
    if (unsupported > 0)
        snprintf(kinds, sizeof(kinds), "; %zu of a kind sophon does not decode", unsupported);
    printf("dataset %s: %zu objects; %zu profiled (new or changed%s), %zu unchanged, %zu not "
           "JPEGs or unreadable, %zu gone; %.1f s, %.0f records/s\n",
           a->dataset, *n, written, kinds, unchanged, rejected, missing, secs,
           secs > 0 ? (double)*n / secs : 0);
    if (a->sample > 0 && probed > 0 && written > 0)
        store_calibration(a, k);
    return 0;
}

int cmd_profile(int argc, char **argv)
{
    struct profile_args a;
    struct item *items = NULL;
    size_t n = 0;
    int code, r;

    if (parse_args(argc, argv, &a, &code) < 0)
        return code;
    if (cli_connect(&a.c) < 0)
        return 1;
    /* The objects where `sophon put` stored them, -N or not. */
    char err[512] = "";
    r = a.import_path != NULL
            ? 0
            : sophon__dataset_use_namespace(a.c.io, a.dataset, a.c.nspace, err, sizeof(err));
    if (r < 0) {
        cli_error(&a.c, "%s", err[0] ? err : strerror(-r));
        cli_disconnect(&a.c);
        return 1;
    }
    if (a.import_path != NULL)
        r = import_csv(&a.c, a.dataset, a.import_path);
    else
        r = profile(&a, &items, &n);
    if (r == 0 && a.export_path != NULL)
        r = export_csv(&a.c, a.dataset, a.export_path);
    for (size_t i = 0; i < n; i++)
        free(items[i].name);
    free(items);
    cli_disconnect(&a.c);
    return r < 0 ? 1 : 0;
}
