/*
 * selector.h - per-object offload decisions from records, under budgets.
 *
 * Pure computation: no librados, no Ceph, no JPEG decoding. The client reads a dataset's records
 * (one per object), describes the machines it trains on (a budget) and asks for a plan: for each
 * object, the stage at which the OSD stops the pipeline and hands the sample to the network.
 *
 * Stages: the OSD runs a prefix of the pipeline and the client the rest:
 *     STORED  the OSD reads the object and sends it as stored (no OSD CPU);
 *     CROP    the OSD cuts the blocks the sample's box needs into a small JPEG (a lossless crop,
 *             no pixel decoded) and the client decodes that: its bytes depend on the box, so a
 *             record holds the expectation over the transform's boxes and the loader each
 *             epoch's figure (sophon_records_set_crop_bytes);
 *     U8      the OSD decodes, crops, resizes and flips: 224x224x3 bytes + the response header;
 *     F32     the OSD also normalizes: a 3x224x224 float tensor + the response header.
 * The list is open: stages are indexed by enum sophon_stage up to SOPHON_STAGE_COUNT, and every
 * array over stages uses it. The index is not the ladder's order: CROP came last.
 *
 * A model of an epoch (DESIGN.md, "Records and the decision"), for a plan choosing stage s_i:
 *     net     = sum_i bytes(i, s_i) / bandwidth
 *     storage = sum_i storage_cpu(i, s_i) / (storage_cores * storage_speed)
 *     client  = sum_i client_cpu(i, s_i) / client_cores
 *     gpu     = n / gpu_rate                     (0 when the rate is 0, "unlimited")
 *     epoch   = max(net, storage, client, gpu)
 * A resource with infinite capacity takes no time; one with zero capacity takes no time when
 * nothing uses it and is impossible (an infinite time) otherwise.
 *
 * Errors: every int-returning function returns 0 or a negative errno: -EINVAL bad arguments or
 * budgets, -ENOMEM allocation failure, -EBADMSG malformed input file (with a one-line message
 * naming the line in err when err != NULL and errlen > 0), -EIO a read or write error.
 * Nothing here keeps global mutable state; distinct objects may be used from distinct threads.
 */
#ifndef SOPHON_SELECTOR_H
#define SOPHON_SELECTOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the OSD stops the pipeline. */
enum sophon_stage {
    SOPHON_STAGE_STORED = 0, /* the object as stored */
    SOPHON_STAGE_U8 = 1,     /* resized 224x224x3 u8 sample */
    SOPHON_STAGE_F32 = 2,    /* normalized float32 tensor */
    SOPHON_STAGE_CROP = 3,   /* the lossless crop JPEG of the sample's box */
    SOPHON_STAGE_COUNT
};

/* A set of stages, bit 1 << stage each (sophon_records_restrict). */
#define SOPHON_STAGES_ALL ((1u << SOPHON_STAGE_COUNT) - 1u)

/*
 * Bytes on the wire of the OSD's stages: the payload of a side x side sample and the response
 * header. Records are profiled for SOPHON_SEL_SIDE (224, the default sample side) and a loader
 * of another side sets its records' figures with sophon_records_set_side. The selector includes
 * nothing of prep/ or the client: the client, where both are visible, holds these to wire.h's
 * SOPHON_RESPONSE_HDR_LEN and sophon.h's default sample side with _Static_assert
 * (client/cross_checks.h).
 */
#define SOPHON_SEL_SIDE         224u
#define SOPHON_SEL_HEADER_BYTES 56u
#define SOPHON_SEL_U8_BYTES     (SOPHON_SEL_SIDE * SOPHON_SEL_SIDE * 3u + SOPHON_SEL_HEADER_BYTES)
#define SOPHON_SEL_F32_BYTES    (SOPHON_SEL_SIDE * SOPHON_SEL_SIDE * 12u + SOPHON_SEL_HEADER_BYTES)

