/*
 * sophon.h - libsophon, the client library of sophon.
 *
 * sophon prepares training samples (JPEG decode, crop, resize, flip) inside the Ceph OSDs that
 * store them, through the `sophon` object class, where that cuts network traffic. This header is
 * the library's public API. Every function returning int returns 0 (or a documented
 * non-negative length) on success and a negative errno on failure.
 */
#ifndef SOPHON_H
#define SOPHON_H

#include <stdint.h>

#include <rados/librados.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SOPHON_API __attribute__((visibility("default")))
#else
#define SOPHON_API
#endif

/* The version of this library, "major.minor.patch". */
SOPHON_API const char *sophon_version_string(void);

/* What the sophon class in an OSD reports about itself. */
struct sophon_class_version {
    uint32_t class_version; /* major << 16 | minor << 8 | patch */
    uint16_t wire_version;  /* request/response format it speaks */
};

/*
 * Asks the OSD holding object oid (in io's pool and namespace) for the version of its sophon
 * class. Thread-safe as far as librados is.
 *
 * Returns 0, or: -ENOENT no such object; -EPERM the client's key may not call classes on this
 * pool (it needs 'x' or 'class-read' in its osd caps); -EOPNOTSUPP the OSD has no sophon class
 * (or it is too old to know the method); -EPROTO the reply was not understood; other librados
 * errors as they come.
 */
SOPHON_API int sophon_class_version_get(struct sophon_class_version *out, rados_ioctx_t io,
                                        const char *oid);

/* Wire format version this library speaks. */
SOPHON_API uint16_t sophon_wire_version(void);

/* ---- the loader: training epochs of a dataset ------------------------------------------------
 *
 * A loader delivers the samples of a dataset (`sophon put --dataset NAME --labels-from-dirs`,
 * then `sophon profile`) in batches, one epoch at a time, transformed as torchvision does on its
 * PIL loader: for training RandomResizedCrop(size, scale, ratio) + RandomHorizontalFlip, for
 * validation Resize(resize) + CenterCrop(size), then as u8 (HWC) or float32 (CHW, normalized
 * with mean and std). Where each sample is prepared (in its OSD, or here from the stored JPEG)
 * follows the selector's plan for the chosen policy; the bytes delivered never depend on it.
 * The box and flip of a training sample depend only on (seed, epoch, dataset index).
 *
 * Thread safety: a loader is used by one thread at a time (open, epoch_start, next, close);
 * sophon_loader_stats_get may be called from any thread at any time. Distinct loaders are
 * independent. The loader runs its own threads: one that issues RADOS operations and `threads`
 * workers that finish samples.
 */

typedef struct sophon_loader sophon_loader;

/* Sample formats: size x size x 3 bytes (HWC, RGB) or 3 x size x size host-endian floats (CHW). */
enum sophon_sample_format { SOPHON_SAMPLE_U8 = 0, SOPHON_SAMPLE_F32 = 1 };

/* The transforms of torchvision's ImageNet recipe a loader applies. */
enum sophon_transform {
    SOPHON_TRANSFORM_TRAIN = 0, /* RandomResizedCrop(size, scale, ratio) + RandomHorizontalFlip;
                                 * each epoch its own shuffle */
    SOPHON_TRANSFORM_VAL = 1,   /* Resize(resize) + CenterCrop(size): no shuffle (dataset order),
                                 * no flip, every sample once */
};

/* The default side of the square samples a loader delivers (the option `size`). */
#define SOPHON_LOADER_SIDE 224u

/* How far a sample was prepared when it left its OSD: the index of the stats' by-stage arrays
 * (the first SOPHON_LOADER_STAGE_COUNT; the crop stage, which came later, has fields of its own
 * at the end of the stats). */
enum sophon_loader_stage {
    SOPHON_LOADER_STAGE_STORED = 0, /* not at all: the object as stored, prepared here */
    SOPHON_LOADER_STAGE_U8 = 1,     /* to the u8 sample */
    SOPHON_LOADER_STAGE_F32 = 2,    /* to the f32 tensor */
    SOPHON_LOADER_STAGE_COUNT,      /* the length of the stats' by-stage arrays */
    SOPHON_LOADER_STAGE_CROP = 3,   /* to the lossless crop JPEG of the box, decoded here */
};

