// SPDX-License-Identifier: MIT
/*
 * Unit tests of the tuner on hand-built curves: every degenerate case gets its named reason (inline never better,
 * limited by the device's max inline, insufficient data with a budget, too few points, non-monotone, multi-knee,
 * implausible gain, and the input/rate/CQ cases), the app histogram moves the threshold as it should, the API
 * contract (errors, ownership, determinism, text output), and the statistics building blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_hist.h"
#include "rt_tuner.h"
#include "tuner_int.h"

#define MAXP 256

struct curve {
	struct rt_lat_point lat[MAXP];
	struct rt_rate_point rate[MAXP];
	struct rt_tuner_input in;
	struct rt_cq_moderation cqmod[RT_OP__COUNT];
	struct rt_rng rng;
};

static void curve_init(struct curve *c, int max_inline)
{
	memset(c, 0, sizeof(*c));
	c->in.lat = c->lat;
	c->in.rate = c->rate;
	c->in.limits.max_inline[RT_QPT_RC] = max_inline;
	c->in.limits.max_inline[RT_QPT_UD] = -1;
	c->in.limits.max_qp_wr = 16384;
	c->in.limits.max_cqe = 65536;
	rt_rng_seed(&c->rng, 7);
}

/* One size as summary points: non-inline median `ln`, inline median ln - d, each with a median se of `se`. */
static void add_size(struct curve *c, uint32_t bytes, double ln, double d, double se)
{
	for (int inl = 0; inl < 2; inl++) {
		struct rt_lat_point *p = &c->lat[c->in.n_lat++];

		p->op = RT_OP_SEND;
		p->qpt = RT_QPT_RC;
		p->kind = RT_LAT_PINGPONG;
		p->msg_bytes = bytes;
		p->inl = inl;
		p->n_samples = 400;
		p->median_ns = inl ? ln - d : ln;
		p->ci_lo_ns = p->median_ns - 1.96 * se;
		p->ci_hi_ns = p->median_ns + 1.96 * se;
		p->p99_ns = p->median_ns + 100;
	}
}

/* A clean curve over powers of two 1..max: d(s) = g - k s. */
static void add_linear(struct curve *c, uint32_t max, double g, double k, double se)
{
	for (uint32_t s = 1; s <= max; s *= 2)
		add_size(c, s, 1500, g - k * s, se);
}

/* A rate series: r(N) = 1000 / (a + b / N) Mops for N = 1, 2, .. nmax, with relative spread rel over 7 reps. */
static void add_series(struct curve *c, uint32_t bytes, bool inl, double a, double b, uint32_t nmax, double rel,
		       uint32_t sq)
{
	for (uint32_t n = 1; n <= nmax; n *= 2) {
		struct rt_rate_point *p = &c->rate[c->in.n_rate++];
		double r = 1000 / (a + b / n);

		p->op = RT_OP_SEND;
		p->qpt = RT_QPT_RC;
		p->msg_bytes = bytes;
		p->inl = inl;
		p->signal_interval = n;
		p->sq_depth = sq;
		p->reps = 7;
		p->mops = r;
		p->mops_lo = r * (1 - rel);
		p->mops_hi = r * (1 + rel);
		p->cpu_ns_per_msg = a + b / n;
		p->msgs = 7 * 100000;
	}
}

static const struct rt_tuner_decision *run(struct curve *c, struct rt_tuner_result *res)
{
	struct rt_error err;
	int rc = rt_tuner_run(&c->in, NULL, res, &err);

	if (rc)
		fail_msg("tuner failed: %s", err.text);
	assert_true(res->n >= 1);
	return &res->d[0];
}

static int has(const struct rt_tuner_decision *d, const char *code)
{
	for (size_t i = 0; i < d->n_reasons; i++)
		if (strcmp(rt_reason_code_name(d->reasons[i].code), code) == 0)
			return 1;
	return 0;
}

static void print_reasons(const struct rt_tuner_decision *d)
{
	for (size_t i = 0; i < d->n_reasons; i++)
		print_message("  [%s] %s\n", rt_reason_code_name(d->reasons[i].code), d->reasons[i].text);
}

#define assert_reason(d, code)                               \
	do {                                                 \
		if (!has(d, code)) {                         \
			print_reasons(d);                    \
			fail_msg("missing reason %s", code); \
		}                                            \
	} while (0)

/* ---- degenerate cases: each has its named reason ---- */

static void test_inline_never_better(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 256);
	add_linear(&c, 256, -80, 1.0, 3);
	d = run(&c, &res);
	assert_int_equal(d->inline_threshold, 0);
	assert_int_equal(d->max_inline_data, 0);
	assert_int_equal(d->crossover_bytes, 0); /* a loss already at 1 B */
	assert_reason(d, "inline_never_better");
	assert_int_equal(d->inline_confidence, RT_CONF_HIGH);
	rt_tuner_result_free(&res);
}

