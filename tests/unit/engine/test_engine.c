// SPDX-License-Identifier: MIT
/*
 * Unit tests of the calibration engine's device-free parts: order statistics and the binomial CI of the median
 * (exact ranks against known tables, coverage by simulation), the stopping rule, the point scheduler on synthetic
 * curves with a planted crossover and a fake clock (coverage of the plan, refinement where the inline advantage ends,
 * more samples near the crossover, deadline, seeded block order, error propagation), the clock choice and its
 * fallback, and the run's JSON shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_clock.h"
#include "rt_engine.h"
#include "rt_sched.h"
#include "rt_stats.h"

/* ---- statistics ------------------------------------------------------------------------------------------------ */

static void test_quantiles(void **state)
{
	double v[] = { 5, 1, 4, 2, 3 };
	struct rt_summary s;

	(void)state;
	rt_stats_summarize(v, 5, 0.95, &s);
	assert_int_equal(s.n, 5);
	assert_true(v[0] == 1 && v[4] == 5); /* sorted in place */
	assert_true(fabs(s.median - 3) < 1e-12);
	assert_true(fabs(s.mean - 3) < 1e-12);
	assert_true(fabs(rt_stats_quantile_sorted(v, 5, 0.25) - 2) < 1e-12);
	assert_true(fabs(rt_stats_quantile_sorted(v, 5, 0.99) - 4.96) < 1e-12);
	assert_true(s.min == 1 && s.max == 5);
	/* n = 5 is too small for a 95 % CI: the whole range */
	assert_true(s.ci_lo == 1 && s.ci_hi == 5);
	rt_stats_summarize(v, 0, 0.95, &s);
	assert_int_equal(s.n, 0);
	assert_true(isnan(s.median) && isnan(s.ci_lo));
	assert_true(isinf(rt_stats_ci_rel_width(&s)));
}

static void test_median_ci_ranks(void **state)
{
	size_t lo, hi;

	(void)state;
	assert_false(rt_stats_median_ci_ranks(5, 0.95, &lo, &hi));
	assert_true(rt_stats_median_ci_ranks(6, 0.95, &lo, &hi));
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 5);
	/* n = 10: P(X<=1) = 11/1024 <= 0.025 < P(X<=2) = 56/1024 -> 1-based ranks 2 and 9 */
	assert_true(rt_stats_median_ci_ranks(10, 0.95, &lo, &hi));
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 8);
	/* n = 100: the textbook 95 % interval is X(40)..X(61) */
	assert_true(rt_stats_median_ci_ranks(100, 0.95, &lo, &hi));
	assert_int_equal(lo, 39);
	assert_int_equal(hi, 60);
	/* large n: normal approximation, width ~ 1.96 sqrt(n) ranks */
	assert_true(rt_stats_median_ci_ranks(40000, 0.95, &lo, &hi));
	assert_true(hi - lo >= 390 && hi - lo <= 396);
	assert_int_equal(lo + hi, 39999);
	/* exact/normal switch point does not jump */
	{
		size_t l1, h1, l2, h2;

		rt_stats_median_ci_ranks(5000, 0.95, &l1, &h1);
		rt_stats_median_ci_ranks(5001, 0.95, &l2, &h2);
		assert_true(l2 + 2 >= l1 && l2 <= l1 + 2);
	}
}

static double rng_unit(struct rt_rng *r)
{
	return (double)(rt_rng_next(r) >> 11) / 9007199254740992.0;
}

