// SPDX-License-Identifier: MIT
/*
 * Order statistics, the binomial confidence interval of the median and its block-median widening, the split-half
 * stationarity test, the stopping rule and the seeded PRNG of the calibration engine (see rt_stats.h).
 */
#include "rt_stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void rt_stats_sort(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_double);
}

double rt_stats_quantile_sorted(const double *v, size_t n, double q)
{
	double h, f;
	size_t i;

	if (n == 0)
		return NAN;
	if (q <= 0)
		return v[0];
	if (q >= 1)
		return v[n - 1];
	h = q * (double)(n - 1);
	i = (size_t)h;
	f = h - (double)i;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + f * (v[i + 1] - v[i]);
}

/* log of the binomial coefficient C(n, k) */
static double log_choose(size_t n, size_t k)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);
}

/* Inverse of the standard normal CDF for p in (0.5, 1) (Acklam's rational approximation, |error| < 1.2e-9). */
static double norm_quantile(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
				    1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
				    6.680131188771972e+01, -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
				    -2.549671010862220e+00, 4.374664141464968e+00,  2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
				    3.754408661907416e+00 };
	double q, r;

	if (p > 0.97575) {
		q = sqrt(-2 * log(1 - p));
		return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	q = p - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

bool rt_stats_median_ci_ranks(size_t n, double level, size_t *lo, size_t *hi)
{
	double alpha = (1 - level) / 2;

	*lo = 0;
	*hi = n ? n - 1 : 0;
	if (n == 0 || level <= 0 || level >= 1)
		return false;
	if (n <= 5000) {
		/* largest k with P(X <= k-1) <= alpha: the order statistics of ranks k and n-1-k (0-based) bracket the median */
		double cdf = 0, logp = -(double)n * log(2.0);
		size_t k = 0;

		for (size_t j = 0; j < n / 2; j++) {
			cdf += exp(log_choose(n, j) + logp);
			if (cdf > alpha)
				break;
			k = j + 1;
		}
		if (k == 0)
			return false;
		*lo = k - 1 + 0;
		/* P(X <= k-1) <= alpha means [X_(k), X_(n-k+1)] in 1-based ranks, i.e. 0-based [k-1, n-k] */
		*hi = n - k;
		return true;
	}
	{
		double z = norm_quantile(1 - alpha);
		double half = z * sqrt((double)n) / 2;
		double l = floor((double)n / 2 - half);

		*lo = l < 0 ? 0 : (size_t)l;
		*hi = n - 1 - *lo;
		return true;
	}
}

void rt_stats_summarize(double *v, size_t n, double level, struct rt_summary *out)
{
	rt_stats_sort(v, n);
	rt_stats_summarize_sorted(v, n, level, out);
}

void rt_stats_merge_sorted(double *sorted, size_t n, double *add, size_t m)
{
	size_t i = n, j = m, k = n + m;

	rt_stats_sort(add, m);
	while (j > 0) {
		if (i > 0 && sorted[i - 1] > add[j - 1])
			sorted[--k] = sorted[--i];
		else
			sorted[--k] = add[--j];
	}
}

void rt_stats_summarize_sorted(const double *v, size_t n, double level, struct rt_summary *out)
{
	size_t lo, hi;
	double sum = 0;

	out->n = n;
	out->n_blocks = 0;
	if (n == 0) {
		out->median = out->p99 = out->p999 = out->mean = out->min = out->max = NAN;
		out->ci_lo = out->ci_hi = out->os_lo = out->os_hi = NAN;
		return;
	}
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	out->mean = sum / (double)n;
	out->min = v[0];
	out->max = v[n - 1];
	out->median = rt_stats_quantile_sorted(v, n, 0.5);
	out->p99 = rt_stats_quantile_sorted(v, n, 0.99);
	out->p999 = rt_stats_quantile_sorted(v, n, 0.999);
	rt_stats_median_ci_ranks(n, level, &lo, &hi);
	out->ci_lo = out->os_lo = v[lo];
	out->ci_hi = out->os_hi = v[hi];
}

double rt_stats_t_quantile(double p, double df)
{
	double z, z2, z3, z5, z7, z9;

	if (!(p > 0.5 && p < 1) || !(df >= 1))
		return NAN;
	if (df < 1.5)
		return tan(M_PI * (p - 0.5));
	if (df < 2.5) {
		double a = 4 * p * (1 - p);

		return (2 * p - 1) * sqrt(2 / a);
	}
	/* Cornish-Fisher expansion of t in powers of 1/df (Abramowitz & Stegun 26.7.5) */
	z = norm_quantile(p);
	z2 = z * z;
	z3 = z2 * z;
	z5 = z3 * z2;
	z7 = z5 * z2;
	z9 = z7 * z2;
	return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df) +
	       (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df * df * df * df);
}

double rt_stats_median_copy(const double *v, size_t n, double *scratch)
{
	if (n == 0)
		return NAN;
	for (size_t i = 0; i < n; i++)
		scratch[i] = v[i];
	rt_stats_sort(scratch, n);
	return rt_stats_quantile_sorted(scratch, n, 0.5);
}

