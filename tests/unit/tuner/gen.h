/* SPDX-License-Identifier: MIT */
/*
 * Ground truth for the tuner: synthetic calibration runs with a planted inline crossover and a planted signaling knee,
 * measured through the noise a NIC shows (gaussian, log-normal heavy tails, periodic outliers, slow drift); a plain
 * Kneedle-only baseline; and a corpus scorer shared by the unit tests and bench/bench_tuner.c.
 */
#ifndef RT_TUNER_GEN_H
#define RT_TUNER_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_tuner.h"

enum gen_noise { GEN_GAUSS = 0, GEN_LOGNORMAL, GEN_OUTLIERS, GEN_DRIFT, GEN_MIXED, GEN__COUNT };

/* What kind of case to draw; gen_opts_default() gives the randomized corpus mix. */
struct gen_opts {
	int noise;	   /* enum gen_noise, or -1 = drawn per case */
	double noise_mult; /* scales every noise level (1 = the realistic range) */
	int raw;	   /* 1 = keep raw samples, 0 = medians/CIs only, -1 = drawn per case */
	int refine;	   /* 1 = refined sizes near the crossover, 0 = powers of two only, -1 = drawn */
	int edges;	   /* 1 = some cases plant "never better" or "better all the way" */
	int with_rate;	   /* 1 = include a signaling sweep */
};

/* One synthetic run and its planted answers. */
struct gen_case {
	uint64_t seed;
	enum gen_noise noise;
	struct rt_lat_point *lat; /* owned, samples_ns included */
	size_t n_lat;
	struct rt_rate_point *rate; /* owned */
	size_t n_rate;
	uint32_t *grid; /* measured sizes, ascending (owned) */
	size_t n_grid;
	uint32_t true_threshold; /* largest grid size where true d > 0, 0 = none */
	uint32_t true_n;	 /* planted signal interval (after the sq_depth/4 cap) */
	double true_t_cqe_ns;	 /* planted cost of one signaled completion (0 = no signaling sweep) */
	double true_d[64];	 /* true d at each grid size (first 64) */
	uint32_t max_inline, sq_depth;
	struct rt_tuner_input in; /* points at lat/rate above */
};

/* The randomized corpus mix: all noise models, raw and summary points, refined and plain grids, edge cases. */
void gen_opts_default(struct gen_opts *o);

/* Draws case number `seed` (deterministic). Returns 0 or ENOMEM; gen_free() releases it. */
int gen_make(uint64_t seed, const struct gen_opts *o, struct gen_case *c);
void gen_free(struct gen_case *c);

/* Grid steps between two thresholds on the case's measured grid (0 = never sits one step below the smallest). */
int gen_thr_steps(const struct gen_case *c, uint32_t a, uint32_t b);
/* Powers of two between two signal intervals (rounded |log2(a/b)|). */
int gen_n_steps(uint32_t a, uint32_t b);

/* The plain Kneedle-only baseline: knee of d(log2 size) and of rate(log2 N), no statistics. */
void gen_baseline(const struct gen_case *c, uint32_t *thr, uint32_t *n);

struct corpus_score {
	size_t cases;
	size_t thr_ok, n_ok; /* tuner within one size step / one power of two */
	size_t thr_exact, n_exact;
	size_t base_thr_ok, base_n_ok; /* the baseline, same criteria */
	size_t conf[3];		       /* tuner confidence histogram (overall) */
	double tuner_s;		       /* time spent in rt_tuner_run */
};

/*
 * Runs the tuner (opts, or defaults when NULL) and the baseline on cases seed0 .. seed0+n-1 and counts hits.
 * Returns 0, or the first error (the tuner's errno or ENOMEM).
 */
int corpus_run(uint64_t seed0, size_t n, const struct gen_opts *go, const struct rt_tuner_opts *to,
	       struct corpus_score *s);

#endif