static double rng_gauss(struct rt_rng *r)
{
	double u = rng_unit(r), v = rng_unit(r);

	return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static void test_median_ci_coverage(void **state)
{
	struct rt_rng r;
	int covered = 0, trials = 2000;
	double v[60];

	(void)state;
	rt_rng_seed(&r, 42);
	for (int t = 0; t < trials; t++) {
		struct rt_summary s;

		/* skewed (exponential) samples, true median ln 2 */
		for (int i = 0; i < 60; i++)
			v[i] = -log(1 - rng_unit(&r));
		rt_stats_summarize(v, 60, 0.95, &s);
		covered += s.ci_lo <= M_LN2 && M_LN2 <= s.ci_hi;
	}
	/* exact order-statistic intervals are conservative: coverage >= 95 %, and not absurdly wide */
	assert_true(covered >= (int)(0.94 * trials));
	assert_true(covered <= (int)(0.995 * trials));
}

static void test_stop_rule(void **state)
{
	struct rt_stop_rule r = { .min_samples = 10,
				  .max_samples = 100,
				  .rel_tight = 0.02,
				  .rel_loose = 0.10,
				  .abs_floor_ns = 20,
				  .level = 0.95 };
	struct rt_summary a = { .n = 50, .median = 1000, .ci_lo = 995, .ci_hi = 1005 };
	struct rt_summary b = { .n = 50, .median = 1000, .ci_lo = 955, .ci_hi = 1050 };
	struct rt_summary c = { .n = 50, .median = 1500, .ci_lo = 1460, .ci_hi = 1540 };
	struct rt_summary few = { .n = 5, .median = 1000, .ci_lo = 999, .ci_hi = 1001 };
	struct rt_summary cap = { .n = 100, .median = 1000, .ci_lo = 500, .ci_hi = 1500 };
	struct rt_summary tiny = { .n = 50, .median = 100, .ci_lo = 90, .ci_hi = 105 };

	(void)state;
	assert_int_equal(rt_stop_point(&r, &a), RT_STOP_TIGHT);
	assert_int_equal(rt_stop_point(&r, &b), RT_STOP_CONTINUE);
	assert_int_equal(rt_stop_point(&r, &few), RT_STOP_CONTINUE); /* below min_samples */
	assert_int_equal(rt_stop_point(&r, &cap), RT_STOP_CAPPED);
	assert_int_equal(rt_stop_point(&r, &tiny), RT_STOP_TIGHT); /* 15 ns wide < 20 ns floor */
	/* disjoint and each within 10 %: the decision is clear even though neither is tight */
	assert_int_equal(rt_stop_pair(&r, &b, &c), RT_STOP_CLEAR);
	/* overlapping: keep going until both are tight */
	assert_int_equal(rt_stop_pair(&r, &a, &b), RT_STOP_CONTINUE);
	assert_int_equal(rt_stop_pair(&r, &a, &a), RT_STOP_TIGHT);
	assert_int_equal(rt_stop_pair(&r, &cap, &a), RT_STOP_CAPPED);
	assert_true(rt_stats_ci_disjoint(&a, &c));
	assert_false(rt_stats_ci_disjoint(&a, &b));
	assert_string_equal(rt_stop_name(RT_STOP_CLEAR), "clear");
}

static void test_t_quantile(void **state)
{
	(void)state;
	/* t tables, 97.5 % */
	assert_true(fabs(rt_stats_t_quantile(0.975, 1) - 12.706) < 0.01);
	assert_true(fabs(rt_stats_t_quantile(0.975, 2) - 4.303) < 0.005);
	assert_true(fabs(rt_stats_t_quantile(0.975, 3) - 3.182) < 0.01);
	assert_true(fabs(rt_stats_t_quantile(0.975, 5) - 2.571) < 0.005);
	assert_true(fabs(rt_stats_t_quantile(0.975, 10) - 2.228) < 0.002);
	assert_true(fabs(rt_stats_t_quantile(0.975, 30) - 2.042) < 0.002);
	assert_true(fabs(rt_stats_t_quantile(0.975, 1e6) - 1.960) < 0.001);
	assert_true(fabs(rt_stats_t_quantile(0.95, 10) - 1.812) < 0.002);
	assert_true(isnan(rt_stats_t_quantile(0.3, 10)));
	assert_true(isnan(rt_stats_t_quantile(0.975, 0.5)));
}

/*
 * n_blk blocks of 16 samples: iid N(1000, 10) plus, per block, a shift N(0, shift_sd) (a stall or drift moves a whole
 * block). Fills sum with the block-widened CI and returns the width of the order-statistic CI alone in *os_w.
 */
static void blocky(struct rt_rng *r, size_t n_blk, double shift_sd, struct rt_summary *sum, double *os_w)
{
	double v[16 * 64], med[64], scratch[16 * 64 + 128];

	assert_true(n_blk <= 64);
	for (size_t b = 0; b < n_blk; b++) {
		double sh = shift_sd * rng_gauss(r);

		for (size_t i = 0; i < 16; i++)
			v[b * 16 + i] = 1000 + sh + 10 * rng_gauss(r);
		med[b] = rt_stats_median_copy(v + b * 16, 16, scratch);
	}
	rt_stats_summarize(v, n_blk * 16, 0.95, sum);
	*os_w = sum->ci_hi - sum->ci_lo;
	assert_true(sum->os_hi - sum->os_lo == *os_w);
	rt_stats_block_ci(sum, med, n_blk, 0.95, scratch);
	assert_int_equal(sum->n_blocks, n_blk);
	/* never narrower than the order-statistic CI, and it still contains the median */
	assert_true(sum->ci_lo <= sum->os_lo && sum->ci_hi >= sum->os_hi);
	assert_true(sum->ci_lo <= sum->median && sum->median <= sum->ci_hi);
}

static void test_block_ci(void **state)
{
	struct rt_rng r;
	struct rt_summary sum;
	int trials = 400, cov_blk = 0, cov_os = 0;
	double ratio_iid = 0, ratio_corr = 0, os_w;

	(void)state;
	rt_rng_seed(&r, 99);
	for (int t = 0; t < trials; t++) {
		blocky(&r, 20, 0, &sum, &os_w);
		ratio_iid += (sum.ci_hi - sum.ci_lo) / os_w / trials;
		blocky(&r, 20, 20, &sum, &os_w);
		ratio_corr += (sum.ci_hi - sum.ci_lo) / os_w / trials;
		/* the true median of the process is 1000: how often does each CI cover it? */
		cov_blk += sum.ci_lo <= 1000 && 1000 <= sum.ci_hi;
		cov_os += sum.os_lo <= 1000 && 1000 <= sum.os_hi;
	}
	/* correlated samples (block shifts of 2x the sample noise): much wider, and honest where the iid CI is not */
	assert_true(ratio_corr > 2.5);
	/* iid samples: about the order-statistic CI (the median of 16 is a little less efficient than the whole) */
	assert_true(ratio_iid > 1.01 && ratio_iid < 1.5);
	assert_true(cov_blk >= (int)(0.90 * trials));
	assert_true(cov_os < (int)(0.60 * trials));
	/* fewer than 2 blocks: the order-statistic CI is left alone */
	{
		double v[16], med, sc[64];

		for (int i = 0; i < 16; i++)
			v[i] = 1000 + i;
		med = rt_stats_median_copy(v, 16, sc);
		rt_stats_summarize(v, 16, 0.95, &sum);
		rt_stats_block_ci(&sum, &med, 1, 0.95, sc);
		assert_int_equal(sum.n_blocks, 0);
		assert_true(sum.ci_lo == sum.os_lo && sum.ci_hi == sum.os_hi);
	}
	/* two blocks far apart (t(1) = 12.7): the CI is everything seen, never beyond (no negative latency) */
	{
		double v[16], med[2], sc[64];

		for (int i = 0; i < 16; i++)
			v[i] = i < 8 ? 100 + i : 5000 + i;
		med[0] = rt_stats_median_copy(v, 8, sc);
		med[1] = rt_stats_median_copy(v + 8, 8, sc);
		rt_stats_summarize(v, 16, 0.95, &sum);
		rt_stats_block_ci(&sum, med, 2, 0.95, sc);
		assert_int_equal(sum.n_blocks, 2);
		assert_true(sum.ci_lo == 100 && sum.ci_hi == 5015);
	}
}

static void test_stationary(void **state)
{
	struct rt_rng r;
	double med[40], sc[128], diff;
	int false_alarm = 0, trials = 500;

	(void)state;
	rt_rng_seed(&r, 5);
	/* iid block medians: stationary, with few false alarms */
	for (int t = 0; t < trials; t++) {
		for (int b = 0; b < 20; b++)
			med[b] = 1000 + 5 * rng_gauss(&r);
		false_alarm += !rt_stats_stationary(med, 20, 0.95, 5, NULL, sc);
	}
	assert_true(false_alarm < trials / 10);
	/* a level shift of 10 % in the second half: not stationary, the shift reported */
	for (int b = 0; b < 20; b++)
		med[b] = (b < 10 ? 1000 : 1100) + 5 * rng_gauss(&r);
	assert_false(rt_stats_stationary(med, 20, 0.95, 5, &diff, sc));
	assert_true(diff > 80 && diff < 120);
	/* the same shift below the floor (a difference that does not matter) counts as stationary */
	assert_true(rt_stats_stationary(med, 20, 0.95, 150, NULL, sc));
	/* a single outlying block (one stall) does not make it non-stationary: medians are robust */
	for (int b = 0; b < 20; b++)
		med[b] = 1000 + 5 * rng_gauss(&r);
	med[13] = 5000;
	assert_true(rt_stats_stationary(med, 20, 0.95, 5, NULL, sc));
	/* fewer than 4 blocks: nothing to compare yet */
	assert_true(rt_stats_stationary((double[]){ 1000, 2000, 3000 }, 3, 0.95, 5, NULL, sc));
}

static void test_isolated(void **state)
{
	(void)state;
	assert_true(rt_sched_isolated((int[]){ 1, -1, 1 }, 3, 1));
	assert_true(rt_sched_isolated((int[]){ -1, 1, -1 }, 3, 1));
	assert_false(rt_sched_isolated((int[]){ 1, -1, 0 }, 3, 1));  /* one neighbour undecided */
	assert_false(rt_sched_isolated((int[]){ 1, -1, -1 }, 3, 1)); /* a crossover, not an isolated point */
	assert_false(rt_sched_isolated((int[]){ 1, 0, 1 }, 3, 1));   /* no verdict to distrust */
	assert_true(rt_sched_isolated((int[]){ -1, 1, 1 }, 3, 0));   /* ends: the only neighbour */
	assert_true(rt_sched_isolated((int[]){ 1, 1, -1 }, 3, 2));
	assert_false(rt_sched_isolated((int[]){ 1, 1, 1 }, 3, 2));
	assert_false(rt_sched_isolated((int[]){ -1 }, 1, 0));
	assert_false(rt_sched_isolated((int[]){ 1, -1 }, 2, 5));
}

/* ---- scheduler ------------------------------------------------------------------------------------------------- */

static void test_sizes(void **state)
{
	uint32_t s[64];

	(void)state;
	assert_int_equal(rt_sched_pow2_sizes(512, s, 64), 10);
	assert_int_equal(s[0], 1);
	assert_int_equal(s[9], 512);
	assert_int_equal(rt_sched_pow2_sizes(1000, s, 64), 10);
	assert_int_equal(rt_sched_pow2_sizes(1, s, 64), 1);
	assert_int_equal(rt_sched_pow2_sizes(0, s, 64), 0);
	assert_int_equal(rt_sched_pow2_sizes(1u << 20, s, 4), 4);
	/* the default grid reaches a maximum that is not a power of two: 220 -> ... 128, 174, 220; 100 -> 64, 82, 100 */
	assert_int_equal(rt_sched_default_sizes(220, s, 64), 10);
	assert_int_equal(s[7], 128);
	assert_int_equal(s[8], 174);
	assert_int_equal(s[9], 220);
	assert_int_equal(rt_sched_default_sizes(100, s, 64), 9);
	assert_int_equal(s[6], 64);
	assert_int_equal(s[7], 82);
	assert_int_equal(s[8], 100);
	assert_int_equal(rt_sched_default_sizes(129, s, 64), 9); /* no midpoint strictly between 128 and 129 */
	assert_int_equal(s[8], 129);
	assert_int_equal(rt_sched_default_sizes(256, s, 64), 9); /* a power of two: the plain grid */
	assert_int_equal(s[8], 256);
	assert_int_equal(rt_sched_default_sizes(0, s, 64), 0);
	assert_int_equal(rt_sched_refine_sizes(64, 128, s, 4), 3);
	assert_int_equal(s[0], 80);
	assert_int_equal(s[1], 96);
	assert_int_equal(s[2], 112);
	assert_int_equal(rt_sched_refine_sizes(1, 2, s, 4), 0);
	assert_int_equal(rt_sched_refine_sizes(2, 4, s, 4), 1);
	assert_int_equal(s[0], 3);
	assert_int_equal(rt_sched_refine_sizes(4, 8, s, 4), 3); /* 5, 6, 7 */
	assert_int_equal(s[2], 7);
}

static void test_inline_end(void **state)
{
	struct rt_summary inl[4], non[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		inl[i] = (struct rt_summary){ .n = 10, .median = 100, .ci_lo = 95, .ci_hi = 105 };
		non[i] = (struct rt_summary){ .n = 10, .median = 120, .ci_lo = 115, .ci_hi = 125 };
	}
	assert_int_equal(rt_sched_inline_end(inl, non, 4), -1); /* better all the way */
	non[2] = inl[2];
	assert_int_equal(rt_sched_inline_end(inl, non, 4), 1); /* advantage ends between sizes 1 and 2 */
	for (int i = 0; i < 4; i++)
		non[i] = inl[i];
	assert_int_equal(rt_sched_inline_end(inl, non, 4), -1); /* never different */
	non[3] = (struct rt_summary){ .n = 10, .median = 80, .ci_lo = 75, .ci_hi = 85 };
	assert_int_equal(rt_sched_inline_end(inl, non, 4), 2); /* becomes a loss after size 2 */
}

/* Synthetic device: inline = 1000 + s ns, non-inline = 1100 + s/2 ns: inline wins below 200 bytes, loses above. */
struct fake {
	uint64_t now;
	double noise;
	struct rt_rng rng;
	unsigned calls;
	int fail_at;	  /* return EINTR on this call (0 = never) */
	char order[4096]; /* 'I'/'N' per call, for the block-order checks */
	/* planted effects, added to every sample they cover */
	uint64_t stall_from, stall_to; /* a stall: +stall_ns on every sample taken in [from, to) (any cell) */
	double stall_ns;
	uint32_t stall_trigger_bytes; /* > 0: the stall starts at the first measure of this size, inline, ... */
	unsigned stall_trigger_visit; /* ... on its visit with this many samples already (the stall's start) */
	uint64_t stall_len_ns;
	uint32_t step_trigger_bytes; /* > 0: this size's inline point gets step_ns more from its second visit on */
	double step_ns;
	uint64_t step_from;
	uint32_t slow_bytes; /* > 0: inline is slow_ns slower at this size (a real, permanent bump) */
	double slow_ns;
	double inl_base, non_base; /* 0: the default curve (1000 + s, 1100 + s/2) */
	double non_slope;
	const struct rt_sched *sched; /* for the stall trigger */
	size_t stall_hits[2];	      /* samples the stall hit: [0] non-inline, [1] inline */
};

static int fake_measure(void *ctx, const struct rt_sched_cell *c, size_t n, double *out, double *cpu)
{
	struct fake *f = ctx;
	double base = c->inl ? 1000 + c->msg_bytes : 1100 + c->msg_bytes / 2.0;

	if (f->inl_base > 0)
		base = c->inl ? f->inl_base : f->non_base + f->non_slope * c->msg_bytes;
	if (c->inl && c->msg_bytes == f->slow_bytes)
		base += f->slow_ns;
	if (f->step_trigger_bytes && c->inl && c->msg_bytes == f->step_trigger_bytes && !f->step_from && f->sched) {
		for (size_t i = 0; i < f->sched->n_pts; i++)
			if (f->sched->pts[i].cell.inl && f->sched->pts[i].cell.msg_bytes == c->msg_bytes &&
			    f->sched->pts[i].n >= 16)
				f->step_from = f->now;
	}
	if (f->stall_trigger_bytes && c->inl && c->msg_bytes == f->stall_trigger_bytes && f->sched) {
		for (size_t i = 0; i < f->sched->n_pts; i++) {
			const struct rt_sched_point *p = &f->sched->pts[i];

			if (p->cell.inl && p->cell.msg_bytes == c->msg_bytes && p->cell.op == c->op &&
			    p->n == f->stall_trigger_visit) {
				f->stall_from = f->now;
				f->stall_to = f->now + f->stall_len_ns;
				f->stall_trigger_bytes = 0;
			}
		}
	}

	if (f->fail_at && (int)++f->calls >= f->fail_at)
		return EINTR;
	if (!f->fail_at)
		f->calls++;
	if (f->calls < sizeof(f->order))
		f->order[f->calls - 1] = c->inl ? 'I' : 'N';
	for (size_t i = 0; i < n; i++) {
		out[i] = base + f->noise * rng_gauss(&f->rng);
		if (c->inl && c->msg_bytes == f->step_trigger_bytes && f->step_from)
			out[i] += f->step_ns;
		if (f->now >= f->stall_from && f->now < f->stall_to) {
			out[i] += f->stall_ns;
			f->stall_hits[c->inl]++;
		}
		f->now += (uint64_t)out[i] * 2;
	}
	/* a phase change per block costs about two samples */
	f->now += 4000;
	*cpu += (double)n * 500;
	return 0;
}

static uint64_t fake_clock(void *ctx)
{
	return ((struct fake *)ctx)->now;
}

static const struct rt_stop_rule rule = {
	.min_samples = 40, .max_samples = 2000, .rel_tight = 0.01, .rel_loose = 0.10, .abs_floor_ns = 5, .level = 0.95
};

static void plan(struct rt_sched *s, uint64_t seed)
{
	uint32_t sizes[16];
	size_t n = rt_sched_pow2_sizes(512, sizes, 16);

	rt_sched_init(s, &rule, seed);
	s->first_batch = 16;
	s->batch = 32;
	s->max_refine_bytes = 512;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(rt_sched_add_pair(s, RT_OP_SEND, RT_QPT_RC, RT_LAT_PINGPONG, sizes[i], false), 0);
}

static const struct rt_sched_point *find(const struct rt_sched *s, uint32_t size, bool inl)
{
	for (size_t i = 0; i < s->n_pts; i++)
		if (s->pts[i].cell.msg_bytes == size && s->pts[i].cell.inl == inl)
			return &s->pts[i];
	return NULL;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

static void test_sched_run(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 30 };
	int rc;

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	rc = rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f);
	assert_int_equal(rc, 0);
	assert_false(s.deadline_hit);
	/* every planned point measured at least min_samples, every pair stopped, each summary consistent */
	for (size_t i = 0; i < s.n_pts; i++) {
		const struct rt_sched_point *p = &s.pts[i];

		assert_true(p->n >= rule.min_samples);
		assert_true(p->sum.n == p->n);
		assert_true(p->sum.p99 >= p->sum.median && p->sum.p999 >= p->sum.p99);
		assert_true(p->sum.ci_lo <= p->sum.median && p->sum.median <= p->sum.ci_hi);
		assert_true(fabs(p->cpu_ns / (double)p->n - 500) < 1e-9);
	}
	for (size_t i = 0; i < s.n_pairs; i++)
		assert_int_not_equal(s.pairs[i].state, RT_STOP_CONTINUE);
	/* refinement between 128 and 256, where the planted crossover (200 bytes) is */
	assert_non_null(find(&s, 160, true));
	assert_non_null(find(&s, 192, false));
	assert_non_null(find(&s, 224, true));
	assert_true(find(&s, 160, true)->refined);
	assert_null(find(&s, 96, true)); /* nowhere else */
	/* medians recovered */
	assert_true(fabs(find(&s, 8, true)->sum.median - 1008) < 15);
	assert_true(fabs(find(&s, 8, false)->sum.median - 1104) < 15);
	/* far from the crossover the answer is clear early (after the two rounds and four blocks every pair needs: 48
	 * samples); around the crossover (192: 1192 vs 1196) it takes far more */
	{
		static const uint32_t far[] = { 1, 2, 4, 8, 16 }, near[] = { 160, 192, 224 };
		size_t n_far[5], n_near = 0;

		for (size_t i = 0; i < 5; i++)
			n_far[i] = find(&s, far[i], true)->n;
		for (size_t i = 0; i < 3; i++)
			n_near += find(&s, near[i], true)->n;
		qsort(n_far, 5, sizeof(n_far[0]), cmp_size);
		/* (a far pair may take a round more after a chance split-half disagreement: compare with the median) */
		assert_true(n_near / 3 >= 2 * n_far[2]);
	}
	assert_true(find(&s, 1, true)->n <= 3 * rule.min_samples);
	for (size_t i = 0; i < s.n_pairs; i++) {
		assert_true(s.pairs[i].rounds >= 2);
		assert_true(s.pts[s.pairs[i].inl].n_blk >= 4 && s.pts[s.pairs[i].non].n_blk >= 4);
	}
	rt_sched_free(&s);
}

