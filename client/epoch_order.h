/*
 * epoch_order.h - which samples a shard of an epoch takes, and in what order. Internal.
 */
#ifndef SOPHON_EPOCH_ORDER_H
#define SOPHON_EPOCH_ORDER_H

#include <stddef.h>
#include <stdint.h>

/*
 * The order of shard rank/world of epoch `epoch`: a permutation of the n dataset indices drawn
 * from (seed, epoch) alone (Fisher-Yates over a counter-based generator), of which the shard
 * takes positions rank, rank + world, rank + 2 * world, ... Shards differ in size by at most one
 * and together take every index exactly once (no padding, unlike torch's DistributedSampler,
 * which repeats samples to even them out). *out (free()) gets *count indices.
 * Returns 0, -EINVAL (rank >= world, world 0, NULL), -ENOMEM.
 */
int sophon__epoch_order(uint64_t **out, size_t *count, size_t n, uint64_t seed, uint64_t epoch,
                        unsigned rank, unsigned world);

/* The same without the shuffle (validation): shard rank/world of the dataset order 0 .. n - 1,
 * positions rank, rank + world, ... Returns 0, -EINVAL, -ENOMEM. */
int sophon__epoch_order_sequential(uint64_t **out, size_t *count, size_t n, unsigned rank,
                                   unsigned world);

#endif
