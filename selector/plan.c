/*
 * plan.c - budgets, the epoch model, and the simple policies (none, all, resize, sophon, oracle).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "selector.h"
#include "selector_internal.h"
#include "sophon_common.h"

#define S SOPHON_STAGE_COUNT
#define R SOPHON__RES

static const char *const policy_names[SOPHON_POLICY_COUNT] = {
    "none", "all", "resize", "sophon", "selective", "oracle",
};

const char *sophon_policy_name(int policy)
{
    return sophon__name_of(policy_names, SOPHON_POLICY_COUNT, policy, "unknown");
}

int sophon_policy_from_name(const char *name)
{
    return sophon__index_of(policy_names, SOPHON_POLICY_COUNT, name);
}

/* The budget's client CPU per byte received (version 2 on), 0 where the client has no cores. */
static double client_byte(const struct sophon_budget *b)
{
    return b->version >= 2 && b->client_cores > 0 ? b->client_byte_s : 0.0;
}

static int budget_ok(const struct sophon_budget *b)
{
    if (b->version >= 2 && !(isfinite(b->client_byte_s) && b->client_byte_s >= 0))
        return 0;
    return b->version >= 1 && b->version <= SOPHON_BUDGET_VERSION && isfinite(b->bandwidth_Bps) &&
           b->bandwidth_Bps > 0 && b->storage_cores >= 0 && b->storage_speed > 0 &&
           b->client_cores >= 0 && b->gpu_samples_per_s >= 0 && !isnan(b->gpu_samples_per_s) &&
           (b->final_format == SOPHON_FINAL_U8 || b->final_format == SOPHON_FINAL_F32) &&
           b->policy >= 0 && b->policy < SOPHON_POLICY_COUNT;
}

/* Seconds a resource of capacity cap (units per second) needs for usage units. */
static double rtime(double usage, double cap)
{
    if (usage == 0.0 || isinf(cap))
        return 0.0;
    if (cap == 0.0)
        return INFINITY;
    return usage / cap;
}

/* Whether the final format allows a stage (and the record offers it). */
static int stage_valid(const struct sophon_record *rec, const struct sophon_budget *b, int s)
{
    if (s < 0 || s >= S)
        return 0;
    if (b->final_format == SOPHON_FINAL_U8 && s == SOPHON_STAGE_F32)
        return 0;
    return s == SOPHON_STAGE_STORED || rec->stage[s].bytes > 0;
}

/* Client CPU of stage s for the budget's final format: the record's f32 figure minus the u8 ->
 * f32 tail that a u8 format does not run (the tail is common to every stage up to U8), and
 * taking its bytes in. */
static double client_cpu(const struct sophon_record *rec, const struct sophon_budget *b, int s)
{
    double c = rec->stage[s].client_cpu_s;
    if (b->final_format == SOPHON_FINAL_U8)
        c = fmax(0.0, c - rec->stage[SOPHON_STAGE_U8].client_cpu_s);
    return c + (double)rec->stage[s].bytes * client_byte(b);
}

static double storage_capacity(const struct sophon_budget *b)
{
    return b->storage_cores == 0 ? 0.0 : b->storage_cores * b->storage_speed;
}

/* The storage CPU of stage s that the job counts. With no OSD cores for the job, plain reads
 * still happen (their cost, sophon_records_add_osd_op, is then not the job's to count). */
static double counted_storage_cpu(double cpu_s, double scap, int s)
{
    return s == SOPHON_STAGE_STORED && scap == 0.0 ? 0.0 : cpu_s;
}

static double gpu_time(size_t n, const struct sophon_budget *b)
{
    return b->gpu_samples_per_s > 0 ? (double)n / b->gpu_samples_per_s : 0.0;
}