static void test_sched_order_seeded(void **state)
{
	struct fake f1 = { .noise = 30 }, f2 = { .noise = 30 }, f3 = { .noise = 30 };
	struct rt_sched s;
	int inl_first = 0, non_first = 0;

	(void)state;
	rt_rng_seed(&f1.rng, 7);
	rt_rng_seed(&f2.rng, 7);
	rt_rng_seed(&f3.rng, 7);
	plan(&s, 11);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f1), 0);
	rt_sched_free(&s);
	plan(&s, 11);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f2), 0);
	rt_sched_free(&s);
	plan(&s, 12);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f3), 0);
	rt_sched_free(&s);
	/* same seed, same order; another seed, another order */
	assert_int_equal(f1.calls, f2.calls);
	assert_memory_equal(f1.order, f2.order, f1.calls);
	assert_true(f1.calls != f3.calls || memcmp(f1.order, f3.order, f1.calls) != 0);
	/* inline and non-inline blocks alternate pairwise, in both orders */
	for (unsigned i = 0; i + 1 < f1.calls && i + 1 < sizeof(f1.order); i += 2) {
		assert_true(f1.order[i] != f1.order[i + 1]);
		inl_first += f1.order[i] == 'I';
		non_first += f1.order[i] == 'N';
	}
	assert_true(inl_first > 3 && non_first > 3);
}

