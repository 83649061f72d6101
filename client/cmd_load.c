/*
 * cmd_load.c - `sophon load`: training epochs of a dataset through libsophon's loader, with what
 * each epoch cost next to what the planner predicted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cli.h"
#include "cross_checks.h"
#include "progress.h"
#include "sophon.h"

static const char usage[] =
    "Usage: sophon load -p POOL [--dataset NAME] [--policy P] [--epochs E] [--batch B]\n"
    "                   [--shard R/N] [--out DIR | --discard] [options]\n"
    "Loads training epochs of a dataset (`sophon put --dataset NAME --labels-from-dirs`, then\n"
    "`sophon profile`), each sample prepared in its OSD or here as the plan of policy P says,\n"
    "and prints per epoch: samples/s, bytes received by stage, the offloaded share, retries and\n"
    "fallbacks, failures, and the planner's prediction next to what was measured.\n\n"
    "      --dataset NAME      the dataset (default: the pool's name)\n"
    "      --policy P          none, all, resize, sophon, selective (default), oracle\n"
    "      --epochs E          epochs to load (default 1), numbered from --first-epoch (0)\n"
    "      --seed S            shuffle and crop seed (default 0)\n"
    "      --batch B           samples per batch (default 32)\n"
    "      --shard R/N         this process is rank R of N loaders splitting each epoch\n"
    "      --format F          f32 (CHW float32, default) or u8 (HWC bytes)\n"
    "      --transform T       train (default: RandomResizedCrop + RandomHorizontalFlip, each\n"
    "                          epoch shuffled) or val (Resize + CenterCrop, dataset order)\n"
    "      --size N            side of the samples (default 224)\n"
    "      --resize N          val: the shorter side before the centre crop (default 256)\n"
    "      --scale A,B         train: RandomResizedCrop's scale (default 0.08,1)\n"
    "      --ratio A,B         train: its aspect ratios (default 3/4,4/3)\n"
    "      --mean a,b,c        f32: Normalize's mean (default 0.485,0.456,0.406)\n"
    "      --std a,b,c         f32: Normalize's std (default 0.229,0.224,0.225)\n"
    "      --out DIR           write DIR/epoch-E.data (samples in order) and DIR/epoch-E.index\n"
    "                          (position, dataset index, label, errno, object per line)\n"
    "      --discard           keep nothing (the default)\n"
    "      --trace FILE        write one CSV line per sample delivered to FILE: where the plan\n"
    "                          put it, what came back, its bytes, OSD and client CPU (each\n"
    "                          next to the plan's), and when it was issued, came back, was\n"
    "                          ready and was delivered\n"
    "      --window W          RADOS operations in flight (default: chosen per epoch, enough\n"
    "                          reads of the median object for 0.3 s of the link, 32 to 256; a\n"
    "                          quarter, up to 8, kept for preparations started ahead of their\n"
    "                          turn)\n"
    "      --prefetch N        batches prepared ahead of the one being consumed (default:\n"
    "                          chosen per epoch, at least 1 + window / batch, more while the\n"
    "                          plan's longest preparation would outlast the ring's reads)\n"
    "      --threads T         local worker threads (default: the CPUs this process may use:\n"
    "                          its affinity, capped by its cgroup's CPU quota)\n"
    "      --net RATE          bandwidth the plan assumes (default: measured when the loader\n"
    "                          opens, reading objects as stored for 2 s or 48 MB)\n"
    "      --storage-cores N   OSD cores the plan may use (default: measured when the loader\n"
    "                          opens, preparing sampled objects in the OSDs for 1.5 s)\n"
    "      --client-cores N    client cores the plan assumes for the workers, and for librados\n"
    "                          where the process may use no more (default: measured, the\n"
    "                          threads on the CPU this process may use)\n"
    "      --retries N         retries of a failed operation before the local path (default 4)\n"
    "      --backoff-ms MS     first retry's delay, doubled each time (default 100)\n"
    "      --op-timeout S      librados operation timeout in seconds (default 30)\n"
    "      --no-adapt          plan every epoch from the profile, not from measured CPU "
    "times\n"
    "      --stages LIST       the stages the plan may choose, of stored, crop, u8, f32 (default\n"
    "                          all; stored,u8 is sophon before the lossless crop "
    "stage)\n\n" CLI_COMMON_HELP;

static double process_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int parse_shard(const struct cli *c, const char *s, unsigned *rank, unsigned *world)
{
    unsigned long r, n;
    char *end;
    errno = 0;
    r = strtoul(s, &end, 10);
    if (end != s && *end == '/' && errno == 0) {
        const char *t = end + 1;
        n = strtoul(t, &end, 10);
        if (end != t && *end == '\0' && errno == 0 && n > 0 && n <= 65536 && r < n) {
            *rank = (unsigned)r;
            *world = (unsigned)n;
            return 0;
        }
    }
    cli_error(c, "--shard wants R/N with R < N, e.g. 0/2, not '%s'", s);
    return -1;
}

/* Files of one epoch under --out. */
struct epoch_out {
    FILE *data, *index;
};