/* Bytes on the wire of stage U8 or F32 for a side x side sample (header included): side^2 * 3
 * or side^2 * 12, plus SOPHON_SEL_HEADER_BYTES; 0 for another stage or a side of 0. */
uint64_t sophon_stage_bytes(int stage, uint32_t side);

/* The format the training loop consumes. With U8, the F32 stage is not a valid choice. The
 * values are prep's enum sophon_format's (client/cross_checks.h checks). */
enum sophon_final_format {
    SOPHON_FINAL_U8 = 0,
    SOPHON_FINAL_F32 = 1,
};

/*
 * The cost of stopping at one stage. CPU seconds are measured on (or modelled for) one reference
 * core. client_cpu_s is the client's work to finish the sample *as float32* (the longest ladder);
 * for a u8 final format the planner subtracts the U8 stage's client_cpu_s (the u8 -> f32 tail,
 * common to every stage up to U8) and clamps at 0.
 */
struct sophon_stage_cost {
    uint64_t bytes;       /* on the network, headers included; 0 = stage unavailable */
    double storage_cpu_s; /* OSD CPU seconds to produce this stage from the stored object */
    double client_cpu_s;  /* client CPU seconds to finish the f32 sample from this stage */
};

/* What is known of one object. Subsampling uses the codes of sophon_common.h's enum
 * sophon_subsampling (0 = 444, 1 = 422, 2 = 420, 3 = 440, 4 = 411, 5 = gray, 6 = other). */
struct sophon_record {
    const char *name; /* owned by the record set that holds the record */
    uint64_t stored_bytes;
    uint32_t width, height;
    uint8_t components;
    uint8_t subsampling;
    uint8_t progressive;
    struct sophon_stage_cost stage[SOPHON_STAGE_COUNT];
};

/* Static name of a stage ("stored", "u8", "f32", "crop"), "unknown" when out of range. */
const char *sophon_stage_name(int stage);

/* The stage named name, or -1. */
int sophon_stage_from_name(const char *name);

/*
 * Parses a comma-separated list of stage names ("stored,crop,u8") into a set of stages in *out
 * (STORED is always in it: an object can always be read as stored). Returns 0 or -EINVAL (an
 * unknown or empty name, with a message in err).
 */
int sophon_stages_parse(unsigned *out, const char *list, char *err, size_t errlen);

/* ---- record sets ---------------------------------------------------------------------------- */

/* An ordered set of records; the index of a record is its position. Opaque. */
typedef struct sophon_records sophon_records;

/* Creates an empty set in *out. Returns 0, -EINVAL (out NULL), -ENOMEM. */
int sophon_records_new(sophon_records **out);

/* Frees the set, its records and their names. NULL is a no-op. */
void sophon_records_free(sophon_records *set);

/*
 * Appends a copy of *rec (the name is copied into the set; rec->name may be freed after).
 * Returns 0, -EINVAL (NULL, a name with a control character, subsampling > 6, progressive > 1,
 * a negative or non-finite CPU time, or a STORED stage whose bytes differ from stored_bytes),
 * -ENOMEM.
 */
int sophon_records_add(sophon_records *set, const struct sophon_record *rec);

/*
 * Sets the network bytes of every record's U8 and F32 stages (where available, bytes > 0) to
 * those of side x side samples (sophon_stage_bytes). CPU costs are kept as they are: the decode
 * of the box dominates them whatever the output side (the resample and the normalization, which
 * grow with it, are a few per cent at 224), and online profiling rescales the model to what is
 * measured. Returns 0, or -EINVAL for a NULL set or a side of 0.
 */
int sophon_records_set_side(sophon_records *set, uint32_t side);

/*
 * Makes the U8 and F32 stages unavailable (bytes 0) in every record of more than max_pixels
 * pixels (width * height): the OSDs refuse those (SOPHON_OSD_MAX_PIXELS, sophon_config.h), so
 * no policy offloads them. Returns the number of such records, or -EINVAL for a NULL set.
 */
long sophon_records_limit_pixels(sophon_records *set, uint64_t max_pixels);

