/*
 * bench_selector.c - policy tables on the OpenImages profile and the planner's speed.
 *
 *     bench_selector OPENIMAGES_CSV [N]
 *
 * Prints, for 500 Mbit/s, 32 client cores and 5 then 20 storage cores (f32 and u8 final
 * formats), one markdown table per budget: per policy the bytes sent, the modelled network,
 * storage, client and epoch times and the number of offloaded objects. Then times one
 * selective plan of N records (default 1,000,000: the profile repeated with jittered sizes) on
 * one core (thread CPU time). A benchmark, not a test: it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "selector.h"

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int table(const sophon_records *set, double mbit, double storage_cores, int final_format)
{
    printf("\n%g Mbit/s, %g storage cores, 32 client cores, %s output, %zu objects\n\n", mbit,
           storage_cores, final_format == SOPHON_FINAL_F32 ? "f32" : "u8",
           sophon_records_count(set));
    printf("| policy | GB sent | net s | storage s | client s | epoch s | offloaded |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int q = 0; q < SOPHON_POLICY_COUNT; q++) {
        struct sophon_budget b = SOPHON_BUDGET_INIT;
        struct sophon_plan *pl;
        b.bandwidth_Bps = mbit * 1e6 / 8;
        b.storage_cores = storage_cores;
        b.client_cores = 32;
        b.final_format = final_format;
        b.policy = q;
        double t0 = thread_cpu_s();
        int rc = sophon_plan_make(&pl, set, &b);
        double t1 = thread_cpu_s();
        if (rc < 0) {
            fprintf(stderr, "plan %s: %d\n", sophon_policy_name(q), rc);
            return 1;
        }
        printf("| %s | %.3f | %.2f | %.2f | %.2f | **%.2f** | %zu |", sophon_policy_name(q),
               (double)pl->total_bytes * 1e-9, pl->net_s, pl->storage_s, pl->client_s, pl->epoch_s,
               pl->offloaded);
        if (q == SOPHON_POLICY_SELECTIVE)
            printf(" LP bound %.4f s, rounding bound %.2g s, %zu fractional, %u rounds, kept %s, "
                   "%.0f ms |",
                   pl->lower_bound_s, pl->rounding_bound_s, pl->fractional, pl->iterations,
                   sophon_policy_name(pl->chosen_from), (t1 - t0) * 1e3);
        printf("\n");
        sophon_plan_free(pl);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s OPENIMAGES_CSV [N]\n", argv[0]);
        return 2;
    }
    size_t big = 1000000;
    if (argc == 3) {
        char *end;
        unsigned long long v = strtoull(argv[2], &end, 10);
        if (*end || v == 0 || v > 100000000ull) {
            fprintf(stderr, "bad N\n");
            return 2;
        }
        big = (size_t)v;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    sophon_records *set = NULL, *many = NULL;
    char err[128] = "";
    int rc = sophon_records_import_openimages(&set, f, NULL, err, sizeof(err));
    fclose(f);
    if (rc < 0) {
        fprintf(stderr, "import: %d %s\n", rc, err);
        return 1;
    }
    for (int k = 0; k < 2; k++)
        for (int fmt = SOPHON_FINAL_F32; fmt >= SOPHON_FINAL_U8; fmt--)
            if (table(set, 500, k ? 20 : 5, fmt))
                return 1;
    /* Where CPU binds: fewer storage cores, or a faster network. */
    if (table(set, 500, 1, SOPHON_FINAL_F32) || table(set, 10000, 20, SOPHON_FINAL_F32) ||
        table(set, 10000, 5, SOPHON_FINAL_F32))
        return 1;

    /* N records: the profile repeated, stored sizes jittered by up to +-5% so that no two
     * objects are alike. */
    if (sophon_records_new(&many) < 0)
        return 1;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t n40 = sophon_records_count(set);
    for (size_t i = 0; i < big; i++) {
        struct sophon_record r = *sophon_records_get(set, i % n40);
        char name[32];
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double j = 0.95 + 0.1 * (double)(x >> 11) / 9007199254740992.0;
        snprintf(name, sizeof(name), "obj%zu", i);
        r.name = name;
        r.stored_bytes = (uint64_t)((double)r.stored_bytes * j) + 1;
        if (sophon_cost_model_fill(&r, NULL) < 0 || sophon_records_add(many, &r) < 0)
            return 1;
    }
    static const double mbits[3] = {500, 500, 10000}, cores[3] = {5, 20, 5};
    for (int k = 0; k < 3; k++) {
        struct sophon_budget b = SOPHON_BUDGET_INIT;
        struct sophon_plan *pl;
        b.bandwidth_Bps = mbits[k] * 1e6 / 8 * (double)big / (double)n40;
        b.storage_cores = cores[k] * (double)big / (double)n40;
        b.client_cores = 32.0 * (double)big / (double)n40;
        double t0 = thread_cpu_s();
        rc = sophon_plan_make(&pl, many, &b);
        double t1 = thread_cpu_s();
        if (rc < 0) {
            fprintf(stderr, "plan: %d\n", rc);
            return 1;
        }
        printf("\nselective plan of %zu records (budget scaled x%.0f from %g Mbit/s, %g storage "
               "cores per 40k): %.3f s CPU; epoch %.3f s, LP bound %.3f s, %u rounds, "
               "%zu fractional, kept %s\n",
               big, (double)big / (double)n40, mbits[k], cores[k], t1 - t0, pl->epoch_s,
               pl->lower_bound_s, pl->iterations, pl->fractional,
               sophon_policy_name(pl->chosen_from));
        sophon_plan_free(pl);
    }
    sophon_records_free(many);
    sophon_records_free(set);
    return 0;
}
