/*
 * loader.c - sophon_loader: training epochs of a dataset, placed per the selector's plan.
 *
 * Three kinds of threads share one mutex:
 *  - the dispatcher issues RADOS operations in sampler order, at most `window` in flight, and
 *    sends again, when their backoff has passed, the samples a worker asked to retry;
 *  - librados calls back when an operation completes; the callback only queues the sample;
 *  - workers finish queued samples with prep/ (decode here, or normalize an OSD's u8 output, or
 *    copy an OSD's f32 output) straight into the batch buffer of the sample's position.
 * The caller's thread waits in sophon_loader_next for the batch it wants, in order.
 *
 * Batch buffers form a ring of nbufs batches; position p of the epoch is written into buffer
 * (p / B) % nbufs at row p % B. A position is issued only when its buffer is no longer held by
 * the caller, which bounds memory to nbufs * B samples whatever the OSDs do. nbufs is the
 * options' prefetch + 1, or chosen per epoch (epoch_nbufs): a sample still being prepared in
 * its OSD holds up its batch, and the link idles once the ring is full.
 *
 * Selective's plan is also corrected as the epoch runs (control.h): a sample planned in the OSD
 * whose preparation would keep the link waiting longer than reading it costs is read as stored.
 */
#define _GNU_SOURCE /* pthread_condattr_setclock with CLOCK_MONOTONIC */
#include "sophon.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpus.h"
#include "cross_checks.h"
#include "dataset.h"
#include "epoch_order.h"
#include "estimate.h"
#include "osd_cpu.h"
#include "pool_pgs.h"
#include "loader_versions.h"
#include "prep_call.h"
#include "prep_response.h"
#include "sampler.h"
#include "selector.h"
#include "sophon_common.h"
#include "control.h"
#include "simulate.h"
#include "sophon_config.h"
#include "wire.h"

/* The samples' memory the loader may give its ring of batches when it sizes it itself (the
 * options' prefetch 0): 256 MiB, 1700 u8 samples of 224 x 224. */
#define SOPHON_RING_MAX_BYTES (256u << 20)

/* A retry waits at most this long, however many came before it. */
#define BACKOFF_MAX_S 5.0

enum slot_state { SLOT_IDLE, SLOT_INFLIGHT, SLOT_QUEUED, SLOT_WORKING, SLOT_RETRY, SLOT_DONE };

/* One position of the epoch on its way to a batch. */
struct slot {
    struct sophon_loader *l;
    int state;
    uint64_t pos, index;
    int stage;   /* what this attempt asks the OSD for: STORED (a plain read), CROP, U8 or F32 */
    int planned; /* the plan's stage */
    int demoted; /* planned in the OSD, read as stored by the controller (control.h) */
    int ahead;   /* issued ahead of its turn, in epoch gen (the in-order pass skips it) */
    int ahead_inflight; /* ... and counted in the loader's ahead_inflight until it completes */
    uint64_t gen;
    uint64_t expect_bytes; /* the response the plan expects for this attempt's stage */
    double osd_model_s;    /* the attempt's modelled OSD CPU, seconds on the OSDs' cores */
    unsigned attempts;
    double not_before; /* monotonic seconds, for a retry */
    int rc;            /* the operation's result (bytes read for a plain read) */
    int params_rc;     /* 0, or why the transform has no request for this image */
    struct sophon_prep_params p;
    rados_completion_t c;
    rados_read_op_t rop;
    char *resp; /* exec reply, librados' */
    size_t resp_len;
    int prval;
    /* The object's size and mtime, read in the same operation as the exec: an object rewritten
     * since it was profiled is prepared here from what is stored now (object_changed). */
    uint64_t st_size;
    time_t st_mtime;
    int st_rval;
    uint8_t *raw; /* plain read, ours */
    size_t raw_cap;
    struct slot *next; /* work queue or retry list */
    /* For the options' trace (struct sophon_sample_trace): seconds since the epoch started, and
     * what the last attempt's result said. */
    double t_issued, t_completed, t_ready;
    unsigned retries;
    int got_stage, err;
    uint64_t got_bytes, osd_cpu_ns, client_cpu_ns;
};

struct batchbuf {
    uint8_t *data;
    int32_t *labels;
    const char **names;
    uint64_t *indices;
    int *errors;
    size_t done, failed;
};

struct sophon_loader {
    struct sophon_loader_options o;
    int policy;
    rados_t cluster;
    rados_ioctx_t io;
    struct sophon_dataset ds;
    unsigned stages;               /* the stages the plan may choose (selector.h's bits) */
    double measured_Bps;           /* the link as measured at open (measure_link); 0: not */
    double measured_cores;         /* the OSDs' CPU as measured at open (measure_osds); 0: not */
    uint64_t measure_bytes;        /* what that measurement read */
    sophon_records *epoch_records; /* ds.records as this epoch plans them (epoch_records) */
    int64_t *mtimes; /* per record, its index stamp's mtime (when profiled); 0 unknown */
    size_t sample_bytes;
    struct sophon_crop_policy crop; /* train: RandomResizedCrop's scale and ratio, the flip */

    pthread_mutex_t mu, log_mu;
    pthread_cond_t cv_disp, cv_work, cv_done;
    pthread_t dispatcher, *workers;
    struct slot **to_issue; /* The dispatcher's: window slots to start outside mu. */
    unsigned window_cap;    /* the most operations any epoch may have in flight (to_issue) */
    double median_bytes;    /* the dataset's median object as stored (sophon__control_window) */
    uint64_t link_read_min; /* the least object the link's measurement reads (measure_link) */
    unsigned nworkers;
    int threads_started, stop;