static void test_sched_deadline(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 30 };

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	/* a deadline already passed: round 0 still completes, nothing more */
	assert_int_equal(rt_sched_run(&s, 1, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(s.deadline_hit);
	for (size_t i = 0; i < s.n_pts; i++)
		assert_int_equal(s.pts[i].n, 16);
	rt_sched_free(&s);
	/* a budget of about 3 rounds: stops close to it */
	memset(&f, 0, sizeof(f));
	f.noise = 30;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	assert_int_equal(rt_sched_run(&s, 2000000ull, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(s.deadline_hit);
	assert_true(f.now >= 2000000ull && f.now < 2000000ull + 2 * 32 * 2 * 1700 + 4 * 4000);
	rt_sched_free(&s);
	/* a hard deadline stops even round 0: the points not reached have no samples, the others a full batch */
	memset(&f, 0, sizeof(f));
	f.noise = 30;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	s.hard_deadline_ns = 150000;
	assert_int_equal(rt_sched_run(&s, 1, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(s.deadline_hit);
	{
		size_t zero = 0, full = 0;

		for (size_t i = 0; i < s.n_pts; i++) {
			zero += s.pts[i].n == 0;
			full += s.pts[i].n == 16;
		}
		assert_int_equal(zero + full, s.n_pts);
		assert_true(zero > 0 && full > 0);
		assert_true(f.now < 150000 + 2 * 16 * 2 * 1700 + 2 * 4000);
	}
	rt_sched_free(&s);
}

static void test_sched_error(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 30, .fail_at = 5 };
	size_t measured = 0;

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan(&s, 3);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), EINTR);
	for (size_t i = 0; i < s.n_pts; i++)
		measured += s.pts[i].n;
	assert_int_equal(measured, 4 * 8); /* what was measured before the failure (4 blocks of 8) is kept */
	rt_sched_free(&s);
}

/* A flat curve: inline inl_ns at every size, non-inline non_ns, powers of two 1..512. */
static void plan_flat(struct rt_sched *s, struct fake *f, uint64_t seed, double inl_ns, double non_ns)
{
	plan(s, seed);
	s->refine = false;
	f->inl_base = inl_ns;
	f->non_base = non_ns;
	f->sched = s;
}

static int pair_sign(const struct rt_sched *s, uint32_t size)
{
	return rt_sched_sign(&find(s, size, true)->sum, &find(s, size, false)->sum);
}

static const struct rt_sched_pair *find_pair(const struct rt_sched *s, uint32_t size)
{
	for (size_t i = 0; i < s->n_pairs; i++)
		if (s->pts[s->pairs[i].inl].cell.msg_bytes == size)
			return &s->pairs[i];
	return NULL;
}

/*
 * A stall (+600 ns on every sample for 100 us) starting when the inline 4 B point begins its second visit: inline is
 * 3 % faster everywhere, and the stall must hit the non-inline side of that pair as much as the inline side, so the
 * pair's verdict does not flip. Without the interleaving (one block per side and visit) it hits the inline side only.
 */
static void test_sched_stall(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 10 };

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 1030);
	f.stall_trigger_bytes = 4;
	f.stall_trigger_visit = 16; /* after round 0's 16 samples */
	f.stall_len_ns = 100000;
	f.stall_ns = 600;
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(f.stall_to > 0);
	assert_true(f.stall_hits[1] > 0 && f.stall_hits[0] > 0);
	assert_true(f.stall_hits[1] <= f.stall_hits[0] + s.block && f.stall_hits[0] <= f.stall_hits[1] + s.block);
	for (uint32_t sz = 1; sz <= 512; sz *= 2)
		assert_int_not_equal(pair_sign(&s, sz), -1); /* inline is never "significantly slower" */
	assert_int_equal(pair_sign(&s, 4), 1);
	rt_sched_free(&s);

	/* the same stall with one block per side and visit (the old batches): only the inline side is hit */
	memset(&f, 0, sizeof(f));
	f.noise = 10;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 1030);
	s.block = 1000;
	s.min_visit_blocks = 1;
	f.stall_trigger_bytes = 4;
	f.stall_trigger_visit = 16;
	f.stall_len_ns = 100000;
	f.stall_ns = 600;
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(f.stall_hits[1] > f.stall_hits[0] + 16);
	rt_sched_free(&s);
}