static int build_problem(struct sophon__problem *p, const sophon_records *set,
                         const struct sophon_budget *b)
{
    size_t n = sophon_records_count(set);
    double scap = storage_capacity(b);

    if (n > SIZE_MAX / (S * R * sizeof(double)))
        return -ENOMEM;
    p->n = n;
    p->gpu_s = gpu_time(n, b);
    p->a = malloc(n * S * R * sizeof(double));
    if (!p->a)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct sophon_record *rec = sophon_records_get(set, i);
        for (int s = 0; s < S; s++) {
            double *a = p->a + (i * S + (size_t)s) * R;
            a[SOPHON__NET] = a[SOPHON__STORAGE] = a[SOPHON__CLIENT] = INFINITY;
            if (!stage_valid(rec, b, s))
                continue;
            double net = rtime((double)rec->stage[s].bytes, b->bandwidth_Bps);
            double st = rtime(counted_storage_cpu(rec->stage[s].storage_cpu_s, scap, s), scap);
            double cl = rtime(client_cpu(rec, b, s), b->client_cores);
            if (isinf(net) || isinf(st) || isinf(cl))
                continue;
            a[SOPHON__NET] = net;
            a[SOPHON__STORAGE] = st;
            a[SOPHON__CLIENT] = cl;
        }
    }
    return 0;
}

static int plan_alloc(struct sophon_plan **out, size_t n)
{
    struct sophon_plan *pl = calloc(1, sizeof(*pl));
    if (!pl)
        return -ENOMEM;
    pl->n = n;
    pl->stage = malloc(n ? n : 1);
    pl->bytes = malloc((n ? n : 1) * sizeof(*pl->bytes));
    pl->storage_cpu_s = malloc((n ? n : 1) * sizeof(double));
    pl->client_cpu_s = malloc((n ? n : 1) * sizeof(double));
    if (!pl->stage || !pl->bytes || !pl->storage_cpu_s || !pl->client_cpu_s) {
        sophon_plan_free(pl);
        return -ENOMEM;
    }
    *out = pl;
    return 0;
}

void sophon_plan_free(struct sophon_plan *plan)
{
    if (!plan)
        return;
    free(plan->stage);
    free(plan->bytes);
    free(plan->storage_cpu_s);
    free(plan->client_cpu_s);
    free(plan);
}

/* Fills the per-object figures and the modelled times of plan from its stage[]. */
static void plan_fill(struct sophon_plan *pl, const sophon_records *set,
                      const struct sophon_budget *b)
{
    uint64_t bytes = 0;
    double scpu = 0, ccpu = 0, counted_scpu = 0, scap = storage_capacity(b);
    size_t off = 0;
    for (size_t i = 0; i < pl->n; i++) {
        const struct sophon_record *rec = sophon_records_get(set, i);
        int s = pl->stage[i];
        pl->bytes[i] = rec->stage[s].bytes;
        pl->storage_cpu_s[i] = rec->stage[s].storage_cpu_s;
        pl->client_cpu_s[i] = client_cpu(rec, b, s);
        bytes += pl->bytes[i];
        scpu += pl->storage_cpu_s[i];
        ccpu += pl->client_cpu_s[i];
        off += s != SOPHON_STAGE_STORED;
        counted_scpu += counted_storage_cpu(pl->storage_cpu_s[i], scap, s);
    }
    pl->total_bytes = bytes;
    pl->total_storage_cpu_s = scpu;
    pl->total_client_cpu_s = ccpu;
    pl->offloaded = off;
    pl->net_s = rtime((double)bytes, b->bandwidth_Bps);
    pl->storage_s = rtime(counted_scpu, scap);
    pl->client_s = rtime(ccpu, b->client_cores);
    pl->gpu_s = gpu_time(pl->n, b);
    pl->epoch_s = fmax(fmax(pl->net_s, pl->storage_s), fmax(pl->client_s, pl->gpu_s));
}