static void test_limited_by_device_max_inline(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 0.2, 3); /* still 250 ns better at 256 B */
	d = run(&c, &res);
	assert_int_equal(d->inline_threshold, 256);
	assert_int_equal(d->max_inline_data, 256);
	assert_reason(d, "limited_by_device_max_inline");
	assert_false(has(d, "limited_by_measured_range"));
	rt_tuner_result_free(&res);

	/* device allows more than was measured: the measured range is what limits */
	c.in.limits.max_inline[RT_QPT_RC] = 1024;
	d = run(&c, &res);
	assert_int_equal(d->inline_threshold, 256);
	assert_reason(d, "limited_by_measured_range");
	rt_tuner_result_free(&res);
}

static void test_insufficient_data(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 256);
	add_linear(&c, 256, 60, 60.0 / 64, 200); /* a 60 ns effect under a 200 ns standard error */
	d = run(&c, &res);
	assert_reason(d, "insufficient_data");
	assert_int_equal(d->inline_confidence, RT_CONF_LOW);
	assert_true(d->budget_needed_s > 0);
	assert_false(has(d, "inline_never_better")); /* not claimed: the data cannot tell */
	rt_tuner_result_free(&res);

	/* rates whose repetitions spread over +-8 %: the fit of all nine N still pins t_cqe = 25 ns (N = 64 within a
	   factor of two), but under +-40 % a 1 ns t_cqe can be neither shown nor excluded at the stated N */
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 2, 3);
	add_series(&c, 8, true, 50, 25, 256, 0.08, 1024);
	d = run(&c, &res);
	assert_int_equal(d->signal_verdict, RT_SIGNAL_KNEE);
	assert_true(d->signal_interval >= 32 && d->signal_interval <= 128);
	assert_true(d->t_cqe_lo_ns < 25 && d->t_cqe_hi_ns > 25);
	rt_tuner_result_free(&res);
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 2, 3);
	add_series(&c, 8, true, 50, 1, 256, 0.4, 1024);
	d = run(&c, &res);
	assert_int_equal(d->signal_verdict, RT_SIGNAL_INDIFFERENT);
	assert_reason(d, "insufficient_data");
	assert_int_equal(d->signal_confidence, RT_CONF_LOW);
	assert_true(d->budget_needed_s > 0);
	rt_tuner_result_free(&res);
}

static void test_too_few_points(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 256);
	add_size(&c, 8, 1500, 300, 3);
	add_size(&c, 64, 1500, 250, 3);
	add_series(&c, 8, true, 50, 50, 2, 0.002, 256);
	d = run(&c, &res);
	assert_reason(d, "too_few_points");
	assert_int_equal(d->inline_confidence, RT_CONF_LOW);
	assert_int_equal(d->signal_confidence, RT_CONF_LOW);
	{
		int inl = 0, sig = 0;

		for (size_t i = 0; i < d->n_reasons; i++)
			if (d->reasons[i].code == RT_R_TOO_FEW_POINTS) {
				inl |= d->reasons[i].topic == RT_TOPIC_INLINE;
				sig |= d->reasons[i].topic == RT_TOPIC_SIGNAL;
			}
		assert_true(inl && sig);
	}
	rt_tuner_result_free(&res);
}

static void test_non_monotone_inline(void **state)
{
	static const double dd[] = { 300, 300, 290, -200, 280, 270, -400, -600, -900 };
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 256);
	for (uint32_t i = 0, s = 1; s <= 256; s *= 2, i++)
		add_size(&c, s, 1500, dd[i], 3);
	d = run(&c, &res);
	assert_reason(d, "non_monotone");
	assert_int_equal(d->crossover_bytes, 4); /* the guard stops before the first loss at 8 B */
	assert_int_equal(d->inline_threshold, 4);
	assert_true(d->inline_confidence <= RT_CONF_MEDIUM);
	rt_tuner_result_free(&res);
}

/* The sweep of test_non_monotone_rate, the rates of its series' points from signal interval drop_n on scaled by f. */
static const struct rt_tuner_decision *run_rate_drop(struct curve *c, struct rt_tuner_result *res, uint32_t drop_n,
						     double f)
{
	curve_init(c, 256);
	add_linear(c, 256, 300, 2, 3);
	add_series(c, 8, true, 50, 10, 128, 0.002, 512); /* needs N = 16 */
	for (size_t i = 0; i < c->in.n_rate; i++) {
		struct rt_rate_point *p = &c->rate[i];

		if (drop_n && p->signal_interval >= drop_n) {
			p->mops *= f;
			p->mops_lo *= f;
			p->mops_hi *= f;
		}
	}
	return run(c, res);
}

/*
 * A rate that drops beyond its noise at larger N, and stays down, is named (non_monotone, with the N); it lowers the
 * confidence only when it drops at an N up to the one stated (there it bears on the answer), not above it (one point
 * dipping is not a drop: test_tuner_verdicts' test_a_dip_is_no_drop).
 */