/* A pair whose answer is clear after round 0 still waits for a second round (and for min_span_ns when set). */
static void test_sched_two_rounds(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 10 };
	uint64_t end;

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 2000);
	s.first_batch = 64; /* 4 blocks of 16 >= min_samples: clear and tight after round 0 */
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	for (size_t i = 0; i < s.n_pairs; i++) {
		assert_int_not_equal(s.pairs[i].state, RT_STOP_CONTINUE);
		assert_true(s.pairs[i].rounds >= 2);
		assert_true(s.pts[s.pairs[i].inl].n >= 64 + 32);
	}
	end = f.now;
	rt_sched_free(&s);

	/* with one round allowed, the same curve stops after round 0: the gate is what kept them */
	memset(&f, 0, sizeof(f));
	f.noise = 10;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 2000);
	s.first_batch = 64;
	s.min_rounds = 1;
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	{
		size_t one = 0;

		/* (one may need another round for a chance split-half disagreement on its 4 blocks) */
		for (size_t i = 0; i < s.n_pairs; i++)
			one += s.pairs[i].rounds == 1;
		assert_true(one >= s.n_pairs - 2);
	}
	rt_sched_free(&s);

	/* the two rounds must also be min_span_ns apart: longer than the whole two-round run above */
	memset(&f, 0, sizeof(f));
	f.noise = 10;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 2000);
	s.first_batch = 64;
	s.min_span_ns = end;
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	for (size_t i = 0; i < s.n_pairs; i++) {
		assert_true(s.pairs[i].rounds >= 2);
		assert_true(s.pairs[i].t_last - s.pairs[i].t_first >= end);
	}
	assert_true(f.now > end + end / 4);
	rt_sched_free(&s);
}

