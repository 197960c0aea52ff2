/* SPDX-License-Identifier: MIT */
/*
 * A simulated device with a planted inline crossover, for the inline controller's unit tests and bench/bench_ctl:
 * the post -> completion time of a send of b bytes is base_ns + (inline ? chunk_ns * ceil(b / 64) : dma_ns), times a
 * seeded noise factor (uniform within +-noise_pct %, and one sample in 50 three times as long: a scheduling spike).
 * The application sends log-uniform sizes (a band of the shared buckets chosen uniformly within 1..max_bytes, then a
 * size uniformly within it). Pure C, deterministic for a seed; no verbs.
 */
#ifndef RT_SIMDEV_H
#define RT_SIMDEV_H

#include <stdbool.h>
#include <stdint.h>

#include <rtune/profile.h>

struct rt_simdev {
	double base_ns, chunk_ns, dma_ns;
	unsigned noise_pct;
	uint32_t max_bytes; /* largest message the application sends */
	uint64_t rng;	    /* state, non-zero */
};

/* The largest size for which inline is strictly faster on d (0 = never): the planted crossover. */
uint32_t rt_simdev_crossover(const struct rt_simdev *d);

/* One message size of the application's distribution. */
uint32_t rt_simdev_size(struct rt_simdev *d);

/* One post -> completion time in ns (>= 1). */
uint64_t rt_simdev_lat_ns(struct rt_simdev *d, uint32_t bytes, bool inlined);

/* The result of rt_simdev_drive(). */
struct rt_simdev_run {
	uint64_t converged_at;	  /* message from which the threshold stayed within one band of the crossover */
	bool converged;		  /* it was within one band at the end */
	uint32_t final_bytes;	  /* threshold at the end */
	uint64_t inline_over_cap; /* sends answered inline above granted_max_inline (must be 0) */
	uint64_t sampled;	  /* sends flagged for sampling */
};

/*
 * Sends n messages through c on d (from message index first, for the convergence bookkeeping), reporting every
 * sampled one; cap is the granted max_inline_data. Convergence is judged against target (a crossover in bytes).
 */
void rt_simdev_drive(rt_inline_ctl *c, struct rt_simdev *d, uint64_t n, uint32_t cap, uint32_t target,
		     struct rt_simdev_run *r);

/* True when thresholds a and b are in the same or neighbouring bands of the shared buckets. */
bool rt_simdev_within_one_band(uint32_t a, uint32_t b);

#endif