int sophon_plan_evaluate(struct sophon_plan **out, const sophon_records *set,
                         const struct sophon_budget *budget, const uint8_t *stage)
{
    size_t n = sophon_records_count(set);
    if (!out || !set || !budget || !stage || !budget_ok(budget))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!stage_valid(sophon_records_get(set, i), budget, stage[i]))
            return -EINVAL;
    int rc = plan_alloc(out, n);
    if (rc < 0)
        return rc;
    memcpy((*out)->stage, stage, n);
    (*out)->policy = -1;
    (*out)->chosen_from = -1;
    plan_fill(*out, set, budget);
    return 0;
}

/* The stage a static policy uses. */
static int static_stage(const struct sophon_budget *b, int policy)
{
    switch (policy) {
    case SOPHON_POLICY_NONE:
        return SOPHON_STAGE_STORED;
    case SOPHON_POLICY_RESIZE:
        return SOPHON_STAGE_U8;
    default: /* all: the last stage the final format allows */
        return b->final_format == SOPHON_FINAL_F32 ? SOPHON_STAGE_F32 : SOPHON_STAGE_U8;
    }
}

/* Per object, the valid stage of fewest bytes (ties: the lower index); CPU is ignored. When
 * paper, only the paper's offloaded stages (U8 and F32, not STORED nor CROP): that is its
 * "offloaded choice". */
static int fewest_bytes(const struct sophon_record *rec, const struct sophon_budget *b, int paper)
{
    int best = -1;
    for (int s = paper ? 1 : 0; s < S; s++)
        if ((!paper || s != SOPHON_STAGE_CROP) && stage_valid(rec, b, s) &&
            (best < 0 || rec->stage[s].bytes < rec->stage[best].bytes))
            best = s;
    return best;
}

struct ranked {
    double ratio;
    size_t i;
};

