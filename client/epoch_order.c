/*
 * epoch_order.c - the shuffle of an epoch and its shards.
 */
#include "epoch_order.h"

#include <errno.h>
#include <stdlib.h>

/* splitmix64: a counter-based generator, so that (seed, epoch, draw) fixes every number. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A uniform number below bound (> 0): rejection of the top partial range, no modulo bias. */
static uint64_t below(uint64_t key, uint64_t *counter, uint64_t bound)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    for (;;) {
        uint64_t v = mix(key ^ mix((*counter)++));
        if (v < limit)
            return v % bound;
    }
}

int sophon__epoch_order(uint64_t **out, size_t *count, size_t n, uint64_t seed, uint64_t epoch,
                        unsigned rank, unsigned world)
{
    if (out == NULL || count == NULL || world == 0 || rank >= world)
        return -EINVAL;
    uint64_t *perm = malloc((n > 0 ? n : 1) * sizeof(*perm));
    if (perm == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    uint64_t key = mix(seed ^ mix(epoch ^ 0x5350484f4e000000ull)), counter = 0;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)below(key, &counter, i);
        uint64_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    /* The shard's positions, packed at the front in order. */
    size_t m = 0;
    for (size_t p = rank; p < n; p += world)
        perm[m++] = perm[p];
    *out = perm;
    *count = m;
    return 0;
}
