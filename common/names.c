/*
 * names.c - looking up the static name tables of enums both ways (sophon_common.h).
 */
#include <string.h>

#include "sophon_common.h"

const char *sophon__name_of(const char *const *names, int n, int i, const char *fallback)
{
    return i >= 0 && i < n ? names[i] : fallback;
}

int sophon__index_of(const char *const *names, int n, const char *name)
{
    for (int i = 0; name != NULL && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}
