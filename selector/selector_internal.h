/*
 * selector_internal.h - helpers shared between the selector's files. Not installed.
 */
#ifndef SOPHON_SELECTOR_INTERNAL_H
#define SOPHON_SELECTOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "selector.h"
#include "sophon_common.h" /* sophon__seterr */

/* Decimal digits only, <= max. Returns 0 or -EINVAL. */
int sophon__parse_u64(const char *s, uint64_t max, uint64_t *out);

/* A finite, non-negative decimal number. Returns 0 or -EINVAL. */
int sophon__parse_seconds(const char *s, double *out);

/* Strips a trailing "\n" or "\r\n" in place. */
void sophon__chomp(char *line);

/*
 * The planning problem in normalized form: a[(i * SOPHON_STAGE_COUNT + s) * SOPHON__RES + r] is
 * the time (seconds) object i at stage s adds to resource r; INFINITY when the stage is not
 * possible for that object under the budget (then its network time, which every stage has, is
 * INFINITY). Every vector over resources (loads, weights) is indexed the same way.
 */
enum { SOPHON__NET = 0, SOPHON__STORAGE = 1, SOPHON__CLIENT = 2, SOPHON__RES = 3 };

struct sophon__problem {
    size_t n;
    double *a;
    double gpu_s;
};

/* The loads vector of an assignment: its time on each resource. */
void sophon__loads(const struct sophon__problem *p, const uint8_t *stage, double load[SOPHON__RES]);

/* max of the three loads and p->gpu_s. */
double sophon__objective(const struct sophon__problem *p, const double load[SOPHON__RES]);

/*
 * Minimizes the modelled epoch over per-object stages (selective.c). Writes stage[] (n entries)
 * and the LP diagnostics into plan (lower_bound_s, lp_s, rounding_bound_s, fractional,
 * iterations). Returns 0 or -ENOMEM.
 */
int sophon__selective(const struct sophon__problem *p, uint8_t *stage, struct sophon_plan *plan);

#endif