static void test_non_monotone_rate(void **state)
{
	struct curve c;
	struct rt_tuner_result res, res0;
	const struct rt_tuner_decision *d, *d0;

	(void)state;
	d0 = run_rate_drop(&c, &res0, 0, 1); /* the same sweep without a drop */
	assert_true(d0->signal_interval < 64);
	d = run_rate_drop(&c, &res, 128, 0.8); /* the rate collapses at N = 128, above the N stated */
	assert_reason(d, "non_monotone");
	assert_int_equal(d->signal_interval, d0->signal_interval);
	assert_int_equal(d->signal_confidence, d0->signal_confidence);
	assert_true(d->signal_confidence == RT_CONF_HIGH);
	rt_tuner_result_free(&res);
	/* the drop from the N stated on: medium at best */
	d = run_rate_drop(&c, &res, d0->signal_interval, 0.8);
	assert_reason(d, "non_monotone");
	assert_true(d->signal_confidence <= RT_CONF_MEDIUM);
	rt_tuner_result_free(&res);
	rt_tuner_result_free(&res0);
}

/*
 * The benefit falls off in two steps: 400 ns up to 8 B, 150 ns from 32 to 512 B, then a loss. Kneedle names both
 * knees (multi_knee, evidence only); the threshold comes from the per-size rule and its confidence is not lowered.
 */
static void test_multi_knee(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 4096);
	for (uint32_t s = 1; s <= 4096; s *= 2)
		add_size(&c, s, 1500, s <= 8 ? 400 : s == 16 ? 250 : s <= 512 ? 150 : s == 1024 ? -50 : -300, 3);
	d = run(&c, &res);
	assert_reason(d, "multi_knee");
	assert_int_equal(d->inline_threshold, 512);
	assert_true(d->inline_confidence == RT_CONF_HIGH);
	rt_tuner_result_free(&res);
}

/*
 * d rising beyond its noise lowers the inline confidence only where it can move the threshold: above it (a size the
 * threshold leaves out gaining more than T), not at sizes it inlines anyway.
 */
static void test_rise_below_threshold(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	/* inline wins at every size, more from 64 B on (a device whose DMA read costs more with size) */
	curve_init(&c, 256);
	for (uint32_t s = 1; s <= 256; s *= 2)
		add_size(&c, s, 1500, s < 64 ? 200 : 400, 3);
	d = run(&c, &res);
	assert_reason(d, "non_monotone");
	assert_int_equal(d->inline_threshold, 256);
	assert_true(d->inline_confidence == RT_CONF_HIGH);
	rt_tuner_result_free(&res);
	/* a loss at 16 B, then d rising again beyond it up to no significant win: the threshold may be wrong */
	curve_init(&c, 256);
	for (uint32_t s = 1; s <= 256; s *= 2)
		add_size(&c, s, 1500, s <= 8 ? 200 : s == 16 ? -300 : 0, 3);
	d = run(&c, &res);
	assert_reason(d, "non_monotone");
	assert_true(d->inline_threshold < 16);
	assert_true(d->inline_confidence <= RT_CONF_MEDIUM);
	rt_tuner_result_free(&res);
}

static void test_implausible_gain(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 256);
	c.in.limits.hardware = true;
	for (uint32_t s = 1; s <= 256; s *= 2)
		add_size(&c, s, 9000, 6000 - 40.0 * s, 5);
	d = run(&c, &res);
	assert_reason(d, "implausible_gain");
	assert_int_equal(d->inline_confidence, RT_CONF_LOW);
	rt_tuner_result_free(&res);

	/* the same numbers on a software device (no PCIe round trip to compare with) are not flagged */
	c.in.limits.hardware = false;
	d = run(&c, &res);
	assert_false(has(d, "implausible_gain"));
	rt_tuner_result_free(&res);
}

static void test_rank_test_disagrees(void **state)
{
	/* medians say inline wins by 100 ns, but the inline distribution is mostly slower: Mann-Whitney disagrees */
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	static float a[200], b[200];

	(void)state;
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 2, 3);
	for (int i = 0; i < 200; i++) {
		float j = (float)(i % 10);

		a[i] = i < 120 ? 1100 + j : 500 + j;
		b[i] = i < 120 ? 1000 + j : 1600 + j;
	}
	for (size_t i = 0; i < c.in.n_lat; i++)
		if (c.lat[i].msg_bytes == 16) {
			struct rt_lat_point *p = &c.lat[i];

			p->n_samples = p->n_kept = 200;
			p->samples_ns = p->inl ? b : a;
			p->median_ns = p->inl ? 1004.5 : 1104.5;
			p->ci_lo_ns = p->median_ns - 5;
			p->ci_hi_ns = p->median_ns + 5;
		}
	d = run(&c, &res);
	assert_reason(d, "rank_test_disagrees");
	for (size_t i = 0; i < d->n_sizes; i++)
		if (d->sizes[i].msg_bytes == 16) {
			assert_true(d->sizes[i].from_raw);
			assert_true(d->sizes[i].d_lo_ns > 0); /* the bootstrap alone would call it a win */
			assert_int_not_equal(d->sizes[i].cls, RT_SIZE_WIN);
		}
	rt_tuner_result_free(&res);
}

