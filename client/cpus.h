/*
 * cpus.h - how much CPU this process may use, for the loader's client budget: its affinity
 * mask (taskset, a container's cpuset) capped by its cgroup's CPU quota. Internal.
 */
#ifndef SOPHON_CPUS_H
#define SOPHON_CPUS_H

#include <stdint.h>

/*
 * sophon__cgroup_cpu_quota - the CPU quota, in cores, of the cgroup a process's cgroup file
 * (proc_cgroup, as /proc/self/cgroup) names, under the cgroup file systems mounted at
 * cgroup_root (as /sys/fs/cgroup): v2's cpu.max or v1's cpu controller's cfs quota over its
 * period, the tightest of the cgroup and its parents. INFINITY when there is none or nothing
 * can be read.
 */
double sophon__cgroup_cpu_quota(const char *proc_cgroup, const char *cgroup_root);

/* sophon__cpus_available - the CPUs of this process's affinity mask, capped by its cgroup's
 * quota (may be fractional, e.g. 0.5); at least something above 0. */
double sophon__cpus_available(void);

/*
 * sophon__threads_cpu_ns - the CPU time, in nanoseconds, that this process's threads whose name
 * (/proc/self/task/TID/comm) starts with `prefix` have used so far: "msgr-worker-" for
 * librados's messenger, which sends the loader's requests and takes their responses in. Threads
 * that ended are no longer counted. Returns 0, or -errno (no /proc).
 */
int sophon__threads_cpu_ns(const char *prefix, uint64_t *ns);

/* sophon__msgr_on_client_cores - 1 if librados's messenger shares the client's `client_cores`
 * with the workers: this process may use no core beyond them (sophon__cpus_available), so the
 * plans count its CPU against them; 0 where a core is to spare for it. */
int sophon__msgr_on_client_cores(double client_cores);

/* The names of librados's messenger threads (Ceph's AsyncMessenger workers). */
#define SOPHON__MSGR_THREADS "msgr-worker-"

#endif