static int cmp_ranked(const void *x, const void *y)
{
    const struct ranked *a = x, *b = y;
    if (a->ratio != b->ratio)
        return a->ratio > b->ratio ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/*
 * The SOPHON paper's rule, as DESIGN.md states it, read literally:
 *  - each object's offloaded choice is the offloaded stage (not STORED) of fewest bytes that the
 *    final format allows (U8 today); objects it would not make smaller are never offloaded;
 *  - objects are ranked by bytes saved / storage CPU seconds spent beyond a plain read's,
 *    highest first (an object that costs no more ranks first), ties by index;
 *  - starting from "all stored" (whose storage time is the plain reads', if any), objects are
 *    taken in that order, and the walk stops at the first object whose offload would make the
 *    storage time (CPU / storage capacity) exceed the network time left after it (bytes still
 *    sent / bandwidth). It stops there rather than skipping to cheaper objects, and it ignores
 *    client CPU, as the paper does.
 * Objects no budget allows to offload (zero storage cores) are not candidates.
 */
static int sophon_rule(const struct sophon__problem *p, const sophon_records *set,
                       const struct sophon_budget *b, uint8_t *stage)
{
    size_t n = p->n, nc = 0;
    struct ranked *rk = malloc((n ? n : 1) * sizeof(*rk));
    uint8_t *choice = malloc(n ? n : 1);
    if (!rk || !choice) {
        free(rk);
        free(choice);
        return -ENOMEM;
    }
    double net = 0.0, st = 0.0;
    for (size_t i = 0; i < n; i++) {
        const struct sophon_record *rec = sophon_records_get(set, i);
        const double *a0 = p->a + i * S * R;
        stage[i] = SOPHON_STAGE_STORED;
        net += a0[SOPHON__NET];
        st += a0[SOPHON__STORAGE];
        int s = fewest_bytes(rec, b, 1);
        choice[i] = (uint8_t)(s < 0 ? 0 : s);
        if (s < 0 || rec->stage[s].bytes >= rec->stored_bytes)
            continue;
        const double *a = p->a + (i * S + (size_t)s) * R;
        if (!isfinite(a[SOPHON__NET]))
            continue;
        double saved = (double)(rec->stored_bytes - rec->stage[s].bytes);
        double extra = a[SOPHON__STORAGE] - a0[SOPHON__STORAGE];
        rk[nc].ratio = extra > 0 ? saved / extra : INFINITY;
        rk[nc++].i = i;
    }
    qsort(rk, nc, sizeof(*rk), cmp_ranked);
    for (size_t k = 0; k < nc; k++) {
        size_t i = rk[k].i;
        const double *a0 = p->a + i * S * R, *a = p->a + (i * S + choice[i]) * R;
        double net_after = net - a0[SOPHON__NET] + a[SOPHON__NET];
        double st_after = st - a0[SOPHON__STORAGE] + a[SOPHON__STORAGE];
        if (st_after > net_after)
            break;
        net = net_after;
        st = st_after;
        stage[i] = choice[i];
    }
    free(rk);
    free(choice);
    return 0;
}

static int policy_stages(const struct sophon__problem *p, const sophon_records *set,
                         const struct sophon_budget *b, int policy, uint8_t *stage,
                         struct sophon_plan *pl)
{
    size_t n = p->n;
    switch (policy) {
    case SOPHON_POLICY_NONE:
    case SOPHON_POLICY_ALL:
    case SOPHON_POLICY_RESIZE:
        /* An object that does not offer the policy's stage (one sophon cannot decode) is sent
         * as stored. */
        for (size_t i = 0; i < n; i++)
            stage[i] = (uint8_t)(stage_valid(sophon_records_get(set, i), b, static_stage(b, policy))
                                     ? static_stage(b, policy)
                                     : SOPHON_STAGE_STORED);
        return 0;
    case SOPHON_POLICY_ORACLE:
        for (size_t i = 0; i < n; i++)
            stage[i] = (uint8_t)fewest_bytes(sophon_records_get(set, i), b, 0);
        return 0;
    case SOPHON_POLICY_SOPHON:
        return sophon_rule(p, set, b, stage);
    default:
        return sophon__selective(p, stage, pl);
    }
}

int sophon_plan_make(struct sophon_plan **out, const sophon_records *set,
                     const struct sophon_budget *budget)
{
    struct sophon__problem p = {0};
    struct sophon_plan *pl = NULL, *alt = NULL;
    size_t n = sophon_records_count(set);
    int rc;

    if (!out || !set || !budget || n == 0 || !budget_ok(budget))
        return -EINVAL;
    *out = NULL;
    rc = build_problem(&p, set, budget);
    if (rc < 0)
        goto done;
    if (budget->policy == SOPHON_POLICY_SELECTIVE) {
        /* Selective needs a possible stage for every object. */
        for (size_t i = 0; i < n; i++) {
            int any = 0;
            for (int s = 0; s < S; s++)
                any |= isfinite(p.a[(i * S + (size_t)s) * R + SOPHON__NET]);
            if (!any) {
                rc = -EINVAL;
                goto done;
            }
        }
    }
    rc = plan_alloc(&pl, n);
    if (rc < 0)
        goto done;
    pl->policy = budget->policy;
    pl->chosen_from = budget->policy;
    rc = policy_stages(&p, set, budget, budget->policy, pl->stage, pl);
    if (rc < 0)
        goto done;
    plan_fill(pl, set, budget);

    if (budget->policy == SOPHON_POLICY_SELECTIVE) {
        /* Never worse in the model than the other policies: keep the best (ties: selective). */
        rc = plan_alloc(&alt, n);
        if (rc < 0)
            goto done;
        for (int q = 0; q < SOPHON_POLICY_COUNT; q++) {
            if (q == SOPHON_POLICY_SELECTIVE)
                continue;
            rc = policy_stages(&p, set, budget, q, alt->stage, NULL);
            if (rc < 0)
                goto done;
            plan_fill(alt, set, budget);
            if (alt->epoch_s < pl->epoch_s) {
                memcpy(pl->stage, alt->stage, n);
                plan_fill(pl, set, budget);
                pl->chosen_from = q;
            }
        }
    }
    *out = pl;
    pl = NULL;
    rc = 0;
done:
    sophon_plan_free(alt);
    sophon_plan_free(pl);
    free(p.a);
    return rc;
}
