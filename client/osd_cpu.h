/*
 * osd_cpu.h - what the OSD processes spend, asked of them. Internal.
 *
 * The sophon class reports the CPU of each preparation, but an OSD spends more than that on
 * every operation, a preparation or a plain read: its messenger, the object store's copies and
 * checksums, its op queue. The loader counts that per operation in its plan (the selector's
 * sophon_records_add_osd_op), and it changes with the machine and the day (0.55 ms to 1.25 ms an
 * operation on the testbed between two days). So the loader asks the OSDs: the class's `cpu`
 * method returns the whole process's CPU and clock; the loader finds the OSDs holding its objects
 * by asking on a few of them, asks each again around a measurement or an epoch, and takes the
 * difference.
 *
 * Limits: an OSD the sample of objects did not reach is not counted (48 objects reach every OSD
 * of a pool of a dozen almost surely); the CPU counted is the processes' whole, what other
 * clients cost them included (the loader divides it among its job's ranks, not among other jobs).
 */
#ifndef SOPHON_OSD_CPU_H
#define SOPHON_OSD_CPU_H

#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>

#define SOPHON__MAX_OSDS 64
/* The `cpu` calls sophon__osds_find has in flight at once. */
#define SOPHON__OSDS_ASK_AT_ONCE 48

/* One OSD process: who it is, an object it holds (to ask it by), and what it said last. */
struct sophon__osd_proc {
    uint64_t host;
    uint32_t pid;
    const char *oid;
    uint64_t cpu_ns, clock_ns;
};

struct sophon__osds {
    struct sophon__osd_proc p[SOPHON__MAX_OSDS];
    size_t n;
};

/*
 * Asks the `cpu` method on objects oids[0..k) (all at once) and keeps one entry per distinct
 * OSD process in *o, with what each said (the start of the first interval). The names must
 * outlive o. Returns the number of processes found, or a negative errno when none answered:
 * -EOPNOTSUPP for a class without the method (before 0.3) or no class, else the first error.
 */
int sophon__osds_find(struct sophon__osds *o, rados_ioctx_t io, const char *const *oids, size_t k);

/*
 * Asks every process in o again (all at once): *cpu_ns gets their CPU since they were last
 * asked, summed, and *span_s the longest time between the two answers on their clocks. Returns
 * 0; -ESTALE when an object now answers from another process (an OSD restarted, or the object
 * moved): that entry starts again from this answer and the sums leave it out; or a negative
 * errno when one did not answer (the others' answers are kept as the next start).
 */
int sophon__osds_sample(struct sophon__osds *o, rados_ioctx_t io, uint64_t *cpu_ns, double *span_s);

/*
 * The OSDs' CPU per operation beyond the preparations: the processes' CPU over an interval
 * (osd_s, OSD seconds) shared by `world` ranks alike, less this rank's preparations' CPU the
 * class reported (class_s), over this rank's operations (ops). The processes' idle CPU in the
 * interval lands in it too, as it takes from the same cores. Returns seconds per operation, 0
 * at the least; or -1 when it cannot tell (no operations, figures not finite or negative).
 */
double sophon__osd_op_estimate(double osd_s, double class_s, uint64_t ops, unsigned world);

#endif
