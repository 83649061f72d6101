/*
 * subsampling.c - the names of enum sophon_subsampling, once for the probe and the records.
 */
#include "sophon_common.h"

static const char *const names[SOPHON_SS_COUNT] = {"444", "422",  "420",  "440",
                                                   "411", "gray", "other"};

const char *sophon_subsampling_name(int ss)
{
    return sophon__name_of(names, SOPHON_SS_COUNT, ss, "other");
}

int sophon_subsampling_from_name(const char *name)
{
    return sophon__index_of(names, SOPHON_SS_COUNT, name);
}
