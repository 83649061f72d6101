/*
 * simulate.h - an epoch as the loader runs it, simulated. Internal.
 *
 * The plan's model is one of throughput: the epoch takes as long as its busiest resource (the
 * link's bytes, the OSDs' CPU, the client's), as if the three overlapped perfectly. The loader
 * does not overlap them perfectly: it issues in sampler order, at most `window` operations in
 * flight and only within its ring of batches; each operation runs in its OSD (sharing the OSDs'
 * cores with the others in flight), then crosses the link, then waits for a worker; a batch's
 * buffer comes free only when all its samples are done. Where two resources are nearly equally
 * busy, or one preparation runs long, the epoch is longer than the busiest resource alone: on the
 * shaped testbed at 500Mbit none's epoch was 1.0-1.2 s where its link needs 0.78 s and its
 * client 0.8 s. sophon__sim_epoch plays that pipeline through, event by event.
 */
#ifndef SOPHON_SIMULATE_H
#define SOPHON_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "splitmix64.h"

/* The op threads of an OSD: a class call holds one to its end, and the plain reads run on as many
 * at once (simulate.c). Ceph's defaults for OSDs on disks and in memory (osd_op_num_shards_hdd 5
 * x 1 thread; on SSDs 8 x 2); the dev cluster's OSDs run 5 tp_osd_tp threads. */
#define SOPHON__OSD_OP_THREADS 5u

/* One position of the epoch, in sampler order. */
struct sophon__sim_sample {
    double bytes;    /* its response over the link (payload bytes) */
    double osd_s;    /* its OSD CPU, seconds on one of the OSDs' cores (0: none) */
    double client_s; /* its client CPU, seconds on one core (0: none) */
    int ahead;       /* 1: prepared in an OSD, so it may be issued ahead of its turn, and it
                      * shares the OSDs' cores with the other preparations; 0: a plain read,
                      * whose osd_s waits its turn in the reads' queue */
    unsigned conn;   /* the connection (its OSD's) its response comes over, modulo conns */
};

struct sophon__sim_params {
    double rate_Bps;       /* the link, payload bytes per second */
    double osd_cores;      /* the OSDs' cores, shared by the operations in them (at most one
                            * core each) */
    double client_cores;   /* the workers' cores, shared by the workers (at most one each) */
    unsigned threads;      /* workers */
    size_t batch;          /* samples per batch */
    unsigned nbufs;        /* batches in the ring */
    unsigned window;       /* operations in flight (issued, not yet over the link) */
    unsigned osd_threads;  /* preparations the OSDs run at once (their op threads), the others
                            * waiting in order for a place; 0: as many as are in flight */
    unsigned read_threads; /* threads serving the reads' queue at once (at most its length),
                            * each sharing the OSDs' cores as a preparation does; 0: the head
                            * read before all the preparations */
    unsigned ahead;        /* places of the window kept for operations issued ahead of their
                            * turn (the in-order pass has window - ahead) */
    unsigned conns;        /* connections sharing the link (one per OSD); 0: one */
};

/*
 * sophon__sim_epoch - seconds until the last batch of samples[0..n) is done: operations issued
 * in order while fewer than window - ahead are in flight and their batch is within nbufs of the
 * oldest batch not yet done; in the other `ahead` places, operations of samples marked ahead,
 * the next ones the ring holds past the last issued in order (the loader issues
 * preparations ahead so that the OSDs work on them while the link carries the samples before
 * them); the queue of plain reads served one after another, the head one with the share of the
 * OSDs' cores of read_threads threads beside the preparations' (up to a core), the preparations
 * sharing the rest (at most osd_threads of them, the others waiting in order; processor
 * sharing); the link shared equally among the connections (conns, one
 * per OSD) with a response on them, each carrying its responses one at a time in the order their
 * OSD work ended; the workers taking received samples in the order they came. INFINITY where some
 * work has no resource to run on (a zero rate); -EINVAL for bad parameters, -ENOMEM.
 */
double sophon__sim_epoch(const struct sophon__sim_sample *samples, size_t n,
                         const struct sophon__sim_params *p);

/*
 * sophon__sim_shape - the parameters that follow from how the loader runs an epoch: `window`
 * operations in flight with the places kept for preparations started ahead (control.h), and
 * `osds` OSD processes holding the objects (0: not known), shared by `world` ranks: their op
 * threads (SOPHON__OSD_OP_THREADS each) for the preparations and the reads, one connection each.
 */
void sophon__sim_shape(struct sophon__sim_params *p, unsigned window, size_t osds, unsigned world);

/* The connection a sample's response comes over: which OSD holds object `index` is not known to
 * the plan, and a hash of it spreads the samples over the connections as CRUSH spreads the
 * objects over the OSDs. */
static inline unsigned sophon__sim_conn(uint64_t index)
{
    return (unsigned)(sophon__splitmix64(index) >> 32);
}

#endif
