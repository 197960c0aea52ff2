/* SPDX-License-Identifier: MIT */
/*
 * Aggregation and stopping rules of the calibration engine: order statistics of a sample (median, p99, p99.9 by linear
 * interpolation between order statistics), the distribution-free confidence interval of the median from the binomial
 * distribution of ranks, its widening by the between-block spread of block medians (samples measured in blocks are
 * correlated: a stall shifts a whole block), the split-half stationarity test on block medians, and the rule that
 * decides when a point (or an inline/non-inline pair) has enough samples. Pure C on arrays: no verbs, deterministic,
 * unit-tested on the host.
 */
#ifndef RT_STATS_H
#define RT_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Summary of one sample set; all values in the sample's unit (ns). */
struct rt_summary {
	size_t n;
	double median, p99, p999, mean, min, max;
	double ci_lo, ci_hi; /* confidence interval of the median; equal to [min, max] when n is too small */
	size_t n_blocks;     /* blocks whose medians widened the CI (rt_stats_block_ci), 0 = order statistics only */
	double os_lo, os_hi; /* the order-statistic CI alone (what ci_lo/ci_hi are when n_blocks < 2) */
};

/* Sorts v[0..n) ascending in place. */
void rt_stats_sort(double *v, size_t n);

/* Quantile q in [0,1] of sorted v[0..n) with linear interpolation (Hyndman-Fan type 7); NAN when n == 0. */
double rt_stats_quantile_sorted(const double *v, size_t n, double q);

/*
 * 0-based ranks [*lo, *hi] of the order statistics bounding the median with at least the given confidence (e.g. 0.95):
 * the largest lo and smallest hi = n-1-lo such that P(Bin(n, 1/2) <= lo) <= (1-level)/2, exact for n <= 5000, normal
 * approximation above. Returns false (and lo = 0, hi = n-1) when n is too small for that level (n < 6 at 95 %).
 */
bool rt_stats_median_ci_ranks(size_t n, double level, size_t *lo, size_t *hi);

/* Sorts v in place and fills out; n == 0 gives n = 0 and NANs. */
void rt_stats_summarize(double *v, size_t n, double level, struct rt_summary *out);

/* rt_stats_summarize of v[0..n) already sorted ascending. */
void rt_stats_summarize_sorted(const double *v, size_t n, double level, struct rt_summary *out);

/*
 * Merges the unsorted add[0..m) (sorted in place) into the sorted sorted[0..n), which must have room for n + m.
 */
void rt_stats_merge_sorted(double *sorted, size_t n, double *add, size_t m);

/*
 * Quantile p in (0.5, 1) of Student's t distribution with df degrees of freedom (df >= 1): exact for df 1 and 2, a
 * Cornish-Fisher expansion above (error < 0.3 % at df 3, less beyond). NAN for p or df outside the range.
 */
double rt_stats_t_quantile(double p, double df);

/* Median of v[0..n) without changing v (scratch: n doubles); NAN when n == 0. */
double rt_stats_median_copy(const double *v, size_t n, double *scratch);

/*
 * Widens out's median CI by the between-block spread: with B = n_blk >= 2 block medians, the half-width
 * t(1 - (1 - level)/2, B - 1) * 1.4826 * MAD(block medians) / sqrt(B) is laid around out->median, and the CI becomes
 * the union of that interval and the order-statistic one (so it is never narrower than either), clamped to the samples'
 * [min, max]. B < 2 leaves out as it is. Sets out->n_blocks. scratch: 2 * n_blk doubles.
 */
void rt_stats_block_ci(struct rt_summary *out, const double *blk_med, size_t n_blk, double level, double *scratch);

/*
 * Split-half stationarity of a point from its block medians in time order: the medians of the first and the second half
 * of the blocks differ by more than their noise (t(level, B - 2) * s * sqrt(1/B1 + 1/B2), s = 1.4826 * the median
 * absolute deviation of each block median from its own half's median) and by more than floor_ns. Returns true
 * (stationary) when they do not, and also when there are fewer than 4 blocks (nothing to compare yet); *diff_out (may be
 * NULL) gets second-half minus first-half. scratch: 2 * n_blk doubles.
 */
bool rt_stats_stationary(const double *blk_med, size_t n_blk, double level, double floor_ns, double *diff_out,
			 double *scratch);

/* Relative width of the median's CI: (ci_hi - ci_lo) / median; INFINITY when undefined. */
double rt_stats_ci_rel_width(const struct rt_summary *s);

/*
 * When to stop sampling. A point is "tight" when it has at least min_samples and its median CI is no wider than
 * rel_tight * median (or abs_floor_ns, whichever is larger, so that a 1 ns-granular clock cannot make a point unfinishable).
 * An inline/non-inline pair is "clear" when both have min_samples, their CIs are disjoint and each is no wider than
 * rel_loose: the answer (which one is faster) is settled, more samples would not change the decision. A point or pair at
 * max_samples is "capped".
 */
struct rt_stop_rule {
	size_t min_samples;
	size_t max_samples;
	double rel_tight;    /* e.g. 0.02 */
	double rel_loose;    /* e.g. 0.10 */
	double abs_floor_ns; /* e.g. 20 */
	double level;	     /* CI level, e.g. 0.95 */
};

enum rt_stop {
	RT_STOP_CONTINUE = 0, /* needs more samples */
	RT_STOP_TIGHT,	      /* CI tight enough */
	RT_STOP_CLEAR,	      /* pair: decision already clear */
	RT_STOP_CAPPED,	      /* per-point cap reached */
};

const char *rt_stop_name(enum rt_stop s);
enum rt_stop rt_stop_point(const struct rt_stop_rule *r, const struct rt_summary *s);
enum rt_stop rt_stop_pair(const struct rt_stop_rule *r, const struct rt_summary *a, const struct rt_summary *b);

/* True when the two medians' CIs do not overlap. */
bool rt_stats_ci_disjoint(const struct rt_summary *a, const struct rt_summary *b);

/* Small seeded PRNG (splitmix64) used for block order and reservoir sampling: deterministic for a given seed. */
struct rt_rng {
	uint64_t s;
};
void rt_rng_seed(struct rt_rng *r, uint64_t seed);
uint64_t rt_rng_next(struct rt_rng *r);
/* Uniform integer in [0, n), n > 0. */
uint64_t rt_rng_below(struct rt_rng *r, uint64_t n);

#endif