/*
 * A point that shifts (+300 ns on inline 8 B from its second visit on: not stationary) keeps being measured until the
 * shift is most of its history and its halves agree again, while the pairs around it stop after their two rounds.
 */
static void test_sched_nonstationary(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 10 };
	const struct rt_sched_pair *pr;

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 1100);
	f.step_trigger_bytes = 8;
	f.step_ns = 300;
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(f.step_from > 0);
	pr = find_pair(&s, 8);
	assert_int_not_equal(pr->state, RT_STOP_CONTINUE);
	assert_true(find(&s, 8, true)->stationary);
	/* it stopped only once the shifted level dominated: its median is the new level */
	assert_true(fabs(find(&s, 8, true)->sum.median - 1300) < 20);
	{
		size_t b[16] = { 0 }, k = 0;

		for (size_t i = 0; i < s.n_pairs && k < 16; i++)
			if (&s.pairs[i] != pr)
				b[k++] = s.pairs[i].batches;
		qsort(b, k, sizeof(b[0]), cmp_size);
		assert_true(pr->batches >= b[k / 2] + 2); /* the typical pair's visits, and more */
	}
	rt_sched_free(&s);

	/* without the shift the same pair stops with the others */
	memset(&f, 0, sizeof(f));
	f.noise = 10;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 1100);
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	assert_true(find_pair(&s, 8)->batches <= 3);
	rt_sched_free(&s);
}