static void test_no_data_and_invalid_points(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	/* rates only: no latency pair, threshold 0 by default */
	curve_init(&c, 256);
	add_series(&c, 8, true, 50, 100, 128, 0.002, 512);
	d = run(&c, &res);
	assert_false(d->inline_measured);
	assert_int_equal(d->inline_threshold, 0);
	assert_reason(d, "no_latency_data");
	rt_tuner_result_free(&res);

	/* latency only: N = 1 */
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 2, 3);
	d = run(&c, &res);
	assert_false(d->signal_measured);
	assert_int_equal(d->signal_interval, 1);
	assert_reason(d, "no_rate_data");
	assert_reason(d, "cq_moderation_not_measured");
	rt_tuner_result_free(&res);

	/* a NaN median is dropped and named */
	c.lat[3].median_ns = NAN;
	d = run(&c, &res);
	assert_reason(d, "invalid_point");
	rt_tuner_result_free(&res);
}

/* ---- signaling, queues, CQ moderation ---- */

static void test_signal_knee_cap_batch(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	/* r(N) = 1000/(50 + 25/N): t_cqe/(N t_post) <= 1.5 % (of the limit as N grows) from N = 33, so 64 */
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 2, 3);
	add_series(&c, 8, true, 50, 25, 256, 0.001, 1024);
	d = run(&c, &res);
	assert_int_equal(d->signal_interval, 64);
	assert_int_equal(d->signal_verdict, RT_SIGNAL_KNEE);
	assert_true(fabs(d->t_cqe_ns - 25) < 0.5 && fabs(d->t_post_ns - 50) < 0.5);
	assert_reason(d, "signal_interval");
	assert_int_equal(d->sq_depth, 1024);
	assert_int_equal(d->cq_depth, 1024);
	assert_int_equal(d->signal_confidence, RT_CONF_HIGH);
	rt_tuner_result_free(&res);

	/* a small SQ caps it at sq_depth / 4 */
	for (size_t i = 0; i < c.in.n_rate; i++)
		c.rate[i].sq_depth = 64;
	d = run(&c, &res);
	assert_int_equal(d->signal_interval, 16);
	assert_reason(d, "signal_capped_by_sq_depth");
	rt_tuner_result_free(&res);

	/* the app posts lists of 128 WRs: never signal less often than once per list... nor more often */
	c.in.app[RT_OP_SEND][RT_QPT_RC].post_list_batch = 128;
	for (size_t i = 0; i < c.in.n_rate; i++)
		c.rate[i].sq_depth = 1024;
	d = run(&c, &res);
	assert_int_equal(d->signal_interval, 128);
	assert_reason(d, "signal_raised_to_batch");
	assert_true(d->sq_depth >= 4 * 128);
	rt_tuner_result_free(&res);

	/* ENOMEM during the sweep is named */
	c.in.app[RT_OP_SEND][RT_QPT_RC].post_list_batch = 0;
	c.rate[2].enomem = 3;
	d = run(&c, &res);
	assert_reason(d, "sq_overflow_seen");
	assert_true(d->signal_confidence <= RT_CONF_MEDIUM);
	rt_tuner_result_free(&res);
}

static void test_cq_moderation(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;

	(void)state;
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 2, 3);
	c.in.cqmod = c.cqmod;
	c.cqmod[RT_OP_SEND] = (struct rt_cq_moderation){ .measured = true, .supported = false, .reason = "EOPNOTSUPP" };
	d = run(&c, &res);
	assert_int_equal(d->cq_mod, RT_CQMOD_UNSUPPORTED);
	assert_reason(d, "cq_moderation_unsupported");
	rt_tuner_result_free(&res);

	c.cqmod[RT_OP_SEND] = (struct rt_cq_moderation){ .measured = true,
							 .supported = true,
							 .best_count = 16,
							 .best_period_us = 8,
							 .mops_off = 10,
							 .mops_best = 11 };
	d = run(&c, &res);
	assert_int_equal(d->cq_mod, RT_CQMOD_ON);
	assert_int_equal(d->cq_mod_count, 16);
	assert_int_equal(d->cq_mod_period_us, 8);
	assert_reason(d, "cq_moderation");
	rt_tuner_result_free(&res);

	c.cqmod[RT_OP_SEND].mops_best = 10.05;
	d = run(&c, &res);
	assert_int_equal(d->cq_mod, RT_CQMOD_OFF);
	assert_reason(d, "cq_moderation_no_gain");
	rt_tuner_result_free(&res);
}

/* ---- the app histogram ---- */

