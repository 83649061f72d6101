/*
 * subsampling.c - the names of enum sophon_subsampling, once for the probe and the records.
 */
#include <string.h>

#include "sophon_common.h"

static const char *const names[SOPHON_SS_COUNT] = {"444", "422",  "420",  "440",
                                                   "411", "gray", "other"};

const char *sophon_subsampling_name(int ss)
{
    if (ss < 0 || ss >= SOPHON_SS_COUNT)
        return "other";
    return names[ss];
}

int sophon_subsampling_from_name(const char *name)
{
    for (int ss = 0; name != NULL && ss < SOPHON_SS_COUNT; ss++)
        if (strcmp(name, names[ss]) == 0)
            return ss;
    return -1;
}