/*
 * A verdict opposite to both neighbours' (inline 200 ns slower at 16 B only, 10 % faster everywhere else) is
 * re-measured in later rounds: flagged once, two more visits; a real bump stays what it is.
 */
static void test_sched_isolated(void **state)
{
	struct rt_sched s;
	struct fake f = { .noise = 10 };
	const struct rt_sched_pair *pr;

	(void)state;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 1100);
	f.slow_bytes = 16;
	f.slow_ns = 200;
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	pr = find_pair(&s, 16);
	assert_int_equal(rt_sched_n_remeasured(&s), 1);
	assert_int_equal(pr->remeasured, 1);
	assert_int_equal(pr->why, RT_SCHED_WHY_ISOLATED);
	assert_int_equal(pr->sign_before, -1);
	assert_int_equal(pr->need_visits, 0);
	assert_int_not_equal(pr->state, RT_STOP_CONTINUE);
	{
		unsigned least = UINT32_MAX;

		for (size_t i = 0; i < s.n_pairs; i++)
			if (&s.pairs[i] != pr && s.pairs[i].batches < least)
				least = s.pairs[i].batches;
		/* it stopped like the others, then owed two more visits */
		assert_true(pr->batches >= least + s.remeasure_visits);
	}
	assert_int_equal(pair_sign(&s, 16), -1);
	assert_int_equal(pair_sign(&s, 8), 1);
	rt_sched_free(&s);

	/* with re-measurement off, nothing is flagged (the counting above is not vacuous) */
	memset(&f, 0, sizeof(f));
	f.noise = 10;
	rt_rng_seed(&f.rng, 7);
	plan_flat(&s, &f, 3, 1000, 1100);
	s.max_remeasure = 0;
	f.slow_bytes = 16;
	f.slow_ns = 200;
	assert_int_equal(rt_sched_run(&s, 2000000000ull, fake_measure, fake_clock, NULL, &f), 0);
	assert_int_equal(rt_sched_n_remeasured(&s), 0);
	assert_int_equal(find_pair(&s, 16)->remeasured, 0);
	rt_sched_free(&s);
}

/* ---- clock ----------------------------------------------------------------------------------------------------- */