static int out_open(const struct cli *c, struct epoch_out *eo, const char *dir, uint64_t epoch)
{
    char path[4096];
    eo->data = eo->index = NULL;
    if (dir == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s/epoch-%llu.data", dir, (unsigned long long)epoch);
    eo->data = fopen(path, "wb");
    snprintf(path, sizeof(path), "%s/epoch-%llu.index", dir, (unsigned long long)epoch);
    eo->index = eo->data != NULL ? fopen(path, "w") : NULL;
    if (eo->index == NULL) {
        cli_error(c, "cannot write %s: %s", path, strerror(errno));
        if (eo->data != NULL)
            fclose(eo->data);
        eo->data = NULL;
        return -1;
    }
    return 0;
}

static int out_batch(struct epoch_out *eo, const struct sophon_batch *b)
{
    if (eo->data == NULL)
        return 0;
    if (fwrite(b->data, b->sample_bytes, b->n, eo->data) != b->n)
        return -1;
    for (size_t k = 0; k < b->n; k++)
        if (fprintf(eo->index, "%zu %llu %d %d %s\n", b->first + k,
                    (unsigned long long)b->indices[k], (int)b->labels[k], b->errors[k],
                    b->names[k]) < 0)
            return -1;
    return 0;
}

/* Closes both files; -1 if anything written to them was lost (their error indicator, or the
 * last flush). */
static int out_close(struct epoch_out *eo)
{
    int r = 0;
    if (eo->data != NULL && cli_close_written(eo->data) < 0)
        r = -1;
    if (eo->index != NULL && cli_close_written(eo->index) < 0)
        r = -1;
    eo->data = eo->index = NULL;
    return r;
}

/* --trace's header, and one line per sample (struct sophon_sample_trace; the loader's callback). */
static const char trace_header[] =
    "epoch,position,index,planned,stage,demoted,ahead,retries,error,issued_s,completed_s,ready_s,"
    "delivered_s,bytes,planned_bytes,planned_osd_s,osd_cpu_s,planned_client_s,client_cpu_s,"
    "object\n";

static void trace_sample(void *arg, const struct sophon_sample_trace *t)
{
    FILE *f = arg;
    fprintf(
        f, "%llu,%llu,%llu,%s,%s,%d,%d,%u,%d,%.6f,%.6f,%.6f,%.6f,%llu,%llu,%.6f,%.6f,%.6f,%.6f,",
        (unsigned long long)t->epoch, (unsigned long long)t->position, (unsigned long long)t->index,
        sophon_stage_name(t->planned), sophon_stage_name(t->stage), t->demoted, t->ahead,
        t->retries, t->error, t->issued_s, t->completed_s, t->ready_s, t->delivered_s,
        (unsigned long long)t->bytes, (unsigned long long)t->planned_bytes, t->planned_osd_s,
        (double)t->osd_cpu_ns / 1e9, t->planned_client_s, (double)t->client_cpu_ns / 1e9);
    /* The object's name last, quoted where CSV needs it. */
    if (strpbrk(t->name, ",\"\r\n") == NULL) {
        fputs(t->name, f);
    } else {
        fputc('"', f);
        for (const char *c = t->name; *c != '\0'; c++) {
            if (*c == '"')
                fputc('"', f);
            fputc(*c, f);
        }
        fputc('"', f);
    }
    fputc('\n', f);
}

/* Where a figure the plan counted came from (the stats' *_measured). */
static const char *figure_source(int measured)
{
    return measured == 1 ? "measured" : measured == 2 ? "as profiled" : "built-in";
}

/* The epoch's report; t0 and t1 (monotonic seconds, progress_now()) when it started and ended, for
 * scripts lining up the epochs of several processes. */
static void report(const struct sophon_loader_stats *st, double cpu_s, const char *policy,
                   double t0, double t1)
{
    uint64_t total = st->samples + st->failed;
    double secs = st->elapsed_s > 0 ? st->elapsed_s : 1e-9;
    printf("epoch %llu (%s): %llu samples in %.2f s, %.1f samples/s; %llu failed\n",
           (unsigned long long)st->epoch, policy, (unsigned long long)total, st->elapsed_s,
           (double)total / secs, (unsigned long long)st->failed);
    printf("  received %.2f MB:", (double)st->bytes_received / 1e6);
    for (int s = 0; s < SOPHON_LOADER_STAGE_COUNT; s++)
        printf("%s %s %.2f MB (%llu)", s ? "," : "", sophon_stage_name(s),
               (double)st->bytes_by_stage[s] / 1e6, (unsigned long long)st->samples_by_stage[s]);
    printf(", %s %.2f MB (%llu)", sophon_stage_name(SOPHON_LOADER_STAGE_CROP),
           (double)st->crop_bytes / 1e6, (unsigned long long)st->crop_samples);
    printf("\n  offloaded %llu of %llu (%.0f%%), planned %zu, %llu started ahead of their turn, "
           "%llu read as stored not to keep the link waiting; retries %llu, fallbacks %llu (%llu "
           "declined by busy OSDs)%s\n",
           (unsigned long long)st->offloaded, (unsigned long long)total,
           total ? 100.0 * (double)st->offloaded / (double)total : 0.0, st->planned_offloaded,
           (unsigned long long)st->ahead, (unsigned long long)st->demoted,
           (unsigned long long)st->retries, (unsigned long long)st->fallbacks,
           (unsigned long long)st->declined,
           st->class_available ? "" : " (class unavailable: local path)");
    double dev = st->predicted_bytes
                     ? 100.0 * ((double)st->bytes_received - (double)st->predicted_bytes) /
                           (double)st->predicted_bytes
                     : 0.0;
    printf("  planner: %.2f MB, epoch %.2f s (model speeds: OSD %.2f, its crop stage %.2f (%s), "
           "client %.2f; link %.1f Mbit/s, %s; OSDs %.2f cores, %s; crops %.2fx the mean decode); "
           "measured: %.2f MB (%+.2f%%), %.2f s\n",
           (double)st->predicted_bytes / 1e6, st->predicted_epoch_s, st->storage_speed,
           st->crop_speed, figure_source(st->crop_speed_measured), st->client_speed,
           st->bandwidth_Bps * 8 / 1e6, st->bandwidth_measured ? "measured" : "as given",
           st->storage_cores, st->storage_measured ? "measured" : "as given", st->crop_work,
           (double)st->bytes_received / 1e6, dev, st->elapsed_s);
    printf("  CPU: client process %.2f s (%.2f ms/sample, %.0f samples/s per core), loader "
           "workers %.2f s, OSDs %.2f s preparing",
           cpu_s, total ? cpu_s * 1e3 / (double)total : 0.0, cpu_s > 0 ? (double)total / cpu_s : 0,
           (double)st->client_cpu_ns / 1e9, (double)st->osd_cpu_ns / 1e9);
    if (st->osd_process_ns > 0)
        printf(", %.2f s in all", (double)st->osd_process_ns / 1e9);
    printf(" (planned with %.2f ms an operation beyond the preparations, %s)\n", st->osd_op_s * 1e3,
           figure_source(st->osd_op_measured));
    printf("  librados %.2f s (%.2f ns a byte received; %.2f ns, %s, %s)\n",
           (double)st->client_msgr_ns / 1e9,
           st->bytes_received ? (double)st->client_msgr_ns / (double)st->bytes_received : 0.0,
           st->client_byte_s * 1e9, figure_source(st->client_byte_measured),
           st->client_byte_counted ? "counted against the client's cores (no core beyond them)"
                                   : "not counted: it runs on a core beyond the client's");
    /* One line for scripts. */
    printf("stats: policy=%s epoch=%llu samples=%llu failed=%llu bytes=%llu predicted=%llu "
           "offloaded=%llu retries=%llu fallbacks=%llu seconds=%.3f client_cpu=%.3f "
           "osd_cpu=%.3f declined=%llu model_s=%.3f crop_bytes=%llu crop_samples=%llu "
           "predicted_crop=%llu link_mbit=%.2f link_measured=%d osd_cores=%.3f "
           "osd_cores_measured=%d demoted=%llu prefetch=%u osd_process=%.3f osd_op_ms=%.4f "
           "osd_op_measured=%d ahead=%llu clock_start=%.3f clock_end=%.3f crop_work=%.4f "
           "window=%u client_byte_ns=%.4f client_byte_measured=%d client_byte_counted=%d "
           "msgr_cpu=%.3f osd_speed=%.4f crop_speed=%.4f crop_speed_measured=%d\n",
           policy, (unsigned long long)st->epoch, (unsigned long long)st->samples,
           (unsigned long long)st->failed, (unsigned long long)st->bytes_received,
           (unsigned long long)st->predicted_bytes, (unsigned long long)st->offloaded,
           (unsigned long long)st->retries, (unsigned long long)st->fallbacks, st->elapsed_s, cpu_s,
           (double)st->osd_cpu_ns / 1e9, (unsigned long long)st->declined, st->predicted_epoch_s,
           (unsigned long long)st->crop_bytes, (unsigned long long)st->crop_samples,
           (unsigned long long)st->predicted_crop_bytes, st->bandwidth_Bps * 8 / 1e6,
           st->bandwidth_measured, st->storage_cores, st->storage_measured,
           (unsigned long long)st->demoted, st->prefetch, (double)st->osd_process_ns / 1e9,
           st->osd_op_s * 1e3, st->osd_op_measured, (unsigned long long)st->ahead, t0, t1,
           st->crop_work, st->window, st->client_byte_s * 1e9, st->client_byte_measured,
           st->client_byte_counted, (double)st->client_msgr_ns / 1e9, st->storage_speed,
           st->crop_speed, st->crop_speed_measured);
}

enum {
    OPT_DATASET = CLI_OPT_FIRST_CMD,
    OPT_POLICY,
    OPT_EPOCHS,
    OPT_FIRST_EPOCH,
    OPT_SEED,
    OPT_BATCH,
    OPT_SHARD,
    OPT_FORMAT,
    OPT_OUT,
    OPT_DISCARD,
    OPT_WINDOW,
    OPT_THREADS,
    OPT_NET,
    OPT_STORAGE,
    OPT_CLIENT,
    OPT_RETRIES,
    OPT_BACKOFF,
    OPT_TIMEOUT,
    OPT_NO_ADAPT,
    OPT_TRANSFORM,
    OPT_SIZE,
    OPT_RESIZE,
    OPT_SCALE,
    OPT_RATIO,
    OPT_MEAN,
    OPT_STD,
    OPT_STAGES,
    OPT_PREFETCH,
    OPT_TRACE,
};

static const struct option longopts[] = {
    CLI_COMMON_LONGOPTS,
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"first-epoch", required_argument, NULL, OPT_FIRST_EPOCH},
    {"seed", required_argument, NULL, OPT_SEED},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"out", required_argument, NULL, OPT_OUT},
    {"discard", no_argument, NULL, OPT_DISCARD},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"net", required_argument, NULL, OPT_NET},
    {"storage-cores", required_argument, NULL, OPT_STORAGE},
    {"client-cores", required_argument, NULL, OPT_CLIENT},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"backoff-ms", required_argument, NULL, OPT_BACKOFF},
    {"op-timeout", required_argument, NULL, OPT_TIMEOUT},
    {"no-adapt", no_argument, NULL, OPT_NO_ADAPT},
    {"transform", required_argument, NULL, OPT_TRANSFORM},
    {"size", required_argument, NULL, OPT_SIZE},
    {"resize", required_argument, NULL, OPT_RESIZE},
    {"scale", required_argument, NULL, OPT_SCALE},
    {"ratio", required_argument, NULL, OPT_RATIO},
    {"mean", required_argument, NULL, OPT_MEAN},
    {"std", required_argument, NULL, OPT_STD},
    {"stages", required_argument, NULL, OPT_STAGES},
    {"prefetch", required_argument, NULL, OPT_PREFETCH},
    {"trace", required_argument, NULL, OPT_TRACE},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct load_args {
    struct cli c;
    struct sophon_loader_options o;
    const char *dataset, *out_dir, *policy, *trace_path;
    uint64_t epochs, first, seed;
    int discard;
    FILE *trace; /* --trace's file */
};

