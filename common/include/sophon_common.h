/*
 * sophon_common.h - what every sophon component shares: prep/ (also inside the OSD), the
 * selector and the client. Plain C, no dependencies, no state.
 */
#ifndef SOPHON_COMMON_H
#define SOPHON_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sophon__seterr - formats a one-line message (no newline) into err[0..errlen), truncated to fit,
 * when err is not NULL and errlen > 0: how every function with an err parameter reports what
 * failed.
 */
void sophon__seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* sophon__clock_ns - clock `id` (clock_gettime's) in nanoseconds into *ns: 0, or -errno. */
int sophon__clock_ns(clockid_t id, uint64_t *ns);

/* sophon__thread_cpu_ns - the calling thread's CPU time in nanoseconds; 0 if it cannot be read. */
uint64_t sophon__thread_cpu_ns(void);

/* An enum's static name table of n entries, both ways: names[i] (fallback when i is out of
 * range), and the index of name (-1 when it is none of them, or NULL). */
const char *sophon__name_of(const char *const *names, int n, int i, const char *fallback);
int sophon__index_of(const char *const *names, int n, const char *name);

/*
 * JPEG chroma subsampling: the first component's sampling factors relative to the others, which
 * are all 1x1 (for YCCK the K component samples like Y). What sophon_probe reports and what the
 * selector's records keep (written by name in their CSV form).
 */
enum sophon_subsampling {
    SOPHON_SS_444 = 0,
    SOPHON_SS_422 = 1,
    SOPHON_SS_420 = 2,
    SOPHON_SS_440 = 3,
    SOPHON_SS_411 = 4,
    SOPHON_SS_GRAY = 5,
    SOPHON_SS_OTHER = 6,
    SOPHON_SS_COUNT
};

/* Static name of a subsampling ("444", "420", "gray", ...); "other" when out of range. */
const char *sophon_subsampling_name(int ss);

/* The subsampling called name (one of sophon_subsampling_name's), or -1. */
int sophon_subsampling_from_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SOPHON_COMMON_H */
