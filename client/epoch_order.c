/*
 * epoch_order.c - the shuffle of an epoch and its shards.
 */
#include "epoch_order.h"

#include <errno.h>
#include <stdlib.h>

#include "splitmix64.h"

/* The shuffle's draws: the mix of the epoch's key and a counter. */
struct draws {
    uint64_t key, counter;
};

static uint64_t next(void *g)
{
    struct draws *d = g;

    return sophon__splitmix64(d->key ^ sophon__splitmix64(d->counter++));
}

/* The dataset order, shuffled from (seed, epoch) when shuffle is set, then the shard's
 * positions packed at the front in order. */
static int order(uint64_t **out, size_t *count, size_t n, int shuffle, uint64_t seed,
                 uint64_t epoch, unsigned rank, unsigned world)
{
    if (out == NULL || count == NULL || world == 0 || rank >= world)
        return -EINVAL;
    uint64_t *perm = malloc((n > 0 ? n : 1) * sizeof(*perm));
    if (perm == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    struct draws d = {sophon__splitmix64(seed ^ sophon__splitmix64(epoch ^ 0x5350484f4e000000ull)),
                      0};
    for (size_t i = n; shuffle && i > 1; i--) {
        size_t j = (size_t)sophon__below(next, &d, i);
        uint64_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    size_t m = 0;
    for (size_t p = rank; p < n; p += world)
        perm[m++] = perm[p];
    *out = perm;
    *count = m;
    return 0;
}

int sophon__epoch_order(uint64_t **out, size_t *count, size_t n, uint64_t seed, uint64_t epoch,
                        unsigned rank, unsigned world)
{
    return order(out, count, n, 1, seed, epoch, rank, world);
}

int sophon__epoch_order_sequential(uint64_t **out, size_t *count, size_t n, unsigned rank,
                                   unsigned world)
{
    return order(out, count, n, 0, 0, 0, rank, world);
}
