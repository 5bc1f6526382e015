/* The one hash of cobalt-bench: splitmix64's (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014). Every pattern a kernel verifies and
 * every pseudo-random order it plans comes from it, so that the same seed gives the same
 * data and the same schedule on every machine, build and kernel: mem-test's spot tags,
 * gpu-copy's pattern words (also on the GPU), cb-linktest's payloads and schedules,
 * eth-test's payload stamps, smp-mad-stress's simulated fabric. Changing it changes
 * what every one of them writes and expects. */
#ifndef CB_HASH_H
#define CB_HASH_H

#include <stdint.h>

/* __host__ __device__ under nvcc: gpu-copy's engine computes pattern words on the GPU */
#ifdef __CUDACC__
#define CB_HASH_FN static inline __host__ __device__
#else
#define CB_HASH_FN static inline
#endif

/* splitmix64's increment: 2^64 divided by the golden ratio, odd */
#define CB_GOLDEN_GAMMA 0x9e3779b97f4a7c15ULL

/* splitmix64's output function: every bit of z mixed into every bit of the result.
 * A bijection, and 0 stays 0. */
CB_HASH_FN uint64_t cb_mix64_final(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The hash of x: the value splitmix64 gives first from state x. */
CB_HASH_FN uint64_t cb_mix64(uint64_t x)
{
    return cb_mix64_final(x + CB_GOLDEN_GAMMA);
}

#endif