static void test_histogram_threshold(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	const struct rt_tuner_decision *d;
	uint64_t counts[RT_HIST_BUCKETS] = { 0 };
	struct rt_tuner_hist_bin *bins;
	size_t nb;

	(void)state;
	curve_init(&c, 1024);
	add_linear(&c, 1024, 300, 300.0 / 300, 3); /* crossover near 300 B: guard 256 */

	/* an app of small messages only: the threshold covers them and no more */
	counts[rt_hist_bucket(32)] = 1000;
	counts[rt_hist_bucket(60)] = 500;
	assert_int_equal(rt_tuner_hist_from_buckets(counts, &bins, &nb, NULL), 0);
	assert_int_equal(nb, 2);
	c.in.app[RT_OP_SEND][RT_QPT_RC].bins = bins;
	c.in.app[RT_OP_SEND][RT_QPT_RC].n_bins = nb;
	d = run(&c, &res);
	assert_int_equal(d->inline_threshold, rt_hist_bucket_hi(rt_hist_bucket(60)));
	assert_int_equal(d->max_inline_data, d->inline_threshold);
	assert_true(d->gain_from_histogram);
	assert_true(d->hist_share_inlined > 0.999);
	assert_true(d->gain_ns_per_msg > 200 && d->gain_ns_per_msg < 300);
	assert_true(d->gain_pct > 10 && d->gain_pct < 25);
	assert_reason(d, "histogram_threshold");
	assert_reason(d, "expected_gain");
	rt_tuner_result_free(&res);
	free(bins);

	/* an app that only sends above the crossover: inlining helps nothing it sends */
	memset(counts, 0, sizeof(counts));
	counts[rt_hist_bucket(900)] = 1000;
	rt_tuner_hist_from_buckets(counts, &bins, &nb, NULL);
	c.in.app[RT_OP_SEND][RT_QPT_RC].bins = bins;
	c.in.app[RT_OP_SEND][RT_QPT_RC].n_bins = nb;
	d = run(&c, &res);
	assert_int_equal(d->inline_threshold, 0);
	assert_reason(d, "histogram_threshold");
	assert_false(has(d, "inline_never_better"));
	assert_int_equal(d->crossover_bytes, 256);
	rt_tuner_result_free(&res);
	free(bins);

	/* bimodal: the mass below the crossover is covered, the tail above is not */
	memset(counts, 0, sizeof(counts));
	counts[rt_hist_bucket(16)] = 5000;
	counts[rt_hist_bucket(200)] = 3000;
	counts[rt_hist_bucket(4000)] = 2000;
	rt_tuner_hist_from_buckets(counts, &bins, &nb, NULL);
	c.in.app[RT_OP_SEND][RT_QPT_RC].bins = bins;
	c.in.app[RT_OP_SEND][RT_QPT_RC].n_bins = nb;
	d = run(&c, &res);
	assert_int_equal(d->inline_threshold, rt_hist_bucket_hi(rt_hist_bucket(200)));
	assert_true(fabs(d->hist_share_inlined - 0.8) < 1e-9);
	rt_tuner_result_free(&res);
	free(bins);
}

/* ---- API contract ---- */

static void test_api_errors(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	struct rt_tuner_opts o;
	struct rt_error err;
	struct rt_tuner_hist_bin bad[2] = { { 1, 64, 10 }, { 60, 100, 5 } };

	(void)state;
	curve_init(&c, 256);
	assert_int_equal(rt_tuner_run(&c.in, NULL, &res, &err), ENODATA);
	assert_int_equal(res.n, 0);
	add_linear(&c, 256, 300, 2, 3);
	assert_int_equal(rt_tuner_run(NULL, NULL, &res, &err), EINVAL);
	assert_int_equal(rt_tuner_run(&c.in, NULL, NULL, &err), EINVAL);
	rt_tuner_opts_default(&o);
	o.tolerance = 0;
	assert_int_equal(rt_tuner_run(&c.in, &o, &res, &err), EINVAL);
	assert_non_null(strstr(err.text, "tolerance"));
	rt_tuner_opts_default(&o);
	o.n_boot = 5;
	assert_int_equal(rt_tuner_run(&c.in, &o, &res, &err), EINVAL);
	rt_tuner_opts_default(&o);
	c.in.app[RT_OP_SEND][RT_QPT_RC].bins = bad;
	c.in.app[RT_OP_SEND][RT_QPT_RC].n_bins = 2;
	assert_int_equal(rt_tuner_run(&c.in, &o, &res, &err), EINVAL);
	assert_non_null(strstr(err.text, "overlap"));
	bad[1].lo = 50;
	bad[1].hi = 40;
	assert_int_equal(rt_tuner_run(&c.in, &o, &res, &err), EINVAL);
	c.in.app[RT_OP_SEND][RT_QPT_RC].n_bins = 0;
	assert_int_equal(rt_tuner_run(&c.in, &o, &res, &err), 0);
	rt_tuner_result_free(&res);
	rt_tuner_result_free(&res); /* harmless twice */
	rt_tuner_result_free(NULL);
	assert_string_equal(rt_confidence_name((enum rt_confidence)9), "unknown");
	assert_string_equal(rt_reason_code_name(RT_R_IMPLAUSIBLE_GAIN), "implausible_gain");
	for (int k = 0; k < RT_R__COUNT; k++)
		assert_string_not_equal(rt_reason_code_name((enum rt_reason_code)k), "unknown");
}