/*
 * Makes every stage not in `stages` (a set of 1 << stage bits; STORED always stays) unavailable
 * (bytes 0) in every record: `sophon load --stages`. Returns 0, or -EINVAL for a NULL set.
 */
int sophon_records_restrict(sophon_records *set, unsigned stages);

/*
 * Adds op_s OSD CPU seconds (reference core) to the storage CPU of every stage every record
 * offers, STORED included: what one RADOS operation costs an OSD whatever it asks (the
 * messenger, the object store, checksums), SOPHON_SEL_OSD_OP_S where nothing better is known.
 * The planner then counts the OSDs' time for plain reads too. Returns 0, or -EINVAL (NULL, op_s
 * negative or not finite).
 */
int sophon_records_add_osd_op(sophon_records *set, double op_s);

/*
 * Multiplies the storage CPU of record i's offloaded stages (every stage but STORED) by factor:
 * what the loader measured of that object against the model. Returns 0, or -EINVAL (NULL, i out
 * of range, factor not finite or <= 0).
 */
int sophon_records_scale_storage(sophon_records *set, size_t i, double factor);

/*
 * Multiplies the storage CPU of `stage` (not STORED) in every record that offers it by factor:
 * the OSDs' speed for the cost model's figures of that stage against their speed for the
 * pipeline's (the crop stage's CPU against the u8 pipeline's is the machine's, and `sophon
 * profile` and the loader measure it). Returns 0, or -EINVAL (NULL, STORED or no such stage,
 * factor not finite or <= 0).
 */
int sophon_records_scale_stage(sophon_records *set, int stage, double factor);

/*
 * Multiplies the CPU of record i's decodes by factor, one box's cost against the expected box's
 * (sophon_cost_model_box_factor): the OSD's of every stage but STORED, the client's of STORED and
 * CROP (those decode on the client; their normalization, a tenth of a millisecond, is scaled
 * with them). Returns 0, or -EINVAL (NULL, i out of range, factor not finite or <= 0).
 */
int sophon_records_scale_box(sophon_records *set, size_t i, double factor);

/*
 * Sets record i's CROP bytes (where it offers the stage) to `bytes`: the loader's figure for the
 * box of this epoch's sample. Returns 0, -EINVAL (NULL, i out of range, bytes 0), or -ENOENT when
 * the record does not offer the crop stage.
 */
int sophon_records_set_crop_bytes(sophon_records *set, size_t i, uint64_t bytes);

/* A copy of set in *out (free with sophon_records_free). Returns 0, -EINVAL, -ENOMEM. */
int sophon_records_copy(sophon_records **out, const sophon_records *set);

/* Number of records (0 for NULL). */
size_t sophon_records_count(const sophon_records *set);

/* Record i, or NULL when out of range. The pointer stays valid until the next add or free. */
const struct sophon_record *sophon_records_get(const sophon_records *set, size_t i);

/*
 * sophon-records CSV. The first line names the columns:
 *     name,stored_bytes,width,height,components,subsampling,progressive,
 *     stored_net_bytes,stored_storage_cpu_s,stored_client_cpu_s,u8_net_bytes,...,f32_client_cpu_s
 * (per stage: <stage>_net_bytes, <stage>_storage_cpu_s, <stage>_client_cpu_s). Columns may come in
 * any order but each must appear exactly once; the crop_* columns may be missing all three (an
 * index written before the crop stage), and the stage is then unavailable. Names holding a comma, a
 * quote or leading or trailing blanks are quoted ("a,b" and "say ""hi"""); subsampling is written
 * by name ("420"). CPU times are written with 17 significant digits, so a round trip is exact.
 */
int sophon_records_write_csv(const sophon_records *set, FILE *f);

/*
 * Reads a sophon-records CSV into a new set in *out (owned by the caller, free it with
 * sophon_records_free). Any malformed line (wrong field count, a number that does not parse or
 * is out of range, a bad quote, an unknown column) fails the whole read with -EBADMSG and a
 * message "line N: ..." in err. Returns 0, -EINVAL, -EBADMSG, -ENOMEM, -EIO.
 */
