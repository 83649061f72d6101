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
#include "cross_checks.h"
#include "dataset.h"
#include "selector.h"

static const char usage[] =
    "Usage: sophon plan (-p POOL [--dataset NAME] | --records FILE.csv) --net RATE\n"
    "                   --storage-cores N --client-cores N [--gpu SAMPLES/S] [--format u8|f32]\n"
    "                   [--storage-speed X] [--policy P | --compare] [--out FILE.csv]\n"
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
    "      --storage-speed X   an OSD core's speed relative to a client core (default: the\n"
    "                          dataset's calibration, else 1)\n"
    "      --policy P          none, all, resize, sophon, selective (default), oracle\n"
    "      --compare           every policy (the default when --policy is not given)\n"
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
    return 0;
}

int cmd_plan(int argc, char **argv)
{
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
        OPT_OUT
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
        {NULL, 0, NULL, 0}};
    struct cli c = {.prog = "sophon plan"};
    struct sophon_budget budget = SOPHON_BUDGET_INIT;
    struct sophon_dataset ds = {0};
    sophon_records *set = NULL;
    const char *dataset = NULL, *records = NULL, *out_path = NULL;
    int have_net = 0, have_storage = 0, have_client = 0, policy = -1, compare = 0;
    double speed = 0;
    int opt, r, code = 1;

    while ((opt = getopt_long(argc, argv, CLI_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(usage, stdout);
            return 0;
        case OPT_DATASET:
            dataset = optarg;
            continue;
        case OPT_RECORDS:
            records = optarg;
            continue;
        case OPT_NET:
            if (cli_parse_net(&c, optarg, &budget.bandwidth_Bps) < 0)
                return 2;
            have_net = 1;
            continue;
        case OPT_STORAGE:
            if (cli_parse_number(&c, "--storage-cores", optarg, 1, &budget.storage_cores) < 0)
                return 2;
            have_storage = 1;
            continue;
        case OPT_CLIENT:
            if (cli_parse_number(&c, "--client-cores", optarg, 1, &budget.client_cores) < 0)
                return 2;
            have_client = 1;
            continue;
        case OPT_GPU:
            if (cli_parse_number(&c, "--gpu", optarg, 1, &budget.gpu_samples_per_s) < 0)
                return 2;
            continue;
        case OPT_FORMAT: {
            int f = cli_parse_format(&c, optarg);
            if (f < 0)
                return 2;
            budget.final_format = f;
            continue;
        }
        case OPT_SPEED:
            if (cli_parse_number(&c, "--storage-speed", optarg, 0, &speed) < 0)
                return 2;
            continue;
        case OPT_POLICY:
            policy = cli_parse_policy(&c, optarg);
            if (policy < 0)
                return 2;
            continue;
        case OPT_COMPARE:
            compare = 1;
            continue;
        case OPT_OUT:
            out_path = optarg;
            continue;
        }
        if (cli_common_or_usage(&c, opt, optarg, usage) < 0)
            return 2;
    }
    if (optind != argc || (c.pool == NULL) == (records == NULL)) {
        cli_error(&c, "plan a dataset in the cluster (-p POOL) or a records file (--records "
                      "FILE.csv), one of them");
        return 2;
    }
    if (!have_net || !have_storage || !have_client) {
        cli_error(&c, "give the budgets: --net RATE --storage-cores N --client-cores N");
        return 2;
    }
    if (records != NULL) {
        if (read_records(&c, records, &set) < 0)
            return 1;
    } else {
        char err[256] = "";
        if (dataset == NULL)
            dataset = c.pool;
        if (cli_connect(&c) < 0)
            return 1;
        r = sophon__dataset_read(&ds, c.io, dataset, err, sizeof(err));
        cli_disconnect(&c);
        if (r < 0) {
            cli_error(&c, "%s", err[0] ? err : strerror(-r));
            return 1;
        }
        set = ds.records;
        ds.records = NULL;
        budget.storage_speed = ds.storage_speed;
    }
    if (speed > 0)
        budget.storage_speed = speed;
    if (policy < 0) {
        policy = SOPHON_POLICY_SELECTIVE;
        compare = 1;
    }

    size_t n = sophon_records_count(set);
    printf(
        "%zu objects, %.0f Mbit/s, %g storage cores (speed %.2f), %g client cores, %s output%s\n",
        n, budget.bandwidth_Bps * 8 / 1e6, budget.storage_cores, budget.storage_speed,
        budget.client_cores, sophon_format_name(budget.final_format),
        budget.gpu_samples_per_s > 0 ? ", GPU-bound" : "");
    printf("%-10s %10s %9s %10s %9s %9s %10s\n", "policy", "GB sent", "net s", "storage s",
           "client s", "epoch s", "offloaded");
    struct sophon_plan *chosen = NULL;
    for (int p = 0; p < SOPHON_POLICY_COUNT; p++) {
        if (!compare && p != policy)
            continue;
        struct sophon_plan *plan = NULL;
        budget.policy = p;
        r = sophon_plan_make(&plan, set, &budget);
        if (r < 0) {
            printf("%-10s (not possible under these budgets: %s)\n", sophon_policy_name(p),
                   strerror(-r));
            continue;
        }
        print_row(plan);
        if (p == policy)
            chosen = plan;
        else
            sophon_plan_free(plan);
    }
    if (chosen == NULL) {
        cli_error(&c, "no plan for policy %s", sophon_policy_name(policy));
        goto done;
    }
    size_t per_stage[SOPHON_STAGE_COUNT] = {0};
    for (size_t i = 0; i < n; i++)
        per_stage[chosen->stage[i]]++;
    printf("%s: ", sophon_policy_name(policy));
    for (int s = 0; s < SOPHON_STAGE_COUNT; s++)
        printf("%s%zu %s", s ? ", " : "", per_stage[s], sophon_stage_name(s));
    printf("; modelled epoch %.2f s\n", chosen->epoch_s);
    if (out_path != NULL) {
        FILE *f = fopen(out_path, "w");
        if (f == NULL) {
            cli_error(&c, "cannot write %s: %s", out_path, strerror(errno));
            sophon_plan_free(chosen);
            goto done;
        }
        fprintf(f, "name,stage\n");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s,%s\n", sophon_records_get(set, i)->name,
                    sophon_stage_name(chosen->stage[i]));
        if (cli_close_written(f) < 0) {
            cli_error(&c, "writing %s failed: %s", out_path, strerror(EIO));
            sophon_plan_free(chosen);
            goto done;
        }
    }
    sophon_plan_free(chosen);
    code = 0;
done:
    sophon_records_free(set);
    sophon__dataset_free(&ds);
    return code;
}
