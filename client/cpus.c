/*
 * cpus.c - the CPU this process may use: its affinity mask, capped by the CPU quota of its
 * cgroup (cgroup v2 cpu.max, or v1's cpu.cfs_quota_us over cpu.cfs_period_us), the tightest of
 * its cgroup and every parent's.
 */
#define _GNU_SOURCE
#include "cpus.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reads the first line of root/rel/file into buf. Returns 0 or -1. */
static int read_line(char *buf, size_t len, const char *root, const char *rel, const char *file)
{
    char path[1024];
    FILE *f;
    int n = snprintf(path, sizeof(path), "%s%s/%s", root, rel, file);

    if (n < 0 || (size_t)n >= sizeof(path) || (f = fopen(path, "r")) == NULL)
        return -1;
    char *ok = fgets(buf, (int)len, f);
    fclose(f);
    return ok != NULL ? 0 : -1;
}

/* The quota in cores of the cgroup at root/rel (INFINITY: none): v2 "max 100000" or "Q P",
 * v1 a quota of -1 or Q over a period P. */
static double quota_at(const char *root, const char *rel, int v2)
{
    char a[64], b[64];
    double q, p;

    if (v2) {
        if (read_line(a, sizeof(a), root, rel, "cpu.max") < 0 || strncmp(a, "max", 3) == 0)
            return INFINITY;
        if (sscanf(a, "%lf %lf", &q, &p) != 2)
            return INFINITY;
    } else {
        if (read_line(a, sizeof(a), root, rel, "cpu.cfs_quota_us") < 0 ||
            read_line(b, sizeof(b), root, rel, "cpu.cfs_period_us") < 0)
            return INFINITY;
        q = strtod(a, NULL);
        p = strtod(b, NULL);
    }
    return q > 0 && p > 0 ? q / p : INFINITY;
}

/* The tightest quota of the cgroup rel under mount and of its parents, up to the mount. */
static double quota_up(const char *mount, char *rel, int v2)
{
    double cores = INFINITY;

    for (;;) {
        cores = fmin(cores, quota_at(mount, rel, v2));
        char *slash = strrchr(rel, '/');
        if (slash == NULL || rel[0] == '\0')
            break;
        *slash = '\0';
    }
    return cores;
}

double sophon__cgroup_cpu_quota(const char *proc_cgroup, const char *cgroup_root)
{
    char line[1024], mount[1200];
    double cores = INFINITY;
    FILE *f = fopen(proc_cgroup, "r");

    if (f == NULL)
        return INFINITY;
    /* Lines "ID:CONTROLLERS:PATH"; v2's is "0::PATH", v1's cpu controller "N:cpu,cpuacct:PATH". */
    while (fgets(line, sizeof(line), f) != NULL) {
        char *c1 = strchr(line, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        char *ctrl = c1 + 1, *rel = c2 + 1;
        rel[strcspn(rel, "\n")] = '\0';
        if (strcmp(rel, "/") == 0)
            rel[0] = '\0';
        if (ctrl[0] == '\0') {
            snprintf(mount, sizeof(mount), "%s", cgroup_root);
            /* A hybrid host mounts v2 at unified/, where no cpu.max is: it reads as none. */
            cores = fmin(cores, quota_up(mount, rel, 1));
            continue;
        }
        char *save = NULL;
        for (char *tok = strtok_r(ctrl, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            if (strcmp(tok, "cpu") != 0)
                continue;
            /* Debian mounts v1's cpu controller at cpu,cpuacct with cpu a link to it. */
            snprintf(mount, sizeof(mount), "%s/cpu", cgroup_root);
            cores = fmin(cores, quota_up(mount, rel, 0));
        }
    }
    fclose(f);
    return cores;
}

double sophon__cpus_available(void)
{
    cpu_set_t set;
    double cpus = 1;

    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        cpus = CPU_COUNT(&set);
    return fmin(cpus, sophon__cgroup_cpu_quota("/proc/self/cgroup", "/sys/fs/cgroup"));
}

/* Linux's CPU clock of thread tid of this process (the kernel's MAKE_THREAD_CPUCLOCK(tid,
 * CPUCLOCK_SCHED), as glibc's pthread_getcpuclockid makes it): nanoseconds, where /proc's stat
 * counts ticks of 10 ms. */
static clockid_t thread_clock(long tid)
{
    return (clockid_t)((~(unsigned long)tid << 3) | 4u | 2u);
}

int sophon__threads_cpu_ns(const char *prefix, uint64_t *ns)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    size_t len = strlen(prefix);

    *ns = 0;
    if (d == NULL)
        return -errno;
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[64];
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (tid <= 0 || *end != '\0')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s", e->d_name);
        if (read_line(comm, sizeof(comm), path, "", "comm") < 0 || strncmp(comm, prefix, len) != 0)
            continue;
        struct timespec ts;
        if (clock_gettime(thread_clock(tid), &ts) == 0) /* else it has just ended */
            *ns += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    closedir(d);
    return 0;
}

int sophon__msgr_on_client_cores(double client_cores)
{
    return sophon__cpus_available() < client_cores + 1;
}