int sophon_records_read_csv(sophon_records **out, FILE *f, char *err, size_t errlen);

/* ---- cost model ----------------------------------------------------------------------------- */

/*
 * CPU seconds of the pipeline on one reference core, as a function of what a record knows:
 *     decode+crop+resize+flip (u8) = a + b * pixels + c * stored_bytes
 *                                    + d * pixels * progressive + e * pixels * (subsampling 444)
 *     u8 -> f32 (ToTensor + Normalize) = normalize_s
 * The expectation is over RandomResizedCrop boxes (the pipeline decodes only the rows and
 * columns a crop needs). SOPHON_COST_MODEL_INIT holds constants fitted on this machine; see
 * cost_model.c for the command that produced them.
 */
struct sophon_cost_model {
    unsigned version; /* SOPHON_COST_MODEL_VERSION */
    double a_s, per_pixel_s, per_byte_s, per_progressive_pixel_s, per_444_pixel_s;
    double normalize_s;
    /* The one box against the expectation (version 2): the same image costs more where the box
     * holds more of it, per box pixel (baseline, progressive), about the mean share of the image
     * a box holds (sophon_cost_model_box_s). */
    double per_box_pixel_s, per_progressive_box_pixel_s, box_share;
};

#define SOPHON_COST_MODEL_VERSION 2

/* The area model of the crop stage where nothing was measured: the expected share of the image
 * a RandomResizedCrop box's crop holds (boxes, their iMCU alignment and margins, on photos of
 * the corpus), and the CPU of a crop against the u8 pipeline on the same box: in the OSD
 * (reading the coefficients of every row down to the box costs what decoding them does, and
 * the crop is then coded again: bench_crop, 1.1-1.9x) and on the client (decoding the crop
 * instead of the stored object: 0.6-0.75x). BENCHMARKS.md has the measurements. */
/* What the testbed measured once of an OSD's CPU beyond the preparations the class reports: per
 * RADOS operation, a read or a call, whatever its size (OSD CPU seconds: the OSDs' cgroup's
 * CPU over none, resize, selective and oracle epochs, less the OSDs' idle CPU, over the
 * operations; BENCHMARKS.md). It moves with the machine and the day: the loader measures it
 * (client/osd_cpu.h) and plans with this only until it has (its first epoch when the budgets
 * are given) or where the OSDs' class cannot tell (before 0.3); `sophon plan` always does; and the
 * share of a link's rate that carries payload (TCP over IPv4 with timestamps on a 1500-byte MTU:
 * 1448 bytes of every 1514 the link shapes). SOPHON_SEL_CLIENT_BYTE_S is the client's CPU per
 * byte received (librados's messenger threads taking the responses in: the socket's copies and
 * the messages' checksums), what the testbed's loaders and profiles measured (1.8-2.0 ns,
 * BENCHMARKS.md) and the loader plans with until it has measured its own (the budget's
 * client_byte_s). */
#define SOPHON_SEL_OSD_OP_S      0.00024
#define SOPHON_SEL_CLIENT_BYTE_S 2e-9
#define SOPHON_SEL_LINK_PAYLOAD  (1448.0 / 1514.0)
#define SOPHON_SEL_CROP_SHARE    0.45
#define SOPHON_SEL_CROP_OSD      1.3
#define SOPHON_SEL_CROP_CLIENT   0.7
extern const struct sophon_cost_model sophon_cost_model_default;

/*
 * Fills rec->stage[] from rec's stored_bytes, width, height, progressive and subsampling with
 * model (NULL = sophon_cost_model_default): STORED = (stored bytes, 0 OSD CPU, decode + normalize
 * on the client), U8 = (SOPHON_SEL_U8_BYTES, decode, normalize), F32 = (SOPHON_SEL_F32_BYTES,
 * decode + normalize, 0), CROP = (the area model: the header and the stored bytes times
 * SOPHON_SEL_CROP_SHARE, the crop's expected share of the image; SOPHON_SEL_CROP_OSD of the
 * decode on the OSD; SOPHON_SEL_CROP_CLIENT of it and the normalization on the client).
 * Returns 0 or -EINVAL.
 */