/* An unsigned field of the loader's options, from min to max. */
static int parse_unsigned(const struct cli *c, const char *what, const char *s, unsigned min,
                          unsigned max, unsigned *out)
{
    uint64_t v;

    if (cli_parse_range(c, what, s, min, max, &v) < 0)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* One option of sophon load's own: 1 handled, 0 not one of them, -1 invalid (said why). */
static int load_option(void *arg_, int opt, const char *arg)
{
    struct load_args *a = arg_;
    const struct cli *c = &a->c;
    struct sophon_loader_options *o = &a->o;
    int r, f;

    switch (opt) {
    case OPT_DATASET:
        a->dataset = arg;
        return 1;
    case OPT_POLICY:
        o->policy = arg;
        r = cli_parse_policy(c, arg);
        break;
    case OPT_EPOCHS:
        r = cli_parse_u64(c, "--epochs", arg, 1000000, &a->epochs);
        break;
    case OPT_FIRST_EPOCH:
        r = cli_parse_u64(c, "--first-epoch", arg, UINT32_MAX, &a->first);
        break;
    case OPT_SEED:
        r = cli_parse_u64(c, "--seed", arg, UINT64_MAX, &a->seed);
        break;
    case OPT_BATCH:
        r = parse_unsigned(c, "--batch", arg, 1, 65536, &o->batch_size);
        break;
    case OPT_SHARD:
        r = parse_shard(c, arg, &o->rank, &o->world);
        break;
    case OPT_FORMAT:
        r = f = cli_parse_format(c, arg);
        if (f >= 0)
            o->format = f; /* the same values (cross_checks.h) */
        break;
    case OPT_OUT:
        a->out_dir = arg;
        return 1;
    case OPT_DISCARD:
        a->discard = 1;
        return 1;
    case OPT_TRACE:
        a->trace_path = arg;
        return 1;
    case OPT_PREFETCH:
        r = parse_unsigned(c, "--prefetch", arg, 1, 65536, &o->prefetch);
        break;
    case OPT_WINDOW:
        r = parse_unsigned(c, "--window", arg, 1, 4096, &o->window);
        break;
    case OPT_THREADS:
        r = parse_unsigned(c, "--threads", arg, 1, 256, &o->threads);
        break;
    case OPT_NET:
        r = cli_parse_net(c, arg, &o->bandwidth_Bps);
        break;
    case OPT_STORAGE:
        r = cli_parse_number(c, "--storage-cores", arg, 0, &o->storage_cores);
        break;
    case OPT_CLIENT:
        r = cli_parse_number(c, "--client-cores", arg, 0, &o->client_cores);
        break;
    case OPT_RETRIES:
        r = parse_unsigned(c, "--retries", arg, 1, 100, &o->retries);
        break;
    case OPT_BACKOFF:
        r = parse_unsigned(c, "--backoff-ms", arg, 1, 60000, &o->backoff_ms);
        break;
    case OPT_TIMEOUT:
        r = parse_unsigned(c, "--op-timeout", arg, 1, 3600, &o->op_timeout_s);
        break;
    case OPT_NO_ADAPT:
        o->no_adapt = 1;
        return 1;
    case OPT_STAGES: {
        char err[128];
        unsigned set;
        if (sophon_stages_parse(&set, arg, err, sizeof(err)) < 0) {
            cli_error(c, "--stages %s: %s", arg, err);
            return -1;
        }
        o->stages = arg;
        return 1;
    }
    case OPT_TRANSFORM:
        r = f = cli_parse_transform(c, arg);
        if (f >= 0)
            o->transform = f;
        break;
    case OPT_SIZE:
        r = parse_unsigned(c, "--size", arg, 1, SOPHON_MAX_SIDE, &o->size);
        break;
    case OPT_RESIZE:
        r = parse_unsigned(c, "--resize", arg, 1, SOPHON_MAX_RESIZE_SIDE, &o->resize);
        break;
    case OPT_SCALE:
        r = cli_parse_range_pair(c, "--scale", arg, o->scale);
        break;
    case OPT_RATIO:
        r = cli_parse_range_pair(c, "--ratio", arg, o->ratio);
        break;
    case OPT_MEAN:
        r = cli_parse_channels(c, "--mean", arg, 0, o->mean);
        break;
    case OPT_STD:
        r = cli_parse_channels(c, "--std", arg, 1, o->std);
        break;
    default:
        return 0;
    }
    return r < 0 ? -1 : 1;
}

/*
 * The command line into *a, checked, and --out's directory made. Returns 0, or -1 to exit with
 * *code (0 after --help, 2 for a usage error, 1 if the directory cannot be made).
 */
static int parse_args(int argc, char **argv, struct load_args *a, int *code)
{
    memset(a, 0, sizeof(*a));
    a->c.prog = "sophon load";
    a->o = (struct sophon_loader_options)SOPHON_LOADER_OPTIONS_INIT;
    a->o.format = SOPHON_SAMPLE_F32;
    a->epochs = 1;
    if (cli_parse_options(&a->c, argc, argv, "", longopts, usage, load_option, a, code) < 0)
        return -1;
    if (a->c.pool == NULL || optind != argc) {
        cli_error(&a->c, "want a pool: sophon load -p POOL [--dataset NAME]");
        return -1;
    }
    if (a->out_dir != NULL && a->discard) {
        cli_error(&a->c, "--out and --discard exclude each other");
        return -1;
    }
    if (a->o.transform == SOPHON_TRANSFORM_VAL && a->o.resize < a->o.size) {
        cli_error(&a->c,
                  "--resize %u is smaller than --size %u: torchvision would pad the centre crop "
                  "with black, which sophon does not do",
                  a->o.resize, a->o.size);
        return -1;
    }
    if (a->out_dir != NULL && mkdir(a->out_dir, 0777) < 0 && errno != EEXIST) {
        cli_error(&a->c, "cannot create %s: %s", a->out_dir, strerror(errno));
        *code = 1;
        return -1;
    }
    if (a->trace_path != NULL) {
        a->trace = fopen(a->trace_path, "w");
        if (a->trace == NULL || fputs(trace_header, a->trace) == EOF) {
            cli_error(&a->c, "cannot write the trace to %s: %s", a->trace_path, strerror(errno));
            if (a->trace != NULL)
                fclose(a->trace);
            a->trace = NULL;
            *code = 1;
            return -1;
        }
        a->o.trace = trace_sample;
        a->o.trace_arg = a->trace;
    }
    if (a->dataset == NULL)
        a->dataset = a->c.pool;
    a->policy = a->o.policy != NULL ? a->o.policy : "selective";
    return 0;
}

/* The loader on the dataset, as the connection options say. Returns 0 or -1 (said why). */
static int open_loader(struct load_args *a, sophon_loader **l)
{
    const struct cli *c = &a->c;
    /* --id X and -n client.X both name client.X; the loader takes the id. */
    const char *id = c->name != NULL && strncmp(c->name, "client.", 7) == 0 ? c->name + 7 : c->name;
    int r;

    a->o.keyring = c->keyring;
    a->o.nspace = c->nspace;
    r = sophon_loader_open(l, c->conf, id, c->pool, a->dataset, &a->o);
    if (r < 0) {
        cli_error(c, "cannot load dataset %s from pool %s: %s", a->dataset, c->pool, strerror(-r));
        return -1;
    }
    printf("dataset %s: %zu samples, %zu classes; shard %u/%u, batch %u, %s %ux%u, %s\n",
           a->dataset, sophon_loader_dataset_size(*l), sophon_loader_classes(*l), a->o.rank,
           a->o.world, a->o.batch_size, a->o.transform == SOPHON_TRANSFORM_VAL ? "val" : "train",
           a->o.size, a->o.size, sophon_format_name(a->o.format));
    fflush(stdout);
    return 0;
}

/* Takes every batch of the started epoch, into eo's files, with a progress bar. Returns 0 or a
 * negative errno (-EIO: the files could not be written, said already). */
static int take_batches(struct load_args *a, sophon_loader *l, uint64_t e, struct epoch_out *eo)
{
    const struct sophon_batch *b;
    struct progress pr;
    char what[64];
    size_t expect = sophon_loader_dataset_size(l);
    int r;

    expect = expect / a->o.world + (a->o.rank < expect % a->o.world);
    snprintf(what, sizeof(what), "epoch %llu", (unsigned long long)e);
    progress_start(&pr, what, expect);
    while ((r = sophon_loader_next(&b, l)) == 1) {
        if (out_batch(eo, b) < 0) {
            cli_error(&a->c, "cannot write the batches to %s: %s", a->out_dir, strerror(errno));
            r = -EIO;
            break;
        }
        progress_add(&pr, b->n, (uint64_t)b->n * b->sample_bytes);
    }
    progress_end(&pr);
    return r;
}

/* Epoch e: its batches and its report. Returns 0, 1 if samples failed, -1 on an error (said). */
static int run_epoch(struct load_args *a, sophon_loader *l, uint64_t e)
{
    struct sophon_loader_stats st = SOPHON_LOADER_STATS_INIT;
    struct epoch_out eo;
    double cpu0, cpu;
    int r;

    if (out_open(&a->c, &eo, a->out_dir, e) < 0)
        return -1;
    cpu0 = process_cpu_s();
    double t0 = progress_now();
    r = sophon_loader_epoch_start(l, a->seed, e);
    if (r < 0) {
        cli_error(&a->c, "cannot start epoch %llu: %s", (unsigned long long)e, strerror(-r));
        out_close(&eo);
        return -1;
    }
    r = take_batches(a, l, e, &eo);
    double t1 = progress_now();
    cpu = process_cpu_s() - cpu0;
    if (out_close(&eo) < 0 && r >= 0) {
        cli_error(&a->c, "cannot write the batches to %s", a->out_dir);
        r = -EIO;
    }
    if (r < 0) {
        if (r != -EIO)
            cli_error(&a->c, "epoch %llu: %s", (unsigned long long)e, strerror(-r));
        return -1;
    }
    r = sophon_loader_stats_get(&st, l);
    if (r < 0) {
        cli_error(&a->c, "epoch %llu: no statistics: %s", (unsigned long long)e, strerror(-r));
        return -1;
    }
    report(&st, cpu, a->policy, t0, t1);
    fflush(stdout);
    return st.failed > 0 ? 1 : 0;
}

int cmd_load(int argc, char **argv)
{
    struct load_args a;
    sophon_loader *l = NULL;
    int code, r;

    if (parse_args(argc, argv, &a, &code) < 0)
        return code;
    if (open_loader(&a, &l) < 0) {
        if (a.trace != NULL)
            fclose(a.trace);
        return 1;
    }
    code = 0;
    for (uint64_t e = a.first; e < a.first + a.epochs; e++) {
        r = run_epoch(&a, l, e);
        if (r != 0)
            code = 1;
        if (r < 0)
            break;
    }
    sophon_loader_close(l);
    if (a.trace != NULL && cli_close_written(a.trace) < 0) {
        cli_error(&a.c, "cannot write the trace to %s: %s", a.trace_path, strerror(EIO));
        code = 1;
    }
    return code;
}