/*
 * Versions of struct sophon_loader_options (libgit2's rule: a caller sets version to the
 * SOPHON_LOADER_OPTIONS_VERSION it was built with; the library accepts every version up to its
 * own, reads only the fields that version has and gives the others their defaults, and refuses a
 * newer version with -EINVAL):
 *   1  the first: a field left at 0 took its default, so 0 retries or 0 storage cores could
 *      not be asked for. Still accepted with that meaning.
 *   2  the INIT macro carries the defaults and every field means what it holds: 0 retries is
 *      no retry, 0 storage cores no offload. Budgets may say SOPHON_BUDGET_MEASURE.
 *   3  appends the transform and its parameters (transform .. std). A version 1 or 2 caller
 *      gets their defaults: RandomResizedCrop(224) with ImageNet's normalization.
 *   4  appends stages. An older caller gets every stage.
 *   5  appends prefetch. An older caller gets the default.
 *   6  appends nspace. An older caller gets NULL: the namespace the dataset was put in.
 *   7  appends trace and trace_arg. An older caller gets NULL: no trace.
 * A window of 0 (refused before stats version 8) means the loader's choice in every version.
 */
#define SOPHON_LOADER_OPTIONS_VERSION 7

/*
 * A budget to be measured rather than given (bandwidth_Bps, storage_cores, client_cores). The
 * client cores are measured: `threads` on the CPU this process may use (its affinity mask,
 * capped by its cgroup's CPU quota). The link is measured when the loader opens: objects of the
 * dataset read as stored, many in flight, for at most 2 s or 48 MB (1 Gbit/s when too few could
 * be read). The OSD cores are measured when the loader opens too: preps of sampled objects,
 * 16 in flight with 8 x 8 outputs (so that the link does not limit them), for at most 2 s: the
 * OSD CPU their responses report per second, times world (every rank measures its share at
 * once); 4 OSD cores when the class does not answer.
 */
#define SOPHON_BUDGET_MEASURE (-1.0)

/*
 * One sample's way through the loader, for the options' trace: where the plan put it, what was
 * asked of the OSDs and came back, and when. Times are seconds since its epoch started
 * (sophon_loader_epoch_start). Fields are only ever appended.
 */
struct sophon_sample_trace {
    uint64_t epoch, position; /* the epoch, the sample's position in this shard's epoch */
    uint64_t index;           /* dataset index (objects sorted by name) */
    const char *name;         /* the object */
    int planned;              /* enum sophon_loader_stage the plan chose (STORED: read as stored) */
    int stage;          /* enum sophon_loader_stage of what came back: the OSD's response, STORED
                         * for a plain read (also the local path after a failed preparation) */
    int demoted;        /* planned in the OSDs, read as stored by the within-epoch controller */
    int ahead;          /* its preparation was issued ahead of its turn */
    unsigned retries;   /* its operations sent again (a timeout, an OSD error) */
    int error;          /* 0, or the negative errno it was delivered with */
    double issued_s;    /* its first operation sent */
    double completed_s; /* its last operation's response in */
    double ready_s;     /* the sample ready in its batch (prepared or finished here) */
    double delivered_s; /* its batch handed to the caller */
    uint64_t bytes;     /* received for it, response header included */
    uint64_t planned_bytes;  /* what the plan expected of the stage asked (the last attempt's) */
    double planned_osd_s;    /* the OSD CPU the plan expected of it, 0 where it planned a
                              * plain read */
    uint64_t osd_cpu_ns;     /* the OSD CPU its response reports, 0 for a plain read */
    double planned_client_s; /* the client CPU the plan expected of it (its planned stage) */
    uint64_t client_cpu_ns;  /* this process's CPU preparing or finishing it */
};

/*
 * Options of sophon_loader_open. Start from SOPHON_LOADER_OPTIONS_INIT, which holds the defaults
 * given here, and change what you need.
 */
