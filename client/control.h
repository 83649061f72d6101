/*
 * control.h - the loader's within-epoch controller. Internal.
 *
 * The plan is made for throughput: the link's bytes, the OSDs' CPU and the client's, each over
 * its rate. The loader delivers in order, though, through a ring of batches: while one sample is
 * still being prepared in an OSD, the loader can read ahead only to the end of the ring, and then
 * the link idles until that sample comes back. Under a tight OSD CPU budget one preparation can
 * take seconds (the OSDs share their cores among every preparation in flight), far longer than
 * the link needs for the ring. On the shaped testbed at 0.15 OSD cores a crop of a large photo
 * took 2.4 s and held up its batch while the link had nothing left to read.
 *
 * So when the loader is about to send a sample the plan put in the OSD, it predicts when that
 * preparation would come back (the OSDs' cores shared, processor-sharing style, with the
 * preparations in flight) and how long the link stays busy meanwhile (the bytes in flight and
 * those the ring still lets it read). Where the link would idle longer than reading the sample as
 * stored costs (its extra bytes over the link, its decode over the client's cores), the sample
 * is read as stored instead: demoted. Demotions only ever take work off the OSDs, so ranks that
 * share the OSDs' budget stay within it whatever each decides; the sample delivered is the same
 * either way (prep/ is one pipeline).
 */
#ifndef SOPHON_CONTROL_H
#define SOPHON_CONTROL_H

#include <stddef.h>
#include <stdint.h>

/* What the controller knows when a planned preparation is about to be sent. Seconds of CPU are
 * seconds on the resource itself (the model's, over the measured speed). */
struct sophon__control_in {
    double rate_Bps;              /* the link this rank reads over, payload bytes per second */
    double osd_cores;             /* the OSDs' cores this rank's preparations share */
    double client_cores;          /* this rank's cores for finishing samples; 0: none to spare */
    double own_cpu_s;             /* the preparation's OSD CPU */
    const double *inflight_cpu_s; /* the OSD CPU of each preparation in flight */
    size_t ninflight;
    uint64_t cover_bytes;   /* what the link can carry before it waits for this sample: the
                             * bytes in flight and those of the later positions the ring lets
                             * the loader issue while this one is outstanding */
    uint64_t planned_bytes; /* the preparation's response */
    uint64_t stored_bytes;  /* the object as stored */
    double extra_client_s;  /* the client CPU a plain read adds over the planned stage */
};

/*
 * sophon__control_latency - when a preparation of own_cpu_s sent now comes back, in seconds: it
 * shares the OSD cores with the ones in flight, each of which takes at most as much of the
 * cores as it has work left (counted whole: their progress is not known), and no one thread gets
 * more than a core.
 */
double sophon__control_latency(const struct sophon__control_in *in);

/*
 * sophon__control_demote - 1 where the sample should be read as stored instead: the link would
 * idle longer waiting for the preparation (its latency less the time the link is busy with
 * cover_bytes) than the plain read costs (its extra bytes over the link, or its extra client CPU
 * over the client's cores, whichever is longer). 0 otherwise, and for inputs it cannot judge
 * (no rate, no OSD cores).
 */
int sophon__control_demote(const struct sophon__control_in *in);

/*
 * sophon__control_ring - the ring's depth, in batches, for an epoch whose longest planned
 * preparation takes longest_cpu_s of OSD CPU: enough batches that the link, reading batch_bytes
 * per batch at rate_Bps, stays busy while that preparation runs on one thread of osd_cores,
 * twice over (the OSDs share their cores with the reads and the other preparations, and the
 * model's CPU is a mean), plus the batch being filled; between dflt and most (most wins).
 */
unsigned sophon__control_ring(double longest_cpu_s, double osd_cores, double batch_bytes,
                              double rate_Bps, unsigned dflt, unsigned most);

/*
 * sophon__keep_placement - whether the loader keeps the last epoch's placement, which models
 * this epoch at prev_s, over the best other plan (best_s) and the best static policy's
 * (static_s): when it is within SOPHON__KEEP_MARGIN of the best and no static policy models
 * shorter (selective stays never worse in the model than sophon's rule or any static policy).
 * The simulation's figures move by more than the margin between placements that run alike (a long
 * preparation's modelled cost from one epoch's box and position to the next), and a plan that
 * follows every such move flips between placements epoch after epoch: on the main job's photos
 * at 100Mbit/0.25 cores epochs of 2.2 s (26 MB) and 3.0 s (33 MB) alternated, the planner
 * keeping and dropping its 16 MB photo as its modelled cost crossed the link's time, while the
 * first epoch's placement modelled the second at 2.23 s. Not finite: not kept.
 */
