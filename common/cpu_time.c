/*
 * cpu_time.c - the clocks in nanoseconds: the thread CPU clock that the OSD's responses and the
 * loader's workers report, and the OSD process's clocks the class's `cpu` method reports.
 */
#include <errno.h>
#include <time.h>

#include "sophon_common.h"

int sophon__clock_ns(clockid_t id, uint64_t *ns)
{
    struct timespec ts;

    if (clock_gettime(id, &ts) != 0)
        return -errno;
    *ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return 0;
}

uint64_t sophon__thread_cpu_ns(void)
{
    uint64_t ns = 0;
    (void)sophon__clock_ns(CLOCK_THREAD_CPUTIME_ID, &ns); /* 0 where it cannot be read */
    return ns;
}
