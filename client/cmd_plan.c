/*
 * cmd_plan.c - `sophon plan`: per-object offload decisions for a dataset under network and CPU
 * budgets, every policy side by side.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cpus.h"
#include "sophon_config.h"
#include "cross_checks.h"
#include "dataset.h"
#include "selector.h"

static const char usage[] =
    "Usage: sophon plan (-p POOL [--dataset NAME] | --records FILE.csv) --net RATE\n"
    "                   --storage-cores N --client-cores N [--gpu SAMPLES/S] [--format u8|f32]\n"
    "                   [--storage-speed X] [--size N] [--policy P | --compare] [--out FILE.csv]\n"
    "Plans at which stage each object leaves the OSD, from the dataset's records (`sophon\n"
    "profile`) or a CSV file: sophon-records, or the SOPHON paper's OpenImages profile (its\n"
    "CPU costs then come from the cost model calibrated on real JPEGs). Prints, per policy, the\n"
    "bytes sent, the network, storage CPU and client CPU times, the modelled epoch time (their\n"
    "maximum) and the samples offloaded.\n\n"
    "      --net RATE          network bandwidth: 500Mbit, 10Gbit, 100MB (bytes) per second\n"
    "      --storage-cores N   OSD cores available for offload, all OSDs together\n"
    "      --client-cores N    client cores preparing samples\n"
    "      --gpu N             training throughput in samples/s (default: unlimited)\n"
    "      --format F          what training consumes: f32 (default) or u8\n"
    "      --storage-speed X   an OSD core's speed against the cost model (default: the\n"
    "                          dataset's calibration, else 1)\n"
    "      --size N            plan for N x N samples (default: the records' own figures, 224);\n"
    "                          the CPU costs stay the records'\n"
    "      --policy P          none, all, resize, sophon, selective (default), oracle\n"
    "      --compare           every policy (the default when --policy is not given)\n"
    "      --stages LIST       the stages the plan may choose, of stored, crop, u8, f32 (default\n"
    "                          all; stored,u8 is sophon before the lossless crop stage). The\n"
    "                          crop's bytes of records that were not measured (the OpenImages\n"
    "                          profile) are modelled: stored bytes x the crop's expected share\n"
    "      --out FILE.csv      the chosen policy's plan: object name and stage per "
    "line\n\n" CLI_COMMON_HELP;

static void print_row(const struct sophon_plan *p)
{
    printf("%-10s %10.3f %9.2f %10.2f %9.2f %9.2f %10zu", sophon_policy_name(p->policy),
           (double)p->total_bytes / 1e9, p->net_s, p->storage_s, p->client_s, p->epoch_s,
           p->offloaded);
    if (p->policy == SOPHON_POLICY_SELECTIVE && p->chosen_from != SOPHON_POLICY_SELECTIVE)
        printf("  (kept %s's plan)", sophon_policy_name(p->chosen_from));
    putchar('\n');
}

static int read_records(const struct cli *c, const char *path, sophon_records **out)
{
    char head[16] = "", err[256] = "";
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        cli_error(c, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    /* The OpenImages profile starts with "index;raw"; ours with "name,". */
    size_t got = fread(head, 1, sizeof(head) - 1, f);
    head[got] = '\0';
    rewind(f);
    int r = strncmp(head, "index;raw", 9) == 0
                ? sophon_records_import_openimages(out, f, NULL, err, sizeof(err))
                : sophon_records_read_csv(out, f, err, sizeof(err));
    fclose(f);
    if (r < 0) {
        cli_error(c, "%s: %s", path, err[0] ? err : strerror(-r));
        return -1;
    }
    if (strncmp(head, "index;raw", 9) == 0)
        printf("the SOPHON paper's OpenImages profile: sizes measured, CPU costs and the crop "
               "stage's bytes modelled (crop = %.2f x stored bytes)\n",
               SOPHON_SEL_CROP_SHARE);
    return 0;
}

enum {
    OPT_DATASET = CLI_OPT_FIRST_CMD,
    OPT_RECORDS,
    OPT_NET,
    OPT_STORAGE,
    OPT_CLIENT,
    OPT_GPU,
    OPT_FORMAT,
    OPT_SPEED,
    OPT_POLICY,
    OPT_COMPARE,
    OPT_OUT,
    OPT_SIZE,
    OPT_STAGES,
};

