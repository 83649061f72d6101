/*
 * splitmix64.h - the client's one random number generator. Internal.
 *
 * SplitMix64 (Steele, Lea, Flood 2014) is counter-based: its n-th number is a mix of
 * state + n * gamma, so any draw can be computed from its key directly, on any client and in any
 * order. The sampler (sampler.c) runs one stream per sample; the epoch order (epoch_order.c)
 * mixes (key, counter) pairs with the same function. Both take integers below a bound with
 * sophon__below. Changing anything here changes every box, flip and shuffle.
 */
#ifndef SOPHON_SPLITMIX64_H
#define SOPHON_SPLITMIX64_H

#include <stdint.h>

#define SOPHON__SPLITMIX64_GAMMA 0x9e3779b97f4a7c15ull

/* The number a stream in state x returns next: the mix of x + gamma. */
static inline uint64_t sophon__splitmix64(uint64_t x)
{
    uint64_t z = x + SOPHON__SPLITMIX64_GAMMA;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The next number of the stream in *state, which moves on. */
static inline uint64_t sophon__splitmix64_next(uint64_t *state)
{
    uint64_t z = sophon__splitmix64(*state);

    *state += SOPHON__SPLITMIX64_GAMMA;
    return z;
}

/*
 * A number uniform in [0, n), n > 0, from the numbers next(g) returns: those in the top partial
 * range (at or above the largest multiple of n) are drawn again, so there is no modulo bias.
 */
static inline uint64_t sophon__below(uint64_t (*next)(void *g), void *g, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;

    do {
        x = next(g);
    } while (x >= limit);
    return x % n;
}

#endif /* SOPHON_SPLITMIX64_H */
