/* SPDX-License-Identifier: MIT */
/*
 * The tuner's own deterministic PRNG: xoshiro256** (Blackman & Vigna) seeded through splitmix64, plus uniform and
 * standard-normal draws. Header-only and private to the tuner and its tests; no global state, so two tuner runs with
 * the same seed and input draw the same numbers whatever else the process does.
 */
#ifndef RT_RNG_H
#define RT_RNG_H

#include <math.h>
#include <stdint.h>

struct rt_rng {
	uint64_t s[4];
};

/* splitmix64 step: advances *x and returns the next output (also a good 64-bit mixer for deriving seeds). */
static inline uint64_t rt_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Seeds r from one 64-bit value (any value, 0 included, gives a valid non-zero state). */
static inline void rt_rng_seed(struct rt_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = rt_splitmix64(&seed);
}

static inline uint64_t rt_rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* Next 64 random bits (xoshiro256**). */
static inline uint64_t rt_rng_next(struct rt_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rt_rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rt_rotl64(s[3], 45);
	return out;
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double rt_rng_uniform(struct rt_rng *r)
{
	return (double)(rt_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32). */
static inline uint32_t rt_rng_below(struct rt_rng *r, uint32_t n)
{
	return (uint32_t)(((rt_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Standard normal draw (Box-Muller; one of the pair is discarded to keep the state simple). */
static inline double rt_rng_normal(struct rt_rng *r)
{
	double u1 = rt_rng_uniform(r), u2 = rt_rng_uniform(r);

	if (u1 < 0x1.0p-60)
		u1 = 0x1.0p-60;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