static void test_groups_and_determinism(void **state)
{
	struct curve c;
	struct rt_tuner_result r1, r2;
	struct rt_tuner_opts o;

	(void)state;
	curve_init(&c, 256);
	add_linear(&c, 256, 300, 2, 30);
	/* the same points again as RDMA_WRITE on UD */
	for (size_t i = 0, n = c.in.n_lat; i < n; i++) {
		c.lat[c.in.n_lat] = c.lat[i];
		c.lat[c.in.n_lat].op = RT_OP_WRITE;
		c.lat[c.in.n_lat].qpt = RT_QPT_UD;
		c.in.n_lat++;
	}
	rt_tuner_opts_default(&o);
	o.seed = 99;
	assert_int_equal(rt_tuner_run(&c.in, &o, &r1, NULL), 0);
	assert_int_equal(rt_tuner_run(&c.in, &o, &r2, NULL), 0);
	assert_int_equal(r1.n, 2);
	assert_int_equal(r1.d[0].op, RT_OP_SEND);
	assert_int_equal(r1.d[0].qpt, RT_QPT_RC);
	assert_int_equal(r1.d[1].op, RT_OP_WRITE);
	assert_int_equal(r1.d[1].qpt, RT_QPT_UD);
	for (size_t k = 0; k < r1.n; k++) {
		assert_int_equal(r1.d[k].inline_threshold, r2.d[k].inline_threshold);
		assert_true(r1.d[k].inline_stability == r2.d[k].inline_stability);
		assert_int_equal(r1.d[k].n_sizes, r2.d[k].n_sizes);
		for (size_t i = 0; i < r1.d[k].n_sizes; i++) {
			assert_true(r1.d[k].sizes[i].d_lo_ns == r2.d[k].sizes[i].d_lo_ns);
			assert_true(r1.d[k].sizes[i].d_hi_ns == r2.d[k].sizes[i].d_hi_ns);
		}
		assert_int_equal(r1.d[k].n_reasons, r2.d[k].n_reasons);
		for (size_t i = 0; i < r1.d[k].n_reasons; i++)
			assert_string_equal(r1.d[k].reasons[i].text, r2.d[k].reasons[i].text);
	}
	/* UD max inline unknown (-1): no device-limit claim */
	assert_false(has(&r1.d[1], "limited_by_device_max_inline"));
	rt_tuner_result_free(&r1);
	rt_tuner_result_free(&r2);
}

static void test_format_text(void **state)
{
	struct curve c;
	struct rt_tuner_result res;
	char *text = NULL;

	(void)state;
	curve_init(&c, 256);
	add_linear(&c, 256, -80, 1.0, 3);
	add_series(&c, 8, true, 50, 25, 256, 0.001, 1024);
	assert_int_equal(rt_tuner_run(&c.in, NULL, &res, NULL), 0);
	assert_int_equal(rt_tuner_format_text(&res, &text, NULL), 0);
	assert_non_null(strstr(text, "send/rc: confidence"));
	assert_non_null(strstr(text, "inline_threshold  0 (never inline"));
	assert_non_null(strstr(text, "[inline_never_better]"));
	assert_non_null(strstr(text, "signal_interval   64"));
	assert_non_null(strstr(text, "[queue_depths]"));
	free(text);
	assert_int_equal(rt_tuner_format_text(NULL, &text, NULL), EINVAL);
	rt_tuner_result_free(&res);
}

static void test_input_from_run(void **state)
{
	struct rt_run run;
	struct rt_tuner_input in;
	struct rt_lat_point lp[2];

	(void)state;
	memset(&run, 0, sizeof(run));
	memset(lp, 0, sizeof(lp));
	run.lat = lp;
	run.n_lat = 2;
	run.dev.max_inline_rc = 188;
	run.dev.max_inline_ud = -1;
	run.dev.max_qp_wr = 32768;
	run.sq_depth = 512;
	strcpy(run.dev.pci_addr, "0000:3b:00.0");
	rt_tuner_input_from_run(&in, &run);
	assert_ptr_equal(in.lat, lp);
	assert_int_equal(in.n_lat, 2);
	assert_int_equal(in.limits.max_inline[RT_QPT_RC], 188);
	assert_int_equal(in.limits.max_inline[RT_QPT_UD], -1);
	assert_int_equal(in.limits.max_qp_wr, 32768);
	assert_int_equal(in.limits.sq_depth, 512);
	assert_true(in.limits.hardware);
	assert_ptr_equal(in.cqmod, run.cqmod);
	assert_null(in.app[RT_OP_SEND][RT_QPT_RC].bins);
}

/* Random, often hostile points (NaN, infinities, negatives, zero sizes, duplicates, odd CIs, raw samples of any
   length): the tuner returns 0 or EINVAL, never crashes, and whatever it returns is consistent. */