static void test_clock_flags(void **state)
{
	(void)state;
	assert_true(rt_clock_cpuinfo_has_invariant_tsc("processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc "
						       "pni\n"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc("flags\t\t: fpu tsc constant_tsc pni\n"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc("flags\t\t: fpu nonstop_tsc_x constant_tsc\n"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc("model name\t: constant_tsc nonstop_tsc\n"));
	assert_true(rt_clock_cpuinfo_has_invariant_tsc("flags\t\t: nonstop_tsc constant_tsc"));
	assert_false(rt_clock_cpuinfo_has_invariant_tsc(""));
}

static void test_clock_fallback(void **state)
{
	char path[] = "/tmp/rtune-cpuinfo-XXXXXX";
	int fd = mkstemp(path);
	struct rt_clock c;
	uint64_t t0, t1;

	(void)state;
	assert_true(fd >= 0);
	assert_true(write(fd, "flags\t\t: fpu tsc pni\n", 21) == 21);
	close(fd);
	rt_clock_init(&c, path, 5);
	unlink(path);
	assert_false(c.tsc);
	assert_string_equal(c.name, "clock_gettime(CLOCK_MONOTONIC)");
	assert_true(c.ns_per_tick == 1.0 && c.tsc_ghz == 0);
	assert_non_null(strstr(c.reason, "not invariant"));
	t0 = rt_clock_now(&c);
	usleep(20000);
	t1 = rt_clock_now(&c);
	assert_true(rt_clock_ns(&c, t0, t1) >= 20e6);
	/* no cpuinfo at all: the same fallback */
	rt_clock_init(&c, "/nonexistent/cpuinfo", 5);
	assert_false(c.tsc);
}

static void test_clock_tsc(void **state)
{
	char path[] = "/tmp/rtune-cpuinfo-XXXXXX";
	int fd = mkstemp(path);
	struct rt_clock c;
	uint64_t t0, t1, m0, m1;
	double a, b;

	(void)state;
	assert_true(fd >= 0);
	assert_true(write(fd, "flags\t\t: fpu tsc constant_tsc nonstop_tsc\n", 42) == 42);
	close(fd);
	rt_clock_init(&c, path, 10);
	unlink(path);
#if defined(__x86_64__) || defined(__i386__)
	/* invariant TSC claimed: either calibrated (and then consistent with CLOCK_MONOTONIC) or refused with a reason */
	if (c.tsc) {
		assert_true(strcmp(c.name, "rdtscp") == 0 ||
			    strcmp(c.name, "lfence+rdtsc") == 0); /* serialised reads */
		assert_true(c.tsc_ghz > 0.05 && c.tsc_ghz < 20);
		m0 = rt_clock_mono_ns();
		t0 = rt_clock_now(&c);
		usleep(30000);
		t1 = rt_clock_now(&c);
		m1 = rt_clock_mono_ns();
		a = rt_clock_ns(&c, t0, t1);
		b = (double)(m1 - m0);
		assert_true(fabs(a - b) / b < 0.02);
	} else {
		assert_non_null(strstr(c.reason, "disagree"));
	}
#else
	assert_false(c.tsc);
#endif
	(void)t0;
	(void)t1;
	(void)m0;
	(void)m1;
	(void)a;
	(void)b;
}

/* ---- JSON ------------------------------------------------------------------------------------------------------ */

static void test_run_json(void **state)
{
	struct rt_run run;
	struct rt_lat_point lat[1];
	struct rt_rate_point rate[1];
	float samples[3] = { 1.5f, 2.5f, 3.5f };
	json_error_t je;
	json_t *doc, *l;
	char *text;

	(void)state;
	memset(&run, 0, sizeof(run));
	memset(lat, 0, sizeof(lat));
	memset(rate, 0, sizeof(rate));
	snprintf(run.dev.name, sizeof(run.dev.name), "rxe0");
	snprintf(run.params, sizeof(run.params), "{\"quick\":true}");
	run.status = RT_RUN_INTERRUPTED;
	lat[0] = (struct rt_lat_point){ .op = RT_OP_WRITE,
					.qpt = RT_QPT_RC,
					.kind = RT_LAT_POST_CQE,
					.msg_bytes = 64,
					.inl = true,
					.n_samples = 3,
					.median_ns = 2.5,
					.p99_ns = 3.5,
					.p999_ns = NAN,
					.n_kept = 3,
					.n_blocks = 7,
					.n_rounds = 2,
					.remeasured = true,
					.samples_ns = samples };
	rate[0] = (struct rt_rate_point){ .op = RT_OP_SEND,
					  .msg_bytes = 8,
					  .signal_interval = 16,
					  .reps = 3,
					  .mops = 1.25,
					  .msgs = 1000,
					  .cpu_ns_per_msg = 420,
					  .post_ns_per_msg = 400 };
	run.lat = lat;
	run.n_lat = 1;
	run.rate = rate;
	run.n_rate = 1;
	run.cqmod[RT_OP_SEND] = (struct rt_cq_moderation){ .measured = true, .supported = false };
	snprintf(run.cqmod[RT_OP_SEND].reason, sizeof(run.cqmod[0].reason), "refused: Operation not supported");
	text = rt_engine_run_json(&run, true);
	assert_non_null(text);
	doc = json_loads(text, 0, &je);
	free(text);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "schema"), "name")), "rtune-run");
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "schema"), "version")), "1.0");
	assert_string_equal(json_string_value(json_object_get(doc, "run_id")), run.uuid);
	assert_string_equal(json_string_value(json_object_get(doc, "status")), "interrupted");
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "device"), "name")), "rxe0");
	assert_true(json_is_true(json_object_get(json_object_get(doc, "params"), "quick")));
	l = json_array_get(json_object_get(doc, "latency"), 0);
	assert_string_equal(json_string_value(json_object_get(l, "op")), "write");
	assert_string_equal(json_string_value(json_object_get(l, "kind")), "post_cqe");
	assert_true(json_is_true(json_object_get(l, "inline")));
	assert_int_equal(json_integer_value(json_object_get(l, "msg_bytes")), 64);
	assert_true(json_is_null(json_object_get(l, "p999_ns")));
	assert_int_equal(json_array_size(json_object_get(l, "samples_ns")), 3);
	assert_true(fabs(json_real_value(json_array_get(json_object_get(l, "samples_ns"), 1)) - 2.5) < 1e-6);
	assert_int_equal(json_integer_value(json_object_get(l, "n_blocks")), 7);
	assert_int_equal(json_integer_value(json_object_get(l, "n_rounds")), 2);
	assert_true(json_is_true(json_object_get(l, "remeasured")));
	l = json_array_get(json_object_get(doc, "rate"), 0);
	assert_int_equal(json_integer_value(json_object_get(l, "signal_interval")), 16);
	assert_true(fabs(json_real_value(json_object_get(l, "cpu_ns_per_msg")) - 420) < 1e-9);
	assert_true(fabs(json_real_value(json_object_get(l, "post_ns_per_msg")) - 400) < 1e-9);
	l = json_object_get(json_object_get(doc, "cq_moderation"), "send");
	assert_true(json_is_false(json_object_get(l, "supported")));
	assert_null(json_object_get(json_object_get(doc, "cq_moderation"), "write"));
	json_decref(doc);
	/* without samples */
	text = rt_engine_run_json(&run, false);
	doc = json_loads(text, 0, &je);
	free(text);
	assert_null(json_object_get(json_array_get(json_object_get(doc, "latency"), 0), "samples_ns"));
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantiles),
		cmocka_unit_test(test_median_ci_ranks),
		cmocka_unit_test(test_median_ci_coverage),
		cmocka_unit_test(test_stop_rule),
		cmocka_unit_test(test_t_quantile),
		cmocka_unit_test(test_block_ci),
		cmocka_unit_test(test_stationary),
		cmocka_unit_test(test_isolated),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_inline_end),
		cmocka_unit_test(test_sched_run),
		cmocka_unit_test(test_sched_order_seeded),
		cmocka_unit_test(test_sched_deadline),
		cmocka_unit_test(test_sched_error),
		cmocka_unit_test(test_sched_stall),
		cmocka_unit_test(test_sched_two_rounds),
		cmocka_unit_test(test_sched_nonstationary),
		cmocka_unit_test(test_sched_isolated),
		cmocka_unit_test(test_clock_flags),
		cmocka_unit_test(test_clock_fallback),
		cmocka_unit_test(test_clock_tsc),
		cmocka_unit_test(test_run_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