int sophon_cost_model_fill(struct sophon_record *rec, const struct sophon_cost_model *model);

/* Predicted decode+crop+resize CPU seconds (the u8 pipeline) of rec under model (NULL = default).
 */
double sophon_cost_model_decode_s(const struct sophon_record *rec,
                                  const struct sophon_cost_model *model);

/*
 * The same for one box holding `share` of rec's pixels (0 < share <= 1): the expectation plus
 * the box's slope times its pixels beyond the mean share's, at least a quarter of the
 * expectation; share outside (0, 1] gives the expectation.
 */
double sophon_cost_model_box_s(const struct sophon_record *rec, double share,
                               const struct sophon_cost_model *model);

/* sophon_cost_model_box_s over sophon_cost_model_decode_s: how much one box's preparation costs
 * against the expected box's, for the same image (1 where it cannot tell). */
double sophon_cost_model_box_factor(const struct sophon_record *rec, double share,
                                    const struct sophon_cost_model *model);

/*
 * The same for a box whose last row lies at `depth` of the image's height (0 < depth <= 1: (y +
 * h) / height): the rows down to it are decoded, those below never; the model's per-byte term
 * times the stored bytes times the depth beyond SOPHON_COST_MODEL_DEPTH, the mean
 * RandomResizedCrop box's (torchvision 0.14's get_params, 4000 draws on 3:4 to 16:9 images:
 * 0.78-0.87). A depth outside (0, 1] is the mean's.
 */
#define SOPHON_COST_MODEL_DEPTH 0.85
double sophon_cost_model_box_at_s(const struct sophon_record *rec, double share, double depth,
                                  const struct sophon_cost_model *model);
double sophon_cost_model_box_at_factor(const struct sophon_record *rec, double share, double depth,
                                       const struct sophon_cost_model *model);

/*
 * Reads the SOPHON paper's OpenImages profile (data/openimages-40k-prep-sizes.csv: semicolon-
 * separated, header "index;raw;decoding;original_shape;...", shape "(w, h)") into a new set in
 * *out. Names are the decimal index; components 3, subsampling 420 and baseline coding are
 * assumed (the profile does not say); stage costs come from sophon_cost_model_fill(model).
 * Returns 0, -EINVAL, -EBADMSG ("line N: ..." in err), -ENOMEM, -EIO.
 */
int sophon_records_import_openimages(sophon_records **out, FILE *f,
                                     const struct sophon_cost_model *model, char *err,
                                     size_t errlen);

/* ---- budgets and plans ---------------------------------------------------------------------- */

enum sophon_policy {
    SOPHON_POLICY_NONE = 0,      /* every object as stored */
    SOPHON_POLICY_ALL = 1,       /* the last valid stage (F32 for a f32 final format); an object
                                  * that does not offer it (bytes 0) is sent as stored */
    SOPHON_POLICY_RESIZE = 2,    /* every object at U8 (that offers it; the others stored) */
    SOPHON_POLICY_SOPHON = 3,    /* the SOPHON paper's greedy rule (see plan.c) */
    SOPHON_POLICY_SELECTIVE = 4, /* minimizes the modelled epoch time (see selective.c) */
    SOPHON_POLICY_ORACLE = 5,    /* fewest bytes per object, CPU ignored */
    SOPHON_POLICY_COUNT
};

/* Static name of a policy ("none", "all", "resize", "sophon", "selective", "oracle"). */
const char *sophon_policy_name(int policy);

/* The policy named name (one of sophon_policy_name's), or -1. */
int sophon_policy_from_name(const char *name);