static const struct option longopts[] = {
    CLI_COMMON_LONGOPTS,
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"records", required_argument, NULL, OPT_RECORDS},
    {"net", required_argument, NULL, OPT_NET},
    {"storage-cores", required_argument, NULL, OPT_STORAGE},
    {"client-cores", required_argument, NULL, OPT_CLIENT},
    {"gpu", required_argument, NULL, OPT_GPU},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"storage-speed", required_argument, NULL, OPT_SPEED},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"compare", no_argument, NULL, OPT_COMPARE},
    {"out", required_argument, NULL, OPT_OUT},
    {"size", required_argument, NULL, OPT_SIZE},
    {"stages", required_argument, NULL, OPT_STAGES},
    {NULL, 0, NULL, 0},
};

/* What the command line asks for. */
struct plan_args {
    struct cli c;
    struct sophon_budget budget;
    const char *dataset, *records, *out_path;
    int have_net, have_storage, have_client;
    int policy, compare;  /* policy -1: not given */
    double speed;         /* --storage-speed, 0: not given */
    double client_speed;  /* the profiling client's speed against the cost model (dataset.h) */
    double osd_op_s;      /* the OSDs' CPU per operation: as profiled (dataset.h), else built-in */
    int op_profiled;      /* 1 if osd_op_s is the profile's */
    double client_byte_s; /* the client's (librados's) per byte received: the same */
    int client_byte_profiled;
    double crop_factor; /* the crop stage's OSD CPU against the model's figure for it, relative to
                         * the pipeline's (the profile's speeds: dataset.h); 1: not profiled */
    int crop_profiled;
    uint64_t size;   /* --size, 0: not given */
    unsigned stages; /* --stages, selector.h's bits */
};

/* One option of sophon plan's own: 1 handled, 0 not one of them, -1 invalid (said why). */
static int plan_option(void *arg_, int opt, const char *arg)
{
    struct plan_args *a = arg_;
    const struct cli *c = &a->c;
    struct sophon_budget *b = &a->budget;
    int r;

    switch (opt) {
    case OPT_DATASET:
        a->dataset = arg;
        return 1;
    case OPT_RECORDS:
        a->records = arg;
        return 1;
    case OPT_NET:
        a->have_net = 1;
        r = cli_parse_net(c, arg, &b->bandwidth_Bps);
        break;
    case OPT_STORAGE:
        a->have_storage = 1;
        r = cli_parse_number(c, "--storage-cores", arg, 1, &b->storage_cores);
        break;
    case OPT_CLIENT:
        a->have_client = 1;
        r = cli_parse_number(c, "--client-cores", arg, 1, &b->client_cores);
        break;
    case OPT_GPU:
        r = cli_parse_number(c, "--gpu", arg, 1, &b->gpu_samples_per_s);
        break;
    case OPT_FORMAT:
        r = cli_parse_format(c, arg);
        if (r >= 0)
            b->final_format = r; /* the same values (cross_checks.h) */
        break;
    case OPT_SPEED:
        r = cli_parse_number(c, "--storage-speed", arg, 0, &a->speed);
        break;
    case OPT_POLICY:
        r = a->policy = cli_parse_policy(c, arg);
        break;
    case OPT_SIZE:
        return cli_parse_range(c, "--size", arg, 1, SOPHON_MAX_SIDE, &a->size) < 0 ? -1 : 1;
    case OPT_COMPARE:
        a->compare = 1;
        return 1;
    case OPT_STAGES: {
        char err[128];
        if (sophon_stages_parse(&a->stages, arg, err, sizeof(err)) < 0) {
            cli_error(c, "--stages %s: %s", arg, err);
            return -1;
        }
        return 1;
    }
    case OPT_OUT:
        a->out_path = arg;
        return 1;
    default:
        return 0;
    }
    return r < 0 ? -1 : 1;
}

/* The command line into *a, checked. Returns 0, or -1 to exit with *code (0 after --help). */
static int parse_args(int argc, char **argv, struct plan_args *a, int *code)
{
    memset(a, 0, sizeof(*a));
    a->c.prog = "sophon plan";
    a->budget = (struct sophon_budget)SOPHON_BUDGET_INIT;
    a->policy = -1;
    a->client_speed = 1.0;
    a->crop_factor = 1.0;
    a->osd_op_s = SOPHON_SEL_OSD_OP_S;
    a->client_byte_s = SOPHON_SEL_CLIENT_BYTE_S;
    a->stages = SOPHON_STAGES_ALL;
    if (cli_parse_options(&a->c, argc, argv, "", longopts, usage, plan_option, a, code) < 0)
        return -1;
    if (optind != argc || (a->c.pool == NULL) == (a->records == NULL)) {
        cli_error(&a->c, "plan a dataset in the cluster (-p POOL) or a records file (--records "
                         "FILE.csv), one of them");
        return -1;
    }
    if (!a->have_net || !a->have_storage || !a->have_client) {
        cli_error(&a->c, "give the budgets: --net RATE --storage-cores N --client-cores N");
        return -1;
    }
    if (a->policy < 0) {
        a->policy = SOPHON_POLICY_SELECTIVE;
        a->compare = 1;
    }
    return 0;
}