struct sophon_loader_options {
    unsigned version;     /* SOPHON_LOADER_OPTIONS_VERSION */
    const char *policy;   /* "none", "all", "resize", "sophon", "selective" (NULL), "oracle" */
    int format;           /* enum sophon_sample_format; default u8 */
    unsigned batch_size;  /* samples per batch, 1..65536; default 32 */
    unsigned rank, world; /* this process's shard of each epoch: rank < world; default 0 of 1 */
    unsigned window;      /* RADOS operations in flight, 1..4096; 0 (the default): the loader
                           * chooses per epoch, enough reads of the dataset's median object to
                           * keep 0.3 s of the link's bytes in flight (32..256; the link's rate
                           * as given or measured): with OSDs under a CPU quota a read's time in
                           * flight is more than its bytes over the link (BENCHMARKS.md) */
    unsigned threads;     /* local worker threads, 1..256; 0 (the default): the CPUs this process
                           * may use (its affinity mask, capped by its cgroup's CPU quota) */
    const char *keyring;  /* keyring file; NULL: from ceph.conf */
    /* The budget the plan is made for (sophon plan's --net, --storage-cores, --client-cores):
     * bytes per second (> 0), OSD cores and client cores (>= 0; 0 storage cores: nothing is
     * prepared in the OSDs), or SOPHON_BUDGET_MEASURE (the default, see there). The bandwidth
     * and the client cores are this rank's (each of the world ranks has its own link and
     * cores), the storage cores the whole job's: every rank makes the same plan for the job
     * and takes its shard of it, so that the ranks together stay within the OSDs' budget. */
    double bandwidth_Bps, storage_cores, client_cores;
    unsigned retries;      /* attempts after the first, per sample, before the local path; 4 */
    unsigned backoff_ms;   /* first retry's delay, doubled each time; default 100 */
    unsigned op_timeout_s; /* librados operation timeout (rados_osd_op_timeout and
                            * rados_mon_op_timeout), 0 none; 30 */
    int no_adapt;          /* 1: plan every epoch with the profile's model, ignore measurements */
    /* Warnings and per-sample failures, one line without newline; NULL: to stderr. Called from
     * the loader's threads, one call at a time. */
    void (*log)(void *arg, const char *line);
    void *log_arg;
    /* Version 3. */
    int transform;   /* enum sophon_transform; default train */
    unsigned size;   /* side of the square samples, 1..8192; default 224 */
    unsigned resize; /* val: the shorter side before the centre crop, size..65536; default 256 */
    double scale[2]; /* train: RandomResizedCrop's range of the area, 0 < [0] <= [1]; default
                      * 0.08, 1 */
    double ratio[2]; /* train: its range of aspect ratios, 0 < [0] <= [1]; default 3/4, 4/3 */
    float mean[3];   /* f32: Normalize's mean and std (std finite, not 0); default ImageNet's: */
    float std[3];    /* 0.485, 0.456, 0.406 and 0.229, 0.224, 0.225 */
    /* Version 4. */
    const char *stages; /* the stages the plan may choose from, comma-separated among "stored",
                         * "crop", "u8", "f32" (stored is always allowed), e.g. "stored,u8" for
                         * sophon before the crop stage; NULL (the default): every one */
    /* Version 5. */
    unsigned prefetch; /* batches the loader may prepare beyond the one the caller holds,
                        * 1..65536: the ring of batch buffers, (prefetch + 1) * batch_size
                        * samples of memory. A read that waits behind a long preparation in
                        * its OSD (a placement group runs one operation at a time) holds up
                        * the delivery of its batch, and the link idles once the ring is full:
                        * under a tight OSD CPU budget, prefetch as many batches as the link
                        * carries while the longest preparation runs (BENCHMARKS.md). 0 (the
                        * default): the loader chooses per epoch, at least 1 + window /
                        * batch_size rounded up, more (up to 256 MiB of samples) where the
                        * plan's longest preparation would outlast the link's reading of the
                        * ring at the budget's OSD cores */
    /* Version 6. */
    const char *nspace; /* the RADOS namespace of the dataset's objects within the pool (sophon
                         * put -N); NULL (the default): the one `sophon put` recorded in the
                         * dataset's index, else the default namespace. Another one than put
                         * recorded fails the open with -EXDEV (the log says which). The index
                         * is the pool's whatever the namespace (dataset names are the pool's) */
    /* Version 7. */
    /* Called once for every sample delivered, in position order, from sophon_loader_next in
     * the caller's thread just before it returns the sample's batch (sophon load --trace);
     * NULL (the default): none. t is valid during the call only. */
    void (*trace)(void *arg, const struct sophon_sample_trace *t);
    void *trace_arg;
};

/* clang-format off */
#define SOPHON_LOADER_OPTIONS_INIT { SOPHON_LOADER_OPTIONS_VERSION, NULL, SOPHON_SAMPLE_U8, 32, \
                                     0, 1, 0, 0, NULL, SOPHON_BUDGET_MEASURE, \
                                     SOPHON_BUDGET_MEASURE, SOPHON_BUDGET_MEASURE, 4, 100, 30, 0, \
                                     NULL, NULL, SOPHON_TRANSFORM_TRAIN, SOPHON_LOADER_SIDE, 256, \
                                     {0.08, 1.0}, {3.0 / 4.0, 4.0 / 3.0}, \
                                     {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, \
                                     NULL, 0, NULL, NULL, NULL }
/* clang-format on */

/*
 * A batch: n samples in sampler order, owned by the loader and valid until the next call of
 * sophon_loader_next, sophon_loader_epoch_start or sophon_loader_close.
 */