/* 1.4826 * median absolute deviation of v[0..n) from c: a robust standard deviation (scratch: n doubles) */
static double robust_sd(const double *v, size_t n, const double *centre, double *scratch)
{
	for (size_t i = 0; i < n; i++)
		scratch[i] = fabs(v[i] - centre[i]);
	rt_stats_sort(scratch, n);
	return 1.4826 * rt_stats_quantile_sorted(scratch, n, 0.5);
}

void rt_stats_block_ci(struct rt_summary *out, const double *blk_med, size_t n_blk, double level, double *scratch)
{
	double m, sd, hw, *centre;

	if (n_blk < 2 || out->n == 0)
		return;
	m = rt_stats_median_copy(blk_med, n_blk, scratch);
	centre = scratch + n_blk; /* every block's deviation is from the one median of block medians */
	for (size_t i = 0; i < n_blk; i++)
		centre[i] = m;
	sd = robust_sd(blk_med, n_blk, centre, scratch);
	hw = rt_stats_t_quantile(1 - (1 - level) / 2, (double)(n_blk - 1)) * sd / sqrt((double)n_blk);
	out->n_blocks = n_blk;
	if (!isfinite(hw))
		return;
	/* within the range of what was seen: a half-width beyond it (a few blocks, t(1) = 12.7) says "nothing known" */
	if (out->median - hw < out->ci_lo)
		out->ci_lo = out->median - hw < out->min ? out->min : out->median - hw;
	if (out->median + hw > out->ci_hi)
		out->ci_hi = out->median + hw > out->max ? out->max : out->median + hw;
}

bool rt_stats_stationary(const double *blk_med, size_t n_blk, double level, double floor_ns, double *diff_out,
			 double *scratch)
{
	size_t h1 = n_blk / 2, h2 = n_blk - h1;
	double m1, m2, sd, noise, *centre;

	if (diff_out)
		*diff_out = 0;
	if (n_blk < 4)
		return true;
	m1 = rt_stats_median_copy(blk_med, h1, scratch);
	m2 = rt_stats_median_copy(blk_med + h1, h2, scratch);
	centre = scratch + n_blk;
	for (size_t i = 0; i < n_blk; i++)
		centre[i] = i < h1 ? m1 : m2;
	sd = robust_sd(blk_med, n_blk, centre, scratch);
	noise = rt_stats_t_quantile(1 - (1 - level) / 2, (double)(n_blk - 2)) * sd *
		sqrt(1.0 / (double)h1 + 1.0 / (double)h2);
	if (diff_out)
		*diff_out = m2 - m1;
	return !(fabs(m2 - m1) > noise && fabs(m2 - m1) > floor_ns);
}

double rt_stats_ci_rel_width(const struct rt_summary *s)
{
	if (s->n == 0 || !(s->median > 0))
		return INFINITY;
	return (s->ci_hi - s->ci_lo) / s->median;
}

bool rt_stats_ci_disjoint(const struct rt_summary *a, const struct rt_summary *b)
{
	if (a->n == 0 || b->n == 0)
		return false;
	return a->ci_hi < b->ci_lo || b->ci_hi < a->ci_lo;
}

const char *rt_stop_name(enum rt_stop s)
{
	switch (s) {
	case RT_STOP_CONTINUE: return "continue";
	case RT_STOP_TIGHT: return "tight";
	case RT_STOP_CLEAR: return "clear";
	case RT_STOP_CAPPED: return "capped";
	}
	return "unknown";
}

static bool within(const struct rt_stop_rule *r, const struct rt_summary *s, double rel)
{
	double w = s->ci_hi - s->ci_lo;
	double lim = rel * s->median;

	if (lim < r->abs_floor_ns)
		lim = r->abs_floor_ns;
	return s->n >= r->min_samples && w <= lim;
}

enum rt_stop rt_stop_point(const struct rt_stop_rule *r, const struct rt_summary *s)
{
	if (s->n >= r->max_samples)
		return RT_STOP_CAPPED;
	if (within(r, s, r->rel_tight))
		return RT_STOP_TIGHT;
	return RT_STOP_CONTINUE;
}

enum rt_stop rt_stop_pair(const struct rt_stop_rule *r, const struct rt_summary *a, const struct rt_summary *b)
{
	enum rt_stop sa = rt_stop_point(r, a), sb = rt_stop_point(r, b);

	if (sa != RT_STOP_CONTINUE && sb != RT_STOP_CONTINUE)
		return (sa == RT_STOP_CAPPED || sb == RT_STOP_CAPPED) ? RT_STOP_CAPPED : RT_STOP_TIGHT;
	if (rt_stats_ci_disjoint(a, b) && within(r, a, r->rel_loose) && within(r, b, r->rel_loose))
		return RT_STOP_CLEAR;
	/* one side capped, the other not done: keep sampling the other until it is capped or tight too */
	return RT_STOP_CONTINUE;
}

void rt_rng_seed(struct rt_rng *r, uint64_t seed)
{
	r->s = seed;
}

uint64_t rt_rng_next(struct rt_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t rt_rng_below(struct rt_rng *r, uint64_t n)
{
	/* rejection sampling avoids modulo bias */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = rt_rng_next(r);
	while (x >= lim);
	return x % n;
}
