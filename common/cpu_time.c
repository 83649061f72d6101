/*
 * cpu_time.c - the thread CPU clock that the OSD's responses and the loader's workers report.
 */
#include <time.h>

#include "sophon_common.h"

uint64_t sophon__thread_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