static void test_hostile_inputs(void **state)
{
	static const double odd[] = { NAN, INFINITY, -INFINITY, -5, 0, 1e300, 1e-300 };
	static float samples[MAXP][64];
	struct curve c;

	(void)state;
	rt_rng_seed(&c.rng, 999); /* the first max_inline draw below read an unseeded (uninitialised) generator */
	for (int it = 0; it < 300; it++) {
		struct rt_tuner_result res;
		struct rt_error err;
		int rc;

		curve_init(&c, (int)rt_rng_below(&c.rng, 3) - 1);
		rt_rng_seed(&c.rng, 1000 + (uint64_t)it);
		c.in.limits.hardware = it % 2;
		for (uint32_t i = 0, n = rt_rng_below(&c.rng, 40); i < n; i++) {
			double ln = rt_rng_uniform(&c.rng) < 0.1 ? odd[rt_rng_below(&c.rng, 7)]
								 : 500 + 2000 * rt_rng_uniform(&c.rng);

			add_size(&c, rt_rng_below(&c.rng, 5) ? 1u << rt_rng_below(&c.rng, 12) : rt_rng_below(&c.rng, 3),
				 ln, 400 * rt_rng_normal(&c.rng),
				 rt_rng_uniform(&c.rng) < 0.1 ? 0 : 50 * rt_rng_uniform(&c.rng));
		}
		for (size_t i = 0; i < c.in.n_lat; i++) {
			struct rt_lat_point *p = &c.lat[i];

			p->kind = (enum rt_lat_kind)rt_rng_below(&c.rng, 2);
			if (rt_rng_uniform(&c.rng) < 0.3) {
				p->n_kept = rt_rng_below(&c.rng, 65);
				p->samples_ns = samples[i];
				for (uint32_t k = 0; k < p->n_kept; k++)
					samples[i][k] = rt_rng_uniform(&c.rng) < 0.02
								? (float)odd[rt_rng_below(&c.rng, 7)]
								: (float)(p->median_ns + 30 * rt_rng_normal(&c.rng));
			}
			if (rt_rng_uniform(&c.rng) < 0.05)
				p->n_samples = 0;
		}
		for (uint32_t i = 0, n = rt_rng_below(&c.rng, 3); i < n; i++)
			add_series(&c, 8 * (i + 1), i % 2, 20 + 100 * rt_rng_uniform(&c.rng),
				   200 * rt_rng_uniform(&c.rng), 1u << rt_rng_below(&c.rng, 10),
				   rt_rng_uniform(&c.rng) < 0.2 ? 0 : 0.01,
				   rt_rng_below(&c.rng, 4) ? 1u << rt_rng_below(&c.rng, 12) : 0);
		for (size_t i = 0; i < c.in.n_rate; i++)
			if (rt_rng_uniform(&c.rng) < 0.05)
				c.rate[i].mops = odd[rt_rng_below(&c.rng, 7)];
		rc = rt_tuner_run(&c.in, NULL, &res, &err);
		if (!c.in.n_lat && !c.in.n_rate) {
			assert_int_equal(rc, ENODATA);
			continue;
		}
		assert_int_equal(rc, 0);
		for (size_t k = 0; k < res.n; k++) {
			const struct rt_tuner_decision *d = &res.d[k];

			assert_true(d->n_reasons > 0);
			assert_true(d->inline_threshold <= d->crossover_bytes || !d->inline_measured);
			assert_int_equal(d->max_inline_data, d->inline_threshold);
			assert_true(d->signal_interval >= 1);
			assert_true(d->sq_depth >= 1 && d->cq_depth >= 1);
			assert_true(d->confidence <= d->inline_confidence && d->confidence <= d->signal_confidence);
			for (size_t i = 1; i < d->n_sizes; i++)
				assert_true(d->sizes[i - 1].msg_bytes < d->sizes[i].msg_bytes);
		}
		rt_tuner_result_free(&res);
	}
}

/* ---- building blocks ---- */

static void test_kneedle(void **state)
{
	double x[20], y[20];
	size_t knees[4], nk, best;

	(void)state;
	/* y = 1 - 1/x on 1..20 (concave increasing): a clear knee early on */
	for (int i = 0; i < 20; i++) {
		x[i] = i + 1;
		y[i] = 1 - 1 / x[i];
	}
	assert_int_equal(rt_tuner_kneedle(x, y, 20, RT_KNEE_CONCAVE, RT_KNEE_INCREASING, 1, knees, 4, &nk, &best, NULL),
			 0);
	assert_int_equal(nk, 1);
	assert_true(best >= 1 && best <= 4);
	/* the same shape mirrored (concave decreasing) puts the knee at the mirrored place */
	for (int i = 0; i < 20; i++)
		y[i] = 1 - 1 / (21.0 - x[i]);
	assert_int_equal(rt_tuner_kneedle(x, y, 20, RT_KNEE_CONCAVE, RT_KNEE_DECREASING, 1, knees, 4, &nk, &best, NULL),
			 0);
	assert_int_equal(nk, 1);
	assert_true(best >= 15 && best <= 18);
	/* convex decreasing: y = 1/x */
	for (int i = 0; i < 20; i++)
		y[i] = 1 / x[i];
	assert_int_equal(rt_tuner_kneedle(x, y, 20, RT_KNEE_CONVEX, RT_KNEE_DECREASING, 1, knees, 4, &nk, &best, NULL),
			 0);
	assert_true(best >= 1 && best <= 4);
	/* convex increasing: y = x^3 has its knee late */
	for (int i = 0; i < 20; i++)
		y[i] = x[i] * x[i] * x[i];
	assert_int_equal(rt_tuner_kneedle(x, y, 20, RT_KNEE_CONVEX, RT_KNEE_INCREASING, 1, knees, 4, &nk, &best, NULL),
			 0);
	assert_true(best >= 10 && best <= 16);
	/* a straight line has none; bad input is refused */
	for (int i = 0; i < 20; i++)
		y[i] = x[i];
	assert_int_equal(rt_tuner_kneedle(x, y, 20, RT_KNEE_CONCAVE, RT_KNEE_INCREASING, 1, knees, 4, &nk, &best, NULL),
			 0);
	assert_int_equal(nk, 0);
	assert_true(best == SIZE_MAX);
	x[5] = x[4];
	assert_int_equal(rt_tuner_kneedle(x, y, 20, RT_KNEE_CONCAVE, RT_KNEE_INCREASING, 1, NULL, 0, &nk, NULL, NULL),
			 EINVAL);
	assert_int_equal(rt_tuner_kneedle(x, y, 2, RT_KNEE_CONCAVE, RT_KNEE_INCREASING, 1, NULL, 0, &nk, NULL, NULL),
			 EINVAL);
}