/*
 * The machines of one training job. Capacities may be INFINITY (unlimited); cores may be 0 (then
 * no stage that needs them is possible). bandwidth_Bps must be finite and > 0.
 */
struct sophon_budget {
    unsigned version;         /* SOPHON_BUDGET_VERSION */
    double bandwidth_Bps;     /* storage -> client network, bytes per second */
    double storage_cores;     /* OSD cores available for offload, all OSDs together */
    double storage_speed;     /* an OSD core's speed relative to the reference core (> 0) */
    double client_cores;      /* client cores preparing samples */
    double gpu_samples_per_s; /* training throughput; 0 = unlimited */
    int final_format;         /* enum sophon_final_format */
    int policy;               /* enum sophon_policy */
    /* Version 2. */
    double client_byte_s; /* client CPU seconds (reference core, as client_cpu_s) per byte
                           * received, beyond preparing the samples: librados's messenger
                           * taking the responses in. Every stage pays it for its bytes; not
                           * counted where client_cores is 0 (as plain reads' OSD CPU is not
                           * where storage_cores is) */
};

/* Versions of struct sophon_budget: 1 the first, 2 appends client_byte_s (0 in version 1). */
#define SOPHON_BUDGET_VERSION 2
#define SOPHON_BUDGET_INIT                                                                         \
    {                                                                                              \
        SOPHON_BUDGET_VERSION, 500e6 / 8, 8, 1.0, 32, 0, SOPHON_FINAL_F32,                         \
            SOPHON_POLICY_SELECTIVE, 0                                                             \
    }

/*
 * A plan: per object its stage and predicted costs, and the modelled epoch. All arrays hold n
 * entries, owned by the plan; free it with sophon_plan_free.
 */
struct sophon_plan {
    size_t n;
    int policy;            /* the policy asked for */
    uint8_t *stage;        /* enum sophon_stage per object */
    uint64_t *bytes;       /* per object, on the network */
    double *storage_cpu_s; /* per object, reference-core seconds */
    double *client_cpu_s;  /* per object, for the budget's final format */
    uint64_t total_bytes;
    double total_storage_cpu_s, total_client_cpu_s;
    double net_s, storage_s, client_s, gpu_s; /* modelled times; INFINITY when impossible */
    double epoch_s;                           /* max of the four */
    size_t offloaded;                         /* objects not at STORED */
    /* Selective only (0 otherwise): */
    double lower_bound_s;    /* no plan has a smaller epoch_s (the LP relaxation's dual bound) */
    double rounding_bound_s; /* proven: epoch_s <= lp_s + rounding_bound_s (see selective.c) */
    double lp_s;             /* the LP relaxation's value (upper side, >= lower_bound_s) */
    size_t fractional;       /* samples split by the LP's basic solution (<= 3) */
    unsigned iterations;     /* column generation rounds */
    int chosen_from;         /* the policy whose plan was kept (selective keeps the best) */
};

/*
 * Plans every record of set under budget. Deterministic: the same records and budget give the
 * same plan, bit for bit. *out is allocated; free it with sophon_plan_free.
 * Returns 0, -EINVAL (NULL, empty set, bad budget, a policy not valid for the final format, or
 * an object that no possible stage can serve), -ENOMEM.
 */
int sophon_plan_make(struct sophon_plan **out, const sophon_records *set,
                     const struct sophon_budget *budget);

/*
 * Evaluates a given stage choice (stage[i] for record i) under budget into a new plan, as
 * sophon_plan_make does for its own choices. Returns 0, -EINVAL (a stage out of range or
 * invalid for the final format), -ENOMEM. Impossible choices give INFINITY times.
 */
int sophon_plan_evaluate(struct sophon_plan **out, const sophon_records *set,
                         const struct sophon_budget *budget, const uint8_t *stage);

/* Frees a plan and its arrays. NULL is a no-op. */
void sophon_plan_free(struct sophon_plan *plan);

#ifdef __cplusplus
}
#endif

#endif /* SOPHON_SELECTOR_H */
