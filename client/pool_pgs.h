/*
 * pool_pgs.h - how many placement groups a pool spreads over its OSDs. Internal.
 *
 * An OSD runs a class call under its placement group's lock: while it prepares a sample, every
 * other operation on that PG waits for the whole preparation, a plain read of another object
 * included (README, "On a real cluster"; BENCHMARKS.md: a 4 KiB read waited a median 183 ms
 * behind a 16 MB photo at one core, 3.4 s at 0.1 cores). With few PGs an OSD, a preparation
 * holds a large share of that OSD's objects and the loader's reads queue behind it: with 5 an
 * OSD (vstart.sh's old 16 over 3 OSDs) the link of a capped testbed sat 35-52% idle for the
 * first second of an epoch, with 43 it was 89-92% busy and 170 made no further difference.
 * The loader says so when a pool it offloads to has fewer than SOPHON__PGS_PER_OSD an OSD.
 */
#ifndef SOPHON_POOL_PGS_H
#define SOPHON_POOL_PGS_H

#include <stddef.h>

#include <rados/librados.h>

/* Placement groups an OSD (as primary: pg_num over the OSDs in) under which the loader warns;
 * Ceph's autoscaler aims at 100 an OSD over all pools. */
#define SOPHON__PGS_PER_OSD 32

/*
 * Asks the monitors for the pool's pg_num (`osd pool get POOL pg_num`) and the number of OSDs
 * in the cluster (`osd stat`): all of them, not only those the pool's CRUSH rule uses, so a pool
 * on a subset has more PGs an OSD than pg_num / *osds_in says. Needs mon 'allow r'. Returns 0,
 * -EINVAL for a pool name a JSON string cannot carry as is, the monitors' negative errno (for
 * example -EACCES, -ENOENT), or -EPROTO for an answer without the number.
 */
int sophon__pool_pgs(rados_t cluster, const char *pool, unsigned *pg_num, unsigned *osds_in);

/*
 * Whether pg_num placement groups over osds OSDs are fewer than SOPHON__PGS_PER_OSD an OSD
 * (1) or not (0; also when osds is 0). When 1 and suggest is not NULL, *suggest gets the
 * smallest power of two that gives at least that many (Ceph warns of a pg_num that is not one).
 */
int sophon__pgs_too_few(unsigned pg_num, unsigned osds, unsigned *suggest);

/*
 * The first `"key":` in json[0..len) followed by an unsigned decimal number into *out. Returns 0,
 * or -EPROTO when there is no such key or number (or it does not fit in unsigned).
 */
int sophon__json_uint(const char *json, size_t len, const char *key, unsigned *out);

#endif
