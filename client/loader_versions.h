/*
 * loader_versions.h - libsophon's versioned structs as callers of any version pass them: the
 * loader's options resolved and checked, its statistics copied. Internal; factored out of
 * loader.c so that the unit tests check the rules without a cluster.
 */
#ifndef SOPHON_LOADER_VERSIONS_H
#define SOPHON_LOADER_VERSIONS_H

#include "sophon.h"

/*
 * sophon__loader_options_resolve - *out from the caller's in (NULL: SOPHON_LOADER_OPTIONS_INIT)
 * of any version this library knows: only that version's fields are read (a version 1 or 2
 * caller's struct ends before `transform`), the others take their defaults, a version 1
 * caller's zeros their version 1 meaning (the default). Then the
 * sentinels become values: threads 0 the CPUs this process may use (cpus.h; at most 256),
 * SOPHON_BUDGET_MEASURE the
 * budgets it stands for. out->version is SOPHON_LOADER_OPTIONS_VERSION. Returns 0, or -EINVAL
 * for a version of 0 or newer than this library's, or a field out of its range (sophon.h).
 */
int sophon__loader_options_resolve(struct sophon_loader_options *out,
                                   const struct sophon_loader_options *in);

/*
 * sophon__loader_stats_copy - the fields of out->version (set by the caller) of *src into *out.
 * Returns 0, or -EINVAL for a version of 0 or newer than this library's.
 */
int sophon__loader_stats_copy(struct sophon_loader_stats *out,
                              const struct sophon_loader_stats *src);

#endif /* SOPHON_LOADER_VERSIONS_H */