/* The records to plan, from --records or the dataset's index (whose calibration sets the
 * storage speed unless --storage-speed does). Returns 0 or -1 (said why). */
static int load_records(struct plan_args *a, sophon_records **set)
{
    struct sophon_dataset ds;
    char err[256] = "";
    int r;

    if (a->records != NULL) {
        if (read_records(&a->c, a->records, set) < 0)
            return -1;
    } else {
        if (a->dataset == NULL)
            a->dataset = a->c.pool;
        if (cli_connect(&a->c) < 0)
            return -1;
        r = sophon__dataset_read(&ds, a->c.io, a->dataset, err, sizeof(err));
        cli_disconnect(&a->c);
        if (r < 0) {
            cli_error(&a->c, "%s", err[0] ? err : strerror(-r));
            return -1;
        }
        *set = ds.records;
        ds.records = NULL;
        a->budget.storage_speed = ds.storage_speed;
        a->client_speed = ds.client_speed;
        if (ds.osd_op_s > 0) {
            a->osd_op_s = ds.osd_op_s;
            a->op_profiled = 1;
        }
        if (ds.client_byte_s > 0) {
            a->client_byte_s = ds.client_byte_s;
            a->client_byte_profiled = 1;
        }
        if (ds.crop_speed > 0) {
            a->crop_factor = ds.storage_speed / ds.crop_speed;
            a->crop_profiled = 1;
        }
        sophon__dataset_free(&ds);
    }
    if (a->speed > 0)
        a->budget.storage_speed = a->speed;
    if (a->size > 0)
        sophon_records_set_side(*set, (uint32_t)a->size);
    sophon_records_restrict(*set, a->stages);
    /* A dataset of this cluster is planned as the loader plans it: images its OSDs refuse for
     * their size stay stored. A records file (the paper's profile, another cluster's records) is
     * planned as it is. */
    long over = a->records == NULL ? sophon_records_limit_pixels(*set, SOPHON_OSD_MAX_PIXELS) : 0;
    if (over > 0)
        printf("%ld object(s) over the OSDs' %u megapixels a call: never offloaded\n", over,
               (unsigned)SOPHON_OSD_MAX_MEGAPIXELS);
    return 0;
}

/* The policies that place every object alike, whatever it is. */
static int is_static(int policy)
{
    return policy == SOPHON_POLICY_NONE || policy == SOPHON_POLICY_ALL ||
           policy == SOPHON_POLICY_RESIZE;
}

/* Selective's LP bound: no placement of the stages offered models a shorter epoch, so it caps
 * what any plan can gain over sophon's rule and the static policies (in the model). Printed
 * when selective was planned (bound_s > 0), with the ratios of the others planned. */
static void print_bound(double bound_s, double sophon_s, int static_p, double static_s)
{
    if (bound_s <= 0)
        return;
    printf("%-10s %52.2f  no plan of these stages models a shorter epoch (LP bound)", "bound",
           bound_s);
    if (sophon_s > 0)
        printf("; sophon's rule %.2fx it", sophon_s / bound_s);
    if (static_p >= 0)
        printf(", the best static policy (%s) %.2fx", sophon_policy_name(static_p),
               static_s / bound_s);
    putchar('\n');
}

/* Prints the budget and one row per policy planned (every one with --compare); *chosen gets the
 * plan of the policy asked for, NULL if it is not possible. */
static void print_plans(const struct plan_args *a, const sophon_records *set,
                        struct sophon_plan **chosen)
{
    const struct sophon_budget *b = &a->budget;