    /* The epoch; everything below is guarded by mu. */
    int running;
    uint64_t seed, epoch;
    unsigned window; /* operations in flight this epoch: the options', or chosen per epoch */
    uint64_t *order;
    size_t m;
    struct sophon_plan *plan;
    uint64_t *cum_bytes; /* cum_bytes[q]: the plan's bytes of positions 0..q) of the epoch */
    /* The controller's view of the epoch (control.h): this rank's link (payload) and share of
     * the OSDs' cores, its client cores (reference); bytes expected from the operations in
     * flight; scratch for the OSD CPU of the preparations in flight. The model's OSD speed is
     * osd_speed(). */
    int control;
    double ctl_rate_Bps, ctl_osd_cores, ctl_client_cores;
    uint64_t inflight_bytes;
    double *ctl_cpu;
    uint64_t issued, delivered, released;
    unsigned inflight, busy;
    /* Preparations issued ahead of their turn (issue_ahead): in flight (ahead_inflight, counted
     * in inflight too, in the window's places kept for them: sophon__ahead_places), the next
     * position to look at, and the epoch's generation that tells this epoch's slots from older
     * ones. */
    unsigned ahead_inflight;
    uint64_t ahead_next, gen;
    struct slot *slots;
    size_t nslots;
    unsigned nbufs_cap; /* batch buffers allocated: the deepest ring so far */
    struct batchbuf *bufs;
    unsigned nbufs;
    struct slot *work_head, *work_tail, *retry;
    struct sophon_batch out;
    int class_ok, class_warned;
    uint16_t wire;      /* the class's wire version, asked once at open (sophon__class_wire) */
    int class_answered; /* 1 when the class's version method answered at open */
    struct sophon_loader_stats st;
    double t0;
    /* Online profiling: model seconds (reference core) against measured CPU seconds, over every
     * epoch so far. */
    double storage_model_s, storage_meas_s, client_model_s, client_meas_s;
    double storage_speed, client_speed;
    /* The same for the crop stage's preparations (their OSD CPU against the model's figure,
     * SOPHON_SEL_CROP_OSD of the decode: the crop's CPU against the pipeline's is the machine's
     * and the images', 1.1-1.9x, 4.2x with a class whose arrays faulted), kept apart from the
     * pipeline's (u8, f32) that storage_speed is; crop_speed 0 while unknown (the plans take
     * storage_speed), and crop_measured says where it came from (sophon.h). */
    double crop_model_s, crop_meas_s, crop_speed;
    int crop_measured;
    /* Per record, its OSD CPU measured over the model's (the mean of its last two samples), 0
     * while never measured: the planner's storage CPU for the objects it has seen. */
    double *obj_ratio;
    /* Per record, this epoch's box's decode cost against the expected box's
     * (sophon_cost_model_box_at_factor: its share and depth; 0: not known, taken as 1): the model's
     * figures for this epoch's samples, in the plans and against what is measured. */
    double *box_factor;
    /* The OSD processes holding this loader's objects (osd_cpu.h; n 0 when they cannot be
     * asked), and whether the current epoch's interval started with an answer from each; the
     * operations this epoch issued; the OSDs' CPU per operation beyond the preparations (OSD
     * seconds) the plans count: over the epochs so far (the sums of the processes' CPU, the
     * class's, and the operations), else as measured at open, else as the profile measured it
     * (the dataset's index), else SOPHON_SEL_OSD_OP_S; osd_op_measured says which (sophon.h). */
    struct sophon__osds osds;
    int osd_interval;
    uint64_t epoch_ops;
    double op_osd_s, op_class_s;
    uint64_t op_count;
    double osd_op_s;
    int osd_op_measured;
    /* The client's CPU per byte received beyond the preparations (librados's messenger threads,
     * SOPHON__MSGR_THREADS, taking the responses in) the plans count, in this client's
     * seconds: over the epochs so far (msgr_s over msgr_bytes), else as the profile
     * measured it, else SOPHON_SEL_CLIENT_BYTE_S; client_byte_measured says which (sophon.h). The
     * threads' CPU at the epoch's start (msgr_ok 0: it could not be read), and the plan's figure
     * in the cost model's seconds (client_byte_s times the client speed: the budget's; 0 where
     * not counted). msgr_counted: whether the plans count it against the client's cores, 1
     * where the process may not use a core beyond them (sophon__cpus_available: its affinity
     * and quota), so that the messenger waits for the workers' cores; with a core to spare it
     * runs beside them (on the testbed's 2 cores with --client-cores 1, counting it had none's
     * epochs at 500Mbit modelled 4-8% long where the OSDs left the other core idle). */
    uint64_t msgr_ns0;
    int msgr_ok, msgr_counted;
    double msgr_s;
    uint64_t msgr_bytes;
    double client_byte_s, plan_client_byte_s;
    int client_byte_measured;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say(struct sophon_loader *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(struct sophon_loader *l, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&l->log_mu);
    if (l->o.log != NULL)
        l->o.log(l->o.log_arg, line);
    else
        fprintf(stderr, "sophon: %s\n", line);
    pthread_mutex_unlock(&l->log_mu);
}

static const struct sophon_record *record(const struct sophon_loader *l, uint64_t index)
{
    return sophon_records_get(l->ds.records, (size_t)index);
}

/* The OSDs' speed this epoch is planned with (the model's CPU over the measured; 1 unknown). */
static double osd_speed(const struct sophon_loader *l)
{
    return l->storage_speed > 0 ? l->storage_speed : 1.0;
}

/* What the crop stage's figures are scaled by in this epoch's records: the OSDs' speed for the
 * pipeline's figures over theirs for the crop's (1 where the crop's is unknown). */
static double crop_factor(const struct sophon_loader *l)
{
    return l->crop_speed > 0 ? osd_speed(l) / l->crop_speed : 1.0;
}

/* The same for the client's CPU: the model's client seconds over it are this client's. */
static double client_speed(const struct sophon_loader *l)
{
    return l->client_speed > 0 ? l->client_speed : 1.0;
}

/* ---- operations ------------------------------------------------------------------------------ */

/* Queues a slot for the workers (mu held). */
static void enqueue_work(struct sophon_loader *l, struct slot *s)
{
    s->state = SLOT_QUEUED;
    s->next = NULL;
    if (l->work_tail != NULL)
        l->work_tail->next = s;
    else
        l->work_head = s;
    l->work_tail = s;
    pthread_cond_signal(&l->cv_work);
}

/* The slot's attempt is over with result r, in flight no more: to the workers (mu held). */
static void attempt_done(struct sophon_loader *l, struct slot *s, int r)
{
    s->rc = r;
    s->t_completed = now_s() - l->t0;
    l->inflight--;
    if (s->ahead_inflight) {
        s->ahead_inflight = 0;
        l->ahead_inflight--;
    }
    l->inflight_bytes -= s->expect_bytes;
    enqueue_work(l, s);
}

static void on_complete(rados_completion_t c, void *arg)
{
    struct slot *s = arg;
    struct sophon_loader *l = s->l;
    int r = rados_aio_get_return_value(c);
    if (r >= 0 && s->stage != SOPHON_STAGE_STORED && s->prval < 0)
        r = s->prval;
    pthread_mutex_lock(&l->mu);
    attempt_done(l, s, r);
    pthread_cond_signal(&l->cv_disp);
    if (!l->running)
        pthread_cond_broadcast(&l->cv_done); /* drain() waits for the last one */
    pthread_mutex_unlock(&l->mu);
}

/* Starts the slot's operation (mu not held). On a synchronous failure the slot is queued with
 * that error, as if the operation had completed with it. */
static void issue(struct sophon_loader *l, struct slot *s)
{
    const struct sophon_record *rec = record(l, s->index);
    int r = s->params_rc;
    if (r < 0)
        goto failed;
    r = rados_aio_create_completion2(s, on_complete, &s->c);
    if (r < 0)
        goto failed;
    if (s->stage == SOPHON_STAGE_STORED) {
        /* Refused rather than read, as the class and the pipeline refuse it (prep.h). */
        if (rec->stored_bytes > SOPHON_MAX_OBJECT_BYTES) {
            r = -EFBIG;
            goto failed;
        }
        /* One byte more than recorded: a longer read tells that the object grew since. */
        s->raw_cap = rec->stored_bytes + 1;
        s->raw = malloc(s->raw_cap);
        if (s->raw == NULL) {
            r = -ENOMEM;
            goto failed;
        }
        r = rados_aio_read(l->io, rec->name, s->c, (char *)s->raw, s->raw_cap, 0);
    } else {
        uint8_t req[SOPHON_REQUEST_LEN];
        struct sophon_prep_params p = s->p;
        p.format = s->stage == SOPHON_STAGE_F32 ? SOPHON_FORMAT_F32 : SOPHON_FORMAT_U8;
        if (s->stage == SOPHON_STAGE_CROP) {
            /* The crop, or the u8 pixels where they are smaller or the crop is not exact: the
             * OSD never sends more than either (prep_response.h). */
            p.stage = SOPHON_WIRE_CROP;
            p.fallback = SOPHON_FALLBACK_PIXELS;
        }
        r = sophon_request_encode_as(req, sizeof(req), &p, l->wire);
        if (r < 0)
            goto failed;
        size_t req_len = (size_t)r;
        s->rop = rados_create_read_op();
        if (s->rop == NULL) {
            r = -ENOMEM;
            goto failed;
        }
        s->resp = NULL;
        s->resp_len = 0;
        s->prval = 0;
        s->st_rval = -ENODATA;
        rados_read_op_stat(s->rop, &s->st_size, &s->st_mtime, &s->st_rval);
        /* librados copies the request; the reply is allocated by it (rados_buffer_free). */
        rados_read_op_exec(s->rop, "sophon", "prep", (const char *)req, req_len, &s->resp,
                           &s->resp_len, &s->prval);
        r = rados_aio_read_op_operate(s->rop, l->io, s->c, rec->name, 0);
    }
    if (r == 0)
        return;
failed:
    pthread_mutex_lock(&l->mu);
    attempt_done(l, s, r);
    pthread_mutex_unlock(&l->mu);
}

/* Frees what one attempt held. */
static void release_attempt(struct slot *s)
{
    if (s->c != NULL)
        rados_aio_release(s->c);
    if (s->rop != NULL)
        rados_release_read_op(s->rop);
    if (s->resp != NULL)
        rados_buffer_free(s->resp);
    free(s->raw);
    s->c = NULL;
    s->rop = NULL;
    s->resp = NULL;
    s->raw = NULL;
}

/* The positions whose buffer is free: not held by the caller, and not a batch still unread. */
static int can_issue(const struct sophon_loader *l)
{
    size_t b = l->o.batch_size;
    return l->issued < l->m && l->issued / b < l->released / b + l->nbufs;
}

/*
 * The request of dataset sample `index` in the current epoch: the transform's geometry (for
 * train the box and flip drawn from (seed, epoch, index)), the format and the normalization.
 * Returns 0, or -EINVAL when the transform has no geometry for the image (a Resize that would
 * make a side over SOPHON_MAX_RESIZE_SIDE); the sample then fails with it.
 */
static int sample_params(const struct sophon_loader *l, uint64_t index, uint32_t width,
                         uint32_t height, struct sophon_prep_params *p)
{
    *p = (struct sophon_prep_params)SOPHON_PREP_PARAMS_INIT;
    p->format = (uint8_t)l->o.format; /* the same values (cross_checks.h) */
    memcpy(p->mean, l->o.mean, sizeof(p->mean));
    memcpy(p->std, l->o.std, sizeof(p->std));
    if (l->o.transform == SOPHON_TRANSFORM_VAL)
        return sophon_prep_set_val(p, width, height, l->o.resize, l->o.size);
    p->out_w = p->out_h = l->o.size;
    return sophon_draw_crop(p, l->seed, l->epoch, index, width, height, &l->crop);
}

/* A record whose geometry profile could not read (a JPEG of a kind sophon does not decode,
 * cmd_profile.c): its sample is read as stored and its geometry taken from its bytes. */
static int geometry_unknown(const struct sophon_record *rec)
{
    return rec->width == 0 || rec->height == 0;
}

static double client_model(const struct sophon_loader *l, uint64_t index, int stage);

/* Record index's box factor this epoch (box_factor), 1 where not known. */
static double box(const struct sophon_loader *l, uint64_t index)
{
    return l->box_factor[index] > 0 ? l->box_factor[index] : 1.0;
}

/* The bytes an attempt at the slot's stage should bring back: the plan's for its stage, the
 * object's as stored for a plain read. */
static uint64_t expected_bytes(const struct sophon_loader *l, const struct slot *s)
{
    return s->stage == s->planned ? l->plan->bytes[s->index] : record(l, s->index)->stored_bytes;
}

/* Whether the controller reads slot s, planned in the OSD, as stored instead (control.h); mu
 * held, s not yet counted in flight. */
static int control_demotes(struct sophon_loader *l, const struct slot *s,
                           const struct sophon_record *rec)
{
    size_t k = 0, b = l->o.batch_size;
    unsigned seen = 0;
    /* The slots in flight hold positions released..issued) of the ring; from the newest, where
     * they are, until all of them are counted (s is not yet). */
    uint64_t top = l->ahead_next > l->issued ? l->ahead_next : l->issued;
    for (uint64_t p = top; p > l->released && seen < l->inflight; p--) {
        const struct slot *o = &l->slots[(p - 1) % l->nslots];
        if (o == s || o->state != SLOT_INFLIGHT)
            continue;
        seen++;
        if (o->stage != SOPHON_STAGE_STORED && k < l->window_cap)
            l->ctl_cpu[k++] = o->osd_model_s;
    }
    /* While s is outstanding its batch cannot be delivered, and the loader can issue no further
     * than nbufs batches from it. */
    size_t end = (size_t)(s->pos / b + l->nbufs) * b;
    if (end > l->m)
        end = l->m;
    double stored_client = client_model(l, s->index, SOPHON_STAGE_STORED);
    struct sophon__control_in in = {
        .rate_Bps = l->ctl_rate_Bps,
        .osd_cores = l->ctl_osd_cores,
        .client_cores = l->ctl_client_cores,
        .own_cpu_s = s->osd_model_s,
        .inflight_cpu_s = l->ctl_cpu,
        .ninflight = k,
        .cover_bytes = l->inflight_bytes + l->cum_bytes[end] - l->cum_bytes[s->pos + 1],
        .planned_bytes = l->plan->bytes[s->index],
        .stored_bytes = rec->stored_bytes,
        .extra_client_s =
            fmax(0, stored_client + (double)rec->stored_bytes * l->plan_client_byte_s -
                        l->plan->client_cpu_s[s->index]),
    };
    return sophon__control_demote(&in);
}

/* Fills slot s for position pos of the epoch: the sample, its plan's stage and its request, and
 * the stage this attempt asks for (mu held). */
static void slot_start(struct sophon_loader *l, struct slot *s, uint64_t pos)
{
    memset(s, 0, sizeof(*s));
    s->l = l;
    s->pos = pos;
    s->gen = l->gen;
    s->index = l->order[pos];
    s->planned = l->plan->stage[s->index];
    s->t_issued = now_s() - l->t0;
    const struct sophon_record *rec = record(l, s->index);
    if (!geometry_unknown(rec))
        s->params_rc = sample_params(l, s->index, rec->width, rec->height, &s->p);
    /* What the class's wire version cannot carry is prepared here. */
    s->stage = l->class_ok && !geometry_unknown(rec) && sophon_request_fits(&s->p, l->wire)
                   ? s->planned
                   : SOPHON_STAGE_STORED;
    if (s->stage != SOPHON_STAGE_STORED)
        s->osd_model_s = l->plan->storage_cpu_s[s->index] / osd_speed(l);
}

/* Whether position pos (not yet issued in order) was issued ahead this epoch (mu held). */
static int issued_ahead(const struct sophon_loader *l, uint64_t pos)
{
    const struct slot *s = &l->slots[pos % l->nslots];
    return s->ahead && s->gen == l->gen && s->pos == pos;
}

/*
 * Preparations issued ahead of their turn (mu held): the in-order pass issues at most the window
 * of operations, and a sample prepared in an OSD late in that order starts only when the window
 * reaches it; a long one (a 16 MB photo at 0.1 OSD cores runs for seconds) then holds its batch,
 * and the ring behind it, while the OSDs had idled earlier. So in the places of the window kept
 * for them (sophon__ahead_places), the next samples the plan prepares in the OSDs, anywhere in the
 * ring past the in-order pass, are started ahead; their responses go to the workers when they come
 * (their batch's buffer is the ring's already). Adds them to out[], returns how many.
 */
static size_t issue_ahead(struct sophon_loader *l, struct slot **out)
{
    size_t k = 0, b = l->o.batch_size;
    uint64_t end = (l->released / b + l->nbufs) * b;
    if (end > l->m)
        end = l->m;
    if (l->ahead_next < l->issued)
        l->ahead_next = l->issued;
    while (l->ahead_inflight < sophon__ahead_places(l->window) && l->inflight < l->window &&
           l->ahead_next < end) {
        uint64_t pos = l->ahead_next++;
        if (l->plan->stage[l->order[pos]] == SOPHON_STAGE_STORED)
            continue;
        struct slot *s = &l->slots[pos % l->nslots];
        slot_start(l, s, pos);
        if (s->stage == SOPHON_STAGE_STORED)
            continue; /* read in order (slot_start left it not ahead) */
        s->ahead = s->ahead_inflight = 1;
        s->state = SLOT_INFLIGHT;
        s->expect_bytes = expected_bytes(l, s);
        l->inflight++;
        l->ahead_inflight++;
        l->inflight_bytes += s->expect_bytes;
        l->st.ahead++;
        out[k++] = s;
    }
    return k;
}

static void *dispatcher_main(void *arg)
{
    struct sophon_loader *l = arg;
    struct slot **batch = l->to_issue;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        size_t k = 0;
        double now = now_s(), wake = INFINITY;
        if (l->running) {
            /* Retries first: they are the oldest positions. */
            for (struct slot **pp = &l->retry; *pp != NULL && l->inflight < l->window;) {
                struct slot *s = *pp;
                if (s->not_before > now) {
                    wake = fmin(wake, s->not_before);
                    pp = &s->next;
                    continue;
                }
                *pp = s->next;
                s->state = SLOT_INFLIGHT;
                s->expect_bytes = expected_bytes(l, s);
                l->inflight++;
                l->inflight_bytes += s->expect_bytes;
                batch[k++] = s;
            }
            while (can_issue(l) &&
                   (l->inflight - l->ahead_inflight < l->window - sophon__ahead_places(l->window) ||
                    issued_ahead(l, l->issued))) {
                struct slot *s = &l->slots[l->issued % l->nslots];
                if (issued_ahead(l, l->issued)) {
                    l->issued++;
                    continue;
                }
                slot_start(l, s, l->issued++);
                if (s->stage != SOPHON_STAGE_STORED && l->control &&
                    control_demotes(l, s, record(l, s->index))) {
                    s->stage = SOPHON_STAGE_STORED;
                    s->demoted = 1;
                }
                s->state = SLOT_INFLIGHT;
                s->expect_bytes = expected_bytes(l, s);
                l->inflight++;
                l->inflight_bytes += s->expect_bytes;
                batch[k++] = s;
            }
            k += issue_ahead(l, batch + k);
        }
        if (k > 0) {
            l->epoch_ops += k;
            pthread_mutex_unlock(&l->mu);
            for (size_t i = 0; i < k; i++)
                issue(l, batch[i]);
            pthread_mutex_lock(&l->mu);
            continue;
        }
        if (isfinite(wake)) {
            struct timespec ts = {(time_t)wake, (long)((wake - floor(wake)) * 1e9)};
            pthread_cond_timedwait(&l->cv_disp, &l->mu, &ts);
        } else {
            pthread_cond_wait(&l->cv_disp, &l->mu);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- workers --------------------------------------------------------------------------------- */

enum outcome { DONE, RETRY };

/* What a worker found, applied to the loader's state under mu. */
struct result {
    enum outcome what;
    int err;        /* DONE: 0 or the sample's negative errno */
    uint64_t bytes; /* received */
    int got_stage;  /* the stage that came back, for bytes_by_stage */
    uint64_t osd_cpu_ns, client_cpu_ns;
    double storage_model_s, client_model_s; /* the model's seconds for what was measured */
    int retried, class_missing, declined;
};

/* Errors that say the class cannot serve this client at all. */
static int class_unusable(int r)
{
    return r == -EOPNOTSUPP || r == -EPERM;
}

/* The OSD would not take this sample on (its memory budget for sophon calls is full, or the
 * image is over its per-call cap), though the client can: cls_sophon.c's admit(). */
static int declined(int r)
{
    return r == -EBUSY || r == -E2BIG;
}

/* Errors that another attempt may not see: a down OSD, a timeout, a connection reset. */
static int transient(int r)
{
    return r == -ETIMEDOUT || r == -EIO || r == -EAGAIN || r == -ESHUTDOWN || r == -ENOTCONN ||
           r == -ECONNRESET || r == -ECANCELED || r == -EINTR;
}

/* The model's client seconds for finishing record index's sample from `stage` to the loader's
 * format; the stages that decode here (STORED, CROP) for this epoch's box (box_factor). */
static double client_model(const struct sophon_loader *l, uint64_t index, int stage)
{
    const struct sophon_record *rec = record(l, index);
    double s = rec->stage[stage].client_cpu_s;
    if (l->o.format == SOPHON_SAMPLE_U8)
        s -= rec->stage[SOPHON_STAGE_U8].client_cpu_s;
    if (stage == SOPHON_STAGE_STORED || stage == SOPHON_STAGE_CROP)
        s *= box(l, index);
    return s > 0 ? s : 0;
}

static void finish_stored(struct sophon_loader *l, struct slot *s, uint8_t *out, struct result *res)
{
    const struct sophon_record *rec = record(l, s->index);
    uint8_t *jpeg = s->raw, *whole = NULL;
    size_t len = (size_t)s->rc;
    char err[256] = "";
    if (len > rec->stored_bytes) {
        /* The object grew since it was profiled: read all of it. */
        int r = sophon__read_object(&whole, &len, l->io, rec->name, SOPHON_MAX_OBJECT_BYTES);
        if (r < 0) {
            res->err = r;
            say(l, "%s: cannot read (%s)", rec->name, strerror(-r));
            return;
        }
        jpeg = whole;
    }
    res->bytes = len;
    res->got_stage = SOPHON_STAGE_STORED;
    uint64_t t0 = sophon__thread_cpu_ns();
    /* The sample is drawn for the image as stored now: one rewritten with another size since it
     * was profiled (or whose size profile could not read) gets its geometry from its header. A
     * header that does not parse is left to the pipeline, which says why. */
    struct sophon_probe_info info;
    int r = sophon_probe(&info, jpeg, len, err, sizeof(err));
    if (r == 0 && (info.width != rec->width || info.height != rec->height))
        r = sample_params(l, s->index, info.width, info.height, &s->p);
    else if (r < 0 && !geometry_unknown(rec))
        r = 0;
    if (r == 0)
        r = sophon_prep_run(out, l->sample_bytes, jpeg, len, &s->p, NULL, err, sizeof(err));
    res->client_cpu_ns = sophon__thread_cpu_ns() - t0;
    res->client_model_s = client_model(l, s->index, SOPHON_STAGE_STORED);
    free(whole);
    if (r < 0) {
        res->err = r;
        say(l, "%s: cannot prepare (%s): %s", rec->name, strerror(-r), err);
    }
}

static void finish_offloaded(struct sophon_loader *l, struct slot *s, uint8_t *out,
                             struct result *res)
{
    const struct sophon_record *rec = record(l, s->index);
    struct sophon_response h;
    const uint8_t *payload;
    char err[256] = "";
    res->bytes = s->resp_len;
    if (sophon_response_decode(&h, &payload, (const uint8_t *)s->resp, s->resp_len) < 0) {
        res->err = -EPROTO;
        say(l, "%s: the OSD's reply is not the sample asked for (%s)", rec->name, strerror(EPROTO));
        return;
    }
    res->got_stage = h.stage == SOPHON_WIRE_CROP     ? SOPHON_STAGE_CROP
                     : h.format == SOPHON_FORMAT_F32 ? SOPHON_STAGE_F32
                                                     : SOPHON_STAGE_U8;
    res->osd_cpu_ns = h.cpu_ns;
    res->storage_model_s = rec->stage[s->stage].storage_cpu_s * box(l, s->index);
    uint64_t t0 = sophon__thread_cpu_ns();
    struct sophon_prep_params p = s->p;
    p.format = (uint8_t)l->o.format; /* the same values (cross_checks.h) */
    int r = sophon_prep_finish(out, l->sample_bytes, &h, payload, &p, NULL, err, sizeof(err));
    res->client_cpu_ns = sophon__thread_cpu_ns() - t0;
    if (h.stage == SOPHON_WIRE_CROP || (h.format == SOPHON_FORMAT_U8 && p.format != h.format))
        res->client_model_s = client_model(l, s->index, res->got_stage);
    if (r < 0) {
        res->err = r;
        say(l, "%s: cannot finish the OSD's %s (%s): %s", rec->name,
            sophon_stage_name(res->got_stage), strerror(-r), err);
    }
}

/* Whether the object an offloaded attempt prepared differs from the one profiled: its size, or
 * its mtime where the index has it (the stat ran in the same operation as the exec). */
static int object_changed(const struct sophon_loader *l, const struct slot *s,
                          const struct sophon_record *rec)
{
    if (s->st_rval < 0)
        return 0;
    return s->st_size != rec->stored_bytes || (l->mtimes != NULL && l->mtimes[s->index] != 0 &&
                                               (int64_t)s->st_mtime != l->mtimes[s->index]);
}

/* The sample's next attempt is a plain read of the stored object, prepared here, at once. */
static void go_local(struct slot *s, struct result *res)
{
    s->stage = SOPHON_STAGE_STORED;
    s->attempts = 0;
    s->not_before = 0;
    res->what = RETRY;
}

/* Decides what to do with one completed attempt. */
static void process(struct sophon_loader *l, struct slot *s, uint8_t *out, struct result *res)
{
    const struct sophon_record *rec = record(l, s->index);
    int r = s->rc;
    memset(res, 0, sizeof(*res));
    res->what = DONE;
    /* An object rewritten since it was profiled: its box may have been drawn for another image,
     * and the OSD may have refused it as outside that image (-EINVAL, for a request this client
     * validated). Prepared here, with the geometry of the image stored now. */
    if (s->stage != SOPHON_STAGE_STORED &&
        (r == -EINVAL || (r >= 0 && object_changed(l, s, rec)))) {
        say(l,
            "%s: rewritten since it was profiled, prepared here (sophon profile updates its "
            "record)",
            rec->name);
        go_local(s, res);
        return;
    }
    if (r >= 0) {
        if (s->stage == SOPHON_STAGE_STORED)
            finish_stored(l, s, out, res);
        else
            finish_offloaded(l, s, out, res);
        return;
    }
    if (s->stage != SOPHON_STAGE_STORED && class_unusable(r)) {
        /* No class, or a key that may not call it: this and every later sample go local. */
        res->class_missing = 1;
        go_local(s, res);
        return;
    }
    if (s->stage != SOPHON_STAGE_STORED && declined(r)) {
        /* Prepared here from the stored object, at once: the OSD said so without working. A
         * -E2BIG the local limits share comes back from the local path as the sample's. */
        res->declined = 1;
        go_local(s, res);
        return;
    }
    if (transient(r)) {
        if (s->attempts < l->o.retries) {
            double delay = l->o.backoff_ms / 1e3 * ldexp(1.0, (int)s->attempts);
            s->attempts++;
            s->not_before = now_s() + fmin(delay, BACKOFF_MAX_S);
            res->what = RETRY;
            res->retried = 1;
            say(l, "%s: %s, retry %u of %u in %.2f s", rec->name, strerror(-r), s->attempts,
                l->o.retries, fmin(delay, BACKOFF_MAX_S));
            return;
        }
        if (s->stage != SOPHON_STAGE_STORED) {
            /* The OSD did not answer in time however often asked: read and prepare here. */
            say(l, "%s: %s after %u retries, preparing it here", rec->name, strerror(-r),
                s->attempts);
            go_local(s, res);
            return;
        }
    }
    /* Missing, corrupt or refused, or unreachable however often asked: reported, not lost. */
    res->err = r;
    say(l, "%s: failed: %s (%d)", rec->name, strerror(-r), r);
}

static void apply(struct sophon_loader *l, struct slot *s, const struct result *res)
{
    struct sophon_loader_stats *st = &l->st;
    st->retries += (uint64_t)res->retried;
    s->retries += (unsigned)res->retried;
    st->declined += (uint64_t)res->declined;
    if (res->class_missing && l->class_ok) {
        l->class_ok = 0;
        st->class_available = 0;
    }
    if (!l->running) {
        /* An abandoned epoch: nothing waits for this sample any more. */
        s->state = SLOT_IDLE;
        return;
    }
    if (res->what == RETRY) {
        s->state = SLOT_RETRY;
        s->next = l->retry;
        l->retry = s;
        pthread_cond_signal(&l->cv_disp);
        return;
    }
    struct batchbuf *b = &l->bufs[(s->pos / l->o.batch_size) % l->nbufs];
    size_t row = (size_t)(s->pos % l->o.batch_size);
    b->errors[row] = res->err;
    b->indices[row] = s->index;
    b->labels[row] = l->ds.labels[s->index];
    b->names[row] = record(l, s->index)->name;
    b->done++;
    if (res->err < 0) {
        b->failed++;
        st->failed++;
    } else {
        st->samples++;
    }
    /* Planned in the OSD, prepared here: the class was unusable or the OSD did not answer. */
    if (s->demoted)
        st->demoted++;
    else if (s->planned != SOPHON_STAGE_STORED && s->stage == SOPHON_STAGE_STORED)
        st->fallbacks++;
    st->bytes_received += res->bytes;
    if (res->bytes > 0) {
        if (res->got_stage == SOPHON_STAGE_CROP) {
            st->crop_bytes += res->bytes;
            st->crop_samples++;
        } else {
            st->bytes_by_stage[res->got_stage] += res->bytes;
            st->samples_by_stage[res->got_stage]++;
        }
        if (res->got_stage != SOPHON_STAGE_STORED)
            st->offloaded++;
    }
    st->osd_cpu_ns += res->osd_cpu_ns;
    st->client_cpu_ns += res->client_cpu_ns;
    if (res->osd_cpu_ns > 0) {
        double meas_s = (double)res->osd_cpu_ns / 1e9, model_s = res->storage_model_s;
        if (s->stage == SOPHON_STAGE_CROP) {
            l->crop_model_s += model_s;
            l->crop_meas_s += meas_s;
            /* The object's own against the figure the plan gave it: its cost relative to the
             * pipeline's model, the same for every stage of it. */
            model_s *= crop_factor(l);
        } else {
            l->storage_model_s += model_s;
            l->storage_meas_s += meas_s;
        }
        if (model_s > 0) {
            double r = meas_s / model_s;
            double *o = &l->obj_ratio[s->index];
            *o = *o > 0 ? (*o + r) / 2 : r;
        }
    }
    if (res->client_model_s > 0 && res->client_cpu_ns > 0) {
        l->client_model_s += res->client_model_s;
        l->client_meas_s += (double)res->client_cpu_ns / 1e9;
    }
    s->t_ready = now_s() - l->t0;
    s->got_stage = res->bytes > 0 ? res->got_stage : SOPHON_STAGE_STORED;
    s->err = res->err;
    s->got_bytes = res->bytes;
    s->osd_cpu_ns = res->osd_cpu_ns;
    s->client_cpu_ns = res->client_cpu_ns;
    s->state = SLOT_DONE;
}

static void *worker_main(void *arg)
{
    struct sophon_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && l->work_head == NULL)
            pthread_cond_wait(&l->cv_work, &l->mu);
        if (l->stop)
            break;
        struct slot *s = l->work_head;
        l->work_head = s->next;
        if (l->work_head == NULL)
            l->work_tail = NULL;
        s->state = SLOT_WORKING;
        l->busy++;
        uint8_t *out = l->bufs[(s->pos / l->o.batch_size) % l->nbufs].data +
                       (size_t)(s->pos % l->o.batch_size) * l->sample_bytes;
        pthread_mutex_unlock(&l->mu);

        struct result res;
        process(l, s, out, &res);
        release_attempt(s);
        if (res.what == DONE && res.err < 0)
            memset(out, 0, l->sample_bytes);

        pthread_mutex_lock(&l->mu);
        if (res.class_missing && !l->class_warned) {
            l->class_warned = 1;
            pthread_mutex_unlock(&l->mu);
            say(l,
                "warning: the OSDs cannot prepare samples for this client (%s from "
                "sophon.prep on %s: %s); preparing every sample here",
                strerror(-s->rc), record(l, s->index)->name,
                s->rc == -EPERM ? "the key may not call classes (osd caps need 'x')"
                                : "the sophon class is not loaded in the OSDs");
            pthread_mutex_lock(&l->mu);
        }
        l->busy--;
        apply(l, s, &res);
        pthread_cond_broadcast(&l->cv_done);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- the API --------------------------------------------------------------------------------- */

static int parse_policy(const char *name)
{
    return name == NULL ? SOPHON_POLICY_SELECTIVE : sophon_policy_from_name(name);
}

/* Mutexes and condition variables, first thing after allocation: say() needs log_mu. The
 * dispatcher's timed waits are on the monotonic clock. */
static void init_sync(struct sophon_loader *l)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->log_mu, NULL);
    pthread_cond_init(&l->cv_disp, &ca);
    pthread_cond_init(&l->cv_work, NULL);
    pthread_cond_init(&l->cv_done, NULL);
    pthread_condattr_destroy(&ca);
}

/* Everything the threads need is allocated before the first starts: a thread that could not get
 * its memory would leave sophon_loader_next waiting for samples nobody issues. */
static int start_threads(struct sophon_loader *l)
{
    l->threads_started = 1;
    l->workers = calloc(l->o.threads, sizeof(*l->workers));
    l->to_issue = calloc(l->window_cap, sizeof(*l->to_issue));
    if (l->workers == NULL || l->to_issue == NULL)
        return -ENOMEM;
    if (pthread_create(&l->dispatcher, NULL, dispatcher_main, l) != 0)
        return -EAGAIN;
    l->threads_started = 2;
    for (; l->nworkers < l->o.threads; l->nworkers++)
        if (pthread_create(&l->workers[l->nworkers], NULL, worker_main, l) != 0)
            return -EAGAIN;
    return 0;
}

/*
 * The wire version the class speaks, asked once of the OSD holding the first object (a cluster
 * runs one class version but while it is upgraded). If the class cannot be asked (no class, a
 * key without class caps), the first prep call finds that out again and says so; until then
 * the latest is assumed.
 */
static void ask_wire(struct sophon_loader *l)
{
    uint16_t w;

    l->wire = SOPHON_WIRE_LATEST;
    if (sophon_records_count(l->ds.records) > 0 &&
        sophon__class_wire(&w, l->io, record(l, 0)->name) == 0) {
        l->wire = w;
        l->class_answered = 1;
    }
    if (l->o.transform == SOPHON_TRANSFORM_VAL && l->wire < SOPHON_WIRE_V2)
        say(l,
            "warning: the OSDs' sophon class speaks wire format %u, which cannot carry the "
            "validation transform: every sample is prepared here from the stored object; "
            "deploy this sophon version (wire format %u) on the OSDs to offload it",
            (unsigned)l->wire, (unsigned)SOPHON_WIRE_LATEST);
}

/* The link's measurement at open: at most this many reads, bytes read and seconds, over the
 * dataset again and again. Once over a spread of 96 objects (12 MB of the photos, 0.2 s at 500
 * Mbit/s, two or three of a capped cgroup's 100 ms quota periods) it read a 500 Mbit/s link as
 * 380 and 526-529 in four runs of one session; as long as the bytes or the seconds allow, the
 * ends of the measurement weigh less. */
#define MEASURE_READS 4096
#define MEASURE_BYTES (48u << 20)
#define MEASURE_S     2.0
/* It reads the objects from this quantile of the dataset's sizes up (those up to MEASURE_LINK_MAX
 * bytes). A read costs the OSDs CPU whatever its size (about 0.4 ms here): under a tight cap
 * they serve a few hundred reads a second, and reads of every size measured that, not the link
 * (the photos' objects under 8 MB, 105 KB on average, at 0.1 cores: a 500 Mbit/s link read as
 * 284-291; those from the 90th percentile up, 419 KB on average: 482-484). The planner then
 * counted the reads' CPU and a link they had slowed down. */
#define MEASURE_LINK_QUANTILE 0.9
#define MEASURE_LINK_MAX      (8u << 20)
/* The OSDs' CPU: preparations for MEASURE_OSD_S, over the dataset's objects again and again,
 * timed from MEASURE_OSD_WARM_S in: a cgroup's quota (cpu.max, cfs_quota_us) is given per period
 * of 100 ms, and a group idle until then may run a whole period's quota in its first moments, so
 * that a measurement of a few periods reads a cap of 0.5 cores as 0.55-0.75. Timed over 1.25 s
 * of steady work, a period's worth is at most 8% of it, and the ends' errors mostly cancel. */
#define MEASURE_OSD_S      1.5
#define MEASURE_OSD_WARM_S 0.25
#define MEASURE_OSD_OPS    4096
/* Operations in flight while measuring. */
#define MEASURE_DEPTH 16
/* A measuring prep: RandomResizedCrop's box of a sample, decoded in full, resized to 8 x 8, so
 * that its response (248 bytes) costs the link nothing. */
#define MEASURE_SIDE 8u

/* One operation of a measurement: its completion, the buffer it reads into, and when it
 * completed (now_s(), set by measure_completed in librados' thread). */
struct measure_op {
    rados_completion_t c;
    char *buf;
    size_t cap;
    double done_s;
};

/* The completion's callback: when the operation completed, not when measure() came to it. The
 * operations complete out of order (each OSD's connection sends its responses in turn, the
 * connections share the link), and measure() waits for them in order: timed as it came to them,
 * the first read's completion could be late by the others', all counted after it (over three
 * OSDs and the OI-like dataset's larger objects a 50 Mbit/s link read as 55-97 Mbit/s, now
 * 48.2-48.6; 100 Mbit/s as 106-110, now 96; 500 as 557-595, now 477-478). */
static void measure_completed(rados_completion_t c, void *arg)
{
    double t = now_s();
    (void)c;
    __atomic_store(&((struct measure_op *)arg)->done_s, &t, __ATOMIC_RELEASE);
}

static int by_time(const void *a, const void *b)
{
    double x = ((const struct sophon__xfer *)a)->t, y = ((const struct sophon__xfer *)b)->t;
    return (x > y) - (x < y);
}

/* Starts the measuring operation of record `index` into op (op->c created): 0, or < 0 to skip
 * the record. Then, when it completed with rc, what it measured (bytes, CPU ns), 0 for nothing. */
typedef int (*measure_start_fn)(struct sophon_loader *l, size_t index, struct measure_op *op);
typedef uint64_t (*measure_done_fn)(const struct measure_op *op, int rc);

/* How long a measurement runs: at most `ops` operations, `bytes` (what start() puts in op->cap)
 * and `seconds`; `wrap`: over the dataset again when it ends, else once over it (a spread of
 * `ops` records). warm(l), when given, is called once `warm_s` in, and only what completes after
 * it counts. */
struct measure_limits {
    size_t ops;
    uint64_t bytes;
    double seconds;
    int wrap;
    void (*warm)(struct sophon_loader *l);
    double warm_s;
};

/*
 * Runs operations on records spread over the dataset, MEASURE_DEPTH in flight, within *lim;
 * returns the rate of what they measured (estimate.h: per second, 0 when it cannot tell), its sum
 * in *total and the operations that measured something in *count.
 */
static double measure(struct sophon_loader *l, measure_start_fn start, measure_done_fn done,
                      const struct measure_limits *lim, uint64_t *total, size_t *count)
{
    size_t n = sophon_records_count(l->ds.records);
    struct measure_op op[MEASURE_DEPTH];
    size_t head = 0, tail = 0, m = 0, next = 0, skipped = 0, step = n / lim->ops + 1;
    uint64_t issued = 0;
    int warm = lim->warm == NULL;
    double warm_t = 0;
    struct sophon__xfer *x = malloc(lim->ops * sizeof(*x));
    *total = 0;
    *count = 0;
    if (x == NULL || n == 0) {
        free(x);
        return 0;
    }
    double t0 = now_s();
    for (;;) {
        /* skipped: records start() declined in a row; a wrapping measurement stops when every
         * one has. */
        while (tail - head < MEASURE_DEPTH && (lim->wrap || next < n) && skipped < n &&
               tail < lim->ops && issued < lim->bytes && now_s() - t0 < lim->seconds) {
            struct measure_op *o = &op[tail % MEASURE_DEPTH];
            size_t i = next % n;
            next += step;
            *o = (struct measure_op){0};
            if (rados_aio_create_completion2(o, measure_completed, &o->c) < 0)
                break;
            if (start(l, i, o) < 0) {
                rados_aio_release(o->c);
                free(o->buf);
                skipped++;
                continue;
            }
            skipped = 0;
            issued += o->cap;
            tail++;
        }
        if (head == tail)
            break;
        struct measure_op *o = &op[head % MEASURE_DEPTH];
        rados_aio_wait_for_complete_and_cb(o->c);
        uint64_t v = done(o, rados_aio_get_return_value(o->c));
        double t, now = now_s();
        __atomic_load(&o->done_s, &t, __ATOMIC_ACQUIRE);
        if (!warm && now - t0 >= lim->warm_s) {
            lim->warm(l);
            warm = 1;
            warm_t = now_s(); /* after warm(), which asks the OSDs */
            m = 0;
        }
        if (v > 0 && m < lim->ops && t >= warm_t)
            x[m++] = (struct sophon__xfer){t, v};
        rados_aio_release(o->c);
        free(o->buf);
        head++;
    }
    for (size_t i = 0; i < m; i++)
        *total += x[i].bytes;
    *count = m;
    qsort(x, m, sizeof(*x), by_time);
    double rate = sophon__rate_estimate(x, m);
    free(x);
    return rate;
}

/* The link: the larger objects read as stored (little OSD CPU for their bytes, so the link
 * limits them). */
static int start_read(struct sophon_loader *l, size_t index, struct measure_op *o)
{
    const struct sophon_record *rec = record(l, index);
    if (rec->stored_bytes == 0 || rec->stored_bytes > MEASURE_LINK_MAX ||
        rec->stored_bytes < l->link_read_min)
        return -1;
    o->cap = rec->stored_bytes;
    o->buf = malloc(o->cap);
    if (o->buf == NULL)
        return -1;
    return rados_aio_read(l->io, rec->name, o->c, o->buf, o->cap, 0) < 0 ? -1 : 0;
}

static uint64_t done_read(const struct measure_op *o, int rc)
{
    (void)o;
    return rc > 0 ? (uint64_t)rc : 0;
}

/* The OSDs' CPU: preps with tiny outputs, so that the OSDs' cores (or their cgroup's quota)
 * limit them; what their responses report. */
static int start_prep(struct sophon_loader *l, size_t index, struct measure_op *o)
{
    const struct sophon_record *rec = record(l, index);
    struct sophon_prep_params p = SOPHON_PREP_PARAMS_INIT;
    uint8_t req[SOPHON_REQUEST_LEN];
    if (geometry_unknown(rec) || rec->stage[SOPHON_STAGE_U8].bytes == 0 ||
        sophon_draw_crop(&p, 0x5eed, 0, index, rec->width, rec->height, &l->crop) < 0)
        return -1;
    p.out_w = p.out_h = MEASURE_SIDE;
    int len = sophon_request_encode_as(req, sizeof(req), &p, l->wire);
    o->cap = 512;
    o->buf = malloc(o->cap);
    if (len < 0 || o->buf == NULL)
        return -1;
    return rados_aio_exec(l->io, rec->name, o->c, "sophon", "prep", (const char *)req, (size_t)len,
                          o->buf, o->cap) < 0
               ? -1
               : 0;
}

static uint64_t done_prep(const struct measure_op *o, int rc)
{
    struct sophon_response h;
    const uint8_t *payload;
    if (rc <= 0 || sophon_response_decode(&h, &payload, (const uint8_t *)o->buf, (size_t)rc) < 0)
        return 0;
    return h.cpu_ns;
}

/* The link's bandwidth, measured: l->measured_Bps (0 when it could not tell), l->measure_bytes. */
static void measure_link(struct sophon_loader *l)
{
    size_t count;
    static const struct measure_limits lim = {MEASURE_READS, MEASURE_BYTES, MEASURE_S, 1, NULL, 0};
    l->measured_Bps = measure(l, start_read, done_read, &lim, &l->measure_bytes, &count);
}

/* Starts the OSD processes' interval again (measure_osds, once warm). */
static void restart_osds(struct sophon_loader *l)
{
    uint64_t ns;
    double span;
    (void)sophon__osds_sample(&l->osds, l->io, &ns, &span);
}

/*
 * The OSDs' CPU available for this client's preparation, measured with MEASURE_DEPTH decodes at
 * once for MEASURE_OSD_S: the CPU of the OSD processes (class 0.3 and later) over the time from
 * MEASURE_OSD_WARM_S in, else the CPU their responses report per second. l->measured_cores, 0
 * when it could not tell (no class, too few answers); and from the processes, l->osd_op_s. Right
 * after find_osds, whose answers start the processes' interval until the warm-up restarts it.
 */
static void measure_osds(struct sophon_loader *l)
{
    uint64_t ns, osd_ns;
    size_t count;
    double span;
    const struct measure_limits lim = {
        MEASURE_OSD_OPS,   UINT64_MAX, MEASURE_OSD_S, 1, l->osds.n > 0 ? restart_osds : NULL,
        MEASURE_OSD_WARM_S};
    l->measured_cores = measure(l, start_prep, done_prep, &lim, &ns, &count) / 1e9;
    if (l->osds.n == 0 || sophon__osds_sample(&l->osds, l->io, &osd_ns, &span) < 0 || span <= 0)
        return;
    /* What the processes spent over the measurement, the preparations and everything around
     * them, is what the OSDs had; this rank's share of it, while the other ranks measure too.
     * Their CPU per operation beyond the preparations, until the epochs measure it. */
    double cores = (double)osd_ns / 1e9 / span / l->o.world;
    double op_s =
        sophon__osd_op_estimate((double)osd_ns / 1e9, (double)ns / 1e9, count, l->o.world);
    if (cores > 0)
        l->measured_cores = cores;
    /* Not where it comes out none: under a tight cap a preparation runs for seconds, most of the
     * CPU of those done in the interval was spent before it, and the processes' CPU less theirs
     * is noise (at 0.1 cores it came out 0, and the first epoch, planned with free reads, ran
     * 3.2 s against a modelled 2.0 s); the built-in figure until the epochs measure it. */
    if (op_s > 0) {
        l->osd_op_s = op_s;
        l->osd_op_measured = 1;
    }
}

/* How many objects the loader asks to find the OSD processes holding its dataset (osd_cpu.h). */
#define FIND_OSDS 48

/* Finds the OSD processes holding objects spread over the dataset: l->osds (none when the
 * class cannot tell, before 0.3; the plans then count SOPHON_SEL_OSD_OP_S an operation). */
static void find_osds(struct sophon_loader *l)
{
    const char *oids[FIND_OSDS];
    size_t n = sophon_records_count(l->ds.records), k = 0;
    for (size_t i = 0; i < n && k < FIND_OSDS; i += n / FIND_OSDS + 1)
        oids[k++] = record(l, i)->name;
    int r = sophon__osds_find(&l->osds, l->io, oids, k);
    /* Without a class that answers (none in the OSDs, a key without class caps) the loader
     * says so once, when it first prepares a sample there. */
    if (r >= 0 || !l->class_answered)
        return;
    if (r == -EOPNOTSUPP)
        say(l,
            "note: the OSDs' sophon class does not report their CPU (before 0.3): the plans "
            "count %.2f ms an operation beyond the preparations; deploy this sophon version "
            "on the OSDs for the measured figure",
            SOPHON_SEL_OSD_OP_S * 1e3);
    else if (r < 0)
        say(l,
            "warning: could not ask the OSDs for their CPU (%s): the plans count %.2f ms an "
            "operation beyond the preparations",
            strerror(-r), SOPHON_SEL_OSD_OP_S * 1e3);
}

/* Says when the pool has few placement groups for its OSDs (pool_pgs.h): a preparation holds
 * its PG, and the loader's reads of other objects in it wait for all of it. Quiet when the
 * monitors cannot be asked (a key without mon 'allow r'): it is advice. */
static void check_pgs(struct sophon_loader *l, const char *pool)
{
    unsigned pg_num = 0, osds = 0, want = 0;
    if (sophon__pool_pgs(l->cluster, pool, &pg_num, &osds) < 0 ||
        !sophon__pgs_too_few(pg_num, osds, &want))
        return;
    say(l,
        "note: pool %s has %u placement groups for the cluster's %u OSDs (%.1f an OSD); an OSD "
        "preparing a sample holds its placement group, and reads of other objects in it wait "
        "for the whole preparation: %u or more spread that thinner (ceph osd pool set %s pg_num "
        "%u; README, On a real cluster)",
        pool, pg_num, osds, (double)pg_num / osds, want, pool, want);
}

/* Starts the epoch's interval of the OSD processes' CPU (mu not held, nothing in flight):
 * l->osd_interval 1 when each answered (a process that changed starts again from its answer,
 * osd_cpu.h), 0 when there is nothing to count. */
static void osd_interval_start(struct sophon_loader *l)
{
    uint64_t ns;
    double span;
    int r = l->osds.n > 0 ? sophon__osds_sample(&l->osds, l->io, &ns, &span) : -ENOENT;
    l->osd_interval = r == 0 || r == -ESTALE;
}

/*
 * Ends it after the epoch's last batch (mu not held): this rank's share of the processes' CPU
 * in st.osd_process_ns, and the epoch in the sums the next plans take the CPU per operation from.
 */
static void osd_interval_end(struct sophon_loader *l)
{
    uint64_t ns;
    double span;
    if (!l->osd_interval)
        return;
    l->osd_interval = 0;
    if (sophon__osds_sample(&l->osds, l->io, &ns, &span) < 0)
        return;
    pthread_mutex_lock(&l->mu);
    l->st.osd_process_ns = ns / l->o.world;
    l->op_osd_s += (double)ns / 1e9;
    l->op_class_s += (double)l->st.osd_cpu_ns / 1e9;
    l->op_count += l->epoch_ops;
    pthread_mutex_unlock(&l->mu);
}

/* Ends the epoch's interval of the messenger threads' CPU after its last batch (mu not held):
 * st.client_msgr_ns, and the epoch in the sums the next plans take the client's CPU per byte
 * from. The threads are the process's: another librados client busy in it meanwhile (a second
 * loader's) counts too. */
static void msgr_interval_end(struct sophon_loader *l)
{
    uint64_t ns, ns0;
    pthread_mutex_lock(&l->mu);
    int ok = l->msgr_ok;
    l->msgr_ok = 0;
    ns0 = l->msgr_ns0;
    pthread_mutex_unlock(&l->mu);
    if (!ok || sophon__threads_cpu_ns(SOPHON__MSGR_THREADS, &ns) < 0 || ns < ns0)
        return;
    pthread_mutex_lock(&l->mu);
    l->st.client_msgr_ns = ns - ns0;
    l->msgr_s += (double)(ns - ns0) / 1e9;
    l->msgr_bytes += l->st.bytes_received;
    pthread_mutex_unlock(&l->mu);
}

/*
 * The stages the plan may choose: the options' (all by default), without the crop stage where
 * the class does not make crops (wire format 3).
 */
static void restrict_stages(struct sophon_loader *l)
{
    l->stages = SOPHON_STAGES_ALL;
    if (l->o.stages != NULL)
        sophon_stages_parse(&l->stages, l->o.stages, NULL, 0); /* checked by resolve */
    if (l->wire < SOPHON_WIRE_V3)
        l->stages &= ~(1u << SOPHON_STAGE_CROP);
    sophon_records_restrict(l->ds.records, l->stages);
}

/* The ring's default depth: the options' prefetch, else enough for the window and one more. */
static unsigned default_nbufs(const struct sophon_loader *l)
{
    unsigned b = l->o.batch_size;
    return 1 + (l->o.prefetch > 0 ? l->o.prefetch : 1 + (l->window + b - 1) / b);
}

/*
 * Memory for n bytes of samples, its pages faulted in now. The workers write each sample into
 * the ring, and a page first written there is faulted in and zeroed by the kernel on the
 * worker's CPU: the f32 ring of the default window at 500 Mbit/s is 10 batches, 193 MB, so the
 * first epoch wrote nothing but fresh pages, and its workers' CPU came out 14% over the second
 * epoch's (the main job's photos, `sophon load --trace`'s client CPU: 0.929 s against 0.815 s
 * for the same photos, a third of the difference these pages, BENCHMARKS.md). The loader then took
 * the client for slower than it is and planned every later epoch for that. Faulted in here, in
 * sophon_loader_open or where an epoch deepens the ring (before it starts), the cost is paid once
 * and outside the epoch.
 */
static void *alloc_faulted(size_t n)
{
    unsigned char *p = malloc(n);
    if (p == NULL)
        return NULL;
    /* Volatile: a plain memset of zeros after malloc may become calloc, which skips the pages. */
    volatile unsigned char *v = p;
    for (size_t i = 0; i < n; i += 4096)
        v[i] = 0;
    if (n > 0)
        v[n - 1] = 0;
    return p;
}

/* Makes the ring nbufs batches deep, growing its buffers where it has fewer (mu held or no
 * threads; nothing of an epoch in flight). Returns 0 or -ENOMEM (the ring as it was). */
static int ring_resize(struct sophon_loader *l, unsigned nbufs)
{
    size_t b = l->o.batch_size;
    if (nbufs > l->nbufs_cap) {
        struct slot *slots = calloc((size_t)nbufs * b, sizeof(*slots));
        struct batchbuf *bufs = realloc(l->bufs, nbufs * sizeof(*bufs));
        if (bufs != NULL)
            l->bufs = bufs;
        if (slots == NULL || bufs == NULL) {
            free(slots);
            return -ENOMEM;
        }
        free(l->slots);
        l->slots = slots;
        for (unsigned i = l->nbufs_cap; i < nbufs; i++) {
            struct batchbuf *bb = &l->bufs[i];
            memset(bb, 0, sizeof(*bb));
            l->nbufs_cap = i + 1;
            bb->data = alloc_faulted(b * l->sample_bytes);
            bb->labels = calloc(b, sizeof(*bb->labels));
            bb->names = calloc(b, sizeof(*bb->names));
            bb->indices = calloc(b, sizeof(*bb->indices));
            bb->errors = calloc(b, sizeof(*bb->errors));
            if (bb->data == NULL || bb->labels == NULL || bb->names == NULL ||
                bb->indices == NULL || bb->errors == NULL)
                return -ENOMEM; /* freed at close: nbufs_cap counts it */
        }
    }
    l->nbufs = nbufs;
    l->nslots = (size_t)nbufs * b;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The dataset's objects at quantiles q[0..k) (each 0..1) of their sizes as stored, bytes, into
 * out[] (one sort for all); 0 where it has none or no memory to tell. */
static void object_bytes_at(const struct sophon_loader *l, const double *q, double *out, size_t k)
{
    size_t n = sophon_records_count(l->ds.records);
    uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
    for (size_t j = 0; j < k; j++)
        out[j] = 0;
    if (v == NULL || n == 0) {
        free(v);
        return;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = record(l, i)->stored_bytes;
    qsort(v, n, sizeof(*v), cmp_u64);
    for (size_t j = 0; j < k; j++) {
        size_t i = (size_t)(q[j] * (double)n);
        out[j] = (double)v[i < n ? i : n - 1];
    }
    free(v);
}

static int alloc_ring(struct sophon_loader *l)
{
    l->obj_ratio = calloc(sophon_records_count(l->ds.records) + 1, sizeof(*l->obj_ratio));
    l->box_factor = calloc(sophon_records_count(l->ds.records) + 1, sizeof(*l->box_factor));
    l->ctl_cpu = calloc(l->window_cap, sizeof(*l->ctl_cpu));
    if (l->obj_ratio == NULL || l->box_factor == NULL || l->ctl_cpu == NULL)
        return -ENOMEM;
    return ring_resize(l, default_nbufs(l));
}

/*
 * The ring's depth for this epoch when the options leave it to the loader (prefetch 0): deep
 * enough that the link has the ring to read while the longest preparation planned in this shard
 * runs (sophon__control_ring), within SOPHON_RING_MAX_BYTES of samples; never below the default.
 * At 0.15 OSD cores and 100 Mbit/s a 16 MB photo's preparation took 1.7 s, the default ring 0.6 s
 * of link.
 */
static unsigned epoch_nbufs(const struct sophon_loader *l, const struct sophon_plan *plan,
                            const uint64_t *order, size_t m)
{
    unsigned dflt = default_nbufs(l);
    size_t b = l->o.batch_size;
    if (l->o.prefetch > 0 || m == 0)
        return dflt;
    double longest = 0, bytes = 0;
    for (size_t k = 0; k < m; k++) {
        bytes += (double)plan->bytes[order[k]];
        if (plan->stage[order[k]] != SOPHON_STAGE_STORED)
            longest = fmax(longest, plan->storage_cpu_s[order[k]]);
    }
    double most = floor((double)SOPHON_RING_MAX_BYTES / ((double)b * (double)l->sample_bytes));
    return sophon__control_ring(longest / osd_speed(l), l->ctl_osd_cores,
                                bytes / (double)m * (double)b, l->ctl_rate_Bps, dflt,
                                most > dflt ? (unsigned)most : dflt);
}

static int connect_pool(struct sophon_loader *l, const char *conf, const char *client_id,
                        const char *pool)
{
    char timeout[32];
    int r = rados_create(&l->cluster, client_id != NULL ? client_id : "admin");
    if (r < 0) {
        l->cluster = NULL;
        return r;
    }
    rados_conf_set(l->cluster, "client_mount_timeout", "30");
    r = rados_conf_read_file(l->cluster, conf);
    if (r == 0)
        r = rados_conf_parse_env(l->cluster, NULL);
    if (r == 0 && l->o.keyring != NULL)
        r = rados_conf_set(l->cluster, "keyring", l->o.keyring);
    snprintf(timeout, sizeof(timeout), "%u", l->o.op_timeout_s);
    if (r == 0)
        r = rados_conf_set(l->cluster, "rados_osd_op_timeout", timeout);
    /* The monitors' too (check_pgs asks them), so that monitors without a quorum fail the
     * open rather than hold it. */
    if (r == 0)
        r = rados_conf_set(l->cluster, "rados_mon_op_timeout", timeout);
    if (r == 0)
        r = rados_connect(l->cluster);
    if (r < 0) {
        rados_shutdown(l->cluster);
        l->cluster = NULL;
        return r;
    }
    return rados_ioctx_create(l->cluster, pool, &l->io);
}

/* The mtime of each record's object when it was profiled, from the index's stamps (both lists
 * sorted by name). Without them (an index that has none, no memory) object_changed compares
 * sizes alone. */
static void read_mtimes(struct sophon_loader *l, const char *dataset)
{
    struct sophon_index_stamp *st = NULL;
    size_t n = 0, nrec = sophon_records_count(l->ds.records);

    if (sophon__index_stamps(l->io, dataset, &st, &n) < 0)
        return;
    l->mtimes = calloc(nrec ? nrec : 1, sizeof(*l->mtimes));
    for (size_t i = 0, k = 0; l->mtimes != NULL && i < nrec && k < n;) {
        int c = strcmp(sophon_records_get(l->ds.records, i)->name, st[k].name);
        if (c == 0)
            l->mtimes[i++] = st[k++].mtime;
        else if (c < 0)
            i++;
        else
            k++;
    }
    sophon__index_stamps_free(st, n);
}

int sophon_loader_open(sophon_loader **out, const char *conf, const char *client_id,
                       const char *pool, const char *dataset,
                       const struct sophon_loader_options *opts)
{
    struct sophon_loader_options o;
    char err[256] = "";
    int r;

    if (out == NULL || pool == NULL || dataset == NULL)
        return -EINVAL;
    r = sophon__loader_options_resolve(&o, opts);
    if (r < 0)
        return r;
    /* A version 1 caller's 0 meant "measure" too. */
    int measure_bw = opts == NULL || opts->bandwidth_Bps == SOPHON_BUDGET_MEASURE ||
                     (opts->version == 1 && opts->bandwidth_Bps == 0);
    int measure_cores = opts == NULL || opts->storage_cores == SOPHON_BUDGET_MEASURE ||
                        (opts->version == 1 && opts->storage_cores == 0);
    int policy = parse_policy(o.policy);

    struct sophon_loader *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return -ENOMEM;
    init_sync(l);
    l->o = o;
    l->policy = policy;
    l->class_ok = 1;
    l->sample_bytes =
        (size_t)o.size * o.size * 3 * (o.format == SOPHON_SAMPLE_F32 ? sizeof(float) : 1);
    l->crop = (struct sophon_crop_policy){o.scale[0], o.scale[1], o.ratio[0], o.ratio[1],
                                          o.transform == SOPHON_TRANSFORM_TRAIN ? 0.5 : 0.0};
    r = connect_pool(l, conf, client_id, pool);
    if (r < 0)
        goto fail;
    /* The objects where `sophon put` stored them: the recorded namespace where none was given. */
    r = sophon__dataset_use_namespace(l->io, dataset, l->o.nspace, err, sizeof(err));
    if (r == 0)
        r = sophon__dataset_read(&l->ds, l->io, dataset, err, sizeof(err));
    if (r < 0) {
        say(l, "dataset %s: %s", dataset, err[0] ? err : strerror(-r));
        goto fail;
    }
    /* The planner counts the bytes of this loader's samples (selector.h), and never offloads an
     * image the OSDs refuse for its size (sophon_config.h). */
    r = sophon_records_set_side(l->ds.records, o.size);
    if (r == 0 && sophon_records_limit_pixels(l->ds.records, SOPHON_OSD_MAX_PIXELS) < 0)
        r = -EINVAL;
    if (r < 0)
        goto fail;
    read_mtimes(l, dataset);
    /* The window the options give, or the one each epoch chooses (sophon__control_window). */
    l->window_cap = o.window > 0 ? o.window : SOPHON__WINDOW_MAX;
    l->window = o.window > 0 ? o.window : SOPHON__WINDOW_MIN;
    double at[2];
    object_bytes_at(l, (const double[]){0.5, MEASURE_LINK_QUANTILE}, at, 2);
    l->median_bytes = at[0];
    l->link_read_min = (uint64_t)fmin(at[1], MEASURE_LINK_MAX);
    /* The OSDs' CPU per operation as `sophon profile` measured it, else the built-in figure, until
     * the OSDs are measured (with budgets to measure, at open; else over the epochs). */
    l->osd_op_s = l->ds.osd_op_s > 0 ? l->ds.osd_op_s : SOPHON_SEL_OSD_OP_S;
    l->osd_op_measured = l->ds.osd_op_s > 0 ? 2 : 0;
    /* And the client's, until the epochs measure it. */
    l->client_byte_s = l->ds.client_byte_s > 0 ? l->ds.client_byte_s : SOPHON_SEL_CLIENT_BYTE_S;
    l->client_byte_measured = l->ds.client_byte_s > 0 ? 2 : 0;
    l->msgr_counted = sophon__msgr_on_client_cores(l->o.client_cores);
    /* The profile's speeds against the cost model until the epochs measure this client's and the
     * OSDs' own. */
    l->storage_speed = l->ds.storage_speed;
    l->client_speed = l->ds.client_speed;
    l->crop_speed = l->ds.crop_speed;
    l->crop_measured = l->ds.crop_speed > 0 ? 2 : 0;
    ask_wire(l);
    restrict_stages(l);
    /* The link first: the OSDs' measurement leaves a capped cgroup out of quota for the rest of
     * its period, which would stall the first reads. */
    if (measure_bw) {
        measure_link(l);
        if (l->measured_Bps > 0)
            l->o.bandwidth_Bps = l->measured_Bps;
        else
            say(l,
                "warning: could not measure the link (too few objects read); planning for %.0f "
                "Mbit/s: give --net (bandwidth_Bps) to plan for the real one",
                l->o.bandwidth_Bps * 8 / 1e6);
    }
    if (l->class_ok)
        find_osds(l);
    if (l->class_ok && policy != SOPHON_POLICY_NONE)
        check_pgs(l, pool);
    if (measure_cores && l->class_ok) {
        /* This rank's share of the OSDs, while the other ranks measure too: the job's is the
         * world's. */
        measure_osds(l);
        if (l->measured_cores > 0)
            l->o.storage_cores = l->measured_cores * l->o.world;
        else
            say(l,
                "warning: could not measure the OSDs' CPU (no answers from the sophon class); "
                "planning for %.1f OSD cores: give --storage-cores to plan for the real ones",
                l->o.storage_cores);
    }
    r = alloc_ring(l);
    if (r == 0)
        r = start_threads(l);
    if (r < 0)
        goto fail;
    *out = l;
    return 0;
fail:
    sophon_loader_close(l);
    return r;
}

/* Waits until nothing of the current epoch is in flight or queued (mu held). */
static void drain(struct sophon_loader *l)
{
    l->running = 0;
    while (l->inflight > 0 || l->busy > 0 || l->work_head != NULL) {
        /* Queued samples of an abandoned epoch still need their buffers released. */
        while (l->work_head != NULL) {
            struct slot *s = l->work_head;
            l->work_head = s->next;
            release_attempt(s);
            s->state = SLOT_IDLE;
        }
        l->work_tail = NULL;
        if (l->inflight > 0 || l->busy > 0)
            pthread_cond_wait(&l->cv_done, &l->mu);
    }
    l->retry = NULL;
}

/*
 * This rank's shard of the plan run through the loader's pipeline (simulate.h): in order, within
 * the window and the ring the epoch has, the rank's share of the OSDs' cores, its link and its
 * workers; each sample's CPU at the speeds measured. Negative where it cannot be simulated.
 */
static double simulated_epoch_s(const struct sophon_loader *l, const struct sophon_plan *plan,
                                const struct sophon_budget *job, const uint64_t *order, size_t m,
                                unsigned nbufs)
{
    struct sophon__sim_sample *s = malloc((m ? m : 1) * sizeof(*s));
    if (s == NULL)
        return -ENOMEM;
    double sspeed = job->storage_speed > 0 ? job->storage_speed : 1.0;
    double cspeed = client_speed(l);
    for (size_t k = 0; k < m; k++) {
        size_t i = order[k];
        /* Plain reads cost the OSDs CPU only where the budget counts it (plan.c). */
        int free_read = plan->stage[i] == SOPHON_STAGE_STORED && !(job->storage_cores > 0);
        s[k] = (struct sophon__sim_sample){
            .bytes = (double)plan->bytes[i],
            .osd_s = free_read ? 0 : plan->storage_cpu_s[i] / sspeed,
            .client_s = plan->client_cpu_s[i] / cspeed,
            .ahead = plan->stage[i] != SOPHON_STAGE_STORED,
            .conn = sophon__sim_conn(i),
        };
    }
    struct sophon__sim_params p = {
        .rate_Bps = job->bandwidth_Bps / l->o.world,
        .osd_cores = job->storage_cores / l->o.world,
        .client_cores = l->o.client_cores,
        .threads = l->o.threads,
        .batch = l->o.batch_size,
        .nbufs = nbufs,
    };
    sophon__sim_shape(&p, l->window, l->osds.n, l->o.world);
    double t = sophon__sim_epoch(s, m, &p);
    free(s);
    return t;
}

/*
 * The model's epoch for a rank's shard (order[0..m)) of the job's plan, with a ring of nbufs:
 * the busiest of the shard's bytes over the rank's link, its client CPU over the rank's cores,
 * the OSDs' time for the whole job's plan (all ranks run at once and share them) and the GPU's
 * time for the shard; or, if longer, the shard run through the loader's pipeline (simulate.h).
 */
static double shard_model_s(const struct sophon_loader *l, const struct sophon_plan *plan,
                            const struct sophon_budget *job, const uint64_t *order, size_t m,
                            unsigned nbufs)
{
    double bytes = 0, client_s = 0, gpu_s = 0, rank_client = job->client_cores / l->o.world;
    for (size_t k = 0; k < m; k++) {
        bytes += (double)plan->bytes[order[k]];
        client_s += plan->client_cpu_s[order[k]];
    }
    double net_s = bytes / (job->bandwidth_Bps / l->o.world);
    client_s = client_s == 0 ? 0 : rank_client > 0 ? client_s / rank_client : INFINITY;
    if (job->gpu_samples_per_s > 0)
        gpu_s = (double)m / job->gpu_samples_per_s;
    double busiest = fmax(fmax(net_s, plan->storage_s), fmax(client_s, gpu_s));
    double run_s = simulated_epoch_s(l, plan, job, order, m, nbufs);
    return run_s > busiest ? run_s : busiest;
}

/* The model's epoch for this rank's shard of the job's plan (shard_model_s), and the shard's
 * predicted bytes and offloaded samples into l->st. */
static double shard_epoch_s(struct sophon_loader *l, const struct sophon_plan *plan,
                            const struct sophon_budget *job, const uint64_t *order, size_t m)
{
    for (size_t k = 0; k < m; k++) {
        l->st.predicted_bytes += plan->bytes[order[k]];
        if (plan->stage[order[k]] == SOPHON_STAGE_CROP)
            l->st.predicted_crop_bytes += plan->bytes[order[k]];
        l->st.planned_offloaded += plan->stage[order[k]] != SOPHON_STAGE_STORED;
    }
    return shard_model_s(l, plan, job, order, m, l->nbufs);
}

/*
 * The records this epoch is planned with: the dataset's, each object's OSD CPU as measured
 * where it was (obj_ratio, unless no_adapt), the OSDs' CPU per operation
 * (l->osd_op_s, OSD seconds: times the storage speed, which the planner divides by), each
 * record's decodes for the box its sample gets this epoch (box_factor, the cost model's box,
 * its share and where its last row lies, against the expected one), and where the crop stage is
 * offered, each record's crop bytes for that box (the area model: the bytes the record expects for
 * a crop of SOPHON_SEL_CROP_SHARE of the image, scaled to this box's crop region). Every rank
 * computes the same figures from the same profile (no_adapt); what adapts, the speeds and
 * obj_ratio, is each rank's own measurement. l->seed, l->epoch and l->storage_speed are the
 * epoch's. Returns the set or NULL (no memory).
 */
static const sophon_records *epoch_records(struct sophon_loader *l)
{
    size_t n = sophon_records_count(l->ds.records);
    sophon_records_free(l->epoch_records);
    l->epoch_records = NULL;
    if (sophon_records_copy(&l->epoch_records, l->ds.records) < 0)
        return NULL;
    /* Objects measured before: their own CPU against the model's, relative to the mean speed. */
    for (size_t i = 0; i < n && !l->o.no_adapt; i++)
        if (l->obj_ratio[i] > 0)
            sophon_records_scale_storage(l->epoch_records, i, l->obj_ratio[i] * l->storage_speed);
    int crop = (l->stages & (1u << SOPHON_STAGE_CROP)) != 0;
    /* The crop stage at the OSDs' speed for it (the profile's or measured), not the pipeline's:
     * the same for every rank (no_adapt: the profile's). */
    if (crop && sophon_records_scale_stage(l->epoch_records, SOPHON_STAGE_CROP, crop_factor(l)) < 0)
        return NULL;
    if (sophon_records_add_osd_op(l->epoch_records, l->osd_op_s * l->storage_speed) < 0)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct sophon_record *rec = sophon_records_get(l->ds.records, i);
        struct sophon_prep_params p;
        l->box_factor[i] = 0;
        if (geometry_unknown(rec) || sample_params(l, i, rec->width, rec->height, &p) < 0)
            continue;
        double area = (double)rec->width * rec->height;
        l->box_factor[i] = sophon_cost_model_box_at_factor(
            rec, (double)p.box_w * p.box_h / area, (double)(p.box_y + p.box_h) / rec->height, NULL);
        sophon_records_scale_box(l->epoch_records, i, l->box_factor[i]);
        uint64_t expected = rec->stage[SOPHON_STAGE_CROP].bytes;
        uint32_t iw, ih, x, y, w, h;
        if (!crop || expected <= SOPHON_SEL_HEADER_BYTES)
            continue;
        sophon_prep_imcu(rec->subsampling, &iw, &ih);
        if (sophon_prep_crop_region(rec->width, rec->height, iw, ih, &p, &x, &y, &w, &h) < 0)
            continue;
        double payload = (double)(expected - SOPHON_SEL_HEADER_BYTES) * ((double)w * h / area) /
                         SOPHON_SEL_CROP_SHARE;
        sophon_records_set_crop_bytes(l->epoch_records, i,
                                      SOPHON_SEL_HEADER_BYTES + (uint64_t)fmax(1.0, payload));
    }
    return l->epoch_records;
}

/* The decode work of the crops of this shard's epoch (order, m) against the records'
 * expectation: the box factors epoch_records drew, each weighted by its image's modelled decode
 * (sophon_loader_stats.crop_work); 1 where no sample's geometry is known. */
static double crop_work(const struct sophon_loader *l, const uint64_t *order, size_t m)
{
    double drawn = 0, expected = 0;
    for (size_t k = 0; k < m; k++) {
        if (!(l->box_factor[order[k]] > 0))
            continue;
        double d = sophon_cost_model_decode_s(sophon_records_get(l->ds.records, order[k]), NULL);
        drawn += l->box_factor[order[k]] * d;
        expected += d;
    }
    return expected > 0 ? drawn / expected : 1.0;
}

/*
 * The job's epoch under plan as modelled: the slowest rank's shard (orders[r], ms[r] for each of
 * the world ranks; shard_model_s) with the ring each would size for it. Every rank computes the
 * same from the same speeds.
 */
static double job_model_s(const struct sophon_loader *l, const struct sophon_plan *plan,
                          const struct sophon_budget *job, uint64_t *const *orders,
                          const size_t *ms)
{
    double worst = 0;
    for (unsigned r = 0; r < l->o.world; r++) {
        unsigned nbufs = epoch_nbufs(l, plan, orders[r], ms[r]);
        worst = fmax(worst, shard_model_s(l, plan, job, orders[r], ms[r], nbufs));
    }
    return worst;
}

/*
 * Selective's plan is the planner's best for throughput: the busiest of the link, the OSDs and
 * the client. The loader's pipeline adds to that where a long preparation holds up the ring or
 * two resources are nearly equally busy (simulate.h), so the other policies' plans, and
 * selective's made as if one resource were smaller or larger (on half the OSD cores, leaning
 * less on the OSDs, whose preparations are the long ones; with a quarter more of the client or
 * the link, leaning on it), are run through the simulation too, and *plan becomes whichever
 * would end the job's epoch first, or one within a margin of it that takes less of both the
 * link and the OSDs (sophon__choose_lean; ties: the planner's). Then the last epoch's placement
 * (prev, NULL in the first) under this epoch's figures, kept as sophon__keep_placement says
 * (control.h). Plans that cannot be made or simulated are passed over.
 */
static void choose_plan(const struct sophon_loader *l, const sophon_records *set,
                        const struct sophon_budget *budget, uint64_t *const *orders,
                        const size_t *ms, const struct sophon_plan *prev, struct sophon_plan **plan)
{
    /* Candidates: the planner's plan first, then each static policy's, then the planner's with
     * one resource taken as smaller or larger than it is (LEANS): the planner balances the
     * link, the OSDs and the client, and a plan that leaves two of them slack runs closer to its
     * model. The one run is sophon__choose_lean's (control.h). */
    static const struct {
        double net, osd, client;
    } leans[] = {{1, 0.5, 1}, {1, 1, 1.25}, {1.25, 1, 1}};
    enum { LEANS = sizeof(leans) / sizeof(leans[0]), K = SOPHON_POLICY_COUNT + LEANS + 1 };
    struct sophon_plan *cand[K] = {*plan};
    double t[K], net[K], osd[K], best_static = INFINITY;
    int k = 1;
    t[0] = job_model_s(l, *plan, budget, orders, ms);
    net[0] = (*plan)->net_s;
    osd[0] = (*plan)->storage_s;
    for (int q = 0; q < SOPHON_POLICY_COUNT + LEANS; q++) {
        struct sophon_budget b = *budget;
        struct sophon_plan *alt = NULL, *made = NULL;
        if (q == SOPHON_POLICY_SELECTIVE)
            continue;
        if (q < SOPHON_POLICY_COUNT) {
            b.policy = q;
        } else {
            b.bandwidth_Bps *= leans[q - SOPHON_POLICY_COUNT].net;
            b.storage_cores *= leans[q - SOPHON_POLICY_COUNT].osd;
            b.client_cores *= leans[q - SOPHON_POLICY_COUNT].client;
        }
        if (sophon_plan_make(&made, set, &b) < 0)
            continue;
        /* Its figures under the true budget. */
        int r = sophon_plan_evaluate(&alt, set, budget, made->stage);
        sophon_plan_free(made);
        if (r < 0)
            continue;
        alt->policy = SOPHON_POLICY_SELECTIVE;
        alt->chosen_from = q < SOPHON_POLICY_COUNT ? q : SOPHON_POLICY_SELECTIVE;
        t[k] = job_model_s(l, alt, budget, orders, ms);
        net[k] = alt->net_s;
        osd[k] = alt->storage_s;
        if (q < SOPHON_POLICY_COUNT)
            best_static = fmin(best_static, t[k]);
        cand[k++] = alt;
    }
    int pick = sophon__choose_lean(t, net, osd, k, best_static);
    if (pick < 0)
        pick = 0;
    for (int i = 0; i < k; i++)
        if (i != pick)
            sophon_plan_free(cand[i]);
    *plan = cand[pick];
    double best = t[pick];
    struct sophon_plan *kept = NULL;
    if (prev != NULL && sophon_plan_evaluate(&kept, set, budget, prev->stage) == 0) {
        if (sophon__keep_placement(job_model_s(l, kept, budget, orders, ms), best, best_static)) {
            kept->policy = SOPHON_POLICY_SELECTIVE;
            kept->chosen_from = prev->chosen_from;
            sophon_plan_free(*plan);
            *plan = kept;
        } else {
            sophon_plan_free(kept);
        }
    }
}

/* choose_plan with every rank's shard of this epoch (this rank's is order[0..m)); without
 * memory for the others' orders the planner's plan stands. */
static void choose_for_job(const struct sophon_loader *l, const sophon_records *set,
                           const struct sophon_budget *budget, uint64_t *order, size_t m,
                           struct sophon_plan **plan)
{
    unsigned w = l->o.world;
    size_t n = sophon_records_count(set);
    uint64_t **orders = calloc(w, sizeof(*orders));
    size_t *ms = calloc(w, sizeof(*ms));
    int ok = orders != NULL && ms != NULL;
    for (unsigned r = 0; ok && r < w; r++) {
        if (r == l->o.rank) {
            orders[r] = order;
            ms[r] = m;
        } else {
            ok = (l->o.transform == SOPHON_TRANSFORM_VAL
                      ? sophon__epoch_order_sequential(&orders[r], &ms[r], n, r, w)
                      : sophon__epoch_order(&orders[r], &ms[r], n, l->seed, l->epoch, r, w)) >= 0;
        }
    }
    if (ok)
        choose_plan(l, set, budget, orders, ms, l->plan, plan);
    for (unsigned r = 0; orders != NULL && r < w; r++)
        if (r != l->o.rank)
            free(orders[r]);
    free(orders);
    free(ms);
}

int sophon_loader_epoch_start(sophon_loader *l, uint64_t seed, uint64_t epoch)
{
    uint64_t *order = NULL;
    size_t m = 0;
    struct sophon_plan *plan = NULL;
    if (l == NULL)
        return -EINVAL;
    size_t n = sophon_records_count(l->ds.records);
    int r = l->o.transform == SOPHON_TRANSFORM_VAL
                ? sophon__epoch_order_sequential(&order, &m, n, l->o.rank, l->o.world)
                : sophon__epoch_order(&order, &m, n, seed, epoch, l->o.rank, l->o.world);
    if (r < 0)
        return r;

    pthread_mutex_lock(&l->mu);
    drain(l);
    pthread_mutex_unlock(&l->mu);
    osd_interval_start(l);
    pthread_mutex_lock(&l->mu);
    /* Online profiling: the speeds measured so far replace the profile's, and the OSDs' CPU per
     * operation over the epochs so far the one measured at open (or the built-in one). */
    double op_s = sophon__osd_op_estimate(l->op_osd_s, l->op_class_s, l->op_count, l->o.world);
    if (!l->o.no_adapt && op_s >= 0) {
        l->osd_op_s = op_s;
        l->osd_op_measured = 1;
    }
    if (!l->o.no_adapt && l->storage_meas_s > 0 && l->storage_model_s > 0)
        l->storage_speed = l->storage_model_s / l->storage_meas_s;
    if (!l->o.no_adapt && l->crop_meas_s > 0 && l->crop_model_s > 0) {
        l->crop_speed = l->crop_model_s / l->crop_meas_s;
        l->crop_measured = 1;
    }
    if (!l->o.no_adapt && l->client_meas_s > 0 && l->client_model_s > 0)
        l->client_speed = l->client_model_s / l->client_meas_s;
    if (!l->o.no_adapt && l->msgr_bytes > 0 && l->msgr_s > 0) {
        l->client_byte_s = l->msgr_s / (double)l->msgr_bytes;
        l->client_byte_measured = 1;
    }
    l->msgr_ok = sophon__threads_cpu_ns(SOPHON__MSGR_THREADS, &l->msgr_ns0) == 0;
    /* One plan for the whole job, the same in every rank: each of the world ranks has its own
     * link and client cores (the options give one rank's), and all of them share the OSDs'
     * cores. Each rank then takes its shard of that plan. */
    struct sophon_budget budget = SOPHON_BUDGET_INIT;
    /* A link's rate given carries TCP/IP's headers too; a measured one is payload already. */
    budget.bandwidth_Bps =
        l->o.bandwidth_Bps * (l->measured_Bps > 0 ? 1.0 : SOPHON_SEL_LINK_PAYLOAD) * l->o.world;
    budget.storage_cores = l->o.storage_cores;
    budget.storage_speed = l->storage_speed;
    budget.client_cores = l->o.client_cores * l->client_speed * l->o.world;
    budget.client_byte_s = l->plan_client_byte_s =
        l->msgr_counted ? l->client_byte_s * l->client_speed : 0;
    budget.final_format = l->o.format; /* the same values (cross_checks.h) */
    budget.policy = l->policy;
    l->seed = seed;
    l->epoch = epoch;
    /* The controller's rates: this rank's link, its share of the job's OSD cores, its client
     * cores. It serves selective only: the other policies are placements fixed by their rule,
     * the references selective is measured against; and it is off where the plan is to be
     * taken as made (no_adapt). */
    l->control = l->policy == SOPHON_POLICY_SELECTIVE && !l->o.no_adapt;
    l->ctl_rate_Bps = budget.bandwidth_Bps / l->o.world;
    l->ctl_osd_cores = budget.storage_cores / l->o.world;
    l->ctl_client_cores = budget.client_cores / l->o.world;
    l->window =
        l->o.window > 0 ? l->o.window : sophon__control_window(l->ctl_rate_Bps, l->median_bytes);
    const sophon_records *set = epoch_records(l);
    r = set != NULL ? sophon_plan_make(&plan, set, &budget) : -ENOMEM;
    if (r < 0) {
        pthread_mutex_unlock(&l->mu);
        free(order);
        return r;
    }
    if (l->policy == SOPHON_POLICY_SELECTIVE)
        choose_for_job(l, set, &budget, order, m, &plan);
    uint64_t *cum = malloc((m + 1) * sizeof(*cum));
    if (cum == NULL) {
        pthread_mutex_unlock(&l->mu);
        sophon_plan_free(plan);
        free(order);
        return -ENOMEM;
    }
    cum[0] = 0;
    for (size_t k = 0; k < m; k++)
        cum[k + 1] = cum[k] + plan->bytes[order[k]];
    sophon_plan_free(l->plan);
    free(l->order);
    free(l->cum_bytes);
    l->plan = plan;
    l->order = order;
    l->cum_bytes = cum;
    l->m = m;
    l->inflight_bytes = 0;
    /* Without memory for a deeper ring the epoch runs on the one it has, only slower. */
    (void)ring_resize(l, epoch_nbufs(l, plan, order, m));
    l->issued = l->delivered = l->released = 0;
    l->ahead_next = 0;
    l->ahead_inflight = 0;
    l->gen++;
    l->epoch_ops = 0;
    for (unsigned i = 0; i < l->nbufs; i++)
        l->bufs[i].done = l->bufs[i].failed = 0;
    memset(&l->st, 0, sizeof(l->st));
    l->st.epoch = epoch;
    l->st.prefetch = l->nbufs - 1;
    l->st.window = l->window;
    l->st.class_available = l->class_ok;
    l->st.storage_speed = l->storage_speed;
    l->st.client_speed = l->client_speed;
    l->st.crop_speed = l->crop_speed > 0 ? l->crop_speed : l->storage_speed;
    l->st.crop_speed_measured = l->crop_measured;
    l->st.predicted_epoch_s = shard_epoch_s(l, plan, &budget, order, m);
    l->st.crop_work = crop_work(l, order, m);
    l->st.bandwidth_Bps = l->o.bandwidth_Bps;
    l->st.bandwidth_measured = l->measured_Bps > 0;
    l->st.storage_cores = l->o.storage_cores;
    l->st.storage_measured = l->measured_cores > 0;
    l->st.measure_bytes = l->measure_bytes;
    l->st.osd_op_s = l->osd_op_s;
    l->st.osd_op_measured = l->osd_op_measured;
    l->st.client_byte_s = l->client_byte_s;
    l->st.client_byte_measured = l->client_byte_measured;
    l->st.client_byte_counted = l->msgr_counted;
    l->t0 = now_s();
    l->running = 1;
    pthread_cond_signal(&l->cv_disp);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

/* The options' trace of positions first..first + n), a batch just delivered at t (seconds since
 * the epoch started); the caller's thread, mu not held. */
static void trace_batch(const struct sophon_loader *l, uint64_t epoch, uint64_t first, size_t n,
                        double t)
{
    double cspeed = client_speed(l);
    for (size_t k = 0; k < n; k++) {
        const struct slot *s = &l->slots[(first + k) % l->nslots];
        struct sophon_sample_trace tr = {
            .epoch = epoch,
            .position = s->pos,
            .index = s->index,
            .name = record(l, s->index)->name,
            .planned = s->planned,
            .stage = s->got_stage,
            .demoted = s->demoted,
            .ahead = s->ahead,
            .retries = s->retries,
            .error = s->err,
            .issued_s = s->t_issued,
            .completed_s = s->t_completed,
            .ready_s = s->t_ready,
            .delivered_s = t,
            .bytes = s->got_bytes,
            .planned_bytes = s->expect_bytes,
            .planned_osd_s = s->osd_model_s,
            .osd_cpu_ns = s->osd_cpu_ns,
            .planned_client_s = l->plan->client_cpu_s[s->index] / cspeed,
            .client_cpu_ns = s->client_cpu_ns,
        };
        l->o.trace(l->o.trace_arg, &tr);
    }
}

int sophon_loader_next(const struct sophon_batch **out, sophon_loader *l)
{
    if (out == NULL || l == NULL)
        return -EINVAL;
    *out = NULL;
    pthread_mutex_lock(&l->mu);
    if (!l->running) {
        pthread_mutex_unlock(&l->mu);
        return -EINVAL;
    }
    /* The batch handed out last is the caller's no more. */
    l->released = l->delivered;
    pthread_cond_signal(&l->cv_disp);
    if (l->delivered >= l->m) {
        pthread_mutex_unlock(&l->mu);
        return 0;
    }
    size_t b = l->o.batch_size, n = l->m - l->delivered < b ? l->m - l->delivered : b;
    struct batchbuf *bb = &l->bufs[(l->delivered / b) % l->nbufs];
    while (bb->done < n)
        pthread_cond_wait(&l->cv_done, &l->mu);
    l->out = (struct sophon_batch){
        .n = n,
        .first = (size_t)l->delivered,
        .format = l->o.format,
        .sample_bytes = l->sample_bytes,
        .data = bb->data,
        .labels = bb->labels,
        .names = bb->names,
        .indices = bb->indices,
        .errors = bb->errors,
        .failed = bb->failed,
    };
    bb->done = bb->failed = 0;
    uint64_t first = l->delivered;
    l->delivered += n;
    l->st.delivered = l->delivered;
    l->st.elapsed_s = now_s() - l->t0;
    *out = &l->out;
    int last = l->delivered >= l->m;
    double t = l->st.elapsed_s;
    uint64_t epoch = l->st.epoch;
    pthread_mutex_unlock(&l->mu);
    /* The batch's slots stay as they are until the next call releases them. */
    if (l->o.trace != NULL)
        trace_batch(l, epoch, first, n, t);
    if (last) {
        osd_interval_end(l);
        msgr_interval_end(l);
    }
    return 1;
}

int sophon_loader_stats_get(struct sophon_loader_stats *out, sophon_loader *l)
{
    struct sophon_loader_stats st;

    if (out == NULL || l == NULL)
        return -EINVAL;
    pthread_mutex_lock(&l->mu);
    st = l->st;
    if (l->running && l->delivered < l->m)
        st.elapsed_s = now_s() - l->t0;
    pthread_mutex_unlock(&l->mu);
    return sophon__loader_stats_copy(out, &st);
}

size_t sophon_loader_classes(const sophon_loader *l)
{
    return l != NULL ? l->ds.nclasses : 0;
}

const char *sophon_loader_class_name(const sophon_loader *l, size_t k)
{
    return l != NULL && k < l->ds.nclasses ? l->ds.classes[k] : NULL;
}

size_t sophon_loader_dataset_size(const sophon_loader *l)
{
    return l != NULL ? sophon_records_count(l->ds.records) : 0;
}

void sophon_loader_close(sophon_loader *l)
{
    if (l == NULL)
        return;
    if (l->threads_started) {
        pthread_mutex_lock(&l->mu);
        drain(l);
        l->stop = 1;
        pthread_cond_broadcast(&l->cv_disp);
        pthread_cond_broadcast(&l->cv_work);
        pthread_mutex_unlock(&l->mu);
        if (l->threads_started > 1)
            pthread_join(l->dispatcher, NULL);
        for (unsigned i = 0; i < l->nworkers; i++)
            pthread_join(l->workers[i], NULL);
    }
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->log_mu);
    pthread_cond_destroy(&l->cv_disp);
    pthread_cond_destroy(&l->cv_work);
    pthread_cond_destroy(&l->cv_done);
    free(l->workers);
    free(l->to_issue);
    for (unsigned i = 0; l->bufs != NULL && i < l->nbufs_cap; i++) {
        free(l->bufs[i].data);
        free(l->bufs[i].labels);
        free(l->bufs[i].names);
        free(l->bufs[i].indices);
        free(l->bufs[i].errors);
    }
    free(l->bufs);
    free(l->slots);
    free(l->order);
    sophon_plan_free(l->plan);
    sophon_records_free(l->epoch_records);
    sophon__dataset_free(&l->ds);
    free(l->mtimes);
    free(l->obj_ratio);
    free(l->box_factor);
    free(l->ctl_cpu);
    free(l->cum_bytes);
    if (l->io != NULL)
        rados_ioctx_destroy(l->io);
    if (l->cluster != NULL)
        rados_shutdown(l->cluster);
    free(l);
}