static void test_mann_whitney(void **state)
{
	float a[100], b[100];
	double z, p;

	(void)state;
	for (int i = 0; i < 100; i++) {
		a[i] = (float)i;
		b[i] = (float)i;
	}
	p = rt_tuner_mann_whitney(a, 100, b, 100, &z);
	assert_true(p > 0.99 && fabs(z) < 1e-9);
	for (int i = 0; i < 100; i++)
		a[i] = (float)i + 30; /* a shifted up by 0.3 of its range */
	p = rt_tuner_mann_whitney(a, 100, b, 100, &z);
	assert_true(z > 3 && p < 1e-3);
	p = rt_tuner_mann_whitney(b, 100, a, 100, &z);
	assert_true(z < -3 && p < 1e-3);
	/* all ties: no evidence */
	for (int i = 0; i < 100; i++)
		a[i] = b[i] = 5;
	assert_true(rt_tuner_mann_whitney(a, 100, b, 100, &z) == 1);
	assert_true(rt_tuner_mann_whitney(a, 0, b, 100, &z) == 1);
	/* a small known case: a = {1,2,3}, b = {4,5,6}: U_a = 0, exact two-sided p = 0.1; normal approx ~0.08 */
	{
		float x[3] = { 1, 2, 3 }, y[3] = { 4, 5, 6 };

		p = rt_tuner_mann_whitney(x, 3, y, 3, &z);
		assert_true(z < 0 && p > 0.05 && p < 0.15);
	}
}

static void test_isotonic_and_select(void **state)
{
	double y[] = { 1, 3, 2, 4, 3.5, 5 }, fit[6];
	float v[301], s[301], lo, hi;
	struct rt_rng r;

	(void)state;
	assert_int_equal(rt_tuner_isotonic(y, NULL, 6, true, fit), 0);
	assert_true(fit[1] == 2.5 && fit[2] == 2.5 && fit[3] == 3.75 && fit[4] == 3.75 && fit[5] == 5);
	assert_int_equal(rt_tuner_isotonic(y, NULL, 6, false, fit), 0);
	for (int i = 1; i < 6; i++)
		assert_true(fit[i] <= fit[i - 1]);
	rt_rng_seed(&r, 5);
	for (int it = 0; it < 200; it++) {
		size_t n = 1 + rt_rng_below(&r, 300), k = rt_rng_below(&r, (uint32_t)n);
		size_t klo = rt_rng_below(&r, (uint32_t)(n < 20 ? n : 20));
		size_t khi = n - 1 - rt_rng_below(&r, (uint32_t)(n - klo < 20 ? n - klo : 20));

		for (size_t i = 0; i < n; i++)
			s[i] = v[i] = (float)(it % 3 ? rt_rng_normal(&r) : (double)rt_rng_below(&r, 4));
		rt__sort_f(s, n);
		for (size_t i = 1; i < n; i++)
			assert_true(s[i - 1] <= s[i]);
		{
			float w[301];

			memcpy(w, v, n * sizeof(*w));
			assert_true(rt__select_f(w, n, k) == s[k]);
			memcpy(w, v, n * sizeof(*w));
			rt__tails_f(w, n, klo, khi, &lo, &hi);
			assert_true(lo == s[klo] && hi == s[khi]);
		}
	}
	assert_true(fabs(rt__norm_ppf(0.975) - 1.959964) < 1e-5);
	assert_true(fabs(rt__norm_ppf(0.01) + 2.326348) < 1e-5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_never_better),
		cmocka_unit_test(test_limited_by_device_max_inline),
		cmocka_unit_test(test_insufficient_data),
		cmocka_unit_test(test_too_few_points),
		cmocka_unit_test(test_non_monotone_inline),
		cmocka_unit_test(test_non_monotone_rate),
		cmocka_unit_test(test_multi_knee),
		cmocka_unit_test(test_rise_below_threshold),
		cmocka_unit_test(test_implausible_gain),
		cmocka_unit_test(test_rank_test_disagrees),
		cmocka_unit_test(test_no_data_and_invalid_points),
		cmocka_unit_test(test_signal_knee_cap_batch),
		cmocka_unit_test(test_cq_moderation),
		cmocka_unit_test(test_histogram_threshold),
		cmocka_unit_test(test_api_errors),
		cmocka_unit_test(test_groups_and_determinism),
		cmocka_unit_test(test_format_text),
		cmocka_unit_test(test_input_from_run),
		cmocka_unit_test(test_hostile_inputs),
		cmocka_unit_test(test_kneedle),
		cmocka_unit_test(test_mann_whitney),
		cmocka_unit_test(test_isotonic_and_select),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