    /* The client's CPU per byte is counted where a loader here could not run librados on a
     * core beyond the client's (loader.c). */
    int byte_counted = sophon__msgr_on_client_cores(b->client_cores);
    printf("%zu objects, %.0f Mbit/s (%.1f of payload), %g storage cores (speed %.2f, the crop "
           "stage %.2fx the u8 pipeline's CPU, %s; %.2f ms an operation beyond the preparations, "
           "%s), %g client cores (speed %.2f, %.2f ns a byte in librados, %s, %s), %s output%s\n",
           sophon_records_count(set), b->bandwidth_Bps * 8 / 1e6,
           b->bandwidth_Bps * SOPHON_SEL_LINK_PAYLOAD * 8 / 1e6, b->storage_cores, b->storage_speed,
           SOPHON_SEL_CROP_OSD * a->crop_factor, a->crop_profiled ? "profiled" : "built-in",
           a->osd_op_s * 1e3, a->op_profiled ? "profiled" : "built-in", b->client_cores,
           a->client_speed, a->client_byte_s * 1e9,
           a->client_byte_profiled ? "profiled" : "built-in",
           byte_counted ? "counted: no core beyond them" : "not counted: a core to spare",
           sophon_format_name(b->final_format), b->gpu_samples_per_s > 0 ? ", GPU-bound" : "");
    /* As the loader plans its first epoch: the link's payload, the client at the profile's
     * speed, the OSDs' CPU per operation and the client's per byte (selector.h). */
    struct sophon_budget planned = *b;
    planned.bandwidth_Bps *= SOPHON_SEL_LINK_PAYLOAD;
    planned.client_cores *= a->client_speed;
    if (byte_counted)
        planned.client_byte_s = a->client_byte_s * a->client_speed;
    printf("%-10s %10s %9s %10s %9s %9s %10s\n", "policy", "GB sent", "net s", "storage s",
           "client s", "epoch s", "offloaded");
    *chosen = NULL;
    double bound_s = 0, sophon_s = 0, static_s = 0;
    int static_p = -1;
    for (int p = 0; p < SOPHON_POLICY_COUNT; p++) {
        struct sophon_plan *plan = NULL;
        int r;

        if (!a->compare && p != a->policy)
            continue;
        planned.policy = p;
        r = sophon_plan_make(&plan, set, &planned);
        if (r < 0) {
            printf("%-10s (not possible under these budgets: %s)\n", sophon_policy_name(p),
                   strerror(-r));
            continue;
        }
        print_row(plan);
        if (p == SOPHON_POLICY_SELECTIVE)
            bound_s = plan->lower_bound_s;
        else if (p == SOPHON_POLICY_SOPHON)
            sophon_s = plan->epoch_s;
        else if (is_static(p) && (static_p < 0 || plan->epoch_s < static_s)) {
            static_p = p;
            static_s = plan->epoch_s;
        }
        if (p == a->policy)
            *chosen = plan;
        else
            sophon_plan_free(plan);
    }
    print_bound(bound_s, sophon_s, static_p, static_s);
}

/* The chosen plan's objects per stage. */
static void print_stages(const struct sophon_plan *plan, int policy)
{
    size_t per_stage[SOPHON_STAGE_COUNT] = {0};

    for (size_t i = 0; i < plan->n; i++)
        per_stage[plan->stage[i]]++;
    printf("%s: ", sophon_policy_name(policy));
    for (int s = 0; s < SOPHON_STAGE_COUNT; s++)
        printf("%s%zu %s", s ? ", " : "", per_stage[s], sophon_stage_name(s));
    printf("; modelled epoch %.2f s\n", plan->epoch_s);
}

/* --out: the plan as "name,stage" lines. Returns 0 or -1 (said why). */
static int write_plan(const struct plan_args *a, const sophon_records *set,
                      const struct sophon_plan *plan)
{
    FILE *f = fopen(a->out_path, "w");

    if (f == NULL) {
        cli_error(&a->c, "cannot write %s: %s", a->out_path, strerror(errno));
        return -1;
    }
    fprintf(f, "name,stage\n");
    for (size_t i = 0; i < plan->n; i++)
        fprintf(f, "%s,%s\n", sophon_records_get(set, i)->name, sophon_stage_name(plan->stage[i]));
    if (cli_close_written(f) < 0) {
        cli_error(&a->c, "writing %s failed: %s", a->out_path, strerror(EIO));
        return -1;
    }
    return 0;
}

int cmd_plan(int argc, char **argv)
{
    struct plan_args a;
    sophon_records *set = NULL;
    struct sophon_plan *chosen = NULL;
    int code;

    if (parse_args(argc, argv, &a, &code) < 0)
        return code;
    code = 1;
    if (load_records(&a, &set) < 0)
        goto done;
    /* The crop stage as the profile measured it against the pipeline, as the loader plans it. */
    if (sophon_records_scale_stage(set, SOPHON_STAGE_CROP, a.crop_factor) < 0 ||
        sophon_records_add_osd_op(set, a.osd_op_s * a.budget.storage_speed) < 0)
        goto done;
    print_plans(&a, set, &chosen);
    if (chosen == NULL) {
        cli_error(&a.c, "no plan for policy %s", sophon_policy_name(a.policy));
        goto done;
    }
    print_stages(chosen, a.policy);
    if (a.out_path != NULL && write_plan(&a, set, chosen) < 0)
        goto done;
    code = 0;
done:
    sophon_plan_free(chosen);
    sophon_records_free(set);
    return code;
}