struct sophon_batch {
    size_t n;                 /* samples (the epoch's last batch may be short) */
    size_t first;             /* position of the first sample in this shard's epoch */
    int format;               /* enum sophon_sample_format */
    size_t sample_bytes;      /* size * size * 3 (u8) or size * size * 12 (f32) */
    uint8_t *data;            /* n * sample_bytes: sample k at data + k * sample_bytes */
    const int32_t *labels;    /* class of each sample (index into the classes), -1 none */
    const char *const *names; /* object name of each sample */
    const uint64_t *indices;  /* dataset index of each sample (objects sorted by name) */
    const int *errors;        /* 0, or the negative errno of a sample that failed (its data
                               * are zeros); failed samples are also logged and counted */
    size_t failed;            /* samples of this batch with errors[k] < 0 */
};

/* Versions of struct sophon_loader_stats, under the options' rule: 1 the first, 2 appends
 * declined, 3 the crop stage's figures, 4 demoted and prefetch, 5 the OSDs' processes' CPU, 6
 * ahead, 7 crop_work, 8 window, 9 the client's CPU per byte, 10 the crop stage's speed. */
#define SOPHON_LOADER_STATS_VERSION 10

/* What a loader did in the current (or last) epoch of its shard. Start from
 * SOPHON_LOADER_STATS_INIT. */
struct sophon_loader_stats {
    unsigned version; /* set by the caller to SOPHON_LOADER_STATS_VERSION */
    uint64_t epoch, samples, delivered, failed;
    uint64_t bytes_received; /* from the OSDs, response headers included */
    /* What came back, by enum sophon_loader_stage. */
    uint64_t bytes_by_stage[SOPHON_LOADER_STAGE_COUNT], samples_by_stage[SOPHON_LOADER_STAGE_COUNT];
    uint64_t offloaded;                 /* samples the OSDs prepared */
    uint64_t retries;                   /* operations sent again after a timeout or an OSD error */
    uint64_t fallbacks;                 /* samples planned in the OSD but prepared here */
    uint64_t osd_cpu_ns, client_cpu_ns; /* preparation CPU: OSD threads, the loader's workers */
    double elapsed_s;                   /* from epoch start to the last batch delivered (or now) */
    /* The job's plan of this epoch, over this shard's samples: its bytes, and the epoch of this
     * rank (its shard over its link and cores, the OSDs' time for the whole job). */
    uint64_t predicted_bytes;
    double predicted_epoch_s;
    size_t planned_offloaded;
    double storage_speed, client_speed; /* the cost model the plan used (relative speeds) */
    int class_available;                /* 0 once the class was found missing or forbidden */
    /* Version 2. */
    uint64_t declined; /* samples the OSDs declined (their memory budget for sophon calls full,
                        * or the image over their per-call cap) and this client prepared;
                        * counted in fallbacks too */
    /* Version 3. */
    uint64_t crop_bytes, crop_samples; /* what came back as crop JPEGs (SOPHON_LOADER_STAGE_CROP)
                                        * and the samples finished from them */
    uint64_t predicted_crop_bytes;     /* the plan's bytes for those samples (the area model) */
    double bandwidth_Bps;   /* this rank's link as the plan took it: given, or measured */
    int bandwidth_measured; /* 1 if measured (SOPHON_BUDGET_MEASURE), from reads of measure_bytes */
    uint64_t measure_bytes;
    double storage_cores; /* the job's OSD cores as the plan took them: given, or measured */
    int storage_measured; /* 1 if measured (SOPHON_BUDGET_MEASURE) */
    /* Version 4. */
    uint64_t demoted;  /* samples the plan put in the OSD that the loader read as stored,
                        * because their preparation would have kept the link waiting longer
                        * than reading them costs (the within-epoch controller); not counted
                        * in fallbacks */
    unsigned prefetch; /* the batches this epoch prepared ahead of the one consumed: the
                        * options' prefetch, or as the loader chose it (see there) */
    /* Version 5. */
    double osd_op_s;         /* the OSDs' CPU per operation beyond the preparations that the
                              * plan counted (OSD seconds): measured (osd_op_measured), else a
                              * built-in figure */
    int osd_op_measured;     /* 1 if osd_op_s was measured: asked of the OSD processes (class
                              * 0.3 and later) at open or over the epochs before; 2 if it is
                              * the figure `sophon profile` measured and kept in the dataset's
                              * index; 0: the built-in one */
    uint64_t osd_process_ns; /* the OSD processes' CPU over this epoch, all their threads, this
                              * rank's share (the job's over its ranks); 0 until the epoch's last
                              * batch, or when the OSDs could not be asked */
    /* Version 6. */
    uint64_t ahead; /* operations issued ahead of their turn: preparations in the OSDs started
                     * before the in-order pass reached them, so that the OSDs work on them
                     * while the link carries the samples before them */
    /* Version 7. */
    double crop_work; /* what decoding this epoch's crops costs against the crops the records
                       * expect (the cost model, each sample weighted by its image's decode):
                       * above 1, this epoch's random boxes hold more of their images than the
                       * mean, and every plan that decodes them takes longer; 1 where unknown */
    /* Version 8. */
    unsigned window; /* the operations this epoch had in flight at most: the options' window,
                      * or as the loader chose it (see there) */
    /* Version 9. */
    double client_byte_s; /* this client's CPU per byte received beyond the preparations
                           * that the plan counted (librados's messenger threads taking the
                           * responses in; seconds on one of the client's cores, counted against
                           * them where client_byte_counted): measured over the epochs before
                           * (client_byte_measured 1), as `sophon profile` measured it (2),
                           * else a built-in figure (0) */
    int client_byte_measured;
    int client_byte_counted; /* 1 if the plan counted client_byte_s against the client's cores:
                              * the process may not use a core beyond them (its affinity and
                              * CPU quota), so its librados waits for the workers' cores; 0
                              * where it runs beside them */
    uint64_t client_msgr_ns; /* the messenger threads' CPU over this epoch; 0 until its last
                              * batch, or where it could not be read */
    /* Version 10. */
    double crop_speed; /* the OSDs' speed the plan took for the crop stage's figures (the
                        * model's CPU over the measured, as storage_speed is for the
                        * pipeline's): measured over the epochs before (crop_speed_measured
                        * 1), as `sophon profile` measured it (2), else storage_speed (0:
                        * the model's ratio of the crop to the pipeline) */
    int crop_speed_measured;
};