#define SOPHON__KEEP_MARGIN 0.05
int sophon__keep_placement(double prev_s, double best_s, double static_s);

/*
 * sophon__choose_lean - which of k candidate plans the loader runs, given each one's modelled
 * epoch t[i] and what it takes of the resources the job shares with others, the link's and the
 * OSDs' modelled seconds net[i] and osd[i]; static_s is the best static policy's modelled epoch.
 * The shortest epoch's plan, unless another within SOPHON__LEAN_MARGIN of it and no longer than
 * static_s (selective stays never worse in the model than sophon's rule or any static policy)
 * takes no more of either resource and less of the two together: then the least of those. A
 * plan that spends more of the link and the OSDs for an epoch no shorter runs slower than
 * modelled: the model does not count what the extra bytes and preparations cost beyond the
 * busiest resource (on the main job's photos at 500Mbit/0.1 cores the planner's first plan sent
 * 69 MB, the f32 tensors of 31 photos, modelled at 1.560 s against none's 1.564 s with 46.7 MB,
 * and ran 1.60 s where none ran 1.43-1.56 s). Only one that takes less of both: one that trades
 * OSD time for bytes near a tie is a guess either way (BENCHMARKS.md). Ties go to the lower
 * index. A candidate with a figure that is not finite is never chosen; -1 when none can be.
 */
#define SOPHON__LEAN_MARGIN 0.02
int sophon__choose_lean(const double *t, const double *net, const double *osd, int k,
                        double static_s);

/*
 * sophon__ahead_places - the places of a window of `window` operations in flight that the
 * loader keeps for preparations started ahead of their turn (loader.c's issue_ahead; simulate.h
 * plays the same): a quarter of it, at most SOPHON__AHEAD; none for a window under 4. The rest
 * is the in-order pass's, so the window stays what it says, the operations in flight. One counts
 * until its response has crossed the link, and there it waits behind the window's reads (at 50
 * Mbit/s 32 photos are half a second), so a few leave the OSDs idle between them: on the main
 * job's photos at 50Mbit/0.1 cores the simulated epoch of the planner's plan is 6.75 s with 1 in
 * flight, 5.92 s with 4 and 4.63 s with 8 or more, its busiest resource 4.54 s. Their responses
 * are small (u8 pixels or a crop) unless the plan asks for f32 in the OSD, and then the in-order
 * samples' wait for them on the link costs a little (the all-f32 plan in the same simulation:
 * +0.2% at 8, +0.5% at 16, +2.4% at 32).
 */
#define SOPHON__AHEAD 8u
static inline unsigned sophon__ahead_places(unsigned window)
{
    return window / 4 < SOPHON__AHEAD ? window / 4 : SOPHON__AHEAD;
}

/*
 * sophon__control_window - the operations in flight for an epoch whose options leave the window
 * to the loader (0): enough plain reads of object_bytes each (the dataset's median object) that
 * the bytes in flight cover SOPHON__WINDOW_LINK_S of the link at rate_Bps, plus the places kept
 * for preparations ahead; between SOPHON__WINDOW_MIN and SOPHON__WINDOW_MAX (the minimum where
 * the rate or the size is unknown). An operation's time in flight is not only its bytes over the
 * link: where the OSDs run under a CPU quota (a cgroup's, as containers run them) and
 * preparations use it up, the OSDs stop for the rest of each quota period, a read's threads wait
 * through such pauses at each step, and with too few reads in flight the link idles meanwhile.
 * On the shaped testbed with the main job's photos, selective's plan (3 photos prepared in the
 * OSDs, the rest read) ran its first epoch in 1.99-2.20 s with 32 in flight at 100Mbit/0.25
 * cores and 1.79 s with 64, 96 or 160 (modelled 1.84-1.94 s); at 500Mbit/0.5 cores 1.05-1.11 s
 * with 32 and 0.87-0.97 s with 96 or 256 (modelled 0.89-0.94 s). Little's law: the reads in
 * flight are the link's rate over a read's bytes times its time in flight.
 */
#define SOPHON__WINDOW_LINK_S 0.3
#define SOPHON__WINDOW_MIN    32u
#define SOPHON__WINDOW_MAX    256u
unsigned sophon__control_window(double rate_Bps, double object_bytes);

#endif