/* clang-format off */
#define SOPHON_LOADER_STATS_INIT { .version = SOPHON_LOADER_STATS_VERSION }
/* clang-format on */

/*
 * Connects as client.`client_id` (NULL: admin) with ceph.conf `conf` (NULL: $CEPH_CONF, then
 * Ceph's search path), opens `pool` and reads dataset `dataset` (its records and labels). opts
 * NULL means every default. On success *out is a loader with no epoch started; free it with
 * sophon_loader_close. Returns 0, -EINVAL (bad options: rank >= world, an unknown policy, a
 * field out of its range, resize < size for val (where torchvision pads), a version newer than
 * this library's), -ENOENT (no such pool, or a dataset without records), -ENOMEM, or what
 * librados says.
 */
SOPHON_API int sophon_loader_open(sophon_loader **out, const char *conf, const char *client_id,
                                  const char *pool, const char *dataset,
                                  const struct sophon_loader_options *opts);

/*
 * Starts epoch `epoch` of this shard: a shuffle of the whole dataset drawn from (seed, epoch)
 * (for val the dataset order, the same every epoch), of which this shard takes positions rank,
 * rank + world, ... (shards differ in size by at most one; together they cover the epoch
 * exactly once). Plans placement for it (with the CPU times
 * measured so far, unless no_adapt) and starts the RADOS operations. An epoch still running is
 * abandoned first (its operations are waited for). Returns 0 or a negative errno.
 */
SOPHON_API int sophon_loader_epoch_start(sophon_loader *l, uint64_t seed, uint64_t epoch);

/*
 * Waits for the next batch of the epoch in sampler order. Returns 1 with *out set, 0 at the end
 * of the epoch (*out NULL), or a negative errno (-EINVAL: no epoch started). A sample that
 * cannot be prepared is delivered with its error, never dropped or repeated.
 */
SOPHON_API int sophon_loader_next(const struct sophon_batch **out, sophon_loader *l);

/* Copies the statistics of the current epoch into *out: the fields of out->version, which the
 * caller sets (-EINVAL for 0 or a version newer than this library's). */
SOPHON_API int sophon_loader_stats_get(struct sophon_loader_stats *out, sophon_loader *l);

/* Number of classes of the dataset and the name of class k (NULL when out of range); valid
 * until close. */
SOPHON_API size_t sophon_loader_classes(const sophon_loader *l);
SOPHON_API const char *sophon_loader_class_name(const sophon_loader *l, size_t k);

/* Number of samples of the dataset (every shard together). */
SOPHON_API size_t sophon_loader_dataset_size(const sophon_loader *l);

/* Waits for operations in flight, stops the threads, disconnects and frees. NULL is a no-op. */
SOPHON_API void sophon_loader_close(sophon_loader *l);

#ifdef __cplusplus
}
#endif

#endif
